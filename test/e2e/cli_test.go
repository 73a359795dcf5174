package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/test/harness"
)

// runBinary runs the binary to completion (bounded) and returns its exit
// code, stdout and stderr.
func runBinary(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Path("leasehold"), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("leasehold %s did not exit within 20s (stderr: %s)", strings.Join(args, " "), stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run leasehold %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// assertUsageError checks for exit status 2 with a one-line reason on stderr
// that contains every word in mention.
func assertUsageError(t *testing.T, code int, stderr string, mention ...string) {
	t.Helper()
	if code != 2 {
		t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr)
	}
	line := strings.TrimRight(stderr, "\n")
	if line == "" || strings.Contains(line, "\n") {
		t.Errorf("stderr should be one line with the reason, got %q", stderr)
	}
	for _, m := range mention {
		if !strings.Contains(line, m) {
			t.Errorf("stderr %q does not mention %q", line, m)
		}
	}
}

func TestCLIHelpListsEveryFlag(t *testing.T) {
	code, stdout, stderr := runBinary(t, harness.CleanEnv(), "--help")
	if code != 0 {
		t.Fatalf("--help: exit status %d, want 0 (stderr %q)", code, stderr)
	}
	// The flags of docs/cli.md, and the ones these tests use.
	for _, f := range []string{
		"name", "data-dir", "api-addr", "peer-addr", "initial-cluster", "join", "log-level",
		"tls-cert-file", "tls-private-key-file", "client-ca-file", "token-auth-file",
		"raft-heartbeat-timeout", "snapshot-threshold", "snapshot-interval", "trailing-logs",
	} {
		if !strings.Contains(stdout, "--"+f+" ") && !strings.Contains(stdout, "--"+f+"\n") && !strings.Contains(stdout, "--"+f+"=") {
			t.Errorf("--help does not list --%s on stdout", f)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", stdout)
	}
}

func TestCLIUnknownFlagExits2(t *testing.T) {
	code, _, stderr := runBinary(t, harness.CleanEnv(), "--no-such-flag", "x")
	assertUsageError(t, code, stderr, "no-such-flag")
}

func TestCLIURLAsAPIAddrExits2(t *testing.T) {
	code, _, stderr := runBinary(t, harness.CleanEnv(), "--api-addr", "http://x")
	assertUsageError(t, code, stderr, "--api-addr")
}

func TestCLIBadEnvValueExits2(t *testing.T) {
	code, _, stderr := runBinary(t, harness.CleanEnv("LEASEHOLD_API_ADDR=http://x"))
	assertUsageError(t, code, stderr, "LEASEHOLD_API_ADDR")
}

// singleNode runs one node (no --initial-cluster: it is its own cluster)
// in its own process group, stops it with SIGTERM at the end (exit 0 within
// 10 s) and prints its log when the test failed.
type singleNode struct {
	t       *testing.T
	proc    *harness.Process
	logPath string
}

func startSingle(t *testing.T, dir string, env []string, args ...string) *singleNode {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "node.log")
	p, err := harness.Start(harness.Command{Bin: bins.Path("leasehold"), Args: args, Env: env, Dir: dir, Log: logPath})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("--- node log:\n%s", harness.Tail(logPath, 40))
		}
	})
	return &singleNode{t: t, proc: p, logPath: logPath}
}

// waitReady polls /readyz on addr until 200 (bounded); it fails if the
// process exits first.
func (s *singleNode) waitReady(addr string) {
	s.t.Helper()
	if !s.waitReadyOrExit(addr) {
		s.t.Fatalf("node exited (%s) before %s was ready", s.proc.Status(), addr)
	}
}

// waitReadyOrExit is waitReady that returns false when the process exited
// before it was ready.
func (s *singleNode) waitReadyOrExit(addr string) bool {
	s.t.Helper()
	base, c := apiURL(addr)
	_, err := harness.WaitReady(c, base, s.proc, 30*time.Second)
	if errors.Is(err, harness.ErrExited) {
		return false
	}
	if err != nil {
		s.t.Fatalf("%s %v", addr, err)
	}
	return true
}

// stop sends SIGTERM and expects exit status 0 within 10 s.
func (s *singleNode) stop() {
	s.t.Helper()
	if _, err := s.proc.Stop(10 * time.Second); err != nil {
		s.t.Fatalf("node: %v", err)
	}
	if code := s.proc.State().ExitCode(); code != 0 {
		s.t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
}

// writeAndRead creates a Lease through the API at addr and reads it back.
func writeAndRead(t *testing.T, addr string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(clientConfig(addr, true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder := "cli-test"
	created, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "cli"},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through %s: %v", addr, err)
	}
	got, err := cs.CoordinationV1().Leases("default").Get(ctx, "cli", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through %s: %v", addr, err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("read back resourceVersion %s, created %s", got.ResourceVersion, created.ResourceVersion)
	}
}

// assertNotListening fails if something accepts connections on addr.
func assertNotListening(t *testing.T, addr string) {
	t.Helper()
	if resp, err := httpc.Get("http://" + addr + "/livez"); err == nil {
		resp.Body.Close()
		t.Errorf("something answers on %s, which the node should not use", addr)
	}
}

func TestCLIEnvAPIAddrAndFlagWins(t *testing.T) {
	ports := harness.FreePorts(t, 4)
	envAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	flagAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])

	t.Run("env", func(t *testing.T) {
		dir := t.TempDir()
		env := harness.CleanEnv("LEASEHOLD_API_ADDR="+envAddr, "LEASEHOLD_NO_SUCH_SETTING=ignored")
		n := startSingle(t, dir, env,
			"--name", "envnode", "--data-dir", filepath.Join(dir, "data"),
			"--peer-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]))
		n.waitReady(envAddr)
		st, err := getStatus(envAddr)
		if err != nil || st.Name != "envnode" {
			t.Fatalf("status on %s: %+v %v; want name envnode", envAddr, st, err)
		}
		writeAndRead(t, envAddr)
		n.stop()
	})

	t.Run("flag wins", func(t *testing.T) {
		dir := t.TempDir()
		env := harness.CleanEnv("LEASEHOLD_API_ADDR=" + envAddr)
		n := startSingle(t, dir, env,
			"--name", "flagnode", "--data-dir", filepath.Join(dir, "data"),
			"--api-addr", flagAddr,
			"--peer-addr", fmt.Sprintf("127.0.0.1:%d", ports[3]))
		n.waitReady(flagAddr)
		st, err := getStatus(flagAddr)
		if err != nil || st.Name != "flagnode" {
			t.Fatalf("status on %s: %+v %v; want name flagnode", flagAddr, st, err)
		}
		assertNotListening(t, envAddr)
		n.stop()
	})
}

// With no flags a node serves on the default addresses. Where one of them
// is already taken (another node or service on this machine), the same
// test checks it the other way: the node tries that very address, says so
// and exits non-zero.
func TestCLINoFlagsServesOnDefaults(t *testing.T) {
	const api, peer = 7001, 8001
	var taken []int
	for _, p := range []int{api, peer} {
		if !harness.PortFree(p) {
			taken = append(taken, p)
		}
	}
	if len(taken) > 0 {
		// The node names the first it tries; with both taken, either.
		n := startSingle(t, t.TempDir(), harness.CleanEnv())
		expectRefusedDefault(t, n, taken...)
		return
	}
	dir := t.TempDir()
	n := startSingle(t, dir, harness.CleanEnv())
	addr := fmt.Sprintf("127.0.0.1:%d", api)
	if !n.waitReadyOrExit(addr) {
		// Another process took a default port between the check above and
		// the node's listen: the node must have tried it.
		expectRefusedDefault(t, n, api, peer)
		return
	}
	st, err := getStatus(addr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "node1" || st.State != "leader" || len(st.Members) != 1 {
		t.Errorf("status %+v, want node1 alone and leader", st)
	}
	writeAndRead(t, addr)
	if fi, err := os.Stat(filepath.Join(dir, "data", "node1")); err != nil || !fi.IsDir() {
		t.Errorf("no data in ./data/node1 of the working directory: %v", err)
	}
	n.stop()
}

// expectRefusedDefault checks that n exits non-zero within 30 s because one
// of the default ports was in use, and that its log names that address.
func expectRefusedDefault(t *testing.T, n *singleNode, ports ...int) {
	t.Helper()
	select {
	case <-n.proc.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("node with no flags still running 30s after start although a default port (%v) is taken", ports)
	}
	if n.proc.State().Success() {
		t.Fatalf("node with no flags exited with status 0 although a default port (%v) is taken", ports)
	}
	log := harness.Tail(n.logPath, 40)
	for _, p := range ports {
		if strings.Contains(log, fmt.Sprintf("127.0.0.1:%d", p)) && strings.Contains(log, "address already in use") {
			return
		}
	}
	t.Fatalf("node with no flags exited (%s) without naming a taken default address %v:\n%s", n.proc.State(), ports, log)
}

// Unless GOGC says otherwise, a node collects garbage once its heap has
// grown by 75 % of what was live, or by 64 MiB while that is more: a fresh
// node's live heap is a few tens of MB, so its GC percent is above 75 and
// its heap goal at least 64 MiB. The Go collector's go_gc_gogc_percent and
// go_memstats_next_gc_bytes report the runtime's current setting and goal.
func TestGCPercentDefaultAndGOGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		// ok judges the GC percent and heap goal.
		ok func(percent, goal float64) bool
	}{
		{"default", nil, func(p, g float64) bool { return p > 75 && g >= 64<<20 }},
		{"GOGC set", []string{"GOGC=120"}, func(p, _ float64) bool { return p == 120 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := harness.FreePorts(t, 2)
			dir := t.TempDir()
			var env []string
			for _, kv := range harness.CleanEnv() {
				if !strings.HasPrefix(kv, "GOGC=") { // not the developer's own
					env = append(env, kv)
				}
			}
			env = append(env, tc.env...)
			addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
			n := startSingle(t, dir, env, "--name", "gc", "--data-dir", filepath.Join(dir, "data"),
				"--api-addr", addr, "--peer-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]))
			n.waitReady(addr)
			// The setting follows each collection; a starting node collects
			// several times, the last of them maybe after it is ready.
			var percent, goal float64
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				percent = metricFloat(t, addr, "go_gc_gogc_percent")
				goal = metricFloat(t, addr, "go_memstats_next_gc_bytes")
				if tc.ok(percent, goal) || time.Now().After(deadline) {
					break
				}
			}
			if !tc.ok(percent, goal) {
				t.Errorf("go_gc_gogc_percent %v, go_memstats_next_gc_bytes %v", percent, goal)
			}
			n.stop()
		})
	}
}

// metricFloat is metricValue as a number.
func metricFloat(t *testing.T, addr, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(metricValue(t, addr, name), 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// metricValue is the value of the unlabelled metric name on addr's /metrics.
func metricValue(t *testing.T, addr, name string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(body.String()) {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return ""
}
