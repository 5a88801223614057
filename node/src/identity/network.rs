//! A whole network's identities in one call: per organisation a CA, an admin, a peer, a
//! client and an orderer. What `runnel init` writes to disk, and what tests and
//! benchmarks stand on.

use time::Duration;

use super::{CertificateAuthority, IdentityError, IssuedIdentity, Msp, Role, Signer};

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
    /// Generates a CA and an admin, peer, client and orderer identity for each of `orgs`, all
    /// valid from now for `valid_for`.
    pub fn generate(orgs: &[&str], valid_for: Duration) -> Result<Self, IdentityError> {
        let orgs = orgs
            .iter()
            .map(|&org| {
                let ca = CertificateAuthority::new(org, valid_for)?;
                Ok(OrgIdentities {
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
