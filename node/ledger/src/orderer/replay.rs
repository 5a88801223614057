//! The transaction ids an orderer ordered recently, so that a replay of public
//! transaction bytes, or the same transaction submitted twice at once, is refused
//! instead of being stored again by the orderer and every peer.
//!
//! Admission refuses a proposal whose timestamp `p` lies more than the window `W` from
//! the orderer's clock, so a copy of it can be admitted only until `p + W`: its id is kept
//! that long and no longer, by its first 128 bits (no one can find another transaction
//! whose id shares them), in the order of the proposals' timestamps. Memory is bounded by
//! a count: past it, the id with the oldest proposal goes early, and the memory's *floor*
//! rises to that proposal's timestamp. A transaction whose proposal is dated at or before
//! the floor may be a replay of a forgotten id, so it is refused
//! ([`Seen::BeyondMemory`]): its client signs a new proposal. The floor only ever passes
//! the timestamps of proposals already ordered, so a replay is never ordered twice,
//! whatever the load.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use crate::ids::TxId;

/// What the memory says of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not ordered within the window: it is remembered now.
    New,
    /// Ordered already: a replay.
    Replay,
    /// Its proposal is dated at or before `floor_ms`, where ids have been forgotten for
    /// want of room: it cannot be told from a replay.
    BeyondMemory {
        /// The timestamp of the latest proposal forgotten early.
        floor_ms: u64,
    },
}

/// Recently ordered ids, in the order of their proposals' timestamps.
#[derive(Debug)]
pub struct RecentIds {
    ids: HashSet<u128>,
    /// `(proposal timestamp, Unix ms; id)`.
    by_proposal: BTreeSet<(u64, u128)>,
    window_ms: u64,
    max: usize,
    /// Proposals dated at or before this may be of forgotten ids.
    floor_ms: Option<u64>,
    /// Ids forgotten before their time because the count was reached.
    forgotten_early: u64,
}

fn key(tx_id: &TxId) -> u128 {
    let mut first = [0u8; 16];
    first.copy_from_slice(&tx_id.0[..16]);
    u128::from_be_bytes(first)
}

impl RecentIds {
    /// Ids of transactions admitted within `window` of their proposal's timestamp, at
    /// most `max` of them; none at all for 0, which lets every replay through (for tests
    /// of what peers make of replays; runnel.toml takes 1 at least).
    pub fn new(window: Duration, max: usize) -> RecentIds {
        RecentIds {
            ids: HashSet::new(),
            by_proposal: BTreeSet::new(),
            window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX / 2),
            max,
            floor_ms: None,
            forgotten_early: 0,
        }
    }

    /// Remembers `tx_id`, whose proposal is dated `proposal_ms`, at `now_ms`; anything but
    /// [`Seen::New`] changes nothing.
    pub fn insert(&mut self, tx_id: &TxId, proposal_ms: u64, now_ms: u64) -> Seen {
        let seen = self.check(tx_id, proposal_ms, now_ms);
        if seen != Seen::New || self.max == 0 {
            return seen;
        }
        let key = key(tx_id);
        self.ids.insert(key);
        self.by_proposal.insert((proposal_ms, key));
        while self.by_proposal.len() > self.max {
            let Some((dated_ms, forgotten)) = self.by_proposal.pop_first() else {
                break;
            };
            self.ids.remove(&forgotten);
            self.floor_ms = Some(self.floor_ms.map_or(dated_ms, |floor| floor.max(dated_ms)));
            if self.forgotten_early.is_multiple_of(1 << 20) {
                tracing::warn!(
                    replay_ids_max = self.max,
                    floor_ms = dated_ms,
                    "the orderer forgets transaction ids before their window ends: proposals dated at or before the oldest forgotten are refused (TIMESTAMP_OUT_OF_WINDOW) until the window passes it; raise [ordering] replay_ids_max"
                );
            }
            self.forgotten_early += 1;
        }
        Seen::New
    }

    /// What [`RecentIds::insert`] would answer now, remembering nothing: how the leader of
    /// a cluster checks a transaction it proposes, whose id is recorded only once its
    /// entry is committed.
    pub fn check(&mut self, tx_id: &TxId, proposal_ms: u64, now_ms: u64) -> Seen {
        if self.max == 0 {
            return Seen::New;
        }
        self.expire(now_ms);
        if let Some(floor_ms) = self.floor_ms
            && proposal_ms <= floor_ms
        {
            return Seen::BeyondMemory { floor_ms };
        }
        if self.ids.contains(&key(tx_id)) {
            Seen::Replay
        } else {
            Seen::New
        }
    }

    /// Remembers an id found in the log at open, its proposal dated `proposal_ms`, in any
    /// order: the ids kept and the floor are the same whatever the order of the calls.
    /// Ids too old to be admitted again are skipped.
    pub fn restore(&mut self, tx_id: &TxId, proposal_ms: u64, now_ms: u64) {
        if proposal_ms.saturating_add(self.window_ms) >= now_ms {
            self.insert(tx_id, proposal_ms, now_ms);
        }
    }

    /// How far back in the log, by the orderer's timestamps, a transaction whose copy
    /// could still be admitted may lie: it was admitted within a window of its proposal,
    /// which may be admitted again for a window more.
    pub fn log_horizon_ms(&self) -> u64 {
        self.window_ms.saturating_mul(2)
    }

    /// Ids remembered now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_proposal.len()
    }

    /// Ids forgotten before their time since the orderer opened.
    #[cfg(test)]
    pub(crate) fn forgotten_early(&self) -> u64 {
        self.forgotten_early
    }

    /// Forgets the ids whose proposals can no longer be admitted at `now_ms`.
    fn expire(&mut self, now_ms: u64) {
        while let Some(&(dated_ms, key)) = self.by_proposal.first()
            && dated_ms.saturating_add(self.window_ms) < now_ms
        {
            self.by_proposal.pop_first();
            self.ids.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> TxId {
        TxId([n; 32])
    }

    #[test]
    fn check_answers_as_insert_would_and_remembers_nothing() {
        let mut recent = RecentIds::new(Duration::from_secs(10), 8);
        assert_eq!(recent.check(&id(1), 1_000, 1_000), Seen::New);
        assert_eq!(
            recent.check(&id(1), 1_000, 1_000),
            Seen::New,
            "nothing remembered"
        );
        assert_eq!(recent.insert(&id(1), 1_000, 1_000), Seen::New);
        assert_eq!(recent.check(&id(1), 1_000, 1_000), Seen::Replay);
        assert_eq!(recent.len(), 1);
    }

    #[test]
    fn a_replay_within_its_window_is_refused_and_after_it_forgotten() {
        // A window of 10 s: a proposal dated 1,000 can be admitted until 11,000.
        let mut recent = RecentIds::new(Duration::from_secs(10), 100);
        assert_eq!(recent.insert(&id(1), 1_000, 1_200), Seen::New);
        assert_eq!(recent.insert(&id(1), 1_000, 1_500), Seen::Replay);
        assert_eq!(recent.insert(&id(2), 2_000, 2_100), Seen::New);
        assert_eq!(recent.insert(&id(1), 1_000, 11_000), Seen::Replay);
        assert_eq!(recent.insert(&id(3), 11_001, 11_001), Seen::New);
        assert_eq!(
            recent.len(),
            2,
            "1 is forgotten: admission refuses it by now"
        );
    }

    #[test]
    fn past_the_count_the_oldest_proposals_go_and_nothing_dated_before_them_is_taken() {
        let mut recent = RecentIds::new(Duration::from_secs(60), 2);
        // Arrival order is not proposal order: 3 is dated before 1 and 2.
        assert_eq!(recent.insert(&id(1), 5_000, 5_000), Seen::New);
        assert_eq!(recent.insert(&id(2), 6_000, 6_000), Seen::New);
        assert_eq!(recent.insert(&id(3), 4_000, 6_500), Seen::New);
        // 3 had the oldest proposal: forgotten, and the floor rises to 4,000.
        assert_eq!(recent.len(), 2);
        assert_eq!(recent.forgotten_early(), 1);
        assert_eq!(
            recent.insert(&id(3), 4_000, 7_000),
            Seen::BeyondMemory { floor_ms: 4_000 },
            "a replay of a forgotten id is still refused"
        );
        assert_eq!(
            recent.insert(&id(4), 3_500, 7_000),
            Seen::BeyondMemory { floor_ms: 4_000 }
        );
        assert_eq!(recent.insert(&id(1), 5_000, 7_000), Seen::Replay);
        // Newer proposals go on; each past the count raises the floor.
        assert_eq!(recent.insert(&id(5), 7_000, 7_000), Seen::New);
        assert_eq!(
            recent.insert(&id(1), 5_000, 7_100),
            Seen::BeyondMemory { floor_ms: 5_000 }
        );
        assert_eq!(recent.insert(&id(2), 6_000, 7_100), Seen::Replay);
    }

    #[test]
    fn restore_skips_ids_too_old_to_be_admitted_again() {
        let mut recent = RecentIds::new(Duration::from_secs(10), 100);
        recent.restore(&id(1), 1_000, 30_000);
        recent.restore(&id(2), 25_000, 30_000);
        assert_eq!(recent.len(), 1);
        assert_eq!(recent.insert(&id(1), 1_000, 30_000), Seen::New);
        assert_eq!(recent.insert(&id(2), 25_000, 30_000), Seen::Replay);
        assert_eq!(recent.log_horizon_ms(), 20_000);
    }
}
