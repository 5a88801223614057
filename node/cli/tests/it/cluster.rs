//! An orderer and two peers, each a `runnel` process of its own on loopback, over TLS as
//! `runnel init` sets a network up, each node with its own directory and keys:
//! transactions submitted to either peer reach both, and both reach the same state (the
//! same state hash at the same height), also after a peer stops, misses transactions
//! and catches up from the orderer.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{Node, RUNNEL};
use serde_json::Value;

/// Waits until `peer` has committed `height` transactions; its state hash then.
fn state_at(peer: &Node, height: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = peer.json(&["status"]);
        let committed = status["heights"]["committed"].as_u64().unwrap();
        assert!(committed <= height, "{} ran ahead: {status}", peer.url);
        if committed == height {
            return peer.json(&["state-hash"]);
        }
        assert!(
            Instant::now() < deadline,
            "{} stuck at {committed} of {height}",
            peer.url
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_orderer_and_two_peers_reach_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("net");
    let init = Command::new(RUNNEL)
        .args([
            "init",
            "--dir",
            net.to_str().unwrap(),
            "--peers-per-org",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let dirs: Vec<_> = ["Org1/orderer0", "Org1/peer0", "Org1/peer1"]
        .iter()
        .map(|name| net.join(name))
        .collect();
    let people = net.join("Org1");

    let orderer = Node::start(&["start"], &dirs[0]).clients_from(&people);
    assert!(orderer.url.starts_with("https://"), "{}", orderer.url);
    let peer =
        |dir: &Path| Node::start(&["start", "--orderer", &orderer.url], dir).clients_from(&people);
    let peer1 = peer(&dirs[1]);
    let mut peer2 = peer(&dirs[2]);

    let kv = runnel_wasm_build::build("kv").unwrap();
    let deployed = peer1.json(&["deploy", "kv", kv.to_str().unwrap()]);
    assert_eq!(deployed["code"], "VALID");
    let mut height = 1;
    // Each peer endorses and submits its own; both validate everything.
    for i in 0..6 {
        let via = if i % 2 == 0 { &peer1 } else { &peer2 };
        let put = via.json(&["invoke", "kv", "put", &format!("k{i}"), &format!("v{i}")]);
        assert_eq!(put["code"], "VALID", "{put}");
        height += 1;
    }
    let one = state_at(&peer1, height);
    let two = state_at(&peer2, height);
    assert_eq!(one, two);
    assert_eq!(one["height"], height);
    assert!(one["keys"].as_u64().unwrap() >= 6, "{one}");
    assert_eq!(peer2.text(&["query", "kv", "get", "k0"]), "\"v0\"");
    assert_eq!(peer1.text(&["query", "kv", "get", "k5"]), "\"v5\"");

    // The load generator against a peer whose reads are for members: it waits for each
    // status with a separate CommitStatus call, a read, which carries its read grant.
    let out = dir.path().join("bench");
    let report = peer1.text(&[
        "bench",
        "--keys",
        "0",
        "--clients",
        "2",
        "--count",
        "20",
        "--duration",
        "60",
        "--warmup",
        "0",
        "--separate-status",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Every transaction it measured was valid: "(n of n valid)".
    let counts = report
        .split_once(" valid)")
        .and_then(|(before, _)| before.rsplit_once('('))
        .map(|(_, counts)| counts.split(" of ").collect::<Vec<_>>());
    assert!(
        matches!(counts.as_deref(), Some([valid, all]) if valid == all && *valid != "0"),
        "{report}"
    );
    // Each of its transactions was committed before it returned.
    let after = peer1.json(&["status"])["heights"]["committed"]
        .as_u64()
        .unwrap();
    assert!(after > height, "the load committed nothing");
    height = after;

    // A peer that stops misses what is ordered meanwhile and catches up from the orderer.
    assert!(peer2.stop().success());
    for i in 6..9 {
        let put = peer1.json(&["invoke", "kv", "put", &format!("k{i}"), "later"]);
        assert_eq!(put["code"], "VALID", "{put}");
        height += 1;
    }
    let one = state_at(&peer1, height);
    peer2 = peer(&dirs[2]);
    assert_eq!(state_at(&peer2, height), one);
    assert_eq!(peer2.text(&["query", "kv", "get", "k8"]), "\"later\"");
    // The state hash tells different states apart.
    assert_ne!(one["state_hash"], two["state_hash"]);

    // The orderer process serves its health and metrics beside the ordering service.
    let (status, body) = orderer.http("GET", "/healthz", "");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    // Its metrics are for members of the network (`ops_access`, as `read_access`): a
    // peer's certificate over mutual TLS.
    assert_eq!(orderer.http("GET", "/metrics", "").0, 401);
    let ca = dirs[0].join("tls-cas.pem");
    let identities = dirs[1].join("identities/Org1");
    let (status, metrics) = crate::process::https_member(
        orderer.url.trim_start_matches("https://"),
        &ca,
        &identities.join("peer.pem"),
        &identities.join("peer.key"),
        "/metrics",
    );
    assert_eq!(status, 200, "{metrics}");
    let ordered = format!("runnel_height{{of=\"ordered\"}} {height}");
    assert!(metrics.contains(&ordered), "{metrics}");
    assert!(
        metrics.contains("runnel_orderer_flush_seconds_count"),
        "{metrics}"
    );

    // The orderer restarts on its address; both peers reconnect and resume their
    // streams where they were, with nothing skipped or repeated.
    let address = orderer.url.trim_start_matches("https://").to_string();
    assert!(orderer.stop().success());
    let down = peer1.run(&["invoke", "kv", "put", "lost", "x"]);
    assert!(!down.status.success(), "ordered with no orderer");
    assert!(
        String::from_utf8_lossy(&down.stderr).contains("ORDERER_UNAVAILABLE"),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    let orderer = Node::start_on(&["start"], &dirs[0], &address).clients_from(&people);
    for (i, via) in [&peer2, &peer1, &peer2].into_iter().enumerate() {
        let put = via.json(&["invoke", "kv", "put", &format!("after{i}"), "restart"]);
        assert_eq!(put["code"], "VALID", "{put}");
        height += 1;
    }
    let one = state_at(&peer1, height);
    assert_eq!(state_at(&peer2, height), one);
    assert_eq!(peer1.text(&["query", "kv", "get", "after2"]), "\"restart\"");

    assert!(peer1.stop().success());
    assert!(peer2.stop().success());
    assert!(orderer.stop().success());
}
