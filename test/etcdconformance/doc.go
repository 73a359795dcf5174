// Package etcdconformance runs Kubernetes' own storage test suites
// (k8s.io/apiserver/pkg/storage/testing, the Run* functions that
// k8s.io/apiserver/pkg/storage/etcd3 runs against an embedded etcd in its
// store_test.go and watcher_test.go) against an etcd v3 endpoint reached by
// URL only: a real etcd cluster, or leasehold's etcd port.
//
// It is a module of its own so that k8s.io/apiserver, and the etcd and gRPC
// versions it pins, never reach the main module's build. It has no code
// outside its tests; README.md lists every suite, whether it runs and why
// not, and the environment the tests read. scripts/conformance.sh starts a
// server and runs them.
package etcdconformance
