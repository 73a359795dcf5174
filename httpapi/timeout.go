package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// answerGrace is how long after a request's deadline its answer (the 504
// among them) may still take to be written before the stream or
// connection is abandoned.
const answerGrace = time.Second

// withRequestTimeout bounds every request but a watch by --request-timeout,
// or by its ?timeout= when that is shorter, as kube-apiserver's request
// deadline does: the request's context ends then (the handlers answer
// kube-apiserver's 504 Timeout Status), reading its body stops, and an
// answer that cannot be written by answerGrace later is abandoned (HTTP/2
// resets the stream, HTTP/1.1 closes the connection). A watch has no
// deadline, but each of its writes has one (watchStream). So a client that
// stops reading, authenticated or not, holds a goroutine and its buffers for
// the request timeout at most.
//
// Deadlines are set on every request, never cleared at its end: the last
// bytes of an answer are written after the handler returns, and a
// request's deadline must not outlive it on a kept-alive HTTP/1.1
// connection, which the next request's own deadline replaces.
func (s *Server) withRequestTimeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rc := http.NewResponseController(w)
		if isWatchRequest(req) {
			_ = rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(w, req)
			return
		}
		timeout := s.requestTimeout
		if d, err := time.ParseDuration(req.URL.Query().Get("timeout")); err == nil && d > 0 && d < timeout {
			timeout = d
		}
		deadline := time.Now().Add(timeout)
		ctx, cancel := context.WithDeadline(req.Context(), deadline)
		defer cancel()
		_ = rc.SetReadDeadline(deadline)
		_ = rc.SetWriteDeadline(deadline.Add(answerGrace))
		next.ServeHTTP(w, req.WithContext(ctx))
	})
}

// isWatchRequest tells a watch from its URL alone (the filter runs before
// routing): ?watch=true or 1 on a GET of a collection, or the deprecated
// /watch/ paths. On a named object ?watch is a plain get here (see
// requestVerb), and has its deadline.
func isWatchRequest(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	if strings.Contains(req.URL.Path, "/watch/") {
		return true
	}
	w := req.URL.Query().Get("watch")
	return (w == "true" || w == "1") && !namedObjectPath(req.URL.Path)
}

// namedObjectPath reports whether path names one object:
// /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE/NAME or
// /api/VERSION[/namespaces/NS]/RESOURCE/NAME.
func namedObjectPath(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string // after the group version
	switch {
	case len(segs) >= 3 && segs[0] == "apis":
		rest = segs[3:]
	case len(segs) >= 2 && segs[0] == "api":
		rest = segs[2:]
	default:
		return false
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) > 2 {
		rest = rest[2:] // a namespaced resource
	}
	return len(rest) == 2
}
