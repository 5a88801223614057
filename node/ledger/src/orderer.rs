//! Ordering: the service that gives every transaction its place in one stream.
//!
//! An [`Orderer`] checks a submitted transaction's shape and submitter, assigns it the
//! next sequence number, makes it durable and streams it to every subscriber. It never
//! looks at state and never runs a contract: validity is the validator's business.
//!
//! Two delivery modes share one binary ([`OrderingMode`]):
//!
//! - **Streaming** (the default): a transaction is delivered the moment it has its seq.
//!   Blocks are virtual: every `seal_max_txs` transactions or `seal_max_delay`, the
//!   orderer signs a [`crate::block`] seal over the range just ordered, delivered after
//!   its transactions. No transaction ever waits for a seal.
//! - **Blocks**: Fabric's behaviour (`MaxMessageCount`, `BatchTimeout`): transactions are
//!   held until their block is cut and durable, then delivered together with its seal.
//!   It exists to show, side by side, what streaming buys.
//!
//! In streaming mode a transaction may reach a subscriber before it is durable at the
//! orderer; the stream says how far durability has reached with [`Delivered::Durable`]
//! marks, and a peer never makes a transaction durable before the orderer has (else a
//! crash could leave the peer holding a seq the orderer reassigns). Seals are delivered
//! only once durable, since a seal cut again after a crash would differ in its time.
//!
//! The ordered stream itself, an append-only log file with its index, flusher and
//! deliveries, lives in `orderer/stream.rs`, apart from what decides what goes into it.
//! [`SoloOrderer`] is the embedded default: one sequencer and a sealer on top of that log.
//! The ordering services beyond it live in runnel-orderer: an orderer in another process
//! is reached through the same trait (its `RemoteOrderer`), and its Raft cluster
//! implements it too, over the same log kept as a replicated one ([`stream`]).

pub mod gate;
pub mod quota;
pub mod replay;
mod solo;
pub mod stream;

use std::time::Duration;

use std::sync::Arc;

use prost::Message;

use crate::block::SignedSealed;
use crate::identity::{Identity, IdentityError, Msp, Role};
use crate::ids::{BlockNumber, Seq, TxId};
use crate::metrics::Histogram;
use crate::proto;
use crate::records::SyncMode;
use crate::sig;
use crate::tx::{self, Hash};

pub use solo::SoloOrderer;

/// Largest signed transaction accepted, in bytes: a proposal's 8 MiB plus the payload
/// and endorsements it earns.
pub const TRANSACTION_BYTES_MAX: usize = 32 << 20;

/// Bytes of transactions one submitter may have admitted per second, by default
/// ([`OrdererConfig::submitter_bytes_per_s_max`]): several times what one client signs
/// at the node's full throughput, so that only a flood meets it.
pub const SUBMITTER_BYTES_PER_S_MAX: u64 = 64 << 20;

/// Transaction ids an orderer remembers to refuse replays, by default: two windows of
/// 15 minutes at over 2,000 transactions a second, in about 210 MB at most.
pub const REPLAY_IDS_MAX: usize = 1 << 22;

/// When the orderer delivers transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderingMode {
    /// Deliver each transaction at once; seal blocks behind the stream.
    Streaming,
    /// Deliver transactions only in cut, durable blocks (Fabric's way).
    Blocks,
}

/// Most transactions one block holds, whatever `seal_max_txs` says: what a call that
/// lists a block's transactions, or proves one of them, reads at most.
pub const SEAL_TXS_MAX: usize = 10_000;

/// How an orderer orders and seals.
#[derive(Debug, Clone)]
pub struct OrdererConfig {
    /// The channel served; transactions for another are refused.
    pub channel: String,
    /// Roles whose members may submit.
    pub submit_roles: Vec<Role>,
    /// Largest signed transaction accepted, in bytes.
    pub transaction_bytes_max: usize,
    /// Streaming or Fabric-style blocks.
    pub mode: OrderingMode,
    /// A block is cut when it holds this many transactions (`MaxMessageCount`; 1 to
    /// [`SEAL_TXS_MAX`], a value outside taken as the nearest bound).
    pub seal_max_txs: usize,
    /// ... or when its first transaction has waited this long (`BatchTimeout`).
    pub seal_max_delay: Duration,
    /// How each flush makes the log durable (`fdatasync` by default; the ledger sets it
    /// from `LedgerConfig::sync`).
    pub sync: SyncMode,
    /// How far a proposal's timestamp may lie from the orderer's clock
    /// ([`tx::PROPOSAL_WINDOW`]; the network's `proposal_window_s`). A transaction outside
    /// is refused, so the orderer need only remember the ids of proposals still inside
    /// the window to refuse every replay.
    pub proposal_window: Duration,
    /// Most transaction ids the orderer remembers to refuse replays (about 60 bytes
    /// each). Past it, the ids of the oldest proposals are forgotten before their window
    /// ends, and any proposal dated at or before them is refused
    /// (`TIMESTAMP_OUT_OF_WINDOW`), since it could be a replay of one. 0 remembers none
    /// and lets every replay through: for tests of what peers make of replays.
    pub replay_ids_max: usize,
    /// The network's genesis definition, for an orderer that follows the configuration:
    /// it applies each valid `_config` update it orders to its MSP
    /// ([`crate::netconfig::valid_update`]), so its admission trusts what the peers do
    /// from then on (an organisation added can submit, a certificate revoked cannot).
    /// Only for an orderer whose MSP is its own: in a ledger's process, the validator
    /// applies updates to the MSP both share. `None`: the MSP as given, always.
    pub follow_config: Option<crate::identity::NetworkDefinition>,
    /// The bytes of transactions one submitter (by public key) may have admitted per
    /// second, sustained; it may spend up to twice that at once (and one transaction of
    /// any size once its share is full). Past it, its transactions are refused
    /// (`SUBMITTER_QUOTA_EXCEEDED`) until its share refills: what one identity can make
    /// every orderer and peer store is bounded ([`quota`]).
    pub submitter_bytes_per_s_max: u64,
}

impl Default for OrdererConfig {
    fn default() -> Self {
        OrdererConfig {
            channel: "main".to_string(),
            submit_roles: vec![Role::Client, Role::Admin],
            transaction_bytes_max: TRANSACTION_BYTES_MAX,
            mode: OrderingMode::Streaming,
            seal_max_txs: 500,
            seal_max_delay: Duration::from_millis(250),
            sync: SyncMode::Full,
            proposal_window: tx::PROPOSAL_WINDOW,
            replay_ids_max: REPLAY_IDS_MAX,
            follow_config: None,
            submitter_bytes_per_s_max: SUBMITTER_BYTES_PER_S_MAX,
        }
    }
}

impl OrdererConfig {
    /// The transactions a block is cut at: `seal_max_txs` within 1 ..= [`SEAL_TXS_MAX`].
    pub fn seal_txs(&self) -> usize {
        self.seal_max_txs.clamp(1, SEAL_TXS_MAX)
    }

    /// Fabric's block cutting with its sample configuration: 10 transactions or 2 s.
    pub fn fabric_blocks() -> Self {
        OrdererConfig {
            mode: OrderingMode::Blocks,
            seal_max_txs: 10,
            seal_max_delay: Duration::from_secs(2),
            ..OrdererConfig::default()
        }
    }
}

/// A transaction the orderer accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ordered {
    /// Its place in the stream.
    pub seq: Seq,
    /// Its id.
    pub tx_id: TxId,
    /// When the orderer received it, Unix microseconds.
    pub received_us: u64,
    /// When it got its seq, Unix microseconds.
    pub ordered_us: u64,
}

/// A transaction as delivered: its seq, the orderer's time, the submitted bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedTx {
    /// Its place in the stream.
    pub seq: Seq,
    /// The orderer's clock when it assigned `seq`, Unix milliseconds: the time every
    /// peer uses to validate it (certificate expiry, the proposal's time window), so all
    /// reach the same verdict. The block's seal covers it, in the transaction's leaf.
    pub timestamp_ms: u64,
    /// The encoded `SignedTransaction`, exactly as submitted.
    pub transaction: Vec<u8>,
}

impl OrderedTx {
    /// The wire form, consuming the transaction (it is only ever encoded to be stored
    /// or sent, and its bytes are the bulk of it).
    pub fn into_bytes(self) -> Vec<u8> {
        self.encode().1
    }

    /// The wire form, keeping the transaction: what was encoded, and the bytes.
    pub fn encode(self) -> (OrderedTx, Vec<u8>) {
        let wire = proto::OrderedTx {
            seq: self.seq.0,
            transaction: self.transaction,
            timestamp_ms: self.timestamp_ms,
        };
        let bytes = wire.encode_to_vec();
        let kept = OrderedTx {
            seq: self.seq,
            timestamp_ms: self.timestamp_ms,
            transaction: wire.transaction,
        };
        (kept, bytes)
    }

    /// Reads the wire form.
    pub fn decode(bytes: &[u8]) -> Result<OrderedTx, OrderError> {
        let ordered = proto::OrderedTx::decode(bytes)
            .map_err(|e| OrderError::Corrupt(format!("ordered transaction: {e}")))?;
        Ok(OrderedTx {
            seq: Seq(ordered.seq),
            timestamp_ms: ordered.timestamp_ms,
            transaction: ordered.transaction,
        })
    }

    /// The Merkle leaf of this transaction in its block: its bytes with its timestamp
    /// ([`crate::block::leaf`]).
    pub fn leaf(&self) -> Hash {
        crate::block::leaf(self.timestamp_ms, &self.transaction)
    }
}

/// One item of an orderer's stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    /// The next transaction, in seq order.
    Tx(OrderedTx),
    /// Every transaction up to this seq is durable at the orderer (delivered or not).
    Durable(Seq),
    /// The seal of the next block; all its transactions were delivered before it.
    Seal(SignedSealed),
}

/// A subscriber's view of the stream.
pub trait Delivery: Send {
    /// The next item, waiting up to `timeout`; `Ok(None)` when nothing came in time.
    fn next(&mut self, timeout: Duration) -> Result<Option<Delivered>, OrderError>;

    /// Refuses everything delivered from seq `from` (block `next_block`) on, for `why`:
    /// the source sent what a peer must not take (a stream that a quorum of a
    /// Byzantine-fault-tolerant ordering service did not sign, [`gate`]). A delivery
    /// that can read from another source reads again from there, from that position,
    /// and never hands out an item it read before the refusal; one that cannot fails,
    /// as this default does.
    fn refuse(&mut self, from: Seq, next_block: BlockNumber, why: &str) -> Result<(), OrderError> {
        let _ = next_block;
        Err(OrderError::Corrupt(format!(
            "the ordered stream from seq {from} on is refused, and there is no other \
             source to read it from: {why}"
        )))
    }

    /// Where it reads from now (an orderer's endpoint), for logs.
    fn source(&self) -> String {
        "this process's orderer".into()
    }
}

/// An ordering service.
pub trait Orderer: Send + Sync {
    /// Checks `signed_transaction` (shape, size, channel, submitter certificate and
    /// role, submitter signature) and gives it the next seq. Returns once the seq is
    /// assigned; durability follows (see [`Delivered::Durable`]).
    fn submit(&self, signed_transaction: Vec<u8>) -> Result<Ordered, OrderError>;

    /// [`Orderer::submit`] for several transactions, in their order, each with its own
    /// answer. An orderer in this process checks their signatures as one batch and
    /// sequences them together ([`Orderer::submits_in_batches`]); the default submits
    /// them one by one.
    fn submit_batch(&self, signed_transactions: Vec<Vec<u8>>) -> Vec<Result<Ordered, OrderError>> {
        signed_transactions
            .into_iter()
            .map(|signed_transaction| self.submit(signed_transaction))
            .collect()
    }

    /// Whether [`Orderer::submit_batch`] costs less than a `submit` each, so that callers
    /// holding several transactions at once should hand them over together (the solo
    /// orderer: one signature batch and one turn of the sequencer; an orderer reached
    /// over the network: one round trip).
    fn submits_in_batches(&self) -> bool {
        false
    }

    /// How many batches a caller should have in flight at once: one for an orderer that
    /// answers as soon as it sequences (solo, a Raft leader), more for one that answers
    /// only once a consensus round decided (a BFT cluster), so that the next round has
    /// transactions to decide while the last one runs.
    fn submits_in_flight(&self) -> usize {
        1
    }

    /// The stream from transaction `from` and seal `next_block` on (a peer resuming
    /// passes its durable height + 1 and its last seal + 1).
    fn deliver(&self, from: Seq, next_block: BlockNumber) -> Result<Box<dyn Delivery>, OrderError>;

    /// The last seq assigned.
    fn height(&self) -> Seq;

    /// The last seq durable at the orderer.
    fn durable_height(&self) -> Seq;

    /// The durations of the orderer's log flushes, when it keeps its log in this process.
    fn flush_seconds(&self) -> Option<Arc<Histogram>> {
        None
    }

    /// Why this orderer no longer orders (its log failed, or it was closed); `None`
    /// while it works or when it runs in another process.
    fn failure(&self) -> Option<String> {
        None
    }

    /// Where this orderer stands in its Raft cluster; `None` for a solo orderer, or one
    /// in another process.
    fn cluster(&self) -> Option<ClusterView> {
        None
    }

    /// Where this orderer stands in its BFT cluster; `None` for any other orderer.
    fn consensus(&self) -> Option<ConsensusView> {
        None
    }

    /// Stops what this process runs of the orderer (idempotent).
    fn close(&self) {}
}

/// An orderer of a Raft cluster as it sees itself ([`Orderer::cluster`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// Its Raft id.
    pub id: u64,
    /// The leader it knows, if any.
    pub leader: Option<u64>,
    /// Its Raft term.
    pub term: u64,
    /// The ids its membership counts now (during a change, the outgoing voters too).
    pub voters: Vec<u64>,
    /// The entry its Raft log was last compacted to (0: never).
    pub compacted: u64,
}

/// An orderer of a BFT cluster as it sees itself ([`Orderer::consensus`]).
#[derive(Debug, Clone)]
pub struct ConsensusView {
    /// The highest view it has seen the cluster at.
    pub view: u64,
    /// The view of the last batch it applied.
    pub applied_view: u64,
    /// Batches it applied since it started (one block each).
    pub batches: u64,
    /// Lies it detected since it started: a member's conflicting consensus votes, or its
    /// signature over another seal than the stream gives.
    pub equivocations: u64,
    /// The cluster's members.
    pub members: usize,
    /// How long each block's seal took to gather its quorum of signatures.
    pub seal_seconds: Arc<Histogram>,
}

/// Why the orderer refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// The signed transaction is bigger than allowed.
    #[error("transaction of {size_bytes} bytes is larger than the {limit_bytes} allowed")]
    TooLarge {
        /// Its size.
        size_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// The bytes are not a transaction with a proposal.
    #[error("malformed transaction: {0}")]
    Malformed(String),
    /// The proposal names another channel.
    #[error("transaction for channel `{got}`, this orderer serves `{expected}`")]
    WrongChannel {
        /// The channel served.
        expected: String,
        /// The channel named.
        got: String,
    },
    /// The submitter's certificate or role was refused.
    #[error("submitter refused: {0}")]
    Submitter(IdentityError),
    /// The submitter's signature over the transaction does not verify.
    #[error("the submitter's signature over the transaction does not verify")]
    BadSignature,
    /// The transaction carries more endorsements than any policy can use.
    #[error(
        "the transaction carries {count} endorsements; at most {} (ENDORSEMENTS_MAX: no policy uses more)",
        tx::ENDORSEMENTS_MAX
    )]
    TooManyEndorsements {
        /// How many it carries.
        count: usize,
    },
    /// No endorsement of the transaction is by an identity that may endorse its contract
    /// (a peer; an admin for `_config`): nothing vouches for it, and it is not ordered.
    #[error(
        "the transaction carries no endorsement by an identity that may endorse `{contract}` (a peer of the network; an admin for a configuration update)"
    )]
    NotEndorsed {
        /// The contract it invokes.
        contract: String,
    },
    /// The endorsement that vouches for the transaction does not verify (a peer's check
    /// of a `Submit`; the orderer leaves it to the validators).
    #[error(
        "the endorsement by {endorser} does not verify over the transaction's proposal and payload"
    )]
    BadEndorsement {
        /// Who it claims to be by.
        endorser: String,
    },
    /// The submitter has had more bytes admitted lately than its share.
    #[error(
        "{submitter} had more transaction bytes admitted lately than its share ({rate_bytes_per_s} bytes a second, submitter_bytes_per_s_max); this one of {size_bytes} bytes fits again in {retry_ms} ms"
    )]
    QuotaExceeded {
        /// The submitter.
        submitter: String,
        /// The transaction's size.
        size_bytes: usize,
        /// The submitter's rate.
        rate_bytes_per_s: u64,
        /// When it would fit, from now.
        retry_ms: u64,
    },
    /// The proposal's timestamp is too far from the orderer's clock.
    #[error(transparent)]
    OutsideWindow(tx::OutsideWindow),
    /// The proposal is dated at or before transactions the orderer forgot for want of
    /// room (`replay_ids_max`): it cannot tell it from a replay.
    #[error(
        "the proposal is dated {proposal_ms} ms, at or before {floor_ms} ms, where this orderer no longer remembers every transaction it ordered (replay_ids_max), so it cannot tell this one from a replay; sign a new proposal"
    )]
    BeyondReplayMemory {
        /// The proposal's timestamp.
        proposal_ms: u64,
        /// The timestamp of the latest proposal forgotten early.
        floor_ms: u64,
    },
    /// A reader (a peer) holds more of the stream than this orderer's log: the log was
    /// rolled back or replaced, and must not hand out those seqs again.
    #[error(
        "a reader has the stream up to seq {reader_seq} (block {reader_block}), but this orderer's log ends at seq {height} (block {block}): the log was restored from an older copy or replaced, and it must never order different transactions at seqs a peer already holds; restore the orderer's newest log"
    )]
    Behind {
        /// The last seq the reader holds.
        reader_seq: Seq,
        /// The last block the reader holds.
        reader_block: BlockNumber,
        /// This log's height.
        height: Seq,
        /// This log's last seal.
        block: BlockNumber,
    },
    /// A transaction with this id was already ordered (a replay, or a racing submit).
    #[error("transaction {0} was already ordered; nothing was ordered again")]
    Duplicate(TxId),
    /// Another open orderer holds the log directory.
    #[error("orderer log at {0} is locked by another open orderer")]
    Locked(String),
    /// The orderer is shut down.
    #[error("the orderer is closed")]
    Closed,
    /// The log could not be read or written; the orderer stops ordering.
    #[error("orderer log failure: {0}")]
    Log(String),
    /// A stored record does not decode.
    #[error("orderer log is corrupt: {0}")]
    Corrupt(String),
    /// The orderer (in another process) cannot be reached or did not answer.
    #[error("orderer unavailable: {0}")]
    Unavailable(String),
    /// This orderer of a cluster is not its leader: the transactions go to the leader
    /// instead (the cluster's own answer, seen outside only when no leader is known).
    #[error("orderer unavailable: this orderer is not the ordering cluster's leader")]
    NotLeader,
    /// An orderer in another process refused or failed, for the reason it named.
    #[error("{message}")]
    Remote {
        /// Its error name ([`OrderError::code`] there).
        code: &'static str,
        /// The gRPC status code it answered with.
        grpc: i32,
        /// Its message.
        message: String,
    },
}

impl OrderError {
    /// A stable name for the error, for clients and logs.
    pub fn code(&self) -> &'static str {
        match self {
            OrderError::TooLarge { .. } => "TOO_LARGE",
            OrderError::Malformed(_) => "BAD_PAYLOAD",
            OrderError::WrongChannel { .. } => "WRONG_CHANNEL",
            OrderError::Submitter(error) => error.creator_code(),
            OrderError::BadSignature => "BAD_CREATOR_SIGNATURE",
            OrderError::TooManyEndorsements { .. } => "TOO_MANY_ENDORSEMENTS",
            OrderError::NotEndorsed { .. } => "NOT_ENDORSED",
            OrderError::BadEndorsement { .. } => "BAD_ENDORSER_SIGNATURE",
            OrderError::QuotaExceeded { .. } => "SUBMITTER_QUOTA_EXCEEDED",
            OrderError::OutsideWindow(_) | OrderError::BeyondReplayMemory { .. } => {
                "TIMESTAMP_OUT_OF_WINDOW"
            }
            OrderError::Duplicate(_) => "DUPLICATE_TXID",
            OrderError::Behind { .. } => "ORDERER_BEHIND",
            OrderError::Locked(_) => "LOCKED",
            OrderError::Closed => "CLOSED",
            OrderError::Log(_) => "LOG_FAILURE",
            OrderError::Corrupt(_) => "LOG_CORRUPT",
            OrderError::Unavailable(_) | OrderError::NotLeader => "ORDERER_UNAVAILABLE",
            OrderError::Remote { code, .. } => code,
        }
    }
}

/// What admission found: the transaction's id, its proposal's timestamp, and whether it
/// is a `_config` update.
pub type Admitted = (TxId, u64, bool);

/// A transaction whose every admission check but its signatures passed: what it is, and
/// the two signatures left to verify (the submitter's over the transaction, and the
/// endorsement that vouches for it). What a peer checks of a `Submit` before it queues
/// it ([`check`], [`verify_checked`]), and an orderer before it orders it.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The transaction's id.
    pub tx_id: TxId,
    /// Its proposal's timestamp, Unix milliseconds.
    pub proposal_ms: u64,
    /// Whether it is a `_config` update.
    pub config_update: bool,
    /// Its size, in bytes.
    pub size_bytes: usize,
    /// The submitter: its id for errors, its public key for its quota.
    submitter: Arc<Identity>,
    /// The endorser that vouches for it, for errors.
    endorser: Arc<Identity>,
    /// The submitter's signature, then the endorsement's when it is to be verified.
    checks: Vec<sig::SigCheck>,
}

impl Checked {
    fn admitted(&self) -> Admitted {
        (self.tx_id, self.proposal_ms, self.config_update)
    }
}

/// Verifies the two signatures of each checked transaction, all as one batch through
/// `msp`'s cache (remembered when valid: a validator in this process finds them there
/// and does not verify them again). The transactions whose signatures all hold, in
/// order; the others refused ([`OrderError::BadSignature`], [`OrderError::BadEndorsement`]).
pub fn verify_checked(
    msp: &Msp,
    checked: Vec<Result<Checked, OrderError>>,
) -> Vec<Result<Checked, OrderError>> {
    let checks: Vec<sig::SigCheck> = checked
        .iter()
        .filter_map(|checked| checked.as_ref().ok())
        .flat_map(|checked| checked.checks.iter().cloned())
        .collect();
    let mut verdicts = msp.signatures().verify_all(&checks).into_iter();
    checked
        .into_iter()
        .map(|checked| {
            let checked = checked?;
            let submitter_ok = verdicts.next().unwrap_or(false);
            let endorsement_ok = checked
                .checks
                .iter()
                .skip(1)
                .all(|_| verdicts.next().unwrap_or(false));
            if !submitter_ok {
                Err(OrderError::BadSignature)
            } else if !endorsement_ok {
                Err(OrderError::BadEndorsement {
                    endorser: checked.endorser.id(),
                })
            } else {
                Ok(checked)
            }
        })
        .collect()
}

/// The orderer's admission checks (everything but sequencing and replays), the
/// submitter's quota last.
pub fn admit(
    config: &OrdererConfig,
    msp: &Msp,
    quota: &quota::Quotas,
    signed_transaction: &[u8],
) -> Result<Admitted, OrderError> {
    let checked = verify_checked(msp, vec![check(config, msp, signed_transaction, false)])
        .pop()
        .unwrap_or(Err(OrderError::Closed))?;
    quota.take(
        &checked.submitter.key,
        checked.size_bytes,
        tx::now_us(),
        || checked.submitter.id(),
    )?;
    Ok(checked.admitted())
}

/// [`admit`] for several transactions, their signatures verified as one batch.
pub fn admit_batch(
    config: &OrdererConfig,
    msp: &Msp,
    quota: &quota::Quotas,
    signed_transactions: &[Vec<u8>],
) -> Vec<Result<Admitted, OrderError>> {
    let checked = signed_transactions
        .iter()
        .map(|bytes| check(config, msp, bytes, false))
        .collect();
    let now_us = tx::now_us();
    verify_checked(msp, checked)
        .into_iter()
        .map(|checked| {
            let checked = checked?;
            quota.take(&checked.submitter.key, checked.size_bytes, now_us, || {
                checked.submitter.id()
            })?;
            Ok(checked.admitted())
        })
        .collect()
}

/// Everything admission checks but the signatures and the quota: size, shape, channel,
/// time window, the submitter's certificate and role, the count of endorsements, and
/// that one of them is by an identity that may endorse the contract, by its certificate.
/// That endorsement's signature is left to verify ([`verify_checked`]) when
/// `verify_endorsement`: a peer does (it verified that signature, or made it, already, so
/// its cache answers); an orderer does not, leaving it to the validators (a peer that
/// forwards a forged one could as well have signed one itself, and the submitter's
/// quota bounds what either stores). Costs three decodes, the MSP's cached certificate
/// checks, and the hashes the signatures cover; no signature is verified here.
pub fn check(
    config: &OrdererConfig,
    msp: &Msp,
    signed_transaction: &[u8],
    verify_endorsement: bool,
) -> Result<Checked, OrderError> {
    if signed_transaction.len() > config.transaction_bytes_max {
        return Err(OrderError::TooLarge {
            size_bytes: signed_transaction.len(),
            limit_bytes: config.transaction_bytes_max,
        });
    }
    let malformed = |e: prost::DecodeError| OrderError::Malformed(e.to_string());
    let signed = proto::SignedTransaction::decode(signed_transaction).map_err(malformed)?;
    let transaction =
        proto::Transaction::decode(signed.transaction.as_slice()).map_err(malformed)?;
    if transaction.endorsements.len() > tx::ENDORSEMENTS_MAX {
        return Err(OrderError::TooManyEndorsements {
            count: transaction.endorsements.len(),
        });
    }
    let signed_proposal = transaction
        .proposal
        .as_ref()
        .ok_or_else(|| OrderError::Malformed("no proposal".into()))?;
    let proposal =
        proto::Proposal::decode(signed_proposal.proposal.as_slice()).map_err(malformed)?;
    if proposal.channel != config.channel {
        return Err(OrderError::WrongChannel {
            expected: config.channel.clone(),
            got: proposal.channel,
        });
    }
    tx::check_window(proposal.timestamp_ms, tx::now_ms(), config.proposal_window)
        .map_err(OrderError::OutsideWindow)?;
    let now_s = tx::now_seconds();
    let submitter = msp
        .verify(&proposal.creator, now_s)
        .map_err(OrderError::Submitter)?;
    submitter
        .require_role(&config.submit_roles)
        .map_err(OrderError::Submitter)?;
    // The first endorsement by an identity that may endorse the contract vouches for
    // the transaction; the validator checks the rest against the policy.
    let may_endorse = crate::lifecycle::endorser_roles(&proposal.contract);
    let (endorser, endorsement) = transaction
        .endorsements
        .iter()
        .find_map(|endorsement| {
            let endorser = msp.verify(&endorsement.endorser, now_s).ok()?;
            may_endorse
                .contains(&endorser.role)
                .then_some((endorser, endorsement))
        })
        .ok_or_else(|| OrderError::NotEndorsed {
            contract: proposal.contract.clone(),
        })?;
    let endorsement_check = verify_endorsement.then(|| sig::SigCheck {
        key: endorser.verifying_key().to_bytes(),
        message: tx::endorsement_message(
            &tx::sha256(&signed_proposal.proposal),
            &tx::sha256(&transaction.payload),
        ),
        signature: endorsement.signature.clone(),
    });
    let submitter_check = sig::SigCheck {
        key: submitter.verifying_key().to_bytes(),
        message: tx::transaction_message(&tx::sha256(&signed.transaction)),
        signature: signed.signature,
    };
    Ok(Checked {
        tx_id: tx::tx_id(&proposal),
        proposal_ms: proposal.timestamp_ms,
        config_update: proposal.contract == crate::netconfig::CONFIG_NAMESPACE,
        size_bytes: signed_transaction.len(),
        submitter,
        endorser,
        checks: std::iter::once(submitter_check)
            .chain(endorsement_check)
            .collect(),
    })
}
