package httpapi

import "net/http"

// clusterElections serves GET /cluster/elections: the coordinated leader
// election controller's view of every Lease with candidates, as JSON. Only
// the Raft leader runs the controller; other nodes answer an empty list.
// Without a status function (Config.Elections) the endpoint does not exist.
func (s *Server) clusterElections(w http.ResponseWriter, req *http.Request) {
	if s.elections == nil {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	writeJSON(w, req, http.StatusOK, s.elections())
}
