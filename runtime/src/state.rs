//! What a contract call reads: a consistent view of one contract namespace's committed
//! (and, in the node, staged) state, where every value carries its version.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::StateError;
use crate::proto::Version;

/// A value and the version of the write that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue {
    /// The value's bytes.
    pub value: Vec<u8>,
    /// Who wrote it.
    pub version: Version,
}

/// A read-only, consistent view of one namespace. Implementations must return the same
/// answers for the whole of a call (a snapshot), so that the read set is exact.
pub trait StateView: Send + Sync {
    /// The value of `key`, if present.
    fn get(&self, key: &[u8]) -> Result<Option<VersionedValue>, StateError>;

    /// Up to `limit` entries with `start <= key < end` (`end = None`: unbounded), in
    /// ascending key order.
    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StateError>;
}

/// An in-memory namespace, for tests, benchmarks and local runs.
#[derive(Debug, Clone, Default)]
pub struct MemoryState {
    entries: BTreeMap<Vec<u8>, VersionedValue>,
}

impl MemoryState {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value` at `version`.
    pub fn insert(&mut self, key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>, version: Version) {
        let value = VersionedValue {
            value: value.into(),
            version,
        };
        self.entries.insert(key.into(), value);
    }

    /// Applies a call's writes, as a commit of the transaction at `version` would.
    pub fn apply(&mut self, rwset: &crate::proto::NsRwSet, version: Version) {
        for write in &rwset.writes {
            if write.is_delete {
                self.entries.remove(&write.key);
            } else {
                self.insert(write.key.clone(), write.value.clone(), version);
            }
        }
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &VersionedValue)> {
        self.entries.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl StateView for MemoryState {
    fn get(&self, key: &[u8]) -> Result<Option<VersionedValue>, StateError> {
        Ok(self.entries.get(key).cloned())
    }

    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StateError> {
        let upper = match end {
            Some(end) if end <= start => return Ok(Vec::new()),
            Some(end) => Bound::Excluded(end),
            None => Bound::Unbounded,
        };
        Ok(self
            .entries
            .range::<[u8], _>((Bound::Included(start), upper))
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }
}
