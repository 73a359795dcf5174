package rbac

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer is kube-apiserver's RBAC authorizer over the current Policy.
// It implements authorizer.UnconditionalAuthorizer and
// authorizer.RuleResolver.
type Authorizer struct {
	current func() Policy
}

var (
	_ authorizer.UnconditionalAuthorizer = (*Authorizer)(nil)
	_ authorizer.RuleResolver            = (*Authorizer)(nil)
)

// New returns an Authorizer that judges each request by the Policy current
// returns then, so that one request sees one consistent view. A nil Policy
// grants nothing.
func New(current func() Policy) *Authorizer {
	return &Authorizer{current: current}
}

func (a *Authorizer) policy() Policy {
	if a.current == nil {
		return emptyPolicy{}
	}
	return orEmpty(a.current())
}

// Authorize allows the request if a rule granted to its user in its
// namespace allows it, with kube's reason, e.g.
// `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole
// "cluster-admin" to Group "system:masters"` (the first allowing rule, in
// the Policy's order, cluster role bindings first). Otherwise it has no
// opinion, with no reason, or, if some binding's role could not be
// resolved, the reason "RBAC: " and the errors (kube's: a reason, never an
// error).
//
// Against a CachingPolicy a question asked before is answered from its
// Decisions.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	p := a.policy()
	cp, ok := p.(CachingPolicy)
	var k string
	if ok {
		k, ok = keyOf(attrs)
	}
	if !ok {
		d := decide(p, attrs)
		return d.d, d.reason, nil
	}
	c := cp.Decisions()
	d, ok := c.get(k)
	if !ok {
		d = decide(p, attrs)
		c.put(k, d)
	}
	return d.d, d.reason, nil
}

// decide walks the rules p grants the request's user.
func decide(p Policy, attrs authorizer.Attributes) decision {
	var errs []error
	reason := ""
	allowed := false
	VisitRulesFor(p, attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			allowed = true
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowed {
		return decision{authorizer.DecisionAllow, reason}
	}
	if len(errs) > 0 {
		reason = fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs))
	}
	return decision{authorizer.DecisionNoOpinion, reason}
}

// RulesFor lists the rules granted to u in namespace (cluster-wide ones
// only for ""), as kube's RBAC authorizer does for SelfSubjectRulesReview:
// a rule with resources becomes a resource rule, one with nonResourceURLs a
// non-resource rule. Like kube's, it reports incomplete=false even when a
// binding's role could not be resolved; the error says so (and becomes the
// review's evaluationError).
func (a *Authorizer) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var (
		resourceRules    []authorizer.ResourceRuleInfo
		nonResourceRules []authorizer.NonResourceRuleInfo
	)
	rules, err := UserRules(a.policy(), u, namespace)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs:         r.Verbs,
				APIGroups:     r.APIGroups,
				Resources:     r.Resources,
				ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs:           r.Verbs,
				NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

// RulesAllow reports whether any of rules allows the request.
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows reports whether rule allows the request, as kube does. A
// resource request matches if a verb is "*" or its verb, an API group "*"
// or its group ("" is core), a resource "*", its resource (or
// "resource/subresource"), or "*/subresource", and the rule names no
// resources or names the request's (so a request without a name, such as
// create or list, never matches a rule with resourceNames). A non-resource
// request matches if a verb matches and a URL is "*", its path, or ends in
// "*" and the rest is a prefix of its path.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if attrs.IsResourceRequest() {
		combined := attrs.GetResource()
		if sub := attrs.GetSubresource(); sub != "" {
			combined += "/" + sub
		}
		return verbMatches(rule, attrs.GetVerb()) &&
			apiGroupMatches(rule, attrs.GetAPIGroup()) &&
			resourceMatches(rule, combined, attrs.GetSubresource()) &&
			resourceNameMatches(rule, attrs.GetName())
	}
	return verbMatches(rule, attrs.GetVerb()) &&
		nonResourceURLMatches(rule, attrs.GetPath())
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource == "" {
			continue
		}
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
