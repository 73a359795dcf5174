package validation

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validLeaseStrategies lists the Kubernetes-defined (unprefixed) coordinated
// lease strategies. Prefixed ("domain/name") strategies are accepted when
// they are qualified names.
var validLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{
	coordinationv1.OldestEmulationVersion,
}

// ValidateLease validates a Lease for create: its metadata (a namespaced
// object whose name is a DNS-1123 subdomain) and its spec.
func ValidateLease(lease *coordinationv1.Lease) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&lease.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateLeaseSpec(&lease.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateLeaseUpdate validates an update of old into lease.
//
// It returns, in this order: the create-time ObjectMeta validation of the new
// object, the ObjectMeta update rules against old (immutable name, namespace,
// uid, creationTimestamp, deletionTimestamp and deletionGracePeriodSeconds;
// generation not decremented; resourceVersion present; no new finalizers
// while deleting) and the spec validation of the new object. No Lease spec
// field is immutable.
//
// kube-apiserver's own ValidateLeaseUpdate only runs the update rules and the
// spec rules; the create-time metadata rules are run on updates by its generic
// registry (rest.BeforeUpdate), so the combined result is what a client sees.
// Some metadata errors (labels, annotations, a negative generation, ...) are
// reported by both metadata passes, as in kube-apiserver;
// ErrorList.ToAggregate drops the repeated messages.
func ValidateLeaseUpdate(lease, old *coordinationv1.Lease) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMeta(&lease.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(&lease.ObjectMeta, &old.ObjectMeta, metaPath)...)
	allErrs = append(allErrs, ValidateLeaseSpec(&lease.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateLeaseSpec validates a LeaseSpec located at fldPath.
func ValidateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}

	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		allErrs = append(allErrs, ValidateCoordinatedLeaseStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	// holderIdentity, acquireTime and renewTime carry no further constraints.
	return allErrs
}

// ValidateCoordinatedLeaseStrategy validates a coordinated lease strategy
// value, as used by Lease.spec.strategy and by LeaseCandidate.
//
// Errors are reported at fldPath.Child("strategy"), so a caller passing
// spec.strategy gets "spec.strategy.strategy"; that doubled segment is what
// kube-apiserver reports and is reproduced on purpose.
//
// A value without '/' (including "") must be one of the Kubernetes-defined
// strategies; a value with '/' must be a qualified name.
func ValidateCoordinatedLeaseStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	errPath := fldPath.Child("strategy")

	if !strings.Contains(string(strategy), "/") {
		if !slices.Contains(validLeaseStrategies, strategy) {
			allErrs = append(allErrs, field.NotSupported(errPath, strategy, validLeaseStrategies))
		}
		return allErrs
	}
	for _, msg := range utilvalidation.IsQualifiedName(string(strategy)) {
		allErrs = append(allErrs, field.Invalid(errPath, strategy, msg))
	}
	return allErrs
}
