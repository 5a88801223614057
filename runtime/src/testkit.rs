//! A one-contract, in-memory chain for integration tests of built contracts: simulate a
//! call, or submit it (simulate, then apply its writes at the next sequence number).
//! Not a ledger: no signatures, ordering or MVCC validation.

use std::sync::Arc;

use crate::{
    CallContext, Contract, Creator, InvokeError, LoadError, MemoryState, Runtime, RuntimeConfig,
    Simulation, Version,
};

/// A contract installed on an in-memory namespace.
pub struct TestChain {
    runtime: Runtime,
    contract: Arc<Contract>,
    namespace: String,
    state: MemoryState,
    seq: u64,
}

impl TestChain {
    /// Installs `wasm` as namespace `namespace`, with default limits.
    pub fn new(wasm: &[u8], namespace: &str) -> Result<Self, LoadError> {
        Self::with_config(wasm, namespace, RuntimeConfig::default())
    }

    /// Installs `wasm` with the given runtime configuration.
    pub fn with_config(
        wasm: &[u8],
        namespace: &str,
        config: RuntimeConfig,
    ) -> Result<Self, LoadError> {
        let runtime = Runtime::new(config)?;
        let contract = runtime.install(wasm)?;
        Ok(TestChain {
            runtime,
            contract,
            namespace: namespace.to_string(),
            state: MemoryState::new(),
            seq: 0,
        })
    }

    /// Simulates `function(args)` as `who` (`org/role/name`) on the current state.
    pub fn call(
        &self,
        who: &str,
        function: &str,
        args: &[&str],
    ) -> Result<Simulation, InvokeError> {
        let mut parts = who.splitn(3, '/');
        let mut part = || parts.next().unwrap_or_default().to_string();
        let ctx = CallContext {
            tx_id: format!("{:064x}", self.seq + 1),
            creator: Creator {
                org: part(),
                role: part(),
                name: part(),
                cert: Vec::new(),
            },
            timestamp_ms: 1_700_000_000_000 + self.seq,
        };
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let view = Arc::new(self.state.clone());
        self.runtime
            .invoke(&self.contract, &self.namespace, function, &args, &ctx, view)
    }

    /// Simulates the call and, if it succeeds, commits its writes at the next sequence
    /// number.
    pub fn submit(
        &mut self,
        who: &str,
        function: &str,
        args: &[&str],
    ) -> Result<Simulation, InvokeError> {
        let sim = self.call(who, function, args)?;
        self.seq += 1;
        self.state.apply(&sim.rwset, Version::from_seq(self.seq));
        Ok(sim)
    }

    /// The committed state.
    pub fn state(&self) -> &MemoryState {
        &self.state
    }

    /// The runtime (for its configuration or to install more modules).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}
