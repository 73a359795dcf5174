#!/usr/bin/env bash
# Regenerates apis/openapi/zz_generated.openapi.go: the OpenAPI definitions
# of the served types (k8s.io/api coordination v1, v1beta1, v1alpha2, rbac v1,
# leasehold's coordination v1alpha1) and of the apimachinery types they
# reference, generated from the Go types and their doc comments by
# kube-openapi's openapi-gen, at the kube-openapi version go.mod requires.
#
# Usage: scripts/gen-openapi.sh   (or: go generate ./apis/openapi)
set -euo pipefail

cd "$(dirname "$0")/.."

version=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)
report=${OPENAPI_REPORT:-$(mktemp)}
[ -n "${OPENAPI_REPORT:-}" ] || trap 'rm -f "$report"' EXIT

# API rule violations (list types without +listType and the like, mostly
# in apimachinery's meta types) go to a report file, which also keeps
# openapi-gen from failing on them; set OPENAPI_REPORT to keep it.
go run "k8s.io/kube-openapi/cmd/openapi-gen@${version}" \
	--output-dir apis/openapi \
	--output-pkg github.com/leasehold/leasehold/apis/openapi \
	--output-file zz_generated.openapi.go \
	--report-filename "$report" \
	k8s.io/apimachinery/pkg/apis/meta/v1 \
	k8s.io/apimachinery/pkg/runtime \
	k8s.io/apimachinery/pkg/version \
	k8s.io/api/coordination/v1 \
	k8s.io/api/coordination/v1beta1 \
	k8s.io/api/coordination/v1alpha2 \
	k8s.io/api/rbac/v1 \
	github.com/leasehold/leasehold/apis/coordination/v1alpha1

gofmt -w apis/openapi/zz_generated.openapi.go
