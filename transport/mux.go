package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/internal/quietlog"
)

// The first byte a dialer writes on a peer connection says what it carries.
const (
	connRaft        byte = 1
	connRPC         byte = 2
	connApplyStream byte = 3
)

// handshakeTimeout bounds the wait for a new connection's TLS handshake
// and first byte.
const handshakeTimeout = 10 * time.Second

// Config configures a Mux.
type Config struct {
	// Addr is the peer address to listen on (host:port).
	Addr string
	// DialRewrite, if set, maps a peer address to the address actually
	// dialled, for Raft and RPC alike. Tests use it to route each link
	// through a fault-injecting proxy.
	DialRewrite func(addr string) string
	// TLS, if set, is the peer port's mutual TLS: every connection,
	// accepted or dialled, is TLS with a certificate signed by the peer
	// CA on both ends. Nil means plain TCP.
	TLS    *PeerTLS
	Logger hclog.Logger
	// GarbageLog, if set, takes the lines about connections that anyone
	// can cause: failed handshakes, unknown connection types and
	// (RaftLogger) Raft's undecodable commands, a few a second at most.
	GarbageLog *quietlog.Limiter
}

// Mux owns the peer port: it accepts connections, reads their first byte and
// hands Raft connections to the Raft stream layer and RPC connections to the
// RPC server. It tracks every connection so Close can end them all, even
// ones blocked in a read without deadline.
type Mux struct {
	cfg    Config
	ln     net.Listener
	logger hclog.Logger
	tls    *peerTLS    // nil: plain TCP
	tlsCfg *tls.Config // of accepted connections
	// handshakeTimeout bounds a new connection's TLS handshake and first
	// byte; tests shorten it.
	handshakeTimeout time.Duration

	raftCh chan net.Conn

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	handler Handler
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup
}

// Listen binds the peer port. Call Serve to start accepting. With
// cfg.TLS it first loads and checks the TLS files, and returns their
// error.
func Listen(cfg Config) (*Mux, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	m := &Mux{
		cfg:              cfg,
		logger:           cfg.Logger,
		handshakeTimeout: handshakeTimeout,
		raftCh:           make(chan net.Conn, 16),
		conns:            map[net.Conn]struct{}{},
		done:             make(chan struct{}),
	}
	if cfg.TLS != nil {
		p, err := newPeerTLS(*cfg.TLS, cfg.Logger)
		if err != nil {
			return nil, err
		}
		m.tls, m.tlsCfg = p, p.serverConfig()
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on peer address %s: %w", cfg.Addr, err)
	}
	m.ln = ln
	return m, nil
}

// Addr is the bound address.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Serve accepts connections until Close, answering RPCs with h.
func (m *Mux) Serve(h Handler) {
	m.mu.Lock()
	m.handler = h
	m.mu.Unlock()
	m.wg.Add(1)
	go m.acceptLoop()
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			m.logger.Error("peer accept failed", "error", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.route(c)
	}
}

func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
}

// route reads the first byte of accepted connection raw and hands the
// connection on. With TLS the handshake comes first: nothing a peer sends
// is read, let alone decoded, before its certificate was verified.
func (m *Mux) route(raw net.Conn) {
	defer m.wg.Done()
	_ = raw.SetDeadline(time.Now().Add(m.handshakeTimeout))
	c := raw
	if m.tls != nil {
		tc := tls.Server(raw, m.tlsCfg)
		err := tc.Handshake()
		if err == nil {
			_, err = tc.Write([]byte{tlsAccepted})
		}
		if err != nil {
			switch {
			case m.closing():
			case errors.Is(err, io.EOF):
				// Closed before sending a byte: a port probe.
				m.logger.Debug("peer connection closed before the TLS handshake", "remote", raw.RemoteAddr())
			default:
				m.garbage("peer connection refused: TLS handshake failed", "remote", raw.RemoteAddr(), "error", err)
			}
			m.untrack(raw)
			raw.Close()
			return
		}
		c = tc
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		m.untrack(raw)
		c.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	switch b[0] {
	case connRaft:
		select {
		case m.raftCh <- &trackedConn{Conn: c, raw: raw, m: m}:
		case <-m.done:
			m.untrack(raw)
			c.Close()
		}
	case connRPC, connApplyStream:
		m.mu.Lock()
		h := m.handler
		m.mu.Unlock()
		if b[0] == connRPC {
			serveRPC(c, h, m.logger)
		} else {
			serveApplyStream(c, h, m.logger)
		}
		m.untrack(raw)
		c.Close()
	default:
		m.garbage("peer connection with unknown type", "type", b[0], "remote", c.RemoteAddr())
		m.untrack(raw)
		c.Close()
	}
}

func (m *Mux) closing() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// trackedConn forgets itself on Close. raw is the TCP connection under
// Conn (Conn itself without TLS), the one the mux tracks.
type trackedConn struct {
	net.Conn
	raw  net.Conn
	m    *Mux
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.m.untrack(t.raw) })
	return t.Conn.Close()
}

// Close stops accepting and closes every connection.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	conns := make([]net.Conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	err := m.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	m.wg.Wait()
	return err
}

// dial connects to the peer at addr for a connection of type typ. With
// TLS it returns once the peer has accepted this node's certificate; the
// peer's certificate must name addr's host, even when DialRewrite routes
// the connection elsewhere.
func (m *Mux) dial(addr string, typ byte, timeout time.Duration) (net.Conn, error) {
	target := addr
	if m.cfg.DialRewrite != nil {
		target = m.cfg.DialRewrite(addr)
	}
	raw, err := net.DialTimeout("tcp", target, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	_ = raw.SetDeadline(time.Now().Add(timeout))
	c := raw
	if m.tls != nil {
		tc := tls.Client(raw, m.tls.clientConfig(addr))
		if err := tc.Handshake(); err != nil {
			raw.Close()
			return nil, fmt.Errorf("peer TLS handshake: %w", err)
		}
		c = tc
	}
	if _, err := c.Write([]byte{typ}); err != nil {
		raw.Close()
		return nil, err
	}
	if m.tls != nil {
		// Under TLS 1.3 a refusal of this node's certificate arrives here,
		// as the server's alert.
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != tlsAccepted {
			raw.Close()
			if err == nil {
				err = errNotAccepted
			}
			return nil, fmt.Errorf("peer TLS: %w", err)
		}
	}
	_ = raw.SetDeadline(time.Time{})
	return c, nil
}

// RaftLayer is the raft.StreamLayer over the mux.
func (m *Mux) RaftLayer() raft.StreamLayer { return raftLayer{m} }

type raftLayer struct{ m *Mux }

func (l raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftCh:
		// A connection queued before Close is not handed out after it.
		select {
		case <-l.m.done:
			c.Close()
			return nil, errMuxClosed
		default:
			return c, nil
		}
	case <-l.m.done:
		return nil, errMuxClosed
	}
}

var errMuxClosed = errors.New("transport: mux closed")

// Close is a no-op: the mux owns the listener and is closed after Raft.
func (l raftLayer) Close() error { return nil }

func (l raftLayer) Addr() net.Addr { return l.m.ln.Addr() }

func (l raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return l.m.dial(string(addr), connRaft, timeout)
}

// garbage logs a warning about a connection anyone could have made.
func (m *Mux) garbage(msg string, args ...any) {
	if m.cfg.GarbageLog != nil {
		m.cfg.GarbageLog.Warn(msg, args...)
		return
	}
	m.logger.Warn(msg, args...)
}

// RaftLogger is the logger for Raft's transport on this port: its
// warnings and errors, which a stranger's bytes cause one per connection,
// go through GarbageLog when it is set.
func (m *Mux) RaftLogger(l hclog.Logger) hclog.Logger {
	if m.cfg.GarbageLog == nil {
		return l
	}
	return m.cfg.GarbageLog.Logger(l)
}
