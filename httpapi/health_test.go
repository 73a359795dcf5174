package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testcluster"
)

func getHealth(t *testing.T, base, path string) (int, string, http.Header) {
	t.Helper()
	resp, body := rawGet(t, base, path)
	return resp.StatusCode, string(body), resp.Header
}

// TestHealthEndpoints: /livez, /readyz and /healthz answer as
// kube-apiserver's do, with ?verbose, ?exclude and one check by path, on a
// ready node and on one that has lost its leader.
func TestHealthEndpoints(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady()
	survivor := c.Follower()
	u := c.Nodes[survivor].URL()

	ready := []struct{ path, body string }{
		{"/readyz", "ok"},
		{"/readyz?verbose", "[+]ping ok\n[+]disk ok\n[+]leader ok\nreadyz check passed\n"},
		{"/healthz?verbose", "[+]ping ok\n[+]disk ok\n[+]leader ok\nhealthz check passed\n"},
		{"/livez?verbose", "[+]ping ok\nlivez check passed\n"},
		{"/readyz?verbose&exclude=disk&exclude=etcd", "[+]ping ok\n[+]disk excluded: ok\n[+]leader ok\n" +
			"warn: some health checks cannot be excluded: no matches for etcd\nreadyz check passed\n"},
		{"/readyz/leader", "ok"},
		{"/healthz/disk", "ok"},
		{"/livez/ping", "ok"},
	}
	for _, tc := range ready {
		code, body, h := getHealth(t, u, tc.path)
		if code != 200 || body != tc.body || h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %q %v, want 200 %q as text/plain", tc.path, code, body, h, tc.body)
		}
	}
	for _, p := range []string{"/readyz/etcd", "/livez/leader", "/readyz/"} {
		if code, body, _ := getHealth(t, u, p); code != 404 {
			t.Errorf("%s: %d %q, want 404", p, code, body)
		}
	}

	// Alone, the node knows no leader: not ready, and it says why.
	for i := range c.Nodes {
		if i != survivor {
			c.Kill(i)
		}
	}
	var body string
	if !testcluster.WaitFor(context.Background(), 10*time.Second, func() bool {
		var code int
		code, body, _ = getHealth(t, u, "/readyz")
		return code == 503 && body == "not ready: no leader is known\n"
	}) {
		t.Fatalf("/readyz of a node alone: %q, want 503 saying no leader is known", body)
	}
	unready := []struct {
		path string
		code int
		body string
	}{
		{"/readyz?verbose", 503, "[+]ping ok\n[+]disk ok\n[-]leader failed: no leader is known\nreadyz check failed\n"},
		{"/healthz", 503, "not ready: no leader is known\n"},
		{"/readyz/leader", 503, "not ready: no leader is known\n"},
		{"/readyz/disk", 200, "ok"},
		{"/readyz?exclude=leader", 200, "ok"},
		{"/readyz?exclude=leader&verbose", 200, "[+]ping ok\n[+]disk ok\n[+]leader excluded: ok\nreadyz check passed\n"},
		{"/livez", 200, "ok"},
	}
	for _, tc := range unready {
		if code, body, _ := getHealth(t, u, tc.path); code != tc.code || body != tc.body {
			t.Errorf("%s alone: %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
}
