//! The roles an identity can hold, carried as the certificate subject's OU (as Fabric's
//! NodeOUs).

use std::fmt;
use std::str::FromStr;

/// What an identity may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Submits transactions.
    Client,
    /// Endorses and validates.
    Peer,
    /// Orders transactions and signs seals.
    Orderer,
    /// Administers its organisation (deploys contracts, changes configuration).
    Admin,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Client, Role::Peer, Role::Orderer, Role::Admin];

    /// The OU value in certificates and the name in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Peer => "peer",
            Role::Orderer => "orderer",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of Runnel's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role `{0}` (expected client, peer, orderer or admin)")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownRole(s.to_string()))
    }
}
