package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ready means ready (ROBUSTNESS item 8): a client that polls /readyz on
// each node of a new cluster until 200, then at once reads clusterrole
// cluster-admin as the admin and asks who it is as a user without groups
// (allowed by the bootstrap binding system:basic-user), is never refused:
// /readyz waits for the bootstrap RBAC policy, as kube-apiserver's
// poststarthook/rbac/bootstrap-roles does. Fresh clusters, then one
// restarted as a whole.
func TestReadyMeansReady(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	mustWrite(t, tokens, "admin-token,admin,u-admin,system:masters\nbob-token,bob,u-bob\n")
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(method, url, token string, body []byte) (int, string, error) {
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
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	askWhenReady := func(n *procNode) error {
		base := "http://" + n.apiAddr
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body, err := send("GET", base+"/readyz", "", nil)
			if err == nil && code == 200 {
				break
			}
			if time.Now().After(deadline) || !n.Running() {
				return fmt.Errorf("/readyz not 200 within 30s (running: %v): %d %q %v", n.Running(), code, body, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if code, body, err := send("GET", base+"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin", "admin-token", nil); err != nil || code != 200 {
			return fmt.Errorf("ready, then GET clusterrole cluster-admin: %d %s %v", code, body, err)
		}
		review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
		if code, body, err := send("POST", base+"/apis/authentication.k8s.io/v1/selfsubjectreviews", "bob-token", review); err != nil || code != 201 {
			return fmt.Errorf("ready, then POST selfsubjectreview as bob: %d %s %v", code, body, err)
		}
		if code, body, err := send("GET", base+"/readyz?verbose", "", nil); err != nil || code != 200 || !strings.Contains(body, "[+]poststarthook/rbac/bootstrap-roles ok\n") {
			return fmt.Errorf("ready, then /readyz?verbose: %d %q %v, want the bootstrap-roles check passed", code, body, err)
		}
		return nil
	}
	askAll := func(pc *procCluster, round string) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, len(pc.nodes))
		for i, n := range pc.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = askWhenReady(n)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s, %s: %v", round, pc.nodes[i].name, err)
			}
		}
	}

	var pc *procCluster
	for round := range 2 {
		pc = startProcCluster(t, "", nil, nil, "--token-auth-file", tokens)
		askAll(pc, fmt.Sprintf("new cluster %d", round+1))
		if round == 0 {
			pc.cleanup()
		}
	}
	for _, n := range pc.nodes {
		pc.kill(n.name)
	}
	for _, n := range pc.nodes {
		pc.restart(n.name)
	}
	askAll(pc, "restarted cluster")
}
