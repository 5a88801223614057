#!/usr/bin/env bash
# Runs Runnel's benchmarks (criterion) and prints the figures docs/benchmarks.md records.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build-contracts.sh >/dev/null
cargo bench --locked -p runnel-runtime --bench invoke -- "$@"
