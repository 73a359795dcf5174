package transport

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestApplyStreamCarriesConcurrentCalls: commands sent at once share one
// connection, and each caller gets its own answer, whatever order the
// leader answers in.
func TestApplyStreamCarriesConcurrentCalls(t *testing.T) {
	h := &fakeHandler{apply: func(ctx context.Context, cmd []byte) (uint64, error) {
		n, err := strconv.Atoi(string(cmd))
		if err != nil {
			return 0, err
		}
		time.Sleep(time.Duration(n%7) * time.Millisecond) // answers out of order
		return uint64(n) + 1000, nil
	}}
	srv, accepted := newServer(t, "127.0.0.1:0", h)
	cl := newClient(t)
	addr := srv.Addr().String()
	const calls = 200
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := strconv.Itoa(i)
			idx, res, err := cl.Apply(ctxFor(t, 10*time.Second), addr, []byte(cmd))
			if err != nil || idx != uint64(i)+1000 || string(res) != "result of "+cmd {
				errs <- fmt.Errorf("call %d: %d, %q, %v", i, idx, res, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := accepted.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted for %d concurrent calls, want one stream", n, calls)
	}
}

// oldReleaseServer accepts peer connections as a node that knows only
// one-call-per-connection RPCs: it closes apply streams after reading
// their type, and serves RPC connections with h.
func oldReleaseServer(t *testing.T, h Handler) (addr string, refused *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	refused = new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var b [1]byte
				if _, err := c.Read(b[:]); err != nil {
					return
				}
				if b[0] != connRPC {
					refused.Add(1)
					return
				}
				serveRPC(c, h, nil)
			}()
		}
	}()
	return ln.Addr().String(), refused
}

// TestApplyFallsBackToConnectionsForOldPeers: a leader of a release
// without apply streams (a rolling upgrade) still gets the commands, one
// connection each, and is not asked for a stream on every call.
func TestApplyFallsBackToConnectionsForOldPeers(t *testing.T) {
	var applied atomic.Int32
	h := &fakeHandler{apply: func(ctx context.Context, cmd []byte) (uint64, error) {
		applied.Add(1)
		return 7, nil
	}}
	addr, refused := oldReleaseServer(t, h)
	cl := newClient(t)
	for i := range 5 {
		if idx, res, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("c")); err != nil || idx != 7 || string(res) != "result of c" {
			t.Fatalf("call %d to an old peer: %d, %q, %v", i, idx, res, err)
		}
	}
	if n := applied.Load(); n != 5 {
		t.Errorf("the old peer applied %d commands, want 5", n)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("the old peer was asked for a stream %d times, want once", n)
	}
}

// rawStreamServer takes apply streams and hands each decoded request to
// the test, which answers (or not) through the returned function.
func rawStreamServer(t *testing.T) (addr string, requests <-chan streamRequest, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reqs := make(chan streamRequest, 16)
	cs := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			cs <- c
			go func() {
				br := bufio.NewReader(c)
				if b, err := br.ReadByte(); err != nil || b != connApplyStream {
					c.Close()
					return
				}
				if _, err := c.Write([]byte{streamAck}); err != nil {
					return
				}
				dec := gob.NewDecoder(br)
				for {
					var req streamRequest
					if err := dec.Decode(&req); err != nil {
						return
					}
					reqs <- req
				}
			}()
		}
	}()
	return ln.Addr().String(), reqs, cs
}

// TestApplyStreamUnknownOutcomeWhenDropped: a stream that breaks after a
// command went out leaves its outcome unknown; the next call opens a new
// stream.
func TestApplyStreamUnknownOutcomeWhenDropped(t *testing.T) {
	addr, reqs, conns := rawStreamServer(t)
	cl := newClient(t)
	done := make(chan error, 1)
	go func() {
		_, _, err := cl.Apply(ctxFor(t, 10*time.Second), addr, []byte("w"))
		done <- err
	}()
	c := <-conns
	select {
	case req := <-reqs:
		if string(req.Command) != "w" || req.Timeout <= 0 {
			t.Errorf("server received %+v", req)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the command never arrived")
	}
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnknownOutcome) {
			t.Errorf("call on a dropped stream: %v, want ErrUnknownOutcome", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end with its stream")
	}
	go func() {
		_, _, err := cl.Apply(ctxFor(t, 10*time.Second), addr, []byte("again"))
		done <- err
	}()
	select {
	case <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("no new stream after the first one broke")
	}
	if req := <-reqs; string(req.Command) != "again" {
		t.Errorf("second stream carried %q", req.Command)
	}
}

// TestApplyStreamDroppedWhenPeerGoesSilent: a peer that stops answering
// without closing the connection (its host died) holds a call only until
// the call's deadline, and the stream is not used again.
func TestApplyStreamDroppedWhenPeerGoesSilent(t *testing.T) {
	addr, reqs, conns := rawStreamServer(t)
	cl := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := cl.Apply(ctx, addr, []byte("lost")); !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("call to a silent peer: %v, want ErrUnknownOutcome", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("call took %v with a 300ms deadline", d)
	}
	<-conns
	<-reqs
	go func() { _, _, _ = cl.Apply(ctxFor(t, time.Second), addr, []byte("next")) }()
	select {
	case <-conns:
	case <-time.After(5 * time.Second):
		t.Fatal("the silent stream was used again instead of a new one")
	}
}

// TestApplyStreamCallerGivingUpKeepsTheStream: a caller that goes away
// (its client disconnected) leaves the stream to the others.
func TestApplyStreamCallerGivingUpKeepsTheStream(t *testing.T) {
	release := make(chan struct{})
	h := &fakeHandler{apply: func(ctx context.Context, cmd []byte) (uint64, error) {
		if string(cmd) == "slow" {
			<-release
		}
		return 1, nil
	}}
	srv, accepted := newServer(t, "127.0.0.1:0", h)
	defer close(release)
	cl := newClient(t)
	addr := srv.Addr().String()
	if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("first")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, _, err := cl.Apply(ctx, addr, []byte("slow")); !errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("cancelled call: %v, want ErrUnknownOutcome", err)
	}
	if _, _, err := cl.Apply(ctxFor(t, 5*time.Second), addr, []byte("after")); err != nil {
		t.Errorf("call after another gave up: %v", err)
	}
	if n := accepted.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want the one stream kept", n)
	}
}

// countingConn counts writes and holds the first until released.
type countingConn struct {
	net.Conn
	writes  atomic.Int32
	first   chan struct{}
	release chan struct{}
}

func (c *countingConn) Write(p []byte) (int, error) {
	if c.writes.Add(1) == 1 {
		close(c.first)
		<-c.release
	}
	return c.Conn.Write(p)
}

// TestFrameWriterCoalesces: frames queued while a write is in progress go
// out together with the next write, in order, and every one arrives.
func TestFrameWriterCoalesces(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &countingConn{Conn: a, first: make(chan struct{}), release: make(chan struct{})}
	w := newFrameWriter(cc)
	const frames = 50
	got := make(chan []uint64, 1)
	go func() {
		dec := gob.NewDecoder(b)
		var ids []uint64
		for range frames {
			var r streamResponse
			if err := dec.Decode(&r); err != nil {
				break
			}
			ids = append(ids, r.ID)
		}
		got <- ids
	}()
	go func() { _ = w.send(&streamResponse{ID: 0}) }()
	<-cc.first // the first frame's write is in progress
	for i := 1; i < frames; i++ {
		if err := w.send(&streamResponse{ID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	close(cc.release)
	ids := <-got
	if len(ids) != frames {
		t.Fatalf("%d frames arrived, want %d", len(ids), frames)
	}
	for i, id := range ids {
		if id != uint64(i) {
			t.Fatalf("frame %d has id %d: out of order", i, id)
		}
	}
	if n := cc.writes.Load(); n != 2 {
		t.Errorf("%d writes for %d frames, want 2 (the first, then all queued behind it)", n, frames)
	}
}
