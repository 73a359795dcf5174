#!/usr/bin/env bash
# Runs the test tiers, printing each package as it finishes.
#
#   scripts/test.sh check   the fast tier (make check): go vet, then the unit
#                           tests and the in-process cluster tests, without the
#                           race detector. What to run after every change.
#   scripts/test.sh all     the whole suite (make test): go vet, then every
#                           package with the race detector, in stages that stop
#                           at the first failing one: the fast tier's packages,
#                           the browser tests (ui) and the process-level tests
#                           (test/e2e, test/chaos), then Kubernetes' storage
#                           suites over the etcd API (scripts/conformance.sh).
#
# Environment:
#   GO           the go command (default go)
#   TEST_FLAGS   more go test flags for every stage, e.g. -run TestLease
#   CHECK_P      packages tested at once in the fast tier (default 4: most of
#                its time is spent waiting for timers, elections and fsync,
#                not on the CPU)

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
TEST_FLAGS=${TEST_FLAGS:-}
CHECK_P=${CHECK_P:-4}
start=$SECONDS

stage() { printf '\n==> %s  [%dm%02ds]\n' "$*" $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }

# slow are the packages outside the fast tier: a browser, or real processes.
slow='/ui$|/test/e2e$|/test/chaos$'
fast_pkgs() { $GO list ./... | grep -Ev "$slow"; }
slow_pkgs() { $GO list ./... | grep -E "$slow"; }

# gotest runs go test through gotestsum (a tool of go.mod), which prints a
# line per package as it finishes and the output of every failed test.
gotest() {
	# shellcheck disable=SC2086
	$GO tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg -- $TEST_FLAGS "$@"
}

vet() {
	stage "go vet"
	$GO vet ./...
}

case ${1:-check} in
check)
	vet
	stage "unit and in-process cluster tests"
	# shellcheck disable=SC2046
	gotest -count=1 -p "$CHECK_P" -timeout 10m $(fast_pkgs)
	;;
all)
	vet
	stage "unit and in-process cluster tests, race detector on"
	# shellcheck disable=SC2046
	gotest -race -count=1 -timeout 15m $(fast_pkgs)
	stage "browser and process-level tests, race detector on"
	# shellcheck disable=SC2046
	gotest -race -count=1 -timeout 15m $(slow_pkgs)
	stage "Kubernetes' storage suites over the etcd API"
	scripts/conformance.sh
	;;
*)
	sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
stage "passed"
