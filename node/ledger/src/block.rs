//! Virtual blocks: signed boundaries over the ordered stream, and proofs that a
//! transaction lies inside one.
//!
//! A block is not a batch that transactions wait in. The orderer gives every transaction
//! its [`Seq`] and delivers it at once; from time to time it draws a boundary over the
//! contiguous range of seqs since the previous boundary and signs a [`Seal`] over it. A
//! block therefore never delays a transaction: it commits, after the fact, to what the
//! stream already holds.
//!
//! Seals form a hash chain. Block 1 starts at seq 1 and its `previous_hash` is
//! [`GENESIS_HASH`]; every later block starts at the seq after its predecessor's last, and
//! its `previous_hash` is the SHA-256 of its predecessor's encoded `BlockSeal` bytes. The
//! orderer signs `"runnel.seal.v1" ‖ sha256(BlockSeal bytes)`, and a peer checks each
//! delivered seal with [`SealChain::accept`] before it moves past it.
//!
//! A seal's `tx_root` is the Merkle tree hash of RFC 6962 section 2.1 over the [`leaf`]s
//! of the block's transactions, in seq order: each the SHA-256 of [`LEAF_DOMAIN`], the
//! orderer's timestamp for its seq and its `SignedTransaction` bytes. The tree is a wire
//! format clients check too, so it lives in runnel-api's `merkle`, re-exported here.
//! [`prove`] gives the audit path of one transaction, and [`verify_proof`] checks it
//! against a seal (RFC 9162 section 2.1.3.2), so a client can keep proof of its
//! transaction's place in a signed block without the rest of the block.

use prost::Message;

use crate::identity::{Identity, IdentityError, Msp, NetworkDefinition, OrdererNode, Role, Signer};
use crate::ids::{BlockNumber, Seq};
use crate::proto::{BlockSeal, InclusionProof, SealSignature, SignedSeal};
use crate::tx::{Hash, sha256};

pub use runnel_api::merkle::{LEAF_DOMAIN, inclusion_path, leaf, merkle_root, verify_inclusion};

/// Domain tag of the orderer's signature over a seal.
pub const SEAL_DOMAIN: &[u8] = b"runnel.seal.v1";

/// The `previous_hash` of block 1.
pub const GENESIS_HASH: Hash = [0; 32];
/// Distinct orderers whose signatures a seal needs at the least. Solo and Raft ordering
/// tolerate crashes, not lies: the orderer that cut the block signs it alone. A
/// Byzantine-fault-tolerant cluster needs `n - f` of its `n` members
/// ([`NetworkDefinition::seal_quorum`], [`Sealers::required`]), in the same field.
pub const SEAL_SIGNERS_REQUIRED: usize = 1;
/// Signatures a seal may carry at most, so that a seal cannot make a peer verify without
/// bound (a BFT cluster of 3f+1 = 31 members needs 21).
pub const SEAL_SIGNATURES_MAX: usize = 32;

/// Milliseconds per second: seal timestamps are milliseconds, certificate validity seconds.
const MS_PER_SECOND: u64 = 1_000;

/// A block's seal: the range of the stream it covers, the seal before it, and the Merkle
/// root over its transactions. Encoded as a `BlockSeal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seal {
    /// The block's number: 1, 2, 3, ...
    pub number: BlockNumber,
    /// The first transaction's seq.
    pub first: Seq,
    /// The last transaction's seq (inclusive).
    pub last: Seq,
    /// SHA-256 of the previous block's `BlockSeal` bytes; [`GENESIS_HASH`] for block 1.
    pub previous_hash: Hash,
    /// [`merkle_root`] over the [`leaf`] of each transaction, in seq order.
    pub tx_root: Hash,
    /// Unix milliseconds, the orderer's clock when it sealed.
    pub timestamp_ms: u64,
}

impl Seal {
    /// The seal of block `number` over the transactions whose [`leaf`]s are `leaves`
    /// (seqs first..=first+len-1), chained to `previous_hash`.
    ///
    /// # Panics
    ///
    /// If `leaves` is empty: a block holds at least one transaction.
    pub fn new(
        number: BlockNumber,
        first: Seq,
        leaves: &[Hash],
        previous_hash: Hash,
        timestamp_ms: u64,
    ) -> Seal {
        assert!(!leaves.is_empty(), "a block holds at least one transaction");
        Seal {
            number,
            first,
            last: Seq(first.0 + (leaves.len() as u64 - 1)),
            previous_hash,
            tx_root: merkle_root(leaves),
            timestamp_ms,
        }
    }

    /// The encoded `BlockSeal`: the bytes the orderer signs and the next seal hashes.
    pub fn encode(&self) -> Vec<u8> {
        BlockSeal {
            number: self.number.0,
            first_seq: self.first.0,
            last_seq: self.last.0,
            previous_hash: self.previous_hash.to_vec(),
            tx_root: self.tx_root.to_vec(),
            timestamp_ms: self.timestamp_ms,
        }
        .encode_to_vec()
    }

    /// Decodes a `BlockSeal`. Refused ([`BlockError::BadSeal`]) unless it decodes, both
    /// hashes are 32 bytes, the number and first seq are not 0, the last seq is not before
    /// the first, and `bytes` is exactly the seal's canonical encoding (so that a seal has
    /// one hash).
    pub fn decode(bytes: &[u8]) -> Result<Seal, BlockError> {
        let proto = BlockSeal::decode(bytes)
            .map_err(|e| BlockError::BadSeal(format!("not a block seal: {e}")))?;
        let seal = Seal {
            number: BlockNumber(proto.number),
            first: Seq(proto.first_seq),
            last: Seq(proto.last_seq),
            previous_hash: hash_field("previous_hash", &proto.previous_hash)?,
            tx_root: hash_field("tx_root", &proto.tx_root)?,
            timestamp_ms: proto.timestamp_ms,
        };
        if seal.number == BlockNumber(0) {
            return Err(BlockError::BadSeal(
                "block number 0 is genesis, which has no seal".to_string(),
            ));
        }
        if seal.first == Seq::ZERO {
            return Err(BlockError::BadSeal(
                "first seq is 0; the stream starts at 1".to_string(),
            ));
        }
        if seal.last < seal.first {
            return Err(BlockError::BadSeal(format!(
                "last seq {} is before first seq {}",
                seal.last, seal.first
            )));
        }
        if seal.encode() != bytes {
            return Err(BlockError::BadSeal(
                "not the canonical encoding of a block seal".to_string(),
            ));
        }
        Ok(seal)
    }

    /// How many transactions the block holds.
    pub fn tx_count(&self) -> u64 {
        self.last
            .0
            .checked_sub(self.first.0)
            .map_or(0, |span| span.saturating_add(1))
    }

    /// Whether the transaction at `seq` is in the block.
    pub fn contains(&self, seq: Seq) -> bool {
        self.first <= seq && seq <= self.last
    }
}

fn hash_field(what: &str, bytes: &[u8]) -> Result<Hash, BlockError> {
    Hash::try_from(bytes)
        .map_err(|_| BlockError::BadSeal(format!("{what} is {} bytes, not 32", bytes.len())))
}

/// What the orderer signs for a seal whose `BlockSeal` bytes hash to `seal_hash`.
fn seal_message(seal_hash: &Hash) -> Vec<u8> {
    let mut message = Vec::with_capacity(SEAL_DOMAIN.len() + seal_hash.len());
    message.extend_from_slice(SEAL_DOMAIN);
    message.extend_from_slice(seal_hash);
    message
}

/// A seal with the orderer's signature, as stored and delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSealed {
    /// The seal.
    pub seal: Seal,
    /// The encoded `SignedSeal`.
    pub bytes: Vec<u8>,
    /// SHA-256 of the encoded `BlockSeal` bytes: what the next seal's `previous_hash`
    /// holds.
    pub hash: Hash,
}

/// Encodes `seal` and signs it as `orderer`, over `"runnel.seal.v1" ‖ sha256(BlockSeal bytes)`.
pub fn sign_seal(orderer: &Signer, seal: Seal) -> SignedSealed {
    let seal_bytes = seal.encode();
    let hash = sha256(&seal_bytes);
    let signature = orderer.sign(&seal_message(&hash)).to_vec();
    let bytes = SignedSeal {
        seal: seal_bytes,
        signatures: vec![SealSignature {
            orderer: orderer.cert_der().to_vec(),
            signature,
        }],
    }
    .encode_to_vec();
    SignedSealed { seal, bytes, hash }
}

/// One orderer's signature over the seal whose `BlockSeal` bytes hash to `seal_hash`: what
/// each member of a Byzantine-fault-tolerant cluster contributes to a seal.
pub fn seal_signature(orderer: &Signer, seal_hash: &Hash) -> SealSignature {
    SealSignature {
        orderer: orderer.cert_der().to_vec(),
        signature: orderer.sign(&seal_message(seal_hash)).to_vec(),
    }
}

/// `seal` with `signatures` (each from [`seal_signature`]), encoded as a `SignedSeal`.
pub fn signed_by(seal: Seal, signatures: Vec<SealSignature>) -> SignedSealed {
    let seal_bytes = seal.encode();
    let hash = sha256(&seal_bytes);
    let bytes = SignedSeal {
        seal: seal_bytes,
        signatures,
    }
    .encode_to_vec();
    SignedSealed { seal, bytes, hash }
}

/// Decodes a `SignedSeal` without checking its signature: for reading back seals that
/// were verified when they were stored.
pub fn decode_signed_seal(bytes: &[u8]) -> Result<SignedSealed, BlockError> {
    decode_parts(bytes).map(|(sealed, _)| sealed)
}

fn decode_parts(bytes: &[u8]) -> Result<(SignedSealed, SignedSeal), BlockError> {
    let signed = SignedSeal::decode(bytes)
        .map_err(|e| BlockError::BadSeal(format!("not a signed seal: {e}")))?;
    let seal = Seal::decode(&signed.seal)?;
    let sealed = SignedSealed {
        seal,
        bytes: bytes.to_vec(),
        hash: sha256(&signed.seal),
    };
    Ok((sealed, signed))
}

/// Who may sign a seal: an orderer whose certificate the MSP of a network definition
/// trusts (its CA, not revoked, valid at the seal's time, role orderer) and, when that
/// definition names the ordering service's nodes, one of them (its organisation and
/// certificate CN are a named orderer's). Which definition applies to a seal is the
/// caller's to choose; peers and orderers take the one in force once the seal's last
/// transaction is applied ([`crate::seal_trust::SealTrust::after`]).
#[derive(Debug, Clone, Copy)]
pub struct Sealers<'a> {
    msp: &'a Msp,
    /// The orderers the definition names; `None` when it names none (a single node's
    /// embedded network), and then any orderer of `msp` may sign.
    named: Option<&'a [OrdererNode]>,
    /// The definition's sequence, for errors.
    sequence: u64,
    /// Distinct orderers whose signatures a seal needs.
    required: usize,
}

impl<'a> Sealers<'a> {
    /// Any orderer whose certificate `msp` trusts: for a ledger given no network
    /// definition, and for checks of a seal's chain and contents alone.
    pub fn any_orderer(msp: &'a Msp) -> Sealers<'a> {
        Sealers {
            msp,
            named: None,
            sequence: 0,
            required: SEAL_SIGNERS_REQUIRED,
        }
    }

    /// The orderers `definition` names (any orderer of `msp` if it names none), trusted
    /// through `msp`, which must be the definition's own ([`NetworkDefinition::msp`]).
    pub fn of(definition: &'a NetworkDefinition, msp: &'a Msp) -> Sealers<'a> {
        Sealers {
            msp,
            named: (!definition.orderers.is_empty()).then_some(definition.orderers.as_slice()),
            sequence: definition.sequence,
            required: definition.seal_quorum().max(SEAL_SIGNERS_REQUIRED),
        }
    }

    /// Distinct orderers whose signatures a seal needs: `n - f` of a Byzantine-fault-
    /// tolerant cluster's `n`, one otherwise.
    pub fn required(&self) -> usize {
        self.required
    }

    /// The orderer whose certificate is `cert_der`, if it may sign a seal of time `at`
    /// (Unix seconds).
    pub fn verify(&self, cert_der: &[u8], at: i64) -> Result<std::sync::Arc<Identity>, BlockError> {
        let orderer = self.msp.verify(cert_der, at).map_err(BlockError::Orderer)?;
        orderer
            .require_role(&[Role::Orderer])
            .map_err(BlockError::Orderer)?;
        // A node the definition gives a key signs with that key alone.
        if let Some(named) = self.named
            && !named.iter().any(|node| {
                node.org == orderer.org
                    && node.name == orderer.name
                    && (node.key.is_empty() || node.key == hex::encode(orderer.key))
            })
        {
            return Err(BlockError::NotAMember {
                orderer: orderer.id(),
                sequence: self.sequence,
            });
        }
        Ok(orderer)
    }

    /// The orderer whose `signature` it is, if that orderer may sign `seal` (whose
    /// `BlockSeal` bytes hash to `seal_hash`) and the signature holds over it.
    pub fn check(
        &self,
        signature: &SealSignature,
        seal: &Seal,
        seal_hash: &Hash,
    ) -> Result<std::sync::Arc<Identity>, BlockError> {
        self.check_hash(signature, seal_hash, unix_seconds(seal.timestamp_ms))
    }

    /// The orderer whose `signature` it is, if that orderer may sign a seal of time `at`
    /// (Unix seconds) and the signature holds over the seal whose `BlockSeal` bytes hash
    /// to `seal_hash`: for a seal known only by its hash.
    pub fn check_hash(
        &self,
        signature: &SealSignature,
        seal_hash: &Hash,
        at: i64,
    ) -> Result<std::sync::Arc<Identity>, BlockError> {
        let orderer = self.verify(&signature.orderer, at)?;
        orderer
            .verify(&seal_message(seal_hash), &signature.signature)
            .map_err(|_| BlockError::BadSignature)?;
        Ok(orderer)
    }

    /// Whether `signer` may sign a seal of time `timestamp_ms`.
    pub fn admit(&self, signer: &Signer, timestamp_ms: u64) -> Result<(), BlockError> {
        self.verify(signer.cert_der(), unix_seconds(timestamp_ms))
            .map(drop)
    }
}

/// Checks a seal's signatures: between [`Sealers::required`] and
/// [`SEAL_SIGNATURES_MAX`] of them, each from a distinct orderer that `sealers` admits at
/// the seal's own time, and each over the seal. Every signature present must verify: one
/// bad signature refuses the seal, so a seal never carries a claim that does not hold.
fn verify_signatures(
    sealed: &SignedSealed,
    signatures: &[SealSignature],
    sealers: &Sealers<'_>,
) -> Result<(), BlockError> {
    let required = sealers.required();
    if signatures.len() < required || signatures.len() > SEAL_SIGNATURES_MAX {
        return Err(BlockError::BadSeal(format!(
            "{} signatures; a seal of this ordering service carries {required} to \
             {SEAL_SIGNATURES_MAX}, of distinct orderers",
            signatures.len()
        )));
    }
    let mut signers = Vec::with_capacity(signatures.len());
    for signature in signatures {
        let orderer = sealers.check(signature, &sealed.seal, &sealed.hash)?;
        // One orderer is one name and one key: a second certificate for either counts
        // for nothing more.
        let signer = orderer.id();
        if signers
            .iter()
            .any(|(name, key)| *name == signer || *key == orderer.key)
        {
            return Err(BlockError::BadSeal(format!(
                "orderer {signer} signs the seal twice"
            )));
        }
        signers.push((signer, orderer.key));
    }
    Ok(())
}

/// Unix seconds of a millisecond timestamp, for certificate validity checks.
fn unix_seconds(timestamp_ms: u64) -> i64 {
    i64::try_from(timestamp_ms / MS_PER_SECOND).unwrap_or(i64::MAX)
}

/// What a peer knows before accepting the next seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealChain {
    /// The last accepted block (0 at genesis).
    number: BlockNumber,
    /// The last seq it covered ([`Seq::ZERO`] at genesis).
    last: Seq,
    /// The hash of its `BlockSeal` bytes ([`GENESIS_HASH`] at genesis).
    hash: Hash,
}

impl SealChain {
    /// Before block 1: the next block is 1, starting at seq 1, chained to [`GENESIS_HASH`].
    pub fn genesis() -> SealChain {
        SealChain {
            number: BlockNumber(0),
            last: Seq::ZERO,
            hash: GENESIS_HASH,
        }
    }

    /// Resumes after a stored seal.
    pub fn after(last: &SignedSealed) -> SealChain {
        SealChain {
            number: last.seal.number,
            last: last.seal.last,
            hash: last.hash,
        }
    }

    /// The number the next seal must have.
    pub fn next_number(&self) -> BlockNumber {
        BlockNumber(self.number.0 + 1)
    }

    /// The seq the next block must start at.
    pub fn next_first(&self) -> Seq {
        self.last.next()
    }

    /// The `previous_hash` the next seal must hold.
    pub fn previous_hash(&self) -> Hash {
        self.hash
    }

    /// Verifies a delivered `SignedSeal` (bytes) as the next one, for a block whose
    /// transactions, each with the timestamp it was delivered with, have the [`leaf`]s
    /// `leaves` (in seq order). In order: it decodes; each signer is an orderer `sealers`
    /// admits at the seal's own time, and its signature verifies; the number, first seq
    /// and previous hash are the next ones; the seal covers `leaves.len()` transactions; `tx_root` is their [`merkle_root`], so a
    /// transaction's bytes or timestamp changed after sealing is [`BlockError::TxRoot`].
    /// On success the chain advances past it; on error it is unchanged.
    pub fn accept(
        &mut self,
        signed_seal: &[u8],
        leaves: &[Hash],
        sealers: &Sealers<'_>,
    ) -> Result<SignedSealed, BlockError> {
        let (sealed, signed) = decode_parts(signed_seal)?;
        let seal = &sealed.seal;
        verify_signatures(&sealed, &signed.signatures, sealers)?;
        if seal.number != self.next_number() {
            return Err(BlockError::OutOfOrder {
                expected: self.next_number(),
                got: seal.number,
            });
        }
        if seal.first != self.next_first() {
            return Err(BlockError::Gap {
                expected: self.next_first(),
                got: seal.first,
            });
        }
        if seal.previous_hash != self.hash {
            return Err(BlockError::PreviousHash);
        }
        let count = leaves.len() as u64;
        if seal.tx_count() != count {
            return Err(BlockError::TxCount {
                expected: count,
                got: seal.tx_count(),
            });
        }
        if seal.tx_root != merkle_root(leaves) {
            return Err(BlockError::TxRoot);
        }
        *self = SealChain::after(&sealed);
        Ok(sealed)
    }

    /// For the orderer side: builds and signs the next seal over the transactions whose
    /// [`leaf`]s are `leaves`, and advances.
    ///
    /// # Panics
    ///
    /// If `leaves` is empty: a block holds at least one transaction.
    pub fn seal_next(
        &mut self,
        orderer: &Signer,
        leaves: &[Hash],
        timestamp_ms: u64,
    ) -> SignedSealed {
        let seal = Seal::new(
            self.next_number(),
            self.next_first(),
            leaves,
            self.hash,
            timestamp_ms,
        );
        let sealed = sign_seal(orderer, seal);
        *self = SealChain::after(&sealed);
        sealed
    }
}

/// The proof that the transaction at `seq`, ordered at `timestamp_ms`, is in `block`,
/// whose transactions' [`leaf`]s are `leaves` (in seq order; the one at `seq` from that
/// timestamp). Refused with [`BlockError::NotInBlock`] if `seq` is outside the block, and
/// with [`BlockError::TxCount`] or [`BlockError::TxRoot`] if `leaves` are not the block's.
pub fn prove(
    block: &SignedSealed,
    leaves: &[Hash],
    seq: Seq,
    timestamp_ms: u64,
) -> Result<InclusionProof, BlockError> {
    let seal = &block.seal;
    let not_in_block = || BlockError::NotInBlock {
        seq,
        block: seal.number,
    };
    if !seal.contains(seq) {
        return Err(not_in_block());
    }
    let count = leaves.len() as u64;
    if seal.tx_count() != count {
        return Err(BlockError::TxCount {
            expected: count,
            got: seal.tx_count(),
        });
    }
    let offset = seq.0 - seal.first.0;
    let index = usize::try_from(offset).map_err(|_| not_in_block())?;
    let path = inclusion_path(leaves, index);
    if !verify_inclusion(&leaves[index], offset, count, &path, &seal.tx_root) {
        return Err(BlockError::TxRoot);
    }
    Ok(InclusionProof {
        block: seal.number.0,
        seq: seq.0,
        path: path.iter().map(|hash| hash.to_vec()).collect(),
        timestamp_ms,
    })
}

/// Checks that `proof` places the transaction `signed_transaction` (its `SignedTransaction`
/// bytes), ordered at `proof.timestamp_ms`, at `proof.seq` in the block sealed by `seal`:
/// a proof whose timestamp or transaction was changed does not verify. The seal itself
/// must have been verified ([`SealChain::accept`]) or be trusted.
pub fn verify_proof(
    proof: &InclusionProof,
    signed_transaction: &[u8],
    seal: &Seal,
) -> Result<(), BlockError> {
    if proof.block != seal.number.0 {
        return Err(BlockError::BadProof);
    }
    let seq = Seq(proof.seq);
    if !seal.contains(seq) {
        return Err(BlockError::NotInBlock {
            seq,
            block: seal.number,
        });
    }
    let path = proof
        .path
        .iter()
        .map(|hash| Hash::try_from(hash.as_slice()))
        .collect::<Result<Vec<Hash>, _>>()
        .map_err(|_| BlockError::BadProof)?;
    let leaf = leaf(proof.timestamp_ms, signed_transaction);
    let index = seq.0 - seal.first.0;
    if verify_inclusion(&leaf, index, seal.tx_count(), &path, &seal.tx_root) {
        Ok(())
    } else {
        Err(BlockError::BadProof)
    }
}

/// Why a seal or an inclusion proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// The bytes are not a seal, or a field is unacceptable.
    #[error("malformed seal: {0}")]
    BadSeal(String),
    /// The orderer's certificate or role was refused.
    #[error("seal orderer refused: {0}")]
    Orderer(IdentityError),
    /// The orderer's signature over the seal does not verify.
    #[error("the orderer's signature over the seal does not verify")]
    BadSignature,
    /// The signer is an orderer of the network, but not one the definition in force at
    /// the seal's end names: removed from the ordering service, or never in it.
    #[error(
        "seal signed by {orderer}, which the network definition in force there (sequence {sequence}) does not name as an orderer"
    )]
    NotAMember {
        /// The signer, `org/name`.
        orderer: String,
        /// The sequence of the definition in force.
        sequence: u64,
    },
    /// The seal is not for the next block.
    #[error("seal is for block {got}, but the next block is {expected}")]
    OutOfOrder {
        /// The next block's number.
        expected: BlockNumber,
        /// The seal's.
        got: BlockNumber,
    },
    /// The block does not start right after the previous one.
    #[error("block starts at seq {got}, but the next seq is {expected}")]
    Gap {
        /// The seq after the previous block's last.
        expected: Seq,
        /// The block's first seq.
        got: Seq,
    },
    /// The seal's `previous_hash` is not the hash of the previous seal.
    #[error("seal does not chain to the previous seal (previous_hash differs)")]
    PreviousHash,
    /// The seal covers a different number of transactions than were given for it.
    #[error("seal covers {got} transactions, but {expected} were given")]
    TxCount {
        /// How many transaction hashes were given.
        expected: u64,
        /// How many the seal covers.
        got: u64,
    },
    /// The seal's `tx_root` is not the Merkle root of the given transactions.
    #[error(
        "seal's tx_root is not the Merkle root of the block's transactions (their bytes and ordered timestamps)"
    )]
    TxRoot,
    /// The seq is outside the block.
    #[error("seq {seq} is not in block {block}")]
    NotInBlock {
        /// The seq.
        seq: Seq,
        /// The block.
        block: BlockNumber,
    },
    /// The inclusion proof does not verify against the seal.
    #[error("inclusion proof does not verify against the seal")]
    BadProof,
}

impl BlockError {
    /// A stable, machine-readable name (API status details, SDK error types).
    pub fn code(&self) -> &'static str {
        match self {
            BlockError::BadSeal(_) => "BAD_SEAL",
            BlockError::Orderer(error) => match error {
                IdentityError::OutsideValidity { .. } => "EXPIRED_CERTIFICATE",
                _ => "BAD_ORDERER",
            },
            BlockError::BadSignature => "BAD_SEAL_SIGNATURE",
            BlockError::NotAMember { .. } => "ORDERER_NOT_MEMBER",
            BlockError::OutOfOrder { .. } => "BLOCK_OUT_OF_ORDER",
            BlockError::Gap { .. } => "SEQ_GAP",
            BlockError::PreviousHash => "PREVIOUS_HASH_MISMATCH",
            BlockError::TxCount { .. } => "TX_COUNT_MISMATCH",
            BlockError::TxRoot => "TX_ROOT_MISMATCH",
            BlockError::NotInBlock { .. } => "NOT_IN_BLOCK",
            BlockError::BadProof => "BAD_PROOF",
        }
    }
}

#[cfg(test)]
mod tests {
    use time::Duration;

    use super::*;
    use crate::identity::NetworkIdentities;
    use crate::tx::now_ms;

    fn leaves(n: usize) -> Vec<Hash> {
        (0..n)
            .map(|i| leaf(1_000 + i as u64, format!("transaction {i}").as_bytes()))
            .collect()
    }

    // Seals.

    struct Fixture {
        net: NetworkIdentities,
        msp: Msp,
        orderer: Signer,
    }

    fn fixture() -> Fixture {
        let net = NetworkIdentities::generate(&["Org1"], Duration::days(1)).unwrap();
        let msp = net.msp().unwrap();
        let orderer = net.org("Org1").unwrap().signer(Role::Orderer).unwrap();
        Fixture { net, msp, orderer }
    }

    /// The orderer's timestamps and SignedTransaction bytes of seqs `first..first + n`.
    fn transactions(first: u64, n: u64) -> Vec<(u64, Vec<u8>)> {
        (first..first + n)
            .map(|seq| {
                let timestamp_ms = 1_700_000_000_000 + seq;
                (
                    timestamp_ms,
                    format!("signed transaction at {seq}").into_bytes(),
                )
            })
            .collect()
    }

    fn block_leaves(transactions: &[(u64, Vec<u8>)]) -> Vec<Hash> {
        transactions
            .iter()
            .map(|(timestamp_ms, tx)| leaf(*timestamp_ms, tx))
            .collect()
    }

    /// Runs `accept` on `chain`, expecting an error and the chain unchanged.
    fn refused(chain: &mut SealChain, bytes: &[u8], leaves: &[Hash], msp: &Msp) -> BlockError {
        let before = chain.clone();
        let error = chain
            .accept(bytes, leaves, &Sealers::any_orderer(msp))
            .unwrap_err();
        assert_eq!(*chain, before, "chain moved on {error}");
        error
    }

    #[test]
    fn seals_encode_and_decode() {
        let seal = Seal::new(BlockNumber(4), Seq(10), &leaves(5), [9; 32], 1_234);
        assert_eq!(seal.last, Seq(14));
        assert_eq!(seal.tx_count(), 5);
        assert!(seal.contains(Seq(10)) && seal.contains(Seq(14)));
        assert!(!seal.contains(Seq(9)) && !seal.contains(Seq(15)));
        assert_eq!(Seal::decode(&seal.encode()), Ok(seal.clone()));

        let bad = |proto: BlockSeal| Seal::decode(&proto.encode_to_vec()).unwrap_err();
        let valid = BlockSeal {
            number: 4,
            first_seq: 10,
            last_seq: 14,
            previous_hash: vec![9; 32],
            tx_root: seal.tx_root.to_vec(),
            timestamp_ms: 1_234,
        };
        for proto in [
            BlockSeal {
                previous_hash: vec![9; 31],
                ..valid.clone()
            },
            BlockSeal {
                tx_root: Vec::new(),
                ..valid.clone()
            },
            BlockSeal {
                number: 0,
                ..valid.clone()
            },
            BlockSeal {
                first_seq: 0,
                ..valid.clone()
            },
            BlockSeal {
                last_seq: 9,
                ..valid.clone()
            },
        ] {
            assert!(matches!(bad(proto), BlockError::BadSeal(_)));
        }
        let mut trailing = seal.encode();
        trailing.extend_from_slice(&[0x38, 0x01]);
        assert!(matches!(
            Seal::decode(&trailing),
            Err(BlockError::BadSeal(_))
        ));
    }

    #[test]
    #[should_panic(expected = "at least one transaction")]
    fn an_empty_block_cannot_be_sealed() {
        Seal::new(BlockNumber(1), Seq(1), &[], GENESIS_HASH, 0);
    }

    #[test]
    fn three_seals_verify_in_order_on_another_chain() {
        let f = fixture();
        let mut orderer_chain = SealChain::genesis();
        let mut peer_chain = SealChain::genesis();
        assert_eq!(peer_chain.next_number(), BlockNumber(1));
        assert_eq!(peer_chain.next_first(), Seq(1));
        assert_eq!(peer_chain.previous_hash(), GENESIS_HASH);

        let mut previous = GENESIS_HASH;
        let mut first = 1;
        for (i, size) in [3u64, 1, 5].into_iter().enumerate() {
            let block = block_leaves(&transactions(first, size));
            let sealed = orderer_chain.seal_next(&f.orderer, &block, now_ms());
            assert_eq!(sealed.seal.number, BlockNumber(i as u64 + 1));
            assert_eq!(sealed.seal.first, Seq(first));
            assert_eq!(sealed.seal.last, Seq(first + size - 1));
            assert_eq!(sealed.seal.previous_hash, previous);
            assert_eq!(sealed.hash, sha256(&sealed.seal.encode()));

            let accepted = peer_chain
                .accept(&sealed.bytes, &block, &Sealers::any_orderer(&f.msp))
                .unwrap();
            assert_eq!(accepted, sealed);
            assert_eq!(peer_chain, orderer_chain);
            assert_eq!(decode_signed_seal(&sealed.bytes), Ok(sealed.clone()));
            assert_eq!(SealChain::after(&sealed), peer_chain);
            assert_eq!(peer_chain.previous_hash(), sealed.hash);

            previous = sealed.hash;
            first += size;
        }
        assert_eq!(peer_chain.next_number(), BlockNumber(4));
        assert_eq!(peer_chain.next_first(), Seq(10));
    }

    #[test]
    fn a_seal_signed_by_another_role_is_refused() {
        let f = fixture();
        let peer = f.net.org("Org1").unwrap().signer(Role::Peer).unwrap();
        let block = leaves(2);
        let sealed = SealChain::genesis().seal_next(&peer, &block, now_ms());
        let error = refused(&mut SealChain::genesis(), &sealed.bytes, &block, &f.msp);
        assert!(
            matches!(
                error,
                BlockError::Orderer(IdentityError::WrongRole {
                    role: Role::Peer,
                    ..
                })
            ),
            "{error:?}"
        );
        assert_eq!(error.code(), "BAD_ORDERER");
    }

    #[test]
    fn a_seal_from_an_unknown_ca_is_refused() {
        let f = fixture();
        let block = leaves(2);
        for org in ["Org9", "Org1"] {
            let other = NetworkIdentities::generate(&[org], Duration::days(1)).unwrap();
            let impostor = other.org(org).unwrap().signer(Role::Orderer).unwrap();
            let sealed = SealChain::genesis().seal_next(&impostor, &block, now_ms());
            let error = refused(&mut SealChain::genesis(), &sealed.bytes, &block, &f.msp);
            match org {
                "Org9" => assert!(
                    matches!(error, BlockError::Orderer(IdentityError::UnknownCa { .. })),
                    "{error:?}"
                ),
                _ => assert!(matches!(error, BlockError::Orderer(_)), "{error:?}"),
            }
        }
    }

    #[test]
    fn a_seal_outside_the_certificate_validity_is_refused() {
        let f = fixture();
        let block = leaves(1);
        let later = now_ms() + 10 * 24 * 3_600 * MS_PER_SECOND;
        let sealed = SealChain::genesis().seal_next(&f.orderer, &block, later);
        let error = refused(&mut SealChain::genesis(), &sealed.bytes, &block, &f.msp);
        assert_eq!(error.code(), "EXPIRED_CERTIFICATE", "{error:?}");
    }

    fn signed_seal_orderer(bytes: &[u8]) -> Vec<u8> {
        SignedSeal::decode(bytes).unwrap().signatures[0]
            .orderer
            .clone()
    }

    #[test]
    fn every_signature_a_seal_carries_must_hold_and_signers_are_counted_once() {
        let net = NetworkIdentities::generate(&["Org1", "Org2"], Duration::days(1)).unwrap();
        let msp = net.msp().unwrap();
        let orderer = |org: &str| net.org(org).unwrap().signer(Role::Orderer).unwrap().clone();
        let block = leaves(2);
        let sealed = SealChain::genesis().seal_next(&orderer("Org1"), &block, now_ms());
        let signature_of = |signer: &Signer| SealSignature {
            orderer: signer.cert_der().to_vec(),
            signature: signer.sign(&seal_message(&sealed.hash)).to_vec(),
        };
        let with = |signatures: Vec<SealSignature>| {
            let mut signed = SignedSeal::decode(sealed.bytes.as_slice()).unwrap();
            signed.signatures = signatures;
            signed.encode_to_vec()
        };
        let accepts =
            |bytes: &[u8]| SealChain::genesis().accept(bytes, &block, &Sealers::any_orderer(&msp));

        // Two orderers vouching for the seal, as a BFT service would have them.
        let two = with(vec![
            signature_of(&orderer("Org1")),
            signature_of(&orderer("Org2")),
        ]);
        assert_eq!(accepts(&two).unwrap().hash, sealed.hash);

        // None, the same orderer twice, a second signature that does not hold, and more
        // than a seal may carry are all refused.
        let none = with(Vec::new());
        let twice = with(vec![
            signature_of(&orderer("Org1")),
            signature_of(&orderer("Org1")),
        ]);
        let mut forged = signature_of(&orderer("Org2"));
        forged.signature[0] ^= 1;
        let forged = with(vec![signature_of(&orderer("Org1")), forged]);
        let many = with(vec![
            signature_of(&orderer("Org1"));
            SEAL_SIGNATURES_MAX + 1
        ]);
        // Org1's orderer key under a second name its CA issued: still one orderer.
        let org1 = net.org("Org1").unwrap();
        let key = rcgen::KeyPair::from_pem(&org1.identity(Role::Orderer).key_pem).unwrap();
        let renamed = org1
            .ca
            .issue_custom(&key, Role::Orderer, "orderer9.Org1", |_| {})
            .unwrap();
        let renamed = SealSignature {
            orderer: renamed,
            ..signature_of(&orderer("Org1"))
        };
        let one_key_two_names = with(vec![signature_of(&orderer("Org1")), renamed]);
        for (bytes, code) in [
            (none, "BAD_SEAL"),
            (twice, "BAD_SEAL"),
            (one_key_two_names, "BAD_SEAL"),
            (forged, "BAD_SEAL_SIGNATURE"),
            (many, "BAD_SEAL"),
        ] {
            let error = refused(&mut SealChain::genesis(), &bytes, &block, &msp);
            assert_eq!(error.code(), code, "{error:?}");
        }
    }

    #[test]
    fn a_byzantine_fault_tolerant_cluster_needs_a_quorum_of_its_members_on_every_seal() {
        use crate::identity::{OrdererNode, OrderingProtocol};
        let orgs = ["Org1", "Org2", "Org3", "Org4", "Org5"];
        let net = NetworkIdentities::generate(&orgs, Duration::days(1)).unwrap();
        let orderer = |org: &str| net.org(org).unwrap().signer(Role::Orderer).unwrap().clone();
        // Four members (f = 1): Org1..Org4's orderers; Org5's is not one.
        let mut definition = NetworkDefinition::of(&net, "main");
        definition.ordering = OrderingProtocol::Bft;
        definition.orderers = (1..=4)
            .map(|i| OrdererNode {
                name: format!("orderer0.Org{i}"),
                org: format!("Org{i}"),
                endpoint: format!("https://127.0.0.1:{}", 7050 + i),
                raft_id: i,
                key: hex::encode(orderer(&format!("Org{i}")).public_key()),
            })
            .collect();
        definition.check().unwrap();
        assert_eq!(definition.seal_quorum(), 3);
        let msp = definition.msp().unwrap();
        let sealers = Sealers::of(&definition, &msp);
        assert_eq!(sealers.required(), 3);

        let block = leaves(3);
        let sealed = SealChain::genesis().seal_next(&orderer("Org1"), &block, now_ms());
        let signature_of = |org: &str| {
            let signer = orderer(org);
            SealSignature {
                orderer: signer.cert_der().to_vec(),
                signature: signer.sign(&seal_message(&sealed.hash)).to_vec(),
            }
        };
        let with = |orgs: &[&str]| {
            let mut signed = SignedSeal::decode(sealed.bytes.as_slice()).unwrap();
            signed.signatures = orgs.iter().map(|org| signature_of(org)).collect();
            signed.encode_to_vec()
        };
        let accept = |bytes: &[u8]| SealChain::genesis().accept(bytes, &block, &sealers);

        // One orderer, even the one that cut the block, and two are not enough.
        for signers in [&["Org1"][..], &["Org1", "Org2"]] {
            let error = accept(&with(signers)).unwrap_err();
            assert_eq!(error.code(), "BAD_SEAL", "{signers:?}: {error}");
        }
        // Three distinct members are; so are all four.
        for signers in [
            &["Org1", "Org2", "Org3"][..],
            &["Org4", "Org3", "Org2", "Org1"],
        ] {
            assert_eq!(
                accept(&with(signers)).unwrap().hash,
                sealed.hash,
                "{signers:?}"
            );
        }
        // Three signatures of which one is an orderer the definition does not name.
        let error = accept(&with(&["Org1", "Org2", "Org5"])).unwrap_err();
        assert!(matches!(error, BlockError::NotAMember { .. }), "{error}");
        // Without a definition (a seal's chain checked alone), one still suffices.
        SealChain::genesis()
            .accept(&with(&["Org1"]), &block, &Sealers::any_orderer(&msp))
            .unwrap();

        // An orderer signing with another key than the definition names for it.
        let mut rekeyed = definition.clone();
        rekeyed.orderers[1].key = rekeyed.orderers[2].key.clone();
        let msp = rekeyed.msp().unwrap();
        let error = SealChain::genesis()
            .accept(
                &with(&["Org1", "Org2", "Org3"]),
                &block,
                &Sealers::of(&rekeyed, &msp),
            )
            .unwrap_err();
        assert!(matches!(error, BlockError::NotAMember { .. }), "{error}");

        // Quorums as the cluster grows: n - f of n.
        for (n, quorum) in [(4, 3), (5, 4), (6, 5), (7, 5), (10, 7)] {
            definition.orderers = (1..=n)
                .map(|i| OrdererNode {
                    name: format!("orderer{i}.Org1"),
                    org: "Org1".into(),
                    endpoint: format!("https://127.0.0.1:{}", 7050 + i),
                    raft_id: i,
                    key: String::new(),
                })
                .collect();
            assert_eq!(definition.seal_quorum(), quorum, "{n} orderers");
        }
        // Fewer than four, or an orderer without a cluster id, is no BFT cluster.
        definition.orderers.truncate(3);
        assert!(definition.check().is_err());
        definition.orderers = (1..=4)
            .map(|i| OrdererNode {
                name: format!("orderer{i}.Org1"),
                org: "Org1".into(),
                endpoint: format!("https://127.0.0.1:{}", 7050 + i),
                raft_id: if i == 4 { 0 } else { i },
                key: String::new(),
            })
            .collect();
        assert!(definition.check().is_err());
    }

    #[test]
    fn tampered_seals_are_refused() {
        let f = fixture();
        let block = leaves(3);
        let sealed = SealChain::genesis().seal_next(&f.orderer, &block, now_ms());

        let mut signed = SignedSeal::decode(sealed.bytes.as_slice()).unwrap();
        let mut altered = sealed.seal.clone();
        altered.timestamp_ms += 1;
        signed.seal = altered.encode();
        let error = refused(
            &mut SealChain::genesis(),
            &signed.encode_to_vec(),
            &block,
            &f.msp,
        );
        assert_eq!(error, BlockError::BadSignature);

        // Every one-bit change is refused, except inside the orderer's certificate, where
        // the CA's signature covers only the to-be-signed part: there a change may pass
        // the MSP, but it can never alter the seal or its hash.
        let cert = signed_seal_orderer(&sealed.bytes);
        let cert_at = sealed
            .bytes
            .windows(cert.len())
            .position(|window| window == cert.as_slice())
            .unwrap();
        for i in 0..sealed.bytes.len() {
            let mut bytes = sealed.bytes.clone();
            bytes[i] ^= 0x01;
            let mut chain = SealChain::genesis();
            match chain.accept(&bytes, &block, &Sealers::any_orderer(&f.msp)) {
                Err(_) => assert_eq!(chain, SealChain::genesis()),
                Ok(accepted) => {
                    assert!((cert_at..cert_at + cert.len()).contains(&i), "byte {i}");
                    assert_eq!(
                        (accepted.seal, accepted.hash),
                        (sealed.seal.clone(), sealed.hash)
                    );
                }
            }
        }
    }

    #[test]
    fn garbage_is_not_a_seal() {
        let f = fixture();
        for bytes in [&b""[..], b"not a seal", &[0xff; 40]] {
            let error = refused(&mut SealChain::genesis(), bytes, &leaves(1), &f.msp);
            assert!(matches!(error, BlockError::BadSeal(_)), "{error:?}");
            assert!(matches!(
                decode_signed_seal(bytes),
                Err(BlockError::BadSeal(_))
            ));
        }
    }

    #[test]
    fn seals_out_of_chain_are_refused() {
        let f = fixture();
        let block = leaves(3);
        let now = now_ms();
        let sign = |number, first, previous| {
            sign_seal(
                &f.orderer,
                Seal::new(BlockNumber(number), Seq(first), &block, previous, now),
            )
        };
        let mut chain = SealChain::genesis();

        let error = refused(&mut chain, &sign(2, 1, GENESIS_HASH).bytes, &block, &f.msp);
        assert_eq!(
            error,
            BlockError::OutOfOrder {
                expected: BlockNumber(1),
                got: BlockNumber(2)
            }
        );
        let error = refused(&mut chain, &sign(1, 2, GENESIS_HASH).bytes, &block, &f.msp);
        assert_eq!(
            error,
            BlockError::Gap {
                expected: Seq(1),
                got: Seq(2)
            }
        );
        let error = refused(&mut chain, &sign(1, 1, [7; 32]).bytes, &block, &f.msp);
        assert_eq!(error, BlockError::PreviousHash);

        let first = sign(1, 1, GENESIS_HASH);
        let error = refused(&mut chain, &first.bytes, &block[..2], &f.msp);
        assert_eq!(
            error,
            BlockError::TxCount {
                expected: 2,
                got: 3
            }
        );
        let mut reordered = block.clone();
        reordered.swap(0, 2);
        let error = refused(&mut chain, &first.bytes, &reordered, &f.msp);
        assert_eq!(error, BlockError::TxRoot);

        chain
            .accept(&first.bytes, &block, &Sealers::any_orderer(&f.msp))
            .unwrap();
        let error = refused(&mut chain, &first.bytes, &block, &f.msp);
        assert_eq!(
            error,
            BlockError::OutOfOrder {
                expected: BlockNumber(2),
                got: BlockNumber(1)
            }
        );
        let error = refused(&mut chain, &sign(2, 5, first.hash).bytes, &block, &f.msp);
        assert_eq!(
            error,
            BlockError::Gap {
                expected: Seq(4),
                got: Seq(5)
            }
        );
        chain
            .accept(
                &sign(2, 4, first.hash).bytes,
                &block,
                &Sealers::any_orderer(&f.msp),
            )
            .unwrap();
    }

    #[test]
    fn proofs_place_each_transaction_in_its_block() {
        let f = fixture();
        let mut chain = SealChain::genesis();
        chain.seal_next(&f.orderer, &leaves(4), now_ms());
        let txs = transactions(5, 7);
        let block = block_leaves(&txs);
        let sealed = chain.seal_next(&f.orderer, &block, now_ms());
        let seal = &sealed.seal;
        assert_eq!(seal.first, Seq(5));

        for ((timestamp_ms, tx), seq) in txs.iter().zip(5..) {
            let proof = prove(&sealed, &block, Seq(seq), *timestamp_ms).unwrap();
            assert_eq!(
                (proof.block, proof.seq, proof.timestamp_ms),
                (2, seq, *timestamp_ms)
            );
            let decoded = InclusionProof::decode(proof.encode_to_vec().as_slice()).unwrap();
            assert_eq!(verify_proof(&decoded, tx, seal), Ok(()));

            assert_eq!(
                verify_proof(&proof, b"another transaction", seal),
                Err(BlockError::BadProof)
            );
            // The transaction's bytes at another time are another leaf.
            for altered in [
                timestamp_ms + 1,
                timestamp_ms - 1,
                timestamp_ms ^ (1 << 40),
                0,
                u64::MAX,
            ] {
                let other_time = InclusionProof {
                    timestamp_ms: altered,
                    ..proof.clone()
                };
                assert_eq!(
                    verify_proof(&other_time, tx, seal),
                    Err(BlockError::BadProof),
                    "timestamp {altered}"
                );
            }
            let other_seq = InclusionProof {
                seq: if seq == 5 { 6 } else { 5 },
                ..proof.clone()
            };
            assert_eq!(
                verify_proof(&other_seq, tx, seal),
                Err(BlockError::BadProof)
            );
            let other_block = InclusionProof {
                block: 1,
                ..proof.clone()
            };
            assert_eq!(
                verify_proof(&other_block, tx, seal),
                Err(BlockError::BadProof)
            );
            let mut short_hash = proof.clone();
            short_hash.path[0].pop();
            assert_eq!(
                verify_proof(&short_hash, tx, seal),
                Err(BlockError::BadProof)
            );
        }

        let outside = InclusionProof {
            block: 2,
            seq: 12,
            path: Vec::new(),
            timestamp_ms: txs[0].0,
        };
        assert_eq!(
            verify_proof(&outside, &txs[0].1, seal),
            Err(BlockError::NotInBlock {
                seq: Seq(12),
                block: BlockNumber(2)
            })
        );
        for seq in [4, 12] {
            assert_eq!(
                prove(&sealed, &block, Seq(seq), txs[0].0),
                Err(BlockError::NotInBlock {
                    seq: Seq(seq),
                    block: BlockNumber(2)
                })
            );
        }
        assert!(matches!(
            prove(&sealed, &block[..6], Seq(5), txs[0].0),
            Err(BlockError::TxCount { .. })
        ));
        let mut reordered = block.clone();
        reordered.swap(0, 1);
        assert_eq!(
            prove(&sealed, &reordered, Seq(5), txs[0].0),
            Err(BlockError::TxRoot)
        );
    }

    #[test]
    fn a_seal_does_not_verify_when_any_transactions_timestamp_changes() {
        let f = fixture();
        for size in [1u64, 2, 3, 5, 8] {
            let txs = transactions(1, size);
            let sealed = SealChain::genesis().seal_next(&f.orderer, &block_leaves(&txs), now_ms());
            let mut chain = SealChain::genesis();
            assert!(
                chain
                    .clone()
                    .accept(
                        &sealed.bytes,
                        &block_leaves(&txs),
                        &Sealers::any_orderer(&f.msp)
                    )
                    .is_ok()
            );
            for i in 0..txs.len() {
                for altered in [txs[i].0 + 1, txs[i].0 - 1, 0, u64::MAX] {
                    let mut delivered = txs.clone();
                    delivered[i].0 = altered;
                    let error =
                        refused(&mut chain, &sealed.bytes, &block_leaves(&delivered), &f.msp);
                    assert_eq!(error, BlockError::TxRoot, "tx {i} of {size} at {altered}");
                    assert_eq!(error.code(), "TX_ROOT_MISMATCH");
                }
            }
            // Two transactions' timestamps swapped are refused too.
            if size > 1 && txs[0].0 != txs[1].0 {
                let mut swapped = txs.clone();
                let (a, b) = (swapped[0].0, swapped[1].0);
                swapped[0].0 = b;
                swapped[1].0 = a;
                let error = refused(&mut chain, &sealed.bytes, &block_leaves(&swapped), &f.msp);
                assert_eq!(error, BlockError::TxRoot);
            }
        }
    }

    #[test]
    fn codes_are_stable_screaming_snake_names() {
        let errors = [
            BlockError::BadSeal(String::new()),
            BlockError::Orderer(IdentityError::BadRole(String::new())),
            BlockError::BadSignature,
            BlockError::OutOfOrder {
                expected: BlockNumber(1),
                got: BlockNumber(2),
            },
            BlockError::Gap {
                expected: Seq(1),
                got: Seq(2),
            },
            BlockError::PreviousHash,
            BlockError::TxCount {
                expected: 1,
                got: 2,
            },
            BlockError::TxRoot,
            BlockError::NotInBlock {
                seq: Seq(1),
                block: BlockNumber(1),
            },
            BlockError::BadProof,
        ];
        let codes: std::collections::HashSet<_> = errors.iter().map(BlockError::code).collect();
        assert_eq!(codes.len(), errors.len());
        for code in codes {
            assert!(
                code.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{code}"
            );
        }
    }
}
