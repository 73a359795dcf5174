package httpapi

import (
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refuseForgedRequests keeps a web page in someone's browser from writing
// with that browser's credentials (a client certificate, a session of the
// lease view): a browser sends any request a page asks for, with the
// user's certificate, and only its answer is hidden from the page.
//
//   - A mutating request (POST, PUT, PATCH, DELETE) that a browser marks
//     Sec-Fetch-Site cross-site or same-site is 403, as is one whose Origin
//     is not this API's own when the browser sent no Sec-Fetch-Site. A
//     browser that says same-origin is believed over Origin: behind a proxy
//     (kubectl proxy) the page's origin is the proxy's, not this one.
//     Clients that are not browsers send neither header.
//   - A body without a Content-Type is 415: a page's form or plain fetch
//     cannot then pass for JSON (kube-apiserver takes it as JSON).
//   - /cluster/* takes application/json bodies only: a page's form
//     (text/plain, form encoded) cannot reach them without the browser
//     asking the server first (a CORS preflight, which is never allowed).
func (s *Server) refuseForgedRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			if why := crossSite(req); why != "" {
				s.writeError(w, req, &apierrors.StatusError{ErrStatus: metav1.Status{
					Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
					Message: "forbidden: " + why + ": a browser page of another origin may not write here",
				}})
				return
			}
		}
		if hasBody(req) {
			ct := req.Header.Get("Content-Type")
			mt, _, _ := mime.ParseMediaType(ct)
			if ct == "" || (strings.HasPrefix(req.URL.Path, "/cluster/") && mt != "application/json") {
				s.writeError(w, req, unsupportedMediaType())
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}

// crossSite says why req comes from a page of another origin, or "".
func crossSite(req *http.Request) string {
	switch site := req.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "Sec-Fetch-Site is " + site
	case "same-origin", "none":
		return ""
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	if !strings.EqualFold(origin, scheme+"://"+req.Host) {
		return "Origin " + origin + " is not this server's"
	}
	return ""
}

// hasBody reports whether req carries a body, known or chunked.
func hasBody(req *http.Request) bool {
	return req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0
}
