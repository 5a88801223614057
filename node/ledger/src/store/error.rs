//! Why a store operation failed.

use runnel_runtime::StateError;

use super::{KEY_BYTES_MAX, NAMESPACE_BYTES_MAX};
use crate::ids::{BlockNumber, Seq};
use crate::records::RecordError;

/// Most characters of a namespace quoted in an error; longer ones are cut.
const QUOTE_CHARS_MAX: usize = 64;

/// A store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// sled reported an I/O or storage failure.
    #[error("storage failure: {0}")]
    Sled(String),
    /// Another open store (in this process or another) holds the directory's lock.
    #[error("store at {path} is locked by another open store")]
    Locked {
        /// The store's directory.
        path: String,
    },
    /// A stored record does not decode: the database is damaged. Nothing built on it
    /// can be trusted, so the operation stops here.
    #[error("stored {what} is corrupt: {detail}")]
    Corrupt {
        /// The kind of record.
        what: &'static str,
        /// What is wrong with it.
        detail: String,
    },
    /// The store was written in a format this code does not read (an older Runnel's, or
    /// a newer one's; format 1 stores have no format record). Nothing in it is read.
    #[error(
        "store at {path} is of format {found}, but this Runnel reads format {expected} only: {}",
        format_hint(*found, *expected)
    )]
    Format {
        /// The store's directory.
        path: String,
        /// Its format (1: written before the store recorded its format).
        found: u64,
        /// The format this code reads.
        expected: u64,
    },
    /// A transaction's seq is not the next one.
    #[error("transaction out of order: expected seq {expected}, got {got}")]
    OutOfOrder {
        /// The seq that would follow.
        expected: Seq,
        /// The seq given.
        got: Seq,
    },
    /// A seal's number does not follow the last seal (stored, or earlier in the batch);
    /// the first seal is block 1.
    #[error("seal out of order: expected block {expected}, got block {got}")]
    SealOutOfOrder {
        /// The number that would follow.
        expected: BlockNumber,
        /// The number given.
        got: BlockNumber,
    },
    /// A seal's first seq does not follow the last seq of the seal before it (seq 1 for
    /// block 1): it leaves a gap or overlaps.
    #[error(
        "seal of block {number} starts at seq {got}, not at seq {expected} where the chain goes on"
    )]
    SealNotContiguous {
        /// The seal's block number.
        number: BlockNumber,
        /// The seq it must start at.
        expected: Seq,
        /// The seq it starts at.
        got: Seq,
    },
    /// A seal ends before it starts, or covers a transaction not durable with or before it.
    #[error(
        "seal of block {number} covers seqs {first}..={last}: it must end at or after its first seq and at or before height {height}"
    )]
    SealRange {
        /// The seal's block number.
        number: BlockNumber,
        /// The first seq it covers.
        first: Seq,
        /// The last seq it covers.
        last: Seq,
        /// The height after the commit.
        height: Seq,
    },
    /// A namespace is empty, longer than [`NAMESPACE_BYTES_MAX`], or holds a `0x00` byte.
    #[error(
        "namespace {0:?} is not valid: it must be 1 to {NAMESPACE_BYTES_MAX} bytes with no NUL byte"
    )]
    BadNamespace(String),
    /// A key is longer than [`KEY_BYTES_MAX`].
    #[error("key of {bytes} bytes is longer than the {KEY_BYTES_MAX} bytes allowed")]
    KeyTooLong {
        /// The key's length.
        bytes: usize,
    },
    /// A commit with neither transactions nor seals.
    #[error("nothing to commit: the batch is empty")]
    EmptyBatch,
    /// [`WorldState::write_staged`](super::WorldState::write_staged) was asked for a
    /// height that is already written or not yet staged.
    #[error(
        "cannot commit through seq {through}: written height is {written}, staged height is {staged}"
    )]
    CommitRange {
        /// The height asked for.
        through: Seq,
        /// The height written to the store.
        written: Seq,
        /// The staged height.
        staged: Seq,
    },
    /// A snapshot's answer was pruned. The pruning rule keeps every version a live
    /// snapshot needs, so this means a bug, not a slow reader.
    #[error("snapshot at height {height} can no longer be answered")]
    SnapshotTooOld {
        /// The snapshot's height.
        height: Seq,
    },
}

/// What to do with a store of format `found`.
fn format_hint(found: u64, expected: u64) -> &'static str {
    if found < expected {
        "it lacks what this one keeps (the contract-event index, the orderer's timestamp of \
         each seq, which its seals' Merkle leaves cover); move the directory away, or start \
         the peer on an empty directory, and it receives the ledger again from its orderer"
    } else {
        "it was written by a newer Runnel"
    }
}

impl StoreError {
    /// A [`StoreError::BadNamespace`] quoting at most [`QUOTE_CHARS_MAX`] characters of `ns`.
    pub(super) fn bad_namespace(ns: &str) -> StoreError {
        StoreError::BadNamespace(ns.chars().take(QUOTE_CHARS_MAX).collect())
    }

    /// A [`StoreError::Corrupt`].
    pub(super) fn corrupt(what: &'static str, detail: impl Into<String>) -> StoreError {
        StoreError::Corrupt {
            what,
            detail: detail.into(),
        }
    }
}

impl From<sled::Error> for StoreError {
    fn from(error: sled::Error) -> Self {
        StoreError::Sled(error.to_string())
    }
}

impl From<RecordError> for StoreError {
    fn from(error: RecordError) -> Self {
        match error {
            RecordError::Damaged { .. }
            | RecordError::Corrupt { .. }
            | RecordError::NotRecordFile { .. } => StoreError::Corrupt {
                what: "transaction file",
                detail: error.to_string(),
            },
            other => StoreError::Sled(other.to_string()),
        }
    }
}

impl From<StoreError> for StateError {
    fn from(error: StoreError) -> Self {
        StateError(error.to_string())
    }
}
