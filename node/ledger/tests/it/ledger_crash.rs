//! Crash safety of the whole ledger with real process kills: this test runs its own
//! binary again as a node under load (several submitters), SIGKILLs it at a varying
//! moment, reopens the directory and checks, round after round:
//!
//! - the peer's state is exactly the replay of the ordered transactions it holds, and
//!   those are a prefix of the orderer's log, byte for byte;
//! - every transaction the node reported committed is there, with its seq, valid;
//! - no transaction was applied twice;
//! - resubmitting a committed transaction is refused as `DUPLICATE_TXID`.
//!
//! `RUNNEL_CRASH_ROUNDS` sets the number of rounds (default 3; `scripts/soak.sh` runs
//! many more).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message;
use runnel_ledger::identity::{NetworkKeys, Role};
use runnel_ledger::ids::{BlockNumber, Seq, TxId, ValidationCode};
use runnel_ledger::ledger::{Ledger, LedgerConfig};
use runnel_ledger::orderer::{Delivered, Orderer, SoloOrderer};
use runnel_ledger::proto::{ResponsePayload, SignedTransaction, Transaction};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::WorldState;

const NODE_DIR_ENV: &str = "RUNNEL_CRASH_NODE_DIR";
const ROUNDS_ENV: &str = "RUNNEL_CRASH_ROUNDS";
const TEST_NAME: &str = "ledger_crash::a_killed_node_restarts_as_a_replay_of_its_stream";
const SUBMITTERS: usize = 4;
const KEYS: u64 = 40;
const REPORT: &str = "committed ";

fn config() -> LedgerConfig {
    let mut config = LedgerConfig::default();
    config.runtime.instances_max = 16;
    config.orderer.seal_max_txs = 7;
    config.orderer.seal_max_delay = Duration::from_millis(5);
    config
}

/// The child: a node with `SUBMITTERS` clients writing kv keys until killed, printing
/// each transaction `submit` reported committed.
fn run_node(dir: &Path) {
    let ledger = Arc::new(Ledger::open(dir, config()).unwrap());
    if ledger.evaluate("kv", "get", &[b"k0"]).is_err() {
        let kv = runnel_wasm_build::wasm("kv").unwrap();
        ledger.deploy("kv", "1", &kv, "").unwrap();
    }
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..SUBMITTERS as u64)
        .map(|t| {
            let (ledger, out) = (ledger.clone(), out.clone());
            std::thread::spawn(move || {
                for i in 0.. {
                    let key = format!("k{}", (i * SUBMITTERS as u64 + t) % KEYS);
                    let value = format!("{t}-{i}-{}", std::process::id());
                    let committed = ledger
                        .submit("kv", "put", &[key.as_bytes(), value.as_bytes()])
                        .unwrap();
                    let mut out = out.lock().unwrap();
                    writeln!(out, "{REPORT}{} {}", committed.tx_id, committed.seq.0).unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

/// A stored transaction's id and its decoded body.
fn decode(bytes: &[u8]) -> (TxId, Transaction) {
    let signed = SignedTransaction::decode(bytes).unwrap();
    let transaction = Transaction::decode(signed.transaction.as_slice()).unwrap();
    let proposal = runnel_ledger::proto::Proposal::decode(
        transaction.proposal.as_ref().unwrap().proposal.as_slice(),
    )
    .unwrap();
    (runnel_ledger::tx::tx_id(&proposal), transaction)
}

/// The stages of the node in `dir` (closed), opened alone: its world state and its
/// orderer.
fn open_stages(dir: &Path) -> (WorldState, SoloOrderer) {
    let world = WorldState::open(&dir.join("state"), SyncMode::Full).unwrap();
    let keys = NetworkKeys::load(dir).unwrap();
    let signer = keys.signer(&keys.orgs[0], Role::Orderer).unwrap().clone();
    let orderer = SoloOrderer::open(
        &dir.join("orderer"),
        config().orderer,
        Arc::new(keys.msp().unwrap()),
        signer,
    )
    .unwrap();
    (world, orderer)
}

/// The state a replay of the stored transactions gives, checked against the store.
fn check_replay(world: &WorldState, orderer: &dyn Orderer) -> Seq {
    let height = world.durable_height();
    let store = world.store();
    // Replay every stored transaction's writes in seq order.
    let mut replayed: BTreeMap<(String, Vec<u8>), (Vec<u8>, u64)> = BTreeMap::new();
    let mut ids = HashSet::new();
    let stored = store.transactions(Seq(1), usize::MAX).unwrap();
    assert_eq!(
        stored.len() as u64,
        height.0,
        "one stored transaction per seq"
    );
    // The orderer's log holds the same bytes and timestamps at the same seqs.
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut from_orderer = Vec::new();
    while (from_orderer.len() as u64) < height.0 {
        if let Some(Delivered::Tx(tx)) = delivery.next(Duration::from_secs(5)).unwrap() {
            from_orderer.push(tx);
        }
    }
    for (peer_tx, orderer_tx) in stored.iter().zip(&from_orderer) {
        let (seq, bytes) = (&peer_tx.seq, &peer_tx.bytes);
        // The same bytes at the same seq, with the same timestamp: what the seals cover.
        assert_eq!(
            (peer_tx.seq, peer_tx.timestamp_ms, &peer_tx.bytes),
            (
                orderer_tx.seq,
                orderer_tx.timestamp_ms,
                &orderer_tx.transaction
            ),
            "peer and orderer agree at {seq}"
        );
        let (tx_id, transaction) = decode(bytes);
        let record = world.tx(&tx_id).unwrap().unwrap();
        if record.seq != *seq {
            // A later copy of an id is a duplicate, recorded under the first.
            continue;
        }
        assert!(ids.insert(tx_id), "tx {tx_id} recorded once");
        if !record.code.is_valid() {
            continue;
        }
        let payload = ResponsePayload::decode(transaction.payload.as_slice()).unwrap();
        for set in payload.rwsets {
            for write in set.writes {
                let key = (set.namespace.clone(), write.key);
                if write.is_delete {
                    replayed.remove(&key);
                } else {
                    replayed.insert(key, (write.value, seq.0));
                }
            }
        }
    }
    for ((ns, key), (value, seq)) in &replayed {
        let found = store.get(ns, key).unwrap().unwrap();
        assert_eq!(
            (&found.value, found.version.seq),
            (value, *seq),
            "{ns}/{key:?}"
        );
    }
    let kv_keys = store.scan("kv", b"", None, usize::MAX).unwrap().len();
    assert_eq!(
        kv_keys,
        replayed.keys().filter(|(ns, _)| ns == "kv").count()
    );
    // No write applied twice: a key's history names each transaction once.
    for key in 0..KEYS {
        let history = store
            .history("kv", format!("k{key}").as_bytes(), None, usize::MAX)
            .unwrap();
        let distinct: HashSet<TxId> = history.iter().map(|h| h.tx_id).collect();
        assert_eq!(distinct.len(), history.len(), "k{key} history");
    }
    height
}

#[test]
fn a_killed_node_restarts_as_a_replay_of_its_stream() {
    if let Some(dir) = std::env::var_os(NODE_DIR_ENV) {
        run_node(Path::new(&dir));
        return;
    }
    let rounds: u64 = std::env::var(ROUNDS_ENV)
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let jitter = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::from(d.subsec_nanos()))
        .unwrap_or(0);
    let dir = tempfile::tempdir().unwrap();
    let mut reported: HashMap<TxId, Seq> = HashMap::new();
    for round in 0..rounds {
        let kill_after = 5 + (jitter / 11 + round * 17) % 60;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(NODE_DIR_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut seen = 0;
        for line in stdout.lines() {
            let line = line.unwrap();
            let Some(rest) = line.strip_prefix(REPORT) else {
                continue;
            };
            let (id, seq) = rest.split_once(' ').unwrap();
            reported.insert(id.parse().unwrap(), Seq(seq.parse().unwrap()));
            seen += 1;
            if seen == kill_after {
                std::thread::sleep(Duration::from_micros((jitter / 5 + round * 331) % 3_000));
                child.kill().unwrap();
                break;
            }
        }
        child.wait().unwrap();
        assert_eq!(seen, kill_after, "the node stopped early");

        let ledger = Ledger::open(dir.path(), config()).unwrap();
        // The peer catches up with everything the orderer had made durable.
        let orderer_height = ledger.info().unwrap().ordered_height;
        let mut statuses = ledger.statuses();
        while ledger.reader().durable_height() < orderer_height {
            let _ = statuses.blocking_recv();
        }
        for (tx_id, seq) in &reported {
            let (record, _) = ledger
                .reader()
                .transaction(tx_id)
                .unwrap()
                .expect("reported tx present");
            assert_eq!((record.seq, record.code), (*seq, ValidationCode::Valid));
        }
        let stored = ledger
            .reader()
            .committed_transactions(Seq(2), 1)
            .unwrap()
            .pop()
            .unwrap();
        let (any_seq, bytes) = (stored.seq, stored.bytes);
        let (tx_id, _) = decode(&bytes);
        assert_eq!(
            ledger.reader().transaction(&tx_id).unwrap().unwrap().0.seq,
            any_seq
        );
        ledger.close();
        drop(ledger);

        // The stages alone: the store holds what a replay of its transactions gives.
        let (world, orderer) = open_stages(dir.path());
        assert_eq!(check_replay(&world, &orderer), orderer_height);
        // Replaying a committed transaction is refused: the orderer read the recent ids
        // back from its log, and the replay is not ordered.
        let height = orderer.height();
        assert_eq!(orderer.submit(bytes).unwrap_err().code(), "DUPLICATE_TXID");
        assert_eq!(orderer.height(), height);
        orderer.close();
    }
}
