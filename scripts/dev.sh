#!/usr/bin/env bash
# Sets up and starts a Runnel dev node (the README's run command): builds the example
# contracts and the `runnel` binary, then runs `runnel dev` on 127.0.0.1:7051 with its
# data in .runnel/dev, the example contracts deployed, and the explorer served when it is
# built (explorer/dist). Extra arguments go to `runnel dev` (see `runnel dev --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup toolchain install >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
echo "==> building the example contracts (the first build takes a few minutes)"
./scripts/build-contracts.sh >/dev/null
echo "==> building runnel"
cargo build --locked -p runnel-node --bin runnel
echo "==> starting the dev node"
exec target/debug/runnel dev \
  --dir .runnel/dev \
  --contracts target/wasm32-unknown-unknown/contract \
  --explorer explorer/dist \
  "$@"
