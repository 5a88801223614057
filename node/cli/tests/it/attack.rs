//! Attacks on a real node process through its public API, each with what it must not
//! achieve (docs/security.md lists them). The attacker holds what the test says: a
//! client's key, or a peer's key (a peer that went rogue), never more.

use std::path::Path;

use prost::Message;
use runnel_ledger::identity::{NetworkKeys, Role, Signer};
use runnel_ledger::proto::{
    Endorsement, KvWrite, RangeRead, ResponsePayload, SignedProposal, Transaction,
};
use runnel_ledger::store::KEY_BYTES_MAX;
use runnel_ledger::tx;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::{
    EndorseRequest, SubmitRequest, SubmitResponse, TxPhase, ValidationCode,
};
use tonic::transport::Channel;

use crate::process::{Node, copy_dir, raw_http};

/// A `runnel dev` node with the example contracts, and its directory's keys.
fn dev_node(dir: &Path) -> (Node, NetworkKeys) {
    let kv = runnel_wasm_build::build("kv").unwrap();
    let node = Node::start(
        &["dev", "--contracts", kv.parent().unwrap().to_str().unwrap()],
        dir,
    );
    let keys = NetworkKeys::load(dir).expect("the dev node's keys");
    (node, keys)
}

/// [`dev_node`] on a directory whose runnel.toml, as the first start wrote it, has had
/// each `(written, wanted)` setting line replaced.
fn dev_node_with(dir: &Path, settings: &[(&str, &str)]) -> (Node, NetworkKeys) {
    let (node, _) = dev_node(dir);
    assert!(node.stop().success());
    let path = dir.join("runnel.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (written, wanted) in settings {
        assert!(text.contains(written), "runnel.toml has no `{written}`");
        text = text.replace(written, wanted);
    }
    std::fs::write(&path, text).unwrap();
    dev_node(dir)
}

/// The node's ordered height, as `runnel status` reports it.
fn ordered_height(node: &Node) -> u64 {
    node.json(&["status"])["heights"]["ordered"]
        .as_u64()
        .unwrap()
}

/// A refusal with gRPC code `code`, named `name` (its message starts with the name).
fn assert_refused(status: &tonic::Status, code: tonic::Code, name: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    assert!(status.message().starts_with(name), "{status:?}");
}

fn signer(keys: &NetworkKeys, org: &str, role: Role) -> Signer {
    keys.signer(org, role).cloned().expect("a signer")
}

async fn gateway(node: &Node) -> GatewayClient<Channel> {
    GatewayClient::connect(node.url.clone())
        .await
        .expect("connects")
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20)
}

/// A proposal of `function(args)` on `contract`, signed by `client`.
fn proposal(client: &Signer, contract: &str, function: &str, args: &[&str]) -> SignedProposal {
    let args = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    tx::sign_proposal(
        client,
        &tx::new_proposal("main", contract, function, args, client),
    )
}

/// The node's honest endorsement of `proposal`: the transaction it returns, decoded.
async fn endorsed(gateway: &mut GatewayClient<Channel>, proposal: SignedProposal) -> Transaction {
    let answer = gateway
        .endorse(EndorseRequest {
            endorsing_orgs: Vec::new(),
            proposal: Some(proposal),
        })
        .await
        .expect("endorsed")
        .into_inner();
    Transaction::decode(answer.transaction.as_slice()).expect("a transaction")
}

/// `transaction` with its payload replaced by `payload`, endorsed by `endorsers` alone
/// (each signing the new payload with its own key).
fn forged(
    mut transaction: Transaction,
    payload: &ResponsePayload,
    endorsers: &[&Signer],
) -> Transaction {
    transaction.payload = payload.encode_to_vec();
    let proposal_hash = tx::sha256(&transaction.proposal.as_ref().unwrap().proposal);
    let message = tx::endorsement_message(&proposal_hash, &tx::sha256(&transaction.payload));
    transaction.endorsements = endorsers
        .iter()
        .map(|endorser| Endorsement {
            endorser: endorser.cert_der().to_vec(),
            signature: endorser.sign(&message).to_vec(),
        })
        .collect();
    transaction
}

/// Submits `transaction`, signed by `client`, waiting for the phase `wait_for`.
async fn try_submit(
    gateway: &mut GatewayClient<Channel>,
    client: &Signer,
    transaction: &Transaction,
    wait_for: TxPhase,
) -> Result<SubmitResponse, tonic::Status> {
    let signed = tx::sign_transaction(client, transaction);
    gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            wait_for: wait_for as i32,
        })
        .await
        .map(tonic::Response::into_inner)
}

/// Submits `transaction`, signed by `client`, and waits for its validation code.
async fn submit(
    gateway: &mut GatewayClient<Channel>,
    client: &Signer,
    transaction: &Transaction,
) -> ValidationCode {
    let answer = try_submit(gateway, client, transaction, TxPhase::Committed)
        .await
        .expect("ordered");
    ValidationCode::try_from(answer.status.expect("a status").code).expect("a known code")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A rogue peer endorses a write whose key is one byte longer than the store holds.
/// Before: the validator stopped at that seq for good (and again after every restart).
/// Now: the transaction is recorded as BAD_RWSET and every later one commits.
#[test]
fn a_write_the_store_cannot_hold_is_invalid_and_the_node_keeps_going() {
    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node(&dir.path().join("dev"));
    let client = signer(&keys, "Org1", Role::Client);
    let peer = signer(&keys, "Org1", Role::Peer);
    runtime().block_on(async {
        let mut gateway = gateway(&node).await;
        let honest = endorsed(&mut gateway, proposal(&client, "kv", "put", &["k", "v"])).await;
        let mut payload = ResponsePayload::decode(honest.payload.as_slice()).unwrap();
        let kv = payload
            .rwsets
            .iter_mut()
            .find(|set| set.namespace == "kv")
            .unwrap();
        kv.writes = vec![KvWrite {
            key: vec![b'k'; KEY_BYTES_MAX + 1],
            is_delete: false,
            value: b"v".to_vec(),
        }];
        let attack = forged(honest, &payload, &[&peer]);
        assert_eq!(
            submit(&mut gateway, &client, &attack).await,
            ValidationCode::BadRwset
        );
    });
    // The node goes on validating and committing, and says it is healthy.
    let put = node.json(&["invoke", "kv", "put", "after", "1"]);
    assert_eq!(put["code"], "VALID", "{put}");
    assert_eq!(node.http("GET", "/healthz", ""), (200, "ok\n".into()));
    // And after a restart, past the same seq.
    assert!(node.stop().success());
    let (node, _) = dev_node(&dir.path().join("dev"));
    let put = node.json(&["invoke", "kv", "put", "restarted", "1"]);
    assert_eq!(put["code"], "VALID", "{put}");
    assert_eq!(node.text(&["query", "kv", "get", "after"]), "\"1\"");
}

/// A client endorses its own writes for a contract whose policy names 'Org1.member'.
/// Before: the client's endorsement satisfied the policy, so any member wrote anything.
/// Now: only peers' endorsements count (and admins' for `_config`): no peer endorsed it,
/// so the orderer refuses it (`NOT_ENDORSED`; a validator would find it fails the
/// policy), while the same contract's honest transactions commit; and a policy no peer
/// could ever meet is refused at deploy.
#[test]
fn a_clients_own_endorsement_counts_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node(&dir.path().join("dev"));
    let kv = runnel_wasm_build::build("kv").unwrap();
    let kv = kv.to_str().unwrap();
    let deployed = node.run(&["deploy", "open", kv, "--policy", "'Org1.member'"]);
    assert!(
        deployed.status.success(),
        "{}",
        String::from_utf8_lossy(&deployed.stderr)
    );
    let refused = node.fails(
        &node.url,
        &["deploy", "clients", kv, "--policy", "'Org1.client'"],
    );
    assert!(refused.contains("UNSATISFIABLE_POLICY"), "{refused}");

    let client = signer(&keys, "Org1", Role::Client);
    runtime().block_on(async {
        let mut gateway = gateway(&node).await;
        let honest = endorsed(&mut gateway, proposal(&client, "open", "put", &["k", "v"])).await;
        let mut payload = ResponsePayload::decode(honest.payload.as_slice()).unwrap();
        let set = payload
            .rwsets
            .iter_mut()
            .find(|set| set.namespace == "open")
            .unwrap();
        set.writes = vec![KvWrite {
            key: b"k".to_vec(),
            is_delete: false,
            value: b"whatever I like".to_vec(),
        }];
        // No peer vouches for it: the orderer does not order it.
        let attack = forged(honest, &payload, &[&client]);
        let refused = try_submit(&mut gateway, &client, &attack, TxPhase::Committed)
            .await
            .unwrap_err();
        assert_refused(&refused, tonic::Code::InvalidArgument, "NOT_ENDORSED");
        let honest = endorsed(&mut gateway, proposal(&client, "open", "put", &["k", "v"])).await;
        assert_eq!(
            submit(&mut gateway, &client, &honest).await,
            ValidationCode::Valid
        );
    });
    assert_eq!(node.text(&["query", "open", "get", "k"]), "\"v\"");
}

/// A key inserted into a range after a transaction read it is a phantom: the
/// transaction is PHANTOM_READ_CONFLICT, whether it read the range to its end or
/// stopped after a key of its own writes.
/// Before: a range read that stopped at the call's own write recorded no committed key,
/// and its re-check passed whatever had been inserted before that point.
#[test]
fn an_insert_into_a_range_read_is_a_phantom() {
    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node(&dir.path().join("dev"));
    let client = signer(&keys, "Org1", Role::Client);
    let peer = signer(&keys, "Org1", Role::Peer);
    for key in ["a", "c"] {
        assert_eq!(
            node.json(&["invoke", "kv", "put", key, "1"])["code"],
            "VALID"
        );
    }
    runtime().block_on(async {
        let mut gateway = gateway(&node).await;
        // Read [a, z) to its end; then b is inserted; then the read is submitted.
        let whole = endorsed(&mut gateway, proposal(&client, "kv", "range", &["a", "z"])).await;
        // A call that wrote b and read [a, z) up to b, its own write, and stopped: it
        // saw no committed key there, as the runtime records it (start, last = b).
        let stopped = endorsed(&mut gateway, proposal(&client, "kv", "put", &["b", "own"])).await;
        let mut payload = ResponsePayload::decode(stopped.payload.as_slice()).unwrap();
        let set = payload
            .rwsets
            .iter_mut()
            .find(|set| set.namespace == "kv")
            .unwrap();
        set.range_reads = vec![RangeRead {
            start: b"a".to_vec(),
            end: Some(b"z".to_vec()),
            exhausted: false,
            reads: vec![],
            last: Some(b"b".to_vec()),
        }];
        let stopped = forged(stopped, &payload, &[&peer]);
        // A committed key, a0, lands inside both ranges before they are validated.
        let insert = endorsed(&mut gateway, proposal(&client, "kv", "put", &["a0", "1"])).await;
        assert_eq!(
            submit(&mut gateway, &client, &insert).await,
            ValidationCode::Valid
        );
        assert_eq!(
            submit(&mut gateway, &client, &whole).await,
            ValidationCode::PhantomReadConflict
        );
        assert_eq!(
            submit(&mut gateway, &client, &stopped).await,
            ValidationCode::PhantomReadConflict
        );
        // Unchanged ranges pass.
        let again = endorsed(&mut gateway, proposal(&client, "kv", "range", &["a", "z"])).await;
        assert_eq!(
            submit(&mut gateway, &client, &again).await,
            ValidationCode::Valid
        );
    });
}

/// Sixteen minutes: past the network's default proposal window of fifteen.
const STALE_MS: u64 = 16 * 60 * 1000;

/// A proposal dated outside the network's window: the only clock a contract sees is the
/// proposal's timestamp, so a client could otherwise make a contract act at any time it
/// likes, and replay old transactions forever. Before: accepted at any date.
/// Now: the endorser refuses it, and so does the orderer when a rogue peer endorsed it;
/// either way with TIMESTAMP_OUT_OF_WINDOW, and nothing is ordered.
#[test]
fn a_proposal_dated_outside_the_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node(&dir.path().join("dev"));
    let client = signer(&keys, "Org1", Role::Client);
    let peer = signer(&keys, "Org1", Role::Peer);
    runtime().block_on(async {
        let mut gateway = gateway(&node).await;
        for skew in [STALE_MS, 0u64.wrapping_sub(STALE_MS)] {
            let mut stale = tx::new_proposal("main", "kv", "put", vec![b"t".to_vec()], &client);
            stale.timestamp_ms = stale.timestamp_ms.wrapping_sub(skew);
            let refused = gateway
                .endorse(EndorseRequest {
                    endorsing_orgs: Vec::new(),
                    proposal: Some(tx::sign_proposal(&client, &stale)),
                })
                .await
                .expect_err("a stale proposal is not endorsed");
            assert_refused(
                &refused,
                tonic::Code::FailedPrecondition,
                "TIMESTAMP_OUT_OF_WINDOW",
            );
        }
        // A rogue peer endorses one anyway: the orderer refuses it.
        let honest = endorsed(&mut gateway, proposal(&client, "kv", "put", &["t", "1"])).await;
        let payload = ResponsePayload::decode(honest.payload.as_slice()).unwrap();
        let mut stale = tx::new_proposal("main", "kv", "put", vec![b"t".to_vec()], &client);
        stale.timestamp_ms -= STALE_MS;
        let mut transaction = honest.clone();
        transaction.proposal = Some(tx::sign_proposal(&client, &stale));
        let mut payload = payload;
        payload.proposal_hash =
            tx::sha256(&transaction.proposal.as_ref().unwrap().proposal).to_vec();
        let attack = forged(transaction, &payload, &[&peer]);
        let before = ordered_height(&node);
        let refused = try_submit(&mut gateway, &client, &attack, TxPhase::Committed)
            .await
            .expect_err("not ordered");
        assert_refused(
            &refused,
            tonic::Code::FailedPrecondition,
            "TIMESTAMP_OUT_OF_WINDOW",
        );
        assert_eq!(ordered_height(&node), before, "nothing was ordered");
    });
}

/// The same transaction bytes submitted many times at once. Before: every copy that
/// passed the gateway's ledger check before the first was validated was ordered, and
/// stored by the orderer and every peer. Now: the orderer orders one copy; every other
/// gets ALREADY_EXISTS / DUPLICATE_TXID, and nothing more is stored.
#[test]
fn racing_copies_of_a_transaction_are_ordered_once() {
    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node(&dir.path().join("dev"));
    let client = signer(&keys, "Org1", Role::Client);
    let before = ordered_height(&node);
    runtime().block_on(async {
        let mut gateway = gateway(&node).await;
        let honest = endorsed(&mut gateway, proposal(&client, "kv", "put", &["race", "1"])).await;
        let bytes = tx::sign_transaction(&client, &honest).encode_to_vec();
        let copies: Vec<_> = (0..16)
            .map(|_| {
                let mut gateway = gateway.clone();
                let bytes = bytes.clone();
                tokio::spawn(async move {
                    gateway
                        .submit(SubmitRequest {
                            transaction: bytes,
                            wait_for: TxPhase::Unspecified as i32,
                        })
                        .await
                })
            })
            .collect();
        let mut ordered = 0;
        for copy in copies {
            match copy.await.unwrap() {
                Ok(_) => ordered += 1,
                Err(status) => {
                    assert_refused(&status, tonic::Code::AlreadyExists, "DUPLICATE_TXID")
                }
            }
        }
        assert_eq!(ordered, 1);
    });
    assert_eq!(node.text(&["query", "kv", "get", "race"]), "\"1\"");
    assert_eq!(ordered_height(&node), before + 1, "one copy stored");
}

/// The orderer's log is put back to an older copy (a restored backup) behind a peer
/// that committed more. Before: the orderer handed the peer's seqs out again, for other
/// transactions, and the peer would have forked. Now: the node refuses to start,
/// saying why, and changes nothing.
#[test]
fn an_orderer_log_older_than_the_peers_state_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("dev");
    let (node, _) = dev_node(&dev);
    assert_eq!(
        node.json(&["invoke", "kv", "put", "a", "1"])["code"],
        "VALID"
    );
    assert!(node.stop().success());
    let orderer = dev.join("orderer");
    assert!(
        orderer.join("orderer.log").is_file(),
        "the dev node's orderer log"
    );
    let backup = dir.path().join("orderer-backup");
    copy_dir(&orderer, &backup);
    let (node, _) = dev_node(&dev);
    for key in ["b", "c"] {
        assert_eq!(
            node.json(&["invoke", "kv", "put", key, "1"])["code"],
            "VALID"
        );
    }
    assert!(node.stop().success());
    std::fs::remove_dir_all(&orderer).unwrap();
    copy_dir(&backup, &orderer);

    let kv = runnel_wasm_build::build("kv").unwrap();
    let output = std::process::Command::new(crate::process::RUNNEL)
        .args([
            "dev",
            "--dir",
            dev.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--contracts", kv.parent().unwrap().to_str().unwrap()])
        .env("RUNNEL_LOG", "warn")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("ORDERER_BEHIND") || stderr.contains("log ends at seq"),
        "{stderr}"
    );
}

/// A web page whose name an attacker rebinds to 127.0.0.1 sends requests from the
/// node's own host, with the page's name as Host. Before: it could change the node's
/// log level (and so silence it or flood its disk). Now: changes are taken only when
/// addressed to a loopback name; and /healthz never shows internal error text.
#[test]
fn the_log_level_cannot_be_changed_through_a_rebound_name() {
    let dir = tempfile::tempdir().unwrap();
    let (node, _) = dev_node(&dir.path().join("dev"));
    let addr = node.url.trim_start_matches("http://").to_string();
    let rebound = raw_http(&node.url, "PUT", "/log/level", "evil.example:80", "", "off");
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    assert_eq!(node.http("GET", "/log/level", ""), (200, "warn\n".into()));
    let local = raw_http(&node.url, "PUT", "/log/level", &addr, "", "info");
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");
    assert_eq!(node.http("GET", "/log/level", ""), (200, "info\n".into()));
}

/// Which web pages may call a node from a browser. Before: every node answered
/// `Access-Control-Allow-Origin: *`, so any page a member visited could read the ledger
/// through the member's browser. Now: a node made by `runnel init` lets no other origin
/// in (the explorer it serves is same-origin); `runnel dev` lets any, for local work;
/// an allow-list names the origins of the network's own front ends.
#[test]
fn only_the_origins_a_node_allows_may_call_it_from_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let dev = dir.path().join("dev");
    let preflight = |node: &Node, origin: &str| {
        raw_http(
            &node.url,
            "OPTIONS",
            "/runnel.v1.Query/GetNetworkInfo",
            node.url.trim_start_matches("http://"),
            &format!(
                "Origin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type,x-grpc-web\r\n"
            ),
            "",
        )
        .to_ascii_lowercase()
    };
    let (node, _) = dev_node(&dev);
    assert!(preflight(&node, "https://evil.example").contains("access-control-allow-origin: *"));
    assert!(node.stop().success());

    let settings = dev.join("runnel.toml");
    let text = std::fs::read_to_string(&settings).unwrap();
    for (origins, evil_allowed, app_allowed) in [
        ("[]", false, false),
        ("[\"https://app.example\"]", false, true),
    ] {
        let edited = text.replace(
            "cors_origins = [\"*\"]",
            &format!("cors_origins = {origins}"),
        );
        assert_ne!(edited, text);
        std::fs::write(&settings, edited).unwrap();
        let (node, _) = dev_node(&dev);
        let evil = preflight(&node, "https://evil.example");
        assert_eq!(
            evil.contains("access-control-allow-origin"),
            evil_allowed,
            "{evil}"
        );
        let app = preflight(&node, "https://app.example");
        assert_eq!(
            app.contains("access-control-allow-origin: https://app.example"),
            app_allowed,
            "{app}"
        );
        assert!(node.stop().success());
    }
    // What `runnel init` writes for a network's nodes: no other origin.
    let net = dir.path().join("net");
    let init = std::process::Command::new(crate::process::RUNNEL)
        .args(["init", "--dir", net.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(init.status.success());
    for node in ["Org1/peer0", "Org1/orderer0"] {
        let written = std::fs::read_to_string(net.join(node).join("runnel.toml")).unwrap();
        assert!(written.contains("\ncors_origins = []\n"), "{written}");
    }
}

/// The explorer's pages come with headers that keep another site from framing them
/// (clickjacking a member into signing), keep them from loading code or sending data
/// elsewhere, and stop type sniffing.
#[test]
fn explorer_pages_forbid_framing_foreign_code_and_sniffing() {
    let dir = tempfile::tempdir().unwrap();
    let explorer = dir.path().join("explorer");
    std::fs::create_dir_all(&explorer).unwrap();
    std::fs::write(
        explorer.join("index.html"),
        "<!doctype html><title>x</title>",
    )
    .unwrap();
    let kv = runnel_wasm_build::build("kv").unwrap();
    let node = Node::start(
        &[
            "dev",
            "--contracts",
            kv.parent().unwrap().to_str().unwrap(),
            "--explorer",
            explorer.to_str().unwrap(),
        ],
        &dir.path().join("dev"),
    );
    let addr = node.url.trim_start_matches("http://").to_string();
    for path in ["/", "/transactions/%zz%", "/blocks/1"] {
        let page = raw_http(&node.url, "GET", path, &addr, "", "").to_ascii_lowercase();
        assert!(page.starts_with("http/1.1 200"), "{path}: {page}");
        assert!(page.contains("frame-ancestors 'none'"), "{page}");
        assert!(page.contains("connect-src 'self'"), "{page}");
        assert!(page.contains("x-content-type-options: nosniff"), "{page}");
        assert!(page.contains("x-frame-options: deny"), "{page}");
    }
}

/// One client opens as many live streams, and waits for as many statuses, as it can.
/// Before: it could take the node's whole pools (1,024 streams) from every other client,
/// and a Submit that could not wait was refused only after its transaction was ordered.
/// Now: each connection holds at most its share (`streams_per_connection_max`,
/// `commit_waits_per_connection_max`); other connections are still served; and a Submit
/// that cannot wait is refused before anything is ordered.
#[test]
fn one_connection_cannot_take_the_pools_from_the_others() {
    use runnel_server::proto::deliver_client::DeliverClient;
    use runnel_server::proto::{CommitStatusRequest, DeliverTransactionsRequest};

    let dir = tempfile::tempdir().unwrap();
    let (node, keys) = dev_node_with(
        &dir.path().join("dev"),
        &[
            (
                "streams_per_connection_max = 64",
                "streams_per_connection_max = 8",
            ),
            (
                "commit_waits_per_connection_max = 1024",
                "commit_waits_per_connection_max = 1",
            ),
        ],
    );
    let client = signer(&keys, "Org1", Role::Client);
    runtime().block_on(async {
        let channel = tonic::transport::Channel::from_shared(node.url.clone())
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut greedy = DeliverClient::new(channel.clone());
        let far = DeliverTransactionsRequest { start_seq: 1 << 60 };
        let mut held = Vec::new();
        for _ in 0..8 {
            held.push(greedy.transactions(far).await.expect("within the share"));
        }
        let refused = greedy.transactions(far).await.expect_err("past the share");
        assert_refused(&refused, tonic::Code::ResourceExhausted, "TOO_MANY_STREAMS");
        // Another connection is served.
        let mut other = DeliverClient::new(
            tonic::transport::Channel::from_shared(node.url.clone())
                .unwrap()
                .connect()
                .await
                .unwrap(),
        );
        other
            .transactions(far)
            .await
            .expect("another connection's share");

        // One status wait holds this connection's only share of the waits ...
        let mut waiting = GatewayClient::new(channel.clone());
        let wait = tokio::spawn(async move {
            waiting
                .commit_status(CommitStatusRequest {
                    tx_id: "ab".repeat(32),
                    wait_for: TxPhase::Committed as i32,
                })
                .await
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        // ... so a Submit that would wait is refused, and nothing is ordered.
        let mut gateway = GatewayClient::new(channel);
        let honest = endorsed(&mut gateway, proposal(&client, "kv", "put", &["w", "1"])).await;
        let before = ordered_height(&node);
        let refused = try_submit(&mut gateway, &client, &honest, TxPhase::Committed)
            .await
            .expect_err("no room to wait");
        assert_refused(&refused, tonic::Code::ResourceExhausted, "TOO_MANY_WAITS");
        assert_eq!(ordered_height(&node), before, "refused before ordering");
        wait.abort();
        drop(held);
    });
}

/// A client opens connections and says nothing on them. Before: each was held for ever,
/// without bound, and a plain-HTTP node kept every one. Now: an address holds at most
/// `connections_per_address_max` of them, handshakes included (a connection past it is
/// closed at once), others still get in meanwhile, and one that stays silent is closed
/// after 10 s, giving its place back.
#[test]
fn silent_connections_cannot_keep_the_node_from_others() {
    use std::io::{Read, Write};

    let dir = tempfile::tempdir().unwrap();
    let (node, _) = dev_node_with(
        &dir.path().join("dev"),
        &[(
            "\nconnections_per_address_max = 128",
            "\nconnections_per_address_max = 4",
        )],
    );
    let addr: std::net::SocketAddr = node.url.trim_start_matches("http://").parse().unwrap();
    // A plain GET /healthz from `from`; its status, 0 when the node closed the connection.
    let healthz = |from: &str| -> u16 {
        let rt = runtime();
        let Ok(tcp) = rt.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(std::net::SocketAddr::new(from.parse().unwrap(), 0))?;
            socket.connect(addr).await
        }) else {
            return 0;
        };
        let mut tcp = tcp.into_std().unwrap();
        tcp.set_nonblocking(false).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let request = "GET /healthz HTTP/1.1\r\nHost: n\r\nConnection: close\r\n\r\n";
        if tcp.write_all(request.as_bytes()).is_err() {
            return 0;
        }
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        answer
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0)
    };
    let silent: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    // The silent ones hold their address's share: one more from it is closed at once ...
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(healthz("127.0.0.1"), 0, "past its address's share");
    // ... while another address is answered.
    assert_eq!(healthz("127.0.0.2"), 200);
    // The silent ones are closed by the node, and their address gets in again.
    for mut connection in silent {
        connection
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            connection.read(&mut byte).unwrap_or(0),
            0,
            "closed by the node"
        );
    }
    assert_eq!(node.http("GET", "/healthz", ""), (200, "ok\n".into()));
}
