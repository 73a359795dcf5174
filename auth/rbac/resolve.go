package rbac

import (
	"fmt"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Visitor receives each rule that applies to a user, with the binding it
// comes from (source describes it as kube-apiserver does, e.g.
// `ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to
// Group "system:masters"`), or an error resolving a binding's role (then
// source and rule are nil). Returning false stops the visit.
type Visitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// VisitRulesFor visits the rules policy grants u in namespace, as
// kube-apiserver's DefaultRuleResolver does: those of every
// ClusterRoleBinding that applies to u, then, if namespace is not empty,
// those of every RoleBinding of namespace that applies to u (a RoleBinding
// to a ClusterRole grants its rules in that namespace only). A binding
// applies if any of its subjects is u: a User of u's name, a Group u is in,
// a ServiceAccount whose user name is u's (its namespace defaulting to the
// RoleBinding's). A nil user is granted nothing.
func VisitRulesFor(policy Policy, u user.Info, namespace string, visitor Visitor) {
	policy = orEmpty(policy)
	if u == nil {
		return
	}
	for _, b := range policy.ListClusterRoleBindings() {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := RoleRefRules(policy, b.RoleRef, "")
		if err != nil {
			if !visitor(nil, nil, err) {
				return
			}
			continue
		}
		source := &clusterRoleBindingDescriber{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visitor(source, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range policy.ListRoleBindings(namespace) {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := RoleRefRules(policy, b.RoleRef, namespace)
		if err != nil {
			if !visitor(nil, nil, err) {
				return
			}
			continue
		}
		source := &roleBindingDescriber{binding: b, subject: &b.Subjects[i]}
		for j := range rules {
			if !visitor(source, &rules[j], nil) {
				return
			}
		}
	}
}

// UserRules returns every rule policy grants u in namespace (cluster-wide
// only, for namespace ""), and the errors resolving bindings' roles as one
// aggregate error: the rules returned are still granted, but may not be all
// u was meant to have.
func UserRules(policy Policy, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	VisitRulesFor(policy, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RoleRefRules returns the rules of the role a binding in namespace
// references ("" for a ClusterRoleBinding): a Role of that namespace or a
// ClusterRole. A missing role is kube's NotFound error (as its listers say
// it: `clusterrole.rbac.authorization.k8s.io "name" not found`).
func RoleRefRules(policy Policy, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	policy = orEmpty(policy)
	switch ref.Kind {
	case "Role":
		r, ok := policy.GetRole(namespace, ref.Name)
		if !ok {
			return nil, apierrors.NewNotFound(rbacv1.Resource("role"), ref.Name)
		}
		return r.Rules, nil
	case "ClusterRole":
		r, ok := policy.GetClusterRole(ref.Name)
		if !ok {
			return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), ref.Name)
		}
		return r.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// appliesTo returns the index of the first subject that is u.
func appliesTo(u user.Info, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if appliesToUser(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

func appliesToUser(u user.Info, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		for _, g := range u.GetGroups() {
			if g == s.Name {
				return true
			}
		}
		return false
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		if ns == "" {
			return false
		}
		return serviceaccount.MatchesUsername(ns, s.Name, u.GetName())
	}
	return false
}

// The describers word an allowing rule's source as kube's RBAC authorizer
// does ("RBAC: allowed by ..."), by concatenation: the reason is built on
// every allowed request.
func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Namespace != "" {
			return s.Kind + " " + strconv.Quote(s.Name+"/"+s.Namespace)
		}
		return s.Kind + " " + strconv.Quote(s.Name+"/"+bindingNamespace)
	default:
		return s.Kind + " " + strconv.Quote(s.Name)
	}
}

type clusterRoleBindingDescriber struct {
	binding *rbacv1.ClusterRoleBinding
	subject *rbacv1.Subject
}

func (d *clusterRoleBindingDescriber) String() string {
	return "ClusterRoleBinding " + strconv.Quote(d.binding.Name) + " of " + d.binding.RoleRef.Kind + " " +
		strconv.Quote(d.binding.RoleRef.Name) + " to " + describeSubject(d.subject, "")
}

type roleBindingDescriber struct {
	binding *rbacv1.RoleBinding
	subject *rbacv1.Subject
}

func (d *roleBindingDescriber) String() string {
	return "RoleBinding " + strconv.Quote(d.binding.Name+"/"+d.binding.Namespace) + " of " + d.binding.RoleRef.Kind + " " +
		strconv.Quote(d.binding.RoleRef.Name) + " to " + describeSubject(d.subject, d.binding.Namespace)
}
