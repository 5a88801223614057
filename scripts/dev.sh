#!/usr/bin/env bash
# Sets up Runnel and runs the example contracts locally (the README's run command).
# Builds the contracts and the `runnel` binary, then calls each example against a local
# state file and prints what every call returned, read and wrote.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup toolchain install >/dev/null
rustup target add wasm32-unknown-unknown >/dev/null
echo "==> building the example contracts (first build takes a few minutes)"
./scripts/build-contracts.sh >/dev/null
echo "==> building runnel"
cargo build --locked -p runnel-node --bin runnel
runnel=target/debug/runnel
wasm=target/wasm32-unknown-unknown/contract
export RUNNEL_DATA_DIR=.runnel/dev
rm -f "$RUNNEL_DATA_DIR/state.json"

run() {
  printf '\n$ runnel exec'; printf ' %q' "$@"; printf '\n'
  "$runnel" exec "$@"
}

run --wasm $wasm/kv.wasm put greeting "hello, runnel"
run --wasm $wasm/kv.wasm get greeting
run --wasm $wasm/kv.wasm put farewell "see you"
run --wasm $wasm/kv.wasm range "" ""
run --wasm $wasm/token.wasm --as Org1/admin/minter mint Org1/alice 100
run --wasm $wasm/token.wasm --as Org1/client/alice transfer Org1/bob 30
run --wasm $wasm/token.wasm balance Org1/bob
run --wasm $wasm/asset_transfer.wasm --namespace basic InitLedger
run --wasm $wasm/asset_transfer.wasm --namespace basic TransferAsset asset1 Christopher
run --wasm $wasm/asset_transfer.wasm --namespace basic --dry-run ReadAsset asset1

cat <<MSG

State is kept in $RUNNEL_DATA_DIR/state.json, compiled contracts in $RUNNEL_DATA_DIR/artifacts.
Try one yourself:
  RUNNEL_DATA_DIR=$RUNNEL_DATA_DIR $runnel exec --wasm $wasm/token.wasm --as Org1/client/alice transfer Org1/carol 5
MSG
