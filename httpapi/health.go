package httpapi

import (
	"encoding/json"
	"net/http"
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

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// readyz is 200 once the node knows a leader and has applied what that
// leader had committed; the body says why not otherwise.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	ok, why := s.node.Ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("not ready: " + why + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) clusterStatus(w http.ResponseWriter, req *http.Request) {
	writeJSON(w, req, http.StatusOK, s.node.Status())
}
