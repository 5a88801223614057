//! End-to-end figures of the embedded ledger, the load generator in the same process.
//! Every signature is real. By default a signature this process made (the client's, its
//! endorser's) counts as verified, as an embedded ledger runs; `RUNNEL_BENCH_VERIFY=all`
//! verifies every signature once where a stage checks it, as separate processes do.
//! Commits are as durable as `RUNNEL_BENCH_SYNC` says: `full` (`fdatasync`, the
//! default) or `data` (`sync_file_range`).
//!
//! - latency at 1 client (closed loop), submit to durable commit: streaming, then Fabric
//!   block mode (10 transactions or 2 s) in the same run;
//! - sustained throughput with many closed-loop clients.
//!
//! Run: `./scripts/bench.sh pipeline` or
//! `cargo bench -p runnel-ledger --bench pipeline -- [latency-secs] [throughput-secs] [clients]`
//! (defaults 10, 60, 64; 0 seconds skips that part).

/// The allocator the `runnel` binary uses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use runnel_ledger::ids::TxId;
use runnel_ledger::ledger::{Ledger, LedgerConfig};
use runnel_ledger::orderer::OrdererConfig;
use runnel_ledger::records::SyncMode;
use runnel_ledger::trace::{Stage, Trace};

/// Value written by every transaction: 1 KB.
const VALUE_BYTES: usize = 1024;

/// The settings the environment asks for (see the module doc).
fn settings() -> (SyncMode, bool) {
    let sync = match std::env::var("RUNNEL_BENCH_SYNC").as_deref() {
        Ok("data") => SyncMode::Data,
        Ok("full") | Err(_) => SyncMode::Full,
        Ok(other) => panic!("RUNNEL_BENCH_SYNC={other}: full or data"),
    };
    let trust_own = match std::env::var("RUNNEL_BENCH_VERIFY").as_deref() {
        Ok("all") => false,
        Ok("own-trusted") | Err(_) => true,
        Ok(other) => panic!("RUNNEL_BENCH_VERIFY={other}: all or own-trusted"),
    };
    (sync, trust_own)
}

fn open(orderer: OrdererConfig) -> (tempfile::TempDir, Ledger) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (sync, trust_own_signatures) = settings();
    let mut config = LedgerConfig {
        orderer,
        sync,
        trust_own_signatures,
        ..LedgerConfig::default()
    };
    config.runtime.instances_max = 256;
    let ledger = Ledger::open(dir.path(), config).expect("ledger opens");
    let kv = runnel_wasm_build::wasm("kv").expect("kv builds");
    ledger.deploy("kv", "1", &kv, "").expect("kv deploys");
    (dir, ledger)
}

fn value() -> Vec<u8> {
    vec![b'v'; VALUE_BYTES]
}

/// Submits one kv insert per iteration, one at a time, for `run`; returns latencies
/// and the transactions' ids.
fn one_client(ledger: &Ledger, run: Duration, max: usize) -> (Vec<Duration>, Vec<TxId>) {
    let value = value();
    let mut latencies = Vec::new();
    let mut ids = Vec::new();
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < run && latencies.len() < max {
        let key = format!("one-{i}");
        let t = Instant::now();
        let committed = ledger
            .submit("kv", "put", &[key.as_bytes(), &value])
            .expect("committed");
        latencies.push(t.elapsed());
        ids.push(committed.tx_id);
        i += 1;
    }
    (latencies, ids)
}

/// Median time between consecutive stages of the traced transactions.
fn breakdown(ledger: &Ledger, ids: &[TxId]) {
    let traces: Vec<Trace> = ids.iter().filter_map(|id| ledger.trace(id)).collect();
    println!(
        "  where the time goes (median per step, {} traces):",
        traces.len()
    );
    for pair in Stage::ALL.windows(2) {
        let mut steps: Vec<u64> = traces
            .iter()
            .filter_map(|t| Some(t.at(pair[1])?.saturating_sub(t.at(pair[0])?)))
            .collect();
        steps.sort_unstable();
        if let Some(median) = steps.get(steps.len() / 2) {
            println!(
                "    {:>13} -> {:<13} {:>6} µs",
                pair[0].as_str(),
                pair[1].as_str(),
                median
            );
        }
    }
}

/// Bytes this process has passed to `write` calls (Linux `/proc/self/io`, `wchar`): what
/// the ledger asks to store, before the page cache. (`write_bytes` there is no measure
/// of it: with large folios the kernel charges a whole folio each time a few bytes of
/// it are dirtied again.)
fn bytes_written() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|line| line.strip_prefix("wchar: "))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Bytes the device holding `dir` has written, every process included (Linux
/// `/sys/dev/block/MAJOR:MINOR/stat`, sectors of 512 bytes).
fn device_bytes_written(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(dev) = std::fs::metadata(dir).map(|m| m.dev()) else {
        return 0;
    };
    let (major, minor) = ((dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00));
    std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/stat"))
        .ok()
        .and_then(|stat| stat.split_whitespace().nth(6)?.parse::<u64>().ok())
        .map_or(0, |sectors| sectors * 512)
}

/// CPU time this process has used, user and system, all threads (Linux `/proc/self/stat`,
/// in clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which ends with the last ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after ')'.
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let latency_secs = args.first().copied().unwrap_or(10);
    let throughput_secs = args.get(1).copied().unwrap_or(60);
    let clients = args.get(2).copied().unwrap_or(64) as usize;
    let (sync, trust_own) = settings();
    println!(
        "sync {sync:?}, signatures made in this process {}",
        if trust_own { "trusted" } else { "verified" }
    );

    if latency_secs > 0 {
        println!("== latency, 1 client, submit -> durable commit (kv insert, 1 KB value)");
        let (_dir, ledger) = open(OrdererConfig::default());
        // Warm up: compile caches, sled trees, pools.
        one_client(&ledger, Duration::from_secs(1), 200);
        let (latencies, ids) = one_client(&ledger, Duration::from_secs(latency_secs), usize::MAX);
        let streaming = runnel_testing::bench::report("streaming", latencies);
        breakdown(&ledger, &ids);
        ledger.close();
        drop(ledger);
        let (_dir, ledger) = open(OrdererConfig::fabric_blocks());
        let blocks = runnel_testing::bench::report(
            "block mode (N=10, T=2 s)",
            one_client(&ledger, Duration::from_secs(latency_secs.max(10)), 20).0,
        );
        println!(
            "block mode / streaming p50 latency: {:.0}x",
            blocks.as_secs_f64() / streaming.as_secs_f64()
        );
        ledger.close();
        drop(ledger);
    }

    if throughput_secs == 0 {
        return;
    }
    println!("== throughput, {clients} closed-loop clients, {throughput_secs} s");
    let (_dir, ledger) = open(OrdererConfig::default());
    let ledger = Arc::new(ledger);
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (ledger, done, stop) = (ledger.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || {
                let value = value();
                let mut latencies = Vec::new();
                let mut ids = Vec::new();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("c{c}-{i}");
                    let t = Instant::now();
                    let committed = ledger
                        .submit("kv", "put", &[key.as_bytes(), &value])
                        .expect("committed");
                    latencies.push(t.elapsed());
                    ids.push(committed.tx_id);
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                (latencies, ids)
            })
        })
        .collect();
    let written_before = bytes_written();
    let device_before = device_bytes_written(_dir.path());
    let cpu_before = cpu_time();
    let (elapsed, total) = runnel_testing::bench::watch(throughput_secs, &done);
    let written = bytes_written().saturating_sub(written_before);
    let device = device_bytes_written(_dir.path()).saturating_sub(device_before);
    let cpu = cpu_time().saturating_sub(cpu_before);
    stop.store(true, Ordering::Relaxed);
    let (mut latencies, mut ids) = (Vec::new(), Vec::new());
    for thread in threads {
        let (l, i) = thread.join().expect("client");
        latencies.extend(l);
        ids.extend(i);
    }
    println!(
        "committed {total} tx in {:.1} s: {:.0} tx/s",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "CPU (all threads, user + system): {:.0} µs per committed tx, {:.2} cores busy",
        cpu.as_secs_f64() * 1e6 / total.max(1) as f64,
        cpu.as_secs_f64() / elapsed.as_secs_f64()
    );
    println!(
        "written by the ledger: {:.1} MB/s, {:.1} KB per committed tx; by the device \
         (every process): {:.1} MB/s",
        written as f64 / elapsed.as_secs_f64() / 1e6,
        written as f64 / total.max(1) as f64 / 1e3,
        device as f64 / elapsed.as_secs_f64() / 1e6
    );
    runnel_testing::bench::report(
        &format!("latency under load ({clients} clients)"),
        latencies,
    );
    // The traces kept are the most recent ones: the end of the run, under full load.
    breakdown(&ledger, &ids);
    ledger.close();
}
