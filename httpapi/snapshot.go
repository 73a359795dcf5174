package httpapi

import (
	"net/http"

	"github.com/leasehold/leasehold/registry"
)

// clusterSnapshot serves GET /cluster/snapshot: a backup of the state
// (backup's file format), current as of the request on any node, which
// leaseholdctl snapshot save writes to a file. Like every non-resource
// path it is authorized by the guard (verb get); only cluster-admin has
// it by default.
//
// The answer streams as the node writes it, so a failure once the body
// has begun cannot become a Status: the connection is cut instead, and
// the client never sees a clean end (nor a valid checksum).
func (s *Server) clusterSnapshot(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		notAllowed(w, "GET")
		s.writeError(w, req, methodNotAllowed())
		return
	}
	sw := &startOnWrite{w: w}
	meta, err := s.node.SaveSnapshot(req.Context(), sw)
	switch {
	case err == nil:
		s.logger.Info("backup sent", "index", meta.Index, "term", meta.Term, "remote", req.RemoteAddr)
	case !sw.started:
		s.writeError(w, req, registry.ClusterError(err))
	default:
		s.logger.Warn("backup cut short", "index", meta.Index, "remote", req.RemoteAddr, "error", err)
		panic(http.ErrAbortHandler)
	}
}

// startOnWrite sends the 200 and its headers with the first byte of the
// body, so that an error before it can still be answered as a Status.
type startOnWrite struct {
	w       http.ResponseWriter
	started bool
}

func (sw *startOnWrite) Write(p []byte) (int, error) {
	if !sw.started {
		sw.started = true
		sw.w.Header().Set("Content-Type", "application/octet-stream")
		sw.w.Header().Set("X-Content-Type-Options", "nosniff")
		sw.w.WriteHeader(http.StatusOK)
	}
	return sw.w.Write(p)
}
