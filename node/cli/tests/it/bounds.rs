//! Requests that one client or one rogue peer sends must fail only themselves, and must
//! not bloat the ledger, on `runnel up` networks (each node its own process, with only
//! its own organisation's keys): junk and oversized submits flooding a peer while honest
//! invokes commit; a rogue endorser repeating its endorsement; a transaction carrying
//! more endorsements than any policy uses; a submitter past its share of the orderer's
//! bytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use prost::Message;
use runnel_ledger::identity::Role;
use runnel_ledger::proto::{Proposal, SignedProposal, SignedTransaction, Transaction};
use runnel_ledger::tx;
use runnel_server::proto::endorse_batch_response::result::Outcome;
use runnel_server::proto::endorser_client::EndorserClient;
use runnel_server::proto::endorser_server::{Endorser, EndorserServer};
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::{EndorseBatchRequest, EndorseBatchResponse, SubmitRequest};
use tonic::{Request, Response, Status};

use crate::orgs::{Network, endorse, error_name, free_ports, runtime, submit};
use crate::process::Node;

/// A transaction that decodes but that no one of the network signed: a 17 MiB argument
/// under a creator certificate of junk.
fn junk(bytes: usize) -> Vec<u8> {
    let proposal = Proposal {
        channel: "main".into(),
        contract: "kv".into(),
        function: "put".into(),
        args: vec![vec![0x5a; bytes]],
        creator: b"not a certificate".to_vec(),
        nonce: vec![1; 24],
        timestamp_ms: tx::now_ms(),
    };
    let transaction = Transaction {
        proposal: Some(SignedProposal {
            proposal: proposal.encode_to_vec(),
            signature: vec![0; 64],
        }),
        payload: Vec::new(),
        endorsements: Vec::new(),
    };
    SignedTransaction {
        transaction: transaction.encode_to_vec(),
        signature: vec![0; 64],
    }
    .encode_to_vec()
}

/// While anyone floods Org1's peer with junk submits of 17 MiB (and some larger than any
/// transaction), every honest invoke through it commits: the peer checks a submit's
/// creator and signature before it queues it, and cuts its batches to the orderer by
/// bytes. Before: the peer queued the junk beside honest transactions and sent them as
/// one `BroadcastBatch` larger than the orderer takes, failing the honest ones with
/// `ORDERER_UNAVAILABLE: h2 protocol error`. The junk itself is refused with its code.
/// Then the orderer process bounds a submitter's bytes: past its share, its invokes are
/// refused (`SUBMITTER_QUOTA_EXCEEDED`) while another's go on.
#[test]
fn junk_submits_flooding_a_peer_fail_alone_and_the_orderer_bounds_each_submitter() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();
    let url = net.url("Org1/peer0");
    let people = net.dir.join("Org1");

    let flooding = Arc::new(AtomicBool::new(true));
    let refusals = Arc::new(AtomicUsize::new(0));
    let floods: Vec<_> = (0..4)
        .map(|i| {
            let (flooding, refusals) = (flooding.clone(), refusals.clone());
            let (url, people) = (url.clone(), people.clone());
            std::thread::spawn(move || {
                runtime().block_on(async move {
                    let connection = runnel_client::Connection::to(&url, &people, "Org1");
                    let channel = runnel_client::connect(&connection).await.unwrap();
                    let mut gateway = GatewayClient::new(channel)
                        .max_encoding_message_size(64 << 20)
                        .max_decoding_message_size(64 << 20);
                    // One flooder in four sends more than any transaction may hold.
                    let size = if i == 3 { 40 << 20 } else { 17 << 20 };
                    let bytes = junk(size);
                    while flooding.load(Ordering::SeqCst) {
                        let refused = gateway
                            .submit(SubmitRequest {
                                transaction: bytes.clone(),
                                wait_for: 0,
                            })
                            .await
                            .unwrap_err();
                        let expected = if i == 3 {
                            "MESSAGE_TOO_LARGE"
                        } else {
                            "BAD_CREATOR"
                        };
                        assert_eq!(error_name(&refused), expected, "{refused:?}");
                        refusals.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
        })
        .collect();

    // Honest invokes, four at a time, while the junk flows.
    let mut failures = Vec::new();
    for round in 0..5 {
        let outputs: Vec<std::process::Output> = std::thread::scope(|scope| {
            let invokes: Vec<_> = (0..4)
                .map(|i| {
                    let key = format!("honest-{round}-{i}");
                    let net = &net;
                    scope.spawn(move || {
                        net.run("Org1/peer0", "Org1", &["invoke", "kv", "put", &key, "v"])
                    })
                })
                .collect();
            invokes.into_iter().map(|i| i.join().unwrap()).collect()
        });
        failures.extend(
            outputs
                .into_iter()
                .filter(|output| !output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stderr).into_owned()),
        );
    }
    flooding.store(false, Ordering::SeqCst);
    for flood in floods {
        flood.join().unwrap();
    }
    assert!(failures.is_empty(), "honest invokes failed: {failures:#?}");
    assert!(
        refusals.load(Ordering::SeqCst) >= 4,
        "the junk never flowed"
    );

    // The orderer process, its share per submitter set to 100 bytes a second (200 at
    // once): one invoke (a few kB) takes a full share and goes into debt for tens of
    // seconds, so the next is refused at the orderer, named as such through the peer;
    // another organisation's client goes on.
    net.stop("Org1/orderer0");
    let settings = net.node("Org1/orderer0").join("runnel.toml");
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(
        &settings,
        text.replace(
            "submitter_bytes_per_s_max = 67108864",
            "submitter_bytes_per_s_max = 100",
        ),
    )
    .unwrap();
    net.up();
    let first = net.run("Org1/peer0", "Org1", &["invoke", "kv", "put", "q1", "v"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let refused = net.fails("Org1/peer0", "Org1", &["invoke", "kv", "put", "q2", "v"]);
    assert!(refused.contains("SUBMITTER_QUOTA_EXCEEDED"), "{refused}");
    let other = net.run("Org2/peer0", "Org2", &["invoke", "kv", "put", "q3", "v"]);
    assert!(
        other.status.success(),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
}

/// An Org2 peer gone rogue: it endorses honestly, then repeats its endorsement.
struct RogueEndorser {
    upstream: runnel_client::NodeChannel,
    repeats: usize,
}

#[tonic::async_trait]
impl Endorser for RogueEndorser {
    async fn endorse_batch(
        &self,
        request: Request<EndorseBatchRequest>,
    ) -> Result<Response<EndorseBatchResponse>, Status> {
        let mut answer = EndorserClient::new(self.upstream.clone())
            .max_decoding_message_size(64 << 20)
            .endorse_batch(request.into_inner())
            .await?
            .into_inner();
        for result in &mut answer.results {
            if let Some(Outcome::Transaction(bytes)) = &mut result.outcome {
                let mut transaction = Transaction::decode(bytes.as_slice()).unwrap();
                let own = transaction.endorsements[0].clone();
                transaction.endorsements = vec![own; self.repeats];
                *bytes = transaction.encode_to_vec();
            }
        }
        Ok(Response::new(answer))
    }
}

/// Serves a [`RogueEndorser`] on `port` over TLS with Org2's peer's own certificate,
/// until the test process ends, endorsing through Org2's real peer at `upstream` as
/// Org2's client (`people`) and repeating each endorsement `repeats` times.
fn serve_rogue(
    port: u16,
    node_dir: &std::path::Path,
    (upstream, people): (String, std::path::PathBuf),
    repeats: usize,
) {
    let tls = runnel_server::TlsConfig::new(
        node_dir.join("identities/Org2/tls/server.pem"),
        node_dir.join("identities/Org2/tls/server.key"),
    )
    .server_config()
    .unwrap();
    let (ready, is_ready) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime().block_on(async move {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .unwrap();
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            let (accepted, incoming) = tokio::sync::mpsc::channel(16);
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (acceptor, accepted) = (acceptor.clone(), accepted.clone());
                    tokio::spawn(async move {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            let _ = accepted.send(Ok::<_, std::io::Error>(tls)).await;
                        }
                    });
                }
            });
            // Made on this runtime, which drives its connection.
            let connection = runnel_client::Connection::to(&upstream, &people, "Org2");
            let rogue = RogueEndorser {
                upstream: runnel_client::connect(&connection).await.unwrap(),
                repeats,
            };
            ready.send(()).unwrap();
            tonic::transport::Server::builder()
                .add_service(
                    EndorserServer::new(rogue)
                        .max_encoding_message_size(64 << 20)
                        .max_decoding_message_size(64 << 20),
                )
                .serve_with_incoming(tokio_stream::wrappers::ReceiverStream::new(incoming))
                .await
                .unwrap();
        });
    });
    is_ready.recv().unwrap();
}

/// A rogue Org2 peer, in the place the network definition gives Org2's peer and with its
/// TLS certificate, answers each proposal with its endorsement repeated 3,000 times (about
/// 2 MB). Org1's gateway keeps one: the invoke commits VALID with one endorsement of each
/// organisation, and `runnel tx` reads it back. Before: every copy went into the
/// transaction, which committed VALID and that every node stored. A transaction that a
/// client fills with more endorsements than any policy uses is refused
/// (`TOO_MANY_ENDORSEMENTS`) and nothing is ordered.
#[test]
fn a_rogue_endorser_repeating_its_endorsement_adds_one_and_crowded_transactions_are_refused() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();
    // Org2's real peer moves to a port of its own; the rogue takes its place.
    let place: u16 = net
        .url("Org2/peer0")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    net.stop("Org2/peer0");
    let moved = free_ports(1);
    let real = Node::start_on(
        &["start"],
        &net.node("Org2/peer0"),
        &format!("127.0.0.1:{moved}"),
    )
    .clients_from(&net.dir.join("Org2"));
    serve_rogue(
        place,
        &net.node("Org2/peer0"),
        (format!("https://127.0.0.1:{moved}"), net.dir.join("Org2")),
        3_000,
    );

    // The rogue answers as Org2's peer would.
    runtime().block_on(async {
        let connection = runnel_client::Connection::to(
            &format!("https://127.0.0.1:{place}"),
            &net.dir.join("Org1"),
            "Org1",
        );
        let channel = runnel_client::connect_channel(&connection).await.unwrap();
        EndorserClient::new(channel)
            .endorse_batch(EndorseBatchRequest { proposals: vec![] })
            .await
            .unwrap();
    });
    let put = net.json(
        "Org1/peer0",
        "Org1",
        &["invoke", "kv", "put", "colour", "blue"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    let shown = net.json(
        "Org1/peer0",
        "Org1",
        &["tx", put["tx_id"].as_str().unwrap()],
    );
    assert_eq!(
        shown["endorsements"],
        serde_json::json!(["Org1.peer (peer0.Org1)", "Org2.peer (peer0.Org2)"])
    );

    // A client that adds copies of the endorsements it was given, past ENDORSEMENTS_MAX.
    let url = net.url("Org1/peer0");
    let people = net.dir.join("Org1");
    runtime().block_on(async {
        let mut endorsed = endorse(
            &url,
            &people,
            ("Org1", None),
            ("kv", "put", &["crowded", "x"]),
            &[],
        )
        .await
        .unwrap();
        assert_eq!(endorsed.endorsements.len(), 2);
        let connection = runnel_client::Connection::to(&url, &people, "Org1");
        let client = runnel_client::signer(&connection, Role::Client).unwrap();
        // Org2's certificate with Org1's signature: refused by the peer before it
        // queues, alone.
        let mut forged = endorsed.clone();
        forged.endorsements = vec![forged.endorsements[1].clone()];
        forged.endorsements[0].signature = endorsed.endorsements[0].signature.clone();
        let refused = submit(&url, &people, "Org1", &client, &forged)
            .await
            .unwrap_err();
        assert_eq!(
            error_name(&refused),
            "BAD_ENDORSER_SIGNATURE",
            "{refused:?}"
        );
        let copy = endorsed.endorsements[1].clone();
        endorsed
            .endorsements
            .extend(std::iter::repeat_n(copy, tx::ENDORSEMENTS_MAX - 1));
        let refused = submit(&url, &people, "Org1", &client, &endorsed)
            .await
            .unwrap_err();
        assert_eq!(error_name(&refused), "TOO_MANY_ENDORSEMENTS", "{refused:?}");
    });
    let get = net.json("Org1/peer0", "Org1", &["query", "kv", "get", "crowded"]);
    assert_eq!(get, serde_json::Value::Null, "nothing was ordered: {get}");
    drop(real);
}
