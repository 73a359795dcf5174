package h2server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/net/http2"
)

// stream is one request and its answer. Fields after reset are guarded
// by the connection's mu.
type stream struct {
	c      *conn
	id     uint32
	ctx    context.Context
	cancel context.CancelFunc

	// reset: RST_STREAM was sent or received, or the connection ended;
	// nothing more is written.
	reset atomic.Bool
	// ended: the answer's END_STREAM is written.
	ended atomic.Bool

	body           []byte // received and not yet read
	bodyErr        error  // what a read returns once body is empty: io.EOF after END_STREAM
	bodyClosed     bool   // the handler closed the body: what comes is dropped
	remoteClosed   bool   // END_STREAM received, or the stream reset
	declLen        int64  // the request's Content-Length, or -1
	recvLen        int64  // body bytes received
	recvWindow     int64  // what the client may still send on the stream
	recvUnreturned int64  // read but not yet given back to the client
	sendWindow     int64  // what the server may still send on the stream
}

// closeRemote ends the request body with err; c.mu is held.
func (s *stream) closeRemote(err error) {
	s.remoteClosed = true
	if s.bodyErr == nil {
		s.bodyErr = err
	}
}

func (c *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return http2.ConnectionError(http2.ErrCodeProtocol) // RFC 9113 §5.1.1
	}
	c.mu.Lock()
	if s := c.streams[id]; s != nil {
		if s.remoteClosed && s.ended.Load() {
			// Closed both ways, its handler not yet done (RFC 9113 §5.1).
			c.mu.Unlock()
			return http2.ConnectionError(http2.ErrCodeStreamClosed)
		}
		// Trailers: they end the request (RFC 9113 §8.1); the
		// handlers here read none.
		remoteClosed := s.remoteClosed
		if !remoteClosed && f.StreamEnded() {
			c.endBody(s)
		}
		c.mu.Unlock()
		if remoteClosed {
			c.streamClosed(s)
		} else if !f.StreamEnded() {
			c.resetStream(s, http2.ErrCodeProtocol)
		}
		return nil
	}
	if id <= c.maxStreamID {
		// A stream that has ended (RFC 9113 §5.1), or one the client
		// skipped and may not open now (§5.1.1).
		closed := c.recentlyClosed(id)
		c.mu.Unlock()
		if closed {
			return http2.ConnectionError(http2.ErrCodeStreamClosed)
		}
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	c.maxStreamID = id
	if f.HasPriority() && f.Priority.StreamDep == id {
		// A stream cannot depend on itself (RFC 9113 §5.3.1).
		c.rememberClosed(id)
		c.mu.Unlock()
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, id, http2.ErrCodeProtocol) })
		return nil
	}
	if c.goingAway {
		// Past the GOAWAY's last stream: the client knows it was not
		// served and may send it again elsewhere.
		c.mu.Unlock()
		return nil
	}
	full := c.active >= c.maxStreams
	if full {
		c.rememberClosed(id)
	}
	c.mu.Unlock()
	if full {
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, id, http2.ErrCodeRefusedStream) })
		return nil
	}

	s := &stream{c: c, id: id, declLen: -1, recvWindow: streamRecvWindow}
	req, err := c.newRequest(f, s)
	if err != nil {
		c.mu.Lock()
		c.rememberClosed(id)
		c.mu.Unlock()
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, id, http2.ErrCodeProtocol) })
		return nil
	}
	h := c.handler
	if f.Truncated {
		h = http.HandlerFunc(headerListTooLong)
	}
	s.ctx, s.cancel = context.WithCancel(c.baseCtx)
	req = req.WithContext(s.ctx)
	rw := &responseWriter{s: s, req: req, header: make(http.Header), declLen: -1}

	c.mu.Lock()
	s.sendWindow = c.peerInitialWindow
	if f.StreamEnded() {
		s.closeRemote(io.EOF)
	}
	c.streams[id] = s
	c.active++
	if c.active == 1 && c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.mu.Unlock()
	c.startHandler(job{s, rw, req, h})
	return nil
}

// headerListTooLong answers a request whose headers passed the advertised
// limit, as x/net's server does.
func headerListTooLong(w http.ResponseWriter, _ *http.Request) {
	const code = http.StatusRequestHeaderFieldsTooLarge
	w.WriteHeader(code)
	_, _ = io.WriteString(w, "<h1>HTTP Error 431</h1><p>Request Header Field(s) Too Large</p>")
}

// connHeaders may not appear in HTTP/2 (RFC 9113 §8.2.2).
var connHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"}

// newRequest makes the handler's request from HEADERS (RFC 9113 §8.3.1).
func (c *conn) newRequest(f *http2.MetaHeadersFrame, s *stream) (*http.Request, error) {
	method, path := f.PseudoValue("method"), f.PseudoValue("path")
	scheme, authority := f.PseudoValue("scheme"), f.PseudoValue("authority")
	if method == "" || path == "" || scheme == "" || method == http.MethodConnect {
		return nil, fmt.Errorf("malformed request pseudo-headers")
	}
	fields := f.RegularFields()
	header := make(http.Header, len(fields))
	// One array for the values, as net/http's reader has: a field seen
	// once (nearly every one) takes its one-value slice from it.
	values := make([]string, len(fields))
	var cookies []string
	for i, hf := range fields {
		key := textproto.CanonicalMIMEHeaderKey(hf.Name)
		if key == "Cookie" {
			cookies = append(cookies, hf.Value)
			continue
		}
		if vv, ok := header[key]; ok {
			header[key] = append(vv, hf.Value) // copies: the slice's capacity is its length
			continue
		}
		values[i] = hf.Value
		header[key] = values[i : i+1 : i+1]
	}
	if len(cookies) > 0 {
		// RFC 9113 §8.2.3: one field for HTTP/1.1 semantics.
		header["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	for _, k := range connHeaders {
		if _, ok := header[k]; ok {
			return nil, fmt.Errorf("header %q not allowed in HTTP/2", k)
		}
	}
	if te := header["Te"]; len(te) > 1 || len(te) == 1 && te[0] != "trailers" {
		return nil, fmt.Errorf(`header "TE" may only be "trailers" in HTTP/2`)
	}
	if authority == "" {
		authority = header.Get("Host")
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, err
	}
	req := &http.Request{
		Method:        method,
		URL:           u,
		RequestURI:    path,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        header,
		Host:          authority,
		RemoteAddr:    c.remoteAddr,
		TLS:           c.tlsState,
		Body:          http.NoBody,
		ContentLength: 0,
	}
	if !f.StreamEnded() {
		req.Body = &requestBody{s: s}
		req.ContentLength = -1
		if v := header["Content-Length"]; len(v) == 1 {
			if n, err := strconv.ParseUint(v[0], 10, 63); err == nil {
				req.ContentLength = int64(n)
				s.declLen = int64(n)
			}
		}
	}
	return req, nil
}

func (c *conn) onData(f *http2.DataFrame) error {
	id, n := f.StreamID, int64(f.Length)
	data := f.Data()
	c.mu.Lock()
	if n > c.recvWindow {
		c.mu.Unlock()
		return http2.ConnectionError(http2.ErrCodeFlowControl)
	}
	c.recvWindow -= n
	s := c.streams[id]
	if s == nil {
		idle := id > c.maxStreamID
		// A stream that has ended: the bytes go back to the connection.
		c.recvUnreturned += n
		update := c.takeConnUpdate()
		c.mu.Unlock()
		c.sendWindowUpdates(0, 0, update)
		if idle {
			return http2.ConnectionError(http2.ErrCodeProtocol)
		}
		// RFC 9113 §5.1: a stream that has ended takes no more DATA.
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, id, http2.ErrCodeStreamClosed) })
		return nil
	}
	if s.remoteClosed {
		c.recvUnreturned += n
		update := c.takeConnUpdate()
		c.mu.Unlock()
		c.sendWindowUpdates(0, 0, update)
		c.streamClosed(s)
		return nil
	}
	var code http2.ErrCode
	switch {
	case n > s.recvWindow:
		code = http2.ErrCodeFlowControl
	case s.declLen >= 0 && s.recvLen+int64(len(data)) > s.declLen:
		code = http2.ErrCodeProtocol // more than its Content-Length
	}
	if code != 0 {
		c.recvUnreturned += n
		update := c.takeConnUpdate()
		c.mu.Unlock()
		c.sendWindowUpdates(0, 0, update)
		c.resetStream(s, code)
		return nil
	}
	s.recvWindow -= n
	s.recvLen += int64(len(data))
	// Padding, and a body the handler no longer reads, go straight back.
	padding := n - int64(len(data))
	if s.bodyClosed {
		padding = n
	} else {
		s.body = append(s.body, data...)
	}
	c.recvUnreturned += padding
	if f.StreamEnded() {
		c.endBody(s)
	}
	c.cond.Broadcast()
	update := c.takeConnUpdate()
	c.mu.Unlock()
	c.sendWindowUpdates(0, 0, update)
	return nil
}

// streamClosed answers a frame on a stream whose request has ended, or
// that was reset, with STREAM_CLOSED (RFC 9113 §5.1).
func (c *conn) streamClosed(s *stream) {
	if s.reset.Load() {
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, s.id, http2.ErrCodeStreamClosed) })
		return
	}
	c.resetStream(s, http2.ErrCodeStreamClosed)
}

// rememberClosed notes a stream that has ended; c.mu is held.
func (c *conn) rememberClosed(id uint32) {
	c.closedIDs[c.closedNext%len(c.closedIDs)] = id
	c.closedNext++
}

// recentlyClosed reports whether id is among the streams that ended last;
// c.mu is held.
func (c *conn) recentlyClosed(id uint32) bool {
	for _, v := range c.closedIDs {
		if v == id {
			return true
		}
	}
	return false
}

// endBody ends a request body at END_STREAM; c.mu is held.
func (c *conn) endBody(s *stream) {
	if s.declLen >= 0 && s.recvLen != s.declLen {
		s.closeRemote(fmt.Errorf("http2: request declared a Content-Length of %d but only wrote %d bytes", s.declLen, s.recvLen))
	} else {
		s.closeRemote(io.EOF)
	}
	c.cond.Broadcast()
}

// takeConnUpdate returns the connection window to give back, once half
// of it is due; c.mu is held.
func (c *conn) takeConnUpdate() uint32 {
	if c.recvUnreturned < connRecvWindow/2 {
		return 0
	}
	n := c.recvUnreturned
	c.recvUnreturned = 0
	c.recvWindow += n
	return uint32(n)
}

func (c *conn) sendWindowUpdates(id uint32, stream, conn uint32) {
	if stream == 0 && conn == 0 {
		return
	}
	c.queueCtrl(func(b []byte) []byte {
		if stream > 0 {
			b = appendWindowUpdate(b, id, stream)
		}
		if conn > 0 {
			b = appendWindowUpdate(b, 0, conn)
		}
		return b
	})
}

// requestBody is a request's body as its DATA frames bring it.
type requestBody struct{ s *stream }

func (b *requestBody) Read(p []byte) (int, error) {
	s := b.s
	c := s.c
	c.mu.Lock()
	for len(s.body) == 0 && s.bodyErr == nil && !s.bodyClosed {
		c.cond.Wait()
	}
	if s.bodyClosed {
		c.mu.Unlock()
		return 0, errBodyClosed
	}
	if len(s.body) == 0 {
		err := s.bodyErr
		c.mu.Unlock()
		return 0, err
	}
	n := copy(p, s.body)
	s.body = s.body[n:]
	if len(s.body) == 0 {
		s.body = nil
	}
	var err error
	if len(s.body) == 0 && s.bodyErr == io.EOF {
		err = io.EOF
	}
	// Give the window back once half of it is read (x/net returns it
	// likewise, in batches); a finished request needs none on its stream.
	var streamUpdate uint32
	s.recvUnreturned += int64(n)
	if !s.remoteClosed && s.recvUnreturned >= streamRecvWindow/2 {
		streamUpdate = uint32(s.recvUnreturned)
		s.recvWindow += s.recvUnreturned
		s.recvUnreturned = 0
	}
	c.recvUnreturned += int64(n)
	connUpdate := c.takeConnUpdate()
	c.mu.Unlock()
	c.sendWindowUpdates(s.id, streamUpdate, connUpdate)
	return n, err
}

func (b *requestBody) Close() error {
	s := b.s
	c := s.c
	c.mu.Lock()
	s.bodyClosed = true
	c.recvUnreturned += int64(len(s.body))
	s.body = nil
	update := c.takeConnUpdate()
	c.cond.Broadcast()
	c.mu.Unlock()
	c.sendWindowUpdates(0, 0, update)
	return nil
}

// job is a stream for a handler goroutine to serve.
type job struct {
	s   *stream
	rw  *responseWriter
	req *http.Request
	h   http.Handler
}

// startHandler serves a stream on the connection's idle handler goroutine,
// or on a new one. A goroutine that has served a stream keeps its stack,
// grown by the handler: a new one starts small and grows by copying, on
// every request (4–9 % of a node's CPU went to runtime.newstack and
// goroutine creation under renewals and gets). A connection keeps one
// idle, so many quiet connections cost little; the garbage collector
// shrinks the stack of one that stays idle.
func (c *conn) startHandler(j job) {
	select {
	case c.jobs <- j:
	default:
		c.handlers.Add(1)
		go c.handlerLoop(j)
	}
}

// handlerLoop serves j, then the connection's next streams while it is
// the idle one; it ends with the connection.
func (c *conn) handlerLoop(j job) {
	defer c.handlers.Done()
	growStack()
	for {
		c.serveStream(j)
		if !c.idleHandler.CompareAndSwap(false, true) {
			return // another goroutine waits already
		}
		var ok bool
		j, ok = <-c.jobs
		c.idleHandler.Store(false)
		if !ok {
			return
		}
	}
}

// serveStream runs the handler for one stream.
func (c *conn) serveStream(j job) {
	s, rw := j.s, j.rw
	done := false
	defer func() {
		if !done {
			// As net/http does: log a panic (but http.ErrAbortHandler)
			// and reset the stream, the connection unharmed.
			if e := recover(); e != nil && e != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.logf("http2: panic serving %v: %v\n%s", c.remoteAddr, e, buf)
			}
			c.resetStream(s, http2.ErrCodeInternal)
		}
		c.streamDone(s, rw)
	}()
	j.h.ServeHTTP(rw, j.req)
	rw.finish()
	done = true
}

// growStack grows a new handler goroutine's stack in one step to what
// the API's handlers take, rather than by doubling and copying it as the
// handler goes deeper.
//
//go:noinline
func growStack() {
	var frame [handlerStack]byte
	if neverTrue {
		keep(frame[:])
	}
}

// handlerStack is growStack's frame: the stack grows to at least twice
// this, which a renewal's handler chain fits in.
const handlerStack = 16 << 10

// neverTrue keeps growStack's frame from being compiled away.
var neverTrue bool

//go:noinline
func keep([]byte) {}

// streamDone forgets a stream whose handler has returned.
func (c *conn) streamDone(s *stream, rw *responseWriter) {
	rw.release()
	c.mu.Lock()
	delete(c.streams, s.id)
	c.rememberClosed(s.id)
	c.active--
	// What the client sent that the handler did not read goes back.
	c.recvUnreturned += int64(len(s.body))
	s.body = nil
	update := c.takeConnUpdate()
	// A body still coming after the whole answer: RFC 9113 §8.1 lets
	// the server stop it with NO_ERROR.
	stopBody := !s.remoteClosed && !s.reset.Load()
	s.closeRemote(errStreamClosed)
	idle := c.active == 0
	closing := idle && c.goingAway
	if idle && c.idleTimer != nil && !c.closed {
		c.idleTimer.Reset(c.idleTimeout)
	}
	c.mu.Unlock()
	s.cancel()
	if stopBody && s.reset.CompareAndSwap(false, true) {
		c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, s.id, http2.ErrCodeNo) })
	}
	c.sendWindowUpdates(0, 0, update)
	if closing {
		c.closeConn()
	}
}
