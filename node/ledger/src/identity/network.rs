//! A whole network's identities in one call: per organisation a CA, an admin, a peer, a
//! client and an orderer, and a TLS CA with the org's node's TLS server certificate and a
//! TLS client certificate. What `runnel init` writes to disk, and what tests and
//! benchmarks stand on.

use std::path::Path;

use time::Duration;

use super::{CertificateAuthority, IdentityError, IssuedIdentity, Msp, Role, Signer, TlsAuthority};

/// The host names every TLS server certificate holds: a node is always reachable by
/// them from its own host.
pub const TLS_LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// An organisation's TLS CA certificate, inside its directory.
pub const TLS_CA_FILE: &str = "tls/ca.pem";
/// The org's node's TLS server certificate, inside its directory.
pub const TLS_SERVER_CERT_FILE: &str = "tls/server.pem";
/// The org's node's TLS server key, inside its directory.
pub const TLS_SERVER_KEY_FILE: &str = "tls/server.key";
/// The org's TLS client certificate (mutual TLS), inside its directory.
pub const TLS_CLIENT_CERT_FILE: &str = "tls/client.pem";
/// The org's TLS client key (mutual TLS), inside its directory.
pub const TLS_CLIENT_KEY_FILE: &str = "tls/client.key";

/// One organisation's TLS material: its TLS CA and what it issued.
pub struct OrgTls {
    /// The organisation's TLS CA (separate from its signing CA).
    pub ca: TlsAuthority,
    /// `peer0.<org>`'s TLS server certificate: the org's node serves its API with it.
    pub server: IssuedIdentity,
    /// `client.<org>`'s TLS client certificate, for mutual TLS.
    pub client: IssuedIdentity,
}

/// One organisation's CA and its standard identities.
pub struct OrgIdentities {
    /// The organisation's CA.
    pub ca: CertificateAuthority,
    /// `admin.<org>`, role admin: approves lifecycle transactions.
    pub admin: IssuedIdentity,
    /// `peer0.<org>`, role peer: endorses.
    pub peer: IssuedIdentity,
    /// `client.<org>`, role client: submits transactions.
    pub client: IssuedIdentity,
    /// `orderer0.<org>`, role orderer: signs block seals.
    pub orderer: IssuedIdentity,
    /// The org's TLS CA, server and client certificates.
    pub tls: OrgTls,
}

impl OrgIdentities {
    /// The organisation's name.
    pub fn org(&self) -> &str {
        self.ca.org()
    }

    /// A signer for the identity with `role`.
    pub fn signer(&self, role: Role) -> Result<Signer, IdentityError> {
        Signer::new(match role {
            Role::Admin => &self.admin,
            Role::Client => &self.client,
            Role::Peer => &self.peer,
            Role::Orderer => &self.orderer,
        })
    }
}

/// The identities of a network of organisations.
pub struct NetworkIdentities {
    /// The organisations, in the order given.
    pub orgs: Vec<OrgIdentities>,
}

impl NetworkIdentities {
    /// Generates a CA and an admin, peer, client and orderer identity for each of `orgs`,
    /// and a TLS CA with a server certificate for [`TLS_LOCAL_HOSTS`] and a client
    /// certificate, all valid from now for `valid_for`.
    pub fn generate(orgs: &[&str], valid_for: Duration) -> Result<Self, IdentityError> {
        Self::generate_with_tls_hosts(orgs, valid_for, &[])
    }

    /// [`NetworkIdentities::generate`], with the TLS server certificates also valid for
    /// `tls_hosts` (DNS names or IP addresses) besides [`TLS_LOCAL_HOSTS`].
    pub fn generate_with_tls_hosts(
        orgs: &[&str],
        valid_for: Duration,
        tls_hosts: &[String],
    ) -> Result<Self, IdentityError> {
        let mut hosts: Vec<String> = TLS_LOCAL_HOSTS.map(String::from).to_vec();
        for host in tls_hosts {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
        let orgs = orgs
            .iter()
            .map(|&org| {
                let ca = CertificateAuthority::new(org, valid_for)?;
                let tls_ca = TlsAuthority::new(org, valid_for)?;
                Ok(OrgIdentities {
                    tls: OrgTls {
                        server: tls_ca.issue_server(&format!("peer0.{org}"), &hosts, valid_for)?,
                        client: tls_ca.issue_client(&format!("client.{org}"), valid_for)?,
                        ca: tls_ca,
                    },
                    admin: ca.issue(Role::Admin, &format!("admin.{org}"), valid_for)?,
                    peer: ca.issue(Role::Peer, &format!("peer0.{org}"), valid_for)?,
                    client: ca.issue(Role::Client, &format!("client.{org}"), valid_for)?,
                    orderer: ca.issue(Role::Orderer, &format!("orderer0.{org}"), valid_for)?,
                    ca,
                })
            })
            .collect::<Result<Vec<_>, IdentityError>>()?;
        Ok(NetworkIdentities { orgs })
    }

    /// The membership service that trusts these organisations' CAs.
    pub fn msp(&self) -> Result<Msp, IdentityError> {
        Msp::new(self.orgs.iter().map(|org| org.ca.cert_der()))
    }

    /// The organisation named `org`.
    pub fn org(&self, org: &str) -> Option<&OrgIdentities> {
        self.orgs.iter().find(|o| o.org() == org)
    }
}

/// The file of an organisation's CA certificate inside its directory.
const CA_FILE: &str = "ca.pem";

/// The roles written and loaded, with their file stems.
const ROLES: [Role; 4] = [Role::Admin, Role::Peer, Role::Client, Role::Orderer];

impl NetworkIdentities {
    /// Writes the network under `dir`: per organisation a directory holding `ca.pem`
    /// (the CA certificate) and `<role>.pem` / `<role>.key` for each identity, and `tls/`
    /// holding `ca.pem` (the TLS CA certificate), `server.pem` / `server.key` (the node's
    /// TLS server certificate) and `client.pem` / `client.key` (a TLS client certificate).
    /// Keys are readable by the owner only; the CAs' keys are not written.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        for org in &self.orgs {
            let org_dir = dir.join(org.org());
            std::fs::create_dir_all(org_dir.join(TLS_DIR))?;
            std::fs::write(org_dir.join(CA_FILE), org.ca.cert_pem())?;
            std::fs::write(org_dir.join(TLS_CA_FILE), org.tls.ca.cert_pem())?;
            for (cert, key, identity) in [
                (TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE, &org.tls.server),
                (TLS_CLIENT_CERT_FILE, TLS_CLIENT_KEY_FILE, &org.tls.client),
            ] {
                std::fs::write(org_dir.join(cert), &identity.cert_pem)?;
                write_key(&org_dir.join(key), &identity.key_pem)?;
            }
            for role in ROLES {
                let identity = match role {
                    Role::Admin => &org.admin,
                    Role::Client => &org.client,
                    Role::Peer => &org.peer,
                    Role::Orderer => &org.orderer,
                };
                std::fs::write(org_dir.join(format!("{role}.pem")), &identity.cert_pem)?;
                write_key(&org_dir.join(format!("{role}.key")), &identity.key_pem)?;
            }
        }
        Ok(())
    }
}

/// The directory of an organisation's TLS files, inside its directory.
const TLS_DIR: &str = "tls";

/// Writes a private key into a new file readable by its owner only, from its first
/// byte: the file is created with mode 0600 (`O_CREAT | O_EXCL`), never made private
/// afterwards, and an existing file is not overwritten.
fn write_key(path: &Path, key_pem: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key_pem.as_bytes())?;
    file.sync_all()
}

/// A network as a node reads it back from disk ([`NetworkIdentities::write`]).
pub struct NetworkKeys {
    /// The organisations, sorted by name.
    pub orgs: Vec<String>,
    ca_certs: Vec<Vec<u8>>,
    signers: Vec<(String, Role, Signer)>,
}

impl std::fmt::Debug for NetworkKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkKeys")
            .field("orgs", &self.orgs)
            .finish_non_exhaustive()
    }
}

impl NetworkKeys {
    /// Reads every organisation directory under `dir`.
    pub fn load(dir: &Path) -> Result<NetworkKeys, IdentityError> {
        let unreadable = |what: &'static str, e: std::io::Error| IdentityError::Malformed {
            what,
            message: e.to_string(),
        };
        let mut orgs: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| unreadable("identity directory", e))?
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join(CA_FILE).is_file())
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        orgs.sort();
        let mut ca_certs = Vec::new();
        let mut signers = Vec::new();
        for org in &orgs {
            let org_dir = dir.join(org);
            let read = |name: String| {
                std::fs::read_to_string(org_dir.join(&name))
                    .map_err(|e| unreadable("identity file", e))
            };
            let ca_pem = read(CA_FILE.to_string())?;
            let (_, pem) = x509_parser::pem::parse_x509_pem(ca_pem.as_bytes()).map_err(|e| {
                IdentityError::Malformed {
                    what: "CA certificate PEM",
                    message: e.to_string(),
                }
            })?;
            ca_certs.push(pem.contents);
            for role in ROLES {
                let signer =
                    Signer::from_pem(&read(format!("{role}.pem"))?, &read(format!("{role}.key"))?)?;
                signers.push((org.clone(), role, signer));
            }
        }
        if orgs.is_empty() {
            return Err(IdentityError::Malformed {
                what: "identity directory",
                message: format!("no organisation under {}", dir.display()),
            });
        }
        Ok(NetworkKeys {
            orgs,
            ca_certs,
            signers,
        })
    }

    /// The membership service trusting the loaded CAs.
    pub fn msp(&self) -> Result<Msp, IdentityError> {
        Msp::new(self.ca_certs.iter().map(Vec::as_slice))
    }

    /// The signer of `org`'s identity with `role`.
    pub fn signer(&self, org: &str, role: Role) -> Option<&Signer> {
        self.signers
            .iter()
            .find(|(o, r, _)| o == org && *r == role)
            .map(|(_, _, signer)| signer)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_key_file_is_private_from_its_creation_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peer.key");
        write_key(&path, "secret").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret");
        let again = write_key(&path, "other").unwrap_err();
        assert_eq!(again.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret");
    }
}
