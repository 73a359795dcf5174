package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// BenchmarkAuthorizeRenewal is what RBAC adds to a Lease renewal: the
// bootstrap policy, 50 teams' bindings in the namespace, and the renewing
// component bound by the last of them (the longest walk). Against the
// store's policy the question is answered from its Decisions ("cached").
func BenchmarkAuthorizeRenewal(b *testing.B) {
	b.Run("walk", func(b *testing.B) { benchmarkAuthorizeRenewal(b, false) })
	b.Run("cached", func(b *testing.B) { benchmarkAuthorizeRenewal(b, true) })
}

func benchmarkAuthorizeRenewal(b *testing.B, cached bool) {
	p := &StaticPolicy{ClusterRoles: ClusterRoles(), ClusterRoleBindings: ClusterRoleBindings()}
	for i := range 50 {
		p.RoleBindings = append(p.RoleBindings, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("holders-%02d", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: LeaseHolder},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: fmt.Sprintf("component-%02d", i)}},
		})
	}
	var policy Policy = p
	if cached {
		policy = &cachingPolicy{StaticPolicy: *p}
	}
	a := New(func() Policy { return policy })
	attrs := authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: "system:serviceaccount:team:component-49", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"}},
		Verb: "update", Namespace: "team", APIGroup: "coordination.k8s.io", APIVersion: "v1", Resource: "leases", Name: "lock",
		ResourceRequest: true,
	}
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := a.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow {
			b.Fatal("not allowed")
		}
	}
}
