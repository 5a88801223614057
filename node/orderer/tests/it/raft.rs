//! Three Raft orderers in one process, each with its own directory, joined by an
//! in-memory network the test can cut: the order survives losing the leader, a minority
//! cut off orders nothing, and every orderer streams the same transactions, seqs and
//! seals. (The same orderers as separate processes over gRPC: runnel-server's tests.)

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use raft::eraftpb::Message;
use runnel_ledger::block::SealChain;
use runnel_ledger::identity::{Msp, NetworkDefinition, OrdererNode, Role, Signer};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{Delivery, OrderError, Ordered, Orderer, OrdererConfig};
use runnel_ledger::seal_trust::SealTrust;
use runnel_orderer::raft::{RaftOrderer, RaftSettings, Transport};
use runnel_testing::orderer::{Net, PATIENCE, Seen, read_until, streaming, transaction};

/// The in-memory network: who is up, and which links are cut.
#[derive(Default)]
struct Hub {
    nodes: RwLock<HashMap<u64, Weak<RaftOrderer>>>,
    /// Links cut, both ways.
    cut: Mutex<HashSet<(u64, u64)>>,
    /// A member driven by the test itself rather than a `RaftOrderer`: its id and inbox.
    rogue: Mutex<Option<(u64, std::sync::mpsc::Sender<Message>)>>,
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
            if let Some((rogue, inbox)) = &*self.hub.rogue.lock().unwrap()
                && *rogue == message.to
            {
                if !self.hub.cut.lock().unwrap().contains(&(self.from, *rogue)) {
                    let _ = inbox.send(message);
                }
                continue;
            }
            if let Some(node) = self.hub.reaches(self.from, message.to) {
                node.step(message);
            }
        }
    }

    fn deliver_from(
        &self,
        member: u64,
        from: Seq,
        next_block: BlockNumber,
    ) -> Result<Box<dyn Delivery>, OrderError> {
        match self.hub.reaches(self.from, member) {
            Some(node) => node.deliver(from, next_block),
            None => Err(OrderError::Unavailable("unreachable".into())),
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
    dir: tempfile::TempDir,
    nodes: HashMap<u64, Arc<RaftOrderer>>,
    /// The genesis definition every orderer follows the configuration from, if any.
    follow: Option<NetworkDefinition>,
    /// [`RaftSettings::log_entries_kept`] of every orderer.
    kept: u64,
    /// Each orderer's key, kept across restarts.
    signers: HashMap<u64, Signer>,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster::with(Net::new(), None)
    }

    /// Orderers [`IDS`] of `net`, following the configuration from `follow` if given,
    /// each with a membership service of its own, as an orderer process has.
    fn with(net: Net, follow: Option<NetworkDefinition>) -> Cluster {
        Cluster::keeping(net, follow, runnel_orderer::raft::LOG_ENTRIES_KEPT)
    }

    /// [`Cluster::with`], each orderer's Raft log keeping `kept` entries behind its
    /// compaction point.
    fn keeping(net: Net, follow: Option<NetworkDefinition>, kept: u64) -> Cluster {
        let mut cluster = Cluster::unstarted(net, follow, kept);
        for id in IDS {
            cluster.start(id);
        }
        cluster
    }

    /// A cluster of [`IDS`] none of which is started yet.
    fn unstarted(net: Net, follow: Option<NetworkDefinition>, kept: u64) -> Cluster {
        Cluster {
            net,
            hub: Arc::default(),
            dir: tempfile::tempdir().unwrap(),
            nodes: HashMap::new(),
            follow,
            kept,
            signers: HashMap::new(),
        }
    }

    fn dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("orderer{id}"))
    }

    /// Starts orderer `id`: one of [`IDS`], or one that joins the cluster once the
    /// configuration adds it.
    fn start(&mut self, id: u64) {
        let dir = self.dir(id);
        std::fs::create_dir_all(&dir).unwrap();
        let mut settings = RaftSettings::new(id, IDS.to_vec());
        settings.joins = !IDS.contains(&id);
        // A quick clock: elections in 0.3-0.6 s.
        settings.tick = Duration::from_millis(30);
        settings.commit_timeout = Duration::from_secs(3);
        settings.log_entries_kept = self.kept;
        let (config, msp) = match &self.follow {
            Some(genesis) => (
                OrdererConfig {
                    follow_config: Some(genesis.clone()),
                    ..streaming(5, Duration::from_millis(100))
                },
                Arc::new(Msp::new(self.net.msp.ca_certs().iter().map(Vec::as_slice)).unwrap()),
            ),
            None => (
                streaming(5, Duration::from_millis(100)),
                self.net.msp.clone(),
            ),
        };
        let signer = self.signer(id);
        let node = Arc::new(
            RaftOrderer::open(
                &dir,
                config,
                msp,
                signer,
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

    /// Orderer `id`'s key: a certificate of its own, of the name [`member`] gives it.
    fn signer(&mut self, id: u64) -> Signer {
        let net = &self.net;
        self.signers
            .entry(id)
            .or_insert_with(|| {
                let node = member(id);
                let issued = net
                    .ids
                    .org(&node.org)
                    .unwrap()
                    .ca
                    .issue(Role::Orderer, &node.name, time::Duration::days(1))
                    .unwrap();
                Signer::new(&issued).unwrap()
            })
            .clone()
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

    /// Submits one signed transaction through orderer `via`, which must order it.
    fn submit_one(&self, via: u64, transaction: Vec<u8>) -> Seq {
        self.nodes[&via].submit(transaction).expect("ordered").seq
    }

    /// `count` new signed transactions, keys `prefix0..`.
    fn transactions(&self, prefix: &str, count: usize) -> Vec<Vec<u8>> {
        let client = self.net.signer("Org1", Role::Client);
        (0..count)
            .map(|i| transaction(&self.net, &client, "main", &format!("{prefix}{i}")))
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

/// Orderer `id` of the configuration, `orderer<id>` of Org1 (Org2 for 2).
fn member(id: u64) -> OrdererNode {
    let org = if id == 2 { "Org2" } else { "Org1" };
    OrdererNode {
        name: format!("orderer{id}.{org}"),
        org: org.into(),
        endpoint: format!("https://127.0.0.1:{}", 7050 + id),
        raft_id: id,
        key: String::new(),
    }
}

impl Cluster {
    /// Waits until every running orderer of `among` counts `voters`.
    fn voters_are(&self, among: &[u64], voters: &[u64]) {
        let deadline = Instant::now() + PATIENCE;
        while among.iter().any(|id| self.nodes[id].voters() != voters) {
            assert!(
                Instant::now() < deadline,
                "voters: {:?}",
                among
                    .iter()
                    .map(|id| (id, self.nodes[id].voters()))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn configuration_updates_add_and_remove_orderers_through_joint_memberships() {
    let net = Net::new();
    let mut genesis = NetworkDefinition::of(&net.ids, "main");
    genesis.orderers = IDS.iter().map(|id| member(*id)).collect();
    let mut cluster = Cluster::with(net, Some(genesis.clone()));
    let leader = cluster.leader(&IDS);
    assert_eq!(ordered(&cluster.submit(leader, "a", 10)).len(), 10);

    // Orderer 4 starts before it is a member: it waits, and the cluster does not count it.
    cluster.start(4);
    assert_eq!(cluster.nodes[&4].voters(), IDS.to_vec());
    // The update that adds it, signed by both organisations' admins, ordered like any
    // transaction: the leader then moves the cluster to the four.
    let mut added = genesis.clone();
    added.sequence = 1;
    added.orderers.push(member(4));
    let update =
        runnel_testing::orderer::config_update(&cluster.net, None, &added, &["Org1", "Org2"]);
    let at = cluster.nodes[&leader].submit(update).unwrap().seq;
    cluster.voters_are(&[1, 2, 3, 4], &[1, 2, 3, 4]);
    // Orderer 4 caught up from the first entry: it orders through the leader and streams
    // everything, seals checked as a peer checks them.
    assert_eq!(ordered(&cluster.submit(4, "b", 10)).len(), 10);
    let height = cluster.nodes[&4].height().0;
    assert_eq!(cluster.stream(4, height).txs.len() as u64, height);

    // The update that removes the leader: it hands the lead to another voter, which makes
    // the change; the removed orderer stops ordering and says why.
    let mut removed = added.clone();
    removed.sequence = 2;
    removed.orderers.retain(|orderer| orderer.raft_id != leader);
    let update = runnel_testing::orderer::config_update(
        &cluster.net,
        Some(runnel_ledger::proto::Version::from_seq(at.0)),
        &removed,
        &["Org1", "Org2"],
    );
    let stay: Vec<u64> = [1, 2, 3, 4]
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    let removed_at = cluster.submit_one(stay[0], update);
    cluster.voters_are(&stay, &stay);
    let deadline = Instant::now() + PATIENCE;
    while cluster.nodes[&leader].failure().is_none() {
        assert!(Instant::now() < deadline, "the removed orderer goes on");
        std::thread::sleep(Duration::from_millis(20));
    }
    let failure = cluster.nodes[&leader].failure().unwrap();
    assert!(
        failure.contains("removed from the ordering cluster"),
        "{failure}"
    );

    // Orderer 4 votes: with one of the founders that stay stopped, 4 and the other are a
    // majority of the three, and the cluster goes on.
    let founder = stay.iter().copied().find(|id| *id != 4).unwrap();
    cluster.stop(founder);
    let rest: Vec<u64> = stay.iter().copied().filter(|id| *id != founder).collect();
    let new_leader = cluster.leader(&rest);
    let last = ordered(&cluster.submit(new_leader, "c", 10));
    assert_eq!(last.len(), 10);
    let height = last[9].0;
    // Read until the last transaction is sealed too.
    let mut delivery = cluster.nodes[&4].deliver(Seq(1), BlockNumber(1)).unwrap();
    let mut seen = Seen::default();
    read_until(
        &mut *delivery,
        &mut SealChain::genesis(),
        &cluster.net.msp,
        &mut seen,
        |s| s.seals.last().is_some_and(|(_, _, last)| last.0 >= height),
    );
    assert_eq!(
        seen.txs.iter().map(|(seq, _)| seq.0).collect::<Vec<_>>(),
        (1..=height).collect::<Vec<_>>()
    );

    // Every seal passes a peer's check: signed by an orderer the definition in force at
    // its end names. Blocks were sealed across both updates, and none that ends at the
    // removal or later is the removed leader's.
    let mut trust = SealTrust::of(Seq::ZERO, Arc::new(genesis)).unwrap();
    trust.push(at, Arc::new(added)).unwrap();
    trust.push(removed_at, Arc::new(removed)).unwrap();
    let mut chain = SealChain::genesis();
    let mut signers = Vec::new();
    for sealed in &seen.sealed {
        let (first, last) = (sealed.seal.first.0, sealed.seal.last.0);
        let leaves: Vec<_> = (first..=last).map(|seq| seen.leaves[&Seq(seq)]).collect();
        chain
            .accept(&sealed.bytes, &leaves, &trust.after(Seq(last)))
            .unwrap_or_else(|e| panic!("seal {}..={last}: {e}", first));
        signers.push((last, seal_signer(&cluster.net, &sealed.bytes)));
    }
    let gone = member(leader).name;
    assert!(
        signers.iter().any(|(last, _)| *last >= removed_at.0),
        "{signers:?}"
    );
    assert!(
        signers
            .iter()
            .all(|(last, signer)| *last < removed_at.0 || *signer != gone),
        "{signers:?}"
    );
}

/// The CN of the orderer that signed a seal.
fn seal_signer(net: &Net, bytes: &[u8]) -> String {
    use prost::Message as _;
    let signed = runnel_ledger::proto::SignedSeal::decode(bytes).unwrap();
    net.msp
        .identify(&signed.signatures[0].orderer)
        .unwrap()
        .name
}

#[test]
fn a_follower_behind_the_compacted_log_catches_up_from_a_snapshot_and_the_stream() {
    // Logs keeping 8 entries behind their compaction point, compacted every 16.
    let mut cluster = Cluster::keeping(Net::new(), None, 8);
    let leader = cluster.leader(&IDS);
    let behind = IDS.into_iter().find(|id| *id != leader).unwrap();
    assert_eq!(ordered(&cluster.submit(leader, "a", 5)).len(), 5);
    cluster.stop(behind);
    // One call at a time: an entry each, many more than the logs keep.
    for i in 0..60 {
        assert_eq!(
            ordered(&cluster.submit(leader, &format!("b{i}-"), 2)).len(),
            2
        );
    }
    // Compactions run beside the Raft thread: wait for one past where `behind` stopped.
    let deadline = Instant::now() + PATIENCE;
    while cluster.nodes[&leader].compacted() <= 16 {
        assert!(
            Instant::now() < deadline,
            "the leader did not compact its log"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Back, it is sent the leader's snapshot, reads the stream up to it from the leader,
    // and goes on from the entries after it: the same stream, seals checked.
    cluster.start(behind);
    assert_eq!(ordered(&cluster.submit(leader, "c", 3)).len(), 3);
    let height = cluster.nodes[&leader].height().0;
    let deadline = Instant::now() + PATIENCE;
    while cluster.nodes[&behind].height().0 < height {
        assert!(Instant::now() < deadline, "it did not catch up");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        cluster.nodes[&behind].compacted() > 0,
        "it installed a snapshot"
    );
    let (theirs, ours) = (
        cluster.stream(leader, height),
        cluster.stream(behind, height),
    );
    assert_eq!(ours.txs, theirs.txs);
    assert_eq!(ours.seals, theirs.seals);

    // Both read their compacted logs back after a restart and order on.
    for id in [behind, leader] {
        cluster.stop(id);
        cluster.start(id);
    }
    let now = cluster.leader(&IDS);
    assert_eq!(ordered(&cluster.submit(now, "d", 3)).len(), 3);
    let height = cluster.nodes[&now].height().0;
    for id in IDS {
        let deadline = Instant::now() + PATIENCE;
        while cluster.nodes[&id].height().0 < height {
            assert!(Instant::now() < deadline, "{id} did not catch up");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A membership change of the given transition and changes, as a leader proposes one.
fn membership_change(
    transition: raft::eraftpb::ConfChangeTransition,
    changes: &[(raft::eraftpb::ConfChangeType, u64)],
) -> raft::eraftpb::ConfChangeV2 {
    let mut change = raft::eraftpb::ConfChangeV2::default();
    change.set_transition(transition);
    change.set_changes(
        changes
            .iter()
            .map(|(kind, id)| {
                let mut single = raft::eraftpb::ConfChangeSingle::default();
                single.set_change_type(*kind);
                single.node_id = *id;
                single
            })
            .collect::<Vec<_>>()
            .into(),
    );
    change
}

/// Member `id` of [`IDS`], driven by the test with raft-rs itself instead of a
/// `RaftOrderer`: it votes for no one else, leads, and once it leads proposes `changes`,
/// each once the last is committed, until `stop`. What a faulty or hostile leader can
/// get committed: membership changes no definition asks for.
// Raft's message types (rust-protobuf 2) are filled in field by field.
#[allow(clippy::field_reassign_with_default)]
fn run_rogue(
    id: u64,
    hub: Arc<Hub>,
    inbox: std::sync::mpsc::Receiver<Message>,
    changes: Vec<raft::eraftpb::ConfChangeV2>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    use raft::eraftpb::{ConfState, MessageType};
    use raft::{RawNode, StateRole, storage::MemStorage};
    let mut voters = ConfState::default();
    voters.voters = IDS.to_vec();
    let storage = MemStorage::new_with_conf_state(voters);
    let config = raft::Config {
        id,
        election_tick: 10,
        heartbeat_tick: 3,
        ..raft::Config::default()
    };
    let logger = slog::Logger::root(slog::Discard, slog::o!());
    let mut node = RawNode::new(&config, storage.clone(), &logger).unwrap();
    let transport = HubTransport { hub, from: id };
    let mut changes = changes.into_iter();
    let mut last_tick = Instant::now();
    while !stop.load(std::sync::atomic::Ordering::Acquire) {
        while let Ok(message) = inbox.try_recv() {
            if !matches!(
                message.get_msg_type(),
                MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
            ) {
                let _ = node.step(message);
            }
        }
        if last_tick.elapsed() >= Duration::from_millis(30) {
            node.tick();
            last_tick = Instant::now();
        }
        match node.raft.state {
            StateRole::Leader => {
                if !node.raft.has_pending_conf()
                    && let Some(change) = changes.next()
                {
                    node.propose_conf_change(Vec::new(), change).unwrap();
                }
            }
            StateRole::Candidate => {}
            _ => {
                let _ = node.campaign();
            }
        }
        if node.has_ready() {
            let mut ready = node.ready();
            transport.send(ready.take_messages());
            storage.wl().append(ready.entries()).unwrap();
            if let Some(hard_state) = ready.hs() {
                storage.wl().set_hardstate(hard_state.clone());
            }
            transport.send(ready.take_persisted_messages());
            let mut light = node.advance(ready);
            if let Some(commit) = light.commit_index() {
                storage.wl().mut_hard_state().set_commit(commit);
            }
            transport.send(light.take_messages());
            // Its own changes are never applied: it goes on counting the three.
            node.advance_apply();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_membership_change_the_definition_in_force_does_not_ask_for_is_refused_by_every_orderer() {
    use raft::eraftpb::{ConfChangeTransition, ConfChangeType};
    let net = Net::new();
    let mut genesis = NetworkDefinition::of(&net.ids, "main");
    genesis.orderers = IDS.iter().map(|id| member(*id)).collect();
    let mut cluster =
        Cluster::unstarted(net, Some(genesis), runnel_orderer::raft::LOG_ENTRIES_KEPT);
    // Orderer 1 is the rogue; 2 and 3 do not reach each other, so only 1 can lead.
    let (to_rogue, inbox) = std::sync::mpsc::channel();
    *cluster.hub.rogue.lock().unwrap() = Some((1, to_rogue));
    cluster.hub.isolate(2, &[3], true);
    cluster.start(2);
    cluster.start(3);
    // It adds an orderer the definition does not name, then removes one it names.
    let changes = vec![
        membership_change(
            ConfChangeTransition::Implicit,
            &[(ConfChangeType::AddNode, 9)],
        ),
        membership_change(
            ConfChangeTransition::Implicit,
            &[(ConfChangeType::RemoveNode, 3)],
        ),
    ];
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rogue = {
        let (hub, stop) = (cluster.hub.clone(), stop.clone());
        std::thread::spawn(move || run_rogue(1, hub, inbox, changes, stop))
    };

    // Both changes commit, and both honest orderers refuse them at the same entries: the
    // cluster keeps its three members, and neither stops.
    let deadline = Instant::now() + PATIENCE;
    while [2, 3]
        .iter()
        .any(|id| cluster.nodes[id].refused_membership_changes() < 2)
    {
        assert!(
            Instant::now() < deadline,
            "refused: {:?}; voters: {:?}",
            [2, 3].map(|id| cluster.nodes[&id].refused_membership_changes()),
            [2, 3].map(|id| cluster.nodes[&id].voters())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for id in [2, 3] {
        assert_eq!(cluster.nodes[&id].voters(), IDS.to_vec(), "orderer {id}");
        assert_eq!(cluster.nodes[&id].failure(), None, "orderer {id}");
    }

    // The rogue gone, the two honest orderers are a majority of the members they kept:
    // they elect a leader and order. (Had the first change been applied, a decision
    // would need three of 1, 2, 3 and 9.)
    stop.store(true, std::sync::atomic::Ordering::Release);
    rogue.join().unwrap();
    *cluster.hub.rogue.lock().unwrap() = None;
    cluster.hub.isolate(2, &[3], false);
    let leader = cluster.leader(&[2, 3]);
    assert_eq!(ordered(&cluster.submit(leader, "after", 10)).len(), 10);
}
