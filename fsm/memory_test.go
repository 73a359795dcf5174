package fsm

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm/state"
)

// withUnknownField appends a field this binary's Lease does not have, as a
// newer binary's proposer might write.
func withUnknownField(b []byte) []byte {
	b = bytes.Clone(b)
	b = binary.AppendUvarint(b, 1000<<3) // field 1000, varint
	return binary.AppendUvarint(b, 42)
}

// TestDataKeptOnlyWhenReencodingDiffers: an object whose encoding this
// binary reproduces keeps no copy of it; one it cannot reproduce keeps the
// bytes as written, for no-op detection and snapshots alike.
func TestDataKeptOnlyWhenReencodingDiffers(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	plain := leaseBytes(t, "ns", "plain", "u1", "a")
	r := asResult(t, f.Apply(cmdLog(1, &Command{Type: CmdCreate, Resource: "leases", Object: plain})))
	if r.Err != nil || r.Object.Data() != nil {
		t.Fatalf("plain create: err %v, Data %x kept", r.Err, r.Object.Data())
	}
	if got := dataOf(t, r.Object); !bytes.Equal(got, plain) {
		t.Fatalf("derived data %x, want %x", got, plain)
	}

	odd := withUnknownField(leaseBytes(t, "ns", "odd", "u2", "a"))
	r = asResult(t, f.Apply(cmdLog(2, &Command{Type: CmdCreate, Resource: "leases", Object: odd})))
	if r.Err != nil || !bytes.Equal(r.Object.Data(), odd) {
		t.Fatalf("create with an unknown field: err %v, Data %x, want %x", r.Err, r.Object.Data(), odd)
	}
	// The same bytes again change nothing; the object without the field
	// is a change, as when every object kept its bytes.
	r = asResult(t, f.Apply(cmdLog(3, &Command{Type: CmdUpdate, Resource: "leases", Object: odd})))
	if r.Err != nil || r.Object.RV != 2 {
		t.Fatalf("repeated update: %+v, want the object at rv 2", r)
	}
	r = asResult(t, f.Apply(cmdLog(4, &Command{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, "ns", "odd", "u2", "a")})))
	if r.Err != nil || r.Object.RV != 4 || r.Object.Data() != nil {
		t.Fatalf("update without the field: %+v, want a write at rv 4 keeping no data", r)
	}
	r = asResult(t, f.Apply(cmdLog(5, &Command{Type: CmdUpdate, Resource: "leases", Object: plain})))
	if r.Err != nil || r.Object.RV != 1 {
		t.Fatalf("no-op update of a derived object: %+v, want the object at rv 1", r)
	}
	r = asResult(t, f.Apply(cmdLog(6, &Command{Type: CmdUpdate, Resource: "leases", Object: odd})))
	if r.Err != nil || r.Object.RV != 6 {
		t.Fatalf("update with the field: %+v", r)
	}

	dst := newFSM(state.DefaultConfig())
	restoreFrom(t, dst, persist(t, f))
	got := dst.State().Snapshot().Get(leaseKey("ns", "odd"))
	if got == nil || !bytes.Equal(got.Data(), odd) {
		t.Fatalf("restored object %+v, want its bytes as written", got)
	}
	if got := dst.State().Snapshot().Get(leaseKey("ns", "plain")); got == nil || got.Data() != nil || !bytes.Equal(dataOf(t, got), plain) {
		t.Fatalf("restored plain object %+v", got)
	}
}

// managedLeaseBytes is leaseBytes with one managedFields entry, as every
// Lease written through the API has.
func managedLeaseBytes(t testing.TB, ns, name, uid string, at time.Time) []byte {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(uid),
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "leasebench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				Time: &metav1.Time{Time: at}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:holderIdentity":{}}}`)},
			}},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo(name)},
	}
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestDecodedObjectsShareRepeatedValues: what many objects repeat is held
// once, after apply and after a restore alike.
func TestDecodedObjectsShareRepeatedValues(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	for i, name := range []string{"a", "b", "c"} {
		data := managedLeaseBytes(t, "kube-node-lease", name, "u-"+name, fixedTime.Truncate(time.Second).Add(time.Duration(i/2)*time.Second))
		if r := asResult(t, f.Apply(cmdLog(uint64(i+1), &Command{Type: CmdCreate, Resource: "leases", Object: data}))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	check := func(what string, f *FSM) {
		t.Helper()
		sn := f.State().Snapshot()
		a := sn.Get(leaseKey("kube-node-lease", "a"))
		b := sn.Get(leaseKey("kube-node-lease", "b"))
		la, lb := a.Obj.(*coordinationv1.Lease), b.Obj.(*coordinationv1.Lease)
		ea, eb := la.ManagedFields[0], lb.ManagedFields[0]
		if !sameMemory(la.Namespace, lb.Namespace) || !sameMemory(a.Resource, b.Resource) || !sameMemory(la.APIVersion, lb.APIVersion) {
			t.Fatalf("%s: namespace, resource or apiVersion not shared", what)
		}
		if !sameMemory(ea.Manager, eb.Manager) || !sameMemory(string(ea.Operation), string(eb.Operation)) ||
			!sameMemory(ea.APIVersion, eb.APIVersion) || !sameMemory(ea.FieldsType, eb.FieldsType) || ea.FieldsV1 != eb.FieldsV1 {
			t.Fatalf("%s: managedFields entries not shared: %+v %+v", what, ea, eb)
		}
		if ea.Time != eb.Time {
			t.Fatalf("%s: entries' times %v and %v not shared", what, ea.Time, eb.Time)
		}
		if &la.ManagedFields[0] != &lb.ManagedFields[0] || cap(la.ManagedFields) != 1 {
			t.Fatalf("%s: equal managedFields not shared, or shared with room to append", what)
		}
		if ec := sn.Get(leaseKey("kube-node-lease", "c")).Obj.(*coordinationv1.Lease).ManagedFields[0]; ec.Time == ea.Time || ec.Time.Equal(ea.Time) {
			t.Fatalf("%s: a later time %v shares %v", what, ec.Time, ea.Time)
		}
	}
	check("applied", f)
	dst := newFSM(state.DefaultConfig())
	restoreFrom(t, dst, persist(t, f))
	check("restored", dst)
}

// TestRestoreSharesVersions: a version that the state and the history, or
// two events, refer to is one object after a restore, as before it, and an
// event that held its previous state as a difference holds it so again.
func TestRestoreSharesVersions(t *testing.T) {
	for _, cfg := range []state.Config{
		state.DefaultConfig(),
		{HistoryEvents: 3, ListSnapshots: 2}, // previous states whose events have left
	} {
		src := newFSM(cfg)
		populate(t, src)
		dst := newFSM(cfg)
		restoreFrom(t, dst, persist(t, src))

		// priors counts the events by how they hold their previous state:
		// not at all, as a difference, as an earlier event's object, or
		// whole and alone.
		type priors struct{ none, diff, shared, alone int }
		count := func(f *FSM) priors {
			current := map[state.Key]*state.Object{}
			f.State().Snapshot().List("leases", "", nil, func(o *state.Object) bool { current[o.Key()] = o; return true })
			seen := map[*state.Object]bool{}
			evs := historyOf(f)
			var n priors
			for _, e := range evs {
				switch p := e.Prior.(type) {
				case nil:
					n.none++
				case *state.Object:
					if seen[p] {
						n.shared++
					} else {
						n.alone++
					}
				default:
					n.diff++
				}
				if e.Type != state.Deleted {
					if cur := current[e.Object.Key()]; cur != nil && cur.RV == e.Object.RV && cur != e.Object {
						t.Fatalf("event %d: object %v is a copy of the state's", e.RV, e.Object.Key())
					}
					seen[e.Object] = true
				}
			}
			return n
		}
		want := count(src)
		if got := count(dst); got != want || want.alone > 0 || want.shared+want.diff == 0 {
			t.Fatalf("history of %d: restored: previous states held %+v, source %+v", cfg.HistoryEvents, got, want)
		}
	}
}

// TestVersionsShareUnchangedValues: a Lease's next version, and the
// tombstone of its deletion, hold the previous version's copy of every
// value that did not change, after apply and after a restore alike, and
// encode exactly as written.
func TestVersionsShareUnchangedValues(t *testing.T) {
	version := func(renew time.Time) []byte {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u-a"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptrTo("holder"),
				LeaseDurationSeconds: ptrTo[int32](15),
				AcquireTime:          &metav1.MicroTime{Time: fixedTime.Truncate(time.Microsecond)},
				RenewTime:            &metav1.MicroTime{Time: renew.Truncate(time.Microsecond)},
				LeaseTransitions:     ptrTo[int32](2),
			},
		}
		b, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	written := [][]byte{version(fixedTime), version(fixedTime.Add(time.Second)), version(fixedTime.Add(2 * time.Second))}
	f := newFSM(state.DefaultConfig())
	for i, data := range written {
		typ := CmdUpdate
		if i == 0 {
			typ = CmdCreate
		}
		if r := asResult(t, f.Apply(cmdLog(uint64(i+1), &Command{Type: typ, Resource: "leases", Object: data}))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if r := asResult(t, f.Apply(cmdLog(4, &Command{Type: CmdDelete, Resource: "leases", Namespace: "ns", Name: "a"}))); r.Err != nil {
		t.Fatal(r.Err)
	}
	check := func(what string, f *FSM) {
		t.Helper()
		evs, _, _, _ := eventsSince(f.State(), 0)
		if len(evs) != 4 {
			t.Fatalf("%s: %d events, want 4", what, len(evs))
		}
		for i, e := range evs[1:] {
			n, p := e.Object.Obj.(*coordinationv1.Lease), e.Prev().Obj.(*coordinationv1.Lease)
			if !sameMemory(n.Name, p.Name) || !sameMemory(string(n.UID), string(p.UID)) {
				t.Errorf("%s: event %d: name or uid not shared with the previous version", what, e.RV)
			}
			s, ps := n.Spec, p.Spec
			if s.HolderIdentity != ps.HolderIdentity || s.LeaseDurationSeconds != ps.LeaseDurationSeconds ||
				s.AcquireTime != ps.AcquireTime || s.LeaseTransitions != ps.LeaseTransitions {
				t.Errorf("%s: event %d: unchanged spec values not shared: %+v, previous %+v", what, e.RV, s, ps)
			}
			if renewed := i < 2; renewed == (s.RenewTime == ps.RenewTime) {
				t.Errorf("%s: event %d: renewTime shared %v, want %v", what, e.RV, s.RenewTime == ps.RenewTime, !renewed)
			}
		}
		for i, data := range written {
			if got := dataOf(t, evs[i].Object); !bytes.Equal(got, data) {
				t.Errorf("%s: version %d encodes as %x, written %x", what, i+1, got, data)
			}
		}
	}
	check("applied", f)
	dst := newFSM(state.DefaultConfig())
	restoreFrom(t, dst, persist(t, f))
	check("restored", dst)
}

// TestCandidateVersionsShareUnchangedValues: the same for a LeaseCandidate
// renewed by its candidate.
func TestCandidateVersionsShareUnchangedValues(t *testing.T) {
	version := func(renew time.Time) []byte {
		c := &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u-c"},
			Spec: coordinationv1beta1.LeaseCandidateSpec{
				LeaseName:        "lease",
				PingTime:         &metav1.MicroTime{Time: fixedTime.Truncate(time.Microsecond)},
				RenewTime:        &metav1.MicroTime{Time: renew.Truncate(time.Microsecond)},
				BinaryVersion:    "1.33.0",
				EmulationVersion: "1.32.0",
				Strategy:         coordinationv1.OldestEmulationVersion,
			},
		}
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f := newFSM(state.DefaultConfig())
	for i, data := range [][]byte{version(fixedTime), version(fixedTime.Add(time.Second))} {
		typ := CmdUpdate
		if i == 0 {
			typ = CmdCreate
		}
		if r := asResult(t, f.Apply(cmdLog(uint64(i+1), &Command{Type: typ, Resource: "leasecandidates", Object: data}))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	evs, _, _, _ := eventsSince(f.State(), 1)
	if len(evs) != 1 || evs[0].Prior == nil {
		t.Fatalf("events %+v, want one update", evs)
	}
	n, p := evs[0].Object.Obj.(*coordinationv1beta1.LeaseCandidate), evs[0].Prev().Obj.(*coordinationv1beta1.LeaseCandidate)
	s, ps := n.Spec, p.Spec
	if !sameMemory(n.Name, p.Name) || !sameMemory(string(n.UID), string(p.UID)) || !sameMemory(s.LeaseName, ps.LeaseName) ||
		!sameMemory(s.BinaryVersion, ps.BinaryVersion) || !sameMemory(s.EmulationVersion, ps.EmulationVersion) ||
		!sameMemory(string(s.Strategy), string(ps.Strategy)) || s.PingTime != ps.PingTime {
		t.Errorf("unchanged values not shared: %+v, previous %+v", s, ps)
	}
	if s.RenewTime == ps.RenewTime {
		t.Error("the renewed time is shared with the previous version")
	}
	// A snapshot writes a LeaseCandidate's versions whole, and they read
	// back as they were.
	dst := newFSM(state.DefaultConfig())
	restoreFrom(t, dst, persist(t, f))
	requireSameDump(t, "restored", canonicalDump(t, f), canonicalDump(t, dst))
}
