//! The network definition: what every member of a network shares and nobody keeps
//! secret. Each organisation's CA and TLS CA certificates, the endpoints of its peers,
//! the orderers, the channel, and the policies that govern contracts and the definition
//! itself. `runnel init` writes it as `network.json` beside every node's and member's
//! keys; a node trusts the CAs it names and nothing else.
//!
//! It holds no private key: a directory's keys are its own organisation's
//! ([`super::NetworkKeys`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{IdentityError, Msp, NetworkIdentities};

/// Whose approvals put a contract definition in force unless the network says otherwise
/// (a policy over the orgs' admins, each approval standing for its org's admin).
pub const DEFAULT_LIFECYCLE_POLICY: &str = "MAJORITY admin";

/// The definition's file name in a node's or a member's directory.
pub const NETWORK_FILE: &str = "network.json";

/// Who must sign a change of the definition unless it says otherwise: a majority of the
/// organisations' admins.
pub const DEFAULT_CONFIG_POLICY: &str = "MAJORITY admin";

/// What the organisations of a network share (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkDefinition {
    /// The channel every node of the network serves.
    pub channel: String,
    /// 0 at genesis; each configuration transaction puts the next one in force.
    #[serde(default)]
    pub sequence: u64,
    /// The organisations, in the order policies' shorthands list them.
    pub orgs: Vec<OrgDefinition>,
    /// The ordering service's nodes.
    #[serde(default)]
    pub orderers: Vec<OrdererNode>,
    /// How a cluster of orderers agrees: Raft (the default, absent from the JSON) or a
    /// Byzantine-fault-tolerant protocol. Never changed by an update.
    #[serde(default, skip_serializing_if = "OrderingProtocol::is_raft")]
    pub ordering: OrderingProtocol,
    /// Whose approvals put a contract definition in force: a policy over the orgs'
    /// admins (default a majority of them).
    #[serde(default = "default_lifecycle_policy")]
    pub lifecycle_policy: String,
    /// Whose signatures change this definition (default a majority of the admins).
    #[serde(default = "default_config_policy")]
    pub config_policy: String,
}

fn default_lifecycle_policy() -> String {
    DEFAULT_LIFECYCLE_POLICY.to_string()
}

fn default_config_policy() -> String {
    DEFAULT_CONFIG_POLICY.to_string()
}

/// One organisation of the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrgDefinition {
    /// Its name: the O of every certificate its CA issues.
    pub name: String,
    /// Its CA's certificate (PEM): the root of every identity of the org.
    pub ca: String,
    /// Its TLS CA's certificate (PEM): the root of its nodes' TLS certificates.
    pub tls_ca: String,
    /// Its peers, where other organisations' gateways reach them.
    #[serde(default)]
    pub peers: Vec<PeerNode>,
    /// The org's identities revoked, by key ([`revocation`]): every certificate its CA
    /// issued for one of these keys is refused, whatever its bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub revoked: Vec<String>,
}

/// A peer of an organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerNode {
    /// Its name, the CN of its peer certificate (e.g. `peer0.Org1`).
    pub name: String,
    /// Its API, `https://host:port`.
    pub endpoint: String,
}

/// How the orderers of a cluster agree on the order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderingProtocol {
    /// Raft: tolerates crashes of a minority, not lies; the orderer that cuts a block
    /// signs its seal alone.
    #[default]
    Raft,
    /// Byzantine-fault-tolerant: `n` orderers tolerate `f = (n - 1) / 3` that lie or
    /// stop; every seal carries the signatures of `n - f` of them
    /// ([`NetworkDefinition::seal_quorum`]).
    Bft,
}

impl OrderingProtocol {
    fn is_raft(&self) -> bool {
        *self == OrderingProtocol::Raft
    }

    /// Its name in the definition and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OrderingProtocol::Raft => "raft",
            OrderingProtocol::Bft => "bft",
        }
    }
}

/// The fewest orderers a Byzantine-fault-tolerant cluster runs with: `3f + 1` for `f = 1`.
pub const BFT_ORDERERS_MIN: usize = 4;

/// The most of `n` orderers that may lie or stop while a Byzantine-fault-tolerant cluster
/// stays safe and live: `f = (n - 1) / 3`.
pub fn bft_faults(n: usize) -> usize {
    n.saturating_sub(1) / 3
}

/// A node of the ordering service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrdererNode {
    /// Its name, the CN of its orderer certificate (e.g. `orderer0.Org1`).
    pub name: String,
    /// The organisation that runs it.
    pub org: String,
    /// Its ordering service, `https://host:port`.
    pub endpoint: String,
    /// Its id in the ordering cluster (Raft's or the BFT protocol's: the field keeps its
    /// first name so that definitions keep their bytes). A definition gives one to every
    /// orderer or to none (a solo orderer).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub raft_id: u64,
    /// The Ed25519 public key of its orderer certificate, hex: what it signs consensus
    /// votes and seals with. A Byzantine-fault-tolerant cluster's members are these keys,
    /// so its definition gives one to every orderer; empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn malformed(message: impl Into<String>) -> IdentityError {
    IdentityError::Malformed {
        what: "network definition",
        message: message.into(),
    }
}

/// The DER of the one certificate in `pem`.
pub fn certificate_der(pem: &str, what: &'static str) -> Result<Vec<u8>, IdentityError> {
    let (rest, parsed) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| IdentityError::Malformed {
            what,
            message: e.to_string(),
        })?;
    if parsed.label != "CERTIFICATE" {
        return Err(IdentityError::Malformed {
            what,
            message: format!("a PEM `{}`, not a CERTIFICATE", parsed.label),
        });
    }
    if rest.iter().any(|b| !b.is_ascii_whitespace()) {
        return Err(IdentityError::Malformed {
            what,
            message: "more than one PEM block".into(),
        });
    }
    Ok(parsed.contents)
}

impl NetworkDefinition {
    /// The definition of a network just generated, with no endpoints yet.
    pub fn of(network: &NetworkIdentities, channel: &str) -> NetworkDefinition {
        NetworkDefinition {
            channel: channel.to_string(),
            sequence: 0,
            orgs: network
                .orgs
                .iter()
                .map(|org| OrgDefinition {
                    name: org.org().to_string(),
                    ca: org.ca.cert_pem().to_string(),
                    tls_ca: org.tls.ca.cert_pem().to_string(),
                    peers: Vec::new(),
                    revoked: Vec::new(),
                })
                .collect(),
            orderers: Vec::new(),
            ordering: OrderingProtocol::Raft,
            lifecycle_policy: default_lifecycle_policy(),
            config_policy: default_config_policy(),
        }
    }

    /// Parses and checks a definition's JSON text.
    pub fn parse(text: &str) -> Result<NetworkDefinition, IdentityError> {
        let definition: NetworkDefinition =
            serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
        definition.check()?;
        Ok(definition)
    }

    /// Reads and checks `dir`'s [`NETWORK_FILE`].
    pub fn load(dir: &Path) -> Result<NetworkDefinition, IdentityError> {
        let path = dir.join(NETWORK_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| malformed(format!("reading {}: {e}", path.display())))?;
        NetworkDefinition::parse(&text).map_err(|e| malformed(format!("{}: {e}", path.display())))
    }

    /// Writes the definition as `dir`'s [`NETWORK_FILE`] (a new file, renamed into place).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(NETWORK_FILE);
        let staging = dir.join(format!("{NETWORK_FILE}.new"));
        let mut text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        text.push('\n');
        std::fs::write(&staging, text)?;
        std::fs::rename(&staging, path)
    }

    /// Checks what a node relies on: a channel, at least one organisation, unique names,
    /// each CA certificate an organisation's own (its O is the org's name) and self-signed,
    /// each TLS CA a certificate, and endpoints that name a scheme.
    pub fn check(&self) -> Result<(), IdentityError> {
        if self.channel.trim().is_empty() {
            return Err(malformed("no channel"));
        }
        if self.orgs.is_empty() {
            return Err(malformed("no organisation"));
        }
        let mut names: Vec<&str> = Vec::new();
        for org in &self.orgs {
            if org.name.trim().is_empty() || names.contains(&org.name.as_str()) {
                return Err(malformed(format!(
                    "organisation name `{}` is empty or repeated",
                    org.name
                )));
            }
            names.push(&org.name);
            certificate_der(&org.tls_ca, "TLS CA certificate")?;
            for peer in &org.peers {
                check_endpoint(&peer.name, &peer.endpoint)?;
            }
        }
        self.revoked()?;
        let msp = Msp::new(self.ca_ders()?.iter().map(Vec::as_slice))?;
        if msp.orgs() != names {
            return Err(malformed(format!(
                "the CA certificates name the organisations {:?}, the definition {names:?}",
                msp.orgs()
            )));
        }
        for orderer in &self.orderers {
            if !names.contains(&orderer.org.as_str()) {
                return Err(malformed(format!(
                    "orderer {} belongs to `{}`, which is not an organisation of the network",
                    orderer.name, orderer.org
                )));
            }
            check_endpoint(&orderer.name, &orderer.endpoint)?;
        }
        let ids: Vec<u64> = self.orderers.iter().map(|o| o.raft_id).collect();
        let clustered = ids.iter().filter(|id| **id != 0).count();
        if clustered > 0 {
            let mut unique = ids.clone();
            unique.sort_unstable();
            unique.dedup();
            if clustered != ids.len() || unique.len() != ids.len() {
                return Err(malformed(format!(
                    "orderer cluster ids {ids:?}: a cluster gives every orderer an id of its \
                     own, not 0"
                )));
            }
        }
        if self.ordering == OrderingProtocol::Bft
            && (clustered != ids.len() || ids.len() < BFT_ORDERERS_MIN)
        {
            return Err(malformed(format!(
                "{} orderers with cluster ids {ids:?}: Byzantine-fault-tolerant ordering needs \
                 at least {BFT_ORDERERS_MIN}, each with an id of its own",
                ids.len()
            )));
        }
        if self.ordering == OrderingProtocol::Bft {
            let mut keys = Vec::new();
            for orderer in &self.orderers {
                let key = hex::decode(&orderer.key)
                    .ok()
                    .filter(|key| key.len() == 32)
                    .ok_or_else(|| {
                        malformed(format!(
                            "orderer {}: a Byzantine-fault-tolerant cluster names each \
                             orderer's Ed25519 key, 64 hex digits, not `{}`",
                            orderer.name, orderer.key
                        ))
                    })?;
                if keys.contains(&key) {
                    return Err(malformed(format!(
                        "orderer {}: its key is another orderer's",
                        orderer.name
                    )));
                }
                keys.push(key);
            }
        }
        Ok(())
    }

    /// Distinct orderers of this definition whose signatures a seal needs: `n - f` of the
    /// `n` a Byzantine-fault-tolerant cluster names (`2f + 1` when `n = 3f + 1`), so that
    /// any two quorums share an honest orderer; one otherwise (solo and Raft ordering
    /// tolerate crashes, not lies: the orderer that cut the block signs alone).
    pub fn seal_quorum(&self) -> usize {
        match self.ordering {
            OrderingProtocol::Raft => 1,
            OrderingProtocol::Bft => {
                let n = self.orderers.len();
                n - bft_faults(n)
            }
        }
    }

    /// The orderers of the Raft cluster, `(raft id, orderer)`; empty when the network
    /// orders through one solo orderer.
    pub fn cluster(&self) -> Vec<(u64, &OrdererNode)> {
        self.orderers
            .iter()
            .filter(|orderer| orderer.raft_id != 0)
            .map(|orderer| (orderer.raft_id, orderer))
            .collect()
    }

    /// The membership service trusting the organisations' CAs, refusing the revoked
    /// certificates.
    pub fn msp(&self) -> Result<Msp, IdentityError> {
        let msp = Msp::new(self.ca_ders()?.iter().map(Vec::as_slice))?;
        if self.orgs.iter().any(|org| !org.revoked.is_empty()) {
            self.apply_to(&msp)?;
        }
        Ok(msp)
    }

    /// Makes `msp` trust what this definition says from now on ([`Msp::reconfigure`]).
    pub fn apply_to(&self, msp: &Msp) -> Result<(), IdentityError> {
        msp.reconfigure(self.ca_ders()?.iter().map(Vec::as_slice), self.revoked()?)
    }

    fn ca_ders(&self) -> Result<Vec<Vec<u8>>, IdentityError> {
        self.orgs
            .iter()
            .map(|org| certificate_der(&org.ca, "CA certificate"))
            .collect()
    }

    /// Every revoked key, with the organisation whose CA's certificates for it are
    /// refused.
    pub fn revoked(&self) -> Result<Vec<(String, [u8; 32])>, IdentityError> {
        let mut revoked = Vec::new();
        for org in &self.orgs {
            for entry in &org.revoked {
                let key = revoked_key(entry).map_err(|message| {
                    malformed(format!("{}'s revoked entry `{entry}`: {message}", org.name))
                })?;
                revoked.push((org.name.clone(), key));
            }
        }
        Ok(revoked)
    }

    /// The definition as a configuration transaction writes it: compact JSON, fields in
    /// their declared order.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A definition a configuration transaction wrote ([`NetworkDefinition::to_bytes`]),
    /// checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<NetworkDefinition, IdentityError> {
        let definition: NetworkDefinition =
            serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
        definition.check()?;
        Ok(definition)
    }

    /// The organisations' names, in order.
    pub fn org_names(&self) -> Vec<String> {
        self.orgs.iter().map(|org| org.name.clone()).collect()
    }

    /// The organisation named `name`.
    pub fn org(&self, name: &str) -> Option<&OrgDefinition> {
        self.orgs.iter().find(|org| org.name == name)
    }

    /// Every organisation's TLS CA certificate, PEM: what a node or client trusts for the
    /// network's TLS servers.
    pub fn tls_ca_pems(&self) -> impl Iterator<Item = &str> {
        self.orgs.iter().map(|org| org.tls_ca.as_str())
    }
}

/// The prefix of a revocation entry: the key's algorithm.
pub const REVOKED_KEY_PREFIX: &str = "ed25519:";

/// How the definition names a revoked identity: its Ed25519 public key,
/// `ed25519:` and 64 lowercase hex digits. A key, not a certificate's bytes: the outer
/// signature algorithm of a certificate is not signed by its CA, so its bytes (and any
/// hash of them) can be re-encoded by its holder.
pub fn revocation(key: &[u8; 32]) -> String {
    format!("{REVOKED_KEY_PREFIX}{}", hex::encode(key))
}

/// The key a revocation entry names ([`revocation`]).
pub fn revoked_key(entry: &str) -> Result<[u8; 32], String> {
    let Some(hex_text) = entry.strip_prefix(REVOKED_KEY_PREFIX) else {
        return Err(format!(
            "not `{REVOKED_KEY_PREFIX}` and a key; a revocation names the identity's \
             Ed25519 public key (`runnel identity revoke` writes it), never a hash of its \
             certificate"
        ));
    };
    if hex_text.len() != 64 || hex_text.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err("the key is not 64 lowercase hex digits".into());
    }
    hex::decode(hex_text)
        .ok()
        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
        .ok_or_else(|| "the key is not 64 lowercase hex digits".into())
}

fn check_endpoint(name: &str, endpoint: &str) -> Result<(), IdentityError> {
    if endpoint.starts_with("https://") || endpoint.starts_with("http://") {
        Ok(())
    } else {
        Err(malformed(format!(
            "{name}'s endpoint `{endpoint}` is not an http:// or https:// URL"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network() -> NetworkDefinition {
        let identities =
            NetworkIdentities::generate(&["Org1", "Org2"], time::Duration::days(1)).unwrap();
        NetworkDefinition::of(&identities, "main")
    }

    #[test]
    fn a_definition_round_trips_through_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut definition = network();
        definition.orgs[1].peers.push(PeerNode {
            name: "peer0.Org2".into(),
            endpoint: "https://127.0.0.1:7061".into(),
        });
        definition.write(dir.path()).unwrap();
        let loaded = NetworkDefinition::load(dir.path()).unwrap();
        assert_eq!(loaded, definition);
        assert_eq!(loaded.msp().unwrap().orgs(), ["Org1", "Org2"]);
    }

    #[test]
    fn a_ca_must_be_its_organisations_own() {
        let mut definition = network();
        // Org2's entry carrying Org1's CA: the certificates would be trusted for the
        // wrong name.
        definition.orgs[1].ca = definition.orgs[0].ca.clone();
        let error = definition.check().unwrap_err().to_string();
        assert!(error.contains("Org1"), "{error}");
        let mut definition = network();
        definition.orgs[1].name = "Org1".into();
        assert!(definition.check().is_err());
        let mut definition = network();
        definition.orgs[0].tls_ca = "not a certificate".into();
        assert!(definition.check().is_err());
    }

    #[test]
    fn unknown_fields_and_bad_endpoints_are_refused() {
        let text = serde_json::to_string(&network()).unwrap();
        let with_extra = text.replacen('{', "{\"admins_keys\": [],", 1);
        assert!(NetworkDefinition::parse(&with_extra).is_err());
        let mut definition = network();
        definition.orderers.push(OrdererNode {
            name: "orderer0.Org1".into(),
            org: "Org1".into(),
            endpoint: "127.0.0.1:7050".into(),
            raft_id: 0,
            key: String::new(),
        });
        assert!(definition.check().is_err());
        definition.orderers[0].endpoint = "https://127.0.0.1:7050".into();
        definition.check().unwrap();
        definition.orderers[0].org = "Org9".into();
        assert!(definition.check().is_err());
        // A cluster: every orderer has a Raft id of its own.
        definition.orderers[0].org = "Org1".into();
        let mut second = definition.orderers[0].clone();
        second.name = "orderer1.Org1".into();
        definition.orderers.push(second);
        definition.orderers[0].raft_id = 1;
        assert!(definition.check().is_err(), "one id for two orderers");
        definition.orderers[1].raft_id = 1;
        assert!(definition.check().is_err(), "the same id twice");
        definition.orderers[1].raft_id = 2;
        definition.check().unwrap();
        assert_eq!(
            definition
                .cluster()
                .iter()
                .map(|(id, _)| *id)
                .collect::<Vec<_>>(),
            vec![1, 2]
        );
    }
}
