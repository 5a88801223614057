//! A lying orderer: a process of its own that holds one organisation's real orderer keys
//! (its node directory, as `runnel init` made it) and speaks for that orderer over the
//! network's own transport, mutual TLS and the `Consensus` and `Ordering` services, as
//! the real one would; but it lies, in one of these ways ([`Lie`]):
//!
//! - **Equivocate**: it takes part in consensus (commonware's Simplex engine, the same
//!   configuration as an honest orderer's) and signs every seal twice, once the seal the
//!   others gather and once another for the same block, with a third "signature" forged
//!   in the name of an honest orderer; then, as the leader of a view, it proposes two
//!   different batches for that view, each to some of the others first.
//! - **Censor**: it takes part honestly, but the batches it proposes as leader leave out
//!   every transaction of one organisation's client. It reports, for each transaction
//!   it left out, how many views later that transaction was finalized.
//! - **Stream**: it serves peers a stream read from the honest orderers, changed once
//!   three blocks went by honestly: on one endpoint the transactions of each block
//!   reordered (or a timestamp moved), on another each seal with its own signature only.
//!
//! The tests start it as the test binary itself (`lying_orderer`, ignored unless
//! [`DIR_VAR`] is set) and read its reports, lines starting with `liar:`, from its
//! output. Nothing of it is in the `runnel` binary.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use commonware_actor::{Feedback, Unreliable};
use commonware_codec::{DecodeExt as _, Encode as _};
use commonware_consensus::simplex::elector::RoundRobin;
use commonware_consensus::simplex::scheme::ed25519::Scheme;
use commonware_consensus::simplex::types::{Activity, Context, Notarize, Proposal, Vote};
use commonware_consensus::simplex::{self, Engine, Floor, ForwardPolicy, Plan, SkipPolicy};
use commonware_consensus::types::{Epoch, ViewDelta};
use commonware_consensus::{Automaton, CertifiableAutomaton, Relay, Reporter};
use commonware_cryptography::Sha256;
use commonware_cryptography::ed25519::{PrivateKey, PublicKey};
use commonware_cryptography::sha256::Digest;
use commonware_p2p::{CheckedSender, LimitedSender, Recipients};
use commonware_parallel::Sequential;
use commonware_runtime::buffer::paged::CacheRef;
use commonware_runtime::{IoBufs, Runner as _, Supervisor as _};
use commonware_utils::channel::fallible::OneshotExt as _;
use commonware_utils::channel::oneshot;
use commonware_utils::ordered::Set;
use prost::Message as _;

use runnel_ledger::block::{Seal, seal_signature, signed_by};
use runnel_ledger::identity::{Msp, NetworkDefinition, NetworkKeys, Role, Signer};
use runnel_ledger::ids::{BlockNumber, Seq, TxId};
use runnel_ledger::orderer::{Delivered, Delivery, OrderError, Ordered, Orderer};
use runnel_ledger::proto::{OrderingBatch, SealSignature, SignedSeal};
use runnel_ledger::tx;
use runnel_node::NodeConfig;
use runnel_orderer::bft::NAMESPACE;
use runnel_orderer::bft::batch::{self, Batch, Held};
use runnel_orderer::bft::net::{self, Blocking, ChannelSender, ConsensusService, Member, Network};
use runnel_orderer::ordering::OrderingServerHandle;
use runnel_orderer::remote::RemoteOrderer;

/// The node directory whose orderer keys the liar holds; unset, the liar does not run.
pub(crate) const DIR_VAR: &str = "RUNNEL_LIAR_DIR";
/// `equivocate`, `censor:<org>` (that organisation's client), or `stream`.
pub(crate) const MODE_VAR: &str = "RUNNEL_LIAR_MODE";
/// For `stream`: the two ports to serve on, `reorder,own-seal`.
pub(crate) const PORTS_VAR: &str = "RUNNEL_LIAR_PORTS";
/// For `stream`: the honest orderers' endpoints, comma-separated.
pub(crate) const UPSTREAM_VAR: &str = "RUNNEL_LIAR_UPSTREAM";

/// Seals the liar lets pass untouched before it lies.
const HONEST_SEALS: u64 = 3;

/// Transactions one proposal of the liar's holds at most.
const PROPOSAL_TXS_MAX: usize = 1_000;

/// What the liar does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Lie {
    Equivocate,
    Censor { org: String },
    Stream,
}

/// Runs the liar its environment describes, until the process is killed.
pub(crate) fn run(dir: &Path) {
    let mode = std::env::var(MODE_VAR).expect("the liar's mode");
    let lie = match mode.split_once(':') {
        Some(("censor", org)) => Lie::Censor { org: org.into() },
        None if mode == "equivocate" => Lie::Equivocate,
        None if mode == "stream" => Lie::Stream,
        _ => panic!("no such lie: {mode}"),
    };
    let keys = Keys::load(dir);
    if lie == Lie::Stream {
        let ports: Vec<u16> = std::env::var(PORTS_VAR)
            .expect("the ports to serve on")
            .split(',')
            .map(|port| port.parse().unwrap())
            .collect();
        let upstream: Vec<String> = std::env::var(UPSTREAM_VAR)
            .expect("the honest orderers")
            .split(',')
            .map(str::to_owned)
            .collect();
        run_stream(&keys, [ports[0], ports[1]], &upstream);
    } else {
        run_consensus(keys, lie);
    }
}

/// A report the test reads.
fn report(line: std::fmt::Arguments<'_>) {
    eprintln!("liar: {line}");
}

/// The orderer identity the liar holds, and its node's settings.
struct Keys {
    dir: PathBuf,
    config: NodeConfig,
    org: String,
    name: String,
    signer: Signer,
    msp: Arc<Msp>,
    definition: NetworkDefinition,
}

impl Keys {
    fn load(dir: &Path) -> Keys {
        let config = NodeConfig::load(&dir.join("runnel.toml")).unwrap();
        let keys = NetworkKeys::load(dir).unwrap();
        let org = config.org();
        let held = keys
            .held()
            .iter()
            .find(|key| key.org == org && key.role == Role::Orderer)
            .expect("an orderer key");
        Keys {
            dir: dir.to_path_buf(),
            org: org.clone(),
            name: held.name.clone(),
            signer: held.signer.clone(),
            msp: Arc::new(keys.msp().unwrap()),
            definition: keys.definition().clone(),
            config,
        }
    }

    /// Mutual TLS as this orderer towards the others, as an honest one reaches them.
    fn client_tls(&self) -> tonic::transport::ClientTlsConfig {
        let own = self.dir.join("identities").join(&self.org);
        let read = |ext: &str| std::fs::read(own.join(format!("{}.{ext}", self.name))).unwrap();
        let mut tls = tonic::transport::ClientTlsConfig::new().identity(
            tonic::transport::Identity::from_pem(read("pem"), read("key")),
        );
        for pem in self.definition.tls_ca_pems() {
            tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
        }
        tls
    }

    /// Serves `orderer`'s `Ordering` service (and `consensus`) on `listen` to the
    /// network's members, over the node's TLS, as an honest orderer serves.
    fn serve(
        &self,
        rt: &tokio::runtime::Runtime,
        orderer: Arc<dyn Orderer>,
        consensus: Option<ConsensusService>,
        listen: SocketAddr,
    ) {
        let bound = rt
            .block_on(OrderingServerHandle::bind(
                orderer,
                listen,
                self.config.api.message_bytes_max,
            ))
            .unwrap();
        let mut server = bound.peers_only(self.msp.clone());
        if let Some(consensus) = consensus {
            server = server.with_consensus(consensus);
        }
        let tls = self.config.tls_config(&self.dir);
        rt.spawn(async move {
            let served = server.serve(tls.as_ref(), std::future::pending()).await;
            report(format_args!("stopped serving: {served:?}"));
        });
    }
}

/// An `Ordering` service that orders nothing: a consensus liar's, for the peers that
/// reach it (they go to another orderer).
struct Mute;

impl Orderer for Mute {
    fn submit(&self, _: Vec<u8>) -> Result<Ordered, OrderError> {
        Err(OrderError::Unavailable(
            "this orderer orders nothing".into(),
        ))
    }

    fn deliver(&self, _: Seq, _: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        Err(OrderError::Unavailable(
            "this orderer streams nothing".into(),
        ))
    }

    fn height(&self) -> Seq {
        Seq(0)
    }

    fn durable_height(&self) -> Seq {
        Seq(0)
    }
}

// ----------------------------------------------------------------------------------------
// Consensus liars

/// What a consensus liar knows and does.
struct Liar {
    lie: Lie,
    network: Arc<Network>,
    msp: Arc<Msp>,
    signer: Signer,
    /// The member that sees the first of two proposals of one view.
    victim: PublicKey,
    /// Transactions gossiped to it, in arrival order, each with whether it is censored.
    mempool: Mutex<Vec<(TxId, Vec<u8>, bool)>>,
    known: Mutex<HashSet<TxId>>,
    /// Transactions in any batch seen, its own or another's.
    included: Mutex<HashSet<TxId>>,
    /// Every batch seen, by digest.
    batches: Mutex<HashMap<Digest, Held>>,
    finalized: Mutex<HashSet<Digest>>,
    /// Censored transactions it left out, with the view it left each out in.
    left_out: Mutex<HashMap<TxId, u64>>,
    /// Its own proposals: digest → (view, transactions, censored ones left out).
    proposed: Mutex<HashMap<Digest, (u64, usize, usize)>>,
    /// The second batch of the view it equivocates in, until sent.
    second: Mutex<Option<Held>>,
    split: AtomicBool,
    /// Blocks whose seal it signed twice.
    seals_lied: AtomicU64,
    sealed: Mutex<HashSet<u64>>,
}

fn run_consensus(keys: Keys, lie: Lie) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let members = Member::of(&keys.definition);
    let own = members
        .iter()
        .find(|member| member.key.as_ref() == keys.signer.public_key().as_slice())
        .expect("the liar's key is a member's")
        .clone();
    let network = Network::new(
        own.key.clone(),
        members.clone(),
        rt.handle(),
        Some(keys.client_tls()),
        keys.config.api.message_bytes_max,
    )
    .unwrap();
    let consensus = ConsensusService::new(network.clone(), keys.msp.clone());
    keys.serve(&rt, Arc::new(Mute), Some(consensus), keys.config.api.listen);
    let participants: Set<PublicKey> =
        Set::from_iter_dedup(members.iter().map(|member| member.key.clone()));
    let victim = participants
        .iter()
        .find(|key| **key != own.key)
        .unwrap()
        .clone();
    report(format_args!(
        "{:?} as {}/{}, the first of two proposals to {}",
        lie,
        keys.org,
        keys.name,
        network.name_of(&victim)
    ));
    let liar = Arc::new(Liar {
        lie,
        network: network.clone(),
        msp: keys.msp.clone(),
        signer: keys.signer.clone(),
        victim,
        mempool: Mutex::default(),
        known: Mutex::default(),
        included: Mutex::default(),
        batches: Mutex::default(),
        finalized: Mutex::default(),
        left_out: Mutex::default(),
        proposed: Mutex::default(),
        second: Mutex::default(),
        split: AtomicBool::new(false),
        seals_lied: AtomicU64::new(0),
        sealed: Mutex::default(),
    });
    // A journal of its own, from nothing: it jumps to the view the others are in.
    let journal = keys.dir.join("liar-journal");
    let _ = std::fs::remove_dir_all(&journal);
    std::fs::create_dir_all(&journal).unwrap();
    let private = PrivateKey::decode(bytes::Bytes::copy_from_slice(&keys.signer.secret())).unwrap();
    let genesis = batch::genesis(&keys.definition.channel);
    let config = commonware_runtime::tokio::Config::new()
        .with_worker_threads(1)
        .with_storage_directory(journal);
    commonware_runtime::tokio::Runner::new(config).start(|context| async move {
        let scheme = Scheme::signer(NAMESPACE, participants, private).unwrap();
        let (votes, votes_in) = network.channel(net::VOTES);
        let certificates = network.channel(net::CERTIFICATES);
        let resolver = network.channel(net::RESOLVER);
        tokio::spawn(liar.clone().read_channels(
            network.channel(net::BATCHES).1,
            network.channel(net::SEALS).1,
            network.channel(net::FETCH).1,
            network.channel(net::MEMPOOL).1,
        ));
        let votes = Votes {
            inner: votes,
            liar: liar.clone(),
            scheme: scheme.clone(),
        };
        let app = App { liar: liar.clone() };
        let config = simplex::Config {
            scheme,
            elector: RoundRobin::<Sha256>::default(),
            blocker: Blocking::new(network.clone()),
            automaton: app.clone(),
            relay: app.clone(),
            reporter: app,
            track_historical_votes: false,
            strategy: Sequential,
            partition: "runnel-bft".into(),
            mailbox_size: nonzero(1024),
            epoch: Epoch::new(0),
            floor: Floor::Genesis(genesis),
            replay_buffer: nonzero(1 << 20),
            write_buffer: nonzero(1 << 20),
            page_cache: CacheRef::new(std::num::NonZeroU16::new(1024).unwrap(), nonzero(10)),
            leader_timeout: Duration::from_secs(1),
            certification_timeout: Duration::from_secs(2),
            timeout_retry: Duration::from_secs(5),
            view_retention: ViewDelta::new(256),
            skip: SkipPolicy::Disabled,
            fetch_timeout: commonware_utils::NZDuration!(Duration::from_secs(1)),
            fetch_retry_delay: Duration::from_millis(100),
            forward: ForwardPolicy::Disabled,
        };
        let engine = Engine::new(context.child("engine"), config);
        let _ = engine
            .start((votes, votes_in), certificates, resolver)
            .await;
    });
}

fn nonzero(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap()
}

impl Liar {
    /// Reads Runnel's own channels: batches and gossiped transactions it keeps, seals it
    /// signs (twice, when it equivocates), fetches it answers.
    async fn read_channels(
        self: Arc<Self>,
        mut batches: net::ChannelReceiver,
        mut seals: net::ChannelReceiver,
        mut fetches: net::ChannelReceiver,
        mut mempool: net::ChannelReceiver,
    ) {
        loop {
            tokio::select! {
                Some((_, message)) = batches.next() => {
                    if let Ok(held) = Batch::decode(message.as_ref()) {
                        self.keep(held);
                    }
                }
                Some((_, message)) = seals.next() => self.seal(message.as_ref()),
                Some((from, message)) = fetches.next() => {
                    let Ok(wanted) = <[u8; 32]>::try_from(message.as_ref()) else { continue };
                    let held = lock(&self.batches).get(&Digest::from(wanted)).cloned();
                    if let Some(held) = held {
                        self.network.send_to(Some(&from), net::BATCHES, held.bytes.to_vec());
                    }
                }
                Some((_, message)) = mempool.next() => self.gossiped(message.as_ref()),
                else => return,
            }
        }
    }

    fn keep(&self, held: Held) {
        lock(&self.included).extend(held.txs.iter().flatten().map(|meta| meta.tx_id));
        lock(&self.batches).insert(held.digest, held);
    }

    fn gossiped(&self, bytes: &[u8]) {
        let Ok(gossip) = OrderingBatch::decode(bytes) else {
            return;
        };
        let mut mempool = lock(&self.mempool);
        let mut known = lock(&self.known);
        for bytes in gossip.transactions {
            let Ok((_, _, proposal)) = tx::decode_transaction(&bytes) else {
                continue;
            };
            let tx_id = tx::tx_id(&proposal);
            if !known.insert(tx_id) {
                continue;
            }
            let censored = match &self.lie {
                Lie::Censor { org } => self
                    .msp
                    .identify(&proposal.creator)
                    .is_ok_and(|creator| creator.org == *org && creator.role == Role::Client),
                _ => false,
            };
            mempool.push((tx_id, bytes, censored));
        }
    }

    /// Signs the seal another orderer sent; when equivocating, signs another seal for
    /// the same block too, and forges the sender's signature over a third.
    fn seal(&self, bytes: &[u8]) {
        let Ok(signed) = SignedSeal::decode(bytes) else {
            return;
        };
        let Ok(seal) = Seal::decode(&signed.seal) else {
            return;
        };
        if !lock(&self.sealed).insert(seal.number.0) {
            return;
        }
        let sign = |seal: Seal| {
            let hash = tx::sha256(&seal.encode());
            signed_by(seal, vec![seal_signature(&self.signer, &hash)]).bytes
        };
        self.network.send_to(None, net::SEALS, sign(seal.clone()));
        if self.lie != Lie::Equivocate || self.split.load(Ordering::Relaxed) {
            return;
        }
        let other = Seal {
            timestamp_ms: seal.timestamp_ms + 1,
            ..seal.clone()
        };
        self.network.send_to(None, net::SEALS, sign(other));
        if let Some(theirs) = signed.signatures.first() {
            let framed = Seal {
                timestamp_ms: seal.timestamp_ms + 2,
                ..seal.clone()
            };
            let forged = signed_by(
                framed,
                vec![SealSignature {
                    orderer: theirs.orderer.clone(),
                    signature: vec![7; 64],
                }],
            );
            self.network.send_to(None, net::SEALS, forged.bytes);
        }
        let lied = self.seals_lied.fetch_add(1, Ordering::Relaxed) + 1;
        report(format_args!(
            "signed two seals for block {}, and forged a third ({lied} blocks)",
            seal.number.0
        ));
    }

    /// Its proposal for `view` on `parent`: what was gossiped and is in no batch seen,
    /// less what it censors.
    fn propose(&self, view: u64, parent: (u64, Digest)) -> Digest {
        let included = lock(&self.included).clone();
        let mut transactions = Vec::new();
        let mut left_out = Vec::new();
        for (tx_id, bytes, censored) in lock(&self.mempool).iter() {
            if included.contains(tx_id) || transactions.len() >= PROPOSAL_TXS_MAX {
                continue;
            }
            if *censored {
                left_out.push(*tx_id);
            } else {
                transactions.push(bytes.clone());
            }
        }
        let parent_ms = lock(&self.batches)
            .get(&parent.1)
            .map_or(0, |held| held.batch.timestamp_ms);
        let batch = Batch {
            view,
            parent_view: parent.0,
            parent: parent.1,
            timestamp_ms: tx::now_ms().max(parent_ms),
            transactions,
        };
        if self.lie == Lie::Equivocate
            && self.seals_lied.load(Ordering::Relaxed) >= HONEST_SEALS
            && !self.split.swap(true, Ordering::Relaxed)
        {
            let second = Batch {
                timestamp_ms: batch.timestamp_ms + 1,
                ..batch.clone()
            }
            .seal();
            report(format_args!("two proposals for view {view}"));
            *lock(&self.second) = Some(second);
        }
        let held = batch.seal();
        let digest = held.digest;
        lock(&self.proposed).insert(
            digest,
            (view, held.batch.transactions.len(), left_out.len()),
        );
        {
            let mut censored = lock(&self.left_out);
            for tx_id in left_out {
                censored.entry(tx_id).or_insert(view);
            }
        }
        self.keep(held);
        digest
    }

    /// A finalization of `digest`: reports its own proposals that were finalized and,
    /// for each censored transaction it left out, the views until it was finalized.
    fn finalized(&self, digest: Digest) {
        let mut at = digest;
        loop {
            if !lock(&self.finalized).insert(at) {
                return;
            }
            let Some(held) = lock(&self.batches).get(&at).cloned() else {
                return;
            };
            if let Some((view, count, left_out)) = lock(&self.proposed).get(&at) {
                report(format_args!(
                    "a proposal of mine finalized: view {view}, {count} transactions, \
                     {left_out} censored left out"
                ));
            }
            let mut censored = lock(&self.left_out);
            for meta in held.txs.iter().flatten() {
                if let Some(view) = censored.remove(&meta.tx_id) {
                    report(format_args!(
                        "censored {} finalized {} views after I left it out",
                        meta.tx_id.to_hex(),
                        held.batch.view.saturating_sub(view)
                    ));
                }
            }
            at = held.batch.parent;
        }
    }
}

/// The engine's view of the liar.
#[derive(Clone)]
struct App {
    liar: Arc<Liar>,
}

impl Automaton for App {
    type Context = Context<Digest, PublicKey>;
    type Digest = Digest;

    async fn propose(&mut self, context: Self::Context) -> oneshot::Receiver<Digest> {
        let (answer, answered) = oneshot::channel();
        let view = context.round.view().get();
        let parent = (context.parent.0.get(), context.parent.1);
        answer.send_lossy(self.liar.propose(view, parent));
        answered
    }

    /// Votes for whatever it is asked about.
    async fn verify(&mut self, _: Self::Context, _: Digest) -> oneshot::Receiver<bool> {
        let (answer, answered) = oneshot::channel();
        answer.send_lossy(true);
        answered
    }
}

impl CertifiableAutomaton for App {}

impl Relay for App {
    type Digest = Digest;
    type PublicKey = PublicKey;
    type Plan = Plan<PublicKey>;

    /// Its own batch, to everyone; when it proposes twice in this view, to the victim
    /// only (the others get the second first).
    fn broadcast(&mut self, payload: Digest, _: Plan<PublicKey>) -> Feedback {
        let Some(held) = lock(&self.liar.batches).get(&payload).cloned() else {
            return Feedback::Ok;
        };
        let network = &self.liar.network;
        if lock(&self.liar.second).is_some() {
            network.send_to(Some(&self.liar.victim), net::BATCHES, held.bytes.to_vec());
        } else {
            network.send_to(None, net::BATCHES, held.bytes.to_vec());
        }
        Feedback::Ok
    }
}

impl Reporter for App {
    type Activity = Activity<Scheme, Digest>;

    fn report(&mut self, activity: Self::Activity) -> Feedback {
        if let Activity::Finalization(finalization) = activity {
            self.liar.finalized(finalization.proposal.payload);
        }
        Feedback::Ok
    }
}

/// The engine's votes channel, through which the liar sends a second proposal.
#[derive(Clone)]
struct Votes {
    inner: ChannelSender,
    liar: Arc<Liar>,
    scheme: Scheme,
}

/// A vote on its way.
struct VoteOut {
    inner: net::Checked,
    liar: Arc<Liar>,
    scheme: Scheme,
}

impl LimitedSender for Votes {
    type PublicKey = PublicKey;
    type Checked<'a> = VoteOut;

    fn check(&mut self, recipients: Recipients<PublicKey>) -> Result<VoteOut, SystemTime> {
        Ok(VoteOut {
            inner: self.inner.check(recipients)?,
            liar: self.liar.clone(),
            scheme: self.scheme.clone(),
        })
    }
}

impl CheckedSender for VoteOut {
    type PublicKey = PublicKey;

    fn recipients(&self) -> Vec<PublicKey> {
        self.inner.recipients()
    }

    /// The leader's notarize of the view it proposes twice in: the victim gets the
    /// first proposal, the others the second, each then the other one.
    fn send(self, message: impl Into<IoBufs> + Send, priority: bool) -> Unreliable<Feedback> {
        let bytes: Vec<u8> = message.into().coalesce().into();
        let second = match Vote::<Scheme, Digest>::decode(bytes::Bytes::copy_from_slice(&bytes)) {
            Ok(Vote::Notarize(notarize)) => lock(&self.liar.second)
                .take_if(|held| held.batch.view == notarize.proposal.round.view().get())
                .map(|held| (notarize, held)),
            _ => None,
        };
        let Some((first, held)) = second else {
            return self.inner.send(bytes, priority);
        };
        let proposal = Proposal::new(first.proposal.round, first.proposal.parent, held.digest);
        let other = Notarize::sign(&self.scheme, proposal).unwrap();
        let other = Vote::<Scheme, Digest>::Notarize(other).encode().to_vec();
        let network = self.liar.network.clone();
        let victim = self.liar.victim.clone();
        let others: Vec<PublicKey> = self
            .inner
            .recipients()
            .into_iter()
            .filter(|key| *key != victim)
            .collect();
        // Both at once, each side's first its own: a notarize that came a view late would
        // go unheard (the others keep no votes of views past).
        for key in &others {
            network.send_to(Some(key), net::BATCHES, held.bytes.to_vec());
            network.send_to(Some(key), net::VOTES, other.clone());
            network.send_to(Some(key), net::VOTES, bytes.clone());
        }
        network.send_to(Some(&victim), net::VOTES, bytes);
        network.send_to(Some(&victim), net::BATCHES, held.bytes.to_vec());
        network.send_to(Some(&victim), net::VOTES, other);
        report(format_args!(
            "sent both proposals of view {} to everyone",
            held.batch.view
        ));
        Unreliable::new(Feedback::Ok)
    }
}

// ----------------------------------------------------------------------------------------
// Stream liars

/// How a stream liar changes what it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamLie {
    /// Each block's transactions reordered (one alone: its timestamp moved).
    Reorder,
    /// Each seal carrying its own signature only.
    OwnSeal,
}

fn run_stream(keys: &Keys, ports: [u16; 2], upstream: &[String]) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (port, lie) in ports
        .into_iter()
        .zip([StreamLie::Reorder, StreamLie::OwnSeal])
    {
        let upstream = RemoteOrderer::connect_any(
            upstream,
            Some(keys.client_tls()),
            keys.config.api.message_bytes_max,
            Duration::from_secs(10),
        )
        .unwrap();
        let liar = Arc::new(LyingStream {
            upstream,
            lie,
            signer: keys.signer.clone(),
            passed: Arc::default(),
        });
        keys.serve(&rt, liar, None, SocketAddr::from(([127, 0, 0, 1], port)));
        report(format_args!("{lie:?} on port {port}"));
    }
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// An orderer that passes on the honest orderers' stream, changed after
/// [`HONEST_SEALS`] seals, and orders nothing.
struct LyingStream {
    upstream: RemoteOrderer,
    lie: StreamLie,
    signer: Signer,
    /// Seals passed on untouched.
    passed: Arc<AtomicU64>,
}

impl Orderer for LyingStream {
    /// Drops what it is given: a peer submits to `f + 1` orderers, and another one
    /// orders it.
    fn submit(&self, _: Vec<u8>) -> Result<Ordered, OrderError> {
        Err(OrderError::Unavailable(
            "this orderer orders nothing".into(),
        ))
    }

    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError> {
        Ok(Box::new(LyingDelivery {
            inner: self.upstream.deliver(from, next_block)?,
            lie: self.lie,
            signer: self.signer.clone(),
            passed: self.passed.clone(),
            block: Vec::new(),
            ready: std::collections::VecDeque::new(),
        }))
    }

    fn height(&self) -> Seq {
        self.upstream.height()
    }

    fn durable_height(&self) -> Seq {
        self.upstream.durable_height()
    }
}

/// One peer's stream from a [`LyingStream`]: each block held until its seal, then
/// passed on, changed once enough went by.
struct LyingDelivery {
    inner: Box<dyn Delivery>,
    lie: StreamLie,
    signer: Signer,
    passed: Arc<AtomicU64>,
    block: Vec<Delivered>,
    ready: std::collections::VecDeque<Delivered>,
}

impl Delivery for LyingDelivery {
    fn next(&mut self, timeout: Duration) -> Result<Option<Delivered>, OrderError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(item) = self.ready.pop_front() {
                return Ok(Some(item));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(item) = self.inner.next(left)? else {
                return Ok(None);
            };
            let Delivered::Seal(sealed) = item else {
                self.block.push(item);
                continue;
            };
            let mut block = std::mem::take(&mut self.block);
            let number = sealed.seal.number.0;
            let lie = self.passed.load(Ordering::Relaxed) >= HONEST_SEALS;
            let sealed = match (lie, self.lie) {
                (false, _) => {
                    self.passed.fetch_add(1, Ordering::Relaxed);
                    sealed
                }
                (true, StreamLie::Reorder) => {
                    reorder(&mut block);
                    report(format_args!("sent block {number} reordered"));
                    sealed
                }
                (true, StreamLie::OwnSeal) => {
                    let own = seal_signature(&self.signer, &sealed.hash);
                    report(format_args!("sent seal {number} with my signature only"));
                    signed_by(sealed.seal, vec![own])
                }
            };
            self.ready.extend(block);
            self.ready.push_back(Delivered::Seal(sealed));
        }
    }
}

/// Swaps the block's first two transactions' bytes (their seqs and timestamps stay);
/// a block of one gets its timestamp moved.
fn reorder(block: &mut [Delivered]) {
    let mut txs: Vec<&mut runnel_ledger::orderer::OrderedTx> = block
        .iter_mut()
        .filter_map(|item| match item {
            Delivered::Tx(ordered) => Some(ordered),
            _ => None,
        })
        .collect();
    match txs.as_mut_slice() {
        [first, second, ..] => std::mem::swap(&mut first.transaction, &mut second.transaction),
        [only] => only.timestamp_ms += 1,
        [] => {}
    }
}
