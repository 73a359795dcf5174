package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRouteMatch is the router's part of the requests nearly every
// client sends: a Lease's GET or PUT, a namespace's list or watch.
func BenchmarkRouteMatch(b *testing.B) {
	s := &Server{metrics: newMetrics(prometheus.NewRegistry())}
	r := s.routes(prometheus.NewRegistry())
	for _, path := range []string{
		"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1",
		"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
	} {
		req := httptest.NewRequest("GET", path, nil)
		b.Run(path[len("/apis/coordination.k8s.io/v1/"):], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var m mux.RouteMatch
				if !r.Match(req, &m) || m.MatchErr != nil {
					b.Fatalf("%s: no route (%v)", path, m.MatchErr)
				}
			}
		})
	}
}
