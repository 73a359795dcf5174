package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCertsInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	var out, errOut bytes.Buffer
	if code := run([]string{"certs", "init", "--dir", dir, "--hosts", "127.0.0.1,node1.example", "--days", "30"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("ca.crt holds no certificate")
	}
	load := func(name string) *x509.Certificate {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, name+".key")); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s.key has mode %v", name, fi.Mode().Perm())
		}
		return pair.Leaf
	}
	verify := func(name string, c *x509.Certificate, usage x509.ExtKeyUsage, host string) {
		t.Helper()
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host}); err != nil {
			t.Errorf("%s for %v at %q: %v", name, usage, host, err)
		}
	}
	server, peer, admin := load("server"), load("peer"), load("admin")
	verify("server", server, x509.ExtKeyUsageServerAuth, "127.0.0.1")
	verify("server", server, x509.ExtKeyUsageServerAuth, "node1.example")
	verify("peer", peer, x509.ExtKeyUsageServerAuth, "127.0.0.1")
	verify("peer", peer, x509.ExtKeyUsageClientAuth, "")
	verify("admin", admin, x509.ExtKeyUsageClientAuth, "")
	if _, err := server.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the serving certificate authenticates clients")
	}
	if _, err := admin.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("the admin certificate serves")
	}
	if peer.Subject.CommonName != "leasehold-peer" || admin.Subject.CommonName != "admin" || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("subjects: peer %v, admin %v", peer.Subject, admin.Subject)
	}
	if d := time.Until(admin.NotAfter); d < 29*24*time.Hour || d > 31*24*time.Hour {
		t.Errorf("admin valid for %v, want 30 days", d)
	}

	// Never overwrites: a second run fails and leaves the CA as it was.
	errOut.Reset()
	if code := run([]string{"certs", "init", "--dir", dir}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "already exists") {
		t.Errorf("second run: exit %d: %s", code, errOut.String())
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); !bytes.Equal(again, caPEM) {
		t.Error("the second run changed ca.crt")
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"certs"}, {"certs", "init"}, {"certs", "init", "--dir", "x", "--days", "0"}, {"certs", "init", "--bogus"}, {"nope"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "Usage:") {
			t.Errorf("%q: exit %d: %s", args, code, errOut.String())
		}
	}
	var out bytes.Buffer
	if code := run([]string{"--help"}, &out, &out); code != 0 || !strings.Contains(out.String(), "certs init") {
		t.Errorf("--help: exit %d: %s", code, out.String())
	}
}

// TestClusterCommandUsage: bad invocations of the cluster commands exit 2
// with the reason, before any call.
func TestClusterCommandUsage(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	for _, args := range [][]string{
		{"member"},
		{"member", "frobnicate"},
		{"member", "add", "n4"},
		{"member", "add", "--peer-addr", "127.0.0.1:1"},
		{"member", "remove"},
		{"member", "remove", "n1", "n2"},
		{"member", "list", "-o", "yaml", "--endpoints", "http://127.0.0.1:1"},
		{"member", "list"},
		{"leader"},
		{"leader", "transfer", "n1", "n2", "--endpoints", "http://127.0.0.1:1"},
		{"endpoint"},
		{"endpoint", "status", "extra", "--endpoints", "http://127.0.0.1:1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a reason", args, code, stderr.String())
		}
	}
	// Nothing listens at the endpoint: the cluster refuses, exit 1.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"endpoint", "health", "--endpoints", "http://127.0.0.1:1", "--timeout", "1s"}, &stdout, &stderr); code != 1 || !bytes.Contains(stdout.Bytes(), []byte("is unhealthy")) {
		t.Errorf("endpoint health of nothing: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
}
