//! Stage 2: in seq order, the checks that depend on state, then staging.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::verify::{Decoded, Verified};
use super::{POLL, Phase, Shared, TxStatus, ValidatorError, send, stamp};
use crate::identity::NetworkDefinition;
use crate::ids::{Seq, TxId, ValidationCode};
use crate::lifecycle::{self, LIFECYCLE_NAMESPACE};
use crate::netconfig::{self, CONFIG_NAMESPACE};
use crate::policy::Policy;
use crate::proto::{ContractEvent, NsRwSet, RangeRead};
use crate::store::{Snapshot, StoreError, TxRecord};
use crate::trace::Stage;
use crate::tx::{self, Hash};

/// What stage 2 hands to stage 3.
pub(crate) struct Checked {
    pub seq: Seq,
    pub tx_id: TxId,
    pub code: ValidationCode,
    /// Its Merkle leaf, from the timestamp it was validated at (for the seal check).
    pub leaf: Hash,
    /// When the orderer ordered it (Unix milliseconds).
    pub timestamp_ms: u64,
    /// The contract events of a valid transaction (none for an invalid one).
    pub events: Vec<ContractEvent>,
    /// For a valid `_config` update, the definition it put in force: who may sign the
    /// seals that end at it or later.
    pub reconfigured: Option<Arc<NetworkDefinition>>,
}

/// Endorsement policies by contract, with the definition version they were read at.
#[derive(Default)]
struct Policies {
    by_contract: HashMap<String, (u64, Arc<Policy>)>,
}

/// Stage 2: puts stage 1's output back in seq order and validates one at a time.
pub(crate) fn run(shared: &Shared, mut next: Seq, rx: &Receiver<Verified>, out: &Sender<Checked>) {
    let mut waiting: BTreeMap<Seq, Verified> = BTreeMap::new();
    let mut policies = Policies::default();
    loop {
        match crate::queue::recv_timeout(rx, POLL) {
            Ok(verified) => super::hold(&mut waiting, next, verified.seq, verified),
            Err(RecvTimeoutError::Timeout) if !shared.stopping() => continue,
            Err(_) => return,
        }
        while let Some(verified) = waiting.remove(&next) {
            match validate(shared, &mut policies, verified) {
                Ok(checked) => {
                    if !send(shared, out, checked) {
                        return;
                    }
                }
                Err(error) => {
                    shared.fail(ValidatorError::Store(error.to_string()));
                    return;
                }
            }
            next = next.next();
        }
    }
}

fn validate(
    shared: &Shared,
    policies: &mut Policies,
    verified: Verified,
) -> Result<Checked, StoreError> {
    // A configuration transaction before this one changed the trust since stage 1
    // checked it: check it again under the trust in force at its place.
    let verified = if verified.epoch == shared.msp.epoch() {
        verified
    } else {
        super::verify::verify_now(shared, verified)
    };
    let Verified {
        seq,
        timestamp_ms,
        tx_id,
        leaf,
        transaction,
        outcome,
        epoch: _,
    } = verified;
    let mut reconfigure = None;
    let (code, decoded) = match outcome {
        Err(code) => (code, None),
        Ok(decoded) => {
            let (code, next) = verdict(shared, policies, &tx_id, &decoded)?;
            reconfigure = next;
            (code, Some(decoded))
        }
    };
    let valid = code.is_valid();
    let (writes, events) = match decoded {
        Some(decoded) if valid => (decoded.payload.rwsets, decoded.payload.events),
        _ => (Vec::new(), Vec::new()),
    };
    let record = TxRecord {
        tx_id,
        seq,
        code,
        timestamp_ms,
    };
    // The store indexes the events with the commit; stage 3 announces them after it.
    shared
        .world
        .stage_ordered(record, &writes, events.clone(), transaction, leaf)?;
    let reconfigured = reconfigure.filter(|_| valid);
    if let Some(next) = &reconfigured {
        // From the next transaction on, the trust is the new definition's.
        if let Err(error) = next.apply_to(&shared.msp) {
            return Err(StoreError::Corrupt {
                what: "network definition",
                detail: format!("a checked definition could not be applied: {error}"),
            });
        }
        tracing::info!(
            seq = seq.0,
            sequence = next.sequence,
            "network configuration updated"
        );
    }
    stamp(shared, tx_id, Stage::Validated, tx::now_us());
    shared.hub.status(TxStatus {
        tx_id,
        seq,
        code,
        phase: Phase::Validated,
        timestamp_ms,
    });
    Ok(Checked {
        seq,
        tx_id,
        code,
        leaf,
        timestamp_ms,
        events,
        reconfigured: reconfigured.map(Arc::new),
    })
}

/// The network definition in force at `snapshot`: the last `_config` update staged, else
/// the genesis one; `None` for a validator given no genesis.
fn network_now(
    shared: &Shared,
    snapshot: &Snapshot,
) -> Result<Option<Arc<NetworkDefinition>>, StoreError> {
    let Some(genesis) = &shared.config.genesis else {
        return Ok(None);
    };
    netconfig::current(&*snapshot.view(CONFIG_NAMESPACE), genesis)
        .map(|(definition, _)| Some(definition))
        .map_err(|detail| StoreError::Corrupt {
            what: "network definition",
            detail,
        })
}

/// A policy of the definition in force, or why it cannot be evaluated.
type PolicyInForce = Result<Arc<Policy>, String>;

/// The organisations and the lifecycle approval policy in force at `snapshot`. The
/// policy is the reason it cannot be evaluated when it does not parse over the
/// organisations: whatever a definition in force says, a policy in it is input to
/// judge, never a reason to stop (a commit it governs is `UNUSABLE_POLICY`).
fn lifecycle_rules(
    shared: &Shared,
    snapshot: &Snapshot,
) -> Result<(Vec<String>, PolicyInForce), StoreError> {
    let Some(network) = network_now(shared, snapshot)? else {
        let policy = shared
            .lifecycle_policy
            .clone()
            .ok_or_else(|| "the validator was given no lifecycle policy".to_string());
        return Ok((shared.orgs.clone(), policy));
    };
    let orgs = network.org_names();
    let policy = Policy::parse(&network.lifecycle_policy, &orgs)
        .map(Arc::new)
        .map_err(|e| format!("the lifecycle policy in force does not parse: {e}"));
    Ok((orgs, policy))
}

/// The validation code of a transaction whose signatures verified, and for a valid
/// `_config` update, the definition it puts in force.
fn verdict(
    shared: &Shared,
    policies: &mut Policies,
    tx_id: &TxId,
    decoded: &Decoded,
) -> Result<(ValidationCode, Option<NetworkDefinition>), StoreError> {
    let code = |code| Ok((code, None));
    if shared.world.tx(tx_id)?.is_some() {
        return code(ValidationCode::DuplicateTxid);
    }
    if let Err(c) = super::rules::check(&decoded.payload.rwsets, &decoded.payload.events) {
        return code(c);
    }
    if let Err(c) = namespace_rules(&decoded.contract, &decoded.payload.rwsets) {
        return code(c);
    }
    let snapshot = shared.world.snapshot();
    let policy = match policies.get(shared, &snapshot, decoded)? {
        Ok(policy) => policy,
        Err(c) => return code(c),
    };
    if !policy.is_satisfied_by(&decoded.endorsers) {
        return code(ValidationCode::EndorsementPolicyFailure);
    }
    if let Some((function, creator_org)) = &decoded.lifecycle {
        let (orgs, approvals) = lifecycle_rules(shared, &snapshot)?;
        if let Err(c) = lifecycle::check_transaction(
            function,
            creator_org,
            &decoded.payload.rwsets,
            &*snapshot.view(LIFECYCLE_NAMESPACE),
            &orgs,
            approvals.as_deref().ok(),
        ) {
            if let (ValidationCode::UnusablePolicy, Err(reason)) = (c, &approvals) {
                tracing::warn!(tx_id = %tx_id, %reason, "a lifecycle transaction is UNUSABLE_POLICY");
            }
            return code(c);
        }
    }
    for set in &decoded.payload.rwsets {
        for read in &set.reads {
            let now = snapshot.get(&set.namespace, &read.key)?.map(|v| v.version);
            if now != read.version {
                return code(ValidationCode::MvccReadConflict);
            }
        }
        for range in &set.range_reads {
            if !range_unchanged(&snapshot, &set.namespace, range)? {
                return code(ValidationCode::PhantomReadConflict);
            }
        }
    }
    if decoded.contract == CONFIG_NAMESPACE {
        let Some(current) = network_now(shared, &snapshot)? else {
            return code(ValidationCode::ContractNotFound);
        };
        return Ok(
            match netconfig::check_update(&current, &decoded.payload.rwsets) {
                Ok(next) => (ValidationCode::Valid, Some(next)),
                Err(refused) => {
                    tracing::warn!(
                        tx_id = %tx_id,
                        code = %refused.code(),
                        reason = %refused,
                        "a configuration update is refused"
                    );
                    (refused.code(), None)
                }
            },
        );
    }
    code(ValidationCode::Valid)
}

/// What a transaction may write: an invoke only its own contract's namespace (it reads
/// `_lifecycle`, its definition, but never writes it); a deploy or upgrade `_lifecycle`
/// and the namespace of the contract it defines (its init call).
fn namespace_rules(contract: &str, rwsets: &[NsRwSet]) -> Result<(), ValidationCode> {
    let writes = |set: &NsRwSet| !set.writes.is_empty();
    if contract != LIFECYCLE_NAMESPACE {
        let foreign = rwsets.iter().any(|set| {
            set.namespace != contract && (set.namespace != LIFECYCLE_NAMESPACE || writes(set))
        });
        return if foreign {
            Err(ValidationCode::IllegalWriteset)
        } else {
            Ok(())
        };
    }
    let defined: Vec<&[u8]> = rwsets
        .iter()
        .filter(|set| set.namespace == LIFECYCLE_NAMESPACE)
        .flat_map(|set| &set.writes)
        .filter_map(|write| write.key.strip_prefix(lifecycle::DEFINITION_PREFIX))
        .collect();
    for set in rwsets {
        if set.namespace == LIFECYCLE_NAMESPACE || !writes(set) {
            continue;
        }
        if !defined.contains(&set.namespace.as_bytes()) {
            return Err(ValidationCode::IllegalWriteset);
        }
    }
    Ok(())
}

/// A range read still sees exactly the keys and versions it saw: over the whole range
/// when the call read it to the end, else from its start through the last key the
/// iterator yielded (a key committed since, before that point, is a phantom); a range
/// that yielded nothing saw nothing. `rules::check` has made sure the reads lie inside.
fn range_unchanged(snapshot: &Snapshot, ns: &str, range: &RangeRead) -> Result<bool, StoreError> {
    let through_last;
    let end = if range.exhausted {
        range.end.as_deref()
    } else {
        let Some(last) = &range.last else {
            return Ok(true);
        };
        // Just past the last key yielded: the key followed by a zero byte.
        let mut bound = last.clone();
        bound.push(0);
        through_last = bound;
        Some(through_last.as_slice())
    };
    let now = snapshot.scan(ns, &range.start, end, range.reads.len() + 1)?;
    Ok(now.len() == range.reads.len()
        && now.iter().zip(&range.reads).all(|((key, value), read)| {
            *key == read.key && Some(&value.version) == read.version.as_ref()
        }))
}

impl Policies {
    /// The policy in force for `decoded` at `snapshot`; else its code:
    /// `CONTRACT_NOT_FOUND` when its contract is not deployed (or a `_lifecycle` call
    /// has no policy: it is not a transaction), `UNUSABLE_POLICY` when the definition
    /// in force's `config_policy` cannot be evaluated.
    fn get(
        &mut self,
        shared: &Shared,
        snapshot: &Snapshot,
        decoded: &Decoded,
    ) -> Result<Result<Arc<Policy>, ValidationCode>, StoreError> {
        let contract = decoded.contract.as_str();
        if contract == CONFIG_NAMESPACE {
            let Some(current) = network_now(shared, snapshot)? else {
                return Ok(Err(ValidationCode::ContractNotFound));
            };
            return Ok(match netconfig::update_policy(&current) {
                Ok(policy) => Ok(Arc::new(policy)),
                Err(error) => {
                    tracing::warn!(
                        %error,
                        "the config policy in force does not parse: a configuration update is UNUSABLE_POLICY"
                    );
                    Err(ValidationCode::UnusablePolicy)
                }
            });
        }
        if let Some((function, creator_org)) = &decoded.lifecycle {
            let (orgs, _) = lifecycle_rules(shared, snapshot)?;
            return Ok(lifecycle::transaction_policy(
                function,
                creator_org,
                &decoded.payload.rwsets,
                &orgs,
            )
            .map(Arc::new)
            .map_err(|_| ValidationCode::ContractNotFound));
        }
        let Some(definition) =
            snapshot.get(LIFECYCLE_NAMESPACE, &lifecycle::definition_key(contract))?
        else {
            return Ok(Err(ValidationCode::ContractNotFound));
        };
        let version = definition.version.seq;
        if let Some((seen, policy)) = self.by_contract.get(contract)
            && *seen == version
        {
            return Ok(Ok(policy.clone()));
        }
        let view = snapshot.view(LIFECYCLE_NAMESPACE);
        match lifecycle::endorsement_policy(&*view, contract, &shared.msp.orgs()) {
            Ok(policy) => {
                let policy = Arc::new(policy);
                self.by_contract
                    .insert(contract.to_string(), (version, policy.clone()));
                Ok(Ok(policy))
            }
            // A definition that does not decode or whose policy no longer parses can
            // be satisfied by nobody: the contract is as good as absent.
            Err(_) => Ok(Err(ValidationCode::ContractNotFound)),
        }
    }
}
