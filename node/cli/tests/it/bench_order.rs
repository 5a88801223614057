//! `runnel bench order` against a real ordering service: a Raft cluster of three
//! orderer processes started by `runnel up`, its peer stopped. Every receiver, one at
//! the leader and one at a follower, sees every transaction the run had ordered under
//! seals it checked, and the run reports what it delivered.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::orgs::free_ports;
use crate::process::RUNNEL;

/// A network `runnel up` started, stopped by `runnel down` when dropped.
struct Up {
    dir: PathBuf,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = Command::new(RUNNEL)
            .args(["down", "--dir", self.dir.to_str().unwrap()])
            .output();
    }
}

/// Stops the node in `dir` (SIGTERM to the process `runnel up` started).
fn stop(dir: &Path) {
    let pid = std::fs::read_to_string(dir.join("runnel.pid")).unwrap();
    let pid = pid.trim();
    assert!(Command::new("kill").arg(pid).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "{} did not stop", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bench_order_sees_every_ordered_transaction_sealed_at_every_receiver() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Up {
        dir: tmp.path().join("net"),
    };
    let base = free_ports(4).to_string();
    let dir = up.dir.to_str().unwrap();
    let output = Command::new(RUNNEL)
        .args(["up", "--dir", dir, "--orgs", "1", "--orderers", "3"])
        .args(["--base-port", &base, "--no-examples"])
        .env("RUNNEL_LOG", "warn")
        .output()
        .unwrap();
    assert!(output.status.success(), "runnel up: {output:?}");
    // An orderer runs without transparent huge pages, a peer with them
    // (docs/operations.md), where the kernel says (`THP_enabled`, Linux 6.x).
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        let thp = |node: &str| {
            let pid = std::fs::read_to_string(up.dir.join(node).join("runnel.pid")).unwrap();
            let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap();
            status
                .lines()
                .find_map(|line| line.strip_prefix("THP_enabled:"))
                .map(|value| value.trim().to_string())
        };
        if let Some(peer) = thp("Org1/peer0") {
            assert_eq!(peer, "1", "the peer keeps transparent huge pages");
            assert_eq!(
                thp("Org1/orderer0").as_deref(),
                Some("0"),
                "the orderer turns them off"
            );
        }
    }
    stop(&up.dir.join("Org1/peer0"));

    let out = tmp.path().join("out");
    let output = Command::new(RUNNEL)
        .args(["bench", "order", "--dir", dir, "--receivers", "2"])
        .args([
            "--payload-bytes",
            "100",
            "--txs",
            "3000",
            "--in-flight",
            "2",
        ])
        .args(["--duration", "2", "--warmup", "0.5"])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "runnel bench order: {output:?}");

    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["ordering"], "raft", "{summary}");
    let transactions = &summary["transactions"];
    let ordered = transactions["ordered"].as_u64().unwrap();
    assert!(ordered > 0, "{summary}");
    assert_eq!(transactions["refused"], 0, "{summary}");
    assert_eq!(transactions["sent"], ordered, "{summary}");
    let delivered = summary["delivery"]["delivered"].as_array().unwrap();
    assert_eq!(delivered.len(), 2, "{summary}");
    for count in delivered {
        assert_eq!(count.as_u64(), Some(ordered), "{summary}");
    }
    // Every orderer process was found and measured.
    let cpu = summary["cpu_us_per_tx"].as_object().unwrap();
    assert_eq!(
        cpu.keys()
            .filter(|name| name.starts_with("orderer"))
            .count(),
        3,
        "{summary}"
    );
}
