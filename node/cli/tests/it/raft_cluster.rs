//! A Raft cluster of three orderers, each a process of its own started by `runnel up`
//! with only its organisation's keys, under a running load: killing the leader with
//! SIGKILL loses nothing a client was told was committed, gives no seq twice, and a new
//! leader serves within the election timeout and a second; the peers move to another
//! orderer and every peer ends with the same state. A follower killed too, the last two
//! go on; both killed orderers come back, catch up and serve their streams. A leader whose
//! log cannot grow (its file size limit lowered under load, as a full disk would) stops
//! ordering with a clear error and the other two go on.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use runnel_ledger::identity::Role;
use runnel_ledger::tx;
use runnel_server::proto::HeightsRequest;
use runnel_server::proto::ordering_client::OrderingClient;

use crate::orgs::{Network, endorse, error_name, org_of, runtime, submit};

/// The orderers `runnel init --orderers 3` makes for two organisations, by Raft id.
pub(crate) const ORDERERS: [(u64, &str); 3] = [
    (1, "Org1/orderer0"),
    (2, "Org2/orderer0"),
    (3, "Org1/orderer1"),
];

/// A client of the `Ordering` service of `node` at `url` (its own address when `None`),
/// connected as Org1's peer.
pub(crate) async fn as_peer(
    net: &Network,
    url: &str,
) -> Option<OrderingClient<tonic::transport::Channel>> {
    let peer = net.node("Org1/peer0");
    let own = peer.join("identities/Org1");
    let connection = runnel_client::Connection {
        tls_client_cert: Some(own.join("peer.pem")),
        tls_client_key: Some(own.join("peer.key")),
        ..runnel_client::Connection::to(url, &peer, "Org1")
    };
    let channel = runnel_client::connect_channel(&connection).await.ok()?;
    Some(OrderingClient::new(channel).max_decoding_message_size(64 << 20))
}

/// What orderer `node` answers to `Heights`, asked as Org1's peer.
async fn heights(net: &Network, node: &str) -> Option<runnel_server::proto::HeightsResponse> {
    let mut client = as_peer(net, &net.url(node)).await?;
    let mut request = tonic::Request::new(HeightsRequest {});
    request.set_timeout(Duration::from_secs(1));
    Some(client.heights(request).await.ok()?.into_inner())
}

/// (raft id, leader it knows, height) of the orderer `node`, asked as Org1's peer.
pub(crate) async fn view(net: &Network, node: &str) -> Option<(u64, u64, u64)> {
    let heights = heights(net, node).await?;
    Some((heights.raft_id, heights.raft_leader, heights.height))
}

/// The leader the orderers in `among` agree on, other than `not`.
pub(crate) async fn leader(net: &Network, among: &[&str], not: Option<u64>) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut seen = Vec::new();
        for node in among {
            seen.push(view(net, node).await.map(|(_, leader, _)| leader));
        }
        if let Some(Some(first)) = seen.first()
            && *first != 0
            && Some(*first) != not
            && seen.iter().all(|s| *s == Some(*first))
        {
            return *first;
        }
        assert!(Instant::now() < deadline, "no leader agreed: {seen:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The process id of the node in `dir`, as `runnel up` wrote it.
pub(crate) fn pid_of(dir: &Path) -> i32 {
    let pid = std::fs::read_to_string(dir.join("runnel.pid")).unwrap();
    pid.trim().parse().unwrap()
}

pub(crate) fn kill(dir: &Path) {
    let pid = pid_of(dir).to_string();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}/status")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .contains("State:\tZ")
    {
        assert!(Instant::now() < deadline, "{pid} did not die");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One client's loop: `kv put` of its own keys through Org1's peer until `stop`,
/// retrying a submit that failed with the same signed transaction until it is known to
/// be ordered (committed, or refused as a duplicate: ordered by an earlier attempt).
/// The ids it was told were committed or ordered; each acknowledgement and each retry is
/// counted in `progress` as it happens.
async fn load(
    net: Arc<Network>,
    client: usize,
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
) -> (Vec<String>, usize) {
    let people = net.dir.join("Org1");
    let url = net.url("Org1/peer0");
    let signer = runnel_client::signer(
        &runnel_client::Connection::to(&url, &people, "Org1"),
        Role::Client,
    )
    .unwrap();
    let mut acknowledged = Vec::new();
    let mut retries = 0;
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("c{client}-{i}");
        i += 1;
        let Ok(transaction) = endorse(
            &url,
            &people,
            ("Org1", None),
            ("kv", "put", &[&key, "v"]),
            &[],
        )
        .await
        else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let proposal = transaction.proposal.clone().unwrap();
        let tx_id =
            tx::tx_id(&prost::Message::decode(proposal.proposal.as_slice()).unwrap()).to_hex();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match submit(&url, &people, "Org1", &signer, &transaction).await {
                Ok(status) => {
                    assert_eq!(
                        status.code,
                        runnel_server::proto::ValidationCode::Valid as i32,
                        "{key} committed invalid: {status:?}"
                    );
                    acknowledged.push(tx_id);
                    progress.acknowledged.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(status) if error_name(&status) == "DUPLICATE_TXID" => {
                    acknowledged.push(tx_id);
                    progress.acknowledged.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(status) => {
                    retries += 1;
                    progress.retries.fetch_add(1, Ordering::Relaxed);
                    assert!(Instant::now() < deadline, "{key} never ordered: {status}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    (acknowledged, retries)
}

/// What the clients of a [`Load`] have been told so far.
#[derive(Default)]
pub(crate) struct Progress {
    /// Transactions acknowledged (committed, or refused as ordered already).
    pub(crate) acknowledged: AtomicUsize,
    /// Submits that failed and were retried.
    pub(crate) retries: AtomicUsize,
}

/// [`load`] from several clients, on a runtime of its own, until stopped.
pub(crate) struct Load {
    stop: Arc<AtomicBool>,
    progress: Arc<Progress>,
    thread: Option<JoinHandle<(Vec<String>, usize)>>,
}

impl Drop for Load {
    /// A test that fails with the load running still ends it, so that the network it
    /// holds is dropped (and stopped) too.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Load {
    pub(crate) fn start(net: &Arc<Network>, clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(Progress::default());
        let thread = {
            let (net, stop, progress) = (net.clone(), stop.clone(), progress.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let clients: Vec<_> = (0..clients)
                        .map(|c| tokio::spawn(load(net.clone(), c, stop.clone(), progress.clone())))
                        .collect();
                    let mut all = Vec::new();
                    let mut retries = 0;
                    for client in clients {
                        let (acknowledged, retried) = client.await.unwrap();
                        all.extend(acknowledged);
                        retries += retried;
                    }
                    (all, retries)
                })
            })
        };
        Load {
            stop,
            progress,
            thread: Some(thread),
        }
    }

    /// (acknowledged, retried) so far.
    pub(crate) fn progress(&self) -> (usize, usize) {
        (
            self.progress.acknowledged.load(Ordering::Relaxed),
            self.progress.retries.load(Ordering::Relaxed),
        )
    }

    /// Stops the clients: the ids they were told were committed or ordered, and how many
    /// submits they retried.
    pub(crate) fn stop(mut self) -> (Vec<String>, usize) {
        self.stop.store(true, Ordering::Relaxed);
        let (acknowledged, retries) = self.thread.take().unwrap().join().unwrap();
        eprintln!(
            "{} transactions acknowledged, {retries} submits retried",
            acknowledged.len()
        );
        (acknowledged, retries)
    }
}

/// Both peers hold every `acknowledged` transaction, committed valid, and agree on the
/// state.
pub(crate) fn all_committed_on_every_peer(net: &Network, acknowledged: &[String]) {
    use runnel_server::proto::query_client::QueryClient;
    use runnel_server::proto::{GetTransactionRequest, ValidationCode};
    let peers = ["Org1/peer0", "Org2/peer0"];
    let hashes = net.state_hashes(&peers, org_of);
    assert_eq!(hashes[0], hashes[1]);
    runtime().block_on(async {
        for peer in peers {
            let org = org_of(peer);
            let connection =
                runnel_client::Connection::to(&net.url(peer), &net.dir.join(&org), &org);
            let mut query = QueryClient::new(runnel_client::connect(&connection).await.unwrap());
            for tx_id in acknowledged {
                let shown = query
                    .get_transaction(GetTransactionRequest {
                        tx_id: tx_id.clone(),
                    })
                    .await
                    .unwrap_or_else(|status| panic!("{tx_id} at {peer}: {status}"))
                    .into_inner();
                assert_eq!(
                    shown.code,
                    ValidationCode::Valid as i32,
                    "{tx_id} at {peer}"
                );
            }
        }
    });
}

/// A second `runnel up`: starts the nodes that are not running.
pub(crate) fn up_again(net: &Network) {
    let output = Command::new(crate::process::RUNNEL)
        .args(["up", "--dir", net.dir.to_str().unwrap(), "--no-examples"])
        .env("RUNNEL_LOG", "warn")
        .output()
        .unwrap();
    if !output.status.success() {
        let logs: Vec<String> = ORDERERS
            .iter()
            .map(|(_, node)| format!("{node}:\n{}", log_tail(net, node)))
            .collect();
        panic!("runnel up again: {output:?}\n{}", logs.join("\n"));
    }
}

/// The last lines of `node`'s log.
fn log_tail(net: &Network, node: &str) -> String {
    let log = std::fs::read_to_string(net.node(node).join("node.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(8).collect();
    tail.join("\n")
}

/// `node` reaches the height `leader_node` has now, and streams every seq from 1.
pub(crate) fn caught_up(
    rt: &tokio::runtime::Runtime,
    net: &Network,
    node: &str,
    leader_node: &str,
) {
    let height = rt.block_on(view(net, leader_node)).unwrap().2;
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.block_on(view(net, node)).map(|v| v.2) < Some(height) {
        assert!(Instant::now() < deadline, "{node} did not catch up");
        std::thread::sleep(Duration::from_millis(100));
    }
    let streamed = rt.block_on(stream_seqs(net, node, height));
    assert_eq!(
        streamed,
        (1..=height).collect::<Vec<_>>(),
        "{node}'s stream"
    );
}

/// `GET path` of `node`'s operations endpoints, trusting the network's TLS CAs: the
/// status and the body.
pub(crate) fn ops_get(net: &Network, node: &str, path: &str) -> (u16, String) {
    let dir = net.node(node);
    let definition = runnel_ledger::identity::NetworkDefinition::load(&dir).unwrap();
    let cas = net.dir.join("tls-cas.pem");
    std::fs::write(&cas, definition.tls_ca_pems().collect::<String>()).unwrap();
    let address = net.url(node).replace("https://", "");
    crate::process::https(&address, &cas, "GET", path, "")
}

/// `node`'s `/metrics`, read as a member (Org1's peer over mutual TLS).
pub(crate) fn member_metrics(net: &Network, node: &str) -> String {
    ops_get(net, node, "/healthz");
    let identities = net.node("Org1/peer0").join("identities/Org1");
    let (status, metrics) = crate::process::https_member(
        &net.url(node).replace("https://", ""),
        &net.dir.join("tls-cas.pem"),
        &identities.join("peer.pem"),
        &identities.join("peer.key"),
        "/metrics",
    );
    assert_eq!(status, 200, "{metrics}");
    metrics
}

/// The value of the metric `name` (no labels) in `metrics`.
pub(crate) fn metric(metrics: &str, name: &str) -> Option<u64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse::<u64>().ok())
}

/// `node`'s ordering stream from its first transaction and first seal, read as Org1's
/// peer.
pub(crate) async fn stream_from_start(
    net: &Network,
    node: &str,
) -> tonic::Streaming<runnel_server::proto::OrderingItems> {
    as_peer(net, &net.url(node))
        .await
        .unwrap()
        .stream(runnel_server::proto::StreamRequest {
            from_seq: 1,
            next_block: 1,
        })
        .await
        .unwrap()
        .into_inner()
}

/// The orderer of Raft id `id`.
pub(crate) fn orderer(id: u64) -> &'static str {
    ORDERERS.iter().find(|(i, _)| *i == id).unwrap().1
}

/// A network of two organisations and three orderers, started: the network, a runtime
/// to ask it from, the leader the orderers agree on, its node, and the other two.
pub(crate) struct Started {
    pub(crate) net: Arc<Network>,
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) leader: u64,
    pub(crate) leader_node: &'static str,
    pub(crate) rest: Vec<&'static str>,
}

/// Starts `net` (`runnel up`) and waits for its cluster's leader.
pub(crate) fn start(mut net: Network) -> Started {
    net.up();
    let net = Arc::new(net);
    let rt = runtime();
    let nodes: Vec<&'static str> = ORDERERS.iter().map(|(_, node)| *node).collect();
    let leader = rt.block_on(self::leader(&net, &nodes, None));
    let leader_node = orderer(leader);
    let rest = nodes.into_iter().filter(|n| *n != leader_node).collect();
    Started {
        net,
        rt,
        leader,
        leader_node,
        rest,
    }
}

#[test]
fn killing_the_leader_under_load_loses_nothing_and_a_new_one_serves() {
    let Started {
        net,
        rt,
        leader: old,
        leader_node: old_node,
        rest,
    } = start(Network::init_with("Org1,Org2", 1, 3));

    let load = Load::start(&net, 6);
    std::thread::sleep(Duration::from_secs(3));
    let term = |node: &str| rt.block_on(heights(&net, node)).map(|h| h.raft_term);
    let before = term(rest[0]).expect("a follower answers");
    kill(&net.node(old_node));
    let killed = Instant::now();
    let new = rt.block_on(leader(&net, &rest, Some(old)));
    let elected = killed.elapsed();
    assert_ne!(new, old);
    // Elected within a few rounds, however slow the machine is: with pre-vote, the term
    // moves only for a round in which a candidate had a majority's pre-votes. (How long
    // the election takes in time is bench-failover.sh's figure, not a test's.)
    let after = term(orderer(new)).expect("the new leader answers");
    assert!(
        after - before <= 3,
        "a new leader in term {after}, {} rounds after term {before} ({elected:?})",
        after - before
    );
    std::thread::sleep(Duration::from_secs(3));
    let (acknowledged, _) = load.stop();
    assert!(acknowledged.len() > 20, "load ran: {}", acknowledged.len());
    eprintln!("a new leader after {elected:?}");
    all_committed_on_every_peer(&net, &acknowledged);

    // The killed leader comes back (a second `runnel up`) and catches up. Then a follower
    // is killed: the two left (a majority) go on; it comes back too and catches up. Both
    // serve their streams from the first seq.
    let new_node = orderer(new);
    up_again(&net);
    net.json(
        "Org1/peer0",
        "Org1",
        &["invoke", "kv", "put", "after", "kill"],
    );
    caught_up(&rt, &net, old_node, new_node);
    let follower = ORDERERS
        .iter()
        .find(|(id, node)| *id != new && *node != old_node)
        .unwrap()
        .1;
    kill(&net.node(follower));
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "follower", "gone"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    up_again(&net);
    caught_up(&rt, &net, follower, new_node);
    all_committed_on_every_peer(&net, &[]);
}

/// Bytes the leader's own log (node.log) may still grow once its file size limit is
/// lowered.
const ROOM_LEFT: u64 = 64 << 10;

#[test]
fn a_leader_whose_log_cannot_grow_stops_with_a_clear_error_and_the_others_go_on() {
    let Started {
        net,
        rt,
        leader: old,
        leader_node: old_node,
        rest,
    } = start(Network::init_with("Org1,Org2", 1, 3));

    let load = Load::start(&net, 4);
    std::thread::sleep(Duration::from_secs(2));
    // The running leader's file size limit, lowered to a little past the end of its own
    // log (node.log, so that it can still say what happened). Linux refuses a write that
    // would reach past the limit (EFBIG), wherever the file ends: its Raft log, larger by
    // now, fails at its next append, as a disk that just filled would (ENOSPC).
    let dir = net.node(old_node);
    let logged = std::fs::metadata(dir.join("node.log")).unwrap().len();
    let limit = libc::rlimit {
        rlim_cur: logged + ROOM_LEFT,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: sets a limit of a process this test started; no memory is shared.
    let set = unsafe {
        libc::prlimit(
            pid_of(&dir),
            libc::RLIMIT_FSIZE,
            &limit,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(set, 0, "prlimit: {}", std::io::Error::last_os_error());
    let limited = Instant::now();

    // It stops ordering and says why; the other two elect a leader and go on.
    let new = rt.block_on(leader(&net, &rest, Some(old)));
    eprintln!("a new leader {:?} after the limit", limited.elapsed());
    let log = std::fs::read_to_string(dir.join("node.log")).unwrap();
    assert!(
        log.contains("this orderer stops ordering") && log.contains("File too large"),
        "{old_node}'s log:\n{}",
        log_tail(&net, old_node)
    );
    assert!(
        Path::new(&format!("/proc/{}", pid_of(&dir))).exists(),
        "it stopped ordering, not running"
    );
    let (status, _) = ops_get(&net, old_node, "/healthz");
    assert_eq!(status, 503, "its health");
    std::thread::sleep(Duration::from_secs(2));
    let (acknowledged, _) = load.stop();
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "disk", "full"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    all_committed_on_every_peer(&net, &acknowledged);

    // Restarted (the limit was that process's alone), it reads back what it wrote, a torn
    // last record cut, and catches up.
    kill(&dir);
    up_again(&net);
    caught_up(&rt, &net, old_node, orderer(new));
}

/// The seqs of the first `count` transactions `node` streams from seq 1, asked as Org1's
/// peer.
async fn stream_seqs(net: &Network, node: &str, count: u64) -> Vec<u64> {
    use runnel_server::proto::ordering_item::Item;
    let mut stream = stream_from_start(net, node).await;
    let mut seqs = Vec::new();
    while (seqs.len() as u64) < count {
        let message = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .expect("the stream goes on")
            .unwrap()
            .unwrap();
        for item in message.items {
            if let Some(Item::Transaction(bytes)) = item.item {
                seqs.push(
                    runnel_ledger::orderer::OrderedTx::decode(&bytes)
                        .unwrap()
                        .seq
                        .0,
                );
            }
        }
    }
    seqs.truncate(count as usize);
    seqs
}

/// The ids the cluster's membership counts, as orderer `node` applied it.
async fn voters(net: &Network, node: &str) -> Option<Vec<u64>> {
    Some(heights(net, node).await?.raft_voters)
}

/// Waits until every orderer of `nodes` counts `ids`.
fn voters_are(rt: &tokio::runtime::Runtime, net: &Network, nodes: &[&str], ids: &[u64]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen: Vec<Option<Vec<u64>>> = nodes
            .iter()
            .map(|node| rt.block_on(voters(net, node)))
            .collect();
        if seen.iter().all(|v| v.as_deref() == Some(ids)) {
            return;
        }
        assert!(Instant::now() < deadline, "voters {seen:?}, not {ids:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `orderer0.Org1` of `Org1/orderer0`.
fn orderer_name(node: &str) -> String {
    let (org, short) = node.split_once('/').unwrap();
    format!("{short}.{org}")
}

#[test]
fn orderers_join_and_leave_the_cluster_by_configuration_updates_the_admins_sign() {
    let mut net = Network::init_with("Org1,Org2", 1, 3);
    net.up();
    let net = Arc::new(net);
    let rt = runtime();
    let load = Load::start(&net, 2);

    // Org2's admin proposes a second orderer of Org2 (its directory made beside Org2's
    // others, its keys from Org2's CAs); Org1's admin signs; Org2's submits.
    let port = crate::orgs::free_ports(1);
    let update = net.dir.join("add-orderer.update");
    let update = update.to_str().unwrap();
    let added = net.json(
        "Org2/peer0",
        "Org2",
        &[
            "orderer",
            "add",
            "--name",
            "orderer1.Org2",
            "--endpoint",
            &format!("https://127.0.0.1:{port}"),
            "--out",
            update,
        ],
    );
    let new_id = added["raft_id"].as_u64().unwrap();
    assert!(new_id > 3, "{added}");
    net.json("Org1/peer0", "Org1", &["config", "sign", update, "--yes"]);
    net.json("Org2/peer0", "Org2", &["config", "submit", update]);
    // `runnel up` starts it too: it joins, catches up from the first entry, and votes.
    up_again(&net);
    let four = [
        "Org1/orderer0",
        "Org2/orderer0",
        "Org1/orderer1",
        "Org2/orderer1",
    ];
    voters_are(&rt, &net, &four, &[1, 2, 3, new_id]);
    let old = rt.block_on(leader(&net, &four, None));
    caught_up(&rt, &net, "Org2/orderer1", orderer(old));

    // The leader is removed (Org1's admin proposes, Org2's signs): it hands the lead over,
    // the other three carry on, and it stops ordering, saying why.
    let leaving = orderer(old);
    let update = net.dir.join("remove-orderer.update");
    let update = update.to_str().unwrap();
    net.json(
        "Org1/peer0",
        "Org1",
        &[
            "orderer",
            "remove",
            "--name",
            &orderer_name(leaving),
            "--out",
            update,
        ],
    );
    net.json("Org2/peer0", "Org2", &["config", "sign", update, "--yes"]);
    net.json("Org1/peer0", "Org1", &["config", "submit", update]);
    let staying: Vec<&str> = four
        .iter()
        .copied()
        .filter(|node| *node != leaving)
        .collect();
    let mut ids: Vec<u64> = [1, 2, 3, new_id]
        .into_iter()
        .filter(|id| *id != old)
        .collect();
    ids.sort_unstable();
    voters_are(&rt, &net, &staying, &ids);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(net.node(leaving).join("node.log"))
        .unwrap_or_default()
        .contains("removed from the ordering cluster")
    {
        assert!(
            Instant::now() < deadline,
            "{leaving}:\n{}",
            log_tail(&net, leaving)
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The added orderer votes: with a founder that stays killed, it and the other make
    // two of three, and transactions still commit on both peers.
    let founder = staying
        .iter()
        .copied()
        .find(|node| *node != "Org2/orderer1")
        .unwrap();
    kill(&net.node(founder));
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "members", "changed"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    let (acknowledged, _) = load.stop();
    all_committed_on_every_peer(&net, &acknowledged);
}

#[test]
fn a_follower_away_past_the_compacted_logs_catches_up_from_a_snapshot_over_the_network() {
    let net = Network::init_with("Org1,Org2", 1, 3);
    // Raft logs that keep 16 entries: a follower away for seconds of load is past them.
    for (_, node) in ORDERERS {
        let path = net.node(node).join("runnel.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("raft_log_entries_kept = 20000"), "{text}");
        std::fs::write(
            &path,
            text.replace(
                "raft_log_entries_kept = 20000",
                "raft_log_entries_kept = 16",
            ),
        )
        .unwrap();
    }
    let Started {
        net,
        rt,
        leader_node,
        rest,
        ..
    } = start(net);
    let away = rest[0];
    kill(&net.node(away));
    let load = Load::start(&net, 4);
    let deadline = Instant::now() + Duration::from_secs(60);
    while rt
        .block_on(heights(&net, leader_node))
        .map_or(0, |h| h.raft_compacted)
        < 64
    {
        assert!(
            Instant::now() < deadline,
            "the leader never compacted its log"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let (acknowledged, _) = load.stop();

    // Back, it is sent a snapshot, reads the stream up to it from the leader over the
    // network (seals checked), and takes the entries after it.
    up_again(&net);
    net.json(
        "Org1/peer0",
        "Org1",
        &["invoke", "kv", "put", "after", "snapshot"],
    );
    caught_up(&rt, &net, away, leader_node);
    let compacted = rt.block_on(heights(&net, away)).unwrap().raft_compacted;
    assert!(compacted > 0, "{away} installed no snapshot");
    // Its metrics say so too.
    let (status, _) = ops_get(&net, away, "/metrics");
    assert_eq!(status, 401, "for members only");
    let metrics = member_metrics(&net, away);
    let gauge = |name: &str| metric(&metrics, name);
    assert_eq!(gauge("runnel_raft_voters"), Some(3), "{metrics}");
    assert!(
        gauge("runnel_raft_compacted") >= Some(compacted),
        "{metrics}"
    );
    all_committed_on_every_peer(&net, &acknowledged);
}

/// `runnel init` (what `runnel up` calls too) gives out the orderers in turn: three
/// organisations with one each leave no one a Raft quorum, and nothing is said; two
/// organisations and three orderers leave Org1 two of three, and it says so, with the
/// count that would avoid it.
#[test]
fn init_says_when_one_organisation_runs_a_raft_quorum_and_what_would_avoid_it() {
    let tmp = tempfile::tempdir().unwrap();
    let init = |name: &str, orgs: &str| {
        let output = Command::new(crate::process::RUNNEL)
            .args(["init", "--dir", tmp.path().join(name).to_str().unwrap()])
            .args(["--orgs", orgs, "--orderers", "3", "--base-port", "41050"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let three = init("three", "Org1,Org2,Org3");
    assert!(!three.contains("quorum"), "{three}");
    let two = init("two", "Org1,Org2");
    assert!(
        two.contains("Org1 runs 2 of the 3 orderers of the Raft cluster, a quorum")
            && two.contains("4 orderers given out in turn"),
        "{two}"
    );
}
