package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/leasehold/leasehold/internal/quietlog"
	"github.com/leasehold/leasehold/internal/testpki"
)

// countingListener counts the writes to its connections: a TLS record
// each, as crypto/tls writes a record per write below 16 KiB.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, l: l}, nil
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	return c.Conn.Write(p)
}

// startAPIServer serves h as the API does over TLS on 127.0.0.1; it
// returns the listener (to count writes) and an HTTP/2 client.
func startAPIServer(t *testing.T, h http.Handler) (*countingListener, *http.Client, string) {
	t.Helper()
	ca := testpki.NewCA(t)
	serving := ca.Issue(t, "leasehold", nil, testpki.WithIPs(net.IPv4(127, 0, 0, 1)), testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	pair := serving.TLSCertificate()
	srv := apiServer(h, &servingCert{cert: &pair, certFile: "/nonexistent", keyFile: "/nonexistent"}, nil, time.Minute,
		quietlog.New(hclog.NewNullLogger(), nil), prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x"}, []string{"type"}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	go func() { _ = srv.ServeTLS(cl, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return cl, &http.Client{Transport: tr, Timeout: 10 * time.Second}, "https://" + ln.Addr().String()
}

func TestAPIServerHeadersDoNotWaitForALateBody(t *testing.T) {
	// A watch: the handler flushes its headers and sends its body only
	// once the client has them.
	gotHeaders := make(chan struct{})
	_, client, url := startAPIServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-gotHeaders:
			_, _ = io.WriteString(w, `{"type":"ADDED"}`)
		case <-r.Context().Done():
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/watch", nil)
	resp, err := client.Do(req) // returns once the headers are in
	if err != nil {
		t.Fatalf("headers never came: %v", err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != `{"type":"ADDED"}` {
		t.Fatalf("body %q, %v", got, err)
	}
}

// TestAPIServerHTTP2Settings: kube-apiserver's limits of 100 streams a
// connection and 256 KiB frames and stream windows, advertised in the
// server's first SETTINGS.
func TestAPIServerHTTP2Settings(t *testing.T) {
	ln, client, _ := startAPIServer(t, http.NotFoundHandler())
	cfg := client.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			for _, want := range []http2.Setting{
				{ID: http2.SettingMaxConcurrentStreams, Val: 100},
				{ID: http2.SettingMaxFrameSize, Val: 256 << 10},
				{ID: http2.SettingInitialWindowSize, Val: 256 << 10},
			} {
				if v, ok := sf.Value(want.ID); !ok || v != want.Val {
					t.Errorf("%v %d (%v), want %d", want.ID, v, ok, want.Val)
				}
			}
			return
		}
	}
}
