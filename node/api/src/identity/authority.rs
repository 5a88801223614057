//! Issuing identities: an organisation's CA and the certificates it signs, and its TLS CA
//! with the certificates the API is served and reached with.

use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::{Signer as _, SigningKey};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, PKCS_ED25519,
};
use time::{Duration, OffsetDateTime};

use super::{IdentityError, Role};

fn issue_error(e: rcgen::Error) -> IdentityError {
    IdentityError::Issue(e.to_string())
}

/// An organisation's certificate authority: a self-signed Ed25519 CA certificate and its
/// key.
pub struct CertificateAuthority {
    org: String,
    issuer: Issuer<'static, KeyPair>,
    cert_der: Vec<u8>,
    cert_pem: String,
}

/// A certificate and its private key, as files on disk hold them.
#[derive(Clone)]
pub struct IssuedIdentity {
    /// The certificate, DER.
    pub cert_der: Vec<u8>,
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM.
    pub key_pem: String,
}

impl std::fmt::Debug for IssuedIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("IssuedIdentity").finish_non_exhaustive()
    }
}

fn dn(org: &str, ou: Option<&str>, cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, org);
    if let Some(ou) = ou {
        dn.push(DnType::OrganizationalUnitName, ou);
    }
    dn.push(DnType::CommonName, cn);
    dn
}

impl CertificateAuthority {
    /// A new CA for `org`, valid from now for `valid_for`.
    pub fn new(org: &str, valid_for: Duration) -> Result<Self, IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ED25519).map_err(issue_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue_error)?;
        params.distinguished_name = dn(org, None, &format!("ca.{org}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + valid_for;
        let cert = params.self_signed(&key).map_err(issue_error)?;
        Ok(CertificateAuthority {
            org: org.to_string(),
            issuer: Issuer::new(params, key),
            cert_der: cert.der().to_vec(),
            cert_pem: cert.pem(),
        })
    }

    /// The organisation.
    pub fn org(&self) -> &str {
        &self.org
    }

    /// The CA certificate, DER (what an [`Msp`](super::Msp) trusts).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA's private key, PKCS#8 PEM: what issues the org's identities. It belongs
    /// with the org's CA operator, never on a node.
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// The CA of a certificate and key written before ([`Self::cert_pem`],
    /// [`Self::key_pem`]): an Ed25519 CA naming its organisation in O.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let cert_der = super::certificate_der(cert_pem, "CA certificate")?;
        let msp = super::Msp::new([cert_der.as_slice()])?;
        let org = msp.orgs().remove(0);
        let (issuer, cert_der) = reload_issuer(cert_pem, key_pem, &PKCS_ED25519)?;
        Ok(CertificateAuthority {
            org,
            issuer,
            cert_der,
            cert_pem: cert_pem.to_string(),
        })
    }

    /// Issues a certificate for `name` with `role` in this CA's organisation, valid from
    /// now for `valid_for`.
    pub fn issue(
        &self,
        role: Role,
        name: &str,
        valid_for: Duration,
    ) -> Result<IssuedIdentity, IdentityError> {
        let now = OffsetDateTime::now_utc();
        self.issue_raw(
            &self.org,
            Some(role.as_str()),
            name,
            now - Duration::minutes(5),
            now + valid_for,
        )
    }

    /// Issues a certificate with any subject and validity (tests build bad ones with it).
    pub(crate) fn issue_raw(
        &self,
        org: &str,
        ou: Option<&str>,
        name: &str,
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    ) -> Result<IssuedIdentity, IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ED25519).map_err(issue_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue_error)?;
        params.distinguished_name = dn(org, ou, name);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.not_before = not_before;
        params.not_after = not_after;
        let cert = params.signed_by(&key, &self.issuer).map_err(issue_error)?;
        Ok(IssuedIdentity {
            cert_der: cert.der().to_vec(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

#[cfg(any(test, feature = "test-support"))]
impl CertificateAuthority {
    /// A certificate (DER) for `key` with `role` and `name`, its parameters changed by
    /// `tweak` before it is signed (tests build bad ones with it; the `test-support`
    /// feature lends it to other crates' tests).
    #[doc(hidden)]
    pub fn issue_custom(
        &self,
        key: &KeyPair,
        role: Role,
        name: &str,
        tweak: impl FnOnce(&mut CertificateParams),
    ) -> Result<Vec<u8>, IdentityError> {
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue_error)?;
        params.distinguished_name = dn(&self.org, Some(role.as_str()), name);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + Duration::days(1);
        tweak(&mut params);
        let cert = params.signed_by(key, &self.issuer).map_err(issue_error)?;
        Ok(cert.der().to_vec())
    }
}

/// An issuer from a CA certificate and its key (PEM), the key of `algorithm`; the
/// certificate's DER.
fn reload_issuer(
    cert_pem: &str,
    key_pem: &str,
    algorithm: &'static rcgen::SignatureAlgorithm,
) -> Result<(Issuer<'static, KeyPair>, Vec<u8>), IdentityError> {
    let malformed = |what: &'static str| {
        move |e: rcgen::Error| IdentityError::Malformed {
            what,
            message: e.to_string(),
        }
    };
    let key =
        KeyPair::from_pem_and_sign_algo(key_pem, algorithm).map_err(malformed("CA private key"))?;
    let cert_der = super::certificate_der(cert_pem, "CA certificate")?;
    let expected = x509_parser::parse_x509_certificate(&cert_der)
        .map_err(|e| IdentityError::Malformed {
            what: "CA certificate",
            message: e.to_string(),
        })?
        .1
        .public_key()
        .subject_public_key
        .data
        .to_vec();
    if key.public_key_raw() != expected.as_slice() {
        return Err(IdentityError::Malformed {
            what: "CA private key",
            message: "it is not the key of the CA certificate".into(),
        });
    }
    let issuer = Issuer::from_ca_cert_pem(cert_pem, key).map_err(malformed("CA certificate"))?;
    Ok((issuer, cert_der))
}

/// Signs on behalf of an identity: its certificate and Ed25519 key.
#[derive(Clone)]
pub struct Signer {
    cert_der: Vec<u8>,
    key: SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer from an issued identity.
    pub fn new(identity: &IssuedIdentity) -> Result<Self, IdentityError> {
        Self::from_pem(&identity.cert_pem, &identity.key_pem)
    }

    /// A signer from a PEM certificate and a PKCS#8 PEM Ed25519 key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| {
            IdentityError::Malformed {
                what: "certificate PEM",
                message: e.to_string(),
            }
        })?;
        let key = SigningKey::from_pkcs8_pem(key_pem).map_err(|e| IdentityError::Malformed {
            what: "Ed25519 private key",
            message: e.to_string(),
        })?;
        Ok(Signer {
            cert_der: pem.contents,
            key,
        })
    }

    /// The certificate, DER: what goes into a proposal as its creator.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The Ed25519 public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// The Ed25519 secret key's 32 bytes: for the consensus engine of a Byzantine-fault-
    /// tolerant ordering service, which signs its votes with the orderer's key under a
    /// domain of its own. Never logged or sent.
    pub fn secret(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Signs `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

/// An organisation's TLS certificate authority, separate from its signing CA (like
/// Fabric's `tlsca`): ECDSA P-256, which every TLS stack and browser accepts. It issues
/// the certificates a node serves its API with and those clients present for mutual TLS.
/// Its certificates carry no role and are never trusted by the [`Msp`](super::Msp).
pub struct TlsAuthority {
    org: String,
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
}

impl std::fmt::Debug for TlsAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsAuthority")
            .field("org", &self.org)
            .finish_non_exhaustive()
    }
}

impl TlsAuthority {
    /// A new TLS CA for `org` (`tlsca.<org>`), valid from now for `valid_for`.
    pub fn new(org: &str, valid_for: Duration) -> Result<Self, IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(issue_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue_error)?;
        params.distinguished_name = dn(org, None, &format!("tlsca.{org}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + valid_for;
        let cert = params.self_signed(&key).map_err(issue_error)?;
        Ok(TlsAuthority {
            org: org.to_string(),
            issuer: Issuer::new(params, key),
            cert_pem: cert.pem(),
        })
    }

    /// The organisation.
    pub fn org(&self) -> &str {
        &self.org
    }

    /// The TLS CA certificate, PEM: what a client trusts to reach the org's node.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The TLS CA's private key, PKCS#8 PEM (kept with the org's CA, never on a node).
    pub fn key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// The TLS CA of a certificate and key written before, for `org`.
    pub fn from_pem(org: &str, cert_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let (issuer, _) = reload_issuer(cert_pem, key_pem, &PKCS_ECDSA_P256_SHA256)?;
        Ok(TlsAuthority {
            org: org.to_string(),
            issuer,
            cert_pem: cert_pem.to_string(),
        })
    }

    /// A TLS server certificate for `name` (its CN), valid for each of `hosts` (DNS names
    /// or IP addresses, its subject alternative names) from now for `valid_for`.
    pub fn issue_server(
        &self,
        name: &str,
        hosts: &[String],
        valid_for: Duration,
    ) -> Result<IssuedIdentity, IdentityError> {
        if hosts.is_empty() {
            return Err(IdentityError::Issue(
                "a TLS server certificate needs at least one host name".into(),
            ));
        }
        let mut params = CertificateParams::new(hosts.to_vec()).map_err(|e| {
            IdentityError::Issue(format!(
                "TLS host names {hosts:?}: {e} (give DNS names or IP addresses)"
            ))
        })?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue_tls(params, name, valid_for)
    }

    /// A TLS client certificate for `name` (its CN), for mutual TLS, valid from now for
    /// `valid_for`.
    pub fn issue_client(
        &self,
        name: &str,
        valid_for: Duration,
    ) -> Result<IssuedIdentity, IdentityError> {
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(issue_error)?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue_tls(params, name, valid_for)
    }

    fn issue_tls(
        &self,
        mut params: CertificateParams,
        name: &str,
        valid_for: Duration,
    ) -> Result<IssuedIdentity, IdentityError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(issue_error)?;
        params.distinguished_name = dn(&self.org, None, name);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + valid_for;
        let cert = params.signed_by(&key, &self.issuer).map_err(issue_error)?;
        Ok(IssuedIdentity {
            cert_der: cert.der().to_vec(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}
