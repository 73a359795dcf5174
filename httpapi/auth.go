package httpapi

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
)

// openPaths answer without credentials, so that probes and load balancers
// need none.
var openPaths = map[string]bool{"/livez": true, "/readyz": true, "/healthz": true,
	"/ui": true, "/ui/": true, "/ui/ui.js": true, "/ui/election.js": true, "/ui/ui.css": true}

// guard runs kube-apiserver's order of checks before a request reaches the
// API: authentication (401), impersonation (403), the in-flight limits
// (429), authorization (403). A request refused at any step has no effect, and an
// unauthenticated one takes no in-flight slot.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if openPaths[req.URL.Path] {
			next.ServeHTTP(w, req)
			return
		}
		u, err := s.authn.Authenticate(req)
		if err != nil {
			s.writeError(w, req, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		if u, err = auth.Impersonate(req.Context(), s.authz, u, req.Header); err != nil {
			w.Header().Set("X-Content-Type-Options", "nosniff")
			s.writeError(w, req, err)
			return
		}
		attrs, err := auth.Attributes(req, u)
		if err != nil {
			s.writeError(w, req, apierrors.NewInternalError(err))
			return
		}
		release, ok := s.inflight.acquire(attrs)
		if !ok {
			// kube-apiserver answers 429 in plain text, not a Status;
			// client-go retries it because of Retry-After.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
			return
		}
		defer release()
		if s.authorize(w, req, attrs) {
			next.ServeHTTP(w, req.WithContext(auth.WithUser(req.Context(), u)))
		}
	})
}

// authorize answers 403 (or 500 when the authorizer failed) unless the
// authorizer allows attrs, and reports whether it did.
func (s *Server) authorize(w http.ResponseWriter, req *http.Request, attrs authorizer.Attributes) bool {
	decision, reason, err := s.authz.Authorize(req.Context(), attrs)
	if decision == authorizer.DecisionAllow {
		return true
	}
	if err != nil {
		// An authorizer that failed is not a refusal: kube-apiserver
		// answers 500 so the client retries.
		s.writeError(w, req, apierrors.NewInternalError(err))
		return false
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.writeError(w, req, auth.Forbidden(attrs, reason))
	return false
}

// inflight holds kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight: get, list and watch count as read-only,
// everything else as mutating. Watches (long-running) and system:masters
// are never counted. A zero limit is no limit.
type inflight struct {
	readOnly, mutating chan struct{}
}

func newInflight(readOnly, mutating int) *inflight {
	l := &inflight{}
	if readOnly > 0 {
		l.readOnly = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		l.mutating = make(chan struct{}, mutating)
	}
	return l
}

func (l *inflight) acquire(a authorizer.Attributes) (release func(), ok bool) {
	if a.GetVerb() == "watch" || auth.IsMaster(a.GetUser()) {
		return func() {}, true
	}
	slots := l.mutating
	switch a.GetVerb() {
	case "get", "list":
		slots = l.readOnly
	}
	if slots == nil {
		return func() {}, true
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, true
	default:
		return nil, false
	}
}
