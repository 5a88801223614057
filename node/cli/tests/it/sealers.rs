//! Who may seal: a peer process accepts a seal only from an orderer that the network
//! definition in force at the seal's last seq names. An orderer that a configuration update
//! removed from the network, and that goes on serving the stream and signing seals with its
//! key (a stale one that does not follow the configuration, or a hostile one), has its
//! seals over the update and after refused by every peer, while its seals from before the
//! update stand.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use runnel_ledger::identity::{NetworkKeys, Role};
use runnel_ledger::orderer::{Orderer, OrdererConfig, SoloOrderer};
use runnel_node::config::NodeConfig;
use runnel_orderer::ordering::OrderingServerHandle;
use runnel_server::ReadAccess;
use serde_json::{Value, json};

use crate::orgs::{Network, org_of};
use crate::process::copy_dir;
use crate::raft_cluster::ops_get;

/// The network's solo orderer, `orderer0.Org1` in its definition.
const ORDERER: &str = "Org1/orderer0";

/// Each a process holding only its own organisation's keys.
const PEERS: [&str; 2] = ["Org1/peer0", "Org2/peer0"];

/// The orderer of a node directory made by `runnel init`, run in the test's process as its
/// own process runs it (its key, its log, its address, its TLS), except that it does not
/// follow the configuration: it signs seals whatever the updates it orders say. Stopped
/// when dropped.
struct StaleOrderer {
    orderer: Arc<dyn Orderer>,
    runtime: tokio::runtime::Runtime,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), runnel_server::ApiError>>>,
    _log: tempfile::TempDir,
}

impl StaleOrderer {
    /// Takes over from the orderer of `dir`, stopped: a copy of its log, served at its
    /// address.
    fn start(dir: &Path) -> StaleOrderer {
        let config = NodeConfig::load(&dir.join("runnel.toml")).unwrap();
        let api = config.api_config(dir);
        assert!(api.listen.ip().is_loopback(), "{}", api.listen);
        let tls = api.tls.clone().expect("the orderer serves over TLS");
        let keys = NetworkKeys::load(dir).unwrap();
        let org = config.node.org.clone().unwrap_or(keys.orgs[0].clone());
        let signer = keys.signer(&org, Role::Orderer).unwrap().clone();
        let msp = Arc::new(keys.msp().unwrap());
        let log = tempfile::tempdir().unwrap();
        copy_dir(&dir.join("orderer"), log.path());
        let orderer_config = OrdererConfig {
            follow_config: None,
            seal_max_delay: Duration::from_millis(100),
            ..config.ledger_config().orderer
        };
        let orderer: Arc<dyn Orderer> =
            Arc::new(SoloOrderer::open(log.path(), orderer_config, msp.clone(), signer).unwrap());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut server = runtime
            .block_on(OrderingServerHandle::bind(
                orderer.clone(),
                api.listen,
                api.message_bytes_max,
            ))
            .unwrap();
        if api.read_access == ReadAccess::Members {
            server = server.peers_only(msp);
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = runtime.spawn(async move {
            server
                .serve(Some(&tls), async {
                    let _ = stopped.await;
                })
                .await
        });
        StaleOrderer {
            orderer,
            runtime,
            stop: Some(stop),
            served: Some(served),
            _log: log,
        }
    }
}

impl Drop for StaleOrderer {
    fn drop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        let served = self.served.take().unwrap();
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), served).await });
        self.orderer.close();
    }
}

/// `runnel <args>` at `peer`, as its organisation.
fn at(net: &Network, peer: &str, args: &[&str]) -> Value {
    net.json(peer, &org_of(peer), args)
}

/// The seq a transaction was ordered at, as `invoke` or `config submit` report it.
fn seq(report: &Value) -> u64 {
    report["seq"].as_u64().unwrap()
}

/// The last block `peer` stored: its number and last seq.
fn last_block(net: &Network, peer: &str) -> (u64, u64) {
    let number = at(net, peer, &["status"])["heights"]["block"]
        .as_u64()
        .unwrap();
    if number == 0 {
        return (0, 0);
    }
    let block = at(net, peer, &["block", &number.to_string()]);
    (number, block["last_seq"].as_u64().unwrap())
}

/// Waits until every peer stored a block that covers `seq`.
fn sealed_on_every_peer(net: &Network, seq: u64) {
    for peer in PEERS {
        let deadline = Instant::now() + Duration::from_secs(20);
        while last_block(net, peer).1 < seq {
            assert!(
                Instant::now() < deadline,
                "{peer} stored no seal over {seq}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `kv put key value` through Org1's peer, retried while that peer has not yet reached its
/// orderer again; its report, committed valid.
fn put(net: &Network, key: &str, value: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let output = net.run("Org1/peer0", "Org1", &["invoke", "kv", "put", key, value]);
        if output.status.success() {
            let report: Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(report["code"], "VALID", "{report}");
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "kv put {key}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The attack: an orderer removed from the network by a configuration update both admins
/// signed keeps its key, serves the stream at its old address, and seals blocks over the
/// update and after as if it were still the network's orderer (a stale orderer that does
/// not follow the configuration, or one taken over). What must not happen: a peer storing
/// such a seal, so that the removed orderer goes on deciding which blocks the network has.
/// Each peer, with its own organisation's keys only, checks the seal's signer against the
/// definition in force at the seal's last seq, refuses it, stores none of it, and stops
/// validating (its health says so, its log says why), while it still answers reads. Seals
/// the same orderer signed before the update, while the network named it, stand.
#[test]
fn peers_refuse_seals_of_an_orderer_an_update_removed_and_keep_answering_reads() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();

    // The orderer the network names seals a block; both peers accept it.
    let first = put(&net, "colour", "blue");
    sealed_on_every_peer(&net, seq(&first));
    let honest: Vec<(u64, u64)> = PEERS.iter().map(|p| last_block(&net, p)).collect();

    // Its process stops; the same orderer (key, log, address) is served from this test, not
    // following the configuration. The peers reach it again and go on from their next
    // seq; its seals are accepted while the network still names it.
    net.stop(ORDERER);
    let stale = StaleOrderer::start(&net.node(ORDERER));
    let second = put(&net, "colour", "red");
    sealed_on_every_peer(&net, seq(&second));
    let accepted: Vec<(u64, u64)> = PEERS.iter().map(|p| last_block(&net, p)).collect();

    // Org1's admin proposes that Org2's orderer orders in place of Org1's; Org2's admin
    // signs; Org1's submits. The update commits valid on the peers (they commit a
    // transaction before a seal covers it).
    let mut next = at(&net, "Org1/peer0", &["config", "show"]);
    next.as_object_mut().unwrap().remove("written_at_seq");
    assert_eq!(next["orderers"][0]["name"], "orderer0.Org1", "{next}");
    // At the same address: Org2's orderer is to take it over. The peers go on reading
    // there (they follow the endpoints the definition names), and the stale orderer is
    // what still answers.
    let endpoint = next["orderers"][0]["endpoint"].clone();
    next["orderers"] = json!([{
        "name": "orderer0.Org2",
        "org": "Org2",
        "endpoint": endpoint,
    }]);
    let update = net.propose("orderer-of-org2", &next);
    let update = update.as_str();
    at(&net, "Org2/peer0", &["config", "sign", update, "--yes"]);
    let applied = at(&net, "Org1/peer0", &["config", "submit", update]);
    assert_eq!(applied["code"], "VALID", "{applied}");
    let update_seq = seq(&applied);

    // The stale orderer seals a block over the update, signed orderer0.Org1 as before.
    // Every peer refuses it and stops validating: unhealthy, its log naming the signer and
    // why.
    for peer in PEERS {
        let deadline = Instant::now() + Duration::from_secs(20);
        while ops_get(&net, peer, "/healthz").0 != 503 {
            assert!(
                Instant::now() < deadline,
                "{peer} accepted the seal over the update"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = std::fs::read_to_string(net.node(peer).join("node.log")).unwrap();
        let refusal = log
            .lines()
            .find(|line| line.contains("the validator stopped"))
            .unwrap_or_else(|| panic!("{peer}'s log:\n{log}"));
        assert!(
            refusal.contains("seal signed by Org1/orderer0.Org1")
                && refusal.contains("(sequence 1) does not name"),
            "{peer}: {refusal}"
        );
    }

    // Nothing of the refused seal was stored: each peer's blocks end where they ended
    // before the update, short of it, though the update itself was committed. The blocks
    // the same orderer sealed before the update stand, the one its own process sealed
    // over the first put among them.
    for ((peer, honest), accepted) in PEERS.iter().zip(&honest).zip(&accepted) {
        let heights = at(&net, peer, &["status"])["heights"].clone();
        assert!(
            heights["committed"].as_u64().unwrap() >= update_seq,
            "{peer}: {heights}"
        );
        let last = last_block(&net, peer);
        assert_eq!(last, *accepted, "{peer}");
        assert!(
            seq(&second) <= last.1 && last.1 < update_seq,
            "{peer}: blocks to seq {}, the update at {update_seq}",
            last.1
        );
        let block = at(&net, peer, &["block", &honest.0.to_string()]);
        assert_eq!(
            block["last_seq"].as_u64(),
            Some(honest.1),
            "{peer}: {block}"
        );
        assert!(honest.1 >= seq(&first) && honest.1 < seq(&second), "{peer}");

        // The peer still answers reads.
        let output = net.run(peer, &org_of(peer), &["query", "kv", "get", "colour"]);
        assert!(
            output.status.success(),
            "{peer}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "\"red\"");
    }
    drop(stale);
}
