//! The solo orderer reached over gRPC as another process's peers reach it
//! ([`RemoteOrderer`]): the same stream, seals and refusals as in process.

use std::sync::Arc;
use std::time::Duration;

use runnel_ledger::block::SealChain;
use runnel_ledger::identity::Role;
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{Orderer, TRANSACTION_BYTES_MAX};
use runnel_orderer::ordering::OrderingServerHandle;
use runnel_orderer::remote::RemoteOrderer;
use runnel_testing::orderer::{Net, PATIENCE, Seen, read_until, streaming, transaction};

/// A solo orderer served over gRPC on loopback, for a [`RemoteOrderer`] to reach.
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
    assert_eq!(
        code(transaction(&net, &client, "other", "k")),
        "WRONG_CHANNEL"
    );
    let peer = net.signer("Org1", Role::Peer);
    assert_eq!(code(transaction(&net, &peer, "main", "k")), "ACCESS_DENIED");
    let mut signed: runnel_ledger::proto::SignedTransaction =
        prost::Message::decode(transaction(&net, &client, "main", "k").as_slice()).unwrap();
    signed.signature[3] ^= 1;
    let forged = remote
        .submit(prost::Message::encode_to_vec(&signed))
        .unwrap_err();
    assert_eq!(forged.code(), "BAD_CREATOR_SIGNATURE");
    assert!(forged.to_string().contains("does not verify"), "{forged}");
    assert_eq!(remote.height(), Seq::ZERO);

    // Ordered remotely, streamed remotely: the same bytes, seqs and verifiable seals.
    let sent: Vec<Vec<u8>> = (0..4)
        .map(|i| transaction(&net, &client, "main", &format!("k{i}")))
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
        .submit(transaction(&net, &client, "main", "z"))
        .unwrap_err();
    assert_eq!(gone.code(), "ORDERER_UNAVAILABLE", "{gone}");
    assert!(matches!(
        delivery.next(Duration::from_millis(200)),
        Ok(None)
    ));
}

/// Peers (or anyone who can reach the port) open ordering streams until the orderer
/// refuses: the streams are bounded, each reads on a thread of its own, and Broadcast,
/// which needs the runtime's blocking pool, is still served.
#[test]
fn ordering_streams_are_bounded_and_broadcast_goes_on() {
    use runnel_orderer::ordering::STREAMS_MAX;
    use runnel_server::proto::ordering_client::OrderingClient;
    use runnel_server::proto::{BroadcastRequest, StreamRequest};

    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(2, PATIENCE)));
    let served = Served::start(local);
    let client = net.signer("Org1", Role::Client);
    let url = served.url.clone();
    served.runtime.block_on(async move {
        let mut ordering = OrderingClient::connect(url.clone()).await.unwrap();
        let far = StreamRequest {
            from_seq: 1,
            next_block: 1,
        };
        let mut held = Vec::new();
        while held.len() < STREAMS_MAX {
            // Several connections, as many peers would open.
            let mut peer = OrderingClient::connect(url.clone()).await.unwrap();
            for _ in 0..8 {
                held.push(peer.stream(far).await.expect("within the bound"));
            }
        }
        let refused = ordering.stream(far).await.expect_err("past the bound");
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        let ordered = ordering
            .broadcast(BroadcastRequest {
                signed_transaction: transaction(&net, &client, "main", "k"),
            })
            .await
            .expect("broadcast still served")
            .into_inner();
        assert_eq!(ordered.seq, 1);
        drop(held);
    });
}

/// Outside dev an orderer serves its peers only: over TLS, to a connection whose client
/// certificate is a peer's of the network. Anyone else who can reach the port, with no
/// certificate, a TLS client certificate, or a member's that is no peer's, is refused.
#[test]
fn an_orderer_serving_peers_only_refuses_everyone_else() {
    use runnel_ledger::identity::{TLS_CA_FILE, TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE};
    use runnel_server::TlsConfig;
    use runnel_server::proto::HeightsRequest;
    use runnel_server::proto::ordering_client::OrderingClient;
    use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let identities = dir.path().join("identities");
    net.ids.write(dir.path(), "main").unwrap();
    let file = |org: &str, name: &str| identities.join(org).join(name);
    let orderer: Arc<dyn Orderer> =
        Arc::new(net.open(&dir.path().join("orderer"), streaming(2, PATIENCE)));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let bind = || {
        runtime
            .block_on(OrderingServerHandle::bind(
                orderer.clone(),
                "127.0.0.1:0".parse().unwrap(),
                TRANSACTION_BYTES_MAX,
            ))
            .unwrap()
            .peers_only(net.msp.clone())
    };

    // Peers only, in the clear: refused at start.
    let error = runtime
        .block_on(bind().serve(None, async {}))
        .expect_err("no TLS");
    assert!(error.to_string().contains("mutual TLS"), "{error}");

    let tls = TlsConfig::new(
        file("Org1", TLS_SERVER_CERT_FILE),
        file("Org1", TLS_SERVER_KEY_FILE),
    );
    let server = bind();
    let url = format!("https://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn(async move {
        server
            .serve(Some(&tls), async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let ca = std::fs::read(file("Org1", TLS_CA_FILE)).unwrap();
    let call = |client: Option<(&str, &str, &str)>| {
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&ca));
        if let Some((org, cert, key)) = client {
            config = config.identity(Identity::from_pem(
                std::fs::read(file(org, cert)).unwrap(),
                std::fs::read(file(org, key)).unwrap(),
            ));
        }
        let url = url.clone();
        runtime.block_on(async move {
            let channel = Channel::from_shared(url)
                .unwrap()
                .tls_config(config)
                .unwrap()
                .connect()
                .await
                .unwrap();
            OrderingClient::new(channel)
                .heights(HeightsRequest {})
                .await
                .map(|_| ())
        })
    };
    let name = |status: &tonic::Status| {
        status
            .metadata()
            .get("runnel-error-code")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };

    let anonymous = call(None).unwrap_err();
    assert_eq!(
        anonymous.code(),
        tonic::Code::Unauthenticated,
        "{anonymous:?}"
    );
    assert_eq!(name(&anonymous).as_deref(), Some("IDENTITY_REQUIRED"));
    // A TLS CA's client certificate chains to nothing the orderer trusts: the handshake
    // fails, and the call with it.
    let transport_only = call(Some(("Org1", "tls/client.pem", "tls/client.key")));
    assert!(transport_only.is_err(), "{transport_only:?}");
    let client = call(Some(("Org2", "client.pem", "client.key"))).unwrap_err();
    assert_eq!(client.code(), tonic::Code::PermissionDenied, "{client:?}");
    assert_eq!(name(&client).as_deref(), Some("ACCESS_DENIED"));
    call(Some(("Org2", "peer.pem", "peer.key"))).expect("a peer of the network is served");

    let _ = stop.send(());
    runtime.block_on(serving).unwrap();
}

#[test]
fn a_batch_over_the_network_is_answered_in_order_each_refusal_with_its_reason() {
    // What a peer sends when its clients submit at once: one BroadcastBatch call; each
    // transaction is ordered or refused as alone, in its place.
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(100, PATIENCE)));
    let served = Served::start(local.clone());
    let remote =
        RemoteOrderer::connect(&served.url, None, TRANSACTION_BYTES_MAX, PATIENCE).unwrap();
    assert!(remote.submits_in_batches());
    let client = net.signer("Org1", Role::Client);
    let first = transaction(&net, &client, "main", "a");
    let answers = remote.submit_batch(vec![
        first.clone(),
        first,
        b"\xff garbage".to_vec(),
        transaction(&net, &client, "other", "b"),
        transaction(&net, &client, "main", "c"),
    ]);
    let outcome: Vec<Result<u64, &str>> = answers
        .iter()
        .map(|answer| match answer {
            Ok(ordered) => Ok(ordered.seq.0),
            Err(error) => Err(error.code()),
        })
        .collect();
    assert_eq!(
        outcome,
        [
            Ok(1),
            Err("DUPLICATE_TXID"),
            Err("BAD_PAYLOAD"),
            Err("WRONG_CHANNEL"),
            Ok(2)
        ]
    );
    assert_eq!(local.height(), Seq(2));
}

/// A stream read from the start once the log holds more than one stream message carries
/// (over a thousand transactions, several of them hundreds of kilobytes): every
/// transaction and seal arrives once, in order, whole, across the messages' bounds.
#[test]
fn a_stream_of_many_and_large_transactions_arrives_whole_and_in_order() {
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(100, PATIENCE)));
    let served = Served::start(local.clone());
    let remote =
        RemoteOrderer::connect(&served.url, None, TRANSACTION_BYTES_MAX, PATIENCE).unwrap();
    let client = net.signer("Org1", Role::Client);
    let sent: Vec<Vec<u8>> = (0..1200)
        .map(|i| {
            // Every 200th is 400 KB: a few of them pass a message's byte bound.
            let size = if i % 200 == 7 { 400 << 10 } else { 16 };
            runnel_testing::orderer::transaction_with_payload(
                &net,
                &client,
                "main",
                &format!("k{i}"),
                vec![i as u8; size],
            )
        })
        .collect();
    for chunk in sent.chunks(100) {
        for result in remote.submit_batch(chunk.to_vec()) {
            result.unwrap();
        }
    }
    let mut delivery = remote.deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut chain = SealChain::genesis();
    let mut seen = Seen::default();
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.seals.len() == 12
    });
    let expected: Vec<(Seq, Vec<u8>)> = sent
        .into_iter()
        .enumerate()
        .map(|(i, b)| (Seq(i as u64 + 1), b))
        .collect();
    assert_eq!(seen.txs.len(), expected.len());
    assert!(
        seen.txs == expected,
        "the stream differs from what was ordered"
    );
    assert_eq!(seen.seals[11], (BlockNumber(12), Seq(1101), Seq(1200)));
}

#[test]
fn a_remote_orderer_moves_to_the_orderers_it_is_given_and_its_stream_goes_on() {
    // One orderer behind two endpoints, as the orderers of a cluster stream the same
    // transactions at the same seqs. The peer's link starts with the first alone; a
    // configuration update names the second in its place: calls and the stream move
    // there while the first still answers, and once it is gone nothing is missed.
    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(2, PATIENCE)));
    let first = Served::start(local.clone());
    let second = Served::start(local.clone());
    let remote = RemoteOrderer::connect(&first.url, None, TRANSACTION_BYTES_MAX, PATIENCE).unwrap();
    let client = net.signer("Org1", Role::Client);
    let mut delivery = remote.deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut chain = SealChain::genesis();
    let mut seen = Seen::default();
    for key in ["a", "b"] {
        remote
            .submit(transaction(&net, &client, "main", key))
            .unwrap();
    }
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == 2
    });

    assert!(
        remote.set_members(&[]).is_err(),
        "a peer always has an orderer"
    );
    remote.set_members(&[(second.url.clone(), 0)]).unwrap();
    assert_eq!(remote.endpoint(), second.url);
    assert_eq!(remote.members(), vec![(second.url.clone(), 0)]);
    // The stream leaves the first orderer at its next check, so its going away later is
    // nothing to the peer.
    std::thread::sleep(2 * runnel_orderer::remote::LEADER_CHECK);
    drop(first);
    for key in ["c", "d", "e"] {
        remote
            .submit(transaction(&net, &client, "main", key))
            .unwrap();
    }
    read_until(&mut *delivery, &mut chain, &net.msp, &mut seen, |s| {
        s.txs.len() == 5 && s.seals.len() == 2
    });
    assert_eq!(
        seen.txs.iter().map(|(seq, _)| seq.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    drop(second);
}

/// A peer's batch holding transactions whose bytes together pass what the orderer takes
/// goes as several calls of at most `BROADCAST_BATCH_BYTES_MAX`: every transaction is
/// ordered. Before: one `BroadcastBatch` for all, refused whole for its size. The
/// ordering service bounds each method before decoding: a `BroadcastBatch` past its bytes
/// is refused from its frame header (`MESSAGE_TOO_LARGE`), one with more transactions
/// than it takes from their count (`TOO_MANY_ITEMS`), and it goes on serving.
#[test]
fn a_batch_larger_than_the_orderer_takes_is_cut_and_each_method_is_bounded() {
    use runnel_orderer::ordering::{BROADCAST_BATCH_BYTES_MAX, BROADCAST_BATCH_REQUEST_MAX};
    use runnel_server::proto::BroadcastBatchRequest;
    use runnel_server::proto::ordering_client::OrderingClient;

    let net = Net::new();
    let dir = tempfile::tempdir().unwrap();
    let local: Arc<dyn Orderer> = Arc::new(net.open(dir.path(), streaming(100, PATIENCE)));
    let served = Served::start(local.clone());
    let remote =
        RemoteOrderer::connect(&served.url, None, TRANSACTION_BYTES_MAX, PATIENCE).unwrap();
    let client = net.signer("Org1", Role::Client);
    // Eleven of 3 MiB and one of 5 MiB: 38 MiB in all, more than the orderer takes in
    // one message; the one of 5 MiB, larger than a batch, goes alone.
    let sizes = [3, 3, 3, 3, 3, 5, 3, 3, 3, 3, 3, 3];
    let batch: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, mib)| {
            runnel_testing::orderer::transaction_with_payload(
                &net,
                &client,
                "main",
                &format!("big{i}"),
                vec![i as u8; mib << 20],
            )
        })
        .collect();
    let seqs: Vec<u64> = remote
        .submit_batch(batch)
        .into_iter()
        .map(|answer| answer.unwrap().seq.0)
        .collect();
    assert_eq!(seqs, (1..=12).collect::<Vec<u64>>());

    let url = served.url.clone();
    served.runtime.block_on(async move {
        let mut ordering = OrderingClient::connect(url)
            .await
            .unwrap()
            .max_encoding_message_size(64 << 20);
        let too_big = BroadcastBatchRequest {
            signed_transactions: vec![vec![0; 1 << 20]; BROADCAST_BATCH_BYTES_MAX / (1 << 20) + 1],
        };
        let refused = ordering.broadcast_batch(too_big).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().starts_with("MESSAGE_TOO_LARGE"),
            "{refused:?}"
        );
        let too_many = BroadcastBatchRequest {
            signed_transactions: vec![Vec::new(); BROADCAST_BATCH_REQUEST_MAX + 1],
        };
        let refused = ordering.broadcast_batch(too_many).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused.message().starts_with("TOO_MANY_ITEMS"),
            "{refused:?}"
        );
        let fine = BroadcastBatchRequest {
            signed_transactions: vec![transaction(&net, &client, "main", "after")],
        };
        let answer = ordering.broadcast_batch(fine).await.unwrap().into_inner();
        assert_eq!(answer.results.len(), 1);
    });
    assert_eq!(local.height(), Seq(13));
}
