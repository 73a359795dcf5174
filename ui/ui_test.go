package ui_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/ui"
)

func get(t *testing.T, h http.Handler, method, target string, hdr http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler_Assets(t *testing.T) {
	h := ui.Handler()
	want := map[string]string{
		"/ui/":            "text/html; charset=utf-8",
		"/ui/ui.js":       "text/javascript; charset=utf-8",
		"/ui/election.js": "text/javascript; charset=utf-8",
		"/ui/ui.css":      "text/css; charset=utf-8",
	}
	paths := ui.Paths()
	if len(paths) != len(want) {
		t.Fatalf("Paths() = %q, want the %d of %v", paths, len(want), want)
	}
	for _, p := range paths {
		rec := get(t, h, http.MethodGet, p, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, rec.Code)
		}
		hd := rec.Header()
		if ct := hd.Get("Content-Type"); ct != want[p] {
			t.Errorf("GET %s: Content-Type %q, want %q", p, ct, want[p])
		}
		if cc := hd.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", p, cc)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", p)
		}
		csp := hd.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "script-src 'self'") ||
			!strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", p, csp)
		}
		etag := hd.Get("ETag")
		if etag == "" || rec.Body.Len() == 0 {
			t.Fatalf("GET %s: ETag %q, %d bytes", p, etag, rec.Body.Len())
		}
		// Revalidation: the same ETag is a 304 without a body.
		if rec := get(t, h, http.MethodGet, p, http.Header{"If-None-Match": {etag}}); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes", p, rec.Code, rec.Body.Len())
		}
		if rec := get(t, h, http.MethodHead, p, nil); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d, %d bytes", p, rec.Code, rec.Body.Len())
		}
	}
}

func TestHandler_RedirectAndErrors(t *testing.T) {
	h := ui.Handler()
	// Relative: behind a proxy's prefix the browser stays under it.
	rec := get(t, h, http.MethodGet, "/ui?namespace=a", nil)
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "ui/?namespace=a" {
		t.Errorf("GET /ui: %d to %q, want 301 to ui/?namespace=a", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, http.MethodHead, "/ui", nil); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "ui/" {
		t.Errorf("HEAD /ui: %d to %q, want 301 to ui/", rec.Code, rec.Header().Get("Location"))
	}
	for _, p := range []string{"/ui/index.html", "/ui/nope.js", "/ui/assets/ui.js", "/ui/../go.mod", "/uix"} {
		if rec := get(t, h, http.MethodGet, p, nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, rec.Code)
		}
	}
	rec = get(t, h, http.MethodPost, "/ui/", nil)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /ui/: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestAssets_SelfContained: the page loads nothing from elsewhere and runs
// no inline code, which the Content-Security-Policy would refuse anyway.
func TestAssets_SelfContained(t *testing.T) {
	files, err := filepath.Glob("assets/*")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := external.Find(b); m != nil {
			t.Errorf("%s refers to %s", f, m)
		}
	}
	html, err := os.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllSubmatch(html, -1)
	if len(scripts) == 0 {
		t.Error("index.html loads no script")
	}
	for _, m := range scripts {
		if !bytes.Contains(m[1], []byte(`src="`)) || len(bytes.TrimSpace(m[2])) > 0 {
			t.Errorf("index.html has inline script: %s", m[0])
		}
	}
	for _, bad := range []*regexp.Regexp{regexp.MustCompile(`\son[a-z]+\s*=`), regexp.MustCompile(`\sstyle\s*=`)} {
		if m := bad.Find(html); m != nil {
			t.Errorf("index.html has inline code or style: %q", m)
		}
	}
	// The page reaches the API only by URLs relative to itself (apiURL), so
	// that it works under a proxy's prefix (kubectl proxy --api-prefix).
	js, err := os.ReadFile("assets/ui.js")
	if err != nil {
		t.Fatal(err)
	}
	if n, rel := bytes.Count(js, []byte("fetch(")), bytes.Count(js, []byte("fetch(apiURL(")); n != rel || n == 0 {
		t.Errorf("ui.js calls fetch %d times, %d of them with apiURL: every request must go through apiURL", n, rel)
	}
	// Every file the page names is served.
	served := map[string]bool{}
	for _, p := range ui.Paths() {
		served[p] = true
	}
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllSubmatch(html, -1) {
		ref := string(m[1])
		if strings.HasPrefix(ref, "data:") {
			continue
		}
		if !served[ui.Prefix+ref] {
			t.Errorf("index.html refers to %s, which is not served", ref)
		}
	}
	for _, m := range regexp.MustCompile(`import .* from "\./([^"]+)"`).FindAllSubmatch(js, -1) {
		if !served[ui.Prefix+string(m[1])] {
			t.Errorf("ui.js imports %s, which is not served", m[1])
		}
	}
}

// TestOpenPaths: with authentication on, the page's files need no
// credentials (httpapi lists each as open), and the API still does.
func TestOpenPaths(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("t0k3n,admin,u0,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Config{TokenAuthFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 1, func(_ string, cfg *httpapi.Config) { cfg.Authenticator = authn })
	base := e.Nodes[0].URL()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(path string) *http.Response {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, p := range ui.Paths() {
		resp := fetch(p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without credentials: %d, want 200", p, resp.StatusCode)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s through the API server: Cache-Control %q", p, cc)
		}
	}
	if resp := fetch("/ui"); resp.StatusCode != http.StatusMovedPermanently {
		t.Errorf("GET /ui: %d, want 301", resp.StatusCode)
	}
	for _, p := range []string{"/ui/nope", "/apis/coordination.k8s.io/v1/leases", "/cluster/status"} {
		if resp := fetch(p); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", p, resp.StatusCode)
		}
	}
}
