package registry_test

import (
	"context"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/registry"
)

// deleteBeforeUpdate deletes the object an update is about to replace
// just before the update reaches the log, once: the race the chaos suite
// found, made certain.
type deleteBeforeUpdate struct {
	registry.Cluster
	once   sync.Once
	delete func(ctx context.Context)
}

func (c *deleteBeforeUpdate) Apply(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if cmd.Type == fsm.CmdUpdate {
		c.once.Do(func() { c.delete(ctx) })
	}
	return c.Cluster.Apply(ctx, cmd)
}

// Regression (found by test/chaos): a PUT whose Lease is deleted after the
// update was decided but before it committed answered 404. Like
// kube-apiserver, whose update retries on a changed object and creates a
// missing one when the resource allows create on update, it creates it.
func TestUpdateOfObjectDeletedMeanwhileCreatesIt(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	node := c.Nodes[c.Leader()].Raft()
	plain := registry.New(node)
	ctx := wtCtx(t)
	created, err := plain.Create(ctx, registry.Leases, wtNewLease("ns", "l", "a", ""), registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	racing := registry.New(&deleteBeforeUpdate{Cluster: node, delete: func(ctx context.Context) {
		if _, err := plain.Delete(ctx, registry.Leases, "ns", "l", registry.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	}})
	update := created.(*coordinationv1.Lease).DeepCopy()
	update.Spec.HolderIdentity = ptr.To("b")
	_, wasCreated, err := racing.Update(ctx, registry.Leases, "ns", "l", update, registry.WriteOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatalf("update of a Lease deleted meanwhile answered 404: %v", err)
	}
	if err != nil || !wasCreated {
		t.Fatalf("update: created=%v err=%v", wasCreated, err)
	}
	got, err := plain.Get(ctx, registry.Leases, "ns", "l", registry.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*coordinationv1.Lease)
	if *l.Spec.HolderIdentity != "b" || l.UID == created.(metav1.Object).GetUID() {
		t.Fatalf("after the update: holder %q uid %s (old uid %s)", *l.Spec.HolderIdentity, l.UID, created.(metav1.Object).GetUID())
	}
}
