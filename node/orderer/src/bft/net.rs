//! The BFT cluster's network over Runnel's own transport: the `Consensus` gRPC service
//! (cluster.proto), one long-lived stream per pair of orderers over mutual TLS, carrying
//! the consensus engine's channels and Runnel's own.
//!
//! To the engine it is commonware's p2p interface ([`ChannelSender`], [`ChannelReceiver`],
//! [`Blocking`]). A caller is the orderer whose certificate it presented, checked through
//! the MSP and named by the definition in force with the consensus key it holds: it can
//! only ever speak for itself. What it sends is bounded before anything reads it (the
//! request's size by gRPC, its count and channel here), and each orderer has its own share
//! of every channel's queue: one flooding orderer fills only its share, and drops only
//! its own messages. The engine decodes its messages itself (commonware's codec is written
//! for hostile input: every length bounded by its configuration); Runnel's own channels
//! are decoded by prost with Runnel's bounds ([`super::app`]).
//!
//! Sending never blocks: a message for an orderer whose outbox is full is dropped, as a
//! lost packet would be; the engine repeats what matters (votes, certificates, repair).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use commonware_actor::{Feedback, Unreliable};
use commonware_codec::DecodeExt as _;
use commonware_cryptography::ed25519::PublicKey;
use commonware_p2p::{CheckedSender, LimitedSender, Receiver, Recipients};
use commonware_runtime::{IoBuf, IoBufs};
use commonware_utils::channel::ring;
use commonware_utils::ordered::Set;
use tokio::sync::{mpsc, watch};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Response, Status};

use runnel_ledger::identity::{Msp, NetworkDefinition, Role};
use runnel_server::proto::consensus_client::ConsensusClient;
use runnel_server::proto::consensus_server::{Consensus, ConsensusServer};
use runnel_server::proto::{ConsensusMessage, ConsensusRequest, ConsensusResponse};
use runnel_server::status;

/// The engine's votes.
pub const VOTES: u32 = 0;
/// The engine's certificates.
pub const CERTIFICATES: u32 = 1;
/// The engine's repair of missing certificates.
pub const RESOLVER: u32 = 2;
/// Batches a leader proposes, and batches sent to an orderer that asked for them.
pub const BATCHES: u32 = 3;
/// Each orderer's signature over each seal.
pub const SEALS: u32 = 4;
/// Requests for batches an orderer is missing.
pub const FETCH: u32 = 5;
/// Transactions submitted to one orderer, for the others to propose.
pub const MEMPOOL: u32 = 6;
/// How many channels there are.
pub const CHANNELS: usize = 7;

/// Messages one request carries at most.
pub const REQUEST_MESSAGES_MAX: usize = 4096;

/// Messages waiting to go to one orderer; past it they are dropped.
const OUTBOX_MAX: usize = 8192;

/// Messages one channel holds for its reader, shared out equally among the orderers.
const CHANNEL_QUEUE: usize = 16_384;

/// How long a stream to another orderer may go without taking a request before it
/// counts as lost.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a link to another orderer pings it.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(1);

/// Requests queued on one open stream.
const STREAM_QUEUE: usize = 64;

/// What a message may hold beyond the largest transaction: a batch's other fields, or an
/// engine message's.
pub const MESSAGE_HEADROOM_BYTES: usize = 1 << 20;

/// The consensus key of `orderer`'s certificate as the definition names it, decoded.
pub fn consensus_key(hex_key: &str) -> Option<PublicKey> {
    let bytes = hex::decode(hex_key).ok()?;
    PublicKey::decode(bytes::Bytes::from(bytes)).ok()
}

/// A member of the cluster: who it is and where it listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub org: String,
    pub name: String,
    pub endpoint: String,
    pub key: PublicKey,
}

impl Member {
    /// The orderers `definition` names, with their consensus keys; an orderer without a
    /// key that decodes is left out (a BFT definition gives every one a key: checked when
    /// it is read).
    pub fn of(definition: &NetworkDefinition) -> Vec<Member> {
        definition
            .orderers
            .iter()
            .filter_map(|orderer| {
                Some(Member {
                    org: orderer.org.clone(),
                    name: orderer.name.clone(),
                    endpoint: orderer.endpoint.clone(),
                    key: consensus_key(&orderer.key)?,
                })
            })
            .collect()
    }
}

/// The reading end of one channel's queue: each message with its sender.
type Inbound = mpsc::Receiver<(PublicKey, IoBuf)>;

/// One channel's queue for its reader, with each sender's share.
struct Inbox {
    send: mpsc::Sender<(PublicKey, IoBuf)>,
    /// Messages of each sender in the queue now.
    queued: Mutex<HashMap<PublicKey, usize>>,
}

/// This orderer's end of the cluster's network.
pub struct Network {
    own: PublicKey,
    handle: tokio::runtime::Handle,
    tls: Option<ClientTlsConfig>,
    message_bytes_max: usize,
    /// The other members, by key.
    links: RwLock<HashMap<PublicKey, Link>>,
    /// Every member, this one included.
    members: RwLock<Vec<Member>>,
    inboxes: Vec<Inbox>,
    /// Readers, until the engine takes them.
    readers: Mutex<Vec<Option<Inbound>>>,
    blocked: Mutex<Vec<PublicKey>>,
    blocked_watch: Mutex<Vec<ring::Sender<Set<PublicKey>>>>,
    /// Messages sent and received, per channel.
    pub sent: [std::sync::atomic::AtomicU64; CHANNELS],
    pub received: [std::sync::atomic::AtomicU64; CHANNELS],
}

/// The way to one other orderer.
struct Link {
    endpoint: String,
    outbox: mpsc::Sender<ConsensusMessage>,
}

impl Network {
    /// This orderer (`own`) among `members`, linking lazily to the others on the runtime
    /// of `handle`, with `tls` (this orderer's certificate, the network's TLS CAs) for
    /// `https://` endpoints.
    pub fn new(
        own: PublicKey,
        members: Vec<Member>,
        handle: &tokio::runtime::Handle,
        tls: Option<ClientTlsConfig>,
        message_bytes_max: usize,
    ) -> Result<Arc<Network>, String> {
        let mut inboxes = Vec::with_capacity(CHANNELS);
        let mut readers = Vec::with_capacity(CHANNELS);
        for _ in 0..CHANNELS {
            let (send, receive) = mpsc::channel(CHANNEL_QUEUE);
            inboxes.push(Inbox {
                send,
                queued: Mutex::default(),
            });
            readers.push(Some(receive));
        }
        let network = Arc::new(Network {
            own,
            handle: handle.clone(),
            tls,
            message_bytes_max,
            links: RwLock::default(),
            members: RwLock::new(Vec::new()),
            inboxes,
            readers: Mutex::new(readers),
            blocked: Mutex::default(),
            blocked_watch: Mutex::default(),
            sent: Default::default(),
            received: Default::default(),
        });
        network.set_members(members)?;
        Ok(network)
    }

    /// This orderer's key.
    pub fn own(&self) -> &PublicKey {
        &self.own
    }

    /// The members now, this one included.
    pub fn members(&self) -> Vec<Member> {
        self.members
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Links to members new or moved and drops those that left.
    pub fn set_members(&self, members: Vec<Member>) -> Result<(), String> {
        let mut links = self.links.write().unwrap_or_else(PoisonError::into_inner);
        for member in &members {
            if member.key == self.own
                || links
                    .get(&member.key)
                    .is_some_and(|link| link.endpoint == member.endpoint)
            {
                continue;
            }
            links.insert(member.key.clone(), self.link(&member.endpoint)?);
        }
        links.retain(|key, _| members.iter().any(|member| member.key == *key));
        *self.members.write().unwrap_or_else(PoisonError::into_inner) = members;
        Ok(())
    }

    /// The sender and receiver of `channel`, for the engine or this orderer's own use.
    /// The receiver can be taken once.
    pub fn channel(self: &Arc<Self>, channel: u32) -> (ChannelSender, ChannelReceiver) {
        let receive = self.readers.lock().unwrap_or_else(PoisonError::into_inner)[channel as usize]
            .take()
            .expect("each channel's receiver is taken once");
        (
            ChannelSender {
                network: self.clone(),
                channel,
            },
            ChannelReceiver {
                network: self.clone(),
                channel,
                receive,
            },
        )
    }

    /// A new link to the orderer at `endpoint`.
    fn link(&self, endpoint: &str) -> Result<Link, String> {
        let https = endpoint.starts_with("https://");
        let target = Endpoint::from_shared(endpoint.to_string())
            .map_err(|e| format!("{endpoint}: {e}"))?
            .connect_timeout(SEND_TIMEOUT)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(SEND_TIMEOUT)
            .keep_alive_while_idle(true);
        let target = match (&self.tls, https) {
            (Some(tls), true) => target
                .tls_config(tls.clone())
                .map_err(|e| format!("TLS for {endpoint}: {e}"))?,
            _ => target,
        };
        let channel = {
            let _entered = self.handle.enter();
            target.connect_lazy()
        };
        let (outbox, receive) = mpsc::channel(OUTBOX_MAX);
        self.handle.spawn(send_in_batches(
            channel,
            receive,
            self.message_bytes_max + MESSAGE_HEADROOM_BYTES,
        ));
        Ok(Link {
            endpoint: endpoint.to_string(),
            outbox,
        })
    }

    /// Queues `message` for each of `to` on `channel`; false if any was dropped.
    fn send(&self, to: &[PublicKey], channel: u32, message: Vec<u8>) -> bool {
        if let Some(sent) = self.sent.get(channel as usize) {
            sent.fetch_add(to.len() as u64, std::sync::atomic::Ordering::Relaxed);
        }
        let links = self.links.read().unwrap_or_else(PoisonError::into_inner);
        let mut all = true;
        for key in to {
            let Some(link) = links.get(key) else {
                continue;
            };
            let message = ConsensusMessage {
                channel,
                message: message.clone(),
            };
            if link.outbox.try_send(message).is_err() {
                tracing::debug!(to = %link.endpoint, channel, "outbox full; a message dropped");
                all = false;
            }
        }
        all
    }

    /// Sends `message` on `channel` to every other member (`None`) or to `to`.
    pub fn send_to(&self, to: Option<&PublicKey>, channel: u32, message: Vec<u8>) {
        let to = match to {
            Some(key) => vec![key.clone()],
            None => self.others(),
        };
        self.send(&to, channel, message);
    }

    /// Every member but this one.
    fn others(&self) -> Vec<PublicKey> {
        self.links
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The member whose orderer certificate `cert_der` is, if its key is the one the
    /// definition names for it.
    fn member_of(&self, msp: &Msp, cert_der: &[u8]) -> Result<Member, Status> {
        let identity = msp
            .verify(cert_der, runnel_ledger::tx::now_seconds())
            .map_err(|e| {
                status::error(
                    Code::Unauthenticated,
                    "IDENTITY_REQUIRED",
                    format_args!(
                        "the consensus service is for the cluster's orderers: connect over \
                         mutual TLS with an orderer certificate of the network ({e})"
                    ),
                )
            })?;
        let members = self.members.read().unwrap_or_else(PoisonError::into_inner);
        let member = (identity.role == Role::Orderer)
            .then(|| {
                members.iter().find(|member| {
                    member.org == identity.org
                        && member.name == identity.name
                        && member.key.as_ref() == identity.key.as_slice()
                })
            })
            .flatten();
        member.cloned().ok_or_else(|| {
            status::error(
                Code::PermissionDenied,
                "ACCESS_DENIED",
                format_args!(
                    "{} is no orderer of the ordering cluster, or not with this key",
                    identity.id()
                ),
            )
        })
    }

    /// Hands `from`'s messages to their channels' readers, each within `from`'s share.
    fn deliver(&self, from: &Member, messages: Vec<ConsensusMessage>) -> Result<(), Status> {
        if messages.len() > REQUEST_MESSAGES_MAX {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_REQUEST",
                format_args!(
                    "{} messages in one request; at most {REQUEST_MESSAGES_MAX}",
                    messages.len()
                ),
            ));
        }
        if self.is_blocked(&from.key) {
            return Ok(());
        }
        let share = CHANNEL_QUEUE
            / self
                .members
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
                .max(1);
        for message in messages {
            if let Some(received) = self.received.get(message.channel as usize) {
                received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            let Some(inbox) = self.inboxes.get(message.channel as usize) else {
                return Err(status::error(
                    Code::InvalidArgument,
                    "BAD_REQUEST",
                    format_args!("no channel {}", message.channel),
                ));
            };
            {
                let mut queued = inbox.queued.lock().unwrap_or_else(PoisonError::into_inner);
                let count = queued.entry(from.key.clone()).or_default();
                if *count >= share {
                    tracing::debug!(from = %from.name, channel = message.channel, "share of the channel full; a message dropped");
                    continue;
                }
                *count += 1;
            }
            if inbox
                .send
                .try_send((from.key.clone(), IoBuf::from(message.message)))
                .is_err()
            {
                self.taken(message.channel, &from.key);
            }
        }
        Ok(())
    }

    /// A message of `from` left `channel`'s queue.
    fn taken(&self, channel: u32, from: &PublicKey) {
        let mut queued = self.inboxes[channel as usize]
            .queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = queued.get_mut(from) {
            *count = count.saturating_sub(1);
        }
    }

    fn is_blocked(&self, key: &PublicKey) -> bool {
        self.blocked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(key)
    }

    /// The name of the member with `key`, for logs.
    pub fn name_of(&self, key: &PublicKey) -> String {
        self.members
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|member| member.key == *key)
            .map_or_else(
                || format!("{key}"),
                |member| format!("{}/{}", member.org, member.name),
            )
    }
}

/// Sends what queues for one orderer over one `Send` stream at a time, in requests of
/// whatever waited, opening another when the stream fails.
async fn send_in_batches(
    channel: Channel,
    mut outbox: mpsc::Receiver<ConsensusMessage>,
    request_bytes_max: usize,
) {
    let client = ConsensusClient::new(channel)
        .max_decoding_message_size(request_bytes_max)
        .max_encoding_message_size(request_bytes_max);
    let mut stream: Option<mpsc::Sender<ConsensusRequest>> = None;
    while let Some(first) = outbox.recv().await {
        let mut bytes = first.message.len();
        let mut messages = vec![first];
        while messages.len() < REQUEST_MESSAGES_MAX && bytes < request_bytes_max / 2 {
            match outbox.try_recv() {
                Ok(message) => {
                    bytes += message.message.len();
                    messages.push(message);
                }
                Err(_) => break,
            }
        }
        let sender = match stream.take() {
            Some(sender) if !sender.is_closed() => stream.insert(sender),
            _ => stream.insert(open_stream(client.clone())),
        };
        let sent =
            tokio::time::timeout(SEND_TIMEOUT, sender.send(ConsensusRequest { messages })).await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::debug!("a consensus stream to another orderer stopped; opening another");
            stream = None;
        }
    }
}

/// A new `Send` stream through `client`.
fn open_stream(mut client: ConsensusClient<Channel>) -> mpsc::Sender<ConsensusRequest> {
    let (sender, requests) = mpsc::channel(STREAM_QUEUE);
    tokio::spawn(async move {
        let requests = tokio_stream::wrappers::ReceiverStream::new(requests);
        if let Err(error) = client.send(requests).await {
            tracing::debug!(%error, "a consensus stream to another orderer ended");
        }
    });
    sender
}

/// One channel's sending end.
#[derive(Clone)]
pub struct ChannelSender {
    network: Arc<Network>,
    channel: u32,
}

/// A send to recipients already chosen.
pub struct Checked {
    network: Arc<Network>,
    channel: u32,
    to: Vec<PublicKey>,
}

impl LimitedSender for ChannelSender {
    type PublicKey = PublicKey;
    type Checked<'a> = Checked;

    fn check(&mut self, recipients: Recipients<PublicKey>) -> Result<Checked, SystemTime> {
        let to = match recipients {
            Recipients::All => self.network.others(),
            Recipients::Some(keys) => keys
                .into_iter()
                .filter(|key| *key != self.network.own)
                .collect(),
            Recipients::One(key) => vec![key]
                .into_iter()
                .filter(|key| *key != self.network.own)
                .collect(),
        };
        Ok(Checked {
            network: self.network.clone(),
            channel: self.channel,
            to,
        })
    }
}

impl CheckedSender for Checked {
    type PublicKey = PublicKey;

    fn recipients(&self) -> Vec<PublicKey> {
        self.to.clone()
    }

    fn send(self, message: impl Into<IoBufs> + Send, _priority: bool) -> Unreliable<Feedback> {
        let message: Vec<u8> = message.into().coalesce().into();
        let feedback = if self.network.send(&self.to, self.channel, message) {
            Feedback::Ok
        } else {
            Feedback::Backoff
        };
        Unreliable::new(feedback)
    }
}

/// One channel's receiving end.
pub struct ChannelReceiver {
    network: Arc<Network>,
    channel: u32,
    receive: Inbound,
}

impl std::fmt::Debug for ChannelReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelReceiver")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

/// The network stopped: no message will come again.
#[derive(Debug, thiserror::Error)]
#[error("the cluster's network stopped")]
pub struct Closed;

impl ChannelReceiver {
    /// The next message and its sender; `None` once the network stopped.
    pub async fn next(&mut self) -> Option<(PublicKey, IoBuf)> {
        let (from, message) = self.receive.recv().await?;
        self.network.taken(self.channel, &from);
        Some((from, message))
    }
}

impl Receiver for ChannelReceiver {
    type Error = Closed;
    type PublicKey = PublicKey;

    async fn recv(&mut self) -> Result<(PublicKey, IoBuf), Closed> {
        self.next().await.ok_or(Closed)
    }

    fn capacity(&self) -> NonZeroUsize {
        NonZeroUsize::new(CHANNEL_QUEUE).unwrap_or(NonZeroUsize::MIN)
    }
}

/// The engine's way to stop hearing a member that sent what no honest one would: its
/// messages are dropped from then on (until this orderer restarts), and it is logged.
#[derive(Clone)]
pub struct Blocking {
    network: Arc<Network>,
}

impl Blocking {
    pub fn new(network: Arc<Network>) -> Blocking {
        Blocking { network }
    }
}

impl commonware_p2p::Blocker for Blocking {
    type PublicKey = PublicKey;

    fn block(&mut self, peer: PublicKey) -> Feedback {
        tracing::warn!(
            orderer = %self.network.name_of(&peer),
            "the consensus engine caught an orderer sending what no honest one would \
             (an equivocation, a forged or misplaced vote); its messages are dropped \
             until this orderer restarts"
        );
        let set = {
            let mut blocked = self
                .network
                .blocked
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !blocked.contains(&peer) {
                blocked.push(peer);
            }
            Set::from_iter_dedup(blocked.iter().cloned())
        };
        for watch in self
            .network
            .blocked_watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            watch.send_lossy(set.clone());
        }
        Feedback::Ok
    }

    fn blocked(&mut self) -> ring::Receiver<Set<PublicKey>> {
        let (send, receive) = ring::channel(NonZeroUsize::MIN);
        let set = Set::from_iter_dedup(
            self.network
                .blocked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        send.send_lossy(set);
        self.network
            .blocked_watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(send);
        receive
    }
}

/// The `Consensus` service: what the other orderers send this one.
#[derive(Clone)]
pub struct ConsensusService {
    network: Arc<Network>,
    msp: Arc<Msp>,
    stopping: Option<watch::Receiver<bool>>,
}

impl ConsensusService {
    pub fn new(network: Arc<Network>, msp: Arc<Msp>) -> ConsensusService {
        ConsensusService {
            network,
            msp,
            stopping: None,
        }
    }

    /// The service as served, its streams ended once `stopping` turns true.
    pub fn serve(mut self, stopping: watch::Receiver<bool>) -> ConsensusServer<Self> {
        self.stopping = Some(stopping);
        let bytes = self.network.message_bytes_max + MESSAGE_HEADROOM_BYTES;
        ConsensusServer::new(self)
            .max_decoding_message_size(bytes)
            .max_encoding_message_size(bytes)
    }

    fn caller(
        &self,
        certs: Option<&[tonic::transport::CertificateDer<'static>]>,
    ) -> Result<Member, Status> {
        let Some(cert) = certs.and_then(|certs| certs.first()) else {
            return Err(status::error(
                Code::Unauthenticated,
                "IDENTITY_REQUIRED",
                "the consensus service is for the cluster's orderers: connect over mutual TLS \
                 with an orderer certificate of the network",
            ));
        };
        self.network.member_of(&self.msp, cert.as_ref())
    }
}

#[tonic::async_trait]
impl Consensus for ConsensusService {
    async fn send(
        &self,
        request: Request<tonic::Streaming<ConsensusRequest>>,
    ) -> Result<Response<ConsensusResponse>, Status> {
        crate::cluster::serve_stream(
            request,
            self.stopping.clone(),
            |certs| self.caller(certs),
            |from, request: ConsensusRequest| self.network.deliver(&from, request.messages),
        )
        .await?;
        Ok(Response::new(ConsensusResponse {}))
    }
}
