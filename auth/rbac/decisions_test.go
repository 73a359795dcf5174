package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// cachingPolicy is a StaticPolicy with Decisions, counting its walks.
type cachingPolicy struct {
	StaticPolicy
	decisions Decisions
	walks     int
}

func (p *cachingPolicy) Decisions() *Decisions { return &p.decisions }

func (p *cachingPolicy) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	p.walks++
	return p.StaticPolicy.ListClusterRoleBindings()
}

// TestDecisionsTellEveryFieldApart: alice may get Lease "a" in "ns" and
// her group may get /healthz; each question differing from an allowed one
// in a single field is denied, asked after the allowed one was cached and
// again after, and every answer is the uncached one.
func TestDecisionsTellEveryFieldApart(t *testing.T) {
	static := StaticPolicy{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("get-a", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")}),
			clusterRole("health", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz")}),
		},
		RoleBindings:        []*rbacv1.RoleBinding{rb("ns", "alice-get-a", "ClusterRole", "get-a", userSubject("alice"))},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("dev-health", "health", groupSubject("dev"))},
	}
	p := &cachingPolicy{StaticPolicy: static}
	cached, uncached := New(func() Policy { return p }), New(func() Policy { return &static })
	aliceDev := who("alice", "dev")
	allowed := []authorizer.AttributesRecord{
		res(aliceDev, "get", "coordination.k8s.io", "leases", "", "ns", "a"),
		nonRes(aliceDev, "get", "/healthz"),
		nonRes(who("alice", "ops", "dev"), "get", "/healthz"),
	}
	denied := []authorizer.AttributesRecord{
		res(who("bob", "dev"), "get", "coordination.k8s.io", "leases", "", "ns", "a"),
		res(aliceDev, "update", "coordination.k8s.io", "leases", "", "ns", "a"),
		res(aliceDev, "get", "coordination.k8s.io", "leases", "", "other", "a"),
		res(aliceDev, "get", "", "leases", "", "ns", "a"),
		res(aliceDev, "get", "coordination.k8s.io", "leasecandidates", "", "ns", "a"),
		res(aliceDev, "get", "coordination.k8s.io", "leases", "status", "ns", "a"),
		res(aliceDev, "get", "coordination.k8s.io", "leases", "", "ns", "b"),
		nonRes(who("alice", "ops"), "get", "/healthz"),
		nonRes(who("alice", "ops", "dev"), "get", "/livez"),
		nonRes(aliceDev, "post", "/healthz"),
		nonRes(who("alice", "ops\ndev"), "get", "/healthz"), // one group, not ops and dev
		nonRes(who("alice\x01dev"), "get", "/healthz"),
		nonRes(who("alice", "dev "), "get", "/healthz"),
		{User: aliceDev, Verb: "get", Path: "/healthz", ResourceRequest: true}, // a resource request with the allowed path
	}
	ask := func(round string, a authorizer.AttributesRecord, want authorizer.Decision) {
		t.Helper()
		d, reason, err := cached.Authorize(context.Background(), a)
		ud, ureason, uerr := uncached.Authorize(context.Background(), a)
		if d != want || d != ud || reason != ureason || err != uerr {
			t.Errorf("%s: %+v: %v %q %v, uncached %v %q %v, want %v", round, a, d, reason, err, ud, ureason, uerr, want)
		}
	}
	for _, round := range []string{"first", "cached"} {
		for _, a := range allowed {
			ask(round, a, authorizer.DecisionAllow)
		}
		for _, a := range denied {
			ask(round, a, authorizer.DecisionNoOpinion)
		}
	}
	if n := p.decisions.Len(); n != len(allowed)+len(denied) {
		t.Errorf("%d decisions kept, want %d", n, len(allowed)+len(denied))
	}
	walks := p.walks
	for _, a := range append(allowed, denied...) {
		_, _, _ = cached.Authorize(context.Background(), a)
	}
	if p.walks != walks {
		t.Errorf("asked again, the policy was walked %d times, want 0", p.walks-walks)
	}
}

// TestDecisionsAreBounded: a client asking about ever new names does not
// grow the cache past maxDecisions, and answers stay right after it starts
// again.
func TestDecisionsAreBounded(t *testing.T) {
	p := &cachingPolicy{StaticPolicy: StaticPolicy{
		ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("get-a", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l("coordination.k8s.io"), Resources: l("leases"), ResourceNames: l("a")})},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{crb("alice", "get-a", userSubject("alice"))},
	}}
	a := New(func() Policy { return p })
	alice := &user.DefaultInfo{Name: "alice"}
	for i := range maxDecisions + 10 {
		d, _, _ := a.Authorize(context.Background(), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", fmt.Sprint("n", i)))
		if d != authorizer.DecisionNoOpinion {
			t.Fatalf("lease n%d allowed", i)
		}
		if n := p.decisions.Len(); n > maxDecisions {
			t.Fatalf("%d decisions kept, bound %d", n, maxDecisions)
		}
	}
	if d, _, _ := a.Authorize(context.Background(), res(alice, "get", "coordination.k8s.io", "leases", "", "ns", "a")); d != authorizer.DecisionAllow {
		t.Errorf("lease a: %v, want allowed", d)
	}
}
