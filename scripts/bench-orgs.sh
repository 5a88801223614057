#!/usr/bin/env bash
# What organisations apart cost: `runnel bench` (kv-insert, 1 KB values, 10% reads)
# against a `runnel up` network of two organisations (an orderer and one peer each, all
# on this machine, kv's policy AND('Org1.peer','Org2.peer'), so every transaction is
# endorsed by both peers, Org1's gateway asking Org2's peer over mutual TLS), beside a
# single `runnel dev` node measured in the same round. Release builds; the load
# generators in processes of their own.
#
#   dev-c64   one dev node, 64 clients            orgs-c64  32 clients on each org's peer
#   dev-c1    one dev node, 1 client              orgs-c1   1 client on Org1's peer
#
# Each round runs the four in turn against fresh data. Prints, per setting, the median
# (min-max) of committed tx/s and p50 submit -> durable, the orgs/dev ratios, and the CPU
# each process spent per committed transaction; writes the same to summary.md.
#
#   ./scripts/bench-orgs.sh [rounds] [seconds-per-run] [out-dir]   (default 3, 15, bench-orgs)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-15}
out=$(realpath -m "${3:-bench-orgs}")
port=7392
base_port=7460
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$out/nodes/up"
trap 'stop_node; stop_up' EXIT

bench() {
  "$runnel" bench --duration "$seconds" --warmup 3 "$@" | sed -n '1,2p'
}

dev_run() {
  local name=$1 clients=$2 run
  run=$(next_run "$name")
  echo "==> $name"
  start_node "$out/nodes/dev"
  bench --url "http://127.0.0.1:$port" --dir "$out/nodes/dev" --clients "$clients" --keys 0 \
    --node-pid "$node_pid" --out "$run"
  stop_node
}

# orgs_run NAME CLIENTS-PER-ORG ORGS...: a fresh two-org network, loaded through the
# peers of ORGS at once; each process's CPU over the run in cpu.json.
orgs_run() {
  local name=$1 clients=$2 run
  shift 2
  run=$(next_run "$name")
  echo "==> $name"
  stop_up
  rm -rf "$up_dir"
  "$runnel" up --dir "$up_dir" --base-port "$base_port" \
    --contracts target/wasm32-unknown-unknown/contract >/dev/null
  cpu_start Org1/orderer0 Org1/peer0 Org2/peer0
  local loaders=() org
  for org in "$@"; do
    bench --url "$(peer_url "$org")" --dir "$up_dir/$org" --org "$org" --clients "$clients" --keys 0 \
      --out "$run/$org" &
    loaders+=($!)
  done
  for loader in "${loaders[@]}"; do wait "$loader"; done
  cpu_write "$run/cpu.json"
  stop_up
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  dev_run dev-c64 64
  orgs_run orgs-c64 32 Org1 Org2
  dev_run dev-c1 1
  orgs_run orgs-c1 1 Org1
done

python3 - "$out" <<'EOF' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])

def runs(setting):
    """Per run: committed tx/s (summed over the load generators), p50 ms, and the run's dir."""
    found = []
    for run in sorted((out / setting).glob("*")):
        summaries = [json.loads(s.read_text()) for s in sorted(run.glob("**/summary.json"))]
        if not summaries:
            continue
        tps = sum(s["transactions"]["committed_per_second"] for s in summaries)
        p50 = statistics.median(s["latency_us"]["submit_to_durable"]["p50"] for s in summaries) / 1000
        committed = sum(s["transactions"].get("committed", 0) for s in summaries)
        found.append({"tps": tps, "p50": p50, "dir": run, "committed": committed, "summaries": summaries})
    return found

def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if values else "-"

table = {name: runs(name) for name in ["dev-c64", "orgs-c64", "dev-c1", "orgs-c1"]}
print("| setting | runs | committed tx/s | p50 submit -> durable, ms |")
print("|---|---|---|---|")
for name, found in table.items():
    print(f"| {name} | {len(found)} | {spread([r['tps'] for r in found], lambda v: f'{v:,.0f}')} | "
          f"{spread([r['p50'] for r in found], lambda v: f'{v:.2f}')} |")
ratio = lambda a, b, key: [x[key] / y[key] for x, y in zip(table[a], table[b])]
print()
print(f"orgs-c64 / dev-c64 throughput, per round: {spread(ratio('orgs-c64', 'dev-c64', 'tps'), lambda v: f'{v:.2f}')}")
print(f"orgs-c1 / dev-c1 p50, per round: {spread(ratio('orgs-c1', 'dev-c1', 'p50'), lambda v: f'{v:.2f}')}")
print()
print("CPU per committed transaction, µs (orgs-c64):")
per_node = {}
for run in table["orgs-c64"]:
    cpu = json.loads((run["dir"] / "cpu.json").read_text())
    committed = run["tps"] * float(cpu["seconds"])
    for node, ticks in cpu["ticks"].items():
        per_node.setdefault(node, []).append(ticks / cpu["hz"] / committed * 1e6)
for node, values in per_node.items():
    print(f"  {node}: {spread(values, lambda v: f'{v:.0f}')}")
dev_cpu = [s["node"]["cpu_us_per_committed_tx"] for r in table["dev-c64"] for s in r["summaries"] if s.get("node")]
print(f"  dev node (every role): {spread(dev_cpu, lambda v: f'{v:.0f}')}")
EOF
