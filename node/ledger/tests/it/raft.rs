//! Three Raft orderers in one process, each with its own directory, joined by an
//! in-memory network the test can cut: the order survives losing the leader, a minority
//! cut off orders nothing, and every orderer streams the same transactions, seqs and
//! seals. (The same orderers as separate processes over gRPC: runnel-server's tests.)

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use raft::eraftpb::Message;
use runnel_ledger::block::SealChain;
use runnel_ledger::identity::Role;
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::raft::{RaftOrderer, RaftSettings, Transport};
use runnel_ledger::orderer::{OrderError, Ordered, Orderer};
use runnel_testing::orderer::{Net, PATIENCE, Seen, read_until, streaming, transaction};

/// The in-memory network: who is up, and which links are cut.
#[derive(Default)]
struct Hub {
    nodes: RwLock<HashMap<u64, Weak<RaftOrderer>>>,
    /// Links cut, both ways.
    cut: Mutex<HashSet<(u64, u64)>>,
}

impl Hub {
    fn reaches(&self, from: u64, to: u64) -> Option<Arc<RaftOrderer>> {
        if self.cut.lock().unwrap().contains(&(from, to)) {
            return None;
        }
        self.nodes.read().unwrap().get(&to)?.upgrade()
    }

    /// Cuts `id` off from every other orderer, or heals it.
    fn isolate(&self, id: u64, others: &[u64], cut: bool) {
        let mut links = self.cut.lock().unwrap();
        for &other in others {
            for link in [(id, other), (other, id)] {
                if cut {
                    links.insert(link);
                } else {
                    links.remove(&link);
                }
            }
        }
    }
}

struct HubTransport {
    hub: Arc<Hub>,
    from: u64,
}

impl Transport for HubTransport {
    fn send(&self, messages: Vec<Message>) {
        for message in messages {
            if let Some(node) = self.hub.reaches(self.from, message.to) {
                node.step(message);
            }
        }
    }

    fn forward(&self, leader: u64, transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        match self.hub.reaches(self.from, leader) {
            Some(node) => node.submit_batch(transactions),
            None => transactions
                .iter()
                .map(|_| Err(OrderError::Unavailable("leader unreachable".into())))
                .collect(),
        }
    }
}

const IDS: [u64; 3] = [1, 2, 3];

struct Cluster {
    net: Net,
    hub: Arc<Hub>,
    _dir: tempfile::TempDir,
    dirs: HashMap<u64, PathBuf>,
    nodes: HashMap<u64, Arc<RaftOrderer>>,
}

impl Cluster {
    fn new() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let dirs = IDS
            .iter()
            .map(|id| (*id, dir.path().join(format!("orderer{id}"))))
            .collect();
        let mut cluster = Cluster {
            net: Net::new(),
            hub: Arc::default(),
            _dir: dir,
            dirs,
            nodes: HashMap::new(),
        };
        for id in IDS {
            cluster.start(id);
        }
        cluster
    }

    fn start(&mut self, id: u64) {
        let dir: &Path = &self.dirs[&id];
        std::fs::create_dir_all(dir).unwrap();
        let org = if id == 2 { "Org2" } else { "Org1" };
        let mut settings = RaftSettings::new(id, IDS.to_vec());
        // A quick clock: elections in 0.3-0.6 s.
        settings.tick = Duration::from_millis(30);
        settings.commit_timeout = Duration::from_secs(3);
        let node = Arc::new(
            RaftOrderer::open(
                dir,
                streaming(5, Duration::from_millis(100)),
                self.net.msp.clone(),
                self.net.signer(org, Role::Orderer),
                settings,
                Arc::new(HubTransport {
                    hub: self.hub.clone(),
                    from: id,
                }),
            )
            .unwrap(),
        );
        self.hub
            .nodes
            .write()
            .unwrap()
            .insert(id, Arc::downgrade(&node));
        self.nodes.insert(id, node);
    }

    fn stop(&mut self, id: u64) {
        let node = self.nodes.remove(&id).unwrap();
        node.close();
    }

    /// The leader every running orderer (or those in `among`) agrees on, once there is one.
    fn leader(&self, among: &[u64]) -> u64 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let seen: HashSet<Option<u64>> = among
                .iter()
                .filter_map(|id| self.nodes.get(id))
                .map(|node| node.leader())
                .collect();
            if seen.len() == 1
                && let Some(Some(leader)) = seen.into_iter().next()
                && among.contains(&leader)
            {
                return leader;
            }
            assert!(Instant::now() < deadline, "no leader elected");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Submits `count` new transactions through orderer `via`, keys `prefix0..`.
    fn submit(&self, via: u64, prefix: &str, count: usize) -> Vec<Result<Ordered, OrderError>> {
        self.nodes[&via].submit_batch(self.transactions(prefix, count))
    }

    /// `count` new signed transactions, keys `prefix0..`.
    fn transactions(&self, prefix: &str, count: usize) -> Vec<Vec<u8>> {
        let client = self.net.signer("Org1", Role::Client);
        (0..count)
            .map(|i| transaction(&client, "main", &format!("{prefix}{i}")))
            .collect()
    }

    /// Everything orderer `id` streams, up to seq `height`, checking every seal as a
    /// peer does.
    fn stream(&self, id: u64, height: u64) -> Seen {
        let mut delivery = self.nodes[&id].deliver(Seq(1), BlockNumber(1)).unwrap();
        let mut chain = SealChain::genesis();
        let mut seen = Seen::default();
        read_until(&mut *delivery, &mut chain, &self.net.msp, &mut seen, |s| {
            s.txs.len() as u64 >= height && s.durable.0 >= height
        });
        seen
    }
}

fn ordered(results: &[Result<Ordered, OrderError>]) -> Vec<Seq> {
    results
        .iter()
        .map(|r| r.as_ref().expect("ordered").seq)
        .collect()
}

#[test]
fn three_orderers_give_the_same_seqs_whichever_one_is_asked() {
    let cluster = Cluster::new();
    let leader = cluster.leader(&IDS);
    let follower = IDS.into_iter().find(|id| *id != leader).unwrap();
    let first = cluster.transactions("a", 20);
    let mut seqs = ordered(&cluster.nodes[&leader].submit_batch(first.clone()));
    // A follower forwards to the leader: one order, whoever receives.
    seqs.extend(ordered(&cluster.submit(follower, "b", 20)));
    assert_eq!(seqs, (1..=40).map(Seq).collect::<Vec<_>>());
    // A replay is refused, through a follower or by the leader, and twice in one batch.
    for via in [follower, leader] {
        let again = cluster.nodes[&via].submit_batch(vec![first[3].clone()]);
        assert_eq!(again[0].as_ref().unwrap_err().code(), "DUPLICATE_TXID");
    }
    let twice = cluster.transactions("t", 1);
    let answers = cluster.nodes[&leader].submit_batch(vec![twice[0].clone(), twice[0].clone()]);
    assert_eq!(answers[0].as_ref().unwrap().seq, Seq(41));
    assert_eq!(answers[1].as_ref().unwrap_err().code(), "DUPLICATE_TXID");

    let streams: Vec<Seen> = IDS.iter().map(|id| cluster.stream(*id, 41)).collect();
    for seen in &streams[1..] {
        assert_eq!(
            seen.txs, streams[0].txs,
            "every orderer streams the same transactions"
        );
        assert_eq!(seen.leaves, streams[0].leaves, "with the same timestamps");
    }
    // Seals, cut by the leader, replicated: the same chain from every orderer.
    let deadline = Instant::now() + PATIENCE;
    while cluster.nodes[&follower].height() < Seq(41) {
        assert!(Instant::now() < deadline);
    }
    let sealed: Vec<Seen> = IDS
        .iter()
        .map(|id| {
            let mut delivery = cluster.nodes[id].deliver(Seq(1), BlockNumber(1)).unwrap();
            let mut chain = SealChain::genesis();
            let mut seen = Seen::default();
            read_until(
                &mut *delivery,
                &mut chain,
                &cluster.net.msp,
                &mut seen,
                |s| s.seals.last().is_some_and(|(_, _, last)| *last == Seq(41)),
            );
            seen
        })
        .collect();
    for seen in &sealed[1..] {
        assert_eq!(seen.seals, sealed[0].seals);
        assert_eq!(
            seen.sealed
                .iter()
                .map(|s| s.bytes.clone())
                .collect::<Vec<_>>(),
            sealed[0]
                .sealed
                .iter()
                .map(|s| s.bytes.clone())
                .collect::<Vec<_>>(),
            "the same signed seals, byte for byte"
        );
    }
}

#[test]
fn losing_the_leader_loses_nothing_and_a_new_one_takes_over() {
    let mut cluster = Cluster::new();
    let leader = cluster.leader(&IDS);
    assert_eq!(ordered(&cluster.submit(leader, "a", 10)).len(), 10);
    cluster.stop(leader);
    let rest: Vec<u64> = IDS.into_iter().filter(|id| *id != leader).collect();
    let stopped = Instant::now();
    let next = cluster.leader(&rest);
    assert_ne!(next, leader);
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "a new leader within the election timeout"
    );
    let seqs = ordered(&cluster.submit(rest[0], "b", 10));
    assert_eq!(seqs, (11..=20).map(Seq).collect::<Vec<_>>());

    // The old leader comes back from its directory and catches up.
    cluster.start(leader);
    let all = cluster.stream(leader, 20);
    assert_eq!(all.txs, cluster.stream(next, 20).txs);
    assert_eq!(ordered(&cluster.submit(leader, "c", 5)).len(), 5);
}

#[test]
fn a_leader_cut_off_orders_nothing_and_follows_once_healed() {
    let cluster = Cluster::new();
    let leader = cluster.leader(&IDS);
    let rest: Vec<u64> = IDS.into_iter().filter(|id| *id != leader).collect();
    assert_eq!(ordered(&cluster.submit(leader, "a", 5)).len(), 5);
    cluster.hub.isolate(leader, &rest, true);

    // The old leader cannot commit: its submit fails, nothing reaches its stream.
    let lone = cluster.submit(leader, "lost", 3);
    assert!(lone.iter().all(|r| r.is_err()), "{lone:?}");
    assert_eq!(cluster.nodes[&leader].height(), Seq(5));

    // The majority elects another and goes on.
    let next = cluster.leader(&rest);
    assert_ne!(next, leader);
    assert_eq!(
        ordered(&cluster.submit(next, "b", 5)),
        (6..=10).map(Seq).collect::<Vec<_>>()
    );

    // Healed: the old leader follows; what it could not commit is never delivered.
    cluster.hub.isolate(leader, &rest, false);
    let healed = cluster.stream(leader, 10);
    assert_eq!(healed.txs, cluster.stream(next, 10).txs);
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        assert_eq!(
            cluster.nodes[&leader].height(),
            Seq(10),
            "nothing more delivered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // And the lost transactions can be ordered now.
    let retried = cluster.submit(next, "lost", 3);
    assert_eq!(ordered(&retried), (11..=13).map(Seq).collect::<Vec<_>>());
}
