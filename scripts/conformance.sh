#!/usr/bin/env bash
# Runs Kubernetes' storage test suites (k8s.io/apiserver/pkg/storage/testing,
# harness in test/etcdconformance, its README lists the suites) against a
# fresh three-node cluster on 127.0.0.1 reached through the etcd v3 API.
#
#   scripts/conformance.sh                    TARGET=leasehold: leasehold's etcd port (scripts/cluster.sh, SECURE=0)
#   TARGET=etcd scripts/conformance.sh        a three-member etcd 3.6 (scripts/etcd-bin.sh), for comparison
#   RUN='RunTestWatch$' scripts/conformance.sh   only the suites whose name RUN matches
#
# Both run every suite (test/etcdconformance/README.md says which and why).
#
# Environment:
#   TARGET          leasehold (default) or etcd
#   ETCD_PORT_BASE  default 23379. etcd: member i (1..3) serves clients on
#                   BASE+2(i-1) and peers on BASE+2(i-1)+1. leasehold: node i
#                   serves the etcd API on BASE+i (API and peer ports:
#                   API_PORT_BASE, default 24000, and PEER_PORT_BASE, default 25000)
#   RUN             regexp: run only the suites it matches (go test -run TestStorage/RUN)
#   GO_TEST_FLAGS   more go test flags, e.g. -race
#   TEST_TIMEOUT    go test -timeout, default 30m
#   READY_TIMEOUT   seconds to wait for the cluster, default 60
#   KEEP=1          keep the temporary directory (data and server logs)
#
# etcd runs with --unsafe-no-fsync, as Kubernetes' embedded test etcd does, and
# --watch-progress-notify-interval=1s for RunOptionalTestProgressNotify (the
# package's test etcd uses 1s too). The script signals only the processes it
# started; the temporary directory goes when it exits.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=$(basename "$0")
die() { echo "$PROG: $*" >&2; exit 1; }
say() { echo "$PROG: $*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

usage() { sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
case ${1:-} in
-h | --help | help) usage; exit 0 ;;
"") ;;
*) usage >&2; exit 2 ;;
esac

TARGET=${TARGET:-leasehold}
ETCD_PORT_BASE=${ETCD_PORT_BASE:-23379}
TEST_TIMEOUT=${TEST_TIMEOUT:-30m}
READY_TIMEOUT=${READY_TIMEOUT:-60}
KEEP=${KEEP:-0}
GO=${GO:-go}
for v in ETCD_PORT_BASE READY_TIMEOUT; do
	is_uint "${!v}" || die "$v must be a whole number, got '${!v}'"
done
((ETCD_PORT_BASE >= 1024 && ETCD_PORT_BASE + 6 <= 65535)) || die "ETCD_PORT_BASE out of range"
[[ $TARGET == etcd || $TARGET == leasehold ]] || die "TARGET must be etcd or leasehold, got '$TARGET'"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")
PIDS=() # etcd members this script started
STARTED_LEASEHOLD=0

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM
	if ((STARTED_LEASEHOLD)); then
		LEASEHOLD_DATA=$WORK/leasehold "$ROOT/scripts/cluster.sh" stop >&2 || rc=1
	fi
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "pid $pid still running after 10s, sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
	done
	if ((rc != 0)); then
		for log in "$WORK"/*.log "$WORK"/leasehold/n?/n?.log; do
			[[ -f $log ]] || continue
			say "last lines of $log:"
			tail -n 20 "$log" >&2
		done
	fi
	if [[ $KEEP == 1 ]]; then
		say "kept $WORK"
	else
		rm -rf -- "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- etcd

start_etcd() {
	local bin i client peer cluster="" endpoints=()
	bin=$("$ROOT/scripts/etcd-bin.sh") || die "no etcd binary (scripts/etcd-bin.sh failed)"
	for i in 1 2 3; do
		client=$((ETCD_PORT_BASE + 2 * (i - 1)))
		peer=$((client + 1))
		! port_open "$client" || die "127.0.0.1:$client is already in use"
		! port_open "$peer" || die "127.0.0.1:$peer is already in use"
		cluster+="${cluster:+,}m$i=http://127.0.0.1:$peer"
		endpoints+=("http://127.0.0.1:$client")
	done
	say "starting etcd $("$bin" --version | sed -n 's/^etcd Version: //p') members m1..m3 on ${endpoints[*]}"
	for i in 1 2 3; do
		client=$((ETCD_PORT_BASE + 2 * (i - 1)))
		peer=$((client + 1))
		"$bin" --name "m$i" --data-dir "$WORK/m$i" \
			--listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
			--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
			--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "conformance-$$" \
			--watch-progress-notify-interval 1s --unsafe-no-fsync --log-level warn \
			>"$WORK/m$i.log" 2>&1 &
		PIDS+=("$!")
	done
	local deadline=$((SECONDS + READY_TIMEOUT)) healthy pid e
	while :; do
		for pid in "${PIDS[@]}"; do
			kill -0 "$pid" 2>/dev/null || die "etcd pid $pid exited during startup"
		done
		healthy=0
		for e in "${endpoints[@]}"; do
			if curl -sS --connect-timeout 1 --max-time 2 "$e/health" 2>/dev/null | grep -q '"health":"true"'; then
				healthy=$((healthy + 1))
			fi
		done
		((healthy == 3)) && break
		((SECONDS < deadline)) || die "etcd not healthy within ${READY_TIMEOUT}s"
		sleep 0.2
	done
	say "etcd healthy"
	ENDPOINTS=$(IFS=,; echo "${endpoints[*]}")
}

# ---------------------------------------------------------------- leasehold

start_leasehold() {
	local i port endpoints=() deadline
	for i in 1 2 3; do
		port=$((ETCD_PORT_BASE + i))
		! port_open "$port" || die "127.0.0.1:$port is already in use"
		endpoints+=("http://127.0.0.1:$port")
	done
	say "starting leasehold n1..n3, etcd API on ${endpoints[*]}"
	STARTED_LEASEHOLD=1
	LEASEHOLD_DATA=$WORK/leasehold SECURE=0 ETCD_PORT_BASE=$ETCD_PORT_BASE \
		API_PORT_BASE=${API_PORT_BASE:-24000} PEER_PORT_BASE=${PEER_PORT_BASE:-25000} \
		READY_TIMEOUT=$READY_TIMEOUT "$ROOT/scripts/cluster.sh" start >&2
	deadline=$((SECONDS + READY_TIMEOUT))
	for i in 1 2 3; do
		port=$((ETCD_PORT_BASE + i))
		until port_open "$port"; do
			((SECONDS < deadline)) || die "nothing listens on 127.0.0.1:$port within ${READY_TIMEOUT}s"
			sleep 0.2
		done
	done
	ENDPOINTS=$(IFS=,; echo "${endpoints[*]}")
}

# ---------------------------------------------------------------- run

ENDPOINTS=
case $TARGET in
etcd) start_etcd ;;
leasehold) start_leasehold ;;
esac

run=TestStorage
[[ -z ${RUN:-} ]] || run="TestStorage/$RUN"
# shellcheck disable=SC2206 # GO_TEST_FLAGS is a list of words on purpose
flags=(-count=1 -v -timeout "$TEST_TIMEOUT" -run "$run" ${GO_TEST_FLAGS:-})
say "go test ${flags[*]} (in test/etcdconformance) against $ENDPOINTS"
start=$SECONDS
status=0
(
	cd "$ROOT/test/etcdconformance"
	ETCD_CONFORMANCE_ENDPOINTS=$ENDPOINTS "$GO" test "${flags[@]}" .
) 2>&1 | tee "$WORK/test.out" || status=$?

# One line per suite (the first level under TestStorage), then the totals.
results=$(grep -aE '^    --- (PASS|FAIL|SKIP): TestStorage/[A-Za-z]+ ' "$WORK/test.out" || true)
passed=$(grep -c -- '--- PASS' <<<"$results" || true)
failed=$(grep -c -- '--- FAIL' <<<"$results" || true)
skipped=$(grep -c -- '--- SKIP' <<<"$results" || true)
echo
echo "$TARGET conformance, $((SECONDS - start))s:"
grep -E -- '--- (FAIL|SKIP)' <<<"$results" | sed 's/^    /  /' || true
echo "suites: $passed passed, $failed failed, $skipped skipped"
if ((status != 0)) && ((failed == 0)); then
	say "go test failed before or outside the suites (exit $status); see above"
fi
exit "$status"
