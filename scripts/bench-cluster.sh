#!/usr/bin/env bash
# What replicating the order costs: `runnel bench` (kv-insert, 1 KB values, 10% reads)
# against a `runnel up` network whose peers order through a Raft cluster of three
# orderers, beside the same network with one solo orderer, measured in the same round.
# One organisation by default; with two, each has a peer, kv's policy is
# AND('Org1.peer','Org2.peer') (every transaction endorsed by both peers, Org1's gateway
# asking Org2's peer over mutual TLS) and the orderers are shared out between the orgs.
# Every node a process of its own on this machine, TLS and mutual TLS between them,
# `sync = "full"` (each orderer fdatasyncs its Raft log: an entry is ordered once two of
# three have it on disk). Release builds; the load generators in processes of their own.
#
#   solo-c64   1 orderer, 64 clients (split over the orgs' peers)   raft-c64  3 orderers, the same
#   solo-c1    the same, 1 client on Org1's peer                     raft-c1   3 orderers, the same
#   bft-c64    4 orderers ordering through BFT consensus (`--ordering bft`, f = 1), 64 clients
#   bft-c1     the same, 1 client (the peers pass a block on once 3 of 4 signed its seal)
#
# Each round runs the four in turn against fresh data. Prints, per setting, the median
# (min-max) of committed tx/s, p50 and p99 submit -> durable, the raft/solo ratios, and
# the CPU each process spent per committed transaction; writes the same to summary.md.
#
#   ./scripts/bench-cluster.sh [rounds] [seconds-per-run] [out-dir] [orgs]
#                                             (default 3, 15, bench-cluster, 1)
#
# SETTINGS="solo-c1 raft-c1" runs only those settings (the one-client pair, say).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-15}
out=$(realpath -m "${3:-bench-cluster}")
orgs=${4:-1}
port=7392
base_port=7560
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$out/nodes/up"
trap 'stop_node; stop_up' EXIT

# run NAME ORDERERS CLIENTS: a fresh network of $orgs organisations with ORDERERS
# orderers, loaded through its peers (CLIENTS split over them; one client: Org1's);
# each process's CPU over the run in cpu.json.
run() {
  local name=$1 orderers=$2 clients=$3 ordering=${4:-raft} run
  run=$(next_run "$name")
  echo "==> $name"
  stop_up
  rm -rf "$up_dir"
  "$runnel" up --dir "$up_dir" --orgs "$orgs" --orderers "$orderers" --ordering "$ordering" \
    --base-port "$base_port" --contracts target/wasm32-unknown-unknown/contract >/dev/null
  local nodes=() node
  for node in "$up_dir"/Org*/orderer* "$up_dir"/Org*/peer0; do nodes+=("${node#"$up_dir"/}"); done
  cpu_start "${nodes[@]}"
  local loaded=(Org1) loaders=() org
  [[ $clients -gt 1 && $orgs -eq 2 ]] && loaded=(Org1 Org2)
  for org in "${loaded[@]}"; do
    "$runnel" bench --duration "$seconds" --warmup 3 --url "$(peer_url "$org")" --dir "$up_dir/$org" \
      --org "$org" --clients $((clients / ${#loaded[@]})) --keys 0 --out "$run/$org" | sed -n '1,2p' &
    loaders+=($!)
  done
  for loader in "${loaders[@]}"; do wait "$loader"; done
  cpu_write "$run/cpu.json"
  stop_up
}

settings=${SETTINGS:-solo-c64 raft-c64 solo-c1 raft-c1}
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  for setting in $settings; do
    orderers=1 clients=64 ordering=raft
    [[ $setting == raft-* ]] && orderers=3
    [[ $setting == bft-* ]] && orderers=4 ordering=bft
    [[ $setting == *-c1 ]] && clients=1
    run "$setting" "$orderers" "$clients" "$ordering"
  done
done

python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])

def runs(setting):
    found = []
    for run in sorted((out / setting).glob("*"), key=lambda p: int(p.name)):
        summaries = [json.loads(s.read_text()) for s in sorted(run.glob("*/summary.json"))]
        if not summaries:
            continue
        # Over the load generators: throughput summed, percentiles of the first org's
        # (the one-client runs have only Org1's), which every setting has.
        latency = summaries[0]["latency_us"]["submit_to_durable"]
        found.append({"tps": sum(s["transactions"]["committed_per_second"] for s in summaries),
                      "p50": latency["p50"] / 1000, "p99": latency["p99"] / 1000, "dir": run})
    return found

def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if values else "-"

table = {name: runs(name) for name in ["solo-c64", "raft-c64", "bft-c64", "solo-c1", "raft-c1", "bft-c1"]}
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
if table["bft-c64"] or table["bft-c1"]:
    print(f"bft-c64 / raft-c64 throughput, per round: {spread([x['tps'] / y['tps'] for x, y in pairs('bft-c64', 'raft-c64')], lambda v: f'{v:.2f}')}")
    print(f"bft-c1 - raft-c1 p50, ms, per round: {spread([x['p50'] - y['p50'] for x, y in pairs('bft-c1', 'raft-c1')], lambda v: f'{v:+.2f}')}")
    print(f"bft-c1 / raft-c1 p99, per round: {spread([x['p99'] / y['p99'] for x, y in pairs('bft-c1', 'raft-c1')], lambda v: f'{v:.2f}')}")
print()
for setting in ["solo-c64", "raft-c64", "bft-c64"]:
    if not table[setting]:
        continue
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
