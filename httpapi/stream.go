package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// chunkRoom is the space kept in front of a watch stream's frames for an
// HTTP/1.1 chunk header: up to 8 hex digits and CRLF.
const chunkRoom = 10

// watchStream is where a watch writes its frames: one write per flush.
//
// Over HTTP/1.1 it takes the connection over once the response headers are
// out and writes each batch as one chunk in one write(2). Through
// net/http's response writer a batch larger than its 4 KB connection buffer
// costs two or three, and on a node serving a thousand watchers those
// writes (each one loopback TCP's whole send and receive path) are most of
// the CPU a watch costs. Elsewhere (HTTP/2) frames go through the response
// writer.
//
// Every write has a deadline of writeTimeout (--request-timeout): a client
// that stops reading loses its watch then, and the goroutine and buffers
// serving it are freed.
type watchStream struct {
	buf          []byte // chunkRoom reserved bytes, then the frames since the last flush
	conn         net.Conn
	w            http.ResponseWriter
	rc           *http.ResponseController
	writeTimeout time.Duration
	flusher      http.Flusher
	err          error
}

// startWatchStream sends the response headers already set on w and returns
// the stream and a context that ends with ctx or when the client goes away.
func startWatchStream(ctx context.Context, w http.ResponseWriter, req *http.Request, writeTimeout time.Duration) (*watchStream, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	s := &watchStream{buf: make([]byte, chunkRoom, 4<<10), w: w, rc: http.NewResponseController(w), writeTimeout: writeTimeout}
	s.flusher, _ = w.(http.Flusher)
	s.setWriteDeadline()
	w.WriteHeader(http.StatusOK)
	s.flushResponse()
	_ = s.rc.SetWriteDeadline(time.Time{})
	if req.ProtoMajor != 1 || req.ProtoMinor < 1 || s.err != nil {
		return s, ctx, cancel
	}
	// net/http chose chunked encoding for an HTTP/1.1 response sent before
	// its length is known; the stream keeps to it on the bare connection.
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return s, ctx, cancel
	}
	s.conn = conn
	// After a hijack net/http no longer watches the connection: a read
	// that ends (the client closed it, or the stream did) ends the watch.
	go func() {
		_, _ = io.Copy(io.Discard, brw.Reader)
		cancel()
	}()
	return s, ctx, cancel
}

// pending is the number of frame bytes not yet written.
func (s *watchStream) pending() int { return len(s.buf) - chunkRoom }

// flush writes the pending frames, and reports whether the stream is
// still writable.
func (s *watchStream) flush() bool {
	if s.err != nil {
		return false
	}
	s.setWriteDeadline()
	if n := s.pending(); n > 0 {
		if s.conn != nil {
			// The chunk header goes right before the frames, the CRLF
			// after them: one buffer, one write.
			var hex [chunkRoom]byte
			h := strconv.AppendUint(hex[:0], uint64(n), 16)
			h = append(h, '\r', '\n')
			start := chunkRoom - len(h)
			copy(s.buf[start:], h)
			s.buf = append(s.buf, '\r', '\n')
			_, s.err = s.conn.Write(s.buf[start:])
		} else {
			_, s.err = s.w.Write(s.buf[chunkRoom:])
			s.flushResponse()
		}
	} else if s.conn == nil {
		s.flushResponse()
	}
	if s.conn == nil {
		// HTTP/2 resets a stream whose deadline passes even with nothing
		// to write: an idle watch must not be.
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
	s.buf = s.buf[:chunkRoom]
	if cap(s.buf) > 2*maxBatch {
		s.buf = make([]byte, chunkRoom, 4<<10) // a long initial list passed: give the memory back
	}
	return s.err == nil
}

// setWriteDeadline gives the next write writeTimeout to go out.
func (s *watchStream) setWriteDeadline() {
	d := time.Now().Add(s.writeTimeout)
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(d)
		return
	}
	_ = s.rc.SetWriteDeadline(d)
}

func (s *watchStream) flushResponse() {
	if s.flusher != nil && s.err == nil {
		s.flusher.Flush()
	}
}

// close ends the response: on a taken-over connection, the last chunk,
// then the connection (net/http would have reused it; a client dials again).
func (s *watchStream) close() {
	if s.conn == nil {
		return
	}
	if s.err == nil {
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = s.conn.Close()
}
