package h2server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/leasehold/leasehold/internal/testpki"
)

type testServer struct {
	srv  *http.Server
	addr string
	ca   *testpki.CA
	logs *bytes.Buffer
}

// start serves h over TLS on 127.0.0.1 as the API does.
func start(t testing.TB, h http.Handler, opts ...func(*http.Server)) *testServer {
	t.Helper()
	ca := testpki.NewCA(t)
	pair := ca.Issue(t, "h2", nil, testpki.WithIPs(net.IPv4(127, 0, 0, 1)), testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth)).TLSCertificate()
	logs := &bytes.Buffer{}
	srv := &http.Server{
		Handler:   h,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}},
		ErrorLog:  log.New(&lockedWriter{w: logs}, "", 0),
	}
	for _, o := range opts {
		o(srv)
	}
	(&Server{MaxConcurrentStreams: 100}).Configure(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return &testServer{srv: srv, addr: ln.Addr().String(), ca: ca, logs: logs}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// client is Go's own HTTP/2 client (as client-go uses it).
func (ts *testServer) client(t *testing.T) *http.Client {
	tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.ca.Pool()}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func (ts *testServer) url(path string) string { return "https://" + ts.addr + path }

// raw is a client that writes and reads frames itself.
type raw struct {
	t   *testing.T
	c   *tls.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
}

// dial opens a connection and exchanges the prefaces; settings are the
// client's.
func (ts *testServer) dial(t *testing.T, settings ...http2.Setting) *raw {
	t.Helper()
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	r := &raw{t: t, c: c, fr: http2.NewFramer(c, c)}
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	r.enc = hpack.NewEncoder(&r.hb)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := r.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *raw) headers(id uint32, method, path string, endStream bool, extra ...string) {
	r.t.Helper()
	r.hb.Reset()
	fields := []string{":method", method, ":scheme", "https", ":path", path, ":authority", "h2"}
	fields = append(fields, extra...)
	for i := 0; i < len(fields); i += 2 {
		_ = r.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: r.hb.Bytes(), EndHeaders: true, EndStream: endStream}); err != nil {
		r.t.Fatal(err)
	}
}

// next reads frames until one satisfies want, and returns it; it fails
// the test if the connection ends first.
func (r *raw) next(what string, want func(http2.Frame) bool) http2.Frame {
	r.t.Helper()
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			r.t.Fatalf("waiting for %s: %v", what, err)
		}
		if want(f) {
			return f
		}
	}
}

// goAway reads until the server's GOAWAY and the connection's end.
func (r *raw) goAway() *http2.GoAwayFrame {
	r.t.Helper()
	var ga *http2.GoAwayFrame
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			if ga == nil {
				r.t.Fatalf("connection ended without GOAWAY: %v", err)
			}
			return ga
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			ga = g
		}
	}
}

func isRST(id uint32) func(http2.Frame) bool {
	return func(f http2.Frame) bool { return f.Header().Type == http2.FrameRSTStream && f.Header().StreamID == id }
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Proto", r.Proto)
	w.Header().Set("X-TLS", fmt.Sprint(r.TLS != nil))
	_, _ = w.Write(body)
}

func TestRequestsAndAnswersOfEverySize(t *testing.T) {
	ts := start(t, http.HandlerFunc(echo))
	c := ts.client(t)
	// Bodies past every window: the stream's 1 MiB, the client's 4 MiB
	// stream window for answers; and a frame's 16 KiB.
	for _, n := range []int{0, 1, 700, 16384, 16385, 100 << 10, 3 << 20, 5 << 20} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		resp, err := c.Post(ts.url("/echo"), "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: got %d (%v)", n, len(got), err)
		}
		if resp.ProtoMajor != 2 || resp.Header.Get("X-Proto") != "HTTP/2.0" || resp.Header.Get("X-TLS") != "true" {
			t.Fatalf("%s, handler saw %s, TLS %s", resp.Proto, resp.Header.Get("X-Proto"), resp.Header.Get("X-TLS"))
		}
		if resp.Header.Get("Date") == "" {
			t.Error("no Date header")
		}
		if n < chunk && resp.ContentLength != int64(n) {
			t.Errorf("%d bytes: Content-Length %d", n, resp.ContentLength)
		}
	}
}

func TestAnswersAsNetHTTPGivesThem(t *testing.T) {
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sniff":
			_, _ = io.WriteString(w, "<html><body>hi</body></html>")
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
				panic("a 204 took a body")
			}
		case "/late-header":
			w.WriteHeader(http.StatusTeapot)
			w.Header().Set("X-Late", "1") // no effect: net/http's rule
			_, _ = io.WriteString(w, "tea")
		case "/conn-headers":
			w.Header().Set("Connection", "keep-alive")
			w.Header().Set("Transfer-Encoding", "chunked")
			w.Header().Set("X-Ok", "1")
		}
	}))
	c := ts.client(t)
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.url(path), nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get("GET", "/sniff"); resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || body == "" {
		t.Errorf("sniffed %q, body %q", resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get("HEAD", "/sniff"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD: %d %q", resp.StatusCode, body)
	}
	if resp, body := get("GET", "/nocontent"); resp.StatusCode != 204 || body != "" {
		t.Errorf("204: %d %q", resp.StatusCode, body)
	}
	if resp, body := get("GET", "/late-header"); resp.StatusCode != 418 || resp.Header.Get("X-Late") != "" || body != "tea" {
		t.Errorf("418: %d X-Late=%q %q", resp.StatusCode, resp.Header.Get("X-Late"), body)
	}
	if resp, _ := get("GET", "/conn-headers"); resp.Header.Get("X-Ok") != "1" || resp.Header.Get("Connection") != "" || len(resp.TransferEncoding) > 0 {
		t.Errorf("connection headers sent: %v", resp.Header)
	}
}

func TestAnswerIsOneWrite(t *testing.T) {
	// A small answer: HEADERS and DATA with END_STREAM in one TLS record.
	ts := start(t, http.HandlerFunc(echo))
	r := ts.dial(t)
	r.next("SETTINGS", func(f http2.Frame) bool { _, ok := f.(*http2.SettingsFrame); return ok })
	for id := uint32(1); id < 20; id += 2 {
		r.headers(id, "POST", "/x", false)
		_ = r.fr.WriteData(id, true, []byte("a lease"))
		h := r.next("HEADERS", func(f http2.Frame) bool { return f.Header().Type == http2.FrameHeaders })
		if h.Header().StreamID != id || h.Header().Flags.Has(http2.FlagHeadersEndStream) {
			t.Fatalf("HEADERS %+v", h.Header())
		}
		// The DATA frame must already be buffered from the same record.
		_ = r.c.SetReadDeadline(time.Now().Add(-time.Second))
		d, err := r.fr.ReadFrame()
		_ = r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if err != nil {
			t.Fatalf("stream %d: the body did not come with the headers: %v", id, err)
		}
		if d.Header().Type != http2.FrameData || !d.Header().Flags.Has(http2.FlagDataEndStream) {
			t.Fatalf("after HEADERS: %+v", d.Header())
		}
	}
}

func TestFlushSendsHeadersBeforeTheBody(t *testing.T) {
	// A watch: headers go out at Flush, events later.
	gotHeaders := make(chan struct{})
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for i := range 3 {
			select {
			case <-gotHeaders:
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, `{"event":%d}`, i)
			w.(http.Flusher).Flush()
		}
	}))
	resp, err := ts.client(t).Get(ts.url("/watch"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(gotHeaders)
	got, err := io.ReadAll(resp.Body)
	if err != nil || string(got) != `{"event":0}{"event":1}{"event":2}` {
		t.Fatalf("%q %v", got, err)
	}
}

func TestClientGoingAwayCancelsTheHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(r *raw) error
	}{
		{"RST_STREAM", func(r *raw) error { return r.fr.WriteRSTStream(1, http2.ErrCodeCancel) }},
		{"the connection closed", func(r *raw) error { return r.c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canceled := make(chan struct{})
			started := make(chan struct{})
			ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-r.Context().Done()
				close(canceled)
			}))
			r := ts.dial(t)
			r.headers(1, "GET", "/watch", true)
			<-started
			if err := tc.end(r); err != nil {
				t.Fatal(err)
			}
			select {
			case <-canceled:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler's context was not canceled")
			}
		})
	}
}

func TestMaxConcurrentStreams(t *testing.T) {
	release := make(chan struct{})
	var running sync.WaitGroup
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Done()
		<-release
	}))
	r := ts.dial(t)
	sf := r.next("SETTINGS", func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && !s.IsAck() }).(*http2.SettingsFrame)
	if v, ok := sf.Value(http2.SettingMaxConcurrentStreams); !ok || v != 100 {
		t.Fatalf("MAX_CONCURRENT_STREAMS %d (%v), want 100", v, ok)
	}
	running.Add(100)
	for i := range 100 {
		r.headers(uint32(2*i+1), "GET", "/", true)
	}
	running.Wait()
	r.headers(201, "GET", "/", true)
	f := r.next("RST_STREAM", func(f http2.Frame) bool { return f.Header().Type == http2.FrameRSTStream })
	if rst := f.(*http2.RSTStreamFrame); rst.StreamID != 201 || rst.ErrCode != http2.ErrCodeRefusedStream {
		t.Fatalf("got %v on %d, want REFUSED_STREAM on 201", rst.ErrCode, rst.StreamID)
	}
	close(release)
	// Once they are done the connection takes streams again.
	r.headers(203, "GET", "/", true)
	running.Add(1)
	r.next("answer on 203", func(f http2.Frame) bool {
		return f.Header().StreamID == 203 && f.Header().Type == http2.FrameHeaders
	})
}

func TestProtocolErrorsEndTheConnection(t *testing.T) {
	ts := start(t, http.HandlerFunc(echo))
	for _, tc := range []struct {
		name string
		send func(r *raw)
		code http2.ErrCode
	}{
		{"an even stream", func(r *raw) { r.headers(2, "GET", "/", true) }, http2.ErrCodeProtocol},
		{"a stream going back", func(r *raw) { r.headers(5, "GET", "/", true); r.headers(3, "GET", "/", true) }, http2.ErrCodeProtocol},
		{"DATA on an idle stream", func(r *raw) { _ = r.fr.WriteData(7, true, []byte("x")) }, http2.ErrCodeProtocol},
		{"RST_STREAM on an idle stream", func(r *raw) { _ = r.fr.WriteRSTStream(9, http2.ErrCodeCancel) }, http2.ErrCodeProtocol},
		{"PUSH_PROMISE", func(r *raw) {
			_ = r.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: []byte{0x82}, EndHeaders: true})
		}, http2.ErrCodeProtocol},
		{"more than the connection's window", func(r *raw) {
			r.headers(1, "POST", "/", false)
			big := make([]byte, 1<<20) // the server's frame limit
			for range 2 {
				_ = r.fr.WriteData(1, false, big)
			}
		}, http2.ErrCodeFlowControl},
		{"a window past 2^31-1", func(r *raw) { _ = r.fr.WriteWindowUpdate(0, 1<<31-1) }, http2.ErrCodeFlowControl},
		{"an invalid setting", func(r *raw) { _ = r.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31}) }, http2.ErrCodeFlowControl},
		{"a frame over 1 MiB", func(r *raw) {
			r.headers(1, "POST", "/", false)
			_ = r.fr.WriteData(1, false, make([]byte, 1<<20+1))
		}, http2.ErrCodeFrameSize},
		{"CONTINUATION without HEADERS", func(r *raw) { _ = r.fr.WriteContinuation(1, true, []byte{0x82}) }, http2.ErrCodeProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.dial(t)
			tc.send(r)
			if ga := r.goAway(); ga.ErrCode != tc.code {
				t.Fatalf("GOAWAY %v, want %v", ga.ErrCode, tc.code)
			}
		})
	}
	// The server still serves.
	resp, err := ts.client(t).Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestBadFirstFrameOrPreface(t *testing.T) {
	ts := start(t, http.HandlerFunc(echo))
	c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n______")
	if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, io.EOF) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("a bad preface did not end the connection")
		}
	}

	// A preface whose first frame is not SETTINGS.
	c2, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c2, http2.ClientPreface)
	fr := http2.NewFramer(c2, c2)
	_ = fr.WritePing(false, [8]byte{})
	r2 := &raw{t: t, c: c2, fr: fr}
	if ga := r2.goAway(); ga.ErrCode != http2.ErrCodeProtocol {
		t.Fatalf("PING first: GOAWAY %v", ga.ErrCode)
	}
}

func TestStreamErrorsKeepTheConnection(t *testing.T) {
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		echo(w, r)
	}))
	r := ts.dial(t)
	// A connection-specific header (RFC 9113 §8.2.2).
	r.headers(1, "GET", "/", true, "connection", "keep-alive")
	if rst := r.next("RST_STREAM 1", isRST(1)).(*http2.RSTStreamFrame); rst.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("connection header: %v", rst.ErrCode)
	}
	// No :path.
	r.hb.Reset()
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "https"}} {
		_ = r.enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	_ = r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: r.hb.Bytes(), EndHeaders: true, EndStream: true})
	if rst := r.next("RST_STREAM 3", isRST(3)).(*http2.RSTStreamFrame); rst.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("no :path: %v", rst.ErrCode)
	}
	// A handler's panic.
	r.headers(5, "GET", "/panic", true)
	if rst := r.next("RST_STREAM 5", isRST(5)).(*http2.RSTStreamFrame); rst.ErrCode != http2.ErrCodeInternal {
		t.Errorf("panic: %v", rst.ErrCode)
	}
	// More body than the Content-Length.
	r.headers(7, "POST", "/", false, "content-length", "3")
	_ = r.fr.WriteData(7, true, []byte("four"))
	if rst := r.next("RST_STREAM 7", isRST(7)).(*http2.RSTStreamFrame); rst.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("body past Content-Length: %v", rst.ErrCode)
	}
	// The connection serves on.
	r.headers(9, "POST", "/", false)
	_ = r.fr.WriteData(9, true, []byte("still here"))
	d := r.next("DATA 9", func(f http2.Frame) bool { return f.Header().Type == http2.FrameData && f.Header().StreamID == 9 })
	if got := string(d.(*http2.DataFrame).Data()); got != "still here" {
		t.Fatalf("got %q", got)
	}
	if !strings.Contains(ts.logs.String(), "panic serving") || !strings.Contains(ts.logs.String(), "boom") {
		t.Errorf("the panic was not logged: %q", ts.logs.String())
	}
}

func TestShortBodyIsAnError(t *testing.T) {
	errc := make(chan error, 1)
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		errc <- err
	}))
	r := ts.dial(t)
	r.headers(1, "POST", "/", false, "content-length", "10")
	_ = r.fr.WriteData(1, true, []byte("short"))
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "Content-Length of 10") {
			t.Fatalf("handler read %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler never finished reading")
	}
}

func TestHeadersPastTheLimitGet431(t *testing.T) {
	ts := start(t, http.HandlerFunc(echo), func(s *http.Server) { s.MaxHeaderBytes = 4096 })
	r := ts.dial(t)
	var extra []string
	for i := range 20 {
		extra = append(extra, fmt.Sprintf("x-big-%d", i), strings.Repeat("a", 300))
	}
	r.headers(1, "GET", "/", true, extra...)
	h := r.next("HEADERS", func(f http2.Frame) bool { return f.Header().Type == http2.FrameHeaders }).(*http2.MetaHeadersFrame)
	if st := h.PseudoValue("status"); st != "431" {
		t.Fatalf("status %s, want 431", st)
	}
	// The connection serves on.
	r.headers(3, "GET", "/", true)
	r.next("answer on 3", func(f http2.Frame) bool { return f.Header().Type == http2.FrameHeaders && f.Header().StreamID == 3 })
}

func TestPingSettingsAndSmallWindows(t *testing.T) {
	// A client with a 100-byte stream window and 16 KiB frames: the
	// answer comes in pieces no larger, as the client opens the window.
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("z"), 1000))
	}))
	r := ts.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 100})
	r.next("SETTINGS ack", func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && s.IsAck() })
	_ = r.fr.WritePing(false, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	p := r.next("PING ack", func(f http2.Frame) bool { return f.Header().Type == http2.FramePing }).(*http2.PingFrame)
	if !p.IsAck() || p.Data != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Fatalf("ping answer %+v", p)
	}
	r.headers(1, "GET", "/", true)
	got := 0
	for got < 1000 {
		d := r.next("DATA", func(f http2.Frame) bool { return f.Header().Type == http2.FrameData }).(*http2.DataFrame)
		if n := len(d.Data()); n > 100 {
			t.Fatalf("a DATA frame of %d bytes in a 100-byte window", n)
		}
		got += len(d.Data())
		if got < 1000 {
			_ = r.fr.WriteWindowUpdate(1, uint32(len(d.Data())))
		} else if !d.StreamEnded() {
			t.Fatal("the last DATA frame does not end the stream")
		}
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	ts := start(t, http.HandlerFunc(echo), func(s *http.Server) { s.IdleTimeout = 200 * time.Millisecond })
	r := ts.dial(t)
	r.headers(1, "GET", "/", true)
	r.next("answer", func(f http2.Frame) bool { return f.Header().Type == http2.FrameHeaders && f.Header().StreamID == 1 })
	if ga := r.goAway(); ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("GOAWAY %v last %d", ga.ErrCode, ga.LastStreamID)
	}
}

func TestShutdownFinishesStreamsInProgress(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	r := ts.dial(t)
	r.headers(1, "GET", "/", true)
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- ts.srv.Shutdown(ctx)
	}()
	ga := r.next("GOAWAY", func(f http2.Frame) bool { return f.Header().Type == http2.FrameGoAway }).(*http2.GoAwayFrame)
	if ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("GOAWAY %v last %d", ga.ErrCode, ga.LastStreamID)
	}
	close(release)
	d := r.next("DATA", func(f http2.Frame) bool { return f.Header().Type == http2.FrameData }).(*http2.DataFrame)
	if string(d.Data()) != "done" {
		t.Fatalf("got %q", d.Data())
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestConcurrentStreamsOnOneConnection(t *testing.T) {
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := len(r.URL.Path) * 997 % 70000
		_, _ = w.Write(bytes.Repeat([]byte{byte('a' + n%26)}, n))
	}))
	c := ts.client(t)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := "/" + strings.Repeat("p", i+1)
			n := len(path) * 997 % 70000
			resp, err := c.Get(ts.url(path))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || len(got) != n || !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + n%26)}, n)) {
				t.Errorf("%s: %d bytes (%v), want %d", path, len(got), err, n)
			}
		}()
	}
	wg.Wait()
}

func TestHandlerGoroutineServesTheNextStream(t *testing.T) {
	// Sequential requests on one connection are served by the goroutine
	// that served the first, its stack already grown.
	var mu sync.Mutex
	ids := map[string]bool{}
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64)
		id, _, _ := strings.Cut(string(buf[:runtime.Stack(buf, false)]), " [")
		mu.Lock()
		ids[id] = true
		mu.Unlock()
	}))
	c := ts.client(t)
	for range 100 {
		resp, err := c.Get(ts.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// A goroutine is idle on the connection only once it has finished a
	// stream: at times (often on a busy machine) the next stream comes
	// first and gets a new one. Without reuse: a goroutine each.
	t.Logf("100 sequential requests served by %d goroutines", len(ids))
	if len(ids) > 60 {
		t.Fatalf("100 sequential requests served by %d goroutines", len(ids))
	}
}

// BenchmarkWriteHeaders: an API answer's headers, HPACK-coded and framed.
func BenchmarkWriteHeaders(b *testing.B) {
	c := newConn(&scriptConn{r: strings.NewReader("")}, nil, context.Background(), nil, nil)
	c.bw = bufio.NewWriter(io.Discard)
	h := http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}, "Cache-Control": {"no-cache, private"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h["Audit-Id"] = []string{fmt.Sprintf("%08x-1b2c-4d5e-8f90-a1b2c3d4e5f6", i)}
		c.writeHeaders(1, 200, h, "", "412", true, false)
	}
}

// TestChangingFieldsStayOutOfTheTable: the length, the date and Audit-Id,
// new in every answer, are sent as literals the HPACK tables never keep
// (Audit-Id never indexed), so the fields that repeat stay indexed across
// a hundred answers; every block decodes to what was set, also values long
// enough for multi-byte lengths and not shortened by Huffman coding.
func TestChangingFieldsStayOutOfTheTable(t *testing.T) {
	c := newConn(&scriptConn{r: strings.NewReader("")}, nil, context.Background(), nil, nil)
	var wire bytes.Buffer
	c.bw = bufio.NewWriter(&wire)
	fr := http2.NewFramer(nil, &wire)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	ctype := "application/vnd.kubernetes.protobuf"
	literalCtype := hpack.AppendHuffmanString(nil, ctype)
	for i := range 100 {
		audit := fmt.Sprintf("%08x-1b2c-4d5e-8f90-a1b2c3d4e5f6", i)
		if i == 50 {
			audit = strings.Repeat("~", 200) // Huffman makes it longer
		}
		h := http.Header{"Audit-Id": {audit}, "Cache-Control": {"no-cache, private"}, "Content-Type": {ctype}}
		clen := fmt.Sprint(1000 + i*37)
		c.writeHeaders(uint32(2*i+1), 200, h, "", clen, true, false)
		_ = c.bw.Flush()
		raw := wire.Bytes()
		if i > 0 && bytes.Contains(raw, literalCtype) {
			t.Fatalf("answer %d: Content-Type sent as a literal again: the table lost it", i)
		}
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		got := map[string]hpack.HeaderField{}
		for _, hf := range f.(*http2.MetaHeadersFrame).Fields {
			got[hf.Name] = hf
		}
		want := map[string]string{":status": "200", "audit-id": audit, "cache-control": "no-cache, private", "content-type": ctype, "content-length": clen}
		for name, v := range want {
			if got[name].Value != v {
				t.Errorf("answer %d: %s = %q, want %q", i, name, got[name].Value, v)
			}
			if got[name].Sensitive != (name == "audit-id") {
				t.Errorf("answer %d: %s never-indexed %v", i, name, got[name].Sensitive)
			}
		}
		if got["date"].Value == "" || len(got) != len(want)+1 {
			t.Errorf("answer %d: fields %v", i, got)
		}
	}
}

// TestRequestHeaders: fields come to the handler as net/http gives them —
// canonical names, a repeated field's values in order, cookies joined —
// and a handler appending to one value does not overwrite another.
func TestRequestHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header["X-One"] = append(r.Header["X-One"], "added")
		got <- r.Header.Clone()
	}))
	r := ts.dial(t)
	r.headers(1, "GET", "/", true, "x-one", "1", "x-many", "a", "x-two", "2", "x-many", "b", "cookie", "c=1", "cookie", "d=2", "x-many", "c")
	r.next("the answer", func(f http2.Frame) bool { return f.Header().Type == http2.FrameHeaders && f.Header().StreamID == 1 })
	h := <-got
	want := http.Header{"X-One": {"1", "added"}, "X-Many": {"a", "b", "c"}, "X-Two": {"2"}, "Cookie": {"c=1; d=2"}}
	for k, v := range want {
		if fmt.Sprint(h[k]) != fmt.Sprint(v) {
			t.Errorf("%s: %q, want %q", k, h[k], v)
		}
	}
	if len(h) != len(want) {
		t.Errorf("header %v, want %v", h, want)
	}
}
