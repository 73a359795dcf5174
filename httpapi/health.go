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

// health answers /livez, /readyz and /healthz as kube-apiserver does: "ok";
// with ?verbose a line for each check and a summary; ?exclude=NAME leaves a
// check out. Unlike kube-apiserver, which withholds why a check failed, the
// answer says why: the bare /readyz has always said so, and what it says (a
// leader unknown, a disk full) is no secret.
func (s *Server) health(w http.ResponseWriter, req *http.Request) {
	endpoint := strings.TrimPrefix(req.URL.Path, "/")
	q := req.URL.Query()
	_, verbose := q["verbose"]
	excluded := map[string]bool{}
	for _, e := range q["exclude"] {
		excluded[e] = true
	}
	var out strings.Builder
	var why string // the first failure's reason
	for _, c := range s.healthChecks(endpoint) {
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
	setHealthHeaders(w)
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

// healthCheck answers one check: /livez/NAME, /readyz/NAME, /healthz/NAME.
// Unlike the endpoints themselves they need credentials, as in
// kube-apiserver (its system:monitoring role grants them).
func (s *Server) healthCheck(w http.ResponseWriter, req *http.Request) {
	vars := mux.Vars(req)
	for _, c := range s.healthChecks(vars["endpoint"]) {
		if c.Name != vars["check"] {
			continue
		}
		setHealthHeaders(w)
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

// healthChecks lists an endpoint's checks: ping, which passes while the
// process serves HTTP, and for readyz and healthz the node's readiness.
func (s *Server) healthChecks(endpoint string) []cluster.ReadyCheck {
	ping := []cluster.ReadyCheck{{Name: "ping"}}
	if endpoint == "livez" {
		return ping
	}
	return append(ping, s.node.ReadyChecks()...)
}

func setHealthHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
}

func (s *Server) clusterStatus(w http.ResponseWriter, req *http.Request) {
	writeJSON(w, req, http.StatusOK, s.node.Status())
}
