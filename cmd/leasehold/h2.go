package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Go's HTTP/2 server writes a response's HEADERS frame and flushes it
// before the handler may send the body (it must not keep the handler's
// header map), then writes and flushes the DATA frame: two TLS records and
// two write system calls per response, and the client wakes up twice for
// each. A renewal's whole answer is a few hundred bytes. The API serves
// HTTP/2 on connections that hold back a write ending with a HEADERS frame
// whose body follows and send it with the next write, the body tens of
// microseconds later: one record, one system call, one wakeup. A body that
// does not follow within holdHeadersFor (a watch waiting for its first
// event) does not hold the headers longer than that. A WINDOW_UPDATE (the
// server returns the window of every 4 KiB of request bodies) waits for
// the next response alike: a client may send 1 MiB before it needs one.

// holdHeadersFor bounds how long response headers (or a WINDOW_UPDATE)
// wait for what follows.
const holdHeadersFor = time.Millisecond

// maxHeld bounds what a connection holds back (several streams' headers).
const maxHeld = 16 << 10

// serveHTTP2 makes srv serve HTTP/2 over TLS through h2 on connections
// that send a response's headers with its body. srv.ConnContext and
// srv.BaseContext still apply: net/http passes the connection's context
// with the handler, as it does to its own HTTP/2 server.
func serveHTTP2(srv *http.Server, h2 *http2.Server) error {
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return err
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		var ctx context.Context
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		h2.ServeConn(newHeadersWithBodyConn(c), &http2.ServeConnOpts{Context: ctx, Handler: grownStack{h}, BaseConfig: hs})
	}
	return nil
}

// grownStack serves a request with its goroutine's stack grown first, in
// one step, to what the API's handlers take. The HTTP/2 server serves
// every stream on a new goroutine; the runtime starts its stack at the
// average size of all goroutines' (mostly idle connections') and doubles
// it as the handler goes deeper, copying it each time: 3.1–4.4 % of a
// node's CPU under renewals in runtime.newstack, 2.0–3.0 % with the one
// growth here, which also spares the later, deeper copies. (HTTP/1.1
// serves a connection's requests on one goroutine, whose stack stays
// grown.)
type grownStack struct{ http.Handler }

func (g grownStack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	growStack()
	g.Handler.ServeHTTP(w, r)
}

// handlerStack is growStack's frame: the stack grows to at least twice
// this, which a renewal's handler chain fits in.
const handlerStack = 16 << 10

// neverTrue keeps growStack's frame from being compiled away.
var neverTrue bool

//go:noinline
func growStack() {
	var frame [handlerStack]byte
	if neverTrue {
		keep(frame[:])
	}
}

//go:noinline
func keep([]byte) {}

// headersWithBodyConn is a server's TLS connection that holds back a write
// ending with a HEADERS frame that has END_HEADERS and not END_STREAM
// (a body follows), or with a WINDOW_UPDATE, until the next write or
// holdHeadersFor. It follows the frames across writes (RFC 9113 §4.1: a
// 9-byte header, the payload's length in its first three bytes, then type
// and flags); the server writes nothing else.
type headersWithBodyConn struct {
	*tls.Conn

	timer *time.Timer // sends what is held; stopped while nothing is

	mu   sync.Mutex
	held []byte
	err  error // a write of held bytes failed: the connection is broken

	hdr      [9]byte // the frame header being read across writes
	nhdr     int     // its bytes seen so far
	payload  int     // payload bytes of the current frame still to come
	lastHeld bool    // the last complete frame waits for the next: HEADERS with a body to follow, WINDOW_UPDATE
}

func newHeadersWithBodyConn(c *tls.Conn) *headersWithBodyConn {
	hc := &headersWithBodyConn{Conn: c}
	hc.timer = time.AfterFunc(time.Hour, hc.sendHeld)
	hc.timer.Stop()
	return hc
}

const (
	frameHeaders      = 0x1
	frameWindowUpdate = 0x8
	flagEndStream     = 0x1
	flagEndHeaders    = 0x4
)

// scan follows the frames in p and reports whether p ends exactly after a
// frame that waits for the next write.
func (c *headersWithBodyConn) scan(p []byte) bool {
	for len(p) > 0 {
		if c.payload > 0 {
			n := min(c.payload, len(p))
			c.payload -= n
			p = p[n:]
			continue
		}
		n := copy(c.hdr[c.nhdr:], p)
		c.nhdr += n
		p = p[n:]
		if c.nhdr < len(c.hdr) {
			break
		}
		c.nhdr = 0
		c.payload = int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		typ, flags := c.hdr[3], c.hdr[4]
		c.lastHeld = typ == frameHeaders && flags&flagEndHeaders != 0 && flags&flagEndStream == 0 ||
			typ == frameWindowUpdate
	}
	return c.nhdr == 0 && c.payload == 0 && c.lastHeld
}

func (c *headersWithBodyConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.scan(p) && len(c.held)+len(p) <= maxHeld {
		c.held = append(c.held, p...)
		c.timer.Reset(holdHeadersFor)
		return len(p), nil
	}
	if len(c.held) == 0 {
		return c.Conn.Write(p)
	}
	c.timer.Stop()
	c.held = append(c.held, p...)
	_, err := c.Conn.Write(c.held)
	c.held = c.held[:0]
	if err != nil {
		c.err = err
		return 0, err
	}
	return len(p), nil
}

// sendHeld writes the held headers whose body did not follow in time.
func (c *headersWithBodyConn) sendHeld() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.held) == 0 || c.err != nil {
		return
	}
	if _, err := c.Conn.Write(c.held); err != nil {
		c.err = err
	}
	c.held = c.held[:0]
}

// Close closes the connection without waiting for a write in progress
// (net/http closes a connection to end a write that blocks); headers
// still held go nowhere, as they would if written to a closing connection.
func (c *headersWithBodyConn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}
