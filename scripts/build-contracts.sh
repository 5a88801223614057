#!/usr/bin/env bash
# Builds the example contracts to target/wasm32-unknown-unknown/contract/*.wasm: the Rust
# ones with cargo, the TypeScript (AssemblyScript) ones with @runnel/contract (*_ts.wasm).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
cargo build --locked --profile contract --target wasm32-unknown-unknown \
  -p kv -p token -p asset-transfer
if [ ! -x node_modules/.bin/asc ]; then
  npm ci --no-audit --no-fund
fi
npm run --silent -w @runnel/contract build-examples
ls -l target/wasm32-unknown-unknown/contract/*.wasm
