package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm/state"
)

// recount is the stored data as the definition gives it: every object's
// key and stored encoding, summed over the published state.
func recount(t testing.TB, f *FSM) int64 {
	t.Helper()
	var n int64
	f.State().Snapshot().Ascend("", func(o *state.Object) bool {
		k := o.Key()
		n += int64(len(k.Resource)+len(k.Namespace)+len(k.Name)) + int64(len(dataOf(t, o)))
		return true
	})
	return n
}

// renewal is holder's Lease renewed at the given second: the same size as
// any other renewal.
func renewal(t testing.TB, ns, name, uid, holder string, sec int) *Command {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := l.Unmarshal(leaseBytes(t, ns, name, uid, holder)); err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: fixedTime.Add(time.Duration(sec) * time.Second).Truncate(time.Microsecond)}
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &Command{Type: CmdUpdate, Resource: "leases", Object: b}
}

func withQuota(c *Command, quota uint64) *Command { c.Quota = quota; return c }

func noSpaceErr(t testing.TB, res *Result) *NoSpaceError {
	t.Helper()
	var ns *NoSpaceError
	if !errors.As(res.Err, &ns) {
		t.Fatalf("result %+v: want a NoSpaceError", res)
	}
	return ns
}

// TestQuota_AlarmAndWrites: the write that would pass its command's quota
// raises NOSPACE at its index and is refused; while the alarm is on every
// write that grows the stored data is refused and every other one — a
// renewal, a holder change of the same size, a delete — applied; disarming
// lets growing writes in again. The stored data always equals its
// definition, and two FSMs applying the same entries, one by one or in a
// batch, agree on it and on the alarm.
func TestQuota_AlarmAndWrites(t *testing.T) {
	one := int64(len(leaseBytes(t, "ns", "a", "uid-a", "h1"))) + int64(len("leases"+"ns"+"a"))
	quota := uint64(2*one + one/2) // room for two Leases, not three
	var logs []*raft.Log
	add := func(c *Command) *raft.Log {
		l := cmdLog(uint64(len(logs)+1), c)
		logs = append(logs, l)
		return l
	}
	f := newFSM(state.DefaultConfig())
	var refused []bool
	apply := func(c *Command) *Result {
		t.Helper()
		res := asResult(t, f.Apply(add(c)))
		refused = append(refused, res.Err != nil)
		if got, want := f.State().StoredBytes(), recount(t, f); got != want {
			t.Fatalf("after %v: stored bytes %d, recounted %d", c.Type, got, want)
		}
		return res
	}
	mustApply := func(c *Command) {
		t.Helper()
		if res := apply(c); res.Err != nil {
			t.Fatalf("%v refused: %v", c.Type, res.Err)
		}
	}

	mustApply(withQuota(create(t, "ns", "a", "uid-a", "h1"), quota))
	mustApply(withQuota(create(t, "ns", "b", "uid-b", "h1"), quota))
	if got := f.State().StoredBytes(); got != 2*one {
		t.Fatalf("stored %d, want %d", got, 2*one)
	}
	if f.State().NoSpace() != 0 {
		t.Fatal("alarm raised under the quota")
	}

	// The crossing write.
	res := apply(withQuota(create(t, "ns", "c", "uid-c", "h1"), quota))
	ns := noSpaceErr(t, res)
	if ns.Quota != quota || ns.Stored != uint64(2*one) || ns.Grow != uint64(one) {
		t.Errorf("refusal %+v, want quota %d stored %d grow %d", ns, quota, 2*one, one)
	}
	raisedAt := uint64(len(logs))
	if got := f.State().NoSpace(); got != raisedAt {
		t.Fatalf("alarm at %d, want %d (the crossing write)", got, raisedAt)
	}
	if f.State().Snapshot().Get(leaseKey("ns", "c")) != nil {
		t.Fatal("the refused create was stored")
	}

	// While the alarm is on, even a write under the quota that grows the
	// data is refused; a command without a quota too.
	noSpaceErr(t, apply(txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{putOp("/k", []byte("v"))}})))
	// An object that grows past smallObject in place is refused too.
	noSpaceErr(t, apply(updateCmd(t, "ns", "a", "uid-a", strings.Repeat("h", smallObject), 0, "")))

	// What does not grow the data goes through.
	mustApply(withQuota(renewal(t, "ns", "a", "uid-a", "h1", 10), quota))
	mustApply(withQuota(renewal(t, "ns", "a", "uid-a", "h2", 20), quota)) // a new holder
	if h := *f.State().Snapshot().Get(leaseKey("ns", "a")).Obj.(*coordinationv1.Lease).Spec.HolderIdentity; h != "h2" {
		t.Fatalf("holder %q after the holder change", h)
	}
	mustApply(deleteCmd("ns", "b", 0, ""))
	if got := f.State().StoredBytes(); got != one {
		t.Fatalf("stored %d after the delete, want %d", got, one)
	}
	// Freed space alone does not clear the alarm (as etcd).
	noSpaceErr(t, apply(withQuota(create(t, "ns", "c", "uid-c", "h1"), quota)))
	if got := f.State().NoSpace(); got != raisedAt {
		t.Fatalf("alarm at %d, want %d still", got, raisedAt)
	}

	mustApply(&Command{Type: CmdAlarm, AlarmAction: AlarmDeactivate, Alarm: AlarmNoSpace})
	if f.State().NoSpace() != 0 {
		t.Fatal("alarm still on after disarm")
	}
	mustApply(withQuota(create(t, "ns", "c", "uid-c", "h1"), quota))
	// An operator may raise it, as etcd's Alarm ACTIVATE.
	mustApply(&Command{Type: CmdAlarm, AlarmAction: AlarmActivate, Alarm: AlarmNoSpace})
	if got := f.State().NoSpace(); got != uint64(len(logs)) {
		t.Fatalf("alarm at %d after activate, want %d", got, len(logs))
	}
	// A change of holder that makes a small Lease longer (a longer name)
	// still goes through: no election stops because the store is full.
	before := f.State().StoredBytes()
	mustApply(withQuota(updateCmd(t, "ns", "a", "uid-a", "a-much-longer-holder-name", 0, ""), quota))
	if got := f.State().StoredBytes(); got <= before {
		t.Fatalf("stored %d after a longer holder, want more than %d", got, before)
	}
	if res := apply(&Command{Type: CmdAlarm, AlarmAction: AlarmDeactivate, Alarm: 2}); res.Err == nil {
		t.Error("an alarm leasehold does not have was accepted")
	}

	// Determinism: the same entries, in one batch, on another FSM.
	g := newFSM(state.DefaultConfig())
	for i, r := range g.ApplyBatch(logs) {
		if got := asResult(t, r).Err != nil; got != refused[i] {
			t.Errorf("entry %d: refused %v in a batch, %v one by one", i+1, got, refused[i])
		}
	}
	if g.State().StoredBytes() != f.State().StoredBytes() || g.State().NoSpace() != f.State().NoSpace() {
		t.Errorf("batch: stored %d alarm %d; one by one: %d %d", g.State().StoredBytes(), g.State().NoSpace(), f.State().StoredBytes(), f.State().NoSpace())
	}
}

// TestQuota_EtcdWrites: the etcd API's writes count as the REST API's: a
// transaction is judged by what it adds less what it replaces and
// deletes, a lease grant grows the data, and a delete range always goes
// through.
func TestQuota_EtcdWrites(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	idx := uint64(0)
	apply := func(c *Command) *Result {
		t.Helper()
		idx++
		res := asResult(t, f.Apply(cmdLog(idx, c)))
		if got, want := f.State().StoredBytes(), recount(t, f); got != want {
			t.Fatalf("entry %d: stored bytes %d, recounted %d", idx, got, want)
		}
		return res
	}
	value := make([]byte, 1000)
	put := func(key string, quota uint64) *Command {
		return withQuota(txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{putOp(key, value)}}), quota)
	}
	const quota = 2500
	txnResp(t, apply(put("/a", quota)))
	txnResp(t, apply(put("/b", quota)))
	// Replacing a key by a value of the same size grows nothing.
	txnResp(t, apply(put("/a", quota)))
	noSpaceErr(t, apply(put("/c", quota)))
	if f.State().NoSpace() != idx {
		t.Fatalf("alarm at %d, want %d", f.State().NoSpace(), idx)
	}
	if res := apply(withQuota(&Command{Type: CmdLeaseGrant, LeaseID: 7, TTL: 10}, quota)); !errors.As(res.Err, new(*NoSpaceError)) {
		t.Errorf("lease grant while full: %v", res.Err)
	}
	// A transaction that puts one key and deletes a larger one shrinks
	// the data.
	small := withQuota(txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{putOp("/c", []byte("x")), deleteOp("/b", "")}}), quota)
	txnResp(t, apply(small))
	txnResp(t, apply(txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{deleteOp("/", "\x00")}})))
	if got := f.State().StoredBytes(); got != 0 {
		t.Errorf("stored %d after deleting every key", got)
	}
}

// TestQuota_Snapshot: a snapshot carries the alarm (one record, only while
// it is on) and a restore recounts the stored data.
func TestQuota_Snapshot(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	f.Apply(cmdLog(1, create(t, "ns", "a", "uid-a", "h")))
	off := persist(t, f)
	if n := countRecords(t, off, recAlarm); n != 0 {
		t.Errorf("%d alarm records without an alarm", n)
	}
	res := asResult(t, f.Apply(cmdLog(2, withQuota(create(t, "ns", "b", "uid-b", "h"), 1))))
	noSpaceErr(t, res)
	on := persist(t, f)
	if n := countRecords(t, on, recAlarm); n != 1 {
		t.Errorf("%d alarm records with the alarm on, want 1", n)
	}
	g := newFSM(state.DefaultConfig())
	if err := restore(t, g, on); err != nil {
		t.Fatal(err)
	}
	if got := g.State().NoSpace(); got != 2 {
		t.Errorf("restored alarm at %d, want 2", got)
	}
	if got, want := g.State().StoredBytes(), f.State().StoredBytes(); got != want || got == 0 {
		t.Errorf("restored stored bytes %d, want %d", got, want)
	}
	// Growing writes stay refused after the restore, with no quota.
	noSpaceErr(t, asResult(t, g.Apply(cmdLog(3, create(t, "ns", "c", "uid-c", "h")))))
	if err := restore(t, g, off); err != nil {
		t.Fatal(err)
	}
	if g.State().NoSpace() != 0 {
		t.Error("restoring a snapshot without the alarm left it on")
	}
}

// TestQuota_ResultRoundTrip: a refusal reaches a follower that forwarded
// the write with its figures.
func TestQuota_ResultRoundTrip(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	want := &NoSpaceError{Quota: 262144, Stored: 262000, Grow: 900}
	b, err := EncodeResult(&Result{Err: want})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.DecodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if ns := noSpaceErr(t, got); *ns != *want {
		t.Errorf("decoded %+v, want %+v", ns, want)
	}
}
