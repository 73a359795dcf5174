package registry_test

import (
	"fmt"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/registry"
)

// TestRBACPolicyFollowsChanges: the policy a request reads is the applied
// state's after every create, update and delete of an RBAC object, though
// it is gathered once per change; Lease writes keep it.
func TestRBACPolicyFollowsChanges(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	s := registry.New(c.Nodes[0].Raft())
	ctx := wtCtx(t)
	names := func(bs []*rbacv1.RoleBinding) string {
		out := ""
		for _, b := range bs {
			out += b.Name + ":" + b.RoleRef.Name + " "
		}
		return out
	}
	check := func(step, want string) {
		t.Helper()
		if got := names(s.RBACPolicy().ListRoleBindings("team")); got != want {
			t.Errorf("%s: bindings %q, want %q", step, got, want)
		}
	}
	check("empty", "")
	rb := func(name, role string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}
	}
	for _, n := range []string{"b", "a"} {
		if _, err := s.Create(ctx, registry.RoleBindings, rb(n, "view"), registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check("created", "a:view b:view ")
	before := s.RBACPolicy()
	for i := range 3 {
		l := wtNewLease("team", fmt.Sprint("l", i), "h", "")
		if _, err := s.Create(ctx, registry.Leases, l, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if s.RBACPolicy() != before {
		t.Error("Lease writes made the policy be gathered again")
	}
	if _, err := s.Delete(ctx, registry.RoleBindings, "team", "b", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	check("deleted", "a:view ")
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "holder"}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"update"}, APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
	}}}
	created, err := s.Create(ctx, registry.ClusterRoles, cr, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s.RBACPolicy().GetClusterRole("holder"); !ok || got.Rules[0].Verbs[0] != "update" {
		t.Errorf("created ClusterRole: %v, %v", got, ok)
	}
	cr = created.(*rbacv1.ClusterRole).DeepCopy()
	cr.Rules[0].Verbs = []string{"get"}
	if _, _, err := s.Update(ctx, registry.ClusterRoles, "", "holder", cr, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.RBACPolicy().GetClusterRole("holder"); !ok || got.Rules[0].Verbs[0] != "get" {
		t.Errorf("updated ClusterRole: %v, %v", got, ok)
	}
}

// TestRBACDecisionsEndWithTheirPolicy: a decision the authorizer kept is
// not given once the policy changed — a revoked binding denies at once,
// and a new one allows — while Lease writes keep them.
func TestRBACDecisionsEndWithTheirPolicy(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	s := registry.New(c.Nodes[0].Raft())
	ctx := wtCtx(t)
	a := rbac.New(s.RBACPolicy)
	renew := authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: "alice"}, Verb: "update", Namespace: "team", APIGroup: coordinationv1.GroupName,
		APIVersion: "v1", Resource: "leases", Name: "lock", ResourceRequest: true,
	}
	decide := func(step string, want authorizer.Decision) {
		t.Helper()
		for range 2 { // the second from the kept decision
			if d, reason, _ := a.Authorize(ctx, renew); d != want {
				t.Fatalf("%s: %v (%q), want %v", step, d, reason, want)
			}
		}
	}
	decide("no binding", authorizer.DecisionNoOpinion)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "holder"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}
	if _, err := s.Create(ctx, registry.RoleBindings, binding, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	decide("binding to a missing role", authorizer.DecisionNoOpinion)
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "holder"}, Rules: []rbacv1.PolicyRule{{
		Verbs: []string{"update"}, APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
	}}}
	if _, err := s.Create(ctx, registry.ClusterRoles, cr, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	decide("role created", authorizer.DecisionAllow)
	kept := s.RBACPolicy().(rbac.CachingPolicy).Decisions().Len()
	if _, err := s.Create(ctx, registry.Leases, wtNewLease("team", "lock", "h", ""), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := s.RBACPolicy().(rbac.CachingPolicy).Decisions().Len(); n != kept || n == 0 {
		t.Errorf("after a Lease write %d decisions kept, want %d (not 0)", n, kept)
	}
	if _, err := s.Delete(ctx, registry.RoleBindings, "team", "alice", registry.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	decide("binding revoked", authorizer.DecisionNoOpinion)
}
