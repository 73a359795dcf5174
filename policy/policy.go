// Package policy runs RBAC on top of the replicated state: the escalation
// check on writes of roles and bindings, and, on the Raft leader, the
// bootstrap roles and the aggregated roles that kube-apiserver's bootstrap
// hook and kube-controller-manager's aggregation controller keep current.
// Every change it makes is an ordinary write through the registry, so a new
// leader simply carries on.
package policy

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/registry"
)

// Admit is the registry's admission of RBAC writes (registry.Store.Admit):
// a user may create or update a role only with permissions it holds
// itself (or the escalate verb), and a binding only to a role whose
// permissions it holds (or the bind verb), as kube-apiserver's RBAC
// storage decides. Writes without a user (the node's own controllers) and
// other resources pass.
func Admit(authz auth.Authorizer, store *registry.Store) func(ctx context.Context, r *registry.Resource, obj, old registry.Object) error {
	return func(ctx context.Context, r *registry.Resource, obj, old registry.Object) error {
		u, ok := auth.UserFrom(ctx)
		if !ok {
			return nil
		}
		switch o := obj.(type) {
		case *rbacv1.Role:
			return rbac.CheckRoleWrite(ctx, authz, store.RBACPolicy(), u, o.Namespace, o.Name, o.Rules, false)
		case *rbacv1.ClusterRole:
			prev, _ := old.(*rbacv1.ClusterRole)
			aggregated := rbac.HasAggregationRule(o) || rbac.HasAggregationRule(prev)
			return rbac.CheckRoleWrite(ctx, authz, store.RBACPolicy(), u, "", o.Name, o.Rules, aggregated)
		case *rbacv1.RoleBinding:
			return rbac.CheckBindingWrite(ctx, authz, store.RBACPolicy(), u, o.Namespace, o.Name, o.RoleRef)
		case *rbacv1.ClusterRoleBinding:
			return rbac.CheckBindingWrite(ctx, authz, store.RBACPolicy(), u, "", o.Name, o.RoleRef)
		}
		return nil
	}
}

// Leader tells whether this node leads the Raft cluster.
type Leader interface{ IsLeader() bool }

// BootstrapRolesCheck names the readiness check that waits for the
// bootstrap policy, as kube-apiserver's post-start hook of that name holds
// its /readyz.
const BootstrapRolesCheck = "poststarthook/rbac/bootstrap-roles"

// startupChecker is a node whose readiness can wait for a condition
// (cluster.Node).
type startupChecker interface {
	AddStartupCheck(name string, check func() string)
}

// Controller keeps the bootstrap policy and the aggregated ClusterRoles
// current while this node leads.
type Controller struct {
	store    *registry.Store
	leader   Leader
	interval time.Duration
	log      hclog.Logger
}

// NewController returns a controller writing through store; it reconciles
// every interval (and as soon as this node becomes leader).
//
// When leader is a node whose readiness can wait (cluster.Node), the node
// is not ready (BootstrapRolesCheck) until its own applied state holds the
// bootstrap policy (BootstrapPending), follower or leader: a client that
// waited for /readyz is never refused, or told a bootstrap role does not
// exist, because the leader has not written it yet or this node has not
// applied it. The leader writes the policy whatever the authorization
// mode, so every node waits for it, AlwaysAllow too. The check is added
// here, not in Run, so that it is in place before the node serves.
func NewController(store *registry.Store, leader Leader, interval time.Duration, log hclog.Logger) *Controller {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &Controller{store: store, leader: leader, interval: interval, log: log}
	if n, ok := leader.(startupChecker); ok {
		n.AddStartupCheck(BootstrapRolesCheck, func() string { return BootstrapPending(store.RBACPolicy()) })
	}
	return c
}

// BootstrapPending says what of the bootstrap policy p still lacks, ""
// when nothing: every bootstrap ClusterRole and ClusterRoleBinding of this
// release is there with at least the rules and subjects Reconcile would
// write (what it would leave alone passes: an object marked
// autoupdate=false, rules users added), and the aggregated ClusterRoles
// hold their aggregated rules.
//
// Mixed releases: a node whose release adds to the bootstrap policy stays
// not ready under a leader of an earlier release, until a leader of its
// own writes the addition; such a release must say so in its upgrade
// notes. The policy is unchanged since a993056, the rolling-upgrade
// test's earlier release.
func BootstrapPending(p rbac.Policy) string {
	for _, want := range rbac.ClusterRoles() {
		existing, _ := p.GetClusterRole(want.Name)
		if _, changed := rbac.ReconcileClusterRole(existing, want); changed {
			return pendingReason("clusterrole", want.Name, existing == nil)
		}
	}
	bindings := p.ListClusterRoleBindings()
	for _, want := range rbac.ClusterRoleBindings() {
		var existing *rbacv1.ClusterRoleBinding
		for _, b := range bindings {
			if b.Name == want.Name {
				existing = b
			}
		}
		if _, _, changed := rbac.ReconcileClusterRoleBinding(existing, want); changed {
			return pendingReason("clusterrolebinding", want.Name, existing == nil)
		}
	}
	if updates := rbac.AggregationUpdates(p.ListClusterRoles()); len(updates) > 0 {
		return "the bootstrap RBAC policy is not in place yet: clusterrole " + updates[0].Name + " lacks its aggregated rules"
	}
	return ""
}

func pendingReason(kind, name string, missing bool) string {
	if missing {
		return "the bootstrap RBAC policy is not in place yet: " + kind + " " + name + " does not exist"
	}
	return "the bootstrap RBAC policy is not in place yet: " + kind + " " + name + " is not up to date"
}

// leaderPoll is how often a follower looks whether it leads now.
const leaderPoll = 200 * time.Millisecond

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var next time.Time
	leading := false
	for ctx.Err() == nil {
		if c.leader.IsLeader() {
			if !leading {
				leading, next = true, time.Time{}
			}
			if !time.Now().Before(next) {
				if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
					c.log.Warn("RBAC policy not reconciled, retrying", "error", err)
					next = time.Now().Add(time.Second)
				} else {
					next = time.Now().Add(c.interval)
				}
			}
		} else {
			leading = false
		}
		select {
		case <-ctx.Done():
		case <-time.After(leaderPoll):
		}
	}
}

// Reconcile creates the missing bootstrap ClusterRoles and
// ClusterRoleBindings, adds what the release's defaults added to those
// marked for automatic update, and writes the rules of every aggregated
// ClusterRole.
func (c *Controller) Reconcile(ctx context.Context) error {
	policy := c.store.RBACPolicy()
	for _, want := range rbac.ClusterRoles() {
		existing, _ := policy.GetClusterRole(want.Name)
		obj, changed := rbac.ReconcileClusterRole(existing, want)
		if !changed {
			continue
		}
		if err := c.write(ctx, registry.ClusterRoles, existing == nil, obj); err != nil {
			return err
		}
	}
	for _, want := range rbac.ClusterRoleBindings() {
		var existing *rbacv1.ClusterRoleBinding
		for _, b := range policy.ListClusterRoleBindings() {
			if b.Name == want.Name {
				existing = b
			}
		}
		obj, recreate, changed := rbac.ReconcileClusterRoleBinding(existing, want)
		if !changed {
			continue
		}
		if recreate {
			// A binding's roleRef cannot change: delete and create it.
			if _, err := c.store.Delete(ctx, registry.ClusterRoleBindings, "", want.Name, registry.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if err := c.write(ctx, registry.ClusterRoleBindings, existing == nil || recreate, obj); err != nil {
			return err
		}
	}
	// The aggregation reads the roles as just reconciled.
	for _, role := range rbac.AggregationUpdates(c.store.RBACPolicy().ListClusterRoles()) {
		if err := c.write(ctx, registry.ClusterRoles, false, role); err != nil {
			return err
		}
	}
	return nil
}

// write creates or updates obj, which leaves it alone.
func (c *Controller) write(ctx context.Context, r *registry.Resource, create bool, obj registry.Object) error {
	obj = obj.DeepCopyObject().(registry.Object)
	obj.SetManagedFields(nil)
	opts := registry.WriteOptions{Manager: manager}
	var err error
	if create {
		obj.SetResourceVersion("")
		_, err = c.store.Create(ctx, r, obj, opts)
		if apierrors.IsAlreadyExists(err) {
			return nil // created meanwhile; the next round looks again
		}
	} else {
		_, _, err = c.store.Update(ctx, r, obj.GetNamespace(), obj.GetName(), obj, opts)
		if apierrors.IsConflict(err) {
			return nil // changed meanwhile; the next round looks again
		}
	}
	if err == nil {
		c.log.Info("RBAC policy written", "resource", r.Name, "name", obj.GetName(), "created", create)
	}
	return err
}

// manager is the field manager of what the controller writes.
const manager = "leasehold-rbac"
