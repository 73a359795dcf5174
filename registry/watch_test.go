package registry_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/registry"
)

// wtTimeout bounds every single wait in the watch tests.
const wtTimeout = 15 * time.Second

func wtCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wtTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wtEvent is what the watch tests compare of an event.
type wtEvent struct {
	Type      watch.EventType
	RV        uint64
	Namespace string
	Name      string
	Holder    string
	App       string // the "app" label
}

func (e wtEvent) String() string {
	return fmt.Sprintf("%s@%d %s/%s holder=%s app=%s", e.Type, e.RV, e.Namespace, e.Name, e.Holder, e.App)
}

func wtDescribe(t *testing.T, ev watch.Event) wtEvent {
	t.Helper()
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		t.Fatalf("event %s: %v", ev.Type, err)
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("event %s %s: resourceVersion %q: %v", ev.Type, m.GetName(), m.GetResourceVersion(), err)
	}
	out := wtEvent{Type: ev.Type, RV: rv, Namespace: m.GetNamespace(), Name: m.GetName(), App: m.GetLabels()["app"]}
	if l, ok := ev.Object.(*coordinationv1.Lease); ok && l.Spec.HolderIdentity != nil {
		out.Holder = *l.Spec.HolderIdentity
	}
	return out
}

func wtDescribeAll(t *testing.T, evs []watch.Event) []wtEvent {
	t.Helper()
	out := make([]wtEvent, len(evs))
	for i, ev := range evs {
		out[i] = wtDescribe(t, ev)
	}
	return out
}

// wtLease is a lease as the model keeps it.
type wtLease struct {
	RV     uint64
	Holder string
	App    string
}

// wtWriter writes leases through the leader's registry and records every
// event the writes must produce, in order, and the state after each write.
type wtWriter struct {
	t      *testing.T
	c      *testcluster.Cluster
	events []wtEvent
	model  map[string]wtLease // "ns/name" -> lease
	states map[uint64]map[string]wtLease
}

func wtNewWriter(t *testing.T, c *testcluster.Cluster) *wtWriter {
	return &wtWriter{t: t, c: c, model: map[string]wtLease{}, states: map[uint64]map[string]wtLease{}}
}

// write runs op on the leader's registry. A refusal for want of a leader
// (503: nothing was proposed) is retried on the leader of the moment, so
// that writes right after a leader change do not fail the test.
func (w *wtWriter) write(what string, op func(*registry.Store) (runtime.Object, error)) runtime.Object {
	w.t.Helper()
	deadline := time.Now().Add(wtTimeout)
	for {
		var out runtime.Object
		var err error
		if node := w.c.Nodes[w.c.Leader()].Raft(); node != nil {
			out, err = op(registry.New(node))
		} else {
			err = apierrors.NewServiceUnavailable("leader stopped")
		}
		if err == nil {
			return out
		}
		if !apierrors.IsServiceUnavailable(err) || time.Now().After(deadline) {
			w.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wtNewLease(ns, name, holder, app string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](10)},
	}
	if app != "" {
		l.Labels = map[string]string{"app": app}
	}
	return l
}

func wtRV(t *testing.T, obj runtime.Object) uint64 {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.GetResourceVersion(), err)
	}
	return rv
}

func (w *wtWriter) record(typ watch.EventType, ns, name string, l wtLease) uint64 {
	w.events = append(w.events, wtEvent{Type: typ, RV: l.RV, Namespace: ns, Name: name, Holder: l.Holder, App: l.App})
	if typ == watch.Deleted {
		delete(w.model, ns+"/"+name)
	} else {
		w.model[ns+"/"+name] = l
	}
	w.states[l.RV] = maps.Clone(w.model)
	return l.RV
}

func (w *wtWriter) create(ns, name, holder, app string) uint64 {
	w.t.Helper()
	out := w.write("create "+ns+"/"+name, func(s *registry.Store) (runtime.Object, error) {
		return s.Create(wtCtx(w.t), registry.Leases, wtNewLease(ns, name, holder, app), registry.WriteOptions{})
	})
	return w.record(watch.Added, ns, name, wtLease{RV: wtRV(w.t, out), Holder: holder, App: app})
}

func (w *wtWriter) update(ns, name, holder, app string) uint64 {
	w.t.Helper()
	cur, ok := w.model[ns+"/"+name]
	if !ok {
		w.t.Fatalf("update of %s/%s, which the test has not created", ns, name)
	}
	out := w.write("update "+ns+"/"+name, func(s *registry.Store) (runtime.Object, error) {
		l := wtNewLease(ns, name, holder, app)
		l.ResourceVersion = strconv.FormatUint(cur.RV, 10)
		out, _, err := s.Update(wtCtx(w.t), registry.Leases, ns, name, l, registry.WriteOptions{})
		return out, err
	})
	rv := wtRV(w.t, out)
	if rv <= cur.RV {
		w.t.Fatalf("update %s/%s changed nothing (rv %d)", ns, name, rv)
	}
	return w.record(watch.Modified, ns, name, wtLease{RV: rv, Holder: holder, App: app})
}

func (w *wtWriter) delete(ns, name string) uint64 {
	w.t.Helper()
	cur, ok := w.model[ns+"/"+name]
	if !ok {
		w.t.Fatalf("delete of %s/%s, which the test has not created", ns, name)
	}
	out := w.write("delete "+ns+"/"+name, func(s *registry.Store) (runtime.Object, error) {
		return s.Delete(wtCtx(w.t), registry.Leases, ns, name, registry.DeleteOptions{})
	})
	cur.RV = wtRV(w.t, out)
	return w.record(watch.Deleted, ns, name, cur)
}

// last is the RV of the newest write.
func (w *wtWriter) last() uint64 {
	if len(w.events) == 0 {
		return 0
	}
	return w.events[len(w.events)-1].RV
}

// after returns the recorded events with RV > rv that pass keep.
func (w *wtWriter) after(rv uint64, keep func(wtEvent) bool) []wtEvent {
	var out []wtEvent
	for _, e := range w.events {
		if e.RV > rv && (keep == nil || keep(e)) {
			out = append(out, e)
		}
	}
	return out
}

// stateAt is the model as it was at rv (after every write with RV <= rv).
func (w *wtWriter) stateAt(rv uint64) map[string]wtLease {
	var best uint64
	found := false
	for r := range w.states {
		if r <= rv && (!found || r > best) {
			best, found = r, true
		}
	}
	if !found {
		return map[string]wtLease{}
	}
	return w.states[best]
}

// mixedWorkload writes creates, updates and deletes over two namespaces.
func (w *wtWriter) mixedWorkload(prefix string, n int) {
	w.t.Helper()
	live := []string{}
	for i := 0; len(w.events) < n; i++ {
		ns := []string{"wt-a", "wt-b"}[i%2]
		switch {
		case i%5 == 4 && len(live) > 2:
			k := live[0]
			live = live[1:]
			ns, name, _ := strings.Cut(k, "/")
			w.delete(ns, name)
		case i%5 >= 2 && len(live) > 0:
			k := live[i%len(live)]
			ns, name, _ := strings.Cut(k, "/")
			w.update(ns, name, fmt.Sprintf("h%d", i), []string{"x", "y"}[i%2])
		default:
			name := fmt.Sprintf("%s%d", prefix, i)
			w.create(ns, name, fmt.Sprintf("h%d", i), []string{"x", "y"}[(i/3)%2])
			live = append(live, ns+"/"+name)
		}
	}
}

func wtWatchOpts(rv string) registry.WatchOptions {
	return registry.WatchOptions{ListOptions: registry.ListOptions{
		ReadOptions: registry.ReadOptions{ResourceVersion: rv},
		Label:       labels.Everything(),
		Field:       fields.Everything(),
	}}
}

// wtStore is a registry over member i.
func wtStore(c *testcluster.Cluster, i int) *registry.Store {
	return registry.New(c.Nodes[i].Raft())
}

// wtWaitApplied waits until member i has applied rv.
func wtWaitApplied(t *testing.T, c *testcluster.Cluster, i int, rv uint64) {
	t.Helper()
	if err := c.Nodes[i].Raft().State().WaitApplied(wtCtx(t), rv); err != nil {
		t.Fatalf("%s did not apply %d: %v", c.Nodes[i].Name, rv, err)
	}
}

// wtStart starts a watch, failing the test on an error.
func wtStart(t *testing.T, s *registry.Store, ns string, o registry.WatchOptions) *registry.Watcher {
	t.Helper()
	w, err := s.Watch(wtCtx(t), registry.Leases, ns, o)
	if err != nil {
		t.Fatalf("watch %q from %q: %v", ns, o.ResourceVersion, err)
	}
	return w
}

// wtCollect reads w until it has read everything up to until (its
// position reaches it). initial says the watch has initial events queued,
// which are read even when the position is already there. Events come back
// as Next returned them, batches flattened.
func wtCollect(t *testing.T, w *registry.Watcher, until uint64, initial bool) []watch.Event {
	t.Helper()
	ctx := wtCtx(t)
	var out []watch.Event
	for initial || w.Pos() < until {
		initial = false
		evs, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("watch ended at %d waiting for %d: %v", w.Pos(), until, err)
		}
		if ctx.Err() != nil {
			t.Fatalf("watch at %d did not reach %d within %v; got %v", w.Pos(), until, wtTimeout, wtDescribeAll(t, out))
		}
		out = append(out, plainEvents(evs)...)
	}
	return out
}

// wtQuiet checks that w has nothing more for a moment.
func wtQuiet(t *testing.T, w *registry.Watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	evs, err := w.Next(ctx)
	if err != nil || len(evs) > 0 {
		t.Fatalf("watch at %d has more: %v %v", w.Pos(), wtDescribeAll(t, plainEvents(evs)), err)
	}
}

// wtCheckStream checks the watch guarantees of one stream against the
// expected events: ordered (RVs strictly increase), unique, and exactly the
// expected sequence.
func wtCheckStream(t *testing.T, what string, got, want []wtEvent) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].RV <= got[i-1].RV {
			t.Errorf("%s: event %d (%v) is not after event %d (%v)", what, i, got[i], i-1, got[i-1])
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %d events %v\nwant %d events %v", what, len(got), got, len(want), want)
	}
}

// TestWatchFromResourceVersion: a watch from RV N returns exactly the
// events with RV > N, in order, without duplicates or gaps, on every node
// (leader and followers), from every start point — event RVs, indexes
// without events, the newest RV — and a watch resumed on another node from
// the last RV seen continues exactly where the first stopped.
func TestWatchFromResourceVersion(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	l := c.Leader()
	w := wtNewWriter(t, c)
	base := c.Nodes[l].Raft().State().AppliedIndex()
	w.mixedWorkload("a", 40)
	last := w.last()

	// The recorded writes are the whole history after base: compare with
	// the leader's own event history, the reference.
	since := c.Nodes[l].Raft().State().EventsSince(base)
	if since.Expired {
		t.Fatalf("history expired after %d writes", len(w.events))
	}
	var hist []wtEvent
	for _, e := range since.Events {
		typ := map[state.EventType]watch.EventType{state.Added: watch.Added, state.Modified: watch.Modified, state.Deleted: watch.Deleted}[e.Type]
		hist = append(hist, wtDescribe(t, watch.Event{Type: typ, Object: e.Object.Obj}))
	}
	wtCheckStream(t, "leader history", hist, w.events)

	starts := []uint64{base, w.events[0].RV, w.events[0].RV - 1, w.events[len(w.events)/2].RV, last - 1, last}
	for i := range c.Nodes {
		wtWaitApplied(t, c, i, last)
		s := wtStore(c, i)
		for _, rv := range starts {
			what := fmt.Sprintf("%s from %d", c.Nodes[i].Name, rv)
			wa := wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(rv, 10)))
			got := wtDescribeAll(t, wtCollect(t, wa, last, false))
			wtCheckStream(t, what, got, w.after(rv, nil))
			wtQuiet(t, wa)
		}
	}

	// Resumable: stop half way, resume on the next node from the last RV
	// received; the union is exactly the history.
	for i := range c.Nodes {
		mid := w.events[len(w.events)/3].RV
		first := wtStart(t, wtStore(c, i), "", wtWatchOpts(strconv.FormatUint(base, 10)))
		var got []wtEvent
		for len(got) == 0 || got[len(got)-1].RV < mid {
			evs, err := first.Next(wtCtx(t))
			if err != nil || len(evs) == 0 {
				t.Fatalf("first half: %v", err)
			}
			got = append(got, wtDescribeAll(t, plainEvents(evs))...)
		}
		resume := got[len(got)-1].RV
		j := (i + 1) % len(c.Nodes)
		second := wtStart(t, wtStore(c, j), "", wtWatchOpts(strconv.FormatUint(resume, 10)))
		got = append(got, wtDescribeAll(t, wtCollect(t, second, last, false))...)
		wtCheckStream(t, fmt.Sprintf("%s then %s from %d", c.Nodes[i].Name, c.Nodes[j].Name, resume), got, w.events)
	}

	// Events written while a watch is open arrive in order too; the watch
	// reports its position in bookmarks without ever going back.
	f := c.Follower()
	wa := wtStart(t, wtStore(c, f), "", wtWatchOpts(strconv.FormatUint(last, 10)))
	if b := wtDescribe(t, wa.Bookmark().Event); b.Type != watch.Bookmark || b.RV != last {
		t.Fatalf("bookmark before any event = %v, want BOOKMARK@%d", b, last)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.mixedWorkload("b", 100)
	}()
	var got []wtEvent
	ctx := wtCtx(t)
	for {
		evs, err := wa.Next(ctx)
		if err != nil || ctx.Err() != nil {
			t.Fatalf("live watch at %d: %v %v", wa.Pos(), err, ctx.Err())
		}
		got = append(got, wtDescribeAll(t, plainEvents(evs))...)
		if b := wtDescribe(t, wa.Bookmark().Event); b.RV < got[len(got)-1].RV {
			t.Fatalf("bookmark %d behind delivered event %v", b.RV, got[len(got)-1])
		}
		if len(got) >= 20 {
			break
		}
	}
	<-done
	got = append(got, wtDescribeAll(t, wtCollect(t, wa, w.last(), false))...)
	wtCheckStream(t, "live watch", got, w.after(last, nil))
	wtQuiet(t, wa)
}

// TestWatchInitialEvents: a watch from RV unset or "0" starts with an
// ADDED event per object of a snapshot, in key order, then the changes
// after it; sendInitialEvents with InitialEventsEnd puts the annotated
// bookmark at the snapshot's RV between the two.
func TestWatchInitialEvents(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := wtNewWriter(t, c)
	w.mixedWorkload("i", 20)
	f := c.Follower()

	type mode struct {
		name string
		opts registry.WatchOptions
		node int
	}
	end := wtWatchOpts("")
	end.SendInitialEvents, end.InitialEventsEnd = ptr.To(true), true
	endRV := wtWatchOpts(strconv.FormatUint(w.events[3].RV, 10))
	endRV.SendInitialEvents, endRV.InitialEventsEnd = ptr.To(true), true
	noEnd := wtWatchOpts("0")
	noEnd.SendInitialEvents = ptr.To(true)
	modes := []mode{
		{"unset on leader", wtWatchOpts(""), c.Leader()},
		{"unset on follower", wtWatchOpts(""), f},
		{"0 on follower", wtWatchOpts("0"), f},
		{"sendInitialEvents with end bookmark", end, f},
		{"sendInitialEvents from an old RV", endRV, f},
		{"sendInitialEvents without end bookmark", noEnd, f},
	}
	parent := w.t
	defer func() { w.t = parent }()
	for k, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w.t = t
			// Every mode sees the writes of the modes before it.
			wtWaitApplied(t, c, m.node, w.last())
			wa := wtStart(t, wtStore(c, m.node), "", m.opts)
			snap := wa.Pos()
			if snap < w.last() {
				t.Fatalf("initial snapshot at %d is older than the last write %d, read after it", snap, w.last())
			}
			evs := wtCollect(t, wa, snap, true)
			want := []wtEvent{}
			state := w.stateAt(snap)
			for _, key := range slices.Sorted(maps.Keys(state)) {
				ns, name, _ := strings.Cut(key, "/")
				o := state[key]
				want = append(want, wtEvent{Type: watch.Added, RV: o.RV, Namespace: ns, Name: name, Holder: o.Holder, App: o.App})
			}
			if m.opts.InitialEventsEnd {
				if len(evs) == 0 || evs[len(evs)-1].Type != watch.Bookmark {
					t.Fatalf("no bookmark after the initial events: %v", wtDescribeAll(t, evs))
				}
				b := evs[len(evs)-1]
				evs = evs[:len(evs)-1]
				bm, _ := meta.Accessor(b.Object)
				if got := bm.GetAnnotations(); len(got) != 1 || got[metav1.InitialEventsAnnotationKey] != "true" {
					t.Errorf("end bookmark annotations = %v, want only %s=true", got, metav1.InitialEventsAnnotationKey)
				}
				if bm.GetName() != "" || bm.GetNamespace() != "" {
					t.Errorf("end bookmark names %s/%s, want an empty object", bm.GetNamespace(), bm.GetName())
				}
				if rv := wtDescribe(t, b).RV; rv != snap {
					t.Errorf("end bookmark RV %d, want the snapshot index %d", rv, snap)
				}
				if _, ok := b.Object.(*coordinationv1.Lease); !ok {
					t.Errorf("end bookmark object is %T, want *Lease", b.Object)
				}
			}
			got := wtDescribeAll(t, evs)
			for _, e := range got {
				if e.RV > snap {
					t.Errorf("initial event %v is newer than the snapshot %d", e, snap)
				}
			}
			wtCheckInitial(t, got, want)

			// Then the changes after the snapshot, and nothing older.
			from := w.last()
			w.update("wt-a", w.firstLive("wt-a"), fmt.Sprintf("init-%d", k), "x")
			w.create("wt-b", fmt.Sprintf("init-%d", k), "n", "y")
			w.delete("wt-b", fmt.Sprintf("init-%d", k))
			later := wtDescribeAll(t, wtCollect(t, wa, w.last(), false))
			wtCheckStream(t, "after the initial events", later, w.after(max(from, snap), nil))
			wtQuiet(t, wa)
		})
	}
}

// wtCheckInitial compares initial ADDED events (in key order) with want.
func wtCheckInitial(t *testing.T, got, want []wtEvent) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("initial events:\n got %v\nwant %v", got, want)
	}
}

func (w *wtWriter) firstLive(ns string) string {
	for _, k := range slices.Sorted(maps.Keys(w.model)) {
		if n, name, _ := strings.Cut(k, "/"); n == ns {
			return name
		}
	}
	w.t.Fatalf("no live lease in %s", ns)
	return ""
}

// TestWatchSelectorsAndNamespaces: selectors are applied to the old and new
// state: an object that stops matching is DELETED with its old content at
// the event's RV, one that starts matching is ADDED; a namespaced watch
// sees only its namespace.
func TestWatchSelectorsAndNamespaces(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	s := wtStore(c, f)
	w := wtNewWriter(t, c)
	w.create("wt-a", "warmup", "h", "")
	base := w.last()
	wtWaitApplied(t, c, f, base)

	sel := wtWatchOpts(strconv.FormatUint(base, 10))
	sel.Label = labels.SelectorFromSet(labels.Set{"app": "x"})
	byLabel := wtStart(t, s, "", sel)
	nsA := wtStart(t, s, "wt-a", wtWatchOpts(strconv.FormatUint(base, 10)))
	nsAByLabel := wtStart(t, s, "wt-a", sel)
	byName := wtWatchOpts(strconv.FormatUint(base, 10))
	byName.Field = fields.OneTermEqualSelector("metadata.name", "m")
	named := wtStart(t, s, "", byName)
	notInB := wtWatchOpts(strconv.FormatUint(base, 10))
	notInB.Field = fields.OneTermNotEqualSelector("metadata.namespace", "wt-b")
	notB := wtStart(t, s, "", notInB)
	all := wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(base, 10)))

	w.create("wt-a", "m", "h1", "x")     // matches: ADDED
	w.update("wt-a", "m", "h2", "x")     // still matches: MODIFIED
	w.update("wt-a", "m", "h3", "y")     // stops matching: DELETED (old content, new RV)
	w.update("wt-a", "m", "h4", "y")     // still not: nothing
	w.update("wt-a", "m", "h5", "x")     // starts matching: ADDED
	w.create("wt-b", "m", "b1", "x")     // other namespace, matches
	w.create("wt-a", "other", "o1", "")  // never matches
	w.update("wt-a", "other", "o2", "x") // starts matching: ADDED
	w.delete("wt-a", "m")                // DELETED, last content at the delete's RV
	w.update("wt-b", "m", "b2", "")      // stops matching: DELETED with app=x
	w.delete("wt-b", "m")                // not matching any more: nothing
	w.update("wt-a", "other", "o3", "y") // stops matching
	w.delete("wt-a", "other")            // nothing
	w.create("wt-c", "m", "c1", "x")     // a third namespace
	w.create("wt-c", "keep", "k1", "x")  // ADDED
	w.update("wt-c", "keep", "k2", "y")  // DELETED with k1, and keep stays
	last := w.last()
	ev := w.events[1:] // after base
	rv := func(i int) uint64 { return ev[i].RV }

	wantByLabel := []wtEvent{
		{watch.Added, rv(0), "wt-a", "m", "h1", "x"},
		{watch.Modified, rv(1), "wt-a", "m", "h2", "x"},
		{watch.Deleted, rv(2), "wt-a", "m", "h2", "x"},
		{watch.Added, rv(4), "wt-a", "m", "h5", "x"},
		{watch.Added, rv(5), "wt-b", "m", "b1", "x"},
		{watch.Added, rv(7), "wt-a", "other", "o2", "x"},
		{watch.Deleted, rv(8), "wt-a", "m", "h5", "x"},
		{watch.Deleted, rv(9), "wt-b", "m", "b1", "x"},
		{watch.Deleted, rv(11), "wt-a", "other", "o2", "x"},
		{watch.Added, rv(13), "wt-c", "m", "c1", "x"},
		{watch.Added, rv(14), "wt-c", "keep", "k1", "x"},
		{watch.Deleted, rv(15), "wt-c", "keep", "k1", "x"},
	}
	inA := func(e wtEvent) bool { return e.Namespace == "wt-a" }
	notInBNs := func(e wtEvent) bool { return e.Namespace != "wt-b" }
	isM := func(e wtEvent) bool { return e.Name == "m" }
	check := func(what string, wa *registry.Watcher, want []wtEvent) {
		t.Helper()
		got := wtDescribeAll(t, wtCollect(t, wa, last, false))
		wtCheckStream(t, what, got, want)
		wtQuiet(t, wa)
	}
	check("label app=x", byLabel, wantByLabel)
	check("namespace wt-a", nsA, w.after(base, inA))
	check("namespace wt-a, label app=x", nsAByLabel, slices.DeleteFunc(slices.Clone(wantByLabel), func(e wtEvent) bool { return !inA(e) }))
	check("field metadata.name=m", named, w.after(base, isM))
	check("field metadata.namespace!=wt-b", notB, w.after(base, notInBNs))
	check("everything", all, w.after(base, nil))

	// Writes a filtered watch does not see still move its bookmarks, so a
	// client resuming from them does not fall out of the history.
	other := w.create("wt-b", "unseen", "u", "y")
	for _, wa := range []*registry.Watcher{byLabel, nsA, nsAByLabel, named} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		evs, err := wa.Next(ctx)
		cancel()
		if err != nil || len(evs) > 0 {
			t.Fatalf("filtered watch got %v %v for a write it does not match", wtDescribeAll(t, plainEvents(evs)), err)
		}
		if b := wtDescribe(t, wa.Bookmark().Event); b.RV < other {
			t.Errorf("bookmark at %d after the unmatched write at %d", b.RV, other)
		}
	}

	// The DELETED of a selector transition carries a copy of the old
	// object: the stored old version keeps its own resourceVersion.
	wtCheckExact(t, s, w, rv(14))
	wtCheckExact(t, s, w, last)

	// Initial events honour the selectors too.
	init := wtWatchOpts("")
	init.Label = labels.SelectorFromSet(labels.Set{"app": "x"})
	evs := wtDescribeAll(t, wtCollect(t, wtStart(t, s, "", init), last, true))
	wtCheckInitial(t, evs, []wtEvent{{watch.Added, rv(13), "wt-c", "m", "c1", "x"}})
	evs = wtDescribeAll(t, wtCollect(t, wtStart(t, s, "wt-a", wtWatchOpts("")), last, true))
	wtCheckInitial(t, evs, []wtEvent{{watch.Added, base, "wt-a", "warmup", "h", ""}})
}

var wtTooOldRE = regexp.MustCompile(`^too old resource version: (\d+) \((\d+)\)$`)

// wtCheckTooOld checks err is the watch cache's 410 for rv and returns the
// oldest RV it names.
func wtCheckTooOld(t *testing.T, err error, rv uint64) uint64 {
	t.Helper()
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("got %v (reason %q), want 410 Expired", err, apierrors.ReasonForError(err))
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Code != 410 || st.Status != metav1.StatusFailure {
		t.Errorf("status code %d status %q, want 410 Failure", st.Code, st.Status)
	}
	m := wtTooOldRE.FindStringSubmatch(st.Message)
	if m == nil {
		t.Fatalf("message %q, want %q", st.Message, "too old resource version: N (M)")
	}
	if m[1] != strconv.FormatUint(rv, 10) {
		t.Errorf("message %q names %s, want %d", st.Message, m[1], rv)
	}
	oldest, _ := strconv.ParseUint(m[2], 10, 64)
	if oldest <= rv {
		t.Errorf("message %q: the oldest servable RV %d is not after the asked %d", st.Message, oldest, rv)
	}
	return oldest
}

// TestWatchHistoryWindow: with a tiny history, a watch from an RV whose
// later events have left it ends with 410 "too old resource version: N
// (M)"; M is the oldest RV that can still be resumed from, and a watch from
// M works. A watcher that falls behind the ring ends the same way instead
// of skipping events.
func TestWatchHistoryWindow(t *testing.T) {
	const keep = 8
	c := testcluster.New(t, 3, testcluster.Options{State: state.Config{HistoryEvents: keep}})
	w := wtNewWriter(t, c)
	w.create("wt-a", "h0", "h", "")
	first := w.last()
	f := c.Follower()
	wtWaitApplied(t, c, f, first)
	slow := wtStart(t, wtStore(c, f), "", wtWatchOpts(strconv.FormatUint(first-1, 10)))
	for i := range 3 * keep {
		w.update("wt-a", "h0", fmt.Sprintf("h%d", i), "")
	}
	last := w.last()

	for i := range c.Nodes {
		wtWaitApplied(t, c, i, last)
		s := wtStore(c, i)
		oldest := s.State().EventsSince(0).Oldest
		if oldest == 0 || oldest >= last {
			t.Fatalf("%s: oldest resumable RV %d, want inside (0, %d)", c.Nodes[i].Name, oldest, last)
		}
		// Every node drops the same events.
		if want := w.events[len(w.events)-keep-1].RV; oldest != want {
			t.Errorf("%s: oldest resumable RV %d, want %d (the newest dropped event)", c.Nodes[i].Name, oldest, want)
		}
		for _, rv := range []uint64{first, oldest - 1} {
			wa := wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(rv, 10)))
			evs, err := wa.Next(wtCtx(t))
			if len(evs) > 0 {
				t.Fatalf("%s: watch from %d got %v before the 410", c.Nodes[i].Name, rv, wtDescribeAll(t, plainEvents(evs)))
			}
			if got := wtCheckTooOld(t, err, rv); got != oldest {
				t.Errorf("%s: 410 names oldest %d, want %d", c.Nodes[i].Name, got, oldest)
			}
		}
		// From the oldest retained RV on, watches work.
		wa := wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(oldest, 10)))
		got := wtDescribeAll(t, wtCollect(t, wa, last, false))
		wtCheckStream(t, c.Nodes[i].Name+" from the oldest RV", got, w.after(oldest, nil))
		if len(got) != keep {
			t.Errorf("%s: %d events retained, want %d", c.Nodes[i].Name, len(got), keep)
		}
	}

	// The watcher that started in the window but did not read fast enough.
	evs, err := slow.Next(wtCtx(t))
	if len(evs) > 0 {
		t.Fatalf("slow watcher got %v, want 410", wtDescribeAll(t, plainEvents(evs)))
	}
	wtCheckTooOld(t, err, first-1)
}

// TestWatchFutureResourceVersion: a watch from an RV the node has not
// applied waits until it has, and then returns only events after it: no
// future leak. Past the wait bound it fails as too large.
func TestWatchFutureResourceVersion(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := wtNewWriter(t, c)
	w.create("wt-a", "f", "h0", "")
	f := c.Follower()
	wtWaitApplied(t, c, f, w.last())
	s := wtStore(c, f)
	s.RVWait = wtTimeout
	applied := s.State().AppliedIndex()
	future := applied + 5

	type result struct {
		w       *registry.Watcher
		err     error
		started time.Time
	}
	res := make(chan result, 1)
	ctx := wtCtx(t)
	go func() {
		wa, err := s.Watch(ctx, registry.Leases, "", wtWatchOpts(strconv.FormatUint(future, 10)))
		res <- result{wa, err, time.Now()}
	}()
	select {
	case r := <-res:
		t.Fatalf("watch from %d (applied %d) returned at once: %v", future, applied, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	for i := range 10 {
		w.update("wt-a", "f", fmt.Sprintf("h%d", i+1), "")
	}
	var r result
	select {
	case r = <-res:
	case <-time.After(wtTimeout):
		t.Fatal("watch from a future RV did not start after the writes reached it")
	}
	if r.err != nil {
		t.Fatalf("watch from %d: %v", future, r.err)
	}
	if r.w.Pos() < future {
		t.Fatalf("watch position %d is before the asked %d", r.w.Pos(), future)
	}
	got := wtDescribeAll(t, wtCollect(t, r.w, w.last(), false))
	for _, e := range got {
		if e.RV <= future {
			t.Errorf("future leak: event %v is not after the asked RV %d", e, future)
		}
	}
	wtCheckStream(t, "from a future RV", got, w.after(future, nil))

	// Initial events from a future RV wait as well, and their snapshot is
	// not older than it.
	future = w.last() + 3
	o := wtWatchOpts(strconv.FormatUint(future, 10))
	o.SendInitialEvents, o.InitialEventsEnd = ptr.To(true), true
	go func() {
		wa, err := s.Watch(ctx, registry.Leases, "", o)
		res <- result{wa, err, time.Now()}
	}()
	for i := range 5 {
		w.update("wt-a", "f", fmt.Sprintf("g%d", i), "")
	}
	select {
	case r = <-res:
	case <-time.After(wtTimeout):
		t.Fatal("initial-events watch from a future RV did not start")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.w.Pos() < future {
		t.Fatalf("initial snapshot at %d, older than the asked %d", r.w.Pos(), future)
	}
	evs := wtCollect(t, r.w, r.w.Pos(), true)
	if b := wtDescribe(t, evs[len(evs)-1]); b.Type != watch.Bookmark || b.RV != r.w.Pos() {
		t.Fatalf("end bookmark %v, want at %d", b, r.w.Pos())
	}

	// Nobody writes: past RVWait the watch is refused as too large.
	s.RVWait = 300 * time.Millisecond
	far := w.last() + 1000
	_, err := s.Watch(wtCtx(t), registry.Leases, "", wtWatchOpts(strconv.FormatUint(far, 10)))
	if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Fatalf("watch from %d: %v, want 504 Too large resource version", far, err)
	}
}

func wtExact(rv uint64) registry.ListOptions {
	return registry.ListOptions{
		ReadOptions: registry.ReadOptions{ResourceVersion: strconv.FormatUint(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact},
		Label:       labels.Everything(),
		Field:       fields.Everything(),
	}
}

// wtCheckExact checks an exact list at rv against the model.
func wtCheckExact(t *testing.T, s *registry.Store, w *wtWriter, rv uint64) {
	t.Helper()
	out, err := s.List(wtCtx(t), registry.Leases, "", wtExact(rv))
	if err != nil {
		t.Fatalf("exact list at %d: %v", rv, err)
	}
	wtCheckList(t, fmt.Sprintf("exact list at %d", rv), out.(*coordinationv1.LeaseList), w.stateAt(rv), rv)
}

func wtCheckList(t *testing.T, what string, l *coordinationv1.LeaseList, want map[string]wtLease, rv uint64) {
	t.Helper()
	if l.ResourceVersion != strconv.FormatUint(rv, 10) {
		t.Errorf("%s: list RV %s, want %d", what, l.ResourceVersion, rv)
	}
	got := map[string]wtLease{}
	for i := range l.Items {
		it := &l.Items[i]
		got[it.Namespace+"/"+it.Name] = wtLease{RV: wtRV(t, it), Holder: *it.Spec.HolderIdentity, App: it.Labels["app"]}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// TestListExactFromHistory: with few read views kept, an exact list at an
// older RV is rebuilt from the history and is the state as it was then, on
// every node; paginated lists at such an RV stay on it; older than the
// history it is 410.
func TestListExactFromHistory(t *testing.T) {
	const keep = 30
	c := testcluster.New(t, 3, testcluster.Options{State: state.Config{HistoryEvents: keep, ListSnapshots: 2}})
	w := wtNewWriter(t, c)
	base := c.Nodes[c.Leader()].Raft().State().AppliedIndex()
	w.mixedWorkload("x", 25)
	last := w.last()
	rvs := []uint64{base}
	for _, e := range w.events {
		rvs = append(rvs, e.RV-1, e.RV)
	}
	for i := range c.Nodes {
		wtWaitApplied(t, c, i, last)
		s := wtStore(c, i)
		for _, rv := range rvs {
			wtCheckExact(t, s, w, rv)
		}
		// A paginated list at an old RV (a plain RV with a limit is exact)
		// serves every page from that RV.
		at := w.events[5].RV
		o := registry.ListOptions{ReadOptions: registry.ReadOptions{ResourceVersion: strconv.FormatUint(at, 10)}, Label: labels.Everything(), Field: fields.Everything(), Limit: 2}
		all := &coordinationv1.LeaseList{}
		for page := 0; ; page++ {
			out, err := s.List(wtCtx(t), registry.Leases, "", o)
			if err != nil {
				t.Fatalf("%s: page %d at %d: %v", c.Nodes[i].Name, page, at, err)
			}
			l := out.(*coordinationv1.LeaseList)
			if l.ResourceVersion != strconv.FormatUint(at, 10) {
				t.Fatalf("%s: page %d has RV %s, want %d", c.Nodes[i].Name, page, l.ResourceVersion, at)
			}
			all.Items = append(all.Items, l.Items...)
			if l.Continue == "" {
				break
			}
			o = registry.ListOptions{Label: labels.Everything(), Field: fields.Everything(), Limit: 2, Continue: l.Continue}
		}
		all.ResourceVersion = strconv.FormatUint(at, 10)
		wtCheckList(t, c.Nodes[i].Name+": paginated list", all, w.stateAt(at), at)
	}

	// Push the early RVs out of the history.
	for i := 0; w.last() == last || len(w.after(last, nil)) < keep; i++ {
		w.update("wt-a", w.firstLive("wt-a"), fmt.Sprintf("push%d", i), "")
	}
	for i := range c.Nodes {
		wtWaitApplied(t, c, i, w.last())
		s := wtStore(c, i)
		if _, err := s.List(wtCtx(t), registry.Leases, "", wtExact(base)); !apierrors.IsResourceExpired(err) {
			t.Fatalf("%s: exact list at %d: %v, want 410 Expired", c.Nodes[i].Name, base, err)
		} else if msg := err.(apierrors.APIStatus).Status().Message; msg != "The resourceVersion for the provided list is too old." {
			t.Errorf("%s: 410 message %q", c.Nodes[i].Name, msg)
		}
		oldest := s.State().EventsSince(0).Oldest
		wtCheckExact(t, s, w, oldest)
		wtCheckExact(t, s, w, w.last()-1)
	}
}

// plainEvents drops the stored-object references of registry events.
func plainEvents(evs []registry.Event) []watch.Event {
	out := make([]watch.Event, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// NextWithin returns what committed at once, waits for what commits within
// the wait, and otherwise returns nothing once the wait has passed, every
// time: a wait that ended or was never needed does not cut a later one
// short.
func TestWatchNextWithin(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := wtNewWriter(t, c)
	start := w.create("ns", "a", "h1", "")
	wa := wtStart(t, wtStore(c, 0), "ns", wtWatchOpts(strconv.FormatUint(start, 10)))
	ctx := wtCtx(t)

	quiet := func(wait time.Duration) {
		t.Helper()
		began := time.Now()
		evs, err := wa.NextWithin(ctx, wait)
		if err != nil || len(evs) > 0 {
			t.Fatalf("NextWithin(%v) with nothing new: %v %v", wait, wtDescribeAll(t, plainEvents(evs)), err)
		}
		if took := time.Since(began); took < wait || took > wait+5*time.Second {
			t.Fatalf("NextWithin(%v) with nothing new returned after %v", wait, took)
		}
	}
	next := func(wait time.Duration, want uint64) {
		t.Helper()
		evs, err := wa.NextWithin(ctx, wait)
		if err != nil || len(evs) != 1 || wtRV(t, evs[0].Object) != want {
			t.Fatalf("NextWithin(%v): %v %v, want the event at %d", wait, wtDescribeAll(t, plainEvents(evs)), err, want)
		}
	}

	quiet(30 * time.Millisecond)
	next(time.Hour, w.update("ns", "a", "h2", "")) // committed before the call
	quiet(200 * time.Millisecond)                  // the timer was not left armed
	quiet(30 * time.Millisecond)
	quiet(200 * time.Millisecond) // nor did the one that fired stay fired
	// The write runs on its own goroutine through the store directly, so
	// that a failure is reported from the test's goroutine.
	type written struct {
		out runtime.Object
		err error
	}
	done := make(chan written, 1)
	l := wtNewLease("ns", "a", "h3", "")
	l.ResourceVersion = strconv.FormatUint(w.last(), 10)
	go func() {
		time.Sleep(50 * time.Millisecond)
		out, _, err := wtStore(c, 0).Update(ctx, registry.Leases, "ns", "a", l, registry.WriteOptions{})
		done <- written{out, err}
	}()
	evs, err := wa.NextWithin(ctx, wtTimeout)
	if err != nil || len(evs) != 1 {
		t.Fatalf("NextWithin while a write commits: %v %v", wtDescribeAll(t, plainEvents(evs)), err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("update: %v", r.err)
		}
		if got, want := wtRV(t, evs[0].Object), wtRV(t, r.out); got != want {
			t.Fatalf("event at %d, want %d", got, want)
		}
	case <-ctx.Done():
		t.Fatal("the write did not finish")
	}
}
