//! The engine, the module cache and `invoke`.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prost::Message;
use sha2::{Digest, Sha256};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, InstancePre, Linker, Module, ModuleExport,
    OptLevel, PoolingAllocationConfig, Store, Trap, TypedFunc,
};

use crate::abi::{self, EXPORT_ALLOC, EXPORT_MEMORY, FUNCTION_PREFIX};
use crate::host::{self, HostTrap, LogLine, Simulator};
use crate::limits::{EPOCH_TICK_MS, Limits};
use crate::proto::{ContractEvent, NsRwSet, SimulationPayload};
use crate::{InvokeError, LimitExceeded, LoadError, StateView, validate};

/// Linear memory (and table) bytes reset in place, not unmapped, when a pooled slot is
/// reused.
const KEEP_RESIDENT_BYTES: usize = 1 << 20;

/// The SHA-256 of a module's bytes: how contracts are named and cached.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeHash(pub [u8; 32]);

impl CodeHash {
    /// The hash of `wasm`.
    pub fn of(wasm: &[u8]) -> Self {
        CodeHash(Sha256::digest(wasm).into())
    }

    /// Lowercase hex.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for CodeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for CodeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CodeHash({})", self.to_hex())
    }
}

/// Engine-wide settings. Per-call limits are in [`Limits`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Per-call limits.
    pub limits: Limits,
    /// Largest module accepted, in bytes.
    pub module_bytes_max: usize,
    /// Wasm call stack per call, in bytes (bounds recursion depth).
    pub stack_bytes_max: usize,
    /// Instances that may run at once (the pooling allocator's slots).
    pub instances_max: u32,
    /// Use the pooling instance allocator (faster instantiation; reserves address space).
    pub pooling: bool,
    /// Where compiled artifacts are kept across restarts; `None`: memory only.
    pub cache_dir: Option<PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            limits: Limits::default(),
            module_bytes_max: 4 << 20,
            stack_bytes_max: 512 << 10,
            instances_max: 128,
            pooling: true,
            cache_dir: None,
        }
    }
}

/// Who submitted the call, as the contract sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Creator {
    /// The organisation (MSP id).
    pub org: String,
    /// The role (client, peer, orderer, admin).
    pub role: String,
    /// The certificate's common name.
    pub name: String,
    /// The certificate, DER.
    pub cert: Vec<u8>,
}

/// The transaction context a call runs in: the only source of identity and time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The transaction id (lowercase hex).
    pub tx_id: String,
    /// The submitter.
    pub creator: Creator,
    /// The proposal's timestamp, Unix milliseconds.
    pub timestamp_ms: u64,
}

/// The outcome of a call: what an endorser signs.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// The function's result bytes.
    pub result: Vec<u8>,
    /// What the call read and wrote.
    pub rwset: NsRwSet,
    /// Events, delivered after commit.
    pub events: Vec<ContractEvent>,
    /// Fuel the call used.
    pub fuel_used: u64,
    /// Log lines (not part of the payload).
    pub logs: Vec<LogLine>,
}

impl Simulation {
    /// The deterministic part of the outcome.
    pub fn payload(&self) -> SimulationPayload {
        SimulationPayload {
            result: self.result.clone(),
            rwset: Some(self.rwset.clone()),
            events: self.events.clone(),
        }
    }

    /// The canonical encoding of [`Simulation::payload`]: byte-identical on every endorser
    /// that runs the same call on the same state.
    pub fn payload_bytes(&self) -> Vec<u8> {
        self.payload().encode_to_vec()
    }
}

/// A loaded contract module, ready to instantiate.
pub struct Contract {
    hash: CodeHash,
    functions: Vec<String>,
    exports: HashMap<String, ModuleExport>,
    memory: ModuleExport,
    alloc: ModuleExport,
    pre: InstancePre<Simulator>,
}

impl Contract {
    /// The module's code hash.
    pub fn hash(&self) -> CodeHash {
        self.hash
    }

    /// The contract's functions, sorted.
    pub fn functions(&self) -> &[String] {
        &self.functions
    }
}

impl fmt::Debug for Contract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Contract")
            .field("hash", &self.hash)
            .field("functions", &self.functions)
            .finish()
    }
}

/// Runs contracts. One per process; cheap to share (`Arc`) across threads.
pub struct Runtime {
    engine: Engine,
    linker: Linker<Simulator>,
    config: RuntimeConfig,
    cache_dir: Option<PathBuf>,
    contracts: RwLock<HashMap<CodeHash, Arc<Contract>>>,
    ticker_stop: Arc<AtomicBool>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .finish()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// Where the digest of the artifact at `path` is kept.
fn digest_path(path: &Path) -> PathBuf {
    path.with_extension("cwasm.sha256")
}

/// What an artifact's digest file holds: SHA-256 of the code hash it was compiled from
/// and its bytes, in hex.
fn artifact_digest(hash: &CodeHash, artifact: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(hash.0);
    hasher.update(artifact);
    hex::encode(hasher.finalize()).into_bytes()
}

fn cache_error(path: &Path, e: impl fmt::Display) -> LoadError {
    LoadError::Cache {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl Runtime {
    /// Builds the engine (determinism settings, fuel, epochs, limits, allocator).
    pub fn new(config: RuntimeConfig) -> Result<Self, LoadError> {
        let mut wasm = Config::new();
        wasm.consume_fuel(true)
            .epoch_interruption(true)
            .max_wasm_stack(config.stack_bytes_max)
            // Determinism: one NaN bit pattern, no SIMD (so no relaxed SIMD); threads are not
            // compiled in.
            .cranelift_nan_canonicalization(true)
            .wasm_relaxed_simd(false)
            .wasm_simd(false)
            .wasm_memory64(false)
            .wasm_multi_memory(false)
            .cranelift_opt_level(OptLevel::Speed)
            .parallel_compilation(true);
        if config.pooling {
            let mut pool = PoolingAllocationConfig::default();
            pool.total_core_instances(config.instances_max)
                .total_memories(config.instances_max)
                .total_tables(config.instances_max)
                .max_memories_per_module(1)
                .max_tables_per_module(1)
                .max_memory_size(config.limits.memory_bytes_max)
                .table_elements(config.limits.table_elements_max)
                // Reset a reused slot by rewriting only its dirty pages (found with
                // PAGEMAP_SCAN where the kernel has it) instead of unmapping them: a call
                // touches a few pages, and page faults plus TLB shootdowns dominated
                // instantiation otherwise.
                .pagemap_scan(Enabled::Auto)
                .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
                .table_keep_resident(KEEP_RESIDENT_BYTES);
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wasm).map_err(|e| LoadError::Compile(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        host::define(&mut linker).map_err(|e| LoadError::Compile(e.to_string()))?;

        let cache_dir = match &config.cache_dir {
            Some(dir) => {
                // Artifacts of another wasmtime build or configuration go elsewhere.
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                engine.precompile_compatibility_hash().hash(&mut hasher);
                let dir = dir.join(format!("{:016x}", hasher.finish()));
                std::fs::create_dir_all(&dir).map_err(|e| cache_error(&dir, e))?;
                Some(dir)
            }
            None => None,
        };

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop = ticker_stop.clone();
        std::thread::Builder::new()
            .name("runnel-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(EPOCH_TICK_MS));
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| LoadError::Compile(format!("starting the epoch thread: {e}")))?;

        Ok(Runtime {
            engine,
            linker,
            config,
            cache_dir,
            contracts: RwLock::new(HashMap::new()),
            ticker_stop,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    fn artifact_path(&self, hash: &CodeHash) -> Option<PathBuf> {
        self.cache_dir
            .as_ref()
            .map(|dir| dir.join(format!("{}.cwasm", hash.to_hex())))
    }

    fn cached(&self, hash: &CodeHash) -> Option<Arc<Contract>> {
        self.contracts.read().ok()?.get(hash).cloned()
    }

    /// Validates, compiles (or loads the cached artifact) and keeps `wasm`. Idempotent.
    pub fn install(&self, wasm: &[u8]) -> Result<Arc<Contract>, LoadError> {
        let hash = CodeHash::of(wasm);
        if let Some(contract) = self.cached(&hash) {
            return Ok(contract);
        }
        if let Some(contract) = self.load_artifact(&hash)? {
            return Ok(contract);
        }
        validate::check(wasm, self.config.module_bytes_max, &self.config.limits)?;
        let module = Module::from_binary(&self.engine, wasm)
            .map_err(|e| LoadError::Compile(e.to_string()))?;
        let contract = self.prepare(hash, module.clone())?;
        if let Some(path) = self.artifact_path(&hash) {
            let bytes = module
                .serialize()
                .map_err(|e| LoadError::Compile(e.to_string()))?;
            // Write then rename, so a crash never leaves a torn artifact under the real
            // name; its digest first, so an artifact never stands without one.
            let digest = digest_path(&path);
            let tmp = digest.with_extension("sha256.tmp");
            std::fs::write(&tmp, artifact_digest(&hash, &bytes))
                .map_err(|e| cache_error(&tmp, e))?;
            std::fs::rename(&tmp, &digest).map_err(|e| cache_error(&digest, e))?;
            let tmp = path.with_extension("cwasm.tmp");
            std::fs::write(&tmp, &bytes).map_err(|e| cache_error(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| cache_error(&path, e))?;
        }
        Ok(self.remember(contract))
    }

    /// The contract with code hash `hash`: from memory, else from the artifact cache.
    pub fn load(&self, hash: &CodeHash) -> Result<Arc<Contract>, LoadError> {
        if let Some(contract) = self.cached(hash) {
            return Ok(contract);
        }
        self.load_artifact(hash)?.ok_or(LoadError::NotFound(*hash))
    }

    /// Drops the in-memory copy of a module (the on-disk artifact stays); the next `load`
    /// or `install` reads the artifact again.
    pub fn forget(&self, hash: &CodeHash) {
        if let Ok(mut map) = self.contracts.write() {
            map.remove(hash);
        }
    }

    fn load_artifact(&self, hash: &CodeHash) -> Result<Option<Arc<Contract>>, LoadError> {
        let Some(path) = self.artifact_path(hash) else {
            return Ok(None);
        };
        if !path.is_file() {
            return Ok(None);
        }
        // The artifact is native code: it runs only if its bytes are those `install`
        // compiled from this very code hash (its digest binds the two), so a damaged
        // artifact, or one put under another contract's name, is compiled afresh.
        let bytes = std::fs::read(&path).map_err(|e| cache_error(&path, e))?;
        let digest = std::fs::read(digest_path(&path)).unwrap_or_default();
        if digest != artifact_digest(hash, &bytes) {
            self.drop_artifact(&path);
            return Ok(None);
        }
        // SAFETY: these bytes are what `install` above serialised, from a module that
        // passed validation and compilation with this engine's configuration (the
        // directory name is the engine's compatibility hash), as their digest shows.
        match unsafe { Module::deserialize(&self.engine, &bytes) } {
            Ok(module) => {
                let contract = self.prepare(*hash, module)?;
                Ok(Some(self.remember(contract)))
            }
            Err(_) => {
                // From another build: drop it and compile afresh.
                self.drop_artifact(&path);
                Ok(None)
            }
        }
    }

    /// Removes an artifact that may not be used, and its digest.
    fn drop_artifact(&self, path: &Path) {
        let _ = std::fs::remove_file(path);
        let _ = std::fs::remove_file(digest_path(path));
    }

    fn remember(&self, contract: Contract) -> Arc<Contract> {
        let contract = Arc::new(contract);
        if let Ok(mut map) = self.contracts.write() {
            return map.entry(contract.hash).or_insert(contract).clone();
        }
        contract
    }

    fn prepare(&self, hash: CodeHash, module: Module) -> Result<Contract, LoadError> {
        let functions = abi::check_signatures(&module)?;
        let export = |name: &str| {
            module
                .get_export_index(name)
                .ok_or_else(|| LoadError::MissingExport {
                    name: name.to_string(),
                })
        };
        let memory = export(EXPORT_MEMORY)?;
        let alloc = export(EXPORT_ALLOC)?;
        let mut exports = HashMap::new();
        for f in &functions {
            exports.insert(f.clone(), export(&format!("{FUNCTION_PREFIX}{f}"))?);
        }
        let pre = self
            .linker
            .instantiate_pre(&module)
            .map_err(|e| LoadError::Compile(e.to_string()))?;
        Ok(Contract {
            hash,
            functions,
            exports,
            memory,
            alloc,
            pre,
        })
    }

    /// Runs `function(args)` of `contract` in namespace `namespace` against `view`.
    pub fn invoke(
        &self,
        contract: &Contract,
        namespace: &str,
        function: &str,
        args: &[Vec<u8>],
        ctx: &CallContext,
        view: Arc<dyn StateView>,
    ) -> Result<Simulation, InvokeError> {
        let limits = &self.config.limits;
        let entry =
            contract
                .exports
                .get(function)
                .ok_or_else(|| InvokeError::FunctionNotFound {
                    function: function.to_string(),
                    available: contract.functions.clone(),
                })?;
        let encoded = abi::encode_byte_list(args);
        if encoded.len() > limits.args_bytes_max {
            return Err(LimitExceeded::ArgsSize {
                size_bytes: encoded.len(),
                limit_bytes: limits.args_bytes_max,
            }
            .into());
        }

        let mut store = Store::new(&self.engine, Simulator::new(view, limits, namespace, ctx));
        store.limiter(|sim| &mut sim.limiter);
        store
            .set_fuel(limits.fuel_per_call)
            .map_err(|e| InvokeError::Instantiate(e.to_string()))?;
        store.set_epoch_deadline(limits.wall_clock_ms_max.div_ceil(EPOCH_TICK_MS).max(1));
        store.epoch_deadline_trap();

        let instance = contract
            .pre
            .instantiate(&mut store)
            .map_err(|e| self.instantiate_error(e))?;
        let bound = |store: &mut Store<Simulator>, export: &ModuleExport| {
            instance
                .get_module_export(&mut *store, export)
                .ok_or_else(|| InvokeError::Instantiate("export vanished".into()))
        };
        let memory = bound(&mut store, &contract.memory)?
            .into_memory()
            .ok_or_else(|| InvokeError::Instantiate("`memory` is not a memory".into()))?;
        store.data_mut().memory = Some(memory);
        let alloc: TypedFunc<i32, i32> = bound(&mut store, &contract.alloc)?
            .into_func()
            .and_then(|f| f.typed(&store).ok())
            .ok_or_else(|| InvokeError::Instantiate("`runnel_alloc` has the wrong type".into()))?;
        let func: TypedFunc<(i32, i32), ()> = bound(&mut store, entry)?
            .into_func()
            .and_then(|f| f.typed(&store).ok())
            .ok_or_else(|| InvokeError::Instantiate(format!("`{function}` has the wrong type")))?;

        let len = encoded.len() as i32;
        let ptr = alloc
            .call(&mut store, len)
            .map_err(|e| self.call_error(e))?;
        let offset = usize::try_from(ptr).map_err(|_| InvokeError::Abi {
            message: format!("runnel_alloc returned a negative pointer {ptr}"),
        })?;
        memory
            .write(&mut store, offset, &encoded)
            .map_err(|_| InvokeError::Abi {
                message: format!(
                    "runnel_alloc returned {ptr}, but {ptr}+{len} is outside linear memory"
                ),
            })?;
        func.call(&mut store, (ptr, len))
            .map_err(|e| self.call_error(e))?;

        let fuel_used = limits.fuel_per_call - store.get_fuel().unwrap_or(0);
        let outcome = store.into_data().finish();
        Ok(Simulation {
            result: outcome.result,
            rwset: outcome.rwset,
            events: outcome.events,
            fuel_used,
            logs: outcome.logs,
        })
    }

    fn instantiate_error(&self, e: wasmtime::Error) -> InvokeError {
        if e.is::<wasmtime::PoolConcurrencyLimitError>() {
            return InvokeError::Busy {
                instances_max: self.config.instances_max,
            };
        }
        match self.call_error(e) {
            InvokeError::Trap { message } => InvokeError::Instantiate(message),
            other => other,
        }
    }

    fn call_error(&self, e: wasmtime::Error) -> InvokeError {
        let limits = &self.config.limits;
        if let Some(host) = e.downcast_ref::<HostTrap>() {
            return match host {
                HostTrap::Abort(message) => InvokeError::Contract {
                    message: message.clone(),
                },
                HostTrap::Limit(LimitExceeded::Fuel { .. }) => LimitExceeded::Fuel {
                    limit: limits.fuel_per_call,
                }
                .into(),
                HostTrap::Limit(limit) => limit.clone().into(),
                HostTrap::State(state) => state.clone().into(),
                HostTrap::Abi(message) => InvokeError::Abi {
                    message: message.clone(),
                },
            };
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => LimitExceeded::Fuel {
                limit: limits.fuel_per_call,
            }
            .into(),
            Some(Trap::StackOverflow) => LimitExceeded::Stack {
                limit_bytes: self.config.stack_bytes_max,
            }
            .into(),
            Some(Trap::Interrupt) => LimitExceeded::WallClock {
                limit_ms: limits.wall_clock_ms_max,
            }
            .into(),
            Some(trap) => InvokeError::Trap {
                message: trap.to_string(),
            },
            None => InvokeError::Trap {
                message: format!("{e:#}"),
            },
        }
    }
}
