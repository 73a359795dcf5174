#!/usr/bin/env bash
# Manage a local three-node leasehold cluster (n1, n2, n3). See docs/cli.md.
#
#   scripts/cluster.sh start          build if needed, start n1..n3, wait for /readyz, print URLs and leader
#   scripts/cluster.sh status         one line per node: name, pid, API URL, state, applied index
#   scripts/cluster.sh kill NAME      SIGKILL that node
#   scripts/cluster.sh restart NAME   start it again with the same flags (stopping it first if running)
#   scripts/cluster.sh stop           SIGTERM all nodes and wait (SIGKILL after STOP_TIMEOUT)
#   scripts/cluster.sh clean          stop and remove the data
#
# The nodes start secured: on first start the script makes a local CA under
# $LEASEHOLD_DATA/pki (leaseholdctl certs init), a serving certificate for 127.0.0.1, a peer
# certificate for mutual TLS between the nodes, an admin client certificate
# (group system:masters) and $LEASEHOLD_DATA/kubeconfig, which kubectl and
# client-go use as they are: kubectl --kubeconfig $LEASEHOLD_DATA/kubeconfig get leases
# It also makes a bearer token for the same admin, $LEASEHOLD_DATA/admin.token (the nodes'
# --token-auth-file is $LEASEHOLD_DATA/pki/tokens.csv): the lease view (/ui/) signs in with it,
# so a browser needs no client certificate.
# SECURE=0 starts them open instead: plain HTTP, no authentication, plain TCP
# between the nodes (for benchmarks against plaintext baselines).
#
# Environment:
#   LEASEHOLD_DATA   data root, default <repo>/data/cluster; node nI uses $LEASEHOLD_DATA/nI/
#                    (data dir nI/data, log nI/nI.log, pid file nI/nI.pid, start flags nI/nI.args)
#   API_PORT_BASE    default 7000: node i serves its API on 127.0.0.1:API_PORT_BASE+i
#   PEER_PORT_BASE   default 8000: node i uses 127.0.0.1:PEER_PORT_BASE+i for Raft
#   ETCD_PORT_BASE   default 9000: node i serves the etcd v3 API on 127.0.0.1:ETCD_PORT_BASE+i
#                    (docs/etcd.md); empty: no etcd API
#   LEASEHOLD_BIN    binary to run instead of building <repo>/bin/leasehold (and
#                    leaseholdctl, which makes the certificates, beside it)
#   READY_TIMEOUT    seconds to wait for /readyz, default 30
#   STOP_TIMEOUT     seconds to wait after SIGTERM before SIGKILL, default 15
# Other LEASEHOLD_* variables (e.g. LEASEHOLD_LOG_LEVEL) reach the nodes as usual, except
# LEASEHOLD_JOIN and LEASEHOLD_DEBUG_ADDR, which make no sense for three local nodes.
#
# The script only signals pids it recorded, and only while /proc/PID/cmdline (or ps) shows
# that pid still runs with this node's --data-dir.

set -euo pipefail

NODES=(n1 n2 n3)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=$(basename "$0")

die() { echo "$PROG: $*" >&2; exit 1; }
say() { echo "$PROG: $*"; }

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

API_PORT_BASE=${API_PORT_BASE:-7000}
PEER_PORT_BASE=${PEER_PORT_BASE:-8000}
ETCD_PORT_BASE=${ETCD_PORT_BASE-9000}
READY_TIMEOUT=${READY_TIMEOUT:-30}
STOP_TIMEOUT=${STOP_TIMEOUT:-15}
for v in API_PORT_BASE PEER_PORT_BASE READY_TIMEOUT STOP_TIMEOUT; do
	is_uint "${!v}" || die "$v must be a whole number, got '${!v}'"
done
((API_PORT_BASE + ${#NODES[@]} <= 65535)) || die "API_PORT_BASE too large"
((PEER_PORT_BASE + ${#NODES[@]} <= 65535)) || die "PEER_PORT_BASE too large"
if [[ -n $ETCD_PORT_BASE ]]; then
	is_uint "$ETCD_PORT_BASE" || die "ETCD_PORT_BASE must be a number or empty, got '$ETCD_PORT_BASE'"
	((ETCD_PORT_BASE + ${#NODES[@]} <= 65535)) || die "ETCD_PORT_BASE too large"
fi

DATA=${LEASEHOLD_DATA:-$ROOT/data/cluster}
[[ -n $DATA ]] || die "LEASEHOLD_DATA is empty"
[[ $DATA == /* ]] || DATA=$PWD/$DATA
DATA=${DATA%/}
[[ -n $DATA ]] || die "refusing to use / as LEASEHOLD_DATA"

BIN=${LEASEHOLD_BIN:-$ROOT/bin/leasehold}
[[ $BIN == /* ]] || BIN=$PWD/$BIN
# leaseholdctl makes the certificates: the one beside the binary.
CTL=$(dirname "$BIN")/leaseholdctl

SECURE=${SECURE:-1}
[[ $SECURE == 0 || $SECURE == 1 ]] || die "SECURE must be 0 or 1, got '$SECURE'"
PKI=$DATA/pki
KUBECONFIG_FILE=$DATA/kubeconfig
# The admin's bearer token, and the nodes' --token-auth-file that holds it.
ADMIN_TOKEN_FILE=$DATA/admin.token
TOKENS_FILE=$PKI/tokens.csv
CURL=(curl -sS --connect-timeout 1 --max-time 2)
# The script talks to secured nodes as the admin of the local CA.
((SECURE == 0)) || CURL+=(--cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key")

# ---------------------------------------------------------------- per-node values

node_index() { # n2 -> 2
	local n
	for n in "${NODES[@]}"; do
		if [[ $n == "$1" ]]; then
			echo "${1#n}"
			return 0
		fi
	done
	return 1
}
check_node() { node_index "$1" >/dev/null || die "unknown node '$1' (want one of ${NODES[*]})"; }

node_dir() { echo "$DATA/$1"; }
data_dir() { echo "$DATA/$1/data"; }
log_file() { echo "$DATA/$1/$1.log"; }
pid_file() { echo "$DATA/$1/$1.pid"; }
args_file() { echo "$DATA/$1/$1.args"; }
api_port() { echo $((API_PORT_BASE + $(node_index "$1"))); }
peer_port() { echo $((PEER_PORT_BASE + $(node_index "$1"))); }
etcd_port() { echo $((ETCD_PORT_BASE + $(node_index "$1"))); }
api_url() {
	local scheme=https
	((SECURE == 1)) || scheme=http
	echo "$scheme://127.0.0.1:$(api_port "$1")"
}

initial_cluster() { # byte-identical for every node, same order
	local n out=""
	for n in "${NODES[@]}"; do
		out+="${out:+,}$n=127.0.0.1:$(peer_port "$n")"
	done
	echo "$out"
}

# ---------------------------------------------------------------- processes

# cmdline PID: the process's arguments, one per line; fails if the process is gone
# (a zombie has an empty cmdline and counts as gone).
cmdline() {
	local pid=$1
	if [[ -r /proc/$pid/cmdline ]]; then
		local c
		c=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
		[[ -n $c ]] || return 1
		printf '%s\n' "$c"
	elif [[ ! -d /proc/self ]]; then # no procfs (e.g. macOS): ps, split on spaces
		local c
		c=$(ps -o command= -p "$pid" 2>/dev/null) || return 1
		[[ -n $c ]] || return 1
		# shellcheck disable=SC2086 # split on spaces on purpose
		printf '%s\n' $c
	else
		return 1
	fi
}

# node_pid NAME: prints the recorded pid if that process is alive and is this node's
# leasehold (its arguments include --data-dir=<this node's data dir>).
node_pid() {
	local f pid
	f=$(pid_file "$1")
	[[ -f $f ]] || return 1
	pid=$(head -n 1 "$f" 2>/dev/null) || return 1
	is_uint "$pid" && ((pid > 1)) || return 1
	# No `cmdline | grep -q` here: grep exits at the first match, and under pipefail
	# the SIGPIPE of the (line-buffered) writer made a live node look gone.
	local args
	args=$(cmdline "$pid") || return 1
	[[ $'\n'$args$'\n' == *$'\n'"--data-dir=$(data_dir "$1")"$'\n'* ]] || return 1
	echo "$pid"
}

# exited PID: the process is gone, or a zombie whose files (its listening
# sockets) are closed. A dying process loses its command line (node_pid
# stops finding it) a moment before it closes its files, and its main
# thread turns zombie while other threads may still hold them: only when
# the zombie is its last thread are they closed.
exited() {
	local stat tasks
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	[[ ${stat##*) } == Z* ]] || return 1
	tasks=("/proc/$1/task/"*)
	((${#tasks[@]} <= 1))
}

port_in_use() { # connect test with bash's /dev/tcp
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# ---------------------------------------------------------------- HTTP

http_code() { # URL -> HTTP status code, 000 when unreachable
	"${CURL[@]}" -o /dev/null -w '%{http_code}' "$1" 2>/dev/null || true
}

cluster_status() { # NAME -> /cluster/status JSON on one line, fails when unreachable
	local body
	body=$("${CURL[@]}" -f "$(api_url "$1")/cluster/status" 2>/dev/null) || return 1
	printf '%s' "$body" | tr -d '\n\r'
}

# json_str KEY: first "KEY":"value" in stdin. json_num KEY: first "KEY":number.
json_str() { grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" | head -n 1 | sed 's/.*:[[:space:]]*"\(.*\)"$/\1/'; }
json_num() { grep -o "\"$1\"[[:space:]]*:[[:space:]]*[0-9][0-9]*" | head -n 1 | sed 's/.*:[[:space:]]*//'; }

# top-level fields: cut out the nested leader object and members array first
json_top() { sed -e 's/"leader"[[:space:]]*:[[:space:]]*{[^}]*}//' -e 's/"members"[[:space:]]*:[[:space:]]*\[[^]]*\]//'; }
status_state() { printf '%s' "$1" | json_top | json_str state; }
status_name() { printf '%s' "$1" | json_top | json_str name; }
status_applied() { printf '%s' "$1" | json_top | json_num appliedIndex; }
status_leader() { # leader name, empty when "leader": null
	printf '%s' "$1" | grep -o '"leader"[[:space:]]*:[[:space:]]*{[^}]*}' | head -n 1 | json_str name
}

leader_name() { # asks every live node, prints the first known leader
	local n s l
	for n in "${NODES[@]}"; do
		s=$(cluster_status "$n") || continue
		l=$(status_leader "$s")
		if [[ -n $l ]]; then
			echo "$l"
			return 0
		fi
	done
	return 1
}

# ---------------------------------------------------------------- build

# build_if_needed [missing-only]
build_if_needed() {
	if [[ -n ${LEASEHOLD_BIN:-} ]]; then
		[[ -x $BIN ]] || die "LEASEHOLD_BIN=$LEASEHOLD_BIN is not an executable file"
		return 0
	fi
	local newer=""
	[[ ${1:-} == missing-only && -x $BIN ]] && return 0
	if [[ -x $BIN && -x $CTL ]]; then
		# `|| true`: head exits after one line; under pipefail find's SIGPIPE must not kill the script
		newer=$({ find "$ROOT" \( -path "$ROOT/.git" -o -path "$ROOT/data" -o -path "$ROOT/bin" -o -path "$DATA" \) -prune \
			-o \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$BIN" -print 2>/dev/null || true; } | head -n 1)
		[[ -n $newer ]] || return 0
	fi
	say "building $BIN and $CTL${newer:+ ($newer changed)}"
	(cd "$ROOT" && go build -o "$BIN" ./cmd/leasehold && go build -o "$CTL" ./cmd/leaseholdctl) || die "go build failed"
}

# ---------------------------------------------------------------- certificates

# ensure_pki: the local CA and every certificate the cluster uses, made once
# by leaseholdctl certs init (Go's crypto: no other tool needed).
ensure_pki() {
	((SECURE == 1)) || return 0
	[[ -s $PKI/ca.crt && -s $PKI/server.crt && -s $PKI/peer.crt && -s $PKI/admin.crt && -s $KUBECONFIG_FILE ]] && return 0
	[[ -x $CTL ]] || die "$CTL is missing: it makes the certificates (make build builds it)"
	say "making a local CA and certificates in $PKI"
	rm -rf "$PKI"
	"$CTL" certs init --dir "$PKI" --hosts 127.0.0.1,localhost --peer-cn leasehold-peer --admin admin >/dev/null ||
		die "leaseholdctl certs init failed"
	cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster:
    server: $(api_url n1)
    certificate-authority: $PKI/ca.crt
users:
- name: admin
  user:
    client-certificate: $PKI/admin.crt
    client-key: $PKI/admin.key
contexts:
- name: leasehold
  context:
    cluster: leasehold
    user: admin
    namespace: default
current-context: leasehold
EOF
	chmod 600 "$KUBECONFIG_FILE"
}

# ensure_token: a random bearer token for the admin (user admin, group system:masters) in
# $ADMIN_TOKEN_FILE, and the nodes' --token-auth-file $TOKENS_FILE holding it; made again
# when either is missing or they disagree (new certificates remove the old file with pki/).
ensure_token() {
	((SECURE == 1)) || return 0
	local tok=""
	[[ -s $ADMIN_TOKEN_FILE ]] && tok=$(head -n 1 "$ADMIN_TOKEN_FILE")
	if [[ $tok =~ ^[0-9a-f]{64}$ && -s $TOKENS_FILE ]] && grep -Fxq -- "$tok,admin,admin,system:masters" "$TOKENS_FILE"; then
		return 0
	fi
	say "making a bearer token for the admin in $ADMIN_TOKEN_FILE"
	tok=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	[[ $tok =~ ^[0-9a-f]{64}$ ]] || die "could not read a random token from /dev/urandom"
	(
		umask 077
		printf '%s,admin,admin,system:masters\n' "$tok" >"$TOKENS_FILE"
		printf '%s\n' "$tok" >"$ADMIN_TOKEN_FILE"
	)
}

# ---------------------------------------------------------------- start / stop

node_args() { # the flags a node starts with, one per line
	local n=$1
	printf '%s\n' \
		"--name=$n" \
		"--data-dir=$(data_dir "$n")" \
		"--api-addr=127.0.0.1:$(api_port "$n")" \
		"--peer-addr=127.0.0.1:$(peer_port "$n")" \
		"--initial-cluster=$(initial_cluster)"
	[[ -z $ETCD_PORT_BASE ]] || echo "--etcd-addr=127.0.0.1:$(etcd_port "$n")"
	((SECURE == 1)) || return 0
	printf '%s\n' \
		"--tls-cert-file=$PKI/server.crt" \
		"--tls-private-key-file=$PKI/server.key" \
		"--client-ca-file=$PKI/ca.crt" \
		"--token-auth-file=$TOKENS_FILE" \
		"--peer-cert-file=$PKI/peer.crt" \
		"--peer-key-file=$PKI/peer.key" \
		"--peer-trusted-ca-file=$PKI/ca.crt" \
		"--peer-cert-allowed-cn=leasehold-peer"
}

# launch NAME ARGSFILE: start the node in its own session, record its pid.
launch() {
	local n=$1 argsf=$2 pidf log p line t args=()
	pidf=$(pid_file "$n")
	log=$(log_file "$n")
	while IFS= read -r line; do
		if [[ -n $line ]]; then args+=("$line"); fi
	done <"$argsf"
	((${#args[@]} > 0)) || die "$argsf is empty"
	grep -Fxq -- "--data-dir=$(data_dir "$n")" "$argsf" || die "$argsf does not hold --data-dir=$(data_dir "$n")"

	for p in "${args[@]}"; do
		case $p in
		--api-addr=* | --peer-addr=* | --etcd-addr=*)
			# A node killed a moment ago may still be letting go of it.
			for ((t = 0; t < 20; t++)); do
				port_in_use "${p##*:}" || break
				sleep 0.1
			done
			if port_in_use "${p##*:}"; then
				die "cannot start $n: 127.0.0.1:${p##*:} is already in use by another process"
			fi
			;;
		esac
	done

	mkdir -p "$(data_dir "$n")"
	rm -f "$pidf"
	echo "=== $(date '+%Y-%m-%dT%H:%M:%S%z') $PROG: starting $n: $BIN ${args[*]}" >>"$log"
	# The inner shell writes its own pid and execs the binary, so the recorded pid is the
	# leasehold process itself. setsid puts it in its own session and process group, so it
	# outlives this script and its terminal.
	local runner=(nohup)
	command -v setsid >/dev/null 2>&1 && runner=(setsid)
	# shellcheck disable=SC2016 # $$ and "$@" belong to the inner shell
	env -u LEASEHOLD_JOIN -u LEASEHOLD_DEBUG_ADDR \
		"${runner[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' leasehold-launch "$pidf" "$BIN" "${args[@]}" \
		</dev/null >>"$log" 2>&1 &
	local i
	for ((i = 0; i < 50; i++)); do
		[[ -s $pidf ]] && break
		sleep 0.1
	done
	[[ -s $pidf ]] || die "$n did not record a pid in $pidf"
}

# wait_ready NAME... : until every node answers 200 on /readyz (bounded by READY_TIMEOUT)
wait_ready() {
	local deadline=$((SECONDS + READY_TIMEOUT)) pending=("$@") n still code s name
	while ((${#pending[@]} > 0)); do
		still=()
		for n in "${pending[@]}"; do
			if ! node_pid "$n" >/dev/null; then
				fail_node "$n" "exited while starting"
			fi
			code=$(http_code "$(api_url "$n")/readyz")
			if [[ $code == 200 ]]; then
				# make sure it is our node that answers on that port
				if s=$(cluster_status "$n"); then
					name=$(status_name "$s")
					[[ -z $name || $name == "$n" ]] || fail_node "$n" "$(api_url "$n") answers as '$name', not $n"
				fi
			else
				still+=("$n")
			fi
		done
		pending=("${still[@]+"${still[@]}"}")
		((${#pending[@]} > 0)) || break
		if ((SECONDS >= deadline)); then
			for n in "${pending[@]}"; do
				echo "$PROG: $n ($(api_url "$n")) not ready after ${READY_TIMEOUT}s: $("${CURL[@]}" "$(api_url "$n")/readyz" 2>&1 | head -c 300)" >&2
				echo "--- last lines of $(log_file "$n"):" >&2
				tail -n 20 "$(log_file "$n")" >&2 2>/dev/null || true
			done
			echo "$PROG: nodes that did start are left running; '$PROG stop' stops them" >&2
			exit 1
		fi
		sleep 0.3
	done
}

fail_node() {
	echo "$PROG: $1: $2" >&2
	echo "--- last lines of $(log_file "$1"):" >&2
	tail -n 20 "$(log_file "$1")" >&2 2>/dev/null || true
	echo "$PROG: nodes that did start are left running; '$PROG stop' stops them" >&2
	exit 1
}

print_summary() {
	local n pid
	for n in "${NODES[@]}"; do
		pid=$(node_pid "$n") || pid=-
		echo "$n  $(api_url "$n")  pid $pid  log $(log_file "$n")"
	done
	if [[ -n $ETCD_PORT_BASE ]]; then
		local scheme=https eps=""
		((SECURE == 1)) || scheme=http
		for n in "${NODES[@]}"; do eps+="${eps:+,}$scheme://127.0.0.1:$(etcd_port "$n")"; done
		echo "etcd API: $eps"
	fi
	echo "leader: $(leader_name || echo unknown)"
	if ((SECURE == 0)); then
		echo "lease view: $(api_url n1)/ui/"
		return 0
	fi
	echo "kubeconfig: $KUBECONFIG_FILE (admin, group system:masters)"
	echo "lease view: $(api_url n1)/ui/ (any node; sign in with the token in $ADMIN_TOKEN_FILE; the CA is $PKI/ca.crt)"
	echo "  or with no token: kubectl --kubeconfig $KUBECONFIG_FILE proxy --port 8080, then http://127.0.0.1:8080/ui/"
}

cmd_start() {
	build_if_needed
	ensure_pki
	ensure_token
	local n pid started=()
	for n in "${NODES[@]}"; do
		if pid=$(node_pid "$n"); then
			say "$n already running (pid $pid)"
			continue
		fi
		mkdir -p "$(node_dir "$n")"
		node_args "$n" >"$(args_file "$n")"
		launch "$n" "$(args_file "$n")"
		started+=("$n")
	done
	((${#started[@]} == 0)) || say "started ${started[*]}; waiting up to ${READY_TIMEOUT}s for /readyz"
	wait_ready "${NODES[@]}"
	print_summary
}

cmd_restart() {
	local n=$1 pid
	check_node "$n"
	if pid=$(node_pid "$n"); then
		say "$n is running (pid $pid), stopping it first"
		stop_nodes "$n"
	fi
	build_if_needed missing-only # same binary as the running cluster unless it is gone
	ensure_pki
	ensure_token
	mkdir -p "$(node_dir "$n")"
	# same flags as the last start; fresh ones if it never started
	[[ -s $(args_file "$n") ]] || node_args "$n" >"$(args_file "$n")"
	launch "$n" "$(args_file "$n")"
	wait_ready "$n"
	pid=$(node_pid "$n") || pid=-
	echo "$n  $(api_url "$n")  pid $pid  ready; leader: $(leader_name || echo unknown)"
}

cmd_kill() {
	local n=$1 pid i
	check_node "$n"
	pid=$(node_pid "$n") || die "$n is not running"
	kill -KILL "$pid"
	for ((i = 0; i < 50; i++)); do
		exited "$pid" && break
		sleep 0.1
	done
	exited "$pid" || die "$n (pid $pid) still alive after SIGKILL"
	rm -f "$(pid_file "$n")"
	say "killed $n (pid $pid)"
}

# stop_nodes NAME...: SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL what is left
stop_nodes() {
	local n pid running=() left deadline=$((SECONDS + STOP_TIMEOUT))
	local -A pids=()
	for n in "$@"; do
		if pid=$(node_pid "$n"); then
			kill -TERM "$pid" 2>/dev/null || true
			running+=("$n")
			pids[$n]=$pid
		else
			rm -f "$(pid_file "$n")"
		fi
	done
	((${#running[@]} > 0)) || return 0
	say "sent SIGTERM to ${running[*]}"
	while :; do
		left=()
		for n in "${running[@]}"; do
			pid=$(node_pid "$n") && left+=("$n") && continue
			exited "${pids[$n]}" || left+=("$n")
		done
		((${#left[@]} > 0)) || break
		if ((SECONDS >= deadline)); then
			for n in "${left[@]}"; do
				if pid=$(node_pid "$n"); then
					echo "$PROG: $n (pid $pid) did not exit within ${STOP_TIMEOUT}s of SIGTERM; sending SIGKILL" >&2
					kill -KILL "$pid" 2>/dev/null || true
				fi
			done
			sleep 0.5
			break
		fi
		sleep 0.2
	done
	for n in "${running[@]}"; do
		node_pid "$n" >/dev/null || rm -f "$(pid_file "$n")"
	done
	say "stopped ${running[*]}"
}

cmd_stop() {
	local n any=0
	for n in "${NODES[@]}"; do
		node_pid "$n" >/dev/null && any=1
	done
	if ((any == 0)); then
		say "no node running"
		for n in "${NODES[@]}"; do rm -f "$(pid_file "$n")"; done
		return 0
	fi
	stop_nodes "${NODES[@]}"
	for n in "${NODES[@]}"; do
		if pid=$(node_pid "$n"); then
			die "$n (pid $pid) is still running"
		fi
	done
}

cmd_clean() {
	cmd_stop
	if [[ ! -e $DATA ]]; then
		say "nothing to remove at $DATA"
		return 0
	fi
	[[ -d $DATA ]] || die "$DATA is not a directory"
	case $DATA in
	/ | "$HOME" | "$ROOT" | "$ROOT/data") die "refusing to remove $DATA" ;;
	esac
	local n
	for n in "${NODES[@]}"; do
		rm -rf -- "${DATA:?}/$n"
	done
	rm -rf -- "${DATA:?}/pki"
	rm -f -- "$KUBECONFIG_FILE" "$ADMIN_TOKEN_FILE"
	# remove the root itself only when nothing else lives in it
	if rmdir -- "$DATA" 2>/dev/null; then
		say "removed $DATA"
	else
		say "removed ${NODES[*]} from $DATA; left the directory because it holds other files"
	fi
}

cmd_status() {
	local n pid s state applied
	for n in "${NODES[@]}"; do
		state=down applied=-
		if pid=$(node_pid "$n"); then
			if s=$(cluster_status "$n"); then
				state=$(status_state "$s")
				applied=$(status_applied "$s")
				state=${state:-unknown} applied=${applied:--}
			else
				state=unreachable
			fi
		else
			pid=-
		fi
		printf '%-3s pid=%-8s %-22s state=%-11s applied=%s\n' "$n" "$pid" "$(api_url "$n")" "$state" "$applied"
	done
}

usage() {
	sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

case ${1:-} in
start) (($# == 1)) || die "usage: $PROG start"; cmd_start ;;
status) (($# == 1)) || die "usage: $PROG status"; cmd_status ;;
kill) (($# == 2)) || die "usage: $PROG kill NAME"; cmd_kill "$2" ;;
restart) (($# == 2)) || die "usage: $PROG restart NAME"; cmd_restart "$2" ;;
stop) (($# == 1)) || die "usage: $PROG stop"; cmd_stop ;;
clean) (($# == 1)) || die "usage: $PROG clean"; cmd_clean ;;
-h | --help | help) usage ;;
*)
	usage >&2
	exit 2
	;;
esac
