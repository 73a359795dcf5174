package fsm

import (
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/fsm/state"
)

// A result decoded on another node says what the leader's FSM said.
func TestResultRoundTrip(t *testing.T) {
	f := newFSM(state.Config{})
	out := f.ApplyBatch([]*raft.Log{
		cmdLog(1, create(t, "ns", "a", "u1", "x")),
		cmdLog(2, updateCmd(t, "ns", "a", "u1", "y", 1, "")),
		cmdLog(3, updateCmd(t, "ns", "a", "u1", "z", 1, "")), // refused: conflict
		cmdLog(4, updateCmd(t, "ns", "a", "u1", "y", 2, "")), // no change
		cmdLog(5, deleteCmd("ns", "a", 0, "u2")),             // refused: uid
		cmdLog(6, deleteCmd("ns", "a", 0, "")),
		cmdLog(7, &Command{Type: CmdNoop}),
	})
	other := newFSM(state.Config{})
	for i, v := range out {
		want := asResult(t, v)
		b, err := EncodeResult(want)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		got, err := other.DecodeResult(b)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(got.Err, want.Err) {
			t.Errorf("entry %d: error %#v, want %#v", i+1, got.Err, want.Err)
		}
		if (got.Object == nil) != (want.Object == nil) {
			t.Fatalf("entry %d: object %v, want %v", i+1, got.Object, want.Object)
		}
		if want.Object == nil {
			continue
		}
		g, w := got.Object, want.Object
		if g.Key() != w.Key() || g.RV != w.RV || g.UID() != w.UID() {
			t.Errorf("entry %d: object %v rv %d uid %s, want %v rv %d uid %s", i+1, g.Key(), g.RV, g.UID(), w.Key(), w.RV, w.UID())
		}
		if !reflect.DeepEqual(g.Obj, w.Obj) {
			t.Errorf("entry %d: decoded object differs:\n%v\nwant\n%v", i+1, g.Obj, w.Obj)
		}
	}
	if _, err := other.DecodeResult([]byte{2, 1}); err == nil {
		t.Error("a truncated result decoded")
	}
}
