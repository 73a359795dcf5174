package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Fuzzing of what the peer port decodes from a peer: the RPC server's and
// the apply stream's gob requests, read through the frame limit. Without
// peer TLS anyone who reaches the port sends these bytes.

// fuzzConn is a connection whose peer sent in and reads nothing back.
type fuzzConn struct {
	in      io.Reader
	written atomic.Int64
}

func (c *fuzzConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *fuzzConn) Write(p []byte) (int, error) { c.written.Add(int64(len(p))); return len(p), nil }
func (c *fuzzConn) Close() error                { return nil }
func (c *fuzzConn) LocalAddr() net.Addr         { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *fuzzConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *fuzzConn) SetDeadline(time.Time) error { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error {
	return nil
}
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzHandler answers at once, every kind of answer by the first byte of
// a command.
type fuzzHandler struct{ calls atomic.Int64 }

func (h *fuzzHandler) Forward(_ context.Context, req []byte) []byte {
	h.calls.Add(1)
	return req
}

func (h *fuzzHandler) ReadIndex(_ context.Context, from Asker) (uint64, error) {
	h.calls.Add(1)
	if from.Term%2 == 1 {
		return 0, ErrNotLeader
	}
	return from.Term, nil
}

func (h *fuzzHandler) NodeInfo(context.Context) *NodeInfo {
	h.calls.Add(1)
	return &NodeInfo{Name: "fuzz"}
}

func (h *fuzzHandler) Apply(_ context.Context, cmd []byte) (uint64, []byte, error) {
	h.calls.Add(1)
	if len(cmd) > 0 {
		switch cmd[0] {
		case 1:
			return 0, nil, ErrNotLeader
		case 2:
			return 0, nil, ErrNotApplied
		case 3:
			return 0, nil, errors.New("lost leadership")
		}
	}
	return 7, cmd, nil
}

// fuzzGob is the gob stream of vs, as a client's encoder writes it.
func fuzzGob(tb testing.TB, vs ...any) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			tb.Fatal(err)
		}
	}
	return b.Bytes()
}

// fuzzRPCSeeds are the requests a follower sends, one connection's worth.
func fuzzRPCSeeds(tb testing.TB) [][]byte {
	forward := &rpcRequest{Kind: rpcForward, Timeout: 5 * time.Second,
		Request: []byte(`{"Method":"PUT","RequestURI":"/cluster/members","Body":"e30=","From":"n2","User":{"Name":"admin"}}`)}
	readIndex := &rpcRequest{Kind: rpcReadIndex, Asker: Asker{ID: "n2", Term: 4}, Timeout: time.Second}
	apply := &rpcRequest{Kind: rpcApply, Command: []byte{1, 1, 1, 6, 'l', 'e', 'a', 's', 'e', 's'}, Timeout: time.Second}
	return [][]byte{
		fuzzGob(tb, forward),
		fuzzGob(tb, readIndex),
		fuzzGob(tb, apply),
		fuzzGob(tb, forward, readIndex, apply, &rpcRequest{Kind: rpcApply, Command: []byte{2}}, &rpcRequest{Kind: rpcApply, Command: []byte{3}}),
		fuzzGob(tb, &rpcRequest{Kind: rpcForward}),             // forward without request
		fuzzGob(tb, &rpcRequest{Kind: 99}),                     // unknown kind
		fuzzGob(tb, &rpcRequest{Kind: rpcApply, Timeout: -1}),  // no budget
		fuzzGob(tb, &streamRequest{ID: 1, Command: []byte{1}}), // another type
	}
}

// fuzzStreamSeeds are apply streams as a follower writes them.
func fuzzStreamSeeds(tb testing.TB) [][]byte {
	return [][]byte{
		fuzzGob(tb, &streamRequest{ID: 1, Command: []byte("cmd"), Timeout: time.Second}),
		fuzzGob(tb, &streamRequest{ID: 1, Command: []byte{1}}, &streamRequest{ID: 2, Command: []byte{2}},
			&streamRequest{ID: 3, Command: []byte{3}}, &streamRequest{ID: 4}),
		fuzzGob(tb, &rpcRequest{Kind: rpcApply, Command: []byte{1}}), // another type
	}
}

// fuzzAllocBound is what serving one input may allocate: the frame limit
// a few times over (gob reads a message whole, and decodes it into a
// value of about its size), and a little per input byte.
func fuzzAllocBound(n int) uint64 { return 4*maxRequestFrame + 64*uint64(n) + 1<<20 }

// fuzzServe runs serve over a connection whose peer sent data, and checks
// that it ends, without a panic, having allocated within the bound.
func fuzzServe(t *testing.T, data []byte, serve func(net.Conn, Handler, hclog.Logger)) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		serve(&fuzzConn{in: bytes.NewReader(data)}, &fuzzHandler{}, hclog.NewNullLogger())
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serving %d bytes did not end", len(data))
	}
	runtime.ReadMemStats(&after)
	if got, bound := after.TotalAlloc-before.TotalAlloc, fuzzAllocBound(len(data)); got > bound {
		t.Fatalf("serving %d bytes allocated %d bytes (bound %d)", len(data), got, bound)
	}
}

func fuzzAddTruncations(f *testing.F, seeds [][]byte) {
	for _, s := range seeds {
		f.Add(s)
		for n := 1; n < len(s); n += 1 + n/3 {
			f.Add(s[:n])
		}
	}
	// A message of 17 MiB, above the limit, and one just below it whose
	// bytes never come.
	f.Add([]byte{0xfc, 0x01, 0x10, 0x00, 0x00})
	f.Add([]byte{0xfc, 0x00, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01})
	f.Add([]byte{0xf7})
	f.Add([]byte{})
}

// FuzzServeRPC feeds arbitrary bytes to the RPC server as a peer's
// connection: it never panics or hangs, answers what decodes, and
// allocates within a bound set by the frame limit, whatever the bytes
// claim.
func FuzzServeRPC(f *testing.F) {
	fuzzAddTruncations(f, fuzzRPCSeeds(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServe(t, data, serveRPC)
	})
}

// FuzzServeApplyStream is FuzzServeRPC for an apply stream.
func FuzzServeApplyStream(f *testing.F) {
	fuzzAddTruncations(f, fuzzStreamSeeds(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzServe(t, data, serveApplyStream)
	})
}

// fuzzGobMessages splits a gob stream into its messages as gob's framing
// defines it: the model frameLimit is checked against. It returns the
// lengths (count included) of the whole messages, and the count of the
// first message that is not whole: too large (over max or a count gob
// cannot express), or cut short.
func fuzzGobMessages(data []byte, max uint64) (lengths []int, tooLarge bool) {
	for len(data) > 0 {
		n, size := uint64(data[0]), 1
		if data[0] >= 0x80 {
			k := 256 - int(data[0]) // the count's byte count, negated
			if k < 1 || k > 8 {
				return lengths, true
			}
			if len(data) < 1+k {
				return lengths, false
			}
			n = 0
			for _, c := range data[1 : 1+k] {
				n = n<<8 | uint64(c)
			}
			size += k
		}
		if n > max {
			return lengths, true
		}
		if uint64(len(data)-size) < n {
			return lengths, false
		}
		lengths = append(lengths, size+int(n))
		data = data[size+int(n):]
	}
	return lengths, false
}

// FuzzFrameLimit reads arbitrary bytes through frameLimit, in reads and
// byte reads of fuzzed sizes: it passes every byte of each message within
// the limit through unchanged, and stops with errFrameTooLarge exactly at
// the count of the first message above it (or not expressible), before
// reading any of it.
func FuzzFrameLimit(f *testing.F) {
	for _, s := range append(fuzzRPCSeeds(f), fuzzStreamSeeds(f)...) {
		f.Add(s, uint16(1000), []byte{1, 7, 0, 200})
		f.Add(s, uint16(10), []byte{3})
	}
	f.Add([]byte{0x7f}, uint16(127), []byte{1})
	f.Add([]byte{0xfe, 0x01, 0x00}, uint16(255), []byte{0})
	f.Add([]byte{0xfe, 0x01, 0x00}, uint16(256), []byte{0})
	f.Add([]byte{0xf7, 0x00}, uint16(65535), []byte{0})
	f.Add([]byte{0x80}, uint16(0), []byte{0})
	f.Add([]byte{0x00, 0x00, 0x01}, uint16(0), []byte{0})
	f.Fuzz(func(t *testing.T, data []byte, max uint16, reads []byte) {
		l := newFrameLimit(bufio.NewReaderSize(bytes.NewReader(data), 16), uint64(max))
		var got []byte
		var err error
		for i := 0; err == nil; i++ {
			size := 1
			if len(reads) > 0 {
				size = int(reads[i%len(reads)])
			}
			if size == 0 {
				var b byte
				if b, err = l.ReadByte(); err == nil {
					got = append(got, b)
				}
				continue
			}
			buf := make([]byte, size)
			var n int
			n, err = l.Read(buf)
			got = append(got, buf[:n]...)
			if n == 0 && err == nil {
				t.Fatalf("Read of %d bytes returned nothing and no error", size)
			}
		}
		lengths, tooLarge := fuzzGobMessages(data, uint64(max))
		whole := 0
		for _, n := range lengths {
			whole += n
		}
		if !bytes.HasPrefix(data, got) {
			t.Fatalf("read %x, not a prefix of %x", got, data)
		}
		switch {
		case errors.Is(err, errFrameTooLarge):
			if !tooLarge || len(got) != whole {
				t.Fatalf("refused after %d bytes; the messages within the limit take %d (a message too large: %v)", len(got), whole, tooLarge)
			}
		case tooLarge:
			t.Fatalf("read %d bytes and stopped with %v, want errFrameTooLarge after %d", len(got), err, whole)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// A message cut short passes through as far as it goes.
			if len(got) < whole {
				t.Fatalf("read %d bytes of %d whole ones: %v", len(got), whole, err)
			}
		default:
			t.Fatalf("read %d bytes: %v", len(got), err)
		}
	})
}
