#!/usr/bin/env bash
# Benchmarks a fresh local three-node leasehold cluster through its REST API
# with cmd/leasebench, side by side with a fresh local three-member etcd
# cluster sent only the etcd transactions kube-apiserver would send for the
# same operations (leasebench --target etcd), and prints a comparison table.
#
#   scripts/bench.sh                        default profile (about 23 minutes on 2 cores)
#   DURATION=30s ROUNDS=5 scripts/bench.sh  longer runs, more rounds
#   RESULTS=DIR scripts/bench.sh            keep the JSON results in DIR (the TLS profile's in DIR/tls)
#   TLS=0 scripts/bench.sh                  without the TLS profile (about 11 minutes less)
#   TLS=only scripts/bench.sh               the TLS profile alone (about 11 minutes)
#   HISTORY= scripts/bench.sh               without appending to docs/bench-history.csv
#
# Each part's medians are appended to docs/bench-history.csv (HISTORY=FILE:
# to FILE instead, relative to the repository's root), one row per
# workload (leasebench history): the date, the commit the binaries were
# built from (with -dirty if tracked files outside docs/ had changes), the
# profile ("plain 5s x3", "tls 5s x6"; "unpinned" with TLS_PIN=0) and the
# figures.
#
# leasehold runs on API ports 27001-27003 and peer ports 28001-28003; etcd
# (Debian's etcd-server, installed if etcd is not on PATH) on client ports
# 22379/22381/22383 and peer ports 22380/22382/22384 (the TLS profile's open
# clusters beside the secured ones on ports 10 above). Both keep their data
# in temporary directories on the same disk, both fsync their logs (etcd
# runs without --unsafe-no-fsync), and both are removed at the end. Every
# workload runs ROUNDS times on each system, alternately, so only one
# cluster is under load at a time while the other idles; the table shows
# the medians (before them, the machine's own floor: fdatasync and a
# loopback round trip, from leasebench machine). The same renewals also go
# to leasehold's etcd port (leasebench --target leasehold-etcd, node i on
# 127.0.0.1:LEASEHOLD_ETCD_PORT_BASE+i, default 29001-29003): what
# kube-apiserver keeping its Leases there sends. Then, on leasehold alone:
# watch fan-out (ROUNDS rounds of no watchers, protobuf and JSON watchers;
# medians) and 100,000 Leases stored (RSS, restart time).
#
# Last, the TLS profile (TLS=0 skips it; about 11 minutes): both clusters
# again, fresh and secured everywhere, each beside a fresh open one. leasehold as scripts/cluster.sh
# starts it (SECURE=1): HTTPS, client certificates of its local CA
# ($LEASEHOLD_DATA/pki), peer mutual TLS; etcd with client TLS
# (--client-cert-auth) and peer TLS (--peer-client-cert-auth), its
# certificates signed by the same CA (leasebench cert). leasebench speaks
# HTTP/2 to leasehold, as client-go does over TLS, with a client
# certificate of a kubelet's kind (system:node:leasebench in group
# system:nodes; /metrics is read as the CA's admin), and gRPC over TLS to
# etcd, as kube-apiserver does with --etcd-certfile. renew (JSON and
# protobuf) and get on followers at 64 clients, TLS_ROUNDS rounds each
# (twice ROUNDS by default: a round moves by a fifth with the host), the
# four clusters in turns (leasehold open, secured, etcd open, secured), so
# that the machine's drift falls on the open and the secured runs alike;
# then `leasebench tls`: leasehold / etcd over TLS, and each system's
# throughput over TLS / its open cluster's median. The load generator runs
# on a core of its own and the clusters on the others (taskset; TLS_PIN=0
# shares every core, as the first part does): clients of a real cluster
# run on other machines, and here client-go's own TLS and HTTP/2 would
# otherwise come out of the servers' cores and count as the servers' cost.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DURATION=${DURATION:-5s}
ROUNDS=${ROUNDS:-3}
TLS_ROUNDS=${TLS_ROUNDS:-$((2 * ROUNDS))}
WATCHERS=${WATCHERS:-1000}
TLS=${TLS:-1}
[[ $TLS == 0 || $TLS == 1 || $TLS == only ]] || { echo "scripts/bench.sh: TLS must be 0, 1 or only, got '$TLS'" >&2; exit 2; }
TLS_PIN=${TLS_PIN:-1}
[[ $TLS_PIN == 0 || $TLS_PIN == 1 ]] || { echo "scripts/bench.sh: TLS_PIN must be 0 or 1, got '$TLS_PIN'" >&2; exit 2; }
export LEASEHOLD_DATA=${LEASEHOLD_DATA:-$(mktemp -d)}
export API_PORT_BASE=${API_PORT_BASE:-27000}
export PEER_PORT_BASE=${PEER_PORT_BASE:-28000}
# The plaintext profile: nodes without TLS, as etcd runs without it here.
export SECURE=${SECURE:-0}
ETCD_PORT_BASE=${ETCD_PORT_BASE:-22379} # member i: client port BASE+2(i-1), peer port one above
# leasehold's own etcd API (docs/etcd.md): node i on 127.0.0.1:LEASEHOLD_ETCD_PORT_BASE+i.
LEASEHOLD_ETCD_PORT_BASE=${LEASEHOLD_ETCD_PORT_BASE:-29000}
# cluster runs scripts/cluster.sh with leasehold's etcd port base (its
# ETCD_PORT_BASE; here that name is the etcd cluster's).
cluster() { ETCD_PORT_BASE=$LEASEHOLD_ETCD_PORT_BASE ${ON_SERVERS[@]+"${ON_SERVERS[@]}"} scripts/cluster.sh "$@"; }
# open_cluster is the TLS profile's open leasehold cluster, beside the
# secured one: API ports 27011-27013, peer ports 28011-28013 by default.
OPEN_DATA=$(mktemp -d)
open_cluster() {
	LEASEHOLD_DATA=$OPEN_DATA API_PORT_BASE=$((API_PORT_BASE + 10)) PEER_PORT_BASE=$((PEER_PORT_BASE + 10)) \
		ETCD_PORT_BASE='' SECURE=0 ${ON_SERVERS[@]+"${ON_SERVERS[@]}"} scripts/cluster.sh "$@"
}
# ON_SERVERS and ON_CLIENT prefix the commands that start the clusters and
# the load generator: empty, or taskset to keep them on cores of their own
# (the TLS profile).
ON_SERVERS=()
ON_CLIENT=()
ETCD_DATA=$(mktemp -d)
# The history: where each part's medians are appended, and the commit
# the binaries are built from (-dirty: with changes to tracked files
# outside docs/; empty outside a git checkout).
HISTORY=${HISTORY-docs/bench-history.csv}
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || true)
if [[ -n $COMMIT ]] && ! git diff --quiet HEAD -- . ':(exclude)docs' 2>/dev/null; then COMMIT+=-dirty; fi
# record_history PROFILE RESULT.json...: their rows in HISTORY; a failure
# to write them is reported, and the run goes on.
record_history() {
	[[ -z $HISTORY ]] || bin/leasebench history --out "$HISTORY" --commit "$COMMIT" --profile "$1" "${@:2}" ||
		echo "scripts/bench.sh: these results are not in $HISTORY" >&2
}
KEEP_RESULTS=${RESULTS:+yes}
RESULTS=${RESULTS:-$(mktemp -d)}
mkdir -p "$RESULTS"
ETCD_PIDS=()

stop_etcd() {
	local pid t alive
	for pid in "${ETCD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for ((t = 0; t < 30; t++)); do # a leader whose peers are gone takes seconds to step down
		alive=
		for pid in "${ETCD_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=yes; done
		[[ -n $alive ]] || break
		sleep 0.5
	done
	for pid in "${ETCD_PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	ETCD_PIDS=()
}

cleanup() {
	stop_etcd
	rm -rf "$ETCD_DATA"
	[[ -n $KEEP_RESULTS ]] || rm -rf "$RESULTS"
	cluster clean >/dev/null 2>&1 || true
	open_cluster clean >/dev/null 2>&1 || true
	rm -rf "$OPEN_DATA"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! command -v etcd >/dev/null; then
	sudo=()
	[[ $(id -u) -eq 0 ]] || sudo=(sudo)
	echo "== installing Debian's etcd-server (no etcd on PATH)"
	install_etcd() { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server >/dev/null; }
	install_etcd || { "${sudo[@]}" apt-get update >/dev/null && install_etcd; }
fi

go build -o bin/leasehold ./cmd/leasehold
go build -o bin/leasebench ./cmd/leasebench
# cluster.sh makes a secured cluster's certificates with the leaseholdctl
# beside the binary it runs.
[[ $TLS == 0 ]] || go build -o bin/leaseholdctl ./cmd/leaseholdctl
PLAIN=1 # the plaintext profile runs
[[ $TLS != only ]] || PLAIN=0
# What bounds one sequential client here, before either system runs: how
# long a page takes to become durable on the disk both write to, and a
# round trip between two processes, back to back and after an idle spell.
if ((PLAIN)); then
	echo "== this machine"
	mkdir -p "$LEASEHOLD_DATA"
	bin/leasebench machine --dir "$LEASEHOLD_DATA"
	echo
fi
# endpoints SCHEME PORT_BASE STARTED: the nodes' API URLs, the leader
# (from cluster.sh start's output STARTED) first: leasebench takes the
# first for the leader (its get workloads read on the others).
endpoints() {
	local leader i url list=
	leader=$(sed -n 's/^leader: n\([1-3]\)$/\1/p' <<<"$3")
	for i in "${leader:-1}" 1 2 3; do
		url="$1://127.0.0.1:$(($2 + i))"
		[[ ,$list, == *,$url,* ]] || list+="${list:+,}$url"
	done
	echo "$list"
}
if ((PLAIN)); then
	started=$(LEASEHOLD_BIN=bin/leasehold cluster start)
	ENDPOINTS=$(endpoints http "$API_PORT_BASE" "$started")
fi
LEASEHOLD_ETCD_ENDPOINTS="http://127.0.0.1:$((LEASEHOLD_ETCD_PORT_BASE + 1)),http://127.0.0.1:$((LEASEHOLD_ETCD_PORT_BASE + 2)),http://127.0.0.1:$((LEASEHOLD_ETCD_PORT_BASE + 3))"

# etcd: a fresh three-member cluster. The compaction setting mirrors
# kube-apiserver, which compacts etcd every 5 minutes by default.
# ETCD_SCHEME is http, or https for the TLS profile, whose certificate
# flags are in ETCD_TLS_FLAGS; the health checks use CURL_TLS.
ETCD_SCHEME=http
ETCD_TLS_FLAGS=()
CURL_TLS=()
etcd_url() { echo "$ETCD_SCHEME://127.0.0.1:$((ETCD_PORT_BASE + 2 * ($1 - 1) + $2))"; } # member, 0 client / 1 peer
# start_etcd DIR: the three members, their data and logs in DIR.
start_etcd() {
	local dir=$1 i t initial='' first=${#ETCD_PIDS[@]}
	for i in 1 2 3; do initial+="${initial:+,}e$i=$(etcd_url "$i" 1)"; done
	ETCD_ENDPOINTS="$(etcd_url 1 0),$(etcd_url 2 0),$(etcd_url 3 0)"
	for i in 1 2 3; do
		${ON_SERVERS[@]+"${ON_SERVERS[@]}"} etcd --name "e$i" --data-dir "$dir/e$i" --logger zap \
			--listen-client-urls "$(etcd_url "$i" 0)" --advertise-client-urls "$(etcd_url "$i" 0)" \
			--listen-peer-urls "$(etcd_url "$i" 1)" --initial-advertise-peer-urls "$(etcd_url "$i" 1)" \
			--initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token leasebench \
			--auto-compaction-mode periodic --auto-compaction-retention 5m \
			${ETCD_TLS_FLAGS[@]+"${ETCD_TLS_FLAGS[@]}"} \
			>"$dir/e$i.log" 2>&1 &
		ETCD_PIDS+=("$!")
	done
	for i in 1 2 3; do
		for ((t = 0; ; t++)); do
			curl -fsS --max-time 2 ${CURL_TLS[@]+"${CURL_TLS[@]}"} "$(etcd_url "$i" 0)/health" 2>/dev/null | grep -q '"health":"true"' && break
			if ((t >= 60)) || ! kill -0 "${ETCD_PIDS[first + i - 1]}" 2>/dev/null; then
				echo "etcd member e$i did not become healthy; its log ends:" >&2
				tail -n 20 "$dir/e$i.log" >&2
				exit 1
			fi
			sleep 0.5
		done
	done
}
((PLAIN == 0)) || start_etcd "$ETCD_DATA"

n=0
# compare WORKLOAD LABEL FLAGS...: ROUNDS runs of each of TARGETS, in
# turns, their results in OUT (the open clusters' of the TLS profile in
# OUT/plain); BENCH_TLS holds leasebench's TLS flags, if any. TARGETS:
# leasehold (its REST API), leasehold-etcd (kube-apiserver's transactions
# through leasehold's etcd port), etcd; leasehold-open and etcd-open, the
# TLS profile's open clusters.
OUT=$RESULTS
BENCH_TLS=()
TARGETS=(leasehold etcd)
compare() {
	local workload=$1 label=$2 r variant target endpoints metrics out
	local -a tls
	shift 2
	n=$((n + 1))
	for ((r = 1; r <= ROUNDS; r++)); do
		for variant in "${TARGETS[@]}"; do
			out=$OUT tls=(${BENCH_TLS[@]+"${BENCH_TLS[@]}"})
			case $variant in
			leasehold) target=leasehold endpoints=$ENDPOINTS metrics=$ENDPOINTS ;;
			leasehold-etcd) target=leasehold-etcd endpoints=$LEASEHOLD_ETCD_ENDPOINTS metrics=$ENDPOINTS ;;
			etcd) target=etcd endpoints=$ETCD_ENDPOINTS metrics=$ETCD_ENDPOINTS ;;
			leasehold-open) target=leasehold endpoints=$OPEN_ENDPOINTS metrics=$OPEN_ENDPOINTS out=$OUT/plain tls=() ;;
			etcd-open) target=etcd endpoints=$OPEN_ETCD_ENDPOINTS metrics=$OPEN_ETCD_ENDPOINTS out=$OUT/plain tls=() ;;
			esac
			${ON_CLIENT[@]+"${ON_CLIENT[@]}"} bin/leasebench --target "$target" --endpoints "$endpoints" --metrics-endpoints "$metrics" \
				--duration "$DURATION" --label "$label" \
				--json "$(printf '%s/%02d-%s-%s-%s-%d.json' "$out" "$n" "$workload" "$label" "${target%-etcd}" "$r")" \
				${tls[@]+"${tls[@]}"} "$@" "$workload"
		done
	done
}

if ((PLAIN)); then # up to the TLS profile
echo "== leasehold vs etcd (kube-apiserver's transactions only), $(nproc) cores, $DURATION per run, $ROUNDS rounds"
# Other load on the machine moves every figure: say how busy it was.
[[ ! -r /proc/loadavg ]] || echo "   load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
compare renew 1-client --clients 1 --leases 10
compare renew 64-clients --clients 64
# Kubelets and kube components renew their Leases in protobuf (etcd's side
# is the same transaction either way).
compare renew 64-clients-protobuf --clients 64 --format protobuf
compare renew 256-clients --clients 256
compare get followers --clients 64
compare get0 followers-rv0 --clients 64
compare mixed 64-clients --clients 64
# The same renewals as etcd's, to leasehold's etcd port: what
# kube-apiserver started with --etcd-servers-overrides sends it.
TARGETS=(leasehold-etcd etcd)
compare renew etcd-api-64-clients --clients 64
echo
bin/leasebench compare "$RESULTS"/*.json
record_history "plain $DURATION x$ROUNDS" "$RESULTS"/*.json
[[ -z $KEEP_RESULTS ]] || echo "results in $RESULTS"

# The rest is leasehold's alone: etcd stops, or its periodic compaction
# (every 5 minutes, as kube-apiserver asks) would land in these runs.
stop_etcd

echo
echo "== watch fan-out (leasehold only: kube-apiserver serves watchers from its watch cache, not from etcd):"
echo "   $WATCHERS watchers on one follower, renewals at a steady 300/s (64 writers, so that"
echo "   throughput drops only if the cluster cannot keep the rate, not because each writer waits longer);"
echo "   $ROUNDS rounds of: no watchers, protobuf watchers, JSON watchers"
bench() { bin/leasebench --endpoints "$ENDPOINTS" --duration "$DURATION" "$@"; }
FANOUT=()
mkdir -p "$RESULTS/fanout" # apart from the comparison's results
for ((r = 1; r <= ROUNDS; r++)); do
	for format in none protobuf json; do
		out=$(printf '%s/fanout/%d-%s.json' "$RESULTS" "$r" "$format")
		if [[ $format == none ]]; then
			bench --clients 64 --rate 300 --label no-watchers --json "$out" renew
		else
			bench --clients 64 --rate 300 --watchers "$WATCHERS" --watch-format "$format" --label "$WATCHERS-watchers" --json "$out" watch
		fi
		FANOUT+=("$out")
	done
done
echo
bin/leasebench fanout "${FANOUT[@]}"
record_history "plain $DURATION x$ROUNDS" "${FANOUT[@]}"

# Scale: memory and restart with many Leases stored, on the same cluster.
SCALE_LEASES=${SCALE_LEASES:-100000}
echo
echo "== scale: $SCALE_LEASES Leases stored (leasebench's setup creates them)"
bin/leasebench --endpoints "$ENDPOINTS" --leases "$SCALE_LEASES" --clients 64 --duration 1s --label "$SCALE_LEASES-leases" renew
# RSS, and its parts: anonymous memory (the Go heap and runtime) and file
# pages (bbolt memory-maps the Raft log; those pages are page cache the
# kernel can take back); and the size of that file, which never shrinks.
rss() {
	awk '/^VmRSS:/ {t = $2} /^RssAnon:/ {a = $2} /^RssFile:/ {f = $2} END {printf "%.0f MB (anon %.0f, file %.0f)", t / 1024, a / 1024, f / 1024}' "/proc/$(cat "$LEASEHOLD_DATA/$1/$1.pid")/status"
	printf ', raft.db %d MB' "$(($(stat -c %s "$LEASEHOLD_DATA/$1/data/raft.db") / 1048576))"
}
# rate prints the ops/s of a leasebench report.
rate() { sed -n 's/.* ops\/s=\([0-9]*\) .*/\1/p' <<<"$1" | head -1; }
for n in n1 n2 n3; do echo "   $n RSS $(rss "$n")"; done
# Then renewed, as stored Leases are: the watch history fills with new
# versions and keeps the ones they replaced until their events leave it.
echo "   renewed for 10s (64 clients, all $SCALE_LEASES Leases; the watch history keeps replaced versions):"
renew10=$(bin/leasebench --endpoints "$ENDPOINTS" --leases "$SCALE_LEASES" --clients 64 --duration 10s --label "$SCALE_LEASES-leases" renew)
echo "$renew10"
for n in n1 n2 n3; do echo "   $n RSS $(rss "$n")"; done
# An informer starts with a full list (resourceVersion=0): every node
# answers two, in JSON and in protobuf.
echo "   then listed in full, twice on every node (JSON and protobuf, as informers start):"
for i in 1 2 3; do
	url="http://127.0.0.1:$((API_PORT_BASE + i))/apis/coordination.k8s.io/v1/leases?resourceVersion=0"
	for accept in application/json application/vnd.kubernetes.protobuf; do
		curl -fsS -A leasebench -H "Accept: $accept" -o /dev/null "$url" || echo "   list on n$i ($accept) failed"
	done
done
for n in n1 n2 n3; do echo "   $n RSS $(rss "$n")"; done
# Renewed for as long as Leases are: until the watch history (its default
# 100,000 events) holds only renewals, each holding the version it
# replaced (as its difference, once the event that wrote it has left). Renewals are counted from leasebench's rates (a run's setup
# writes too, but not into the history: its creates find the Leases there),
# the 10 s run above included, in 15 s steps.
echo "   renewed until the watch history (100000 events) holds only renewals:"
# One reading a node at the end says little: the heap swings with the
# garbage collector's cycles and snapshots. The nodes' RSS is also read
# every 2 s from the second step on, when the history is already mostly
# renewals.
sample_rss() {
	while sleep 2; do
		for n in n1 n2 n3; do
			awk '/^VmRSS:/ {printf "%.0f\n", $2 / 1024}' "/proc/$(cat "$LEASEHOLD_DATA/$n/$n.pid")/status" 2>/dev/null || true
		done
	done >>"$RESULTS/rss-samples"
}
renewed=$((10 * $(rate "$renew10")))
sampler=
for step in 1 2 3 4 5 6 7 8; do
	# At least two steps: the second is the one read every 2 s.
	((renewed >= 110000 && step > 2)) && break
	if [[ $step == 2 ]]; then
		sample_rss &
		sampler=$!
	fi
	line=$(bin/leasebench --endpoints "$ENDPOINTS" --leases "$SCALE_LEASES" --clients 64 --duration 15s --label "$SCALE_LEASES-leases" renew | sed -n 1p)
	echo "$line"
	renewed=$((renewed + 15 * $(rate "$line")))
done
if [[ -n $sampler ]]; then
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
fi
echo "   ($renewed renewals since their creation)"
for n in n1 n2 n3; do echo "   $n RSS $(rss "$n")"; done
if [[ -s $RESULTS/rss-samples ]]; then
	sort -n "$RESULTS/rss-samples" | awk '{v[NR] = $1; if ($1 > 300) over++}
		END {printf "   RSS read every 2 s while renewing (%d readings, the three nodes): median %d MB, p90 %d, max %d; %d%% over 300 MB\n", NR, v[int((NR + 1) / 2)], v[int(NR * 0.9)], v[NR], 100 * over / NR}'
fi
follower=$(cluster status | awk '$4 == "state=follower" {print $1; exit}')
if [[ -n $follower ]]; then
	cluster kill "$follower" >/dev/null
	url="http://127.0.0.1:$((API_PORT_BASE + ${follower#n}))/readyz"
	start=$(date +%s%N)
	cluster restart "$follower" >/dev/null &
	restart=$!
	until [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url") == 200 ]]; do
		kill -0 "$restart" 2>/dev/null || break # the restart failed: its error is on stderr
		sleep 0.05
	done
	ready=$(date +%s%N)
	wait "$restart"
	echo "   $follower SIGKILLed and restarted: ready in $(((ready - start) / 1000000)) ms, RSS $(rss "$follower")"
else
	echo "   no follower to restart: $(cluster status | tr '\n' ' ')"
fi

fi # the plaintext profile
[[ $TLS != 0 ]] || exit 0

# ---------------------------------------------------------------- TLS profile
# Both systems again, fresh and secured everywhere: leasehold as
# scripts/cluster.sh starts it (HTTPS with HTTP/2, client certificates,
# peer mutual TLS), etcd with client and peer TLS, both requiring client
# certificates of the same local CA.
echo
ROUNDS=$TLS_ROUNDS
echo "== over TLS: renew and get at 64 clients, $ROUNDS rounds of $DURATION each, alternately"
cluster clean >/dev/null
cores=$(nproc)
TLS_PROFILE="tls $DURATION x$ROUNDS"
if ((TLS_PIN && cores >= 2)) && command -v taskset >/dev/null; then
	ON_SERVERS=(taskset -c "0-$((cores - 2))")
	ON_CLIENT=(taskset -c "$((cores - 1))")
	echo "   the clusters on cores 0-$((cores - 2)), the load generator on core $((cores - 1))"
else
	TLS_PROFILE+=" unpinned"
	echo "   the clusters and the load generator share the $cores cores"
fi
started=$(SECURE=1 LEASEHOLD_BIN=bin/leasehold cluster start)
PKI=$LEASEHOLD_DATA/pki
ENDPOINTS=$(endpoints https "$API_PORT_BASE" "$started")
# Beside each secured cluster an open one, as in the first part, on ports
# 10 above and data of its own: the runs over TLS take turns with these,
# so that what the machine's other load does falls on both alike.
OPEN_ENDPOINTS=$(endpoints http $((API_PORT_BASE + 10)) "$(LEASEHOLD_BIN=bin/leasehold open_cluster start)")
ETCD_PORT_BASE=$((ETCD_PORT_BASE + 10))
mkdir -p "$ETCD_DATA/open"
start_etcd "$ETCD_DATA/open"
OPEN_ETCD_ENDPOINTS=$ETCD_ENDPOINTS
ETCD_PORT_BASE=$((ETCD_PORT_BASE - 10))
CERTS=$ETCD_DATA/tls
mkdir -p "$CERTS"
issue() { bin/leasebench cert --ca-cert "$PKI/ca.crt" --ca-key "$PKI/ca.key" --out "$CERTS/$1" "${@:2}"; }
# The load generator's identity, a kubelet's kind (not system:masters, who
# skips the in-flight limits); the same certificate for etcd.
issue client --cn system:node:leasebench --o system:nodes --usage client
# etcd's serving and peer certificates, as leasehold's: a SAN for
# 127.0.0.1, the peer one for both ends of a connection, with a CN the
# members require of each other.
issue etcd-server --cn etcd --ip 127.0.0.1 --dns localhost --usage server
issue etcd-peer --cn etcd-peer --ip 127.0.0.1 --dns localhost --usage server,client
ETCD_SCHEME=https
ETCD_TLS_FLAGS=(
	--cert-file "$CERTS/etcd-server.crt" --key-file "$CERTS/etcd-server.key"
	--client-cert-auth --trusted-ca-file "$PKI/ca.crt"
	--peer-cert-file "$CERTS/etcd-peer.crt" --peer-key-file "$CERTS/etcd-peer.key"
	--peer-client-cert-auth --peer-trusted-ca-file "$PKI/ca.crt" --peer-cert-allowed-cn etcd-peer
)
CURL_TLS=(--cacert "$PKI/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key")
# A secured node authorizes with RBAC: the load generator is given
# leasehold:lease-holder in its namespace, as a team's components are
# (kubectl create rolebinding, here with curl as the CA's admin). A node
# applies the binding tens of milliseconds after it is written: wait until
# every node lets the load generator read its Leases.
binding='{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",
 "metadata":{"name":"leasebench","namespace":"leasebench"},
 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"leasehold:lease-holder"},
 "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:node:leasebench"}]}'
for ((t = 0; ; t++)); do
	code=$(curl -sS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" -o /dev/null -w '%{http_code}' \
		-X POST -H 'Content-Type: application/json' --data "$binding" \
		"${ENDPOINTS%%,*}/apis/rbac.authorization.k8s.io/v1/namespaces/leasebench/rolebindings" 2>/dev/null) || true
	[[ $code == 201 || $code == 409 ]] && break
	((t < 60)) || { echo "scripts/bench.sh: cannot bind leasehold:lease-holder to the load generator: HTTP $code" >&2; exit 1; }
	sleep 0.5
done
for url in ${ENDPOINTS//,/ }; do
	for ((t = 0; ; t++)); do
		code=$(curl -sS --max-time 5 "${CURL_TLS[@]}" -o /dev/null -w '%{http_code}' "$url/apis/coordination.k8s.io/v1/namespaces/leasebench/leases?limit=1" 2>/dev/null) || true
		[[ $code == 200 ]] && break
		((t < 60)) || { echo "scripts/bench.sh: $url still refuses the load generator: HTTP $code" >&2; exit 1; }
		sleep 0.5
	done
done
start_etcd "$CERTS"
echo "   leasehold: HTTPS, HTTP/2 with a client certificate (system:node:leasebench, group system:nodes;"
echo "   RBAC: leasehold:lease-holder bound in its namespace), from each client on a connection of its own"
echo "   to each node; peers over mutual TLS (--peer-cert-allowed-cn)"
echo "   etcd: gRPC over TLS, --client-cert-auth (the same client certificate); peers over mutual TLS"
echo "   (--peer-client-cert-auth, --peer-cert-allowed-cn); both sign with the same CA, ECDSA P-256 keys"
echo "   open beside them, taking turns with them: leasehold ($OPEN_ENDPOINTS), etcd ($OPEN_ETCD_ENDPOINTS)"
BENCH_TLS=(--cacert "$PKI/ca.crt" --cert "$CERTS/client.crt" --key "$CERTS/client.key"
	--metrics-cert "$PKI/admin.crt" --metrics-key "$PKI/admin.key")
OUT=$RESULTS/tls
mkdir -p "$OUT/plain"
[[ ! -r /proc/loadavg ]] || echo "   load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
# The same labels as the first part's runs. (n, compare's count, served as
# a node's name since.)
n=0
TARGETS=(leasehold-open leasehold etcd-open etcd)
compare renew 64-clients --clients 64
compare renew 64-clients-protobuf --clients 64 --format protobuf
compare get followers --clients 64
stop_etcd
open_cluster clean >/dev/null
echo
bin/leasebench tls "$OUT"/plain/*.json "$OUT"/*.json
record_history "$TLS_PROFILE" "$OUT"/plain/*.json "$OUT"/*.json
[[ -z $KEEP_RESULTS ]] || echo "results in $RESULTS"
