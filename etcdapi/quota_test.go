package etcdapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// newQuotaCluster is an etcd cluster whose nodes have a small quota and
// request limit, at the feature level that applies them.
func newQuotaCluster(t *testing.T, quota, maxRequest uint64) *etcdCluster {
	t.Helper()
	opts := testcluster.Options{Cluster: func(_ string, cfg *cluster.Config) {
		cfg.QuotaBackendBytes, cfg.MaxRequestBytes = quota, maxRequest
	}}
	return startEtcdCluster(t, opts, Config{MaxRequestBytes: int(maxRequest)}, fsm.MaxFeatureLevel)
}

// TestQuota_FullStoreKeepsLeases fills a cluster with a 256 KiB quota
// through both doors: growing writes get 507 and etcd's NoSpace, every node
// lists the NOSPACE alarm, renewals, holder changes and deletes still go
// through, and once space is freed and the alarm disarmed, creates do
// again. Writes larger than --max-request-bytes are refused whole.
func TestQuota_FullStoreKeepsLeases(t *testing.T) {
	const quota, maxRequest = 256 << 10, 64 << 10
	c := newQuotaCluster(t, quota, maxRequest)
	ctx := ctxT(t)
	// Through a follower: the refusal comes back from the leader.
	leases := c.Client(c.Follower(), true).CoordinationV1().Leases("default")
	kv := c.client(t, 0)
	annotation := strings.Repeat("x", 8<<10)
	lease := func(name, holder string, sec int) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"fill": annotation}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &holder,
				LeaseDurationSeconds: ptr[int32](15),
				RenewTime:            &metav1.MicroTime{Time: time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC)},
			},
		}
	}
	// A raw key, and a Lease to renew, before the store fills.
	value := strings.Repeat("v", 1000)
	if _, err := kv.Put(ctx, "/raw/a", value); err != nil {
		t.Fatal(err)
	}
	held, err := leases.Create(ctx, lease("held", "holder-1", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Fill it through REST.
	var full error
	created := 0
	for i := 0; i < 100 && full == nil; i++ {
		if _, full = leases.Create(ctx, lease(fmt.Sprintf("fill-%02d", i), "h", 0), metav1.CreateOptions{}); full == nil {
			created++
		}
	}
	var se *apierrors.StatusError
	if !errors.As(full, &se) || se.ErrStatus.Code != 507 {
		t.Fatalf("after %d creates: %v, want a 507; stored %d", created, full, c.Nodes[0].Raft().StoredBytes())
	}
	if msg := se.ErrStatus.Message; !strings.Contains(msg, "--quota-backend-bytes") || !strings.Contains(msg, "leaseholdctl alarm disarm") {
		t.Errorf("507 message %q does not name the flag and the remedy", msg)
	}
	t.Logf("%d Leases of 8 KiB fit; %d bytes stored", created, c.Nodes[0].Raft().StoredBytes())
	if created < 20 {
		t.Errorf("only %d 8 KiB Leases fit in 256 KiB", created)
	}
	stored := c.Nodes[0].Raft().StoredBytes()
	if stored > quota {
		t.Errorf("stored %d bytes, over the quota %d", stored, quota)
	}

	// Every node lists the alarm, for every member, in its own state and
	// through its etcd port.
	if !testcluster.WaitFor(ctx, 10*time.Second, func() bool {
		for _, n := range c.Nodes {
			if len(n.Raft().Alarms()) != 3 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("not every node lists NOSPACE for every member")
	}
	for i := range c.Nodes {
		resp, err := c.client(t, i).AlarmList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Alarms) != 3 || resp.Alarms[0].Alarm != etcdserverpb.AlarmType_NOSPACE {
			t.Errorf("node %d: etcd alarm list %v", i, resp.Alarms)
		}
	}

	// The etcd door refuses growing writes as etcd does.
	if _, err := kv.Put(ctx, "/raw/b", value); !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Errorf("put of a new key while full: %v, want %v", err, rpctypes.ErrNoSpace)
	}
	if _, err := kv.Put(ctx, "/raw/a", strings.Repeat("w", 1000)); err != nil {
		t.Errorf("put of a same-size value while full: %v", err)
	}

	// Renewals and a holder change of the same size go through.
	for sec := 1; sec <= 3; sec++ {
		next := held.DeepCopy()
		next.Spec.RenewTime = &metav1.MicroTime{Time: time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC)}
		if held, err = leases.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("renewal %d while full: %v", sec, err)
		}
	}
	next := held.DeepCopy()
	next.Spec.HolderIdentity = ptr("holder-2")
	if held, err = leases.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("holder change while full: %v", err)
	}
	grown := held.DeepCopy()
	grown.Annotations["more"] = annotation
	if _, err := leases.Update(ctx, grown, metav1.UpdateOptions{}); !isCode(err, 507) {
		t.Errorf("growing update while full: %v, want 507", err)
	}

	// Deletes go through, through both doors; the alarm stays until
	// disarmed.
	for i := range 5 {
		if err := leases.Delete(ctx, fmt.Sprintf("fill-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete while full: %v", err)
		}
	}
	if _, err := kv.Delete(ctx, "/raw/a"); err != nil {
		t.Fatalf("etcd delete while full: %v", err)
	}
	if _, err := leases.Create(ctx, lease("after", "h", 0), metav1.CreateOptions{}); !isCode(err, 507) {
		t.Fatalf("create after deletes, before disarm: %v, want 507", err)
	}
	// etcdctl alarm disarm: list, then deactivate each.
	disarmed, err := c.client(t, 1).AlarmDisarm(ctx, &clientv3.AlarmMember{})
	if err != nil || len(disarmed.Alarms) == 0 {
		t.Fatalf("disarm: %v %v", disarmed, err)
	}
	if !testcluster.WaitFor(ctx, 10*time.Second, func() bool {
		for _, n := range c.Nodes {
			if len(n.Raft().Alarms()) != 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the alarm is still listed after disarm")
	}
	if _, err := leases.Create(ctx, lease("after", "h", 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after disarm: %v", err)
	}
	if _, err := kv.Put(ctx, "/raw/b", value); err != nil {
		t.Fatalf("etcd put after disarm: %v", err)
	}

	// --max-request-bytes, through both doors: nothing stored.
	big := lease("big", "h", 0)
	big.Annotations["fill"] = strings.Repeat("y", maxRequest+1)
	if _, err := leases.Create(ctx, big, metav1.CreateOptions{}); !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("create over --max-request-bytes: %v, want 413", err)
	}
	if _, err := kv.Put(ctx, "/raw/big", strings.Repeat("y", maxRequest+1)); !errors.Is(err, rpctypes.ErrRequestTooLarge) {
		t.Errorf("etcd put over --max-request-bytes: %v, want %v", err, rpctypes.ErrRequestTooLarge)
	}
	if _, err := leases.Get(ctx, "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused Lease: %v", err)
	}
}

func isCode(err error, code int32) bool {
	var se *apierrors.StatusError
	return errors.As(err, &se) && se.ErrStatus.Code == code
}
