#!/usr/bin/env bash
# Sweeps `runnel bench` over a release dev node: kv-insert at 1..64 clients, streaming
# against Fabric-style blocks (10 transactions or 2 s, and 100 or 2 s), kv-rmw goodput on
# a key space of 100, token and asset transfers, group commit off, and two validator
# workers. Each point's CSV, summary and plots go under the output directory; a table of
# every point is printed at the end (and written to sweep.md), and a plot of latency
# against throughput for streaming and blocks (latency-throughput.svg).
#
#   ./scripts/bench-sweep.sh [seconds-per-point] [out-dir]     (default 15, bench-sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
out=$(realpath -m "${2:-bench-sweep}")
port=7391
mkdir -p "$out"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

# sweep_node NAME [SED]: a fresh node with its data in $out/node-NAME (SED: a mode's settings).
sweep_node() {
  node_name=$1
  start_node "$out/node-$1" "${2:-}"
}

# point NAME ARGS...: one bench run against the running node.
point() {
  local name=$1
  shift
  echo "==> $name"
  "$runnel" bench --url "http://127.0.0.1:$port" --dir "$out/node-$node_name" \
    --duration "$seconds" --warmup 3 --node-pid "$node_pid" --out "$out/$name" "$@" |
    sed -n '1,3p'
}

blocks() {
  echo "s/^mode = \"streaming\"/mode = \"blocks\"/; s/^seal_max_txs = .*/seal_max_txs = $1/;
    s/^seal_max_delay_ms = .*/seal_max_delay_ms = 2000/"
}
for mode in streaming blocks10 blocks100; do
  case $mode in
  streaming) sweep_node "$mode" ;;
  blocks10) sweep_node "$mode" "$(blocks 10)" ;;
  blocks100) sweep_node "$mode" "$(blocks 100)" ;;
  esac
  for clients in 1 4 16 64; do
    point "$mode-kv-insert-c$clients" --workload kv-insert --clients "$clients"
  done
  point "$mode-kv-rmw-k100" --workload kv-rmw --keys 100 --clients 16
  if [[ $mode == streaming ]]; then
    # A connection per client, as 64 separate applications would have.
    point "$mode-kv-insert-c64-own-connections" --workload kv-insert --clients 64 \
      --connections 64
    point "$mode-token-transfer-c1" --workload token-transfer --keys 1000 --clients 1
    point "$mode-token-transfer-c4" --workload token-transfer --keys 1000 --clients 4
    point "$mode-asset-transfer-c16" --workload asset-transfer --keys 1000 --clients 16
  fi
  stop_node
done

# Group commit off (a flush per transaction), and two signature-checking workers (a
# one-process node runs one by default; a peer ordering elsewhere, one per core).
sweep_node no-group-commit 's/^commit_txs_max = .*/commit_txs_max = 1/'
point "no-group-commit-kv-insert-c1" --workload kv-insert --clients 1
point "no-group-commit-kv-insert-c64" --workload kv-insert --clients 64
stop_node
sweep_node two-workers 's/^workers = .*/workers = 2/'
point "two-workers-kv-insert-c64" --workload kv-insert --clients 64
stop_node

python3 - "$out" <<'EOF' | tee "$out/sweep.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| point | clients | connections | committed tx/s | valid tx/s | p50 ms | p99 ms | invalid | node µs CPU/tx |")
print("|---|---|---|---|---|---|---|---|---|")
for summary in sorted(out.glob("*/summary.json")):
    s = json.loads(summary.read_text())
    t, l = s["transactions"], s["latency_us"]["submit_to_durable"]
    ms = lambda v: "-" if v is None else f"{v / 1000:.2f}"
    invalid = t["committed"] - t["valid"]
    cpu = s["node"]["cpu_us_per_committed_tx"]
    print(f"| {summary.parent.name} | {s['clients']} | {s['connections']} | "
          f"{t['committed_per_second']:.0f} | "
          f"{t['valid_per_second']:.0f} | {ms(l['p50'])} | {ms(l['p99'])} | {invalid} | "
          f"{'-' if cpu is None else f'{cpu:.0f}'} |")
EOF
"$runnel" bench plot-sweep "$out" "$out/latency-throughput.svg"
