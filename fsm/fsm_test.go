package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm/state"
)

var fixedTime = time.Date(2024, 3, 4, 5, 6, 7, 8000, time.UTC)

func ptrTo[T any](v T) *T { return &v }

// leaseBytes is a Lease's protobuf encoding with resourceVersion unset, as
// the proposer puts it into a command.
func leaseBytes(t testing.TB, ns, name, uid, holder string) []byte {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         ns,
			Name:              name,
			UID:               types.UID(uid),
			CreationTimestamp: metav1.NewTime(fixedTime.Truncate(time.Second)),
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptrTo(holder),
			LeaseDurationSeconds: ptrTo[int32](15),
			RenewTime:            &metav1.MicroTime{Time: fixedTime.Truncate(time.Microsecond)},
			LeaseTransitions:     ptrTo[int32](2),
		},
	}
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newFSM(cfg state.Config) *FSM {
	return New(state.New(cfg), DefaultTypes(), nil)
}

func appendedAt(idx uint64) time.Time { return fixedTime.Add(time.Duration(idx) * time.Second) }

func cmdLog(idx uint64, c *Command) *raft.Log {
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: c.Encode(), AppendedAt: appendedAt(idx)}
}

func configLog(idx uint64) *raft.Log {
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogConfiguration, Data: []byte("not a command"), AppendedAt: appendedAt(idx)}
}

func create(t testing.TB, ns, name, uid, holder string) *Command {
	return &Command{Type: CmdCreate, Resource: "leases", Object: leaseBytes(t, ns, name, uid, holder)}
}

func updateCmd(t testing.TB, ns, name, uid, holder string, expectRV uint64, expectUID string) *Command {
	return &Command{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, ns, name, uid, holder), ExpectRV: expectRV, ExpectUID: expectUID}
}

func deleteCmd(ns, name string, expectRV uint64, expectUID string) *Command {
	return &Command{Type: CmdDelete, Resource: "leases", Namespace: ns, Name: name, ExpectRV: expectRV, ExpectUID: expectUID}
}

func leaseKey(ns, name string) state.Key {
	return state.Key{Resource: "leases", Namespace: ns, Name: name}
}

func asResult(t testing.TB, v interface{}) *Result {
	t.Helper()
	r, ok := v.(*Result)
	if !ok || r == nil {
		t.Fatalf("apply returned %T %v, want *Result", v, v)
	}
	return r
}

func stateErr(t testing.TB, err error) *state.Error {
	t.Helper()
	se, ok := err.(*state.Error)
	if !ok {
		t.Fatalf("error %v (%T) is not a *state.Error", err, err)
	}
	return se
}

// eventsSince unpacks EventsSince; ok is !Expired.
func eventsSince(s *state.Store, rv uint64) (evs []state.Event, applied uint64, ok bool, oldest uint64) {
	r := s.EventsSince(rv)
	return r.Events, r.Applied, !r.Expired, r.Oldest
}

// dataOf is the object's stored encoding, kept or derived.
func dataOf(t testing.TB, o *state.Object) []byte {
	t.Helper()
	b, err := appendStored(nil, o, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func objRV(t testing.TB, o *state.Object) string {
	t.Helper()
	m, err := meta.Accessor(o.Obj)
	if err != nil {
		t.Fatal(err)
	}
	return m.GetResourceVersion()
}

// applyMode is a way of feeding entries to the FSM; results must not
// depend on it.
type applyMode struct {
	name string
	run  func(f *FSM, logs []*raft.Log) []interface{}
}

var applyModes = []applyMode{
	{"Apply", func(f *FSM, logs []*raft.Log) []interface{} {
		out := make([]interface{}, len(logs))
		for i, l := range logs {
			out[i] = f.Apply(l)
		}
		return out
	}},
	{"ApplyBatch/each", func(f *FSM, logs []*raft.Log) []interface{} {
		var out []interface{}
		for _, l := range logs {
			out = append(out, f.ApplyBatch([]*raft.Log{l})...)
		}
		return out
	}},
	{"ApplyBatch/one", func(f *FSM, logs []*raft.Log) []interface{} {
		return f.ApplyBatch(logs)
	}},
}

func TestApplyCommands(t *testing.T) {
	const (
		u1 = "uid-1"
		u2 = "uid-2"
	)
	type want struct {
		code   state.ErrorCode // 0: the write succeeded
		errRV  uint64          // stored RV reported with the error
		errUID string
		rv     uint64 // RV of the result object (0: no object)
		data   []byte // Data of the result object
		event  state.EventType
		// stored is the object's Data after the entry (nil: absent), rv its RV.
		stored   []byte
		storedRV uint64
	}
	tests := []struct {
		name  string
		setup []*Command // applied at indexes 1..len(setup), must all succeed
		cmd   *Command   // nil: a configuration entry
		want  want
	}{
		{
			name: "create",
			cmd:  create(t, "ns", "x", u1, "a"),
			want: want{rv: 1, data: leaseBytes(t, "ns", "x", u1, "a"), event: state.Added, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "create existing key",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   create(t, "ns", "x", u2, "b"),
			want:  want{code: state.AlreadyExists, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "create existing key with identical object",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   create(t, "ns", "x", u1, "a"),
			want:  want{code: state.AlreadyExists, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "create same name in another namespace",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   create(t, "ns-2", "x", u2, "a"),
			want:  want{rv: 2, data: leaseBytes(t, "ns-2", "x", u2, "a"), event: state.Added, stored: leaseBytes(t, "ns-2", "x", u2, "a"), storedRV: 2},
		},
		{
			name:  "update with matching rv",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 1, ""),
			want:  want{rv: 2, data: leaseBytes(t, "ns", "x", u1, "b"), event: state.Modified, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "update without preconditions",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "c", 0, ""),
			want:  want{rv: 3, data: leaseBytes(t, "ns", "x", u1, "c"), event: state.Modified, stored: leaseBytes(t, "ns", "x", u1, "c"), storedRV: 3},
		},
		{
			name:  "update with matching rv and uid",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 1, u1),
			want:  want{rv: 2, data: leaseBytes(t, "ns", "x", u1, "b"), event: state.Modified, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "update with stale rv",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 1, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "c", 1, ""),
			want:  want{code: state.Conflict, errRV: 2, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "update with rv from the future",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u1, "c", 99, ""),
			want:  want{code: state.Conflict, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "update with expected uid mismatch",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 0, u2),
			want:  want{code: state.UIDMismatch, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "update with uid mismatch and stale rv reports the uid",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "c", 1, u2),
			want:  want{code: state.UIDMismatch, errRV: 2, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "update whose object has another uid",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u2, "b", 1, ""),
			want:  want{code: state.UIDMismatch, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name: "update of missing object",
			cmd:  updateCmd(t, "ns", "x", u1, "b", 0, ""),
			want: want{code: state.NotFound},
		},
		{
			name:  "update of deleted object",
			setup: []*Command{create(t, "ns", "x", u1, "a"), deleteCmd("ns", "x", 0, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 1, ""),
			want:  want{code: state.NotFound},
		},
		{
			name:  "update with identical object",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 0, ""),
			want:  want{rv: 2, data: leaseBytes(t, "ns", "x", u1, "b"), stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "update with identical object and matching preconditions",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   updateCmd(t, "ns", "x", u1, "a", 1, u1),
			want:  want{rv: 1, data: leaseBytes(t, "ns", "x", u1, "a"), stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "update with identical object and stale rv",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   updateCmd(t, "ns", "x", u1, "b", 1, ""),
			want:  want{code: state.Conflict, errRV: 2, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "delete",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   deleteCmd("ns", "x", 0, ""),
			want:  want{rv: 3, data: leaseBytes(t, "ns", "x", u1, "b"), event: state.Deleted},
		},
		{
			name:  "delete with matching preconditions",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   deleteCmd("ns", "x", 2, u1),
			want:  want{rv: 3, data: leaseBytes(t, "ns", "x", u1, "b"), event: state.Deleted},
		},
		{
			name:  "delete with stale rv",
			setup: []*Command{create(t, "ns", "x", u1, "a"), updateCmd(t, "ns", "x", u1, "b", 0, "")},
			cmd:   deleteCmd("ns", "x", 1, ""),
			want:  want{code: state.Conflict, errRV: 2, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "b"), storedRV: 2},
		},
		{
			name:  "delete with uid mismatch",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   deleteCmd("ns", "x", 1, u2),
			want:  want{code: state.UIDMismatch, errRV: 1, errUID: u1, stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name: "delete of missing object",
			cmd:  deleteCmd("ns", "x", 0, ""),
			want: want{code: state.NotFound},
		},
		{
			name:  "delete twice",
			setup: []*Command{create(t, "ns", "x", u1, "a"), deleteCmd("ns", "x", 0, "")},
			cmd:   deleteCmd("ns", "x", 0, ""),
			want:  want{code: state.NotFound},
		},
		{
			name:  "delete in another namespace",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   deleteCmd("ns-2", "x", 0, ""),
			want:  want{code: state.NotFound},
		},
		{
			name:  "create after delete",
			setup: []*Command{create(t, "ns", "x", u1, "a"), deleteCmd("ns", "x", 0, "")},
			cmd:   create(t, "ns", "x", u2, "a"),
			want:  want{rv: 3, data: leaseBytes(t, "ns", "x", u2, "a"), event: state.Added, stored: leaseBytes(t, "ns", "x", u2, "a"), storedRV: 3},
		},
		{
			name:  "noop",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   &Command{Type: CmdNoop},
			want:  want{stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
		{
			name:  "configuration entry",
			setup: []*Command{create(t, "ns", "x", u1, "a")},
			cmd:   nil,
			want:  want{stored: leaseBytes(t, "ns", "x", u1, "a"), storedRV: 1},
		},
	}
	for _, tt := range tests {
		for _, mode := range applyModes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				f := newFSM(state.DefaultConfig())
				var logs []*raft.Log
				for i, c := range tt.setup {
					logs = append(logs, cmdLog(uint64(i+1), c))
				}
				idx := uint64(len(tt.setup) + 1)
				if tt.cmd != nil {
					logs = append(logs, cmdLog(idx, tt.cmd))
				} else {
					logs = append(logs, configLog(idx))
				}
				out := mode.run(f, logs)
				if len(out) != len(logs) {
					t.Fatalf("%d results for %d entries", len(out), len(logs))
				}
				for i := range tt.setup {
					if r := asResult(t, out[i]); r.Err != nil {
						t.Fatalf("setup entry %d: %v", i+1, r.Err)
					}
				}
				st := f.State()
				if got := st.AppliedIndex(); got != idx {
					t.Fatalf("applied index %d, want %d", got, idx)
				}
				k := leaseKey("ns", "x")
				if tt.cmd != nil && tt.cmd.Type != CmdNoop {
					if tt.cmd.Type == CmdDelete {
						k = leaseKey(tt.cmd.Namespace, tt.cmd.Name)
					} else {
						k = leaseKey(objectKey(t, tt.cmd))
					}
				}
				before, ok := st.SnapshotAt(idx - 1)
				if !ok {
					t.Fatalf("no view at %d", idx-1)
				}
				prev := before.Get(k)

				if tt.cmd == nil {
					if out[len(out)-1] != nil {
						t.Fatalf("configuration entry returned %v, want nil", out[len(out)-1])
					}
				} else {
					res := asResult(t, out[len(out)-1])
					checkResult(t, res, k, prev, tt.want.code, tt.want.errRV, tt.want.errUID, tt.want.rv, tt.want.data)
				}

				// The state after the entry.
				cur := st.Snapshot()
				if cur.Index != idx {
					t.Fatalf("snapshot index %d, want %d", cur.Index, idx)
				}
				got := cur.Get(k)
				switch {
				case tt.want.stored == nil && got != nil:
					t.Fatalf("%s still stored after entry: rv %d", k, got.RV)
				case tt.want.stored != nil && got == nil:
					t.Fatalf("%s not stored after entry", k)
				case got != nil:
					if got.RV != tt.want.storedRV || !bytes.Equal(dataOf(t, got), tt.want.stored) {
						t.Fatalf("stored rv %d data %x, want rv %d data %x", got.RV, dataOf(t, got), tt.want.storedRV, tt.want.stored)
					}
					if rv := objRV(t, got); rv != strconv.FormatUint(got.RV, 10) {
						t.Fatalf("stored object has resourceVersion %q, want %d", rv, got.RV)
					}
					if got.Key() != k {
						t.Fatalf("stored key %v, want %v", got.Key(), k)
					}
				}
				if tt.want.code != 0 || tt.want.event == "" {
					// Refused writes and no-ops change nothing.
					if got != prev {
						t.Fatalf("object replaced by an entry that changed nothing: %+v -> %+v", prev, got)
					}
				}
				// The entry's event, if any.
				evs, applied, ok, _ := eventsSince(st, idx-1)
				if !ok || applied != idx {
					t.Fatalf("EventsSince(%d): ok=%v applied=%d", idx-1, ok, applied)
				}
				if tt.want.event == "" {
					if len(evs) != 0 {
						t.Fatalf("unexpected events %+v", evs)
					}
					return
				}
				if len(evs) != 1 {
					t.Fatalf("%d events, want 1: %+v", len(evs), evs)
				}
				e := evs[0]
				if e.Type != tt.want.event || e.RV != idx || e.Object.RV != idx || e.At != appendedAt(idx).UnixNano() {
					t.Fatalf("event %s rv %d (object rv %d) at %d, want %s rv %d at %d", e.Type, e.RV, e.Object.RV, e.At, tt.want.event, idx, appendedAt(idx).UnixNano())
				}
				if e.Object.Key() != k || !bytes.Equal(dataOf(t, e.Object), tt.want.data) {
					t.Fatalf("event object %v data %x, want %v %x", e.Object.Key(), dataOf(t, e.Object), k, tt.want.data)
				}
				// The object stored before, or a rebuilt equal (see
				// state.Prior).
				sameObject(t, "event prev", prev, e.Prev())
			})
		}
	}
}

// objectKey returns the namespace and name inside a create or update's
// object.
func objectKey(t testing.TB, c *Command) (string, string) {
	t.Helper()
	var l coordinationv1.Lease
	if err := l.Unmarshal(c.Object); err != nil {
		t.Fatal(err)
	}
	return l.Namespace, l.Name
}

func checkResult(t *testing.T, res *Result, k state.Key, prev *state.Object, code state.ErrorCode, errRV uint64, errUID string, rv uint64, data []byte) {
	t.Helper()
	if code != 0 {
		if res.Err == nil {
			t.Fatalf("no error, want %v", code)
		}
		se := stateErr(t, res.Err)
		if se.Code != code || se.RV != errRV || se.UID != errUID || se.Key != k {
			t.Fatalf("error %+v, want code %v rv %d uid %q key %v", se, code, errRV, errUID, k)
		}
		if state.Code(res.Err) != code {
			t.Fatalf("state.Code = %v", state.Code(res.Err))
		}
		if res.Object != nil {
			t.Fatalf("refused write returned an object: %+v", res.Object)
		}
		return
	}
	if res.Err != nil {
		t.Fatalf("unexpected error: %v", res.Err)
	}
	if rv == 0 {
		if res.Object != nil {
			t.Fatalf("result object %+v, want none", res.Object)
		}
		return
	}
	o := res.Object
	if o == nil {
		t.Fatal("no result object")
	}
	if o.RV != rv || o.Key() != k || !bytes.Equal(dataOf(t, o), data) {
		t.Fatalf("result %v rv %d data %x, want %v rv %d data %x", o.Key(), o.RV, dataOf(t, o), k, rv, data)
	}
	if got := objRV(t, o); got != strconv.FormatUint(rv, 10) {
		t.Fatalf("result object resourceVersion %q, want %d", got, rv)
	}
	l, ok := o.Obj.(*coordinationv1.Lease)
	if !ok {
		t.Fatalf("result object is %T", o.Obj)
	}
	var in coordinationv1.Lease
	if err := in.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	if l.UID != in.UID || string(l.UID) != o.UID() || l.Name != k.Name || l.Namespace != k.Namespace {
		t.Fatalf("result object uid %q (stored %q) %s/%s, want uid %q", l.UID, o.UID(), l.Namespace, l.Name, in.UID)
	}
	if *l.Spec.HolderIdentity != *in.Spec.HolderIdentity {
		t.Fatalf("result object holder %q, want %q", *l.Spec.HolderIdentity, *in.Spec.HolderIdentity)
	}
	if prev != nil && prev.Obj == o.Obj && prev.RV != o.RV {
		t.Fatal("result shares its decoded object with the previous version")
	}
}

func TestDeleteTombstone(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	f.Apply(cmdLog(1, create(t, "ns", "x", "u1", "a")))
	before := f.State().Snapshot().Get(leaseKey("ns", "x"))
	res := asResult(t, f.Apply(cmdLog(7, deleteCmd("ns", "x", 1, "u1"))))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	tomb := res.Object
	if tomb.RV != 7 || tomb.UID() != "u1" || tomb.Key() != leaseKey("ns", "x") || !bytes.Equal(dataOf(t, tomb), dataOf(t, before)) {
		t.Fatalf("tombstone %+v", tomb)
	}
	if rv := objRV(t, tomb); rv != "7" {
		t.Fatalf("tombstone resourceVersion %q, want 7", rv)
	}
	// The stored (and shared) object of the last state is not mutated.
	if before.RV != 1 || objRV(t, before) != "1" {
		t.Fatalf("deleting mutated the stored object: rv %d, resourceVersion %q", before.RV, objRV(t, before))
	}
	if old, _ := f.State().SnapshotAt(1); old.Get(leaseKey("ns", "x")) != before {
		t.Fatal("view at 1 lost the object")
	}
	if got := f.State().Snapshot().Get(leaseKey("ns", "x")); got != nil {
		t.Fatalf("object still stored: %+v", got)
	}
	if n := f.State().Snapshot().Count("leases"); n != 0 {
		t.Fatalf("count %d after delete", n)
	}
}

// TestApplyBatch applies several entries of every kind in one batch.
func TestApplyBatch(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	st := f.State()
	f.Apply(cmdLog(1, create(t, "ns", "gone", "ug", "a")))
	changed := st.Changed()

	logs := []*raft.Log{
		cmdLog(2, create(t, "ns", "x", "u1", "a")),
		cmdLog(3, updateCmd(t, "ns", "x", "u1", "b", 2, "u1")), // sees the create of this batch
		configLog(4),
		cmdLog(5, updateCmd(t, "ns", "x", "u1", "b", 3, "")), // no-op
		cmdLog(6, create(t, "ns", "x", "u2", "c")),           // AlreadyExists
		cmdLog(7, &Command{Type: CmdNoop}),
		cmdLog(8, deleteCmd("ns", "gone", 1, "")),
		cmdLog(9, create(t, "ns", "y", "u3", "a")),
		cmdLog(10, updateCmd(t, "ns", "x", "u1", "c", 2, "")), // Conflict (stored 3)
		configLog(11),
	}
	out := f.ApplyBatch(logs)
	if len(out) != len(logs) {
		t.Fatalf("%d results for %d entries", len(out), len(logs))
	}
	type summary struct {
		code state.ErrorCode
		rv   uint64
	}
	want := []*summary{{0, 2}, {0, 3}, nil, {0, 3}, {state.AlreadyExists, 0}, {0, 0}, {0, 8}, {0, 9}, {state.Conflict, 0}, nil}
	for i, w := range want {
		if w == nil {
			if out[i] != nil {
				t.Errorf("entry %d: %v, want nil", logs[i].Index, out[i])
			}
			continue
		}
		r := asResult(t, out[i])
		var got summary
		got.code = state.Code(r.Err)
		if r.Object != nil {
			got.rv = r.Object.RV
		}
		if got != *w {
			t.Errorf("entry %d: result %+v (err %v), want %+v", logs[i].Index, got, r.Err, *w)
		}
	}

	select {
	case <-changed:
	default:
		t.Fatal("Changed channel not closed by the batch")
	}
	if st.AppliedIndex() != 11 {
		t.Fatalf("applied %d, want 11", st.AppliedIndex())
	}
	evs, applied, ok, _ := eventsSince(st, 1)
	if !ok || applied != 11 {
		t.Fatalf("EventsSince: ok=%v applied=%d", ok, applied)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %d %s", e.Type, e.RV, e.Object.Key().Name))
	}
	wantEvs := []string{"ADDED 2 x", "MODIFIED 3 x", "DELETED 8 gone", "ADDED 9 y"}
	if strings.Join(got, ",") != strings.Join(wantEvs, ",") {
		t.Fatalf("events %q, want %q", got, wantEvs)
	}

	// Every index of the batch has a read view showing the state right
	// after it.
	wantAt := map[uint64]string{
		1: "gone@1", 2: "gone@1 x@2", 3: "gone@1 x@3", 4: "gone@1 x@3", 5: "gone@1 x@3", 6: "gone@1 x@3",
		7: "gone@1 x@3", 8: "x@3", 9: "x@3 y@9", 10: "x@3 y@9", 11: "x@3 y@9",
	}
	for idx := uint64(1); idx <= 11; idx++ {
		sn, ok := st.SnapshotAt(idx)
		if !ok {
			t.Fatalf("no view at %d", idx)
		}
		if sn.Index != idx {
			t.Fatalf("view at %d has index %d", idx, sn.Index)
		}
		var objs []string
		sn.List("leases", "", nil, func(o *state.Object) bool {
			objs = append(objs, fmt.Sprintf("%s@%d", o.Key().Name, o.RV))
			return true
		})
		if g := strings.Join(objs, " "); g != wantAt[idx] {
			t.Errorf("view at %d: %q, want %q", idx, g, wantAt[idx])
		}
	}
}

func TestApplyOnlyConfigurationEntries(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	f.Apply(cmdLog(1, create(t, "ns", "x", "u1", "a")))
	ch := f.State().Changed()
	out := f.ApplyBatch([]*raft.Log{configLog(2), configLog(3)})
	if out[0] != nil || out[1] != nil {
		t.Fatalf("results %v", out)
	}
	if got := f.Apply(configLog(4)); got != nil {
		t.Fatalf("Apply(config) = %v", got)
	}
	st := f.State()
	if st.AppliedIndex() != 4 {
		t.Fatalf("applied %d, want 4", st.AppliedIndex())
	}
	select {
	case <-ch:
	default:
		t.Fatal("waiters not woken by configuration entries")
	}
	if evs, _, _, _ := eventsSince(st, 1); len(evs) != 0 {
		t.Fatalf("events %+v", evs)
	}
	if o := st.Snapshot().Get(leaseKey("ns", "x")); o == nil || o.RV != 1 {
		t.Fatalf("object %+v", o)
	}
}

func TestUnknownCommandTypes(t *testing.T) {
	for _, typ := range []CommandType{0, 5, 0x7f} {
		t.Run(fmt.Sprintf("panic/%#x", uint8(typ)), func(t *testing.T) {
			f := newFSM(state.DefaultConfig())
			msg := mustPanic(t, func() { f.Apply(cmdLog(1, &Command{Type: typ, Resource: "leases"})) })
			if !strings.Contains(msg, fmt.Sprintf("unknown command type %d", uint8(typ))) {
				t.Fatalf("panic %q", msg)
			}
		})
	}
	for _, typ := range []CommandType{0x80, 0x85, 0xff} {
		for _, mode := range applyModes {
			t.Run(fmt.Sprintf("skip/%#x/%s", uint8(typ), mode.name), func(t *testing.T) {
				f := newFSM(state.DefaultConfig())
				unknown := cmdLog(2, &Command{})
				// Fields the FSM would choke on, and unknown tags.
				unknown.Data = enc{byte(typ)}.uv(3).
					field(tagResource, []byte("pods")).
					field(tagObject, []byte{0xff, 0xff}).
					field(77, []byte("future"))
				out := mode.run(f, []*raft.Log{cmdLog(1, create(t, "ns", "x", "u1", "a")), unknown, cmdLog(3, updateCmd(t, "ns", "x", "u1", "b", 1, ""))})
				r := asResult(t, out[1])
				if r.Err != nil || r.Object != nil {
					t.Fatalf("skipped entry result %+v", r)
				}
				if r := asResult(t, out[2]); r.Err != nil || r.Object.RV != 3 {
					t.Fatalf("entry after the skipped one: %+v", r)
				}
				if f.State().AppliedIndex() != 3 {
					t.Fatalf("applied %d", f.State().AppliedIndex())
				}
				if evs, _, _, _ := eventsSince(f.State(), 0); len(evs) != 2 {
					t.Fatalf("events %+v", evs)
				}
			})
		}
	}
}

func TestMalformedEntriesPanic(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated command"},
		{"truncated", (&Command{Type: CmdDelete, Resource: "leases", Name: "x"}).Encode()[:5], "truncated command"},
		{"unknown resource", (&Command{Type: CmdCreate, Resource: "pods", Object: leaseBytes(t, "ns", "x", "u", "a")}).Encode(), `unknown resource "pods"`},
		{"bad object", (&Command{Type: CmdCreate, Resource: "leases", Object: []byte{0xff, 0xff}}).Encode(), "decode leases"},
		{"bad object on update", (&Command{Type: CmdUpdate, Resource: "leases", Object: []byte{0x0a, 0x05}}).Encode(), "decode leases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFSM(state.DefaultConfig())
			msg := mustPanic(t, func() {
				f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: tt.data, AppendedAt: fixedTime})
			})
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "entry 1") {
				t.Fatalf("panic %q, want it to name entry 1 and contain %q", msg, tt.want)
			}
		})
	}
}

func mustPanic(t *testing.T, fn func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg = fmt.Sprint(r)
	}()
	fn()
	return ""
}

// ---- determinism ----

// genCommands returns n log entries over a small key space, with many
// refused writes (stale rv, wrong uid, existing or missing keys), no-op
// updates, noops, configuration and skippable unknown entries.
func genCommands(t testing.TB, seed int64, first uint64, n int, m *model) []*raft.Log {
	rng := rand.New(rand.NewSource(seed))
	namespaces := []string{"a", "a-b", "b"}
	names := []string{"x", "x-y", "y"}
	var logs []*raft.Log
	for i := 0; i < n; i++ {
		idx := first + uint64(i)
		ns, name := namespaces[rng.Intn(len(namespaces))], names[rng.Intn(len(names))]
		k := leaseKey(ns, name)
		uid := fmt.Sprintf("uid-%s-%s-%d", ns, name, rng.Intn(2))
		holder := fmt.Sprintf("h%d", rng.Intn(3))
		cur, exists := m.objs[k]
		if exists && rng.Intn(3) > 0 {
			uid = cur.uid // mostly the right uid
		}
		var expectRV uint64
		switch rng.Intn(4) {
		case 0, 1:
		case 2:
			if exists {
				expectRV = cur.rv
			}
		case 3:
			expectRV = uint64(rng.Int63n(int64(idx)) + 1)
		}
		var expectUID string
		switch rng.Intn(4) {
		case 0:
			expectUID = uid
		case 1:
			expectUID = "uid-wrong"
		}
		var c *Command
		switch p := rng.Intn(100); {
		case p < 25:
			c = create(t, ns, name, uid, holder)
		case p < 65:
			c = updateCmd(t, ns, name, uid, holder, expectRV, expectUID)
		case p < 85:
			c = deleteCmd(ns, name, expectRV, expectUID)
		case p < 90:
			c = &Command{Type: CmdNoop}
		case p < 95:
			c = &Command{Type: skippable | CommandType(rng.Intn(0x7f)), Resource: "leases", Name: name}
		default:
			c = nil
		}
		var l *raft.Log
		if c == nil {
			l = configLog(idx)
		} else {
			l = cmdLog(idx, c)
		}
		l.AppendedAt = fixedTime.Add(time.Duration(idx*idx) * time.Millisecond)
		logs = append(logs, l)
		m.apply(t, idx, c)
	}
	return logs
}

// model is the reference semantics of the FSM, to check results against.
type model struct {
	objs    map[state.Key]modelObj
	results []string
	events  int
}

type modelObj struct {
	rv   uint64
	uid  string
	data []byte
}

func newModel() *model { return &model{objs: map[state.Key]modelObj{}} }

func (m *model) apply(t testing.TB, idx uint64, c *Command) {
	if c == nil {
		m.results = append(m.results, "nil")
		return
	}
	refuse := func(code state.ErrorCode, k state.Key) {
		cur := m.objs[k]
		m.results = append(m.results, fmt.Sprintf("err %v %v rv=%d uid=%s", code, k, cur.rv, cur.uid))
	}
	check := func(k state.Key) bool {
		cur, ok := m.objs[k]
		switch {
		case !ok:
			refuse(state.NotFound, k)
		case c.ExpectUID != "" && c.ExpectUID != cur.uid:
			refuse(state.UIDMismatch, k)
		case c.ExpectRV != 0 && c.ExpectRV != cur.rv:
			refuse(state.Conflict, k)
		default:
			return true
		}
		return false
	}
	ok := func(k state.Key, rv uint64) {
		m.results = append(m.results, fmt.Sprintf("ok %v rv=%d", k, rv))
	}
	switch c.Type {
	case CmdCreate, CmdUpdate:
		var l coordinationv1.Lease
		if err := l.Unmarshal(c.Object); err != nil {
			t.Fatal(err)
		}
		k := leaseKey(l.Namespace, l.Name)
		cur, exists := m.objs[k]
		if c.Type == CmdCreate {
			if exists {
				refuse(state.AlreadyExists, k)
				return
			}
			m.objs[k] = modelObj{idx, string(l.UID), c.Object}
			m.events++
			ok(k, idx)
			return
		}
		if !check(k) {
			return
		}
		if string(l.UID) != cur.uid {
			refuse(state.UIDMismatch, k)
			return
		}
		if bytes.Equal(c.Object, cur.data) {
			ok(k, cur.rv)
			return
		}
		m.objs[k] = modelObj{idx, cur.uid, c.Object}
		m.events++
		ok(k, idx)
	case CmdDelete:
		k := leaseKey(c.Namespace, c.Name)
		if !check(k) {
			return
		}
		delete(m.objs, k)
		m.events++
		ok(k, idx)
	default:
		m.results = append(m.results, "ok")
	}
}

func summarize(v interface{}) string {
	if v == nil {
		return "nil"
	}
	r := v.(*Result)
	if r.Err != nil {
		se := r.Err.(*state.Error)
		return fmt.Sprintf("err %v %v rv=%d uid=%s", se.Code, se.Key, se.RV, se.UID)
	}
	if r.Object == nil {
		return "ok"
	}
	return fmt.Sprintf("ok %v rv=%d", r.Object.Key(), r.Object.RV)
}

// canonicalDump serializes everything an FSM's state holds that must be
// identical on every node: objects, applied index, the history and the RV
// of the newest event dropped from it.
func canonicalDump(t testing.TB, f *FSM) []byte {
	t.Helper()
	objs, history, dropped, applied := f.State().Dump()
	events := history.Events()
	var b bytes.Buffer
	obj := func(o *state.Object) {
		if o == nil {
			b.WriteString("  -\n")
			return
		}
		fmt.Fprintf(&b, "  %q %q %q rv=%d uid=%q objrv=%s data=%x\n",
			o.Key().Resource, o.Key().Namespace, o.Key().Name, o.RV, o.UID(), objRV(t, o), dataOf(t, o))
	}
	fmt.Fprintf(&b, "applied=%d dropped=%d objects=%d events=%d\n", applied, dropped, len(objs), len(events))
	for _, o := range objs {
		obj(o)
	}
	for _, e := range events {
		fmt.Fprintf(&b, "event %s rv=%d at=%d\n", e.Type, e.RV, e.At)
		obj(e.Object)
		obj(e.Prev())
	}
	return b.Bytes()
}

func requireSameDump(t *testing.T, what string, a, b []byte) {
	t.Helper()
	if bytes.Equal(a, b) {
		return
	}
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Fatalf("%s: dumps differ at line %d:\n%s\n%s", what, i+1, x, y)
		}
	}
	t.Fatalf("%s: dumps differ", what)
}

func TestDeterminism(t *testing.T) {
	const n = 500
	// Entries are appended ever further apart (see genCommands): the
	// history is bounded by count first, then by age.
	cfg := state.Config{HistoryEvents: 40, HistoryAge: 60 * time.Second, ListSnapshots: 16}
	m := newModel()
	gen := func() []*raft.Log { return genCommands(t, 1, 1, n, newModel()) }
	logs := genCommands(t, 1, 1, n, m)

	// FSM a gets one entry at a time, b random batches, each of a fresh
	// copy of the same entries.
	a, b := newFSM(cfg), newFSM(cfg)
	var resA, resB []string
	var byCount, byAge bool
	for _, l := range gen() {
		resA = append(resA, summarize(a.Apply(l)))
		_, evs, dropped, _ := a.State().Dump()
		if dropped > 0 {
			byCount = byCount || evs.Len() == cfg.HistoryEvents
			byAge = byAge || evs.Len() < cfg.HistoryEvents/2
		}
	}
	if !byCount || !byAge {
		t.Errorf("history bounded by count: %v, by age: %v; want both in the sequence", byCount, byAge)
	}
	rng := rand.New(rand.NewSource(2))
	for logsB := gen(); len(logsB) > 0; {
		k := min(1+rng.Intn(20), len(logsB))
		for _, r := range b.ApplyBatch(logsB[:k]) {
			resB = append(resB, summarize(r))
		}
		logsB = logsB[k:]
	}

	// The sequence is worth something only if it exercises every outcome.
	counts := map[string]int{}
	for i, r := range resA {
		if r != resB[i] {
			t.Fatalf("entry %d: %q (Apply) vs %q (ApplyBatch)", i+1, r, resB[i])
		}
		if r != m.results[i] {
			t.Fatalf("entry %d (%x): %q, model says %q", i+1, logs[i].Data, r, m.results[i])
		}
		kind := strings.Fields(r)[0]
		if kind == "err" {
			kind = strings.SplitN(r, " ", 2)[1]
			kind = kind[:strings.Index(kind, " leases/")]
		}
		counts[kind]++
	}
	for _, kind := range []string{"ok", "nil", "not found", "already exists", "resource version conflict", "uid mismatch"} {
		if counts[kind] < 5 {
			t.Errorf("only %d results %q in the random sequence: %v", counts[kind], kind, counts)
		}
	}
	if m.events <= cfg.HistoryEvents {
		t.Errorf("only %d events: the history never drops", m.events)
	}

	dumpA := canonicalDump(t, a)
	requireSameDump(t, "Apply vs ApplyBatch", dumpA, canonicalDump(t, b))

	// The model agrees on the objects.
	objs, _, _, _ := a.State().Dump()
	if len(objs) != len(m.objs) {
		t.Fatalf("%d objects, model has %d", len(objs), len(m.objs))
	}
	for _, o := range objs {
		mo, ok := m.objs[o.Key()]
		if !ok || mo.rv != o.RV || mo.uid != o.UID() || !bytes.Equal(mo.data, dataOf(t, o)) {
			t.Fatalf("object %v rv %d, model has %+v", o.Key(), o.RV, mo)
		}
	}

	// A node restored from a's snapshot holds the same state, and stays in
	// step with a on the entries that follow.
	c := newFSM(cfg)
	restoreFrom(t, c, persist(t, a))
	requireSameDump(t, "snapshot", dumpA, canonicalDump(t, c))

	more := func() []*raft.Log {
		mm := newModel()
		genCommands(t, 1, 1, n, mm)
		return genCommands(t, 3, n+1, 200, mm)
	}
	for _, l := range more() {
		a.Apply(l)
	}
	c.ApplyBatch(more())
	requireSameDump(t, "after restore", canonicalDump(t, a), canonicalDump(t, c))
}

// ---- snapshots ----

// sink is a raft.SnapshotSink over a bytes.Buffer.
type sink struct {
	bytes.Buffer
	closed, cancelled bool
	failAfter         int // fail writes once the buffer holds this many bytes (0: never)
}

func (s *sink) ID() string { return "test" }

func (s *sink) Close() error {
	s.closed = true
	return nil
}

func (s *sink) Cancel() error {
	s.cancelled = true
	return nil
}

func (s *sink) Write(p []byte) (int, error) {
	if s.failAfter > 0 && s.Len()+len(p) > s.failAfter {
		return 0, fmt.Errorf("disk full")
	}
	return s.Buffer.Write(p)
}

var _ raft.SnapshotSink = (*sink)(nil)

func persist(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var s sink
	if err := snap.Persist(&s); err != nil {
		t.Fatal(err)
	}
	if !s.closed || s.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v after Persist", s.closed, s.cancelled)
	}
	return s.Bytes()
}

type readCloser struct {
	*bytes.Reader
	closed bool
}

func (r *readCloser) Close() error {
	r.closed = true
	return nil
}

func restore(t testing.TB, f *FSM, data []byte) error {
	t.Helper()
	rc := &readCloser{Reader: bytes.NewReader(data)}
	err := f.Restore(rc)
	if !rc.closed {
		t.Errorf("Restore did not close its reader (err %v)", err)
	}
	return err
}

func restoreFrom(t testing.TB, f *FSM, data []byte) {
	t.Helper()
	if err := restore(t, f, data); err != nil {
		t.Fatal(err)
	}
}

// populate applies a history with creates, updates, a no-op update,
// deletes, a refused write, noops and configuration entries.
func populate(t testing.TB, f *FSM) {
	t.Helper()
	var logs []*raft.Log
	add := func(c *Command) {
		idx := uint64(len(logs) + 1)
		if c == nil {
			logs = append(logs, configLog(idx))
		} else {
			logs = append(logs, cmdLog(idx, c))
		}
	}
	add(nil)
	add(create(t, "kube-system", "kube-scheduler", "u1", "a"))
	add(create(t, "kube-system", "kube-controller-manager", "u2", "a"))
	add(create(t, "kube-node-lease", "node-1", "u3", "node-1"))
	add(updateCmd(t, "kube-system", "kube-scheduler", "u1", "b", 2, "u1"))
	add(updateCmd(t, "kube-system", "kube-scheduler", "u1", "b", 0, ""))
	add(create(t, "default", "tmp", "u4", "a"))
	add(&Command{Type: CmdNoop})
	add(deleteCmd("default", "tmp", 0, "u4"))
	add(updateCmd(t, "kube-system", "kube-controller-manager", "u2", "c", 1, ""))
	add(create(t, "default", "tmp", "u5", "x"))
	add(updateCmd(t, "kube-node-lease", "node-1", "u3", "node-1b", 0, ""))
	add(nil)
	f.ApplyBatch(logs[:6])
	for _, l := range logs[6:] {
		f.Apply(l)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, cfg := range []state.Config{
		state.DefaultConfig(),
		{HistoryEvents: 3, ListSnapshots: 2}, // history has dropped events
	} {
		t.Run(fmt.Sprintf("history=%d", cfg.HistoryEvents), func(t *testing.T) {
			src := newFSM(cfg)
			populate(t, src)
			data := persist(t, src)

			dst := newFSM(cfg)
			restoreFrom(t, dst, data)
			s, d := src.State(), dst.State()

			if s.AppliedIndex() != 13 || d.AppliedIndex() != 13 {
				t.Fatalf("applied %d -> %d, want 13", s.AppliedIndex(), d.AppliedIndex())
			}
			ss, ds := s.Snapshot(), d.Snapshot()
			if ds.Index != 13 {
				t.Fatalf("snapshot index %d", ds.Index)
			}
			var srcObjs, dstObjs []*state.Object
			ss.List("leases", "", nil, func(o *state.Object) bool { srcObjs = append(srcObjs, o); return true })
			ds.List("leases", "", nil, func(o *state.Object) bool { dstObjs = append(dstObjs, o); return true })
			if len(srcObjs) != 4 || len(dstObjs) != len(srcObjs) {
				t.Fatalf("%d objects restored, source has %d", len(dstObjs), len(srcObjs))
			}
			for i, o := range srcObjs {
				r := dstObjs[i]
				if r.Key() != o.Key() || r.RV != o.RV || r.UID() != o.UID() || !bytes.Equal(dataOf(t, r), dataOf(t, o)) {
					t.Fatalf("restored %+v, want %+v", r, o)
				}
				if !equalLeases(o.Obj, r.Obj) {
					t.Fatalf("restored object %v decodes to\n%+v\nwant\n%+v", o.Key(), r.Obj, o.Obj)
				}
			}

			se, sApplied, sOK, sOldest := eventsSince(s, 0)
			de, dApplied, dOK, dOldest := eventsSince(d, 0)
			if sApplied != dApplied || sOK != dOK || sOldest != dOldest {
				t.Fatalf("EventsSince(0): applied %d ok %v oldest %d, source %d %v %d", dApplied, dOK, dOldest, sApplied, sOK, sOldest)
			}
			if cfg.HistoryEvents == 3 && (sOK || sOldest == 0) {
				t.Fatalf("history did not drop: ok=%v oldest=%d", sOK, sOldest)
			}
			if !sOK {
				se, _, _, _ = eventsSince(s, sOldest)
				de, _, dOK, _ = eventsSince(d, dOldest)
				if !dOK {
					t.Fatal("restored history cannot resume from its oldest RV")
				}
			}
			if len(se) == 0 || len(se) != len(de) {
				t.Fatalf("%d events restored, source has %d", len(de), len(se))
			}
			for i, e := range se {
				r := de[i]
				if r.Type != e.Type || r.RV != e.RV || r.At != e.At {
					t.Fatalf("event %d: %s %d at %d, want %s %d at %d", i, r.Type, r.RV, r.At, e.Type, e.RV, e.At)
				}
				sameObject(t, "event object", e.Object, r.Object)
				sameObject(t, "event prev", e.Prev(), r.Prev())
			}
			requireSameDump(t, "restored", canonicalDump(t, src), canonicalDump(t, dst))

			// The restored FSM goes on applying from where the source was.
			r := asResult(t, dst.Apply(cmdLog(14, updateCmd(t, "kube-system", "kube-scheduler", "u1", "c", 5, "u1"))))
			if r.Err != nil || r.Object.RV != 14 {
				t.Fatalf("update after restore: %+v", r)
			}
		})
	}
}

// TestSnapshotWritesEachVersionOnce reads a snapshot's records and counts
// the object versions written in full: one per distinct version the state
// and the history hold, however many times they mention it; also when the
// history holds replaced versions compacted, so that the snapshot writes
// versions rebuilt for it.
func TestSnapshotWritesEachVersionOnce(t *testing.T) {
	t.Run("populate", func(t *testing.T) {
		f := newFSM(state.DefaultConfig())
		populate(t, f)
		if _, changes := requireVersionsWrittenOnce(t, f); changes == 0 {
			t.Fatal("no version written as a change")
		}
	})
	t.Run("compacted", func(t *testing.T) {
		f := newFSM(state.Config{HistoryEvents: 64})
		for idx := uint64(1); idx <= 300; idx++ {
			name := fmt.Sprintf("l%d", idx%6)
			c := &Command{Type: CmdUpdate, Resource: "leases", Object: leaseBytes(t, "ns", name, "u-"+name, fmt.Sprintf("h%d", idx))}
			if idx <= 6 {
				c.Type = CmdCreate
			}
			if r := asResult(t, f.Apply(cmdLog(idx, c))); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		// A compacted object is rebuilt for each read.
		first, again := historyOf(f), historyOf(f)
		rebuilt := 0
		for i := range first {
			if first[i].Object != again[i].Object {
				rebuilt++
			}
		}
		if rebuilt == 0 {
			t.Fatal("the history holds no object compacted")
		}
		// Each Lease's current version in full, every version before it
		// in the history as the change its successor made.
		if full, changes := requireVersionsWrittenOnce(t, f); full != 6 || changes != 64 {
			t.Fatalf("%d versions written in full and %d as changes, want 6 and 64", full, changes)
		}
	})
}

// requireVersionsWrittenOnce returns how many versions the snapshot wrote
// in full and how many as changes.
func requireVersionsWrittenOnce(t *testing.T, f *FSM) (full, changes int) {
	t.Helper()
	objs, history, _, _ := f.State().Dump()
	events := history.Events()
	distinct := map[version]bool{}
	mentions := len(objs)
	for _, o := range objs {
		distinct[version{o.Key(), o.RV}] = true
	}
	for _, e := range events {
		distinct[version{e.Object.Key(), e.RV}] = true
		mentions++
		if e.Prior != nil {
			distinct[version{e.Object.Key(), e.Prev().RV}] = true
			mentions++
		}
	}
	if mentions <= len(distinct) {
		t.Fatalf("the history mentions %d versions %d times: nothing to share", len(distinct), mentions)
	}

	data := persist(t, f)
	r := &reader{b: data[len(snapMagic)+1:]}
	full, changes, refs := 0, 0, 0
	version := func(rec *reader) {
		switch rec.uvarint() {
		case mentionNew:
			full++
			rec.bytes()
			rec.bytes()
			rec.bytes()
			rec.uvarint()
			rec.bytes()
			rec.bytes()
		case mentionChange:
			changes++
			rec.uvarint()
			rec.bytes()
			for range rec.uvarint() {
				if rec.byte() > 0 {
					rec.bytes()
				}
			}
		default:
			refs++
		}
	}
	for typ := byte(0); typ != recEnd; {
		typ = r.byte()
		rec := &reader{b: r.bytes()}
		switch typ {
		case recObject:
			version(rec)
		case recEvent:
			rec.bytes()
			rec.varint()
			version(rec)
			if rec.byte() == 1 {
				version(rec)
			}
		}
		if r.err != nil || rec.err != nil {
			t.Fatalf("reading record type %d: %v %v", typ, r.err, rec.err)
		}
	}
	if full+changes != len(distinct) || full+changes+refs != mentions {
		t.Fatalf("snapshot writes %d versions in full and %d as changes and refers to %d, want %d written and %d references",
			full, changes, refs, len(distinct), mentions-len(distinct))
	}
	return full, changes
}

// TestRestoreEarlierFormats restores snapshots of populate's history
// written by earlier releases: format 1 (every mention of a version in
// full) and format 2 (events oldest first): a node upgraded in place must
// read the snapshot it has on disk.
func TestRestoreEarlierFormats(t *testing.T) {
	for format, file := range map[byte]string{1: "populate-v1.bin", 2: "populate-v2.bin", 3: "populate-v3.bin"} {
		data, err := os.ReadFile(filepath.Join("testdata", "snapshots", file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, []byte(snapMagic+string(rune(format)))) {
			t.Fatalf("golden snapshot %s starts %q", file, data[:min(len(data), 8)])
		}
		src := newFSM(state.DefaultConfig())
		populate(t, src)
		dst := newFSM(state.DefaultConfig())
		restoreFrom(t, dst, data)
		requireSameDump(t, file+" restored", canonicalDump(t, src), canonicalDump(t, dst))
		// Written again, it is the current format and restores the same.
		again := newFSM(state.DefaultConfig())
		restoreFrom(t, again, persist(t, dst))
		requireSameDump(t, file+" restored, written and restored", canonicalDump(t, src), canonicalDump(t, again))
	}
}

func sameObject(t *testing.T, what string, want, got *state.Object) {
	t.Helper()
	if want == nil || got == nil {
		if want != got {
			t.Fatalf("%s: %+v, want %+v", what, got, want)
		}
		return
	}
	if got.Key() != want.Key() || got.RV != want.RV || got.UID() != want.UID() || !bytes.Equal(dataOf(t, got), dataOf(t, want)) {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
	if !equalLeases(want.Obj, got.Obj) {
		t.Fatalf("%s %v: decoded %+v, want %+v", what, want.Key(), got.Obj, want.Obj)
	}
}

func equalLeases(a, b interface{}) bool {
	la, ok1 := a.(*coordinationv1.Lease)
	lb, ok2 := b.(*coordinationv1.Lease)
	if !ok1 || !ok2 {
		return false
	}
	// Compare the wire form: time.Time values from two decodes are equal
	// instants but need not be == in every field.
	ba, err1 := la.Marshal()
	bb, err2 := lb.Marshal()
	return err1 == nil && err2 == nil && bytes.Equal(ba, bb) && la.ResourceVersion == lb.ResourceVersion
}

func TestSnapshotIsPointInTime(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	populate(t, f)
	want := canonicalDump(t, f)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()

	// Persist runs concurrently with further entries.
	done := make(chan []byte)
	go func() {
		var s sink
		if err := snap.Persist(&s); err != nil {
			t.Error(err)
		}
		done <- s.Bytes()
	}()
	for i, l := range genCommands(t, 7, 14, 100, newModel()) {
		if i%10 == 0 {
			f.ApplyBatch([]*raft.Log{l})
		} else {
			f.Apply(l)
		}
	}
	data := <-done
	g := newFSM(state.DefaultConfig())
	restoreFrom(t, g, data)
	requireSameDump(t, "snapshot taken before later entries", want, canonicalDump(t, g))
}

func TestPersistWriteError(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	populate(t, f)
	full := persist(t, f)
	snap, _ := f.Snapshot()
	s := &sink{failAfter: len(full) / 2}
	if err := snap.Persist(s); err == nil {
		t.Fatal("Persist succeeded on a failing sink")
	}
	if !s.cancelled || s.closed {
		t.Fatalf("failed Persist: cancelled=%v closed=%v, want the sink cancelled and not closed", s.cancelled, s.closed)
	}
}

func TestRestoreCorrupt(t *testing.T) {
	good := func() *FSM {
		f := newFSM(state.DefaultConfig())
		populate(t, f)
		return f
	}
	src := good()
	data := persist(t, src)
	const headerLen = len(snapMagic) + 1

	// record builds one snapshot record.
	record := func(typ byte, payload []byte) []byte {
		return append(enc{typ}.uv(uint64(len(payload))), payload...)
	}
	index := record(recIndex, enc{}.uv(5).uv(0))
	end := record(recEnd, nil)
	header := []byte(snapMagic + "\x01")
	objPayload := func(data []byte) []byte {
		var p enc
		for _, s := range []string{"leases", "ns", "x"} {
			p = p.uv(uint64(len(s))).raw([]byte(s)...)
		}
		return p.uv(3).uv(1).raw('u').uv(uint64(len(data))).raw(data...)
	}
	objRecord := func(data []byte) []byte { return record(recObject, objPayload(data)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	header2 := []byte(snapMagic + "\x02")

	// Sanity check of the hand-built records: they restore.
	valid := cat(header, index, objRecord(leaseBytes(t, "ns", "x", "u", "a")), end)
	if err := restore(t, newFSM(state.DefaultConfig()), valid); err != nil {
		t.Fatalf("hand-built snapshot: %v", err)
	}
	valid2 := cat(header2, index, record(recObject, cat([]byte{0}, objPayload(leaseBytes(t, "ns", "x", "u", "a")))),
		record(recEvent, cat(enc{}.uv(5).raw([]byte("ADDED")...).raw(2), enc{}.uv(1), []byte{0})), end)
	if err := restore(t, newFSM(state.DefaultConfig()), valid2); err != nil {
		t.Fatalf("hand-built snapshot of format 2: %v", err)
	}
	// Format 4: a Lease at 3 whose event's previous state, at 1, is
	// written as a change of holder (mentions: 0 new, 1 change, 2+n the
	// nth version).
	header4 := []byte(snapMagic + "\x04")
	spec, err := (&coordinationv1.LeaseSpec{HolderIdentity: ptrTo("b")}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	event4 := func(mentions ...[]byte) []byte {
		return record(recEvent, cat(enc{}.uv(8).raw([]byte("MODIFIED")...).raw(2), enc{}.uv(2), []byte{1}, cat(mentions...)))
	}
	object4 := record(recObject, cat([]byte{0}, objPayload(leaseBytes(t, "ns", "x", "u", "a"))))
	change := func(entries ...byte) []byte {
		return cat(enc{}.uv(1).uv(1).uv(uint64(len(spec))).raw(spec...).uv(uint64(len(entries))), entries)
	}
	valid4 := cat(header4, index, object4, event4(change()), end)
	f4 := newFSM(state.DefaultConfig())
	if err := restore(t, f4, valid4); err != nil {
		t.Fatalf("hand-built snapshot of format 4: %v", err)
	}
	if _, h, _, _ := f4.State().Dump(); h.Len() != 1 {
		t.Fatalf("format 4: %d events restored", h.Len())
	} else if prev := h.Events()[0].Prev(); prev == nil || prev.RV != 1 || *prev.Obj.(*coordinationv1.Lease).Spec.HolderIdentity != "b" {
		t.Fatalf("format 4: previous state %+v, want the holder b at 1", prev)
	}

	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short header", []byte(snapMagic[:3])},
		{"header only", header},
		{"wrong magic", cat([]byte("LHSNAQ"), data[len(snapMagic):])},
		{"lowercase magic", cat([]byte("lhsnap"), data[len(snapMagic):])},
		{"newer version", cat([]byte(snapMagic), []byte{snapVersion + 1}, data[headerLen:])},
		{"version 0", cat([]byte(snapMagic), []byte{0}, data[headerLen:])},
		{"no end record", data[:len(data)-len(end)]},
		{"no index record", cat(header, objRecord(leaseBytes(t, "ns", "x", "u", "a")), end)},
		{"unknown record type", cat(header, index, record(9, []byte{1, 2}), end)},
		{"record larger than the limit", cat(header, index, enc{recObject}.uv(maxRecord+1))},
		{"record length past the end", cat(header, index, enc{recObject}.uv(1000), []byte{1, 2, 3})},
		{"object record cut short", cat(header, index, record(recObject, enc{}.uv(6).raw([]byte("leases")...)), end)},
		{"object of unknown resource", cat(header, index, record(recObject, []byte("\x04pods\x02ns\x01x\x01\x01u\x00")), end)},
		{"object that does not decode", cat(header, index, objRecord([]byte{0xff, 0xff, 0xff}), end)},
		{"index record cut short", cat(header, record(recIndex, []byte{0x80}), end)},
		{"event without prev flag", cat(header, index, record(recEvent, cat(enc{}.uv(5).raw([]byte("ADDED")...).raw(2), objPayload(leaseBytes(t, "ns", "x", "u", "a")))), end)},
		{"garbage", bytes.Repeat([]byte{0xa5}, 100)},
		// Format 2: a version is written once, then referred to by its
		// ordinal + 1.
		{"reference before any version", cat(header2, index, record(recObject, enc{}.uv(1)), end)},
		{"reference past the versions read", cat(header2, index, record(recObject, cat([]byte{0}, objPayload(leaseBytes(t, "ns", "x", "u", "a")))),
			record(recEvent, cat(enc{}.uv(5).raw([]byte("ADDED")...).raw(2), enc{}.uv(2), []byte{0})), end)},
		{"reference cut short", cat(header2, index, record(recObject, []byte{0x80}), end)},
		// Format 4: changes.
		{"stored object written as a change", cat(header4, index, record(recObject, change()), end)},
		{"change cut short", cat(header4, index, object4, event4(change()[:4]), end)},
		{"change with a spec that does not decode", cat(header4, index, object4, event4(enc{}.uv(1).uv(1).uv(2).raw(0xff, 0xff).uv(0)), end)},
		{"change naming a managedFields entry the successor lacks", cat(header4, index, object4, event4(change(0)), end)},
		{"change with a managedFields entry of unknown kind", cat(header4, index, object4, event4(change(7)), end)},
		{"change with more managedFields entries than bytes", cat(header4, index, object4, event4(enc{}.uv(1).uv(1).uv(0).uv(1000)), end)},
	}
	// Every truncation of a real snapshot.
	for n := headerLen; n < len(data); n += 1 + n/50 {
		tests = append(tests, struct {
			name string
			data []byte
		}{fmt.Sprintf("truncated to %d of %d", n, len(data)), data[:n]})
	}
	f := good()
	// The views and history that must survive a failed restore.
	before := canonicalDump(t, f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := f.State()
			changed := st.Changed()
			if err := restore(t, f, tt.data); err == nil {
				t.Fatal("Restore succeeded")
			}
			requireSameDump(t, "after failed restore", before, canonicalDump(t, f))
			if g := st.Generation(); g != 0 {
				t.Fatalf("generation %d after a failed restore", g)
			}
			if st.AppliedIndex() != 13 {
				t.Fatalf("applied %d", st.AppliedIndex())
			}
			// Past views are kept: nothing was replaced.
			if sn, ok := st.SnapshotAt(3); !ok || sn.Count("leases") != 2 {
				t.Fatal("view at 3 lost by a failed restore")
			}
			select {
			case <-changed:
				t.Fatal("a failed restore woke waiters")
			default:
			}
		})
	}
	// The FSM still works.
	r := asResult(t, f.Apply(cmdLog(14, create(t, "ns", "new", "u9", "a"))))
	if r.Err != nil || r.Object.RV != 14 {
		t.Fatalf("apply after failed restores: %+v", r)
	}
}

func TestRestoreReplacesState(t *testing.T) {
	src := newFSM(state.DefaultConfig())
	populate(t, src)
	data := persist(t, src)

	// dst has other objects, a longer log and waiters.
	dst := newFSM(state.DefaultConfig())
	var logs []*raft.Log
	for i := 1; i <= 20; i++ {
		logs = append(logs, cmdLog(uint64(i), create(t, "other", fmt.Sprintf("o%d", i), "u", "a")))
	}
	dst.ApplyBatch(logs)
	changed := dst.State().Changed()

	restoreFrom(t, dst, data)
	requireSameDump(t, "restored over existing state", canonicalDump(t, src), canonicalDump(t, dst))
	st := dst.State()
	if g := st.Generation(); g != 1 {
		t.Fatalf("generation %d after a restore, want 1", g)
	}
	if n := st.Snapshot().Count("leases"); n != 4 {
		t.Fatalf("%d objects after restore, want 4", n)
	}
	// Past views are those of the restored state (rebuilt from its
	// history), never of the replaced one.
	for idx := uint64(0); idx <= 13; idx++ {
		want, ok1 := src.State().SnapshotAt(idx)
		got, ok2 := st.SnapshotAt(idx)
		if ok1 != ok2 {
			t.Fatalf("SnapshotAt(%d): ok=%v, source ok=%v", idx, ok2, ok1)
		}
		if !ok1 {
			continue
		}
		if g, w := listKeys(got), listKeys(want); g != w {
			t.Fatalf("SnapshotAt(%d) after restore: %q, source has %q", idx, g, w)
		}
	}
	select {
	case <-changed:
	default:
		t.Fatal("restore did not wake waiters")
	}
	// Restoring the same snapshot again is harmless.
	restoreFrom(t, dst, data)
	requireSameDump(t, "restored twice", canonicalDump(t, src), canonicalDump(t, dst))
}

func listKeys(sn *state.Snapshot) string {
	var out []string
	sn.List("leases", "", nil, func(o *state.Object) bool {
		out = append(out, fmt.Sprintf("%v@%d", o.Key(), o.RV))
		return true
	})
	return strings.Join(out, " ")
}

func TestEmptySnapshot(t *testing.T) {
	data := persist(t, newFSM(state.DefaultConfig()))
	// Below feature level 2 the format before etcd's revisions.
	if !bytes.HasPrefix(data, []byte{'L', 'H', 'S', 'N', 'A', 'P', snapVersionBeforeEtcd}) {
		t.Fatalf("snapshot starts %q", data)
	}
	f := newFSM(state.DefaultConfig())
	populate(t, f)
	restoreFrom(t, f, data)
	if f.State().AppliedIndex() != 0 || f.State().Snapshot().Count("leases") != 0 {
		t.Fatalf("applied %d, %d objects", f.State().AppliedIndex(), f.State().Snapshot().Count("leases"))
	}
	if evs, _, ok, _ := eventsSince(f.State(), 0); !ok || len(evs) != 0 {
		t.Fatalf("events %+v ok=%v", evs, ok)
	}
}

// TestAppendStoredReusesCopies: encodings made through one storedCopies,
// one object after another of the same type, are each that object's, with
// resourceVersion unset, and the stored objects keep theirs.
func TestAppendStoredReusesCopies(t *testing.T) {
	objs := make([]*state.Object, 3)
	for i := range objs {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l%d", i), Namespace: "ns", UID: types.UID(fmt.Sprint("uid-", i)), ResourceVersion: strconv.Itoa(10 + i)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo(fmt.Sprint("holder-", i))},
		}
		var kept []byte
		if i == 2 {
			// Kept bytes are written as kept.
			kept = []byte("kept as written")
		}
		objs[i] = state.NewObject("leases", uint64(10+i), l, kept)
	}
	copies := storedCopies{}
	for round := range 2 {
		for i, o := range objs {
			got, err := appendStored([]byte("x"), o, copies, true)
			if err != nil {
				t.Fatal(err)
			}
			want := o.Data()
			if want == nil {
				cp := o.Obj.DeepCopyObject().(*coordinationv1.Lease)
				cp.ResourceVersion = ""
				if want, err = cp.Marshal(); err != nil {
					t.Fatal(err)
				}
			}
			if wantAll := append(binary.AppendUvarint([]byte("x"), uint64(len(want))), want...); !bytes.Equal(got, wantAll) {
				t.Errorf("round %d, object %d: appended %q, want %q", round, i, got, wantAll)
			}
			if rv := o.Obj.(*coordinationv1.Lease).ResourceVersion; rv != strconv.Itoa(10+i) {
				t.Errorf("round %d: stored object %d has resourceVersion %q now", round, i, rv)
			}
		}
	}
	if len(copies) != 1 {
		t.Errorf("%d copies kept for one type", len(copies))
	}
}
