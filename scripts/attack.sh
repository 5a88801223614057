#!/usr/bin/env bash
# The slow attacks of docs/security.md, against a release node on 127.0.0.1: what a
# client with read access alone takes from everyone else's throughput. Each round runs
# `runnel bench` (kv-insert, 64 clients) on a fresh dev node twice, in turn: unloaded,
# then beside 64 callers of GetStateHash in a loop and 1,000 idle live streams; it
# prints each pair and the ratio of their committed tx/s. The hammered run must keep at
# least 90% (docs/security.md).
#
#   ./scripts/attack.sh [rounds] [seconds] [out-dir]   (default 3, 60, attack-out)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-60}
out=$(realpath -m "${3:-attack-out}")
port=7393
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

run() {
  local name=$1 round=$2
  shift 2
  local dir="$out/nodes/$name"
  start_node "$dir" ""
  "$runnel" bench --url "http://127.0.0.1:$port" --dir "$dir" --clients 64 \
    --duration "$seconds" --warmup 3 --node-pid "$node_pid" \
    --out "$out/$name/$round" "$@" | sed -n '1,2p'
  stop_node
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  run unloaded "$round"
  run hammered "$round" --hammer-state-hash 64 --hammer-idle-streams 1000
done

python3 - "$out" "$rounds" <<'PY'
import json, pathlib, statistics, sys
out, rounds = pathlib.Path(sys.argv[1]), int(sys.argv[2])
ratios = []
for r in range(1, rounds + 1):
    plain = json.loads((out / "unloaded" / str(r) / "summary.json").read_text())
    hammered = json.loads((out / "hammered" / str(r) / "summary.json").read_text())
    a = plain["transactions"]["committed_per_second"]
    b = hammered["transactions"]["committed_per_second"]
    ratios.append(b / a)
    print(f"round {r}: unloaded {a:,.0f} tx/s, hammered {b:,.0f} tx/s: {b / a:.2f}; pressure {hammered['pressure']}")
print(f"hammered / unloaded: median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
PY
