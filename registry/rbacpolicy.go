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
	var out []*rbacv1.RoleBinding
	if namespace == "" {
		return nil // a namespaced binding grants only in its namespace
	}
	p.sn.List(RoleBindings.Name, namespace, nil, func(o *state.Object) bool {
		if b, ok := o.Obj.(*rbacv1.RoleBinding); ok {
			out = append(out, b)
		}
		return true
	})
	return out
}

func (p statePolicy) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	var out []*rbacv1.ClusterRoleBinding
	p.sn.List(ClusterRoleBindings.Name, "", nil, func(o *state.Object) bool {
		if b, ok := o.Obj.(*rbacv1.ClusterRoleBinding); ok {
			out = append(out, b)
		}
		return true
	})
	return out
}

func (p statePolicy) ListClusterRoles() []*rbacv1.ClusterRole {
	var out []*rbacv1.ClusterRole
	p.sn.List(ClusterRoles.Name, "", nil, func(o *state.Object) bool {
		if r, ok := o.Obj.(*rbacv1.ClusterRole); ok {
			out = append(out, r)
		}
		return true
	})
	return out
}
