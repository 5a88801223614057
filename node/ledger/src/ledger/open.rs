//! Opening a ledger: [`Ledger::open`] for every role in one process (a solo orderer
//! included), [`LedgerBuilder`] for a peer that orders through the ordering service of
//! another process.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use runnel_runtime::Runtime;

use super::endorse::{LocalEndorsers, Org};
use super::{Ledger, LedgerConfig, LedgerError};
use crate::endorser::Endorser;
use crate::identity::{
    IDENTITIES_DIR, NETWORK_FILE, NetworkDefinition, NetworkIdentities, NetworkKeys, Role, Signer,
};
use crate::netconfig::{self, CONFIG_NAMESPACE};
use crate::orderer::{Orderer, OrdererConfig, SoloOrderer};
use crate::policy::Policy;
use crate::store::WorldState;
use crate::trace::TraceBook;
use crate::validator::{Hub, Validator};

/// How a ledger opens: over a directory, with its settings, and the ordering service a
/// peer of a network orders through (none: a solo orderer in this process).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use runnel_ledger::ledger::{Ledger, LedgerConfig};
/// # fn main() -> Result<(), runnel_ledger::ledger::LedgerError> {
/// # let orderer: Arc<dyn runnel_ledger::orderer::Orderer> = unimplemented!();
/// let peer = Ledger::builder("/var/lib/runnel/peer0".as_ref(), LedgerConfig::default())
///     .orderer(orderer)
///     .open()?;
/// # Ok(()) }
/// ```
pub struct LedgerBuilder<'a> {
    dir: PathBuf,
    config: LedgerConfig,
    connect: Option<Box<ConnectOrderer<'a>>>,
}

impl<'a> LedgerBuilder<'a> {
    /// A ledger over `dir` with `config`; on its own, [`LedgerBuilder::open`] opens what
    /// [`Ledger::open`] does.
    pub fn new(dir: &Path, config: LedgerConfig) -> LedgerBuilder<'a> {
        LedgerBuilder {
            dir: dir.to_path_buf(),
            config,
            connect: None,
        }
    }

    /// A peer that orders through `orderer` (another process's: runnel-orderer's
    /// `RemoteOrderer`) instead of running one. The directory needs the network's
    /// identities (`runnel init`); state and traces are this peer's own.
    pub fn orderer(self, orderer: Arc<dyn Orderer>) -> LedgerBuilder<'a> {
        self.connect(move |_| Ok(orderer))
    }

    /// A peer whose link to the ordering service `connect` makes from the network
    /// definition in force where the peer's durable state ends, before the peer reads
    /// any of the stream: a peer restarted after configuration updates reaches the
    /// orderers they name, not the genesis ones.
    pub fn connect(
        self,
        connect: impl FnOnce(&NetworkDefinition) -> Result<Arc<dyn Orderer>, LedgerError> + 'a,
    ) -> LedgerBuilder<'a> {
        LedgerBuilder {
            connect: Some(Box::new(connect)),
            ..self
        }
    }

    /// Opens the ledger, creating it (and a network of `config.orgs`) if empty and it
    /// runs its own orderer, and starts ordering and validating. Transactions ordered
    /// but not yet committed when it last stopped are validated again from the
    /// orderer's log.
    pub fn open(self) -> Result<Ledger, LedgerError> {
        if self.connect.is_some() && !self.dir.join(IDENTITIES_DIR).exists() {
            return Err(LedgerError::Identity(format!(
                "{} holds no network identities (copy them from `runnel init`)",
                self.dir.display()
            )));
        }
        self.open_with()
    }

    /// Opens the ledger in `dir`: a peer that orders through what `connect` makes of the
    /// definition in force, or (`None`) a node running its own solo orderer.
    fn open_with(self) -> Result<Ledger, LedgerError> {
        let LedgerBuilder {
            dir,
            config,
            connect,
        } = self;
        let dir = dir.as_path();
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
                let peer = signer(name, Role::Peer)?;
                Ok(Org {
                    name: name.clone(),
                    key: peer.public_key(),
                    peer: endorser(peer)?,
                    admin: keys.signer(name, Role::Admin).cloned(),
                    client: keys.signer(name, Role::Client).cloned(),
                })
            })
            .collect::<Result<Vec<Org>, LedgerError>>()?;
        Ok(Ledger {
            dir: dir.to_path_buf(),
            local: LocalEndorsers {
                orgs,
                msp: msp.clone(),
                world: world.clone(),
            },
            msp,
            world,
            orderer,
            validator,
            hub,
            traces,
            genesis: network,
            channel: config.endorser.channel.clone(),
            orderer_config: config.orderer.clone(),
            orderer_elsewhere,
            proposal_bytes_max: config.endorser.proposal_bytes_max,
        })
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
/// ([`LedgerBuilder::connect`]).
type ConnectOrderer<'a> =
    dyn FnOnce(&NetworkDefinition) -> Result<Arc<dyn Orderer>, LedgerError> + 'a;
