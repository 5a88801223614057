//! `runnel init`'s network of organisations, each apart: one directory per organisation
//! holding only its own private material, and in it one directory per node, ready for
//! `runnel start`, holding only that node's keys. Every directory holds the public
//! network definition (`network.json`).
//!
//! ```text
//! <dir>/network.json                  the definition every member shares
//! <dir>/<Org>/ca/                     the org's CA and TLS CA certificates and keys:
//!                                     `runnel identity issue` uses them; keep them offline
//! <dir>/<Org>/network.json
//! <dir>/<Org>/identities/<Org>/       the org's people: admin, client (.pem, .key)
//! <dir>/<Org>/peer<i>/                a peer: runnel.toml, network.json,
//!                                     identities/<Org>/peer.pem, .key, tls/server.pem, .key
//! <dir>/<Org>/orderer<i>/             an orderer: the same with orderer.pem (one, the
//!                                     first org's; or a Raft cluster's, orgs in turn)
//!                                     (one `runnel orderer add` made holds cluster.json too)
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use runnel_ledger::identity::{
    BFT_ORDERERS_MIN, CertificateAuthority, IDENTITIES_DIR, IssuedIdentity, NetworkDefinition,
    OrdererNode, OrderingProtocol, OrgDefinition, PeerNode, Role, Signer, TLS_SERVER_CERT_FILE,
    TLS_SERVER_KEY_FILE, TlsAuthority, write_identity, write_key,
};

use runnel_node::config;

/// `--ordering`: `raft` or `bft`.
pub fn parse_ordering(text: &str) -> Result<OrderingProtocol, String> {
    match text {
        "raft" => Ok(OrderingProtocol::Raft),
        "bft" => Ok(OrderingProtocol::Bft),
        other => Err(format!("`{other}`: raft or bft")),
    }
}

/// The directory of an organisation's CAs, inside its directory.
pub const CA_DIR: &str = "ca";

pub use runnel_orderer::role::JOIN_FILE;

/// The org's CA certificate and key, inside [`CA_DIR`].
pub const CA_CERT: &str = "ca.pem";
pub const CA_KEY: &str = "ca.key";
/// The org's TLS CA certificate and key, inside [`CA_DIR`].
pub const TLS_CA_CERT: &str = "tls-ca.pem";
pub const TLS_CA_KEY: &str = "tls-ca.key";

/// What a new network is made of.
pub struct Layout<'a> {
    pub orgs: &'a [String],
    pub channel: &'a str,
    pub validity: time::Duration,
    /// Names the TLS server certificates hold besides the local ones.
    pub tls_hosts: &'a [String],
    pub peers_per_org: usize,
    /// Orderers: one orders alone (solo); more form a Raft cluster, run by the
    /// organisations in turn (the first org's first, the second org's next, ...): the
    /// most even split, so that no organisation runs a Raft quorum unless the counts
    /// leave no other way (2 organisations and an odd count), which
    /// [`runnel_orderer::raft::quorum::warn_of_a_holder`] then says.
    pub orderers: usize,
    /// How the orderers of a cluster agree (`bft` needs at least 4).
    pub ordering: OrderingProtocol,
    /// The first orderer listens here, the others on the ports after it; then the peers,
    /// org by org.
    pub base_port: u16,
    /// The address the nodes listen on and are reached at.
    pub host: &'a str,
}

/// A node directory `create` made.
#[derive(Debug, Clone)]
pub struct NodeDir {
    /// `orderer` or `peer`.
    pub role: Role,
    pub org: String,
    pub name: String,
    pub dir: PathBuf,
    pub endpoint: String,
}

/// The node directories of a network made by [`create`] in `dir`, orderer first, from
/// its definition.
pub fn nodes(dir: &Path) -> Result<Vec<NodeDir>> {
    let definition = NetworkDefinition::load(dir)
        .with_context(|| format!("reading the network in {}", dir.display()))?;
    let mut nodes: Vec<NodeDir> = definition
        .orderers
        .iter()
        .map(|orderer| NodeDir {
            role: Role::Orderer,
            org: orderer.org.clone(),
            name: orderer.name.clone(),
            dir: dir.join(&orderer.org).join(short_name(&orderer.name)),
            endpoint: orderer.endpoint.clone(),
        })
        .collect();
    // Orderers added to the cluster after genesis: their directories hold the
    // definition they joined.
    for org in &definition.orgs {
        let Ok(entries) = std::fs::read_dir(dir.join(&org.name)) else {
            continue;
        };
        let mut added: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.join(JOIN_FILE).is_file())
            .collect();
        added.sort();
        for node_dir in added {
            let joined = std::fs::read(node_dir.join(JOIN_FILE))
                .map_err(anyhow::Error::from)
                .and_then(|bytes| Ok(NetworkDefinition::from_bytes(&bytes)?))
                .with_context(|| format!("reading {}", node_dir.join(JOIN_FILE).display()))?;
            let short = node_dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let own = joined
                .orderers
                .iter()
                .find(|o| o.org == org.name && short_name(&o.name) == short);
            if let Some(orderer) = own
                && !nodes.iter().any(|node| node.dir == node_dir)
            {
                nodes.push(NodeDir {
                    role: Role::Orderer,
                    org: orderer.org.clone(),
                    name: orderer.name.clone(),
                    dir: node_dir.clone(),
                    endpoint: orderer.endpoint.clone(),
                });
            }
        }
    }
    for org in &definition.orgs {
        for peer in &org.peers {
            nodes.push(NodeDir {
                role: Role::Peer,
                org: org.name.clone(),
                name: peer.name.clone(),
                dir: dir.join(&org.name).join(short_name(&peer.name)),
                endpoint: peer.endpoint.clone(),
            });
        }
    }
    Ok(nodes)
}

/// The directory of the node `name` (e.g. `orderer1.Org2`) in its organisation's
/// directory `org_dir`: `org_dir/orderer1`.
pub fn node_dir(org_dir: &Path, name: &str) -> PathBuf {
    org_dir.join(short_name(name))
}

/// `peer0` of `peer0.Org1`.
fn short_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Creates the network `layout` describes in `dir` (see the module doc). Everything is
/// written aside first and renamed into place, so a failure leaves nothing half made.
pub fn create(dir: &Path, layout: &Layout<'_>) -> Result<Vec<NodeDir>> {
    if dir.join(runnel_ledger::identity::NETWORK_FILE).exists() || dir.join(IDENTITIES_DIR).exists()
    {
        bail!(
            "{} already holds a network; choose another --dir",
            dir.display()
        );
    }
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        bail!("{} is not empty; choose another --dir", dir.display());
    }
    if layout.peers_per_org == 0 {
        bail!("--peers-per-org: at least 1");
    }
    let staging = PathBuf::from(format!("{}.new", dir.display()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    let made = write(&staging, layout);
    if let Err(error) = made {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    if dir.exists() {
        std::fs::remove_dir(dir)?;
    }
    std::fs::rename(&staging, dir)
        .with_context(|| format!("moving {} to {}", staging.display(), dir.display()))?;
    nodes(dir)
}

fn hosts(layout: &Layout<'_>) -> Vec<String> {
    tls_names(layout.tls_hosts, layout.host)
}

/// The names a node's TLS server certificate holds: the local ones, `extra`, and `host`
/// (where it is reached), each once.
fn tls_names(extra: &[String], host: &str) -> Vec<String> {
    let mut hosts: Vec<String> = runnel_ledger::identity::TLS_LOCAL_HOSTS
        .map(String::from)
        .to_vec();
    for name in extra.iter().map(String::as_str).chain([host]) {
        if !hosts.iter().any(|h| h == name) {
            hosts.push(name.to_string());
        }
    }
    hosts
}

/// One organisation's CAs.
struct OrgCas {
    name: String,
    ca: CertificateAuthority,
    tls: TlsAuthority,
}

fn write(root: &Path, layout: &Layout<'_>) -> Result<()> {
    let validity = layout.validity;
    let hosts = hosts(layout);
    let cas = layout
        .orgs
        .iter()
        .map(|org| {
            Ok(OrgCas {
                name: org.clone(),
                ca: CertificateAuthority::new(org, validity)?,
                tls: TlsAuthority::new(org, validity)?,
            })
        })
        .collect::<Result<Vec<_>, runnel_ledger::identity::IdentityError>>()
        .context("generating the organisations' CAs")?;

    let url = |port: u16| format!("https://{}:{port}", layout.host);
    if layout.orderers == 0 {
        bail!("--orderers: a network needs at least one orderer");
    }
    if layout.ordering == OrderingProtocol::Bft && layout.orderers < BFT_ORDERERS_MIN {
        bail!(
            "--orderers {}: Byzantine-fault-tolerant ordering needs at least {BFT_ORDERERS_MIN} \
             (3f + 1 for f = 1; 7 for f = 2)",
            layout.orderers
        );
    }
    let mut port = layout.base_port;
    // (its org's index, the orderer, its port)
    let mut orderers: Vec<(usize, OrdererNode, u16)> = Vec::new();
    for i in 0..layout.orderers {
        let index = i % cas.len();
        let within = i / cas.len();
        if i > 0 {
            port = port
                .checked_add(1)
                .context("--base-port: the ports run past 65535")?;
        }
        orderers.push((
            index,
            OrdererNode {
                name: format!("orderer{within}.{}", cas[index].name),
                org: cas[index].name.clone(),
                endpoint: url(port),
                raft_id: if layout.orderers > 1 { i as u64 + 1 } else { 0 },
                key: String::new(),
            },
            port,
        ));
    }
    // Each org's peers order through an orderer of their own org when there is one.
    let orderer_for = |index: usize| {
        orderers
            .iter()
            .find(|(org, _, _)| *org == index)
            .unwrap_or(&orderers[0])
            .1
            .endpoint
            .clone()
    };
    let mut definition = NetworkDefinition {
        channel: layout.channel.to_string(),
        sequence: 0,
        orgs: Vec::new(),
        orderers: orderers
            .iter()
            .map(|(_, orderer, _)| orderer.clone())
            .collect(),
        ordering: layout.ordering,
        lifecycle_policy: runnel_ledger::lifecycle::DEFAULT_LIFECYCLE_POLICY.to_string(),
        config_policy: runnel_ledger::identity::DEFAULT_CONFIG_POLICY.to_string(),
    };
    let mut peers: Vec<(usize, PeerNode, u16)> = Vec::new();
    for (index, org) in cas.iter().enumerate() {
        let mut org_peers = Vec::new();
        for i in 0..layout.peers_per_org {
            port = port
                .checked_add(1)
                .context("--base-port: the ports run past 65535")?;
            let peer = PeerNode {
                name: format!("peer{i}.{}", org.name),
                endpoint: url(port),
            };
            peers.push((index, peer.clone(), port));
            org_peers.push(peer);
        }
        definition.orgs.push(OrgDefinition {
            name: org.name.clone(),
            ca: org.ca.cert_pem().to_string(),
            tls_ca: org.tls.cert_pem().to_string(),
            peers: org_peers,
            revoked: Vec::new(),
        });
    }
    // The orderers' identities come first: a BFT cluster's definition names their keys.
    let orderer_identities = orderers
        .iter()
        .map(|(index, orderer, _)| cas[*index].ca.issue(Role::Orderer, &orderer.name, validity))
        .collect::<Result<Vec<_>, _>>()?;
    if layout.ordering == OrderingProtocol::Bft {
        for (orderer, identity) in definition.orderers.iter_mut().zip(&orderer_identities) {
            orderer.key = hex::encode(Signer::new(identity)?.public_key());
        }
    }
    definition
        .check()
        .context("checking the new network's definition")?;
    std::fs::create_dir_all(root)?;
    definition.write(root)?;

    for org in &cas {
        let org_dir = root.join(&org.name);
        let ca_dir = org_dir.join(CA_DIR);
        std::fs::create_dir_all(&ca_dir)?;
        std::fs::write(ca_dir.join(CA_CERT), org.ca.cert_pem())?;
        write_key(&ca_dir.join(CA_KEY), &org.ca.key_pem())?;
        std::fs::write(ca_dir.join(TLS_CA_CERT), org.tls.cert_pem())?;
        write_key(&ca_dir.join(TLS_CA_KEY), &org.tls.key_pem())?;
        // The org's people: its admin and a client. They prove who they are to a node
        // with these (a signed read grant, or the certificate itself over mutual TLS).
        definition.write(&org_dir)?;
        let people = org_dir.join(IDENTITIES_DIR).join(&org.name);
        for role in [Role::Admin, Role::Client] {
            let identity = org
                .ca
                .issue(role, &format!("{role}.{}", org.name), validity)?;
            write_identity(&people, role.as_str(), &identity)?;
        }
    }

    let node = |org: &OrgCas,
                (role, identity): (Role, &IssuedIdentity),
                name: &str,
                port: u16,
                orderer: Option<&str>| {
        let dir = root.join(&org.name).join(short_name(name));
        let own = dir.join(IDENTITIES_DIR).join(&org.name);
        write_identity(&own, role.as_str(), identity)?;
        let server = org.tls.issue_server(name, &hosts, validity)?;
        write_pair(&own, (TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE), &server)?;
        definition.write(&dir)?;
        let settings = settings(&NodeSettings {
            role,
            org: &org.name,
            channel: layout.channel,
            orgs: layout.orgs,
            listen: format!("{}:{port}", layout.host),
            orderer,
        });
        std::fs::write(dir.join(config::FILE_NAME), settings)?;
        anyhow::Ok(())
    };
    for ((index, orderer, port), identity) in orderers.iter().zip(&orderer_identities) {
        node(
            &cas[*index],
            (Role::Orderer, identity),
            &orderer.name,
            *port,
            None,
        )?;
    }
    for (index, peer, port) in &peers {
        let identity = cas[*index].ca.issue(Role::Peer, &peer.name, validity)?;
        node(
            &cas[*index],
            (Role::Peer, &identity),
            &peer.name,
            *port,
            Some(&orderer_for(*index)),
        )?;
    }
    Ok(())
}

/// The directory of an orderer `joined` (the definition that adds it) names, made in
/// its organisation's directory `org_dir` (which holds the org's CAs and the genesis
/// `network.json`), ready for `runnel start`: its orderer identity and TLS server
/// certificate from the org's CAs (valid for `validity`, naming `tls_hosts` besides the
/// endpoint's host and the local names), the genesis definition, the one it joined
/// ([`JOIN_FILE`]) and its runnel.toml.
pub fn add_orderer_dir(
    org_dir: &Path,
    orderer: &OrdererNode,
    joined: &NetworkDefinition,
    validity: time::Duration,
    tls_hosts: &[String],
) -> Result<PathBuf> {
    let genesis = NetworkDefinition::load(org_dir)
        .with_context(|| format!("reading the genesis network.json in {}", org_dir.display()))?;
    let dir = node_dir(org_dir, &orderer.name);
    if dir.exists() {
        bail!("{} exists already", dir.display());
    }
    let ca_dir = org_dir.join(CA_DIR);
    let read = |name: &str| {
        let path = ca_dir.join(name);
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let ca = CertificateAuthority::from_pem(&read(CA_CERT)?, &read(CA_KEY)?)
        .context("loading the organisation's CA")?;
    let tls = TlsAuthority::from_pem(&orderer.org, &read(TLS_CA_CERT)?, &read(TLS_CA_KEY)?)
        .context("loading the organisation's TLS CA")?;
    let listen = orderer
        .endpoint
        .split_once("://")
        .map_or(orderer.endpoint.as_str(), |(_, rest)| rest)
        .trim_end_matches('/')
        .to_string();
    let host = listen
        .rsplit_once(':')
        .map_or(listen.as_str(), |(host, _)| host);
    let hosts = tls_names(tls_hosts, host);
    let staging = org_dir.join(format!(".{}.new", short_name(&orderer.name)));
    // Left by an earlier attempt that failed half way.
    match std::fs::remove_dir_all(&staging) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {}", staging.display())),
    }
    let own = staging.join(IDENTITIES_DIR).join(&orderer.org);
    write_identity(
        &own,
        Role::Orderer.as_str(),
        &ca.issue(Role::Orderer, &orderer.name, validity)?,
    )?;
    let server = tls.issue_server(&orderer.name, &hosts, validity)?;
    write_pair(&own, (TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE), &server)?;
    genesis.write(&staging)?;
    std::fs::write(staging.join(JOIN_FILE), joined.to_bytes())?;
    let orgs: Vec<String> = genesis.orgs.iter().map(|org| org.name.clone()).collect();
    let settings = settings(&NodeSettings {
        role: Role::Orderer,
        org: &orderer.org,
        channel: &genesis.channel,
        orgs: &orgs,
        listen,
        orderer: None,
    });
    std::fs::write(staging.join(config::FILE_NAME), settings)?;
    std::fs::rename(&staging, &dir)
        .with_context(|| format!("moving {} into place", dir.display()))?;
    Ok(dir)
}

/// Writes a certificate and its key under the two names given.
fn write_pair(dir: &Path, (cert, key): (&str, &str), identity: &IssuedIdentity) -> Result<()> {
    let cert = dir.join(cert);
    if let Some(parent) = cert.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&cert, &identity.cert_pem)?;
    write_key(&dir.join(key), &identity.key_pem)?;
    Ok(())
}

/// What a node's runnel.toml says beyond the defaults.
struct NodeSettings<'a> {
    role: Role,
    org: &'a str,
    channel: &'a str,
    orgs: &'a [String],
    listen: String,
    orderer: Option<&'a str>,
}

/// A node's runnel.toml: the commented template, with its role, organisation, address,
/// TLS (mutual TLS optional: the network's members present their own certificates) and
/// orderer.
fn settings(node: &NodeSettings<'_>) -> String {
    let quoted: Vec<String> = node.orgs.iter().map(|org| format!("{org:?}")).collect();
    let role = match node.role {
        Role::Orderer => "orderer",
        _ => "peer",
    };
    let org = node.org;
    let mut text = config::TEMPLATE
        .replace("\nrole = \"all\"\n", &format!("\nrole = \"{role}\"\n"))
        .replace("# org = \"Org1\"", &format!("org = {org:?}"))
        .replace(
            "channel = \"main\"",
            &format!("channel = {:?}", node.channel),
        )
        .replace(
            "orgs = [\"Org1\"]",
            &format!("orgs = [{}]", quoted.join(", ")),
        )
        .replace(
            "listen = \"127.0.0.1:7051\"",
            &format!("listen = {:?}", node.listen),
        )
        .replace("\nenabled = false\n", "\nenabled = true\n")
        .replace(
            "# cert = \"identities/Org1/tls/server.pem\"",
            &format!("cert = \"identities/{org}/tls/server.pem\""),
        )
        .replace(
            "# key = \"identities/Org1/tls/server.key\"",
            &format!("key = \"identities/{org}/tls/server.key\""),
        )
        .replace(
            "\nclient_auth = \"none\"\n",
            "\nclient_auth = \"optional\"\n",
        );
    if let Some(orderer) = node.orderer {
        text = text.replace(
            "# endpoint = \"http://127.0.0.1:7050\"",
            &format!("endpoint = {orderer:?}"),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::identity::NetworkKeys;
    use runnel_orderer::raft::quorum;

    #[test]
    fn each_directory_holds_its_own_organisations_keys_only() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("net");
        let orgs = ["Org1".to_string(), "Org2".to_string()];
        let layout = |peers_per_org| Layout {
            orgs: &orgs,
            channel: "main",
            validity: time::Duration::days(1),
            tls_hosts: &[],
            peers_per_org,
            orderers: 1,
            ordering: OrderingProtocol::Raft,
            base_port: 9050,
            host: "127.0.0.1",
        };
        let nodes = create(&net, &layout(2)).unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "orderer0.Org1",
                "peer0.Org1",
                "peer1.Org1",
                "peer0.Org2",
                "peer1.Org2"
            ]
        );
        assert_eq!(nodes[4].endpoint, "https://127.0.0.1:9054");
        for node in &nodes {
            let keys = NetworkKeys::load(&node.dir).unwrap();
            let held: Vec<(String, Role)> = keys
                .held()
                .iter()
                .map(|k| (k.org.clone(), k.role))
                .collect();
            assert_eq!(held, [(node.org.clone(), node.role)], "{}", node.name);
            let settings = config::NodeConfig::load(&node.dir.join(config::FILE_NAME)).unwrap();
            assert_eq!(settings.node.org.as_deref(), Some(node.org.as_str()));
            assert!(settings.api.tls.enabled);
        }
        let members = NetworkKeys::load(&net.join("Org2")).unwrap();
        let roles: Vec<Role> = members.held().iter().map(|k| k.role).collect();
        assert_eq!(roles, [Role::Admin, Role::Client]);
        // The CA's key issues identities the network trusts, from its files alone.
        let ca_dir = net.join("Org2").join(CA_DIR);
        let read = |name: &str| std::fs::read_to_string(ca_dir.join(name)).unwrap();
        let ca = CertificateAuthority::from_pem(&read(CA_CERT), &read(CA_KEY)).unwrap();
        let alice = ca
            .issue(Role::Client, "alice", time::Duration::days(1))
            .unwrap();
        let msp = members.msp().unwrap();
        let identity = msp
            .verify(
                &alice.cert_der,
                time::OffsetDateTime::now_utc().unix_timestamp(),
            )
            .unwrap();
        assert_eq!(
            (identity.org.as_str(), identity.role),
            ("Org2", Role::Client)
        );
        // No second network over the first.
        assert!(create(&net, &layout(1)).is_err());
    }

    #[test]
    fn orderers_are_given_out_so_that_no_organisation_runs_a_quorum_where_the_counts_allow() {
        let definition = |orgs: &[&str], orderers: usize| {
            let dir = tempfile::tempdir().unwrap();
            let net = dir.path().join("net");
            let orgs: Vec<String> = orgs.iter().map(|o| o.to_string()).collect();
            create(
                &net,
                &Layout {
                    orgs: &orgs,
                    channel: "main",
                    validity: time::Duration::days(1),
                    tls_hosts: &[],
                    peers_per_org: 1,
                    orderers,
                    ordering: OrderingProtocol::Raft,
                    base_port: 9050,
                    host: "127.0.0.1",
                },
            )
            .unwrap();
            NetworkDefinition::load(&net).unwrap()
        };
        // Three organisations, one orderer each; two, two each: no one holds a quorum.
        let three = definition(&["Org1", "Org2", "Org3"], 3);
        let runs: Vec<&str> = three.orderers.iter().map(|o| o.org.as_str()).collect();
        assert_eq!(runs, ["Org1", "Org2", "Org3"]);
        assert_eq!(quorum::quorum_holder(&three), None);
        assert_eq!(
            quorum::quorum_holder(&definition(&["Org1", "Org2"], 4)),
            None
        );
        // Two organisations and three orderers: no split avoids it, and it is said, with
        // the count that would.
        let holder = quorum::quorum_holder(&definition(&["Org1", "Org2"], 3)).unwrap();
        assert_eq!((holder.org.as_str(), holder.held), ("Org1", 2));
        assert_eq!(holder.avoided_at, Some(4));
    }
}
