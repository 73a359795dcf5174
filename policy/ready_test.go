package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/policy"
	"github.com/leasehold/leasehold/registry"
)

// bootstrapped is the policy as the leader leaves it: every bootstrap
// object, the aggregated roles with their rules.
func bootstrapped() *rbac.StaticPolicy {
	p := &rbac.StaticPolicy{ClusterRoles: rbac.ClusterRoles(), ClusterRoleBindings: rbac.ClusterRoleBindings()}
	for _, u := range rbac.AggregationUpdates(p.ClusterRoles) {
		for i, r := range p.ClusterRoles {
			if r.Name == u.Name {
				p.ClusterRoles[i] = u
			}
		}
	}
	return p
}

func TestBootstrapPending(t *testing.T) {
	without := func(p *rbac.StaticPolicy, name string) *rbac.StaticPolicy {
		var roles []*rbacv1.ClusterRole
		for _, r := range p.ClusterRoles {
			if r.Name != name {
				roles = append(roles, r)
			}
		}
		p.ClusterRoles = roles
		return p
	}
	edit := func(f func(p *rbac.StaticPolicy)) *rbac.StaticPolicy {
		p := bootstrapped()
		f(p)
		return p
	}
	role := func(p *rbac.StaticPolicy, name string) *rbacv1.ClusterRole {
		for _, r := range p.ClusterRoles {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no clusterrole %s", name)
		return nil
	}
	const prefix = "the bootstrap RBAC policy is not in place yet: "
	for _, tc := range []struct {
		name string
		p    rbac.Policy
		want string
	}{
		{"nothing", &rbac.StaticPolicy{}, prefix + "clusterrole cluster-admin does not exist"},
		{"all of it", bootstrapped(), ""},
		{"a role missing", without(bootstrapped(), rbac.LeaseHolder), prefix + "clusterrole " + rbac.LeaseHolder + " does not exist"},
		{"a binding missing", edit(func(p *rbac.StaticPolicy) {
			p.ClusterRoleBindings = p.ClusterRoleBindings[:len(p.ClusterRoleBindings)-1]
		}),
			prefix + "clusterrolebinding system:public-info-viewer does not exist"},
		{"a subject missing", edit(func(p *rbac.StaticPolicy) { p.ClusterRoleBindings[0].Subjects = nil }),
			prefix + "clusterrolebinding cluster-admin is not up to date"},
		{"a rule missing", edit(func(p *rbac.StaticPolicy) { role(p, "system:basic-user").Rules = nil }),
			prefix + "clusterrole system:basic-user is not up to date"},
		{"not aggregated yet", edit(func(p *rbac.StaticPolicy) { role(p, "edit").Rules = nil }),
			prefix + "clusterrole edit lacks its aggregated rules"},
		{"rules a user added", edit(func(p *rbac.StaticPolicy) {
			r := role(p, "system:basic-user")
			r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/mine"}})
		}), ""},
		{"autoupdate=false, rules removed", edit(func(p *rbac.StaticPolicy) {
			r := role(p, "system:monitoring")
			r.Annotations[rbac.AutoUpdateAnnotation] = "false"
			r.Rules = r.Rules[:1]
		}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.BootstrapPending(tc.p); got != tc.want {
				t.Errorf("BootstrapPending = %q, want %q", got, tc.want)
			}
		})
	}
}

// secured makes every member of an in-process cluster authenticate the
// tokens admin-token (system:masters) and alice-token (no group), authorize
// with RBAC, and run the policy controller, as cmd/leasehold wires them.
// The controllers stop at the end of the test.
func secured(t *testing.T, opts testcluster.Options) testcluster.Options {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("admin-token,admin,u-admin,system:masters\nalice-token,alice,u-alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Config{TokenAuthFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.API = func(_ string, cfg *httpapi.Config) {
		authz, err := auth.NewAuthorizer(auth.ModeRBAC, rbac.New(cfg.Store.RBACPolicy))
		if err != nil {
			t.Fatal(err) // New and Restart call this on the test's goroutine
		}
		cfg.Authenticator, cfg.Authorizer = authn, authz
		cfg.Store.Admit = policy.Admit(authz, cfg.Store)
		go policy.NewController(cfg.Store, cfg.Node, 5*time.Second, nil).Run(ctx)
	}
	return opts
}

// send makes one request as the holder of token and returns its status
// code and body.
func send(method, url, token string, body []byte) (int, string, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// askWhenReady polls base's /readyz until 200, then at once reads
// clusterrole cluster-admin as the admin and asks who alice is: what a
// client that waits for /readyz does first. It returns what went wrong.
func askWhenReady(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		code, body, err := send(http.MethodGet, base+"/readyz", "", nil)
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not 200 within %v: %d %q %v", timeout, code, body, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body, err := send(http.MethodGet, base+"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin", "admin-token", nil); err != nil || code != http.StatusOK {
		return fmt.Errorf("ready, then GET clusterrole cluster-admin: %d %s %v", code, body, err)
	}
	review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if code, body, err := send(http.MethodPost, base+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "alice-token", review); err != nil || code != http.StatusCreated {
		return fmt.Errorf("ready, then POST selfsubjectreview as alice: %d %s %v", code, body, err)
	}
	return nil
}

// askAllWhenReady runs askWhenReady on every running member at once.
func askAllWhenReady(t *testing.T, c *testcluster.Cluster, round string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = askWhenReady(n.URL(), 30*time.Second)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s, %s: %v", round, c.Nodes[i].Name, err)
		}
	}
}

// TestReadyz_BootstrapRoles: a client that polls /readyz on each member
// of a new cluster, leader or follower, and asks at once is never refused
// by a bootstrap role that is about to exist: not for fresh clusters, not
// after the whole cluster restarts.
func TestReadyz_BootstrapRoles(t *testing.T) {
	for round := range 3 {
		c := testcluster.New(t, 3, secured(t, testcluster.Options{NoWait: true}))
		askAllWhenReady(t, c, fmt.Sprintf("new cluster %d", round+1))
		if round < 2 {
			for i := range c.Nodes {
				c.Stop(i)
			}
			continue
		}
		for i := range c.Nodes {
			c.Stop(i)
		}
		for i := range c.Nodes {
			c.Restart(i)
		}
		askAllWhenReady(t, c, "restarted cluster")
	}
}

// TestReadyz_BootstrapRolesCheck: until the node's state holds the
// bootstrap policy, /readyz is 503 and says why, and ?verbose names the
// check as kube-apiserver does; once the leader has written it, every node
// is ready and lists the check as passed.
func TestReadyz_BootstrapRolesCheck(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	u := c.Nodes[f].URL()
	// The checks are in place, no controller runs yet: nobody writes the
	// policy.
	controllers := make([]*policy.Controller, len(c.Nodes))
	for i, n := range c.Nodes {
		controllers[i] = policy.NewController(registry.New(n.Raft()), n.Raft(), 5*time.Second, nil)
	}
	const why = "the bootstrap RBAC policy is not in place yet: clusterrole cluster-admin does not exist"
	for _, tc := range []struct{ path, body string }{
		{"/readyz", "not ready: " + why + "\n"},
		{"/healthz", "not ready: " + why + "\n"},
		{"/readyz?verbose", "[+]ping ok\n[+]disk ok\n[+]leader ok\n[-]" + policy.BootstrapRolesCheck + " failed: " + why + "\nreadyz check failed\n"},
		{"/readyz?exclude=" + policy.BootstrapRolesCheck, "ok"},
	} {
		code, body, err := send(http.MethodGet, u+tc.path, "", nil)
		want := http.StatusServiceUnavailable
		if strings.Contains(tc.path, "exclude") {
			want = http.StatusOK
		}
		if err != nil || code != want || body != tc.body {
			t.Errorf("%s before the policy: %d %q %v, want %d %q", tc.path, code, body, err, want, tc.body)
		}
	}
	if ok, _ := c.Nodes[f].Raft().Ready(); ok {
		t.Error("Node.Ready before the policy: true")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, ctl := range controllers {
		go ctl.Run(ctx)
	}
	c.WaitReady()
	for i, n := range c.Nodes {
		code, body, err := send(http.MethodGet, n.URL()+"/readyz?verbose", "", nil)
		want := "[+]ping ok\n[+]disk ok\n[+]leader ok\n[+]" + policy.BootstrapRolesCheck + " ok\nreadyz check passed\n"
		if err != nil || code != http.StatusOK || body != want {
			t.Errorf("n%d /readyz?verbose with the policy: %d %q %v, want 200 %q", i+1, code, body, err, want)
		}
		// The check by its name, slashes and all, as kube-apiserver's.
		if code, body, err := send(http.MethodGet, n.URL()+"/readyz/"+policy.BootstrapRolesCheck, "", nil); err != nil || code != http.StatusOK || body != "ok" {
			t.Errorf("n%d /readyz/%s: %d %q %v, want 200 ok", i+1, policy.BootstrapRolesCheck, code, body, err)
		}
	}
}
