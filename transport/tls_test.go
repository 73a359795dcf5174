package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/internal/testpki"
)

// countingHandler answers every RPC and counts the calls that reached it.
type countingHandler struct {
	calls atomic.Int32
}

func (h *countingHandler) Forward(_ context.Context, req []byte) []byte {
	h.calls.Add(1)
	return req
}

func (h *countingHandler) ReadIndex(context.Context, Asker) (uint64, error) {
	h.calls.Add(1)
	return 42, nil
}

func (h *countingHandler) NodeInfo(context.Context) *NodeInfo {
	h.calls.Add(1)
	return &NodeInfo{Name: "counting"}
}

func (h *countingHandler) Apply(_ context.Context, cmd []byte) (uint64, []byte, error) {
	h.calls.Add(1)
	return 7, append([]byte("applied "), cmd...), nil
}

// logBuffer collects a mux's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitLogged waits until the log holds every one of parts on one line.
func (b *logBuffer) waitLogged(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, line := range strings.Split(b.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q; log:\n%s", parts, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// peerFiles is the PeerTLS of a node holding cert under ca.
func peerFiles(ca *testpki.CA, cert *testpki.Cert) *PeerTLS {
	return &PeerTLS{CertFile: cert.CertFile, KeyFile: cert.KeyFile, TrustedCAFile: ca.CertFile}
}

// tlsServer serves h on a TLS mux with a 5s handshake deadline (a loaded
// machine may take a second over a handshake) and returns it with its log
// and accept counter.
func tlsServer(t *testing.T, addr string, files *PeerTLS, h Handler) (*Mux, *logBuffer, *countingListener) {
	return tlsServerDeadline(t, addr, files, h, 5*time.Second)
}

// tlsServerDeadline is tlsServer with the given handshake deadline.
func tlsServerDeadline(t *testing.T, addr string, files *PeerTLS, h Handler, deadline time.Duration) (*Mux, *logBuffer, *countingListener) {
	t.Helper()
	logs := &logBuffer{}
	m, err := Listen(Config{Addr: addr, TLS: files, Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	m.handshakeTimeout = deadline
	cl := &countingListener{Listener: m.ln}
	m.ln = cl
	m.Serve(h)
	t.Cleanup(func() { m.Close() })
	return m, logs, cl
}

// tlsClient returns a client dialling through a TLS mux of its own.
func tlsClient(t *testing.T, files *PeerTLS, rewrite func(string) string) (*Client, *Mux) {
	t.Helper()
	m, err := Listen(Config{Addr: "127.0.0.1:0", TLS: files, DialRewrite: rewrite})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cl := NewClient(m)
	t.Cleanup(func() {
		cl.Close()
		m.Close()
	})
	return cl, m
}

// forwardBytes is what a peer sends to forward a write: the RPC type byte
// and a gob-encoded request.
func forwardBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteByte(connRPC)
	req := &rpcRequest{Kind: rpcForward, Request: []byte(`{"Method":"DELETE","RequestURI":"/cluster/members/n3"}`), Timeout: time.Second}
	if err := gob.NewEncoder(&b).Encode(req); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// dialRaw completes a TLS client handshake with the server at addr,
// trusting ca and presenting cert (no certificate if nil) whatever CAs the
// server asks for. Under TLS 1.3 the server's verdict on the certificate
// comes after this returns.
func dialRaw(t *testing.T, addr string, ca *testpki.CA, cert *testpki.Cert) *tls.Conn {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(raw, &tls.Config{
		RootCAs:    ca.Pool(),
		ServerName: "127.0.0.1",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			c := cert.TLSCertificate()
			return &c, nil
		},
	})
	t.Cleanup(func() { tc.Close() })
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	_ = tc.Handshake() // a TLS 1.2 refusal fails here; the reads below see it too
	return tc
}

// expectRefused reads from a connection the server should have refused:
// it must end without the server's acceptance byte.
func expectRefused(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := io.ReadFull(c, b[:])
	var ne net.Error
	switch {
	case n == 1:
		t.Errorf("%s: the server accepted the connection (sent %#x)", what, b[0])
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: connection still open after 5s", what)
	}
}

// TestPeerTLSRefusesPlainTCP: a stranger speaking the plain protocol — a
// forwarded write, a Raft connection, an apply stream — is closed before
// anything it sent is decoded, and logged. The same bytes reach the handler
// of a plain-TCP mux.
func TestPeerTLSRefusesPlainTCP(t *testing.T) {
	ca := testpki.NewCA(t)
	h := &countingHandler{}
	srv, logs, _ := tlsServer(t, "127.0.0.1:0", peerFiles(ca, ca.Issue(t, "n1", nil)), h)
	payloads := map[string][]byte{
		"forward":      forwardBytes(t),
		"raft":         append([]byte{connRaft}, bytes.Repeat([]byte{0}, 64)...),
		"apply stream": append([]byte{connApplyStream}, forwardBytes(t)[1:]...),
	}
	for what, p := range payloads {
		c, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, what)
		logs.waitLogged(t, "TLS handshake failed", c.LocalAddr().String())
	}
	// A port probe (connect, close) is no refusal.
	probe, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	probeAddr := probe.LocalAddr().String()
	probe.Close()
	logs.waitLogged(t, "closed before the TLS handshake", probeAddr)
	if strings.Contains(logs.String(), "TLS handshake failed: remote="+probeAddr) {
		t.Error("a port probe logged as a refused connection")
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}
	if n := len(srv.raftCh); n != 0 {
		t.Errorf("%d connections handed to Raft", n)
	}

	// The control: a plain mux executes the same forward.
	plain, _ := newServer(t, "127.0.0.1:0", h)
	c, err := net.DialTimeout("tcp", plain.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(payloads["forward"]); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var resp rpcResponse
	if err := gob.NewDecoder(c).Decode(&resp); err != nil || resp.Response == nil || h.calls.Load() != 1 {
		t.Fatalf("plain mux: %v, %+v, %d calls", err, resp, h.calls.Load())
	}
}

// TestPeerTLSRefusesBadClientCertificates: a client whose certificate is
// missing, from another CA, expired, without clientAuth, or with a CN other
// than the allowed one is closed with nothing it sent decoded; a peer's
// certificate is accepted.
func TestPeerTLSRefusesBadClientCertificates(t *testing.T) {
	ca := testpki.NewCA(t)
	foreign := testpki.NewCA(t)
	files := peerFiles(ca, ca.Issue(t, "peer", nil))
	files.AllowedCN = "peer"
	h := &countingHandler{}
	srv, logs, _ := tlsServer(t, "127.0.0.1:0", files, h)
	addr := srv.Addr().String()

	cases := []struct {
		name   string
		cert   *testpki.Cert
		reason string // in the server's log
	}{
		{"no certificate", nil, "client didn't provide a certificate"},
		{"foreign CA", foreign.Issue(t, "peer", nil), "unknown authority"},
		{"expired", ca.Issue(t, "peer", nil, testpki.Expired()), "expired"},
		{"serverAuth only", ca.Issue(t, "peer", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth)), "key usage"},
		{"wrong CN", ca.Issue(t, "intruder", nil), `is not the allowed CN`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr, ca, tc.cert)
			_, _ = c.Write(forwardBytes(t)) // may fail: the server may have closed already
			expectRefused(t, c, tc.name)
			logs.waitLogged(t, "TLS handshake failed", c.LocalAddr().String(), tc.reason)
		})
	}
	// A node whose certificate is refused learns it when dialling: nothing
	// was sent, the outcome is not unknown.
	cl, _ := tlsClient(t, peerFiles(ca, ca.Issue(t, "intruder", nil)), nil)
	_, err := cl.Forward(ctxFor(t, 5*time.Second), addr, nil)
	if err == nil || errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "dial peer") {
		t.Errorf("Forward with a refused certificate: %v, want a dial error", err)
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("handler called %d times", n)
	}

	// The allowed peer gets through.
	c := dialRaw(t, addr, ca, ca.Issue(t, "peer", nil))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != tlsAccepted {
		t.Fatalf("peer certificate: read %#x, %v; want the acceptance byte", b[0], err)
	}
	cl, _ = tlsClient(t, peerFiles(ca, ca.Issue(t, "peer", nil)), nil)
	if idx, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{}); err != nil || idx != 42 {
		t.Fatalf("ReadIndex as an allowed peer: %d, %v", idx, err)
	}
}

// TestPeerTLSSilentClientClosed: a connection that sends nothing, or stops
// after the handshake, is closed at the handshake deadline.
func TestPeerTLSSilentClientClosed(t *testing.T) {
	ca := testpki.NewCA(t)
	h := &countingHandler{}
	srv, _, _ := tlsServerDeadline(t, "127.0.0.1:0", peerFiles(ca, ca.Issue(t, "n1", nil)), h, 300*time.Millisecond)
	addr := srv.Addr().String()

	start := time.Now()
	silent, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	expectClosed(t, silent, "silent connection")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("silent connection closed after %v, before the 300ms deadline", d)
	}

	// Handshaken, accepted, but no type byte.
	c := dialRaw(t, addr, ca, ca.Issue(t, "n2", nil))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != tlsAccepted {
		t.Fatalf("read %#x, %v; want the acceptance byte", b[0], err)
	}
	expectClosed(t, c, "connection without a type byte")
	deadline := time.Now().Add(5 * time.Second)
	for srv.openConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still tracked", srv.openConns())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}
}

// TestPeerTLSRoundTrip: between peers, RPCs, the apply stream and the Raft
// layer all work over TLS, and pooled connections are reused.
func TestPeerTLSRoundTrip(t *testing.T) {
	ca := testpki.NewCA(t)
	serverFiles := peerFiles(ca, ca.Issue(t, "peer", nil))
	serverFiles.AllowedCN = "peer"
	h := &countingHandler{}
	srv, _, accepts := tlsServer(t, "127.0.0.1:0", serverFiles, h)
	addr := srv.Addr().String()
	cl, dialer := tlsClient(t, peerFiles(ca, ca.Issue(t, "peer", nil)), nil)
	ctx := ctxFor(t, 10*time.Second)

	for range 3 {
		if idx, err := cl.ReadIndex(ctx, addr, Asker{ID: "n2"}); err != nil || idx != 42 {
			t.Fatalf("ReadIndex: %d, %v", idx, err)
		}
		resp, err := cl.Forward(ctx, addr, []byte("body"))
		if err != nil || string(resp) != "body" {
			t.Fatalf("Forward: %+v, %v", resp, err)
		}
		idx, res, err := cl.Apply(ctx, addr, []byte("cmd"))
		if err != nil || idx != 7 || string(res) != "applied cmd" {
			t.Fatalf("Apply: %d, %q, %v", idx, res, err)
		}
		idx, res, err = cl.applyOnce(ctx, addr, []byte("one"))
		if err != nil || idx != 7 || string(res) != "applied one" {
			t.Fatalf("Apply on a connection of its own: %d, %q, %v", idx, res, err)
		}
	}
	// One pooled RPC connection and one apply stream.
	if n := accepts.accepted.Load(); n != 2 {
		t.Errorf("%d connections accepted, want 2", n)
	}
	cl.mu.Lock()
	pooled := cl.idle[addr][0].c
	cl.mu.Unlock()
	tc, ok := pooled.(*tls.Conn)
	if !ok {
		t.Fatalf("pooled connection is a %T", pooled)
	}
	if st := tc.ConnectionState(); st.Version != tls.VersionTLS13 || len(st.VerifiedChains) == 0 {
		t.Errorf("pooled connection: version %#x, %d verified chains", st.Version, len(st.VerifiedChains))
	}
	if !alive(pooled) {
		t.Error("idle pooled TLS connection not alive")
	}

	// Raft.
	out, err := dialer.RaftLayer().Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatalf("raft dial: %v", err)
	}
	defer out.Close()
	in, err := srv.RaftLayer().Accept()
	if err != nil {
		t.Fatalf("raft accept: %v", err)
	}
	defer in.Close()
	if st := in.(*trackedConn).Conn.(*tls.Conn).ConnectionState(); st.PeerCertificates[0].Subject.CommonName != "peer" {
		t.Errorf("accepted Raft connection from CN %q", st.PeerCertificates[0].Subject.CommonName)
	}
	_ = out.SetDeadline(time.Now().Add(5 * time.Second))
	_ = in.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := out.Write([]byte("vote")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(in, got); err != nil || string(got) != "vote" {
		t.Fatalf("raft read %q, %v", got, err)
	}
	if _, err := in.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, got[:2]); err != nil || string(got[:2]) != "ok" {
		t.Fatalf("raft answer %q, %v", got[:2], err)
	}
	if err := in.Close(); err != nil {
		t.Errorf("close accepted Raft connection: %v", err)
	}
	expectClosed(t, out, "Raft connection closed by the server")
	if n := srv.openConns(); n != 2 {
		t.Errorf("%d connections tracked after the Raft one closed, want 2", n)
	}
}

// TestPeerTLSDialerRefusesServers: a dialler refuses a server whose
// certificate is from another CA or does not name the peer address it
// dialled, even when DialRewrite routes the connection elsewhere.
func TestPeerTLSDialerRefusesServers(t *testing.T) {
	ca := testpki.NewCA(t)
	foreign := testpki.NewCA(t)
	// The foreign server would accept our peers: it trusts both CAs.
	bundle := foreign.Dir + "/bundle.crt"
	if err := os.WriteFile(bundle, append(ca.CertPEM(), foreign.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	foreignCert := foreign.Issue(t, "peer", nil)
	h := &countingHandler{}
	impostor, _, _ := tlsServer(t, "127.0.0.1:0", &PeerTLS{CertFile: foreignCert.CertFile, KeyFile: foreignCert.KeyFile, TrustedCAFile: bundle}, h)

	cl, dialer := tlsClient(t, peerFiles(ca, ca.Issue(t, "peer", nil)), nil)
	_, err := cl.ReadIndex(ctxFor(t, 5*time.Second), impostor.Addr().String(), Asker{})
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("ReadIndex from a foreign server: %v, want x509.UnknownAuthorityError", err)
	}
	if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), impostor.Addr().String(), []byte("c")); !errors.As(err, &unknown) {
		t.Errorf("Apply to a foreign server: %v, want x509.UnknownAuthorityError", err)
	}
	if _, err := dialer.RaftLayer().Dial(raft.ServerAddress(impostor.Addr().String()), 5*time.Second); !errors.As(err, &unknown) {
		t.Errorf("Raft dial to a foreign server: %v, want x509.UnknownAuthorityError", err)
	}
	if n := h.calls.Load(); n != 0 {
		t.Errorf("handler called %d times", n)
	}

	// A server of the right CA whose certificate names n1.peers.test only.
	named := ca.Issue(t, "peer", nil, testpki.WithIPs(), testpki.WithDNSNames("n1.peers.test"))
	srv, _, _ := tlsServer(t, "127.0.0.1:0", peerFiles(ca, named), h)
	// Dialled at 127.0.0.1 it is refused,
	var hostErr x509.HostnameError
	if _, err := cl.ReadIndex(ctxFor(t, 5*time.Second), srv.Addr().String(), Asker{}); !errors.As(err, &hostErr) {
		t.Errorf("ReadIndex at an address the certificate does not name: %v, want x509.HostnameError", err)
	}
	// and by names routed to it, it is accepted as n1 only.
	route := func(string) string { return srv.Addr().String() }
	routed, _ := tlsClient(t, peerFiles(ca, ca.Issue(t, "peer", nil)), route)
	if _, err := routed.ReadIndex(ctxFor(t, 5*time.Second), "n1.peers.test:7001", Asker{}); err != nil {
		t.Errorf("ReadIndex from n1.peers.test through a rewrite: %v", err)
	}
	if _, err := routed.ReadIndex(ctxFor(t, 5*time.Second), "n2.peers.test:7001", Asker{}); !errors.As(err, &hostErr) {
		t.Errorf("ReadIndex from n2.peers.test, served by n1: %v, want x509.HostnameError", err)
	}
}

// TestListenRejectsBadTLSFiles: Listen checks the files and binds nothing
// when they are wrong.
func TestListenRejectsBadTLSFiles(t *testing.T) {
	ca := testpki.NewCA(t)
	foreign := testpki.NewCA(t)
	good := ca.Issue(t, "n1", nil)
	other := ca.Issue(t, "n2", nil)
	notPEM := ca.Dir + "/not.pem"
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clientOnly := ca.Issue(t, "n1", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	serverOnly := ca.Issue(t, "n1", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	expired := ca.Issue(t, "n1", nil, testpki.Expired())
	foreignCert := foreign.Issue(t, "n1", nil)
	cases := []struct {
		name  string
		files PeerTLS
		want  string
	}{
		{"no key file", PeerTLS{CertFile: good.CertFile, TrustedCAFile: ca.CertFile}, "key file"},
		{"no CA file", PeerTLS{CertFile: good.CertFile, KeyFile: good.KeyFile}, "trusted CA file"},
		{"missing cert", PeerTLS{CertFile: ca.Dir + "/nope.crt", KeyFile: good.KeyFile, TrustedCAFile: ca.CertFile}, "no such file"},
		{"key of another cert", PeerTLS{CertFile: good.CertFile, KeyFile: other.KeyFile, TrustedCAFile: ca.CertFile}, "private key does not match"},
		{"missing CA file", PeerTLS{CertFile: good.CertFile, KeyFile: good.KeyFile, TrustedCAFile: ca.Dir + "/nope.crt"}, "no such file"},
		{"CA file without certificates", PeerTLS{CertFile: good.CertFile, KeyFile: good.KeyFile, TrustedCAFile: notPEM}, "no PEM certificate"},
		{"cert of another CA", PeerTLS{CertFile: foreignCert.CertFile, KeyFile: foreignCert.KeyFile, TrustedCAFile: ca.CertFile}, "unknown authority"},
		{"clientAuth only", PeerTLS{CertFile: clientOnly.CertFile, KeyFile: clientOnly.KeyFile, TrustedCAFile: ca.CertFile}, "not valid for serverAuth"},
		{"serverAuth only", PeerTLS{CertFile: serverOnly.CertFile, KeyFile: serverOnly.KeyFile, TrustedCAFile: ca.CertFile}, "not valid for clientAuth"},
		{"expired", PeerTLS{CertFile: expired.CertFile, KeyFile: expired.KeyFile, TrustedCAFile: ca.CertFile}, "expired"},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, tc := range cases {
		m, err := Listen(Config{Addr: addr, TLS: &tc.files})
		if err == nil {
			m.Close()
			t.Errorf("%s: Listen succeeded", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
	// Nothing was left bound.
	m, err := Listen(Config{Addr: addr, TLS: peerFiles(ca, good)})
	if err != nil {
		t.Fatalf("Listen with good files: %v", err)
	}
	m.Close()
}

// replaceFiles overwrites a node's certificate and key with c's, stamped
// with mod so that the change is seen whatever the file system's clock.
func replaceFiles(t *testing.T, files *PeerTLS, c *testpki.Cert, mod time.Time) {
	t.Helper()
	for _, f := range []struct {
		path string
		data []byte
	}{{files.KeyFile, c.KeyPEM}, {files.CertFile, c.CertPEM}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

// copyFiles gives c files of their own, to be overwritten.
func copyFiles(t *testing.T, ca *testpki.CA, c *testpki.Cert) *PeerTLS {
	t.Helper()
	dir := t.TempDir()
	files := &PeerTLS{CertFile: dir + "/peer.crt", KeyFile: dir + "/peer.key", TrustedCAFile: ca.CertFile}
	replaceFiles(t, files, c, time.Now())
	return files
}

// TestPeerTLSReloadsRotatedCertificates: a certificate and key replaced on
// disk are used from the next connection, on both ends; files that do not
// load leave the previous ones in use.
func TestPeerTLSReloadsRotatedCertificates(t *testing.T) {
	ca := testpki.NewCA(t)
	first, second := ca.Issue(t, "n1", nil), ca.Issue(t, "n1", nil)
	serverFiles := copyFiles(t, ca, first)
	srv, logs, _ := tlsServer(t, "127.0.0.1:0", serverFiles, &countingHandler{})
	addr := srv.Addr().String()
	servedSerial := func() string {
		t.Helper()
		c := dialRaw(t, addr, ca, ca.Issue(t, "n2", nil))
		st := c.ConnectionState()
		if len(st.PeerCertificates) == 0 {
			t.Fatal("no server certificate")
		}
		return st.PeerCertificates[0].SerialNumber.String()
	}
	if got := servedSerial(); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("served %s, want the first certificate", got)
	}
	replaceFiles(t, serverFiles, second, time.Now().Add(time.Second))
	if got := servedSerial(); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("served %s after rotation, want the second certificate %s", got, second.Leaf.SerialNumber)
	}
	logs.waitLogged(t, "peer TLS files reloaded")

	// A broken file is not taken; the second certificate stays.
	if err := os.WriteFile(serverFiles.CertFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(serverFiles.CertFile, time.Now().Add(2*time.Second), time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("served %s after a broken rotation, want the second certificate", got)
	}
	logs.waitLogged(t, "cannot be loaded")

	// The dialler's certificate too.
	clientFiles := copyFiles(t, ca, ca.Issue(t, "c1", nil))
	_, dialer := tlsClient(t, clientFiles, nil)
	clientCN := func() string {
		t.Helper()
		out, err := dialer.RaftLayer().Dial(raft.ServerAddress(addr), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		in, err := srv.RaftLayer().Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		return in.(*trackedConn).Conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := clientCN(); cn != "c1" {
		t.Fatalf("client CN %q, want c1", cn)
	}
	replaceFiles(t, clientFiles, ca.Issue(t, "c2", nil), time.Now().Add(time.Second))
	if cn := clientCN(); cn != "c2" {
		t.Fatalf("client CN %q after rotation, want c2", cn)
	}
}

// TestPeerTLSRedialAfterServerRestartWithPooledConn: pooled TLS
// connections to a server that restarted are seen dead, and the request
// goes on a new one.
func TestPeerTLSRedialAfterServerRestartWithPooledConn(t *testing.T) {
	ca := testpki.NewCA(t)
	files := peerFiles(ca, ca.Issue(t, "n1", nil))
	cl, _ := tlsClient(t, peerFiles(ca, ca.Issue(t, "n2", nil)), nil)
	for round := range 5 {
		srv, _, _ := tlsServer(t, "127.0.0.1:0", files, echoHandler("old", 1))
		addr := srv.Addr().String()
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if cl.idleCount(addr) == 0 {
			t.Fatal("no pooled connection")
		}
		srv.Close()
		_, _, accepts := tlsServer(t, addr, files, echoHandler("new", 2))
		for range 3 {
			idx, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{})
			if err != nil {
				t.Fatalf("round %d: ReadIndex after restart: %v", round, err)
			}
			if idx != 2 {
				t.Fatalf("round %d: answered by the old server", round)
			}
		}
		if n := accepts.accepted.Load(); n != 1 {
			t.Errorf("round %d: %d new connections, want 1", round, n)
		}
	}
}

// TestAliveOverTLS: an idle TLS connection whose peer closed it, with the
// close_notify alert waiting unread, is not alive.
func TestAliveOverTLS(t *testing.T) {
	ca := testpki.NewCA(t)
	peer := ca.Issue(t, "n1", nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closeServer := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		srv := tls.Server(raw, &tls.Config{Certificates: []tls.Certificate{peer.TLSCertificate()}, SessionTicketsDisabled: true})
		_ = srv.SetDeadline(time.Now().Add(5 * time.Second))
		if srv.Handshake() == nil {
			var b [1]byte
			_, _ = srv.Read(b[:])
			<-closeServer
		}
		srv.Close() // sends close_notify
	}()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !alive(c) {
		t.Error("open idle connection not alive")
	}
	close(closeServer)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not close")
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(c) {
		if time.Now().After(deadline) {
			t.Fatal("connection closed by the server still alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
