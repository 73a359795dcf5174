package httpapi

import (
	"net/http"
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
)

// The review APIs are create-only and store nothing: they answer who the
// caller is (kubectl auth whoami) and what it may do (kubectl auth can-i),
// from the same authenticator and authorizer that guard every request.
var reviewGroups = []struct {
	group     string
	resources []metav1.APIResource
}{
	{authenticationv1.GroupName, []metav1.APIResource{
		{Name: "selfsubjectreviews", Kind: "SelfSubjectReview", Verbs: metav1.Verbs{"create"}},
	}},
	{authorizationv1.GroupName, []metav1.APIResource{
		{Name: "selfsubjectaccessreviews", Kind: "SelfSubjectAccessReview", Verbs: metav1.Verbs{"create"}},
		{Name: "selfsubjectrulesreviews", Kind: "SelfSubjectRulesReview", Verbs: metav1.Verbs{"create"}},
	}},
}

// reviewAPIGroups are the review groups as /apis lists them.
func reviewAPIGroups() []metav1.APIGroup {
	var out []metav1.APIGroup
	for _, g := range reviewGroups {
		v := metav1.GroupVersionForDiscovery{GroupVersion: g.group + "/v1", Version: "v1"}
		out = append(out, metav1.APIGroup{Name: g.group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return out
}

// reviewDiscovery are the review groups in aggregated discovery.
func reviewDiscovery() []apidiscoveryv2.APIGroupDiscovery {
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, g := range reviewGroups {
		vd := apidiscoveryv2.APIVersionDiscovery{Version: "v1", Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range g.resources {
			vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
				Resource:     r.Name,
				ResponseKind: &metav1.GroupVersionKind{Group: g.group, Version: "v1", Kind: r.Kind},
				Scope:        apidiscoveryv2.ScopeCluster,
				Verbs:        r.Verbs,
			})
		}
		out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.group}, Versions: []apidiscoveryv2.APIVersionDiscovery{vd}})
	}
	return out
}

func (s *Server) reviewGroup(group string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		for _, g := range reviewAPIGroups() {
			if g.Name == group {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				s.writeDiscovery(w, req, &g)
				return
			}
		}
	}
}

func (s *Server) reviewResources(group string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		for _, g := range reviewGroups {
			if g.group == group {
				list := &metav1.APIResourceList{
					TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
					GroupVersion: group + "/v1",
					APIResources: append([]metav1.APIResource(nil), g.resources...),
				}
				sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
				s.writeDiscovery(w, req, list)
				return
			}
		}
	}
}

// decodeReview decodes a review's body into obj; it answers the error
// itself and reports whether to go on.
func (s *Server) decodeReview(w http.ResponseWriter, req *http.Request, gvk schema.GroupVersionKind, obj runtime.Object) bool {
	if req.Method != http.MethodPost {
		notAllowed(w, "POST")
		s.writeError(w, req, methodNotAllowed())
		return false
	}
	in, err := bodyInput(req)
	if err == nil {
		var body []byte
		if body, err = readBody(req); err == nil {
			_, _, err = in.decodeWithSerializer(body, gvk, obj)
		}
	}
	if err != nil {
		s.writeError(w, req, err)
		return false
	}
	return true
}

func (s *Server) writeReview(w http.ResponseWriter, req *http.Request, obj runtime.Object) {
	out, err := negotiate(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	out.write(w, http.StatusCreated, obj)
}

func requestUser(req *http.Request) user.Info {
	if u, ok := auth.UserFrom(req.Context()); ok {
		return u
	}
	return auth.Anonymous
}

// selfSubjectReview answers kubectl auth whoami.
func (s *Server) selfSubjectReview(w http.ResponseWriter, req *http.Request) {
	gvk := authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview")
	review := &authenticationv1.SelfSubjectReview{}
	if !s.decodeReview(w, req, gvk, review) {
		return
	}
	u := requestUser(req)
	info := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	for k, v := range u.GetExtra() {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = v
	}
	out := &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: info}}
	out.TypeMeta = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String()}
	out.CreationTimestamp = review.CreationTimestamp
	s.writeReview(w, req, out)
}

// selfSubjectAccessReview answers kubectl auth can-i.
func (s *Server) selfSubjectAccessReview(w http.ResponseWriter, req *http.Request) {
	gvk := authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview")
	review := &authorizationv1.SelfSubjectAccessReview{}
	if !s.decodeReview(w, req, gvk, review) {
		return
	}
	if errs := validateSelfSubjectAccessReview(review); len(errs) > 0 {
		s.writeError(w, req, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(gvk.Kind).GroupKind(), "", errs))
		return
	}
	u := requestUser(req)
	var attrs authorizer.AttributesRecord
	if ra := review.Spec.ResourceAttributes; ra != nil {
		version := ra.Version
		if version == "" {
			version = "*"
		}
		attrs = authorizer.AttributesRecord{
			User: u, Verb: ra.Verb, Namespace: ra.Namespace, APIGroup: ra.Group, APIVersion: version,
			Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name, ResourceRequest: true,
		}
	} else {
		nra := review.Spec.NonResourceAttributes
		attrs = authorizer.AttributesRecord{User: u, Verb: nra.Verb, Path: nra.Path}
	}
	decision, reason, err := s.authz.Authorize(req.Context(), attrs)
	review.Status = authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	review.TypeMeta = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String()}
	s.writeReview(w, req, review)
}

// validateSelfSubjectAccessReview is kube-apiserver's validation: empty
// metadata, and exactly one of resourceAttributes and
// nonResourceAttributes.
func validateSelfSubjectAccessReview(r *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, r.ObjectMeta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), r.ObjectMeta, "must be empty"))
	}
	spec := field.NewPath("spec")
	if r.Spec.ResourceAttributes != nil && r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), r.Spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	}
	if r.Spec.ResourceAttributes == nil && r.Spec.NonResourceAttributes == nil {
		errs = append(errs, field.Invalid(spec.Child("resourceAttributes"), r.Spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	return errs
}

// selfSubjectRulesReview answers kubectl auth can-i --list.
func (s *Server) selfSubjectRulesReview(w http.ResponseWriter, req *http.Request) {
	gvk := authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview")
	review := &authorizationv1.SelfSubjectRulesReview{}
	if !s.decodeReview(w, req, gvk, review) {
		return
	}
	if review.Spec.Namespace == "" {
		s.writeError(w, req, apierrors.NewBadRequest("no namespace on request"))
		return
	}
	resourceRules, nonResourceRules, incomplete, err := s.authz.RulesFor(req.Context(), requestUser(req), review.Spec.Namespace)
	status := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
		Incomplete:       incomplete,
	}
	for _, r := range resourceRules {
		status.ResourceRules = append(status.ResourceRules, authorizationv1.ResourceRule{
			Verbs: r.GetVerbs(), APIGroups: r.GetAPIGroups(), Resources: r.GetResources(), ResourceNames: r.GetResourceNames(),
		})
	}
	for _, r := range nonResourceRules {
		status.NonResourceRules = append(status.NonResourceRules, authorizationv1.NonResourceRule{
			Verbs: r.GetVerbs(), NonResourceURLs: r.GetNonResourceURLs(),
		})
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	review.Status = status
	review.TypeMeta = metav1.TypeMeta{Kind: gvk.Kind, APIVersion: gvk.GroupVersion().String()}
	s.writeReview(w, req, review)
}
