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
        // A parent `cargo test` sets these for its own target; they must not leak. The
        // test command lints while it builds (clippy's driver as the workspace wrapper,
        // scripts/test.sh), and that driver leaves MIR unoptimised: contracts are built by
        // rustc itself.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
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

/// The TypeScript (AssemblyScript) contract whose entry file is `entry` (relative to the
/// workspace), built with `@runnel/contract`'s checked build (it needs `npm ci` done) into
/// `target/wasm32-unknown-unknown/contract/<name>.wasm` under the workspace, where
/// `npm run -w @runnel/contract build-examples` writes the examples too. Built at most
/// once per name and process; returns the module's bytes.
pub fn typescript_contract(entry: &str, name: &str) -> Result<Vec<u8>, BuildError> {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .map_err(|_| BuildError("build cache poisoned".into()))?;
    let out = match built.get(name) {
        Some(out) => out.clone(),
        None => {
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
            built.insert(name.to_string(), out.clone());
            out
        }
    };
    std::fs::read(&out).map_err(|e| BuildError(format!("reading {}: {e}", out.display())))
}

/// The TypeScript twin of the Rust example `example` (contracts/examples-as/), as
/// [`typescript_contract`] builds it: `<example>_ts.wasm`.
pub fn typescript_wasm(example: &str) -> Result<Vec<u8>, BuildError> {
    typescript_contract(
        &format!("contracts/examples-as/{example}/index.ts"),
        &format!("{example}_ts"),
    )
}
