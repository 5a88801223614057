#!/usr/bin/env bash
# The token written in TypeScript (token-ts, contracts/examples-as/token) against its Rust
# twin (token): `runnel bench --workload token-transfer` on a fresh release `runnel dev`
# node for each (which deploys both), interleaved (the first of a round alternates, since
# the second run of a pair tends to be the slower), `sync = "full"`. Prints the committed
# tx/s and p50 of each, and token-ts / token per round; writes the same to summary.md.
#
#   ./scripts/bench-contracts-ts.sh [rounds] [seconds-per-run] [clients] [out-dir]
#                                             (default 4, 15, 64, bench-contracts-ts)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
seconds=${2:-15}
clients=${3:-64}
out=$(realpath -m "${4:-bench-contracts-ts}")
port=7394
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  order="token token-ts"
  [[ $((round % 2)) -eq 0 ]] && order="token-ts token"
  for contract in $order; do
    dir="$out/nodes/$contract"
    start_node "$dir"
    "$runnel" bench --url "http://127.0.0.1:$port" --dir "$dir" --workload token-transfer \
      --contract "$contract" --clients "$clients" --duration "$seconds" --warmup 3 \
      --node-pid "$node_pid" --out "$out/$contract/$round" | sed -n '1,2p'
    stop_node
  done
done

python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
def runs(contract):
    found = {}
    for run in (out / contract).glob("*/summary.json"):
        s = json.loads(run.read_text())
        found[int(run.parent.name)] = (s["transactions"]["committed_per_second"],
                                       s["latency_us"]["submit_to_durable"]["p50"] / 1000)
    return found
def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"
rust, ts = runs("token"), runs("token-ts")
for name, found in [("token", rust), ("token-ts", ts)]:
    print(f"{name}: {spread([v[0] for v in found.values()], lambda v: f'{v:,.0f}')} tx/s, "
          f"p50 {spread([v[1] for v in found.values()], lambda v: f'{v:.2f}')} ms")
rounds = sorted(set(rust) & set(ts))
print(f"token-ts / token throughput, per round: {spread([ts[r][0] / rust[r][0] for r in rounds], lambda v: f'{v:.3f}')}")
PY
