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

use crate::identity::{NetworkDefinition, OrderingProtocol, Role};
use crate::ids::ValidationCode;
use crate::policy::{Endorser, Policy, PolicyError, PolicyErrorKind, RoleMatch};
use crate::proto::{Proposal, ResponsePayload, SignedProposal, Transaction};
use crate::tx::{self, Hash};

mod review;
pub use review::{Signatures, changes, check_signatures};

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

/// What every admin signing `update` signs: the endorsement message over its proposal and
/// its payload.
pub fn signing_message(update: &Transaction) -> Vec<u8> {
    let proposal = update
        .proposal
        .as_ref()
        .map(|p| p.proposal.as_slice())
        .unwrap_or_default();
    tx::endorsement_message(&tx::sha256(proposal), &tx::sha256(&update.payload))
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
        if !SIGNER_ROLES.contains(&admin.role) || !seen.insert(admin.key) {
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

/// Why an update is refused. Every refusal but the shape of its read/write sets is
/// [`ValidationCode::BadConfigUpdate`]; the message is the reason the validator logs and
/// `runnel config sign` shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigUpdateError {
    /// It reads or writes more than [`NETWORK_KEY`] of `_config`, or deletes it.
    #[error("an update reads and writes the definition's key of `_config`, and nothing else")]
    IllegalWriteset,
    /// The written definition does not decode, or fails [`NetworkDefinition::check`].
    #[error("the new definition does not check: {0}")]
    Malformed(String),
    /// It moves the network to another channel.
    #[error("the channel cannot change (`{current}` to `{next}`)")]
    Channel {
        /// The channel in force.
        current: String,
        /// The channel the update names.
        next: String,
    },
    /// Its sequence is not the next one.
    #[error("the new definition's sequence is {found}; the next one is {expected}")]
    Sequence {
        /// The definition in force's sequence plus one.
        expected: u64,
        /// What the update says.
        found: u64,
    },
    /// A policy does not parse over the new definition's organisations.
    #[error("its {which} `{text}` does not parse: {error}")]
    PolicyParse {
        /// `lifecycle_policy` or `config_policy`.
        which: &'static str,
        /// The policy's text (cut to [`REASON_TEXT_CHARS_MAX`]).
        text: String,
        /// The parser's message.
        error: String,
    },
    /// A policy still names an organisation the update removes.
    #[error("it removes organisation `{org}`, which its {which} still names")]
    RemovesNamedOrg {
        /// `lifecycle_policy` or `config_policy`.
        which: &'static str,
        /// The organisation removed.
        org: String,
    },
    /// A policy names a role whose signatures never count for it.
    #[error(
        "its {which} names {principal}: only organisations' admins sign configuration \
         updates and approve contract definitions, so name each as 'Org.admin'"
    )]
    PolicyRole {
        /// `lifecycle_policy` or `config_policy`.
        which: &'static str,
        /// The principal, e.g. `'Org1.peer'`.
        principal: String,
    },
    /// No set of the new definition's admins, one per organisation, meets a policy.
    #[error(
        "its {which} `{policy}` can never be met: one admin of every organisation together \
         does not satisfy it"
    )]
    Unsatisfiable {
        /// `lifecycle_policy` or `config_policy`.
        which: &'static str,
        /// The policy, canonical.
        policy: String,
    },
    /// It turns a Raft cluster into solo orderers or the other way round.
    #[error(
        "the ordering service cannot change kind by an update: the definition in force \
         names {current}, the update {next}"
    )]
    OrderingKind {
        /// What the definition in force names.
        current: &'static str,
        /// What the update names.
        next: &'static str,
    },
    /// The orderers the update keeps are not a quorum of its cluster.
    #[error(
        "the new ordering cluster {next:?} keeps {kept:?} of the current one: the orderers \
         kept must be more than half of the new cluster, so that the change commits and \
         the new cluster orders without waiting for an orderer that is not running yet"
    )]
    OrdererQuorum {
        /// The Raft ids of the new cluster.
        next: Vec<u64>,
        /// Those of them the current cluster names too (same id, name and organisation).
        kept: Vec<u64>,
    },
    /// The update changes the orderers of a Byzantine-fault-tolerant cluster, whose
    /// consensus keeps the members it started with.
    #[error(
        "the update changes the orderers of the Byzantine-fault-tolerant cluster; its \
         consensus keeps the members the genesis definition names, so they cannot change \
         by an update yet"
    )]
    BftMembership,
}

impl ConfigUpdateError {
    /// The code a transaction carrying the update is given.
    pub fn code(&self) -> ValidationCode {
        match self {
            ConfigUpdateError::IllegalWriteset => ValidationCode::IllegalWriteset,
            _ => ValidationCode::BadConfigUpdate,
        }
    }
}

/// Longest piece of a policy's text a refusal quotes, in characters.
pub const REASON_TEXT_CHARS_MAX: usize = 200;

/// The policies a definition sets, by field name: what each governs is signed by admins.
fn policies(definition: &NetworkDefinition) -> [(&'static str, &str); 2] {
    [
        ("lifecycle_policy", definition.lifecycle_policy.as_str()),
        ("config_policy", definition.config_policy.as_str()),
    ]
}

/// Checks `definition`'s own policies: each parses over its organisations, names only
/// admins (the only signers `_config` updates and lifecycle approvals count), and is
/// met by one admin of every organisation. One admin per organisation is what the
/// lifecycle counts (an organisation approves once), and what every organisation is
/// sure to hold; so whatever the definition says, its policies can be evaluated and met.
pub fn check_policies(definition: &NetworkDefinition) -> Result<(), ConfigUpdateError> {
    let orgs = definition.org_names();
    let admins: Vec<Endorser> = orgs
        .iter()
        .map(|org| Endorser::new(org.clone(), Role::Admin))
        .collect();
    for (which, text) in policies(definition) {
        let policy =
            Policy::parse(text, &orgs).map_err(|error| ConfigUpdateError::PolicyParse {
                which,
                text: text.chars().take(REASON_TEXT_CHARS_MAX).collect(),
                error: error.to_string(),
            })?;
        if let Some(principal) = policy
            .principals()
            .into_iter()
            .find(|p| p.role != RoleMatch::Role(Role::Admin))
        {
            return Err(ConfigUpdateError::PolicyRole {
                which,
                principal: principal.to_string(),
            });
        }
        if !policy.is_satisfied_by(&admins) {
            return Err(ConfigUpdateError::Unsatisfiable {
                which,
                policy: policy.to_string(),
            });
        }
    }
    Ok(())
}

/// Checks that `next` may follow `current`: the same channel, the next sequence, its
/// policies sound ([`check_policies`]; a policy naming an organisation the update
/// removes is said so), and an ordering cluster that keeps its quorum: when `current`
/// names a Raft cluster, `next` names one too, and the orderers both name (same Raft id,
/// name and organisation) are more than half of `next`'s. The change then commits with
/// orderers already running (Raft moves through a joint membership that needs a
/// majority of the old members and of the new), and the new cluster orders without
/// waiting for one that may never start. A solo network stays solo.
pub fn check_next(
    current: &NetworkDefinition,
    next: &NetworkDefinition,
) -> Result<(), ConfigUpdateError> {
    if next.channel != current.channel {
        return Err(ConfigUpdateError::Channel {
            current: current.channel.clone(),
            next: next.channel.clone(),
        });
    }
    if next.sequence != current.sequence + 1 {
        return Err(ConfigUpdateError::Sequence {
            expected: current.sequence + 1,
            found: next.sequence,
        });
    }
    next.check()
        .map_err(|e| ConfigUpdateError::Malformed(e.to_string()))?;
    for (which, text) in policies(next) {
        if let Err(error) = Policy::parse(text, &next.org_names())
            && let PolicyErrorKind::UnknownOrg(org) = error.kind()
            && current.org(org).is_some()
        {
            return Err(ConfigUpdateError::RemovesNamedOrg {
                which,
                org: org.clone(),
            });
        }
    }
    check_policies(next)?;
    check_orderers(current, next)
}

fn check_orderers(
    current: &NetworkDefinition,
    next: &NetworkDefinition,
) -> Result<(), ConfigUpdateError> {
    let kind = |definition: &NetworkDefinition| match (
        definition.cluster().is_empty(),
        definition.ordering,
    ) {
        (true, _) => "no ordering cluster",
        (false, OrderingProtocol::Raft) => "a Raft cluster",
        (false, OrderingProtocol::Bft) => "a Byzantine-fault-tolerant cluster",
    };
    let (now, then) = (current.cluster(), next.cluster());
    if now.is_empty() != then.is_empty() || current.ordering != next.ordering {
        return Err(ConfigUpdateError::OrderingKind {
            current: kind(current),
            next: kind(next),
        });
    }
    let kept: Vec<u64> = then
        .iter()
        .filter(|(id, orderer)| {
            now.iter().any(|(old_id, old)| {
                old_id == id && old.name == orderer.name && old.org == orderer.org
            })
        })
        .map(|(id, _)| *id)
        .collect();
    if next.ordering == OrderingProtocol::Bft && current.orderers != next.orderers {
        return Err(ConfigUpdateError::BftMembership);
    }
    // A Raft cluster keeps a majority of its new voters; a Byzantine-fault-tolerant one a
    // quorum of its new members (it changes at most f of them at once).
    let enough = match next.ordering {
        OrderingProtocol::Raft => kept.len() * 2 > then.len(),
        OrderingProtocol::Bft => kept.len() >= next.seal_quorum(),
    };
    if !then.is_empty() && !enough {
        return Err(ConfigUpdateError::OrdererQuorum {
            next: then.iter().map(|(id, _)| *id).collect(),
            kept,
        });
    }
    Ok(())
}

/// Checks an update's read/write sets at its place in the stream, `current` in force
/// there: it reads and writes [`NETWORK_KEY`] of `_config` only (the read's version is
/// checked as any read is), and the definition written decodes, checks and may follow
/// `current` ([`check_next`]). The definition it puts in force; why not, else
/// ([`ConfigUpdateError::code`] is the transaction's code).
pub fn check_update(
    current: &NetworkDefinition,
    rwsets: &[NsRwSet],
) -> Result<NetworkDefinition, ConfigUpdateError> {
    let [set] = rwsets else {
        return Err(ConfigUpdateError::IllegalWriteset);
    };
    let only_the_key = set.namespace == CONFIG_NAMESPACE
        && set.range_reads.is_empty()
        && matches!(set.reads.as_slice(), [read] if read.key == NETWORK_KEY);
    let write = match set.writes.as_slice() {
        [write] if only_the_key && write.key == NETWORK_KEY && !write.is_delete => write,
        _ => return Err(ConfigUpdateError::IllegalWriteset),
    };
    let next = NetworkDefinition::from_bytes(&write.value)
        .map_err(|e| ConfigUpdateError::Malformed(e.to_string()))?;
    check_next(current, &next)?;
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
        next.orgs[1]
            .revoked
            .push(crate::identity::revocation(&[0xab; 32]));
        next
    }

    fn sets(current: Option<Version>, next: &NetworkDefinition) -> Vec<NsRwSet> {
        update_payload(&[0; 32], current, next).rwsets
    }

    /// The code `check_update` gives `next` after `current`.
    fn code(current: &NetworkDefinition, next: &NetworkDefinition) -> Result<(), ValidationCode> {
        check_update(current, &sets(None, next))
            .map(|_| ())
            .map_err(|e| e.code())
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
            Err(ConfigUpdateError::Sequence {
                expected: 1,
                found: 2
            })
        );
        let mut moved = next.clone();
        moved.channel = "other".into();
        assert_eq!(code(&genesis, &moved), Err(ValidationCode::BadConfigUpdate));
        let mut extra = sets(None, &next);
        extra[0].writes.push(KvWrite {
            key: b"other".to_vec(),
            value: Vec::new(),
            is_delete: false,
        });
        assert_eq!(
            check_update(&genesis, &extra).map_err(|e| e.code()),
            Err(ValidationCode::IllegalWriteset)
        );
        let mut garbage = sets(None, &next);
        garbage[0].writes[0].value = b"{}".to_vec();
        let refused = check_update(&genesis, &garbage).unwrap_err();
        assert!(
            matches!(refused, ConfigUpdateError::Malformed(_)),
            "{refused}"
        );
        assert_eq!(refused.code(), ValidationCode::BadConfigUpdate);
    }

    #[test]
    fn a_policy_must_parse_over_the_new_organisations() {
        let genesis = genesis();
        for lifecycle in [true, false] {
            for text in ["'Org9.admin'", "AND('Org1.admin'", "", "MAJORITY admins"] {
                let mut bad = next(&genesis);
                if lifecycle {
                    bad.lifecycle_policy = text.to_string();
                } else {
                    bad.config_policy = text.to_string();
                }
                let refused = check_update(&genesis, &sets(None, &bad)).unwrap_err();
                assert!(
                    matches!(refused, ConfigUpdateError::PolicyParse { .. }),
                    "{text}: {refused}"
                );
                assert_eq!(refused.code(), ValidationCode::BadConfigUpdate);
            }
        }
    }

    #[test]
    fn a_policy_names_admins_only_and_can_be_met() {
        let genesis = genesis();
        let with = |lifecycle: &str, config: &str| {
            let mut next = next(&genesis);
            next.lifecycle_policy = lifecycle.into();
            next.config_policy = config.into();
            check_update(&genesis, &sets(None, &next)).map(|_| ())
        };
        for role in ["peer", "client", "orderer", "member"] {
            let principal = format!("'Org1.{role}'");
            let refused = with(&principal, "MAJORITY admin").unwrap_err();
            assert_eq!(
                refused,
                ConfigUpdateError::PolicyRole {
                    which: "lifecycle_policy",
                    principal: principal.clone()
                }
            );
            assert!(matches!(
                with("MAJORITY admin", &format!("OR('Org2.admin', {principal})")),
                Err(ConfigUpdateError::PolicyRole {
                    which: "config_policy",
                    ..
                })
            ));
        }
        assert!(matches!(
            with("MAJORITY", "MAJORITY admin"),
            Err(ConfigUpdateError::PolicyRole { .. })
        ));
        // One admin of each organisation must be able to meet it: an organisation
        // approves a definition once.
        let refused = with("AND('Org1.admin', 'Org1.admin')", "MAJORITY admin").unwrap_err();
        assert!(
            matches!(refused, ConfigUpdateError::Unsatisfiable { .. }),
            "{refused}"
        );
        assert_eq!(refused.code(), ValidationCode::BadConfigUpdate);
        with(
            "AND('Org1.admin', 'Org2.admin')",
            "OutOf(1, 'Org2.admin', 'Org1.admin')",
        )
        .unwrap();
        with("ANY admin", "'Org1.admin'").unwrap();
    }

    #[test]
    fn removing_an_organisation_a_policy_names_is_refused() {
        let ids = NetworkIdentities::generate(&["Org1", "Org2", "Org3"], time::Duration::days(1))
            .unwrap();
        let mut current = NetworkDefinition::of(&ids, "main");
        current.lifecycle_policy = "AND('Org1.admin', 'Org3.admin')".into();
        let mut without = current.clone();
        without.sequence = 1;
        without.orgs.pop();
        assert_eq!(
            check_next(&current, &without),
            Err(ConfigUpdateError::RemovesNamedOrg {
                which: "lifecycle_policy",
                org: "Org3".into()
            })
        );
        // Shorthands expand over the organisations that remain: removing one is fine
        // when no policy names it.
        without.lifecycle_policy = "MAJORITY admin".into();
        check_next(&current, &without).unwrap();
    }

    fn orderer(id: u64) -> crate::identity::OrdererNode {
        crate::identity::OrdererNode {
            name: format!("orderer{id}.Org1"),
            org: "Org1".into(),
            endpoint: format!("https://127.0.0.1:{}", 7050 + id),
            raft_id: id,
            key: hex::encode([id as u8; 32]),
        }
    }

    #[test]
    fn the_orderers_kept_are_a_quorum_of_the_new_cluster() {
        let mut current = genesis();
        current.orderers = (1..=3).map(orderer).collect();
        let cluster = |ids: &[u64]| {
            let mut next = current.clone();
            next.sequence = 1;
            next.orderers = ids.iter().map(|id| orderer(*id)).collect();
            check_next(&current, &next)
        };
        // Add one or two, remove one or two, replace one by one: allowed.
        for ids in [
            &[1, 2, 3, 4][..],
            &[1, 2, 3, 4, 5],
            &[1, 2],
            &[1],
            &[1, 2, 4],
        ] {
            cluster(ids).unwrap_or_else(|e| panic!("{ids:?}: {e}"));
        }
        // The new cluster's quorum would need orderers not running yet.
        for ids in [&[1, 2, 3, 4, 5, 6][..], &[1, 4], &[4, 5, 6], &[1, 2, 4, 5]] {
            assert!(
                matches!(cluster(ids), Err(ConfigUpdateError::OrdererQuorum { .. })),
                "{ids:?}"
            );
        }
        // An orderer is kept only as the same node: a Raft id given to another name is new.
        let mut renamed = current.clone();
        renamed.sequence = 1;
        renamed.orderers[0].name = "intruder.Org1".into();
        renamed.orderers[1].org = "Org2".into();
        renamed.orderers[1].name = "orderer2.Org2".into();
        assert!(matches!(
            check_next(&current, &renamed),
            Err(ConfigUpdateError::OrdererQuorum { .. })
        ));
        // A cluster stays a cluster.
        let mut solo = current.clone();
        solo.sequence = 1;
        solo.orderers = vec![orderer(0)];
        let refused = check_next(&current, &solo).unwrap_err();
        assert!(matches!(refused, ConfigUpdateError::OrderingKind { .. }));
        assert_eq!(refused.code(), ValidationCode::BadConfigUpdate);
        solo.orderers.clear();
        assert!(check_next(&current, &solo).is_err());
    }

    #[test]
    fn a_byzantine_fault_tolerant_cluster_keeps_its_members_and_its_protocol() {
        let mut current = genesis();
        current.orderers = (1..=4).map(orderer).collect();
        current.ordering = OrderingProtocol::Bft;
        let cluster = |ids: &[u64]| {
            let mut next = current.clone();
            next.sequence = 1;
            next.orderers = ids.iter().map(|id| orderer(*id)).collect();
            check_next(&current, &next)
        };
        // The same members: an update of something else goes through.
        cluster(&[1, 2, 3, 4]).unwrap();
        // Members added, replaced or removed: not yet (the engine keeps its members).
        for ids in [
            &[1, 2, 3, 4, 5][..],
            &[1, 2, 3, 5],
            &[1, 2, 5, 6],
            &[1, 2, 3],
        ] {
            assert!(cluster(ids).is_err(), "{ids:?}");
        }
        let mut moved = current.clone();
        moved.sequence = 1;
        moved.orderers[0].endpoint = "https://127.0.0.1:9999".into();
        assert!(matches!(
            check_next(&current, &moved),
            Err(ConfigUpdateError::BftMembership)
        ));
        // Raft to BFT and back are refused: the protocol is the network's for good.
        let mut raft = current.clone();
        raft.sequence = 1;
        raft.ordering = OrderingProtocol::Raft;
        let refused = check_next(&current, &raft).unwrap_err();
        assert!(
            matches!(refused, ConfigUpdateError::OrderingKind { .. }),
            "{refused}"
        );
        let mut back = current.clone();
        back.sequence = 2;
        assert!(matches!(
            check_next(&raft, &back),
            Err(ConfigUpdateError::OrderingKind { .. })
        ));
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

    mod property {
        use std::sync::OnceLock;

        use proptest::prelude::*;
        use proptest::test_runner::FileFailurePersistence;

        use super::*;
        use crate::policy::Endorser;

        /// A network of three organisations, made once.
        fn three() -> &'static NetworkDefinition {
            static THREE: OnceLock<NetworkDefinition> = OnceLock::new();
            THREE.get_or_init(|| {
                let ids =
                    NetworkIdentities::generate(&["Org1", "Org2", "Org3"], time::Duration::days(1))
                        .unwrap();
                NetworkDefinition::of(&ids, "main")
            })
        }

        /// Policy texts over the network's organisations and one it does not have, every
        /// role, shorthands, and gates with thresholds in and out of range.
        fn policy_text() -> impl Strategy<Value = String> {
            let principal = (
                prop::sample::select(vec!["Org1", "Org2", "Org3", "Org9"]),
                prop::sample::select(vec!["admin", "peer", "member", "client"]),
            )
                .prop_map(|(org, role)| format!("'{org}.{role}'"));
            let leaf = prop_oneof![
                4 => principal,
                1 => Just("MAJORITY admin".to_string()),
                1 => Just("ANY admin".to_string()),
                1 => Just("MAJORITY".to_string()),
                1 => Just(String::new()),
            ];
            leaf.prop_recursive(3, 16, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4)
                        .prop_map(|of| format!("AND({})", of.join(", "))),
                    prop::collection::vec(inner.clone(), 0..4)
                        .prop_map(|of| format!("OR({})", of.join(", "))),
                    (0usize..5, prop::collection::vec(inner, 1..4))
                        .prop_map(|(n, of)| format!("OutOf({n}, {})", of.join(", "))),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                cases: 512,
                failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
                ..ProptestConfig::default()
            })]

            /// Any definition the update check accepts, the validator can evaluate from
            /// then on: both policies parse over its organisations and its admins can
            /// meet them, and its trust applies to the MSP; whatever the definition in
            /// force was (its own policies possibly unusable).
            #[test]
            fn what_the_update_check_accepts_the_validator_can_evaluate(
                in_force_lifecycle in policy_text(),
                lifecycle in policy_text(),
                config in policy_text(),
                removed in prop::option::of(0usize..3),
            ) {
                let mut current = three().clone();
                current.lifecycle_policy = in_force_lifecycle;
                let mut next = current.clone();
                next.sequence = 1;
                next.lifecycle_policy = lifecycle;
                next.config_policy = config;
                if let Some(at) = removed {
                    next.orgs.remove(at);
                }
                match check_update(&current, &sets(None, &next)) {
                    Ok(accepted) => {
                        let orgs = accepted.org_names();
                        let admins: Vec<Endorser> = orgs
                            .iter()
                            .map(|org| Endorser::new(org.clone(), Role::Admin))
                            .collect();
                        let config = update_policy(&accepted);
                        prop_assert!(config.is_ok(), "{:?}", config.err());
                        prop_assert!(config.unwrap().is_satisfied_by(&admins));
                        let approvals = Policy::parse(&accepted.lifecycle_policy, &orgs);
                        prop_assert!(approvals.is_ok(), "{:?}", approvals.err());
                        prop_assert!(approvals.unwrap().is_satisfied_by(&admins));
                        let msp = current.msp().unwrap();
                        prop_assert!(accepted.apply_to(&msp).is_ok());
                        prop_assert_eq!(msp.orgs(), orgs);
                    }
                    Err(refused) => {
                        prop_assert_eq!(refused.code(), ValidationCode::BadConfigUpdate);
                        prop_assert!(!refused.to_string().is_empty());
                    }
                }
            }
        }

        #[test]
        fn the_generator_reaches_both_outcomes() {
            // Not vacuous: the texts above give accepted updates as well as refused ones.
            let current = three();
            let mut next = current.clone();
            next.sequence = 1;
            next.lifecycle_policy = "OR('Org1.admin', 'Org2.admin')".into();
            assert!(check_update(current, &sets(None, &next)).is_ok());
            next.lifecycle_policy = "OR('Org1.admin', 'Org9.admin')".into();
            assert!(check_update(current, &sets(None, &next)).is_err());
        }
    }
}
