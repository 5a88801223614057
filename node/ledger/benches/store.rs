//! State store figures:
//! - hot-key reads through a snapshot: a key whose latest version is only staged (in the
//!   overlay), a durable key with no chain (sled), and a fresh snapshot plus that read;
//! - `stage` + `commit_staged` throughput, one 1 KiB write and 2 KiB of transaction bytes
//!   per transaction, for commits of 1 and of 1000 transactions (each commit is one fsync).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use runnel_ledger::ids::{Seq, TxId, ValidationCode};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::{TxRecord, WorldState};
use runnel_runtime::{KvWrite, NsRwSet};

/// The namespace every benchmark writes.
const NS: &str = "bench";
/// Durable keys written before the read benchmarks.
const DURABLE_KEYS: u64 = 10_000;
/// Size of each value written, in bytes.
const VALUE_BYTES: usize = 1024;
/// Size of each transaction's bytes as ordered, kept by the store.
const TRANSACTION_BYTES: usize = 2048;
/// Distinct keys the commit benchmarks cycle through.
const COMMIT_KEYS: u64 = 100_000;

fn record(seq: u64) -> TxRecord {
    TxRecord {
        tx_id: TxId::derive(&seq.to_be_bytes(), b"bench"),
        seq: Seq(seq),
        code: ValidationCode::Valid,
        timestamp_ms: seq,
    }
}

fn write(key: String) -> Vec<NsRwSet> {
    vec![NsRwSet {
        namespace: NS.to_string(),
        writes: vec![KvWrite {
            key: key.into_bytes(),
            is_delete: false,
            value: vec![0x5a; VALUE_BYTES],
        }],
        ..NsRwSet::default()
    }]
}

/// Stages the next transaction, writing `key`.
fn stage(world: &WorldState, key: String) {
    let seq = world.staged_height().0 + 1;
    world
        .stage(record(seq), &write(key), vec![0xa5; TRANSACTION_BYTES])
        .expect("stage");
}

fn reads(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let world = WorldState::open(dir.path(), SyncMode::Data).expect("open");
    for i in 0..DURABLE_KEYS {
        stage(&world, format!("durable-{i:06}"));
    }
    world
        .commit_staged(world.staged_height(), Vec::new())
        .expect("commit");
    stage(&world, "hot-staged".to_string());
    let snapshot = world.snapshot();
    let durable_key = format!("durable-{:06}", DURABLE_KEYS / 2).into_bytes();
    assert!(snapshot.get(NS, b"hot-staged").expect("get").is_some());
    assert!(snapshot.get(NS, &durable_key).expect("get").is_some());

    let mut group = c.benchmark_group("hot key read");
    group.bench_function("staged (overlay)", |b| {
        b.iter(|| black_box(snapshot.get(NS, black_box(b"hot-staged")).expect("get")))
    });
    group.bench_function("durable (sled, no chain)", |b| {
        b.iter(|| black_box(snapshot.get(NS, black_box(&durable_key)).expect("get")))
    });
    group.bench_function("snapshot + durable get", |b| {
        b.iter(|| {
            black_box(
                world
                    .snapshot()
                    .get(NS, black_box(&durable_key))
                    .expect("get"),
            )
        })
    });
    group.finish();
}

fn commits(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let world = WorldState::open(dir.path(), SyncMode::Data).expect("open");
    let mut group = c.benchmark_group("stage + commit_staged");
    // A 1000-transaction commit takes milliseconds: fewer samples keep the run short.
    group.sample_size(10);
    for txs in [1u64, 1000] {
        group.throughput(Throughput::Elements(txs));
        group.bench_with_input(BenchmarkId::new("txs per commit", txs), &txs, |b, &txs| {
            b.iter(|| {
                for _ in 0..txs {
                    let seq = world.staged_height().0 + 1;
                    stage(&world, format!("commit-{:06}", seq % COMMIT_KEYS));
                }
                world
                    .commit_staged(world.staged_height(), Vec::new())
                    .expect("commit");
            })
        });
    }
    group.finish();
}

criterion_group!(benches, reads, commits);
criterion_main!(benches);
