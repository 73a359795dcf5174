package state

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// EventType is the kind of change an event records.
type EventType string

// The event types, spelled as in the Kubernetes watch protocol.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one applied change. RV is the index of the entry that made it.
type Event struct {
	Type EventType
	RV   uint64
	// Object is the new state; for Deleted, the last state stamped with RV.
	// Readers always get it; the history itself holds none for an event
	// whose object was replaced and compacted (see compactObject).
	Object *Object
	// Prior is the state before the change (nil for Added); see Prev.
	Prior Prior
	// At is the leader's append time of the entry (unix nanoseconds), the
	// same on every node; used only to age the history.
	At int64

	// replacedAt is the RV of the event in the history whose Prior is
	// Object, 0 if there is none.
	replacedAt uint64
}

// Prior is how an event holds the version its change replaced: that
// *Object, or a smaller value that rebuilds it from the event's object.
//
// The history holds, for every object changed in its window, the version
// before its first change there, which nothing else holds once it has been
// replaced: with 100,000 Leases each renewed once in the window, 100,000
// Leases of 350 bytes whose renewal changed a time and the
// resourceVersion. So an event holds its previous state as the *Object
// while the event that wrote it is in the history too and among its
// recent events, and as what the function given to Store.SetPriorOf makes
// of it once not (History.link, compactObject and dropOldest). A
// Prior other than *Object must describe a version with the same metadata
// as the event's object but for resourceVersion and managedFields, so that
// selectors, which read names, namespaces and labels, see both versions
// alike (PrevSelectable).
type Prior interface {
	// Version returns the replaced version, given the version that
	// replaced it.
	Version(next *Object) *Object
}

// Version makes an Object its own Prior.
func (o *Object) Version(*Object) *Object { return o }

// Prev returns the state before the change, nil for Added. It may build a
// new Object each call (see Prior): callers on a hot path that only select
// use PrevSelectable.
func (e Event) Prev() *Object {
	if e.Prior == nil {
		return nil
	}
	return e.Prior.Version(e.Object)
}

// PrevSelectable returns an object with the name, namespace and labels of
// the state before the change, nil for Added: that state when the event
// holds it whole, else the event's object, which has the same metadata.
func (e Event) PrevSelectable() *Object {
	if e.Prior == nil {
		return nil
	}
	if o, ok := e.Prior.(*Object); ok {
		return o
	}
	return e.Object
}

// History is a bounded ring of the most recent events in RV order. It is
// guarded by Store.mu.
type History struct {
	// maxAge, if set, also drops events appended more than maxAge before
	// the newest one (by the leader's append time, so every node keeps the
	// same window).
	maxAge int64
	buf    []Event
	start  int // position of the oldest event
	n      int // number of events held
	// dropped is the RV of the newest event that fell out of the ring (0 if
	// none): a watch from an RV below it cannot be served.
	dropped uint64
	// priorOf, if set, makes the Prior an event keeps for a previous
	// state that nothing else in the history holds.
	priorOf func(next, prev *Object) Prior
	// recent is how many of the newest events keep their objects whole
	// once replaced (see compactObject).
	recent int
}

// recentEvents bounds History.recent: the events watchers read as they
// come (within a flush interval, a few hundred at most) are sent from
// objects every watcher shares, encoded once.
const recentEvents = 4096

func newHistory(capacity int, maxAge time.Duration) *History {
	return &History{buf: make([]Event, capacity), maxAge: int64(maxAge), recent: min(recentEvents, capacity/8)}
}

func (h *History) append(evs []Event) {
	for _, e := range evs {
		if h.n == len(h.buf) {
			h.dropOldest()
		}
		linked := h.link(&e)
		h.buf[(h.start+h.n)%len(h.buf)] = e
		h.n++
		if linked >= 0 && linked < h.n-h.recent {
			h.compactObject(linked)
		}
		if i := h.n - 1 - h.recent; i >= 0 {
			h.compactObject(i)
		}
	}
	if h.maxAge > 0 && len(evs) > 0 {
		newest := evs[len(evs)-1].At
		for h.n > 1 && h.buf[h.start].At > 0 && h.buf[h.start].At < newest-h.maxAge {
			h.dropOldest()
		}
	}
}

// dropOldest drops the oldest event and any other at its RV (one entry's
// changes), so that the history holds every event after dropped and none
// at or before it.
func (h *History) dropOldest() {
	rv := h.buf[h.start].RV
	h.dropOne()
	for h.n > 0 && h.buf[h.start].RV == rv {
		h.dropOne()
	}
}

func (h *History) dropOne() {
	old := h.buf[h.start]
	h.dropped = old.RV
	h.buf[h.start] = Event{}
	h.start = (h.start + 1) % len(h.buf)
	h.n--
	if old.replacedAt == 0 {
		return
	}
	if i, ok := h.index(old.replacedAt); ok {
		// An event without its object holds what compactObject could not
		// compact: whole either way.
		if e := h.ref(i); e.Prior == Prior(old.Object) && e.Object != nil {
			e.Prior = h.compact(e.Object, old.Object)
		}
	}
}

// link is called for e before it joins the history: when the event that
// wrote e's previous state is in the history, that event keeps the state
// and notes e as the one to compact it in once it leaves (dropOldest), and
// link returns its position; else e holds the state compacted at once, and
// link returns -1.
func (h *History) link(e *Event) int {
	prev, ok := e.Prior.(*Object)
	if !ok {
		return -1
	}
	if i, ok := h.index(prev.RV); ok && h.at(i).Object == prev {
		h.ref(i).replacedAt = e.RV
		return i
	}
	e.Prior = h.compact(e.Object, prev)
	return -1
}

// compactObject compacts the object of the event at position i once a
// newer event replaced it and i is no longer among the recent events:
// the newer event holds it as what priorOf makes of it, and the event
// itself holds no object, rebuilt from the newer one when read (see
// materialize). A Lease renewed twice in the window would otherwise be
// held whole twice: under leasebench's renewals of 100,000 Leases, about
// half the history's events held a version a newer one replaced.
func (h *History) compactObject(i int) {
	e := h.ref(i)
	if e.replacedAt == 0 || e.Object == nil || h.priorOf == nil {
		return
	}
	j, ok := h.index(e.replacedAt)
	if !ok {
		return
	}
	next := h.ref(j)
	if next.Prior != Prior(e.Object) || next.Object == nil {
		return
	}
	p := h.priorOf(next.Object, e.Object)
	if _, whole := p.(*Object); whole {
		return
	}
	next.Prior = p
	e.Object = nil
}

// materialize gives back the objects compactObject took from evs, a run
// of consecutive events of the history ending with its newest: the object
// of an event without one is the previous state of the event at its
// replacedAt, which is newer, so later in evs. Going from the newest down,
// that event has its object by then. The event at replacedAt is given the
// rebuilt version as its Prior too, so that both hold one *Object, as
// they would have had it not been compacted. Callers run it outside
// Store.mu: the events are copies, and what they point at is immutable.
func materialize(evs []Event) {
	for i := len(evs) - 1; i >= 0; i-- {
		e := &evs[i]
		if e.Object != nil {
			continue
		}
		next := &evs[successor(evs, i)]
		e.Object = next.Prev()
		next.Prior = e.Object
	}
}

// successor returns the position in evs of the event at evs[i].replacedAt,
// the one that replaced evs[i]'s object, for an event that holds none.
func successor(evs []Event, i int) int {
	j, found := slices.BinarySearchFunc(evs[i+1:], evs[i].replacedAt, func(e Event, rv uint64) int { return cmp.Compare(e.RV, rv) })
	if !found {
		panic(fmt.Sprintf("state: event %d holds no object and its successor %d is not in the history", evs[i].RV, evs[i].replacedAt))
	}
	return i + 1 + j
}

// HistoryDump is the history as Store.Dump took it, its events as the
// history holds them: those whose objects compactObject took are given
// them back as they are read.
type HistoryDump struct {
	evs []Event
}

// Len is the number of events.
func (d *HistoryDump) Len() int { return len(d.evs) }

// Events returns the events oldest first, every one with its object and
// previous state.
func (d *HistoryDump) Events() []Event {
	evs := slices.Clone(d.evs)
	materialize(evs)
	return evs
}

// NewestFirst calls fn with each event, newest first, its object whole
// and its previous state as the history holds it (Prev rebuilds it), and
// stops at fn's first error. Unlike Events it holds a rebuilt version only
// until the older event that wrote it has been given too: a snapshot of a
// history whose Leases were renewed many times over would otherwise
// rebuild every compacted version at once (tens of megabytes at 100,000
// Leases), and the heap goal would follow. It may be called once.
func (d *HistoryDump) NewestFirst(fn func(Event) error) error {
	evs := d.evs
	d.evs = nil
	// holdsObject[j]: the rebuilt previous state of event j is the object
	// of an older event, to be kept for it.
	holdsObject := make([]bool, len(evs))
	for i := range evs {
		if evs[i].Object == nil {
			holdsObject[successor(evs, i)] = true
		}
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Object == nil {
			next := &evs[successor(evs, i)]
			e.Object = next.Prior.(*Object)
			next.Prior = nil
		}
		if err := fn(e); err != nil {
			return err
		}
		evs[i] = Event{RV: e.RV}
		if holdsObject[i] {
			evs[i].Prior = e.Prev()
		}
	}
	return nil
}

// compact is how an event holds prev, the state its object replaced, when
// no other event holds it.
func (h *History) compact(next, prev *Object) Prior {
	if h.priorOf == nil {
		return prev
	}
	return h.priorOf(next, prev)
}

// index returns the position of the event at rv.
func (h *History) index(rv uint64) (int, bool) {
	i := h.after(rv - 1)
	return i, i < h.n && h.at(i).RV == rv
}

// after returns the position of the first event with RV > rv.
func (h *History) after(rv uint64) int {
	lo, hi := 0, h.n
	for lo < hi {
		m := (lo + hi) / 2
		if h.at(m).RV <= rv {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (h *History) reset(evs []Event, dropped uint64) {
	for i := range h.buf {
		h.buf[i] = Event{}
	}
	h.start, h.n, h.dropped = 0, 0, dropped
	h.append(evs)
}

func (h *History) at(i int) Event { return h.buf[(h.start+i)%len(h.buf)] }

func (h *History) ref(i int) *Event { return &h.buf[(h.start+i)%len(h.buf)] }

func (h *History) all() []Event {
	out := make([]Event, h.n)
	for i := range out {
		out[i] = h.at(i)
	}
	return out
}

// since returns the events with RV > rv, oldest first.
func (h *History) since(rv uint64) []Event { return h.appendSince(nil, rv) }

// appendSince appends the events with RV > rv to dst.
func (h *History) appendSince(dst []Event, rv uint64) []Event {
	lo := h.after(rv)
	dst = slices.Grow(dst, h.n-lo)
	for i := lo; i < h.n; i++ {
		dst = append(dst, h.at(i))
	}
	return dst
}

// Since is the answer of EventsSince.
type Since struct {
	// Events are those with RV > the asked rv, oldest first, up to Applied.
	Events  []Event
	Applied uint64
	// Expired is set when events after the asked rv have left the history,
	// so resuming from it would leave a gap; Oldest is then the oldest RV
	// that can still be resumed from.
	Expired bool
	Oldest  uint64
	// Generation changes when a snapshot install replaced the state: a
	// reader that started in another generation cannot trust the history.
	Generation uint64
}

// EventsSince returns the events with RV > rv up to the applied index.
func (s *Store) EventsSince(rv uint64) Since { return s.AppendEventsSince(nil, rv) }

// AppendEventsSince is EventsSince with the events appended to dst, for a
// reader that reuses one buffer (a watcher, many times a second).
func (s *Store) AppendEventsSince(dst []Event, rv uint64) Since {
	s.mu.RLock()
	out := Since{Applied: s.applied, Oldest: s.history.dropped, Generation: s.generation}
	if rv < s.history.dropped {
		s.mu.RUnlock()
		out.Expired = true
		return out
	}
	out.Events = s.history.appendSince(dst, rv)
	s.mu.RUnlock()
	materialize(out.Events[len(dst):])
	return out
}

// Generation counts the snapshot installs that replaced the state.
func (s *Store) Generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.generation
}

// HistoryLen is the number of events held in the history.
func (s *Store) HistoryLen() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.history.n
}
