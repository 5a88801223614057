//! The gateway across organisations, Fabric Gateway's way: a peer endorses a proposal as
//! its own organisation, and for each other organisation the policy in force needs (the
//! ledger says which: [`Gathering::needs`]) asks a live peer of that organisation, in
//! parallel, over mutual TLS as itself. It tries the organisation's peers highest height
//! first and moves on to the next when one cannot be reached or times out; checks that
//! each answer is a valid endorsement by a peer of the organisation asked; and adds it to
//! the gathering, which refuses one of another payload than its own peer's
//! ([`runnel_ledger::gather`]: the rules are the same for local and remote endorsers).
//!
//! The other peers come from the network definition (`network.json`). A background task
//! asks each for its heights every [`HEALTH_EVERY`]: that orders the candidates, and is
//! what the node reports about its network.
//!
//! A gateway asks another peer through its `Endorser` service, several proposals a call
//! when they wait at once ([`ask_in_batches`]); the peer endorses them as its own
//! organisation only and never forwards them, so two peers whose definitions disagree
//! cannot pass a proposal back and forth. A `Gateway.Endorse` call marked with
//! [`FORWARDED_HEADER`] is treated the same way.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use tokio::task::JoinSet;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status};

use crate::proto::endorser_client::EndorserClient;
use crate::proto::query_client::QueryClient;
use crate::proto::{
    EndorseBatchRequest, EndorseBatchResponse, EndorseRefusal, GetNetworkInfoRequest,
    SignedProposal, Transaction, endorse_batch_response,
};
use crate::status;
use runnel_ledger::gather::{EndorsementGatherer, Gathering, Offer};
use runnel_ledger::identity::{Msp, Role};
use runnel_ledger::ledger::Ledger;
use runnel_ledger::tx;

pub use runnel_api::headers::FORWARDED_HEADER;

/// How often each other peer is asked for its heights.
pub const HEALTH_EVERY: Duration = Duration::from_secs(2);

/// How this peer reaches the other organisations' peers.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// TLS for `https://` endpoints: the CA certificates to trust (PEM, every
    /// organisation's TLS CA) and this peer's certificate and key (PEM) to present, for
    /// mutual TLS.
    pub tls: Option<PeerTls>,
    /// How long one peer has to endorse (or answer a health check: a quarter of it).
    pub endorse_timeout: Duration,
    /// This peer's name in the network definition, which is not asked: it is itself.
    pub self_name: Option<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            tls: None,
            endorse_timeout: Duration::from_secs(10),
            self_name: None,
        }
    }
}

/// TLS to other peers.
#[derive(Clone, Debug)]
pub struct PeerTls {
    /// Certificates to trust, PEM.
    pub cas: Vec<Vec<u8>>,
    /// This peer's certificate and private key, PEM.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// What this peer last learned of another.
#[derive(Clone, Debug, Default)]
pub struct PeerHealth {
    /// It answered the last check.
    pub alive: bool,
    /// Its committed height then.
    pub height: u64,
    /// When it was last checked.
    pub checked: Option<Instant>,
    /// Why the last check failed.
    pub error: Option<String>,
}

/// Another peer of the network.
struct RemotePeer {
    org: String,
    name: String,
    endpoint: String,
    /// None when the endpoint or TLS settings cannot make a channel (the reason).
    channel: Result<Channel, String>,
    /// Proposals for this peer, sent in batches ([`ask_in_batches`]).
    asks: Option<tokio::sync::mpsc::Sender<Ask>>,
    health: Mutex<PeerHealth>,
}

/// A peer of the network as this node sees it.
#[derive(Clone, Debug)]
pub struct PeerView {
    /// Its organisation.
    pub org: String,
    /// Its name.
    pub name: String,
    /// Its endpoint.
    pub endpoint: String,
    /// What the last check found.
    pub health: PeerHealth,
}

/// The other organisations' peers, and how to ask them to endorse.
pub(crate) struct Peers {
    peers: Vec<RemotePeer>,
    msp: Arc<Msp>,
    timeout: Duration,
}

fn channel(endpoint: &str, tls: Option<&PeerTls>, timeout: Duration) -> Result<Channel, String> {
    let mut builder = Endpoint::from_shared(endpoint.to_string())
        .map_err(|e| format!("bad endpoint {endpoint:?}: {e}"))?
        .connect_timeout(timeout)
        .timeout(timeout);
    if endpoint.starts_with("https://") {
        let tls = tls.ok_or_else(|| format!("{endpoint}: no TLS settings to reach it with"))?;
        let mut config = ClientTlsConfig::new();
        for ca in &tls.cas {
            config = config.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &tls.identity {
            config = config.identity(Identity::from_pem(cert, key));
        }
        builder = builder
            .tls_config(config)
            .map_err(|e| format!("{endpoint}: TLS: {e}"))?;
    }
    Ok(builder.connect_lazy())
}

impl Peers {
    /// Every peer of `ledger`'s network but this one and those of the organisations it
    /// endorses for itself.
    /// Answers are read up to `message_bytes_max`, the node's own bound on a message.
    pub fn new(ledger: &Ledger, config: &GatewayConfig, message_bytes_max: usize) -> Peers {
        let own = ledger.own_orgs();
        let network = ledger
            .reader()
            .network()
            .unwrap_or_else(|_| Arc::new(ledger.reader().network_genesis().clone()));
        let peers = network
            .orgs
            .iter()
            .filter(|org| !own.contains(&org.name))
            .flat_map(|org| {
                org.peers.iter().map(|peer| {
                    let channel =
                        channel(&peer.endpoint, config.tls.as_ref(), config.endorse_timeout);
                    let asks = channel.as_ref().ok().map(|channel| {
                        let (send, receive) = tokio::sync::mpsc::channel(ASKS_PER_PEER_MAX);
                        tokio::spawn(ask_in_batches(
                            channel.clone(),
                            receive,
                            ledger.msp().clone(),
                            config.endorse_timeout,
                            message_bytes_max,
                        ));
                        send
                    });
                    RemotePeer {
                        org: org.name.clone(),
                        name: peer.name.clone(),
                        endpoint: peer.endpoint.clone(),
                        channel,
                        asks,
                        health: Mutex::new(PeerHealth::default()),
                    }
                })
            })
            .filter(|peer| config.self_name.as_deref() != Some(peer.name.as_str()))
            .collect();
        Peers {
            peers,
            msp: ledger.msp().clone(),
            timeout: config.endorse_timeout,
        }
    }

    /// What this node knows of the other peers now.
    pub fn views(&self) -> Vec<PeerView> {
        self.peers
            .iter()
            .map(|peer| PeerView {
                org: peer.org.clone(),
                name: peer.name.clone(),
                endpoint: peer.endpoint.clone(),
                health: lock(&peer.health).clone(),
            })
            .collect()
    }

    /// Asks every peer for its heights, now and every [`HEALTH_EVERY`], until dropped.
    pub async fn watch_health(self: Arc<Self>) {
        let mut every = tokio::time::interval(HEALTH_EVERY);
        loop {
            every.tick().await;
            let mut checks = JoinSet::new();
            for index in 0..self.peers.len() {
                let peers = self.clone();
                checks.spawn(async move { peers.check(index).await });
            }
            while checks.join_next().await.is_some() {}
        }
    }

    async fn check(&self, index: usize) {
        let peer = &self.peers[index];
        let answer = match &peer.channel {
            Ok(channel) => {
                let mut request = tonic::Request::new(GetNetworkInfoRequest {});
                request.set_timeout(self.timeout / 4);
                QueryClient::new(channel.clone())
                    .get_network_info(request)
                    .await
                    .map(|info| info.into_inner().committed_height)
                    .map_err(|status| describe(&status))
            }
            Err(reason) => Err(reason.clone()),
        };
        let mut health = lock(&peer.health);
        health.checked = Some(Instant::now());
        match answer {
            Ok(height) => {
                health.alive = true;
                health.height = height;
                health.error = None;
            }
            Err(error) => {
                health.alive = false;
                health.error = Some(error);
            }
        }
    }

    /// `org`'s peers to ask, best first: alive before not, then highest height.
    fn candidates(&self, org: &str) -> Vec<usize> {
        let mut found: Vec<(usize, bool, u64)> = self
            .peers
            .iter()
            .enumerate()
            .filter(|(_, peer)| peer.org == org)
            .map(|(index, peer)| {
                let health = lock(&peer.health);
                // Never checked yet: as good as alive.
                let alive = health.alive || health.checked.is_none();
                (index, alive, health.height)
            })
            .collect();
        found.sort_by_key(|&(index, alive, height)| (!alive, std::cmp::Reverse(height), index));
        found.into_iter().map(|(index, _, _)| index).collect()
    }

    /// Adds to `gathering` an endorsement from a peer of each organisation it still
    /// needs, asked in parallel, in the network's order whatever order they come back
    /// in; the gathering checks each endorses exactly its payload.
    async fn gather_remote(self: &Arc<Self>, gathering: &mut Gathering) -> Result<(), Status> {
        let mut asks = JoinSet::new();
        for org in gathering.needs().to_vec() {
            let peers = self.clone();
            let signed = gathering.signed().clone();
            asks.spawn(async move {
                let answer = peers.endorse_by(&org, signed).await;
                (org, answer)
            });
        }
        let mut offers = Vec::new();
        while let Some(joined) = asks.join_next().await {
            let (_, answer) = joined.map_err(|e| {
                status::error(
                    Code::Internal,
                    "INTERNAL",
                    format_args!("an endorsement task failed: {e}"),
                )
            })?;
            offers.push(answer?);
        }
        let order = |org: &str| self.peers.iter().position(|peer| peer.org == org);
        offers.sort_by_key(|offer: &Offer| order(&offer.org));
        for offer in offers {
            gathering.add(offer).map_err(|e| status::from_gather(&e))?;
        }
        Ok(())
    }

    /// An endorsement of `signed` by a peer of `org`, checked to be by a peer of `org`,
    /// with the payload it endorsed.
    async fn endorse_by(&self, org: &str, signed: SignedProposal) -> Result<Offer, Status> {
        let candidates = self.candidates(org);
        if candidates.is_empty() {
            return Err(status::org_error(
                Code::Unavailable,
                "ENDORSER_UNAVAILABLE",
                org,
                format_args!("the network definition names no peer of {org} to ask"),
            ));
        }
        let mut failures = Vec::new();
        for index in candidates {
            let peer = &self.peers[index];
            let Some(asks) = &peer.asks else {
                let reason = peer.channel.as_ref().err().cloned().unwrap_or_default();
                failures.push(format!("{}: {reason}", peer.name));
                continue;
            };
            let (answer, answered) = tokio::sync::oneshot::channel();
            let sent = asks.try_send(Ask {
                proposal: signed.clone(),
                answer,
            });
            let answer = match sent {
                Ok(()) => answered
                    .await
                    .unwrap_or_else(|_| Err(Status::unavailable("the batching task ended"))),
                Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => Err(Status::unavailable(
                    format!("{ASKS_PER_PEER_MAX} proposals already wait for it"),
                )),
                Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {
                    Err(Status::unavailable("the batching task ended"))
                }
            };
            match answer {
                Ok(transaction) => {
                    lock(&peer.health).alive = true;
                    let proposal_hash = tx::sha256(&signed.proposal);
                    return self.check_answer(org, peer, &proposal_hash, transaction);
                }
                Err(status) if worth_another_peer(&status) => {
                    let mut health = lock(&peer.health);
                    health.alive = false;
                    health.error = Some(describe(&status));
                    failures.push(format!(
                        "{} ({}): {}",
                        peer.name,
                        peer.endpoint,
                        describe(&status)
                    ));
                }
                Err(status) => {
                    return Err(status::error(
                        status.code(),
                        "ENDORSEMENT_REFUSED",
                        format_args!(
                            "{org}: {} refused to endorse: {}",
                            peer.name,
                            status.message()
                        ),
                    ));
                }
            }
        }
        Err(status::org_error(
            Code::Unavailable,
            "ENDORSER_UNAVAILABLE",
            org,
            format_args!("no peer of {org} endorsed: {}", failures.join("; ")),
        ))
    }

    /// The payload and endorsement of a transaction another peer returned: its first
    /// endorsement, whose certificate must be a peer's of `org` and its signature valid,
    /// with the endorser's public key.
    fn check_answer(
        &self,
        org: &str,
        peer: &RemotePeer,
        proposal_hash: &tx::Hash,
        transaction: Result<Transaction, String>,
    ) -> Result<Offer, Status> {
        let refused = |why: String| {
            status::org_error(
                Code::Unavailable,
                "ENDORSEMENT_REFUSED",
                org,
                format_args!("{} answered {why}", peer.name),
            )
        };
        let transaction = transaction
            .map_err(|e| refused(format!("a transaction that does not decode ({e})")))?;
        // Over the proposal this gateway sent, whatever proposal the answer carries: an
        // endorsement of another would not verify here, nor at the validators.
        let message = tx::endorsement_message(proposal_hash, &tx::sha256(&transaction.payload));
        let now = i64::try_from(tx::now_ms() / 1000).unwrap_or(i64::MAX);
        // The peer was asked for its organisation's endorsement: one. Any more it sends
        // are dropped unread, so a peer cannot make the transaction carry (and every
        // node store) endorsements no policy asked of it.
        let Some(endorsement) = transaction.endorsements.into_iter().next() else {
            return Err(refused("no endorsement".into()));
        };
        let identity = self
            .msp
            .verify(&endorsement.endorser, now)
            .map_err(|e| refused(format!("an endorsement by an unknown identity ({e})")))?;
        if identity.org != org || identity.role != Role::Peer {
            return Err(refused(format!(
                "an endorsement by {} ({}), not by a peer of {org}",
                identity.id(),
                identity.role
            )));
        }
        // Verified as the validator will, and remembered: its stage 1 finds it valid
        // without verifying it again. Usually remembered already: its batch's
        // signatures were verified together ([`ask_in_batches`]).
        let check = runnel_ledger::sig::SigCheck {
            key: identity.verifying_key().to_bytes(),
            message,
            signature: endorsement.signature.clone(),
        };
        if !self.msp.signatures().verify_one(&check) {
            return Err(refused("an endorsement whose signature fails".into()));
        }
        Ok(Offer {
            org: org.to_string(),
            by: peer.name.clone(),
            payload: transaction.payload,
            key: check.key,
            endorsement,
        })
    }
}

/// The other organisations' peers as an endorsement gatherer: each organisation a
/// gathering needs is asked in parallel, on the server's tasks.
#[derive(Clone)]
pub(crate) struct RemotePeers(pub(crate) Arc<Peers>);

impl std::ops::Deref for RemotePeers {
    type Target = Peers;

    fn deref(&self) -> &Peers {
        &self.0
    }
}

impl EndorsementGatherer for RemotePeers {
    type Error = Status;
    type Gathered<'a> =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Status>> + Send + 'a>>;

    fn gather<'a>(&'a self, gathering: &'a mut Gathering) -> Self::Gathered<'a> {
        Box::pin(self.0.gather_remote(gathering))
    }
}

/// Most proposals one `EndorseBatch` call carries, and the most bytes of them a gateway
/// puts in one (a larger proposal goes alone); each proposal weighs its bytes, its
/// signature's and [`ENDORSE_ITEM_OVERHEAD_BYTES`].
pub const ENDORSE_BATCH_MAX: usize = 256;
pub const ENDORSE_BATCH_BYTES_MAX: usize = 4 << 20;

/// What one proposal's encoding adds in a batch, at most: tags and lengths.
const ENDORSE_ITEM_OVERHEAD_BYTES: usize = 16;

/// Most proposals waiting to go to one peer; past it, the gateway asks the
/// organisation's next peer, as for a peer that does not answer.
const ASKS_PER_PEER_MAX: usize = 4096;

/// The `Endorser` service: another organisation's gateway asks this peer to endorse
/// proposals as its own organisation, several at a time.
pub(crate) struct EndorserService {
    shared: Arc<crate::Shared>,
}

impl EndorserService {
    pub fn new(shared: Arc<crate::Shared>) -> Self {
        EndorserService { shared }
    }
}

#[tonic::async_trait]
impl crate::proto::endorser_server::Endorser for EndorserService {
    async fn endorse_batch(
        &self,
        request: tonic::Request<EndorseBatchRequest>,
    ) -> Result<tonic::Response<EndorseBatchResponse>, Status> {
        let proposals = request.into_inner().proposals;
        if proposals.len() > ENDORSE_BATCH_MAX {
            return Err(status::error(
                Code::InvalidArgument,
                "BAD_REQUEST",
                format_args!(
                    "a batch of {} proposals; at most {ENDORSE_BATCH_MAX}",
                    proposals.len()
                ),
            ));
        }
        let own = self.shared.ledger.own_orgs();
        let mut answers = JoinSet::new();
        for (index, proposal) in proposals.into_iter().enumerate() {
            let shared = self.shared.clone();
            let own = own.clone();
            answers.spawn(async move { (index, shared.endorse(proposal, own, true).await) });
        }
        let mut results = vec![endorse_batch_response::Result::default(); answers.len()];
        while let Some(joined) = answers.join_next().await {
            let (index, answer) = joined.map_err(|e| Status::internal(e.to_string()))?;
            results[index].outcome = Some(match answer {
                Ok(prepared) => endorse_batch_response::result::Outcome::Transaction(
                    prepared.transaction.encode_to_vec(),
                ),
                Err(refused) => endorse_batch_response::result::Outcome::Refused(EndorseRefusal {
                    grpc_code: refused.code() as i32,
                    error_code: refused
                        .metadata()
                        .get(status::ERROR_CODE_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string(),
                    message: refused.message().to_string(),
                }),
            });
        }
        Ok(tonic::Response::new(EndorseBatchResponse { results }))
    }
}

/// A proposal waiting to go to another peer in the next batch, and where its answer goes:
/// the transaction the peer endorsed (or why its bytes do not decode), or why it did not.
struct Ask {
    proposal: SignedProposal,
    answer: tokio::sync::oneshot::Sender<Result<Result<Transaction, String>, Status>>,
}

/// Sends what waits for a peer as one `EndorseBatch` call at a time: while a call is out,
/// the next proposals gather, so a busy gateway asks in batches and a quiet one at once.
/// The endorsements a batch brings back are verified together ([`verify_batch`]).
async fn ask_in_batches(
    channel: Channel,
    mut asks: tokio::sync::mpsc::Receiver<Ask>,
    msp: Arc<Msp>,
    timeout: Duration,
    message_bytes_max: usize,
) {
    let mut client = EndorserClient::new(channel)
        .max_decoding_message_size(message_bytes_max)
        .max_encoding_message_size(message_bytes_max);
    let weigh = |ask: &Ask| {
        ask.proposal.proposal.len() + ask.proposal.signature.len() + ENDORSE_ITEM_OVERHEAD_BYTES
    };
    // The ask taken that did not fit the last batch: the next one's first.
    let mut carried = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => match asks.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let mut bytes = weigh(&first);
        let mut batch = vec![first];
        while batch.len() < ENDORSE_BATCH_MAX {
            match asks.try_recv() {
                Ok(ask) if bytes + weigh(&ask) > ENDORSE_BATCH_BYTES_MAX => {
                    carried = Some(ask);
                    break;
                }
                Ok(ask) => {
                    bytes += weigh(&ask);
                    batch.push(ask);
                }
                Err(_) => break,
            }
        }
        let proposals = batch.iter().map(|ask| ask.proposal.clone()).collect();
        let mut request = tonic::Request::new(EndorseBatchRequest { proposals });
        request.set_timeout(timeout);
        match client.endorse_batch(request).await {
            Ok(response) if response.get_ref().results.len() == batch.len() => {
                let answers: Vec<_> = response
                    .into_inner()
                    .results
                    .into_iter()
                    .map(|result| match result.outcome {
                        Some(endorse_batch_response::result::Outcome::Transaction(bytes)) => {
                            Ok(Transaction::decode(bytes.as_slice()).map_err(|e| e.to_string()))
                        }
                        Some(endorse_batch_response::result::Outcome::Refused(refused)) => {
                            Err(status::from_parts(
                                refused.grpc_code,
                                &refused.error_code,
                                &refused.message,
                            ))
                        }
                        None => Err(Status::internal("an empty result")),
                    })
                    .collect();
                verify_batch(&msp, &batch, &answers);
                for (ask, answer) in batch.into_iter().zip(answers) {
                    let _ = ask.answer.send(answer);
                }
            }
            Ok(response) => {
                let count = response.get_ref().results.len();
                for ask in batch {
                    let _ = ask.answer.send(Err(Status::internal(format!(
                        "{count} results for a batch of another size"
                    ))));
                }
            }
            Err(error) => {
                for ask in batch {
                    let _ = ask.answer.send(Err(error.clone()));
                }
            }
        }
    }
}

/// Verifies the signatures of the endorsements a batch brought back in one batch
/// verification, at under half the cost each of one at a time, remembering the valid
/// ones: [`Peers::check_answer`] then finds them valid without verifying again. An
/// endorsement by an identity the network does not know, or whose signature fails, is
/// left for [`Peers::check_answer`] to refuse.
fn verify_batch(msp: &Msp, batch: &[Ask], answers: &[Result<Result<Transaction, String>, Status>]) {
    let now = i64::try_from(tx::now_ms() / 1000).unwrap_or(i64::MAX);
    let checks: Vec<runnel_ledger::sig::SigCheck> = batch
        .iter()
        .zip(answers)
        .filter_map(|(ask, answer)| Some((ask, answer.as_ref().ok()?.as_ref().ok()?)))
        .flat_map(|(ask, transaction)| {
            let message = tx::endorsement_message(
                &tx::sha256(&ask.proposal.proposal),
                &tx::sha256(&transaction.payload),
            );
            // The first only: the one [`Peers::check_answer`] keeps.
            transaction
                .endorsements
                .iter()
                .take(1)
                .filter_map(move |endorsement| {
                    let identity = msp.verify(&endorsement.endorser, now).ok()?;
                    Some(runnel_ledger::sig::SigCheck {
                        key: identity.verifying_key().to_bytes(),
                        message: message.clone(),
                        signature: endorsement.signature.clone(),
                    })
                })
        })
        .collect();
    if checks.len() > 1 {
        msp.signatures().verify_all(&checks);
    }
}

/// Whether a failure is the peer's, not the proposal's: another peer of the same
/// organisation may do better.
fn worth_another_peer(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Unknown
            | Code::Cancelled
            | Code::ResourceExhausted
            | Code::Internal
    )
}

/// A status on one line: its message, or its code and what failed under it.
fn describe(status: &Status) -> String {
    use std::error::Error as _;
    let mut text = if status.message().is_empty() {
        format!("{:?}", status.code())
    } else {
        status.message().to_string()
    };
    let mut source = status.source();
    while let Some(error) = source {
        let next = error.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = error.source();
    }
    text
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
