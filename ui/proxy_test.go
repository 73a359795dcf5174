package ui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// kubectlPath is the kubectl the proxy tests run.
const kubectlPath = "/usr/bin/kubectl"

// tlsFront serves the plain-HTTP API at target over HTTPS, as a node with
// --tls-cert-file does: kubectl sends a kubeconfig's credentials over TLS
// only. It returns the URL and the certificate's PEM.
func tlsFront(t *testing.T, target string) (string, []byte) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // watch events as they come
	srv := httptest.NewUnstartedServer(rp)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// startKubectlProxy runs `kubectl proxy` with the given --api-prefix on a
// free port, signed in to server (HTTPS, its CA's certificate ca) with
// token, and returns its base URL (with the prefix). The proxy is stopped
// at the end of the test.
func startKubectlProxy(t *testing.T, server string, ca []byte, token, prefix string) string {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Fatalf("this test runs kubectl proxy: %v", err)
	}
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: viewer
  user: {token: %q}
contexts:
- name: leasehold
  context: {cluster: leasehold, user: viewer}
current-context: leasehold
`, server, base64.StdEncoding.EncodeToString(ca), token)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(dir, "cache"),
		"proxy", "--address=127.0.0.1", "--port=0", "--api-prefix="+prefix)
	cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG="+kubeconfig)
	cmd.WaitDelay = 2 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start kubectl proxy: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		serving := regexp.MustCompile(`Starting to serve on (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		for sc.Scan() { // keep the pipe drained
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a + prefix
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatalf("kubectl proxy did not say where it serves within 20s; stderr:\n%s", stderr.String())
		return ""
	}
}

// TestPage_KubectlProxy: through kubectl proxy the page needs no
// credentials of its own (kubectl signs in; the node is behind TLS, as
// make cluster's are, since kubectl sends credentials over TLS only), and it works under the
// proxy's default prefix (http://127.0.0.1:8001/ui/, on a port of the
// test's) and under another one (--api-prefix=/k8s/), where it must
// reach its assets and the API by relative URLs: the Leases show, live,
// and the cluster panel reads the members. /ui redirects to ui/ under the
// prefix.
func TestPage_KubectlProxy(t *testing.T) {
	t.Parallel()
	const token = "proxy-admin-token"
	e, cs := newTokenEnv(t, token, "admin")
	mustLease(t, cs, "proxied", "first", "holder-1", 60, time.Now())
	front, ca := tlsFront(t, e.Nodes[0].URL())

	for i, tc := range []struct{ name, prefix, open string }{
		{"default prefix", "/", "ui/"},
		{"prefix /k8s/", "/k8s/", "ui"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := startKubectlProxy(t, front, ca, token, tc.prefix)
			tb := openTab(t, base+tc.open, tabOptions{})
			tb.waitFor("the Lease through the proxy", `!!document.querySelector(`+rowSelector("proxied/first")+`) && document.getElementById("conn").dataset.state === "live"`, 15*time.Second)
			if p := eval[string](tb, `location.pathname`); p != tc.prefix+"ui/" {
				t.Errorf("the page is at %s, want %sui/", p, tc.prefix)
			}
			if eval[bool](tb, `!document.getElementById("login").hidden`) {
				t.Error("the login box shows behind kubectl proxy")
			}
			// Live through the proxy: a watch event arrives.
			name := fmt.Sprintf("later-%d", i)
			mustLease(t, cs, "proxied", name, "holder-2", 60, time.Now())
			tb.waitFor("a Lease created later", `!!document.querySelector(`+rowSelector("proxied/"+name)+`)`, 5*time.Second)
			// The cluster panel reaches /cluster/* under the prefix.
			tb.waitFor("the members", `document.getElementById("cluster").dataset.source === "members" && document.querySelectorAll("#members tbody tr").length === 1`, 10*time.Second)
		})
	}
}
