//! Operations endpoints, served on the API's port beside gRPC:
//!
//! - `GET /healthz`: `200 ok` while the node orders and validates (an orderer alone:
//!   while it orders); `503` with the reason once it has failed or closed.
//! - `GET /metrics`: Prometheus / OpenMetrics text ([`crate::metrics`]); under
//!   [`OpsAccess::Members`], to identities of the network only ([`members_only`]).
//! - `GET /log/level` and `PUT /log/level` (body: a `RUST_LOG`-style filter): read or
//!   change what is logged, while running. Changes are taken from the node's own host only.
//! - Anything else that is not gRPC: the web explorer's files, when the node serves them
//!   (deep links get `index.html`, the explorer routes them itself).
//!
//! Logs are structured (`tracing`), as text or one JSON object per line ([`init_logs`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Registry, reload};

use crate::metrics::{NodeMetrics, OrdererMetrics};
use runnel_ledger::ledger::Ledger;
use runnel_ledger::orderer::Orderer;

/// Who may read what a node tells of its inner state: `/metrics`, and the heights and
/// peers (endpoints, last errors) of `GetNetworkInfo` (`[api] ops_access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OpsAccess {
    /// Anyone who can reach the API: a dev node, or a network whose port only its
    /// operators reach.
    Open,
    /// Identities of the network only, checked as reads are ([`crate::readers`]): a
    /// member's certificate over mutual TLS (the network's peers and orderers, a scraper
    /// holding a member's certificate) or a read grant. Others get `/metrics` refused
    /// (`401`), and of `GetNetworkInfo` only what a client needs to connect: the channel,
    /// the organisations, the version, the ordering settings and the size limits.
    #[default]
    Members,
}

impl OpsAccess {
    /// The name used in runnel.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            OpsAccess::Open => "open",
            OpsAccess::Members => "members",
        }
    }
}

impl std::fmt::Display for OpsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for OpsAccess {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "open" => Ok(OpsAccess::Open),
            "members" => Ok(OpsAccess::Members),
            _ => Err(format!("`{s}` is not an ops access: open or members")),
        }
    }
}

/// Who is asking for an operations route, for [`members_only`].
pub trait Member: Send + Sync {
    /// Whether `request` comes from an identity of the network.
    fn is_member(&self, request: &Request) -> bool;
}

impl Member for crate::readers::Readers {
    fn is_member(&self, request: &Request) -> bool {
        self.reader(request, runnel_ledger::tx::now_ms()).is_ok()
    }
}

impl Member for runnel_ledger::identity::Msp {
    fn is_member(&self, request: &Request) -> bool {
        crate::readers::tls_member(request, self, runnel_ledger::tx::now_seconds()).is_some()
    }
}

/// The middleware over the operations routes under [`OpsAccess::Members`]: `/metrics`
/// goes on only for a member; anyone else gets `401`. `/healthz` (what a load balancer
/// asks) and the explorer's files stay open.
pub async fn members_only(
    State(members): State<Arc<dyn Member>>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    if request.uri().path() != "/metrics" || members.is_member(&request) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        "IDENTITY_REQUIRED: this node's metrics are for identities of the network \
         (ops_access = \"members\"): present a member's certificate over mutual TLS, or a \
         read grant in the `runnel-read-grant-bin` header\n",
    )
        .into_response()
}

/// Changes the log filter of a running node.
#[derive(Clone)]
pub struct LogControl {
    handle: reload::Handle<EnvFilter, Registry>,
}

impl std::fmt::Debug for LogControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogControl")
            .field("level", &self.level())
            .finish()
    }
}

impl LogControl {
    /// The filter in force.
    pub fn level(&self) -> String {
        self.handle
            .with_current(|filter| filter.to_string())
            .unwrap_or_default()
    }

    /// Replaces the filter; a filter that does not parse changes nothing.
    pub fn set_level(&self, level: &str) -> Result<(), String> {
        let filter = EnvFilter::try_new(level.trim()).map_err(|e| e.to_string())?;
        self.handle.reload(filter).map_err(|e| e.to_string())
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// For people.
    Text,
    /// For log collectors.
    Json,
}

/// Installs the process's log subscriber: `level` (`RUST_LOG` syntax) to stderr, as text
/// or JSON lines. Call once per process.
pub fn init_logs(level: &str, format: LogFormat) -> Result<LogControl, String> {
    let filter = EnvFilter::try_new(level).map_err(|e| format!("log level {level:?}: {e}"))?;
    let (filter, handle) = reload::Layer::new(filter);
    let registry = tracing_subscriber::registry().with(filter);
    let writer = std::io::stderr;
    let installed = match format {
        LogFormat::Text => registry
            .with(tracing_subscriber::fmt::layer().with_writer(writer))
            .try_init(),
        LogFormat::Json => registry
            .with(tracing_subscriber::fmt::layer().json().with_writer(writer))
            .try_init(),
    };
    installed.map_err(|e| e.to_string())?;
    Ok(LogControl { handle })
}

/// What the operations endpoints read.
#[derive(Clone)]
struct Ops {
    target: Arc<dyn Operated>,
    logs: Option<LogControl>,
}

/// What the operations endpoints report on: a node with its peer, or an orderer alone.
trait Operated: Send + Sync {
    /// Why it no longer works; `None` while it does.
    fn failure(&self) -> Option<String>;
    /// The Prometheus text exposition, read now.
    fn metrics_text(&self) -> String;
}

struct NodeOps {
    ledger: Arc<Ledger>,
    metrics: Arc<NodeMetrics>,
}

impl Operated for NodeOps {
    fn failure(&self) -> Option<String> {
        self.ledger.failure()
    }

    fn metrics_text(&self) -> String {
        self.metrics.encode(&self.ledger)
    }
}

struct OrdererOps {
    orderer: Arc<dyn Orderer>,
    metrics: OrdererMetrics,
}

impl Operated for OrdererOps {
    fn failure(&self) -> Option<String> {
        self.orderer.failure()
    }

    fn metrics_text(&self) -> String {
        self.metrics.encode(&*self.orderer)
    }
}

/// The operations routes of a node (see the module doc), with the explorer's files from
/// `explorer` as the fallback when given.
pub fn routes(
    ledger: Arc<Ledger>,
    metrics: Arc<NodeMetrics>,
    logs: Option<LogControl>,
    explorer: Option<&Path>,
) -> Router {
    router(Arc::new(NodeOps { ledger, metrics }), logs, explorer)
}

/// The operations routes of an orderer process: health, metrics, log level.
pub fn orderer_routes(orderer: Arc<dyn Orderer>, logs: Option<LogControl>) -> Router {
    let metrics = OrdererMetrics::new(&*orderer);
    router(Arc::new(OrdererOps { orderer, metrics }), logs, None)
}

fn router(target: Arc<dyn Operated>, logs: Option<LogControl>, explorer: Option<&Path>) -> Router {
    let ops = Ops { target, logs };
    let router = Router::new()
        .route("/healthz", get(health))
        .route("/metrics", get(metrics_text))
        .route("/log/level", get(log_level).put(set_log_level))
        .with_state(ops);
    let files = explorer.map(explorer_files);
    router.fallback(move |request: Request| fallback(files.clone(), request))
}

/// Headers on every explorer file: its code and styles come from this node only, it
/// talks to this node only, no other site may frame it, and nothing is sniffed into a
/// type it was not served as.
const EXPLORER_HEADERS: [(header::HeaderName, &str); 4] = [
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::REFERRER_POLICY, "no-referrer"),
];

/// The explorer's files; a path that is not a file is one of its deep links.
fn explorer_files(dir: &Path) -> ServeDir<ServeFile> {
    let index: PathBuf = dir.join("index.html");
    ServeDir::new(dir)
        .append_index_html_on_directories(true)
        .fallback(ServeFile::new(index))
}

/// A path that is no one's: `UNIMPLEMENTED` for a gRPC call, else an explorer file.
async fn fallback(files: Option<ServeDir<ServeFile>>, request: Request) -> Response {
    let grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"));
    match files {
        Some(files) if !grpc => match files.oneshot(request).await {
            Ok(response) => {
                let mut response = response.map(Body::new);
                let headers = response.headers_mut();
                for (name, value) in EXPLORER_HEADERS {
                    headers.insert(name, HeaderValue::from_static(value));
                }
                response
            }
            Err(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the file could not be read\n",
            )
                .into_response(),
        },
        None if !grpc => (
            StatusCode::NOT_FOUND,
            "not found (this node serves no explorer)\n",
        )
            .into_response(),
        _ => crate::unimplemented().await,
    }
}

async fn health(State(ops): State<Ops>) -> Response {
    // The reason stays in the node's log: its text can name files and internals.
    match ops.target.failure() {
        None => (StatusCode::OK, "ok\n").into_response(),
        Some(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable: the node stopped ordering or validating; its log says why\n",
        )
            .into_response(),
    }
}

async fn metrics_text(State(ops): State<Ops>) -> Response {
    let text = ops.target.metrics_text();
    let mut response = Response::new(Body::from(text));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    response
}

async fn log_level(State(ops): State<Ops>) -> Response {
    match &ops.logs {
        Some(logs) => format!("{}\n", logs.level()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            "this node's logs are not configurable\n",
        )
            .into_response(),
    }
}

/// The client's address, over plain TCP or TLS.
pub(crate) fn remote_addr(request: &Request) -> Option<std::net::SocketAddr> {
    use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
    let extensions = request.extensions();
    extensions
        .get::<TcpConnectInfo>()
        .or_else(|| {
            extensions
                .get::<TlsConnectInfo<TcpConnectInfo>>()
                .map(TlsConnectInfo::get_ref)
        })
        .and_then(TcpConnectInfo::remote_addr)
}

/// True for a Host header naming this machine by a loopback name or address.
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // "[::1]:7051"
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn set_log_level(State(ops): State<Ops>, request: Request) -> Response {
    let Some(logs) = &ops.logs else {
        return (
            StatusCode::NOT_FOUND,
            "this node's logs are not configurable\n",
        )
            .into_response();
    };
    // From the node's host, and addressed to it by a loopback name: a web page that
    // rebinds its own name to 127.0.0.1 sends its own name as the Host.
    let local = remote_addr(&request).is_some_and(|addr| addr.ip().is_loopback())
        && request
            .headers()
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .is_some_and(loopback_host);
    if !local {
        return (
            StatusCode::FORBIDDEN,
            "the log level can only be changed from the node's host\n",
        )
            .into_response();
    }
    let body: Bytes = match axum::body::to_bytes(request.into_body(), 4096).await {
        Ok(body) => body,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response(),
    };
    let Ok(level) = std::str::from_utf8(&body) else {
        return (StatusCode::BAD_REQUEST, "the level must be UTF-8 text\n").into_response();
    };
    match logs.set_level(level) {
        Ok(()) => {
            tracing::info!(level = level.trim(), "log level changed");
            format!("{}\n", logs.level()).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, format!("bad log level: {e}\n")).into_response(),
    }
}
