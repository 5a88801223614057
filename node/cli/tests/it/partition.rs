//! A network partition that isolates the ordering cluster's leader from the other two
//! orderers, each a process of its own started by `runnel up`: the orderers reach each
//! other through TCP proxies this test controls (on loopback), which can cut the leader
//! off in both directions. The minority side orders nothing; the majority elects a new
//! leader and goes on under load; once healed, the old leader follows, catches up, and
//! what it took while cut off is never delivered.

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use runnel_ledger::identity::Role;
use runnel_ledger::tx;
use runnel_server::proto::BroadcastRequest;

use crate::orgs::{Network, endorse, org_of};
use crate::raft_cluster::{
    Load, ORDERERS, Started, all_committed_on_every_peer, as_peer, caught_up, leader, orderer,
    pid_of, start, view,
};

/// Who may reach whom: the orderer process cut off from the other orderers, if any.
#[derive(Default)]
struct Cut {
    /// The process id of the orderer cut off, and the index of its proxy.
    isolated: Option<(i32, usize)>,
    /// The process id of each orderer, once known.
    orderers: Vec<i32>,
    /// The proxies' ports, in the order of [`ORDERERS`].
    ports: Vec<u16>,
    /// Connections the proxies carry: (dialling port, proxy index) and both sockets, to
    /// close when a cut says so.
    live: Vec<(u16, usize, TcpStream, TcpStream)>,
}

/// A TCP proxy in front of each orderer: what the network definition names as the
/// orderer's endpoint, passing bytes (TLS and all) to where the orderer listens.
struct Proxies {
    /// The proxies' ports, in the order of [`ORDERERS`].
    ports: Vec<u16>,
    cut: Arc<Mutex<Cut>>,
    stop: Arc<AtomicBool>,
}

impl Proxies {
    /// A proxy for each of `targets` (the orderers' own ports).
    fn start(targets: &[u16]) -> Proxies {
        let listeners: Vec<TcpListener> = targets
            .iter()
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let ports: Vec<u16> = listeners
            .iter()
            .map(|listener| listener.local_addr().unwrap().port())
            .collect();
        let cut = Arc::new(Mutex::new(Cut {
            ports: ports.clone(),
            ..Cut::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        for (index, (listener, &target)) in listeners.into_iter().zip(targets).enumerate() {
            listener.set_nonblocking(true).unwrap();
            let (cut, stop) = (cut.clone(), stop.clone());
            std::thread::spawn(move || accept(listener, index, target, &cut, &stop));
        }
        Proxies { ports, cut, stop }
    }

    /// Cuts the orderer of process `pid` off from the other orderers, both ways: its
    /// connections to them and theirs to it are closed, and new ones refused.
    fn isolate(&self, pid: i32, index: usize) {
        let mut cut = self.cut.lock().unwrap();
        cut.isolated = Some((pid, index));
        let (orderers, ports) = (cut.orderers.clone(), cut.ports.clone());
        cut.live.retain(|(from, to, client, server)| {
            let keep = !cuts(Some((pid, index)), &orderers, &ports, *from, *to);
            if !keep {
                let _ = client.shutdown(Shutdown::Both);
                let _ = server.shutdown(Shutdown::Both);
            }
            keep
        });
    }

    fn heal(&self) {
        self.cut.lock().unwrap().isolated = None;
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for (_, _, client, server) in self.cut.lock().unwrap().live.drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }
}

/// Whether a connection from local port `from` to the orderer behind proxy `to` crosses
/// the cut around `isolated` (a process id and the index of its proxy). Connections of
/// other processes (peers, clients) are never cut.
fn cuts(
    isolated: Option<(i32, usize)>,
    orderers: &[i32],
    ports: &[u16],
    from: u16,
    to: usize,
) -> bool {
    let Some((isolated, isolated_index)) = isolated else {
        return false;
    };
    let Some(owner) = owner(from, ports[to], orderers) else {
        return false;
    };
    (to == isolated_index && owner != isolated) || (to != isolated_index && owner == isolated)
}

/// The process among `pids` whose socket dialled proxy port `proxy` from local
/// port `port`: found through the socket's inode in /proc/net/tcp and the processes'
/// descriptors. Both ends name the socket: a closed socket that once had the same local
/// port (in TIME_WAIT, with no inode) must not hide the live one.
pub(crate) fn owner(port: u16, proxy: u16, pids: &[i32]) -> Option<i32> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let (local, remote) = (
        format!("0100007F:{port:04X}"),
        format!("0100007F:{proxy:04X}"),
    );
    let inode = table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let inode = *fields.get(9)?;
        (fields.get(1) == Some(&local.as_str())
            && fields.get(2) == Some(&remote.as_str())
            && inode != "0")
            .then(|| inode.to_string())
    })?;
    let socket = format!("socket:[{inode}]");
    pids.iter().copied().find(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|link| link.as_os_str() == socket.as_str())
            })
    })
}

/// Proxy `index`'s accept loop: each connection the cut allows is piped to `target`.
fn accept(listener: TcpListener, index: usize, target: u16, cut: &Mutex<Cut>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let (client, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => return,
        };
        let SocketAddr::V4(from) = from else { continue };
        let mut state = cut.lock().unwrap();
        if cuts(
            state.isolated,
            &state.orderers,
            &state.ports,
            from.port(),
            index,
        ) {
            drop(client);
            continue;
        }
        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
            continue;
        };
        client.set_nonblocking(false).unwrap();
        // Each write passes at once, as gRPC's own sockets send.
        client.set_nodelay(true).unwrap();
        server.set_nodelay(true).unwrap();
        for (mut reader, mut writer) in [
            (client.try_clone().unwrap(), server.try_clone().unwrap()),
            (server.try_clone().unwrap(), client.try_clone().unwrap()),
        ] {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut reader, &mut writer);
                let _ = writer.shutdown(Shutdown::Both);
                let _ = reader.shutdown(Shutdown::Both);
            });
        }
        state.live.push((from.port(), index, client, server));
    }
}

/// The port of an `https://127.0.0.1:<port>` URL.
pub(crate) fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().parse().unwrap()
}

/// Makes every node and organisation reach the orderers through the proxies: each
/// orderer endpoint (`https://127.0.0.1:<target>`) in the network definitions and the
/// peers' configuration becomes the proxy's. Where an orderer listens is left as it is.
pub(crate) fn through_proxies(dir: &Path, targets: &[u16], proxies: &[u16]) {
    for entry in walk(dir) {
        let name = entry
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name != "network.json" && name != "runnel.toml" {
            continue;
        }
        let mut text = std::fs::read_to_string(&entry).unwrap();
        for (target, proxy) in targets.iter().zip(proxies) {
            text = text.replace(
                &format!("https://127.0.0.1:{target}\""),
                &format!("https://127.0.0.1:{proxy}\""),
            );
        }
        std::fs::write(&entry, text).unwrap();
    }
}

/// The files under `dir`, at any depth.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Broadcasts `transaction`, signed by `signer`, straight to the orderer at `url` as
/// Org1's peer would.
pub(crate) async fn broadcast(
    net: &Network,
    url: &str,
    transaction: &runnel_ledger::proto::Transaction,
    signer: &runnel_ledger::identity::Signer,
) -> Result<u64, tonic::Status> {
    let mut client = as_peer(net, url).await.unwrap();
    let signed = tx::sign_transaction(signer, transaction);
    let answer = client
        .broadcast(BroadcastRequest {
            signed_transaction: prost::Message::encode_to_vec(&signed),
        })
        .await?;
    Ok(answer.into_inner().seq)
}

/// How long the partition lasts once the majority has gone on.
const PARTITION: Duration = Duration::from_secs(4);

#[test]
fn a_leader_cut_off_from_the_other_orderers_orders_nothing_and_the_majority_goes_on() {
    let net = Network::init_with("Org1,Org2", 1, 3);
    let targets: Vec<u16> = ORDERERS
        .iter()
        .map(|(_, node)| port_of(&net.url(node)))
        .collect();
    let proxies = Proxies::start(&targets);
    through_proxies(&net.dir, &targets, &proxies.ports);
    let Started {
        net,
        rt,
        leader: old,
        leader_node: old_node,
        rest,
    } = start(net);
    let pids: Vec<i32> = ORDERERS
        .iter()
        .map(|(_, node)| pid_of(&net.node(node)))
        .collect();
    proxies.cut.lock().unwrap().orderers = pids.clone();
    let old_index = ORDERERS.iter().position(|(id, _)| *id == old).unwrap();

    // A transaction for the minority side, endorsed before the cut.
    let people = net.dir.join("Org1");
    let peer_url = net.url("Org1/peer0");
    let client = runnel_client::signer(
        &runnel_client::Connection::to(&peer_url, &people, "Org1"),
        Role::Client,
    )
    .unwrap();
    let stranded = rt
        .block_on(endorse(
            &peer_url,
            &people,
            ("Org1", None),
            ("kv", "put", &["cut", "off"]),
            &[],
        ))
        .unwrap();
    let stranded_id = tx::tx_id(
        &prost::Message::decode(stranded.proposal.as_ref().unwrap().proposal.as_slice()).unwrap(),
    )
    .to_hex();

    let load = Load::start(&net, 4);
    std::thread::sleep(Duration::from_secs(2));
    proxies.isolate(pids[old_index], old_index);
    let cut_at = Instant::now();

    // The minority side orders nothing: what the old leader is given now is refused once
    // it knows it cannot commit, and never gets a seq.
    let minority = {
        let (net, url, stranded, client) = (
            net.clone(),
            net.url(old_node),
            stranded.clone(),
            client.clone(),
        );
        std::thread::spawn(move || {
            crate::orgs::runtime().block_on(broadcast(&net, &url, &stranded, &client))
        })
    };
    let new = rt.block_on(leader(&net, &rest, Some(old)));
    let elected = cut_at.elapsed();
    eprintln!("a new leader {new} after {elected:?}");
    let answer = minority.join().unwrap();
    assert!(
        answer.is_err(),
        "the cut-off leader ordered it at {answer:?}"
    );
    eprintln!(
        "the cut-off leader answered {:?} after {:?}",
        answer.unwrap_err(),
        cut_at.elapsed()
    );
    let stuck = rt.block_on(view(&net, old_node)).unwrap().2;
    let majority = rt.block_on(view(&net, orderer(new))).unwrap().2;
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(view(&net, orderer(new))).unwrap().2 <= majority {
        assert!(
            Instant::now() < deadline,
            "the majority did not go on past {majority}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(PARTITION);
    assert_eq!(
        rt.block_on(view(&net, old_node)).unwrap().2,
        stuck,
        "the minority side ordered"
    );

    // Healed: the old leader follows the new one and catches up; what it was given while
    // cut off is on no peer, and everything acknowledged is on both.
    proxies.heal();
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(view(&net, old_node)).map(|v| v.1) != Some(new) {
        assert!(
            Instant::now() < deadline,
            "{old_node} does not follow {new}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (acknowledged, _) = load.stop();
    caught_up(&rt, &net, old_node, orderer(new));
    all_committed_on_every_peer(&net, &acknowledged);
    for peer in ["Org1/peer0", "Org2/peer0"] {
        let missing = net.fails(peer, &org_of(peer), &["tx", &stranded_id]);
        assert!(
            missing.contains("NOT_FOUND"),
            "{stranded_id} at {peer}: {missing}"
        );
    }
}
