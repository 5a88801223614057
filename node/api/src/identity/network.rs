//! A whole network's identities in one call: per organisation a CA, an admin, a peer, a
//! client and an orderer, and a TLS CA with the org's node's TLS server certificate and a
//! TLS client certificate. What `runnel init` writes to disk, and what tests and
//! benchmarks stand on.

use std::path::Path;

use time::Duration;

use super::{
    CertificateAuthority, IdentityError, IssuedIdentity, Msp, NETWORK_FILE, NetworkDefinition,
    Role, Signer, TlsAuthority,
};

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
        Signer::new(self.identity(role))
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
    /// Writes the whole network as one directory for one process standing for every
    /// organisation (an embedded ledger, a dev node, `runnel init --one-node`): its
    /// definition ([`NETWORK_FILE`], channel `channel`) and under `identities/` per
    /// organisation `<role>.pem` / `<role>.key` for each identity, `ca.pem` (the CA
    /// certificate), and `tls/` holding `ca.pem` (the TLS CA certificate), `server.pem` /
    /// `server.key` (the node's TLS server certificate) and `client.pem` / `client.key`
    /// (a TLS client certificate). Keys are readable by the owner only; the CAs' keys are
    /// not written. The identities are written aside and renamed into place last.
    pub fn write(&self, dir: &Path, channel: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        NetworkDefinition::of(self, channel).write(dir)?;
        let staging = dir.join("identities.new");
        for org in &self.orgs {
            let org_dir = staging.join(org.org());
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
                write_identity(&org_dir, role.as_str(), org.identity(role))?;
            }
        }
        std::fs::rename(&staging, dir.join(IDENTITIES_DIR))
    }
}

impl OrgIdentities {
    /// The identity with `role`.
    pub fn identity(&self, role: Role) -> &IssuedIdentity {
        match role {
            Role::Admin => &self.admin,
            Role::Client => &self.client,
            Role::Peer => &self.peer,
            Role::Orderer => &self.orderer,
        }
    }
}

/// Writes `identity` as `<name>.pem` and `<name>.key` in `dir` (the key readable by its
/// owner only, never over an existing one).
pub fn write_identity(dir: &Path, name: &str, identity: &IssuedIdentity) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(format!("{name}.pem")), &identity.cert_pem)?;
    write_key(&dir.join(format!("{name}.key")), &identity.key_pem)
}

/// The directory of an organisation's TLS files, inside its directory.
const TLS_DIR: &str = "tls";

/// Writes a private key into a new file readable by its owner only, from its first
/// byte: the file is created with mode 0600 (`O_CREAT | O_EXCL`), never made private
/// afterwards, and an existing file is not overwritten.
pub fn write_key(path: &Path, key_pem: &str) -> std::io::Result<()> {
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

/// One private key a directory holds, with the certificate it belongs to.
pub struct HeldKey {
    /// The organisation of its certificate.
    pub org: String,
    /// The file stem it is stored under (`peer`, `admin`, `alice`, ...).
    pub name: String,
    /// The role of its certificate.
    pub role: Role,
    /// Signs with it.
    pub signer: Signer,
}

/// A node's or a member's directory as read back from disk: the public network
/// definition (`network.json`) and the private keys it holds, each
/// `identities/<org>/<name>.key` beside its certificate `<name>.pem`.
pub struct NetworkKeys {
    /// The organisations, in the definition's order.
    pub orgs: Vec<String>,
    definition: NetworkDefinition,
    keys: Vec<HeldKey>,
}

impl std::fmt::Debug for NetworkKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkKeys")
            .field("orgs", &self.orgs)
            .finish_non_exhaustive()
    }
}

impl NetworkKeys {
    /// Reads `dir`'s network definition and every key under `dir/identities/<org>/`.
    /// Each key's certificate must be issued by its directory's organisation's CA as the
    /// definition names it; a key without its certificate, or one that does not match
    /// it, is refused.
    pub fn load(dir: &Path) -> Result<NetworkKeys, IdentityError> {
        let unreadable = |what: &'static str, e: std::io::Error| IdentityError::Malformed {
            what,
            message: e.to_string(),
        };
        if !dir.join(NETWORK_FILE).is_file() {
            return Err(IdentityError::Malformed {
                what: "network directory",
                message: format!(
                    "{} has no {NETWORK_FILE}: give the directory `runnel init` made for this \
                     node or member (a directory made by an older runnel must be made again)",
                    dir.display()
                ),
            });
        }
        let definition = NetworkDefinition::load(dir)?;
        let msp = definition.msp()?;
        let identities = dir.join(IDENTITIES_DIR);
        let mut keys = Vec::new();
        let org_dirs = match std::fs::read_dir(&identities) {
            Ok(entries) => entries.filter_map(Result::ok).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(unreadable("identity directory", e)),
        };
        for org_dir in org_dirs {
            let Ok(org) = org_dir.file_name().into_string() else {
                continue;
            };
            if !org_dir.path().is_dir() {
                continue;
            }
            let mut files: Vec<_> = std::fs::read_dir(org_dir.path())
                .map_err(|e| unreadable("identity directory", e))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "key"))
                .collect();
            files.sort();
            for key_path in files {
                keys.push(held_key(&msp, &org, &key_path)?);
            }
        }
        keys.sort_by(|a, b| (&a.org, &a.name).cmp(&(&b.org, &b.name)));
        Ok(NetworkKeys {
            orgs: definition.org_names(),
            definition,
            keys,
        })
    }

    /// The public network definition.
    pub fn definition(&self) -> &NetworkDefinition {
        &self.definition
    }

    /// The membership service trusting the definition's CAs.
    pub fn msp(&self) -> Result<Msp, IdentityError> {
        self.definition.msp()
    }

    /// The signer of `org`'s identity with `role`: the one stored under the role's name
    /// (`peer.key`) if there is one, else the first of that role.
    pub fn signer(&self, org: &str, role: Role) -> Option<&Signer> {
        let of_role = |key: &&HeldKey| key.org == org && key.role == role;
        self.keys
            .iter()
            .filter(of_role)
            .find(|key| key.name == role.as_str())
            .or_else(|| self.keys.iter().find(of_role))
            .map(|key| &key.signer)
    }

    /// The signer stored as `identities/<org>/<name>.key`.
    pub fn named(&self, org: &str, name: &str) -> Option<&HeldKey> {
        self.keys
            .iter()
            .find(|key| key.org == org && key.name == name)
    }

    /// Every key held.
    pub fn held(&self) -> &[HeldKey] {
        &self.keys
    }
}

/// The key at `key_path` and its certificate beside it, checked against the network.
fn held_key(msp: &Msp, org: &str, key_path: &Path) -> Result<HeldKey, IdentityError> {
    let refused = |message: String| IdentityError::Malformed {
        what: "identity file",
        message: format!("{}: {message}", key_path.display()),
    };
    let cert_path = key_path.with_extension("pem");
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| refused(format!("{}: {e}", path.display())))
    };
    let cert_pem = read(&cert_path)?;
    let key_pem = read(key_path)?;
    let signer = Signer::from_pem(&cert_pem, &key_pem).map_err(|e| refused(e.to_string()))?;
    let identity = msp
        .identify(signer.cert_der())
        .map_err(|e| refused(format!("its certificate is not the network's: {e}")))?;
    if identity.verifying_key().to_bytes() != signer.public_key() {
        return Err(refused("the key is not the key of its certificate".into()));
    }
    if identity.org != org {
        return Err(refused(format!(
            "its certificate is {}'s, under {org}'s directory",
            identity.org
        )));
    }
    let name = key_path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or_default()
        .to_string();
    Ok(HeldKey {
        org: org.to_string(),
        name,
        role: identity.role,
        signer,
    })
}

/// The directory of identities inside a node's or member's directory.
pub const IDENTITIES_DIR: &str = "identities";

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
