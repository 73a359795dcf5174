package fsm

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm/state"
)

// Fuzzing of what the FSM decodes from bytes: log commands (DecodeCommand;
// Apply's panic on a command that does not decode is deliberate, and is
// not fuzzed), results sent back by the leader (DecodeResult) and
// snapshots (Restore), which come from disk or from the leader.

var fuzzTime = time.Date(2024, 3, 4, 5, 6, 7, 8000, time.UTC)

// fuzzLease is a Lease's stored encoding (resourceVersion unset), with a
// managedFields entry whose time the renewals move, as real renewals do.
func fuzzLease(tb testing.TB, ns, name, uid, holder string, renew int) []byte {
	tb.Helper()
	at := fuzzTime.Add(time.Duration(renew) * time.Second)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(fuzzTime.Truncate(time.Second)),
			Labels:            map[string]string{"app": name},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: holder, Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "coordination.k8s.io/v1", Time: &metav1.Time{Time: at.Truncate(time.Second)}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}}`)}}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, LeaseDurationSeconds: ptrTo[int32](15),
			RenewTime: &metav1.MicroTime{Time: at.Truncate(time.Microsecond)},
		},
	}
	b, err := l.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func fuzzCandidate(tb testing.TB, ns, name, uid string) []byte {
	tb.Helper()
	c := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(fuzzTime.Truncate(time.Second))},
		Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "l", BinaryVersion: "1.31.0", EmulationVersion: "1.30.0",
			RenewTime: &metav1.MicroTime{Time: fuzzTime}, PingTime: &metav1.MicroTime{Time: fuzzTime},
			Strategy: coordinationv1.OldestEmulationVersion},
	}
	b, err := c.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fuzzCommands is a small real history: creates, renewals, a change that
// is more than a renewal, a no-op update, refusals, deletes and a noop.
func fuzzCommands(tb testing.TB) []*Command {
	return []*Command{
		{Type: CmdCreate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "a", 0)},
		{Type: CmdCreate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "cm", "u2", "a", 0)},
		{Type: CmdCreate, Resource: "leasecandidates", Object: fuzzCandidate(tb, "kube-system", "cand", "u3")},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "a", 2), ExpectRV: 1},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "b", 4)},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "b", 4)},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "cm", "u2", "a", 3), ExpectRV: 99},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "cm", "u2", "c", 5), ExpectUID: "u2"},
		{Type: CmdDelete, Resource: "leasecandidates", Namespace: "kube-system", Name: "cand", ExpectUID: "u3"},
		{Type: CmdNoop},
		{Type: CmdCreate, Resource: "leases", Object: fuzzLease(tb, "default", "tmp", "u4", "x", 6)},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "b", 8)},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "sched", "u1", "b", 9)},
		{Type: CmdDelete, Resource: "leases", Namespace: "default", Name: "tmp", ExpectRV: 11},
		{Type: CmdUpdate, Resource: "leases", Object: fuzzLease(tb, "kube-system", "cm", "u2", "c", 12)},
	}
}

// fuzzConfig keeps a short history so that renewals are compacted into
// changes (snapshot format 4) and a fresh FSM per input is cheap.
var fuzzConfig = state.Config{HistoryEvents: 16, ListSnapshots: 4}

func fuzzFSM() *FSM { return New(state.New(fuzzConfig), DefaultTypes(), nil) }

// fuzzApply applies cmds to f from index 1, returning the results.
func fuzzApply(f *FSM, cmds []*Command) []*Result {
	var out []*Result
	for i, c := range cmds {
		idx := uint64(i + 1)
		out = append(out, f.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: c.Encode(),
			AppendedAt: fuzzTime.Add(time.Duration(idx) * time.Second)}).(*Result))
	}
	return out
}

func fuzzReadDir(tb testing.TB, dir string) [][]byte {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// FuzzDecodeCommand: DecodeCommand never panics; a command it decodes
// encodes into bytes that decode to the same command, and encode to the
// same bytes.
func FuzzDecodeCommand(f *testing.F) {
	for _, data := range fuzzReadDir(f, filepath.Join("testdata", "commands")) {
		f.Add(data)
		for n := 0; n < len(data); n += 1 + n/4 {
			f.Add(data[:n])
		}
	}
	for _, c := range fuzzCommands(f) {
		f.Add(c.Encode())
	}
	f.Add([]byte{byte(CmdCreate), 1, 4, 0})                         // an empty object
	f.Add([]byte{byte(CmdUpdate), 1, 5, 0})                         // an empty ExpectRV
	f.Add([]byte{byte(CmdUpdate), 1, 5, 3, 0x80, 0x01, 0xff})       // ExpectRV with a byte after it
	f.Add([]byte{byte(CmdDelete), 2, 3, 1, 'a', 3, 1, 'b'})         // a repeated tag
	f.Add([]byte{0x85, 1, 99, 2, 'x', 'y'})                         // skippable, unknown tag
	f.Add([]byte{byte(CmdCreate), 0xff, 0xff, 0xff, 0xff, 0x0f})    // a huge field count
	f.Add([]byte{byte(CmdCreate), 1, 4, 0xff, 0xff, 0xff, 0xff, 7}) // a huge length
	f.Add([]byte{byte(CmdNoop), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			if c != nil {
				t.Fatalf("DecodeCommand returned %+v with error %v", c, err)
			}
			return
		}
		enc := c.Encode()
		again, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("decoded %+v, whose encoding %x does not decode: %v", c, enc, err)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("command changed through its encoding:\n%+v\n%+v", c, again)
		}
		if enc2 := again.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("command encodes differently after a round trip:\n%x\n%x", enc, enc2)
		}
	})
}

// FuzzDecodeResult: DecodeResult never panics; a result it decodes that
// the leader could have sent — a refusal or an object, not both —
// encodes into bytes that decode to the same result.
func FuzzDecodeResult(f *testing.F) {
	leader := fuzzFSM()
	for _, res := range fuzzApply(leader, fuzzCommands(f)) {
		data, err := EncodeResult(res)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{1, 7, 0})                                     // an empty object of no resource
	f.Add([]byte{2, 2, 6, 'l', 'e', 'a', 's', 'e', 's', 7, 0}) // an empty Lease
	f.Add([]byte{2, 2, 4, 'p', 'o', 'd', 's', 7, 0})           // an unknown resource
	f.Add([]byte{1, 1, 2, 0x80, 0x80})                         // a code cut short
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})

	f.Fuzz(func(t *testing.T, data []byte) {
		fm := fuzzFSM()
		res, err := fm.DecodeResult(data)
		if err != nil {
			return
		}
		if res.Err != nil && res.Object != nil {
			return // no FSM result has both
		}
		enc, err := EncodeResult(res)
		if err != nil {
			t.Fatalf("decoded result %+v does not encode: %v", res, err)
		}
		again, err := fm.DecodeResult(enc)
		if err != nil {
			t.Fatalf("decoded result %+v, whose encoding %x does not decode: %v", res, enc, err)
		}
		if !reflect.DeepEqual(res.Err, again.Err) {
			t.Fatalf("refusal changed through its encoding: %#v, then %#v", res.Err, again.Err)
		}
		if (res.Object == nil) != (again.Object == nil) {
			t.Fatalf("object %v, then %v", res.Object, again.Object)
		}
		if res.Object == nil {
			return
		}
		a, b := res.Object, again.Object
		if a.Key() != b.Key() || a.RV != b.RV || a.UID() != b.UID() {
			t.Fatalf("object %v rv %d uid %q, then %v rv %d uid %q", a.Key(), a.RV, a.UID(), b.Key(), b.RV, b.UID())
		}
		ea, eb := fuzzStored(t, a), fuzzStored(t, b)
		if !bytes.Equal(ea, eb) {
			t.Fatalf("object encodes differently after a round trip:\n%x\n%x", ea, eb)
		}
	})
}

func fuzzStored(t *testing.T, o *state.Object) []byte {
	t.Helper()
	b, err := appendStored(nil, o, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type fuzzSink struct{ bytes.Buffer }

func (*fuzzSink) ID() string    { return "fuzz" }
func (*fuzzSink) Close() error  { return nil }
func (*fuzzSink) Cancel() error { return nil }

func fuzzPersist(tb testing.TB, f *FSM) []byte {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	defer snap.Release()
	var s fuzzSink
	if err := snap.Persist(&s); err != nil {
		tb.Fatal(err)
	}
	return s.Bytes()
}

// FuzzRestore: Restore never panics on arbitrary bytes; one that fails
// leaves the state alone; a snapshot it restores is written again as a
// snapshot that restores to a state written the same.
func FuzzRestore(f *testing.F) {
	for _, data := range fuzzReadDir(f, filepath.Join("testdata", "snapshots")) {
		f.Add(data)
	}
	src := fuzzFSM()
	cmds := fuzzCommands(f)
	fuzzApply(src, cmds)
	full := fuzzPersist(f, src)
	f.Add(full)
	for n := 0; n < len(full); n += 1 + n/8 {
		f.Add(full[:n])
	}
	small := fuzzFSM()
	fuzzApply(small, cmds[:4])
	f.Add(fuzzPersist(f, small))
	f.Add(fuzzPersist(f, fuzzFSM()))
	f.Add([]byte(snapMagic + "\x04\x03\x02\x05\x00\x04\x00"))
	f.Add([]byte(snapMagic + "\x04\x03\x02\x05\x00\x01\xff\xff\xff\x1f"))

	f.Fuzz(func(t *testing.T, data []byte) {
		fm := fuzzFSM()
		if err := fm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			if st := fm.State(); st.Generation() != 0 || st.AppliedIndex() != 0 {
				t.Fatalf("failed restore (%v) changed the state: generation %d, applied %d", err, st.Generation(), st.AppliedIndex())
			}
			return
		}
		fuzzReadRestored(t, fm.State())
		first := fuzzPersist(t, fm)
		again := fuzzFSM()
		if err := again.Restore(io.NopCloser(bytes.NewReader(first))); err != nil {
			t.Fatalf("restored a snapshot, whose snapshot does not restore: %v\n%s", err, fuzzHex(first))
		}
		if second := fuzzPersist(t, again); !bytes.Equal(first, second) {
			t.Fatalf("restored state is written differently after a round trip:\n%s\n%s", fuzzHex(first), fuzzHex(second))
		}
	})
}

// fuzzReadRestored reads a restored state as watches and lists do: the
// events from the oldest, each with its object and previous state, and
// the views at and around every event's version.
func fuzzReadRestored(t *testing.T, st *state.Store) {
	t.Helper()
	since := st.EventsSince(0)
	idxs := []uint64{0, st.AppliedIndex()}
	for _, e := range since.Events {
		if e.Object == nil {
			t.Fatalf("event %d has no object", e.RV)
		}
		if e.Prior != nil && e.Prev() == nil {
			t.Fatalf("event %d has no previous state", e.RV)
		}
		idxs = append(idxs, e.RV, e.RV-1)
	}
	for _, idx := range idxs {
		if sn, ok := st.SnapshotAt(idx); ok {
			sn.List("leases", "", nil, func(*state.Object) bool { return true })
		}
	}
}

func fuzzHex(b []byte) string {
	if len(b) > 512 {
		return fmt.Sprintf("%x... (%d bytes)", b[:512], len(b))
	}
	return fmt.Sprintf("%x", b)
}
