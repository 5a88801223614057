//! The staged overlay: for each recently written key, a short chain of its versions.

use std::collections::BTreeMap;
use std::ops::Bound;

use runnel_runtime::{Version, VersionedValue};

use crate::ids::Seq;

/// A key's versions, oldest first: `(seq, value)`, `None` meaning deleted (or absent).
/// The first is the base: the key's value before the oldest write still kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Chain {
    /// Never empty; seqs strictly ascending.
    versions: Vec<(Seq, Option<Vec<u8>>)>,
}

impl Chain {
    /// A chain holding only `base`, the key's durable value (`Seq::ZERO, None` if none).
    pub(super) fn with_base(seq: Seq, value: Option<Vec<u8>>) -> Chain {
        Chain {
            versions: vec![(seq, value)],
        }
    }

    /// Adds the write at `seq`, which is not older than any version here. A second write
    /// at the same seq (one transaction writing a key twice) replaces the first.
    pub(super) fn push(&mut self, seq: Seq, value: Option<Vec<u8>>) {
        match self.versions.last_mut() {
            Some(last) if last.0 == seq => last.1 = value,
            last => {
                // Stage takes seqs in order: a write never lands before one already here.
                assert!(
                    last.is_none_or(|last| last.0 < seq),
                    "overlay write out of seq order"
                );
                self.versions.push((seq, value));
            }
        }
    }

    /// The key's value at height `height`: `Some(None)` when absent then, `None` when the
    /// chain no longer reaches back that far.
    pub(super) fn at(&self, height: Seq) -> Option<Option<VersionedValue>> {
        let (seq, value) = self.versions.iter().rev().find(|(seq, _)| *seq <= height)?;
        Some(value.as_ref().map(|value| VersionedValue {
            value: value.clone(),
            version: Version::from_seq(seq.0),
        }))
    }

    /// Drops what no reader at a height `>= floor` needs: every version older than the
    /// newest one `<= floor`. Answers whether the chain is still needed: one left holding
    /// only a base `<= floor` is not, as sled holds exactly that value.
    fn prune(&mut self, floor: Seq) -> bool {
        match self.versions.iter().rposition(|(seq, _)| *seq <= floor) {
            Some(base) => {
                self.versions.drain(..base);
                self.versions.len() > 1
            }
            // Nothing at or below the floor: every version is newer, keep them all.
            None => true,
        }
    }

    /// Number of versions held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.versions.len()
    }
}

/// The chains, by state record key (the same bytes sled uses, so both sort alike).
#[derive(Debug, Default)]
pub(super) struct Overlay {
    chains: BTreeMap<Vec<u8>, Chain>,
}

impl Overlay {
    /// The chain of the key stored under `state_key`.
    pub(super) fn get(&self, state_key: &[u8]) -> Option<&Chain> {
        self.chains.get(state_key)
    }

    /// True if the key stored under `state_key` has a chain.
    pub(super) fn contains(&self, state_key: &[u8]) -> bool {
        self.chains.contains_key(state_key)
    }

    /// The chain of `state_key`, created with `base` (called only then) if it has none.
    pub(super) fn chain_or_insert(
        &mut self,
        state_key: Vec<u8>,
        base: impl FnOnce() -> Chain,
    ) -> &mut Chain {
        self.chains.entry(state_key).or_insert_with(base)
    }

    /// The chains with `lo <= state key < hi`, in key order.
    pub(super) fn range<'a>(
        &'a self,
        lo: &'a [u8],
        hi: &'a [u8],
    ) -> impl Iterator<Item = (&'a Vec<u8>, &'a Chain)> + 'a {
        self.chains
            .range::<[u8], _>((Bound::Included(lo), Bound::Excluded(hi)))
    }

    /// Prunes every chain against `floor` (see [`Chain::prune`]). O(overlay): it holds
    /// only recent writes.
    pub(super) fn prune(&mut self, floor: Seq) {
        self.chains.retain(|_, chain| chain.prune(floor));
    }

    /// Number of keys with a chain.
    pub(super) fn len(&self) -> usize {
        self.chains.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(seq: u64, bytes: &[u8]) -> Option<Option<VersionedValue>> {
        Some(Some(VersionedValue {
            value: bytes.to_vec(),
            version: Version::from_seq(seq),
        }))
    }

    #[test]
    fn a_chain_answers_each_height_with_the_newest_version_not_above_it() {
        let mut chain = Chain::with_base(Seq(2), Some(b"base".to_vec()));
        chain.push(Seq(5), None);
        chain.push(Seq(7), Some(b"seven".to_vec()));
        chain.push(Seq(7), Some(b"seven again".to_vec()));
        assert_eq!(chain.at(Seq(1)), None);
        assert_eq!(chain.at(Seq(2)), value(2, b"base"));
        assert_eq!(chain.at(Seq(4)), value(2, b"base"));
        assert_eq!(chain.at(Seq(5)), Some(None));
        assert_eq!(chain.at(Seq(9)), value(7, b"seven again"));
        assert_eq!(chain.len(), 3);
    }

    #[test]
    fn pruning_keeps_the_newest_version_at_the_floor_as_base() {
        let mut chain = Chain::with_base(Seq::ZERO, None);
        chain.push(Seq(3), Some(b"3".to_vec()));
        chain.push(Seq(6), Some(b"6".to_vec()));
        assert!(chain.prune(Seq(4)));
        assert_eq!(chain.len(), 2);
        assert_eq!(chain.at(Seq(4)), value(3, b"3"));
        assert!(!chain.prune(Seq(6)));
        assert_eq!(chain.len(), 1);

        let mut overlay = Overlay::default();
        overlay
            .chain_or_insert(b"a".to_vec(), || Chain::with_base(Seq::ZERO, None))
            .push(Seq(1), None);
        overlay
            .chain_or_insert(b"b".to_vec(), || Chain::with_base(Seq(1), None))
            .push(Seq(2), None);
        overlay.prune(Seq(1));
        assert!(!overlay.contains(b"a"));
        assert!(overlay.contains(b"b"));
        assert_eq!(overlay.range(b"a", b"c").count(), 1);
        overlay.prune(Seq(2));
        assert_eq!(overlay.len(), 0);
    }
}
