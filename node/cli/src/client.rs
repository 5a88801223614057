//! The client commands: `invoke`, `query`, `deploy`, `tx`, `block`, `status`. Each signs
//! with an identity from a network directory and talks to a node's API like any client,
//! over TLS when the URL is https:// (trusting the network's TLS CAs by default).

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use prost::Message;
use runnel_client::NodeChannel as Channel;
use runnel_client::{Connection, channel_name, connect, signer, status};
use runnel_ledger::identity::{Role, Signer};
use runnel_ledger::lifecycle::{FN_APPROVE, FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};
use runnel_ledger::tx;
use runnel_server::proto::admin_client::AdminClient;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::proto::{
    ContractDefinition, DeployContractRequest, DeployRequest, EndorseRequest, EvaluateRequest,
    GetBlockRequest, GetContractApprovalsRequest, GetNetworkInfoRequest, GetStateHashRequest,
    GetTransactionRequest, SignedProposal, SubmitRequest, TxPhase, UpgradeContractRequest,
    ValidationCode,
};
use serde_json::{Value, json};

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
    /// `runnel approve` only: the sequence approved; default the next one.
    #[arg(long, default_value_t = 0)]
    pub sequence: u64,
}

/// `runnel contract-status`.
#[derive(Args, Debug)]
pub struct ContractStatusArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The contract's name.
    pub name: String,
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

/// The runtime a client command's calls run on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
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
                endorsing_orgs: Vec::new(),
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
    let function = if args.upgrade { FN_UPGRADE } else { FN_DEPLOY };
    let report = runtime()?.block_on(define(&args.connection, function, request(args)?))?;
    print(&report);
    Ok(())
}

/// `runnel approve`: the organisation's admin approves a contract definition for its
/// organisation, a `_lifecycle` transaction endorsed by a peer of the organisation.
pub fn approve(args: &DeployArgs) -> Result<()> {
    let report = runtime()?.block_on(define(&args.connection, FN_APPROVE, request(args)?))?;
    print(&report);
    Ok(())
}

/// The definition `runnel deploy` or `approve` asks for.
fn request(args: &DeployArgs) -> Result<DeployRequest> {
    let code =
        std::fs::read(&args.wasm).with_context(|| format!("reading {}", args.wasm.display()))?;
    Ok(DeployRequest {
        name: args.name.clone(),
        version: args.version.clone(),
        policy: args.policy.clone(),
        code,
        sequence: args.sequence,
        ..DeployRequest::default()
    })
}

/// Runs `_lifecycle.function(request)` (approve, deploy or upgrade) as a transaction
/// signed by the connection's organisation's admin, and waits for it to commit; the
/// report `runnel deploy` and `approve` print.
pub async fn define(
    connection: &Connection,
    function: &str,
    request: DeployRequest,
) -> Result<Value> {
    let channel = connect(connection).await?;
    let admin = signer(connection, Role::Admin)?;
    let proposal = tx::new_proposal(
        &channel_name(&channel).await?,
        LIFECYCLE_NAMESPACE,
        function,
        vec![request.encode_to_vec()],
        &admin,
    );
    let signed: SignedProposal = tx::sign_proposal(&admin, &proposal);
    let mut lifecycle = AdminClient::new(channel.clone());
    let mut gateway = GatewayClient::new(channel);
    let (transaction, definition) = match function {
        FN_UPGRADE => {
            let r = lifecycle
                .upgrade_contract(UpgradeContractRequest {
                    proposal: Some(signed),
                })
                .await
                .map_err(status)?
                .into_inner();
            (r.transaction, r.definition)
        }
        FN_DEPLOY => {
            let r = lifecycle
                .deploy_contract(DeployContractRequest {
                    proposal: Some(signed),
                })
                .await
                .map_err(status)?
                .into_inner();
            (r.transaction, r.definition)
        }
        _ => {
            let r = gateway
                .endorse(EndorseRequest {
                    proposal: Some(signed),
                    endorsing_orgs: Vec::new(),
                })
                .await
                .map_err(status)?
                .into_inner();
            (
                r.transaction,
                ContractDefinition::decode(r.result.as_slice()).ok(),
            )
        }
    };
    let mut report = submit_and_wait(&mut gateway, &admin, transaction, false).await?;
    if let Some(definition) = definition {
        let key = if function == FN_APPROVE {
            "approved"
        } else {
            "contract"
        };
        report[key] = definition_json(&definition);
        report[key]["org"] = json!(connection.org);
    }
    Ok(report)
}

/// A contract definition as the commands show it.
fn definition_json(definition: &ContractDefinition) -> Value {
    json!({
        "name": definition.name,
        "version": definition.version,
        "sequence": definition.sequence,
        "code_hash": hex::encode(&definition.code_hash),
        "policy": definition.policy,
        "definition_hash": hex::encode(runnel_ledger::lifecycle::definition_hash(definition)),
    })
}

/// `runnel contract-status`: the definition in force and which organisations approved
/// which definition, by sequence.
pub fn contract_status(args: &ContractStatusArgs) -> Result<()> {
    runtime()?.block_on(async {
        let channel = connect(&args.connection).await?;
        let mut query = QueryClient::new(channel);
        let orgs = query
            .get_network_info(GetNetworkInfoRequest {})
            .await
            .map_err(status)?
            .into_inner()
            .orgs;
        let answer = query
            .get_contract_approvals(GetContractApprovalsRequest {
                name: args.name.clone(),
            })
            .await
            .map_err(status)?
            .into_inner();
        let mut sequences: std::collections::BTreeMap<u64, serde_json::Map<String, Value>> =
            std::collections::BTreeMap::new();
        for approval in &answer.approvals {
            sequences.entry(approval.sequence).or_default().insert(
                approval.org.clone(),
                json!(hex::encode(&approval.definition_hash)),
            );
        }
        let committed = answer.definition.as_ref().map_or(0, |d| d.sequence);
        let report = json!({
            "name": args.name,
            "definition": answer.definition.as_ref().map(definition_json),
            "approvals": sequences.iter().map(|(sequence, by_org)| {
                let not: Vec<&String> = orgs.iter().filter(|org| !by_org.contains_key(*org)).collect();
                json!({
                    "sequence": sequence,
                    "committed": *sequence <= committed,
                    "approved_by": by_org,
                    "not_approved_by": not,
                })
            }).collect::<Vec<_>>(),
        });
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
            |i: &runnel_server::proto::Identity| format!("{}.{} ({})", i.org, i.role, i.name);
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
            "ordering": runnel_server::proto::OrderingMode::try_from(info.ordering_mode)
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
