//! Faults of the BFT ordering cluster with real processes, each started by `runnel up`
//! with only its own organisation's keys: four orderers of two organisations (f = 1)
//! and a peer of each, under a running load.
//!
//! The orderers reach each other through TCP proxies on loopback that this test controls
//! ([`Links`]): the endpoints the network definition names. A proxy tells an orderer's
//! connection from a peer's or a client's by the process that dialled it, so it can cut
//! the orderers into two pairs, or carry one orderer's messages to and from the others
//! later, while peers and clients reach every orderer as before.
//!
//! - Cut 2 + 2 (no side has 2f + 1), nothing is ordered anywhere and no client is told
//!   its transaction committed; healed, ordering resumes without a fork and nothing
//!   acknowledged is lost.
//! - One orderer's links 200 ms slower each way: the others order on at a rate of the
//!   same order, and the slow one streams the same transactions.
//! - One orderer killed (SIGKILL) under load, the leader of every fourth view: the load
//!   goes on, nothing acknowledged is lost, and once its views are skipped the rate is
//!   near what it was.
//! - A member gone rogue (its process replaced by one holding its keys) relays the votes
//!   others send it and sends seal signatures naming another member: everything it sends
//!   is heard as its own, the engine stops hearing it, no honest member is blamed, and
//!   the others order on.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use runnel_ledger::block::{Seal, leaf, seal_signature};
use runnel_ledger::identity::{NetworkDefinition, Signer, certificate_der};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::proto::{SealSignature, SignedSeal};
use runnel_ledger::tx;
use runnel_server::proto::consensus_client::ConsensusClient;
use runnel_server::proto::consensus_server::{Consensus, ConsensusServer};
use runnel_server::proto::ordering_item::Item;
use runnel_server::proto::{ConsensusMessage, ConsensusRequest, ConsensusResponse};
use tokio::sync::mpsc;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

use crate::bft::{ORDERERS, streams_agree};
use crate::orgs::{Network, endorse, org_of, runtime};
use crate::partition::{broadcast, owner, port_of, through_proxies};
use crate::raft_cluster::{Load, all_committed_on_every_peer, kill, pid_of, up_again, view};

/// The consensus engine's votes (`runnel_orderer::bft::net::VOTES`).
const VOTES: u32 = 0;
/// Each orderer's signature over each seal (`runnel_orderer::bft::net::SEALS`).
const SEALS: u32 = 4;

/// A connection whose dialler is not known yet.
const UNKNOWN: i32 = -2;
/// A connection dialled by no orderer (a peer's, a client's).
const NO_ORDERER: i32 = -1;

/// What the links between the orderers do now.
#[derive(Default)]
struct Faults {
    /// Each orderer's process id, in the order of [`ORDERERS`], once known.
    orderers: Vec<i32>,
    /// A partition: each orderer's side; a link between two sides is cut.
    sides: Option<[u8; 4]>,
    /// One orderer whose links to the others carry each message this much later, each
    /// way.
    slow: Option<(usize, Duration)>,
    /// The connections the proxies carry.
    live: Vec<Carried>,
}

/// One connection through a proxy.
struct Carried {
    /// The dialling socket's local port.
    from: u16,
    /// The index of the orderer it reaches.
    to: usize,
    /// The index of the orderer that dialled it, [`NO_ORDERER`] or [`UNKNOWN`].
    dialler: Arc<AtomicI32>,
    client: TcpStream,
    server: TcpStream,
}

impl Faults {
    /// Whether a link from orderer `dialler` to orderer `to` crosses the partition.
    fn cut(&self, dialler: i32, to: usize) -> bool {
        let (Some(sides), Ok(from)) = (self.sides, usize::try_from(dialler)) else {
            return false;
        };
        sides[from] != sides[to]
    }

    /// How much later a link from `dialler` to orderer `to` carries what it is given.
    fn delay(&self, dialler: i32, to: usize) -> Duration {
        match (self.slow, usize::try_from(dialler)) {
            (Some((slow, delay)), Ok(from)) if from == slow || to == slow => delay,
            _ => Duration::ZERO,
        }
    }

    /// The index of the orderer whose socket dialled proxy `port` from local port `from`.
    fn dialler(&self, from: u16, port: u16) -> i32 {
        if self.orderers.is_empty() {
            return UNKNOWN;
        }
        owner(from, port, &self.orderers)
            .and_then(|pid| self.orderers.iter().position(|p| *p == pid))
            .map_or(NO_ORDERER, |index| index as i32)
    }
}

/// A TCP proxy in front of each orderer, through which every node reaches it.
struct Links {
    /// The proxies' ports, in the order of [`ORDERERS`].
    ports: Vec<u16>,
    faults: Arc<Mutex<Faults>>,
    stop: Arc<AtomicBool>,
}

impl Links {
    /// A proxy for each of `targets` (the orderers' own ports).
    fn start(targets: &[u16]) -> Links {
        let faults = Arc::new(Mutex::new(Faults::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut ports = Vec::new();
        for (index, &target) in targets.iter().enumerate() {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            ports.push(listener.local_addr().unwrap().port());
            let (faults, stop) = (faults.clone(), stop.clone());
            std::thread::spawn(move || accept(listener, index, target, &faults, &stop));
        }
        Links {
            ports,
            faults,
            stop,
        }
    }

    /// The orderers' processes, in the order of [`ORDERERS`]: every connection learns
    /// whether an orderer dialled it.
    fn set_orderers(&self, pids: Vec<i32>) {
        let mut faults = lock(&self.faults);
        faults.orderers = pids;
        for carried in &faults.live {
            let port = self.ports[carried.to];
            let dialler = faults.dialler(carried.from, port);
            carried.dialler.store(dialler, Ordering::SeqCst);
        }
    }

    /// Cuts the links between orderers of different `sides`, both ways: those open are
    /// closed, new ones refused.
    fn partition(&self, sides: [u8; 4]) {
        let mut faults = lock(&self.faults);
        faults.sides = Some(sides);
        let live = std::mem::take(&mut faults.live);
        for carried in live {
            if faults.cut(carried.dialler.load(Ordering::SeqCst), carried.to) {
                let _ = carried.client.shutdown(Shutdown::Both);
                let _ = carried.server.shutdown(Shutdown::Both);
            } else {
                faults.live.push(carried);
            }
        }
    }

    fn heal(&self) {
        lock(&self.faults).sides = None;
    }

    /// Carries what orderer `index` sends the others and what they send it `delay`
    /// later (`None`: at once).
    fn slow(&self, slow: Option<(usize, Duration)>) {
        lock(&self.faults).slow = slow;
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for carried in lock(&self.faults).live.drain(..) {
            let _ = carried.client.shutdown(Shutdown::Both);
            let _ = carried.server.shutdown(Shutdown::Both);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Proxy `index`'s accept loop: each connection the faults allow is piped to `target`.
fn accept(
    listener: TcpListener,
    index: usize,
    target: u16,
    faults: &Arc<Mutex<Faults>>,
    stop: &AtomicBool,
) {
    let port = listener.local_addr().unwrap().port();
    while !stop.load(Ordering::Relaxed) {
        let (client, from) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(_) => return,
        };
        let SocketAddr::V4(from) = from else { continue };
        let mut state = lock(faults);
        let dialler = state.dialler(from.port(), port);
        if state.cut(dialler, index) {
            continue;
        }
        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
            continue;
        };
        client.set_nonblocking(false).unwrap();
        client.set_nodelay(true).unwrap();
        server.set_nodelay(true).unwrap();
        let dialler = Arc::new(AtomicI32::new(dialler));
        for (source, sink) in [
            (client.try_clone().unwrap(), server.try_clone().unwrap()),
            (server.try_clone().unwrap(), client.try_clone().unwrap()),
        ] {
            let (faults, dialler) = (faults.clone(), dialler.clone());
            std::thread::spawn(move || pipe(source, sink, index, &dialler, &faults));
        }
        state.live.push(Carried {
            from: from.port(),
            to: index,
            dialler,
            client,
            server,
        });
    }
}

/// Copies `source` to `sink`, each read written as late as the faults say when it was
/// read: a reader and a writer apart, so that a delay adds latency, not a bound on the
/// rate.
fn pipe(
    mut source: TcpStream,
    mut sink: TcpStream,
    to: usize,
    dialler: &AtomicI32,
    faults: &Mutex<Faults>,
) {
    let (send, receive) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, bytes) in receive {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if sink.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = sink.shutdown(Shutdown::Both);
    });
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match source.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let delay = lock(faults).delay(dialler.load(Ordering::SeqCst), to);
                if send
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(send);
    let _ = writer.join();
}

/// A network of two organisations and four BFT orderers whose links to each other go
/// through [`Links`], started.
fn network_through_links() -> (Arc<Network>, Links) {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    let targets: Vec<u16> = ORDERERS
        .iter()
        .map(|node| port_of(&net.url(node)))
        .collect();
    let links = Links::start(&targets);
    through_proxies(&net.dir, &targets, &links.ports);
    net.up();
    links.set_orderers(
        ORDERERS
            .iter()
            .map(|node| pid_of(&net.node(node)))
            .collect(),
    );
    (Arc::new(net), links)
}

/// Waits until `done`, at most `bound`: how long it took.
fn within(bound: Duration, what: &str, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < bound, "{what}: not within {bound:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// Acknowledgements a load must have had before a fault, to show that it ran.
const RUNNING: usize = 10;

/// How long a load's clients may take to be acknowledged [`RUNNING`] times.
const RUNNING_WITHIN: Duration = Duration::from_secs(30);

/// The last seq a seal covers in `node`'s stream, and the number of that seal: its
/// stream read from the start until it has been quiet for [`QUIET`].
async fn sealed_now(net: &Network, node: &str) -> (u64, u64) {
    let mut stream = crate::raft_cluster::stream_from_start(net, node).await;
    let mut last = (0, 0);
    while let Ok(message) = tokio::time::timeout(QUIET, stream.message()).await {
        let Some(message) = message.unwrap() else {
            break;
        };
        for item in message.items {
            if let Some(Item::Seal(bytes)) = item.item {
                let signed: SignedSeal = prost::Message::decode(bytes.as_slice()).unwrap();
                let seal = Seal::decode(&signed.seal).unwrap();
                last = (seal.last.0, seal.number.0);
            }
        }
    }
    last
}

/// How long a stream read to its end stays quiet: what the orderer holds comes at once.
const QUIET: Duration = Duration::from_millis(500);

/// What the network has ordered and committed, and what the clients were told, at one
/// moment.
#[derive(Debug, PartialEq)]
struct Marks {
    /// Each orderer's stream height.
    heights: Vec<u64>,
    /// The last seq each orderer's seals cover.
    sealed: Vec<u64>,
    /// Each peer's committed height.
    committed: Vec<u64>,
}

const PEERS: [&str; 2] = ["Org1/peer0", "Org2/peer0"];

impl Marks {
    fn now(rt: &tokio::runtime::Runtime, net: &Network) -> Marks {
        Marks {
            heights: ORDERERS
                .iter()
                .map(|node| rt.block_on(view(net, node)).unwrap().2)
                .collect(),
            sealed: ORDERERS
                .iter()
                .map(|node| rt.block_on(sealed_now(net, node)).0)
                .collect(),
            committed: PEERS
                .iter()
                .map(|peer| {
                    net.json(peer, &org_of(peer), &["state-hash"])["height"]
                        .as_u64()
                        .unwrap()
                })
                .collect(),
        }
    }
}

/// How long after the cut what was decided before it may still be applied and sealed.
const SETTLE: Duration = Duration::from_secs(2);

/// How long the orderers stay cut, at least: past the orderers' commit timeout (10 s), so
/// that what was given to them during the cut has been answered.
const PARTITION: Duration = Duration::from_secs(12);

/// How soon ordering resumes once healed, at most: each side's views wait out their
/// timeouts and the links are dialled again.
const RESUME_MAX: Duration = Duration::from_secs(30);

#[test]
fn two_orderers_against_two_order_nothing_and_once_healed_order_on_without_a_fork() {
    let (net, links) = network_through_links();
    let rt = runtime();
    let load = Load::start(&net, 4);
    within(RUNNING_WITHIN, "the load ran", || {
        load.progress().0 >= RUNNING
    });

    // Two transactions endorsed before the cut, for a client to give straight to an
    // orderer of each side during it.
    let people = net.dir.join("Org1");
    let peer_url = net.url("Org1/peer0");
    let signer = runnel_client::signer(
        &runnel_client::Connection::to(&peer_url, &people, "Org1"),
        runnel_ledger::identity::Role::Client,
    )
    .unwrap();
    let stranded: Vec<_> = ["left", "right"]
        .iter()
        .map(|side| {
            rt.block_on(endorse(
                &peer_url,
                &people,
                ("Org1", None),
                ("kv", "put", &["stranded", side]),
                &[],
            ))
            .unwrap()
        })
        .collect();

    // Each side an orderer of each organisation.
    links.partition([0, 0, 1, 1]);
    let cut = Instant::now();
    std::thread::sleep(SETTLE);
    let frozen = Marks::now(&rt, &net);
    let (acknowledged, retried) = load.progress();
    let given: Vec<_> = stranded
        .into_iter()
        .zip(["Org1/orderer0", "Org1/orderer1"])
        .map(|(transaction, node)| {
            let (net, url, signer) = (net.clone(), net.url(node), signer.clone());
            std::thread::spawn(move || {
                runtime().block_on(broadcast(&net, &url, &transaction, &signer))
            })
        })
        .collect();
    for (answer, node) in given.into_iter().zip(["Org1/orderer0", "Org1/orderer1"]) {
        match answer.join().unwrap() {
            Ok(seq) => panic!("{node} ordered at {seq} during the cut"),
            Err(refused) => eprintln!("{node} answered during the cut: {refused}"),
        }
    }
    std::thread::sleep(PARTITION.saturating_sub(cut.elapsed()));

    // Nothing ordered, sealed or committed anywhere; no client told of a commit.
    assert_eq!(Marks::now(&rt, &net), frozen, "ordered during the cut");
    let (acknowledged_after, retried_after) = load.progress();
    assert_eq!(
        acknowledged_after, acknowledged,
        "clients were told of commits during the cut"
    );
    eprintln!(
        "during the cut: {} submits retried, none acknowledged",
        retried_after - retried
    );

    // Healed: ordering resumes, the same stream everywhere, nothing acknowledged lost.
    links.heal();
    let height = *frozen.heights.iter().max().unwrap();
    let resumed = within(RESUME_MAX, "ordering resumed after healing", || {
        ORDERERS
            .iter()
            .any(|node| rt.block_on(view(&net, node)).is_some_and(|v| v.2 > height))
    });
    eprintln!("ordering resumed {resumed:?} after healing");
    let resumed_at = load.progress().0;
    within(RUNNING_WITHIN, "the load went on after healing", || {
        load.progress().0 >= resumed_at + RUNNING
    });
    let (acknowledged, _) = load.stop();
    streams_agree(&rt, &net, &ORDERERS, height + 1);
    all_committed_on_every_peer(&net, &acknowledged);
}

/// How long each cut of the long form lasts.
const CUT: Duration = Duration::from_secs(8);

/// The long form: the orderers cut in every shape in turn, each pairing of two against
/// two (nothing ordered) and each orderer alone against three (the three order on), each
/// cut healed before the next; at the end, one stream everywhere and nothing
/// acknowledged lost.
#[test]
#[ignore = "long (about 2 minutes): cargo test -p runnel --test it -- --ignored bft_faults"]
fn cuts_of_every_shape_in_turn_never_fork_and_lose_nothing() {
    let (net, links) = network_through_links();
    let rt = runtime();
    let load = Load::start(&net, 4);
    within(RUNNING_WITHIN, "the load ran", || {
        load.progress().0 >= RUNNING
    });
    let highest = || {
        ORDERERS
            .iter()
            .filter_map(|node| rt.block_on(view(&net, node)).map(|v| v.2))
            .max()
            .unwrap()
    };
    let shapes = [
        [0, 0, 1, 1],
        [0, 1, 0, 1],
        [0, 1, 1, 0],
        [0, 1, 1, 1],
        [1, 0, 1, 1],
        [1, 1, 0, 1],
        [1, 1, 1, 0],
    ];
    for sides in shapes {
        links.partition(sides);
        std::thread::sleep(SETTLE);
        let before = highest();
        std::thread::sleep(CUT);
        let after = highest();
        let three = sides.iter().filter(|side| **side == 1).count() == 3;
        if three {
            assert!(after > before, "the three of {sides:?} ordered nothing");
        } else {
            assert_eq!(after, before, "ordered across the cut {sides:?}");
        }
        links.heal();
        let healed_at = load.progress().0;
        let resumed = within(RESUME_MAX, "the load went on after healing", || {
            load.progress().0 >= healed_at + RUNNING
        });
        eprintln!("{sides:?}: {before} -> {after}; the load went on {resumed:?} after healing");
    }
    let (acknowledged, _) = load.stop();
    let height = highest();
    streams_agree(&rt, &net, &ORDERERS, height);
    all_committed_on_every_peer(&net, &acknowledged);
}

/// How much later the slow orderer's links carry each message, each way.
const SLOW: Duration = Duration::from_millis(200);

/// How long each rate is counted over.
const RATE_WINDOW: Duration = Duration::from_secs(6);

/// Transactions acknowledged per second over the next [`RATE_WINDOW`].
fn rate(load: &Load) -> f64 {
    let before = load.progress().0;
    std::thread::sleep(RATE_WINDOW);
    (load.progress().0 - before) as f64 / RATE_WINDOW.as_secs_f64()
}

#[test]
fn one_orderer_slower_by_200_ms_each_way_neither_stalls_nor_forks_the_cluster() {
    let (net, links) = network_through_links();
    let rt = runtime();
    let load = Load::start(&net, 4);
    within(RUNNING_WITHIN, "the load ran", || {
        load.progress().0 >= RUNNING
    });
    let normal = rate(&load);

    // Org2/orderer1 is slow: the other three make the quorum of each view; a view it
    // leads waits for its proposal, which comes later but within the leader timeout.
    let slow = 3;
    links.slow(Some((slow, SLOW)));
    std::thread::sleep(Duration::from_secs(1));
    let slowed = rate(&load);
    eprintln!(
        "{normal:.1} tx/s, then {slowed:.1} tx/s with {} slower by {SLOW:?} each way: {:.2}",
        ORDERERS[slow],
        slowed / normal
    );
    // Loosely (the machine's speed drifts): the rate is of the same order.
    assert!(
        slowed * 4.0 >= normal,
        "{slowed:.1} tx/s against {normal:.1}"
    );
    let (acknowledged, _) = load.stop();

    // The slow orderer streams what the others do, every seal a quorum's.
    let height = rt.block_on(view(&net, ORDERERS[0])).unwrap().2;
    streams_agree(&rt, &net, &ORDERERS, height);
    links.slow(None);
    all_committed_on_every_peer(&net, &acknowledged);
}

/// How long an orderer stays silent before the views it leads are skipped at once
/// (`runnel_orderer::bft`'s `LEADER_SILENT_SKIP`).
const LEADER_SILENT_SKIP: Duration = Duration::from_secs(10);

#[test]
fn an_orderer_killed_under_load_stops_nothing_and_loses_nothing() {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    net.up();
    let net = Arc::new(net);
    let rt = runtime();
    let load = Load::start(&net, 4);
    within(RUNNING_WITHIN, "the load ran", || {
        load.progress().0 >= RUNNING
    });

    let before = rate(&load);

    // Org1/orderer0, the one Org1's peer reads from first, leads every fourth view (the
    // leaders take turns): each of its views waits out the leader timeout, and the next
    // leader proposes what waited, until it has been silent long enough for its views to
    // be skipped at once.
    let victim = "Org1/orderer0";
    kill(&net.node(victim));
    let killed = Instant::now();
    let killed_at = load.progress().0;
    let went_on = within(RUNNING_WITHIN, "the load went on", || {
        load.progress().0 >= killed_at + RUNNING
    });
    eprintln!("{RUNNING} more acknowledged {went_on:?} after {victim} was killed");
    std::thread::sleep((LEADER_SILENT_SKIP + SETTLE).saturating_sub(killed.elapsed()));
    let after = rate(&load);
    eprintln!(
        "{before:.1} tx/s, then {after:.1} tx/s with {victim} down: {:.2}",
        after / before
    );
    // The rate kept is reported, not asserted: near the rate before once the dead
    // orderer's views are skipped (1.08 and 0.63 in two runs), against 0.55 in one run
    // before they were; two BFT tests at once on two cores move it more than that.
    // scripts/bench-wan.sh measures it (docs/benchmarks/bft-wan.md).
    let (acknowledged, _) = load.stop();
    let live: Vec<&str> = ORDERERS.iter().copied().filter(|n| *n != victim).collect();
    let height = streams_agree(&rt, &net, &live, 1);
    all_committed_on_every_peer(&net, &acknowledged);

    // Back, it catches up and streams what the others do.
    up_again(&net);
    let put = net.json("Org2/peer0", "Org2", &["invoke", "kv", "put", "back", "on"]);
    assert_eq!(put["code"], "VALID", "{put}");
    streams_agree(&rt, &net, &ORDERERS, height + 1);
}

/// The PEM in `node`'s identities/<org>/orderer.<ext>.
fn orderer_file(net: &Network, node: &str, ext: &str) -> Vec<u8> {
    let org = org_of(node);
    std::fs::read(
        net.node(node)
            .join(format!("identities/{org}/orderer.{ext}")),
    )
    .unwrap()
}

/// A `Consensus` client to `url` over mutual TLS presenting `cert` and `key` (PEM).
async fn consensus_client(
    net: &Network,
    url: &str,
    cert: Vec<u8>,
    key: Vec<u8>,
) -> Result<ConsensusClient<tonic::transport::Channel>, String> {
    let definition = NetworkDefinition::load(&net.dir).unwrap();
    let mut tls = ClientTlsConfig::new().identity(Identity::from_pem(cert, key));
    for pem in definition.tls_ca_pems() {
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    let channel = Endpoint::from_shared(url.to_string())
        .unwrap()
        .tls_config(tls)
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))?;
    Ok(ConsensusClient::new(channel)
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20))
}

/// A member gone rogue: a process of the test in place of orderer `node`, holding its
/// keys and listening where it did. It hears what the others send it (by sender and
/// channel) and, once told to, relays it at once to the others, as itself: the freshest
/// replay there can be.
struct Rogue {
    /// Its server and streams, ended when it is dropped.
    _rt: tokio::runtime::Runtime,
    counts: Arc<Mutex<BTreeMap<(String, u32), usize>>>,
    relaying: Arc<AtomicBool>,
    /// A stream to each other orderer, as the rogue.
    to: Arc<HashMap<String, mpsc::UnboundedSender<ConsensusRequest>>>,
}

#[derive(Clone)]
struct Heard {
    /// Each other orderer's certificate (DER), and its node.
    orderers: Arc<Vec<(Vec<u8>, String)>>,
    heard: Arc<Mutex<BTreeMap<(String, u32), usize>>>,
    relaying: Arc<AtomicBool>,
    to: Arc<HashMap<String, mpsc::UnboundedSender<ConsensusRequest>>>,
}

#[tonic::async_trait]
impl Consensus for Heard {
    async fn send(
        &self,
        request: tonic::Request<tonic::Streaming<ConsensusRequest>>,
    ) -> Result<tonic::Response<ConsensusResponse>, tonic::Status> {
        let certs = request.peer_certs();
        let from = certs
            .as_ref()
            .and_then(|certs| certs.first())
            .and_then(|cert| {
                self.orderers
                    .iter()
                    .find(|(der, _)| der.as_slice() == cert.as_ref())
            })
            .map(|(_, node)| node.clone())
            .ok_or_else(|| tonic::Status::permission_denied("not an orderer"))?;
        let mut requests = request.into_inner();
        while let Some(request) = requests.message().await? {
            {
                let mut heard = lock(&self.heard);
                for message in &request.messages {
                    *heard.entry((from.clone(), message.channel)).or_default() += 1;
                }
            }
            if self.relaying.load(Ordering::SeqCst) {
                for (node, to) in self.to.iter() {
                    if *node != from {
                        let _ = to.send(request.clone());
                    }
                }
            }
        }
        Ok(tonic::Response::new(ConsensusResponse {}))
    }
}

impl Rogue {
    /// Takes the place of `node` (killed), which `others` reach at its endpoint.
    fn start(net: &Network, node: &str, others: &[&str]) -> Rogue {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (cert, key) = (
            orderer_file(net, node, "pem"),
            orderer_file(net, node, "key"),
        );
        let mut to = HashMap::new();
        for other in others {
            let mut client = rt
                .block_on(consensus_client(
                    net,
                    &net.url(other),
                    cert.clone(),
                    key.clone(),
                ))
                .unwrap();
            let (send, receive) = mpsc::unbounded_channel();
            rt.spawn(async move {
                let _ = client
                    .send(tokio_stream::wrappers::UnboundedReceiverStream::new(
                        receive,
                    ))
                    .await;
            });
            to.insert(other.to_string(), send);
        }
        let orderers = others
            .iter()
            .map(|other| {
                let pem = String::from_utf8(orderer_file(net, other, "pem")).unwrap();
                (certificate_der(&pem, "orderer").unwrap(), other.to_string())
            })
            .collect();
        let heard = Heard {
            orderers: Arc::new(orderers),
            heard: Arc::default(),
            relaying: Arc::default(),
            to: Arc::new(to),
        };
        let definition = NetworkDefinition::load(&net.dir).unwrap();
        let cas: String = definition
            .orgs
            .iter()
            .flat_map(|org| [org.ca.as_str(), org.tls_ca.as_str()])
            .collect();
        let org = org_of(node);
        let tls_dir = net.node(node).join(format!("identities/{org}/tls"));
        let tls = ServerTlsConfig::new()
            .identity(Identity::from_pem(
                std::fs::read(tls_dir.join("server.pem")).unwrap(),
                std::fs::read(tls_dir.join("server.key")).unwrap(),
            ))
            .client_ca_root(Certificate::from_pem(cas));
        let address: SocketAddr = net
            .url(node)
            .trim_start_matches("https://")
            .parse()
            .unwrap();
        let service = ConsensusServer::new(heard.clone()).max_decoding_message_size(64 << 20);
        let server = tonic::transport::Server::builder()
            .tls_config(tls)
            .unwrap()
            .add_service(service);
        rt.spawn(async move {
            server.serve(address).await.unwrap();
        });
        Rogue {
            _rt: rt,
            counts: heard.heard,
            relaying: heard.relaying,
            to: heard.to,
        }
    }

    /// Sends `messages` on `channel` to every other orderer, as the rogue.
    fn send_all(&self, channel: u32, messages: Vec<Vec<u8>>) {
        let request = ConsensusRequest {
            messages: messages
                .into_iter()
                .map(|message| ConsensusMessage { channel, message })
                .collect(),
        };
        for to in self.to.values() {
            to.send(request.clone()).unwrap();
        }
    }

    /// How many messages it heard from `node` on `channel`.
    fn heard(&self, node: &str, channel: u32) -> usize {
        lock(&self.counts)
            .get(&(node.to_string(), channel))
            .copied()
            .unwrap_or(0)
    }
}

/// The lines of `node`'s log that hold `text`.
fn logged(net: &Network, node: &str, text: &str) -> Vec<String> {
    std::fs::read_to_string(net.node(node).join("node.log"))
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(text))
        .map(str::to_string)
        .collect()
}

/// Block numbers past the last sealed that the forged seal signatures name: within
/// how far ahead an orderer keeps signatures for blocks it has not sealed yet.
const FORGED_AHEAD: u64 = 32;

/// How an orderer logs a member whose seal signature is over another seal.
const ANOTHER_SEAL: &str = "signed another seal for this block";

/// How an orderer logs a member the consensus engine stopped hearing.
const BLOCKED: &str = "the consensus engine caught an orderer";

#[test]
fn a_member_is_heard_only_as_itself_whatever_it_relays_or_forges() {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    net.up();
    let net = Arc::new(net);
    let rt = runtime();
    let rogue_node = "Org2/orderer0";
    let honest: Vec<&str> = ORDERERS
        .iter()
        .copied()
        .filter(|n| *n != rogue_node)
        .collect();

    // A certificate is public; presenting another member's without its key, a caller
    // gets no call through (the TLS handshake proves the key).
    let presented = rt.block_on(async {
        let mut client = consensus_client(
            &net,
            &net.url("Org1/orderer1"),
            orderer_file(&net, "Org1/orderer0", "pem"),
            orderer_file(&net, rogue_node, "key"),
        )
        .await?;
        let forged = ConsensusRequest {
            messages: vec![ConsensusMessage {
                channel: VOTES,
                message: vec![0; 64],
            }],
        };
        client
            .send(tokio_stream::iter(vec![forged]))
            .await
            .map(drop)
            .map_err(|status| status.to_string())
    });
    assert!(presented.is_err(), "another member's certificate was heard");
    eprintln!("another member's certificate without its key: {presented:?}");

    // Org2/orderer0 turns rogue: its process is replaced by one that holds its keys.
    kill(&net.node(rogue_node));
    let rogue = Rogue::start(&net, rogue_node, &honest);
    let load = Load::start(&net, 4);
    within(RUNNING_WITHIN, "the load ran", || {
        load.progress().0 >= RUNNING
    });

    // Seal signatures for the next blocks over a seal of its own making: one its own
    // (a lie, as itself), one naming Org1/orderer0 by its certificate with a signature
    // that does not hold. The honest orderers name the rogue, and never Org1/orderer0.
    let (_, number) = rt.block_on(sealed_now(&net, honest[0]));
    let own = Signer::from_pem(
        &String::from_utf8(orderer_file(&net, rogue_node, "pem")).unwrap(),
        &String::from_utf8(orderer_file(&net, rogue_node, "key")).unwrap(),
    )
    .unwrap();
    let named = {
        let pem = String::from_utf8(orderer_file(&net, "Org1/orderer0", "pem")).unwrap();
        certificate_der(&pem, "orderer").unwrap()
    };
    let forged: Vec<Vec<u8>> = (number + 1..=number + FORGED_AHEAD)
        .map(|number| {
            let seal = Seal::new(
                BlockNumber(number),
                Seq(1),
                &[leaf(tx::now_ms(), b"never ordered")],
                [0; 32],
                tx::now_ms(),
            );
            let hash = tx::sha256(&seal.encode());
            prost::Message::encode_to_vec(&SignedSeal {
                seal: seal.encode(),
                signatures: vec![
                    seal_signature(&own, &hash),
                    SealSignature {
                        orderer: named.clone(),
                        signature: vec![7; 64],
                    },
                ],
            })
        })
        .collect();
    rogue.send_all(SEALS, forged);
    within(
        Duration::from_secs(30),
        "an honest orderer named the rogue's other seal",
        || {
            honest
                .iter()
                .any(|node| !logged(&net, node, ANOTHER_SEAL).is_empty())
        },
    );
    for node in &honest {
        let lines = logged(&net, node, ANOTHER_SEAL);
        assert!(
            lines.iter().all(|line| line.contains("orderer0.Org2")),
            "{node} blamed another than the rogue:\n{}",
            lines.join("\n")
        );
    }

    // It relays what the others send it to the others, as itself: votes signed by them
    // arrive from it, and the engine stops hearing it. The others order on.
    rogue.relaying.store(true, Ordering::SeqCst);
    within(
        Duration::from_secs(30),
        "an honest orderer stopped hearing the rogue",
        || {
            honest
                .iter()
                .any(|node| !logged(&net, node, BLOCKED).is_empty())
        },
    );
    for node in &honest {
        for line in logged(&net, node, BLOCKED) {
            assert!(line.contains("orderer0.Org2"), "{node}: {line}");
        }
    }
    for node in &honest {
        assert!(
            rogue.heard(node, VOTES) > 0,
            "the rogue heard no votes from {node}"
        );
    }
    let relayed_at = load.progress().0;
    within(RUNNING_WITHIN, "the load went on", || {
        load.progress().0 >= relayed_at + RUNNING
    });
    let (acknowledged, _) = load.stop();
    streams_agree(&rt, &net, &honest, 1);
    all_committed_on_every_peer(&net, &acknowledged);
    drop(rogue);
}
