#!/usr/bin/env bash
# Sets up and runs Runnel's whole test suite (the README's test command).
# Needs only rustup, Node.js/npm and a C compiler; installs the rest itself.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain (rust-toolchain.toml) and the wasm32 target"
# Installs the pinned toolchain with its components and targets if missing.
rustup toolchain install
rustup target add wasm32-unknown-unknown

step "npm workspaces"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund

step "format"
cargo fmt --all -- --check

step "dependency rules (docs/architecture.md)"
./scripts/check-deps.sh

# The host crates are linted while they are built for the tests: clippy's driver stands in
# for rustc on the workspace's own crates (cargo runs it as RUSTC_WORKSPACE_WRAPPER, as
# `cargo clippy` does), so dependencies are compiled once, for the tests, instead of once
# more in check mode. Every host cargo command below runs through `linted` with the same
# settings, so none rebuilds. Contracts for wasm32 are built by rustc itself (the driver
# leaves MIR unoptimised); runnel-wasm-build drops these settings for the same reason.
clippy_driver="$(rustup which clippy-driver)"
linted() { RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CARGO_BUILD_RUSTFLAGS="-Dwarnings" "$@"; }

step "build and lint the host crates (every target: libraries, binaries, tests, benches, examples)"
linted cargo test --workspace --all-targets --locked --no-run

step "lint the contracts for wasm32"
cargo clippy --locked --target wasm32-unknown-unknown \
  -p runnel-abi -p runnel-contract -p kv -p token -p asset-transfer -p faulty -- -D warnings

step "contracts -> wasm32 (Rust with profile contract, TypeScript with @runnel/contract)"
./scripts/build-contracts.sh

step "contracts in TypeScript (@runnel/contract: its build checks, the Vitest harness, the examples)"
npm test -w @runnel/contract

step "Rust tests (unit, integration, hostile modules, conformance of the TypeScript examples, doc tests)"
# The process tests (node/cli/tests/it) spend most of their time waiting (elections,
# timeouts, other processes), not computing: six at a time took ~65 s on two cores, two at
# a time ~135 s. The other test binaries take as long either way.
threads=$(( $(nproc) > 6 ? $(nproc) : 6 ))
linted cargo test --workspace --locked -- --test-threads="$threads" \
  --skip bft_faults:: --skip bft_byzantine::

step "BFT faults with real processes (cut, slow, killed and lying orderers), two at a time"
# Each runs seven processes and measures what they do under load: six such tests at once
# on two cores starve the very processes they watch.
linted cargo test -p runnel --test it --locked -- --test-threads=2 bft_faults:: bft_byzantine::

step "TypeScript SDK (type check, build, tests against a real node)"
# The node the Rust tests built (target/debug/runnel): the same build, not another one
# with the binary's features alone.
linted cargo test --workspace --locked --no-run
npm run -w sdk-ts typecheck
npm run -w sdk-ts build
npm run -w sdk-ts test

step "Explorer (type check, unit and component tests, build, end-to-end in Chromium)"
# Debian's Chromium drives the end-to-end tests; Playwright never downloads a browser.
if [ ! -x /usr/bin/chromium ]; then
  sudo_if_needed=""
  [ "$(id -u)" -eq 0 ] || sudo_if_needed="sudo"
  $sudo_if_needed apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo_if_needed apt-get install -y chromium
fi
npm run -w explorer typecheck
npm run -w explorer test
npm run -w explorer build
npm run -w explorer e2e

# Benchmarks are type-checked by clippy --all-targets above; run them with ./scripts/bench.sh.
