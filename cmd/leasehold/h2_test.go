package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/leasehold/leasehold/internal/testpki"
)

// frames encodes HTTP/2 frames as the server writes them.
func frames(t *testing.T, write func(*http2.Framer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(http2.NewFramer(&buf, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func headersFrame(t *testing.T, stream uint32, endStream bool) []byte {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	_ = enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/json"})
	return frames(t, func(f *http2.Framer) error {
		return f.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: endStream})
	})
}

func dataFrame(t *testing.T, stream uint32, n int) []byte {
	return frames(t, func(f *http2.Framer) error { return f.WriteData(stream, true, bytes.Repeat([]byte{'x'}, n)) })
}

func TestHeadersWithBodyScan(t *testing.T) {
	settings := frames(t, func(f *http2.Framer) error {
		return f.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
	})
	open := headersFrame(t, 1, false)
	closed := headersFrame(t, 3, true)
	data := dataFrame(t, 1, 300)
	big := dataFrame(t, 5, 20000)
	window := frames(t, func(f *http2.Framer) error { return f.WriteWindowUpdate(0, 4096) })
	cat := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	for _, tc := range []struct {
		name   string
		writes [][]byte
		hold   []bool // per write
	}{
		{"headers with a body to follow", [][]byte{open}, []bool{true}},
		{"then its body", [][]byte{open, data}, []bool{true, false}},
		{"headers ending the stream", [][]byte{closed}, []bool{false}},
		{"headers after other frames", [][]byte{cat(settings, data, open)}, []bool{true}},
		{"headers then more in one write", [][]byte{cat(open, data)}, []bool{false}},
		{"headers split across writes", [][]byte{open[:4], open[4:12], open[12:]}, []bool{false, false, true}},
		{"a large frame split, then headers", [][]byte{big[:4096], big[4096:], open}, []bool{false, false, true}},
		{"a window update", [][]byte{cat(data, window)}, []bool{true}},
		{"a window update, then a response", [][]byte{window, open, data}, []bool{true, true, false}},
		{"a frame's payload that looks like headers", [][]byte{cat(dataFrame(t, 7, len(open)-9)[:9], open[9:])}, []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &headersWithBodyConn{}
			for i, w := range tc.writes {
				if got := c.scan(w); got != tc.hold[i] {
					t.Errorf("write %d (%d bytes): hold %v, want %v", i, len(w), got, tc.hold[i])
				}
			}
		})
	}
}

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
	srv, err := apiServer(h, &servingCert{cert: &pair, certFile: "/nonexistent", keyFile: "/nonexistent"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.ErrorLog = log.New(io.Discard, "", 0) // a client dialing twice closes one in its handshake
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

func TestAPIServerSendsHeadersWithBody(t *testing.T) {
	body := strings.Repeat("l", 700) // about a JSON renewal, asked and answered
	ln, client, url := startAPIServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(got)
	}))
	send := func() {
		t.Helper()
		resp, err := client.Post(url+"/x", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		if resp.ProtoMajor != 2 || string(got) != body {
			t.Fatalf("got %s %d bytes, want HTTP/2 and the body", resp.Proto, len(got))
		}
	}
	send() // the handshake and the connection's settings
	const n = 200
	before := ln.writes.Load()
	for range n {
		send()
	}
	// One write per response, a WINDOW_UPDATE for the requests' bytes
	// going with one; without holding the headers, two per response.
	if w := ln.writes.Load() - before; w > n*21/20 {
		t.Errorf("%d responses took %d writes, want about one each", n, w)
	}
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

func TestAPIServerConcurrentStreams(t *testing.T) {
	// Many streams on one connection, with bodies of every size: every
	// response arrives whole.
	_, client, url := startAPIServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := len(r.URL.Path) * 997 % 70000
		_, _ = w.Write(bytes.Repeat([]byte{byte('a' + n%26)}, n))
	}))
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/" + strings.Repeat("p", i+1)
			n := len(path) * 997 % 70000
			resp, err := client.Get(url + path)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || len(got) != n || (n > 0 && got[n-1] != byte('a'+n%26)) {
				t.Errorf("%s: %d bytes (%v), want %d", path, len(got), err, n)
			}
		}()
	}
	wg.Wait()
}

// TestAPIServerHTTP2Settings: kube-apiserver's limit of 100 streams a
// connection, advertised in the server's first SETTINGS.
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
			if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != 100 {
				t.Fatalf("MAX_CONCURRENT_STREAMS %d (%v), want 100", v, ok)
			}
			return
		}
	}
}
