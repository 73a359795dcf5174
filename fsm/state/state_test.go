package state

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var smallConfig = Config{HistoryEvents: 8, ListSnapshots: 4}

// waitLimit bounds every wait for another goroutine; reaching it is a
// failure, never a way to synchronise.
const waitLimit = 10 * time.Second

func key(ns, name string) Key { return Key{Resource: "leases", Namespace: ns, Name: name} }

func obj(k Key, rv uint64, data string) *Object {
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
	return NewObject(k.Resource, rv, meta, []byte(data))
}

// op is one change of an entry; the zero op changes nothing.
type op struct {
	put, del Key
	data     string
}

// apply commits one batch in which entry first+i does ops[i], as the FSM
// does.
func apply(s *Store, first uint64, ops ...op) {
	t := s.Begin()
	for i, o := range ops {
		idx := first + uint64(i)
		switch {
		case o.put != (Key{}):
			prev := t.Get(o.put)
			t.Put(obj(o.put, idx, o.data), prev, int64(idx))
		case o.del != (Key{}):
			prev := t.Get(o.del)
			tomb := NewObject(prev.Resource, idx, prev.Obj, prev.Data())
			t.Delete(tomb, prev, int64(idx))
		}
		t.Step(idx)
	}
	t.Commit(first + uint64(len(ops)) - 1)
}

func put(k Key, data string) op { return op{put: k, data: data} }
func del(k Key) op              { return op{del: k} }

var nothing = op{}

// contents lists a view as "name@rv=data" in list order.
func contents(sn *Snapshot, resource, namespace string, after *Key) string {
	var out []string
	sn.List(resource, namespace, after, func(o *Object) bool {
		out = append(out, fmt.Sprintf("%s/%s@%d=%s", o.Key().Namespace, o.Key().Name, o.RV, o.Data()))
		return true
	})
	return strings.Join(out, " ")
}

// tracked applies batches to a store and to a map, recording what the
// view at every index must show.
type tracked struct {
	s    *Store
	objs map[Key]*Object
	want []string // want[idx]: contents of the view at idx
}

func newTracked(cfg Config) *tracked {
	return &tracked{s: New(cfg), objs: map[Key]*Object{}, want: []string{""}}
}

func (tr *tracked) apply(ops ...op) {
	first := uint64(len(tr.want))
	apply(tr.s, first, ops...)
	for i, o := range ops {
		switch {
		case o.put != (Key{}):
			tr.objs[o.put] = obj(o.put, first+uint64(i), o.data)
		case o.del != (Key{}):
			delete(tr.objs, o.del)
		}
		var keys []string
		for k, o := range tr.objs {
			keys = append(keys, fmt.Sprintf("%s/%s@%d=%s", k.Namespace, k.Name, o.RV, o.Data()))
		}
		sort.Strings(keys)
		tr.want = append(tr.want, strings.Join(keys, " "))
	}
}

func TestSnapshotAt(t *testing.T) {
	tr := newTracked(smallConfig) // 8 events, 4 views
	s := tr.s
	a, b, c := key("ns", "a"), key("ns", "b"), key("ns", "c")
	tr.apply(put(a, "a1"))                  // 1
	tr.apply(put(b, "b2"))                  // 2
	tr.apply(nothing)                       // 3: no view of its own
	tr.apply(put(a, "a4"), nothing, del(b)) // 4, 5, 6
	tr.apply(nothing, nothing)              // 7, 8
	tr.apply(put(b, "b9"))                  // 9

	check := func(t *testing.T) {
		t.Helper()
		applied := s.AppliedIndex()
		_, _, _, oldest := eventsSince(s, 0)
		for idx := uint64(0); idx <= applied+2; idx++ {
			sn, ok := s.SnapshotAt(idx)
			// A view is served for every applied index whose later
			// changes are all still known: kept in the ring of views or
			// rebuilt from the history.
			if wantOK := idx <= applied && idx >= oldest; ok != wantOK {
				t.Errorf("SnapshotAt(%d) ok=%v, want %v (applied %d, history from %d, views %v)", idx, ok, wantOK, applied, oldest, s.snaps.idx)
				continue
			}
			if !ok {
				if sn != nil {
					t.Errorf("SnapshotAt(%d): non-nil view with ok=false", idx)
				}
				continue
			}
			if sn.Index != idx {
				t.Errorf("SnapshotAt(%d): index %d", idx, sn.Index)
			}
			if got := contents(sn, "leases", "", nil); got != tr.want[idx] {
				t.Errorf("SnapshotAt(%d) = %q, want %q", idx, got, tr.want[idx])
			}
		}
	}
	t.Run("history complete", func(t *testing.T) {
		if s.snaps.idx[0] == 0 {
			t.Fatalf("views %v: the ring never dropped", s.snaps.idx)
		}
		check(t)
	})

	// Six more events overflow the history of 8: views older than the
	// newest dropped event (4) can no longer be served.
	tr.apply(put(c, "c10"), put(c, "c11"), nothing, put(c, "c13"))
	tr.apply(put(c, "c14"), put(a, "a15"), put(b, "b16"))
	t.Run("history dropped", func(t *testing.T) {
		if _, _, ok, oldest := eventsSince(s, 0); ok || oldest != 4 {
			t.Fatalf("history: ok=%v oldest=%d, want oldest 4", ok, oldest)
		}
		if s.snaps.idx[0] <= 4 {
			t.Fatalf("views %v: nothing to rebuild", s.snaps.idx)
		}
		check(t)
		for _, idx := range []uint64{0, 3} {
			if _, ok := s.SnapshotAt(idx); ok {
				t.Errorf("SnapshotAt(%d) served with the history dropped up to 4", idx)
			}
		}
	})

	// Views are immutable: ones taken now (kept or rebuilt) do not see
	// later writes, and rebuilding one does not touch the store.
	latest := s.Snapshot()
	kept, _ := s.SnapshotAt(15)
	rebuilt, ok := s.SnapshotAt(5)
	if !ok {
		t.Fatal("SnapshotAt(5) failed")
	}
	if got := contents(s.Snapshot(), "leases", "", nil); got != tr.want[16] {
		t.Fatalf("latest view after a rebuild: %q, want %q", got, tr.want[16])
	}
	tr.apply(put(a, "a17"), del(b))
	for _, v := range []struct {
		sn   *Snapshot
		want string
	}{{latest, tr.want[16]}, {kept, tr.want[15]}, {rebuilt, tr.want[5]}} {
		if got := contents(v.sn, "leases", "", nil); got != v.want {
			t.Errorf("view at %d changed: %q, want %q", v.sn.Index, got, v.want)
		}
	}
	if sn := s.Snapshot(); sn.Index != 18 || contents(sn, "leases", "", nil) != tr.want[18] {
		t.Fatalf("latest view at %d: %q", sn.Index, contents(sn, "leases", "", nil))
	}
}

// A view rebuilt from the history is kept and served again (the pages of
// one paginated list ask for the same version), the last few of them, and
// none survives a restore.
func TestSnapshotAtReusesRebuiltViews(t *testing.T) {
	tr := newTracked(Config{HistoryEvents: 64, ListSnapshots: 2})
	s := tr.s
	a, b := key("ns", "a"), key("ns", "b")
	for i := 0; i < 12; i++ {
		tr.apply(put(a, fmt.Sprintf("a%d", 2*i+1)), put(b, fmt.Sprintf("b%d", 2*i+2))) // one commit, two entries
	}
	first, ok := s.SnapshotAt(4)
	if !ok {
		t.Fatal("SnapshotAt(4) failed")
	}
	tr.apply(put(a, "a25")) // later writes do not change the view at 4
	again, ok := s.SnapshotAt(4)
	if !ok || again.root != first.root {
		t.Fatalf("SnapshotAt(4) rebuilt again (ok=%v)", ok)
	}
	if got := contents(again, "leases", "", nil); got != tr.want[4] {
		t.Fatalf("kept view at 4 = %q, want %q", got, tr.want[4])
	}
	// Four more rebuilt views push the one at 4 out.
	for _, idx := range []uint64{6, 8, 10, 12} {
		if sn, ok := s.SnapshotAt(idx); !ok || contents(sn, "leases", "", nil) != tr.want[idx] {
			t.Fatalf("SnapshotAt(%d) ok=%v", idx, ok)
		}
	}
	if len(s.rebuilt.views) != rebuiltViewsKept {
		t.Fatalf("%d rebuilt views kept, want %d", len(s.rebuilt.views), rebuiltViewsKept)
	}
	if sn, _ := s.SnapshotAt(4); sn.root == first.root {
		t.Fatal("the least recently used rebuilt view was kept")
	}
	// Views the history can no longer serve are let go of, so that they do
	// not keep old objects alive.
	for i := 0; i < 40; i++ {
		tr.apply(put(a, fmt.Sprintf("a%d", 26+2*i)), put(b, fmt.Sprintf("b%d", 27+2*i)))
	}
	_, _, _, oldest := eventsSince(s, 0)
	for _, v := range s.rebuilt.views {
		if v.idx < oldest {
			t.Fatalf("rebuilt view at %d kept with the history from %d", v.idx, oldest)
		}
	}
	if oldest <= 12 {
		t.Fatalf("history from %d: nothing dropped", oldest)
	}
	// A restore replaces the state the views came from.
	s.Replace(nil, nil, 30, 30)
	if len(s.rebuilt.views) != 0 {
		t.Fatalf("%d rebuilt views kept across a restore", len(s.rebuilt.views))
	}
	if _, ok := s.SnapshotAt(4); ok {
		t.Fatal("SnapshotAt(4) served after a restore to 30 with the history dropped up to it")
	}
}

// Before the ring has filled, every applied index has a view, including
// those before the first change.
func TestSnapshotAtBeforeFirstChange(t *testing.T) {
	s := New(smallConfig)
	if sn, ok := s.SnapshotAt(0); !ok || sn.Count("leases") != 0 {
		t.Fatalf("empty store: SnapshotAt(0) ok=%v", ok)
	}
	apply(s, 1, nothing, nothing) // e.g. the first configuration and a leader's noop
	apply(s, 3, put(key("ns", "a"), "a3"))
	for idx := uint64(0); idx <= 2; idx++ {
		sn, ok := s.SnapshotAt(idx)
		if !ok {
			t.Fatalf("SnapshotAt(%d) failed with 1 of %d views kept", idx, smallConfig.ListSnapshots)
		}
		if n := sn.Count("leases"); n != 0 || sn.Index != idx {
			t.Fatalf("SnapshotAt(%d): index %d, %d objects", idx, sn.Index, n)
		}
	}
	if sn, ok := s.SnapshotAt(3); !ok || sn.Count("leases") != 1 {
		t.Fatalf("SnapshotAt(3) ok=%v", ok)
	}
}

func TestSnapshotAtAfterReplace(t *testing.T) {
	s := New(smallConfig)
	apply(s, 1, put(key("ns", "old"), "o"))
	apply(s, 2, put(key("ns", "old2"), "o"))
	n := obj(key("ns", "new"), 40, "n")
	// The snapshot's history starts after 38 and holds the create at 40.
	s.Replace([]*Object{n}, []Event{{Type: Added, RV: 40, Object: n, At: 40}}, 38, 50)
	for _, idx := range []uint64{1, 2, 37} {
		if _, ok := s.SnapshotAt(idx); ok {
			t.Fatalf("SnapshotAt(%d) served a view from before the restore", idx)
		}
	}
	for idx, want := range map[uint64]string{38: "", 39: "", 40: "ns/new@40=n", 49: "ns/new@40=n", 50: "ns/new@40=n"} {
		sn, ok := s.SnapshotAt(idx)
		if !ok || sn.Index != idx || contents(sn, "leases", "", nil) != want {
			t.Fatalf("SnapshotAt(%d) ok=%v, want %q", idx, ok, want)
		}
	}
	apply(s, 51, nothing)
	apply(s, 52, put(key("ns", "x"), "x"))
	if sn, ok := s.SnapshotAt(51); !ok || contents(sn, "leases", "", nil) != "ns/new@40=n" {
		t.Fatalf("SnapshotAt(51) ok=%v", ok)
	}
}

func TestList(t *testing.T) {
	s := New(DefaultConfig())
	var ops []op
	// Put in an order unrelated to the expected one.
	for _, id := range []string{
		"leases/a/x", "leases/b/x", "leases/a-b/y", "leases/a/x-y", "leases/a.b/x",
		"leases/a-b/x", "leases/a/y", "leases/ab/x",
		"lease/a/x", "leases-v2/a/x", "leasesx/a/x", // other resources
	} {
		p := strings.Split(id, "/")
		ops = append(ops, put(Key{Resource: p[0], Namespace: p[1], Name: p[2]}, "d"))
	}
	apply(s, 1, ops...)
	sn := s.Snapshot()
	names := func(resource, namespace string, after *Key) string {
		var out []string
		sn.List(resource, namespace, after, func(o *Object) bool {
			out = append(out, o.Key().Namespace+"/"+o.Key().Name)
			return true
		})
		return strings.Join(out, " ")
	}
	k := func(ns, name string) *Key { kk := key(ns, name); return &kk }
	// Byte order of "resource/namespace/name": '-' < '.' < '/' < 'b', so
	// "a-b" and "a.b" come before "a", and "x" before "x-y".
	all := "a-b/x a-b/y a.b/x a/x a/x-y a/y ab/x b/x"
	tests := []struct {
		name      string
		namespace string
		after     *Key
		want      string
	}{
		{"all namespaces", "", nil, all},
		{"namespace a", "a", nil, "a/x a/x-y a/y"},
		{"namespace a-b", "a-b", nil, "a-b/x a-b/y"},
		{"namespace a.b", "a.b", nil, "a.b/x"},
		{"namespace ab", "ab", nil, "ab/x"},
		{"missing namespace", "c", nil, ""},
		{"namespace that prefixes others", "a-", nil, ""},
		{"after first", "", k("a-b", "x"), "a-b/y a.b/x a/x a/x-y a/y ab/x b/x"},
		{"after crosses namespaces", "", k("a-b", "y"), "a.b/x a/x a/x-y a/y ab/x b/x"},
		{"after is exclusive in namespace", "a", k("a", "x"), "a/x-y a/y"},
		{"after a missing key", "a", k("a", "x-"), "a/x-y a/y"},
		{"after a key before the namespace", "a", k("a-b", "z"), "a/x a/x-y a/y"},
		{"after a key past the namespace", "a", k("ab", "x"), ""},
		{"after the last", "", k("b", "x"), ""},
		{"after past everything", "", k("z", "z"), ""},
		{"after a key of the empty namespace", "", k("", "x"), all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names("leases", tt.namespace, tt.after); got != tt.want {
				t.Fatalf("List(%q, after %v) = %q, want %q", tt.namespace, tt.after, got, tt.want)
			}
		})
	}
	t.Run("other resources", func(t *testing.T) {
		for res, want := range map[string]string{"lease": "a/x", "leases-v2": "a/x", "leasesx": "a/x", "leasesy": ""} {
			if got := names(res, "", nil); got != want {
				t.Errorf("List(%q) = %q, want %q", res, got, want)
			}
		}
	})
	t.Run("stop early", func(t *testing.T) {
		var got []string
		sn.List("leases", "", nil, func(o *Object) bool {
			got = append(got, o.Key().Name)
			return len(got) < 3
		})
		if len(got) != 3 {
			t.Fatalf("fn called %d times after returning false at 3", len(got))
		}
	})
	t.Run("pages", func(t *testing.T) {
		// Paging with after = last key of the previous page yields the
		// full list.
		var pages []string
		var after *Key
		for n := 0; ; n++ {
			if n > 8 {
				t.Fatalf("more than 8 pages of 3 for 8 objects: %q", pages)
			}
			var page []string
			var last *Object
			sn.List("leases", "", after, func(o *Object) bool {
				page = append(page, o.Key().Namespace+"/"+o.Key().Name)
				last = o
				return len(page) < 3
			})
			if len(page) == 0 {
				break
			}
			pages = append(pages, page...)
			k := last.Key()
			after = &k
		}
		if got := strings.Join(pages, " "); got != all {
			t.Fatalf("paged list %q, want %q", got, all)
		}
	})
	t.Run("count and get", func(t *testing.T) {
		if n := sn.Count("leases"); n != 8 {
			t.Fatalf("Count = %d", n)
		}
		if o := sn.Get(key("a-b", "y")); o == nil || o.Key() != key("a-b", "y") {
			t.Fatalf("Get = %+v", o)
		}
		if o := sn.Get(key("a", "b")); o != nil {
			t.Fatalf("Get of missing key = %+v", o)
		}
		if o := sn.Get(Key{Resource: "leasesx", Namespace: "a", Name: "x"}); o == nil {
			t.Fatal("Get of other resource failed")
		}
	})
}

// eventsSince unpacks EventsSince; ok is !Expired.
func eventsSince(s *Store, rv uint64) (evs []Event, applied uint64, ok bool, oldest uint64) {
	r := s.EventsSince(rv)
	if r.Expired && len(r.Events) > 0 {
		panic(fmt.Sprintf("EventsSince(%d): %d events with Expired", rv, len(r.Events)))
	}
	return r.Events, r.Applied, !r.Expired, r.Oldest
}

// eventRVs renders events as "TYPE rv".
func eventRVs(evs []Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s%d", e.Type[:1], e.RV))
	}
	return strings.Join(out, " ")
}

func TestEventsSince(t *testing.T) {
	s := New(smallConfig) // 8 events
	a, b := key("ns", "a"), key("ns", "b")
	// RVs 1..6 with gaps: events at 1, 2, 4, 6.
	apply(s, 1, put(a, "1"), put(b, "2"), nothing, put(a, "4"), nothing, del(b))
	type q struct {
		rv     uint64
		want   string
		ok     bool
		oldest uint64
	}
	check := func(t *testing.T, applied uint64, qs []q) {
		t.Helper()
		for _, q := range qs {
			evs, gotApplied, ok, oldest := eventsSince(s, q.rv)
			if ok != q.ok || oldest != q.oldest || gotApplied != applied {
				t.Errorf("EventsSince(%d): ok=%v oldest=%d applied=%d, want ok=%v oldest=%d applied=%d",
					q.rv, ok, oldest, gotApplied, q.ok, q.oldest, applied)
			}
			if got := eventRVs(evs); got != q.want {
				t.Errorf("EventsSince(%d) = %q, want %q", q.rv, got, q.want)
			}
		}
	}
	check(t, 6, []q{
		{0, "A1 A2 M4 D6", true, 0},
		{1, "A2 M4 D6", true, 0},
		{2, "M4 D6", true, 0},
		{3, "M4 D6", true, 0},
		{5, "D6", true, 0},
		{6, "", true, 0},
		{100, "", true, 0},
	})

	// Events at 7..12 overflow the ring of 8: 1 and 2 are dropped.
	apply(s, 7, put(b, "7"), put(a, "8"), put(b, "9"), put(a, "10"), put(b, "11"), put(a, "12"))
	apply(s, 13, nothing)
	check(t, 13, []q{
		{0, "", false, 2},
		{1, "", false, 2},
		{2, "M4 D6 A7 M8 M9 M10 M11 M12", true, 2},
		{3, "M4 D6 A7 M8 M9 M10 M11 M12", true, 2},
		{4, "D6 A7 M8 M9 M10 M11 M12", true, 2},
		{11, "M12", true, 2},
		{12, "", true, 2},
		{13, "", true, 2},
	})

	// One more event drops 4: resuming from 2 or 3 would miss it.
	apply(s, 14, del(a))
	check(t, 14, []q{
		{2, "", false, 4},
		{3, "", false, 4},
		{4, "D6 A7 M8 M9 M10 M11 M12 D14", true, 4},
		{5, "D6 A7 M8 M9 M10 M11 M12 D14", true, 4},
		{13, "D14", true, 4},
	})

	// Event contents.
	evs, _, _, _ := eventsSince(s, 13)
	e := evs[0]
	if e.Type != Deleted || e.Object.RV != 14 || e.Prior == nil || e.Prev().RV != 12 || e.At != 14 || string(e.Object.Data()) != "12" {
		t.Fatalf("delete event %+v (object %+v, prev %+v)", e, e.Object, e.Prev())
	}
	evs, _, _, _ = eventsSince(s, 6)
	if e := evs[0]; e.Type != Added || e.Prior != nil || e.Object.RV != 7 {
		t.Fatalf("add event %+v", e)
	}
	if e := evs[1]; e.Type != Modified || e.Prior == nil || e.Prev().RV != 4 || e.Object.RV != 8 {
		t.Fatalf("modify event %+v", e)
	}
}

// TestHistoryRing checks the ring against a plain slice over many wraps
// and batch sizes.
func TestHistoryRing(t *testing.T) {
	for _, capacity := range []int{1, 2, 3, 8} {
		for _, batch := range []int{1, 2, 3, 5, 9} {
			t.Run(fmt.Sprintf("cap=%d/batch=%d", capacity, batch), func(t *testing.T) {
				h := newHistory(capacity, 0)
				var all []Event
				rv := uint64(0)
				for round := 0; round < 20; round++ {
					var evs []Event
					for i := 0; i < batch; i++ {
						rv += uint64(1 + (round+i)%3) // gaps of 0..2 indexes
						evs = append(evs, Event{Type: Modified, RV: rv})
					}
					h.append(evs)
					all = append(all, evs...)
					kept := all[max(0, len(all)-capacity):]
					var wantDropped uint64
					if len(all) > capacity {
						wantDropped = all[len(all)-capacity-1].RV
					}
					if h.dropped != wantDropped {
						t.Fatalf("round %d: dropped %d, want %d", round, h.dropped, wantDropped)
					}
					if got, want := eventRVs(h.all()), eventRVs(kept); got != want {
						t.Fatalf("round %d: all() = %q, want %q", round, got, want)
					}
					for from := uint64(0); from <= rv+1; from++ {
						var want []Event
						for _, e := range kept {
							if e.RV > from {
								want = append(want, e)
							}
						}
						if got := eventRVs(h.since(from)); got != eventRVs(want) {
							t.Fatalf("round %d: since(%d) = %q, want %q", round, from, got, eventRVs(want))
						}
					}
				}
			})
		}
	}
}

// TestHistoryAge: with HistoryAge set, events appended more than that
// before the newest event (by their At) leave the history too.
func TestHistoryAge(t *testing.T) {
	s := New(Config{HistoryEvents: 8, HistoryAge: 10, ListSnapshots: 4})
	commit := func(idx uint64, at int64) {
		tx := s.Begin()
		tx.Put(obj(key("ns", fmt.Sprint(idx)), idx, ""), nil, at)
		tx.Step(idx)
		tx.Commit(idx)
	}
	for idx := uint64(1); idx <= 5; idx++ {
		commit(idx, int64(100+idx))
	}
	if evs, _, ok, oldest := eventsSince(s, 0); !ok || oldest != 0 || eventRVs(evs) != "A1 A2 A3 A4 A5" {
		t.Fatalf("within the age: %q ok=%v oldest=%d", eventRVs(evs), ok, oldest)
	}
	commit(6, 113) // 101 and 102 are now more than 10 older
	if evs, _, ok, oldest := eventsSince(s, 2); !ok || oldest != 2 || eventRVs(evs) != "A3 A4 A5 A6" {
		t.Fatalf("after aging: %q ok=%v oldest=%d", eventRVs(evs), ok, oldest)
	}
	if _, _, ok, _ := eventsSince(s, 1); ok {
		t.Fatal("resume from 1 allowed after event 2 aged out")
	}
	commit(7, 1000) // everything else is old; the newest event stays
	if evs, _, ok, oldest := eventsSince(s, 6); !ok || oldest != 6 || eventRVs(evs) != "A7" {
		t.Fatalf("after a long gap: %q ok=%v oldest=%d", eventRVs(evs), ok, oldest)
	}
	// The count bound still holds with a long age.
	s = New(Config{HistoryEvents: 2, HistoryAge: time.Hour, ListSnapshots: 4})
	for idx := uint64(1); idx <= 3; idx++ {
		commit(idx, int64(idx))
	}
	if evs, _, _, oldest := eventsSince(s, 1); oldest != 1 || eventRVs(evs) != "A2 A3" {
		t.Fatalf("count bound: %q oldest=%d", eventRVs(evs), oldest)
	}
}

// waitApplied calls WaitApplied and fails the test if it has not returned
// within waitLimit.
func waitApplied(t *testing.T, s *Store, ctx context.Context, idx uint64) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.WaitApplied(ctx, idx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("WaitApplied(%d) still blocked after %v", idx, waitLimit)
		return nil
	}
}

func TestWaitApplied(t *testing.T) {
	t.Run("already applied", func(t *testing.T) {
		s := New(smallConfig)
		apply(s, 1, nothing, nothing)
		for _, idx := range []uint64{0, 1, 2} {
			if err := waitApplied(t, s, context.Background(), idx); err != nil {
				t.Fatalf("WaitApplied(%d) = %v", idx, err)
			}
		}
		// A done context does not matter when the index is reached.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := waitApplied(t, s, ctx, 2); err != nil {
			t.Fatalf("WaitApplied with cancelled context = %v", err)
		}
	})

	t.Run("wakes on commit", func(t *testing.T) {
		s := New(smallConfig)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.WaitApplied(ctx, 3) }()
		apply(s, 1, put(key("ns", "a"), "1"))
		apply(s, 2, nothing)
		select {
		case err := <-done:
			t.Fatalf("WaitApplied(3) returned %v at applied index 2", err)
		default:
		}
		// A batch ending with an entry that changed nothing still wakes.
		apply(s, 3, nothing)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("WaitApplied = %v", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("WaitApplied not woken by the commit of index 3")
		}
	})

	t.Run("wakes on commit past the index", func(t *testing.T) {
		s := New(smallConfig)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		const waiters = 10
		done := make(chan error, waiters)
		for i := 0; i < waiters; i++ {
			go func() { done <- s.WaitApplied(ctx, uint64(1+i%3)) }()
		}
		apply(s, 1, nothing, put(key("ns", "a"), "1"), nothing, nothing)
		for i := 0; i < waiters; i++ {
			if err := <-done; err != nil {
				t.Fatalf("waiter: %v", err)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		s := New(smallConfig)
		apply(s, 1, nothing)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.WaitApplied(ctx, 5) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("WaitApplied = %v, want context.Canceled", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("WaitApplied ignored cancellation")
		}
	})

	t.Run("deadline", func(t *testing.T) {
		s := New(smallConfig)
		ctx, cancel := context.WithDeadline(context.Background(), time.Now())
		defer cancel()
		if err := waitApplied(t, s, ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitApplied = %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("wakes on replace", func(t *testing.T) {
		s := New(smallConfig)
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.WaitApplied(ctx, 40) }()
		s.Replace(nil, nil, 0, 50)
		if err := <-done; err != nil {
			t.Fatalf("WaitApplied = %v", err)
		}
	})

	t.Run("changed channel", func(t *testing.T) {
		s := New(smallConfig)
		ch := s.Changed()
		if s.Changed() != ch {
			t.Fatal("Changed returned a new channel without a commit")
		}
		select {
		case <-ch:
			t.Fatal("closed before any commit")
		default:
		}
		apply(s, 1, nothing)
		select {
		case <-ch:
		default:
			t.Fatal("not closed by a commit")
		}
		ch2 := s.Changed()
		if ch2 == ch {
			t.Fatal("same channel after a commit")
		}
		s.Replace(nil, nil, 0, 1)
		select {
		case <-ch2:
		default:
			t.Fatal("not closed by a replace")
		}
	})
}

func TestReplace(t *testing.T) {
	s := New(smallConfig)
	a, b := key("ns", "a"), key("ns", "b")
	apply(s, 1, put(a, "a1"), put(b, "b2"), put(a, "a3"))

	if g := s.Generation(); g != 0 {
		t.Fatalf("generation %d before any replace", g)
	}
	if g := s.Snapshot().Generation; g != 0 {
		t.Fatalf("snapshot generation %d before any replace", g)
	}
	oldView := s.Snapshot()

	n1, n2 := obj(key("x", "n1"), 90, "n1"), obj(key("x", "n2"), 95, "n2")
	events := []Event{
		{Type: Added, RV: 90, Object: n1, At: 90},
		{Type: Deleted, RV: 93, Object: obj(a, 93, "gone"), Prior: obj(a, 91, "gone"), At: 93},
		{Type: Added, RV: 95, Object: n2, At: 95},
	}
	s.Replace([]*Object{n2, n1}, events, 88, 100)

	if s.AppliedIndex() != 100 {
		t.Fatalf("applied %d", s.AppliedIndex())
	}
	sn := s.Snapshot()
	if sn.Index != 100 || contents(sn, "leases", "", nil) != "x/n1@90=n1 x/n2@95=n2" {
		t.Fatalf("state after replace: index %d %q", sn.Index, contents(sn, "leases", "", nil))
	}
	if sn.Get(a) != nil || sn.Get(b) != nil {
		t.Fatal("old objects survived the replace")
	}
	if s.Generation() != 1 || sn.Generation != 1 || s.EventsSince(0).Generation != 1 {
		t.Fatalf("generation %d, snapshot %d, events %d after a replace, want 1", s.Generation(), sn.Generation, s.EventsSince(0).Generation)
	}
	if at, ok := s.SnapshotAt(100); !ok || at.Generation != 1 {
		t.Fatalf("SnapshotAt(100) ok=%v", ok)
	}
	if oldView.Generation != 0 || contents(oldView, "leases", "", nil) != "ns/a@3=a3 ns/b@2=b2" {
		t.Fatalf("a view taken before the replace changed: generation %d %q", oldView.Generation, contents(oldView, "leases", "", nil))
	}
	if evs, applied, ok, oldest := eventsSince(s, 88); !ok || oldest != 88 || applied != 100 || eventRVs(evs) != "A90 D93 A95" {
		t.Fatalf("EventsSince(88) = %q ok=%v oldest=%d applied=%d", eventRVs(evs), ok, oldest, applied)
	}
	if _, _, ok, oldest := eventsSince(s, 3); ok || oldest != 88 {
		t.Fatalf("EventsSince(3) ok=%v oldest=%d: old history survived the replace", ok, oldest)
	}
	objs, evs, dropped, applied := s.Dump()
	if len(objs) != 2 || objs[0] != n1 || objs[1] != n2 || evs.Len() != 3 || dropped != 88 || applied != 100 {
		t.Fatalf("Dump: %d objects %d events dropped %d applied %d", len(objs), evs.Len(), dropped, applied)
	}

	// The store goes on from the replaced state; commits keep the
	// generation.
	apply(s, 101, put(a, "a101"))
	if s.Generation() != 1 || s.Snapshot().Generation != 1 {
		t.Fatalf("generation %d after a commit", s.Generation())
	}
	if evs, _, ok, _ := eventsSince(s, 95); !ok || eventRVs(evs) != "A101" {
		t.Fatalf("EventsSince(95) = %q", eventRVs(evs))
	}

	// More events than the ring holds: the oldest are dropped.
	var many []Event
	for i := uint64(1); i <= 10; i++ {
		many = append(many, Event{Type: Added, RV: i * 2, Object: obj(key("y", fmt.Sprint(i)), i*2, "")})
	}
	s.Replace(nil, many, 0, 20)
	if s.Generation() != 2 {
		t.Fatalf("generation %d after two replaces", s.Generation())
	}
	if evs, _, ok, oldest := eventsSince(s, 4); !ok || oldest != 4 || eventRVs(evs) != "A6 A8 A10 A12 A14 A16 A18 A20" {
		t.Fatalf("EventsSince(4) = %q ok=%v oldest=%d", eventRVs(evs), ok, oldest)
	}
	if _, _, ok, _ := eventsSince(s, 3); ok {
		t.Fatal("EventsSince(3) ok after the ring dropped 4")
	}
}

// TestReplaceIsAtomic runs readers against a store flipping between two
// states: every read sees one state whole, never parts of both.
func TestReplaceIsAtomic(t *testing.T) {
	s := New(smallConfig)
	type world struct {
		objs    []*Object
		events  []Event
		dropped uint64
		applied uint64
	}
	mk := func(ns string, base uint64) world {
		var w world
		for i := uint64(1); i <= 3; i++ {
			o := obj(key(ns, fmt.Sprint(i)), base+i, ns)
			w.objs = append(w.objs, o)
			w.events = append(w.events, Event{Type: Added, RV: o.RV, Object: o, At: int64(o.RV)})
		}
		w.dropped, w.applied = base, base+5
		return w
	}
	worlds := []world{mk("one", 10), mk("two", 1000)}
	byApplied := map[uint64]world{}
	for _, w := range worlds {
		byApplied[w.applied] = w
	}
	s.Replace(worlds[0].objs, worlds[0].events, worlds[0].dropped, worlds[0].applied)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Snapshot: index and contents belong together.
				sn := s.Snapshot()
				w, ok := byApplied[sn.Index]
				if !ok {
					errs <- fmt.Errorf("snapshot index %d", sn.Index)
					return
				}
				if got := sn.Count("leases"); got != 3 || sn.Get(w.objs[0].Key()) != w.objs[0] {
					errs <- fmt.Errorf("snapshot at %d shows another state (%d objects)", sn.Index, got)
					return
				}
				// History: events, applied and oldest belong together.
				evs, applied, ok, oldest := eventsSince(s, 0)
				w, known := byApplied[applied]
				if !known || ok || oldest != w.dropped {
					errs <- fmt.Errorf("EventsSince(0): applied %d ok %v oldest %d", applied, ok, oldest)
					return
				}
				// The state may flip between the calls; the answer must
				// still come from one state.
				evs, applied, ok, _ = eventsSince(s, oldest)
				w = byApplied[applied]
				var want []Event
				for _, e := range w.events {
					if e.RV > oldest {
						want = append(want, e)
					}
				}
				if ok != (oldest >= w.dropped) || (ok && (len(evs) != len(want) || len(evs) > 0 && evs[0].Object != want[0].Object)) {
					errs <- fmt.Errorf("EventsSince(%d) at applied %d: ok=%v, %d events", oldest, applied, ok, len(evs))
					return
				}
				// Dump: all four values from one state.
				objs, history, dropped, dapplied := s.Dump()
				devs := history.Events()
				w = byApplied[dapplied]
				if len(objs) != 3 || objs[0] != w.objs[0] || len(devs) != 3 || devs[2].Object != w.objs[2] || dropped != w.dropped {
					errs <- fmt.Errorf("Dump at applied %d mixes states", dapplied)
					return
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		w := worlds[(i+1)%2]
		s.Replace(w.objs, w.events, w.dropped, w.applied)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConcurrentReaders reads while the FSM goroutine commits; run with
// -race. Entry i creates object i, so a view at index i holds i objects.
func TestConcurrentReaders(t *testing.T) {
	s := New(Config{HistoryEvents: 8, ListSnapshots: 4})
	const n = 300
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sn := s.Snapshot()
				if c := sn.Count("leases"); uint64(c) != sn.Index {
					errs <- fmt.Errorf("view at %d holds %d objects", sn.Index, c)
					return
				}
				if idx := sn.Index; idx > 2 {
					if old, ok := s.SnapshotAt(idx - 2); ok && uint64(old.Count("leases")) != idx-2 {
						errs <- fmt.Errorf("view at %d holds %d objects", idx-2, old.Count("leases"))
						return
					}
				}
				_, _, _, oldest := eventsSince(s, 0)
				evs, applied, ok, _ := eventsSince(s, oldest)
				if ok && len(evs) > 0 && evs[len(evs)-1].RV != applied {
					errs <- fmt.Errorf("newest event %d at applied index %d", evs[len(evs)-1].RV, applied)
					return
				}
			}
		}()
	}
	for i := uint64(1); i <= n; {
		size := 1 + i%4
		var ops []op
		for j := uint64(0); j < size; j++ {
			ops = append(ops, put(key("ns", fmt.Sprint(i+j)), "d"))
		}
		apply(s, i, ops...)
		i += size
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestErrors(t *testing.T) {
	e := &Error{Code: Conflict, Key: key("ns", "x"), RV: 7, UID: "u"}
	if got, want := e.Error(), "leases/ns/x: resource version conflict (stored rv 7)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if Code(fmt.Errorf("wrapped: %w", e)) != Conflict {
		t.Fatal("Code does not unwrap")
	}
	if Code(errors.New("other")) != 0 || Code(nil) != 0 {
		t.Fatal("Code of a foreign error")
	}
	for c, want := range map[ErrorCode]string{NotFound: "not found", AlreadyExists: "already exists", Conflict: "resource version conflict", UIDMismatch: "uid mismatch", 9: "code 9"} {
		if c.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(c), c.String(), want)
		}
	}
}

func TestNewDefaults(t *testing.T) {
	s := New(Config{})
	d := DefaultConfig()
	if len(s.history.buf) != d.HistoryEvents || s.snaps.n != d.ListSnapshots {
		t.Fatalf("history %d, snapshots %d; want defaults %+v", len(s.history.buf), s.snaps.n, d)
	}
	s = New(Config{HistoryEvents: 3})
	if len(s.history.buf) != 3 || s.snaps.n != d.ListSnapshots {
		t.Fatalf("history %d, snapshots %d", len(s.history.buf), s.snaps.n)
	}
}

// Every version of every object in the history is an Object: it must stay
// within the 80-byte size class (64 before etcd's create revision and
// version: 1.6 MB more per 100,000 versions).
func TestObjectSize(t *testing.T) {
	if size := unsafe.Sizeof(Object{}); size > 80 {
		t.Errorf("Object is %d bytes, want at most 80", size)
	}
}

// testPrior is a previous state held as its RV and data.
type testPrior struct {
	rv   uint64
	data string
}

func (p testPrior) Version(next *Object) *Object { return obj(next.Key(), p.rv, p.data) }

// TestHistoryCompactsPriors: an event holds its previous state as the
// object of the event that wrote it while that event is in the history,
// and as what PriorOf makes of it from when that event leaves, or at once
// when it has left already; after a Replace too.
func TestHistoryCompactsPriors(t *testing.T) {
	s := New(Config{HistoryEvents: 3})
	s.SetPriorOf(func(next, prev *Object) Prior { return testPrior{prev.RV, string(prev.Data())} })
	s.history.recent = 3 // every event keeps its object (TestHistoryCompactsObjects)
	a, b := key("ns", "a"), key("ns", "b")
	held := func(e Event) string {
		switch p := e.Prior.(type) {
		case nil:
			return "-"
		case *Object:
			return fmt.Sprintf("obj%d", p.RV)
		case testPrior:
			return fmt.Sprintf("prior%d=%s", p.rv, p.data)
		}
		return fmt.Sprintf("%T", e.Prior)
	}
	check := func(what, want string) {
		t.Helper()
		since := s.EventsSince(0)
		if since.Expired {
			since = s.EventsSince(since.Oldest)
		}
		var got []string
		for _, e := range since.Events {
			got = append(got, fmt.Sprintf("%d:%s", e.RV, held(e)))
			if p, ok := e.Prior.(*Object); ok {
				if i, found := s.history.index(p.RV); !found || s.history.at(i).Object != p {
					t.Errorf("%s: event %d holds object %d, which no event in the history holds", what, e.RV, p.RV)
				}
			}
		}
		if g := strings.Join(got, " "); g != want {
			t.Fatalf("%s: history %q, want %q", what, g, want)
		}
	}

	apply(s, 1, put(a, "a1"), put(a, "a2"))
	check("a written twice", "1:- 2:obj1")
	apply(s, 3, put(b, "b3"), put(b, "b4"))
	check("1 left", "2:prior1=a1 3:- 4:obj3")
	apply(s, 5, del(a))
	check("2 left before a's delete joined", "3:- 4:obj3 5:prior2=a2")
	apply(s, 6, put(b, "b6"))
	check("3 left", "4:prior3=b3 5:prior2=a2 6:obj4")
	if p := s.EventsSince(3).Events[0].Prev(); p.RV != 3 || string(p.Data()) != "b3" {
		t.Fatalf("event 4's previous state rebuilt as %d %q", p.RV, p.Data())
	}

	// Replace links and compacts the same way.
	x1, x2 := obj(a, 11, "x1"), obj(a, 12, "x2")
	y0, y1 := obj(b, 9, "y0"), obj(b, 13, "y1")
	s.Replace([]*Object{x2, y1}, []Event{
		{Type: Added, RV: 11, Object: x1, At: 11},
		{Type: Modified, RV: 12, Object: x2, Prior: x1, At: 12},
		{Type: Modified, RV: 13, Object: y1, Prior: y0, At: 13},
	}, 10, 13)
	check("replaced", "11:- 12:obj11 13:prior9=y0")
}

// TestHistoryCompactsObjects: once an event is past the recent ones and a
// newer event replaced its object, the newer event holds that version as
// what PriorOf makes of it and the older event holds none; every reader
// (watch events, exact-version views, a snapshot's dump, a Replace from it)
// gets it back whole, as one *Object shared by the two events.
func TestHistoryCompactsObjects(t *testing.T) {
	s := New(Config{HistoryEvents: 8})
	s.SetPriorOf(func(next, prev *Object) Prior { return testPrior{prev.RV, string(prev.Data())} })
	s.history.recent = 3
	a, b := key("ns", "a"), key("ns", "b")
	// held lists the events as the history holds them: "-" for an event
	// without its object.
	held := func() string {
		s.mu.RLock()
		defer s.mu.RUnlock()
		var out []string
		for i := range s.history.n {
			e := s.history.at(i)
			o := "-"
			if e.Object != nil {
				o = string(e.Object.Data())
			}
			p := "-"
			switch pr := e.Prior.(type) {
			case *Object:
				p = fmt.Sprintf("obj%d", pr.RV)
			case testPrior:
				p = fmt.Sprintf("prior%d", pr.rv)
			}
			out = append(out, fmt.Sprintf("%d:%s:%s", e.RV, o, p))
		}
		return strings.Join(out, " ")
	}
	// read checks what readers get: every event with its object, and the
	// previous state of each the very object of the event that wrote it.
	read := func(what string, evs []Event) string {
		t.Helper()
		byRV := map[uint64]*Object{}
		var out []string
		for _, e := range evs {
			if e.Object == nil || e.Object.RV != e.RV {
				t.Fatalf("%s: event %d read with object %v", what, e.RV, e.Object)
			}
			byRV[e.RV] = e.Object
			if p, ok := e.Prior.(*Object); ok && byRV[p.RV] != nil && byRV[p.RV] != p {
				t.Fatalf("%s: event %d's previous state is not event %d's object", what, e.RV, p.RV)
			}
			out = append(out, fmt.Sprintf("%d=%s", e.RV, e.Object.Data()))
		}
		return strings.Join(out, " ")
	}

	apply(s, 1, put(a, "a1"), put(a, "a2"), put(b, "b3"))
	if got, want := held(), "1:a1:- 2:a2:obj1 3:b3:-"; got != want {
		t.Fatalf("event 1 among the recent ones: %q, want %q", got, want)
	}
	apply(s, 4, put(b, "b4"))
	if got, want := held(), "1:-:- 2:a2:prior1 3:b3:- 4:b4:obj3"; got != want {
		t.Fatalf("event 1 past the recent ones: %q, want %q", got, want)
	}
	apply(s, 5, put(a, "a5"))
	if got, want := held(), "1:-:- 2:-:prior1 3:b3:- 4:b4:obj3 5:a5:prior2"; got != want {
		t.Fatalf("event 2 replaced when past the recent ones: %q, want %q", got, want)
	}
	apply(s, 6, del(b))
	if got, want := held(), "1:-:- 2:-:prior1 3:-:- 4:b4:prior3 5:a5:prior2 6:b4:obj4"; got != want {
		t.Fatalf("event 3 past the recent ones: %q, want %q", got, want)
	}
	all := "1=a1 2=a2 3=b3 4=b4 5=a5 6=b4"
	if got := read("EventsSince(0)", s.EventsSince(0).Events); got != all {
		t.Fatalf("EventsSince(0): %q, want %q", got, all)
	}
	if got := read("EventsSince(2)", s.EventsSince(2).Events); got != "3=b3 4=b4 5=a5 6=b4" {
		t.Fatalf("EventsSince(2): %q", got)
	}
	for idx, want := range map[uint64]string{1: "ns/a@1=a1", 2: "ns/a@2=a2", 3: "ns/a@2=a2 ns/b@3=b3", 5: "ns/a@5=a5 ns/b@4=b4", 6: "ns/a@5=a5"} {
		sn, ok := s.SnapshotAt(idx)
		if !ok {
			t.Fatalf("no view at %d", idx)
		}
		if got := contents(sn, "leases", "", nil); got != want {
			t.Fatalf("view at %d: %q, want %q", idx, got, want)
		}
	}

	objs, history, dropped, applied := s.Dump()
	events := history.Events()
	if got := read("Dump", events); got != all {
		t.Fatalf("Dump: %q, want %q", got, all)
	}
	_, history, _, _ = s.Dump()
	var newest []Event
	if err := history.NewestFirst(func(e Event) error { newest = append(newest, e); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(newest)
	if got := read("Dump newest first", newest); got != all {
		t.Fatalf("Dump newest first, reversed: %q, want %q", got, all)
	}
	before := held()
	s.Replace(objs, events, dropped, applied)
	if got := held(); got != before {
		t.Fatalf("after Replace from the dump: %q, want %q as before", got, before)
	}
	if got := read("after Replace", s.EventsSince(0).Events); got != all {
		t.Fatalf("after Replace: %q, want %q", got, all)
	}

	// Events leaving the ring leave the rest readable.
	apply(s, 7, put(a, "a7"), put(a, "a8"), put(a, "a9"))
	if got := read("after the ring turned", s.EventsSince(s.EventsSince(0).Oldest).Events); got != "2=a2 3=b3 4=b4 5=a5 6=b4 7=a7 8=a8 9=a9" {
		t.Fatalf("after the ring turned: %q", got)
	}
}

// TestNewestFirstReleasesRebuiltVersions: walking a dump newest first, a
// version rebuilt for a compacted event can be collected once the event
// that wrote it has been given, before the walk ends, so that a snapshot
// does not hold every rebuilt version at once.
func TestNewestFirstReleasesRebuiltVersions(t *testing.T) {
	const keys, rounds = 50, 40
	s := New(Config{HistoryEvents: keys * rounds})
	s.SetPriorOf(func(next, prev *Object) Prior { return testPrior{prev.RV, string(prev.Data())} })
	s.history.recent = keys
	for r := range rounds {
		ops := make([]op, keys)
		for k := range ops {
			ops[k] = put(key("ns", fmt.Sprint(k)), fmt.Sprintf("%d-%d", k, r))
		}
		apply(s, uint64(1+r*keys), ops...)
	}
	held := map[*Object]bool{}
	s.mu.RLock()
	for i := range s.history.n {
		held[s.history.at(i).Object] = true
	}
	s.mu.RUnlock()

	_, history, _, _ := s.Dump()
	total := history.Len()
	var given, rebuilt int
	var collected atomic.Int64
	err := history.NewestFirst(func(e Event) error {
		given++
		if !held[e.Object] {
			rebuilt++
			runtime.SetFinalizer(e.Object, func(*Object) { collected.Add(1) })
		}
		if given < total {
			return nil
		}
		// The oldest event: every rebuilt version but the one each key
		// still waits to give is unreachable by now.
		for range 50 {
			if collected.Load() >= int64(rebuilt-keys) {
				break
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt < keys*(rounds-2) || collected.Load() < int64(rebuilt-keys) {
		t.Fatalf("%d versions rebuilt, %d collected before the walk ended", rebuilt, collected.Load())
	}
}

// TestChangedAt: a resource's number moves with a commit that changes one
// of its objects (a deletion too) and with a replace, never with a change
// of another resource.
func TestChangedAt(t *testing.T) {
	s := New(smallConfig)
	role := Key{Resource: "roles", Namespace: "ns", Name: "r"}
	if got := s.ChangedAt("roles"); got != 0 {
		t.Fatalf("empty store: %d", got)
	}
	apply(s, 1, put(role, "r1"))
	apply(s, 2, put(key("ns", "a"), "a2"), put(key("ns", "b"), "b3"))
	if got, want := s.ChangedAt("roles"), uint64(1); got != want {
		t.Errorf("roles after a change of leases: %d, want %d", got, want)
	}
	if got, want := s.ChangedAt("leases"), uint64(3); got != want {
		t.Errorf("leases: %d, want %d", got, want)
	}
	apply(s, 4, nothing, del(role))
	if got, want := s.ChangedAt("roles"), uint64(5); got != want {
		t.Errorf("roles after a deletion: %d, want %d", got, want)
	}
	if got, want := s.ChangedAt("leases", "roles", "never"), uint64(5); got != want {
		t.Errorf("leases, roles and never: %d, want the latest, %d", got, want)
	}
	if got, want := s.ChangedAt("never", "leases"), uint64(3); got != want {
		t.Errorf("never and leases: %d, want %d", got, want)
	}
	s.Replace(nil, nil, 0, 9)
	for _, r := range []string{"roles", "leases", "never"} {
		if got, want := s.ChangedAt(r), uint64(9); got != want {
			t.Errorf("%s after a replace at 9: %d, want %d", r, got, want)
		}
	}
}
