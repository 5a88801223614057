#!/usr/bin/env bash
# The stall clients see when the ordering cluster loses its leader: `runnel bench`
# (kv-insert, 1 KB values, 10% reads, 64 clients) against a `runnel up` network of one
# organisation, a Raft cluster of three orderers and a peer, each a process of its own on
# this machine (TLS and mutual TLS, `sync = "full"`). Partway through each run the
# leader is killed (SIGKILL); `runnel bench stall` then reports, from the clients' side,
# how long throughput took to come back to 90% of what it was, and the p99 and max
# latency of the transactions caught in that window, and draws timeline.svg
# (throughput and latency over the run, the kill marked).
#
#   ./scripts/bench-failover.sh [rounds] [seconds-per-run] [out-dir]
#                                             (default 3, 30, bench-failover)
# The leader is killed at a third of the run. RUNNEL_BIN=path uses that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-30}
out=$(realpath -m "${3:-bench-failover}")
port=7392
base_port=7760
mkdir -p "$out/nodes"
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$out/nodes/up"
trap 'stop_up' EXIT

# metric NODE NAME: the value of the gauge NAME an orderer of $up_dir reports.
metric() {
  local listen
  listen=$(sed -n 's/^listen = "\(.*\)"/\1/p' "$up_dir/$1/runnel.toml")
  # An orderer's metrics are for members of the network: a peer's certificate.
  curl -sf --cacert "$up_dir/tls-cas.pem" --cert "$up_dir/Org1/peer0/identities/Org1/peer.pem" \
    --key "$up_dir/Org1/peer0/identities/Org1/peer.key" "https://$listen/metrics" |
    awk -v name="$2" '$1 == name { print $2 }'
}

# leader: the orderer node (e.g. Org1/orderer1) the cluster's members agree leads.
leader() {
  local node id
  for _ in $(seq 1 100); do
    local leads=() ids=()
    for node in "$up_dir"/Org1/orderer*; do
      node=${node#"$up_dir"/}
      leads+=("$(metric "$node" runnel_raft_leader || true)")
      ids+=("$node=$(metric "$node" runnel_raft_id || true)")
    done
    if [[ -n ${leads[0]} && ${leads[0]} != 0 ]] && [[ $(printf '%s\n' "${leads[@]}" | sort -u | wc -l) -eq 1 ]]; then
      for id in "${ids[@]}"; do
        if [[ ${id#*=} == "${leads[0]}" ]]; then
          echo "${id%=*}"
          return
        fi
      done
    fi
    sleep 0.1
  done
  echo "no leader agreed" >&2
  exit 1
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  run=$(next_run failover)
  stop_up
  rm -rf "$up_dir"
  "$runnel" up --dir "$up_dir" --orgs 1 --orderers 3 --base-port "$base_port" \
    --contracts target/wasm32-unknown-unknown/contract >/dev/null
  python3 -c "import json,sys; print(''.join(o['tls_ca'] for o in json.load(open(sys.argv[1]))['orgs']))" \
    "$up_dir/network.json" >"$up_dir/tls-cas.pem"
  "$runnel" bench --duration "$seconds" --warmup 3 --url "https://127.0.0.1:$((base_port + 3))" \
    --dir "$up_dir/Org1" --org Org1 --clients 64 --keys 0 --out "$run" >"$run.log" 2>&1 &
  load=$!
  sleep "$(python3 -c "print($seconds / 3)")"
  victim=$(leader)
  at_us=$(date +%s%6N)
  kill -9 "$(cat "$up_dir/$victim/runnel.pid")"
  echo "killed the leader, $victim"
  wait "$load"
  "$runnel" bench stall "$run" --at "$at_us" --label "leader killed ($victim)" | sed -n '1,12p'
  stop_up
done

python3 - "$out" <<'PY' | tee "$out/summary.md"
import json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
stalls = [json.loads(p.read_text()) for p in sorted((out / "failover").glob("*/stall.json"))]

def spread(values, fmt):
    values = [v for v in values if v is not None]
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})" if values else "-"

def get(stall, *path):
    for key in path:
        stall = stall.get(key) if isinstance(stall, dict) else None
    return stall

print(f"{len(stalls)} runs: the leader killed under 64 clients")
print()
print("| figure | median (min-max) |")
print("|---|---|")
rows = [
    ("throughput before, tx/s", ("baseline_per_second",), lambda v: f"{v:,.0f}"),
    ("back to 90% after, s", ("recovery_s",), lambda v: f"{v:.2f}"),
    ("transactions caught in the stall", ("stall", "transactions"), lambda v: f"{v:,.0f}"),
    ("of which failed (the client retries)", ("stall", "failed"), lambda v: f"{v:,.0f}"),
    ("p99 latency of those caught, ms", ("stall", "latency_us", "p99"), lambda v: f"{v / 1000:,.0f}"),
    ("max latency of those caught, ms", ("stall", "latency_us", "max"), lambda v: f"{v / 1000:,.0f}"),
    ("p99 latency before, ms", ("before", "latency_us", "p99"), lambda v: f"{v / 1000:.1f}"),
]
for label, path, fmt in rows:
    print(f"| {label} | {spread([get(s, *path) for s in stalls], fmt)} |")
PY
