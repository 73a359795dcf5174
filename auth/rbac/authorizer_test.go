package rbac

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

var alice = who("alice", "dev", user.AllAuthenticated)

func TestRuleAllows(t *testing.T) {
	leases := pr(l("get"), l("coordination.k8s.io"), l("leases"))
	tests := []struct {
		name string
		rule rbacv1.PolicyRule
		req  authorizer.AttributesRecord
		want bool
	}{
		{"exact", leases, res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "a"), true},
		{"verb mismatch", leases, res(alice, "list", "coordination.k8s.io", "leases", "", "ns", ""), false},
		{"verb star", pr(l("*"), l("coordination.k8s.io"), l("leases")), res(alice, "deletecollection", "coordination.k8s.io", "leases", "", "ns", ""), true},
		{"one of several verbs", pr(l("list", "watch"), l("coordination.k8s.io"), l("leases")), res(alice, "watch", "coordination.k8s.io", "leases", "", "ns", ""), true},
		{"group mismatch", leases, res(alice, "get", "", "leases", "", "ns", "a"), false},
		{"group star", pr(l("get"), l("*"), l("leases")), res(alice, "get", "example.com", "leases", "", "ns", "a"), true},
		{"core group", pr(l("get"), l(""), l("namespaces")), res(alice, "get", "", "namespaces", "", "", "ns"), true},
		{"core rule, named group", pr(l("get"), l(""), l("leases")), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "a"), false},
		{"resource mismatch", leases, res(alice, "get", "coordination.k8s.io", "leasecandidates", "", "ns", "a"), false},
		{"resource star", pr(l("get"), l("coordination.k8s.io"), l("*")), res(alice, "get", "coordination.k8s.io", "leasecandidates", "", "ns", "a"), true},
		{"resource star covers subresource", pr(l("get"), l("coordination.k8s.io"), l("*")), res(alice, "get", "coordination.k8s.io", "leases", "status", "ns", "a"), true},
		{"resource does not cover subresource", leases, res(alice, "get", "coordination.k8s.io", "leases", "status", "ns", "a"), false},
		{"resource/subresource", pr(l("get"), l("coordination.k8s.io"), l("leases/status")), res(alice, "get", "coordination.k8s.io", "leases", "status", "ns", "a"), true},
		{"resource/subresource not the resource", pr(l("get"), l("coordination.k8s.io"), l("leases/status")), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "a"), false},
		{"*/subresource", pr(l("get"), l("*"), l("*/status")), res(alice, "get", "coordination.k8s.io", "leases", "status", "ns", "a"), true},
		{"*/subresource other subresource", pr(l("get"), l("*"), l("*/status")), res(alice, "get", "coordination.k8s.io", "leases", "scale", "ns", "a"), false},
		{"*/subresource not the resource", pr(l("get"), l("*"), l("*/status")), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "a"), false},
		{"*/subresource suffix only", pr(l("get"), l("*"), l("*/tatus")), res(alice, "get", "coordination.k8s.io", "leases", "status", "ns", "a"), false},
		{"resourceNames hit", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a", "b")}, res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "b"), true},
		{"resourceNames miss", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}, res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "c"), false},
		{"resourceNames never match create", rbacv1.PolicyRule{Verbs: l("create"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}, res(alice, "create", "coordination.k8s.io", "leases", "", "ns", ""), false},
		{"resourceNames never match list", rbacv1.PolicyRule{Verbs: l("list"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}, res(alice, "list", "coordination.k8s.io", "leases", "", "ns", ""), false},
		{"resourceNames never match deletecollection", rbacv1.PolicyRule{Verbs: l("deletecollection"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}, res(alice, "deletecollection", "coordination.k8s.io", "leases", "", "ns", ""), false},
		{"resourceNames match a named watch", rbacv1.PolicyRule{Verbs: l("watch"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}, res(alice, "watch", "coordination.k8s.io", "leases", "", "ns", "a"), true},
		{"resource rule, non-resource request", pr(l("*"), l("*"), l("*")), nonRes(alice, "get", "/healthz"), false},
		{"url exact", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz")}, nonRes(alice, "get", "/healthz"), true},
		{"url not a prefix", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz")}, nonRes(alice, "get", "/healthz/etcd"), false},
		{"url verb mismatch", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz")}, nonRes(alice, "post", "/healthz"), false},
		{"url star", rbacv1.PolicyRule{Verbs: l("*"), NonResourceURLs: l("*")}, nonRes(alice, "post", "/cluster/join"), true},
		{"url prefix star", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz/*")}, nonRes(alice, "get", "/healthz/etcd"), true},
		{"url prefix star not the bare path", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/apis/*")}, nonRes(alice, "get", "/apis"), false},
		{"url prefix star without slash", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/api*")}, nonRes(alice, "get", "/apis/coordination.k8s.io"), true},
		{"url rule, resource request", rbacv1.PolicyRule{Verbs: l("*"), NonResourceURLs: l("*")}, res(alice, "get", "", "namespaces", "", "", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.req, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows(%+v, %s) = %v, want %v", tc.req, CompactString(tc.rule), got, tc.want)
			}
			if got := RulesAllow(tc.req, pr(l("nothing"), l("x"), l("y")), tc.rule); got != tc.want {
				t.Errorf("RulesAllow = %v, want %v", got, tc.want)
			}
		})
	}
}

func scopePolicy() *StaticPolicy {
	return &StaticPolicy{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("lease-reader", pr(l("get", "list", "watch"), l("coordination.k8s.io"), l("leases"))),
			clusterRole("ns-reader", pr(l("get"), l(""), l("namespaces")), rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/metrics")}),
		},
		Roles: []*rbacv1.Role{
			role("team-a", "candidates", pr(l("create"), l("coordination.k8s.io"), l("leasecandidates"))),
			role("team-b", "candidates", pr(l("*"), l("*"), l("*"))),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("team-a", "read-leases", "ClusterRole", "lease-reader", userSubject("alice")),
			rb("team-a", "candidates", "Role", "candidates", userSubject("alice")),
			rb("team-a", "ns", "ClusterRole", "ns-reader", userSubject("alice")),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("everywhere", "lease-reader", userSubject("bob")),
			crb("ns-everywhere", "ns-reader", userSubject("bob")),
		},
	}
}

func TestAuthorizeBindingScopes(t *testing.T) {
	a := New(static(scopePolicy()))
	bob := who("bob", user.AllAuthenticated)
	tests := []struct {
		name string
		req  authorizer.AttributesRecord
		want authorizer.Decision
	}{
		{"rolebinding to clusterrole grants in its namespace", res(alice, "list", "coordination.k8s.io", "leases", "", "team-a", ""), authorizer.DecisionAllow},
		{"rolebinding to clusterrole grants nothing elsewhere", res(alice, "list", "coordination.k8s.io", "leases", "", "team-b", ""), authorizer.DecisionNoOpinion},
		{"rolebinding to clusterrole grants nothing at cluster scope", res(alice, "list", "coordination.k8s.io", "leases", "", "", ""), authorizer.DecisionNoOpinion},
		{"rolebinding to clusterrole grants its cluster-scoped rule only in namespace", res(alice, "get", "", "namespaces", "", "team-a", "team-a"), authorizer.DecisionAllow},
		{"rolebinding to clusterrole does not grant the cluster-scoped resource", res(alice, "get", "", "namespaces", "", "", "team-a"), authorizer.DecisionNoOpinion},
		{"rolebinding never grants non-resource urls", nonRes(alice, "get", "/metrics"), authorizer.DecisionNoOpinion},
		{"rolebinding to role of its namespace", res(alice, "create", "coordination.k8s.io", "leasecandidates", "", "team-a", ""), authorizer.DecisionAllow},
		{"role of the same name in another namespace is not used", res(alice, "delete", "coordination.k8s.io", "leasecandidates", "", "team-a", "x"), authorizer.DecisionNoOpinion},
		{"clusterrolebinding grants in any namespace", res(bob, "watch", "coordination.k8s.io", "leases", "", "team-b", ""), authorizer.DecisionAllow},
		{"clusterrolebinding grants across namespaces", res(bob, "list", "coordination.k8s.io", "leases", "", "", ""), authorizer.DecisionAllow},
		{"clusterrolebinding grants cluster-scoped resources", res(bob, "get", "", "namespaces", "", "", "team-a"), authorizer.DecisionAllow},
		{"clusterrolebinding grants non-resource urls", nonRes(bob, "get", "/metrics"), authorizer.DecisionAllow},
		{"clusterrolebinding grants no more than the role", res(bob, "delete", "coordination.k8s.io", "leases", "", "team-a", "x"), authorizer.DecisionNoOpinion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Errorf("decision %v (%q), want %v", d, reason, tc.want)
			}
			if d == authorizer.DecisionNoOpinion && reason != "" {
				t.Errorf("no opinion with reason %q, want none", reason)
			}
		})
	}
}

func TestAuthorizeSubjectsAndReasons(t *testing.T) {
	p := &StaticPolicy{
		ClusterRoles: []*rbacv1.ClusterRole{clusterRole("lease-reader", pr(l("get"), l("coordination.k8s.io"), l("leases")))},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("ns", "by-user", "ClusterRole", "lease-reader", userSubject("carol")),
			rb("ns", "by-group", "ClusterRole", "lease-reader", groupSubject("readers")),
			rb("ns", "by-local-sa", "ClusterRole", "lease-reader", saSubject("", "local")),
			rb("ns", "by-remote-sa", "ClusterRole", "lease-reader", saSubject("other", "remote")),
			rb("ns", "second-subject", "ClusterRole", "lease-reader", userSubject("nobody"), userSubject("dave"), userSubject("dave")),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("crb-sa", "lease-reader", saSubject("kube-system", "elector")),
			crb("crb-sa-no-namespace", "lease-reader", saSubject("", "orphan")),
			crb("crb-group", "lease-reader", groupSubject("system:leasers")),
		},
	}
	a := New(static(p))
	get := func(u user.Info) authorizer.AttributesRecord {
		return res(u, "get", "coordination.k8s.io", "leases", "", "ns", "x")
	}
	tests := []struct {
		name   string
		user   user.Info
		want   authorizer.Decision
		reason string
	}{
		{"user", who("carol"), authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "by-user/ns" of ClusterRole "lease-reader" to User "carol"`},
		{"user names are exact", who("Carol"), authorizer.DecisionNoOpinion, ""},
		{"group", who("erin", "readers"), authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "by-group/ns" of ClusterRole "lease-reader" to Group "readers"`},
		{"a user named like the group is not in it", who("readers"), authorizer.DecisionNoOpinion, ""},
		{"service account defaulted to the binding's namespace", who("system:serviceaccount:ns:local"), authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "by-local-sa/ns" of ClusterRole "lease-reader" to ServiceAccount "local/ns"`},
		{"service account of its own namespace", who("system:serviceaccount:other:remote"), authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "by-remote-sa/ns" of ClusterRole "lease-reader" to ServiceAccount "remote/other"`},
		{"service account of another namespace", who("system:serviceaccount:other:local"), authorizer.DecisionNoOpinion, ""},
		{"service account name needs the prefix", who("ns:local"), authorizer.DecisionNoOpinion, ""},
		{"service account in a clusterrolebinding", who("system:serviceaccount:kube-system:elector"), authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "crb-sa" of ClusterRole "lease-reader" to ServiceAccount "elector/kube-system"`},
		{"service account without namespace in a clusterrolebinding never applies", who("system:serviceaccount::orphan"), authorizer.DecisionNoOpinion, ""},
		{"clusterrolebinding group", who("frank", "system:leasers"), authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "crb-group" of ClusterRole "lease-reader" to Group "system:leasers"`},
		{"reason names the subject that applies", who("dave"), authorizer.DecisionAllow, `RBAC: allowed by RoleBinding "second-subject/ns" of ClusterRole "lease-reader" to User "dave"`},
		{"clusterrolebindings first", who("carol", "system:leasers"), authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "crb-group" of ClusterRole "lease-reader" to Group "system:leasers"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), get(tc.user))
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestAuthorizeFirstAllowWins(t *testing.T) {
	p := &StaticPolicy{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("first", pr(l("list"), l("x"), l("y")), pr(l("get"), l("coordination.k8s.io"), l("leases"))),
			clusterRole("second", pr(l("*"), l("*"), l("*"))),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("ns", "b", "ClusterRole", "second", userSubject("alice")),
			rb("ns", "a", "ClusterRole", "first", userSubject("alice")),
		},
	}
	d, reason, _ := New(static(p)).Authorize(context.Background(), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"))
	if want := `RBAC: allowed by RoleBinding "b/ns" of ClusterRole "second" to User "alice"`; d != authorizer.DecisionAllow || reason != want {
		t.Errorf("got %v %q, want allow %q", d, reason, want)
	}
}

func TestAuthorizeUnresolvedRoles(t *testing.T) {
	reader := clusterRole("reader", pr(l("get"), l("coordination.k8s.io"), l("leases")))
	tests := []struct {
		name   string
		p      *StaticPolicy
		req    authorizer.AttributesRecord
		want   authorizer.Decision
		reason string
	}{
		{
			"missing clusterrole",
			&StaticPolicy{ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b", "gone", userSubject("alice"))}},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionNoOpinion, `RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`,
		},
		{
			"missing role",
			&StaticPolicy{RoleBindings: []*rbacv1.RoleBinding{rb("ns", "b", "Role", "gone", userSubject("alice"))}},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionNoOpinion, `RBAC: role.rbac.authorization.k8s.io "gone" not found`,
		},
		{
			"several missing",
			&StaticPolicy{
				ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b1", "gone", userSubject("alice")), crb("b2", "lost", groupSubject("dev"))},
				RoleBindings:        []*rbacv1.RoleBinding{rb("ns", "b3", "Role", "gone", userSubject("alice"))},
			},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionNoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, clusterrole.rbac.authorization.k8s.io "lost" not found, role.rbac.authorization.k8s.io "gone" not found]`,
		},
		{
			"unsupported kind",
			&StaticPolicy{RoleBindings: []*rbacv1.RoleBinding{rb("ns", "b", "Group", "x", userSubject("alice"))}},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionNoOpinion, `RBAC: unsupported role reference kind: "Group"`,
		},
		{
			"a binding that does not apply is not resolved",
			&StaticPolicy{ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b", "gone", userSubject("bob"))}},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionNoOpinion, "",
		},
		{
			"another binding allows",
			&StaticPolicy{
				ClusterRoles:        []*rbacv1.ClusterRole{reader},
				ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b1", "gone", userSubject("alice")), crb("b2", "reader", userSubject("alice"))},
			},
			res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x"),
			authorizer.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "b2" of ClusterRole "reader" to User "alice"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := New(static(tc.p)).Authorize(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("error %v: kube gives a reason, not an error", err)
			}
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
		})
	}
}

func TestAuthorizeNothing(t *testing.T) {
	req := res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "x")
	for name, a := range map[string]*Authorizer{
		"nil func":   New(nil),
		"nil policy": New(func() Policy { return nil }),
		"empty":      New(static(&StaticPolicy{})),
	} {
		if d, reason, err := a.Authorize(context.Background(), req); d != authorizer.DecisionNoOpinion || reason != "" || err != nil {
			t.Errorf("%s: %v %q %v", name, d, reason, err)
		}
		if r, n, inc, err := a.RulesFor(context.Background(), alice, "ns"); r != nil || n != nil || inc || err != nil {
			t.Errorf("%s: RulesFor %v %v %v %v", name, r, n, inc, err)
		}
	}
	// a request without a user is granted nothing, even by a binding to
	// every group
	p := &StaticPolicy{
		ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("all", pr(l("*"), l("*"), l("*")))},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b", "all", userSubject(""))},
	}
	req.User = nil
	if d, _, _ := New(static(p)).Authorize(context.Background(), req); d != authorizer.DecisionNoOpinion {
		t.Errorf("no user: %v", d)
	}
}

func TestRulesFor(t *testing.T) {
	p := scopePolicy()
	p.ClusterRoleBindings = append(p.ClusterRoleBindings, crb("broken", "gone", userSubject("alice")))
	a := New(static(p))

	rr, nr, incomplete, err := a.RulesFor(context.Background(), alice, "team-a")
	wantRR := []authorizer.ResourceRuleInfo{
		&authorizer.DefaultResourceRuleInfo{Verbs: l("get", "list", "watch"), APIGroups: l("coordination.k8s.io"), Resources: l("leases")},
		&authorizer.DefaultResourceRuleInfo{Verbs: l("create"), APIGroups: l("coordination.k8s.io"), Resources: l("leasecandidates")},
		&authorizer.DefaultResourceRuleInfo{Verbs: l("get"), APIGroups: l(""), Resources: l("namespaces")},
	}
	wantNR := []authorizer.NonResourceRuleInfo{
		&authorizer.DefaultNonResourceRuleInfo{Verbs: l("get"), NonResourceURLs: l("/metrics")},
	}
	if !reflect.DeepEqual(rr, wantRR) {
		t.Errorf("resource rules %s, want %s", dump(rr), dump(wantRR))
	}
	if !reflect.DeepEqual(nr, wantNR) {
		t.Errorf("non-resource rules %s, want %s", dump(nr), dump(wantNR))
	}
	if incomplete {
		t.Error("incomplete: kube's RBAC authorizer reports false, with the error")
	}
	if err == nil || err.Error() != `clusterrole.rbac.authorization.k8s.io "gone" not found` {
		t.Errorf("error %v", err)
	}

	// cluster-wide: role bindings do not count
	rr, nr, _, _ = a.RulesFor(context.Background(), alice, "")
	if len(rr) != 0 || len(nr) != 0 {
		t.Errorf("cluster-wide rules of alice: %s %s", dump(rr), dump(nr))
	}
	bob := who("bob")
	rr, nr, incomplete, err = a.RulesFor(context.Background(), bob, "")
	if len(rr) != 2 || len(nr) != 1 || incomplete || err != nil {
		t.Errorf("bob: %s %s %v %v", dump(rr), dump(nr), incomplete, err)
	}

	// a rule with resourceNames keeps them
	p2 := &StaticPolicy{
		ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("named", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")})},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("b", "named", userSubject("alice"))},
	}
	rr, _, _, _ = New(static(p2)).RulesFor(context.Background(), alice, "x")
	if len(rr) != 1 || !reflect.DeepEqual(rr[0].GetResourceNames(), l("a")) {
		t.Errorf("named rule: %s", dump(rr))
	}
}

func dump[T any](v []T) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%+v", x)
	}
	return s + "]"
}

// TestAuthorizeOneViewPerRequest swaps the policy while requests run
// (go test -race): each request asks for the current view once.
func TestAuthorizeOneViewPerRequest(t *testing.T) {
	allow := scopePolicy()
	deny := &StaticPolicy{}
	var cur atomic.Pointer[StaticPolicy]
	cur.Store(allow)
	var calls atomic.Int64
	a := New(func() Policy { calls.Add(1); return cur.Load() })

	req := res(who("bob"), "list", "coordination.k8s.io", "leases", "", "ns", "")
	if _, _, _ = a.Authorize(context.Background(), req); calls.Load() != 1 {
		t.Fatalf("Authorize asked for the policy %d times", calls.Load())
	}
	if _, _, _, _ = a.RulesFor(context.Background(), alice, "team-a"); calls.Load() != 2 {
		t.Fatalf("RulesFor asked for the policy %d times", calls.Load()-1)
	}

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				if i == 0 && j%10 == 0 {
					if j%20 == 0 {
						cur.Store(deny)
					} else {
						cur.Store(allow)
					}
				}
				d, reason, err := a.Authorize(context.Background(), req)
				if err != nil || (d == authorizer.DecisionAllow) != (reason != "") {
					t.Errorf("%v %q %v", d, reason, err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
}
