//! Runnel embedded in a Rust program: open a ledger in a directory, deploy the kv
//! contract, write a key, read it back, and print the transaction's trace.
//!
//! Run: `cargo run -p runnel-ledger --example embedded [DIR]` (default: a fresh temp dir).

use runnel_ledger::ledger::{Ledger, LedgerConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let temp = tempfile::tempdir()?;
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| temp.path().to_path_buf(), Into::into);
    let ledger = Ledger::open(&dir, LedgerConfig::default())?;

    // kv's module, built from contracts/examples/kv.
    let kv = runnel_wasm_build::wasm("kv")?;
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
    Ok(())
}
