package policy_test

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/policy"
	"github.com/leasehold/leasehold/registry"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The controller runs on every node and acts on the leader only: it
// creates the bootstrap policy, puts back what is deleted, restores the
// aggregated rules, leaves alone what is marked autoupdate=false, and a new
// leader carries on.
func TestController(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stores := make([]*registry.Store, len(c.Nodes))
	for i, n := range c.Nodes {
		stores[i] = registry.New(n.Raft())
		go policy.NewController(stores[i], n.Raft(), 100*time.Millisecond, nil).Run(ctx)
	}
	follower := stores[c.Follower()]
	clusterRole := func(name string) (*rbacv1.ClusterRole, bool) { return follower.RBACPolicy().GetClusterRole(name) }
	hasLeaseRules := func(r *rbacv1.ClusterRole) bool {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "leases") {
				return true
			}
		}
		return false
	}

	// Everything bootstrapped, edit aggregated, on a follower too.
	waitFor(t, "the bootstrap policy", func() bool {
		for _, want := range rbac.ClusterRoles() {
			if _, ok := clusterRole(want.Name); !ok {
				return false
			}
		}
		edit, _ := clusterRole("edit")
		return len(follower.RBACPolicy().ListClusterRoleBindings()) == len(rbac.ClusterRoleBindings()) && edit != nil && hasLeaseRules(edit)
	})
	for _, want := range rbac.ClusterRoles() {
		got, _ := clusterRole(want.Name)
		if want.AggregationRule == nil && !equality.Semantic.DeepEqual(got.Rules, want.Rules) {
			t.Errorf("%s: rules %v, want %v", want.Name, got.Rules, want.Rules)
		}
	}

	// Deleted: created again.
	if _, err := stores[c.Leader()].Delete(ctx, registry.ClusterRoles, "", rbac.LeaseHolder, registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "lease-holder again", func() bool { _, ok := clusterRole(rbac.LeaseHolder); return ok })

	// Aggregated rules edited away: written again.
	edit, _ := clusterRole("edit")
	stripped := edit.DeepCopy()
	stripped.Rules = nil
	if _, _, err := stores[c.Leader()].Update(ctx, registry.ClusterRoles, "", "edit", stripped, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "edit aggregated again", func() bool { r, _ := clusterRole("edit"); return r != nil && hasLeaseRules(r) })

	// autoupdate=false: left as the user made it.
	view, _ := clusterRole("system:monitoring")
	mine := view.DeepCopy()
	mine.Annotations[rbac.AutoUpdateAnnotation] = "false"
	mine.Rules = mine.Rules[:1]
	if _, _, err := stores[c.Leader()].Update(ctx, registry.ClusterRoles, "", mine.Name, mine, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // five rounds
	if got, _ := clusterRole(mine.Name); len(got.Rules) != 1 {
		t.Errorf("autoupdate=false role changed: %v", got.Rules)
	}

	// A new leader carries on.
	old := c.Leader()
	c.Stop(old)
	c.WaitReady()
	next := c.Leader()
	if _, err := stores[next].Delete(ctx, registry.ClusterRoles, "", "view", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "view recreated by the new leader", func() bool {
		_, ok := stores[next].RBACPolicy().GetClusterRole("view")
		return ok
	})
}
