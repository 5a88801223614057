//! `runnel init`, `runnel start` and `runnel dev`: create a network and run a node.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use runnel_ledger::identity::{
    NetworkIdentities, OrderingProtocol, Role, TLS_CA_FILE, TLS_LOCAL_HOSTS,
};

use crate::network::parse_ordering;
use runnel_node::config::{self, NodeConfig, NodeRole};
use runnel_node::{Node, StartOptions};
use runnel_server::ops;
use runnel_server::sched::Scheduling;
use runnel_server::{ClientAuth, TlsConfig};
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
    /// How a cluster of orderers agrees: `raft` tolerates crashes of a minority, `bft`
    /// tolerates `f` of `3f + 1` orderers that lie or stop (at least 4 orderers; every
    /// seal then carries `2f + 1` signatures).
    #[arg(long, value_parser = parse_ordering, default_value = "raft")]
    pub ordering: OrderingProtocol,
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
            ordering: args.ordering,
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
    if let Ok(definition) = runnel_ledger::identity::NetworkDefinition::load(&args.dir) {
        // What clients pin to check the network's configuration without trusting a node
        // (`runnel config genesis-hash` prints it again from any copy of network.json).
        println!(
            "  genesis hash {}",
            hex::encode(runnel_ledger::tx::sha256(&definition.to_bytes()))
        );
    }
    for org in &args.orgs {
        let org_dir = args.dir.join(org);
        println!(
            "  {org:<10}  CAs in {} (keep offline); admin and client in {}",
            org_dir.join(crate::network::CA_DIR).display(),
            org_dir.display()
        );
    }
    if let Ok(definition) = runnel_ledger::identity::NetworkDefinition::load(&args.dir) {
        runnel_orderer::raft::quorum::warn_of_a_holder(&definition);
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
    args.apply(&mut config)?;
    if examples.is_some() && config.node.role != NodeRole::All {
        bail!("runnel dev runs every role in one process; use runnel start for --role");
    }
    if config.node.role == NodeRole::Orderer {
        crate::no_transparent_huge_pages();
    }
    let logs = ops::init_logs(&config.log.level, config.log.format).map_err(anyhow::Error::msg)?;
    eprintln!(
        "opening the ledger in {} (the first start compiles the contracts)",
        dir.display()
    );
    let deploy = examples.map_or_else(Vec::new, |modules| {
        EXAMPLES
            .iter()
            .map(|(name, file)| (name.to_string(), modules.join(file)))
            .collect()
    });
    let options = StartOptions {
        logs: Some(logs),
        deploy,
    };
    let node = Node::start(dir, &config, options)?;
    // Before the banner: a signal that comes just after it stops the node cleanly.
    let stop = node.interrupted();
    match node.ledger() {
        Some(_) => {
            let tls = config.api_config(dir).tls;
            let explorer = node.explorer().is_some();
            banner(&node.url(), tls.as_ref(), explorer, examples.is_some(), dir);
        }
        None => orderer_banner(&node, dir),
    }
    node.run_until(stop)
}

impl ServeArgs {
    /// The command line over the settings file: each flag given replaces its setting.
    /// Paths on the command line are the caller's, from the current directory.
    fn apply(&self, config: &mut NodeConfig) -> Result<()> {
        if let Some(listen) = self.listen {
            config.api.listen = listen;
        }
        if let Some(explorer) = &self.explorer {
            config.explorer.dir = Some(explorer.clone());
        }
        if let Some(level) = &self.log {
            config.log.level = level.clone();
        }
        if self.log_json {
            config.log.format = runnel_server::ops::LogFormat::Json;
        }
        if let Some(role) = self.role {
            config.node.role = role;
        }
        if let Some(org) = &self.org {
            config.node.org = Some(org.clone());
        }
        if let Some(orderer) = &self.orderer {
            config.ordering.endpoint = Some(orderer.clone());
        }
        if let Some(sync) = self.sync {
            config.store.sync = sync;
        }
        if let Some(scheduling) = self.scheduling {
            config.node.scheduling = scheduling;
        }
        let from_here = |path: &PathBuf| {
            std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))
        };
        let tls = &mut config.api.tls;
        if let Some(enabled) = self.tls {
            tls.enabled = enabled;
        }
        if let Some(cert) = &self.tls_cert {
            tls.cert = Some(from_here(cert)?);
        }
        if let Some(key) = &self.tls_key {
            tls.key = Some(from_here(key)?);
        }
        if let Some(mode) = self.tls_client_auth {
            tls.client_auth = mode;
        }
        if let Some(ca) = &self.tls_client_ca {
            tls.client_ca = Some(from_here(ca)?);
        }
        config
            .check_roles()
            .map_err(|message| anyhow::anyhow!("{message}"))
    }
}

fn orderer_banner(node: &Node, dir: &Path) {
    let url = node.url();
    println!();
    println!(
        "Runnel orderer ready ({}, as {})",
        dir.display(),
        node.org()
    );
    println!("  ordering service   {url}");
    println!("  peers start with   runnel start --role peer --orderer {url}");
    println!("  health, metrics    {url}/healthz, {url}/metrics");
    println!();
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
