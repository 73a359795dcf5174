package auth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Impersonate applies kube-apiserver's impersonation headers
// (Impersonate-User, Impersonate-Group, Impersonate-Uid,
// Impersonate-Extra-<key>; kubectl --as, --as-group, --as-uid): requester
// must be allowed the impersonate verb on each (users, groups, or the
// service account; uids and userextras in authentication.k8s.io), and the
// request then runs as the impersonated user. It returns requester when
// the request asks for no impersonation, and removes the headers. A
// refusal is kube's 403 for the first thing not allowed; a group, uid or
// extra without a user is 400.
func Impersonate(ctx context.Context, authz Authorizer, requester user.Info, h http.Header) (user.Info, error) {
	name := h.Get(authenticationv1.ImpersonateUserHeader)
	groups := h.Values(authenticationv1.ImpersonateGroupHeader)
	uid := h.Get(authenticationv1.ImpersonateUIDHeader)
	var extra map[string][]string // made for the first extra: most requests impersonate no one
	for k, vs := range h {
		if key, ok := strings.CutPrefix(k, authenticationv1.ImpersonateUserExtraHeaderPrefix); ok {
			// The key is URL-escaped on the wire, as in kube-apiserver.
			if unescaped, err := url.PathUnescape(key); err == nil {
				key = unescaped
			}
			if extra == nil {
				extra = map[string][]string{}
			}
			extra[strings.ToLower(key)] = append(extra[strings.ToLower(key)], vs...)
		}
	}
	if name == "" && len(groups) == 0 && uid == "" && len(extra) == 0 {
		return requester, nil
	}
	if name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %v without impersonating a user", impersonationRequested(groups, uid, extra)))
	}
	check := func(a authorizer.AttributesRecord) error {
		a.User, a.Verb, a.ResourceRequest = requester, "impersonate", true
		if d, reason, _ := authz.Authorize(ctx, a); d != authorizer.DecisionAllow {
			return Forbidden(a, reason)
		}
		return nil
	}
	if ns, sa, err := serviceaccount.SplitUsername(name); err == nil {
		if err := check(authorizer.AttributesRecord{Namespace: ns, Resource: "serviceaccounts", Name: sa}); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			groups = serviceaccount.MakeGroupNames(ns)
		}
	} else if err := check(authorizer.AttributesRecord{Resource: "users", Name: name}); err != nil {
		return nil, err
	}
	for _, g := range h.Values(authenticationv1.ImpersonateGroupHeader) {
		if err := check(authorizer.AttributesRecord{Resource: "groups", Name: g}); err != nil {
			return nil, err
		}
	}
	if uid != "" {
		if err := check(authorizer.AttributesRecord{APIGroup: authenticationv1.GroupName, Resource: "uids", Name: uid}); err != nil {
			return nil, err
		}
	}
	for k, vs := range extra {
		for _, v := range vs {
			if err := check(authorizer.AttributesRecord{APIGroup: authenticationv1.GroupName, Resource: "userextras", Subresource: k, Name: v}); err != nil {
				return nil, err
			}
		}
	}
	// kube-apiserver adds system:authenticated (system:unauthenticated for
	// system:anonymous) unless one of the two was asked for.
	marker := user.AllAuthenticated
	if name == user.Anonymous {
		marker = user.AllUnauthenticated
	}
	has := false
	for _, g := range groups {
		has = has || g == user.AllAuthenticated || g == user.AllUnauthenticated
	}
	if !has {
		groups = append(groups, marker)
	}
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			h.Del(k)
		}
	}
	return &user.DefaultInfo{Name: name, UID: uid, Groups: groups, Extra: extra}, nil
}

func impersonationRequested(groups []string, uid string, extra map[string][]string) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, "group="+g)
	}
	if uid != "" {
		parts = append(parts, "uid="+uid)
	}
	for k, vs := range extra {
		for _, v := range vs {
			parts = append(parts, k+"="+v)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
