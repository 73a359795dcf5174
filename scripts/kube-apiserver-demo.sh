#!/usr/bin/env bash
# A real kube-apiserver v1.36.3 that keeps its Leases in leasehold (or, to compare, in etcd).
#
#   scripts/kube-apiserver-demo.sh up      build what is missing, start everything, print how to reach it
#   scripts/kube-apiserver-demo.sh check   run the checks (starting the demo first, and stopping it
#                                          afterwards, when it is not up); non-zero exit if one fails
#   scripts/kube-apiserver-demo.sh status  what runs, one line per process
#   scripts/kube-apiserver-demo.sh down    stop everything the demo started (only the pids it recorded)
#   scripts/kube-apiserver-demo.sh bench   kube-apiserver renewing Leases at 64 clients (cmd/leasebench
#                                          through kube-apiserver): a demo with the Leases on etcd and
#                                          one on leasehold, both fresh and running at once (DEMO_DIR-bench/,
#                                          ports DEMO_PORT_BASE+1000 and +1500), rounds alternating
#                                          between them; a table side by side
#
# What runs, all on 127.0.0.1, all data, certificates and logs under DEMO_DIR:
#   - a one-member etcd (scripts/etcd-bin.sh) for kube-apiserver's main store;
#   - the lease store: with LEASES_ON=leasehold a three-node leasehold cluster
#     (scripts/cluster.sh, LEASEHOLD_DATA=DEMO_DIR/leasehold) serving the etcd v3 API on
#     ETCD_PORT_BASE+i; with LEASES_ON=etcd a second, separate three-member etcd;
#   - kube-apiserver (scripts/kube-apiserver-bin.sh) with
#     --etcd-servers-overrides=coordination.k8s.io/leases#<the lease store's three URLs>.
# Certificates come from `leaseholdctl certs init`: a CA (kube-apiserver's --client-ca-file),
# a serving certificate for 127.0.0.1, an admin client certificate (group system:masters)
# for DEMO_DIR/kubeconfig; a second CA's key signs service-account tokens.
#
# The checks: kube-apiserver's identity Leases (kube-system/apiserver-*) are in the lease
# store and not in the main etcd; a Lease created with kubectl through kube-apiserver is in
# the lease store with mod_revision = resourceVersion (leasehold: read with kubectl through
# leasehold, same resourceVersion), and so is an update of it; with leasehold, an update
# made through leasehold is what kube-apiserver then serves; a list through kube-apiserver
# (watch cache, consistent read) sees it within LIST_BUDGET seconds; a delete leaves nothing;
# a watch through kube-apiserver from the create saw every change, in order.
#
# Environment:
#   LEASES_ON         leasehold (default) or etcd: where kube-apiserver keeps Leases
#   DEMO_DIR          work directory, default <repo>/data/kube-apiserver-demo (wiped by up)
#   DEMO_PORT_BASE    default 25000; every port below is derived from it unless set:
#     DEMO_KAS_PORT             kube-apiserver's secure port, BASE+443
#     DEMO_MAIN_ETCD_PORT       main etcd client port BASE+379 (peer port one above)
#     DEMO_LEASE_ETCD_PORT_BASE LEASES_ON=etcd: member i's client port BASE+380+2i-1, peer one above
#     DEMO_API_PORT_BASE        leasehold node i's API port BASE+100+i
#     DEMO_PEER_PORT_BASE       leasehold node i's Raft port BASE+200+i
#     DEMO_ETCD_PORT_BASE       leasehold node i's etcd port BASE+300+i
#   SECURE            1 (default, but 0 for bench): leasehold over TLS (https:// overrides with
#                     --etcd-cafile, --etcd-certfile and --etcd-keyfile of leasehold's admin);
#                     0: plaintext, as the etcd runs
#   KUBECTL           kubectl to use, default kubectl on PATH
#   ETCD_BIN, KUBE_APISERVER_BIN   binaries to use instead of scripts/etcd-bin.sh's and
#                     scripts/kube-apiserver-bin.sh's
#   KAS_EXTRA_ARGS    more kube-apiserver flags, split on spaces (e.g. --v=4)
#   READY_TIMEOUT     seconds to wait for each component to be ready, default 180
#   STOP_TIMEOUT      seconds after SIGTERM before SIGKILL, default 20
#   LIST_BUDGET       seconds a list of Leases through kube-apiserver may take, default 2.5
#   bench only: BENCH_STORES (default "etcd leasehold"), DURATION (default 10s), ROUNDS
#                     (default 3), CLIENTS (default 64), LEASES (default 1000), RESULTS (a
#                     directory to keep leasebench's JSON in)
#
# The script only signals pids it recorded, and only while /proc/PID/cmdline shows that
# process still runs with an argument under DEMO_DIR.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=$(basename "$0")

die() {
	echo "$PROG: $*" >&2
	exit 1
}
say() { echo "$PROG: $*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
# so that the EXIT traps (which stop what was started) also run on ^C
trap 'exit 130' INT TERM

LEASES_ON=${LEASES_ON:-leasehold}
[[ $LEASES_ON == leasehold || $LEASES_ON == etcd ]] || die "LEASES_ON must be leasehold or etcd, got '$LEASES_ON'"
SECURE_GIVEN=${SECURE:+yes}
SECURE=${SECURE:-1}
[[ $SECURE == 0 || $SECURE == 1 ]] || die "SECURE must be 0 or 1, got '$SECURE'"

DEMO_DIR=${DEMO_DIR:-$ROOT/data/kube-apiserver-demo}
[[ $DEMO_DIR == /* ]] || DEMO_DIR=$PWD/$DEMO_DIR
DEMO_DIR=${DEMO_DIR%/}
case $DEMO_DIR in
"" | / | "$HOME" | "$ROOT" | "$ROOT/data") die "refusing to use '$DEMO_DIR' as DEMO_DIR" ;;
esac

DEMO_PORT_BASE=${DEMO_PORT_BASE:-25000}
is_uint "$DEMO_PORT_BASE" || die "DEMO_PORT_BASE must be a whole number, got '$DEMO_PORT_BASE'"
KAS_PORT=${DEMO_KAS_PORT:-$((DEMO_PORT_BASE + 443))}
MAIN_ETCD_PORT=${DEMO_MAIN_ETCD_PORT:-$((DEMO_PORT_BASE + 379))}
LEASE_ETCD_PORT_BASE=${DEMO_LEASE_ETCD_PORT_BASE:-$((DEMO_PORT_BASE + 380))}
LH_API_PORT_BASE=${DEMO_API_PORT_BASE:-$((DEMO_PORT_BASE + 100))}
LH_PEER_PORT_BASE=${DEMO_PEER_PORT_BASE:-$((DEMO_PORT_BASE + 200))}
LH_ETCD_PORT_BASE=${DEMO_ETCD_PORT_BASE:-$((DEMO_PORT_BASE + 300))}
READY_TIMEOUT=${READY_TIMEOUT:-180}
STOP_TIMEOUT=${STOP_TIMEOUT:-20}
for v in KAS_PORT MAIN_ETCD_PORT LEASE_ETCD_PORT_BASE LH_API_PORT_BASE LH_PEER_PORT_BASE LH_ETCD_PORT_BASE READY_TIMEOUT STOP_TIMEOUT; do
	is_uint "${!v}" || die "$v must be a whole number, got '${!v}'"
done
for v in KAS_PORT MAIN_ETCD_PORT LEASE_ETCD_PORT_BASE LH_API_PORT_BASE LH_PEER_PORT_BASE LH_ETCD_PORT_BASE; do
	((${!v} > 0 && ${!v} + 6 <= 65535)) || die "$v=${!v} is out of range"
done
LIST_BUDGET=${LIST_BUDGET:-2.5}
[[ $LIST_BUDGET =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "LIST_BUDGET must be a number of seconds, got '$LIST_BUDGET'"

KUBECTL=${KUBECTL:-kubectl}
STATE=$DEMO_DIR/leases-on # the running demo's LEASES_ON; absent when none runs
PKI=$DEMO_DIR/pki
SA_DIR=$DEMO_DIR/service-accounts
KUBECONFIG_FILE=$DEMO_DIR/kubeconfig
LEASEHOLD_DATA_DIR=$DEMO_DIR/leasehold
KAS_URL=https://127.0.0.1:$KAS_PORT
MEMBERS=(1 2 3)

CURL=(curl -sS --connect-timeout 1 --max-time 5)
KAS_CURL=("${CURL[@]}" --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")

# ---------------------------------------------------------------- processes

# cmdline PID: the process's arguments, one per line; fails if it is gone (or a zombie).
cmdline() {
	local c
	[[ -r /proc/$1/cmdline ]] || return 1
	c=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ -n $c ]] || return 1
	printf '%s\n' "$c"
}

# proc_pid NAME: the recorded pid of process NAME while it runs with an argument under DEMO_DIR.
proc_pid() {
	local f=$DEMO_DIR/$1/pid pid args
	[[ -f $f ]] || return 1
	pid=$(head -n 1 "$f" 2>/dev/null) || return 1
	is_uint "$pid" && ((pid > 1)) || return 1
	args=$(cmdline "$pid") || return 1
	[[ $args == *"$DEMO_DIR/"* ]] || return 1
	echo "$pid"
}

exited() { # gone, or a zombie whose last thread has closed its files
	local stat tasks
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	[[ ${stat##*) } == Z* ]] || return 1
	tasks=("/proc/$1/task/"*)
	((${#tasks[@]} <= 1))
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# launch NAME BINARY ARGS...: start in its own session, pid in DEMO_DIR/NAME/pid, output in
# DEMO_DIR/NAME/NAME.log.
launch() {
	local name=$1 dir=$DEMO_DIR/$1 i
	shift
	mkdir -p "$dir"
	rm -f "$dir/pid"
	printf '%s\n' "$@" >"$dir/args"
	echo "=== $(date '+%Y-%m-%dT%H:%M:%S%z') $PROG: starting $name: $*" >>"$dir/$name.log"
	local runner=(nohup)
	command -v setsid >/dev/null 2>&1 && runner=(setsid)
	# shellcheck disable=SC2016 # $$ and "$@" belong to the inner shell
	"${runner[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' demo-launch "$dir/pid" "$@" \
		</dev/null >>"$dir/$name.log" 2>&1 &
	for ((i = 0; i < 50; i++)); do
		[[ -s $dir/pid ]] && return 0
		sleep 0.1
	done
	die "$name did not record a pid in $dir/pid"
}

# stop_procs NAME...: SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL what is left.
stop_procs() {
	local n pid deadline=$((SECONDS + STOP_TIMEOUT)) left
	local -A pids=()
	for n in "$@"; do
		if pid=$(proc_pid "$n"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids[$n]=$pid
		fi
	done
	((${#pids[@]} > 0)) || return 0
	say "stopping ${!pids[*]}"
	while :; do
		left=()
		for n in "${!pids[@]}"; do
			exited "${pids[$n]}" || left+=("$n")
		done
		((${#left[@]} > 0)) || break
		if ((SECONDS >= deadline)); then
			for n in "${left[@]}"; do
				if pid=$(proc_pid "$n"); then
					say "$n (pid $pid) did not exit within ${STOP_TIMEOUT}s of SIGTERM; sending SIGKILL"
					kill -KILL "$pid" 2>/dev/null || true
				fi
			done
			sleep 0.5
			break
		fi
		sleep 0.2
	done
	for n in "${!pids[@]}"; do
		proc_pid "$n" >/dev/null || rm -f "$DEMO_DIR/$n/pid"
	done
}

log_tail() { # NAME: the last lines of its log, on stderr
	local f=$DEMO_DIR/$1/$1.log
	[[ -f $f ]] || return 0
	echo "--- last lines of $f:" >&2
	tail -n "${2:-25}" "$f" >&2 || true
}

# ---------------------------------------------------------------- building

ensure_binaries() {
	command -v "$KUBECTL" >/dev/null 2>&1 || die "kubectl not found (set KUBECTL)"
	command -v curl >/dev/null 2>&1 || die "curl not found"
	# leaseholdctl makes the certificates; the whole build only when leasehold runs.
	if [[ $LEASES_ON == leasehold ]]; then
		say "make build"
		make -C "$ROOT" --no-print-directory build >&2 || die "make build failed"
	else
		(cd "$ROOT" && go build -o bin/leaseholdctl ./cmd/leaseholdctl) || die "building leaseholdctl failed"
	fi
	if [[ -z ${ETCD_BIN:-} ]]; then
		[[ -x $ROOT/scripts/etcd-bin.sh ]] || die "scripts/etcd-bin.sh is missing (or set ETCD_BIN)"
		ETCD_BIN=$("$ROOT/scripts/etcd-bin.sh" | tail -n 1) || die "scripts/etcd-bin.sh failed"
	fi
	[[ -x $ETCD_BIN ]] || die "etcd binary '$ETCD_BIN' is not executable"
	if [[ -z ${KUBE_APISERVER_BIN:-} ]]; then
		KUBE_APISERVER_BIN=$("$ROOT/scripts/kube-apiserver-bin.sh" | tail -n 1) || die "scripts/kube-apiserver-bin.sh failed"
	fi
	[[ -x $KUBE_APISERVER_BIN ]] || die "kube-apiserver binary '$KUBE_APISERVER_BIN' is not executable"
}

# ---------------------------------------------------------------- certificates

make_pki() {
	"$ROOT/bin/leaseholdctl" certs init --dir "$PKI" --hosts 127.0.0.1,localhost --admin admin >/dev/null ||
		die "leaseholdctl certs init failed"
	# A CA of its own whose key (ECDSA P-256, PKCS#8) signs and verifies service-account tokens.
	"$ROOT/bin/leaseholdctl" certs init --dir "$SA_DIR" --hosts 127.0.0.1 >/dev/null ||
		die "leaseholdctl certs init (service-account key) failed"
	cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-apiserver-demo
  cluster:
    server: $KAS_URL
    certificate-authority: $PKI/ca.crt
users:
- name: admin
  user:
    client-certificate: $PKI/admin.crt
    client-key: $PKI/admin.key
contexts:
- name: kube-apiserver-demo
  context:
    cluster: kube-apiserver-demo
    user: admin
    namespace: default
current-context: kube-apiserver-demo
EOF
	chmod 600 "$KUBECONFIG_FILE"
}

# ---------------------------------------------------------------- etcd

lease_etcd_client_port() { echo $((LEASE_ETCD_PORT_BASE + 2 * $1 - 1)); }
lease_etcd_peer_port() { echo $((LEASE_ETCD_PORT_BASE + 2 * $1)); }

# start_etcd NAME CLIENT_PORT PEER_PORT INITIAL_CLUSTER TOKEN (the same for every member)
start_etcd() {
	local name=$1 cp=$2 pp=$3 ic=$4 token=$5
	launch "$name" "$ETCD_BIN" \
		"--name=$name" \
		"--data-dir=$DEMO_DIR/$name/data" \
		"--listen-client-urls=http://127.0.0.1:$cp" \
		"--advertise-client-urls=http://127.0.0.1:$cp" \
		"--listen-peer-urls=http://127.0.0.1:$pp" \
		"--initial-advertise-peer-urls=http://127.0.0.1:$pp" \
		"--initial-cluster=$ic" \
		"--initial-cluster-state=new" \
		"--initial-cluster-token=$token" \
		"--log-level=warn"
}

wait_etcd() { # NAME PORT
	local deadline=$((SECONDS + READY_TIMEOUT)) body
	while :; do
		proc_pid "$1" >/dev/null || {
			log_tail "$1"
			return 1
		}
		body=$("${CURL[@]}" "http://127.0.0.1:$2/health" 2>/dev/null) || body=
		[[ $body == *'"health":"true"'* ]] && return 0
		if ((SECONDS >= deadline)); then
			say "$1 (127.0.0.1:$2) not healthy after ${READY_TIMEOUT}s: $body"
			log_tail "$1"
			return 1
		fi
		sleep 0.3
	done
}

b64() { printf '%s' "$1" | base64 | tr -d '\n'; }

# etcd_keys PORT PREFIX: "KEY MOD_REVISION" per key under PREFIX, read through etcd's JSON
# gateway (keys only, linearizable).
etcd_keys() {
	local body end
	end=$(printf '%s' "$2" | sed 's/.$//')$(printf '%s' "$2" | tail -c 1 | tr '\0-\376' '\1-\377')
	body=$("${CURL[@]}" -f -X POST "http://127.0.0.1:$1/v3/kv/range" \
		-d "{\"key\":\"$(b64 "$2")\",\"range_end\":\"$(b64 "$end")\",\"keys_only\":true}") || return 1
	paste -d ' ' \
		<(printf '%s' "$body" | grep -o '"key":"[^"]*"' | sed 's/"key":"\(.*\)"/\1/' | while read -r k; do printf '%s\n' "$k" | base64 -d; echo; done) \
		<(printf '%s' "$body" | grep -o '"mod_revision":"[0-9]*"' | grep -o '[0-9][0-9]*') |
		sed '/^ *$/d'
}

# ---------------------------------------------------------------- leasehold

cluster_sh() { # the demo's own leasehold cluster
	env LEASEHOLD_DATA="$LEASEHOLD_DATA_DIR" API_PORT_BASE="$LH_API_PORT_BASE" PEER_PORT_BASE="$LH_PEER_PORT_BASE" \
		ETCD_PORT_BASE="$LH_ETCD_PORT_BASE" SECURE="$SECURE" READY_TIMEOUT="$READY_TIMEOUT" STOP_TIMEOUT="$STOP_TIMEOUT" \
		"$ROOT/scripts/cluster.sh" "$@"
}

lh_kubectl() {
	if ((SECURE == 1)); then
		"$KUBECTL" --kubeconfig "$LEASEHOLD_DATA_DIR/kubeconfig" "$@"
	else
		"$KUBECTL" --kubeconfig /dev/null --server "http://127.0.0.1:$((LH_API_PORT_BASE + 1))" "$@"
	fi
}

cluster_sh_serves_etcd() { grep -q ETCD_PORT_BASE "$ROOT/scripts/cluster.sh"; }

start_leasehold() {
	cluster_sh start >&2 || return 1
	grep -q -- '--etcd-addr' "$LEASEHOLD_DATA_DIR/n1/n1.args" ||
		die "scripts/cluster.sh started the nodes without --etcd-addr"
	local i deadline=$((SECONDS + READY_TIMEOUT))
	for i in "${MEMBERS[@]}"; do
		until port_in_use $((LH_ETCD_PORT_BASE + i)); do
			((SECONDS < deadline)) || die "leasehold n$i serves nothing on 127.0.0.1:$((LH_ETCD_PORT_BASE + i))"
			sleep 0.3
		done
	done
}

# ---------------------------------------------------------------- kube-apiserver

lease_servers() { # the override's server list, semicolon-separated
	local i out="" scheme=http
	if [[ $LEASES_ON == leasehold ]]; then
		((SECURE == 0)) || scheme=https
		for i in "${MEMBERS[@]}"; do out+="${out:+;}$scheme://127.0.0.1:$((LH_ETCD_PORT_BASE + i))"; done
	else
		for i in "${MEMBERS[@]}"; do out+="${out:+;}http://127.0.0.1:$(lease_etcd_client_port "$i")"; done
	fi
	echo "$out"
}

start_kube_apiserver() {
	local args=(
		"--bind-address=127.0.0.1"
		"--advertise-address=127.0.0.1"
		"--secure-port=$KAS_PORT"
		"--cert-dir=$DEMO_DIR/kube-apiserver/certs"
		"--tls-cert-file=$PKI/server.crt"
		"--tls-private-key-file=$PKI/server.key"
		"--client-ca-file=$PKI/ca.crt"
		"--authorization-mode=RBAC"
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local"
		# the public key from the certificate (kube reads no public key from a PKCS#8 private key)
		"--service-account-key-file=$SA_DIR/ca.crt"
		"--service-account-signing-key-file=$SA_DIR/ca.key"
		"--service-cluster-ip-range=10.0.0.0/24"
		# 127.0.0.1 may not be an endpoint of the kubernetes Service: keep it out of Endpoints.
		"--endpoint-reconciler-type=none"
		"--etcd-servers=http://127.0.0.1:$MAIN_ETCD_PORT"
		"--etcd-servers-overrides=coordination.k8s.io/leases#$(lease_servers)"
	)
	if [[ $LEASES_ON == leasehold ]] && ((SECURE == 1)); then
		# only the https:// servers (the override) use these; the main etcd stays plaintext
		args+=(
			"--etcd-cafile=$LEASEHOLD_DATA_DIR/pki/ca.crt"
			"--etcd-certfile=$LEASEHOLD_DATA_DIR/pki/admin.crt"
			"--etcd-keyfile=$LEASEHOLD_DATA_DIR/pki/admin.key"
		)
	fi
	local extra=()
	# shellcheck disable=SC2206 # split on spaces on purpose
	[[ -z ${KAS_EXTRA_ARGS:-} ]] || extra=($KAS_EXTRA_ARGS)
	launch kube-apiserver "$KUBE_APISERVER_BIN" "${args[@]}" "${extra[@]+"${extra[@]}"}"
}

wait_kube_apiserver() {
	local deadline=$((SECONDS + READY_TIMEOUT)) code
	while :; do
		proc_pid kube-apiserver >/dev/null || {
			say "kube-apiserver exited while starting"
			log_tail kube-apiserver 40
			return 1
		}
		code=$("${KAS_CURL[@]}" -o /dev/null -w '%{http_code}' "$KAS_URL/readyz" 2>/dev/null) || code=000
		[[ $code == 200 ]] && return 0
		if ((SECONDS >= deadline)); then
			say "kube-apiserver ($KAS_URL) not ready after ${READY_TIMEOUT}s:"
			"${KAS_CURL[@]}" "$KAS_URL/readyz?verbose" 2>&1 | grep -v '\] ok$' >&2 || true
			log_tail kube-apiserver 40
			return 1
		fi
		sleep 0.5
	done
}

kas_kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# ---------------------------------------------------------------- up / down

running_mode() { # the LEASES_ON of a demo with a live process, else fails
	local n
	[[ -f $STATE ]] || return 1
	for n in kube-apiserver etcd-main etcd-leases-1 etcd-leases-2 etcd-leases-3; do
		proc_pid "$n" >/dev/null && {
			cat "$STATE"
			return 0
		}
	done
	if [[ -d $LEASEHOLD_DATA_DIR ]] && cluster_sh status 2>/dev/null | grep -q 'pid=[0-9]'; then
		cat "$STATE"
		return 0
	fi
	return 1
}

print_info() {
	cat <<EOF
kube-apiserver $KAS_URL  (pid $(proc_pid kube-apiserver || echo -), log $DEMO_DIR/kube-apiserver/kube-apiserver.log)
  kubectl --kubeconfig $KUBECONFIG_FILE get leases -A
main etcd      http://127.0.0.1:$MAIN_ETCD_PORT  (log $DEMO_DIR/etcd-main/etcd-main.log)
leases on      $LEASES_ON: $(lease_servers)
EOF
	if [[ $LEASES_ON == leasehold ]]; then
		if ((SECURE == 1)); then
			echo "  kubectl --kubeconfig $LEASEHOLD_DATA_DIR/kubeconfig get leases -A"
		else
			echo "  kubectl --server http://127.0.0.1:$((LH_API_PORT_BASE + 1)) get leases -A"
		fi
		echo "  LEASEHOLD_DATA=$LEASEHOLD_DATA_DIR API_PORT_BASE=$LH_API_PORT_BASE PEER_PORT_BASE=$LH_PEER_PORT_BASE ETCD_PORT_BASE=$LH_ETCD_PORT_BASE scripts/cluster.sh status"
	fi
	echo "stop: DEMO_DIR=$DEMO_DIR scripts/kube-apiserver-demo.sh down"
}

cmd_up() {
	local mode
	if mode=$(running_mode); then
		[[ $mode == "$LEASES_ON" ]] || die "a demo with LEASES_ON=$mode runs in $DEMO_DIR; '$PROG down' first"
		wait_kube_apiserver || die "the running demo is not ready"
		print_info
		return 0
	fi
	if [[ $LEASES_ON == leasehold ]] && ! cluster_sh_serves_etcd; then
		die "scripts/cluster.sh does not take ETCD_PORT_BASE yet: leasehold nodes serve no etcd port (LEASES_ON=etcd works)"
	fi
	ensure_binaries

	local ports=("$KAS_PORT" "$MAIN_ETCD_PORT" $((MAIN_ETCD_PORT + 1))) i p
	for i in "${MEMBERS[@]}"; do
		if [[ $LEASES_ON == etcd ]]; then
			ports+=("$(lease_etcd_client_port "$i")" "$(lease_etcd_peer_port "$i")")
		else
			ports+=($((LH_API_PORT_BASE + i)) $((LH_PEER_PORT_BASE + i)) $((LH_ETCD_PORT_BASE + i)))
		fi
	done
	for p in "${ports[@]}"; do
		! port_in_use "$p" || die "127.0.0.1:$p is already in use (set DEMO_PORT_BASE or the DEMO_*_PORT variables)"
	done

	# wipe an earlier demo's data, never a directory that holds something else
	if [[ -d $DEMO_DIR && -n $(ls -A "$DEMO_DIR") && ! -d $DEMO_DIR/pki ]]; then
		die "$DEMO_DIR is not empty and holds no earlier demo (no pki/): set DEMO_DIR"
	fi
	rm -rf -- "${DEMO_DIR:?}"
	mkdir -p "$DEMO_DIR"
	echo "$LEASES_ON" >"$STATE"
	trap 'say "start failed; stopping what started (logs stay in $DEMO_DIR)"; stop_all' EXIT
	make_pki

	say "starting the main etcd on 127.0.0.1:$MAIN_ETCD_PORT"
	start_etcd etcd-main "$MAIN_ETCD_PORT" $((MAIN_ETCD_PORT + 1)) "etcd-main=http://127.0.0.1:$((MAIN_ETCD_PORT + 1))" "etcd-main-$$"
	if [[ $LEASES_ON == etcd ]]; then
		local ic=""
		for i in "${MEMBERS[@]}"; do ic+="${ic:+,}etcd-leases-$i=http://127.0.0.1:$(lease_etcd_peer_port "$i")"; done
		say "starting the lease store: a three-member etcd on $(lease_servers)"
		for i in "${MEMBERS[@]}"; do
			start_etcd "etcd-leases-$i" "$(lease_etcd_client_port "$i")" "$(lease_etcd_peer_port "$i")" "$ic" "etcd-leases-$$"
		done
		for i in "${MEMBERS[@]}"; do wait_etcd "etcd-leases-$i" "$(lease_etcd_client_port "$i")" || exit 1; done
	else
		say "starting the lease store: a three-node leasehold cluster in $LEASEHOLD_DATA_DIR"
		start_leasehold || exit 1
	fi
	wait_etcd etcd-main "$MAIN_ETCD_PORT" || exit 1

	say "starting kube-apiserver on $KAS_URL with --etcd-servers-overrides=coordination.k8s.io/leases#$(lease_servers)"
	local t0=$SECONDS
	start_kube_apiserver
	wait_kube_apiserver || exit 1
	say "kube-apiserver ready after $((SECONDS - t0))s"
	trap - EXIT
	print_info
}

stop_all() {
	stop_procs kube-apiserver
	stop_procs etcd-leases-1 etcd-leases-2 etcd-leases-3 etcd-main
	if [[ -d $LEASEHOLD_DATA_DIR ]]; then
		cluster_sh stop >&2 || true
	fi
}

cmd_down() {
	if [[ ! -d $DEMO_DIR ]]; then
		say "nothing to stop in $DEMO_DIR"
		return 0
	fi
	stop_all
	rm -f "$STATE"
	local n pid
	for n in kube-apiserver etcd-main etcd-leases-1 etcd-leases-2 etcd-leases-3; do
		if pid=$(proc_pid "$n"); then
			die "$n (pid $pid) is still running"
		fi
	done
	say "stopped; data and logs stay in $DEMO_DIR (up wipes them)"
}

cmd_status() {
	local n pid mode
	mode=$(running_mode) || mode=none
	echo "demo: $DEMO_DIR, running with LEASES_ON=$mode"
	for n in kube-apiserver etcd-main etcd-leases-1 etcd-leases-2 etcd-leases-3; do
		[[ -d $DEMO_DIR/$n ]] || continue
		pid=$(proc_pid "$n") || pid=-
		printf '%-15s pid=%s\n' "$n" "$pid"
	done
	if [[ -d $LEASEHOLD_DATA_DIR ]]; then
		cluster_sh status || true
	fi
}

# ---------------------------------------------------------------- checks

FAILS=0
PASSES=0
pass() {
	PASSES=$((PASSES + 1))
	echo "ok    $*"
}
fail() {
	FAILS=$((FAILS + 1))
	echo "FAIL  $*"
}

# rv_of KUBECTL-FUNCTION NAMESPACE NAME: resourceVersion and holder of a Lease, "RV HOLDER"
lease_rv() {
	"$1" get lease -n "$2" "$3" -o 'jsonpath={.metadata.resourceVersion} {.spec.holderIdentity}' 2>&1
}

# store_rv NAMESPACE NAME: the Lease's resourceVersion (mod_revision) in the lease store
store_rv() {
	if [[ $LEASES_ON == leasehold ]]; then
		lh_kubectl get lease -n "$1" "$2" -o 'jsonpath={.metadata.resourceVersion}' 2>/dev/null
	else
		etcd_keys "$(lease_etcd_client_port 1)" "/registry/leases/$1/$2" | awk -v k="/registry/leases/$1/$2" '$1 == k { print $2 }'
	fi
}

# watch_events FILE: "TYPE RESOURCEVERSION" per event of a JSON watch stream (DELETED without it)
watch_events() {
	local line type rv
	while IFS= read -r line; do
		type=$(grep -o '"type":"[A-Z]*"' <<<"$line" | head -n 1 | sed 's/.*:"\(.*\)"/\1/') || true
		[[ -n $type ]] || continue
		rv=$(grep -o '"resourceVersion":"[0-9]*"' <<<"$line" | head -n 1 | grep -o '[0-9][0-9]*') || true
		if [[ $type == DELETED ]]; then echo DELETED; else echo "$type $rv"; fi
	done <"$1"
}

store_name() {
	if [[ $LEASES_ON == leasehold ]]; then echo "leasehold (kubectl through leasehold)"; else echo "the lease etcd"; fi
}

run_checks() {
	local deadline ids names n rv got main name out t0 t1 elapsed
	echo "== checks: kube-apiserver $KAS_URL, Leases on $LEASES_ON ($(lease_servers))"

	# 1. kube-apiserver's identity Leases.
	deadline=$((SECONDS + 60))
	while :; do
		ids=$(kas_kubectl get leases -n kube-system -l apiserver.kubernetes.io/identity=kube-apiserver \
			-o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' 2>/dev/null) || ids=
		[[ -n $ids ]] || ((SECONDS >= deadline)) || {
			sleep 1
			continue
		}
		break
	done
	if [[ -z $ids ]]; then
		fail "no identity Lease (kube-system, apiserver.kubernetes.io/identity=kube-apiserver) through kube-apiserver within 60s"
	else
		pass "identity Lease through kube-apiserver: $(echo "$ids" | tr '\n' ' ')(name resourceVersion)"
	fi
	names=$(echo "$ids" | awk 'NF { print $1 }')
	if [[ $LEASES_ON == leasehold ]]; then
		out=$(lh_kubectl get leases -n kube-system -o 'jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' 2>&1) || out="error: $out"
	else
		out=$(etcd_keys "$(lease_etcd_client_port 1)" /registry/leases/kube-system/ 2>&1 | sed 's|^/registry/leases/kube-system/||') || out="error: $out"
	fi
	for n in $names; do
		if grep -q "^$n " <<<"$out"; then
			pass "identity Lease kube-system/$n is in $(store_name): $(grep "^$n " <<<"$out")"
		else
			fail "identity Lease kube-system/$n is not in $(store_name): $out"
		fi
	done
	main=$(etcd_keys "$MAIN_ETCD_PORT" /registry/leases/ 2>&1) || main="error: $main"
	if [[ -z $main ]]; then
		pass "the main etcd holds no key under /registry/leases/"
	else
		fail "the main etcd holds Lease keys (the override did not take): $(echo "$main" | head -n 5 | tr '\n' ' ')"
	fi

	# 2. A Lease created with kubectl through kube-apiserver.
	name=demo-$(date +%s)-$$
	local now
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
	out=$(kas_kubectl create -f - -o 'jsonpath={.metadata.resourceVersion}' 2>&1 <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: $name
  namespace: default
spec:
  holderIdentity: kubectl-through-kube-apiserver
  leaseDurationSeconds: 30
  acquireTime: "$now"
  renewTime: "$now"
EOF
	) || {
		fail "kubectl create lease default/$name through kube-apiserver: $out"
		return
	}
	rv=$out
	got=$(store_rv default "$name") || got=
	echo "      resourceVersion through kube-apiserver: $rv"
	echo "      resourceVersion in $(store_name): ${got:-none}"
	if [[ -n $rv && $got == "$rv" ]]; then
		pass "Lease default/$name created through kube-apiserver is in $(store_name) with the same resourceVersion $rv"
	else
		fail "Lease default/$name created through kube-apiserver at resourceVersion $rv; $(store_name) has '${got:-nothing}'"
	fi

	# A watch through kube-apiserver (served by its watch cache, which the lease store's Watch
	# feeds) from the created resourceVersion: it must see every change below, in order.
	local wfile=$DEMO_DIR/check-watch.json wpid want=()
	"${KAS_CURL[@]}" --max-time 60 -N \
		"$KAS_URL/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=1&resourceVersion=$rv&fieldSelector=metadata.name%3D$name" \
		>"$wfile" 2>&1 &
	wpid=$!

	# 3. An update through kube-apiserver.
	out=$(kas_kubectl patch lease -n default "$name" --type merge -p '{"spec":{"holderIdentity":"patched-through-kube-apiserver"}}' \
		-o 'jsonpath={.metadata.resourceVersion}' 2>&1) || out="error: $out"
	got=$(store_rv default "$name") || got=
	if [[ $out =~ ^[0-9]+$ && $out != "$rv" && $got == "$out" ]]; then
		pass "update through kube-apiserver: resourceVersion $rv -> $out, the same in $(store_name)"
		rv=$out
		want+=("MODIFIED $rv")
	else
		fail "update through kube-apiserver answered '$out'; $(store_name) has '${got:-nothing}'"
	fi

	# 4. leasehold: an update through leasehold's REST API is what kube-apiserver serves.
	if [[ $LEASES_ON == leasehold ]]; then
		out=$(lh_kubectl patch lease -n default "$name" --type merge -p '{"spec":{"holderIdentity":"patched-through-leasehold"}}' \
			-o 'jsonpath={.metadata.resourceVersion}' 2>&1) || out="error: $out"
		got=
		deadline=$((SECONDS + 10))
		if [[ $out =~ ^[0-9]+$ ]]; then
			while :; do
				got=$(lease_rv kas_kubectl default "$name") || got=
				[[ $got == "$out patched-through-leasehold" ]] && break
				((SECONDS < deadline)) || break
				sleep 0.2
			done
		fi
		if [[ $got == "$out patched-through-leasehold" ]]; then
			pass "update through leasehold (resourceVersion $out) is served by kube-apiserver: $got"
			rv=$out
			want+=("MODIFIED $rv")
		else
			fail "update through leasehold answered '$out'; kube-apiserver serves '$got'"
		fi
	fi

	# 5. A list through kube-apiserver (its watch cache, a consistent read) sees the Lease at once.
	t0=$(date +%s.%N)
	out=$(kas_kubectl get leases -A -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}' 2>&1) || out="error: $out"
	t1=$(date +%s.%N)
	elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	if grep -qx "default/$name $rv" <<<"$out" && awk -v e="$elapsed" -v b="$LIST_BUDGET" 'BEGIN { exit !(e <= b) }'; then
		pass "kubectl get leases -A through kube-apiserver lists default/$name at $rv in ${elapsed}s"
	else
		fail "kubectl get leases -A through kube-apiserver (${elapsed}s, budget ${LIST_BUDGET}s) did not list default/$name at $rv: $(head -c 400 <<<"$out")"
	fi

	# 6. A delete through kube-apiserver leaves nothing in the lease store.
	out=$(kas_kubectl delete lease -n default "$name" 2>&1) || out="error: $out"
	got=$(store_rv default "$name") || got=
	if [[ $out != error:* && -z $got ]]; then
		pass "delete through kube-apiserver: default/$name is gone from $(store_name)"
	else
		fail "delete through kube-apiserver: '$out'; $(store_name) still has resourceVersion '$got'"
	fi
	want+=("DELETED")

	# 7. The watch saw each change.
	deadline=$((SECONDS + 10))
	while :; do
		got=$(watch_events "$wfile")
		[[ $got == "$(printf '%s\n' "${want[@]}")"* ]] && break
		if ((SECONDS >= deadline)) || ! kill -0 "$wpid" 2>/dev/null; then break; fi
		sleep 0.2
	done
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	if [[ $got == "$(printf '%s\n' "${want[@]}")"* ]]; then
		pass "a watch through kube-apiserver saw $(printf '%s\n' "${want[@]}" | paste -s -d, -)"
	else
		fail "a watch through kube-apiserver from the create saw '$(tr '\n' ',' <<<"$got")', want '$(printf '%s,' "${want[@]}")': $(head -c 300 "$wfile")"
	fi
}

cmd_check() {
	local mode started=0
	if mode=$(running_mode); then
		[[ $mode == "$LEASES_ON" ]] || die "a demo with LEASES_ON=$mode runs in $DEMO_DIR, not $LEASES_ON; '$PROG down' first"
		ensure_binaries_light
		wait_kube_apiserver || die "the running demo is not ready"
	else
		cmd_up >/dev/null
		started=1
		trap 'stop_all' EXIT
	fi
	run_checks
	echo "$PASSES passed, $FAILS failed"
	if ((FAILS > 0)); then
		log_tail kube-apiserver 30
	fi
	if ((started == 1)); then
		trap - EXIT
		stop_all
	fi
	((FAILS == 0))
}

ensure_binaries_light() { # what check needs against a running demo
	command -v "$KUBECTL" >/dev/null 2>&1 || die "kubectl not found (set KUBECTL)"
	command -v curl >/dev/null 2>&1 || die "curl not found"
}

# ---------------------------------------------------------------- bench

# cpu_ticks PID...: user+system clock ticks the processes used so far (0 for one that is gone)
cpu_ticks() {
	local pid sum=0 stat rest
	local -a f
	for pid in "$@"; do
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		rest=${stat##*) }
		# fields after the command: 3=state ... 14=utime 15=stime (index 11 and 12 here)
		read -r -a f <<<"$rest"
		sum=$((sum + f[11] + f[12]))
	done
	echo "$sum"
}

# json_num FILE KEY: the first number after "KEY": in leasebench's JSON result
json_num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -n 1 | sed 's/.*: //'; }

# bench_demo STORE COMMAND: this script's COMMAND (up or down) on the bench's demo of STORE:
# its own DEMO_DIR and ports (DEMO_PORT_BASE+1000 with etcd, +1500 with leasehold), so that
# both run at once and the rounds alternate between them.
bench_demo() {
	local off=1000
	[[ $1 == etcd ]] || off=1500
	env -u DEMO_KAS_PORT -u DEMO_MAIN_ETCD_PORT -u DEMO_LEASE_ETCD_PORT_BASE -u DEMO_API_PORT_BASE \
		-u DEMO_PEER_PORT_BASE -u DEMO_ETCD_PORT_BASE \
		DEMO_DIR="$DEMO_DIR-bench/$1" DEMO_PORT_BASE=$((DEMO_PORT_BASE + off)) LEASES_ON="$1" SECURE="$SECURE" \
		"${BASH_SOURCE[0]}" "$2"
}

bench_stop() {
	local store
	for store in "$@"; do
		bench_demo "$store" down >/dev/null 2>&1 || say "stopping the bench's $store demo failed"
	done
}

cmd_bench() {
	local stores=() duration=${DURATION:-10s} rounds=${ROUNDS:-3}
	local clients=${CLIENTS:-64} leases=${LEASES:-1000} results=${RESULTS:-} keep=1 store
	if ! is_uint "$rounds" || ((rounds == 0)); then die "ROUNDS must be a positive number"; fi
	if ! is_uint "$clients" || ! is_uint "$leases"; then die "CLIENTS and LEASES must be whole numbers"; fi
	for store in ${BENCH_STORES:-etcd leasehold}; do
		[[ $store == etcd || $store == leasehold ]] || die "BENCH_STORES holds '$store' (want etcd and/or leasehold)"
		if [[ $store == leasehold ]] && ! cluster_sh_serves_etcd; then
			say "skipping leasehold: scripts/cluster.sh does not take ETCD_PORT_BASE yet"
			continue
		fi
		stores+=("$store")
	done
	((${#stores[@]} > 0)) || die "no store to measure"
	# The etcd runs plaintext, so leasehold does too unless SECURE is set.
	[[ -n $SECURE_GIVEN ]] || SECURE=0
	if [[ -z $results ]]; then
		results=$(mktemp -d)
		keep=0
	fi
	mkdir -p "$results"
	(cd "$ROOT" && go build -o bin/leasebench ./cmd/leasebench) || die "building leasebench failed"

	local sampler=
	# shellcheck disable=SC2064 # the stores are fixed now
	trap "if [[ -n \$sampler ]]; then kill \$sampler 2>/dev/null || true; fi; bench_stop ${stores[*]}" EXIT
	local -A kas_url=() kas_pid=() spids_of=() pki=()
	local dir i pids
	for store in "${stores[@]}"; do
		say "bench: starting a demo with the Leases on $store"
		bench_demo "$store" up >/dev/null || die "the bench's $store demo did not start"
		dir=$DEMO_DIR-bench/$store
		pki[$store]=$dir/pki
		kas_url[$store]=https://127.0.0.1:$(sed -n 's/^--secure-port=//p' "$dir/kube-apiserver/args")
		kas_pid[$store]=$(head -n 1 "$dir/kube-apiserver/pid")
		pids=
		for i in "${MEMBERS[@]}"; do
			if [[ $store == etcd ]]; then
				pids+=" $(head -n 1 "$dir/etcd-leases-$i/pid")"
			else
				pids+=" $(head -n 1 "$dir/leasehold/n$i/n$i.pid")"
			fi
		done
		spids_of[$store]=$pids
		"$KUBECTL" --kubeconfig "$dir/kubeconfig" create namespace leasebench >/dev/null 2>&1 || true
	done

	local hz r f t1 secs lines=() order=("${stores[@]}")
	hz=$(getconf CLK_TCK)
	for ((r = 1; r <= rounds; r++)); do
		for store in "${order[@]}"; do
			f=$results/$store-$r
			say "bench: round $r, Leases on $store"
			# CPU ticks of the lease store and of kube-apiserver every 0.2 s, so that the cores
			# they used can be read over leasebench's measured time alone (not its setup).
			(
				# shellcheck disable=SC2086 # a list of pids
				while :; do
					echo "$(date +%s.%N) $(cpu_ticks ${spids_of[$store]}) $(cpu_ticks "${kas_pid[$store]}")"
					sleep 0.2
				done
			) >"$f.cpu" &
			sampler=$!
			"$ROOT/bin/leasebench" --endpoints "${kas_url[$store]}" \
				--cacert "${pki[$store]}/ca.crt" --cert "${pki[$store]}/admin.crt" --key "${pki[$store]}/admin.key" \
				--clients "$clients" --leases "$leases" --duration "$duration" --label "kas+$store" \
				--json "$f.json" renew >"$f.txt" 2>&1 || {
				cat "$f.txt" >&2
				die "leasebench failed"
			}
			t1=$(date +%s.%N)
			sleep 0.3
			kill "$sampler" 2>/dev/null || true
			wait "$sampler" 2>/dev/null || true
			sampler=
			sed 's/^/  /' "$f.txt"
			secs=$(json_num "$f.json" seconds)
			# store round ops/s p50 p99 errors store-cores kas-cores
			lines+=("$store $r $(json_num "$f.json" opsPerSec) $(json_num "$f.json" P50) $(json_num "$f.json" P99) \
$(json_num "$f.json" errors) $(awk -v from="$(awk -v a="$t1" -v b="$secs" 'BEGIN { printf "%.3f", a - b }')" -v to="$t1" -v hz="$hz" '
	$1 >= from && !t0 { t0 = $1; s0 = $2; k0 = $3 }
	$1 <= to { t = $1; s = $2; k = $3 }
	END { d = t - t0; if (d <= 0) { print "- -"; exit } printf "%.2f %.2f", (s - s0) / hz / d, (k - k0) / hz / d }' "$f.cpu")")
		done
		# alternate which store goes first
		order=("${order[@]:1}" "${order[0]}")
	done
	trap - EXIT
	bench_stop "${stores[@]}"

	echo
	echo "kube-apiserver v1.36.3 renewing Leases (leasebench renew through it, TLS, a connection per client):"
	echo "$clients clients, $leases Leases, $duration x $rounds rounds per store; both demos run throughout,"
	echo "the rounds alternate, so only one is under load at a time."
	echo "cores: CPU time over the measured time, of the lease store's three processes and of kube-apiserver;"
	echo "µs/op: their CPU time per renewal. The machine's other cores went to leasebench and the main etcd."
	if ((SECURE == 1)); then
		echo "kube-apiserver talks TLS with client certificates to leasehold (SECURE=1), plaintext to the etcd."
	else
		echo "kube-apiserver talks plaintext gRPC to either store (leasehold with SECURE=0)."
	fi
	printf '%-10s %-5s %8s %8s %8s %6s %11s %9s %10s %8s\n' store round ops/s p50ms p99ms errors store-cores kas-cores store-µs/op kas-µs/op
	local l
	for l in "${lines[@]}"; do
		awk '{
			so = ($7 == "-" || $3 == 0) ? "-" : sprintf("%.0f", $7 / $3 * 1e6)
			ko = ($8 == "-" || $3 == 0) ? "-" : sprintf("%.0f", $8 / $3 * 1e6)
			printf "%-10s %-5s %8.0f %8.2f %8.2f %6s %11s %9s %10s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, so, ko }' <<<"$l"
	done
	echo "medians of the rounds:"
	for store in "${stores[@]}"; do
		printf '%s\n' "${lines[@]}" | awk -v s="$store" '$1 == s' | awk '
			function median(a, n,   i, j, t) {
				for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			{ n++; ops[n] = $3; p50[n] = $4; p99[n] = $5; if ($7 != "-") { m++; so[m] = $7 / $3 * 1e6; ko[m] = $8 / $3 * 1e6 } }
			END { printf "  %-10s ops/s %.0f  p50 %.2f ms  p99 %.2f ms", $1, median(ops, n), median(p50, n), median(p99, n)
				if (m) printf "  store %.0f µs/op  kube-apiserver %.0f µs/op", median(so, m), median(ko, m)
				printf "\n" }'
	done
	if ((keep == 1)); then
		echo "results in $results"
	else
		rm -rf -- "$results"
	fi
}

usage() {
	sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

case ${1:-} in
up) (($# == 1)) || die "usage: $PROG up"; cmd_up ;;
down) (($# == 1)) || die "usage: $PROG down"; cmd_down ;;
check) (($# == 1)) || die "usage: $PROG check"; cmd_check ;;
status) (($# == 1)) || die "usage: $PROG status"; cmd_status ;;
bench) (($# == 1)) || die "usage: $PROG bench"; cmd_bench ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
