package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// joinAuthorizer lets only the user named allowed POST /cluster/join,
// nobody impersonate, everything else through, and records who each node
// judged for a join.
type joinAuthorizer struct {
	node    string
	allowed string
	mu      *sync.Mutex
	seen    map[string][]string // node → users judged for /cluster/join
}

func (a joinAuthorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetVerb() == "impersonate" {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if attrs.GetPath() != "/cluster/join" {
		return authorizer.DecisionAllow, "", nil
	}
	a.mu.Lock()
	a.seen[a.node] = append(a.seen[a.node], attrs.GetUser().GetName())
	a.mu.Unlock()
	if attrs.GetUser().GetName() == a.allowed {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (joinAuthorizer) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

// A write that a follower forwards to the leader is authorized with the
// identity the follower authenticated, carried over the peer channel: the
// leader judges the sender, and a header the client set changes nothing.
func TestForwardedWriteCarriesIdentity(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("alice-token,alice,u1\nbob-token,bob,u2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	c := testcluster.New(t, 3, testcluster.Options{API: func(name string, cfg *httpapi.Config) {
		authn, err := auth.NewAuthenticator(auth.Config{TokenAuthFile: tokens})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Authenticator = authn
		cfg.Authorizer = joinAuthorizer{node: name, allowed: "alice", mu: &mu, seen: seen}
	}})
	leader := c.Nodes[c.Leader()].Name
	f := c.Nodes[c.Follower()]

	join := func(token string, header map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.URL()+"/cluster/join", strings.NewReader(`{"name":"n9","peerAddr":"127.0.0.1:9"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	members := func() int { return len(c.Nodes[c.Leader()].Raft().Status().Members) }

	// bob is refused by the follower, whatever headers he adds; the leader
	// never hears of it.
	code, body := join("bob-token", map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:masters"})
	if code != 403 || !strings.Contains(body, `forbidden: User \"bob\" cannot post path \"/cluster/join\"`) {
		t.Fatalf("bob: %d %s", code, body)
	}
	// Impersonation is judged, and bob may not impersonate.
	code, body = join("bob-token", map[string]string{"Impersonate-User": "alice"})
	if code != 403 || !strings.Contains(body, `User \"bob\" cannot impersonate resource \"users\"`) {
		t.Fatalf("bob as alice: %d %s", code, body)
	}
	mu.Lock()
	if got := seen[leader]; len(got) != 0 {
		t.Errorf("the leader judged a join it was never sent: %v", got)
	}
	mu.Unlock()
	if n := members(); n != 3 {
		t.Fatalf("a refused join changed the members: %d", n)
	}

	// alice is allowed by the follower, and the leader judges alice too.
	if code, body := join("alice-token", nil); code != 200 {
		t.Fatalf("alice: %d %s", code, body)
	}
	mu.Lock()
	if got := seen[leader]; len(got) != 1 || got[0] != "alice" {
		t.Errorf("the leader judged %v for the forwarded join, want [alice]", got)
	}
	if got := seen[f.Name]; len(got) != 2 || got[0] != "bob" || got[1] != "alice" {
		t.Errorf("the follower judged %v, want [bob alice]", got)
	}
	mu.Unlock()
	if n := members(); n != 4 {
		t.Errorf("alice's join: %d members, want 4", n)
	}
}

// What a peer forwards is checked as a client's request is: bytes that
// are not a forwarded request are a 400, a request with no identity a 401,
// and neither changes anything.
func TestForwardedRequestBadInput(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Nodes[c.Follower()].Raft()
	members := func() int { return len(c.Nodes[c.Leader()].Raft().Status().Members) }
	for _, tc := range []struct {
		name string
		req  string
		code int
		body string
	}{
		{"not JSON", "\x00\x01garbage", 400, "invalid character"},
		{"a bad method", `{"Method":"GE T","RequestURI":"/cluster/join"}`, 400, "invalid method"},
		{"no identity", `{"Method":"POST","RequestURI":"/cluster/join","Body":"eyJuYW1lIjoibjkiLCJwZWVyQWRkciI6IjEyNy4wLjAuMTo5In0="}`, 401, `"reason":"Unauthorized"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			answer, err := f.Forward(ctx, []byte(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			var resp struct {
				Status int
				Body   []byte
			}
			if err := json.Unmarshal(answer, &resp); err != nil {
				t.Fatalf("answer %q: %v", answer, err)
			}
			if resp.Status != tc.code || !strings.Contains(string(resp.Body), tc.body) {
				t.Errorf("answer %d %s, want %d with %q", resp.Status, resp.Body, tc.code, tc.body)
			}
			if n := members(); n != 3 {
				t.Errorf("%d members after the refused request, want 3", n)
			}
		})
	}
}
