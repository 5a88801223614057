//! The endorser: checks a signed proposal, runs the contract on a consistent view of the
//! state (durable + staged), and signs the outcome.
//!
//! Per proposal, in order (each step's failure is a typed [`EndorseError`]):
//! 1. size, decode, channel, nonce;
//! 2. creator certificate through the MSP cache (CA, org, expiry, role allowed to invoke);
//! 3. creator signature over `"runnel.proposal.v1" ‖ sha256(proposal)`;
//! 4. transaction id already staged or committed: `DUPLICATE_TXID`;
//! 5. simulation on one [`Snapshot`]: the contract's definition is read from
//!    `_lifecycle` (and recorded in the read set), its code loaded by hash, the function
//!    run in wasmtime; `_lifecycle` calls run natively ([`crate::lifecycle`]);
//! 6. the [`ResponsePayload`] is encoded canonically and signed over
//!    `"runnel.endorsement.v1" ‖ proposal hash ‖ sha256(payload)`.
//!
//! The payload holds nothing endorser-specific (no time, no identity), so every endorser
//! that runs a proposal on the same state produces the same bytes, and the client can
//! check agreement by comparing them.
//!
//! [`Endorser::evaluate`] runs steps 1-3 and 5 and returns the result without signing:
//! a query, never a transaction. [`Endorser::endorse_batch`] verifies the creator
//! signatures of many proposals in one Ed25519 batch.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use runnel_runtime::{CallContext, Creator, InvokeError, KvRead, NsRwSet, Runtime};

use crate::identity::{Identity, IdentityError, Msp, Role, Signer};
use crate::ids::TxId;
use crate::lifecycle::{
    self, DEFAULT_LIFECYCLE_POLICY, FN_APPROVE, FN_DEFINITION, FN_DEPLOY, FN_UPGRADE,
    LIFECYCLE_NAMESPACE, LifecycleError,
};
use crate::policy::{Policy, PolicyError};
use crate::proto::{
    DeployRequest, Endorsement, Proposal, ProposalResponse, ResponsePayload, SignedProposal,
};
use crate::sig::SigCheck;
use crate::store::{Snapshot, StoreError, WorldState};
use crate::tx::{self, Hash};

/// Largest signed proposal accepted, in bytes (a deploy carries the contract's code).
pub const PROPOSAL_BYTES_MAX: usize = 8 << 20;
/// Shortest nonce accepted, in bytes: the nonce is what makes a transaction id unique.
pub const NONCE_BYTES_MIN: usize = 16;
/// Longest nonce accepted, in bytes.
pub const NONCE_BYTES_MAX: usize = 64;
/// Most proposals one [`Endorser::endorse_batch`] call takes.
pub const BATCH_PROPOSALS_MAX: usize = 1024;

/// What an endorser accepts and who may invoke.
#[derive(Debug, Clone)]
pub struct EndorserConfig {
    /// The channel this endorser serves.
    pub channel: String,
    /// Roles allowed to invoke contracts.
    pub invoke_roles: Vec<Role>,
    /// Roles allowed to propose lifecycle transactions (deploy, upgrade).
    pub lifecycle_roles: Vec<Role>,
    /// Who must endorse lifecycle transactions (Fabric policy syntax).
    pub lifecycle_policy: String,
    /// Largest signed proposal accepted, in bytes.
    pub proposal_bytes_max: usize,
    /// How far a proposal's timestamp may lie from this node's clock
    /// ([`tx::PROPOSAL_WINDOW`]; the network's `proposal_window_s`).
    pub proposal_window: Duration,
}

impl Default for EndorserConfig {
    fn default() -> Self {
        EndorserConfig {
            channel: "main".to_string(),
            invoke_roles: vec![Role::Client, Role::Admin],
            lifecycle_roles: vec![Role::Admin],
            lifecycle_policy: DEFAULT_LIFECYCLE_POLICY.to_string(),
            proposal_bytes_max: PROPOSAL_BYTES_MAX,
            proposal_window: tx::PROPOSAL_WINDOW,
        }
    }
}

/// Why a proposal was not endorsed (or evaluated). Nothing is written either way.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EndorseError {
    /// The signed proposal is larger than the limit.
    #[error("proposal is {size_bytes} bytes; the limit is {limit_bytes} (proposal_bytes_max)")]
    TooLarge {
        /// Its size.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// The bytes are not a proposal, or a field is unacceptable.
    #[error("malformed proposal: {0}")]
    Malformed(String),
    /// The proposal is for another channel.
    #[error("proposal is for channel `{got}`, this endorser serves `{expected}`")]
    WrongChannel {
        /// This endorser's channel.
        expected: String,
        /// The proposal's.
        got: String,
    },
    /// The creator's certificate, role or signature was refused.
    #[error("creator refused: {0}")]
    Creator(IdentityError),
    /// The proposal's timestamp is too far from this node's clock.
    #[error(transparent)]
    OutsideWindow(tx::OutsideWindow),
    /// A transaction with this id is already staged or committed (a replay).
    #[error("transaction {0} is already in the ledger (replayed proposal)")]
    DuplicateTxId(TxId),
    /// No contract of that name is deployed.
    #[error("contract `{0}` is not deployed")]
    ContractNotFound(String),
    /// The contract's function failed: its own error, a trap, or a limit.
    #[error("contract `{contract}` failed: {error}")]
    Contract {
        /// The contract.
        contract: String,
        /// What happened, with the contract's message.
        error: InvokeError,
    },
    /// A lifecycle call was refused.
    #[error(transparent)]
    Lifecycle(LifecycleError),
    /// The state could not be read.
    #[error("state unavailable: {0}")]
    Store(String),
}

impl EndorseError {
    /// A stable, machine-readable name (API status details, SDK error types).
    pub fn code(&self) -> &'static str {
        match self {
            EndorseError::TooLarge { .. } => "PROPOSAL_TOO_LARGE",
            EndorseError::Malformed(_) => "BAD_PAYLOAD",
            EndorseError::WrongChannel { .. } => "WRONG_CHANNEL",
            EndorseError::Creator(error) => error.creator_code(),
            EndorseError::OutsideWindow(_) => "TIMESTAMP_OUT_OF_WINDOW",
            EndorseError::DuplicateTxId(_) => "DUPLICATE_TXID",
            EndorseError::ContractNotFound(_) => "CONTRACT_NOT_FOUND",
            EndorseError::Contract { error, .. } => error.code(),
            EndorseError::Lifecycle(error) => error.code(),
            EndorseError::Store(_) => "STATE_UNAVAILABLE",
        }
    }
}

impl From<StoreError> for EndorseError {
    fn from(error: StoreError) -> Self {
        EndorseError::Store(error.to_string())
    }
}

impl From<LifecycleError> for EndorseError {
    fn from(error: LifecycleError) -> Self {
        match error {
            LifecycleError::NotDeployed(name) => EndorseError::ContractNotFound(name),
            LifecycleError::State(e) => EndorseError::Store(e.to_string()),
            other => EndorseError::Lifecycle(other),
        }
    }
}

/// An endorsed proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Endorsed {
    /// The transaction id.
    pub tx_id: TxId,
    /// The payload and this endorser's signature: what the client collects.
    pub response: ProposalResponse,
    /// The function's result, as the payload holds it.
    pub result: Vec<u8>,
}

/// A checked proposal: decoded once, creator resolved (and, from
/// [`Endorser::check_batch`], its signature verified).
#[derive(Debug)]
pub(crate) struct Checked {
    proposal: Proposal,
    hash: Hash,
    tx_id: TxId,
    creator: Arc<Identity>,
}

impl Checked {
    /// The contract the proposal calls.
    pub(crate) fn contract(&self) -> &str {
        &self.proposal.contract
    }
}

fn bad_creator_signature(checked: &Checked) -> EndorseError {
    EndorseError::Creator(IdentityError::BadSignature {
        who: checked.creator.id(),
    })
}

/// Endorses proposals for one channel with one identity. Cheap to share across threads.
pub struct Endorser {
    config: EndorserConfig,
    msp: Arc<Msp>,
    orgs: Vec<String>,
    lifecycle_policy: Policy,
    signer: Signer,
    runtime: Arc<Runtime>,
    state: Arc<WorldState>,
}

impl std::fmt::Debug for Endorser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endorser")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Endorser {
    /// An endorser signing with `signer`, checking creators against `msp`, running
    /// contracts in `runtime` on `state`. Fails if the lifecycle policy does not parse.
    pub fn new(
        config: EndorserConfig,
        msp: Arc<Msp>,
        signer: Signer,
        runtime: Arc<Runtime>,
        state: Arc<WorldState>,
    ) -> Result<Self, PolicyError> {
        let orgs = msp.orgs();
        let lifecycle_policy = Policy::parse(&config.lifecycle_policy, &orgs)?;
        Ok(Endorser {
            config,
            msp,
            orgs,
            lifecycle_policy,
            signer,
            runtime,
            state,
        })
    }

    /// The lifecycle policy in force.
    pub fn lifecycle_policy(&self) -> &Policy {
        &self.lifecycle_policy
    }

    /// Endorses one proposal.
    pub fn endorse(&self, signed: &SignedProposal) -> Result<Endorsed, EndorseError> {
        let checked = self.check(signed)?;
        self.verify_creator_signature(&checked, &signed.signature)?;
        self.endorse_checked(checked)
    }

    /// Endorses many proposals, verifying their creators' signatures as one Ed25519
    /// batch (about half the cost per signature of one-by-one verification; same
    /// verdicts, see [`crate::sig`]). One forged proposal fails alone. The answers are in
    /// the order of `proposals`.
    pub fn endorse_batch(
        &self,
        proposals: &[SignedProposal],
    ) -> Vec<Result<Endorsed, EndorseError>> {
        if proposals.len() > BATCH_PROPOSALS_MAX {
            let (head, tail) = proposals.split_at(BATCH_PROPOSALS_MAX);
            let mut answers = self.endorse_batch(head);
            answers.extend(self.endorse_batch(tail));
            return answers;
        }
        self.check_batch(proposals)
            .into_iter()
            .map(|checked| self.endorse_checked(checked?))
            .collect()
    }

    /// Checks proposals (steps 1 and 2) and verifies their creators' signatures as one
    /// batch, remembering the valid ones. What is answered is what [`Endorser::endorse`]
    /// or [`Endorser::evaluate`] would find before running each, in the order of
    /// `proposals`; a checked proposal goes on to [`Endorser::endorse_checked`] or
    /// [`Endorser::evaluate_checked`] of any endorser sharing this one's configuration
    /// and MSP, without being decoded and checked again.
    pub(crate) fn check_batch(
        &self,
        proposals: &[SignedProposal],
    ) -> Vec<Result<Checked, EndorseError>> {
        let checked: Vec<Result<Checked, EndorseError>> =
            proposals.iter().map(|signed| self.check(signed)).collect();
        let checks: Vec<SigCheck> = checked
            .iter()
            .zip(proposals)
            .filter_map(|(checked, signed)| {
                let checked = checked.as_ref().ok()?;
                Some(self.creator_check(checked, &signed.signature))
            })
            .collect();
        let mut verdicts = self.msp.signatures().verify_all(&checks).into_iter();
        checked
            .into_iter()
            .map(|checked| {
                let checked = checked?;
                if verdicts.next().unwrap_or(false) {
                    Ok(checked)
                } else {
                    Err(bad_creator_signature(&checked))
                }
            })
            .collect()
    }

    /// Runs a proposal and returns the function's result, without a transaction: no
    /// duplicate check, no signature, nothing to submit.
    pub fn evaluate(&self, signed: &SignedProposal) -> Result<Vec<u8>, EndorseError> {
        let checked = self.check(signed)?;
        self.verify_creator_signature(&checked, &signed.signature)?;
        self.evaluate_checked(&checked)
    }

    /// [`Endorser::evaluate`] of a proposal [`Endorser::check_batch`] passed.
    pub(crate) fn evaluate_checked(&self, checked: &Checked) -> Result<Vec<u8>, EndorseError> {
        let snapshot = self.state.snapshot();
        Ok(self.simulate(checked, &snapshot)?.result)
    }

    /// [`Endorser::endorse`] of a proposal [`Endorser::check_batch`] passed.
    pub(crate) fn endorse_checked(&self, checked: Checked) -> Result<Endorsed, EndorseError> {
        if self.state.tx(&checked.tx_id)?.is_some() {
            return Err(EndorseError::DuplicateTxId(checked.tx_id));
        }
        let snapshot = self.state.snapshot();
        let mut simulated = self.simulate(&checked, &snapshot)?;
        let payload = simulated.encode_to_vec();
        let result = std::mem::take(&mut simulated.result);
        let message = tx::endorsement_message(&checked.hash, &tx::sha256(&payload));
        let signature = self.signer.sign(&message).to_vec();
        // Our own signature is valid: a validator in this process need not check it.
        self.msp.signatures().remember_own(&SigCheck {
            key: self.signer.public_key(),
            message,
            signature: signature.clone(),
        });
        let endorsement = Endorsement {
            endorser: self.signer.cert_der().to_vec(),
            signature,
        };
        Ok(Endorsed {
            tx_id: checked.tx_id,
            response: ProposalResponse {
                payload,
                endorsement: Some(endorsement),
            },
            result,
        })
    }

    /// Steps 1 and 2: everything but the signature (which may be batched).
    fn check(&self, signed: &SignedProposal) -> Result<Checked, EndorseError> {
        let size_bytes = signed.proposal.len() + signed.signature.len();
        if size_bytes > self.config.proposal_bytes_max {
            return Err(EndorseError::TooLarge {
                size_bytes,
                limit_bytes: self.config.proposal_bytes_max,
            });
        }
        let proposal = Proposal::decode(signed.proposal.as_slice())
            .map_err(|e| EndorseError::Malformed(e.to_string()))?;
        if proposal.channel != self.config.channel {
            return Err(EndorseError::WrongChannel {
                expected: self.config.channel.clone(),
                got: proposal.channel,
            });
        }
        if !(NONCE_BYTES_MIN..=NONCE_BYTES_MAX).contains(&proposal.nonce.len()) {
            return Err(EndorseError::Malformed(format!(
                "nonce of {} bytes; use {NONCE_BYTES_MIN} to {NONCE_BYTES_MAX} random bytes",
                proposal.nonce.len()
            )));
        }
        if proposal.contract.is_empty() || proposal.function.is_empty() {
            return Err(EndorseError::Malformed(
                "contract and function must be named".into(),
            ));
        }
        tx::check_window(
            proposal.timestamp_ms,
            tx::now_ms(),
            self.config.proposal_window,
        )
        .map_err(EndorseError::OutsideWindow)?;
        let creator = self
            .msp
            .verify(&proposal.creator, tx::now_seconds())
            .map_err(EndorseError::Creator)?;
        let roles = if proposal.contract == LIFECYCLE_NAMESPACE {
            &self.config.lifecycle_roles
        } else {
            &self.config.invoke_roles
        };
        creator.require_role(roles).map_err(EndorseError::Creator)?;
        Ok(Checked {
            hash: tx::sha256(&signed.proposal),
            tx_id: tx::tx_id(&proposal),
            proposal,
            creator,
        })
    }

    fn verify_creator_signature(
        &self,
        checked: &Checked,
        signature: &[u8],
    ) -> Result<(), EndorseError> {
        // Batched with the proposals other threads are checking at the same moment.
        if self
            .msp
            .signatures()
            .verify_one(&self.creator_check(checked, signature))
        {
            return Ok(());
        }
        Err(bad_creator_signature(checked))
    }

    /// The creator's signature over a checked proposal, to verify.
    fn creator_check(&self, checked: &Checked, signature: &[u8]) -> SigCheck {
        SigCheck {
            key: checked.creator.verifying_key().to_bytes(),
            message: tx::proposal_message(&checked.hash),
            signature: signature.to_vec(),
        }
    }

    /// Step 5: the deterministic outcome, on one snapshot.
    fn simulate(
        &self,
        checked: &Checked,
        snapshot: &Snapshot,
    ) -> Result<ResponsePayload, EndorseError> {
        let proposal = &checked.proposal;
        let creator = &checked.creator;
        let ctx = CallContext {
            tx_id: checked.tx_id.to_hex(),
            creator: Creator {
                org: creator.org.clone(),
                role: creator.role.as_str().to_string(),
                name: creator.name.clone(),
                cert: creator.cert_der.clone(),
            },
            timestamp_ms: proposal.timestamp_ms,
        };
        let lifecycle_view = snapshot.view(LIFECYCLE_NAMESPACE);
        if proposal.contract == LIFECYCLE_NAMESPACE {
            return self.simulate_lifecycle(checked, snapshot, &ctx);
        }
        let (definition, version) =
            lifecycle::read_definition(lifecycle_view.as_ref(), &proposal.contract)?
                .ok_or_else(|| EndorseError::ContractNotFound(proposal.contract.clone()))?;
        let contract =
            lifecycle::load_contract(&self.runtime, lifecycle_view.as_ref(), &definition)?;
        let simulation = self
            .runtime
            .invoke(
                &contract,
                &proposal.contract,
                &proposal.function,
                &proposal.args,
                &ctx,
                snapshot.view(&proposal.contract),
            )
            .map_err(|error| EndorseError::Contract {
                contract: proposal.contract.clone(),
                error,
            })?;
        // The definition read makes an upgrade ordered before this transaction an MVCC
        // conflict, and names the policy the validator checks.
        let definition_read = NsRwSet {
            namespace: LIFECYCLE_NAMESPACE.to_string(),
            reads: vec![KvRead {
                key: lifecycle::definition_key(&proposal.contract),
                version: Some(version),
            }],
            range_reads: Vec::new(),
            writes: Vec::new(),
        };
        Ok(payload(
            checked.hash,
            simulation.result,
            vec![definition_read, simulation.rwset],
            simulation.events,
        ))
    }

    /// The caller of a lifecycle function: the proposal's creator's organisation.
    fn caller<'a>(&'a self, checked: &'a Checked) -> lifecycle::Caller<'a> {
        lifecycle::Caller {
            org: &checked.creator.org,
            orgs: &self.orgs,
            approvals: &self.lifecycle_policy,
        }
    }

    fn simulate_lifecycle(
        &self,
        checked: &Checked,
        snapshot: &Snapshot,
        ctx: &CallContext,
    ) -> Result<ResponsePayload, EndorseError> {
        let proposal = &checked.proposal;
        let lifecycle_view = snapshot.view(LIFECYCLE_NAMESPACE);
        let [arg] = proposal.args.as_slice() else {
            return Err(LifecycleError::BadRequest(format!(
                "`{}` takes exactly one argument, got {}",
                proposal.function,
                proposal.args.len()
            ))
            .into());
        };
        match proposal.function.as_str() {
            FN_APPROVE => {
                let request = DeployRequest::decode(arg.as_slice())
                    .map_err(|e| LifecycleError::BadRequest(e.to_string()))?;
                let approved = lifecycle::approve(
                    &request,
                    lifecycle_view.as_ref(),
                    &self.runtime,
                    self.caller(checked),
                )?;
                Ok(payload(
                    checked.hash,
                    approved.definition.encode_to_vec(),
                    vec![approved.lifecycle_rwset],
                    Vec::new(),
                ))
            }
            FN_DEPLOY | FN_UPGRADE => {
                let request = DeployRequest::decode(arg.as_slice())
                    .map_err(|e| LifecycleError::BadRequest(e.to_string()))?;
                lifecycle::check_name(&request.name)?;
                let deployment = lifecycle::deploy(
                    &request,
                    proposal.function == FN_UPGRADE,
                    lifecycle_view.as_ref(),
                    snapshot.view(&request.name),
                    &self.runtime,
                    self.caller(checked),
                    ctx,
                )?;
                let mut rwsets = vec![deployment.lifecycle_rwset];
                let mut events = Vec::new();
                if let Some(init) = deployment.init {
                    rwsets.push(init.rwset);
                    events = init.events;
                }
                Ok(payload(
                    checked.hash,
                    deployment.definition.encode_to_vec(),
                    rwsets,
                    events,
                ))
            }
            FN_DEFINITION => {
                let name = std::str::from_utf8(arg)
                    .map_err(|_| LifecycleError::BadRequest("name is not UTF-8".into()))?;
                let (definition, version) =
                    lifecycle::read_definition(lifecycle_view.as_ref(), name)?
                        .ok_or_else(|| EndorseError::ContractNotFound(name.to_string()))?;
                let read = NsRwSet {
                    namespace: LIFECYCLE_NAMESPACE.to_string(),
                    reads: vec![KvRead {
                        key: lifecycle::definition_key(name),
                        version: Some(version),
                    }],
                    range_reads: Vec::new(),
                    writes: Vec::new(),
                };
                Ok(payload(
                    checked.hash,
                    definition.encode_to_vec(),
                    vec![read],
                    Vec::new(),
                ))
            }
            other => Err(LifecycleError::UnknownFunction(other.to_string()).into()),
        }
    }
}

/// A response payload with its read/write sets in canonical (namespace) order.
fn payload(
    proposal_hash: Hash,
    result: Vec<u8>,
    mut rwsets: Vec<NsRwSet>,
    events: Vec<runnel_runtime::ContractEvent>,
) -> ResponsePayload {
    rwsets.sort_by(|a, b| a.namespace.cmp(&b.namespace));
    ResponsePayload {
        proposal_hash: proposal_hash.to_vec(),
        result,
        rwsets,
        events,
    }
}
