package rbac

import (
	"context"
	"reflect"
	"sort"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/component-helpers/auth/rbac/validation"
)

func TestBootstrapMetadata(t *testing.T) {
	names := map[string]bool{}
	check := func(kind, name string, labels, annotations map[string]string) {
		t.Helper()
		if names[kind+name] {
			t.Errorf("%s %s twice", kind, name)
		}
		names[kind+name] = true
		if labels[BootstrappingLabel] != "rbac-defaults" {
			t.Errorf("%s %s labels %v", kind, name, labels)
		}
		if annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
			t.Errorf("%s %s annotations %v", kind, name, annotations)
		}
	}
	for _, r := range ClusterRoles() {
		check("ClusterRole", r.Name, r.Labels, r.Annotations)
		for _, rule := range r.Rules {
			for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs} {
				if !sort.StringsAreSorted(list) {
					t.Errorf("%s: %s not sorted as kube's builder sorts", r.Name, CompactString(rule))
				}
			}
		}
	}
	roles := map[string]bool{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = true
	}
	for _, b := range ClusterRoleBindings() {
		check("ClusterRoleBinding", b.Name, b.Labels, b.Annotations)
		if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.Name}) || !roles[b.Name] {
			t.Errorf("binding %s refers to %+v", b.Name, b.RoleRef)
		}
	}
	// new objects on each call
	a, b := ClusterRoles(), ClusterRoles()
	a[0].Rules[0].Verbs[0] = "mutated"
	a[0].Labels["x"] = "y"
	if b[0].Rules[0].Verbs[0] != "*" || ClusterRoles()[0].Labels["x"] != "" {
		t.Error("ClusterRoles shares objects between calls")
	}
}

func bootstrapRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	for _, r := range ClusterRoles() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no bootstrap ClusterRole %s", name)
	return nil
}

func bootstrapBinding(t *testing.T, name string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	for _, b := range ClusterRoleBindings() {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no bootstrap ClusterRoleBinding %s", name)
	return nil
}

func TestBootstrapClusterRoles(t *testing.T) {
	url := func(verb string, urls ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: l(verb), NonResourceURLs: urls}
	}
	aggregate := func(label string) *rbacv1.AggregationRule {
		r := aggregationRule(label)
		return r
	}
	rw := l("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
	tests := []struct {
		name   string
		rules  []rbacv1.PolicyRule
		labels map[string]string
		agg    *rbacv1.AggregationRule
	}{
		{"cluster-admin", []rbacv1.PolicyRule{pr(l("*"), l("*"), l("*")), url("*", "*")}, nil, nil},
		{"system:discovery", []rbacv1.PolicyRule{url("get", "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")}, nil, nil},
		{"system:monitoring", []rbacv1.PolicyRule{url("get", "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"), url("get", "/cluster/status")}, nil, nil},
		{"system:basic-user", []rbacv1.PolicyRule{
			pr(l("create"), l("authorization.k8s.io"), l("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
			pr(l("create"), l("authentication.k8s.io"), l("selfsubjectreviews")),
		}, nil, nil},
		{"system:public-info-viewer", []rbacv1.PolicyRule{url("get", "/healthz", "/livez", "/readyz", "/version", "/version/")}, nil, nil},
		{"admin", nil, nil, aggregate(AggregateToAdmin)},
		{"edit", nil, map[string]string{AggregateToAdmin: "true"}, aggregate(AggregateToEdit)},
		{"view", nil, map[string]string{AggregateToEdit: "true"}, aggregate(AggregateToView)},
		{"system:aggregate-to-admin", []rbacv1.PolicyRule{
			pr(l("create"), l("authorization.k8s.io"), l("localsubjectaccessreviews")),
			pr(rw, l("rbac.authorization.k8s.io"), l("rolebindings", "roles")),
		}, map[string]string{AggregateToAdmin: "true"}, nil},
		{"system:aggregate-to-edit", []rbacv1.PolicyRule{pr(rw, l("coordination.k8s.io"), l("leasecandidates", "leases"))}, map[string]string{AggregateToEdit: "true"}, nil},
		{"system:aggregate-to-view", []rbacv1.PolicyRule{pr(l("get", "list", "watch"), l("coordination.k8s.io"), l("leasecandidates", "leases"))}, map[string]string{AggregateToView: "true"}, nil},
		{"leasehold:lease-holder", []rbacv1.PolicyRule{pr(l("create", "get", "list", "patch", "update", "watch"), l("coordination.k8s.io"), l("leases"))}, nil, nil},
	}
	if got := len(ClusterRoles()); got != len(tests) {
		t.Errorf("%d bootstrap ClusterRoles, want %d", got, len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bootstrapRole(t, tc.name)
			if !reflect.DeepEqual(r.Rules, tc.rules) {
				t.Errorf("rules %+v\nwant %+v", r.Rules, tc.rules)
			}
			labels := map[string]string{BootstrappingLabel: BootstrappingValue}
			for k, v := range tc.labels {
				labels[k] = v
			}
			if !reflect.DeepEqual(r.Labels, labels) {
				t.Errorf("labels %v, want %v", r.Labels, labels)
			}
			if !reflect.DeepEqual(r.AggregationRule, tc.agg) {
				t.Errorf("aggregation %+v, want %+v", r.AggregationRule, tc.agg)
			}
		})
	}
}

func TestBootstrapClusterRoleBindings(t *testing.T) {
	group := func(names ...string) []rbacv1.Subject {
		var s []rbacv1.Subject
		for _, n := range names {
			s = append(s, rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: n})
		}
		return s
	}
	want := map[string][]rbacv1.Subject{
		"cluster-admin":             group("system:masters"),
		"system:discovery":          group("system:authenticated"),
		"system:public-info-viewer": group("system:authenticated", "system:unauthenticated"),
		"system:basic-user":         group("system:authenticated"),
		"system:monitoring":         group("system:monitoring"),
	}
	if got := len(ClusterRoleBindings()); got != len(want) {
		t.Errorf("%d bootstrap ClusterRoleBindings, want %d", got, len(want))
	}
	for name, subjects := range want {
		if b := bootstrapBinding(t, name); !reflect.DeepEqual(b.Subjects, subjects) {
			t.Errorf("%s subjects %+v, want %+v", name, b.Subjects, subjects)
		}
	}
}

func TestClusterAdminCoversEverything(t *testing.T) {
	admin := bootstrapRole(t, "cluster-admin").Rules
	var all []rbacv1.PolicyRule
	for _, r := range bootstrapPolicy(nil).ClusterRoles {
		all = append(all, r.Rules...)
	}
	all = append(all,
		pr(l("escalate", "bind", "impersonate"), l("", "example.com"), l("pods/exec", "*/status", "*")),
		rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("x"), Resources: l("y"), ResourceNames: l("z")},
		rbacv1.PolicyRule{Verbs: l("post", "delete"), NonResourceURLs: l("/cluster/join", "/anything/*")},
	)
	if ok, missing := validation.Covers(admin, all); !ok {
		t.Errorf("cluster-admin misses %v", missing)
	}

	a := New(static(bootstrapPolicy(nil)))
	root := who("root", user.SystemPrivilegedGroup, user.AllAuthenticated)
	for _, req := range []authorizer.AttributesRecord{
		res(root, "deletecollection", "coordination.k8s.io", "leases", "", "ns", ""),
		res(root, "escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "cluster-admin"),
		res(root, "get", "", "namespaces", "status", "", "x"),
		nonRes(root, "post", "/cluster/join"),
	} {
		d, reason, _ := a.Authorize(context.Background(), req)
		if want := `RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"`; d != authorizer.DecisionAllow || reason != want {
			t.Errorf("%+v: %v %q", req, d, reason)
		}
	}
}

func TestLeaseHolder(t *testing.T) {
	p := bootstrapPolicy(&StaticPolicy{RoleBindings: []*rbacv1.RoleBinding{
		rb("kube-system", "elector", "ClusterRole", LeaseHolder, saSubject("", "controller")),
	}})
	a := New(static(p))
	sa := who("system:serviceaccount:kube-system:controller", "system:serviceaccounts", "system:serviceaccounts:kube-system", user.AllAuthenticated)
	for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "escalate"} {
		want := authorizer.DecisionAllow
		if verb == "delete" || verb == "deletecollection" || verb == "escalate" {
			want = authorizer.DecisionNoOpinion
		}
		name := "lock"
		if verb == "create" || verb == "list" || verb == "deletecollection" {
			name = ""
		}
		if d, reason, _ := a.Authorize(context.Background(), res(sa, verb, "coordination.k8s.io", "leases", "", "kube-system", name)); d != want {
			t.Errorf("%s leases: %v %q, want %v", verb, d, reason, want)
		}
	}
	for _, req := range []authorizer.AttributesRecord{
		res(sa, "get", "coordination.k8s.io", "leases", "", "default", "lock"),
		res(sa, "list", "coordination.k8s.io", "leases", "", "", ""),
		res(sa, "get", "coordination.k8s.io", "leasecandidates", "", "kube-system", "c"),
	} {
		if d, _, _ := a.Authorize(context.Background(), req); d != authorizer.DecisionNoOpinion {
			t.Errorf("%+v: %v", req, d)
		}
	}
	d, reason, _ := a.Authorize(context.Background(), res(sa, "update", "coordination.k8s.io", "leases", "", "kube-system", "lock"))
	if want := `RBAC: allowed by RoleBinding "elector/kube-system" of ClusterRole "leasehold:lease-holder" to ServiceAccount "controller/kube-system"`; d != authorizer.DecisionAllow || reason != want {
		t.Errorf("got %v %q, want %q", d, reason, want)
	}
}

// TestBootstrapGrants asks what the default bindings let each kind of user
// do.
func TestBootstrapGrants(t *testing.T) {
	a := New(static(bootstrapPolicy(nil)))
	anonymous := who(user.Anonymous, user.AllUnauthenticated)
	authed := who("alice", user.AllAuthenticated)
	monitor := who("prometheus", user.MonitoringGroup, user.AllAuthenticated)
	tests := []struct {
		name string
		req  authorizer.AttributesRecord
		want authorizer.Decision
	}{
		{"anonymous /healthz", nonRes(anonymous, "get", "/healthz"), authorizer.DecisionAllow},
		{"anonymous /version", nonRes(anonymous, "get", "/version"), authorizer.DecisionAllow},
		{"anonymous /readyz/etcd", nonRes(anonymous, "get", "/readyz/etcd"), authorizer.DecisionNoOpinion},
		{"anonymous /apis", nonRes(anonymous, "get", "/apis"), authorizer.DecisionNoOpinion},
		{"anonymous selfsubjectreviews", res(anonymous, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), authorizer.DecisionNoOpinion},
		{"authenticated /apis/coordination.k8s.io/v1", nonRes(authed, "get", "/apis/coordination.k8s.io/v1"), authorizer.DecisionAllow},
		{"authenticated /openapi/v3", nonRes(authed, "get", "/openapi/v3"), authorizer.DecisionAllow},
		{"authenticated /api", nonRes(authed, "get", "/api"), authorizer.DecisionAllow},
		{"authenticated post /api", nonRes(authed, "post", "/api"), authorizer.DecisionNoOpinion},
		{"authenticated selfsubjectaccessreviews", res(authed, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), authorizer.DecisionAllow},
		{"authenticated selfsubjectrulesreviews", res(authed, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "ns", ""), authorizer.DecisionAllow},
		{"authenticated selfsubjectreviews", res(authed, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), authorizer.DecisionAllow},
		{"authenticated /metrics", nonRes(authed, "get", "/metrics"), authorizer.DecisionNoOpinion},
		{"authenticated /cluster/status", nonRes(authed, "get", "/cluster/status"), authorizer.DecisionNoOpinion},
		{"authenticated leases", res(authed, "list", "coordination.k8s.io", "leases", "", "ns", ""), authorizer.DecisionNoOpinion},
		{"monitoring /metrics", nonRes(monitor, "get", "/metrics"), authorizer.DecisionAllow},
		{"monitoring /metrics/slis", nonRes(monitor, "get", "/metrics/slis"), authorizer.DecisionAllow},
		{"monitoring /readyz/etcd", nonRes(monitor, "get", "/readyz/etcd"), authorizer.DecisionAllow},
		{"monitoring /cluster/status", nonRes(monitor, "get", "/cluster/status"), authorizer.DecisionAllow},
		{"monitoring post /cluster/join", nonRes(monitor, "post", "/cluster/join"), authorizer.DecisionNoOpinion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d, reason, _ := a.Authorize(context.Background(), tc.req); d != tc.want {
				t.Errorf("%v %q, want %v", d, reason, tc.want)
			}
		})
	}
}
