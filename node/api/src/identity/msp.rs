//! Verifying identities against the network's organisation CAs, with a cache of verified
//! certificates.
//!
//! An identity is its issuing organisation and its public key, never the bytes of its
//! certificate: the outer `signatureAlgorithm` of an X.509 certificate is not covered by
//! the CA's signature, so a holder could re-encode it (NULL parameters, a long length)
//! and get a certificate that hashes differently for the same subject, key and
//! signature. Certificates are therefore taken in their one canonical DER form only
//! ([`IdentityError::NotCanonical`]), and revocation, de-duplication and per-identity
//! shares key on the public key ([`Identity::key`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock};

use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};
use x509_parser::certificate::X509Certificate;
use x509_parser::oid_registry::{OID_SIG_ED25519, Oid};
use x509_parser::prelude::FromDer;

use super::{IdentityError, Role};
use crate::sig::SignatureCache;

/// Verified certificates kept; the cache is emptied when it would grow past this.
pub const IDENTITY_CACHE_MAX: usize = 10_000;

/// A verified identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The organisation (the issuing CA's).
    pub org: String,
    /// The role (subject OU).
    pub role: Role,
    /// The subject's common name.
    pub name: String,
    /// The Ed25519 public key: what the identity signs with, and what revocations,
    /// de-duplication of endorsers and per-identity shares key on.
    pub key: [u8; 32],
    /// Start of validity, Unix seconds.
    pub not_before: i64,
    /// End of validity, Unix seconds.
    pub not_after: i64,
    /// The certificate, DER (canonical: see the module doc).
    pub cert_der: Vec<u8>,
    verifying_key: VerifyingKey,
}

impl Identity {
    /// `org/name`, how logs and errors name an identity.
    pub fn id(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }

    /// Checks `signature` over `message` (strict Ed25519: no malleable signatures).
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), IdentityError> {
        let bad = || IdentityError::BadSignature { who: self.id() };
        let signature = Signature::from_slice(signature).map_err(|_| bad())?;
        self.verifying_key
            .verify_strict(message, &signature)
            .map_err(|_| bad())
    }

    /// The public key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.verifying_key
    }

    /// Fails unless the identity has one of `roles`.
    pub fn require_role(&self, roles: &[Role]) -> Result<(), IdentityError> {
        if roles.contains(&self.role) {
            return Ok(());
        }
        Err(IdentityError::WrongRole {
            who: self.id(),
            role: self.role,
            needed: roles
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(" or "),
        })
    }

    fn check_validity(&self, now: i64) -> Result<(), IdentityError> {
        let state = if now < self.not_before {
            "not yet valid"
        } else if now > self.not_after {
            "expired"
        } else {
            return Ok(());
        };
        Err(IdentityError::OutsideValidity {
            name: self.id(),
            state,
            not_before: self.not_before,
            not_after: self.not_after,
            now,
        })
    }
}

struct TrustedCa {
    org: String,
    /// The keys revoked for this CA's certificates.
    revoked: HashSet<[u8; 32]>,
    /// The CA certificate, DER.
    der: Vec<u8>,
    subject_raw: Vec<u8>,
    key: VerifyingKey,
}

/// The network's membership: one trusted CA per organisation, the certificates revoked,
/// and the cache of certificates already verified against them.
///
/// The trust can change while the network runs: a configuration transaction replaces it
/// ([`Msp::reconfigure`]) at its place in the stream, and every holder of the `Msp` sees
/// the new trust from then on. Each change bumps [`Msp::epoch`], so a stage that checked
/// a certificate under an older trust can tell, and check again.
pub struct Msp {
    trust: RwLock<Arc<Trust>>,
    cache: RwLock<Cache>,
    signatures: SignatureCache,
}

/// What an [`Msp`] trusts at one time.
struct Trust {
    cas: Vec<TrustedCa>,
    epoch: u64,
}

/// Certificates verified under the trust of `epoch`, by the SHA-256 of their (canonical)
/// DER. An identity verified under an older trust is never inserted: a reconfiguration
/// racing a verification cannot leave behind what the new trust refuses.
#[derive(Default)]
struct Cache {
    epoch: u64,
    identities: HashMap<[u8; 32], Arc<Identity>>,
}

impl std::fmt::Debug for Msp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Msp")
            .field("orgs", &self.orgs())
            .finish_non_exhaustive()
    }
}

fn parse<'a>(der: &'a [u8], what: &'static str) -> Result<X509Certificate<'a>, IdentityError> {
    let (rest, cert) = X509Certificate::from_der(der).map_err(|e| IdentityError::Malformed {
        what,
        message: e.to_string(),
    })?;
    if !rest.is_empty() {
        return Err(IdentityError::Malformed {
            what,
            message: format!("{} bytes after the certificate", rest.len()),
        });
    }
    check_canonical(der, &cert, what)?;
    Ok(cert)
}

/// The DER of the AlgorithmIdentifier of Ed25519 (RFC 8410: no parameters).
const ED25519_ALGORITHM_DER: [u8; 7] = [0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70];

/// Refuses a certificate that is not the one DER encoding of what its CA signed: both
/// signature algorithms Ed25519 without parameters, and the outer structure (which the
/// CA's signature does not cover) exactly as DER writes it around the signed part.
fn check_canonical(
    der: &[u8],
    cert: &X509Certificate<'_>,
    what: &'static str,
) -> Result<(), IdentityError> {
    let not_canonical = |message: &str| IdentityError::NotCanonical {
        what,
        message: message.to_string(),
    };
    let inner = &cert.tbs_certificate.signature;
    let outer = &cert.signature_algorithm;
    let ed25519 =
        |alg: &x509_parser::x509::AlgorithmIdentifier<'_>| alg.algorithm == OID_SIG_ED25519;
    if !ed25519(inner) || !ed25519(outer) {
        return Err(IdentityError::WrongKeyType { what });
    }
    if inner.parameters.is_some() || outer.parameters.is_some() {
        return Err(not_canonical(
            "its signature algorithm carries parameters (RFC 8410: Ed25519 has none)",
        ));
    }
    if cert.signature_value.data.len() != 64 {
        return Err(not_canonical("its signature is not 64 bytes"));
    }
    let tbs = cert.tbs_certificate.as_ref();
    let mut body = Vec::with_capacity(tbs.len() + 80);
    body.extend_from_slice(tbs);
    body.extend_from_slice(&ED25519_ALGORITHM_DER);
    body.extend_from_slice(&[0x03, 0x41, 0x00]);
    body.extend_from_slice(&cert.signature_value.data);
    let mut canonical = Vec::with_capacity(body.len() + 4);
    canonical.push(0x30);
    der_length(&mut canonical, body.len());
    canonical.extend_from_slice(&body);
    if canonical != der {
        return Err(not_canonical(
            "its bytes outside the part its CA signed are encoded otherwise",
        ));
    }
    Ok(())
}

/// Appends `len` as a DER definite length (the shortest form).
fn der_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let bytes = len.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    out.push(0x80 | (bytes.len() - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

/// What a certificate may do by its extensions: a CA certificate must be a CA
/// (basicConstraints) that signs certificates (keyUsage `keyCertSign`); any other must
/// not be a CA, must sign (`digitalSignature`) and must not sign certificates or CRLs; an
/// extended key usage, if present, must allow client authentication (members present
/// their certificate over mutual TLS).
fn check_usage(
    cert: &X509Certificate<'_>,
    ca: bool,
    what: &'static str,
) -> Result<(), IdentityError> {
    let usage = |message: String| IdentityError::KeyUsage { what, message };
    let extension = |e: x509_parser::error::X509Error| usage(format!("its extensions: {e}"));
    let is_ca = cert
        .basic_constraints()
        .map_err(extension)?
        .is_some_and(|bc| bc.value.ca);
    let key_usage = cert.key_usage().map_err(extension)?.map(|ku| *ku.value);
    if ca {
        if !is_ca {
            return Err(usage(
                "a CA certificate must be marked as a CA (basicConstraints)".into(),
            ));
        }
        if !key_usage.is_some_and(|ku| ku.key_cert_sign()) {
            return Err(usage("a CA certificate must allow keyCertSign".into()));
        }
        return Ok(());
    }
    if is_ca {
        return Err(usage("an identity's certificate must not be a CA's".into()));
    }
    match key_usage {
        Some(ku) if ku.digital_signature() && !ku.key_cert_sign() && !ku.crl_sign() => {}
        _ => {
            return Err(usage(
                "an identity's certificate must allow digitalSignature and neither keyCertSign \
                 nor cRLSign"
                    .into(),
            ));
        }
    }
    if let Some(eku) = cert.extended_key_usage().map_err(extension)?
        && !(eku.value.any || eku.value.client_auth)
    {
        return Err(usage(
            "its extended key usage does not allow clientAuth".into(),
        ));
    }
    Ok(())
}

fn ed25519_key(
    cert: &X509Certificate<'_>,
    what: &'static str,
) -> Result<VerifyingKey, IdentityError> {
    let spki = cert.public_key();
    if spki.algorithm.algorithm != OID_SIG_ED25519 {
        return Err(IdentityError::WrongKeyType { what });
    }
    let bytes: [u8; 32] = spki
        .subject_public_key
        .data
        .as_ref()
        .try_into()
        .map_err(|_| IdentityError::WrongKeyType { what })?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| IdentityError::WrongKeyType { what })
}

fn first<'a>(
    mut values: impl Iterator<Item = &'a x509_parser::x509::AttributeTypeAndValue<'a>>,
) -> Option<String> {
    values
        .next()
        .and_then(|v| v.as_str().ok())
        .map(str::to_string)
}

fn signed_by(cert: &X509Certificate<'_>, key: &VerifyingKey) -> bool {
    let algorithm: &Oid<'_> = &cert.signature_algorithm.algorithm;
    if *algorithm != OID_SIG_ED25519 {
        return false;
    }
    let Ok(signature) = Signature::from_slice(&cert.signature_value.data) else {
        return false;
    };
    key.verify_strict(cert.tbs_certificate.as_ref(), &signature)
        .is_ok()
}

impl Msp {
    /// Trusts the given CA certificates (DER), one per organisation. Each must be a valid,
    /// self-signed Ed25519 certificate naming its organisation in O.
    pub fn new<'a>(ca_certs: impl IntoIterator<Item = &'a [u8]>) -> Result<Self, IdentityError> {
        Ok(Msp {
            trust: RwLock::new(Arc::new(Trust {
                cas: trusted_cas(ca_certs)?,
                epoch: 0,
            })),
            cache: RwLock::new(Cache::default()),
            signatures: SignatureCache::default(),
        })
    }

    /// Trusts `ca_certs` (as [`Msp::new`]) and, from now on, refuses every certificate
    /// that an organisation's CA issued for a key `revoked` pairs with that organisation;
    /// bumps the epoch and forgets every certificate verified before.
    pub fn reconfigure<'a>(
        &self,
        ca_certs: impl IntoIterator<Item = &'a [u8]>,
        revoked: impl IntoIterator<Item = (String, [u8; 32])>,
    ) -> Result<(), IdentityError> {
        let mut cas = trusted_cas(ca_certs)?;
        for (org, key) in revoked {
            if let Some(ca) = cas.iter_mut().find(|ca| ca.org == org) {
                ca.revoked.insert(key);
            }
        }
        let mut trust = self.trust.write().unwrap_or_else(PoisonError::into_inner);
        // The cache moves to the new epoch while the trust is still locked: a
        // verification under the old trust that ends after this inserts nothing.
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        *trust = Arc::new(Trust {
            cas,
            epoch: trust.epoch + 1,
        });
        cache.epoch = trust.epoch;
        cache.identities.clear();
        Ok(())
    }

    /// How many times the trust changed since this `Msp` was made.
    pub fn epoch(&self) -> u64 {
        self.trust().epoch
    }

    fn trust(&self) -> Arc<Trust> {
        self.trust
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The CAs of `ca_certs` (DER), each a valid self-signed Ed25519 certificate naming its
/// organisation in O.
fn trusted_cas<'a>(
    ca_certs: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<TrustedCa>, IdentityError> {
    let mut cas = Vec::new();
    for der in ca_certs {
        let cert = parse(der, "CA certificate")?;
        let key = ed25519_key(&cert, "CA certificate")?;
        check_usage(&cert, true, "CA certificate")?;
        if !signed_by(&cert, &key) {
            return Err(IdentityError::BadCertificateSignature {
                ca_org: cert.subject().to_string(),
            });
        }
        let org =
            first(cert.subject().iter_organization()).ok_or_else(|| IdentityError::Malformed {
                what: "CA certificate",
                message: "no organisation (O) in the subject".into(),
            })?;
        cas.push(TrustedCa {
            org,
            revoked: HashSet::new(),
            der: der.to_vec(),
            subject_raw: cert.subject().as_raw().to_vec(),
            key,
        });
    }
    Ok(cas)
}

impl Msp {
    /// The CA certificates trusted (DER), in the order given: what a TLS stack needs to
    /// check a member's certificate presented as a TLS client certificate.
    pub fn ca_certs(&self) -> Vec<Vec<u8>> {
        self.trust().cas.iter().map(|ca| ca.der.clone()).collect()
    }

    /// The organisations, in the order their CAs were given.
    pub fn orgs(&self) -> Vec<String> {
        self.trust().cas.iter().map(|ca| ca.org.clone()).collect()
    }

    /// Verifies a certificate (DER) at time `now` (Unix seconds): issued and signed by one
    /// of the network's CAs, for that CA's organisation, Ed25519, with a role OU, and
    /// within its validity period. A certificate verified before is served from the cache
    /// (only its validity period is checked again).
    pub fn verify(&self, cert_der: &[u8], now: i64) -> Result<Arc<Identity>, IdentityError> {
        let digest: [u8; 32] = Sha256::digest(cert_der).into();
        if let Some(identity) = self.cached_identity(&digest) {
            identity.check_validity(now)?;
            return Ok(identity);
        }
        let trust = self.trust();
        let identity = Arc::new(verify_under(&trust, cert_der)?);
        identity.check_validity(now)?;
        // Revoked certificates are never cached: the cache holds usable ones only, and a
        // reconfiguration empties it. One verified under a trust replaced meanwhile is
        // not inserted (see [`Cache`]).
        if let Ok(mut cache) = self.cache.write()
            && cache.epoch == trust.epoch
        {
            if cache.identities.len() >= IDENTITY_CACHE_MAX {
                cache.identities.clear();
            }
            cache.identities.insert(digest, identity.clone());
        }
        Ok(identity)
    }

    /// The transaction signatures this process has found valid (see [`SignatureCache`]).
    pub fn signatures(&self) -> &SignatureCache {
        &self.signatures
    }

    /// The identity a certificate (DER) holds, checked as [`Msp::verify`] checks it but
    /// at no particular time: what a directory's keys are, whatever their validity. One
    /// [`Msp::verify`] found valid under the trust in force is served from its cache
    /// (the same chain check, done once).
    pub fn identify(&self, cert_der: &[u8]) -> Result<Identity, IdentityError> {
        let digest: [u8; 32] = Sha256::digest(cert_der).into();
        match self.cached_identity(&digest) {
            Some(identity) => Ok((*identity).clone()),
            None => verify_under(&self.trust(), cert_der),
        }
    }

    /// The identity of the certificate whose SHA-256 is `digest`, if verified before
    /// under the trust in force.
    fn cached_identity(&self, digest: &[u8; 32]) -> Option<Arc<Identity>> {
        self.cache
            .read()
            .ok()
            .and_then(|cache| cache.identities.get(digest).cloned())
    }

    /// Number of cached certificates.
    pub fn cached(&self) -> usize {
        self.cache.read().map(|c| c.identities.len()).unwrap_or(0)
    }
}

/// Checks a certificate (DER) against `trust`, at no particular time.
fn verify_under(trust: &Trust, der: &[u8]) -> Result<Identity, IdentityError> {
    let cert = parse(der, "certificate")?;
    let key = ed25519_key(&cert, "certificate")?;
    check_usage(&cert, false, "certificate")?;
    let ca = trust
        .cas
        .iter()
        .find(|ca| ca.subject_raw == cert.issuer().as_raw())
        .ok_or_else(|| IdentityError::UnknownCa {
            issuer: cert.issuer().to_string(),
        })?;
    if !signed_by(&cert, &ca.key) {
        return Err(IdentityError::BadCertificateSignature {
            ca_org: ca.org.clone(),
        });
    }
    let claimed = first(cert.subject().iter_organization()).unwrap_or_default();
    if claimed != ca.org {
        return Err(IdentityError::WrongOrg {
            claimed,
            ca_org: ca.org.clone(),
        });
    }
    let ou = first(cert.subject().iter_organizational_unit())
        .ok_or_else(|| IdentityError::BadRole("no OU in the subject".into()))?;
    let role: Role = ou
        .parse()
        .map_err(|e: super::UnknownRole| IdentityError::BadRole(e.to_string()))?;
    let name = first(cert.subject().iter_common_name()).unwrap_or_default();
    if ca.revoked.contains(&key.to_bytes()) {
        return Err(IdentityError::Revoked {
            name: format!("{}/{name}", ca.org),
        });
    }
    let validity = cert.validity();
    Ok(Identity {
        org: ca.org.clone(),
        role,
        name,
        key: key.to_bytes(),
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
        cert_der: der.to_vec(),
        verifying_key: key,
    })
}

#[cfg(test)]
mod tests {
    use time::{Duration, OffsetDateTime};

    use super::*;
    use crate::identity::{CertificateAuthority, Signer};

    fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    fn network() -> (CertificateAuthority, CertificateAuthority, Msp) {
        let org1 = CertificateAuthority::new("Org1", Duration::days(365)).expect("ca");
        let org2 = CertificateAuthority::new("Org2", Duration::days(365)).expect("ca");
        let msp = Msp::new([org1.cert_der(), org2.cert_der()]).expect("msp");
        (org1, org2, msp)
    }

    #[test]
    fn issued_identities_verify_sign_and_are_cached() {
        let (org1, org2, msp) = network();
        assert_eq!(msp.orgs(), vec!["Org1", "Org2"]);
        let alice = org1
            .issue(Role::Client, "alice", Duration::days(30))
            .expect("issue");
        let peer = org2
            .issue(Role::Peer, "peer0", Duration::days(30))
            .expect("issue");

        let id = msp.verify(&alice.cert_der, now()).expect("valid");
        assert_eq!(
            (id.org.as_str(), id.role, id.name.as_str()),
            ("Org1", Role::Client, "alice")
        );
        let p = msp.verify(&peer.cert_der, now()).expect("valid");
        assert_eq!((p.org.as_str(), p.role), ("Org2", Role::Peer));
        assert_eq!(msp.cached(), 2);
        let again = msp.verify(&alice.cert_der, now()).expect("cached");
        assert!(Arc::ptr_eq(&id, &again), "served from the cache");
        let identified = msp.identify(&alice.cert_der).expect("identified");
        assert_eq!(
            identified, *id,
            "the cached identity, as checked without it"
        );
        let uncached = Msp::new([org1.cert_der(), org2.cert_der()]).unwrap();
        assert_eq!(
            uncached.identify(&alice.cert_der).expect("identified"),
            identified
        );

        let signer = Signer::new(&alice).expect("signer");
        assert_eq!(signer.cert_der(), alice.cert_der.as_slice());
        let sig = signer.sign(b"proposal bytes");
        id.verify(b"proposal bytes", &sig)
            .expect("signature verifies");
        id.require_role(&[Role::Client, Role::Admin])
            .expect("client may submit");
    }

    #[test]
    fn unknown_ca_is_refused() {
        let (_, _, msp) = network();
        let rogue = CertificateAuthority::new("Org1", Duration::days(365)).expect("ca");
        let mallory = rogue
            .issue(Role::Admin, "mallory", Duration::days(1))
            .expect("issue");
        let err = msp
            .verify(&mallory.cert_der, now())
            .expect_err("not our CA");
        // Same name as Org1's CA but another key: the signature check catches it.
        assert!(
            matches!(
                err,
                IdentityError::BadCertificateSignature { .. } | IdentityError::UnknownCa { .. }
            ),
            "{err}"
        );
        let other = CertificateAuthority::new("Org9", Duration::days(365)).expect("ca");
        let eve = other
            .issue(Role::Client, "eve", Duration::days(1))
            .expect("issue");
        assert!(matches!(
            msp.verify(&eve.cert_der, now()),
            Err(IdentityError::UnknownCa { .. })
        ));
        assert_eq!(msp.cached(), 0, "refused certificates are not cached");
    }

    #[test]
    fn wrong_org_is_refused() {
        let (org1, _, msp) = network();
        let t = OffsetDateTime::now_utc();
        let liar = org1
            .issue_raw(
                "Org2",
                Some("peer"),
                "peer0",
                t - Duration::hours(1),
                t + Duration::days(1),
            )
            .expect("issue");
        assert_eq!(
            msp.verify(&liar.cert_der, now()),
            Err(IdentityError::WrongOrg {
                claimed: "Org2".into(),
                ca_org: "Org1".into()
            })
        );
    }

    #[test]
    fn expired_and_not_yet_valid_are_refused_even_from_the_cache() {
        let (org1, _, msp) = network();
        let t = OffsetDateTime::now_utc();
        let old = org1
            .issue_raw(
                "Org1",
                Some("client"),
                "old",
                t - Duration::days(10),
                t - Duration::days(1),
            )
            .expect("issue");
        assert!(matches!(
            msp.verify(&old.cert_der, now()),
            Err(IdentityError::OutsideValidity {
                state: "expired",
                ..
            })
        ));
        let early = org1
            .issue_raw(
                "Org1",
                Some("client"),
                "early",
                t + Duration::days(1),
                t + Duration::days(2),
            )
            .expect("issue");
        assert!(matches!(
            msp.verify(&early.cert_der, now()),
            Err(IdentityError::OutsideValidity {
                state: "not yet valid",
                ..
            })
        ));
        let short = org1
            .issue(Role::Client, "short", Duration::days(1))
            .expect("issue");
        msp.verify(&short.cert_der, now()).expect("valid now");
        let later = now() + 3 * 86_400;
        assert!(matches!(
            msp.verify(&short.cert_der, later),
            Err(IdentityError::OutsideValidity {
                state: "expired",
                ..
            })
        ));
    }

    #[test]
    fn wrong_or_missing_role_is_refused() {
        let (org1, _, msp) = network();
        let client = org1
            .issue(Role::Client, "bob", Duration::days(1))
            .expect("issue");
        let id = msp.verify(&client.cert_der, now()).expect("valid");
        assert!(matches!(
            id.require_role(&[Role::Peer]),
            Err(IdentityError::WrongRole {
                role: Role::Client,
                ..
            })
        ));
        let t = OffsetDateTime::now_utc();
        let no_ou = org1
            .issue_raw(
                "Org1",
                None,
                "nobody",
                t - Duration::hours(1),
                t + Duration::days(1),
            )
            .expect("issue");
        assert!(matches!(
            msp.verify(&no_ou.cert_der, now()),
            Err(IdentityError::BadRole(_))
        ));
        let odd = org1
            .issue_raw(
                "Org1",
                Some("janitor"),
                "x",
                t - Duration::hours(1),
                t + Duration::days(1),
            )
            .expect("issue");
        assert!(matches!(
            msp.verify(&odd.cert_der, now()),
            Err(IdentityError::BadRole(_))
        ));
    }

    #[test]
    fn tampered_certificates_and_signatures_are_refused() {
        let (org1, _, msp) = network();
        let alice = org1
            .issue(Role::Client, "alice", Duration::days(1))
            .expect("issue");
        // Flip a byte of the CN inside the signed part: the CA signature no longer holds.
        let mut tampered = alice.cert_der.clone();
        let at = tampered
            .windows(5)
            .position(|w| w == b"alice")
            .expect("CN present");
        tampered[at] = b'A';
        assert_eq!(
            msp.verify(&tampered, now()),
            Err(IdentityError::BadCertificateSignature {
                ca_org: "Org1".into()
            })
        );
        // Garbage and truncation are malformed, not panics.
        assert!(matches!(
            msp.verify(b"not a certificate", now()),
            Err(IdentityError::Malformed { .. })
        ));
        let cut = &alice.cert_der[..alice.cert_der.len() / 2];
        assert!(matches!(
            msp.verify(cut, now()),
            Err(IdentityError::Malformed { .. })
        ));

        let id = msp.verify(&alice.cert_der, now()).expect("valid");
        let signer = Signer::new(&alice).expect("signer");
        let mut sig = signer.sign(b"pay bob 10");
        assert!(matches!(
            id.verify(b"pay bob 99", &sig),
            Err(IdentityError::BadSignature { .. })
        ));
        sig[7] ^= 1;
        assert!(matches!(
            id.verify(b"pay bob 10", &sig),
            Err(IdentityError::BadSignature { .. })
        ));
        assert!(matches!(
            id.verify(b"pay bob 10", &sig[..10]),
            Err(IdentityError::BadSignature { .. })
        ));
        // Another identity's signature is not alice's.
        let bob = org1
            .issue(Role::Client, "bob", Duration::days(1))
            .expect("issue");
        let bob_sig = Signer::new(&bob).expect("signer").sign(b"pay bob 10");
        assert!(id.verify(b"pay bob 10", &bob_sig).is_err());
    }

    #[test]
    fn a_certificate_re_encoded_outside_its_signed_part_is_refused() {
        let (org1, _, msp) = network();
        let alice = org1
            .issue(Role::Client, "alice", Duration::days(1))
            .expect("issue");
        // NULL parameters in the outer signature algorithm: the CA's signature still
        // holds (it covers the inner one), the bytes and their hash differ.
        let reencoded = runnel_testing::certs::with_null_parameters(&alice.cert_der);
        assert_ne!(reencoded, alice.cert_der);
        assert!(
            matches!(
                msp.verify(&reencoded, now()),
                Err(IdentityError::NotCanonical { .. })
            ),
            "{:?}",
            msp.verify(&reencoded, now())
        );
        // A length in its long form where the short one fits, around the signature.
        let mut long = alice.cert_der.clone();
        let at = long.len() - 67;
        assert_eq!(&long[at..at + 3], &[0x03, 0x41, 0x00]);
        long.splice(at + 1..at + 2, [0x81, 0x41]);
        let body = long.len() - 4;
        long[2..4].copy_from_slice(&u16::try_from(body).unwrap().to_be_bytes());
        assert!(matches!(
            msp.verify(&long, now()),
            Err(IdentityError::NotCanonical { .. } | IdentityError::Malformed { .. })
        ));
        // The same certificate as issued still verifies, and nothing refused is cached.
        assert_eq!(msp.cached(), 0);
        msp.verify(&alice.cert_der, now()).expect("as issued");
    }

    #[test]
    fn a_revocation_names_a_key_and_refuses_every_certificate_of_it() {
        let (org1, org2, msp) = network();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let first = org1
            .issue_custom(&key, Role::Client, "alice", |_| {})
            .unwrap();
        // Another certificate the CA issued for the same key, with other bytes.
        let second = org1
            .issue_custom(&key, Role::Client, "alice", |p| {
                p.not_after = OffsetDateTime::now_utc() + Duration::days(2);
            })
            .unwrap();
        let other_org = org2
            .issue_custom(&key, Role::Client, "alice", |_| {})
            .unwrap();
        let alice = msp.verify(&first, now()).expect("valid");
        assert_eq!(msp.verify(&second, now()).unwrap().key, alice.key);

        msp.reconfigure(
            [org1.cert_der(), org2.cert_der()],
            [("Org1".to_string(), alice.key)],
        )
        .unwrap();
        for cert in [&first, &second] {
            assert!(matches!(
                msp.verify(cert, now()),
                Err(IdentityError::Revoked { .. })
            ));
        }
        // Org1's revocation is of Org1's certificates: Org2's CA answers for its own.
        msp.verify(&other_org, now()).expect("Org2's certificate");
    }

    #[test]
    fn what_a_certificate_may_do_is_checked_for_its_role() {
        let (org1, _, msp) = network();
        let key = || rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let no_signing = org1
            .issue_custom(&key(), Role::Peer, "p", |p| {
                p.key_usages = vec![rcgen::KeyUsagePurpose::KeyEncipherment];
            })
            .unwrap();
        let no_usage = org1
            .issue_custom(&key(), Role::Peer, "p", |p| p.key_usages.clear())
            .unwrap();
        let signs_certificates = org1
            .issue_custom(&key(), Role::Admin, "a", |p| {
                p.key_usages.push(rcgen::KeyUsagePurpose::KeyCertSign);
            })
            .unwrap();
        let a_ca = org1
            .issue_custom(&key(), Role::Admin, "a", |p| {
                p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            })
            .unwrap();
        let server_only = org1
            .issue_custom(&key(), Role::Client, "c", |p| {
                p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
            })
            .unwrap();
        for cert in [no_signing, no_usage, signs_certificates, a_ca, server_only] {
            let refused = msp.verify(&cert, now()).unwrap_err();
            assert!(
                matches!(refused, IdentityError::KeyUsage { .. }),
                "{refused}"
            );
        }
        let client_auth = org1
            .issue_custom(&key(), Role::Client, "c", |p| {
                p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            })
            .unwrap();
        msp.verify(&client_auth, now())
            .expect("clientAuth is allowed");

        // A CA certificate that may not sign certificates is not trusted as a CA.
        let ca_key = key();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Org3");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let weak_ca = params.self_signed(&ca_key).unwrap();
        assert!(matches!(
            Msp::new([weak_ca.der().as_ref()]),
            Err(IdentityError::KeyUsage { .. })
        ));
    }

    #[test]
    fn a_verification_racing_a_revocation_leaves_nothing_the_new_trust_refuses() {
        // Each round: a thread verifies alice's certificate over and over while the
        // trust changes to revoke her. Once the change is made, no verification may
        // accept her, from the cache or otherwise.
        use std::sync::atomic::{AtomicBool, Ordering};
        let (org1, org2, _) = network();
        let alice = org1
            .issue(Role::Client, "alice", Duration::days(1))
            .expect("issue");
        let key = Msp::new([org1.cert_der()])
            .unwrap()
            .identify(&alice.cert_der)
            .unwrap()
            .key;
        for _ in 0..300 {
            let msp = Arc::new(Msp::new([org1.cert_der(), org2.cert_der()]).unwrap());
            let stop = Arc::new(AtomicBool::new(false));
            let verifier = {
                let (msp, stop, cert) = (msp.clone(), stop.clone(), alice.cert_der.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _ = msp.verify(&cert, now());
                    }
                })
            };
            // Changes that revoke nothing empty the cache, so the thread is most often
            // inside an uncached verification when the revocation lands.
            for _ in 0..3 {
                msp.reconfigure([org1.cert_der(), org2.cert_der()], [])
                    .unwrap();
            }
            msp.reconfigure(
                [org1.cert_der(), org2.cert_der()],
                [("Org1".to_string(), key)],
            )
            .unwrap();
            std::thread::yield_now();
            stop.store(true, Ordering::Relaxed);
            verifier.join().unwrap();
            assert!(
                matches!(
                    msp.verify(&alice.cert_der, now()),
                    Err(IdentityError::Revoked { .. })
                ),
                "a revoked certificate was served after the revocation"
            );
        }
    }
}
