//! The endorser through its public API: real certificates, real contracts compiled to
//! Wasm, sled on a temp directory.

use std::sync::Arc;

use prost::Message;
use runnel_ledger::endorser::{EndorseError, Endorsed, Endorser, EndorserConfig};
use runnel_ledger::identity::{Msp, NetworkIdentities, Role, Signer};
use runnel_ledger::ids::{Seq, ValidationCode};
use runnel_ledger::lifecycle::{self, LIFECYCLE_NAMESPACE};
use runnel_ledger::policy::Endorser as PolicyEndorser;
use runnel_ledger::proto::{
    ContractDefinition, DeployRequest, Proposal, ResponsePayload, SignedProposal,
};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::{TxRecord, WorldState};
use runnel_ledger::tx;
use runnel_runtime::{Runtime, RuntimeConfig};
use time::Duration;

use runnel_testing::{ORGS, kv_wasm, network, signer, token_wasm};

fn runtime() -> Arc<Runtime> {
    let config = RuntimeConfig {
        instances_max: 4,
        ..RuntimeConfig::default()
    };
    Arc::new(Runtime::new(config).unwrap())
}

/// The lifecycle policy of these tests' network: one org's approval, which its commit
/// is, so that a deploy is one transaction (approvals: the pipeline and ledger tests).
const ONE_APPROVAL: &str = "ANY admin";

/// A peer: one org's endorser over a state (shared or its own).
fn endorser(org: &str, role: Role, state: &Arc<WorldState>) -> Endorser {
    let msp: Arc<Msp> = Arc::new(network().msp().unwrap());
    Endorser::new(
        EndorserConfig {
            lifecycle_policy: ONE_APPROVAL.into(),
            ..EndorserConfig::default()
        },
        msp,
        signer(org, role),
        runtime(),
        state.clone(),
    )
    .unwrap()
}

struct Net {
    _dir: tempfile::TempDir,
    state: Arc<WorldState>,
    peer1: Endorser,
    admins: Vec<Endorser>,
}

impl Net {
    fn new() -> Net {
        let dir = tempfile::tempdir().unwrap();
        let state = Arc::new(WorldState::open(dir.path(), SyncMode::Data).unwrap());
        let peer1 = endorser("Org1", Role::Peer, &state);
        let admins = ORGS
            .iter()
            .map(|org| endorser(org, Role::Admin, &state))
            .collect();
        Net {
            _dir: dir,
            state,
            peer1,
            admins,
        }
    }

    /// A net with `kv` deployed (policy: any peer).
    fn with_kv() -> Net {
        let net = Net::new();
        net.deploy("kv", "1.0", "ANY peer", kv_wasm(), false);
        net
    }

    fn deploy(
        &self,
        name: &str,
        version: &str,
        policy: &str,
        code: &[u8],
        upgrade: bool,
    ) -> ContractDefinition {
        let request = DeployRequest {
            name: name.into(),
            version: version.into(),
            policy: policy.into(),
            code: code.to_vec(),
            ..DeployRequest::default()
        };
        let function = if upgrade { "upgrade" } else { "deploy" };
        let endorsed = self.admins[0]
            .endorse(&lifecycle_proposal(function, &request))
            .unwrap();
        commit(&self.state, &endorsed);
        ContractDefinition::decode(payload(&endorsed).result.as_slice()).unwrap()
    }
}

fn proposal(signer: &Signer, contract: &str, function: &str, args: &[&str]) -> SignedProposal {
    let args = args.iter().map(|a| a.as_bytes().to_vec()).collect();
    tx::sign_proposal(
        signer,
        &tx::new_proposal("main", contract, function, args, signer),
    )
}

fn lifecycle_proposal(function: &str, request: &DeployRequest) -> SignedProposal {
    lifecycle_proposal_as("Org1", function, request)
}

fn lifecycle_proposal_as(org: &str, function: &str, request: &DeployRequest) -> SignedProposal {
    let admin = signer(org, Role::Admin);
    let proposal = tx::new_proposal(
        "main",
        LIFECYCLE_NAMESPACE,
        function,
        vec![request.encode_to_vec()],
        &admin,
    );
    tx::sign_proposal(&admin, &proposal)
}

fn client() -> Signer {
    signer("Org1", Role::Client)
}

fn payload(endorsed: &Endorsed) -> ResponsePayload {
    ResponsePayload::decode(endorsed.response.payload.as_slice()).unwrap()
}

/// Stages and commits an endorsed transaction as the validator would for a valid one.
fn stage(state: &WorldState, endorsed: &Endorsed) -> Seq {
    let seq = state.staged_height().next();
    let record = TxRecord {
        tx_id: endorsed.tx_id,
        seq,
        code: ValidationCode::Valid,
        timestamp_ms: 0,
    };
    state
        .stage(
            record,
            &payload(endorsed).rwsets,
            endorsed.tx_id.as_bytes().to_vec(),
        )
        .unwrap();
    seq
}

fn commit(state: &WorldState, endorsed: &Endorsed) -> Seq {
    let seq = stage(state, endorsed);
    state.commit_staged(seq, Vec::new()).unwrap();
    seq
}

#[test]
fn invoke_writes_and_reads_through_the_deployed_contract() {
    let net = Net::with_kv();
    let put = net
        .peer1
        .endorse(&proposal(&client(), "kv", "put", &["greeting", "hello"]))
        .unwrap();
    let body = payload(&put);
    // The definition read (for MVCC against upgrades) comes first, then kv's writes.
    assert_eq!(body.rwsets.len(), 2);
    assert_eq!(body.rwsets[0].namespace, LIFECYCLE_NAMESPACE);
    assert_eq!(body.rwsets[0].reads[0].key, lifecycle::definition_key("kv"));
    assert!(body.rwsets[0].writes.is_empty());
    assert_eq!(body.rwsets[1].namespace, "kv");
    assert_eq!(body.rwsets[1].writes[0].key, b"greeting");
    assert_eq!(body.rwsets[1].writes[0].value, b"hello");
    let seq = commit(&net.state, &put);

    let get = net
        .peer1
        .endorse(&proposal(&client(), "kv", "get", &["greeting"]))
        .unwrap();
    let body = payload(&get);
    assert_eq!(body.result, br#""hello""#);
    assert_eq!(body.rwsets[1].reads[0].version.unwrap().seq, seq.0);

    // Evaluate answers the same without a transaction.
    let result = net
        .peer1
        .evaluate(&proposal(&client(), "kv", "get", &["greeting"]))
        .unwrap();
    assert_eq!(result, br#""hello""#);
}

#[test]
fn the_endorsement_signs_the_proposal_hash_and_the_payload_hash() {
    let net = Net::with_kv();
    let signed = proposal(&client(), "kv", "put", &["k", "v"]);
    let endorsed = net.peer1.endorse(&signed).unwrap();
    let endorsement = endorsed.response.endorsement.clone().unwrap();
    let msp = network().msp().unwrap();
    let peer = msp.verify(&endorsement.endorser, now()).unwrap();
    assert_eq!((peer.org.as_str(), peer.role), ("Org1", Role::Peer));
    let proposal_hash = tx::sha256(&signed.proposal);
    assert_eq!(payload(&endorsed).proposal_hash, proposal_hash);
    let message = tx::endorsement_message(&proposal_hash, &tx::sha256(&endorsed.response.payload));
    peer.verify(&message, &endorsement.signature).unwrap();
    // Any other payload does not verify under that signature.
    let other = tx::endorsement_message(&proposal_hash, &tx::sha256(b"other"));
    assert!(peer.verify(&other, &endorsement.signature).is_err());
    assert_eq!(
        endorsed.tx_id,
        tx::tx_id(&Proposal::decode(signed.proposal.as_slice()).unwrap())
    );
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn two_endorsers_produce_byte_identical_payloads() {
    // Two orgs' peers, each with its own runtime and its own store, fed the same
    // transactions, endorse the same proposals.
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let states: Vec<Arc<WorldState>> = dirs
        .iter()
        .map(|d| Arc::new(WorldState::open(d.path(), SyncMode::Data).unwrap()))
        .collect();
    let admin = endorser("Org1", Role::Admin, &states[0]);
    let peers = [
        endorser("Org1", Role::Peer, &states[0]),
        endorser("Org2", Role::Peer, &states[1]),
    ];
    let request = DeployRequest {
        name: "token".into(),
        version: "1".into(),
        code: token_wasm().to_vec(),
        ..DeployRequest::default()
    };
    let deploy = admin
        .endorse(&lifecycle_proposal("deploy", &request))
        .unwrap();
    for state in &states {
        commit(state, &deploy);
    }
    let admin1 = signer("Org1", Role::Admin);
    let steps: Vec<(Signer, &str, Vec<&str>)> = vec![
        (admin1, "mint", vec!["Org1/client.Org1", "1000"]),
        (client(), "transfer", vec!["Org2/client.Org2", "10"]),
        (client(), "balance", vec!["Org1/client.Org1"]),
    ];
    for (who, function, args) in steps {
        let signed = proposal(&who, "token", function, &args);
        let [a, b] = [&peers[0], &peers[1]].map(|p| p.endorse(&signed));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.response.payload, b.response.payload, "{function}");
        if function == "transfer" {
            assert_eq!(payload(&a).events[0].name, "Transfer");
        }
        if function == "balance" {
            assert_eq!(payload(&a).result, b"990");
        }
        assert_ne!(a.response.endorsement, b.response.endorsement);
        for state in &states {
            commit(state, &a);
        }
    }
}

#[test]
fn a_replayed_proposal_is_a_duplicate_once_staged_or_committed() {
    let net = Net::with_kv();
    let signed = proposal(&client(), "kv", "put", &["k", "v"]);
    let first = net.peer1.endorse(&signed).unwrap();
    // Endorsing twice before ordering is harmless: nothing is in the ledger yet.
    assert_eq!(net.peer1.endorse(&signed).unwrap().tx_id, first.tx_id);
    stage(&net.state, &first);
    let error = net.peer1.endorse(&signed).unwrap_err();
    assert_eq!(error, EndorseError::DuplicateTxId(first.tx_id));
    assert_eq!(error.code(), "DUPLICATE_TXID");
    net.state
        .commit_staged(net.state.staged_height(), Vec::new())
        .unwrap();
    assert_eq!(
        net.peer1.endorse(&signed).unwrap_err().code(),
        "DUPLICATE_TXID"
    );
    // A query may be re-run.
    assert!(net.peer1.evaluate(&signed).is_ok());
}

#[test]
fn endorsers_see_staged_writes_before_they_are_durable() {
    let net = Net::with_kv();
    let put = net
        .peer1
        .endorse(&proposal(&client(), "kv", "put", &["k", "staged"]))
        .unwrap();
    let seq = stage(&net.state, &put);
    assert!(net.state.durable_height() < seq);
    let get = net
        .peer1
        .endorse(&proposal(&client(), "kv", "get", &["k"]))
        .unwrap();
    assert_eq!(payload(&get).result, br#""staged""#);
    assert_eq!(payload(&get).rwsets[1].reads[0].version.unwrap().seq, seq.0);
}

#[test]
fn bad_proposals_get_typed_errors_and_the_endorser_keeps_serving() {
    let net = Net::with_kv();
    let good = proposal(&client(), "kv", "put", &["k", "v"]);
    let code = |signed: &SignedProposal| net.peer1.endorse(signed).unwrap_err().code();

    let garbage = SignedProposal {
        proposal: vec![0xff, 0xff, 0xff],
        signature: good.signature.clone(),
    };
    assert_eq!(code(&garbage), "BAD_PAYLOAD");

    let huge = SignedProposal {
        proposal: vec![0; runnel_ledger::endorser::PROPOSAL_BYTES_MAX + 1],
        signature: Vec::new(),
    };
    assert_eq!(code(&huge), "PROPOSAL_TOO_LARGE");

    let c = client();
    let mut p = tx::new_proposal("main", "kv", "put", vec![b"k".to_vec()], &c);
    p.channel = "other".into();
    assert_eq!(code(&tx::sign_proposal(&c, &p)), "WRONG_CHANNEL");
    let mut p = tx::new_proposal("main", "kv", "put", vec![b"k".to_vec()], &c);
    p.nonce = vec![1, 2, 3];
    assert_eq!(code(&tx::sign_proposal(&c, &p)), "BAD_PAYLOAD");

    // Tampered after signing; signed by someone else's key; a signature of the wrong size.
    // (A byte of the nonce: the proposal still decodes and passes every other check.)
    let mut tampered = good.clone();
    let nonce = runnel_ledger::proto::Proposal::decode(good.proposal.as_slice())
        .unwrap()
        .nonce;
    let at = tampered
        .proposal
        .windows(nonce.len())
        .position(|w| w == nonce.as_slice())
        .unwrap();
    tampered.proposal[at] ^= 1;
    assert_eq!(code(&tampered), "BAD_CREATOR_SIGNATURE");
    let mut forged = good.clone();
    forged.signature = signer("Org2", Role::Client)
        .sign(&tx::proposal_message(&tx::sha256(&good.proposal)))
        .to_vec();
    assert_eq!(code(&forged), "BAD_CREATOR_SIGNATURE");
    let mut short = good.clone();
    short.signature.truncate(10);
    assert_eq!(code(&short), "BAD_CREATOR_SIGNATURE");

    // A creator from another network, an expired one, and roles not allowed.
    let stranger = NetworkIdentities::generate(&["Org1"], Duration::days(1)).unwrap();
    let stranger = stranger.orgs[0].signer(Role::Client).unwrap();
    assert_eq!(
        code(&proposal(&stranger, "kv", "put", &["k", "v"])),
        "BAD_CREATOR"
    );
    let org1 = network().org("Org1").unwrap();
    let expired = org1
        .ca
        .issue(Role::Client, "expired.Org1", Duration::seconds(-60))
        .unwrap();
    let expired = Signer::new(&expired).unwrap();
    assert_eq!(
        code(&proposal(&expired, "kv", "put", &["k", "v"])),
        "EXPIRED_CERTIFICATE"
    );
    let peer = signer("Org1", Role::Peer);
    assert_eq!(
        code(&proposal(&peer, "kv", "put", &["k", "v"])),
        "ACCESS_DENIED"
    );
    let by_client = tx::sign_proposal(
        &c,
        &tx::new_proposal("main", LIFECYCLE_NAMESPACE, "deploy", vec![Vec::new()], &c),
    );
    assert_eq!(code(&by_client), "ACCESS_DENIED");

    // Contract-level failures carry the contract's message.
    let error = net
        .peer1
        .endorse(&proposal(&client(), "kv", "put", &["only-a-key"]))
        .unwrap_err();
    assert_eq!(error.code(), "CONTRACT_ERROR");
    assert!(
        error.to_string().contains("contract `kv` failed"),
        "{error}"
    );
    assert_eq!(
        code(&proposal(&client(), "kv", "nope", &[])),
        "FUNCTION_NOT_FOUND"
    );
    assert_eq!(
        code(&proposal(&client(), "ghost", "get", &["k"])),
        "CONTRACT_NOT_FOUND"
    );

    // Still serving, and nothing was written by any of it.
    assert!(net.peer1.endorse(&good).is_ok());
    assert_eq!(net.state.staged_height(), Seq(1));
}

#[test]
fn a_hostile_contract_fails_its_call_and_nothing_else() {
    let net = Net::new();
    let faulty = runnel_wasm_build::wasm("faulty").expect("faulty builds");
    net.deploy("faulty", "1", "", &faulty, false);
    let error = net
        .peer1
        .endorse(&proposal(&client(), "faulty", "spin", &[]))
        .unwrap_err();
    assert_eq!(error.code(), "FUEL_EXHAUSTED", "{error}");
    let error = net
        .peer1
        .endorse(&proposal(&client(), "faulty", "panic_now", &["no luck"]))
        .unwrap_err();
    assert!(error.to_string().contains("no luck"), "{error}");
    net.deploy("kv", "1", "", kv_wasm(), false);
    assert!(
        net.peer1
            .endorse(&proposal(&client(), "kv", "put", &["k", "v"]))
            .is_ok()
    );
}

#[test]
fn fuel_ends_host_heavy_work_long_before_the_backstop_and_a_backstop_stop_is_never_endorsed() {
    let net = Net::new();
    let faulty = runnel_wasm_build::wasm("faulty").expect("faulty builds");
    net.deploy("faulty", "1", "", &faulty, false);
    // A key in the committed state: every read goes through the store, as on a node.
    let planted = net
        .peer1
        .endorse(&proposal(&client(), "faulty", "plant", &["k"]))
        .unwrap();
    commit(&net.state, &planted);
    let started = std::time::Instant::now();
    let error = net
        .peer1
        .endorse(&proposal(&client(), "faulty", "grind", &["k", "100000000"]))
        .unwrap_err();
    assert_eq!(error.code(), "FUEL_EXHAUSTED", "{error}");
    // The figure, not a threshold.
    eprintln!(
        "a call's fuel spent on store reads: {} ms; the backstop is {} ms",
        started.elapsed().as_millis(),
        runnel_runtime::Limits::default().wall_clock_ms_max
    );

    // A peer whose backstop comes first (as on a host far too slow to run a node) answers
    // an error and signs nothing: it never endorses another outcome than its peers.
    let mut config = RuntimeConfig {
        instances_max: 4,
        ..RuntimeConfig::default()
    };
    config.limits.fuel_per_call = u64::MAX / 2;
    config.limits.wall_clock_ms_max = 20;
    let slow = Endorser::new(
        EndorserConfig {
            lifecycle_policy: ONE_APPROVAL.into(),
            ..EndorserConfig::default()
        },
        Arc::new(network().msp().unwrap()),
        signer("Org1", Role::Peer),
        Arc::new(Runtime::new(config).unwrap()),
        net.state.clone(),
    )
    .unwrap();
    let error = slow
        .endorse(&proposal(&client(), "faulty", "spin", &[]))
        .unwrap_err();
    assert_eq!(error.code(), "WALL_CLOCK_LIMIT", "{error}");
}

#[test]
fn batched_endorsement_matches_one_by_one_and_isolates_a_forgery() {
    let net = Net::with_kv();
    let c = client();
    let mut proposals: Vec<SignedProposal> = (0..40)
        .map(|i| proposal(&c, "kv", "put", &[&format!("k{i}"), "v"]))
        .collect();
    proposals[17].signature[3] ^= 0x40;
    let answers = net.peer1.endorse_batch(&proposals);
    assert_eq!(answers.len(), proposals.len());
    for (i, answer) in answers.iter().enumerate() {
        if i == 17 {
            assert_eq!(answer.as_ref().unwrap_err().code(), "BAD_CREATOR_SIGNATURE");
        } else {
            let one = net.peer1.endorse(&proposals[i]).unwrap();
            assert_eq!(
                answer.as_ref().unwrap().response.payload,
                one.response.payload
            );
        }
    }
}

#[test]
fn deploy_and_upgrade_are_versioned_definitions_governed_by_the_lifecycle_policy() {
    let net = Net::new();
    let v1 = net.deploy(
        "kv",
        "1.0",
        "OR('Org1.peer', 'Org2.peer')",
        kv_wasm(),
        false,
    );
    assert_eq!((v1.sequence, v1.version.as_str()), (1, "1.0"));
    assert_eq!(v1.code_hash, tx::sha256(kv_wasm()));

    // A transaction endorsed under sequence 1 ...
    let before = net
        .peer1
        .endorse(&proposal(&client(), "kv", "put", &["k", "v"]))
        .unwrap();
    let snapshot_v1 = net.state.snapshot();

    // ... then an upgrade (same code, stored once: the upgrade need not resend it).
    let request = DeployRequest {
        name: "kv".into(),
        version: "1.1".into(),
        policy: "AND('Org1.peer', 'Org2.peer')".into(),
        code_hash: v1.code_hash.clone(),
        ..DeployRequest::default()
    };
    let upgrade = net.admins[1]
        .endorse(&lifecycle_proposal("upgrade", &request))
        .unwrap();
    let upgrade_body = payload(&upgrade);
    assert_eq!(upgrade_body.rwsets.len(), 1);
    let written: Vec<&[u8]> = upgrade_body.rwsets[0]
        .writes
        .iter()
        .map(|w| w.key.as_slice())
        .collect();
    assert_eq!(
        written,
        [
            lifecycle::approval_key("kv", 2, "Org1").as_slice(),
            lifecycle::definition_key("kv").as_slice()
        ],
        "the committing org's approval and the definition; the code is already stored"
    );
    commit(&net.state, &upgrade);

    // The earlier transaction read a definition version that is no longer current: the
    // validator's MVCC check refuses it.
    let snapshot_v2 = net.state.snapshot();
    let read = &payload(&before).rwsets[0].reads[0];
    let current = snapshot_v2
        .get(LIFECYCLE_NAMESPACE, &lifecycle::definition_key("kv"))
        .unwrap()
        .unwrap();
    assert_ne!(read.version, Some(current.version));

    // The policy in force depends on where in the stream one looks.
    let orgs: Vec<String> = ORGS.iter().map(|s| s.to_string()).collect();
    let only_org1 = [PolicyEndorser::new("Org1", Role::Peer)];
    let policy_at = |snapshot: &runnel_ledger::store::Snapshot| {
        lifecycle::endorsement_policy(snapshot.view(LIFECYCLE_NAMESPACE).as_ref(), "kv", &orgs)
            .unwrap()
    };
    assert!(policy_at(&snapshot_v1).is_satisfied_by(&only_org1));
    assert!(!policy_at(&snapshot_v2).is_satisfied_by(&only_org1));

    // An approval is endorsed by a peer of the approving org; admins endorse nothing.
    let approval = lifecycle::transaction_policy("approve", "Org3", &[], &orgs).unwrap();
    assert!(approval.is_satisfied_by(&[PolicyEndorser::new("Org3", Role::Peer)]));
    assert!(!approval.is_satisfied_by(&[PolicyEndorser::new("Org1", Role::Peer)]));
    assert!(!approval.is_satisfied_by(&[PolicyEndorser::new("Org3", Role::Admin)]));
    assert_eq!(lifecycle::endorser_roles(LIFECYCLE_NAMESPACE), [Role::Peer]);

    // The definition's history is the list of every definition it had, newest first.
    let history = net
        .state
        .store()
        .history(
            LIFECYCLE_NAMESPACE,
            &lifecycle::definition_key("kv"),
            None,
            10,
        )
        .unwrap();
    let sequences: Vec<u64> = history
        .iter()
        .map(|h| {
            ContractDefinition::decode(h.value.as_deref().unwrap())
                .unwrap()
                .sequence
        })
        .collect();
    assert_eq!(sequences, [2, 1]);

    // Evaluating `_lifecycle.definition` answers the one in force.
    let admin = signer("Org1", Role::Admin);
    let query = tx::sign_proposal(
        &admin,
        &tx::new_proposal(
            "main",
            LIFECYCLE_NAMESPACE,
            "definition",
            vec![b"kv".to_vec()],
            &admin,
        ),
    );
    let definition =
        ContractDefinition::decode(net.peer1.evaluate(&query).unwrap().as_slice()).unwrap();
    assert_eq!(
        (definition.sequence, definition.version.as_str()),
        (2, "1.1")
    );
    assert_eq!(definition.policy, "AND('Org1.peer', 'Org2.peer')");
}

#[test]
fn bad_lifecycle_requests_are_refused_with_their_reason() {
    let net = Net::with_kv();
    let code = |function: &str, request: DeployRequest| {
        net.admins[0]
            .endorse(&lifecycle_proposal(function, &request))
            .unwrap_err()
    };
    let kv = |name: &str| DeployRequest {
        name: name.into(),
        version: "2".into(),
        code: kv_wasm().to_vec(),
        ..DeployRequest::default()
    };
    assert_eq!(code("deploy", kv("kv")).code(), "ALREADY_DEPLOYED");
    assert_eq!(code("upgrade", kv("missing")).code(), "CONTRACT_NOT_FOUND");
    assert_eq!(code("deploy", kv("Bad Name")).code(), "BAD_CONTRACT_NAME");
    assert_eq!(code("deploy", kv("_lifecycle")).code(), "BAD_CONTRACT_NAME");
    let mut no_version = kv("other");
    no_version.version.clear();
    assert_eq!(code("deploy", no_version).code(), "BAD_CONTRACT_VERSION");
    let mut bad_policy = kv("other");
    bad_policy.policy = "AND('Org1.peer',".into();
    let error = code("deploy", bad_policy);
    assert_eq!(error.code(), "BAD_POLICY");
    assert!(error.to_string().contains("column"), "{error}");
    let mut unknown_org = kv("other");
    unknown_org.policy = "'Org9.peer'".into();
    assert_eq!(code("deploy", unknown_org).code(), "BAD_POLICY");
    let mut mismatch = kv("other");
    mismatch.code_hash = vec![7; 32];
    assert_eq!(code("deploy", mismatch).code(), "CODE_HASH_MISMATCH");
    let mut by_hash = kv("other");
    by_hash.code.clear();
    by_hash.code_hash = vec![9; 32];
    assert_eq!(code("deploy", by_hash).code(), "CODE_NOT_STORED");
    let mut garbage = kv("other");
    garbage.code = b"\0asm but not really".to_vec();
    assert_eq!(code("deploy", garbage).code(), "INVALID_CODE");
    let mut bad_init = kv("other");
    bad_init.init_function = "put".into();
    bad_init.init_args = vec![b"only-a-key".to_vec()];
    let error = code("deploy", bad_init);
    assert_eq!(error.code(), "CONTRACT_ERROR");
    assert!(
        error.to_string().contains("init call `put` failed"),
        "{error}"
    );
    let admin = signer("Org1", Role::Admin);
    let not_a_request = tx::sign_proposal(
        &admin,
        &tx::new_proposal(
            "main",
            LIFECYCLE_NAMESPACE,
            "deploy",
            vec![vec![0xff; 9]],
            &admin,
        ),
    );
    assert_eq!(
        net.admins[0].endorse(&not_a_request).unwrap_err().code(),
        "BAD_REQUEST"
    );
    let unknown = tx::sign_proposal(
        &admin,
        &tx::new_proposal(
            "main",
            LIFECYCLE_NAMESPACE,
            "destroy",
            vec![Vec::new()],
            &admin,
        ),
    );
    assert_eq!(
        net.admins[0].endorse(&unknown).unwrap_err().code(),
        "FUNCTION_NOT_FOUND"
    );
    // Nothing of it reached the state: only kv's deploy is there.
    assert_eq!(net.state.staged_height(), Seq(1));
}

#[test]
fn an_init_call_runs_in_the_deploy_transaction() {
    let net = Net::new();
    let request = DeployRequest {
        name: "kv".into(),
        version: "1".into(),
        code: kv_wasm().to_vec(),
        init_function: "put".into(),
        init_args: vec![b"created".to_vec(), b"at deploy".to_vec()],
        ..DeployRequest::default()
    };
    let deploy = net.admins[2]
        .endorse(&lifecycle_proposal("deploy", &request))
        .unwrap();
    let body = payload(&deploy);
    let namespaces: Vec<&str> = body.rwsets.iter().map(|r| r.namespace.as_str()).collect();
    assert_eq!(namespaces, [LIFECYCLE_NAMESPACE, "kv"]);
    let seq = commit(&net.state, &deploy);
    let got = net.state.snapshot().get("kv", b"created").unwrap().unwrap();
    assert_eq!(
        (got.value.as_slice(), got.version.seq),
        (&b"at deploy"[..], seq.0)
    );
}
