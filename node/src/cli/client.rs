//! The client commands: `invoke`, `query`, `deploy`, `tx`, `block`, `status`. Each signs
//! with an identity from a network directory and talks to a node's API like any client,
//! over TLS when the URL is https:// (trusting the network's TLS CAs by default).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use prost::Message;
use runnel_node::identity::{
    NetworkKeys, Role, Signer, TLS_CA_FILE, TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE,
};
use runnel_node::lifecycle::{FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};
use runnel_node::proto::admin_client::AdminClient;
use runnel_node::proto::gateway_client::GatewayClient;
use runnel_node::proto::query_client::QueryClient;
use runnel_node::proto::{
    DeployContractRequest, DeployRequest, EndorseRequest, EvaluateRequest, GetBlockRequest,
    GetNetworkInfoRequest, GetStateHashRequest, GetTransactionRequest, SignedProposal,
    SubmitRequest, TxPhase, UpgradeContractRequest, ValidationCode,
};
use runnel_node::tx;
use serde_json::{Value, json};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// Where the node is and who speaks to it.
#[derive(Args, Debug, Clone)]
pub struct Connection {
    /// The node's API.
    #[arg(long, env = "RUNNEL_URL", default_value = "http://127.0.0.1:7051")]
    pub url: String,
    /// The network directory whose identities/ holds the signing identity (`runnel init`).
    #[arg(long, env = "RUNNEL_DIR", default_value = ".runnel/dev")]
    pub dir: PathBuf,
    /// The identity's organisation.
    #[arg(long, env = "RUNNEL_ORG", default_value = "Org1")]
    pub org: String,
    /// With an https:// --url: the CA certificates (PEM, one or more) to trust for the
    /// node's TLS certificate. Default: the TLS CA of every organisation in --dir
    /// (identities/<org>/tls/ca.pem, written by `runnel init`).
    #[arg(long, env = "RUNNEL_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// With https: the client certificate (PEM) presented when the node asks for one
    /// (mutual TLS). Default: identities/<org>/tls/client.pem in --dir, when there.
    #[arg(
        long,
        env = "RUNNEL_TLS_CLIENT_CERT",
        value_name = "FILE",
        requires = "tls_client_key"
    )]
    pub tls_client_cert: Option<PathBuf>,
    /// With https: the client certificate's private key (PEM).
    #[arg(
        long,
        env = "RUNNEL_TLS_CLIENT_KEY",
        value_name = "FILE",
        requires = "tls_client_cert"
    )]
    pub tls_client_key: Option<PathBuf>,
    /// With https: the name the node's certificate must hold, instead of --url's host.
    #[arg(long, env = "RUNNEL_TLS_SERVER_NAME", value_name = "NAME")]
    pub tls_server_name: Option<String>,
}

/// A contract call.
#[derive(Args, Debug)]
pub struct CallArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// Sign as this role of the organisation: client or admin.
    #[arg(long = "as", default_value = "client")]
    pub role: Role,
    /// Return once the transaction is validated (its writes visible) instead of durable.
    #[arg(long)]
    pub validated: bool,
    /// The contract.
    pub contract: String,
    /// The function.
    pub function: String,
    /// Its arguments, each passed as the bytes of the text given.
    pub args: Vec<String>,
}

/// `runnel deploy`.
#[derive(Args, Debug)]
pub struct DeployArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The contract's name (its namespace).
    pub name: String,
    /// The contract module (.wasm).
    pub wasm: PathBuf,
    /// The version label.
    #[arg(long, default_value = "1")]
    pub version: String,
    /// The endorsement policy, Fabric syntax, e.g. "AND('Org1.peer','Org2.peer')";
    /// empty: a majority of the organisations' peers.
    #[arg(long, default_value = "")]
    pub policy: String,
    /// Upgrade a deployed contract instead.
    #[arg(long)]
    pub upgrade: bool,
}

/// `runnel tx`.
#[derive(Args, Debug)]
pub struct TxArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The transaction id (hex).
    pub tx_id: String,
}

/// `runnel block`.
#[derive(Args, Debug)]
pub struct BlockArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The block number (1 for the first).
    pub number: u64,
}

/// How long a command waits for the node before it gives up.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

pub(crate) async fn connect(connection: &Connection) -> Result<Channel> {
    let url = &connection.url;
    let mut endpoint = Channel::from_shared(url.to_string())
        .map_err(|e| anyhow!("bad --url {url}: {e}"))?
        .timeout(CALL_TIMEOUT);
    let tls = endpoint.uri().scheme_str() == Some("https");
    if tls {
        endpoint = endpoint
            .tls_config(client_tls(connection)?)
            .map_err(|e| anyhow!("setting up TLS for {url}: {}", chain(&e)))?;
    }
    endpoint.connect().await.map_err(|e| {
        let hint = tls_hint(&e).unwrap_or(if tls {
            "is it running? (`runnel start`)"
        } else {
            "is it running? (`runnel dev`) A node that serves TLS needs an https:// --url"
        });
        anyhow!("cannot reach the node at {url}: {}; {hint}", chain(&e))
    })
}

/// What an https:// connection trusts and presents, read from the network directory
/// or the --tls-* options: the CA certificates (PEM), the client certificate and key
/// (PEM) if there are any, and the name the node's certificate must hold if not --url's
/// host.
pub(crate) struct TlsFiles {
    pub(crate) cas: Vec<Vec<u8>>,
    pub(crate) identity: Option<(Vec<u8>, Vec<u8>)>,
    pub(crate) server_name: Option<String>,
}

/// Reads the TLS files of an https:// connection, checking that each holds what it should.
pub(crate) fn tls_files(connection: &Connection) -> Result<TlsFiles> {
    let identities = connection.dir.join("identities");
    let cas: Vec<PathBuf> = match &connection.tls_ca {
        Some(ca) => vec![ca.clone()],
        None => {
            let mut cas: Vec<PathBuf> = std::fs::read_dir(&identities)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .map(|org| org.path().join(TLS_CA_FILE))
                        .filter(|ca| ca.is_file())
                        .collect()
                })
                .unwrap_or_default();
            cas.sort();
            if cas.is_empty() {
                bail!(
                    "no TLS CA to trust for {}: none under {} (identities/<org>/{TLS_CA_FILE}); \
                     pass the node's TLS CA certificate with --tls-ca FILE",
                    connection.url,
                    identities.display()
                );
            }
            cas
        }
    };
    let mut pems = Vec::with_capacity(cas.len());
    for ca in &cas {
        let pem = std::fs::read(ca)
            .with_context(|| format!("reading the TLS CA certificate {}", ca.display()))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("the TLS CA file {} is malformed: {e}", ca.display()))?;
        if certs.is_empty() {
            bail!("the TLS CA file {} holds no PEM CERTIFICATE", ca.display());
        }
        pems.push(pem);
    }
    let org = identities.join(&connection.org);
    let client = match (&connection.tls_client_cert, &connection.tls_client_key) {
        (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
        _ => Some((
            org.join(TLS_CLIENT_CERT_FILE),
            org.join(TLS_CLIENT_KEY_FILE),
        ))
        .filter(|(cert, key)| cert.is_file() && key.is_file()),
    };
    let identity = match client {
        Some((cert, key)) => {
            let read = |path: &PathBuf| {
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))
            };
            let key_pem = read(&key)?;
            PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
                anyhow!(
                    "the TLS client key {} is not a PEM private key: {e}",
                    key.display()
                )
            })?;
            Some((read(&cert)?, key_pem))
        }
        None => None,
    };
    Ok(TlsFiles {
        cas: pems,
        identity,
        server_name: connection.tls_server_name.clone(),
    })
}

/// The TLS settings of an https:// connection: the CAs to trust, the client certificate
/// to present if the node asks for one, and the name to check.
pub(crate) fn client_tls(connection: &Connection) -> Result<ClientTlsConfig> {
    let files = tls_files(connection)?;
    let mut tls = ClientTlsConfig::new();
    for pem in files.cas {
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    if let Some((cert, key)) = files.identity {
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    if let Some(name) = files.server_name {
        tls = tls.domain_name(name);
    }
    Ok(tls)
}

/// An error and every error under it, on one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

/// The TLS error under `error`, if any (rustls's errors reach us inside I/O errors).
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<rustls::Error>() {
            return Some(found);
        }
        if let Some(found) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// What to do about a failed TLS handshake, when that is what failed.
fn tls_hint(error: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    use rustls::{AlertDescription, CertificateError, Error};
    Some(match rustls_error(error)? {
        Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => {
            "the node's TLS certificate is not valid for this host name: connect by a name it \
             holds (localhost, 127.0.0.1, ::1 and the --tls-host names given to `runnel init`) \
             or pass --tls-server-name"
        }
        Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => "the node's TLS certificate is outside its validity period (or a clock is wrong)",
        Error::InvalidCertificate(_) => {
            "the node's TLS certificate is not issued by a CA this client trusts: pass its \
             network's TLS CA with --tls-ca (identities/<org>/tls/ca.pem of the network it was \
             made in)"
        }
        Error::AlertReceived(AlertDescription::CertificateRequired) => {
            "the node requires a client certificate: pass --tls-client-cert and --tls-client-key"
        }
        Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown,
        ) => "the node refused this client's TLS certificate: pass one its client CA issued",
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            "the node does not seem to speak TLS on this port: try an http:// --url"
        }
        _ => return None,
    })
}
pub(crate) fn signer(connection: &Connection, role: Role) -> Result<Signer> {
    let identities = connection.dir.join("identities");
    let keys = NetworkKeys::load(&identities)
        .with_context(|| format!("loading identities from {}", identities.display()))?;
    keys.signer(&connection.org, role).cloned().ok_or_else(|| {
        anyhow!(
            "no {role} identity of {} in {}",
            connection.org,
            identities.display()
        )
    })
}

/// The node's message, which starts with the error's name (docs/api.md); for a failure
/// of the connection itself, what failed under it.
pub(crate) fn status(error: tonic::Status) -> anyhow::Error {
    use std::error::Error as _;
    if let Some(source) = error.source() {
        let hint = tls_hint(source).unwrap_or(
            "the node stopped or refused the connection: a node serving TLS needs an \
             https:// --url, one requiring client certificates (mutual TLS) a certificate \
             its client CA issued (--tls-client-cert, --tls-client-key)",
        );
        return anyhow!("{}: {}; {hint}", error.code(), chain(source));
    }
    if error.message().is_empty() {
        anyhow!("{}", error.code())
    } else {
        anyhow!("{}", error.message())
    }
}

/// The channel the node serves.
pub(crate) async fn channel_name(channel: &Channel) -> Result<String> {
    Ok(QueryClient::new(channel.clone())
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .map_err(status)?
        .into_inner()
        .channel)
}

fn text(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(s) => json!(s),
        Err(_) => json!(format!("0x{}", hex::encode(bytes))),
    }
}

fn code_name(code: i32) -> String {
    ValidationCode::try_from(code)
        .map(|c| {
            c.as_str_name()
                .trim_start_matches("VALIDATION_CODE_")
                .to_string()
        })
        .unwrap_or_else(|_| format!("UNKNOWN({code})"))
}

fn phase_name(phase: i32) -> String {
    TxPhase::try_from(phase)
        .map(|p| {
            p.as_str_name()
                .trim_start_matches("TX_PHASE_")
                .to_lowercase()
        })
        .unwrap_or_else(|_| format!("unknown({phase})"))
}

fn print(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// Signs `transaction` (an encoded Transaction) as its creator, submits it and waits for
/// its status. Fails when the transaction is invalid.
async fn submit_and_wait(
    gateway: &mut GatewayClient<Channel>,
    creator: &Signer,
    transaction: Vec<u8>,
    validated: bool,
) -> Result<Value> {
    let signed = tx::sign_transaction_bytes(creator, transaction);
    let wait_for = if validated {
        TxPhase::Validated
    } else {
        TxPhase::Committed
    };
    // Submit and wait in one call.
    let reached = gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            wait_for: wait_for as i32,
        })
        .await
        .map_err(status)?
        .into_inner()
        .status
        .ok_or_else(|| anyhow!("the node answered Submit without the status asked for"))?;
    let code = code_name(reached.code);
    let report = json!({
        "tx_id": reached.tx_id,
        "seq": reached.seq,
        "code": code,
        "phase": phase_name(reached.phase),
        "block": reached.block,
    });
    if reached.code != ValidationCode::Valid as i32 {
        print(&report);
        bail!("transaction {} is invalid: {code}", reached.tx_id);
    }
    Ok(report)
}

/// The call's signed proposal and its signer, for the channel the node serves.
async fn call_proposal(channel: &Channel, args: &CallArgs) -> Result<(Signer, SignedProposal)> {
    let creator = signer(&args.connection, args.role)?;
    let proposal = tx::new_proposal(
        &channel_name(channel).await?,
        &args.contract,
        &args.function,
        args.args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        &creator,
    );
    let signed = tx::sign_proposal(&creator, &proposal);
    Ok((creator, signed))
}

/// `runnel invoke`: endorse, sign, submit, wait.
pub fn invoke(args: &CallArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let (creator, proposal) = call_proposal(&channel, args).await?;
        let mut gateway = GatewayClient::new(channel);
        let endorsed = gateway
            .endorse(EndorseRequest {
                proposal: Some(proposal),
            })
            .await
            .map_err(status)?
            .into_inner();
        let mut report =
            submit_and_wait(&mut gateway, &creator, endorsed.transaction, args.validated).await?;
        report["result"] = text(&endorsed.result);
        print(&report);
        Ok(())
    })
}

/// `runnel query`: evaluate on the node's current state; nothing is ordered.
pub fn query(args: &CallArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let (_, proposal) = call_proposal(&channel, args).await?;
        let result = GatewayClient::new(channel)
            .evaluate(EvaluateRequest {
                proposal: Some(proposal),
            })
            .await
            .map_err(status)?
            .into_inner()
            .result;
        match std::str::from_utf8(&result) {
            Ok(text) => println!("{text}"),
            Err(_) => println!("0x{}", hex::encode(&result)),
        }
        Ok(())
    })
}

/// `runnel deploy`: a `_lifecycle` transaction signed by the organisation's admin.
pub fn deploy(args: &DeployArgs) -> Result<()> {
    let code =
        std::fs::read(&args.wasm).with_context(|| format!("reading {}", args.wasm.display()))?;
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let admin = signer(&args.connection, Role::Admin)?;
        let request = DeployRequest {
            name: args.name.clone(),
            version: args.version.clone(),
            policy: args.policy.clone(),
            code,
            ..DeployRequest::default()
        };
        let function = if args.upgrade { FN_UPGRADE } else { FN_DEPLOY };
        let proposal = tx::new_proposal(
            &channel_name(&channel).await?,
            LIFECYCLE_NAMESPACE,
            function,
            vec![request.encode_to_vec()],
            &admin,
        );
        let signed: SignedProposal = tx::sign_proposal(&admin, &proposal);
        let mut lifecycle = AdminClient::new(channel.clone());
        let (transaction, definition) = if args.upgrade {
            let r = lifecycle
                .upgrade_contract(UpgradeContractRequest {
                    proposal: Some(signed),
                })
                .await
                .map_err(status)?
                .into_inner();
            (r.transaction, r.definition)
        } else {
            let r = lifecycle
                .deploy_contract(DeployContractRequest {
                    proposal: Some(signed),
                })
                .await
                .map_err(status)?
                .into_inner();
            (r.transaction, r.definition)
        };
        let mut gateway = GatewayClient::new(channel);
        let mut report = submit_and_wait(&mut gateway, &admin, transaction, false).await?;
        if let Some(definition) = definition {
            report["contract"] = json!({
                "name": definition.name,
                "version": definition.version,
                "sequence": definition.sequence,
                "code_hash": hex::encode(&definition.code_hash),
                "policy": definition.policy,
            });
        }
        print(&report);
        Ok(())
    })
}

/// `runnel tx`: a transaction in full.
pub fn transaction(args: &TxArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let t = QueryClient::new(channel)
            .get_transaction(GetTransactionRequest {
                tx_id: args.tx_id.clone(),
            })
            .await
            .map_err(status)?
            .into_inner();
        let proposal = t.proposal.as_ref().map(|p| {
            json!({
                "contract": p.contract,
                "function": p.function,
                "args": p.args.iter().map(|a| text(a)).collect::<Vec<_>>(),
                "timestamp_ms": p.timestamp_ms,
            })
        });
        let payload = t.payload.as_ref().map(|p| {
            json!({
                "result": text(&p.result),
                "rwsets": p.rwsets.iter().map(|set| json!({
                    "namespace": set.namespace,
                    "reads": set.reads.iter().map(|r| json!({
                        "key": text(&r.key),
                        "version": r.version.map(|v| v.seq),
                    })).collect::<Vec<_>>(),
                    "writes": set.writes.iter().map(|w| json!({
                        "key": text(&w.key),
                        "value": if w.is_delete { Value::Null } else { text(&w.value) },
                        "delete": w.is_delete,
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "events": p.events.iter().map(|e| json!({
                    "name": e.name,
                    "payload": text(&e.payload),
                })).collect::<Vec<_>>(),
            })
        });
        let identity =
            |i: &runnel_node::proto::Identity| format!("{}.{} ({})", i.org, i.role, i.name);
        print(&json!({
            "tx_id": t.tx_id,
            "seq": t.seq,
            "code": code_name(t.code),
            "block": t.block,
            "timestamp_ms": t.timestamp_ms,
            "creator": t.creator.as_ref().map(identity),
            "proposal": proposal,
            "payload": payload,
            "endorsements": t.endorsements.iter()
                .filter_map(|e| e.endorser.as_ref().map(identity))
                .collect::<Vec<_>>(),
        }));
        Ok(())
    })
}

/// `runnel block`: a sealed block and its transactions.
pub fn block(args: &BlockArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let block = QueryClient::new(channel)
            .get_block(GetBlockRequest {
                number: args.number,
            })
            .await
            .map_err(status)?
            .into_inner()
            .block
            .ok_or_else(|| anyhow!("the node sent no block"))?;
        let seal = block.seal.unwrap_or_default();
        print(&json!({
            "number": seal.number,
            "first_seq": seal.first_seq,
            "last_seq": seal.last_seq,
            "previous_hash": hex::encode(&seal.previous_hash),
            "tx_root": hex::encode(&seal.tx_root),
            "timestamp_ms": seal.timestamp_ms,
            "hash": hex::encode(&block.hash),
            "transactions": block.transactions.iter().map(|t| json!({
                "seq": t.seq,
                "tx_id": t.tx_id,
                "code": code_name(t.code),
            })).collect::<Vec<_>>(),
        }));
        Ok(())
    })
}

/// `runnel status`: the network and the node's heights.
/// `runnel state-hash`: the digest of the node's durable state, to compare peers.
pub fn state_hash(connection: &Connection) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(connection).await?;
        let digest = QueryClient::new(channel)
            .get_state_hash(GetStateHashRequest {})
            .await
            .map_err(status)?
            .into_inner();
        print(&json!({
            "height": digest.height,
            "state_hash": hex::encode(&digest.hash),
            "keys": digest.keys,
        }));
        Ok(())
    })
}

pub fn node_status(connection: &Connection) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(connection).await?;
        let info = QueryClient::new(channel)
            .get_network_info(GetNetworkInfoRequest {})
            .await
            .map_err(status)?
            .into_inner();
        print(&json!({
            "url": connection.url,
            "channel": info.channel,
            "orgs": info.orgs,
            "node_version": info.node_version,
            "ordering": runnel_node::proto::OrderingMode::try_from(info.ordering_mode)
                .map(|m| m.as_str_name().trim_start_matches("ORDERING_MODE_").to_lowercase())
                .unwrap_or_default(),
            "heights": {
                "ordered": info.ordered_height,
                "validated": info.validated_height,
                "committed": info.committed_height,
                "block": info.block_height,
            },
        }));
        Ok(())
    })
}
