package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lagRecorder keeps one histogram per watcher, merged at the end: a shared
// one behind a lock would make a thousand watchers queue for it. Two
// significant digits (1 %) are plenty for a lag and keep a thousand of them
// small. Each watcher collects its lags in a buffer and records them a
// buffer at a time: a thousand histograms do not fit in the CPU's caches,
// and recording each event as it came was mostly cache misses, CPU the
// cluster on the same machine would miss.
type lagRecorder struct {
	mu  sync.Mutex
	per []*lagHistogram
}

type lagHistogram struct {
	h   *hdrhistogram.Histogram
	buf []int32 // microseconds, not yet recorded in h
}

// lagBatch is how many lags a watcher collects before recording them.
const lagBatch = 512

func (l *lagRecorder) add() *lagHistogram {
	h := &lagHistogram{h: hdrhistogram.New(1, 60_000_000, 2), buf: make([]int32, 0, lagBatch)}
	l.mu.Lock()
	l.per = append(l.per, h)
	l.mu.Unlock()
	return h
}

// record adds one lag; not safe for concurrent use (one per watcher).
func (h *lagHistogram) record(d time.Duration) {
	h.buf = append(h.buf, int32(min(max(d.Microseconds(), 1), 60_000_000)))
	if len(h.buf) == cap(h.buf) {
		h.flush()
	}
}

func (h *lagHistogram) flush() {
	for _, v := range h.buf {
		_ = h.h.RecordValue(int64(v))
	}
	h.buf = h.buf[:0]
}

// merged is every watcher's lags together; call it once they stopped.
func (l *lagRecorder) merged() (*hdrhistogram.Histogram, int64) {
	all := hdrhistogram.New(1, 60_000_000, 2)
	for _, h := range l.per {
		h.flush()
		all.Merge(h.h)
	}
	return all, all.TotalCount()
}

// ackRing remembers when each recent write's response arrived, by
// resourceVersion, for the watchers to measure their lag from: a slot per
// resourceVersion modulo its size, read and written without locks (a
// thousand watchers look up every event).
type ackRing struct {
	slots [1 << 16]struct {
		rv atomic.Uint64
		at atomic.Int64 // unix nanoseconds
	}
}

func (r *ackRing) store(rv uint64, at time.Time) {
	s := &r.slots[rv%uint64(len(r.slots))]
	s.at.Store(at.UnixNano())
	s.rv.Store(rv)
}

// load is when the response of the write of rv arrived, if it has.
func (r *ackRing) load(rv uint64) (time.Time, bool) {
	s := &r.slots[rv%uint64(len(r.slots))]
	if s.rv.Load() != rv {
		return time.Time{}, false
	}
	return time.Unix(0, s.at.Load()), true
}

// parseRV reads a resourceVersion's digits without making a string.
func parseRV(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// startWatchers opens the watches from the current resourceVersion and
// records, for every MODIFIED event, two lags: now minus the renewTime in
// it (set by the writer before it sent the PUT, so the write's own latency
// is part of it), and now minus when the write's response arrived (zero
// when the event came first). The event was committed between the two.
func (b *bench) startWatchers(ctx context.Context, wg *sync.WaitGroup, lag, lagAck *lagRecorder) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url(b.cfg.watchNode, "")+"?limit=1", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("list before watch: %w", err)
	}
	var list metav1.List
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("list before watch: HTTP %d %v", resp.StatusCode, err)
	}
	url := b.url(b.cfg.watchNode, "") + "?watch=true&resourceVersion=" + list.ResourceVersion
	read := readJSONEvents
	accept := "application/json"
	switch b.cfg.watchFormat {
	case "protobuf":
		read, accept = readProtobufEvents, "application/vnd.kubernetes.protobuf;stream=watch"
	case "json":
	default:
		return fmt.Errorf("unknown --watch-format %q (want protobuf or json)", b.cfg.watchFormat)
	}
	// The watchers' own client: no overall timeout (the run's context ends
	// them), and a read buffer that takes a whole batch of events in one
	// read(2) where net/http's default 4 KB needs two or three.
	wtr := newTransport(b.cfg.tls, 2, b.cfg.http1)
	wtr.ReadBufferSize = 64 << 10
	watchClient := &http.Client{Transport: wtr}
	defer watchClient.CloseIdleConnections()
	ready := make(chan error, b.cfg.watchers)
	for range b.cfg.watchers {
		wg.Add(1)
		h, hAck := lag.add(), lagAck.add()
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Accept", accept)
			resp, err := watchClient.Do(req)
			if err != nil {
				ready <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				ready <- fmt.Errorf("watch: HTTP %d", resp.StatusCode)
				return
			}
			ready <- nil
			err = read(bufio.NewReaderSize(resp.Body, 64<<10), func(now, renewed time.Time, rv []byte) {
				h.record(now.Sub(renewed))
				if n, ok := parseRV(rv); ok {
					ack, ok := b.acked.load(n)
					if !ok {
						ack = now
					}
					hAck.record(now.Sub(ack))
				}
			})
			if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				b.failed(err)
			}
		}()
	}
	for range b.cfg.watchers {
		if err := <-ready; err != nil {
			return err
		}
	}
	return nil
}

var (
	renewTimeKey = []byte(`"renewTime":"`)
	rvKey        = []byte(`"resourceVersion":"`)
)

// arrivalClock tells when an event arrived: events that came in one read
// from the connection arrived together, so the clock is read once per read
// rather than once per event: with a thousand watchers that is fewer clock
// reads taken from the CPU the cluster shares.
type arrivalClock struct {
	buffered int // what br held before the event was read
	now      time.Time
}

// before is called before an event is read from br; at, after it, with
// the event's size.
func (c *arrivalClock) before(br *bufio.Reader) { c.buffered = br.Buffered() }

// at is when the event of n bytes just read arrived.
func (c *arrivalClock) at(n int) time.Time {
	if n > c.buffered || c.now.IsZero() {
		c.now = time.Now()
	}
	return c.now
}

// readJSONEvents reads JSON lines without decoding them whole: the
// benchmark runs on the same machine as the cluster, so its CPU counts.
func readJSONEvents(br *bufio.Reader, record func(now, renewed time.Time, rv []byte)) error {
	var clock arrivalClock
	for {
		clock.before(br)
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		now := clock.at(len(line))
		if !bytes.HasPrefix(line, []byte(`{"type":"MODIFIED"`)) {
			continue
		}
		// spec comes last in a Lease, after managedFields: look for
		// renewTime near the end first.
		tail := max(len(line)-256, 0)
		i := bytes.Index(line[tail:], renewTimeKey)
		if i >= 0 {
			i += tail
		} else {
			i = bytes.Index(line, renewTimeKey)
		}
		if i < 0 || len(line) < i+len(renewTimeKey)+27 {
			continue
		}
		t, ok := parseMicroTime(line[i+len(renewTimeKey) : i+len(renewTimeKey)+27])
		if !ok {
			continue
		}
		var rv []byte
		if j := bytes.Index(line, rvKey); j >= 0 {
			rv = line[j+len(rvKey):]
			rv = rv[:max(bytes.IndexByte(rv, '"'), 0)]
		}
		record(now, t, rv)
	}
}

// parseMicroTime reads a metav1.MicroTime as the API server writes it,
// "2006-01-02T15:04:05.000000Z" (RFC3339Micro in UTC), digit by digit:
// time.Parse walks a general layout for every event, and with a thousand
// JSON watchers that is CPU taken from the cluster on the same machine.
// Anything else goes to time.Parse.
func parseMicroTime(b []byte) (time.Time, bool) {
	num := func(from, to int) (int, bool) {
		n := 0
		for _, c := range b[from:to] {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	if len(b) == 27 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[19] == '.' && b[26] == 'Z' {
		y, ok1 := num(0, 4)
		mo, ok2 := num(5, 7)
		d, ok3 := num(8, 10)
		h, ok4 := num(11, 13)
		mi, ok5 := num(14, 16)
		sec, ok6 := num(17, 19)
		us, ok7 := num(20, 26)
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && sec < 60 {
			// A day past the month's end is normalized by Date:
			// then it is not a date, as time.Parse says.
			if t := time.Date(y, time.Month(mo), d, h, mi, sec, us*1000, time.UTC); t.Day() == d {
				return t, true
			}
		}
	}
	t, err := time.Parse(metav1.RFC3339Micro, string(b))
	return t, err == nil
}

// protobufMagic starts every Kubernetes protobuf envelope (runtime.Unknown).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// readProtobufEvents reads length-prefixed WatchEvent frames and walks
// each down to spec.renewTime (event → envelope → Lease → spec) without
// decoding the rest: the benchmark shares the machine with the cluster, so
// its CPU counts, and the JSON reader does not decode whole events either.
func readProtobufEvents(br *bufio.Reader, record func(now, renewed time.Time, rv []byte)) error {
	var (
		frame []byte
		clock arrivalClock
	)
	for {
		clock.before(br)
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(size[:]))
		if cap(frame) < n {
			frame = make([]byte, n)
		}
		frame = frame[:n]
		if _, err := io.ReadFull(br, frame); err != nil {
			return err
		}
		now := clock.at(len(size) + n)
		// metav1.WatchEvent: 1 type, 2 object (RawExtension: 1 raw).
		typ, _ := protoBytes(frame, 1)
		if string(typ) != "MODIFIED" {
			continue
		}
		obj, _ := protoBytes(frame, 2)
		raw, _ := protoBytes(obj, 1)
		if !bytes.HasPrefix(raw, protobufMagic) {
			return fmt.Errorf("watch event object is not a protobuf envelope")
		}
		// runtime.Unknown: 2 raw; Lease: 1 metadata, 2 spec; ObjectMeta: 6
		// resourceVersion; LeaseSpec: 4 renewTime; MicroTime: 1 seconds,
		// 2 nanos.
		lease, _ := protoBytes(raw[len(protobufMagic):], 2)
		meta, _ := protoBytes(lease, 1)
		rv, _ := protoBytes(meta, 6)
		spec, _ := protoBytes(lease, 2)
		renew, ok := protoBytes(spec, 4)
		if !ok {
			continue
		}
		secs, _ := protoVarint(renew, 1)
		nanos, _ := protoVarint(renew, 2)
		record(now, time.Unix(int64(secs), int64(nanos)), rv)
	}
}

// protoField returns the value of the first field num of wire type typ in
// message b, from its first byte on.
func protoField(b []byte, num protowire.Number, typ protowire.Type) ([]byte, bool) {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		if n == num && t == typ {
			return b, true
		}
		l = protowire.ConsumeFieldValue(n, t, b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
	}
	return nil, false
}

// protoBytes is the first length-delimited field num of message b.
func protoBytes(b []byte, num protowire.Number) ([]byte, bool) {
	b, ok := protoField(b, num, protowire.BytesType)
	if !ok {
		return nil, false
	}
	v, l := protowire.ConsumeBytes(b)
	return v, l >= 0
}

// protoVarint is the first varint field num of message b.
func protoVarint(b []byte, num protowire.Number) (uint64, bool) {
	b, ok := protoField(b, num, protowire.VarintType)
	if !ok {
		return 0, false
	}
	v, l := protowire.ConsumeVarint(b)
	return v, l >= 0
}
