//! The embeddable ledger: every role in one process, the way one embeds SQLite.
//!
//! [`Ledger::open`] wires a solo orderer, one peer's validator pipeline, its world state
//! and its endorsers over a directory:
//!
//! | path | what |
//! |---|---|
//! | `identities/<org>/` | CA certificate, and certificate + key of the org's admin, peer, client and orderer; `tls/`: the org's TLS CA certificate and TLS server and client certificates + keys; generated on first open |
//! | `state/` | the peer's state and block store (sled) |
//! | `orderer/` | the orderer's log (`orderer.log`, a record file: [`crate::records`]) |
//! | `artifacts/` | compiled contract artifacts |
//!
//! [`Ledger::submit`] runs the whole flow for one call: a signed proposal, endorsements
//! from as many of the network's peers as the contract's policy needs, the signed
//! transaction to the orderer, then waits until the validator has committed it.
//!
//! ```no_run
//! use runnel_ledger::ledger::{Ledger, LedgerConfig};
//! # fn main() -> Result<(), runnel_ledger::ledger::LedgerError> {
//! # let kv_wasm: Vec<u8> = Vec::new();
//! let ledger = Ledger::open("/tmp/runnel-demo".as_ref(), LedgerConfig::default())?;
//! ledger.deploy("kv", "1.0", &kv_wasm, "")?;
//! let committed = ledger.submit("kv", "put", &[b"colour", b"blue"])?;
//! println!("committed at seq {}", committed.seq);
//! let value = ledger.evaluate("kv", "get", &[b"colour"])?;
//! # Ok(()) }
//! ```
//!
//! A runnable version is `node/ledger/examples/embedded.rs`.
//!
//! The ledger's capabilities are types of their own, each in its file:
//!
//! | type | file | what |
//! |---|---|---|
//! | [`Ledger`] | `mod.rs` | the embedder's surface: open, submit, evaluate, deploy, statuses and events, close |
//! | [`LedgerBuilder`] | `open.rs` | opening a peer that orders through another process |
//! | [`Gateway`] | `gateway.rs` | the split flow for transactions signed elsewhere (the API's clients) |
//! | [`Reader`] | `reader.rs` | state, history, transactions, blocks, proofs, the network in force |
//! | [`Lifecycle`] | `lifecycle.rs` | contract definitions and approvals; deploy and upgrade |
//! | `LocalEndorsers` | `endorse.rs` | this process's organisations' peers, as an [`crate::gather::EndorsementGatherer`] |

mod endorse;
mod gateway;
mod lifecycle;
mod open;
mod reader;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost::Message;
use runnel_runtime::RuntimeConfig;
use tokio::sync::broadcast;

use crate::endorser::{EndorseError, EndorserConfig};
use crate::identity::{Msp, NetworkDefinition, Signer};
use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};
use crate::orderer::{OrderError, Ordered, Orderer, OrdererConfig, OrderingMode};
use crate::proto::{Proposal, SignedProposal, Transaction};
use crate::records::SyncMode;
use crate::sig::SigCheck;
use crate::store::{StoreError, WorldState};
use crate::trace::{CompletedTrace, Stage, Trace, TraceBook};
use crate::tx;
use crate::validator::{
    BlockEvent, CommittedEvent, Hub, Phase, TxStatus, Validator, ValidatorConfig, ValidatorError,
};
use endorse::LocalEndorsers;

pub use crate::gather::Prepared;
pub use gateway::{Gateway, ProposalAnswer, ProposalCall, ToOrder};
pub use lifecycle::Lifecycle;
pub use open::LedgerBuilder;
pub use reader::{FlushSeconds, Proof, Reader, StoreReads, StoredTx};

/// How a ledger is set up.
#[derive(Debug, Clone)]
pub struct LedgerConfig {
    /// Organisations generated on first open (ignored once identities exist).
    pub orgs: Vec<String>,
    /// How long generated certificates are valid.
    pub identity_validity: time::Duration,
    /// Ordering: streaming (default) or Fabric-style blocks, seal cadence.
    pub orderer: OrdererConfig,
    /// The validator pipeline.
    pub validator: ValidatorConfig,
    /// The endorsers.
    pub endorser: EndorserConfig,
    /// The contract runtime (its artifact cache defaults to `artifacts/` in the ledger
    /// directory).
    pub runtime: RuntimeConfig,
    /// Transactions whose traces are kept.
    pub traces_kept: usize,
    /// How each flush makes the orderer's log and the peer's store durable: by default
    /// [`SyncMode::Full`] (`fdatasync`: a commit survives a power loss);
    /// [`SyncMode::Data`] writes through to the device and waits (`sync_file_range`: a
    /// commit survives a crash of the process or the kernel).
    pub sync: SyncMode,
    /// Whether a signature this process makes (the embedded client's, its endorsers')
    /// counts as verified, so no stage verifies it again (the default); `false`
    /// verifies every signature once where a stage checks it, as separate processes do.
    pub trust_own_signatures: bool,
    /// The organisation this node acts for: it endorses as that organisation's peer
    /// only. `None`: every organisation whose keys are in the directory (one process
    /// standing for the whole network).
    pub org: Option<String>,
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig {
            orgs: vec!["Org1".to_string()],
            identity_validity: time::Duration::days(3650),
            orderer: OrdererConfig::default(),
            validator: ValidatorConfig::default(),
            endorser: EndorserConfig::default(),
            runtime: RuntimeConfig::default(),
            traces_kept: crate::trace::TRACES_KEPT,
            sync: SyncMode::Full,
            trust_own_signatures: true,
            org: None,
        }
    }
}

/// Why a ledger call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// Identities could not be generated, written or read.
    #[error("identities: {0}")]
    Identity(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The orderer refused or failed.
    #[error(transparent)]
    Order(#[from] OrderError),
    /// Endorsement failed (the contract's error, a bad proposal, ...).
    #[error(transparent)]
    Endorse(#[from] EndorseError),
    /// The validator stopped.
    #[error(transparent)]
    Validator(#[from] ValidatorError),
    /// Endorsements disagree.
    #[error(transparent)]
    Gather(#[from] crate::gather::GatherError),
    /// A configured policy does not parse.
    #[error("policy: {0}")]
    Policy(String),
    /// A committed result does not decode.
    #[error("unexpected result: {0}")]
    BadResult(String),
    /// The contract runtime could not start.
    #[error("runtime: {0}")]
    Runtime(String),
    /// No set of this network's peers satisfies the contract's endorsement policy.
    #[error("no endorsers of this network satisfy the policy of `{0}`")]
    Unendorsable(String),
    /// The transaction was ordered and recorded, but invalid.
    #[error("transaction {tx_id} at seq {seq} is invalid: {code}")]
    Rejected {
        /// Its id.
        tx_id: TxId,
        /// Its place in the stream.
        seq: Seq,
        /// Why.
        code: ValidationCode,
    },
    /// The ledger stopped before the transaction's status arrived.
    #[error("the ledger closed before transaction {0} was committed")]
    Closed(TxId),
    /// A transaction with this id is already in the ledger (a replay); it was not
    /// ordered again.
    #[error("transaction {tx_id} is already in the ledger at seq {seq} (replayed transaction)")]
    DuplicateTxId {
        /// The id.
        tx_id: TxId,
        /// Where the ledger holds it.
        seq: Seq,
    },
}

impl LedgerError {
    /// A stable name for the error (API status details, SDK error types).
    pub fn code(&self) -> &'static str {
        match self {
            LedgerError::Identity(_) => "IDENTITY",
            LedgerError::Store(_) => "STATE_UNAVAILABLE",
            LedgerError::Order(e) => e.code(),
            LedgerError::Endorse(e) => e.code(),
            LedgerError::Validator(_) => "VALIDATOR_STOPPED",
            LedgerError::Gather(_) => "ENDORSEMENT_MISMATCH",
            LedgerError::Policy(_) => "BAD_POLICY",
            LedgerError::BadResult(_) => "BAD_RESULT",
            LedgerError::Runtime(_) => "RUNTIME",
            LedgerError::Unendorsable(_) => "ENDORSEMENT_POLICY_FAILURE",
            LedgerError::Rejected { code, .. } => code.as_str(),
            LedgerError::Closed(_) => "CLOSED",
            LedgerError::DuplicateTxId { .. } => "DUPLICATE_TXID",
        }
    }
}

/// A committed, valid transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Its id.
    pub tx_id: TxId,
    /// Its place in the stream (the version of every key it wrote).
    pub seq: Seq,
    /// What the function returned.
    pub result: Vec<u8>,
}

/// What the ledger is and how far it has got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerInfo {
    /// The channel served.
    pub channel: String,
    /// The network's organisations.
    pub orgs: Vec<String>,
    /// Streaming or Fabric-style blocks.
    pub mode: OrderingMode,
    /// A block is sealed when it holds this many transactions...
    pub seal_max_txs: usize,
    /// ... or when its first transaction has waited this long.
    pub seal_max_delay: std::time::Duration,
    /// The last seq the orderer assigned.
    pub ordered_height: Seq,
    /// The last seq validated (staged).
    pub validated_height: Seq,
    /// The last seq durable on this peer.
    pub committed_height: Seq,
    /// The last block sealed on this peer.
    pub last_block: Option<BlockNumber>,
    /// Largest signed proposal the endorsers accept, in bytes.
    pub proposal_bytes_max: usize,
    /// Largest signed transaction the orderer accepts, in bytes.
    pub transaction_bytes_max: usize,
}

/// Every role of a Runnel network in one process (see the module doc).
pub struct Ledger {
    dir: PathBuf,
    msp: Arc<Msp>,
    world: Arc<WorldState>,
    orderer: Arc<dyn Orderer>,
    validator: Validator,
    hub: Arc<Hub>,
    traces: Arc<TraceBook>,
    /// The peers of the organisations it acts for, and their people's keys it holds.
    local: LocalEndorsers,
    /// The genesis definition (`network.json`), in force until a `_config` update.
    genesis: NetworkDefinition,
    channel: String,
    orderer_config: OrdererConfig,
    /// The orderer runs in another process: a submitted transaction is checked here as
    /// it will check it, so that no bad one goes out in a batch with good ones.
    orderer_elsewhere: bool,
    proposal_bytes_max: usize,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Ledger {
    /// Opens the ledger in `dir`, creating it (and a network of `config.orgs`) if empty,
    /// and starts ordering and validating. Transactions ordered but not yet committed
    /// when it last stopped are validated again from the orderer's log.
    pub fn open(dir: &Path, config: LedgerConfig) -> Result<Ledger, LedgerError> {
        LedgerBuilder::new(dir, config).open()
    }

    /// Opens a ledger as [`LedgerBuilder`] is told: a peer that orders through another
    /// process's ordering service.
    pub fn builder<'a>(dir: &Path, config: LedgerConfig) -> LedgerBuilder<'a> {
        LedgerBuilder::new(dir, config)
    }

    /// The split flow for transactions assembled and signed elsewhere.
    pub fn gateway(&self) -> Gateway<'_> {
        Gateway { ledger: self }
    }

    /// What the ledger holds.
    pub fn reader(&self) -> Reader<'_> {
        Reader { ledger: self }
    }

    /// Contract definitions and approvals; deploying and upgrading contracts.
    pub fn lifecycle(&self) -> Lifecycle<'_> {
        Lifecycle { ledger: self }
    }

    /// Deploys a contract ([`Lifecycle::deploy`]).
    pub fn deploy(
        &self,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<crate::proto::ContractDefinition, LedgerError> {
        self.lifecycle().deploy(name, version, code, policy)
    }

    /// The identities the ledger trusts now: the network's CAs and revocations as the
    /// definition in force has them. A server checks its readers' certificates with it.
    pub fn msp(&self) -> &Arc<Msp> {
        &self.msp
    }

    /// The channel served.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The organisations this ledger endorses for (its peers' organisations).
    pub fn own_orgs(&self) -> Vec<String> {
        self.local.orgs.iter().map(|org| org.name.clone()).collect()
    }

    /// What the ledger is and how far it has got.
    pub fn info(&self) -> Result<LedgerInfo, LedgerError> {
        let last_block = self.world.store().last_seal()?.map(|seal| seal.number);
        Ok(LedgerInfo {
            channel: self.channel.clone(),
            orgs: self.msp.orgs(),
            mode: self.orderer_config.mode,
            seal_max_txs: self.orderer_config.seal_txs(),
            seal_max_delay: self.orderer_config.seal_max_delay,
            ordered_height: self.orderer.height(),
            validated_height: self.world.staged_height(),
            committed_height: self.world.durable_height(),
            last_block,
            proposal_bytes_max: self.proposal_bytes_max,
            transaction_bytes_max: self.orderer_config.transaction_bytes_max,
        })
    }

    /// Calls `contract.function(args)` as a transaction signed by [`Ledger::client`] and
    /// waits for it to commit.
    pub fn submit(
        &self,
        contract: &str,
        function: &str,
        args: &[&[u8]],
    ) -> Result<Committed, LedgerError> {
        self.submit_as(self.client()?, contract, function, args)
    }

    /// The client identity of the first organisation this ledger acts for, when it holds
    /// one (an embedded ledger or dev node does; a node of a network does not).
    fn client(&self) -> Result<&Signer, LedgerError> {
        self.local.orgs[0].client.as_ref().ok_or_else(|| {
            LedgerError::Identity(format!(
                "this node holds no client key of {}: submit through a client",
                self.local.orgs[0].name
            ))
        })
    }

    /// [`Ledger::submit`] signed by `creator`.
    pub fn submit_as(
        &self,
        creator: &Signer,
        contract: &str,
        function: &str,
        args: &[&[u8]],
    ) -> Result<Committed, LedgerError> {
        let args = args.iter().map(|a| a.to_vec()).collect();
        let proposal = tx::new_proposal(&self.channel, contract, function, args, creator);
        let signed = self.sign_own_proposal(creator, &proposal);
        self.run(creator, &signed)
    }

    /// Signs `proposal` as `creator` and remembers the signature as valid: this process
    /// made it with the key, so its own endorsers need not verify it again. Any other
    /// process verifies it as usual; signatures made elsewhere (API clients) are always
    /// verified.
    fn sign_own_proposal(&self, creator: &Signer, proposal: &Proposal) -> SignedProposal {
        let (signed, message) = tx::sign_proposal_with_message(creator, proposal);
        self.remember_own(creator, message, &signed.signature);
        signed
    }

    /// [`Ledger::sign_own_proposal`] for the transaction the creator submits: its own
    /// orderer need not verify it again.
    fn sign_own_transaction(&self, creator: &Signer, transaction: &Transaction) -> Vec<u8> {
        let (signed, message) = tx::sign_transaction_with_message(creator, transaction);
        self.remember_own(creator, message, &signed.signature);
        signed.encode_to_vec()
    }

    /// Remembers a signature `creator` just made over `message` as valid.
    fn remember_own(&self, creator: &Signer, message: Vec<u8>, signature: &[u8]) {
        self.msp.signatures().remember_own(&SigCheck {
            key: creator.public_key(),
            message,
            signature: signature.to_vec(),
        });
    }

    /// Runs `contract.function(args)` on the current state and returns its result,
    /// without a transaction.
    pub fn evaluate(
        &self,
        contract: &str,
        function: &str,
        args: &[&[u8]],
    ) -> Result<Vec<u8>, LedgerError> {
        let creator = self.client()?;
        let args = args.iter().map(|a| a.to_vec()).collect();
        let proposal = tx::new_proposal(&self.channel, contract, function, args, creator);
        Ok(self.local.orgs[0]
            .peer
            .evaluate(&self.sign_own_proposal(creator, &proposal))?)
    }

    /// The status of `tx_id` on this peer now: its code and seq once validated, and
    /// whether it is durable. `None` while the peer has not validated it. For an id
    /// ordered more than once, the first transaction's.
    pub fn status(&self, tx_id: &TxId) -> Result<Option<TxStatus>, LedgerError> {
        let Some(record) = self.world.tx(tx_id)? else {
            return Ok(None);
        };
        let phase = if record.seq <= self.world.durable_height() {
            Phase::Committed
        } else {
            Phase::Validated
        };
        Ok(Some(TxStatus {
            tx_id: *tx_id,
            seq: record.seq,
            code: record.code,
            phase,
            timestamp_ms: record.timestamp_ms,
        }))
    }

    /// Endorses, orders and waits for one signed proposal.
    fn run(&self, creator: &Signer, signed: &SignedProposal) -> Result<Committed, LedgerError> {
        let Prepared {
            tx_id,
            transaction,
            result,
            needs,
        } = self.gateway().endorse_signed(signed, &[])?.into_prepared();
        if !needs.is_empty() {
            return Err(LedgerError::Unendorsable(format!(
                "{} (it needs endorsements of {}, whose peers are other processes)",
                tx_id,
                needs.join(", ")
            )));
        }
        let bytes = self.sign_own_transaction(creator, &transaction);

        let mut watch = self.hub.watch_commit(tx_id);
        let ordered = match self.order(bytes) {
            Ok(ordered) => ordered,
            Err(error) => {
                self.hub.unwatch(&tx_id);
                return Err(error);
            }
        };
        loop {
            let Some(status) = watch.next_blocking() else {
                return Err(self.closed(tx_id));
            };
            if status.seq != ordered.seq || status.phase != Phase::Committed {
                continue;
            }
            if !status.code.is_valid() {
                return Err(LedgerError::Rejected {
                    tx_id,
                    seq: status.seq,
                    code: status.code,
                });
            }
            return Ok(Committed {
                tx_id,
                seq: status.seq,
                result,
            });
        }
    }

    /// Submits to the orderer and stamps the orderer's stages. The endorsement stages
    /// are stamped before this, so that a trace is complete only with these
    /// ([`crate::trace`]).
    fn order(&self, signed_transaction: Vec<u8>) -> Result<Ordered, LedgerError> {
        let ordered = self.orderer.submit(signed_transaction)?;
        self.mark_ordered(&ordered);
        Ok(ordered)
    }

    fn mark_ordered(&self, ordered: &Ordered) {
        self.traces
            .mark(ordered.tx_id, Stage::Received, ordered.received_us);
        self.traces
            .mark(ordered.tx_id, Stage::Ordered, ordered.ordered_us);
    }

    fn closed(&self, tx_id: TxId) -> LedgerError {
        match self.validator.failure() {
            Some(error) => error.into(),
            None => LedgerError::Closed(tx_id),
        }
    }

    /// When a recent transaction passed each stage.
    pub fn trace(&self, tx_id: &TxId) -> Option<Trace> {
        self.traces.get(tx_id)
    }

    /// Each transaction's trace as it completes ([`crate::trace`]).
    pub fn completed_traces(&self) -> broadcast::Receiver<CompletedTrace> {
        self.traces.completed()
    }

    /// Watches one transaction's statuses (register before submitting it elsewhere).
    pub fn watch(&self, tx_id: TxId) -> crate::validator::TxWatch {
        self.hub.watch(tx_id)
    }

    /// Every transaction's statuses, validated and committed.
    pub fn statuses(&self) -> broadcast::Receiver<TxStatus> {
        self.hub.statuses()
    }

    /// Contract events, after commit.
    pub fn events(&self) -> broadcast::Receiver<CommittedEvent> {
        self.hub.events()
    }

    /// Blocks, as their seals commit.
    pub fn blocks(&self) -> broadcast::Receiver<BlockEvent> {
        self.hub.blocks()
    }

    /// How many items wait at each validator stage's input now
    /// ([`Validator::queue_depths`]).
    pub fn queue_depths(&self) -> [(&'static str, usize); 3] {
        self.validator.queue_depths()
    }

    /// Why the ledger no longer orders or validates (a fatal error, or it was closed);
    /// `None` while it works.
    pub fn failure(&self) -> Option<String> {
        match self.validator.failure() {
            Some(error) => Some(error.to_string()),
            None if self.validator.stopped() => Some("the ledger is closed".to_string()),
            None => None,
        }
    }

    /// Stops validating and ordering. Everything committed stays; what was ordered but
    /// not yet committed is validated again on the next open.
    pub fn close(&self) {
        self.validator.close();
        self.orderer.close();
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        self.close();
    }
}

// A ledger is shared across threads (an API server, a load generator).
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Ledger>();
};
