//! `Query`: point reads of the ledger and the state, for applications and the explorer.

use std::sync::Arc;

use prost::Message;
use tonic::{Code, Request, Response, Status};

use super::deliver::{block_message, sealed_block};
use super::{Shared, phase, quote, status, tx_id, validation_code};
use crate::proto::query_server::Query;
use crate::proto::{
    ContractApproval, EndorsementDetail, GetBlockRequest, GetBlockResponse,
    GetContractApprovalsRequest, GetContractApprovalsResponse, GetInclusionProofRequest,
    GetInclusionProofResponse, GetKeyHistoryRequest, GetKeyHistoryResponse, GetKeyRequest,
    GetKeyResponse, GetNetworkDefinitionRequest, GetNetworkDefinitionResponse,
    GetNetworkInfoRequest, GetNetworkInfoResponse, GetStateHashRequest, GetStateHashResponse,
    GetTransactionRequest, GetTransactionResponse, Identity, KeyModification, ListContractsRequest,
    ListContractsResponse, Proposal, ResponsePayload, SignedTransaction, Transaction,
};
use runnel_ledger::identity::Msp;
use runnel_ledger::ids::{BlockNumber, Seq, TxId};
use runnel_ledger::ledger::{Ledger, LedgerError};
use runnel_ledger::orderer::OrderingMode;

/// Entries a page holds when the request names no limit.
const PAGE_DEFAULT: usize = 100;
/// Most entries a page holds.
const PAGE_MAX: usize = 1000;

/// Most `GetInclusionProof` calls handled at once; more are refused with
/// `RESOURCE_EXHAUSTED` (`QUEUE_FULL`) rather than queued. A proof reads its block's
/// place records (a few per commit) and one transaction, and hashes its block's tree
/// (2 × `SEAL_TXS_MAX` SHA-256 of 64 bytes at most, about 5 ms): 8 at once keep both
/// cores of a small node for proofs at most a few milliseconds, and its other reads go on.
pub const PROOFS_CONCURRENT_MAX: usize = 8;

/// The `Query` service.
pub(super) struct QueryService {
    shared: Arc<Shared>,
    /// Room for the proofs being built ([`PROOFS_CONCURRENT_MAX`]).
    proofs: Arc<tokio::sync::Semaphore>,
}

impl QueryService {
    pub fn new(shared: Arc<Shared>) -> Self {
        QueryService {
            shared,
            proofs: Arc::new(tokio::sync::Semaphore::new(PROOFS_CONCURRENT_MAX)),
        }
    }
}

fn page_limit(limit: u32) -> usize {
    match usize::try_from(limit) {
        Ok(0) => PAGE_DEFAULT,
        Ok(limit) => limit.min(PAGE_MAX),
        Err(_) => PAGE_MAX,
    }
}

#[tonic::async_trait]
impl Query for QueryService {
    async fn get_block(
        &self,
        request: Request<GetBlockRequest>,
    ) -> Result<Response<GetBlockResponse>, Status> {
        let number = BlockNumber(request.into_inner().number);
        if number.0 == 0 {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_BLOCK_NUMBER",
                "block 0 is genesis, which has no seal; blocks start at 1",
            ));
        }
        let block = self
            .shared
            .blocking(move |ledger| match ledger.reader().seal(number)? {
                Some(record) => block_message(ledger, record, true).map(Some),
                None => Ok(None),
            })
            .await?
            .ok_or_else(|| {
                status::error(
                    Code::NotFound,
                    "BLOCK_NOT_FOUND",
                    format_args!("block {number} is not sealed on this node"),
                )
            })?;
        Ok(Response::new(GetBlockResponse { block: Some(block) }))
    }

    async fn get_transaction(
        &self,
        request: Request<GetTransactionRequest>,
    ) -> Result<Response<GetTransactionResponse>, Status> {
        let id = tx_id(&request.into_inner().tx_id)?;
        let detail = self
            .shared
            .blocking(move |ledger| transaction_detail(ledger, &id))
            .await?
            .ok_or_else(|| {
                status::error(
                    Code::NotFound,
                    "TX_NOT_FOUND",
                    format_args!("transaction {id} is not in the ledger"),
                )
            })?;
        Ok(Response::new(detail))
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<GetInclusionProofRequest>,
    ) -> Result<Response<GetInclusionProofResponse>, Status> {
        let id = tx_id(&request.into_inner().tx_id)?;
        // Held by the blocking call itself, so that a caller who leaves does not free it
        // while its proof is still being built.
        let Ok(room) = self.proofs.clone().try_acquire_owned() else {
            return Err(status::error(
                Code::ResourceExhausted,
                "QUEUE_FULL",
                format_args!(
                    "this node is building {PROOFS_CONCURRENT_MAX} inclusion proofs already; \
                     try again shortly"
                ),
            ));
        };
        let proof = self
            .shared
            .blocking(move |ledger| {
                let _room = room;
                ledger.reader().prove(&id)
            })
            .await?
            .ok_or_else(|| {
                status::error(
                    Code::NotFound,
                    "TX_NOT_SEALED",
                    format_args!("transaction {id} is not in a sealed block on this node"),
                )
            })?;
        Ok(Response::new(GetInclusionProofResponse {
            block: Some(sealed_block(proof.seal)),
            transaction: proof.transaction,
            proof: Some(proof.proof),
        }))
    }

    async fn get_key(
        &self,
        request: Request<GetKeyRequest>,
    ) -> Result<Response<GetKeyResponse>, Status> {
        let request = request.into_inner();
        let response = self
            .shared
            .blocking(move |ledger| {
                let snapshot = ledger.reader().snapshot();
                let found = snapshot.get(&request.namespace, &request.key)?;
                Ok(GetKeyResponse {
                    found: found.is_some(),
                    height: snapshot.height().0,
                    version: found.as_ref().map(|found| found.version),
                    value: found.map(|found| found.value).unwrap_or_default(),
                })
            })
            .await?;
        Ok(Response::new(response))
    }

    async fn get_key_history(
        &self,
        request: Request<GetKeyHistoryRequest>,
    ) -> Result<Response<GetKeyHistoryResponse>, Status> {
        let request = request.into_inner();
        let limit = page_limit(request.limit);
        let before = (request.before_seq > 0).then_some(Seq(request.before_seq));
        let entries = self
            .shared
            .blocking(move |ledger| {
                let history =
                    ledger
                        .reader()
                        .key_history(&request.namespace, &request.key, before, limit)?;
                Ok(history
                    .into_iter()
                    .map(|entry| KeyModification {
                        seq: entry.seq.0,
                        tx_id: entry.tx_id.to_hex(),
                        is_delete: entry.value.is_none(),
                        value: entry.value.unwrap_or_default(),
                    })
                    .collect())
            })
            .await?;
        Ok(Response::new(GetKeyHistoryResponse { entries }))
    }

    async fn list_contracts(
        &self,
        request: Request<ListContractsRequest>,
    ) -> Result<Response<ListContractsResponse>, Status> {
        let request = request.into_inner();
        let limit = page_limit(request.limit);
        if request.start_after.len() > runnel_ledger::lifecycle::CONTRACT_NAME_BYTES_MAX {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_CONTRACT_NAME",
                format_args!(
                    "start_after `{}` is longer than any contract name",
                    quote(&request.start_after)
                ),
            ));
        }
        let contracts = self
            .shared
            .blocking(move |ledger| ledger.lifecycle().contracts(&request.start_after, limit))
            .await?;
        Ok(Response::new(ListContractsResponse { contracts }))
    }

    async fn get_network_definition(
        &self,
        request: Request<GetNetworkDefinitionRequest>,
    ) -> Result<Response<GetNetworkDefinitionResponse>, Status> {
        let genesis = request.into_inner().genesis;
        let (definition, version) = self
            .shared
            .blocking(move |ledger| {
                let reader = ledger.reader();
                if genesis {
                    return Ok((std::sync::Arc::new(reader.network_genesis().clone()), None));
                }
                reader.network_version()
            })
            .await?;
        Ok(Response::new(GetNetworkDefinitionResponse {
            definition: definition.to_bytes(),
            sequence: definition.sequence,
            version: version.map_or(0, |v| v.seq),
        }))
    }

    async fn get_contract_approvals(
        &self,
        request: Request<GetContractApprovalsRequest>,
    ) -> Result<Response<GetContractApprovalsResponse>, Status> {
        let name = request.into_inner().name;
        runnel_ledger::lifecycle::check_name(&name)
            .map_err(|e| status::error(Code::InvalidArgument, e.code(), e))?;
        let (definition, approvals) = self
            .shared
            .blocking(move |ledger| {
                Ok((
                    ledger.lifecycle().definition(&name)?,
                    ledger.lifecycle().approvals(&name, APPROVALS_MAX)?,
                ))
            })
            .await?;
        Ok(Response::new(GetContractApprovalsResponse {
            definition_hash: definition
                .as_ref()
                .map(|d| runnel_ledger::lifecycle::definition_hash(d).to_vec())
                .unwrap_or_default(),
            definition,
            approvals: approvals
                .into_iter()
                .map(|(sequence, org, definition_hash)| ContractApproval {
                    sequence,
                    org,
                    definition_hash,
                })
                .collect(),
        }))
    }

    async fn get_network_info(
        &self,
        request: Request<GetNetworkInfoRequest>,
    ) -> Result<Response<GetNetworkInfoResponse>, Status> {
        let member = request
            .extensions()
            .get::<crate::readers::Reader>()
            .is_some();
        let info = self.shared.blocking(|ledger| ledger.info()).await?;
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let mut answer = GetNetworkInfoResponse {
            channel: info.channel,
            orgs: info.orgs,
            node_version: env!("CARGO_PKG_VERSION").to_string(),
            ordering_mode: match info.mode {
                OrderingMode::Streaming => crate::proto::OrderingMode::Streaming,
                OrderingMode::Blocks => crate::proto::OrderingMode::Blocks,
            } as i32,
            seal_max_txs: as_u64(info.seal_max_txs),
            seal_max_delay_ms: u64::try_from(info.seal_max_delay.as_millis()).unwrap_or(u64::MAX),
            ordered_height: info.ordered_height.0,
            validated_height: info.validated_height.0,
            committed_height: info.committed_height.0,
            block_height: info.last_block.map_or(0, |number| number.0),
            message_bytes_max: as_u64(self.shared.config.message_bytes_max),
            proposal_bytes_max: as_u64(info.proposal_bytes_max),
            transaction_bytes_max: as_u64(info.transaction_bytes_max),
            own_orgs: self.shared.ledger.own_orgs(),
            peers: self
                .shared
                .peers
                .views()
                .into_iter()
                .map(|peer| crate::proto::NetworkPeer {
                    org: peer.org,
                    name: peer.name,
                    endpoint: peer.endpoint,
                    alive: peer.health.alive,
                    committed_height: peer.health.height,
                    error: peer.health.error.unwrap_or_default(),
                    checked_ms_ago: peer.health.checked.map_or(0, |at| {
                        u64::try_from(at.elapsed().as_millis())
                            .unwrap_or(u64::MAX)
                            .max(1)
                    }),
                })
                .collect(),
        };
        if self.shared.config.ops_access() == crate::ops::OpsAccess::Members && !member {
            // What a client needs to connect, and nothing of the network's inner state.
            answer = GetNetworkInfoResponse {
                ordered_height: 0,
                validated_height: 0,
                committed_height: 0,
                block_height: 0,
                peers: Vec::new(),
                ..answer
            };
        }
        Ok(Response::new(answer))
    }

    async fn get_state_hash(
        &self,
        _request: Request<GetStateHashRequest>,
    ) -> Result<Response<GetStateHashResponse>, Status> {
        let (height, hash, keys) = self
            .shared
            .blocking(|ledger| ledger.reader().state_hash())
            .await?;
        Ok(Response::new(GetStateHashResponse {
            height: height.0,
            hash: hash.to_vec(),
            keys,
        }))
    }
}

/// Most approvals `GetContractApprovals` answers.
const APPROVALS_MAX: usize = 1000;

/// A transaction in full, decoded where it decodes.
fn transaction_detail(
    ledger: &Ledger,
    tx_id: &TxId,
) -> Result<Option<GetTransactionResponse>, LedgerError> {
    let Some((record, block)) = ledger.reader().transaction(tx_id)? else {
        return Ok(None);
    };
    let Some(stored) = ledger.reader().transaction_at(record.seq)? else {
        return Ok(None);
    };
    let committed = record.seq <= ledger.reader().durable_height();
    let mut detail = GetTransactionResponse {
        tx_id: tx_id.to_hex(),
        seq: record.seq.0,
        code: validation_code(record.code),
        phase: phase(committed) as i32,
        block: block.map_or(0, |number| number.0),
        timestamp_ms: record.timestamp_ms,
        ..GetTransactionResponse::default()
    };
    // Certificates are read as of the orderer's time, as the validator read them.
    let at_seconds = i64::try_from(record.timestamp_ms / 1000).unwrap_or(i64::MAX);
    let msp = ledger.msp();
    if let Ok(signed) = SignedTransaction::decode(stored.bytes.as_slice())
        && let Ok(transaction) = Transaction::decode(signed.transaction.as_slice())
    {
        if let Some(signed_proposal) = &transaction.proposal
            && let Ok(proposal) = Proposal::decode(signed_proposal.proposal.as_slice())
        {
            detail.creator = identity(msp, &proposal.creator, at_seconds);
            detail.proposal = Some(proposal);
        }
        detail.payload = ResponsePayload::decode(transaction.payload.as_slice()).ok();
        detail.endorsements = transaction
            .endorsements
            .into_iter()
            .map(|endorsement| EndorsementDetail {
                endorser: identity(msp, &endorsement.endorser, at_seconds).or(Some(Identity {
                    certificate: endorsement.endorser,
                    ..Identity::default()
                })),
                signature: endorsement.signature,
            })
            .collect();
    }
    detail.transaction = stored.bytes;
    Ok(Some(detail))
}

/// An identity as the MSP reads it at `at_seconds`; `None` if refused.
fn identity(msp: &Msp, cert_der: &[u8], at_seconds: i64) -> Option<Identity> {
    let identity = msp.verify(cert_der, at_seconds).ok()?;
    Some(Identity {
        org: identity.org.clone(),
        role: identity.role.as_str().to_string(),
        name: identity.name.clone(),
        certificate: identity.cert_der.clone(),
    })
}
