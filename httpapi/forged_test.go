package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// A page of another origin cannot write through a browser, whatever
// credential the browser holds; a body without a Content-Type is not taken
// for JSON; /cluster/* takes JSON only. Nothing refused is written.
func TestForgedRequests(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	n := c.Nodes[0]
	base := n.URL()
	lease := func(name string) string {
		return `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"` + name + `"},"spec":{"holderIdentity":"h"}}`
	}
	do := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body = http.NoBody
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
		says                     string
	}{
		{"cross-site Origin", "POST", leases, lease("a"), with(map[string]string{"Origin": "https://evil.example"}), 403, "Origin https://evil.example is not this server's"},
		{"cross-site fetch", "POST", leases, lease("b"), with(map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": base}), 403, "Sec-Fetch-Site is cross-site"},
		{"same-site fetch", "DELETE", leases + "/x", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site is same-site"},
		{"cross-site join", "POST", "/cluster/join", `{"name":"n9","peerAddr":"127.0.0.1:9"}`, with(map[string]string{"Origin": "http://127.0.0.1:1"}), 403, "forbidden"},
		{"no Content-Type", "POST", leases, lease("c"), nil, 415, "unknown format"},
		{"a form to /cluster", "POST", "/cluster/join", `{"name":"n9","peerAddr":"127.0.0.1:9"}`, map[string]string{"Content-Type": "text/plain"}, 415, "unknown format"},
		{"YAML to /cluster", "POST", "/cluster/leader/transfer", `{}`, map[string]string{"Content-Type": "application/yaml"}, 415, "unknown format"},
		// What is allowed: the API's own origin, a same-origin fetch behind
		// a proxy (the page's origin is the proxy's), clients that are not
		// browsers, and reads from anywhere.
		{"own origin", "POST", leases, lease("d"), with(map[string]string{"Origin": base}), 201, `"name":"d"`},
		{"same-origin behind a proxy", "POST", leases, lease("e"), with(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8001"}), 201, `"name":"e"`},
		{"not a browser", "POST", leases, lease("f"), json, 201, `"name":"f"`},
		{"a cross-site read", "GET", leases + "/d", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200, `"name":"d"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.method, tc.path, tc.body, tc.header)
			if code != tc.code || !strings.Contains(body, tc.says) {
				t.Errorf("%d %s, want %d saying %q", code, body, tc.code, tc.says)
			}
		})
	}
	// Nothing refused was written.
	for _, name := range []string{"a", "b", "c"} {
		if code, _ := do("GET", leases+"/"+name, "", nil); code != 404 {
			t.Errorf("lease %s: GET %d after a refused create, want 404", name, code)
		}
	}
	if got := len(n.Raft().Status().Members); got != 1 {
		t.Errorf("%d members after refused joins, want 1", got)
	}
}

// A request that is not a watch is answered within --request-timeout (or
// its shorter ?timeout=): one whose body never comes is cut off then, and
// a watch is not.
func TestRequestTimeout(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{API: func(_ string, cfg *httpapi.Config) {
		cfg.RequestTimeout = time.Second
	}})
	base := c.Nodes[0].URL()
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

	// A body that stops halfway.
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = io.WriteString(pw, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"slow"`)
	}()
	req, _ := http.NewRequest("POST", base+leases, pr)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	took := time.Since(start)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("a body that never ended: %d %s", resp.StatusCode, b)
		}
	}
	if took > 5*time.Second {
		t.Errorf("a body that never ended was answered after %v, want about the 1s request timeout", took)
	}

	// A watch outlives the request timeout.
	ctx := t.Context()
	wreq, _ := http.NewRequestWithContext(ctx, "GET", base+leases+"?watch=1&timeoutSeconds=3", nil)
	start = time.Now()
	wresp, err := http.DefaultClient.Do(wreq)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, wresp.Body)
	wresp.Body.Close()
	if d := time.Since(start); d < 2500*time.Millisecond {
		t.Errorf("a watch of 3s ended after %v: cut by the 1s request timeout", d)
	}
}
