package harness

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcessLifecycle(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "sleep.log")
	var n Node
	if n.Running() || n.Process().Status() != "never started" {
		t.Fatalf("a new Node: running %v, %q", n.Running(), n.Process().Status())
	}
	p, err := n.Start(Command{Bin: "/bin/sh", Args: []string{"-c", "echo up; exec sleep 60"}, Env: CleanEnv(), Dir: dir, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Start(Command{Bin: "/bin/true", Log: log}); err == nil {
		t.Error("a second Start while running succeeded")
	}
	waitFor(t, func() bool { return strings.Contains(Tail(log, 1), "up") })
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() || p.State() == nil || p.State().Success() {
		t.Errorf("after Kill: running %v, state %v", n.Running(), p.State())
	}
	if head := Tail(log, 2); !strings.Contains(head, "starting /bin/sh -c echo up") {
		t.Errorf("log does not say what started:\n%s", head)
	}

	p, err = n.Start(Command{Bin: "/bin/sh", Args: []string{"-c", "trap 'exit 0' TERM; sleep 60 & wait"}, Dir: dir, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the trap set
	if _, err := p.Stop(10 * time.Second); err != nil || p.State().ExitCode() != 0 {
		t.Errorf("Stop: %v, %s", err, p.Status())
	}
	_ = p.Signal(syscall.SIGKILL) // the sleep left in the group
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

func TestWaitReadyAndStatus(t *testing.T) {
	var ready bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			if !ready {
				ready = true
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
		case "/cluster/status":
			fmt.Fprint(w, `{"name":"n1","state":"leader","term":3,"appliedIndex":7}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	p, err := Start(Command{Bin: "/bin/sleep", Args: []string{"60"}, Log: filepath.Join(t.TempDir(), "log")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if _, err := WaitReady(srv.Client(), srv.URL, p, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := WaitReady(srv.Client(), srv.URL+"/nothing", nil, time.Second); !errors.Is(err, ErrExited) {
		t.Errorf("WaitReady without a process: %v, want ErrExited", err)
	}
	st, err := ClusterStatus(srv.Client(), srv.URL)
	if err != nil || st.Name != "n1" || st.Term != 3 || st.AppliedIndex != 7 {
		t.Fatalf("ClusterStatus: %+v %v", st, err)
	}
	nodes := []string{"a", "b", "c"}
	terms := map[string]uint64{"a": 2, "b": 5}
	l, ok := Leader(nodes, func(n string) (Status, error) {
		if n == "c" {
			return Status{}, os.ErrNotExist
		}
		return Status{State: "leader", Term: terms[n]}, nil
	})
	if !ok || l != "b" {
		t.Errorf("Leader: %q %v, want b", l, ok)
	}
	if _, ok := WaitLeader(nodes, func(string) (Status, error) { return Status{State: "follower"}, nil }, 100*time.Millisecond); ok {
		t.Error("WaitLeader found a leader among followers")
	}
}

func TestFreePortsAndEnv(t *testing.T) {
	t.Setenv("LEASEHOLD_API_ADDR", "x")
	for _, kv := range CleanEnv("A=b") {
		if strings.HasPrefix(kv, "LEASEHOLD_") {
			t.Errorf("CleanEnv kept %s", kv)
		}
	}
	ports := FreePorts(t, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 20000 || p >= 32000 || seen[p] || !PortFree(p) {
			t.Errorf("port %d of %v", p, ports)
		}
		seen[p] = true
	}
}
