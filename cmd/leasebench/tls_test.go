package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// testPKI is a CA written to dir as ca.crt and ca.key (an EC key in
// PKCS #8, as openssl writes it), a serving certificate for 127.0.0.1
// and a client certificate, both made by `leasebench cert`.
type testPKI struct {
	dir                                 string
	caCert, caKey                       string
	serverCert, serverKey               string
	clientCert, clientKey               string
	otherClientCert, otherClientKey     string
	pool                                *x509.CertPool
	serverPair                          tls.Certificate
	clientUser, clientGroup, otherGroup string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: dir, caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		clientUser: "system:node:bench", clientGroup: "system:nodes", otherGroup: "system:masters"}
	writeFile(t, p.caCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, p.caKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))

	cert := func(name string, args ...string) (string, string) {
		out := filepath.Join(dir, name)
		if code := certMain(append([]string{"--ca-cert", p.caCert, "--ca-key", p.caKey, "--out", out}, args...)); code != 0 {
			t.Fatalf("leasebench cert %s: exit %d", name, code)
		}
		return out + ".crt", out + ".key"
	}
	p.serverCert, p.serverKey = cert("server", "--cn", "server", "--ip", "127.0.0.1", "--usage", "server")
	p.clientCert, p.clientKey = cert("client", "--cn", p.clientUser, "--o", p.clientGroup, "--usage", "client")
	p.otherClientCert, p.otherClientKey = cert("admin", "--cn", "admin", "--o", p.otherGroup, "--usage", "client")
	p.pool = x509.NewCertPool()
	p.pool.AddCert(mustParse(t, der))
	if p.serverPair, err = tls.LoadX509KeyPair(p.serverCert, p.serverKey); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// server starts an HTTP/2 and HTTP/1.1 TLS server that requires a client
// certificate of the CA, as etcd's --client-cert-auth does (leasehold asks
// for one and answers 401 without), and counts its connections in use.
func (p *testPKI) server(t *testing.T, h http.Handler) (*httptest.Server, *connCounter) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the transport's unused extra dials, cut off
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.serverPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool}
	cc := &connCounter{used: map[net.Conn]bool{}}
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateActive {
			cc.mu.Lock()
			cc.used[c] = true
			cc.mu.Unlock()
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, cc
}

// connCounter counts the connections that carried a request. (Requests
// that start together on a new transport may each dial one before the
// first has negotiated HTTP/2; the transport then closes the extra ones
// unused.)
type connCounter struct {
	mu   sync.Mutex
	used map[net.Conn]bool
}

func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.used)
}

// TestCertAndHTTP2: `leasebench cert` makes certificates the server and
// the client accept, with the client's user and group in its subject and
// the SAN the client dials; --cacert/--cert/--key give a transport that
// speaks HTTP/2 over TLS with the client certificate.
func TestCertAndHTTP2(t *testing.T) {
	p := newTestPKI(t)
	srv, _ := p.server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0]
		fmt.Fprintf(w, "%s %s %v", r.Proto, c.Subject.CommonName, c.Subject.Organization)
	}))
	cfg, err := tlsFiles{caCert: p.caCert, cert: p.clientCert, key: p.clientKey}.load()
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: newTransport(cfg, 2, false)}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if want := "HTTP/2.0 system:node:bench [system:nodes]"; body.String() != want || resp.Proto != "HTTP/2.0" {
		t.Fatalf("got %q over %s, want %q over HTTP/2.0", body.String(), resp.Proto, want)
	}

	// A certificate's key must match; a CA file must hold a certificate.
	if _, err := (tlsFiles{cert: p.clientCert, key: p.serverKey}).load(); err == nil {
		t.Fatal("a certificate with another's key loaded")
	}
	if _, err := (tlsFiles{cert: p.clientCert}).load(); err == nil {
		t.Fatal("a certificate without its key loaded")
	}
	if _, err := (tlsFiles{caCert: p.clientKey}).load(); err == nil {
		t.Fatal("a key file loaded as a CA")
	}
	if cfg, err := (tlsFiles{}).load(); cfg != nil || err != nil {
		t.Fatalf("no files: %v %v, want plaintext", cfg, err)
	}
	if code := certMain([]string{"--ca-cert", p.caCert, "--ca-key", p.caKey, "--cn", "x", "--ip", "not-an-ip", "--out", filepath.Join(p.dir, "x")}); code != 2 {
		t.Fatalf("a bad IP: exit %d, want 2", code)
	}
}

// TestCPUMeterOverTLS: the nodes' /metrics are read with the metrics
// client certificate, and are unknown without one.
func TestCPUMeterOverTLS(t *testing.T) {
	p := newTestPKI(t)
	srv, _ := p.server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.PeerCertificates[0].Subject.Organization[0] != p.otherGroup {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		fmt.Fprintln(w, "process_cpu_seconds_total 2.5\nleasehold_raft_boltdb_storeLogs_count 7")
	}))
	admin, err := tlsFiles{caCert: p.caCert, cert: p.otherClientCert, key: p.otherClientKey}.load()
	if err != nil {
		t.Fatal(err)
	}
	got := newCPUMeter([]string{srv.URL}, "leasehold", admin).read(context.Background())
	if !got.cpuOK || got.cpuSeconds != 2.5 || !got.logsOK || got.logWrites != 7 {
		t.Fatalf("over TLS as admin: %+v; want 2.5 s and 7 log writes", got)
	}
	user, _ := tlsFiles{caCert: p.caCert, cert: p.clientCert, key: p.clientKey}.load()
	if got := newCPUMeter([]string{srv.URL}, "leasehold", user).read(context.Background()); got.cpuOK {
		t.Fatalf("a client refused /metrics: %+v; want unknown", got)
	}
	if got := newCPUMeter([]string{srv.URL}, "leasehold", nil).read(context.Background()); got.cpuOK {
		t.Fatalf("plaintext against TLS: %+v; want unknown", got)
	}
}

// fakeLeases answers the REST calls of the renew workload: creates,
// renewals (each a new resourceVersion) and gets, in JSON.
func fakeLeases(t *testing.T) http.Handler {
	var mu sync.Mutex
	rv := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			fmt.Fprintln(w, "process_cpu_seconds_total 1")
			return
		}
		var l coordinationv1.Lease
		if r.Method != http.MethodGet {
			if err := json.NewDecoder(r.Body).Decode(&l); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		} else {
			l.Name = r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		}
		mu.Lock()
		rv++
		l.ResourceVersion = strconv.Itoa(rv)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_ = json.NewEncoder(w).Encode(&l)
	})
}

// TestRunOverTLS: the renew workload over TLS speaks HTTP/2 with a
// connection per client (each opened before the measured time), or one
// connection shared by all with --shared-connection, or HTTP/1.1 with
// --http1, and says so in its result.
func TestRunOverTLS(t *testing.T) {
	p := newTestPKI(t)
	cfg, err := tlsFiles{caCert: p.caCert, cert: p.clientCert, key: p.clientKey}.load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shared, http1 bool
		proto         string
		conns         int // setup's, the clients', the CPU meter's (its two reads share one)
		connections   string
	}{
		{false, false, "HTTP/2.0", 1 + 4 + 1, "per client"},
		{true, false, "HTTP/2.0", 1 + 1, "multiplexed"},
		{false, true, "HTTP/1.1", 0, "per client"}, // setup's creates open several HTTP/1.1 connections
	} {
		srv, conns := p.server(t, fakeLeases(t))
		res, err := run(context.Background(), config{
			target: "leasehold", endpoints: []string{srv.URL, srv.URL}, workload: "renew",
			duration: 200 * time.Millisecond, clients: 4, leases: 8, format: "json", namespace: "ns",
			tls: cfg, metricsTLS: cfg, sharedConn: tc.shared, http1: tc.http1,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops == 0 || res.Errors != 0 || !res.TLS || res.Protocol != tc.proto {
			t.Fatalf("%+v: %d ops, %d errors (%s), TLS %v, protocol %q", tc, res.Ops, res.Errors, res.FirstErr, res.TLS, res.Protocol)
		}
		if got := conns.count(); tc.conns > 0 && got != tc.conns {
			t.Fatalf("%+v: %d connections, want %d", tc, got, tc.conns)
		}
		if !strings.Contains(res.Connections, tc.connections) {
			t.Fatalf("%+v: connections %q", tc, res.Connections)
		}
	}
}

// TestTLSComparison: runs over TLS are set against etcd's over TLS and
// against their own plaintext runs of the same workload and label, and
// the targets are judged.
func TestTLSComparison(t *testing.T) {
	mk := func(target, label string, tls bool, ops float64) *Result {
		r := &Result{Target: target, Workload: "renew", Label: label, Clients: 64, OpsPerSec: ops, Ops: int64(ops * 5), Seconds: 5,
			ServerCPUSeconds: ops * 5 * 200e-6, ClientCPUSeconds: ops * 5 * 50e-6, TLS: tls}
		if tls {
			r.Protocol, r.Connections = "HTTP/2.0", "a connection per client and node"
			if target == "etcd" {
				r.Protocol, r.Connections = "gRPC (HTTP/2)", "one per member"
			}
		}
		return r
	}
	results := []*Result{
		mk("leasehold", "64-clients", false, 5000), mk("etcd", "64-clients", false, 5000),
		mk("leasehold", "64-clients", false, 5200), mk("etcd", "64-clients", false, 4800),
		mk("leasehold", "other", false, 100), mk("etcd", "other", false, 100), // no TLS run: no row
		mk("leasehold", "64-clients", true, 4600), mk("etcd", "64-clients", true, 4000),
		mk("leasehold", "64-clients", true, 4400), mk("etcd", "64-clients", true, 4200),
		mk("leasehold", "slow", false, 1000), mk("leasehold", "slow", true, 800), mk("etcd", "slow", true, 900),
	}
	results[len(results)-1].Errors = 3
	results[len(results)-2].ServerCPUSeconds *= 1.5 // leasehold's slow TLS run: 300 + 50 µs/op against 200 + 50

	var out bytes.Buffer
	printTLSComparison(&out, results)
	got := strings.Join(strings.Fields(out.String()), " ") // the table's padding aside
	for _, want := range []string{
		"renew 64-clients 64 4500 4100 1.10", // medians over TLS and their ratio
		"- 0.88 0.84",                        // TLS/plain: 4500/5100, 4100/4900
		"200 + 50 → 200 + 50",
		"2/2 (plain 2/2)",
		"leasehold over TLS: HTTP/2.0, a connection per client and node",
		"etcd over TLS: gRPC (HTTP/2), one per member",
		"target: renew 64-clients over TLS: leasehold / etcd 1.10 (target ≥ 1.00): met",
		"target: renew 64-clients: TLS costs leasehold 11.8 % of its plaintext ops/s (target ≤ 15 %): met",
		"target: renew slow over TLS: leasehold / etcd 0.89 (target ≥ 1.00): not met",
		"target: renew slow: TLS costs leasehold 20.0 % of its plaintext ops/s (target ≤ 15 %): not met",
		"renew slow: leasehold ×1.40 (28.6 %)", // etcd has no plaintext run of it
		"note: renew slow over TLS, etcd: 3 errors",
		"renew 64-clients: leasehold ×1.00 (0.0 %), etcd ×1.00 (0.0 %)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "renew other") {
		t.Errorf("a workload without TLS runs has a row:\n%s", got)
	}
	out.Reset()
	printTLSComparison(&out, results[:4])
	if !strings.Contains(out.String(), "no run over TLS") {
		t.Errorf("plaintext only: %q", out.String())
	}
}
