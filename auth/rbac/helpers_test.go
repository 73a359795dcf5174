package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func pr(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func l(s ...string) []string { return s }

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func crb(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
		Subjects:   subjects,
	}
}

func rb(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName},
		Subjects:   subjects,
	}
}

func who(name string, groups ...string) user.Info {
	return &user.DefaultInfo{Name: name, Groups: groups}
}

// res is a resource request: verb group resource[/sub] in ns, named name.
func res(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
}

func nonRes(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

func static(p *StaticPolicy) func() Policy { return func() Policy { return p } }

// bootstrapPolicy is the bootstrap policy after aggregation, plus extra.
func bootstrapPolicy(extra *StaticPolicy) *StaticPolicy {
	p := &StaticPolicy{ClusterRoles: ClusterRoles(), ClusterRoleBindings: ClusterRoleBindings()}
	if extra != nil {
		p.Roles = append(p.Roles, extra.Roles...)
		p.RoleBindings = append(p.RoleBindings, extra.RoleBindings...)
		p.ClusterRoles = append(p.ClusterRoles, extra.ClusterRoles...)
		p.ClusterRoleBindings = append(p.ClusterRoleBindings, extra.ClusterRoleBindings...)
	}
	agg := Aggregate(p.ClusterRoles)
	for _, r := range p.ClusterRoles {
		if rules, ok := agg[r.Name]; ok {
			r.Rules = rules
		}
	}
	return p
}
