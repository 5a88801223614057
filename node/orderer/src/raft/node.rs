//! [`RaftOrderer`]: one orderer of a cluster, behind the same [`Orderer`] trait as the solo
//! one.
//!
//! # Threads
//!
//! - A caller of [`Orderer::submit_batch`] on the leader checks its transactions (shape,
//!   submitter, signatures: [`admit_batch`]) on its own thread, then hands them to the
//!   Raft thread and waits for their seqs. On a follower it forwards them to the leader
//!   ([`Transport::forward`]), which answers the same way.
//! - The Raft thread owns the [`RawNode`]. Each turn it takes every input queued (messages
//!   from the other orderers, proposals), proposes the turn's transactions as one entry,
//!   ticks, and handles Raft's Ready: sends the leader's appends, appends what Raft
//!   persists to the [`RaftLog`] and syncs it once when Raft needs it durable (group
//!   commit: what arrives during a sync goes in the next; a hard state that only moved
//!   the commit index waits for the next sync), sends the messages that waited for that
//!   sync, and applies committed entries to the [`StreamLog`].
//! - The stream log's own threads and deliveries serve peers what was applied: only
//!   committed entries ever reach it, so a peer never sees a seq the cluster could still
//!   give another transaction.
//!
//! # Determinism
//!
//! Every orderer applies the same committed entries in the same order: a batch's
//! transactions take the next seqs with the timestamps the leader gave them; a seal is
//! appended when it is the next seal over the transactions applied before it (checked
//! as a peer checks it: [`runnel_ledger::block::SealChain::accept`]), and skipped otherwise (a seal an old
//! leader cut that a newer one's overtook). So every orderer's stream is the same, byte
//! for byte, and a peer may read it from any of them.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use prost::Message as _;
use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, ConfState, Entry,
    EntryType, Message,
};
use raft::{RawNode, StateRole};

use super::log::{LogError, RAFT_LOG_FILE, RaftLog, Snapshotted};
use super::{logger, wire};
use runnel_ledger::identity::{Msp, Signer};
use runnel_ledger::ids::{BlockNumber, Seq, TxId};
use runnel_ledger::metrics::Histogram;
use runnel_ledger::netconfig::CONFIG_NAMESPACE;
use runnel_ledger::orderer::replay::Seen;
use runnel_ledger::orderer::stream::{Cut, Ids, StreamLog, StreamOptions, StreamTx};
use runnel_ledger::orderer::{
    Admitted, ClusterView, Delivered, Delivery, OrderError, Ordered, Orderer, OrdererConfig,
    admit_batch,
};
use runnel_ledger::proto::{
    OrderedBatch, OrderedInput, OrderingEntry, OrderingSnapshot, ordering_entry,
};
use runnel_ledger::tx;

/// How one orderer takes part in its cluster.
#[derive(Debug, Clone)]
pub struct RaftSettings {
    /// This orderer's Raft id (non-zero, unique in the cluster).
    pub id: u64,
    /// The voters a new cluster starts with: the orderers of the genesis network
    /// definition. An orderer whose log exists keeps the membership its log holds.
    pub voters: Vec<u64>,
    /// Whether this orderer joins a cluster that runs already (added by a configuration
    /// update, so not among `voters`): it waits, taking no part in elections, until the
    /// leader has sent it the log up to the change that makes it a voter.
    pub joins: bool,
    /// How often Raft's clock ticks.
    pub tick: Duration,
    /// Ticks without a leader's heartbeat before a follower stands for election (Raft
    /// randomises it between this and twice this).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// How long a submit waits for its transactions to be committed.
    pub commit_timeout: Duration,
    /// Entries applied that the Raft log keeps behind the point it is compacted to, so
    /// that a follower a little behind catches up from entries rather than a snapshot; the
    /// log is compacted once twice this many are applied past its last compaction.
    pub log_entries_kept: u64,
}

impl RaftSettings {
    /// The defaults: a 100 ms tick, elections after 1–2 s of silence, heartbeats every
    /// 200 ms, submits waiting at most 10 s.
    pub fn new(id: u64, voters: Vec<u64>) -> RaftSettings {
        RaftSettings {
            id,
            voters,
            joins: false,
            tick: Duration::from_millis(100),
            election_ticks: 10,
            heartbeat_ticks: 2,
            commit_timeout: Duration::from_secs(10),
            log_entries_kept: LOG_ENTRIES_KEPT,
        }
    }
}

/// [`RaftSettings::log_entries_kept`] by default: a minute or more of entries under load
/// (an entry holds every transaction of one turn of the leader).
pub const LOG_ENTRIES_KEPT: u64 = 20_000;

/// How long a follower installing a snapshot waits for the next item of the stream it
/// reads from another orderer before it tries the next one.
const CATCH_UP_PATIENCE: Duration = Duration::from_secs(5);

/// How long a follower installing a snapshot goes on trying the members in turn before it
/// stops with an error.
const CATCH_UP_MAX: Duration = Duration::from_secs(60);

/// How an orderer reaches the other orderers of its cluster.
pub trait Transport: Send + Sync {
    /// Sends each message to the orderer its `to` names. May drop any of them (an
    /// orderer unreachable, a queue full): Raft sends again what matters.
    fn send(&self, messages: Vec<Message>);

    /// Asks the leader `leader` to order `transactions`, received by this orderer,
    /// waiting for its answers (one per transaction, in order).
    fn forward(&self, leader: u64, transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>>;

    /// The cluster changed: `members` are the orderers the network configuration in force
    /// (of sequence `sequence`) names, `voting` the ids Raft counts now (during a change,
    /// also members the configuration no longer names). Called at open and after each
    /// change. An orderer that joined from a later configuration than the one it has
    /// read back so far is told of older ones while it catches up: a transport that knows
    /// a later one keeps it.
    fn members(&self, sequence: u64, members: &[ClusterMember], voting: &[u64]) {
        let _ = (sequence, members, voting);
    }

    /// The ordered stream of orderer `member` from seq `from` and block `next_block`: what
    /// a follower installing a snapshot reads up to the snapshot's point.
    fn deliver_from(
        &self,
        member: u64,
        from: Seq,
        next_block: BlockNumber,
    ) -> Result<Box<dyn Delivery>, OrderError> {
        let _ = (from, next_block);
        Err(OrderError::Unavailable(format!(
            "this transport cannot read orderer {member}'s stream"
        )))
    }
}

/// An orderer of the cluster as the network configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMember {
    /// Its Raft id.
    pub id: u64,
    /// The organisation that runs it.
    pub org: String,
    /// Its name, the CN of its orderer certificate.
    pub name: String,
    /// Its ordering service, `https://host:port`.
    pub endpoint: String,
}

impl ClusterMember {
    /// The members of `definition`'s cluster, by Raft id.
    pub fn of(definition: &runnel_ledger::identity::NetworkDefinition) -> Vec<ClusterMember> {
        definition
            .cluster()
            .into_iter()
            .map(|(id, orderer)| ClusterMember {
                id,
                org: orderer.org.clone(),
                name: orderer.name.clone(),
                endpoint: orderer.endpoint.clone(),
            })
            .collect()
    }
}

/// How often a caller waiting for a leader looks again.
const LEADER_POLL: Duration = Duration::from_millis(20);

/// Most inputs queued for the Raft thread; messages past it are dropped (Raft resends),
/// proposals refused as unavailable.
const INPUTS_MAX: usize = 65_536;

/// Most inputs the Raft thread takes in one turn, so that a flood of them does not hold
/// off ticks and Ready handling.
const INPUTS_PER_TURN: usize = 4096;

/// Most transaction bytes one entry carries; a turn with more proposes several.
const ENTRY_BYTES_MAX: usize = 4 << 20;

/// Most bytes of entries one append message to a follower carries (at least one entry).
const APPEND_BYTES_MAX: u64 = 1 << 20;

/// Most append messages in flight to one follower.
const APPENDS_IN_FLIGHT_MAX: usize = 256;

/// What reaches the Raft thread.
enum Input {
    /// A message from another orderer.
    Step(Message),
    /// Admitted transactions to order, and where their answers go.
    Propose(Call),
}

/// One caller's transactions, waiting for their seqs.
struct Call {
    transactions: Vec<(Vec<u8>, Result<Admitted, OrderError>)>,
    received_us: u64,
    answer: Sender<Vec<Result<Ordered, OrderError>>>,
}

/// A call whose transactions are in a proposed entry: its answers so far, and where its
/// transactions sit in the entry.
struct Waiting {
    answers: Vec<Result<Ordered, OrderError>>,
    /// (answer slot, position in the entry, id) of each transaction proposed.
    proposed: Vec<(usize, usize, TxId)>,
    received_us: u64,
    answer: Sender<Vec<Result<Ordered, OrderError>>>,
}

/// An entry this orderer proposed as leader, until it is applied or given up.
struct Proposed {
    term: u64,
    calls: Vec<Waiting>,
    since: Instant,
}

/// What the Raft thread publishes for callers.
#[derive(Default)]
struct Status {
    /// The leader's id as this orderer knows it (0: none known).
    leader: AtomicU64,
    term: AtomicU64,
    /// Set when the Raft thread stopped on an error: every call reports it.
    failure: Mutex<Option<String>>,
    /// The ids the membership counts, as last applied.
    voters: Mutex<Vec<u64>>,
    /// The entry the Raft log was last compacted to (0: never).
    compacted: AtomicU64,
    /// Committed membership changes refused, as not what the definition in force asks
    /// for, since this orderer started.
    refused_changes: AtomicU64,
}

impl Status {
    fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// One orderer of a Raft cluster (see the module doc).
pub struct RaftOrderer {
    id: u64,
    config: OrdererConfig,
    msp: Arc<Msp>,
    /// Each submitter's share of the bytes admitted, kept by the leader.
    quotas: runnel_ledger::orderer::quota::Quotas,
    stream: Arc<StreamLog>,
    inputs: Sender<Input>,
    status: Arc<Status>,
    transport: Arc<dyn Transport>,
    commit_timeout: Duration,
    /// Raft's election timeout (the longest a follower waits, half of it).
    election_timeout: Duration,
    thread: Mutex<Option<JoinHandle<()>>>,
    stop: Sender<()>,
}

impl std::fmt::Debug for RaftOrderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftOrderer")
            .field("id", &self.id)
            .field("leader", &self.leader())
            .finish_non_exhaustive()
    }
}

fn log_failure(error: LogError) -> OrderError {
    match error {
        LogError::Corrupt(what) => OrderError::Corrupt(what),
        LogError::Io(error) => OrderError::Log(error.to_string()),
    }
}

impl RaftOrderer {
    /// Opens (or creates) this orderer's Raft log and stream log in `dir` and starts
    /// taking part in the cluster through `transport`. Messages from the other orderers
    /// come in through [`RaftOrderer::step`].
    pub fn open(
        dir: &Path,
        config: OrdererConfig,
        msp: Arc<Msp>,
        signer: Signer,
        settings: RaftSettings,
        transport: Arc<dyn Transport>,
    ) -> Result<RaftOrderer, OrderError> {
        if settings.id == 0 || (!settings.joins && !settings.voters.contains(&settings.id)) {
            return Err(OrderError::Unavailable(format!(
                "orderer id {} is not among the cluster's voters {:?}",
                settings.id, settings.voters
            )));
        }
        // A solo orderer's log holds no applied marks: opened as a replicated one, it
        // would be taken for a torn first group and dropped.
        if dir.join(runnel_ledger::orderer::stream::LOG_FILE).exists()
            && !dir.join(RAFT_LOG_FILE).exists()
        {
            return Err(OrderError::Corrupt(format!(
                "{} holds a solo orderer's log; a member of a cluster starts from an empty \
                 directory",
                dir.display()
            )));
        }
        let stream = Arc::new(StreamLog::open(
            dir,
            config.clone(),
            msp.clone(),
            signer.clone(),
            StreamOptions { replicated: true },
        )?);
        let mut genesis = ConfState::default();
        genesis.voters = settings.voters.clone();
        let log = RaftLog::open(dir, &genesis, config.sync).map_err(log_failure)?;
        // Everything the stream log applied was committed: a commit index recorded
        // before the last applies were (it is synced lazily) is raised to them. A
        // snapshot installed before a crash let the stream catch up is finished first
        // (`Runner::finish_install`): Raft starts after it either way.
        let applied = stream.applied_index().max(log.snapshotted().index);
        if applied > log.last_index() {
            return Err(OrderError::Corrupt(format!(
                "the stream log applied Raft entry {applied}, past the Raft log's last, {}",
                log.last_index()
            )));
        }
        if log.hard_state().commit < applied {
            log.set_commit(applied).map_err(log_failure)?;
            log.sync().map_err(log_failure)?;
        }
        let raft_config = raft::Config {
            id: settings.id,
            election_tick: settings.election_ticks,
            heartbeat_tick: settings.heartbeat_ticks,
            applied,
            max_size_per_msg: APPEND_BYTES_MAX,
            max_inflight_msgs: APPENDS_IN_FLIGHT_MAX,
            // A leader that cannot reach a majority steps down, and a node cut off
            // asks before it disrupts a healthy leader with a higher term.
            check_quorum: true,
            pre_vote: true,
            ..raft::Config::default()
        };
        raft_config
            .validate()
            .map_err(|e| OrderError::Unavailable(format!("Raft settings: {e}")))?;
        let conf_state = raft::Storage::initial_state(&log)
            .map_err(|e| OrderError::Corrupt(format!("reading the Raft log: {e}")))?
            .conf_state;
        let node = RawNode::new(&raft_config, log.clone(), &logger::logger())
            .map_err(|e| OrderError::Corrupt(format!("starting Raft: {e}")))?;
        let (inputs, received) = crossbeam_channel::bounded(INPUTS_MAX);
        let (stop, stopped) = crossbeam_channel::bounded(1);
        let status = Arc::new(Status::default());
        *status.voters.lock().unwrap_or_else(PoisonError::into_inner) = voting(&conf_state);
        status
            .compacted
            .store(log.snapshotted().index, AtomicOrdering::Release);
        let mut runner = Runner {
            node,
            log,
            stream: stream.clone(),
            inputs: received,
            stopped,
            transport: transport.clone(),
            status: status.clone(),
            signer,
            msp: msp.clone(),
            tick: settings.tick,
            last_tick: Instant::now(),
            proposed: BTreeMap::new(),
            in_flight: HashSet::new(),
            seal_in_flight: None,
            barred_warned: false,
            commit_timeout: settings.commit_timeout,
            id: settings.id,
            voters: sorted(&conf_state.voters),
            conf_state,
            followed_at: None,
            members: Vec::new(),
            members_sequence: 0,
            wanted: None,
            followed: None,
            kept: settings.log_entries_kept.max(1),
            checkpoints: VecDeque::new(),
            compaction: None,
        };
        runner.follow_configuration();
        let thread = std::thread::Builder::new()
            .name("runnel-raft".into())
            .spawn(move || runner.run())
            .map_err(|e| OrderError::Log(format!("starting the Raft thread: {e}")))?;
        Ok(RaftOrderer {
            id: settings.id,
            quotas: runnel_ledger::orderer::quota::Quotas::new(config.submitter_bytes_per_s_max),
            config,
            msp,
            stream,
            inputs,
            status,
            transport,
            commit_timeout: settings.commit_timeout,
            election_timeout: settings.tick * settings.election_ticks as u32,
            thread: Mutex::new(Some(thread)),
            stop,
        })
    }

    /// This orderer's Raft id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The leader's id as this orderer knows it, if it knows one.
    pub fn leader(&self) -> Option<u64> {
        match self.status.leader.load(AtomicOrdering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }

    /// The ids the cluster's membership counts, as this orderer last applied it (during
    /// a change, the outgoing voters too).
    pub fn voters(&self) -> Vec<u64> {
        self.status
            .voters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many committed membership changes this orderer refused since it started, as
    /// not moving the voters to the orderers the definition in force names (see
    /// `apply_conf_change`).
    pub fn refused_membership_changes(&self) -> u64 {
        self.status.refused_changes.load(AtomicOrdering::Acquire)
    }

    /// The entry this orderer's Raft log was last compacted to (0: never), by itself or
    /// by a snapshot it installed.
    pub fn compacted(&self) -> u64 {
        self.status.compacted.load(AtomicOrdering::Acquire)
    }

    /// The Raft term this orderer is in.
    pub fn term(&self) -> u64 {
        self.status.term.load(AtomicOrdering::Acquire)
    }

    /// Hands Raft a message another orderer sent. Dropped when the Raft thread is that
    /// far behind: Raft sends again what matters.
    pub fn step(&self, message: Message) {
        if let Err(TrySendError::Full(_)) = self.inputs.try_send(Input::Step(message)) {
            tracing::debug!("Raft input queue full; a message from another orderer dropped");
        }
    }

    fn check(&self) -> Result<(), OrderError> {
        match self.status.failure() {
            Some(failure) => Err(OrderError::Log(failure)),
            None => Ok(()),
        }
    }

    /// Waits until the leader this orderer knows is another than `leader` (a new one
    /// elected), for at most two election timeouts, or `deadline`.
    fn wait_for_another_leader(&self, leader: Option<u64>, deadline: Instant) {
        let until = deadline.min(Instant::now() + 2 * self.election_timeout);
        while Instant::now() < until {
            let now = self.leader();
            if now.is_some() && now != leader {
                return;
            }
            std::thread::sleep(LEADER_POLL);
        }
    }

    /// Orders `transactions` as leader: admits them here, then waits for the Raft
    /// thread's answers. `None` when this orderer is not the leader after all.
    fn order_as_leader(
        &self,
        transactions: Vec<Vec<u8>>,
    ) -> Option<Vec<Result<Ordered, OrderError>>> {
        let received_us = tx::now_us();
        let count = transactions.len();
        let admitted = admit_batch(&self.config, &self.msp, &self.quotas, &transactions);
        let (answer, answered) = crossbeam_channel::bounded(1);
        let call = Call {
            transactions: transactions.into_iter().zip(admitted).collect(),
            received_us,
            answer,
        };
        let unavailable = |why: &str| {
            Some(
                (0..count)
                    .map(|_| Err(OrderError::Unavailable(why.to_string())))
                    .collect(),
            )
        };
        match self.inputs.try_send(Input::Propose(call)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return unavailable("the orderer's Raft queue is full; retry");
            }
            Err(TrySendError::Disconnected(_)) => {
                return unavailable("the orderer's Raft thread stopped");
            }
        }
        // The Raft thread answers every call within the commit timeout (then gives up
        // on it); the margin covers a thread that stopped.
        match answered.recv_timeout(self.commit_timeout + Duration::from_secs(1)) {
            Ok(answers)
                if answers
                    .iter()
                    .all(|a| matches!(a, Err(OrderError::NotLeader))) =>
            {
                None
            }
            Ok(answers) => Some(answers),
            Err(_) => unavailable("no answer from the orderer's Raft thread"),
        }
    }
}

impl Orderer for RaftOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        self.submit_batch(vec![signed_transaction])
            .pop()
            .unwrap_or(Err(OrderError::Closed))
    }

    /// On the leader, orders them; on a follower, forwards them to the leader. While
    /// there is no leader, or the leader cannot be reached (it may have just failed),
    /// waits for the next one, up to the commit timeout: a client sees an election as a
    /// pause, not an error. An orderer that knows no leader for two election timeouts
    /// (longer than an election takes: it is likely cut off from the others) answers
    /// unavailable then, so that its caller tries another orderer.
    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        let count = signed_transactions.len();
        let deadline = Instant::now() + self.commit_timeout;
        let leaderless_until = Instant::now() + 2 * self.election_timeout;
        loop {
            if let Err(error) = self.check() {
                return (0..count).map(|_| Err(error.clone())).collect();
            }
            let leader = self.leader();
            match leader {
                Some(leader) if leader == self.id => {
                    if let Some(answers) = self.order_as_leader(signed_transactions.clone()) {
                        return answers;
                    }
                }
                Some(leader) => {
                    let answers = self.transport.forward(leader, signed_transactions.clone());
                    let unreachable = answers.iter().all(|answer| {
                        matches!(
                            answer,
                            Err(OrderError::Unavailable(_))
                                | Err(OrderError::Remote {
                                    code: "ORDERER_UNAVAILABLE",
                                    ..
                                })
                        )
                    });
                    if !unreachable || Instant::now() >= deadline {
                        return answers;
                    }
                }
                None if Instant::now() >= deadline.min(leaderless_until) => {
                    return (0..count)
                        .map(|_| {
                            Err(OrderError::Unavailable(format!(
                                "this orderer has known no leader of its cluster for {:?} \
                                 (cut off from the others, or no majority is up); retry \
                                 through another orderer",
                                2 * self.election_timeout
                            )))
                        })
                        .collect();
                }
                None => {}
            }
            self.wait_for_another_leader(leader, deadline);
        }
    }

    fn submits_in_batches(&self) -> bool {
        true
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        self.stream.deliver(from, next_block)
    }

    fn height(&self) -> Seq {
        self.stream.height()
    }

    fn durable_height(&self) -> Seq {
        self.stream.durable_height()
    }

    fn failure(&self) -> Option<String> {
        self.status.failure().or_else(|| self.stream.failure())
    }

    fn flush_seconds(&self) -> Option<Arc<Histogram>> {
        Some(self.stream.flush_seconds())
    }

    fn cluster(&self) -> Option<ClusterView> {
        Some(ClusterView {
            id: self.id,
            leader: self.leader(),
            term: self.term(),
            voters: self.voters(),
            compacted: self.compacted(),
        })
    }

    fn close(&self) {
        let _ = self.stop.try_send(());
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        self.stream.close();
    }
}

impl Drop for RaftOrderer {
    fn drop(&mut self) {
        self.close();
    }
}

/// The Raft thread's state.
struct Runner {
    node: RawNode<RaftLog>,
    log: RaftLog,
    stream: Arc<StreamLog>,
    inputs: Receiver<Input>,
    stopped: Receiver<()>,
    transport: Arc<dyn Transport>,
    status: Arc<Status>,
    signer: Signer,
    msp: Arc<Msp>,
    tick: Duration,
    last_tick: Instant,
    /// Entries this orderer proposed as leader, by index.
    proposed: BTreeMap<u64, Proposed>,
    /// Ids of the transactions in `proposed`, so that a replay is not proposed twice.
    in_flight: HashSet<TxId>,
    /// The index and term of the seal entry proposed and not yet applied.
    seal_in_flight: Option<(u64, u64)>,
    /// Whether it was said that this leader may not seal (said once until it may).
    barred_warned: bool,
    commit_timeout: Duration,
    /// This orderer's Raft id.
    id: u64,
    /// The membership as applied.
    conf_state: ConfState,
    /// Its voters, sorted: what `wanted` is compared with.
    voters: Vec<u64>,
    /// The applied index at which the configuration in force was last read.
    followed_at: Option<u64>,
    /// The orderers the configuration in force names, and its sequence.
    members: Vec<ClusterMember>,
    members_sequence: u64,
    /// Their ids, sorted: the voters the leader moves the cluster to. `None` while this
    /// orderer follows no configuration, or it names no cluster.
    wanted: Option<Vec<u64>>,
    /// The seq of the configuration update last read (`Seq::ZERO`: the genesis one).
    followed: Option<Seq>,
    /// [`RaftSettings::log_entries_kept`].
    kept: u64,
    /// Points the log may be compacted to: applied indexes, oldest first, with what the
    /// stream held and the membership then.
    checkpoints: VecDeque<(u64, OrderingSnapshot, ConfState)>,
    /// The compaction under way on a thread of its own: the index it compacts to, if it
    /// did not give up.
    compaction: Option<JoinHandle<Result<Option<u64>, String>>>,
}

/// Why the Raft thread stops.
type Stop = Result<(), String>;

impl Runner {
    fn run(&mut self) {
        let outcome = catch_unwind(AssertUnwindSafe(|| self.turns()))
            .map(|turns| turns.and(self.finish_compaction().map(drop)));
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(failure)) => Some(failure),
            Err(panic) => Some(format!(
                "the Raft state machine stopped: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".into())
            )),
        };
        if let Some(failure) = failure {
            tracing::error!(%failure, "this orderer stops ordering; the rest of the cluster goes on");
            *self
                .status
                .failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(failure.clone());
            self.stream.fail(failure.clone());
        }
        self.status.leader.store(0, AtomicOrdering::Release);
        // Whoever still waits learns now.
        let error = OrderError::Unavailable("this orderer stopped ordering".into());
        for (_, proposed) in std::mem::take(&mut self.proposed) {
            for call in proposed.calls {
                let _ = call
                    .answer
                    .send(call.answers.iter().map(|_| Err(error.clone())).collect());
            }
        }
        for input in self.inputs.try_iter() {
            if let Input::Propose(call) = input {
                let _ = call.answer.send(
                    call.transactions
                        .iter()
                        .map(|_| Err(error.clone()))
                        .collect(),
                );
            }
        }
    }

    fn turns(&mut self) -> Stop {
        self.finish_install()?;
        loop {
            if self.stopped.try_recv().is_ok() {
                return Ok(());
            }
            let wait = self.tick.saturating_sub(self.last_tick.elapsed());
            let mut calls = Vec::new();
            match self.inputs.recv_timeout(wait) {
                Ok(input) => self.take(input, &mut calls),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            let more: Vec<Input> = self.inputs.try_iter().take(INPUTS_PER_TURN).collect();
            for input in more {
                self.take(input, &mut calls);
            }
            if self.last_tick.elapsed() >= self.tick {
                self.node.tick();
                self.last_tick = Instant::now();
            }
            if !calls.is_empty() {
                self.propose(calls);
            }
            self.maybe_seal();
            self.handle_ready()?;
            self.give_up_late();
            self.follow_configuration();
            self.maybe_change_membership();
        }
    }

    fn take(&mut self, input: Input, calls: &mut Vec<Call>) {
        match input {
            Input::Step(message) => {
                tracing::trace!(from = message.from, kind = ?message.get_msg_type(), index = message.index, "Raft message stepped");
                if let Err(error) = self.node.step(message) {
                    tracing::debug!(%error, "a Raft message from another orderer was not taken");
                }
            }
            Input::Propose(call) => {
                tracing::trace!(
                    count = call.transactions.len(),
                    "transactions to propose taken"
                );
                calls.push(call)
            }
        }
    }

    fn is_leader(&self) -> bool {
        self.node.raft.state == StateRole::Leader
    }

    /// Proposes the turn's admitted transactions, as few entries as their bytes allow.
    /// Replays are refused here, against what was applied and what is in flight.
    fn propose(&mut self, calls: Vec<Call>) {
        if !self.is_leader() {
            for call in calls {
                let _ = call.answer.send(
                    call.transactions
                        .iter()
                        .map(|_| Err(OrderError::NotLeader))
                        .collect(),
                );
            }
            return;
        }
        let now_ms = tx::now_ms();
        let mut entry = Vec::new();
        let mut entry_bytes = 0;
        let mut waiting = Vec::new();
        for call in calls {
            let mut answers = Vec::with_capacity(call.transactions.len());
            let mut proposed = Vec::new();
            for (slot, (bytes, admitted)) in call.transactions.into_iter().enumerate() {
                let checked = admitted.and_then(|(tx_id, proposal_ms, _)| {
                    if self.in_flight.contains(&tx_id) {
                        return Err(OrderError::Duplicate(tx_id));
                    }
                    match self.stream.check_replay(&tx_id, proposal_ms, now_ms) {
                        Seen::New => Ok(tx_id),
                        Seen::Replay => Err(OrderError::Duplicate(tx_id)),
                        Seen::BeyondMemory { floor_ms } => Err(OrderError::BeyondReplayMemory {
                            proposal_ms,
                            floor_ms,
                        }),
                    }
                });
                match checked {
                    Ok(tx_id) => {
                        if entry_bytes + bytes.len() > ENTRY_BYTES_MAX && !entry.is_empty() {
                            self.propose_entry(
                                std::mem::take(&mut entry),
                                std::mem::take(&mut waiting),
                            );
                            entry_bytes = 0;
                        }
                        self.in_flight.insert(tx_id);
                        entry_bytes += bytes.len();
                        proposed.push((slot, entry.len(), tx_id));
                        entry.push(OrderedInput {
                            timestamp_ms: now_ms,
                            transaction: bytes,
                        });
                        answers.push(Err(OrderError::Closed));
                    }
                    Err(error) => answers.push(Err(error)),
                }
            }
            let call = Waiting {
                answers,
                proposed,
                received_us: call.received_us,
                answer: call.answer,
            };
            if call.proposed.is_empty() {
                let _ = call.answer.send(call.answers);
            } else {
                waiting.push(call);
            }
        }
        if !entry.is_empty() {
            self.propose_entry(entry, waiting);
        }
    }

    fn propose_entry(&mut self, transactions: Vec<OrderedInput>, calls: Vec<Waiting>) {
        let data = OrderingEntry {
            entry: Some(ordering_entry::Entry::Batch(OrderedBatch { transactions })),
        }
        .encode_to_vec();
        match self.node.propose(Vec::new(), data) {
            Ok(()) => {
                let index = self.node.raft.raft_log.last_index();
                tracing::trace!(index, "Raft entry proposed");
                self.proposed.insert(
                    index,
                    Proposed {
                        term: self.node.raft.term,
                        calls,
                        since: Instant::now(),
                    },
                );
            }
            Err(error) => {
                let error = OrderError::Unavailable(format!("Raft refused the proposal: {error}"));
                for call in calls {
                    self.answer_lost(call, &error);
                }
            }
        }
    }

    fn answer_lost(&mut self, call: Waiting, error: &OrderError) {
        let mut answers = call.answers;
        for (slot, _, tx_id) in call.proposed {
            self.in_flight.remove(&tx_id);
            answers[slot] = Err(error.clone());
        }
        let _ = call.answer.send(answers);
    }

    /// As leader, with no seal in flight: proposes the next seal once the oldest unsealed
    /// transaction has waited `seal_max_delay` or `seal_max_txs` wait.
    fn maybe_seal(&mut self) {
        if !self.is_leader() {
            self.seal_in_flight = None;
            return;
        }
        if let Some((index, term)) = self.seal_in_flight {
            // Given up if it was overtaken (its index applied with another entry).
            if term == self.node.raft.term || index > self.node.raft.raft_log.applied {
                return;
            }
            self.seal_in_flight = None;
        }
        let sealed = match self.stream.next_seal(&self.signer, tx::now_ms()) {
            Cut::Seal(sealed) => sealed,
            Cut::Wait(_) => return,
            Cut::Barred(error) => {
                // The block must be sealed by an orderer the configuration names there.
                // One it no longer names hands the lead to one it does. One it names
                // whose certificate is refused (revoked, or not of the name the
                // definition gives) keeps the lead, so that the lead does not go round
                // orderers none of which may seal: transactions are still ordered, and
                // the blocks wait for a leader that may seal them.
                let named = self
                    .wanted
                    .as_ref()
                    .is_some_and(|wanted| wanted.contains(&self.id));
                let handed =
                    !named && self.hand_lead_over("the configuration no longer names this orderer");
                if !handed && !self.barred_warned {
                    tracing::error!(%error, "this orderer leads but may not seal the stream; no block is sealed until another leads");
                    self.barred_warned = true;
                }
                return;
            }
        };
        self.barred_warned = false;
        let data = OrderingEntry {
            entry: Some(ordering_entry::Entry::Seal(sealed.bytes)),
        }
        .encode_to_vec();
        if self.node.propose(Vec::new(), data).is_ok() {
            self.seal_in_flight = Some((self.node.raft.raft_log.last_index(), self.node.raft.term));
        }
    }

    fn handle_ready(&mut self) -> Stop {
        if !self.node.has_ready() {
            return Ok(());
        }
        let mut ready = self.node.ready();
        if !ready.messages().is_empty() {
            // A leader's appends go out before its own sync: the followers write in
            // parallel with it.
            self.send(ready.take_messages());
        }
        if !ready.snapshot().is_empty() {
            self.install(&Snapshotted::of(ready.snapshot()))?;
        }
        self.apply(ready.take_committed_entries())?;
        if !ready.entries().is_empty() {
            self.log
                .append(ready.entries())
                .map_err(|e| e.to_string())?;
        }
        if let Some(hard_state) = ready.hs() {
            self.log
                .set_hard_state(hard_state)
                .map_err(|e| e.to_string())?;
        }
        // Synced when Raft needs it (entries, a term or a vote): a hard state that only
        // moved the commit index is written and made durable by the next sync (a
        // restart raises a lagging commit index to what the stream log applied).
        if ready.must_sync() {
            self.log
                .sync()
                .map_err(|e| format!("syncing the Raft log: {e}"))?;
            tracing::trace!(
                last = self.node.raft.raft_log.last_index(),
                "Raft log synced"
            );
        }
        if !ready.persisted_messages().is_empty() {
            self.send(ready.take_persisted_messages());
        }
        if let Some(soft) = ready.ss() {
            self.status
                .leader
                .store(soft.leader_id, AtomicOrdering::Release);
            if soft.raft_state != StateRole::Leader {
                self.lost_leadership();
            }
        }
        let mut light = self.node.advance(ready);
        if let Some(commit) = light.commit_index() {
            self.log.set_commit(commit).map_err(|e| e.to_string())?;
        }
        if !light.messages().is_empty() {
            self.send(light.take_messages());
        }
        self.apply(light.take_committed_entries())?;
        self.node.advance_apply();
        self.maybe_compact()?;
        self.status
            .leader
            .store(self.node.raft.leader_id, AtomicOrdering::Release);
        self.status
            .term
            .store(self.node.raft.term, AtomicOrdering::Release);
        Ok(())
    }

    fn apply(&mut self, entries: Vec<Entry>) -> Stop {
        for entry in entries {
            let index = entry.index;
            match entry.get_entry_type() {
                EntryType::EntryNormal if entry.data.is_empty() => {
                    // A new leader's empty entry: nothing to deliver, but applied.
                    self.stream
                        .append_txs(Vec::new(), Ids::Record, Some(index))
                        .map_err(|e| e.to_string())?;
                }
                EntryType::EntryNormal => self.apply_normal(&entry)?,
                EntryType::EntryConfChangeV2 => self.apply_conf_change(&entry)?,
                EntryType::EntryConfChange => {
                    return Err(format!(
                        "Raft entry {index} changes the membership the old way (ConfChange), \
                         which Runnel never proposes"
                    ));
                }
            }
            // A restart resumes after the log's applied mark: an entry applied without
            // leaving its index there would be applied twice, its transactions given
            // second seqs.
            assert_eq!(
                self.stream.applied_index(),
                index,
                "invariant broken: each Raft entry applied leaves its index as the log's \
                 applied mark"
            );
            if let Some(proposed) = self.proposed.remove(&index) {
                // Applied with another term: another leader's entry took its place.
                let error = OrderError::Unavailable(
                    "the ordering cluster changed leader before these transactions were committed; retry".into(),
                );
                for call in proposed.calls {
                    self.answer_lost(call, &error);
                }
            }
        }
        Ok(())
    }

    /// Applies a committed membership change: Raft's membership, the log's record of it,
    /// the applied mark. An orderer the change leaves out of the cluster stops ordering.
    ///
    /// Only a change that moves the voters to the orderers the definition in force at
    /// this entry names is applied (or one that leaves the joint membership such a change
    /// entered). Any other is refused: the entry is marked applied and the membership
    /// stays as it was. Every orderer applies the same entries in the same order, so
    /// every one reads the same definition here and refuses alike; the leader then
    /// proposes the change the definition asks for. A change refused this way is not a
    /// fault to stop on: a configuration update ordered between a leader's proposal and
    /// its change's entry makes an honest change stale, and stopping would stop every
    /// orderer at once.
    fn apply_conf_change(&mut self, entry: &Entry) -> Stop {
        let index = entry.index;
        let change = wire::conf_change_from_bytes(&entry.data)
            .map_err(|e| format!("Raft entry {index}: {e}"))?;
        // The definition in force after every entry before this one.
        self.read_configuration();
        if let Err(why) = self.change_allowed(&change) {
            tracing::warn!(
                index,
                why,
                voters = ?self.conf_state.voters,
                "a membership change of the ordering cluster was refused: the cluster keeps its members"
            );
            self.status
                .refused_changes
                .fetch_add(1, AtomicOrdering::Release);
            self.stream
                .append_txs(Vec::new(), Ids::Record, Some(index))
                .map_err(|e| e.to_string())?;
            return Ok(());
        }
        let conf_state = self
            .node
            .apply_conf_change(&change)
            .map_err(|e| format!("applying the membership change of Raft entry {index}: {e}"))?;
        self.log
            .set_conf_state(&conf_state)
            .map_err(|e| e.to_string())?;
        self.stream
            .append_txs(Vec::new(), Ids::Record, Some(index))
            .map_err(|e| e.to_string())?;
        tracing::info!(
            index,
            voters = ?conf_state.voters,
            outgoing = ?conf_state.voters_outgoing,
            "the ordering cluster's membership changed"
        );
        let was_member = voting(&self.conf_state).contains(&self.id);
        self.set_conf_state(conf_state);
        if was_member && !voting(&self.conf_state).contains(&self.id) {
            return Err(format!(
                "this orderer was removed from the ordering cluster (Raft entry {index}); it \
                 orders no more, and its stream stops"
            ));
        }
        Ok(())
    }

    /// Whether `change`, committed now, is one the definition in force asks for: it
    /// leaves a joint membership the cluster is in, or (outside one) it enters a joint
    /// membership, left implicitly, whose incoming voters are exactly the orderers the
    /// definition names, as `maybe_change_membership` proposes. Why not, if not.
    fn change_allowed(&self, change: &ConfChangeV2) -> Result<(), String> {
        let joint = !self.conf_state.voters_outgoing.is_empty();
        let leaves = change.get_transition() == ConfChangeTransition::Auto
            && change.get_changes().is_empty();
        if leaves {
            return match joint {
                true => Ok(()),
                false => Err("it leaves a joint membership, and the cluster is in none".into()),
            };
        }
        if joint {
            return Err("the cluster is still in a joint membership".into());
        }
        if change.get_transition() != ConfChangeTransition::Implicit {
            return Err(format!(
                "its transition is {:?}; Runnel changes memberships through a joint one left \
                 implicitly",
                change.get_transition()
            ));
        }
        let Some(wanted) = &self.wanted else {
            return Err(
                "this orderer follows no network configuration naming the cluster's orderers"
                    .into(),
            );
        };
        let mut next: BTreeSet<u64> = self.conf_state.voters.iter().copied().collect();
        for single in change.get_changes() {
            match single.get_change_type() {
                ConfChangeType::AddNode => next.insert(single.node_id),
                ConfChangeType::RemoveNode => next.remove(&single.node_id),
                ConfChangeType::AddLearnerNode => {
                    return Err(format!(
                        "it makes {} a learner, which Runnel never does",
                        single.node_id
                    ));
                }
            };
        }
        let named: BTreeSet<u64> = wanted.iter().copied().collect();
        if next != named {
            return Err(format!(
                "it makes the voters {next:?}, and the definition in force (sequence {}) names \
                 the orderers {named:?}",
                self.members_sequence
            ));
        }
        Ok(())
    }

    /// The membership in force from now on: published, and the transport told.
    fn set_conf_state(&mut self, conf_state: ConfState) {
        self.voters = sorted(&conf_state.voters);
        self.conf_state = conf_state;
        let voting = voting(&self.conf_state);
        self.transport
            .members(self.members_sequence, &self.members, &voting);
        *self
            .status
            .voters
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = voting;
    }

    /// Hands `messages` to the transport. A snapshot sent counts as delivered: the
    /// follower's progress goes back to probing, and if it did not get it, the next
    /// probe sends another.
    fn send(&mut self, messages: Vec<Message>) {
        let snapshots: Vec<u64> = messages
            .iter()
            .filter(|message| message.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot)
            .map(|message| message.to)
            .collect();
        if tracing::enabled!(tracing::Level::TRACE) {
            for message in &messages {
                tracing::trace!(to = message.to, kind = ?message.get_msg_type(), index = message.index, entries = message.entries.len(), commit = message.commit, "Raft message sent");
            }
        }
        self.transport.send(messages);
        for to in snapshots {
            self.node.report_snapshot(to, raft::SnapshotStatus::Finish);
        }
    }

    /// Keeps the Raft log bounded: notes a checkpoint every quarter of `kept` entries
    /// applied, and once twice `kept` are applied past the last compaction, compacts up to
    /// the newest checkpoint at least `kept` behind, on a thread of its own (the log is
    /// written again: see `log.rs`), one compaction at a time.
    fn maybe_compact(&mut self) -> Stop {
        let applied = self.node.raft.raft_log.applied;
        let step = (self.kept / 4).max(1);
        let last = self.checkpoints.back().map_or(0, |(index, _, _)| *index);
        if applied >= last + step && self.stream.applied_index() == applied {
            let (height, blocks) = self.stream.position();
            self.checkpoints.push_back((
                applied,
                OrderingSnapshot {
                    height: height.0,
                    blocks: blocks.0,
                    source: self.id,
                },
                self.conf_state.clone(),
            ));
        }
        if let Some(compaction) = &self.compaction {
            if !compaction.is_finished() {
                return Ok(());
            }
            if let Some(index) = self.finish_compaction()? {
                self.status.compacted.store(index, AtomicOrdering::Release);
                tracing::info!(index, "compacted the Raft log");
            }
        }
        if applied < self.log.compacted_to() + 2 * self.kept {
            return Ok(());
        }
        let Some(at) = self
            .checkpoints
            .iter()
            .rposition(|(index, _, _)| *index + self.kept <= applied)
        else {
            return Ok(());
        };
        let (index, data, conf_state) = self.checkpoints[at].clone();
        self.checkpoints.drain(..=at);
        let log = self.log.clone();
        let thread = std::thread::Builder::new()
            .name("runnel-raft-compact".into())
            .spawn(move || {
                log.compact(index, &conf_state, data.encode_to_vec())
                    .map(|done| done.then_some(index))
                    .map_err(|e| format!("compacting the Raft log up to entry {index}: {e}"))
            })
            .map_err(|e| format!("starting a compaction of the Raft log: {e}"))?;
        self.compaction = Some(thread);
        Ok(())
    }

    /// Waits for the compaction under way, if any: the index it compacted to.
    fn finish_compaction(&mut self) -> Result<Option<u64>, String> {
        match self.compaction.take().map(JoinHandle::join) {
            None => Ok(None),
            Some(Ok(done)) => done,
            Some(Err(_)) => Err("the compaction of the Raft log panicked".into()),
        }
    }

    /// Installs a snapshot another orderer sent (this one was too far behind for
    /// entries): the Raft log starts afresh from it, and the stream catches up to its
    /// point from the orderer that made it, or another member.
    fn install(&mut self, snapshot: &Snapshotted) -> Stop {
        tracing::info!(
            index = snapshot.index,
            "installing a snapshot: this orderer was too far behind for the log's entries"
        );
        self.finish_compaction()?;
        self.log
            .install(snapshot)
            .map_err(|e| format!("installing the snapshot of entry {}: {e}", snapshot.index))?;
        self.checkpoints.clear();
        self.status
            .compacted
            .store(snapshot.index, AtomicOrdering::Release);
        self.finish_install()
    }

    /// When the Raft log was compacted by an installed snapshot past what the stream log
    /// applied: reads the stream up to the snapshot's point from the members (the
    /// snapshot's source first), appends it, checking every seal as a peer does, and marks
    /// the snapshot's index applied.
    fn finish_install(&mut self) -> Stop {
        let snapshot = self.log.snapshotted();
        if snapshot.index <= self.stream.applied_index() {
            return Ok(());
        }
        let point = OrderingSnapshot::decode(snapshot.data.as_slice())
            .map_err(|e| format!("the snapshot of entry {}: {e}", snapshot.index))?;
        let mut sources: Vec<u64> = voting(&snapshot.conf_state)
            .into_iter()
            .filter(|id| *id != self.id && *id != point.source)
            .collect();
        sources.insert(0, point.source);
        let deadline = Instant::now() + CATCH_UP_MAX;
        let mut tried = 0usize;
        loop {
            let (height, blocks) = self.stream.position();
            if height.0 >= point.height && blocks.0 >= point.blocks {
                break;
            }
            if self.stopped.try_recv().is_ok() {
                return Err("stopped while catching up the stream from a snapshot".into());
            }
            let source = sources[tried % sources.len()];
            tried += 1;
            match self.catch_up_from(source, &point) {
                Ok(()) => {}
                Err(error) if Instant::now() < deadline => {
                    tracing::warn!(source, %error, "catching the stream up from another orderer; trying the next");
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(error) => {
                    return Err(format!(
                        "catching the stream up to seq {} for the snapshot of entry {}: {error}",
                        point.height, snapshot.index
                    ));
                }
            }
        }
        self.stream
            .append_txs(Vec::new(), Ids::Record, Some(snapshot.index))
            .map_err(|e| e.to_string())?;
        self.set_conf_state(snapshot.conf_state);
        tracing::info!(
            index = snapshot.index,
            height = point.height,
            "the stream caught up to the snapshot"
        );
        Ok(())
    }

    /// Reads orderer `source`'s stream from this one's position up to `point`, appending
    /// it; stops early (`Ok`) only at the point, and errs when the stream fails or stalls.
    fn catch_up_from(&mut self, source: u64, point: &OrderingSnapshot) -> Result<(), String> {
        let (height, blocks) = self.stream.position();
        let mut delivery = self
            .transport
            .deliver_from(source, height.next(), BlockNumber(blocks.0 + 1))
            .map_err(|e| e.to_string())?;
        loop {
            let (height, blocks) = self.stream.position();
            if height.0 >= point.height && blocks.0 >= point.blocks {
                return Ok(());
            }
            let item = delivery
                .next(CATCH_UP_PATIENCE)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("orderer {source}'s stream stalled"))?;
            match item {
                Delivered::Tx(ordered) if ordered.seq.0 <= point.height => {
                    let expected = height.next();
                    let input = OrderedInput {
                        timestamp_ms: ordered.timestamp_ms,
                        transaction: ordered.transaction,
                    };
                    let seqs = self
                        .stream
                        .append_txs(vec![stream_tx(input)], Ids::Record, None)
                        .map_err(|e| e.to_string())?;
                    if ordered.seq != expected || seqs != [expected] {
                        return Err(format!(
                            "orderer {source} delivered seq {} where {expected} was next",
                            ordered.seq.0
                        ));
                    }
                }
                Delivered::Seal(sealed) if sealed.seal.number.0 <= point.blocks => {
                    let accepted = self
                        .stream
                        .accept_seal(&sealed.bytes, &self.msp, None)
                        .map_err(|e| e.to_string())?;
                    if !accepted {
                        return Err(format!(
                            "orderer {source} delivered seal {} that does not follow the chain",
                            sealed.seal.number.0
                        ));
                    }
                }
                Delivered::Tx(_) | Delivered::Seal(_) | Delivered::Durable(_) => {}
            }
        }
    }

    /// Reads the configuration in force when it changed: the members it names, which the
    /// transport learns, and the voters the leader moves the cluster to.
    fn follow_configuration(&mut self) {
        // Only an applied entry can change it.
        let applied = self.node.raft.raft_log.applied;
        if self.followed_at == Some(applied) {
            return;
        }
        self.followed_at = Some(applied);
        self.read_configuration();
    }

    /// Reads the definition in force, if it changed since last read: what
    /// [`Runner::follow_configuration`] does once per applied index, and a membership
    /// change before it is applied.
    fn read_configuration(&mut self) {
        let Some((seq, definition)) = self.stream.definition_since(self.followed) else {
            return;
        };
        self.followed = Some(seq);
        if let Some(holder) = super::quorum::quorum_holder(&definition) {
            tracing::warn!(
                sequence = definition.sequence,
                "the ordering cluster's trust: {holder} (docs/security.md, \"The ordering cluster\")"
            );
        }
        let members = ClusterMember::of(&definition);
        let mut wanted: Vec<u64> = members.iter().map(|member| member.id).collect();
        wanted.sort_unstable();
        if wanted.is_empty() {
            tracing::warn!(
                seq = seq.0,
                "the network configuration names no ordering cluster; the cluster keeps its members"
            );
        } else {
            self.wanted = Some(wanted);
            self.members = members;
            self.members_sequence = definition.sequence;
        }
        self.transport.members(
            self.members_sequence,
            &self.members,
            &voting(&self.conf_state),
        );
    }

    /// As leader, with no membership change in flight: when the configuration names other
    /// orderers than the voters, proposes the change, through a joint membership (every
    /// decision needs a majority of the old voters and of the new ones until Raft leaves
    /// it on its own).
    fn maybe_change_membership(&mut self) {
        let Some(wanted) = &self.wanted else {
            return;
        };
        if *wanted == self.voters
            || !self.is_leader()
            || !self.conf_state.voters_outgoing.is_empty()
            || self.node.raft.has_pending_conf()
        {
            return;
        }
        let now: BTreeSet<u64> = self.voters.iter().copied().collect();
        let next: BTreeSet<u64> = wanted.iter().copied().collect();
        if !next.contains(&self.id) && self.hand_lead_over("this orderer leaves the cluster") {
            // The heir, which stays, makes the change.
            return;
        }
        let changes: Vec<_> = next
            .difference(&now)
            .map(|id| change_single(*id, ConfChangeType::AddNode))
            .chain(
                now.difference(&next)
                    .map(|id| change_single(*id, ConfChangeType::RemoveNode)),
            )
            .collect();
        let mut change = ConfChangeV2::default();
        change.set_transition(ConfChangeTransition::Implicit);
        change.set_changes(changes.into());
        match self.node.propose_conf_change(Vec::new(), change) {
            Ok(()) => tracing::info!(
                from = ?now,
                to = ?next,
                "proposing a change of the ordering cluster's membership"
            ),
            Err(error) => tracing::warn!(%error, "a membership change was not proposed"),
        }
    }

    /// As leader: hands the lead to the voter, other than this orderer, that the
    /// configuration in force names and that holds the most of the log. False when
    /// there is none.
    fn hand_lead_over(&mut self, why: &str) -> bool {
        let Some(wanted) = &self.wanted else {
            return false;
        };
        let heir = self
            .voters
            .iter()
            .filter(|id| **id != self.id && wanted.contains(id))
            .filter_map(|id| Some((self.node.raft.prs().get(*id)?.matched, *id)))
            .max();
        let Some((_, heir)) = heir else {
            return false;
        };
        if self.node.raft.lead_transferee != Some(heir) {
            tracing::info!(heir, why, "handing the lead over");
            self.node.transfer_leader(heir);
        }
        true
    }

    fn apply_normal(&mut self, entry: &Entry) -> Stop {
        let index = entry.index;
        tracing::trace!(index, "Raft entry applied");
        let decoded = OrderingEntry::decode(entry.data.as_ref())
            .map_err(|e| format!("Raft entry {index} does not decode: {e}"))?;
        match decoded.entry {
            Some(ordering_entry::Entry::Batch(batch)) => {
                let txs: Vec<StreamTx> = batch.transactions.into_iter().map(stream_tx).collect();
                let seqs = self
                    .stream
                    .append_txs(txs, Ids::Record, Some(index))
                    .map_err(|e| e.to_string())?;
                if let Some(proposed) = self.proposed.remove(&index) {
                    if proposed.term == entry.term {
                        self.answer_ordered(proposed, &seqs);
                    } else {
                        self.proposed.insert(index, proposed);
                    }
                }
            }
            Some(ordering_entry::Entry::Seal(bytes)) => {
                if self.seal_in_flight.is_some_and(|(at, _)| at == index) {
                    self.seal_in_flight = None;
                }
                match self.stream.accept_seal(&bytes, &self.msp, Some(index)) {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::debug!(index, "a seal overtaken by another was skipped");
                    }
                    Err(error) => return Err(error.to_string()),
                }
            }
            None => return Err(format!("Raft entry {index} holds nothing")),
        }
        Ok(())
    }

    fn answer_ordered(&mut self, proposed: Proposed, seqs: &[Seq]) {
        let ordered_us = tx::now_us();
        for call in proposed.calls {
            let mut answers = call.answers;
            for (slot, position, tx_id) in call.proposed {
                self.in_flight.remove(&tx_id);
                answers[slot] = match seqs.get(position) {
                    Some(&seq) => Ok(Ordered {
                        seq,
                        tx_id,
                        received_us: call.received_us,
                        ordered_us,
                    }),
                    None => Err(OrderError::Corrupt(format!(
                        "an entry applied {} transactions where {} were proposed",
                        seqs.len(),
                        position + 1
                    ))),
                };
            }
            let _ = call.answer.send(answers);
        }
    }

    /// No longer the leader (a new one elected, or stepped down with no majority in
    /// reach): answers the calls whose entries are not applied yet at once, rather than at
    /// the commit timeout, so that their callers retry through the new leader. An entry
    /// that commits after all leaves a retried transaction DUPLICATE_TXID.
    fn lost_leadership(&mut self) {
        if self.proposed.is_empty() {
            return;
        }
        let error = OrderError::Unavailable(
            "this orderer is no longer the cluster's leader and these transactions were not committed yet; retry".into(),
        );
        for (_, proposed) in std::mem::take(&mut self.proposed) {
            for call in proposed.calls {
                self.answer_lost(call, &error);
            }
        }
    }

    /// Answers calls whose entries have waited longer than the commit timeout (no
    /// majority reachable): their callers retry, and learn from DUPLICATE_TXID if the
    /// entry was committed after all.
    fn give_up_late(&mut self) {
        let late: Vec<u64> = self
            .proposed
            .iter()
            .filter(|(_, p)| p.since.elapsed() > self.commit_timeout)
            .map(|(index, _)| *index)
            .collect();
        let error = OrderError::Unavailable(format!(
            "not committed within {:?}: the ordering cluster has no majority; retry",
            self.commit_timeout
        ));
        for index in late {
            if let Some(proposed) = self.proposed.remove(&index) {
                for call in proposed.calls {
                    self.answer_lost(call, &error);
                }
            }
        }
    }
}

/// One change of a membership change.
fn change_single(id: u64, change_type: ConfChangeType) -> ConfChangeSingle {
    let mut single = ConfChangeSingle::default();
    single.node_id = id;
    single.set_change_type(change_type);
    single
}

/// `ids`, sorted.
fn sorted(ids: &[u64]) -> Vec<u64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids
}

/// The ids a membership counts: its voters and, during a change, the outgoing ones.
fn voting(conf_state: &ConfState) -> Vec<u64> {
    let mut ids: Vec<u64> = conf_state
        .voters
        .iter()
        .chain(&conf_state.voters_outgoing)
        .copied()
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A committed transaction as the stream log takes it: its id and proposal time read
/// again from its bytes (the leader admitted it, so they decode; if not, the peers'
/// validators refuse it, and it keeps an id of its own bytes' hash).
fn stream_tx(input: OrderedInput) -> StreamTx {
    let (tx_id, proposal_ms, config_update) = match tx::decode_transaction(&input.transaction) {
        Ok((_, _, proposal)) => (
            tx::tx_id(&proposal),
            proposal.timestamp_ms,
            proposal.contract == CONFIG_NAMESPACE,
        ),
        Err(_) => (
            TxId(tx::sha256(&input.transaction)),
            input.timestamp_ms,
            false,
        ),
    };
    StreamTx {
        signed_transaction: input.transaction,
        timestamp_ms: input.timestamp_ms,
        tx_id,
        proposal_ms,
        config_update,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::identity::{NetworkDefinition, NetworkIdentities, OrdererNode, Role};
    use runnel_testing::orderer::PATIENCE;

    /// A transport for an orderer alone in its cluster, which writes to its stream log
    /// itself: once told the membership counts orderer 2, it marks the next Raft entry
    /// applied, as a second writer of the stream would.
    struct MarkingTransport {
        /// The orderer's stream log, handed over once the orderer is open.
        stream: Receiver<Arc<StreamLog>>,
        /// The applied marks it found and left.
        moved: Mutex<Option<(u64, u64)>>,
    }

    impl Transport for MarkingTransport {
        fn send(&self, _messages: Vec<Message>) {}

        fn forward(
            &self,
            _leader: u64,
            transactions: Vec<Vec<u8>>,
        ) -> Vec<Result<Ordered, OrderError>> {
            transactions
                .iter()
                .map(|_| Err(OrderError::Unavailable("no other orderer".into())))
                .collect()
        }

        fn members(&self, _sequence: u64, _members: &[ClusterMember], voting: &[u64]) {
            if !voting.contains(&2) {
                return;
            }
            // Waits for the stream if the test has not handed it over yet, so that the
            // mark moves however quickly the change is applied.
            let Ok(stream) = self.stream.recv() else {
                return;
            };
            let found = stream.applied_index();
            stream
                .append_txs(Vec::new(), Ids::Record, Some(found + 1))
                .unwrap();
            *self.moved.lock().unwrap() = Some((found, found + 1));
        }
    }

    /// A stream log holds the applied mark of each entry applied, and refuses one not
    /// past its last: a second apply of an entry is an error before the check. What
    /// breaks the invariant is the mark moving between an entry's append and the check,
    /// which `apply` reaches through the transport when a membership change is applied.
    /// Orderer 1 starts alone, following a definition that names orderers 1 and 2, so it
    /// elects itself, proposes adding 2 and applies the change; the transport then marks
    /// the next entry applied, and the Raft thread stops on the broken invariant.
    #[test]
    fn an_applied_mark_moved_past_the_entry_applied_is_an_invariant_broken() {
        let ids = NetworkIdentities::generate(&["Org1"], time::Duration::days(1)).unwrap();
        let mut genesis = NetworkDefinition::of(&ids, "main");
        genesis.orderers = [1, 2]
            .into_iter()
            .map(|id| OrdererNode {
                name: format!("orderer{id}.Org1"),
                org: "Org1".into(),
                endpoint: format!("https://127.0.0.1:{}", 7050 + id),
                raft_id: id,
                key: String::new(),
            })
            .collect();
        let config = OrdererConfig {
            follow_config: Some(genesis),
            ..OrdererConfig::default()
        };
        let mut settings = RaftSettings::new(1, vec![1]);
        // A quick clock: an election in 0.1-0.2 s.
        settings.tick = Duration::from_millis(10);
        let (hand_over, stream) = crossbeam_channel::bounded(1);
        let transport = Arc::new(MarkingTransport {
            stream,
            moved: Mutex::new(None),
        });
        let dir = tempfile::tempdir().unwrap();
        let orderer = RaftOrderer::open(
            dir.path(),
            config,
            Arc::new(ids.msp().unwrap()),
            ids.org("Org1").unwrap().signer(Role::Orderer).unwrap(),
            settings,
            transport.clone(),
        )
        .unwrap();
        hand_over.send(orderer.stream.clone()).unwrap();

        let deadline = Instant::now() + PATIENCE;
        while orderer.failure().is_none() {
            assert!(
                Instant::now() < deadline,
                "the orderer goes on; voters {:?}",
                orderer.voters()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // The Raft thread caught the assertion's panic and stopped the orderer on it: its
        // failure names the mark moved to and the entry applied.
        let failure = orderer.failure().unwrap();
        let (entry, moved) = transport.moved.lock().unwrap().expect("the mark was moved");
        assert!(
            failure.contains(
                "invariant broken: each Raft entry applied leaves its index as the log's \
                 applied mark"
            ),
            "{failure}"
        );
        assert!(
            failure.contains(&format!("left: {moved}\n right: {entry}")),
            "{failure}"
        );
        assert_eq!(orderer.stream.applied_index(), moved);
    }
}
