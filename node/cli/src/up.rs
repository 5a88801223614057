//! `runnel up` and `runnel down`: a whole network on this machine, each node a process
//! of its own with only its own keys, the way Fabric's test network runs, without
//! containers.
//!
//! `up` creates the network the first time ([`crate::network`]), starts every node that
//! is not running (`runnel start --dir <node>`, detached, its log in `<node>/node.log`,
//! its process id in `<node>/runnel.pid`), waits until each answers, and the first time
//! has every organisation's admin approve the example contracts and the first
//! organisation's admin commit them: kv with an endorsement policy of every
//! organisation's peer (`AND`), token and basic with the default (a majority). `down`
//! stops every node (SIGTERM, then waits), keeping their data: the next `up` carries on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use runnel_client::Connection;
use runnel_ledger::identity::{NETWORK_FILE, NetworkDefinition, OrderingProtocol, Role};
use runnel_ledger::lifecycle::{FN_APPROVE, FN_DEPLOY};
use runnel_server::proto::DeployRequest;

use crate::network::{self, Layout, NodeDir, parse_ordering};

/// The example contracts `runnel up` commits: name, module, and whether kv's policy is
/// every organisation's peer.
const EXAMPLES: [(&str, &str, bool); 3] = [
    ("kv", "kv.wasm", true),
    ("token", "token.wasm", false),
    ("basic", "asset_transfer.wasm", false),
];

/// A node's process id file, inside its directory.
const PID_FILE: &str = "runnel.pid";
/// A node's log, inside its directory.
const LOG_FILE: &str = "node.log";
/// How long a node has to answer after it starts (the first start compiles contracts).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a node has to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// `runnel up`.
#[derive(Args, Debug)]
pub struct UpArgs {
    /// The network's directory.
    #[arg(long, env = "RUNNEL_DIR", default_value = ".runnel/up")]
    pub dir: PathBuf,
    /// The organisations: a count (2: Org1, Org2) or names, comma-separated. Used when
    /// the network is created.
    #[arg(long, default_value = "2")]
    pub orgs: String,
    /// Peers per organisation. Used when the network is created.
    #[arg(long, default_value_t = 1)]
    pub peers_per_org: usize,
    /// Orderers: 1 orders alone; more form a Raft cluster, run by the organisations in
    /// turn. One organisation running a majority of them can order and censor alone
    /// (`up` warns): with 2 organisations take an even count (4 = 2 + 2), with 3 or more,
    /// 3 or 5. Used when the network is created.
    #[arg(long, default_value_t = 1)]
    pub orderers: usize,
    /// How a cluster of orderers agrees: `raft` tolerates crashes of a minority, `bft`
    /// tolerates `f` of `3f + 1` orderers that lie or stop (at least 4 orderers; every
    /// seal then carries `2f + 1` signatures). Used when the network is created.
    #[arg(long, value_parser = parse_ordering, default_value = "raft")]
    pub ordering: OrderingProtocol,
    /// The first orderer's port; the other orderers, then the peers, listen on the ports
    /// after it. Used when the network is created.
    #[arg(long, default_value_t = 7050)]
    pub base_port: u16,
    /// The channel. Used when the network is created.
    #[arg(long, default_value = "main")]
    pub channel: String,
    /// Where the example contracts' modules are (built by scripts/build-contracts.sh).
    #[arg(
        long,
        env = "RUNNEL_CONTRACTS",
        default_value = "target/wasm32-unknown-unknown/contract"
    )]
    pub contracts: PathBuf,
    /// The explorer's built files, served by every peer at / (default explorer/dist when
    /// it is built).
    #[arg(long, env = "RUNNEL_EXPLORER")]
    pub explorer: Option<PathBuf>,
    /// Do not approve and commit the example contracts.
    #[arg(long)]
    pub no_examples: bool,
}

/// `runnel down`.
#[derive(Args, Debug)]
pub struct DownArgs {
    /// The network's directory.
    #[arg(long, env = "RUNNEL_DIR", default_value = ".runnel/up")]
    pub dir: PathBuf,
}

/// The organisation names `--orgs` stands for.
fn org_names(orgs: &str) -> Result<Vec<String>> {
    if let Ok(count) = orgs.trim().parse::<usize>() {
        if count == 0 || count > 16 {
            bail!("--orgs: 1 to 16 organisations");
        }
        return Ok((1..=count).map(|i| format!("Org{i}")).collect());
    }
    let names: Vec<String> = orgs.split(',').map(|s| s.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        bail!("--orgs: a count, or names separated by commas");
    }
    Ok(names)
}

/// `runnel up` (see the module doc).
pub fn up(args: &UpArgs) -> Result<()> {
    let created = !args.dir.join(NETWORK_FILE).exists();
    if created {
        let orgs = org_names(&args.orgs)?;
        network::create(
            &args.dir,
            &Layout {
                orgs: &orgs,
                channel: &args.channel,
                validity: time::Duration::days(3650),
                tls_hosts: &[],
                peers_per_org: args.peers_per_org,
                orderers: args.orderers,
                ordering: args.ordering,
                base_port: args.base_port,
                host: "127.0.0.1",
            },
        )?;
        eprintln!(
            "created a network of {} in {}",
            orgs.join(", "),
            args.dir.display()
        );
    }
    if let Ok(definition) = NetworkDefinition::load(&args.dir) {
        runnel_orderer::raft::quorum::warn_of_a_holder(&definition);
    }
    let nodes = network::nodes(&args.dir)?;
    let explorer = args
        .explorer
        .clone()
        .or_else(|| Some(PathBuf::from("explorer/dist")))
        .filter(|dir| dir.join("index.html").is_file())
        .map(|dir| std::path::absolute(&dir).unwrap_or(dir));
    // The processes this run starts, watched until they serve: whether one of them ended
    // is asked of the child itself (its pid is not yet a `runnel start` while it execs).
    let mut started = Vec::with_capacity(nodes.len());
    for node in &nodes {
        match running(&node.dir) {
            Some(pid) => {
                eprintln!("{} is running (pid {pid})", node.name);
                started.push(None);
            }
            None => {
                let child = spawn(node, explorer.as_deref())?;
                eprintln!(
                    "started {} (pid {}), log {}",
                    node.name,
                    child.id(),
                    node.dir.join(LOG_FILE).display()
                );
                started.push(Some(child));
            }
        }
    }
    crate::client::runtime()?.block_on(async {
        for (node, child) in nodes.iter().zip(&mut started) {
            wait_until_serving(&args.dir, node, child.as_mut()).await?;
        }
        wait_for_leader(&args.dir, &nodes).await?;
        if !args.no_examples {
            deploy_examples(&args.dir, &nodes, &args.contracts).await?;
        }
        anyhow::Ok(())
    })?;
    print_network(&args.dir, &nodes, explorer.is_some())?;
    Ok(())
}

/// `runnel down` (see the module doc).
pub fn down(args: &DownArgs) -> Result<()> {
    let nodes = network::nodes(&args.dir)?;
    // Peers first, so none of them sees its orderer go while it still serves. One that
    // had to be killed does not keep the others running.
    let mut failed = Vec::new();
    for node in nodes.iter().rev() {
        match running(&node.dir) {
            Some(pid) => match stop(pid) {
                Ok(()) => eprintln!("stopped {} (pid {pid})", node.name),
                Err(error) => {
                    eprintln!("stopping {} (pid {pid}): {error}", node.name);
                    failed.push(node.name.clone());
                }
            },
            None => eprintln!("{} was not running", node.name),
        }
        let _ = std::fs::remove_file(node.dir.join(PID_FILE));
    }
    if !failed.is_empty() {
        bail!("{} did not stop when asked", failed.join(", "));
    }
    Ok(())
}

/// The process id of the node in `dir`, if its process is alive.
fn running(dir: &Path) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(dir.join(PID_FILE))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    // A process id is reused once its process ends: check it is a runnel node of this
    // directory.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let ours = String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy());
    (alive && ours).then_some(pid)
}

/// Starts the node in `node.dir` as a process of its own, detached from this one.
fn spawn(node: &NodeDir, explorer: Option<&Path>) -> Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().context("finding the runnel executable")?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.dir.join(LOG_FILE))
        .with_context(|| format!("opening {}", node.dir.join(LOG_FILE).display()))?;
    let mut command = Command::new(exe);
    command
        .arg("start")
        .arg("--dir")
        .arg(&node.dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own process group: a Ctrl-C in this terminal does not reach it.
        .process_group(0);
    if let (Some(explorer), Role::Peer) = (explorer, node.role) {
        command.arg("--explorer").arg(explorer);
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", node.name))?;
    std::fs::write(node.dir.join(PID_FILE), format!("{}\n", child.id()))?;
    Ok(child)
}

/// Sends SIGTERM to `pid` and waits for it to end; kills it past [`STOP_TIMEOUT`].
fn stop(pid: i32) -> Result<()> {
    // SAFETY: plain signals to a process id read from the node's pid file.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        // SAFETY: as above; signal 0 only asks.
        if unsafe { libc::kill(pid, 0) } != 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    bail!(
        "it did not stop within {} s: killed",
        STOP_TIMEOUT.as_secs()
    )
}

/// A client connection to `url` as `org`'s people (`<dir>/<org>`).
fn connection(dir: &Path, org: &str, url: &str) -> Connection {
    Connection::to(url, &dir.join(org), org)
}

/// Waits until `node` accepts connections (an orderer) or answers a client (a peer).
/// `child` is its process when this run started it.
async fn wait_until_serving(
    dir: &Path,
    node: &NodeDir,
    mut child: Option<&mut std::process::Child>,
) -> Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    let address = node
        .endpoint
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .to_string();
    loop {
        let answered = match node.role {
            Role::Peer => {
                let connection = connection(dir, &node.org, &node.endpoint);
                match runnel_client::connect_channel(&connection).await {
                    Ok(channel) => runnel_client::channel_name(&channel).await.is_ok(),
                    Err(_) => false,
                }
            }
            _ => tokio::net::TcpStream::connect(&address).await.is_ok(),
        };
        if answered {
            return Ok(());
        }
        let ended = match child.as_deref_mut() {
            Some(child) => child.try_wait()?.is_some(),
            None => running(&node.dir).is_none(),
        };
        if ended {
            bail!(
                "{} stopped while starting; see {}",
                node.name,
                node.dir.join(LOG_FILE).display()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "{} did not answer within {} s; see {}",
                node.name,
                START_TIMEOUT.as_secs(),
                node.dir.join(LOG_FILE).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// With a Raft cluster of orderers: waits until one of them knows a leader, asking as a
/// peer (the ordering service serves peers and orderers only).
async fn wait_for_leader(dir: &Path, nodes: &[NodeDir]) -> Result<()> {
    use runnel_server::proto::HeightsRequest;
    use runnel_server::proto::ordering_client::OrderingClient;
    let definition = NetworkDefinition::load(dir)?;
    // A BFT cluster has no standing leader: each view has its own.
    if definition.cluster().is_empty() || definition.ordering == OrderingProtocol::Bft {
        return Ok(());
    }
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        for orderer in nodes.iter().filter(|node| node.role == Role::Orderer) {
            let Some(peer) = nodes
                .iter()
                .find(|node| node.role == Role::Peer && node.org == orderer.org)
                .or_else(|| nodes.iter().find(|node| node.role == Role::Peer))
            else {
                return Ok(());
            };
            let own = peer.dir.join("identities").join(&peer.org);
            let connection = Connection {
                tls_client_cert: Some(own.join("peer.pem")),
                tls_client_key: Some(own.join("peer.key")),
                ..Connection::to(&orderer.endpoint, &peer.dir, &peer.org)
            };
            let Ok(channel) = runnel_client::connect_channel(&connection).await else {
                continue;
            };
            let heights = OrderingClient::new(channel)
                .heights(HeightsRequest {})
                .await;
            if heights.is_ok_and(|answer| answer.into_inner().raft_leader != 0) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!(
                "the orderers elected no leader within {} s; see their node.log",
                START_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Has every organisation's admin approve each example contract not yet committed,
/// through a peer of its own, then the first organisation's admin commit it.
async fn deploy_examples(dir: &Path, nodes: &[NodeDir], modules: &Path) -> Result<()> {
    let definition = NetworkDefinition::load(dir)?;
    let orgs = definition.org_names();
    let peer_of = |org: &str| {
        nodes
            .iter()
            .find(|node| node.role == Role::Peer && node.org == org)
            .with_context(|| format!("no peer of {org} in the network"))
    };
    let first = peer_of(&orgs[0])?;
    let committer = connection(dir, &orgs[0], &first.endpoint);
    let deployed = runnel_client::contract_names(&committer).await?;
    let every_peer = format!(
        "AND({})",
        orgs.iter()
            .map(|org| format!("'{org}.peer'"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (name, file, all_orgs) in EXAMPLES {
        if deployed.iter().any(|d| d == name) {
            continue;
        }
        let path = modules.join(file);
        let code = std::fs::read(&path).with_context(|| {
            format!(
                "reading the example contract {} (build it with ./scripts/build-contracts.sh, \
                 pass --contracts, or --no-examples)",
                path.display()
            )
        })?;
        let request = DeployRequest {
            name: name.to_string(),
            version: "1".to_string(),
            policy: if all_orgs {
                every_peer.clone()
            } else {
                String::new()
            },
            code,
            ..DeployRequest::default()
        };
        let mut approved_at = 0;
        for org in &orgs[1..] {
            let peer = peer_of(org)?;
            let report = crate::client::define(
                &connection(dir, org, &peer.endpoint),
                FN_APPROVE,
                request.clone(),
            )
            .await
            .with_context(|| format!("{org} approving {name}"))?;
            approved_at = approved_at.max(report["seq"].as_u64().unwrap_or(0));
        }
        // Each approval committed on its own org's peer; the commit reads them on the
        // committer's, which must have validated them first.
        wait_for_height(&committer, approved_at).await?;
        crate::client::define(&committer, FN_DEPLOY, request)
            .await
            .with_context(|| format!("committing {name}"))?;
        eprintln!(
            "committed example contract {name}, approved by {}",
            orgs.join(", ")
        );
    }
    Ok(())
}

/// Waits until the peer at `connection` has validated the transaction at `seq`.
async fn wait_for_height(connection: &Connection, seq: u64) -> Result<()> {
    let channel = runnel_client::connect(connection).await?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let info = runnel_server::proto::query_client::QueryClient::new(channel.clone())
            .get_network_info(runnel_server::proto::GetNetworkInfoRequest {})
            .await
            .map_err(runnel_client::status)?
            .into_inner();
        if info.validated_height >= seq {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{} did not reach seq {seq}", connection.url);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn print_network(dir: &Path, nodes: &[NodeDir], explorer: bool) -> Result<()> {
    println!();
    println!("Runnel network up ({})", dir.display());
    for node in nodes {
        println!("  {:<16} {:<8} {}", node.name, node.role, node.endpoint);
    }
    let runnel = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.to_str().map(str::to_owned))
        .unwrap_or_else(|| "runnel".into());
    let first_peer = nodes.iter().find(|node| node.role == Role::Peer);
    if let Some(peer) = first_peer {
        if explorer {
            println!(
                "  explorer         {}/ (load an identity of {} in its Settings)",
                peer.endpoint, peer.org
            );
        }
        println!();
        println!("Try:");
        println!(
            "  {runnel} invoke --url {} --dir {} --org {} kv put greeting hello",
            peer.endpoint,
            dir.join(&peer.org).display(),
            peer.org
        );
        println!(
            "  {runnel} contract-status --url {} --dir {} --org {} kv",
            peer.endpoint,
            dir.join(&peer.org).display(),
            peer.org
        );
    }
    println!("Stop it with: {runnel} down --dir {}", dir.display());
    Ok(())
}
