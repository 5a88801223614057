#!/usr/bin/env bash
# What replicating the order costs: `runnel bench` (kv-insert, 1 KB values, 10% reads)
# against a `runnel up` network of one organisation whose peer orders through a Raft
# cluster of three orderers, beside the same network with one solo orderer, measured in
# the same round. Every node a process of its own on this machine, TLS and mutual TLS
# between them, `sync = "full"` (each orderer fdatasyncs its Raft log: an entry is ordered
# once two of three have it on disk). Release builds; the load generator in a process of
# its own.
#
#   solo-c64   1 orderer + 1 peer, 64 clients     raft-c64  3 orderers + 1 peer, 64 clients
#   solo-c1    the same, 1 client                 raft-c1   the same, 1 client
#
# Each round runs the four in turn against fresh data. Prints, per setting, the median
# (min-max) of committed tx/s, p50 and p99 submit -> durable, the raft/solo ratios, and
# the CPU each process spent per committed transaction; writes the same to summary.md.
#
#   ./scripts/bench-cluster.sh [rounds] [seconds-per-run] [out-dir]   (default 3, 15, bench-cluster)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-15}
out=$(realpath -m "${3:-bench-cluster}")
port=7392
base_port=7560
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$out/nodes/up"
trap 'stop_node; stop_up' EXIT

# run NAME ORDERERS CLIENTS: a fresh one-organisation network with ORDERERS orderers,
# loaded through its peer; each process's CPU over the run in cpu.json.
run() {
  local name=$1 orderers=$2 clients=$3 run
  run=$(next_run "$name")
  echo "==> $name"
  stop_up
  rm -rf "$up_dir"
  "$runnel" up --dir "$up_dir" --orgs 1 --orderers "$orderers" --base-port "$base_port" \
    --contracts target/wasm32-unknown-unknown/contract >/dev/null
  local nodes=() pids=() before=() node
  for node in "$up_dir"/Org1/orderer* "$up_dir"/Org1/peer0; do nodes+=("${node#"$up_dir"/}"); done
  for node in "${nodes[@]}"; do pids+=("$(cat "$up_dir/$node/runnel.pid")"); done
  for pid in "${pids[@]}"; do before+=("$(ticks "$pid")"); done
  local started elapsed
  started=$(date +%s.%N)
  "$runnel" bench --duration "$seconds" --warmup 3 --url "https://127.0.0.1:$((base_port + orderers))" \
    --dir "$up_dir/Org1" --org Org1 --clients "$clients" --keys 0 --out "$run" | sed -n '1,2p'
  elapsed=$(python3 -c "import time,sys; print(time.time() - float(sys.argv[1]))" "$started")
  {
    echo "{\"seconds\": $elapsed, \"hz\": $(getconf CLK_TCK), \"ticks\": {"
    for i in "${!nodes[@]}"; do
      [[ $i -gt 0 ]] && echo ","
      echo "\"${nodes[$i]}\": $(($(ticks "${pids[$i]}") - ${before[$i]}))"
    done
    echo "}}"
  } >"$run/cpu.json"
  stop_up
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  run solo-c64 1 64
  run raft-c64 3 64
  run solo-c1 1 1
  run raft-c1 3 1
done

python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])

def runs(setting):
    found = []
    for run in sorted((out / setting).glob("*"), key=lambda p: int(p.name)):
        summary = run / "summary.json"
        if not summary.exists():
            continue
        s = json.loads(summary.read_text())
        latency = s["latency_us"]["submit_to_durable"]
        found.append({"tps": s["transactions"]["committed_per_second"],
                      "p50": latency["p50"] / 1000, "p99": latency["p99"] / 1000, "dir": run})
    return found

def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if values else "-"

table = {name: runs(name) for name in ["solo-c64", "raft-c64", "solo-c1", "raft-c1"]}
print("| setting | runs | committed tx/s | p50 submit -> durable, ms | p99, ms |")
print("|---|---|---|---|---|")
for name, found in table.items():
    print(f"| {name} | {len(found)} | {spread([r['tps'] for r in found], lambda v: f'{v:,.0f}')} | "
          f"{spread([r['p50'] for r in found], lambda v: f'{v:.2f}')} | "
          f"{spread([r['p99'] for r in found], lambda v: f'{v:.2f}')} |")
pairs = lambda a, b: list(zip(table[a], table[b]))
print()
print(f"raft-c64 / solo-c64 throughput, per round: {spread([x['tps'] / y['tps'] for x, y in pairs('raft-c64', 'solo-c64')], lambda v: f'{v:.2f}')}")
print(f"raft-c1 - solo-c1 p50, ms, per round: {spread([x['p50'] - y['p50'] for x, y in pairs('raft-c1', 'solo-c1')], lambda v: f'{v:+.2f}')}")
print(f"raft-c1 / solo-c1 p99, per round: {spread([x['p99'] / y['p99'] for x, y in pairs('raft-c1', 'solo-c1')], lambda v: f'{v:.2f}')}")
print()
for setting in ["solo-c64", "raft-c64"]:
    print(f"CPU per committed transaction, µs ({setting}):")
    per_node = {}
    for run in table[setting]:
        cpu = json.loads((run["dir"] / "cpu.json").read_text())
        committed = run["tps"] * float(cpu["seconds"])
        for node, ticks in cpu["ticks"].items():
            per_node.setdefault(node, []).append(ticks / cpu["hz"] / committed * 1e6)
    for node, values in per_node.items():
        print(f"  {node}: {spread(values, lambda v: f'{v:.0f}')}")
PY
