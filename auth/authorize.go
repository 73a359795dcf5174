package auth

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Authorization modes (--authorization-mode).
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeRBAC        = "RBAC"
)

// Authorizer judges a request's attributes and lists the rules a user
// holds (for SelfSubjectRulesReview).
type Authorizer interface {
	authorizer.UnconditionalAuthorizer
	authorizer.RuleResolver
}

// NewAuthorizer builds the chain for mode: members of system:masters may do
// everything, a peer certificate may only join, then the mode decides:
// AlwaysAllow allows the rest, RBAC asks rbac (package auth/rbac over the
// node's state), which RBAC needs and AlwaysAllow ignores.
func NewAuthorizer(mode string, rbac Authorizer) (Authorizer, error) {
	switch mode {
	case ModeAlwaysAllow:
		return chain{privilegedGroup{}, peers{}, alwaysAllow{}}, nil
	case ModeRBAC:
		if rbac == nil {
			return nil, fmt.Errorf("--authorization-mode=%s needs the RBAC authorizer", ModeRBAC)
		}
		return chain{privilegedGroup{}, peers{}, rbac}, nil
	}
	return nil, fmt.Errorf("unknown --authorization-mode %q: want %s or %s", mode, ModeRBAC, ModeAlwaysAllow)
}

// chain asks each authorizer in turn; the first opinion decides, and no
// opinion from anyone is a denial.
type chain []Authorizer

func (c chain) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range c {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if d != authorizer.DecisionNoOpinion {
			return d, reason, err
		}
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), errs[0]
	}
	return authorizer.DecisionNoOpinion, strings.Join(reasons, "\n"), nil
}

func (c chain) RulesFor(ctx context.Context, u user.Info, ns string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var rr []authorizer.ResourceRuleInfo
	var nr []authorizer.NonResourceRuleInfo
	incomplete := false
	var firstErr error
	for _, z := range c {
		r, n, inc, err := z.RulesFor(ctx, u, ns)
		rr, nr = append(rr, r...), append(nr, n...)
		incomplete = incomplete || inc
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return rr, nr, incomplete, firstErr
}

// everything is what cluster-admin holds.
var (
	everything            = []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}
	everythingNonResource = []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
)

// privilegedGroup lets system:masters do everything, whatever else says.
type privilegedGroup struct{}

func (privilegedGroup) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if IsMaster(a.GetUser()) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (privilegedGroup) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if IsMaster(u) {
		return everything, everythingNonResource, false, nil
	}
	return nil, nil, false, nil
}

// IsMaster reports whether u is in system:masters.
func IsMaster(u user.Info) bool {
	return u != nil && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// peers lets members authenticated by their peer certificate join the
// cluster, and denies them everything else: a peer certificate is not an
// API credential.
type peers struct{}

func isPeer(u user.Info) bool {
	return u != nil && slices.Contains(u.GetGroups(), PeerGroup)
}

func (peers) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case !isPeer(a.GetUser()):
		return authorizer.DecisionNoOpinion, "", nil
	case !a.IsResourceRequest() && a.GetVerb() == "post" && a.GetPath() == "/cluster/join":
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionDeny, "a peer certificate may only join the cluster", nil
}

var joinRule = []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"post"}, NonResourceURLs: []string{"/cluster/join"}}}

func (peers) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if isPeer(u) {
		return nil, joinRule, false, nil
	}
	return nil, nil, false, nil
}

type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func (alwaysAllow) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if isPeer(u) {
		return nil, nil, false, nil // peers, before, denies them the rest
	}
	return everything, everythingNonResource, false, nil
}

var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// Attributes are the request's authorization attributes, as kube-apiserver
// derives them: the verb from the method (get, list, watch, create,
// update, patch, delete, deletecollection; the lower-case method for
// non-resource paths), the name from the path or from a
// metadata.name field selector, namespace, API group, resource.
func Attributes(r *http.Request, u user.Info) (authorizer.AttributesRecord, error) {
	info, err := requestInfos.NewRequestInfo(r)
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            info.Verb,
		Namespace:       info.Namespace,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Name:            info.Name,
		ResourceRequest: info.IsResourceRequest,
		Path:            info.Path,
	}, nil
}

// Forbidden is kube-apiserver's 403 for a request the authorizer did not
// allow, reason (if any) appended to the message.
func Forbidden(a authorizer.Attributes, reason string) *apierrors.StatusError {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.GetAPIGroup(), Resource: a.GetResource()}
	return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("%s", msg))
}

// htmlEscaper escapes what kube-apiserver escapes in a 403 message.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func forbiddenMessage(a authorizer.Attributes) string {
	name := ""
	if u := a.GetUser(); u != nil {
		name = u.GetName()
	}
	var msg string
	switch {
	case !a.IsResourceRequest():
		msg = fmt.Sprintf("User %q cannot %s path %q", name, a.GetVerb(), a.GetPath())
	default:
		resource := a.GetResource()
		if sub := a.GetSubresource(); sub != "" {
			resource += "/" + sub
		}
		if ns := a.GetNamespace(); ns != "" {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.GetVerb(), resource, a.GetAPIGroup(), ns)
		} else {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.GetVerb(), resource, a.GetAPIGroup())
		}
	}
	return htmlEscaper.Replace(msg)
}
