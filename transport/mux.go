package transport

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The first byte a dialer writes on a peer connection says what it carries.
const (
	connRaft        byte = 1
	connRPC         byte = 2
	connApplyStream byte = 3
)

// handshakeTimeout bounds the wait for a new connection's first byte.
const handshakeTimeout = 10 * time.Second

// Config configures a Mux.
type Config struct {
	// Addr is the peer address to listen on (host:port).
	Addr string
	// DialRewrite, if set, maps a peer address to the address actually
	// dialled, for Raft and RPC alike. Tests use it to route each link
	// through a fault-injecting proxy.
	DialRewrite func(addr string) string
	Logger      hclog.Logger
}

// Mux owns the peer port: it accepts connections, reads their first byte and
// hands Raft connections to the Raft stream layer and RPC connections to the
// RPC server. It tracks every connection so Close can end them all, even
// ones blocked in a read without deadline.
type Mux struct {
	cfg    Config
	ln     net.Listener
	logger hclog.Logger

	raftCh chan net.Conn

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	handler Handler
	closed  bool
	done    chan struct{}
	wg      sync.WaitGroup
}

// Listen binds the peer port. Call Serve to start accepting.
func Listen(cfg Config) (*Mux, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on peer address %s: %w", cfg.Addr, err)
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Mux{
		cfg:    cfg,
		ln:     ln,
		logger: cfg.Logger,
		raftCh: make(chan net.Conn, 16),
		conns:  map[net.Conn]struct{}{},
		done:   make(chan struct{}),
	}, nil
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

func (m *Mux) route(c net.Conn) {
	defer m.wg.Done()
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	if _, err := c.Read(b[:]); err != nil {
		m.untrack(c)
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch b[0] {
	case connRaft:
		select {
		case m.raftCh <- &trackedConn{Conn: c, m: m}:
		case <-m.done:
			m.untrack(c)
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
		m.untrack(c)
		c.Close()
	default:
		m.logger.Warn("peer connection with unknown type", "type", b[0], "remote", c.RemoteAddr())
		m.untrack(c)
		c.Close()
	}
}

// trackedConn forgets itself on Close.
type trackedConn struct {
	net.Conn
	m    *Mux
	once sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() { t.m.untrack(t.Conn) })
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

func (m *Mux) dial(addr string, typ byte, timeout time.Duration) (net.Conn, error) {
	if m.cfg.DialRewrite != nil {
		addr = m.cfg.DialRewrite(addr)
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{typ}); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
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
