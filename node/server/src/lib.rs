//! The Runnel node's server: the services of `node/proto/runnel/v1/api.proto` over a
//! [`Ledger`], served as gRPC and gRPC-web on one port, with CORS so that browsers may
//! call it; the `Ordering` service an orderer process serves its peers ([`ordering`]) and
//! the client peers use to reach it ([`remote`]); the operations endpoints ([`ops`]:
//! `/healthz`, `/metrics` from [`metrics`], `/log/level`, explorer files); and the
//! scheduling policy of the process's threads ([`sched`]).
//!
//! | service | file | what |
//! |---|---|---|
//! | `Gateway` | `gateway.rs` | evaluate, endorse, submit, commit status, contract events |
//! | `Deliver` | `deliver.rs` | committed transactions and blocks: stored, then live |
//! | `Query` | `query.rs` | blocks, transactions, keys, key history, contracts, network info |
//! | `Admin` | `admin.rs` | endorsing deploy and upgrade proposals an admin signed |
//! | `Trace` | `traces.rs` | per-transaction stage timestamps; completed traces, live |
//!
//! The node never signs for a caller: every write starts as a proposal its creator
//! signed and ends as a transaction the same creator signed (docs/api.md).
//!
//! Ledger calls block (a contract runs, signatures are checked, sled is read), so none
//! runs on the threads that drive connections: `Endorse` and `Submit`, the calls every
//! transaction makes, go to the API's own threads, which take what has queued up as one
//! batch ([`admission`]); `Admin` calls queue likewise for a thread of their own
//! (`admin.rs`); the rest run on tokio's blocking pool.
//!
//! Everything is bounded ([`ApiConfig`]): message sizes both ways, concurrent streams per
//! connection, live streams and waiting status calls across the server, and each
//! stream's queue. Live streams read the ledger's broadcasts only as wake-ups and take
//! what they send from the store, so a slow reader slows only itself and never misses
//! an item (`stream.rs`); the trace stream, which has no store behind it, ends a reader
//! that falls too far behind with `RESOURCE_EXHAUSTED`. Errors map to statuses in
//! [`status`].
//!
//! With [`ApiConfig::tls`] the port speaks TLS only ([`tls`]): gRPC over HTTP/2 and
//! gRPC-web over HTTP/1.1 or HTTP/2 (ALPN `h2` and `http/1.1`), and the operations
//! routes, optionally with client certificates (mutual TLS).

mod admin;
pub mod admission;
pub mod codec;
pub mod connections;
mod deliver;
pub mod endorsing;
mod gateway;
mod heights;
pub mod limits;
pub mod metrics;
pub mod ops;
pub mod proto;
mod query;
pub mod readers;
pub mod sched;
mod shares;
pub mod status;
mod stream;
pub mod tls;
mod traces;
mod waiters;

pub use admin::ADMIN_QUEUE_MAX;
pub use query::PROOFS_CONCURRENT_MAX;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_rustls::rustls::ServerConfig;
use tonic::service::Routes;
use tonic::{Code, Status};
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

use crate::proto::SignedProposal;
use crate::proto::admin_server::AdminServer;
use crate::proto::deliver_server::DeliverServer;
use crate::proto::gateway_server::GatewayServer;
use crate::proto::query_server::QueryServer;
use crate::proto::trace_server::TraceServer;
use runnel_ledger::gather::EndorsementGatherer;
use runnel_ledger::ids::{Seq, TxId};
use runnel_ledger::ledger::{Ledger, LedgerError, Prepared, ProposalAnswer, ProposalCall, ToOrder};
use runnel_ledger::orderer::TRANSACTION_BYTES_MAX;

pub use readers::ReadAccess;
pub use tls::{ClientAuth, TlsConfig, TlsError};

/// How long a stopping node waits for its connections to close before it stops anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Largest request of a method whose request holds a number, an id or a name (`Deliver`,
/// `Trace`, most of `Query`, `CommitStatus`, `ContractEvents`): a bigger one is refused
/// from its frame's header, before its bytes are read ([`limits`]).
pub const SMALL_REQUEST_BYTES_MAX: usize = 64 << 10;

/// Largest request to `Query`: its biggest holds a state key, which the store bounds at
/// 1 MiB ([`runnel_ledger::store::KEY_BYTES_MAX`]).
pub const QUERY_REQUEST_BYTES_MAX: usize = runnel_ledger::store::KEY_BYTES_MAX + (64 << 10);

/// How the API is served, and its limits.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The address to listen on (port 0: any free port; see [`Server::local_addr`]).
    /// Default `127.0.0.1:7051`, the port of a Fabric peer.
    pub listen: SocketAddr,
    /// Largest message received or sent, in bytes (the orderer's largest transaction,
    /// by default).
    pub message_bytes_max: usize,
    /// Most concurrent calls on one HTTP/2 connection.
    pub connection_streams_max: u32,
    /// Most live server streams (events, deliveries, traces) open at once, across all
    /// connections.
    pub streams_max: usize,
    /// Most live server streams one connection holds at once.
    pub streams_per_connection_max: usize,
    /// Most live server streams one reader holds at once over all its connections, when
    /// reads are for members (a reader is then known).
    pub streams_per_identity_max: usize,
    /// The bounds on connections: clients' in all and per address, the room kept for
    /// the network's peers and orderers, the idle timeout ([`connections`]).
    pub connections: connections::ConnectionLimits,
    /// Most `CommitStatus` calls (and `Submit` calls that wait for a status) waiting at
    /// once, across all connections.
    pub commit_waits_max: usize,
    /// Most of those one connection has waiting at once.
    pub commit_waits_per_connection_max: usize,
    /// The longest a `CommitStatus` call (or a `Submit` that waits) waits, whatever its
    /// deadline: then it ends with `DEADLINE_EXCEEDED`, and its place is free again.
    pub commit_wait_max: Duration,
    /// Most `CommitStatus` calls one reader has waiting at once over all its
    /// connections, when reads are for members.
    pub commit_waits_per_identity_max: usize,
    /// Most `Endorse` and `Evaluate` calls, and as many `Submit` calls, queued for the
    /// ledger at once ([`admission`]); more are refused with `RESOURCE_EXHAUSTED`.
    pub admission_queue_max: usize,
    /// Most bytes of proposals, and as many of transactions, queued for the ledger or
    /// being handled at once; a call that would pass it is refused the same way.
    pub admission_queue_bytes_max: usize,
    /// Items one server stream holds for a slow reader before it stops reading ahead.
    pub stream_queue_depth: usize,
    /// Web origins (`https://app.example:8443`) whose pages may call the API from a
    /// browser (CORS). Empty (the default): none but pages the node serves itself (the
    /// explorer), which need no CORS. `"*"`: any origin, for a local dev node only.
    pub cors_origins: Vec<String>,
    /// How long browsers may cache a CORS preflight answer.
    pub cors_max_age: Duration,
    /// Who may read: identities of the network only (the default), or anyone
    /// ([`readers`]).
    pub read_access: ReadAccess,
    /// Who may read `/metrics` and the heights and peers of `GetNetworkInfo`: identities
    /// of the network only, or anyone ([`ops::OpsAccess`]); none (the default): as
    /// `read_access` says ([`ApiConfig::ops_access`]).
    pub ops_access: Option<ops::OpsAccess>,
    /// Serve TLS (HTTPS) with these files; none: plain HTTP/2 and HTTP/1.1.
    pub tls: Option<TlsConfig>,
    /// How this peer reaches the other organisations' peers for their endorsements.
    pub gateway: endorsing::GatewayConfig,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7051)),
            message_bytes_max: TRANSACTION_BYTES_MAX,
            connection_streams_max: 256,
            streams_max: 1024,
            streams_per_connection_max: 64,
            streams_per_identity_max: 256,
            connections: connections::ConnectionLimits::default(),
            commit_waits_max: 16_384,
            commit_waits_per_connection_max: 1024,
            commit_waits_per_identity_max: 4096,
            commit_wait_max: Duration::from_secs(10 * 60),
            admission_queue_max: 4096,
            admission_queue_bytes_max: 256 << 20,
            stream_queue_depth: 64,
            cors_origins: Vec::new(),
            cors_max_age: Duration::from_secs(24 * 60 * 60),
            read_access: ReadAccess::Members,
            ops_access: None,
            tls: None,
            gateway: endorsing::GatewayConfig::default(),
        }
    }
}

impl ApiConfig {
    /// Who may read the node's inner state: `ops_access`, or as `read_access` says.
    pub fn ops_access(&self) -> ops::OpsAccess {
        self.ops_access.unwrap_or(match self.read_access {
            ReadAccess::Open => ops::OpsAccess::Open,
            ReadAccess::Members => ops::OpsAccess::Members,
        })
    }
}

/// Why the API could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The address could not be bound.
    #[error("binding the API to {addr}: {message}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The system's message.
        message: String,
    },
    /// TLS could not be set up: a file is missing, unreadable or does not fit.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The server failed.
    #[error("serving the API: {0}")]
    Serve(String),
}

/// Response headers a browser may read besides the CORS-safelisted ones: gRPC-web puts
/// the status in headers or trailers, and Runnel adds its error and validation codes.
const EXPOSED_HEADERS: [&str; 6] = [
    "grpc-status",
    "grpc-message",
    "grpc-status-details-bin",
    status::ERROR_CODE_HEADER,
    status::VALIDATION_CODE_HEADER,
    status::ERROR_ORG_HEADER,
];

/// An API bound to its address, ready to serve.
#[derive(Debug)]
pub struct Server {
    ledger: Arc<Ledger>,
    config: ApiConfig,
    listener: TcpListener,
    local_addr: SocketAddr,
    tls: Option<Arc<ServerConfig>>,
}

impl Server {
    /// Reads and checks the TLS files, if any (a missing, unreadable or mismatched one is
    /// [`ApiError::Tls`], naming it), then binds `config.listen`.
    /// When reads are for members, the network's CAs are trusted for client
    /// certificates too, so that a member's own certificate identifies it.
    pub async fn bind(ledger: Arc<Ledger>, mut config: ApiConfig) -> Result<Server, ApiError> {
        if let Some(tls) = &mut config.tls
            && config.read_access == ReadAccess::Members
        {
            let msp = ledger.msp();
            tls.member_cas = msp.ca_certs();
        }
        let tls = config
            .tls
            .as_ref()
            .map(TlsConfig::server_config)
            .transpose()?;
        let addr = config.listen;
        let bind_error = |e: std::io::Error| ApiError::Bind {
            addr,
            message: e.to_string(),
        };
        let listener = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        Ok(Server {
            ledger,
            config,
            listener,
            local_addr,
            tls,
        })
    }

    /// The address bound (with the port chosen when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether the port speaks TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The URL clients reach the API at: `https://` or `http://` and the address bound.
    pub fn url(&self) -> String {
        let scheme = if self.is_tls() { "https" } else { "http" };
        format!("{scheme}://{}", self.local_addr)
    }

    /// Serves until `shutdown` completes; then ends every live stream and waiting call
    /// with `UNAVAILABLE`, and returns once the connections are closed. Paths that are no
    /// service's are answered `UNIMPLEMENTED`.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ApiError> {
        let others = axum::Router::new().fallback(unimplemented);
        self.serve_with(others, shutdown).await
    }

    /// [`Server::serve`], with `others` answering every path that is not a service's
    /// (the node's operations endpoints and explorer files: [`crate::ops`]). `others`
    /// gets the same CORS and gRPC-web layers, and its fallback, if any, is the server's.
    pub async fn serve_with(
        self,
        others: axum::Router,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ApiError> {
        let (stop, stopping) = watch::channel(false);
        let admission = Admission::start(
            &self.ledger,
            self.config.admission_queue_max,
            self.config.admission_queue_bytes_max,
        )
        .map_err(|e| ApiError::Serve(format!("starting the admission threads: {e}")))?;
        let shared = Arc::new(Shared {
            admission,
            streams: Arc::new(Semaphore::new(
                self.config.streams_max.min(Semaphore::MAX_PERMITS),
            )),
            stream_shares: shares::Shares::new(
                "TOO_MANY_STREAMS",
                "live streams",
                ("streams_max", usize::MAX),
                (
                    "streams_per_connection_max",
                    self.config.streams_per_connection_max,
                ),
                (
                    "streams_per_identity_max",
                    self.config.streams_per_identity_max,
                ),
            ),
            wait_shares: shares::Shares::new(
                "TOO_MANY_WAITS",
                "calls waiting for a status",
                ("commit_waits_max", self.config.commit_waits_max),
                (
                    "commit_waits_per_connection_max",
                    self.config.commit_waits_per_connection_max,
                ),
                (
                    "commit_waits_per_identity_max",
                    self.config.commit_waits_per_identity_max,
                ),
            ),
            waiters: waiters::Waiters::new(self.config.commit_waits_max),
            heights: heights::Heights::default(),
            peers: endorsing::RemotePeers(Arc::new(endorsing::Peers::new(
                &self.ledger,
                &self.config.gateway,
                self.config.message_bytes_max,
            ))),
            ledger: self.ledger,
            stopping,
            config: self.config,
        });
        // Subscribed before the first call can wait.
        let dispatchers = [
            tokio::spawn(waiters::dispatch(shared.clone(), shared.ledger.statuses())),
            tokio::spawn(heights::dispatch_blocks(
                shared.clone(),
                shared.ledger.blocks(),
            )),
            tokio::spawn(shared.peers.0.clone().watch_health()),
        ];

        let limit = shared.config.message_bytes_max;
        let cors = cors_layer(&shared.config)?;
        let admin = admin::AdminService::start(&shared.ledger, shared.peers.clone())
            .map_err(|e| ApiError::Serve(format!("starting the admin thread: {e}")))?;
        // Built on an empty axum router, which has no fallback of its own: `others` brings it.
        let services = Routes::from(axum::Router::new())
            .add_service(
                GatewayServer::new(gateway::GatewayService::new(shared.clone()))
                    .max_decoding_message_size(
                        limit.saturating_add(limits::TRANSACTION_ENVELOPE_BYTES),
                    )
                    .max_encoding_message_size(limit),
            )
            .add_service(
                DeliverServer::new(deliver::DeliverService::new(shared.clone()))
                    .max_decoding_message_size(SMALL_REQUEST_BYTES_MAX.min(limit))
                    .max_encoding_message_size(limit),
            )
            .add_service(
                QueryServer::new(query::QueryService::new(shared.clone()))
                    .max_decoding_message_size(QUERY_REQUEST_BYTES_MAX.min(limit))
                    .max_encoding_message_size(limit),
            )
            .add_service(
                crate::proto::endorser_server::EndorserServer::new(
                    endorsing::EndorserService::new(shared.clone()),
                )
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit),
            )
            .add_service(
                AdminServer::new(admin)
                    .max_decoding_message_size(limit)
                    .max_encoding_message_size(limit),
            )
            .add_service(
                TraceServer::new(traces::TraceService::new(shared.clone()))
                    .max_decoding_message_size(SMALL_REQUEST_BYTES_MAX.min(limit))
                    .max_encoding_message_size(limit),
            );
        let readers = Arc::new(readers::Readers::new(
            shared.config.read_access,
            shared.ledger.msp().clone(),
            shared.ledger.channel().to_string(),
        ));
        // gRPC-web for the services only: the layer refuses any other HTTP/1.1 request.
        // Readers are checked inside it, so that a refusal goes out as gRPC-web too.
        let proposal_bytes_max = shared
            .ledger
            .info()
            .map_or(runnel_ledger::endorser::PROPOSAL_BYTES_MAX, |info| {
                info.proposal_bytes_max
            });
        let limits = Arc::new(limits::MethodLimits::api(
            proposal_bytes_max,
            shared.config.message_bytes_max,
        ));
        let connections = connections::Connections::new(shared.config.connections);
        let readers_for_ops = readers.clone();
        let everything = services
            .into_axum_router()
            .layer(axum::middleware::from_fn_with_state(limits, limits::check))
            .layer(axum::middleware::from_fn_with_state(
                readers,
                readers::check,
            ))
            .layer(tonic_web::GrpcWebLayer::new())
            .merge(match shared.config.ops_access() {
                ops::OpsAccess::Open => others,
                ops::OpsAccess::Members => {
                    let members: Arc<dyn ops::Member> = readers_for_ops;
                    others.layer(axum::middleware::from_fn_with_state(
                        members,
                        ops::members_only,
                    ))
                }
            })
            .layer(axum::middleware::from_fn_with_state(
                connections.clone(),
                connections::track,
            ));
        let router = tonic::transport::Server::builder()
            .accept_http1(true)
            .max_concurrent_streams(shared.config.connection_streams_max)
            .http2_keepalive_interval(Some(connections::KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(connections::KEEPALIVE_TIMEOUT))
            .layer(tower::util::option_layer(cors))
            .add_routes(Routes::from(everything));
        let mut stopped = stop.subscribe();
        let signal = async move {
            shutdown.await;
            // Live streams and waits end now, so the graceful shutdown can finish.
            let _ = stop.send(true);
        };
        // A connection whose client never reads the server's goodbye would hold the
        // graceful shutdown until its keepalive fails: past SHUTDOWN_GRACE, stop anyway.
        let grace = async move {
            let _ = stopped.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        let served = match (self.tls, &shared.config.tls) {
            (Some(tls), Some(config)) => {
                let incoming = tls::incoming(
                    self.listener,
                    connections,
                    Some(shared.ledger.msp().clone()),
                    tls,
                    config.handshake_timeout,
                );
                tokio::select! {
                    served = router.serve_with_incoming_shutdown(incoming, signal) => served,
                    () = grace => Ok(()),
                }
            }
            _ => {
                let incoming = connections::accept(self.listener, connections, false);
                tokio::select! {
                    served = router.serve_with_incoming_shutdown(incoming, signal) => served,
                    () = grace => Ok(()),
                }
            }
        }
        .map_err(|e| ApiError::Serve(e.to_string()));
        // Returns only once no task of the API holds the ledger any more, so that the
        // caller may close it (and its directory) as soon as this returns.
        for dispatcher in dispatchers {
            dispatcher.abort();
            let _ = dispatcher.await;
        }
        let streams = u32::try_from(shared.config.streams_max).unwrap_or(u32::MAX);
        let _ = shared.streams.acquire_many(streams).await;
        served
    }
}

/// The CORS layer for `config.cors_origins`; none when no other origin may call.
fn cors_layer(config: &ApiConfig) -> Result<Option<CorsLayer>, ApiError> {
    if config.cors_origins.is_empty() {
        return Ok(None);
    }
    let origins = if config.cors_origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        let origins = config
            .cors_origins
            .iter()
            .map(|origin| {
                HeaderValue::from_str(origin.trim_end_matches('/')).map_err(|_| {
                    ApiError::Serve(format!("cors_origins: `{origin}` is not an origin"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        AllowOrigin::list(origins)
    };
    Ok(Some(
        CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::POST, Method::OPTIONS])
            .allow_headers(Any)
            .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
            .max_age(config.cors_max_age),
    ))
}

/// The answer to a path no service has: gRPC's `UNIMPLEMENTED`.
pub async fn unimplemented() -> axum::response::Response {
    status::response(status::error(
        Code::Unimplemented,
        "UNIMPLEMENTED",
        "no such service or method on this node",
    ))
}

/// Binds `config.listen` and serves `ledger` until `shutdown` completes.
pub async fn serve(
    ledger: Arc<Ledger>,
    config: ApiConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ApiError> {
    Server::bind(ledger, config).await?.serve(shutdown).await
}

/// What the services share.
struct Shared {
    ledger: Arc<Ledger>,
    /// The other organisations' peers, asked for the endorsements this one cannot give.
    peers: endorsing::RemotePeers,
    /// Where `Endorse` and `Submit` calls queue for the ledger.
    admission: Admission,
    config: ApiConfig,
    /// One permit per live server stream.
    streams: Arc<Semaphore>,
    /// Each connection's share of the live streams.
    stream_shares: Arc<shares::Shares>,
    /// Each connection's share of the calls waiting for a status.
    wait_shares: Arc<shares::Shares>,
    /// `CommitStatus` calls waiting for a status.
    waiters: waiters::Waiters,
    /// Streams waiting for a height.
    heights: heights::Heights,
    /// True once the server is shutting down.
    stopping: watch::Receiver<bool>,
}

/// Signed proposals queued for endorsement (answered with a transaction) or evaluation
/// (answered with a result).
type EndorseBatcher = admission::Batcher<ProposalCall, ProposalAnswer>;
/// Signed transactions checked and queued for ordering, each answered with its id and
/// seq.
type SubmitBatcher = admission::Batcher<ToOrder, Result<(TxId, Seq), LedgerError>>;

/// The batchers of the calls every transaction makes.
struct Admission {
    endorse: EndorseBatcher,
    /// None when the orderer is another process: each submit is then a round trip of its
    /// own, made on the blocking pool.
    submit: Option<SubmitBatcher>,
}

/// The largest transaction a `Submit` checks on its connection's thread (a decode and a
/// few hashes: microseconds); a larger one is checked on the blocking pool.
const INLINE_CHECK_BYTES_MAX: usize = 64 << 10;

/// Proposals or transactions one admission thread takes at a time: enough for a batch
/// verification to pay (under half the cost per signature from about 8), few enough that
/// the first answer of a batch does not wait long for the last.
const ADMISSION_BATCH_MAX: usize = 32;

impl Admission {
    fn start(
        ledger: &Arc<Ledger>,
        queue_max: usize,
        bytes_max: usize,
    ) -> std::io::Result<Admission> {
        // Endorsing runs contracts: one thread per core. Ordering is sequential anyway.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let weigh_call: fn(&ProposalCall) -> usize = |call| match call {
            ProposalCall::Endorse(signed, _) | ProposalCall::Evaluate(signed) => {
                signed.proposal.len() + signed.signature.len()
            }
        };
        let endorse = admission::Batcher::start(
            "endorse",
            cores,
            ADMISSION_BATCH_MAX,
            (queue_max, bytes_max, weigh_call),
            {
                let ledger = ledger.clone();
                move |calls: Vec<ProposalCall>, answer: &mut dyn FnMut(ProposalAnswer)| {
                    ledger.gateway().run_proposals(calls).for_each(answer);
                }
            },
        )?;
        let submit = if ledger.gateway().submits_in_batches() {
            let ledger = ledger.clone();
            Some(admission::Batcher::start(
                "submit",
                ledger.gateway().submits_in_flight().max(1),
                ADMISSION_BATCH_MAX,
                (queue_max, bytes_max, ToOrder::len),
                move |transactions: Vec<ToOrder>, answer: &mut dyn FnMut(_)| {
                    ledger
                        .gateway()
                        .submit_checked(transactions)
                        .into_iter()
                        .for_each(answer);
                },
            )?)
        } else {
            None
        };
        Ok(Admission { endorse, submit })
    }
}

impl Shared {
    /// Endorses a proposal through the endorse batcher, as `orgs` (none: as the policy
    /// in force needs), then asks the other organisations' peers for the endorsements
    /// this one cannot give; unless `forwarded` (another gateway sent it), when this peer
    /// endorses as itself only.
    async fn endorse(
        &self,
        proposal: SignedProposal,
        orgs: Vec<String>,
        forwarded: bool,
    ) -> Result<Prepared, Status> {
        let mut gathering = self
            .run_proposal(
                ProposalCall::Endorse(proposal, orgs),
                |answer| match answer {
                    ProposalAnswer::Endorsed(answer) => Some(answer),
                    ProposalAnswer::Evaluated(_) => None,
                },
            )
            .await?;
        if gathering.needs().is_empty() {
            return Ok(gathering.into_prepared());
        }
        if forwarded {
            return Err(status::org_error(
                Code::Unavailable,
                "ENDORSER_UNAVAILABLE",
                &gathering.needs().join(","),
                format_args!(
                    "this peer endorses for {} only, and does not forward a forwarded proposal",
                    self.ledger.own_orgs().join(", ")
                ),
            ));
        }
        self.peers.gather(&mut gathering).await?;
        Ok(gathering.into_prepared())
    }

    /// Evaluates a proposal through the endorse batcher, its signature checked in the
    /// same batch as the endorsements'.
    async fn evaluate(&self, proposal: SignedProposal) -> Result<Vec<u8>, Status> {
        self.run_proposal(ProposalCall::Evaluate(proposal), |answer| match answer {
            ProposalAnswer::Evaluated(answer) => Some(answer),
            ProposalAnswer::Endorsed(_) => None,
        })
        .await
    }

    /// Queues `call` for the endorse batcher; `in_kind` takes the answer of the call's
    /// kind ([`runnel_ledger::ledger::Gateway::run_proposals`] answers each call in
    /// kind, so `None` is a bug).
    async fn run_proposal<T>(
        &self,
        call: ProposalCall,
        in_kind: impl FnOnce(ProposalAnswer) -> Option<Result<T, LedgerError>>,
    ) -> Result<T, Status> {
        let answer = self.admission.endorse.call(call).await?;
        in_kind(answer)
            .ok_or_else(|| {
                status::error(
                    Code::Internal,
                    "INTERNAL",
                    "a proposal call was answered in another kind",
                )
            })?
            .map_err(|e| status::from_ledger(&e))
    }

    /// Orders a signed transaction through the submit batcher, or on the blocking pool
    /// when the orderer does not take batches. It is checked first, on the calling task
    /// ([`runnel_ledger::ledger::Gateway::check_submit`]): a transaction refused there
    /// never queues, and never goes to the orderer with others; its signatures are
    /// verified in its batch.
    async fn submit(&self, transaction: Vec<u8>) -> Result<(TxId, Seq), Status> {
        // A large one is decoded on the blocking pool: copying megabytes would hold up
        // the connections' threads.
        let to_order = if transaction.len() > INLINE_CHECK_BYTES_MAX {
            self.blocking(move |ledger| ledger.gateway().check_submit(transaction))
                .await?
        } else {
            self.inline(|ledger| ledger.gateway().check_submit(transaction))?
        };
        match &self.admission.submit {
            Some(batcher) => batcher
                .call(to_order)
                .await?
                .map_err(|e| status::from_ledger(&e)),
            None => {
                self.blocking(move |ledger| {
                    ledger
                        .gateway()
                        .submit_checked(vec![to_order])
                        .pop()
                        .unwrap_or(Err(LedgerError::Order(
                            runnel_ledger::orderer::OrderError::Closed,
                        )))
                })
                .await
            }
        }
    }

    /// Runs `call` on the ledger on the blocking pool.
    /// Runs a short ledger call (a lookup, or the orderer's admission: tens of
    /// microseconds) on the calling task: handing it to the blocking pool would cost two
    /// thread switches, more than the call itself.
    fn inline<T>(&self, call: impl FnOnce(&Ledger) -> Result<T, LedgerError>) -> Result<T, Status> {
        call(&self.ledger).map_err(|e| status::from_ledger(&e))
    }

    async fn blocking<T, F>(&self, call: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Ledger) -> Result<T, LedgerError> + Send + 'static,
    {
        let ledger = self.ledger.clone();
        tokio::task::spawn_blocking(move || call(&ledger))
            .await
            .map_err(|e| status::error(Code::Internal, "INTERNAL", e))?
            .map_err(|e| status::from_ledger(&e))
    }

    /// A permit for one more live stream.
    /// A live stream's place: its connection's share, then one of the node's permits.
    fn stream_permit(
        &self,
        caller: shares::Caller,
    ) -> Result<(shares::Share, OwnedSemaphorePermit), Status> {
        let share = self.stream_shares.take(caller)?;
        let permit = self.streams.clone().try_acquire_owned().map_err(|_| {
            status::error(
                Code::ResourceExhausted,
                "TOO_MANY_STREAMS",
                format_args!(
                    "{} live streams are open, the most this node serves (streams_max); \
                     retry later",
                    self.config.streams_max
                ),
            )
        })?;
        Ok((share, permit))
    }

    /// Completes once the server is shutting down.
    async fn stopped(&self) {
        stopped(self.stopping.clone()).await;
    }
}

/// Completes once `stopping` says so (or its sender is gone).
async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// The status of a call cut short by the server's shutdown.
fn shutting_down() -> Status {
    status::error(
        Code::Unavailable,
        "SHUTTING_DOWN",
        "the node is shutting down; retry against it once it is back",
    )
}

/// Most characters of a client's text quoted back in an error.
const QUOTE_CHARS_MAX: usize = 80;

/// A client's text for an error message, cut to [`QUOTE_CHARS_MAX`] characters.
fn quote(text: &str) -> String {
    let mut quoted: String = text.chars().take(QUOTE_CHARS_MAX).collect();
    if quoted.len() < text.len() {
        quoted.push_str("...");
    }
    quoted
}

/// A transaction id from a request.
fn tx_id(text: &str) -> Result<TxId, Status> {
    text.parse().map_err(|_| {
        status::error(
            Code::InvalidArgument,
            "BAD_TX_ID",
            format_args!(
                "`{}` is not a transaction id (64 lowercase hex digits)",
                quote(text)
            ),
        )
    })
}

/// A missing message field.
fn missing(field: &str) -> Status {
    status::error(
        Code::InvalidArgument,
        "BAD_PAYLOAD",
        format_args!("`{field}` is required"),
    )
}

/// A validation code as the API's enum value: the stored code plus one, so that an unset
/// field never reads as valid.
fn validation_code(code: runnel_ledger::ids::ValidationCode) -> i32 {
    i32::from(code as u8) + 1
}

/// The phase a transaction validated here has reached.
fn phase(committed: bool) -> crate::proto::TxPhase {
    if committed {
        crate::proto::TxPhase::Committed
    } else {
        crate::proto::TxPhase::Validated
    }
}

/// A seq from a request, where 0 means "from the first".
fn first_seq(seq: u64) -> Seq {
    Seq(seq.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto;
    use runnel_ledger::ids::ValidationCode;
    use runnel_ledger::trace::Stage;

    #[test]
    fn enum_values_name_the_same_codes_and_stages() {
        for code in ValidationCode::ALL {
            let value = proto::ValidationCode::try_from(validation_code(code)).unwrap();
            assert_eq!(
                value.as_str_name(),
                format!("VALIDATION_CODE_{}", code.as_str())
            );
        }
        for stage in Stage::ALL {
            let value = proto::Stage::try_from(traces::stage(stage)).unwrap();
            assert_eq!(
                value.as_str_name(),
                format!("STAGE_{}", stage.as_str().to_uppercase())
            );
        }
    }

    #[test]
    fn quotes_are_cut() {
        assert_eq!(quote("abc"), "abc");
        assert_eq!(quote(&"x".repeat(1000)).len(), QUOTE_CHARS_MAX + 3);
    }
}
