//! Typed identifiers that cross stage boundaries: a transaction's id, its place in the
//! ordered stream, the virtual block that seals it.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// A transaction id: `sha256(nonce || creator certificate)`, shown as lowercase hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxId(pub [u8; 32]);

impl TxId {
    /// The id of a proposal with this nonce, made by this creator (certificate DER).
    pub fn derive(nonce: &[u8], creator: &[u8]) -> TxId {
        let mut hasher = Sha256::new();
        hasher.update(nonce);
        hasher.update(creator);
        TxId(hasher.finalize().into())
    }

    /// The id as lowercase hex (how clients and the explorer show it).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The id's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for TxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for TxId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TxId({})", self.to_hex())
    }
}

/// Why a text is not a transaction id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a transaction id (64 hex digits)")]
pub struct BadTxId(pub String);

impl FromStr for TxId {
    type Err = BadTxId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut id = [0u8; 32];
        hex::decode_to_slice(s, &mut id).map_err(|_| BadTxId(s.to_string()))?;
        Ok(TxId(id))
    }
}

/// A transaction's position in the ordered stream: 1, 2, 3, ... (0 means "none yet").
/// The version of a key is the `Seq` of the transaction that last wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Seq(pub u64);

impl Seq {
    /// Before the first transaction.
    pub const ZERO: Seq = Seq(0);

    /// The next position.
    pub fn next(self) -> Seq {
        Seq(self.0 + 1)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The number of a virtual block: the seal over a range of the stream. Block 0 is genesis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BlockNumber(pub u64);

impl fmt::Display for BlockNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The outcome of validating a transaction, recorded with it in the ledger (invalid
/// transactions are kept, as in Fabric). Names follow Fabric's `TxValidationCode`.
/// The numeric values are stored on disk: never renumber.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValidationCode {
    /// Committed: its writes are in the state.
    Valid = 0,
    /// A key it read changed after it was endorsed.
    MvccReadConflict = 1,
    /// A range it read gained or lost keys after it was endorsed.
    PhantomReadConflict = 2,
    /// Its endorsements do not satisfy the contract's policy.
    EndorsementPolicyFailure = 3,
    /// The creator's signature does not verify.
    BadCreatorSignature = 4,
    /// An endorser's signature does not verify (Fabric: INVALID_ENDORSER_TRANSACTION).
    BadEndorserSignature = 5,
    /// A transaction with this id is already in the ledger.
    DuplicateTxid = 6,
    /// The contract it invokes is not deployed.
    ContractNotFound = 7,
    /// A certificate in it had expired.
    ExpiredCertificate = 8,
    /// It could not be decoded, or is inconsistent.
    BadPayload = 9,
    /// The endorsers' response payloads differ.
    EndorsementMismatch = 10,
    /// It writes a namespace it may not write.
    IllegalWriteset = 11,
    /// Its read/write set breaks a rule of the store or a count limit: a key too long, a
    /// bad or repeated namespace, too many reads, writes, ranges or events, or a
    /// malformed range read (`validator::rules`; Fabric: BAD_RWSET).
    BadRwset = 12,
    /// Its proposal's timestamp (the time its contract saw) lies further from the
    /// orderer's timestamp of it than the network's `proposal_window_s`.
    TimestampOutOfWindow = 13,
    /// Its creator's certificate was revoked by a configuration transaction ordered
    /// before it.
    RevokedCertificate = 14,
    /// A `_config` update the network refuses: its definition does not check, its
    /// policies do not parse, name an organisation or role that cannot sign them, or can
    /// never be met, it removes an organisation a policy still names, or its orderers
    /// lose the cluster's quorum (`netconfig::ConfigUpdateError` says which).
    BadConfigUpdate = 15,
    /// The policy the definition in force sets for it (`lifecycle_policy` or
    /// `config_policy`) cannot be evaluated: it does not parse against the definition's
    /// organisations. No endorsement or signature can make such a transaction valid.
    UnusablePolicy = 16,
    /// It carries more endorsements than any policy can use
    /// ([`crate::tx::ENDORSEMENTS_MAX`]).
    TooManyEndorsements = 17,
}

impl ValidationCode {
    /// Every code, in numeric order.
    pub const ALL: [ValidationCode; 18] = [
        ValidationCode::Valid,
        ValidationCode::MvccReadConflict,
        ValidationCode::PhantomReadConflict,
        ValidationCode::EndorsementPolicyFailure,
        ValidationCode::BadCreatorSignature,
        ValidationCode::BadEndorserSignature,
        ValidationCode::DuplicateTxid,
        ValidationCode::ContractNotFound,
        ValidationCode::ExpiredCertificate,
        ValidationCode::BadPayload,
        ValidationCode::EndorsementMismatch,
        ValidationCode::IllegalWriteset,
        ValidationCode::BadRwset,
        ValidationCode::TimestampOutOfWindow,
        ValidationCode::RevokedCertificate,
        ValidationCode::BadConfigUpdate,
        ValidationCode::UnusablePolicy,
        ValidationCode::TooManyEndorsements,
    ];

    /// The stable name (Fabric's where Fabric has one).
    pub fn as_str(self) -> &'static str {
        match self {
            ValidationCode::Valid => "VALID",
            ValidationCode::MvccReadConflict => "MVCC_READ_CONFLICT",
            ValidationCode::PhantomReadConflict => "PHANTOM_READ_CONFLICT",
            ValidationCode::EndorsementPolicyFailure => "ENDORSEMENT_POLICY_FAILURE",
            ValidationCode::BadCreatorSignature => "BAD_CREATOR_SIGNATURE",
            ValidationCode::BadEndorserSignature => "BAD_ENDORSER_SIGNATURE",
            ValidationCode::DuplicateTxid => "DUPLICATE_TXID",
            ValidationCode::ContractNotFound => "CONTRACT_NOT_FOUND",
            ValidationCode::ExpiredCertificate => "EXPIRED_CERTIFICATE",
            ValidationCode::BadPayload => "BAD_PAYLOAD",
            ValidationCode::EndorsementMismatch => "ENDORSEMENT_MISMATCH",
            ValidationCode::IllegalWriteset => "ILLEGAL_WRITESET",
            ValidationCode::BadRwset => "BAD_RWSET",
            ValidationCode::TimestampOutOfWindow => "TIMESTAMP_OUT_OF_WINDOW",
            ValidationCode::RevokedCertificate => "REVOKED_CERTIFICATE",
            ValidationCode::BadConfigUpdate => "BAD_CONFIG_UPDATE",
            ValidationCode::UnusablePolicy => "UNUSABLE_POLICY",
            ValidationCode::TooManyEndorsements => "TOO_MANY_ENDORSEMENTS",
        }
    }

    /// The code stored as `byte`, if any.
    pub fn from_u8(byte: u8) -> Option<ValidationCode> {
        ValidationCode::ALL
            .iter()
            .copied()
            .find(|code| *code as u8 == byte)
    }

    /// True for [`ValidationCode::Valid`].
    pub fn is_valid(self) -> bool {
        self == ValidationCode::Valid
    }
}

impl fmt::Display for ValidationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_byte() {
        for code in ValidationCode::ALL {
            assert_eq!(ValidationCode::from_u8(code as u8), Some(code));
        }
        for byte in 0..=u8::MAX {
            if let Some(code) = ValidationCode::from_u8(byte) {
                assert_eq!(code as u8, byte);
            }
        }
        assert_eq!(ValidationCode::from_u8(18), None);
    }

    #[test]
    fn tx_id_is_hash_of_nonce_and_creator_and_parses_back() {
        let id = TxId::derive(b"nonce", b"cert");
        assert_ne!(id, TxId::derive(b"nonce", b"cert2"));
        assert_eq!(id.to_hex().parse::<TxId>(), Ok(id));
        assert!("zz".parse::<TxId>().is_err());
    }
}
