//! Shared helpers: WAT modules speaking ABI v1, and a runtime with small limits.

use std::sync::Arc;

use runnel_runtime::{
    CallContext, Contract, Creator, InvokeError, MemoryState, Runtime, RuntimeConfig, Simulation,
    StateView,
};

/// Every host import of ABI v1, for WAT modules to call.
pub const IMPORTS: &str = r#"
  (import "runnel" "state_get" (func $state_get (param i32 i32) (result i64)))
  (import "runnel" "state_put" (func $state_put (param i32 i32 i32 i32)))
  (import "runnel" "state_delete" (func $state_delete (param i32 i32)))
  (import "runnel" "range_open" (func $range_open (param i32 i32 i32 i32) (result i32)))
  (import "runnel" "range_next" (func $range_next (param i32) (result i64)))
  (import "runnel" "event_emit" (func $event_emit (param i32 i32 i32 i32)))
  (import "runnel" "result_read" (func $result_read (param i32)))
  (import "runnel" "return_value" (func $return_value (param i32 i32)))
  (import "runnel" "abort" (func $abort (param i32 i32)))
"#;

/// A module with the ABI v1 exports (memory, marker, bump allocator at 64 KiB) and `body`.
pub fn module(body: &str) -> Vec<u8> {
    module_with(IMPORTS, "(func (export \"runnel_abi_v1\"))", body)
}

/// Like [`module`], with the imports and ABI marker given.
pub fn module_with(imports: &str, marker: &str, body: &str) -> Vec<u8> {
    let text = format!(
        r#"(module
  {imports}
  (memory (export "memory") 2)
  {marker}
  (global $bump (mut i32) (i32.const 65536))
  (func (export "runnel_alloc") (param $len i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $bump))
    (global.set $bump (i32.add (global.get $bump) (local.get $len)))
    (local.get $ptr))
  {body}
)"#
    );
    wat::parse_str(&text).unwrap_or_else(|e| panic!("bad test WAT: {e}\n{text}"))
}

/// A runtime with the default limits except those `tweak` changes.
pub fn runtime(tweak: impl FnOnce(&mut RuntimeConfig)) -> Runtime {
    let mut config = RuntimeConfig {
        instances_max: 16,
        ..RuntimeConfig::default()
    };
    tweak(&mut config);
    Runtime::new(config).expect("runtime")
}

/// A context for tests.
pub fn ctx() -> CallContext {
    CallContext {
        tx_id: "00aa".into(),
        creator: Creator {
            org: "Org1".into(),
            role: "client".into(),
            name: "alice".into(),
            cert: vec![1, 2, 3],
        },
        timestamp_ms: 1_700_000_000_000,
    }
}

/// Calls `function` with `args` on `state`.
pub fn call(
    runtime: &Runtime,
    contract: &Contract,
    function: &str,
    args: &[&[u8]],
    state: Arc<dyn StateView>,
) -> Result<Simulation, InvokeError> {
    let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
    runtime.invoke(contract, "test", function, &args, &ctx(), state)
}

/// An empty state.
pub fn empty() -> Arc<dyn StateView> {
    Arc::new(MemoryState::new())
}

/// A module with one function `ok` returning "ok", to show a runtime still works.
pub fn healthy() -> Vec<u8> {
    module(
        r#"(data (i32.const 16) "ok")
           (func (export "runnel_fn_ok") (param i32 i32)
             (call $return_value (i32.const 16) (i32.const 2)))"#,
    )
}

/// Asserts that `runtime` still loads and runs a healthy module.
pub fn assert_still_serving(runtime: &Runtime) {
    let contract = runtime.install(&healthy()).expect("healthy module loads");
    let sim = call(runtime, &contract, "ok", &[], empty()).expect("healthy call runs");
    assert_eq!(sim.result, b"ok");
}
