package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/fsm/state"
)

// RBACPolicy is the RBAC objects of this node's applied state, one
// consistent view: the authorizer reads it on every request, as
// kube-apiserver reads its informers' caches, with no round trip to the
// leader. A change of policy takes effect on a node once it has applied
// the change.
func (s *Store) RBACPolicy() rbac.Policy {
	return statePolicy{s.cluster.State().Snapshot()}
}

type statePolicy struct{ sn *state.Snapshot }

func (p statePolicy) GetRole(namespace, name string) (*rbacv1.Role, bool) {
	o := p.sn.Get(state.Key{Resource: Roles.Name, Namespace: namespace, Name: name})
	if o == nil {
		return nil, false
	}
	r, ok := o.Obj.(*rbacv1.Role)
	return r, ok
}

func (p statePolicy) GetClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	o := p.sn.Get(state.Key{Resource: ClusterRoles.Name, Name: name})
	if o == nil {
		return nil, false
	}
	r, ok := o.Obj.(*rbacv1.ClusterRole)
	return r, ok
}

// The lists are in key order (by name), so that an allow's reason names
// the same binding on every node.

func (p statePolicy) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	if namespace == "" {
		return nil // a namespaced binding grants only in its namespace
	}
	return list[rbacv1.RoleBinding](p.sn, RoleBindings, namespace)
}

func (p statePolicy) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return list[rbacv1.ClusterRoleBinding](p.sn, ClusterRoleBindings, "")
}

func (p statePolicy) ListClusterRoles() []*rbacv1.ClusterRole {
	return list[rbacv1.ClusterRole](p.sn, ClusterRoles, "")
}

// list is every stored object of r in namespace ("" = all), in key order.
func list[T any](sn *state.Snapshot, r *Resource, namespace string) []*T {
	var out []*T
	sn.List(r.Name, namespace, nil, func(o *state.Object) bool {
		if t, ok := o.Obj.(any).(*T); ok {
			out = append(out, t)
		}
		return true
	})
	return out
}
