package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/registry"
)

// optionsVersion is the version query parameters are decoded in.
var optionsVersion = schema.GroupVersion{Group: apis.Group, Version: "v1"}

func decodeQuery(req *http.Request, into runtime.Object) error {
	if err := apis.ParameterCodec.DecodeParameters(req.URL.Query(), optionsVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// invalidOptions is kube-apiserver's 422 for bad query options, e.g.
// `CreateOptions.meta.k8s.io "" is invalid: ...`.
func invalidOptions(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: kind}, "", errs)
}

func validateDryRun(p *field.Path, dryRun []string) field.ErrorList {
	for _, v := range dryRun {
		if v != metav1.DryRunAll {
			return field.ErrorList{field.NotSupported(p, dryRun, []string{metav1.DryRunAll})}
		}
	}
	return nil
}

const fieldManagerMaxLength = 128

func validateFieldManager(p *field.Path, m string) field.ErrorList {
	var errs field.ErrorList
	if len(m) > fieldManagerMaxLength {
		errs = append(errs, field.TooLong(p, m, fieldManagerMaxLength))
	}
	for i, r := range m {
		if !unicode.IsPrint(r) {
			errs = append(errs, field.Invalid(p, m, fmt.Sprintf("invalid characters at %d", i)))
			break
		}
	}
	return errs
}

func validateFieldValidation(p *field.Path, v string) field.ErrorList {
	switch v {
	case "", metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict:
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, []string{"", metav1.FieldValidationIgnore, metav1.FieldValidationStrict, metav1.FieldValidationWarn})}
}

// writeQuery is what create, update and patch share.
type writeQuery struct {
	dryRun          bool
	fieldManager    string
	fieldValidation string
	force           bool
}

// writeOptions are the registry's options for the write; the field manager
// defaults to the client's User-Agent.
func (q writeQuery) writeOptions(req *http.Request) registry.WriteOptions {
	return registry.WriteOptions{DryRun: q.dryRun, Manager: registry.Manager(q.fieldManager, req.UserAgent())}
}

// checkWriteOptions validates what create, update and patch options share.
func checkWriteOptions(dryRun []string, fieldManager, fieldValidation string) field.ErrorList {
	errs := validateDryRun(field.NewPath("dryRun"), dryRun)
	errs = append(errs, validateFieldManager(field.NewPath("fieldManager"), fieldManager)...)
	return append(errs, validateFieldValidation(field.NewPath("fieldValidation"), fieldValidation)...)
}

func parseCreateOptions(req *http.Request) (writeQuery, error) {
	var o metav1.CreateOptions
	if err := decodeQuery(req, &o); err != nil {
		return writeQuery{}, err
	}
	if errs := checkWriteOptions(o.DryRun, o.FieldManager, o.FieldValidation); len(errs) > 0 {
		return writeQuery{}, invalidOptions("CreateOptions", errs)
	}
	return writeQuery{dryRun: len(o.DryRun) > 0, fieldManager: o.FieldManager, fieldValidation: o.FieldValidation}, nil
}

func parseUpdateOptions(req *http.Request) (writeQuery, error) {
	var o metav1.UpdateOptions
	if err := decodeQuery(req, &o); err != nil {
		return writeQuery{}, err
	}
	if errs := checkWriteOptions(o.DryRun, o.FieldManager, o.FieldValidation); len(errs) > 0 {
		return writeQuery{}, invalidOptions("UpdateOptions", errs)
	}
	return writeQuery{dryRun: len(o.DryRun) > 0, fieldManager: o.FieldManager, fieldValidation: o.FieldValidation}, nil
}

func parsePatchOptions(req *http.Request, apply bool) (writeQuery, error) {
	var o metav1.PatchOptions
	if err := decodeQuery(req, &o); err != nil {
		return writeQuery{}, err
	}
	errs := checkWriteOptions(o.DryRun, o.FieldManager, o.FieldValidation)
	if o.Force != nil && !apply {
		errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
	}
	if apply && o.FieldManager == "" {
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	if len(errs) > 0 {
		return writeQuery{}, invalidOptions("PatchOptions", errs)
	}
	return writeQuery{dryRun: len(o.DryRun) > 0, fieldManager: o.FieldManager, fieldValidation: o.FieldValidation, force: o.Force != nil && *o.Force}, nil
}

// parseDeleteOptions reads DeleteOptions from the body when there is one,
// else from the query, as kube-apiserver does.
func parseDeleteOptions(req *http.Request, body []byte) (*metav1.DeleteOptions, error) {
	o := &metav1.DeleteOptions{}
	if len(body) > 0 {
		in, err := bodyInput(req)
		if err != nil {
			return nil, err
		}
		gvk := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		obj, _, err := in.info.Serializer.Decode(body, &gvk, o)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		var ok bool
		if o, ok = obj.(*metav1.DeleteOptions); !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("expected DeleteOptions, got %T", obj))
		}
	} else if err := decodeQuery(req, o); err != nil {
		return nil, err
	}
	var errs field.ErrorList
	if o.OrphanDependents != nil && o.PropagationPolicy != nil {
		errs = append(errs, field.Invalid(field.NewPath("propagationPolicy"), o.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set"))
	}
	if p := o.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{
				string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"}))
		}
	}
	errs = append(errs, validateDryRun(field.NewPath("dryRun"), o.DryRun)...)
	if len(errs) > 0 {
		return nil, invalidOptions("DeleteOptions", errs)
	}
	return o, nil
}

// parseListOptions reads and validates list and watch parameters.
func parseListOptions(req *http.Request) (*metav1.ListOptions, registry.ListOptions, error) {
	var o metav1.ListOptions
	if err := decodeQuery(req, &o); err != nil {
		return nil, registry.ListOptions{}, err
	}
	lo := registry.ListOptions{
		ReadOptions: registry.ReadOptions{ResourceVersion: o.ResourceVersion, ResourceVersionMatch: o.ResourceVersionMatch},
		Limit:       o.Limit,
		Continue:    o.Continue,
	}
	var err error
	if lo.Label, err = labels.Parse(o.LabelSelector); err != nil {
		return nil, lo, apierrors.NewBadRequest(err.Error())
	}
	if lo.Field, err = fields.ParseSelector(o.FieldSelector); err != nil {
		return nil, lo, apierrors.NewBadRequest(err.Error())
	}
	for _, r := range lo.Field.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return nil, lo, apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %q, %q", r.Field, "metadata.name", "metadata.namespace"))
		}
	}
	if errs := validateListOptions(&o); len(errs) > 0 {
		return nil, lo, invalidOptions("ListOptions", errs)
	}
	if o.Continue != "" && o.ResourceVersion != "" && o.ResourceVersion != "0" {
		return nil, lo, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	return &o, lo, nil
}

// validateListOptions follows kube-apiserver's ValidateListOptions.
func validateListOptions(o *metav1.ListOptions) field.ErrorList {
	var errs field.ErrorList
	match := field.NewPath("resourceVersionMatch")
	if o.Watch {
		if o.SendInitialEvents != nil {
			if o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(match, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
		} else if o.ResourceVersionMatch != "" {
			errs = append(errs, field.Forbidden(match, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		return errs
	}
	if o.SendInitialEvents != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	switch o.ResourceVersionMatch {
	case "":
	case metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
		if o.ResourceVersion == "" {
			errs = append(errs, field.Forbidden(match, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if o.Continue != "" {
			errs = append(errs, field.Forbidden(match, "resourceVersionMatch is forbidden when continue is provided"))
		}
		if o.ResourceVersionMatch == metav1.ResourceVersionMatchExact && o.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(match, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	default:
		errs = append(errs, field.NotSupported(match, o.ResourceVersionMatch, []string{
			string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
	}
	return errs
}

// kube-apiserver's bounds on the warnings of one answer (its warning
// recorder, k8s.io/apiserver pkg/endpoints/filters/warning.go): past
// warningRunes in all, each is cut to warningItemRunes, and those past
// warningRunes are left out.
const (
	warningRunes     = 4 << 10
	warningItemRunes = 256
)

// warnings adds one Warning header per distinct message, as
// kube-apiserver does, within its bounds: a body with thousands of
// unknown fields gets a few kilobytes of warnings, not all of them.
func warnings(w http.ResponseWriter, msgs []string) {
	seen := map[string]bool{}
	var distinct []string
	total := 0
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			distinct = append(distinct, m)
			total += utf8.RuneCountInString(m)
		}
	}
	truncating, written := total > warningRunes, 0
	for _, m := range distinct {
		if truncating {
			if written >= warningRunes {
				return
			}
			if r := []rune(m); len(r) > warningItemRunes {
				m = string(r[:warningItemRunes])
			}
		}
		written += utf8.RuneCountInString(m)
		w.Header().Add("Warning", "299 - "+strconv.Quote(m))
	}
}
