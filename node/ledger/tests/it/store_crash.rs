//! Crash safety with a real process kill: this test runs its own binary again as a writer
//! that commits in a loop and reports each durable height, SIGKILLs it at a varying point,
//! and checks that the reopened store holds exactly the transactions (records, writes and
//! bytes) up to its height, a height no lower than the last one reported, and exactly the
//! seals that the writer committed with them.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use runnel_ledger::ids::{BlockNumber, Seq, TxId, ValidationCode};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::{SealRecord, TxBytes, TxRecord, WorldState};
use runnel_runtime::{KvWrite, NsRwSet, Version, VersionedValue};

/// Set (to the store directory) when this binary runs as the writer.
const WRITER_DIR_ENV: &str = "RUNNEL_STORE_CRASH_WRITER_DIR";
/// This test's name, for the child's `--exact` filter.
const TEST_NAME: &str = "store_crash::a_killed_writer_loses_nothing_it_reported";
/// The namespace written.
const NS: &str = "crash";
/// Keys `k0` .. `k49` are written round-robin.
const KEYS: u64 = 50;
/// Kill rounds, each after a different number of reported commits.
const ROUNDS: u64 = 3;
/// Most commits a round waits for before the kill.
const KILL_AFTER_MAX: u64 = 40;
/// Longest the writer runs on after the report that triggers the kill, in microseconds.
const KILL_DELAY_US_MAX: u64 = 2_000;
/// The writer stops by itself after this many transactions, should the parent vanish.
const WRITER_TXS_MAX: u64 = 200_000;
/// Prefix of the writer's progress lines.
const REPORT: &str = "durable ";
/// Transactions per block: block `n` covers seqs `4n - 3 ..= 4n`.
const BLOCK_TXS: u64 = 4;

fn tx_id(seq: u64) -> TxId {
    TxId::derive(&seq.to_be_bytes(), b"store-crash")
}

fn record(seq: u64) -> TxRecord {
    TxRecord {
        tx_id: tx_id(seq),
        seq: Seq(seq),
        code: ValidationCode::Valid,
        timestamp_ms: seq,
    }
}

/// The bytes of transaction `seq`, 1 to 7 copies of a line naming it.
fn transaction(seq: u64) -> Vec<u8> {
    format!("transaction {seq};")
        .repeat(1 + (seq % 7) as usize)
        .into_bytes()
}

/// Transaction `seq` as the store gives it back: its bytes and its record's timestamp.
fn ordered(seq: u64) -> TxBytes {
    TxBytes {
        seq: Seq(seq),
        timestamp_ms: record(seq).timestamp_ms,
        bytes: transaction(seq),
    }
}

/// The seal of block `number`.
fn seal(number: u64) -> SealRecord {
    SealRecord {
        number: BlockNumber(number),
        first: Seq((number - 1) * BLOCK_TXS + 1),
        last: Seq(number * BLOCK_TXS),
        bytes: format!("seal {number}").into_bytes(),
    }
}

/// The last seq sealed once `height` is durable: every full block goes with the commit
/// that completes it.
fn sealed_through(height: u64) -> u64 {
    height - height % BLOCK_TXS
}

/// The seals a commit from durable height `before` to `after` carries.
fn seals_between(before: u64, after: u64) -> Vec<SealRecord> {
    (sealed_through(before) / BLOCK_TXS + 1..=sealed_through(after) / BLOCK_TXS)
        .map(seal)
        .collect()
}

/// Stages transactions `durable + 1 ..= through` and commits them with their seals.
fn stage_and_commit(world: &WorldState, through: u64) {
    let durable = world.durable_height().0;
    for seq in durable + 1..=through {
        world
            .stage(record(seq), &writes(seq), transaction(seq))
            .unwrap();
    }
    world
        .commit_staged(Seq(through), seals_between(durable, through))
        .unwrap();
}

/// Transaction `seq` writes `k{seq % 50}` and `last`, both to `seq` in decimal.
fn writes(seq: u64) -> Vec<NsRwSet> {
    let value = seq.to_string().into_bytes();
    let write = |key: String| KvWrite {
        key: key.into_bytes(),
        is_delete: false,
        value: value.clone(),
    };
    vec![NsRwSet {
        namespace: NS.to_string(),
        writes: vec![write(format!("k{}", seq % KEYS)), write("last".to_string())],
        ..NsRwSet::default()
    }]
}

/// The child: stage and commit forever (1 to 3 transactions per commit), reporting each
/// durable height once `commit_staged` has returned.
fn run_writer(dir: &Path) {
    let world = WorldState::open(dir, SyncMode::Data).unwrap();
    let mut stdout = std::io::stdout().lock();
    let mut seq = world.durable_height().0;
    while seq < WRITER_TXS_MAX {
        seq += 1 + seq % 3;
        stage_and_commit(&world, seq);
        writeln!(stdout, "{REPORT}{seq}").unwrap();
        stdout.flush().unwrap();
    }
}

/// The reopened store holds exactly transactions `1..=height`, and the seals of the full
/// blocks among them.
fn check_replay(world: &WorldState, height: u64) {
    let store = world.store();
    let value = |seq: u64| {
        Some(VersionedValue {
            value: seq.to_string().into_bytes(),
            version: Version::from_seq(seq),
        })
    };
    for key in 0..KEYS {
        // The last seq <= height with seq % 50 == key.
        let last = (1..=height).rev().find(|seq| seq % KEYS == key);
        let found = store.get(NS, format!("k{key}").as_bytes()).unwrap();
        assert_eq!(found, last.and_then(value), "k{key} at height {height}");
    }
    let last = store.get(NS, b"last").unwrap();
    assert_eq!(last, (height > 0).then_some(height).and_then(value));
    let history = store.history(NS, b"last", None, usize::MAX).unwrap();
    assert_eq!(history.len() as u64, height);
    assert!(
        history
            .iter()
            .zip((1..=height).rev())
            .all(|(entry, seq)| entry.seq == Seq(seq))
    );
    let entries = store.scan(NS, b"", None, usize::MAX).unwrap();
    assert_eq!(
        entries.len() as u64,
        height.min(KEYS) + u64::from(height > 0)
    );
    for seq in 1..=height {
        assert_eq!(
            store.tx(&tx_id(seq)).unwrap(),
            Some(record(seq)),
            "tx {seq}"
        );
    }
    for seq in height + 1..height + 5 {
        assert_eq!(
            store.tx(&tx_id(seq)).unwrap(),
            None,
            "tx {seq} beyond the height"
        );
    }

    for seq in 1..=height {
        let expected = Some(ordered(seq));
        assert_eq!(
            store.transaction(Seq(seq)).unwrap(),
            expected,
            "bytes {seq}"
        );
        assert_eq!(
            world.transaction(Seq(seq)).unwrap(),
            expected,
            "bytes {seq}"
        );
    }
    for seq in [0, height + 1, height + 2, height + 100] {
        assert_eq!(store.transaction(Seq(seq)).unwrap(), None, "bytes {seq}");
        assert_eq!(world.transaction(Seq(seq)).unwrap(), None, "bytes {seq}");
    }
    let all: Vec<TxBytes> = (1..=height).map(ordered).collect();
    assert_eq!(store.transactions(Seq::ZERO, usize::MAX).unwrap(), all);
    assert_eq!(world.transactions(Seq(1), usize::MAX).unwrap(), all);

    let sealed = sealed_through(height);
    let seals: Vec<SealRecord> = (1..=sealed / BLOCK_TXS).map(seal).collect();
    assert_eq!(
        store.seals(BlockNumber(0), usize::MAX).unwrap(),
        seals,
        "seals at height {height}"
    );
    assert_eq!(store.last_seal().unwrap(), seals.last().cloned());
    for seq in 0..=height + 2 {
        let expected = (1..=sealed)
            .contains(&seq)
            .then(|| BlockNumber((seq - 1) / BLOCK_TXS + 1));
        assert_eq!(
            store.block_of(Seq(seq)).unwrap(),
            expected,
            "block of {seq}"
        );
    }
}

#[test]
fn a_killed_writer_loses_nothing_it_reported() {
    if let Some(dir) = std::env::var_os(WRITER_DIR_ENV) {
        run_writer(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let jitter = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|now| u64::from(now.subsec_nanos()))
        .unwrap_or(0);
    for round in 0..ROUNDS {
        let kill_after = 1 + (jitter / 7 + round * 13) % KILL_AFTER_MAX;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(WRITER_DIR_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut reported = 0;
        let mut commits = 0;
        for line in stdout.lines() {
            let line = line.unwrap();
            // The test harness prints its own lines too.
            let Some(height) = line.strip_prefix(REPORT) else {
                continue;
            };
            reported = height.parse::<u64>().unwrap();
            commits += 1;
            if commits == kill_after {
                // Let the writer run on for up to 2 ms, so that the kill lands anywhere in
                // its next commits, fsync included.
                thread::sleep(Duration::from_micros(
                    (jitter / 3 + round * 397) % KILL_DELAY_US_MAX,
                ));
                child.kill().unwrap();
                break;
            }
        }
        child.wait().unwrap();
        assert_eq!(commits, kill_after, "the writer stopped early");

        let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
        let height = world.durable_height().0;
        assert!(
            height >= reported,
            "round {round}: height {height} < reported {reported}"
        );
        check_replay(&world, height);
        // The store goes on from where it stopped.
        let next = height + 1;
        stage_and_commit(&world, next);
        check_replay(&world, next);
    }
}
