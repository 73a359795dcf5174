// Package e2e runs the real leasehold binary as separate processes and talks
// to it only through the command-line contract (docs/cli.md): flags,
// environment, signals, the health and status endpoints, the Kubernetes API
// and scripts/cluster.sh. Everything listens on 127.0.0.1.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// binPath is the leasehold binary built once by TestMain (leaseholdctl
// beside it); repoRoot is the
// directory holding go.mod.
var binPath, repoRoot string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := findRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = root
	tmp, err := os.MkdirTemp("", "leasehold-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binPath = filepath.Join(tmp, "leasehold")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// leaseholdctl beside it: scripts/cluster.sh makes its certificates
	// with the leaseholdctl next to the leasehold it runs.
	for _, cmd := range []string{"leasehold", "leaseholdctl"} {
		build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(tmp, cmd), "./cmd/"+cmd)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/%s in %s: %v\n%s", cmd, repoRoot, err, out)
			return 1
		}
	}
	return m.Run()
}

// findRepoRoot walks up from the working directory to go.mod, falling back
// to `go env GOMOD`.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("no go.mod above %s and go env GOMOD failed: %v", dir, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("no go.mod above %s", dir)
	}
	return filepath.Dir(gomod), nil
}

// cleanEnv is the test's environment without any LEASEHOLD_* variable, so
// that a developer's settings do not leak into the nodes; extra is appended.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LEASEHOLD_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// freePorts picks n distinct loopback ports that can be listened on now,
// at random in 20000–32000: below Linux's ephemeral ports (32768 and up),
// so that no outgoing connection takes one as its source port between the
// pick and the node's listen, or while a killed node is down. (Ports of :0
// are ephemeral ones: a chaos run failed once when its node's port was
// taken between the two.)
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			t.Fatal("no free loopback ports in 20000–32000")
		}
		p := 20000 + rand.IntN(12000)
		if !slices.Contains(ports, p) && portFree(p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// portFree reports whether 127.0.0.1:port can be listened on right now.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// tailFile returns the last n lines of path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// httpc is for health and status requests: short, bounded.
var httpc = &http.Client{Timeout: 2 * time.Second}

// apiCredentials are how the tests reach a node started with TLS: its CA
// and a client certificate of system:masters.
type apiCredentials struct {
	rest rest.TLSClientConfig
	http *http.Client
}

// secureAPIs maps the API address of each node started with TLS to the
// credentials for it; every other node serves plain HTTP.
var secureAPIs sync.Map // apiAddr → *apiCredentials

// apiURL is the base URL of the API at apiAddr and the client for health
// and status requests to it.
func apiURL(apiAddr string) (string, *http.Client) {
	if creds, ok := secureAPIs.Load(apiAddr); ok {
		return "https://" + apiAddr, creds.(*apiCredentials).http
	}
	return "http://" + apiAddr, httpc
}

// clusterStatus is GET /cluster/status as docs/cli.md describes it.
type clusterStatus struct {
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

func getStatus(apiAddr string) (clusterStatus, error) {
	var st clusterStatus
	base, c := apiURL(apiAddr)
	resp, err := c.Get(base + "/cluster/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /cluster/status: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("GET /cluster/status: %v: %s", err, body)
	}
	return st, nil
}

// getReady returns the /readyz status code and body.
func getReady(apiAddr string) (int, string, error) {
	base, c := apiURL(apiAddr)
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// clientConfig is a client-go configuration for the API at apiAddr, in
// protobuf or JSON, without client-side rate limiting.
func clientConfig(apiAddr string, protobuf bool) *rest.Config {
	base, _ := apiURL(apiAddr)
	cfg := &rest.Config{
		Host:    base,
		QPS:     -1,
		Timeout: 20 * time.Second,
	}
	if creds, ok := secureAPIs.Load(apiAddr); ok {
		cfg.TLSClientConfig = creds.(*apiCredentials).rest
	}
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return cfg
}

// ---------------------------------------------------------------- processes

// proc is one run of the binary.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has exited and was reaped
	state   *os.ProcessState
	waitErr error
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// procNode is one member of a procCluster.
type procNode struct {
	name     string
	apiAddr  string
	peerAddr string
	dataDir  string
	logPath  string
	args     []string
	// bin is the binary the node runs; binPath when empty.
	bin string

	protoClient kubernetes.Interface
	jsonClient  kubernetes.Interface

	mu   sync.Mutex
	proc *proc // current or last run
}

func (n *procNode) current() *proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// running reports whether the node's process is alive.
func (n *procNode) running() bool {
	p := n.current()
	return p != nil && !p.exited()
}

// procCluster runs three leasehold processes, n1..n3, bootstrapped together.
type procCluster struct {
	t     *testing.T
	dir   string
	nodes []*procNode
}

// clusterNames are the members of every procCluster.
var clusterNames = []string{"n1", "n2", "n3"}

// newProcCluster starts n1..n3 and waits until all three are ready; extra
// flags are given to every node. Every process is SIGKILLed at the end of the
// test; the logs' tails are printed when the test failed.
func newProcCluster(t *testing.T, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterWith(t, nil, extra...)
}

// newProcClusterWith is newProcCluster for nodes started with TLS (creds
// non-nil): the harness reaches them with creds.
func newProcClusterWith(t *testing.T, creds *apiCredentials, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterOn(t, "", creds, extra...)
}

// newProcClusterOn is newProcClusterWith for nodes that run bin ("" =
// the current binary).
func newProcClusterOn(t *testing.T, bin string, creds *apiCredentials, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterEach(t, bin, creds, nil, extra...)
}

// newProcClusterEach is newProcClusterOn with flags of each node's own
// (perNode, if not nil) after extra.
func newProcClusterEach(t *testing.T, bin string, creds *apiCredentials, perNode func(name string) []string, extra ...string) *procCluster {
	t.Helper()
	dir := t.TempDir()
	pc := &procCluster{t: t, dir: dir}
	ports := freePorts(t, 2*len(clusterNames))
	var initial []string
	for i, name := range clusterNames {
		n := &procNode{
			name:     name,
			apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			dataDir:  filepath.Join(dir, name, "data"),
			logPath:  filepath.Join(dir, name+".log"),
			bin:      bin,
		}
		initial = append(initial, name+"="+n.peerAddr)
		pc.nodes = append(pc.nodes, n)
	}
	for _, n := range pc.nodes {
		if creds != nil {
			secureAPIs.Store(n.apiAddr, creds)
			t.Cleanup(func() { secureAPIs.Delete(n.apiAddr) })
		}
		n.args = []string{
			"--name", n.name,
			"--data-dir", n.dataDir,
			"--api-addr", n.apiAddr,
			"--peer-addr", n.peerAddr,
			"--initial-cluster", strings.Join(initial, ","),
			"--raft-heartbeat-timeout", "500ms",
		}
		n.args = append(n.args, extra...)
		if perNode != nil {
			n.args = append(n.args, perNode(n.name)...)
		}
		var err error
		if n.protoClient, err = kubernetes.NewForConfig(clientConfig(n.apiAddr, true)); err != nil {
			t.Fatal(err)
		}
		if n.jsonClient, err = kubernetes.NewForConfig(clientConfig(n.apiAddr, false)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(pc.cleanup)
	for _, n := range pc.nodes {
		pc.start(n)
	}
	for _, n := range pc.nodes {
		pc.waitReady(n.name, 30*time.Second)
	}
	return pc
}

func (pc *procCluster) node(name string) *procNode {
	for _, n := range pc.nodes {
		if n.name == name {
			return n
		}
	}
	pc.t.Fatalf("no node %q", name)
	return nil
}

// start launches the node's process with its flags, in its own process
// group, stdout and stderr appended to its log file.
func (pc *procCluster) start(n *procNode) {
	pc.t.Helper()
	if n.running() {
		pc.t.Fatalf("%s is already running", n.name)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		pc.t.Fatal(err)
	}
	bin := binPath
	if n.bin != "" {
		bin = n.bin
	}
	fmt.Fprintf(logf, "=== %s e2e: starting %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(n.args, " "))
	cmd := exec.Command(bin, n.args...)
	cmd.Dir = pc.dir
	cmd.Env = cleanEnv()
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		pc.t.Fatalf("start %s: %v", n.name, err)
	}
	logf.Close() // the child holds its own descriptor
	p := &proc{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
}

// restart starts a stopped or killed node again with the same flags and data
// dir; it does not wait for readiness.
func (pc *procCluster) restart(name string) {
	pc.t.Helper()
	pc.start(pc.node(name))
}

// waitReady polls /readyz until 200, failing the test after timeout or when
// the process exits. It returns how long it waited.
func (pc *procCluster) waitReady(name string, timeout time.Duration) time.Duration {
	pc.t.Helper()
	n := pc.node(name)
	p := n.current()
	start := time.Now()
	deadline := start.Add(timeout)
	last := "no answer yet"
	for {
		code, body, err := getReady(n.apiAddr)
		if err == nil && code == http.StatusOK {
			return time.Since(start)
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d %s", code, body)
		}
		if p == nil || p.exited() {
			pc.t.Fatalf("%s exited while waiting for /readyz (%v); log:\n%s", name, p.exitDesc(), tailFile(n.logPath, 30))
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("%s not ready after %v: last /readyz: %s", name, timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) exitDesc() string {
	if p == nil {
		return "never started"
	}
	if !p.exited() {
		return "running"
	}
	if p.state != nil {
		return p.state.String()
	}
	return fmt.Sprint(p.waitErr)
}

// status returns the node's /cluster/status.
func (pc *procCluster) status(name string) (clusterStatus, error) {
	return getStatus(pc.node(name).apiAddr)
}

// leader returns the node that reports itself leader, asking every running
// node, polling until timeout. Nodes in exclude are not accepted (a stale
// view of a node that is gone).
func (pc *procCluster) leader(timeout time.Duration, exclude ...string) string {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if name := pc.currentLeader(exclude...); name != "" {
			return name
		}
		if time.Now().After(deadline) {
			var views []string
			for _, n := range pc.nodes {
				st, err := getStatus(n.apiAddr)
				views = append(views, fmt.Sprintf("%s: %+v %v", n.name, st, err))
			}
			pc.t.Fatalf("no leader within %v (excluding %v): %s", timeout, exclude, strings.Join(views, "; "))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// currentLeader returns the running node with state "leader" and the
// highest term, or "".
func (pc *procCluster) currentLeader(exclude ...string) string {
	best, bestTerm := "", uint64(0)
	for _, n := range pc.nodes {
		if !n.running() || contains(exclude, n.name) {
			continue
		}
		st, err := getStatus(n.apiAddr)
		if err != nil || st.State != "leader" {
			continue
		}
		if best == "" || st.Term > bestTerm {
			best, bestTerm = n.name, st.Term
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// kill SIGKILLs the node's process group and waits until it is reaped.
func (pc *procCluster) kill(name string) {
	pc.t.Helper()
	n := pc.node(name)
	p := n.current()
	if p == nil || p.exited() {
		pc.t.Fatalf("kill %s: not running (%s)", name, p.exitDesc())
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		pc.t.Fatalf("kill %s: %v", name, err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		pc.t.Fatalf("%s (pid %d) not gone 10s after SIGKILL", name, p.cmd.Process.Pid)
	}
}

// stop sends SIGTERM and waits; docs/cli.md promises exit status 0 within 10 s.
// It returns how long the process took to exit.
func (pc *procCluster) stop(name string) time.Duration {
	pc.t.Helper()
	n := pc.node(name)
	p := n.current()
	if p == nil || p.exited() {
		pc.t.Fatalf("stop %s: not running (%s)", name, p.exitDesc())
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		pc.t.Fatalf("SIGTERM %s: %v", name, err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		pc.t.Fatalf("%s did not exit within 10s of SIGTERM (docs/cli.md promises it); log:\n%s", name, tailFile(n.logPath, 30))
	}
	took := time.Since(start)
	if code := p.state.ExitCode(); code != 0 {
		pc.t.Fatalf("%s exited with %s after SIGTERM, want exit status 0; log:\n%s", name, p.state, tailFile(n.logPath, 30))
	}
	return took
}

// cleanup SIGKILLs every process still running and prints the logs' tails
// when the test failed.
func (pc *procCluster) cleanup() {
	for _, n := range pc.nodes {
		p := n.current()
		if p == nil || p.exited() {
			continue
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			pc.t.Errorf("%s (pid %d) not gone 10s after SIGKILL", n.name, p.cmd.Process.Pid)
		}
	}
	if pc.t.Failed() {
		for _, n := range pc.nodes {
			pc.t.Logf("--- last lines of %s (%s):\n%s", n.name, n.logPath, tailFile(n.logPath, 40))
		}
	}
}

// waitApplied polls the node's /cluster/status until appliedIndex >= index.
func (pc *procCluster) waitApplied(name string, index uint64, timeout time.Duration) {
	pc.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		st, err := pc.status(name)
		if err == nil && st.AppliedIndex >= index {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("appliedIndex %d", st.AppliedIndex)
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("%s did not apply index %d within %v: %s", name, index, timeout, last)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// countLines counts the lines of a log matching substr, for diagnostics.
func countLines(path, substr string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			n++
		}
	}
	return n
}
