#!/usr/bin/env bash
# What distance between the orderers costs, Raft against BFT: `runnel bench` (kv-insert,
# 1 KB values, 10% reads) through the peer of a `runnel up` network of one organisation
# whose orderers reach each other through proxies that add DELAY ms each way
# (scripts/wan-proxy.py: only connections an orderer dials are delayed; the peer reaches
# its orderers, and clients the peer, at once). Every node a process of its own on this
# machine, TLS and mutual TLS, `sync = "full"`, release builds.
#
#   raft   3 orderers, Raft (an entry is ordered once 2 of 3 have it on disk)
#   bft    4 orderers, BFT (`--ordering bft`, f = 1: a batch is final once 3 of 4
#          vote, and a block passes to the peer once 3 of 4 signed its seal)
#
# Each round, for each cluster: one network, then for each one-way delay in $DELAYS (ms;
# 0 runs through the same proxies, set on the running network) and each client count in
# $CLIENTS, one run of $seconds (its keys new ones, on the data of the runs before it).
# Then the stall: $KILLS runs a cluster at each delay in $STALL_DELAYS with 16 clients,
# an orderer killed (SIGKILL) a third of the way through: Raft's leader; for BFT, whose
# views' leaders take turns, an orderer the peer does not read from (each of its views
# times out). From the clients' transactions.csv: the time from the kill to the first
# commit after it, the longest gap between commits in the 10 s after it, and (`runnel
# bench stall`) the time until a second commits 90% of what a second did before.
#
#   ./scripts/bench-wan.sh [rounds] [seconds-per-run] [out-dir]
#                                             (default 3, 12, bench-wan; a run's seconds
#                                             include a 3 s warm-up)
# DELAYS="0 25 50 100" CLIENTS="1 16" KILLS=3 STALL_DELAYS="0" STALL_CLUSTERS="raft bft";
# rounds 0 runs only the stall runs. RUNNEL_BIN=path uses
# that binary (default: a release build of this tree); CONTRACTS=dir the contracts' .wasm.
# Prints medians (min-max) and writes them to summary.md.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-12}
out=$(realpath -m "${3:-bench-wan}")
delays=${DELAYS:-0 25 50 100}
client_counts=${CLIENTS:-1 16}
kills=${KILLS:-3}
stall_delays=${STALL_DELAYS:-0}
stall_clusters=${STALL_CLUSTERS:-raft bft}
base_port=7960
proxy_base=7990
target=${CARGO_TARGET_DIR:-target}
contracts=${CONTRACTS:-$target/wasm32-unknown-unknown/contract}
if [[ ! -f $contracts/kv.wasm ]]; then
  cargo build --locked --profile contract --target wasm32-unknown-unknown \
    -p kv -p token -p asset-transfer
fi
if [[ -n ${RUNNEL_BIN:-} ]]; then
  runnel=$RUNNEL_BIN
else
  cargo build --locked --release -p runnel --bin runnel
  runnel=$target/release/runnel
fi
mkdir -p "$out/nodes"
up_dir="$out/nodes/up"
proxy_pid=

stop_up() {
  [[ -d $up_dir ]] && "$runnel" down --dir "$up_dir" >/dev/null 2>&1 || true
  if [[ -n $proxy_pid ]]; then
    kill "$proxy_pid" 2>/dev/null || true
    wait "$proxy_pid" 2>/dev/null || true
    proxy_pid=
  fi
}
trap stop_up EXIT

# next_run NAME: a new numbered directory for a run of NAME.
next_run() {
  local n=1
  while [[ -e $out/$1/$n ]]; do n=$((n + 1)); done
  mkdir -p "$out/$1/$n"
  echo "$out/$1/$n"
}

# start ORDERING DELAY: a fresh network whose orderers reach each other through proxies
# adding DELAY ms each way (what $delay_file says), started.
delay_file="$out/nodes/delay_ms"
start() {
  local ordering=$1 orderers=3 pairs=() i
  echo "$2" >"$delay_file"
  [[ $ordering == bft ]] && orderers=4
  stop_up
  rm -rf "$up_dir"
  "$runnel" init --dir "$up_dir" --orgs Org1 --orderers "$orderers" --ordering "$ordering" \
    --base-port "$base_port" >/dev/null 2>&1
  # runnel init gives the orderers the first ports: each endpoint named becomes a proxy's.
  for i in $(seq 0 $((orderers - 1))); do
    pairs+=("$((proxy_base + i)):$((base_port + i))")
    find "$up_dir" \( -name network.json -o -name runnel.toml \) -exec \
      sed -i "s|https://127.0.0.1:$((base_port + i))\"|https://127.0.0.1:$((proxy_base + i))\"|g" {} +
  done
  python3 scripts/wan-proxy.py "$delay_file" "$up_dir" "${pairs[@]}" &
  proxy_pid=$!
  "$runnel" up --dir "$up_dir" --contracts "$contracts" >/dev/null
}

peer_url() {
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['orgs'][0]['peers'][0]['endpoint'])" \
    "$up_dir/network.json"
}

# victim ORDERING: the orderer to kill. Raft: the leader, the orderer whose log last
# says it became leader. BFT: the last orderer, which the peer does not read from (its
# runnel.toml names the first).
victim() {
  if [[ $1 == bft ]]; then
    ls -d "$up_dir"/Org1/orderer* | tail -1 | sed "s|^$up_dir/||"
    return
  fi
  local node
  for _ in $(seq 1 100); do
    for node in "$up_dir"/Org1/orderer*; do
      if grep -aoE 'became (leader|follower|candidate|pre-candidate)' "$node/node.log" |
        tail -1 | grep -q leader; then
        echo "${node#"$up_dir"/}"
        return
      fi
    done
    sleep 0.1
  done
  echo "no leader" >&2
  exit 1
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  for ordering in raft bft; do
    start "$ordering" 0
    for delay in $delays; do
      echo "$delay" >"$delay_file"
      sleep 1
      for clients in $client_counts; do
        name="$ordering-d$delay-c$clients"
        run=$(next_run "$name")
        echo "==> $name"
        "$runnel" bench --duration "$seconds" --warmup 3 --url "$(peer_url)" --dir "$up_dir/Org1" \
          --org Org1 --clients "$clients" --keys 0 --out "$run" | sed -n '1,2p'
      done
    done
    stop_up
  done
done

stall_seconds=$((seconds * 3 > 24 ? seconds * 3 : 24))
for ordering in $stall_clusters; do
  for delay in $stall_delays; do
    for k in $(seq 1 "$kills"); do
      name="stall-$ordering-d$delay"
      run=$(next_run "$name")
      echo "==> $name, run $k of $kills"
      start "$ordering" "$delay"
      "$runnel" bench --duration "$stall_seconds" --warmup 3 --url "$(peer_url)" \
        --dir "$up_dir/Org1" --org Org1 --clients 16 --keys 0 --out "$run" >"$run.log" 2>&1 &
      load=$!
      sleep $((3 + stall_seconds / 3))
      node=$(victim "$ordering")
      at_us=$(date +%s%6N)
      kill -9 "$(cat "$up_dir/$node/runnel.pid")"
      echo "$at_us" >"$run/killed_at_us"
      echo "killed $node"
      wait "$load"
      "$runnel" bench stall "$run" --at "$at_us" --label "$node killed" | sed -n '1,3p'
      stop_up
    done
  done
done

python3 - "$out" "$delays" "$client_counts" "$stall_delays" <<'PY' | tee "$out/summary.md"
import csv, json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
delays, clients, stall_delays = (a.split() for a in sys.argv[2:5])

def spread(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}-{fmt(max(values))})"

def runs(name):
    found = []
    for run in sorted((out / name).glob("*"), key=lambda p: int(p.name)):
        summary = run / "summary.json"
        if summary.exists():
            s = json.loads(summary.read_text())
            latency = s["latency_us"]["submit_to_durable"]
            if latency.get("p50") is None:
                continue
            found.append((s["transactions"]["committed_per_second"], latency["p50"] / 1000,
                          latency["p99"] / 1000))
    return found

print("| cluster | one-way delay between orderers | clients | runs | committed tx/s | p50 submit -> durable, ms | p99, ms |")
print("|---|---|---|---|---|---|---|")
base = {}
for ordering in ["raft", "bft"]:
    for delay in delays:
        for c in clients:
            found = runs(f"{ordering}-d{delay}-c{c}")
            print(f"| {ordering} | {delay} ms | {c} | {len(found)} | "
                  f"{spread([r[0] for r in found], lambda v: f'{v:,.0f}')} | "
                  f"{spread([r[1] for r in found], lambda v: f'{v:.1f}')} | "
                  f"{spread([r[2] for r in found], lambda v: f'{v:.1f}')} |")

def commits(run):
    with open(run / "transactions.csv") as f:
        rows = csv.DictReader(f)
        return sorted(int(r["client_committed_us"]) for r in rows if r["client_committed_us"])

print()
print("The stall when an orderer is killed (16 clients): ms from the kill, and the rate kept, median (min-max)")
print()
print("| cluster | one-way delay | runs | first commit after the kill | longest gap between commits, 10 s after | back to 90% of the rate before (bench stall) | commits/s 2-10 s after / 7 s before | 12-20 s after / 7 s before |")
print("|---|---|---|---|---|---|---|---|")
for ordering in ["raft", "bft"]:
    for delay in stall_delays:
        first, gap, recovery, kept, kept_late = [], [], [], [], []
        found = sorted((out / f"stall-{ordering}-d{delay}").glob("*/killed_at_us"))
        for marker in found:
            run = marker.parent
            at = int(marker.read_text())
            every = commits(run)
            after = [t for t in every if at <= t <= at + 10_000_000]
            before = [t for t in every if at - 7_000_000 <= t < at]
            later = [t for t in every if at + 2_000_000 <= t < at + 10_000_000]
            late = [t for t in every if at + 12_000_000 <= t < at + 20_000_000]
            if before:
                kept.append((len(later) / 8) / (len(before) / 7))
                kept_late.append((len(late) / 8) / (len(before) / 7))
            if after:
                first.append((after[0] - at) / 1000)
                points = [at] + after
                gap.append(max(b - a for a, b in zip(points, points[1:])) / 1000)
            stall = run / "stall.json"
            if stall.exists():
                s = json.loads(stall.read_text())
                r = s.get("recovery_s")
                recovery.append(r * 1000 if r is not None else None)
        fmt = lambda v: f"{v:,.0f}"
        print(f"| {ordering} | {delay} ms | {len(found)} | {spread(first, fmt)} | "
              f"{spread(gap, fmt)} | {spread(recovery, fmt)} | "
              f"{spread(kept, lambda v: f'{v:.2f}')} | {spread(kept_late, lambda v: f'{v:.2f}')} |")
PY
