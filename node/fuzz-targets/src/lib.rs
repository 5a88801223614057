//! One entry point per decoder that reads bytes Runnel does not trust: what a client
//! submits, what a peer receives from the orderer, what a contract author deploys, what a
//! disk hands back. Each `pub fn` feeds the bytes in and asserts what must hold for any
//! input: no panic, a typed error for bad input, and where a format can be written back,
//! that writing it back and reading it again changes nothing.
//!
//! The same functions run twice over: on stable, `tests/it/corpus.rs` replays every file in
//! `corpus/<target>/` and a few thousand deterministic mutations of them (part of
//! `cargo test --workspace`); on nightly, `node/fuzz` hands them to libFuzzer for as long
//! as `scripts/fuzz.sh` is told to run.
//!
//! The validator's read/write-set rules are reached through their public entry point
//! ([`runnel_ledger::validator::rules::check_rwset`]), and `runnel.toml` through the
//! runnel-node ([`runnel_node::config::NodeConfig::parse`]), the parser the
//! binary uses.

mod fixtures;

use std::collections::HashSet;
use std::mem::discriminant;
use std::path::Path;
use std::sync::Arc;

use prost::Message;
use runnel_ledger::block::{self, Seal, SealChain};
use runnel_ledger::identity::{NetworkDefinition, Role};
use runnel_ledger::ids::ValidationCode;
use runnel_ledger::lifecycle::LIFECYCLE_NAMESPACE;
use runnel_ledger::orderer::{OrderedTx, SEAL_TXS_MAX};
use runnel_ledger::policy::{self, Evaluation, Policy};
use runnel_ledger::proto::{Proposal, RangeRead, ResponsePayload, SignedProposal};
use runnel_ledger::records::{FIRST_RECORD, HEADER, MAGIC_V1, RecordFile};
use runnel_ledger::store::{KEY_BYTES_MAX, NAMESPACE_BYTES_MAX};
use runnel_ledger::validator::rules::{
    self, TX_EVENTS_MAX, TX_NAMESPACES_MAX, TX_RANGE_KEYS_MAX, TX_RANGE_READS_MAX, TX_READS_MAX,
    TX_WRITES_MAX,
};
use runnel_ledger::{endorser, netconfig, sig, tx};
use runnel_node::config::NodeConfig;
use runnel_runtime::{CallContext, MemoryState};

/// A fuzz target: takes any bytes, panics only when a property fails.
pub type Target = fn(&[u8]);

/// Every target, by the name its corpus directory and its cargo-fuzz target carry.
pub const TARGETS: [(&str, Target); 12] = [
    ("transaction", transaction),
    ("ordered_tx", ordered_tx),
    ("signed_proposal", signed_proposal),
    ("signed_seal", signed_seal),
    ("byte_list", byte_list),
    ("policy", policy),
    ("record_file", record_file),
    ("wasm_module", wasm_module),
    ("rwset", rwset),
    ("runnel_toml", runnel_toml),
    ("network_definition", network_definition),
    ("certificate", certificate),
];

/// Organisations the policy target parses against (a duplicate, which parsing ignores).
const POLICY_ORGS: [&str; 4] = ["Org1", "Org2", "Org3", "Org2"];

/// Endorsers of a policy evaluation drawn from the input's bytes, at most.
const POLICY_ENDORSERS_MAX: usize = 24;

/// Functions of a contract module the Wasm target calls, at most.
const WASM_CALLS_MAX: usize = 4;

/// `decode(encode(message)) == message`, for a message that was itself decoded.
fn assert_round_trip<M: Message + Default + PartialEq + std::fmt::Debug>(message: &M) {
    let again = M::decode(message.encode_to_vec().as_slice())
        .expect("a decoded message, encoded again, decodes");
    assert_eq!(
        &again, message,
        "decode → encode → decode changed the message"
    );
}

/// A `SignedTransaction` as the orderer and every peer's validator receive it
/// ([`tx::decode_transaction`], [`runnel_ledger::orderer::check`]): its three layers
/// decode or it is refused; each layer
/// round-trips; the response payload the validator decodes round-trips; the creator's and
/// endorsers' certificates go through the network's MSP (X.509 parsing of untrusted
/// DER) and, whatever they hold, no signature made elsewhere verifies.
pub fn transaction(data: &[u8]) {
    // What a peer checks of a `Submit` before it queues it, and an orderer before it
    // orders it: an answer for any bytes, and never a transaction no peer endorsed.
    let checked = runnel_ledger::orderer::check(
        &runnel_ledger::orderer::OrdererConfig::default(),
        fixtures::msp(),
        data,
        true,
    );
    let Ok((signed, transaction, proposal)) = tx::decode_transaction(data) else {
        assert!(checked.is_err());
        return;
    };
    if checked.is_ok() {
        let count = transaction.endorsements.len();
        assert!(
            (1..=tx::ENDORSEMENTS_MAX).contains(&count),
            "{count} endorsements"
        );
    }
    assert_round_trip(&signed);
    assert_round_trip(&transaction);
    assert_round_trip(&proposal);
    let _ = tx::tx_id(&proposal);
    if let Ok(payload) = ResponsePayload::decode(transaction.payload.as_slice()) {
        assert_round_trip(&payload);
    }

    let msp = fixtures::msp();
    let now = tx::now_seconds();
    if let Ok(creator) = msp.verify(&proposal.creator, now) {
        let message = tx::transaction_message(&tx::sha256(&signed.transaction));
        // Only this process holds its network's keys: no input carries their signature.
        assert!(creator.verify(&message, &signed.signature).is_err());
    }
    for endorsement in &transaction.endorsements {
        if let Ok(endorser) = msp.verify(&endorsement.endorser, now) {
            let proposal_hash = tx::sha256(
                transaction
                    .proposal
                    .as_ref()
                    .map(|p| p.proposal.as_slice())
                    .unwrap_or_default(),
            );
            let message =
                tx::endorsement_message(&proposal_hash, &tx::sha256(&transaction.payload));
            assert!(endorser.verify(&message, &endorsement.signature).is_err());
        }
    }
}

/// An `OrderedTx` as a peer reads it from the orderer's stream or log
/// ([`OrderedTx::decode`]): it round-trips through [`OrderedTx::encode`], its Merkle leaf
/// is the block's, and the transaction it carries goes on to [`transaction`], as the
/// validator's first stage takes it.
pub fn ordered_tx(data: &[u8]) {
    let Ok(ordered) = OrderedTx::decode(data) else {
        return;
    };
    let (kept, bytes) = ordered.clone().encode();
    assert_eq!(kept, ordered);
    assert_eq!(OrderedTx::decode(&bytes).as_ref(), Ok(&ordered));
    assert_eq!(
        ordered.leaf(),
        block::leaf(ordered.timestamp_ms, &ordered.transaction)
    );
    transaction(&ordered.transaction);
}

/// A `SignedProposal` as a node's Endorse and Evaluate receive it, run through a real
/// [`endorser::Endorser`] (Org1's peer, on an empty state):
///
/// - as sent, it is refused with a typed error: no input carries a signature of this
///   process's network;
/// - the proposal inside, made acceptable in what an honest client controls (channel,
///   creator certificate, timestamp, nonce length) and signed by Org1's admin or client,
///   is endorsed or refused without a panic, so contract and lifecycle calls with any
///   function and arguments are reached; an endorsement names the proposal and carries a
///   signature that verifies.
pub fn signed_proposal(data: &[u8]) {
    let Ok(signed) = SignedProposal::decode(data) else {
        return;
    };
    assert_round_trip(&signed);
    let endorser = fixtures::endorser();
    let refused = endorser.evaluate(&signed);
    assert!(refused.is_err(), "a forged proposal was evaluated");
    let _ = refused.map_err(|e| e.code());

    let Ok(mut proposal) = Proposal::decode(signed.proposal.as_slice()) else {
        return;
    };
    let role = if proposal.contract == LIFECYCLE_NAMESPACE {
        Role::Admin
    } else {
        Role::Client
    };
    let creator = fixtures::signer(role);
    proposal.channel = fixtures::CHANNEL.to_string();
    proposal.creator = creator.cert_der().to_vec();
    proposal.timestamp_ms = tx::now_ms();
    let nonce_len = proposal
        .nonce
        .len()
        .clamp(endorser::NONCE_BYTES_MIN, endorser::NONCE_BYTES_MAX);
    proposal.nonce.resize(nonce_len, 0);
    let resigned = tx::sign_proposal(creator, &proposal);
    match endorser.endorse(&resigned) {
        Ok(endorsed) => {
            let payload = ResponsePayload::decode(endorsed.response.payload.as_slice())
                .expect("an endorsed payload decodes");
            let proposal_hash = tx::sha256(&resigned.proposal);
            assert_eq!(payload.proposal_hash, proposal_hash);
            assert_eq!(payload.result, endorsed.result);
            assert_eq!(endorsed.tx_id, tx::tx_id(&proposal));
            let endorsement = endorsed.response.endorsement.expect("an endorsement");
            let message =
                tx::endorsement_message(&proposal_hash, &tx::sha256(&endorsed.response.payload));
            assert!(sig::verify(
                &fixtures::endorser_key(),
                &message,
                &endorsement.signature
            ));
        }
        Err(error) => {
            let _ = (error.code(), error.to_string());
        }
    }
}

/// A `SignedSeal` as a peer reads one back ([`block::decode_signed_seal`]) and receives one
/// ([`SealChain::accept`]): a seal that decodes is in its canonical encoding (one seal,
/// one hash), covers at least one transaction and decodes again the same; the chain
/// refuses any seal this process's orderer did not sign, and stays where it was.
pub fn signed_seal(data: &[u8]) {
    if let Ok(sealed) = block::decode_signed_seal(data) {
        assert_eq!(sealed.bytes, data);
        let encoded = sealed.seal.encode();
        assert_eq!(sealed.hash, tx::sha256(&encoded));
        assert_eq!(Seal::decode(&encoded).as_ref(), Ok(&sealed.seal));
        assert!(sealed.seal.tx_count() >= 1);
        assert!(sealed.seal.contains(sealed.seal.first));
        assert!(sealed.seal.contains(sealed.seal.last));
        assert_eq!(
            block::decode_signed_seal(&sealed.bytes).as_ref(),
            Ok(&sealed)
        );
    }
    let mut chain = SealChain::genesis();
    let leaves = [block::leaf(0, data)];
    let refused = chain.accept(data, &leaves, &block::Sealers::any_orderer(fixtures::msp()));
    assert!(refused.is_err(), "a forged seal was accepted");
    let _ = refused.map_err(|e| e.code());
    assert_eq!(chain, SealChain::genesis());
}

/// A contract call's arguments as the byte list the runtime hands a module and a contract
/// reads back ([`runnel_abi::decode_byte_list`]): the encoding is exact, so a list that
/// decodes encodes back to the very same bytes.
pub fn byte_list(data: &[u8]) {
    match runnel_abi::decode_byte_list(data) {
        Ok(items) => assert_eq!(runnel_abi::encode_byte_list(&items), data),
        Err(error) => {
            let _ = error.to_string();
        }
    }
}

/// An endorsement policy as a deploy or upgrade carries it ([`Policy::parse`], the text
/// read as UTF-8 with invalid bytes replaced): an error points inside the text; a policy
/// prints ([`Policy`]'s `Display`) as a canonical text that parses to the same policy and
/// prints the same; it evaluates against endorsers drawn from the input with the same
/// verdict in any order, and a satisfying assignment gives each principal a distinct
/// endorser it matches.
pub fn policy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let orgs: Vec<String> = POLICY_ORGS.iter().map(|org| org.to_string()).collect();
    let parsed = match Policy::parse(&text, &orgs) {
        Ok(parsed) => parsed,
        Err(error) => {
            assert!(error.offset() <= text.len(), "error offset past the text");
            let _ = (
                error.code(),
                error.line(),
                error.column(),
                error.to_string(),
            );
            return;
        }
    };
    let printed = parsed.to_string();
    let reparsed = Policy::parse(&printed, &orgs)
        .unwrap_or_else(|e| panic!("the printed policy {printed:?} does not parse: {e}"));
    assert_eq!(reparsed, parsed, "the printed policy {printed:?} differs");
    assert_eq!(reparsed.to_string(), printed);
    let principals = parsed.principals();
    assert!(!principals.is_empty() && principals.len() <= policy::POLICY_PRINCIPALS_MAX);

    let endorsers: Vec<policy::Endorser> = data
        .iter()
        .take(POLICY_ENDORSERS_MAX)
        .map(|&byte| {
            let org = ["Org1", "Org2", "Org3", "Org9"][usize::from(byte % 4)];
            policy::Endorser::new(org, Role::ALL[usize::from(byte / 4 % 4)])
        })
        .collect();
    let verdict = parsed.evaluate(&endorsers);
    let mut reversed = endorsers.clone();
    reversed.reverse();
    assert_eq!(
        discriminant(&verdict),
        discriminant(&parsed.evaluate(&reversed)),
        "the verdict on {printed:?} depends on the endorsers' order"
    );
    if let Evaluation::Satisfied(assignments) = verdict {
        let mut used = Vec::new();
        for assignment in assignments {
            let endorser = &endorsers[assignment.endorser];
            assert!(principals[assignment.principal].matches(endorser));
            assert!(
                !used.contains(&assignment.endorser),
                "an endorser used twice"
            );
            used.push(assignment.endorser);
        }
    }
}

/// A record file as a node finds it on disk after a crash or at the hands of a faulty
/// disk ([`RecordFile::open`] on a file holding exactly the input): open answers a
/// typed error and leaves the file untouched, or reports records that lie one after
/// another from the first record's place, each of which reads back
/// ([`runnel_ledger::records::RecordReader::read`]) as the bytes the file held there;
/// opened again, it reports the same records.
pub fn record_file(data: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("records");
    std::fs::write(&path, data).expect("the input written to a file");
    let opened = match RecordFile::open(&path) {
        Ok(opened) => opened,
        Err(error) => {
            let _ = error.to_string();
            let after = std::fs::read(&path).expect("the file read back");
            assert!(after == data, "a file open refused was changed");
            return;
        }
    };
    let first = if data.len() as u64 >= FIRST_RECORD && data.starts_with(MAGIC_V1) {
        MAGIC_V1.len() as u64
    } else {
        FIRST_RECORD
    };
    let reader = opened
        .file
        .handle(runnel_ledger::records::SyncMode::Data)
        .expect("a reader");
    let mut next = first;
    for at in &opened.records {
        assert_eq!(at.offset, next + HEADER, "records do not follow each other");
        next = at.offset + u64::from(at.len);
        let payload = reader.read(*at).expect("a record open reported reads back");
        let start = usize::try_from(at.offset).expect("an offset inside the input");
        assert_eq!(payload, data[start..start + at.len as usize]);
    }
    if let Some(torn_at) = opened.torn_at {
        assert_eq!(
            torn_at, next,
            "the torn record is not after the last good one"
        );
    }
    let records = opened.records;
    drop((reader, opened.file));
    let again = RecordFile::open(&path).expect("a file opened once opens again");
    assert_eq!(again.records, records, "opened again, the records differ");
}

/// A contract module as a deploy carries it ([`runnel_runtime::Runtime::install`], with
/// small limits): it is refused with a typed `LoadError` or installed; an installed
/// module's functions run (no arguments, empty state) to a result or a typed error
/// within their fuel. Installed modules are forgotten again, so memory stays bounded.
pub fn wasm_module(data: &[u8]) {
    let runtime = fixtures::runtime();
    let contract = match runtime.install(data) {
        Ok(contract) => contract,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let context = CallContext::default();
    for function in contract.functions().iter().take(WASM_CALLS_MAX) {
        let answer = runtime.invoke(
            &contract,
            "fuzz",
            function,
            &[],
            &context,
            Arc::new(MemoryState::new()),
        );
        if let Err(error) = answer {
            let _ = (error.code(), error.to_string());
        }
    }
    runtime.forget(&contract.hash());
}

/// A transaction's response payload as the validator judges its shape
/// ([`rules::check_rwset`]): bytes that do not decode are `BAD_PAYLOAD`, a payload that
/// breaks a rule `BAD_RWSET`, and no other answer. The verdict is the one the rules'
/// documentation gives, worked out here apart from the rules' code; the same payload
/// written back and decoded again gets the same verdict; and a payload that passes only
/// holds namespaces and written keys the store takes, so staging it cannot fail.
pub fn rwset(data: &[u8]) {
    let verdict = rules::check_rwset(data);
    let Ok(payload) = ResponsePayload::decode(data) else {
        assert_eq!(verdict, Err(ValidationCode::BadPayload));
        return;
    };
    assert_round_trip(&payload);
    let expected = if keeps_the_rules(&payload) {
        Ok(())
    } else {
        Err(ValidationCode::BadRwset)
    };
    assert_eq!(verdict, expected, "the rules' verdict on {payload:?}");
    assert_eq!(rules::check_rwset(&payload.encode_to_vec()), verdict);
}

/// The read/write-set rules as `validator/rules.rs` documents them.
fn keeps_the_rules(payload: &ResponsePayload) -> bool {
    let namespace_ok =
        |ns: &str| !ns.is_empty() && ns.len() <= NAMESPACE_BYTES_MAX && !ns.as_bytes().contains(&0);
    let key_ok = |key: &[u8]| key.len() <= KEY_BYTES_MAX;
    let sets = &payload.rwsets;
    let distinct: HashSet<&str> = sets.iter().map(|set| set.namespace.as_str()).collect();
    let total = |count: fn(&runnel_ledger::proto::NsRwSet) -> usize| -> usize {
        sets.iter().map(count).sum()
    };
    sets.len() <= TX_NAMESPACES_MAX
        && payload.events.len() <= TX_EVENTS_MAX
        && distinct.len() == sets.len()
        && sets.iter().all(|set| namespace_ok(&set.namespace))
        && total(|set| set.reads.len()) <= TX_READS_MAX
        && total(|set| set.writes.len()) <= TX_WRITES_MAX
        && total(|set| set.range_reads.len()) <= TX_RANGE_READS_MAX
        && total(|set| set.range_reads.iter().map(|r| r.reads.len()).sum()) <= TX_RANGE_KEYS_MAX
        && sets.iter().all(|set| {
            set.reads.iter().all(|read| key_ok(&read.key))
                && set.writes.iter().all(|write| key_ok(&write.key))
                && set
                    .range_reads
                    .iter()
                    .all(|range| range_shaped(range, key_ok))
        })
}

/// A range read as the runtime records one (see `keeps_the_rules`).
fn range_shaped(range: &RangeRead, key_ok: impl Fn(&[u8]) -> bool) -> bool {
    let end = range.end.as_deref();
    let inside = |key: &[u8]| key >= range.start.as_slice() && end.is_none_or(|end| key < end);
    let bounds_ok = key_ok(&range.start) && end.is_none_or(|end| !end.is_empty() && key_ok(end));
    let keys: Vec<&[u8]> = range.reads.iter().map(|read| read.key.as_slice()).collect();
    let ascending = keys.windows(2).all(|pair| pair[0] < pair[1]);
    let last_ok = match &range.last {
        Some(last) => inside(last) && keys.last().is_none_or(|key| *key <= last.as_slice()),
        None => keys.is_empty() || range.exhausted,
    };
    bounds_ok && ascending && keys.iter().all(|key| inside(key)) && last_ok
}

/// A node's `runnel.toml` as an operator may write it ([`NodeConfig::parse`], the text
/// read as UTF-8 with invalid bytes replaced): it is refused with a message, or accepted
/// as a configuration whose every check holds (organisations, block size, roles) and
/// from which the ledger's and the API's settings are built; an accepted configuration
/// written back as TOML parses to itself.
pub fn runnel_toml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let config = match NodeConfig::parse(&text) {
        Ok(config) => config,
        Err(message) => {
            assert!(!message.is_empty(), "a refusal without a reason");
            return;
        }
    };
    assert!(!config.network.orgs.is_empty());
    assert!((1..=SEAL_TXS_MAX).contains(&config.ordering.seal_max_txs));
    assert_eq!(config.check_roles(), Ok(()));
    let ledger = config.ledger_config();
    assert_eq!(ledger.orgs, config.network.orgs);
    let api = config.api_config(Path::new("/var/lib/runnel"));
    assert_eq!(api.tls.is_some(), config.api.tls.enabled);
    let written = toml::to_string(&config)
        .unwrap_or_else(|e| panic!("{config:?} does not write back as TOML: {e}"));
    let again = NodeConfig::parse(&written)
        .unwrap_or_else(|e| panic!("the written configuration {written:?} is refused: {e}"));
    assert_eq!(again, config, "written back as {written:?}");
}

/// A certificate as a creator, an endorser, a reader or a seal's signer presents it
/// ([`Msp::verify`](runnel_ledger::identity::Msp::verify)), twice over: the input itself,
/// and an edit of a certificate the network issued (Org1's client's: the input's first two
/// bytes place the edit, counted from the end of the certificate's content, the third
/// says how many bytes it replaces, the rest are put there, and the outer length is set
/// to fit, as a re-encoding would). Whatever the bytes: a typed refusal or an identity; an
/// identity verified from the input is in the one canonical form (the signed part,
/// Ed25519 without parameters, a 64-byte signature, nothing else); and the only edit of
/// the issued certificate that verifies is the one that changes no byte, so no
/// re-encoding can give one identity other bytes.
pub fn certificate(data: &[u8]) {
    let msp = fixtures::msp();
    let now = i64::try_from(tx::now_ms() / 1000).unwrap_or(i64::MAX);
    if let Ok(identity) = msp.verify(data, now) {
        assert_eq!(identity.cert_der, data);
        let (_, cert) = x509_parser::parse_x509_certificate(data).expect("it verified");
        let mut tail = vec![0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x41, 0x00];
        tail.extend_from_slice(&cert.signature_value.data);
        let canonical = [cert.tbs_certificate.as_ref(), &tail].concat();
        assert_eq!(data, runnel_testing::certs::sequence(&canonical));
    }
    let [from_end_high, from_end_low, cut, edit @ ..] = data else {
        return;
    };
    let issued = fixtures::signer(Role::Client).cert_der();
    let body = runnel_testing::certs::sequence_body(issued);
    let from_end = usize::from(u16::from_be_bytes([*from_end_high, *from_end_low]));
    let at = body.len() - from_end % (body.len() + 1);
    let cut = usize::from(*cut).min(body.len() - at);
    let edited = [&body[..at], edit, &body[at + cut..]].concat();
    let edited = runnel_testing::certs::sequence(&edited);
    if let Ok(identity) = msp.verify(&edited, now) {
        assert_eq!(
            edited,
            issued,
            "an edited certificate verified as {}",
            identity.id()
        );
    }
}

/// A network definition as a `_config` update writes it and every peer's validator
/// reads it ([`NetworkDefinition::from_bytes`]: JSON, each CA an X.509 certificate):
/// refused with an error, or a definition whose every check holds, that builds its MSP,
/// writes back ([`NetworkDefinition::to_bytes`]) to bytes that read as itself, and that
/// [`netconfig::check_update`] accepts as the next definition of the genesis network
/// exactly when it has the genesis channel and sequence 1, policies that
/// [`netconfig::check_policies`] accepts and no Raft cluster (the genesis has none).
/// What it accepts the validator can evaluate from then on: both policies parse over
/// its organisations, one admin of each meets them, and its trust applies to an MSP. A
/// refusal has a reason and is `BAD_CONFIG_UPDATE`. Reviewing it against the genesis
/// never panics, and shows no change against itself.
pub fn network_definition(data: &[u8]) {
    let Ok(definition) = NetworkDefinition::from_bytes(data) else {
        return;
    };
    assert_eq!(definition.check(), Ok(()));
    let msp = definition
        .msp()
        .expect("a checked definition builds its MSP");
    assert_eq!(msp.orgs(), definition.org_names());
    let written = definition.to_bytes();
    assert_eq!(
        NetworkDefinition::from_bytes(&written).as_ref(),
        Ok(&definition)
    );
    let genesis = NetworkDefinition::of(runnel_testing::network(), "main");
    let update = netconfig::update_payload(&[0; 32], None, &definition);
    let accepted = netconfig::check_update(&genesis, &update.rwsets);
    let next = definition.channel == genesis.channel
        && definition.sequence == 1
        && netconfig::check_policies(&definition).is_ok()
        && definition.cluster().is_empty();
    assert_eq!(accepted.is_ok(), next, "{accepted:?}");
    match accepted {
        Ok(accepted) => {
            let orgs = accepted.org_names();
            let admins: Vec<policy::Endorser> = orgs
                .iter()
                .map(|org| policy::Endorser::new(org.clone(), Role::Admin))
                .collect();
            let config = netconfig::update_policy(&accepted).expect("an accepted config policy");
            assert!(config.is_satisfied_by(&admins));
            let approvals = Policy::parse(&accepted.lifecycle_policy, &orgs)
                .expect("an accepted lifecycle policy");
            assert!(approvals.is_satisfied_by(&admins));
            let in_force = genesis.msp().expect("the genesis MSP");
            accepted
                .apply_to(&in_force)
                .expect("an accepted definition applies");
        }
        Err(refused) => {
            assert!(!refused.to_string().is_empty());
            assert!(matches!(
                refused.code(),
                ValidationCode::BadConfigUpdate | ValidationCode::IllegalWriteset
            ));
        }
    }
    let _ = netconfig::changes(&genesis, &definition);
    assert_eq!(
        netconfig::changes(&definition, &definition),
        Vec::<String>::new()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_takes_empty_input() {
        for (_, target) in TARGETS {
            target(&[]);
        }
    }

    fn seed(target: &str, name: &str) -> Vec<u8> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target)
            .join(format!("seed-{name}"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_seeds_reach_both_answers_of_the_rules_and_the_settings() {
        for (name, verdict) in [
            ("kv-put", Ok(())),
            ("empty", Ok(())),
            ("repeated-namespace", Err(ValidationCode::BadRwset)),
            ("nul-namespace", Err(ValidationCode::BadRwset)),
            ("range-backwards", Err(ValidationCode::BadRwset)),
            ("range-stopped-early", Ok(())),
        ] {
            assert_eq!(rules::check_rwset(&seed("rwset", name)), verdict, "{name}");
        }
        assert_eq!(rules::check_rwset(b"\xff"), Err(ValidationCode::BadPayload));
        for (name, accepted) in [
            ("template", true),
            ("empty", true),
            ("peer", true),
            ("orderer-blocks", true),
            ("tls", true),
            ("unknown-setting", false),
        ] {
            let text = String::from_utf8(seed("runnel_toml", name)).unwrap();
            assert_eq!(NodeConfig::parse(&text).is_ok(), accepted, "{name}");
        }
    }
}
