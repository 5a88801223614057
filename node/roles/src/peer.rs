//! A peer's links to the rest of its network: to the ordering service in other processes
//! ([`open_peer`]) and, through its gateway, to the other organisations' peers
//! ([`gateway_config`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use runnel_client::Connection;
use runnel_ledger::identity::{NetworkDefinition, NetworkKeys, OrderingProtocol, Role, bft_faults};
use runnel_ledger::ledger::{Ledger, LedgerError};
use runnel_ledger::orderer::Orderer;
use runnel_orderer::remote::RemoteOrderer;
use runnel_orderer::role::{ORDERER_TIMEOUT, orderer_members};
use runnel_server::ReadAccess;
use runnel_server::endorsing::{GatewayConfig, PeerTls};

use crate::config::NodeConfig;

/// A peer's link to the ordering service: the orderer it reads and broadcasts through,
/// and the endpoint it was configured with (the one it reaches first).
pub struct OrdererLink {
    pub orderer: Arc<RemoteOrderer>,
    pub configured: String,
}

/// Opens the peer in `dir`, ordering through `config.ordering.endpoint`: over mutual TLS
/// (https://) unless the network is open to all. It reaches every orderer the definition
/// in force names, with its Raft id, the configured one first (unless the genesis
/// definition named it and the one in force does not: removed), before it reads the
/// stream; it moves to the leader once it knows it, and to the next orderer when one
/// fails. [`runnel_orderer::role::follow_orderers`] keeps the list to the definition in
/// force afterwards.
pub fn open_peer(dir: &Path, config: &NodeConfig) -> Result<(Ledger, OrdererLink)> {
    let endpoint = config.ordering.endpoint.as_deref().unwrap_or_default();
    let members = config.api.read_access == ReadAccess::Members;
    if members && !endpoint.starts_with("https://") {
        bail!(
            "ordering.endpoint {endpoint}: a peer reaches its orderer over mutual TLS \
             (https://) unless the network is open to all ([api] read_access = \"open\", \
             a dev network only)"
        );
    }
    // The peer speaks to its orderer as a client of the network: the TLS CAs of the
    // network directory, and for mutual TLS its own peer certificate (an orderer serving
    // peers only checks it) or else the org's TLS client one.
    let org = config.org();
    let own = |file: &str| dir.join("identities").join(&org).join(file);
    let tls = match endpoint.starts_with("https://") {
        true => Some(runnel_client::client_tls(&Connection {
            tls_client_cert: members.then(|| own("peer.pem")),
            tls_client_key: members.then(|| own("peer.key")),
            ..Connection::to(endpoint, dir, &org)
        })?),
        false => None,
    };
    let genesis_orderers: Vec<String> = match NetworkDefinition::load(dir) {
        Ok(genesis) => genesis
            .orderers
            .iter()
            .map(|o| o.endpoint.clone())
            .collect(),
        Err(_) => Vec::new(),
    };
    let message_bytes_max = config.api.message_bytes_max;
    let mut link = None;
    let ledger = Ledger::builder(dir, config.ledger_config())
        .connect(|in_force| {
            let members = orderer_members(endpoint, in_force, &genesis_orderers);
            let orderer = Arc::new(
                RemoteOrderer::connect_cluster(&members, tls, message_bytes_max, ORDERER_TIMEOUT)
                    .map_err(LedgerError::Order)?,
            );
            // A BFT cluster's orderers may lie: each transaction goes to f + 1 of them,
            // so that one that drops what it is given censors nothing.
            if in_force.ordering == OrderingProtocol::Bft {
                orderer.set_fan_out(bft_faults(in_force.orderers.len()) + 1);
            }
            link = Some(orderer.clone());
            Ok(orderer as Arc<dyn Orderer>)
        })
        .open()
        .with_context(|| format!("opening the ledger in {}", dir.display()))?;
    let orderer = link.context("the peer opened without reaching its orderer")?;
    Ok((
        ledger,
        OrdererLink {
            orderer,
            configured: endpoint.to_string(),
        },
    ))
}

/// How a peer in `dir` reaches the other organisations' peers: trusting every
/// organisation's TLS CA, presenting its own peer certificate (mutual TLS); its own name,
/// which the definition lists among the peers. The default (no TLS) when `dir` holds no
/// peer key of `org`.
pub fn gateway_config(dir: &Path, org: &str) -> Result<GatewayConfig> {
    let keys =
        NetworkKeys::load(dir).with_context(|| format!("reading the keys in {}", dir.display()))?;
    let Some(peer) = keys
        .held()
        .iter()
        .find(|key| key.org == org && key.role == Role::Peer)
    else {
        return Ok(GatewayConfig::default());
    };
    let own = dir.join("identities").join(org);
    let read = |ext: &str| {
        let path = own.join(format!("{}.{ext}", peer.name));
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    };
    let name = keys
        .msp()?
        .identify(peer.signer.cert_der())
        .map(|identity| identity.name)
        .ok();
    Ok(GatewayConfig {
        tls: Some(PeerTls {
            cas: keys
                .definition()
                .tls_ca_pems()
                .map(|pem| pem.as_bytes().to_vec())
                .collect(),
            identity: Some((read("pem")?, read("key")?)),
        }),
        self_name: name,
        ..GatewayConfig::default()
    })
}
