//! [`WorldState`]: the durable store plus the staged overlay, read through [`Snapshot`]s.

use std::cmp::Ordering as KeyOrder;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use runnel_runtime::{ContractEvent, NsRwSet, StateError, StateView, VersionedValue};

use super::digest::{DigestCache, StateHash};
use super::overlay::{Chain, Overlay};
use super::{
    BatchTx, CommitBatch, SealRecord, Store, StoreError, TxBytes, TxRecord, keys, lock, read, write,
};
use crate::ids::{Seq, TxId};
use crate::records::SyncMode;

/// A staged transaction, kept until the commit that makes it durable returns.
#[derive(Debug)]
struct StagedTx {
    /// Its record.
    record: TxRecord,
    /// Its writes (namespace and writes only; none for an invalid transaction). Lent to
    /// the commit batch while a commit runs.
    writes: Vec<NsRwSet>,
    /// Its contract events (none for an invalid transaction), lent likewise.
    events: Vec<ContractEvent>,
    /// Its bytes as ordered, shared with the commit batch while a commit runs.
    transaction: Arc<Vec<u8>>,
    /// Its Merkle leaf (bytes with timestamp), stored beside its place for proofs.
    leaf: crate::tx::Hash,
}

impl StagedTx {
    /// Its bytes with its place and the orderer's timestamp, as the store gives them.
    fn bytes(&self) -> TxBytes {
        TxBytes {
            seq: self.record.seq,
            timestamp_ms: self.record.timestamp_ms,
            bytes: self.transaction.to_vec(),
        }
    }
}

/// Staged transactions not yet durable, or whose commit has not returned yet.
#[derive(Debug, Default)]
struct StagedTxs {
    /// By seq, for [`WorldState::commit_staged`] and [`WorldState::transaction`]. A
    /// transaction leaves only once the commit that makes it durable has returned.
    by_seq: BTreeMap<u64, StagedTx>,
    /// By id, for [`WorldState::tx`]: the first record of each id not yet durable.
    by_id: HashMap<TxId, TxRecord>,
}

/// What a [`WorldState`] and its snapshots share.
struct Inner {
    /// The durable state.
    store: Store,
    /// Chains of the keys written by staged transactions (and of keys a live snapshot
    /// still needs an older version of).
    overlay: RwLock<Overlay>,
    /// Staged transactions not yet durable (or whose commit has not returned yet).
    txs: RwLock<StagedTxs>,
    /// The last staged seq. Published after the transaction's writes are in the overlay.
    staged_height: AtomicU64,
    /// Heights of live snapshots, with how many snapshots hold each. A snapshot takes its
    /// height under this lock, so pruning never misses one.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Serialises [`WorldState::stage`]: chains are created only there.
    stage_lock: Mutex<()>,
    /// Serialises [`WorldState::commit_staged`].
    commit_lock: Mutex<()>,
    /// Durable records of system-namespace keys that have no chain (see
    /// [`Inner::durable_record`]).
    system_records: Mutex<HashMap<Vec<u8>, Option<VersionedValue>>>,
    /// The last digest of the state ([`WorldState::state_hash`]).
    digests: DigestCache,
}

/// The most system-namespace records [`Inner::durable_record`] keeps (it starts again
/// when full), and the largest value it keeps (code records are read once per compile).
const SYSTEM_RECORDS_MAX: usize = 1024;
const SYSTEM_RECORD_BYTES_MAX: usize = 64 * 1024;

impl Inner {
    /// The durable record under `state_key`, a key the caller found without a chain in
    /// `overlay`, whose lock (read or write) it holds: no chain can appear meanwhile, so
    /// sled's record is the key's latest. System-namespace records (`_lifecycle`: every
    /// endorsement and every validation reads its contract's definition) are kept in
    /// memory: [`WorldState::stage`] forgets one when it gives the key a chain, and one is
    /// read back only once the chain is pruned, when sled holds its newest version.
    fn durable_record(
        &self,
        _overlay: &Overlay,
        state_key: &[u8],
    ) -> Result<Option<VersionedValue>, StoreError> {
        if !keys::is_system_state_key(state_key) {
            return self.store.get_state(state_key);
        }
        if let Some(found) = lock(&self.system_records).get(state_key) {
            return Ok(found.clone());
        }
        let found = self.store.get_state(state_key)?;
        if found
            .as_ref()
            .is_none_or(|found| found.value.len() <= SYSTEM_RECORD_BYTES_MAX)
        {
            let mut kept = lock(&self.system_records);
            if kept.len() >= SYSTEM_RECORDS_MAX {
                kept.clear();
            }
            kept.insert(state_key.to_vec(), found.clone());
        }
        Ok(found)
    }
}

/// Durable state plus the staged overlay: what endorsers and the validator read.
///
/// One thread at a time stages and one at a time commits (each is serialised anyway);
/// any number of threads read through snapshots meanwhile.
pub struct WorldState {
    /// Shared with every snapshot, which may outlive this handle.
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WorldState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldState")
            .field("durable_height", &self.durable_height())
            .field("staged_height", &self.staged_height())
            .finish_non_exhaustive()
    }
}

impl WorldState {
    /// Opens (creating if needed) the store in directory `dir`, with nothing staged, its
    /// flushes syncing as `sync` says.
    pub fn open(dir: &Path, sync: SyncMode) -> Result<WorldState, StoreError> {
        let store = Store::open(dir, sync)?;
        let height = store.height().0;
        Ok(WorldState {
            inner: Arc::new(Inner {
                store,
                overlay: RwLock::new(Overlay::default()),
                txs: RwLock::new(StagedTxs::default()),
                staged_height: AtomicU64::new(height),
                snapshots: Mutex::new(BTreeMap::new()),
                stage_lock: Mutex::new(()),
                commit_lock: Mutex::new(()),
                system_records: Mutex::new(HashMap::new()),
                digests: DigestCache::default(),
            }),
        })
    }

    /// The durable store underneath (commit through [`WorldState::commit_staged`] only).
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The last staged seq (`>=` the durable height).
    pub fn staged_height(&self) -> Seq {
        Seq(self.inner.staged_height.load(Ordering::Acquire))
    }

    /// The last durable seq.
    pub fn durable_height(&self) -> Seq {
        self.inner.store.durable_height()
    }

    /// The last seq written to the store, durable or not yet
    /// ([`WorldState::write_staged`]); staged transactions follow it.
    pub fn written_height(&self) -> Seq {
        self.inner.store.height()
    }

    /// Stages the transaction `record` with its `writes` and its bytes as ordered
    /// (`transaction`): new snapshots see it at once, and [`WorldState::transaction`]
    /// answers with the bytes. `record.seq` must be `staged_height + 1`. Only a valid
    /// transaction's writes (the `writes` of each [`NsRwSet`]) apply; an invalid one keeps
    /// its record and bytes only. A refused transaction changes nothing.
    ///
    /// A valid transaction's id must be new, staged or durable, as stage 2 checks just
    /// before (the id index keeps the first transaction of an id).
    pub fn stage(
        &self,
        record: TxRecord,
        writes: &[NsRwSet],
        transaction: Vec<u8>,
    ) -> Result<(), StoreError> {
        self.stage_with_events(record, writes, Vec::new(), transaction)
    }

    /// [`WorldState::stage`] for a transaction that emitted `events`, in its order: a
    /// valid transaction's go into the store's event index with its commit
    /// ([`Store::events`]).
    pub fn stage_with_events(
        &self,
        record: TxRecord,
        writes: &[NsRwSet],
        events: Vec<ContractEvent>,
        transaction: Vec<u8>,
    ) -> Result<(), StoreError> {
        let leaf = crate::block::leaf(record.timestamp_ms, &transaction);
        self.stage_ordered(record, writes, events, transaction, leaf)
    }

    /// [`WorldState::stage_with_events`] with the transaction's Merkle leaf already
    /// computed (the validator has it from stage 1): `leaf` must be
    /// [`crate::block::leaf`] of `record.timestamp_ms` and `transaction`.
    pub fn stage_ordered(
        &self,
        record: TxRecord,
        writes: &[NsRwSet],
        events: Vec<ContractEvent>,
        transaction: Vec<u8>,
        leaf: crate::tx::Hash,
    ) -> Result<(), StoreError> {
        debug_assert_eq!(leaf, crate::block::leaf(record.timestamp_ms, &transaction));
        let inner = &*self.inner;
        let _stage = lock(&inner.stage_lock);
        let expected = self.staged_height().next();
        if record.seq != expected {
            return Err(StoreError::OutOfOrder {
                expected,
                got: record.seq,
            });
        }
        let seq = record.seq;
        let kept: Vec<NsRwSet> = if record.code.is_valid() {
            writes
                .iter()
                .filter(|set| !set.writes.is_empty())
                .map(|set| NsRwSet {
                    namespace: set.namespace.clone(),
                    writes: set.writes.clone(),
                    ..NsRwSet::default()
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut updates = Vec::new();
        for set in &kept {
            keys::check_namespace(&set.namespace)?;
            for write in &set.writes {
                keys::check_key(&write.key)?;
                let value = (!write.is_delete).then(|| write.value.clone());
                updates.push((keys::state_key(&set.namespace, &write.key), value));
            }
        }

        // Bases of keys without a chain, read before taking the write lock so readers
        // wait less. With no chain, a key has no pending write and only this (serialised)
        // function creates chains, so the value read stays the key's durable value.
        let missing: Vec<&[u8]> = {
            let overlay = read(&inner.overlay);
            updates
                .iter()
                .map(|(key, _)| key.as_slice())
                .filter(|key| !overlay.contains(key))
                .collect()
        };
        let mut bases = HashMap::with_capacity(missing.len());
        for key in missing {
            bases.insert(key.to_vec(), self.durable_base(key)?);
        }
        let first_of_id = record.code.is_valid()
            || (!read(&inner.txs).by_id.contains_key(&record.tx_id)
                && inner.store.tx(&record.tx_id)?.is_none());

        {
            let mut overlay = write(&inner.overlay);
            // A prune may have dropped a chain since: its base is then what sled holds.
            // Read those first, so that nothing changes unless everything can.
            for (key, _) in &updates {
                if !overlay.contains(key) && !bases.contains_key(key) {
                    bases.insert(key.clone(), self.durable_base(key)?);
                }
            }
            for (key, value) in updates {
                if keys::is_system_state_key(&key) {
                    lock(&inner.system_records).remove(&key);
                }
                let base = bases.remove(&key);
                let chain = overlay.chain_or_insert(key, || {
                    base.unwrap_or_else(|| Chain::with_base(Seq::ZERO, None))
                });
                chain.push(seq, value);
            }
        }
        {
            let mut txs = write(&inner.txs);
            if first_of_id {
                txs.by_id.insert(record.tx_id, record.clone());
            }
            txs.by_seq.insert(
                seq.0,
                StagedTx {
                    events: if record.code.is_valid() {
                        events
                    } else {
                        Vec::new()
                    },
                    record,
                    writes: kept,
                    transaction: Arc::new(transaction),
                    leaf,
                },
            );
        }
        // Last: a snapshot at this height finds every write of the transaction.
        inner.staged_height.store(seq.0, Ordering::Release);
        Ok(())
    }

    /// Writes the bytes of the staged transactions up to `through` ahead of their commit
    /// ([`Store::write_ahead`]): a caller waiting for something else before it commits
    /// (the orderer's durability) spends that wait on the bytes' sync.
    pub fn write_ahead(&self, through: Seq) -> Result<(), StoreError> {
        let inner = &*self.inner;
        let written = self.written_height();
        let bytes: Vec<(Seq, Arc<Vec<u8>>)> = read(&inner.txs)
            .by_seq
            .range(written.0 + 1..=through.0)
            .map(|(seq, staged)| (Seq(*seq), Arc::clone(&staged.transaction)))
            .collect();
        inner
            .store
            .write_ahead(bytes.iter().map(|(seq, b)| (*seq, b.as_slice())))
    }

    /// Makes the staged transactions `written_height + 1 ..= through` durable, with
    /// `seals`: [`WorldState::write_staged`], then [`WorldState::flush`].
    pub fn commit_staged(&self, through: Seq, seals: Vec<SealRecord>) -> Result<(), StoreError> {
        self.write_staged(through, seals)?;
        self.flush()?;
        Ok(())
    }

    /// Makes everything written durable ([`Store::flush`]) and returns the durable height.
    /// May run on another thread than [`WorldState::write_staged`], overlapping them.
    pub fn flush(&self) -> Result<Seq, StoreError> {
        self.inner.store.flush()
    }

    /// [`WorldState::flush`], running `before_durable` before the durable height moves
    /// ([`Store::flush_then`]).
    pub fn flush_then(&self, before_durable: impl FnOnce()) -> Result<Seq, StoreError> {
        self.inner.store.flush_then(before_durable)
    }

    /// Writes the staged transactions `written_height + 1 ..= through`, with `seals` (in
    /// chain order, as [`Store::write`] checks them), to the store in one
    /// [`Store::write`], then prunes the overlay: reads find them in the store at once;
    /// they are durable after the next [`WorldState::flush`]. With nothing to write
    /// (`through` is the written height and no seals), only prunes. A refused write leaves
    /// everything staged as it was.
    pub fn write_staged(&self, through: Seq, seals: Vec<SealRecord>) -> Result<(), StoreError> {
        let inner = &*self.inner;
        let _commit = lock(&inner.commit_lock);
        let written = self.written_height();
        let staged = self.staged_height();
        if through < written || through > staged {
            return Err(StoreError::CommitRange {
                through,
                written,
                staged,
            });
        }
        if through == written && seals.is_empty() {
            self.prune();
            return Ok(());
        }

        let mut batch = CommitBatch::new();
        {
            // The records stay staged (their writes lent to the batch) until the commit
            // returns, so `transaction` finds every seq in one place or the other.
            let mut txs = write(&inner.txs);
            // Staged seqs are contiguous and only commits remove them, oldest first.
            assert!(
                txs.by_seq
                    .range(..=through.0)
                    .map(|(seq, _)| *seq)
                    .eq(written.0 + 1..=through.0),
                "staged transactions do not run from the written height to {through}"
            );
            for (_, staged_tx) in txs.by_seq.range_mut(..=through.0) {
                batch.push_shared(
                    staged_tx.record.clone(),
                    std::mem::take(&mut staged_tx.writes),
                    std::mem::take(&mut staged_tx.events),
                    Arc::clone(&staged_tx.transaction),
                    staged_tx.leaf,
                );
            }
        }
        for seal in seals {
            batch.push_seal(seal);
        }
        if let Err(error) = inner.store.write(&batch) {
            // Give the writes back, so a retry commits the same transactions.
            let mut txs = write(&inner.txs);
            for tx in batch.txs {
                if let Some(staged_tx) = txs.by_seq.get_mut(&tx.record.seq.0) {
                    staged_tx.writes = tx.writes;
                    staged_tx.events = tx.events;
                }
            }
            return Err(error);
        }
        {
            // Written now: `Store::tx` and `Store::transaction` answer for them.
            let mut txs = write(&inner.txs);
            let rest = txs.by_seq.split_off(&(through.0 + 1));
            txs.by_seq = rest;
            for BatchTx { record, .. } in &batch.txs {
                if txs
                    .by_id
                    .get(&record.tx_id)
                    .is_some_and(|r| r.seq == record.seq)
                {
                    txs.by_id.remove(&record.tx_id);
                }
            }
        }
        self.prune();
        Ok(())
    }

    /// A consistent view at the current staged height.
    pub fn snapshot(&self) -> Snapshot {
        let mut live = lock(&self.inner.snapshots);
        // Taken under the registry lock: a prune reads the registry either before (and
        // then the durable height it prunes to is <= this height) or after this insert.
        let height = self.inner.staged_height.load(Ordering::Acquire);
        *live.entry(height).or_insert(0) += 1;
        drop(live);
        Snapshot {
            shared: Arc::new(SnapshotInner {
                world: Arc::clone(&self.inner),
                height: Seq(height),
            }),
        }
    }

    /// The digest of the whole state at the staged height: `(height, SHA-256, keys)`, as
    /// [`Store::state_hash`] gives it of a durable state. Read from a snapshot a page at
    /// a time, so staging and commits go on meanwhile; one computation at a time, shared
    /// by every caller that asks while it runs, and kept until the height moves.
    pub fn state_hash(&self) -> Result<StateHash, StoreError> {
        let height = self.staged_height();
        self.inner
            .digests
            .get(height, || super::digest::digest(&self.snapshot()))
    }

    /// The record of transaction `tx_id`, staged or durable: the first one with that id.
    pub fn tx(&self, tx_id: &TxId) -> Result<Option<TxRecord>, StoreError> {
        // Staged first: a commit writes sled before it forgets the staged record, so the
        // record is always in one of the two.
        if let Some(record) = read(&self.inner.txs).by_id.get(tx_id) {
            return Ok(Some(record.clone()));
        }
        self.inner.store.tx(tx_id)
    }

    /// The transaction at `seq` as ordered (bytes and the orderer's timestamp), staged or
    /// durable.
    pub fn transaction(&self, seq: Seq) -> Result<Option<TxBytes>, StoreError> {
        // Staged first: a commit writes sled before the staged record goes.
        if let Some(staged_tx) = read(&self.inner.txs).by_seq.get(&seq.0) {
            return Ok(Some(staged_tx.bytes()));
        }
        self.inner.store.transaction(seq)
    }

    /// Up to `limit` transactions from seq `from` on, staged or durable, in ascending seq
    /// order.
    pub fn transactions(&self, from: Seq, limit: usize) -> Result<Vec<TxBytes>, StoreError> {
        let (durable_end, staged) = {
            let txs = read(&self.inner.txs);
            // A seq up to the staged height leaves the staged records only once its commit
            // has returned, so sled holds every seq below the first staged one (through the
            // staged height when none is staged), and those records never change.
            let end = match txs.by_seq.keys().next() {
                Some(first) => Seq(*first),
                None => self.staged_height().next(),
            };
            let staged: Vec<TxBytes> = txs
                .by_seq
                .range(from.0..)
                .take(limit)
                .map(|(_, staged_tx)| staged_tx.bytes())
                .collect();
            (end, staged)
        };
        let mut out = self
            .inner
            .store
            .transactions_below(from, durable_end, limit)?;
        out.extend(staged);
        out.truncate(limit);
        Ok(out)
    }

    /// Number of keys the overlay holds a chain for (for tests and metrics).
    pub fn staged_keys(&self) -> usize {
        read(&self.inner.overlay).len()
    }

    /// Prunes the overlay (rule in the module doc).
    fn prune(&self) {
        let oldest = lock(&self.inner.snapshots).keys().next().copied();
        let floor = Seq(self.written_height().0.min(oldest.unwrap_or(u64::MAX)));
        write(&self.inner.overlay).prune(floor);
    }

    /// The durable value under `state_key`, as a chain base.
    fn durable_base(&self, state_key: &[u8]) -> Result<Chain, StoreError> {
        Ok(match self.inner.store.get_state(state_key)? {
            Some(found) => Chain::with_base(Seq(found.version.seq), Some(found.value)),
            None => Chain::with_base(Seq::ZERO, None),
        })
    }
}

/// A snapshot's registration, dropped with its last clone.
struct SnapshotInner {
    /// The state it reads.
    world: Arc<Inner>,
    /// Its height.
    height: Seq,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        let mut live = lock(&self.world.snapshots);
        if let Some(count) = live.get_mut(&self.height.0) {
            *count -= 1;
            if *count == 0 {
                live.remove(&self.height.0);
            }
        }
    }
}

/// A consistent, immutable view of the state at one height. Cheap to clone.
#[derive(Clone)]
pub struct Snapshot {
    /// Shared by the clones; the last one deregisters the height.
    shared: Arc<SnapshotInner>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("height", &self.height())
            .finish()
    }
}

impl Snapshot {
    /// The height it reads at: it sees exactly the transactions `1..=height`.
    pub fn height(&self) -> Seq {
        self.shared.height
    }

    /// The value of `key` in `ns` at this snapshot's height.
    pub fn get(&self, ns: &str, key: &[u8]) -> Result<Option<VersionedValue>, StoreError> {
        keys::check_namespace(ns)?;
        let state_key = keys::state_key(ns, key);
        let world = &*self.shared.world;
        // Held across the sled read: with no chain the key has no pending write, and no
        // chain can appear while the lock is held, so sled's record is the key's latest.
        let overlay = read(&world.overlay);
        match overlay.get(&state_key) {
            Some(chain) => chain.at(self.height()).ok_or_else(|| self.too_old()),
            None => self.check_durable(world.durable_record(&overlay, &state_key)?),
        }
    }

    /// Up to `limit` entries of `ns` with `start <= key < end` (`end = None`: to the
    /// namespace's end) at this snapshot's height, in ascending key order.
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
        if limit == 0 {
            return Ok(Vec::new());
        }
        let prefix_len = keys::state_prefix_len(ns);
        self.merged(&lo, &hi, limit, |key| {
            Ok(keys::state_key_suffix(key, prefix_len)?.to_vec())
        })
    }

    /// Up to `limit` state records of every namespace with a state key at or after
    /// `from` (a full state key, as the store orders them) at this snapshot's height:
    /// `(state key, value)`. Each call holds the overlay's lock only for its own page, so
    /// a scan of the whole state in pages never holds up staging for long.
    pub(crate) fn scan_state(
        &self,
        from: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StoreError> {
        let lo = from.max(&keys::STATE_PREFIX[..]).to_vec();
        let hi = vec![keys::STATE_PREFIX[0] + 1];
        self.merged(&lo, &hi, limit, |key| Ok(key.to_vec()))
    }

    /// Up to `limit` state records with `lo <= state key < hi` at this snapshot's height,
    /// the staged overlay merged over the durable store, each key as `key_of` names it.
    fn merged(
        &self,
        lo: &[u8],
        hi: &[u8],
        limit: usize,
        key_of: impl Fn(&[u8]) -> Result<Vec<u8>, StoreError>,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StoreError> {
        let world = &*self.shared.world;
        // Held for the whole merge, for the reason given in `get`.
        let overlay = read(&world.overlay);
        let mut staged_iter = overlay.range(lo, hi);
        let mut durable_iter = world.store.state_range(lo.to_vec(), hi.to_vec());
        let mut staged = staged_iter.next();
        let mut durable = durable_iter.next().transpose()?;
        let mut out = Vec::new();
        while out.len() < limit {
            // Which side holds the next key; on a tie the overlay answers for the key.
            let order = match (&staged, &durable) {
                (None, None) => break,
                (Some(_), None) => KeyOrder::Less,
                (None, Some(_)) => KeyOrder::Greater,
                (Some((staged_key, _)), Some((durable_key, _))) => {
                    staged_key.as_slice().cmp(&durable_key[..])
                }
            };
            if order == KeyOrder::Greater {
                if let Some((key, value)) = durable.take() {
                    let found = world.store.state_value(&value)?;
                    if let Some(found) = self.check_durable(Some(found))? {
                        out.push((key_of(&key)?, found));
                    }
                }
                durable = durable_iter.next().transpose()?;
                continue;
            }
            if let Some((key, chain)) = staged.take()
                && let Some(found) = chain.at(self.height()).ok_or_else(|| self.too_old())?
            {
                out.push((key_of(key)?, found));
            }
            staged = staged_iter.next();
            if order == KeyOrder::Equal {
                durable = durable_iter.next().transpose()?;
            }
        }
        Ok(out)
    }

    /// A [`StateView`] of namespace `ns` at this snapshot (errors, such as a bad
    /// namespace, come from its reads).
    pub fn view(&self, ns: &str) -> Arc<dyn StateView> {
        Arc::new(NamespaceView {
            snapshot: self.clone(),
            namespace: ns.to_string(),
        })
    }

    /// A durable record read for a key without a chain. Its version cannot be above the
    /// height: the write would have had a chain, kept while this snapshot lives.
    fn check_durable(
        &self,
        found: Option<VersionedValue>,
    ) -> Result<Option<VersionedValue>, StoreError> {
        match found {
            Some(found) if found.version.seq > self.height().0 => Err(self.too_old()),
            found => Ok(found),
        }
    }

    /// The error for an answer the overlay no longer holds.
    fn too_old(&self) -> StoreError {
        StoreError::SnapshotTooOld {
            height: self.height(),
        }
    }
}

/// One namespace of a snapshot, as the runtime reads it.
struct NamespaceView {
    /// The snapshot read.
    snapshot: Snapshot,
    /// The namespace.
    namespace: String,
}

impl StateView for NamespaceView {
    fn get(&self, key: &[u8]) -> Result<Option<VersionedValue>, StateError> {
        Ok(self.snapshot.get(&self.namespace, key)?)
    }

    fn scan(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, StateError> {
        Ok(self.snapshot.scan(&self.namespace, start, end, limit)?)
    }
}
