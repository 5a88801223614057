//! Reaching a Runnel node as a client from Rust tools (the `runnel` command's client
//! commands and `runnel bench`): where the node is and who speaks to it ([`Connection`],
//! command-line options), TLS from a network directory, the signer of an identity, and
//! errors that say what to do about them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use runnel_api::identity::{
    NetworkKeys, Role, Signer, TLS_CA_FILE, TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE,
};
use runnel_api::proto::GetNetworkInfoRequest;
use runnel_api::proto::query_client::QueryClient;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::metadata::{Binary, MetadataValue};
use tonic::service::interceptor::InterceptedService;
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
    /// The identity to sign with: identities/<org>/<NAME>.pem and .key in --dir (e.g. one
    /// from `runnel identity issue`). Default: the command's role (client, or admin for
    /// lifecycle commands).
    #[arg(long, env = "RUNNEL_IDENTITY", value_name = "NAME")]
    pub identity: Option<String>,
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

impl Connection {
    /// A connection to `url` signing as `org`'s identities in `dir`, trusting the TLS CAs
    /// its network definition names.
    pub fn to(url: &str, dir: &std::path::Path, org: &str) -> Connection {
        Connection {
            url: url.to_string(),
            dir: dir.to_path_buf(),
            org: org.to_string(),
            identity: None,
            tls_ca: None,
            tls_client_cert: None,
            tls_client_key: None,
            tls_server_name: None,
        }
    }
}

/// How long a command waits for the node before it gives up.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection to the node whose calls carry a read grant for the connection's client
/// identity when --dir holds one: what a node whose reads are for members asks for
/// (`[api] read_access = "members"`; node/server/src/readers.rs). Over mutual TLS with
/// a member's certificate, the certificate is enough.
pub type NodeChannel = InterceptedService<Channel, ReadGrants>;

/// Connects to the node, as [`connect_channel`], and signs read grants with the client
/// identity of --org in --dir if there is one.
pub async fn connect(connection: &Connection) -> Result<NodeChannel> {
    let channel = connect_channel(connection).await?;
    let grants = match signer(connection, Role::Client) {
        Ok(signer) => {
            let name = channel_name(&channel).await?;
            ReadGrants::new(signer, name)
        }
        Err(_) => ReadGrants::none(),
    };
    Ok(InterceptedService::new(channel, grants))
}

/// How long the read grants a client signs are valid: the longest a node takes.
pub const READ_GRANT_LIFETIME: Duration =
    Duration::from_millis(runnel_api::grant::READ_GRANT_LIFETIME_MAX_MS);

/// Adds a read grant to every call, signing a new one when the last is near its end.
#[derive(Clone)]
pub struct ReadGrants {
    inner: Option<Arc<GrantSigner>>,
}

struct GrantSigner {
    signer: Signer,
    channel: String,
    /// The header, and the time (Unix ms) to sign the next one.
    current: Mutex<(MetadataValue<Binary>, u64)>,
}

impl ReadGrants {
    /// Grants for `signer`'s identity on `channel`.
    pub fn new(signer: Signer, channel: String) -> ReadGrants {
        let (header, renew_at) = Self::sign(&signer, &channel);
        ReadGrants {
            inner: Some(Arc::new(GrantSigner {
                signer,
                channel,
                current: Mutex::new((header, renew_at)),
            })),
        }
    }

    /// No grants: the calls go as they are.
    pub fn none() -> ReadGrants {
        ReadGrants { inner: None }
    }

    fn sign(signer: &Signer, channel: &str) -> (MetadataValue<Binary>, u64) {
        let lifetime = READ_GRANT_LIFETIME.as_millis() as u64;
        // Starts a little in the past: the node's clock may be behind.
        let start = now_ms().saturating_sub(lifetime / 10);
        let grant = runnel_api::grant::signed_grant(signer, channel, start, lifetime);
        (MetadataValue::from_bytes(&grant), start + lifetime / 2)
    }
}

impl ReadGrants {
    /// The grant to send now (the value of [`runnel_api::grant::READ_GRANT_HEADER`]),
    /// a new one signed when the last is half through its life; none without a signer.
    pub fn current(&self) -> Option<MetadataValue<Binary>> {
        let grants = self.inner.as_ref()?;
        let mut current = grants
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if now_ms() >= current.1 {
            *current = Self::sign(&grants.signer, &grants.channel);
        }
        Some(current.0.clone())
    }
}

impl tonic::service::Interceptor for ReadGrants {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(grant) = self.current() {
            request
                .metadata_mut()
                .insert_bin(runnel_api::grant::READ_GRANT_HEADER, grant);
        }
        Ok(request)
    }
}

fn now_ms() -> u64 {
    runnel_api::tx::now_ms()
}

/// Connects to the node at --url, over TLS for an https:// one.
pub async fn connect_channel(connection: &Connection) -> Result<Channel> {
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
pub struct TlsFiles {
    pub cas: Vec<Vec<u8>>,
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    pub server_name: Option<String>,
}

/// Reads the TLS files of an https:// connection, checking that each holds what it should.
pub fn tls_files(connection: &Connection) -> Result<TlsFiles> {
    let identities = connection.dir.join("identities");
    let definition = runnel_api::identity::NetworkDefinition::load(&connection.dir).ok();
    let cas: Vec<PathBuf> = match &connection.tls_ca {
        Some(ca) => vec![ca.clone()],
        // The network definition names every organisation's TLS CA.
        None if definition.is_some() => Vec::new(),
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
    let mut pems: Vec<Vec<u8>> = match (&connection.tls_ca, &definition) {
        (None, Some(definition)) => definition
            .tls_ca_pems()
            .map(|pem| pem.as_bytes().to_vec())
            .collect(),
        _ => Vec::new(),
    };
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
pub fn client_tls(connection: &Connection) -> Result<ClientTlsConfig> {
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
pub fn signer(connection: &Connection, role: Role) -> Result<Signer> {
    let dir = &connection.dir;
    let keys = NetworkKeys::load(dir)
        .with_context(|| format!("loading identities from {}", dir.display()))?;
    let org = &connection.org;
    if let Some(name) = &connection.identity {
        let held = keys.named(org, name).ok_or_else(|| {
            anyhow!(
                "no identity {name} of {org} in {}/identities/{org}",
                dir.display()
            )
        })?;
        if held.role != role {
            bail!(
                "identity {name} of {org} is a {}; this command signs as a {role}",
                held.role
            );
        }
        return Ok(held.signer.clone());
    }
    keys.signer(org, role).cloned().ok_or_else(|| {
        anyhow!(
            "no {role} identity of {org} in {}/identities/{org}: use the directory of \
             {org}'s people, or --identity",
            dir.display()
        )
    })
}

/// The node's message, which starts with the error's name (docs/api.md); for a failure
/// of the connection itself, what failed under it.
pub fn status(error: tonic::Status) -> anyhow::Error {
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

/// The names of the contracts deployed on the node at `connection` (up to 1000).
pub async fn contract_names(connection: &Connection) -> Result<Vec<String>> {
    let channel = connect(connection).await?;
    let contracts = QueryClient::new(channel)
        .list_contracts(runnel_api::proto::ListContractsRequest {
            start_after: String::new(),
            limit: 1000,
        })
        .await
        .map_err(status)?
        .into_inner()
        .contracts;
    Ok(contracts.into_iter().map(|c| c.name).collect())
}

/// The channel the node serves.
pub async fn channel_name<T>(channel: &T) -> Result<String>
where
    T: tonic::client::GrpcService<tonic::body::Body> + Clone,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    Ok(QueryClient::new(channel.clone())
        .get_network_info(GetNetworkInfoRequest {})
        .await
        .map_err(status)?
        .into_inner()
        .channel)
}
