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
//! For transactions assembled and signed elsewhere (the API's clients), the same flow is
//! split where a client's key is needed: [`Ledger::endorse_signed`] takes a proposal the
//! client signed and returns the endorsed transaction for the client to sign;
//! [`Ledger::submit_signed`] orders the signed transaction; [`Ledger::status`] and the
//! [`Ledger::statuses`] broadcast tell how far it has got.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use prost::Message;
use runnel_runtime::{Runtime, RuntimeConfig};
use tokio::sync::broadcast;

use crate::endorser::{Checked, EndorseError, Endorsed, Endorser, EndorserConfig};
use crate::identity::{
    IDENTITIES_DIR, Msp, NETWORK_FILE, NetworkDefinition, NetworkIdentities, NetworkKeys, Role,
    Signer,
};
use crate::ids::{BlockNumber, Seq, TxId, ValidationCode};
use crate::lifecycle::{self, FN_APPROVE, FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};
use crate::metrics::Histogram;
use crate::netconfig::{self, CONFIG_NAMESPACE};
use crate::orderer::{OrderError, Ordered, Orderer, OrdererConfig, OrderingMode, SoloOrderer};
use crate::policy::{Endorser as PolicyEndorser, Policy};
use crate::proto::{ContractDefinition, DeployRequest, Proposal, SignedProposal, Transaction};
use crate::records::SyncMode;
use crate::sig::SigCheck;
use crate::store::{
    EventAt, HistoryEntry, SealRecord, Snapshot, StoreError, StoredEvent, TxBytes, TxRecord,
    WorldState,
};
use crate::trace::{CompletedTrace, Stage, Trace, TraceBook};
use crate::tx;
use crate::validator::{
    BlockEvent, CommittedEvent, Hub, Phase, TxStatus, Validator, ValidatorConfig, ValidatorError,
};

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

/// A signed proposal to endorse, or only to evaluate ([`Ledger::run_proposals`]).
#[derive(Debug, Clone)]
pub enum ProposalCall {
    /// Endorse it: the answer is a transaction to sign and submit. The organisations
    /// named endorse it (those of them this ledger acts for, here; the others are
    /// [`Prepared::needs`]); none named: as the policy in force needs.
    Endorse(SignedProposal, Vec<String>),
    /// Evaluate it: the answer is the function's result; nothing is submitted.
    Evaluate(SignedProposal),
}

/// The answer to a [`ProposalCall`].
#[derive(Debug)]
pub enum ProposalAnswer {
    /// What [`Ledger::endorse_signed`] answered.
    Endorsed(Result<Prepared, LedgerError>),
    /// What [`Ledger::evaluate_signed`] answered.
    Evaluated(Result<Vec<u8>, LedgerError>),
}

/// A transaction endorsed for a proposal signed elsewhere, for its creator to sign
/// ([`crate::tx::sign_transaction`]) and submit ([`Ledger::submit_signed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// Its id.
    pub tx_id: TxId,
    /// The signed proposal, the agreed payload and the endorsements.
    pub transaction: Transaction,
    /// What the function returned, as endorsed.
    pub result: Vec<u8>,
    /// The organisations whose peers must still endorse it, each once, before it
    /// satisfies the policy in force (or the organisations asked for): other
    /// processes' peers, which a gateway asks ([`Ledger::endorse_signed`]). Empty: the
    /// transaction is ready to sign.
    pub needs: Vec<String>,
}

/// A transaction as the ledger holds it at its place in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTx {
    /// Its place in the stream.
    pub seq: Seq,
    /// Its id (for bytes that do not decode, the SHA-256 of the bytes, as the validator
    /// records them).
    pub tx_id: TxId,
    /// Its validation code.
    pub code: ValidationCode,
    /// The orderer's clock when it ordered it, Unix milliseconds (what its block's seal
    /// covers with its bytes).
    pub timestamp_ms: u64,
    /// The encoded `SignedTransaction`, exactly as ordered.
    pub bytes: Vec<u8>,
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

/// A transaction's inclusion in a sealed block, checkable with
/// [`crate::block::verify_proof`] against the seal (whose orderer signature anyone can
/// check through the network's MSP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The block's seal, as the orderer signed it.
    pub seal: crate::block::SignedSealed,
    /// The transaction, exactly as ordered.
    pub transaction: Vec<u8>,
    /// The Merkle audit path.
    pub proof: crate::proto::InclusionProof,
}

/// The endorsements of one call by this ledger's peers.
#[derive(Default)]
struct Endorsements {
    /// The first endorsement, when it does not count (its org was not asked for): its
    /// payload is the one the others must match.
    reference: Option<Endorsed>,
    /// The endorsements that go into the transaction, the first one first.
    counted: Vec<Endorsed>,
}

/// An organisation this ledger acts for, with the identities it holds of it: always its
/// peer (it endorses as that peer); its admin and client only where one process stands
/// for the organisation's people too (an embedded ledger, a dev node).
struct Org {
    name: String,
    peer: Endorser,
    admin: Option<Signer>,
    client: Option<Signer>,
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
    orgs: Vec<Org>,
    /// The genesis definition (`network.json`), in force until a `_config` update.
    genesis: NetworkDefinition,
    channel: String,
    orderer_config: OrdererConfig,
    /// The orderer runs in another process: a submitted transaction is checked here as
    /// it will check it, so that no bad one goes out in a batch with good ones.
    orderer_elsewhere: bool,
    proposal_bytes_max: usize,
}

/// A signed transaction checked for ordering ([`Ledger::check_submit`]): its bytes, and
/// for an orderer in another process, what is left to verify of it here.
#[derive(Debug)]
pub struct ToOrder {
    bytes: Vec<u8>,
    checked: Option<crate::orderer::Checked>,
}

impl ToOrder {
    /// Its size, in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no bytes (never, once checked).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn identity_error(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Identity(e.to_string())
}

/// The organisations a ledger over `keys` acts for: `org`, or every organisation whose
/// peer key it holds. A node acting for one organisation refuses to start holding
/// another's private key: organisations do not share keys.
fn acting_for(keys: &NetworkKeys, org: Option<&str>) -> Result<Vec<String>, LedgerError> {
    match org {
        None => {
            let names: Vec<String> = keys
                .orgs
                .iter()
                .filter(|name| keys.signer(name, Role::Peer).is_some())
                .cloned()
                .collect();
            if names.is_empty() {
                return Err(LedgerError::Identity(format!(
                    "no peer key of any organisation ({}) in the node's {IDENTITIES_DIR}/",
                    keys.orgs.join(", ")
                )));
            }
            Ok(names)
        }
        Some(org) if keys.orgs.iter().any(|name| name == org) => {
            if let Some(foreign) = keys.held().iter().find(|key| key.org != org) {
                return Err(LedgerError::Identity(format!(
                    "this node acts for {org} but holds a private key of {} \
                     ({IDENTITIES_DIR}/{}/{}.key): a node holds its own organisation's keys only; \
                     remove it",
                    foreign.org, foreign.org, foreign.name
                )));
            }
            Ok(vec![org.to_string()])
        }
        Some(org) => Err(LedgerError::Identity(format!(
            "no organisation {org} in the network ({})",
            keys.orgs.join(", ")
        ))),
    }
}

/// What makes a peer's link to the ordering service from the network definition in force
/// ([`Ledger::open_peer_with`]).
type ConnectOrderer<'a> =
    dyn FnOnce(&NetworkDefinition) -> Result<Arc<dyn Orderer>, LedgerError> + 'a;

impl Ledger {
    /// Opens the ledger in `dir`, creating it (and a network of `config.orgs`) if empty,
    /// and starts ordering and validating. Transactions ordered but not yet committed
    /// when it last stopped are validated again from the orderer's log.
    pub fn open(dir: &Path, config: LedgerConfig) -> Result<Ledger, LedgerError> {
        Ledger::open_with(dir, config, None)
    }

    /// [`Ledger::open_peer`] with the link to the ordering service made by `connect`, from
    /// the network definition in force where the peer's durable state ends, before the
    /// peer reads any of the stream: a peer restarted after configuration updates reaches
    /// the orderers they name, not the genesis ones.
    pub fn open_peer_with(
        dir: &Path,
        config: LedgerConfig,
        connect: impl FnOnce(&NetworkDefinition) -> Result<Arc<dyn Orderer>, LedgerError>,
    ) -> Result<Ledger, LedgerError> {
        if !dir.join("identities").exists() {
            return Err(LedgerError::Identity(format!(
                "{} holds no network identities (copy them from `runnel init`)",
                dir.display()
            )));
        }
        Ledger::open_with(dir, config, Some(Box::new(connect)))
    }

    /// Opens a peer in `dir` that orders through `orderer` (another process's, see
    /// runnel-server's `RemoteOrderer`) instead of running one. The directory needs
    /// the network's identities (`runnel init`); state and traces are this peer's own.
    pub fn open_peer(
        dir: &Path,
        config: LedgerConfig,
        orderer: Arc<dyn Orderer>,
    ) -> Result<Ledger, LedgerError> {
        Ledger::open_peer_with(dir, config, |_| Ok(orderer))
    }

    /// Opens the ledger in `dir`: a peer that orders through what `connect` makes of the
    /// definition in force, or (`None`) a node running its own solo orderer.
    fn open_with<'a>(
        dir: &Path,
        config: LedgerConfig,
        connect: Option<Box<ConnectOrderer<'a>>>,
    ) -> Result<Ledger, LedgerError> {
        if !dir.join(IDENTITIES_DIR).exists() {
            let orgs: Vec<&str> = config.orgs.iter().map(String::as_str).collect();
            NetworkIdentities::generate(&orgs, config.identity_validity)
                .map_err(identity_error)?
                .write(dir, &config.endorser.channel)
                .map_err(identity_error)?;
        }
        let keys = NetworkKeys::load(dir).map_err(identity_error)?;
        let network = keys.definition().clone();
        if network.channel != config.endorser.channel {
            return Err(LedgerError::Identity(format!(
                "the network definition ({NETWORK_FILE}) is of channel `{}`, the node's settings say `{}`",
                network.channel, config.endorser.channel
            )));
        }
        let names = acting_for(&keys, config.org.as_deref())?;
        let world = Arc::new(WorldState::open(&dir.join("state"), config.sync)?);
        // The trust in force where the durable state ends: the last configuration update
        // committed, else the genesis definition. The validator applies later updates
        // as it replays and receives them.
        let (in_force, _) = netconfig::current(&*world.snapshot().view(CONFIG_NAMESPACE), &network)
            .map_err(LedgerError::Identity)?;
        let msp = Arc::new(in_force.msp().map_err(identity_error)?);
        msp.signatures().trust_own(config.trust_own_signatures);
        let signer = |org: &str, role: Role| -> Result<Signer, LedgerError> {
            keys.signer(org, role).cloned().ok_or_else(|| {
                LedgerError::Identity(format!(
                    "no {role} key of {org} in {}/{IDENTITIES_DIR}/{org}",
                    dir.display()
                ))
            })
        };
        // The definition governs lifecycle approvals, whatever the settings say: the
        // validator reads the one in force at each transaction's place; the endorser,
        // which only warns early of missing approvals, the one in force now. One that
        // does not parse over the organisations in force (written before updates were
        // checked) leaves the endorser the default: a policy never stops a node.
        let mut config = config;
        let approvals = match Policy::parse(&in_force.lifecycle_policy, &in_force.org_names()) {
            Ok(_) => in_force.lifecycle_policy.clone(),
            Err(_) => crate::lifecycle::DEFAULT_LIFECYCLE_POLICY.to_string(),
        };
        config.endorser.lifecycle_policy = approvals.clone();
        config.validator.lifecycle_policy = approvals;
        config.validator.genesis = Some(network.clone());

        let orderer = match connect {
            Some(connect) => Some(connect(&in_force)?),
            None => None,
        };
        let orderer_elsewhere = orderer.is_some();
        let mut validator_config = config.validator.clone();
        validator_config.workers =
            crate::validator::stage_one_workers(validator_config.workers, orderer.is_none());
        let orderer: Arc<dyn Orderer> = match orderer {
            Some(orderer) => orderer,
            None => Arc::new(SoloOrderer::open(
                &dir.join("orderer"),
                OrdererConfig {
                    sync: config.sync,
                    ..config.orderer.clone()
                },
                msp.clone(),
                signer(&names[0], Role::Orderer)?,
            )?),
        };
        let hub = Arc::new(Hub::default());
        let traces = Arc::new(TraceBook::new(config.traces_kept));
        let validator = Validator::start(
            validator_config,
            msp.clone(),
            world.clone(),
            &*orderer,
            hub.clone(),
            traces.clone(),
        )?;

        let mut runtime_config = config.runtime.clone();
        runtime_config
            .cache_dir
            .get_or_insert_with(|| dir.join("artifacts"));
        let runtime = Arc::new(
            Runtime::new(runtime_config).map_err(|e| LedgerError::Runtime(e.to_string()))?,
        );
        let endorser = |signer: Signer| {
            Endorser::new(
                config.endorser.clone(),
                msp.clone(),
                signer,
                runtime.clone(),
                world.clone(),
            )
            .map_err(|e| LedgerError::Policy(e.to_string()))
        };
        let orgs = names
            .iter()
            .map(|name| {
                Ok(Org {
                    name: name.clone(),
                    peer: endorser(signer(name, Role::Peer)?)?,
                    admin: keys.signer(name, Role::Admin).cloned(),
                    client: keys.signer(name, Role::Client).cloned(),
                })
            })
            .collect::<Result<Vec<Org>, LedgerError>>()?;
        Ok(Ledger {
            dir: dir.to_path_buf(),
            msp,
            world,
            orderer,
            validator,
            hub,
            traces,
            orgs,
            genesis: network,
            channel: config.endorser.channel.clone(),
            orderer_config: config.orderer.clone(),
            orderer_elsewhere,
            proposal_bytes_max: config.endorser.proposal_bytes_max,
        })
    }

    /// The identities the ledger trusts now: the network's CAs and revocations as the
    /// definition in force has them. A server checks its readers' certificates with it.
    pub fn msp(&self) -> &Arc<Msp> {
        &self.msp
    }

    /// Whether the orderer takes transactions in batches (one in another process):
    /// whether submits are worth queuing together ([`Ledger::submit_checked`]).
    pub fn submits_in_batches(&self) -> bool {
        self.orderer.submits_in_batches()
    }

    /// What the peer's store has read since it opened: records met by scans and lookups,
    /// and of those, reads of transactions' bytes. What calls cost, counted.
    pub fn reads(&self) -> StoreReads {
        let store = self.world.store();
        StoreReads {
            records: store.records_read(),
            transactions: store.transactions_read(),
        }
    }

    /// The last seq durable on this peer: every transaction up to it is committed.
    pub fn durable_height(&self) -> Seq {
        self.world.durable_height()
    }

    /// A consistent view of the state as of the last validated transaction; it keeps
    /// answering as of that height however far the ledger moves on.
    pub fn snapshot(&self) -> Snapshot {
        self.world.snapshot()
    }

    /// The changes to `key` in `namespace`, newest first: at most `limit`, from before
    /// seq `before` if given.
    pub fn key_history(
        &self,
        namespace: &str,
        key: &[u8],
        before: Option<Seq>,
        limit: usize,
    ) -> Result<Vec<HistoryEntry>, LedgerError> {
        Ok(self.world.store().history(namespace, key, before, limit)?)
    }

    /// The sealed block `number`'s seal record, once committed here.
    pub fn seal(&self, number: BlockNumber) -> Result<Option<SealRecord>, LedgerError> {
        Ok(self.world.store().seal(number)?)
    }

    /// Up to `limit` committed seal records from block `from` on.
    pub fn seals(&self, from: BlockNumber, limit: usize) -> Result<Vec<SealRecord>, LedgerError> {
        Ok(self.world.store().seals(from, limit)?)
    }

    /// The block that seals `seq`, once its seal is committed here.
    pub fn block_of(&self, seq: Seq) -> Result<Option<BlockNumber>, LedgerError> {
        Ok(self.world.store().block_of(seq)?)
    }

    /// How long this node's flushes to disk take: the peer's store's, and the orderer's
    /// log's when the orderer runs in this process.
    pub fn flush_seconds(&self) -> FlushSeconds {
        FlushSeconds {
            peer: self.world.store().flush_seconds(),
            orderer: self.orderer.flush_seconds(),
        }
    }

    /// The channel served.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// The network's definition in force as of the last validated transaction: the
    /// genesis one (`network.json`) until a `_config` update commits.
    pub fn network(&self) -> Result<Arc<NetworkDefinition>, LedgerError> {
        let snapshot = self.world.snapshot();
        netconfig::current(&*snapshot.view(CONFIG_NAMESPACE), &self.genesis)
            .map(|(definition, _)| definition)
            .map_err(LedgerError::BadResult)
    }

    /// The genesis definition (`network.json`).
    pub fn network_genesis(&self) -> &NetworkDefinition {
        &self.genesis
    }

    /// [`Ledger::network`] and the version of its key (`None`: the genesis one): what
    /// the read of a `_config` update holds.
    pub fn network_version(
        &self,
    ) -> Result<(Arc<NetworkDefinition>, Option<runnel_runtime::Version>), LedgerError> {
        let snapshot = self.world.snapshot();
        netconfig::current(&*snapshot.view(CONFIG_NAMESPACE), &self.genesis)
            .map_err(LedgerError::BadResult)
    }

    /// The organisations this ledger endorses for (its peers' organisations).
    pub fn own_orgs(&self) -> Vec<String> {
        self.orgs.iter().map(|org| org.name.clone()).collect()
    }

    /// A digest of the world state at the validated height: `(height, SHA-256, keys)`
    /// ([`WorldState::state_hash`]); commits go on while it is computed.
    pub fn state_hash(&self) -> Result<crate::store::StateHash, LedgerError> {
        Ok(self.world.state_hash()?)
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
        self.orgs[0].client.as_ref().ok_or_else(|| {
            LedgerError::Identity(format!(
                "this node holds no client key of {}: submit through a client",
                self.orgs[0].name
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
        Ok(self.orgs[0]
            .peer
            .evaluate(&self.sign_own_proposal(creator, &proposal))?)
    }

    /// Runs a proposal signed elsewhere on the current state and returns its result,
    /// without a transaction. The creator and signature are checked as for an endorsement.
    pub fn evaluate_signed(&self, signed: &SignedProposal) -> Result<Vec<u8>, LedgerError> {
        Ok(self.orgs[0].peer.evaluate(signed)?)
    }

    /// Endorses a proposal signed elsewhere with the peers of the organisations this
    /// ledger acts for, as many as the policy in force needs (or those of `orgs`, when
    /// named), and returns the transaction for its creator to sign, with the
    /// organisations whose peers must still endorse it ([`Prepared::needs`]). Stamps the
    /// endorsement stages of its trace.
    pub fn endorse_signed(
        &self,
        signed: &SignedProposal,
        orgs: &[String],
    ) -> Result<Prepared, LedgerError> {
        let started_us = tx::now_us();
        let proposal = self.decode_proposal(signed)?;
        let (endorsed, needs) = self.endorse(&proposal.contract, signed, None, orgs)?;
        self.prepared(signed, &proposal.contract, endorsed, needs, started_us)
    }

    /// [`Ledger::endorse_signed`] of a proposal the first organisation's peer has checked
    /// ([`Endorser::check_batch`]).
    fn endorse_checked(
        &self,
        signed: &SignedProposal,
        checked: Result<Checked, EndorseError>,
        orgs: &[String],
    ) -> Result<Prepared, LedgerError> {
        let started_us = tx::now_us();
        let checked = checked?;
        let contract = checked.contract().to_string();
        let (endorsed, needs) = self.endorse(&contract, signed, Some(checked), orgs)?;
        self.prepared(signed, &contract, endorsed, needs, started_us)
    }

    /// The transaction of `signed` with its endorsements, for its creator to sign; stamps
    /// the endorsement stages of its trace.
    fn prepared(
        &self,
        signed: &SignedProposal,
        contract: &str,
        endorsed: Endorsements,
        needs: Vec<String>,
        started_us: u64,
    ) -> Result<Prepared, LedgerError> {
        let ended_us = tx::now_us();
        let Endorsements { reference, counted } = endorsed;
        let Some(first) = reference.or_else(|| counted.first().cloned()) else {
            return Err(LedgerError::Unendorsable(contract.to_string()));
        };
        let tx_id = first.tx_id;
        let transaction = Transaction {
            proposal: Some(signed.clone()),
            payload: first.response.payload,
            endorsements: counted
                .into_iter()
                .filter_map(|e| e.response.endorsement)
                .collect(),
        };
        self.traces.mark(tx_id, Stage::EndorseStart, started_us);
        self.traces.mark(tx_id, Stage::EndorseEnd, ended_us);
        Ok(Prepared {
            tx_id,
            transaction,
            result: first.result,
            needs,
        })
    }

    /// Orders an encoded `SignedTransaction` assembled and signed elsewhere; returns its
    /// id and seq once it has one. Its status follows ([`Ledger::status`],
    /// [`Ledger::statuses`]). A transaction whose id the ledger already holds is refused
    /// ([`LedgerError::DuplicateTxId`]) instead of being ordered again.
    pub fn submit_signed(&self, signed_transaction: Vec<u8>) -> Result<(TxId, Seq), LedgerError> {
        let to_order = self.check_submit(signed_transaction)?;
        self.submit_checked(vec![to_order])
            .pop()
            .unwrap_or(Err(LedgerError::Order(OrderError::Closed)))
    }

    /// What a `Submit` is checked for before it queues: its size, shape and id (not
    /// one the ledger holds already) and, when the orderer is another process, all that
    /// the orderer checks ([`crate::orderer::check`]) but the signatures of its creator
    /// and of the endorsement that vouches for it, which [`Ledger::submit_checked`]
    /// verifies for a whole batch at once, through the cache the validator reads.
    pub fn check_submit(&self, signed_transaction: Vec<u8>) -> Result<ToOrder, LedgerError> {
        let (tx_id, checked) = if self.orderer_elsewhere {
            let checked =
                crate::orderer::check(&self.orderer_config, &self.msp, &signed_transaction, true)?;
            (checked.tx_id, Some(checked))
        } else {
            (self.id_to_order(&signed_transaction)?, None)
        };
        self.new_id(tx_id)?;
        Ok(ToOrder {
            bytes: signed_transaction,
            checked,
        })
    }

    /// Orders checked transactions, in their order, each with its own answer: their
    /// signatures left to check verified as one batch (a transaction whose signatures
    /// fail is refused alone), the others handed to the orderer together
    /// ([`Orderer::submit_batch`]).
    pub fn submit_checked(&self, to_order: Vec<ToOrder>) -> Vec<Result<(TxId, Seq), LedgerError>> {
        let (bytes, checked): (Vec<Vec<u8>>, Vec<Option<crate::orderer::Checked>>) = to_order
            .into_iter()
            .map(|to_order| (to_order.bytes, to_order.checked))
            .unzip();
        let to_verify: Vec<_> = checked.iter().flatten().cloned().map(Ok).collect();
        let mut verified = crate::orderer::verify_checked(&self.msp, to_verify).into_iter();
        let mut answers: Vec<Option<Result<(TxId, Seq), LedgerError>>> =
            Vec::with_capacity(bytes.len());
        let mut batch = Vec::with_capacity(bytes.len());
        for (bytes, checked) in bytes.into_iter().zip(checked) {
            let verdict = match checked {
                Some(_) => verified
                    .next()
                    .unwrap_or(Err(OrderError::Closed))
                    .map(|_| ()),
                None => Ok(()),
            };
            match verdict {
                Ok(()) => {
                    batch.push(bytes);
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error.into()))),
            }
        }
        let mut ordered = self.orderer.submit_batch(batch).into_iter();
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    let ordered = ordered.next().unwrap_or(Err(OrderError::Closed))?;
                    self.mark_ordered(&ordered);
                    Ok((ordered.tx_id, ordered.seq))
                })
            })
            .collect()
    }

    /// Endorses or evaluates each proposal ([`Ledger::endorse_signed`],
    /// [`Ledger::evaluate_signed`]), checking each once and verifying all their creator
    /// signatures as one batch first. The answers come in the order of `calls`, each
    /// computed as the iterator reaches it.
    pub fn run_proposals(
        &self,
        calls: Vec<ProposalCall>,
    ) -> impl Iterator<Item = ProposalAnswer> + '_ {
        let (kinds, signed): (Vec<Option<Vec<String>>>, Vec<SignedProposal>) = calls
            .into_iter()
            .map(|call| match call {
                ProposalCall::Endorse(signed, orgs) => (Some(orgs), signed),
                ProposalCall::Evaluate(signed) => (None, signed),
            })
            .unzip();
        let peer = &self.orgs[0].peer;
        let checked = peer.check_batch(&signed);
        signed
            .into_iter()
            .zip(kinds)
            .zip(checked)
            .map(move |((signed, endorse), checked)| {
                if let Some(orgs) = endorse {
                    ProposalAnswer::Endorsed(self.endorse_checked(&signed, checked, &orgs))
                } else {
                    ProposalAnswer::Evaluated(
                        checked
                            .and_then(|checked| peer.evaluate_checked(&checked))
                            .map_err(LedgerError::from),
                    )
                }
            })
    }

    /// [`Ledger::submit_signed`] for several transactions, in their order, each with its
    /// own answer; an orderer in this process admits them as one batch
    /// ([`Orderer::submit_batch`]).
    pub fn submit_signed_batch(
        &self,
        signed_transactions: Vec<Vec<u8>>,
    ) -> Vec<Result<(TxId, Seq), LedgerError>> {
        let mut answers: Vec<Option<Result<(TxId, Seq), LedgerError>>> =
            Vec::with_capacity(signed_transactions.len());
        let mut to_order = Vec::with_capacity(signed_transactions.len());
        for signed_transaction in signed_transactions {
            match self.check_submit(signed_transaction) {
                Ok(checked) => {
                    to_order.push(checked);
                    answers.push(None);
                }
                Err(error) => answers.push(Some(Err(error))),
            }
        }
        let mut ordered = self.submit_checked(to_order).into_iter();
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    ordered
                        .next()
                        .unwrap_or(Err(LedgerError::Order(OrderError::Closed)))
                })
            })
            .collect()
    }

    /// Refuses an id the ledger already holds.
    fn new_id(&self, tx_id: TxId) -> Result<(), LedgerError> {
        match self.world.tx(&tx_id)? {
            Some(record) => Err(LedgerError::DuplicateTxId {
                tx_id,
                seq: record.seq,
            }),
            None => Ok(()),
        }
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

    /// The transaction at `seq`, validated (staged) or durable.
    pub fn transaction_at(&self, seq: Seq) -> Result<Option<StoredTx>, LedgerError> {
        match self.world.transaction(seq)? {
            Some(tx) => self.stored(tx).map(Some),
            None => Ok(None),
        }
    }

    /// Up to `limit` durable transactions from seq `from` on, in seq order.
    pub fn committed_transactions(
        &self,
        from: Seq,
        limit: usize,
    ) -> Result<Vec<StoredTx>, LedgerError> {
        self.world
            .store()
            .transactions(from, limit)?
            .into_iter()
            .map(|tx| self.stored(tx))
            .collect()
    }

    /// Up to `limit` events that `contract` emitted in committed transactions, from the
    /// one at `from` on, in stream order, and the durable height they were read up to:
    /// every event of `contract` before that height's end and from `from` on is there,
    /// unless `limit` were returned. One range scan of the store's event index.
    pub fn committed_events(
        &self,
        contract: &str,
        from: EventAt,
        limit: usize,
    ) -> Result<(Vec<StoredEvent>, Seq), LedgerError> {
        let through = self.durable_height();
        let events = self.world.store().events(contract, from, through, limit)?;
        Ok((events, through))
    }

    /// The transactions of a committed block, without their bytes: `(seq, id, code)` in
    /// seq order, up to `limit` of them from `from` on. Each costs a read of its id and
    /// one of its record, however large its bytes.
    pub fn committed_tx_list(
        &self,
        from: Seq,
        limit: usize,
    ) -> Result<Vec<(Seq, TxId, ValidationCode)>, LedgerError> {
        let durable = self.durable_height();
        let mut out = Vec::new();
        for (seq, tx_id) in self.world.store().tx_ids(from, limit)? {
            if seq > durable {
                break;
            }
            let code = self.code_at(seq, &tx_id)?;
            out.push((seq, tx_id, code));
        }
        Ok(out)
    }

    /// Up to `limit` contract definitions in force, by name, after `start_after`.
    pub fn contracts(
        &self,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<ContractDefinition>, LedgerError> {
        let start = if start_after.is_empty() {
            lifecycle::DEFINITION_PREFIX.to_vec()
        } else {
            // The first key after `start_after`'s.
            let mut key = lifecycle::definition_key(start_after);
            key.push(0);
            key
        };
        let mut end = lifecycle::DEFINITION_PREFIX.to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let entries = self
            .world
            .snapshot()
            .scan(LIFECYCLE_NAMESPACE, &start, Some(&end), limit)?;
        entries
            .into_iter()
            .map(|(key, stored)| {
                ContractDefinition::decode(stored.value.as_slice()).map_err(|e| {
                    LedgerError::BadResult(format!(
                        "stored definition {}: {e}",
                        String::from_utf8_lossy(&key)
                    ))
                })
            })
            .collect()
    }

    /// Contract `name`'s approvals recorded on the ledger, `(sequence, org, definition
    /// hash)` by sequence then org, at most `limit`.
    pub fn approvals(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<Vec<(u64, String, Vec<u8>)>, LedgerError> {
        let start = lifecycle::approvals_prefix(name);
        let mut end = start.clone();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let entries = self
            .world
            .snapshot()
            .scan(LIFECYCLE_NAMESPACE, &start, Some(&end), limit)?;
        Ok(entries
            .into_iter()
            .filter_map(|(key, stored)| {
                let (_, sequence, org) = lifecycle::parse_approval_key(&key)?;
                Some((sequence, org.to_string(), stored.value))
            })
            .collect())
    }

    /// The definition of `name` in force, if deployed.
    pub fn definition(&self, name: &str) -> Result<Option<ContractDefinition>, LedgerError> {
        let snapshot = self.world.snapshot();
        lifecycle::read_definition(&*snapshot.view(LIFECYCLE_NAMESPACE), name)
            .map(|found| found.map(|(definition, _)| definition))
            .map_err(|e| LedgerError::BadResult(e.to_string()))
    }

    /// Deploys a contract (`policy` empty: a majority of the organisations' peers),
    /// endorsed by as many organisations' admins as the lifecycle policy needs.
    pub fn deploy(
        &self,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        self.define(FN_DEPLOY, name, version, code, policy)
    }

    /// Upgrades a deployed contract to new code, version and policy.
    pub fn upgrade(
        &self,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        self.define(FN_UPGRADE, name, version, code, policy)
    }

    /// Approves the definition for as many organisations as the lifecycle policy needs,
    /// each approval a transaction signed by that organisation's admin, then commits it
    /// as the first organisation's admin (whose commit is its own organisation's
    /// approval). Only a ledger holding those admins' keys can: one process standing
    /// for every organisation, or a one-organisation network.
    fn define(
        &self,
        function: &str,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        let request = DeployRequest {
            name: name.to_string(),
            version: version.to_string(),
            policy: policy.to_string(),
            code: code.to_vec(),
            ..DeployRequest::default()
        };
        let network = self.network()?;
        let orgs = network.org_names();
        let approvals = Policy::parse(&network.lifecycle_policy, &orgs)
            .map_err(|e| LedgerError::Policy(e.to_string()))?;
        let first = &self.orgs[0];
        let committer = first.admin.as_ref().ok_or_else(|| {
            LedgerError::Identity(format!(
                "this node holds no admin key of {}: an organisation's admin approves and \
                 commits contract definitions",
                first.name
            ))
        })?;
        let mut approving = vec![PolicyEndorser::new(self.orgs[0].name.clone(), Role::Admin)];
        for org in &self.orgs[1..] {
            if approvals.is_satisfied_by(&approving) {
                break;
            }
            let Some(approver) = org.admin.as_ref() else {
                continue;
            };
            self.lifecycle_call(approver, FN_APPROVE, &request)?;
            approving.push(PolicyEndorser::new(org.name.clone(), Role::Admin));
        }
        let committed = self.lifecycle_call(committer, function, &request)?;
        ContractDefinition::decode(committed.result.as_slice())
            .map_err(|e| LedgerError::BadResult(format!("contract definition: {e}")))
    }

    /// Runs `_lifecycle.function(request)` as a transaction signed by `admin`.
    fn lifecycle_call(
        &self,
        admin: &Signer,
        function: &str,
        request: &DeployRequest,
    ) -> Result<Committed, LedgerError> {
        let proposal = tx::new_proposal(
            &self.channel,
            LIFECYCLE_NAMESPACE,
            function,
            vec![request.encode_to_vec()],
            admin,
        );
        let signed = self.sign_own_proposal(admin, &proposal);
        self.run(admin, &signed)
    }

    /// Endorses, orders and waits for one signed proposal.
    fn run(&self, creator: &Signer, signed: &SignedProposal) -> Result<Committed, LedgerError> {
        let Prepared {
            tx_id,
            transaction,
            result,
            needs,
        } = self.endorse_signed(signed, &[])?;
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

    /// The size check and decoding an endorser does first, to learn the contract (and
    /// so the policy) before any endorser runs.
    fn decode_proposal(&self, signed: &SignedProposal) -> Result<Proposal, EndorseError> {
        let size_bytes = signed.proposal.len() + signed.signature.len();
        if size_bytes > self.proposal_bytes_max {
            return Err(EndorseError::TooLarge {
                size_bytes,
                limit_bytes: self.proposal_bytes_max,
            });
        }
        Proposal::decode(signed.proposal.as_slice())
            .map_err(|e| EndorseError::Malformed(e.to_string()))
    }

    /// The id of a signed transaction about to be ordered, after the orderer's size
    /// limit (the orderer checks everything else).
    fn id_to_order(&self, signed_transaction: &[u8]) -> Result<TxId, OrderError> {
        let limit_bytes = self.orderer_config.transaction_bytes_max;
        if signed_transaction.len() > limit_bytes {
            return Err(OrderError::TooLarge {
                size_bytes: signed_transaction.len(),
                limit_bytes,
            });
        }
        transaction_id(signed_transaction).map_err(|e| OrderError::Malformed(e.to_string()))
    }

    /// A stored transaction with its id, its code from the tx index and the orderer's
    /// timestamp of its seq.
    fn stored(&self, tx: TxBytes) -> Result<StoredTx, LedgerError> {
        let TxBytes {
            seq,
            timestamp_ms,
            bytes,
        } = tx;
        let tx_id = transaction_id(&bytes).unwrap_or_else(|_| TxId(tx::sha256(&bytes)));
        let code = self.code_at(seq, &tx_id)?;
        Ok(StoredTx {
            seq,
            tx_id,
            code,
            timestamp_ms,
            bytes,
        })
    }

    /// The code of the transaction `tx_id` at `seq`, from the id's record: the first
    /// transaction of an id has its own; a later one is a `DUPLICATE_TXID`.
    fn code_at(&self, seq: Seq, tx_id: &TxId) -> Result<ValidationCode, LedgerError> {
        let record = self.world.tx(tx_id)?.ok_or_else(|| {
            LedgerError::BadResult(format!("transaction {tx_id} at seq {seq} has no record"))
        })?;
        Ok(if record.seq == seq {
            record.code
        } else {
            ValidationCode::DuplicateTxid
        })
    }

    fn closed(&self, tx_id: TxId) -> LedgerError {
        match self.validator.failure() {
            Some(error) => error.into(),
            None => LedgerError::Closed(tx_id),
        }
    }

    /// Endorsements from the peers of the organisations this ledger acts for, added in
    /// order until the policy in force is satisfied, and the other organisations whose
    /// peers must endorse too (the fewest, [`Policy::orgs_to_ask`]). With `orgs` named,
    /// those of them this ledger acts for endorse, and the others are needed.
    ///
    /// `checked`, if given, is `signed` as the first organisation's peer checked it: the
    /// first endorser (every endorser shares its configuration and MSP) endorses it
    /// without checking it again. The first endorsement runs whatever is asked: it
    /// reports a contract's own error or a missing contract, and its payload is the one
    /// every other endorsement must match.
    fn endorse(
        &self,
        contract: &str,
        signed: &SignedProposal,
        checked: Option<Checked>,
        orgs: &[String],
    ) -> Result<(Endorsements, Vec<String>), LedgerError> {
        let wanted = |org: &str| orgs.is_empty() || orgs.iter().any(|o| o == org);
        let first_org = self
            .orgs
            .iter()
            .find(|org| wanted(&org.name))
            .unwrap_or(&self.orgs[0]);
        let first = match checked {
            Some(checked) => first_org.peer.endorse_checked(checked)?,
            None => first_org.peer.endorse(signed)?,
        };
        let mut endorsements = Endorsements::default();
        let mut have = Vec::new();
        if wanted(&first_org.name) {
            endorsements.counted.push(first.clone());
            have.push(PolicyEndorser::new(first_org.name.clone(), Role::Peer));
        } else {
            endorsements.reference = Some(first.clone());
        }
        let local = |name: &str| self.orgs.iter().any(|org| org.name == name);
        if !orgs.is_empty() {
            for org in &self.orgs {
                if org.name != first_org.name && wanted(&org.name) {
                    endorsements.counted.push(org.peer.endorse(signed)?);
                }
            }
            let needs = orgs.iter().filter(|org| !local(org)).cloned().collect();
            return Ok((endorsements, needs));
        }
        let Ok(policy) = self.policy_of(contract, signed, &first) else {
            // Not deployed, or a definition no policy can be read from: the validator
            // decides; the first endorsement is all there is to give.
            return Ok((endorsements, Vec::new()));
        };
        for org in &self.orgs {
            if policy.is_satisfied_by(&have) {
                return Ok((endorsements, Vec::new()));
            }
            if org.name == first_org.name {
                continue;
            }
            endorsements.counted.push(org.peer.endorse(signed)?);
            have.push(PolicyEndorser::new(org.name.clone(), Role::Peer));
        }
        let others: Vec<String> = self
            .msp
            .orgs()
            .into_iter()
            .filter(|org| !local(org))
            .collect();
        match policy.orgs_to_ask(&have, &others) {
            Some(needs) => Ok((endorsements, needs)),
            None => Err(LedgerError::Unendorsable(contract.to_string())),
        }
    }

    /// The endorsement policy a transaction of `signed` must satisfy, as of the state
    /// now: the contract's; for `_lifecycle`, the one its call needs
    /// ([`lifecycle::transaction_policy`]), read from `first`'s payload.
    fn policy_of(
        &self,
        contract: &str,
        signed: &SignedProposal,
        first: &Endorsed,
    ) -> Result<Policy, LedgerError> {
        let orgs = self.msp.orgs();
        if contract == LIFECYCLE_NAMESPACE {
            let proposal = self.decode_proposal(signed)?;
            let creator = self
                .msp
                .identify(&proposal.creator)
                .map_err(|e| LedgerError::Policy(e.to_string()))?;
            let payload = crate::proto::ResponsePayload::decode(first.response.payload.as_slice())
                .map_err(|e| LedgerError::BadResult(e.to_string()))?;
            return lifecycle::transaction_policy(
                &proposal.function,
                &creator.org,
                &payload.rwsets,
                &orgs,
            )
            .map_err(|e| LedgerError::Policy(e.to_string()));
        }
        let snapshot = self.world.snapshot();
        lifecycle::endorsement_policy(&*snapshot.view(LIFECYCLE_NAMESPACE), contract, &orgs)
            .map_err(|e| LedgerError::Policy(e.to_string()))
    }

    /// A transaction's record (seq, validation code, orderer time) and its block once
    /// sealed.
    pub fn transaction(
        &self,
        tx_id: &TxId,
    ) -> Result<Option<(TxRecord, Option<BlockNumber>)>, LedgerError> {
        let Some(record) = self.world.tx(tx_id)? else {
            return Ok(None);
        };
        let block = self.world.store().block_of(record.seq)?;
        Ok(Some((record, block)))
    }

    /// Proof that a sealed transaction is in its block: the block's signed seal, the
    /// transaction's bytes, and the Merkle audit path from its leaf (the bytes with the
    /// orderer's timestamp, which the proof carries) to the seal's root, built from the
    /// leaves the store keeps beside each transaction's place: of the block, only the
    /// proven transaction's bytes are read. `None` while the transaction is unknown or
    /// not yet sealed.
    pub fn prove(&self, tx_id: &TxId) -> Result<Option<Proof>, LedgerError> {
        let Some((record, Some(number))) = self.transaction(tx_id)? else {
            return Ok(None);
        };
        let store = self.world.store();
        let Some(seal) = store.seal(number)? else {
            return Ok(None);
        };
        let corrupt =
            |e: crate::block::BlockError| LedgerError::BadResult(format!("block {number}: {e}"));
        let sealed = crate::block::decode_signed_seal(&seal.bytes).map_err(corrupt)?;
        // The leaves stored with the block's places: the proven transaction's bytes are
        // the only ones read.
        let leaves = store.leaves(seal.first, seal.last)?;
        let proven = store.transaction(record.seq)?.ok_or_else(|| {
            LedgerError::BadResult(format!("block {number}: seq {} is not stored", record.seq))
        })?;
        let proof = crate::block::prove(&sealed, &leaves, proven.seq, proven.timestamp_ms)
            .map_err(corrupt)?;
        Ok(Some(Proof {
            seal: sealed,
            transaction: proven.bytes,
            proof,
        }))
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

/// Histograms of a node's flushes to disk, in seconds.
#[derive(Debug, Clone)]
pub struct FlushSeconds {
    /// Each commit's flush of the peer's store.
    pub peer: Arc<Histogram>,
    /// Each flush of the orderer's log, when the orderer runs in this process.
    pub orderer: Option<Arc<Histogram>>,
}

/// What a peer's store has read ([`Ledger::reads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreReads {
    /// Records met by the scans and lookups of history, events, transactions and ids,
    /// and reads of the transactions' file.
    pub records: u64,
    /// How many of `records` were reads of transactions' bytes.
    pub transactions: u64,
}

/// The id of an encoded `SignedTransaction`, decoded as every stage decodes it.
fn transaction_id(signed_transaction: &[u8]) -> Result<TxId, prost::DecodeError> {
    tx::decode_transaction(signed_transaction).map(|(_, _, proposal)| tx::tx_id(&proposal))
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
