//! Transaction formats: the hashes and the exact byte strings that clients, endorsers and
//! the validator sign and check, and helpers that build signed proposals.
//!
//! Every signature covers a domain tag and a SHA-256 hash, never bare message bytes, so a
//! signature made for one purpose (a proposal) can never be replayed as another (a
//! transaction), and big messages are hashed once:
//!
//! | who      | signs                                                          |
//! |----------|----------------------------------------------------------------|
//! | creator  | `"runnel.proposal.v1"    ‖ sha256(Proposal bytes)`             |
//! | endorser | `"runnel.endorsement.v1" ‖ proposal hash ‖ sha256(payload)`    |
//! | creator  | `"runnel.transaction.v1" ‖ sha256(Transaction bytes)`          |

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message;
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};

use crate::identity::Signer;
use crate::ids::TxId;
use crate::proto::{Proposal, SignedProposal, SignedTransaction, Transaction};

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// Domain tag of a creator's signature over a proposal.
pub const PROPOSAL_DOMAIN: &[u8] = b"runnel.proposal.v1";
/// Domain tag of an endorser's signature over a response.
pub const ENDORSEMENT_DOMAIN: &[u8] = b"runnel.endorsement.v1";
/// Domain tag of a creator's signature over a transaction.
pub const TRANSACTION_DOMAIN: &[u8] = b"runnel.transaction.v1";
/// Domain tag of a reader's signature over a read grant.
pub const READ_GRANT_DOMAIN: &[u8] = b"runnel.read.v1";

/// Bytes of nonce [`new_proposal`] draws (Fabric uses 24).
pub const NONCE_BYTES: usize = 24;

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

fn tagged(domain: &[u8], hashes: &[&Hash]) -> Vec<u8> {
    let mut message = Vec::with_capacity(domain.len() + 32 * hashes.len());
    message.extend_from_slice(domain);
    for hash in hashes {
        message.extend_from_slice(&hash[..]);
    }
    message
}

/// What a creator signs for a proposal whose encoding hashes to `proposal_hash`.
pub fn proposal_message(proposal_hash: &Hash) -> Vec<u8> {
    tagged(PROPOSAL_DOMAIN, &[proposal_hash])
}

/// What an endorser signs for a response payload.
pub fn endorsement_message(proposal_hash: &Hash, payload_hash: &Hash) -> Vec<u8> {
    tagged(ENDORSEMENT_DOMAIN, &[proposal_hash, payload_hash])
}

/// What a creator signs for a transaction whose encoding hashes to `transaction_hash`.
pub fn transaction_message(transaction_hash: &Hash) -> Vec<u8> {
    tagged(TRANSACTION_DOMAIN, &[transaction_hash])
}

/// What a reader signs for a read grant whose encoding hashes to `grant_hash`.
pub fn read_grant_message(grant_hash: &Hash) -> Vec<u8> {
    tagged(READ_GRANT_DOMAIN, &[grant_hash])
}

/// Most endorsements a transaction may carry: a network constant, the same on every
/// orderer and peer. The policy that decides a transaction (a contract's, the lifecycle
/// or the configuration policy) names at most [`crate::policy::POLICY_PRINCIPALS_MAX`]
/// principals, and each endorsement that counts is a distinct identity meeting one of
/// them, so no policy ever needs more; a transaction carrying more holds endorsements no
/// policy uses, only bytes that every orderer and peer would store. Orderers refuse it
/// (`TOO_MANY_ENDORSEMENTS`) and validators mark it so.
pub const ENDORSEMENTS_MAX: usize = crate::policy::POLICY_PRINCIPALS_MAX;

/// How far a proposal's timestamp may lie from the clock of the node that checks it, by
/// default: Fabric's 15 minutes. A network setting (`[network] proposal_window_s`): the
/// validator checks it against the orderer's timestamp, so every peer must use the same.
pub const PROPOSAL_WINDOW: Duration = Duration::from_secs(15 * 60);

/// A proposal timestamp too far from a clock: the creator's clock is wrong, or the
/// proposal is old (a replay) or post-dated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the proposal's timestamp ({proposal_ms} ms) is {} s from the clock that checks it ({clock_ms} ms); the network allows {} s (proposal_window_s)",
    proposal_ms.abs_diff(*clock_ms) / 1000,
    window_ms / 1000
)]
pub struct OutsideWindow {
    /// The proposal's timestamp, Unix milliseconds.
    pub proposal_ms: u64,
    /// The clock it was checked against, Unix milliseconds.
    pub clock_ms: u64,
    /// The window allowed on either side, in milliseconds.
    pub window_ms: u64,
}

/// `Ok` when `proposal_ms` lies within `window` of `clock_ms`, on either side.
pub fn check_window(
    proposal_ms: u64,
    clock_ms: u64,
    window: Duration,
) -> Result<(), OutsideWindow> {
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if proposal_ms.abs_diff(clock_ms) <= window_ms {
        Ok(())
    } else {
        Err(OutsideWindow {
            proposal_ms,
            clock_ms,
            window_ms,
        })
    }
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Unix microseconds now (trace timestamps).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Unix seconds now (certificate validity checks at admission).
pub fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A proposal by `creator` to call `contract.function(args)` on `channel`, with a fresh
/// random nonce and the current time.
pub fn new_proposal(
    channel: &str,
    contract: &str,
    function: &str,
    args: Vec<Vec<u8>>,
    creator: &Signer,
) -> Proposal {
    let mut nonce = vec![0u8; NONCE_BYTES];
    OsRng.fill_bytes(&mut nonce);
    Proposal {
        channel: channel.to_string(),
        contract: contract.to_string(),
        function: function.to_string(),
        args,
        creator: creator.cert_der().to_vec(),
        nonce,
        timestamp_ms: now_ms(),
    }
}

/// The transaction id of a proposal.
pub fn tx_id(proposal: &Proposal) -> TxId {
    TxId::derive(&proposal.nonce, &proposal.creator)
}

/// Encodes and signs `proposal` as its creator.
pub fn sign_proposal(signer: &Signer, proposal: &Proposal) -> SignedProposal {
    sign_proposal_with_message(signer, proposal).0
}

/// [`sign_proposal`], with the exact message signed (what a signature cache keys on).
pub fn sign_proposal_with_message(
    signer: &Signer,
    proposal: &Proposal,
) -> (SignedProposal, Vec<u8>) {
    let bytes = proposal.encode_to_vec();
    let message = proposal_message(&sha256(&bytes));
    let signature = signer.sign(&message).to_vec();
    let signed = SignedProposal {
        proposal: bytes,
        signature,
    };
    (signed, message)
}

/// The layers of an encoded `SignedTransaction`: the envelope, the transaction and its
/// proposal (an absent proposal decodes as an empty one). The one decoding every stage
/// uses, so that all of them name and read a transaction alike.
pub fn decode_transaction(
    bytes: &[u8],
) -> Result<(SignedTransaction, Transaction, Proposal), prost::DecodeError> {
    let signed = SignedTransaction::decode(bytes)?;
    let transaction = Transaction::decode(signed.transaction.as_slice())?;
    let proposal = Proposal::decode(
        transaction
            .proposal
            .as_ref()
            .map(|p| p.proposal.as_slice())
            .unwrap_or_default(),
    )?;
    Ok((signed, transaction, proposal))
}

/// Signs an encoded `Transaction` as its creator, exactly as given: what a client does
/// with the bytes the node's Endorse returns.
pub fn sign_transaction_bytes(signer: &Signer, transaction: Vec<u8>) -> SignedTransaction {
    let signature = signer
        .sign(&transaction_message(&sha256(&transaction)))
        .to_vec();
    SignedTransaction {
        transaction,
        signature,
    }
}

/// Encodes and signs `transaction` as its creator.
pub fn sign_transaction(signer: &Signer, transaction: &Transaction) -> SignedTransaction {
    sign_transaction_with_message(signer, transaction).0
}

/// [`sign_transaction`], with the exact message signed (what a signature cache keys on).
pub fn sign_transaction_with_message(
    signer: &Signer,
    transaction: &Transaction,
) -> (SignedTransaction, Vec<u8>) {
    let bytes = transaction.encode_to_vec();
    let message = transaction_message(&sha256(&bytes));
    let signature = signer.sign(&message).to_vec();
    let signed = SignedTransaction {
        transaction: bytes,
        signature,
    };
    (signed, message)
}
