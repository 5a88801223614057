//! The state store: the durable ledger state on sled ([`Store`]), and the staged MVCC
//! overlay in front of it ([`WorldState`]) that endorsers and the validator read through
//! consistent [`Snapshot`]s.
//!
//! # Key layout
//!
//! Everything lives in sled's default tree, told apart by a one-byte prefix, so that one
//! `sled::Batch` covers all a commit writes:
//!
//! | key | value |
//! |---|---|
//! | `'s' ns 0x00 key` | `seq u64be ++ value`, or `(seq \| 1 << 63) u64be ++ place` (a delete removes the key) |
//! | `'h' ns 0x00 len(key) u32be key (u64::MAX - seq) u64be` | `tag u8 (0 put, 1 delete, 2 put at a place) ++ tx_id [32] ++ value or place` |
//! | `'t' tx_id [32]` | `seq u64be ++ code u8 ++ timestamp_ms u64be` |
//! | `'o' last u64be` | for each transaction a commit wrote (seqs `first ..= last`), where its bytes lie in the transactions' file and the orderer's timestamp for its seq: `offset u64be ++ len u32be ++ timestamp_ms u64be` for a commit of one, else `first u64be` and that per seq |
//! | `'i' last u64be` | the ids of the transactions a commit wrote: `first u64be ++ tx_id [32]` per seq |
//! | `'e' contract 0x00 seq u64be index u32be` | `tag u8 (0 copied, 2 at a place) ++ tx_id [32] ++ len(name) u32be ++ name ++ payload or place` |
//! | `'b' number u64be` | `first u64be ++ last u64be ++ seal bytes` (the seal is opaque) |
//! | `'c' last u64be` | `number u64be ++ first u64be`: the seal index, by last seq covered |
//! | `'m' "height"` | the last durable seq, `u64be` |
//! | `'m' "format"` | the layout of these records, `u64be` ([`STORE_FORMAT`]), written with the first commit |
//!
//! A namespace is 1 to [`NAMESPACE_BYTES_MAX`] bytes with no `0x00`, so `ns 0x00` ends it
//! unambiguously and `ns 0x01` bounds its state. A history key spells out the key's length,
//! so the entries of `ab` never mix with those of `abc`; the inverted seq makes ascending
//! iteration newest first. Every record read back is decoded and checked: one that does not
//! decode is [`StoreError::Corrupt`], never a panic and never skipped. A store of another
//! format than [`STORE_FORMAT`] (an older one has no format record) is refused when it
//! opens ([`StoreError::Format`]), never read.
//!
//! A value of 64 bytes or more in a history record or an event's payload, and of 4 KiB
//! or more in a state record, is not copied when the writing transaction's stored bytes
//! hold it: the record holds its place there (`offset u32be ++ len u32be ++ crc32
//! u32be`), and a read reads those bytes alone and checks them against the CRC-32.
//!
//! The event index (`'e'`) holds each contract event of a valid transaction under the
//! contract that emitted it, by its place in the stream (the transaction's seq, and its
//! index among all that transaction's events), so a contract's events from a place on are
//! one range scan however many other transactions the ledger holds. An event whose
//! contract is not a well-formed namespace is not indexed: no contract has that name.
//!
//! A store of another format than this code's ([`Store::open`] refuses it with
//! [`StoreError::Format`]) is moved away and rebuilt by the peer from its orderer's log.
//!
//! Every ordered transaction, valid or not, keeps its bytes, as the orderer delivered
//! them, in `transactions.log`: an append-only [`crate::records::RecordFile`] beside
//! sled, since big write-once values cost a B-tree far more than an append. `'o'` points
//! into it, one record per commit: the first one keyed at or after a seq holds that
//! seq. A transaction's block is known only once a seal covering it arrives, so the tx index does not hold it:
//! [`Store::block_of`] finds it in the seal index, whose first entry with `last >= seq`
//! is the only seal that can cover `seq`. Seals form one chain: block numbers `1, 2, 3,
//! ...` (0 is genesis, never stored), each covering the seqs right after the previous one's.
//!
//! # Atomicity
//!
//! [`Store::commit`] checks the whole batch (seqs contiguous from the height, namespaces and
//! keys well formed, seals continuing the stored chain and covering nothing beyond the
//! height after the batch) before writing anything. It then appends the transactions'
//! bytes to the transactions' file and syncs it, applies one `sled::Batch` holding every
//! state, history, tx-index, transaction-place, seal and seal-index record together with
//! the new height, and flushes sled before it returns. A crash between the two leaves
//! records in the file that nothing points at; opening the store cuts them. After a crash the height and the
//! contents always agree: a commit is wholly there or wholly absent, and a seal is never
//! durable without every transaction it covers. The tx index keeps the first record of a
//! tx id; a later transaction with the same id (a `DUPLICATE_TXID`) does not replace it.
//!
//! # Snapshot semantics
//!
//! [`WorldState::stage`] applies a validated transaction to the in-memory overlay at once,
//! so the next transaction is validated against it without waiting for durability;
//! [`WorldState::commit_staged`] later makes a run of staged transactions durable in one
//! [`Store::commit`]. The overlay maps each recently written key to a chain of versions
//! `(seq, value or deleted)` in seq order. A [`Snapshot`] taken at staged height `h`
//! answers a key with the newest chain version `<= h`, and with sled when the key has no
//! chain. The first staged write to a key puts the key's durable value at the front of
//! its chain (the base), so a snapshot older than the write still finds its answer after
//! the write reaches sled. Reads hold the overlay's read lock across the sled read: a key
//! without a chain has no pending write, so sled cannot change it meanwhile.
//!
//! A staged transaction's bytes stay with its staged record until the commit that makes
//! it durable has returned, so [`WorldState::transaction`] answers for every staged seq,
//! durable or not.
//!
//! # Pruning
//!
//! After each [`WorldState::commit_staged`], with `m = min(durable height, oldest live
//! snapshot)`, every chain drops the versions older than its newest version `<= m` (that
//! one stays as the base), and a chain left with only a base `<= m` goes away: sled then
//! holds exactly that value, and every live or future snapshot (all at heights `>= m`)
//! would answer it. So the overlay holds only writes newer than the durable height, plus
//! what live snapshots still need.

mod digest;
mod durable;
mod error;
mod filter;
mod keys;
mod overlay;
mod world;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use runnel_runtime::{ContractEvent, NsRwSet};

use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};

pub use digest::StateHash;
pub use durable::Store;
pub(crate) use durable::lock_dir;
pub use error::StoreError;
pub use keys::FORMAT as STORE_FORMAT;
pub(crate) use keys::{check_key, check_namespace};
pub use world::{Snapshot, WorldState};

/// Longest namespace, in bytes (it must also be non-empty and hold no `0x00` byte).
pub const NAMESPACE_BYTES_MAX: usize = 255;

/// Longest state key the store accepts, in bytes. Far above any contract key limit; it
/// bounds what one key costs, and keeps the length that history keys spell out in a `u32`.
pub const KEY_BYTES_MAX: usize = 1 << 20;

/// What the ledger records about an ordered transaction, valid or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRecord {
    /// The transaction's id.
    pub tx_id: TxId,
    /// Its position in the ordered stream (its block, once sealed: [`Store::block_of`]).
    pub seq: Seq,
    /// The validation outcome.
    pub code: ValidationCode,
    /// The orderer's timestamp, in milliseconds since the Unix epoch.
    pub timestamp_ms: u64,
}

/// A transaction's bytes as the orderer delivered them, at their place in the stream,
/// with the orderer's timestamp for that place: what its Merkle leaf is made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxBytes {
    /// Its place in the ordered stream.
    pub seq: Seq,
    /// The orderer's clock when it assigned `seq`, Unix milliseconds.
    pub timestamp_ms: u64,
    /// The encoded `SignedTransaction`, exactly as ordered (valid or not).
    pub bytes: Vec<u8>,
}

/// One write to a key, as kept in the key's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The writing transaction's seq (the version it gave the key).
    pub seq: Seq,
    /// The writing transaction's id.
    pub tx_id: TxId,
    /// The value written; `None` when the write deleted the key.
    pub value: Option<Vec<u8>>,
}

/// A place in the stream of contract events: the event at `index` among the events of
/// the transaction at `seq` (every contract's events counted). Ordered as the stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventAt {
    /// The emitting transaction's seq.
    pub seq: Seq,
    /// The event's index among the transaction's events.
    pub index: u32,
}

/// A contract event as the store's event index gives it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its place in the stream.
    pub at: EventAt,
    /// The emitting transaction's id.
    pub tx_id: TxId,
    /// The event's name.
    pub name: String,
    /// The event's payload.
    pub payload: Vec<u8>,
}

/// A block seal as the store keeps it: its number, the seq range it covers, and the signed
/// seal bytes (opaque here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealRecord {
    /// The block's number: 1, 2, 3, ...
    pub number: BlockNumber,
    /// The first seq it covers.
    pub first: Seq,
    /// The last seq it covers (`>= first`).
    pub last: Seq,
    /// The signed seal.
    pub bytes: Vec<u8>,
}

/// A transaction in a [`CommitBatch`].
#[derive(Debug, Clone)]
struct BatchTx {
    /// Its record.
    record: TxRecord,
    /// Its writes (only a valid transaction's apply).
    writes: Vec<NsRwSet>,
    /// Its contract events (only a valid transaction's are indexed).
    events: Vec<ContractEvent>,
    /// Its bytes as ordered; shared with the staged record until the commit is done.
    transaction: Arc<Vec<u8>>,
    /// Its Merkle leaf ([`crate::block::leaf`]), stored beside its place.
    leaf: crate::tx::Hash,
}

/// Everything one [`Store::commit`] makes durable at once: transactions in seq order with
/// their writes and bytes, and block seals in chain order.
#[derive(Debug, Clone, Default)]
pub struct CommitBatch {
    /// Transactions in the order they were pushed.
    txs: Vec<BatchTx>,
    /// Seals in the order they were pushed.
    seals: Vec<SealRecord>,
}

impl CommitBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a transaction with its bytes as ordered (`transaction`, kept whether it is
    /// valid or not). Only the `writes` of each [`NsRwSet`] matter, and only for a valid
    /// transaction: an invalid one changes no state (pass empty `writes`).
    pub fn push_tx(&mut self, record: TxRecord, writes: Vec<NsRwSet>, transaction: Vec<u8>) {
        self.push_tx_with_events(record, writes, Vec::new(), transaction);
    }

    /// [`CommitBatch::push_tx`] for a transaction that emitted `events` (in its order):
    /// a valid transaction's go into the event index ([`Store::events`]).
    pub fn push_tx_with_events(
        &mut self,
        record: TxRecord,
        writes: Vec<NsRwSet>,
        events: Vec<ContractEvent>,
        transaction: Vec<u8>,
    ) {
        let leaf = crate::block::leaf(record.timestamp_ms, &transaction);
        self.push_shared(record, writes, events, Arc::new(transaction), leaf);
    }

    /// [`CommitBatch::push_tx_with_events`] with bytes shared with a staged record.
    fn push_shared(
        &mut self,
        record: TxRecord,
        writes: Vec<NsRwSet>,
        events: Vec<ContractEvent>,
        transaction: Arc<Vec<u8>>,
        leaf: crate::tx::Hash,
    ) {
        self.txs.push(BatchTx {
            record,
            writes,
            events,
            transaction,
            leaf,
        });
    }

    /// Adds a seal. Seals go in chain order: each continues the one before it (or the
    /// store's last seal), as [`Store::commit`] checks.
    pub fn push_seal(&mut self, seal: SealRecord) {
        self.seals.push(seal);
    }

    /// True when the batch has neither transactions nor seals.
    pub fn is_empty(&self) -> bool {
        self.txs.is_empty() && self.seals.is_empty()
    }

    /// The seq of the last transaction pushed, if any.
    pub fn last_seq(&self) -> Option<Seq> {
        self.txs.last().map(|tx| tx.record.seq)
    }
}

/// Locks `mutex`, going on past a panic in another holder: every critical section in
/// this module leaves its data consistent before anything in it can panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `rwlock` (see [`lock`] on poisoning).
fn read<T>(rwlock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    rwlock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `rwlock` (see [`lock`] on poisoning).
fn write<T>(rwlock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    rwlock.write().unwrap_or_else(PoisonError::into_inner)
}
