package httpapi

import (
	"net/http/httptest"
	"testing"
)

// The timeout filter tells a watch, which has no deadline, from its URL.
func TestIsWatchRequest(t *testing.T) {
	for path, want := range map[string]bool{
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases?watch=1":    true,
		"/apis/coordination.k8s.io/v1/leases?watch=true":               true,
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/l?watch=1":  false, // a get here
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/r?watch=1":    false,
		"/apis/coordination.k8s.io/v1/watch/namespaces/ns/leases":      true,
		"/api/v1/namespaces?watch=1":                                   true,
		"/api/v1/namespaces/ns?watch=1":                                false,
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases":            false,
		"/apis/coordination.k8s.io/v1/namespaces/ns/leases/l?watch=no": false,
	} {
		req := httptest.NewRequest("GET", path, nil)
		if got := isWatchRequest(req); got != want {
			t.Errorf("%s: watch %v, want %v", path, got, want)
		}
	}
}
