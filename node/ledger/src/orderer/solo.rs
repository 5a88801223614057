//! The solo orderer: one sequencer over an append-only log file, a flusher that makes
//! the log durable in group commits, and a sealer that cuts and signs blocks.
//!
//! # Log layout
//!
//! One [`RecordFile`] (`orderer.log` in the orderer's directory) holds, in the order
//! they were written:
//!
//! | kind | payload |
//! |---|---|
//! | `'t'` | an encoded `OrderedTx`; the n-th one has seq n |
//! | `'S'` | the encoded `SignedSeal` of the next block |
//!
//! A seal's Merkle leaves hold each transaction's timestamp with its bytes
//! ([`crate::block::leaf`]). Seals of kind `'s'`, written by an older Runnel, held the
//! bytes alone: a log holding one is refused when it opens.
//!
//! An index in memory (seq and block number to file offset) is rebuilt from the file on
//! open. Sequencing appends under one lock, so the log holds seqs `1..=height` with no
//! gap; a crash can only cut a torn tail, which open removes: every record found is
//! whole, and ordering resumes after the last one.
//!
//! # Threads
//!
//! - Callers of [`SoloOrderer::submit`] check their transaction in parallel, then take
//!   the lock only to assign the seq and append.
//! - The flusher syncs the log (`sync_file_range`, or `fdatasync` with
//!   [`crate::records::SyncMode::Full`]) whenever something was appended since its last
//!   flush, and publishes the heights it covered: one sync for everything that arrived
//!   during the previous one (adaptive group commit).
//! - The sealer cuts a block when `seal_max_txs` transactions are unsealed or the oldest
//!   has waited `seal_max_delay`, signs its seal and writes it to the log.

use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::replay::{RecentIds, Seen};
use super::{
    Admitted, Delivered, Delivery, OrderError, Ordered, OrderedTx, Orderer, OrdererConfig,
    OrderingMode, admit, admit_batch,
};
use crate::block::{self, SealChain, SignedSealed};
use crate::identity::{Msp, NetworkDefinition, Signer};
use crate::ids::{BlockNumber, Seq};
use crate::metrics::Histogram;
use crate::netconfig;
use crate::records::{Opened, RecordAt, RecordError, RecordFile, RecordReader};
use crate::store::StoreError;
use crate::tx::{self, Hash};
use runnel_runtime::Version;

/// Record kinds in the log.
const TX: u8 = b't';
/// A seal whose Merkle leaves hold each transaction's timestamp with its bytes.
const SEAL: u8 = b'S';
/// A seal written by an older Runnel, whose leaves held the transactions' bytes alone:
/// refused, since no peer of this version accepts it.
const SEAL_BYTES_ONLY: u8 = b's';

/// The log's file name in the orderer's directory.
pub const LOG_FILE: &str = "orderer.log";

fn log_error(error: RecordError) -> OrderError {
    match error {
        RecordError::Damaged { .. }
        | RecordError::Corrupt { .. }
        | RecordError::NotRecordFile { .. } => OrderError::Corrupt(error.to_string()),
        other => OrderError::Log(other.to_string()),
    }
}

/// The ids of the transactions in the log that could still be admitted again, read
/// back from its end until they are too old ([`RecentIds`]).
fn recent_ids(
    reader: &RecordReader,
    txs: &[RecordAt],
    config: &OrdererConfig,
) -> Result<RecentIds, OrderError> {
    let mut recent = RecentIds::new(config.proposal_window, config.replay_ids_max);
    let now_ms = tx::now_ms();
    // Newest first, back to the horizon: what the memory keeps (the newest proposals) and
    // its floor (the newest of the others) do not depend on the order of the inserts, and
    // the memory holds no more than its count meanwhile.
    for at in txs.iter().rev() {
        let ordered = OrderedTx::decode(&reader.read(*at).map_err(log_error)?)?;
        if ordered.timestamp_ms.saturating_add(recent.log_horizon_ms()) < now_ms {
            break;
        }
        // Every transaction in the log passed admission, so it decodes.
        if let Ok((_, _, proposal)) = tx::decode_transaction(&ordered.transaction) {
            recent.restore(&tx::tx_id(&proposal), proposal.timestamp_ms, now_ms);
        }
    }
    Ok(recent)
}

/// What the sequencer, flusher, sealer and deliveries share, under one lock.
struct State {
    /// The log, appended to under this lock.
    log: RecordFile,
    /// Where transaction n lies in the log, at index n - 1.
    txs: Vec<RecordAt>,
    /// Where seal n lies in the log, at index n - 1.
    seals: Vec<RecordAt>,
    /// The last seq assigned (and appended).
    head: Seq,
    /// The last seq a finished flush covered.
    durable: Seq,
    /// Merkle leaves (bytes with timestamp) and arrival times of the transactions after
    /// the last seal.
    unsealed: VecDeque<(Hash, Instant)>,
    /// The latest transactions appended, oldest first, up to [`RECENT_BYTES_MAX`] of
    /// them: a delivery that keeps up reads them here, not back from the log.
    recent: VecDeque<OrderedTx>,
    /// The transaction bytes `recent` holds.
    recent_bytes: usize,
    /// The next seal to cut.
    chain: SealChain,
    /// The last seal written.
    sealed: BlockNumber,
    /// The last seal a finished flush covered (deliverable).
    sealed_durable: BlockNumber,
    /// The last seq of that seal (what block mode may deliver).
    sealed_durable_through: Seq,
    /// The last seq of each seal written but not yet durable, by number.
    pending_seals: VecDeque<(BlockNumber, Seq)>,
    /// Set by `close`: threads finish and submissions are refused.
    closed: bool,
    /// A log failure: the orderer stops, every call reports it.
    failed: Option<String>,
    /// The ids ordered recently, to refuse replays.
    replays: RecentIds,
    /// When the orderer follows the configuration: the definition in force after the
    /// last seq appended, and the seq that wrote it.
    network: Option<Followed>,
}

/// The configuration an orderer follows ([`OrdererConfig::follow_config`]).
struct Followed {
    genesis: NetworkDefinition,
    /// The updates applied, oldest first: their seqs and definitions, as kept in
    /// [`CONFIG_FILE`].
    applied: Vec<(Seq, NetworkDefinition)>,
}

impl Followed {
    /// The definition in force and the version of its key.
    fn current(&self) -> (&NetworkDefinition, Option<Version>) {
        match self.applied.last() {
            Some((seq, definition)) => (definition, Some(Version::from_seq(seq.0))),
            None => (&self.genesis, None),
        }
    }
}

/// The updates a following orderer applied, beside its log: written (and synced) before
/// the update's record is appended, so that after a crash every update the log holds is
/// in it; an entry past the log's end is one whose record never landed, dropped at open.
const CONFIG_FILE: &str = "config-updates.json";

/// The updates [`CONFIG_FILE`] holds up to seq `head`, each checked, and whether it held
/// any past `head` (whose records never landed).
fn read_applied(
    dir: &Path,
    head: Seq,
) -> Result<(Vec<(Seq, NetworkDefinition)>, bool), OrderError> {
    let path = dir.join(CONFIG_FILE);
    let corrupt =
        |e: &dyn std::fmt::Display| OrderError::Corrupt(format!("{}: {e}", path.display()));
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), false)),
        Err(e) => return Err(OrderError::Log(format!("reading {}: {e}", path.display()))),
    };
    let entries: Vec<(u64, NetworkDefinition)> =
        serde_json::from_str(&text).map_err(|e| corrupt(&e))?;
    let held = entries.len();
    let applied = entries
        .into_iter()
        .filter(|(seq, _)| *seq <= head.0)
        .map(|(seq, definition)| {
            definition.check().map_err(|e| corrupt(&e))?;
            Ok((Seq(seq), definition))
        })
        .collect::<Result<Vec<_>, OrderError>>()?;
    let dropped = applied.len() < held;
    Ok((applied, dropped))
}

fn write_applied(dir: &Path, applied: &[(Seq, NetworkDefinition)]) -> std::io::Result<()> {
    let entries: Vec<(u64, &NetworkDefinition)> =
        applied.iter().map(|(seq, d)| (seq.0, d)).collect();
    let path = dir.join(CONFIG_FILE);
    let staging = dir.join(format!("{CONFIG_FILE}.new"));
    let mut file = std::fs::File::create(&staging)?;
    std::io::Write::write_all(
        &mut file,
        &serde_json::to_vec(&entries).map_err(std::io::Error::other)?,
    )?;
    file.sync_all()?;
    std::fs::rename(&staging, &path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// The most transaction bytes the orderer keeps in memory for deliveries
/// ([`State::recent`]).
const RECENT_BYTES_MAX: usize = 8 << 20;

impl State {
    /// Keeps `ordered`, just appended, for deliveries; forgets the oldest beyond the bound.
    fn remember(&mut self, ordered: OrderedTx) {
        self.recent_bytes += ordered.transaction.len();
        self.recent.push_back(ordered);
        while self.recent_bytes > RECENT_BYTES_MAX
            && let Some(oldest) = self.recent.pop_front()
        {
            self.recent_bytes -= oldest.transaction.len();
        }
    }
}

struct Inner {
    config: OrdererConfig,
    /// The log's directory.
    dir: std::path::PathBuf,
    msp: Arc<Msp>,
    signer: Signer,
    /// Reads and syncs the log beside the appends.
    reader: RecordReader,
    state: Mutex<State>,
    /// Deliveries and `close` wait here: a seq, durability or a seal moved.
    for_deliveries: Condvar,
    /// The flusher waits here for writes.
    for_flusher: Condvar,
    /// The sealer waits here for its first or its `seal_max_txs`-th transaction.
    for_sealer: Condvar,
    /// How long each flush of the log took.
    flush_seconds: Arc<Histogram>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check(&self, state: &State) -> Result<(), OrderError> {
        if let Some(failure) = &state.failed {
            return Err(OrderError::Log(failure.clone()));
        }
        if state.closed {
            return Err(OrderError::Closed);
        }
        Ok(())
    }

    fn fail(&self, mut state: MutexGuard<'_, State>, failure: String) {
        state.failed.get_or_insert(failure);
        drop(state);
        self.for_deliveries.notify_all();
        self.for_flusher.notify_all();
        self.for_sealer.notify_all();
    }

    fn read_tx(&self, state: &State, seq: Seq) -> Result<OrderedTx, OrderError> {
        if let Some(first) = state.recent.front()
            && let Some(i) = seq.0.checked_sub(first.seq.0)
            && let Some(ordered) = state.recent.get(i as usize)
        {
            debug_assert_eq!(ordered.seq, seq);
            return Ok(ordered.clone());
        }
        let at = seq
            .0
            .checked_sub(1)
            .and_then(|i| state.txs.get(i as usize))
            .ok_or_else(|| OrderError::Corrupt(format!("transaction {seq} is missing")))?;
        OrderedTx::decode(&self.reader.read(*at).map_err(log_error)?)
    }

    fn read_seal(&self, state: &State, number: BlockNumber) -> Result<SignedSealed, OrderError> {
        let at = number
            .0
            .checked_sub(1)
            .and_then(|i| state.seals.get(i as usize))
            .ok_or_else(|| OrderError::Corrupt(format!("seal {} is missing", number.0)))?;
        let bytes = self.reader.read(*at).map_err(log_error)?;
        block::decode_signed_seal(&bytes).map_err(|e| OrderError::Corrupt(e.to_string()))
    }

    /// The flusher: one sync covers everything appended before it started.
    fn run_flusher(&self) {
        let mut state = self.lock();
        loop {
            while state.failed.is_none()
                && state.head == state.durable
                && state.sealed == state.sealed_durable
            {
                if state.closed {
                    return;
                }
                state = self
                    .for_flusher
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.failed.is_some() {
                return;
            }
            let (head, sealed) = (state.head, state.sealed);
            drop(state);
            let flush = Instant::now();
            let flushed = self.reader.sync();
            self.flush_seconds.observe(flush.elapsed().as_secs_f64());
            state = self.lock();
            if let Err(error) = flushed {
                self.fail(state, format!("flush failed: {error}"));
                return;
            }
            state.durable = head;
            state.sealed_durable = sealed;
            while let Some(&(number, last)) = state.pending_seals.front() {
                if number > sealed {
                    break;
                }
                state.sealed_durable_through = last;
                state.pending_seals.pop_front();
            }
            self.for_deliveries.notify_all();
        }
    }

    /// The sealer: cuts a block when it is full or its oldest transaction has waited
    /// long enough.
    fn run_sealer(&self) {
        let max_txs = self.config.seal_txs();
        let mut state = self.lock();
        loop {
            if state.failed.is_some() || state.closed {
                return;
            }
            let due = match state.unsealed.front() {
                None => None,
                Some(_) if state.unsealed.len() >= max_txs => Some(Duration::ZERO),
                Some(&(_, since)) => Some(
                    (since + self.config.seal_max_delay).saturating_duration_since(Instant::now()),
                ),
            };
            match due {
                Some(wait) if wait.is_zero() => {
                    let count = state.unsealed.len().min(max_txs);
                    let leaves: Vec<Hash> = state
                        .unsealed
                        .drain(..count)
                        .map(|(leaf, _)| leaf)
                        .collect();
                    let sealed = state.chain.seal_next(&self.signer, &leaves, tx::now_ms());
                    match state.log.append(SEAL, &sealed.bytes) {
                        Ok(at) => state.seals.push(at),
                        Err(error) => {
                            self.fail(state, format!("writing seal: {error}"));
                            return;
                        }
                    }
                    state.sealed = sealed.seal.number;
                    state
                        .pending_seals
                        .push_back((sealed.seal.number, sealed.seal.last));
                    self.for_flusher.notify_one();
                }
                Some(wait) => {
                    state = self
                        .for_sealer
                        .wait_timeout(state, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                None => {
                    state = self
                        .for_sealer
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// The embedded ordering service (see the module doc).
pub struct SoloOrderer {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The OS lock on the log directory.
    _dir_lock: File,
}

impl std::fmt::Debug for SoloOrderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoloOrderer")
            .field("mode", &self.inner.config.mode)
            .field("height", &self.height())
            .finish_non_exhaustive()
    }
}

impl SoloOrderer {
    /// Opens (or creates) the log in `dir` and starts ordering, signing seals with
    /// `signer` (an orderer identity) and checking submitters against `msp`.
    pub fn open(
        dir: &Path,
        config: OrdererConfig,
        msp: Arc<Msp>,
        signer: Signer,
    ) -> Result<SoloOrderer, OrderError> {
        let dir_lock = crate::store::lock_dir(dir).map_err(|e| match e {
            StoreError::Locked { path } => OrderError::Locked(path),
            other => OrderError::Log(other.to_string()),
        })?;
        if dir.join("conf").exists() && !dir.join(LOG_FILE).exists() {
            return Err(OrderError::Corrupt(format!(
                "{} holds an orderer log of an older format; move it away to start afresh",
                dir.display()
            )));
        }
        let Opened {
            file: log,
            records,
            torn_at,
        } = RecordFile::open(&dir.join(LOG_FILE)).map_err(log_error)?;
        if let Some(offset) = torn_at {
            tracing::warn!(
                offset,
                "orderer log ended in a torn record (a crash during a write); cut it"
            );
        }
        let reader = log.handle().map_err(log_error)?.with_sync(config.sync);
        let (mut txs, mut seals) = (Vec::new(), Vec::new());
        for at in records {
            match at.kind {
                TX => txs.push(at),
                SEAL => seals.push(at),
                SEAL_BYTES_ONLY => {
                    return Err(OrderError::Corrupt(format!(
                        "{} holds a seal (at byte {}) of an older format, whose Merkle leaves \
                         do not cover the transactions' timestamps; move the log away to start \
                         afresh",
                        dir.join(LOG_FILE).display(),
                        at.offset
                    )));
                }
                other => {
                    return Err(OrderError::Corrupt(format!(
                        "record of unknown kind {other} at byte {}",
                        at.offset
                    )));
                }
            }
        }
        let head = Seq(txs.len() as u64);
        // Appends happen in seq order under one lock: the last record tells whether the
        // numbering holds.
        if let Some(at) = txs.last() {
            let seq = OrderedTx::decode(&reader.read(*at).map_err(log_error)?)?.seq;
            if seq != head {
                return Err(OrderError::Corrupt(format!(
                    "the log's last transaction record holds seq {seq}, not {head}"
                )));
            }
        }
        let mut chain = SealChain::genesis();
        for (i, at) in seals.iter().enumerate() {
            let sealed = block::decode_signed_seal(&reader.read(*at).map_err(log_error)?)
                .map_err(|e| OrderError::Corrupt(e.to_string()))?;
            if sealed.seal.number.0 != i as u64 + 1 {
                return Err(OrderError::Corrupt(format!(
                    "seal record {} holds block {}",
                    i + 1,
                    sealed.seal.number.0
                )));
            }
            chain = SealChain::after(&sealed);
        }
        let sealed = BlockNumber(seals.len() as u64);
        let sealed_through = Seq(chain.next_first().0 - 1);
        if head < sealed_through {
            return Err(OrderError::Corrupt(format!(
                "seals reach seq {sealed_through} but the log ends at {head}"
            )));
        }
        let replays = recent_ids(&reader, &txs, &config)?;
        let network = match &config.follow_config {
            None => None,
            Some(genesis) => {
                let (applied, dropped) = read_applied(dir, head)?;
                if dropped {
                    write_applied(dir, &applied).map_err(|e| OrderError::Log(e.to_string()))?;
                }
                let followed = Followed {
                    genesis: genesis.clone(),
                    applied,
                };
                if followed.applied.last().is_some() {
                    followed
                        .current()
                        .0
                        .apply_to(&msp)
                        .map_err(|e| OrderError::Corrupt(e.to_string()))?;
                }
                Some(followed)
            }
        };
        // The transactions after the last seal wait for the next one.
        let now = Instant::now();
        let unsealed = txs[sealed_through.0 as usize..]
            .iter()
            .map(|at| {
                let bytes = reader.read(*at).map_err(log_error)?;
                Ok((OrderedTx::decode(&bytes)?.leaf(), now))
            })
            .collect::<Result<VecDeque<_>, OrderError>>()?;
        let inner = Arc::new(Inner {
            config,
            dir: dir.to_path_buf(),
            msp,
            signer,
            reader,
            state: Mutex::new(State {
                log,
                txs,
                seals,
                head,
                durable: head,
                unsealed,
                recent: VecDeque::new(),
                recent_bytes: 0,
                chain,
                sealed,
                sealed_durable: sealed,
                sealed_durable_through: sealed_through,
                pending_seals: VecDeque::new(),
                closed: false,
                failed: None,
                replays,
                network,
            }),
            for_deliveries: Condvar::new(),
            for_flusher: Condvar::new(),
            for_sealer: Condvar::new(),
            flush_seconds: Arc::new(Histogram::flush_seconds()),
        });
        let spawn = |name: &str, run: fn(&Inner)| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || run(&inner))
                .map_err(|e| OrderError::Log(format!("starting {name}: {e}")))
        };
        let threads = vec![
            spawn("runnel-order-flush", Inner::run_flusher)?,
            spawn("runnel-order-seal", Inner::run_sealer)?,
        ];
        Ok(SoloOrderer {
            inner,
            threads: Mutex::new(threads),
            _dir_lock: dir_lock,
        })
    }

    /// The durations of the log's flushes so far, in seconds; the handle shares
    /// the live histogram.
    pub fn flush_seconds(&self) -> Arc<Histogram> {
        self.inner.flush_seconds.clone()
    }

    /// Stops ordering: refuses new submissions, flushes what was ordered, stops the
    /// threads. Deliveries end with [`OrderError::Closed`] once drained. Idempotent.
    pub fn close(&self) {
        self.inner.lock().closed = true;
        self.inner.for_flusher.notify_all();
        self.inner.for_sealer.notify_all();
        self.inner.for_deliveries.notify_all();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for SoloOrderer {
    fn drop(&mut self) {
        self.close();
    }
}

impl SoloOrderer {
    /// For an orderer that follows the configuration: when the `_config` update about to
    /// be appended at `seq` is one every peer will apply, records it ([`CONFIG_FILE`])
    /// and makes the MSP trust what it says from now on.
    fn follow(
        &self,
        state: &mut State,
        seq: Seq,
        now_ms: u64,
        signed_transaction: &[u8],
    ) -> std::io::Result<()> {
        let Some(network) = &mut state.network else {
            return Ok(());
        };
        let (current, version) = network.current();
        let now_s = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        let Some(next) =
            netconfig::valid_update(current, version, &self.inner.msp, signed_transaction, now_s)
        else {
            return Ok(());
        };
        network.applied.push((seq, next));
        write_applied(&self.inner.dir, &network.applied)?;
        if let Some((_, next)) = network.applied.last()
            && let Err(error) = next.apply_to(&self.inner.msp)
        {
            return Err(std::io::Error::other(error.to_string()));
        }
        tracing::info!(
            seq = seq.0,
            "the orderer follows the network configuration update"
        );
        Ok(())
    }

    /// Gives each admitted transaction the next seq and appends it to the log, all under
    /// one lock, then wakes the flusher, the deliveries and the sealer once for all.
    fn sequence(
        &self,
        admitted: Vec<(Vec<u8>, Result<Admitted, OrderError>)>,
        received_us: u64,
    ) -> Vec<Result<Ordered, OrderError>> {
        let mut answers = Vec::with_capacity(admitted.len());
        let mut state = self.inner.lock();
        let now_ms = tx::now_ms();
        // Every admitted transaction of the batch is appended with one write.
        let mut batch = Vec::with_capacity(admitted.len());
        let mut seq = state.head;
        for (signed_transaction, admitted) in admitted {
            let (tx_id, config) = match admitted.and_then(|(tx_id, proposal_ms, config)| {
                self.inner.check(&state)?;
                match state.replays.insert(&tx_id, proposal_ms, now_ms) {
                    Seen::New => Ok((tx_id, config)),
                    Seen::Replay => Err(OrderError::Duplicate(tx_id)),
                    Seen::BeyondMemory { floor_ms } => Err(OrderError::BeyondReplayMemory {
                        proposal_ms,
                        floor_ms,
                    }),
                }
            }) {
                Ok(admitted) => admitted,
                Err(error) => {
                    answers.push(Err(error));
                    continue;
                }
            };
            let leaf = block::leaf(now_ms, &signed_transaction);
            seq = seq.next();
            if config && let Err(error) = self.follow(&mut state, seq, now_ms, &signed_transaction)
            {
                let failure = format!("recording the configuration update at seq {seq}: {error}");
                self.inner.fail(state, failure.clone());
                answers.push(Err(OrderError::Log(failure)));
                return answers;
            }
            let (ordered, bytes) = OrderedTx {
                seq,
                timestamp_ms: now_ms,
                transaction: signed_transaction,
            }
            .encode();
            batch.push((ordered, bytes, leaf));
            answers.push(Ok(Ordered {
                seq,
                tx_id,
                received_us,
                ordered_us: 0,
            }));
        }
        let appended = batch.len();
        if appended == 0 {
            return answers;
        }
        match state
            .log
            .append_all(TX, batch.iter().map(|(_, bytes, _)| bytes.as_slice()))
        {
            Ok(places) => {
                let now = Instant::now();
                for (at, (ordered, _, leaf)) in places.into_iter().zip(batch) {
                    state.txs.push(at);
                    state.head = ordered.seq;
                    state.unsealed.push_back((leaf, now));
                    state.remember(ordered);
                }
            }
            Err(error) => {
                // The orderer stops here: none of the batch is ordered.
                let failure = format!("writing transactions through {seq}: {error}");
                self.inner.fail(state, failure.clone());
                for answer in &mut answers {
                    if answer.is_ok() {
                        *answer = Err(OrderError::Log(failure.clone()));
                    }
                }
                return answers;
            }
        }
        let unsealed = state.unsealed.len();
        // Stamped before the lock goes: a delivery, which takes it, is never stamped
        // before the ordering it follows.
        let ordered_us = tx::now_us();
        drop(state);
        for answer in answers.iter_mut().flatten() {
            answer.ordered_us = ordered_us;
        }
        self.inner.for_flusher.notify_one();
        if self.inner.config.mode == OrderingMode::Streaming {
            self.inner.for_deliveries.notify_all();
        }
        if unsealed <= appended || unsealed >= self.inner.config.seal_txs() {
            self.inner.for_sealer.notify_one();
        }
        answers
    }
}

impl Orderer for SoloOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        let received_us = tx::now_us();
        let admitted = admit(&self.inner.config, &self.inner.msp, &signed_transaction)?;
        let mut ordered = self.sequence(vec![(signed_transaction, Ok(admitted))], received_us);
        ordered.pop().unwrap_or(Err(OrderError::Closed))
    }

    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        let received_us = tx::now_us();
        let admitted = admit_batch(&self.inner.config, &self.inner.msp, &signed_transactions);
        self.sequence(
            signed_transactions.into_iter().zip(admitted).collect(),
            received_us,
        )
    }

    fn submits_in_batches(&self) -> bool {
        true
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        {
            let state = self.inner.lock();
            self.inner.check(&state)?;
            // A reader holds only what this log made durable and delivered: one that is
            // further on has seen a log this one is not (restored from an older copy, or
            // replaced). Serving it would hand out its seqs again, for other transactions.
            if from.0 > state.head.0 + 1 || next_block.0 > state.sealed.0 + 1 {
                return Err(OrderError::Behind {
                    reader_seq: Seq(from.0.saturating_sub(1)),
                    reader_block: BlockNumber(next_block.0.saturating_sub(1)),
                    height: state.head,
                    block: state.sealed,
                });
            }
        }
        Ok(Box::new(SoloDelivery {
            inner: self.inner.clone(),
            next_seq: Seq(from.0.max(1)),
            next_block: BlockNumber(next_block.0.max(1)),
            durable_sent: Seq::ZERO,
            seal: None,
        }))
    }

    fn height(&self) -> Seq {
        self.inner.lock().head
    }

    fn durable_height(&self) -> Seq {
        self.inner.lock().durable
    }

    fn failure(&self) -> Option<String> {
        let state = self.inner.lock();
        match (&state.failed, state.closed) {
            (Some(failure), _) => Some(failure.clone()),
            (None, true) => Some("the orderer is closed".to_string()),
            (None, false) => None,
        }
    }

    fn flush_seconds(&self) -> Option<Arc<Histogram>> {
        Some(SoloOrderer::flush_seconds(self))
    }

    fn close(&self) {
        SoloOrderer::close(self);
    }
}

/// One subscriber's position in the stream.
struct SoloDelivery {
    inner: Arc<Inner>,
    next_seq: Seq,
    next_block: BlockNumber,
    durable_sent: Seq,
    /// Seal `next_block`, read once and held until its transactions are delivered.
    seal: Option<SignedSealed>,
}

impl SoloDelivery {
    /// What is ready now, if anything, in the order: durability mark, seal, transaction.
    /// Marks and seals come at most once per flush, so they never starve the stream.
    fn ready(&mut self, state: &State) -> Result<Option<Delivered>, OrderError> {
        if state.durable > self.durable_sent {
            self.durable_sent = state.durable;
            return Ok(Some(Delivered::Durable(state.durable)));
        }
        if self.next_block <= state.sealed_durable {
            if self.seal.is_none() {
                self.seal = Some(self.inner.read_seal(state, self.next_block)?);
            }
            if let Some(sealed) = self.seal.take_if(|s| s.seal.last < self.next_seq) {
                self.next_block = BlockNumber(self.next_block.0 + 1);
                return Ok(Some(Delivered::Seal(sealed)));
            }
        }
        let deliverable = match self.inner.config.mode {
            OrderingMode::Streaming => state.head,
            OrderingMode::Blocks => state.sealed_durable_through,
        };
        if self.next_seq <= deliverable {
            let ordered = self.inner.read_tx(state, self.next_seq)?;
            self.next_seq = self.next_seq.next();
            return Ok(Some(Delivered::Tx(ordered)));
        }
        Ok(None)
    }
}

impl Delivery for SoloDelivery {
    fn next(&mut self, timeout: Duration) -> Result<Option<Delivered>, OrderError> {
        let deadline = Instant::now() + timeout;
        let inner = self.inner.clone();
        let mut state = inner.lock();
        loop {
            if let Some(failure) = &state.failed {
                return Err(OrderError::Log(failure.clone()));
            }
            if let Some(item) = self.ready(&state)? {
                return Ok(Some(item));
            }
            if state.closed {
                return Err(OrderError::Closed);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            state = inner
                .for_deliveries
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
