#!/usr/bin/env bash
# The ordering service alone (the BFT-SMaRt paper's matrix): `runnel bench order`
# against a fresh `runnel up --orgs 1 --no-examples` network per cell, its peer stopped,
# for BFT ordering (4 orderers, f = 1) beside a Raft cluster (3 orderers) in the same
# round: payloads of 40, 1,024 and 4,096 B, each read by 1, 4 and 8 receivers (streams
# spread over the orderers, every seal checked as a peer checks it). Every node a
# process of its own on this machine, TLS and mutual TLS between all, `sync = "full"`;
# the load generator in a process of its own. Release builds.
#
# Prints per cell the median (min-max) over the rounds of sealed tx/s at the slowest
# receiver (each run's median second), p50 and p99 submit -> sealed, MB/s, and the CPU
# each orderer spent per sealed transaction; then the BFT/Raft ratio per cell, from the
# pairs of each round; writes the same to summary.md.
#
#   ./scripts/bench-order.sh [rounds] [seconds-per-run] [out-dir]   (default 3, 8, bench-order)
#
# PROTOCOLS="raft bft", PAYLOADS="40 1024 4096" and RECEIVERS="1 4 8" narrow the
# matrix; WARMUP (seconds, default 2) is left out of each run's figures; TXS_PER_S
# (default 25000) times the seconds is how many transactions each run signs before its
# clock starts, at most TXS_MIB_MAX (default 768) MiB of them; a run that sends them all
# before its end says so, and its figures cover the seconds until then. NET_DIR=dir keeps the networks' data there instead of under out-dir
# (e.g. a tmpfs, when the disk is short: each 4 KB run writes a few hundred MB per
# orderer; fdatasync costs nothing there, so say so beside the figures). KEEP_LOGS=1 keeps
# every node's log of each run beside its figures (<run>.nodes/).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-8}
out=$(realpath -m "${3:-bench-order}")
warmup=${WARMUP:-2}
txs_per_s=${TXS_PER_S:-25000}
txs_bytes_max=$((${TXS_MIB_MAX:-768} << 20))
base_port=7660
mkdir -p "$out"
BENCH_CONTRACTS=0
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$(realpath -m "${NET_DIR:-$out/nodes}")/up"
trap 'stop_up; rm -rf "$up_dir"' EXIT

# up PROTOCOL: a fresh network of one organisation ordering through PROTOCOL (raft: 3
# orderers, bft: 4), its peer stopped so that only the orderers run.
up() {
  local orderers=3
  [[ $1 == bft ]] && orderers=4
  stop_up
  rm -rf "$up_dir"
  mkdir -p "$(dirname "$up_dir")"
  "$runnel" up --dir "$up_dir" --orgs 1 --orderers "$orderers" --ordering "$1" \
    --base-port "$base_port" --no-examples >>"$out/up.log" 2>&1
  local pid
  pid=$(cat "$up_dir/Org1/peer0/runnel.pid")
  kill "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# cell PROTOCOL PAYLOAD RECEIVERS: one run on a fresh network, into $out/<cell>/<n>.
cell() {
  local name="$1-p$2-r$3" run
  run=$(next_run "$name")
  echo "==> $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  up "$1"
  # As many as TXS_PER_S would send, within TXS_BYTES_MAX of signed transactions held.
  local txs=$((txs_per_s * ${seconds%.*})) most=$((txs_bytes_max / ($2 + 1100)))
  [[ $txs -gt $most ]] && txs=$most
  "$runnel" bench order --dir "$up_dir" --payload-bytes "$2" --receivers "$3" \
    --duration "$seconds" --warmup "$warmup" --txs "$txs" \
    --out "$run" 2>"$run.log" | sed -n '2,3p' || { echo "failed: see $run.log"; tail -3 "$run.log"; }
  if [[ -d $run ]]; then cut -d' ' -f1-3 /proc/loadavg >"$run/load"; fi
  stop_up
  if [[ ${KEEP_LOGS:-0} == 1 ]]; then
    (cd "$up_dir" && find . -name '*.log' -exec cp --parents {} "$(mkdir -p "$run.nodes" && echo "$run.nodes")" \;)
  fi
}

protocols=${PROTOCOLS:-raft bft}
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  for payload in ${PAYLOADS:-40 1024 4096}; do
    for receivers in ${RECEIVERS:-1 4 8}; do
      # The first of each pair alternates between rounds.
      order=$protocols
      [[ $((round % 2)) == 0 ]] && order=$(echo "$protocols" | tr ' ' '\n' | tac | tr '\n' ' ')
      for protocol in $order; do cell "$protocol" "$payload" "$receivers"; done
    done
  done
done

python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])

def runs(cell):
    found = {}
    for summary in (out / cell).glob("*/summary.json"):
        found[int(summary.parent.name)] = json.loads(summary.read_text())
    return found

def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if values else "-"

cells = sorted({p.name.split("-", 1)[1] for p in out.glob("*-p*-r*") if p.is_dir()},
               key=lambda c: tuple(int(x[1:]) for x in c.split("-")))
print("| cell | protocol | runs | sealed tx/s (slowest receiver) | p50 ms | p99 ms | MB/s | CPU µs/tx per orderer |")
print("|---|---|---|---|---|---|---|---|")
for cell in cells:
    for protocol in ["raft", "bft"]:
        found = runs(f"{protocol}-{cell}")
        if not found:
            continue
        s = list(found.values())
        d = [x["delivery"] for x in s]
        lat = [x["latency_us"]["submit_to_sealed"] for x in d]
        cpu = {}
        for x in s:
            for name, us in x["cpu_us_per_tx"].items():
                cpu.setdefault(name, []).append(us)
        cpu_text = ", ".join(f"{name.split('.')[0] if name.startswith('orderer') else name} {statistics.median(v):.0f}"
                             for name, v in cpu.items())
        print(f"| {cell} | {protocol} | {len(s)} | {spread([x['per_second_slowest'] for x in d], lambda v: f'{v:,.0f}')} | "
              f"{spread([l['p50'] / 1e3 for l in lat if l['p50']], lambda v: f'{v:.1f}')} | "
              f"{spread([l['p99'] / 1e3 for l in lat if l['p99']], lambda v: f'{v:.1f}')} | "
              f"{spread([x['bytes_per_second_slowest'] / 1e6 for x in d], lambda v: f'{v:.1f}')} | {cpu_text} |")
print()
print("| cell | BFT / Raft sealed tx/s, per round |")
print("|---|---|")
for cell in cells:
    raft, bft = runs(f"raft-{cell}"), runs(f"bft-{cell}")
    ratios = [bft[r]["delivery"]["per_second_slowest"] / raft[r]["delivery"]["per_second_slowest"]
              for r in sorted(raft.keys() & bft.keys()) if raft[r]["delivery"]["per_second_slowest"]]
    print(f"| {cell} | {spread(ratios, lambda v: f'{v:.2f}')} |")
PY
