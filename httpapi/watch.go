package httpapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/registry"
)

// Bookmark timing, as kube-apiserver: about once a minute, and once shortly
// before the server ends the watch.
const (
	bookmarkInterval      = time.Minute
	bookmarkBeforeTimeout = 2 * time.Second
)

// A watch stream writes what committed since its last write in one write,
// and writes at most once per flush interval. Writing to a socket is most
// of what a watch costs the server (and reading it, the client), so the
// node's open streams share a budget of streamWritesPerSecond: with N open,
// each writes at most every N/streamWritesPerSecond, and never waits more
// than maxFlushInterval. One stream, or a few dozen, write each commit at
// once; a thousand watchers of Leases renewed 300 times a second make
// 20,000 writes a second instead of 300,000, an event waiting up to 50 ms.
// A shorter cap spends more of the node's CPU on writes, and on cores
// shared with the writers and the readers those writes delay the commits
// too: the longer cap costs a few milliseconds at the median and lowers
// the tail of delivery lag (docs/performance.md, "Watch fan-out").
const (
	streamWritesPerSecond = 20000
	maxFlushInterval      = 50 * time.Millisecond
)

// flushInterval is the shortest time between two writes to one watch
// stream while streams are open.
func flushInterval(streams int64) time.Duration {
	return min(maxFlushInterval, time.Duration(streams)*time.Second/streamWritesPerSecond)
}

// maxBatch is how many bytes of frames a watch stream holds before writing
// them out even between flushes (a long initial list, a burst).
const maxBatch = 64 << 10

// appendProtobufFrame appends one frame of a protobuf watch stream: a
// 4-byte big-endian length, then metav1.WatchEvent{type = 1, object = 2
// (RawExtension{raw = 1})}, field by field as its generated marshaller
// writes it (TestProtobufFrame compares the two).
func appendProtobufFrame(b []byte, typ watch.EventType, obj []byte) []byte {
	ext := protowire.SizeTag(1) + protowire.SizeBytes(len(obj))
	size := protowire.SizeTag(1) + protowire.SizeBytes(len(typ)) + protowire.SizeTag(2) + protowire.SizeBytes(ext)
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, string(typ))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(ext))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, obj)
}

// watchTimeout is kube-apiserver's default: random in [30m, 60m), so that
// clients do not all reconnect at once.
func watchTimeout() time.Duration {
	return 30*time.Minute + time.Duration(rand.Int64N(int64(30*time.Minute)))
}

// deprecatedWatch serves /watch/... paths: a watch of the list path, of one
// object when a name is given.
func (s *Server) deprecatedWatch(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		notAllowed(w, "GET")
		s.writeError(w, req, methodNotAllowed())
		return
	}
	res, ok := s.resourceFor(w, req)
	if !ok {
		return
	}
	vars := mux.Vars(req)
	q := req.URL.Query()
	q.Set("watch", "true")
	if name := vars["name"]; name != "" {
		sel, err := fields.ParseSelector(q.Get("fieldSelector"))
		if err != nil {
			s.writeError(w, req, apierrors.NewBadRequest(err.Error()))
			return
		}
		if v, found := sel.RequiresExactMatch("metadata.name"); found && v != name {
			s.writeError(w, req, apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name"))
			return
		}
		q.Set("fieldSelector", fields.AndSelectors(sel, fields.OneTermEqualSelector("metadata.name", name)).String())
	}
	u := *req.URL
	u.RawQuery = q.Encode()
	r2 := req.Clone(req.Context())
	r2.URL = &u
	s.list(w, r2, res, vars["namespace"])
}

// watch streams events: one JSON object per line, or length-prefixed
// protobuf frames, flushed as they come.
func (s *Server) watch(w http.ResponseWriter, req *http.Request, out output, res *registry.Resource, ns string, raw *metav1.ListOptions, lo registry.ListOptions) {
	if out.info.StreamSerializer == nil {
		_, err := negotiate(&http.Request{Header: http.Header{"Accept": {"application/none"}}, URL: &url.URL{}})
		s.writeError(w, req, err)
		return
	}
	timeout := watchTimeout()
	if raw.TimeoutSeconds != nil && *raw.TimeoutSeconds > 0 {
		timeout = time.Duration(*raw.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(req.Context(), timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	bookmarks := raw.AllowWatchBookmarks
	initial := raw.SendInitialEvents != nil && *raw.SendInitialEvents
	watcher, err := s.store.Watch(ctx, res, ns, registry.WatchOptions{ListOptions: lo, SendInitialEvents: raw.SendInitialEvents, InitialEventsEnd: initial && bookmarks})
	if err != nil {
		s.writeError(w, req, err)
		return
	}

	contentType := out.info.MediaType
	if contentType == mediaProtobuf {
		contentType += ";stream=watch"
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	// Frames collect in the stream's buffer and go out in one write per
	// flush.
	stream, ctx, cancelStream := startWatchStream(ctx, w, req, s.requestTimeout)
	defer stream.close()
	s.watchStreams.Add(1)
	defer s.watchStreams.Add(-1)
	defer cancelStream()
	ok := true
	flush := func() { ok = stream.flush() && ok }

	encodeObj := out.encodeObject
	// A stored object is encoded once for every watcher and reused.
	slot, _ := encodingSlot(out.info.MediaType)
	first := true
	send := func(ev registry.Event) bool {
		var (
			obj []byte
			err error
		)
		switch {
		case ev.Type != watch.Error && out.as.Kind != "":
			as := out
			if as.as.Kind == "PartialObjectMetadataList" {
				as.as.Kind = "PartialObjectMetadata"
			}
			t, terr := transform(req, as, ev.Object, first)
			if terr != nil {
				ev = registry.Event{Event: watch.Event{Type: watch.Error, Object: s.statusOf(req, terr)}}
			} else {
				ev.Object = t
				first = false
			}
			obj, err = encodeObj(ev.Object)
		case ev.Stored != nil:
			obj, err = s.node.State().Encoding(ev.Stored, slot, encodeObj)
		default:
			obj, err = encodeObj(ev.Object)
		}
		if err != nil {
			s.logger.Error("encode watch event", "error", err)
			return false
		}
		if slot == state.EncodingJSON {
			// The JSON frame written directly: {"type":...,"object":...}.
			// Event types are plain upper-case words: no escaping needed.
			b := append(stream.buf, `{"type":"`...)
			b = append(b, ev.Type...)
			b = append(b, `","object":`...)
			b = append(b, bytes.TrimRight(obj, "\n")...)
			stream.buf = append(b, "}\n"...)
		} else {
			stream.buf = appendProtobufFrame(stream.buf, ev.Type, obj)
		}
		if stream.pending() >= maxBatch {
			flush()
		}
		return ok
	}

	lastBookmark := time.Now()
	finalBookmarkSent := false
	var lastFlush time.Time
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		if d := flushInterval(s.watchStreams.Load()) - time.Since(lastFlush); d > 0 {
			pause.Reset(d)
			select {
			case <-pause.C:
			case <-ctx.Done():
				return
			}
		}
		wait := time.Until(deadline)
		if bookmarks {
			next := time.Until(lastBookmark.Add(bookmarkInterval))
			if !finalBookmarkSent {
				next = min(next, time.Until(deadline.Add(-bookmarkBeforeTimeout)))
			}
			wait = max(min(wait, next), 0)
		}
		if wait <= 0 {
			wait = time.Nanosecond // NextWithin(0) would wait without limit
		}
		evs, err := watcher.NextWithin(ctx, wait)
		if err != nil {
			if apierrors.IsResourceExpired(err) {
				s.metrics.watchExpiry.Inc()
			}
			st := s.statusOf(req, err)
			send(registry.Event{Event: watch.Event{Type: watch.Error, Object: st}})
			flush()
			return
		}
		for _, ev := range evs {
			if !send(ev) {
				return
			}
		}
		if len(evs) > 0 {
			flush()
			if !ok {
				return
			}
			lastFlush = time.Now()
		}
		if ctx.Err() != nil {
			return
		}
		// A bookmark is due on time whether or not events came: a busy
		// stream always has some, and its position covers them.
		if bookmarks {
			now := time.Now()
			final := !finalBookmarkSent && !now.Before(deadline.Add(-bookmarkBeforeTimeout))
			if final || now.Sub(lastBookmark) >= bookmarkInterval {
				finalBookmarkSent = finalBookmarkSent || final
				lastBookmark = now
				if !send(watcher.Bookmark()) {
					return
				}
				flush()
			}
		}
	}
}
