//! The node's Prometheus metrics, served as text at `/metrics`.
//!
//! | metric | kind | labels | what |
//! |---|---|---|---|
//! | `runnel_stage_seconds` | histogram | `stage` | time from the previous stamped stage to this one, per transaction |
//! | `runnel_commit_latency_seconds` | histogram | | first stamp (endorse start, or received by the orderer) to durable commit |
//! | `runnel_transactions_total` | counter | `code` | transactions committed, by validation code |
//! | `runnel_orderer_flush_seconds` | histogram | | each flush of the orderer's log to disk (`[store] sync`: `sync_file_range` or `fdatasync`) |
//! | `runnel_peer_flush_seconds` | histogram | | each flush of the peer's store to disk (as the orderer's) |
//! | `runnel_queue_depth` | gauge | `queue` | items waiting at a validator stage's input |
//! | `runnel_height` | gauge | `of` | last seq ordered, validated, committed; last block sealed |
//!
//! Stage and status figures come from the trace and status broadcasts ([`NodeMetrics::collect`]);
//! gauges are read when scraped ([`NodeMetrics::encode`]). A collector that falls behind
//! the broadcasts skips what it missed rather than slowing the node.

use std::sync::Arc;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;
use runnel_ledger::metrics::Histogram as LedgerHistogram;
use tokio::sync::broadcast;

use runnel_ledger::ledger::Ledger;
use runnel_ledger::orderer::Orderer;
use runnel_ledger::trace::{CompletedTrace, Stage, Trace};
use runnel_ledger::validator::{Phase, TxStatus};

/// A histogram for stage durations: 5 µs to about 10 s, doubling.
fn stage_histogram() -> Histogram {
    Histogram::new(exponential_buckets(5e-6, 2.0, 22))
}

/// One of the ledger's own histograms, exported as it stands when scraped.
#[derive(Debug)]
struct Exported(Arc<LedgerHistogram>);

impl TypedMetric for Exported {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Exported {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let figures = self.0.snapshot();
        encoder.encode_histogram::<NoLabelSet>(figures.sum, figures.count, &figures.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

const ORDERER_FLUSH_HELP: &str = "Duration of each flush of the orderer's log to disk";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabel {
    stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    queue: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HeightLabel {
    of: &'static str,
}

/// The metrics of one node (see the module doc).
pub struct NodeMetrics {
    registry: Registry,
    stages: Family<StageLabel, Histogram>,
    commit_latency: Histogram,
    transactions: Family<CodeLabel, Counter>,
    queue_depth: Family<QueueLabel, Gauge>,
    height: Family<HeightLabel, Gauge>,
}

impl std::fmt::Debug for NodeMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMetrics").finish_non_exhaustive()
    }
}

impl NodeMetrics {
    /// The metrics of `ledger`, registered; the flush histograms are the store's and the
    /// orderer's own.
    pub fn new(ledger: &Ledger) -> NodeMetrics {
        let mut registry = Registry::with_prefix("runnel");
        let stages = Family::<StageLabel, Histogram>::new_with_constructor(
            stage_histogram as fn() -> Histogram,
        );
        registry.register(
            "stage_seconds",
            "Time from the previous stamped stage to this one",
            stages.clone(),
        );
        let commit_latency = stage_histogram();
        registry.register(
            "commit_latency_seconds",
            "First stamp (endorse start, or received by the orderer) to durable commit",
            commit_latency.clone(),
        );
        let transactions = Family::<CodeLabel, Counter>::default();
        registry.register(
            "transactions",
            "Transactions committed, by validation code",
            transactions.clone(),
        );
        let flushes = ledger.reader().flush_seconds();
        if let Some(orderer) = flushes.orderer {
            registry.register(
                "orderer_flush_seconds",
                ORDERER_FLUSH_HELP,
                Exported(orderer),
            );
        }
        registry.register(
            "peer_flush_seconds",
            "Duration of each flush of the peer's store to disk",
            Exported(flushes.peer),
        );
        let queue_depth = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "queue_depth",
            "Items waiting at a validator stage's input",
            queue_depth.clone(),
        );
        let height = Family::<HeightLabel, Gauge>::default();
        registry.register(
            "height",
            "Last seq ordered, validated and committed; last block sealed",
            height.clone(),
        );
        NodeMetrics {
            registry,
            stages,
            commit_latency,
            transactions,
            queue_depth,
            height,
        }
    }

    /// Counts one completed trace.
    pub fn observe_trace(&self, trace: &Trace) {
        let mut previous: Option<u64> = None;
        for (stage, at) in trace.stages() {
            if let Some(before) = previous {
                self.stages
                    .get_or_create(&StageLabel {
                        stage: stage.as_str(),
                    })
                    .observe(at.saturating_sub(before) as f64 / 1e6);
            }
            previous = Some(at);
        }
        let first = trace.stages().first().map(|&(_, at)| at);
        if let (Some(first), Some(committed)) = (first, trace.at(Stage::Committed)) {
            self.commit_latency
                .observe(committed.saturating_sub(first) as f64 / 1e6);
        }
    }

    /// Counts one status: committed transactions by code.
    pub fn observe_status(&self, status: &TxStatus) {
        if status.phase == Phase::Committed {
            self.transactions
                .get_or_create(&CodeLabel {
                    code: status.code.as_str(),
                })
                .inc();
        }
    }

    /// Feeds the metrics from the ledger's broadcasts until both end.
    pub async fn collect(
        self: Arc<Self>,
        mut traces: broadcast::Receiver<CompletedTrace>,
        mut statuses: broadcast::Receiver<TxStatus>,
    ) {
        let (mut traces_open, mut statuses_open) = (true, true);
        while traces_open || statuses_open {
            tokio::select! {
                trace = traces.recv(), if traces_open => match trace {
                    Ok(done) => self.observe_trace(&done.trace),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => traces_open = false,
                },
                status = statuses.recv(), if statuses_open => match status {
                    Ok(status) => self.observe_status(&status),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => statuses_open = false,
                },
            }
        }
    }

    /// The Prometheus text exposition, gauges read from `ledger` now.
    pub fn encode(&self, ledger: &Ledger) -> String {
        for (queue, depth) in ledger.queue_depths() {
            self.queue_depth
                .get_or_create(&QueueLabel { queue })
                .set(depth as i64);
        }
        if let Ok(info) = ledger.info() {
            let heights = [
                ("ordered", info.ordered_height.0),
                ("validated", info.validated_height.0),
                ("committed", info.committed_height.0),
                ("block", info.last_block.map_or(0, |b| b.0)),
            ];
            for (of, value) in heights {
                self.height
                    .get_or_create(&HeightLabel { of })
                    .set(value as i64);
            }
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// The metrics of an orderer process: its log's flushes and its heights.
pub struct OrdererMetrics {
    registry: Registry,
    height: Family<HeightLabel, Gauge>,
    /// For an orderer of a Raft cluster: its id, the leader's (0: none known), its term,
    /// how many voters it counts and the entry its log was compacted to.
    raft: Option<[Gauge; 5]>,
    /// For an orderer of a BFT cluster: the view it has seen, the view of the last batch
    /// it applied, the batches it applied, the lies it detected and the members.
    bft: Option<[Gauge; 5]>,
}

impl std::fmt::Debug for OrdererMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrdererMetrics").finish_non_exhaustive()
    }
}

impl OrdererMetrics {
    /// The metrics of `orderer`, registered.
    pub fn new(orderer: &dyn Orderer) -> OrdererMetrics {
        let mut registry = Registry::with_prefix("runnel");
        if let Some(flushes) = orderer.flush_seconds() {
            registry.register(
                "orderer_flush_seconds",
                ORDERER_FLUSH_HELP,
                Exported(flushes),
            );
        }
        let height = Family::<HeightLabel, Gauge>::default();
        registry.register(
            "height",
            "Last seq ordered, and durable in the orderer's log",
            height.clone(),
        );
        let raft = orderer.cluster().map(|_| {
            let gauges: [Gauge; 5] = Default::default();
            let [id, leader, term, voters, compacted] = &gauges;
            registry.register(
                "raft_id",
                "This orderer's id in its Raft cluster",
                id.clone(),
            );
            registry.register(
                "raft_leader",
                "The Raft id of the cluster's leader as this orderer knows it (0: none)",
                leader.clone(),
            );
            registry.register("raft_term", "This orderer's Raft term", term.clone());
            registry.register(
                "raft_voters",
                "Orderers the cluster's membership counts, as this orderer applied it",
                voters.clone(),
            );
            registry.register(
                "raft_compacted",
                "The Raft entry this orderer's log was last compacted to (0: never)",
                compacted.clone(),
            );
            gauges
        });
        let bft = orderer.consensus().map(|view| {
            registry.register(
                "bft_seal_seconds",
                "How long each block's seal took to gather the signatures of a quorum of \
                 the cluster's orderers",
                Exported(view.seal_seconds),
            );
            let gauges: [Gauge; 5] = Default::default();
            let [seen, applied, batches, lies, members] = &gauges;
            registry.register(
                "bft_view",
                "The highest consensus view this orderer has seen its cluster at",
                seen.clone(),
            );
            registry.register(
                "bft_applied_view",
                "The view of the last batch this orderer applied to its stream",
                applied.clone(),
            );
            registry.register(
                "bft_batches",
                "Batches (one block each) this orderer applied since it started",
                batches.clone(),
            );
            registry.register(
                "bft_equivocations",
                "Lies this orderer detected since it started: a member's conflicting \
                 consensus votes, or its signature over another seal than the stream gives",
                lies.clone(),
            );
            registry.register(
                "bft_members",
                "The orderers of the BFT cluster",
                members.clone(),
            );
            gauges
        });
        OrdererMetrics {
            registry,
            height,
            raft,
            bft,
        }
    }

    /// The Prometheus text exposition, heights read from `orderer` now.
    pub fn encode(&self, orderer: &dyn Orderer) -> String {
        let heights = [
            ("ordered", orderer.height().0),
            ("durable", orderer.durable_height().0),
        ];
        for (of, value) in heights {
            self.height
                .get_or_create(&HeightLabel { of })
                .set(value as i64);
        }
        if let (Some([id, leader, term, voters, compacted]), Some(view)) =
            (&self.raft, orderer.cluster())
        {
            id.set(view.id as i64);
            leader.set(view.leader.unwrap_or(0) as i64);
            term.set(view.term as i64);
            voters.set(view.voters.len() as i64);
            compacted.set(view.compacted as i64);
        }
        if let (Some([seen, applied, batches, lies, members]), Some(view)) =
            (&self.bft, orderer.consensus())
        {
            seen.set(view.view as i64);
            applied.set(view.applied_view as i64);
            batches.set(view.batches as i64);
            lies.set(view.equivocations as i64);
            members.set(view.members as i64);
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
