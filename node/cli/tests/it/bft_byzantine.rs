//! Orderers that lie, with real processes: four orderers of two organisations (f = 1),
//! started by `runnel up`, one of which is replaced by a lying process holding that
//! orderer's real keys ([`liar`]). Each attack and what must hold:
//!
//! - **Equivocation.** The liar signs two different seals for the same blocks (and
//!   forges a third in an honest orderer's name), then as a leader proposes two different
//!   batches for one view, each to some of the others first. The three honest orderers'
//!   streams stay one stream (same transactions at the same seqs, every seal a quorum's),
//!   both peers commit every acknowledged transaction, and every honest orderer logs the
//!   equivocation naming the liar, and never names an honest orderer.
//! - **Censorship.** The liar, leading its views in turn, proposes batches without one
//!   organisation's client's transactions. Each is submitted to f + 1 orderers and gossiped
//!   to all, so the next honest leader proposes it: each left out is finalized at most
//!   f + 1 views after the view the liar left it out in.
//! - **A lying stream.** The liar serves two peers, as their first orderer, the honest
//!   stream changed after three blocks: one peer gets reordered transactions, the other
//!   seals signed by the liar alone. Each peer refuses the stream, naming the orderer,
//!   goes on from another, and commits exactly the honest orderers' stream.

mod liar;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_server::proto::DeliverTransactionsRequest;
use runnel_server::proto::deliver_client::DeliverClient;

use crate::bft::{ORDERERS, stream_of, streams_agree};
use crate::orgs::{Network, free_ports, runtime};
use crate::raft_cluster::{Load, all_committed_on_every_peer, up_again};

/// The orderer the liar replaces (or, for a lying stream, speaks as beside it).
const LIAR: &str = "Org2/orderer1";

/// How the honest orderers' logs name the liar.
const LIAR_NAMED: &str = "orderer=Org2/orderer1.Org2";

/// The honest orderers, when the liar replaces [`LIAR`].
const HONEST: [&str; 3] = [ORDERERS[0], ORDERERS[1], ORDERERS[2]];

/// Faults the cluster of four tolerates.
const F: u64 = 1;

/// The lying orderer's process: this test binary, run as [`liar::run`] when
/// [`liar::DIR_VAR`] is set; a no-op otherwise.
#[test]
#[ignore = "the lying orderer's process, started by the tests below"]
fn lying_orderer() {
    if let Ok(dir) = std::env::var(liar::DIR_VAR) {
        liar::run(Path::new(&dir));
    }
}

/// A lying orderer's process, killed when dropped; its reports in a file.
struct Liar {
    child: Child,
    log: PathBuf,
}

impl Liar {
    /// Starts the liar with the keys of the node in `dir`, lying as `mode` says.
    fn start(dir: &Path, mode: &str, env: &[(&str, String)]) -> Liar {
        let log = dir.join("liar.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["bft_byzantine::lying_orderer", "--exact", "--ignored"])
            .args(["--nocapture", "--test-threads", "1"])
            .env(liar::DIR_VAR, dir)
            .env(liar::MODE_VAR, mode)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Liar { child, log }
    }

    /// Its reports so far.
    fn reports(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("liar: "))
            .map(str::to_owned)
            .collect()
    }

    /// Waits until `count` reports contain `what`.
    fn wait_for(&self, what: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let reports = self.reports();
            if reports.iter().filter(|line| line.contains(what)).count() >= count {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the liar never reported {count} of {what:?}:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Liar {
    /// Whether it reports `what` within a while.
    fn reported(&self, what: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.reports().iter().any(|line| line.contains(what)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }
}

impl Drop for Liar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines of `node`'s log that contain `what`, without their colours.
fn logged(net: &Network, node: &str, what: &str) -> Vec<String> {
    std::fs::read_to_string(net.node(node).join("node.log"))
        .unwrap_or_default()
        .lines()
        .map(uncoloured)
        .filter(|line| line.contains(what))
        .collect()
}

/// `line` without its ANSI colour sequences (`ESC [ ... m`).
fn uncoloured(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

/// A network of four BFT orderers up, [`LIAR`] stopped and a liar lying as `mode` in its
/// place, on its address.
fn with_liar(mode: &str) -> (Arc<Network>, Liar) {
    let mut net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    net.up();
    net.stop(LIAR);
    let liar = Liar::start(&net.node(LIAR), mode, &[]);
    (Arc::new(net), liar)
}

#[test]
fn an_equivocating_orderer_forks_no_one_and_is_named_by_every_honest_one() {
    let (net, liar) = with_liar("equivocate");
    let load = Load::start(&net, 4);
    liar.wait_for("two proposals for view", 1);
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "after", "split"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    let (acknowledged, _) = load.stop();

    // One stream, every seal a quorum's, every acknowledged transaction on both peers.
    let rt = runtime();
    streams_agree(&rt, &net, &HONEST, 1);
    all_committed_on_every_peer(&net, &acknowledged);

    // Named, and only the liar: its two seals for one block by at least one honest
    // orderer (one that sealed the block already hears no more of it), its two proposals
    // by each.
    let mut seal_lies = 0;
    for node in HONEST {
        let seals = logged(&net, node, "signed another seal for this block");
        assert!(
            seals.iter().all(|line| line.contains(LIAR_NAMED)),
            "{node} named another orderer: {seals:#?}"
        );
        seal_lies += seals.len();
        let votes = logged(&net, node, "an orderer equivocated");
        assert!(!votes.is_empty(), "{node} never logged the equivocation");
        assert!(
            votes.iter().all(|line| line.contains(LIAR_NAMED)),
            "{node} named another orderer: {votes:#?}"
        );
    }
    assert!(seal_lies > 0, "no honest orderer logged the liar's seals");
}

#[test]
fn a_censoring_leader_delays_a_clients_transactions_by_at_most_f_plus_one_views() {
    // Org1's client is censored: the load's transactions are all its own.
    let (net, liar) = with_liar("censor:Org1");
    let load = Load::start(&net, 4);
    liar.wait_for("views after I left it out", 5);
    let put = net.json(
        "Org2/peer0",
        "Org2",
        &["invoke", "kv", "put", "other", "org"],
    );
    assert_eq!(put["code"], "VALID", "{put}");
    let (acknowledged, _) = load.stop();

    let rt = runtime();
    streams_agree(&rt, &net, &HONEST, 1);
    all_committed_on_every_peer(&net, &acknowledged);
    let delays: Vec<u64> = liar
        .reports()
        .iter()
        .filter_map(|line| {
            let rest = line.strip_prefix("censored ")?;
            let (_, after) = rest.split_once(" finalized ")?;
            after.split(' ').next()?.parse().ok()
        })
        .collect();
    eprintln!("views from the censor's to the batch that held each: {delays:?}");
    assert!(
        delays.iter().all(|views| *views <= F + 1),
        "a censored transaction waited more than f + 1 views: {delays:?}"
    );
}

#[test]
fn a_peer_refuses_a_lying_stream_and_commits_the_quorums_from_another_orderer() {
    let net = Network::init_ordering("Org1,Org2", 1, 4, "bft");
    // Each peer's own orderer is the liar, on a port of its own: Org1's peer is sent
    // reordered blocks, Org2's seals with the liar's signature alone.
    let ports = free_ports(2);
    let peers = [("Org1/peer0", ports), ("Org2/peer0", ports + 1)];
    for (peer, port) in peers {
        ordering_endpoint(&net.node(peer), port);
    }
    let upstream: Vec<String> = ORDERERS.iter().map(|node| net.url(node)).collect();
    let liar = Liar::start(
        &net.node(LIAR),
        "stream",
        &[
            (liar::PORTS_VAR, format!("{},{}", ports, ports + 1)),
            (liar::UPSTREAM_VAR, upstream.join(",")),
        ],
    );
    let mut net = net;
    net.up();
    let net = Arc::new(net);
    // A peer whose first orderer has nothing yet while the others stream (as at `up`,
    // before the liar's own reads have begun) leaves it as withholding; started again,
    // each peer reads from the liar first.
    for (peer, _) in peers {
        net.stop(peer);
    }
    up_again(&net);
    let load = Load::start(&net, 4);
    for what in ["reordered", "with my signature only"] {
        if !liar.reported(what) {
            let logs: Vec<String> = ["Org1/peer0", "Org2/peer0"]
                .iter()
                .map(|peer| format!("{peer}: {:#?}", logged(&net, peer, "orderer")))
                .collect();
            panic!("the liar never lied ({what}):\n{}", logs.join("\n"));
        }
    }
    for i in 0..3 {
        let put = net.json(
            "Org2/peer0",
            "Org2",
            &["invoke", "kv", "put", &format!("o{i}"), "v"],
        );
        assert_eq!(put["code"], "VALID", "{put}");
    }
    let (acknowledged, _) = load.stop();

    for (peer, port) in peers {
        let refused = logged(&net, peer, "refused the orderer's stream");
        assert!(
            refused
                .iter()
                .any(|line| line.contains(&format!("127.0.0.1:{port}"))),
            "{peer} never refused the liar's stream: {refused:#?}"
        );
    }
    all_committed_on_every_peer(&net, &acknowledged);
    let rt = runtime();
    let height = streams_agree(&rt, &net, &ORDERERS, 1);
    let (honest, _) = rt.block_on(stream_of(&net, ORDERERS[0], height));
    for (peer, _) in peers {
        let committed = rt.block_on(committed(&net, peer, height));
        assert_eq!(committed.len(), honest.len(), "{peer}'s transactions");
        for (mine, theirs) in committed.iter().zip(&honest) {
            assert_eq!(
                (mine.seq, mine.timestamp_ms, &mine.transaction),
                (theirs.seq.0, theirs.timestamp_ms, &theirs.transaction),
                "{peer}'s transaction at seq {}",
                mine.seq
            );
        }
    }
}

/// Points the peer in `dir` at the orderer on `port` (the one it reads first).
fn ordering_endpoint(dir: &Path, port: u16) {
    let file = dir.join("runnel.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut found = false;
    let text: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with("endpoint = ") {
                found = true;
                format!("endpoint = \"https://127.0.0.1:{port}\"")
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(found, "no ordering endpoint in {}", file.display());
    std::fs::write(&file, text.join("\n") + "\n").unwrap();
}

/// The transactions `peer` committed, seqs 1 to `height`.
async fn committed(
    net: &Network,
    peer: &str,
    height: u64,
) -> Vec<runnel_server::proto::CommittedTransaction> {
    let org = crate::orgs::org_of(peer);
    let connection = runnel_client::Connection::to(&net.url(peer), &net.dir.join(&org), &org);
    let mut stream = DeliverClient::new(runnel_client::connect(&connection).await.unwrap())
        .max_decoding_message_size(64 << 20)
        .transactions(DeliverTransactionsRequest { start_seq: 1 })
        .await
        .unwrap()
        .into_inner();
    let mut committed = Vec::new();
    while committed.len() < height as usize {
        let message = tokio::time::timeout(Duration::from_secs(20), stream.message())
            .await
            .unwrap_or_else(|_| panic!("{peer} stopped short of {height}"))
            .unwrap()
            .unwrap();
        committed.extend(message.transaction);
    }
    committed
}
