#!/usr/bin/env bash
# Crash loop for the ordering cluster, kept out of the test suite: a `runnel up` network
# of two organisations and a Raft cluster of three orderers under load. Each round kills
# (SIGKILL) one orderer or Org2's peer at a random moment, starts it again (`runnel up`),
# and once the round's load has ended checks that transactions the load generator was
# told committed are committed VALID on both peers (the last 20 and 40 others picked at
# random) and that both peers reach the same state hash at the same height.
#
#   ./scripts/soak-cluster.sh [rounds] [seconds-per-round] [out-dir]
#                                             (default 50, 20, soak-cluster)
# RUNNEL_BIN=path uses that binary instead of a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50}
seconds=${2:-20}
out=$(realpath -m "${3:-soak-cluster}")
base_port=7660
contracts=target/wasm32-unknown-unknown/contract
./scripts/build-contracts.sh >/dev/null
if [[ -n ${RUNNEL_BIN:-} ]]; then
  runnel=$RUNNEL_BIN
else
  cargo build --locked --release -p runnel --bin runnel
  runnel=target/release/runnel
fi
net="$out/net"
rm -rf "$out"
mkdir -p "$out"
trap '"$runnel" down --dir "$net" >/dev/null 2>&1 || true' EXIT
"$runnel" up --dir "$net" --orgs 2 --orderers 3 --base-port "$base_port" \
  --contracts "$contracts" >/dev/null
org1="https://127.0.0.1:$((base_port + 3))"
org2="https://127.0.0.1:$((base_port + 4))"
victims=(Org1/orderer0 Org2/orderer0 Org1/orderer1 Org2/peer0)

# tx_of PEER-URL ORG ID: the transaction's validation code at that peer.
code_at() {
  "$runnel" tx --url "$1" --dir "$net/$2" --org "$2" "$3" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin).get("code", "?"))' || echo missing
}

# hash_at PEER-URL ORG: "height hash" of its state.
hash_at() {
  "$runnel" state-hash --url "$1" --dir "$net/$2" --org "$2" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["height"], d["state_hash"])'
}

for round in $(seq 1 "$rounds"); do
  run="$out/round-$round"
  "$runnel" bench --url "$org1" --dir "$net/Org1" --org Org1 --clients 16 --keys 0 \
    --duration "$seconds" --warmup 1 --out "$run" >"$run.log" 2>&1 &
  load=$!
  sleep $((RANDOM % (seconds / 2) + 2))
  victim=${victims[RANDOM % ${#victims[@]}]}
  kill -9 "$(cat "$net/$victim/runnel.pid")"
  sleep $((RANDOM % 3 + 1))
  "$runnel" up --dir "$net" --no-examples --contracts "$contracts" >/dev/null 2>&1
  wait "$load" || true
  mapfile -t ids < <(python3 - "$run/transactions.csv" <<'PY'
import csv, random, sys
valid = [row["tx_id"] for row in csv.DictReader(open(sys.argv[1])) if row["code"] == "VALID"]
picked = valid[-20:] + random.sample(valid[:-20], min(40, max(0, len(valid) - 20)))
print("\n".join(picked))
PY
  )
  for id in "${ids[@]}"; do
    for peer in "$org1 Org1" "$org2 Org2"; do
      # shellcheck disable=SC2086
      code=$(code_at $peer "$id")
      if [[ $code != VALID ]]; then
        echo "round $round: $id, told committed, is $code at ${peer#* }" >&2
        exit 1
      fi
    done
  done
  for _ in $(seq 1 300); do
    a=$(hash_at "$org1" Org1)
    b=$(hash_at "$org2" Org2)
    [[ $a == "$b" ]] && break
    sleep 0.2
  done
  if [[ $a != "$b" ]]; then
    echo "round $round: the peers disagree: Org1 $a, Org2 $b" >&2
    exit 1
  fi
  committed=$(grep -c ',VALID$' "$run/transactions.csv" || true)
  echo "round $round: killed $victim; $committed committed, ${#ids[@]} checked on both peers; state ${a%% *} agrees"
done
echo "soak: $rounds rounds, nothing lost, the peers agree"
