package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// impersonators may impersonate what allow says; everyone else nothing.
type impersonators struct {
	allow func(a authorizer.Attributes) bool
}

func (i impersonators) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if i.allow(a) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (impersonators) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

func TestImpersonate(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	var asked []string
	z := impersonators{allow: func(a authorizer.Attributes) bool {
		asked = append(asked, a.GetVerb()+" "+a.GetAPIGroup()+"/"+a.GetResource()+"/"+a.GetSubresource()+" "+a.GetNamespace()+"/"+a.GetName())
		return a.GetVerb() == "impersonate" && a.GetName() != "root"
	}}
	for _, tc := range []struct {
		name    string
		headers map[string][]string
		user    string
		groups  []string
		uid     string
		extra   map[string][]string
		asked   []string
		err     string
	}{
		{name: "none", user: "alice", groups: []string{"system:authenticated"}},
		{name: "user", headers: map[string][]string{"Impersonate-User": {"bob"}}, user: "bob", groups: []string{"system:authenticated"},
			asked: []string{"impersonate /users/ /bob"}},
		{name: "user and groups", headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"g1", "g2"}},
			user: "bob", groups: []string{"g1", "g2", "system:authenticated"},
			asked: []string{"impersonate /users/ /bob", "impersonate /groups/ /g1", "impersonate /groups/ /g2"}},
		{name: "service account", headers: map[string][]string{"Impersonate-User": {"system:serviceaccount:ns1:sa"}},
			user: "system:serviceaccount:ns1:sa", groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
			asked: []string{"impersonate /serviceaccounts/ ns1/sa"}},
		{name: "anonymous", headers: map[string][]string{"Impersonate-User": {"system:anonymous"}},
			user: "system:anonymous", groups: []string{"system:unauthenticated"}, asked: []string{"impersonate /users/ /system:anonymous"}},
		{name: "uid and extra", headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Uid": {"u-1"}, "Impersonate-Extra-Scopes%2Fx": {"a"}},
			user: "bob", groups: []string{"system:authenticated"}, uid: "u-1", extra: map[string][]string{"scopes/x": {"a"}},
			asked: []string{"impersonate /users/ /bob", "impersonate authentication.k8s.io/uids/ /u-1", "impersonate authentication.k8s.io/userextras/scopes/x /a"}},
		{name: "refused", headers: map[string][]string{"Impersonate-User": {"root"}},
			err:   `users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`,
			asked: []string{"impersonate /users/ /root"}},
		{name: "refused group", headers: map[string][]string{"Impersonate-User": {"bob"}, "Impersonate-Group": {"root"}},
			err:   `groups "root" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`,
			asked: []string{"impersonate /users/ /bob", "impersonate /groups/ /root"}},
		{name: "group without user", headers: map[string][]string{"Impersonate-Group": {"g1"}}, err: "requested [group=g1] without impersonating a user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			h := http.Header{}
			for k, vs := range tc.headers {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			u, err := Impersonate(context.Background(), z, alice, h)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
			} else if err != nil || u.GetName() != tc.user || !slices.Equal(u.GetGroups(), tc.groups) || u.GetUID() != tc.uid || len(u.GetExtra()) != len(tc.extra) {
				t.Fatalf("%v %v", u, err)
			} else {
				for k, v := range tc.extra {
					if !slices.Equal(u.GetExtra()[k], v) {
						t.Errorf("extra %s: %v", k, u.GetExtra()[k])
					}
				}
				for k := range h {
					if strings.HasPrefix(k, "Impersonate-") {
						t.Errorf("header %s left on the request", k)
					}
				}
			}
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("asked %q, want %q", asked, tc.asked)
			}
		})
	}
}
