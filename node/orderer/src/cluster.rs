//! The ordering cluster over the network: the `Cluster` service (cluster.proto) through
//! which an orderer takes Raft messages from the others, and [`GrpcTransport`], through
//! which it sends its own and forwards transactions to the leader.
//!
//! Only the cluster's orderers may call: over mutual TLS, each call's client certificate
//! must be the orderer certificate of a member of the cluster (its org and name as the
//! network definition lists them), and every message it carries must come from that
//! member's Raft id and be for this orderer. Messages are decoded with Runnel's own codec
//! and checked ([`crate::raft::wire`]) before Raft sees them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use raft::eraftpb::Message;
use tokio::sync::{mpsc, watch};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Response, Status};

use crate::raft::{ClusterMember, RaftOrderer, Transport, wire};
use crate::remote::RemoteOrderer;
use runnel_ledger::identity::{Msp, NetworkDefinition, Role};
use runnel_ledger::ids::{BlockNumber, Seq};
use runnel_ledger::orderer::{Delivery, OrderError, Ordered, Orderer};
use runnel_server::proto::cluster_client::ClusterClient;
use runnel_server::proto::cluster_server::{Cluster, ClusterServer};
use runnel_server::proto::{StepRequest, StepResponse};
use runnel_server::status;

/// Most Raft messages one `Step` call carries.
pub const STEP_MESSAGES_MAX: usize = 4096;

/// Messages waiting to go to one orderer; past it they are dropped (Raft resends).
const OUTBOX_MAX: usize = 4096;

/// How long a `Step` stream to another orderer may go without taking a request, or
/// without answering a ping, before it counts as lost.
const STEP_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a link to another orderer pings it.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(1);

/// What a `Step` message may hold beyond the largest message the node takes: an append
/// carries a whole entry (the largest transaction admitted) with Raft's fields around it.
pub const STEP_HEADROOM_BYTES: usize = 1 << 20;

/// The members of a cluster, as a caller's certificate names them. Clones share one set,
/// which the transport updates as the cluster changes ([`Transport::members`]).
#[derive(Clone, Debug, Default)]
pub struct Members {
    /// (org, name) → Raft id.
    ids: Arc<RwLock<HashMap<(String, String), u64>>>,
}

impl Members {
    /// Members as `((org, name), raft id)` pairs, the name their orderer certificate's.
    pub fn new(members: impl IntoIterator<Item = ((String, String), u64)>) -> Members {
        Members {
            ids: Arc::new(RwLock::new(members.into_iter().collect())),
        }
    }

    /// The cluster the definition names.
    pub fn of(definition: &NetworkDefinition) -> Members {
        Members::new(named(&ClusterMember::of(definition)))
    }

    /// The Raft id of the member `(org, name)`, if it is one.
    fn id(&self, org: &str, name: &str) -> Option<u64> {
        self.ids
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(org.to_string(), name.to_string()))
            .copied()
    }

    /// Becomes `members`, keeping those it held whose ids are still `voting` (a member
    /// the configuration removed counts until the change is complete).
    fn set(&self, members: &[ClusterMember], voting: &[u64]) {
        let mut ids = self.ids.write().unwrap_or_else(PoisonError::into_inner);
        let mut next: HashMap<(String, String), u64> = named(members).collect();
        for (name, id) in ids.iter() {
            if voting.contains(id) && !next.values().any(|other| other == id) {
                next.insert(name.clone(), *id);
            }
        }
        *ids = next;
    }
}

/// `((org, name), id)` of each member.
fn named(members: &[ClusterMember]) -> impl Iterator<Item = ((String, String), u64)> + '_ {
    members
        .iter()
        .map(|member| ((member.org.clone(), member.name.clone()), member.id))
}

/// The `Cluster` service of one orderer.
pub struct ClusterService {
    orderer: Arc<RaftOrderer>,
    members: Members,
    msp: Arc<Msp>,
    /// True once the server stops: the streams end then.
    stopping: Option<watch::Receiver<bool>>,
}

impl ClusterService {
    /// The service handing `orderer` what `members` send it, callers checked through `msp`.
    pub fn new(orderer: Arc<RaftOrderer>, members: Members, msp: Arc<Msp>) -> ClusterService {
        ClusterService {
            orderer,
            members,
            msp,
            stopping: None,
        }
    }

    /// The service as served, its streams ended once `stopping` turns true.
    pub(crate) fn serve(mut self, stopping: watch::Receiver<bool>) -> ClusterServer<Self> {
        self.stopping = Some(stopping);
        ClusterServer::new(self)
    }

    /// The Raft id of the member whose TLS client certificate is `certs`' first.
    /// Asked again for each request of a stream, so that a member that leaves the
    /// cluster, or whose certificate expires or is revoked, is cut off mid-stream.
    fn caller(
        &self,
        certs: Option<&[tonic::transport::CertificateDer<'static>]>,
    ) -> Result<u64, Status> {
        let identity = certs
            .and_then(|certs| {
                let now_s = runnel_ledger::tx::now_seconds();
                self.msp.verify(certs.first()?.as_ref(), now_s).ok()
            })
            .ok_or_else(|| {
                status::error(
                    Code::Unauthenticated,
                    "IDENTITY_REQUIRED",
                    "the cluster service is for the cluster's orderers: connect over mutual \
                     TLS with an orderer certificate of the network",
                )
            })?;
        let member = (identity.role == Role::Orderer)
            .then(|| self.members.id(&identity.org, &identity.name))
            .flatten();
        member.ok_or_else(|| {
            status::error(
                Code::PermissionDenied,
                "ACCESS_DENIED",
                format_args!("{} is no orderer of the ordering cluster", identity.id()),
            )
        })
    }

    /// Checks one request of `from`'s stream and hands its messages to Raft: all of them,
    /// or none if one is refused.
    fn step_all(
        &self,
        from: u64,
        messages: Vec<runnel_server::proto::RaftMessage>,
    ) -> Result<(), Status> {
        if messages.len() > STEP_MESSAGES_MAX {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_REQUEST",
                format_args!(
                    "{} messages in one request; at most {STEP_MESSAGES_MAX}",
                    messages.len()
                ),
            ));
        }
        let own = self.orderer.id();
        let mut checked = Vec::with_capacity(messages.len());
        for message in messages {
            let message = wire::from_wire(message)
                .map_err(|e| status::error(Code::InvalidArgument, "BAD_REQUEST", e))?;
            if message.from != from || message.to != own {
                return Err(status::error(
                    Code::PermissionDenied,
                    "ACCESS_DENIED",
                    format_args!(
                        "a message from {} to {} on a stream of orderer {from} to orderer {own}",
                        message.from, message.to
                    ),
                ));
            }
            checked.push(message);
        }
        tracing::trace!(from, count = checked.len(), "Raft messages in");
        for message in checked {
            self.orderer.step(message);
        }
        Ok(())
    }
}

/// Serves one long-lived stream of another orderer's requests: `take` each, until the
/// caller ends the stream (`Ok`), a request is refused, or the server stops (`stopping`
/// turns true). The caller is named by `caller` from its certificates, once before the
/// first request (so that a stream of no member's is refused at once) and again for each
/// request: a member removed, or whose certificate expired or was revoked, is cut off
/// mid-stream.
pub(crate) async fn serve_stream<Request, Caller>(
    request: tonic::Request<tonic::Streaming<Request>>,
    stopping: Option<watch::Receiver<bool>>,
    caller: impl Fn(Option<&[tonic::transport::CertificateDer<'static>]>) -> Result<Caller, Status>,
    mut take: impl FnMut(Caller, Request) -> Result<(), Status>,
) -> Result<(), Status> {
    let certs = request.peer_certs();
    let certs = || certs.as_deref().map(Vec::as_slice);
    caller(certs())?;
    let mut requests = request.into_inner();
    let mut stopping = stopping;
    let stopped = async move {
        match &mut stopping {
            Some(stopping) => drop(stopping.wait_for(|stop| *stop).await),
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stopped);
    loop {
        let request = tokio::select! {
            request = requests.message() => request?,
            () = &mut stopped => {
                return Err(Status::unavailable("this orderer is stopping"));
            }
        };
        let Some(request) = request else {
            return Ok(());
        };
        take(caller(certs())?, request)?;
    }
}

#[tonic::async_trait]
impl Cluster for ClusterService {
    async fn step(
        &self,
        request: Request<tonic::Streaming<StepRequest>>,
    ) -> Result<Response<StepResponse>, Status> {
        serve_stream(
            request,
            self.stopping.clone(),
            |certs| self.caller(certs),
            |from, request: StepRequest| self.step_all(from, request.messages),
        )
        .await?;
        Ok(Response::new(StepResponse {}))
    }
}

/// How this orderer reaches the others: a channel to each (mutual TLS as itself), a
/// task each that sends what queued over one `Step` stream, and a
/// [`RemoteOrderer`] each to forward transactions when it is the leader. The links follow
/// the cluster's membership as it changes.
pub struct GrpcTransport {
    own: u64,
    handle: tokio::runtime::Handle,
    tls: Option<ClientTlsConfig>,
    message_bytes_max: usize,
    links: RwLock<HashMap<u64, Link>>,
    /// Who may call this orderer's `Cluster` service, shared with it.
    members: Members,
    /// The sequence of the network configuration its members come from.
    sequence: Mutex<u64>,
}

/// The way to one other orderer.
struct Link {
    endpoint: String,
    outbox: mpsc::Sender<Message>,
    leader: Arc<RemoteOrderer>,
}

impl GrpcTransport {
    /// Connects lazily to every other member of `definition`'s cluster (not `own`), on the
    /// runtime of `handle`, with `tls` (this orderer's certificate, the network's TLS CAs)
    /// when their endpoints are `https://`. `members` (shared with this orderer's
    /// `Cluster` service) follows the cluster from then on.
    pub fn new(
        handle: &tokio::runtime::Handle,
        definition: &NetworkDefinition,
        own: u64,
        tls: Option<ClientTlsConfig>,
        message_bytes_max: usize,
        members: Members,
    ) -> Result<GrpcTransport, OrderError> {
        let transport = GrpcTransport {
            own,
            handle: handle.clone(),
            tls,
            message_bytes_max,
            links: RwLock::default(),
            members,
            sequence: Mutex::new(definition.sequence),
        };
        for member in ClusterMember::of(definition) {
            if member.id != own {
                let link = transport.link(&member.endpoint)?;
                transport
                    .links
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(member.id, link);
            }
        }
        Ok(transport)
    }

    /// A new link to the orderer at `endpoint`.
    fn link(&self, endpoint: &str) -> Result<Link, OrderError> {
        let https = endpoint.starts_with("https://");
        let target = Endpoint::from_shared(endpoint.to_string())
            .map_err(|e| OrderError::Unavailable(format!("{endpoint}: {e}")))?
            .connect_timeout(STEP_TIMEOUT)
            .tcp_nodelay(true)
            // A `Step` stream lives as long as its connection: pings find one that died
            // silently (a partition), which then fails and is opened again.
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(STEP_TIMEOUT)
            .keep_alive_while_idle(true);
        let target = match (&self.tls, https) {
            (Some(tls), true) => target
                .tls_config(tls.clone())
                .map_err(|e| OrderError::Unavailable(format!("TLS for {endpoint}: {e}")))?,
            _ => target,
        };
        let channel = {
            let _entered = self.handle.enter();
            target.connect_lazy()
        };
        let (outbox, receive) = mpsc::channel(OUTBOX_MAX);
        self.handle
            .spawn(send_in_batches(channel, receive, self.message_bytes_max));
        let leader = RemoteOrderer::connect(
            endpoint,
            self.tls.clone().filter(|_| https),
            self.message_bytes_max,
            Duration::from_secs(10),
        )?;
        Ok(Link {
            endpoint: endpoint.to_string(),
            outbox,
            leader: Arc::new(leader),
        })
    }
}

impl Transport for GrpcTransport {
    fn send(&self, messages: Vec<Message>) {
        let links = self.links.read().unwrap_or_else(PoisonError::into_inner);
        for message in messages {
            let to = message.to;
            match links.get(&to) {
                Some(link) => {
                    if link.outbox.try_send(message).is_err() {
                        tracing::debug!(to, "outbox full or closed; a Raft message dropped");
                    }
                }
                None => tracing::debug!(to, "a Raft message for an orderer not in the cluster"),
            }
        }
    }

    fn forward(&self, leader: u64, transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        let remote = self
            .links
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&leader)
            .map(|link| link.leader.clone());
        match remote {
            Some(remote) => remote.submit_batch(transactions),
            None => transactions
                .iter()
                .map(|_| {
                    Err(OrderError::Unavailable(format!(
                        "the leader, orderer {leader}, is not in this orderer's cluster"
                    )))
                })
                .collect(),
        }
    }

    fn deliver_from(
        &self,
        member: u64,
        from: Seq,
        next_block: BlockNumber,
    ) -> Result<Box<dyn Delivery>, OrderError> {
        let remote = self
            .links
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&member)
            .map(|link| link.leader.clone())
            .ok_or_else(|| {
                OrderError::Unavailable(format!(
                    "orderer {member} is not in this orderer's cluster"
                ))
            })?;
        remote.deliver(from, next_block)
    }

    /// Links to members new or moved, drops those that left and no longer vote, and
    /// lets the `Cluster` service hear the new set; a configuration older than the one it
    /// knows changes nothing.
    fn members(&self, sequence: u64, members: &[ClusterMember], voting: &[u64]) {
        {
            let mut known = self.sequence.lock().unwrap_or_else(PoisonError::into_inner);
            if sequence < *known {
                return;
            }
            *known = sequence;
        }
        self.members.set(members, voting);
        let mut links = self.links.write().unwrap_or_else(PoisonError::into_inner);
        for member in members {
            if member.id == self.own
                || links
                    .get(&member.id)
                    .is_some_and(|link| link.endpoint == member.endpoint)
            {
                continue;
            }
            match self.link(&member.endpoint) {
                Ok(link) => {
                    tracing::info!(id = member.id, endpoint = %member.endpoint, "reaching a member of the ordering cluster");
                    links.insert(member.id, link);
                }
                Err(error) => {
                    tracing::warn!(id = member.id, %error, "cannot reach a member of the ordering cluster")
                }
            }
        }
        links.retain(|id, _| members.iter().any(|member| member.id == *id) || voting.contains(id));
    }
}

/// Requests queued on one `Step` stream beyond the one being sent: little, so that
/// what waits gathers in the outbox and goes as one request.
const STREAM_QUEUE: usize = 2;

/// Sends what waits for one orderer over one `Step` stream, each request the messages
/// that gathered while the last one went. A stream that fails, or does not take a
/// request within [`STEP_TIMEOUT`], is dropped with what it held (Raft sends again) and
/// the next messages open another.
async fn send_in_batches(
    channel: Channel,
    mut outbox: mpsc::Receiver<Message>,
    message_bytes_max: usize,
) {
    let client = ClusterClient::new(channel)
        .max_decoding_message_size(message_bytes_max + STEP_HEADROOM_BYTES)
        .max_encoding_message_size(message_bytes_max + STEP_HEADROOM_BYTES);
    let mut stream: Option<mpsc::Sender<StepRequest>> = None;
    while let Some(first) = outbox.recv().await {
        let mut messages = vec![wire::to_wire(&first)];
        while messages.len() < STEP_MESSAGES_MAX {
            match outbox.try_recv() {
                Ok(message) => messages.push(wire::to_wire(&message)),
                Err(_) => break,
            }
        }
        let sender = match stream.take() {
            Some(sender) if !sender.is_closed() => stream.insert(sender),
            _ => stream.insert(open_stream(client.clone())),
        };
        tracing::trace!(count = messages.len(), "Raft messages out");
        let sent = tokio::time::timeout(STEP_TIMEOUT, sender.send(StepRequest { messages })).await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::debug!(
                "a Step stream to another orderer stopped taking requests; opening another"
            );
            stream = None;
        }
    }
}

/// A new `Step` stream through `client`: what is sent on the returned sender goes as its
/// requests; the stream ends when the sender is dropped.
fn open_stream(mut client: ClusterClient<Channel>) -> mpsc::Sender<StepRequest> {
    let (sender, requests) = mpsc::channel(STREAM_QUEUE);
    tokio::spawn(async move {
        let requests = tokio_stream::wrappers::ReceiverStream::new(requests);
        if let Err(error) = client.step(requests).await {
            // Lost: Raft notices and sends again (an append, a heartbeat, a vote).
            tracing::debug!(%error, "a Step stream to another orderer ended");
        }
    });
    sender
}

#[cfg(test)]
mod tests {
    use super::*;
    use runnel_ledger::identity::OrdererNode;

    fn orderer(id: u64) -> OrdererNode {
        OrdererNode {
            name: format!("orderer{id}.Org1"),
            org: "Org1".into(),
            endpoint: format!("http://127.0.0.1:{}", 7050 + id),
            raft_id: id,
            key: String::new(),
        }
    }

    fn definition(sequence: u64, ids: &[u64]) -> NetworkDefinition {
        NetworkDefinition {
            channel: "main".into(),
            sequence,
            orgs: Vec::new(),
            orderers: ids.iter().map(|id| orderer(*id)).collect(),
            ordering: Default::default(),
            lifecycle_policy: String::new(),
            config_policy: String::new(),
        }
    }

    fn heard(members: &Members, ids: &[u64]) -> Vec<u64> {
        ids.iter()
            .copied()
            .filter(|id| members.id("Org1", &format!("orderer{id}.Org1")).is_some())
            .collect()
    }

    #[test]
    fn members_follow_newer_configurations_only_and_keep_those_still_voting() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        // An orderer added at sequence 3 (id 5), joining a cluster whose members then
        // were 1, 4 and 5: it hears them all.
        let joined = definition(3, &[1, 4, 5]);
        let members = Members::of(&joined);
        let transport =
            GrpcTransport::new(runtime.handle(), &joined, 5, None, 1 << 20, members.clone())
                .unwrap();
        assert_eq!(heard(&members, &[1, 2, 3, 4, 5]), vec![1, 4, 5]);
        // Reading its log back from genesis (1, 2, 3) changes nothing: 4, a later member,
        // may lead and must be heard.
        let genesis = ClusterMember::of(&definition(0, &[1, 2, 3]));
        transport.members(0, &genesis, &[1, 2, 3]);
        assert_eq!(heard(&members, &[1, 2, 3, 4, 5]), vec![1, 4, 5]);
        // A later configuration without 1: still heard while it votes, then not.
        let later = ClusterMember::of(&definition(4, &[4, 5]));
        transport.members(4, &later, &[1, 4, 5]);
        assert_eq!(heard(&members, &[1, 2, 3, 4, 5]), vec![1, 4, 5]);
        transport.members(4, &later, &[4, 5]);
        assert_eq!(heard(&members, &[1, 2, 3, 4, 5]), vec![4, 5]);
        let links: Vec<u64> = {
            let mut ids: Vec<u64> = transport.links.read().unwrap().keys().copied().collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(links, vec![4]);
    }
}
