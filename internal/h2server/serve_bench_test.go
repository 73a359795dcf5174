package h2server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// BenchmarkServePUT: one renewal-sized PUT after another on one TLS
// connection, answered as the API answers, over HTTP/2 (this server; the
// client sends HEADERS and DATA in two writes, as Go's client does) and
// over HTTP/1.1 (net/http's server), and over HTTP/1.1 without TLS
// (http1-plain: what the records themselves cost is http1 less it). The
// clients write and read bytes themselves, so most of the CPU time
// (cpu-ns/op: the process's, user and system) is the server's, the system
// calls and the TLS records of both sides.
func BenchmarkServePUT(b *testing.B) { benchServe(b, "PUT", bytes.Repeat([]byte("b"), 250)) }

// BenchmarkServeGET: as BenchmarkServePUT, a GET of one Lease after
// another (a new path each time, as client-go sends a get of each Lease:
// a literal the decoder adds to its table).
func BenchmarkServeGET(b *testing.B) { benchServe(b, "GET", nil) }

func benchServe(b *testing.B, method string, body []byte) {
	answer := bytes.Repeat([]byte("a"), 300)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Audit-Id", "0b1c2d3e-1b2c-4d5e-8f90-a1b2c3d4e5f6")
		w.Header().Set("Cache-Control", "no-cache, private")
		w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
		_, _ = w.Write(answer)
	})
	ts := start(b, handler)
	dial := func(proto string) *tls.Conn {
		c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.ca.Pool(), NextProtos: []string{proto}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		return c
	}

	b.Run("h2", func(b *testing.B) {
		c := dial("h2")
		fr := http2.NewFramer(c, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		_, _ = io.WriteString(c, http2.ClientPreface)
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		_ = fr.WriteWindowUpdate(0, 1<<30)
		id := uint32(1)
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			hb.Reset()
			fields := [][2]string{{":method", method}, {":scheme", "https"}, {":path", path(method, id)},
				{":authority", "127.0.0.1"}, {"content-type", "application/vnd.kubernetes.protobuf"}, {"user-agent", "leasebench"},
				{"accept", "application/vnd.kubernetes.protobuf"}}
			if body != nil {
				fields = append(fields, [2]string{"content-length", strconv.Itoa(len(body))})
			}
			for _, f := range fields {
				_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: body == nil}); err != nil {
				b.Fatal(err)
			}
			if body != nil {
				if err := fr.WriteData(id, true, body); err != nil {
					b.Fatal(err)
				}
			}
			for done := false; !done; {
				f, err := fr.ReadFrame()
				if err != nil {
					b.Fatal(err)
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						_ = fr.WriteSettingsAck()
					}
				case *http2.DataFrame:
					done = f.StreamID == id && f.StreamEnded()
				case *http2.RSTStreamFrame, *http2.GoAwayFrame:
					b.Fatalf("%v", f)
				}
			}
			id += 2
		}
	})

	b.Run("http1", func(b *testing.B) { benchHTTP1(b, dial("http/1.1"), method, body) })

	b.Run("http1-plain", func(b *testing.B) {
		plain := httptest.NewServer(handler)
		b.Cleanup(plain.Close)
		c, err := net.Dial("tcp", plain.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		benchHTTP1(b, c, method, body)
	})
}

// benchHTTP1 sends requests one after another on c and reads each answer.
func benchHTTP1(b *testing.B, c net.Conn, method string, body []byte) {
	br := bufio.NewReader(c)
	id := uint32(1)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		req := method + " " + path(method, id) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
			"Content-Type: application/vnd.kubernetes.protobuf\r\nUser-Agent: leasebench\r\n" +
			"Accept: application/vnd.kubernetes.protobuf\r\n"
		if body != nil {
			req += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
		}
		req += "\r\n" + string(body)
		id += 2
		if _, err := io.WriteString(c, req); err != nil {
			b.Fatal(err)
		}
		// The answer's head, then its Content-Length bytes.
		n := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if line == "\r\n" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				_, _ = fmt.Sscan(v, &n)
			}
		}
		if _, err := br.Discard(n); err != nil {
			b.Fatal(err)
		}
	}
}

// path is a renewal's path, or for a GET a path of one of 1,000 Leases.
func path(method string, id uint32) string {
	if method == "GET" {
		return fmt.Sprintf("/apis/coordination.k8s.io/v1/namespaces/team/leases/lease-%04d", id/2%1000)
	}
	return "/apis/coordination.k8s.io/v1/namespaces/team/leases/lock"
}

// reportCPU reports the process's CPU time per operation from now until
// the returned func is called.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
