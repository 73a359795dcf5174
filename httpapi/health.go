package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/leasehold/leasehold/cluster"
)

func writeJSON(w http.ResponseWriter, req *http.Request, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	if wantPretty(req) {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
}

// The health endpoints answer as kube-apiserver's do: "ok"; with ?verbose
// a line for each check and a summary; ?exclude=NAME leaves a check out;
// /readyz/NAME (authorized, as kube's system:monitoring role allows) asks
// for one check. Unlike kube-apiserver, which withholds why a check
// failed, the answer says why: the bare /readyz has always said so, and
// what it says (a leader unknown, a disk full) is no secret.

func (s *Server) livez(w http.ResponseWriter, req *http.Request) {
	writeHealth(w, req, "livez", nil)
}

func (s *Server) readyz(w http.ResponseWriter, req *http.Request) {
	writeHealth(w, req, strings.TrimPrefix(req.URL.Path, "/"), s.node.ReadyChecks())
}

// healthCheck answers /livez/NAME, /readyz/NAME and /healthz/NAME.
func (s *Server) healthCheck(w http.ResponseWriter, req *http.Request) {
	endpoint, name := mux.Vars(req)["endpoint"], mux.Vars(req)["check"]
	var checks []cluster.ReadyCheck
	if endpoint != "livez" {
		checks = s.node.ReadyChecks()
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if name == "ping" {
		_, _ = w.Write([]byte("ok"))
		return
	}
	for _, c := range checks {
		if c.Name != name {
			continue
		}
		if c.Why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + c.Why + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok"))
		return
	}
	http.NotFound(w, req)
}

// writeHealth answers an endpoint whose checks are ping, which passes
// while the process serves HTTP, and the given ones.
func writeHealth(w http.ResponseWriter, req *http.Request, endpoint string, checks []cluster.ReadyCheck) {
	q := req.URL.Query()
	_, verbose := q["verbose"]
	excluded := map[string]bool{}
	for _, e := range q["exclude"] {
		excluded[e] = true
	}
	var out strings.Builder
	var why string // the first failure's reason
	for _, c := range append([]cluster.ReadyCheck{{Name: "ping"}}, checks...) {
		switch {
		case excluded[c.Name]:
			delete(excluded, c.Name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
		case c.Why != "":
			fmt.Fprintf(&out, "[-]%s failed: %s\n", c.Name, c.Why)
			if why == "" {
				why = c.Why
			}
		default:
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(excluded)) {
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", e)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case why != "" && verbose:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(&out, "%s check failed\n", endpoint)
		_, _ = w.Write([]byte(out.String()))
	case why != "":
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + why + "\n"))
	case verbose:
		fmt.Fprintf(&out, "%s check passed\n", endpoint)
		_, _ = w.Write([]byte(out.String()))
	default:
		_, _ = w.Write([]byte("ok"))
	}
}

func (s *Server) clusterStatus(w http.ResponseWriter, req *http.Request) {
	writeJSON(w, req, http.StatusOK, s.node.Status())
}
