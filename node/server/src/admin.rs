//! `Admin`: deploying and upgrading contracts. Both are `_lifecycle` transactions like
//! any other: an organisation's admin signs the proposal, the node endorses it with the
//! organisations' admins until the lifecycle policy is satisfied, and returns the
//! transaction for the same admin to sign and submit through `Gateway.Submit`. The node
//! holds admin keys to endorse, never to propose: a caller without an admin's key
//! cannot deploy anything.

use std::sync::Arc;

use prost::Message;
use tonic::{Code, Request, Response, Status};

use super::{Shared, missing, quote, status};
use crate::endorser::EndorseError;
use crate::ledger::{LedgerError, Prepared};
use crate::lifecycle::{FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};
use crate::proto::admin_server::Admin;
use crate::proto::{
    ContractDefinition, DeployContractRequest, DeployContractResponse, Proposal, SignedProposal,
    UpgradeContractRequest, UpgradeContractResponse,
};

/// The `Admin` service.
pub(super) struct AdminService {
    shared: Arc<Shared>,
}

impl AdminService {
    pub fn new(shared: Arc<Shared>) -> Self {
        AdminService { shared }
    }

    /// Endorses a `_lifecycle` proposal for `function`; the transaction to sign and the
    /// definition it will put in force.
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
        self.shared
            .blocking(move |ledger| {
                let prepared = ledger.endorse_signed(&signed)?;
                let definition = ContractDefinition::decode(prepared.result.as_slice())
                    .map_err(|e| LedgerError::BadResult(format!("contract definition: {e}")))?;
                Ok((prepared, definition))
            })
            .await
    }
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
