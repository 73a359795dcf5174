package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Readyz is GET base+"/readyz" with c: the status code and the body.
func Readyz(c *http.Client, base string) (int, string, error) {
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// ErrExited is what WaitReady returns (wrapped) when the process exited
// before it was ready.
var ErrExited = errors.New("exited")

// WaitReady polls base+"/readyz" with c until it answers 200, for at most
// timeout, and returns how long it waited. It gives up as soon as p, the
// process serving it, is not running (nil: never started), with ErrExited.
func WaitReady(c *http.Client, base string, p *Process, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	last := "no answer yet"
	for {
		code, body, err := Readyz(c, base)
		if err == nil && code == http.StatusOK {
			return time.Since(start), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d %s", code, body)
		}
		if !p.Running() {
			return time.Since(start), fmt.Errorf("%w (%s) while waiting for /readyz; last /readyz: %s", ErrExited, p.Status(), last)
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("not ready after %v: last /readyz: %s", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Status is GET /cluster/status as docs/cli.md describes it.
type Status struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Leader *struct {
		Name     string `json:"name"`
		PeerAddr string `json:"peerAddr"`
	} `json:"leader"`
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	Members      []struct {
		Name     string `json:"name"`
		PeerAddr string `json:"peerAddr"`
		Suffrage string `json:"suffrage"`
	} `json:"members"`
}

// ClusterStatus is GET base+"/cluster/status" with c.
func ClusterStatus(c *http.Client, base string) (Status, error) {
	var st Status
	err := GetJSON(c, base+"/cluster/status", &st)
	return st, err
}

// GetJSON is GET url with c, its JSON answer (at most 1 MiB) decoded into
// v; an answer other than 200 is an error with its body.
func GetJSON(c *http.Client, url string, v any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", resp.Request.URL.Path, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %v: %s", resp.Request.URL.Path, err, body)
	}
	return nil
}

// Leader asks every node for its status and returns the one that reports
// itself leader with the highest term; ok is false when none does. A node
// status fails for is passed over: status fails for the nodes not to ask
// (not running, excluded).
func Leader[N any](nodes []N, status func(N) (Status, error)) (leader N, ok bool) {
	var term uint64
	for _, n := range nodes {
		st, err := status(n)
		if err != nil || st.State != "leader" {
			continue
		}
		if !ok || st.Term > term {
			leader, term, ok = n, st.Term, true
		}
	}
	return leader, ok
}

// WaitLeader polls Leader every 25 ms until there is one, for at most
// timeout.
func WaitLeader[N any](nodes []N, status func(N) (Status, error), timeout time.Duration) (N, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if l, ok := Leader(nodes, status); ok || time.Now().After(deadline) {
			return l, ok
		}
		time.Sleep(25 * time.Millisecond)
	}
}
