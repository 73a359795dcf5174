package validation

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Detail strings produced by apimachinery's format validators, spelled out so
// that a change of validator (or of the value passed to it) fails the tests.
const (
	dns1123SubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	dns1123LabelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	qualifiedNameMsg    = `must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	labelValueMsg       = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
)

// RBAC detail strings, as kube-apiserver's pkg/apis/rbac/validation spells
// them.
const (
	verbsRequired     = "Required value: verbs must contain at least one value"
	apiGroupsRequired = "Required value: resource rules must supply at least one api group"
	resourcesRequired = "Required value: resource rules must supply at least one resource"
	namespacedURLs    = "namespaced rules cannot apply to non-resource URLs"
	mixedURLs         = "rules cannot apply to both regular resources and non-resource URLs"
	selectorsRequired = "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
	invalidSelector   = "Invalid value: null: invalid label selector."
	cannotChange      = "cannot change roleRef"
	finalizerMsg      = "name is neither a standard finalizer name nor is it fully qualified"

	rbacGroupOnly    = `supported values: "rbac.authorization.k8s.io"`
	roleRefKinds     = `supported values: "Role", "ClusterRole"`
	clusterRoleOnly  = `supported values: "ClusterRole"`
	subjectKindsMsg  = `supported values: "ServiceAccount", "User", "Group"`
	emptyGroupOnly   = `supported values: ""`
	nameRequired     = "metadata.name: Required value: name or generateName is required"
	rvRequired       = `metadata.resourceVersion: Invalid value: "": must be specified for an update`
	nsForbidden      = "metadata.namespace: Forbidden: not allowed on this type"
	nsRequired       = "metadata.namespace: Required value"
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
)

type wantErr struct {
	typ field.ErrorType
	msg string // the full (*field.Error).Error() text
}

func required(msg string) wantErr    { return wantErr{field.ErrorTypeRequired, msg} }
func invalid(msg string) wantErr     { return wantErr{field.ErrorTypeInvalid, msg} }
func unsupported(msg string) wantErr { return wantErr{field.ErrorTypeNotSupported, msg} }
func forbidden(msg string) wantErr   { return wantErr{field.ErrorTypeForbidden, msg} }

// checkErrs requires errs to be exactly want: same length, and in order the
// same Type and the same Error() text.
func checkErrs(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d", len(errs), len(want))
	}
	for i := 0; i < len(errs) || i < len(want); i++ {
		switch {
		case i >= len(want):
			t.Errorf("unexpected error [%d]: %s: %s", i, errs[i].Type, errs[i].Error())
		case i >= len(errs):
			t.Errorf("missing error [%d]: %s: %s", i, want[i].typ, want[i].msg)
		default:
			if errs[i].Type != want[i].typ || errs[i].Error() != want[i].msg {
				t.Errorf("error [%d]:\n got: %s: %s\nwant: %s: %s", i, errs[i].Type, errs[i].Error(), want[i].typ, want[i].msg)
			}
		}
	}
}

// checkAggregate requires errs.ToAggregate() to read want ("" for none).
func checkAggregate(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	agg := errs.ToAggregate()
	switch {
	case agg == nil && want != "":
		t.Errorf("aggregate: got none, want %s", want)
	case agg != nil && agg.Error() != want:
		t.Errorf("aggregate:\n got: %s\nwant: %s", agg.Error(), want)
	}
}

var rbacGroup = rbacv1.GroupName

func strs(s ...string) []string { return s }

func bootstrapMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
		Annotations: map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"},
	}
}

// newRole is `kubectl create role pod-reader --verb=get,list,watch
// --resource=pods -n default`, with mods applied.
func newRole(mods ...func(*rbacv1.Role)) *rbacv1.Role {
	r := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: strs(""), Resources: strs("pods"), Verbs: strs("get", "list", "watch")},
		},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

// newClusterRole is `kubectl create clusterrole reader --verb=get,list
// --resource=nodes,deployments.apps`, with mods applied.
func newClusterRole(mods ...func(*rbacv1.ClusterRole)) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: strs(""), Resources: strs("nodes"), Verbs: strs("get", "list")},
			{APIGroups: strs("apps"), Resources: strs("deployments"), Verbs: strs("get", "list")},
		},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

// newRoleBinding is `kubectl create rolebinding admin --clusterrole=admin
// --user=user1 --group=group1 --serviceaccount=monitoring:sa1 -n default`,
// with mods applied.
func newRoleBinding(mods ...func(*rbacv1.RoleBinding)) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: "user1"},
			{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: "group1"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "sa1"},
		},
	}
	for _, m := range mods {
		m(b)
	}
	return b
}

// newClusterRoleBinding is `kubectl create clusterrolebinding root
// --clusterrole=cluster-admin --user=root --serviceaccount=kube-system:default`,
// with mods applied.
func newClusterRoleBinding(mods ...func(*rbacv1.ClusterRoleBinding)) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "root"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: "root"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "default"},
		},
	}
	for _, m := range mods {
		m(b)
	}
	return b
}

func selector(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
}

func TestValidateRBACName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"view", nil},
		{"system:controller:attachdetach-controller", nil},
		{"system::extension-apiserver-authentication-reader", nil},
		{"Upper_Case and spaces!", nil},
		{"a.b", nil},
		{"...", nil},
		{".", strs("may not be '.'")},
		{"..", strs("may not be '..'")},
		{"a/b", strs("may not contain '/'")},
		{"100%", strs("may not contain '%'")},
		{"a/b%c", strs("may not contain '/'", "may not contain '%'")},
	} {
		for _, prefix := range []bool{false, true} {
			if got := ValidateRBACName(tc.name, prefix); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ValidateRBACName(%q, %v) = %q, want %q", tc.name, prefix, got, tc.want)
			}
		}
	}
}

func TestValidatePolicyRule(t *testing.T) {
	p := field.NewPath("rules").Index(3)
	for _, tc := range []struct {
		name       string
		rule       rbacv1.PolicyRule
		namespaced bool
		want       []wantErr
	}{
		{name: "resource rule", rule: rbacv1.PolicyRule{APIGroups: strs(""), Resources: strs("pods"), Verbs: strs("get")}, namespaced: true},
		{name: "wildcards", rule: rbacv1.PolicyRule{APIGroups: strs("*"), Resources: strs("*"), Verbs: strs("*")}, namespaced: true},
		{name: "subresource and resourceNames", rule: rbacv1.PolicyRule{APIGroups: strs(""), Resources: strs("pods/log", "pods"), ResourceNames: strs("a", "b"), Verbs: strs("get")}, namespaced: true},
		{name: "free-form verbs", rule: rbacv1.PolicyRule{APIGroups: strs("x"), Resources: strs("y"), Verbs: strs("", "Bogus Verb")}, namespaced: true},
		{name: "non-resource URLs in a cluster rule", rule: rbacv1.PolicyRule{NonResourceURLs: strs("/healthz", "/logs/*"), Verbs: strs("get")}},
		{
			name:       "empty namespaced rule",
			rule:       rbacv1.PolicyRule{},
			namespaced: true,
			want: []wantErr{
				required("rules[3].verbs: " + verbsRequired),
				required("rules[3].apiGroups: " + apiGroupsRequired),
				required("rules[3].resources: " + resourcesRequired),
			},
		},
		{
			name: "empty cluster rule",
			rule: rbacv1.PolicyRule{Verbs: strs()},
			want: []wantErr{
				required("rules[3].verbs: " + verbsRequired),
				required("rules[3].apiGroups: " + apiGroupsRequired),
				required("rules[3].resources: " + resourcesRequired),
			},
		},
		{
			name: "resources without apiGroups",
			rule: rbacv1.PolicyRule{Resources: strs("pods"), Verbs: strs("get")},
			want: []wantErr{required("rules[3].apiGroups: " + apiGroupsRequired)},
		},
		{
			name: "apiGroups without resources",
			rule: rbacv1.PolicyRule{APIGroups: strs("apps"), ResourceNames: strs("x"), Verbs: strs("get")},
			want: []wantErr{required("rules[3].resources: " + resourcesRequired)},
		},
		{
			name:       "non-resource URLs in a namespaced rule",
			rule:       rbacv1.PolicyRule{NonResourceURLs: strs("/healthz"), Verbs: strs("get")},
			namespaced: true,
			want:       []wantErr{invalid(`rules[3].nonResourceURLs: Invalid value: ["/healthz"]: ` + namespacedURLs)},
		},
		{
			name: "non-resource URLs with resources",
			rule: rbacv1.PolicyRule{NonResourceURLs: strs("*"), Resources: strs("*"), Verbs: strs("*")},
			want: []wantErr{invalid(`rules[3].nonResourceURLs: Invalid value: ["*"]: ` + mixedURLs)},
		},
		{
			name: "non-resource URLs with apiGroups",
			rule: rbacv1.PolicyRule{NonResourceURLs: strs("/a", "/b"), APIGroups: strs(""), Verbs: strs("get")},
			want: []wantErr{invalid(`rules[3].nonResourceURLs: Invalid value: ["/a","/b"]: ` + mixedURLs)},
		},
		{
			name: "non-resource URLs with resourceNames",
			rule: rbacv1.PolicyRule{NonResourceURLs: strs("/a"), ResourceNames: strs("n"), Verbs: strs("get")},
			want: []wantErr{invalid(`rules[3].nonResourceURLs: Invalid value: ["/a"]: ` + mixedURLs)},
		},
		{
			name:       "everything wrong with non-resource URLs",
			rule:       rbacv1.PolicyRule{NonResourceURLs: strs("/a"), APIGroups: strs("")},
			namespaced: true,
			want: []wantErr{
				required("rules[3].verbs: " + verbsRequired),
				invalid(`rules[3].nonResourceURLs: Invalid value: ["/a"]: ` + namespacedURLs),
				invalid(`rules[3].nonResourceURLs: Invalid value: ["/a"]: ` + mixedURLs),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidatePolicyRule(tc.rule, tc.namespaced, p), tc.want)
		})
	}

	// The bad value is the rule's own nonResourceURLs slice.
	urls := strs("/x")
	errs := ValidatePolicyRule(rbacv1.PolicyRule{NonResourceURLs: urls, Verbs: strs("get")}, true, p)
	if len(errs) != 1 || !reflect.DeepEqual(errs[0].BadValue, urls) {
		t.Errorf("bad value: got %#v", errs)
	}
}

func TestValidateRole(t *testing.T) {
	for _, tc := range []struct {
		name string
		role *rbacv1.Role
		want []wantErr
	}{
		{name: "kubectl create role", role: newRole()},
		{
			name: "kubectl create role with resource names and groups",
			role: newRole(func(r *rbacv1.Role) {
				r.Rules = []rbacv1.PolicyRule{
					{APIGroups: strs("apps"), Resources: strs("deployments", "deployments/scale"), ResourceNames: strs("web"), Verbs: strs("get", "update")},
					{APIGroups: strs(""), Resources: strs("configmaps"), Verbs: strs("*")},
				}
			}),
		},
		{
			name: "bootstrap role with colons in its name",
			role: &rbacv1.Role{
				ObjectMeta: func() metav1.ObjectMeta {
					m := bootstrapMeta("system::leader-locking-kube-controller-manager")
					m.Namespace = "kube-system"
					return m
				}(),
				Rules: []rbacv1.PolicyRule{
					{APIGroups: strs(""), Resources: strs("configmaps"), Verbs: strs("watch")},
					{APIGroups: strs(""), Resources: strs("configmaps"), ResourceNames: strs("kube-controller-manager"), Verbs: strs("get", "update")},
				},
			},
		},
		{name: "no rules", role: newRole(func(r *rbacv1.Role) { r.Rules = nil })},
		{name: "standard and qualified finalizers", role: newRole(func(r *rbacv1.Role) {
			r.Finalizers = strs("orphan", "kubernetes", "example.com/cleanup")
		})},
		{name: "generateName", role: newRole(func(r *rbacv1.Role) { r.GenerateName = "reader-"; r.Name = "reader-x7k2p" })},
		{
			name: "missing name",
			role: newRole(func(r *rbacv1.Role) { r.Name = "" }),
			want: []wantErr{required(nameRequired)},
		},
		{
			name: "dot-dot name",
			role: newRole(func(r *rbacv1.Role) { r.Name = ".." }),
			want: []wantErr{invalid(`metadata.name: Invalid value: "..": may not be '..'`)},
		},
		{
			name: "name with slash and percent",
			role: newRole(func(r *rbacv1.Role) { r.Name = "a/b%c" }),
			want: []wantErr{
				invalid(`metadata.name: Invalid value: "a/b%c": may not contain '/'`),
				invalid(`metadata.name: Invalid value: "a/b%c": may not contain '%'`),
			},
		},
		{
			name: "generateName is held to the full name rule",
			role: newRole(func(r *rbacv1.Role) { r.GenerateName = ".." }),
			want: []wantErr{invalid(`metadata.generateName: Invalid value: "..": may not be '..'`)},
		},
		{
			name: "missing namespace",
			role: newRole(func(r *rbacv1.Role) { r.Namespace = "" }),
			want: []wantErr{required(nsRequired)},
		},
		{
			name: "invalid namespace",
			role: newRole(func(r *rbacv1.Role) { r.Namespace = "Kube_System" }),
			want: []wantErr{invalid(`metadata.namespace: Invalid value: "Kube_System": ` + dns1123LabelMsg)},
		},
		{
			name: "invalid label",
			role: newRole(func(r *rbacv1.Role) { r.Labels = map[string]string{"app": "-v"} }),
			want: []wantErr{invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg)},
		},
		{
			name: "unqualified custom finalizer",
			role: newRole(func(r *rbacv1.Role) { r.Finalizers = strs("orphan", "cleanup") }),
			want: []wantErr{invalid(`metadata.finalizers[1]: Invalid value: "cleanup": ` + finalizerMsg)},
		},
		{
			name: "malformed finalizer",
			role: newRole(func(r *rbacv1.Role) { r.Finalizers = strs("bad finalizer") }),
			want: []wantErr{
				invalid(`metadata.finalizers: Invalid value: "bad finalizer": name part ` + qualifiedNameMsg),
				invalid(`metadata.finalizers[0]: Invalid value: "bad finalizer": ` + finalizerMsg),
			},
		},
		{
			name: "rule without verbs",
			role: newRole(func(r *rbacv1.Role) { r.Rules[0].Verbs = nil }),
			want: []wantErr{required("rules[0].verbs: " + verbsRequired)},
		},
		{
			name: "non-resource URL rule",
			role: newRole(func(r *rbacv1.Role) {
				r.Rules = append(r.Rules, rbacv1.PolicyRule{NonResourceURLs: strs("/healthz"), Verbs: strs("get")})
			}),
			want: []wantErr{invalid(`rules[1].nonResourceURLs: Invalid value: ["/healthz"]: ` + namespacedURLs)},
		},
		{
			name: "errors in metadata and several rules, in order",
			role: newRole(func(r *rbacv1.Role) {
				r.Name = "a/b"
				r.Rules = []rbacv1.PolicyRule{
					{Verbs: strs("get")},
					{APIGroups: strs(""), Resources: strs("pods"), Verbs: strs("get")},
					{NonResourceURLs: strs("*"), Resources: strs("*")},
				}
			}),
			want: []wantErr{
				invalid(`metadata.name: Invalid value: "a/b": may not contain '/'`),
				required("rules[0].apiGroups: " + apiGroupsRequired),
				required("rules[0].resources: " + resourcesRequired),
				required("rules[2].verbs: " + verbsRequired),
				invalid(`rules[2].nonResourceURLs: Invalid value: ["*"]: ` + namespacedURLs),
				invalid(`rules[2].nonResourceURLs: Invalid value: ["*"]: ` + mixedURLs),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateRole(tc.role), tc.want)
		})
	}
}

// Bootstrap cluster roles as kube-apiserver 1.36 reconciles them.
var bootstrapClusterRoles = []*rbacv1.ClusterRole{
	{
		ObjectMeta: bootstrapMeta("cluster-admin"),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: strs("*"), Resources: strs("*"), Verbs: strs("*")},
			{NonResourceURLs: strs("*"), Verbs: strs("*")},
		},
	},
	{
		ObjectMeta: bootstrapMeta("system:discovery"),
		Rules: []rbacv1.PolicyRule{{
			NonResourceURLs: strs("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"),
			Verbs:           strs("get"),
		}},
	},
	{
		ObjectMeta: bootstrapMeta("system:public-info-viewer"),
		Rules: []rbacv1.PolicyRule{{
			NonResourceURLs: strs("/healthz", "/livez", "/readyz", "/version", "/version/"),
			Verbs:           strs("get"),
		}},
	},
	{
		ObjectMeta: bootstrapMeta("system:basic-user"),
		Rules: []rbacv1.PolicyRule{{
			APIGroups: strs("authorization.k8s.io"),
			Resources: strs("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			Verbs:     strs("create"),
		}},
	},
	{
		// admin, edit and view are aggregated, with no rules of their own.
		ObjectMeta: bootstrapMeta("admin"),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			selector(map[string]string{aggregateToAdmin: "true"}),
		}},
	},
	{
		ObjectMeta: func() metav1.ObjectMeta {
			m := bootstrapMeta("system:aggregate-to-view")
			m.Labels["rbac.authorization.k8s.io/aggregate-to-view"] = "true"
			return m
		}(),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: strs(""), Resources: strs("configmaps", "endpoints", "pods", "pods/log", "services"), Verbs: strs("get", "list", "watch")},
			{APIGroups: strs("apps"), Resources: strs("daemonsets", "deployments", "replicasets", "statefulsets"), Verbs: strs("get", "list", "watch")},
		},
	},
	{
		ObjectMeta: bootstrapMeta("system:controller:attachdetach-controller"),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: strs(""), Resources: strs("persistentvolumes", "persistentvolumeclaims"), Verbs: strs("get", "list", "watch")},
			{APIGroups: strs("", "events.k8s.io"), Resources: strs("events"), Verbs: strs("create", "patch", "update")},
		},
	},
}

func TestValidateClusterRole(t *testing.T) {
	for _, r := range bootstrapClusterRoles {
		t.Run("bootstrap "+r.Name, func(t *testing.T) {
			checkErrs(t, ValidateClusterRole(r), nil)
		})
	}
	for _, tc := range []struct {
		name string
		role *rbacv1.ClusterRole
		want []wantErr
	}{
		{name: "kubectl create clusterrole", role: newClusterRole()},
		{
			name: "kubectl create clusterrole --non-resource-url",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.Rules = []rbacv1.PolicyRule{{NonResourceURLs: strs("/logs/*", "/metrics"), Verbs: strs("get")}}
			}),
		},
		{
			name: "kubectl create clusterrole --aggregation-rule",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.Rules = nil
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(map[string]string{"rbac.example.com/aggregate-to-monitoring": "true"}),
				}}
			}),
		},
		{
			name: "aggregationRule alongside rules and expressions",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(nil, metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: strs("a", "b")}),
					selector(nil, metav1.LabelSelectorRequirement{Key: "example.com/x", Operator: metav1.LabelSelectorOpExists}),
					{}, // selects everything, which is allowed
				}}
			}),
		},
		{
			name: "namespace set",
			role: newClusterRole(func(r *rbacv1.ClusterRole) { r.Namespace = "default" }),
			want: []wantErr{forbidden(nsForbidden)},
		},
		{
			name: "missing name",
			role: newClusterRole(func(r *rbacv1.ClusterRole) { r.Name = "" }),
			want: []wantErr{required(nameRequired)},
		},
		{
			name: "dot name",
			role: newClusterRole(func(r *rbacv1.ClusterRole) { r.Name = "." }),
			want: []wantErr{invalid(`metadata.name: Invalid value: ".": may not be '.'`)},
		},
		{
			name: "non-resource URLs mixed with resources",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.Rules = []rbacv1.PolicyRule{{APIGroups: strs("*"), Resources: strs("*"), NonResourceURLs: strs("*"), Verbs: strs("*")}}
			}),
			want: []wantErr{invalid(`rules[0].nonResourceURLs: Invalid value: ["*"]: ` + mixedURLs)},
		},
		{
			name: "rule without verbs",
			role: newClusterRole(func(r *rbacv1.ClusterRole) { r.Rules[1].Verbs = strs() }),
			want: []wantErr{required("rules[1].verbs: " + verbsRequired)},
		},
		{
			name: "empty aggregationRule",
			role: newClusterRole(func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{} }),
			want: []wantErr{required(selectorsRequired)},
		},
		{
			name: "invalid matchLabels key",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(map[string]string{"ok": "true"}),
					selector(map[string]string{"bad key": "true"}),
				}}
			}),
			want: []wantErr{
				invalid(`aggregationRule.clusterRoleSelectors[1].matchLabels: Invalid value: "bad key": name part ` + qualifiedNameMsg),
				invalid("aggregationRule.clusterRoleSelectors[1]: " + invalidSelector),
			},
		},
		{
			name: "invalid matchLabels value",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(map[string]string{"k": "a b"}),
				}}
			}),
			want: []wantErr{
				invalid(`aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "a b": ` + labelValueMsg),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			name: "unknown operator",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(nil, metav1.LabelSelectorRequirement{Key: "k", Operator: "Bogus"}),
				}}
			}),
			want: []wantErr{
				invalid(`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator`),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			name: "In without values",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(nil, metav1.LabelSelectorRequirement{Key: "k", Operator: metav1.LabelSelectorOpIn}),
				}}
			}),
			want: []wantErr{
				required("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			name: "Exists with values",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(nil, metav1.LabelSelectorRequirement{Key: "k", Operator: metav1.LabelSelectorOpExists, Values: strs("v")}),
				}}
			}),
			want: []wantErr{
				forbidden("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			name: "invalid expression value",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
					selector(nil, metav1.LabelSelectorRequirement{Key: "k", Operator: metav1.LabelSelectorOpNotIn, Values: strs("ok", "bad#value")}),
				}}
			}),
			want: []wantErr{
				invalid(`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[1]: Invalid value: "bad#value": ` + labelValueMsg),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			name: "errors in order: metadata, rules, aggregationRule",
			role: newClusterRole(func(r *rbacv1.ClusterRole) {
				r.Namespace = "x"
				r.Rules[0].Verbs = nil
				r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{}}
			}),
			want: []wantErr{
				forbidden(nsForbidden),
				required("rules[0].verbs: " + verbsRequired),
				required(selectorsRequired),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateClusterRole(tc.role), tc.want)
		})
	}

	// "invalid label selector." reports the unparsed (nil) selector.
	errs := ValidateClusterRole(newClusterRole(func(r *rbacv1.ClusterRole) {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{selector(map[string]string{"k": "a b"})}}
	}))
	if len(errs) != 2 || errs[1].BadValue != nil {
		t.Errorf("bad value of the selector error: %#v", errs)
	}
}

func TestValidateRoleBindingSubject(t *testing.T) {
	p := field.NewPath("subjects").Index(2)
	long := strings.Repeat("a", 254)
	for _, tc := range []struct {
		name     string
		subject  rbacv1.Subject
		cluster  bool // validate as a ClusterRoleBinding subject
		want     []wantErr
		wantBoth bool // the same errors in a RoleBinding and a ClusterRoleBinding
	}{
		{name: "user", subject: rbacv1.Subject{Kind: "User", APIGroup: rbacGroup, Name: "alice@example.com"}, wantBoth: true},
		{name: "user with free-form name", subject: rbacv1.Subject{Kind: "User", APIGroup: rbacGroup, Name: "system:kube-controller-manager"}, wantBoth: true},
		{name: "group", subject: rbacv1.Subject{Kind: "Group", APIGroup: rbacGroup, Name: "system:masters"}, wantBoth: true},
		{name: "user with namespace", subject: rbacv1.Subject{Kind: "User", APIGroup: rbacGroup, Name: "bob", Namespace: "ignored"}, wantBoth: true},
		{name: "service account", subject: rbacv1.Subject{Kind: "ServiceAccount", Name: "default", Namespace: "kube-system"}, wantBoth: true},
		{name: "service account without namespace in a RoleBinding", subject: rbacv1.Subject{Kind: "ServiceAccount", Name: "default"}},
		{
			name:    "service account without namespace in a ClusterRoleBinding",
			subject: rbacv1.Subject{Kind: "ServiceAccount", Name: "default"},
			cluster: true,
			want:    []wantErr{required("subjects[2].namespace: Required value")},
		},
		{
			name:     "user without apiGroup",
			subject:  rbacv1.Subject{Kind: "User", Name: "alice"},
			want:     []wantErr{unsupported(`subjects[2].apiGroup: Unsupported value: "": ` + rbacGroupOnly)},
			wantBoth: true,
		},
		{
			name:     "group with another apiGroup",
			subject:  rbacv1.Subject{Kind: "Group", APIGroup: "rbac.authorization.k8s.io/v1", Name: "devs"},
			want:     []wantErr{unsupported(`subjects[2].apiGroup: Unsupported value: "rbac.authorization.k8s.io/v1": ` + rbacGroupOnly)},
			wantBoth: true,
		},
		{
			name:     "user without name",
			subject:  rbacv1.Subject{Kind: "User", APIGroup: rbacGroup},
			want:     []wantErr{required("subjects[2].name: Required value")},
			wantBoth: true,
		},
		{
			name:     "group without name or apiGroup",
			subject:  rbacv1.Subject{Kind: "Group"},
			want:     []wantErr{required("subjects[2].name: Required value"), unsupported(`subjects[2].apiGroup: Unsupported value: "": ` + rbacGroupOnly)},
			wantBoth: true,
		},
		{
			name:     "service account with apiGroup",
			subject:  rbacv1.Subject{Kind: "ServiceAccount", APIGroup: rbacGroup, Name: "sa", Namespace: "ns"},
			want:     []wantErr{unsupported(`subjects[2].apiGroup: Unsupported value: "rbac.authorization.k8s.io": ` + emptyGroupOnly)},
			wantBoth: true,
		},
		{
			name:     "service account with invalid name",
			subject:  rbacv1.Subject{Kind: "ServiceAccount", Name: "Bad_SA", Namespace: "ns"},
			want:     []wantErr{invalid(`subjects[2].name: Invalid value: "Bad_SA": ` + dns1123SubdomainMsg)},
			wantBoth: true,
		},
		{
			name:     "service account with too long a name",
			subject:  rbacv1.Subject{Kind: "ServiceAccount", Name: long, Namespace: "ns"},
			want:     []wantErr{invalid(fmt.Sprintf(`subjects[2].name: Invalid value: %q: must be no more than 253 characters`, long))},
			wantBoth: true,
		},
		{
			name:    "service account with nothing",
			subject: rbacv1.Subject{Kind: "ServiceAccount", APIGroup: "v1"},
			cluster: true,
			want: []wantErr{
				required("subjects[2].name: Required value"),
				unsupported(`subjects[2].apiGroup: Unsupported value: "v1": ` + emptyGroupOnly),
				required("subjects[2].namespace: Required value"),
			},
		},
		{
			name:     "unknown kind",
			subject:  rbacv1.Subject{Kind: "Robot", APIGroup: rbacGroup, Name: "r2"},
			want:     []wantErr{unsupported(`subjects[2].kind: Unsupported value: "Robot": ` + subjectKindsMsg)},
			wantBoth: true,
		},
		{
			name:     "lower-case kind",
			subject:  rbacv1.Subject{Kind: "user", APIGroup: rbacGroup, Name: "alice"},
			want:     []wantErr{unsupported(`subjects[2].kind: Unsupported value: "user": ` + subjectKindsMsg)},
			wantBoth: true,
		},
		{
			name:     "empty subject",
			subject:  rbacv1.Subject{},
			want:     []wantErr{required("subjects[2].name: Required value"), unsupported(`subjects[2].kind: Unsupported value: "": ` + subjectKindsMsg)},
			wantBoth: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantBoth {
				checkErrs(t, ValidateRoleBindingSubject(tc.subject, true, p), tc.want)
				checkErrs(t, ValidateRoleBindingSubject(tc.subject, false, p), tc.want)
				return
			}
			checkErrs(t, ValidateRoleBindingSubject(tc.subject, !tc.cluster, p), tc.want)
		})
	}
}

func TestValidateRoleBinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		binding *rbacv1.RoleBinding
		want    []wantErr
	}{
		{name: "kubectl create rolebinding --clusterrole", binding: newRoleBinding()},
		{
			name: "kubectl create rolebinding --role",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) {
				b.RoleRef = rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: "pod-reader"}
				b.Subjects = b.Subjects[:1]
			}),
		},
		{
			name: "bootstrap role binding",
			binding: &rbacv1.RoleBinding{
				ObjectMeta: func() metav1.ObjectMeta {
					m := bootstrapMeta("system::extension-apiserver-authentication-reader")
					m.Namespace = "kube-system"
					return m
				}(),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
				Subjects: []rbacv1.Subject{
					{Kind: "User", APIGroup: rbacGroup, Name: "system:kube-controller-manager"},
					{Kind: "User", APIGroup: rbacGroup, Name: "system:kube-scheduler"},
				},
			},
		},
		{name: "service account subject in the binding's namespace", binding: newRoleBinding(func(b *rbacv1.RoleBinding) {
			b.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "builder"}}
		})},
		{name: "no subjects", binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.Subjects = nil })},
		{
			name:    "missing namespace",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.Namespace = "" }),
			want:    []wantErr{required(nsRequired)},
		},
		{
			name:    "roleRef without apiGroup",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "" }),
			want:    []wantErr{unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly)},
		},
		{
			name:    "roleRef to another group",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef.APIGroup = "rbac.authorization.k8s.io/v1" }),
			want:    []wantErr{unsupported(`roleRef.apiGroup: Unsupported value: "rbac.authorization.k8s.io/v1": ` + rbacGroupOnly)},
		},
		{
			name:    "roleRef to another kind",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "clusterrole" }),
			want:    []wantErr{unsupported(`roleRef.kind: Unsupported value: "clusterrole": ` + roleRefKinds)},
		},
		{
			name:    "roleRef without name",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "" }),
			want:    []wantErr{required("roleRef.name: Required value")},
		},
		{
			name:    "roleRef with a bad name",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "a/b%c" }),
			want: []wantErr{
				invalid(`roleRef.name: Invalid value: "a/b%c": may not contain '/'`),
				invalid(`roleRef.name: Invalid value: "a/b%c": may not contain '%'`),
			},
		},
		{
			name:    "empty roleRef",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) { b.RoleRef = rbacv1.RoleRef{} }),
			want: []wantErr{
				unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				unsupported(`roleRef.kind: Unsupported value: "": ` + roleRefKinds),
				required("roleRef.name: Required value"),
			},
		},
		{
			name: "everything wrong, in order",
			binding: newRoleBinding(func(b *rbacv1.RoleBinding) {
				b.Name = ".."
				b.RoleRef = rbacv1.RoleRef{APIGroup: "x", Kind: "Role", Name: "."}
				b.Subjects = []rbacv1.Subject{
					{Kind: "User", Name: "u"},
					{Kind: "ServiceAccount", Name: "ok"},
					{Kind: "Robot"},
				}
			}),
			want: []wantErr{
				invalid(`metadata.name: Invalid value: "..": may not be '..'`),
				unsupported(`roleRef.apiGroup: Unsupported value: "x": ` + rbacGroupOnly),
				invalid(`roleRef.name: Invalid value: ".": may not be '.'`),
				unsupported(`subjects[0].apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				required("subjects[2].name: Required value"),
				unsupported(`subjects[2].kind: Unsupported value: "Robot": ` + subjectKindsMsg),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateRoleBinding(tc.binding), tc.want)
		})
	}
}

func TestValidateClusterRoleBinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		binding *rbacv1.ClusterRoleBinding
		want    []wantErr
	}{
		{name: "kubectl create clusterrolebinding", binding: newClusterRoleBinding()},
		{
			name: "bootstrap cluster-admin binding",
			binding: &rbacv1.ClusterRoleBinding{
				ObjectMeta: bootstrapMeta("cluster-admin"),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: rbacGroup, Name: "system:masters"}},
			},
		},
		{
			name: "bootstrap controller binding",
			binding: &rbacv1.ClusterRoleBinding{
				ObjectMeta: bootstrapMeta("system:controller:attachdetach-controller"),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "system:controller:attachdetach-controller"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "attachdetach-controller", Namespace: "kube-system"}},
			},
		},
		{
			name:    "namespace set",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) { b.Namespace = "default" }),
			want:    []wantErr{forbidden(nsForbidden)},
		},
		{
			name:    "roleRef to a Role",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" }),
			want:    []wantErr{unsupported(`roleRef.kind: Unsupported value: "Role": ` + clusterRoleOnly)},
		},
		{
			name:    "roleRef without apiGroup",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.APIGroup = "" }),
			want:    []wantErr{unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly)},
		},
		{
			name:    "roleRef without name",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Name = "" }),
			want:    []wantErr{required("roleRef.name: Required value")},
		},
		{
			name: "service account subject without namespace",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) {
				b.Subjects[1].Namespace = ""
			}),
			want: []wantErr{required("subjects[1].namespace: Required value")},
		},
		{
			name: "everything wrong, in order",
			binding: newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) {
				b.Name = ""
				b.RoleRef = rbacv1.RoleRef{Kind: "Role"}
				b.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", APIGroup: rbacGroup, Name: "x.y"}}
			}),
			want: []wantErr{
				required(nameRequired),
				unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				unsupported(`roleRef.kind: Unsupported value: "Role": ` + clusterRoleOnly),
				required("roleRef.name: Required value"),
				unsupported(`subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": ` + emptyGroupOnly),
				required("subjects[0].namespace: Required value"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateClusterRoleBinding(tc.binding), tc.want)
		})
	}
}

// stored sets the metadata the store fills in on create.
func stored(m *metav1.ObjectMeta) {
	m.ResourceVersion = "42"
	m.UID = "0b1c2d3e-0000-4000-8000-000000000001"
	m.CreationTimestamp = metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
}

func TestValidateRoleUpdate(t *testing.T) {
	old := newRole(func(r *rbacv1.Role) { stored(&r.ObjectMeta) })
	for _, tc := range []struct {
		name   string
		update func(*rbacv1.Role)
		want   []wantErr
	}{
		{name: "no change", update: func(*rbacv1.Role) {}},
		{name: "rules changed", update: func(r *rbacv1.Role) {
			r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: strs("apps"), Resources: strs("deployments"), Verbs: strs("get")})
		}},
		{name: "labels changed", update: func(r *rbacv1.Role) { r.Labels = map[string]string{"team": "a"} }},
		{
			name:   "invalid rule",
			update: func(r *rbacv1.Role) { r.Rules[0].Verbs = nil },
			want:   []wantErr{required("rules[0].verbs: " + verbsRequired)},
		},
		{
			// kube-apiserver's generic registry and ValidateRoleUpdate both
			// check metadata updates.
			name:   "missing resourceVersion",
			update: func(r *rbacv1.Role) { r.ResourceVersion = "" },
			want:   []wantErr{invalid(rvRequired), invalid(rvRequired)},
		},
		{
			name:   "name changed",
			update: func(r *rbacv1.Role) { r.Name = "other" },
			want: []wantErr{
				invalid(`metadata.name: Invalid value: "other": field is immutable`),
				invalid(`metadata.name: Invalid value: "other": field is immutable`),
			},
		},
		{
			name: "invalid label and rule and no resourceVersion",
			update: func(r *rbacv1.Role) {
				r.Labels = map[string]string{"app": "-v"}
				r.Rules[0].Resources = nil
				r.ResourceVersion = ""
			},
			// Labels are checked by both create-time and update metadata
			// rules, in both passes.
			want: []wantErr{
				invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg),
				invalid(rvRequired),
				invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg),
				invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg),
				required("rules[0].resources: " + resourcesRequired),
				invalid(rvRequired),
				invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg),
			},
		},
		{
			// The generic registry's metadata pass has no finalizer-name
			// rule; kube's ValidateRole and ValidateObjectMetaUpdate both do.
			name:   "unqualified finalizer",
			update: func(r *rbacv1.Role) { r.Finalizers = strs("cleanup") },
			want: []wantErr{
				invalid(`metadata.finalizers[0]: Invalid value: "cleanup": ` + finalizerMsg),
				invalid(`metadata.finalizers[0]: Invalid value: "cleanup": ` + finalizerMsg),
			},
		},
		{
			// The generic registry holds generateName to the prefix rule
			// only; RBAC holds it to the full name rule.
			name:   "dot-dot generateName",
			update: func(r *rbacv1.Role) { r.GenerateName = ".." },
			want:   []wantErr{invalid(`metadata.generateName: Invalid value: "..": may not be '..'`)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := old.DeepCopy()
			tc.update(r)
			checkErrs(t, ValidateRoleUpdate(r, old), tc.want)
		})
	}
}

func TestValidateClusterRoleUpdate(t *testing.T) {
	badValue := selector(nil, metav1.LabelSelectorRequirement{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: strs("bad#value")})
	aggregated := func(selectors ...metav1.LabelSelector) func(*rbacv1.ClusterRole) {
		return func(r *rbacv1.ClusterRole) {
			stored(&r.ObjectMeta)
			r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: selectors}
		}
	}
	valid := newClusterRole(aggregated(selector(map[string]string{aggregateToAdmin: "true"})))
	legacy := newClusterRole(aggregated(badValue)) // stored before selector values were checked
	for _, tc := range []struct {
		name     string
		old, obj *rbacv1.ClusterRole
		want     []wantErr
	}{
		{name: "no change", old: valid, obj: valid.DeepCopy()},
		{name: "bootstrap cluster-admin", old: bootstrapClusterRoles[0], obj: func() *rbacv1.ClusterRole {
			r := bootstrapClusterRoles[0].DeepCopy()
			r.ResourceVersion = "7"
			return r
		}()},
		{
			name: "selector value made invalid",
			old:  valid,
			obj:  newClusterRole(aggregated(badValue)),
			want: []wantErr{
				invalid(`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: "bad#value": ` + labelValueMsg),
				invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector),
			},
		},
		{
			// An old invalid selector lifts the value rule, but the
			// selector still fails to parse, as in kube-apiserver.
			name: "invalid selector value kept",
			old:  legacy,
			obj:  legacy.DeepCopy(),
			want: []wantErr{invalid("aggregationRule.clusterRoleSelectors[0]: " + invalidSelector)},
		},
		{name: "invalid selector value fixed", old: legacy, obj: valid.DeepCopy()},
		{
			name: "namespace and name changed",
			old:  valid,
			obj:  func() *rbacv1.ClusterRole { r := valid.DeepCopy(); r.Name = "x"; r.Namespace = "ns"; return r }(),
			want: []wantErr{
				forbidden(nsForbidden),
				invalid(`metadata.name: Invalid value: "x": field is immutable`),
				invalid(`metadata.namespace: Invalid value: "ns": field is immutable`),
				forbidden(nsForbidden),
				invalid(`metadata.name: Invalid value: "x": field is immutable`),
				invalid(`metadata.namespace: Invalid value: "ns": field is immutable`),
			},
		},
		{
			name: "aggregationRule emptied",
			old:  valid,
			obj:  newClusterRole(aggregated()),
			want: []wantErr{required(selectorsRequired)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateClusterRoleUpdate(tc.obj, tc.old), tc.want)
		})
	}
}

func TestValidateRoleBindingUpdate(t *testing.T) {
	old := newRoleBinding(func(b *rbacv1.RoleBinding) { stored(&b.ObjectMeta) })
	for _, tc := range []struct {
		name   string
		update func(*rbacv1.RoleBinding)
		want   []wantErr
	}{
		{name: "no change", update: func(*rbacv1.RoleBinding) {}},
		{name: "subjects changed", update: func(b *rbacv1.RoleBinding) { b.Subjects = b.Subjects[1:] }},
		{
			name:   "roleRef name changed",
			update: func(b *rbacv1.RoleBinding) { b.RoleRef.Name = "edit" },
			want:   []wantErr{invalid(`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}: ` + cannotChange)},
		},
		{
			name:   "roleRef kind changed",
			update: func(b *rbacv1.RoleBinding) { b.RoleRef.Kind = "Role" },
			want:   []wantErr{invalid(`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"admin"}: ` + cannotChange)},
		},
		{
			name:   "roleRef emptied",
			update: func(b *rbacv1.RoleBinding) { b.RoleRef = rbacv1.RoleRef{} },
			want: []wantErr{
				unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				unsupported(`roleRef.kind: Unsupported value: "": ` + roleRefKinds),
				required("roleRef.name: Required value"),
				invalid(`roleRef: Invalid value: {"APIGroup":"","Kind":"","Name":""}: ` + cannotChange),
			},
		},
		{
			name: "invalid subject, roleRef changed, no resourceVersion",
			update: func(b *rbacv1.RoleBinding) {
				b.Subjects[0].APIGroup = ""
				b.RoleRef.Name = "view"
				b.ResourceVersion = ""
			},
			want: []wantErr{
				invalid(rvRequired),
				unsupported(`subjects[0].apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				invalid(rvRequired),
				invalid(`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"view"}: ` + cannotChange),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := old.DeepCopy()
			tc.update(b)
			checkErrs(t, ValidateRoleBindingUpdate(b, old), tc.want)
		})
	}

	// The bad value of "cannot change roleRef" renders like kube's internal
	// RoleRef (no JSON tags) and carries the new roleRef.
	b := old.DeepCopy()
	b.RoleRef.Name = "edit"
	errs := ValidateRoleBindingUpdate(b, old)
	if want := (internalRoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "edit"}); len(errs) != 1 || errs[0].BadValue != want {
		t.Errorf("bad value: got %#v", errs)
	}
}

func TestValidateClusterRoleBindingUpdate(t *testing.T) {
	old := newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) { stored(&b.ObjectMeta) })
	for _, tc := range []struct {
		name   string
		update func(*rbacv1.ClusterRoleBinding)
		want   []wantErr
	}{
		{name: "no change", update: func(*rbacv1.ClusterRoleBinding) {}},
		{name: "subjects added", update: func(b *rbacv1.ClusterRoleBinding) {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "Group", APIGroup: rbacGroup, Name: "admins"})
		}},
		{
			name:   "roleRef changed to a Role",
			update: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Kind = "Role" },
			want: []wantErr{
				unsupported(`roleRef.kind: Unsupported value: "Role": ` + clusterRoleOnly),
				invalid(`roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"cluster-admin"}: ` + cannotChange),
			},
		},
		{
			name:   "roleRef apiGroup cleared",
			update: func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.APIGroup = "" },
			want: []wantErr{
				unsupported(`roleRef.apiGroup: Unsupported value: "": ` + rbacGroupOnly),
				invalid(`roleRef: Invalid value: {"APIGroup":"","Kind":"ClusterRole","Name":"cluster-admin"}: ` + cannotChange),
			},
		},
		{
			name:   "uid changed",
			update: func(b *rbacv1.ClusterRoleBinding) { b.UID = "other" },
			want: []wantErr{
				invalid(`metadata.uid: Invalid value: "other": field is immutable`),
				invalid(`metadata.uid: Invalid value: "other": field is immutable`),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := old.DeepCopy()
			tc.update(b)
			checkErrs(t, ValidateClusterRoleBindingUpdate(b, old), tc.want)
		})
	}
}

// TestAggregateMessages checks the messages a client reads in the Status
// (ToAggregate drops repeated messages, as kube-apiserver's does).
func TestAggregateMessages(t *testing.T) {
	checkAggregate(t, ValidateRole(newRole()), "")
	checkAggregate(t, ValidateClusterRole(bootstrapClusterRoles[0]), "")
	checkAggregate(t, ValidateRoleBinding(newRoleBinding()), "")
	checkAggregate(t, ValidateClusterRoleBinding(newClusterRoleBinding()), "")

	checkAggregate(t, ValidateRole(newRole(func(r *rbacv1.Role) { r.Rules = []rbacv1.PolicyRule{{}} })),
		"[rules[0].verbs: "+verbsRequired+", rules[0].apiGroups: "+apiGroupsRequired+", rules[0].resources: "+resourcesRequired+"]")
	checkAggregate(t, ValidateRole(newRole(func(r *rbacv1.Role) {
		r.Rules = []rbacv1.PolicyRule{{NonResourceURLs: strs("/healthz"), Verbs: strs("get")}}
	})), `rules[0].nonResourceURLs: Invalid value: ["/healthz"]: `+namespacedURLs)
	checkAggregate(t, ValidateClusterRole(newClusterRole(func(r *rbacv1.ClusterRole) { r.AggregationRule = &rbacv1.AggregationRule{} })),
		selectorsRequired)
	checkAggregate(t, ValidateRoleBinding(newRoleBinding(func(b *rbacv1.RoleBinding) {
		b.RoleRef = rbacv1.RoleRef{Kind: "Role"}
		b.Subjects = []rbacv1.Subject{{Kind: "User", Name: "alice"}}
	})), `[roleRef.apiGroup: Unsupported value: "": `+rbacGroupOnly+`, roleRef.name: Required value, subjects[0].apiGroup: Unsupported value: "": `+rbacGroupOnly+`]`)
	checkAggregate(t, ValidateClusterRoleBinding(newClusterRoleBinding(func(b *rbacv1.ClusterRoleBinding) {
		b.RoleRef.Kind = "Role"
		b.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}
	})), `[roleRef.kind: Unsupported value: "Role": `+clusterRoleOnly+`, subjects[0].namespace: Required value]`)

	old := newRoleBinding(func(b *rbacv1.RoleBinding) { stored(&b.ObjectMeta) })
	b := old.DeepCopy()
	b.ResourceVersion = ""
	b.Labels = map[string]string{"app": "-v"}
	b.RoleRef.Name = "view"
	checkAggregate(t, ValidateRoleBindingUpdate(b, old),
		`[metadata.labels: Invalid value: "-v": `+labelValueMsg+`, `+rvRequired+
			`, roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"view"}: `+cannotChange+`]`)
}
