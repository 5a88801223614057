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
use runnel_server::proto::{EndorseRequest, SubmitRequest, TxPhase, ValidationCode};
use tonic::transport::Channel;

use crate::process::Node;

/// A `runnel dev` node with the example contracts, and its directory's keys.
fn dev_node(dir: &Path) -> (Node, NetworkKeys) {
    let kv = runnel_wasm_build::build("kv").unwrap();
    let node = Node::start(
        &["dev", "--contracts", kv.parent().unwrap().to_str().unwrap()],
        dir,
    );
    let keys = NetworkKeys::load(&dir.join("identities")).expect("the dev node's keys");
    (node, keys)
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

/// Submits `transaction`, signed by `client`, and waits for its validation code.
async fn submit(
    gateway: &mut GatewayClient<Channel>,
    client: &Signer,
    transaction: &Transaction,
) -> ValidationCode {
    let signed = tx::sign_transaction(client, transaction);
    let answer = gateway
        .submit(SubmitRequest {
            transaction: signed.encode_to_vec(),
            wait_for: TxPhase::Committed as i32,
        })
        .await
        .expect("ordered")
        .into_inner();
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
/// Now: only peers' endorsements count (and admins' for `_lifecycle`), so it fails the
/// policy, while the same contract's honest transactions commit; and a policy no peer
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
        let attack = forged(honest, &payload, &[&client]);
        assert_eq!(
            submit(&mut gateway, &client, &attack).await,
            ValidationCode::EndorsementPolicyFailure
        );
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
