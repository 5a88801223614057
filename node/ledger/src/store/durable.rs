//! [`Store`]: the durable state, history, tx index and seals in one sled tree, and the
//! transactions' bytes in an append-only file beside it.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runnel_runtime::{Version, VersionedValue};

use super::filter::{KeyFilter, Loader};
use super::keys::{
    self, EventPayload, FORMAT, FORMAT_KEY, HEIGHT_KEY, HistoryWrite, SEAL, SEAL_INDEX,
    STATE_PREFIX, StateRecord, TRANSACTION_RECORD, TX_IDS_END, TX_PREFIX, TxPlace, ValueAt,
};
use super::{
    BatchTx, CommitBatch, EventAt, HistoryEntry, SealRecord, StoreError, StoredEvent, TxBytes,
    TxRecord, check_namespace, lock,
};
use crate::ids::{BlockNumber, Seq, TxId};
use crate::metrics::Histogram;
use crate::records::{Opened, RecordAt, RecordFile, RecordReader, SyncMode};

/// The transactions' file in the store's directory.
pub const TRANSACTIONS_FILE: &str = "transactions.log";

/// Bytes of the seq that closes a history key.
const HISTORY_SEQ_BYTES: usize = 8;

/// Where the seal chain stands: what the next seal must continue.
#[derive(Debug, Clone, Copy)]
struct SealTip {
    /// The last seal's number (0 before the first seal: genesis).
    number: BlockNumber,
    /// The last seq it covers ([`Seq::ZERO`] before the first seal).
    last: Seq,
}

impl SealTip {
    /// Checks that `seal` continues the chain from here, covering nothing above `height`,
    /// and answers the tip after it.
    fn check_next(self, seal: &SealRecord, height: Seq) -> Result<SealTip, StoreError> {
        let expected = BlockNumber(self.number.0 + 1);
        if seal.number != expected {
            return Err(StoreError::SealOutOfOrder {
                expected,
                got: seal.number,
            });
        }
        if seal.first != self.last.next() {
            return Err(StoreError::SealNotContiguous {
                number: seal.number,
                expected: self.last.next(),
                got: seal.first,
            });
        }
        if seal.last < seal.first || seal.last > height {
            return Err(StoreError::SealRange {
                number: seal.number,
                first: seal.first,
                last: seal.last,
                height,
            });
        }
        Ok(SealTip {
            number: seal.number,
            last: seal.last,
        })
    }
}

/// Transactions' bytes written ahead of their commit ([`Store::write_ahead`]).
#[derive(Debug, Default)]
struct Written {
    /// Where each one's bytes lie, by seq.
    places: std::collections::BTreeMap<Seq, crate::records::RecordAt>,
}

/// The durable store on sled.
///
/// Reads may run from any number of threads. Commits are serialised. When the store
/// belongs to a [`WorldState`](super::WorldState), commit through it only: the overlay
/// relies on seeing every write before sled does.
pub struct Store {
    /// The one tree holding every record (layout in the module doc).
    db: sled::Db,
    /// The last seq written, as the height record says: what reads see.
    height: AtomicU64,
    /// The last seq known durable: written before a flush began that has returned.
    durable: AtomicU64,
    /// The last seq a seal covers, once that seal is in sled (the tip's `last`, readable
    /// without `commit_lock`): a later seq is in no block yet, which [`Store::block_of`]
    /// answers without a range scan.
    sealed: AtomicU64,
    /// The seal chain's tip and the transactions' file, held across a commit's
    /// check-then-apply, so two commits cannot both pass the seq and seal checks against
    /// the same height and tip, nor interleave their appends.
    commit_lock: Mutex<(SealTip, RecordFile, Written)>,
    /// Reads the transactions' file.
    transactions: RecordReader,
    /// How long each commit's flush to disk took.
    flush_seconds: Arc<Histogram>,
    /// Which tx-index and state keys sled certainly does not hold: most lookups of those
    /// are of keys never written (see [`KeyFilter`]).
    keys: Arc<KeyFilter>,
    /// Loads the keys sled held at open into `keys`; joined when the store drops, before
    /// the directory's lock is released.
    _keys_loader: Loader,
    /// The OS lock on the directory's lock file, released when the store drops
    /// (after `db`, fields dropping in order).
    _dir_lock: File,
    /// With [`SyncMode::Full`], what each flush `fdatasync`s after sled's own flush.
    full_sync: Option<FullSync>,
    /// Records read for callers ([`Store::records_read`]).
    records_read: AtomicU64,
    /// Reads of the transactions' file ([`Store::transactions_read`]).
    transactions_read: AtomicU64,
}

/// The files sled writes that a full sync must reach: its log file (sled syncs its
/// writes with `sync_file_range` only), and its blob files, which hold the values too
/// big for the log and which sled does not sync at all.
#[derive(Debug)]
struct FullSync {
    db: File,
    blobs: PathBuf,
    /// Blob files already synced; a blob is written once and never changes.
    synced_blobs: Mutex<HashSet<OsString>>,
}

impl FullSync {
    /// Opens sled's log file in `dir` and syncs the directory, so that the files sled
    /// created there are found after a power loss.
    fn open(dir: &Path) -> std::io::Result<FullSync> {
        let db = File::open(dir.join(SLED_LOG_FILE))?;
        File::open(dir)?.sync_all()?;
        Ok(FullSync {
            db,
            blobs: dir.join(SLED_BLOBS_DIR),
            synced_blobs: Mutex::new(HashSet::new()),
        })
    }

    /// `fdatasync` of sled's log file and of every blob file not synced before (and of
    /// the blob directory when it holds new ones).
    fn sync(&self) -> std::io::Result<()> {
        self.db.sync_data()?;
        let entries = match std::fs::read_dir(&self.blobs) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(error),
        };
        let mut synced = lock(&self.synced_blobs);
        let mut present = HashSet::new();
        let mut new = false;
        for entry in entries {
            let name = entry?.file_name();
            if !synced.contains(&name) {
                File::open(self.blobs.join(&name))?.sync_data()?;
                new = true;
            }
            present.insert(name);
        }
        if new {
            File::open(&self.blobs)?.sync_all()?;
        }
        // Blobs sled has collected are forgotten with it.
        *synced = present;
        Ok(())
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

/// sled's log file in its directory (sled 0.34's layout).
const SLED_LOG_FILE: &str = "db";
/// sled's directory of values too big for its log.
const SLED_BLOBS_DIR: &str = "blobs";

impl Store {
    /// Opens (creating if needed) the store in directory `dir`; each [`Store::flush`]
    /// makes its writes durable as `sync` says.
    pub fn open(dir: &Path, sync: SyncMode) -> Result<Store, StoreError> {
        let (db, lock) = open_locked(dir)?;
        let height = match db.get(HEIGHT_KEY)? {
            Some(bytes) => keys::decode_height(&bytes)?,
            // Every commit writes the height, so only a store never committed to lacks it.
            None if db.is_empty() => Seq::ZERO,
            None => {
                return Err(StoreError::corrupt(
                    "height",
                    "missing from a store that holds records",
                ));
            }
        };
        check_format(dir, &db)?;
        let tip = match last_seal(&db)? {
            // The seal and the transactions it covers are written in one batch.
            Some(seal) if seal.last > height => {
                return Err(StoreError::corrupt(
                    "seal",
                    format!(
                        "block {} covers seqs up to {}, beyond height {height}",
                        seal.number, seal.last
                    ),
                ));
            }
            Some(seal) => SealTip {
                number: seal.number,
                last: seal.last,
            },
            None => SealTip {
                number: BlockNumber(0),
                last: Seq::ZERO,
            },
        };
        let file = open_transactions(dir, &db, height)?;
        let filter = Arc::new(KeyFilter::new());
        let keys_loader = Loader::start(db.clone(), &[&TX_PREFIX, &STATE_PREFIX], filter.clone())
            .map_err(|e| {
            StoreError::Sled(format!("cannot start the key filter's loader: {e}"))
        })?;
        Ok(Store {
            db,
            height: AtomicU64::new(height.0),
            durable: AtomicU64::new(height.0),
            sealed: AtomicU64::new(tip.last.0),
            transactions: file.handle(sync)?,
            commit_lock: Mutex::new((tip, file, Written::default())),
            flush_seconds: Arc::new(Histogram::flush_seconds()),
            keys: filter,
            _keys_loader: keys_loader,
            _dir_lock: lock,
            full_sync: match sync {
                SyncMode::Data => None,
                SyncMode::Full => Some(FullSync::open(dir).map_err(|error| {
                    StoreError::Sled(format!("opening sled's files for full syncs: {error}"))
                })?),
            },
            records_read: AtomicU64::new(0),
            transactions_read: AtomicU64::new(0),
        })
    }

    /// How many records this store has read for its callers since it opened: sled
    /// records met by the scans and lookups of history, events, transactions and tx
    /// ids, and reads of the transactions' file. What a call costs, counted; tests check
    /// with it that a call reads about what it returns.
    pub fn records_read(&self) -> u64 {
        self.records_read.load(Ordering::Relaxed)
    }

    /// How many of [`Store::records_read`] were reads of transactions' bytes (whole, or a
    /// value inside one).
    pub fn transactions_read(&self) -> u64 {
        self.transactions_read.load(Ordering::Relaxed)
    }

    /// Counts `n` records read ([`Store::records_read`]).
    fn count_read(&self, n: u64) {
        self.records_read.fetch_add(n, Ordering::Relaxed);
    }

    /// The last seq written ([`Seq::ZERO`] when nothing was): reads see everything up to
    /// it. Durable once a [`Store::flush`] that began after it was written returns
    /// ([`Store::durable_height`]).
    pub fn height(&self) -> Seq {
        Seq(self.height.load(Ordering::Acquire))
    }

    /// The last durable seq: at most [`Store::height`], equal to it after a flush.
    pub fn durable_height(&self) -> Seq {
        Seq(self.durable.load(Ordering::Acquire))
    }

    /// The durable value of `key` in namespace `ns`.
    pub fn get(&self, ns: &str, key: &[u8]) -> Result<Option<VersionedValue>, StoreError> {
        keys::check_namespace(ns)?;
        self.get_state(&keys::state_key(ns, key))
    }

    /// Up to `limit` durable entries of `ns` with `start <= key < end` (`end = None`: to
    /// the namespace's end), in ascending key order.
    pub fn scan(
        &self,
        ns: &str,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StoreError> {
        keys::check_namespace(ns)?;
        let Some((lo, hi)) = keys::state_range(ns, start, end) else {
            return Ok(Vec::new());
        };
        let prefix_len = keys::state_prefix_len(ns);
        let mut out = Vec::new();
        for item in self.state_range(lo, hi).take(limit) {
            let (key, value) = item?;
            let key = keys::state_key_suffix(&key, prefix_len)?.to_vec();
            out.push((key, self.state_value(&value)?));
        }
        Ok(out)
    }

    /// Up to `limit` writes of `key` in `ns`, newest first. `before` pages: only writes at
    /// seqs below it are returned (pass the last entry's seq to get the next page).
    pub fn history(
        &self,
        ns: &str,
        key: &[u8],
        before: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<HistoryEntry>, StoreError> {
        keys::check_namespace(ns)?;
        keys::check_key(key)?;
        let prefix = keys::history_prefix(ns, key);
        let Some(start) = keys::history_start(&prefix, before) else {
            return Ok(Vec::new());
        };
        // The prefix spells out the key's length, so everything under it is this key's
        // history: its own seq closes each record key.
        let mut end = prefix.clone();
        end.extend_from_slice(&[0xff; HISTORY_SEQ_BYTES]);
        let mut out = Vec::new();
        for item in self.db.range(start..=end).take(limit) {
            self.count_read(1);
            let (record_key, value) = item?;
            let seq = keys::decode_history_seq(&record_key, prefix.len())?;
            let (tx_id, write) = keys::decode_history_value(&value)?;
            let value = match write {
                HistoryWrite::Put(value) => Some(value),
                HistoryWrite::Delete => None,
                HistoryWrite::PutAt(at) => Some(self.value_in_transaction(seq, at)?),
            };
            out.push(HistoryEntry { seq, tx_id, value });
        }
        Ok(out)
    }

    /// Up to `limit` contract events that `contract` emitted in valid transactions, from
    /// the one at `from` on, and in transactions at seqs up to `through`, in stream order:
    /// one range scan of the event index, which reads the events it returns and nothing
    /// else. Every seq up to `through` must be written ([`Store::height`]).
    pub fn events(
        &self,
        contract: &str,
        from: EventAt,
        through: Seq,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        check_namespace(contract)?;
        let Some((lo, hi)) = keys::event_range(contract, (from.seq, from.index), through) else {
            return Ok(Vec::new());
        };
        let prefix_len = keys::event_prefix(contract).len();
        let mut out = Vec::new();
        for item in self.db.range(lo..hi).take(limit) {
            self.count_read(1);
            let (key, value) = item?;
            let (seq, index) = keys::decode_event_key(&key, prefix_len)?;
            let (tx_id, name, payload) = keys::decode_event_value(&value)?;
            let payload = match payload {
                EventPayload::Copied(payload) => payload.to_vec(),
                EventPayload::At(at) => self.value_in_transaction(seq, at)?,
            };
            out.push(StoredEvent {
                at: EventAt { seq, index },
                tx_id,
                name,
                payload,
            });
        }
        Ok(out)
    }

    /// The ids of up to `limit` transactions from seq `from` on, up to the height, in seq
    /// order: the tx-id records of the commits holding them, without their bytes.
    pub fn tx_ids(&self, from: Seq, limit: usize) -> Result<Vec<(Seq, TxId)>, StoreError> {
        let from = from.max(Seq(1));
        let mut out = Vec::new();
        if from > self.height() || limit == 0 {
            return Ok(out);
        }
        let records = self
            .db
            .range(keys::tx_ids_key(from).to_vec()..TX_IDS_END.to_vec());
        for item in records {
            self.count_read(1);
            let (key, value) = item?;
            let run = keys::decode_tx_ids(&key, &value)?;
            for (seq, id) in run.iter().filter(|(seq, _)| *seq >= from) {
                if out.len() >= limit || seq > self.height() {
                    return Ok(out);
                }
                out.push((seq, id));
            }
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// A state record's value and version, read from the writing transaction's bytes
    /// when the record points there.
    pub(super) fn state_value(&self, record: &[u8]) -> Result<VersionedValue, StoreError> {
        match keys::decode_state_record(record)? {
            StateRecord::Inline(value) => Ok(value),
            StateRecord::At { seq, at } => Ok(VersionedValue {
                value: self.value_in_transaction(seq, at)?,
                version: Version::from_seq(seq.0),
            }),
        }
    }

    /// The value at `at` in the bytes of the transaction at `seq`, which a state, history
    /// or event record points at: those bytes alone are read, and checked against the
    /// record's CRC-32.
    fn value_in_transaction(&self, seq: Seq, at: ValueAt) -> Result<Vec<u8>, StoreError> {
        let corrupt = |detail: String| StoreError::corrupt("value in a transaction", detail);
        let place = self
            .transaction_place(seq)?
            .ok_or_else(|| corrupt(format!("seq {seq} has no transaction")))?;
        if u64::from(at.offset) + u64::from(at.len) > u64::from(place.at.len) {
            return Err(corrupt(format!(
                "{} bytes at {} in seq {seq}'s {} bytes",
                at.len, at.offset, place.at.len
            )));
        }
        self.count_read(1);
        self.transactions_read.fetch_add(1, Ordering::Relaxed);
        let value = self.transactions.read_part(place.at, at.offset, at.len)?;
        if crc32fast::hash(&value) != at.crc {
            return Err(corrupt(format!(
                "the {} bytes at {} in seq {seq} do not match their checksum",
                at.len, at.offset
            )));
        }
        Ok(value)
    }

    /// The durable record of transaction `tx_id`: the first one committed with that id.
    pub fn tx(&self, tx_id: &TxId) -> Result<Option<TxRecord>, StoreError> {
        let key = keys::tx_key(tx_id);
        if !self.keys.may_contain(&key) {
            return Ok(None);
        }
        match self.db.get(key)? {
            Some(bytes) => keys::decode_tx_record(*tx_id, &bytes).map(Some),
            None => Ok(None),
        }
    }

    /// The transaction at `seq`, its bytes as the orderer delivered them (valid or not)
    /// with the orderer's timestamp, once durable.
    pub fn transaction(&self, seq: Seq) -> Result<Option<TxBytes>, StoreError> {
        match self.transaction_place(seq)? {
            Some(place) => self.read_transaction(seq, place).map(Some),
            None => Ok(None),
        }
    }

    /// Where the bytes of the transaction at `seq` lie in the transactions' file, and the
    /// orderer's timestamp of it.
    fn transaction_place(&self, seq: Seq) -> Result<Option<TxPlace>, StoreError> {
        if seq > self.height() || seq == Seq::ZERO {
            return Ok(None);
        }
        // The record of the run holding `seq` is the first one keyed at or after it.
        let Some(item) = self
            .db
            .range(keys::transaction_key(seq).to_vec()..keys::TRANSACTION_END.to_vec())
            .next()
        else {
            return Ok(None);
        };
        self.count_read(1);
        let (key, value) = item?;
        Ok(keys::decode_transaction_run(&key, &value)?.place(seq))
    }

    /// The transaction at `seq`, from its entry.
    fn read_transaction(&self, seq: Seq, place: TxPlace) -> Result<TxBytes, StoreError> {
        self.count_read(1);
        self.transactions_read.fetch_add(1, Ordering::Relaxed);
        Ok(TxBytes {
            seq,
            timestamp_ms: place.timestamp_ms,
            bytes: self.transactions.read(place.at)?,
        })
    }

    /// Up to `limit` durable transactions from seq `from` on, in ascending seq order.
    pub fn transactions(&self, from: Seq, limit: usize) -> Result<Vec<TxBytes>, StoreError> {
        self.transactions_below(from, self.height().next(), limit)
    }

    /// Up to `limit` durable transactions with `from <= seq < end`, in ascending seq
    /// order. Every seq in the range must be durable.
    pub(super) fn transactions_below(
        &self,
        from: Seq,
        end: Seq,
        limit: usize,
    ) -> Result<Vec<TxBytes>, StoreError> {
        if end <= from {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let records = self
            .db
            .range(keys::transaction_key(from).to_vec()..keys::TRANSACTION_END.to_vec());
        for item in records {
            self.count_read(1);
            let (key, value) = item?;
            for (seq, place) in keys::decode_transaction_run(&key, &value)?.iter() {
                if seq < from {
                    continue;
                }
                if seq >= end || out.len() >= limit {
                    return Ok(out);
                }
                out.push(self.read_transaction(seq, place)?);
            }
        }
        Ok(out)
    }

    /// The Merkle leaves of the transactions `first ..= last`, in seq order, from their
    /// places alone: no transaction's bytes are read (an inclusion proof's cost is its
    /// block's place records, a few per commit). Fewer when not all of them are written.
    pub fn leaves(&self, first: Seq, last: Seq) -> Result<Vec<crate::tx::Hash>, StoreError> {
        if last < first || first == Seq::ZERO {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let records = self
            .db
            .range(keys::transaction_key(first).to_vec()..keys::TRANSACTION_END.to_vec());
        for item in records {
            self.count_read(1);
            let (key, value) = item?;
            for (seq, place) in keys::decode_transaction_run(&key, &value)?.iter() {
                if seq < first {
                    continue;
                }
                if seq > last {
                    return Ok(out);
                }
                out.push(place.leaf);
            }
        }
        Ok(out)
    }

    /// The block whose seal covers `seq`; `None` while no durable seal covers it yet.
    pub fn block_of(&self, seq: Seq) -> Result<Option<BlockNumber>, StoreError> {
        if seq.0 > self.sealed.load(Ordering::Acquire) {
            return Ok(None);
        }
        // Seals cover disjoint ranges in order, so the first one ending at or after `seq`
        // is the only one that can cover it.
        let start = keys::seal_index_key(seq).to_vec();
        match self.db.range(start..vec![SEAL_INDEX + 1]).next() {
            Some(item) => {
                let (key, value) = item?;
                let (number, first, _) = keys::decode_seal_index(&key, &value)?;
                Ok((first <= seq).then_some(number))
            }
            None => Ok(None),
        }
    }

    /// The seal of block `number`.
    pub fn seal(&self, number: BlockNumber) -> Result<Option<SealRecord>, StoreError> {
        let key = keys::seal_key(number);
        match self.db.get(key)? {
            Some(value) => keys::decode_seal(&key, &value).map(Some),
            None => Ok(None),
        }
    }

    /// The seal with the highest block number.
    pub fn last_seal(&self) -> Result<Option<SealRecord>, StoreError> {
        last_seal(&self.db)
    }

    /// Up to `limit` seals from block `from` on, in ascending block order.
    pub fn seals(&self, from: BlockNumber, limit: usize) -> Result<Vec<SealRecord>, StoreError> {
        let lo = keys::seal_key(from).to_vec();
        let mut out = Vec::new();
        for item in self.db.range(lo..vec![SEAL + 1]).take(limit) {
            let (key, value) = item?;
            out.push(keys::decode_seal(&key, &value)?);
        }
        Ok(out)
    }

    /// Makes `batch` durable: [`Store::write`], then [`Store::flush`].
    pub fn commit(&self, batch: &CommitBatch) -> Result<(), StoreError> {
        self.write(batch)?;
        self.flush()?;
        Ok(())
    }

    /// Makes everything written so far durable (sled's flush, `sync_file_range`; and
    /// `fdatasync` with [`SyncMode::Full`]) and returns the durable height.
    /// Writes may go on meanwhile: a flush makes durable at least what was written before
    /// it began, so a writer and a flusher on two threads overlap a batch's writing with
    /// the previous batches' flush.
    pub fn flush(&self) -> Result<Seq, StoreError> {
        self.flush_then(|| ())
    }

    /// [`Store::flush`], running `before_durable` after the flush and before
    /// [`Store::durable_height`] moves: what it records is in place before anyone who
    /// reads the durable height can see the flush.
    pub fn flush_then(&self, before_durable: impl FnOnce()) -> Result<Seq, StoreError> {
        let height = self.height();
        let flush = Instant::now();
        self.db.flush()?;
        if let Some(full) = &self.full_sync {
            full.sync()
                .map_err(|error| StoreError::Sled(format!("full sync of sled's files: {error}")))?;
        }
        self.flush_seconds.observe(flush.elapsed().as_secs_f64());
        before_durable();
        self.durable.fetch_max(height.0, Ordering::AcqRel);
        Ok(height)
    }

    /// Writes `batch`: checks it whole and writes it as one atomic sled batch with the new
    /// height. Reads see it at once; it is durable after the next [`Store::flush`] (sled
    /// recovers a prefix of the batches written, each whole or not at all). A refused
    /// batch writes nothing.
    ///
    /// The batch's transactions must be exactly `height + 1`, `height + 2`, ... Only valid
    /// transactions' writes are applied; every transaction keeps its bytes, and enters the
    /// tx index unless its id is already there (the first record of an id stays). A valid
    /// transaction's id must be new: the validator gives a known id `DUPLICATE_TXID`, and
    /// only invalid records are looked up.
    ///
    /// The batch's seals must continue the stored chain in order: block numbers one after
    /// the other from the last stored seal's (the first seal is block 1), each starting
    /// right after the seq the previous one ends at (block 1 at seq 1), ending at or after
    /// its first seq and at or before the height after this batch.
    pub fn write(&self, batch: &CommitBatch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Err(StoreError::EmptyBatch);
        }
        let mut committer = lock(&self.commit_lock);
        let (tip, file, written) = &mut *committer;
        let height = self.height();
        let mut expected = height.next();
        for tx in &batch.txs {
            if tx.record.seq != expected {
                return Err(StoreError::OutOfOrder {
                    expected,
                    got: tx.record.seq,
                });
            }
            if tx.record.code.is_valid() {
                for set in tx.writes.iter().filter(|set| !set.writes.is_empty()) {
                    keys::check_namespace(&set.namespace)?;
                    for write in &set.writes {
                        keys::check_key(&write.key)?;
                    }
                }
            }
            expected = expected.next();
        }
        let new_height = batch.last_seq().unwrap_or(height);
        let mut new_tip = *tip;
        for seal in &batch.seals {
            new_tip = new_tip.check_next(seal, new_height)?;
        }

        // The bytes first, durable before any record points at them (most were written
        // ahead, see `write_ahead`).
        let mut places: Vec<Option<RecordAt>> = batch
            .txs
            .iter()
            .map(|tx| {
                written
                    .places
                    .get(&tx.record.seq)
                    .filter(|at| at.len as usize == tx.transaction.len())
                    .copied()
            })
            .collect();
        let missing: Vec<usize> = (0..places.len()).filter(|&i| places[i].is_none()).collect();
        if !missing.is_empty() {
            let bytes = missing.iter().map(|&i| &batch.txs[i].transaction[..]);
            let appended = file.append_all(TRANSACTION_RECORD, bytes)?;
            for (i, at) in missing.into_iter().zip(appended) {
                places[i] = Some(at);
            }
            self.transactions.sync()?;
        }
        // `append_all` gives a place for each payload it appends.
        let places: Vec<TxPlace> = places
            .into_iter()
            .flatten()
            .zip(&batch.txs)
            .map(|(at, tx)| TxPlace {
                at,
                timestamp_ms: tx.record.timestamp_ms,
                leaf: tx.leaf,
            })
            .collect();
        assert_eq!(
            places.len(),
            batch.txs.len(),
            "a place for every transaction"
        );
        let new_last = batch.last_seq().unwrap_or(height);
        written.places = written.places.split_off(&new_last.next());

        let mut writes = sled::Batch::default();
        if height == Seq::ZERO {
            // The first commit: the store holds this code's layout from now on.
            writes.insert(FORMAT_KEY, &keys::encode_format(FORMAT)[..]);
        }
        // One record for the places, one for the ids, of all the batch's transactions,
        // each keyed by its last.
        if let Some(first) = batch.txs.first() {
            writes.insert(
                &keys::transaction_key(new_last)[..],
                keys::encode_transaction_run(first.record.seq, &places),
            );
            writes.insert(
                &keys::tx_ids_key(new_last)[..],
                keys::encode_tx_ids(
                    first.record.seq,
                    batch.txs.iter().map(|tx| &tx.record.tx_id),
                ),
            );
        }
        let mut indexed = HashSet::new();
        for BatchTx {
            record,
            writes: sets,
            events,
            transaction,
            leaf: _,
        } in &batch.txs
        {
            let tx_key = keys::tx_key(&record.tx_id);
            // A valid transaction's id is new (stage 2 checks it), so only an invalid one
            // may find its id taken.
            if indexed.insert(record.tx_id)
                && (record.code.is_valid()
                    || !self.keys.may_contain(&tx_key)
                    || !self.db.contains_key(tx_key)?)
            {
                // In the filter before sled holds it (its invariant).
                self.keys.insert(&tx_key);
                writes.insert(&tx_key[..], &keys::encode_tx_record(record)[..]);
            }
            if !record.code.is_valid() {
                continue;
            }
            for set in sets {
                for write in &set.writes {
                    let state_key = keys::state_key(&set.namespace, &write.key);
                    let history_key = keys::history_key(&set.namespace, &write.key, record.seq);
                    let history = if write.is_delete {
                        writes.remove(state_key);
                        HistoryWrite::Delete
                    } else {
                        let place = value_place(transaction, &write.value);
                        let value = match place {
                            Some(at) if write.value.len() >= keys::STATE_POINTER_MIN => {
                                keys::encode_state_value_at(record.seq, at)
                            }
                            _ => keys::encode_state_value(record.seq, &write.value),
                        };
                        self.keys.insert(&state_key);
                        writes.insert(state_key, value);
                        match place {
                            Some(at) => HistoryWrite::PutAt(at),
                            None => HistoryWrite::Put(write.value.clone()),
                        }
                    };
                    let entry = keys::encode_history_value(&record.tx_id, &history);
                    writes.insert(history_key, entry);
                }
            }
            // The validator bounds a transaction's events (`TX_EVENTS_MAX`) far below the
            // u32 indexes a key spells.
            for (index, event) in (0..=u32::MAX).zip(events) {
                // No contract has a name that is not a namespace: nobody can ask for it.
                if check_namespace(&event.contract).is_err() {
                    continue;
                }
                let payload = match value_place(transaction, &event.payload) {
                    Some(at) => EventPayload::At(at),
                    None => EventPayload::Copied(&event.payload),
                };
                writes.insert(
                    keys::event_key(&event.contract, record.seq, index),
                    keys::encode_event_value(&record.tx_id, &event.name, payload),
                );
            }
        }
        for seal in &batch.seals {
            writes.insert(
                &keys::seal_key(seal.number)[..],
                keys::encode_seal_value(seal),
            );
            let index = keys::encode_seal_index(seal);
            writes.insert(&keys::seal_index_key(seal.last)[..], &index[..]);
        }
        // The checks above make the height advance by exactly the batch's transactions.
        assert_eq!(new_height.0 - height.0, batch.txs.len() as u64);
        writes.insert(HEIGHT_KEY, &keys::encode_height(new_height)[..]);
        // The first commit says how every record is laid out, with the first records.
        if height == Seq::ZERO {
            writes.insert(FORMAT_KEY, &keys::encode_format(FORMAT)[..]);
        }

        self.db.apply_batch(writes)?;
        // Readers already see the batch in sled; the height follows it at once.
        self.height.store(new_height.0, Ordering::Release);
        self.sealed.store(new_tip.last.0, Ordering::Release);
        *tip = new_tip;
        Ok(())
    }

    /// Appends the bytes of transactions a coming [`Store::commit`] will hold, and makes
    /// them durable now, so that the commit only writes sled. Nothing points at them
    /// until that commit: a crash before it leaves records that opening the store cuts.
    /// Seqs at or below the height, or written ahead already, are skipped.
    pub fn write_ahead<'a>(
        &self,
        txs: impl IntoIterator<Item = (Seq, &'a [u8])>,
    ) -> Result<(), StoreError> {
        let mut committer = lock(&self.commit_lock);
        let (_, file, written) = &mut *committer;
        let height = self.height();
        let (seqs, bytes): (Vec<Seq>, Vec<&[u8]>) = txs
            .into_iter()
            .filter(|(seq, _)| *seq > height && !written.places.contains_key(seq))
            .unzip();
        if seqs.is_empty() {
            return Ok(());
        }
        let places = file.append_all(TRANSACTION_RECORD, bytes)?;
        written.places.extend(seqs.into_iter().zip(places));
        self.transactions.sync()?;
        Ok(())
    }

    /// A SHA-256 digest of the whole durable state, the height it is of, and the number
    /// of keys: every state record, key and value (version included) with their lengths,
    /// in key order. Two stores at the same height hold the same state exactly when their
    /// digests are equal. Commits wait while it is computed: the ledger's digest
    /// ([`super::WorldState::state_hash`]) reads a snapshot instead, and this one checks it.
    pub fn state_hash(&self) -> Result<(Seq, [u8; 32], u64), StoreError> {
        use sha2::{Digest, Sha256};
        let _committer = lock(&self.commit_lock);
        let mut hasher = Sha256::new();
        let mut count = 0u64;
        for item in self.db.scan_prefix(keys::STATE_PREFIX) {
            let (key, record) = item?;
            // The value as written, wherever the record keeps it: equal states hash equal
            // whichever way their records hold large values.
            let found = self.state_value(&record)?;
            let value = keys::encode_state_value(Seq(found.version.seq), &found.value);
            hasher.update((key.len() as u64).to_be_bytes());
            hasher.update(&key);
            hasher.update((value.len() as u64).to_be_bytes());
            hasher.update(&value);
            count += 1;
        }
        Ok((self.height(), hasher.finalize().into(), count))
    }

    /// The durations of this store's flushes so far, in seconds; the handle
    /// shares the live histogram.
    pub fn flush_seconds(&self) -> Arc<Histogram> {
        self.flush_seconds.clone()
    }

    /// The durable state record under `state_key` (already encoded), decoded.
    pub(super) fn get_state(&self, state_key: &[u8]) -> Result<Option<VersionedValue>, StoreError> {
        if !self.keys.may_contain(state_key) {
            return Ok(None);
        }
        match self.db.get(state_key)? {
            Some(bytes) => self.state_value(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// A lazy iteration over the state records from `lo` (inclusive) to `hi` (exclusive).
    pub(super) fn state_range(&self, lo: Vec<u8>, hi: Vec<u8>) -> sled::Iter {
        self.db.range(lo..hi)
    }
}

/// How the history keeps `value`, written by a transaction whose bytes are `transaction`:
/// a pointer to the same bytes inside the transaction when they are there (a valid
/// transaction's write set always is) and the value is worth it, else a copy. The
/// transaction's bytes are stored once anyway, so a key's history then costs a few bytes
/// a write instead of a second copy of every value.
fn value_place(transaction: &[u8], value: &[u8]) -> Option<ValueAt> {
    if value.len() < keys::HISTORY_POINTER_MIN {
        return None;
    }
    let offset = find_value(transaction, value)?;
    ValueAt::new(u32::try_from(offset).ok()?, value)
}

/// Where `value` first occurs in `transaction`. A value is long (it is looked for only
/// from [`keys::HISTORY_POINTER_MIN`] bytes), and setting up a search for all of it costs
/// more than the search: the places where its first bytes occur are tried first, then,
/// if a few of them were not it (a value of repeated bytes in a transaction full of
/// them), the whole value is searched for.
fn find_value(transaction: &[u8], value: &[u8]) -> Option<usize> {
    const HEAD: usize = 16;
    const TRIES: usize = 8;
    if value.len() > HEAD {
        let head = memchr::memmem::Finder::new(&value[..HEAD]);
        for at in head.find_iter(transaction).take(TRIES) {
            if transaction[at..].starts_with(value) {
                return Some(at);
            }
        }
    }
    memchr::memmem::find(transaction, value)
}

/// Opens the transactions' file and cuts what the last commit appended without
/// recording (a crash between the two): the file then ends with the transaction at
/// `height`.
fn open_transactions(dir: &Path, db: &sled::Db, height: Seq) -> Result<RecordFile, StoreError> {
    let path = dir.join(TRANSACTIONS_FILE);
    if height > Seq::ZERO && !path.exists() {
        return Err(StoreError::corrupt(
            "transaction file",
            format!(
                "{} is missing from a store at height {height} (a store of an older \
                 format, or a damaged one)",
                path.display()
            ),
        ));
    }
    let Opened {
        mut file,
        records,
        torn_at,
    } = RecordFile::open(&path)?;
    if let Some(offset) = torn_at {
        tracing::warn!(
            offset,
            "transaction file ended in a torn record (a crash during a commit); cut it"
        );
    }
    let kept = match db.get(keys::transaction_key(height))? {
        None if height == Seq::ZERO => 0,
        None => {
            return Err(StoreError::corrupt(
                "transaction record",
                format!("the record of seq {height} is missing"),
            ));
        }
        Some(value) => {
            let key = keys::transaction_key(height);
            let place = keys::decode_transaction_run(&key, &value)?
                .place(height)
                .ok_or_else(|| {
                    StoreError::corrupt(
                        "transaction record",
                        format!("the record of seq {height} does not hold it"),
                    )
                })?
                .at;
            records
                .iter()
                .position(|at| *at == place)
                .map(|i| i + 1)
                .ok_or_else(|| {
                    StoreError::corrupt(
                        "transaction file",
                        format!("it lacks the transaction at seq {height}"),
                    )
                })?
        }
    };
    if kept < records.len() {
        file.cut(records[kept].offset - crate::records::HEADER)?;
    }
    Ok(file)
}

/// Refuses a store of another format than [`FORMAT`]. A store that holds records but
/// no format record is of format 1; an empty one takes this code's format with its
/// first commit.
fn check_format(dir: &Path, db: &sled::Db) -> Result<(), StoreError> {
    let found = match db.get(FORMAT_KEY)? {
        Some(bytes) => keys::decode_format(&bytes)?,
        None if db.is_empty() => return Ok(()),
        None => 1,
    };
    if found == FORMAT {
        return Ok(());
    }
    Err(StoreError::Format {
        path: dir.display().to_string(),
        found,
        expected: FORMAT,
    })
}

/// The seal with the highest block number in `db`.
fn last_seal(db: &sled::Db) -> Result<Option<SealRecord>, StoreError> {
    match db.range([SEAL]..[SEAL + 1]).next_back() {
        Some(item) => {
            let (key, value) = item?;
            keys::decode_seal(&key, &value).map(Some)
        }
        None => Ok(None),
    }
}

/// The file whose OS lock marks a directory as held by an open [`Store`].
const LOCK_FILE: &str = "runnel.lock";

/// How long [`Store::open`] waits for sled to release the lock of a store just closed.
const SLED_RELEASE_WAIT: Duration = Duration::from_secs(2);

/// Takes the directory's [`LOCK_FILE`] lock, then opens sled in it.
///
/// A held Runnel lock means another open store, here or in another process:
/// [`StoreError::Locked`] (after [`LOCK_RELEASE_WAIT`]). Holding it, the only store that can still hold
/// sled's own lock is one closed a moment ago: dropping a sled database does not wait
/// for its background threads, whose file handle keeps sled's lock a few milliseconds
/// longer. So an I/O error from sled is retried for [`SLED_RELEASE_WAIT`] before it is
/// reported; a restart of an embedded ledger in one process then never fails at random.
fn open_locked(dir: &Path) -> Result<(sled::Db, File), StoreError> {
    let lock = lock_dir(dir)?;
    let deadline = Instant::now() + SLED_RELEASE_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match sled::Config::new().path(dir).open() {
            Ok(db) => return Ok((db, lock)),
            Err(sled::Error::Io(_)) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// How long a held directory lock is waited for before [`StoreError::Locked`]: a lock
/// dropped a moment ago can still be held by a child process this one is starting. The
/// lock belongs to the open file, and between fork and exec the child holds a copy of
/// every descriptor, close-on-exec ones included, so a store closed then reopened in a
/// process that also starts processes would otherwise fail at random.
const LOCK_RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Creates `dir` if needed and takes Runnel's OS lock on it ([`StoreError::Locked`] when
/// another open store or log holds it for [`LOCK_RELEASE_WAIT`]); the lock lasts as long
/// as the returned file.
pub(crate) fn lock_dir(dir: &Path) -> Result<File, StoreError> {
    std::fs::create_dir_all(dir).map_err(|error| StoreError::Sled(error.to_string()))?;
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .map_err(|error| StoreError::Sled(error.to_string()))?;
    let deadline = Instant::now() + LOCK_RELEASE_WAIT;
    let mut pause = Duration::from_millis(1);
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: dir.display().to_string(),
                });
            }
            Err(TryLockError::Error(error)) => return Err(StoreError::Sled(error.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use runnel_runtime::{ContractEvent, KvWrite, NsRwSet, Version};

    use super::*;
    use crate::ids::ValidationCode;

    fn record(seq: u64, code: ValidationCode) -> TxRecord {
        TxRecord {
            tx_id: TxId::derive(&seq.to_be_bytes(), b"test"),
            seq: Seq(seq),
            code,
            timestamp_ms: 1_000 + seq,
        }
    }

    fn event(contract: &str, name: &str, payload: &[u8]) -> ContractEvent {
        ContractEvent {
            contract: contract.to_string(),
            name: name.to_string(),
            payload: payload.to_vec(),
        }
    }

    fn stored(seq: u64, index: u32, name: &str, payload: &[u8]) -> StoredEvent {
        StoredEvent {
            at: EventAt {
                seq: Seq(seq),
                index,
            },
            tx_id: record(seq, ValidationCode::Valid).tx_id,
            name: name.to_string(),
            payload: payload.to_vec(),
        }
    }

    fn from(seq: u64, index: u32) -> EventAt {
        EventAt {
            seq: Seq(seq),
            index,
        }
    }

    #[test]
    fn a_contracts_events_are_indexed_with_their_commit_and_read_back_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec![b'p'; 300];
        let mut carrying = b"transaction with ".to_vec();
        carrying.extend_from_slice(&big);
        {
            let store = Store::open(dir.path(), SyncMode::Data).unwrap();
            let mut batch = CommitBatch::new();
            // Seq 1: two contracts' events, one payload inside its bytes (a pointer).
            batch.push_tx_with_events(
                record(1, ValidationCode::Valid),
                Vec::new(),
                vec![
                    event("token", "minted", b"10"),
                    event("other", "x", b""),
                    event("token", "big", &big),
                ],
                carrying,
            );
            // Seq 2 is invalid: its events are not the ledger's.
            batch.push_tx_with_events(
                record(2, ValidationCode::MvccReadConflict),
                Vec::new(),
                vec![event("token", "lost", b"")],
                b"tx2".to_vec(),
            );
            // Seq 3: a payload not in its bytes (copied), and a contract no name can be.
            batch.push_tx_with_events(
                record(3, ValidationCode::Valid),
                Vec::new(),
                vec![event("", "nameless", b""), event("token", "copied", &big)],
                b"tx3".to_vec(),
            );
            store.commit(&batch).unwrap();
            let raw = store
                .db
                .get(keys::event_key("token", Seq(1), 2))
                .unwrap()
                .unwrap();
            assert!(raw.len() < 64, "a pointer, not a copy: {} bytes", raw.len());
        }
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let all = vec![
            stored(1, 0, "minted", b"10"),
            stored(1, 2, "big", &big),
            stored(3, 1, "copied", &big),
        ];
        assert_eq!(store.events("token", from(1, 0), Seq(3), 100).unwrap(), all);
        assert_eq!(
            store.events("token", from(0, 0), Seq(3), 2).unwrap(),
            all[..2]
        );
        assert_eq!(
            store.events("token", from(1, 1), Seq(3), 100).unwrap(),
            all[1..]
        );
        assert_eq!(store.events("token", from(1, 3), Seq(2), 100).unwrap(), []);
        assert_eq!(
            store.events("token", from(1, 0), Seq(1), 100).unwrap(),
            all[..2]
        );
        assert_eq!(
            store.events("other", from(1, 0), Seq(3), 100).unwrap(),
            vec![stored(1, 1, "x", b"")]
        );
        assert_eq!(store.events("tok", from(1, 0), Seq(3), 100).unwrap(), []);
        assert_eq!(store.events("token", from(4, 0), Seq(3), 100).unwrap(), []);
        assert!(matches!(
            store.events("", from(1, 0), Seq(3), 100),
            Err(StoreError::BadNamespace(_))
        ));
        // A damaged payload fails its checksum.
        let place = store.transaction_place(Seq(1)).unwrap().unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join(TRANSACTIONS_FILE))
            .unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, b"q", place.at.offset + 100).unwrap();
        assert!(matches!(
            store.events("token", from(1, 0), Seq(3), 100),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_quiet_contracts_events_among_many_transactions_cost_the_reads_they_return() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        // 3,000 transactions of a busy contract; the quiet one emits at seqs 7, 1500 and
        // 2999 only.
        let quiet = [7u64, 1_500, 2_999];
        for first in (1..=3_000u64).step_by(500) {
            let mut batch = CommitBatch::new();
            for seq in first..first + 500 {
                let mut events = vec![event("busy", "tick", &seq.to_be_bytes())];
                if quiet.contains(&seq) {
                    events.push(event("quiet", "rare", &seq.to_be_bytes()));
                }
                batch.push_tx_with_events(
                    record(seq, ValidationCode::Valid),
                    Vec::new(),
                    events,
                    format!("tx{seq}").into_bytes(),
                );
            }
            store.commit(&batch).unwrap();
        }
        let before = store.records_read();
        let found = store
            .events("quiet", from(1, 0), store.height(), 16)
            .unwrap();
        let seqs: Vec<u64> = found.iter().map(|event| event.at.seq.0).collect();
        assert_eq!(seqs, quiet);
        assert!(found.iter().all(|event| event.at.index == 1));
        // One record read per event returned, none for the transactions between them.
        assert_eq!(store.records_read() - before, quiet.len() as u64);
        // A page from the middle on, and a page of one: as many reads as events.
        let before = store.records_read();
        let page = store
            .events("quiet", from(8, 0), store.height(), 1)
            .unwrap();
        assert_eq!(page[0].at.seq, Seq(1_500));
        assert_eq!(store.records_read() - before, 1);
    }

    #[test]
    fn the_ids_of_the_transactions_are_listed_without_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let id = |seq: u64| record(seq, ValidationCode::Valid).tx_id;
        {
            let store = Store::open(dir.path(), SyncMode::Data).unwrap();
            for seqs in [1..=1u64, 2..=5, 6..=8] {
                let mut batch = CommitBatch::new();
                for seq in seqs {
                    batch.push_tx(
                        record(seq, ValidationCode::Valid),
                        Vec::new(),
                        vec![0; 4096],
                    );
                }
                store.commit(&batch).unwrap();
            }
        }
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        for start in 0..=9 {
            for limit in [0, 1, 3, 100] {
                let expected: Vec<(Seq, TxId)> = (start.max(1)..=8)
                    .take(limit)
                    .map(|seq| (Seq(seq), id(seq)))
                    .collect();
                let before = store.records_read();
                assert_eq!(store.tx_ids(Seq(start), limit).unwrap(), expected);
                // A record per commit met, never a transaction's bytes.
                assert!(store.records_read() - before <= 3);
            }
        }
    }

    /// Transaction `seq` as the store gives it back, with [`record`]'s timestamp.
    fn ordered(seq: u64, bytes: &[u8]) -> TxBytes {
        TxBytes {
            seq: Seq(seq),
            timestamp_ms: record(seq, ValidationCode::Valid).timestamp_ms,
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn a_value_is_found_where_it_first_occurs() {
        let value: Vec<u8> = (0..200u8).collect();
        let mut transaction = b"head".to_vec();
        // Its first bytes, many times over, before the value itself (twice).
        for _ in 0..20 {
            transaction.extend_from_slice(&value[..40]);
        }
        let first = transaction.len();
        transaction.extend_from_slice(&value);
        transaction.extend_from_slice(&value);
        assert_eq!(find_value(&transaction, &value), Some(first));
        assert_eq!(find_value(&transaction[..first + 199], &value), None);
        // A value of one repeated byte among more of it: the first place it fits.
        let repeated = vec![b'v'; 100];
        let mut transaction = b"xx".to_vec();
        transaction.extend_from_slice(&[b'v'; 250]);
        assert_eq!(find_value(&transaction, &repeated), Some(2));
        for at in [0, 1, 2, 3, 150, 151, 152] {
            assert_eq!(
                find_value(&transaction[at..], &repeated),
                memchr::memmem::find(&transaction[at..], &repeated)
            );
        }
    }

    fn put(ns: &str, key: &[u8], value: &[u8]) -> NsRwSet {
        NsRwSet {
            namespace: ns.to_string(),
            writes: vec![KvWrite {
                key: key.to_vec(),
                is_delete: false,
                value: value.to_vec(),
            }],
            ..NsRwSet::default()
        }
    }

    #[test]
    fn history_points_at_values_inside_the_transaction_instead_of_copying_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let big = vec![b'x'; 1024];
        let mut carrying = b"header ".to_vec();
        carrying.extend_from_slice(&big);
        carrying.extend_from_slice(b" trailer");
        let mut batch = CommitBatch::new();
        // Seq 1 carries its value in its bytes; seq 2 does not (a copy); seq 3's is small.
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", &big)],
            carrying,
        );
        batch.push_tx(
            record(2, ValidationCode::Valid),
            vec![put("ns", b"k", &[b'y'; 1024])],
            b"opaque".to_vec(),
        );
        batch.push_tx(
            record(3, ValidationCode::Valid),
            vec![put("ns", b"k", b"small")],
            b"small".to_vec(),
        );
        store.commit(&batch).unwrap();
        let raw = |seq: u64| {
            store
                .db
                .get(keys::history_key("ns", b"k", Seq(seq)))
                .unwrap()
                .unwrap()
                .len()
        };
        assert!(raw(1) < 64, "a pointer, not a copy: {} bytes", raw(1));
        assert!(raw(2) > 1024);
        let values: Vec<Option<Vec<u8>>> = store
            .history("ns", b"k", None, 10)
            .unwrap()
            .into_iter()
            .map(|entry| entry.value)
            .collect();
        assert_eq!(
            values,
            vec![Some(b"small".to_vec()), Some(vec![b'y'; 1024]), Some(big)]
        );

        // Only the value's bytes are read: a damaged byte elsewhere in the transaction
        // fails a read of the whole transaction, not of the value. A damaged byte of the
        // value fails its checksum.
        let place = store.transaction_place(Seq(1)).unwrap().unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join(TRANSACTIONS_FILE))
            .unwrap();
        std::os::unix::fs::FileExt::write_all_at(&file, b"H", place.at.offset).unwrap();
        assert!(matches!(
            store.transaction(Seq(1)),
            Err(StoreError::Corrupt { .. })
        ));
        assert_eq!(store.history("ns", b"k", None, 10).unwrap().len(), 3);
        std::os::unix::fs::FileExt::write_all_at(&file, b"z", place.at.offset + 100).unwrap();
        assert!(matches!(
            store.history("ns", b"k", None, 10),
            Err(StoreError::Corrupt { .. })
        ));

        // A pointer past the transaction's end is corruption, not a panic or a short value.
        let id = record(1, ValidationCode::Valid).tx_id;
        let beyond = HistoryWrite::PutAt(ValueAt {
            offset: 10,
            len: 5000,
            crc: 0,
        });
        store
            .db
            .insert(
                keys::history_key("ns", b"k", Seq(1)),
                keys::encode_history_value(&id, &beyond),
            )
            .unwrap();
        assert!(matches!(
            store.history("ns", b"k", None, 10),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn large_state_values_point_into_their_transaction_and_read_back_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let large = vec![b'c'; keys::STATE_POINTER_MIN];
        let mut carrying = b"deploy ".to_vec();
        carrying.extend_from_slice(&large);
        let hash_inline;
        {
            let store = Store::open(dir.path(), SyncMode::Data).unwrap();
            let mut batch = CommitBatch::new();
            // Seq 1's large value is in its bytes (a pointer); seq 2's is not (a copy).
            batch.push_tx(
                record(1, ValidationCode::Valid),
                vec![put("ns", b"code", &large)],
                carrying.clone(),
            );
            batch.push_tx(
                record(2, ValidationCode::Valid),
                vec![put("ns", b"copy", &large)],
                b"opaque".to_vec(),
            );
            store.commit(&batch).unwrap();
            let raw = |key: &[u8]| store.db.get(keys::state_key("ns", key)).unwrap().unwrap();
            assert_eq!(raw(b"code").len(), 20, "a pointer, not a copy");
            assert!(raw(b"copy").len() > large.len());
            let expected = |seq| VersionedValue {
                value: large.clone(),
                version: Version::from_seq(seq),
            };
            assert_eq!(store.get("ns", b"code").unwrap(), Some(expected(1)));
            let scanned = store.scan("ns", b"", None, 10).unwrap();
            assert_eq!(
                scanned,
                vec![
                    (b"code".to_vec(), expected(1)),
                    (b"copy".to_vec(), expected(2))
                ]
            );
            // The state hash is of the values, not of how records hold them: the same
            // state written with both values copied hashes the same.
            hash_inline = {
                let other = tempfile::tempdir().unwrap();
                let copy = Store::open(other.path(), SyncMode::Data).unwrap();
                let mut batch = CommitBatch::new();
                batch.push_tx(
                    record(1, ValidationCode::Valid),
                    vec![put("ns", b"code", &large)],
                    b"opaque".to_vec(),
                );
                batch.push_tx(
                    record(2, ValidationCode::Valid),
                    vec![put("ns", b"copy", &large)],
                    b"opaque".to_vec(),
                );
                copy.commit(&batch).unwrap();
                copy.state_hash().unwrap()
            };
            assert_eq!(store.state_hash().unwrap(), hash_inline);
        }
        // After a reopen the pointer still finds the value in the transactions' file.
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!(store.get("ns", b"code").unwrap().unwrap().value, large);
        assert_eq!(store.state_hash().unwrap(), hash_inline);
        // A pointer past its transaction's end is corruption, not a short value.
        store
            .db
            .insert(
                keys::state_key("ns", b"code"),
                keys::encode_state_value_at(
                    Seq(1),
                    ValueAt {
                        offset: 10,
                        len: 1 << 20,
                        crc: 0,
                    },
                ),
            )
            .unwrap();
        assert!(matches!(
            store.get("ns", b"code"),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_write_is_read_at_once_and_durable_after_the_next_flush_which_a_reopen_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", b"v1")],
            b"tx1".to_vec(),
        );
        store.write(&batch).unwrap();
        assert_eq!(store.height(), Seq(1));
        assert_eq!(store.durable_height(), Seq::ZERO);
        assert!(store.get("ns", b"k").unwrap().is_some());
        // The next batch may be written while nothing is durable yet.
        let mut next = CommitBatch::new();
        next.push_tx(
            record(2, ValidationCode::Valid),
            vec![put("ns", b"k", b"v2")],
            b"tx2".to_vec(),
        );
        store.write(&next).unwrap();
        assert_eq!(store.flush().unwrap(), Seq(2));
        assert_eq!(store.durable_height(), Seq(2));
        drop(store);
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!((store.height(), store.durable_height()), (Seq(2), Seq(2)));
        assert_eq!(
            store.get("ns", b"k").unwrap().unwrap().value,
            b"v2".to_vec()
        );
    }

    #[test]
    fn a_full_sync_store_syncs_sleds_files_and_every_new_blob_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Full).unwrap();
        let full = store.full_sync.as_ref().expect("full syncs");
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", b"v1")],
            b"tx1".to_vec(),
        );
        store.write(&batch).unwrap();
        // A blob sled wrote (it syncs none of them itself) is synced by the next flush.
        std::fs::create_dir_all(dir.path().join(SLED_BLOBS_DIR)).unwrap();
        std::fs::write(dir.path().join(SLED_BLOBS_DIR).join("7"), b"blob").unwrap();
        assert_eq!(store.flush().unwrap(), Seq(1));
        let synced: Vec<OsString> = lock(&full.synced_blobs).iter().cloned().collect();
        assert_eq!(synced, [OsString::from("7")]);
        // Once sled has collected it, it is forgotten.
        std::fs::remove_file(dir.path().join(SLED_BLOBS_DIR).join("7")).unwrap();
        store.flush().unwrap();
        assert!(lock(&full.synced_blobs).is_empty());
        drop(store);
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert!(store.full_sync.is_none());
        assert_eq!(
            store.get("ns", b"k").unwrap().unwrap().value,
            b"v1".to_vec()
        );
    }

    #[test]
    fn transactions_read_back_one_by_one_and_in_pages_across_commits_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let bytes = |seq: u64| format!("transaction {seq}").into_bytes();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        // Commits of 1, 4 and 3 transactions: one record each.
        for seqs in [1..=1u64, 2..=5, 6..=8] {
            let mut batch = CommitBatch::new();
            for seq in seqs {
                batch.push_tx(record(seq, ValidationCode::Valid), Vec::new(), bytes(seq));
            }
            store.commit(&batch).unwrap();
        }
        let check = |store: &Store| {
            assert_eq!(store.transaction(Seq::ZERO).unwrap(), None);
            assert_eq!(store.transaction(Seq(9)).unwrap(), None);
            for seq in 1..=8 {
                assert_eq!(
                    store.transaction(Seq(seq)).unwrap(),
                    Some(ordered(seq, &bytes(seq)))
                );
            }
            for from in 0..=9 {
                for limit in [1, 2, 5, 100] {
                    let expected: Vec<TxBytes> = (from.max(1)..=8)
                        .take(limit)
                        .map(|seq| ordered(seq, &bytes(seq)))
                        .collect();
                    assert_eq!(
                        store.transactions(Seq(from), limit).unwrap(),
                        expected,
                        "from {from}, limit {limit}"
                    );
                }
            }
            assert_eq!(
                store.transactions_below(Seq(3), Seq(7), 100).unwrap(),
                (3..7)
                    .map(|seq| ordered(seq, &bytes(seq)))
                    .collect::<Vec<_>>()
            );
        };
        check(&store);
        drop(store);
        check(&Store::open(dir.path(), SyncMode::Data).unwrap());
    }

    #[test]
    fn the_key_filter_never_hides_a_record_written_before_or_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let commit = |store: &Store, seqs: std::ops::RangeInclusive<u64>| {
            let mut batch = CommitBatch::new();
            for seq in seqs {
                let key = format!("k{seq}");
                batch.push_tx(
                    record(seq, ValidationCode::Valid),
                    vec![put("ns", key.as_bytes(), b"v")],
                    format!("tx{seq}").into_bytes(),
                );
            }
            store.commit(&batch).unwrap();
        };
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        commit(&store, 1..=300);
        drop(store);
        let mut store = Store::open(dir.path(), SyncMode::Data).unwrap();
        // Written while the loader may still be reading what the store held at open.
        commit(&store, 301..=400);
        store._keys_loader.wait();
        assert!(store.keys.is_loaded());
        commit(&store, 401..=500);
        for seq in 1..=500 {
            let expected = record(seq, ValidationCode::Valid);
            assert_eq!(store.tx(&expected.tx_id).unwrap(), Some(expected));
            let key = format!("k{seq}");
            assert!(store.get("ns", key.as_bytes()).unwrap().is_some(), "{key}");
        }
        for seq in 501..=1_000 {
            assert_eq!(
                store.tx(&record(seq, ValidationCode::Valid).tx_id).unwrap(),
                None
            );
            assert_eq!(store.get("ns", format!("k{seq}").as_bytes()).unwrap(), None);
        }
        // Most absent keys are answered without sled: the filter says so itself.
        let maybe = (501..=1_000)
            .filter(|seq| {
                store
                    .keys
                    .may_contain(&keys::tx_key(&record(*seq, ValidationCode::Valid).tx_id))
            })
            .count();
        assert!(maybe < 50, "{maybe} of 500 absent ids needed a sled read");
    }

    #[test]
    fn every_seq_keeps_the_orderers_timestamp_beside_its_bytes_a_duplicate_id_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let first = record(1, ValidationCode::Valid);
        // Seq 3 repeats seq 1's id, ordered later: the tx index keeps seq 1's record.
        let duplicate = TxRecord {
            seq: Seq(3),
            code: ValidationCode::DuplicateTxid,
            timestamp_ms: 9_000,
            ..first.clone()
        };
        let mut batch = CommitBatch::new();
        batch.push_tx(first.clone(), Vec::new(), b"tx1".to_vec());
        batch.push_tx(
            record(2, ValidationCode::Valid),
            Vec::new(),
            b"tx2".to_vec(),
        );
        batch.push_tx(duplicate, Vec::new(), b"tx1".to_vec());
        store.commit(&batch).unwrap();
        // A commit of one transaction is stored in a record of its own kind.
        let mut one = CommitBatch::new();
        one.push_tx(
            record(4, ValidationCode::Valid),
            Vec::new(),
            b"tx4".to_vec(),
        );
        store.commit(&one).unwrap();
        let expected = |seq: u64, timestamp_ms: u64, bytes: &[u8]| TxBytes {
            seq: Seq(seq),
            timestamp_ms,
            bytes: bytes.to_vec(),
        };
        let all = vec![
            expected(1, 1_001, b"tx1"),
            expected(2, 1_002, b"tx2"),
            expected(3, 9_000, b"tx1"),
            expected(4, 1_004, b"tx4"),
        ];
        let check = |store: &Store| {
            assert_eq!(store.transactions(Seq(1), 100).unwrap(), all);
            for tx in &all {
                assert_eq!(store.transaction(tx.seq).unwrap().as_ref(), Some(tx));
            }
            assert_eq!(store.tx(&first.tx_id).unwrap(), Some(first.clone()));
        };
        check(&store);
        drop(store);
        check(&Store::open(dir.path(), SyncMode::Data).unwrap());
    }

    #[test]
    fn a_store_of_another_format_is_refused_at_open_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        // A store never committed to has no format yet, and opens.
        drop(Store::open(dir.path(), SyncMode::Data).unwrap());
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", b"v")],
            b"tx1".to_vec(),
        );
        store.commit(&batch).unwrap();
        assert_eq!(
            store.db.get(FORMAT_KEY).unwrap().as_deref(),
            Some(&keys::encode_format(FORMAT)[..])
        );
        // An older Runnel's store: records and no format record (format 1).
        store.db.remove(FORMAT_KEY).unwrap();
        store.db.flush().unwrap();
        drop(store);
        let path = dir.path().display().to_string();
        for _ in 0..2 {
            let error = Store::open(dir.path(), SyncMode::Data).unwrap_err();
            assert_eq!(
                error,
                StoreError::Format {
                    path: path.clone(),
                    found: 1,
                    expected: FORMAT,
                }
            );
            let message = error.to_string();
            assert!(message.contains("of format 1"), "{message}");
            assert!(message.contains("empty directory"), "{message}");
            assert!(message.contains("move the directory away"), "{message}");
        }
        // Nothing was written by the refusals; a newer Runnel's format is refused too.
        {
            let db = sled::Config::new().path(dir.path()).open().unwrap();
            assert_eq!(db.get(FORMAT_KEY).unwrap(), None);
            db.insert(FORMAT_KEY, &keys::encode_format(FORMAT + 1)[..])
                .unwrap();
            db.flush().unwrap();
        }
        let error = Store::open(dir.path(), SyncMode::Data).unwrap_err();
        assert!(
            matches!(error, StoreError::Format { found, .. } if found == FORMAT + 1),
            "{error}"
        );
        assert!(error.to_string().contains("newer Runnel"), "{error}");
        // A format record that does not decode is corruption.
        {
            let db = sled::Config::new().path(dir.path()).open().unwrap();
            db.insert(FORMAT_KEY, &b"v2"[..]).unwrap();
            db.flush().unwrap();
        }
        assert!(matches!(
            Store::open(dir.path(), SyncMode::Data),
            Err(StoreError::Corrupt { what: "format", .. })
        ));
    }

    #[test]
    fn commit_writes_state_history_index_seal_and_height_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!(store.height(), Seq::ZERO);
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", b"v1")],
            b"tx1".to_vec(),
        );
        batch.push_tx(
            record(2, ValidationCode::MvccReadConflict),
            vec![put("ns", b"k", b"ignored")],
            b"tx2".to_vec(),
        );
        let seal = SealRecord {
            number: BlockNumber(1),
            first: Seq(1),
            last: Seq(2),
            bytes: b"seal1".to_vec(),
        };
        batch.push_seal(seal.clone());
        store.commit(&batch).unwrap();
        assert_eq!(store.height(), Seq(2));
        let value = store.get("ns", b"k").unwrap().unwrap();
        assert_eq!(
            (value.value.as_slice(), value.version),
            (&b"v1"[..], Version::from_seq(1))
        );
        assert_eq!(store.history("ns", b"k", None, 10).unwrap().len(), 1);
        let invalid = record(2, ValidationCode::MvccReadConflict);
        assert_eq!(store.tx(&invalid.tx_id).unwrap(), Some(invalid));
        assert_eq!(store.seal(BlockNumber(1)).unwrap(), Some(seal.clone()));
        assert_eq!(store.last_seal().unwrap(), Some(seal));
        assert_eq!(store.transaction(Seq(2)).unwrap(), Some(ordered(2, b"tx2")));
        assert_eq!(store.block_of(Seq(2)).unwrap(), Some(BlockNumber(1)));
        assert_eq!(store.block_of(Seq(3)).unwrap(), None);
        // Reopened, the store knows again how far the seals reach.
        drop(store);
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!(store.block_of(Seq(1)).unwrap(), Some(BlockNumber(1)));
        assert_eq!(store.block_of(Seq(3)).unwrap(), None);
    }

    #[test]
    fn bytes_appended_by_a_commit_that_never_landed_are_cut_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            Vec::new(),
            b"tx1".to_vec(),
        );
        store.commit(&batch).unwrap();
        drop(store);
        // A crash after the file's sync, before sled's batch: a record nothing points at.
        let path = dir.path().join(TRANSACTIONS_FILE);
        let mut file = RecordFile::open(&path).unwrap().file;
        file.append(TRANSACTION_RECORD, b"tx2, never committed")
            .unwrap();
        file.handle(SyncMode::Data).unwrap().sync().unwrap();
        drop(file);
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!(store.height(), Seq(1));
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(2, ValidationCode::Valid),
            Vec::new(),
            b"tx2".to_vec(),
        );
        store.commit(&batch).unwrap();
        let all = store.transactions(Seq(1), 10).unwrap();
        assert_eq!(all, vec![ordered(1, b"tx1"), ordered(2, b"tx2")]);
        drop(store);
        assert_eq!(RecordFile::open(&path).unwrap().records.len(), 2);
    }

    #[test]
    fn bytes_written_ahead_are_the_ones_the_commit_points_at() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        store
            .write_ahead([(Seq(1), &b"tx1"[..]), (Seq(2), &b"tx2"[..])])
            .unwrap();
        // Again, or for a committed seq: nothing more is written.
        store.write_ahead([(Seq(1), &b"tx1"[..])]).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            Vec::new(),
            b"tx1".to_vec(),
        );
        store.commit(&batch).unwrap();
        store.write_ahead([(Seq(1), &b"tx1"[..])]).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(2, ValidationCode::Valid),
            Vec::new(),
            b"tx2".to_vec(),
        );
        batch.push_tx(
            record(3, ValidationCode::Valid),
            Vec::new(),
            b"tx3".to_vec(),
        );
        store.commit(&batch).unwrap();
        assert_eq!(
            store.transactions(Seq(1), 10).unwrap(),
            vec![ordered(1, b"tx1"), ordered(2, b"tx2"), ordered(3, b"tx3")]
        );
        drop(store);
        let path = dir.path().join(TRANSACTIONS_FILE);
        assert_eq!(RecordFile::open(&path).unwrap().records.len(), 3);
    }

    #[test]
    fn the_first_record_of_a_tx_id_stays() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let original = record(1, ValidationCode::Valid);
        let mut duplicate = record(2, ValidationCode::DuplicateTxid);
        duplicate.tx_id = original.tx_id;
        let mut batch = CommitBatch::new();
        batch.push_tx(original.clone(), Vec::new(), Vec::new());
        batch.push_tx(duplicate.clone(), Vec::new(), Vec::new());
        store.commit(&batch).unwrap();
        let mut batch = CommitBatch::new();
        duplicate.seq = Seq(3);
        batch.push_tx(duplicate, Vec::new(), Vec::new());
        store.commit(&batch).unwrap();
        assert_eq!(store.tx(&original.tx_id).unwrap(), Some(original));
    }

    #[test]
    fn a_corrupt_record_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        // Written past the store's commit, so into its key filter by hand.
        for key in [
            keys::state_key("ns", b"k"),
            keys::tx_key(&TxId([1; 32])).to_vec(),
        ] {
            store.keys.insert(&key);
            store.db.insert(key, &b"bad"[..]).unwrap();
        }
        assert!(matches!(
            store.get("ns", b"k"),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(matches!(
            store.scan("ns", b"", None, 10),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(matches!(
            store.tx(&TxId([1; 32])),
            Err(StoreError::Corrupt { .. })
        ));
        store
            .db
            .insert(keys::seal_index_key(Seq(5)), &b"bad"[..])
            .unwrap();
        // As the commit of a seal through seq 5 leaves it.
        store.sealed.store(5, Ordering::Release);
        assert!(matches!(
            store.block_of(Seq(3)),
            Err(StoreError::Corrupt { .. })
        ));
        store
            .db
            .insert(keys::transaction_key(Seq(0)), &b"tx"[..])
            .unwrap();
        assert!(matches!(
            store.transactions(Seq::ZERO, 10),
            Err(StoreError::Corrupt { .. })
        ));
        store
            .db
            .insert(keys::seal_key(BlockNumber(1)), &b"bad"[..])
            .unwrap();
        assert!(matches!(
            store.seal(BlockNumber(1)),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(matches!(store.last_seal(), Err(StoreError::Corrupt { .. })));
        assert!(matches!(
            store.seals(BlockNumber(0), 10),
            Err(StoreError::Corrupt { .. })
        ));
        store.db.flush().unwrap();
        drop(store);
        // No height record but other records: refused at open.
        assert!(matches!(
            Store::open(dir.path(), SyncMode::Data),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_seal_beyond_the_height_is_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        let mut batch = CommitBatch::new();
        batch.push_tx(record(1, ValidationCode::Valid), Vec::new(), Vec::new());
        store.commit(&batch).unwrap();
        let seal = SealRecord {
            number: BlockNumber(1),
            first: Seq(1),
            last: Seq(2),
            bytes: Vec::new(),
        };
        store
            .db
            .insert(keys::seal_key(seal.number), keys::encode_seal_value(&seal))
            .unwrap();
        store.db.flush().unwrap();
        drop(store);
        assert!(matches!(
            Store::open(dir.path(), SyncMode::Data),
            Err(StoreError::Corrupt { what: "seal", .. })
        ));
    }

    #[test]
    fn a_directory_opens_once_and_reopens_at_once_after_close() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert!(matches!(
            Store::open(dir.path(), SyncMode::Data),
            Err(StoreError::Locked { .. })
        ));
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1, ValidationCode::Valid),
            vec![put("ns", b"k", b"v")],
            Vec::new(),
        );
        store.commit(&batch).unwrap();
        // Close and reopen in a tight loop: sled's lock outlives its handle briefly.
        drop(store);
        for _ in 0..20 {
            let store = Store::open(dir.path(), SyncMode::Data).unwrap();
            assert_eq!(store.height(), Seq(1));
        }
    }
}
