// Package h2server serves HTTP/2 over TLS (RFC 9113) to a net/http
// handler with as few goroutine handoffs per request as HTTP/1.1 takes.
//
// x/net's server (the one net/http and kube-apiserver use) runs each
// connection as a loop that owns all its state: a frame read on one
// goroutine is handed to the loop, the loop starts the handler on a third,
// and every write the handler makes is handed back to the loop and waited
// for. A small request and its answer cross goroutines about a dozen
// times, and on a busy node those wakeups cost more CPU than TLS does.
// Here, as in gRPC's transport, the connection's reader decodes frames and
// starts handlers, and a handler writes its own frames to the connection
// under a lock: a request is one handoff (the handler's goroutine) and its
// answer one write. Frames are read with x/net's Framer (which bounds
// frame and header sizes) and headers coded with its hpack.
package h2server

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/http2"
)

// Settings this server advertises; they are x/net's defaults, so that a
// client sees what it would from kube-apiserver.
const (
	// streamRecvWindow is each stream's receive window: what a client may
	// send of a request body before the handler reads it.
	streamRecvWindow = 1 << 20
	// connRecvWindow is the connection's receive window.
	connRecvWindow = 1 << 20
	// maxReadFrameSize is the largest frame a client may send.
	maxReadFrameSize = 1 << 20
	// headerTableSize is the HPACK table the client may use.
	headerTableSize = 4096
	// prefaceTimeout bounds the wait for a client's preface and SETTINGS.
	prefaceTimeout = 10 * time.Second
	// maxControlBytes bounds the control frames (ACKs, RST_STREAMs,
	// WINDOW_UPDATEs) waiting for a connection a client does not read.
	maxControlBytes = 1 << 20
	// maxSettings bounds the settings in one frame, as x/net does.
	maxSettings = 100
)

// Server serves HTTP/2 connections.
type Server struct {
	// MaxConcurrentStreams is the number of requests a connection may
	// have in progress; another is refused with REFUSED_STREAM.
	MaxConcurrentStreams uint32

	mu    sync.Mutex
	conns map[*conn]struct{}
}

// Configure makes srv serve HTTP/2 through s on TLS connections that
// negotiate "h2", with srv's handler, header limit, idle timeout, error
// log and contexts (BaseContext, ConnContext); srv.Shutdown sends each
// connection a GOAWAY and closes it once its requests are done.
func (s *Server) Configure(srv *http.Server) {
	if srv.TLSNextProto == nil {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		ctx := context.Background()
		// h is net/http's handler for this connection: it knows the
		// context ConnContext made for it.
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		s.ServeConn(hs, c, ctx, h)
	}
	srv.RegisterOnShutdown(s.shutdown)
	if srv.TLSConfig != nil && !slices.Contains(srv.TLSConfig.NextProtos, http2.NextProtoTLS) {
		srv.TLSConfig.NextProtos = append([]string{http2.NextProtoTLS}, srv.TLSConfig.NextProtos...)
	}
}

// ServeConn serves HTTP/2 on c (a *tls.Conn whose handshake is done, for
// requests to carry its state) until the client or the server closes it
// and its handlers have returned.
// hs gives the limits (MaxHeaderBytes, IdleTimeout) and the error log.
func (s *Server) ServeConn(hs *http.Server, c net.Conn, ctx context.Context, h http.Handler) {
	var cs *tls.ConnectionState
	if tc, ok := c.(*tls.Conn); ok {
		st := tc.ConnectionState()
		cs = &st
	}
	maxStreams := s.MaxConcurrentStreams
	if maxStreams == 0 {
		maxStreams = 100
	}
	maxHeader := hs.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = http.DefaultMaxHeaderBytes
	}
	cn := newConn(c, cs, ctx, h, hs.ErrorLog)
	cn.maxStreams = int(maxStreams)
	// HTTP/2 counts 32 bytes more a header field than HTTP/1.1's limit
	// does: allow ten such fields, as x/net does.
	cn.maxHeaderList = uint32(maxHeader + 10*32)
	cn.idleTimeout = hs.IdleTimeout
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[cn] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, cn)
		s.mu.Unlock()
	}()
	cn.serve()
	// Every stream has been told the connection is gone; the connection
	// ends with the last of them.
	cn.handlers.Wait()
}

func (s *Server) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.goAway(http2.ErrCodeNo)
	}
}

func (c *conn) logf(format string, args ...any) {
	if c.errorLog != nil {
		c.errorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}
