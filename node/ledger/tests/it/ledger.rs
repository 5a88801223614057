//! The embeddable ledger end to end: every role in one process on a real directory.

use prost::Message;
use runnel_ledger::identity::{NetworkKeys, Role, Signer};
use runnel_ledger::ids::{Seq, ValidationCode};
use runnel_ledger::ledger::{Ledger, LedgerConfig, LedgerError, ProposalAnswer, ProposalCall};
use runnel_ledger::store::EventAt;
use runnel_ledger::trace::Stage;
use runnel_ledger::tx;

use runnel_testing::{kv_wasm, token_wasm};

/// Org1's identity with `role`, from the ledger's directory, as an embedder loads it.
fn ledger_signer(dir: &std::path::Path, role: Role) -> Signer {
    NetworkKeys::load(dir)
        .unwrap()
        .signer("Org1", role)
        .unwrap()
        .clone()
}

fn config(orgs: &[&str]) -> LedgerConfig {
    let mut config = LedgerConfig {
        orgs: orgs.iter().map(|o| o.to_string()).collect(),
        ..LedgerConfig::default()
    };
    config.runtime.instances_max = 8;
    config.orderer.seal_max_delay = std::time::Duration::from_millis(20);
    config
}

#[test]
fn deploy_submit_evaluate_trace_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let client_cert;
    {
        let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
        client_cert = ledger_signer(dir.path(), Role::Client).cert_der().to_vec();
        let definition = ledger.deploy("kv", "1.0", kv_wasm(), "").unwrap();
        assert_eq!((definition.name.as_str(), definition.sequence), ("kv", 1));

        let mut blocks = ledger.blocks();
        let committed = ledger.submit("kv", "put", &[b"colour", b"blue"]).unwrap();
        assert_eq!(committed.seq, Seq(2));
        assert_eq!(committed.result, b"null");
        assert_eq!(
            ledger.evaluate("kv", "get", &[b"colour"]).unwrap(),
            b"\"blue\""
        );

        // Every stage of the flow, endorsement to notification, in order.
        let trace = ledger.trace(&committed.tx_id).unwrap();
        let stages: Vec<Stage> = trace.stages().iter().map(|(s, _)| *s).collect();
        assert_eq!(stages, Stage::ALL);
        let stamps: Vec<u64> = trace.stages().iter().map(|(_, at)| *at).collect();
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");

        // Sealed within the seal delay; the record then names its block.
        let block = blocks.blocking_recv().unwrap();
        assert!(block.first <= Seq(2));
        let mut sealed = block.last >= Seq(2);
        while !sealed {
            sealed = blocks.blocking_recv().unwrap().last >= Seq(2);
        }
        let (record, number) = ledger
            .reader()
            .transaction(&committed.tx_id)
            .unwrap()
            .unwrap();
        assert_eq!((record.seq, record.code), (Seq(2), ValidationCode::Valid));
        assert!(number.is_some());

        // Inclusion: the proof checks against the seal, and not for another transaction.
        let proof = ledger.reader().prove(&committed.tx_id).unwrap().unwrap();
        runnel_ledger::block::verify_proof(&proof.proof, &proof.transaction, &proof.seal.seal)
            .unwrap();
        let mut other = proof.transaction.clone();
        other.push(0);
        assert!(
            runnel_ledger::block::verify_proof(&proof.proof, &other, &proof.seal.seal).is_err()
        );
        // The proof carries the orderer's timestamp of the transaction, which its leaf
        // holds: the record's, and no other.
        assert_eq!(proof.proof.timestamp_ms, record.timestamp_ms);
        let retimed = runnel_ledger::proto::InclusionProof {
            timestamp_ms: record.timestamp_ms + 1,
            ..proof.proof.clone()
        };
        assert!(
            runnel_ledger::block::verify_proof(&retimed, &proof.transaction, &proof.seal.seal)
                .is_err()
        );
        ledger.close();
    }
    let ledger = Ledger::open(dir.path(), config(&["ignored on reopen"])).unwrap();
    assert_eq!(
        ledger_signer(dir.path(), Role::Client).cert_der(),
        client_cert.as_slice()
    );
    assert_eq!(
        ledger.evaluate("kv", "get", &[b"colour"]).unwrap(),
        b"\"blue\""
    );
    assert_eq!(
        ledger
            .submit("kv", "put", &[b"colour", b"red"])
            .unwrap()
            .seq,
        Seq(3)
    );

    // A key's history gives back large values exactly, and after a reopen (the store keeps
    // them once, in the transactions, and points at them).
    let big: Vec<Vec<u8>> = (0..3u8).map(|i| vec![b'a' + i; 1500]).collect();
    for value in &big {
        ledger.submit("kv", "put", &[b"big", value]).unwrap();
    }
    let history = |ledger: &Ledger| -> Vec<Vec<u8>> {
        ledger
            .reader()
            .key_history("kv", b"big", None, 10)
            .unwrap()
            .into_iter()
            .map(|entry| entry.value.unwrap())
            .collect()
    };
    let newest_first: Vec<Vec<u8>> = big.iter().rev().cloned().collect();
    assert_eq!(history(&ledger), newest_first);
    ledger.close();
    drop(ledger);
    let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
    assert_eq!(history(&ledger), newest_first);
}

#[test]
fn a_peer_store_moved_away_is_rebuilt_from_the_orderers_log_events_and_all() {
    let dir = tempfile::tempdir().unwrap();
    let start = EventAt {
        seq: Seq(1),
        index: 0,
    };
    let (events, height) = {
        let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
        ledger.deploy("token", "1", token_wasm(), "").unwrap();
        ledger.deploy("kv", "1", kv_wasm(), "").unwrap();
        let admin = ledger_signer(dir.path(), Role::Admin);
        for amount in [b"5", b"6", b"7"] {
            ledger
                .submit_as(&admin, "token", "mint", &[b"Org1/alice", amount])
                .unwrap();
            ledger.submit("kv", "put", &[b"k", amount]).unwrap();
        }
        let (events, _) = ledger
            .reader()
            .committed_events("token", start, 100)
            .unwrap();
        assert_eq!(events.len(), 3);
        let height = ledger.reader().durable_height();
        ledger.close();
        (events, height)
    };
    // What an operator does with a store of another format (`StoreError::Format`).
    std::fs::rename(dir.path().join("state"), dir.path().join("state.old")).unwrap();
    let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
    let mut statuses = ledger.statuses();
    while ledger.reader().durable_height() < height {
        // Each status a wake-up; the height is what is waited for.
        let _ = statuses.blocking_recv();
    }
    assert_eq!(
        ledger
            .reader()
            .committed_events("token", start, 100)
            .unwrap(),
        (events, ledger.reader().durable_height())
    );
    assert_eq!(
        ledger
            .reader()
            .key_history("kv", b"k", None, 10)
            .unwrap()
            .len(),
        3
    );
    assert_eq!(
        ledger
            .evaluate("token", "balance", &[b"Org1/alice"])
            .unwrap(),
        b"18"
    );
}

#[test]
fn contract_errors_and_rejections_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
    let missing = ledger.submit("nope", "put", &[b"k", b"v"]).unwrap_err();
    assert_eq!(missing.code(), "CONTRACT_NOT_FOUND");
    ledger.deploy("token", "1", token_wasm(), "").unwrap();
    // Only an admin may mint: the contract's own error, before anything is ordered.
    let refused = ledger
        .submit("token", "mint", &[b"Org1/alice", b"5"])
        .unwrap_err();
    assert!(matches!(refused, LedgerError::Endorse(_)), "{refused:?}");
    let mut events = ledger.events();
    let minted = ledger
        .submit_as(
            &ledger_signer(dir.path(), Role::Admin),
            "token",
            "mint",
            &[b"Org1/alice", b"5"],
        )
        .unwrap();
    let event = events.blocking_recv().unwrap();
    assert_eq!(
        (event.tx_id, event.contract.as_str()),
        (minted.tx_id, "token")
    );
    assert_eq!(
        ledger
            .evaluate("token", "balance", &[b"Org1/alice"])
            .unwrap(),
        b"5"
    );
    // Deploying the same name twice is the lifecycle's error.
    assert!(ledger.deploy("token", "1", token_wasm(), "").is_err());
}

#[test]
fn batches_of_signed_proposals_and_transactions_get_an_answer_each() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
    ledger.deploy("kv", "1", kv_wasm(), "").unwrap();
    let client = ledger_signer(dir.path(), Role::Client);
    let proposal = |key: &[u8]| {
        let args = vec![key.to_vec(), b"v".to_vec()];
        tx::sign_proposal(
            &client,
            &tx::new_proposal(ledger.channel(), "kv", "put", args, &client),
        )
    };
    let read = |key: &[u8]| {
        tx::sign_proposal(
            &client,
            &tx::new_proposal(ledger.channel(), "kv", "get", vec![key.to_vec()], &client),
        )
    };
    // Forged proposals among good ones: the batch's signature check fails them alone.
    let mut forged = proposal(b"f");
    forged.signature[0] ^= 1;
    let mut forged_read = read(b"v");
    forged_read.signature[0] ^= 1;
    let answers = ledger.gateway().run_proposals(vec![
        ProposalCall::Endorse(proposal(b"a"), Vec::new()),
        ProposalCall::Endorse(forged, Vec::new()),
        ProposalCall::Evaluate(read(b"v")),
        ProposalCall::Evaluate(forged_read),
        ProposalCall::Endorse(proposal(b"b"), Vec::new()),
    ]);
    let mut prepared = Vec::new();
    let mut evaluated = Vec::new();
    for answer in answers {
        match answer {
            ProposalAnswer::Endorsed(answer) => {
                prepared.push(answer.map(|gathering| gathering.into_prepared()))
            }
            ProposalAnswer::Evaluated(answer) => evaluated.push(answer),
        }
    }
    let read_codes: Vec<Result<(), &str>> = evaluated
        .iter()
        .map(|r| r.as_ref().map(|_| ()).map_err(|e| e.code()))
        .collect();
    assert_eq!(read_codes, [Ok(()), Err("BAD_CREATOR_SIGNATURE")]);
    let codes: Vec<Result<(), &str>> = prepared
        .iter()
        .map(|p| p.as_ref().map(|_| ()).map_err(|e| e.code()))
        .collect();
    assert_eq!(codes, [Ok(()), Err("BAD_CREATOR_SIGNATURE"), Ok(())]);
    let signed: Vec<Vec<u8>> = [&prepared[0], &prepared[2]]
        .into_iter()
        .map(|p| tx::sign_transaction(&client, &p.as_ref().unwrap().transaction).encode_to_vec())
        .collect();
    let first_id = prepared[0].as_ref().unwrap().tx_id;
    let mut watch = ledger.watch(first_id);
    let mut second = ledger.watch(prepared[2].as_ref().unwrap().tx_id);
    let answers = ledger.gateway().submit_signed_batch(vec![
        signed[0].clone(),
        b"garbage".to_vec(),
        signed[1].clone(),
    ]);
    let outcome: Vec<Result<Seq, &str>> = answers
        .iter()
        .map(|a| a.as_ref().map(|(_, seq)| *seq).map_err(|e| e.code()))
        .collect();
    assert_eq!(outcome, [Ok(Seq(2)), Err("BAD_PAYLOAD"), Ok(Seq(3))]);
    assert_eq!(answers[0].as_ref().unwrap().0, first_id);
    let status = watch.next_blocking().unwrap();
    assert_eq!(status.code, ValidationCode::Valid);
    // Once validated, the same transaction again is refused before ordering.
    let replayed = ledger
        .gateway()
        .submit_signed_batch(vec![signed[0].clone()]);
    assert_eq!(replayed[0].as_ref().unwrap_err().code(), "DUPLICATE_TXID");
    assert_eq!(second.next_blocking().unwrap().code, ValidationCode::Valid);
    assert_eq!(ledger.evaluate("kv", "get", &[b"b"]).unwrap(), b"\"v\"");
}

#[test]
fn a_multi_org_ledger_gathers_the_endorsements_a_policy_needs() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), config(&["Org1", "Org2", "Org3"])).unwrap();
    // The lifecycle policy (a majority of admins) needs two organisations' admins.
    ledger
        .deploy("kv", "1", kv_wasm(), "AND('Org1.peer', 'Org3.peer')")
        .unwrap();
    let committed = ledger.submit("kv", "put", &[b"k", b"v"]).unwrap();
    let (record, _) = ledger
        .reader()
        .transaction(&committed.tx_id)
        .unwrap()
        .unwrap();
    assert_eq!(record.code, ValidationCode::Valid);
}

#[test]
fn with_group_commit_off_each_transaction_has_a_flush_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(&["Org1"]);
    config.validator.commit_txs_max = 1;
    let ledger = std::sync::Arc::new(Ledger::open(dir.path(), config).unwrap());
    ledger.deploy("kv", "1", kv_wasm(), "").unwrap();
    // Concurrent submitters: with grouping on, their transactions would share flushes.
    let committed: Vec<_> = (0..4)
        .map(|t| {
            let ledger = ledger.clone();
            std::thread::spawn(move || {
                (0..10)
                    .map(|i| {
                        let key = format!("{t}-{i}");
                        ledger.submit("kv", "put", &[key.as_bytes(), b"v"]).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .flat_map(|thread| thread.join().unwrap())
        .collect();
    let mut flushed: Vec<(Seq, u64)> = committed
        .iter()
        .map(|c| {
            let trace = ledger.trace(&c.tx_id).unwrap();
            let at = trace
                .stages()
                .into_iter()
                .find(|(s, _)| *s == Stage::Committed);
            (c.seq, at.unwrap().1)
        })
        .collect();
    flushed.sort();
    // The flusher stamps "committed" once per flush: one stamp per transaction, rising
    // with the seq.
    assert!(
        flushed.windows(2).all(|w| w[0].1 < w[1].1),
        "shared or out-of-order flushes: {flushed:?}"
    );
}

#[test]
fn a_peer_reopened_after_an_update_connects_through_the_definition_in_force() {
    // A configuration update names the network's orderer. Reopened as a peer, the ledger
    // hands the definition in force, not the genesis one, to what makes its link to the
    // orderers, before it reads the stream: a peer reaches the orderers the updates name.
    use runnel_ledger::identity::OrdererNode;
    use runnel_ledger::orderer::{Orderer, OrdererConfig, SoloOrderer};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let named = OrdererNode {
        name: "orderer0.Org1".into(),
        org: "Org1".into(),
        endpoint: "https://127.0.0.1:7050".into(),
        raft_id: 0,
        key: String::new(),
    };
    {
        let ledger = Ledger::open(dir.path(), config(&["Org1"])).unwrap();
        let (current, version) = ledger.reader().network_version().unwrap();
        assert!(current.orderers.is_empty());
        let mut next = (*current).clone();
        next.sequence += 1;
        next.orderers = vec![named.clone()];
        let admin = |_: &str| ledger_signer(dir.path(), Role::Admin);
        let update = runnel_testing::orderer::config_update_by(&admin, version, &next, &["Org1"]);
        // Subscribed before submitting: the update may commit before `submit_signed`
        // returns.
        let mut statuses = ledger.statuses();
        let (tx_id, _) = ledger.gateway().submit_signed(update).unwrap();
        loop {
            let status = statuses.blocking_recv().unwrap();
            if status.tx_id != tx_id {
                continue;
            }
            assert_eq!(status.code, ValidationCode::Valid);
            if status.phase == runnel_ledger::validator::Phase::Committed {
                break;
            }
        }
        ledger.close();
    }
    let mut seen = None;
    let ledger = Ledger::builder(dir.path(), config(&["Org1"]))
        .connect(|in_force| {
            seen = Some(in_force.clone());
            let keys = NetworkKeys::load(dir.path()).unwrap();
            let orderer: Arc<dyn Orderer> = Arc::new(SoloOrderer::open(
                &dir.path().join("orderer"),
                OrdererConfig::default(),
                Arc::new(in_force.msp().unwrap()),
                keys.signer("Org1", Role::Orderer).unwrap().clone(),
            )?);
            Ok(orderer)
        })
        .open()
        .unwrap();
    let seen = seen.expect("the link was made before the ledger opened");
    assert_eq!((seen.sequence, seen.orderers.clone()), (1, vec![named]));
    ledger.close();
}

/// An inclusion proof is built from the Merkle leaves the store keeps beside each
/// transaction's place. Before: `prove` read every transaction of the block and hashed
/// them (a block of 10,000 transactions of up to 32 MiB each, per request). Now: of the
/// block, only the proven transaction's bytes are read, and the proof still verifies,
/// before and after a reopen.
#[test]
fn an_inclusion_proof_reads_no_transaction_but_the_one_it_proves() {
    let dir = tempfile::tempdir().unwrap();
    let block_txs = 40;
    let mut config = config(&["Org1"]);
    config.orderer.seal_max_txs = block_txs;
    config.orderer.seal_max_delay = std::time::Duration::from_secs(600);
    let mut ids = Vec::new();
    {
        let ledger = Ledger::open(dir.path(), config.clone()).unwrap();
        ledger.deploy("kv", "1.0", kv_wasm(), "").unwrap();
        let mut blocks = ledger.blocks();
        // The deploy's transactions and these fill whole blocks of `block_txs`.
        let height = ledger.reader().durable_height().0 as usize;
        for i in 0..(2 * block_txs - height) {
            let key = format!("k{i}");
            let value = vec![b'v'; 2048];
            ids.push(
                ledger
                    .submit("kv", "put", &[key.as_bytes(), &value])
                    .unwrap()
                    .tx_id,
            );
        }
        let mut sealed = 0;
        while sealed < 2 * block_txs as u64 {
            sealed = blocks.blocking_recv().unwrap().last.0;
        }
        let before = ledger.reader().store_reads();
        let proof = ledger.reader().prove(&ids[block_txs]).unwrap().unwrap();
        runnel_ledger::block::verify_proof(&proof.proof, &proof.transaction, &proof.seal.seal)
            .unwrap();
        assert_eq!(proof.seal.seal.tx_count(), block_txs as u64);
        assert_eq!(
            ledger.reader().store_reads().transactions - before.transactions,
            1,
            "the proven transaction's bytes, and no other's"
        );
        // Its place records (one a commit), the tx index, the seal.
        let read = ledger.reader().store_reads().records - before.records;
        assert!(
            read <= block_txs as u64 + 3,
            "{read} records for a block of {block_txs}"
        );
        ledger.close();
    }
    let ledger = Ledger::open(dir.path(), config).unwrap();
    for id in [&ids[0], &ids[block_txs], ids.last().unwrap()] {
        let proof = ledger.reader().prove(id).unwrap().unwrap();
        runnel_ledger::block::verify_proof(&proof.proof, &proof.transaction, &proof.seal.seal)
            .unwrap();
    }
    ledger.close();
}
