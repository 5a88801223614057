//! Identities: X.509 certificates with Ed25519 keys (RFC 8410), one CA per organisation,
//! the role carried as the subject's OU (client, peer, orderer, admin).
//!
//! - [`CertificateAuthority`] issues them (what `runnel init` calls).
//! - [`Msp`] verifies them against the network's org CAs and caches each verified
//!   certificate by fingerprint, so a busy peer parses and checks a submitter's
//!   certificate once, not per transaction.
//! - [`NetworkIdentities`] generates a CA and standard identities per organisation, and
//!   a TLS CA ([`TlsAuthority`], ECDSA P-256) with the org's node's TLS certificates.
//! - [`revocation`] names a revoked identity in the definition: by its key, never by the
//!   bytes of its certificate.
//! - [`NetworkDefinition`] is what every member shares (`network.json`): the orgs' CA
//!   and TLS CA certificates, endpoints and policies; [`NetworkKeys`] a directory's own
//!   keys beside it.
//! - [`Signer`] signs with an identity's key; [`Identity::verify`] checks a signature.

mod authority;
mod definition;
mod msp;
mod network;
mod role;

pub use authority::{CertificateAuthority, IssuedIdentity, Signer, TlsAuthority};
pub use definition::{
    BFT_ORDERERS_MIN, DEFAULT_CONFIG_POLICY, DEFAULT_LIFECYCLE_POLICY, NETWORK_FILE,
    NetworkDefinition, OrdererNode, OrderingProtocol, OrgDefinition, PeerNode, REVOKED_KEY_PREFIX,
    bft_faults, certificate_der, revocation, revoked_key,
};
pub use msp::{IDENTITY_CACHE_MAX, Identity, Msp};
pub use network::{
    HeldKey, IDENTITIES_DIR, NetworkIdentities, NetworkKeys, OrgIdentities, OrgTls, TLS_CA_FILE,
    TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE, TLS_LOCAL_HOSTS, TLS_SERVER_CERT_FILE,
    TLS_SERVER_KEY_FILE, write_identity, write_key,
};
pub use role::{Role, UnknownRole};

/// Why a certificate, key or signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// Not a parsable certificate or key.
    #[error("malformed {what}: {message}")]
    Malformed {
        /// What was being read.
        what: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The certificate is not in its one canonical DER form, so its bytes could differ
    /// from what its CA issued while its signature still holds.
    #[error("{what} is not in its canonical DER form: {message}")]
    NotCanonical {
        /// What was being read.
        what: &'static str,
        /// What is not canonical.
        message: String,
    },
    /// The certificate's extensions do not allow what it is used for.
    #[error("{what} is refused by its key usage: {message}")]
    KeyUsage {
        /// What was being read.
        what: &'static str,
        /// What is missing or not allowed.
        message: String,
    },
    /// The certificate or key is not Ed25519.
    #[error("{what} is not an Ed25519 key or signature (RFC 8410)")]
    WrongKeyType {
        /// What was being read.
        what: &'static str,
    },
    /// No CA of the network issued this certificate.
    #[error("certificate issued by `{issuer}`, which is not a CA of this network")]
    UnknownCa {
        /// The issuer's name as written in the certificate.
        issuer: String,
    },
    /// The certificate names an organisation other than its CA's.
    #[error("certificate claims organisation `{claimed}` but was issued by the CA of `{ca_org}`")]
    WrongOrg {
        /// The subject's O.
        claimed: String,
        /// The issuing CA's organisation.
        ca_org: String,
    },
    /// The CA's signature on the certificate does not verify (tampered or forged).
    #[error(
        "certificate signature does not verify against the CA of `{ca_org}` (tampered or forged)"
    )]
    BadCertificateSignature {
        /// The CA that supposedly issued it.
        ca_org: String,
    },
    /// Outside the certificate's validity period.
    #[error(
        "certificate of `{name}` is {state} (valid {not_before} to {not_after}, now {now}, Unix seconds)"
    )]
    OutsideValidity {
        /// The subject's CN.
        name: String,
        /// "expired" or "not yet valid".
        state: &'static str,
        /// Start of validity.
        not_before: i64,
        /// End of validity.
        not_after: i64,
        /// The time checked.
        now: i64,
    },
    /// The subject has no role OU, or an unknown one.
    #[error("certificate has no valid role OU: {0}")]
    BadRole(String),
    /// The identity's role is not allowed here.
    #[error("`{who}` has role {role}, but this needs {needed}")]
    WrongRole {
        /// The identity.
        who: String,
        /// Its role.
        role: Role,
        /// The roles accepted.
        needed: String,
    },
    /// A signature by the identity does not verify.
    #[error("signature by `{who}` does not verify")]
    BadSignature {
        /// The identity.
        who: String,
    },
    /// The certificate was revoked by a configuration transaction of the network.
    #[error("certificate of `{name}` is revoked")]
    Revoked {
        /// The identity, `org/name`.
        name: String,
    },
    /// Issuing failed.
    #[error("issuing a certificate failed: {0}")]
    Issue(String),
}

impl IdentityError {
    /// A stable name for this error when it refuses a transaction's creator or
    /// submitter (API status details, SDK error types).
    pub fn creator_code(&self) -> &'static str {
        match self {
            IdentityError::OutsideValidity { .. } => "EXPIRED_CERTIFICATE",
            IdentityError::Revoked { .. } => "REVOKED_CERTIFICATE",
            IdentityError::WrongRole { .. } => "ACCESS_DENIED",
            IdentityError::BadSignature { .. } => "BAD_CREATOR_SIGNATURE",
            _ => "BAD_CREATOR",
        }
    }
}
