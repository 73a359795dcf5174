package h2server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

var (
	errClosed       = errors.New("http2: connection closed")
	errStreamClosed = errors.New("http2: stream closed")
	errBodyClosed   = errors.New("http2: request body closed by handler")
)

// conn is one client connection. Its reader goroutine (serve) reads and
// acts on every frame; handlers write their own frames under wmu;
// whoever cannot take wmu queues control frames for its holder.
type conn struct {
	nc            net.Conn
	tlsState      *tls.ConnectionState
	remoteAddr    string
	baseCtx       context.Context
	handler       http.Handler
	errorLog      *log.Logger
	maxStreams    int
	maxHeaderList uint32
	idleTimeout   time.Duration

	fr *http2.Framer // the reader's

	// wmu is held by the goroutine writing frames to bw, which comes
	// from a pool for the time: an idle connection keeps no buffer.
	wmu  sync.Mutex
	bw   *bufio.Writer
	henc *hpack.Encoder
	hbuf bytes.Buffer
	werr error

	// ctrl holds control frames queued by a goroutine that found wmu
	// taken; its holder writes them before letting go.
	ctrlMu      sync.Mutex
	ctrl        []byte
	ctrlPending atomic.Bool

	peerMaxFrame atomic.Uint32 // the client's SETTINGS_MAX_FRAME_SIZE
	newTableSize atomic.Int64  // the client's SETTINGS_HEADER_TABLE_SIZE not yet applied, or -1

	mu                sync.Mutex
	cond              sync.Cond // on mu: a body or a send window changed, or the connection ended
	streams           map[uint32]*stream
	active            int    // streams whose handler runs
	maxStreamID       uint32 // the highest stream a client opened
	sendWindow        int64  // what the server may still send on the connection
	peerInitialWindow int64  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	recvWindow        int64  // what the client may still send on the connection
	recvUnreturned    int64  // bytes read or dropped but not yet given back to the client
	goingAway         bool
	closed            bool
	closedIDs         [64]uint32 // the streams that ended last, for STREAM_CLOSED
	closedNext        int
	idleTimer         *time.Timer

	handlers    sync.WaitGroup // the handler goroutines
	jobs        chan job       // to the idle handler goroutine; closed when the connection ends
	idleHandler atomic.Bool    // a handler goroutine waits on jobs
}

func newConn(nc net.Conn, cs *tls.ConnectionState, ctx context.Context, h http.Handler, errorLog *log.Logger) *conn {
	c := &conn{
		nc:                nc,
		tlsState:          cs,
		remoteAddr:        nc.RemoteAddr().String(),
		baseCtx:           ctx,
		handler:           h,
		errorLog:          errorLog,
		streams:           map[uint32]*stream{},
		sendWindow:        65535, // RFC 9113 §6.9.2, until the client raises it
		peerInitialWindow: 65535,
		recvWindow:        connRecvWindow,
	}
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.peerMaxFrame.Store(16384)
	c.newTableSize.Store(-1)
	c.cond.L = &c.mu
	c.jobs = make(chan job)
	return c
}

// serve reads and handles the client's frames until the connection ends.
func (c *conn) serve() {
	defer c.cleanup()
	if c.idleTimeout > 0 {
		c.idleTimer = time.AfterFunc(c.idleTimeout, c.onIdle)
	}
	// The server's preface: its settings and the connection's window
	// raised from the protocol's 64 KiB to connRecvWindow.
	c.queueCtrl(func(b []byte) []byte {
		b = appendSettings(b,
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: maxReadFrameSize},
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: uint32(c.maxStreams)},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.maxHeaderList},
			http2.Setting{ID: http2.SettingHeaderTableSize, Val: headerTableSize},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamRecvWindow},
		)
		return appendWindowUpdate(b, 0, connRecvWindow-65535)
	})

	_ = c.nc.SetReadDeadline(time.Now().Add(prefaceTimeout))
	var preface [len(http2.ClientPreface)]byte
	if _, err := io.ReadFull(c.nc, preface[:]); err != nil || string(preface[:]) != http2.ClientPreface {
		return
	}
	c.fr = http2.NewFramer(nil, c.nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(headerTableSize, nil)
	c.fr.MaxHeaderListSize = c.maxHeaderList
	c.fr.SetMaxReadFrameSize(maxReadFrameSize)
	c.fr.SetReuseFrames()

	first := true
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &se):
				c.onStreamError(se)
				continue
			case errors.As(err, &ce):
				c.fail(http2.ErrCode(ce))
			case errors.Is(err, http2.ErrFrameTooLarge):
				c.fail(http2.ErrCodeFrameSize)
			}
			return
		}
		if first {
			// RFC 9113 §3.4: the client's preface ends with SETTINGS.
			if sf, ok := f.(*http2.SettingsFrame); !ok || sf.IsAck() {
				c.fail(http2.ErrCodeProtocol)
				return
			}
			first = false
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		if err := c.process(f); err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				c.fail(http2.ErrCode(ce))
			}
			return
		}
	}
}

// process acts on one frame; an error ends the connection.
func (c *conn) process(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			c.queueCtrl(func(b []byte) []byte { return appendPing(b, data) })
		}
	case *http2.RSTStreamFrame:
		return c.onReset(f)
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			// A stream cannot depend on itself (RFC 9113 §5.3.1).
			c.mu.Lock()
			s := c.streams[f.StreamID]
			c.mu.Unlock()
			if s != nil {
				c.resetStream(s, http2.ErrCodeProtocol)
			} else {
				c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, f.StreamID, http2.ErrCodeProtocol) })
			}
		}
	case *http2.PushPromiseFrame:
		// RFC 9113 §8.4: clients cannot push.
		return http2.ConnectionError(http2.ErrCodeProtocol)
	case *http2.GoAwayFrame:
		// The client opens no more streams and closes the connection
		// when it is done with the ones it has.
	}
	// Priorities and unknown frame types are ignored (RFC 9113 §5.3.2, §5.5).
	return nil
}

// onStreamError answers a frame the framer refused for one stream (an
// invalid header field, say) with RST_STREAM; a HEADERS frame refused so
// still opened its stream.
func (c *conn) onStreamError(se http2.StreamError) {
	c.mu.Lock()
	s := c.streams[se.StreamID]
	if s == nil && se.StreamID%2 == 1 && se.StreamID > c.maxStreamID {
		c.maxStreamID = se.StreamID
		c.rememberClosed(se.StreamID)
	}
	c.mu.Unlock()
	if s != nil {
		c.resetStream(s, se.Code)
		return
	}
	c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, se.StreamID, se.Code) })
}

func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	// Repeated settings are applied in order (RFC 9113 §6.5.3).
	if f.NumSettings() > maxSettings {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			// RFC 9113 §6.9.2: the change applies to every open stream.
			c.mu.Lock()
			delta := int64(s.Val) - c.peerInitialWindow
			c.peerInitialWindow = int64(s.Val)
			for _, st := range c.streams {
				st.sendWindow += delta
				if st.sendWindow > 1<<31-1 {
					c.mu.Unlock()
					return http2.ConnectionError(http2.ErrCodeFlowControl)
				}
			}
			c.cond.Broadcast()
			c.mu.Unlock()
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame.Store(s.Val)
		case http2.SettingHeaderTableSize:
			c.newTableSize.Store(int64(s.Val))
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.queueCtrl(func(b []byte) []byte { return appendFrameHeader(b, 0, http2.FrameSettings, http2.FlagSettingsAck, 0) })
	return nil
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	if f.StreamID == 0 {
		c.sendWindow += int64(f.Increment)
		overflow := c.sendWindow > 1<<31-1
		c.cond.Broadcast()
		c.mu.Unlock()
		if overflow {
			return http2.ConnectionError(http2.ErrCodeFlowControl)
		}
		return nil
	}
	s := c.streams[f.StreamID]
	idle := s == nil && f.StreamID > c.maxStreamID
	overflow := false
	if s != nil {
		s.sendWindow += int64(f.Increment)
		overflow = s.sendWindow > 1<<31-1
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	if idle {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if overflow {
		c.resetStream(s, http2.ErrCodeFlowControl)
	}
	return nil
}

func (c *conn) onReset(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	s := c.streams[f.StreamID]
	idle := s == nil && f.StreamID > c.maxStreamID
	if s != nil {
		s.closeRemote(errStreamClosed)
		s.reset.Store(true)
		c.cond.Broadcast()
	}
	c.mu.Unlock()
	if idle {
		return http2.ConnectionError(http2.ErrCodeProtocol)
	}
	if s != nil {
		s.cancel()
	}
	return nil
}

// resetStream ends s with RST_STREAM: its handler's reads and writes
// fail and its context is done.
func (c *conn) resetStream(s *stream, code http2.ErrCode) {
	if s.reset.Swap(true) {
		return
	}
	c.mu.Lock()
	s.closeRemote(http2.StreamError{StreamID: s.id, Code: code})
	c.cond.Broadcast()
	c.mu.Unlock()
	s.cancel()
	c.queueCtrl(func(b []byte) []byte { return appendRSTStream(b, s.id, code) })
}

// goAway tells the client that the server takes no streams after those
// it has opened, and closes the connection once they are done.
func (c *conn) goAway(code http2.ErrCode) {
	c.mu.Lock()
	if c.goingAway || c.closed {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	last, idle := c.maxStreamID, c.active == 0
	c.mu.Unlock()
	c.queueCtrl(func(b []byte) []byte { return appendGoAway(b, last, code) })
	if idle {
		c.closeConn()
	}
}

// fail ends the connection for a protocol error (RFC 9113 §5.4.1).
func (c *conn) fail(code http2.ErrCode) {
	c.goAway(code)
	c.closeConn()
}

// closeConn writes what is queued and closes the connection. A writer
// blocked on a client that does not read gets a second before its write
// fails.
func (c *conn) closeConn() {
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.wmu.Lock()
	if c.werr == nil {
		c.bw = getWriter(c.nc)
		_ = c.flush()
		c.werr = errClosed
	}
	c.wmu.Unlock()
	_ = c.nc.Close()
}

func (c *conn) onIdle() {
	c.mu.Lock()
	idle := c.active == 0
	c.mu.Unlock()
	if idle {
		c.goAway(http2.ErrCodeNo)
	}
}

// cleanup ends every stream when the connection is gone.
func (c *conn) cleanup() {
	c.mu.Lock()
	c.closed = true
	streams := make([]*stream, 0, len(c.streams))
	for _, s := range c.streams {
		s.closeRemote(errClosed)
		s.reset.Store(true)
		streams = append(streams, s)
	}
	c.cond.Broadcast()
	c.mu.Unlock()
	for _, s := range streams {
		s.cancel()
	}
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	// Closing first ends a write blocked on a client that stopped reading.
	_ = c.nc.Close()
	close(c.jobs) // the reader, its only sender, is done
	c.wmu.Lock()
	if c.werr == nil {
		c.werr = errClosed
	}
	c.wmu.Unlock()
}

// Writing.

var writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 16<<10) }}

func getWriter(w io.Writer) *bufio.Writer {
	bw := writerPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	writerPool.Put(bw)
}

// lockWrite takes the connection for writing frames to c.bw.
func (c *conn) lockWrite() error {
	c.wmu.Lock()
	if c.werr != nil {
		err := c.werr
		c.wmu.Unlock()
		return err
	}
	c.bw = getWriter(c.nc)
	c.drainCtrl()
	return nil
}

// unlockWrite sends what was written in one write and lets go of the
// connection; control frames queued meanwhile are sent too.
func (c *conn) unlockWrite() error {
	err := c.flush()
	c.wmu.Unlock()
	c.writeCtrl()
	return err
}

// flush sends what c.bw holds and the queued control frames in one
// write and gives the buffer back; wmu is held. A failed write breaks
// the connection.
func (c *conn) flush() error {
	c.drainCtrl()
	err := c.bw.Flush()
	putWriter(c.bw)
	c.bw = nil
	if err != nil {
		c.werr = err
		_ = c.nc.Close()
	}
	return err
}

// queueCtrl appends a control frame for the next write and sends it
// now if the connection is free. A client that sends frames asking for
// answers without reading them fills maxControlBytes and is cut off.
func (c *conn) queueCtrl(appendFrame func([]byte) []byte) {
	c.ctrlMu.Lock()
	if len(c.ctrl) > maxControlBytes {
		c.ctrlMu.Unlock()
		_ = c.nc.Close()
		return
	}
	c.ctrl = appendFrame(c.ctrl)
	c.ctrlPending.Store(true)
	c.ctrlMu.Unlock()
	c.writeCtrl()
}

// writeCtrl sends the queued control frames unless a writer holds the
// connection: it sends them when it lets go (a queue that sees wmu taken
// was published before the holder looks).
func (c *conn) writeCtrl() {
	for c.ctrlPending.Load() && c.wmu.TryLock() {
		if c.werr != nil {
			c.wmu.Unlock()
			return
		}
		c.bw = getWriter(c.nc)
		_ = c.flush()
		c.wmu.Unlock()
	}
}

// drainCtrl moves the queued control frames to c.bw; wmu is held.
func (c *conn) drainCtrl() {
	if !c.ctrlPending.Load() {
		return
	}
	c.ctrlMu.Lock()
	_, _ = c.bw.Write(c.ctrl)
	if cap(c.ctrl) > 4<<10 {
		c.ctrl = nil
	} else {
		c.ctrl = c.ctrl[:0]
	}
	c.ctrlPending.Store(false)
	c.ctrlMu.Unlock()
}

// Frames, as RFC 9113 §4.1 and §6 lay them out.

func appendFrameHeader(b []byte, length int, typ http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), byte(typ), byte(flags),
		byte(id>>24)&0x7f, byte(id>>16), byte(id>>8), byte(id))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendSettings(b []byte, settings ...http2.Setting) []byte {
	b = appendFrameHeader(b, 6*len(settings), http2.FrameSettings, 0, 0)
	for _, s := range settings {
		b = append(b, byte(s.ID>>8), byte(s.ID))
		b = appendUint32(b, s.Val)
	}
	return b
}

func appendWindowUpdate(b []byte, id uint32, n uint32) []byte {
	return appendUint32(appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id), n&0x7fffffff)
}

func appendRSTStream(b []byte, id uint32, code http2.ErrCode) []byte {
	return appendUint32(appendFrameHeader(b, 4, http2.FrameRSTStream, 0, id), uint32(code))
}

func appendPing(b []byte, data [8]byte) []byte {
	return append(appendFrameHeader(b, 8, http2.FramePing, http2.FlagPingAck, 0), data[:]...)
}

func appendGoAway(b []byte, last uint32, code http2.ErrCode) []byte {
	return appendUint32(appendUint32(appendFrameHeader(b, 8, http2.FrameGoAway, 0, 0), last&0x7fffffff), uint32(code))
}
