package rbac

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withMeta[T interface{ GetObjectMeta() metav1.Object }](o T, labels, annotations map[string]string) T {
	o.GetObjectMeta().SetLabels(labels)
	o.GetObjectMeta().SetAnnotations(annotations)
	return o
}

func TestReconcileClusterRole(t *testing.T) {
	auto := map[string]string{AutoUpdateAnnotation: "true"}
	defaults := map[string]string{BootstrappingLabel: BootstrappingValue}
	get := pr(l("get"), l("coordination.k8s.io"), l("leases"))
	list := pr(l("list"), l("coordination.k8s.io"), l("leases"))
	getList := pr(l("get", "list"), l("coordination.k8s.io"), l("leases"))
	extra := pr(l("get"), l("example.com"), l("widgets"))
	want := withMeta(clusterRole("r", getList), defaults, auto)

	tests := []struct {
		name     string
		existing *rbacv1.ClusterRole
		want     *rbacv1.ClusterRole
		update   *rbacv1.ClusterRole
	}{
		{"missing: created", nil, want, want},
		{"autoupdate false: left alone", withMeta(clusterRole("r", extra), defaults, map[string]string{AutoUpdateAnnotation: "false"}), want, nil},
		{"up to date", withMeta(clusterRole("r", getList), defaults, auto), want, nil},
		{"covered by other rules", withMeta(clusterRole("r", list, get), defaults, auto), want, nil},
		{"covered by a wider rule", withMeta(clusterRole("r", pr(l("*"), l("coordination.k8s.io"), l("*"))), defaults, auto), want, nil},
		{
			"missing rules appended, extra kept",
			withMeta(clusterRole("r", extra, get), defaults, auto), want,
			withMeta(clusterRole("r", extra, get, list), defaults, auto),
		},
		{
			"no annotation: reconciled and annotated",
			clusterRole("r", getList), want,
			withMeta(clusterRole("r", getList), defaults, auto),
		},
		{
			"existing labels and annotations win and stay",
			withMeta(clusterRole("r", getList), map[string]string{"mine": "x", BootstrappingLabel: "other"}, map[string]string{"note": "n"}), want,
			withMeta(clusterRole("r", getList), map[string]string{"mine": "x", BootstrappingLabel: "other"}, map[string]string{AutoUpdateAnnotation: "true", "note": "n"}),
		},
		{
			"autoupdate other than false: reconciled",
			withMeta(clusterRole("r", get), defaults, map[string]string{AutoUpdateAnnotation: "no"}), want,
			withMeta(clusterRole("r", get, list), defaults, map[string]string{AutoUpdateAnnotation: "no"}),
		},
		{
			"missing selectors appended",
			withMeta(aggregating(clusterRole("r", extra), match("mine", "true")), defaults, auto),
			withMeta(aggregating(clusterRole("r"), match(AggregateToView, "true")), defaults, auto),
			withMeta(aggregating(clusterRole("r", extra), match("mine", "true"), match(AggregateToView, "true")), defaults, auto),
		},
		{
			"aggregated rules are not extra",
			withMeta(aggregating(clusterRole("r", extra, get), match(AggregateToView, "true")), defaults, auto),
			withMeta(aggregating(clusterRole("r"), match(AggregateToView, "true")), defaults, auto),
			nil,
		},
		{
			"aggregation dropped when not wanted",
			withMeta(aggregating(clusterRole("r", getList), match("mine", "true")), defaults, auto), want,
			withMeta(clusterRole("r", getList), defaults, auto),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before *rbacv1.ClusterRole
			if tc.existing != nil {
				before = tc.existing.DeepCopy()
			}
			update, changed := ReconcileClusterRole(tc.existing, tc.want)
			if changed != (tc.update != nil) || !reflect.DeepEqual(update, tc.update) {
				t.Errorf("got %v %+v\nwant %+v", changed, update, tc.update)
			}
			if tc.existing != nil && !reflect.DeepEqual(before, tc.existing) {
				t.Error("existing modified")
			}
			if update != nil && update == tc.want {
				t.Error("update is want itself, not a copy")
			}
		})
	}

	// every bootstrap role reconciles onto itself without change, and
	// onto its aggregated self too
	for _, r := range bootstrapPolicy(nil).ClusterRoles {
		if u, changed := ReconcileClusterRole(r, bootstrapRole(t, r.Name)); changed {
			t.Errorf("%s: %+v", r.Name, u)
		}
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	auto := map[string]string{AutoUpdateAnnotation: "true"}
	defaults := map[string]string{BootstrappingLabel: BootstrappingValue}
	want := withMeta(crb("b", "r", groupSubject("g1"), groupSubject("g2")), defaults, auto)
	tests := []struct {
		name     string
		existing *rbacv1.ClusterRoleBinding
		update   *rbacv1.ClusterRoleBinding
		recreate bool
	}{
		{"missing: created", nil, want, false},
		{"autoupdate false: left alone", withMeta(crb("b", "other", userSubject("u")), defaults, map[string]string{AutoUpdateAnnotation: "false"}), nil, false},
		{"up to date", withMeta(crb("b", "r", groupSubject("g2"), userSubject("u"), groupSubject("g1")), defaults, auto), nil, false},
		{
			"missing subjects appended, extra kept",
			withMeta(crb("b", "r", userSubject("u"), groupSubject("g2")), defaults, auto),
			withMeta(crb("b", "r", userSubject("u"), groupSubject("g2"), groupSubject("g1")), defaults, auto), false,
		},
		{"other roleRef: recreated", withMeta(crb("b", "other", groupSubject("g1")), defaults, auto), want, true},
		{
			"no annotation: annotated",
			crb("b", "r", groupSubject("g1"), groupSubject("g2")),
			withMeta(crb("b", "r", groupSubject("g1"), groupSubject("g2")), defaults, auto), false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			update, recreate, changed := ReconcileClusterRoleBinding(tc.existing, want)
			if changed != (tc.update != nil) || recreate != tc.recreate || !reflect.DeepEqual(update, tc.update) {
				t.Errorf("got %v %v %+v\nwant %v %+v", changed, recreate, update, tc.recreate, tc.update)
			}
		})
	}
	for _, b := range ClusterRoleBindings() {
		if u, _, changed := ReconcileClusterRoleBinding(b, bootstrapBinding(t, b.Name)); changed {
			t.Errorf("%s: %+v", b.Name, u)
		}
	}
}
