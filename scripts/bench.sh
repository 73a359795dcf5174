#!/usr/bin/env bash
# Benchmarks a fresh local three-node leasehold cluster through its REST API
# with cmd/leasebench and prints one line per workload.
#
#   scripts/bench.sh            short profile (about a minute)
#   DURATION=30s scripts/bench.sh
#
# The cluster runs on API ports 27001-27003 and peer ports 28001-28003 with
# its data in a temporary directory, and is removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION=${DURATION:-8s}
WATCHERS=${WATCHERS:-1000}
export LEASEHOLD_DATA=${LEASEHOLD_DATA:-$(mktemp -d)}
export API_PORT_BASE=${API_PORT_BASE:-27000}
export PEER_PORT_BASE=${PEER_PORT_BASE:-28000}
ENDPOINTS="http://127.0.0.1:$((API_PORT_BASE + 1)),http://127.0.0.1:$((API_PORT_BASE + 2)),http://127.0.0.1:$((API_PORT_BASE + 3))"

go build -o bin/leasehold ./cmd/leasehold
go build -o bin/leasebench ./cmd/leasebench
trap 'scripts/cluster.sh clean >/dev/null 2>&1 || true' EXIT
LEASEHOLD_BIN=bin/leasehold scripts/cluster.sh start >/dev/null

bench() { bin/leasebench --endpoints "$ENDPOINTS" --duration "$DURATION" "$@"; }

echo "== leasehold, $(nproc) cores, $DURATION per run"
bench --clients 1 --leases 10 --label 1-client renew
bench --clients 64 --label 64-clients renew
bench --clients 256 --label 256-clients renew
bench --clients 64 --label followers get
bench --clients 64 --label followers-rv0 get0
bench --clients 64 --label 64-clients mixed
echo "== watch fan-out: $WATCHERS watchers on one follower, renewals at 300/s"
bench --clients 16 --rate 300 --label no-watchers renew
bench --clients 16 --rate 300 --watchers "$WATCHERS" --label "$WATCHERS-watchers" watch
