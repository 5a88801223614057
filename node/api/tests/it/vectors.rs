//! Golden vectors: the byte formats that the SDKs in other languages must reproduce,
//! computed here with runnel-api's own code and compared with the files committed in
//! `node/api/vectors/`, which sdk-ts (`test/vectors.test.ts`) and @runnel/contract
//! (`test/vectors.test.ts`) check their own code against. Every input is fixed: Ed25519
//! keys from fixed seeds, fixed timestamps, no clock and no randomness.
//!
//! A mismatch fails and names the vector. After a deliberate change of format, write the
//! files anew with `RUNNEL_WRITE_VECTORS=1 cargo test -p runnel-api --test it vectors`; the
//! other languages' tests then say what else must change.
//!
//! In the files, bytes are lowercase hex and u64 values decimal strings (a JavaScript
//! number holds 53 bits).

use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use prost::Message;
use serde::Serialize;
use serde_json::Value;

use runnel_api::identity::Signer;
use runnel_api::ids::ValidationCode;
use runnel_api::proto::{
    self, Endorsement, Proposal, ReadGrant, SignedProposal, SignedReadGrant, Transaction,
};
use runnel_api::{codes, grant, headers, merkle, tx};

/// Set to `1`, the test writes the files instead of comparing them.
const WRITE_ENV: &str = "RUNNEL_WRITE_VECTORS";
/// How to write the files anew, as each file and each failure says.
const REGENERATE: &str = "RUNNEL_WRITE_VECTORS=1 cargo test -p runnel-api --test it vectors";

/// The creator's certificate in every vector: opaque bytes to these formats (an id, a
/// grant and a proposal carry the DER as it is), so no CA or clock is needed.
const CREATOR_CERT: &[u8] = b"creator certificate (DER; opaque to these formats)";
/// The endorser's certificate, likewise.
const ENDORSER_CERT: &[u8] = b"endorser certificate (DER; opaque to these formats)";
/// The Ed25519 seed of the creator's key.
const CREATOR_SEED: [u8; 32] = [0x11; 32];
/// The Ed25519 seed of the endorser's key.
const ENDORSER_SEED: [u8; 32] = [0x22; 32];
/// The timestamp most vectors use, Unix milliseconds (2023-11-14).
const TIME_MS: u64 = 1_700_000_000_000;

#[test]
fn vectors() {
    let write = std::env::var(WRITE_ENV).is_ok_and(|value| value == "1");
    let transactions = transaction_vectors();
    let leaf_zero = transactions.transactions[0].signed.clone();
    let files = [
        (
            "tx.json",
            file(
                "Transaction ids and what creators and endorsers sign (node/api/src/tx.rs, \
                 ids.rs): the proposal and transaction encodings, their SHA-256, the \
                 domain-tagged messages and the Ed25519 signatures over them.",
                &transactions,
            ),
        ),
        (
            "grant.json",
            file(
                "Read grants (node/api/src/grant.rs, signed_grant): the encoded ReadGrant, \
                 the message signed (\"runnel.read.v1\" || sha256(grant)), the signature \
                 and the SignedReadGrant sent base64 in runnel-read-grant-bin.",
                &grant_vectors(),
            ),
        ),
        (
            "merkle.json",
            file(
                "A block's Merkle tree (node/api/src/merkle.rs): leaves, roots (RFC 6962) \
                 over the first `leaves` of them, and audit paths with whether \
                 verify_inclusion accepts them (RFC 9162 section 2.1.3.2).",
                &merkle_vectors(&hex::decode(&leaf_zero).expect("hex we wrote")),
            ),
        ),
        (
            "byte_list.json",
            file(
                "The byte list of contract arguments and identities (contracts/abi, \
                 encode_byte_list / decode_byte_list): u32 count, then u32 length and the \
                 bytes of each item, little-endian; malformed lists with the decoder's error.",
                &byte_list_vectors(),
            ),
        ),
        (
            "codes.json",
            file(
                "The names a client reads (node/api/src/headers.rs, codes.rs, ids.rs): the \
                 metadata headers, every error name of the runnel-error-code header, and \
                 the validation codes with their stored and api.proto numbers.",
                &code_vectors(),
            ),
        ),
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors");
    let mut failures = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(&dir).expect("create node/api/vectors");
            std::fs::write(&path, text).expect("write a vector file");
        } else if let Err(failure) = compare(&path, &text) {
            failures.push(failure);
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nA format changed. If the change is deliberate, write the vectors anew with\n  \
         {REGENERATE}\nand make sdk-ts and @runnel/contract agree: their tests read the \
         same files.",
        failures.join("\n")
    );
}

/// What a vector file holds: what it is, how to write it anew, then its sections.
#[derive(Serialize)]
struct VectorFile<'a, T: Serialize> {
    about: &'a str,
    regenerate: &'a str,
    #[serde(flatten)]
    sections: &'a T,
}

/// The text of a vector file: its sections in the order their struct declares them.
fn file(about: &str, sections: &impl Serialize) -> String {
    let file = VectorFile {
        about,
        regenerate: REGENERATE,
        sections,
    };
    serde_json::to_string_pretty(&file).expect("vectors serialize") + "\n"
}

/// Compares the file at `path` with the text computed, and says which vectors differ.
fn compare(path: &Path, computed: &str) -> Result<(), String> {
    let name = shown(path);
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{name}: cannot be read ({e})"))?;
    if text == computed {
        return Ok(());
    }
    let committed: Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: not JSON ({e})"))?;
    let computed: Value = serde_json::from_str(computed).expect("the JSON we wrote");
    let differences = differences(&committed, &computed);
    if differences.is_empty() {
        return Err(format!(
            "{name}: the same vectors, laid out otherwise than the test writes them"
        ));
    }
    Err(differences
        .iter()
        .map(|d| format!("{name}: {d}"))
        .collect::<Vec<_>>()
        .join("\n"))
}

fn shown(path: &Path) -> String {
    PathBuf::from("node/api/vectors")
        .join(path.file_name().unwrap_or_default())
        .display()
        .to_string()
}

/// Each section of `computed` that `committed` does not hold as computed: a vector by its
/// section and `name`, or a whole section.
fn differences(committed: &Value, computed: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let committed = committed.as_object().unwrap_or(&empty);
    let computed = computed.as_object().unwrap_or(&empty);
    let mut out = Vec::new();
    for (section, value) in computed {
        let Some(old) = committed.get(section) else {
            out.push(format!("section `{section}` is missing from the file"));
            continue;
        };
        match (named(value), named(old)) {
            (Some(new), Some(old)) => {
                for (name, vector) in &new {
                    match old.iter().find(|(n, _)| n == name) {
                        None => out.push(format!("{section} `{name}` is missing from the file")),
                        Some((_, was)) if was != vector => out.push(format!(
                            "{section} `{name}` differs from what runnel-api computes"
                        )),
                        Some(_) => {}
                    }
                }
                for (name, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
                    out.push(format!(
                        "{section} `{name}` is in the file but not computed"
                    ));
                }
            }
            _ if old != value => out.push(format!(
                "section `{section}` differs from what runnel-api computes"
            )),
            _ => {}
        }
    }
    for section in committed.keys().filter(|k| !computed.contains_key(*k)) {
        out.push(format!(
            "section `{section}` is in the file but not computed"
        ));
    }
    out
}

/// A list of vectors, each with a `name`, as (name, vector) pairs.
fn named(value: &Value) -> Option<Vec<(String, &Value)>> {
    value
        .as_array()?
        .iter()
        .map(|v| Some((v.get("name")?.as_str()?.to_string(), v)))
        .collect()
}

fn hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(bytes)
}

/// A signer with the key of `seed` and the certificate `cert` (opaque bytes).
fn signer(seed: &[u8; 32], cert: &[u8]) -> Signer {
    let key_pem = SigningKey::from_bytes(seed)
        .to_pkcs8_pem(LineEnding::LF)
        .expect("an Ed25519 key encodes");
    let cert_pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        base64(cert)
    );
    Signer::from_pem(&cert_pem, &key_pem).expect("the fixed signer loads")
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---- Transactions -----------------------------------------------------------------------

#[derive(Serialize)]
struct TxVectors {
    domains: Vec<DomainVector>,
    keys: Vec<KeyVector>,
    proposals: Vec<ProposalVector>,
    endorsements: Vec<EndorsementVector>,
    transactions: Vec<TransactionVector>,
}

#[derive(Serialize)]
struct DomainVector {
    name: &'static str,
    text: String,
    hex: String,
}

#[derive(Serialize)]
struct KeyVector {
    name: &'static str,
    seed: String,
    public_key: String,
    certificate: String,
}

#[derive(Serialize)]
struct ProposalVector {
    name: &'static str,
    signer: &'static str,
    channel: String,
    contract: String,
    function: String,
    args: Vec<String>,
    creator: String,
    nonce: String,
    timestamp_ms: String,
    /// The encoded `Proposal`.
    encoded: String,
    hash: String,
    message: String,
    signature: String,
    /// The encoded `SignedProposal`.
    signed: String,
    tx_id: String,
}

#[derive(Serialize)]
struct EndorsementVector {
    name: &'static str,
    signer: &'static str,
    proposal: &'static str,
    proposal_hash: String,
    payload: String,
    payload_hash: String,
    message: String,
    signature: String,
}

#[derive(Serialize)]
struct TransactionVector {
    name: &'static str,
    signer: &'static str,
    /// The proposal it carries, signed (its `signed`).
    proposal: &'static str,
    payload: String,
    endorsements: Vec<EndorsementPart>,
    /// The encoded `Transaction`.
    encoded: String,
    hash: String,
    message: String,
    signature: String,
    /// The encoded `SignedTransaction`: what is ordered, and hashed into a leaf.
    signed: String,
}

#[derive(Serialize)]
struct EndorsementPart {
    endorser: String,
    signature: String,
}

fn transaction_vectors() -> TxVectors {
    let creator = signer(&CREATOR_SEED, CREATOR_CERT);
    let endorser = signer(&ENDORSER_SEED, ENDORSER_CERT);
    let domains = [
        ("proposal", tx::PROPOSAL_DOMAIN),
        ("endorsement", tx::ENDORSEMENT_DOMAIN),
        ("transaction", tx::TRANSACTION_DOMAIN),
        ("read_grant", tx::READ_GRANT_DOMAIN),
        ("leaf", merkle::LEAF_DOMAIN),
    ]
    .map(|(name, tag)| DomainVector {
        name,
        text: String::from_utf8(tag.to_vec()).expect("domain tags are text"),
        hex: hex(tag),
    });
    let keys = [
        ("creator", &CREATOR_SEED, &creator),
        ("endorser", &ENDORSER_SEED, &endorser),
    ]
    .map(|(name, seed, signer)| KeyVector {
        name,
        seed: hex(seed),
        public_key: hex(signer.public_key()),
        certificate: hex(signer.cert_der()),
    });

    let long_arg: Vec<u8> = (0..300u32).map(|i| (i % 251) as u8).collect();
    let proposals = [
        (
            "invoke",
            Proposal {
                channel: "main".into(),
                contract: "token".into(),
                function: "transfer".into(),
                args: vec![b"alice".to_vec(), b"bob".to_vec(), b"100".to_vec()],
                creator: CREATOR_CERT.to_vec(),
                nonce: (0..tx::NONCE_BYTES as u8).collect(),
                timestamp_ms: TIME_MS,
            },
        ),
        // Every field at its default: proto3 encodes none of them.
        ("all defaults", Proposal::default()),
        (
            "empty and binary arguments, a long argument, the largest timestamp",
            Proposal {
                channel: "a-channel_2".into(),
                contract: "_lifecycle".into(),
                function: "approve".into(),
                args: vec![
                    Vec::new(),
                    vec![0x00, 0xff],
                    "é✓".as_bytes().to_vec(),
                    long_arg,
                ],
                creator: CREATOR_CERT.to_vec(),
                nonce: vec![0xab; 16],
                timestamp_ms: u64::MAX,
            },
        ),
    ];
    let proposals = proposals.map(|(name, proposal)| {
        let (signed, message) = tx::sign_proposal_with_message(&creator, &proposal);
        ProposalVector {
            name,
            signer: "creator",
            channel: proposal.channel.clone(),
            contract: proposal.contract.clone(),
            function: proposal.function.clone(),
            args: proposal.args.iter().map(hex).collect(),
            creator: hex(&proposal.creator),
            nonce: hex(&proposal.nonce),
            timestamp_ms: proposal.timestamp_ms.to_string(),
            encoded: hex(&signed.proposal),
            hash: hex(tx::sha256(&signed.proposal)),
            message: hex(&message),
            signature: hex(&signed.signature),
            signed: hex(signed.encode_to_vec()),
            tx_id: tx::tx_id(&proposal).to_hex(),
        }
    });

    let signed_proposal = SignedProposal::decode(
        hex::decode(&proposals[0].signed)
            .expect("hex we wrote")
            .as_slice(),
    )
    .expect("a signed proposal we encoded");
    let proposal_hash = tx::sha256(&signed_proposal.proposal);
    let payload = b"an encoded ResponsePayload, opaque here".to_vec();
    let payload_hash = tx::sha256(&payload);
    let endorsement_message = tx::endorsement_message(&proposal_hash, &payload_hash);
    let endorsement_signature = endorser.sign(&endorsement_message);
    let endorsements = vec![EndorsementVector {
        name: "invoke",
        signer: "endorser",
        proposal: "invoke",
        proposal_hash: hex(proposal_hash),
        payload: hex(&payload),
        payload_hash: hex(payload_hash),
        message: hex(&endorsement_message),
        signature: hex(endorsement_signature),
    }];

    let transaction = Transaction {
        proposal: Some(signed_proposal),
        payload: payload.clone(),
        endorsements: vec![Endorsement {
            endorser: ENDORSER_CERT.to_vec(),
            signature: endorsement_signature.to_vec(),
        }],
    };
    let (signed, message) = tx::sign_transaction_with_message(&creator, &transaction);
    let transactions = vec![TransactionVector {
        name: "invoke",
        signer: "creator",
        proposal: "invoke",
        payload: hex(&payload),
        endorsements: vec![EndorsementPart {
            endorser: hex(ENDORSER_CERT),
            signature: hex(endorsement_signature),
        }],
        encoded: hex(&signed.transaction),
        hash: hex(tx::sha256(&signed.transaction)),
        message: hex(&message),
        signature: hex(&signed.signature),
        signed: hex(signed.encode_to_vec()),
    }];

    TxVectors {
        domains: domains.into(),
        keys: keys.into(),
        proposals: proposals.into(),
        endorsements,
        transactions,
    }
}

// ---- Read grants ------------------------------------------------------------------------

#[derive(Serialize)]
struct GrantVectors {
    grants: Vec<GrantVector>,
}

#[derive(Serialize)]
struct GrantVector {
    name: &'static str,
    /// A key of tx.json.
    signer: &'static str,
    creator: String,
    channel: &'static str,
    not_before_ms: String,
    lifetime_ms: String,
    /// The encoded `ReadGrant`.
    grant: String,
    hash: String,
    message: String,
    signature: String,
    /// The encoded `SignedReadGrant`.
    signed: String,
}

fn grant_vectors() -> GrantVectors {
    let creator = signer(&CREATOR_SEED, CREATOR_CERT);
    let cases = [
        (
            "longest lifetime",
            "main",
            TIME_MS,
            grant::READ_GRANT_LIFETIME_MAX_MS,
        ),
        // A zero start is a default, which proto3 leaves out.
        ("from the epoch for a millisecond", "other-channel", 0, 1),
    ];
    let grants = cases.map(|(name, channel, not_before_ms, lifetime_ms)| {
        let signed = grant::signed_grant(&creator, channel, not_before_ms, lifetime_ms);
        let parts = SignedReadGrant::decode(signed.as_slice()).expect("a grant we encoded");
        let decoded = ReadGrant::decode(parts.grant.as_slice()).expect("a grant we encoded");
        assert_eq!(decoded.not_after_ms, not_before_ms + lifetime_ms);
        let hash = tx::sha256(&parts.grant);
        GrantVector {
            name,
            signer: "creator",
            creator: hex(CREATOR_CERT),
            channel,
            not_before_ms: not_before_ms.to_string(),
            lifetime_ms: lifetime_ms.to_string(),
            grant: hex(&parts.grant),
            hash: hex(hash),
            message: hex(tx::read_grant_message(&hash)),
            signature: hex(&parts.signature),
            signed: hex(&signed),
        }
    });
    GrantVectors {
        grants: grants.into(),
    }
}

// ---- Merkle tree ------------------------------------------------------------------------

#[derive(Serialize)]
struct MerkleVectors {
    leaves: Vec<LeafVector>,
    roots: Vec<RootVector>,
    proofs: Vec<ProofVector>,
}

#[derive(Serialize)]
struct LeafVector {
    name: String,
    timestamp_ms: String,
    /// The encoded `SignedTransaction` (any bytes, to the leaf).
    transaction: String,
    leaf: String,
}

#[derive(Serialize)]
struct RootVector {
    name: String,
    /// The tree is over this many leaves, the first of `leaves`.
    leaves: usize,
    root: String,
}

#[derive(Serialize)]
struct ProofVector {
    name: String,
    timestamp_ms: String,
    transaction: String,
    leaf: String,
    index: u64,
    count: u64,
    path: Vec<String>,
    root: String,
    /// What verify_inclusion answers.
    valid: bool,
}

/// Leaf 0 is `first` (tx.json's signed transaction) ordered at [`TIME_MS`].
fn merkle_vectors(first: &[u8]) -> MerkleVectors {
    let inputs: Vec<(String, u64, Vec<u8>)> = vec![
        (
            "tx.json's signed transaction".into(),
            TIME_MS,
            first.to_vec(),
        ),
        (
            "a transaction".into(),
            TIME_MS + 1,
            b"signed transaction 1".to_vec(),
        ),
        ("empty bytes at time zero".into(), 0, Vec::new()),
        ("the largest timestamp".into(), u64::MAX, vec![0xff; 4]),
        (
            "300 bytes".into(),
            TIME_MS + 4,
            (0..300u32).map(|i| (i % 256) as u8).collect(),
        ),
        (
            "another transaction".into(),
            TIME_MS + 5,
            b"signed transaction 5".to_vec(),
        ),
        (
            "the last transaction".into(),
            TIME_MS + 6,
            b"signed transaction 6".to_vec(),
        ),
    ];
    let leaves: Vec<tx::Hash> = inputs
        .iter()
        .map(|(_, timestamp_ms, transaction)| merkle::leaf(*timestamp_ms, transaction))
        .collect();
    let leaf_vectors = inputs
        .iter()
        .zip(&leaves)
        .map(|((name, timestamp_ms, transaction), leaf)| LeafVector {
            name: name.clone(),
            timestamp_ms: timestamp_ms.to_string(),
            transaction: hex(transaction),
            leaf: hex(leaf),
        })
        .collect();
    let roots = (0..=leaves.len())
        .map(|n| RootVector {
            name: format!("{n} leaves"),
            leaves: n,
            root: hex(merkle::merkle_root(&leaves[..n])),
        })
        .collect();

    // A proof of leaf `at` (its timestamp and transaction) as leaf `index` of `count`.
    let proof =
        |name: String, at: usize, index: u64, count: u64, path: &[tx::Hash], root: &tx::Hash| {
            let (_, timestamp_ms, transaction) = &inputs[at];
            let leaf = merkle::leaf(*timestamp_ms, transaction);
            ProofVector {
                name,
                timestamp_ms: timestamp_ms.to_string(),
                transaction: hex(transaction),
                leaf: hex(leaf),
                index,
                count,
                path: path.iter().map(hex).collect(),
                root: hex(root),
                valid: merkle::verify_inclusion(&leaf, index, count, path, root),
            }
        };
    let mut proofs = Vec::new();
    for n in [1, 2, 3, 4, 5, 7] {
        let root = merkle::merkle_root(&leaves[..n]);
        for m in 0..n {
            let path = merkle::inclusion_path(&leaves[..n], m);
            let name = format!("leaf {m} of {n}");
            let vector = proof(name, m, m as u64, n as u64, &path, &root);
            assert!(vector.valid, "{}", vector.name);
            proofs.push(vector);
        }
    }
    // Refused proofs: each changes one thing of leaf 3 of 5's.
    let root = merkle::merkle_root(&leaves[..5]);
    let path = merkle::inclusion_path(&leaves[..5], 3);
    let mut flipped = path.clone();
    flipped[0][0] ^= 1;
    let mut extended = path.clone();
    extended.push(root);
    let mut wrong_root = root;
    wrong_root[31] ^= 1;
    let refused = [
        ("another leaf", 1, 3, 5, path.clone(), root),
        ("another index", 3, 2, 5, path.clone(), root),
        ("the index past the end", 3, 5, 5, path.clone(), root),
        ("another count", 3, 3, 4, path.clone(), root),
        ("a sibling with one bit flipped", 3, 3, 5, flipped, root),
        (
            "a sibling too few",
            3,
            3,
            5,
            path[..path.len() - 1].to_vec(),
            root,
        ),
        ("a sibling too many", 3, 3, 5, extended, root),
        ("another root", 3, 3, 5, path.clone(), wrong_root),
    ];
    for (name, at, index, count, path, root) in refused {
        let vector = proof(
            format!("leaf 3 of 5, {name}"),
            at,
            index,
            count,
            &path,
            &root,
        );
        assert!(!vector.valid, "{}", vector.name);
        proofs.push(vector);
    }
    // The same transaction at another time is another leaf: a retimed proof fails.
    let (_, timestamp_ms, transaction) = &inputs[3];
    let retimed_ms = timestamp_ms - 1;
    let leaf = merkle::leaf(retimed_ms, transaction);
    let retimed = ProofVector {
        name: "leaf 3 of 5, retimed".into(),
        timestamp_ms: retimed_ms.to_string(),
        transaction: hex(transaction),
        leaf: hex(leaf),
        index: 3,
        count: 5,
        path: path.iter().map(hex).collect(),
        root: hex(root),
        valid: merkle::verify_inclusion(&leaf, 3, 5, &path, &root),
    };
    assert!(!retimed.valid);
    proofs.push(retimed);

    MerkleVectors {
        leaves: leaf_vectors,
        roots,
        proofs,
    }
}

// ---- Byte lists -------------------------------------------------------------------------

#[derive(Serialize)]
struct ByteListVectors {
    lists: Vec<ByteListVector>,
    malformed: Vec<MalformedByteList>,
}

#[derive(Serialize)]
struct ByteListVector {
    name: &'static str,
    items: Vec<String>,
    encoded: String,
}

#[derive(Serialize)]
struct MalformedByteList {
    name: &'static str,
    encoded: String,
    /// The decoder's message (runnel_abi::ByteListError's Display).
    error: String,
}

fn byte_list_vectors() -> ByteListVectors {
    let lists: [(&str, Vec<Vec<u8>>); 5] = [
        ("no items", vec![]),
        ("one empty item", vec![Vec::new()]),
        (
            "an identity",
            vec![
                b"Org1".to_vec(),
                b"client".to_vec(),
                b"alice".to_vec(),
                CREATOR_CERT.to_vec(),
            ],
        ),
        (
            "empty items between others",
            vec![Vec::new(), b"x".to_vec(), Vec::new(), vec![0x00, 0xff]],
        ),
        (
            "lengths of two bytes",
            vec![
                vec![0x5a; 256],
                (0..300u32).map(|i| (i % 256) as u8).collect(),
            ],
        ),
    ];
    let lists = lists.map(|(name, items)| {
        let encoded = runnel_abi::encode_byte_list(&items);
        assert_eq!(runnel_abi::decode_byte_list(&encoded).as_ref(), Ok(&items));
        ByteListVector {
            name,
            items: items.iter().map(hex).collect(),
            encoded: hex(encoded),
        }
    });
    let malformed: [(&str, &[u8]); 7] = [
        ("nothing", &[]),
        ("a count cut short", &[1, 0, 0]),
        ("an item announced, none there", &[1, 0, 0, 0]),
        (
            "a count past what the bytes can hold",
            &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
        ),
        (
            "an item longer than the bytes",
            &[1, 0, 0, 0, 5, 0, 0, 0, b'a', b'b', b'c'],
        ),
        (
            "a length cut short",
            &[2, 0, 0, 0, 2, 0, 0, 0, b'a', b'b', 0, 0],
        ),
        (
            "bytes after the last item",
            &[1, 0, 0, 0, 1, 0, 0, 0, b'a', b'b'],
        ),
    ];
    let malformed = malformed.map(|(name, encoded)| MalformedByteList {
        name,
        encoded: hex(encoded),
        error: runnel_abi::decode_byte_list(encoded)
            .expect_err("a malformed list")
            .to_string(),
    });
    ByteListVectors {
        lists: lists.into(),
        malformed: malformed.into(),
    }
}

// ---- Names ------------------------------------------------------------------------------

#[derive(Serialize)]
struct CodeVectors {
    headers: Vec<HeaderVector>,
    error_names: Vec<&'static str>,
    validation_codes: Vec<ValidationCodeVector>,
}

#[derive(Serialize)]
struct HeaderVector {
    name: &'static str,
    header: &'static str,
}

#[derive(Serialize)]
struct ValidationCodeVector {
    name: &'static str,
    /// The number stored in the ledger (`ValidationCode as u8`).
    stored: u8,
    /// The number in api.proto's `ValidationCode`.
    proto: i32,
}

fn code_vectors() -> CodeVectors {
    let headers = vec![
        HeaderVector {
            name: "error code",
            header: headers::ERROR_CODE_HEADER,
        },
        HeaderVector {
            name: "validation code",
            header: headers::VALIDATION_CODE_HEADER,
        },
        HeaderVector {
            name: "error org",
            header: headers::ERROR_ORG_HEADER,
        },
        HeaderVector {
            name: "forwarded",
            header: headers::FORWARDED_HEADER,
        },
        HeaderVector {
            name: "read grant",
            header: grant::READ_GRANT_HEADER,
        },
    ];
    let validation_codes = ValidationCode::ALL
        .iter()
        .map(|code| {
            let proto_name = format!("VALIDATION_CODE_{}", code.as_str());
            let proto = proto::ValidationCode::from_str_name(&proto_name)
                .unwrap_or_else(|| panic!("api.proto has no {proto_name}"));
            ValidationCodeVector {
                name: code.as_str(),
                stored: *code as u8,
                proto: proto as i32,
            }
        })
        .collect();
    CodeVectors {
        headers,
        error_names: codes::ERROR_NAMES.to_vec(),
        validation_codes,
    }
}
