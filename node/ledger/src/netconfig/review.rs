//! What an admin reads before signing a configuration update: every field it changes
//! against the definition in force ([`changes`]), and who signed it, each signature
//! checked against the definition in force, never the proposed one
//! ([`check_signatures`]): a proposal cannot vouch for itself by adding the CA that
//! issued its own signers.
//!
//! Every text a proposer wrote (names, endpoints, policies, revocation entries) is shown
//! quoted, its control characters escaped, so that no value can draw lines of its own
//! on the admin's terminal.

use std::collections::BTreeSet;

use crate::identity::{NetworkDefinition, OrgDefinition, certificate_der};
use crate::policy::{Endorser, Policy};
use crate::proto::Transaction;
use crate::tx;

use super::{SIGNER_ROLES, update_policy};

/// `text` as shown: bare when it is plain (letters, digits and `.-_:/'`), else quoted
/// with every control character and quote escaped.
fn shown(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:/".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("{text:?}")
    }
}

/// A certificate in a definition as shown: its subject and the SHA-256 of its DER.
fn certificate(pem: &str) -> String {
    let Ok(der) = certificate_der(pem, "certificate") else {
        return format!("not a certificate ({} bytes of text)", pem.len());
    };
    let subject = x509_parser::parse_x509_certificate(&der)
        .map(|(_, cert)| cert.subject().to_string())
        .unwrap_or_else(|_| "an unreadable certificate".to_string());
    format!(
        "{} sha256 {}",
        shown(&subject),
        hex::encode(tx::sha256(&der))
    )
}

/// Every change `next` makes to `current`, one line each, in the order of the
/// definition's fields: channel, sequence, policies, organisations (each one's CA, TLS CA,
/// peers and revocations), orderers. A policy whose text is unchanged but whose meaning
/// moves with the organisations (`MAJORITY admin` when one joins) is listed too.
pub fn changes(current: &NetworkDefinition, next: &NetworkDefinition) -> Vec<String> {
    let mut lines = Vec::new();
    if current.channel != next.channel {
        lines.push(format!(
            "channel: {} -> {}",
            shown(&current.channel),
            shown(&next.channel)
        ));
    }
    if current.sequence != next.sequence {
        lines.push(format!(
            "sequence: {} -> {}",
            current.sequence, next.sequence
        ));
    }
    for (name, before, after) in [
        ("config_policy", &current.config_policy, &next.config_policy),
        (
            "lifecycle_policy",
            &current.lifecycle_policy,
            &next.lifecycle_policy,
        ),
    ] {
        lines.extend(policy_change(name, current, before, next, after));
    }
    orgs(current, next, &mut lines);
    orderers(current, next, &mut lines);
    lines
}

/// A policy's change: its text, or, the text the same, its meaning over new orgs.
fn policy_change(
    name: &str,
    current: &NetworkDefinition,
    before: &str,
    next: &NetworkDefinition,
    after: &str,
) -> Option<String> {
    if before != after {
        return Some(format!("{name}: {} -> {}", shown(before), shown(after)));
    }
    let meaning = |definition: &NetworkDefinition| {
        Policy::parse(before, &definition.org_names())
            .map(|policy| policy.to_string())
            .unwrap_or_else(|error| format!("unparsable ({error})"))
    };
    let orgs = |definition: &NetworkDefinition| {
        let mut names = definition.org_names();
        names.sort();
        names
    };
    if orgs(current) == orgs(next) {
        // The same organisations in another order: a policy means the same.
        return None;
    }
    let (was, now) = (meaning(current), meaning(next));
    (was != now).then(|| {
        format!(
            "{name}: {} now means {} (was {})",
            shown(before),
            shown(&now),
            shown(&was)
        )
    })
}

fn orgs(current: &NetworkDefinition, next: &NetworkDefinition, lines: &mut Vec<String>) {
    let (before, after) = (current.org_names(), next.org_names());
    for org in &next.orgs {
        match current.org(&org.name) {
            None => lines.push(format!(
                "org {} added: CA {}, TLS CA {}, peers [{}], revoked [{}]",
                shown(&org.name),
                certificate(&org.ca),
                certificate(&org.tls_ca),
                org.peers
                    .iter()
                    .map(|p| format!("{} at {}", shown(&p.name), shown(&p.endpoint)))
                    .collect::<Vec<_>>()
                    .join(", "),
                org.revoked
                    .iter()
                    .map(|r| shown(r))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Some(old) => org_changes(old, org, lines),
        }
    }
    for org in &current.orgs {
        if next.org(&org.name).is_none() {
            lines.push(format!("org {} removed", shown(&org.name)));
        }
    }
    let kept_before: Vec<&String> = before.iter().filter(|o| after.contains(o)).collect();
    let kept_after: Vec<&String> = after.iter().filter(|o| before.contains(o)).collect();
    if kept_before != kept_after {
        lines.push(format!(
            "organisations reordered: {} -> {}",
            list(&before),
            list(&after)
        ));
    }
}

fn list(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().map(|n| shown(n)).collect();
    format!("[{}]", shown.join(", "))
}

fn org_changes(old: &OrgDefinition, new: &OrgDefinition, lines: &mut Vec<String>) {
    let org = shown(&new.name);
    if old.ca != new.ca {
        lines.push(format!(
            "org {org} CA: {} -> {}",
            certificate(&old.ca),
            certificate(&new.ca)
        ));
    }
    if old.tls_ca != new.tls_ca {
        lines.push(format!(
            "org {org} TLS CA: {} -> {}",
            certificate(&old.tls_ca),
            certificate(&new.tls_ca)
        ));
    }
    for peer in &new.peers {
        match old.peers.iter().find(|p| p.name == peer.name) {
            None => lines.push(format!(
                "org {org} peer {} added at {}",
                shown(&peer.name),
                shown(&peer.endpoint)
            )),
            Some(was) if was.endpoint != peer.endpoint => lines.push(format!(
                "org {org} peer {} endpoint: {} -> {}",
                shown(&peer.name),
                shown(&was.endpoint),
                shown(&peer.endpoint)
            )),
            Some(_) => {}
        }
    }
    for peer in &old.peers {
        if !new.peers.iter().any(|p| p.name == peer.name) {
            lines.push(format!(
                "org {org} peer {} removed (was at {})",
                shown(&peer.name),
                shown(&peer.endpoint)
            ));
        }
    }
    let (was, now): (BTreeSet<&String>, BTreeSet<&String>) =
        (old.revoked.iter().collect(), new.revoked.iter().collect());
    for entry in now.difference(&was) {
        lines.push(format!("org {org} revokes {}", shown(entry)));
    }
    for entry in was.difference(&now) {
        lines.push(format!(
            "org {org} no longer revokes {} (reinstated)",
            shown(entry)
        ));
    }
}

fn orderers(current: &NetworkDefinition, next: &NetworkDefinition, lines: &mut Vec<String>) {
    let describe = |o: &crate::identity::OrdererNode| {
        format!(
            "org {}, raft id {}, at {}",
            shown(&o.org),
            o.raft_id,
            shown(&o.endpoint)
        )
    };
    for orderer in &next.orderers {
        let name = shown(&orderer.name);
        match current.orderers.iter().find(|o| o.name == orderer.name) {
            None => lines.push(format!("orderer {name} added: {}", describe(orderer))),
            Some(was) if was != orderer => lines.push(format!(
                "orderer {name}: {} -> {}",
                describe(was),
                describe(orderer)
            )),
            Some(_) => {}
        }
    }
    for orderer in &current.orderers {
        if !next.orderers.iter().any(|o| o.name == orderer.name) {
            lines.push(format!(
                "orderer {} removed (was {})",
                shown(&orderer.name),
                describe(orderer)
            ));
        }
    }
}

/// The signatures an update carries, each checked against the definition in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signatures {
    /// One line per signature: who, and whether it counts (and why not).
    pub lines: Vec<String>,
    /// The signers whose signatures count, `Org (name)`.
    pub counted: Vec<String>,
    /// Whether they meet the config policy in force; `None` when it cannot be
    /// evaluated (then no update is valid).
    pub meets_policy: Option<bool>,
    /// Signatures that would count but do not verify: any makes the whole update
    /// `BAD_ENDORSER_SIGNATURE`, as for any transaction.
    pub forged: usize,
}

/// Checks every signature `update` carries as the validator would, against `current`
/// (the definition in force) at `now_s`: a certificate it trusts and has not revoked and
/// an admin's counts, once; a signature that counts must verify.
pub fn check_signatures(
    update: &Transaction,
    current: &NetworkDefinition,
    now_s: i64,
) -> Signatures {
    let mut signatures = Signatures {
        lines: Vec::new(),
        counted: Vec::new(),
        meets_policy: None,
        forged: 0,
    };
    let msp = match current.msp() {
        Ok(msp) => msp,
        Err(error) => {
            signatures.lines.push(format!(
                "none can be checked: the definition in force: {error}"
            ));
            return signatures;
        }
    };
    let message = super::signing_message(update);
    let mut seen: Vec<[u8; 32]> = Vec::new();
    let mut endorsers = Vec::new();
    for endorsement in &update.endorsements {
        let identity = match msp.verify(&endorsement.endorser, now_s) {
            Ok(identity) => identity,
            Err(error) => {
                signatures.lines.push(format!(
                    "a certificate the definition in force does not accept: {error}"
                ));
                continue;
            }
        };
        let who = format!(
            "{} ({}, {})",
            shown(&identity.org),
            shown(&identity.name),
            identity.role
        );
        if !SIGNER_ROLES.contains(&identity.role) {
            signatures
                .lines
                .push(format!("{who}: not an admin: does not count"));
            continue;
        }
        if seen.contains(&identity.key) {
            signatures
                .lines
                .push(format!("{who}: signed again: counts once"));
            continue;
        }
        seen.push(identity.key);
        let verdict = identity
            .verify(&message, &endorsement.signature)
            .map_err(|e| {
                signatures.forged += 1;
                format!("DOES NOT VERIFY ({e}): the update is BAD_ENDORSER_SIGNATURE")
            });
        match verdict {
            Ok(()) => {
                signatures
                    .lines
                    .push(format!("{who}: signature verifies, counts"));
                signatures.counted.push(format!(
                    "{} ({})",
                    shown(&identity.org),
                    shown(&identity.name)
                ));
                endorsers.push(Endorser::new(identity.org.clone(), identity.role));
            }
            Err(why) => signatures.lines.push(format!("{who}: {why}")),
        }
    }
    signatures.meets_policy = update_policy(current)
        .ok()
        .map(|policy| policy.is_satisfied_by(&endorsers));
    signatures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{NetworkIdentities, OrdererNode, PeerNode};

    fn two_orgs() -> (NetworkIdentities, NetworkDefinition) {
        let ids = NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1)).unwrap();
        let definition = NetworkDefinition::of(&ids, "main");
        (ids, definition)
    }

    #[test]
    fn every_changed_field_is_a_line() {
        let (_, current) = two_orgs();
        let mut next = current.clone();
        assert_eq!(changes(&current, &next), Vec::<String>::new());
        next.sequence = 1;
        next.config_policy = "'Org1.admin'".into();
        next.lifecycle_policy = "'Org1.admin'".into();
        next.orgs[1].revoked.push("ab".repeat(32));
        next.orgs[0].peers.push(PeerNode {
            name: "peer0.Org1".into(),
            endpoint: "https://127.0.0.1:7051".into(),
        });
        next.orgs[1].tls_ca = next.orgs[0].tls_ca.clone();
        next.orderers.push(OrdererNode {
            name: "orderer0.Org1".into(),
            org: "Org1".into(),
            endpoint: "https://127.0.0.1:7050".into(),
            raft_id: 0,
            key: String::new(),
        });
        let lines = changes(&current, &next);
        let want = [
            "sequence: 0 -> 1",
            "config_policy: \"MAJORITY admin\" -> \"'Org1.admin'\"",
            "lifecycle_policy: \"MAJORITY admin\" -> \"'Org1.admin'\"",
            "org Org1 peer peer0.Org1 added at https://127.0.0.1:7051",
            "org Org2 TLS CA: ",
            &format!("org Org2 revokes {}", "ab".repeat(32)),
            "orderer orderer0.Org1 added: org Org1, raft id 0, at https://127.0.0.1:7050",
        ];
        assert_eq!(lines.len(), want.len(), "{lines:#?}");
        for (line, want) in lines.iter().zip(want) {
            assert!(line.starts_with(want), "{line} is not {want}");
        }
        // And back: what was added is removed.
        let back = changes(&next, &current);
        assert!(
            back.contains(
                &"org Org1 peer peer0.Org1 removed (was at https://127.0.0.1:7051)".to_string()
            ),
            "{back:#?}"
        );
        assert!(
            back.iter()
                .any(|l| l.starts_with("orderer orderer0.Org1 removed"))
        );
        assert!(back.iter().any(|l| l.ends_with("(reinstated)")));
    }

    #[test]
    fn organisations_joining_leaving_and_moving_are_shown() {
        let ids = NetworkIdentities::generate(&["Org1", "Org2", "Org3"], time::Duration::days(1))
            .unwrap();
        let three = NetworkDefinition::of(&ids, "main");
        let mut two = three.clone();
        two.orgs.pop();
        let lines = changes(&two, &three);
        assert!(
            lines[0].starts_with("config_policy: \"MAJORITY admin\" now means"),
            "{lines:#?}"
        );
        assert!(lines.iter().any(|l| l.starts_with("org Org3 added: CA ")));
        assert!(changes(&three, &two).contains(&"org Org3 removed".to_string()));
        let mut moved = three.clone();
        moved.orgs.swap(0, 1);
        assert_eq!(
            changes(&three, &moved),
            ["organisations reordered: [Org1, Org2, Org3] -> [Org2, Org1, Org3]"]
        );
    }

    #[test]
    fn text_a_proposer_wrote_cannot_draw_lines() {
        let (_, current) = two_orgs();
        let mut next = current.clone();
        next.lifecycle_policy = "MAJORITY admin\nconfig_policy: unchanged \u{1b}[2K".into();
        let lines = changes(&current, &next);
        assert_eq!(lines.len(), 1);
        assert!(
            !lines[0].contains('\n') && !lines[0].contains('\u{1b}'),
            "{lines:?}"
        );
    }

    #[test]
    fn signatures_are_checked_against_the_definition_in_force() {
        let (ids, current) = two_orgs();
        let mut next = current.clone();
        next.sequence = 1;
        // An update signed by both admins and by Org1's peer; and a signer of a CA the
        // update itself adds, which the definition in force does not trust.
        let admin = |org: usize| ids.orgs[org].signer(crate::identity::Role::Admin).unwrap();
        let (admin0, admin1) = (admin(0), admin(1));
        let proposal = tx::new_proposal(
            "main",
            super::super::CONFIG_NAMESPACE,
            super::super::FN_UPDATE,
            vec![next.to_bytes()],
            &admin0,
        );
        let signed = tx::sign_proposal(&admin0, &proposal);
        let mut update = super::super::update_transaction(signed, None, &next);
        let message = tx::endorsement_message(
            &tx::sha256(&update.proposal.as_ref().unwrap().proposal),
            &tx::sha256(&update.payload),
        );
        let sign = |signer: &crate::identity::Signer| crate::proto::Endorsement {
            endorser: signer.cert_der().to_vec(),
            signature: signer.sign(&message).to_vec(),
        };
        update.endorsements.push(sign(&admin0));
        let only_one = check_signatures(&update, &current, tx::now_seconds());
        assert_eq!(only_one.meets_policy, Some(false));
        let peer = ids.orgs[0].signer(crate::identity::Role::Peer).unwrap();
        update.endorsements.push(sign(&peer));
        let mut forged = sign(&admin1);
        forged.signature[0] ^= 1;
        update.endorsements.push(forged);
        update.endorsements.push(sign(&admin0));
        let stranger = NetworkIdentities::generate(&["Org9"], time::Duration::days(1)).unwrap();
        update.endorsements.push(sign(
            &stranger.orgs[0]
                .signer(crate::identity::Role::Admin)
                .unwrap(),
        ));
        let checked = check_signatures(&update, &current, tx::now_seconds());
        assert_eq!(checked.counted.len(), 1, "{checked:#?}");
        assert_eq!((checked.meets_policy, checked.forged), (Some(false), 1));
        assert!(checked.lines[1].contains("not an admin"), "{checked:#?}");
        assert!(checked.lines[2].contains("DOES NOT VERIFY"), "{checked:#?}");
        assert!(checked.lines[3].contains("counts once"), "{checked:#?}");
        assert!(checked.lines[4].contains("does not accept"), "{checked:#?}");
        // Org2's admin signs again, in place of the forged signature.
        update
            .endorsements
            .retain(|e| e.endorser != admin1.cert_der());
        update.endorsements.push(sign(&admin1));
        let both = check_signatures(&update, &current, tx::now_seconds());
        assert_eq!(
            (both.meets_policy, both.forged),
            (Some(true), 0),
            "{both:#?}"
        );
        assert_eq!(both.counted.len(), 2);
    }
}
