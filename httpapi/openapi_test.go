package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// The OpenAPI documents every member serves, by name under /openapi/v3.
var oapiV3Docs = []string{
	"api", "api/v1", "apis", "apis/coordination.k8s.io",
	"apis/coordination.k8s.io/v1", "apis/coordination.k8s.io/v1beta1",
	"apis/coordination.k8s.io/v1alpha2", "apis/coordination.k8s.io/v1alpha1",
	"apis/rbac.authorization.k8s.io", "apis/rbac.authorization.k8s.io/v1",
	"version",
}

const (
	oapiV2Proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	oapiV3Proto = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// rawGet fetches path from base without following redirects, with the
// given header pairs.
func rawGet(t *testing.T, base, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	hc := &http.Client{Timeout: opTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestOpenAPI(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	base := c.Nodes[0].URL()

	t.Run("v3", func(t *testing.T) {
		resp, body := rawGet(t, base, "/openapi/v3", "Accept", "application/json, */*")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("root: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		var root handler3.OpenAPIV3Discovery
		if err := json.Unmarshal(body, &root); err != nil {
			t.Fatal(err)
		}
		var names []string
		for name := range root.Paths {
			names = append(names, name)
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(oapiV3Docs))
		if !slices.Equal(names, want) {
			t.Fatalf("root paths %v, want %v", names, want)
		}
		etag := resp.Header.Get("Etag")
		if etag == "" {
			t.Fatal("root has no ETag")
		}
		if r, _ := rawGet(t, base, "/openapi/v3", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
			t.Fatalf("root with If-None-Match: %d, want 304", r.StatusCode)
		}
		// Every member serves the same documents under the same hashes,
		// so a client's cache survives talking to another member.
		for i := 1; i < len(c.Nodes); i++ {
			if _, other := rawGet(t, c.Nodes[i].URL(), "/openapi/v3"); !bytes.Equal(other, body) {
				t.Fatalf("member %d's root differs:\n%s\n%s", i, other, body)
			}
		}

		for _, name := range oapiV3Docs {
			u := root.Paths[name].ServerRelativeURL
			pu, err := url.Parse(u)
			if err != nil || pu.Path != "/openapi/v3/"+name || pu.Query().Get("hash") == "" {
				t.Fatalf("%s: serverRelativeURL %q", name, u)
			}
			hash := pu.Query().Get("hash")
			resp, body := rawGet(t, base, u, "Accept", "application/json")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%s: %d %q", u, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if got := resp.Header.Get("Etag"); got != `"`+hash+`"` {
				t.Fatalf("%s: ETag %s, want the hash", u, got)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "public, immutable" || resp.Header.Get("Expires") == "" {
				t.Fatalf("%s: Cache-Control %q, Expires %q", u, cc, resp.Header.Get("Expires"))
			}
			if r, b := rawGet(t, base, u, "Accept", "application/json", "If-None-Match", `"`+hash+`"`); r.StatusCode != http.StatusNotModified || len(b) != 0 {
				t.Fatalf("%s with If-None-Match: %d, want 304", u, r.StatusCode)
			}
			// A stale hash is redirected to the current one.
			if r, _ := rawGet(t, base, "/openapi/v3/"+name+"?hash=0123", "Accept", "application/json"); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != u {
				t.Fatalf("%s with a stale hash: %d to %q, want 301 to %s", name, r.StatusCode, r.Header.Get("Location"), u)
			}
			var doc spec3.OpenAPI
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
			if doc.Paths == nil || len(doc.Paths.Paths) == 0 {
				t.Fatalf("%s has no paths", u)
			}
			if _, err := openapi_v3.ParseDocument(body); err != nil {
				t.Fatalf("%s: gnostic: %v", u, err)
			}
			// The protobuf form is the same document.
			resp, pb := rawGet(t, base, u, "Accept", oapiV3Proto)
			var pdoc openapi_v3.Document
			if resp.StatusCode != http.StatusOK || proto.Unmarshal(pb, &pdoc) != nil || len(pdoc.GetPaths().GetPath()) != len(doc.Paths.Paths) {
				t.Fatalf("%s as protobuf: %d %q, %d paths", u, resp.StatusCode, resp.Header.Get("Content-Type"), len(pdoc.GetPaths().GetPath()))
			}
		}

		// The Lease document: every operation, with what kubectl looks for.
		_, body = rawGet(t, base, root.Paths["apis/coordination.k8s.io/v1"].ServerRelativeURL)
		var doc spec3.OpenAPI
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		patch := doc.Paths.Paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"].Patch
		if patch == nil {
			t.Fatal("no PATCH on leases/{name}")
		}
		if gvk, _ := patch.Extensions["x-kubernetes-group-version-kind"].(map[string]any); gvk["kind"] != "Lease" || gvk["version"] != "v1" || gvk["group"] != "coordination.k8s.io" {
			t.Fatalf("PATCH GVK %v", patch.Extensions)
		}
		if !slices.ContainsFunc(patch.Parameters, func(p *spec3.Parameter) bool { return p.Name == "fieldValidation" && p.In == "query" }) {
			t.Fatal("PATCH does not declare fieldValidation: kubectl would not send Strict")
		}
		lease := doc.Components.Schemas["io.k8s.api.coordination.v1.Lease"]
		if lease == nil || fmt.Sprint(lease.Extensions["x-kubernetes-group-version-kind"]) != "[map[group:coordination.k8s.io kind:Lease version:v1]]" {
			t.Fatalf("Lease schema: %v", lease)
		}

		// Documents that do not exist are not found.
		for _, p := range []string{"/openapi/v3/apis/coordination.k8s.io/v2", "/openapi/v3/apis/apps/v1", "/openapi/v3/"} {
			if r, _ := rawGet(t, base, p); r.StatusCode != http.StatusNotFound {
				t.Fatalf("%s: %d, want 404", p, r.StatusCode)
			}
		}
	})

	t.Run("v2", func(t *testing.T) {
		resp, body := rawGet(t, base, "/openapi/v2", "Accept", "application/json")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("v2: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		var sw spec.Swagger
		if err := json.Unmarshal(body, &sw); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{
			"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
			"/apis/coordination.k8s.io/v1beta1/watch/leasecandidates",
			"/apis/coordination.k8s.io/v1alpha1/namespaces/{namespace}/leasecandidates",
			"/apis/coordination.k8s.io/v1alpha2/leasecandidates",
			"/apis/coordination.k8s.io/", "/apis/", "/api/", "/api/v1/", "/version/",
		} {
			if _, ok := sw.Paths.Paths[p]; !ok {
				t.Errorf("v2 lacks %s", p)
			}
		}
		if _, err := openapi_v2.ParseDocument(body); err != nil {
			t.Fatalf("gnostic: %v", err)
		}
		etag := resp.Header.Get("Etag")
		if r, _ := rawGet(t, base, "/openapi/v2", "Accept", "application/json", "If-None-Match", etag); etag == "" || r.StatusCode != http.StatusNotModified {
			t.Fatalf("v2 with If-None-Match %s: %d, want 304", etag, r.StatusCode)
		}

		// What kubectl asks for, and reads with kube-openapi's models.
		resp, pb := rawGet(t, base, "/openapi/v2", "Accept", oapiV2Proto, "Accept-Encoding", "gzip")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("v2 protobuf: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(pb))
		if err != nil {
			t.Fatal(err)
		}
		if pb, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
		var doc openapi_v2.Document
		if err := proto.Unmarshal(pb, &doc); err != nil {
			t.Fatal(err)
		}
		models, err := openapiproto.NewOpenAPIData(&doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{
			"io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1beta1.LeaseCandidate",
			"io.k8s.api.coordination.v1alpha2.LeaseCandidate", "io.k8s.api.coordination.v1alpha1.LeaseCandidate",
		} {
			kind, ok := models.LookupModel(m).(*openapiproto.Kind)
			if !ok {
				t.Fatalf("v2 model %s: %T", m, models.LookupModel(m))
			}
			if kind.GetExtensions()["x-kubernetes-group-version-kind"] == nil || kind.Fields["spec"] == nil {
				t.Fatalf("v2 model %s: %v", m, kind)
			}
		}
		spec := models.LookupModel("io.k8s.api.coordination.v1.LeaseSpec").(*openapiproto.Kind)
		if d := spec.Fields["holderIdentity"].GetDescription(); !strings.Contains(d, "holderIdentity contains the identity of the holder") {
			t.Fatalf("holderIdentity description %q", d)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		k := newOAPIKubectl(t, base)

		out, err := k.run("explain", "lease.spec")
		if err != nil || !strings.Contains(out, "holderIdentity") || !strings.Contains(out, "LeaseSpec is a specification of a Lease.") {
			t.Fatalf("explain lease.spec: %v\n%s", err, out)
		}
		out, err = k.run("explain", "lease.spec.holderIdentity")
		if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "holderIdentity contains the identity of the holder of a current lease.") {
			t.Fatalf("explain lease.spec.holderIdentity: %v\n%s", err, out)
		}
		out, err = k.run("explain", "leasecandidates.spec", "--api-version=coordination.k8s.io/v1beta1")
		if err != nil || !strings.Contains(out, "VERSION:    v1beta1") || !strings.Contains(out, "leaseName") || !strings.Contains(out, "strategy") {
			t.Fatalf("explain leasecandidates.spec (v1beta1): %v\n%s", err, out)
		}
		out, err = k.run("explain", "leasecandidates.spec.preferredStrategies", "--api-version=coordination.k8s.io/v1alpha1")
		if err != nil || !strings.Contains(out, "[]string") {
			t.Fatalf("explain leasecandidates.spec.preferredStrategies (v1alpha1): %v\n%s", err, out)
		}

		// The OpenAPI v2 form kubectl explain still offers reads
		// /openapi/v2 as protobuf.
		k.reset()
		out, err = k.run("explain", "lease.spec", "--output=plaintext-openapiv2")
		if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "holderIdentity contains the identity of the holder of a current lease.") {
			t.Fatalf("explain lease.spec --output=plaintext-openapiv2: %v\n%s", err, out)
		}
		if !k.sent(http.MethodGet, "/openapi/v2", "") {
			t.Fatalf("explain --output=plaintext-openapiv2 did not read /openapi/v2: %v", k.requests())
		}

		// create, with client-side validation (kubectl's default): kubectl
		// sees fieldValidation in the OpenAPI and leaves strictness to
		// the server.
		k.reset()
		out, err = k.run("create", "-f", k.file("lease.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: oapi\nspec:\n  holderIdentity: me\n  leaseDurationSeconds: 15\n"))
		if err != nil || !strings.Contains(out, "lease.coordination.k8s.io/oapi created") {
			t.Fatalf("create: %v\n%s", err, out)
		}
		if !k.sent(http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/default/leases", "fieldValidation=Strict") {
			t.Fatalf("create did not send fieldValidation=Strict: %v", k.requests())
		}
		if !k.sent(http.MethodGet, "/openapi/v3", "") {
			t.Fatalf("create did not read the OpenAPI v3 root: %v", k.requests())
		}
		out, err = k.run("get", "lease", "oapi", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil || out != "me" {
			t.Fatalf("get: %v %q", err, out)
		}

		k.reset()
		out, err = k.run("create", "-f", k.file("bad.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: oapi-bad\nspec:\n  holderIdentity: me\n  foo: bar\n"))
		if err == nil || !strings.Contains(out, `strict decoding error: unknown field "spec.foo"`) {
			t.Fatalf("create with spec.foo: %v\n%s", err, out)
		}
		if !k.sent(http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/default/leases", "fieldValidation=Strict") {
			t.Fatalf("create did not send fieldValidation=Strict: %v", k.requests())
		}

		// Client-side apply: a strategic merge patch built with the
		// OpenAPI v3 document, sent with fieldValidation=Strict.
		k.reset()
		out, err = k.run("apply", "-f", k.file("apply.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: oapi-apply\nspec:\n  holderIdentity: first\n"))
		if err != nil || !strings.Contains(out, "lease.coordination.k8s.io/oapi-apply created") {
			t.Fatalf("apply (create): %v\n%s", err, out)
		}
		out, err = k.run("apply", "-f", k.file("apply.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: oapi-apply\nspec:\n  holderIdentity: second\n"))
		if err != nil || !strings.Contains(out, "lease.coordination.k8s.io/oapi-apply configured") {
			t.Fatalf("apply (patch): %v\n%s", err, out)
		}
		if !k.sent(http.MethodPatch, "/apis/coordination.k8s.io/v1/namespaces/default/leases/oapi-apply", "fieldValidation=Strict") {
			t.Fatalf("apply did not patch with fieldValidation=Strict: %v", k.requests())
		}
		out, err = k.run("get", "lease", "oapi-apply", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil || out != "second" {
			t.Fatalf("get after apply: %v %q", err, out)
		}

		// The Lease document is immutable under its hash: kubectl fetched
		// it once (for explain) and took it from its cache since.
		if n := k.count(http.MethodGet, "/openapi/v3/apis/coordination.k8s.io/v1"); n != 1 {
			t.Fatalf("the v1 document was fetched %d times, want 1", n)
		}

		// LeaseCandidate in a version kubectl validates from another document.
		out, err = k.run("create", "-f", k.file("lc.yaml", "apiVersion: coordination.k8s.io/v1alpha1\nkind: LeaseCandidate\nmetadata:\n  name: oapi-lc\nspec:\n  leaseName: oapi\n  preferredStrategies: [OldestEmulationVersion]\n  binaryVersion: 1.32.0\n  emulationVersion: 1.32.0\n"))
		if err != nil || !strings.Contains(out, "created") {
			t.Fatalf("create v1alpha1 LeaseCandidate: %v\n%s", err, out)
		}
	})
}

// oapiKubectl runs the real kubectl against one member, through a proxy
// that records its requests.
type oapiKubectl struct {
	t          *testing.T
	dir        string
	kubeconfig string

	mu   sync.Mutex
	reqs []string // since reset: "METHOD /path?query"
	all  []string // before reset
}

func newOAPIKubectl(t *testing.T, target string) *oapiKubectl {
	const kubectl = "/usr/bin/kubectl"
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is required for this test: %v", err)
	}
	k := &oapiKubectl{t: t, dir: t.TempDir()}
	tu, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(tu)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		k.mu.Lock()
		k.reqs = append(k.reqs, req.Method+" "+req.URL.RequestURI())
		k.mu.Unlock()
		proxy.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	k.kubeconfig = k.file("kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster:
    server: http://%s
contexts:
- name: leasehold
  context:
    cluster: leasehold
    namespace: default
current-context: leasehold
`, ln.Addr()))
	return k
}

func (k *oapiKubectl) file(name, content string) string {
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// run runs kubectl with args and returns its combined output.
func (k *oapiKubectl) run(args ...string) (string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", filepath.Join(k.dir, "cache"), "--request-timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, "/usr/bin/kubectl", args...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir, "KUBECONFIG="+k.kubeconfig)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		k.t.Fatalf("kubectl %v timed out:\n%s", args, out)
	}
	k.t.Logf("kubectl %s: %v\n%s", strings.Join(args[6:], " "), err, out)
	return string(out), err
}

func (k *oapiKubectl) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.all = append(k.all, k.reqs...)
	k.reqs = nil
}

// count counts kubectl's requests for method path since it started.
func (k *oapiKubectl) count(method, path string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range append(slices.Clone(k.all), k.reqs...) {
		m, uri, _ := strings.Cut(r, " ")
		if p, _, _ := strings.Cut(uri, "?"); m == method && p == path {
			n++
		}
	}
	return n
}

func (k *oapiKubectl) requests() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.reqs)
}

// sent reports whether kubectl sent method path with query containing
// want.
func (k *oapiKubectl) sent(method, path, want string) bool {
	for _, r := range k.requests() {
		m, uri, _ := strings.Cut(r, " ")
		p, q, _ := strings.Cut(uri, "?")
		if m == method && p == path && strings.Contains(q, want) {
			return true
		}
	}
	return false
}
