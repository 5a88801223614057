//! Stage 2: in seq order, the checks that depend on state, then staging.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::verify::{Decoded, Verified};
use super::{POLL, Phase, Shared, TxStatus, ValidatorError, send, stamp};
use crate::ids::{Seq, TxId, ValidationCode};
use crate::lifecycle::{self, LIFECYCLE_NAMESPACE};
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
            Ok(verified) => {
                waiting.insert(verified.seq, verified);
            }
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
    let Verified {
        seq,
        timestamp_ms,
        tx_id,
        leaf,
        transaction,
        outcome,
    } = verified;
    let (code, decoded) = match outcome {
        Err(code) => (code, None),
        Ok(decoded) => (verdict(shared, policies, &tx_id, &decoded)?, Some(decoded)),
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
        .stage_with_events(record, &writes, events.clone(), transaction)?;
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
    })
}

/// The validation code of a transaction whose signatures verified.
fn verdict(
    shared: &Shared,
    policies: &mut Policies,
    tx_id: &TxId,
    decoded: &Decoded,
) -> Result<ValidationCode, StoreError> {
    if shared.world.tx(tx_id)?.is_some() {
        return Ok(ValidationCode::DuplicateTxid);
    }
    if let Err(code) = super::rules::check(&decoded.payload.rwsets, &decoded.payload.events) {
        return Ok(code);
    }
    if let Err(code) = namespace_rules(&decoded.contract, &decoded.payload.rwsets) {
        return Ok(code);
    }
    let snapshot = shared.world.snapshot();
    let Some(policy) = policies.get(shared, &snapshot, decoded)? else {
        return Ok(ValidationCode::ContractNotFound);
    };
    if !policy.is_satisfied_by(&decoded.endorsers) {
        return Ok(ValidationCode::EndorsementPolicyFailure);
    }
    if let Some((function, creator_org)) = &decoded.lifecycle
        && let Err(code) = lifecycle::check_transaction(
            function,
            creator_org,
            &decoded.payload.rwsets,
            &*snapshot.view(LIFECYCLE_NAMESPACE),
            &shared.orgs,
            &shared.lifecycle_policy,
        )
    {
        return Ok(code);
    }
    for set in &decoded.payload.rwsets {
        for read in &set.reads {
            let now = snapshot.get(&set.namespace, &read.key)?.map(|v| v.version);
            if now != read.version {
                return Ok(ValidationCode::MvccReadConflict);
            }
        }
        for range in &set.range_reads {
            if !range_unchanged(&snapshot, &set.namespace, range)? {
                return Ok(ValidationCode::PhantomReadConflict);
            }
        }
    }
    Ok(ValidationCode::Valid)
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
    /// The policy in force for `decoded` at `snapshot`; `None` when its contract is not
    /// deployed (or a `_lifecycle` call has no policy: it is not a transaction).
    fn get(
        &mut self,
        shared: &Shared,
        snapshot: &Snapshot,
        decoded: &Decoded,
    ) -> Result<Option<Arc<Policy>>, StoreError> {
        let contract = decoded.contract.as_str();
        if let Some((function, creator_org)) = &decoded.lifecycle {
            return Ok(lifecycle::transaction_policy(
                function,
                creator_org,
                &decoded.payload.rwsets,
                &shared.orgs,
            )
            .ok()
            .map(Arc::new));
        }
        let Some(definition) =
            snapshot.get(LIFECYCLE_NAMESPACE, &lifecycle::definition_key(contract))?
        else {
            return Ok(None);
        };
        let version = definition.version.seq;
        if let Some((seen, policy)) = self.by_contract.get(contract)
            && *seen == version
        {
            return Ok(Some(policy.clone()));
        }
        let view = snapshot.view(LIFECYCLE_NAMESPACE);
        match lifecycle::endorsement_policy(&*view, contract, &shared.orgs) {
            Ok(policy) => {
                let policy = Arc::new(policy);
                self.by_contract
                    .insert(contract.to_string(), (version, policy.clone()));
                Ok(Some(policy))
            }
            // A definition that does not decode or whose policy no longer parses can
            // be satisfied by nobody: the contract is as good as absent.
            Err(_) => Ok(None),
        }
    }
}
