//! [`Node`]: one process's roles, opened, bound and served until stopped.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use runnel_ledger::ledger::Ledger;
use runnel_ledger::orderer::Orderer;
use runnel_orderer::ordering::OrderingServerHandle;
use runnel_orderer::role::{self as orderer_role, ClusterOptions};
use runnel_server::metrics::NodeMetrics;
use runnel_server::ops::{self, LogControl};
use runnel_server::{ApiConfig, ApiError, ClientAuth, ReadAccess, Server, sched};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{NodeConfig, NodeRole};
use crate::peer;

/// What a node starts with besides its settings.
#[derive(Default)]
pub struct StartOptions {
    /// The process's log filter, which `/log/level` reads and changes (from
    /// [`ops::init_logs`]); without it that endpoint says the level cannot be changed.
    pub logs: Option<LogControl>,
    /// Contracts to deploy before the node serves, `(name, module file)`, each only if
    /// no contract of that name is deployed yet (`runnel dev`'s examples). Every role in
    /// one process only.
    pub deploy: Vec<(String, PathBuf)>,
}

/// A started node: bound to its address and serving, until [`Node::run_until`] or
/// [`Node::stop`].
pub struct Node {
    runtime: Runtime,
    role: Running,
    addr: SocketAddr,
    tls: bool,
    org: String,
    explorer: Option<PathBuf>,
    stop: oneshot::Sender<()>,
    served: JoinHandle<Result<(), ApiError>>,
}

/// What a node runs, to close when it stops.
enum Running {
    /// Every role, or a peer: its ledger, and the tasks serving it besides the server
    /// (metrics, a peer's following of the orderers).
    Ledger {
        ledger: Arc<Ledger>,
        tasks: Vec<JoinHandle<()>>,
    },
    /// The ordering service alone.
    Orderer(Arc<dyn Orderer>),
}

impl Node {
    /// Opens the roles `config.node.role` names from the node directory `dir` and serves
    /// them on `config.api.listen`; returns once the node listens. Applies the scheduling
    /// policy `config.node.scheduling` to the whole process first (its threads inherit
    /// it). A bad TLS file, a missing key or a ledger that cannot open fails here, naming
    /// what was wrong; nothing is left running.
    pub fn start(dir: &Path, config: &NodeConfig, options: StartOptions) -> Result<Node> {
        config
            .check_roles()
            .map_err(|message| anyhow::anyhow!("{message}"))?;
        let mut api = config.api_config(dir);
        check_tls(&api)?;
        if let Err(error) = sched::apply(config.node.scheduling) {
            tracing::warn!(%error, policy = ?config.node.scheduling, "keeping the system's scheduling policy");
        }
        match config.node.role {
            NodeRole::Orderer => Node::start_orderer(dir, config, api, options.logs),
            NodeRole::All | NodeRole::Peer => {
                if config.node.role == NodeRole::Peer && !options.deploy.is_empty() {
                    anyhow::bail!("only a node running every role deploys contracts as it starts");
                }
                if dir.join("identities").exists() {
                    api.gateway = peer::gateway_config(dir, &config.org())?;
                }
                Node::start_ledger(dir, config, api, options)
            }
        }
    }

    /// Every role in one process, or a peer.
    fn start_ledger(
        dir: &Path,
        config: &NodeConfig,
        api: ApiConfig,
        options: StartOptions,
    ) -> Result<Node> {
        let explorer = explorer_dir(config);
        let (ledger, link) = open_ledger(dir, config)?;
        let started = deploy(&ledger, &options.deploy).and_then(|()| runtime());
        let runtime = match started {
            Ok(runtime) => runtime,
            Err(error) => {
                ledger.close();
                return Err(error);
            }
        };
        let tls = api.tls.is_some();
        let bound = runtime.block_on(Server::bind(ledger.clone(), api));
        let server = match bound {
            Ok(server) => server,
            Err(error) => {
                ledger.close();
                return Err(error.into());
            }
        };
        let addr = server.local_addr();
        let metrics = Arc::new(NodeMetrics::new(&ledger));
        let mut tasks = vec![
            runtime.spawn(
                metrics
                    .clone()
                    .collect(ledger.completed_traces(), ledger.statuses()),
            ),
        ];
        if let Some(link) = link {
            tasks.push(runtime.spawn(orderer_role::follow_orderers(
                ledger.clone(),
                link.orderer,
                link.configured,
            )));
        }
        let routes = ops::routes(ledger.clone(), metrics, options.logs, explorer.as_deref());
        let (stop, stopped) = oneshot::channel();
        let served = runtime.spawn(server.serve_with(routes, async {
            let _ = stopped.await;
        }));
        tracing::info!(%addr, tls, dir = %dir.display(), "serving");
        Ok(Node {
            runtime,
            role: Running::Ledger { ledger, tasks },
            addr,
            tls,
            org: config.org(),
            explorer,
            stop,
            served,
        })
    }

    /// The ordering service alone: its log in `dir/orderer`, the `Ordering` service (and
    /// the `Cluster` one in a Raft cluster) and the operations endpoints on the API's
    /// address.
    fn start_orderer(
        dir: &Path,
        config: &NodeConfig,
        api: ApiConfig,
        logs: Option<LogControl>,
    ) -> Result<Node> {
        let runtime = runtime()?;
        let options = ClusterOptions {
            message_bytes_max: config.api.message_bytes_max,
            log_entries_kept: config.ordering.raft_log_entries_kept,
        };
        let opened = orderer_role::open(
            dir,
            config.node.org.as_deref(),
            config.ledger_config().orderer,
            options,
            runtime.handle(),
        )?;
        let orderer = opened.orderer.clone();
        let bound = runtime.block_on(OrderingServerHandle::bind(
            orderer.clone(),
            config.api.listen,
            config.api.message_bytes_max,
        ));
        let mut server = match bound {
            Ok(server) => server
                .with_connections(config.api.connection_limits())
                .with_ops_access(api.ops_access()),
            Err(error) => {
                orderer.close();
                return Err(error.into());
            }
        };
        // Outside dev, the ordering service serves the network's peers only.
        if api.read_access == ReadAccess::Members {
            server = server.peers_only(opened.msp.clone());
        }
        if let Some(consensus) = opened.consensus {
            server = server.with_consensus(consensus);
        }
        if let Some(cluster) = opened.cluster {
            server = server.with_cluster(cluster);
        }
        let addr = server.local_addr();
        let routes = ops::orderer_routes(orderer.clone(), logs);
        let (stop, stopped) = oneshot::channel();
        let tls = api.tls.clone();
        let served = runtime.spawn(async move {
            let stopped = async {
                let _ = stopped.await;
            };
            server.serve_with(routes, tls.as_ref(), stopped).await
        });
        tracing::info!(%addr, dir = %dir.display(), "ordering");
        Ok(Node {
            runtime,
            role: Running::Orderer(orderer),
            addr,
            tls: api.tls.is_some(),
            org: opened.org,
            explorer: None,
            stop,
            served,
        })
    }

    /// The address the node listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The node's URL, `http://` or `https://` with its address.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Whether the node serves TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The organisation the node acts for.
    pub fn org(&self) -> &str {
        &self.org
    }

    /// The explorer build the node serves at `/`, if any.
    pub fn explorer(&self) -> Option<&Path> {
        self.explorer.as_deref()
    }

    /// The node's ledger, unless it runs the ordering service alone.
    pub fn ledger(&self) -> Option<&Arc<Ledger>> {
        match &self.role {
            Running::Ledger { ledger, .. } => Some(ledger),
            Running::Orderer(_) => None,
        }
    }

    /// Completes on Ctrl-C or SIGTERM. The handlers are in place when this returns, so a
    /// signal that comes before [`Node::run_until`] waits on it stops the node cleanly
    /// instead of killing it or being lost.
    pub fn interrupted(&self) -> impl Future<Output = ()> + use<> {
        let _inside = self.runtime.enter();
        interrupted()
    }

    /// Serves until `until` completes (or the server fails), then stops: live streams
    /// and waiting calls end with `UNAVAILABLE`, and everything the node holds is closed.
    pub fn run_until(self, until: impl Future<Output = ()>) -> Result<()> {
        let Node {
            runtime,
            role,
            stop,
            mut served,
            ..
        } = self;
        let result = runtime.block_on(async {
            tokio::select! {
                result = &mut served => result,
                () = until => {
                    let _ = stop.send(());
                    served.await
                }
            }
        });
        tracing::info!("stopping");
        match role {
            Running::Ledger { ledger, tasks } => {
                tasks.iter().for_each(JoinHandle::abort);
                ledger.close();
            }
            Running::Orderer(orderer) => orderer.close(),
        }
        match result {
            Ok(served) => served.map_err(anyhow::Error::from),
            Err(error) => Err(anyhow::anyhow!("the server's task failed: {error}")),
        }
    }

    /// Stops the node now (see [`Node::run_until`]).
    pub fn stop(self) -> Result<()> {
        self.run_until(std::future::ready(()))
    }
}

/// The ledger of every role in one process, or a peer's with its link to the orderers.
fn open_ledger(
    dir: &Path,
    config: &NodeConfig,
) -> Result<(Arc<Ledger>, Option<peer::OrdererLink>)> {
    let (ledger, link) = match config.node.role {
        NodeRole::Peer => {
            let (ledger, link) = peer::open_peer(dir, config)?;
            (ledger, Some(link))
        }
        _ => {
            let ledger = Ledger::open(dir, config.ledger_config())
                .with_context(|| format!("opening the ledger in {}", dir.display()))?;
            (ledger, None)
        }
    };
    if let Ok(in_force) = ledger.reader().network() {
        runnel_orderer::raft::quorum::warn_of_a_holder(&in_force);
    }
    Ok((Arc::new(ledger), link))
}

/// The node's async runtime: tonic's servers and clients, the metrics collector.
fn runtime() -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("runnel-api")
        .build()
        .context("starting the async runtime")
}

/// Checks the API's TLS files before anything opens: a bad file stops the node at once,
/// naming it. Client certificates of members need the ledger's CAs: those are checked at
/// bind.
fn check_tls(api: &ApiConfig) -> Result<()> {
    if let Some(tls) = &api.tls
        && (tls.client_auth == ClientAuth::None
            || tls.client_ca.is_some()
            || api.read_access == ReadAccess::Open)
    {
        tls.server_config().context("setting up the API's TLS")?;
    }
    Ok(())
}

/// The explorer's files to serve, if `explorer.dir` holds a build.
fn explorer_dir(config: &NodeConfig) -> Option<PathBuf> {
    config.explorer.dir.clone().filter(|dir| {
        let found = dir.join("index.html").is_file();
        if !found {
            tracing::warn!(dir = %dir.display(), "no explorer build there (index.html); serving the API only");
        }
        found
    })
}

/// Deploys each of `contracts` that is not deployed yet.
fn deploy(ledger: &Ledger, contracts: &[(String, PathBuf)]) -> Result<()> {
    if contracts.is_empty() {
        return Ok(());
    }
    let deployed: Vec<String> = ledger
        .lifecycle()
        .contracts("", 1000)?
        .into_iter()
        .map(|definition| definition.name)
        .collect();
    for (name, path) in contracts {
        if deployed.contains(name) {
            continue;
        }
        let code = std::fs::read(path).with_context(|| {
            format!(
                "reading the contract {name} at {} (the example contracts: build them with \
                 ./scripts/build-contracts.sh, or pass --contracts)",
                path.display()
            )
        })?;
        eprintln!("deploying contract {name} ({})", path.display());
        ledger
            .deploy(name, "1", &code, "")
            .with_context(|| format!("deploying {name}"))?;
    }
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM; the handlers are in place when this returns (it must
/// be called inside the runtime).
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
