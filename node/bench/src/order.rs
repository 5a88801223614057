//! `runnel bench order`: the ordering service alone, loaded and read as its peers load
//! and read it, with no peer, validator or contract in the way.
//!
//! Before the clock starts it signs `--txs` transactions of `--payload-bytes` each
//! (`order/pool.rs`), finds the last seal the orderers hold, and opens `--receivers`
//! streams, spread over the orderers from the Raft leader on, each on a connection of
//! its own. Then `--in-flight` submitters send the transactions in batches
//! (`order/submit.rs`) for `--duration` seconds; each receiver checks every seal as a
//! peer does (`order/receive.rs`, [`SealCheck`]) and notes when it passed. Once the last
//! submit is answered, the receivers read on until their seals cover the last seq
//! ordered. It reports sealed transactions a second at the slowest receiver, submit →
//! sealed latency, bytes a second, and CPU per transaction of each orderer process
//! found on this machine (`order/report.rs`), as summary.json and summary.txt in `--out`.
//!
//! It borrows a peer's identity: the peer's certificate opens the orderers' service
//! over mutual TLS and its key endorses; the organisation's client signs. Run it on an
//! idle network (peers stopped, or idle): its receivers start after the last seal.

mod links;
mod pool;
mod receive;
mod report;
mod submit;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use runnel_api::identity::{NetworkKeys, Role};
use runnel_api::proto::ordering_client::OrderingClient;
use serde_json::{Value, json};
use tonic::transport::Channel;

use self::links::{Anchor, Network};
use self::receive::{Received, Receiver};
use self::report::Window;
use self::submit::{Outbox, Plan};

/// Transactions one `BroadcastBatch` carries at most, and bytes: an orderer's bounds
/// (runnel-server's `BROADCAST_BATCH_REQUEST_MAX` and `BROADCAST_BATCH_BYTES_MAX`).
const BATCH_MAX: usize = 256;
const BATCH_BYTES_MAX: usize = 4 << 20;

/// Receivers at most: an orderer serves 64 streams, and a few are its peers'.
const RECEIVERS_MAX: usize = 32;

/// A receiver's check of the seals it streams, as a peer makes it: the chain, the
/// Merkle root over the block's transactions and the signatures a seal of the
/// network's ordering service needs (under BFT, `n - f` distinct members). The
/// `runnel` binary supplies it from runnel-ledger's block code, which this crate never
/// links.
pub trait SealCheck: Send {
    /// Checks the next seal (an encoded `SignedSeal`) over the transactions whose
    /// leaves are `leaves`, in seq order, and moves past it: its first and last seq.
    fn accept(&mut self, signed_seal: &[u8], leaves: &[[u8; 32]]) -> Result<(u64, u64), String>;
}

/// Makes [`SealCheck`]s.
pub trait SealChecks: Send + Sync {
    /// Checks of the seals that follow `anchor` (an encoded `SignedSeal`, taken as a
    /// peer takes its last stored seal; none: from the first block), trusting the
    /// orderers the network definition in `dir` names.
    fn after(&self, dir: &Path, anchor: Option<&[u8]>) -> Result<Box<dyn SealCheck>>;
}

/// `runnel bench order`'s options.
#[derive(Args, Debug)]
pub struct OrderArgs {
    /// The network's directory, made by `runnel up` or `runnel init`.
    #[arg(long, env = "RUNNEL_DIR", default_value = ".runnel/up")]
    dir: PathBuf,
    /// The organisation whose client signs and whose peer endorses.
    #[arg(long, env = "RUNNEL_ORG", default_value = "Org1")]
    org: String,
    /// The peer whose identity opens the orderers' service: <dir>/<org>/<peer>.
    #[arg(long, default_value = "peer0")]
    peer: String,
    /// Bytes of payload in each transaction (the value of a kv put).
    #[arg(long, default_value_t = 1024)]
    payload_bytes: usize,
    /// Streams read at once, each as a peer reads, spread over the orderers.
    #[arg(long, default_value_t = 1)]
    receivers: usize,
    /// Seconds of submitting, warm-up included.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds at the start left out of the figures.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Transactions signed before the clock starts; the run stops submitting early when
    /// all are sent.
    #[arg(long, default_value_t = 50_000)]
    txs: usize,
    /// Batches in flight at once, each waiting for its answer before the next.
    #[arg(long, default_value_t = 8)]
    in_flight: usize,
    /// Transactions a batch carries at most (at most 256, and 4 MiB).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Open loop: transactions a second, sent as they fall due (at most --in-flight
    /// batches outstanding); unset, as fast as the batches are answered.
    #[arg(long)]
    rate: Option<f64>,
    /// Orderers each batch goes to; default as a peer sends: f + 1 under BFT, else the
    /// Raft leader alone.
    #[arg(long)]
    fan_out: Option<usize>,
    /// Seconds the receivers have, after the last submit, to see it sealed.
    #[arg(long, default_value_t = 30.0)]
    drain: f64,
    /// Where to write summary.json and summary.txt.
    #[arg(long, default_value = "bench-order")]
    out: PathBuf,
}

impl OrderArgs {
    fn check(&self) -> Result<()> {
        if !(1..=RECEIVERS_MAX).contains(&self.receivers) {
            bail!("--receivers: 1 to {RECEIVERS_MAX}");
        }
        if self.in_flight == 0 || !(1..=BATCH_MAX).contains(&self.batch) {
            bail!("--in-flight must be at least 1, --batch 1 to {BATCH_MAX}");
        }
        if self.txs == 0 || self.duration <= self.warmup || self.warmup < 0.0 {
            bail!("--txs must be at least 1, and --duration longer than --warmup");
        }
        if self.rate.is_some_and(|rate| rate <= 0.0) {
            bail!("--rate must be above 0");
        }
        Ok(())
    }
}

/// Runs `runnel bench order`.
pub fn order(args: &OrderArgs, seals: &dyn SealChecks) -> Result<()> {
    args.check()?;
    let network = Network::open(&args.dir, &args.org, &args.peer)?;
    let signers = pool::Signers {
        client: signer(&args.dir.join(&args.org), &args.org, Role::Client)?,
        peer: signer(&network.peer_dir, &args.org, Role::Peer)?,
    };
    eprintln!(
        "signing {} transactions of {} B payload...",
        args.txs, args.payload_bytes
    );
    let signing = Instant::now();
    let run_id = format!("{:x}", runnel_api::tx::now_us());
    let transactions = pool::sign_all(
        &signers,
        &network.definition.channel,
        &run_id,
        args.payload_bytes,
        args.txs,
    );
    let signing_seconds = signing.elapsed().as_secs_f64();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(run(args, &network, seals, transactions, signing_seconds))
}

/// The signer of `org`'s identity with `role` in `dir`.
fn signer(dir: &Path, org: &str, role: Role) -> Result<runnel_api::identity::Signer> {
    let keys = NetworkKeys::load(dir)
        .with_context(|| format!("loading identities from {}", dir.display()))?;
    keys.signer(org, role)
        .cloned()
        .ok_or_else(|| anyhow!("no {role} identity of {org} in {}", dir.display()))
}

/// The connections and where the receivers start.
struct Links {
    /// One connection per orderer, shared by the submitters.
    submit: Vec<OrderingClient<Channel>>,
    leader: usize,
    anchor: Anchor,
}

async fn connect(network: &Network) -> Result<Links> {
    let mut submit = Vec::with_capacity(network.endpoints.len());
    for index in 0..network.endpoints.len() {
        submit.push(network.connect(index).await?);
    }
    let leader = network.leader(&submit).await?;
    let anchor = links::anchor(&submit[leader]).await?;
    Ok(Links {
        submit,
        leader,
        anchor,
    })
}

async fn run(
    args: &OrderArgs,
    network: &Network,
    seals: &dyn SealChecks,
    transactions: Vec<Vec<u8>>,
    signing_seconds: f64,
) -> Result<()> {
    let links = connect(network).await?;
    let tx_bytes =
        transactions.iter().map(Vec::len).sum::<usize>() as f64 / transactions.len() as f64;
    let batch = args
        .batch
        .min((BATCH_BYTES_MAX as f64 / tx_bytes) as usize)
        .max(1);
    let fan_out = args
        .fan_out
        .unwrap_or(network.peer_fan_out())
        .clamp(1, network.endpoints.len());
    let (until, until_seen) = tokio::sync::watch::channel(None);
    let start = Instant::now();
    let receivers = receive_all(args, network, seals, &links, start, until_seen).await?;
    let processes = processes(&args.dir, network);
    eprintln!(
        "{} ordering: {} receiver(s), {} in flight of up to {batch}, each to {fan_out} orderer(s), for {} s",
        network.ordering(),
        args.receivers,
        args.in_flight,
        args.duration
    );
    let outbox = Arc::new(Outbox::new(transactions));
    let plan = Plan {
        batch,
        rate: args.rate,
        start,
        stop_at: start + Duration::from_secs_f64(args.duration),
    };
    let cpu_from = {
        let (processes, warmup) = (processes.clone(), args.warmup);
        tokio::spawn(async move {
            tokio::time::sleep_until((start + Duration::from_secs_f64(warmup)).into()).await;
            cpu_seconds(&processes)
        })
    };
    submit_all(
        args.in_flight,
        (fan_out, network.bft()),
        &links,
        &outbox,
        &plan,
    )
    .await?;
    let window = Window {
        from_us: (args.warmup * 1e6) as u64,
        to_us: start.elapsed().as_micros() as u64,
    };
    let cpu = (cpu_from.await?, cpu_seconds(&processes));
    if outbox.sent() == outbox.transactions.len() && window.to_us < (args.duration * 1e6) as u64 {
        eprintln!(
            "all {} transactions were sent at {:.1} s: sign more with --txs for a full run",
            outbox.sent(),
            window.to_us as f64 / 1e6
        );
    }
    let sent_us = ordered(&outbox);
    let last = sent_us
        .keys()
        .max()
        .copied()
        .unwrap_or(links.anchor.next_seq - 1);
    until.send_replace(Some(last));
    let received = drain(receivers, args.receivers, args.drain).await?;
    let run = Run {
        window,
        tx_bytes,
        batch,
        fan_out,
        processes,
        cpu,
        signing_seconds,
    };
    write(
        &args.out,
        &summarise(args, network, &outbox, &received, &sent_us, &run),
    )
}

/// The receivers, each streaming from the orderer after the last one's (the first from
/// the Raft leader, which a peer reads), until `until` says where to stop.
async fn receive_all(
    args: &OrderArgs,
    network: &Network,
    seals: &dyn SealChecks,
    links: &Links,
    start: Instant,
    until: tokio::sync::watch::Receiver<Option<u64>>,
) -> Result<tokio::task::JoinSet<(usize, Result<Received>)>> {
    let mut receivers = tokio::task::JoinSet::new();
    for r in 0..args.receivers {
        let index = (links.leader + r) % network.endpoints.len();
        let receiver = Receiver {
            client: network.connect(index).await?,
            endpoint: network.endpoints[index].clone(),
            next_seq: links.anchor.next_seq,
            next_block: links.anchor.next_block,
            check: seals.after(&network.peer_dir, links.anchor.seal.as_deref())?,
            start,
            until: until.clone(),
        };
        receivers.spawn(async move { (r, receiver.run().await) });
    }
    Ok(receivers)
}

/// Submits until `plan` stops: `in_flight` submitters, each sending to `fan_out`
/// orderers from the leader on; under BFT, where any orderer takes a transaction into
/// the shared mempool, each submitter starts one further along.
async fn submit_all(
    in_flight: usize,
    (fan_out, spread): (usize, bool),
    links: &Links,
    outbox: &Arc<Outbox>,
    plan: &Plan,
) -> Result<()> {
    let mut submitters = tokio::task::JoinSet::new();
    for s in 0..in_flight {
        let first = links.leader + if spread { s } else { 0 };
        let targets = (0..fan_out)
            .map(|j| links.submit[(first + j) % links.submit.len()].clone())
            .collect();
        submitters.spawn(submit::submitter(outbox.clone(), targets, plan.clone()));
    }
    while let Some(done) = submitters.join_next().await {
        done?;
    }
    Ok(())
}

/// Each ordered transaction's seq and when it was sent.
fn ordered(outbox: &Outbox) -> HashMap<u64, u64> {
    (0..outbox.sent())
        .filter_map(|i| {
            let seq = outbox.seq[i].load(Ordering::Relaxed);
            (seq != 0).then(|| (seq, outbox.sent_us[i].load(Ordering::Relaxed)))
        })
        .collect()
}

/// What each receiver saw, once all have read to the last seq or `drain_s` passed.
async fn drain(
    mut receivers: tokio::task::JoinSet<(usize, Result<Received>)>,
    count: usize,
    drain_s: f64,
) -> Result<Vec<Received>> {
    let mut received: Vec<Option<Received>> = (0..count).map(|_| None).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(drain_s);
    while let Some(joined) = tokio::time::timeout_at(deadline, receivers.join_next())
        .await
        .map_err(|_| {
            anyhow!("the receivers did not see the last transaction sealed within {drain_s} s")
        })?
    {
        let (r, result) = joined?;
        received[r] = Some(result.with_context(|| format!("receiver {r}"))?);
    }
    Ok(received.into_iter().flatten().collect())
}

/// The processes whose CPU a run reports: each orderer of the definition whose node
/// directory (`<dir>/<org>/<node>`, as `runnel up` lays them out) names a live process
/// in its `runnel.pid`, and this one.
fn processes(dir: &Path, network: &Network) -> Vec<(String, u32)> {
    let mut found: Vec<(String, u32)> = network
        .definition
        .orderers
        .iter()
        .filter_map(|orderer| {
            let node = orderer.name.split('.').next()?;
            let pid_file = dir.join(&orderer.org).join(node).join("runnel.pid");
            let pid: u32 = std::fs::read_to_string(pid_file)
                .ok()?
                .trim()
                .parse()
                .ok()?;
            crate::bench::node_cpu_seconds(pid)
                .ok()
                .map(|_| (orderer.name.clone(), pid))
        })
        .collect();
    found.push(("runnel-bench".to_string(), std::process::id()));
    found
}

/// Each process's CPU seconds so far (0 for one that ended).
fn cpu_seconds(processes: &[(String, u32)]) -> Vec<f64> {
    processes
        .iter()
        .map(|(_, pid)| crate::bench::node_cpu_seconds(*pid).unwrap_or(0.0))
        .collect()
}

/// How a run went, besides what was sent and received.
struct Run {
    window: Window,
    /// The mean encoded transaction, bytes.
    tx_bytes: f64,
    batch: usize,
    fan_out: usize,
    /// The processes measured, and their CPU seconds at the window's start and end.
    processes: Vec<(String, u32)>,
    cpu: (Vec<f64>, Vec<f64>),
    signing_seconds: f64,
}

fn summarise(
    args: &OrderArgs,
    network: &Network,
    outbox: &Outbox,
    received: &[Received],
    sent_us: &HashMap<u64, u64>,
    run: &Run,
) -> Value {
    let (delivery, sealed) = report::delivery(received, sent_us, run.window, run.tx_bytes);
    let (cpu_from, cpu_to) = &run.cpu;
    let cpu: serde_json::Map<String, Value> = run
        .processes
        .iter()
        .zip(cpu_from.iter().zip(cpu_to))
        .map(|((name, _), (from, to))| (name.clone(), json!((to - from) * 1e6 / sealed.max(1.0))))
        .collect();
    let refused = outbox.refused.lock().map(|r| r.clone()).unwrap_or_default();
    let failed = outbox.failed.lock().map(|f| f.clone()).unwrap_or_default();
    json!({
        "command": "order",
        "ordering": network.ordering(),
        "orderers": network.endpoints.len(),
        "payload_bytes": args.payload_bytes,
        "tx_bytes": run.tx_bytes,
        "receivers": args.receivers,
        "submit": {"in_flight": args.in_flight, "batch": run.batch, "fan_out": run.fan_out, "rate": args.rate},
        "duration_seconds": args.duration,
        "warmup_seconds": args.warmup,
        "measured_seconds": run.window.to_us.saturating_sub(run.window.from_us) as f64 / 1e6,
        "signing_seconds": run.signing_seconds,
        "transactions": {
            "signed": outbox.transactions.len(),
            "sent": outbox.sent(),
            "ordered": sent_us.len(),
            "refused": refused.values().sum::<u64>(),
            "refused_by_code": refused,
            "failed_batches": failed.0,
            "first_failure": failed.1,
        },
        "delivery": delivery,
        "cpu_us_per_tx": cpu,
    })
}

fn write(out: &Path, summary: &Value) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let text = report::text(summary);
    std::fs::write(
        out.join("summary.json"),
        serde_json::to_string_pretty(summary)?,
    )?;
    std::fs::write(out.join("summary.txt"), &text)?;
    print!("{text}");
    eprintln!("wrote {}", out.display());
    Ok(())
}
