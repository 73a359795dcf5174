package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
)

var testKeys = EtcdKeys{Prefix: "/registry"}

func txnCmd(t testing.TB, req *etcdserverpb.TxnRequest) *Command {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return &Command{Type: CmdTxn, Prefix: testKeys.Prefix, Txn: b}
}

func txnResp(t testing.TB, res *Result) *etcdserverpb.TxnResponse {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("txn refused: %v", res.Err)
	}
	resp := &etcdserverpb.TxnResponse{}
	if err := proto.Unmarshal(res.Txn, resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func modEq(key string, rev int64) *etcdserverpb.Compare {
	return &etcdserverpb.Compare{Key: []byte(key), Target: etcdserverpb.Compare_MOD, Result: etcdserverpb.Compare_EQUAL,
		TargetUnion: &etcdserverpb.Compare_ModRevision{ModRevision: rev}}
}

func putOp(key string, value []byte) *etcdserverpb.RequestOp {
	return &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestPut{RequestPut: &etcdserverpb.PutRequest{Key: []byte(key), Value: value}}}
}

func getOp(key string) *etcdserverpb.RequestOp {
	return &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestRange{RequestRange: &etcdserverpb.RangeRequest{Key: []byte(key)}}}
}

func deleteOp(key, end string) *etcdserverpb.RequestOp {
	return &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestDeleteRange{RequestDeleteRange: &etcdserverpb.DeleteRangeRequest{Key: []byte(key), RangeEnd: []byte(end), PrevKv: true}}}
}

// kubeTxn is the transaction kube-apiserver sends to create (rev 0),
// update or delete a key.
func kubeTxn(t testing.TB, key string, rev int64, put []byte) *Command {
	op := deleteOp(key, "")
	if put != nil {
		op = putOp(key, put)
	}
	req := &etcdserverpb.TxnRequest{Compare: []*etcdserverpb.Compare{modEq(key, rev)}, Success: []*etcdserverpb.RequestOp{op}}
	if rev != 0 {
		req.Failure = []*etcdserverpb.RequestOp{getOp(key)}
	}
	return txnCmd(t, req)
}

// TestEtcdTxnRawKey: kube-apiserver's create, update, conflicting update
// and delete of a raw key: the header revision is the write's index (a
// failed compare does not move it), create_revision and version follow
// etcd's rules, the failure branch reads the key.
func TestEtcdTxnRawKey(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	const key = "/registry/pods/default/p"
	resp := txnResp(t, asResult(t, f.Apply(cmdLog(3, kubeTxn(t, key, 0, []byte("v1"))))))
	if !resp.Succeeded || resp.Header.Revision != 3 {
		t.Fatalf("create: %v", resp)
	}
	resp = txnResp(t, asResult(t, f.Apply(cmdLog(5, kubeTxn(t, key, 3, []byte("v2"))))))
	if !resp.Succeeded || resp.Header.Revision != 5 {
		t.Fatalf("update: %v", resp)
	}
	// A stale update fails and reads the key; nothing moves.
	f.Apply(cmdLog(6, &Command{Type: CmdNoop}))
	resp = txnResp(t, asResult(t, f.Apply(cmdLog(7, kubeTxn(t, key, 3, []byte("v3"))))))
	if resp.Succeeded || resp.Header.Revision != 5 {
		t.Fatalf("stale update: %v", resp)
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 || string(kvs[0].Value) != "v2" || kvs[0].CreateRevision != 3 || kvs[0].ModRevision != 5 || kvs[0].Version != 2 {
		t.Fatalf("failure branch read %v", kvs)
	}
	if rev, _ := f.State().Revision(); rev != 5 {
		t.Fatalf("store revision %d after a failed txn and a noop, want 5", rev)
	}
	resp = txnResp(t, asResult(t, f.Apply(cmdLog(8, kubeTxn(t, key, 5, nil)))))
	dr := resp.Responses[0].GetResponseDeleteRange()
	if !resp.Succeeded || resp.Header.Revision != 8 || dr.Deleted != 1 || string(dr.PrevKvs[0].Value) != "v2" {
		t.Fatalf("delete: %v", resp)
	}
	if o := f.State().Snapshot().Get(testKeys.StateKey(key)); o != nil {
		t.Fatalf("key still there after delete: %v", o)
	}
	// The history has the three writes, the delete's previous state with
	// its revisions.
	evs, _, _, _ := eventsSince(f.State(), 0)
	if len(evs) != 3 || evs[2].Type != state.Deleted || evs[2].Prev().KeyVersion != 2 || evs[2].Prev().CreateRV != 3 {
		t.Fatalf("events %v", evs)
	}
}

// TestEtcdLeaseValues: a Lease written through the etcd API is a Lease of
// the REST API, and its value is served back byte for byte; a Lease
// written through the REST API is served as kube-apiserver's encoding.
func TestEtcdLeaseValues(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	f.Apply(cmdLog(1, create(t, "default", "rest", "uid-1", "a")))
	o := f.State().Snapshot().Get(leaseKey("default", "rest"))
	value, err := EtcdValue(o)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := DecodeEtcdValue("leases", value)
	if err != nil {
		t.Fatalf("the value served for a REST Lease is refused: %v", err)
	}
	if !bytes.Equal(stored, leaseBytes(t, "default", "rest", "uid-1", "a")) {
		t.Fatal("the value served for a REST Lease does not hold its stored encoding")
	}

	// The same encoding under another name, written through etcd.
	kubeValue := bytes.Replace(value, []byte("rest"), []byte("kube"), 1)
	kubeValue, err = EtcdValue(state.NewObject("leases", 0, mustDecodeLease(t, f, kubeValue), nil))
	if err != nil {
		t.Fatal(err)
	}
	resp := txnResp(t, asResult(t, f.Apply(cmdLog(2, kubeTxn(t, "/registry/leases/default/kube", 0, kubeValue)))))
	if !resp.Succeeded {
		t.Fatalf("create through etcd: %v", resp)
	}
	got := f.State().Snapshot().Get(leaseKey("default", "kube"))
	if got == nil || got.RV != 2 || got.CreateRV != 2 || got.KeyVersion != 1 {
		t.Fatalf("the Lease written through etcd in the state: %+v", got)
	}
	rr, err := testKeys.RangeKVs(f.State().Snapshot(), &etcdserverpb.RangeRequest{Key: []byte("/registry/leases/default/kube")})
	if err != nil || len(rr.Kvs) != 1 || !bytes.Equal(rr.Kvs[0].Value, kubeValue) {
		t.Fatalf("read back: %v %v", rr, err)
	}

	// A value that is not a Lease, or not under its own name, stores
	// nothing.
	for name, value := range map[string][]byte{
		"json":      []byte(`{"kind":"Lease"}`),
		"encrypted": []byte("k8s:enc:aescbc:v1:key1:xxxx"),
		"renamed":   kubeValue,
	} {
		res := asResult(t, f.Apply(cmdLog(3, kubeTxn(t, "/registry/leases/default/"+name, 0, value))))
		if _, ok := res.Err.(*EtcdError); !ok {
			t.Fatalf("%s: %v, want an etcd error", name, res.Err)
		}
	}
	if n := f.State().Snapshot().Count("leases"); n != 2 {
		t.Fatalf("%d Leases, want 2", n)
	}
}

func mustDecodeLease(t testing.TB, f *FSM, value []byte) StoredObject {
	t.Helper()
	stored, err := DecodeEtcdValue("leases", value)
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := f.unmarshal("leases", stored)
	if err != nil {
		t.Fatal(err)
	}
	o.SetName("kube")
	return o
}

// TestEtcdRange: a range merges Leases and raw keys in key order, counts
// every key in range whatever the limit, and reads keys only or counts
// only when asked.
func TestEtcdRange(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	idx := uint64(0)
	next := func() uint64 { idx++; return idx }
	f.Apply(cmdLog(next(), create(t, "a", "l1", "u1", "h")))
	f.Apply(cmdLog(next(), create(t, "b", "l2", "u2", "h")))
	for _, key := range []string{"/registry/leases/a-raw", "/registry/leases/b/l2/extra", "/registry/pods/x", "compact_rev_key"} {
		txnResp(t, asResult(t, f.Apply(cmdLog(next(), kubeTxn(t, key, 0, []byte("v"))))))
	}
	keysOf := func(rr *etcdserverpb.RangeResponse) string {
		var out []string
		for _, kv := range rr.Kvs {
			out = append(out, string(kv.Key))
		}
		return strings.Join(out, " ")
	}
	sn := f.State().Snapshot()
	rr, err := testKeys.RangeKVs(sn, &etcdserverpb.RangeRequest{Key: []byte("/registry/leases/"), RangeEnd: []byte("/registry/leases0")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "/registry/leases/a-raw /registry/leases/a/l1 /registry/leases/b/l2 /registry/leases/b/l2/extra"; keysOf(rr) != want || rr.Count != 4 || rr.More {
		t.Fatalf("leases range: %q count %d more %v, want %q", keysOf(rr), rr.Count, rr.More, want)
	}
	rr, _ = testKeys.RangeKVs(sn, &etcdserverpb.RangeRequest{Key: []byte("/registry/leases/a/l1\x00"), RangeEnd: []byte("/registry/leases0"), Limit: 1, KeysOnly: true})
	if keysOf(rr) != "/registry/leases/b/l2" || rr.Count != 2 || !rr.More || rr.Kvs[0].Value != nil {
		t.Fatalf("second page: %q count %d more %v", keysOf(rr), rr.Count, rr.More)
	}
	rr, _ = testKeys.RangeKVs(sn, &etcdserverpb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, CountOnly: true})
	if rr.Count != 6 || len(rr.Kvs) != 0 {
		t.Fatalf("count of everything: %d, %d kvs", rr.Count, len(rr.Kvs))
	}
}

// TestEtcdTxnGeneralForm: a transaction changing several keys gives them
// one revision (and the history several events at it, which a snapshot
// keeps); nested transactions decide on the state before the
// transaction; a key changed twice, or a put that cannot be stored,
// refuses the whole transaction and stores nothing.
func TestEtcdTxnGeneralForm(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	txnResp(t, asResult(t, f.Apply(cmdLog(1, txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{
		putOp("a", []byte("1")), putOp("b", []byte("2")), putOp("c", []byte("3"))}})))))
	for _, k := range []string{"a", "b", "c"} {
		if o := f.State().Snapshot().Get(testKeys.StateKey(k)); o == nil || o.RV != 1 || o.CreateRV != 1 {
			t.Fatalf("%s after a three-key txn: %+v", k, o)
		}
	}
	// Nested: the inner compare sees "a" before the outer put changed it.
	nested := &etcdserverpb.RequestOp{Request: &etcdserverpb.RequestOp_RequestTxn{RequestTxn: &etcdserverpb.TxnRequest{
		Compare: []*etcdserverpb.Compare{modEq("a", 1)},
		Success: []*etcdserverpb.RequestOp{putOp("d", []byte("4"))},
	}}}
	resp := txnResp(t, asResult(t, f.Apply(cmdLog(2, txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{
		putOp("a", []byte("1b")), nested, deleteOp("b", "c"), getOp("d")}})))))
	if !resp.Responses[1].GetResponseTxn().Succeeded || resp.Responses[2].GetResponseDeleteRange().Deleted != 1 ||
		string(resp.Responses[3].GetResponseRange().Kvs[0].Value) != "4" || resp.Header.Revision != 2 {
		t.Fatalf("nested txn: %v", resp)
	}
	evs, _, _, _ := eventsSince(f.State(), 1)
	if len(evs) != 3 || evs[0].RV != 2 || evs[2].RV != 2 {
		t.Fatalf("events at revision 2: %v", evs)
	}

	for name, req := range map[string]*etcdserverpb.TxnRequest{
		"a key put twice":          {Success: []*etcdserverpb.RequestOp{putOp("x", []byte("1")), putOp("x", []byte("2"))}},
		"a put in a deleted range": {Success: []*etcdserverpb.RequestOp{deleteOp("a", "z"), putOp("new", []byte("1"))}},
		"a put and a nested put":   {Success: []*etcdserverpb.RequestOp{putOp("e", []byte("1")), {Request: &etcdserverpb.RequestOp_RequestTxn{RequestTxn: &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{putOp("e", []byte("2"))}}}}}},
		"an unknown lease":         {Success: []*etcdserverpb.RequestOp{putOp("f", []byte("1")), {Request: &etcdserverpb.RequestOp_RequestPut{RequestPut: &etcdserverpb.PutRequest{Key: []byte("g"), Value: []byte("1"), Lease: 77}}}}},
		"a value that is no Lease": {Success: []*etcdserverpb.RequestOp{putOp("h", []byte("1")), putOp("/registry/leases/default/l", []byte("not a lease"))}},
	} {
		res := asResult(t, f.Apply(cmdLog(3, txnCmd(t, req))))
		if _, ok := res.Err.(*EtcdError); !ok {
			t.Fatalf("%s: %v, want an etcd error", name, res.Err)
		}
		if rev, _ := f.State().Revision(); rev != 2 {
			t.Fatalf("%s: refused, yet the revision moved to %d", name, rev)
		}
	}
	// The refusal travels to the node that sent the command.
	res := asResult(t, f.Apply(cmdLog(4, txnCmd(t, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{putOp("x", []byte("1")), putOp("x", []byte("2"))}}))))
	b, err := EncodeResult(res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := f.DecodeResult(b)
	if err != nil || back.Err == nil || back.Err.Error() != res.Err.Error() {
		t.Fatalf("decoded refusal %v %v", back, err)
	}

	// A snapshot keeps the events that share a revision.
	g := newFSM(state.DefaultConfig())
	restoreFrom(t, g, persist(t, f))
	if evs, _, _, _ := eventsSince(g.State(), 0); len(evs) != 6 {
		t.Fatalf("%d events after a snapshot round trip, want 6", len(evs))
	}
}

// TestEtcdSnapshotKeepsRevisions: at feature level 2 a snapshot keeps
// every version's create revision and key version and the compacted
// revision; one of format 4 numbers them from the history.
func TestEtcdSnapshotKeepsRevisions(t *testing.T) {
	for _, level := range []uint64{2, 0} {
		f := newFSM(state.DefaultConfig())
		f.Apply(cmdLog(1, &Command{Type: CmdFeatureLevel, Level: level}))
		txnResp(t, asResult(t, f.Apply(cmdLog(2, kubeTxn(t, "k", 0, []byte("v1"))))))
		txnResp(t, asResult(t, f.Apply(cmdLog(3, kubeTxn(t, "k", 2, []byte("v2"))))))
		f.Apply(cmdLog(4, &Command{Type: CmdCompact, Revision: 3}))
		data := persist(t, f)
		g := newFSM(state.DefaultConfig())
		restoreFrom(t, g, data)
		o := g.State().Snapshot().Get(testKeys.StateKey("k"))
		if o == nil || o.CreateRV != 2 || o.KeyVersion != 2 || o.RV != 3 {
			t.Fatalf("level %d: restored %+v, want create 2, version 2, mod 3", level, o)
		}
		rev, compacted := g.State().Revision()
		wantCompacted := uint64(3)
		if level < 2 {
			wantCompacted = 0 // format 4 has no record of it
		}
		if rev != 3 || compacted != wantCompacted {
			t.Fatalf("level %d: revision %d, compacted %d; want 3, %d", level, rev, compacted, wantCompacted)
		}
	}
}

// TestEtcdSharedRevisionsHistory: entries that each change two or three
// Leases (events sharing a revision) under a history small enough to drop
// and compact them: every past view rebuilt from the history is the state
// that was live at its index, every event's previous state is the key's
// version before it, and a snapshot round trip keeps both.
func TestEtcdSharedRevisionsHistory(t *testing.T) {
	cfg := state.DefaultConfig()
	cfg.HistoryEvents = 60
	f := newFSM(cfg)
	names := []string{"l0", "l1", "l2", "l3"}
	live := map[uint64]string{} // index → summary of the Leases then
	summary := func(v Viewer) string {
		var out []string
		for key, o := range testKeys.Range(v, "/registry/leases/", "/registry/leases0") {
			out = append(out, fmt.Sprintf("%s@%d/%d/%d", key, o.RV, o.CreateRV, o.KeyVersion))
		}
		return strings.Join(out, " ")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for idx := uint64(1); idx <= 150; idx++ {
		var ops []*etcdserverpb.RequestOp
		for _, i := range rng.Perm(len(names))[:2+rng.IntN(2)] {
			key := "/registry/leases/default/" + names[i]
			if rng.IntN(6) == 0 {
				ops = append(ops, deleteOp(key, ""))
				continue
			}
			raw := leaseBytes(t, "default", names[i], "uid-"+names[i], fmt.Sprintf("h%d", idx))
			ops = append(ops, putOp(key, kubeEnvelope(t, raw)))
		}
		txnResp(t, asResult(t, f.Apply(cmdLog(idx, txnCmd(t, &etcdserverpb.TxnRequest{Success: ops})))))
		live[idx] = summary(f.State().Snapshot())
	}
	check := func(what string, st *state.Store) {
		t.Helper()
		dropped := st.DroppedRV()
		for idx := dropped; idx <= 150; idx++ {
			if idx == 0 {
				continue
			}
			sn, ok := st.SnapshotAt(idx)
			if !ok {
				t.Fatalf("%s: no view at %d (dropped %d)", what, idx, dropped)
			}
			if got := summary(sn); got != live[idx] {
				t.Fatalf("%s: view at %d:\n got %s\nwant %s", what, idx, got, live[idx])
			}
		}
		evs, _, _, _ := eventsSince(st, dropped)
		for _, e := range evs {
			prev := e.Prev()
			if e.Type == state.Added {
				if prev != nil {
					t.Fatalf("%s: creation at %d with a previous state", what, e.RV)
				}
				continue
			}
			before, ok := st.SnapshotAt(e.RV - 1)
			if !ok {
				continue // before the window
			}
			want := before.Get(e.Object.Key())
			if want == nil || prev == nil || prev.RV != want.RV || prev.KeyVersion != want.KeyVersion || prev.CreateRV != want.CreateRV {
				t.Fatalf("%s: event %s %s at %d: previous %+v, want %+v", what, e.Type, e.Object.Key(), e.RV, prev, want)
			}
		}
	}
	check("live", f.State())
	f.Apply(cmdLog(151, &Command{Type: CmdFeatureLevel, Level: 2}))
	g := newFSM(cfg)
	restoreFrom(t, g, persist(t, f))
	check("restored", g.State())
}

// kubeEnvelope wraps a Lease's protobuf encoding as kube-apiserver stores it.
func kubeEnvelope(t testing.TB, raw []byte) []byte {
	t.Helper()
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, Raw: raw}
	b, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}
