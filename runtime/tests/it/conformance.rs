//! The TypeScript (AssemblyScript) examples against their Rust twins in the real runtime:
//! the same calls on the same state give byte-identical results, read/write sets and
//! events, and the same errors, so a client cannot tell which one it called.

use std::sync::Arc;

use crate::common::*;
use runnel_runtime::{
    CallContext, Contract, Creator, InvokeError, MemoryState, Runtime, StateView, Version,
};

/// A caller of `org` with `role`, named `name`.
fn caller(org: &str, role: &str, name: &str) -> CallContext {
    CallContext {
        creator: Creator {
            org: org.into(),
            role: role.into(),
            name: name.into(),
            cert: vec![7, 7, 7],
        },
        ..ctx()
    }
}

/// One call of a script: who calls, the function, its arguments.
struct Step<'a> {
    who: &'a CallContext,
    function: &'a str,
    args: Vec<Vec<u8>>,
}

fn step<'a>(who: &'a CallContext, function: &'a str, args: &[&[u8]]) -> Step<'a> {
    Step {
        who,
        function,
        args: args.iter().map(|a| a.to_vec()).collect(),
    }
}

/// Runs `script` on both modules, each call on the state the calls before it left (the
/// writes of a successful call applied at the next version), and asserts each outcome is
/// the same. Returns how many calls succeeded.
fn same_outcomes(
    runtime: &Runtime,
    (rust, typescript): (&Contract, &Contract),
    mut state: MemoryState,
    script: &[Step],
) -> usize {
    let mut succeeded = 0;
    for (seq, step) in (1u64..).zip(script) {
        let view: Arc<dyn StateView> = Arc::new(state.clone());
        let run = |contract: &Contract| -> Result<_, InvokeError> {
            runtime.invoke(
                contract,
                "conformance",
                step.function,
                &step.args,
                step.who,
                view.clone(),
            )
        };
        let shown = || {
            let args: Vec<String> = step
                .args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            format!("{}({})", step.function, args.join(", "))
        };
        match (run(rust), run(typescript)) {
            (Ok(expected), Ok(got)) => {
                assert_eq!(
                    String::from_utf8_lossy(&got.result),
                    String::from_utf8_lossy(&expected.result),
                    "{}: result",
                    shown()
                );
                assert_eq!(got.rwset, expected.rwset, "{}: read/write set", shown());
                assert_eq!(got.events, expected.events, "{}: events", shown());
                state.apply(&expected.rwset, Version::from_seq(seq));
                succeeded += 1;
            }
            (Err(expected), Err(got)) => assert_eq!(
                without_float(&got.to_string()),
                without_float(&expected.to_string()),
                "{}: error",
                shown()
            ),
            (expected, got) => panic!(
                "{}: Rust {:?}, TypeScript {:?}",
                shown(),
                expected.map(|s| s.result),
                got.map(|s| s.result)
            ),
        }
    }
    succeeded
}

/// `message` with the number of a "floating point `...`" description left out: for a
/// float passed where an integer is expected, the TypeScript SDK shows the number as
/// written where serde_json prints the parsed f64 (`1e3` against `1000.0`), which would
/// cost every module a float printer (docs/contracts.md lists it). Everything else in
/// the message must match.
fn without_float(message: &str) -> String {
    const FLOAT: &str = "floating point `";
    match message.split_once(FLOAT) {
        Some((before, after)) => {
            let rest = after.split_once('`').map_or("", |(_, rest)| rest);
            format!("{before}{FLOAT}…`{rest}")
        }
        None => message.to_string(),
    }
}

fn both(runtime: &Runtime, example: &str) -> (Arc<Contract>, Arc<Contract>) {
    let rust = runnel_wasm_build::wasm(example).expect("the Rust example builds");
    let typescript =
        runnel_wasm_build::typescript_wasm(example).expect("the TypeScript example builds");
    (
        runtime.install(&rust).expect("the Rust module loads"),
        runtime
            .install(&typescript)
            .expect("the TypeScript module loads"),
    )
}

#[test]
fn kv_in_typescript_answers_as_kv_in_rust() {
    let runtime = runtime(|_| {});
    let (rust, typescript) = both(&runtime, "kv");
    let client = caller("Org1", "client", "alice");
    let kilobyte = "v".repeat(1024);
    let mut state = MemoryState::new();
    // Bytes another contract or an older version may have left: not UTF-8.
    state.insert(b"raw".to_vec(), vec![0xff, 0xfe], Version::from_seq(1));
    state.insert(vec![b'r', 0xc3], b"bad key".to_vec(), Version::from_seq(1));
    let script = [
        step(&client, "put", &[b"k1", b"v1"]),
        step(&client, "get", &[b"k1"]),
        step(&client, "get", &[b"missing"]),
        step(&client, "update", &[b"k1", b"v2"]),
        step(&client, "update", &[b"fresh", b"new"]),
        step(&client, "put", &[b"a/1", kilobyte.as_bytes()]),
        step(
            &client,
            "put",
            &[b"a/2", "caf\u{e9} \u{1f980} \"quoted\"\n".as_bytes()],
        ),
        step(&client, "put", &[b"\"json key\"", b"{\"a\":1}"]),
        step(&client, "get", &[b"json key"]),
        step(&client, "get", &[b"a/2"]),
        step(&client, "range", &[b"a/", b"a/~"]),
        step(&client, "range", &[b"a/", b""]),
        step(&client, "range", &[b"", b""]),
        step(&client, "delete", &[b"k1"]),
        step(&client, "delete", &[b"never there"]),
        step(&client, "get", &[b"k1"]),
        step(&client, "get", &[b"raw"]),
        step(&client, "put", &[&[0xff, 0x00], b"v"]),
        step(&client, "put", &[b"k"]),
        step(&client, "put", &[b"k", b"v", b"extra"]),
        step(&client, "get", &[]),
        step(&client, "nope", &[b"k"]),
    ];
    let succeeded = same_outcomes(&runtime, (&rust, &typescript), state, &script);
    assert!(succeeded >= 14, "{succeeded} calls succeeded");
}

#[test]
fn token_in_typescript_answers_as_token_in_rust() {
    let runtime = runtime(|_| {});
    let (rust, typescript) = both(&runtime, "token");
    let admin = caller("Org1", "admin", "minter");
    let alice = caller("Org1", "client", "alice");
    let bob = caller("Org2", "client", "bob");
    let max = u64::MAX.to_string();
    let script = [
        step(&admin, "mint", &[b"Org1/alice", b"100"]),
        step(&alice, "mint", &[b"Org1/alice", b"100"]),
        step(&alice, "balance", &[b"Org1/alice"]),
        step(&alice, "balance", &[b"Org2/bob"]),
        step(&alice, "transfer", &[b"Org2/bob", b"30"]),
        step(&bob, "transfer", &[b"Org1/alice", b"5"]),
        step(&bob, "transfer", &[b"Org1/alice", b"500"]),
        step(&alice, "transfer", &[b"Org2/bob", b"0"]),
        step(&alice, "transfer", &[b"Org1/alice", b"1"]),
        step(&alice, "transfer", &[b"Org2/bob", b"abc"]),
        step(&alice, "transfer", &[b"Org2/bob", b"-5"]),
        step(&alice, "transfer", &[b"Org2/bob", b"1.5"]),
        step(&alice, "transfer", &[b"Org2/bob", b"1e3"]),
        step(&alice, "transfer", &[b"Org2/bob", b"\"7\""]),
        step(&alice, "transfer", &[b"Org2/bob", b"99999999999999999999"]),
        step(&alice, "transfer", &[b"Org2/bob"]),
        step(&admin, "mint", &[b"Org2/bob", max.as_bytes()]),
        step(&alice, "balance", &[b"Org2/bob"]),
        step(&alice, "total_supply", &[]),
        step(&bob, "whoami", &[]),
        step(&admin, "mint", &[b"\"Org3/carol\"", b"1"]),
        step(&alice, "balance", &[b"Org3/carol"]),
    ];
    let succeeded = same_outcomes(&runtime, (&rust, &typescript), MemoryState::new(), &script);
    assert!(succeeded >= 9, "{succeeded} calls succeeded");
}

#[test]
fn a_typescript_loop_runs_out_of_fuel_and_its_abort_reaches_the_caller() {
    let runtime = runtime(|_| {});
    let probe = runnel_wasm_build::typescript_contract(
        "contracts/sdk-as/test/contracts/probe/index.ts",
        "probe_ts",
    )
    .expect("the TypeScript probe builds");
    let probe = runtime.install(&probe).expect("the probe loads");
    let client = caller("Org1", "client", "alice");
    let invoke = |function: &str, args: &[&[u8]]| {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        runtime.invoke(&probe, "probe", function, &args, &client, empty())
    };
    // An endless loop: the same typed error as a Rust module's.
    let err = invoke("spin", &[u64::MAX.to_string().as_bytes()]).expect_err("no end");
    assert!(
        matches!(
            err,
            InvokeError::Limit(runnel_runtime::LimitExceeded::Fuel { .. })
        ),
        "{err:?}"
    );
    // A bug (an index out of range) and an exception: the caller reads where and why.
    let err = invoke("explode", &[]).expect_err("a bug");
    assert!(err.to_string().contains("Index out of range"), "{err}");
    let err = invoke("throws", &[]).expect_err("thrown");
    assert!(err.to_string().contains("thrown on purpose"), "{err}");
    // The runtime still serves.
    assert_still_serving(&runtime);
}
