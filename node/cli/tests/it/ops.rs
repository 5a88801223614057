//! What a node tells of its inner state under `read_access = "members"`, against a
//! `runnel up` network: `/metrics` and the heights and peers of `GetNetworkInfo` are for
//! identities of the network, and peers still learn each other's heights.

use std::time::{Duration, Instant};

use runnel_ledger::identity::Role;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::proto::{GetNetworkInfoRequest, GetNetworkInfoResponse};

use crate::orgs::{Network, runtime};

/// `GetNetworkInfo` from `node` over `connection`'s TLS, with a read grant of its client
/// identity when `grant`.
fn network_info(connection: &runnel_client::Connection, grant: bool) -> GetNetworkInfoResponse {
    runtime().block_on(async {
        let info = if grant {
            let channel = runnel_client::connect(connection).await.unwrap();
            QueryClient::new(channel)
                .get_network_info(GetNetworkInfoRequest {})
                .await
        } else {
            let channel = runnel_client::connect_channel(connection).await.unwrap();
            QueryClient::new(channel)
                .get_network_info(GetNetworkInfoRequest {})
                .await
        };
        info.unwrap().into_inner()
    })
}

/// Before: under `read_access = "members"`, anyone who reached a peer read its
/// `/metrics` and, from `GetNetworkInfo`, its heights and every other peer's endpoint,
/// height and last error. Now (`ops_access` follows `read_access`): `/metrics` is
/// refused to a caller with no identity (`401`, `/healthz` stays open), and
/// `GetNetworkInfo` tells it only the channel, the organisations and the limits; a member
/// (a read grant, or a peer's certificate over mutual TLS) is told everything, and peers,
/// asking each other as members, still see each other's heights.
#[test]
fn under_members_a_nodes_metrics_heights_and_peers_are_for_members_only() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();
    let node = "Org2/peer0";
    let url = net.url(node);
    let people = net.dir.join("Org2");
    let connection = runnel_client::Connection::to(&url, &people, "Org2");

    let (status, body) = crate::raft_cluster::ops_get(&net, node, "/metrics");
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("IDENTITY_REQUIRED"), "{body}");
    assert!(!body.contains("runnel_height"), "{body}");
    assert_eq!(crate::raft_cluster::ops_get(&net, node, "/healthz").0, 200);

    let anonymous = network_info(&connection, false);
    assert_eq!(anonymous.channel, "main");
    assert_eq!(anonymous.orgs, ["Org1", "Org2"]);
    assert!(anonymous.transaction_bytes_max > 0);
    assert_eq!(
        (anonymous.committed_height, anonymous.ordered_height),
        (0, 0),
        "no heights to a caller with no identity"
    );
    assert!(anonymous.peers.is_empty(), "{:?}", anonymous.peers);

    // A client of the network, with a read grant: the heights, and the other peers as
    // this peer sees them (asked every 2 s over mutual TLS, as a member).
    let deadline = Instant::now() + Duration::from_secs(60);
    let member = loop {
        let info = network_info(&connection, true);
        if info.committed_height > 0
            && info
                .peers
                .iter()
                .any(|peer| peer.org == "Org1" && peer.alive && peer.committed_height > 0)
        {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "peers never seen alive: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(member.peers.iter().all(|peer| !peer.endpoint.is_empty()));

    // A peer's own certificate over mutual TLS is a member's too.
    let mut as_peer = connection.clone();
    let identities = net.node("Org1/peer0").join("identities/Org1");
    as_peer.tls_client_cert = Some(identities.join("peer.pem"));
    as_peer.tls_client_key = Some(identities.join("peer.key"));
    assert!(network_info(&as_peer, false).committed_height > 0);

    // And /metrics with a read grant.
    let signer = runnel_client::signer(&connection, Role::Client).unwrap();
    let start = runnel_ledger::tx::now_ms() - 60_000;
    let grant = runnel_server::readers::signed_grant(&signer, "main", start, 10 * 60_000);
    let grant = tonic::metadata::BinaryMetadataValue::from_bytes(&grant);
    let header = format!(
        "{}: {}\r\n",
        runnel_server::readers::READ_GRANT_HEADER,
        String::from_utf8_lossy(grant.as_encoded_bytes())
    );
    let cas = net.dir.join("tls-cas.pem");
    let address = url.replace("https://", "");
    let (status, metrics) =
        crate::process::https_with(&address, &cas, &header, "GET", "/metrics", "");
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.contains("runnel_height"), "{metrics}");
}
