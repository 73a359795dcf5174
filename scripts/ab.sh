#!/usr/bin/env bash
# Compares two leasehold binaries on one local cluster, taking turns.
#
#   scripts/ab.sh BIN_A BIN_B [PAIRS] -- LEASEBENCH_ARGS...
#   scripts/ab.sh /tmp/leasehold-before bin/leasehold 3 -- --clients 64 --duration 6s renew
#
# Each run restarts the three nodes of scripts/cluster.sh's cluster on one
# binary (the cluster is started first if no node runs), then runs
# bin/leasebench with the leader's URL first, as it expects (the watch
# workload's watchers go to the next node, a follower). The binaries take
# turns A B B A A B ..., so that the drift of a shared machine falls on
# both alike. Prints every run, then `leasebench summary` of them: the
# medians per binary of ops/s, latency, watch lag, the CPU time per
# operation of the nodes and of the load generator and the writes per log
# write, then B over A within each pair (ops/s and the nodes' CPU per
# operation: median and range, and in how many pairs B was faster). On a
# noisy machine take several pairs, and trust only differences larger
# than the runs' spread.
#
# Environment: scripts/cluster.sh's (LEASEHOLD_DATA, API_PORT_BASE, ...);
# RESULTS=DIR keeps the runs' JSON in DIR. FRESH=1 starts every run on a
# new, empty cluster instead of restarting the nodes on their data: for
# binaries that cannot share a data dir (a release before a feature level
# and one after it). SECURE=1 runs the cluster
# secured (each binary needs its leaseholdctl beside it) and leasebench
# over HTTPS (HTTP/2) as the admin of its local CA.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() { echo "usage: scripts/ab.sh BIN_A BIN_B [PAIRS] -- LEASEBENCH_ARGS..." >&2; exit 2; }
(($# >= 3)) || usage
A=$1 B=$2
shift 2
PAIRS=3
if [[ $1 != -- ]]; then
	PAIRS=$1
	shift
fi
[[ $PAIRS =~ ^[1-9][0-9]*$ && ${1:-} == -- ]] || usage
shift
(($# > 0)) || usage
for bin in "$A" "$B"; do [[ -x $bin ]] || { echo "scripts/ab.sh: $bin is not an executable" >&2; exit 2; }; done

API_PORT_BASE=${API_PORT_BASE:-7000}
FRESH=${FRESH:-0}
# The nodes start open unless SECURE=1; then leasebench talks HTTPS with
# the admin certificate of the cluster's local CA.
export SECURE=${SECURE:-0}
SCHEME=http
TLS_ARGS=()
if [[ $SECURE == 1 ]]; then
	PKI=${LEASEHOLD_DATA:-data/cluster}/pki
	SCHEME=https
	TLS_ARGS=(--cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")
fi
KEEP_RESULTS=${RESULTS:+yes}
RESULTS=${RESULTS:-$(mktemp -d)}
mkdir -p "$RESULTS"
[[ -n $KEEP_RESULTS ]] || trap 'rm -rf "$RESULTS"' EXIT

# (a leasebench older than its TLS flags would not know them)
[[ -x bin/leasebench && $SECURE != 1 ]] || go build -o bin/leasebench ./cmd/leasebench
if ! scripts/cluster.sh status 2>/dev/null | grep -q 'state='; then
	LEASEHOLD_BIN=$A scripts/cluster.sh start >/dev/null
fi

# endpoints prints the API URLs, the leader's first.
endpoints() {
	local status leader urls n
	status=$(scripts/cluster.sh status)
	leader=$(awk '$4 == "state=leader" {print $1}' <<<"$status")
	[[ -n $leader ]] || { echo "scripts/ab.sh: no leader: $status" >&2; return 1; }
	urls="$SCHEME://127.0.0.1:$((API_PORT_BASE + ${leader#n}))"
	for n in n1 n2 n3; do
		[[ $n == "$leader" ]] || urls+=",$SCHEME://127.0.0.1:$((API_PORT_BASE + ${n#n}))"
	done
	echo "$urls"
}

run=0
one() { # label binary
	local t
	if [[ $FRESH == 1 ]]; then
		scripts/cluster.sh clean >/dev/null
		LEASEHOLD_BIN=$2 scripts/cluster.sh start >/dev/null
	else
		for n in n1 n2 n3; do LEASEHOLD_BIN=$2 scripts/cluster.sh restart "$n" >/dev/null; done
	fi
	for ((t = 0; t < 50; t++)); do # a leader, known to all three
		endpoints >/dev/null 2>&1 && break
		sleep 0.2
	done
	run=$((run + 1))
	echo "== run $run: $1 ($2)"
	# Numbered so that the shell's glob below gives the runs in order, in
	# their pairs.
	bin/leasebench --endpoints "$(endpoints)" ${TLS_ARGS[@]+"${TLS_ARGS[@]}"} --label "$1" --json "$(printf '%s/%03d-%s.json' "$RESULTS" "$run" "$1")" "${args[@]}"
}

args=("$@")
for ((i = 1; i <= PAIRS; i++)); do
	if ((i % 2)); then order=(A B); else order=(B A); fi
	for label in "${order[@]}"; do
		if [[ $label == A ]]; then bin=$A; else bin=$B; fi
		one "$label" "$bin"
	done
done
echo
echo "== A = $A, B = $B; $PAIRS pairs"
bin/leasebench summary "$RESULTS"/*.json
