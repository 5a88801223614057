//! `runnel exec` as a user runs it: a real process, a real state directory.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn exec(data_dir: &Path, wasm: &Path, args: &[&str]) -> (bool, Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_runnel"))
        .arg("exec")
        .arg("--wasm")
        .arg(wasm)
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .expect("runnel runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        output.status.success(),
        json,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn writes_persist_between_runs_with_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = runnel_wasm_build::build("kv").expect("kv builds");

    let (ok, put, err) = exec(dir.path(), &wasm, &["put", "greeting", "hello"]);
    assert!(ok, "{err}");
    assert_eq!(put["rwset"]["writes"][0]["key"], "greeting");
    assert_eq!(put["rwset"]["writes"][0]["value"], "hello");
    assert_eq!(put["applied_at_seq"], 1);
    assert_eq!(put["contract"]["namespace"], "kv");

    // The second run reads what the first wrote, at the version it was written.
    let (ok, get, err) = exec(dir.path(), &wasm, &["get", "greeting"]);
    assert!(ok, "{err}");
    assert_eq!(get["result"], "\"hello\"");
    assert_eq!(get["rwset"]["reads"][0]["version"], 1);
    assert!(
        get.get("applied_at_seq").is_none(),
        "a read-only call applies nothing"
    );

    // A dry run shows the writes but keeps none.
    let (ok, _, err) = exec(dir.path(), &wasm, &["--dry-run", "delete", "greeting"]);
    assert!(ok, "{err}");
    let (_, again, _) = exec(dir.path(), &wasm, &["get", "greeting"]);
    assert_eq!(again["result"], "\"hello\"");
}

#[test]
fn contract_errors_and_bad_modules_fail_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm = runnel_wasm_build::build("kv").expect("kv builds");
    let (ok, _, err) = exec(dir.path(), &wasm, &["put", "only-a-key"]);
    assert!(!ok);
    assert!(err.contains("contract error"), "{err}");

    let junk = dir.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm").expect("write");
    let (ok, _, err) = exec(dir.path(), &junk, &["get", "x"]);
    assert!(!ok);
    assert!(err.contains("invalid module"), "{err}");
}
