package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeHandler answers RPCs with the given functions.
type fakeHandler struct {
	forward   func(ctx context.Context, req []byte) []byte
	readIndex func(ctx context.Context, from Asker) (uint64, error)
	apply     func(ctx context.Context, cmd []byte) (uint64, error)
}

func (h *fakeHandler) Apply(ctx context.Context, cmd []byte) (uint64, []byte, error) {
	idx, err := h.apply(ctx, cmd)
	if err != nil {
		return 0, nil, err
	}
	return idx, append([]byte("result of "), cmd...), nil
}

func (h *fakeHandler) Forward(ctx context.Context, req []byte) []byte {
	return h.forward(ctx, req)
}

func (h *fakeHandler) ReadIndex(ctx context.Context, from Asker) (uint64, error) {
	return h.readIndex(ctx, from)
}

func (h *fakeHandler) NodeInfo(context.Context) *NodeInfo {
	return &NodeInfo{Name: "fake", AppliedIndex: 7, Members: []string{"fake", "other"}}
}

// echoHandler answers a forward with the server's name, a colon and the
// request, and ReadIndex with idx.
func echoHandler(server string, idx uint64) *fakeHandler {
	return &fakeHandler{
		forward: func(_ context.Context, req []byte) []byte {
			return append([]byte(server+":"), req...)
		},
		readIndex: func(context.Context, Asker) (uint64, error) { return idx, nil },
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// newServer listens on addr and serves h; it returns the mux and its
// accept counter.
func newServer(t *testing.T, addr string, h Handler) (*Mux, *countingListener) {
	t.Helper()
	m, err := Listen(Config{Addr: addr})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cl := &countingListener{Listener: m.ln}
	m.ln = cl
	m.Serve(h)
	t.Cleanup(func() { m.Close() })
	return m, cl
}

// newClient returns a client dialling through a mux of its own.
func newClient(t *testing.T) *Client {
	t.Helper()
	m, err := Listen(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	cl := NewClient(m)
	t.Cleanup(func() {
		cl.Close()
		m.Close()
	})
	return cl
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func (cl *Client) idleCount(addr string) int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.idle[addr])
}

func (m *Mux) openConns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

func TestForwardRoundTrip(t *testing.T) {
	var got []byte
	var mu sync.Mutex
	want := []byte(`{"Status":201,"Body":"a"}`)
	h := &fakeHandler{
		forward: func(ctx context.Context, req []byte) []byte {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("handler context has no deadline")
			}
			mu.Lock()
			got = req
			mu.Unlock()
			return want
		},
	}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	cl := newClient(t)

	req := []byte{0, 1, 2, 0xff, '{'}
	resp, err := cl.Forward(ctxFor(t, 5*time.Second), srv.Addr().String(), req)
	if err != nil {
		t.Fatalf("forward: %v", err)
	}
	if !bytes.Equal(resp, want) {
		t.Errorf("response %q, want %q", resp, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if !bytes.Equal(got, req) {
		t.Errorf("handler got %q, want %q", got, req)
	}
}

// scriptedErr is the error a fake handler answers with, set by the test
// between calls.
type scriptedErr struct{ p atomic.Pointer[error] }

func (s *scriptedErr) set(err error) { s.p.Store(&err) }

func (s *scriptedErr) get() error {
	if p := s.p.Load(); p != nil {
		return *p
	}
	return nil
}

func TestReadIndexRoundTrip(t *testing.T) {
	var answer scriptedErr
	asked := make(chan Asker, 10)
	h := &fakeHandler{readIndex: func(ctx context.Context, from Asker) (uint64, error) {
		asked <- from
		if err := answer.get(); err != nil {
			return 0, err
		}
		return 42, nil
	}}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	cl := newClient(t)
	addr := srv.Addr().String()

	answer.set(nil)
	from := Asker{ID: "n2", Term: 7}
	if idx, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, from); err != nil || idx != 42 {
		t.Fatalf("ReadIndex = %d, %v; want 42", idx, err)
	}
	if got := <-asked; got != from {
		t.Errorf("the handler was asked by %+v, want %+v", got, from)
	}
	answer.set(ErrNotLeader)
	if _, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{}); !errors.Is(err, ErrNotLeader) {
		t.Errorf("ReadIndex on a non-leader: %v, want ErrNotLeader", err)
	}
	answer.set(errors.New("boom"))
	_, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{})
	if err == nil || !strings.Contains(err.Error(), "boom") || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("ReadIndex failing on the server: %v, want the server's error", err)
	}
	// Answers that are errors keep the connection.
	if n := cl.idleCount(addr); n != 1 {
		t.Errorf("%d pooled connections, want 1", n)
	}
}

// TestNodeInfoRoundTrip: a node's description crosses the peer port whole.
func TestNodeInfoRoundTrip(t *testing.T) {
	srv, _ := newServer(t, "127.0.0.1:0", &fakeHandler{})
	cl := newClient(t)
	info, err := cl.NodeInfo(ctxFor(t, 5*time.Second), srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "fake" || info.AppliedIndex != 7 || !slices.Equal(info.Members, []string{"fake", "other"}) {
		t.Errorf("NodeInfo = %+v", info)
	}
}

func TestApplyRoundTrip(t *testing.T) {
	var answer scriptedErr
	var got atomic.Pointer[[]byte]
	h := &fakeHandler{apply: func(ctx context.Context, cmd []byte) (uint64, error) {
		got.Store(&cmd)
		if err := answer.get(); err != nil {
			return 0, err
		}
		return 99, nil
	}}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	cl := newClient(t)
	addr := srv.Addr().String()

	answer.set(nil)
	if idx, res, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("cmd")); err != nil || idx != 99 || string(res) != "result of cmd" {
		t.Fatalf("Apply = %d, %q, %v; want 99 and the handler's result", idx, res, err)
	}
	if p := got.Load(); p == nil || string(*p) != "cmd" {
		t.Errorf("handler got command %v, want %q", p, "cmd")
	}
	// Nothing written: the caller may send it elsewhere.
	for _, want := range []error{ErrNotLeader, ErrNotApplied} {
		answer.set(want)
		if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("cmd")); !errors.Is(err, want) || errors.Is(err, ErrUnknownOutcome) {
			t.Errorf("Apply refused with %v: got %v", want, err)
		}
	}
	// Anything else the leader reports leaves the outcome unknown.
	answer.set(errors.New("leadership lost while committing"))
	if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("cmd")); !errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "leadership lost") {
		t.Errorf("Apply failing on the leader: %v, want ErrUnknownOutcome with its message", err)
	}
	// An unreachable peer got nothing.
	srv.Close()
	cl.Close()
	if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("cmd")); err == nil || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("Apply to a closed peer: %v, want an error that is not an unknown outcome", err)
	}
}

func TestPooledConnectionReuse(t *testing.T) {
	srv, accepts := newServer(t, "127.0.0.1:0", echoHandler("s", 7))
	cl := newClient(t)
	addr := srv.Addr().String()
	ctx := ctxFor(t, 10*time.Second)

	for i := range 20 {
		if i%2 == 0 {
			if _, err := cl.ReadIndex(ctx, addr, Asker{}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := cl.Forward(ctx, addr, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if n := accepts.accepted.Load(); n != 1 {
		t.Fatalf("20 sequential calls opened %d connections, want 1", n)
	}
	if n := cl.idleCount(addr); n != 1 {
		t.Fatalf("%d pooled connections, want 1", n)
	}

	// Concurrent calls each need a connection; afterwards they are all
	// reused.
	const workers = 8
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := cl.Forward(ctx, addr, []byte("y")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	opened := accepts.accepted.Load()
	if opened > workers+1 {
		t.Errorf("%d concurrent workers opened %d connections", workers, opened)
	}
	if n := cl.idleCount(addr); n != int(opened) {
		t.Errorf("%d pooled connections after the burst, want %d", n, opened)
	}
	for range 20 {
		if _, err := cl.ReadIndex(ctx, addr, Asker{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := accepts.accepted.Load(); n != opened {
		t.Errorf("sequential calls after the burst opened %d more connections", n-opened)
	}
}

// TestRedialAfterServerRestart: the server goes away and comes back on the
// same address; the client notices its pooled connection is dead and dials
// again instead of failing the request.
func TestRedialAfterServerRestart(t *testing.T) {
	srv, _ := newServer(t, "127.0.0.1:0", echoHandler("first", 1))
	addr := srv.Addr().String()
	cl := newClient(t)
	if _, err := cl.Forward(ctxFor(t, 5*time.Second), addr, nil); err != nil {
		t.Fatal(err)
	}

	for i, name := range []string{"second", "third", "fourth"} {
		if err := srv.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		// While it is down, a call fails without an unknown outcome:
		// nothing was sent.
		_, err := cl.Forward(ctxFor(t, 2*time.Second), addr, nil)
		if err == nil || errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("forward to a stopped server: %v, want a dial error", err)
		}
		var accepts *countingListener
		srv, accepts = newServer(t, addr, echoHandler(name, 1))
		resp, err := cl.Forward(ctxFor(t, 5*time.Second), addr, nil)
		if err != nil {
			t.Fatalf("forward after restart %d: %v", i+1, err)
		}
		if got, _, _ := strings.Cut(string(resp), ":"); got != name {
			t.Errorf("answered by %q, want %q", got, name)
		}
		if n := accepts.accepted.Load(); n != 1 {
			t.Errorf("restarted server accepted %d connections, want 1", n)
		}
	}
}

// TestRedialAfterServerRestartWithPooledConn: a pooled connection to the
// old server is still in the pool when the request comes; it must not be
// used.
func TestRedialAfterServerRestartWithPooledConn(t *testing.T) {
	for round := range 10 {
		srv, _ := newServer(t, "127.0.0.1:0", echoHandler("old", 1))
		addr := srv.Addr().String()
		cl := newClient(t)
		// Two pooled connections.
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
		_, accepts := newServer(t, addr, echoHandler("new", 2))
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

// droppingServer accepts RPC connections, reads one request and closes the
// connection without answering: a peer that crashed after receiving.
func droppingServer(t *testing.T) (addr string, received <-chan rpcRequest) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan rpcRequest, 10)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				if typ, err := br.ReadByte(); err != nil || typ != connRPC {
					return
				}
				var req rpcRequest
				if err := gob.NewDecoder(br).Decode(&req); err != nil {
					return
				}
				ch <- req
			}()
		}
	}()
	return ln.Addr().String(), ch
}

func TestUnknownOutcomeWhenServerDropsConnection(t *testing.T) {
	addr, received := droppingServer(t)
	cl := newClient(t)

	_, err := cl.Forward(ctxFor(t, 5*time.Second), addr, []byte("w"))
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("forward to a server that dropped the connection: %v, want ErrUnknownOutcome", err)
	}
	select {
	case req := <-received:
		if req.Kind != rpcForward || string(req.Request) != "w" || req.Timeout <= 0 {
			t.Errorf("server received %+v", req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server never received the request")
	}
	if _, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{}); !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("ReadIndex: %v, want ErrUnknownOutcome", err)
	}
	// The broken connections are not pooled.
	if n := cl.idleCount(addr); n != 0 {
		t.Errorf("%d broken connections pooled", n)
	}

	// A dial failure is not an unknown outcome.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	if _, err := cl.Forward(ctxFor(t, 5*time.Second), dead, nil); err == nil || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("forward to a closed port: %v, want a plain dial error", err)
	}
}

// TestCallGivesUpWithContext: a handler that never answers does not hold
// the caller past its context, and the outcome is unknown.
func TestCallGivesUpWithContext(t *testing.T) {
	release := make(chan struct{})
	// The handler answers only when the test ends: were it to answer when
	// its own copy of the deadline passes, the answer could beat the
	// caller's giving up.
	h := &fakeHandler{forward: func(context.Context, []byte) []byte {
		<-release
		return []byte("ok")
	}}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	defer close(release)
	cl := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cl.Forward(ctx, srv.Addr().String(), nil)
	if !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("forward past the deadline: %v, want ErrUnknownOutcome", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("forward took %v with a 300ms deadline", d)
	}
}

func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Errorf("%s: read = %v, want the connection closed", what, err)
	}
}

func TestUnknownConnectionTypeIsClosed(t *testing.T) {
	srv, _ := newServer(t, "127.0.0.1:0", echoHandler("s", 1))
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0x7f, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c, "unknown first byte")

	// An RPC connection that sends garbage is closed too (here a gob
	// message length far beyond any limit).
	c2, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte{connRPC, 0xf8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c2, "garbage RPC")

	deadline := time.Now().Add(5 * time.Second)
	for srv.openConns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still tracked", srv.openConns())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The mux still serves.
	if _, err := newClient(t).ReadIndex(ctxFor(t, 5*time.Second), srv.Addr().String(), Asker{}); err != nil {
		t.Errorf("ReadIndex after bad connections: %v", err)
	}
}

func TestMuxCloseClosesConnections(t *testing.T) {
	m, err := Listen(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	m.Serve(echoHandler("s", 1))
	addr := m.Addr().String()
	defer m.Close()

	cl := newClient(t)
	// An idle pooled RPC connection (the server is blocked reading it).
	if _, err := cl.ReadIndex(ctxFor(t, 5*time.Second), addr, Asker{}); err != nil {
		t.Fatal(err)
	}
	cl.mu.Lock()
	rpcConn := cl.idle[addr][0].c
	cl.mu.Unlock()

	// A Raft connection accepted by the Raft layer, and one never accepted.
	dialer, err := Listen(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer dialer.Close()
	raftOut, err := dialer.RaftLayer().Dial(raftAddr(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raftOut.Close()
	raftIn, err := m.RaftLayer().Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer raftIn.Close()
	queued, err := dialer.RaftLayer().Dial(raftAddr(addr), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer queued.Close()
	// A connection that has not sent its first byte yet.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	deadline := time.Now().Add(5 * time.Second)
	for m.openConns() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d connections tracked, want 4", m.openConns())
		}
		time.Sleep(10 * time.Millisecond)
	}

	done := make(chan error, 1)
	go func() { done <- m.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	expectClosed(t, rpcConn, "pooled RPC connection")
	expectClosed(t, raftOut, "accepted Raft connection")
	expectClosed(t, queued, "queued Raft connection")
	expectClosed(t, silent, "connection without a first byte")
	if alive(rpcConn) {
		t.Error("client still considers its pooled connection alive")
	}
	if _, err := m.RaftLayer().Accept(); err == nil {
		t.Error("Raft layer accepts after Close")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("closed mux still accepts connections")
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func raftAddr(addr string) raft.ServerAddress { return raft.ServerAddress(addr) }

// TestCancelRacingAnswerDoesNotPoisonPool: a caller whose context ends just
// as the answer arrives gets the answer, but the deadline callback armed for
// its context may still run after the connection went back to the pool. It
// must not cut short the next, unrelated call on that connection (which
// would see a spurious ErrUnknownOutcome).
func TestCancelRacingAnswerDoesNotPoisonPool(t *testing.T) {
	var cancelA atomic.Pointer[context.CancelFunc]
	h := &fakeHandler{
		forward: func(_ context.Context, req []byte) []byte {
			if string(req) == "a" {
				// The caller gives up as the answer is being sent.
				if c := cancelA.Load(); c != nil {
					(*c)()
				}
			}
			return []byte("ok")
		},
		readIndex: func(context.Context, Asker) (uint64, error) { return 1, nil },
	}
	srv, _ := newServer(t, "127.0.0.1:0", h)
	addr := srv.Addr().String()
	cl := newClient(t)
	start := time.Now()
	for i := 0; i < 1500 && time.Since(start) < 3*time.Second; i++ {
		ctxA, cancel := context.WithCancel(context.Background())
		cancelA.Store(&cancel)
		_, _ = cl.Forward(ctxA, addr, []byte("a"))
		cancel()
		ctxB, cancelB := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cl.Forward(ctxB, addr, []byte("b"))
		cancelB()
		if err != nil {
			t.Fatalf("iteration %d: a call with a live context failed after a cancelled one: %v", i, err)
		}
	}
}
