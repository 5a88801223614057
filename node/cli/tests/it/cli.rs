//! The `runnel` binary as an operator and an application use it: `init`, `dev`, `start`
//! in a real process on loopback, the client commands against it (over TLS for a network
//! from `runnel init`, plain HTTP for a dev node), the operations endpoints (/healthz,
//! /metrics, /log/level), a clean stop on SIGTERM, and a restart that keeps what was
//! committed.

use std::path::Path;
use std::process::Command;

use runnel_ledger::identity::Signer;

use crate::process::{Node, RUNNEL};

#[test]
fn init_start_invoke_query_inspect_stop_restart_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("net");
    let init = Command::new(RUNNEL)
        .args([
            "init",
            "--dir",
            net.to_str().unwrap(),
            "--orgs",
            "Org1,Org2",
            "--one-node",
        ])
        .args(["--channel", "trade"])
        .args(["--tls-host", "node1.example", "--tls-host", "10.0.0.7"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    assert!(net.join("identities/Org2/ca.pem").is_file());
    for file in [
        "ca.pem",
        "server.pem",
        "server.key",
        "client.pem",
        "client.key",
    ] {
        assert!(
            net.join("identities/Org2/tls").join(file).is_file(),
            "{file}"
        );
    }
    let settings = std::fs::read_to_string(net.join("runnel.toml")).unwrap();
    assert!(
        settings.contains("orgs = [\"Org1\", \"Org2\"]"),
        "{settings}"
    );
    assert!(
        settings.contains("[api.tls]\n") && settings.contains("\nenabled = true\n"),
        "{settings}"
    );
    assert!(
        settings.contains("\ncert = \"identities/Org1/tls/server.pem\"\n"),
        "{settings}"
    );
    assert_tls_server_certificate(&net.join("identities/Org1/tls/server.pem"));

    // Bad TLS files stop the node at start, naming the file, before the ledger opens.
    let missing = dir.path().join("missing.pem");
    let refused = Command::new(RUNNEL)
        .args([
            "start",
            "--dir",
            net.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--tls-cert", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains(missing.to_str().unwrap()), "{stderr}");
    let mismatched = Command::new(RUNNEL)
        .args([
            "start",
            "--dir",
            net.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .env("RUNNEL_TLS_KEY", net.join("identities/Org2/tls/server.key"))
        .output()
        .unwrap();
    assert!(!mismatched.status.success());
    let stderr = String::from_utf8_lossy(&mismatched.stderr);
    assert!(
        stderr.contains("does not belong to the certificate")
            && stderr.contains("Org2/tls/server.key"),
        "{stderr}"
    );
    // A second init would overwrite the keys: refused.
    let again = Command::new(RUNNEL)
        .args(["init", "--one-node", "--dir", net.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a network"));
    // A TLS host name that no client could connect by.
    let bad_host = Command::new(RUNNEL)
        .args([
            "init",
            "--one-node",
            "--dir",
            dir.path().join("bad").to_str().unwrap(),
        ])
        .args(["--tls-host", "not a host"])
        .output()
        .unwrap();
    assert!(!bad_host.status.success());
    assert!(String::from_utf8_lossy(&bad_host.stderr).contains("`not a host`"));
    assert!(!dir.path().join("bad/identities").exists());

    let node = Node::start(&["start"], &net);
    assert!(node.url.starts_with("https://127.0.0.1:"), "{}", node.url);
    let status = node.json(&["status"]);
    assert_eq!(status["channel"], "trade");
    assert_eq!(status["orgs"], serde_json::json!(["Org1", "Org2"]));

    // The default lifecycle policy needs a majority of the two organisations: Org1's
    // admin alone cannot deploy; once Org2's admin approved, Org1's commit does.
    let kv = runnel_wasm_build::build("kv").unwrap();
    let kv = kv.to_str().unwrap();
    let alone = node.run(&["deploy", "kv", kv, "--version", "1.0"]);
    assert!(!alone.status.success());
    let refused = String::from_utf8_lossy(&alone.stderr);
    assert!(
        refused.contains("NOT_APPROVED") && refused.contains("not by [Org2]"),
        "{refused}"
    );
    let approved = node.json(&["approve", "--org", "Org2", "kv", kv, "--version", "1.0"]);
    assert_eq!(approved["code"], "VALID");
    assert_eq!(approved["approved"]["sequence"], 1);
    let deployed = node.json(&["deploy", "kv", kv, "--version", "1.0"]);
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

    // Clients that cannot check the node's certificate are refused, with a reason.
    let plain = node.url.replace("https://", "http://");
    let refused = node.fails(&plain, &["status"]);
    assert!(refused.contains("https://"), "{refused}");
    let other = dir.path().join("other");
    let init_other = Command::new(RUNNEL)
        .args(["init", "--one-node", "--dir", other.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(init_other.status.success());
    let foreign_ca = other.join("identities/Org1/tls/ca.pem");
    let refused = node.fails(
        &node.url,
        &["status", "--tls-ca", foreign_ca.to_str().unwrap()],
    );
    assert!(
        refused.contains("not issued by a CA this client trusts") && refused.contains("--tls-ca"),
        "{refused}"
    );
    let refused = node.fails(
        &node.url,
        &["status", "--tls-server-name", "elsewhere.example"],
    );
    assert!(
        refused.contains("not valid for this host name"),
        "{refused}"
    );
    let by_name = node.json(&["status", "--tls-server-name", "node1.example"]);
    assert_eq!(by_name["channel"], "trade");

    // Operations: /healthz for anyone; /metrics, as reads here, for members only.
    assert_eq!(node.http("GET", "/healthz", ""), (200, "ok\n".into()));
    assert_eq!(node.http("GET", "/metrics", "").0, 401);
    let people = net.join("identities/Org1");
    let read = |file: &str| std::fs::read_to_string(people.join(file)).unwrap();
    let client = Signer::from_pem(&read("client.pem"), &read("client.key")).unwrap();
    let start = runnel_ledger::tx::now_ms() - 60_000;
    let grant = runnel_server::readers::grant_header(&client, "trade", start, 10 * 60_000);
    let header = format!("{}: {grant}\r\n", runnel_server::readers::READ_GRANT_HEADER);
    let (code, metrics) = crate::process::https_with(
        node.url.strip_prefix("https://").unwrap(),
        &people.join("tls/ca.pem"),
        &header,
        "GET",
        "/metrics",
        "",
    );
    assert_eq!(code, 200);
    assert!(
        // Org2's approval, the commit and the put.
        metrics.contains("runnel_transactions_total{code=\"VALID\"} 3"),
        "{metrics}"
    );
    assert!(
        metrics.contains("runnel_height{of=\"committed\"} 3"),
        "{metrics}"
    );
    assert!(metrics.contains("runnel_stage_seconds_count{stage=\"validated\"}"));
    assert!(metrics.contains("runnel_peer_flush_seconds_count"));
    let (code, level) = node.http("PUT", "/log/level", "info,runnel_server=debug");
    assert_eq!(code, 200);
    assert!(level.contains("runnel_server=debug"), "{level}");
    assert_eq!(node.http("GET", "/log/level", "").1, level);
    assert_eq!(node.http("PUT", "/log/level", "=nonsense=").0, 400);
    assert_eq!(node.http("GET", "/no/such/page", "").0, 404);

    assert!(node.stop().success(), "a clean stop on SIGTERM");

    // Restarted, now requiring client certificates from Org1's TLS CA: what was
    // committed is there, and the node goes on. The client commands present the org's
    // TLS client certificate from the network directory.
    let client_ca = net.join("identities/Org1/tls/ca.pem");
    let node = Node::start(
        &[
            "start",
            "--tls-client-auth",
            "required",
            "--tls-client-ca",
            client_ca.to_str().unwrap(),
        ],
        &net,
    );
    assert_eq!(node.text(&["query", "kv", "get", "colour"]), "\"blue\"");
    let next = node.json(&["invoke", "kv", "put", "colour", "green", "--validated"]);
    assert_eq!(next["seq"], 4);
    // `runnel bench` speaks gRPC over its own HTTP/2 connections: over TLS too, with the
    // client certificate the node requires.
    let out = dir.path().join("bench-tls");
    let report = node.text(&[
        "bench",
        "--clients",
        "2",
        "--count",
        "20",
        "--keys",
        "5",
        "--read-share",
        "0",
        "--warmup",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(report.contains("(20 of 20 valid)"), "{report}");
    // Org2's TLS client certificate is from another CA.
    let refused = node.fails(
        &node.url,
        &["query", "--org", "Org2", "kv", "get", "colour"],
    );
    assert!(refused.contains("TLS"), "{refused}");
    // Without any client certificate.
    let (cert, key) = (dir.path().join("none.pem"), dir.path().join("none.key"));
    std::fs::write(&cert, "").unwrap();
    std::fs::write(&key, "").unwrap();
    let refused = node.fails(
        &node.url,
        &[
            "status",
            "--tls-client-cert",
            cert.to_str().unwrap(),
            "--tls-client-key",
            key.to_str().unwrap(),
        ],
    );
    assert!(refused.contains("not a PEM private key"), "{refused}");
    assert!(node.stop().success());
}

/// The TLS server certificate `runnel init` wrote: ECDSA P-256, for server
/// authentication, valid for the local names and those given with --tls-host.
fn assert_tls_server_certificate(path: &Path) {
    use x509_parser::extensions::GeneralName;
    let pem = std::fs::read(path).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
    let cert = pem.parse_x509().unwrap();
    assert_eq!(
        cert.public_key().algorithm.algorithm.to_id_string(),
        "1.2.840.10045.2.1",
        "an EC key"
    );
    assert!(
        cert.extended_key_usage()
            .unwrap()
            .unwrap()
            .value
            .server_auth
    );
    let names: Vec<String> = cert
        .subject_alternative_name()
        .unwrap()
        .unwrap()
        .value
        .general_names
        .iter()
        .map(|name| match name {
            GeneralName::DNSName(name) => name.to_string(),
            GeneralName::IPAddress(ip) => match ip.len() {
                4 => std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*ip).unwrap()).to_string(),
                _ => std::net::Ipv6Addr::from(<[u8; 16]>::try_from(*ip).unwrap()).to_string(),
            },
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        ["localhost", "127.0.0.1", "::1", "node1.example", "10.0.0.7"]
    );
}

#[test]
fn dev_creates_a_network_and_deploys_the_examples() {
    let dir = tempfile::tempdir().unwrap();
    let contracts =
        ["kv", "token", "asset-transfer"].map(|package| runnel_wasm_build::build(package).unwrap());
    let modules = contracts[0].parent().unwrap();
    let dev = dir.path().join("dev");
    let node = Node::start(&["dev", "--contracts", modules.to_str().unwrap()], &dev);
    assert!(node.url.starts_with("http://127.0.0.1:"), "{}", node.url);
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
    assert_eq!(node.http("GET", "/healthz", ""), (200, "ok\n".into()));
    // Every thread runs under SCHED_BATCH (node.scheduling's default), those started
    // before the policy was set and those started after it alike.
    let policies = thread_policies(node.child.id());
    assert!(policies.len() > 8, "{policies:?}");
    assert!(
        policies.iter().all(|(_, policy)| *policy == SCHED_BATCH),
        "{policies:?}"
    );
    assert!(node.stop().success());
    let node = Node::start(
        &[
            "dev",
            "--scheduling",
            "normal",
            "--contracts",
            modules.to_str().unwrap(),
        ],
        &dev,
    );
    let policies = thread_policies(node.child.id());
    assert!(
        policies.iter().all(|(_, policy)| *policy == 0),
        "{policies:?}"
    );
    assert!(node.stop().success());

    // The dev node can be given TLS, with the certificates made with it.
    let node = Node::start(
        &["dev", "--tls", "--contracts", modules.to_str().unwrap()],
        &dev,
    );
    assert!(node.url.starts_with("https://127.0.0.1:"), "{}", node.url);
    let balance = node.text(&["query", "token", "balance", "Org1/alice"]);
    assert_eq!(balance, "100");
    assert_eq!(node.http("GET", "/healthz", ""), (200, "ok\n".into()));
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

/// Linux's SCHED_BATCH, as /proc/<pid>/task/<tid>/stat shows it.
const SCHED_BATCH: u32 = 3;

/// Each thread of process `pid`: its name and scheduling policy (0 is SCHED_OTHER).
fn thread_policies(pid: u32) -> Vec<(String, u32)> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| {
            let stat = std::fs::read_to_string(task.ok()?.path().join("stat")).ok()?;
            // "tid (name) state ...": the fields after the name, from the third on.
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let policy = rest.split(' ').nth(38)?.parse().ok()?;
            Some((name.to_string(), policy))
        })
        .collect()
}

#[test]
fn bench_reports_each_transaction_with_the_nodes_stages_and_counts_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let kv = runnel_wasm_build::build("kv").unwrap();
    let dev = dir.path().join("dev");
    let node = Node::start(
        &["dev", "--contracts", kv.parent().unwrap().to_str().unwrap()],
        &dev,
    );
    let out = dir.path().join("bench");
    // Four clients updating three keys: read-modify-writes that can conflict.
    let report = node.text(&[
        "bench",
        "--workload",
        "kv-rmw",
        "--keys",
        "3",
        "--read-share",
        "0",
        "--clients",
        "4",
        "--count",
        "120",
        "--duration",
        "60",
        "--warmup",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        report.contains("kv-rmw with 4 client(s) over 1 connection(s)"),
        "{report}"
    );

    let csv = std::fs::read_to_string(out.join("transactions.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 120, "one row per transaction");
    // The node's stamps of every stage, then the client's own commit, in flow order:
    // the trace stream was joined to each row.
    let flow: Vec<usize> = [
        "endorse_start_us",
        "endorse_end_us",
        "received_us",
        "ordered_us",
        "delivered_us",
        "verified_us",
        "validated_us",
        "committed_us",
        "notified_us",
        "client_committed_us",
    ]
    .into_iter()
    .map(column)
    .collect();
    let mut valid = 0;
    for row in &rows {
        assert_eq!(row.len(), header.len(), "{row:?}");
        let code = row[column("code")];
        assert!(
            code == "VALID" || code == "MVCC_READ_CONFLICT",
            "unexpected outcome {code}"
        );
        valid += usize::from(code == "VALID");
        let times: Vec<u64> = flow.iter().map(|&i| row[i].parse().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
        let sent: u64 = row[column("sent_us")].parse().unwrap();
        assert!(
            sent <= times[0],
            "sent before its endorsement began: {row:?}"
        );
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    // The steps run from sending to the client's commit, each seen for every transaction.
    let steps: Vec<(&str, u64)> = summary["latency_us"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["n"].as_u64().unwrap()))
        .collect();
    let names: Vec<&str> = steps.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        [
            "endorse",
            "endorsed_to_received",
            "received_to_ordered",
            "ordered_to_delivered",
            "delivered_to_verified",
            "verified_to_validated",
            "validated_to_committed",
            "committed_to_notified",
            "notified_to_client",
        ]
    );
    assert!(steps.iter().all(|(_, n)| *n == 120), "{steps:?}");
    let transactions = &summary["transactions"];
    assert_eq!(transactions["committed"], 120);
    assert_eq!(transactions["valid"], valid);
    let outcomes = &transactions["outcomes"];
    assert_eq!(
        outcomes["VALID"].as_u64().unwrap_or(0)
            + outcomes["MVCC_READ_CONFLICT"].as_u64().unwrap_or(0),
        120
    );
    for plot in ["latency-cdf.svg", "throughput.svg"] {
        let svg = std::fs::read_to_string(out.join(plot)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<polyline"),
            "{plot}"
        );
    }
    assert!(node.stop().success());
}

#[test]
fn bench_runs_token_and_asset_transfers_on_the_example_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let kv = runnel_wasm_build::build("kv").unwrap();
    runnel_wasm_build::build("token").unwrap();
    runnel_wasm_build::build("asset-transfer").unwrap();
    let dev = dir.path().join("dev");
    let node = Node::start(
        &["dev", "--contracts", kv.parent().unwrap().to_str().unwrap()],
        &dev,
    );
    let run = |workload: &str| {
        let out = dir.path().join(workload);
        node.text(&[
            "bench",
            "--workload",
            workload,
            "--keys",
            "5",
            "--read-share",
            "0",
            "--clients",
            "2",
            "--count",
            "40",
            "--duration",
            "60",
            "--warmup",
            "0",
            "--out",
            out.to_str().unwrap(),
        ]);
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["workload"], workload);
        let transactions = summary["transactions"].clone();
        assert_eq!(transactions["committed"], 40, "{transactions}");
        let outcomes = &transactions["outcomes"];
        assert_eq!(
            outcomes["VALID"].as_u64().unwrap_or(0)
                + outcomes["MVCC_READ_CONFLICT"].as_u64().unwrap_or(0),
            40,
            "{outcomes}"
        );
        transactions["valid"].as_u64().unwrap()
    };

    // Every valid transfer moved 1 to one of the five bench accounts.
    let transfers = run("token-transfer");
    assert!(transfers > 0);
    let received: u64 = (0..5)
        .map(|key| {
            let account = format!("Org1/bench-{key}");
            node.text(&["query", "token", "balance", &account])
                .trim()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(received, transfers);

    // The five preloaded assets now belong to the owners the valid transfers named.
    assert!(run("asset-transfer") > 0);
    let asset: serde_json::Value =
        serde_json::from_str(&node.text(&["query", "basic", "ReadAsset", "bench-asset-0"]))
            .unwrap();
    assert!(
        asset["Owner"].as_str().unwrap().starts_with("Org1/owner-"),
        "{asset}"
    );
    assert!(node.stop().success());
}
