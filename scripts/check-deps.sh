#!/usr/bin/env bash
# Fails when a crate depends on one its room may not (docs/architecture.md, "Which crate
# may depend on which"): each workspace crate's normal dependencies on the others must be
# among those listed below, and the crates named under FORBIDDEN must not be anywhere in
# its normal dependency tree. Dev and build dependencies are free.
#
#   ./scripts/check-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# crate: the workspace crates it may depend on (normal dependencies).
ALLOWED='
runnel-abi:
runnel-contract-macros:
runnel-contract: runnel-abi runnel-contract-macros
kv: runnel-contract
token: runnel-contract
asset-transfer: runnel-contract
faulty: runnel-contract
runnel-wasm-build:
runnel-api:
runnel-runtime: runnel-abi runnel-api
runnel-ledger: runnel-api runnel-runtime
runnel-server: runnel-api runnel-ledger runnel-runtime
runnel-orderer: runnel-api runnel-ledger runnel-server
runnel-node: runnel-client runnel-ledger runnel-orderer runnel-server
runnel-client: runnel-api
runnel-bench: runnel-api runnel-client
runnel: runnel-bench runnel-client runnel-ledger runnel-node runnel-orderer runnel-runtime runnel-server
runnel-testing: runnel-ledger runnel-runtime runnel-wasm-build
runnel-fuzz-targets: runnel-node runnel-abi runnel-ledger runnel-runtime runnel-testing
'

# crate: crates that must not be in its normal dependency tree at all.
FORBIDDEN='
runnel-contract: wasmtime tokio sled runnel-runtime
runnel-api: wasmtime sled tokio tonic axum raft runnel-runtime runnel-ledger
runnel-runtime: sled tokio tonic axum raft x509-parser rcgen runnel-ledger
runnel-ledger: tonic tonic-web axum hyper rustls raft protobuf slog commonware-consensus runnel-server runnel-orderer
runnel-server: raft protobuf slog commonware-consensus runnel-orderer
runnel-client: wasmtime sled raft commonware-consensus axum runnel-runtime runnel-ledger runnel-server
runnel-bench: wasmtime sled raft commonware-consensus axum runnel-runtime runnel-ledger runnel-server
'

metadata=$(cargo metadata --format-version 1 --locked --no-deps)
trees=$(
  echo "$FORBIDDEN" | while IFS=: read -r crate _; do
    [[ -n $crate ]] || continue
    echo "== $crate"
    cargo tree --locked -p "$crate" -e normal --prefix none | awk '{print $1}' | sort -u
  done
)

python3 - "$ALLOWED" "$FORBIDDEN" "$metadata" "$trees" <<'EOF'
import json, sys

def rules(text):
    out = {}
    for line in text.strip().splitlines():
        crate, _, names = line.partition(":")
        out[crate.strip()] = set(names.split())
    return out

allowed, forbidden = rules(sys.argv[1]), rules(sys.argv[2])
packages = json.loads(sys.argv[3])["packages"]
ours = {p["name"] for p in packages}
trees, crate = {}, None
for line in sys.argv[4].splitlines():
    if line.startswith("== "):
        crate = line[3:]
        trees[crate] = set()
    elif crate:
        trees[crate].add(line.strip())

failures = []
for package in sorted(packages, key=lambda p: p["name"]):
    name = package["name"]
    if name not in allowed:
        failures.append(f"{name}: not in scripts/check-deps.sh; say which crates it may depend on")
        continue
    for dependency in package["dependencies"]:
        if dependency["name"] in ours and dependency.get("kind") is None \
                and dependency["name"] not in allowed[name]:
            failures.append(f"{name} -> {dependency['name']}: not an edge its room may have")
for name, banned in forbidden.items():
    for found in sorted(banned & trees.get(name, set())):
        failures.append(f"{name} pulls in {found}, which it must never depend on")
if failures:
    print("dependency rules broken (docs/architecture.md):")
    print("\n".join("  " + f for f in failures))
    sys.exit(1)
print(f"dependency rules hold for {len(packages)} crates")
EOF
