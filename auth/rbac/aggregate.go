package rbac

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate computes the rules of every ClusterRole with an
// aggregationRule, as kube's clusterrole-aggregation controller settles
// them: for each of its clusterRoleSelectors in turn, the ClusterRoles
// (other than itself) whose labels the selector matches, sorted by name,
// contribute their rules in order, each rule once (rules semantically
// equal to one already taken are skipped).
//
// Aggregation is transitive, as the controller's repeated syncs make it:
// admin aggregates edit, which aggregates view, so admin gets view's rules
// too. Aggregate therefore recomputes until nothing changes, each role
// reading the rules computed for the others (bounded, for cycles, by the
// number of aggregating roles). A role whose selector is invalid keeps its
// stored rules (the controller fails its sync). The input is not modified.
func Aggregate(clusterRoles []*rbacv1.ClusterRole) map[string][]rbacv1.PolicyRule {
	byName := make(map[string]*rbacv1.ClusterRole, len(clusterRoles))
	rules := make(map[string][]rbacv1.PolicyRule, len(clusterRoles))
	var names []string
	for _, r := range clusterRoles {
		byName[r.Name] = r
		names = append(names, r.Name)
		rules[r.Name] = r.Rules
	}
	sort.Strings(names)
	var aggregating []*rbacv1.ClusterRole
	for _, n := range names {
		if r := byName[n]; r.AggregationRule != nil {
			aggregating = append(aggregating, r)
		}
	}

	for pass := 0; pass <= len(aggregating); pass++ {
		changed := false
		for _, r := range aggregating {
			computed, ok := aggregateOne(r, names, byName, rules)
			if !ok || equality.Semantic.DeepEqual(computed, rules[r.Name]) {
				continue
			}
			rules[r.Name] = computed
			changed = true
		}
		if !changed {
			break
		}
	}

	out := make(map[string][]rbacv1.PolicyRule, len(aggregating))
	for _, r := range aggregating {
		out[r.Name] = rules[r.Name]
	}
	return out
}

// aggregateOne is the controller's sync of role, reading the other roles'
// rules from rules; names is every role's name, sorted.
func aggregateOne(role *rbacv1.ClusterRole, names []string, byName map[string]*rbacv1.ClusterRole, rules map[string][]rbacv1.PolicyRule) ([]rbacv1.PolicyRule, bool) {
	computed := []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, false
		}
		for _, n := range names {
			if n == role.Name || !selector.Matches(labels.Set(byName[n].Labels)) {
				continue
			}
			for _, rule := range rules[n] {
				if !ruleExists(computed, rule) {
					computed = append(computed, rule)
				}
			}
		}
	}
	return computed, true
}

func ruleExists(haystack []rbacv1.PolicyRule, needle rbacv1.PolicyRule) bool {
	for _, r := range haystack {
		if equality.Semantic.DeepEqual(r, needle) {
			return true
		}
	}
	return false
}

// AggregationUpdates returns, sorted by name, copies of the aggregating
// ClusterRoles whose rules Aggregate computes differently from those
// stored, with the computed rules: the updates the store should write.
func AggregationUpdates(clusterRoles []*rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	computed := Aggregate(clusterRoles)
	var out []*rbacv1.ClusterRole
	for _, r := range clusterRoles {
		rules, ok := computed[r.Name]
		if !ok || equality.Semantic.DeepEqual(rules, r.Rules) {
			continue
		}
		u := r.DeepCopy()
		u.Rules = nil
		for _, rule := range rules {
			u.Rules = append(u.Rules, *rule.DeepCopy())
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
