package h2server

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// scriptConn is a connection whose client sends a fixed script and reads
// nothing back.
type scriptConn struct {
	r io.Reader
}

func (c *scriptConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *scriptConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// seedFrames writes the frames a client might send after its preface.
func seedFrames(write func(fr *http2.Framer, enc func(...string) []byte)) []byte {
	var buf, hb bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	henc := hpack.NewEncoder(&hb)
	enc := func(kv ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(kv); i += 2 {
			_ = henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	_ = fr.WriteSettings()
	write(fr, enc)
	return buf.Bytes()
}

var get = []string{":method", "GET", ":scheme", "https", ":path", "/apis/coordination.k8s.io/v1/leases", ":authority", "h"}
var put = []string{":method", "PUT", ":scheme", "https", ":path", "/apis/coordination.k8s.io/v1/namespaces/a/leases/b", ":authority", "h", "content-type", "application/json", "content-length", "2"}

// FuzzServe sends the server any frames after the preface: it must not
// panic, and the connection must end, every handler with it, once the
// client's script is done.
func FuzzServe(f *testing.F) {
	f.Add(seedFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(get...), EndHeaders: true, EndStream: true})
	}))
	f.Add(seedFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(put...), EndHeaders: true})
		_ = fr.WriteData(1, true, []byte("{}"))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(put...), EndHeaders: true})
		_ = fr.WriteData(3, false, []byte("{"))
		_ = fr.WriteRSTStream(3, http2.ErrCodeCancel)
		_ = fr.WriteWindowUpdate(0, 1000)
		_ = fr.WritePing(false, [8]byte{1})
	}))
	f.Add(seedFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		block := enc(append(get, "x-a", "1", "x-b", "2")...)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:5]})
		_ = fr.WriteContinuation(1, true, block[5:])
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 16384})
		_ = fr.WriteWindowUpdate(1, 5)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: enc(put...), EndHeaders: true, PadLength: 3})
		_ = fr.WriteDataPadded(5, false, []byte("{}"), []byte{0, 0})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: enc("x-trailer", "1"), EndHeaders: true, EndStream: true})
		_ = fr.WritePriority(7, http2.PriorityParam{StreamDep: 1, Weight: 3})
		_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	}))
	f.Add(seedFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2, BlockFragment: enc(get...), EndHeaders: true})
	}))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, script []byte) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			w.(http.Flusher).Flush()
			_, _ = w.Write(bytes.Repeat([]byte("x"), 70000)) // past the client's window
		})
		c := &scriptConn{r: io.MultiReader(bytes.NewReader([]byte(http2.ClientPreface)), bytes.NewReader(script))}
		hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0), MaxHeaderBytes: 4096}
		done := make(chan struct{})
		go func() {
			(&Server{MaxConcurrentStreams: 100}).ServeConn(hs, c, context.Background(), h)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a handler did not end after the connection did")
		}
	})
}
