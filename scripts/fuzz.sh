#!/usr/bin/env bash
# Fuzzes every decoder of untrusted bytes with cargo-fuzz (libFuzzer, AddressSanitizer,
# debug assertions): node/fuzz's targets, each one call into runnel-fuzz-targets.
#
#   scripts/fuzz.sh [seconds-per-target] [target...]     (default: 60 s, every target)
#
# Installs what it needs: a date-pinned nightly (libFuzzer needs nightly's sanitizer
# flags) and cargo-fuzz. Each target starts from its seeds in
# node/fuzz-targets/corpus/<target>/ (read only) and keeps what it learns in
# node/fuzz/corpus/<target>/ (ignored by git), so the next run goes on from there.
#
# A crash, leak, timeout or out-of-memory input is copied into
# node/fuzz-targets/corpus/<target>/ as a regression input (regression-<kind>-<hash>):
# `cargo test -p runnel-fuzz-targets` replays it, and fails until the bug is fixed. Commit
# it together with the fix. The script goes on with the other targets and exits 1 if any
# of them crashed.
set -euo pipefail
cd "$(dirname "$0")/.."

# rustc 1.97.0-nightly (e50aa6fba 2026-05-19).
TOOLCHAIN=nightly-2026-05-20
CARGO_FUZZ_VERSION=0.13.2
FUZZ_DIR=node/fuzz
SEEDS=node/fuzz-targets/corpus

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
  echo "usage: $0 [seconds-per-target] [target...]" >&2
  exit 2
fi
shift $(($# > 0 ? 1 : 0))

all_targets=()
for file in "$FUZZ_DIR"/fuzz_targets/*.rs; do
  all_targets+=("$(basename "$file" .rs)")
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
  if [ ! -f "$FUZZ_DIR/fuzz_targets/$target.rs" ]; then
    echo "no fuzz target '$target'; targets: ${all_targets[*]}" >&2
    exit 2
  fi
done

# Largest input each target is given, in bytes: a little over what the decoder accepts
# or what a real input of its kind weighs, so limits are crossed but time is not wasted
# on inputs that only grow.
max_len() {
  case $1 in
    policy) echo 4200 ;;                    # POLICY_TEXT_BYTES_MAX = 4096
    byte_list | signed_seal) echo 4096 ;;   # a seal is ~500 bytes
    transaction | ordered_tx | signed_proposal) echo 16384 ;; # ~2 KB with three certificates
    record_file | wasm_module) echo 65536 ;;
    rwset) echo 16384 ;;                    # a kv put's payload is ~200 bytes
    runnel_toml) echo 8192 ;;               # the commented template is ~5 KB
    *) echo 4096 ;;
  esac
}

if ! rustup run "$TOOLCHAIN" rustc -V >/dev/null 2>&1; then
  rustup toolchain install "$TOOLCHAIN" --profile minimal
fi
if ! cargo +"$TOOLCHAIN" fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  cargo +"$TOOLCHAIN" install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi

# Two cores on the project's machines: build with two jobs unless told otherwise.
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-2}
cargo +"$TOOLCHAIN" fuzz build --fuzz-dir "$FUZZ_DIR"

# The record file target writes a file (and a MiB of zeros) per input: keep those in
# memory where there is a tmpfs.
scratch=$(mktemp -d "$([ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/runnel-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

crashed=()
summary=()
for target in "${targets[@]}"; do
  work="$FUZZ_DIR/corpus/$target"
  artifacts="$FUZZ_DIR/artifacts/$target"
  log="$scratch/$target.log"
  mkdir -p "$work" "$artifacts"
  printf '\n==> %s: %s s, inputs up to %s bytes\n' "$target" "$seconds" "$(max_len "$target")"
  started="$scratch/$target.started"
  touch "$started"
  status=0
  TMPDIR=$scratch cargo +"$TOOLCHAIN" fuzz run --fuzz-dir "$FUZZ_DIR" "$target" \
    "$work" "$SEEDS/$target" -- \
    -max_total_time="$seconds" -max_len="$(max_len "$target")" \
    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 2>&1 | tee "$log" || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  summary+=("$(printf '%-16s %10s execs %7s/s  %s' "$target" "${execs:-?}" "${rate:-?}" "${cov:-}")")
  found=0
  for artifact in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
    # Earlier runs' artifacts were copied then.
    [ -f "$artifact" ] && [ "$artifact" -nt "$started" ] || continue
    kept="$SEEDS/$target/regression-$(basename "$artifact")"
    [ -e "$kept" ] || cp "$artifact" "$kept"
    echo "$target: $artifact -> $kept"
    found=1
  done
  if [ "$status" -ne 0 ] || [ "$found" -eq 1 ]; then
    crashed+=("$target")
  fi
done

printf '\n==> summary (%s s per target)\n' "$seconds"
printf '%s\n' "${summary[@]}"
if [ ${#crashed[@]} -gt 0 ]; then
  echo "crashed: ${crashed[*]} (inputs copied to $SEEDS/<target>/regression-*)" >&2
  exit 1
fi
