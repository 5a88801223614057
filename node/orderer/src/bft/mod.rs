//! Byzantine-fault-tolerant ordering: `n = 3f + 1` orderers of organisations that do not
//! trust each other agree on each batch of transactions, and `n - f` of them sign every
//! seal, so that no `f` of them can censor, reorder, fork or forge the stream.
//!
//! # Why this library
//!
//! Consensus is commonware's Simplex (`commonware-consensus`, pinned exactly): ed25519
//! votes, a view every two network hops and finality in three, pipelined; the network is
//! the application's, so its messages travel over Runnel's mutual-TLS gRPC ([`net`]).
//! Chosen by a spike on this machine (4 replicas in one process, 1 KB transactions, real
//! `fdatasync`, release builds): Simplex finalized 1 client's transactions at a p50 of
//! 5.5 ms and 32 clients' at 9.8 ms (3,142 tx/s), and over 100,000 1 KB tx/s in 4 MB
//! batches; `hotstuff_rs` 0.4 reached 36.6 ms and 624 tx/s, spun its threads when idle,
//! stalled for seconds under 4 KB load, and keeps its certificate check crate-private.
//! Its costs, accepted: a heavy dependency tree (aws-lc, blst, an OpenTelemetry stack),
//! a runtime of its own (one thread of its own per orderer process here), beta APIs.
//! Its risks, contained: its messages are bounded by the transport before it decodes
//! them, each orderer can speak only for itself, and it never touches the stream log.
//!
//! # How a transaction is ordered
//!
//! A peer submits to an orderer, which admits it as the solo and Raft orderers do and
//! puts it in its mempool and the others' ([`app`]). Each view's leader (they take turns)
//! proposes every waiting transaction as one batch, named by its digest; the others vote
//! once they hold its bytes on disk. When a batch is finalized (a certificate of `n - f`
//! finalize votes), every orderer appends its transactions (each once) to its stream log,
//! as one block; each signs that block's seal and sends its signature to the others; the
//! seal goes to the log with `n - f` signatures of distinct members. The peer that asked
//! is answered with the seqs. A peer streams from any orderer and passes nothing to its
//! validator before the seal over it carries a quorum (`runnel_ledger::orderer::gate`):
//! an orderer that lies about the stream is refused and left for another.
//!
//! # Threads
//!
//! The engine and this orderer's side of it ([`app::App`]) run on commonware's tokio
//! runtime, on a thread of its own; the applier (finalized batches to the stream log,
//! seals) is a thread; the transport's streams run on the process's runtime.

pub mod app;
pub mod batch;
pub mod net;
pub mod sections;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use commonware_codec::DecodeExt as _;
use commonware_consensus::simplex::elector::RoundRobin;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::{self, Engine, Floor, ForwardPolicy, SkipBudget, SkipPolicy};
use commonware_consensus::types::{Epoch, ViewDelta};
use commonware_cryptography::{Sha256, ed25519};
use commonware_parallel::Sequential;
use commonware_runtime::buffer::paged::CacheRef;
use commonware_runtime::{Runner as _, Supervisor as _};
use commonware_utils::ordered::Set;

use runnel_ledger::identity::{Msp, Signer};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::metrics::Histogram;
use runnel_ledger::orderer::quota::Quotas;
use runnel_ledger::orderer::replay::Seen;
use runnel_ledger::orderer::stream::{StreamLog, StreamOptions};
use runnel_ledger::orderer::{
    ConsensusView, Delivery, OrderError, Ordered, Orderer, OrdererConfig, admit_batch,
};
use runnel_ledger::tx;

use self::app::{App, Core};
use self::batch::BatchLog;
use self::net::{Blocking, Member, Network};

/// The directory, in the orderer's, of its consensus journal and batch log.
pub const BFT_DIR: &str = "bft";

/// The engine's journal's partition (a directory of the orderer's [`BFT_DIR`]).
const JOURNAL_PARTITION: &str = "runnel-bft";

/// Blocking threads of the engine's runtime (file operations, batch syncs).
const BLOCKING_THREADS: usize = 8;

/// How long a leader may go without a message to any orderer before the views it leads
/// are skipped at once instead of each waiting out the leader timeout. Above the 5 s at
/// which views without progress send their votes again (the engine requires it), so a
/// live orderer never goes that long without one.
const LEADER_SILENT_SKIP: Duration = Duration::from_secs(10);

/// Domain of every consensus vote (commonware prefixes it with its length, so no vote's
/// signed bytes can be those of a Runnel message, which begin with `runnel.`).
pub const NAMESPACE: &[u8] = b"runnel.bft.v1";

/// How one orderer takes part in its BFT cluster.
#[derive(Debug, Clone)]
pub struct BftSettings {
    /// How long a view waits for its leader's proposal before the orderers skip it.
    pub leader_timeout: Duration,
    /// How long a view waits for finality after the proposal before it is skipped.
    pub certification_timeout: Duration,
    /// How long a submit waits for its transactions to be ordered.
    pub commit_timeout: Duration,
    /// The consensus engine's runtime threads.
    pub engine_threads: usize,
}

impl Default for BftSettings {
    /// A leader that proposes nothing within a second is skipped.
    fn default() -> Self {
        BftSettings {
            leader_timeout: Duration::from_secs(1),
            certification_timeout: Duration::from_secs(2),
            commit_timeout: Duration::from_secs(10),
            engine_threads: 1,
        }
    }
}

/// One orderer of a BFT cluster, behind the same [`Orderer`] trait as the others.
pub struct BftOrderer {
    core: Arc<Core>,
    config: OrdererConfig,
    msp: Arc<Msp>,
    quotas: Quotas,
    commit_timeout: Duration,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for BftOrderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BftOrderer").finish_non_exhaustive()
    }
}

impl BftOrderer {
    /// Opens the orderer in `dir` (its stream log, batch log and consensus journal) as
    /// `signer`, one of `members`, reaching the others through `network`, and starts its
    /// engine and applier.
    pub fn open(
        dir: &Path,
        config: OrdererConfig,
        msp: Arc<Msp>,
        signer: Signer,
        network: Arc<Network>,
        settings: BftSettings,
    ) -> Result<BftOrderer, OrderError> {
        let stream = Arc::new(StreamLog::open(
            dir,
            config.clone(),
            msp.clone(),
            signer.clone(),
            StreamOptions { replicated: true },
        )?);
        let bft_dir = dir.join(BFT_DIR);
        std::fs::create_dir_all(&bft_dir)
            .map_err(|e| OrderError::Log(format!("{}: {e}", bft_dir.display())))?;
        let applied_view = stream.applied_index();
        let (log, kept) = BatchLog::open(&bft_dir, applied_view).map_err(OrderError::Log)?;
        let channel = config.channel.clone();
        let genesis = batch::genesis(&channel);
        // The last applied batch's digest checks the chain's next link; after a restart
        // it is unknown, and the next finalized batch's parent is checked by its view.
        let applied = (applied_view, (applied_view == 0).then_some(genesis));
        let (finalized, to_apply) = crossbeam_channel::unbounded();
        let core = Arc::new(Core::new(
            stream,
            network.clone(),
            signer.clone(),
            msp.clone(),
            genesis,
            (log, kept),
            applied,
            finalized,
        ));
        let mut threads = Vec::new();
        {
            let core = core.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("runnel-bft-apply".into())
                    .spawn(move || core.run_applier(to_apply))
                    .map_err(|e| OrderError::Log(format!("starting the applier: {e}")))?,
            );
        }
        let private = ed25519::PrivateKey::decode(bytes::Bytes::copy_from_slice(&signer.secret()))
            .map_err(|e| OrderError::Log(format!("the orderer's key: {e}")))?;
        let engine = EngineStart {
            core: core.clone(),
            network,
            private,
            journal: bft_dir,
            settings: settings.clone(),
        };
        threads.push(
            std::thread::Builder::new()
                .name("runnel-bft-engine".into())
                .spawn(move || engine.run())
                .map_err(|e| OrderError::Log(format!("starting the consensus engine: {e}")))?,
        );
        Ok(BftOrderer {
            core,
            quotas: Quotas::new(config.submitter_bytes_per_s_max),
            config,
            msp,
            commit_timeout: settings.commit_timeout,
            threads: Mutex::new(threads),
        })
    }

    /// The stream log it appends to.
    pub fn stream(&self) -> &Arc<StreamLog> {
        &self.core.stream
    }
}

/// What the engine's thread starts with.
struct EngineStart {
    core: Arc<Core>,
    network: Arc<Network>,
    private: ed25519::PrivateKey,
    journal: PathBuf,
    settings: BftSettings,
}

impl EngineStart {
    fn run(self) {
        let config = commonware_runtime::tokio::Config::new()
            .with_worker_threads(self.settings.engine_threads.max(1))
            // Its storage runs every file operation on a blocking thread: a few are
            // enough, and an unbounded pool grew to hundreds of threads under load, their
            // creation and switching costing more than the work.
            .with_max_blocking_threads(BLOCKING_THREADS)
            .with_storage_directory(self.journal.clone());
        let core = self.core.clone();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commonware_runtime::tokio::Runner::new(config).start(|context| async move {
                let EngineStart {
                    core,
                    network,
                    private,
                    settings,
                    journal,
                } = self;
                if let Some(template) = sections::template(&context, &journal).await {
                    let (views, failed) = (core.views.clone(), core.clone());
                    let started = std::thread::Builder::new()
                        .name("runnel-bft-sections".into())
                        .spawn(move || {
                            sections::run(views, journal, JOURNAL_PARTITION, template, || {
                                failed.failure().is_some()
                            });
                        });
                    if let Err(error) = started {
                        tracing::warn!("the consensus journal's files are not made ahead: {error}");
                    }
                }
                let participants: Set<ed25519::PublicKey> = Set::from_iter_dedup(
                    network
                        .members()
                        .into_iter()
                        .map(|member: Member| member.key),
                );
                let Some(scheme) = Scheme::signer(NAMESPACE, participants, private) else {
                    core.stream
                        .fail("this orderer's key is not among the cluster's members".into());
                    return;
                };
                let (votes, certificates, resolver) = (
                    network.channel(net::VOTES),
                    network.channel(net::CERTIFICATES),
                    network.channel(net::RESOLVER),
                );
                let (_, batches) = network.channel(net::BATCHES);
                let (_, seals) = network.channel(net::SEALS);
                let (_, fetches) = network.channel(net::FETCH);
                let (_, mempool) = network.channel(net::MEMPOOL);
                tokio::spawn(core.clone().run_channels(batches, seals, fetches, mempool));
                {
                    let network = network.clone();
                    tokio::spawn(async move {
                        let mut every = tokio::time::interval(Duration::from_secs(10));
                        loop {
                            every.tick().await;
                            let count = |counters: &[std::sync::atomic::AtomicU64]| {
                                counters
                                    .iter()
                                    .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
                                    .collect::<Vec<_>>()
                            };
                            tracing::info!(
                                sent = ?count(&network.sent),
                                received = ?count(&network.received),
                                "consensus messages by channel (votes, certificates, \
                                 resolver, batches, seals, fetches, mempool)"
                            );
                        }
                    });
                }
                let app = App { core: core.clone() };
                let config = simplex::Config {
                    scheme,
                    elector: RoundRobin::<Sha256>::default(),
                    blocker: Blocking::new(network.clone()),
                    automaton: app.clone(),
                    relay: app.clone(),
                    reporter: app,
                    track_historical_votes: false,
                    strategy: Sequential,
                    partition: JOURNAL_PARTITION.into(),
                    mailbox_size: nonzero(1024),
                    epoch: Epoch::new(0),
                    floor: Floor::Genesis(batch::genesis(&core_channel(&core))),
                    replay_buffer: nonzero(1 << 20),
                    write_buffer: nonzero(1 << 20),
                    page_cache: CacheRef::new(
                        std::num::NonZeroU16::new(1024).unwrap_or(std::num::NonZeroU16::MIN),
                        nonzero(10),
                    ),
                    leader_timeout: settings.leader_timeout,
                    certification_timeout: settings.certification_timeout,
                    timeout_retry: Duration::from_secs(5),
                    // Each view is a journal file of its own; an orderer that comes back
                    // later than this jumps to the view the others finalize and fetches
                    // the batches it missed.
                    view_retention: ViewDelta::new(256),
                    // An orderer down leads every n-th view: without skips each of its
                    // views waited out the leader timeout, and four orderers with one
                    // down ordered at a quarter of their rate for as long as it stayed
                    // down (bench-wan.sh). Skips change no vote's rules, only when a
                    // view is given up.
                    skip: SkipPolicy::Enabled {
                        timeout: LEADER_SILENT_SKIP,
                        budget: SkipBudget::Participants,
                    },
                    fetch_timeout: commonware_utils::NZDuration!(Duration::from_secs(1)),
                    fetch_retry_delay: Duration::from_millis(100),
                    forward: ForwardPolicy::Disabled,
                };
                let engine = Engine::new(context.child("engine"), config);
                let handle = engine.start(votes, certificates, resolver);
                let _ = handle.await;
            });
        }));
        if let Err(panic) = outcome {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic".into());
            core.stream
                .fail(format!("the consensus engine stopped: {why}"));
        }
    }
}

fn core_channel(core: &Core) -> String {
    core.stream
        .definition_since(None)
        .map_or_else(|| "main".to_string(), |(_, definition)| definition.channel)
}

fn nonzero(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)
}

impl Orderer for BftOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        self.submit_batch(vec![signed_transaction])
            .pop()
            .unwrap_or(Err(OrderError::Closed))
    }

    /// Admits them as the other orderers do, refuses those ordered already, queues the
    /// rest for the next leader and waits (up to the commit timeout) for their seqs.
    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        if let Some(failure) = self.failure() {
            return signed_transactions
                .iter()
                .map(|_| Err(OrderError::Log(failure.clone())))
                .collect();
        }
        let received_us = tx::now_us();
        let admitted = admit_batch(&self.config, &self.msp, &self.quotas, &signed_transactions);
        let now_ms = tx::now_ms();
        let mut answers: Vec<Option<Result<Ordered, OrderError>>> = Vec::new();
        let mut queued = Vec::new();
        let mut places = Vec::new();
        for (bytes, admitted) in signed_transactions.into_iter().zip(admitted) {
            let answer = admitted.and_then(|(tx_id, proposal_ms, _)| {
                match self.core.stream.check_replay(&tx_id, proposal_ms, now_ms) {
                    Seen::New => Ok(tx_id),
                    Seen::Replay => Err(OrderError::Duplicate(tx_id)),
                    Seen::BeyondMemory { floor_ms } => Err(OrderError::BeyondReplayMemory {
                        proposal_ms,
                        floor_ms,
                    }),
                }
            });
            match answer {
                Ok(tx_id) => {
                    places.push((answers.len(), tx_id));
                    queued.push((tx_id, bytes));
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error))),
            }
        }
        let receivers = self.core.submit(queued);
        let deadline = Instant::now() + self.commit_timeout;
        for ((index, tx_id), waiter) in places.into_iter().zip(receivers) {
            let answer = waiter.and_then(|waiter| {
                let left = deadline.saturating_duration_since(Instant::now());
                match waiter.answer.recv_timeout(left) {
                    Ok(answer) => answer.map(|ordered| Ordered {
                        received_us,
                        ..ordered
                    }),
                    Err(_) => {
                        self.core.forget(&tx_id, &waiter);
                        Err(OrderError::Unavailable(format!(
                            "not ordered within {:?}: the cluster may have lost its quorum; \
                             retry",
                            self.commit_timeout
                        )))
                    }
                }
            });
            answers[index] = Some(answer);
        }
        answers
            .into_iter()
            .map(|answer| answer.unwrap_or(Err(OrderError::Closed)))
            .collect()
    }

    fn submits_in_batches(&self) -> bool {
        true
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        self.core.stream.deliver(from, next_block)
    }

    fn height(&self) -> Seq {
        self.core.stream.height()
    }

    fn durable_height(&self) -> Seq {
        self.core.stream.durable_height()
    }

    fn failure(&self) -> Option<String> {
        self.core.failure().or_else(|| self.core.stream.failure())
    }

    fn flush_seconds(&self) -> Option<Arc<Histogram>> {
        Some(self.core.stream.flush_seconds())
    }

    fn consensus(&self) -> Option<ConsensusView> {
        use std::sync::atomic::Ordering::Relaxed;
        Some(ConsensusView {
            view: self.core.views.latest(),
            applied_view: self.core.stream.applied_index(),
            batches: self.core.batches_applied.load(Relaxed),
            equivocations: self.core.equivocations.load(Relaxed),
            members: self.core.network.members().len(),
            seal_seconds: self.core.seal_seconds.clone(),
        })
    }

    fn close(&self) {
        self.core.stream.close();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        // The engine's runtime ends with the process; the applier ends with the log.
        drop(threads);
    }
}
