#!/usr/bin/env bash
# Slow crash-loop runs, kept out of the test suite: kills a ledger node process under
# load many times (and the store writer), checking recovery after every kill.
#
#   ./scripts/soak.sh [rounds]     (default 200)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-200}
./scripts/build-contracts.sh >/dev/null
RUNNEL_CRASH_ROUNDS=$rounds cargo test --locked --release -p runnel-ledger \
  --test it -- ledger_crash --nocapture
