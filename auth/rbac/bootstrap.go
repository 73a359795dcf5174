package rbac

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Labels and annotations of the bootstrap policy.
const (
	// BootstrappingLabel marks the objects of the bootstrap policy, with
	// value BootstrappingValue.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
	// AutoUpdateAnnotation ("true" on bootstrap objects) lets a server
	// add missing rules and subjects to an existing bootstrap object at
	// start; "false" leaves the object as it is.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey

	// Labels that aggregate a ClusterRole into admin, edit and view.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"

	// LeaseHolder is leasehold's ClusterRole for components that elect
	// leaders: bind it with a RoleBinding in their namespace.
	LeaseHolder = "leasehold:lease-holder"
)

// Verb sets of the bootstrap policy (kube's bootstrappolicy.ReadWrite and
// Read).
var (
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read      = []string{"get", "list", "watch"}
)

const (
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
)

// ruleBuilder is kube's rbacv1helpers.PolicyRuleBuilder: every list of the
// rule it builds is sorted, as in kube's bootstrap objects.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func newRule(verbs ...string) *ruleBuilder {
	return &ruleBuilder{rbacv1.PolicyRule{Verbs: append([]string(nil), verbs...)}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) urls(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

func (b *ruleBuilder) rule() rbacv1.PolicyRule {
	sort.Strings(b.r.Resources)
	sort.Strings(b.r.ResourceNames)
	sort.Strings(b.r.APIGroups)
	sort.Strings(b.r.NonResourceURLs)
	sort.Strings(b.r.Verbs)
	return b.r
}

func bootstrapMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingValue}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      l,
		Annotations: map[string]string{AutoUpdateAnnotation: "true"},
	}
}

func aggregationRule(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{label: "true"}},
	}}
}

// ClusterRoles returns the bootstrap ClusterRoles, new objects on each
// call: kube-apiserver's (those a store of leases uses, as kube v1.36
// defines them) and leasehold's, all labelled
// kubernetes.io/bootstrapping=rbac-defaults and annotated
// rbac.authorization.kubernetes.io/autoupdate=true. admin, edit and view
// have aggregation rules and no rules: Aggregate fills them.
func ClusterRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{
		{
			// a "root" role which can do absolutely anything
			ObjectMeta: bootstrapMeta("cluster-admin", nil),
			Rules: []rbacv1.PolicyRule{
				newRule("*").groups("*").resources("*").rule(),
				newRule("*").urls("*").rule(),
			},
		},
		{
			// just enough to see whether the server is ready and to
			// discover API versions
			ObjectMeta: bootstrapMeta("system:discovery", nil),
			Rules: []rbacv1.PolicyRule{
				newRule("get").urls(
					"/livez", "/readyz", "/healthz",
					"/version", "/version/",
					"/openapi", "/openapi/*",
					"/api", "/api/*",
					"/apis", "/apis/*",
				).rule(),
			},
		},
		{
			// read access to the monitoring endpoints
			ObjectMeta: bootstrapMeta("system:monitoring", nil),
			Rules: []rbacv1.PolicyRule{
				newRule("get").urls(
					"/metrics", "/metrics/slis",
					"/livez", "/readyz", "/healthz",
					"/livez/*", "/readyz/*", "/healthz/*",
				).rule(),
				// leasehold: its cluster status endpoint (members,
				// leader, Raft indexes) is monitoring data too. kube's
				// role has no such rule; it is a rule of its own so
				// that kube's rule above stays as kube writes it.
				newRule("get").urls("/cluster/status").rule(),
			},
		},
		{
			// what a user needs to learn about themselves
			ObjectMeta: bootstrapMeta("system:basic-user", nil),
			Rules: []rbacv1.PolicyRule{
				newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
				newRule("create").groups(authenticationGroup).resources("selfsubjectreviews").rule(),
			},
		},
		{
			// insensitive cluster information, for everyone
			ObjectMeta: bootstrapMeta("system:public-info-viewer", nil),
			Rules: []rbacv1.PolicyRule{
				newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule(),
			},
		},
		{
			// a namespace's admin: edit plus the power to grant
			// permissions to other users
			ObjectMeta:      bootstrapMeta("admin", nil),
			AggregationRule: aggregationRule(AggregateToAdmin),
		},
		{
			// a namespace's editor
			ObjectMeta:      bootstrapMeta("edit", map[string]string{AggregateToAdmin: "true"}),
			AggregationRule: aggregationRule(AggregateToEdit),
		},
		{
			// a namespace's viewer: read access to what does not escalate
			ObjectMeta:      bootstrapMeta("view", map[string]string{AggregateToEdit: "true"}),
			AggregationRule: aggregationRule(AggregateToView),
		},
		{
			ObjectMeta: bootstrapMeta("system:aggregate-to-admin", map[string]string{AggregateToAdmin: "true"}),
			Rules: []rbacv1.PolicyRule{
				newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
				newRule(readWrite...).groups(rbacv1.GroupName).resources("roles", "rolebindings").rule(),
			},
		},
		{
			ObjectMeta: bootstrapMeta("system:aggregate-to-edit", map[string]string{AggregateToEdit: "true"}),
			Rules: []rbacv1.PolicyRule{
				// leasehold: kube's system:aggregate-to-edit grants
				// nothing on coordination.k8s.io (neither leases nor
				// leasecandidates); leasehold serves only leases and
				// lease candidates, so edit may write both.
				newRule(readWrite...).groups(coordinationGroup).resources("leases", "leasecandidates").rule(),
			},
		},
		{
			ObjectMeta: bootstrapMeta("system:aggregate-to-view", map[string]string{AggregateToView: "true"}),
			Rules: []rbacv1.PolicyRule{
				// leasehold: kube's view has no lease rule (leases
				// are system objects there). leasehold is a store of
				// leases only, so view without them would view
				// nothing: it reads leases and lease candidates.
				newRule(read...).groups(coordinationGroup).resources("leases", "leasecandidates").rule(),
			},
		},
		{
			// leasehold: what a component electing a leader needs, to
			// bind per namespace; no delete, deletecollection or
			// leasecandidates.
			ObjectMeta: bootstrapMeta(LeaseHolder, nil),
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "create", "update", "patch").groups(coordinationGroup).resources("leases").rule(),
			},
		},
	}
}

func clusterBinding(role string, groups ...string) *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: bootstrapMeta(role, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
	}
	for _, g := range groups {
		b.Subjects = append(b.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return b
}

// ClusterRoleBindings returns the bootstrap ClusterRoleBindings, new
// objects on each call, named after their ClusterRoles, labelled and
// annotated as ClusterRoles are: cluster-admin to system:masters,
// system:discovery and system:basic-user to system:authenticated,
// system:public-info-viewer to system:authenticated and
// system:unauthenticated, system:monitoring to system:monitoring.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return []*rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", user.SystemPrivilegedGroup),
		clusterBinding("system:monitoring", user.MonitoringGroup),
		clusterBinding("system:discovery", user.AllAuthenticated),
		clusterBinding("system:basic-user", user.AllAuthenticated),
		clusterBinding("system:public-info-viewer", user.AllAuthenticated, user.AllUnauthenticated),
	}
}
