//! The `runnel` binary as an operator and an application use it: `init`, `dev`, `start`
//! in a real process on loopback, the client commands against it, the operations
//! endpoints (/healthz, /metrics, /log/level), a clean stop on SIGTERM, and a restart
//! that keeps what was committed.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

const RUNNEL: &str = env!("CARGO_BIN_EXE_runnel");

/// How long a node may take to start (the first start compiles contracts).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A node process; killed if the test ends without stopping it.
struct Node {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Node {
    /// Runs `runnel <args>` and waits for its banner's URL.
    fn start(args: &[&str], dir: &Path) -> Node {
        let mut child = Command::new(RUNNEL)
            .args(args)
            .args(["--dir", dir.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .env("RUNNEL_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runnel starts");
        let stdout = child.stdout.take().unwrap();
        let (found, url) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.trim().strip_prefix("gRPC and gRPC-web") {
                    let _ = found.send(url.trim().to_string());
                }
            }
        });
        let url = match url.recv_timeout(START_TIMEOUT) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                panic!("runnel {args:?} did not start:\n{stderr}");
            }
        };
        Node {
            child,
            url,
            dir: dir.to_path_buf(),
        }
    }

    /// Runs a client command against this node.
    fn run(&self, args: &[&str]) -> Output {
        let (command, rest) = args.split_first().unwrap();
        Command::new(RUNNEL)
            .arg(command)
            .args(["--url", &self.url, "--dir", self.dir.to_str().unwrap()])
            .args(rest)
            .output()
            .expect("runnel runs")
    }

    /// Runs a client command that must succeed and print JSON.
    fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("JSON")
    }

    fn text(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    }

    /// SIGTERM, then the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "node did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.1 request to the node; status and body.
fn http(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::Write;
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn init_start_invoke_query_inspect_stop_restart() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("net");
    let init = Command::new(RUNNEL)
        .args([
            "init",
            "--dir",
            net.to_str().unwrap(),
            "--orgs",
            "Org1,Org2",
        ])
        .args(["--channel", "trade"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    assert!(net.join("identities/Org2/ca.pem").is_file());
    let settings = std::fs::read_to_string(net.join("runnel.toml")).unwrap();
    assert!(
        settings.contains("orgs = [\"Org1\", \"Org2\"]"),
        "{settings}"
    );
    // A second init would overwrite the keys: refused.
    let again = Command::new(RUNNEL)
        .args(["init", "--dir", net.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a network"));

    let node = Node::start(&["start"], &net);
    let status = node.json(&["status"]);
    assert_eq!(status["channel"], "trade");
    assert_eq!(status["orgs"], serde_json::json!(["Org1", "Org2"]));

    // Deploy as Org1's admin; the default lifecycle policy needs a majority of the
    // admins, which the node gathers.
    let kv = runnel_wasm_build::build("kv").unwrap();
    let deployed = node.json(&["deploy", "kv", kv.to_str().unwrap(), "--version", "1.0"]);
    assert_eq!(deployed["code"], "VALID");
    assert_eq!(deployed["contract"]["version"], "1.0");

    let put = node.json(&["invoke", "kv", "put", "colour", "blue"]);
    assert_eq!(put["code"], "VALID");
    assert_eq!(put["phase"], "committed");
    let tx_id = put["tx_id"].as_str().unwrap().to_string();
    assert_eq!(node.text(&["query", "kv", "get", "colour"]), "\"blue\"");

    let tx = node.json(&["tx", &tx_id]);
    assert_eq!(tx["code"], "VALID");
    assert_eq!(tx["proposal"]["function"], "put");
    assert_eq!(tx["creator"], "Org1.client (client.Org1)");
    let writes = &tx["payload"]["rwsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|set| set["namespace"] == "kv")
        .unwrap()["writes"];
    assert_eq!(writes[0]["key"], "colour");

    // Bad input: a clear message and a failing exit status, and the node keeps serving.
    let unknown = node.run(&["invoke", "nope", "put", "k", "v"]);
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("CONTRACT_NOT_FOUND"));
    let bad_tx = node.run(&["tx", "not-hex"]);
    assert!(!bad_tx.status.success());
    assert_eq!(node.text(&["query", "kv", "get", "colour"]), "\"blue\"");

    // Operations.
    assert_eq!(http(&node.url, "GET", "/healthz", ""), (200, "ok\n".into()));
    let (code, metrics) = http(&node.url, "GET", "/metrics", "");
    assert_eq!(code, 200);
    assert!(
        metrics.contains("runnel_transactions_total{code=\"VALID\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("runnel_height{of=\"committed\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("runnel_stage_seconds_count{stage=\"validated\"}"));
    assert!(metrics.contains("runnel_peer_flush_seconds_count"));
    let (code, level) = http(&node.url, "PUT", "/log/level", "info,runnel_node=debug");
    assert_eq!(code, 200);
    assert!(level.contains("runnel_node=debug"), "{level}");
    assert_eq!(http(&node.url, "GET", "/log/level", "").1, level);
    assert_eq!(http(&node.url, "PUT", "/log/level", "=nonsense=").0, 400);
    assert_eq!(http(&node.url, "GET", "/no/such/page", "").0, 404);

    assert!(node.stop().success(), "a clean stop on SIGTERM");

    // Restarted: what was committed is there, and the node goes on.
    let node = Node::start(&["start"], &net);
    assert_eq!(node.text(&["query", "kv", "get", "colour"]), "\"blue\"");
    let next = node.json(&["invoke", "kv", "put", "colour", "green", "--validated"]);
    assert_eq!(next["seq"], 3);
    assert!(node.stop().success());
}

#[test]
fn dev_creates_a_network_and_deploys_the_examples() {
    let dir = tempfile::tempdir().unwrap();
    let contracts =
        ["kv", "token", "asset-transfer"].map(|package| runnel_wasm_build::build(package).unwrap());
    let modules = contracts[0].parent().unwrap();
    let dev = dir.path().join("dev");
    let node = Node::start(&["dev", "--contracts", modules.to_str().unwrap()], &dev);
    let minted = node.json(&[
        "invoke",
        "--as",
        "admin",
        "token",
        "mint",
        "Org1/alice",
        "100",
    ]);
    assert_eq!(minted["code"], "VALID");
    let transferred = node.json(&["invoke", "--as", "admin", "basic", "InitLedger"]);
    assert_eq!(transferred["code"], "VALID");
    assert!(node.stop().success());

    // A start without a network says what to do.
    let empty = dir.path().join("empty");
    let output = Command::new(RUNNEL)
        .args(["start", "--dir", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("runnel init"));
}
