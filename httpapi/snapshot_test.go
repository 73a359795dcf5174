package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/backup"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// noRules allows nothing: only system:masters passes the chain.
type noRules struct{}

func (noRules) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

func (noRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

// GET /cluster/snapshot is guarded like any path, served by any node once
// current, and a failure before the body is a Status.
func TestClusterSnapshot(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,u1,team\nroot-token,root,u0,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Config{TokenAuthFile: tokens})
	if err != nil {
		t.Fatal(err)
	}
	authz, err := auth.NewAuthorizer(auth.ModeRBAC, noRules{})
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.New(t, 3, testcluster.Options{API: func(_ string, cfg *httpapi.Config) {
		cfg.Authenticator, cfg.Authorizer = authn, authz
	}})
	get := func(method string, i int, token string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, c.Nodes[i].URL()+"/cluster/snapshot", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	l := c.Leader()
	req, _ := http.NewRequest("POST", c.Nodes[l].URL()+"/apis/coordination.k8s.io/v1/namespaces/default/leases",
		strings.NewReader(`{"metadata":{"name":"x"},"spec":{"holderIdentity":"h"}}`))
	req.Header.Set("Authorization", "Bearer root-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %v %v", resp, err)
	}
	resp.Body.Close()

	if resp, body := get("GET", l, ""); resp.StatusCode != 401 || !strings.Contains(string(body), `"reason":"Unauthorized"`) {
		t.Errorf("without credentials: %d %s", resp.StatusCode, body)
	}
	const forbidden = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"alice\" cannot get path \"/cluster/snapshot\"","reason":"Forbidden","details":{},"code":403}`
	if resp, body := get("GET", l, "alice-token"); resp.StatusCode != 403 || strings.TrimSpace(string(body)) != forbidden {
		t.Errorf("alice: %d %s", resp.StatusCode, body)
	}
	if resp, body := get("POST", l, "root-token"); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("POST: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	f := (l + 1) % 3
	resp, body := get("GET", f, "root-token")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("root on a follower: %d %v", resp.StatusCode, resp.Header)
	}
	path := filepath.Join(t.TempDir(), "b.snap")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := backup.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Node != c.Nodes[f].Name || sum.Objects["leases"] != 1 {
		t.Errorf("backup from %s: %+v", c.Nodes[f].Name, sum)
	}

	// Alone, a node cannot make its state current: 503 or 504, a Status.
	for i := range c.Nodes {
		if i != f {
			c.Stop(i)
		}
	}
	resp, body = get("GET", f, "root-token")
	if (resp.StatusCode != 503 && resp.StatusCode != 504) || !strings.Contains(string(body), `"kind":"Status"`) {
		t.Errorf("without a quorum: %d %s", resp.StatusCode, body)
	}
}
