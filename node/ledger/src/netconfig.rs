//! The network's configuration as ordered transactions, the way Fabric's config blocks
//! are: adding an organisation, changing its CAs, its revoked certificates or its peers,
//! or the policies, is a transaction in the system namespace `_config` that writes the
//! whole new [`NetworkDefinition`] under [`NETWORK_KEY`]. Every peer applies it at its
//! place in the stream, so every peer validates each transaction against the same
//! definition.
//!
//! An update is signed offline by as many organisations' admins as the definition in
//! force's `config_policy` names (default a majority): its proposal is signed by the
//! admin who proposes it, and every admin's signature is an endorsement of the one
//! payload every signer can compute ([`update_payload`]): a read of the definition's key
//! at its current version and the write of the next definition. Nothing runs a contract;
//! the validator checks the update itself ([`check_update`]): the next sequence, the same
//! channel, a definition that parses and checks.
//!
//! Until the first update commits, the definition in force is the genesis one every
//! node is given (`network.json`).

use std::sync::Arc;

use prost::Message;
use runnel_runtime::{KvRead, KvWrite, NsRwSet, StateView, Version};

use crate::identity::{NetworkDefinition, Role};
use crate::ids::ValidationCode;
use crate::policy::{Policy, PolicyError};
use crate::proto::{Proposal, ResponsePayload, SignedProposal, Transaction};
use crate::tx::{self, Hash};

/// The system namespace of the network's configuration.
pub const CONFIG_NAMESPACE: &str = "_config";
/// The key the definition in force is written under.
pub const NETWORK_KEY: &[u8] = b"network";
/// The one `_config` function: replace the definition.
pub const FN_UPDATE: &str = "update";

/// The roles whose signatures count for a `_config` update: admins.
pub const SIGNER_ROLES: &[Role] = &[Role::Admin];

/// The definition in force as of `view` (a view of `_config`) and its key's version;
/// `genesis` while no update has committed. A stored definition that does not parse is
/// an error: the configuration is corrupt, and nothing may be validated against a
/// guess.
pub fn current(
    view: &dyn StateView,
    genesis: &NetworkDefinition,
) -> Result<(Arc<NetworkDefinition>, Option<Version>), String> {
    match view.get(NETWORK_KEY).map_err(|e| e.to_string())? {
        None => Ok((Arc::new(genesis.clone()), None)),
        Some(stored) => {
            let definition = NetworkDefinition::from_bytes(&stored.value)
                .map_err(|e| format!("the stored network definition is corrupt: {e}"))?;
            Ok((Arc::new(definition), Some(stored.version)))
        }
    }
}

/// What every signer of an update endorses: a read of [`NETWORK_KEY`] at `current`
/// (its version now; `None` before the first update) and the write of `next`.
pub fn update_payload(
    proposal_hash: &Hash,
    current: Option<Version>,
    next: &NetworkDefinition,
) -> ResponsePayload {
    ResponsePayload {
        proposal_hash: proposal_hash.to_vec(),
        result: Vec::new(),
        rwsets: vec![NsRwSet {
            namespace: CONFIG_NAMESPACE.to_string(),
            reads: vec![KvRead {
                key: NETWORK_KEY.to_vec(),
                version: current,
            }],
            range_reads: Vec::new(),
            writes: vec![KvWrite {
                key: NETWORK_KEY.to_vec(),
                value: next.to_bytes(),
                is_delete: false,
            }],
        }],
        events: Vec::new(),
    }
}

/// An unsigned update transaction: `proposal` (a `_config` `update` proposal whose one
/// argument is `next`'s bytes, signed by its proposer) with the payload every signer
/// endorses, and no signature yet.
pub fn update_transaction(
    proposal: SignedProposal,
    current: Option<Version>,
    next: &NetworkDefinition,
) -> Transaction {
    let payload = update_payload(&tx::sha256(&proposal.proposal), current, next);
    Transaction {
        proposal: Some(proposal),
        payload: payload.encode_to_vec(),
        endorsements: Vec::new(),
    }
}

/// The definition an update transaction proposes, checked to be what its payload writes:
/// what an admin reads before signing it.
pub fn proposed(transaction: &Transaction) -> Result<NetworkDefinition, String> {
    let signed = transaction
        .proposal
        .as_ref()
        .ok_or("the transaction has no proposal")?;
    let proposal = Proposal::decode(signed.proposal.as_slice()).map_err(|e| e.to_string())?;
    if proposal.contract != CONFIG_NAMESPACE || proposal.function != FN_UPDATE {
        return Err(format!(
            "a `{}` `{}` proposal, not a `{CONFIG_NAMESPACE}` `{FN_UPDATE}`",
            proposal.contract, proposal.function
        ));
    }
    let [arg] = proposal.args.as_slice() else {
        return Err("an update takes exactly one argument, the definition".into());
    };
    let next = NetworkDefinition::from_bytes(arg).map_err(|e| e.to_string())?;
    let payload =
        ResponsePayload::decode(transaction.payload.as_slice()).map_err(|e| e.to_string())?;
    let [set] = payload.rwsets.as_slice() else {
        return Err("the payload writes more than the definition".into());
    };
    let written = match set.writes.as_slice() {
        [write] if write.key == NETWORK_KEY => &write.value,
        _ => return Err("the payload does not write the definition alone".into()),
    };
    let expected = update_payload(
        &tx::sha256(&signed.proposal),
        set.reads.first().and_then(|read| read.version),
        &next,
    );
    if payload != expected || *written != next.to_bytes() {
        return Err("the payload is not the update the proposal asks for".into());
    }
    Ok(next)
}

/// Whether an encoded `SignedTransaction` is a `_config` update that every peer will
/// find valid at its place, with `current` in force there (its key written at
/// `current_version`) and `msp` trusting what `current` says: the proposal's creator an
/// admin whose signature over the transaction verifies, a payload of the proposal, the
/// admins' signatures meeting the config policy, the read of the key at its version,
/// and [`check_update`]. The definition it puts in force. What an orderer that follows
/// the configuration (`OrdererConfig::follow_config`) applies: everything a peer's
/// validator checks of an update, the ids and time window aside, which the orderer
/// checks itself.
pub fn valid_update(
    current: &NetworkDefinition,
    current_version: Option<Version>,
    msp: &crate::identity::Msp,
    signed_transaction: &[u8],
    now_s: i64,
) -> Option<NetworkDefinition> {
    let (signed, transaction, proposal) = tx::decode_transaction(signed_transaction).ok()?;
    if proposal.contract != CONFIG_NAMESPACE || proposal.channel != current.channel {
        return None;
    }
    let signatures = msp.signatures();
    let creator = msp.verify(&proposal.creator, now_s).ok()?;
    creator.require_role(SIGNER_ROLES).ok()?;
    let creator_signs = crate::sig::SigCheck {
        key: creator.verifying_key().to_bytes(),
        message: tx::transaction_message(&tx::sha256(&signed.transaction)),
        signature: signed.signature,
    };
    if !signatures.verify_one(&creator_signs) {
        return None;
    }
    let proposal_hash = tx::sha256(&transaction.proposal.as_ref()?.proposal);
    let payload = ResponsePayload::decode(transaction.payload.as_slice()).ok()?;
    if payload.proposal_hash != proposal_hash {
        return None;
    }
    let message = tx::endorsement_message(&proposal_hash, &tx::sha256(&transaction.payload));
    if transaction.endorsements.len() > tx::ENDORSEMENTS_MAX {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let mut signers = Vec::new();
    for endorsement in &transaction.endorsements {
        let Ok(admin) = msp.verify(&endorsement.endorser, now_s) else {
            continue;
        };
        if !SIGNER_ROLES.contains(&admin.role) || !seen.insert(admin.fingerprint) {
            continue;
        }
        let check = crate::sig::SigCheck {
            key: admin.verifying_key().to_bytes(),
            message: message.clone(),
            signature: endorsement.signature.clone(),
        };
        if !signatures.verify_one(&check) {
            return None;
        }
        signers.push(crate::policy::Endorser::new(admin.org.clone(), admin.role));
    }
    if !update_policy(current).ok()?.is_satisfied_by(&signers) {
        return None;
    }
    let read = payload.rwsets.first()?.reads.first()?;
    if read.version != current_version {
        return None;
    }
    check_update(current, &payload.rwsets).ok()
}

/// Who must sign an update while `current` is in force: its `config_policy` over the
/// organisations' admins.
pub fn update_policy(current: &NetworkDefinition) -> Result<Policy, PolicyError> {
    Policy::parse(&current.config_policy, &current.org_names())
}

/// Checks an update's read/write sets at its place in the stream, `current` in force
/// there: it reads and writes [`NETWORK_KEY`] of `_config` only (the read's version is
/// checked as any read is), and the definition written parses, checks, keeps the channel
/// and has the next sequence. The definition it puts in force.
pub fn check_update(
    current: &NetworkDefinition,
    rwsets: &[NsRwSet],
) -> Result<NetworkDefinition, ValidationCode> {
    let [set] = rwsets else {
        return Err(ValidationCode::IllegalWriteset);
    };
    let only_the_key = set.namespace == CONFIG_NAMESPACE
        && set.range_reads.is_empty()
        && matches!(set.reads.as_slice(), [read] if read.key == NETWORK_KEY);
    let write = match set.writes.as_slice() {
        [write] if only_the_key && write.key == NETWORK_KEY && !write.is_delete => write,
        _ => return Err(ValidationCode::IllegalWriteset),
    };
    let next =
        NetworkDefinition::from_bytes(&write.value).map_err(|_| ValidationCode::BadPayload)?;
    if next.channel != current.channel || next.sequence != current.sequence + 1 {
        return Err(ValidationCode::BadPayload);
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::NetworkIdentities;

    fn genesis() -> NetworkDefinition {
        let ids = NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1)).unwrap();
        NetworkDefinition::of(&ids, "main")
    }

    fn next(current: &NetworkDefinition) -> NetworkDefinition {
        let mut next = current.clone();
        next.sequence += 1;
        next.orgs[1].revoked.push("ab".repeat(32));
        next
    }

    fn sets(current: Option<Version>, next: &NetworkDefinition) -> Vec<NsRwSet> {
        update_payload(&[0; 32], current, next).rwsets
    }

    #[test]
    fn an_update_is_the_next_definition_of_the_same_channel() {
        let genesis = genesis();
        let next = next(&genesis);
        assert_eq!(check_update(&genesis, &sets(None, &next)), Ok(next.clone()));
        let mut skipped = next.clone();
        skipped.sequence += 1;
        assert_eq!(
            check_update(&genesis, &sets(None, &skipped)),
            Err(ValidationCode::BadPayload)
        );
        let mut moved = next.clone();
        moved.channel = "other".into();
        assert_eq!(
            check_update(&genesis, &sets(None, &moved)),
            Err(ValidationCode::BadPayload)
        );
        let mut extra = sets(None, &next);
        extra[0].writes.push(KvWrite {
            key: b"other".to_vec(),
            value: Vec::new(),
            is_delete: false,
        });
        assert_eq!(
            check_update(&genesis, &extra),
            Err(ValidationCode::IllegalWriteset)
        );
        let mut garbage = sets(None, &next);
        garbage[0].writes[0].value = b"{}".to_vec();
        assert_eq!(
            check_update(&genesis, &garbage),
            Err(ValidationCode::BadPayload)
        );
    }

    #[test]
    fn the_update_policy_is_the_current_definitions() {
        let mut genesis = genesis();
        let policy = update_policy(&genesis).unwrap();
        let admin = |org: &str| crate::policy::Endorser::new(org, Role::Admin);
        assert!(!policy.is_satisfied_by(&[admin("Org1")]));
        assert!(policy.is_satisfied_by(&[admin("Org1"), admin("Org2")]));
        genesis.config_policy = "ANY admin".into();
        assert!(
            update_policy(&genesis)
                .unwrap()
                .is_satisfied_by(&[admin("Org2")])
        );
    }
}
