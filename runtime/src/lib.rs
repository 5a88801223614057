//! Runnel's contract runtime.
//!
//! A contract is a WebAssembly module speaking the Runnel ABI (docs/abi.md). The runtime
//! validates a module, compiles it once (keeping the artifact on disk, keyed by code hash),
//! and runs a function of it against a [`StateView`] in a fresh, bounded sandbox. The call
//! does not change state: it yields a [`Simulation`] — result bytes, the read/write set
//! (keys read with their versions, range reads, writes), events and fuel used — which the
//! ledger later validates and commits.
//!
//! Determinism is the contract between endorsers: fuel (not time) bounds execution, NaNs
//! are canonicalised, threads and SIMD are off, and the only inputs are the arguments, the
//! state view and the [`CallContext`]. Two runtimes running the same call on the same
//! state produce byte-identical [`Simulation::payload_bytes`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use runnel_runtime::{CallContext, MemoryState, Runtime, RuntimeConfig};
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let wasm = std::fs::read("kv.wasm")?;
//! let contract = runtime.install(&wasm)?;
//! let args = [b"greeting".to_vec(), b"hello".to_vec()];
//! let sim = runtime.invoke(&contract, "kv", "put", &args, &CallContext::default(),
//!                          Arc::new(MemoryState::new()))?;
//! assert_eq!(sim.rwset.writes.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod abi;
mod error;
mod host;
pub mod limits;
mod runtime;
mod state;
pub mod testkit;
pub mod validate;

/// The read/write-set messages of `node/proto/runnel/v1/rwset.proto` (runnel-api's).
pub mod proto {
    pub use runnel_api::proto::{
        ContractEvent, KvRead, KvWrite, NsRwSet, RangeRead, SimulationPayload, Version,
    };
}

pub use error::{InvokeError, LimitExceeded, LoadError, StateError};
pub use host::LogLine;
pub use limits::Limits;
pub use proto::{ContractEvent, KvRead, KvWrite, NsRwSet, RangeRead, Version};
pub use runtime::{CallContext, CodeHash, Contract, Creator, Runtime, RuntimeConfig, Simulation};
pub use state::{MemoryState, StateView, VersionedValue};
