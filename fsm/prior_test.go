package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"testing"
	"time"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm/state"
)

// TestPriorRebuildsThePreviousVersion: for random pairs of Lease versions,
// the previous version an event holds — whole, or as a difference when only
// resourceVersion, managedFields and spec changed — rebuilds to one that
// encodes exactly as the version did, keeps the selectors' view, and is a
// difference whenever it may be.
func TestPriorRebuildsThePreviousVersion(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	f := newFSM(state.DefaultConfig())
	decoded := func(l *coordinationv1.Lease, rv uint64) *state.Object { return stored(t, f, l, rv) }
	at := func() time.Time {
		return fixedTime.Add(time.Duration(rng.Intn(1e6)) * time.Microsecond).Truncate(time.Microsecond)
	}
	diffs := 0
	for i := range 2000 {
		base := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: fmt.Sprint("l", i%7), UID: types.UID(fmt.Sprint("u", i%3)),
				CreationTimestamp: metav1.Time{Time: fixedTime.Truncate(time.Second)},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
					Time: &metav1.Time{Time: fixedTime.Truncate(time.Second)}, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)},
				}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptrTo("h"), LeaseDurationSeconds: ptrTo[int32](15),
				AcquireTime: &metav1.MicroTime{Time: at()}, RenewTime: &metav1.MicroTime{Time: at()}, LeaseTransitions: ptrTo[int32](1),
			},
		}
		if rng.Intn(2) == 0 {
			base.Labels = map[string]string{"a": "1"}
		}
		next := base.DeepCopy()
		var metaChanged []string
		change := func(p float64, what string, meta bool, fn func()) {
			if rng.Float64() < p {
				fn()
				if meta {
					metaChanged = append(metaChanged, what)
				}
			}
		}
		change(0.8, "renewTime", false, func() { next.Spec.RenewTime = &metav1.MicroTime{Time: next.Spec.RenewTime.Add(time.Second)} })
		change(0.2, "holder", false, func() { next.Spec.HolderIdentity = ptrTo("other") })
		change(0.2, "transitions", false, func() { next.Spec.LeaseTransitions = ptrTo[int32](2) })
		change(0.1, "duration", false, func() { next.Spec.LeaseDurationSeconds = nil })
		change(0.3, "managedFields", false, func() {
			next.ManagedFields[0].Time = &metav1.Time{Time: fixedTime.Add(time.Hour).Truncate(time.Second)}
		})
		change(0.1, "labels", true, func() { next.Labels = map[string]string{"a": "2"} })
		change(0.05, "annotations", true, func() { next.Annotations = map[string]string{"n": "v"} })
		change(0.05, "finalizers", true, func() { next.Finalizers = []string{"f"} })
		change(0.05, "ownerReferences", true, func() {
			next.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "o"}}
		})
		change(0.05, "generation", true, func() { next.Generation = 3 })
		change(0.05, "deletionTimestamp", true, func() { next.DeletionTimestamp = &metav1.Time{Time: fixedTime.Add(time.Minute).Truncate(time.Second)} })

		prev := decoded(base, uint64(10*i+1))
		n := decoded(next, uint64(10*i+5))
		shareUnchanged(n, prev)
		prior := new(priors).of(n, prev)
		_, isDiff := prior.(*leasePrior)
		if isDiff != (len(metaChanged) == 0) {
			t.Fatalf("pair %d (metadata changed: %v): held as %T", i, metaChanged, prior)
		}
		if isDiff {
			diffs++
		}
		got := prior.Version(n)
		if got.RV != prev.RV || got.Key() != prev.Key() || got.UID() != prev.UID() {
			t.Fatalf("pair %d: rebuilt %v at %d, want %v at %d", i, got.Key(), got.RV, prev.Key(), prev.RV)
		}
		gl, pl := got.Obj.(*coordinationv1.Lease), prev.Obj.(*coordinationv1.Lease)
		gp, gj := encodings(t, gl)
		pp, pj := encodings(t, pl)
		if !bytes.Equal(gp, pp) || !bytes.Equal(gj, pj) {
			t.Fatalf("pair %d (changed: %v): rebuilt\n%s\nwant\n%s", i, metaChanged, gj, pj)
		}
		e := state.Event{Type: state.Modified, RV: n.RV, Object: n, Prior: prior}
		sel := e.PrevSelectable().Obj.(*coordinationv1.Lease)
		if sel.Name != pl.Name || sel.Namespace != pl.Namespace || !maps.Equal(sel.Labels, pl.Labels) {
			t.Fatalf("pair %d: selectors see %s/%s %v, the previous version is %s/%s %v", i, sel.Namespace, sel.Name, sel.Labels, pl.Namespace, pl.Name, pl.Labels)
		}
	}
	if diffs < 500 {
		t.Fatalf("%d of 2000 pairs held as differences", diffs)
	}
}

// stored is l at rv as f stores it: decoded from its encoding.
func stored(t *testing.T, f *FSM, l *coordinationv1.Lease, rv uint64) *state.Object {
	t.Helper()
	data, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return storedData(t, f, data, rv)
}

// storedData is the Lease encoded in data at rv, as f stores it.
func storedData(t *testing.T, f *FSM, data []byte, rv uint64) *state.Object {
	t.Helper()
	obj, keep, err := f.unmarshal("leases", data)
	if err != nil {
		t.Fatal(err)
	}
	obj.SetResourceVersion(fmt.Sprint(rv))
	return state.NewObject("leases", rv, obj, keep)
}

// encodings returns l's protobuf and JSON encodings.
func encodings(t *testing.T, l *coordinationv1.Lease) (pb, js []byte) {
	t.Helper()
	pb, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if js, err = json.Marshal(l); err != nil {
		t.Fatal(err)
	}
	return pb, js
}

// TestLeasePriorSize: a difference stays in the 96-byte size class, a
// quarter of the Object and Lease it stands for.
func TestLeasePriorSize(t *testing.T) {
	if n := unsafe.Sizeof(leasePrior{}); n > 96 {
		t.Fatalf("leasePrior is %d bytes, want at most 96", n)
	}
}

// TestHistoryHoldsPriorsCompactly: through the FSM, an event holds its
// previous state as the earlier event's object while that event is in the
// history, then as a difference; a version that keeps the bytes it was
// written with (fields this binary does not know) is held whole, as a
// difference could not rebuild them.
func TestHistoryHoldsPriorsCompactly(t *testing.T) {
	f := newFSM(state.Config{HistoryEvents: 2})
	odd := withUnknownField(leaseBytes(t, "ns", "l", "u1", "a"))
	for i, c := range []*Command{
		{Type: CmdCreate, Resource: "leases", Object: odd},
		{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, "ns", "l", "u1", "b")},
		{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, "ns", "l", "u1", "c")},
		{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, "ns", "l", "u1", "d")},
	} {
		if r := asResult(t, f.Apply(cmdLog(uint64(i+1), c))); r.Err != nil {
			t.Fatal(r.Err)
		}
		evs := historyOf(f)
		last := evs[len(evs)-1]
		switch i {
		case 1: // the creation is in the history
			if last.Prior != state.Prior(evs[0].Object) {
				t.Fatalf("update 2 holds %T, want the creation's object", last.Prior)
			}
		case 2: // the creation left: its object is held whole, for its bytes
			if p, ok := evs[0].Prior.(*state.Object); !ok || !bytes.Equal(p.Data(), odd) {
				t.Fatalf("update 2 holds %T once the creation left, want the version with its bytes", evs[0].Prior)
			}
		case 3: // update 2 left: update 3 holds its previous state as a difference
			if _, ok := evs[0].Prior.(*leasePrior); !ok {
				t.Fatalf("update 3 holds %T once update 2 left, want a difference", evs[0].Prior)
			}
			if last.Prior != state.Prior(evs[0].Object) {
				t.Fatalf("update 4 holds %T, want update 3's object", last.Prior)
			}
			sameObject(t, "update 3's previous state", decodedLease(t, "ns", "l", "u1", "b", 2), evs[0].Prev())
		}
	}
}

// decodedLease is the stored form of leaseBytes at rv.
func decodedLease(t *testing.T, ns, name, uid, holder string, rv uint64) *state.Object {
	t.Helper()
	return storedData(t, newFSM(state.DefaultConfig()), leaseBytes(t, ns, name, uid, holder), rv)
}

// historyOf is every event f's history holds.
func historyOf(f *FSM) []state.Event {
	s := f.State().EventsSince(0)
	if s.Expired {
		s = f.State().EventsSince(s.Oldest)
	}
	return s.Events
}

// TestHistoryRebuildsReplacedObjects: Leases updated many times over in a
// 64-event history (the newest 8 kept whole): each event read back, once
// its object was replaced and compacted, encodes exactly as the object did
// when it was written, with its previous state the previous event's very
// object; before and after a snapshot round trip.
func TestHistoryRebuildsReplacedObjects(t *testing.T) {
	cfg := state.Config{HistoryEvents: 64}
	f := newFSM(cfg)
	written := map[uint64][]byte{} // protobuf of each event's object when it was the newest
	rng := rand.New(rand.NewSource(7))
	for idx := uint64(1); idx <= 300; idx++ {
		name := fmt.Sprintf("l%d", rng.Intn(6))
		data := leaseBytes(t, "ns", name, "u-"+name, fmt.Sprintf("h%d", idx))
		if rng.Intn(10) == 0 {
			data = withUnknownField(data) // held whole: a difference cannot rebuild its bytes
		}
		c := &Command{Type: CmdUpdate, Resource: "leases", Object: data}
		if f.State().Snapshot().Get(leaseKey("ns", name)) == nil {
			c.Type = CmdCreate
		}
		if r := asResult(t, f.Apply(cmdLog(idx, c))); r.Err != nil {
			t.Fatal(r.Err)
		}
		evs := historyOf(f)
		written[idx] = leaseProto(t, evs[len(evs)-1].Object)
	}

	check := func(what string, f *FSM) {
		t.Helper()
		first, again := historyOf(f), historyOf(f)
		if len(first) != cfg.HistoryEvents {
			t.Fatalf("%s: %d events, want %d", what, len(first), cfg.HistoryEvents)
		}
		byRV := map[uint64]*state.Object{}
		rebuilt := 0
		for i, e := range first {
			if got := leaseProto(t, e.Object); !bytes.Equal(got, written[e.RV]) {
				t.Fatalf("%s: event %d reads back as\n%x\nwritten as\n%x", what, e.RV, got, written[e.RV])
			}
			if prev, ok := e.Prior.(*state.Object); ok && byRV[prev.RV] != nil && byRV[prev.RV] != prev {
				t.Fatalf("%s: event %d's previous state is not event %d's object", what, e.RV, prev.RV)
			}
			if p := e.Prev(); p != nil && written[p.RV] != nil && !bytes.Equal(leaseProto(t, p), written[p.RV]) {
				t.Fatalf("%s: event %d's previous state %d differs from how it was written", what, e.RV, p.RV)
			}
			byRV[e.RV] = e.Object
			// A compacted object is rebuilt for each read; the newest
			// are read as held.
			if e.Object != again[i].Object {
				rebuilt++
				if i >= len(first)-8 {
					t.Fatalf("%s: event %d, among the newest 8, rebuilt on read", what, e.RV)
				}
			}
		}
		// Six Leases updated in turn: most events older than the newest 8
		// were replaced, and nine in ten written without unknown fields.
		if rebuilt < 30 {
			t.Fatalf("%s: %d of %d events rebuilt on read, want most of those replaced", what, rebuilt, len(first))
		}
	}
	check("applied", f)
	g := newFSM(cfg)
	restoreFrom(t, g, persist(t, f))
	check("restored", g)
}

// leaseProto is o's Lease in protobuf.
func leaseProto(t *testing.T, o *state.Object) []byte {
	t.Helper()
	b, err := o.Obj.(*coordinationv1.Lease).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLeaseChangeRoundTrip: a Lease version a snapshot writes as its
// difference from its successor reads back as a version that encodes
// exactly as it did, whatever changed in its managedFields, and an entry
// that differs only in its time is written as that time.
func TestLeaseChangeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	f := newFSM(state.DefaultConfig())
	decoded := func(l *coordinationv1.Lease, rv uint64) *state.Object { return stored(t, f, l, rv) }
	entry := func(manager string, sec int) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
			Time: &metav1.Time{Time: fixedTime.Add(time.Duration(sec) * time.Second).Truncate(time.Second)}, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:renewTime":{}}}`)},
		}
	}
	randomEntries := func() []metav1.ManagedFieldsEntry {
		var mf []metav1.ManagedFieldsEntry
		for j := range rng.Intn(3) {
			e := entry(fmt.Sprint("m", j+rng.Intn(2)), rng.Intn(3))
			if rng.Intn(10) == 0 {
				e.Time = nil
			}
			mf = append(mf, e)
		}
		return mf
	}
	kinds := map[byte]int{}
	for i := range 2000 {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "l", UID: "u", ManagedFields: randomEntries()},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo(fmt.Sprint("h", rng.Intn(2))), LeaseDurationSeconds: ptrTo[int32](15),
				RenewTime: &metav1.MicroTime{Time: fixedTime.Add(time.Duration(rng.Intn(1e6)) * time.Microsecond)}},
		}
		nl := l.DeepCopy()
		nl.Spec.RenewTime = &metav1.MicroTime{Time: nl.Spec.RenewTime.Add(time.Second)}
		switch rng.Intn(4) {
		case 0: // the same entries
		case 1: // the times move on, as each renewal's do
			for j := range nl.ManagedFields {
				if nl.ManagedFields[j].Time != nil && rng.Intn(4) > 0 {
					nl.ManagedFields[j].Time = &metav1.Time{Time: nl.ManagedFields[j].Time.Add(time.Second)}
				}
			}
		default:
			nl.ManagedFields = randomEntries()
		}
		prev, next := decoded(l, uint64(2*i+1)), decoded(nl, uint64(2*i+2))
		shareUnchanged(next, prev)
		c, ok := new(priors).of(next, prev).(*leasePrior)
		if !ok {
			t.Fatalf("pair %d: not held as a difference", i)
		}
		b, err := appendLeaseChange(nil, c, next.Obj.(*coordinationv1.Lease))
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{b: b}
		r.uvarint()
		r.bytes()
		for range r.uvarint() {
			kind := r.byte()
			kinds[kind]++
			if kind > 0 {
				r.bytes()
			}
		}
		r = &reader{b: b}
		read, err := f.readLeaseChange(r, next)
		if err != nil || len(r.b) != 0 {
			t.Fatalf("pair %d: %v, %d bytes left", i, err, len(r.b))
		}
		got := read.Version(next)
		gp, gj := encodings(t, got.Obj.(*coordinationv1.Lease))
		pp, pj := encodings(t, prev.Obj.(*coordinationv1.Lease))
		if got.RV != prev.RV || !bytes.Equal(gp, pp) || !bytes.Equal(gj, pj) {
			t.Fatalf("pair %d: read back at %d\n%s\nwant at %d\n%s", i, got.RV, gj, prev.RV, pj)
		}
		// Truncated, it is an error, never a different version.
		for n := range len(b) {
			if _, err := f.readLeaseChange(&reader{b: b[:n]}, next); err == nil {
				t.Fatalf("pair %d: %d of %d bytes read without error", i, n, len(b))
			}
		}
	}
	if kinds[0] < 200 || kinds[1] < 200 || kinds[2] < 200 {
		t.Fatalf("managedFields entries written as the same %d times, retimed %d, in full %d", kinds[0], kinds[1], kinds[2])
	}
}
