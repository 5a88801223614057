//! The solo orderer: one sequencer over a sled log, a flusher that makes the log durable
//! in group commits, and a sealer that cuts and signs blocks.
//!
//! # Log layout (its own sled database)
//!
//! | key | value |
//! |---|---|
//! | `'t' seq u64be` | the encoded `OrderedTx` |
//! | `'s' number u64be` | the encoded `SignedSeal` of block `number` |
//!
//! Sequencing inserts into sled under one lock, so the log holds seqs `1..=height` with
//! no gap, and sled recovers a prefix of its writes after a crash: on open, every record
//! found is durable, and ordering resumes after the last one.
//!
//! # Threads
//!
//! - Callers of [`SoloOrderer::submit`] check their transaction in parallel, then take
//!   the lock only to assign the seq and insert.
//! - The flusher calls `sled::Db::flush` whenever something was written since its last
//!   flush, and publishes the heights it covered: one fsync for everything that arrived
//!   during the previous one (adaptive group commit).
//! - The sealer cuts a block when `seal_max_txs` transactions are unsealed or the oldest
//!   has waited `seal_max_delay`, signs its seal and writes it to the log.

use std::collections::VecDeque;
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::Histogram;

use super::{
    Delivered, Delivery, OrderError, Ordered, OrderedTx, Orderer, OrdererConfig, OrderingMode,
    admit,
};
use crate::block::{self, SealChain, SignedSealed};
use crate::identity::{Msp, Signer};
use crate::ids::{BlockNumber, Seq};
use crate::store::StoreError;
use crate::tx::{self, Hash};

const TX: u8 = b't';
const SEAL: u8 = b's';

fn log_key(prefix: u8, n: u64) -> [u8; 9] {
    let mut key = [0u8; 9];
    key[0] = prefix;
    key[1..].copy_from_slice(&n.to_be_bytes());
    key
}

fn log_number(key: &[u8]) -> Result<u64, OrderError> {
    let bytes: [u8; 8] = key
        .get(1..9)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| OrderError::Corrupt(format!("log key of {} bytes", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

fn log_error(error: sled::Error) -> OrderError {
    OrderError::Log(error.to_string())
}

/// What the sequencer, flusher, sealer and deliveries share, under one lock.
struct State {
    /// The last seq assigned (and written to sled).
    head: Seq,
    /// The last seq a finished flush covered.
    durable: Seq,
    /// Hashes and arrival times of the transactions after the last seal.
    unsealed: VecDeque<(Hash, Instant)>,
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
}

struct Inner {
    config: OrdererConfig,
    msp: Arc<Msp>,
    signer: Signer,
    db: sled::Db,
    state: Mutex<State>,
    /// Deliveries and `close` wait here: a seq, durability or a seal moved.
    for_deliveries: Condvar,
    /// The flusher waits here for writes.
    for_flusher: Condvar,
    /// The sealer waits here for its first or its `seal_max_txs`-th transaction.
    for_sealer: Condvar,
    /// How long each flush (fsync) of the log took.
    flush_seconds: Histogram,
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

    fn read_tx(&self, seq: Seq) -> Result<OrderedTx, OrderError> {
        let bytes = self
            .db
            .get(log_key(TX, seq.0))
            .map_err(log_error)?
            .ok_or_else(|| OrderError::Corrupt(format!("transaction {seq} is missing")))?;
        OrderedTx::decode(&bytes)
    }

    fn read_seal(&self, number: BlockNumber) -> Result<SignedSealed, OrderError> {
        let bytes = self
            .db
            .get(log_key(SEAL, number.0))
            .map_err(log_error)?
            .ok_or_else(|| OrderError::Corrupt(format!("seal {} is missing", number.0)))?;
        block::decode_signed_seal(&bytes).map_err(|e| OrderError::Corrupt(e.to_string()))
    }

    /// The flusher: one `flush` covers everything written before it started.
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
            let flushed = self.db.flush();
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
        let max_txs = self.config.seal_max_txs.max(1);
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
                    let hashes: Vec<Hash> = state
                        .unsealed
                        .drain(..count)
                        .map(|(hash, _)| hash)
                        .collect();
                    let sealed = state.chain.seal_next(&self.signer, &hashes, tx::now_ms());
                    if let Err(error) = self
                        .db
                        .insert(log_key(SEAL, sealed.seal.number.0), sealed.bytes.as_slice())
                    {
                        self.fail(state, format!("writing seal: {error}"));
                        return;
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
    /// The OS lock on the log directory, released after sled closes.
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
        let (db, dir_lock) = crate::store::open_locked(dir).map_err(|e| match e {
            StoreError::Locked { path } => OrderError::Locked(path),
            other => OrderError::Log(other.to_string()),
        })?;
        let (chain, sealed) = match db.scan_prefix([SEAL]).next_back() {
            None => (SealChain::genesis(), BlockNumber(0)),
            Some(entry) => {
                let (_, bytes) = entry.map_err(log_error)?;
                let last = block::decode_signed_seal(&bytes)
                    .map_err(|e| OrderError::Corrupt(e.to_string()))?;
                (SealChain::after(&last), last.seal.number)
            }
        };
        let head = match db.scan_prefix([TX]).next_back() {
            None => Seq::ZERO,
            Some(entry) => Seq(log_number(&entry.map_err(log_error)?.0)?),
        };
        let sealed_through = Seq(chain.next_first().0 - 1);
        if head < sealed_through {
            return Err(OrderError::Corrupt(format!(
                "seals reach seq {sealed_through} but the log ends at {head}"
            )));
        }
        // The transactions after the last seal wait for the next one.
        let mut unsealed = VecDeque::new();
        let now = Instant::now();
        for (i, entry) in db
            .range(log_key(TX, sealed_through.0 + 1)..=log_key(TX, head.0))
            .enumerate()
        {
            let (key, bytes) = entry.map_err(log_error)?;
            let expected = sealed_through.0 + 1 + i as u64;
            if log_number(&key)? != expected {
                return Err(OrderError::Corrupt(format!(
                    "transaction {expected} is missing"
                )));
            }
            unsealed.push_back((OrderedTx::decode(&bytes)?.hash(), now));
        }
        let inner = Arc::new(Inner {
            config,
            msp,
            signer,
            db,
            state: Mutex::new(State {
                head,
                durable: head,
                unsealed,
                chain,
                sealed,
                sealed_durable: sealed,
                sealed_durable_through: sealed_through,
                pending_seals: VecDeque::new(),
                closed: false,
                failed: None,
            }),
            for_deliveries: Condvar::new(),
            for_flusher: Condvar::new(),
            for_sealer: Condvar::new(),
            flush_seconds: crate::metrics::flush_histogram(),
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

    /// The durations of the log's flushes (fsync) so far, in seconds; the handle shares
    /// the live histogram.
    pub fn flush_seconds(&self) -> Histogram {
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

impl Orderer for SoloOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        let received_us = tx::now_us();
        let tx_id = admit(&self.inner.config, &self.inner.msp, &signed_transaction)?;
        let hash = block::tx_hash(&signed_transaction);
        let mut state = self.inner.lock();
        self.inner.check(&state)?;
        let seq = state.head.next();
        let ordered = OrderedTx {
            seq,
            timestamp_ms: tx::now_ms(),
            transaction: signed_transaction,
        };
        if let Err(error) = self
            .inner
            .db
            .insert(log_key(TX, seq.0), ordered.into_bytes())
        {
            let failure = format!("writing transaction {seq}: {error}");
            self.inner.fail(state, failure.clone());
            return Err(OrderError::Log(failure));
        }
        state.head = seq;
        state.unsealed.push_back((hash, Instant::now()));
        let unsealed = state.unsealed.len();
        drop(state);
        let ordered_us = tx::now_us();
        self.inner.for_flusher.notify_one();
        if self.inner.config.mode == OrderingMode::Streaming {
            self.inner.for_deliveries.notify_all();
        }
        if unsealed == 1 || unsealed >= self.inner.config.seal_max_txs {
            self.inner.for_sealer.notify_one();
        }
        Ok(Ordered {
            seq,
            tx_id,
            received_us,
            ordered_us,
        })
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        self.inner.check(&self.inner.lock())?;
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
                self.seal = Some(self.inner.read_seal(self.next_block)?);
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
            let ordered = self.inner.read_tx(self.next_seq)?;
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
