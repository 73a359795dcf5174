package validation

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kinds a RoleBinding may reference; a ClusterRoleBinding may only
// reference a ClusterRole.
var (
	roleBindingRoleRefKinds        = []string{"Role", "ClusterRole"}
	clusterRoleBindingRoleRefKinds = []string{"ClusterRole"}
	subjectKinds                   = []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}
)

// ValidateRBACName validates the name (or generateName prefix) of a Role,
// ClusterRole, RoleBinding or ClusterRoleBinding and the roleRef.name of a
// binding: anything that can be a URL path segment, that is not "." or ".."
// and contains no "/" or "%". kube-apiserver applies the same rule to a
// generateName prefix (prefix is ignored).
func ValidateRBACName(name string, prefix bool) []string {
	return content.IsPathSegmentName(name)
}

// ValidateRole validates a Role for create: its metadata (a namespaced
// object with an RBAC name) and each rule as a namespaced rule. kube-apiserver
// returns exactly this list on create (its generic metadata checks run only
// when this list is empty, and then find nothing new).
func ValidateRole(role *rbacv1.Role) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, true, field.NewPath("metadata"))
	for i, rule := range role.Rules {
		allErrs = append(allErrs, ValidatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return allErrs
}

// ValidateRoleUpdate validates an update of old into role. It returns, in
// this order, what kube-apiserver returns: its generic registry's metadata
// checks (create-time metadata rules with the path-segment name rule, then
// the metadata update rules), then kube's ValidateRoleUpdate: ValidateRole
// of the new object and the metadata update rules again. Metadata errors are
// therefore listed twice, as in kube-apiserver's Status causes;
// ErrorList.ToAggregate drops the repeated messages.
func ValidateRoleUpdate(role, old *rbacv1.Role) field.ErrorList {
	allErrs := validateCommonUpdate(&role.ObjectMeta, &old.ObjectMeta, true)
	allErrs = append(allErrs, ValidateRole(role)...)
	allErrs = append(allErrs, validateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return allErrs
}

// ValidateClusterRole validates a ClusterRole for create: its metadata (a
// cluster-scoped object with an RBAC name), each rule as a cluster rule and
// its aggregationRule, whose label selectors must be valid including their
// values. Rules are allowed alongside an aggregationRule (the aggregation
// controller overwrites them).
func ValidateClusterRole(role *rbacv1.ClusterRole) field.ErrorList {
	return validateClusterRole(role, metav1validation.LabelSelectorValidationOptions{})
}

// ValidateClusterRoleUpdate validates an update of old into role, returning
// what kube-apiserver returns (see ValidateRoleUpdate for the order). As in
// kube-apiserver, invalid label values in aggregationRule selectors are
// tolerated on update when old already had an invalid selector, so objects
// stored before the stricter rule can still be updated.
func ValidateClusterRoleUpdate(role, old *rbacv1.ClusterRole) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{
		AllowInvalidLabelValueInSelector: hasInvalidLabelSelector(old),
	}
	allErrs := validateCommonUpdate(&role.ObjectMeta, &old.ObjectMeta, false)
	allErrs = append(allErrs, validateClusterRole(role, opts)...)
	allErrs = append(allErrs, validateObjectMetaUpdate(&role.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	return allErrs
}

func validateClusterRole(role *rbacv1.ClusterRole, opts metav1validation.LabelSelectorValidationOptions) field.ErrorList {
	allErrs := validateObjectMeta(&role.ObjectMeta, false, field.NewPath("metadata"))
	for i, rule := range role.Rules {
		allErrs = append(allErrs, ValidatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if role.AggregationRule != nil {
		selectorsPath := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
			allErrs = append(allErrs, field.Required(selectorsPath, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range role.AggregationRule.ClusterRoleSelectors {
			selector := &role.AggregationRule.ClusterRoleSelectors[i]
			fldPath := selectorsPath.Index(i)
			allErrs = append(allErrs, metav1validation.ValidateLabelSelector(selector, opts, fldPath)...)
			// kube-apiserver reports the (nil) parsed selector as the bad
			// value, so the message reads "Invalid value: null".
			if parsed, err := metav1.LabelSelectorAsSelector(selector); err != nil {
				allErrs = append(allErrs, field.Invalid(fldPath, parsed, "invalid label selector."))
			}
		}
	}
	return allErrs
}

// hasInvalidLabelSelector reports whether a stored ClusterRole has an
// aggregationRule selector that fails the strict label selector rules.
func hasInvalidLabelSelector(role *rbacv1.ClusterRole) bool {
	if role == nil || role.AggregationRule == nil {
		return false
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, field.NewPath("aggregationRule"))) > 0 {
			return true
		}
	}
	return false
}

// ValidatePolicyRule validates one rule of a Role (isNamespaced) or
// ClusterRole at fldPath: verbs are required; a rule with nonResourceURLs
// may not name apiGroups, resources or resourceNames, nor be namespaced; any
// other rule needs apiGroups and resources. Verbs, groups, resources and
// URLs are otherwise free-form, as in kube-apiserver.
func ValidatePolicyRule(rule rbacv1.PolicyRule, isNamespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if len(rule.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("verbs"), "verbs must contain at least one value"))
	}

	if len(rule.NonResourceURLs) > 0 {
		if isNamespaced {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return allErrs
	}

	if len(rule.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	}
	return allErrs
}

// ValidateRoleBinding validates a RoleBinding for create: its metadata (a
// namespaced object with an RBAC name), its roleRef (a Role or ClusterRole
// of rbac.authorization.k8s.io with an RBAC name) and its subjects.
func ValidateRoleBinding(binding *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&binding.ObjectMeta, true, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(binding.RoleRef, roleBindingRoleRefKinds)...)
	for i, subject := range binding.Subjects {
		allErrs = append(allErrs, ValidateRoleBindingSubject(subject, true, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// ValidateRoleBindingUpdate validates an update of old into binding,
// returning what kube-apiserver returns (see ValidateRoleUpdate for the
// order) followed by roleRef immutability.
func ValidateRoleBindingUpdate(binding, old *rbacv1.RoleBinding) field.ErrorList {
	allErrs := validateCommonUpdate(&binding.ObjectMeta, &old.ObjectMeta, true)
	allErrs = append(allErrs, ValidateRoleBinding(binding)...)
	allErrs = append(allErrs, validateObjectMetaUpdate(&binding.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	allErrs = append(allErrs, validateRoleRefUnchanged(binding.RoleRef, old.RoleRef)...)
	return allErrs
}

// ValidateClusterRoleBinding validates a ClusterRoleBinding for create: its
// metadata (a cluster-scoped object with an RBAC name), its roleRef (a
// ClusterRole of rbac.authorization.k8s.io with an RBAC name) and its
// subjects, where ServiceAccount subjects need a namespace.
func ValidateClusterRoleBinding(binding *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validateObjectMeta(&binding.ObjectMeta, false, field.NewPath("metadata"))
	allErrs = append(allErrs, validateRoleRef(binding.RoleRef, clusterRoleBindingRoleRefKinds)...)
	for i, subject := range binding.Subjects {
		allErrs = append(allErrs, ValidateRoleBindingSubject(subject, false, field.NewPath("subjects").Index(i))...)
	}
	return allErrs
}

// ValidateClusterRoleBindingUpdate validates an update of old into binding,
// returning what kube-apiserver returns (see ValidateRoleUpdate for the
// order) followed by roleRef immutability.
func ValidateClusterRoleBindingUpdate(binding, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	allErrs := validateCommonUpdate(&binding.ObjectMeta, &old.ObjectMeta, false)
	allErrs = append(allErrs, ValidateClusterRoleBinding(binding)...)
	allErrs = append(allErrs, validateObjectMetaUpdate(&binding.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	allErrs = append(allErrs, validateRoleRefUnchanged(binding.RoleRef, old.RoleRef)...)
	return allErrs
}

func validateRoleRef(ref rbacv1.RoleRef, kinds []string) field.ErrorList {
	allErrs := field.ErrorList{}
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	if !slices.Contains(kinds, ref.Kind) {
		allErrs = append(allErrs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range ValidateRBACName(ref.Name, false) {
			allErrs = append(allErrs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	return allErrs
}

// internalRoleRef mirrors kube's internal rbac.RoleRef, which kube-apiserver
// reports as the bad value of "cannot change roleRef". It has no JSON tags,
// so the value renders as {"APIGroup":...,"Kind":...,"Name":...}, as there.
type internalRoleRef struct {
	APIGroup string
	Kind     string
	Name     string
}

func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref == old {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), internalRoleRef(ref), "cannot change roleRef")}
}

// ValidateRoleBindingSubject validates one subject of a RoleBinding
// (isNamespaced) or ClusterRoleBinding at fldPath: a name is required; a
// ServiceAccount has a DNS-subdomain name, no apiGroup and, in a
// ClusterRoleBinding, a namespace; a User or Group has apiGroup
// rbac.authorization.k8s.io; no other kind is allowed.
func ValidateRoleBindingSubject(subject rbacv1.Subject, isNamespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if subject.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}

	switch subject.Kind {
	case rbacv1.ServiceAccountKind:
		if subject.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(subject.Name, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), subject.Name, msg))
			}
		}
		if subject.APIGroup != "" {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), subject.APIGroup, []string{""}))
		}
		if !isNamespaced && subject.Namespace == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if subject.APIGroup != rbacv1.GroupName {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("apiGroup"), subject.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), subject.Kind, subjectKinds))
	}
	return allErrs
}

// validateObjectMeta is kube's core ValidateObjectMeta, which RBAC uses: the
// apimachinery rules with the RBAC name rule, then the legacy finalizer-name
// rule for each finalizer.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(meta, namespaced, ValidateRBACName, fldPath)
	for i := range meta.Finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(meta.Finalizers[i], fldPath.Child("finalizers").Index(i))...)
	}
	return allErrs
}

// validateObjectMetaUpdate is kube's core ValidateObjectMetaUpdate: the
// apimachinery update rules, then the finalizer-name rule again.
func validateObjectMetaUpdate(meta, old *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(meta, old, fldPath)
	for i := range meta.Finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(meta.Finalizers[i], fldPath.Child("finalizers").Index(i))...)
	}
	return allErrs
}

// validateCommonUpdate is what kube-apiserver's generic registry validates
// on every update before the type's own update validation: the apimachinery
// create-time metadata rules with a path-segment name rule, then the
// apimachinery metadata update rules (neither has the finalizer-name rule).
func validateCommonUpdate(meta, old *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	fldPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMeta(meta, namespaced, validatePathSegment, fldPath)
	return append(allErrs, apivalidation.ValidateObjectMetaUpdate(meta, old, fldPath)...)
}

// validatePathSegment is the generic registry's name rule.
func validatePathSegment(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

// standardFinalizers are the finalizer names that need no domain prefix:
// core/v1 FinalizerKubernetes, metav1.FinalizerOrphanDependents and
// metav1.FinalizerDeleteDependents.
var standardFinalizers = []string{"kubernetes", metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents}

// validateKubeFinalizerName is kube's core rule for legacy finalizer names:
// one without "/" must be a standard finalizer.
func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !slices.Contains(standardFinalizers, name) {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}
