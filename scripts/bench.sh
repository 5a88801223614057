#!/usr/bin/env bash
# Runs Runnel's benchmarks (criterion) and prints the figures docs/benchmarks.md records.
#
#   ./scripts/bench.sh [runtime|store|endorse|pipeline|grpc|all] [options]
#
# e.g. ./scripts/bench.sh endorse --warm-up-time 2 --measurement-time 5
set -euo pipefail
cd "$(dirname "$0")/.."
suite=all
case "${1:-}" in
runtime | store | endorse | pipeline | grpc | all)
  suite=$1
  shift
  ;;
esac
./scripts/build-contracts.sh >/dev/null
if [[ $suite == runtime || $suite == all ]]; then
  cargo bench --locked -p runnel-runtime --bench invoke -- "$@"
fi
if [[ $suite == store || $suite == all ]]; then
  cargo bench --locked -p runnel-ledger --bench store -- "$@"
fi
if [[ $suite == endorse || $suite == all ]]; then
  cargo bench --locked -p runnel-ledger --bench endorse -- "$@"
fi
# The pipeline and grpc benches take their own arguments:
# [latency-secs] [throughput-secs] [clients].
if [[ $suite == all ]]; then set --; fi
if [[ $suite == pipeline || $suite == all ]]; then
  cargo bench --locked -p runnel-ledger --bench pipeline -- "$@"
fi
if [[ $suite == grpc || $suite == all ]]; then
  cargo bench --locked -p runnel-server --bench grpc -- "$@"
fi
