# Sourced by the bench scripts: builds the contracts and a release `runnel`, and runs one
# dev node at a time on 127.0.0.1:$port (set before sourcing), stopped on exit.
# RUNNEL_BIN=path uses that binary instead (node and load generator), e.g. another
# commit's build for a before/after comparison. BENCH_CONTRACTS=0 (set before sourcing)
# skips the contracts, for a script whose networks deploy none.

if [[ ${BENCH_CONTRACTS:-1} != 0 ]]; then
  ./scripts/build-contracts.sh >/dev/null
fi
if [[ -n ${RUNNEL_BIN:-} ]]; then
  runnel=$RUNNEL_BIN
else
  cargo build --locked --release -p runnel --bin runnel
  runnel=target/release/runnel
fi

node_pid=
stop_node() {
  if [[ -n $node_pid ]]; then
    kill "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
    node_pid=
  fi
}
trap stop_node EXIT

wait_ready() {
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "the node did not start; see its log" >&2
  exit 1
}

# start_in DIR [DEV-ARGS...]: `runnel dev` on DIR, its output appended to DIR.log.
start_in() {
  local dir=$1
  shift
  "$runnel" dev --dir "$dir" --listen "127.0.0.1:$port" \
    --contracts target/wasm32-unknown-unknown/contract "$@" >>"$dir.log" 2>&1 &
  node_pid=$!
  wait_ready
}

# start_node DIR [SED [DEV-ARGS...]]: a fresh dev node with its data in DIR; with SED, its
# runnel.toml (written by the first start) edited by that sed script, then restarted.
start_node() {
  local dir=$1 edit=${2:-}
  shift 2 2>/dev/null || shift $#
  rm -rf "$dir" "$dir.log"
  start_in "$dir" "$@"
  if [[ -n $edit ]]; then
    stop_node
    sed -i "$edit" "$dir/runnel.toml"
    start_in "$dir" "$@"
  fi
}

# For scripts that run `runnel up` networks in $up_dir and keep runs under $out (set them
# before calling these).

# stop_up: stops the network in $up_dir, if any.
stop_up() { [[ -d ${up_dir:-} ]] && "$runnel" down --dir "$up_dir" >/dev/null 2>&1 || true; }

# ticks PID: the clock ticks a process has used (user + system).
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# peer_url ORG: the endpoint of ORG's first peer in the network in $up_dir.
peer_url() {
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(next(o for o in d['orgs'] if o['name']==sys.argv[2])['peers'][0]['endpoint'])" \
    "$up_dir/network.json" "$1"
}

# cpu_start NODE...: notes the clock ticks the nodes of $up_dir (e.g. Org1/peer0) have
# used so far, and the time; cpu_write FILE writes what each used since, as JSON:
# {"seconds": ..., "hz": ..., "ticks": {"Org1/peer0": ..., ...}}.
cpu_start() {
  cpu_nodes=("$@") cpu_pids=() cpu_before=()
  local node pid
  for node in "${cpu_nodes[@]}"; do
    pid=$(cat "$up_dir/$node/runnel.pid")
    cpu_pids+=("$pid")
    cpu_before+=("$(ticks "$pid")")
  done
  cpu_started=$(date +%s.%N)
}
cpu_write() {
  local elapsed i
  elapsed=$(python3 -c "import time,sys; print(time.time() - float(sys.argv[1]))" "$cpu_started")
  {
    echo "{\"seconds\": $elapsed, \"hz\": $(getconf CLK_TCK), \"ticks\": {"
    for i in "${!cpu_nodes[@]}"; do
      [[ $i -gt 0 ]] && echo ","
      echo "\"${cpu_nodes[$i]}\": $(($(ticks "${cpu_pids[$i]}") - ${cpu_before[$i]}))"
    done
    echo "}}"
  } >"$1"
}

# next_run SETTING: the directory of its next run under $out.
next_run() {
  local runs="$out/$1" n
  mkdir -p "$runs"
  n=$(find "$runs" -mindepth 1 -maxdepth 1 -type d | wc -l)
  echo "$runs/$((n + 1))"
}
