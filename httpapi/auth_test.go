package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
)

// denyAuthorizer has no opinion on anything but what allow says, or fails
// when err is set.
type denyAuthorizer struct {
	allow func(authorizer.Attributes) bool
	err   error
}

func (d denyAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if d.err != nil {
		return authorizer.DecisionNoOpinion, "", d.err
	}
	if d.allow != nil && d.allow(a) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (denyAuthorizer) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

// guardServer is a Server with only what guard uses, in front of next.
func guardServer(t *testing.T, authz auth.Authorizer, readOnly, mutating int, next http.Handler) http.Handler {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,u1,team\nroot-token,root,u0,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Config{TokenAuthFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{logger: hclog.NewNullLogger(), authn: authn, authz: authz, inflight: newInflight(readOnly, mutating)}
	return responseHeaders(s.guard(next))
}

func serve(h http.Handler, method, target, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestGuardForbidden(t *testing.T) {
	var reached atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if u, ok := auth.UserFrom(r.Context()); !ok || u.GetName() != "alice" {
			t.Errorf("handler sees user %v", u)
		}
		if r.Header.Get("Authorization") != "" {
			t.Error("the handler sees the credential")
		}
	})
	allowGets := denyAuthorizer{allow: func(a authorizer.Attributes) bool { return a.GetVerb() == "get" && a.IsResourceRequest() }}
	h := guardServer(t, allowGets, 0, 0, next)

	for _, tc := range []struct {
		method, target, body string
	}{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/x",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" is forbidden: User \"alice\" cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":403}`},
		{"GET", "/apis/coordination.k8s.io/v1/leases",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"alice\" cannot list resource \"leases\" in API group \"coordination.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}`},
		{"GET", "/metrics",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}`},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases?watch=1",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"alice\" cannot watch resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}`},
	} {
		rec := serve(h, tc.method, tc.target, "alice-token")
		if rec.Code != 403 || strings.TrimSpace(rec.Body.String()) != tc.body || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d %v\n%s\nwant %s", tc.method, tc.target, rec.Code, rec.Header(), rec.Body, tc.body)
		}
	}
	if reached.Load() != 0 {
		t.Fatalf("refused requests reached the handler %d times", reached.Load())
	}
	if rec := serve(h, "GET", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/x", "alice-token"); rec.Code != 200 || reached.Load() != 1 {
		t.Errorf("allowed get: %d, reached %d", rec.Code, reached.Load())
	}
	// Authentication comes first: an unknown token is 401, not 403.
	if rec := serve(h, "GET", "/metrics", "no-such-token"); rec.Code != 401 || reached.Load() != 1 {
		t.Errorf("unknown token: %d", rec.Code)
	}
}

func TestGuardAuthorizerError(t *testing.T) {
	h := guardServer(t, denyAuthorizer{err: errors.New("policy unavailable")}, 0, 0, http.NotFoundHandler())
	rec := serve(h, "GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases/x", "alice-token")
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"reason":"InternalError"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestGuardOpenPaths(t *testing.T) {
	h := guardServer(t, denyAuthorizer{}, 0, 0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		if rec := serve(h, "GET", p, ""); rec.Code != 200 {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
	for _, p := range []string{"/livez/x", "/readyz/leader", "/readyzz", "/metrics", "/version"} {
		if rec := serve(h, "GET", p, ""); rec.Code != 401 {
			t.Errorf("%s without credentials: %d", p, rec.Code)
		}
	}
}

func TestGuardInflight(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	block := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	chain, _ := auth.NewAuthorizer(auth.ModeAlwaysAllow, nil)
	h := guardServer(t, chain, 1, 1, block)
	done := make(chan *httptest.ResponseRecorder, 8)
	start := func(method, target, token string) {
		go func() { done <- serve(h, method, target, token) }()
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s %s did not reach the handler", method, target)
		}
	}
	// One read-only and one mutating request take the only slots.
	start("GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases/x", "alice-token")
	start("PUT", "/apis/coordination.k8s.io/v1/namespaces/a/leases/x", "alice-token")
	for _, m := range []string{"GET", "DELETE"} {
		rec := serve(h, m, "/apis/coordination.k8s.io/v1/namespaces/a/leases/y", "alice-token")
		if rec.Code != 429 || rec.Body.String() != "Too many requests, please try again later.\n" ||
			rec.Header().Get("Retry-After") != "1" || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s over the limit: %d %v %q", m, rec.Code, rec.Header(), rec.Body)
		}
	}
	// Not counted: watches, system:masters; and no slot for the
	// unauthenticated.
	start("GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases?watch=true", "alice-token")
	start("GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases", "root-token")
	if rec := serve(h, "GET", "/metrics", ""); rec.Code != 401 {
		t.Errorf("unauthenticated over the limit: %d, want 401", rec.Code)
	}
	close(release)
	for range 4 {
		select {
		case rec := <-done:
			if rec.Code != 200 {
				t.Errorf("a request under the limit: %d", rec.Code)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("requests did not finish")
		}
	}
	// The slots are free again.
	release = make(chan struct{})
	close(release)
	if rec := serve(h, "GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases/x", "alice-token"); rec.Code != 200 {
		t.Errorf("after release: %d", rec.Code)
	}
}
