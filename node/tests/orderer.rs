//! The solo orderer on a real log file: sequencing, streaming and block delivery, seals
//! a peer can verify, admission checks, restart; and the same orderer reached over gRPC
//! as another process's peers reach it (`RemoteOrderer`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_node::api::ordering::OrderingServerHandle;
use runnel_node::block::{SealChain, SignedSealed};
use runnel_node::identity::{Msp, NetworkIdentities, Role, Signer};
use runnel_node::ids::{BlockNumber, Seq};
use runnel_node::orderer::{
    Delivered, Delivery, OrderError, Orderer, OrdererConfig, OrderingMode, RemoteOrderer,
    SoloOrderer, TRANSACTION_BYTES_MAX,
};
use runnel_node::proto::Transaction;
use runnel_node::tx::{self, Hash};

/// Long enough for anything that should arrive; tests never wait it out on success.
const PATIENCE: Duration = Duration::from_secs(10);

struct Net {
    msp: Arc<Msp>,
    ids: NetworkIdentities,
}

impl Net {
    fn new() -> Net {
        let ids = NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1))
            .expect("identities");
        Net {
            msp: Arc::new(ids.msp().expect("msp")),
            ids,
        }
    }

    fn signer(&self, org: &str, role: Role) -> Signer {
        self.ids
            .org(org)
            .expect("org")
            .signer(role)
            .expect("signer")
    }

    fn open(&self, dir: &Path, config: OrdererConfig) -> SoloOrderer {
        SoloOrderer::open(
            dir,
            config,
            self.msp.clone(),
            self.signer("Org1", Role::Orderer),
        )
        .expect("orderer opens")
    }
}

/// A signed transaction calling `kv.put(key)` on `channel`.
fn transaction(client: &Signer, channel: &str, key: &str) -> Vec<u8> {
    transaction_with_payload(client, channel, key, key.as_bytes().to_vec())
}

/// [`transaction`] with `payload` as its response payload.
fn transaction_with_payload(
    client: &Signer,
    channel: &str,
    key: &str,
    payload: Vec<u8>,
) -> Vec<u8> {
    let proposal = tx::new_proposal(channel, "kv", "put", vec![key.as_bytes().to_vec()], client);
    let transaction = Transaction {
        proposal: Some(tx::sign_proposal(client, &proposal)),
        payload,
        endorsements: Vec::new(),
    };
    prost::Message::encode_to_vec(&tx::sign_transaction(client, &transaction))
}

fn streaming(seal_max_txs: usize, seal_max_delay: Duration) -> OrdererConfig {
    OrdererConfig {
        seal_max_txs,
        seal_max_delay,
        ..OrdererConfig::default()
    }
}

/// What a subscriber saw, in order.
#[derive(Default)]
struct Seen {
    txs: Vec<(Seq, Vec<u8>)>,
    seals: Vec<(BlockNumber, Seq, Seq)>,
    sealed: Vec<SignedSealed>,
    durable: Seq,
    /// Items in arrival order: 't' for a transaction, 's' for a seal.
    order: String,
}

/// Reads `delivery` until `done(seen)`, checking each seal against the transactions
/// seen as a peer would.
fn read_until(
    delivery: &mut dyn Delivery,
    chain: &mut SealChain,
    msp: &Msp,
    seen: &mut Seen,
    done: impl Fn(&Seen) -> bool,
) {
    let deadline = Instant::now() + PATIENCE;
    let mut hashes: HashMap<Seq, Hash> = HashMap::new();
    for (seq, bytes) in &seen.txs {
        hashes.insert(*seq, runnel_node::block::tx_hash(bytes));
    }
    while !done(seen) {
        assert!(Instant::now() < deadline, "stream stalled");
        let Some(item) = delivery.next(Duration::from_millis(50)).expect("delivery") else {
            continue;
        };
        match item {
            Delivered::Tx(ordered) => {
                let expected = seen.txs.last().map_or(ordered.seq, |(seq, _)| seq.next());
                assert_eq!(ordered.seq, expected, "transactions in seq order, no gap");
                hashes.insert(ordered.seq, ordered.hash());
                seen.txs.push((ordered.seq, ordered.transaction));
                seen.order.push('t');
            }
            Delivered::Durable(seq) => {
                assert!(seq >= seen.durable, "durability only moves forward");
                seen.durable = seq;
            }
            Delivered::Seal(sealed) => {
                let range: Vec<Hash> = (sealed.seal.first.0..=sealed.seal.last.0)
                    .map(|seq| *hashes.get(&Seq(seq)).expect("seal after its transactions"))
                    .collect();
                let accepted = chain
                    .accept(&sealed.bytes, &range, msp)
                    .expect("seal verifies");
                seen.seals.push((
                    accepted.seal.number,
                    accepted.seal.first,
                    accepted.seal.last,
                ));
                seen.sealed.push(accepted);
                seen.order.push('s');
            }
        }
    }
}

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

    let first = transaction(&client, "main", "a");
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
        let bytes = transaction(&client, "main", &format!("k{i}"));
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
            .submit(transaction(&client, "main", &format!("{i}")))
            .unwrap();
    }
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 1
    });
    assert_eq!(seen.seals, vec![(BlockNumber(1), Seq(1), Seq(2))]);
    orderer.submit(transaction(&client, "main", "2")).unwrap();
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
            .submit(transaction(&client, "main", &format!("{i}")))
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
    orderer.submit(transaction(&client, "main", "3")).unwrap();
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
    assert_eq!(code(transaction(&client, "other", "k")), "WRONG_CHANNEL");
    // A peer may endorse but not submit.
    let peer = net.signer("Org1", Role::Peer);
    assert_eq!(code(transaction(&peer, "main", "k")), "ACCESS_DENIED");
    // A submitter from another network.
    let stranger = NetworkIdentities::generate(&["Org1"], time::Duration::days(1))
        .unwrap()
        .org("Org1")
        .unwrap()
        .signer(Role::Client)
        .unwrap();
    assert_eq!(code(transaction(&stranger, "main", "k")), "BAD_CREATOR");
    // A transaction altered after signing, and one signed by somebody else.
    let mut signed: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "k").as_slice()).unwrap();
    signed.transaction.push(0);
    assert_eq!(code(prost::Message::encode_to_vec(&signed)), "BAD_PAYLOAD");
    let mut signed: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "k").as_slice()).unwrap();
    let other: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "j").as_slice()).unwrap();
    signed.signature = other.signature;
    let forged = prost::Message::encode_to_vec(&signed);
    assert!(matches!(
        orderer.submit(forged),
        Err(OrderError::BadSignature)
    ));
    let mut signed: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "k").as_slice()).unwrap();
    signed.signature.truncate(10);
    assert_eq!(
        code(prost::Message::encode_to_vec(&signed)),
        "BAD_CREATOR_SIGNATURE"
    );

    // Nothing refused took a seq.
    assert_eq!(orderer.height(), Seq::ZERO);
    assert_eq!(
        orderer
            .submit(transaction(&client, "main", "k"))
            .unwrap()
            .seq,
        Seq(1)
    );
}

#[test]
fn a_batch_is_answered_in_order_bad_members_refused_alone_good_ones_sequenced() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let orderer = net.open(dir.path(), streaming(3, Duration::from_millis(10)));
    let client = net.signer("Org1", Role::Client);
    assert!(orderer.submits_in_batches());
    let mut forged: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "f").as_slice()).unwrap();
    forged.signature[0] ^= 1;
    let batch = vec![
        transaction(&client, "main", "a"),
        prost::Message::encode_to_vec(&forged),
        transaction(&client, "main", "b"),
        b"garbage".to_vec(),
        transaction(&client, "other", "c"),
        transaction(&client, "main", "d"),
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
        orderer.submit_batch(vec![transaction(&client, "main", "e")])[0]
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
            std::thread::spawn(move || {
                (0..EACH)
                    .map(|i| {
                        let bytes = transaction(&client, "main", &format!("{t}-{i}"));
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
            let bytes = transaction(&client, "main", &format!("{i}"));
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
            orderer.submit(transaction(&client, "main", "late")),
            Err(OrderError::Closed)
        ));
    }
    let orderer = net.open(dir.path(), streaming(4, Duration::from_secs(3600)));
    assert_eq!(orderer.height(), Seq(6));
    assert_eq!(orderer.durable_height(), Seq(6));
    for i in 6..8 {
        let bytes = transaction(&client, "main", &format!("{i}"));
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

/// A [`SoloOrderer`] served over gRPC on loopback, for a [`RemoteOrderer`] to reach.
struct Served {
    runtime: tokio::runtime::Runtime,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: Option<tokio::task::JoinHandle<()>>,
}

impl Served {
    fn start(orderer: Arc<dyn Orderer>) -> Served {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = runtime
            .block_on(OrderingServerHandle::bind(
                orderer,
                "127.0.0.1:0".parse().unwrap(),
                TRANSACTION_BYTES_MAX,
            ))
            .unwrap();
        let url = format!("http://{}", server.local_addr());
        let serving = runtime.spawn(async move {
            server
                .serve(None, async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        Served {
            runtime,
            url,
            stop: Some(stop),
            serving: Some(serving),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(serving) = self.serving.take() {
            let _ = self.runtime.block_on(serving);
        }
    }
}

#[test]
fn a_remote_orderer_orders_streams_and_refuses_like_the_local_one() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(2, PATIENCE)));
    let served = Served::start(local.clone());
    let remote =
        RemoteOrderer::connect(&served.url, None, TRANSACTION_BYTES_MAX, PATIENCE).unwrap();
    let client = net.signer("Org1", Role::Client);

    // Refusals keep their names and reasons across the network, and take no seq.
    let code = |bytes: Vec<u8>| remote.submit(bytes).unwrap_err().code();
    assert_eq!(code(b"\xff\xff garbage".to_vec()), "BAD_PAYLOAD");
    assert_eq!(code(transaction(&client, "other", "k")), "WRONG_CHANNEL");
    let peer = net.signer("Org1", Role::Peer);
    assert_eq!(code(transaction(&peer, "main", "k")), "ACCESS_DENIED");
    let mut signed: runnel_node::proto::SignedTransaction =
        prost::Message::decode(transaction(&client, "main", "k").as_slice()).unwrap();
    signed.signature[3] ^= 1;
    let forged = remote
        .submit(prost::Message::encode_to_vec(&signed))
        .unwrap_err();
    assert_eq!(forged.code(), "BAD_CREATOR_SIGNATURE");
    assert!(forged.to_string().contains("does not verify"), "{forged}");
    assert_eq!(remote.height(), Seq::ZERO);

    // Ordered remotely, streamed remotely: the same bytes, seqs and verifiable seals.
    let sent: Vec<Vec<u8>> = (0..4)
        .map(|i| transaction(&client, "main", &format!("k{i}")))
        .collect();
    for (i, bytes) in sent.iter().enumerate() {
        let ordered = remote.submit(bytes.clone()).unwrap();
        assert_eq!(ordered.seq, Seq(i as u64 + 1));
    }
    assert_eq!(remote.height(), Seq(4));
    let mut delivery = remote.deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut chain = SealChain::genesis();
    let mut seen = Seen::default();
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 2 && s.durable >= Seq(4)
    });
    let expected: Vec<(Seq, Vec<u8>)> = sent
        .iter()
        .enumerate()
        .map(|(i, b)| (Seq(i as u64 + 1), b.clone()))
        .collect();
    assert_eq!(seen.txs, expected);
    assert_eq!(
        seen.seals,
        vec![
            (BlockNumber(1), Seq(1), Seq(2)),
            (BlockNumber(2), Seq(3), Seq(4))
        ]
    );
    // A stream from the middle starts there.
    let mut later = remote.deliver(Seq(3), BlockNumber(2)).unwrap();
    let mut chain = SealChain::after(&seen.sealed[0]);
    let mut tail = Seen::default();
    read_until(&mut *later, &mut chain, &net.msp, &mut tail, |s| {
        s.seals.len() == 1
    });
    assert_eq!(tail.txs, expected[2..]);
    drop(served);

    // With the orderer gone, calls fail as unavailable and the stream waits.
    let gone = remote
        .submit(transaction(&client, "main", "z"))
        .unwrap_err();
    assert_eq!(gone.code(), "ORDERER_UNAVAILABLE", "{gone}");
    assert!(matches!(
        delivery.next(Duration::from_millis(200)),
        Ok(None)
    ));
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
        transaction_with_payload(&client, "main", key, vec![key.as_bytes()[0]; 512 << 10])
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
