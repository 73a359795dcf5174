package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Policy is a consistent view of the RBAC objects. Implementations return
// stored objects, which callers must not modify. The order of the lists is
// the order in which rules are visited: it decides which binding an
// allowing reason names (kube-apiserver visits its informer's order), so a
// store should list in a stable order, such as by name.
type Policy interface {
	// GetRole returns the Role namespace/name, if it exists.
	GetRole(namespace, name string) (*rbacv1.Role, bool)
	// GetClusterRole returns the ClusterRole name, if it exists.
	GetClusterRole(name string) (*rbacv1.ClusterRole, bool)
	// ListRoleBindings returns the RoleBindings of namespace.
	ListRoleBindings(namespace string) []*rbacv1.RoleBinding
	// ListClusterRoleBindings returns every ClusterRoleBinding.
	ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding
	// ListClusterRoles returns every ClusterRole (for aggregation).
	ListClusterRoles() []*rbacv1.ClusterRole
}

// StaticPolicy is a Policy over fixed lists of objects, listed in the order
// given: for tests, and for a node that has not loaded its store yet.
type StaticPolicy struct {
	Roles               []*rbacv1.Role
	RoleBindings        []*rbacv1.RoleBinding
	ClusterRoles        []*rbacv1.ClusterRole
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
}

var _ Policy = (*StaticPolicy)(nil)

// GetRole implements Policy.
func (p *StaticPolicy) GetRole(namespace, name string) (*rbacv1.Role, bool) {
	for _, r := range p.Roles {
		if r.Namespace == namespace && r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// GetClusterRole implements Policy.
func (p *StaticPolicy) GetClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	for _, r := range p.ClusterRoles {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// ListRoleBindings implements Policy.
func (p *StaticPolicy) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	var out []*rbacv1.RoleBinding
	for _, b := range p.RoleBindings {
		if b.Namespace == namespace {
			out = append(out, b)
		}
	}
	return out
}

// ListClusterRoleBindings implements Policy.
func (p *StaticPolicy) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return p.ClusterRoleBindings
}

// ListClusterRoles implements Policy.
func (p *StaticPolicy) ListClusterRoles() []*rbacv1.ClusterRole { return p.ClusterRoles }

// emptyPolicy holds nothing: what a nil Policy means.
type emptyPolicy struct{}

func (emptyPolicy) GetRole(string, string) (*rbacv1.Role, bool)           { return nil, false }
func (emptyPolicy) GetClusterRole(string) (*rbacv1.ClusterRole, bool)     { return nil, false }
func (emptyPolicy) ListRoleBindings(string) []*rbacv1.RoleBinding         { return nil }
func (emptyPolicy) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding { return nil }
func (emptyPolicy) ListClusterRoles() []*rbacv1.ClusterRole               { return nil }

func orEmpty(p Policy) Policy {
	if p == nil {
		return emptyPolicy{}
	}
	return p
}
