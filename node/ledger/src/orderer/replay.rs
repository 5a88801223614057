//! The transaction ids an orderer ordered recently, so that a replay of public
//! transaction bytes, or the same transaction submitted twice at once, is refused
//! instead of being stored again by the orderer and every peer.
//!
//! Admission refuses a proposal whose timestamp lies more than the window `W` from the
//! orderer's clock. A transaction that arrived at time `t` has a timestamp of at most
//! `t + W`, so after `t + 2W` no copy of it can be admitted again: its id is kept that
//! long and no longer. Ids are kept by their first 128 bits (no one can find another
//! transaction whose id shares them), in arrival order, up to a count; past it the oldest
//! go early, and a replay of one of those is ordered and marked `DUPLICATE_TXID` by the
//! peers, as every replay was before.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use crate::ids::TxId;

/// Recently ordered ids, each with the time after which it can no longer be admitted.
#[derive(Debug)]
pub(crate) struct RecentIds {
    ids: HashSet<u128>,
    /// `(forget after, Unix ms; id)`, in arrival order: the times never decrease.
    by_arrival: VecDeque<(u64, u128)>,
    keep_ms: u64,
    max: usize,
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
    /// most `max` of them.
    pub fn new(window: Duration, max: usize) -> RecentIds {
        RecentIds {
            ids: HashSet::new(),
            by_arrival: VecDeque::new(),
            keep_ms: u64::try_from(window.as_millis())
                .unwrap_or(u64::MAX / 2)
                .saturating_mul(2),
            max: max.max(1),
            forgotten_early: 0,
        }
    }

    /// Remembers `tx_id`, ordered at `arrived_ms`; false when it is already remembered (a
    /// replay), which changes nothing.
    pub fn insert(&mut self, tx_id: &TxId, arrived_ms: u64) -> bool {
        self.expire(arrived_ms);
        let key = key(tx_id);
        if !self.ids.insert(key) {
            return false;
        }
        self.by_arrival
            .push_back((arrived_ms.saturating_add(self.keep_ms), key));
        while self.by_arrival.len() > self.max {
            self.pop_front();
            if self.forgotten_early.is_multiple_of(1 << 20) {
                tracing::warn!(
                    replay_ids_max = self.max,
                    "the orderer forgets transaction ids before their window ends: a replay of one would be ordered again (and marked DUPLICATE_TXID by the peers); raise [ordering] replay_ids_max"
                );
            }
            self.forgotten_early += 1;
        }
        true
    }

    /// Remembers an id found in the log at open, arrived at `arrived_ms` (oldest first).
    /// Ids too old to be admitted again are skipped.
    pub fn restore(&mut self, tx_id: &TxId, arrived_ms: u64, now_ms: u64) {
        if arrived_ms.saturating_add(self.keep_ms) >= now_ms {
            self.insert(tx_id, arrived_ms);
        }
    }

    /// How long an id is kept after its arrival, in milliseconds.
    pub fn keep_ms(&self) -> u64 {
        self.keep_ms
    }

    /// Ids remembered now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_arrival.len()
    }

    /// Ids forgotten before their time since the orderer opened.
    #[cfg(test)]
    pub fn forgotten_early(&self) -> u64 {
        self.forgotten_early
    }

    fn expire(&mut self, now_ms: u64) {
        while self
            .by_arrival
            .front()
            .is_some_and(|(forget_after, _)| *forget_after < now_ms)
        {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some((_, key)) = self.by_arrival.pop_front() {
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
    fn a_replay_within_two_windows_is_refused_and_after_them_forgotten() {
        let mut recent = RecentIds::new(Duration::from_secs(10), 100);
        assert!(recent.insert(&id(1), 1_000));
        assert!(!recent.insert(&id(1), 1_500));
        assert!(recent.insert(&id(2), 2_000));
        // 1 arrived at 1,000: kept through 21,000.
        assert!(!recent.insert(&id(1), 21_000));
        assert!(recent.insert(&id(3), 21_001));
        assert!(recent.insert(&id(1), 21_002), "forgotten after two windows");
        assert_eq!(recent.len(), 3, "2, 3 and 1 again");
    }

    #[test]
    fn past_the_count_the_oldest_go_first_and_are_counted() {
        let mut recent = RecentIds::new(Duration::from_secs(60), 2);
        for n in 1..=3 {
            assert!(recent.insert(&id(n), 1_000));
        }
        assert_eq!(recent.len(), 2);
        assert_eq!(recent.forgotten_early(), 1);
        assert!(recent.insert(&id(1), 1_000), "1 was forgotten early");
        assert!(!recent.insert(&id(3), 1_000));
    }

    #[test]
    fn restore_skips_ids_too_old_to_be_admitted_again() {
        let mut recent = RecentIds::new(Duration::from_secs(10), 100);
        recent.restore(&id(1), 1_000, 30_000);
        recent.restore(&id(2), 15_000, 30_000);
        assert_eq!(recent.len(), 1);
        assert!(recent.insert(&id(1), 30_000));
        assert!(!recent.insert(&id(2), 30_000));
    }
}
