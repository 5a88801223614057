//! Misbehaving Rust contracts end with typed errors; nothing they wrote survives; the
//! runtime keeps serving.

use runnel_runtime::testkit::TestChain;
use runnel_runtime::{InvokeError, LimitExceeded, RuntimeConfig};

const ME: &str = "Org1/client/alice";

fn chain(tweak: impl FnOnce(&mut RuntimeConfig)) -> TestChain {
    let wasm = runnel_wasm_build::wasm("faulty").expect("faulty builds");
    let mut config = RuntimeConfig::default();
    tweak(&mut config);
    TestChain::with_config(&wasm, "faulty", config).expect("loads")
}

#[test]
fn a_panic_reaches_the_caller_as_its_message_and_keeps_nothing() {
    let mut chain = chain(|_| {});
    let err = chain
        .submit(ME, "panic_now", &["the vault is sealed"])
        .expect_err("panics");
    match &err {
        InvokeError::Contract { message } => {
            assert!(message.contains("the vault is sealed"), "{message}");
            assert!(
                message.contains("src/lib.rs"),
                "location included: {message}"
            );
        }
        other => panic!("expected a contract error, got {other}"),
    }
    assert!(
        chain.state().is_empty(),
        "the write before the panic is gone"
    );
    let err = chain
        .call(ME, "out_of_bounds", &["10"])
        .expect_err("panics");
    assert!(
        matches!(err, InvokeError::Contract { ref message } if message.contains("index out of bounds"))
    );
    assert_eq!(
        chain
            .call(ME, "out_of_bounds", &["1"])
            .expect("in bounds")
            .result,
        b"2"
    );
}

#[test]
fn runaway_loops_and_recursion_are_stopped() {
    let chain = chain(|c| c.limits.fuel_per_call = 5_000_000);
    assert_eq!(
        chain.call(ME, "spin", &[]).expect_err("spins"),
        InvokeError::Limit(LimitExceeded::Fuel { limit: 5_000_000 })
    );
    assert_eq!(
        chain.call(ME, "recurse", &["10"]).expect("shallow").result,
        b"55"
    );
    // Deep recursion overflows the contract's shadow stack (a trap) or the wasm stack.
    let err = chain
        .call(ME, "recurse", &["1000000"])
        .expect_err("too deep");
    assert!(
        matches!(
            err,
            InvokeError::Trap { .. } | InvokeError::Limit(LimitExceeded::Stack { .. })
        ),
        "{err}"
    );
    assert_eq!(
        chain
            .call(ME, "recurse", &["3"])
            .expect("still serving")
            .result,
        b"6"
    );
}

#[test]
fn allocation_is_bounded_by_the_memory_limit() {
    let chain = chain(|c| c.limits.memory_bytes_max = 8 << 20);
    assert_eq!(chain.call(ME, "hog", &["4"]).expect("fits").result, b"4");
    let err = chain.call(ME, "hog", &["16"]).expect_err("too much");
    assert!(
        matches!(err, InvokeError::Limit(LimitExceeded::Memory { limit_bytes, .. }) if limit_bytes == 8 << 20),
        "{err}"
    );
    // Many small allocations and frees stay within bounds.
    assert_eq!(
        chain.call(ME, "churn", &["10000"]).expect("churns").result,
        b"88890"
    );
}
