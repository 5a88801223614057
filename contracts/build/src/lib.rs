//! Builds Runnel contract crates of this workspace to `wasm32-unknown-unknown`.
//!
//! Tests, benchmarks and the CLI need the example contracts as `.wasm` files. This crate
//! runs `cargo build --profile contract --target wasm32-unknown-unknown -p <package>` once
//! per package and process, and returns the path of the module. The outer `cargo test`
//! has released the build lock by the time a test runs, so building from inside a test is
//! safe; concurrent callers are serialised by cargo's own lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The target every contract is built for.
pub const TARGET: &str = "wasm32-unknown-unknown";
/// The cargo profile contracts are built with (see the workspace `Cargo.toml`).
pub const PROFILE: &str = "contract";

/// Why a contract could not be built.
#[derive(Debug)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("target"),
    }
}

/// The path `build(package)` produces, whether or not it exists yet.
pub fn wasm_path(package: &str) -> PathBuf {
    target_dir()
        .join(TARGET)
        .join(PROFILE)
        .join(format!("{}.wasm", package.replace('-', "_")))
}

/// Builds `package` (a workspace member) for wasm and returns the module's path.
/// Built at most once per process.
pub fn build(package: &str) -> Result<PathBuf, BuildError> {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built
        .lock()
        .map_err(|_| BuildError("build cache poisoned".into()))?;
    if let Some(path) = built.get(package) {
        return Ok(path.clone());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--quiet",
            "--profile",
            PROFILE,
            "--target",
            TARGET,
            "-p",
            package,
        ])
        .env("CARGO_TARGET_DIR", target_dir())
        // A parent `cargo test` sets these for its own target; they must not leak.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .map_err(|e| BuildError(format!("could not run cargo to build {package}: {e}")))?;
    if !output.status.success() {
        return Err(BuildError(format!(
            "building contract {package} for {TARGET} failed (is the target installed? `rustup target add {TARGET}`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let path = wasm_path(package);
    if !path.is_file() {
        return Err(BuildError(format!(
            "cargo built {package} but {} is missing (is it a cdylib?)",
            path.display()
        )));
    }
    built.insert(package.to_string(), path.clone());
    Ok(path)
}

/// Builds `package` and returns the module's bytes.
pub fn wasm(package: &str) -> Result<Vec<u8>, BuildError> {
    let path = build(package)?;
    std::fs::read(&path).map_err(|e| BuildError(format!("reading {}: {e}", path.display())))
}

/// The examples written in TypeScript (contracts/examples-as/), each the twin of the Rust
/// example of the same name.
pub const TYPESCRIPT_EXAMPLES: [&str; 2] = ["kv", "token"];

/// Builds the TypeScript (AssemblyScript) examples with `@runnel/contract`
/// (`npm run -w @runnel/contract build-examples`, which needs `npm ci` done) and returns
/// the path of `example`'s module, `target/wasm32-unknown-unknown/contract/<example>_ts.wasm`
/// under the workspace. Built at most once per process.
pub fn build_typescript(example: &str) -> Result<PathBuf, BuildError> {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let root = workspace_root();
    BUILT
        .get_or_init(|| {
            let output = Command::new("npm")
                .current_dir(&root)
                .args(["run", "--silent", "-w", "@runnel/contract", "build-examples"])
                .output()
                .map_err(|e| format!("could not run npm to build the TypeScript examples: {e}"))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "building the TypeScript examples failed (run `npm ci` at the workspace root first):\n{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                ))
            }
        })
        .clone()
        .map_err(BuildError)?;
    let path = root
        .join("target")
        .join(TARGET)
        .join(PROFILE)
        .join(format!("{example}_ts.wasm"));
    if !path.is_file() {
        return Err(BuildError(format!(
            "the TypeScript examples were built but {} is missing",
            path.display()
        )));
    }
    Ok(path)
}

/// Builds the TypeScript example `example` and returns the module's bytes.
pub fn typescript_wasm(example: &str) -> Result<Vec<u8>, BuildError> {
    let path = build_typescript(example)?;
    std::fs::read(&path).map_err(|e| BuildError(format!("reading {}: {e}", path.display())))
}

/// Builds the TypeScript contract whose entry file is `entry` (relative to the workspace)
/// with `@runnel/contract`'s checked build, into
/// `target/wasm32-unknown-unknown/contract/<name>.wasm`, and returns its bytes.
pub fn typescript_contract(entry: &str, name: &str) -> Result<Vec<u8>, BuildError> {
    let root = workspace_root();
    let out = root
        .join("target")
        .join(TARGET)
        .join(PROFILE)
        .join(format!("{name}.wasm"));
    let script = "const { buildContract } = await import('@runnel/contract/build'); \
                  await buildContract({ entry: process.argv[1], outFile: process.argv[2] });";
    let output = Command::new("node")
        .current_dir(&root)
        .args(["--input-type=module", "-e", script])
        .arg(root.join(entry))
        .arg(&out)
        .output()
        .map_err(|e| BuildError(format!("could not run node to build {entry}: {e}")))?;
    if !output.status.success() {
        return Err(BuildError(format!(
            "building {entry} failed (run `npm ci` at the workspace root first):\n{}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    std::fs::read(&out).map_err(|e| BuildError(format!("reading {}: {e}", out.display())))
}
