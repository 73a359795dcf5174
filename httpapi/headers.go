package httpapi

import (
	"net/http"

	"github.com/google/uuid"
)

// responseHeaders sets the headers kube-apiserver puts on every answer:
// Audit-Id (the client's Audit-ID if it sent one, else a new id), which
// client-go logs and users quote when they report a request, and
// Cache-Control for API answers.
func responseHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("Audit-ID")
		if id == "" {
			id = uuid.NewString()
		}
		w.Header().Set("Audit-Id", id)
		if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		next.ServeHTTP(w, req)
	})
}
