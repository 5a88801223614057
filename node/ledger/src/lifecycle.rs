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
//! - `approvals/<name>/<sequence, 20 digits>/<org>`: an organisation's approval of the
//!   definition with that sequence: sha256 of the encoded [`ContractDefinition`].
//!
//! Organisations approve a definition one by one, Fabric's way: each org's admin sends
//! an `approve` transaction, endorsed by a peer of its own org ([`transaction_policy`]).
//! A `deploy` (sequence 1) or `upgrade` commits the definition once approvals of it on
//! the ledger meet the lifecycle policy (default [`DEFAULT_LIFECYCLE_POLICY`], a
//! majority of the orgs), counting the committing admin's own org, whose approval the
//! commit records. A commit is endorsed by a peer of the committing org, or, when it has
//! an init call (which writes the contract's state), as the contract it defines will be
//! (its policy). The validator checks all of it again
//! at the transaction's place in the stream ([`check_transaction`]), so no endorser can
//! commit a definition the organisations did not approve. Only lifecycle transactions
//! may write `_lifecycle`, and only a lifecycle transaction may write a namespace other
//! than its own contract's (the optional init call writes the new contract's
//! namespace).

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
pub use crate::identity::DEFAULT_LIFECYCLE_POLICY;
/// A contract's endorsement policy when its deploy request names none (Fabric's
/// default: a majority of the orgs' peers).
pub const DEFAULT_ENDORSEMENT_POLICY: &str = "MAJORITY";
/// Longest contract name, in bytes.
pub const CONTRACT_NAME_BYTES_MAX: usize = 64;
/// Longest version label, in bytes.
pub const CONTRACT_VERSION_BYTES_MAX: usize = 64;

/// Lifecycle function: approve a definition for the caller's organisation (args: one
/// encoded [`DeployRequest`]).
pub const FN_APPROVE: &str = "approve";
/// Lifecycle function: commit the first definition of a contract (args: one encoded
/// [`DeployRequest`]).
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
    #[error("`_lifecycle` has no function `{0}` (it has: approve, deploy, upgrade, definition)")]
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
    /// The definition lacks the approvals the lifecycle policy needs.
    #[error(
        "contract `{name}` sequence {sequence} is not approved by enough organisations \
         (lifecycle policy `{policy}`): approved by [{}], not by [{}]",
        approved.join(", "),
        missing.join(", ")
    )]
    NotApproved {
        /// The contract.
        name: String,
        /// The sequence being committed.
        sequence: u64,
        /// The lifecycle policy.
        policy: String,
        /// The organisations whose approval of exactly this definition is recorded
        /// (the committing one's included).
        approved: Vec<String>,
        /// The others.
        missing: Vec<String>,
    },
    /// An approval of a sequence already committed.
    #[error("contract `{name}` is at sequence {current}; approve a later one")]
    StaleSequence {
        /// The contract.
        name: String,
        /// Its sequence in force.
        current: u64,
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
            LifecycleError::NotApproved { .. } => "NOT_APPROVED",
            LifecycleError::StaleSequence { .. } => "STALE_SEQUENCE",
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

/// What every approval key in `_lifecycle` starts with.
pub const APPROVAL_PREFIX: &[u8] = b"approvals/";

/// The `_lifecycle` prefix of every approval of contract `name`.
pub fn approvals_prefix(name: &str) -> Vec<u8> {
    format!("approvals/{name}/").into_bytes()
}

/// The `_lifecycle` key of `org`'s approval of contract `name`'s definition `sequence`
/// (zero-padded, so that a scan lists sequences in order).
pub fn approval_key(name: &str, sequence: u64, org: &str) -> Vec<u8> {
    format!("approvals/{name}/{sequence:020}/{org}").into_bytes()
}

/// An approval key's parts: contract, sequence, organisation.
pub fn parse_approval_key(key: &[u8]) -> Option<(&str, u64, &str)> {
    let rest = std::str::from_utf8(key.strip_prefix(APPROVAL_PREFIX)?).ok()?;
    let mut parts = rest.splitn(3, '/');
    let name = parts.next()?;
    let sequence = parts.next()?;
    let org = parts.next()?;
    if sequence.len() != 20 || !sequence.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((name, sequence.parse().ok()?, org))
}

/// What an organisation's approval of `definition` holds: sha256 of its encoding.
pub fn definition_hash(definition: &ContractDefinition) -> [u8; 32] {
    crate::tx::sha256(&definition.encode_to_vec())
}

/// The `init_hash` of a definition whose commit calls `function(args)`; empty for none.
pub fn init_hash(function: &str, args: &[Vec<u8>]) -> Vec<u8> {
    if function.is_empty() {
        return Vec::new();
    }
    let call = crate::proto::InitCall {
        function: function.to_string(),
        args: args.to_vec(),
    };
    crate::tx::sha256(&call.encode_to_vec()).to_vec()
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

/// The roles whose endorsements count for a transaction invoking `contract`: peers,
/// which run contracts (`_lifecycle` too); for a `_config` update, the admins who sign
/// it. A client endorsing its own writes counts for nothing, whatever the policy names.
pub fn endorser_roles(contract: &str) -> &'static [Role] {
    if contract == crate::netconfig::CONFIG_NAMESPACE {
        crate::netconfig::SIGNER_ROLES
    } else {
        &[Role::Peer]
    }
}

/// The endorsement policy in force for transactions invoking `contract` (not
/// `_lifecycle`: see [`transaction_policy`]), as of the state `lifecycle` shows: the
/// contract's definition's policy.
pub fn endorsement_policy(
    lifecycle: &dyn StateView,
    contract: &str,
    orgs: &[String],
) -> Result<Policy, LifecycleError> {
    let (definition, _) = read_definition(lifecycle, contract)?
        .ok_or_else(|| LifecycleError::NotDeployed(contract.to_string()))?;
    Policy::parse(&definition.policy, orgs).map_err(|e| LifecycleError::Corrupt {
        name: contract.to_string(),
        detail: format!("stored policy no longer parses: {e}"),
    })
}

/// The endorsement policy of a `_lifecycle` transaction calling `function`, signed by an
/// admin of `creator_org`, with read/write sets `rwsets`: an approval needs a peer of
/// the approving organisation, and so does a commit without an init call (the validator
/// checks all it writes); a commit with one the policy of the definition it writes (the
/// init call writes the contract's state, which the contract's endorsers vouch for).
pub fn transaction_policy(
    function: &str,
    creator_org: &str,
    rwsets: &[NsRwSet],
    orgs: &[String],
) -> Result<Policy, LifecycleError> {
    match function {
        FN_APPROVE => {
            let principal = format!("'{creator_org}.peer'");
            Ok(Policy::parse(&principal, orgs)?)
        }
        FN_DEPLOY | FN_UPGRADE => {
            let definition = written_definitions(rwsets)
                .next()
                .ok_or_else(|| LifecycleError::BadRequest("it writes no definition".into()))??;
            if definition.init_hash.is_empty() {
                // Without an init call the validator checks everything a commit writes:
                // a peer of the committing org running the native code is enough.
                let principal = format!("'{creator_org}.peer'");
                return Ok(Policy::parse(&principal, orgs)?);
            }
            Ok(Policy::parse(&definition.policy, orgs)?)
        }
        other => Err(LifecycleError::UnknownFunction(other.to_string())),
    }
}

/// The definitions `rwsets` write in `_lifecycle`, decoded.
fn written_definitions(
    rwsets: &[NsRwSet],
) -> impl Iterator<Item = Result<ContractDefinition, LifecycleError>> + '_ {
    rwsets
        .iter()
        .filter(|set| set.namespace == LIFECYCLE_NAMESPACE)
        .flat_map(|set| &set.writes)
        .filter(|write| write.key.starts_with(DEFINITION_PREFIX))
        .map(|write| {
            ContractDefinition::decode(write.value.as_slice()).map_err(|e| {
                LifecycleError::BadRequest(format!("a written definition does not decode: {e}"))
            })
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

/// Who is calling a lifecycle function, and under which rules.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The organisation of the admin who signed the proposal.
    pub org: &'a str,
    /// The network's organisations.
    pub orgs: &'a [String],
    /// Whose approvals put a definition in force.
    pub approvals: &'a Policy,
}

/// The definition `request` names at `sequence`, checked, with its code installed in
/// `runtime`; records in `rwset` the code's write when the request brings code not yet
/// stored.
fn request_definition(
    request: &DeployRequest,
    sequence: u64,
    lifecycle: &dyn StateView,
    runtime: &Runtime,
    orgs: &[String],
    rwset: &mut RwSetBuilder,
) -> Result<(ContractDefinition, Arc<Contract>), LifecycleError> {
    check_name(&request.name)?;
    check_version(&request.version)?;
    let policy_text = if request.policy.trim().is_empty() {
        DEFAULT_ENDORSEMENT_POLICY
    } else {
        &request.policy
    };
    // Stored in canonical form: shorthands are expanded against today's orgs, so the
    // policy's meaning is fixed when it is approved.
    let policy = Policy::parse(policy_text, orgs)?;
    if !satisfiable_by_peers(&policy, orgs) {
        return Err(LifecycleError::UnsatisfiablePolicy(policy.to_string()));
    }
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
        policy: policy.to_string(),
        init_hash: init_hash(&request.init_function, &request.init_args),
    };
    Ok((definition, contract))
}

/// The outcome of an approve call.
#[derive(Debug, Clone)]
pub struct Approved {
    /// The definition approved.
    pub definition: ContractDefinition,
    /// What the call wrote in `_lifecycle`: the approval (and the code, if new).
    pub lifecycle_rwset: NsRwSet,
}

/// Approves the definition `request` names for `caller`'s organisation: at
/// `request.sequence`, or the next one when 0.
pub fn approve(
    request: &DeployRequest,
    lifecycle: &dyn StateView,
    runtime: &Runtime,
    caller: Caller<'_>,
) -> Result<Approved, LifecycleError> {
    check_name(&request.name)?;
    let current = read_definition(lifecycle, &request.name)?.map_or(0, |(d, _)| d.sequence);
    let sequence = match request.sequence {
        0 => current + 1,
        n if n <= current => {
            return Err(LifecycleError::StaleSequence {
                name: request.name.clone(),
                current,
            });
        }
        n => n,
    };
    let mut rwset = RwSetBuilder::default();
    let (definition, _) = request_definition(
        request,
        sequence,
        lifecycle,
        runtime,
        caller.orgs,
        &mut rwset,
    )?;
    rwset.write(
        approval_key(&request.name, sequence, caller.org),
        definition_hash(&definition).to_vec(),
    );
    Ok(Approved {
        definition,
        lifecycle_rwset: rwset.build(LIFECYCLE_NAMESPACE),
    })
}

/// Deploy (`upgrade == false`) or upgrade a contract: checks the request against the
/// state `lifecycle` shows and the approvals recorded there (the caller's organisation's
/// own is this commit, which records it), validates and compiles the code, and runs the
/// init call (if any) against `contract_state` (a view of the contract's own namespace).
pub fn deploy(
    request: &DeployRequest,
    upgrade: bool,
    lifecycle: &dyn StateView,
    contract_state: Arc<dyn StateView>,
    runtime: &Runtime,
    caller: Caller<'_>,
    ctx: &CallContext,
) -> Result<Deployment, LifecycleError> {
    check_name(&request.name)?;
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
    let (definition, contract) = request_definition(
        request,
        sequence,
        lifecycle,
        runtime,
        caller.orgs,
        &mut rwset,
    )?;

    let hash = definition_hash(&definition);
    let mut approved = Vec::new();
    let mut missing = Vec::new();
    for org in caller.orgs {
        let key = approval_key(&request.name, sequence, org);
        let stored = lifecycle.get(&key)?;
        if org == caller.org {
            if stored.as_ref().is_none_or(|s| s.value != hash) {
                rwset.write(key, hash.to_vec());
            }
            approved.push(org.clone());
            continue;
        }
        rwset.read(&key, stored.as_ref().map(|s| s.version));
        match stored {
            Some(stored) if stored.value == hash => approved.push(org.clone()),
            _ => missing.push(org.clone()),
        }
    }
    let approvers: Vec<Endorser> = approved
        .iter()
        .map(|org| Endorser::new(org.clone(), Role::Admin))
        .collect();
    if !caller.approvals.is_satisfied_by(&approvers) {
        return Err(LifecycleError::NotApproved {
            name: request.name.clone(),
            sequence,
            policy: caller.approvals.to_string(),
            approved,
            missing,
        });
    }
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

/// Checks a valid-so-far `_lifecycle` transaction at its place in the stream, against
/// the state `lifecycle` shows there: it writes only what its function may (an approval
/// only its creator's organisation's; a commit the next sequence of one definition, of
/// code stored or written with it); code is stored under its own hash; and a commit's
/// definition is approved, by approvals recorded before it or in it, as the lifecycle
/// policy needs. `approvals` is `None` when the lifecycle policy in force cannot be
/// evaluated: an approval needs none, a commit is `UNUSABLE_POLICY`. The code a failure
/// gives.
pub fn check_transaction(
    function: &str,
    creator_org: &str,
    rwsets: &[NsRwSet],
    lifecycle: &dyn StateView,
    orgs: &[String],
    approvals: Option<&Policy>,
) -> Result<(), crate::ids::ValidationCode> {
    use crate::ids::ValidationCode::{
        BadPayload, EndorsementPolicyFailure, IllegalWriteset, MvccReadConflict, UnusablePolicy,
    };
    let store = |_: StateError| MvccReadConflict;
    let committing = matches!(function, FN_DEPLOY | FN_UPGRADE);
    if !committing && function != FN_APPROVE {
        return Err(IllegalWriteset);
    }
    let mut definition: Option<ContractDefinition> = None;
    let mut own_approval: Option<(Vec<u8>, &[u8])> = None;
    let mut code_written = Vec::new();
    for write in rwsets
        .iter()
        .filter(|set| set.namespace == LIFECYCLE_NAMESPACE)
        .flat_map(|set| &set.writes)
    {
        if write.is_delete {
            return Err(IllegalWriteset);
        }
        if let Some(hex_hash) = write.key.strip_prefix(b"code/".as_slice()) {
            if hex::encode(crate::tx::sha256(&write.value)).as_bytes() != hex_hash {
                return Err(IllegalWriteset);
            }
            code_written.push(hex_hash.to_vec());
        } else if let Some((_, _, org)) = parse_approval_key(&write.key) {
            if org != creator_org || own_approval.is_some() || write.value.len() != 32 {
                return Err(IllegalWriteset);
            }
            own_approval = Some((write.key.clone(), &write.value));
        } else if write.key.starts_with(DEFINITION_PREFIX) && committing {
            if definition.is_some() {
                return Err(IllegalWriteset);
            }
            let decoded =
                ContractDefinition::decode(write.value.as_slice()).map_err(|_| BadPayload)?;
            if write.key != definition_key(&decoded.name) {
                return Err(IllegalWriteset);
            }
            definition = Some(decoded);
        } else {
            return Err(IllegalWriteset);
        }
    }
    let Some(definition) = definition else {
        // An approval writes its org's approval and nothing it may not.
        return match (committing, own_approval, writes_elsewhere(rwsets)) {
            (false, Some(_), false) => Ok(()),
            _ => Err(IllegalWriteset),
        };
    };
    // Only an init call writes the contract's state, and only one the definition names.
    if definition.init_hash.is_empty() && writes_elsewhere(rwsets) {
        return Err(IllegalWriteset);
    }
    let current = read_definition(lifecycle, &definition.name)
        .map_err(|_| BadPayload)?
        .map_or(0, |(d, _)| d.sequence);
    if definition.sequence != current + 1 || (function == FN_DEPLOY) != (current == 0) {
        return Err(IllegalWriteset);
    }
    let code = definition_code_hash(&definition).map_err(|_| BadPayload)?;
    let code_hex = code.to_hex().into_bytes();
    if !code_written.contains(&code_hex)
        && read_code(lifecycle, &code)
            .map_err(|_| BadPayload)?
            .is_none()
    {
        return Err(IllegalWriteset);
    }
    let hash = definition_hash(&definition);
    let mut approvers = Vec::new();
    for org in orgs {
        let key = approval_key(&definition.name, definition.sequence, org);
        let approval = match &own_approval {
            Some((own_key, value)) if *own_key == key => Some(value.to_vec()),
            _ => lifecycle
                .get(&key)
                .map_err(store)?
                .map(|stored| stored.value),
        };
        if approval.as_deref() == Some(hash.as_slice()) {
            approvers.push(Endorser::new(org.clone(), Role::Admin));
        }
    }
    if let Some((own_key, _)) = &own_approval
        && *own_key != approval_key(&definition.name, definition.sequence, creator_org)
    {
        return Err(IllegalWriteset);
    }
    match approvals {
        None => Err(UnusablePolicy),
        Some(approvals) if approvals.is_satisfied_by(&approvers) => Ok(()),
        Some(_) => Err(EndorsementPolicyFailure),
    }
}

/// Whether `rwsets` write any namespace but `_lifecycle`.
fn writes_elsewhere(rwsets: &[NsRwSet]) -> bool {
    rwsets
        .iter()
        .any(|set| set.namespace != LIFECYCLE_NAMESPACE && !set.writes.is_empty())
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
