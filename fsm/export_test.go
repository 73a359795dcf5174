package fsm

import (
	"bytes"
	"testing"

	"github.com/leasehold/leasehold/fsm/state"
)

// A dump taken outside Raft writes what Raft's snapshot of the same state
// persists, and ReadSnapshot gives back the same state.
func TestDumpWritesThePersistedSnapshot(t *testing.T) {
	src := newFSM(state.DefaultConfig())
	populate(t, src)
	want := persist(t, src)

	d := DumpState(src.State())
	if d.Index() != 13 || len(d.Objects()) != 4 {
		t.Fatalf("dump at %d with %d objects, want 13 and 4", d.Index(), len(d.Objects()))
	}
	var got bytes.Buffer
	if err := d.Write(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("dump wrote %d bytes that differ from the %d Persist wrote", got.Len(), len(want))
	}
	if err := d.Write(&got); err == nil {
		t.Error("a dump was written twice")
	}

	st, err := ReadSnapshot(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	requireSameDump(t, "read back", canonicalDump(t, src), canonicalDump(t, New(st, DefaultTypes(), nil)))

	for _, n := range []int{0, 7, len(want) / 2, len(want) - 1} {
		if _, err := ReadSnapshot(bytes.NewReader(want[:n])); err == nil {
			t.Errorf("a snapshot cut to %d of %d bytes read without error", n, len(want))
		}
	}
}

// A rebased dump restores its objects at their own resourceVersions into
// a state at the new index with nothing to resume from below it.
func TestDumpRebase(t *testing.T) {
	src := newFSM(state.DefaultConfig())
	populate(t, src)
	d := DumpState(src.State())
	if err := d.Rebase(12); err == nil {
		t.Fatal("rebased below the dump's index")
	}
	if err := d.Rebase(1013); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.Write(&buf); err != nil {
		t.Fatal(err)
	}
	st, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	objs, history, dropped, applied := st.Dump()
	if applied != 1013 || dropped != 1013 || history.Len() != 0 {
		t.Fatalf("applied %d, dropped %d, %d events; want 1013, 1013, none", applied, dropped, history.Len())
	}
	srcObjs, _, _, _ := src.State().Dump()
	if len(objs) != len(srcObjs) {
		t.Fatalf("%d objects, want %d", len(objs), len(srcObjs))
	}
	for i, o := range srcObjs {
		r := objs[i]
		if r.Key() != o.Key() || r.RV != o.RV || objRV(t, r) != objRV(t, o) || !bytes.Equal(dataOf(t, r), dataOf(t, o)) {
			t.Errorf("rebased %s at %d, want %s at %d", r.Key(), r.RV, o.Key(), o.RV)
		}
	}
	for _, rv := range []uint64{0, 5, 13, 1012} {
		if since := st.EventsSince(rv); !since.Expired {
			t.Errorf("events since %d: not expired", rv)
		}
		if _, ok := st.SnapshotAt(rv); ok {
			t.Errorf("state at %d: still readable", rv)
		}
	}
	if since := st.EventsSince(1013); since.Expired || len(since.Events) != 0 {
		t.Errorf("events since 1013: %+v", since)
	}
}
