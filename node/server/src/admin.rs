//! `Admin`: deploying and upgrading contracts. Both are `_lifecycle` transactions like
//! any other: an organisation's admin signs the proposal, the node endorses it with the
//! organisations' admins until the lifecycle policy is satisfied, and returns the
//! transaction for the same admin to sign and submit through `Gateway.Submit`. The node
//! holds admin keys to endorse, never to propose: a caller without an admin's key
//! cannot deploy anything.
//!
//! Calls queue for a thread of the service's own ([`ADMIN_QUEUE_MAX`] at most), like the
//! calls every transaction makes ([`super::admission`]): a flood of them is refused
//! with `QUEUE_FULL`, and never takes the blocking pool the other services read through.

use std::sync::Arc;

use prost::Message;
use tonic::{Code, Request, Response, Status};

use super::admission::Batcher;
use super::endorsing::RemotePeers;
use super::{missing, quote, status};
use crate::proto::admin_server::Admin;
use crate::proto::{
    ContractDefinition, DeployContractRequest, DeployContractResponse, Proposal, SignedProposal,
    UpgradeContractRequest, UpgradeContractResponse,
};
use runnel_ledger::endorser::EndorseError;
use runnel_ledger::gather::{EndorsementGatherer, Gathering, Prepared};
use runnel_ledger::ledger::{Ledger, LedgerError};
use runnel_ledger::lifecycle::{FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};

/// Most `Admin` calls waiting for the admin thread at once; more are refused with
/// `RESOURCE_EXHAUSTED` / `QUEUE_FULL`. Admins deploy now and then: a queue this long
/// is never full but in a flood.
pub const ADMIN_QUEUE_MAX: usize = 16;

/// Most bytes of proposals those calls hold at once: a contract's code rides in its
/// proposal, up to `proposal_bytes_max` (8 MiB) each.
pub const ADMIN_QUEUE_BYTES_MAX: usize = 64 << 20;

/// Threads that endorse `Admin` calls, one call at a time. A deploy validates and
/// compiles its contract, which takes a core for a while: one thread leaves the other
/// cores to the calls every transaction makes, and takes nothing from tokio's blocking
/// pool, which the reads use.
const ADMIN_THREADS: usize = 1;

/// What an admin call is answered: the transaction to sign, and the definition it puts
/// in force.
type Defined = Result<(Gathering, ContractDefinition), LedgerError>;

/// The `Admin` service.
pub(super) struct AdminService {
    /// The bounded queue of calls, and the thread that endorses them.
    calls: Batcher<SignedProposal, Defined>,
    /// The other organisations' peers, whose endorsements a commit may need.
    peers: RemotePeers,
}

impl AdminService {
    /// Starts the admin thread over `ledger`.
    pub fn start(ledger: &Arc<Ledger>, peers: RemotePeers) -> std::io::Result<Self> {
        let ledger = ledger.clone();
        let calls = Batcher::start(
            "admin",
            ADMIN_THREADS,
            1,
            (
                ADMIN_QUEUE_MAX,
                ADMIN_QUEUE_BYTES_MAX,
                |signed: &SignedProposal| signed.proposal.len() + signed.signature.len(),
            ),
            move |proposals: Vec<SignedProposal>, answer: &mut dyn FnMut(Defined)| {
                for signed in proposals {
                    answer(define(&ledger, &signed));
                }
            },
        )?;
        Ok(AdminService { calls, peers })
    }

    /// Endorses a `_lifecycle` proposal for `function`, queued for the admin thread; the
    /// transaction to sign and the definition it will put in force.
    async fn define(
        &self,
        function: &'static str,
        signed: Option<SignedProposal>,
    ) -> Result<(Prepared, ContractDefinition), Status> {
        let signed = signed.ok_or_else(|| missing("proposal"))?;
        let proposal = Proposal::decode(signed.proposal.as_slice()).map_err(|e| {
            status::from_endorse(&EndorseError::Malformed(format!("proposal: {e}")))
        })?;
        if proposal.contract != LIFECYCLE_NAMESPACE || proposal.function != function {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_REQUEST",
                format_args!(
                    "expected a `{LIFECYCLE_NAMESPACE}` `{function}` proposal, got `{}` `{}`",
                    quote(&proposal.contract),
                    quote(&proposal.function)
                ),
            ));
        }
        let (mut gathering, definition) = self
            .calls
            .call(signed)
            .await?
            .map_err(|e| status::from_ledger(&e))?;
        self.peers.gather(&mut gathering).await?;
        Ok((gathering.into_prepared(), definition))
    }
}

/// Endorses `signed`, a `_lifecycle` proposal, with the organisations' admins.
fn define(ledger: &Ledger, signed: &SignedProposal) -> Defined {
    let gathering = ledger.gateway().endorse_signed(signed, &[])?;
    let definition = ContractDefinition::decode(gathering.result())
        .map_err(|e| LedgerError::BadResult(format!("contract definition: {e}")))?;
    Ok((gathering, definition))
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn deploy_contract(
        &self,
        request: Request<DeployContractRequest>,
    ) -> Result<Response<DeployContractResponse>, Status> {
        let (prepared, definition) = self
            .define(FN_DEPLOY, request.into_inner().proposal)
            .await?;
        Ok(Response::new(DeployContractResponse {
            tx_id: prepared.tx_id.to_hex(),
            transaction: prepared.transaction.encode_to_vec(),
            definition: Some(definition),
        }))
    }

    async fn upgrade_contract(
        &self,
        request: Request<UpgradeContractRequest>,
    ) -> Result<Response<UpgradeContractResponse>, Status> {
        let (prepared, definition) = self
            .define(FN_UPGRADE, request.into_inner().proposal)
            .await?;
        Ok(Response::new(UpgradeContractResponse {
            tx_id: prepared.tx_id.to_hex(),
            transaction: prepared.transaction.encode_to_vec(),
            definition: Some(definition),
        }))
    }
}
