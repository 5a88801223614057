#!/usr/bin/env bash
# Builds the example contracts to target/wasm32-unknown-unknown/contract/*.wasm.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
cargo build --locked --profile contract --target wasm32-unknown-unknown \
  -p kv -p token -p asset-transfer
ls -l target/wasm32-unknown-unknown/contract/*.wasm
