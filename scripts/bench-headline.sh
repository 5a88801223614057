#!/usr/bin/env bash
# Measures the headline figures of docs/benchmarks.md through the API: `runnel bench`
# (kv-insert, 1 KB values) against a fresh release dev node on 127.0.0.1, the load
# generator in its own process. Settings are interleaved (one run of each in turn, then
# the next round), so ratios between them are taken side by side:
#
#   full-c64, full-c1      [store] sync = "full" (fdatasync), 64 clients / 1 client
#   data-c64, data-c1      [store] sync = "data" (sync_file_range)
#   blocks500-c64          Fabric-style blocks of 500 or 250 ms, 64 clients
#   blocks10-c64           Fabric's sample blocks, 10 or 2 s, 64 clients
#   blocks10-c1            the same at 1 client (each transaction waits the 2 s)
#   rmw-c16, rmw-blocks10-c16   goodput: kv-rmw, 50/50 reads and updates of 100 keys,
#                          16 clients, streaming and in blocks of 10 or 2 s
#
# Only when SETTINGS names them, the settings of the comparison with Fabric (docs/benchmarks.md),
# all with sync = "full": stream-c32, blocks10-c32 (10 or 2 s), blocks1-c32, blocks1-c1
# (blocks of one transaction, 2 s timeout).
#
# SETTINGS="name ..." runs only those (their runs add to what the output directory holds).
# Prints, per setting, the median (min-max) of committed tx/s, p50 and p99 submit ->
# durable, node CPU per committed transaction and its multiple of the crypto floor;
# writes the same to summary.md in the output directory.
#
#   ./scripts/bench-headline.sh [rounds] [seconds-per-run] [out-dir]   (default 5, 15, bench-headline)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
seconds=${2:-15}
out=$(realpath -m "${3:-bench-headline}")
port=7392
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

settings=${SETTINGS:-full-c64 data-c64 full-c1 data-c1 blocks500-c64 blocks10-c64 blocks10-c1 rmw-c16 rmw-blocks10-c16}

# run NAME CLIENTS SYNC [ORDERING-SED [BENCH-ARGS...]]: one run against a fresh node.
run() {
  local name=$1 clients=$2 sync=$3 ordering=${4:-} dir="$out/nodes/$1"
  shift 4 2>/dev/null || shift $#
  local extra=("$@")
  [[ ${#extra[@]} -gt 0 ]] || extra=(--workload kv-insert)
  [[ " $settings " == *" $name "* ]] || return 0
  start_node "$dir" "$ordering" --sync "$sync"
  local runs="$out/$name"
  mkdir -p "$runs"
  local n
  n=$(find "$runs" -mindepth 1 -maxdepth 1 -type d | wc -l)
  echo "==> $name, run $((n + 1))"
  "$runnel" bench --url "http://127.0.0.1:$port" --dir "$dir" \
    --clients "$clients" --duration "$seconds" --warmup 3 --node-pid "$node_pid" \
    --out "$runs/$((n + 1))" "${extra[@]}" | sed -n '1,3p'
  stop_node
}

blocks() {
  echo "s/^mode = \"streaming\"/mode = \"blocks\"/; s/^seal_max_txs = .*/seal_max_txs = $1/;
    s/^seal_max_delay_ms = .*/seal_max_delay_ms = $2/"
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  run full-c64 64 full
  run data-c64 64 data
  run full-c1 1 full
  run data-c1 1 data
  run blocks500-c64 64 full "$(blocks 500 250)"
  run blocks10-c64 64 full "$(blocks 10 2000)"
  run blocks10-c1 1 full "$(blocks 10 2000)"
  run rmw-c16 16 full "" --workload kv-rmw --keys 100
  run rmw-blocks10-c16 16 full "$(blocks 10 2000)" --workload kv-rmw --keys 100
  run stream-c32 32 full
  run blocks10-c32 32 full "$(blocks 10 2000)"
  run blocks1-c32 32 full "$(blocks 1 2000)"
  run blocks1-c1 1 full "$(blocks 1 2000)"
done

python3 - "$out" <<'EOF' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
def spread(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"
print("| setting | runs | committed tx/s | valid tx/s | p50 ms | p99 ms | node µs CPU/tx | CPU/tx over crypto floor | floor µs/tx |")
print("|---|---|---|---|---|---|---|---|---|")
for setting in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "nodes"):
    runs = [json.loads(s.read_text()) for s in sorted(setting.glob("*/summary.json"))]
    tps = [r["transactions"]["committed_per_second"] for r in runs]
    valid = [r["transactions"]["valid_per_second"] for r in runs]
    p50 = [r["latency_us"]["submit_to_durable"]["p50"] for r in runs]
    p99 = [r["latency_us"]["submit_to_durable"]["p99"] for r in runs]
    cpu = [r["node"]["cpu_us_per_committed_tx"] for r in runs]
    over = [r["node"].get("cpu_per_tx_over_crypto_floor") for r in runs]
    floor = [r.get("crypto_floor", {}).get("per_tx_us") for r in runs]
    ms = lambda v: f"{v / 1000:.2f}"
    print(f"| {setting.name} | {len(runs)} | {spread(tps, lambda v: f'{v:,.0f}')} | "
          f"{spread(valid, lambda v: f'{v:,.0f}')} | "
          f"{spread(p50, ms)} | {spread(p99, ms)} | {spread(cpu, lambda v: f'{v:.0f}')} | "
          f"{spread(over, lambda v: f'{v:.1f}')} | {spread(floor, lambda v: f'{v:.0f}')} |")
EOF
