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

step "lint (host crates, then contracts for wasm32)"
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy --locked --target wasm32-unknown-unknown \
  -p runnel-abi -p runnel-contract -p kv -p token -p asset-transfer -p faulty -- -D warnings

step "contracts -> wasm32 (Rust with profile contract, TypeScript with @runnel/contract)"
./scripts/build-contracts.sh

step "contracts in TypeScript (@runnel/contract: its build checks, the Vitest harness, the examples)"
npm test -w @runnel/contract

step "Rust tests (unit, integration, hostile modules, conformance of the TypeScript examples, doc tests)"
cargo test --workspace --locked

step "TypeScript SDK (type check, build, tests against a real node)"
# The node the Rust tests built (target/debug/runnel): the same build, not another one
# with the binary's features alone.
cargo test --workspace --locked --no-run
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
