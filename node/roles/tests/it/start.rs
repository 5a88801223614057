//! Starting and stopping a node through the library.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use runnel_node::config::NodeConfig;
use runnel_node::{Node, NodeRole, StartOptions};

/// A one-process node's settings for `dir`, listening on a free loopback port.
fn config() -> NodeConfig {
    let mut config = NodeConfig::default();
    config.api.listen = "127.0.0.1:0".parse().unwrap();
    config
}

/// The status line of `GET path` at `addr`, over plain HTTP/1.1.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.lines().next().unwrap_or_default().to_string()
}

fn start(dir: &Path, config: &NodeConfig) -> Node {
    Node::start(dir, config, StartOptions::default()).unwrap()
}

#[test]
fn a_node_started_as_a_library_serves_until_stopped_and_reopens_its_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    let module = dir.path().join("kv.wasm");
    std::fs::write(&module, runnel_testing::kv_wasm()).unwrap();
    let options = StartOptions {
        deploy: vec![("kv".into(), module)],
        ..StartOptions::default()
    };
    let node = Node::start(dir.path(), &config, options).unwrap();
    assert!(
        node.url().starts_with("http://127.0.0.1:"),
        "{}",
        node.url()
    );
    assert!(node.ledger().is_some(), "every role runs a ledger");
    let addr = node.local_addr();
    assert_eq!(get(addr, "/healthz"), "HTTP/1.1 200 OK");
    let ledger = node.ledger().unwrap();
    let deployed: Vec<String> = ledger
        .lifecycle()
        .contracts("", 10)
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(deployed, ["kv"], "deployed before it served");
    let height = ledger.reader().durable_height();
    assert!(height.0 > 0);
    node.stop().unwrap();
    assert!(
        TcpStream::connect(addr).is_err(),
        "a stopped node no longer listens"
    );
    // Stopped means closed: the same directory opens again, at the same height.
    let node = start(dir.path(), &config);
    assert_eq!(node.ledger().unwrap().reader().durable_height(), height);
    node.stop().unwrap();
}

#[test]
fn a_start_that_fails_names_the_reason_and_leaves_nothing_open() {
    let dir = tempfile::tempdir().unwrap();
    // A TLS certificate that is not there fails before the ledger opens.
    let mut bad = config();
    bad.api.tls.enabled = true;
    bad.api.tls.cert = Some(dir.path().join("missing.pem"));
    bad.api.tls.key = Some(dir.path().join("missing.key"));
    let error = format!(
        "{:#}",
        Node::start(dir.path(), &bad, StartOptions::default())
            .err()
            .unwrap()
    );
    assert!(error.contains("missing.pem"), "{error}");
    // A contract to deploy that is not there fails after the ledger opened: it is
    // closed again, so the directory opens at once.
    let options = StartOptions {
        deploy: vec![("kv".into(), dir.path().join("nowhere.wasm"))],
        ..StartOptions::default()
    };
    let error = format!(
        "{:#}",
        Node::start(dir.path(), &config(), options).err().unwrap()
    );
    assert!(error.contains("nowhere.wasm"), "{error}");
    start(dir.path(), &config()).stop().unwrap();
    // A peer without an orderer to reach is refused as it starts.
    let mut peer = config();
    peer.node.role = NodeRole::Peer;
    let error = format!(
        "{:#}",
        Node::start(dir.path(), &peer, StartOptions::default())
            .err()
            .unwrap()
    );
    assert!(error.contains("ordering.endpoint"), "{error}");
}
