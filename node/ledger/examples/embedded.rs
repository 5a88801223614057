//! Runnel embedded in a Rust program: open a ledger in a directory, deploy the kv
//! contract, write a key, read it back, and print the transaction's trace.
//!
//! Run: `./scripts/build-contracts.sh`, then
//! `cargo run -p runnel-ledger --example embedded [DIR] [KV_WASM]` (defaults: a fresh temp
//! dir; `target/wasm32-unknown-unknown/contract/kv.wasm`). It needs nothing but the
//! `runnel-ledger` crate.

use std::path::PathBuf;

use runnel_ledger::{Ledger, LedgerConfig};

/// Where `./scripts/build-contracts.sh` puts the kv contract, from the repository's root.
const KV_WASM: &str = "target/wasm32-unknown-unknown/contract/kv.wasm";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = std::env::temp_dir().join(format!("runnel-embedded-{}", std::process::id()));
    let mut args = std::env::args_os().skip(1);
    let given = args.next().map(PathBuf::from);
    let dir = given.clone().unwrap_or_else(|| temp.clone());
    let wasm = args.next().map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(KV_WASM)
        },
        PathBuf::from,
    );
    let kv = std::fs::read(&wasm).map_err(|e| {
        format!(
            "reading the kv contract at {}: {e} (build it with ./scripts/build-contracts.sh)",
            wasm.display()
        )
    })?;
    let ledger = Ledger::open(&dir, LedgerConfig::default())?;
    if ledger.evaluate("kv", "get", &[b"colour"]).is_err() {
        let definition = ledger.deploy("kv", "1.0", &kv, "")?;
        println!(
            "deployed {} v{} (sequence {})",
            definition.name, definition.version, definition.sequence
        );
    }

    let committed = ledger.submit("kv", "put", &[b"colour", b"blue"])?;
    println!(
        "put committed: tx {} at seq {}",
        committed.tx_id, committed.seq
    );
    let value = ledger.evaluate("kv", "get", &[b"colour"])?;
    println!("get colour -> {}", String::from_utf8_lossy(&value));

    if let Some(trace) = ledger.trace(&committed.tx_id) {
        let start = trace.stages().first().map_or(0, |(_, at)| *at);
        for (stage, at) in trace.stages() {
            println!("  {:>14}  +{:>6} µs", stage.as_str(), at - start);
        }
    }
    ledger.close();
    drop(ledger);
    if given.is_none() {
        std::fs::remove_dir_all(&temp)?;
    }
    Ok(())
}
