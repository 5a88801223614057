//! The orderer's output: the ordered stream as an append-only log file, its index in
//! memory, the flusher that makes it durable and the deliveries that serve it.
//!
//! An orderer sits on top and decides what goes into the stream: the solo orderer
//! ([`super::solo`]) admits, refuses replays, sequences and seals in this process; a
//! replicated orderer (runnel-orderer's Raft, which is why this module is public) appends
//! what its replicas agreed on. This module never admits a
//! transaction, never refuses one as a replay and never decides when to cut a block: it
//! numbers and keeps what it is given, in the order given.
//!
//! # Log layout
//!
//! One [`RecordFile`] (`orderer.log` in the orderer's directory) holds, in the order
//! they were written:
//!
//! | kind | payload |
//! |---|---|
//! | `'t'` | an encoded `OrderedTx`; the n-th one has seq n |
//! | `'V'` | the encoded `SignedSeal` of the next block |
//! | `'a'` | replicated logs only: the index of the last replicated entry applied, u64 little-endian |
//!
//! A seal's Merkle leaves hold each transaction's timestamp with its bytes
//! ([`crate::block::leaf`]), and their signatures are a list. Seals of kind `'s'` and
//! `'S'`, written by an older Runnel, held the bytes alone or one signature in fields of
//! its own: a log holding one is refused when it opens.
//!
//! An index in memory (seq and block number to file offset) is rebuilt from the file on
//! open. Appends happen under one lock, so the log holds seqs `1..=height` with no gap; a
//! crash can only cut a torn tail, which open removes: every record found is whole, and
//! ordering resumes after the last one.
//!
//! # Replicated logs
//!
//! A replicated log ([`StreamOptions::replicated`]) holds what a majority of replicas
//! already keep in their own logs: what it appends is durable elsewhere, so it counts as
//! durable (and deliverable) at once; the flusher still syncs the file, so that a restart
//! has less to apply again. Each group of records applied from one replicated entry ends
//! with an `'a'` record in the same write. On open, every record after the last `'a'` is
//! dropped: a group a crash cut short is applied again whole, from the replicas. A log
//! that is not replicated refuses `'a'` records as of an unknown kind.
//!
//! # Threads
//!
//! - Appenders take the lock, number and write what they append, and wake the others.
//! - The flusher syncs the log (`sync_file_range`, or `fdatasync` with
//!   [`crate::records::SyncMode::Full`]) whenever something was appended since its last
//!   flush, and publishes the heights it covered: one sync for everything that arrived
//!   during the previous one (adaptive group commit).
//! - Each delivery reads under the lock, from memory while it keeps up
//!   ([`RECENT_BYTES_MAX`]), from the log when it is behind.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::replay::{RecentIds, Seen};
use super::{Delivered, Delivery, OrderError, OrderedTx, OrdererConfig, OrderingMode};
use crate::block::{self, BlockError, SealChain, Sealers, SignedSealed};
use crate::guard::guarded;
use crate::identity::{Msp, NetworkDefinition, Signer};
use crate::ids::{BlockNumber, Seq, TxId};
use crate::metrics::Histogram;
use crate::netconfig;
use crate::records::{HEADER, Opened, RecordAt, RecordError, RecordFile, RecordReader};
use crate::seal_trust::SealTrust;
use crate::store::StoreError;
use crate::tx::{self, Hash};
use runnel_runtime::Version;

/// Record kinds in the log.
const TX: u8 = b't';
/// A seal whose Merkle leaves hold each transaction's timestamp with its bytes, with its
/// signatures as a list.
const SEAL: u8 = b'V';
/// A seal written by an older Runnel, whose leaves held the transactions' bytes alone:
/// refused, since no peer of this version accepts it.
const SEAL_BYTES_ONLY: u8 = b's';
/// A seal written by an older Runnel, with one signature in fields of its own: refused,
/// since no peer of this version accepts it.
const SEAL_ONE_SIGNATURE: u8 = b'S';
/// In a replicated log, the index of the last replicated entry applied.
const APPLIED: u8 = b'a';

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

/// How a [`StreamLog`] keeps its stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// The log holds what a majority of replicas keep in their own logs: an append is
    /// durable at once, each group applied ends with an applied mark, and open drops
    /// what follows the last mark (see the module doc).
    pub replicated: bool,
}

/// A transaction to append: admitted by the orderer above, which gave it its time.
#[derive(Debug, Clone)]
pub struct StreamTx {
    /// The encoded `SignedTransaction`, exactly as submitted.
    pub signed_transaction: Vec<u8>,
    /// The orderer's clock when it was ordered, Unix ms ([`OrderedTx::timestamp_ms`]).
    pub timestamp_ms: u64,
    /// Its id.
    pub tx_id: TxId,
    /// Its proposal's timestamp, Unix ms: what the replay memory keeps its id by.
    pub proposal_ms: u64,
    /// Whether it is a `_config` update, which an orderer that follows the configuration
    /// applies to its MSP.
    pub config_update: bool,
}

/// Whether an append records its transactions' ids in the replay memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    /// The caller inserted them already, refusing replays (the solo sequencer).
    Checked,
    /// Record them now, refusing none: a replica applies what its leader admitted, and
    /// needs them to refuse replays once it leads.
    Record,
}

/// What the appenders, the flusher, the sealer and the deliveries share, under one lock.
pub struct State {
    /// The log, appended to under this lock.
    log: RecordFile,
    /// Where transaction n lies in the log, at index n - 1.
    txs: Vec<RecordAt>,
    /// Where seal n lies in the log, at index n - 1.
    seals: Vec<RecordAt>,
    /// The last seq assigned (and appended).
    head: Seq,
    /// The last seq durable: covered by a finished flush, or appended to a replicated log.
    durable: Seq,
    /// Whether something was appended since the flusher last took the heights to sync.
    unflushed: bool,
    /// Merkle leaves (bytes with timestamp), arrival times and sizes of the transactions
    /// after the last seal.
    pub unsealed: VecDeque<Unsealed>,
    /// The bytes of the transactions in `unsealed`.
    unsealed_bytes: usize,
    /// The latest transactions appended, oldest first, up to [`RECENT_BYTES_MAX`] of
    /// them: a delivery that keeps up reads them here, not back from the log.
    recent: VecDeque<OrderedTx>,
    /// The transaction bytes `recent` holds.
    recent_bytes: usize,
    /// The next seal to cut.
    pub chain: SealChain,
    /// The last seal written.
    sealed: BlockNumber,
    /// The last seal durable (deliverable).
    sealed_durable: BlockNumber,
    /// The last seq of that seal (what block mode may deliver).
    sealed_durable_through: Seq,
    /// The last seq of each seal written but not yet durable, by number.
    pending_seals: VecDeque<(BlockNumber, Seq)>,
    /// In a replicated log, the index of the last replicated entry applied (0: none).
    applied: u64,
    /// Set by `close`: threads finish and appends are refused.
    pub closed: bool,
    /// A log failure: the orderer stops, every call reports it.
    pub failed: Option<String>,
    /// The ids ordered recently, to refuse replays.
    pub replays: RecentIds,
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
    /// Who may sign the seals from the next one on ([`crate::seal_trust`]).
    trust: SealTrust,
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

/// A block is cut once its transactions' bytes reach this, whatever `seal_max_txs` says:
/// what a call that lists a block's transactions, or a peer that delivers blocks, holds
/// at most (with one transaction past it, up to the largest one). The rule only ever cuts
/// a block sooner, so no transaction waits for it. 16 MiB: a block of the default 500
/// transactions of 32 KiB each.
pub const SEAL_TX_BYTES_MAX: usize = 16 << 20;

/// A transaction after the last seal.
#[derive(Debug, Clone, Copy)]
pub struct Unsealed {
    /// Its Merkle leaf.
    leaf: Hash,
    /// When it was appended.
    arrived: Instant,
    /// Its bytes (the signed transaction).
    bytes: usize,
}

impl State {
    /// The Merkle leaves of the oldest `count` unsealed transactions (fewer if fewer wait).
    fn unsealed_leaves(&self, count: usize) -> Vec<Hash> {
        self.unsealed
            .iter()
            .take(count)
            .map(|unsealed| unsealed.leaf)
            .collect()
    }

    /// How many of the oldest unsealed transactions (at most `max_txs`) the next block
    /// holds, and whether it is due now: at `max_txs` of them, or once their bytes reach
    /// [`SEAL_TX_BYTES_MAX`].
    fn next_block(&self, max_txs: usize) -> (usize, bool) {
        if self.unsealed.len() >= max_txs {
            let bytes: usize = self.unsealed.iter().take(max_txs).map(|u| u.bytes).sum();
            if bytes < SEAL_TX_BYTES_MAX {
                return (max_txs, true);
            }
        } else if self.unsealed_bytes < SEAL_TX_BYTES_MAX {
            return (self.unsealed.len(), false);
        }
        let mut bytes = 0usize;
        let mut count = 0;
        for unsealed in self.unsealed.iter().take(max_txs) {
            bytes = bytes.saturating_add(unsealed.bytes);
            count += 1;
            if bytes >= SEAL_TX_BYTES_MAX {
                break;
            }
        }
        (count, true)
    }

    /// Forgets the oldest `count` unsealed transactions: a seal covers them.
    fn drain_unsealed(&mut self, count: usize) {
        for unsealed in self.unsealed.drain(..count) {
            self.unsealed_bytes -= unsealed.bytes;
        }
    }

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

    /// Moves durability up to seq `head` and seal `sealed` (never back), and what block
    /// mode may deliver with it; whether anything moved.
    fn mark_durable(&mut self, head: Seq, sealed: BlockNumber) -> bool {
        // A delivery marks durable what it is told is: a mark past the log's end would let
        // a peer commit a seq this orderer could reassign after a crash.
        assert!(
            head <= self.head && sealed <= self.sealed,
            "invariant broken: durability never passes what the log holds (seq {head} of {}, \
             block {} of {})",
            self.head,
            sealed.0,
            self.sealed.0
        );
        let moved = head > self.durable || sealed > self.sealed_durable;
        self.durable = self.durable.max(head);
        self.sealed_durable = self.sealed_durable.max(sealed);
        while let Some(&(number, last)) = self.pending_seals.front() {
            if number > self.sealed_durable {
                break;
            }
            self.sealed_durable_through = last;
            self.pending_seals.pop_front();
        }
        moved
    }
}

/// Which threads an append wakes, once its caller has released the lock (so that they do
/// not wake only to wait for it).
#[must_use = "wake the log's threads with `Inner::wake` once the lock is released"]
#[derive(Debug, Clone, Copy, Default)]
pub struct Wake {
    flusher: bool,
    deliveries: bool,
    sealer: bool,
}

/// The log and what serves it, shared by its threads, its deliveries and the orderer
/// on top.
pub struct Inner {
    pub config: OrdererConfig,
    /// The log's directory.
    dir: PathBuf,
    pub msp: Arc<Msp>,
    /// Signs the seals an orderer on top cuts.
    pub signer: Signer,
    /// Whether the log is replicated ([`StreamOptions::replicated`]).
    replicated: bool,
    /// Reads and syncs the log beside the appends.
    reader: RecordReader,
    state: Mutex<State>,
    /// Deliveries and `close` wait here: a seq, durability or a seal moved.
    for_deliveries: Condvar,
    /// The flusher waits here for writes.
    for_flusher: Condvar,
    /// A sealer waits here for its first or its `seal_max_txs`-th transaction.
    pub for_sealer: Condvar,
    /// How long each flush of the log took.
    flush_seconds: Arc<Histogram>,
}

/// What a sealer finds when it looks at the unsealed transactions ([`Inner::cut`]).
pub enum Cut {
    /// Nothing is due: look again after this long, or (`None`) when a transaction comes.
    Wait(Option<Duration>),
    /// The next seal, signed; the chain has not moved.
    Seal(SignedSealed),
    /// The definition in force where the next block must end does not let this orderer
    /// sign it (removed from the ordering service, or its certificate no longer
    /// trusted): another must.
    Barred(BlockError),
}

impl Inner {
    /// For a sealer signing as `signer` at `now_ms`: the next seal, over the oldest
    /// unsealed transactions, once `seal_max_txs` of them wait, their bytes reach
    /// [`SEAL_TX_BYTES_MAX`], or the oldest has waited `seal_max_delay`. When this orderer follows the configuration, the block ends
    /// before the first update in it that bars `signer` from signing, and is cut at once
    /// then: that part is still this orderer's to seal, and the rest is not.
    pub fn cut(&self, state: &State, signer: &Signer, now_ms: u64) -> Cut {
        let max_txs = self.config.seal_txs();
        let Some(oldest) = state.unsealed.front().map(|unsealed| unsealed.arrived) else {
            return Cut::Wait(None);
        };
        let (mut count, mut due) = state.next_block(max_txs);
        let first = state.chain.next_first();
        if let Some(network) = &state.network {
            let last = Seq(first.0 + count as u64 - 1);
            for (seq, sealers) in network.trust.updates_within(first, last) {
                if let Err(barred) = sealers.admit(signer, now_ms) {
                    count = usize::try_from(seq.0 - first.0).unwrap_or(usize::MAX);
                    if count == 0 {
                        return Cut::Barred(barred);
                    }
                    due = true;
                    break;
                }
            }
        }
        let waited = oldest.elapsed();
        if !due && waited < self.config.seal_max_delay {
            return Cut::Wait(Some(self.config.seal_max_delay - waited));
        }
        // Checked once a block is due, not at every look (a leader looks every turn).
        let last = Seq(first.0 + count as u64 - 1);
        if let Some(network) = &state.network
            && let Err(barred) = network.trust.after(last).admit(signer, now_ms)
        {
            return Cut::Barred(barred);
        }
        let leaves = state.unsealed_leaves(count);
        Cut::Seal(state.chain.clone().seal_next(signer, &leaves, now_ms))
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn check(&self, state: &State) -> Result<(), OrderError> {
        if let Some(failure) = &state.failed {
            return Err(OrderError::Log(failure.clone()));
        }
        if state.closed {
            return Err(OrderError::Closed);
        }
        Ok(())
    }

    /// Stops the log for `failure` (the first one stays) and wakes every thread to see it.
    pub fn fail(&self, state: &mut State, failure: String) {
        state.failed.get_or_insert(failure);
        self.for_deliveries.notify_all();
        self.for_flusher.notify_all();
        self.for_sealer.notify_all();
    }

    /// Wakes what an append asked for; call it once the lock is released.
    pub fn wake(&self, wake: Wake) {
        if wake.flusher {
            self.for_flusher.notify_one();
        }
        if wake.deliveries {
            self.for_deliveries.notify_all();
        }
        if wake.sealer {
            self.for_sealer.notify_one();
        }
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

    /// Refuses an applied index on a log that is not replicated, or one not past the last.
    fn check_applied(&self, state: &State, applied: Option<u64>) -> Result<(), OrderError> {
        match applied {
            Some(_) if !self.replicated => Err(OrderError::Log(
                "an applied mark for a log that is not replicated".to_string(),
            )),
            Some(index) if index <= state.applied => Err(OrderError::Log(format!(
                "applied index {index} does not follow {}, the last applied",
                state.applied
            ))),
            _ => Ok(()),
        }
    }

    /// Writes `records`, then the applied mark when there is one, with one write; on
    /// success the flusher has something to sync.
    fn write(
        &self,
        state: &mut State,
        records: &[(u8, &[u8])],
        applied: Option<u64>,
    ) -> Result<Vec<RecordAt>, RecordError> {
        let mark = applied.map(u64::to_le_bytes);
        let mut places = state.log.append_records(
            records
                .iter()
                .copied()
                .chain(mark.as_ref().map(|mark| (APPLIED, mark.as_slice()))),
        )?;
        if let Some(index) = applied {
            places.pop();
            state.applied = index;
        }
        state.unflushed = true;
        Ok(places)
    }

    /// Under the lock `state`: gives each of `txs` the next seq, in order, follows the
    /// configuration updates among them, and appends them with one write, ended by the
    /// applied mark `applied` when there is one (a replicated log only; it must be past
    /// the last). Returns their seqs, and whom to [`Inner::wake`] once the lock is
    /// released. A write that fails stops the log: none of `txs` is appended.
    pub fn append_txs(
        &self,
        state: &mut State,
        txs: Vec<StreamTx>,
        ids: Ids,
        applied: Option<u64>,
    ) -> Result<(Vec<Seq>, Wake), OrderError> {
        self.check(state)?;
        self.check_applied(state, applied)?;
        if txs.is_empty() && applied.is_none() {
            return Ok((Vec::new(), Wake::default()));
        }
        let appended = txs.len();
        let mut batch = Vec::with_capacity(appended);
        let mut encoded = Vec::with_capacity(appended);
        let mut seq = state.head;
        let mut followed = false;
        for tx in txs {
            seq = seq.next();
            if tx.config_update {
                match self.follow(state, seq, tx.timestamp_ms, &tx.signed_transaction) {
                    Ok(applied) => followed |= applied,
                    Err(error) => {
                        let failure =
                            format!("recording the configuration update at seq {seq}: {error}");
                        self.fail(state, failure.clone());
                        return Err(OrderError::Log(failure));
                    }
                }
            }
            let leaf = block::leaf(tx.timestamp_ms, &tx.signed_transaction);
            let (ordered, bytes) = OrderedTx {
                seq,
                timestamp_ms: tx.timestamp_ms,
                transaction: tx.signed_transaction,
            }
            .encode();
            encoded.push(bytes);
            batch.push((ordered, leaf, tx.tx_id, tx.proposal_ms));
        }
        let records: Vec<(u8, &[u8])> =
            encoded.iter().map(|bytes| (TX, bytes.as_slice())).collect();
        let written = self.write(state, &records, applied);
        let places = match written {
            Ok(places) => places,
            Err(error) => {
                let failure = if appended == 0 {
                    format!("writing the applied mark {applied:?}: {error}")
                } else {
                    format!("writing transactions through {seq}: {error}")
                };
                self.fail(state, failure.clone());
                return Err(OrderError::Log(failure));
            }
        };
        debug_assert_eq!(places.len(), batch.len());
        let now = Instant::now();
        let mut seqs = Vec::with_capacity(appended);
        for (at, (ordered, leaf, tx_id, proposal_ms)) in places.into_iter().zip(batch) {
            assert_eq!(
                ordered.seq,
                state.head.next(),
                "invariant broken: the log holds seqs 1..=head with no gap"
            );
            state.txs.push(at);
            state.head = ordered.seq;
            let bytes = ordered.transaction.len();
            state.unsealed.push_back(Unsealed {
                leaf,
                arrived: now,
                bytes,
            });
            state.unsealed_bytes += bytes;
            if ids == Ids::Record {
                // The transaction's own time, not this orderer's clock: every orderer of
                // a cluster remembers and forgets the same ids at the same point.
                state
                    .replays
                    .restore(&tx_id, proposal_ms, ordered.timestamp_ms);
            }
            seqs.push(ordered.seq);
            state.remember(ordered);
        }
        if self.replicated {
            let (head, sealed) = (state.head, state.sealed);
            state.mark_durable(head, sealed);
        }
        let unsealed = state.unsealed.len();
        Ok((
            seqs,
            Wake {
                flusher: true,
                deliveries: appended > 0
                    && (self.replicated || self.config.mode == OrderingMode::Streaming),
                // An update may bar this orderer from sealing past it: the sealer
                // looks at once.
                sealer: appended > 0
                    && (unsealed <= appended
                        || unsealed >= self.config.seal_txs()
                        || state.unsealed_bytes >= SEAL_TX_BYTES_MAX
                        || followed),
            },
        ))
    }

    /// Under the lock `state`: appends `sealed`, the seal of the next block over the
    /// oldest unsealed transactions, ended by the applied mark `applied` when there is one,
    /// with one write. A seal that does not follow the chain, or covers transactions not
    /// appended, is refused and nothing is written; a write that fails stops the log.
    /// (Its Merkle root is checked here in debug builds only: every peer checks it
    /// against the transactions it was delivered.)
    pub fn append_seal(
        &self,
        state: &mut State,
        sealed: SignedSealed,
        applied: Option<u64>,
    ) -> Result<Wake, OrderError> {
        self.check(state)?;
        self.check_applied(state, applied)?;
        let seal = &sealed.seal;
        let count = seal.tx_count();
        if seal.number != state.chain.next_number()
            || seal.first != state.chain.next_first()
            || seal.previous_hash != state.chain.previous_hash()
            || count == 0
            || seal.last > state.head
            || count > state.unsealed.len() as u64
        {
            return Err(OrderError::Log(format!(
                "seal {} over seqs {}..={} does not follow seal {} (the log ends at seq {})",
                seal.number.0,
                seal.first,
                seal.last,
                state.chain.next_number().0 - 1,
                state.head
            )));
        }
        debug_assert_eq!(
            seal.tx_root,
            block::merkle_root(&state.unsealed_leaves(count as usize)),
            "the seal covers the oldest unsealed transactions"
        );
        let number = seal.number;
        let at = match self.write(state, &[(SEAL, sealed.bytes.as_slice())], applied) {
            Ok(mut places) => places.remove(0),
            Err(error) => {
                let failure = format!("writing seal: {error}");
                self.fail(state, failure.clone());
                return Err(OrderError::Log(failure));
            }
        };
        state.seals.push(at);
        state.drain_unsealed(count as usize);
        state.chain = SealChain::after(&sealed);
        if let Some(network) = &mut state.network {
            network.trust.forget_before(state.chain.next_first());
        }
        state.sealed = number;
        state.pending_seals.push_back((number, sealed.seal.last));
        if self.replicated {
            let (head, sealed) = (state.head, state.sealed);
            state.mark_durable(head, sealed);
        }
        Ok(Wake {
            flusher: true,
            deliveries: self.replicated,
            sealer: false,
        })
    }

    /// For an orderer that follows the configuration: the definition in force and the seq
    /// of the update that made it ([`Seq::ZERO`] for the genesis one), unless that seq is
    /// `seen` already. `None` too when this orderer follows no configuration.
    pub fn definition_since(&self, seen: Option<Seq>) -> Option<(Seq, NetworkDefinition)> {
        let state = self.lock();
        let network = state.network.as_ref()?;
        let (seq, definition) = match network.applied.last() {
            Some((seq, definition)) => (*seq, definition),
            None => (Seq::ZERO, &network.genesis),
        };
        (Some(seq) != seen).then(|| (seq, definition.clone()))
    }

    /// For an orderer that follows the configuration: when the `_config` update about to
    /// be appended at `seq` is one every peer will apply, records it ([`CONFIG_FILE`])
    /// and makes the MSP trust what it says from now on; whether it was one.
    fn follow(
        &self,
        state: &mut State,
        seq: Seq,
        now_ms: u64,
        signed_transaction: &[u8],
    ) -> std::io::Result<bool> {
        let Some(network) = &mut state.network else {
            return Ok(false);
        };
        let (current, version) = network.current();
        let now_s = i64::try_from(now_ms / 1000).unwrap_or(i64::MAX);
        let Some(next) =
            netconfig::valid_update(current, version, &self.msp, signed_transaction, now_s)
        else {
            return Ok(false);
        };
        network
            .trust
            .push(seq, Arc::new(next.clone()))
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        network.applied.push((seq, next));
        write_applied(&self.dir, &network.applied)?;
        if let Some((_, next)) = network.applied.last()
            && let Err(error) = next.apply_to(&self.msp)
        {
            return Err(std::io::Error::other(error.to_string()));
        }
        tracing::info!(
            seq = seq.0,
            "the orderer follows the network configuration update"
        );
        Ok(true)
    }

    /// The flusher: one sync covers everything appended before it started.
    fn run_flusher(&self) {
        let mut state = self.lock();
        loop {
            while state.failed.is_none() && !state.unflushed {
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
            state.unflushed = false;
            drop(state);
            let flush = Instant::now();
            let flushed = self.reader.sync();
            self.flush_seconds.observe(flush.elapsed().as_secs_f64());
            state = self.lock();
            if let Err(error) = flushed {
                self.fail(&mut state, format!("flush failed: {error}"));
                return;
            }
            if state.mark_durable(head, sealed) {
                self.for_deliveries.notify_all();
            }
        }
    }
}

/// For a replicated log: the index its last applied mark holds (0 when it has none),
/// after dropping every record after that mark from `records` and from the file. They
/// are what a crash left of a group's write: the group is applied again, whole.
fn cut_after_applied(
    log: &mut RecordFile,
    reader: &RecordReader,
    records: &mut Vec<RecordAt>,
) -> Result<u64, OrderError> {
    let last = records.iter().rposition(|at| at.kind == APPLIED);
    let applied = match last {
        None => 0,
        Some(i) => {
            let at = records[i];
            let payload = reader.read(at).map_err(log_error)?;
            let bytes: [u8; 8] = payload.as_slice().try_into().map_err(|_| {
                OrderError::Corrupt(format!(
                    "the applied mark at byte {} holds {} bytes, not 8",
                    at.offset,
                    payload.len()
                ))
            })?;
            u64::from_le_bytes(bytes)
        }
    };
    let kept = last.map_or(0, |i| i + 1);
    if let Some(first) = records.get(kept) {
        let start = first
            .offset
            .checked_sub(HEADER)
            .ok_or_else(|| OrderError::Corrupt(format!("record at byte {}", first.offset)))?;
        tracing::warn!(
            records = records.len() - kept,
            offset = start,
            applied,
            "the replicated orderer log ends in a group without its applied mark (a crash \
             during its write); cut it, to apply it again"
        );
        log.cut(start).map_err(log_error)?;
        records.truncate(kept);
    }
    Ok(applied)
}

/// The ordered stream, kept in its log (see the module doc).
pub struct StreamLog {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The OS lock on the log directory.
    _dir_lock: File,
}

impl StreamLog {
    /// Opens (or creates) the log in `dir`, rebuilds its index and starts its flusher.
    /// `signer` (an orderer identity) signs the seals an orderer on top cuts; `msp`
    /// checks submitters, and follows the configuration if `config` says so.
    pub fn open(
        dir: &Path,
        config: OrdererConfig,
        msp: Arc<Msp>,
        signer: Signer,
        options: StreamOptions,
    ) -> Result<StreamLog, OrderError> {
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
            file: mut log,
            mut records,
            torn_at,
        } = RecordFile::open(&dir.join(LOG_FILE)).map_err(log_error)?;
        if let Some(offset) = torn_at {
            tracing::warn!(
                offset,
                "orderer log ended in a torn record (a crash during a write); cut it"
            );
        }
        let reader = log.handle(config.sync).map_err(log_error)?;
        let applied = if options.replicated {
            cut_after_applied(&mut log, &reader, &mut records)?
        } else {
            0
        };
        let (mut txs, mut seals) = (Vec::new(), Vec::new());
        for at in records {
            match at.kind {
                TX => txs.push(at),
                SEAL => seals.push(at),
                APPLIED if options.replicated => {}
                SEAL_BYTES_ONLY | SEAL_ONE_SIGNATURE => {
                    return Err(OrderError::Corrupt(format!(
                        "{} holds a seal (at byte {}) of an older format, whose Merkle leaves \
                         do not cover the transactions' timestamps or whose signature is not \
                         a list; move the log away to start afresh",
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
                let trust = SealTrust::since(chain.next_first(), genesis, &applied)
                    .map_err(|e| OrderError::Corrupt(e.to_string()))?;
                let followed = Followed {
                    genesis: genesis.clone(),
                    applied,
                    trust,
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
                let ordered = OrderedTx::decode(&bytes)?;
                Ok(Unsealed {
                    leaf: ordered.leaf(),
                    arrived: now,
                    bytes: ordered.transaction.len(),
                })
            })
            .collect::<Result<VecDeque<_>, OrderError>>()?;
        let unsealed_bytes = unsealed.iter().map(|unsealed| unsealed.bytes).sum();
        let inner = Arc::new(Inner {
            config,
            dir: dir.to_path_buf(),
            msp,
            signer,
            replicated: options.replicated,
            reader,
            state: Mutex::new(State {
                log,
                txs,
                seals,
                head,
                durable: head,
                unflushed: false,
                unsealed,
                unsealed_bytes,
                recent: VecDeque::new(),
                recent_bytes: 0,
                chain,
                sealed,
                sealed_durable: sealed,
                sealed_durable_through: sealed_through,
                pending_seals: VecDeque::new(),
                applied,
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
        let flusher = {
            let inner = inner.clone();
            let stopped = inner.clone();
            let run = move || inner.run_flusher();
            std::thread::Builder::new()
                .name("runnel-order-flush".to_string())
                .spawn(guarded("runnel-order-flush".into(), run, move |why| {
                    let mut state = stopped.lock();
                    stopped.fail(&mut state, why);
                }))
                .map_err(|e| OrderError::Log(format!("starting runnel-order-flush: {e}")))?
        };
        Ok(StreamLog {
            inner,
            threads: Mutex::new(vec![flusher]),
            _dir_lock: dir_lock,
        })
    }

    /// What the log's threads, its deliveries and the orderer on top share.
    pub fn inner(&self) -> &Arc<Inner> {
        &self.inner
    }

    /// [`Inner::append_txs`], taking the lock for it alone.
    pub fn append_txs(
        &self,
        txs: Vec<StreamTx>,
        ids: Ids,
        applied: Option<u64>,
    ) -> Result<Vec<Seq>, OrderError> {
        let mut state = self.inner.lock();
        let (seqs, wake) = self.inner.append_txs(&mut state, txs, ids, applied)?;
        drop(state);
        self.inner.wake(wake);
        Ok(seqs)
    }

    /// [`Inner::append_seal`], taking the lock for it alone.
    pub fn append_seal(
        &self,
        sealed: SignedSealed,
        applied: Option<u64>,
    ) -> Result<(), OrderError> {
        let mut state = self.inner.lock();
        let wake = self.inner.append_seal(&mut state, sealed, applied)?;
        drop(state);
        self.inner.wake(wake);
        Ok(())
    }

    /// For the leader of a cluster: what the replay memory would answer for `tx_id`,
    /// recording nothing (its id is recorded when its entry is applied).
    pub fn check_replay(&self, tx_id: &TxId, proposal_ms: u64, now_ms: u64) -> Seen {
        self.inner.lock().replays.check(tx_id, proposal_ms, now_ms)
    }

    /// For the leader of a cluster: what [`Inner::cut`] finds. A seal's chain does not
    /// move: the seal is appended when the entry carrying it is applied
    /// ([`StreamLog::accept_seal`]).
    pub fn next_seal(&self, signer: &Signer, now_ms: u64) -> Cut {
        let state = self.inner.lock();
        self.inner.cut(&state, signer, now_ms)
    }

    /// Applies a replicated seal (`bytes`, a `SignedSeal`): appended, with the applied
    /// mark, when it is the next seal over the oldest unsealed transactions, checked as a
    /// peer checks it ([`SealChain::accept`]): signed by an orderer the definition in
    /// force at its last seq names when this orderer follows the configuration, else by
    /// any orderer of `msp`; `true` then. Otherwise (a seal another overtook, or one its
    /// signer may not sign) only the applied mark is written: `false`.
    pub fn accept_seal(
        &self,
        bytes: &[u8],
        msp: &Msp,
        applied: Option<u64>,
    ) -> Result<bool, OrderError> {
        let mut state = self.inner.lock();
        let (count, last) = match block::decode_signed_seal(bytes) {
            Ok(sealed) => (
                usize::try_from(sealed.seal.tx_count()).unwrap_or(usize::MAX),
                sealed.seal.last,
            ),
            Err(_) => (usize::MAX, Seq::ZERO),
        };
        let accepted = (count <= state.unsealed.len())
            .then(|| {
                let leaves = state.unsealed_leaves(count);
                let sealers = match &state.network {
                    Some(network) => network.trust.after(last),
                    None => Sealers::any_orderer(msp),
                };
                let accepted = state.chain.clone().accept(bytes, &leaves, &sealers);
                if let Err(BlockError::NotAMember { orderer, sequence }) = &accepted {
                    tracing::warn!(
                        %orderer,
                        sequence,
                        "a seal signed by an orderer the configuration does not name was skipped"
                    );
                }
                accepted.ok()
            })
            .flatten();
        let (wake, appended) = match accepted {
            Some(sealed) => (self.inner.append_seal(&mut state, sealed, applied)?, true),
            None => {
                let (_, wake) =
                    self.inner
                        .append_txs(&mut state, Vec::new(), Ids::Record, applied)?;
                (wake, false)
            }
        };
        drop(state);
        self.inner.wake(wake);
        Ok(appended)
    }

    /// Stops the log on a failure found above it (the replicated orderer's consensus):
    /// deliveries and appends report it from now on.
    pub fn fail(&self, failure: String) {
        let mut state = self.inner.lock();
        self.inner.fail(&mut state, failure);
    }

    /// For an orderer that follows the configuration: the definition in force and the seq
    /// of the update that made it, unless that seq is `seen` already
    /// ([`Inner::definition_since`]).
    pub fn definition_since(&self, seen: Option<Seq>) -> Option<(Seq, NetworkDefinition)> {
        self.inner.definition_since(seen)
    }

    /// For a replicated orderer whose members sign each seal together: the chain the next
    /// seal continues, and the leaves and timestamps of the transactions not sealed yet.
    pub fn unsealed(&self) -> (SealChain, Vec<Hash>) {
        let state = self.inner.lock();
        let count = state.unsealed.len();
        (state.chain.clone(), state.unsealed_leaves(count))
    }

    /// The stored seal of block `number` (a `SignedSeal`), if the log holds it.
    pub fn seal(&self, number: BlockNumber) -> Option<SignedSealed> {
        let state = self.inner.lock();
        self.inner.read_seal(&state, number).ok()
    }

    /// The last seq appended and the last block sealed.
    pub fn position(&self) -> (Seq, BlockNumber) {
        let state = self.inner.lock();
        (state.head, state.sealed)
    }

    /// In a replicated log, the index of the last replicated entry applied: after open,
    /// the one its last applied mark holds; 0 when none.
    pub fn applied_index(&self) -> u64 {
        self.inner.lock().applied
    }

    /// The stream from transaction `from` and seal `next_block` on.
    pub fn deliver(
        &self,
        from: Seq,
        next_block: BlockNumber,
    ) -> Result<Box<dyn Delivery>, OrderError> {
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
        Ok(Box::new(StreamDelivery {
            inner: self.inner.clone(),
            next_seq: Seq(from.0.max(1)),
            next_block: BlockNumber(next_block.0.max(1)),
            durable_sent: Seq::ZERO,
            seal: None,
        }))
    }

    /// The last seq appended.
    pub fn height(&self) -> Seq {
        self.inner.lock().head
    }

    /// The last seq durable.
    pub fn durable_height(&self) -> Seq {
        self.inner.lock().durable
    }

    /// Why the log no longer takes appends (it failed, or was closed).
    pub fn failure(&self) -> Option<String> {
        let state = self.inner.lock();
        match (&state.failed, state.closed) {
            (Some(failure), _) => Some(failure.clone()),
            (None, true) => Some("the orderer is closed".to_string()),
            (None, false) => None,
        }
    }

    /// The durations of the log's flushes so far, in seconds; the handle shares the live
    /// histogram.
    pub fn flush_seconds(&self) -> Arc<Histogram> {
        self.inner.flush_seconds.clone()
    }

    /// Refuses appends from now on, wakes every thread waiting on the log, lets the
    /// flusher sync what was appended and joins it. Deliveries end with
    /// [`OrderError::Closed`] once drained. Idempotent.
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

impl Drop for StreamLog {
    fn drop(&mut self) {
        self.close();
    }
}

/// One subscriber's position in the stream.
struct StreamDelivery {
    inner: Arc<Inner>,
    next_seq: Seq,
    next_block: BlockNumber,
    durable_sent: Seq,
    /// Seal `next_block`, read once and held until its transactions are delivered.
    seal: Option<SignedSealed>,
}

impl StreamDelivery {
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

impl Delivery for StreamDelivery {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{NetworkIdentities, Role};
    use crate::orderer::replay::Seen;
    use crate::records::SyncMode;

    const SOLO: StreamOptions = StreamOptions { replicated: false };
    const REPLICATED: StreamOptions = StreamOptions { replicated: true };

    /// Long enough for anything that should arrive; never waited out on success.
    const PATIENCE: Duration = Duration::from_secs(10);

    struct Fixture {
        msp: Arc<Msp>,
        signer: Signer,
    }

    fn fixture() -> Fixture {
        let ids = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        Fixture {
            msp: Arc::new(ids.msp().unwrap()),
            signer: ids.org("Org1").unwrap().signer(Role::Orderer).unwrap(),
        }
    }

    impl Fixture {
        fn open(&self, dir: &Path, options: StreamOptions) -> Result<StreamLog, OrderError> {
            let config = OrdererConfig {
                sync: SyncMode::Data,
                ..OrdererConfig::default()
            };
            StreamLog::open(dir, config, self.msp.clone(), self.signer.clone(), options)
        }
    }

    /// Transactions `first..first + n` as an orderer on top hands them over: the stream
    /// never looks inside them, so any bytes do.
    fn txs(first: u64, n: u64) -> Vec<StreamTx> {
        let now_ms = tx::now_ms();
        (first..first + n)
            .map(|i| {
                let signed_transaction = format!("transaction {i}").into_bytes();
                StreamTx {
                    tx_id: TxId(tx::sha256(&signed_transaction)),
                    signed_transaction,
                    timestamp_ms: now_ms,
                    proposal_ms: now_ms,
                    config_update: false,
                }
            })
            .collect()
    }

    fn leaves(txs: &[StreamTx]) -> Vec<Hash> {
        txs.iter()
            .map(|tx| block::leaf(tx.timestamp_ms, &tx.signed_transaction))
            .collect()
    }

    fn next(delivery: &mut dyn Delivery) -> Delivered {
        delivery
            .next(PATIENCE)
            .unwrap()
            .expect("an item within the patience")
    }

    /// Reads transactions up to and with the next seal: the order they came in ('t' and
    /// 'S', durability marks left out), the transactions' leaves, the seal.
    fn read_through_seal(delivery: &mut dyn Delivery) -> (String, Vec<Hash>, SignedSealed) {
        let (mut order, mut leaves) = (String::new(), Vec::new());
        loop {
            match next(delivery) {
                Delivered::Tx(ordered) => {
                    order.push('t');
                    leaves.push(ordered.leaf());
                }
                Delivered::Seal(sealed) => {
                    order.push('S');
                    return (order, leaves, sealed);
                }
                Delivered::Durable(_) => {}
            }
        }
    }

    fn wait_for(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done() {
            assert!(Instant::now() < deadline, "waited too long for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    #[should_panic(expected = "invariant broken: durability never passes what the log holds")]
    fn marking_durable_past_the_logs_end_is_an_invariant_broken() {
        let fixture = fixture();
        let dir = tempfile::tempdir().unwrap();
        let log = fixture.open(dir.path(), SOLO).unwrap();
        let inner = log.inner();
        let mut state = inner.lock();
        let (_, _wake) = inner
            .append_txs(&mut state, txs(1, 2), Ids::Checked, None)
            .unwrap();
        state.mark_durable(Seq(2), BlockNumber(0));
        state.mark_durable(Seq(3), BlockNumber(0));
    }

    #[test]
    fn a_replicated_log_counts_what_it_appends_durable_without_waiting_for_a_flush() {
        let fixture = fixture();
        for options in [SOLO, REPLICATED] {
            let dir = tempfile::tempdir().unwrap();
            let log = fixture.open(dir.path(), options).unwrap();
            let mut delivery = log.deliver(Seq(1), BlockNumber(1)).unwrap();
            let appended = txs(1, 2);
            let (ids, applied) = match options.replicated {
                true => (Ids::Record, Some(1)),
                false => (Ids::Checked, None),
            };
            let inner = log.inner();
            let mut state = inner.lock();
            let (seqs, wake) = inner
                .append_txs(&mut state, appended.clone(), ids, applied)
                .unwrap();
            assert_eq!(seqs, [Seq(1), Seq(2)]);
            // The flusher publishes what it synced under this lock, still held: only a
            // replicated log counts the append durable already.
            let durable = if options.replicated {
                Seq(2)
            } else {
                Seq::ZERO
            };
            assert_eq!(state.durable, durable, "{options:?}");
            drop(state);
            inner.wake(wake);
            let now_ms = tx::now_ms();
            let replay =
                inner
                    .lock()
                    .replays
                    .insert(&appended[0].tx_id, appended[0].proposal_ms, now_ms);
            if options.replicated {
                // The mark comes first, covering both, then the transactions.
                assert_eq!(next(&mut *delivery), Delivered::Durable(Seq(2)));
                for (seq, sent) in [Seq(1), Seq(2)].into_iter().zip(&appended) {
                    match next(&mut *delivery) {
                        Delivered::Tx(ordered) => {
                            assert_eq!(ordered.seq, seq);
                            assert_eq!(ordered.transaction, sent.signed_transaction);
                        }
                        other => panic!("{other:?}"),
                    }
                }
                // A replica remembers what it applied: once it leads, it refuses replays.
                assert_eq!(replay, Seen::Replay);
            } else {
                // The solo sequencer refused replays before appending.
                assert_eq!(replay, Seen::New);
                wait_for("the flush", || log.durable_height() == Seq(2));
            }
            // Either way the flusher syncs the file.
            wait_for("a flush", || log.flush_seconds().snapshot().count > 0);
            assert_eq!(log.failure(), None);
        }
    }

    #[test]
    fn a_replicated_log_resumes_after_its_last_applied_mark_and_drops_a_group_cut_short() {
        let fixture = fixture();
        let dir = tempfile::tempdir().unwrap();
        {
            let log = fixture.open(dir.path(), REPLICATED).unwrap();
            assert_eq!(log.applied_index(), 0);
            let seqs = log.append_txs(txs(1, 2), Ids::Record, Some(5)).unwrap();
            assert_eq!(seqs, [Seq(1), Seq(2)]);
            let seqs = log.append_txs(txs(3, 3), Ids::Record, Some(9)).unwrap();
            assert_eq!(seqs, [Seq(3), Seq(4), Seq(5)]);
            // An index not past the last is refused, and nothing is written.
            for index in [9, 2] {
                assert!(matches!(
                    log.append_txs(txs(6, 1), Ids::Record, Some(index)),
                    Err(OrderError::Log(_))
                ));
            }
            assert_eq!(
                (log.height(), log.applied_index(), log.failure()),
                (Seq(5), 9, None)
            );
        }
        let log = fixture.open(dir.path(), REPLICATED).unwrap();
        assert_eq!(
            (log.applied_index(), log.height(), log.durable_height()),
            (9, Seq(5), Seq(5))
        );
        // A group whose mark never landed, as a crash between its records and its mark
        // would leave it.
        let seqs = log.append_txs(txs(6, 2), Ids::Record, None).unwrap();
        assert_eq!(seqs, [Seq(6), Seq(7)]);
        drop(log);
        // And more of it, synced: a sync does not make a group whole.
        {
            let Opened { mut file, .. } = RecordFile::open(&dir.path().join(LOG_FILE)).unwrap();
            let torn: Vec<Vec<u8>> = (8..=9)
                .map(|seq| {
                    OrderedTx {
                        seq: Seq(seq),
                        timestamp_ms: tx::now_ms(),
                        transaction: b"part of a group".to_vec(),
                    }
                    .into_bytes()
                })
                .collect();
            file.append_records(torn.iter().map(|bytes| (TX, bytes.as_slice())))
                .unwrap();
            file.handle(SyncMode::Data).unwrap().sync().unwrap();
        }
        let log = fixture.open(dir.path(), REPLICATED).unwrap();
        assert_eq!((log.applied_index(), log.height()), (9, Seq(5)));
        let mut delivery = log.deliver(Seq(5), BlockNumber(1)).unwrap();
        assert_eq!(next(&mut *delivery), Delivered::Durable(Seq(5)));
        assert!(matches!(next(&mut *delivery), Delivered::Tx(ordered) if ordered.seq == Seq(5)));
        assert_eq!(delivery.next(Duration::from_millis(50)).unwrap(), None);
        // The group is applied again, whole, at the seqs it had.
        let seqs = log.append_txs(txs(6, 2), Ids::Record, Some(10)).unwrap();
        assert_eq!(seqs, [Seq(6), Seq(7)]);
        drop(delivery);
        drop(log);
        // What was cut is gone from the file: every group ends with its mark.
        let Opened { records, .. } = RecordFile::open(&dir.path().join(LOG_FILE)).unwrap();
        let kinds: String = records.iter().map(|at| at.kind as char).collect();
        assert_eq!(kinds, "ttatttatta");
        let log = fixture.open(dir.path(), REPLICATED).unwrap();
        assert_eq!((log.applied_index(), log.height()), (10, Seq(7)));
        drop(log);

        // A log that is not replicated refuses the marks, in its file and in an append.
        assert!(matches!(
            fixture.open(dir.path(), SOLO),
            Err(OrderError::Corrupt(_))
        ));
        let solo_dir = tempfile::tempdir().unwrap();
        let solo = fixture.open(solo_dir.path(), SOLO).unwrap();
        assert!(matches!(
            solo.append_txs(txs(1, 1), Ids::Checked, Some(1)),
            Err(OrderError::Log(_))
        ));
        assert_eq!((solo.height(), solo.failure()), (Seq::ZERO, None));
    }

    /// A block is bounded in bytes as well as in count: once the unsealed transactions'
    /// bytes reach `SEAL_TX_BYTES_MAX`, the next block is due at once and ends with the
    /// transaction that reached it, far below `seal_max_txs` and before `seal_max_delay`.
    #[test]
    fn a_block_is_cut_once_its_transactions_bytes_reach_the_bound_without_waiting() {
        let fixture = fixture();
        let dir = tempfile::tempdir().unwrap();
        let config = OrdererConfig {
            sync: SyncMode::Data,
            seal_max_txs: 500,
            seal_max_delay: Duration::from_secs(3600),
            ..OrdererConfig::default()
        };
        let log = StreamLog::open(
            dir.path(),
            config,
            fixture.msp.clone(),
            fixture.signer.clone(),
            SOLO,
        )
        .unwrap();
        let big = |i: u64| {
            let mut signed_transaction = vec![0u8; SEAL_TX_BYTES_MAX / 4];
            signed_transaction[..8].copy_from_slice(&i.to_be_bytes());
            StreamTx {
                tx_id: TxId(tx::sha256(&signed_transaction)),
                signed_transaction,
                timestamp_ms: tx::now_ms(),
                proposal_ms: tx::now_ms(),
                config_update: false,
            }
        };
        log.append_txs((1..=3).map(big).collect(), Ids::Checked, None)
            .unwrap();
        // Three quarters of the bound, and an hour's delay: nothing is due yet.
        assert!(matches!(
            log.next_seal(&fixture.signer, tx::now_ms()),
            Cut::Wait(Some(_))
        ));
        log.append_txs((4..=6).map(big).collect(), Ids::Checked, None)
            .unwrap();
        let Cut::Seal(sealed) = log.next_seal(&fixture.signer, tx::now_ms()) else {
            panic!("a block is due once its bytes reach the bound");
        };
        assert_eq!((sealed.seal.first, sealed.seal.last), (Seq(1), Seq(4)));
        log.append_seal(sealed, None).unwrap();
        // What is left is below the bound again.
        assert!(matches!(
            log.next_seal(&fixture.signer, tx::now_ms()),
            Cut::Wait(Some(_))
        ));
    }

    #[test]
    fn a_seal_appended_is_delivered_after_its_transactions_and_the_chain_goes_on_after_reopen() {
        let fixture = fixture();
        for options in [SOLO, REPLICATED] {
            let dir = tempfile::tempdir().unwrap();
            let (ids, applied): (Ids, fn(u64) -> Option<u64>) = match options.replicated {
                true => (Ids::Record, Some),
                false => (Ids::Checked, |_| None),
            };
            let first = {
                let log = fixture.open(dir.path(), options).unwrap();
                let appended = txs(1, 3);
                let leaves = leaves(&appended);
                log.append_txs(appended, ids, applied(1)).unwrap();
                // A seal over more than was appended is refused, and nothing is written.
                let mut too_many = leaves.clone();
                too_many.push(leaves[0]);
                let beyond =
                    SealChain::genesis().seal_next(&fixture.signer, &too_many, tx::now_ms());
                assert!(matches!(
                    log.append_seal(beyond, applied(2)),
                    Err(OrderError::Log(_))
                ));
                let sealed = SealChain::genesis().seal_next(&fixture.signer, &leaves, tx::now_ms());
                log.append_seal(sealed.clone(), applied(2)).unwrap();
                // The same seal again does not follow the chain.
                assert!(matches!(
                    log.append_seal(sealed.clone(), applied(3)),
                    Err(OrderError::Log(_))
                ));
                assert_eq!(log.failure(), None);
                let mut delivery = log.deliver(Seq(1), BlockNumber(1)).unwrap();
                let (order, delivered, seal) = read_through_seal(&mut *delivery);
                assert_eq!(order, "tttS");
                assert_eq!(seal, sealed);
                let mut chain = SealChain::genesis();
                chain
                    .accept(&seal.bytes, &delivered, &Sealers::any_orderer(&fixture.msp))
                    .unwrap();
                sealed
            };
            let log = fixture.open(dir.path(), options).unwrap();
            if options.replicated {
                assert_eq!(log.applied_index(), 2);
            }
            let appended = txs(4, 2);
            let leaves = leaves(&appended);
            assert_eq!(
                log.append_txs(appended, ids, applied(4)).unwrap(),
                [Seq(4), Seq(5)]
            );
            let second = SealChain::after(&first).seal_next(&fixture.signer, &leaves, tx::now_ms());
            log.append_seal(second.clone(), applied(5)).unwrap();
            let mut delivery = log.deliver(Seq(4), BlockNumber(2)).unwrap();
            let (order, delivered, seal) = read_through_seal(&mut *delivery);
            assert_eq!(order, "ttS");
            assert_eq!(seal, second);
            let mut chain = SealChain::after(&first);
            let accepted = chain
                .accept(&seal.bytes, &delivered, &Sealers::any_orderer(&fixture.msp))
                .unwrap();
            assert_eq!(
                (
                    accepted.seal.number,
                    accepted.seal.first,
                    accepted.seal.last
                ),
                (BlockNumber(2), Seq(4), Seq(5))
            );
            drop(delivery);
            drop(log);
            // Both seals are in the log, in order, after their transactions.
            let log = fixture.open(dir.path(), options).unwrap();
            let mut delivery = log.deliver(Seq(1), BlockNumber(1)).unwrap();
            let mut chain = SealChain::genesis();
            for expected in ["tttS", "ttS"] {
                let (order, delivered, seal) = read_through_seal(&mut *delivery);
                assert_eq!(order, expected);
                chain
                    .accept(&seal.bytes, &delivered, &Sealers::any_orderer(&fixture.msp))
                    .unwrap();
            }
        }
    }
}
