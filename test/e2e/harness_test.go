// Package e2e runs the real leasehold binary as separate processes and talks
// to it only through the command-line contract (docs/cli.md): flags,
// environment, signals, the health and status endpoints, the Kubernetes API
// and scripts/cluster.sh. Everything listens on 127.0.0.1.
package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/test/harness"
)

// bins holds leasehold and leaseholdctl, built once by TestMain, and the
// repository root.
var bins harness.Binaries

func TestMain(m *testing.M) {
	// leaseholdctl beside leasehold: scripts/cluster.sh makes its
	// certificates with the leaseholdctl next to the leasehold it runs.
	os.Exit(harness.Main(m, &bins, "leasehold", "leaseholdctl"))
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

// getStatus is the /cluster/status of the node at apiAddr.
func getStatus(apiAddr string) (harness.Status, error) {
	base, c := apiURL(apiAddr)
	return harness.ClusterStatus(c, base)
}

// getReady returns the /readyz status code and body.
func getReady(apiAddr string) (int, string, error) {
	base, c := apiURL(apiAddr)
	return harness.Readyz(c, base)
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

// procNode is one member of a procCluster.
type procNode struct {
	harness.Node // its latest process
	name         string
	apiAddr      string
	peerAddr     string
	dataDir      string
	logPath      string
	args         []string
	// bin is the binary the node runs; leasehold of bins when empty.
	bin string

	protoClient kubernetes.Interface
	jsonClient  kubernetes.Interface
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
	pc := startProcCluster(t, bin, creds, perNode, extra...)
	for _, n := range pc.nodes {
		pc.waitReady(n.name, 30*time.Second)
	}
	return pc
}

// startProcCluster starts n1..n3 as newProcClusterEach does and returns at
// once, before any is ready.
func startProcCluster(t *testing.T, bin string, creds *apiCredentials, perNode func(name string) []string, extra ...string) *procCluster {
	t.Helper()
	dir := t.TempDir()
	pc := &procCluster{t: t, dir: dir}
	ports := harness.FreePorts(t, 2*len(clusterNames))
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
	bin := bins.Path("leasehold")
	if n.bin != "" {
		bin = n.bin
	}
	_, err := n.Start(harness.Command{Bin: bin, Args: n.args, Env: harness.CleanEnv(), Dir: pc.dir, Log: n.logPath})
	if err != nil {
		pc.t.Fatalf("start %s: %v", n.name, err)
	}
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
	base, c := apiURL(n.apiAddr)
	took, err := harness.WaitReady(c, base, n.Process(), timeout)
	if errors.Is(err, harness.ErrExited) {
		pc.t.Fatalf("%s %v; log:\n%s", name, err, harness.Tail(n.logPath, 30))
	}
	if err != nil {
		pc.t.Fatalf("%s %v", name, err)
	}
	return took
}

// status returns the node's /cluster/status.
func (pc *procCluster) status(name string) (harness.Status, error) {
	return getStatus(pc.node(name).apiAddr)
}

// leader returns the node that reports itself leader, asking every running
// node, polling until timeout. Nodes in exclude are not accepted (a stale
// view of a node that is gone).
func (pc *procCluster) leader(timeout time.Duration, exclude ...string) string {
	pc.t.Helper()
	if l, ok := harness.WaitLeader(pc.nodes, candidateStatus(exclude), timeout); ok {
		return l.name
	}
	var views []string
	for _, n := range pc.nodes {
		st, err := getStatus(n.apiAddr)
		views = append(views, fmt.Sprintf("%s: %+v %v", n.name, st, err))
	}
	pc.t.Fatalf("no leader within %v (excluding %v): %s", timeout, exclude, strings.Join(views, "; "))
	return ""
}

// currentLeader returns the running node with state "leader" and the
// highest term, or "".
func (pc *procCluster) currentLeader(exclude ...string) string {
	if l, ok := harness.Leader(pc.nodes, candidateStatus(exclude)); ok {
		return l.name
	}
	return ""
}

// candidateStatus is getStatus for a running node not in exclude, an error
// for any other.
func candidateStatus(exclude []string) func(*procNode) (harness.Status, error) {
	return func(n *procNode) (harness.Status, error) {
		if !n.Running() || contains(exclude, n.name) {
			return harness.Status{}, fmt.Errorf("%s: not asked", n.name)
		}
		return getStatus(n.apiAddr)
	}
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
	p := pc.node(name).Process()
	if !p.Running() {
		pc.t.Fatalf("kill %s: not running (%s)", name, p.Status())
	}
	if err := p.Kill(); err != nil {
		pc.t.Fatalf("kill %s: %v", name, err)
	}
}

// stop sends SIGTERM and waits; docs/cli.md promises exit status 0 within 10 s.
// It returns how long the process took to exit.
func (pc *procCluster) stop(name string) time.Duration {
	pc.t.Helper()
	n := pc.node(name)
	p := n.Process()
	if !p.Running() {
		pc.t.Fatalf("stop %s: not running (%s)", name, p.Status())
	}
	took, err := p.Stop(10 * time.Second)
	if err != nil {
		pc.t.Fatalf("%s: %v (docs/cli.md promises exit within 10s); log:\n%s", name, err, harness.Tail(n.logPath, 30))
	}
	if code := p.State().ExitCode(); code != 0 {
		pc.t.Fatalf("%s exited with %s after SIGTERM, want exit status 0; log:\n%s", name, p.State(), harness.Tail(n.logPath, 30))
	}
	return took
}

// cleanup SIGKILLs every process still running and prints the logs' tails
// when the test failed.
func (pc *procCluster) cleanup() {
	for _, n := range pc.nodes {
		if err := n.Process().Kill(); err != nil {
			pc.t.Errorf("%s: %v", n.name, err)
		}
	}
	if pc.t.Failed() {
		for _, n := range pc.nodes {
			pc.t.Logf("--- last lines of %s (%s):\n%s", n.name, n.logPath, harness.Tail(n.logPath, 40))
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
