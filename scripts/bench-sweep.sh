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
./scripts/build-contracts.sh >/dev/null
cargo build --locked --release -p runnel --bin runnel
runnel=target/release/runnel
port=7391
mkdir -p "$out"

node_pid=
stop_node() {
  if [[ -n $node_pid ]]; then
    kill "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
    node_pid=
  fi
}
trap stop_node EXIT

# start_node NAME [SED]: a fresh dev node on 127.0.0.1:$port with its data in
# $out/node-NAME, its runnel.toml edited by the sed script SED (a mode's settings).
start_node() {
  node_name=$1
  local dir="$out/node-$1"
  rm -rf "$dir"
  # The first start writes the network and runnel.toml; it is edited, then restarted.
  "$runnel" dev --dir "$dir" --listen "127.0.0.1:$port" \
    --contracts target/wasm32-unknown-unknown/contract >"$dir.log" 2>&1 &
  node_pid=$!
  wait_ready
  stop_node
  if [[ -n ${2:-} ]]; then sed -i "$2" "$dir/runnel.toml"; fi
  "$runnel" dev --dir "$dir" --listen "127.0.0.1:$port" \
    --contracts target/wasm32-unknown-unknown/contract >>"$dir.log" 2>&1 &
  node_pid=$!
  wait_ready
}

wait_ready() {
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "the node did not start; see its log" >&2
  exit 1
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
  streaming) start_node "$mode" ;;
  blocks10) start_node "$mode" "$(blocks 10)" ;;
  blocks100) start_node "$mode" "$(blocks 100)" ;;
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
start_node no-group-commit 's/^commit_txs_max = .*/commit_txs_max = 1/'
point "no-group-commit-kv-insert-c1" --workload kv-insert --clients 1
point "no-group-commit-kv-insert-c64" --workload kv-insert --clients 64
stop_node
start_node two-workers 's/^workers = .*/workers = 2/'
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
