#!/usr/bin/env bash
# Sets up and starts a Runnel dev node (the README's run command): builds the example
# contracts, the `runnel` binary, the TypeScript SDK and the web explorer (explorer/dist),
# then runs `runnel dev` on 127.0.0.1:7051 with its data in .runnel/dev, the example
# contracts deployed, and the explorer served at http://127.0.0.1:7051/. Extra arguments
# go to `runnel dev` (see `runnel dev --help`).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup toolchain install >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
echo "==> building the example contracts (the first build takes a few minutes)"
./scripts/build-contracts.sh >/dev/null
echo "==> building runnel"
cargo build --locked -p runnel --bin runnel
echo "==> building the SDK and the explorer (explorer/dist)"
[ -d node_modules ] || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
npm run --silent -w sdk-ts build
npm run --silent -w explorer build -- --logLevel warn
echo "==> starting the dev node"
exec target/debug/runnel dev \
  --dir .runnel/dev \
  --contracts target/wasm32-unknown-unknown/contract \
  --explorer explorer/dist \
  "$@"
