//! The solo orderer on a real log file: sequencing, streaming and block delivery, seals
//! a peer can verify, admission checks, restart.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_ledger::block::SealChain;
use runnel_ledger::identity::{NetworkIdentities, Role};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{
    Delivered, OrderError, OrderedTx, Orderer, OrdererConfig, OrderingMode, SoloOrderer,
};
use runnel_ledger::records::RecordFile;
use runnel_ledger::records::SyncMode;
use runnel_testing::orderer::{
    Net, PATIENCE, Seen, read_until, streaming, transaction, transaction_with_payload,
};

#[test]
fn streaming_delivers_each_transaction_at_once_and_seals_behind_it() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    // Seals only by count here, so the timing of this test cannot change its blocks.
    let orderer = net.open(dir.path(), streaming(3, Duration::from_secs(3600)));
    let client = net.signer("Org1", Role::Client);
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut chain = SealChain::genesis();
    let mut seen = Seen::default();

    let first = transaction(&net, &client, "main", "a");
    let ordered = orderer.submit(first.clone()).unwrap();
    assert_eq!(ordered.seq, Seq(1));
    assert!(ordered.received_us <= ordered.ordered_us);
    // One transaction, far from a full block: it is delivered anyway.
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == 1
    });
    assert_eq!(seen.txs[0], (Seq(1), first));

    let mut sent = vec![seen.txs[0].1.clone()];
    for i in 0..6 {
        let bytes = transaction(&net, &client, "main", &format!("k{i}"));
        assert_eq!(orderer.submit(bytes.clone()).unwrap().seq, Seq(2 + i));
        sent.push(bytes);
    }
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == 7 && s.seals.len() == 2 && s.durable == Seq(7)
    });
    assert_eq!(
        seen.txs.iter().map(|(_, b)| b.clone()).collect::<Vec<_>>(),
        sent
    );
    assert_eq!(
        seen.seals,
        vec![
            (BlockNumber(1), Seq(1), Seq(3)),
            (BlockNumber(2), Seq(4), Seq(6))
        ]
    );
    // Each seal comes after the transactions it covers.
    let third_tx = seen.order.match_indices('t').nth(2).unwrap().0;
    assert!(seen.order.find('s').unwrap() > third_tx);
    assert_eq!(orderer.height(), Seq(7));

    // A second subscriber starting mid-stream gets the rest, and the seals from block 2;
    // it trusts block 1 (as a peer trusts its own stored seal) and chains on from it.
    let mut late = orderer.deliver(Seq(4), BlockNumber(2)).unwrap();
    let mut late_chain = SealChain::after(&seen.sealed[0]);
    let mut late_seen = Seen::default();
    read_until(&mut *late, &mut late_chain, &net.msp, &mut late_seen, |s| {
        s.txs.len() == 4 && s.seals.len() == 1
    });
    assert_eq!(late_seen.txs.first().unwrap().0, Seq(4));
    assert_eq!(late_seen.seals, vec![(BlockNumber(2), Seq(4), Seq(6))]);
}

#[test]
fn a_partial_block_is_sealed_when_its_oldest_transaction_has_waited_long_enough() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = net.open(dir.path(), streaming(1000, Duration::from_millis(20)));
    let client = net.signer("Org2", Role::Client);
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    for i in 0..2 {
        orderer
            .submit(transaction(&net, &client, "main", &format!("{i}")))
            .unwrap();
    }
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 1
    });
    assert_eq!(seen.seals, vec![(BlockNumber(1), Seq(1), Seq(2))]);
    orderer
        .submit(transaction(&net, &client, "main", "2"))
        .unwrap();
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 2
    });
    assert_eq!(seen.seals[1], (BlockNumber(2), Seq(3), Seq(3)));
}

#[test]
fn block_mode_holds_transactions_until_their_block_is_cut_and_durable() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let config = OrdererConfig {
        mode: OrderingMode::Blocks,
        seal_max_txs: 4,
        seal_max_delay: Duration::from_secs(3600),
        ..OrdererConfig::default()
    };
    let orderer = net.open(dir.path(), config);
    let client = net.signer("Org1", Role::Client);
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    for i in 0..3 {
        orderer
            .submit(transaction(&net, &client, "main", &format!("{i}")))
            .unwrap();
    }
    // Three of four: durable at the orderer, but not delivered.
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        match delivery.next(Duration::from_millis(20)).unwrap() {
            None | Some(Delivered::Durable(_)) => {}
            Some(other) => panic!("delivered before the block was cut: {other:?}"),
        }
    }
    orderer
        .submit(transaction(&net, &client, "main", "3"))
        .unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 1
    });
    assert_eq!(seen.order, "tttts");
    assert_eq!(seen.seals, vec![(BlockNumber(1), Seq(1), Seq(4))]);
}

#[test]
fn fabric_blocks_is_fabrics_sample_batch_size_and_timeout() {
    let config = OrdererConfig::fabric_blocks();
    assert_eq!(config.mode, OrderingMode::Blocks);
    assert_eq!(config.seal_max_txs, 10);
    assert_eq!(config.seal_max_delay, Duration::from_secs(2));
}

#[test]
fn bad_submissions_are_refused_with_their_reason_and_the_orderer_goes_on() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let config = OrdererConfig {
        transaction_bytes_max: 64 * 1024,
        ..OrdererConfig::default()
    };
    let orderer = net.open(dir.path(), config);
    let client = net.signer("Org1", Role::Client);

    let code = |bytes: Vec<u8>| orderer.submit(bytes).unwrap_err().code();
    assert_eq!(code(b"\xff\xff\xff garbage".to_vec()), "BAD_PAYLOAD");
    assert_eq!(code(vec![0; 64 * 1024 + 1]), "TOO_LARGE");
    assert_eq!(
        code(transaction(&net, &client, "other", "k")),
        "WRONG_CHANNEL"
    );
    // A peer may endorse but not submit.
    let peer = net.signer("Org1", Role::Peer);
    assert_eq!(code(transaction(&net, &peer, "main", "k")), "ACCESS_DENIED");
    // A submitter from another network.
    let stranger = NetworkIdentities::generate(&["Org1"], time::Duration::days(1))
        .unwrap()
        .org("Org1")
        .unwrap()
        .signer(Role::Client)
        .unwrap();
    assert_eq!(
        code(transaction(&net, &stranger, "main", "k")),
        "BAD_CREATOR"
    );
    // A transaction altered after signing, and one signed by somebody else.
    let mut signed: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "k").as_slice()).unwrap();
    signed.transaction.push(0);
    assert_eq!(code(prost::Message::encode_to_vec(&signed)), "BAD_PAYLOAD");
    let mut signed: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "k").as_slice()).unwrap();
    let other: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "j").as_slice()).unwrap();
    signed.signature = other.signature;
    let forged = prost::Message::encode_to_vec(&signed);
    assert!(matches!(
        orderer.submit(forged),
        Err(OrderError::BadSignature)
    ));
    let mut signed: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "k").as_slice()).unwrap();
    signed.signature.truncate(10);
    assert_eq!(
        code(prost::Message::encode_to_vec(&signed)),
        "BAD_CREATOR_SIGNATURE"
    );

    // Nothing refused took a seq.
    assert_eq!(orderer.height(), Seq::ZERO);
    assert_eq!(
        orderer
            .submit(transaction(&net, &client, "main", "k"))
            .unwrap()
            .seq,
        Seq(1)
    );
}

/// Junk is not stored for free: a transaction that no identity that may endorse its
/// contract endorsed and one carrying more endorsements than any policy uses are
/// refused, each with its code; and one submitter's bytes are bounded by its share while
/// another's are not touched. (A forged endorsement is the peers': refused by the peer a
/// client submits through, `BAD_ENDORSER_SIGNATURE` at the validators.)
#[test]
fn unendorsed_overendorsed_and_over_quota_transactions_are_refused() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let config = OrdererConfig {
        submitter_bytes_per_s_max: 10_000,
        ..OrdererConfig::default()
    };
    let orderer = net.open(dir.path(), config);
    let client = net.signer("Org1", Role::Client);
    let peer = net.signer("Org1", Role::Peer);
    let code = |bytes: Vec<u8>| orderer.submit(bytes).unwrap_err().code();
    let with = |endorsers: &[&runnel_ledger::identity::Signer], key: &str| {
        let proposal = runnel_ledger::tx::new_proposal("main", "kv", "put", vec![], &client);
        let mut transaction = runnel_ledger::proto::Transaction {
            proposal: Some(runnel_ledger::tx::sign_proposal(&client, &proposal)),
            payload: key.as_bytes().to_vec(),
            endorsements: Vec::new(),
        };
        for endorser in endorsers {
            runnel_testing::orderer::endorse(endorser, &mut transaction);
        }
        transaction
    };
    let signed = |transaction: &runnel_ledger::proto::Transaction| {
        prost::Message::encode_to_vec(&runnel_ledger::tx::sign_transaction(&client, transaction))
    };
    assert_eq!(code(signed(&with(&[], "none"))), "NOT_ENDORSED");
    // A client's endorsement vouches for nothing.
    assert_eq!(code(signed(&with(&[&client], "own"))), "NOT_ENDORSED");
    let max = runnel_ledger::tx::ENDORSEMENTS_MAX;
    let mut crowded = with(&[&peer], "crowded");
    crowded.endorsements = vec![crowded.endorsements[0].clone(); max + 1];
    let refused = orderer.submit(signed(&crowded)).unwrap_err();
    assert_eq!(refused.code(), "TOO_MANY_ENDORSEMENTS", "{refused}");
    // As many as the bound are ordered (the validator counts one per endorser).
    crowded.endorsements.truncate(max);
    assert_eq!(orderer.submit(signed(&crowded)).unwrap().seq, Seq(1));

    // 10 kB a second, 20 kB at once: a full share takes one transaction of 90 kB and
    // goes into debt; the next is refused (for the 7 s until it is repaid), and takes
    // nothing. (The lib's tests show shares refilling with time.)
    let sized = |signer: &runnel_ledger::identity::Signer, key: &str, bytes: usize| {
        runnel_testing::orderer::endorsed_transaction(&peer, signer, ("main", key), vec![7; bytes])
    };
    let submitter = net.signer("Org2", Role::Client);
    orderer.submit(sized(&submitter, "a", 90_000)).unwrap();
    for key in ["b", "c"] {
        let over = orderer.submit(sized(&submitter, key, 10)).unwrap_err();
        assert_eq!(over.code(), "SUBMITTER_QUOTA_EXCEEDED", "{over}");
        assert!(
            over.to_string().contains("submitter_bytes_per_s_max"),
            "{over}"
        );
    }
    // Another submitter has its own share.
    let other = net.signer("Org2", Role::Admin);
    orderer.submit(sized(&other, "d", 10_000)).unwrap();
    orderer.submit(sized(&other, "e", 3_000)).unwrap();
    assert_eq!(orderer.height(), Seq(4));
}

#[test]
fn a_batch_is_answered_in_order_bad_members_refused_alone_good_ones_sequenced() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = net.open(dir.path(), streaming(3, Duration::from_millis(10)));
    let client = net.signer("Org1", Role::Client);
    assert!(orderer.submits_in_batches());
    let mut forged: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "f").as_slice()).unwrap();
    forged.signature[0] ^= 1;
    let batch = vec![
        transaction(&net, &client, "main", "a"),
        prost::Message::encode_to_vec(&forged),
        transaction(&net, &client, "main", "b"),
        b"garbage".to_vec(),
        transaction(&net, &client, "other", "c"),
        transaction(&net, &client, "main", "d"),
    ];
    let answers = orderer.submit_batch(batch.clone());
    let outcome: Vec<Result<Seq, &str>> = answers
        .iter()
        .map(|answer| answer.as_ref().map(|o| o.seq).map_err(|e| e.code()))
        .collect();
    assert_eq!(
        outcome,
        [
            Ok(Seq(1)),
            Err("BAD_CREATOR_SIGNATURE"),
            Ok(Seq(2)),
            Err("BAD_PAYLOAD"),
            Err("WRONG_CHANNEL"),
            Ok(Seq(3)),
        ]
    );
    // What was sequenced is what was sent, in the batch's order; and a batch of one
    // after it continues the stream.
    assert_eq!(
        orderer.submit_batch(vec![transaction(&net, &client, "main", "e")])[0]
            .as_ref()
            .unwrap()
            .seq,
        Seq(4)
    );
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == 4
    });
    let sent: Vec<&Vec<u8>> = [&batch[0], &batch[2], &batch[5]].into_iter().collect();
    let delivered: Vec<&Vec<u8>> = seen.txs[..3].iter().map(|(_, bytes)| bytes).collect();
    assert_eq!(delivered, sent);
}

#[test]
fn concurrent_submitters_get_distinct_contiguous_seqs() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = Arc::new(net.open(dir.path(), streaming(50, Duration::from_millis(10))));
    const THREADS: usize = 4;
    const EACH: usize = 100;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let orderer = orderer.clone();
            let client = net.signer(if t % 2 == 0 { "Org1" } else { "Org2" }, Role::Client);
            let peer = net.signer("Org1", Role::Peer);
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|i| {
                        let key = format!("{t}-{i}");
                        let bytes = runnel_testing::orderer::endorsed_transaction(
                            &peer,
                            &client,
                            ("main", &key),
                            key.as_bytes().to_vec(),
                        );
                        (orderer.submit(bytes.clone()).unwrap().seq, bytes)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut assigned: HashMap<Seq, Vec<u8>> = HashMap::new();
    for handle in handles {
        for (seq, bytes) in handle.join().unwrap() {
            assert!(
                assigned.insert(seq, bytes).is_none(),
                "seq {seq} given twice"
            );
        }
    }
    let total = THREADS * EACH;
    assert_eq!(assigned.len(), total);
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == total && s.seals.last().is_some_and(|b| b.2 == Seq(total as u64))
    });
    for (seq, bytes) in &seen.txs {
        assert_eq!(
            &assigned[seq], bytes,
            "delivered what was submitted at {seq}"
        );
    }
}

#[test]
fn a_reopened_log_resumes_the_stream_and_the_seal_chain() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let client = net.signer("Org1", Role::Client);
    let mut sent = Vec::new();
    {
        let orderer = net.open(dir.path(), streaming(4, Duration::from_secs(3600)));
        for i in 0..6 {
            let bytes = transaction(&net, &client, "main", &format!("{i}"));
            orderer.submit(bytes.clone()).unwrap();
            sent.push(bytes);
        }
        // Wait for block 1 (seqs 1-4) to be durable; 5 and 6 stay unsealed.
        let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
        let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
        read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
            s.seals.len() == 1 && s.txs.len() == 6
        });
        orderer.close();
        assert!(matches!(
            orderer.submit(transaction(&net, &client, "main", "late")),
            Err(OrderError::Closed)
        ));
    }
    let orderer = net.open(dir.path(), streaming(4, Duration::from_secs(3600)));
    assert_eq!(orderer.height(), Seq(6));
    assert_eq!(orderer.durable_height(), Seq(6));
    for i in 6..8 {
        let bytes = transaction(&net, &client, "main", &format!("{i}"));
        assert_eq!(orderer.submit(bytes.clone()).unwrap().seq, Seq(i + 1));
        sent.push(bytes);
    }
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 2
    });
    assert_eq!(
        seen.seals,
        vec![
            (BlockNumber(1), Seq(1), Seq(4)),
            (BlockNumber(2), Seq(5), Seq(8))
        ]
    );
    assert_eq!(
        seen.txs.into_iter().map(|(_, b)| b).collect::<Vec<_>>(),
        sent
    );
}

#[test]
fn a_log_holding_a_seal_of_an_older_format_is_refused_and_left_as_it_was() {
    // Older Runnels' logs: seals whose leaves were the transactions' bytes alone, kept as
    // records of kind 's', and seals with one signature in fields of their own, kind 'S'.
    // A peer of this version would refuse every such seal.
    for kind in [b's', b'S'] {
        refuses_a_log_with_a_seal_of_kind(kind);
    }
}

fn refuses_a_log_with_a_seal_of_kind(kind: u8) {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let client = net.signer("Org1", Role::Client);
    let path = dir.path().join("orderer.log");
    let now = runnel_ledger::tx::now_ms();
    let bytes = transaction(&net, &client, "main", "old");
    {
        let mut log = RecordFile::open(&path).unwrap().file;
        let ordered = OrderedTx {
            seq: Seq(1),
            timestamp_ms: now,
            transaction: bytes.clone(),
        };
        log.append(b't', &ordered.into_bytes()).unwrap();
        let sealed = SealChain::genesis().seal_next(
            &net.signer("Org1", Role::Orderer),
            &[runnel_ledger::tx::sha256(&bytes)],
            now,
        );
        log.append(kind, &sealed.bytes).unwrap();
        log.handle(SyncMode::Data).unwrap().sync().unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let error = SoloOrderer::open(
        dir.path(),
        OrdererConfig::default(),
        net.msp.clone(),
        net.signer("Org1", Role::Orderer),
    )
    .unwrap_err();
    assert!(matches!(error, OrderError::Corrupt(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("older format"), "{message}");
    assert!(message.contains("timestamps"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the log is unchanged"
    );
}

#[test]
fn a_reopened_log_seals_the_transactions_it_held_unsealed_with_their_stored_times() {
    // Seqs 1-3 are ordered and durable, but the orderer stops before it seals them; once
    // reopened it seals them over the timestamps it gave them before, which a peer that
    // received them then accepts.
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let client = net.signer("Org1", Role::Client);
    let mut before = Seen::default();
    {
        let orderer = net.open(dir.path(), streaming(100, Duration::from_secs(3600)));
        for i in 0..3 {
            orderer
                .submit(transaction(&net, &client, "main", &format!("{i}")))
                .unwrap();
        }
        let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
        let mut chain = SealChain::genesis();
        read_until(&mut *delivery, &mut chain, &net.msp, &mut before, |s| {
            s.txs.len() == 3 && s.durable == Seq(3)
        });
        assert!(before.seals.is_empty());
        orderer.close();
    }
    let orderer = net.open(dir.path(), streaming(3, Duration::from_millis(10)));
    orderer
        .submit(transaction(&net, &client, "main", "after"))
        .unwrap();
    // The peer resumes at seq 4 holding the leaves it computed from the first stream.
    let mut delivery = orderer.deliver(Seq(4), BlockNumber(1)).unwrap();
    let mut chain = SealChain::genesis();
    let mut seen = Seen {
        txs: before.txs.clone(),
        leaves: before.leaves.clone(),
        ..Seen::default()
    };
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 2
    });
    assert_eq!(
        seen.seals,
        vec![
            (BlockNumber(1), Seq(1), Seq(3)),
            (BlockNumber(2), Seq(4), Seq(4))
        ]
    );
}

#[test]
fn one_log_directory_serves_one_orderer() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let _orderer = net.open(dir.path(), OrdererConfig::default());
    let second = SoloOrderer::open(
        dir.path(),
        OrdererConfig::default(),
        net.msp.clone(),
        net.signer("Org1", Role::Orderer),
    );
    assert!(matches!(second, Err(OrderError::Locked(_))));
}

#[test]
fn a_delivery_behind_the_orderers_memory_reads_the_log_then_catches_up() {
    // The orderer keeps its latest transactions (8 MiB) for deliveries that keep up; one
    // that starts from the beginning after 12 MiB reads the oldest back from the log.
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = net.open(dir.path(), streaming(10, Duration::from_millis(10)));
    let client = net.signer("Org1", Role::Client);
    let big = |key: &str| {
        transaction_with_payload(
            &net,
            &client,
            "main",
            key,
            vec![key.as_bytes()[0]; 512 << 10],
        )
    };
    let sent: Vec<Vec<u8>> = (0..24).map(|i| big(&format!("k{i:02}"))).collect();
    for transaction in &sent {
        orderer.submit(transaction.clone()).expect("ordered");
    }
    let mut delivery = orderer.deliver(Seq(1), BlockNumber(1)).unwrap();
    let (mut chain, mut seen) = (SealChain::genesis(), Seen::default());
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.last().is_some_and(|&(_, _, last)| last == Seq(24))
    });
    let delivered: Vec<Vec<u8>> = seen.txs.into_iter().map(|(_, bytes)| bytes).collect();
    assert!(
        delivered == sent,
        "every transaction delivered as sent, in order"
    );
    // One more, delivered from memory to the same delivery.
    let last = big("late");
    orderer.submit(last.clone()).expect("ordered");
    let mut more = Seen::default();
    more.txs.push((Seq(24), sent[23].clone()));
    read_until(&mut *delivery, &mut chain, &net.msp, &mut more, |s| {
        s.txs.len() == 2
    });
    assert!(more.txs[1] == (Seq(25), last));
}

#[test]
fn a_replay_is_refused_in_a_batch_alone_and_after_a_reopen_and_old_proposals_not_admitted() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let client = net.signer("Org1", Role::Client);
    let first = transaction(&net, &client, "main", "a");
    {
        let orderer = net.open(dir.path(), OrdererConfig::default());
        assert_eq!(orderer.submit(first.clone()).unwrap().seq, Seq(1));
        assert_eq!(
            orderer.submit(first.clone()).unwrap_err().code(),
            "DUPLICATE_TXID"
        );
        // Two copies in one batch: the first is ordered, the second refused.
        let second = transaction(&net, &client, "main", "b");
        let answers = orderer.submit_batch(vec![second.clone(), second, first.clone()]);
        assert_eq!(answers[0].as_ref().unwrap().seq, Seq(2));
        assert_eq!(answers[1].as_ref().unwrap_err().code(), "DUPLICATE_TXID");
        assert_eq!(answers[2].as_ref().unwrap_err().code(), "DUPLICATE_TXID");
        orderer.close();
    }
    // The ids are read back from the log: still refused after a restart.
    let orderer = net.open(dir.path(), OrdererConfig::default());
    assert_eq!(orderer.submit(first).unwrap_err().code(), "DUPLICATE_TXID");
    assert_eq!(orderer.height(), Seq(2));

    // A proposal dated outside the window is not admitted, so it needs no remembering.
    let mut proposal = runnel_ledger::tx::new_proposal("main", "kv", "put", vec![], &client);
    proposal.timestamp_ms -= 16 * 60 * 1000;
    let transaction = runnel_ledger::proto::Transaction {
        proposal: Some(runnel_ledger::tx::sign_proposal(&client, &proposal)),
        ..Default::default()
    };
    let stale =
        prost::Message::encode_to_vec(&runnel_ledger::tx::sign_transaction(&client, &transaction));
    assert_eq!(
        orderer.submit(stale).unwrap_err().code(),
        "TIMESTAMP_OUT_OF_WINDOW"
    );
    assert_eq!(orderer.height(), Seq(2));
}

/// More transactions than the replay memory holds: the oldest proposals' ids go, and a
/// replay of one of them is refused all the same, as is anything dated before them,
/// also after a reopen. Fresh proposals are ordered throughout.
#[test]
fn past_the_replay_memory_a_replay_of_a_forgotten_id_is_still_refused() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let client = net.signer("Org1", Role::Client);
    let config = OrdererConfig {
        replay_ids_max: 3,
        ..OrdererConfig::default()
    };
    // Proposals a millisecond apart, so that their order is their timestamps'.
    let dated = |key: &str, ms: u64| {
        let mut proposal = runnel_ledger::tx::new_proposal("main", "kv", "put", vec![], &client);
        proposal.timestamp_ms = ms;
        proposal.nonce = key.as_bytes().to_vec();
        proposal.nonce.resize(24, 0);
        let mut transaction = runnel_ledger::proto::Transaction {
            proposal: Some(runnel_ledger::tx::sign_proposal(&client, &proposal)),
            ..Default::default()
        };
        runnel_testing::orderer::endorse(&net.signer("Org1", Role::Peer), &mut transaction);
        prost::Message::encode_to_vec(&runnel_ledger::tx::sign_transaction(&client, &transaction))
    };
    let now = runnel_ledger::tx::now_ms();
    let first = dated("first", now - 10);
    {
        let orderer = net.open(dir.path(), config.clone());
        orderer.submit(first.clone()).unwrap();
        for (i, key) in ["b", "c", "d"].into_iter().enumerate() {
            orderer.submit(dated(key, now - 9 + i as u64)).unwrap();
        }
        // `first` had the oldest proposal of four: forgotten, yet its replay is refused.
        let replay = orderer.submit(first.clone()).unwrap_err();
        assert_eq!(replay.code(), "TIMESTAMP_OUT_OF_WINDOW", "{replay}");
        assert!(replay.to_string().contains("replay_ids_max"), "{replay}");
        let older = orderer.submit(dated("older", now - 20)).unwrap_err();
        assert_eq!(older.code(), "TIMESTAMP_OUT_OF_WINDOW");
        // Remembered ones are duplicates; fresh ones are ordered.
        assert_eq!(
            orderer.submit(dated("d", now - 7)).unwrap_err().code(),
            "DUPLICATE_TXID"
        );
        assert_eq!(orderer.submit(dated("e", now)).unwrap().seq, Seq(5));
        assert_eq!(orderer.height(), Seq(5));
        orderer.close();
    }
    // Read back from the log: the newest three are remembered, and the oldest ones,
    // beyond them, refused.
    let orderer = net.open(dir.path(), config);
    assert_eq!(
        orderer.submit(dated("e", now)).unwrap_err().code(),
        "DUPLICATE_TXID"
    );
    assert_eq!(
        orderer.submit(first).unwrap_err().code(),
        "TIMESTAMP_OUT_OF_WINDOW"
    );
    assert_eq!(orderer.height(), Seq(5));
}

#[test]
fn a_reader_further_on_than_the_log_is_refused() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = net.open(dir.path(), OrdererConfig::default());
    let client = net.signer("Org1", Role::Client);
    for key in ["a", "b"] {
        orderer
            .submit(transaction(&net, &client, "main", key))
            .unwrap();
    }
    // From seq 3 (all that exists, and the next) is fine; from 4 means the reader holds a
    // seq 3 this log never gave out.
    assert!(orderer.deliver(Seq(3), BlockNumber(1)).is_ok());
    let refused = orderer.deliver(Seq(4), BlockNumber(1)).err().unwrap();
    assert_eq!(refused.code(), "ORDERER_BEHIND");
    let refused = orderer.deliver(Seq(1), BlockNumber(5)).err().unwrap();
    assert_eq!(refused.code(), "ORDERER_BEHIND");
}

#[test]
fn an_orderer_following_the_configuration_applies_an_update_and_keeps_it_across_a_reopen() {
    // Its MSP its own, as an orderer process's: a valid `_config` update revoking Org2's
    // client, signed by both admins, makes the orderer refuse that client from then on,
    // also after a reopen; an update signed by one admin of two changes nothing.
    use runnel_ledger::identity::{IdentityError, Msp, NetworkDefinition, revocation};

    let net = Net::new();
    let genesis = NetworkDefinition::of(&net.ids, "main");
    let config = OrdererConfig {
        follow_config: Some(genesis.clone()),
        ..streaming(100, Duration::from_secs(3600))
    };
    let dir = tempfile::tempdir().unwrap();
    let msp = || Arc::new(Msp::new(net.msp.ca_certs().iter().map(Vec::as_slice)).unwrap());
    let open = |msp: Arc<Msp>| {
        SoloOrderer::open(
            dir.path(),
            config.clone(),
            msp,
            net.signer("Org1", Role::Orderer),
        )
        .unwrap()
    };
    let client = net.signer("Org2", Role::Client);
    let orderer = open(msp());
    orderer
        .submit(transaction(&net, &client, "main", "before"))
        .unwrap();

    let mut next = genesis.clone();
    next.sequence = 1;
    next.orgs[1].revoked.push(revocation(&client.public_key()));
    let update =
        |admins: &[&str]| runnel_testing::orderer::config_update(&net, None, &next, admins);
    // One admin of two: ordered (peers record it invalid), followed by nothing.
    orderer.submit(update(&["Org1"])).unwrap();
    orderer
        .submit(transaction(&net, &client, "main", "still"))
        .unwrap();
    orderer.submit(update(&["Org1", "Org2"])).unwrap();
    let revoked = |orderer: &SoloOrderer| {
        matches!(
            orderer.submit(transaction(&net, &client, "main", "after")),
            Err(OrderError::Submitter(IdentityError::Revoked { .. }))
        )
    };
    assert!(revoked(&orderer));
    // Org1's client is not touched.
    let other = net.signer("Org1", Role::Client);
    orderer
        .submit(transaction(&net, &other, "main", "org1"))
        .unwrap();
    orderer.close();
    drop(orderer);
    let reopened = open(msp());
    assert!(revoked(&reopened));
    reopened.close();
}

#[test]
fn a_solo_orderer_an_update_replaces_seals_up_to_it_and_stops_ordering() {
    // The genesis definition names Org1's orderer; an update names Org2's in its place.
    // Peers refuse every seal Org1's orderer signs over a block that ends at the update
    // or later, so it seals what came before the update at once, and then orders nothing
    // more, saying why.
    use runnel_ledger::identity::{Msp, NetworkDefinition, OrdererNode};

    let net = Net::new();
    let named = |org: &str| OrdererNode {
        name: format!("orderer0.{org}"),
        org: org.into(),
        endpoint: "https://127.0.0.1:7050".into(),
        raft_id: 0,
        key: String::new(),
    };
    let mut genesis = NetworkDefinition::of(&net.ids, "main");
    genesis.orderers = vec![named("Org1")];
    let dir = tempfile::tempdir().unwrap();
    let orderer = SoloOrderer::open(
        dir.path(),
        OrdererConfig {
            follow_config: Some(genesis.clone()),
            // Only the update makes it seal: no block is full, none waits long enough.
            ..streaming(100, Duration::from_secs(3600))
        },
        Arc::new(Msp::new(net.msp.ca_certs().iter().map(Vec::as_slice)).unwrap()),
        net.signer("Org1", Role::Orderer),
    )
    .unwrap();
    let client = net.signer("Org1", Role::Client);
    for key in ["a", "b"] {
        orderer
            .submit(transaction(&net, &client, "main", key))
            .unwrap();
    }
    let mut next = genesis.clone();
    next.sequence = 1;
    next.orderers = vec![named("Org2")];
    let update = runnel_testing::orderer::config_update(&net, None, &next, &["Org1", "Org2"]);
    let at = orderer.submit(update).unwrap().seq;
    assert_eq!(at, Seq(3));

    let deadline = Instant::now() + PATIENCE;
    while orderer.failure().is_none() {
        assert!(Instant::now() < deadline, "the replaced orderer goes on");
        std::thread::sleep(Duration::from_millis(10));
    }
    let failure = orderer.failure().unwrap();
    assert!(failure.contains("may no longer seal"), "{failure}");
    assert!(failure.contains("does not name"), "{failure}");
    assert!(
        orderer
            .submit(transaction(&net, &client, "main", "c"))
            .is_err()
    );
    orderer.close();
    drop(orderer);
    // Its log: the three transactions, and the one seal over the two before the update.
    let opened = RecordFile::open(&dir.path().join("orderer.log")).unwrap();
    let reader = opened.file.handle(SyncMode::Data).unwrap();
    let kinds: String = opened.records.iter().map(|at| at.kind as char).collect();
    assert_eq!(kinds, "tttV");
    let seal = runnel_ledger::block::decode_signed_seal(&reader.read(opened.records[3]).unwrap())
        .unwrap()
        .seal;
    assert_eq!((seal.first, seal.last), (Seq(1), Seq(2)));
}
