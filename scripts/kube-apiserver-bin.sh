#!/usr/bin/env bash
# Print the path of a kube-apiserver v1.36.3 binary, building it from the Go module proxy once.
#
#   scripts/kube-apiserver-bin.sh     one line on stdout: the binary's path; progress on stderr
#
# k8s.io/kubernetes points its staging modules (k8s.io/api, k8s.io/apiserver, ...) at
# ./staging/src/... with replace directives, which the go command ignores in a dependency, so
# `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.36.3` cannot work. The script makes a
# throwaway module that requires k8s.io/kubernetes v1.36.3 and replaces every staging module
# with its published v0.36.3, builds cmd/kube-apiserver the way the release does (static,
# version stamped by -ldflags), and keeps the binary in
# ${XDG_CACHE_HOME:-$HOME/.cache}/leasehold/kube-apiserver-v1.36.3/, so later calls are instant.
# The first build takes a long time on a small machine (tens of minutes on 2 cores).
#
# Environment:
#   BUILD_TIMEOUT   seconds the build may take before it is stopped, default 5400

set -euo pipefail

PROG=$(basename "$0")
say() { echo "$PROG: $*" >&2; }
die() {
	say "$*"
	exit 1
}

K8S_VERSION=v1.36.3
STAGING_VERSION=v0.36.3
# Every module that k8s.io/kubernetes v1.36.3 replaces with ./staging/src/<module>.
STAGING=(
	api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
	cluster-bootstrap code-generator component-base component-helpers controller-manager
	cri-api cri-client cri-streaming csi-translation-lib dynamic-resource-allocation
	endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
	kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver
	sample-cli-plugin sample-controller streaming
)

BUILD_TIMEOUT=${BUILD_TIMEOUT:-5400}
[[ $BUILD_TIMEOUT =~ ^[0-9]+$ ]] || die "BUILD_TIMEOUT must be a whole number of seconds, got '$BUILD_TIMEOUT'"

CACHE_ROOT=${XDG_CACHE_HOME:-}
[[ -n $CACHE_ROOT ]] || CACHE_ROOT=${HOME:?HOME is not set}/.cache
DIR=$CACHE_ROOT/leasehold/kube-apiserver-$K8S_VERSION
BIN=$DIR/kube-apiserver

# usable: the cached binary runs and says it is the version we build.
usable() {
	[[ -x $BIN ]] || return 1
	local v
	v=$("$BIN" --version 2>/dev/null) || return 1
	[[ $v == "Kubernetes $K8S_VERSION" ]]
}

if usable; then
	echo "$BIN"
	exit 0
fi

command -v go >/dev/null 2>&1 || die "go is not installed"
mkdir -p "$DIR"

# One build at a time: a second caller waits for the first one's binary.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$DIR/.lock"
	if ! flock -n 9; then
		say "another build of kube-apiserver $K8S_VERSION is running; waiting up to ${BUILD_TIMEOUT}s for it"
		flock -w "$BUILD_TIMEOUT" 9 || die "gave up waiting for the other build"
	fi
	if usable; then
		echo "$BIN"
		exit 0
	fi
fi

WORK=$(mktemp -d "$DIR/build.XXXXXX")
BUILD_PID=
cleanup() {
	if [[ -n $BUILD_PID ]] && kill -0 "$BUILD_PID" 2>/dev/null; then
		# the build runs in its own process group (set -m below): stop the compilers too
		kill -TERM -- "-$BUILD_PID" 2>/dev/null || kill -TERM "$BUILD_PID" 2>/dev/null || true
	fi
	rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	echo "module leasehold.invalid/kube-apiserver-build"
	echo
	echo "go 1.26.0"
	echo
	# as k8s.io/kubernetes' own go.mod: the runtime behaves as the release's
	echo "godebug default=go1.26"
	echo
	echo "require k8s.io/kubernetes $K8S_VERSION"
	echo
	echo "replace ("
	for m in "${STAGING[@]}"; do
		echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"
	done
	echo ")"
} >"$WORK/go.mod"

LOG=$WORK/build.log
# Stamped as hack/lib/version.sh does for a release build.
stamp() { printf -- "-X 'k8s.io/%s.%s=%s' " "$1" "$2" "$3"; }
LDFLAGS="-s -w"
for pkg in component-base/version client-go/pkg/version; do
	LDFLAGS+=" $(stamp "$pkg" gitVersion "$K8S_VERSION")"
	LDFLAGS+=" $(stamp "$pkg" gitMajor 1)"
	LDFLAGS+=" $(stamp "$pkg" gitMinor 36)"
	LDFLAGS+=" $(stamp "$pkg" gitTreeState clean)"
	LDFLAGS+=" $(stamp "$pkg" buildDate "$(date -u +%Y-%m-%dT%H:%M:%SZ)")"
done

start=$SECONDS
say "building kube-apiserver $K8S_VERSION in $WORK (log $LOG); this takes a while"
# Background job in its own process group, polled with a deadline.
set -m
(
	cd "$WORK"
	export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0 GOWORK=off
	go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" &&
		go build -trimpath -ldflags "$LDFLAGS" -o "$WORK/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
) >"$LOG" 2>&1 &
BUILD_PID=$!
set +m

deadline=$((SECONDS + BUILD_TIMEOUT))
next_note=$((SECONDS + 60))
while kill -0 "$BUILD_PID" 2>/dev/null; do
	if ((SECONDS >= deadline)); then
		tail -n 20 "$LOG" >&2 || true
		die "build did not finish within ${BUILD_TIMEOUT}s (BUILD_TIMEOUT)"
	fi
	if ((SECONDS >= next_note)); then
		say "still building ($((SECONDS - start))s)"
		next_note=$((SECONDS + 60))
	fi
	sleep 2
done
rc=0
wait "$BUILD_PID" || rc=$?
BUILD_PID=
if ((rc != 0)); then
	tail -n 40 "$LOG" >&2 || true
	die "build failed (exit $rc)"
fi

mv -f "$WORK/kube-apiserver" "$BIN.tmp"
mv -f "$BIN.tmp" "$BIN"
usable || die "the built $BIN does not report Kubernetes $K8S_VERSION: $("$BIN" --version 2>&1 | head -n 1)"
say "built $BIN in $((SECONDS - start))s"
echo "$BIN"
