package validation

// LeaseCandidate validation for every served version, reproducing
// kube-apiserver's rules and messages for that version:
//
//   - v1alpha1 (preferredStrategies) as kube-apiserver 1.31 validated it;
//   - v1alpha2 and v1beta1 (strategy) as kube-apiserver 1.32+ does.
//
// kube-apiserver parses versions with github.com/blang/semver/v4 Parse
// (strict semver: MAJOR.MINOR.PATCH[-pre][+build], no leading "v", no
// leading zeros, no surrounding space) and compares them with semver
// precedence. leasehold parses with k8s.io/apimachinery/pkg/util/version
// ParseSemantic, which is the same grammar except that it also accepts a
// leading "v" and surrounding whitespace and does not bound all-digit
// pre-release identifiers; parseStrictSemver rejects those. A version that
// fails to parse counts as 0.0.0 afterwards, as in kube-apiserver (so an
// unparsable emulationVersion also reports "must be specified when ...").

import (
	"fmt"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

const oldestEmulationVersionRequired = "must be specified when `strategy` is 'OldestEmulationVersion'"

// ValidLeaseCandidateName validates a LeaseCandidate name (or generateName
// prefix): LeaseCandidate names are ConfigMap keys, not DNS names
// ([-._a-zA-Z0-9]+, at most 253 characters, not "." or "..", not starting
// with ".."). A trailing "-" is fine, so prefix needs no special case.
func ValidLeaseCandidateName(name string, prefix bool) []string {
	return utilvalidation.IsConfigMapKey(name)
}

// ValidateLeaseCandidate validates a LeaseCandidate for create. obj is a
// *v1beta1.LeaseCandidate, *v1alpha2.LeaseCandidate or
// *v1alpha1.LeaseCandidate and is validated by that version's rules: the
// metadata of a namespaced object with a ConfigMap-key name, then the spec.
// Any other type yields a single internal error.
func ValidateLeaseCandidate(obj runtime.Object) field.ErrorList {
	c, err := leaseCandidateOf(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	allErrs := apivalidation.ValidateObjectMeta(c.meta, true, ValidLeaseCandidateName, field.NewPath("metadata"))
	return append(allErrs, c.validateSpec(field.NewPath("spec"))...)
}

// ValidateLeaseCandidateUpdate validates an update of old into obj (each
// of any served LeaseCandidate type, normally the same). It returns, in
// this order: the create-time metadata validation of obj, the ObjectMeta
// update rules against old (immutable name, namespace, uid,
// creationTimestamp, ...), the spec validation of obj by its version's
// rules, and spec.leaseName immutability.
//
// As for Lease (see ValidateLeaseUpdate), kube-apiserver's own
// ValidateLeaseCandidateUpdate runs the last three; its generic registry
// adds the metadata checks.
func ValidateLeaseCandidateUpdate(obj, old runtime.Object) field.ErrorList {
	c, err := leaseCandidateOf(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	o, err := leaseCandidateOf(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("old object: %w", err))}
	}
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMeta(c.meta, true, ValidLeaseCandidateName, metaPath)
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(c.meta, o.meta, metaPath)...)
	allErrs = append(allErrs, c.validateSpec(field.NewPath("spec"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(c.leaseName, o.leaseName, field.NewPath("spec", "leaseName"))...)
	return allErrs
}

// leaseCandidate is the version-independent view validation needs.
type leaseCandidate struct {
	meta         *metav1.ObjectMeta
	leaseName    string
	validateSpec func(*field.Path) field.ErrorList
}

func leaseCandidateOf(obj runtime.Object) (leaseCandidate, error) {
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		if o != nil {
			return leaseCandidate{&o.ObjectMeta, o.Spec.LeaseName, func(p *field.Path) field.ErrorList {
				return validateLeaseCandidateSpec(o.Spec.LeaseName, o.Spec.BinaryVersion, o.Spec.EmulationVersion, o.Spec.Strategy, p)
			}}, nil
		}
	case *coordinationv1alpha2.LeaseCandidate:
		if o != nil {
			return leaseCandidate{&o.ObjectMeta, o.Spec.LeaseName, func(p *field.Path) field.ErrorList {
				return validateLeaseCandidateSpec(o.Spec.LeaseName, o.Spec.BinaryVersion, o.Spec.EmulationVersion, o.Spec.Strategy, p)
			}}, nil
		}
	case *v1alpha1.LeaseCandidate:
		if o != nil {
			return leaseCandidate{&o.ObjectMeta, o.Spec.LeaseName, func(p *field.Path) field.ErrorList {
				return validateLeaseCandidateSpecV1alpha1(&o.Spec, p)
			}}, nil
		}
	}
	return leaseCandidate{}, fmt.Errorf("%T is not a served LeaseCandidate version", obj)
}

// validateLeaseCandidateSpec validates a v1alpha2 or v1beta1 spec (the two
// have the same fields), as kube-apiserver 1.32+ does.
func validateLeaseCandidateSpec(leaseName, binaryVersion, emulationVersion string, strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if leaseName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("leaseName"), ""))
	}
	ev, errs := validateSemver(emulationVersion, fldPath.Child("emulationVersion"))
	allErrs = append(allErrs, errs...)
	var bv *version.Version
	if binaryVersion == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("binaryVersion"), ""))
	} else {
		bv, errs = validateSemver(binaryVersion, fldPath.Child("binaryVersion"))
		allErrs = append(allErrs, errs...)
	}
	allErrs = append(allErrs, validateVersionOrder(binaryVersion, emulationVersion, bv, ev, fldPath)...)

	if strategy == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("strategy"), ""))
	} else {
		if strategy == coordinationv1.OldestEmulationVersion && semverIsZero(ev) {
			allErrs = append(allErrs, field.Required(fldPath.Child("emulationVersion"), oldestEmulationVersionRequired))
		}
		allErrs = append(allErrs, ValidateCoordinatedLeaseStrategy(strategy, fldPath.Child("strategy"))...)
	}
	// pingTime and renewTime are MicroTimes: nothing beyond decoding.
	return allErrs
}

// validateLeaseCandidateSpecV1alpha1 validates a v1alpha1 spec as
// kube-apiserver 1.31 did: binaryVersion is optional unless a preferred
// strategy is OldestEmulationVersion, and the checks run once per list
// element (an element repeated twice reports its errors twice).
func validateLeaseCandidateSpecV1alpha1(spec *v1alpha1.LeaseCandidateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := field.ErrorList{}
	if spec.LeaseName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("leaseName"), ""))
	}
	ev, errs := validateSemver(spec.EmulationVersion, fldPath.Child("emulationVersion"))
	allErrs = append(allErrs, errs...)
	bv, errs := validateSemver(spec.BinaryVersion, fldPath.Child("binaryVersion"))
	allErrs = append(allErrs, errs...)
	allErrs = append(allErrs, validateVersionOrder(spec.BinaryVersion, spec.EmulationVersion, bv, ev, fldPath)...)

	if len(spec.PreferredStrategies) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("preferredStrategies"), "must contain at least one strategy"))
	}
	for i, strategy := range spec.PreferredStrategies {
		if strategy == coordinationv1.OldestEmulationVersion {
			if semverIsZero(bv) {
				allErrs = append(allErrs, field.Required(fldPath.Child("binaryVersion"), oldestEmulationVersionRequired))
			}
			if semverIsZero(ev) {
				allErrs = append(allErrs, field.Required(fldPath.Child("emulationVersion"), oldestEmulationVersionRequired))
			}
		}
		allErrs = append(allErrs, ValidateCoordinatedLeaseStrategy(strategy, fldPath.Child("preferredStrategies").Index(i))...)
	}
	return allErrs
}

// validateSemver parses a non-empty s as strict semver; an empty or invalid
// s yields nil (read as 0.0.0), the latter with an error at fldPath.
func validateSemver(s string, fldPath *field.Path) (*version.Version, field.ErrorList) {
	if s == "" {
		return nil, nil
	}
	v, err := parseStrictSemver(s)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, s, "must be a valid semantic version")}
	}
	return v, nil
}

// validateVersionOrder requires binaryVersion >= emulationVersion when both
// are set; an unparsable one compares as 0.0.0, as in kube-apiserver.
func validateVersionOrder(binaryVersion, emulationVersion string, bv, ev *version.Version, fldPath *field.Path) field.ErrorList {
	if binaryVersion != "" && emulationVersion != "" && compareSemver(bv, ev) < 0 {
		return field.ErrorList{field.Invalid(fldPath.Child("binaryVersion"), binaryVersion, "must be greater than or equal to `emulationVersion`")}
	}
	return nil
}

// parseStrictSemver parses s as a Semantic Versioning 2.0.0 version with
// the rules of blang/semver's Parse.
func parseStrictSemver(s string) (*version.Version, error) {
	if s == "" || strings.TrimSpace(s) != s || s[0] < '0' || s[0] > '9' {
		return nil, fmt.Errorf("%q is not a semantic version", s)
	}
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil, err
	}
	for _, id := range prereleaseIDs(v) {
		if isNumeric(id) {
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				return nil, fmt.Errorf("pre-release identifier %q of %q: %w", id, s, err)
			}
		}
	}
	return v, nil
}

func prereleaseIDs(v *version.Version) []string {
	if v == nil || v.PreRelease() == "" {
		return nil
	}
	return strings.Split(v.PreRelease(), ".")
}

func isNumeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// semverIsZero reports whether v is 0.0.0 without pre-release; nil (empty
// or unparsable) counts as 0.0.0.
func semverIsZero(v *version.Version) bool {
	return compareSemver(v, nil) == 0
}

// semverCore returns MAJOR, MINOR and PATCH of v, zeros for nil.
func semverCore(v *version.Version) [3]uint {
	if v == nil {
		return [3]uint{}
	}
	return [3]uint{v.Major(), v.Minor(), v.Patch()}
}

// compareSemver orders a and b by Semantic Versioning 2.0.0 precedence
// (build metadata ignored); nil is 0.0.0.
func compareSemver(a, b *version.Version) int {
	ac, bc := semverCore(a), semverCore(b)
	for i := range ac {
		switch {
		case ac[i] < bc[i]:
			return -1
		case ac[i] > bc[i]:
			return 1
		}
	}
	ap, bp := prereleaseIDs(a), prereleaseIDs(b)
	switch {
	case len(ap) == 0 && len(bp) == 0:
		return 0
	case len(ap) == 0:
		return 1 // a release is greater than any of its pre-releases
	case len(bp) == 0:
		return -1
	}
	for i := 0; i < len(ap) && i < len(bp); i++ {
		if c := comparePrereleaseID(ap[i], bp[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(ap) < len(bp):
		return -1
	case len(ap) > len(bp):
		return 1
	}
	return 0
}

// comparePrereleaseID: numeric identifiers compare numerically and sort
// before alphanumeric ones, which compare in ASCII order.
func comparePrereleaseID(a, b string) int {
	an, bn := isNumeric(a), isNumeric(b)
	switch {
	case an && bn:
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
}
