//! Execute → order → validate end to end, in one process, on real sled directories:
//! endorsers, the solo orderer and the validator pipeline wired as a peer runs them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use prost::Message;
use runnel_ledger::endorser::{Endorsed, Endorser, EndorserConfig};
use runnel_ledger::identity::{Msp, NetworkDefinition, OrdererNode, Role, Signer};
use runnel_ledger::ids::{BlockNumber, Seq, ValidationCode};
use runnel_ledger::lifecycle::{self, LIFECYCLE_NAMESPACE};
use runnel_ledger::orderer::{
    Delivered, Delivery, OrderError, Ordered, OrderedTx, Orderer, OrdererConfig, SoloOrderer,
};
use runnel_ledger::proto::{
    ContractDefinition, DeployRequest, Endorsement, ResponsePayload, SignedProposal, Transaction,
};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::WorldState;
use runnel_ledger::trace::{Stage, TraceBook};
use runnel_ledger::tx;
use runnel_ledger::validator::{Hub, Phase, Validator, ValidatorConfig, ValidatorError};
use runnel_runtime::{Runtime, RuntimeConfig};

use runnel_testing::orderer::PATIENCE;
use runnel_testing::{ORGS, kv_wasm, network, signer};

/// One peer with every role in process: world state, orderer, validator, endorsers.
struct Peer {
    world: Arc<WorldState>,
    orderer: Arc<SoloOrderer>,
    validator: Validator,
    hub: Arc<Hub>,
    traces: Arc<TraceBook>,
    /// Admin endorsers of every org (deploys), then peer endorsers of every org.
    peers: Vec<Endorser>,
}

/// How the orderer cuts blocks: at most this many transactions, or after this delay.
type Sealing = (usize, StdDuration);

/// The lifecycle policy of most tests here: one org's approval, which its commit is, so
/// that a deploy is one transaction and the seqs after it stay as the tests count them.
/// Approvals have tests of their own.
const ONE_APPROVAL: &str = "ANY admin";

/// The test network's definition, as `runnel init` would write it.
fn genesis(lifecycle_policy: &str) -> NetworkDefinition {
    let mut genesis = NetworkDefinition::of(network(), "main");
    genesis.lifecycle_policy = lifecycle_policy.to_string();
    // The solo orderer signs as Org1's orderer: the only one seals may come from.
    genesis.orderers = vec![orderer_node("Org1")];
    genesis
}

/// `orderer0.<org>`, the orderer [`network`] issues each organisation, as a definition
/// names it.
fn orderer_node(org: &str) -> OrdererNode {
    OrdererNode {
        name: format!("orderer0.{org}"),
        org: org.into(),
        endpoint: "https://127.0.0.1:7050".into(),
        raft_id: 0,
        key: String::new(),
    }
}

/// Three transactions a block, or 20 ms.
const SEALING: Sealing = (3, StdDuration::from_millis(20));

impl Peer {
    fn open(dir: &Path) -> Peer {
        Peer::open_with(dir, runnel_ledger::tx::PROPOSAL_WINDOW)
    }

    /// A peer whose endorsers and orderer admit proposals within `admit_window` of their
    /// clocks, while its validator keeps the network's default window.
    fn open_with(dir: &Path, admit_window: StdDuration) -> Peer {
        Peer::start(dir, admit_window, SEALING, |orderer| orderer)
    }

    /// A peer whose orderer seals as `sealing` says, and whose validator reads the stream
    /// through `stream` (given the orderer, it answers what the validator delivers from).
    fn start(
        dir: &Path,
        admit_window: StdDuration,
        sealing: Sealing,
        stream: impl FnOnce(Arc<SoloOrderer>) -> Arc<dyn Orderer>,
    ) -> Peer {
        Peer::start_with(dir, admit_window, sealing, stream, ONE_APPROVAL)
    }

    /// [`Peer::start`] in a network whose contract definitions need the approvals
    /// `lifecycle_policy` names.
    fn start_with(
        dir: &Path,
        admit_window: StdDuration,
        sealing: Sealing,
        stream: impl FnOnce(Arc<SoloOrderer>) -> Arc<dyn Orderer>,
        lifecycle_policy: &str,
    ) -> Peer {
        Peer::start_from(
            dir,
            admit_window,
            sealing,
            stream,
            genesis(lifecycle_policy),
        )
    }

    /// [`Peer::start`] of a network whose genesis definition is `genesis`.
    fn start_from(
        dir: &Path,
        admit_window: StdDuration,
        sealing: Sealing,
        stream: impl FnOnce(Arc<SoloOrderer>) -> Arc<dyn Orderer>,
        genesis: NetworkDefinition,
    ) -> Peer {
        let lifecycle_policy = genesis.lifecycle_policy.clone();
        // An endorser only warns early of missing approvals: given a policy that does not
        // parse, a node gives it the default (`LedgerBuilder::connect`).
        let orgs: Vec<String> = ORGS.iter().map(|o| o.to_string()).collect();
        let endorser_policy = match runnel_ledger::policy::Policy::parse(&lifecycle_policy, &orgs) {
            Ok(_) => lifecycle_policy.clone(),
            Err(_) => lifecycle::DEFAULT_LIFECYCLE_POLICY.to_string(),
        };
        let msp: Arc<Msp> = Arc::new(network().msp().unwrap());
        let world = Arc::new(WorldState::open(&dir.join("state"), SyncMode::Data).unwrap());
        let orderer = Arc::new(
            SoloOrderer::open(
                &dir.join("orderer"),
                OrdererConfig {
                    seal_max_txs: sealing.0,
                    seal_max_delay: sealing.1,
                    proposal_window: admit_window,
                    // The orderer refuses every replay; remembering none lets these tests
                    // order replays, to see what the validator makes of them.
                    replay_ids_max: 0,
                    ..OrdererConfig::default()
                },
                msp.clone(),
                signer("Org1", Role::Orderer),
            )
            .unwrap(),
        );
        let hub = Arc::new(Hub::default());
        let traces = Arc::new(TraceBook::default());
        let validator = Validator::start(
            // Two stage-1 workers, so that their results are put back in seq order.
            ValidatorConfig {
                workers: 2,
                lifecycle_policy: lifecycle_policy.clone(),
                genesis: Some(genesis),
                ..ValidatorConfig::default()
            },
            msp.clone(),
            world.clone(),
            &*stream(orderer.clone()),
            hub.clone(),
            traces.clone(),
        )
        .unwrap();
        let runtime = Arc::new(
            Runtime::new(RuntimeConfig {
                instances_max: 4,
                ..RuntimeConfig::default()
            })
            .unwrap(),
        );
        let endorser = |org: &str, role: Role| {
            Endorser::new(
                EndorserConfig {
                    proposal_window: admit_window,
                    lifecycle_policy: endorser_policy.clone(),
                    ..EndorserConfig::default()
                },
                msp.clone(),
                signer(org, role),
                runtime.clone(),
                world.clone(),
            )
            .unwrap()
        };
        Peer {
            peers: ORGS.iter().map(|org| endorser(org, Role::Peer)).collect(),
            world,
            orderer,
            validator,
            hub,
            traces,
        }
    }

    fn close(self) {
        self.validator.close();
        self.orderer.close();
    }
}

/// The transaction a client assembles from endorsements of one proposal.
fn assemble(creator: &Signer, proposal: &SignedProposal, endorsed: &[Endorsed]) -> Vec<u8> {
    let payload = endorsed[0].response.payload.clone();
    assert!(
        endorsed.iter().all(|e| e.response.payload == payload),
        "endorsers agree"
    );
    let transaction = Transaction {
        proposal: Some(proposal.clone()),
        payload,
        endorsements: endorsed
            .iter()
            .map(|e| e.response.endorsement.clone().unwrap())
            .collect(),
    };
    tx::sign_transaction(creator, &transaction).encode_to_vec()
}

/// Submits `bytes` and waits for its validated, then committed, status.
fn submit(peer: &Peer, tx_id: runnel_ledger::ids::TxId, bytes: Vec<u8>) -> (Seq, ValidationCode) {
    let mut watch = peer.hub.watch(tx_id);
    let ordered = peer.orderer.submit(bytes).unwrap();
    let validated = watch.next_blocking().unwrap();
    assert_eq!(validated.phase, Phase::Validated);
    assert_eq!(validated.seq, ordered.seq);
    let committed = watch.next_blocking().unwrap();
    assert_eq!(committed.phase, Phase::Committed);
    assert_eq!(
        committed.code, validated.code,
        "the code is final once validated"
    );
    assert!(peer.world.durable_height() >= ordered.seq);
    (committed.seq, committed.code)
}

fn proposal(
    creator: &Signer,
    contract: &str,
    function: &str,
    args: Vec<Vec<u8>>,
) -> SignedProposal {
    tx::sign_proposal(
        creator,
        &tx::new_proposal("main", contract, function, args, creator),
    )
}

/// Deploys (or upgrades) kv under `policy`, committed by Org1's admin (its org's
/// approval, which is all [`ONE_APPROVAL`] needs) and endorsed by every org's peer.
fn deploy(peer: &Peer, policy: &str, upgrade: bool) -> ValidationCode {
    let function = if upgrade { "upgrade" } else { "deploy" };
    lifecycle_call(
        peer,
        "Org1",
        function,
        &kv_request(policy, upgrade),
        &peer.peers,
    )
}

/// The request that defines kv under `policy`, version 1 (2 for an upgrade).
fn kv_request(policy: &str, upgrade: bool) -> DeployRequest {
    DeployRequest {
        name: "kv".into(),
        version: if upgrade { "2" } else { "1" }.into(),
        policy: policy.into(),
        code: kv_wasm().to_vec(),
        ..DeployRequest::default()
    }
}

/// Submits `_lifecycle.function(request)` signed by `org`'s admin and endorsed by
/// `endorsers`; its code.
fn lifecycle_call(
    peer: &Peer,
    org: &str,
    function: &str,
    request: &DeployRequest,
    endorsers: &[Endorser],
) -> ValidationCode {
    let admin = signer(org, Role::Admin);
    let proposal = proposal(
        &admin,
        LIFECYCLE_NAMESPACE,
        function,
        vec![request.encode_to_vec()],
    );
    let endorsed: Vec<Endorsed> = endorsers
        .iter()
        .map(|e| e.endorse(&proposal).unwrap())
        .collect();
    submit(
        peer,
        endorsed[0].tx_id,
        assemble(&admin, &proposal, &endorsed),
    )
    .1
}

/// The definition a commit of `request` at `sequence` puts in force.
fn committed_definition(request: &DeployRequest, sequence: u64) -> ContractDefinition {
    let policy = runnel_ledger::policy::Policy::parse(
        &request.policy,
        &ORGS.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
    )
    .unwrap();
    ContractDefinition {
        name: request.name.clone(),
        version: request.version.clone(),
        sequence,
        code_hash: tx::sha256(&request.code).to_vec(),
        policy: policy.to_string(),
        init_hash: Vec::new(),
    }
}

/// Orders a commit of `request` (sequence 1) whose payload records its creator's
/// approval and the definition, as an honest endorser would once the approvals were
/// there, signed by every org's peer key directly: what peers colluding could send.
fn submit_forged_commit(
    peer: &Peer,
    admin: &Signer,
    deploy: &SignedProposal,
    request: &DeployRequest,
) -> (Seq, ValidationCode) {
    let definition = committed_definition(request, 1);
    let proposal_hash = tx::sha256(&deploy.proposal);
    let code_hash = hex::encode(tx::sha256(&request.code));
    let write = |key: Vec<u8>, value: Vec<u8>| runnel_ledger::proto::KvWrite {
        key,
        value,
        is_delete: false,
    };
    let payload = ResponsePayload {
        proposal_hash: proposal_hash.to_vec(),
        result: definition.encode_to_vec(),
        rwsets: vec![runnel_ledger::proto::NsRwSet {
            namespace: LIFECYCLE_NAMESPACE.into(),
            reads: vec![runnel_ledger::proto::KvRead {
                key: lifecycle::definition_key("kv"),
                version: None,
            }],
            range_reads: Vec::new(),
            writes: vec![
                write(
                    lifecycle::approval_key("kv", 1, "Org1"),
                    lifecycle::definition_hash(&definition).to_vec(),
                ),
                write(
                    format!("code/{code_hash}").into_bytes(),
                    request.code.clone(),
                ),
                write(lifecycle::definition_key("kv"), definition.encode_to_vec()),
            ],
        }],
        events: Vec::new(),
    }
    .encode_to_vec();
    let message = tx::endorsement_message(&proposal_hash, &tx::sha256(&payload));
    let endorsements = ORGS
        .iter()
        .map(|org| {
            let peer_signer = signer(org, Role::Peer);
            Endorsement {
                endorser: peer_signer.cert_der().to_vec(),
                signature: peer_signer.sign(&message).to_vec(),
            }
        })
        .collect();
    let transaction = Transaction {
        proposal: Some(deploy.clone()),
        payload,
        endorsements,
    };
    let tx_id =
        tx::tx_id(&runnel_ledger::proto::Proposal::decode(deploy.proposal.as_slice()).unwrap());
    submit(
        peer,
        tx_id,
        tx::sign_transaction(admin, &transaction).encode_to_vec(),
    )
}

fn put(key: &str, value: &str) -> Vec<Vec<u8>> {
    vec![key.as_bytes().to_vec(), value.as_bytes().to_vec()]
}

#[test]
fn an_endorsed_transaction_is_ordered_validated_committed_traced_and_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    let mut blocks = peer.hub.blocks();
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);

    let client = signer("Org2", Role::Client);
    let proposal = proposal(&client, "kv", "put", put("colour", "blue"));
    let endorsed = peer.peers[1].endorse(&proposal).unwrap();
    let tx_id = endorsed.tx_id;
    let mut events = peer.hub.events();
    let (seq, code) = submit(&peer, tx_id, assemble(&client, &proposal, &[endorsed]));
    assert_eq!((seq, code), (Seq(2), ValidationCode::Valid));
    let stored = peer.world.store().get("kv", b"colour").unwrap().unwrap();
    assert_eq!(stored.value, b"blue");
    assert_eq!(stored.version.seq, 2);
    let record = peer.world.store().tx(&tx_id).unwrap().unwrap();
    assert_eq!((record.seq, record.code), (Seq(2), ValidationCode::Valid));

    // Every peer-side stage was stamped, in flow order.
    let trace = peer.traces.get(&tx_id).unwrap();
    let stages: Vec<Stage> = trace.stages().iter().map(|(s, _)| *s).collect();
    assert_eq!(
        stages,
        [
            Stage::Delivered,
            Stage::Verified,
            Stage::Validated,
            Stage::Committed,
            Stage::Notified
        ]
    );
    let stamps: Vec<u64> = trace.stages().iter().map(|(_, at)| *at).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]));

    // kv's put emits an event, delivered after commit.
    if let Ok(event) = events.try_recv() {
        assert_eq!((event.tx_id, event.contract.as_str()), (tx_id, "kv"));
    }

    // The 20 ms seal delay cuts block 1 from seq 1 (over seq 2 too, unless the second
    // transaction came later than the delay); the block that holds seq 2 is sealed, its
    // seal verified and stored.
    let block = blocks.blocking_recv().unwrap();
    assert_eq!((block.number, block.first), (BlockNumber(1), Seq(1)));
    let holding = if block.last >= Seq(2) {
        block
    } else {
        blocks.blocking_recv().unwrap()
    };
    assert!(
        holding.first <= Seq(2) && holding.last >= Seq(2),
        "{holding:?}"
    );
    assert_eq!(
        peer.world.store().block_of(Seq(2)).unwrap(),
        Some(holding.number)
    );
    assert!(peer.world.store().transaction(Seq(2)).unwrap().is_some());
    peer.close();
}

#[test]
fn one_peer_key_counts_once_however_its_certificate_is_encoded() {
    // Org1's one peer endorses, and the same endorsement goes again with the peer's
    // certificate re-encoded (NULL parameters in its outer signature algorithm). Keyed by
    // the certificate's hash, that made two endorsers of one key and met a policy that
    // needs two of Org1's peers.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    let policy = "OutOf(2, 'Org1.peer', 'Org1.peer')";
    assert_eq!(deploy(&peer, policy, false), ValidationCode::Valid);
    let client = signer("Org1", Role::Client);
    let proposal = proposal(&client, "kv", "put", put("colour", "red"));
    let endorsed = peer.peers[0].endorse(&proposal).unwrap();
    let mut twice = endorsed.clone();
    let endorsement = twice.response.endorsement.as_mut().unwrap();
    endorsement.endorser = runnel_testing::certs::with_null_parameters(&endorsement.endorser);
    let tx_id = endorsed.tx_id;
    let bytes = assemble(&client, &proposal, &[endorsed, twice]);
    assert_eq!(
        submit(&peer, tx_id, bytes).1,
        ValidationCode::EndorsementPolicyFailure
    );
    assert!(peer.world.store().get("kv", b"colour").unwrap().is_none());
    peer.close();
}

#[test]
fn invalid_transactions_are_recorded_with_fabrics_codes_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    assert_eq!(
        deploy(&peer, "AND('Org1.peer', 'Org2.peer')", false),
        ValidationCode::Valid
    );
    let client = signer("Org1", Role::Client);

    // One endorsement where the policy wants two.
    let p = proposal(&client, "kv", "put", put("a", "1"));
    let one = peer.peers[0].endorse(&p).unwrap();
    let (_, code) = submit(&peer, one.tx_id, assemble(&client, &p, &[one]));
    assert_eq!(code, ValidationCode::EndorsementPolicyFailure);
    assert_eq!(peer.world.store().get("kv", b"a").unwrap(), None);

    // Both: valid. The same bytes again, after the orderer forgot the id: a duplicate.
    let p = proposal(&client, "kv", "put", put("a", "2"));
    let both: Vec<Endorsed> = peer.peers[..2]
        .iter()
        .map(|e| e.endorse(&p).unwrap())
        .collect();
    let tx_id = both[0].tx_id;
    let bytes = assemble(&client, &p, &both);
    assert_eq!(submit(&peer, tx_id, bytes.clone()).1, ValidationCode::Valid);
    let other = proposal(&client, "kv", "put", put("b", "1"));
    let endorsed: Vec<Endorsed> = peer.peers[..2]
        .iter()
        .map(|e| e.endorse(&other).unwrap())
        .collect();
    submit(
        &peer,
        endorsed[0].tx_id,
        assemble(&client, &other, &endorsed),
    );
    assert_eq!(submit(&peer, tx_id, bytes).1, ValidationCode::DuplicateTxid);
    assert_eq!(
        peer.world.store().get("kv", b"a").unwrap().unwrap().value,
        b"2"
    );

    // An endorsement whose signature is not over this payload.
    let p = proposal(&client, "kv", "put", put("b", "1"));
    let mut both: Vec<Endorsed> = peer.peers[..2]
        .iter()
        .map(|e| e.endorse(&p).unwrap())
        .collect();
    let other = peer.peers[1]
        .endorse(&proposal(&client, "kv", "put", put("b", "2")))
        .unwrap();
    both[1].response.endorsement = other.response.endorsement;
    let (_, code) = submit(&peer, both[0].tx_id, assemble(&client, &p, &both));
    assert_eq!(code, ValidationCode::BadEndorserSignature);

    // A payload endorsed by two real peers that writes another contract's namespace.
    let p = proposal(&client, "kv", "put", put("c", "1"));
    let endorsed = peer.peers[0].endorse(&p).unwrap();
    let mut payload = ResponsePayload::decode(endorsed.response.payload.as_slice()).unwrap();
    for set in &mut payload.rwsets {
        if set.namespace == LIFECYCLE_NAMESPACE {
            set.writes.push(runnel_ledger::proto::KvWrite {
                key: b"contracts/kv".to_vec(),
                is_delete: true,
                value: Vec::new(),
            });
        }
    }
    let payload = payload.encode_to_vec();
    let proposal_hash = tx::sha256(&p.proposal);
    let endorsements = ["Org1", "Org2"]
        .iter()
        .map(|org| {
            let endorser = signer(org, Role::Peer);
            Endorsement {
                endorser: endorser.cert_der().to_vec(),
                signature: endorser
                    .sign(&tx::endorsement_message(
                        &proposal_hash,
                        &tx::sha256(&payload),
                    ))
                    .to_vec(),
            }
        })
        .collect();
    let transaction = Transaction {
        proposal: Some(p.clone()),
        payload,
        endorsements,
    };
    let bytes = tx::sign_transaction(&client, &transaction).encode_to_vec();
    let (_, code) = submit(&peer, endorsed.tx_id, bytes);
    assert_eq!(code, ValidationCode::IllegalWriteset);
    assert!(
        peer.world
            .store()
            .get(LIFECYCLE_NAMESPACE, b"contracts/kv")
            .unwrap()
            .is_some()
    );

    // Garbage the orderer cannot tell from a transaction is never ordered; the stream
    // goes on.
    assert!(peer.orderer.submit(b"junk".to_vec()).is_err());
    let p = proposal(&client, "kv", "put", put("d", "1"));
    let both: Vec<Endorsed> = peer.peers[..2]
        .iter()
        .map(|e| e.endorse(&p).unwrap())
        .collect();
    assert_eq!(
        submit(&peer, both[0].tx_id, assemble(&client, &p, &both)).1,
        ValidationCode::Valid
    );
    peer.close();
}

#[test]
fn a_definition_commits_only_with_the_approvals_the_lifecycle_policy_names() {
    // Three orgs, a majority (two) must approve. The validator checks the approvals at
    // the commit's place in the stream, whatever its endorsers say: a commit endorsed
    // by every peer but approved by its own org alone is invalid, and so is an approval
    // written for another org.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::start_with(
        dir.path(),
        runnel_ledger::tx::PROPOSAL_WINDOW,
        SEALING,
        |orderer| orderer,
        "MAJORITY admin",
    );
    let request = kv_request("ANY peer", false);
    let admin = signer("Org1", Role::Admin);
    let deploy = proposal(
        &admin,
        LIFECYCLE_NAMESPACE,
        "deploy",
        vec![request.encode_to_vec()],
    );
    // Honest endorsers refuse it, naming the missing approvals.
    let error = peer.peers[0].endorse(&deploy).unwrap_err();
    assert_eq!(error.code(), "NOT_APPROVED", "{error}");
    assert!(error.to_string().contains("Org2"), "{error}");
    // Every peer colluding signs the payload an honest commit would have, had Org2
    // approved: the validator finds no approval of Org2 on the ledger.
    assert_eq!(
        submit_forged_commit(&peer, &admin, &deploy, &request),
        (Seq(1), ValidationCode::EndorsementPolicyFailure)
    );
    // An approval endorsed by another org's peer does not count (an approval's policy is
    // the approving org's peer).
    let approve = |org: &str, endorser: &Endorser| {
        lifecycle_call(
            &peer,
            org,
            "approve",
            &request,
            std::slice::from_ref(endorser),
        )
    };
    assert_eq!(
        approve("Org2", &peer.peers[0]),
        ValidationCode::EndorsementPolicyFailure
    );
    assert_eq!(approve("Org2", &peer.peers[1]), ValidationCode::Valid);
    let approvals = peer
        .world
        .snapshot()
        .get(
            LIFECYCLE_NAMESPACE,
            &lifecycle::approval_key("kv", 1, "Org2"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(approvals.value.len(), 32);
    // Now Org1's commit (its own approval) makes a majority; the same forged payload,
    // ordered now, would be valid too: the approvals are what counts.
    assert!(
        lifecycle::definition_hash(&committed_definition(&request, 1))
            == approvals.value.as_slice()
    );
    assert_eq!(
        lifecycle_call(&peer, "Org1", "deploy", &request, &peer.peers),
        ValidationCode::Valid
    );
    // An upgrade is a new sequence: Org2's approval of sequence 1 does not carry over.
    let upgrade = kv_request("ANY peer", true);
    let admin = signer("Org1", Role::Admin);
    let proposal = proposal(
        &admin,
        LIFECYCLE_NAMESPACE,
        "upgrade",
        vec![upgrade.encode_to_vec()],
    );
    assert_eq!(
        peer.peers[0].endorse(&proposal).unwrap_err().code(),
        "NOT_APPROVED"
    );
    peer.close();
}

#[test]
fn a_revocation_applies_from_its_place_in_the_stream_on() {
    // A configuration update revoking Org2's client mallory, signed by two of the three
    // orgs' admins, ordered in one batch with a transaction of mallory endorsed before
    // it: stage 1 may check both under the old trust; the transaction after the update
    // is refused all the same, and the one before it stays valid.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    let issued = network().orgs[1]
        .ca
        .issue(Role::Client, "mallory", time::Duration::days(1))
        .unwrap();
    let mallory = Signer::new(&issued).unwrap();
    let endorsed_put = |key: &str| {
        let p = proposal(&mallory, "kv", "put", put(key, "m"));
        let e = peer.peers[1].endorse(&p).unwrap();
        (e.tx_id, assemble(&mallory, &p, &[e]))
    };
    let (before, bytes) = endorsed_put("before");
    assert_eq!(submit(&peer, before, bytes).1, ValidationCode::Valid);

    let current = genesis(ONE_APPROVAL);
    let mut next = current.clone();
    next.sequence = 1;
    next.orgs[1]
        .revoked
        .push(runnel_ledger::identity::revocation(
            &Signer::new(&issued).unwrap().public_key(),
        ));
    let (update_id, update) = config_update(&next);
    let (after, late) = endorsed_put("after");
    let mut watch_update = peer.hub.watch(update_id);
    let mut watch_after = peer.hub.watch(after);
    let ordered = peer.orderer.submit_batch(vec![update, late]);
    assert_eq!(ordered.len(), 2);
    let update_status = watch_update.next_blocking().unwrap();
    assert_eq!(update_status.code, ValidationCode::Valid);
    let after_status = watch_after.next_blocking().unwrap();
    assert_eq!(after_status.code, ValidationCode::RevokedCertificate);
    assert_eq!(after_status.seq, update_status.seq.next());
    // The key mallory wrote before stays; the one after was never written.
    let store = peer.world.snapshot();
    assert!(store.get("kv", b"before").unwrap().is_some());
    assert!(store.get("kv", b"after").unwrap().is_none());
    // Endorsers refuse mallory from then on, with the same code.
    let p = proposal(&mallory, "kv", "put", put("later", "m"));
    assert_eq!(
        peer.peers[1].endorse(&p).unwrap_err().code(),
        "REVOKED_CERTIFICATE"
    );
    peer.close();
}

/// Org `org`'s approval of `request`, endorsed by its own peer; its code.
fn approve(peer: &Peer, org: &str, request: &DeployRequest) -> ValidationCode {
    let at = ORGS.iter().position(|o| *o == org).unwrap();
    lifecycle_call(
        peer,
        org,
        "approve",
        request,
        std::slice::from_ref(&peer.peers[at]),
    )
}

#[test]
fn a_lifecycle_policy_in_force_that_cannot_be_evaluated_never_stops_the_validator() {
    // A definition in force whose lifecycle policy names an organisation the network does
    // not have (written before updates were checked): approvals need no lifecycle policy
    // and commit; a commit it governs is UNUSABLE_POLICY; the validator goes on.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::start_with(
        dir.path(),
        runnel_ledger::tx::PROPOSAL_WINDOW,
        SEALING,
        |orderer| orderer,
        "'Org9.admin'",
    );
    let request = kv_request("ANY peer", false);
    assert_eq!(approve(&peer, "Org2", &request), ValidationCode::Valid);
    assert_eq!(
        lifecycle_call(&peer, "Org1", "deploy", &request, &peer.peers),
        ValidationCode::UnusablePolicy
    );
    assert_eq!(approve(&peer, "Org3", &request), ValidationCode::Valid);
    assert_eq!(peer.validator.failure(), None);
    assert!(
        peer.world
            .snapshot()
            .get(LIFECYCLE_NAMESPACE, &lifecycle::definition_key("kv"))
            .unwrap()
            .is_none(),
        "nothing committed the definition"
    );
    peer.close();
}

#[test]
fn a_config_policy_in_force_that_cannot_be_evaluated_makes_updates_unusable_policy() {
    let dir = tempfile::tempdir().unwrap();
    let mut genesis = genesis(ONE_APPROVAL);
    genesis.config_policy = "AND('Org1.admin', 'Org9.admin')".into();
    let peer = Peer::start_from(
        dir.path(),
        runnel_ledger::tx::PROPOSAL_WINDOW,
        SEALING,
        |orderer| orderer,
        genesis.clone(),
    );
    let mut next = genesis.clone();
    next.sequence = 1;
    next.config_policy = "MAJORITY admin".into();
    let (update_id, update) = config_update(&next);
    assert_eq!(
        submit(&peer, update_id, update).1,
        ValidationCode::UnusablePolicy
    );
    // Stage 2 goes on: a contract is still deployed.
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    assert_eq!(peer.validator.failure(), None);
    peer.close();
}

#[test]
fn an_update_naming_an_unknown_organisation_is_bad_config_update_and_lifecycle_goes_on() {
    // The issue's live finding, in process: an update that sets the lifecycle policy to
    // 'Org9.admin', signed by two of three admins. It is refused, with the reason; the
    // approval after it commits, and so does a deploy under the policy still in force.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    for (field, text) in [
        ("lifecycle", "'Org9.admin'"),
        ("config", "'Org9.admin'"),
        ("lifecycle", "'Org1.peer'"),
        ("config", "AND('Org1.admin', 'Org1.admin')"),
    ] {
        let mut next = genesis(ONE_APPROVAL);
        next.sequence = 1;
        if field == "lifecycle" {
            next.lifecycle_policy = text.into();
        } else {
            next.config_policy = text.into();
        }
        let (update_id, update) = config_update(&next);
        assert_eq!(
            submit(&peer, update_id, update).1,
            ValidationCode::BadConfigUpdate,
            "{field}_policy {text}"
        );
    }
    let request = kv_request("ANY peer", false);
    assert_eq!(approve(&peer, "Org2", &request), ValidationCode::Valid);
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    assert_eq!(peer.validator.failure(), None);
    peer.close();
}

/// The `_config` update from the genesis definition to `next`, proposed by Org1's admin
/// and signed by Org1's and Org3's (two of three): its id and encoded transaction.
fn config_update(next: &NetworkDefinition) -> (runnel_ledger::ids::TxId, Vec<u8>) {
    let bytes = runnel_testing::orderer::config_update_by(
        &|org| signer(org, Role::Admin),
        None,
        next,
        &["Org1", "Org3"],
    );
    let (_, _, proposal) = tx::decode_transaction(&bytes).unwrap();
    (tx::tx_id(&proposal), bytes)
}

#[test]
fn a_seal_signed_by_an_orderer_the_configuration_no_longer_names_stops_the_peer() {
    // An update names Org2's orderer in place of Org1's, which this peer's orderer signs
    // as, and which goes on sealing (it does not follow the configuration, as a stale or
    // hostile orderer would not). The peer accepts its seals over blocks before the
    // update, refuses the first one over the update, stores nothing of it, and stops
    // with the reason.
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    let mut blocks = peer.hub.blocks();
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    let first = blocks.blocking_recv().unwrap();
    assert_eq!((first.first, first.last), (Seq(1), Seq(1)));

    let mut next = genesis(ONE_APPROVAL);
    next.sequence = 1;
    next.orderers = vec![orderer_node("Org2")];
    let (update_id, update) = config_update(&next);
    let mut watch = peer.hub.watch(update_id);
    let at = peer.orderer.submit(update).unwrap().seq;
    assert_eq!(watch.next_blocking().unwrap().code, ValidationCode::Valid);
    wait_until("the peer refuses the seal", || {
        peer.validator.failure().is_some()
    });
    let failure = peer.validator.failure().unwrap();
    assert!(
        matches!(&failure, ValidatorError::Stream(reason)
            if reason.contains("Org1/orderer0.Org1") && reason.contains("does not name")),
        "{failure}"
    );
    let seals = peer.world.store().seals(BlockNumber(1), 100).unwrap();
    assert!(seals.iter().all(|seal| seal.last < at), "{seals:?}");
    peer.close();
}

#[test]
fn a_restarted_peer_checks_an_open_block_against_the_updates_it_stored() {
    // The update that replaces Org1's orderer commits while its block is still open;
    // after a restart, the peer reads the update back from its store and refuses the
    // seal Org1's orderer then cuts over it.
    let dir = tempfile::tempdir().unwrap();
    let never = (100, StdDuration::from_secs(3600));
    let at = {
        let peer = Peer::start(dir.path(), tx::PROPOSAL_WINDOW, never, |o| o);
        assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
        let mut next = genesis(ONE_APPROVAL);
        next.sequence = 1;
        next.orderers = vec![orderer_node("Org2")];
        let (update_id, update) = config_update(&next);
        let mut watch = peer.hub.watch(update_id);
        let at = peer.orderer.submit(update).unwrap().seq;
        assert_eq!(watch.next_blocking().unwrap().code, ValidationCode::Valid);
        // Closed once it is durable, not merely validated.
        assert_eq!(watch.next_blocking().unwrap().phase, Phase::Committed);
        assert!(
            peer.world
                .store()
                .seals(BlockNumber(1), 1)
                .unwrap()
                .is_empty()
        );
        peer.close();
        at
    };
    let peer = Peer::start(dir.path(), tx::PROPOSAL_WINDOW, SEALING, |o| o);
    wait_until("the peer refuses the seal", || {
        peer.validator.failure().is_some()
    });
    let failure = peer.validator.failure().unwrap().to_string();
    assert!(failure.contains("(sequence 1) does not name"), "{failure}");
    assert!(
        peer.world
            .store()
            .seals(BlockNumber(1), 1)
            .unwrap()
            .is_empty()
    );
    assert_eq!(peer.world.durable_height(), at);
    peer.close();
}

#[test]
fn a_transaction_endorsed_before_an_upgrade_and_ordered_after_it_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let peer = Peer::open(dir.path());
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    let client = signer("Org1", Role::Client);
    let p = proposal(&client, "kv", "put", put("k", "v"));
    let early = peer.peers[0].endorse(&p).unwrap();
    assert_eq!(deploy(&peer, "ANY peer", true), ValidationCode::Valid);
    let (_, code) = submit(&peer, early.tx_id, assemble(&client, &p, &[early]));
    assert_eq!(code, ValidationCode::MvccReadConflict);
    peer.close();
}

#[test]
fn a_restarted_peer_resumes_state_stream_and_seal_chain() {
    let dir = tempfile::tempdir().unwrap();
    let client = signer("Org3", Role::Client);
    {
        let peer = Peer::open(dir.path());
        assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
        for i in 0..4 {
            let p = proposal(&client, "kv", "put", put(&format!("k{i}"), "1"));
            let e = peer.peers[2].endorse(&p).unwrap();
            assert_eq!(
                submit(&peer, e.tx_id, assemble(&client, &p, &[e])).1,
                ValidationCode::Valid
            );
        }
        peer.close();
    }
    let peer = Peer::open(dir.path());
    assert_eq!(peer.world.durable_height(), Seq(5));
    let mut blocks = peer.hub.blocks();
    for i in 4..8 {
        let p = proposal(&client, "kv", "put", put(&format!("k{i}"), "2"));
        let e = peer.peers[2].endorse(&p).unwrap();
        let (seq, code) = submit(&peer, e.tx_id, assemble(&client, &p, &[e]));
        assert_eq!((seq, code), (Seq(i + 2), ValidationCode::Valid));
    }
    // Seals keep chaining across the restart until the last transaction is sealed.
    loop {
        let block = blocks.blocking_recv().unwrap();
        if block.last == Seq(9) {
            break;
        }
    }
    let seals = peer.world.store().seals(BlockNumber(1), 100).unwrap();
    assert_eq!(seals.first().unwrap().first, Seq(1));
    assert!(seals.windows(2).all(|w| w[1].first == w[0].last.next()));
    assert_eq!(seals.last().unwrap().last, Seq(9));
    peer.close();
}

#[test]
fn a_proposal_dated_outside_the_window_of_the_orderers_timestamp_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    // Endorsers and orderer admit proposals an hour off; validation allows 15 minutes,
    // measured against the orderer's timestamp, which every peer reads from the stream.
    let peer = Peer::open_with(dir.path(), StdDuration::from_secs(3600));
    assert_eq!(deploy(&peer, "", false), ValidationCode::Valid);
    let client = signer("Org1", Role::Client);
    for (minutes_off, expected) in [
        (20, ValidationCode::TimestampOutOfWindow),
        (-20, ValidationCode::TimestampOutOfWindow),
        (14, ValidationCode::Valid),
    ] {
        let mut p = tx::new_proposal(
            "main",
            "kv",
            "put",
            put(&format!("k{minutes_off}"), "1"),
            &client,
        );
        let off_ms = minutes_off * 60 * 1000_i64;
        p.timestamp_ms = p.timestamp_ms.checked_add_signed(-off_ms).unwrap();
        let signed = tx::sign_proposal(&client, &p);
        let endorsed: Vec<Endorsed> = peer
            .peers
            .iter()
            .map(|e| e.endorse(&signed).unwrap())
            .collect();
        let (_, code) = submit(
            &peer,
            endorsed[0].tx_id,
            assemble(&client, &signed, &endorsed),
        );
        assert_eq!(code, expected, "{minutes_off} minutes off");
    }
    peer.close();
}

/// The orderer's stream with the transaction at `seq` changed by `alter` on its way to the
/// peer, after the orderer sealed it: what anyone between the orderer and a peer, or an
/// orderer that checked less, could deliver.
struct Altered {
    orderer: Arc<SoloOrderer>,
    seq: Seq,
    alter: Arc<dyn Fn(&mut OrderedTx) + Send + Sync>,
}

struct AlteredDelivery {
    inner: Box<dyn Delivery>,
    seq: Seq,
    alter: Arc<dyn Fn(&mut OrderedTx) + Send + Sync>,
}

impl Orderer for Altered {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        self.orderer.submit(signed_transaction)
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        Ok(Box::new(AlteredDelivery {
            inner: self.orderer.deliver(from, next_block)?,
            seq: self.seq,
            alter: self.alter.clone(),
        }))
    }

    fn height(&self) -> Seq {
        self.orderer.height()
    }

    fn durable_height(&self) -> Seq {
        self.orderer.durable_height()
    }
}

impl Delivery for AlteredDelivery {
    fn next(&mut self, timeout: StdDuration) -> Result<Option<Delivered>, OrderError> {
        Ok(match self.inner.next(timeout)? {
            Some(Delivered::Tx(mut ordered)) if ordered.seq == self.seq => {
                (self.alter)(&mut ordered);
                Some(Delivered::Tx(ordered))
            }
            other => other,
        })
    }
}

/// Waits until `done` holds, for as long as anything that should happen may take.
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "waited in vain for {what}");
        std::thread::sleep(StdDuration::from_millis(5));
    }
}

#[test]
fn a_timestamp_altered_after_sealing_is_refused_at_the_seal() {
    // Block 1 is the deploy and two puts (seqs 1-3). On the way to the peer, seq 3's
    // timestamp is moved 20 minutes on: its proposal is then outside the window, and the
    // peer's verdict would differ from every other peer's. The seal covers the timestamp
    // the orderer gave it, so the peer stops at the seal instead, as it does for changed
    // bytes, and never stores it. Unmoved, the same stream is sealed and stored.
    let twenty_minutes_ms = 20 * 60 * 1000;
    for shift_ms in [0, twenty_minutes_ms] {
        let dir = tempfile::tempdir().unwrap();
        let peer = Peer::start(
            dir.path(),
            runnel_ledger::tx::PROPOSAL_WINDOW,
            (3, StdDuration::from_secs(3600)),
            |orderer| {
                Arc::new(Altered {
                    orderer,
                    seq: Seq(3),
                    alter: Arc::new(move |ordered: &mut OrderedTx| {
                        ordered.timestamp_ms += shift_ms;
                    }),
                })
            },
        );
        let client = signer("Org3", Role::Client);
        assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
        let p = proposal(&client, "kv", "put", put("k2", "v"));
        let e = peer.peers[2].endorse(&p).unwrap();
        let (seq, code) = submit(&peer, e.tx_id, assemble(&client, &p, &[e]));
        assert_eq!((seq, code), (Seq(2), ValidationCode::Valid));

        let p = proposal(&client, "kv", "put", put("k3", "v"));
        let e = peer.peers[2].endorse(&p).unwrap();
        let mut watch = peer.hub.watch(e.tx_id);
        let ordered = peer.orderer.submit(assemble(&client, &p, &[e])).unwrap();
        assert_eq!(ordered.seq, Seq(3));
        let validated = watch.next_blocking().unwrap();
        let store = peer.world.store();
        if shift_ms == 0 {
            assert_eq!(validated.code, ValidationCode::Valid);
            wait_until("block 1", || store.last_seal().unwrap().is_some());
            let seal = store.last_seal().unwrap().unwrap();
            assert_eq!(
                (seal.number, seal.first, seal.last),
                (BlockNumber(1), Seq(1), Seq(3))
            );
            assert!(peer.validator.failure().is_none());
        } else {
            // What the peer validated is what it was sent...
            assert_eq!(validated.code, ValidationCode::TimestampOutOfWindow);
            // ...and the seal refuses it.
            wait_until("the refusal", || peer.validator.failure().is_some());
            let failure = peer.validator.failure().unwrap();
            let message = failure.to_string();
            assert!(matches!(failure, ValidatorError::Stream(_)), "{message}");
            assert!(message.contains("seal 1"), "{message}");
            assert!(message.contains("tx_root"), "{message}");
            assert!(message.contains("ordered timestamps"), "{message}");
            assert!(peer.validator.stopped());
            assert_eq!(store.last_seal().unwrap(), None);
            assert_eq!(store.block_of(Seq(3)).unwrap(), None);
        }
        peer.close();
    }
}

#[test]
fn a_restarted_peer_checks_the_next_seal_against_the_times_it_stored() {
    // Seqs 1-3 are committed before any seal (the orderer would seal only at 100 or after
    // an hour). Restarted with a cadence of 3, the orderer seals them at once; the peer
    // checks that seal against the leaves it rebuilds from its store, whose timestamps
    // are the ones it validated with.
    let dir = tempfile::tempdir().unwrap();
    let client = signer("Org1", Role::Client);
    {
        let peer = Peer::start(
            dir.path(),
            runnel_ledger::tx::PROPOSAL_WINDOW,
            (100, StdDuration::from_secs(3600)),
            |orderer| orderer,
        );
        for key in ["a", "b", "c"] {
            let bytes = runnel_testing::orderer::endorsed_transaction(
                &signer("Org1", Role::Peer),
                &client,
                ("main", key),
                key.as_bytes().to_vec(),
            );
            peer.orderer.submit(bytes).unwrap();
        }
        wait_until("seqs 1-3 durable", || peer.world.durable_height() == Seq(3));
        assert_eq!(peer.world.store().last_seal().unwrap(), None);
        peer.close();
    }
    let peer = Peer::start(
        dir.path(),
        runnel_ledger::tx::PROPOSAL_WINDOW,
        (3, StdDuration::from_secs(3600)),
        |orderer| orderer,
    );
    let store = peer.world.store();
    wait_until("block 1", || {
        store.last_seal().unwrap().is_some() || peer.validator.failure().is_some()
    });
    assert_eq!(peer.validator.failure(), None);
    let seal = store.last_seal().unwrap().unwrap();
    assert_eq!(
        (seal.number, seal.first, seal.last),
        (BlockNumber(1), Seq(1), Seq(3))
    );
    let stored: Vec<u64> = store
        .transactions(Seq(1), 10)
        .unwrap()
        .iter()
        .map(|tx| tx.timestamp_ms)
        .collect();
    assert_eq!(stored.len(), 3);
    for (seq, timestamp_ms) in (1..=3).zip(stored) {
        let record = peer.world.tx(&tx_id_at(&peer, Seq(seq))).unwrap().unwrap();
        assert_eq!(record.timestamp_ms, timestamp_ms, "seq {seq}");
    }
    peer.close();
}

/// The id of the transaction stored at `seq`.
fn tx_id_at(peer: &Peer, seq: Seq) -> runnel_ledger::ids::TxId {
    let stored = peer.world.transaction(seq).unwrap().unwrap();
    let (_, _, proposal) = tx::decode_transaction(&stored.bytes).unwrap();
    tx::tx_id(&proposal)
}

#[test]
fn a_transaction_with_more_endorsements_than_any_policy_uses_is_invalid() {
    // Seq 2 reaches the peer with 65 copies of its one endorsement (no block is sealed
    // during the test, so no seal stops the peer first): every peer marks it
    // TOO_MANY_ENDORSEMENTS, though its one endorser meets the policy; seq 3 commits.
    let dir = tempfile::tempdir().unwrap();
    let client = signer("Org3", Role::Client);
    let peer = Peer::start(
        dir.path(),
        runnel_ledger::tx::PROPOSAL_WINDOW,
        (100, StdDuration::from_secs(3600)),
        |orderer| {
            let client = client.clone();
            Arc::new(Altered {
                orderer,
                seq: Seq(2),
                // Copies of its endorsement past `ENDORSEMENTS_MAX`, signed again by its
                // client: what an orderer that did not count them would deliver.
                alter: Arc::new(move |ordered: &mut OrderedTx| {
                    let (_, mut transaction, _) =
                        tx::decode_transaction(&ordered.transaction).unwrap();
                    let own = transaction.endorsements[0].clone();
                    transaction.endorsements = vec![own; tx::ENDORSEMENTS_MAX + 1];
                    ordered.transaction =
                        tx::sign_transaction(&client, &transaction).encode_to_vec();
                }),
            })
        },
    );
    assert_eq!(deploy(&peer, "ANY peer", false), ValidationCode::Valid);
    for (key, expected) in [
        ("k2", (Seq(2), ValidationCode::TooManyEndorsements)),
        ("k3", (Seq(3), ValidationCode::Valid)),
    ] {
        let p = proposal(&client, "kv", "put", put(key, "v"));
        let e = peer.peers[2].endorse(&p).unwrap();
        assert_eq!(
            submit(&peer, e.tx_id, assemble(&client, &p, &[e])),
            expected
        );
    }
    peer.close();
}
