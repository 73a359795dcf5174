package h2server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// chunk is the body a response holds before sending: an answer that
// fits goes out with its headers in one write.
const chunk = 16 << 10

// maxSend bounds what one stream writes while it holds the connection.
const maxSend = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, chunk); return &b }}

// responseWriter is a stream's http.ResponseWriter and http.Flusher. It
// has no trailers, no server push and no Hijack (HTTP/2 has none).
type responseWriter struct {
	s   *stream
	req *http.Request

	header      http.Header // the handler's
	sent        http.Header // the one sent: header, as it was at WriteHeader
	copied      bool        // header is a copy of sent
	status      int
	wroteHeader bool
	sentHeader  bool
	buf         *[]byte // body not yet sent
	declLen     int64   // the handler's Content-Length, or -1
	written     int64
	closeAfter  bool // the handler said Connection: close
}

// Header follows net/http's rule that changes after WriteHeader have no
// effect: once it is called, the handler gets a copy.
func (w *responseWriter) Header() http.Header {
	if w.wroteHeader && !w.sentHeader && !w.copied {
		w.header = w.sent.Clone()
		w.copied = true
	}
	return w.header
}

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// An informational answer goes out now; the final one follows.
		c := w.s.c
		if c.lockWrite() == nil {
			c.writeHeaders(w.s.id, code, w.header, "", "", false, false)
			_ = c.unlockWrite()
		}
		return
	}
	w.wroteHeader = true
	w.status = code
	w.sent = w.header
	if cl := w.header.Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseUint(cl, 10, 63); err == nil {
			w.declLen = int64(n)
		}
	}
	if v := w.header["Connection"]; len(v) > 0 && strings.EqualFold(v[0], "close") {
		w.closeAfter = true
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.declLen >= 0 && w.written > w.declLen {
		return 0, http.ErrContentLength
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if w.buf == nil {
		w.buf = bufPool.Get().(*[]byte)
	}
	if len(*w.buf)+len(p) <= chunk {
		*w.buf = append(*w.buf, p...)
		return len(p), nil
	}
	if err := w.send(*w.buf, false); err != nil {
		return 0, err
	}
	*w.buf = (*w.buf)[:0]
	if len(p) <= chunk {
		*w.buf = append(*w.buf, p...)
		return len(p), nil
	}
	if err := w.send(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends the headers and what the handler wrote so far.
func (w *responseWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	var p []byte
	if w.buf != nil {
		p = *w.buf
	}
	if w.send(p, false) == nil && w.buf != nil {
		*w.buf = (*w.buf)[:0]
	}
}

// finish ends the answer once the handler has returned.
func (w *responseWriter) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.declLen >= 0 && w.written < w.declLen && w.req.Method != http.MethodHead && bodyAllowed(w.status) {
		// Fewer bytes than the handler's Content-Length: the client
		// must not take the answer for whole.
		w.s.c.resetStream(w.s, http2.ErrCodeInternal)
		return
	}
	var p []byte
	if w.buf != nil {
		p = *w.buf
	}
	_ = w.send(p, true)
	if w.closeAfter {
		w.s.c.goAway(http2.ErrCodeNo)
	}
}

func (w *responseWriter) release() {
	if w.buf != nil && cap(*w.buf) == chunk {
		*w.buf = (*w.buf)[:0]
		bufPool.Put(w.buf)
	}
	w.buf = nil
}

// send writes the headers if they are not out yet, then data, the last
// frame ending the stream if end: an answer that fits its window goes
// in one write.
func (w *responseWriter) send(data []byte, end bool) error {
	s, c := w.s, w.s.c
	if w.sentHeader && len(data) == 0 && !end {
		return nil
	}
	if w.req.Method == http.MethodHead {
		data = nil
	}
	for {
		n := 0
		if len(data) > 0 {
			var err error
			if n, err = c.reserve(s, min(len(data), maxSend)); err != nil {
				return err
			}
		} else if s.reset.Load() {
			return errStreamClosed
		}
		last := n == len(data)
		if err := c.lockWrite(); err != nil {
			return err
		}
		headersEnd := false
		if !w.sentHeader {
			w.sentHeader = true
			ctype, clen, h := "", "", w.sent
			if _, ok := h["Content-Type"]; !ok && bodyAllowed(w.status) && len(data) > 0 && h.Get("Content-Encoding") == "" {
				ctype = http.DetectContentType(data)
			}
			if _, ok := h["Content-Length"]; !ok && end && bodyAllowed(w.status) && w.req.Method != http.MethodHead {
				clen = strconv.Itoa(len(data))
			}
			headersEnd = end && len(data) == 0
			c.writeHeaders(s.id, w.status, h, ctype, clen, true, headersEnd)
		}
		if n > 0 || end && last && !headersEnd {
			c.writeData(s.id, data[:n], end && last)
		}
		if end && last {
			s.ended.Store(true) // before the client can see it
		}
		if err := c.unlockWrite(); err != nil {
			return err
		}
		data = data[n:]
		if last {
			return nil
		}
	}
}

// reserve takes up to want bytes of the stream's and the connection's
// send windows, waiting for the client to open them.
func (c *conn) reserve(s *stream, want int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if s.reset.Load() || c.closed {
			return 0, errStreamClosed
		}
		if n := min(int64(want), s.sendWindow, c.sendWindow); n > 0 {
			s.sendWindow -= n
			c.sendWindow -= n
			return int(n), nil
		}
		c.cond.Wait()
	}
}

// writeHeaders writes a header block as HEADERS and CONTINUATION frames;
// wmu is held, which also orders the HPACK encoder's state.
func (c *conn) writeHeaders(id uint32, status int, h http.Header, ctype, clen string, date, endStream bool) {
	if n := c.newTableSize.Swap(-1); n >= 0 {
		c.henc.SetMaxDynamicTableSizeLimit(uint32(n))
	}
	c.hbuf.Reset()
	enc := c.henc
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: statusString(status)})
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		lk := lowerHeader(k)
		if isConnHeader(lk) {
			continue
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				continue
			}
			switch lk {
			case "audit-id":
				c.writeUnindexed(0, lk, v, true, false)
			case "content-length":
				c.writeUnindexed(staticContentLength, "", v, false, true)
			case "date":
				c.writeUnindexed(staticDate, "", v, false, true)
			default:
				_ = enc.WriteField(hpack.HeaderField{Name: lk, Value: v})
			}
		}
	}
	if ctype != "" {
		_ = enc.WriteField(hpack.HeaderField{Name: "content-type", Value: ctype})
	}
	if clen != "" {
		c.writeUnindexed(staticContentLength, "", clen, false, true)
	}
	if _, ok := h["Date"]; date && !ok {
		c.hbuf.Write(httpDate())
	}
	block := c.hbuf.Bytes()
	max := int(c.peerMaxFrame.Load())
	var hdr [9]byte
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), max)]
		block = block[len(frag):]
		var flags http2.Flags
		if len(block) == 0 {
			flags |= http2.FlagHeadersEndHeaders
		}
		typ := http2.FrameContinuation
		if first {
			typ = http2.FrameHeaders
			if endStream {
				flags |= http2.FlagHeadersEndStream
			}
		}
		_, _ = c.bw.Write(appendFrameHeader(hdr[:0], len(frag), typ, flags, id))
		_, _ = c.bw.Write(frag)
	}
}

// Indexes of names in HPACK's static table (RFC 7541 Appendix A).
const (
	staticContentLength = 28
	staticDate          = 33
)

// writeUnindexed adds a field the HPACK tables never keep to the header
// block: the fields that change from one answer to the next (the length,
// the date, Audit-Id, new every time). Indexed, each would push a field
// that repeats out of both sides' tables, and the encoder would search its
// table for them in vain. The name is the static table's entry nameIndex,
// or name if that is 0; never marks the field never to be indexed by
// intermediaries either (RFC 7541 §6.2.2, §6.2.3). The value is
// Huffman-coded if huffman and that is shorter: Audit-Id is not, sparing
// both sides the coding of 36 characters for 9 bytes. The encoder's table
// size update, if one is due, has been written with :status.
func (c *conn) writeUnindexed(nameIndex uint64, name, value string, never, huffman bool) {
	c.hbuf.Write(appendUnindexed(c.hbuf.AvailableBuffer(), nameIndex, name, value, never, huffman))
}

func appendUnindexed(b []byte, nameIndex uint64, name, value string, never, huffman bool) []byte {
	first := byte(0x00)
	if never {
		first = 0x10
	}
	b = appendHpackInt(b, first, 4, nameIndex)
	if nameIndex == 0 {
		b = appendHpackString(b, name, true)
	}
	return appendHpackString(b, value, huffman)
}

// appendHpackInt appends v with an n-bit prefix after the bits of first
// (RFC 7541 §5.1).
func appendHpackInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	for v -= max; v >= 128; v >>= 7 {
		b = append(b, byte(v&0x7f)|0x80)
	}
	return append(b, byte(v))
}

// appendHpackString appends s, Huffman-coded if huffman and that is
// shorter (RFC 7541 §5.2).
func appendHpackString(b []byte, s string, huffman bool) []byte {
	if n := hpack.HuffmanEncodeLength(s); huffman && n < uint64(len(s)) {
		return hpack.AppendHuffmanString(appendHpackInt(b, 0x80, 7, n), s)
	}
	return append(appendHpackInt(b, 0, 7, uint64(len(s))), s...)
}

// writeData writes p as DATA frames no larger than the client takes;
// wmu is held.
func (c *conn) writeData(id uint32, p []byte, endStream bool) {
	max := int(c.peerMaxFrame.Load())
	var hdr [9]byte
	for {
		frag := p[:min(len(p), max)]
		p = p[len(frag):]
		var flags http2.Flags
		if len(p) == 0 && endStream {
			flags = http2.FlagDataEndStream
		}
		_, _ = c.bw.Write(appendFrameHeader(hdr[:0], len(frag), http2.FrameData, flags, id))
		_, _ = c.bw.Write(frag)
		if len(p) == 0 {
			return
		}
	}
}

func bodyAllowed(status int) bool {
	return !(status >= 100 && status <= 199 || status == http.StatusNoContent || status == http.StatusNotModified)
}

func statusString(code int) string {
	switch code {
	case 200:
		return "200"
	case 201:
		return "201"
	case 404:
		return "404"
	case 409:
		return "409"
	}
	return strconv.Itoa(code)
}

func isConnHeader(lk string) bool {
	switch lk {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// commonLower spares lowering the names answers always carry.
var commonLower = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"Accept-Ranges", "Audit-Id", "Cache-Control", "Content-Encoding", "Content-Length", "Content-Type",
		"Date", "Etag", "Last-Modified", "Location", "Retry-After", "Vary", "Www-Authenticate",
		"X-Content-Type-Options", "X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid", "Warning",
	} {
		m[k] = strings.ToLower(k)
	}
	return m
}()

func lowerHeader(k string) string {
	if v, ok := commonLower[k]; ok {
		return v
	}
	return strings.ToLower(k)
}

// cachedDate is the HPACK field of the Date header of one second.
type cachedDate struct {
	sec   int64
	field []byte
}

var lastDate atomic.Pointer[cachedDate]

// httpDate is the Date header's HPACK field, formatted and coded once a
// second.
func httpDate() []byte {
	now := time.Now()
	if d := lastDate.Load(); d != nil && d.sec == now.Unix() {
		return d.field
	}
	d := &cachedDate{sec: now.Unix(), field: appendUnindexed(nil, staticDate, "", now.UTC().Format(http.TimeFormat), false, true)}
	lastDate.Store(d)
	return d.field
}
