//! `runnel init`, `runnel start` and `runnel dev`: create a network and run a node.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use runnel_orderer::cluster::{ClusterService, GrpcTransport, Members};
use runnel_orderer::ordering::OrderingServerHandle;

use runnel_cli::config::{self, NodeConfig, NodeRole};
use runnel_client::Connection;
use runnel_ledger::identity::{NetworkIdentities, NetworkKeys, Role, TLS_CA_FILE, TLS_LOCAL_HOSTS};
use runnel_ledger::ledger::Ledger;
use runnel_ledger::orderer::{Orderer, SoloOrderer};
use runnel_orderer::raft::{RaftOrderer, RaftSettings};
use runnel_orderer::remote::RemoteOrderer;
use runnel_server::metrics::NodeMetrics;
use runnel_server::ops;
use runnel_server::sched::{self, Scheduling};
use runnel_server::{ApiConfig, ClientAuth, ReadAccess, Server, TlsConfig};
use tokio_rustls::rustls::pki_types::ServerName;

/// The example contracts `runnel dev` deploys: contract name and module file.
const EXAMPLES: [(&str, &str); 5] = [
    ("kv", "kv.wasm"),
    ("token", "token.wasm"),
    ("basic", "asset_transfer.wasm"),
    // Their twins written in TypeScript (contracts/examples-as/).
    ("kv-ts", "kv_ts.wasm"),
    ("token-ts", "token_ts.wasm"),
];

/// `runnel init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// The node's data directory: identities/, runnel.toml, and later its stores.
    #[arg(long, env = "RUNNEL_DIR", default_value = ".runnel/node")]
    pub dir: PathBuf,
    /// The organisations, comma-separated. Each gets a CA and TLS CA, an admin and a
    /// client, and its peers; the first runs the orderer.
    #[arg(long, value_delimiter = ',', default_value = "Org1")]
    pub orgs: Vec<String>,
    /// Peers per organisation, each a node directory of its own.
    #[arg(long, default_value_t = 1)]
    pub peers_per_org: usize,
    /// Orderers: 1 orders alone; 3 or 5 form a Raft cluster that goes on when a minority
    /// of them is lost, run by the organisations in turn. One organisation running a
    /// majority of them can order and censor alone (`init` warns): with 2 organisations
    /// take an even count (4 = 2 + 2).
    #[arg(long, default_value_t = 1)]
    pub orderers: usize,
    /// The first orderer's port; the other orderers, then the peers, listen on the ports
    /// after it.
    #[arg(long, default_value_t = 7050)]
    pub base_port: u16,
    /// One directory for one process holding every role of every organisation (a
    /// single-operator network, demos): `runnel start --dir` runs it. Without it, each
    /// organisation's directory holds only its own keys, and each node's only its own.
    #[arg(long)]
    pub one_node: bool,
    /// The channel the network serves.
    #[arg(long, default_value = "main")]
    pub channel: String,
    /// How long the certificates are valid, in days.
    #[arg(long, default_value_t = 3650)]
    pub validity_days: i64,
    /// Another name the nodes' TLS server certificates are valid for, besides localhost,
    /// 127.0.0.1 and ::1: a DNS name or an IP address clients reach the node by.
    /// Repeatable.
    #[arg(long = "tls-host", value_name = "NAME")]
    pub tls_hosts: Vec<String>,
}

/// What `runnel start` and `runnel dev` share: where the node is and how it serves.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The node's data directory (see `runnel init`).
    #[arg(long, env = "RUNNEL_DIR")]
    pub dir: Option<PathBuf>,
    /// Listen here for gRPC, gRPC-web, /metrics, /healthz and the explorer (overrides
    /// `api.listen` of runnel.toml).
    #[arg(long, env = "RUNNEL_LISTEN")]
    pub listen: Option<std::net::SocketAddr>,
    /// The explorer's built files to serve at / (overrides `explorer.dir`).
    #[arg(long, env = "RUNNEL_EXPLORER")]
    pub explorer: Option<PathBuf>,
    /// The log filter, RUST_LOG syntax (overrides `log.level`).
    #[arg(long, env = "RUNNEL_LOG")]
    pub log: Option<String>,
    /// Log as JSON lines (overrides `log.format`).
    #[arg(long)]
    pub log_json: bool,
    /// The roles this process runs: all (orderer and peer), orderer, or peer
    /// (overrides `node.role`).
    #[arg(long, env = "RUNNEL_ROLE", value_enum)]
    pub role: Option<NodeRole>,
    /// The organisation this node acts for (overrides `node.org`).
    #[arg(long, env = "RUNNEL_ORG")]
    pub org: Option<String>,
    /// The orderer a peer orders through, http://host:port (overrides
    /// `ordering.endpoint`).
    #[arg(long, env = "RUNNEL_ORDERER")]
    pub orderer: Option<String>,
    /// Serve the API over TLS (https), or not with `--tls=false` (overrides
    /// `api.tls.enabled`).
    #[arg(long, env = "RUNNEL_TLS", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub tls: Option<bool>,
    /// The API's TLS certificate chain, PEM (overrides `api.tls.cert`).
    #[arg(long, env = "RUNNEL_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The API's TLS private key, PEM (overrides `api.tls.key`).
    #[arg(long, env = "RUNNEL_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Mutual TLS: none, optional or required (overrides `api.tls.client_auth`).
    #[arg(long, env = "RUNNEL_TLS_CLIENT_AUTH", value_name = "MODE")]
    pub tls_client_auth: Option<ClientAuth>,
    /// The CA certificates, PEM, client certificates must chain to (overrides
    /// `api.tls.client_ca`).
    #[arg(long, env = "RUNNEL_TLS_CLIENT_CA", value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,
    /// How the node's threads are scheduled (overrides `node.scheduling`): batch
    /// (SCHED_BATCH, no wake-up preemption: throughput under load) or normal.
    #[arg(long, env = "RUNNEL_SCHEDULING", value_enum)]
    pub scheduling: Option<Scheduling>,
    /// How each flush reaches the disk (overrides `store.sync`): full (fdatasync, a
    /// commit survives a power loss) or data (sync_file_range).
    #[arg(long, env = "RUNNEL_SYNC", value_enum)]
    pub sync: Option<config::Sync>,
}

/// `runnel dev`'s own flags.
#[derive(Args, Debug)]
pub struct DevArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Where the example contracts' modules are (built by scripts/build-contracts.sh).
    #[arg(
        long,
        env = "RUNNEL_CONTRACTS",
        default_value = "target/wasm32-unknown-unknown/contract"
    )]
    pub contracts: PathBuf,
}

/// Creates a network in `args.dir`: one directory per organisation and node (see
/// [`crate::network`]), or with `--one-node` one directory for a process standing for
/// every organisation.
pub fn init(args: &InitArgs) -> Result<()> {
    if args.orgs.is_empty() || args.orgs.iter().any(|org| org.trim().is_empty()) {
        bail!("--orgs: give at least one organisation name");
    }
    check_tls_hosts(&args.tls_hosts)?;
    let validity = time::Duration::days(args.validity_days);
    if args.one_node {
        return init_one_node(args, validity);
    }
    let nodes = crate::network::create(
        &args.dir,
        &crate::network::Layout {
            orgs: &args.orgs,
            channel: &args.channel,
            validity,
            tls_hosts: &args.tls_hosts,
            peers_per_org: args.peers_per_org,
            orderers: args.orderers,
            base_port: args.base_port,
            host: "127.0.0.1",
        },
    )?;
    println!(
        "created a network of {} in {}",
        args.orgs.join(", "),
        args.dir.display()
    );
    println!(
        "  definition  {} (public: every member has a copy)",
        args.dir
            .join(runnel_ledger::identity::NETWORK_FILE)
            .display()
    );
    for org in &args.orgs {
        let org_dir = args.dir.join(org);
        println!(
            "  {org:<10}  CAs in {} (keep offline); admin and client in {}",
            org_dir.join(crate::network::CA_DIR).display(),
            org_dir.display()
        );
    }
    if let Ok(definition) = runnel_ledger::identity::NetworkDefinition::load(&args.dir) {
        crate::network::warn_of_a_quorum_holder(&definition);
    }
    for node in &nodes {
        println!(
            "  {:<16} {}  runnel start --dir {}",
            node.name,
            node.endpoint,
            node.dir.display()
        );
    }
    println!(
        "clients use their organisation's directory, e.g. runnel invoke --dir {} --org {} --url {} ...",
        args.dir.join(&args.orgs[0]).display(),
        args.orgs[0],
        nodes
            .iter()
            .find(|n| n.role == Role::Peer)
            .map_or("", |n| n.endpoint.as_str())
    );
    Ok(())
}

/// `runnel init --one-node`.
fn init_one_node(args: &InitArgs, validity: time::Duration) -> Result<()> {
    create(
        &args.dir,
        &args.orgs,
        &args.channel,
        validity,
        &Tls {
            enabled: true,
            hosts: &args.tls_hosts,
        },
    )?;
    println!(
        "created a one-node network of {} in {}",
        args.orgs.join(", "),
        args.dir.display()
    );
    println!("  identities: {}", args.dir.join("identities").display());
    println!(
        "  settings:   {}",
        args.dir.join(config::FILE_NAME).display()
    );
    let mut hosts: Vec<&str> = TLS_LOCAL_HOSTS.to_vec();
    hosts.extend(args.tls_hosts.iter().map(String::as_str));
    println!(
        "  TLS:        on; clients trust {} (valid for {})",
        args.dir
            .join("identities")
            .join(&args.orgs[0])
            .join(TLS_CA_FILE)
            .display(),
        hosts.join(", ")
    );
    println!("start it with: runnel start --dir {}", args.dir.display());
    Ok(())
}

/// Refuses TLS host names no client could connect by.
fn check_tls_hosts(hosts: &[String]) -> Result<()> {
    for host in hosts {
        // What a client may connect by: a DNS name (a wildcard's base too) or an IP address.
        let name = host.strip_prefix("*.").unwrap_or(host);
        if ServerName::try_from(name).is_err() {
            bail!("--tls-host: `{host}` is neither a DNS name nor an IP address");
        }
    }
    Ok(())
}

/// The TLS part of a new network.
struct Tls<'a> {
    /// Whether runnel.toml turns it on.
    enabled: bool,
    /// Names the TLS server certificates hold besides the local ones.
    hosts: &'a [String],
}

fn create(
    dir: &Path,
    orgs: &[String],
    channel: &str,
    validity: time::Duration,
    tls: &Tls<'_>,
) -> Result<()> {
    let identities = dir.join("identities");
    if identities.exists() {
        bail!(
            "{} already holds a network ({} exists); choose another --dir",
            dir.display(),
            identities.display()
        );
    }
    if orgs.is_empty() || orgs.iter().any(|org| org.trim().is_empty()) {
        bail!("--orgs: give at least one organisation name");
    }
    let names: Vec<&str> = orgs.iter().map(String::as_str).collect();
    check_tls_hosts(tls.hosts)?;
    let network = NetworkIdentities::generate_with_tls_hosts(&names, validity, tls.hosts)
        .context("generating the network's identities")?;
    network
        .write(dir, channel)
        .with_context(|| format!("writing the network in {}", dir.display()))?;
    let settings = dir.join(config::FILE_NAME);
    if !settings.exists() {
        let quoted: Vec<String> = orgs.iter().map(|org| format!("{org:?}")).collect();
        let first = &orgs[0];
        let mut text = config::TEMPLATE
            .replace("channel = \"main\"", &format!("channel = {channel:?}"))
            .replace(
                "orgs = [\"Org1\"]",
                &format!("orgs = [{}]", quoted.join(", ")),
            )
            .replace(
                "# cert = \"identities/Org1/tls/server.pem\"",
                &format!("cert = {:?}", format!("identities/{first}/tls/server.pem")),
            )
            .replace(
                "# key = \"identities/Org1/tls/server.key\"",
                &format!("key = {:?}", format!("identities/{first}/tls/server.key")),
            )
            .replace(
                "# client_ca = \"identities/Org1/tls/ca.pem\"",
                &format!(
                    "# client_ca = {:?}",
                    format!("identities/{first}/tls/ca.pem")
                ),
            );
        if tls.enabled {
            text = text.replace("\nenabled = false\n", "\nenabled = true\n");
        }
        std::fs::write(&settings, text)
            .with_context(|| format!("writing {}", settings.display()))?;
    }
    Ok(())
}

/// Runs the node in `args.dir` until interrupted.
pub fn start(args: &ServeArgs) -> Result<()> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".runnel/node"));
    if !dir.join("identities").exists() {
        if let Ok(nodes) = crate::network::nodes(&dir) {
            let list: Vec<String> = nodes
                .iter()
                .map(|node| format!("  runnel start --dir {}", node.dir.display()))
                .collect();
            bail!(
                "{} is a network's directory, not a node's: start each node from its own\n{}\n\
                 (or all of them with `runnel up --dir {}`)",
                dir.display(),
                list.join("\n"),
                dir.display()
            );
        }
        bail!(
            "{} holds no network yet: run `runnel init --dir {}` first (or `runnel dev`)",
            dir.display(),
            dir.display()
        );
    }
    serve(&dir, args, None)
}

/// How a peer in `dir` reaches the other organisations' peers: trusting every
/// organisation's TLS CA, presenting its own peer certificate (mutual TLS); its own name,
/// which the definition lists among the peers.
fn gateway_config(dir: &Path, org: &str) -> Result<runnel_server::endorsing::GatewayConfig> {
    let keys =
        NetworkKeys::load(dir).with_context(|| format!("reading the keys in {}", dir.display()))?;
    let Some(peer) = keys
        .held()
        .iter()
        .find(|key| key.org == org && key.role == Role::Peer)
    else {
        return Ok(runnel_server::endorsing::GatewayConfig::default());
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
    Ok(runnel_server::endorsing::GatewayConfig {
        tls: Some(runnel_server::endorsing::PeerTls {
            cas: keys
                .definition()
                .tls_ca_pems()
                .map(|pem| pem.as_bytes().to_vec())
                .collect(),
            identity: Some((read("pem")?, read("key")?)),
        }),
        self_name: name,
        ..runnel_server::endorsing::GatewayConfig::default()
    })
}

/// Runs a one-org dev node with the example contracts deployed.
pub fn dev(args: &DevArgs) -> Result<()> {
    let dir = args
        .serve
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(".runnel/dev"));
    if !dir.join("identities").exists() {
        eprintln!(
            "creating a one-organisation dev network in {}",
            dir.display()
        );
        // A local node: TLS certificates are made, but it serves plain HTTP unless
        // given --tls.
        create(
            &dir,
            &["Org1".to_string()],
            "main",
            time::Duration::days(3650),
            &Tls {
                enabled: false,
                hosts: &[],
            },
        )?;
        // A local node for development: anyone may read it, and pages of any origin (a
        // front end's dev server) may call it.
        let settings = dir.join(config::FILE_NAME);
        let text = std::fs::read_to_string(&settings)?;
        std::fs::write(
            &settings,
            text.replace("\ncors_origins = []\n", "\ncors_origins = [\"*\"]\n")
                .replace(
                    "\nread_access = \"members\"\n",
                    "\nread_access = \"open\"\n",
                ),
        )?;
    }
    serve(&dir, &args.serve, Some(&args.contracts))
}

fn serve(dir: &Path, args: &ServeArgs, examples: Option<&Path>) -> Result<()> {
    let mut config = NodeConfig::load(&dir.join(config::FILE_NAME))?;
    if let Some(listen) = args.listen {
        config.api.listen = listen;
    }
    if let Some(explorer) = &args.explorer {
        config.explorer.dir = Some(explorer.clone());
    }
    if let Some(level) = &args.log {
        config.log.level = level.clone();
    }
    if args.log_json {
        config.log.format = runnel_server::ops::LogFormat::Json;
    }
    if let Some(role) = args.role {
        config.node.role = role;
    }
    if let Some(org) = &args.org {
        config.node.org = Some(org.clone());
    }
    if let Some(orderer) = &args.orderer {
        config.ordering.endpoint = Some(orderer.clone());
    }
    if let Some(sync) = args.sync {
        config.store.sync = sync;
    }
    if let Some(scheduling) = args.scheduling {
        config.node.scheduling = scheduling;
    }
    config
        .check_roles()
        .map_err(|message| anyhow::anyhow!("{message}"))?;
    if examples.is_some() && config.node.role != NodeRole::All {
        bail!("runnel dev runs every role in one process; use runnel start for --role");
    }
    let tls = &mut config.api.tls;
    if let Some(enabled) = args.tls {
        tls.enabled = enabled;
    }
    // Paths on the command line are the caller's, from the current directory.
    let from_here = |path: &PathBuf| {
        std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
    };
    if let Some(cert) = &args.tls_cert {
        tls.cert = Some(from_here(cert)?);
    }
    if let Some(key) = &args.tls_key {
        tls.key = Some(from_here(key)?);
    }
    if let Some(mode) = args.tls_client_auth {
        tls.client_auth = mode;
    }
    if let Some(ca) = &args.tls_client_ca {
        tls.client_ca = Some(from_here(ca)?);
    }
    let mut api: ApiConfig = config.api_config(dir);
    // Checked before the ledger opens: a bad file stops the node at once, naming it.
    // Client certificates of members need the ledger's CAs: those are checked at bind.
    if let Some(tls) = &api.tls
        && (tls.client_auth == ClientAuth::None
            || tls.client_ca.is_some()
            || api.read_access == ReadAccess::Open)
    {
        tls.server_config().context("setting up the API's TLS")?;
    }
    let logs = ops::init_logs(&config.log.level, config.log.format).map_err(anyhow::Error::msg)?;
    // Before the ledger and the runtimes start their threads, which inherit it.
    if let Err(error) = sched::apply(config.node.scheduling) {
        tracing::warn!(%error, policy = ?config.node.scheduling, "keeping the system's scheduling policy");
    }
    let explorer = config.explorer.dir.clone().filter(|dir| {
        let found = dir.join("index.html").is_file();
        if !found {
            tracing::warn!(dir = %dir.display(), "no explorer build there (index.html); serving the API only");
        }
        found
    });

    eprintln!(
        "opening the ledger in {} (the first start compiles the contracts)",
        dir.display()
    );
    if config.node.role != NodeRole::Orderer && dir.join("identities").exists() {
        let org = config
            .node
            .org
            .clone()
            .unwrap_or_else(|| config.network.orgs[0].clone());
        api.gateway = gateway_config(dir, &org)?;
    }
    // A peer's link to the ordering service, which follows the orderers the network names.
    let mut remote: Option<(Arc<RemoteOrderer>, String)> = None;
    let ledger = match config.node.role {
        NodeRole::All => Ledger::open(dir, config.ledger_config()),
        NodeRole::Orderer => return serve_orderer(dir, &config, &api, logs),
        NodeRole::Peer => {
            let endpoint = config.ordering.endpoint.as_deref().unwrap_or_default();
            let members = api.read_access == ReadAccess::Members;
            if members && !endpoint.starts_with("https://") {
                bail!(
                    "ordering.endpoint {endpoint}: a peer reaches its orderer over mutual TLS \
                     (https://) unless the network is open to all ([api] read_access = \"open\", \
                     a dev network only)"
                );
            }
            // The peer speaks to its orderer as a client of the network: the TLS CAs of
            // the network directory, and for mutual TLS its own peer certificate (an
            // orderer serving peers only checks it) or else the org's TLS client one.
            let org = config
                .node
                .org
                .clone()
                .unwrap_or_else(|| config.network.orgs[0].clone());
            let own = |file: &str| dir.join("identities").join(&org).join(file);
            let tls = match endpoint.starts_with("https://") {
                true => Some(runnel_client::client_tls(&Connection {
                    tls_client_cert: members.then(|| own("peer.pem")),
                    tls_client_key: members.then(|| own("peer.key")),
                    ..Connection::to(endpoint, dir, &org)
                })?),
                false => None,
            };
            // Every orderer the definition in force names, with its Raft id, the configured
            // one first (unless the genesis definition named it and the one in force does
            // not: removed), before the peer reads the stream: it moves to the leader once
            // it knows it, and to the next orderer when one fails. The list then follows
            // the definition in force (`follow_orderers`).
            let genesis_orderers = match runnel_ledger::identity::NetworkDefinition::load(dir) {
                Ok(genesis) => genesis
                    .orderers
                    .iter()
                    .map(|o| o.endpoint.clone())
                    .collect(),
                Err(_) => Vec::new(),
            };
            let message_bytes_max = config.api.message_bytes_max;
            let link = &mut remote;
            Ledger::open_peer_with(dir, config.ledger_config(), move |in_force| {
                let members = orderer_members(endpoint, in_force, &genesis_orderers);
                let orderer = Arc::new(
                    RemoteOrderer::connect_cluster(
                        &members,
                        tls,
                        message_bytes_max,
                        ORDERER_TIMEOUT,
                    )
                    .map_err(runnel_ledger::ledger::LedgerError::Order)?,
                );
                *link = Some((orderer.clone(), endpoint.to_string()));
                Ok(orderer as Arc<dyn Orderer>)
            })
        }
    };
    let ledger =
        Arc::new(ledger.with_context(|| format!("opening the ledger in {}", dir.display()))?);
    if let Ok(in_force) = ledger.network() {
        crate::network::warn_of_a_quorum_holder(&in_force);
    }
    if let Some(modules) = examples {
        deploy_examples(&ledger, modules)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runnel-api")
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let metrics = Arc::new(NodeMetrics::new(&ledger));
        let collector = tokio::spawn(
            metrics
                .clone()
                .collect(ledger.completed_traces(), ledger.statuses()),
        );
        let following = remote.map(|(orderer, configured)| {
            tokio::spawn(follow_orderers(ledger.clone(), orderer, configured))
        });
        let stop = interrupted();
        let tls = api.tls.clone();
        let server = Server::bind(ledger.clone(), api).await?;
        let addr = server.local_addr();
        let url = server.url();
        banner(
            &url,
            tls.as_ref(),
            explorer.is_some(),
            examples.is_some(),
            dir,
        );
        tracing::info!(%addr, tls = tls.is_some(), dir = %dir.display(), "serving");
        let extra = ops::routes(ledger.clone(), metrics, Some(logs), explorer.as_deref());
        let served = server.serve_with(extra, stop).await;
        collector.abort();
        if let Some(following) = following {
            following.abort();
        }
        served.map_err(anyhow::Error::from)
    });
    tracing::info!("stopping");
    ledger.close();
    served
}

/// How long a peer waits for its orderer to answer a call.
const ORDERER_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a peer looks whether the definition in force names other orderers.
const ORDERERS_CHECK: Duration = Duration::from_secs(1);

/// The orderers a peer reaches, `(endpoint, Raft id)`: the one it was configured with
/// first, unless a definition it followed before (`named_before`) named it and `in_force`
/// no longer does (removed from the network: its seals would be refused), then every
/// orderer `in_force` names.
fn orderer_members(
    configured: &str,
    in_force: &runnel_ledger::identity::NetworkDefinition,
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
/// restart, and one it removes is left.
async fn follow_orderers(ledger: Arc<Ledger>, orderer: Arc<RemoteOrderer>, configured: String) {
    let mut named_before: Vec<String> = ledger
        .network_genesis()
        .orderers
        .iter()
        .map(|o| o.endpoint.clone())
        .collect();
    let mut followed = None;
    let mut every = tokio::time::interval(ORDERERS_CHECK);
    loop {
        every.tick().await;
        let in_force = match ledger.network() {
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

/// Runs the ordering service alone: its log in `dir/orderer`, the `Ordering` service and
/// the operations endpoints on the API's address, until interrupted.
fn serve_orderer(
    dir: &Path,
    config: &NodeConfig,
    api: &ApiConfig,
    logs: ops::LogControl,
) -> Result<()> {
    let keys = NetworkKeys::load(dir)
        .with_context(|| format!("reading the identities in {}", dir.display()))?;
    let org = config
        .node
        .org
        .clone()
        .unwrap_or_else(|| keys.orgs[0].clone());
    let signer = keys
        .signer(&org, Role::Orderer)
        .cloned()
        .with_context(|| format!("no orderer identity for {org}"))?;
    let msp = Arc::new(keys.msp()?);
    let mut ledger = config.ledger_config();
    // The orderer's MSP is its own: it follows the network's configuration updates.
    let definition = keys.definition().clone();
    ledger.orderer.follow_config = Some(definition.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runnel-api")
        .build()
        .context("starting the async runtime")?;
    let log_dir = dir.join("orderer");
    type Cluster = (Arc<RaftOrderer>, Members);
    let (orderer, raft): (Arc<dyn Orderer>, Option<Cluster>) = if definition.cluster().is_empty() {
        let solo = SoloOrderer::open(&log_dir, ledger.orderer, msp.clone(), signer)
            .with_context(|| format!("opening the orderer's log in {}", dir.display()))?;
        (Arc::new(solo), None)
    } else {
        let (raft, members) = open_cluster_member(
            dir,
            &keys,
            &org,
            signer,
            (ledger.orderer, msp.clone()),
            config,
            runtime.handle(),
        )?;
        let raft = Arc::new(raft);
        (raft.clone(), Some((raft, members)))
    };
    let served = runtime.block_on(async {
        let stop = interrupted();
        let mut server = OrderingServerHandle::bind(
            orderer.clone(),
            config.api.listen,
            config.api.message_bytes_max,
        )
        .await?
        .with_connections(config.api.connection_limits())
        .with_ops_access(api.ops_access());
        // Outside dev, the ordering service serves the network's peers only.
        if api.read_access == ReadAccess::Members {
            server = server.peers_only(msp.clone());
        }
        if let Some((raft, members)) = &raft {
            server = server.with_cluster(ClusterService::new(
                raft.clone(),
                members.clone(),
                msp.clone(),
            ));
        }
        let addr = server.local_addr();
        let scheme = if api.tls.is_some() { "https" } else { "http" };
        println!();
        println!("Runnel orderer ready ({}, as {org})", dir.display());
        println!("  ordering service   {scheme}://{addr}");
        println!("  peers start with   runnel start --role peer --orderer {scheme}://{addr}");
        println!("  health, metrics    {scheme}://{addr}/healthz, {scheme}://{addr}/metrics");
        println!();
        tracing::info!(%addr, dir = %dir.display(), "ordering");
        let routes = ops::orderer_routes(orderer.clone(), Some(logs));
        server
            .serve_with(routes, api.tls.as_ref(), stop)
            .await
            .map_err(anyhow::Error::from)
    });
    tracing::info!("stopping");
    orderer.close();
    served
}

/// This orderer as a member of the Raft cluster `keys`' network definition names: its
/// Raft id is the one the definition gives the orderer whose certificate it holds; it
/// reaches the others over mutual TLS as itself. An orderer the genesis definition does
/// not name joins the cluster as [`crate::network::JOIN_FILE`] names it. Also the members who may call
/// its `Cluster` service, kept up to date as the configuration changes.
fn open_cluster_member(
    dir: &Path,
    keys: &NetworkKeys,
    org: &str,
    signer: runnel_ledger::identity::Signer,
    (orderer_config, msp): (
        runnel_ledger::orderer::OrdererConfig,
        Arc<runnel_ledger::identity::Msp>,
    ),
    config: &NodeConfig,
    handle: &tokio::runtime::Handle,
) -> Result<(RaftOrderer, Members)> {
    let message_bytes_max = config.api.message_bytes_max;
    let genesis = keys.definition();
    let name = msp.identify(signer.cert_der())?.name;
    let founders: Vec<u64> = genesis.cluster().iter().map(|(id, _)| *id).collect();
    let own_id = |definition: &runnel_ledger::identity::NetworkDefinition| {
        definition
            .cluster()
            .iter()
            .find(|(_, orderer)| orderer.org == org && orderer.name == name)
            .map(|(id, _)| *id)
    };
    let joined = dir.join(crate::network::JOIN_FILE);
    let (id, definition, joins) = match own_id(genesis) {
        Some(id) => (id, genesis.clone(), false),
        None if joined.exists() => {
            let text =
                std::fs::read(&joined).with_context(|| format!("reading {}", joined.display()))?;
            let definition = runnel_ledger::identity::NetworkDefinition::from_bytes(&text)
                .with_context(|| format!("reading {}", joined.display()))?;
            let id = own_id(&definition).with_context(|| {
                format!(
                    "this orderer ({org}/{name}) is not a member of the cluster {} names",
                    joined.display()
                )
            })?;
            (id, definition, true)
        }
        None => bail!(
            "this orderer ({org}/{name}) is not a member of the ordering cluster in {}, and \
             {} (written when an orderer is added) is not there",
            dir.join(runnel_ledger::identity::NETWORK_FILE).display(),
            joined.display()
        ),
    };
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
    let members = Members::of(&definition);
    let transport = GrpcTransport::new(
        handle,
        &definition,
        id,
        Some(tls),
        message_bytes_max,
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
    settings.log_entries_kept = config.ordering.raft_log_entries_kept;
    let orderer = RaftOrderer::open(
        &dir.join("orderer"),
        orderer_config,
        msp,
        signer,
        settings,
        Arc::new(transport),
    )
    .with_context(|| format!("opening the orderer's logs in {}", dir.display()))?;
    Ok((orderer, members))
}

/// Deploys each example contract that is not deployed yet.
fn deploy_examples(ledger: &Ledger, modules: &Path) -> Result<()> {
    let deployed: Vec<String> = ledger
        .contracts("", 1000)?
        .into_iter()
        .map(|definition| definition.name)
        .collect();
    for (name, file) in EXAMPLES {
        if deployed.iter().any(|d| d == name) {
            continue;
        }
        let path = modules.join(file);
        let code = std::fs::read(&path).with_context(|| {
            format!(
                "reading the example contract {} (build it with ./scripts/build-contracts.sh, or pass --contracts)",
                path.display()
            )
        })?;
        eprintln!("deploying example contract {name} ({})", path.display());
        ledger
            .deploy(name, "1", &code, "")
            .with_context(|| format!("deploying {name}"))?;
    }
    Ok(())
}

fn banner(url: &str, tls: Option<&TlsConfig>, explorer: bool, dev: bool, dir: &Path) {
    println!();
    println!("Runnel node ready ({})", dir.display());
    println!("  gRPC and gRPC-web  {url}");
    if let Some(tls) = tls {
        println!("  TLS certificate    {}", tls.cert.display());
        if tls.client_auth != ClientAuth::None {
            println!("  mutual TLS         {}", tls.client_auth);
        }
    }
    if explorer {
        println!("  explorer           {url}/");
    }
    println!("  metrics            {url}/metrics");
    println!("  health             {url}/healthz");
    if dev {
        let runnel = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.to_str().map(str::to_owned))
            .unwrap_or_else(|| "runnel".into());
        let flags = format!("--url {url} --dir {}", dir.display());
        println!();
        println!("Try, from another terminal:");
        println!("  {runnel} invoke {flags} kv put greeting \"hello, runnel\"");
        println!("  {runnel} query  {flags} kv get greeting");
        println!("  {runnel} status {flags}");
    }
    println!();
    println!(
        "Ctrl-C stops the node; everything committed stays in {}.",
        dir.display()
    );
}

/// Completes on Ctrl-C or SIGTERM. The handlers are in place when this returns (it must
/// be called inside the runtime), so a signal that comes before the node serves, just
/// after its banner, stops it cleanly instead of killing it or being lost.
fn interrupted() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        async fn next(signal: Option<Signal>) {
            match signal {
                Some(mut signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        let interrupt = next(signal(SignalKind::interrupt()).ok());
        let terminate = next(signal(SignalKind::terminate()).ok());
        async move {
            tokio::select! {
                _ = interrupt => {}
                _ = terminate => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
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
                })
                .collect(),
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
