package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

const leases = "/apis/coordination.k8s.io/v1/namespaces/team-a/leases"

// TestAttributes derives kube-apiserver's authorization attributes from
// requests: verbs from methods, list/watch, names from paths and
// metadata.name field selectors, non-resource paths.
func TestAttributes(t *testing.T) {
	type attrs struct {
		verb, ns, group, version, resource, sub, name string
		resource_                                     bool // a resource request
		path                                          string
	}
	lease := func(verb, name string) attrs {
		return attrs{verb: verb, ns: "team-a", group: "coordination.k8s.io", version: "v1", resource: "leases", name: name, resource_: true}
	}
	nonResource := func(verb string) attrs { return attrs{verb: verb} }
	with := func(a attrs, f func(*attrs)) attrs { f(&a); return a }
	cases := []struct {
		method, target string
		want           attrs
	}{
		{"POST", leases, lease("create", "")},
		{"GET", leases + "/x", lease("get", "x")},
		{"HEAD", leases + "/x", lease("get", "x")},
		{"GET", leases, lease("list", "")},
		{"HEAD", leases, lease("list", "")},
		{"GET", leases + "/", lease("list", "")},
		{"GET", leases + "?watch=true", lease("watch", "")},
		{"GET", leases + "?watch=1", lease("watch", "")},
		{"GET", leases + "?watch=True", lease("watch", "")},
		{"GET", leases + "?watch=false", lease("list", "")},
		{"GET", leases + "?watch=0", lease("list", "")},
		{"GET", leases + "?watch=", lease("watch", "")}, // kube: only "false" and "0" are false
		{"GET", leases + "?resourceVersion=5&limit=10", lease("list", "")},
		{"GET", leases + "/x?watch=true", lease("get", "x")}, // a named GET is a get
		{"GET", "/apis/coordination.k8s.io/v1/watch/namespaces/team-a/leases", lease("watch", "")},
		{"GET", "/apis/coordination.k8s.io/v1/watch/namespaces/team-a/leases/x", lease("watch", "x")},
		{"GET", "/apis/coordination.k8s.io/v1/watch/leases", with(lease("watch", ""), func(a *attrs) { a.ns = "" })},
		{"GET", "/apis/coordination.k8s.io/v1/leases", with(lease("list", ""), func(a *attrs) { a.ns = "" })},
		{"GET", "/apis/coordination.k8s.io/v1/leases?watch=1", with(lease("watch", ""), func(a *attrs) { a.ns = "" })},
		{"PUT", leases + "/x", lease("update", "x")},
		{"PUT", leases + "/x/status", with(lease("update", "x"), func(a *attrs) { a.sub = "status" })},
		{"PATCH", leases + "/x/status", with(lease("patch", "x"), func(a *attrs) { a.sub = "status" })},
		{"GET", leases + "/x/status/more", with(lease("get", "x"), func(a *attrs) { a.sub = "status" })},
		{"PATCH", leases + "/x", lease("patch", "x")},
		{"DELETE", leases + "/x", lease("delete", "x")},
		{"DELETE", leases, lease("deletecollection", "")},
		{"OPTIONS", leases + "/x", lease("", "x")},

		// A metadata.name field selector names the object of a list or watch.
		{"GET", leases + "?fieldSelector=metadata.name%3Dx", lease("list", "x")},
		{"GET", leases + "?fieldSelector=metadata.name==x", lease("list", "x")},
		{"GET", leases + "?fieldSelector=metadata.name%3Dx&watch=true", lease("watch", "x")},
		{"GET", "/apis/coordination.k8s.io/v1/leases?fieldSelector=metadata.name%3Dx", with(lease("list", "x"), func(a *attrs) { a.ns = "" })},
		{"GET", leases + "?fieldSelector=metadata.name%3Dx,spec.holderIdentity%3Dn1", lease("list", "x")},
		{"GET", leases + "?fieldSelector=metadata.name!%3Dx", lease("list", "")},
		{"GET", leases + "?fieldSelector=spec.holderIdentity%3Dx", lease("list", "")},
		{"GET", leases + "?fieldSelector=metadata.name%3Da%2Fb", lease("list", "")}, // not a path segment
		{"GET", leases + "?fieldSelector=metadata.name%3D..", lease("list", "")},
		{"GET", leases + "?fieldSelector=metadata.name%3D", lease("list", "")},
		{"GET", leases + "?fieldSelector=metadata.name%3Dx&limit=notanumber", lease("list", "")},                                   // unparsable options: no name
		{"GET", leases + "?fieldSelector=metadata.name%3Dx&limit=notanumber&watch=1", lease("watch", "")},                          // ...but watch still counts
		{"GET", "/apis/coordination.k8s.io/v1/watch/namespaces/team-a/leases?fieldSelector=metadata.name%3Dx", lease("watch", "")}, // kube: not for the watch path
		// kube-apiserver reads the field selector for GET only: a DELETE of
		// a collection stays nameless whatever it selects.
		{"DELETE", leases + "?fieldSelector=metadata.name%3Dx", lease("deletecollection", "")},

		// The core group.
		{"GET", "/api/v1/namespaces/x", attrs{verb: "get", ns: "x", version: "v1", resource: "namespaces", name: "x", resource_: true}},
		{"GET", "/api/v1/namespaces", attrs{verb: "list", version: "v1", resource: "namespaces", resource_: true}},
		{"PUT", "/api/v1/namespaces/x/status", attrs{verb: "update", ns: "x", version: "v1", resource: "namespaces", name: "x", sub: "status", resource_: true}},
		{"GET", "/api/v1/namespaces/x/events", attrs{verb: "list", ns: "x", version: "v1", resource: "events", resource_: true}},

		// Non-resource paths: the lower-case method, the path.
		{"GET", "/metrics", nonResource("get")},
		{"GET", "/cluster/status", nonResource("get")},
		{"POST", "/cluster/join", nonResource("post")},
		{"DELETE", "/cluster/members/n3", nonResource("delete")},
		{"GET", "/version", nonResource("get")},
		{"GET", "/healthz", nonResource("get")},
		{"HEAD", "/healthz", nonResource("head")},
		{"PUT", "/metrics", nonResource("put")},
		{"GET", "/", nonResource("get")},
		{"GET", "/api", nonResource("get")},
		{"GET", "/api/v1", nonResource("get")},
		{"GET", "/apis", nonResource("get")},
		{"GET", "/apis/coordination.k8s.io", nonResource("get")},
		{"GET", "/apis/coordination.k8s.io/v1", nonResource("get")},
		{"GET", "/openapi/v3/apis/coordination.k8s.io/v1", nonResource("get")},
		{"GET", "/metrics?watch=true", nonResource("get")},
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	for _, c := range cases {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.target, nil)
			got, err := Attributes(r, alice)
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if w.path == "" {
				w.path = r.URL.Path
			}
			g := attrs{
				verb: got.GetVerb(), ns: got.GetNamespace(), group: got.GetAPIGroup(), version: got.GetAPIVersion(),
				resource: got.GetResource(), sub: got.GetSubresource(), name: got.GetName(),
				resource_: got.IsResourceRequest(), path: got.GetPath(),
			}
			if g != w {
				t.Errorf("attributes\n got %+v\nwant %+v", g, w)
			}
			if got.GetUser() != alice {
				t.Errorf("user %v, want alice", got.GetUser())
			}
		})
	}
}

func TestAttributesErrors(t *testing.T) {
	for _, target := range []string{
		"/apis/coordination.k8s.io/v1/watch",
		"/api/v1/watch",
		"/api/v1/proxy",
	} {
		if a, err := Attributes(httptest.NewRequest("GET", target, nil), nil); err == nil {
			t.Errorf("%s: no error (%+v)", target, a)
		}
	}
}

// statusJSON encodes a 403 as kube-apiserver writes it.
func statusJSON(t *testing.T, a authorizer.Attributes, reason string) string {
	t.Helper()
	err := Forbidden(a, reason)
	if err.Status().Code != http.StatusForbidden {
		t.Errorf("code %d", err.Status().Code)
	}
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	b, jerr := json.Marshal(st)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return string(b)
}

// TestForbidden: kube-apiserver's 403 bodies, byte for byte.
func TestForbidden(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	attrsOf := func(method, target string, u user.Info) authorizer.Attributes {
		a, err := Attributes(httptest.NewRequest(method, target, nil), u)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name   string
		attrs  authorizer.Attributes
		reason string
		want   string
	}{
		{
			"update in a namespace", attrsOf("PUT", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/x", alice), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" is forbidden: User \"alice\" cannot update resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":403}`,
		},
		{
			"list at the cluster scope", attrsOf("GET", "/apis/coordination.k8s.io/v1/leases", alice), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"alice\" cannot list resource \"leases\" in API group \"coordination.k8s.io\" at the cluster scope","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}`,
		},
		{
			"non-resource path", attrsOf("GET", "/metrics", alice), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}`,
		},
		{
			"with a reason", attrsOf("DELETE", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/x", alice), "no RBAC policy matched",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" is forbidden: User \"alice\" cannot delete resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\": no RBAC policy matched","reason":"Forbidden","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":403}`,
		},
		{
			"subresource", attrsOf("PUT", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/x/status", alice), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"x\" is forbidden: User \"alice\" cannot update resource \"leases/status\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":403}`,
		},
		{
			"core group", attrsOf("GET", "/api/v1/namespaces/x", alice), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"x\" is forbidden: User \"alice\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"x\"","reason":"Forbidden","details":{"name":"x","kind":"namespaces"},"code":403}`,
		},
		{
			"non-resource POST with a reason", attrsOf("POST", "/cluster/join", alice), "not a member",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot post path \"/cluster/join\": not a member","reason":"Forbidden","details":{},"code":403}`,
		},
		{
			"anonymous watch", attrsOf("GET", "/apis/coordination.k8s.io/v1/namespaces/team-b/leases?watch=1", Anonymous), "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"system:anonymous\" cannot watch resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}`,
		},
		{
			"no user", authorizer.AttributesRecord{Verb: "get", Path: "/metrics"}, "",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := statusJSON(t, c.attrs, c.reason); got != c.want {
				t.Errorf("status\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestForbiddenEscapes: what kube-apiserver HTML-escapes in a 403 message
// (the part it builds from the attributes, not the authorizer's reason).
func TestForbiddenEscapes(t *testing.T) {
	cases := []struct {
		name   string
		attrs  authorizer.AttributesRecord
		reason string
		want   string
	}{
		{
			"user name",
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "<script>&alert"}, Verb: "get", Path: "/metrics"}, "",
			`forbidden: User "&lt;script&gt;&amp;alert" cannot get path "/metrics"`,
		},
		{
			"path",
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "bob"}, Verb: "get", Path: "/a<b>&c"}, "",
			`forbidden: User "bob" cannot get path "/a&lt;b&gt;&amp;c"`,
		},
		{
			"namespace and resource",
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "a&b"}, Verb: "list", ResourceRequest: true, APIGroup: "g", Resource: "l<s>", Namespace: "n&s"}, "",
			`l<s>.g is forbidden: User "a&amp;b" cannot list resource "l&lt;s&gt;" in API group "g" in the namespace "n&amp;s"`,
		},
		{
			"reason left alone",
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "<b>"}, Verb: "get", Path: "/metrics"}, "because <x> & y",
			`forbidden: User "&lt;b&gt;" cannot get path "/metrics": because <x> & y`,
		},
		{
			"quotes in the user name",
			authorizer.AttributesRecord{User: &user.DefaultInfo{Name: `a"b`}, Verb: "get", Path: "/metrics"}, "",
			`forbidden: User "a\"b" cannot get path "/metrics"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Forbidden(c.attrs, c.reason)
			if got := err.ErrStatus.Message; got != c.want {
				t.Errorf("message\n got %s\nwant %s", got, c.want)
			}
			if err.Error() != err.ErrStatus.Message {
				t.Errorf("Error() %q is not the message", err.Error())
			}
			if err.ErrStatus.Reason != metav1.StatusReasonForbidden || err.ErrStatus.Code != 403 {
				t.Errorf("reason %q code %d", err.ErrStatus.Reason, err.ErrStatus.Code)
			}
		})
	}
}

func TestNewAuthorizer(t *testing.T) {
	for _, mode := range []string{ModeRBAC, "", "alwaysallow", "AlwaysAllow,RBAC", "AlwaysDeny", "Node", " AlwaysAllow", "Webhook"} {
		if a, err := NewAuthorizer(mode, nil); err == nil || a != nil {
			t.Errorf("mode %q: %v, %v; want an error", mode, a, err)
		}
	}
	if _, err := NewAuthorizer(ModeRBAC, nil); err == nil || !strings.Contains(err.Error(), "RBAC") {
		t.Errorf("RBAC error %v does not name the mode", err)
	}
}

// TestAlwaysAllow: everyone may do everything, masters too, and holds the
// "*" rules.
func TestAlwaysAllow(t *testing.T) {
	z, err := NewAuthorizer(ModeAlwaysAllow, nil)
	if err != nil {
		t.Fatal(err)
	}
	users := []user.Info{
		&user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}},
		&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}},
		Anonymous,
		&user.DefaultInfo{Name: "system:serviceaccount:a:b", Groups: []string{"system:serviceaccounts"}},
		nil,
	}
	requests := []struct{ method, target string }{
		{"GET", leases}, {"POST", leases}, {"DELETE", leases}, {"PUT", leases + "/x/status"},
		{"GET", "/metrics"}, {"POST", "/cluster/join"},
	}
	ctx := context.Background()
	for _, u := range users {
		for _, rq := range requests {
			a, err := Attributes(httptest.NewRequest(rq.method, rq.target, nil), u)
			if err != nil {
				t.Fatal(err)
			}
			d, reason, err := z.Authorize(ctx, a)
			if d != authorizer.DecisionAllow || err != nil {
				t.Errorf("%v %s %s: %v %q %v", u, rq.method, rq.target, d, reason, err)
			}
		}
		rr, nr, incomplete, err := z.RulesFor(ctx, u, "team-a")
		if err != nil || incomplete {
			t.Errorf("%v: RulesFor incomplete %v, %v", u, incomplete, err)
		}
		checkEverything(t, rr, nr)
	}
}

func checkEverything(t *testing.T, rr []authorizer.ResourceRuleInfo, nr []authorizer.NonResourceRuleInfo) {
	t.Helper()
	if len(rr) == 0 || len(nr) == 0 {
		t.Fatalf("rules %v %v, want the * rules", rr, nr)
	}
	for _, r := range rr {
		if !eq(r.GetVerbs(), "*") || !eq(r.GetAPIGroups(), "*") || !eq(r.GetResources(), "*") || len(r.GetResourceNames()) != 0 {
			t.Errorf("resource rule %+v, want * * *", r)
		}
	}
	for _, r := range nr {
		if !eq(r.GetVerbs(), "*") || !eq(r.GetNonResourceURLs(), "*") {
			t.Errorf("non-resource rule %+v, want * *", r)
		}
	}
}

func eq(s []string, v ...string) bool { return strings.Join(s, "\x00") == strings.Join(v, "\x00") }

func TestIsMaster(t *testing.T) {
	cases := []struct {
		u    user.Info
		want bool
	}{
		{nil, false},
		{&user.DefaultInfo{}, false},
		{&user.DefaultInfo{Name: "system:masters"}, false},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"system:authenticated"}}, false},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"system:master"}}, false},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"System:Masters"}}, false},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters "}}, false},
		{Anonymous, false},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}, true},
		{&user.DefaultInfo{Name: "admin", Groups: []string{"dev", "system:masters", "system:authenticated"}}, true},
	}
	for _, c := range cases {
		if got := IsMaster(c.u); got != c.want {
			t.Errorf("IsMaster(%v) = %v, want %v", c.u, got, c.want)
		}
	}
}

// deny and failing are stand-ins for a mode after system:masters.
type deny struct{}

func (deny) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "denied by policy", nil
}

func (deny) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

type failing struct{}

func (failing) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "webhook down", errors.New("boom")
}

func (failing) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, true, errors.New("boom")
}

// TestChain: system:masters is asked first and overrides any later
// denial; the first opinion decides; nobody's opinion is no allowance; an
// error is reported.
func TestChain(t *testing.T) {
	ctx := context.Background()
	master := &user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	attrs := func(u user.Info) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: "delete", ResourceRequest: true, APIGroup: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system", Name: "x"}
	}
	cases := []struct {
		name     string
		c        chain
		u        user.Info
		decision authorizer.Decision
		reason   string
		err      bool
	}{
		{"master over a denial", chain{privilegedGroup{}, deny{}}, master, authorizer.DecisionAllow, "", false},
		{"others denied", chain{privilegedGroup{}, deny{}}, alice, authorizer.DecisionDeny, "denied by policy", false},
		{"nil user denied", chain{privilegedGroup{}, deny{}}, nil, authorizer.DecisionDeny, "denied by policy", false},
		{"no opinion", chain{privilegedGroup{}}, alice, authorizer.DecisionNoOpinion, "", false},
		{"master over a failure", chain{privilegedGroup{}, failing{}}, master, authorizer.DecisionAllow, "", false},
		{"failure reported", chain{privilegedGroup{}, failing{}}, alice, authorizer.DecisionNoOpinion, "webhook down", true},
		{"failure then allow", chain{failing{}, alwaysAllow{}}, alice, authorizer.DecisionAllow, "", false},
		{"failure then deny", chain{failing{}, deny{}}, alice, authorizer.DecisionDeny, "denied by policy", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := c.c.Authorize(ctx, attrs(c.u))
			if d != c.decision || reason != c.reason || (err != nil) != c.err {
				t.Errorf("got %v %q %v; want %v %q error %v", d, reason, err, c.decision, c.reason, c.err)
			}
		})
	}

	rr, nr, incomplete, err := chain{privilegedGroup{}, deny{}}.RulesFor(ctx, master, "")
	if err != nil || incomplete {
		t.Errorf("master rules: incomplete %v, %v", incomplete, err)
	}
	checkEverything(t, rr, nr)
	if rr, nr, _, _ := (chain{privilegedGroup{}, deny{}}).RulesFor(ctx, alice, ""); len(rr) != 0 || len(nr) != 0 {
		t.Errorf("alice holds %v %v under a denying mode", rr, nr)
	}
	if _, _, incomplete, err := (chain{privilegedGroup{}, failing{}}).RulesFor(ctx, alice, ""); !incomplete || err == nil {
		t.Errorf("a failing resolver: incomplete %v, %v", incomplete, err)
	}
}
