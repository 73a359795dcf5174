package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/fsm/state"
)

// RBACPolicy is the RBAC objects of this node's applied state: the
// authorizer reads it on every request, as kube-apiserver reads its
// informers' caches, with no round trip to the leader. A change of policy
// takes effect on a node once it has applied the change.
//
// The objects are gathered once per change of any of them, not per
// request: Leases change thousands of times a second, RBAC objects
// rarely, and a renewal's authorization would otherwise walk the tree for
// every binding.
func (s *Store) RBACPolicy() rbac.Policy {
	st := s.cluster.State()
	at := st.ChangedAt(rbacResources[:]...)
	// at is read before the snapshot a rebuild takes, so a view is never
	// older than the number it is kept under.
	if v := s.rbac.Load(); v != nil && v.at == at {
		return v
	}
	v := newRBACView(st.Snapshot(), at)
	s.rbac.Store(v)
	return v
}

// rbacResources are the resources an RBAC decision reads.
var rbacResources = [...]string{Roles.Name, ClusterRoles.Name, RoleBindings.Name, ClusterRoleBindings.Name}

// rbacView is every RBAC object of one state, indexed as the authorizer
// asks for them. Its lists are in key order (by name), so that an allow's
// reason names the same binding on every node. Never mutated once built.
type rbacView struct {
	at                  uint64
	roles               map[string]*rbacv1.Role // namespace/name
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[string][]*rbacv1.RoleBinding // by namespace
	clusterRoleList     []*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	decisions           rbac.Decisions // taken against this view only
}

var _ rbac.CachingPolicy = (*rbacView)(nil)

func newRBACView(sn *state.Snapshot, at uint64) *rbacView {
	v := &rbacView{
		at:           at,
		roles:        map[string]*rbacv1.Role{},
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
	}
	for _, r := range list[rbacv1.Role](sn, Roles) {
		v.roles[r.Namespace+"/"+r.Name] = r
	}
	v.clusterRoleList = list[rbacv1.ClusterRole](sn, ClusterRoles)
	for _, r := range v.clusterRoleList {
		v.clusterRoles[r.Name] = r
	}
	for _, b := range list[rbacv1.RoleBinding](sn, RoleBindings) {
		v.roleBindings[b.Namespace] = append(v.roleBindings[b.Namespace], b)
	}
	v.clusterRoleBindings = list[rbacv1.ClusterRoleBinding](sn, ClusterRoleBindings)
	return v
}

func (v *rbacView) GetRole(namespace, name string) (*rbacv1.Role, bool) {
	r, ok := v.roles[namespace+"/"+name]
	return r, ok
}

func (v *rbacView) GetClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := v.clusterRoles[name]
	return r, ok
}

// ListRoleBindings: a namespaced binding grants only in its namespace, so
// there are none for a cluster-scoped request (namespace "").
func (v *rbacView) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	return v.roleBindings[namespace]
}

func (v *rbacView) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return v.clusterRoleBindings
}

func (v *rbacView) ListClusterRoles() []*rbacv1.ClusterRole { return v.clusterRoleList }

func (v *rbacView) Decisions() *rbac.Decisions { return &v.decisions }

// list is every stored object of r, in key order.
func list[T any](sn *state.Snapshot, r *Resource) []*T {
	var out []*T
	sn.List(r.Name, "", nil, func(o *state.Object) bool {
		if t, ok := o.Obj.(any).(*T); ok {
			out = append(out, t)
		}
		return true
	})
	return out
}
