package rbac

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// EscalationAllowed reports whether u may grant anything: members of
// system:masters may (kube-apiserver's EscalationAllowed). A nil user may
// not: leasehold always authenticates a request, anonymous or not.
func EscalationAllowed(u user.Info) bool {
	if u == nil {
		return false
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// HasAggregationRule reports whether r aggregates other roles: it has an
// aggregationRule with at least one selector (kube's test for the
// cluster-admin requirement of CheckRoleWrite).
func HasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r != nil && r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// fullAuthority is cluster-admin's: what setting an aggregationRule takes.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// ConfirmNoEscalation returns nil if u already holds every permission in
// rules, through the bindings policy holds for namespace (cluster-wide ones
// only for ""), or is in system:masters (which kube-apiserver checks before
// each call). Otherwise it returns kube's error, each missing permission
// compacted (CompactRules) and written by CompactString, sorted, one a line:
//
//	user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
//	{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}
//
// followed by "; resolution errors: [...]" if some of u's bindings could
// not be resolved.
func ConfirmNoEscalation(_ context.Context, policy Policy, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if u == nil {
		return errors.New("no user on context")
	}
	if EscalationAllowed(u) {
		return nil
	}
	var resolutionErrors []error
	owner, err := UserRules(policy, u, namespace)
	if err != nil {
		resolutionErrors = append(resolutionErrors, err)
	}
	covered, missing := validation.Covers(owner, rules)
	if covered {
		return nil
	}
	descriptions := sets.New[string]()
	for _, r := range CompactRules(missing) {
		descriptions.Insert(CompactString(r))
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		u.GetName(), u.GetGroups(), strings.Join(sets.List(descriptions), "\n"))
	if len(resolutionErrors) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", resolutionErrors)
	}
	return errors.New(msg)
}

// CompactString writes a rule as kube's escalation errors do: its non-empty
// fields, in the order APIGroups, Resources, NonResourceURLs,
// ResourceNames, Verbs, each a %q list, e.g.
// {APIGroups:["coordination.k8s.io"], Resources:["leases"], ResourceNames:["a"], Verbs:["get" "list"]}.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

type simpleResource struct {
	group, resource string
	hasName         bool
	name            string
}

// CompactRules merges rules that name one API group, one resource and at
// most one resource name, and differ only in their verbs, into one rule
// per group, resource and name, as kube does to the missing rules of an
// escalation error. Other rules pass unchanged; the order of the result is
// unspecified.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	compacted := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, r := range rules {
		key, ok := isSimpleResourceRule(&r)
		if !ok {
			compacted = append(compacted, r)
			continue
		}
		if existing, ok := simple[key]; ok {
			if existing.Verbs == nil {
				existing.Verbs = []string{}
			}
			existing.Verbs = append(existing.Verbs, r.Verbs...)
			continue
		}
		simple[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		compacted = append(compacted, *simple[k])
	}
	return compacted
}

func isSimpleResourceRule(r *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 {
		return simpleResource{}, false
	}
	if len(r.APIGroups) != 1 || len(r.Resources) != 1 {
		return simpleResource{}, false
	}
	s := &rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
	if !reflect.DeepEqual(s, r) {
		return simpleResource{}, false
	}
	if len(r.ResourceNames) == 0 {
		return simpleResource{group: r.APIGroups[0], resource: r.Resources[0]}, true
	}
	return simpleResource{group: r.APIGroups[0], resource: r.Resources[0], hasName: true, name: r.ResourceNames[0]}, true
}

// CanBind reports whether u may bind the role roleRef names in a binding of
// namespace ("" for a ClusterRoleBinding) whatever that role holds: u is in
// system:masters, or authz allows u the "bind" verb on it (resource
// clusterroles or roles of roleRef's API group, named roleRef.Name, in
// namespace; so resourceNames can limit which roles, and a RoleBinding
// can limit where). Kinds other than Role and ClusterRole may not be bound.
func CanBind(ctx context.Context, authz authorizer.UnconditionalAuthorizer, u user.Info, roleRef rbacv1.RoleRef, namespace string) bool {
	if EscalationAllowed(u) {
		return true
	}
	if authz == nil || u == nil {
		return false
	}
	attrs := authorizer.AttributesRecord{
		User:            u,
		Verb:            "bind",
		Namespace:       namespace,
		APIGroup:        roleRef.APIGroup,
		APIVersion:      "*",
		Name:            roleRef.Name,
		ResourceRequest: true,
	}
	switch roleRef.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	default:
		return false
	}
	d, _, _ := authz.Authorize(ctx, attrs)
	return d == authorizer.DecisionAllow
}

// CanEscalate reports whether u may write a role of resource ("roles" or
// "clusterroles") named name in namespace ("" for clusterroles) whatever
// it holds: u is in system:masters, or authz allows u the "escalate" verb
// on it in rbac.authorization.k8s.io. Other resources never escalate.
func CanEscalate(ctx context.Context, authz authorizer.UnconditionalAuthorizer, u user.Info, resource, namespace, name string) bool {
	if EscalationAllowed(u) {
		return true
	}
	if authz == nil || u == nil || (resource != "roles" && resource != "clusterroles") {
		return false
	}
	d, _, _ := authz.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "escalate",
		Namespace:       namespace,
		APIGroup:        rbacv1.GroupName,
		APIVersion:      "*",
		Resource:        resource,
		Name:            name,
		ResourceRequest: true,
	})
	return d == authorizer.DecisionAllow
}

// CheckRoleWrite decides, as kube-apiserver's role storage does, whether u
// may create or update the Role namespace/name (or, for namespace "", the
// ClusterRole name) to hold rules: yes if CanEscalate, or if
// ConfirmNoEscalation passes in namespace and, when the new or the old
// object has an aggregationRule (aggregated: HasAggregationRule of either),
// u holds cluster-admin's authority. The refusal is kube's 403 (Forbidden of roles or
// clusterroles.rbac.authorization.k8s.io). kube also lets through, without
// these checks, an update that changes only metadata the garbage
// collector needs (finalizers, ownerReferences): that is for the caller.
func CheckRoleWrite(ctx context.Context, authz authorizer.UnconditionalAuthorizer, policy Policy, u user.Info, namespace, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	resource := "clusterroles"
	if namespace != "" {
		resource = "roles"
	}
	if CanEscalate(ctx, authz, u, resource, namespace, name) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	if err := ConfirmNoEscalation(ctx, policy, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregated {
		if err := ConfirmNoEscalation(ctx, policy, u, namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// CheckBindingWrite decides, as kube-apiserver's binding storage does,
// whether u may create or update the RoleBinding namespace/name (or, for
// namespace "", the ClusterRoleBinding name) to roleRef: yes if CanBind, or
// if u already holds every rule of the referenced role in namespace. A
// role that does not exist is its NotFound error (kube answers 404); a
// refusal is kube's 403 (Forbidden of rolebindings or
// clusterrolebindings.rbac.authorization.k8s.io).
func CheckBindingWrite(ctx context.Context, authz authorizer.UnconditionalAuthorizer, policy Policy, u user.Info, namespace, name string, roleRef rbacv1.RoleRef) error {
	if CanBind(ctx, authz, u, roleRef, namespace) {
		return nil
	}
	rules, err := RoleRefRules(policy, roleRef, namespace)
	if err != nil {
		return err
	}
	if err := ConfirmNoEscalation(ctx, policy, u, namespace, rules); err != nil {
		resource := "clusterrolebindings"
		if namespace != "" {
			resource = "rolebindings"
		}
		return apierrors.NewForbidden(rbacv1.Resource(resource), name, err)
	}
	return nil
}
