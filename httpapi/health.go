package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
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

// joinRequest asks the leader to add a voter.
type joinRequest struct {
	Name     string `json:"name"`
	PeerAddr string `json:"peerAddr"`
}

// clusterJoin adds the node named in the body as a voter; it runs on the
// leader (followers forward it like any write).
func (s *Server) clusterJoin(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var jr joinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<16)).Decode(&jr); err != nil || jr.Name == "" || jr.PeerAddr == "" {
		http.Error(w, "body must be {\"name\":...,\"peerAddr\":...}", http.StatusBadRequest)
		return
	}
	if strings.ContainsAny(jr.PeerAddr, "/ ") {
		http.Error(w, "peerAddr must be host:port", http.StatusBadRequest)
		return
	}
	if err := s.node.AddVoter(req.Context(), jr.Name, jr.PeerAddr); err != nil {
		http.Error(w, "join failed: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, req, http.StatusOK, s.node.Status())
}
