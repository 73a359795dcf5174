package registry_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/registry"
)

// before runs a write of its own just before the first command of a type
// reaches the log: a race made certain.
type before struct {
	registry.Cluster
	typ   fsm.CommandType
	once  sync.Once
	write func(ctx context.Context)
}

func (c *before) Apply(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	if cmd.Type == c.typ {
		c.once.Do(func() { c.write(ctx) })
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
	// The Lease is deleted just before the update reaches the log: the race
	// the chaos suite found.
	racing := registry.New(&before{Cluster: node, typ: fsm.CmdUpdate, write: func(ctx context.Context) {
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

// staleView is a node whose state lags: State is a stopped follower's,
// frozen, until the store asks for a current state (EnsureCurrent or a
// linearizable read); writes go through the leader.
type staleView struct {
	registry.Cluster // the leader
	stale            *state.Store
	current          atomic.Bool
}

func (c *staleView) State() *state.Store {
	if c.current.Load() {
		return c.Cluster.State()
	}
	return c.stale
}

func (c *staleView) EnsureCurrent(ctx context.Context) error {
	c.current.Store(true)
	return c.Cluster.EnsureCurrent(ctx)
}

func (c *staleView) LinearizableRead(ctx context.Context) error {
	c.current.Store(true)
	return c.Cluster.LinearizableRead(ctx)
}

// An update is first decided from the node's state as it is. Decided from
// an old version, it either fails in the log (the client's version is old
// too: 409) or is decided again from a current state (the client's version
// is newer than the node's: the update goes through).
func TestUpdateDecidedFromOldState(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.Nodes[c.Leader()].Raft()
	f := c.Follower()
	plain := registry.New(leader)
	ctx := wtCtx(t)
	created, err := plain.Create(ctx, registry.Leases, wtNewLease("ns", "l", "a", ""), registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	follower := c.Nodes[f].Raft()
	if err := follower.LinearizableRead(ctx); err != nil {
		t.Fatal(err)
	}
	c.Stop(f)
	old := created.(*coordinationv1.Lease)
	renewed := old.DeepCopy()
	renewed.Spec.HolderIdentity = ptr.To("b")
	current, _, err := plain.Update(ctx, registry.Leases, "ns", "l", renewed, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur := current.(*coordinationv1.Lease)

	for _, tc := range []struct {
		name    string
		base    *coordinationv1.Lease // the version the client sends
		wantErr bool
	}{
		{"client as old as the node", old, true},
		{"client newer than the node", cur, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := registry.New(&staleView{Cluster: leader, stale: follower.State()})
			s.RVWait = 100 * time.Millisecond
			upd := tc.base.DeepCopy()
			upd.Spec.HolderIdentity = ptr.To("c-" + tc.name)
			out, _, err := s.Update(ctx, registry.Leases, "ns", "l", upd, registry.WriteOptions{})
			got, gerr := plain.Get(ctx, registry.Leases, "ns", "l", registry.ReadOptions{})
			if gerr != nil {
				t.Fatal(gerr)
			}
			holder := *got.(*coordinationv1.Lease).Spec.HolderIdentity
			if tc.wantErr {
				if !apierrors.IsConflict(err) {
					t.Fatalf("update with the node's old version: %v, want 409", err)
				}
				if holder != "b" {
					t.Errorf("a refused update changed the holder to %q", holder)
				}
				return
			}
			if err != nil {
				t.Fatalf("update with the current version through a node behind: %v", err)
			}
			if holder != "c-"+tc.name || wtRV(t, out) <= wtRV(t, cur) {
				t.Errorf("after the update: holder %q rv %d (was %d)", holder, wtRV(t, out), wtRV(t, cur))
			}
		})
	}
}

// A PUT of a missing Lease that someone else creates meanwhile is an
// update of theirs: with the body's old resourceVersion, a 409, and the
// body is still the client's (no uid or resourceVersion of a create left
// in it) when it is decided again.
func TestUpdateOfObjectCreatedMeanwhile(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	node := c.Nodes[c.Leader()].Raft()
	plain := registry.New(node)
	ctx := wtCtx(t)
	racing := registry.New(&before{Cluster: node, typ: fsm.CmdCreate, write: func(ctx context.Context) {
		if _, err := plain.Create(ctx, registry.Leases, wtNewLease("ns", "l", "theirs", ""), registry.WriteOptions{}); err != nil {
			t.Errorf("create: %v", err)
		}
	}})
	mine := wtNewLease("ns", "l", "mine", "")
	mine.ResourceVersion = "1"
	_, _, err := racing.Update(ctx, registry.Leases, "ns", "l", mine, registry.WriteOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update of a Lease created meanwhile: %v, want 409", err)
	}
	got, err := plain.Get(ctx, registry.Leases, "ns", "l", registry.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := *got.(*coordinationv1.Lease).Spec.HolderIdentity; h != "theirs" {
		t.Errorf("holder %q, want theirs", h)
	}
	if mine.UID != "" || mine.ResourceVersion != "1" {
		t.Errorf("the client's body was changed: uid %q rv %q", mine.UID, mine.ResourceVersion)
	}
}
