package rbac

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func labelled(r *rbacv1.ClusterRole, kv ...string) *rbacv1.ClusterRole {
	r.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		r.Labels[kv[i]] = kv[i+1]
	}
	return r
}

func aggregating(r *rbacv1.ClusterRole, selectors ...metav1.LabelSelector) *rbacv1.ClusterRole {
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
	return r
}

func match(kv ...string) metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return metav1.LabelSelector{MatchLabels: m}
}

func TestAggregateBootstrap(t *testing.T) {
	rw := l("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
	editLeases := pr(rw, l("coordination.k8s.io"), l("leasecandidates", "leases"))
	viewLeases := pr(l("get", "list", "watch"), l("coordination.k8s.io"), l("leasecandidates", "leases"))
	lsar := pr(l("create"), l("authorization.k8s.io"), l("localsubjectaccessreviews"))
	rbacRW := pr(rw, l("rbac.authorization.k8s.io"), l("rolebindings", "roles"))

	roles := ClusterRoles()
	// the order of the input does not matter: put the aggregated first
	for i, j := 0, len(roles)-1; i < j; i, j = i+1, j-1 {
		roles[i], roles[j] = roles[j], roles[i]
	}
	got := Aggregate(roles)
	want := map[string][]rbacv1.PolicyRule{
		"view":  {viewLeases},
		"edit":  {editLeases, viewLeases},               // system:aggregate-to-edit < view
		"admin": {editLeases, viewLeases, lsar, rbacRW}, // edit < system:aggregate-to-admin
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Aggregate:\n got %+v\nwant %+v", got, want)
	}
	for _, r := range roles {
		if r.AggregationRule != nil && len(r.Rules) != 0 {
			t.Errorf("Aggregate modified its input: %s", r.Name)
		}
	}

	// admin bound in a namespace may then manage roles and leases there
	a := New(static(bootstrapPolicy(&StaticPolicy{RoleBindings: []*rbacv1.RoleBinding{
		rb("team", "admins", "ClusterRole", "admin", userSubject("alice")),
		rb("team", "viewers", "ClusterRole", "view", userSubject("bob")),
	}})))
	for _, tc := range []struct {
		req  authorizer.AttributesRecord
		want authorizer.Decision
	}{
		{res(alice, "create", "rbac.authorization.k8s.io", "rolebindings", "", "team", ""), authorizer.DecisionAllow},
		{res(alice, "deletecollection", "coordination.k8s.io", "leases", "", "team", ""), authorizer.DecisionAllow},
		{res(alice, "watch", "coordination.k8s.io", "leasecandidates", "", "team", ""), authorizer.DecisionAllow},
		{res(alice, "create", "rbac.authorization.k8s.io", "rolebindings", "", "other", ""), authorizer.DecisionNoOpinion},
		{res(alice, "escalate", "rbac.authorization.k8s.io", "roles", "", "team", "x"), authorizer.DecisionNoOpinion},
		{res(who("bob"), "list", "coordination.k8s.io", "leases", "", "team", ""), authorizer.DecisionAllow},
		{res(who("bob"), "update", "coordination.k8s.io", "leases", "", "team", "x"), authorizer.DecisionNoOpinion},
	} {
		if d, reason, _ := a.Authorize(context.Background(), tc.req); d != tc.want {
			t.Errorf("%s %s %s in %q: %v %q, want %v", tc.req.User.GetName(), tc.req.Verb, tc.req.Resource, tc.req.Namespace, d, reason, tc.want)
		}
	}
}

func TestAggregateOrderAndDedup(t *testing.T) {
	r1 := pr(l("get"), l("a"), l("one"))
	r2 := pr(l("get"), l("a"), l("two"))
	r3 := pr(l("get"), l("a"), l("three"))
	r4 := pr(l("get"), l("a"), l("four"))
	// semantically equal to r1: nil and empty lists are the same
	r1b := rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("a"), Resources: l("one"), ResourceNames: []string{}}
	roles := []*rbacv1.ClusterRole{
		labelled(clusterRole("zeta", r3, r1), "x", "true"),
		labelled(clusterRole("alpha", r1, r2), "x", "true"),
		labelled(clusterRole("mid", r1b, r4), "y", "true", "x", "false"),
		labelled(clusterRole("unmatched", pr(l("*"), l("*"), l("*"))), "z", "true"),
		// matches its own selector: itself is skipped
		labelled(aggregating(clusterRole("agg", pr(l("stale"), l("s"), l("s"))), match("x", "true"), match("y", "true")), "x", "true"),
		aggregating(clusterRole("expr"), metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "x", Operator: metav1.LabelSelectorOpIn, Values: l("false")},
		}}),
		aggregating(clusterRole("none")),
		aggregating(clusterRole("bad", r1), metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "x", Operator: "Sometimes"},
		}}),
	}
	got := Aggregate(roles)
	want := map[string][]rbacv1.PolicyRule{
		// selector x=true: alpha, zeta (by name); then y=true: mid
		"agg":  {r1, r2, r3, r4},
		"expr": {r1b, r4},
		"none": nil,  // selects nothing: no rules, as stored
		"bad":  {r1}, // invalid selector: stored rules kept
	}
	if len(got) != len(want) {
		t.Errorf("Aggregate computed %d roles, want %d", len(got), len(want))
	}
	for name, rules := range want {
		if !reflect.DeepEqual(got[name], rules) {
			t.Errorf("%s:\n got %#v\nwant %#v", name, got[name], rules)
		}
	}

	updates := AggregationUpdates(roles)
	var names []string
	for _, u := range updates {
		names = append(names, u.Name)
	}
	if !reflect.DeepEqual(names, l("agg", "expr")) {
		t.Errorf("updates for %v, want agg and expr (none already has no rules, bad cannot be computed)", names)
	}
	if !reflect.DeepEqual(updates[0].Rules, want["agg"]) || updates[0].Labels["x"] != "true" || updates[0].AggregationRule == nil {
		t.Errorf("update of agg: %+v", updates[0])
	}
	if roles[4].Rules[0].Verbs[0] != "stale" {
		t.Error("AggregationUpdates modified its input")
	}
}

func TestAggregationUpdatesConverge(t *testing.T) {
	roles := ClusterRoles()
	updates := AggregationUpdates(roles)
	var names []string
	for _, u := range updates {
		names = append(names, u.Name)
	}
	if !reflect.DeepEqual(names, l("admin", "edit", "view")) {
		t.Fatalf("updates %v", names)
	}
	byName := map[string]*rbacv1.ClusterRole{}
	for _, u := range updates {
		byName[u.Name] = u
	}
	for i, r := range roles {
		if u, ok := byName[r.Name]; ok {
			roles[i] = u
		}
	}
	if again := AggregationUpdates(roles); len(again) != 0 {
		t.Errorf("after applying the updates, more: %v", again)
	}

	// a user's role labelled to aggregate into view reaches edit and admin
	roles = append(roles, labelled(clusterRole("crd-viewer", pr(l("get"), l("example.com"), l("widgets"))), AggregateToView, "true"))
	updates = AggregationUpdates(roles)
	if len(updates) != 3 {
		t.Fatalf("%d updates, want admin, edit and view", len(updates))
	}
	for _, u := range updates {
		if !RulesAllow(res(alice, "get", "example.com", "widgets", "", "ns", "w"), u.Rules...) {
			t.Errorf("%s does not get the widgets rule: %+v", u.Name, u.Rules)
		}
	}
	// ... and removing it takes it away again
	roles = roles[:len(roles)-1]
	for _, u := range updates {
		for i, r := range roles {
			if r.Name == u.Name {
				roles[i] = u
			}
		}
	}
	if updates = AggregationUpdates(roles); len(updates) != 3 {
		t.Fatalf("%d updates after the removal, want 3", len(updates))
	}
	for _, u := range updates {
		if RulesAllow(res(alice, "get", "example.com", "widgets", "", "ns", "w"), u.Rules...) {
			t.Errorf("%s keeps the widgets rule", u.Name)
		}
	}
}
