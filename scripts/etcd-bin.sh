#!/usr/bin/env bash
# Prints the path of an etcd server binary (default v3.6.16) and nothing else
# on stdout; progress goes to stderr; exits non-zero on failure.
#
#   scripts/etcd-bin.sh                      -> e.g. ~/.cache/leasehold/etcd-v3.6.16/etcd
#   ETCD_VERSION=v3.6.8 scripts/etcd-bin.sh  another 3.6 release
#
# The binary is built from the Go module proxy (go.etcd.io/etcd/server/v3 in a
# throw-away module, since its go.mod has replace directives that keep
# `go install …@version` from working) and cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/leasehold/etcd-VERSION/etcd, so every call
# after the first returns at once. The first build takes a minute or two.
#
# Environment:
#   ETCD_VERSION   module version to build, default v3.6.16 (the newest 3.6
#                  the proxy served when this was written)
#   GO             go command, default go

set -euo pipefail

PROG=$(basename "$0")
die() { echo "$PROG: $*" >&2; exit 1; }
say() { echo "$PROG: $*" >&2; }

GO=${GO:-go}
VERSION=${ETCD_VERSION:-v3.6.16}
[[ $VERSION =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "ETCD_VERSION must look like v3.6.16, got '$VERSION'"

CACHE=${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}
DIR=$CACHE/leasehold/etcd-$VERSION
BIN=$DIR/etcd

if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi

command -v "$GO" >/dev/null || die "'$GO' not found: a Go toolchain is needed to build etcd"
mkdir -p "$DIR"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/etcd-build.XXXXXX")
trap 'rm -rf -- "$WORK"' EXIT

say "building etcd $VERSION from the Go module proxy (once; cached in $DIR)"
(
	cd "$WORK"
	export GOFLAGS=-buildvcs=false GOWORK=off
	"$GO" mod init etcdbuild >/dev/null 2>&1
	"$GO" get "go.etcd.io/etcd/server/v3@$VERSION" >&2
	# Build to a temporary name and rename, so a concurrent or interrupted
	# build never leaves a half-written binary at $BIN.
	"$GO" build -trimpath -o "$DIR/etcd.tmp.$$" go.etcd.io/etcd/server/v3 >&2
) || {
	rm -f -- "$DIR/etcd.tmp.$$"
	die "building go.etcd.io/etcd/server/v3@$VERSION failed"
}
mv -f -- "$DIR/etcd.tmp.$$" "$BIN"

got=$("$BIN" --version 2>/dev/null | sed -n 's/^etcd Version: //p')
[[ v$got == "$VERSION" ]] || die "$BIN reports version '$got', expected ${VERSION#v}"
say "etcd $got at $BIN"
echo "$BIN"
