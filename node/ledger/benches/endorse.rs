//! Endorsement cost: a kv put (1 KB value) endorsed end to end, in process, on one core
//! and on all cores, and the parts it is made of.
//!
//! Every endorsement verifies its proposal's signature: the proposals are signed up front
//! and cycled through, and the process's signature cache is emptied each time the cycle
//! starts again, so no endorsement finds its signature already verified. (The creator's
//! certificate is found in the certificate cache after the first, as on a live node.)
//!
//! Run: `./scripts/bench.sh endorse` (or `cargo bench -p runnel-ledger --bench endorse`).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message;
use runnel_ledger::endorser::{Endorser, EndorserConfig};
use runnel_ledger::identity::{Msp, NetworkIdentities, Role, Signer};
use runnel_ledger::ids::ValidationCode;
use runnel_ledger::lifecycle::{self, LIFECYCLE_NAMESPACE};
use runnel_ledger::proto::{DeployRequest, Proposal, ResponsePayload, SignedProposal};
use runnel_ledger::records::SyncMode;
use runnel_ledger::store::{TxRecord, WorldState};
use runnel_ledger::tx;
use runnel_runtime::{CallContext, Runtime, RuntimeConfig};

/// Proposals prepared up front and cycled through (endorsing writes nothing, so a
/// proposal can be endorsed again).
const PROPOSALS: usize = 4096;
/// Proposals per `endorse_batch` call in the batched figure.
const BATCH: usize = 64;

struct Setup {
    _dir: tempfile::TempDir,
    state: Arc<WorldState>,
    endorser: Arc<Endorser>,
    runtime: Arc<Runtime>,
    proposals: Vec<SignedProposal>,
    msp: Arc<Msp>,
    client: Signer,
    peer: Signer,
}

fn setup() -> Setup {
    let network = NetworkIdentities::generate(&["Org1", "Org2", "Org3"], time::Duration::days(1))
        .expect("identities");
    let msp = Arc::new(network.msp().expect("msp"));
    let org1 = network.org("Org1").expect("Org1");
    let dir = tempfile::tempdir().expect("tempdir");
    let state = Arc::new(WorldState::open(dir.path(), SyncMode::Data).expect("state"));
    let runtime = Arc::new(Runtime::new(RuntimeConfig::default()).expect("runtime"));
    let admin = org1.signer(Role::Admin).expect("admin");
    let endorser = |signer: Signer| {
        Endorser::new(
            EndorserConfig::default(),
            msp.clone(),
            signer,
            runtime.clone(),
            state.clone(),
        )
        .expect("endorser")
    };

    // Deploy kv, as a committed lifecycle transaction.
    let request = DeployRequest {
        name: "kv".into(),
        version: "1".into(),
        code: runnel_wasm_build::wasm("kv").expect("kv builds"),
        ..DeployRequest::default()
    };
    let deploy = tx::new_proposal(
        "main",
        LIFECYCLE_NAMESPACE,
        lifecycle::FN_DEPLOY,
        vec![request.encode_to_vec()],
        &admin,
    );
    let deployed = endorser(org1.signer(Role::Admin).expect("admin"))
        .endorse(&tx::sign_proposal(&admin, &deploy))
        .expect("deploy endorsed");
    let payload = ResponsePayload::decode(deployed.response.payload.as_slice()).expect("payload");
    let record = TxRecord {
        tx_id: deployed.tx_id,
        seq: state.staged_height().next(),
        code: ValidationCode::Valid,
        timestamp_ms: 0,
    };
    let seq = record.seq;
    state
        .stage(record, &payload.rwsets, deployed.tx_id.as_bytes().to_vec())
        .expect("stage");
    state.commit_staged(seq, Vec::new()).expect("commit");

    let client = org1.signer(Role::Client).expect("client");
    let value = "v".repeat(1024);
    let proposals = (0..PROPOSALS)
        .map(|i| {
            let key = format!("key-{i:05}");
            let proposal = tx::new_proposal(
                "main",
                "kv",
                "put",
                vec![key.into_bytes(), value.clone().into_bytes()],
                &client,
            );
            tx::sign_proposal(&client, &proposal)
        })
        .collect();
    let peer_endorser = Arc::new(endorser(org1.signer(Role::Peer).expect("peer")));
    Setup {
        _dir: dir,
        state,
        endorser: peer_endorser,
        runtime,
        proposals,
        msp,
        client,
        peer: org1.signer(Role::Peer).expect("peer"),
    }
}

/// Endorses `iters` proposals spread over `threads` threads; returns the wall time.
fn endorse_on(setup: &Setup, threads: usize, iters: u64, batch: usize) -> Duration {
    let next = AtomicUsize::new(0);
    let iters = iters as usize;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let from = next.fetch_add(batch, Ordering::Relaxed);
                    if from >= iters {
                        break;
                    }
                    let n = batch.min(iters - from);
                    let at = from % PROPOSALS;
                    let n = n.min(PROPOSALS - at);
                    if at == 0 {
                        setup.msp.signatures().forget_all();
                    }
                    if batch == 1 {
                        black_box(
                            setup
                                .endorser
                                .endorse(&setup.proposals[at])
                                .expect("endorsed"),
                        );
                    } else {
                        for answer in setup.endorser.endorse_batch(&setup.proposals[at..at + n]) {
                            black_box(answer.expect("endorsed"));
                        }
                    }
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let setup = setup();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());

    let mut group = c.benchmark_group("endorse");
    group.throughput(Throughput::Elements(1));
    group.bench_function("kv_put_1KB/1_thread", |b| {
        b.iter_custom(|iters| endorse_on(&setup, 1, iters, 1))
    });
    group.bench_function(format!("kv_put_1KB/{threads}_threads"), |b| {
        b.iter_custom(|iters| endorse_on(&setup, threads, iters, 1))
    });
    group.bench_function(format!("kv_put_1KB/{threads}_threads_batch_{BATCH}"), |b| {
        b.iter_custom(|iters| endorse_on(&setup, threads, iters, BATCH))
    });
    group.finish();

    // The parts, one at a time, on one core.
    let mut parts = c.benchmark_group("endorse_parts");
    let signed = &setup.proposals[0];
    let proposal = Proposal::decode(signed.proposal.as_slice()).expect("proposal");
    let hash = tx::sha256(&signed.proposal);
    parts.bench_function("decode_and_hash_proposal", |b| {
        b.iter(|| {
            let p = Proposal::decode(black_box(signed.proposal.as_slice())).expect("decodes");
            (p, tx::sha256(&signed.proposal))
        })
    });
    let now = i64::try_from(tx::now_ms() / 1000).expect("time");
    parts.bench_function("msp_verify_cached_certificate", |b| {
        b.iter(|| {
            setup
                .msp
                .verify(black_box(&proposal.creator), now)
                .expect("valid")
        })
    });
    let message = tx::proposal_message(&hash);
    parts.bench_function("ed25519_sign", |b| {
        b.iter(|| setup.peer.sign(black_box(&message)))
    });
    let signature = setup.client.sign(&message);
    let key =
        ed25519_dalek::VerifyingKey::from_bytes(&verifying_key_of(&setup.client)).expect("key");
    let sig = ed25519_dalek::Signature::from_bytes(&signature);
    parts.bench_function("ed25519_verify_strict", |b| {
        b.iter(|| {
            key.verify_strict(black_box(&message), &sig)
                .expect("verifies")
        })
    });
    let messages: Vec<Vec<u8>> = (0..BATCH).map(|i| vec![i as u8; 50]).collect();
    let sigs: Vec<_> = messages
        .iter()
        .map(|m| ed25519_dalek::Signature::from_bytes(&setup.client.sign(m)))
        .collect();
    let refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
    let keys = vec![key; BATCH];
    parts.throughput(Throughput::Elements(BATCH as u64));
    parts.bench_function(format!("ed25519_verify_batch_{BATCH}"), |b| {
        b.iter(|| ed25519_dalek::verify_batch(&refs, &sigs, &keys).expect("verifies"))
    });
    parts.throughput(Throughput::Elements(1));
    let snapshot = setup.state.snapshot();
    let lifecycle_view = snapshot.view(LIFECYCLE_NAMESPACE);
    let (definition, _) = lifecycle::read_definition(lifecycle_view.as_ref(), "kv")
        .expect("reads")
        .expect("deployed");
    let contract = lifecycle::load_contract(&setup.runtime, lifecycle_view.as_ref(), &definition)
        .expect("loads");
    let ctx = CallContext {
        tx_id: tx::tx_id(&proposal).to_hex(),
        ..CallContext::default()
    };
    parts.bench_function("wasm_invoke_kv_put_1KB", |b| {
        b.iter(|| {
            setup
                .runtime
                .invoke(
                    &contract,
                    "kv",
                    "put",
                    &proposal.args,
                    &ctx,
                    snapshot.view("kv"),
                )
                .expect("runs")
        })
    });
    parts.bench_function("snapshot_and_definition_read", |b| {
        b.iter(|| {
            let snapshot = setup.state.snapshot();
            lifecycle::read_definition(snapshot.view(LIFECYCLE_NAMESPACE).as_ref(), "kv")
                .expect("reads")
        })
    });
    parts.finish();
}

/// The public key of a signer, from its certificate.
fn verifying_key_of(signer: &Signer) -> [u8; 32] {
    use x509_parser::prelude::FromDer;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(signer.cert_der())
        .expect("certificate");
    let key = cert.public_key().subject_public_key.data.as_ref();
    key.try_into().expect("32-byte Ed25519 key")
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
