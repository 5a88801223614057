#!/usr/bin/env bash
# Two builds of `runnel` against each other on the two-organisation setting of
# bench-orgs.sh (orgs-c64: a fresh `runnel up` network of two organisations, kv-insert with
# 32 clients on each org's peer), in turn, the first of each pair alternating, so that a
# machine whose speed drifts moves both sides of a pair alike. Prints each run's committed
# tx/s and the after ÷ before ratio per pair, then their median (min-max); writes the
# same to summary.md. What a change costs, where one round of each is too noisy to say.
#
#   ./scripts/bench-ab.sh BEFORE-BIN AFTER-BIN [pairs] [seconds-per-run] [out-dir]
#   (default 8 pairs, 15 s, bench-ab)
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(realpath "$1")
after=$(realpath "$2")
pairs=${3:-8}
seconds=${4:-15}
out=$(realpath -m "${5:-bench-ab}")
base_port=7460
mkdir -p "$out"
RUNNEL_BIN=$after
# shellcheck source=scripts/bench-node.sh
source scripts/bench-node.sh

up_dir="$out/up"
trap 'stop_up' EXIT

# run BIN NAME: one orgs-c64 run with BIN; appends "NAME tx/s" to results.txt.
run() {
  local bin=$1 name=$2 loaders=() org total
  runnel=$bin
  stop_up
  rm -rf "$up_dir"
  "$runnel" up --dir "$up_dir" --base-port "$base_port" \
    --contracts target/wasm32-unknown-unknown/contract >/dev/null 2>&1
  for org in Org1 Org2; do
    "$runnel" bench --url "$(peer_url "$org")" --dir "$up_dir/$org" --org "$org" \
      --clients 32 --keys 0 --duration "$seconds" --warmup 3 --out "$out/$name/$org" \
      >"$out/$name-$org.txt" &
    loaders+=($!)
  done
  for loader in "${loaders[@]}"; do wait "$loader"; done
  stop_up
  total=$(cat "$out/$name-Org1.txt" "$out/$name-Org2.txt" |
    grep -o 'committed [0-9]* tx/s' | awk '{s += $2} END {print s}')
  echo "$name $total" | tee -a "$out/results.txt"
}

rm -f "$out/results.txt"
for pair in $(seq 1 "$pairs"); do
  if ((pair % 2)); then
    run "$before" "before-$pair"
    run "$after" "after-$pair"
  else
    run "$after" "after-$pair"
    run "$before" "before-$pair"
  fi
done

python3 - "$out" <<'EOF' | tee "$out/summary.md"
import pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
runs = dict(line.split() for line in (out / "results.txt").read_text().splitlines())
pairs = sorted({name.split("-")[1] for name in runs}, key=int)
before = [float(runs[f"before-{p}"]) for p in pairs]
after = [float(runs[f"after-{p}"]) for p in pairs]
ratios = [a / b for a, b in zip(after, before)]
fmt = lambda xs: f"{statistics.median(xs):,.0f} ({min(xs):,.0f}-{max(xs):,.0f})"
print(f"orgs-c64, committed tx/s, {len(pairs)} pairs")
print(f"  before: {fmt(before)}")
print(f"  after:  {fmt(after)}")
print(f"  after / before, per pair: {statistics.median(ratios):.3f} "
      f"({min(ratios):.3f}-{max(ratios):.3f}): {' '.join(f'{r:.3f}' for r in ratios)}")
EOF
