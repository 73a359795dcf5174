package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Handler serves the node-to-node RPCs. Methods are called concurrently.
type Handler interface {
	// Forward answers a request a follower forwarded to the leader. The
	// bytes are the API layer's: this package neither reads nor writes
	// them.
	Forward(ctx context.Context, req []byte) []byte
	// ReadIndex returns an index such that once the caller has applied it,
	// its state reflects every write acknowledged before the call.
	ReadIndex(ctx context.Context, from Asker) (uint64, error)
	// Apply commits an encoded log command and returns its index and its
	// encoded result. It returns ErrNotLeader or ErrNotApplied when nothing
	// was written; any other error leaves the outcome unknown.
	Apply(ctx context.Context, cmd []byte) (uint64, []byte, error)
	// NodeInfo describes the node, for the leader's view of its members.
	NodeInfo(ctx context.Context) *NodeInfo
}

// NodeInfo is what a node says about itself: the leader asks every member
// for it to judge whether a non-voter has caught up, which members are
// healthy and which release each runs (hashicorp/raft keeps its own view
// of a follower's progress private). A node of a release that predates it
// answers the request with an error.
type NodeInfo struct {
	Name   string
	APIURL string
	// EtcdURL is where the node serves the etcd v3 API ("" if it does not).
	EtcdURL string
	Version string
	// FeatureLevel is the highest cluster feature level the node's
	// release can apply.
	FeatureLevel uint32
	State        string
	Term         uint64
	LastIndex    uint64
	CommitIndex  uint64
	AppliedIndex uint64
	// LastContact is how long ago the node last heard from a leader (0 on
	// the leader, -1 never).
	LastContact time.Duration
	Leader      string
	// Members are the server IDs of the configuration the node knows.
	Members []string
	DBSize  int64
	Ready   bool
	Reason  string
}

// ErrNotLeader is returned by ReadIndex and Apply on a node that is not the
// leader.
var ErrNotLeader = errors.New("not the leader")

// ErrUnsupported: the peer runs a release that does not know the call.
var ErrUnsupported = errors.New("the peer's release does not support this call")

// ErrNotApplied is returned by Apply when the command was not written (the
// leader's queue did not take it in time).
var ErrNotApplied = errors.New("command not written")

// The kinds of RPC. A number is never reused: kind 1 carried a forwarded
// HTTP request in a shape of this package's, before forwarded requests
// became the API layer's bytes (kind 5); a peer that sends it is answered
// "unknown rpc kind".
const (
	rpcReadIndex = 2
	rpcApply     = 3
	rpcNodeInfo  = 4
	rpcForward   = 5
)

// Asker is the node asking for a read index: its Raft server ID and its
// current term when it sent the request. A peer that sends no Asker (the
// zero value) is answered all the same.
type Asker struct {
	ID   string
	Term uint64
}

type rpcRequest struct {
	Kind uint8
	// Request is a forwarded request (rpcForward), opaque here.
	Request []byte
	Command []byte
	Asker   Asker
	// Timeout is the caller's remaining budget, so the server gives up when
	// the caller will.
	Timeout time.Duration
}

type rpcResponse struct {
	// Response is the answer to a forwarded request, opaque here.
	Response   []byte
	Info       *NodeInfo
	Index      uint64
	Result     []byte
	NotLeader  bool
	NotApplied bool
	Err        string
}

func serveRPC(c net.Conn, h Handler, logger hclog.Logger) {
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	dec := gob.NewDecoder(newFrameLimit(br, maxRequestFrame))
	enc := gob.NewEncoder(bw)
	for {
		req := &rpcRequest{}
		if !readRequest(dec, req, c, logger) {
			return
		}
		ctx, cancel := serverContext(req.Timeout)
		var resp rpcResponse
		switch req.Kind {
		case rpcForward:
			resp.Response = h.Forward(ctx, req.Request)
		case rpcReadIndex:
			idx, err := h.ReadIndex(ctx, req.Asker)
			resp.Index = idx
			if errors.Is(err, ErrNotLeader) {
				resp.NotLeader = true
			} else if err != nil {
				resp.Err = err.Error()
			}
		case rpcApply:
			idx, result, err := h.Apply(ctx, req.Command)
			resp.Index, resp.Result = idx, result
			resp.NotLeader, resp.NotApplied, resp.Err = applyAnswer(err)
		case rpcNodeInfo:
			resp.Info = h.NodeInfo(ctx)
		default:
			resp.Err = fmt.Sprintf("unknown rpc kind %d", req.Kind)
		}
		cancel()
		if err := enc.Encode(&resp); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

// readRequest decodes the next request of connection c into req. False
// means the connection ended, logged unless it ended as connections do.
func readRequest(dec *gob.Decoder, req any, c net.Conn, logger hclog.Logger) bool {
	err := dec.Decode(req)
	switch {
	case err == nil, errors.Is(err, io.EOF), isClosed(err):
	case errors.Is(err, errFrameTooLarge):
		logger.Warn("peer connection closed", "remote", c.RemoteAddr(), "error", err)
	default:
		logger.Debug("peer connection ended", "remote", c.RemoteAddr(), "error", err)
	}
	return err == nil
}

// maxCallTime bounds a peer call whose caller set no deadline, and the
// server's work on any call.
const maxCallTime = time.Minute

// callDeadline is when a call under ctx gives up.
func callDeadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(maxCallTime)
}

// serverContext bounds the server's work on a call by the caller's
// remaining budget, sent with the request.
func serverContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 || timeout > maxCallTime {
		timeout = maxCallTime
	}
	return context.WithTimeout(context.Background(), timeout)
}

// Client makes RPCs to peers over pooled connections.
type Client struct {
	mux *Mux
	// idleTimeout drops pooled connections unused for this long; a peer
	// that restarted leaves dead ones behind.
	idleTimeout time.Duration

	mu       sync.Mutex
	idle     map[string][]*clientConn
	streams  map[string]*streamSlot
	noStream map[string]time.Time // peers that refused a stream, and when
}

type clientConn struct {
	c       net.Conn
	enc     *gob.Encoder
	dec     *gob.Decoder
	bw      *bufio.Writer
	lastUse time.Time
}

// NewClient returns a client that dials through m.
func NewClient(m *Mux) *Client {
	return &Client{mux: m, idleTimeout: 30 * time.Second, idle: map[string][]*clientConn{},
		streams: map[string]*streamSlot{}, noStream: map[string]time.Time{}}
}

// ErrUnknownOutcome means the request may or may not have been handled:
// the connection failed after it was sent.
var ErrUnknownOutcome = errors.New("peer connection failed after the request was sent")

// Forward sends a request to the peer at addr and returns its answer, both
// the API layer's bytes. An error wrapping ErrUnknownOutcome means the
// request may have been carried out; one wrapping ErrUnsupported, that the
// peer's release takes no forwarded requests in this form.
func (cl *Client) Forward(ctx context.Context, addr string, req []byte) ([]byte, error) {
	resp, err := cl.call(ctx, addr, &rpcRequest{Kind: rpcForward, Request: req})
	if err != nil {
		return nil, err
	}
	if err := unsupported(resp.Err); err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return nil, errors.New(resp.Err)
	}
	return resp.Response, nil
}

// unsupported is ErrUnsupported when a peer's answer says it does not
// know the call.
func unsupported(answer string) error {
	if strings.HasPrefix(answer, "unknown rpc kind") {
		return fmt.Errorf("%w: %s", ErrUnsupported, answer)
	}
	return nil
}

// ReadIndex asks the leader at addr for a read index on from's behalf.
func (cl *Client) ReadIndex(ctx context.Context, addr string, from Asker) (uint64, error) {
	resp, err := cl.call(ctx, addr, &rpcRequest{Kind: rpcReadIndex, Asker: from})
	if err != nil {
		return 0, err
	}
	if resp.NotLeader {
		return 0, ErrNotLeader
	}
	if resp.Err != "" {
		return 0, errors.New(resp.Err)
	}
	return resp.Index, nil
}

// NodeInfo asks the node at addr to describe itself.
func (cl *Client) NodeInfo(ctx context.Context, addr string) (*NodeInfo, error) {
	resp, err := cl.call(ctx, addr, &rpcRequest{Kind: rpcNodeInfo})
	if err != nil {
		return nil, err
	}
	if err := unsupported(resp.Err); err != nil {
		return nil, err
	}
	if resp.Err != "" {
		return nil, errors.New(resp.Err)
	}
	if resp.Info == nil {
		return nil, errors.New("empty node info")
	}
	return resp.Info, nil
}

// Apply has the leader at addr commit an encoded log command and returns
// its index and encoded result. ErrNotLeader and ErrNotApplied mean nothing was written, as
// does an error from reaching the peer; an error wrapping
// ErrUnknownOutcome means the command may have been committed. Commands
// go on the peer's apply stream (see stream.go), or one connection at a
// time to a peer that does not take streams.
func (cl *Client) Apply(ctx context.Context, addr string, cmd []byte) (uint64, []byte, error) {
	for attempt := 0; ; attempt++ {
		s, err := cl.applyStream(ctx, addr)
		if errors.Is(err, errStreamUnsupported) {
			return cl.applyOnce(ctx, addr, cmd)
		}
		if err != nil {
			return 0, nil, fmt.Errorf("dial peer %s: %w", addr, err)
		}
		resp, err := s.apply(ctx, cmd)
		if errors.Is(err, errStreamClosed) && attempt == 0 {
			continue // it ended before this call: nothing was sent
		}
		if err != nil {
			return 0, nil, err
		}
		if resp.NoSpace {
			return 0, nil, &NoSpaceError{Message: resp.Err}
		}
		return applyResult(resp.Index, resp.Result, resp.NotLeader, resp.NotApplied, resp.Err)
	}
}

// applyOnce is Apply on a connection of its own.
func (cl *Client) applyOnce(ctx context.Context, addr string, cmd []byte) (uint64, []byte, error) {
	resp, err := cl.call(ctx, addr, &rpcRequest{Kind: rpcApply, Command: cmd})
	if err != nil {
		return 0, nil, err
	}
	return applyResult(resp.Index, resp.Result, resp.NotLeader, resp.NotApplied, resp.Err)
}

// NoSpaceError is Apply's error, and Handler.Apply's, when the leader
// refused the command because its disk is full: nothing was written.
// Message is the leader's, for the client. A peer of an earlier release
// takes the answer for ErrNotApplied.
type NoSpaceError struct{ Message string }

func (e *NoSpaceError) Error() string { return e.Message }

// applyAnswer sorts the error of Handler.Apply for its answer: the ones
// that mean nothing was written, or the text of any other.
func applyAnswer(err error) (notLeader, notApplied bool, text string) {
	var ns *NoSpaceError
	switch {
	case errors.Is(err, ErrNotLeader):
		return true, false, ""
	case errors.Is(err, ErrNotApplied):
		return false, true, ""
	case errors.As(err, &ns):
		return false, true, ns.Message
	case err != nil:
		return false, false, err.Error()
	}
	return false, false, ""
}

// applyResult is Apply's result from the fields of its answer.
func applyResult(idx uint64, result []byte, notLeader, notApplied bool, text string) (uint64, []byte, error) {
	switch {
	case notLeader:
		return 0, nil, ErrNotLeader
	case notApplied:
		return 0, nil, ErrNotApplied
	case text != "":
		return 0, nil, fmt.Errorf("%w: %s", ErrUnknownOutcome, text)
	}
	return idx, result, nil
}

// noStreamRetry is how long a peer that refused an apply stream is sent
// commands one connection at a time before it is asked again (it may have
// been upgraded meanwhile).
const noStreamRetry = time.Minute

// streamSlot holds the apply stream to one peer; mu is held while one is
// opened, so that calls arriving together open one, not one each.
type streamSlot struct {
	mu sync.Mutex
	s  atomic.Pointer[applyStream]
}

// applyStream returns the open apply stream to addr, opening one if there
// is none.
func (cl *Client) applyStream(ctx context.Context, addr string) (*applyStream, error) {
	cl.mu.Lock()
	slot := cl.streams[addr]
	if slot == nil {
		slot = &streamSlot{}
		cl.streams[addr] = slot
	}
	refused, ok := cl.noStream[addr]
	cl.mu.Unlock()
	if s := slot.s.Load(); s != nil && s.usable() {
		return s, nil
	}
	if ok && time.Since(refused) < noStreamRetry {
		return nil, errStreamUnsupported
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if s := slot.s.Load(); s != nil && s.usable() {
		return s, nil // opened while this call waited
	}
	timeout := 5 * time.Second
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	s, err := openApplyStream(cl.mux, addr, timeout)
	if errors.Is(err, errStreamUnsupported) {
		cl.mu.Lock()
		cl.noStream[addr] = time.Now()
		cl.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	slot.s.Store(s)
	return s, nil
}

func (cl *Client) call(ctx context.Context, addr string, req *rpcRequest) (*rpcResponse, error) {
	deadline := callDeadline(ctx)
	req.Timeout = time.Until(deadline)
	cc, err := cl.get(addr, time.Until(deadline))
	if err != nil {
		return nil, fmt.Errorf("dial peer %s: %w", addr, err)
	}
	_ = cc.c.SetDeadline(deadline)
	// End the exchange early if the caller gives up.
	stop := context.AfterFunc(ctx, func() { _ = cc.c.SetDeadline(time.Now()) })
	defer stop()
	if err := cc.enc.Encode(req); err != nil {
		cc.c.Close()
		return nil, fmt.Errorf("send to peer %s: %w", addr, err)
	}
	if err := cc.bw.Flush(); err != nil {
		cc.c.Close()
		return nil, fmt.Errorf("send to peer %s: %w", addr, err)
	}
	var resp rpcResponse
	if err := cc.dec.Decode(&resp); err != nil {
		cc.c.Close()
		return nil, fmt.Errorf("%w: peer %s: %v", ErrUnknownOutcome, addr, err)
	}
	if !stop() {
		// The caller gave up as the answer arrived: the callback that cuts
		// the exchange short may still run, and must not hit the next call
		// on this connection, so it does not go back to the pool.
		cc.c.Close()
		return &resp, nil
	}
	_ = cc.c.SetDeadline(time.Time{})
	cl.put(addr, cc)
	return &resp, nil
}

func (cl *Client) get(addr string, timeout time.Duration) (*clientConn, error) {
	cl.mu.Lock()
	for len(cl.idle[addr]) > 0 {
		conns := cl.idle[addr]
		cc := conns[len(conns)-1]
		cl.idle[addr] = conns[:len(conns)-1]
		if time.Since(cc.lastUse) < cl.idleTimeout && alive(cc.c) {
			cl.mu.Unlock()
			return cc, nil
		}
		cc.c.Close()
	}
	cl.mu.Unlock()
	if timeout > 5*time.Second {
		timeout = 5 * time.Second
	}
	c, err := cl.mux.dial(addr, connRPC, timeout)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriter(c)
	return &clientConn{c: c, enc: gob.NewEncoder(bw), dec: gob.NewDecoder(bufio.NewReader(c)), bw: bw}, nil
}

// alive tells whether an idle connection is still open. The peer has sent
// nothing on it, so a non-blocking peek that would block means open, and EOF
// or an error (reset) means the peer went away. Over TLS the socket under
// the connection is peeked, and anything waiting there means closed too: a
// server sends nothing unasked (no session tickets), so it is the alert
// that closes the connection.
func alive(c net.Conn) bool {
	strict := false
	if tc, ok := c.(*tls.Conn); ok {
		c, strict = tc.NetConn(), true
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	_ = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = (n > 0 && !strict) || errors.Is(err, syscall.EAGAIN)
		return true
	})
	return open
}

const maxIdlePerPeer = 64

func (cl *Client) put(addr string, cc *clientConn) {
	cc.lastUse = time.Now()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.idle[addr]) >= maxIdlePerPeer {
		cc.c.Close()
		return
	}
	cl.idle[addr] = append(cl.idle[addr], cc)
}

// Close drops every pooled connection.
func (cl *Client) Close() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for addr, conns := range cl.idle {
		for _, cc := range conns {
			cc.c.Close()
		}
		delete(cl.idle, addr)
	}
	for addr, slot := range cl.streams {
		if s := slot.s.Load(); s != nil {
			s.close()
		}
		delete(cl.streams, addr)
	}
}
