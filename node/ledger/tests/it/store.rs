//! The state store through its public API, on real sled databases in temporary
//! directories: durable round trips, commit checks, the seal chain and the block of each
//! transaction, transaction bytes, the staged overlay and its snapshots, readers racing a
//! writer, and random operation sequences against a model.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use runnel_ledger::ids::{BlockNumber, Seq, TxId, ValidationCode};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::{
    CommitBatch, HistoryEntry, SealRecord, Snapshot, Store, StoreError, TxBytes, TxRecord,
    WorldState,
};
use runnel_runtime::{KvWrite, NsRwSet, Version, VersionedValue};

fn tx_id(seq: u64) -> TxId {
    TxId::derive(&seq.to_be_bytes(), b"store-test")
}

fn record_with(seq: u64, code: ValidationCode) -> TxRecord {
    TxRecord {
        tx_id: tx_id(seq),
        seq: Seq(seq),
        code,
        timestamp_ms: 1_700_000_000_000 + seq,
    }
}

/// The bytes of transaction `seq` as ordered.
fn tx_bytes(seq: u64) -> Vec<u8> {
    format!("ordered transaction {seq}").into_bytes()
}

/// Transaction `seq` as the store gives it back: its bytes with its record's timestamp.
fn ordered(seq: u64) -> TxBytes {
    ordered_as(seq, tx_bytes(seq))
}

/// [`ordered`] with `bytes`.
fn ordered_as(seq: u64, bytes: Vec<u8>) -> TxBytes {
    TxBytes {
        seq: Seq(seq),
        timestamp_ms: record(seq).timestamp_ms,
        bytes,
    }
}

/// The seal of block `number`, covering seqs `first..=last`.
fn seal(number: u64, first: u64, last: u64) -> SealRecord {
    SealRecord {
        number: BlockNumber(number),
        first: Seq(first),
        last: Seq(last),
        bytes: format!("seal {number}: {first}..={last}").into_bytes(),
    }
}

fn record(seq: u64) -> TxRecord {
    record_with(seq, ValidationCode::Valid)
}

fn put(key: &[u8], value: &[u8]) -> KvWrite {
    KvWrite {
        key: key.to_vec(),
        is_delete: false,
        value: value.to_vec(),
    }
}

fn del(key: &[u8]) -> KvWrite {
    KvWrite {
        key: key.to_vec(),
        is_delete: true,
        value: Vec::new(),
    }
}

fn set(ns: &str, writes: Vec<KvWrite>) -> NsRwSet {
    NsRwSet {
        namespace: ns.to_string(),
        writes,
        ..NsRwSet::default()
    }
}

fn vv(value: &[u8], seq: u64) -> VersionedValue {
    VersionedValue {
        value: value.to_vec(),
        version: Version::from_seq(seq),
    }
}

/// Commits one valid transaction per entry of `txs`, from the store's next seq.
fn commit_txs(store: &Store, txs: Vec<Vec<NsRwSet>>) {
    let mut batch = CommitBatch::new();
    let mut seq = store.height();
    for writes in txs {
        seq = seq.next();
        batch.push_tx(record(seq.0), writes, tx_bytes(seq.0));
    }
    store.commit(&batch).unwrap();
}

fn keys_of(entries: &[(Vec<u8>, VersionedValue)]) -> Vec<&[u8]> {
    entries.iter().map(|(key, _)| key.as_slice()).collect()
}

// ---------------------------------------------------------------- durable round trips

#[test]
fn state_versions_and_deletes_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(store.get("ns", b"k").unwrap(), None);
    commit_txs(
        &store,
        vec![vec![set("ns", vec![put(b"k", b"one"), put(b"gone", b"x")])]],
    );
    commit_txs(
        &store,
        vec![
            vec![set("ns", vec![put(b"k", b"two")])],
            vec![set("ns", vec![del(b"gone"), del(b"never")])],
        ],
    );
    assert_eq!(store.height(), Seq(3));
    assert_eq!(store.get("ns", b"k").unwrap(), Some(vv(b"two", 2)));
    assert_eq!(store.get("ns", b"gone").unwrap(), None);
    assert_eq!(store.get("ns", b"never").unwrap(), None);
    assert_eq!(store.get("other", b"k").unwrap(), None);
}

#[test]
fn scans_respect_bounds_limits_and_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    let keys: [&[u8]; 6] = [b"", b"a", b"a\0", b"ab", b"b", b"\xff\xff"];
    let writes = keys.iter().map(|key| put(key, key)).collect();
    commit_txs(
        &store,
        vec![vec![
            set("n", writes),
            set("n2", vec![put(b"a", b"other ns")]),
            set("m", vec![put(b"z", b"before n")]),
        ]],
    );
    let all = store.scan("n", b"", None, usize::MAX).unwrap();
    assert_eq!(keys_of(&all), keys.to_vec());
    assert!(all.iter().all(|(key, value)| value == &vv(key, 1)));
    let some = store.scan("n", b"a", Some(b"b"), 100).unwrap();
    assert_eq!(keys_of(&some), vec![&b"a"[..], b"a\0", b"ab"]);
    let limited = store.scan("n", b"a", None, 2).unwrap();
    assert_eq!(keys_of(&limited), vec![&b"a"[..], b"a\0"]);
    assert!(store.scan("n", b"b", Some(b"a"), 10).unwrap().is_empty());
    assert!(store.scan("n", b"a", Some(b"a"), 10).unwrap().is_empty());
    assert!(store.scan("n", b"", None, 0).unwrap().is_empty());
    let tail = store.scan("n", b"b\0", None, 10).unwrap();
    assert_eq!(keys_of(&tail), vec![&b"\xff\xff"[..]]);
    let other = store.scan("n2", b"", None, 10).unwrap();
    assert_eq!(other, vec![(b"a".to_vec(), vv(b"other ns", 1))]);
    assert!(store.scan("o", b"", None, 10).unwrap().is_empty());
}

#[test]
fn namespaces_never_collide_and_bad_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    commit_txs(
        &store,
        vec![vec![
            set("a", vec![put(b"b\0c", b"in a")]),
            set("ab", vec![put(b"c", b"in ab")]),
        ]],
    );
    assert_eq!(store.get("a", b"b\0c").unwrap(), Some(vv(b"in a", 1)));
    assert_eq!(store.get("ab", b"c").unwrap(), Some(vv(b"in ab", 1)));
    assert_eq!(store.get("ab", b"\0c").unwrap(), None);
    assert_eq!(store.scan("a", b"", None, 10).unwrap().len(), 1);
    for bad in ["a\0b", "", &"n".repeat(256)] {
        assert!(matches!(
            store.get(bad, b"c"),
            Err(StoreError::BadNamespace(_))
        ));
        assert!(matches!(
            store.scan(bad, b"", None, 1),
            Err(StoreError::BadNamespace(_))
        ));
        assert!(matches!(
            store.history(bad, b"c", None, 1),
            Err(StoreError::BadNamespace(_))
        ));
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(2),
            vec![set(bad, vec![put(b"c", b"x")])],
            tx_bytes(2),
        );
        assert!(matches!(
            store.commit(&batch),
            Err(StoreError::BadNamespace(_))
        ));
    }
    assert_eq!(store.height(), Seq(1));
    assert!(store.get(&"n".repeat(255), b"c").unwrap().is_none());
}

#[test]
fn history_is_newest_first_pages_and_keeps_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    for seq in 1..=7u64 {
        let write = if seq == 4 {
            del(b"k")
        } else {
            put(b"k", format!("v{seq}").as_bytes())
        };
        // A longer key sharing the prefix, and the same key elsewhere, on every tx.
        let longer = put(b"k\0\0\0\0\0\0\0\x01", b"longer");
        commit_txs(
            &store,
            vec![vec![
                set("ns", vec![write, longer]),
                set("ns2", vec![put(b"k", b"ns2")]),
            ]],
        );
    }
    let entry = |seq: u64, value: Option<&str>| HistoryEntry {
        seq: Seq(seq),
        tx_id: tx_id(seq),
        value: value.map(|value| value.as_bytes().to_vec()),
    };
    let all = store.history("ns", b"k", None, 100).unwrap();
    let expected: Vec<HistoryEntry> = (1..=7u64)
        .rev()
        .map(|seq| entry(seq, (seq != 4).then(|| format!("v{seq}")).as_deref()))
        .collect();
    assert_eq!(all, expected);
    // Paging with `before` as the exclusive cursor.
    let first = store.history("ns", b"k", None, 3).unwrap();
    assert_eq!(first, expected[..3]);
    let next = store.history("ns", b"k", Some(first[2].seq), 3).unwrap();
    assert_eq!(next, expected[3..6]);
    let last = store.history("ns", b"k", Some(next[2].seq), 3).unwrap();
    assert_eq!(last, expected[6..]);
    assert!(
        store
            .history("ns", b"k", Some(Seq(1)), 3)
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .history("ns", b"k", Some(Seq(0)), 3)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.history("ns", b"k", Some(Seq(100)), 1).unwrap(),
        expected[..1]
    );
    assert!(store.history("ns", b"", None, 10).unwrap().is_empty());
    assert!(store.history("ns", b"k\0", None, 10).unwrap().is_empty());
    assert_eq!(store.history("ns2", b"k", None, 100).unwrap().len(), 7);
}

#[test]
fn tx_index_seals_and_height_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        assert_eq!(store.last_seal().unwrap(), None);
        let mut batch = CommitBatch::new();
        batch.push_tx(
            record(1),
            vec![set("ns", vec![put(b"k", b"v")])],
            tx_bytes(1),
        );
        batch.push_tx(
            record_with(2, ValidationCode::EndorsementPolicyFailure),
            Vec::new(),
            tx_bytes(2),
        );
        batch.push_tx(record(3), Vec::new(), tx_bytes(3));
        batch.push_seal(seal(1, 1, 1));
        batch.push_seal(seal(2, 2, 2));
        assert_eq!(batch.last_seq(), Some(Seq(3)));
        store.commit(&batch).unwrap();
        let mut seals_only = CommitBatch::new();
        seals_only.push_seal(seal(3, 3, 3));
        assert_eq!(seals_only.last_seq(), None);
        assert!(!seals_only.is_empty());
        store.commit(&seals_only).unwrap();
        assert_eq!(store.height(), Seq(3));
    }
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(store.height(), Seq(3));
    assert_eq!(store.get("ns", b"k").unwrap(), Some(vv(b"v", 1)));
    assert_eq!(store.tx(&tx_id(1)).unwrap(), Some(record(1)));
    assert_eq!(
        store.tx(&tx_id(2)).unwrap(),
        Some(record_with(2, ValidationCode::EndorsementPolicyFailure))
    );
    assert_eq!(store.tx(&tx_id(4)).unwrap(), None);
    // The invalid transaction keeps its bytes too.
    assert_eq!(store.transaction(Seq(2)).unwrap(), Some(ordered(2)));
    assert_eq!(store.seal(BlockNumber(0)).unwrap(), None);
    assert_eq!(store.seal(BlockNumber(1)).unwrap(), Some(seal(1, 1, 1)));
    assert_eq!(store.seal(BlockNumber(4)).unwrap(), None);
    assert_eq!(store.last_seal().unwrap(), Some(seal(3, 3, 3)));
    assert_eq!(
        store.seals(BlockNumber(0), 10).unwrap(),
        vec![seal(1, 1, 1), seal(2, 2, 2), seal(3, 3, 3)]
    );
    assert_eq!(store.seals(BlockNumber(2), 1).unwrap(), vec![seal(2, 2, 2)]);
    assert!(store.seals(BlockNumber(4), 10).unwrap().is_empty());
    assert!(store.seals(BlockNumber(1), 0).unwrap().is_empty());
}

#[test]
fn bad_batches_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    commit_txs(&store, vec![vec![set("ns", vec![put(b"k", b"v")])]]);
    let refuse = |seqs: &[u64]| {
        let mut batch = CommitBatch::new();
        for &seq in seqs {
            batch.push_tx(
                record(seq),
                vec![set("ns", vec![put(b"k", b"bad")])],
                b"bad".to_vec(),
            );
        }
        batch.push_seal(seal(1, 1, 1));
        store.commit(&batch).unwrap_err()
    };
    let out_of_order = |expected: u64, got: u64| StoreError::OutOfOrder {
        expected: Seq(expected),
        got: Seq(got),
    };
    assert_eq!(refuse(&[1]), out_of_order(2, 1));
    assert_eq!(refuse(&[3]), out_of_order(2, 3));
    assert_eq!(refuse(&[2, 4]), out_of_order(3, 4));
    assert_eq!(refuse(&[2, 2]), out_of_order(3, 2));
    assert_eq!(
        store.commit(&CommitBatch::new()),
        Err(StoreError::EmptyBatch)
    );
    assert!(CommitBatch::new().is_empty());
    drop(store);
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(store.height(), Seq(1));
    assert_eq!(store.get("ns", b"k").unwrap(), Some(vv(b"v", 1)));
    assert_eq!(store.history("ns", b"k", None, 10).unwrap().len(), 1);
    assert_eq!(store.tx(&tx_id(2)).unwrap(), None);
    assert_eq!(store.transaction(Seq(1)).unwrap(), Some(ordered(1)));
    assert_eq!(store.transaction(Seq(2)).unwrap(), None);
    assert_eq!(store.last_seal().unwrap(), None);
}

// ---------------------------------------------------------------- seals and transaction bytes

/// Asserts that `block_of` answers every seq up to `upto` from `sealed`, the
/// `(number, first, last)` of every durable seal.
fn check_blocks(store: &Store, sealed: &[(u64, u64, u64)], upto: u64) {
    for seq in 0..=upto {
        let expected = sealed
            .iter()
            .find(|(_, first, last)| (*first..=*last).contains(&seq))
            .map(|(number, _, _)| BlockNumber(*number));
        assert_eq!(
            store.block_of(Seq(seq)).unwrap(),
            expected,
            "block of {seq}"
        );
    }
    let seals: Vec<SealRecord> = sealed
        .iter()
        .map(|&(number, first, last)| seal(number, first, last))
        .collect();
    assert_eq!(store.seals(BlockNumber(0), usize::MAX).unwrap(), seals);
    assert_eq!(store.last_seal().unwrap(), seals.last().cloned());
}

#[test]
fn block_of_follows_the_seals_across_commits_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut sealed = Vec::new();
    {
        let store = Store::open(dir.path(), SyncMode::Data).unwrap();
        check_blocks(&store, &sealed, 3);
        // Streaming: transactions first, their seal later.
        commit_txs(&store, vec![Vec::new(); 3]);
        check_blocks(&store, &sealed, 5);
        let mut batch = CommitBatch::new();
        batch.push_seal(seal(1, 1, 2));
        store.commit(&batch).unwrap();
        sealed.push((1, 1, 2));
        check_blocks(&store, &sealed, 5);
        // Two seals in one batch, the second covering transactions of the same batch.
        let mut batch = CommitBatch::new();
        for seq in 4..=6 {
            batch.push_tx(record(seq), Vec::new(), tx_bytes(seq));
        }
        batch.push_seal(seal(2, 3, 3));
        batch.push_seal(seal(3, 4, 6));
        store.commit(&batch).unwrap();
        sealed.extend([(2, 3, 3), (3, 4, 6)]);
        check_blocks(&store, &sealed, 8);
        commit_txs(&store, vec![Vec::new(); 2]);
        check_blocks(&store, &sealed, 9);
    }
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    check_blocks(&store, &sealed, 9);
    // The chain goes on from where it stood.
    let mut batch = CommitBatch::new();
    batch.push_seal(seal(4, 7, 8));
    store.commit(&batch).unwrap();
    sealed.push((4, 7, 8));
    check_blocks(&store, &sealed, 10);
    assert_eq!(store.block_of(Seq(u64::MAX)).unwrap(), None);
    assert_eq!(
        store.seals(BlockNumber(3), 10).unwrap(),
        vec![seal(3, 4, 6), seal(4, 7, 8)]
    );
}

#[test]
fn seals_that_do_not_continue_the_chain_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();

    // No seal yet: the first is block 1 from seq 1.
    commit_txs(&store, vec![Vec::new(); 4]);
    let try_seals = |txs: Vec<u64>, seals: Vec<SealRecord>| {
        let mut batch = CommitBatch::new();
        for seq in txs {
            batch.push_tx(record(seq), Vec::new(), tx_bytes(seq));
        }
        for seal in seals {
            batch.push_seal(seal);
        }
        store.commit(&batch)
    };
    let out_of_order = |expected: u64, got: u64| StoreError::SealOutOfOrder {
        expected: BlockNumber(expected),
        got: BlockNumber(got),
    };
    let not_contiguous = |number: u64, expected: u64, got: u64| StoreError::SealNotContiguous {
        number: BlockNumber(number),
        expected: Seq(expected),
        got: Seq(got),
    };
    let range = |number: u64, first: u64, last: u64, height: u64| StoreError::SealRange {
        number: BlockNumber(number),
        first: Seq(first),
        last: Seq(last),
        height: Seq(height),
    };
    let first_refusals = [
        (vec![], vec![seal(0, 1, 1)], out_of_order(1, 0)),
        (vec![], vec![seal(2, 1, 1)], out_of_order(1, 2)),
        (vec![], vec![seal(1, 2, 2)], not_contiguous(1, 1, 2)),
        (vec![], vec![seal(1, 0, 2)], not_contiguous(1, 1, 0)),
    ];
    for (txs, seals, error) in first_refusals {
        assert_eq!(try_seals(txs, seals), Err(error));
        check_blocks(&store, &[], 5);
    }

    let mut batch = CommitBatch::new();
    batch.push_seal(seal(1, 1, 2));
    store.commit(&batch).unwrap();
    let refusals = [
        // A gap in the numbers, or a number again.
        (vec![], vec![seal(3, 3, 4)], out_of_order(2, 3)),
        (vec![], vec![seal(1, 3, 4)], out_of_order(2, 1)),
        // A gap in the seqs, or an overlap with the last seal.
        (vec![], vec![seal(2, 4, 4)], not_contiguous(2, 3, 4)),
        (vec![], vec![seal(2, 2, 4)], not_contiguous(2, 3, 2)),
        // Empty, or beyond the height, with or without transactions in the batch.
        (vec![], vec![seal(2, 3, 2)], range(2, 3, 2, 4)),
        (vec![], vec![seal(2, 3, 5)], range(2, 3, 5, 4)),
        (vec![5], vec![seal(2, 3, 6)], range(2, 3, 6, 5)),
        // A good seal followed by a bad one in the same batch: neither is written.
        (
            vec![5, 6],
            vec![seal(2, 3, 4), seal(3, 6, 6)],
            not_contiguous(3, 5, 6),
        ),
        (
            vec![5, 6],
            vec![seal(2, 3, 4), seal(2, 5, 6)],
            out_of_order(3, 2),
        ),
    ];
    for (txs, seals, error) in refusals {
        assert_eq!(try_seals(txs, seals), Err(error));
        assert_eq!(store.height(), Seq(4));
        assert_eq!(store.tx(&tx_id(5)).unwrap(), None);
        assert_eq!(store.transaction(Seq(5)).unwrap(), None);
        check_blocks(&store, &[(1, 1, 2)], 6);
    }
    drop(store);

    // Nothing of it after a reopen either, and the chain goes on from block 1.
    let store = Store::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(store.height(), Seq(4));
    check_blocks(&store, &[(1, 1, 2)], 6);
    drop(store);

    // Through the world state: a refused commit leaves the transactions staged.
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(&world, Vec::new());
    assert_eq!(
        world.commit_staged(Seq(5), vec![seal(2, 3, 6)]),
        Err(range(2, 3, 6, 5))
    );
    assert_eq!(world.durable_height(), Seq(4));
    assert_eq!(world.staged_height(), Seq(5));
    assert_eq!(world.transaction(Seq(5)).unwrap(), Some(ordered(5)));
    world
        .commit_staged(Seq(5), vec![seal(2, 3, 4), seal(3, 5, 5)])
        .unwrap();
    assert_eq!(world.store().transaction(Seq(5)).unwrap(), Some(ordered(5)));
    assert_eq!(world.tx(&tx_id(5)).unwrap(), Some(record(5)));
    check_blocks(world.store(), &[(1, 1, 2), (2, 3, 4), (3, 5, 5)], 6);
}

#[test]
fn transaction_bytes_go_from_staged_to_durable_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let all = |seqs: std::ops::RangeInclusive<u64>| -> Vec<TxBytes> {
        seqs.map(|seq| ordered_as(seq, if seq == 3 { Vec::new() } else { tx_bytes(seq) }))
            .collect()
    };
    {
        let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
        stage(&world, vec![set("ns", vec![put(b"k", b"v")])]);
        world
            .stage(
                record_with(2, ValidationCode::MvccReadConflict),
                &[set("ns", vec![put(b"k", b"no")])],
                tx_bytes(2),
            )
            .unwrap();
        // Empty bytes are kept as such, told apart from none.
        world.stage(record(3), &[], Vec::new()).unwrap();
        // Visible through the world state at once, not yet in the store.
        for tx in all(1..=3) {
            assert_eq!(world.store().transaction(tx.seq).unwrap(), None);
            assert_eq!(world.transaction(tx.seq).unwrap(), Some(tx));
        }
        assert_eq!(world.transaction(Seq(0)).unwrap(), None);
        assert_eq!(world.transaction(Seq(4)).unwrap(), None);
        assert_eq!(world.transactions(Seq(0), 10).unwrap(), all(1..=3));
        assert!(world.store().transactions(Seq(0), 10).unwrap().is_empty());

        world.commit_staged(Seq(2), Vec::new()).unwrap();
        // Durable 1..=2, staged 3: one answer across both.
        for tx in all(1..=2) {
            assert_eq!(world.store().transaction(tx.seq).unwrap(), Some(tx));
        }
        assert_eq!(world.store().transaction(Seq(3)).unwrap(), None);
        assert_eq!(
            world.transaction(Seq(3)).unwrap(),
            Some(ordered_as(3, Vec::new()))
        );
        assert_eq!(world.transactions(Seq(0), 10).unwrap(), all(1..=3));
        assert_eq!(world.transactions(Seq(2), 10).unwrap(), all(2..=3));
        assert_eq!(world.transactions(Seq(1), 2).unwrap(), all(1..=2));
        assert_eq!(world.transactions(Seq(3), 10).unwrap(), all(3..=3));
        assert!(world.transactions(Seq(4), 10).unwrap().is_empty());
        assert!(world.transactions(Seq(1), 0).unwrap().is_empty());
        assert_eq!(world.store().transactions(Seq(0), 10).unwrap(), all(1..=2));
        assert_eq!(world.store().transactions(Seq(2), 10).unwrap(), all(2..=2));

        world.commit_staged(Seq(3), vec![seal(1, 1, 3)]).unwrap();
        assert_eq!(world.store().transactions(Seq(1), 10).unwrap(), all(1..=3));
        // Staged only: gone after the reopen.
        stage(&world, Vec::new());
        assert_eq!(world.transaction(Seq(4)).unwrap(), Some(ordered(4)));
    }
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(world.durable_height(), Seq(3));
    for tx in all(1..=3) {
        assert_eq!(world.transaction(tx.seq).unwrap(), Some(tx.clone()));
        assert_eq!(world.store().transaction(tx.seq).unwrap(), Some(tx));
    }
    assert_eq!(world.transaction(Seq(4)).unwrap(), None);
    assert_eq!(world.transactions(Seq(0), usize::MAX).unwrap(), all(1..=3));
    assert_eq!(
        world.store().block_of(Seq(3)).unwrap(),
        Some(BlockNumber(1))
    );
}

// ---------------------------------------------------------------- the staged overlay

/// Stages one valid transaction at the next seq.
fn stage(world: &WorldState, writes: Vec<NsRwSet>) -> Seq {
    let seq = world.staged_height().next();
    world
        .stage(record(seq.0), &writes, tx_bytes(seq.0))
        .unwrap();
    seq
}

#[test]
fn staged_writes_are_seen_by_new_snapshots_only() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(&world, vec![set("ns", vec![put(b"k", b"one")])]);
    let before = world.snapshot();
    let seq = stage(
        &world,
        vec![set("ns", vec![put(b"k", b"two"), put(b"new", b"n")])],
    );
    let after = world.snapshot();
    assert_eq!(
        (world.durable_height(), world.staged_height()),
        (Seq::ZERO, seq)
    );
    assert_eq!(before.height(), Seq(1));
    assert_eq!(after.height(), Seq(2));
    assert_eq!(before.get("ns", b"k").unwrap(), Some(vv(b"one", 1)));
    assert_eq!(before.get("ns", b"new").unwrap(), None);
    assert_eq!(after.get("ns", b"k").unwrap(), Some(vv(b"two", 2)));
    assert_eq!(after.get("ns", b"new").unwrap(), Some(vv(b"n", 2)));
    assert_eq!(world.store().get("ns", b"k").unwrap(), None);
    // The StateView of one namespace answers the same.
    let view = after.view("ns");
    assert_eq!(view.get(b"k").unwrap(), Some(vv(b"two", 2)));
    assert_eq!(view.scan(b"", None, 10).unwrap().len(), 2);
    assert!(before.view("bad\0ns").get(b"k").is_err());
}

#[test]
fn old_snapshots_keep_their_answers_after_newer_writes_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(
        &world,
        vec![set("ns", vec![put(b"k", b"one"), put(b"del", b"d")])],
    );
    world.commit_staged(Seq(1), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
    // `k` is now only in sled, with no chain.
    let old = world.snapshot();
    stage(
        &world,
        vec![set(
            "ns",
            vec![put(b"k", b"two"), del(b"del"), put(b"created", b"c")],
        )],
    );
    world.commit_staged(Seq(2), Vec::new()).unwrap();
    // The old snapshot holds the pruning floor at 1: the bases stay.
    assert_eq!(world.staged_keys(), 3);
    assert_eq!(old.get("ns", b"k").unwrap(), Some(vv(b"one", 1)));
    assert_eq!(old.get("ns", b"del").unwrap(), Some(vv(b"d", 1)));
    assert_eq!(old.get("ns", b"created").unwrap(), None);
    let old_scan = old.scan("ns", b"", None, 10).unwrap();
    assert_eq!(keys_of(&old_scan), vec![&b"del"[..], b"k"]);
    let clone = old.clone();
    drop(old);
    // More commits while a clone still holds the height.
    stage(&world, vec![set("ns", vec![put(b"k", b"three")])]);
    world.commit_staged(Seq(3), Vec::new()).unwrap();
    assert_eq!(clone.get("ns", b"k").unwrap(), Some(vv(b"one", 1)));
    let new = world.snapshot();
    assert_eq!(new.get("ns", b"k").unwrap(), Some(vv(b"three", 3)));
    assert_eq!(new.get("ns", b"del").unwrap(), None);
    drop(clone);
    drop(new);
    // With no snapshot held, a commit (or an empty one) prunes everything durable.
    world.commit_staged(Seq(3), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
    assert_eq!(
        world.snapshot().get("ns", b"k").unwrap(),
        Some(vv(b"three", 3))
    );
}

#[test]
fn snapshot_scans_merge_staged_inserts_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    let writes = [b"a", b"c", b"e", b"g"]
        .iter()
        .map(|key| put(*key, b"durable"))
        .collect();
    stage(
        &world,
        vec![set("ns", writes), set("nt", vec![put(b"b", b"other")])],
    );
    world.commit_staged(Seq(1), Vec::new()).unwrap();
    let durable_only = world.snapshot();
    stage(
        &world,
        vec![set(
            "ns",
            vec![
                put(b"b", b"staged"),
                del(b"c"),
                put(b"e", b"changed"),
                put(b"h", b"x"),
            ],
        )],
    );
    let merged = world.snapshot();
    let entries = merged.scan("ns", b"", None, 100).unwrap();
    assert_eq!(
        entries,
        vec![
            (b"a".to_vec(), vv(b"durable", 1)),
            (b"b".to_vec(), vv(b"staged", 2)),
            (b"e".to_vec(), vv(b"changed", 2)),
            (b"g".to_vec(), vv(b"durable", 1)),
            (b"h".to_vec(), vv(b"x", 2)),
        ]
    );
    assert_eq!(
        keys_of(&merged.scan("ns", b"b", Some(b"g"), 100).unwrap()),
        vec![&b"b"[..], b"e"]
    );
    assert_eq!(
        keys_of(&merged.scan("ns", b"a", None, 3).unwrap()),
        vec![&b"a"[..], b"b", b"e"]
    );
    assert_eq!(
        keys_of(&merged.scan("ns", b"c", Some(b"d"), 3).unwrap()),
        Vec::<&[u8]>::new()
    );
    let old = durable_only.scan("ns", b"", None, 100).unwrap();
    assert_eq!(keys_of(&old), vec![&b"a"[..], b"c", b"e", b"g"]);
    // Once durable, the same answers.
    world.commit_staged(Seq(2), Vec::new()).unwrap();
    assert_eq!(
        world.snapshot().scan("ns", b"", None, 100).unwrap(),
        entries
    );
    assert_eq!(durable_only.scan("ns", b"", None, 100).unwrap(), old);
    assert_eq!(
        world.snapshot().scan("nt", b"", None, 100).unwrap().len(),
        1
    );
}

#[test]
fn invalid_transactions_leave_state_alone_but_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(&world, vec![set("ns", vec![put(b"k", b"v")])]);
    let invalid = record_with(2, ValidationCode::MvccReadConflict);
    world
        .stage(
            invalid.clone(),
            &[set("ns", vec![put(b"k", b"no"), put(b"x", b"no")])],
            tx_bytes(2),
        )
        .unwrap();
    assert_eq!(world.staged_height(), Seq(2));
    assert_eq!(world.tx(&tx_id(2)).unwrap(), Some(invalid.clone()));
    assert_eq!(world.tx(&tx_id(1)).unwrap(), Some(record(1)));
    assert_eq!(world.tx(&tx_id(3)).unwrap(), None);
    assert_eq!(world.store().tx(&tx_id(2)).unwrap(), None);
    let snapshot = world.snapshot();
    assert_eq!(snapshot.get("ns", b"k").unwrap(), Some(vv(b"v", 1)));
    assert_eq!(snapshot.get("ns", b"x").unwrap(), None);
    assert_eq!(world.transaction(Seq(2)).unwrap(), Some(ordered(2)));
    world.commit_staged(Seq(2), vec![seal(1, 1, 2)]).unwrap();
    assert_eq!(world.tx(&tx_id(2)).unwrap(), Some(invalid.clone()));
    assert_eq!(world.store().tx(&tx_id(2)).unwrap(), Some(invalid));
    assert_eq!(world.store().get("ns", b"x").unwrap(), None);
    assert_eq!(
        world.store().history("ns", b"k", None, 10).unwrap().len(),
        1
    );
    assert_eq!(
        world.store().seal(BlockNumber(1)).unwrap(),
        Some(seal(1, 1, 2))
    );
    assert_eq!(world.store().transaction(Seq(2)).unwrap(), Some(ordered(2)));
    assert_eq!(
        world.store().block_of(Seq(2)).unwrap(),
        Some(BlockNumber(1))
    );
}

#[test]
fn system_records_kept_in_memory_follow_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    let get = |snapshot: &runnel_ledger::store::Snapshot, key: &[u8]| {
        snapshot.get("_lifecycle", key).unwrap()
    };
    stage(&world, vec![set("_lifecycle", vec![put(b"def", b"one")])]);
    world.commit_staged(Seq(1), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
    // Only in sled now: the first reads keep what they find, the next answer from it.
    for _ in 0..2 {
        assert_eq!(get(&world.snapshot(), b"def"), Some(vv(b"one", 1)));
        assert_eq!(get(&world.snapshot(), b"absent"), None);
    }
    let old = world.snapshot();
    stage(
        &world,
        vec![set(
            "_lifecycle",
            vec![put(b"def", b"two"), put(b"absent", b"now")],
        )],
    );
    assert_eq!(get(&world.snapshot(), b"def"), Some(vv(b"two", 2)));
    assert_eq!(get(&old, b"def"), Some(vv(b"one", 1)));
    world.commit_staged(Seq(2), Vec::new()).unwrap();
    drop(old);
    // Pruned: read from the store again, newest versions.
    world.commit_staged(Seq(2), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
    assert_eq!(get(&world.snapshot(), b"def"), Some(vv(b"two", 2)));
    assert_eq!(get(&world.snapshot(), b"absent"), Some(vv(b"now", 2)));
    stage(&world, vec![set("_lifecycle", vec![del(b"def")])]);
    world.commit_staged(Seq(3), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
    assert_eq!(get(&world.snapshot(), b"def"), None);
    // After a reopen, from the store.
    drop(world);
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(get(&world.snapshot(), b"def"), None);
    assert_eq!(get(&world.snapshot(), b"absent"), Some(vv(b"now", 2)));
}

#[test]
fn a_duplicate_tx_id_never_replaces_the_first_record() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(&world, Vec::new());
    let mut duplicate = record_with(2, ValidationCode::DuplicateTxid);
    duplicate.tx_id = tx_id(1);
    world.stage(duplicate.clone(), &[], tx_bytes(2)).unwrap();
    assert_eq!(world.tx(&tx_id(1)).unwrap(), Some(record(1)));
    world.commit_staged(Seq(1), Vec::new()).unwrap();
    duplicate.seq = Seq(3);
    duplicate.timestamp_ms = 42;
    world.stage(duplicate, &[], tx_bytes(3)).unwrap();
    assert_eq!(world.tx(&tx_id(1)).unwrap(), Some(record(1)));
    world.commit_staged(Seq(3), Vec::new()).unwrap();
    assert_eq!(world.tx(&tx_id(1)).unwrap(), Some(record(1)));
    // Each seq keeps the orderer's timestamp it came with, a duplicate's too.
    assert_eq!(
        world.store().transactions(Seq(1), 10).unwrap(),
        vec![
            ordered(1),
            ordered(2),
            TxBytes {
                timestamp_ms: 42,
                ..ordered(3)
            },
        ]
    );
}

#[test]
fn staging_and_committing_check_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    let refused = world.stage(record(2), &[], tx_bytes(2)).unwrap_err();
    assert_eq!(
        refused,
        StoreError::OutOfOrder {
            expected: Seq(1),
            got: Seq(2)
        }
    );
    let bad = [set("a\0b", vec![put(b"k", b"v")])];
    assert!(matches!(
        world.stage(record(1), &bad, tx_bytes(1)),
        Err(StoreError::BadNamespace(_))
    ));
    assert_eq!(world.staged_height(), Seq::ZERO);
    assert_eq!(world.tx(&tx_id(1)).unwrap(), None);
    assert_eq!(world.transaction(Seq(1)).unwrap(), None);
    stage(&world, vec![set("ns", vec![put(b"k", b"v")])]);
    stage(&world, Vec::new());
    assert!(matches!(
        world.commit_staged(Seq(3), Vec::new()),
        Err(StoreError::CommitRange { .. })
    ));
    world.commit_staged(Seq(1), Vec::new()).unwrap();
    assert!(matches!(
        world.commit_staged(Seq(0), Vec::new()),
        Err(StoreError::CommitRange { .. })
    ));
    world.commit_staged(Seq(2), Vec::new()).unwrap();
    assert_eq!(world.durable_height(), Seq(2));
    drop(world);
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    assert_eq!(
        (world.durable_height(), world.staged_height()),
        (Seq(2), Seq(2))
    );
    assert_eq!(world.snapshot().get("ns", b"k").unwrap(), Some(vv(b"v", 1)));
}

#[test]
fn world_state_and_snapshots_are_shareable() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<WorldState>();
    shareable::<Snapshot>();
    shareable::<Store>();
}

// ---------------------------------------------------------------- readers racing a writer

/// Every transaction writes `a` and `b` of namespace `pair` to its seq (every fifth one
/// deletes both), plus a spread of other keys. So at any height `h`, a consistent view has
/// `a == b == h`, or neither when `h` is a multiple of five.
fn pair_writes(seq: u64) -> Vec<NsRwSet> {
    let pair = if seq.is_multiple_of(5) {
        vec![del(b"a"), del(b"b")]
    } else {
        let value = seq.to_be_bytes();
        vec![put(b"a", &value), put(b"b", &value)]
    };
    let spread = format!("k{:03}", seq % 97);
    vec![
        set("pair", pair),
        set("spread", vec![put(spread.as_bytes(), &seq.to_be_bytes())]),
    ]
}

fn check_pair(snapshot: &Snapshot) {
    let height = snapshot.height().0;
    let a = snapshot.get("pair", b"a").unwrap();
    let b = snapshot.get("pair", b"b").unwrap();
    let expected = (!height.is_multiple_of(5)).then(|| vv(&height.to_be_bytes(), height));
    assert_eq!(a, expected, "a at height {height}");
    assert_eq!(b, expected, "b at height {height}");
    let scan = snapshot.scan("pair", b"", None, 10).unwrap();
    let expected_scan: Vec<_> = expected
        .iter()
        .flat_map(|value| {
            [
                (b"a".to_vec(), value.clone()),
                (b"b".to_vec(), value.clone()),
            ]
        })
        .collect();
    assert_eq!(scan, expected_scan, "scan at height {height}");
    // Nothing written after the snapshot shows in the spread namespace either.
    for (_, value) in snapshot.scan("spread", b"", None, 200).unwrap() {
        assert!(value.version.seq <= height);
    }
}

#[test]
fn concurrent_readers_always_see_a_consistent_height() {
    const TXS: u64 = 3_000;
    const READERS: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let world = Arc::new(WorldState::open(dir.path(), SyncMode::Data).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..READERS)
        .map(|reader| {
            let world = Arc::clone(&world);
            let done = Arc::clone(&done);
            thread::spawn(move || {
                let mut held = VecDeque::new();
                let mut checks = 0u64;
                while !done.load(Ordering::Acquire) {
                    let snapshot = world.snapshot();
                    check_pair(&snapshot);
                    // Hold a few snapshots across commits and read them again later.
                    held.push_back(snapshot);
                    if held.len() > 4 + reader * 3
                        && let Some(old) = held.pop_front()
                    {
                        check_pair(&old);
                    }
                    checks += 1;
                }
                for old in &held {
                    check_pair(old);
                }
                checks
            })
        })
        .collect();
    for seq in 1..=TXS {
        world
            .stage(record(seq), &pair_writes(seq), tx_bytes(seq))
            .unwrap();
        if seq % 7 == 0 || seq == TXS {
            world.commit_staged(Seq(seq), Vec::new()).unwrap();
        }
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        let checks = reader.join().unwrap();
        assert!(checks > 0);
    }
    check_pair(&world.snapshot());
    world.commit_staged(Seq(TXS), Vec::new()).unwrap();
    assert_eq!(world.staged_keys(), 0);
}

// ---------------------------------------------------------------- random operations

const MODEL_NAMESPACES: [&str; 2] = ["a", "ab"];
const MODEL_KEYS: [&[u8]; 6] = [b"", b"a", b"a\0", b"ab", b"b", b"\xff"];

/// State at one height: (namespace, key) -> (value, seq).
type ModelState = BTreeMap<(usize, Vec<u8>), (Vec<u8>, u64)>;

#[derive(Debug, Clone)]
enum Op {
    /// Stage a transaction: (namespace, key, value or delete) writes, valid or not.
    Stage(Vec<(usize, usize, Option<u8>)>, bool),
    /// Commit some of what is staged (the index picks how many), with up to this many
    /// seals over what is not sealed yet.
    Commit(Index, usize),
    /// Take a snapshot.
    Snapshot,
    /// Drop a held snapshot.
    Release(Index),
    /// Check a held snapshot against the model: every key, a full scan, a bounded scan.
    Check(Index, usize, usize, usize),
    /// Drop everything and reopen: what was only staged is gone.
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let write = (
        0..MODEL_NAMESPACES.len(),
        0..MODEL_KEYS.len(),
        proptest::option::of(any::<u8>()),
    );
    prop_oneof![
        6 => (proptest::collection::vec(write, 0..4), proptest::bool::weighted(0.8))
            .prop_map(|(writes, valid)| Op::Stage(writes, valid)),
        3 => (any::<Index>(), 0usize..3).prop_map(|(index, seals)| Op::Commit(index, seals)),
        3 => Just(Op::Snapshot),
        2 => any::<Index>().prop_map(Op::Release),
        5 => (any::<Index>(), 0..MODEL_KEYS.len(), 0..MODEL_KEYS.len() + 1, 0usize..4)
            .prop_map(|(index, start, end, limit)| Op::Check(index, start, end, limit)),
        1 => Just(Op::Reopen),
    ]
}

fn check_against_model(
    snapshot: &Snapshot,
    model: &ModelState,
    start: usize,
    end: usize,
    limit: usize,
) {
    for (ns_index, ns) in MODEL_NAMESPACES.iter().enumerate() {
        let expected_of = |key: &[u8]| {
            model
                .get(&(ns_index, key.to_vec()))
                .map(|(value, seq)| vv(value, *seq))
        };
        for key in MODEL_KEYS {
            assert_eq!(
                snapshot.get(ns, key).unwrap(),
                expected_of(key),
                "{ns} {key:?}"
            );
        }
        let all: Vec<_> = model
            .iter()
            .filter(|((index, _), _)| *index == ns_index)
            .map(|((_, key), (value, seq))| (key.clone(), vv(value, *seq)))
            .collect();
        assert_eq!(snapshot.scan(ns, b"", None, usize::MAX).unwrap(), all);
        let start_key = MODEL_KEYS[start];
        let end_key = MODEL_KEYS.get(end).copied();
        let bounded: Vec<_> = all
            .iter()
            .filter(|(key, _)| {
                key.as_slice() >= start_key && end_key.is_none_or(|end| key.as_slice() < end)
            })
            .take(limit)
            .cloned()
            .collect();
        assert_eq!(
            snapshot.scan(ns, start_key, end_key, limit).unwrap(),
            bounded
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    })]

    #[test]
    fn snapshots_match_a_model_of_every_height(ops in proptest::collection::vec(op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let mut world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
        // states[h]: the state after transaction h.
        let mut states: Vec<ModelState> = vec![ModelState::new()];
        let mut held: Vec<Snapshot> = Vec::new();
        // bytes[s - 1]: the bytes staged as transaction s.
        let mut bytes: Vec<Vec<u8>> = Vec::new();
        // Every durable seal, as (first, last); block n is seals[n - 1].
        let mut seals: Vec<(u64, u64)> = Vec::new();
        let mut stagings = 0u64;
        for op in ops {
            match op {
                Op::Stage(writes, valid) => {
                    let seq = states.len() as u64;
                    let mut next = states[states.len() - 1].clone();
                    let mut sets: Vec<NsRwSet> = Vec::new();
                    for (ns, key, value) in writes {
                        let key = MODEL_KEYS[key];
                        let write = match value {
                            Some(byte) => put(key, &[byte]),
                            None => del(key),
                        };
                        if valid {
                            match value {
                                Some(byte) => next.insert((ns, key.to_vec()), (vec![byte], seq)),
                                None => next.remove(&(ns, key.to_vec())),
                            };
                        }
                        sets.push(set(MODEL_NAMESPACES[ns], vec![write]));
                    }
                    let code = if valid { ValidationCode::Valid } else { ValidationCode::MvccReadConflict };
                    // Bytes never staged before, so a stale transaction cannot pass.
                    stagings += 1;
                    let staged_bytes = format!("{seq}/{stagings}").into_bytes();
                    world.stage(record_with(seq, code), &sets, staged_bytes.clone()).unwrap();
                    states.push(next);
                    bytes.push(staged_bytes);
                }
                Op::Commit(index, count) => {
                    let durable = world.durable_height().0;
                    let staged = world.staged_height().0;
                    let through = durable + index.index((staged - durable + 1) as usize) as u64;
                    // Up to `count` seals over what is unsealed through `through`: one
                    // transaction each, the last one taking the rest.
                    let mut first = seals.last().map_or(1, |(_, last)| last + 1);
                    let count = count.min((through + 1 - first) as usize);
                    let mut new_seals = Vec::new();
                    for n in 0..count {
                        let last = if n + 1 == count { through } else { first };
                        new_seals.push((first, last));
                        first = last + 1;
                    }
                    let records = new_seals
                        .iter()
                        .enumerate()
                        .map(|(n, &(first, last))| seal((seals.len() + n + 1) as u64, first, last))
                        .collect();
                    world.commit_staged(Seq(through), records).unwrap();
                    seals.extend(new_seals);
                    prop_assert_eq!(world.durable_height(), Seq(through));
                }
                Op::Snapshot => held.push(world.snapshot()),
                Op::Release(index) => {
                    if !held.is_empty() {
                        held.remove(index.index(held.len()));
                    }
                }
                Op::Check(index, start, end, limit) => {
                    let snapshot = if held.is_empty() {
                        world.snapshot()
                    } else {
                        held[index.index(held.len())].clone()
                    };
                    let height = snapshot.height().0 as usize;
                    check_against_model(&snapshot, &states[height], start, end, limit);
                    let from = start as u64;
                    let expected: Vec<TxBytes> = bytes
                        .iter()
                        .enumerate()
                        .map(|(i, b)| ordered_as(i as u64 + 1, b.clone()))
                        .filter(|tx| tx.seq.0 >= from)
                        .take(limit)
                        .collect();
                    prop_assert_eq!(world.transactions(Seq(from), limit).unwrap(), expected);
                }
                Op::Reopen => {
                    held.clear();
                    drop(world);
                    world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
                    states.truncate(world.durable_height().0 as usize + 1);
                    bytes.truncate(world.durable_height().0 as usize);
                    prop_assert_eq!(world.staged_height(), world.durable_height());
                    let last_seal = world.store().last_seal().unwrap();
                    prop_assert_eq!(last_seal.map_or(0, |seal| seal.number.0), seals.len() as u64);
                }
            }
            // Transaction bytes: staged or durable through the world state, durable only
            // through the store. Blocks: as the durable seals say.
            let durable = world.durable_height().0;
            let staged = world.staged_height().0;
            for seq in 0..=staged + 1 {
                let expected = seq
                    .checked_sub(1)
                    .and_then(|i| bytes.get(i as usize))
                    .map(|b| ordered_as(seq, b.clone()));
                prop_assert_eq!(world.transaction(Seq(seq)).unwrap(), expected.clone());
                let durable_bytes = expected.filter(|_| seq <= durable);
                prop_assert_eq!(world.store().transaction(Seq(seq)).unwrap(), durable_bytes);
                let block = seals
                    .iter()
                    .position(|(first, last)| (*first..=*last).contains(&seq))
                    .map(|n| BlockNumber(n as u64 + 1));
                prop_assert_eq!(world.store().block_of(Seq(seq)).unwrap(), block);
            }
            prop_assert_eq!(world.transactions(Seq::ZERO, usize::MAX).unwrap().len(), bytes.len());
            prop_assert_eq!(
                world.store().transactions(Seq::ZERO, usize::MAX).unwrap().len() as u64,
                durable
            );
            // The durable store always matches the model at the durable height.
            let durable = durable as usize;
            for ((ns, key), (value, seq)) in &states[durable] {
                prop_assert_eq!(world.store().get(MODEL_NAMESPACES[*ns], key).unwrap(), Some(vv(value, *seq)));
            }
            let stored: usize = MODEL_NAMESPACES
                .iter()
                .map(|ns| world.store().scan(ns, b"", None, usize::MAX).unwrap().len())
                .sum();
            prop_assert_eq!(stored, states[durable].len());
        }
        // With nothing held and everything committed, the overlay empties.
        held.clear();
        let staged = world.staged_height();
        world.commit_staged(staged, Vec::new()).unwrap();
        prop_assert_eq!(world.staged_keys(), 0);
        check_against_model(&world.snapshot(), &states[staged.0 as usize], 0, MODEL_KEYS.len(), usize::MAX);
    }
}

#[test]
fn the_state_hash_of_staged_state_is_the_durable_hash_it_commits_to() {
    let dir = tempfile::tempdir().unwrap();
    let world = WorldState::open(dir.path(), SyncMode::Data).unwrap();
    stage(
        &world,
        vec![set("kv", vec![put(b"a", b"1"), put(b"b", &[7; 100])])],
    );
    world
        .commit_staged(world.staged_height(), Vec::new())
        .unwrap();
    stage(&world, vec![set("kv", vec![put(b"c", b"3"), del(b"a")])]);
    stage(&world, vec![set("other", vec![put(b"a", b"x")])]);
    // Staged, not durable: the digest is of height 3 and sees its writes.
    let staged = world.state_hash().unwrap();
    assert_eq!(staged.0, Seq(3));
    assert_eq!(staged.2, 3, "kv/b, kv/c, other/a");
    assert_eq!(
        world.state_hash().unwrap(),
        staged,
        "kept while the height stays"
    );
    world.commit_staged(Seq(3), Vec::new()).unwrap();
    assert_eq!(world.store().state_hash().unwrap(), staged);
    stage(&world, vec![set("kv", vec![put(b"d", b"4")])]);
    let next = world.state_hash().unwrap();
    assert_eq!((next.0, next.2), (Seq(4), 4));
    assert_ne!(next.1, staged.1);
}
