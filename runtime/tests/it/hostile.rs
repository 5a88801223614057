//! Hostile modules and calls: each ends with one specific typed error, and the runtime
//! keeps serving afterwards.

use crate::common::*;
use runnel_runtime::{InvokeError, LimitExceeded, LoadError, Runtime};

fn load_err(runtime: &Runtime, wasm: &[u8]) -> LoadError {
    let err = runtime.install(wasm).expect_err("module must be refused");
    assert_still_serving(runtime);
    err
}

fn call_err(runtime: &Runtime, wasm: &[u8], function: &str, args: &[&[u8]]) -> InvokeError {
    let contract = runtime.install(wasm).expect("module loads");
    let err = call(runtime, &contract, function, args, empty()).expect_err("call must fail");
    assert_still_serving(runtime);
    // The same module is reusable after its failed call.
    let again = call(runtime, &contract, function, args, empty()).expect_err("fails again");
    assert_eq!(again, err, "a failing call is deterministic");
    err
}

#[test]
fn malformed_bytes_are_refused() {
    let rt = runtime(|_| {});
    for bytes in [&b"not wasm at all"[..], b"\0asm\x01\0\0\0\x01\xff\xff", b""] {
        let err = load_err(&rt, bytes);
        assert!(matches!(err, LoadError::Malformed { .. }), "{err}");
    }
}

#[test]
fn oversized_module_is_refused() {
    let rt = runtime(|c| c.module_bytes_max = 1000);
    let padding = "x".repeat(2000);
    let big = module(&format!(r#"(data (i32.const 0) "{padding}")"#));
    let err = load_err(&rt, &big);
    assert!(
        matches!(
            err,
            LoadError::TooLarge {
                limit_bytes: 1000,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("module_bytes_max = 1000"), "{err}");
}

#[test]
fn wrong_or_missing_abi_version_is_refused() {
    let rt = runtime(|_| {});
    let v2 = module_with(IMPORTS, r#"(func (export "runnel_abi_v2"))"#, "");
    assert_eq!(
        load_err(&rt, &v2),
        LoadError::AbiVersion {
            found: Some(2),
            supported: 1
        }
    );
    let none = module_with(IMPORTS, "", "");
    let err = load_err(&rt, &none);
    assert_eq!(
        err,
        LoadError::AbiVersion {
            found: None,
            supported: 1
        }
    );
    assert!(err.to_string().contains("runnel_abi_v1"), "{err}");
}

#[test]
fn unknown_imports_are_refused() {
    let rt = runtime(|_| {});
    let wasi = module_with(
        r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))"#,
        r#"(func (export "runnel_abi_v1"))"#,
        "",
    );
    assert!(
        matches!(load_err(&rt, &wasi), LoadError::ForbiddenImport { ref module, .. } if module == "wasi_snapshot_preview1")
    );
    let unknown = module_with(
        r#"(import "runnel" "exec_shell" (func (param i32 i32)))"#,
        r#"(func (export "runnel_abi_v1"))"#,
        "",
    );
    assert!(
        matches!(load_err(&rt, &unknown), LoadError::ForbiddenImport { ref name, .. } if name == "exec_shell")
    );
    let memory_import = module_with(
        r#"(import "runnel" "state_get" (memory 1))"#,
        r#"(func (export "runnel_abi_v1"))"#,
        "",
    );
    assert!(matches!(
        load_err(&rt, &memory_import),
        LoadError::Malformed { .. } | LoadError::ForbiddenImport { .. }
    ));
    let wrong_type = module_with(
        r#"(import "runnel" "state_get" (func (param i32) (result i32)))"#,
        r#"(func (export "runnel_abi_v1"))"#,
        "",
    );
    assert!(
        matches!(load_err(&rt, &wrong_type), LoadError::Signature { ref item, .. } if item == "import runnel::state_get")
    );
}

#[test]
fn missing_exports_are_refused() {
    let rt = runtime(|_| {});
    let no_alloc =
        wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "runnel_abi_v1")))"#)
            .expect("wat");
    assert_eq!(
        load_err(&rt, &no_alloc),
        LoadError::MissingExport {
            name: "runnel_alloc".into()
        }
    );
    let no_memory = wat::parse_str(
        r#"(module (memory 1) (func (export "runnel_abi_v1"))
                   (func (export "runnel_alloc") (param i32) (result i32) (i32.const 0)))"#,
    )
    .expect("wat");
    assert_eq!(
        load_err(&rt, &no_memory),
        LoadError::MissingExport {
            name: "memory".into()
        }
    );
    let bad_fn = module(r#"(func (export "runnel_fn_f") (param i32) (result i32) (i32.const 0))"#);
    assert!(
        matches!(load_err(&rt, &bad_fn), LoadError::Signature { ref item, .. } if item == "export runnel_fn_f")
    );

    let contract = rt.install(&healthy()).expect("loads");
    let err = call(&rt, &contract, "missing", &[], empty()).expect_err("no such function");
    assert_eq!(
        err,
        InvokeError::FunctionNotFound {
            function: "missing".into(),
            available: vec!["ok".into()]
        }
    );
}

#[test]
fn start_function_is_refused() {
    let rt = runtime(|_| {});
    let wasm = module(r#"(func $boom unreachable) (start $boom)"#);
    assert_eq!(load_err(&rt, &wasm), LoadError::StartFunction);
}

#[test]
fn wasi_entry_points_are_refused() {
    let rt = runtime(|_| {});
    for name in ["_start", "_initialize"] {
        let wasm = module(&format!(r#"(func (export "{name}"))"#));
        assert_eq!(
            load_err(&rt, &wasm),
            LoadError::EntryPoint { name: name.into() },
            "{name}"
        );
    }
}

#[test]
fn simd_threads_and_multiple_memories_are_refused() {
    let rt = runtime(|_| {});
    let simd =
        module(r#"(func (export "runnel_fn_f") (param i32 i32) (drop (v128.const i64x2 0 0)))"#);
    assert!(matches!(load_err(&rt, &simd), LoadError::Malformed { .. }));
    let shared = wat::parse_str(
        r#"(module (memory (export "memory") 1 1 shared) (func (export "runnel_abi_v1"))
                   (func (export "runnel_alloc") (param i32) (result i32) (i32.const 0)))"#,
    )
    .expect("wat");
    assert!(matches!(
        load_err(&rt, &shared),
        LoadError::Malformed { .. }
    ));
}

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let rt = runtime(|c| c.limits.fuel_per_call = 2_000_000);
    let wasm = module(r#"(func (export "runnel_fn_spin") (param i32 i32) (loop (br 0)))"#);
    let err = call_err(&rt, &wasm, "spin", &[]);
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::Fuel { limit: 2_000_000 })
    );
    assert_eq!(err.code(), "FUEL_EXHAUSTED");
}

#[test]
fn wall_clock_backstop_stops_a_call_fuel_would_allow() {
    let rt = runtime(|c| {
        c.limits.fuel_per_call = u64::MAX / 2;
        c.limits.wall_clock_ms_max = 30;
    });
    let wasm = module(r#"(func (export "runnel_fn_spin") (param i32 i32) (loop (br 0)))"#);
    let contract = rt.install(&wasm).expect("loads");
    let err = call(&rt, &contract, "spin", &[], empty()).expect_err("stopped");
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::WallClock { limit_ms: 30 })
    );
    assert_still_serving(&rt);
}

#[test]
fn memory_grow_bomb_hits_the_memory_limit() {
    let rt = runtime(|c| c.limits.memory_bytes_max = 1 << 20);
    let wasm = module(
        r#"(func (export "runnel_fn_bomb") (param i32 i32)
             (loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))))"#,
    );
    let err = call_err(&rt, &wasm, "bomb", &[]);
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::Memory {
            requested_bytes: (1 << 20) + 65536,
            limit_bytes: 1 << 20
        })
    );
    // A module that asks for too much up front is refused at load time.
    let greedy = wat::parse_str(
        r#"(module (memory (export "memory") 100) (func (export "runnel_abi_v1"))
                   (func (export "runnel_alloc") (param i32) (result i32) (i32.const 0)))"#,
    )
    .expect("wat");
    assert!(matches!(
        load_err(&rt, &greedy),
        LoadError::MemoryTooLarge { .. }
    ));
}

#[test]
fn table_growth_hits_the_table_limit() {
    let rt = runtime(|c| c.limits.table_elements_max = 100);
    let wasm = module(
        r#"(table $t 10 funcref)
           (func (export "runnel_fn_grow") (param i32 i32)
             (drop (table.grow $t (ref.null func) (i32.const 1000))))"#,
    );
    assert_eq!(
        call_err(&rt, &wasm, "grow", &[]),
        InvokeError::Limit(LimitExceeded::Table {
            requested: 1010,
            limit: 100
        })
    );
    let big = module(r#"(table 500 funcref)"#);
    assert!(matches!(load_err(&rt, &big), LoadError::Shape { .. }));
}

#[test]
fn deep_recursion_exhausts_the_stack() {
    let rt = runtime(|c| c.stack_bytes_max = 128 << 10);
    let wasm = module(
        r#"(func $down (param i64) (result i64)
             (i64.add (call $down (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
           (func (export "runnel_fn_recurse") (param i32 i32)
             (drop (call $down (i64.const 0))))"#,
    );
    let err = call_err(&rt, &wasm, "recurse", &[]);
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::Stack {
            limit_bytes: 128 << 10
        })
    );
}

#[test]
fn oversized_return_value_is_refused() {
    let rt = runtime(|c| c.limits.return_bytes_max = 1024);
    let wasm = module(
        r#"(func (export "runnel_fn_big") (param i32 i32)
             (call $return_value (i32.const 0) (i32.const 4096)))"#,
    );
    let err = call_err(&rt, &wasm, "big", &[]);
    assert_eq!(
        err,
        InvokeError::Limit(LimitExceeded::ReturnSize {
            size_bytes: 4096,
            limit_bytes: 1024
        })
    );
}

#[test]
fn oversized_key_and_value_are_refused() {
    let rt = runtime(|c| {
        c.limits.key_bytes_max = 64;
        c.limits.value_bytes_max = 256;
    });
    let wasm = module(
        r#"(func (export "runnel_fn_bigkey") (param i32 i32)
             (call $state_put (i32.const 0) (i32.const 65) (i32.const 0) (i32.const 1)))
           (func (export "runnel_fn_bigvalue") (param i32 i32)
             (call $state_put (i32.const 0) (i32.const 8) (i32.const 0) (i32.const 257)))
           (func (export "runnel_fn_bigread") (param i32 i32)
             (drop (call $state_get (i32.const 0) (i32.const 1000))))"#,
    );
    assert_eq!(
        call_err(&rt, &wasm, "bigkey", &[]),
        InvokeError::Limit(LimitExceeded::KeySize {
            size_bytes: 65,
            limit_bytes: 64
        })
    );
    assert_eq!(
        call_err(&rt, &wasm, "bigvalue", &[]),
        InvokeError::Limit(LimitExceeded::ValueSize {
            size_bytes: 257,
            limit_bytes: 256
        })
    );
    assert_eq!(
        call_err(&rt, &wasm, "bigread", &[]),
        InvokeError::Limit(LimitExceeded::KeySize {
            size_bytes: 1000,
            limit_bytes: 64
        })
    );
}

#[test]
fn too_many_events_are_refused() {
    let rt = runtime(|c| c.limits.events_per_call_max = 8);
    let wasm = module(
        r#"(data (i32.const 0) "Ping")
           (func (export "runnel_fn_chatty") (param i32 i32)
             (loop (call $event_emit (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0)) (br 0)))"#,
    );
    assert_eq!(
        call_err(&rt, &wasm, "chatty", &[]),
        InvokeError::Limit(LimitExceeded::Events { limit: 8 })
    );
}

#[test]
fn oversized_arguments_are_refused() {
    let rt = runtime(|c| c.limits.args_bytes_max = 100);
    let contract = rt.install(&healthy()).expect("loads");
    let big = vec![7u8; 200];
    let err = call(&rt, &contract, "ok", &[&big], empty()).expect_err("too big");
    assert!(matches!(
        err,
        InvokeError::Limit(LimitExceeded::ArgsSize {
            limit_bytes: 100,
            ..
        })
    ));
}

#[test]
fn guest_abi_misuse_is_a_typed_error() {
    let rt = runtime(|_| {});
    let wasm = module(
        r#"(func (export "runnel_fn_wild") (param i32 i32)
             (call $state_put (i32.const 0x7fff0000) (i32.const 8) (i32.const 0) (i32.const 1)))
           (func (export "runnel_fn_negative") (param i32 i32)
             (call $state_put (i32.const 0) (i32.const -1) (i32.const 0) (i32.const 1)))
           (func (export "runnel_fn_handle") (param i32 i32)
             (drop (call $range_next (i32.const 7))))
           (func (export "runnel_fn_twice") (param i32 i32)
             (call $return_value (i32.const 0) (i32.const 1))
             (call $return_value (i32.const 0) (i32.const 1)))
           (func (export "runnel_fn_emptykey") (param i32 i32)
             (call $state_put (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 1)))"#,
    );
    for function in ["wild", "negative", "handle", "twice", "emptykey"] {
        let err = call_err(&rt, &wasm, function, &[]);
        assert!(matches!(err, InvokeError::Abi { .. }), "{function}: {err}");
    }
}

#[test]
fn contract_abort_and_traps_are_distinct() {
    let rt = runtime(|_| {});
    let wasm = module(
        r#"(data (i32.const 0) "insufficient balance")
           (func (export "runnel_fn_refuse") (param i32 i32)
             (call $abort (i32.const 0) (i32.const 20)))
           (func (export "runnel_fn_crash") (param i32 i32) unreachable)
           (func (export "runnel_fn_divide") (param i32 i32)
             (drop (i32.div_u (i32.const 1) (i32.const 0))))"#,
    );
    assert_eq!(
        call_err(&rt, &wasm, "refuse", &[]),
        InvokeError::Contract {
            message: "insufficient balance".into()
        }
    );
    assert!(
        matches!(call_err(&rt, &wasm, "crash", &[]), InvokeError::Trap { ref message } if message.contains("unreachable"))
    );
    assert!(
        matches!(call_err(&rt, &wasm, "divide", &[]), InvokeError::Trap { ref message } if message.contains("divide by zero"))
    );
}

#[test]
fn float_nan_results_are_canonical_on_every_run() {
    // 0/0 yields a NaN whose sign bit differs by CPU without canonicalisation (x86 gives
    // 0xffc00000); Runnel always produces the canonical quiet NaN.
    let wasm = module(
        r#"(func (export "runnel_fn_nan") (param i32 i32)
             (i32.store (i32.const 0)
               (i32.reinterpret_f32 (f32.div (f32.const 0) (f32.const 0))))
             (i64.store (i32.const 4)
               (i64.reinterpret_f64 (f64.sqrt (f64.const -1))))
             (call $return_value (i32.const 0) (i32.const 12)))"#,
    );
    let mut expected = 0x7fc0_0000u32.to_le_bytes().to_vec();
    expected.extend_from_slice(&0x7ff8_0000_0000_0000u64.to_le_bytes());
    for pooling in [true, false] {
        let rt = runtime(|c| c.pooling = pooling);
        let contract = rt.install(&wasm).expect("loads");
        for _ in 0..3 {
            let sim = call(&rt, &contract, "nan", &[], empty()).expect("runs");
            assert_eq!(sim.result, expected);
        }
    }
}

/// `grind(n)`: reads key `k` `n` times (`n` the first argument, a u32 little-endian), then
/// returns how many reads it made. A host call buys more of the host's time per unit of
/// fuel than any instruction, so this is the work that comes nearest the wall-clock
/// backstop for the fuel a call has.
fn grinder() -> Vec<u8> {
    module(
        r#"(data (i32.const 16) "k")
           (func (export "runnel_fn_grind") (param $p i32) (param $l i32)
             (local $n i32) (local $i i32)
             (local.set $n (i32.load (i32.add (local.get $p) (i32.const 8))))
             (block $done
               (loop $again
                 (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
                 (drop (call $state_get (i32.const 16) (i32.const 1)))
                 (local.set $i (i32.add (local.get $i) (i32.const 1)))
                 (br $again)))
             (i32.store (i32.const 32) (local.get $i))
             (call $return_value (i32.const 32) (i32.const 4)))"#,
    )
}

/// What a peer would sign, or the error it would answer instead.
type Outcome = Result<(Vec<u8>, u64, runnel_runtime::NsRwSet), InvokeError>;

/// `grind(n)` on every peer at once, each on a thread of its own.
fn grind_everywhere(
    peers: &[(Runtime, std::sync::Arc<runnel_runtime::Contract>)],
    n: u32,
) -> Vec<Outcome> {
    let mut state = runnel_runtime::MemoryState::new();
    state.insert("k", "v", runnel_runtime::Version::from_seq(1));
    let state: std::sync::Arc<dyn runnel_runtime::StateView> = std::sync::Arc::new(state);
    let arg = n.to_le_bytes();
    std::thread::scope(|scope| {
        let calls: Vec<_> = peers
            .iter()
            .map(|(runtime, contract)| {
                let state = state.clone();
                scope.spawn(move || {
                    call(runtime, contract, "grind", &[&arg], state)
                        .map(|sim| (sim.result, sim.fuel_used, sim.rwset))
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    })
}

#[test]
fn work_at_the_edge_of_the_fuel_ends_the_same_on_every_peer_fuel_not_time_deciding() {
    // Three peers with the limits every node runs with, more calls at once than this
    // machine has cores: a slower machine.
    let limits = runnel_runtime::Limits::default();
    let peers: Vec<_> = (0..3)
        .map(|_| {
            let runtime = runtime(|_| {});
            let contract = runtime.install(&grinder()).expect("loads");
            (runtime, contract)
        })
        .collect();
    let fuel = |n: u32| grind_everywhere(&peers[..1], n)[0].clone().expect("fits").1;
    let per_read = fuel(2_000) - fuel(1_000);
    let per_read = per_read / 1_000;
    let base = fuel(1_000) - 1_000 * per_read;
    // The most reads a call pays for: that call ends with its result, one more read runs
    // out of fuel; on every peer alike, whatever each one's clock says.
    let mut most = u32::try_from((limits.fuel_per_call - base) / per_read).unwrap();
    while grind_everywhere(&peers[..1], most)[0].is_err() {
        most -= 1;
    }
    for n in [most, most + 1, u32::MAX] {
        let started = std::time::Instant::now();
        let outcomes = grind_everywhere(&peers, n);
        let elapsed = started.elapsed();
        for outcome in &outcomes {
            assert_eq!(outcome, &outcomes[0], "grind({n}): the peers disagree");
        }
        match &outcomes[0] {
            Ok((result, fuel_used, _)) => {
                assert_eq!(n, most);
                assert_eq!(result, &most.to_le_bytes());
                assert!(*fuel_used <= limits.fuel_per_call);
            }
            Err(error) => {
                assert_ne!(n, most);
                assert_eq!(
                    error,
                    &InvokeError::Limit(LimitExceeded::Fuel {
                        limit: limits.fuel_per_call
                    })
                );
            }
        }
        // The figure, not a threshold: how far from the backstop fuel ran out here.
        eprintln!(
            "grind({n}) on {} peers at once: {} ms; the backstop is {} ms",
            peers.len(),
            elapsed.as_millis(),
            limits.wall_clock_ms_max
        );
    }
}

#[test]
fn a_range_page_read_ahead_is_paid_for_in_fuel() {
    // 64 values of 16 KiB: the first `range_next` reads a page of all of them.
    let mut state = runnel_runtime::MemoryState::new();
    for i in 0..64 {
        state.insert(
            format!("k{i:02}"),
            vec![7u8; 16 << 10],
            runnel_runtime::Version::from_seq(1),
        );
    }
    let rt = runtime(|_| {});
    let wasm = module(
        r#"(data (i32.const 16) "k")
           (func (export "runnel_fn_first") (param i32 i32)
             (drop (call $range_next (call $range_open (i32.const 16) (i32.const 1) (i32.const 0) (i32.const 0)))))"#,
    );
    let contract = rt.install(&wasm).expect("loads");
    let sim = call(&rt, &contract, "first", &[], std::sync::Arc::new(state)).expect("runs");
    // Before this test, the call paid for the one entry it took (16 KiB), not the 1 MiB
    // the host read for it.
    let fetched = 64 * (3 + (16 << 10)) as u64;
    assert!(
        sim.fuel_used >= fetched,
        "{} fuel for {fetched} bytes read",
        sim.fuel_used
    );
    assert_still_serving(&rt);
}
