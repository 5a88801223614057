//! [`RemoteOrderer`]: an orderer in another process, reached over its `Ordering` service
//! (ordering.proto), behind the same [`Orderer`] trait as the embedded one.
//!
//! Calls block their thread, as the trait's do; the gRPC work runs on a small runtime of
//! the orderer's own, so callers need none. A delivery reads its stream as a task on that
//! runtime and, when the connection drops or the orderer restarts, reconnects from
//! the first seq and seal it has not delivered yet: the stream a peer sees has no gap
//! and no duplicate across reconnects.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status};

use runnel_ledger::block;
use runnel_ledger::ids::{BlockNumber, Seq, TxId};
use runnel_ledger::orderer::{Delivered, Delivery, OrderError, Ordered, OrderedTx, Orderer};
use runnel_server::limits::{BROADCAST_BATCH_BYTES_MAX, BROADCAST_BATCH_REQUEST_MAX};
use runnel_server::proto::ordering_client::OrderingClient;
use runnel_server::proto::ordering_item::Item;
use runnel_server::proto::{
    BroadcastBatchRequest, BroadcastRequest, BroadcastResponse, HeightsRequest, StreamRequest,
    broadcast_batch_response,
};

/// How often the link to an orderer pings it, and how long it waits for the answer.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(2);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Batches of submits a peer of a BFT cluster has in flight at once.
const SUBMITS_IN_FLIGHT_BFT: usize = 8;

/// Items a delivery reads ahead of its consumer.
const READ_AHEAD: usize = 4096;

/// The longest pause between two attempts to reach the orderer.
const RETRY_MAX: Duration = Duration::from_secs(2);

/// The error names an orderer sends back (see [`OrderError::code`] and the identity
/// codes), kept as they are when they cross the network.
const ORDER_CODES: [&str; 20] = [
    "TOO_LARGE",
    "TOO_MANY_ENDORSEMENTS",
    "NOT_ENDORSED",
    "BAD_ENDORSER_SIGNATURE",
    "SUBMITTER_QUOTA_EXCEEDED",
    "ORDERER_BEHIND",
    "TIMESTAMP_OUT_OF_WINDOW",
    "DUPLICATE_TXID",
    "BAD_PAYLOAD",
    "WRONG_CHANNEL",
    "BAD_CREATOR_SIGNATURE",
    "EXPIRED_CERTIFICATE",
    "REVOKED_CERTIFICATE",
    "ACCESS_DENIED",
    "BAD_CREATOR",
    "LOCKED",
    "CLOSED",
    "LOG_FAILURE",
    "LOG_CORRUPT",
    "ORDERER_UNAVAILABLE",
];

/// The orderer error a status from a remote orderer stands for.
fn from_status(endpoint: &str, status: &Status) -> OrderError {
    let name = status
        .metadata()
        .get(runnel_server::status::ERROR_CODE_HEADER)
        .and_then(|value| value.to_str().ok());
    refusal(endpoint, name, status.code() as i32, status.message())
}

/// The orderer error a refusal names: an error name it sent (`name`), gRPC code and
/// message; an unknown name is the orderer being unavailable.
fn refusal(endpoint: &str, name: Option<&str>, grpc: i32, message: &str) -> OrderError {
    let name = name.and_then(|name| ORDER_CODES.iter().find(|known| **known == name).copied());
    match name {
        Some(name) => {
            let message = message
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(": "))
                .unwrap_or(message);
            OrderError::Remote {
                code: name,
                grpc,
                message: message.to_string(),
            }
        }
        None => OrderError::Unavailable(format!("orderer at {endpoint}: {message} ({grpc})")),
    }
}

/// Heights seen in the streams, for when the orderer cannot be asked.
#[derive(Debug, Default)]
struct Seen {
    height: AtomicU64,
    durable: AtomicU64,
}

/// An orderer in another process, or the orderers of a cluster (see the module doc).
pub struct RemoteOrderer {
    /// Every orderer it may use, the one `current` names first.
    targets: Arc<Targets>,
    /// The orderer in use: calls go there, and the stream reads there, until it fails.
    current: Arc<AtomicUsize>,
    runtime: Option<tokio::runtime::Runtime>,
    seen: Arc<Seen>,
    timeout: Duration,
    /// How it reaches an orderer: TLS and the largest message.
    tls: Option<ClientTlsConfig>,
    message_bytes_max: usize,
    /// How many orderers each submit goes to at once ([`RemoteOrderer::set_fan_out`]);
    /// more than one also has each stream watch for an orderer that withholds it.
    fan_out: Arc<AtomicUsize>,
}

/// The orderers it may use, replaced whole when the network's orderers change
/// ([`RemoteOrderer::set_members`]); each user reads the list as it stands.
#[derive(Default)]
struct Targets(RwLock<Arc<Vec<Target>>>);

impl Targets {
    fn get(&self) -> Arc<Vec<Target>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, targets: Vec<Target>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(targets);
    }

    /// The one `current` names.
    fn in_use(&self, current: &AtomicUsize) -> Target {
        let targets = self.get();
        targets[current.load(AtomicOrdering::Relaxed) % targets.len()].clone()
    }
}

/// One orderer it may use.
#[derive(Clone)]
struct Target {
    endpoint: String,
    /// Its Raft id in the cluster (0: not known).
    raft_id: u64,
    client: OrderingClient<Channel>,
}

impl std::fmt::Debug for RemoteOrderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteOrderer")
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

impl RemoteOrderer {
    /// An orderer at `endpoint` (`http://host:port`, or `https://` with `tls`). Connects
    /// lazily: the orderer may start after its peers. Calls give up after `timeout`.
    pub fn connect(
        endpoint: &str,
        tls: Option<ClientTlsConfig>,
        message_bytes_max: usize,
        timeout: Duration,
    ) -> Result<RemoteOrderer, OrderError> {
        Self::connect_cluster(
            &[(endpoint.to_string(), 0)],
            tls,
            message_bytes_max,
            timeout,
        )
    }

    /// [`RemoteOrderer::connect_cluster`] with the orderers' Raft ids unknown.
    pub fn connect_any(
        endpoints: &[String],
        tls: Option<ClientTlsConfig>,
        message_bytes_max: usize,
        timeout: Duration,
    ) -> Result<RemoteOrderer, OrderError> {
        let members: Vec<(String, u64)> = endpoints.iter().map(|e| (e.clone(), 0)).collect();
        Self::connect_cluster(&members, tls, message_bytes_max, timeout)
    }

    /// The orderers of a cluster, `(endpoint, Raft id)` (0: not known), the first tried
    /// first: a call or the stream that fails on one (unreachable, or unable to order)
    /// moves to the next, and the stream resumes there from the next seq it needs. Every
    /// orderer of a cluster streams the same transactions at the same seqs, so there is no
    /// gap and no duplicate. With more than one, it asks the orderer in use for the leader
    /// every [`LEADER_CHECK`] and moves to the leader when it knows its endpoint: a
    /// follower would forward every transaction to it, and learn of each commit a round
    /// trip after it.
    pub fn connect_cluster(
        members: &[(String, u64)],
        tls: Option<ClientTlsConfig>,
        message_bytes_max: usize,
        timeout: Duration,
    ) -> Result<RemoteOrderer, OrderError> {
        if members.is_empty() {
            return Err(OrderError::Unavailable("no orderer endpoint".into()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("runnel-orderer-client")
            .enable_all()
            .build()
            .map_err(|e| OrderError::Unavailable(format!("starting a runtime: {e}")))?;
        let remote = RemoteOrderer {
            targets: Arc::default(),
            current: Arc::default(),
            runtime: Some(runtime),
            seen: Arc::default(),
            timeout,
            tls,
            message_bytes_max,
            fan_out: Arc::new(AtomicUsize::new(1)),
        };
        let targets = members
            .iter()
            .map(|(endpoint, raft_id)| remote.target(endpoint, *raft_id))
            .collect::<Result<Vec<_>, OrderError>>()?;
        remote.targets.set(targets);
        remote.handle().spawn(follow_leader(
            remote.targets.clone(),
            remote.current.clone(),
            remote.fan_out.clone(),
        ));
        Ok(remote)
    }

    /// A lazy connection to the orderer at `endpoint`.
    fn target(&self, endpoint: &str, raft_id: u64) -> Result<Target, OrderError> {
        let channel = Endpoint::from_shared(endpoint.to_string())
            .map_err(|e| OrderError::Unavailable(format!("orderer endpoint {endpoint:?}: {e}")))?
            .connect_timeout(self.timeout)
            .tcp_nodelay(true)
            // Pings find a connection that died silently (a partition, a host gone), which
            // then fails and is opened again, its stream resumed at another orderer.
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let channel = match (&self.tls, endpoint.starts_with("https://")) {
            (Some(tls), true) => channel.tls_config(tls.clone()).map_err(|e| {
                OrderError::Unavailable(format!("TLS for the orderer at {endpoint}: {e}"))
            })?,
            _ => channel,
        };
        let channel = {
            let _entered = self.handle().enter();
            channel.connect_lazy()
        };
        let client = OrderingClient::new(channel)
            .max_decoding_message_size(self.message_bytes_max)
            .max_encoding_message_size(
                self.message_bytes_max
                    .saturating_add(runnel_server::limits::TRANSACTION_ENVELOPE_BYTES),
            );
        Ok(Target {
            endpoint: endpoint.to_string(),
            raft_id,
            client,
        })
    }

    /// The orderers to use from now on, as [`RemoteOrderer::connect_cluster`] takes them:
    /// what a peer calls when a configuration update adds or removes orderers. The
    /// connections to orderers it keeps are kept, and so is the one in use if it stays;
    /// otherwise the first becomes the one in use, and the stream moves to it at its next
    /// check, from the next seq it needs.
    pub fn set_members(&self, members: &[(String, u64)]) -> Result<(), OrderError> {
        if members.is_empty() {
            return Err(OrderError::Unavailable("no orderer endpoint".into()));
        }
        let old = self.targets.get();
        let in_use = self.endpoint();
        let targets = members
            .iter()
            .map(|(endpoint, raft_id)| {
                match old.iter().find(|target| target.endpoint == *endpoint) {
                    Some(kept) => Ok(Target {
                        raft_id: *raft_id,
                        ..kept.clone()
                    }),
                    None => self.target(endpoint, *raft_id),
                }
            })
            .collect::<Result<Vec<_>, OrderError>>()?;
        let current = targets
            .iter()
            .position(|target| target.endpoint == in_use)
            .unwrap_or(0);
        let endpoints: Vec<&str> = targets.iter().map(|t| t.endpoint.as_str()).collect();
        tracing::info!(?endpoints, "the orderers this node reaches changed");
        self.targets.set(targets);
        self.current.store(current, AtomicOrdering::Relaxed);
        Ok(())
    }

    /// The endpoint of the orderer in use.
    pub fn endpoint(&self) -> String {
        self.targets.in_use(&self.current).endpoint
    }

    /// Every orderer it may use, `(endpoint, Raft id)`, in order.
    pub fn members(&self) -> Vec<(String, u64)> {
        self.targets
            .get()
            .iter()
            .map(|target| (target.endpoint.clone(), target.raft_id))
            .collect()
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives until drop")
            .handle()
    }

    /// Runs the call `make` builds for an orderer's client on the orderer's runtime and
    /// waits for it, up to the timeout; when that orderer is unavailable, tries the next
    /// (each once), and keeps using the one that answered.
    fn call<T: Send + 'static, F>(
        &self,
        make: impl Fn(OrderingClient<Channel>) -> F,
    ) -> Result<T, OrderError>
    where
        F: Future<Output = Result<T, Status>> + Send + 'static,
    {
        let first = self.current.load(AtomicOrdering::Relaxed);
        let mut failed = None;
        let targets = self.targets.get();
        for attempt in 0..targets.len() {
            let index = (first + attempt) % targets.len();
            let target = &targets[index];
            match self.call_on(target, make(target.client.clone())) {
                Err(error) if unavailable(&error) => {
                    tracing::debug!(endpoint = %target.endpoint, %error, "orderer unavailable; trying the next");
                    failed = Some(error);
                }
                answer => {
                    if attempt > 0 {
                        self.current.store(index, AtomicOrdering::Relaxed);
                    }
                    return answer;
                }
            }
        }
        Err(failed.unwrap_or(OrderError::Closed))
    }

    fn call_on<T: Send + 'static>(
        &self,
        target: &Target,
        call: impl Future<Output = Result<T, Status>> + Send + 'static,
    ) -> Result<T, OrderError> {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let timeout = self.timeout;
        self.handle().spawn(async move {
            let answer = tokio::time::timeout(timeout, call).await;
            let _ = send.send(answer);
        });
        match receive.recv() {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(status))) => Err(from_status(&target.endpoint, &status)),
            Ok(Err(_)) => Err(OrderError::Unavailable(format!(
                "orderer at {} did not answer within {:?}",
                target.endpoint, self.timeout
            ))),
            Err(_) => Err(OrderError::Closed),
        }
    }
}

/// How long a stream from an orderer of a BFT cluster may bring nothing while another
/// orderer holds more of it, before the reader leaves it for the next: an orderer may
/// withhold the stream (hold back transactions or seals), not only fail.
pub const WITHHELD_AFTER: Duration = Duration::from_secs(2);

/// How often a peer of a cluster asks the orderer it uses which one leads.
pub const LEADER_CHECK: Duration = Duration::from_millis(500);

/// Asks the orderer in use for the leader every [`LEADER_CHECK`] and makes the leader the
/// one in use when its endpoint is known (calls go there at once; the stream moves at
/// its next check). When the orderer in use knows no leader or does not answer (it may
/// be cut off from the others), the others are asked in turn. Idle while there is one
/// orderer, no Raft id is known, or calls fan out (a BFT cluster has no leader to
/// follow).
async fn follow_leader(all: Arc<Targets>, current: Arc<AtomicUsize>, fan_out: Arc<AtomicUsize>) {
    let mut every = tokio::time::interval(LEADER_CHECK);
    loop {
        every.tick().await;
        let targets = all.get();
        if targets.len() < 2
            || targets.iter().all(|target| target.raft_id == 0)
            || fan_out.load(AtomicOrdering::Relaxed) > 1
        {
            continue;
        }
        let index = current.load(AtomicOrdering::Relaxed) % targets.len();
        let mut leader = leader_seen_by(&targets[index]).await;
        if leader.is_none() {
            for other in (1..targets.len()).map(|k| (index + k) % targets.len()) {
                leader = leader_seen_by(&targets[other]).await;
                if leader.is_some() {
                    break;
                }
            }
        }
        let Some(leader) = leader else {
            continue;
        };
        if targets[index].raft_id == leader {
            continue;
        }
        if let Some(at) = targets.iter().position(|target| target.raft_id == leader) {
            tracing::debug!(endpoint = %targets[at].endpoint, "ordering through the cluster's leader");
            // Unless the list changed meanwhile: the next check looks again.
            if Arc::ptr_eq(&targets, &all.get()) {
                current.store(at, AtomicOrdering::Relaxed);
            }
        }
    }
}

/// The leader `target` knows, if it answers within [`LEADER_CHECK`] and knows one.
async fn leader_seen_by(target: &Target) -> Option<u64> {
    let mut client = target.client.clone();
    let mut request = tonic::Request::new(HeightsRequest {});
    request.set_timeout(LEADER_CHECK);
    let leader = client.heights(request).await.ok()?.into_inner().raft_leader;
    (leader != 0).then_some(leader)
}

/// Whether another orderer of the cluster may do better.
fn unavailable(error: &OrderError) -> bool {
    match error {
        OrderError::Unavailable(_) => true,
        OrderError::Remote { code, .. } => {
            matches!(*code, "ORDERER_UNAVAILABLE" | "LOG_FAILURE" | "CLOSED")
        }
        _ => false,
    }
}

impl Drop for RemoteOrderer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl RemoteOrderer {
    /// Sends each submit to `orderers` orderers at once (the one in use first), taking
    /// each transaction's first place any of them answers: `f + 1` for a Byzantine-fault-
    /// tolerant cluster, so that at least one honest orderer holds every transaction and
    /// one that drops what it is given censors nothing. 1 (the default) for one at a time.
    pub fn set_fan_out(&self, orderers: usize) {
        self.fan_out.store(orderers.max(1), AtomicOrdering::Relaxed);
    }

    /// [`Orderer::submit_batch`]'s batch sent to [`RemoteOrderer::set_fan_out`] orderers
    /// at once: per transaction, the first place answered; else a refusal rather than an
    /// orderer being unavailable.
    fn fanned(
        &self,
        signed_transactions: Vec<Vec<u8>>,
        fan_out: usize,
    ) -> Vec<Result<Ordered, OrderError>> {
        let count = signed_transactions.len();
        let targets = self.targets.get();
        let first = self.current.load(AtomicOrdering::Relaxed);
        let (send, receive) = std::sync::mpsc::channel();
        for i in 0..fan_out.min(targets.len()) {
            let target = targets[(first + i) % targets.len()].clone();
            let request = BroadcastBatchRequest {
                signed_transactions: signed_transactions.clone(),
            };
            let (send, timeout) = (send.clone(), self.timeout);
            self.handle().spawn(async move {
                let mut client = target.client.clone();
                let answer = tokio::time::timeout(timeout, client.broadcast_batch(request)).await;
                let _ = send.send((target.endpoint, answer));
            });
        }
        drop(send);
        let mut answers: Vec<Option<Result<Ordered, OrderError>>> = vec![None; count];
        for (endpoint, answer) in receive {
            let results: Vec<Result<Ordered, OrderError>> = match answer {
                Ok(Ok(response)) if response.get_ref().results.len() == count => response
                    .into_inner()
                    .results
                    .into_iter()
                    .map(|result| self.result(&endpoint, result))
                    .collect(),
                Ok(Ok(_)) => vec![
                    Err(OrderError::Unavailable(format!(
                        "orderer at {endpoint} answered another count of results"
                    )));
                    count
                ],
                Ok(Err(status)) => vec![Err(from_status(&endpoint, &status)); count],
                Err(_) => vec![
                    Err(OrderError::Unavailable(format!(
                        "orderer at {endpoint} did not answer within {:?}",
                        self.timeout
                    )));
                    count
                ],
            };
            for (slot, result) in answers.iter_mut().zip(results) {
                let better = match (&slot, &result) {
                    (Some(Ok(_)), _) => false,
                    (_, Ok(_)) | (None, _) => true,
                    (Some(Err(held)), Err(_)) => unavailable(held),
                };
                if better {
                    *slot = Some(result);
                }
            }
            if answers.iter().all(|answer| matches!(answer, Some(Ok(_)))) {
                break;
            }
        }
        answers
            .into_iter()
            .map(|answer| answer.unwrap_or(Err(OrderError::Closed)))
            .collect()
    }

    /// One result of a `BroadcastBatch` answer from the orderer at `endpoint`.
    fn result(
        &self,
        endpoint: &str,
        result: runnel_server::proto::broadcast_batch_response::Result,
    ) -> Result<Ordered, OrderError> {
        match result.outcome {
            Some(broadcast_batch_response::result::Outcome::Ordered(response)) => {
                self.ordered(response)
            }
            Some(broadcast_batch_response::result::Outcome::Refused(refused)) => Err(refusal(
                endpoint,
                Some(&refused.error_code),
                refused.grpc_code,
                &refused.message,
            )),
            None => Err(OrderError::Unavailable(format!(
                "orderer at {endpoint} answered an empty result"
            ))),
        }
    }

    /// The place the orderer answered for one transaction.
    fn ordered(&self, response: BroadcastResponse) -> Result<Ordered, OrderError> {
        let tx_id = <[u8; 32]>::try_from(response.tx_id.as_slice()).map_err(|_| {
            OrderError::Unavailable(format!(
                "orderer at {} answered a tx id of {} bytes",
                self.endpoint(),
                response.tx_id.len()
            ))
        })?;
        self.seen
            .height
            .fetch_max(response.seq, AtomicOrdering::Relaxed);
        Ok(Ordered {
            seq: Seq(response.seq),
            tx_id: TxId(tx_id),
            received_us: response.received_us,
            ordered_us: response.ordered_us,
        })
    }

    /// One `BroadcastBatch` call for `signed_transactions` (one `Broadcast` for one
    /// alone), each answered in order.
    fn broadcast_batch(
        &self,
        signed_transactions: Vec<Vec<u8>>,
    ) -> Vec<Result<Ordered, OrderError>> {
        let count = signed_transactions.len();
        let fan_out = self.fan_out.load(AtomicOrdering::Relaxed);
        if fan_out > 1 && count > 0 && self.targets.get().len() > 1 {
            return self.fanned(signed_transactions, fan_out);
        }
        if count <= 1 {
            return signed_transactions
                .into_iter()
                .map(|transaction| self.submit(transaction))
                .collect();
        }
        let answer = self.call(|mut client| {
            let signed_transactions = signed_transactions.clone();
            async move {
                client
                    .broadcast_batch(BroadcastBatchRequest {
                        signed_transactions,
                    })
                    .await
                    .map(tonic::Response::into_inner)
            }
        });
        let results = match answer {
            Ok(response) if response.results.len() == count => response.results,
            Ok(response) => {
                let error = OrderError::Unavailable(format!(
                    "orderer at {} answered {} results for {count} transactions",
                    self.endpoint(),
                    response.results.len()
                ));
                return (0..count).map(|_| Err(error.clone())).collect();
            }
            Err(error) => return (0..count).map(|_| Err(error.clone())).collect(),
        };
        let endpoint = self.endpoint();
        results
            .into_iter()
            .map(|result| self.result(&endpoint, result))
            .collect()
    }
}

impl Orderer for RemoteOrderer {
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError> {
        if self.fan_out.load(AtomicOrdering::Relaxed) > 1 {
            return self
                .broadcast_batch(vec![signed_transaction])
                .pop()
                .unwrap_or(Err(OrderError::Closed));
        }
        let response = self.call(|mut client| {
            let signed_transaction = signed_transaction.clone();
            async move {
                client
                    .broadcast(BroadcastRequest { signed_transaction })
                    .await
                    .map(tonic::Response::into_inner)
            }
        })?;
        self.ordered(response)
    }

    /// `BroadcastBatch` calls of at most [`BROADCAST_BATCH_BYTES_MAX`] bytes and
    /// [`BROADCAST_BATCH_REQUEST_MAX`] transactions each, in order; a transaction larger
    /// than a batch's bytes, or alone, goes in a `Broadcast` of its own. So no call is
    /// ever larger than the orderer takes, and one transaction fails only itself.
    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        let mut answers = Vec::with_capacity(signed_transactions.len());
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut bytes = 0;
        for transaction in signed_transactions {
            if transaction.len() > BROADCAST_BATCH_BYTES_MAX {
                answers.extend(self.broadcast_batch(std::mem::take(&mut batch)));
                bytes = 0;
                answers.push(self.submit(transaction));
                continue;
            }
            if bytes + transaction.len() > BROADCAST_BATCH_BYTES_MAX
                || batch.len() == BROADCAST_BATCH_REQUEST_MAX
            {
                answers.extend(self.broadcast_batch(std::mem::take(&mut batch)));
                bytes = 0;
            }
            bytes += transaction.len();
            batch.push(transaction);
        }
        answers.extend(self.broadcast_batch(batch));
        answers
    }

    fn submits_in_batches(&self) -> bool {
        true
    }

    /// With a fan-out (a BFT cluster), each answer waits for a consensus round: several
    /// batches in flight keep the rounds full.
    fn submits_in_flight(&self) -> usize {
        if self.fan_out.load(AtomicOrdering::Relaxed) > 1 {
            SUBMITS_IN_FLIGHT_BFT
        } else {
            1
        }
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        let (send, receive) = crossbeam_channel::bounded(READ_AHEAD);
        let (stop, stopped) = watch::channel(false);
        let (restart, restarts) = watch::channel(Restart::default());
        let source = Arc::new(RwLock::new(self.endpoint()));
        let reader = Reader {
            fan_out: self.fan_out.clone(),
            targets: self.targets.clone(),
            current: self.current.clone(),
            endpoint: self.endpoint(),
            source: source.clone(),
            moved: false,
            seen: self.seen.clone(),
            next_seq: Seq(from.0.max(1)),
            next_block: BlockNumber(next_block.0.max(1)),
            epoch: 0,
            send,
            stopped,
            restarts,
        };
        // Read on the orderer's runtime itself: a thread of its own driving the stream
        // would be woken by the runtime for every message, a thread switch each.
        self.handle().spawn(reader.run());
        Ok(Box::new(RemoteDelivery {
            receive,
            stop,
            restart,
            epoch: 0,
            source,
        }))
    }

    fn height(&self) -> Seq {
        match self.call(|mut client| async move { client.heights(HeightsRequest {}).await }) {
            Ok(heights) => Seq(heights.into_inner().height),
            Err(_) => Seq(self.seen.height.load(AtomicOrdering::Relaxed)),
        }
    }

    fn durable_height(&self) -> Seq {
        match self.call(|mut client| async move { client.heights(HeightsRequest {}).await }) {
            Ok(heights) => Seq(heights.into_inner().durable_height),
            Err(_) => Seq(self.seen.durable.load(AtomicOrdering::Relaxed)),
        }
    }
}

/// What a delivery hands its consumer, tagged with the reading it came from (one per
/// refusal: what an earlier reading queued is dropped).
type Received = (u64, Result<Delivered, OrderError>);

/// A consumer's refusal: read again from `from` (block `next_block`) from another
/// orderer, as reading number `epoch`.
#[derive(Debug, Clone, Copy, Default)]
struct Restart {
    epoch: u64,
    from: Seq,
    next_block: BlockNumber,
}

/// The consumer's end of a remote stream.
struct RemoteDelivery {
    receive: crossbeam_channel::Receiver<Received>,
    stop: watch::Sender<bool>,
    restart: watch::Sender<Restart>,
    /// The reading whose items it takes.
    epoch: u64,
    /// The endpoint the reader reads from now.
    source: Arc<RwLock<String>>,
}

impl Delivery for RemoteDelivery {
    fn next(&mut self, timeout: Duration) -> Result<Option<Delivered>, OrderError> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.receive.recv_timeout(left) {
                Ok((epoch, item)) if epoch == self.epoch => return item.map(Some),
                // Read before a refusal.
                Ok(_) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => return Ok(None),
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(OrderError::Closed);
                }
            }
        }
    }

    fn refuse(&mut self, from: Seq, next_block: BlockNumber, why: &str) -> Result<(), OrderError> {
        tracing::debug!(source = %self.source(), %from, "stream refused: {why}");
        self.epoch += 1;
        let restart = Restart {
            epoch: self.epoch,
            from,
            next_block,
        };
        self.restart.send(restart).map_err(|_| OrderError::Closed)
    }

    fn source(&self) -> String {
        self.source
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for RemoteDelivery {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Reads one stream, reconnecting from where it got to: to the next orderer of the
/// cluster when the one it read from fails.
struct Reader {
    /// The owner's fan-out: more than one, and the orderer in use is left when it
    /// withholds the stream ([`WITHHELD_AFTER`]).
    fan_out: Arc<AtomicUsize>,
    targets: Arc<Targets>,
    current: Arc<AtomicUsize>,
    /// The orderer it reads from now.
    endpoint: String,
    /// The same, for the consumer's logs.
    source: Arc<RwLock<String>>,
    /// Set when it left that orderer for the one now in use (the leader), not for a
    /// failure.
    moved: bool,
    seen: Arc<Seen>,
    next_seq: Seq,
    next_block: BlockNumber,
    /// The reading it is on: 0, then one more per refusal.
    epoch: u64,
    send: crossbeam_channel::Sender<Received>,
    stopped: watch::Receiver<bool>,
    restarts: watch::Receiver<Restart>,
}

impl Reader {
    async fn run(mut self) {
        let mut pause = Duration::from_millis(50);
        loop {
            match self.read_stream().await {
                // The consumer left.
                Ok(()) => return,
                Err(Some(error)) => {
                    self.hand_over(Err(error));
                    return;
                }
                Err(None) if std::mem::take(&mut self.moved) => {
                    // Left for the orderer now in use (the leader): read from it at once.
                    pause = Duration::from_millis(50);
                }
                Err(None) => {
                    // The next orderer, for calls too: this one failed.
                    let count = self.targets.get().len();
                    if count > 1 {
                        let next = (self.current.load(AtomicOrdering::Relaxed) + 1) % count;
                        self.current.store(next, AtomicOrdering::Relaxed);
                        pause = Duration::from_millis(50);
                    }
                    tracing::debug!(endpoint = %self.endpoint, ?pause, "orderer stream lost; reconnecting");
                    let mut stopped = self.stopped.clone();
                    let gone = tokio::select! {
                        _ = tokio::time::sleep(pause) => false,
                        _ = stopped.wait_for(|stop| *stop) => true,
                    };
                    if gone {
                        return;
                    }
                    pause = (pause * 2).min(RETRY_MAX);
                }
            }
        }
    }

    /// Reads the stream from the current position until the consumer leaves (`Ok`), a
    /// stored record is damaged (`Err(Some)`: no retry helps) or the connection or
    /// orderer goes away (`Err(None)`: reconnect).
    async fn read_stream(&mut self) -> Result<(), Option<OrderError>> {
        let target = self.targets.in_use(&self.current);
        self.endpoint = target.endpoint.clone();
        *self.source.write().unwrap_or_else(PoisonError::into_inner) = self.endpoint.clone();
        let mut client = target.client.clone();
        let request = StreamRequest {
            from_seq: self.next_seq.0,
            next_block: self.next_block.0,
        };
        let mut stopped = self.stopped.clone();
        let opened = tokio::select! {
            opened = client.stream(request) => Some(opened),
            _ = stopped.wait_for(|stop| *stop) => None,
        };
        let mut stream = match opened {
            None => return Ok(()),
            Some(Ok(response)) => response.into_inner(),
            Some(Err(status)) => return Err(self.fatal(&status)),
        };
        // Whether the orderer in use changed (the leader found, or the network's orderers
        // changed): the stream follows it.
        let mut check = tokio::time::interval(LEADER_CHECK);
        let mut restarts = self.restarts.clone();
        let mut last_item = std::time::Instant::now();
        loop {
            let message = tokio::select! {
                message = stream.message() => Some(Some(message)),
                _ = stopped.wait_for(|stop| *stop) => None,
                _ = check.tick() => Some(None),
                changed = restarts.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    self.restart();
                    return Err(None);
                }
            };
            let items = match message {
                None => return Ok(()),
                Some(None) => {
                    if self.targets.in_use(&self.current).endpoint != self.endpoint {
                        self.moved = true;
                        return Err(None);
                    }
                    if self.fan_out.load(AtomicOrdering::Relaxed) > 1
                        && last_item.elapsed() >= WITHHELD_AFTER
                        && self.others_ahead().await
                    {
                        tracing::warn!(
                            orderer = %self.endpoint,
                            from_seq = self.next_seq.0,
                            "the orderer withholds the stream (another holds more of it); \
                             reading from the next"
                        );
                        let count = self.targets.get().len();
                        let next = (self.current.load(AtomicOrdering::Relaxed) + 1) % count;
                        self.current.store(next, AtomicOrdering::Relaxed);
                        self.moved = true;
                        return Err(None);
                    }
                    continue;
                }
                Some(Some(Ok(Some(items)))) => items.items,
                Some(Some(Ok(None))) => return Err(None),
                Some(Some(Err(status))) => return Err(self.fatal(&status)),
            };
            last_item = std::time::Instant::now();
            for item in items {
                let delivered = match self.decode(item.item) {
                    Ok(delivered) => delivered,
                    Err(error) => return Err(Some(error)),
                };
                if !self.hand_over(Ok(delivered)) {
                    return Ok(());
                }
            }
        }
    }

    /// Whether another orderer than the one read from holds seqs this reader has not
    /// had yet.
    async fn others_ahead(&self) -> bool {
        let wanted = self.next_seq.0;
        for target in self.targets.get().iter() {
            if target.endpoint == self.endpoint {
                continue;
            }
            let mut client = target.client.clone();
            let mut request = tonic::Request::new(HeightsRequest {});
            request.set_timeout(Duration::from_secs(1));
            if let Ok(Ok(heights)) =
                tokio::time::timeout(Duration::from_secs(1), client.heights(request)).await
                && heights.get_ref().height >= wanted
            {
                return true;
            }
        }
        false
    }

    /// After the consumer refused what this reader read: the next reading starts where
    /// the consumer asked, at the next orderer.
    fn restart(&mut self) {
        let restart = *self.restarts.borrow_and_update();
        self.epoch = restart.epoch;
        self.next_seq = Seq(restart.from.0.max(1));
        self.next_block = BlockNumber(restart.next_block.0.max(1));
        let count = self.targets.get().len();
        if count > 1 {
            let next = (self.current.load(AtomicOrdering::Relaxed) + 1) % count;
            self.current.store(next, AtomicOrdering::Relaxed);
        }
        self.moved = true;
    }

    /// Gives the consumer one item, waiting while its queue is full (off the runtime's
    /// worker, which this runtime has more of when one blocks). False: the consumer left.
    fn hand_over(&self, item: Result<Delivered, OrderError>) -> bool {
        let item = (self.epoch, item);
        match self.send.try_send(item) {
            Ok(()) => true,
            Err(crossbeam_channel::TrySendError::Full(item)) => {
                tokio::task::block_in_place(|| self.send.send(item).is_ok())
            }
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
        }
    }

    /// `Some` when `status` means the stream cannot go on, whoever retries. An orderer of
    /// a cluster that is behind this reader (one catching up after a restart) is not:
    /// another orderer serves it meanwhile.
    fn fatal(&self, status: &Status) -> Option<OrderError> {
        let error = from_status(&self.endpoint, status);
        let behind = matches!(
            error,
            OrderError::Remote {
                code: "ORDERER_BEHIND",
                ..
            }
        );
        match status.code() {
            Code::DataLoss if behind && self.targets.get().len() > 1 => None,
            Code::DataLoss | Code::InvalidArgument => Some(error),
            _ => None,
        }
    }

    /// The item as the trait delivers it, moving the resume position past it.
    fn decode(&mut self, item: Option<Item>) -> Result<Delivered, OrderError> {
        let corrupt = |what: String| {
            OrderError::Corrupt(format!("from the orderer at {}: {what}", self.endpoint))
        };
        match item {
            Some(Item::Transaction(bytes)) => {
                let ordered = OrderedTx::decode(&bytes)?;
                if ordered.seq != self.next_seq {
                    return Err(corrupt(format!(
                        "transaction {} where {} was due",
                        ordered.seq, self.next_seq
                    )));
                }
                self.next_seq = ordered.seq.next();
                self.seen
                    .height
                    .fetch_max(ordered.seq.0, AtomicOrdering::Relaxed);
                Ok(Delivered::Tx(ordered))
            }
            Some(Item::Durable(seq)) => {
                self.seen.durable.fetch_max(seq, AtomicOrdering::Relaxed);
                Ok(Delivered::Durable(Seq(seq)))
            }
            Some(Item::Seal(bytes)) => {
                let sealed =
                    block::decode_signed_seal(&bytes).map_err(|e| corrupt(e.to_string()))?;
                if sealed.seal.number != self.next_block {
                    return Err(corrupt(format!(
                        "seal {} where {} was due",
                        sealed.seal.number.0, self.next_block.0
                    )));
                }
                self.next_block = BlockNumber(sealed.seal.number.0 + 1);
                Ok(Delivered::Seal(sealed))
            }
            None => Err(corrupt("an empty stream item".into())),
        }
    }
}
