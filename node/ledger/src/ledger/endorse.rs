//! The local endorsement gatherer: the peers of the organisations this process acts for,
//! which endorse on the thread that asks ([`crate::gather`]).

use std::future::Ready;
use std::sync::Arc;

use prost::Message;

use super::LedgerError;
use crate::endorser::{Checked, Endorsed, Endorser};
use crate::gather::{EndorsementGatherer, Gathering, Offer, Target};
use crate::identity::{Msp, Signer};
use crate::lifecycle::{self, LIFECYCLE_NAMESPACE};
use crate::policy::Policy;
use crate::proto::{Proposal, SignedProposal};
use crate::store::WorldState;

/// An organisation this ledger acts for, with the identities it holds of it: always its
/// peer (it endorses as that peer); its admin and client only where one process stands
/// for the organisation's people too (an embedded ledger, a dev node).
pub(super) struct Org {
    pub(super) name: String,
    /// The peer's public key.
    pub(super) key: [u8; 32],
    pub(super) peer: Endorser,
    pub(super) admin: Option<Signer>,
    pub(super) client: Option<Signer>,
}

impl Org {
    /// `endorsed`, by this organisation's peer, as an offer to a gathering.
    fn offer(&self, endorsed: Endorsed) -> Result<Offer, LedgerError> {
        let endorsement = endorsed.response.endorsement.ok_or_else(|| {
            LedgerError::BadResult(format!("the peer of {} gave no endorsement", self.name))
        })?;
        Ok(Offer {
            org: self.name.clone(),
            by: format!("this node's peer of {}", self.name),
            payload: endorsed.response.payload,
            key: self.key,
            endorsement,
        })
    }
}

/// The peers of the organisations this process acts for (one for a node of a network,
/// every one for an embedded ledger or a dev node), the first the one a gathering starts
/// with.
pub(super) struct LocalEndorsers {
    pub(super) orgs: Vec<Org>,
    pub(super) msp: Arc<Msp>,
    pub(super) world: Arc<WorldState>,
}

impl LocalEndorsers {
    /// Starts the gathering of `signed`, a call of `contract`: the first endorsement
    /// runs whatever is asked (it reports a contract's own error or a missing contract),
    /// and its payload is the one every other endorsement must match. With `orgs` named,
    /// the gathering is for them; else for the policy in force.
    ///
    /// `checked`, if given, is `signed` as the first organisation's peer checked it: the
    /// first endorser (every endorser shares its configuration and MSP) endorses it
    /// without checking it again.
    pub(super) fn start(
        &self,
        contract: &str,
        signed: &SignedProposal,
        checked: Option<Checked>,
        orgs: &[String],
    ) -> Result<Gathering, LedgerError> {
        let wanted = |org: &str| orgs.is_empty() || orgs.iter().any(|o| o == org);
        let first_org = self
            .orgs
            .iter()
            .find(|org| wanted(&org.name))
            .unwrap_or(&self.orgs[0]);
        let mut first = match checked {
            Some(checked) => first_org.peer.endorse_checked(checked)?,
            None => first_org.peer.endorse(signed)?,
        };
        let target = if !orgs.is_empty() {
            Target::Orgs(orgs.to_vec())
        } else {
            match self.policy_of(contract, signed, &first) {
                Ok(policy) => Target::Policy(policy),
                // Not deployed, or a definition no policy can be read from.
                Err(_) => Target::FirstOnly,
            }
        };
        let (tx_id, result) = (first.tx_id, std::mem::take(&mut first.result));
        Ok(Gathering::new(
            (signed.clone(), contract.to_string(), target),
            tx_id,
            result,
            first_org.offer(first)?,
            wanted(&first_org.name),
        ))
    }

    /// Adds this process's organisations' endorsements to `gathering` and leaves it
    /// needing the other organisations whose peers must endorse too: for named
    /// organisations, the others named; for a policy, this process's organisations in
    /// order until it is satisfied, then the fewest others ([`Policy::orgs_to_ask`]).
    fn gather_here(&self, gathering: &mut Gathering) -> Result<(), LedgerError> {
        let local = |name: &str| self.orgs.iter().any(|org| org.name == name);
        // Taken out while the gathering grows, and put back whatever happens.
        let signed = std::mem::take(&mut gathering.signed);
        let target = std::mem::replace(&mut gathering.target, Target::FirstOnly);
        let needs = self.plan(gathering, &signed, &target, local);
        gathering.signed = signed;
        gathering.target = target;
        gathering.set_needs(needs?);
        Ok(())
    }

    /// [`LocalEndorsers::gather_here`] of `signed` towards `target`: the organisations
    /// left to ask.
    fn plan(
        &self,
        gathering: &mut Gathering,
        signed: &SignedProposal,
        target: &Target,
        local: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, LedgerError> {
        Ok(match target {
            Target::FirstOnly => Vec::new(),
            Target::Orgs(orgs) => {
                for org in &self.orgs {
                    if orgs.contains(&org.name) && !gathering.has(&org.name) {
                        gathering.add(org.offer(org.peer.endorse(signed)?)?)?;
                    }
                }
                orgs.iter().filter(|org| !local(org)).cloned().collect()
            }
            Target::Policy(policy) => {
                for org in &self.orgs {
                    if policy.is_satisfied_by(gathering.have()) {
                        return Ok(Vec::new());
                    }
                    if !gathering.has(&org.name) {
                        gathering.add(org.offer(org.peer.endorse(signed)?)?)?;
                    }
                }
                let others: Vec<String> = self
                    .msp
                    .orgs()
                    .into_iter()
                    .filter(|org| !local(org))
                    .collect();
                policy
                    .orgs_to_ask(gathering.have(), &others)
                    .ok_or_else(|| LedgerError::Unendorsable(gathering.contract().to_string()))?
            }
        })
    }

    /// The endorsement policy a transaction of `signed` must satisfy, as of the state
    /// now: the contract's; for `_lifecycle`, the one its call needs
    /// ([`lifecycle::transaction_policy`]), read from `first`'s payload.
    fn policy_of(
        &self,
        contract: &str,
        signed: &SignedProposal,
        first: &Endorsed,
    ) -> Result<Policy, LedgerError> {
        let orgs = self.msp.orgs();
        if contract == LIFECYCLE_NAMESPACE {
            let proposal = Proposal::decode(signed.proposal.as_slice())
                .map_err(|e| LedgerError::BadResult(e.to_string()))?;
            let creator = self
                .msp
                .identify(&proposal.creator)
                .map_err(|e| LedgerError::Policy(e.to_string()))?;
            let payload = crate::proto::ResponsePayload::decode(first.response.payload.as_slice())
                .map_err(|e| LedgerError::BadResult(e.to_string()))?;
            return lifecycle::transaction_policy(
                &proposal.function,
                &creator.org,
                &payload.rwsets,
                &orgs,
            )
            .map_err(|e| LedgerError::Policy(e.to_string()));
        }
        let snapshot = self.world.snapshot();
        lifecycle::endorsement_policy(&*snapshot.view(LIFECYCLE_NAMESPACE), contract, &orgs)
            .map_err(|e| LedgerError::Policy(e.to_string()))
    }
}

impl EndorsementGatherer for LocalEndorsers {
    type Error = LedgerError;
    /// Never waits: the endorsers run when [`EndorsementGatherer::gather`] is called.
    type Gathered<'a> = Ready<Result<(), LedgerError>>;

    fn gather<'a>(&'a self, gathering: &'a mut Gathering) -> Self::Gathered<'a> {
        std::future::ready(self.gather_here(gathering))
    }
}
