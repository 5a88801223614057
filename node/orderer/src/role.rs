//! The orderer role's wiring and a peer's link to it: what `runnel start --role orderer`
//! opens (a solo orderer, or this orderer's place in the Raft cluster its network
//! definition names) and how a peer keeps reaching the orderers the definition in force
//! names. runnel-node calls these; nothing here parses settings or serves.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use runnel_ledger::identity::{
    Msp, NETWORK_FILE, NetworkDefinition, NetworkKeys, OrderingProtocol, Role, Signer,
};
use runnel_ledger::ledger::Ledger;
use runnel_ledger::orderer::{Orderer, OrdererConfig, SoloOrderer};

use crate::bft::net::{ConsensusService, Member, Network};
use crate::bft::{BftOrderer, BftSettings};
use crate::cluster::{ClusterService, GrpcTransport, Members};
use crate::raft::{RaftOrderer, RaftSettings};
use crate::remote::RemoteOrderer;

/// The network definition in force when an orderer was added to a running cluster
/// (`runnel orderer add` writes it into the new orderer's directory): its Raft id and the
/// members it first reaches. Its `network.json` stays the genesis one, as every node's.
pub const JOIN_FILE: &str = "cluster.json";

/// The directory, inside a node's, that holds the orderer's logs.
pub const LOG_DIR: &str = "orderer";

/// How long a peer waits for its orderer to answer a call.
pub const ORDERER_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a peer looks whether the definition in force names other orderers.
pub const ORDERERS_CHECK: Duration = Duration::from_secs(1);

/// What an orderer process orders with.
pub struct OpenedOrderer {
    /// The orderer peers reach through the `Ordering` service.
    pub orderer: Arc<dyn Orderer>,
    /// Its `Cluster` service, when it is a member of a Raft cluster.
    pub cluster: Option<ClusterService>,
    /// Its `Consensus` service, when it is a member of a BFT cluster.
    pub consensus: Option<ConsensusService>,
    /// The identities it trusts, which follow the network's configuration updates.
    pub msp: Arc<Msp>,
    /// The organisation it orders for.
    pub org: String,
}

/// How an orderer reaches the other members of its cluster.
#[derive(Debug, Clone, Copy)]
pub struct ClusterOptions {
    /// Largest transaction, in bytes: the bound of the messages members step.
    pub message_bytes_max: usize,
    /// Raft entries kept behind the applied index before the log is compacted.
    pub log_entries_kept: u64,
}

/// Opens the orderer of the node in `dir` for `org` (the first organisation of its keys
/// by default): a solo orderer when the network definition names no Raft cluster, else
/// this orderer as a member of it ([`open_cluster_member`]). Its MSP follows the
/// network's configuration updates.
pub fn open(
    dir: &Path,
    org: Option<&str>,
    mut config: OrdererConfig,
    options: ClusterOptions,
    handle: &tokio::runtime::Handle,
) -> Result<OpenedOrderer> {
    let keys = NetworkKeys::load(dir)
        .with_context(|| format!("reading the identities in {}", dir.display()))?;
    let org = org.map_or_else(|| keys.orgs[0].clone(), str::to_owned);
    let signer = keys
        .signer(&org, Role::Orderer)
        .cloned()
        .with_context(|| format!("no orderer identity for {org}"))?;
    let msp = Arc::new(keys.msp()?);
    let definition = keys.definition().clone();
    config.follow_config = Some(definition.clone());
    let log_dir = dir.join(LOG_DIR);
    if definition.cluster().is_empty() {
        let solo = SoloOrderer::open(&log_dir, config, msp.clone(), signer)
            .with_context(|| format!("opening the orderer's log in {}", dir.display()))?;
        return Ok(OpenedOrderer {
            orderer: Arc::new(solo),
            cluster: None,
            consensus: None,
            msp,
            org,
        });
    }
    if definition.ordering == OrderingProtocol::Bft {
        let (orderer, consensus) = open_bft_member(
            dir,
            &keys,
            &org,
            signer,
            (config, msp.clone()),
            options,
            handle,
        )?;
        return Ok(OpenedOrderer {
            orderer: Arc::new(orderer),
            cluster: None,
            consensus: Some(consensus),
            msp,
            org,
        });
    }
    let (raft, members) = open_cluster_member(
        dir,
        &keys,
        &org,
        signer,
        (config, msp.clone()),
        options,
        handle,
    )?;
    let raft = Arc::new(raft);
    Ok(OpenedOrderer {
        orderer: raft.clone(),
        cluster: Some(ClusterService::new(raft, members, msp.clone())),
        consensus: None,
        msp,
        org,
    })
}

/// This orderer as a member of the Raft cluster `keys`' network definition names: its
/// Raft id is the one the definition gives the orderer whose certificate it holds; it
/// reaches the others over mutual TLS as itself. An orderer the genesis definition does
/// not name joins the cluster as [`JOIN_FILE`] names it. Also the members who may call
/// its `Cluster` service, kept up to date as the configuration changes.
pub fn open_cluster_member(
    dir: &Path,
    keys: &NetworkKeys,
    org: &str,
    signer: Signer,
    (orderer_config, msp): (OrdererConfig, Arc<Msp>),
    options: ClusterOptions,
    handle: &tokio::runtime::Handle,
) -> Result<(RaftOrderer, Members)> {
    let genesis = keys.definition();
    let name = msp.identify(signer.cert_der())?.name;
    let founders: Vec<u64> = genesis.cluster().iter().map(|(id, _)| *id).collect();
    let (id, definition, joins) = own_place(dir, genesis, org, &name)?;
    let tls = member_tls(dir, keys, org, &definition)?;
    let members = Members::of(&definition);
    let transport = GrpcTransport::new(
        handle,
        &definition,
        id,
        Some(tls),
        options.message_bytes_max,
        members.clone(),
    )
    .context("reaching the other orderers")?;
    tracing::info!(
        raft_id = id,
        ?founders,
        joins,
        "ordering as a member of a Raft cluster"
    );
    let mut settings = RaftSettings::new(id, founders);
    settings.joins = joins;
    settings.log_entries_kept = options.log_entries_kept;
    let orderer = RaftOrderer::open(
        &dir.join(LOG_DIR),
        orderer_config,
        msp,
        signer,
        settings,
        Arc::new(transport),
    )
    .with_context(|| format!("opening the orderer's logs in {}", dir.display()))?;
    Ok((orderer, members))
}

/// This orderer as a member of the BFT cluster `keys`' network definition names (by its
/// organisation, name and consensus key), reaching the others over mutual TLS as itself;
/// and the `Consensus` service through which they reach it.
pub fn open_bft_member(
    dir: &Path,
    keys: &NetworkKeys,
    org: &str,
    signer: Signer,
    (orderer_config, msp): (OrdererConfig, Arc<Msp>),
    options: ClusterOptions,
    handle: &tokio::runtime::Handle,
) -> Result<(BftOrderer, ConsensusService)> {
    let definition = keys.definition().clone();
    let name = msp.identify(signer.cert_der())?.name;
    let members = Member::of(&definition);
    let own_key = hex::encode(signer.public_key());
    let own = members
        .iter()
        .find(|member| member.org == org && member.name == name)
        .with_context(|| {
            format!(
                "this orderer ({org}/{name}) is not a member of the BFT cluster in {}",
                dir.join(NETWORK_FILE).display()
            )
        })?;
    if hex::encode(own.key.as_ref()) != own_key {
        bail!(
            "this orderer's key ({own_key}) is not the one the network definition names for \
             {org}/{name}"
        );
    }
    let tls = member_tls(dir, keys, org, &definition)?;
    let network = Network::new(
        own.key.clone(),
        members.clone(),
        handle,
        Some(tls),
        options.message_bytes_max,
    )
    .map_err(anyhow::Error::msg)
    .context("reaching the other orderers")?;
    tracing::info!(
        members = members.len(),
        quorum = definition.seal_quorum(),
        "ordering as a member of a Byzantine-fault-tolerant cluster"
    );
    let orderer = BftOrderer::open(
        &dir.join(LOG_DIR),
        orderer_config,
        msp.clone(),
        signer,
        network.clone(),
        BftSettings::default(),
    )
    .with_context(|| format!("opening the orderer's logs in {}", dir.display()))?;
    Ok((orderer, ConsensusService::new(network, msp)))
}

/// This orderer's Raft id, the definition it first reaches its cluster by, and whether it
/// joins a cluster that runs already: the genesis definition's place for `org`/`name`, or
/// else the one [`JOIN_FILE`] gives it.
fn own_place(
    dir: &Path,
    genesis: &NetworkDefinition,
    org: &str,
    name: &str,
) -> Result<(u64, NetworkDefinition, bool)> {
    let own_id = |definition: &NetworkDefinition| {
        definition
            .cluster()
            .iter()
            .find(|(_, orderer)| orderer.org == org && orderer.name == name)
            .map(|(id, _)| *id)
    };
    if let Some(id) = own_id(genesis) {
        return Ok((id, genesis.clone(), false));
    }
    let joined = dir.join(JOIN_FILE);
    if !joined.exists() {
        bail!(
            "this orderer ({org}/{name}) is not a member of the ordering cluster in {}, and \
             {} (written when an orderer is added) is not there",
            dir.join(NETWORK_FILE).display(),
            joined.display()
        );
    }
    let text = std::fs::read(&joined).with_context(|| format!("reading {}", joined.display()))?;
    let definition = NetworkDefinition::from_bytes(&text)
        .with_context(|| format!("reading {}", joined.display()))?;
    let id = own_id(&definition).with_context(|| {
        format!(
            "this orderer ({org}/{name}) is not a member of the cluster {} names",
            joined.display()
        )
    })?;
    Ok((id, definition, true))
}

/// Mutual TLS towards the other members: this orderer's own certificate, and every
/// organisation's TLS CA `definition` names.
fn member_tls(
    dir: &Path,
    keys: &NetworkKeys,
    org: &str,
    definition: &NetworkDefinition,
) -> Result<tonic::transport::ClientTlsConfig> {
    let held = keys
        .held()
        .iter()
        .find(|key| key.org == org && key.role == Role::Orderer)
        .context("no orderer key")?;
    let own = dir.join("identities").join(org);
    let read = |ext: &str| {
        let path = own.join(format!("{}.{ext}", held.name));
        std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
    };
    let mut tls = tonic::transport::ClientTlsConfig::new().identity(
        tonic::transport::Identity::from_pem(read("pem")?, read("key")?),
    );
    for pem in definition.tls_ca_pems() {
        tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
    }
    Ok(tls)
}

/// The orderers a peer reaches, `(endpoint, Raft id)`: the one it was configured with
/// first, unless a definition it followed before (`named_before`) named it and `in_force`
/// no longer does (removed from the network: its seals would be refused), then every
/// orderer `in_force` names.
pub fn orderer_members(
    configured: &str,
    in_force: &NetworkDefinition,
    named_before: &[String],
) -> Vec<(String, u64)> {
    let named = |endpoint: &str| in_force.orderers.iter().any(|o| o.endpoint == endpoint);
    let removed = named_before.iter().any(|e| e == configured) && !named(configured);
    let mut members = Vec::new();
    if !removed {
        members.push((configured.to_string(), 0));
    }
    for orderer in &in_force.orderers {
        match members.iter_mut().find(|(e, _)| *e == orderer.endpoint) {
            Some(member) => member.1 = orderer.raft_id,
            None => members.push((orderer.endpoint.clone(), orderer.raft_id)),
        }
    }
    members
}

/// Keeps `orderer`'s list of orderers to the one the definition in force names, checked
/// every [`ORDERERS_CHECK`]: an orderer a configuration update adds is reached without a
/// restart, and one it removes is left. Runs until dropped.
pub async fn follow_orderers(ledger: Arc<Ledger>, orderer: Arc<RemoteOrderer>, configured: String) {
    let mut named_before: Vec<String> = ledger
        .reader()
        .network_genesis()
        .orderers
        .iter()
        .map(|o| o.endpoint.clone())
        .collect();
    let mut followed = None;
    let mut every = tokio::time::interval(ORDERERS_CHECK);
    loop {
        every.tick().await;
        let in_force = match ledger.reader().network() {
            Ok(in_force) => in_force,
            Err(error) => {
                tracing::warn!(%error, "reading the network definition in force");
                continue;
            }
        };
        if followed == Some(in_force.sequence) {
            continue;
        }
        followed = Some(in_force.sequence);
        let members = orderer_members(&configured, &in_force, &named_before);
        for orderer in &in_force.orderers {
            if !named_before.contains(&orderer.endpoint) {
                named_before.push(orderer.endpoint.clone());
            }
        }
        if members != orderer.members()
            && let Err(error) = orderer.set_members(&members)
        {
            tracing::warn!(%error, "the orderers the network names cannot be reached");
        }
    }
}

#[cfg(test)]
mod tests {
    use runnel_ledger::identity::{NetworkDefinition, OrdererNode};

    use super::orderer_members;

    fn definition(orderers: &[(&str, u64)]) -> NetworkDefinition {
        NetworkDefinition {
            channel: "main".into(),
            sequence: 0,
            orgs: Vec::new(),
            orderers: orderers
                .iter()
                .enumerate()
                .map(|(i, (endpoint, raft_id))| OrdererNode {
                    name: format!("orderer{i}.Org1"),
                    org: "Org1".into(),
                    endpoint: endpoint.to_string(),
                    raft_id: *raft_id,
                    key: String::new(),
                })
                .collect(),
            ordering: Default::default(),
            lifecycle_policy: String::new(),
            config_policy: String::new(),
        }
    }

    #[test]
    fn a_peer_reaches_its_own_orderer_first_then_those_the_definition_names() {
        let (a, b, c) = ("https://a:1", "https://b:1", "https://c:1");
        let cluster = definition(&[(a, 1), (b, 2)]);
        assert_eq!(
            orderer_members(b, &cluster, &[]),
            vec![(b.to_string(), 2), (a.to_string(), 1)]
        );
        // An endpoint the definition does not know (another name for an orderer, say) is
        // kept, and first.
        assert_eq!(
            orderer_members(c, &cluster, &[]),
            vec![(c.to_string(), 0), (a.to_string(), 1), (b.to_string(), 2)]
        );
        // An update adds c and removes b, the peer's own: b is left, c reached.
        let next = definition(&[(a, 1), (c, 3)]);
        let before = [a.to_string(), b.to_string()];
        assert_eq!(
            orderer_members(b, &next, &before),
            vec![(a.to_string(), 1), (c.to_string(), 3)]
        );
        // A solo orderer's definition: its endpoint, no Raft id.
        let solo = definition(&[(a, 0)]);
        assert_eq!(orderer_members(a, &solo, &[]), vec![(a.to_string(), 0)]);
    }
}
