//! Connections against a `runnel up` network, each node its own process: one address
//! cannot lock the network's members or other clients out, and a connection that opens
//! no stream does not keep its place.
//!
//! The flood comes from other loopback addresses (127.0.0.2 and up), as it would from
//! other hosts, while the network's own nodes talk from 127.0.0.1.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_rustls::rustls::{self, pki_types::CertificateDer, pki_types::pem::PemObject};

use crate::orgs::Network;

/// An open TLS connection that was answered once and kept.
type Held = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

/// Replaces settings in `node`'s runnel.toml, before it starts.
fn set(net: &Network, node: &str, settings: &[(&str, &str)]) {
    let path = net.node(node).join("runnel.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (written, wanted) in settings {
        assert!(
            text.contains(written),
            "{node}'s runnel.toml has no `{written}`"
        );
        text = text.replace(written, wanted);
    }
    std::fs::write(&path, text).unwrap();
}

/// The network's TLS CAs, in one PEM file.
fn tls_cas(net: &Network) -> PathBuf {
    let definition =
        runnel_ledger::identity::NetworkDefinition::load(&net.node("Org1/peer0")).unwrap();
    let cas = net.dir.join("tls-cas.pem");
    std::fs::write(&cas, definition.tls_ca_pems().collect::<String>()).unwrap();
    cas
}

fn address(net: &Network, node: &str) -> SocketAddr {
    net.url(node).replace("https://", "").parse().unwrap()
}

/// A TLS connection to `to` from the loopback address `from`, with no client certificate.
fn connect(to: SocketAddr, from: IpAddr, cas: &Path) -> std::io::Result<Held> {
    let rt = crate::orgs::runtime();
    let tcp = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(from, 0))?;
        socket.connect(to).await
    })?;
    let tcp = tcp.into_std()?;
    tcp.set_nonblocking(false)?;
    tcp.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(cas).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// `GET /healthz` on a kept-alive connection; whether it was answered `200`.
fn healthz(stream: &mut Held) -> bool {
    let request = "GET /healthz HTTP/1.1\r\nHost: node\r\nContent-Length: 0\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() || stream.flush().is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 1024];
    // The body may come chunked: its text is enough.
    while !bytes.windows(3).any(|w| w == b"ok\n") {
        match stream.read(&mut chunk) {
            Ok(n) if n > 0 => bytes.extend_from_slice(&chunk[..n]),
            _ => return false,
        }
    }
    bytes.starts_with(b"HTTP/1.1 200")
}

/// A connection from `from` that the node answers and keeps; `None` when it refused it.
fn hold(to: SocketAddr, from: IpAddr, cas: &Path) -> Option<Held> {
    let mut stream = connect(to, from, cas).ok()?;
    healthz(&mut stream).then_some(stream)
}

/// Connections from `from`, opened one after another until the node refuses one.
fn open_until_refused(to: SocketAddr, from: IpAddr, cas: &Path) -> Vec<Held> {
    let mut held = Vec::new();
    while let Some(stream) = hold(to, from, cas) {
        held.push(stream);
        assert!(held.len() <= 64, "the node never refused {from}");
    }
    held
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// Whether the node closed `stream`: a read ends (no byte is ever sent unasked here).
fn closed_within(stream: &mut Held, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    stream.sock.set_read_timeout(Some(patience)).unwrap();
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() >= deadline {
                    return false;
                }
            }
            Err(_) => return true,
        }
    }
}

/// One address opens connections to the orderer until it is refused, and a second one
/// fills what room is left. Before: one address could take all 1,024 of the orderer's
/// connections, so a peer that (re)connected was locked out of ordering. Now: an
/// address holds at most its share (`connections_per_address_max`), other clients still
/// get in while only one address floods, and a peer's link presenting its certificate
/// over mutual TLS takes the members' room, which anonymous connections never take: a
/// peer restarted during the flood orders again.
#[test]
fn a_flood_of_connections_locks_out_neither_a_peers_link_to_its_orderer_nor_other_clients() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    set(
        &net,
        "Org1/orderer0",
        &[
            ("connections_max = 4096", "connections_max = 6"),
            (
                "connections_per_address_max = 128",
                "connections_per_address_max = 3",
            ),
            (
                "connection_idle_timeout_ms = 60000",
                "connection_idle_timeout_ms = 600000",
            ),
        ],
    );
    net.up();
    let cas = tls_cas(&net);
    let orderer = address(&net, "Org1/orderer0");

    let flood = open_until_refused(orderer, ip("127.0.0.2"), &cas);
    assert_eq!(flood.len(), 3, "one address holds its share");
    let other = hold(orderer, ip("127.0.0.3"), &cas);
    assert!(other.is_some(), "another address gets in during the flood");
    let second = open_until_refused(orderer, ip("127.0.0.4"), &cas);
    assert_eq!(second.len(), 2, "the clients' room is full");
    assert!(
        hold(orderer, ip("127.0.0.5"), &cas).is_none(),
        "no room for another anonymous client"
    );

    // A peer restarted now reconnects to its orderer as a member.
    net.stop("Org1/peer0");
    crate::raft_cluster::up_again(&net);
    let put = net.json(
        "Org1/peer0",
        "Org1",
        &["invoke", "kv", "put", "during", "flood"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    drop((flood, other, second));
}

/// Connections that open no stream do not keep their place. Before: after the TLS
/// handshake a connection was kept as long as it answered pings. Now: a node and an
/// orderer close a connection that has had no stream open for `connection_idle_timeout_ms`
/// (here 3 s), whether it never made a request or made one and went quiet; the network's
/// own links, which keep streams or call again, go on.
#[test]
fn a_connection_that_opens_no_stream_is_closed_after_the_idle_timeout() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    let idle = [(
        "connection_idle_timeout_ms = 60000",
        "connection_idle_timeout_ms = 3000",
    )];
    for node in ["Org1/orderer0", "Org2/peer0"] {
        set(&net, node, &idle);
    }
    net.up();
    let cas = tls_cas(&net);
    let patience = Duration::from_secs(60);
    for node in ["Org2/peer0", "Org1/orderer0"] {
        let to = address(&net, node);
        let started = Instant::now();
        let mut silent = connect(to, ip("127.0.0.2"), &cas).unwrap();
        let mut answered = hold(to, ip("127.0.0.2"), &cas).expect("answered");
        assert!(
            closed_within(&mut silent, patience),
            "{node} kept a silent connection"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(3),
            "{node} closed it before its idle timeout"
        );
        assert!(
            closed_within(&mut answered, patience),
            "{node} kept a connection idle after its request"
        );
    }
    // Links that stream or call again were not cut for good: Org1's gateway still reaches
    // Org2's peer and the orderer, past several idle timeouts.
    std::thread::sleep(Duration::from_secs(7));
    let put = net.json("Org1/peer0", "Org1", &["invoke", "kv", "put", "idle", "ok"]);
    assert_eq!(put["code"], "VALID", "{put}");
    net.json("Org2/peer0", "Org2", &["query", "kv", "get", "idle"]);
}
