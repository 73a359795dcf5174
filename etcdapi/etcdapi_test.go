package etcdapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// etcdCluster is an in-process cluster with the etcd API on every node.
type etcdCluster struct {
	*testcluster.Cluster
	endpoints []string
}

func newEtcdCluster(t *testing.T) *etcdCluster {
	t.Helper()
	// Writes wait for feature level 2, which the leader raises once every
	// member has told it its release.
	return startEtcdCluster(t, testcluster.Options{}, Config{ProgressNotifyInterval: 500 * time.Millisecond}, 2)
}

// startEtcdCluster starts three nodes with opts, the etcd API on each
// with cfg (its Node set per node), and waits for feature level level.
func startEtcdCluster(t *testing.T, opts testcluster.Options, cfg Config, level uint32) *etcdCluster {
	t.Helper()
	c := &etcdCluster{Cluster: testcluster.New(t, 3, opts)}
	for _, n := range c.Nodes {
		cfg.Node = n.Raft()
		srv := New(cfg)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		g := srv.GRPCServer()
		go func() { _ = g.Serve(ln) }()
		ctx, cancel := context.WithCancel(context.Background())
		go srv.Run(ctx)
		t.Cleanup(func() { cancel(); g.Stop() })
		c.endpoints = append(c.endpoints, ln.Addr().String())
		n.Raft().SetEtcdURL("http://" + ln.Addr().String())
	}
	if !testcluster.WaitFor(context.Background(), 15*time.Second, func() bool {
		for _, n := range c.Nodes {
			if n.Raft().FeatureLevel() < level {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("feature level %d not reached within 15s", level)
	}
	return c
}

// client talks to node i only.
func (c *etcdCluster) client(t *testing.T, i int) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{c.endpoints[i]}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// kubeValue is kube-apiserver's storage encoding of a Lease (as it
// stores it: resourceVersion cleared).
func kubeValue(t *testing.T, l *coordinationv1.Lease) []byte {
	t.Helper()
	l = l.DeepCopy()
	l.ResourceVersion = ""
	l.APIVersion, l.Kind = "coordination.k8s.io/v1", "Lease"
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(runtime.NewScheme(), runtime.NewScheme()).Encode(l, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decodeLease(t *testing.T, value []byte) *coordinationv1.Lease {
	t.Helper()
	var u runtime.Unknown
	if !bytes.HasPrefix(value, []byte("k8s\x00")) {
		t.Fatalf("value %q is not kube's protobuf encoding", value)
	}
	if err := u.Unmarshal(value[4:]); err != nil {
		t.Fatal(err)
	}
	l := &coordinationv1.Lease{}
	if err := l.Unmarshal(u.Raw); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestKV: kube-apiserver's transactions through a follower; revisions as
// etcd counts them; reads at a revision, future and compacted.
func TestKV(t *testing.T) {
	c := newEtcdCluster(t)
	ctx := ctxT(t)
	cl := c.client(t, c.Follower())
	const key = "/registry/things/default/a"

	create, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, "v1")).Commit()
	if err != nil || !create.Succeeded {
		t.Fatalf("create: %v %v", create, err)
	}
	rev1 := create.Header.Revision
	update, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev1)).
		Then(clientv3.OpPut(key, "v2")).Else(clientv3.OpGet(key)).Commit()
	if err != nil || !update.Succeeded || update.Header.Revision <= rev1 {
		t.Fatalf("update: %v %v", update, err)
	}
	rev2 := update.Header.Revision
	stale, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev1)).
		Then(clientv3.OpPut(key, "v3")).Else(clientv3.OpGet(key)).Commit()
	if err != nil || stale.Succeeded {
		t.Fatalf("stale update: %v %v", stale, err)
	}
	kv := stale.Responses[0].GetResponseRange().Kvs[0]
	if string(kv.Value) != "v2" || kv.ModRevision != rev2 || kv.CreateRevision != rev1 || kv.Version != 2 || stale.Header.Revision != rev2 {
		t.Fatalf("failure branch: %v, header %d; want v2 at %d created %d version 2", kv, stale.Header.Revision, rev2, rev1)
	}

	// Every node answers the same, linearizably.
	for i := range c.Nodes {
		got, err := c.client(t, i).Get(ctx, key)
		if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v2" || got.Header.Revision < rev2 {
			t.Fatalf("get on n%d: %v %v", i+1, got, err)
		}
	}
	old, err := cl.Get(ctx, key, clientv3.WithRev(rev1))
	if err != nil || string(old.Kvs[0].Value) != "v1" || old.Header.Revision < rev2 {
		t.Fatalf("get at %d: %v %v", rev1, old, err)
	}
	if _, err := cl.Get(ctx, key, clientv3.WithRev(rev2+1000)); !errors.Is(err, rpctypes.ErrFutureRev) {
		t.Fatalf("get at a future revision: %v, want %v", err, rpctypes.ErrFutureRev)
	}
	if _, err := cl.Compact(ctx, rev2); err != nil {
		t.Fatalf("compact: %v", err)
	}
	if _, err := cl.Get(ctx, key, clientv3.WithRev(rev1)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("get below the compaction: %v, want %v", err, rpctypes.ErrCompacted)
	}
	if _, err := cl.Get(ctx, key, clientv3.WithRev(rev2)); err != nil {
		t.Fatalf("get at the compaction: %v", err)
	}
	if _, err := cl.Compact(ctx, rev1); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compact again below: %v, want %v", err, rpctypes.ErrCompacted)
	}

	// Count ignores the limit, as kube's pagination needs.
	for i := range 3 {
		if _, err := cl.Put(ctx, "/registry/things/default/p"+strconv.Itoa(i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cl.Get(ctx, "/registry/things/", clientv3.WithRange("/registry/things0"), clientv3.WithLimit(2))
	if err != nil || len(page.Kvs) != 2 || page.Count != 4 || !page.More {
		t.Fatalf("page: %d kvs, count %d, more %v, %v", len(page.Kvs), page.Count, page.More, err)
	}
	// RangeStream (kube-apiserver 1.37): the same keys, in chunks, the
	// count and header on the last.
	rangeStreamChunk = 2
	stream, err := etcdserverpb.NewKVClient(cl.ActiveConnection()).RangeStream(ctx,
		&etcdserverpb.RangeRequest{Key: []byte("/registry/things/"), RangeEnd: []byte("/registry/things0")})
	if err != nil {
		t.Fatal(err)
	}
	var streamed []string
	var last *etcdserverpb.RangeResponse
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = m.RangeResponse
		for _, kv := range last.Kvs {
			streamed = append(streamed, string(kv.Key))
		}
	}
	if len(streamed) != 4 || last.Count != 4 || last.Header.GetRevision() < rev2 || len(last.Kvs) != 2 {
		t.Fatalf("range stream: %q, last chunk %v", streamed, last)
	}
	del, err := cl.Delete(ctx, "/registry/things/default/p0", clientv3.WithPrevKV())
	if err != nil || del.Deleted != 1 || string(del.PrevKvs[0].Value) != "x" {
		t.Fatalf("delete: %v %v", del, err)
	}
	// Several keys in one revision.
	all, err := cl.Delete(ctx, "/registry/things/", clientv3.WithPrefix())
	if err != nil || all.Deleted != 3 {
		t.Fatalf("delete of the prefix: %v %v, want 3 deleted", all, err)
	}
	if left, err := cl.Get(ctx, "/registry/things/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || left.Count != 0 {
		t.Fatalf("after deleting the prefix: %v %v", left, err)
	}
	if _, err := cl.Txn(ctx).Then(clientv3.OpPut("/registry/x", "1"), clientv3.OpDelete("/registry/", clientv3.WithPrefix())).Commit(); !errors.Is(err, rpctypes.ErrDuplicateKey) {
		t.Fatalf("a put inside a deleted range: %v, want %v", err, rpctypes.ErrDuplicateKey)
	}

	st, err := cl.Status(ctx, c.endpoints[c.Follower()])
	if err != nil || st.Version != EmulatedVersion || st.Leader == 0 {
		t.Fatalf("status: %v %v", st, err)
	}
	members, err := cl.MemberList(ctx)
	if err != nil || len(members.Members) != 3 {
		t.Fatalf("member list: %v %v", members, err)
	}
	for _, m := range members.Members {
		if len(m.ClientURLs) != 1 || !slices.Contains(c.endpoints, strings.TrimPrefix(m.ClientURLs[0], "http://")) || m.Name == "" || m.ID == 0 {
			t.Fatalf("member %+v, want one of %v as its client URL", m, c.endpoints)
		}
	}
}

// TestLeasesThroughBothDoors: a Lease written through REST is read
// through etcd as kube-apiserver's encoding with mod_revision = its
// resourceVersion; one written through etcd is a REST Lease with that
// resourceVersion; an invalid one stores nothing.
func TestLeasesThroughBothDoors(t *testing.T) {
	c := newEtcdCluster(t)
	ctx := ctxT(t)
	cl := c.client(t, 0)
	leases := c.Client(1, true).CoordinationV1().Leases("default")
	holder, secs := "a", int32(10)
	rest, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rest"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Get(ctx, "/registry/leases/default/rest")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get through etcd: %v %v", got, err)
	}
	kv := got.Kvs[0]
	if strconv.FormatInt(kv.ModRevision, 10) != rest.ResourceVersion || kv.CreateRevision != kv.ModRevision || kv.Version != 1 {
		t.Fatalf("kv revisions %d/%d/%d, resourceVersion %s", kv.CreateRevision, kv.ModRevision, kv.Version, rest.ResourceVersion)
	}
	if !bytes.Equal(kv.Value, kubeValue(t, rest)) {
		t.Fatal("the value is not kube-apiserver's encoding of the REST Lease")
	}

	// kube-apiserver's update of it, then a create, through etcd.
	upd := rest.DeepCopy()
	upd.Spec.HolderIdentity = ptr("kube")
	resp, err := cl.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/registry/leases/default/rest"), "=", kv.ModRevision)).
		Then(clientv3.OpPut("/registry/leases/default/rest", string(kubeValue(t, upd)))).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("update through etcd: %v %v", resp, err)
	}
	back, err := leases.Get(ctx, "rest", metav1.GetOptions{})
	if err != nil || *back.Spec.HolderIdentity != "kube" || back.ResourceVersion != strconv.FormatInt(resp.Header.Revision, 10) {
		t.Fatalf("REST after the etcd update: %v (rv %s, want %d)", err, back.ResourceVersion, resp.Header.Revision)
	}
	kubeLease := upd.DeepCopy()
	kubeLease.Name, kubeLease.UID = "kube", "9b7b1b5e-1111-4c1e-9d2a-000000000001"
	value := kubeValue(t, kubeLease)
	if _, err := cl.Put(ctx, "/registry/leases/default/kube", string(value)); err != nil {
		t.Fatal(err)
	}
	viaEtcd, err := cl.Get(ctx, "/registry/leases/default/kube")
	if err != nil || !bytes.Equal(viaEtcd.Kvs[0].Value, value) {
		t.Fatalf("a value written through etcd is not served back as written: %v", err)
	}
	if l, err := leases.Get(ctx, "kube", metav1.GetOptions{}); err != nil || l.ResourceVersion != strconv.FormatInt(viaEtcd.Kvs[0].ModRevision, 10) {
		t.Fatalf("REST get of the Lease written through etcd: %v %v", l, err)
	}

	bad := kubeLease.DeepCopy()
	bad.Name = "bad"
	bad.Spec.LeaseDurationSeconds = ptr(int32(-1))
	for name, v := range map[string][]byte{
		"bad":       kubeValue(t, bad),
		"json":      []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease"}`),
		"encrypted": []byte("k8s:enc:aescbc:v1:key1:xxxx"),
		"misnamed":  value,
	} {
		_, err := cl.Put(ctx, "/registry/leases/default/"+name, string(v))
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%s: %v, want InvalidArgument", name, err)
		}
		if _, err := leases.Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Fatalf("%s: refused, yet stored", name)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestWatch: a watch on one node sees a REST write made through another,
// with its previous value; progress requests are answered with the
// current revision; a watch from before a compaction is canceled with
// the compacted revision.
func TestWatch(t *testing.T) {
	c := newEtcdCluster(t)
	ctx := ctxT(t)
	cl := c.client(t, 0)
	leases := c.Client(2, true).CoordinationV1().Leases("default")
	holder := "a"
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := cl.Watch(wctx, "/registry/leases/", clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	next := func() clientv3.WatchResponse {
		t.Helper()
		for {
			select {
			case r := <-wch:
				if r.Err() != nil || r.Canceled {
					t.Fatalf("watch ended: %v", r.Err())
				}
				if len(r.Events) > 0 {
					return r
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no event within 10s")
			}
		}
	}
	first := next()
	if ev := first.Events[0]; !ev.IsCreate() || ev.Kv.ModRevision != from {
		t.Fatalf("first event %v, want the creation at %d", ev, from)
	}
	l.Spec.HolderIdentity = ptr("b")
	l, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := next().Events[0]
	if ev.Type != mvccpb.PUT || ev.IsCreate() || strconv.FormatInt(ev.Kv.ModRevision, 10) != l.ResourceVersion || ev.PrevKv == nil ||
		*decodeLease(t, ev.PrevKv.Value).Spec.HolderIdentity != "a" || *decodeLease(t, ev.Kv.Value).Spec.HolderIdentity != "b" {
		t.Fatalf("update event %v", ev)
	}
	if err := leases.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev = next().Events[0]
	if ev.Type != mvccpb.DELETE || ev.PrevKv == nil || ev.Kv.ModRevision <= ev.PrevKv.ModRevision {
		t.Fatalf("delete event %v", ev)
	}

	// A progress request: the notification carries the current revision.
	rev := ev.Kv.ModRevision
	if err := cl.RequestProgress(wctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		select {
		case r := <-wch:
			if r.IsProgressNotify() && r.Header.Revision >= rev {
				got = true
			}
		case <-deadline:
			t.Fatal("no progress notification within 10s")
		}
	}

	// Compaction cancels a watch from before it.
	if _, err := cl.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	old := cl.Watch(ctx, "/registry/leases/", clientv3.WithPrefix(), clientv3.WithRev(from))
	select {
	case r := <-old:
		if !r.Canceled || r.CompactRevision != rev {
			t.Fatalf("watch from %d after compacting to %d: %+v", from, rev, r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch from a compacted revision not canceled within 10s")
	}
}

// TestLeases: a key attached to a lease that is not kept alive is deleted
// through the log when the lease expires (a watch sees the delete); one
// kept alive outlives its TTL; revoking deletes its keys; a put naming an
// unknown lease is refused.
func TestLeases(t *testing.T) {
	c := newEtcdCluster(t)
	ctx := ctxT(t)
	cl := c.client(t, c.Follower())

	short, err := cl.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	put, err := cl.Put(ctx, "/registry/events/default/e1", "x", clientv3.WithLease(short.ID))
	if err != nil {
		t.Fatal(err)
	}
	wch := cl.Watch(ctx, "/registry/events/default/e1", clientv3.WithRev(put.Header.Revision+1))
	start := time.Now()
	select {
	case r := <-wch:
		if len(r.Events) != 1 || r.Events[0].Type != mvccpb.DELETE {
			t.Fatalf("want the key's deletion, got %+v", r)
		}
		t.Logf("a key of a 1s lease was deleted %v after its put", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("key of an expired lease still there after 10s")
	}
	if ttl, err := cl.TimeToLive(ctx, short.ID); err != nil || ttl.TTL != -1 {
		t.Fatalf("expired lease's time to live: %v %v, want -1", ttl, err)
	}

	kept, err := cl.Grant(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, "/registry/events/default/e2", "y", clientv3.WithLease(kept.ID)); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := cl.KeepAliveOnce(ctx, kept.ID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if got, err := cl.Get(ctx, "/registry/events/default/e2"); err != nil || len(got.Kvs) != 1 || got.Kvs[0].Lease != int64(kept.ID) {
		t.Fatalf("key of a lease kept alive for 2.4s: %v %v", got, err)
	}
	ttl, err := cl.TimeToLive(ctx, kept.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 1 || len(ttl.Keys) != 1 {
		t.Fatalf("time to live: %+v %v", ttl, err)
	}
	if _, err := cl.Revoke(ctx, kept.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.Get(ctx, "/registry/events/default/e2"); err != nil || len(got.Kvs) != 0 {
		t.Fatalf("key of a revoked lease: %v %v", got, err)
	}
	if _, err := cl.Put(ctx, "/registry/events/default/e3", "z", clientv3.WithLease(kept.ID)); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("put with a revoked lease: %v, want %v", err, rpctypes.ErrLeaseNotFound)
	}
}
