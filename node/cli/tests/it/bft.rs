//! Byzantine-fault-tolerant ordering with real processes: four orderers of two
//! organisations (f = 1), each started by `runnel up` with only its own organisation's
//! keys, and a peer of each. Under a running load every orderer streams the same
//! transactions at the same seqs, every seal carries the signatures of three distinct
//! members over the same seal bytes, and both peers hold every acknowledged transaction
//! and agree on the state. One orderer silenced (SIGKILL), the other three go on; two
//! silenced, nothing is ordered anywhere (safety over liveness); back, ordering resumes
//! without a fork and the stopped ones catch up. An orderer that withholds the stream
//! from a peer and drops the transactions that peer submits neither censors the peer's
//! clients nor stalls the peer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_ledger::block::{SealChain, Sealers, leaf};
use runnel_ledger::identity::NetworkDefinition;
use runnel_ledger::orderer::OrderedTx;
use runnel_ledger::proto::SignedSeal;
use runnel_server::proto::consensus_client::ConsensusClient;
use runnel_server::proto::ordering_item::Item;
use runnel_server::proto::{ConsensusMessage, ConsensusRequest};

use crate::orgs::{Network, Proxy, runtime};
use crate::partition::through_proxies;
use crate::raft_cluster::{Load, all_committed_on_every_peer, kill, pid_of, up_again};

/// The orderers `runnel init --orderers 4` makes for two organisations.
pub(crate) const ORDERERS: [&str; 4] = [
    "Org1/orderer0",
    "Org2/orderer0",
    "Org1/orderer1",
    "Org2/orderer1",
];

/// One orderer's stream from the start: its transactions (seq, timestamp, bytes) and
/// its seals, until its seals cover `height` transactions.
pub(crate) async fn stream_of(
    net: &Network,
    node: &str,
    height: u64,
) -> (Vec<OrderedTx>, Vec<SignedSeal>) {
    let mut stream = crate::raft_cluster::stream_from_start(net, node).await;
    let (mut txs, mut seals) = (Vec::new(), Vec::<SignedSeal>::new());
    let sealed = |seals: &[SignedSeal]| {
        seals.last().map_or(0, |signed| {
            runnel_ledger::block::Seal::decode(&signed.seal)
                .unwrap()
                .last
                .0
        })
    };
    while sealed(&seals) < height {
        let message = tokio::time::timeout(Duration::from_secs(20), stream.message())
            .await
            .unwrap_or_else(|_| panic!("{node}'s stream stopped short of {height}"))
            .unwrap()
            .unwrap();
        for item in message.items {
            match item.item {
                Some(Item::Transaction(bytes)) => txs.push(OrderedTx::decode(&bytes).unwrap()),
                Some(Item::Seal(bytes)) => {
                    seals.push(prost::Message::decode(bytes.as_slice()).unwrap());
                }
                _ => {}
            }
        }
    }
    (txs, seals)
}

/// The height every orderer of `nodes` has reached, at least `at_least`.
pub(crate) fn common_height(
    rt: &tokio::runtime::Runtime,
    net: &Network,
    nodes: &[&str],
    at_least: u64,
) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let heights: Vec<Option<u64>> = nodes
            .iter()
            .map(|node| {
                rt.block_on(crate::raft_cluster::view(net, node))
                    .map(|v| v.2)
            })
            .collect();
        let least = heights.iter().map(|h| h.unwrap_or(0)).min().unwrap_or(0);
        if least >= at_least {
            return least;
        }
        assert!(
            Instant::now() < deadline,
            "the orderers never all reached {at_least}: {heights:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every orderer of `nodes` streams the same transactions at the same seqs up to a
/// common height (at least `at_least`), and every seal over them is the same seal,
/// signed by at least three distinct members of the definition, each signature holding.
/// The height checked.
pub(crate) fn streams_agree(
    rt: &tokio::runtime::Runtime,
    net: &Network,
    nodes: &[&str],
    at_least: u64,
) -> u64 {
    let height = common_height(rt, net, nodes, at_least);
    let definition = NetworkDefinition::load(&net.node("Org1/peer0")).unwrap();
    let msp = definition.msp().unwrap();
    let sealers = Sealers::of(&definition, &msp);
    assert_eq!(sealers.required(), 3);
    let streams: Vec<_> = nodes
        .iter()
        .map(|node| rt.block_on(stream_of(net, node, height)))
        .collect();
    let (first_txs, first_seals) = &streams[0];
    for (node, (txs, seals)) in nodes.iter().zip(&streams).skip(1) {
        let common = txs.len().min(first_txs.len());
        assert_eq!(txs[..common], first_txs[..common], "{node}'s transactions");
        let common = seals.len().min(first_seals.len());
        for (mine, theirs) in seals[..common].iter().zip(&first_seals[..common]) {
            assert_eq!(mine.seal, theirs.seal, "{node}'s seal bytes");
        }
    }
    for (node, (txs, seals)) in nodes.iter().zip(&streams) {
        let mut chain = SealChain::genesis();
        for signed in seals {
            let seal = runnel_ledger::block::Seal::decode(&signed.seal).unwrap();
            let leaves: Vec<_> = txs[(seal.first.0 - 1) as usize..seal.last.0 as usize]
                .iter()
                .map(|ordered| leaf(ordered.timestamp_ms, &ordered.transaction))
                .collect();
            chain
                .accept(&prost::Message::encode_to_vec(signed), &leaves, &sealers)
                .unwrap_or_else(|e| panic!("{node}'s seal {}: {e}", seal.number.0));
            assert!(
                signed.signatures.len() >= 3,
                "{node}'s seal {}",
                seal.number.0
            );
        }
    }
    height
}

/// `node`'s `/metrics` (read as a member) count the cluster's four members, the batches
/// it applied and the seals it gathered, and no lie detected.
fn consensus_metrics_say_so(net: &Network, node: &str) {
    let metrics = crate::raft_cluster::member_metrics(net, node);
    let value = |name: &str| crate::raft_cluster::metric(&metrics, name);
    assert_eq!(value("runnel_bft_members"), Some(4), "{metrics}");
    assert!(value("runnel_bft_batches") > Some(0), "{metrics}");
    assert!(
        value("runnel_bft_view") >= value("runnel_bft_applied_view"),
        "{metrics}"
    );
    assert!(
        value("runnel_bft_seal_seconds_count") > Some(0),
        "{metrics}"
    );
    assert_eq!(value("runnel_bft_equivocations"), Some(0), "{metrics}");
}

#[test]
fn four_orderers_agree_on_every_batch_sign_every_seal_together_and_survive_a_silent_one() {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    net.up();
    let net = Arc::new(net);
    let rt = runtime();

    // Only the cluster's orderers may speak on its consensus channels: a peer of the
    // network (its certificate over mutual TLS) is refused, and nothing it sent is heard.
    rt.block_on(async {
        let peer = net.node("Org1/peer0");
        let own = peer.join("identities/Org1");
        let connection = runnel_client::Connection {
            tls_client_cert: Some(own.join("peer.pem")),
            tls_client_key: Some(own.join("peer.key")),
            ..runnel_client::Connection::to(&net.url(ORDERERS[0]), &peer, "Org1")
        };
        let channel = runnel_client::connect_channel(&connection).await.unwrap();
        let forged = ConsensusRequest {
            messages: vec![ConsensusMessage {
                channel: 0,
                message: vec![0; 64],
            }],
        };
        let refused = ConsensusClient::new(channel)
            .send(tokio_stream::iter(vec![forged]))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    });

    // Under load: one stream, everywhere, every seal a quorum's.
    let load = Load::start(&net, 4);
    std::thread::sleep(Duration::from_secs(3));
    let (acknowledged, _) = load.stop();
    assert!(acknowledged.len() > 10, "load ran: {}", acknowledged.len());
    all_committed_on_every_peer(&net, &acknowledged);
    let height = streams_agree(&rt, &net, &ORDERERS, 1);
    consensus_metrics_say_so(&net, ORDERERS[0]);

    // One orderer silenced: the other three order on.
    kill(&net.node("Org2/orderer1"));
    for (peer, org) in [("Org1/peer0", "Org1"), ("Org2/peer0", "Org2")] {
        let put = net.json(peer, org, &["invoke", "kv", "put", org, "one-down"]);
        assert_eq!(put["code"], "VALID", "{put}");
    }
    let live = &ORDERERS[..3];
    let height = streams_agree(&rt, &net, live, height + 2);

    // Two silenced: fewer than 2f + 1 are left, and nothing is ordered anywhere.
    kill(&net.node("Org1/orderer1"));
    let refused = net.fails(
        "Org1/peer0",
        "Org1",
        &["invoke", "kv", "put", "two", "down"],
    );
    assert!(!refused.is_empty());
    std::thread::sleep(Duration::from_secs(1));
    for node in &ORDERERS[..2] {
        let now = rt
            .block_on(crate::raft_cluster::view(&net, node))
            .unwrap()
            .2;
        assert_eq!(now, height, "{node} ordered without a quorum");
    }

    // Back: ordering resumes without a fork, and the two stopped catch up.
    up_again(&net);
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "back", "again"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    streams_agree(&rt, &net, &ORDERERS, height + 1);
    all_committed_on_every_peer(&net, &acknowledged);
}

#[test]
fn an_orderer_that_withholds_the_stream_and_drops_a_peers_transactions_neither_censors_nor_stalls_it()
 {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    // Org1's peer orders through Org1/orderer0; in front of that orderer, a proxy that
    // holds whatever the peer sends it and whatever it would send the peer, the other
    // orderers' links to it going on.
    let orderer = "Org1/orderer0";
    let port: u16 = net
        .url(orderer)
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let proxy = Proxy::start(port);
    through_proxies(&net.dir, &[port], &[proxy.port]);
    net.up();
    let put = |key: &str| {
        let put = net.json("Org1/peer0", "Org1", &["invoke", "kv", "put", key, "v"]);
        assert_eq!(put["code"], "VALID", "{put}");
    };
    put("before");

    proxy.pause(pid_of(&net.node("Org1/peer0")));
    // Each submit went to two orderers (f + 1): the other one has it, gossips it, and a
    // leader proposes it. The peer's stream from orderer0 stops; the peer leaves it for
    // another orderer and commits.
    for i in 0..3 {
        put(&format!("withheld-{i}"));
    }
    proxy.pause(0);

    let rt = runtime();
    streams_agree(&rt, &net, &ORDERERS, 4);
    all_committed_on_every_peer(&net, &[]);
}
