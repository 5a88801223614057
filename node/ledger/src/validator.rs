//! The validator: every peer's pipeline from the orderer's stream to durable state.
//!
//! ```text
//! orderer stream ─► intake ─► stage 1 (worker pool) ─► stage 2 (in seq order) ─► stage 3
//!                     │       decode once, certs,       policy, MVCC + range       group commit
//!                     │       signatures (batched)      re-check, stage writes     to sled, seals
//!                     └── durability marks, seals ──────────────────────────────────►┘
//! ```
//!
//! - **Intake** pulls the stream and hands transactions to stage 1, and the orderer's
//!   durability marks and seals straight to stage 3.
//! - **Stage 1** (`verify`) runs on `workers` threads: decodes each transaction once
//!   into typed parts, checks creator and endorser certificates (the MSP cache) at the
//!   orderer's timestamp, and verifies every signature of every transaction it holds as
//!   one ZIP-215 batch ([`crate::sig`]).
//! - **Stage 2** (`check`) takes them back in seq order: duplicate id, namespace
//!   rules, endorsement policy of the definition in force, MVCC and phantom re-checks
//!   against durable + staged state; stages the writes of a valid transaction at once,
//!   so the next transaction and every endorser see them; says "validated".
//! - **Stage 3** (`commit`) makes everything staged durable in one sled batch per
//!   flush, never beyond the orderer's durable mark, with the seals it verified; the
//!   next flush starts as soon as the last ends (adaptive group commit). Stage 3
//!   writes each batch to sled and hands it to the **flusher**, which flushes whatever
//!   was written (one sync for every batch written meanwhile) and then says
//!   "committed", then the contract events and block events; stage 3 meanwhile writes
//!   the next batch, so writing, flushing and waking the waiters overlap.
//!
//! Channels between stages are bounded: a slow disk slows intake, and then the orderer's
//! stream, instead of filling memory.

mod check;
mod commit;
mod notify;
pub mod rules;
mod verify;

use crate::guard::guarded;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, unbounded};

use crate::block::{self, SealChain};
use crate::identity::{Msp, NetworkDefinition, OrderingProtocol, Role};
use crate::ids::{BlockNumber, Seq};
use crate::lifecycle::DEFAULT_LIFECYCLE_POLICY;
use crate::orderer::gate::SealGate;
use crate::orderer::{Delivered, Delivery, Orderer};
use crate::policy::Policy;
use crate::store::WorldState;
use crate::trace::{Stage, TraceBook};
use crate::tx;

pub use notify::{BlockEvent, CommittedEvent, Hub, Phase, TxStatus, TxWatch};

/// How the validator runs.
#[derive(Debug, Clone)]
pub struct ValidatorConfig {
    /// The channel validated; a transaction for another is `BAD_PAYLOAD`.
    pub channel: String,
    /// Stage 1 threads; 0 (the default): [`stage_one_workers`] chooses.
    pub workers: usize,
    /// Capacity of each channel between stages, in transactions.
    pub queue: usize,
    /// Most transactions stage 1 verifies as one signature batch.
    pub batch_max: usize,
    /// Most transactions one group commit writes and flushes; 0: no bound (adaptive:
    /// a flush takes everything validated since the last one began). 1 is group commit
    /// off: a write and a sync per transaction, to measure what grouping buys.
    pub commit_txs_max: usize,
    /// Roles that may invoke a contract.
    pub invoke_roles: Vec<Role>,
    /// Roles that may deploy or upgrade.
    pub lifecycle_roles: Vec<Role>,
    /// The lifecycle policy (who must endorse a deploy or upgrade).
    pub lifecycle_policy: String,
    /// How far a proposal's timestamp may lie from the orderer's timestamp of its
    /// transaction; further is `TIMESTAMP_OUT_OF_WINDOW` ([`tx::PROPOSAL_WINDOW`]; the
    /// network's `proposal_window_s`, the same on every peer).
    pub proposal_window: Duration,
    /// The network's genesis definition: in force until a `_config` update commits, and
    /// what governs updates and lifecycle approvals. `None` (a validator built alone, in
    /// tests): `_config` updates are refused, and `lifecycle_policy` over the MSP's orgs
    /// governs approvals.
    pub genesis: Option<NetworkDefinition>,
}

/// Stage 1's threads for `configured` workers (0: choose), when the orderer runs in
/// this process or not. With the orderer here, stage 1 finds the orderer's and the
/// endorsers' signature verdicts in the process's signature cache and checks almost
/// nothing itself: one thread does it with fewer hand-offs, and in interleaved runs a
/// one-process node committed more with one than with one per core (docs/perf-log.md).
/// A peer that orders through another process checks every signature in stage 1: one
/// thread per core.
pub fn stage_one_workers(configured: usize, orderer_in_process: bool) -> usize {
    match configured {
        0 if orderer_in_process => 1,
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
}

impl Default for ValidatorConfig {
    fn default() -> Self {
        ValidatorConfig {
            channel: "main".to_string(),
            workers: 0,
            queue: 4096,
            batch_max: 64,
            commit_txs_max: 0,
            invoke_roles: vec![Role::Client, Role::Admin],
            lifecycle_roles: vec![Role::Admin],
            lifecycle_policy: DEFAULT_LIFECYCLE_POLICY.to_string(),
            proposal_window: tx::PROPOSAL_WINDOW,
            genesis: None,
        }
    }
}

/// Why the validator could not start or had to stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidatorError {
    /// The configured lifecycle policy does not parse.
    #[error("lifecycle policy: {0}")]
    Policy(String),
    /// The store failed; the peer stops rather than diverge.
    #[error("store failure: {0}")]
    Store(String),
    /// The orderer's stream failed or sent something a peer must refuse (a seal that
    /// does not verify, a gap): the peer stops rather than diverge.
    #[error("orderer stream: {0}")]
    Stream(String),
    /// A stage thread could not start.
    #[error("starting {0}")]
    Spawn(String),
    /// A stage broke an invariant (a bug, never input): the peer stops rather than
    /// commit what it cannot vouch for.
    #[error("invariant broken in {0}")]
    Broken(String),
}

/// What the stages share.
pub(crate) struct Shared {
    pub msp: Arc<Msp>,
    pub world: Arc<WorldState>,
    pub hub: Arc<Hub>,
    pub traces: Arc<TraceBook>,
    pub config: ValidatorConfig,
    /// `config.lifecycle_policy` parsed: what governs approvals when there is no genesis
    /// definition (`None` when there is one and it does not parse).
    pub lifecycle_policy: Option<Arc<Policy>>,
    pub orgs: Vec<String>,
    /// Set by `close` or a fatal error: every stage winds down.
    pub stopping: AtomicBool,
    /// The first fatal error.
    pub failure: Mutex<Option<ValidatorError>>,
}

impl Shared {
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Records a fatal error and stops the pipeline; whoever waits for a status is told.
    pub fn fail(&self, error: ValidatorError) {
        tracing::error!(%error, "the validator stopped: no transaction is validated or committed until the cause is fixed and the node restarted");
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(error);
        self.stop();
    }

    /// Stops the pipeline and ends every watch (no status will come).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.hub.close();
    }
}

/// How long a stage waits on an empty channel before looking at `stopping` again.
const POLL: Duration = Duration::from_millis(50);

/// A running validator pipeline.
pub struct Validator {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    queues: Queues,
}

/// Receiving ends kept only to read how full each stage's input is.
struct Queues {
    verify: crossbeam_channel::Receiver<verify::Job>,
    check: crossbeam_channel::Receiver<verify::Verified>,
    commit: crossbeam_channel::Receiver<check::Checked>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("workers", &self.shared.config.workers)
            .finish_non_exhaustive()
    }
}

impl Validator {
    /// Starts validating `orderer`'s stream into `world`, from where `world` stands
    /// (its durable height and last seal), telling `hub` and stamping `traces`.
    pub fn start(
        config: ValidatorConfig,
        msp: Arc<Msp>,
        world: Arc<WorldState>,
        orderer: &dyn Orderer,
        hub: Arc<Hub>,
        traces: Arc<TraceBook>,
    ) -> Result<Validator, ValidatorError> {
        let orgs = msp.orgs();
        let lifecycle_policy = match Policy::parse(&config.lifecycle_policy, &orgs) {
            Ok(policy) => Some(Arc::new(policy)),
            // With a genesis definition, the definition in force governs approvals and
            // this setting is never read: a genesis policy that an update made stale
            // (an organisation it names removed) must not keep the node from starting.
            Err(_) if config.genesis.is_some() => None,
            Err(e) => return Err(ValidatorError::Policy(e.to_string())),
        };
        let last_seal = world
            .store()
            .last_seal()
            .map_err(|e| ValidatorError::Store(e.to_string()))?;
        let next_block = BlockNumber(last_seal.as_ref().map_or(0, |seal| seal.number.0) + 1);
        let gated = config
            .genesis
            .as_ref()
            .is_some_and(|genesis| genesis.ordering == OrderingProtocol::Bft);
        let chain = match &last_seal {
            None => SealChain::genesis(),
            Some(record) => SealChain::after(
                &block::decode_signed_seal(&record.bytes)
                    .map_err(|e| ValidatorError::Store(e.to_string()))?,
            ),
        };
        // A gated stream is read from the last block's end: the gate checks the next
        // seal over every transaction of its block, those made durable before a restart
        // included.
        let durable = world.durable_height();
        let first = if gated {
            chain.next_first()
        } else {
            durable.next()
        };
        let mut delivery = orderer
            .deliver(first, next_block)
            .map_err(|e| ValidatorError::Stream(e.to_string()))?;
        let shared = Arc::new(Shared {
            msp,
            world,
            hub,
            traces,
            lifecycle_policy,
            orgs,
            stopping: AtomicBool::new(false),
            failure: Mutex::new(None),
            config,
        });
        if gated {
            // A Byzantine-fault-tolerant service's stream passes a block only once a
            // quorum of its orderers signed the seal over it.
            let trust = commit::seal_trust(&shared, first)?;
            delivery = Box::new(SealGate::new(delivery, chain, trust, durable));
        }
        let queue = shared.config.queue.max(1);
        let (to_verify, verify_rx) = bounded::<verify::Job>(queue);
        let (to_check, check_rx) = bounded::<verify::Verified>(queue);
        let (to_commit, commit_rx) = bounded::<check::Checked>(queue);
        let (control, control_rx) = unbounded::<commit::Control>();
        let queues = Queues {
            verify: verify_rx.clone(),
            check: check_rx.clone(),
            commit: commit_rx.clone(),
        };

        let mut threads = Vec::new();
        let mut spawn = |name: String, run: Box<dyn FnOnce() + Send>| {
            let on_panic = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(guarded(name.clone(), run, move |why| {
                    on_panic.fail(ValidatorError::Broken(why));
                }))
                .map(|handle| threads.push(handle))
                .map_err(|e| ValidatorError::Spawn(format!("{name}: {e}")))
        };
        for worker in 0..shared.config.workers.max(1) {
            let (shared, jobs, out) = (shared.clone(), verify_rx.clone(), to_check.clone());
            spawn(
                format!("runnel-verify-{worker}"),
                Box::new(move || verify::run(&shared, &jobs, &out)),
            )?;
        }
        drop((verify_rx, to_check));
        // Stages 2 and 3 start at the first seq after what is staged.
        let next = shared.world.staged_height().next();
        {
            let shared = shared.clone();
            spawn(
                "runnel-check".into(),
                Box::new(move || check::run(&shared, next, &check_rx, &to_commit)),
            )?;
        }
        // Bounded: a stalled flush stops stage 3 after a few batches, instead of letting
        // it write on (and hold every written transaction in memory) ahead of the disk.
        let (notices, notices_rx) = bounded::<commit::Notice>(commit::WRITES_AHEAD_MAX);
        {
            let shared = shared.clone();
            spawn(
                "runnel-commit".into(),
                Box::new(move || {
                    commit::run(&shared, next, last_seal, &commit_rx, &control_rx, &notices);
                }),
            )?;
        }
        {
            let shared = shared.clone();
            spawn(
                "runnel-flush".into(),
                Box::new(move || commit::flush_and_notify(&shared, &notices_rx)),
            )?;
        }
        {
            let shared = shared.clone();
            spawn(
                "runnel-intake".into(),
                Box::new(move || intake(&shared, &mut *delivery, &to_verify, &control)),
            )?;
        }
        Ok(Validator {
            shared,
            threads: Mutex::new(threads),
            queues,
        })
    }

    /// How many items wait at each stage's input now, by stage: `verify` (stage 1),
    /// `check` (stage 2), `commit` (stage 3). Each holds at most `config.queue`.
    pub fn queue_depths(&self) -> [(&'static str, usize); 3] {
        [
            ("verify", self.queues.verify.len()),
            ("check", self.queues.check.len()),
            ("commit", self.queues.commit.len()),
        ]
    }

    /// True once the pipeline stops (closed, or a fatal error).
    pub fn stopped(&self) -> bool {
        self.shared.stopping()
    }

    /// The fatal error that stopped the pipeline, if one did.
    pub fn failure(&self) -> Option<ValidatorError> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops the pipeline and waits for its threads. What was staged but not yet
    /// durable is not made durable: after a restart the orderer delivers it again.
    pub fn close(&self) {
        self.shared.stop();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        self.close();
    }
}

/// Intake: the orderer's stream into the pipeline.
fn intake(
    shared: &Shared,
    delivery: &mut dyn Delivery,
    to_verify: &crossbeam_channel::Sender<verify::Job>,
    control: &crossbeam_channel::Sender<commit::Control>,
) {
    let mut expected = shared.world.staged_height().next();
    while !shared.stopping() {
        let item = match delivery.next(POLL) {
            Ok(Some(item)) => item,
            Ok(None) => continue,
            Err(error) => {
                if !shared.stopping() {
                    shared.fail(ValidatorError::Stream(error.to_string()));
                }
                return;
            }
        };
        match item {
            Delivered::Tx(ordered) => {
                if ordered.seq != expected {
                    shared.fail(ValidatorError::Stream(format!(
                        "expected transaction {expected}, got {}",
                        ordered.seq
                    )));
                    return;
                }
                expected = expected.next();
                let job = verify::Job {
                    ordered,
                    delivered_us: tx::now_us(),
                };
                if !send(shared, to_verify, job) {
                    return;
                }
            }
            Delivered::Durable(seq) => {
                let _ = control.send(commit::Control::Durable(seq));
            }
            Delivered::Seal(sealed) => {
                let _ = control.send(commit::Control::Seal(sealed));
            }
        }
    }
}

/// Sends on a bounded channel, waking up now and then to honour `stopping`. False when
/// the pipeline is stopping or the receiver is gone.
pub(crate) fn send<T>(shared: &Shared, to: &crossbeam_channel::Sender<T>, mut item: T) -> bool {
    loop {
        match to.send_timeout(item, POLL) {
            Ok(()) => return true,
            Err(crossbeam_channel::SendTimeoutError::Timeout(back)) => {
                if shared.stopping() {
                    return false;
                }
                item = back;
            }
            Err(crossbeam_channel::SendTimeoutError::Disconnected(_)) => return false,
        }
    }
}

/// Holds `item`, of seq `seq`, until the stage reaches it (`next` is the seq it takes
/// next). Invariant: the stage before hands on each seq once and none the stage has
/// passed; a repeat or a late one would validate a stream the orderer never sent.
pub(crate) fn hold<T>(waiting: &mut BTreeMap<Seq, T>, next: Seq, seq: Seq, item: T) {
    let repeated = waiting.insert(seq, item).is_some();
    assert!(
        seq >= next && !repeated,
        "invariant broken: seq {} reached a stage twice or after it was passed (next due: {})",
        seq.0,
        next.0
    );
}

/// Moves `next` past `seq`, the seq a stage just took. Invariant: a stage takes every
/// seq once, one after another, from the first after the durable height; a gap or a
/// repeat would commit a stream the orderer never sent.
pub(crate) fn take_in_turn(next: &mut Seq, seq: Seq) {
    assert!(
        seq == *next,
        "invariant broken: seq {} reached a stage where seq {} was due",
        seq.0,
        next.0
    );
    *next = seq.next();
}

/// Stamps a stage of a transaction's trace now.
pub(crate) fn stamp(shared: &Shared, tx_id: crate::ids::TxId, stage: Stage, at_us: u64) {
    shared.traces.mark(tx_id, stage, at_us);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{hold, stage_one_workers, take_in_turn};
    use crate::guard::guarded;
    use crate::ids::Seq;

    #[test]
    fn stages_take_seqs_in_turn() {
        let mut next = Seq(5);
        take_in_turn(&mut next, Seq(5));
        take_in_turn(&mut next, Seq(6));
        assert_eq!(next, Seq(7));
        let mut waiting = BTreeMap::new();
        hold(&mut waiting, Seq(7), Seq(9), ());
        hold(&mut waiting, Seq(7), Seq(7), ());
        assert_eq!(waiting.len(), 2);
    }

    #[test]
    fn a_broken_invariant_in_a_stage_thread_is_reported_not_lost() {
        let (tx, rx) = std::sync::mpsc::channel();
        let run: Box<dyn FnOnce() + Send> = Box::new(|| take_in_turn(&mut Seq(6), Seq(7)));
        std::thread::spawn(guarded("runnel-commit".into(), run, move |why| {
            tx.send(why).unwrap();
        }))
        .join()
        .expect("the panic was caught");
        let why = rx.recv().unwrap();
        assert!(
            why.starts_with("runnel-commit: invariant broken: seq 7"),
            "{why}"
        );
        // A stage that ends normally reports nothing.
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(guarded(
            "runnel-check".into(),
            Box::new(|| {}),
            move |why| {
                tx.send(why).unwrap();
            },
        ))
        .join()
        .unwrap();
        assert!(rx.recv().is_err());
    }

    #[test]
    #[should_panic(expected = "invariant broken: seq 7 reached a stage where seq 6 was due")]
    fn a_gap_between_seqs_stops_the_stage() {
        let mut next = Seq(6);
        take_in_turn(&mut next, Seq(7));
    }

    #[test]
    #[should_panic(expected = "invariant broken: seq 5 reached a stage where seq 6 was due")]
    fn a_repeated_seq_stops_the_stage() {
        let mut next = Seq(5);
        take_in_turn(&mut next, Seq(5));
        take_in_turn(&mut next, Seq(5));
    }

    #[test]
    #[should_panic(expected = "invariant broken: seq 8 reached a stage twice")]
    fn a_seq_held_twice_stops_the_stage() {
        let mut waiting = BTreeMap::new();
        hold(&mut waiting, Seq(7), Seq(8), ());
        hold(&mut waiting, Seq(7), Seq(8), ());
    }

    #[test]
    #[should_panic(
        expected = "invariant broken: seq 6 reached a stage twice or after it was passed"
    )]
    fn a_seq_already_passed_stops_the_stage() {
        hold(&mut BTreeMap::new(), Seq(7), Seq(6), ());
    }

    #[test]
    fn stage_one_runs_one_worker_beside_its_orderer_and_one_per_core_without() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        assert_eq!(stage_one_workers(0, true), 1);
        assert_eq!(stage_one_workers(0, false), cores);
        // A configured number is kept either way.
        assert_eq!(stage_one_workers(3, true), 3);
        assert_eq!(stage_one_workers(3, false), 3);
    }
}
