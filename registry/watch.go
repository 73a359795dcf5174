package registry

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// WatchOptions say where a watch starts.
type WatchOptions struct {
	ListOptions
	// SendInitialEvents asks for the current state as ADDED events first
	// (also implied by an unset or "0" resourceVersion).
	// nil follows the legacy rule: initial events when resourceVersion is
	// unset or "0". False starts at the given (or the current) version
	// without them.
	SendInitialEvents *bool
	// InitialEventsEnd asks for a BOOKMARK annotated
	// k8s.io/initial-events-end after the initial events.
	InitialEventsEnd bool
}

// Watcher reads a watch's events from the node's history. It holds no
// buffer of its own and never slows Apply: it reads the shared ring at its
// own pace, and if it falls so far behind that the ring has dropped events
// it has not read, it ends with 410 Expired and the client resumes.
//
// A Watcher is used by one goroutine.
type Watcher struct {
	store   *Store
	r       *Resource
	ns      string
	opts    ListOptions
	pos     uint64 // every event with RV <= pos has been read
	gen     uint64
	pending []Event
	timer   *time.Timer   // NextWithin's, reused
	since   []state.Event // NextWithin's buffers, reused
	out     []Event
}

// Event is a watch event. Stored is the stored object it carries when the
// event object is that object itself (not a copy or conversion), so the API
// can reuse the object's cached encodings across watchers.
type Event struct {
	watch.Event
	Stored *state.Object
}

// Watch starts a watch of r in ns ("" = all namespaces).
func (s *Store) Watch(ctx context.Context, r *Resource, ns string, o WatchOptions) (*Watcher, error) {
	w := &Watcher{store: s, r: r, ns: ns, opts: o.ListOptions}
	rv := o.ResourceVersion
	legacy := o.SendInitialEvents == nil && (rv == "" || rv == "0")
	if o.SendInitialEvents != nil && !*o.SendInitialEvents && (rv == "" || rv == "0") {
		// Start from now, with no initial events.
		sn, err := s.view(ctx, ReadOptions{ResourceVersion: rv})
		if err != nil {
			return nil, err
		}
		w.pos, w.gen = sn.Index, sn.Generation
		return w, nil
	}
	if legacy || (o.SendInitialEvents != nil && *o.SendInitialEvents) {
		sn, err := s.view(ctx, ReadOptions{ResourceVersion: rv})
		if err != nil {
			return nil, err
		}
		w.pos, w.gen = sn.Index, sn.Generation
		var listErr error
		sn.List(r.Name, ns, nil, func(obj *state.Object) bool {
			if o.Matches(obj) {
				out, err := served(r, obj.Obj)
				if err != nil {
					listErr = err
					return false
				}
				w.pending = append(w.pending, w.event(watch.Added, out, obj))
			}
			return true
		})
		if listErr != nil {
			return nil, listErr
		}
		if o.InitialEventsEnd {
			b := w.Bookmark()
			b.Object.(metav1.Object).SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
			w.pending = append(w.pending, b)
		}
		return w, nil
	}
	n, err := parseRV(rv)
	if err != nil {
		return nil, err
	}
	if err := s.waitApplied(ctx, n); err != nil {
		return nil, err
	}
	w.pos, w.gen = n, s.cluster.State().Generation()
	return w, nil
}

// Pos is the resourceVersion up to which the watcher has read everything.
func (w *Watcher) Pos() uint64 { return w.pos }

// Bookmark is a BOOKMARK event at the watcher's position: an empty object
// of the watched kind carrying only the resourceVersion.
func (w *Watcher) Bookmark() Event {
	obj := w.r.New()
	obj.SetResourceVersion(strconv.FormatUint(w.pos, 10))
	return Event{Event: watch.Event{Type: watch.Bookmark, Object: obj}}
}

// tooOld is the watch cache's 410.
func tooOld(rv, oldest uint64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, oldest))
}

// Next returns the next events, waiting until there are some or ctx ends
// (then it returns no events and no error). The events are the caller's
// until the next call. An error (410 Expired) ends the
// watch: the history no longer holds what the watcher has not read, or a
// snapshot install replaced the state.
func (w *Watcher) Next(ctx context.Context) ([]Event, error) { return w.NextWithin(ctx, 0) }

// NextWithin is Next that also returns no events once wait has passed
// (0: no limit). A stream calls it for every batch it sends: unlike a
// context with a deadline per call, it allocates nothing.
func (w *Watcher) NextWithin(ctx context.Context, wait time.Duration) ([]Event, error) {
	if len(w.pending) > 0 {
		evs := w.pending
		w.pending = nil
		return evs, nil
	}
	st := w.store.cluster.State()
	// The timer is armed only once there is nothing to return: a busy
	// stream finds its events at once, a thousand of them twenty times a
	// second, and setting and stopping a timer each time showed in the
	// watch node's profile.
	var expired <-chan time.Time
	defer func() {
		if expired != nil {
			w.timer.Stop()
		}
	}()
	for {
		changed := st.Changed()
		since := st.AppendEventsSince(w.since[:0], w.pos)
		w.since = since.Events
		if since.Generation != w.gen {
			return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d): the node's state was replaced by a snapshot", w.pos, since.Applied))
		}
		if since.Expired {
			return nil, tooOld(w.pos, since.Oldest)
		}
		out := w.out[:0]
		for _, e := range since.Events {
			if e.Object.Resource != w.r.Name || (w.ns != "" && e.Object.Key().Namespace != w.ns) {
				continue
			}
			ev, ok, err := w.translate(e)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, ev)
			}
		}
		clear(w.since) // let go of the objects until the next call
		w.out = out
		if since.Applied > w.pos {
			w.pos = since.Applied
		}
		if len(out) > 0 {
			return out, nil
		}
		if expired == nil && wait > 0 {
			if w.timer == nil {
				w.timer = time.NewTimer(wait)
			} else {
				w.timer.Reset(wait)
			}
			expired = w.timer.C
		}
		select {
		case <-changed:
		case <-expired:
			return nil, nil
		case <-ctx.Done():
			return nil, nil
		}
	}
}

// translate applies the selectors to an event, as kube-apiserver does to
// the old and new state: an object that starts matching is ADDED, one that
// stops matching is DELETED (with its old content at the event's version).
func (w *Watcher) translate(e state.Event) (Event, bool, error) {
	cur := e.Type != state.Deleted && w.opts.Matches(e.Object)
	old := e.Prior != nil && w.opts.Matches(e.PrevSelectable())
	switch {
	case e.Type == state.Deleted:
		if !old {
			return Event{}, false, nil
		}
		return w.eventOf(watch.Deleted, e.Object)
	case cur && old:
		return w.eventOf(watch.Modified, e.Object)
	case cur:
		return w.eventOf(watch.Added, e.Object)
	case old:
		gone := e.Prev().Obj.DeepCopyObject().(fsm.StoredObject)
		gone.SetResourceVersion(strconv.FormatUint(e.RV, 10))
		out, err := served(w.r, gone)
		if err != nil {
			return Event{}, false, err
		}
		return Event{Event: watch.Event{Type: watch.Deleted, Object: out}}, true, nil
	}
	return Event{}, false, nil
}

// eventOf is an event carrying stored object o in the watched version.
func (w *Watcher) eventOf(typ watch.EventType, o *state.Object) (Event, bool, error) {
	out, err := served(w.r, o.Obj)
	if err != nil {
		return Event{}, false, err
	}
	return w.event(typ, out, o), true, nil
}

// event pairs an event object with the stored object when it is that object.
func (w *Watcher) event(typ watch.EventType, out runtime.Object, o *state.Object) Event {
	ev := Event{Event: watch.Event{Type: typ, Object: out}}
	if out == o.Obj {
		ev.Stored = o
	}
	return ev
}
