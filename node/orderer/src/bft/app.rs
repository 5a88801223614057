//! The BFT orderer's side of consensus: what it proposes when it leads, what it votes
//! for, how a finalized batch becomes seqs in its stream, and how the cluster signs each
//! block's seal together.
//!
//! - **Mempool.** A transaction submitted to this orderer (admitted as the solo and Raft
//!   orderers admit one) waits here, and goes to the other orderers too, so that
//!   whichever leads next proposes it. Bounded in bytes, with each other orderer's share.
//! - **Propose** (this orderer leads the view): every waiting transaction not already in
//!   a batch the proposal builds on, up to [`BATCH_BYTES_TARGET`] (while the parent is
//!   not final yet, after up to [`FILL_WAIT`] for more), stamped with this orderer's
//!   clock, kept on disk, then sent to the others; the engine orders its digest.
//! - **Verify** (another leads): waits for the batch's bytes, checks that it builds on the
//!   parent the engine names in the view the engine names, keeps it on disk, then votes.
//! - **Apply** (a finalization reported): the batches it makes final, oldest first, go to
//!   the stream log, each transaction once (one already ordered within the replay window
//!   is left out, judged by the batch's time: every orderer leaves out the same). The
//!   batch's transactions form one block. This orderer signs the block's seal and sends
//!   its signature to the others; once `n - f` distinct members' signatures over the same
//!   seal are in, the seal goes to the log ([`StreamLog::accept_seal`] checks it as a
//!   peer would), and the next batch is applied. An orderer behind the others asks with
//!   its own signature, and is answered with the complete seal.
//!
//! Everything a batch becomes is a function of the batches and their order: every honest
//! orderer's stream is the same, byte for byte, and so is every seal it signs. An orderer
//! that signs a different seal for a block is logged by name.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use commonware_actor::Feedback;
use commonware_consensus::simplex::Plan;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::{Activity, Attributable as _, Context};
use commonware_consensus::{Automaton, CertifiableAutomaton, Relay, Reporter};
use commonware_cryptography::ed25519::PublicKey;
use commonware_cryptography::sha256::Digest;
use commonware_utils::Participant;
use commonware_utils::channel::fallible::OneshotExt as _;
use commonware_utils::channel::oneshot;
use commonware_utils::ordered::{Quorum as _, Set};
use prost::Message as _;

use super::batch::{BATCH_BYTES_TARGET, Batch, BatchLog, Held};
use super::net::{self, Network};
use runnel_ledger::block::{self, Seal, seal_signature, signed_by};
use runnel_ledger::identity::{Msp, NetworkDefinition, Signer};
use runnel_ledger::ids::{BlockNumber, Seq, TxId};
use runnel_ledger::orderer::replay::Seen;
use runnel_ledger::orderer::stream::{Ids, StreamLog, StreamTx};
use runnel_ledger::orderer::{OrderError, Ordered};
use runnel_ledger::proto::{SealSignature, SignedSeal};
use runnel_ledger::tx;

/// How long a leader with nothing to propose waits for a transaction before it proposes
/// an empty batch (the view goes on; an empty batch makes no block).
const IDLE_WAIT: Duration = Duration::from_millis(200);

/// How long a leader whose parent batch is not final yet waits for its batch to fill
/// before it proposes (see [`Core::fill`]). Under 64 clients through one peer, 4 ms
/// ordered 1,385 tx/s instead of 1,100 at a lower p50 (46 ms instead of 57), and one
/// client's p50 did not move (docs/perf-log.md).
const FILL_WAIT: Duration = Duration::from_millis(4);

/// Bytes of applied batches an orderer keeps for those behind it: past it, an orderer
/// down that long catches up from the others' streams instead.
const RETAINED_BYTES_MAX: usize = 256 << 20;

/// Views past the last applied one whose batches an orderer takes: a batch proposed
/// further ahead is dropped (no honest leader is that far ahead of a quorum).
const VIEWS_AHEAD_MAX: u64 = 1_024;

/// Transaction bytes the mempool holds at most; each other orderer may fill its share.
const MEMPOOL_BYTES_MAX: usize = 256 << 20;

/// How often this orderer sends its signature over a seal again while it waits for a
/// quorum (a lost message, an orderer that was down).
const SEAL_RESEND: Duration = Duration::from_millis(200);

/// Seals ahead of the one this orderer gathers whose signatures it keeps.
const SEALS_AHEAD_MAX: u64 = 64;

/// Complete seals kept in memory for the orderers that ask for them again.
const RECENT_SEALS_MAX: usize = 64;

/// How far a batch's clock may be from this orderer's before it refuses to vote for it
/// (a leader whose clock is that far off is skipped; it decides nothing).
const CLOCK_SKEW_MAX_MS: u64 = 30_000;

/// A transaction waiting to be proposed.
struct Pending {
    bytes: Vec<u8>,
    /// The orderer it came from (`None`: submitted here).
    origin: Option<PublicKey>,
}

#[derive(Default)]
struct Mempool {
    by_id: HashMap<TxId, Pending>,
    order: VecDeque<TxId>,
    bytes: usize,
    by_origin: HashMap<Option<PublicKey>, usize>,
}

/// A verify waiting for its batch.
struct Waiting {
    view: u64,
    parent: (u64, Digest),
    answer: oneshot::Sender<bool>,
}

/// Batches held, and verifies waiting for theirs.
#[derive(Default)]
struct Batches {
    held: HashMap<Digest, Held>,
    waiting: HashMap<Digest, Vec<Waiting>>,
    /// Applied batches still held, oldest first, for orderers that fetch them, and
    /// their bytes.
    retained: VecDeque<Digest>,
    retained_bytes: usize,
}

impl Batches {
    /// Keeps `applied` (just applied) for orderers behind this one, forgetting the
    /// oldest applied beyond [`RETAINED_BYTES_MAX`].
    fn retain(&mut self, applied: &Held) {
        self.retained.push_back(applied.digest);
        self.retained_bytes += applied.bytes.len();
        while self.retained_bytes > RETAINED_BYTES_MAX
            && let Some(oldest) = self.retained.pop_front()
        {
            if let Some(held) = self.held.remove(&oldest) {
                self.retained_bytes -= held.bytes.len();
            }
        }
    }
}

/// The seal this orderer gathers signatures for, and those that came early.
#[derive(Default)]
struct Gathering {
    /// The block whose seal is gathered now, with the seal and the signatures over it.
    current: Option<(Seal, tx::Hash, Vec<SealSignature>)>,
    /// Signatures for later blocks, by block.
    ahead: BTreeMap<u64, Vec<Early>>,
}

/// A signature for a later block: the seal it signs, that seal's hash, the signature, and
/// the member that sent it.
type Early = (Arc<Seal>, tx::Hash, SealSignature, PublicKey);

/// What the BFT orderer's threads share.
pub struct Core {
    pub stream: Arc<StreamLog>,
    pub network: Arc<Network>,
    signer: Signer,
    msp: Arc<Msp>,
    genesis: Digest,
    mempool: Mutex<Mempool>,
    new_tx: tokio::sync::Notify,
    batches: Mutex<Batches>,
    log: Mutex<BatchLog>,
    /// The last batch applied: its view and digest (unknown after a restart until the
    /// next batch is applied).
    applied: Mutex<(u64, Option<Digest>)>,
    /// Submitters waiting for their transactions' seqs.
    /// Submitters waiting for their transactions' seqs: one transaction submitted
    /// twice at once (a client's retry racing the first) answers both.
    waiters: Mutex<HashMap<TxId, Vec<(u64, Answer)>>>,
    /// The next waiter's number.
    next_waiter: AtomicU64,
    gathering: Mutex<Gathering>,
    gathered: Condvar,
    /// The batch the applier waits for (a finalization named it), taken from whoever sends
    /// it, whatever its view.
    wanted: Mutex<Option<Digest>>,
    /// Finalized batches to apply: (view, digest).
    finalized: crossbeam_channel::Sender<(u64, Digest)>,
    /// Batches that arrived (for an apply waiting for one it did not hold).
    arrived: Condvar,
    arrived_lock: Mutex<()>,
    failure: Mutex<Option<String>>,
    /// The definition in force in the stream (the seq of its update) and its MSP, for
    /// the seal signatures the others send.
    trusted: Mutex<Option<Trusted>>,
    /// The last complete seals, newest last: (block, seal hash, encoded `SignedSeal`).
    recent_seals: Mutex<VecDeque<(u64, tx::Hash, Vec<u8>)>>,
    /// For each member, the sealed block it last sent its signature for.
    asked: Mutex<HashMap<PublicKey, u64>>,
    /// The view the engine is at, as far as this orderer has seen.
    pub views: Arc<super::sections::Views>,
    /// Batches applied since this orderer started.
    pub batches_applied: AtomicU64,
    /// Lies detected since this orderer started (conflicting votes, other seals).
    pub equivocations: AtomicU64,
    /// How long each seal took to gather its quorum.
    pub seal_seconds: Arc<runnel_ledger::metrics::Histogram>,
}

/// Where a submitter is told its transaction's seq (or why it has none).
type Answer = crossbeam_channel::Sender<Result<Ordered, OrderError>>;

/// One submitter waiting for one transaction's answer.
pub struct Waiter {
    id: u64,
    /// The answer, once the transaction is applied.
    pub answer: crossbeam_channel::Receiver<Result<Ordered, OrderError>>,
}

/// A definition with the seq of the update that put it in force, and its MSP.
type Trusted = (Seq, Arc<NetworkDefinition>, Arc<Msp>);

impl Core {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        stream: Arc<StreamLog>,
        network: Arc<Network>,
        signer: Signer,
        msp: Arc<Msp>,
        genesis: Digest,
        (log, kept): (BatchLog, HashMap<Digest, Held>),
        applied: (u64, Option<Digest>),
        finalized: crossbeam_channel::Sender<(u64, Digest)>,
    ) -> Core {
        Core {
            stream,
            network,
            signer,
            msp,
            genesis,
            mempool: Mutex::default(),
            new_tx: tokio::sync::Notify::new(),
            batches: Mutex::new(Batches {
                held: kept,
                ..Batches::default()
            }),
            log: Mutex::new(log),
            applied: Mutex::new(applied),
            waiters: Mutex::default(),
            next_waiter: AtomicU64::new(0),
            gathering: Mutex::default(),
            gathered: Condvar::new(),
            wanted: Mutex::default(),
            finalized,
            arrived: Condvar::new(),
            arrived_lock: Mutex::new(()),
            failure: Mutex::default(),
            trusted: Mutex::default(),
            recent_seals: Mutex::default(),
            asked: Mutex::default(),
            views: Arc::default(),
            batches_applied: AtomicU64::new(0),
            equivocations: AtomicU64::new(0),
            // 1 ms to ~16 s.
            seal_seconds: Arc::new(runnel_ledger::metrics::Histogram::exponential(
                0.001, 2.0, 15,
            )),
        }
    }

    pub fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    fn fail(&self, why: String) {
        tracing::error!("the BFT orderer stops: {why}");
        self.stream.fail(why.clone());
        lock(&self.failure).get_or_insert(why);
    }

    /// Queues admitted transactions submitted here (sending them to the other orderers
    /// too) and returns a waiter for each one's answer.
    pub fn submit(&self, transactions: Vec<(TxId, Vec<u8>)>) -> Vec<Result<Waiter, OrderError>> {
        tracing::debug!(count = transactions.len(), "submitted");
        let mut answers = Vec::with_capacity(transactions.len());
        let mut gossip = Vec::new();
        {
            let mut mempool = lock(&self.mempool);
            let mut waiters = lock(&self.waiters);
            for (tx_id, bytes) in transactions {
                if mempool.bytes + bytes.len() > MEMPOOL_BYTES_MAX {
                    answers.push(Err(OrderError::Unavailable(
                        "the orderer's queue of transactions to propose is full; retry".into(),
                    )));
                    continue;
                }
                let (send, receive) = crossbeam_channel::bounded(1);
                let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
                waiters.entry(tx_id).or_default().push((id, send));
                if !mempool.by_id.contains_key(&tx_id) {
                    gossip.push(bytes.clone());
                    mempool.add(tx_id, bytes, None);
                }
                answers.push(Ok(Waiter {
                    id,
                    answer: receive,
                }));
            }
        }
        if !gossip.is_empty() {
            let message = SignedTransactions(gossip).encode();
            self.network.send_to(None, net::MEMPOOL, message);
            self.new_tx.notify_waiters();
        }
        answers
    }

    /// Gives up `waiter`, waiting for `tx_id` (its submitter timed out); the others that
    /// wait for it go on waiting.
    pub fn forget(&self, tx_id: &TxId, waiter: &Waiter) {
        let mut waiters = lock(&self.waiters);
        if let Some(waiting) = waiters.get_mut(tx_id) {
            waiting.retain(|(id, _)| *id != waiter.id);
            if waiting.is_empty() {
                waiters.remove(tx_id);
            }
        }
    }

    /// Answers everyone waiting for `tx_id`.
    fn answer(
        waiters: &mut HashMap<TxId, Vec<(u64, Answer)>>,
        tx_id: &TxId,
        answer: &Result<Ordered, OrderError>,
    ) {
        for (_, waiter) in waiters.remove(tx_id).unwrap_or_default() {
            let _ = waiter.send(answer.clone());
        }
    }

    /// Transactions another orderer admitted and sent: proposed when this one leads.
    fn gossiped(&self, from: &PublicKey, transactions: Vec<Vec<u8>>) {
        let share = MEMPOOL_BYTES_MAX / self.network.members().len().max(1);
        let mut mempool = lock(&self.mempool);
        for bytes in transactions {
            let Ok((_, _, proposal)) = tx::decode_transaction(&bytes) else {
                continue;
            };
            let tx_id = tx::tx_id(&proposal);
            let used = mempool
                .by_origin
                .get(&Some(from.clone()))
                .copied()
                .unwrap_or(0);
            if used + bytes.len() > share || mempool.by_id.contains_key(&tx_id) {
                continue;
            }
            mempool.add(tx_id, bytes, Some(from.clone()));
        }
        drop(mempool);
        self.new_tx.notify_waiters();
    }

    /// The ids of the transactions in the batches from `parent` back to the last one
    /// applied: what a proposal on `parent` must not hold again.
    fn in_ancestors(&self, parent: Digest) -> HashSet<TxId> {
        let applied = lock(&self.applied).0;
        let batches = lock(&self.batches);
        let mut ids = HashSet::new();
        let mut at = parent;
        while let Some(held) = batches.held.get(&at) {
            if held.batch.view <= applied {
                break;
            }
            ids.extend(held.txs.iter().flatten().map(|meta| meta.tx_id));
            at = held.batch.parent;
        }
        ids
    }

    /// Builds this orderer's proposal for `view` on `parent`, keeps it, and returns its
    /// digest. Waits up to [`IDLE_WAIT`] for a transaction when none waits.
    async fn propose(self: Arc<Self>, view: u64, parent: (u64, Digest)) -> Option<Digest> {
        let deadline = tokio::time::Instant::now() + IDLE_WAIT;
        let excluded = loop {
            let notified = self.new_tx.notified();
            let excluded = self.in_ancestors(parent.1);
            let waiting = {
                let mempool = lock(&self.mempool);
                mempool
                    .order
                    .iter()
                    .any(|id| mempool.by_id.contains_key(id) && !excluded.contains(id))
            };
            if waiting || tokio::time::timeout_at(deadline, notified).await.is_err() {
                break excluded;
            }
        };
        let excluded = if self.fill(parent.0).await {
            self.in_ancestors(parent.1)
        } else {
            excluded
        };
        let mut transactions = Vec::new();
        let mut bytes = 0;
        {
            let mempool = lock(&self.mempool);
            for id in &mempool.order {
                if excluded.contains(id) {
                    continue;
                }
                let Some(pending) = mempool.by_id.get(id) else {
                    continue;
                };
                if !transactions.is_empty() && bytes + pending.bytes.len() > BATCH_BYTES_TARGET
                    || transactions.len() >= runnel_ledger::orderer::SEAL_TXS_MAX
                {
                    break;
                }
                bytes += pending.bytes.len();
                transactions.push(pending.bytes.clone());
            }
        }
        tracing::debug!(
            view,
            parent = parent.0,
            count = transactions.len(),
            "proposing"
        );
        let parent_ms = self.timestamp_of(&parent.1).unwrap_or(0);
        let held = Batch {
            view,
            parent_view: parent.0,
            parent: parent.1,
            timestamp_ms: tx::now_ms().max(parent_ms),
            transactions,
        }
        .seal();
        // Held at once, synced beside the votes: the leader's own copy need not be on
        // its disk before it votes, since the 2f + 1 notarize votes a batch needs include
        // 2f others', each cast only once that voter synced it (at least f + 1 of them
        // honest); a leader that restarts without it fetches it from them.
        let digest = held.digest;
        self.hold(held.clone());
        let core = self.clone();
        tokio::task::spawn_blocking(move || core.persist(&held));
        Some(digest)
    }

    /// While the parent (of `parent_view`) is still on its way to finality and the
    /// waiting transactions fill less than a batch, waits for more, up to [`FILL_WAIT`]:
    /// under load each view's fixed cost (votes, seals, journal files) then covers more
    /// transactions. A leader whose parent is applied proposes at once, so a lone
    /// transaction never waits for this. Whether it waited.
    async fn fill(&self, parent_view: u64) -> bool {
        let deadline = tokio::time::Instant::now() + FILL_WAIT;
        let mut waited = false;
        loop {
            let now = tokio::time::Instant::now();
            if lock(&self.applied).0 >= parent_view
                || lock(&self.mempool).bytes >= BATCH_BYTES_TARGET
                || now >= deadline
            {
                return waited;
            }
            waited = true;
            // A new transaction wakes it; the parent's apply is looked for each
            // millisecond.
            let step = (deadline - now).min(Duration::from_millis(1));
            let _ = tokio::time::timeout(step, self.new_tx.notified()).await;
        }
    }

    /// The timestamp of the batch `digest` (the genesis one's is 0).
    fn timestamp_of(&self, digest: &Digest) -> Option<u64> {
        if *digest == self.genesis {
            return Some(0);
        }
        lock(&self.batches)
            .held
            .get(digest)
            .map(|held| held.batch.timestamp_ms)
    }

    /// Writes `held` to the batch log and syncs it, then holds it in memory and answers
    /// the verifies that waited for it.
    fn keep(&self, held: Held) -> Result<(), String> {
        self.persist(&held)?;
        self.hold(held);
        Ok(())
    }

    /// Writes `held` to the batch log and syncs it; a failure stops the orderer.
    fn persist(&self, held: &Held) -> Result<(), String> {
        lock(&self.log).keep(held).map_err(|error| {
            self.fail(format!("writing a batch to the batch log: {error}"));
            error
        })
    }

    /// Holds `held` in memory and answers the verifies that waited for it.
    fn hold(&self, held: Held) {
        let waiting = {
            let mut batches = lock(&self.batches);
            let waiting = batches.waiting.remove(&held.digest).unwrap_or_default();
            batches.held.insert(held.digest, held.clone());
            waiting
        };
        for waiting in waiting {
            let acceptable = self.acceptable(&held, waiting.view, waiting.parent);
            waiting.answer.send_lossy(acceptable);
        }
        let _guard = lock(&self.arrived_lock);
        self.arrived.notify_all();
    }

    /// Whether `held` is a batch to vote for in `view` on `parent`.
    fn acceptable(&self, held: &Held, view: u64, parent: (u64, Digest)) -> bool {
        let batch = &held.batch;
        if batch.view != view || batch.parent_view != parent.0 || batch.parent != parent.1 {
            return false;
        }
        let now = tx::now_ms();
        now.abs_diff(batch.timestamp_ms) <= CLOCK_SKEW_MAX_MS
            && self
                .timestamp_of(&parent.1)
                .is_none_or(|parent_ms| batch.timestamp_ms >= parent_ms)
    }

    /// A batch another orderer sent (a leader's proposal, or an answer to a fetch).
    fn received(self: &Arc<Self>, from: &PublicKey, bytes: &[u8]) {
        let held = match Batch::decode(bytes) {
            Ok(held) => held,
            Err(error) => {
                tracing::warn!(orderer = %self.network.name_of(from), "refused a batch: {error}");
                return;
            }
        };
        // A batch of a view long past, or too far ahead, is no batch to vote for or apply:
        // a member that sends them cannot fill this orderer's memory or disk.
        let applied = lock(&self.applied).0;
        let wanted = *lock(&self.wanted) == Some(held.digest);
        if !wanted && (held.batch.view <= applied || held.batch.view > applied + VIEWS_AHEAD_MAX) {
            tracing::debug!(
                orderer = %self.network.name_of(from),
                view = held.batch.view,
                applied,
                "a batch outside the views this orderer takes; dropped"
            );
            return;
        }
        if lock(&self.batches).held.contains_key(&held.digest) {
            return;
        }
        // Kept (synced) before any vote for it; one nobody waits for yet is kept too (an
        // apply may need it).
        let core = self.clone();
        tokio::task::spawn_blocking(move || core.keep(held));
    }

    /// An orderer asked for batches it lacks: sends those held.
    fn fetch_asked(&self, from: &PublicKey, bytes: &[u8]) {
        let Ok(wanted) = <[u8; 32]>::try_from(bytes) else {
            return;
        };
        let held = lock(&self.batches).held.get(&Digest::from(wanted)).cloned();
        if let Some(held) = held {
            self.network
                .send_to(Some(from), net::BATCHES, held.bytes.as_ref().clone());
        }
    }

    /// The batch `digest`, waiting for it (and asking the others) if it is not held.
    fn batch(&self, digest: &Digest) -> Option<Held> {
        let mut asked = Instant::now() - Duration::from_secs(1);
        let mut guard = lock(&self.arrived_lock);
        loop {
            if let Some(held) = lock(&self.batches).held.get(digest).cloned() {
                *lock(&self.wanted) = None;
                return Some(held);
            }
            // Taken whatever its view: a finalization named it.
            *lock(&self.wanted) = Some(*digest);
            if self.failure().is_some() {
                return None;
            }
            if asked.elapsed() >= Duration::from_millis(500) {
                self.network
                    .send_to(None, net::FETCH, digest.as_ref().to_vec());
                asked = Instant::now();
            }
            guard = self
                .arrived
                .wait_timeout(guard, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The applier: every batch each finalization makes final, oldest first.
    pub fn run_applier(&self, finalized: crossbeam_channel::Receiver<(u64, Digest)>) {
        // A seal left to gather when this orderer stopped.
        if let Err(error) = self.seal_unsealed(None) {
            self.fail(error);
            return;
        }
        while let Ok((view, digest)) = finalized.recv() {
            if self.failure().is_some() {
                return;
            }
            if view <= lock(&self.applied).0 {
                continue;
            }
            let mut chain = Vec::new();
            let mut at = digest;
            loop {
                let Some(held) = self.batch(&at) else {
                    return;
                };
                let applied = *lock(&self.applied);
                if held.batch.parent_view < applied.0 {
                    self.fail(format!(
                        "a finalized batch of view {} builds on view {}, before the last \
                         applied ({}): the finalized chain forks",
                        held.batch.view, held.batch.parent_view, applied.0
                    ));
                    return;
                }
                let done = held.batch.parent_view == applied.0;
                if done && applied.1.is_some_and(|digest| held.batch.parent != digest) {
                    self.fail(format!(
                        "a finalized batch of view {} builds on another batch of view {} \
                         than the one applied",
                        held.batch.view, applied.0
                    ));
                    return;
                }
                at = held.batch.parent;
                chain.push(held);
                if done {
                    break;
                }
            }
            for held in chain.into_iter().rev() {
                if let Err(error) = self.apply(&held) {
                    self.fail(error);
                    return;
                }
            }
        }
    }

    /// Appends one finalized batch's transactions, then gathers its block's seal.
    fn apply(&self, held: &Held) -> Result<(), String> {
        let batch = &held.batch;
        let mut txs = Vec::with_capacity(batch.transactions.len());
        let mut seen = HashSet::new();
        for (bytes, meta) in batch.transactions.iter().zip(held.txs.iter()) {
            let Some(meta) = meta else {
                continue;
            };
            if !seen.insert(meta.tx_id) {
                continue;
            }
            let window = meta.proposal_ms.abs_diff(batch.timestamp_ms)
                <= u64::try_from(tx::PROPOSAL_WINDOW.as_millis()).unwrap_or(u64::MAX);
            if !window
                || self
                    .stream
                    .check_replay(&meta.tx_id, meta.proposal_ms, batch.timestamp_ms)
                    != Seen::New
            {
                continue;
            }
            txs.push(StreamTx {
                signed_transaction: bytes.clone(),
                timestamp_ms: batch.timestamp_ms,
                tx_id: meta.tx_id,
                proposal_ms: meta.proposal_ms,
                config_update: meta.config_update,
            });
        }
        tracing::debug!(view = batch.view, count = txs.len(), "applying");
        let ids: Vec<TxId> = txs.iter().map(|tx| tx.tx_id).collect();
        let seqs = self
            .stream
            .append_txs(txs, Ids::Record, Some(batch.view))
            .map_err(|e| format!("appending the batch of view {}: {e}", batch.view))?;
        *lock(&self.applied) = (batch.view, Some(held.digest));
        self.batches_applied.fetch_add(1, Ordering::Relaxed);
        {
            let mut mempool = lock(&self.mempool);
            let mut waiters = lock(&self.waiters);
            let now_us = tx::now_us();
            for (tx_id, seq) in ids.iter().zip(&seqs) {
                mempool.remove(tx_id);
                let ordered = Ok(Ordered {
                    seq: *seq,
                    tx_id: *tx_id,
                    received_us: now_us,
                    ordered_us: now_us,
                });
                Self::answer(&mut waiters, tx_id, &ordered);
            }
            // Transactions of the batch left out as replays: their submitters here learn
            // it now.
            for tx_id in seen {
                mempool.remove(&tx_id);
                Self::answer(&mut waiters, &tx_id, &Err(OrderError::Duplicate(tx_id)));
            }
        }
        {
            let mut batches = lock(&self.batches);
            batches.retain(held);
            // Batches of views applied past that no finalization took (a view skipped,
            // a proposal that lost): never applied, dropped.
            let retained: HashSet<Digest> = batches.retained.iter().copied().collect();
            batches
                .held
                .retain(|digest, kept| kept.batch.view > batch.view || retained.contains(digest));
        }
        self.seal_unsealed(Some(batch.timestamp_ms))
    }

    /// Signs the seal over the transactions not sealed yet (one batch's, stamped
    /// `timestamp_ms`: applied batches are sealed one at a time; read back from the last
    /// transaction after a restart), and waits for a quorum's signatures over it.
    fn seal_unsealed(&self, timestamp_ms: Option<u64>) -> Result<(), String> {
        let (chain, leaves) = self.stream.unsealed();
        if leaves.is_empty() {
            return Ok(());
        }
        let timestamp_ms = match timestamp_ms {
            Some(timestamp_ms) => timestamp_ms,
            None => self.last_timestamp()?,
        };
        let seal = Seal::new(
            chain.next_number(),
            chain.next_first(),
            &leaves,
            chain.previous_hash(),
            timestamp_ms,
        );
        let hash = tx::sha256(&seal.encode());
        let own = seal_signature(&self.signer, &hash);
        {
            let mut gathering = lock(&self.gathering);
            let mut signatures = vec![own.clone()];
            if let Some(early) = gathering.ahead.remove(&seal.number.0) {
                for (their_seal, their_hash, signature, from) in early {
                    let theirs = (&*their_seal, their_hash, &from);
                    self.consider(&seal, &hash, theirs, signature, &mut signatures);
                }
            }
            gathering.current = Some((seal.clone(), hash, signatures));
        }
        let vote = signed_by(seal.clone(), vec![own]).bytes;
        let started = Instant::now();
        let mut sent = started;
        self.network.send_to(None, net::SEALS, vote.clone());
        loop {
            if self.failure().is_some() {
                return Err("stopped".into());
            }
            let quorum = self.quorum();
            let ready = {
                let mut gathering = lock(&self.gathering);
                match &gathering.current {
                    Some((_, _, signatures)) if signatures.len() >= quorum => {
                        gathering.current.take().map(|(_, _, s)| s)
                    }
                    _ => {
                        let (guard, _) = self
                            .gathered
                            .wait_timeout(gathering, Duration::from_millis(50))
                            .unwrap_or_else(PoisonError::into_inner);
                        drop(guard);
                        None
                    }
                }
            };
            if let Some(signatures) = ready {
                self.seal_seconds.observe(started.elapsed().as_secs_f64());
                let sealed = signed_by(seal, signatures);
                let appended = self
                    .stream
                    .accept_seal(&sealed.bytes, &self.msp, None)
                    .map_err(|e| format!("appending seal {}: {e}", sealed.seal.number.0))?;
                tracing::debug!(block = sealed.seal.number.0, "sealed");
                {
                    let mut recent = lock(&self.recent_seals);
                    recent.push_back((sealed.seal.number.0, sealed.hash, sealed.bytes.clone()));
                    while recent.len() > RECENT_SEALS_MAX {
                        recent.pop_front();
                    }
                }
                if !appended {
                    return Err(format!(
                        "seal {} with a quorum's signatures does not check against the \
                         stream",
                        sealed.seal.number.0
                    ));
                }
                return Ok(());
            }
            if sent.elapsed() >= SEAL_RESEND {
                self.network.send_to(None, net::SEALS, vote.clone());
                sent = Instant::now();
            }
        }
    }

    /// The timestamp of the last transaction in the stream: its batch's.
    fn last_timestamp(&self) -> Result<u64, String> {
        let (head, sealed) = self.stream.position();
        let mut delivery = self
            .stream
            .deliver(head, BlockNumber(sealed.0 + 1))
            .map_err(|e| format!("reading back transaction {head}: {e}"))?;
        for _ in 0..8 {
            match delivery.next(Duration::from_millis(100)) {
                Ok(Some(runnel_ledger::orderer::Delivered::Tx(ordered))) => {
                    return Ok(ordered.timestamp_ms);
                }
                Ok(_) => {}
                Err(error) => return Err(format!("reading back transaction {head}: {error}")),
            }
        }
        Err(format!("transaction {head} could not be read back"))
    }

    /// Adds `signature` (over `their_seal`, whose hash is `their_hash`, sent by `from`)
    /// to `signatures` if it is a member's over `seal`. A member's signature over another
    /// seal for the same block is logged by name, once the signature is seen to be that
    /// member's: a forged one names nobody.
    fn consider(
        &self,
        seal: &Seal,
        hash: &tx::Hash,
        (their_seal, their_hash, from): (&Seal, tx::Hash, &PublicKey),
        signature: SealSignature,
        signatures: &mut Vec<SealSignature>,
    ) {
        let Some((definition, msp)) = self.trusted() else {
            return;
        };
        let sealers = block::Sealers::of(&definition, &msp);
        let Ok(orderer) = sealers.check(&signature, their_seal, &their_hash) else {
            return;
        };
        if their_hash != *hash {
            self.lied(&orderer.id(), from, seal.number.0);
            return;
        }
        let duplicate = signatures.iter().any(|known| {
            msp.identify(&known.orderer).is_ok_and(|known| {
                known.key == orderer.key || known.name == orderer.name && known.org == orderer.org
            })
        });
        if !duplicate {
            signatures.push(signature);
        }
    }

    /// Logs, by name, `orderer`'s signature over another seal for `block` than this
    /// orderer's stream gives, sent by `from`, and counts it.
    fn lied(&self, orderer: &str, from: &PublicKey, block: u64) {
        let equivocations = self.equivocations.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(
            orderer = %orderer,
            sent_by = %self.network.name_of(from),
            block,
            equivocations,
            "an orderer signed another seal for this block than the stream it ordered \
             gives: a lie, or a stream that forked"
        );
    }

    /// Logs, by name, the member at `signer` (its place among the engine's
    /// participants) that signed `what` for one view, and counts it.
    fn equivocated(&self, signer: Participant, what: &str) {
        let participants: Set<PublicKey> =
            Set::from_iter_dedup(self.network.members().into_iter().map(|m| m.key));
        let orderer = participants.key(signer).map_or_else(
            || format!("participant {signer}"),
            |key| self.network.name_of(key),
        );
        let equivocations = self.equivocations.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(
            %orderer,
            equivocations,
            "an orderer equivocated: it signed {what} for one view"
        );
    }

    /// Distinct members whose signatures a seal needs now.
    fn quorum(&self) -> usize {
        self.trusted()
            .map_or(1, |(definition, _)| definition.seal_quorum())
    }

    /// The definition in force in the stream and its MSP, built once per definition.
    fn trusted(&self) -> Option<(Arc<NetworkDefinition>, Arc<Msp>)> {
        let mut trusted = lock(&self.trusted);
        let seen = trusted.as_ref().map(|(seq, _, _)| *seq);
        if let Some((seq, definition)) = self.stream.definition_since(seen)
            && let Ok(msp) = definition.msp()
        {
            *trusted = Some((seq, Arc::new(definition), Arc::new(msp)));
        }
        trusted
            .as_ref()
            .map(|(_, definition, msp)| (definition.clone(), msp.clone()))
    }

    /// A seal with signatures another orderer sent: a signature to gather, or a complete
    /// seal this orderer is behind on, or a vote for a block this orderer sealed already
    /// (answered with the complete seal).
    fn seal_received(&self, from: &PublicKey, bytes: &[u8]) {
        let Ok(signed) = SignedSeal::decode(bytes) else {
            return;
        };
        if signed.signatures.len() > block::SEAL_SIGNATURES_MAX {
            return;
        }
        let Ok(seal) = Seal::decode(&signed.seal) else {
            return;
        };
        let hash = tx::sha256(&signed.seal);
        let (_, sealed) = self.stream.position();
        let number = seal.number.0;
        if number <= sealed.0 {
            // A member's signature over another seal for a block sealed here is a lie
            // too (one that came after the quorum's).
            let stored = self.complete_seal(seal.number);
            if let Some((stored_hash, _)) = &stored
                && *stored_hash != hash
                && let Some((definition, msp)) = self.trusted()
            {
                let sealers = block::Sealers::of(&definition, &msp);
                for signature in &signed.signatures {
                    if let Ok(orderer) = sealers.check(signature, &seal, &hash) {
                        self.lied(&orderer.id(), from, number);
                    }
                }
            }
            // Behind: it gets the complete seal. A signature for the block this orderer
            // sealed last has usually crossed the others' in flight, and its sender
            // completes the seal from the signatures everyone sends it: it is answered
            // when it asks again (it resends while it waits).
            let again = lock(&self.asked).insert(from.clone(), number) == Some(number);
            if (number < sealed.0 || again)
                && let Some((_, bytes)) = stored
            {
                self.network.send_to(Some(from), net::SEALS, bytes);
            }
            return;
        }
        let mut gathering = lock(&self.gathering);
        match &mut gathering.current {
            Some((current, current_hash, signatures)) if current.number.0 == number => {
                let (current, current_hash) = (current.clone(), *current_hash);
                let mut gathered = std::mem::take(signatures);
                for signature in signed.signatures {
                    let theirs = (&seal, hash, from);
                    self.consider(&current, &current_hash, theirs, signature, &mut gathered);
                }
                if let Some((_, _, signatures)) = &mut gathering.current {
                    *signatures = gathered;
                }
                self.gathered.notify_all();
            }
            _ if number <= sealed.0 + SEALS_AHEAD_MAX => {
                let seal = Arc::new(seal);
                let ahead = gathering.ahead.entry(number).or_default();
                for signature in signed.signatures {
                    if ahead.len() < block::SEAL_SIGNATURES_MAX {
                        ahead.push((seal.clone(), hash, signature, from.clone()));
                    }
                }
            }
            _ => {}
        }
    }

    /// The complete seal of `number` and its seal's hash, from memory when it is recent.
    fn complete_seal(&self, number: BlockNumber) -> Option<(tx::Hash, Vec<u8>)> {
        let recent = lock(&self.recent_seals)
            .iter()
            .rev()
            .find(|(block, _, _)| *block == number.0)
            .map(|(_, hash, bytes)| (*hash, bytes.clone()));
        recent.or_else(|| {
            self.stream
                .seal(number)
                .map(|stored| (stored.hash, stored.bytes))
        })
    }

    /// Reads Runnel's own channels until the network stops.
    pub async fn run_channels(
        self: Arc<Self>,
        mut batches: net::ChannelReceiver,
        mut seals: net::ChannelReceiver,
        mut fetches: net::ChannelReceiver,
        mut mempool: net::ChannelReceiver,
    ) {
        loop {
            tokio::select! {
                Some((from, message)) = batches.next() => self.received(&from, message.as_ref()),
                Some((from, message)) = seals.next() => self.seal_received(&from, message.as_ref()),
                Some((from, message)) = fetches.next() => self.fetch_asked(&from, message.as_ref()),
                Some((from, message)) = mempool.next() => {
                    if let Some(transactions) = SignedTransactions::decode(message.as_ref()) {
                        self.gossiped(&from, transactions.0);
                    }
                }
                else => return,
            }
        }
    }
}

impl Mempool {
    fn add(&mut self, tx_id: TxId, bytes: Vec<u8>, origin: Option<PublicKey>) {
        self.bytes += bytes.len();
        *self.by_origin.entry(origin.clone()).or_default() += bytes.len();
        self.by_id.insert(tx_id, Pending { bytes, origin });
        self.order.push_back(tx_id);
    }

    fn remove(&mut self, tx_id: &TxId) {
        if let Some(pending) = self.by_id.remove(tx_id) {
            self.bytes -= pending.bytes.len();
            if let Some(used) = self.by_origin.get_mut(&pending.origin) {
                *used -= pending.bytes.len();
            }
        }
        while self
            .order
            .front()
            .is_some_and(|id| !self.by_id.contains_key(id))
        {
            self.order.pop_front();
        }
    }
}

/// Transactions one orderer sends the others' mempools, encoded as an `OrderingBatch`
/// holding only them.
struct SignedTransactions(Vec<Vec<u8>>);

impl SignedTransactions {
    fn encode(&self) -> Vec<u8> {
        runnel_ledger::proto::OrderingBatch {
            transactions: self.0.clone(),
            ..Default::default()
        }
        .encode_to_vec()
    }

    fn decode(bytes: &[u8]) -> Option<SignedTransactions> {
        let batch = runnel_ledger::proto::OrderingBatch::decode(bytes).ok()?;
        (batch.transactions.len() <= runnel_ledger::orderer::SEAL_TXS_MAX)
            .then_some(SignedTransactions(batch.transactions))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The engine's view of this orderer: its automaton, relay and reporter.
#[derive(Clone)]
pub struct App {
    pub core: Arc<Core>,
}

impl Automaton for App {
    type Context = Context<Digest, PublicKey>;
    type Digest = Digest;

    async fn propose(&mut self, context: Self::Context) -> oneshot::Receiver<Digest> {
        let (answer, answered) = oneshot::channel();
        let core = self.core.clone();
        let view = context.round.view().get();
        self.core.views.saw(view);
        let parent = (context.parent.0.get(), context.parent.1);
        tokio::spawn(async move {
            if let Some(digest) = core.propose(view, parent).await {
                answer.send_lossy(digest);
            }
        });
        answered
    }

    async fn verify(&mut self, context: Self::Context, payload: Digest) -> oneshot::Receiver<bool> {
        let (answer, answered) = oneshot::channel();
        let view = context.round.view().get();
        self.core.views.saw(view);
        tracing::debug!(view, "verifying");
        let parent = (context.parent.0.get(), context.parent.1);
        let mut batches = lock(&self.core.batches);
        match batches.held.get(&payload).cloned() {
            Some(held) => {
                drop(batches);
                answer.send_lossy(self.core.acceptable(&held, view, parent));
            }
            None => batches.waiting.entry(payload).or_default().push(Waiting {
                view,
                parent,
                answer,
            }),
        }
        answered
    }
}

impl CertifiableAutomaton for App {}

impl Relay for App {
    type Digest = Digest;
    type PublicKey = PublicKey;
    type Plan = Plan<PublicKey>;

    fn broadcast(&mut self, payload: Digest, plan: Plan<PublicKey>) -> Feedback {
        let held = lock(&self.core.batches).held.get(&payload).cloned();
        let Some(held) = held else {
            return Feedback::Ok;
        };
        match plan {
            Plan::Forward { recipients, .. } => {
                let to: Vec<PublicKey> = match recipients {
                    commonware_p2p::Recipients::All => Vec::new(),
                    commonware_p2p::Recipients::Some(keys) => keys,
                    commonware_p2p::Recipients::One(key) => vec![key],
                };
                if to.is_empty() {
                    self.core
                        .network
                        .send_to(None, net::BATCHES, held.bytes.as_ref().clone());
                }
                for key in to {
                    self.core.network.send_to(
                        Some(&key),
                        net::BATCHES,
                        held.bytes.as_ref().clone(),
                    );
                }
            }
            _ => self
                .core
                .network
                .send_to(None, net::BATCHES, held.bytes.as_ref().clone()),
        }
        Feedback::Ok
    }
}

impl Reporter for App {
    type Activity = Activity<Scheme, Digest>;

    fn report(&mut self, activity: Self::Activity) -> Feedback {
        match activity {
            Activity::Finalization(finalization) => {
                let view = finalization.proposal.round.view().get();
                self.core.views.saw(view);
                tracing::debug!(view, "finalized");
                let _ = self
                    .core
                    .finalized
                    .send((view, finalization.proposal.payload));
            }
            Activity::ConflictingNotarize(conflict) => {
                self.core
                    .equivocated(conflict.signer(), "two notarize votes");
            }
            Activity::ConflictingFinalize(conflict) => {
                self.core
                    .equivocated(conflict.signer(), "two finalize votes");
            }
            Activity::NullifyFinalize(conflict) => {
                self.core
                    .equivocated(conflict.signer(), "a nullify and a finalize vote");
            }
            _ => {}
        }
        Feedback::Ok
    }
}
