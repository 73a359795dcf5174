package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// An apply stream carries a follower's commands to the leader and the
// leader's answers back, many at once on one connection: a request is
// written as soon as the connection is free, and whatever was queued
// meanwhile goes with it; answers come back in commit order, the answers
// to one Raft batch together. A request and its answer each on a
// connection of their own cost both nodes a wakeup and two system calls
// per command.
//
// The server acknowledges the stream with one byte before anything else,
// so a client talking to a node that does not know the stream (an older
// release, in a rolling upgrade) learns it before sending a command, and
// sends its commands one connection at a time instead.

// streamAck is the byte a server writes when it takes an apply stream.
const streamAck byte = 1

type streamRequest struct {
	ID      uint64
	Command []byte
	// Timeout is the caller's remaining budget, so the server gives up
	// when the caller will.
	Timeout time.Duration
}

type streamResponse struct {
	ID         uint64
	Index      uint64
	Result     []byte
	NotLeader  bool
	NotApplied bool
	// NoSpace: the leader's disk is full (NotApplied is set too, for
	// peers of earlier releases); Err is its message.
	NoSpace bool
	Err     string
}

// frameWriter encodes gob values into a buffer and writes what has
// accumulated whenever the connection is free: the caller that finds no
// write in progress writes its own frame and every frame queued while it
// writes; the others return at once.
type frameWriter struct {
	c net.Conn

	mu      sync.Mutex
	queued  bytes.Buffer // frames not yet written; enc writes here
	enc     *gob.Encoder
	writing bool
	err     error
	out     []byte // what the write in progress sends; only its writer uses it
}

func newFrameWriter(c net.Conn) *frameWriter {
	w := &frameWriter{c: c}
	w.enc = gob.NewEncoder(&w.queued)
	return w
}

// send queues v and makes sure it is written. It returns the error of the
// connection once a write has failed.
func (w *frameWriter) send(v any) error {
	w.mu.Lock()
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return err
	}
	if err := w.enc.Encode(v); err != nil {
		w.err = err
		w.mu.Unlock()
		return err
	}
	if w.writing {
		w.mu.Unlock()
		return nil // the writer in progress takes it along
	}
	w.writing = true
	for w.queued.Len() > 0 && w.err == nil {
		w.out = append(w.out[:0], w.queued.Bytes()...)
		w.queued.Reset()
		w.mu.Unlock()
		_, err := w.c.Write(w.out)
		w.mu.Lock()
		if err != nil {
			w.err = err
		}
	}
	w.writing = false
	err := w.err
	w.mu.Unlock()
	return err
}

// serveApplyStream answers the commands of one apply stream, each as soon
// as it is committed, until the connection ends.
func serveApplyStream(c net.Conn, h Handler, logger hclog.Logger) {
	if _, err := c.Write([]byte{streamAck}); err != nil {
		return
	}
	dec := gob.NewDecoder(newFrameLimit(bufio.NewReader(c), maxRequestFrame))
	w := newFrameWriter(c)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var req streamRequest
		if !readRequest(dec, &req, c, logger) {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := serverContext(req.Timeout)
			idx, result, err := h.Apply(ctx, req.Command)
			cancel()
			resp := streamResponse{ID: req.ID, Index: idx, Result: result}
			resp.NotLeader, resp.NotApplied, resp.Err = applyAnswer(err)
			var ns *NoSpaceError
			resp.NoSpace = errors.As(err, &ns)
			if w.send(&resp) != nil {
				c.Close() // the reader above ends too
			}
		}()
	}
}

// applyStream is the client end of an apply stream.
type applyStream struct {
	c net.Conn
	w *frameWriter

	mu       sync.Mutex
	nextID   uint64
	pending  map[uint64]chan streamResponse
	lastRead time.Time // when an answer last came
	err      error     // why the stream ended; no new calls once set
	broken   chan struct{}
}

// errStreamUnsupported means the peer closed the stream without taking it.
var errStreamUnsupported = errors.New("peer does not take apply streams")

// openApplyStream dials addr for an apply stream and waits for the peer
// to take it.
func openApplyStream(m *Mux, addr string, timeout time.Duration) (*applyStream, error) {
	c, err := m.dial(addr, connApplyStream, timeout)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	ack, err := br.ReadByte()
	if err != nil || ack != streamAck {
		c.Close()
		// A node that does not know the stream closes the connection
		// after reading its type; anything else (a timeout) says nothing
		// about the peer's release.
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return nil, errStreamUnsupported
		}
		return nil, err
	}
	_ = c.SetReadDeadline(time.Time{})
	s := &applyStream{c: c, w: newFrameWriter(c), pending: map[uint64]chan streamResponse{}, lastRead: time.Now(), broken: make(chan struct{})}
	go s.read(gob.NewDecoder(br))
	return s, nil
}

func (s *applyStream) read(dec *gob.Decoder) {
	for {
		var resp streamResponse
		if err := dec.Decode(&resp); err != nil {
			s.fail(err)
			return
		}
		s.mu.Lock()
		ch := s.pending[resp.ID]
		delete(s.pending, resp.ID)
		s.lastRead = time.Now()
		s.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// fail ends the stream: calls waiting for an answer learn that their
// outcome is unknown.
func (s *applyStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = err
	close(s.broken)
	s.c.Close()
}

// usable reports whether new calls may go on the stream.
func (s *applyStream) usable() bool {
	select {
	case <-s.broken:
		return false
	default:
		return true
	}
}

// errStreamClosed means the stream had ended before the call was queued:
// nothing was sent.
var errStreamClosed = errors.New("apply stream closed")

// apply sends cmd and waits for its answer or ctx.
func (s *applyStream) apply(ctx context.Context, cmd []byte) (*streamResponse, error) {
	deadline := callDeadline(ctx)
	ch := make(chan streamResponse, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, errStreamClosed
	}
	s.nextID++
	id := s.nextID
	s.pending[id] = ch
	s.mu.Unlock()
	sent := time.Now()
	if err := s.w.send(&streamRequest{ID: id, Command: cmd, Timeout: time.Until(deadline)}); err != nil {
		s.fail(err)
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	}
	select {
	case resp := <-ch:
		return &resp, nil
	case <-s.broken:
		select {
		case resp := <-ch: // answered just before the end
			return &resp, nil
		default:
		}
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, s.err)
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, id)
		// No answer at all since this call went out: the peer is gone
		// without closing the connection (its host died, a partition).
		dead := errors.Is(ctx.Err(), context.DeadlineExceeded) && s.lastRead.Before(sent)
		s.mu.Unlock()
		if dead {
			s.fail(ctx.Err())
		}
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, ctx.Err())
	}
}

func (s *applyStream) close() { s.fail(errStreamClosed) }
