#!/usr/bin/env bash
# Sweeps `runnel bench` over a release dev node: kv-insert at 1..64 clients, streaming
# against Fabric-style blocks (10 transactions or 2 s), and kv-rmw goodput on a key space
# of 100. Each point's CSV, summary and plots go under the output directory; a table of
# every point is printed at the end (and written to sweep.md).
#
#   ./scripts/bench-sweep.sh [seconds-per-point] [out-dir]     (default 15, bench-sweep)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
out=$(realpath -m "${2:-bench-sweep}")
./scripts/build-contracts.sh >/dev/null
cargo build --locked --release -p runnel-node --bin runnel
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

# start_node MODE: a fresh dev node in MODE (streaming or blocks) on 127.0.0.1:$port.
start_node() {
  local dir="$out/node-$1"
  rm -rf "$dir"
  # The first start writes the network and runnel.toml; the mode is set, then restarted.
  "$runnel" dev --dir "$dir" --listen "127.0.0.1:$port" \
    --contracts target/wasm32-unknown-unknown/contract >"$dir.log" 2>&1 &
  node_pid=$!
  wait_ready
  stop_node
  if [[ $1 == blocks ]]; then
    sed -i 's/^mode = "streaming"/mode = "blocks"/; s/^seal_max_txs = .*/seal_max_txs = 10/;
      s/^seal_max_delay_ms = .*/seal_max_delay_ms = 2000/' "$dir/runnel.toml"
  fi
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
  "$runnel" bench --url "http://127.0.0.1:$port" --dir "$out/node-$mode" \
    --duration "$seconds" --warmup 3 --node-pid "$node_pid" --out "$out/$name" "$@" |
    sed -n '1,3p'
}

for mode in streaming blocks; do
  start_node "$mode"
  for clients in 1 4 16 64; do
    point "$mode-kv-insert-c$clients" --workload kv-insert --clients "$clients"
  done
  point "$mode-kv-rmw-k100" --workload kv-rmw --keys 100 --clients 16
  stop_node
done

python3 - "$out" <<'EOF' | tee "$out/sweep.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| point | clients | committed tx/s | valid tx/s | p50 ms | p99 ms | invalid | node µs CPU/tx |")
print("|---|---|---|---|---|---|---|---|")
for summary in sorted(out.glob("*/summary.json")):
    s = json.loads(summary.read_text())
    t, l = s["transactions"], s["latency_us"]["submit_to_durable"]
    ms = lambda v: "-" if v is None else f"{v / 1000:.2f}"
    invalid = t["committed"] - t["valid"]
    cpu = s["node"]["cpu_us_per_committed_tx"]
    print(f"| {summary.parent.name} | {s['clients']} | {t['committed_per_second']:.0f} | "
          f"{t['valid_per_second']:.0f} | {ms(l['p50'])} | {ms(l['p99'])} | {invalid} | "
          f"{'-' if cpu is None else f'{cpu:.0f}'} |")
EOF
