//! Writes the seed inputs of `corpus/<target>/`: real encodings made with the ledger's own
//! code (signed transactions and proposals of runnel-testing's network, seals, record
//! files) and small hand-written contract modules. Keys and nonces are random, so the
//! bytes differ each time; run it again only when a format changes:
//!
//! ```text
//! cargo test -p runnel-fuzz-targets --test it seeds -- --ignored
//! ```

use std::path::Path;

use prost::Message;
use runnel_ledger::block::{self, SealChain};
use runnel_ledger::identity::{Role, Signer};
use runnel_ledger::ids::Seq;
use runnel_ledger::lifecycle::{FN_DEFINITION, FN_DEPLOY, LIFECYCLE_NAMESPACE};
use runnel_ledger::orderer::OrderedTx;
use runnel_ledger::proto::{
    ContractEvent, DeployRequest, Endorsement, KvRead, KvWrite, NsRwSet, RangeRead,
    ResponsePayload, SignedProposal, Transaction, Version,
};
use runnel_ledger::records::SyncMode;
use runnel_ledger::records::{MAGIC, MAGIC_V1, RecordFile};
use runnel_ledger::tx;
use runnel_testing::signer;

/// Every host import of ABI v1 (docs/abi.md).
const IMPORTS: &str = r#"
  (import "runnel" "state_get" (func $state_get (param i32 i32) (result i64)))
  (import "runnel" "state_put" (func $state_put (param i32 i32 i32 i32)))
  (import "runnel" "state_delete" (func $state_delete (param i32 i32)))
  (import "runnel" "range_open" (func $range_open (param i32 i32 i32 i32) (result i32)))
  (import "runnel" "range_next" (func $range_next (param i32) (result i64)))
  (import "runnel" "event_emit" (func $event_emit (param i32 i32 i32 i32)))
  (import "runnel" "result_read" (func $result_read (param i32)))
  (import "runnel" "return_value" (func $return_value (param i32 i32)))
  (import "runnel" "abort" (func $abort (param i32 i32)))
"#;

/// An ABI v1 module (memory, marker, bump allocator) with `body`.
fn contract(body: &str) -> Vec<u8> {
    let text = format!(
        r#"(module
  {IMPORTS}
  (memory (export "memory") 2)
  (func (export "runnel_abi_v1"))
  (global $bump (mut i32) (i32.const 65536))
  (func (export "runnel_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $bump))
    (global.set $bump (i32.add (global.get $bump) (local.get $len)))
    (local.get $ptr))
  (data (i32.const 0) "greetinghello")
  {body}
)"#
    );
    wat::parse_str(&text).expect("seed WAT")
}

/// A contract that writes, reads, scans, emits and returns: most host functions once.
fn busy_contract() -> Vec<u8> {
    contract(
        r#"
  (func (export "runnel_fn_put") (param i32 i32)
    (call $state_put (i32.const 0) (i32.const 8) (i32.const 8) (i32.const 5))
    (call $event_emit (i32.const 0) (i32.const 8) (i32.const 8) (i32.const 5))
    (call $return_value (i32.const 8) (i32.const 5)))
  (func (export "runnel_fn_get") (param i32 i32)
    (local $len i64)
    (local.set $len (call $state_get (i32.const 0) (i32.const 8)))
    (if (i64.ge_s (local.get $len) (i64.const 0))
      (then (call $result_read (i32.const 1024))
            (call $return_value (i32.const 1024) (i32.wrap_i64 (local.get $len))))))
  (func (export "runnel_fn_scan") (param i32 i32)
    (drop (call $range_next (call $range_open (i32.const 0) (i32.const 1) (i32.const 0) (i32.const 8)))))
  (func (export "runnel_fn_delete") (param i32 i32)
    (call $state_delete (i32.const 0) (i32.const 8)))
  (func (export "runnel_fn_fail") (param i32 i32)
    (call $abort (i32.const 8) (i32.const 5)))"#,
    )
}

/// A contract whose function spins until its fuel runs out, and one that traps.
fn hostile_contract() -> Vec<u8> {
    contract(
        r#"
  (func (export "runnel_fn_spin") (param i32 i32) (loop (br 0)))
  (func (export "runnel_fn_trap") (param i32 i32) (unreachable))
  (func (export "runnel_fn_oob") (param i32 i32)
    (drop (i32.load (i32.const 0x7ffffff0))))"#,
    )
}

/// A module without the ABI marker: refused at load.
fn unmarked_module() -> Vec<u8> {
    wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "f")))"#)
        .expect("seed WAT")
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir).expect("corpus directory");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed written");
}

/// `proposal` endorsed by Org1's and Org2's peers with `payload`, signed by `creator`.
fn transaction(creator: &Signer, proposal: &SignedProposal, payload: ResponsePayload) -> Vec<u8> {
    let payload = ResponsePayload {
        proposal_hash: tx::sha256(&proposal.proposal).to_vec(),
        ..payload
    }
    .encode_to_vec();
    let message = tx::endorsement_message(&tx::sha256(&proposal.proposal), &tx::sha256(&payload));
    let endorsements = ["Org1", "Org2"]
        .iter()
        .map(|org| {
            let peer = signer(org, Role::Peer);
            Endorsement {
                endorser: peer.cert_der().to_vec(),
                signature: peer.sign(&message).to_vec(),
            }
        })
        .collect();
    let transaction = Transaction {
        proposal: Some(proposal.clone()),
        payload,
        endorsements,
    };
    tx::sign_transaction(creator, &transaction).encode_to_vec()
}

fn kv_put_payload() -> ResponsePayload {
    ResponsePayload {
        proposal_hash: Vec::new(),
        result: b"ok".to_vec(),
        rwsets: vec![
            NsRwSet {
                namespace: LIFECYCLE_NAMESPACE.into(),
                reads: vec![KvRead {
                    key: b"definition/kv".to_vec(),
                    version: Some(Version { seq: 1 }),
                }],
                ..NsRwSet::default()
            },
            NsRwSet {
                namespace: "kv".into(),
                reads: vec![KvRead {
                    key: b"greeting".to_vec(),
                    version: None,
                }],
                range_reads: vec![RangeRead {
                    start: b"a".to_vec(),
                    end: Some(b"z".to_vec()),
                    exhausted: true,
                    reads: Vec::new(),
                    last: None,
                }],
                writes: vec![
                    KvWrite {
                        key: b"greeting".to_vec(),
                        is_delete: false,
                        value: b"hello".to_vec(),
                    },
                    KvWrite {
                        key: b"old".to_vec(),
                        is_delete: true,
                        value: Vec::new(),
                    },
                ],
            },
        ],
        events: vec![ContractEvent {
            contract: "kv".into(),
            name: "put".into(),
            payload: b"greeting".to_vec(),
        }],
    }
}

fn record_files() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("records");
    let mut end = 0;
    {
        let mut file = RecordFile::open(&path).expect("record file").file;
        for (kind, payload) in [(1u8, &b"first record"[..]), (2, b""), (1, &[0xab; 40])] {
            let at = file.append(kind, payload).expect("append");
            end = at.offset + u64::from(at.len);
        }
        file.handle(SyncMode::Data)
            .expect("handle")
            .sync()
            .expect("sync");
    }
    let mut bytes = std::fs::read(&path).expect("record file bytes");
    bytes.truncate(usize::try_from(end).expect("small file"));
    assert!(bytes.starts_with(MAGIC));
    write("record_file", "three-records", &bytes);

    // A torn tail: half a header after the last record.
    let mut torn = bytes.clone();
    torn.extend_from_slice(&[7, 0, 0, 0, 0xde]);
    write("record_file", "torn-tail", &torn);

    // Format 1: no durable mark, records right after the magic.
    let mut v1 = MAGIC_V1.to_vec();
    v1.extend_from_slice(&bytes[16..]);
    write("record_file", "format-1", &v1);
}

/// Response payloads for the read/write-set rules: one that passes, and one breaking
/// each kind of rule.
fn rwsets() {
    let ok = kv_put_payload();
    write("rwset", "kv-put", &ok.encode_to_vec());
    write(
        "rwset",
        "empty",
        &ResponsePayload::default().encode_to_vec(),
    );
    let mut repeated = ok.clone();
    repeated.rwsets.push(repeated.rwsets[1].clone());
    write("rwset", "repeated-namespace", &repeated.encode_to_vec());
    let mut nul = ok.clone();
    nul.rwsets[1].namespace = "k\0v".into();
    write("rwset", "nul-namespace", &nul.encode_to_vec());
    let mut backwards = ok.clone();
    backwards.rwsets[1].range_reads.push(RangeRead {
        start: b"a".to_vec(),
        end: Some(b"m".to_vec()),
        exhausted: false,
        reads: vec![
            KvRead {
                key: b"c".to_vec(),
                version: Some(Version { seq: 2 }),
            },
            KvRead {
                key: b"b".to_vec(),
                version: Some(Version { seq: 3 }),
            },
        ],
        last: Some(b"c".to_vec()),
    });
    write("rwset", "range-backwards", &backwards.encode_to_vec());
    let mut stopped = ok;
    stopped.rwsets[1].range_reads[0] = RangeRead {
        start: b"a".to_vec(),
        end: None,
        exhausted: false,
        reads: vec![KvRead {
            key: b"b".to_vec(),
            version: Some(Version { seq: 2 }),
        }],
        last: Some(b"d".to_vec()),
    };
    write("rwset", "range-stopped-early", &stopped.encode_to_vec());
}

/// Network definitions: the test network's genesis, its next definition revoking a
/// certificate, one whose second org carries the first's CA, and next definitions whose
/// policies the update check refuses (an organisation the network does not have, a peer
/// where admins sign, a threshold no admin set meets) or accepts (explicit admins), and
/// one removing an organisation its lifecycle policy names.
fn network_definitions() {
    let genesis = runnel_ledger::identity::NetworkDefinition::of(runnel_testing::network(), "main");
    for (name, lifecycle, config) in [
        ("policy-unknown-org", "'Org9.admin'", "MAJORITY admin"),
        (
            "policy-peer",
            "MAJORITY admin",
            "OR('Org1.peer', 'Org2.admin')",
        ),
        (
            "policy-unmet",
            "AND('Org1.admin', 'Org1.admin')",
            "MAJORITY admin",
        ),
        (
            "policy-admins",
            "AND('Org1.admin', 'Org2.admin')",
            "OutOf(2, 'Org1.admin', 'Org2.admin', 'Org3.admin')",
        ),
    ] {
        let mut next = genesis.clone();
        next.sequence = 1;
        next.lifecycle_policy = lifecycle.into();
        next.config_policy = config.into();
        write("network_definition", name, &next.to_bytes());
    }
    let mut removing = genesis.clone();
    removing.sequence = 1;
    removing.lifecycle_policy = "AND('Org1.admin', 'Org3.admin')".into();
    removing.orgs.pop();
    write(
        "network_definition",
        "removes-named-org",
        &removing.to_bytes(),
    );
    original_network_definitions();
}

fn original_network_definitions() {
    let genesis = runnel_ledger::identity::NetworkDefinition::of(runnel_testing::network(), "main");
    write("network_definition", "genesis", &genesis.to_bytes());
    let mut next = genesis.clone();
    next.sequence = 1;
    next.orgs[1]
        .revoked
        .push(runnel_ledger::identity::revocation(&[0xab; 32]));
    write("network_definition", "revoking", &next.to_bytes());
    let mut borrowed = genesis;
    borrowed.orgs[1].ca = borrowed.orgs[0].ca.clone();
    write("network_definition", "borrowed-ca", &borrowed.to_bytes());
}

/// Settings files: the template `runnel init` writes, a peer, an orderer with blocks,
/// TLS, and one with a setting no section has.
fn settings() {
    write(
        "runnel_toml",
        "template",
        runnel_node::config::TEMPLATE.as_bytes(),
    );
    write("runnel_toml", "empty", b"");
    write(
        "runnel_toml",
        "peer",
        b"[node]\nrole = \"peer\"\norg = \"Org2\"\n\n[network]\norgs = [\"Org1\", \"Org2\"]\n\n\
          [ordering]\nendpoint = \"http://127.0.0.1:7050\"\n",
    );
    write(
        "runnel_toml",
        "orderer-blocks",
        b"[node]\nrole = \"orderer\"\n\n[ordering]\nmode = \"blocks\"\nseal_max_txs = 10\n\
          seal_max_delay_ms = 2000\n\n[store]\nsync = \"data\"\n",
    );
    write(
        "runnel_toml",
        "tls",
        b"[api]\nlisten = \"0.0.0.0:8443\"\ncors_origins = [\"https://app.example\"]\n\n\
          [api.tls]\nenabled = true\nclient_auth = \"required\"\nclient_ca = \"ca.pem\"\n\n\
          [log]\nformat = \"json\"\nlevel = \"info,runnel_server=debug\"\n",
    );
    write(
        "runnel_toml",
        "unknown-setting",
        b"[validator]\nworkers = 2\nthreads = 4\n",
    );
}

#[test]
#[ignore = "writes the checked-in seeds; run by hand when a format changes"]
fn write_seeds() {
    let client = signer("Org1", Role::Client);
    let admin = signer("Org1", Role::Admin);
    let now = tx::now_ms();

    // Proposals: a contract call, a deploy and a lifecycle query.
    let put = tx::sign_proposal(
        &client,
        &tx::new_proposal(
            "main",
            "kv",
            "put",
            vec![b"greeting".to_vec(), b"hello".to_vec()],
            &client,
        ),
    );
    let request = DeployRequest {
        name: "busy".into(),
        version: "1".into(),
        policy: "AND('Org1.peer', OR('Org2.peer', 'Org3.peer'))".into(),
        code: busy_contract(),
        init_function: "put".into(),
        ..DeployRequest::default()
    };
    let deploy = tx::sign_proposal(
        &admin,
        &tx::new_proposal(
            "main",
            LIFECYCLE_NAMESPACE,
            FN_DEPLOY,
            vec![request.encode_to_vec()],
            &admin,
        ),
    );
    let definition = tx::sign_proposal(
        &client,
        &tx::new_proposal(
            "main",
            LIFECYCLE_NAMESPACE,
            FN_DEFINITION,
            vec![b"kv".to_vec()],
            &client,
        ),
    );
    write("signed_proposal", "kv-put", &put.encode_to_vec());
    write("signed_proposal", "deploy", &deploy.encode_to_vec());
    write("signed_proposal", "definition", &definition.encode_to_vec());

    // Transactions, and as the orderer delivers them.
    let put_tx = transaction(&client, &put, kv_put_payload());
    let deploy_tx = transaction(&admin, &deploy, ResponsePayload::default());
    write("transaction", "kv-put", &put_tx);
    write("transaction", "deploy", &deploy_tx);
    for (seq, (name, bytes)) in [("kv-put", &put_tx), ("deploy", &deploy_tx)]
        .into_iter()
        .enumerate()
    {
        let ordered = OrderedTx {
            seq: Seq(seq as u64 + 1),
            timestamp_ms: now,
            transaction: bytes.clone(),
        };
        write("ordered_tx", name, &ordered.into_bytes());
    }

    // Seals of blocks 1 and 2.
    let orderer = signer("Org1", Role::Orderer);
    let mut chain = SealChain::genesis();
    let first = chain.seal_next(
        &orderer,
        &[block::leaf(now, &put_tx), block::leaf(now, &deploy_tx)],
        now,
    );
    let second = chain.seal_next(&orderer, &[block::leaf(now, b"third")], now + 1);
    write("signed_seal", "block-1", &first.bytes);
    write("signed_seal", "block-2", &second.bytes);

    // Argument lists.
    let lists: [(&str, Vec<Vec<u8>>); 3] = [
        ("empty", Vec::new()),
        ("put", vec![b"greeting".to_vec(), b"hello".to_vec()]),
        ("mixed", vec![Vec::new(), vec![0xff; 40], b"x".to_vec()]),
    ];
    for (name, items) in lists {
        write("byte_list", name, &runnel_abi::encode_byte_list(&items));
    }

    // Policies: every construct of the language.
    let policies = [
        ("and-or", "AND('Org1.member', OR('Org2.peer', 'Org3.peer'))"),
        (
            "out-of",
            "OutOf(2, 'Org1.member', 'Org2.member', 'Org3.member')",
        ),
        ("majority", "MAJORITY admin"),
        ("any", "ANY"),
        (
            "nested",
            "OR(AND('Org1.peer', 'Org1.peer'),\n\tOutOf(1, MAJORITY client, 'Org3.orderer'))",
        ),
    ];
    for (name, text) in policies {
        write("policy", name, text.as_bytes());
    }

    record_files();

    rwsets();
    settings();
    network_definitions();

    write("wasm_module", "busy", &busy_contract());
    write("wasm_module", "hostile", &hostile_contract());
    write("wasm_module", "unmarked", &unmarked_module());
}
