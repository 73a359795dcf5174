package rbac

import (
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// ReconcileClusterRole is what kube-apiserver's bootstrap hook does to a
// bootstrap ClusterRole at start (reconciliation without removing extra
// permissions). With no existing role, want (a copy) is to be created. An
// existing role annotated rbac.authorization.kubernetes.io/autoupdate
// "false" is left alone. Otherwise the update is a copy of existing with
// want's labels and annotations added (existing values win), the rules of
// want that existing does not cover appended, want's missing aggregation
// selectors appended (and the aggregation rule dropped if want has none).
// Nothing is removed: what users added stays. changed is false, and update
// nil, when there is nothing to write.
func ReconcileClusterRole(existing, want *rbacv1.ClusterRole) (update *rbacv1.ClusterRole, changed bool) {
	if existing == nil {
		return want.DeepCopy(), true
	}
	if existing.Annotations[AutoUpdateAnnotation] == "false" {
		return nil, false
	}
	update = existing.DeepCopy()
	update.Annotations = merge(want.Annotations, update.Annotations)
	update.Labels = merge(want.Labels, update.Labels)
	changed = !reflect.DeepEqual(update.Annotations, existing.Annotations) ||
		!reflect.DeepEqual(update.Labels, existing.Labels)

	if _, missing := validation.Covers(existing.Rules, want.Rules); len(missing) > 0 {
		update.Rules = append(update.Rules, missing...)
		changed = true
	}

	_, missingSelectors := aggregationRuleCovers(existing.AggregationRule, want.AggregationRule)
	switch {
	case want.AggregationRule == nil && existing.AggregationRule != nil:
		update.AggregationRule = nil
		changed = true
	case len(missingSelectors) > 0:
		if update.AggregationRule == nil {
			update.AggregationRule = &rbacv1.AggregationRule{}
		}
		update.AggregationRule.ClusterRoleSelectors = append(update.AggregationRule.ClusterRoleSelectors, missingSelectors...)
		changed = true
	}
	if !changed {
		return nil, false
	}
	return update, true
}

// ReconcileClusterRoleBinding is what kube-apiserver's bootstrap hook does
// to a bootstrap ClusterRoleBinding at start (without removing extra
// subjects). With no existing binding, want (a copy) is to be created. An
// existing binding annotated autoupdate "false" is left alone. One whose
// roleRef differs from want's is to be replaced by want (recreate: delete
// it, then create update, since a roleRef cannot change). Otherwise the
// update is a copy of existing with want's labels and annotations added
// (existing values win) and want's missing subjects appended. changed is
// false, and update nil, when there is nothing to write.
func ReconcileClusterRoleBinding(existing, want *rbacv1.ClusterRoleBinding) (update *rbacv1.ClusterRoleBinding, recreate, changed bool) {
	if existing == nil {
		return want.DeepCopy(), false, true
	}
	if existing.Annotations[AutoUpdateAnnotation] == "false" {
		return nil, false, false
	}
	if existing.RoleRef != want.RoleRef {
		return want.DeepCopy(), true, true
	}
	update = existing.DeepCopy()
	update.Annotations = merge(want.Annotations, update.Annotations)
	update.Labels = merge(want.Labels, update.Labels)
	changed = !reflect.DeepEqual(update.Annotations, existing.Annotations) ||
		!reflect.DeepEqual(update.Labels, existing.Labels)
	for _, s := range want.Subjects {
		if !containsSubject(update.Subjects, s) {
			update.Subjects = append(update.Subjects, s)
			changed = true
		}
	}
	if !changed {
		return nil, false, false
	}
	return update, false, true
}

func containsSubject(list []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// merge combines maps, later ones winning; nil if all are nil.
func merge(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		if m != nil && out == nil {
			out = map[string]string{}
		}
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// aggregationRuleCovers returns the servant's selectors that no owner
// selector equals.
func aggregationRuleCovers(owner, servant *rbacv1.AggregationRule) (bool, []metav1.LabelSelector) {
	switch {
	case servant == nil:
		return true, nil
	case owner == nil:
		return len(servant.ClusterRoleSelectors) == 0, servant.ClusterRoleSelectors
	}
	var uncovered []metav1.LabelSelector
	for _, s := range servant.ClusterRoleSelectors {
		covered := false
		for _, o := range owner.ClusterRoleSelectors {
			if equality.Semantic.DeepEqual(o, s) {
				covered = true
				break
			}
		}
		if !covered {
			uncovered = append(uncovered, s)
		}
	}
	return len(uncovered) == 0, uncovered
}
