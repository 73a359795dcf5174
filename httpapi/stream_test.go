package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingListener counts the writes to each accepted connection.
type countingListener struct {
	net.Listener
	mu     sync.Mutex
	writes []*int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := new(int)
	l.mu.Lock()
	l.writes = append(l.writes, n)
	l.mu.Unlock()
	return &countingConn{Conn: c, l: l, n: n}, nil
}

func (l *countingListener) count(i int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.writes[i]
}

type countingConn struct {
	net.Conn
	l *countingListener
	n *int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	*c.n++
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// streamBatches is what the test handler sends: batches larger than
// net/http's 4 KB connection buffer, and an empty flush.
var streamBatches = [][]byte{
	bytes.Repeat([]byte("a"), 10_000),
	bytes.Repeat([]byte("b"), 5_000),
	nil,
	[]byte("c\n"),
}

func streamHandler(done chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		st, ctx, cancel := startWatchStream(req.Context(), w, req, time.Minute)
		defer cancel()
		defer st.close()
		for _, b := range streamBatches {
			st.buf = append(st.buf, b...)
			if !st.flush() {
				done <- fmt.Errorf("flush failed: %v", st.err)
				return
			}
		}
		if req.URL.Query().Get("wait") == "" {
			done <- nil
			return
		}
		// Until the client goes away.
		select {
		case <-ctx.Done():
			done <- nil
		case <-time.After(10 * time.Second):
			done <- fmt.Errorf("the stream did not notice the client leave")
		}
	}
}

func TestWatchStreamWritesOneChunkPerFlush(t *testing.T) {
	done := make(chan error, 1)
	srv := httptest.NewUnstartedServer(streamHandler(done))
	ln := &countingListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := io.ReadAll(conn) // the stream closes the connection at its end
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok || !strings.Contains(head, "Transfer-Encoding: chunked") {
		t.Fatalf("response head %q: want a chunked response", head)
	}
	var want strings.Builder
	for _, b := range streamBatches {
		if len(b) > 0 {
			fmt.Fprintf(&want, "%x\r\n%s\r\n", len(b), b)
		}
	}
	want.WriteString("0\r\n\r\n")
	if body != want.String() {
		t.Fatalf("chunked body differs from one chunk per non-empty batch and the last chunk (got %d bytes, want %d)", len(body), want.Len())
	}
	// The head, one write per non-empty batch, the last chunk.
	if got, want := ln.count(0), 1+3+1; got != want {
		t.Errorf("%d writes to the connection, want %d", got, want)
	}
}

// A client reading the stream with net/http sees the batches, over
// HTTP/1.1 (the stream takes the connection) and over HTTP/2 (it cannot).
func TestWatchStreamBodyOverHTTP1AndHTTP2(t *testing.T) {
	var want []byte
	for _, b := range streamBatches {
		want = append(want, b...)
	}
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			done := make(chan error, 1)
			srv := httptest.NewUnstartedServer(streamHandler(done))
			srv.EnableHTTP2 = h2
			if h2 {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if h2 != (resp.ProtoMajor == 2) {
				t.Fatalf("protocol %s", resp.Proto)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("body: %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func TestWatchStreamEndsWhenClientLeaves(t *testing.T) {
	done := make(chan error, 1)
	srv := httptest.NewServer(streamHandler(done))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "GET /?wait=1 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 15_002)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The stream's context ends with its parent as well.
func TestWatchStreamContextFollowsParent(t *testing.T) {
	ended := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parent, stop := context.WithCancel(req.Context())
		st, ctx, cancel := startWatchStream(parent, w, req, time.Minute)
		defer cancel()
		defer st.close()
		stop()
		select {
		case <-ctx.Done():
			ended <- nil
		case <-time.After(10 * time.Second):
			ended <- fmt.Errorf("stream context outlived its parent")
		}
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
}
