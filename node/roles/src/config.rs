//! The node's configuration file, `runnel.toml` in its data directory.
//!
//! Every setting has a default, so an empty file (or none) is a working one-org dev node.
//! The command line overrides the file, and `RUNNEL_*` environment variables stand for
//! the command line's flags (see `runnel start --help`). [`TEMPLATE`] is what
//! `runnel init` writes: every setting, commented.
//!
//! The sections mirror `LedgerConfig` and `ApiConfig` by hand on purpose: the file is
//! the operators' interface, with its own names, units and defaults checked by a test
//! against the libraries' ([`NodeConfig::default`] is built from theirs), so a change
//! inside a library never silently changes what a file means.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use runnel_ledger::identity::{TLS_SERVER_CERT_FILE, TLS_SERVER_KEY_FILE};
use runnel_ledger::ledger::LedgerConfig;
use runnel_ledger::orderer::{OrderingMode, SEAL_TXS_MAX};
use runnel_ledger::records::SyncMode;
use runnel_server::ReadAccess;
use runnel_server::ops::{LogFormat, OpsAccess};
use runnel_server::sched::Scheduling;
use runnel_server::{ApiConfig, ClientAuth, TlsConfig};

/// The file's name in a data directory.
pub const FILE_NAME: &str = "runnel.toml";

/// The node's settings (see the module doc and [`TEMPLATE`]).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// What this process runs: every role, or the orderer or a peer alone.
    pub node: NodeSection,
    /// The network: channel and organisations.
    pub network: NetworkSection,
    /// The API's address and limits.
    pub api: ApiSection,
    /// How transactions are ordered and sealed.
    pub ordering: OrderingSection,
    /// The validator pipeline.
    pub validator: ValidatorSection,
    /// How commits reach the disk.
    pub store: StoreSection,
    /// Logs.
    pub log: LogSection,
    /// The web explorer served by the node.
    pub explorer: ExplorerSection,
}

/// `[node]`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeSection {
    /// The roles this process runs.
    pub role: NodeRole,
    /// The organisation it acts for (its orderer or peer identity); unset: the first.
    pub org: Option<String>,
    /// How the process's threads are scheduled (see [`runnel_server::sched`]).
    pub scheduling: Scheduling,
}

/// The roles a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// Orderer and peer in one process: the embedded ledger (a dev node, a one-node
    /// network).
    #[default]
    All,
    /// The ordering service alone: peers connect to it (`Ordering` service).
    Orderer,
    /// A peer alone: endorses, validates and serves clients, ordering through
    /// `ordering.endpoint`.
    Peer,
}

/// `[network]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkSection {
    /// The channel served.
    pub channel: String,
    /// Organisations created by `runnel init` (ignored once identities exist).
    pub orgs: Vec<String>,
    /// How far a proposal's timestamp may lie from the orderer's clock, in seconds.
    pub proposal_window_s: u64,
}

/// `[api]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiSection {
    /// gRPC, gRPC-web, metrics and the explorer, on one address.
    pub listen: SocketAddr,
    /// Largest message received or sent, in bytes.
    pub message_bytes_max: usize,
    /// Most concurrent calls on one HTTP/2 connection.
    pub connection_streams_max: u32,
    /// Most live server streams at once.
    pub streams_max: usize,
    /// Most live server streams one connection holds at once.
    pub streams_per_connection_max: usize,
    /// Most live server streams one reader holds at once, over all its connections.
    pub streams_per_identity_max: usize,
    /// Most connections open at once.
    pub connections_max: usize,
    /// Most connections open at once from one address.
    pub connections_per_address_max: usize,
    /// Connections kept for the network's peers and orderers, beyond `connections_max`.
    pub member_connections_max: usize,
    /// How long a connection may have no call open before it is closed, in milliseconds.
    pub connection_idle_timeout_ms: u64,
    /// Most `CommitStatus` calls waiting at once.
    pub commit_waits_max: usize,
    /// Most `CommitStatus` calls one connection has waiting at once.
    pub commit_waits_per_connection_max: usize,
    /// Most `CommitStatus` calls one reader has waiting at once, over all its connections.
    pub commit_waits_per_identity_max: usize,
    /// The longest a `CommitStatus` call waits, in seconds.
    pub commit_wait_max_s: u64,
    /// Most `Endorse` and `Evaluate` calls, and as many `Submit` calls, queued for the
    /// ledger at once.
    pub admission_queue_max: usize,
    /// Most bytes of proposals, and as many of transactions, queued for the ledger at
    /// once.
    pub admission_queue_bytes_max: usize,
    /// Web origins whose pages may call the API from a browser (CORS); `"*"`: any.
    pub cors_origins: Vec<String>,
    /// Who may read: `"members"` (identities of the network) or `"open"` (anyone).
    pub read_access: ReadAccess,
    /// Who may read `/metrics` and the heights and peers of `GetNetworkInfo`:
    /// `"members"` or `"open"`; unset: as `read_access` says.
    pub ops_access: Option<OpsAccess>,
    /// TLS on the API's port.
    pub tls: TlsSection,
}

impl ApiSection {
    /// The bounds on connections these settings give (an orderer keeps to them too).
    pub fn connection_limits(&self) -> runnel_server::connections::ConnectionLimits {
        runnel_server::connections::ConnectionLimits {
            connections_max: self.connections_max,
            connections_per_address_max: self.connections_per_address_max,
            member_connections_max: self.member_connections_max,
            idle_timeout: Duration::from_millis(self.connection_idle_timeout_ms.max(1)),
        }
    }
}

/// `[api.tls]`: TLS on the API's port. Paths are relative to the node's directory.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsSection {
    /// Serve TLS only (https); false: plain HTTP.
    pub enabled: bool,
    /// The certificate chain, PEM; unset: the first organisation's TLS server
    /// certificate from `runnel init` (`identities/<org>/tls/server.pem`).
    pub cert: Option<PathBuf>,
    /// The private key, PEM; unset: `identities/<org>/tls/server.key` of the first
    /// organisation.
    pub key: Option<PathBuf>,
    /// `"none"`, `"optional"` or `"required"`: whether clients present certificates.
    pub client_auth: ClientAuth,
    /// The CA certificates (PEM, one or more) client certificates must chain to.
    pub client_ca: Option<PathBuf>,
}

/// `[ordering]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrderingSection {
    /// `"streaming"` (each transaction delivered at once) or `"blocks"` (Fabric-style).
    pub mode: Mode,
    /// A block is sealed when it holds this many transactions (1 to `SEAL_TXS_MAX`)...
    pub seal_max_txs: usize,
    /// ... or when its first transaction has waited this long, in milliseconds.
    pub seal_max_delay_ms: u64,
    /// Most transaction ids the orderer remembers to refuse replays.
    pub replay_ids_max: usize,
    /// Bytes of transactions one submitter may have admitted per second, sustained (twice
    /// that at once, and one transaction of any size once its share is full); past it
    /// the orderer refuses its transactions with `SUBMITTER_QUOTA_EXCEEDED`.
    pub submitter_bytes_per_s_max: u64,
    /// An orderer of a Raft cluster: entries its Raft log keeps behind the point it is
    /// compacted to (compacted each time twice this many are applied past the last time).
    pub raft_log_entries_kept: u64,
    /// The orderer a peer orders through, `http://host:port` (role `peer` only).
    pub endpoint: Option<String>,
}

/// The ordering mode, as written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// [`OrderingMode::Streaming`].
    Streaming,
    /// [`OrderingMode::Blocks`].
    Blocks,
}

/// `[validator]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidatorSection {
    /// Stage-1 workers (signature checks); 0: one when this node runs its orderer, one
    /// per core when it orders through another process.
    pub workers: usize,
    /// Items each stage's input holds before the one before it waits.
    pub queue: usize,
    /// Most transactions one group commit makes durable; 0: no bound (adaptive group
    /// commit), 1: a flush per transaction (group commit off, for comparison).
    pub commit_txs_max: usize,
}

/// `[store]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    /// How each flush of the orderer's log and the peer's store makes them durable.
    pub sync: Sync,
}

/// `store.sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Sync {
    /// [`SyncMode::Data`]: `sync_file_range`.
    Data,
    /// [`SyncMode::Full`]: `fdatasync`.
    Full,
}

impl From<Sync> for SyncMode {
    fn from(sync: Sync) -> SyncMode {
        match sync {
            Sync::Data => SyncMode::Data,
            Sync::Full => SyncMode::Full,
        }
    }
}

impl From<SyncMode> for Sync {
    fn from(mode: SyncMode) -> Sync {
        match mode {
            SyncMode::Data => Sync::Data,
            SyncMode::Full => Sync::Full,
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogSection {
    /// A filter in `RUST_LOG` syntax, e.g. `"info"` or `"info,runnel_server=debug"`.
    /// Changeable while running: `PUT /log/level` from the node's host.
    pub level: String,
    /// `"text"` or `"json"` (one object per line).
    pub format: LogFormat,
}

/// `[explorer]`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExplorerSection {
    /// The explorer's built files (`explorer/dist`); none: the node serves no explorer.
    pub dir: Option<PathBuf>,
}

impl Default for NodeConfig {
    fn default() -> Self {
        let ledger = LedgerConfig::default();
        let api = ApiConfig::default();
        NodeConfig {
            node: NodeSection::default(),
            network: NetworkSection {
                channel: ledger.orderer.channel.clone(),
                orgs: ledger.orgs.clone(),
                proposal_window_s: ledger.validator.proposal_window.as_secs(),
            },
            api: ApiSection {
                listen: api.listen,
                message_bytes_max: api.message_bytes_max,
                connection_streams_max: api.connection_streams_max,
                streams_max: api.streams_max,
                streams_per_connection_max: api.streams_per_connection_max,
                streams_per_identity_max: api.streams_per_identity_max,
                connections_max: api.connections.connections_max,
                connections_per_address_max: api.connections.connections_per_address_max,
                member_connections_max: api.connections.member_connections_max,
                connection_idle_timeout_ms: u64::try_from(api.connections.idle_timeout.as_millis())
                    .unwrap_or(u64::MAX),
                commit_waits_max: api.commit_waits_max,
                commit_waits_per_connection_max: api.commit_waits_per_connection_max,
                commit_waits_per_identity_max: api.commit_waits_per_identity_max,
                commit_wait_max_s: api.commit_wait_max.as_secs(),
                admission_queue_max: api.admission_queue_max,
                admission_queue_bytes_max: api.admission_queue_bytes_max,
                cors_origins: api.cors_origins.clone(),
                read_access: api.read_access,
                ops_access: None,
                tls: TlsSection::default(),
            },
            ordering: OrderingSection {
                mode: Mode::Streaming,
                seal_max_txs: ledger.orderer.seal_max_txs,
                seal_max_delay_ms: ledger.orderer.seal_max_delay.as_millis() as u64,
                replay_ids_max: ledger.orderer.replay_ids_max,
                submitter_bytes_per_s_max: ledger.orderer.submitter_bytes_per_s_max,
                raft_log_entries_kept: runnel_orderer::raft::LOG_ENTRIES_KEPT,
                endpoint: None,
            },
            validator: ValidatorSection {
                workers: 0,
                queue: ledger.validator.queue,
                commit_txs_max: ledger.validator.commit_txs_max,
            },
            store: StoreSection {
                sync: ledger.sync.into(),
            },
            log: LogSection {
                level: "info".to_string(),
                format: LogFormat::Text,
            },
            explorer: ExplorerSection::default(),
        }
    }
}

/// Each section's defaults are the whole file's.
macro_rules! section_defaults {
    ($($section:ident: $field:ident),* $(,)?) => {$(
        impl Default for $section {
            fn default() -> Self {
                NodeConfig::default().$field
            }
        }
    )*};
}

section_defaults!(
    NetworkSection: network,
    ApiSection: api,
    OrderingSection: ordering,
    ValidatorSection: validator,
    StoreSection: store,
    LogSection: log,
);

impl NodeConfig {
    /// Reads `path`; a missing file is the defaults.
    pub fn load(path: &Path) -> Result<NodeConfig, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => NodeConfig::parse(&text).map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(NodeConfig::default()),
            Err(e) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            }),
        }
    }

    /// Parses a file's text; the error says where and why.
    pub fn parse(text: &str) -> Result<NodeConfig, String> {
        let config: NodeConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if config.network.orgs.is_empty() {
            return Err("network.orgs: at least one organisation".into());
        }
        if !(1..=SEAL_TXS_MAX).contains(&config.ordering.seal_max_txs) {
            return Err(format!("ordering.seal_max_txs: 1 to {SEAL_TXS_MAX}"));
        }
        if config.ordering.raft_log_entries_kept == 0 {
            return Err("ordering.raft_log_entries_kept: at least 1".into());
        }
        config.check_roles()?;
        Ok(config)
    }

    /// The organisation this node acts for: `node.org`, or the network's first.
    pub fn org(&self) -> String {
        self.node
            .org
            .clone()
            .unwrap_or_else(|| self.network.orgs[0].clone())
    }

    /// Checks that the roles have what they need (also after flags changed them).
    pub fn check_roles(&self) -> Result<(), String> {
        if self.node.role == NodeRole::Peer && self.ordering.endpoint.is_none() {
            return Err(
                "ordering.endpoint: a peer needs its orderer's address (e.g. \
                 \"http://127.0.0.1:7050\", or --orderer)"
                    .into(),
            );
        }
        if let Some(org) = &self.node.org
            && !self.network.orgs.contains(org)
        {
            return Err(format!(
                "node.org: {org} is not one of network.orgs ({})",
                self.network.orgs.join(", ")
            ));
        }
        Ok(())
    }

    /// The ledger's configuration: these settings over the defaults.
    pub fn ledger_config(&self) -> LedgerConfig {
        let mut ledger = LedgerConfig {
            orgs: self.network.orgs.clone(),
            org: self.node.org.clone(),
            ..LedgerConfig::default()
        };
        ledger.orderer.channel = self.network.channel.clone();
        ledger.validator.channel = self.network.channel.clone();
        ledger.endorser.channel = self.network.channel.clone();
        let window = Duration::from_secs(self.network.proposal_window_s);
        ledger.orderer.proposal_window = window;
        ledger.validator.proposal_window = window;
        ledger.endorser.proposal_window = window;
        ledger.orderer.mode = match self.ordering.mode {
            Mode::Streaming => OrderingMode::Streaming,
            Mode::Blocks => OrderingMode::Blocks,
        };
        ledger.orderer.seal_max_txs = self.ordering.seal_max_txs;
        ledger.orderer.seal_max_delay = Duration::from_millis(self.ordering.seal_max_delay_ms);
        ledger.orderer.replay_ids_max = self.ordering.replay_ids_max.max(1);
        ledger.orderer.submitter_bytes_per_s_max = self.ordering.submitter_bytes_per_s_max;
        ledger.validator.workers = self.validator.workers;
        ledger.validator.queue = self.validator.queue.max(1);
        ledger.validator.commit_txs_max = self.validator.commit_txs_max;
        ledger.sync = self.store.sync.into();
        ledger.orderer.sync = ledger.sync;
        ledger
    }

    /// The API's configuration: these settings over the defaults, with relative paths
    /// taken from `dir`, the node's directory.
    pub fn api_config(&self, dir: &Path) -> ApiConfig {
        ApiConfig {
            listen: self.api.listen,
            message_bytes_max: self.api.message_bytes_max,
            connection_streams_max: self.api.connection_streams_max,
            streams_max: self.api.streams_max,
            streams_per_connection_max: self.api.streams_per_connection_max,
            streams_per_identity_max: self.api.streams_per_identity_max,
            connections: self.api.connection_limits(),
            commit_waits_max: self.api.commit_waits_max,
            commit_waits_per_connection_max: self.api.commit_waits_per_connection_max,
            commit_waits_per_identity_max: self.api.commit_waits_per_identity_max,
            commit_wait_max: Duration::from_secs(self.api.commit_wait_max_s.max(1)),
            admission_queue_max: self.api.admission_queue_max,
            admission_queue_bytes_max: self.api.admission_queue_bytes_max,
            cors_origins: self.api.cors_origins.clone(),
            read_access: self.api.read_access,
            ops_access: self.api.ops_access,
            tls: self.tls_config(dir),
            ..ApiConfig::default()
        }
    }

    /// The API's TLS files when TLS is enabled, relative paths taken from `dir`.
    pub fn tls_config(&self, dir: &Path) -> Option<TlsConfig> {
        let tls = &self.api.tls;
        if !tls.enabled {
            return None;
        }
        let org = dir
            .join("identities")
            .join(self.node.org.as_ref().unwrap_or(&self.network.orgs[0]));
        let cert = match &tls.cert {
            Some(cert) => dir.join(cert),
            None => org.join(TLS_SERVER_CERT_FILE),
        };
        let key = match &tls.key {
            Some(key) => dir.join(key),
            None => org.join(TLS_SERVER_KEY_FILE),
        };
        Some(TlsConfig {
            client_auth: tls.client_auth,
            client_ca: tls.client_ca.as_ref().map(|ca| dir.join(ca)),
            ..TlsConfig::new(cert, key)
        })
    }
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        message: String,
    },
    /// The file is not a valid configuration.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
}

/// What `runnel init` writes: every setting at its default, commented.
pub const TEMPLATE: &str = r#"# Runnel node configuration. Every setting is optional; these are the defaults.
# Flags and RUNNEL_* environment variables override this file (see `runnel start --help`).

[node]
# The roles this process runs: "all" (orderer and peer in one process), "orderer"
# (the ordering service alone) or "peer" (a peer ordering through ordering.endpoint).
role = "all"
# The organisation this node acts for; unset: the first of network.orgs.
# org = "Org1"
# How the node's threads are scheduled: "batch" (SCHED_BATCH: a thread that wakes does
# not preempt the one running, so the pipeline's batches grow under load; a lightly
# loaded node's latency is the same) or "normal" (the system's default).
scheduling = "batch"

[network]
# The channel served.
channel = "main"
# Organisations created by `runnel init` (ignored once identities/ exists).
orgs = ["Org1"]
# How far a proposal's timestamp (the time its contract sees) may lie from the orderer's
# clock, in seconds, either way. Peers check it against the orderer's timestamp, so it
# must be the same in every node of the network.
proposal_window_s = 900

[api]
# gRPC, gRPC-web, /metrics, /healthz and the explorer, on one address.
listen = "127.0.0.1:7051"
# Largest message received or sent, in bytes.
message_bytes_max = 33554432
# Most clients' connections open at once: past it a new client's connection is closed
# once its handshake is done. Connections are pinged every 30 s and closed when a ping
# goes unanswered.
connections_max = 4096
# ... and from one address, handshakes included: past it a connection is closed at once.
connections_per_address_max = 128
# Connections kept for the network's peers and orderers (their own certificates over
# mutual TLS), beyond connections_max: no flood of other connections takes them.
member_connections_max = 256
# A connection with no call open for this long is closed (milliseconds); answering
# pings does not keep it. Clients reconnect when they call again.
connection_idle_timeout_ms = 60000
# Most concurrent calls on one HTTP/2 connection.
connection_streams_max = 256
# Most live server streams (events, deliveries, traces) at once, and on one connection:
# one client cannot hold them all.
streams_max = 1024
streams_per_connection_max = 64
# ... and that one reader holds over all its connections, when reads are for members.
streams_per_identity_max = 256
# Most CommitStatus calls (and Submit calls that wait for a status) waiting at once, and
# on one connection.
commit_waits_max = 16384
commit_waits_per_connection_max = 1024
commit_waits_per_identity_max = 4096
# The longest a CommitStatus call waits, whatever its deadline (seconds).
commit_wait_max_s = 600
# Most Endorse and Evaluate calls, and as many Submit calls, queued for the ledger at
# once; more are refused with RESOURCE_EXHAUSTED.
admission_queue_max = 4096
# ... and the most bytes of proposals, and as many of transactions, they may hold
# (256 MiB): a call that would pass it is refused the same way.
admission_queue_bytes_max = 268435456
# Web origins whose pages may call the API from a browser (CORS), e.g.
# ["https://app.example.com"]; empty: only pages this node serves (the explorer). "*"
# lets any web page call it: `runnel dev` only.
cors_origins = []
# Who may read the ledger (Query, Deliver, Trace, commit statuses and contract events):
# "members", identities of the network only, each proving itself by a client certificate
# of the network over mutual TLS (api.tls.client_auth) or by a signed read grant header
# (what the SDK and the explorer send); or "open", anyone who can reach this address
# (`runnel dev` only, or a ledger meant to be public).
read_access = "members"
# Who may read /metrics, and the heights and peers (endpoints, last errors) in
# GetNetworkInfo: "members" (as reads: a member's certificate over mutual TLS or a read
# grant; others get /metrics refused and only the channel, organisations and limits from
# GetNetworkInfo) or "open". Unset: as read_access. A scraper presents a member's
# certificate of the network.
# ops_access = "members"

[api.tls]
# Serve the API over TLS only (https): gRPC over HTTP/2, gRPC-web over HTTP/1.1 or
# HTTP/2 (ALPN h2 and http/1.1), /healthz, /metrics and the explorer. Clients trust the
# CA that issued the certificate: for the one from `runnel init`, identities/<org>/tls/ca.pem.
enabled = false
# The certificate chain and its private key, PEM; relative paths are from this file's
# directory. Unset: the first organisation's, identities/<org>/tls/server.pem and .key.
# cert = "identities/Org1/tls/server.pem"
# key = "identities/Org1/tls/server.key"
# Mutual TLS: "none", "optional" (a certificate a client presents is checked) or
# "required" (every client presents one); client certificates must chain to a CA
# certificate in client_ca (PEM, one or more concatenated).
client_auth = "none"
# client_ca = "identities/Org1/tls/ca.pem"

[ordering]
# "streaming": each transaction is delivered at once, blocks are sealed behind the
# stream; "blocks": Fabric-style, transactions are delivered in cut blocks.
mode = "streaming"
# A block is sealed when it holds this many transactions (1 to 10000)...
seal_max_txs = 500
# ... or when its first transaction has waited this long (milliseconds).
seal_max_delay_ms = 250
# Transaction ids the orderer remembers to refuse a replay (about 60 bytes each); an id
# is kept while its proposal is inside the window. Past this count the ids of the oldest
# proposals go early, and proposals dated at or before them are refused
# (TIMESTAMP_OUT_OF_WINDOW: their clients sign new ones), so no replay is ordered.
replay_ids_max = 4194304
# Bytes of transactions one submitter (by its public key) may have admitted per second,
# sustained; it may spend twice that at once, and one transaction of any size once its
# share is full. Past it the orderer refuses its transactions (SUBMITTER_QUOTA_EXCEEDED) until its
# share refills. Bounds what one identity can make every orderer and peer store.
submitter_bytes_per_s_max = 67108864
# An orderer of a Raft cluster: entries its Raft log keeps behind the point it is
# compacted to; it is compacted each time twice this many are applied past the last
# time. A member further behind is sent a snapshot and reads the stream up to it from
# another orderer.
raft_log_entries_kept = 20000
# The orderer a peer orders through (role "peer" only).
# endpoint = "http://127.0.0.1:7050"

[validator]
# Signature-checking workers; 0: one when this node runs its orderer (the orderer and
# endorsers already checked its signatures), one per core when it orders through
# another process.
workers = 0
# Most transactions one group commit makes durable (one flush); 0: no bound, each flush
# takes everything validated since the last began. 1 turns group commit off.
commit_txs_max = 0
# Items each stage's input holds before the stage before it waits.
queue = 4096

[store]
# How each flush of the orderer's log and the peer's store makes them durable:
# "full": fdatasync, which also empties the device's write cache, so a commit survives
# a power loss; "data": sync_file_range, which writes through to the device and waits,
# so a commit survives a crash of the process or the kernel but not a power loss on a
# device with a volatile write cache (docs/operations.md).
sync = "full"

[log]
# A filter in RUST_LOG syntax, e.g. "info" or "info,runnel_server=debug".
# Changeable while running: curl -X PUT --data debug http://127.0.0.1:7051/log/level
level = "info"
# "text" or "json".
format = "text"

[explorer]
# The explorer's built files; unset: no explorer.
# dir = "explorer/dist"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_the_defaults() {
        assert_eq!(NodeConfig::parse(TEMPLATE).unwrap(), NodeConfig::default());
        assert_eq!(NodeConfig::parse("").unwrap(), NodeConfig::default());
    }

    #[test]
    fn settings_reach_the_ledger_and_the_api() {
        let config = NodeConfig::parse(
            "[network]\nchannel = \"c\"\norgs = [\"A\", \"B\"]\n\
             [ordering]\nmode = \"blocks\"\nseal_max_txs = 10\nseal_max_delay_ms = 2000\n\
             [api]\nlisten = \"127.0.0.1:9000\"\n",
        )
        .unwrap();
        let ledger = config.ledger_config();
        assert_eq!(ledger.orgs, vec!["A", "B"]);
        assert_eq!(ledger.orderer.channel, "c");
        assert_eq!(ledger.validator.channel, "c");
        assert_eq!(ledger.endorser.channel, "c");
        assert_eq!(ledger.orderer.mode, OrderingMode::Blocks);
        assert_eq!(ledger.orderer.seal_max_delay, Duration::from_secs(2));
        let api = config.api_config(Path::new("/net"));
        assert_eq!(api.listen.port(), 9000);
        assert_eq!(api.tls, None);
    }

    #[test]
    fn tls_paths_are_from_the_node_directory() {
        let dir = Path::new("/net");
        let config =
            NodeConfig::parse("[network]\norgs = [\"B\", \"A\"]\n[api.tls]\nenabled = true\n")
                .unwrap();
        let tls = config.api_config(dir).tls.unwrap();
        assert_eq!(tls.cert, dir.join("identities/B/tls/server.pem"));
        assert_eq!(tls.key, dir.join("identities/B/tls/server.key"));
        assert_eq!(tls.client_auth, ClientAuth::None);
        assert_eq!(tls.client_ca, None);

        let config = NodeConfig::parse(
            "[api.tls]\nenabled = true\ncert = \"certs/node.pem\"\nkey = \"/etc/node.key\"\n\
             client_auth = \"required\"\nclient_ca = \"certs/clients.pem\"\n",
        )
        .unwrap();
        let tls = config.api_config(dir).tls.unwrap();
        assert_eq!(tls.cert, dir.join("certs/node.pem"));
        assert_eq!(tls.key, Path::new("/etc/node.key"));
        assert_eq!(tls.client_auth, ClientAuth::Required);
        assert_eq!(tls.client_ca, Some(dir.join("certs/clients.pem")));

        let bad = NodeConfig::parse("[api.tls]\nclient_auth = \"always\"\n").unwrap_err();
        assert!(bad.contains("always"), "{bad}");
        let unknown = NodeConfig::parse("[api.tls]\ncertificate = \"x\"\n").unwrap_err();
        assert!(unknown.contains("certificate"), "{unknown}");
    }

    #[test]
    fn mistakes_are_reported_with_where() {
        let unknown = NodeConfig::parse("[api]\nlisen = \"x\"\n").unwrap_err();
        assert!(unknown.contains("lisen"), "{unknown}");
        let bad_mode = NodeConfig::parse("[ordering]\nmode = \"fast\"\n").unwrap_err();
        assert!(bad_mode.contains("fast"), "{bad_mode}");
        assert!(NodeConfig::parse("[network]\norgs = []\n").is_err());
        let no_orderer = NodeConfig::parse("[node]\nrole = \"peer\"\n").unwrap_err();
        assert!(no_orderer.contains("ordering.endpoint"), "{no_orderer}");
        let stranger = NodeConfig::parse("[node]\norg = \"Org9\"\n").unwrap_err();
        assert!(stranger.contains("Org9"), "{stranger}");
    }

    #[test]
    fn a_peer_names_its_org_and_orderer() {
        let config = NodeConfig::parse(
            "[node]\nrole = \"peer\"\norg = \"B\"\n[network]\norgs = [\"A\", \"B\"]\n\
             [ordering]\nendpoint = \"http://127.0.0.1:7050\"\n",
        )
        .unwrap();
        assert_eq!(config.node.role, NodeRole::Peer);
        assert_eq!(config.ledger_config().org.as_deref(), Some("B"));
    }
}
