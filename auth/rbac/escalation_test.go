package rbac

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
)

func TestCompactString(t *testing.T) {
	tests := []struct {
		rule rbacv1.PolicyRule
		want string
	}{
		{pr(l("get"), l("coordination.k8s.io"), l("leases")), `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get"]}`},
		{pr(l("get", "list"), l(""), l("pods", "pods/log")), `{APIGroups:[""], Resources:["pods" "pods/log"], Verbs:["get" "list"]}`},
		{rbacv1.PolicyRule{Verbs: l("update"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a", "b")}, `{APIGroups:["coordination.k8s.io"], Resources:["leases"], ResourceNames:["a" "b"], Verbs:["update"]}`},
		{rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/metrics", "/healthz/*")}, `{NonResourceURLs:["/metrics" "/healthz/*"], Verbs:["get"]}`},
		{rbacv1.PolicyRule{APIGroups: l(`we"ird`)}, `{APIGroups:["we\"ird"]}`},
		{rbacv1.PolicyRule{}, `{}`},
	}
	for _, tc := range tests {
		if got := CompactString(tc.rule); got != tc.want {
			t.Errorf("CompactString(%+v) = %s, want %s", tc.rule, got, tc.want)
		}
	}
}

func TestCompactRules(t *testing.T) {
	named := func(verb, name string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: l(verb), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l(name)}
	}
	url := rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/metrics")}
	multi := pr(l("get"), l("a", "b"), l("x"))
	got := CompactRules([]rbacv1.PolicyRule{
		pr(l("get"), l("coordination.k8s.io"), l("leases")),
		url,
		named("get", "a"),
		pr(l("list"), l("coordination.k8s.io"), l("leases")),
		named("update", "a"),
		named("get", "b"),
		multi,
		pr(l("watch"), l("coordination.k8s.io"), l("leases")),
	})
	want := []rbacv1.PolicyRule{
		url, multi,
		pr(l("get", "list", "watch"), l("coordination.k8s.io"), l("leases")),
		{Verbs: l("get", "update"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")},
		named("get", "b"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CompactRules:\n got %+v\nwant %+v", got, want)
	}
}

func escalationPolicy() *StaticPolicy {
	return &StaticPolicy{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("lease-reader", pr(l("get", "list", "watch"), l("coordination.k8s.io"), l("leases"))),
			clusterRole("lease-admin", pr(l("*"), l("coordination.k8s.io"), l("*"))),
			clusterRole("metrics", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/metrics")}),
			clusterRole("binder", rbacv1.PolicyRule{Verbs: l("bind"), APIGroups: l("rbac.authorization.k8s.io"), Resources: l("clusterroles"), ResourceNames: l("lease-admin")}),
			clusterRole("escalator", pr(l("escalate"), l("rbac.authorization.k8s.io"), l("roles"))),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			rb("team", "read", "ClusterRole", "lease-reader", userSubject("alice")),
			rb("team", "bind", "ClusterRole", "binder", userSubject("binder")),
			rb("team", "escalate", "ClusterRole", "escalator", userSubject("escalator")),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			crb("metrics", "metrics", groupSubject("dev")),
			crb("admins", "lease-admin", userSubject("lease-admin")),
		},
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	ctx := context.Background()
	p := escalationPolicy()
	readLeases := pr(l("get", "list"), l("coordination.k8s.io"), l("leases"))
	const head = `user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"
	tests := []struct {
		name  string
		p     Policy
		user  user.Info
		ns    string
		rules []rbacv1.PolicyRule
		want  string // "" allowed
	}{
		{"covered in the namespace", p, alice, "team", []rbacv1.PolicyRule{readLeases}, ""},
		{"covered cluster-wide", p, alice, "", []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/metrics")}}, ""},
		{"nothing to grant", p, who("nobody"), "", nil, ""},
		{"role binding does not count cluster-wide", p, alice, "", []rbacv1.PolicyRule{readLeases},
			head + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "list"]}`},
		{"role binding does not count in other namespaces", p, alice, "other", []rbacv1.PolicyRule{readLeases},
			head + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "list"]}`},
		{"one missing verb", p, alice, "team", []rbacv1.PolicyRule{pr(l("get", "list", "delete"), l("coordination.k8s.io"), l("leases"))},
			head + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"several missing, compacted and sorted", p, alice, "team", []rbacv1.PolicyRule{
			{Verbs: l("get", "post"), NonResourceURLs: l("/metrics", "/cluster/status")},
			pr(l("update", "get", "delete"), l("coordination.k8s.io"), l("leases", "leasecandidates")),
			{Verbs: l("get"), APIGroups: l(""), Resources: l("secrets"), ResourceNames: l("a", "b")},
		}, head +
			`{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get"]}` + "\n" +
			`{APIGroups:[""], Resources:["secrets"], ResourceNames:["b"], Verbs:["get"]}` + "\n" +
			`{APIGroups:["coordination.k8s.io"], Resources:["leasecandidates"], Verbs:["update" "get" "delete"]}` + "\n" +
			`{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["update" "delete"]}` + "\n" +
			`{NonResourceURLs:["/cluster/status"], Verbs:["get"]}` + "\n" +
			`{NonResourceURLs:["/cluster/status"], Verbs:["post"]}` + "\n" +
			`{NonResourceURLs:["/metrics"], Verbs:["post"]}`},
		{"resolution errors", &StaticPolicy{
			ClusterRoles:        p.ClusterRoles,
			ClusterRoleBindings: append([]*rbacv1.ClusterRoleBinding{crb("broken", "gone", userSubject("alice")), crb("broken2", "lost", groupSubject("dev"))}, p.ClusterRoleBindings...),
		}, alice, "", []rbacv1.PolicyRule{readLeases},
			head + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "list"]}` +
				`; resolution errors: [[clusterrole.rbac.authorization.k8s.io "gone" not found, clusterrole.rbac.authorization.k8s.io "lost" not found]]`},
		{"one resolution error", &StaticPolicy{ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("broken", "gone", userSubject("alice"))}}, alice, "", []rbacv1.PolicyRule{readLeases},
			head + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "list"]}` +
				`; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]`},
		{"system:masters pass without any binding", &StaticPolicy{}, who("root", user.SystemPrivilegedGroup), "", []rbacv1.PolicyRule{
			pr(l("*"), l("*"), l("*")), {Verbs: l("*"), NonResourceURLs: l("*")},
		}, ""},
		{"wildcards are held only by wildcards", p, who("lease-admin"), "team", []rbacv1.PolicyRule{pr(l("*"), l("coordination.k8s.io"), l("leases", "*")), pr(l("get"), l("*"), l("leases"))},
			`user "lease-admin" (groups=[]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["*"], Resources:["leases"], Verbs:["get"]}`},
		{"no user", p, nil, "", nil, "no user on context"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ConfirmNoEscalation(ctx, tc.p, tc.user, tc.ns, tc.rules)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestCanBindAndEscalate(t *testing.T) {
	ctx := context.Background()
	a := New(static(escalationPolicy()))
	clusterRef := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	binder := who("binder")
	root := who("root", user.SystemPrivilegedGroup)
	bindTests := []struct {
		name string
		user user.Info
		ref  rbacv1.RoleRef
		ns   string
		want bool
	}{
		{"bind verb on the named role, in its namespace", binder, clusterRef("lease-admin"), "team", true},
		{"resourceNames limit it", binder, clusterRef("cluster-admin"), "team", false},
		{"the namespace limits it", binder, clusterRef("lease-admin"), "other", false},
		{"a role binding cannot bind cluster-wide", binder, clusterRef("lease-admin"), "", false},
		{"kind matters", binder, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "lease-admin"}, "team", false},
		{"holding the rules is not the bind verb", who("lease-admin"), clusterRef("lease-admin"), "team", false},
		{"system:masters", root, clusterRef("anything"), "", true},
		{"unknown kind", binder, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "User", Name: "lease-admin"}, "team", false},
		{"no user", nil, clusterRef("lease-admin"), "team", false},
	}
	for _, tc := range bindTests {
		if got := CanBind(ctx, a, tc.user, tc.ref, tc.ns); got != tc.want {
			t.Errorf("CanBind %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if CanBind(ctx, nil, binder, clusterRef("lease-admin"), "team") {
		t.Error("CanBind without an authorizer")
	}
	if !CanBind(ctx, nil, root, clusterRef("lease-admin"), "team") {
		t.Error("CanBind: system:masters needs no authorizer")
	}

	escalator := who("escalator")
	escalateTests := []struct {
		name                   string
		user                   user.Info
		resource, ns, roleName string
		want                   bool
	}{
		{"escalate verb on roles in the namespace", escalator, "roles", "team", "r", true},
		{"not in another namespace", escalator, "roles", "other", "r", false},
		{"not on clusterroles", escalator, "clusterroles", "", "r", false},
		{"other resources never escalate", escalator, "rolebindings", "team", "r", false},
		{"system:masters", root, "clusterroles", "", "r", true},
		{"nobody", who("nobody"), "roles", "team", "r", false},
	}
	for _, tc := range escalateTests {
		if got := CanEscalate(ctx, a, tc.user, tc.resource, tc.ns, tc.roleName); got != tc.want {
			t.Errorf("CanEscalate %s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckRoleWrite(t *testing.T) {
	ctx := context.Background()
	p := escalationPolicy()
	a := New(static(p))
	readLeases := []rbacv1.PolicyRule{pr(l("get"), l("coordination.k8s.io"), l("leases"))}
	writeLeases := []rbacv1.PolicyRule{pr(l("update"), l("coordination.k8s.io"), l("leases"))}

	if err := CheckRoleWrite(ctx, a, p, alice, "team", "r", readLeases, false); err != nil {
		t.Errorf("covered role: %v", err)
	}
	err := CheckRoleWrite(ctx, a, p, alice, "team", "r", writeLeases, false)
	if want := `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
		`{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["update"]}`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("escalating role: %v\nwant %s", err, want)
	}
	err = CheckRoleWrite(ctx, a, p, alice, "", "cr", readLeases, false)
	if !apierrors.IsForbidden(err) || err.(*apierrors.StatusError).ErrStatus.Details.Kind != "clusterroles" {
		t.Errorf("cluster role from a role binding's rules: %v", err)
	}
	if err := CheckRoleWrite(ctx, a, p, who("escalator"), "team", "r", writeLeases, false); err != nil {
		t.Errorf("escalate verb: %v", err)
	}
	if err := CheckRoleWrite(ctx, a, p, who("lease-admin"), "", "cr", writeLeases, false); err != nil {
		t.Errorf("lease-admin writes a lease cluster role: %v", err)
	}
	err = CheckRoleWrite(ctx, a, p, who("lease-admin"), "", "cr", writeLeases, true)
	if want := `clusterroles.rbac.authorization.k8s.io "cr" is forbidden: must have cluster-admin privileges to use the aggregationRule`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("aggregation rule: %v", err)
	}
	if err := CheckRoleWrite(ctx, a, p, who("root", user.SystemPrivilegedGroup), "", "cr", writeLeases, true); err != nil {
		t.Errorf("system:masters: %v", err)
	}
	admin := bootstrapPolicy(&StaticPolicy{ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("root", "cluster-admin", userSubject("root"))}})
	if err := CheckRoleWrite(ctx, New(static(admin)), admin, who("root"), "", "cr", nil, true); err != nil {
		t.Errorf("cluster-admin sets an aggregation rule: %v", err)
	}

	if !HasAggregationRule(aggregating(clusterRole("x"), match("a", "b"))) || HasAggregationRule(aggregating(clusterRole("x"))) || HasAggregationRule(clusterRole("x")) || HasAggregationRule(nil) {
		t.Error("HasAggregationRule")
	}
}

func TestCheckBindingWrite(t *testing.T) {
	ctx := context.Background()
	p := escalationPolicy()
	a := New(static(p))
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	tests := []struct {
		name string
		user user.Info
		ns   string
		ref  rbacv1.RoleRef
		want string
	}{
		{"holds the role's rules", alice, "team", ref("ClusterRole", "lease-reader"), ""},
		{"bind verb", who("binder"), "team", ref("ClusterRole", "lease-admin"), ""},
		{"system:masters", who("root", user.SystemPrivilegedGroup), "", ref("ClusterRole", "gone"), ""},
		{"cluster-wide binding of rules held in a namespace", alice, "", ref("ClusterRole", "lease-reader"),
			`clusterrolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get" "list" "watch"]}`},
		{"more than held", alice, "team", ref("ClusterRole", "lease-admin"),
			`rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice" (groups=["dev" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
				`{APIGroups:["coordination.k8s.io"], Resources:["*"], Verbs:["*"]}`},
		{"missing role", alice, "team", ref("Role", "gone"), `role.rbac.authorization.k8s.io "gone" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBindingWrite(ctx, a, p, tc.user, tc.ns, "b", tc.ref)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	if err := CheckBindingWrite(ctx, a, p, alice, "team", "b", ref("Role", "gone")); !apierrors.IsNotFound(err) {
		t.Errorf("missing role: %v is not NotFound", err)
	}
	if err := CheckBindingWrite(ctx, a, p, alice, "team", "b", ref("ClusterRole", "lease-admin")); !apierrors.IsForbidden(err) {
		t.Errorf("escalation: %v is not Forbidden", err)
	}
}
