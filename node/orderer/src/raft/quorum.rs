//! Who holds the ordering cluster's quorum. Raft tolerates crashes, not lies: whoever
//! runs a majority of the voters decides alone what is ordered, what is left out and in
//! what order. A definition in which one organisation runs a majority lets that
//! organisation order, censor and keep the cluster going on its own; this module says
//! when that is so, and how many orderers would avoid it. It never changes a definition.

use std::collections::BTreeMap;

use runnel_ledger::identity::NetworkDefinition;

/// The voters a Raft decision needs out of `voters`: a majority.
pub fn quorum(voters: usize) -> usize {
    voters / 2 + 1
}

/// An organisation that runs a quorum of the ordering cluster by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumHolder {
    /// The organisation.
    pub org: String,
    /// How many of the cluster's orderers it runs.
    pub held: usize,
    /// The cluster's orderers (its voters).
    pub voters: usize,
    /// How many votes a decision needs.
    pub quorum: usize,
    /// The smallest number of orderers, more than today's, that the network's
    /// organisations could share so that none runs a quorum (given out in turn, as
    /// `runnel init` does); `None` when no count can (one organisation).
    pub avoided_at: Option<usize>,
}

impl std::fmt::Display for QuorumHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs {} of the {} orderers of the Raft cluster, a quorum ({} needed): it can \
             order, leave out and reorder transactions alone, and keep the cluster going \
             without any other organisation",
            self.org, self.held, self.voters, self.quorum
        )?;
        match self.avoided_at {
            Some(count) => write!(
                f,
                "; {count} orderers given out in turn among the organisations would avoid it"
            ),
            None => write!(f, "; with one organisation no number of orderers avoids it"),
        }
    }
}

/// The most orderers that organisations given out in turn (`index % orgs`) leave to one
/// organisation: the fewest any split can.
fn most_held(orderers: usize, orgs: usize) -> usize {
    orderers.div_ceil(orgs.max(1))
}

/// The smallest count above `orderers` at which `orgs` organisations, given orderers in
/// turn, leave none of them a quorum; `None` when none does (one organisation).
pub fn count_avoiding_a_holder(orgs: usize, orderers: usize) -> Option<usize> {
    if orgs < 2 {
        return None;
    }
    // Two organisations: any even count; more: any count of at least two. So the search
    // ends within two steps.
    (orderers + 1..=orderers + 2).find(|n| most_held(*n, orgs) < quorum(*n))
}

/// The organisation, if any, that runs a quorum of the Raft cluster `definition` names
/// (none for a solo orderer, whose organisation orders alone by design).
pub fn quorum_holder(definition: &NetworkDefinition) -> Option<QuorumHolder> {
    let cluster = definition.cluster();
    if cluster.is_empty() {
        return None;
    }
    let mut held: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, orderer) in &cluster {
        *held.entry(orderer.org.as_str()).or_default() += 1;
    }
    let voters = cluster.len();
    let quorum = quorum(voters);
    let (org, count) = held
        .into_iter()
        .max_by_key(|(org, count)| (*count, std::cmp::Reverse(*org)))?;
    (count >= quorum).then(|| QuorumHolder {
        org: org.to_string(),
        held: count,
        voters,
        quorum,
        avoided_at: count_avoiding_a_holder(definition.orgs.len(), voters),
    })
}

/// Says on stderr when `definition` lets one organisation run a quorum of the Raft
/// cluster (order, censor and keep the cluster going alone), and what count of orderers
/// would avoid it. Nothing for a solo orderer, or a cluster no organisation holds.
pub fn warn_of_a_holder(definition: &NetworkDefinition) {
    if let Some(holder) = quorum_holder(definition) {
        eprintln!("warning: {holder} (docs/security.md, \"The ordering cluster\")");
        tracing::warn!(%holder, "one organisation holds the ordering cluster's quorum");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::identity::{NetworkIdentities, OrdererNode};

    fn definition(orgs: &[&str], orderers: &[&str]) -> NetworkDefinition {
        let ids = NetworkIdentities::generate(orgs, time::Duration::days(1)).unwrap();
        let mut definition = NetworkDefinition::of(&ids, "main");
        definition.orderers = orderers
            .iter()
            .enumerate()
            .map(|(i, org)| OrdererNode {
                name: format!("orderer{i}.{org}"),
                org: org.to_string(),
                endpoint: format!("https://127.0.0.1:{}", 7050 + i),
                raft_id: if orderers.len() > 1 { i as u64 + 1 } else { 0 },
                key: String::new(),
            })
            .collect();
        definition
    }

    #[test]
    fn an_organisation_running_a_majority_of_the_voters_holds_the_quorum() {
        let two_of_three = definition(&["Org1", "Org2"], &["Org1", "Org2", "Org1"]);
        let holder = quorum_holder(&two_of_three).unwrap();
        assert_eq!(
            (
                holder.org.as_str(),
                holder.held,
                holder.voters,
                holder.quorum
            ),
            ("Org1", 2, 3, 2)
        );
        assert_eq!(holder.avoided_at, Some(4));
        assert!(holder.to_string().contains("4 orderers"), "{holder}");
        // One organisation: nothing avoids it.
        let alone = definition(&["Org1"], &["Org1", "Org1", "Org1"]);
        assert_eq!(quorum_holder(&alone).unwrap().avoided_at, None);
    }

    #[test]
    fn shares_below_a_quorum_hold_nothing_and_a_solo_orderer_is_not_a_cluster() {
        for orderers in [
            &["Org1", "Org2", "Org3"][..],
            &["Org1", "Org2", "Org1", "Org2"],
            &["Org1", "Org2"],
            &["Org1", "Org2", "Org3", "Org1", "Org2"],
        ] {
            let orgs: Vec<&str> = {
                let mut orgs = orderers.to_vec();
                orgs.sort_unstable();
                orgs.dedup();
                orgs
            };
            assert_eq!(
                quorum_holder(&definition(&orgs, orderers)),
                None,
                "{orderers:?}"
            );
        }
        assert_eq!(
            quorum_holder(&definition(&["Org1", "Org2"], &["Org1"])),
            None
        );
    }

    #[test]
    fn the_count_that_avoids_a_holder_is_the_next_one_any_split_allows() {
        assert_eq!(count_avoiding_a_holder(2, 3), Some(4));
        assert_eq!(count_avoiding_a_holder(2, 5), Some(6));
        assert_eq!(count_avoiding_a_holder(3, 1), Some(2));
        assert_eq!(count_avoiding_a_holder(1, 3), None);
        for orgs in 2..6 {
            for orderers in 1..12 {
                let n = count_avoiding_a_holder(orgs, orderers).unwrap();
                assert!(
                    n > orderers && most_held(n, orgs) < quorum(n),
                    "{orgs} {orderers}"
                );
            }
        }
    }
}
