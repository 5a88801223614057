//! `runnel bench`: a load generator that talks to a node over gRPC like any application
//! (it signs its own proposals and transactions), and reports what each transaction went
//! through. Per transaction it keeps the client's own clock (sent, endorsed, submitted,
//! committed) and the node's stage stamps, read from the node's live trace stream.
//!
//! Workloads (each names its contract; values of `--value-bytes`):
//! - `kv-insert` (kv): inserts of new keys; `--read-share` of the operations (default
//!   10%) read one of `--keys` preloaded keys instead;
//! - `kv-rmw` (kv): read-modify-writes (`kv.update`) of keys drawn from `--keys`
//!   (default 50% plain reads): a small key space makes MVCC conflicts, and the
//!   summary's valid rate is the goodput;
//! - `token-transfer` (token): transfers of 1 from the bench identity's account, minted
//!   once by the organisation's admin, to one of `--keys` accounts (default 10% balance
//!   reads). Every transfer debits the same account, the hot spot of an account-based
//!   token: concurrent clients conflict, and the valid rate shows what streaming
//!   validation keeps of it;
//! - `asset-transfer` (basic, Fabric's asset-transfer-basic): `TransferAsset` of one of
//!   `--keys` preloaded assets to a new owner (default 20% `ReadAsset`).
//!
//! Closed loop (`--clients` each waiting for its last transaction) or open loop
//! (`--rate` transactions a second, whatever the answers). Transactions sent during the
//! `--warmup` are kept in the CSV but not in the summary.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use prost::Message;
use runnel_api::identity::{Role, Signer};
use runnel_api::proto::trace_client::TraceClient;
use runnel_api::proto::{
    CommitStatusRequest, EndorseRequest, EvaluateRequest, Stage, SubmitRequest, TraceStreamRequest,
    TxPhase, ValidationCode,
};
use runnel_api::tx;
use serde_json::{Value, json};

use crate::record::{NODE_STAGES, Sample, TRANSACTIONS_CSV, percentiles, write_csv};

use super::unary::{Dialer, Gateway};
use crate::floor::CryptoFloor;
use runnel_client::{Connection, ReadGrants, channel_name, connect, signer, status};

/// Closed-loop clients that share a connection unless --connections says otherwise.
const CLIENTS_PER_CONNECTION: usize = 16;

/// What `runnel bench` runs.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// Other bench commands; without one, `runnel bench` loads a node.
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    connection: Connection,
    /// The workload.
    #[arg(long, value_enum, default_value = "kv-insert")]
    workload: Workload,
    /// Closed-loop clients (with --rate: the identities the open-loop load is spread
    /// over, with their connections).
    #[arg(long, default_value_t = 1)]
    clients: usize,
    /// HTTP/2 connections the clients share, each client keeping to one, as the threads
    /// of an application share its gRPC channel; default: one per 16 clients. Set it to
    /// --clients for a connection each, as separate applications would have.
    #[arg(long)]
    connections: Option<usize>,
    /// Seconds to run, warm-up included.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Stop after this many operations instead (or at --duration, whichever is first).
    #[arg(long)]
    count: Option<u64>,
    /// Open loop: start this many operations a second, whatever the answers.
    #[arg(long)]
    rate: Option<f64>,
    /// Seconds at the start left out of the summary.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// The key space: preloaded for kv-insert's reads, updated by kv-rmw.
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Share of operations that are reads (evaluate, no transaction); default 0.1 for
    /// kv-insert, 0.5 for kv-rmw.
    #[arg(long)]
    read_share: Option<f64>,
    /// Bytes of each value written.
    #[arg(long, default_value_t = 1024)]
    value_bytes: usize,
    /// The contract's name; default: the workload's (kv, token or basic).
    #[arg(long)]
    contract: Option<String>,
    /// Where to write transactions.csv, summary.json, summary.txt and the plots.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Submit, then wait with a CommitStatus call, as Fabric Gateway clients do (two round
    /// trips); by default Submit waits for the status itself.
    #[arg(long)]
    separate_status: bool,
    /// The node's process id, to report its CPU time and memory (same machine only).
    #[arg(long)]
    node_pid: Option<u32>,
    /// Pressure beside the load: this many callers asking for the state digest
    /// (`GetStateHash`) in a loop, from the start to the end of the run.
    #[arg(long, default_value_t = 0)]
    hammer_state_hash: usize,
    /// Pressure beside the load: this many live streams held open and idle (deliveries
    /// from a seq far ahead) for the whole run.
    #[arg(long, default_value_t = 0)]
    hammer_idle_streams: usize,
}

impl BenchArgs {
    /// The connections the clients share.
    fn connections(&self) -> usize {
        self.connections
            .unwrap_or(self.clients.div_ceil(CLIENTS_PER_CONNECTION))
            .clamp(1, self.clients.max(1))
    }
}

/// A workload.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    /// Inserts of new keys, with a share of reads of preloaded keys.
    KvInsert,
    /// Read-modify-writes of keys in a key space, with a share of reads.
    KvRmw,
    /// Token transfers from one account to many, with a share of balance reads.
    TokenTransfer,
    /// Asset transfers (Fabric's asset-transfer-basic) of preloaded assets, with a share
    /// of reads.
    AssetTransfer,
}

/// A contract call: the function and its arguments.
struct Call {
    function: &'static str,
    args: Vec<Vec<u8>>,
}

impl Call {
    fn new(function: &'static str, args: &[&str]) -> Call {
        Call {
            function,
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
        }
    }
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::KvInsert => "kv-insert",
            Workload::KvRmw => "kv-rmw",
            Workload::TokenTransfer => "token-transfer",
            Workload::AssetTransfer => "asset-transfer",
        }
    }

    /// The example contract the workload calls, as `runnel dev` deploys it.
    fn contract(self) -> &'static str {
        match self {
            Workload::KvInsert | Workload::KvRmw => "kv",
            Workload::TokenTransfer => "token",
            Workload::AssetTransfer => "basic",
        }
    }

    fn default_read_share(self) -> f64 {
        match self {
            Workload::KvInsert | Workload::TokenTransfer => 0.1,
            Workload::KvRmw => 0.5,
            Workload::AssetTransfer => 0.2,
        }
    }

    /// A read of key `key` of the key space.
    fn read(self, key: u64) -> Call {
        match self {
            Workload::KvInsert | Workload::KvRmw => Call::new("get", &[&key_name(key)]),
            Workload::TokenTransfer => Call::new("balance", &[&account_name(key)]),
            Workload::AssetTransfer => Call::new("ReadAsset", &[&asset_name(key)]),
        }
    }

    /// Operation `op` of client `client`, a transaction on key `key` of the key space.
    fn write(self, plan: &Plan, client: usize, op: u64, key: u64) -> Call {
        match self {
            Workload::KvInsert => Call::new(
                "put",
                &[&format!("new-{}-{client}-{op}", plan.run_id), &plan.value],
            ),
            Workload::KvRmw => Call::new("update", &[&key_name(key), &plan.value]),
            Workload::TokenTransfer => Call::new("transfer", &[&account_name(key), "1"]),
            Workload::AssetTransfer => Call::new(
                "TransferAsset",
                &[&asset_name(key), &format!("Org1/owner-{client}-{op}")],
            ),
        }
    }

    /// What key `key` holds before the run; `None` when the key space needs no
    /// preloading (token accounts start at 0).
    fn preload(self, plan: &Plan, key: u64) -> Option<Call> {
        match self {
            Workload::KvInsert | Workload::KvRmw => {
                Some(Call::new("put", &[&key_name(key), &plan.value]))
            }
            Workload::TokenTransfer => None,
            Workload::AssetTransfer => Some(Call::new(
                "CreateAsset",
                &[&asset_name(key), "blue", "5", "Org1/owner", "100"],
            )),
        }
    }
}

/// A read (evaluate): when it was sent and how long it took.
#[derive(Debug, Clone, Copy)]
struct Read {
    sent_us: u64,
    micros: u64,
}

/// Everything the clients measured.
#[derive(Default)]
struct Results {
    samples: Vec<Sample>,
    reads: Vec<Read>,
}

/// Preload writes in flight at once: a multiple of Fabric's default block size (10), so
/// that a node cutting blocks seals each batch at once instead of after its timeout.
const PRELOAD_BATCH: u64 = 200;

/// The node's stage stamps by transaction id, from its trace stream.
type Stamps = Arc<Mutex<HashMap<String, BTreeMap<i32, u64>>>>;

/// What each client needs.
struct Plan {
    workload: Workload,
    contract: String,
    channel: String,
    keys: u64,
    read_share: f64,
    value: String,
    signer: Signer,
    /// The organisation's admin: token-transfer's minter.
    admin: Signer,
    run_id: String,
    separate_status: bool,
}

/// `runnel bench`'s other commands.
#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Draw latency against throughput from a scripts/bench-sweep.sh output directory.
    PlotSweep {
        /// The sweep's output directory.
        dir: PathBuf,
        /// The SVG to write.
        out: PathBuf,
    },
    /// Measure the stall clients saw when something happened during a run (an orderer
    /// killed): the baseline, the time to recover, the transactions caught in it. Reads
    /// DIR/transactions.csv; writes DIR/stall.json, DIR/stall.txt and DIR/timeline.svg.
    Stall {
        /// The run's output directory (its --out).
        dir: PathBuf,
        /// When it happened, Unix µs (the clock of the machine that ran `runnel bench`).
        #[arg(long, value_name = "UNIX_US")]
        at: u64,
        /// What happened, for the report and the timeline's marker.
        #[arg(long, default_value = "event")]
        label: String,
    },
    /// Load the ordering service alone, as its peers load and read it: signed
    /// transactions submitted in batches, streams read and every seal checked as a peer
    /// does; sealed tx/s at the slowest stream, submit -> sealed latency, CPU per
    /// transaction of each orderer (src/order.rs).
    Order(crate::order::OrderArgs),
}

/// Runs `runnel bench`; `seals` checks the seals `runnel bench order` streams.
pub fn bench(args: &BenchArgs, seals: &dyn crate::order::SealChecks) -> Result<()> {
    match &args.command {
        Some(BenchCommand::Order(order)) => return crate::order::order(order, seals),
        Some(BenchCommand::PlotSweep { dir, out }) => {
            crate::plots::plot_sweep(dir, out)?;
            eprintln!("wrote {}", out.display());
            return Ok(());
        }
        Some(BenchCommand::Stall { dir, at, label }) => {
            print!("{}", crate::stall::stall(dir, *at, label)?);
            eprintln!(
                "wrote {}, {} and {}",
                dir.join(crate::stall::STALL_JSON).display(),
                dir.join(crate::stall::STALL_TXT).display(),
                dir.join(crate::stall::TIMELINE_SVG).display()
            );
            return Ok(());
        }
        None => {}
    }
    if args.clients == 0 {
        bail!("--clients must be at least 1");
    }
    if !(0.0..=1.0).contains(&args.read_share.unwrap_or(0.0)) {
        bail!("--read-share is a share, from 0 to 1");
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(args))
}

async fn run(args: &BenchArgs) -> Result<()> {
    let first = connect(&args.connection).await?;
    let plan = Arc::new(Plan {
        workload: args.workload,
        contract: args
            .contract
            .clone()
            .unwrap_or_else(|| args.workload.contract().to_string()),
        channel: channel_name(&first).await?,
        keys: args.keys.max(1),
        read_share: args
            .read_share
            .unwrap_or(args.workload.default_read_share()),
        value: "v".repeat(args.value_bytes),
        signer: signer(&args.connection, Role::Client)?,
        admin: signer(&args.connection, Role::Admin)?,
        run_id: format!("{:x}", tx::now_us()),
        separate_status: args.separate_status,
    });
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;

    // A node whose reads are for members wants a grant with each CommitStatus.
    let grants = ReadGrants::new(plan.signer.clone(), plan.channel.clone());
    let dialer = Dialer::new(&args.connection, grants)?;
    let stamps: Stamps = Arc::default();
    let traces = tokio::spawn(follow_traces(first.clone(), stamps.clone()));
    if args.keys > 0 {
        preload(&Gateway(dialer.connect().await?), &plan).await?;
    }

    // Measured while the node is idle, before the load starts.
    let floor = CryptoFloor::measure(&plan.signer);
    let hammer = if args.hammer_state_hash > 0 || args.hammer_idle_streams > 0 {
        Some(
            super::hammer::Hammer::start(
                &args.connection,
                args.hammer_state_hash,
                args.hammer_idle_streams,
            )
            .await?,
        )
    } else {
        None
    };
    let cpu_before = args.node_pid.map(node_cpu_seconds).transpose()?;
    let start_us = tx::now_us();
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(args.duration);
    let results = Arc::new(Mutex::new(Results::default()));
    let budget = Arc::new(std::sync::atomic::AtomicU64::new(
        args.count.unwrap_or(u64::MAX),
    ));
    let connections = args.connections();
    eprintln!(
        "running {} for {} s with {} ...",
        plan.workload.name(),
        args.duration,
        match args.rate {
            Some(rate) => format!(
                "an open loop at {rate} op/s from {} clients over {connections} connections",
                args.clients
            ),
            None => format!(
                "{} closed-loop clients over {connections} connections",
                args.clients
            ),
        }
    );
    match args.rate {
        None => {
            let (dialer, clients) = (dialer.clone(), args.clients);
            let (plan, results, budget) = (plan.clone(), results.clone(), budget.clone());
            tokio::task::spawn_blocking(move || {
                closed_loop(
                    &dialer,
                    clients,
                    connections,
                    &plan,
                    &results,
                    &budget,
                    deadline,
                )
            })
            .await??;
        }
        Some(rate) => {
            if rate <= 0.0 {
                bail!("--rate must be above 0");
            }
            let mut shared = Vec::with_capacity(connections);
            for _ in 0..connections {
                shared.push(Gateway(dialer.connect().await?));
            }
            let channels: Vec<Gateway> = (0..args.clients)
                .map(|client| shared[client % connections].clone())
                .collect();
            let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut tasks = tokio::task::JoinSet::new();
            let mut op = 0u64;
            while tokio::time::Instant::now() < deadline && take(&budget) {
                ticks.tick().await;
                let client = (op % channels.len() as u64) as usize;
                let gateway = channels[client].clone();
                let (plan, results) = (plan.clone(), results.clone());
                tasks.spawn(async move { one(&gateway, &plan, client, op, &results).await });
                op += 1;
            }
            while tasks.join_next().await.is_some() {}
        }
    }
    let end_us = tx::now_us();
    let cpu = match (args.node_pid, cpu_before) {
        (Some(pid), Some(before)) => Some(node_cpu_seconds(pid)? - before),
        _ => None,
    };
    let rss = args.node_pid.map(node_rss_bytes).transpose()?;
    let pressure = hammer.map(|hammer| {
        let summary = hammer.summary();
        hammer.stop();
        summary
    });
    // The traces of the last transactions follow their statuses by a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    traces.abort();

    let results = std::mem::take(&mut *results.lock().unwrap_or_else(PoisonError::into_inner));
    let stamps = std::mem::take(&mut *stamps.lock().unwrap_or_else(PoisonError::into_inner));
    let measured_from = start_us + (args.warmup * 1e6) as u64;
    write_csv(
        &args.out.join(TRANSACTIONS_CSV),
        &results.samples,
        &stamps,
        measured_from,
    )?;
    let summary = summarise(
        args,
        &plan,
        &results,
        &stamps,
        Window {
            from_us: measured_from,
            to_us: end_us,
        },
        &NodeFigures {
            cpu_seconds: cpu,
            rss_bytes: rss,
            floor,
        },
    );
    let mut summary = summary;
    if let Some(pressure) = pressure {
        summary["pressure"] = pressure;
    }
    let text = summary_text(&summary);
    std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    std::fs::write(args.out.join("summary.txt"), &text)?;
    super::plots::latency_cdf(
        &args.out.join("latency-cdf.svg"),
        &results.samples,
        measured_from,
    )?;
    super::plots::throughput(
        &args.out.join("throughput.svg"),
        &results.samples,
        start_us,
        end_us,
    )?;
    print!("{text}");
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// Runs `clients` closed-loop clients over `connections` connections until `deadline`
/// or the budget is spent. Each core gets a single-threaded runtime of its own with its
/// share of the connections and of the clients on them: a client's calls, signatures and
/// its connection's HTTP/2 task then run on one thread, so a request's frames leave in
/// one write instead of racing another worker, and no wake-up crosses threads.
fn closed_loop(
    dialer: &Dialer,
    clients: usize,
    connections: usize,
    plan: &Arc<Plan>,
    results: &Arc<Mutex<Results>>,
    budget: &Arc<std::sync::atomic::AtomicU64>,
    deadline: tokio::time::Instant,
) -> Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(connections);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                scope.spawn(move || -> Result<()> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("starting a load thread's runtime")?;
                    runtime.block_on(async {
                        // This thread's connections: those numbered thread, thread +
                        // threads, ...; a client keeps to connection client % connections.
                        let mut mine = std::collections::HashMap::new();
                        for number in (thread..connections).step_by(threads) {
                            mine.insert(number, Gateway(dialer.connect().await?));
                        }
                        let mut tasks = Vec::new();
                        for client in (0..clients).filter(|c| mine.contains_key(&(c % connections)))
                        {
                            let gateway = mine[&(client % connections)].clone();
                            let (plan, results, budget) =
                                (plan.clone(), results.clone(), budget.clone());
                            tasks.push(tokio::spawn(async move {
                                let mut op = 0u64;
                                while tokio::time::Instant::now() < deadline && take(&budget) {
                                    one(&gateway, &plan, client, op, &results).await;
                                    op += 1;
                                }
                            }));
                        }
                        for task in tasks {
                            task.await?;
                        }
                        Ok(())
                    })
                })
            })
            .collect();
        workers.into_iter().try_for_each(|worker| {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a load thread panicked"))?
        })
    })
}

/// Takes one operation from the budget; false once it is spent.
fn take(budget: &std::sync::atomic::AtomicU64) -> bool {
    use std::sync::atomic::Ordering;
    budget
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(1)
        })
        .is_ok()
}

/// Writes every key of the key space once, [`PRELOAD_BATCH`] at a time, unless its last
/// key is there already (an earlier run preloaded them). For token-transfer, mints the
/// bench identity's account its funds instead, once.
async fn preload(gateway: &Gateway, plan: &Plan) -> Result<()> {
    let evaluate = |call: Call| async move {
        gateway
            .evaluate(EvaluateRequest {
                proposal: Some(proposal(plan, &plan.signer, &call)),
            })
            .await
            .map_err(status)
            .map(|answer| answer.result)
    };
    if plan.workload == Workload::TokenTransfer {
        let payer = String::from_utf8_lossy(&evaluate(Call::new("whoami", &[])).await?)
            .trim_matches('"')
            .to_string();
        let funds = evaluate(Call::new("balance", &[&payer])).await?;
        if funds.as_slice() == b"0" {
            eprintln!("minting {TOKEN_FUNDS} to {payer} ...");
            let mint = Call::new("mint", &[&payer, &TOKEN_FUNDS.to_string()]);
            let signed = proposal(plan, &plan.admin, &mint);
            let (_, outcome) = transact(gateway, &plan.admin, signed, false).await?;
            if outcome != "VALID" {
                bail!("minting the bench account's funds: {outcome}");
            }
        }
        return Ok(());
    }
    let exists = evaluate(plan.workload.read(plan.keys - 1)).await;
    if exists.is_ok_and(|value| value != b"null") {
        return Ok(());
    }
    eprintln!("preloading {} keys ...", plan.keys);
    let mut next = 0u64;
    while next < plan.keys {
        let mut batch = tokio::task::JoinSet::new();
        for key in next..(next + PRELOAD_BATCH).min(plan.keys) {
            let Some(call) = plan.workload.preload(plan, key) else {
                continue;
            };
            let gateway = gateway.clone();
            let proposal = proposal(plan, &plan.signer, &call);
            let signer = plan.signer.clone();
            batch.spawn(async move { transact(&gateway, &signer, proposal, false).await });
        }
        while let Some(done) = batch.join_next().await {
            let (_, outcome) = done??;
            if outcome != "VALID" {
                bail!("preloading: a write was {outcome}");
            }
        }
        next = (next + PRELOAD_BATCH).min(plan.keys);
    }
    Ok(())
}

/// What token-transfer's bench account is minted: enough for every transfer of any run.
const TOKEN_FUNDS: u64 = 1 << 50;

fn key_name(key: u64) -> String {
    format!("bench-{key}")
}

fn account_name(key: u64) -> String {
    format!("Org1/bench-{key}")
}

fn asset_name(key: u64) -> String {
    format!("bench-asset-{key}")
}

/// `call` of the plan's contract, signed by `signer`.
fn proposal(plan: &Plan, signer: &Signer, call: &Call) -> runnel_api::proto::SignedProposal {
    let proposal = tx::new_proposal(
        &plan.channel,
        &plan.contract,
        call.function,
        call.args.clone(),
        signer,
    );
    tx::sign_proposal(signer, &proposal)
}

/// One operation of client `client`: a read or a transaction, recorded in `results`.
async fn one(gateway: &Gateway, plan: &Plan, client: usize, op: u64, results: &Mutex<Results>) {
    let draw = mix(client as u64, op);
    let read = (draw % 10_000) as f64 / 10_000.0 < plan.read_share;
    let key = (draw >> 20) % plan.keys;
    let sent_us = tx::now_us();
    if read {
        let request = EvaluateRequest {
            proposal: Some(proposal(plan, &plan.signer, &plan.workload.read(key))),
        };
        if gateway.evaluate(request).await.is_ok() {
            let micros = tx::now_us().saturating_sub(sent_us);
            lock(results).reads.push(Read { sent_us, micros });
        }
        return;
    }
    let call = plan.workload.write(plan, client, op, key);
    let signed = proposal(plan, &plan.signer, &call);
    let sample = match transact(gateway, &plan.signer, signed, plan.separate_status).await {
        Ok((mut sample, outcome)) => {
            sample.outcome = outcome;
            sample
        }
        Err(error) => Sample {
            outcome: error.to_string(),
            committed_us: 0,
            ..Sample::default()
        },
    };
    // A call that ended without a validation code failed now.
    let failed_us = if sample.committed_us == 0 {
        tx::now_us()
    } else {
        0
    };
    lock(results).samples.push(Sample {
        client,
        sent_us,
        failed_us,
        ..sample
    });
}

fn lock(results: &Mutex<Results>) -> std::sync::MutexGuard<'_, Results> {
    results.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Endorse, sign, submit, wait until durable: the sample (without client and sent) and
/// the validation code's name, or the error's name for a failed call. Submit waits for
/// the status itself, unless `separate_status` asks for a CommitStatus call after it
/// (as Fabric Gateway clients do; only then is "submitted" known).
async fn transact(
    gateway: &Gateway,
    signer: &Signer,
    signed: runnel_api::proto::SignedProposal,
    separate_status: bool,
) -> Result<(Sample, String)> {
    let endorsed = match gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(signed),
        })
        .await
    {
        Ok(endorsed) => endorsed,
        Err(error) => return Ok((Sample::default(), failure("ENDORSE", &error))),
    };
    let endorsed_us = tx::now_us();
    let transaction = tx::sign_transaction_bytes(signer, endorsed.transaction).encode_to_vec();
    let (reached, submitted_us) = if separate_status {
        let submitted = gateway
            .submit(SubmitRequest {
                transaction,
                wait_for: TxPhase::Unspecified as i32,
            })
            .await
            .map_err(status)?;
        let submitted_us = tx::now_us();
        let reached = gateway
            .commit_status(CommitStatusRequest {
                tx_id: submitted.tx_id,
                wait_for: TxPhase::Committed as i32,
            })
            .await
            .map_err(status)?;
        (reached, submitted_us)
    } else {
        let reached = gateway
            .submit(SubmitRequest {
                transaction,
                wait_for: TxPhase::Committed as i32,
            })
            .await
            .map_err(status)?
            .status
            .context("the node answered Submit without the status asked for")?;
        (reached, 0)
    };
    let sample = Sample {
        tx_id: reached.tx_id.clone(),
        endorsed_us,
        submitted_us,
        committed_us: tx::now_us(),
        ..Sample::default()
    };
    let code = ValidationCode::try_from(reached.code).map_or_else(
        |_| format!("CODE_{}", reached.code),
        |c| c.as_str_name().to_string(),
    );
    Ok((
        sample,
        code.trim_start_matches("VALIDATION_CODE_").to_string(),
    ))
}

/// The error's name (the node's messages start with it, docs/api.md), after `what`.
fn failure(what: &str, error: &tonic::Status) -> String {
    let name = error
        .message()
        .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
        .next()
        .filter(|name| !name.is_empty())
        .unwrap_or("FAILED");
    format!("{what}_{name}")
}

/// A well-mixed 64-bit number from a client and its operation (splitmix64).
fn mix(client: u64, op: u64) -> u64 {
    let mut z = client
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(op)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Follows the node's trace stream, keeping each completed trace's stamps.
async fn follow_traces(channel: runnel_client::NodeChannel, stamps: Stamps) {
    let Ok(response) = TraceClient::new(channel)
        .trace_stream(TraceStreamRequest {})
        .await
    else {
        return;
    };
    let mut stream = response.into_inner();
    while let Ok(Some(item)) = stream.message().await {
        let Some(trace) = item.trace else { continue };
        let stages = trace.stages.iter().map(|s| (s.stage, s.at_us)).collect();
        stamps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(trace.tx_id, stages);
    }
}

/// Where the summary's node steps start in [`NODE_STAGES`]: the orderer's receipt (the
/// client's endorse step covers the endorsement stages).
const SUMMARY_FROM: usize = 2;

/// The measured window (after the warm-up), Unix µs.
#[derive(Clone, Copy)]
struct Window {
    from_us: u64,
    to_us: u64,
}

/// What the run measured of the node and the machine.
struct NodeFigures {
    /// The node's CPU time during the measured window.
    cpu_seconds: Option<f64>,
    /// The node's resident memory at the end.
    rss_bytes: Option<u64>,
    /// The machine's crypto floor.
    floor: CryptoFloor,
}

fn summarise(
    args: &BenchArgs,
    plan: &Plan,
    results: &Results,
    stamps: &HashMap<String, BTreeMap<i32, u64>>,
    window: Window,
    node: &NodeFigures,
) -> Value {
    let NodeFigures {
        cpu_seconds,
        rss_bytes,
        floor,
    } = node;
    let seconds = (window.to_us.saturating_sub(window.from_us)) as f64 / 1e6;
    // The node's CPU is read from before the warm-up to the end, so it is divided by
    // the transactions committed over that same time, warm-up included.
    let committed_count = results
        .samples
        .iter()
        .filter(|s| s.committed_us > 0)
        .count();
    let cpu_per_tx = cpu_seconds
        .filter(|_| committed_count > 0)
        .map(|c| c * 1e6 / committed_count as f64);
    let measured: Vec<&Sample> = results
        .samples
        .iter()
        .filter(|s| s.sent_us >= window.from_us)
        .collect();
    let committed: Vec<&&Sample> = measured.iter().filter(|s| s.committed_us > 0).collect();
    let valid = committed.iter().filter(|s| s.outcome == "VALID").count();
    let mut outcomes: BTreeMap<&str, u64> = BTreeMap::new();
    for s in &measured {
        *outcomes.entry(s.outcome.as_str()).or_default() += 1;
    }
    let e2e: Vec<u64> = committed
        .iter()
        .map(|s| s.committed_us - s.sent_us)
        .collect();
    // Each step in flow order: the client's two, then the node's (from its traces).
    let mut stages = Vec::new();
    let endorse = committed
        .iter()
        .map(|s| s.endorsed_us.saturating_sub(s.sent_us));
    stages.push(step_json("endorse", endorse.collect()));
    // Signing and submitting, up to the orderer's receipt (the node's clock, as for
    // `notified_to_client`): the client alone knows no end to it when Submit also waits.
    let submit = committed.iter().filter_map(|s| {
        let received = stamps.get(&s.tx_id)?.get(&(Stage::Received as i32))?;
        Some(received.saturating_sub(s.endorsed_us))
    });
    stages.push(step_json("endorsed_to_received", submit.collect()));
    for pair in NODE_STAGES[SUMMARY_FROM..].windows(2) {
        let ((before, from), (after, to)) = (pair[0], pair[1]);
        let durations = committed.iter().filter_map(|s| {
            let node = stamps.get(&s.tx_id)?;
            Some(
                node.get(&(after as i32))?
                    .saturating_sub(*node.get(&(before as i32))?),
            )
        });
        stages.push(step_json(&format!("{from}_to_{to}"), durations.collect()));
    }
    let told = committed.iter().filter_map(|s| {
        let notified = stamps.get(&s.tx_id)?.get(&(Stage::Notified as i32))?;
        Some(s.committed_us.saturating_sub(*notified))
    });
    stages.push(step_json("notified_to_client", told.collect()));
    let reads: Vec<u64> = results
        .reads
        .iter()
        .filter(|r| r.sent_us >= window.from_us)
        .map(|r| r.micros)
        .collect();
    json!({
        "workload": plan.workload.name(),
        "clients": args.clients,
        "connections": args.connections(),
        "open_loop_rate": args.rate,
        "keys": plan.keys,
        "read_share": plan.read_share,
        "value_bytes": args.value_bytes,
        "measured_seconds": seconds,
        "transactions": {
            "offered_per_second": measured.len() as f64 / seconds,
            "committed_per_second": committed.len() as f64 / seconds,
            "valid_per_second": valid as f64 / seconds,
            "sent": measured.len(),
            "committed": committed.len(),
            "valid": valid,
            "outcomes": outcomes,
        },
        "latency_us": {
            "submit_to_durable": percentiles(e2e),
            "stages": stages,
        },
        "reads": {
            "per_second": reads.len() as f64 / seconds,
            "latency_us": percentiles(reads),
        },
        "node": {
            "cpu_seconds": cpu_seconds,
            "cpu_us_per_committed_tx": cpu_per_tx,
            "cpu_per_tx_over_crypto_floor": cpu_per_tx.map(|cpu| cpu / floor.per_tx_us()),
            "rss_bytes": rss_bytes,
        },
        "crypto_floor": floor.json(),
    })
}

/// One step's percentiles, named.
fn step_json(step: &str, durations: Vec<u64>) -> Value {
    let mut value = percentiles(durations);
    value["step"] = json!(step);
    value
}

fn summary_text(summary: &Value) -> String {
    let t = &summary["transactions"];
    let l = &summary["latency_us"]["submit_to_durable"];
    let ms = |v: &Value| {
        v.as_u64()
            .map_or("-".to_string(), |us| format!("{:.3}", us as f64 / 1e3))
    };
    let mut out = format!(
        "{} with {} client(s) over {} connection(s), {:.1} s measured\n\
         offered {:.0} tx/s, committed {:.0} tx/s, valid {:.0} tx/s ({} of {} valid)\n\
         submit -> durable (ms): p50 {} p95 {} p99 {} p99.7 {} max {}\n",
        summary["workload"].as_str().unwrap_or("?"),
        summary["clients"],
        summary["connections"],
        summary["measured_seconds"].as_f64().unwrap_or(0.0),
        t["offered_per_second"].as_f64().unwrap_or(0.0),
        t["committed_per_second"].as_f64().unwrap_or(0.0),
        t["valid_per_second"].as_f64().unwrap_or(0.0),
        t["valid"],
        t["committed"],
        ms(&l["p50"]),
        ms(&l["p95"]),
        ms(&l["p99"]),
        ms(&l["p99_7"]),
        ms(&l["max"]),
    );
    for p in summary["latency_us"]["stages"]
        .as_array()
        .into_iter()
        .flatten()
    {
        out.push_str(&format!(
            "  {:<22} p50 {:>8} p99 {:>8} ms\n",
            p["step"].as_str().unwrap_or("?"),
            ms(&p["p50"]),
            ms(&p["p99"])
        ));
    }
    if let Some(outcomes) = t["outcomes"].as_object() {
        let list: Vec<String> = outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&format!("outcomes: {}\n", list.join(", ")));
    }
    let reads = &summary["reads"];
    out.push_str(&format!(
        "reads: {:.0}/s, p50 {} ms, p99 {} ms\n",
        reads["per_second"].as_f64().unwrap_or(0.0),
        ms(&reads["latency_us"]["p50"]),
        ms(&reads["latency_us"]["p99"]),
    ));
    let node = &summary["node"];
    let floor = &summary["crypto_floor"];
    out.push_str(&format!(
        "crypto floor: Ed25519 sign {:.1} µs, verify {:.1} µs, batch verify {:.1} µs per \
         signature; {:.1} µs per transaction (one signature, two batch verifications)\n",
        floor["ed25519_sign_us"].as_f64().unwrap_or(0.0),
        floor["ed25519_verify_us"].as_f64().unwrap_or(0.0),
        floor["ed25519_batch_verify_us"].as_f64().unwrap_or(0.0),
        floor["per_tx_us"].as_f64().unwrap_or(0.0),
    ));
    if let Some(cpu) = node["cpu_us_per_committed_tx"].as_f64() {
        out.push_str(&format!(
            "node: {cpu:.0} µs CPU per committed tx ({:.1}x the crypto floor), RSS {:.0} MiB\n",
            node["cpu_per_tx_over_crypto_floor"].as_f64().unwrap_or(0.0),
            node["rss_bytes"].as_f64().unwrap_or(0.0) / (1 << 20) as f64
        ));
    }
    out
}

/// The node's CPU time so far (user + system), from /proc.
pub(crate) fn node_cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading the node's /proc/{pid}/stat"))?;
    // Fields after the command (in parentheses, which may hold spaces).
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Ok((ticks(11) + ticks(12)) / hz.max(1.0))
}

/// The node's resident memory, from /proc.
fn node_rss_bytes(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading the node's /proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    Ok(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_taken_from_the_nodes_message() {
        let status = tonic::Status::aborted("CONTRACT_ERROR: insufficient balance");
        assert_eq!(failure("ENDORSE", &status), "ENDORSE_CONTRACT_ERROR");
        assert_eq!(
            failure("ENDORSE", &tonic::Status::unknown("")),
            "ENDORSE_FAILED"
        );
    }
}
