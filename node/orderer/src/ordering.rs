//! The `Ordering` service (ordering.proto): an orderer process's API for peers. Broadcast
//! submits a signed transaction; Stream is [`Orderer::deliver`] over the network.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tonic::service::Routes;
use tonic::{Request, Response, Status};

use runnel_ledger::identity::{Msp, Role};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{Delivered, OrderError, Orderer};
use runnel_server::admission::Batcher;
use runnel_server::connections::{ConnectionLimits, Connections};
use runnel_server::proto::ordering_item::Item;
use runnel_server::proto::ordering_server::{Ordering, OrderingServer};
use runnel_server::proto::{
    BroadcastBatchRequest, BroadcastBatchResponse, BroadcastRefusal, BroadcastRequest,
    BroadcastResponse, HeightsRequest, HeightsResponse, OrderingItem, OrderingItems, StreamRequest,
    broadcast_batch_response,
};
use runnel_server::{ApiError, ClientAuth, TlsConfig, status};

/// How long a stream's reader waits on the orderer before it looks whether its client
/// left or the server is stopping.
const POLL: Duration = Duration::from_millis(200);

/// Messages a stream holds for a slow peer before it stops reading ahead (it re-reads
/// from the log when the peer catches up, so nothing is lost).
const STREAM_QUEUE: usize = 16;

/// Most items one stream message carries, and the bytes past which it takes no more
/// (one item larger than that still goes, alone).
const STREAM_BATCH_MAX: usize = 512;
const STREAM_BATCH_BYTES_MAX: usize = 1 << 20;

/// Most streams an orderer serves at once: its readers are the network's peers, a few
/// each. Every stream has a thread of its own, never one of the runtime's blocking pool,
/// which `Broadcast` needs.
pub const STREAMS_MAX: usize = 64;

/// The connection bounds an orderer keeps unless told others
/// ([`OrderingServerHandle::with_connections`]): its clients are the network's peers and
/// orderers, a few connections each, so 1,024 leave room; one address holds 64.
pub const CONNECTIONS: ConnectionLimits = ConnectionLimits {
    connections_max: 1024,
    connections_per_address_max: 64,
    member_connections_max: runnel_server::connections::MEMBER_CONNECTIONS_MAX_DEFAULT,
    idle_timeout: Duration::from_millis(runnel_server::connections::IDLE_TIMEOUT_MS_DEFAULT),
};

/// The `Ordering` service over an orderer.
#[derive(Clone)]
pub struct OrderingService {
    orderer: Arc<dyn Orderer>,
    /// Broadcasts queued for the orderer, taken as batches: one signature batch and one
    /// turn of the sequencer each ([`Orderer::submit_batch`]), as a node's own submits.
    broadcasts: Arc<BroadcastBatcher>,
    stopping: watch::Receiver<bool>,
    streams: Arc<tokio::sync::Semaphore>,
}

/// Signed transactions queued for ordering, each answered with its place.
type BroadcastBatcher = Batcher<Vec<u8>, Result<runnel_ledger::orderer::Ordered, OrderError>>;

pub use runnel_server::limits::{BROADCAST_BATCH_BYTES_MAX, BROADCAST_BATCH_REQUEST_MAX};

/// Broadcasts one batch takes at most, and how many (and bytes) may wait.
const BROADCAST_BATCH_MAX: usize = 32;
const BROADCAST_QUEUE_MAX: usize = 4096;
const BROADCAST_QUEUE_BYTES_MAX: usize = 256 << 20;

fn broadcast_batcher(orderer: &Arc<dyn Orderer>) -> std::io::Result<BroadcastBatcher> {
    let orderer = orderer.clone();
    Batcher::start(
        "broadcast",
        1,
        BROADCAST_BATCH_MAX,
        (BROADCAST_QUEUE_MAX, BROADCAST_QUEUE_BYTES_MAX, Vec::len),
        move |transactions: Vec<Vec<u8>>, answer: &mut dyn FnMut(_)| {
            orderer
                .submit_batch(transactions)
                .into_iter()
                .for_each(answer);
        },
    )
}

/// The status of an orderer error: its name first, in the message and the
/// `runnel-error-code` header ([`status`]).
pub fn from_order(error: &OrderError) -> Status {
    status::error(status::order_code(error), error.code(), error)
}

type ItemStream = Pin<Box<dyn Stream<Item = Result<OrderingItems, Status>> + Send>>;

#[tonic::async_trait]
impl Ordering for OrderingService {
    async fn broadcast(
        &self,
        request: Request<BroadcastRequest>,
    ) -> Result<Response<BroadcastResponse>, Status> {
        let bytes = request.into_inner().signed_transaction;
        let ordered = self
            .broadcasts
            .call(bytes)
            .await?
            .map_err(|e| from_order(&e))?;
        Ok(Response::new(BroadcastResponse {
            seq: ordered.seq.0,
            tx_id: ordered.tx_id.0.to_vec(),
            received_us: ordered.received_us,
            ordered_us: ordered.ordered_us,
        }))
    }

    async fn broadcast_batch(
        &self,
        request: Request<BroadcastBatchRequest>,
    ) -> Result<Response<BroadcastBatchResponse>, Status> {
        let transactions = request.into_inner().signed_transactions;
        if transactions.len() > BROADCAST_BATCH_REQUEST_MAX {
            return Err(status::error(
                tonic::Code::InvalidArgument,
                "BAD_REQUEST",
                format_args!(
                    "a batch of {} transactions; at most {BROADCAST_BATCH_REQUEST_MAX}",
                    transactions.len()
                ),
            ));
        }
        let orderer = self.orderer.clone();
        let answers = tokio::task::spawn_blocking(move || orderer.submit_batch(transactions))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let results = answers
            .into_iter()
            .map(|answer| broadcast_batch_response::Result {
                outcome: Some(match answer {
                    Ok(ordered) => {
                        broadcast_batch_response::result::Outcome::Ordered(BroadcastResponse {
                            seq: ordered.seq.0,
                            tx_id: ordered.tx_id.0.to_vec(),
                            received_us: ordered.received_us,
                            ordered_us: ordered.ordered_us,
                        })
                    }
                    Err(error) => {
                        broadcast_batch_response::result::Outcome::Refused(BroadcastRefusal {
                            grpc_code: status::order_code(&error) as i32,
                            error_code: error.code().to_string(),
                            message: error.to_string(),
                        })
                    }
                }),
            })
            .collect();
        Ok(Response::new(BroadcastBatchResponse { results }))
    }

    type StreamStream = ItemStream;

    async fn stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<ItemStream>, Status> {
        let permit = self.streams.clone().try_acquire_owned().map_err(|_| {
            status::error(
                tonic::Code::ResourceExhausted,
                "TOO_MANY_STREAMS",
                format_args!("{STREAMS_MAX} ordering streams are open, the most an orderer serves; retry later"),
            )
        })?;
        let request = request.into_inner();
        let mut delivery = self
            .orderer
            .deliver(Seq(request.from_seq), BlockNumber(request.next_block))
            .map_err(|e| from_order(&e))?;
        let (send, receive) = mpsc::channel(STREAM_QUEUE);
        let stopping = self.stopping.clone();
        let reader = move || {
            let _permit = permit;
            // The item taken that did not fit the last message: the next one's first.
            let mut carried = None;
            loop {
                if send.is_closed() || *stopping.borrow() {
                    return;
                }
                let (items, failure) = match carried.take() {
                    Some(first) => next_items(&mut *delivery, first, &mut carried),
                    None => match delivery.next(POLL) {
                        Ok(None) => continue,
                        Ok(Some(first)) => next_items(&mut *delivery, first, &mut carried),
                        Err(error) => (Vec::new(), Some(error)),
                    },
                };
                if !items.is_empty() && send.blocking_send(Ok(OrderingItems { items })).is_err() {
                    return;
                }
                if let Some(error) = failure {
                    let _ = send.blocking_send(Err(from_order(&error)));
                    return;
                }
            }
        };
        std::thread::Builder::new()
            .name("runnel-order-stream".into())
            .spawn(reader)
            .map_err(|e| Status::unavailable(format!("starting a stream reader: {e}")))?;
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(receive),
        )))
    }

    async fn heights(
        &self,
        _request: Request<HeightsRequest>,
    ) -> Result<Response<HeightsResponse>, Status> {
        let cluster = self.orderer.cluster();
        Ok(Response::new(HeightsResponse {
            height: self.orderer.height().0,
            durable_height: self.orderer.durable_height().0,
            raft_id: cluster.as_ref().map_or(0, |view| view.id),
            raft_leader: cluster.as_ref().and_then(|view| view.leader).unwrap_or(0),
            raft_term: cluster.as_ref().map_or(0, |view| view.term),
            raft_compacted: cluster.as_ref().map_or(0, |view| view.compacted),
            raft_voters: cluster.map(|view| view.voters).unwrap_or_default(),
        }))
    }
}

/// `first` and the items `delivery` has ready after it, as one stream message's worth
/// ([`STREAM_BATCH_MAX`], [`STREAM_BATCH_BYTES_MAX`]): an item that would pass the bytes
/// goes to `carried`, for the next message. The error that ended them, if one did.
fn next_items(
    delivery: &mut dyn runnel_ledger::orderer::Delivery,
    first: Delivered,
    carried: &mut Option<Delivered>,
) -> (Vec<OrderingItem>, Option<OrderError>) {
    let mut items = Vec::new();
    let mut bytes = 0;
    let mut next = Some(first);
    while let Some(delivered) = next.take() {
        let item = match delivered {
            Delivered::Tx(ordered) => Item::Transaction(ordered.into_bytes()),
            Delivered::Durable(seq) => Item::Durable(seq.0),
            Delivered::Seal(sealed) => Item::Seal(sealed.bytes),
        };
        let size = match &item {
            Item::Transaction(bytes) | Item::Seal(bytes) => bytes.len(),
            Item::Durable(_) => 8,
        };
        items.push(OrderingItem { item: Some(item) });
        bytes += size;
        if items.len() >= STREAM_BATCH_MAX {
            break;
        }
        match delivery.next(Duration::ZERO) {
            Ok(Some(delivered)) => {
                let size = match &delivered {
                    Delivered::Tx(ordered) => ordered.transaction.len(),
                    Delivered::Seal(sealed) => sealed.bytes.len(),
                    Delivered::Durable(_) => 8,
                };
                if bytes + size > STREAM_BATCH_BYTES_MAX {
                    *carried = Some(delivered);
                    break;
                }
                next = Some(delivered);
            }
            Ok(None) => break,
            Err(error) => return (items, Some(error)),
        }
    }
    (items, None)
}

/// An orderer's API bound to its address, ready to serve.
pub struct OrderingServerHandle {
    orderer: Arc<dyn Orderer>,
    listener: TcpListener,
    local_addr: SocketAddr,
    message_bytes_max: usize,
    /// Set: only the network's peers may call the service ([`Self::peers_only`]).
    peers: Option<Arc<Msp>>,
    /// The `Cluster` service, when this orderer is one of a Raft cluster.
    cluster: Option<crate::cluster::ClusterService>,
    /// The `Consensus` service, when this orderer is one of a BFT cluster.
    consensus: Option<crate::bft::net::ConsensusService>,
    /// The bounds on connections.
    connections: ConnectionLimits,
    /// Who may read `/metrics` when only the network's peers are served.
    ops_access: runnel_server::ops::OpsAccess,
}

impl OrderingServerHandle {
    /// Binds `listen` for `orderer`'s `Ordering` service.
    pub async fn bind(
        orderer: Arc<dyn Orderer>,
        listen: SocketAddr,
        message_bytes_max: usize,
    ) -> Result<OrderingServerHandle, ApiError> {
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|e| ApiError::Bind {
                addr: listen,
                message: e.to_string(),
            })?;
        let local_addr = listener.local_addr().map_err(|e| ApiError::Bind {
            addr: listen,
            message: e.to_string(),
        })?;
        Ok(OrderingServerHandle {
            orderer,
            listener,
            local_addr,
            message_bytes_max,
            peers: None,
            cluster: None,
            consensus: None,
            connections: CONNECTIONS,
            ops_access: runnel_server::ops::OpsAccess::Members,
        })
    }

    /// Who may read the orderer's `/metrics` when it serves the network's peers only
    /// ([`Self::peers_only`]): under [`runnel_server::ops::OpsAccess::Members`] (the default), a
    /// member's certificate of the network over mutual TLS; `401` for others.
    pub fn with_ops_access(mut self, access: runnel_server::ops::OpsAccess) -> Self {
        self.ops_access = access;
        self
    }

    /// Keeps connections within `limits` rather than [`CONNECTIONS`]. Connections that
    /// present a peer's or an orderer's certificate of the network ([`Self::peers_only`])
    /// take the members' room, which no other connection takes.
    pub fn with_connections(mut self, limits: ConnectionLimits) -> Self {
        self.connections = limits;
        self
    }

    /// Serves `cluster` beside the `Ordering` service: this orderer is one of a Raft
    /// cluster, and the others reach it there.
    pub fn with_cluster(mut self, cluster: crate::cluster::ClusterService) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// Serves `consensus` beside the `Ordering` service: this orderer is one of a BFT
    /// cluster, and the others reach it there.
    pub fn with_consensus(mut self, consensus: crate::bft::net::ConsensusService) -> Self {
        self.consensus = Some(consensus);
        self
    }

    /// Serves the `Ordering` service to the network's peers only (and its orderers, which
    /// forward transactions to their cluster's leader): over TLS, each call must come on a
    /// connection whose client certificate is a peer's or an orderer's of `msp` (its own
    /// signing certificate, presented for mutual TLS). Others get `UNAUTHENTICATED` (no
    /// member's certificate) or `PERMISSION_DENIED` (a member that is neither). The
    /// operations routes stay open. Serving without TLS is then refused.
    pub fn peers_only(mut self, msp: Arc<Msp>) -> Self {
        self.peers = Some(msp);
        self
    }

    /// The address bound (with the port chosen, when `listen` asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` completes, over TLS when `tls` is given; open streams end
    /// then.
    pub async fn serve(
        self,
        tls: Option<&TlsConfig>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ApiError> {
        self.serve_with(
            axum::Router::new().fallback(runnel_server::unimplemented),
            tls,
            shutdown,
        )
        .await
    }

    /// [`OrderingServerHandle::serve`], with `others` answering every path that is not
    /// the service's (an orderer process's operations endpoints: [`runnel_server::ops`]).
    pub async fn serve_with(
        self,
        others: axum::Router,
        tls: Option<&TlsConfig>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ApiError> {
        let tls = match (tls, &self.peers) {
            (Some(config), peers) => {
                let mut config = config.clone();
                if let Some(msp) = peers {
                    // Peers present their own certificates: trust the network's CAs, and
                    // ask every client for one (the operations routes need none).
                    config.member_cas = msp.ca_certs();
                    if config.client_auth == ClientAuth::None {
                        config.client_auth = ClientAuth::Optional;
                    }
                }
                Some((
                    config
                        .server_config()
                        .map_err(|e| ApiError::Serve(e.to_string()))?,
                    config.handshake_timeout,
                ))
            }
            (None, Some(_)) => {
                return Err(ApiError::Serve(
                    "the ordering service serves the network's peers over mutual TLS only: \
                     enable TLS ([api.tls] enabled = true), or open it to all \
                     ([api] read_access = \"open\", a dev network only)"
                        .into(),
                ));
            }
            (None, None) => None,
        };
        let (stop, stopping) = watch::channel(false);
        let broadcasts = broadcast_batcher(&self.orderer)
            .map_err(|e| ApiError::Serve(format!("starting the broadcast thread: {e}")))?;
        let service = OrderingService {
            orderer: self.orderer,
            broadcasts: Arc::new(broadcasts),
            stopping: stopping.clone(),
            streams: Arc::new(tokio::sync::Semaphore::new(STREAMS_MAX)),
        };
        let signal = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        // Built on an empty axum router, which has no fallback of its own: `others` brings it.
        let mut routes = Routes::from(axum::Router::new()).add_service(
            OrderingServer::new(service)
                .max_decoding_message_size(
                    self.message_bytes_max
                        .saturating_add(runnel_server::limits::TRANSACTION_ENVELOPE_BYTES),
                )
                .max_encoding_message_size(self.message_bytes_max),
        );
        if let Some(cluster) = self.cluster {
            let bytes = self.message_bytes_max + crate::cluster::STEP_HEADROOM_BYTES;
            routes = routes.add_service(
                cluster
                    .serve(stopping.clone())
                    .max_decoding_message_size(bytes)
                    .max_encoding_message_size(bytes),
            );
        }
        if let Some(consensus) = self.consensus {
            routes = routes.add_service(consensus.serve(stopping.clone()));
        }
        let limits = Arc::new(runnel_server::limits::MethodLimits::ordering(
            self.message_bytes_max,
        ));
        let mut services = routes
            .into_axum_router()
            .layer(axum::middleware::from_fn_with_state(
                limits,
                runnel_server::limits::check,
            ));
        if let Some(msp) = self.peers.clone() {
            services = services.layer(axum::middleware::from_fn_with_state(msp, peers_check));
        }
        let connections = Connections::new(self.connections);
        let others = match (&self.peers, self.ops_access) {
            (Some(msp), runnel_server::ops::OpsAccess::Members) => {
                let members: Arc<dyn runnel_server::ops::Member> = msp.clone();
                others.layer(axum::middleware::from_fn_with_state(
                    members,
                    runnel_server::ops::members_only,
                ))
            }
            _ => others,
        };
        let everything = services
            .merge(others)
            .layer(axum::middleware::from_fn_with_state(
                connections.clone(),
                runnel_server::connections::track,
            ));
        let router = tonic::transport::Server::builder()
            .accept_http1(true)
            .http2_keepalive_interval(Some(runnel_server::connections::KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(runnel_server::connections::KEEPALIVE_TIMEOUT))
            .add_routes(Routes::from(everything));
        match tls {
            Some((config, handshake_timeout)) => {
                let incoming = runnel_server::tls::incoming(
                    self.listener,
                    connections,
                    self.peers.clone(),
                    config,
                    handshake_timeout,
                );
                router.serve_with_incoming_shutdown(incoming, signal).await
            }
            None => {
                let incoming =
                    runnel_server::connections::accept(self.listener, connections, false);
                router.serve_with_incoming_shutdown(incoming, signal).await
            }
        }
        .map_err(|e| ApiError::Serve(e.to_string()))
    }
}

/// The middleware of [`OrderingServerHandle::peers_only`]: a call goes on only from a
/// connection whose TLS client certificate is a peer's of the network.
async fn peers_check(
    axum::extract::State(msp): axum::extract::State<Arc<Msp>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let now_s = runnel_ledger::tx::now_seconds();
    let refusal = match runnel_server::readers::tls_member(&request, &msp, now_s) {
        Some(identity) if matches!(identity.role, Role::Peer | Role::Orderer) => {
            return next.run(request).await;
        }
        Some(identity) => status::error(
            tonic::Code::PermissionDenied,
            "ACCESS_DENIED",
            format_args!(
                "{} is a {}: the ordering service serves the network's peers and orderers only",
                identity.id(),
                identity.role.as_str()
            ),
        ),
        None => status::error(
            tonic::Code::Unauthenticated,
            "IDENTITY_REQUIRED",
            "the ordering service serves the network's peers only: connect over mutual TLS \
             with a peer's certificate of the network",
        ),
    };
    status::response(refusal)
}
