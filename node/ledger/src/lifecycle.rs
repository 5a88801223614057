//! Contract lifecycle: deploying and upgrading a contract are transactions, run natively
//! by endorsers in the system namespace `_lifecycle` and validated like any other.
//!
//! `_lifecycle` holds, as ordinary versioned state:
//! - `contracts/<name>`: the [`ContractDefinition`] in force (name, version label,
//!   sequence, code hash, endorsement policy). Each upgrade writes the next sequence; the
//!   key's history is the list of every definition the contract ever had.
//! - `code/<sha256 hex>`: the Wasm module, written once per distinct code hash.
//!
//! Every invoke of a contract records a read of its definition key in its read set. So
//! a transaction endorsed against one definition and ordered after an upgrade fails the
//! validator's MVCC check, and "the policy in force" at any point of the stream is simply
//! the definition in the state the validator has applied up to that point
//! ([`endorsement_policy`]).
//!
//! A lifecycle transaction is governed by the lifecycle policy (default
//! [`DEFAULT_LIFECYCLE_POLICY`], a majority of the orgs' admins: each org's admin
//! approves by endorsing the deploy proposal with its admin identity). Only lifecycle
//! transactions may write `_lifecycle`, and only a lifecycle transaction may write a
//! namespace other than its own contract's (the optional init call writes the new
//! contract's namespace).

use std::collections::BTreeMap;
use std::sync::Arc;

use prost::Message;
use runnel_runtime::{
    CallContext, CodeHash, Contract, InvokeError, KvRead, KvWrite, LoadError, NsRwSet, Runtime,
    Simulation, StateError, StateView, Version,
};

use crate::identity::Role;
use crate::policy::{ENDORSERS_MAX, Endorser, Policy, PolicyError};
use crate::proto::{ContractDefinition, DeployRequest};

/// The system namespace that holds contract definitions and code.
pub const LIFECYCLE_NAMESPACE: &str = "_lifecycle";
/// Who must endorse a lifecycle transaction unless the network says otherwise.
pub const DEFAULT_LIFECYCLE_POLICY: &str = "MAJORITY admin";
/// A contract's endorsement policy when its deploy request names none (Fabric's
/// default: a majority of the orgs' peers).
pub const DEFAULT_ENDORSEMENT_POLICY: &str = "MAJORITY";
/// Longest contract name, in bytes.
pub const CONTRACT_NAME_BYTES_MAX: usize = 64;
/// Longest version label, in bytes.
pub const CONTRACT_VERSION_BYTES_MAX: usize = 64;

/// Lifecycle function: define a new contract (args: one encoded [`DeployRequest`]).
pub const FN_DEPLOY: &str = "deploy";
/// Lifecycle function: replace the definition of a deployed contract.
pub const FN_UPGRADE: &str = "upgrade";
/// Lifecycle function (evaluate only): the definition in force (args: the name).
pub const FN_DEFINITION: &str = "definition";

/// Why a lifecycle call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LifecycleError {
    /// The argument is not an encoded request.
    #[error("malformed lifecycle request: {0}")]
    BadRequest(String),
    /// No such lifecycle function.
    #[error("`_lifecycle` has no function `{0}` (it has: deploy, upgrade, definition)")]
    UnknownFunction(String),
    /// The contract name is not acceptable.
    #[error(
        "bad contract name `{0}`: use 1-64 bytes of a-z, 0-9, `-` and `_`, starting with a letter"
    )]
    BadName(String),
    /// The version label is not acceptable.
    #[error("bad version label `{0}`: use 1-64 printable ASCII characters")]
    BadVersion(String),
    /// The endorsement policy does not parse.
    #[error("bad endorsement policy: {0}")]
    BadPolicy(#[from] PolicyError),
    /// The endorsement policy parses, but the network's peers, the only identities
    /// whose endorsements count for a contract, could never satisfy it.
    #[error(
        "endorsement policy `{0}` can never be met: only peers' endorsements count for a contract's transactions, and no set of this network's peers satisfies it"
    )]
    UnsatisfiablePolicy(String),
    /// `deploy` of a name that is already deployed.
    #[error("contract `{name}` is already deployed (sequence {sequence}); use upgrade")]
    AlreadyDeployed {
        /// The contract.
        name: String,
        /// Its current sequence.
        sequence: u64,
    },
    /// `upgrade` (or an invoke) of a name that is not deployed.
    #[error("contract `{0}` is not deployed")]
    NotDeployed(String),
    /// The request's code hash does not match its code.
    #[error("code hash mismatch: request says {declared}, the code hashes to {actual}")]
    CodeHashMismatch {
        /// What the request said.
        declared: String,
        /// What the code hashes to.
        actual: String,
    },
    /// The request names code by hash only, and no such code is stored.
    #[error("no code with hash {0} is stored; send the code with the request")]
    CodeNotStored(String),
    /// The code is not an acceptable contract.
    #[error("the contract code is refused: {0}")]
    InvalidCode(#[from] LoadError),
    /// The init call failed.
    #[error("init call `{function}` failed: {error}")]
    Init {
        /// The init function.
        function: String,
        /// Why.
        error: InvokeError,
    },
    /// The state could not be read.
    #[error(transparent)]
    State(#[from] StateError),
    /// A stored definition does not decode: a bug or corruption.
    #[error("stored definition of `{name}` is corrupt: {detail}")]
    Corrupt {
        /// The contract.
        name: String,
        /// The decoder's message.
        detail: String,
    },
}

impl LifecycleError {
    /// A stable, machine-readable name for the error.
    pub fn code(&self) -> &'static str {
        match self {
            LifecycleError::BadRequest(_) => "BAD_REQUEST",
            LifecycleError::UnknownFunction(_) => "FUNCTION_NOT_FOUND",
            LifecycleError::BadName(_) => "BAD_CONTRACT_NAME",
            LifecycleError::BadVersion(_) => "BAD_CONTRACT_VERSION",
            LifecycleError::BadPolicy(_) => "BAD_POLICY",
            LifecycleError::UnsatisfiablePolicy(_) => "UNSATISFIABLE_POLICY",
            LifecycleError::AlreadyDeployed { .. } => "ALREADY_DEPLOYED",
            LifecycleError::NotDeployed(_) => "CONTRACT_NOT_FOUND",
            LifecycleError::CodeHashMismatch { .. } => "CODE_HASH_MISMATCH",
            LifecycleError::CodeNotStored(_) => "CODE_NOT_STORED",
            LifecycleError::InvalidCode(_) => "INVALID_CODE",
            LifecycleError::Init { error, .. } => error.code(),
            LifecycleError::State(_) => "STATE_UNAVAILABLE",
            LifecycleError::Corrupt { .. } => "INTERNAL",
        }
    }
}

/// What every definition key in `_lifecycle` starts with; the contract's name follows.
pub const DEFINITION_PREFIX: &[u8] = b"contracts/";

/// The `_lifecycle` key of a contract's definition.
pub fn definition_key(name: &str) -> Vec<u8> {
    [DEFINITION_PREFIX, name.as_bytes()].concat()
}

/// The `_lifecycle` key of a stored module.
pub fn code_key(hash: &CodeHash) -> Vec<u8> {
    format!("code/{}", hash.to_hex()).into_bytes()
}

/// Checks a contract name: it becomes a namespace, a key and a URL segment.
pub fn check_name(name: &str) -> Result<(), LifecycleError> {
    let mut bytes = name.bytes();
    let ok = name.len() <= CONTRACT_NAME_BYTES_MAX
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(LifecycleError::BadName(name.to_string()))
    }
}

fn check_version(version: &str) -> Result<(), LifecycleError> {
    let ok = !version.is_empty()
        && version.len() <= CONTRACT_VERSION_BYTES_MAX
        && version.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(LifecycleError::BadVersion(version.to_string()))
    }
}

/// The definition of `name` in force in `lifecycle` (a view of `_lifecycle`), with the
/// version of its key.
pub fn read_definition(
    lifecycle: &dyn StateView,
    name: &str,
) -> Result<Option<(ContractDefinition, Version)>, LifecycleError> {
    let Some(stored) = lifecycle.get(&definition_key(name))? else {
        return Ok(None);
    };
    let definition = ContractDefinition::decode(stored.value.as_slice()).map_err(|e| {
        LifecycleError::Corrupt {
            name: name.to_string(),
            detail: e.to_string(),
        }
    })?;
    if definition.name != name {
        return Err(LifecycleError::Corrupt {
            name: name.to_string(),
            detail: format!("stored under `{name}` but names `{}`", definition.name),
        });
    }
    Ok(Some((definition, stored.version)))
}

/// The Wasm module with code hash `hash`, if stored.
pub fn read_code(
    lifecycle: &dyn StateView,
    hash: &CodeHash,
) -> Result<Option<Vec<u8>>, LifecycleError> {
    Ok(lifecycle.get(&code_key(hash))?.map(|stored| stored.value))
}

/// The code hash a definition names.
pub fn definition_code_hash(definition: &ContractDefinition) -> Result<CodeHash, LifecycleError> {
    let hash: [u8; 32] =
        definition
            .code_hash
            .as_slice()
            .try_into()
            .map_err(|_| LifecycleError::Corrupt {
                name: definition.name.clone(),
                detail: format!("code hash of {} bytes", definition.code_hash.len()),
            })?;
    Ok(CodeHash(hash))
}

/// The loaded contract a definition names: from the runtime's caches, else from the
/// module stored in `_lifecycle` (compiled once, then cached by hash).
pub fn load_contract(
    runtime: &Runtime,
    lifecycle: &dyn StateView,
    definition: &ContractDefinition,
) -> Result<Arc<Contract>, LifecycleError> {
    let hash = definition_code_hash(definition)?;
    match runtime.load(&hash) {
        Ok(contract) => Ok(contract),
        Err(LoadError::NotFound(_)) => {
            let code = read_code(lifecycle, &hash)?.ok_or_else(|| LifecycleError::Corrupt {
                name: definition.name.clone(),
                detail: format!("its code {} is not stored", hash.to_hex()),
            })?;
            Ok(runtime.install(&code)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether some set of peers of `orgs` satisfies `policy`: every org offering as many
/// peers as the policy has principals, the most it could ask of one org.
fn satisfiable_by_peers(policy: &Policy, orgs: &[String]) -> bool {
    let per_org = policy.principals().len().clamp(1, ENDORSERS_MAX);
    let peers: Vec<Endorser> = orgs
        .iter()
        .flat_map(|org| std::iter::repeat_n(Endorser::new(org.clone(), Role::Peer), per_org))
        .collect();
    policy.is_satisfied_by(&peers)
}

/// The roles whose endorsements count for a transaction invoking `contract`: peers, which
/// run contracts; for `_lifecycle`, also admins, whose endorsements are their
/// organisations' approvals of a deploy or upgrade. A client endorsing its own writes
/// counts for nothing, whatever the policy names.
pub fn endorser_roles(contract: &str) -> &'static [Role] {
    if contract == LIFECYCLE_NAMESPACE {
        &[Role::Peer, Role::Admin]
    } else {
        &[Role::Peer]
    }
}

/// The endorsement policy in force for transactions invoking `contract`, as of the state
/// `lifecycle` shows: the lifecycle policy for `_lifecycle`, else the contract's
/// definition's policy.
pub fn endorsement_policy(
    lifecycle: &dyn StateView,
    contract: &str,
    lifecycle_policy: &Policy,
    orgs: &[String],
) -> Result<Policy, LifecycleError> {
    if contract == LIFECYCLE_NAMESPACE {
        return Ok(lifecycle_policy.clone());
    }
    let (definition, _) = read_definition(lifecycle, contract)?
        .ok_or_else(|| LifecycleError::NotDeployed(contract.to_string()))?;
    Policy::parse(&definition.policy, orgs).map_err(|e| LifecycleError::Corrupt {
        name: contract.to_string(),
        detail: format!("stored policy no longer parses: {e}"),
    })
}

/// The outcome of a deploy or upgrade call.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// The new definition.
    pub definition: ContractDefinition,
    /// What the call read and wrote in `_lifecycle`.
    pub lifecycle_rwset: NsRwSet,
    /// The init call's outcome, if the request had one.
    pub init: Option<Simulation>,
}

/// Deploy (`upgrade == false`) or upgrade a contract: checks the request against the
/// state `lifecycle` shows, validates and compiles the code, and runs the init call (if
/// any) against `contract_state` (a view of the contract's own namespace).
pub fn deploy(
    request: &DeployRequest,
    upgrade: bool,
    lifecycle: &dyn StateView,
    contract_state: Arc<dyn StateView>,
    runtime: &Runtime,
    orgs: &[String],
    ctx: &CallContext,
) -> Result<Deployment, LifecycleError> {
    check_name(&request.name)?;
    check_version(&request.version)?;
    let policy_text = if request.policy.trim().is_empty() {
        DEFAULT_ENDORSEMENT_POLICY
    } else {
        &request.policy
    };
    // Stored in canonical form: shorthands are expanded against today's orgs, so the
    // policy's meaning is fixed at deploy time.
    let policy = Policy::parse(policy_text, orgs)?;
    if !satisfiable_by_peers(&policy, orgs) {
        return Err(LifecycleError::UnsatisfiablePolicy(policy.to_string()));
    }
    let policy = policy.to_string();

    let mut rwset = RwSetBuilder::default();
    let key = definition_key(&request.name);
    let current = read_definition(lifecycle, &request.name)?;
    rwset.read(&key, current.as_ref().map(|(_, version)| *version));
    let sequence = match (current, upgrade) {
        (Some((definition, _)), false) => {
            return Err(LifecycleError::AlreadyDeployed {
                name: request.name.clone(),
                sequence: definition.sequence,
            });
        }
        (None, true) => return Err(LifecycleError::NotDeployed(request.name.clone())),
        (Some((definition, _)), true) => definition.sequence + 1,
        (None, false) => 1,
    };

    let (hash, contract) = if request.code.is_empty() {
        let hash: [u8; 32] = request.code_hash.as_slice().try_into().map_err(|_| {
            LifecycleError::BadRequest("send the code, or its 32-byte sha256 as code_hash".into())
        })?;
        let hash = CodeHash(hash);
        let code = read_code(lifecycle, &hash)?
            .ok_or_else(|| LifecycleError::CodeNotStored(hash.to_hex()))?;
        (hash, runtime.install(&code)?)
    } else {
        let hash = CodeHash::of(&request.code);
        if !request.code_hash.is_empty() && request.code_hash != hash.0 {
            return Err(LifecycleError::CodeHashMismatch {
                declared: hex::encode(&request.code_hash),
                actual: hash.to_hex(),
            });
        }
        let contract = runtime.install(&request.code)?;
        // Code is immutable under its hash: store it once, and never record a read of it.
        if lifecycle.get(&code_key(&hash))?.is_none() {
            rwset.write(code_key(&hash), request.code.clone());
        }
        (hash, contract)
    };

    let definition = ContractDefinition {
        name: request.name.clone(),
        version: request.version.clone(),
        sequence,
        code_hash: hash.0.to_vec(),
        policy,
    };
    rwset.write(key, definition.encode_to_vec());

    let init = if request.init_function.is_empty() {
        None
    } else {
        let simulation = runtime
            .invoke(
                &contract,
                &request.name,
                &request.init_function,
                &request.init_args,
                ctx,
                contract_state,
            )
            .map_err(|error| LifecycleError::Init {
                function: request.init_function.clone(),
                error,
            })?;
        Some(simulation)
    };

    Ok(Deployment {
        definition,
        lifecycle_rwset: rwset.build(LIFECYCLE_NAMESPACE),
        init,
    })
}

/// Collects reads and writes into a canonical [`NsRwSet`] (sorted by key, each key once).
#[derive(Debug, Default)]
pub struct RwSetBuilder {
    reads: BTreeMap<Vec<u8>, Option<Version>>,
    writes: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl RwSetBuilder {
    /// Records that `key` was read at `version` (`None`: absent). The first read wins.
    pub fn read(&mut self, key: &[u8], version: Option<Version>) {
        self.reads.entry(key.to_vec()).or_insert(version);
    }

    /// Records a write of `value` to `key`.
    pub fn write(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.writes.insert(key, value);
    }

    /// The read/write set of `namespace`.
    pub fn build(self, namespace: &str) -> NsRwSet {
        NsRwSet {
            namespace: namespace.to_string(),
            reads: self
                .reads
                .into_iter()
                .map(|(key, version)| KvRead { key, version })
                .collect(),
            range_reads: Vec::new(),
            writes: self
                .writes
                .into_iter()
                .map(|(key, value)| KvWrite {
                    key,
                    is_delete: false,
                    value,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_namespaces_so_only_safe_ones_pass() {
        for good in ["kv", "token-v2", "asset_transfer", "a1"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        let long = "a".repeat(CONTRACT_NAME_BYTES_MAX + 1);
        for bad in [
            "",
            "_lifecycle",
            "Kv",
            "1kv",
            "k v",
            "kv/x",
            "kv\0",
            long.as_str(),
        ] {
            assert!(
                matches!(check_name(bad), Err(LifecycleError::BadName(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn versions_are_short_printable_labels() {
        assert_eq!(check_version("1.2.0-rc1"), Ok(()));
        for bad in [
            "",
            "1 2",
            "v\n",
            &"9".repeat(CONTRACT_VERSION_BYTES_MAX + 1),
        ] {
            assert!(check_version(bad).is_err(), "{bad:?}");
        }
    }
}
