//! Typed errors. Each names what went wrong, which limit, and the value seen, so an
//! operator or contract author can act on it without reading the runtime's code.

use crate::CodeHash;

/// A contract module was refused or could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The module is larger than `module_bytes_max`.
    #[error("module is {size_bytes} bytes, over the limit module_bytes_max = {limit_bytes}")]
    TooLarge {
        /// Size of the module.
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// Not a valid WebAssembly module, or it uses a feature Runnel does not allow
    /// (threads, SIMD, memory64, exceptions, GC, ...).
    #[error("invalid module at byte offset {offset}: {message}")]
    Malformed {
        /// Offset in the module where validation failed.
        offset: usize,
        /// What the validator said.
        message: String,
    },
    /// The module does not export a `runnel_abi_v1` marker.
    #[error("{}", abi_message(*.found, *.supported))]
    AbiVersion {
        /// The ABI version the module declares (`runnel_abi_vN`), if any.
        found: Option<u32>,
        /// The ABI version this runtime speaks.
        supported: u32,
    },
    /// An import other than the host functions of module `runnel`.
    #[error(
        "forbidden import {module}::{name}: contracts may only import the functions of module `runnel` (see docs/abi.md)"
    )]
    ForbiddenImport {
        /// Import module.
        module: String,
        /// Import name.
        name: String,
    },
    /// A `runnel` import or a required export with the wrong type.
    #[error("{item} has type {found}, expected {expected}")]
    Signature {
        /// The import or export.
        item: String,
        /// The type the ABI requires.
        expected: String,
        /// The type the module declares.
        found: String,
    },
    /// A required export is missing.
    #[error("missing export `{name}` (required by ABI v1, see docs/abi.md)")]
    MissingExport {
        /// The export name.
        name: String,
    },
    /// The module has a start function; contracts must not run code at instantiation.
    #[error("module has a start function; contracts must not run code when instantiated")]
    StartFunction,
    /// The module exports a WASI entry point (`_start`, `_initialize`) that nothing would
    /// call: it was built for another host, and its set-up code would never run.
    #[error(
        "module exports `{name}`, an entry point no Runnel node calls: build it as a library without one (its set-up code would never run)"
    )]
    EntryPoint {
        /// The export's name.
        name: String,
    },
    /// The module declares more initial memory than a call may use.
    #[error(
        "module needs {initial_bytes} bytes of initial memory, over the limit memory_bytes_max = {limit_bytes}"
    )]
    MemoryTooLarge {
        /// Declared initial memory.
        initial_bytes: u64,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// The module declares more memories or tables than allowed, or a table too large.
    #[error("module declares {what}")]
    Shape {
        /// What is wrong with the module's shape.
        what: String,
    },
    /// Cranelift could not compile the module.
    #[error("compiling the module failed: {0}")]
    Compile(String),
    /// The compiled-artifact cache could not be read or written.
    #[error("artifact cache {path}: {message}")]
    Cache {
        /// The file or directory.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// No module with this code hash is installed or cached.
    #[error("no contract module with code hash {0} is installed")]
    NotFound(CodeHash),
}

fn abi_message(found: Option<u32>, supported: u32) -> String {
    match found {
        Some(v) => format!(
            "module speaks contract ABI version {v}; this node supports version {supported} (rebuild the contract against a matching runnel-contract)"
        ),
        None => format!(
            "module exports no ABI version marker `runnel_abi_v{supported}`; is it a Runnel contract built with runnel-contract?"
        ),
    }
}

/// A limit a call ran into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    /// Out of fuel.
    #[error("fuel exhausted: the call used all {limit} units (fuel_per_call)")]
    Fuel {
        /// The limit in force.
        limit: u64,
    },
    /// Memory growth beyond `memory_bytes_max`.
    #[error(
        "memory limit exceeded: the call asked for {requested_bytes} bytes of linear memory, limit memory_bytes_max = {limit_bytes}"
    )]
    Memory {
        /// Memory asked for.
        requested_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// Table growth beyond `table_elements_max`.
    #[error(
        "table limit exceeded: the call asked for {requested} table elements, limit table_elements_max = {limit}"
    )]
    Table {
        /// Elements asked for.
        requested: usize,
        /// The limit in force.
        limit: usize,
    },
    /// Wasm call stack exhausted (deep recursion).
    #[error(
        "stack exhausted: call depth exceeded the {limit_bytes}-byte wasm stack (stack_bytes_max)"
    )]
    Stack {
        /// The limit in force.
        limit_bytes: usize,
    },
    /// The wall-clock backstop fired.
    #[error(
        "wall-clock limit exceeded: the call ran longer than {limit_ms} ms (wall_clock_ms_max)"
    )]
    WallClock {
        /// The limit in force.
        limit_ms: u64,
    },
    /// A key over `key_bytes_max`.
    #[error("key of {size_bytes} bytes exceeds key_bytes_max = {limit_bytes}")]
    KeySize {
        /// Size of the key.
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// A value over `value_bytes_max`.
    #[error("value of {size_bytes} bytes exceeds value_bytes_max = {limit_bytes}")]
    ValueSize {
        /// Size of the value.
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// More distinct keys written than `writes_per_call_max`.
    #[error("more than {limit} keys written in one call (writes_per_call_max)")]
    Writes {
        /// The limit in force.
        limit: usize,
    },
    /// More events than `events_per_call_max`.
    #[error("more than {limit} events emitted in one call (events_per_call_max)")]
    Events {
        /// The limit in force.
        limit: usize,
    },
    /// An event over `event_bytes_max`.
    #[error("event of {size_bytes} bytes exceeds event_bytes_max = {limit_bytes}")]
    EventSize {
        /// Size of the event (name + payload).
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// Range scans visited more than `range_scan_keys_max` entries.
    #[error("range scans visited more than {limit} keys in one call (range_scan_keys_max)")]
    RangeScan {
        /// The limit in force.
        limit: usize,
    },
    /// More range iterators than `ranges_per_call_max`.
    #[error("more than {limit} range iterators opened in one call (ranges_per_call_max)")]
    Ranges {
        /// The limit in force.
        limit: usize,
    },
    /// A result over `return_bytes_max`.
    #[error("result of {size_bytes} bytes exceeds return_bytes_max = {limit_bytes}")]
    ReturnSize {
        /// Size of the result.
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
    /// Arguments over `args_bytes_max`.
    #[error("arguments of {size_bytes} bytes exceed args_bytes_max = {limit_bytes}")]
    ArgsSize {
        /// Size of the encoded arguments.
        size_bytes: usize,
        /// The limit in force.
        limit_bytes: usize,
    },
}

/// A state view could not be read (storage failure). Not the contract's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state read failed: {0}")]
pub struct StateError(pub String);

/// A call did not produce a simulation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The contract has no such function.
    #[error("contract has no function `{function}` (it has: {})", .available.join(", "))]
    FunctionNotFound {
        /// The function asked for.
        function: String,
        /// The functions the contract exports.
        available: Vec<String>,
    },
    /// A limit was exceeded.
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The contract ended the call with an error (its own message).
    #[error("contract error: {message}")]
    Contract {
        /// The contract's message.
        message: String,
    },
    /// The module trapped (a bug in the contract: unreachable, out-of-bounds access, ...).
    #[error("contract trapped: {message}")]
    Trap {
        /// The trap.
        message: String,
    },
    /// The module broke the ABI (bad pointer, bad handle, result set twice, ...).
    #[error("contract broke the ABI: {message}")]
    Abi {
        /// What it did.
        message: String,
    },
    /// The state could not be read.
    #[error(transparent)]
    State(#[from] StateError),
    /// Every instance slot is in use; retry later.
    #[error("all {instances_max} contract instance slots are busy (instances_max); retry later")]
    Busy {
        /// The pool's size.
        instances_max: u32,
    },
    /// The module could not be instantiated for another reason.
    #[error("instantiating the contract failed: {0}")]
    Instantiate(String),
}

impl InvokeError {
    /// A stable, machine-readable name for the error (used in API status details).
    pub fn code(&self) -> &'static str {
        match self {
            InvokeError::FunctionNotFound { .. } => "FUNCTION_NOT_FOUND",
            InvokeError::Limit(limit) => match limit {
                LimitExceeded::Fuel { .. } => "FUEL_EXHAUSTED",
                LimitExceeded::Memory { .. } => "MEMORY_LIMIT",
                LimitExceeded::Table { .. } => "TABLE_LIMIT",
                LimitExceeded::Stack { .. } => "STACK_EXHAUSTED",
                LimitExceeded::WallClock { .. } => "WALL_CLOCK_LIMIT",
                LimitExceeded::KeySize { .. } => "KEY_TOO_LARGE",
                LimitExceeded::ValueSize { .. } => "VALUE_TOO_LARGE",
                LimitExceeded::Writes { .. } => "TOO_MANY_WRITES",
                LimitExceeded::Events { .. } => "TOO_MANY_EVENTS",
                LimitExceeded::EventSize { .. } => "EVENT_TOO_LARGE",
                LimitExceeded::RangeScan { .. } => "RANGE_SCAN_LIMIT",
                LimitExceeded::Ranges { .. } => "TOO_MANY_RANGES",
                LimitExceeded::ReturnSize { .. } => "RESULT_TOO_LARGE",
                LimitExceeded::ArgsSize { .. } => "ARGS_TOO_LARGE",
            },
            InvokeError::Contract { .. } => "CONTRACT_ERROR",
            InvokeError::Trap { .. } => "CONTRACT_TRAP",
            InvokeError::Abi { .. } => "ABI_VIOLATION",
            InvokeError::State(_) => "STATE_UNAVAILABLE",
            InvokeError::Busy { .. } => "BUSY",
            InvokeError::Instantiate(_) => "INSTANTIATE_FAILED",
        }
    }
}
