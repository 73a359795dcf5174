// Package chaos runs three real leasehold processes, every peer connection
// routed through an in-process fault-injecting TCP proxy, under a concurrent
// client workload and a seeded nemesis, then checks the recorded history:
// per-key linearizability (porcupine), no lost acknowledged write, watch
// guarantees, and recovery time after every fault.
//
// Why toxiproxy's Go package (github.com/Shopify/toxiproxy/v2) rather than
// iptables/tc or a hand-written proxy: it needs no root, embeds in the test
// process (no daemon to start or leak), its "timeout" toxic drops data
// silently while still accepting TCP connections (a real partition, not a
// refused connection), and it has latency/jitter toxics per direction, so
// one proxy per directed edge gives partitions, one-way loss and slow links.
// Each node's dials are rewritten to the proxies through the test-only
// LEASEHOLD_TEST_PEER_DIAL variable (cmd/leasehold/main.go), which covers
// Raft and internal RPC alike.
package chaos

import (
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

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/leasehold/leasehold/internal/testpki"
)

var binPath string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: go env GOMOD:", err)
		return 1
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	tmp, err := os.MkdirTemp("", "leasehold-chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binPath = filepath.Join(tmp, "leasehold")
	build := exec.Command("go", "build", "-o", binPath, "./cmd/leasehold")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: go build ./cmd/leasehold: %v\n%s", err, b)
		return 1
	}
	return m.Run()
}

// node is one leasehold member.
type node struct {
	idx      int
	name     string
	apiAddr  string
	peerAddr string
	dataDir  string
	logPath  string
	args     []string
	env      []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// cluster is three nodes plus six proxies, one per directed edge.
type cluster struct {
	t       *testing.T
	dir     string
	nodes   []*node
	tp      *toxiproxy.ApiServer
	proxies map[[2]int]*toxiproxy.Proxy // [from,to] -> proxy in front of to's peer port, used by from

	tmu    sync.Mutex
	toxics map[[2]int][]string // names of the toxics present per proxy
}

// freePorts picks n distinct loopback ports that can be listened on now,
// at random in 20000–32000: below Linux's ephemeral ports (32768 and up),
// so that no outgoing connection (the proxies open many) takes one as its
// source port between the pick and the node's listen, or while a killed
// node is down. A run with ports of :0, ephemeral ones, failed once that
// way.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 10000 {
			t.Fatal("no free loopback ports in 20000–32000")
		}
		p := 20000 + rand.IntN(12000)
		if slices.Contains(ports, p) {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	return ports
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), proxies: map[[2]int]*toxiproxy.Proxy{}, toxics: map[[2]int][]string{}}
	ports := freePorts(t, 6)
	var initial []string
	for i := range 3 {
		n := &node{
			idx:      i,
			name:     fmt.Sprintf("n%d", i+1),
			apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
		}
		n.dataDir = filepath.Join(c.dir, n.name, "data")
		n.logPath = filepath.Join(c.dir, n.name+".log")
		initial = append(initial, n.name+"="+n.peerAddr)
		c.nodes = append(c.nodes, n)
	}
	// The peer links run over mutual TLS, as a secured cluster's do; the
	// proxies see only TLS records, and a node still verifies the peer it
	// meant to dial, not the proxy.
	peerCA := testpki.NewCA(t)
	peerCert := peerCA.Issue(t, "leasehold-peer", nil)
	c.tp = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	for _, from := range c.nodes {
		var rewrites []string
		for _, to := range c.nodes {
			if from == to {
				continue
			}
			p := toxiproxy.NewProxy(c.tp, from.name+">"+to.name, "127.0.0.1:0", to.peerAddr)
			if err := p.Start(); err != nil {
				t.Fatalf("proxy %s: %v", p.Name, err)
			}
			c.proxies[[2]int{from.idx, to.idx}] = p
			rewrites = append(rewrites, to.peerAddr+"="+p.Listen)
		}
		from.env = []string{"LEASEHOLD_TEST_PEER_DIAL=" + strings.Join(rewrites, ",")}
		from.args = []string{
			"--name", from.name,
			"--data-dir", from.dataDir,
			"--api-addr", from.apiAddr,
			"--peer-addr", from.peerAddr,
			"--initial-cluster", strings.Join(initial, ","),
			"--raft-heartbeat-timeout", "1s",
			"--snapshot-threshold", "256",
			// A window of a minute or so of the run's writes: events
			// leave it all the time, so watchers resume near its edge and
			// the history compacts the states they replaced (in snapshots
			// too), under every fault.
			"--watch-history", "1000",
			"--peer-cert-file", peerCert.CertFile,
			"--peer-key-file", peerCert.KeyFile,
			"--peer-trusted-ca-file", peerCA.CertFile,
			"--peer-cert-allowed-cn", "leasehold-peer",
		}
	}
	t.Cleanup(c.cleanup)
	for _, n := range c.nodes {
		c.start(n)
	}
	for _, n := range c.nodes {
		if err := c.waitReady(n, 60*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEASEHOLD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func (c *cluster) start(n *node) {
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== %s chaos: starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(n.args, " "))
	cmd := exec.Command(binPath, n.args...)
	cmd.Dir = c.dir
	cmd.Env = cleanEnv(n.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start %s: %v", n.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done, n.paused = cmd, done, false
	n.mu.Unlock()
}

// signal sends sig to the node's process group (its recorded pid only).
func (c *cluster) signal(n *node, sig syscall.Signal) error {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s never started", n.name)
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

func (c *cluster) kill(n *node) {
	if !n.running() {
		return
	}
	_ = c.signal(n, syscall.SIGKILL)
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("%s not gone 10s after SIGKILL", n.name)
	}
}

func (c *cluster) pause(n *node) {
	_ = c.signal(n, syscall.SIGSTOP)
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
}

func (c *cluster) resume(n *node) {
	_ = c.signal(n, syscall.SIGCONT)
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
}

func (c *cluster) cleanup() {
	for _, n := range c.nodes {
		if n.running() {
			_ = c.signal(n, syscall.SIGCONT)
			c.kill(n)
		}
	}
	for _, p := range c.proxies {
		p.Stop()
	}
	if c.t.Failed() {
		for _, n := range c.nodes {
			c.t.Logf("--- last lines of %s (%s):\n%s", n.name, n.logPath, tail(n.logPath, 40))
		}
	}
}

func tail(path string, k int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, "\n")
}

var hc = &http.Client{Timeout: 2 * time.Second}

func (c *cluster) waitReady(n *node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := hc.Get("http://" + n.apiAddr + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v; log:\n%s", n.name, timeout, tail(n.logPath, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type status struct {
	State        string `json:"state"`
	Term         uint64 `json:"term"`
	AppliedIndex uint64 `json:"appliedIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
}

func getStatus(n *node) (status, error) {
	var st status
	resp, err := hc.Get("http://" + n.apiAddr + "/cluster/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("status %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// leader returns the running, unpaused node reporting itself leader with the
// highest term, or nil.
func (c *cluster) leader() *node {
	var best *node
	var term uint64
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		st, err := getStatus(n)
		if err == nil && st.State == "leader" && (best == nil || st.Term > term) {
			best, term = n, st.Term
		}
	}
	return best
}

func (c *cluster) waitLeader(timeout time.Duration) *node {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if l := c.leader(); l != nil {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// ------------------------------------------------------------ network faults

func (c *cluster) addToxic(edge [2]int, name, typ, stream string, attrs map[string]any) {
	body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "attributes": attrs})
	if _, err := c.proxies[edge].Toxics.AddToxicJson(strings.NewReader(string(body))); err != nil {
		c.t.Errorf("add toxic %s on %v: %v", name, edge, err)
		return
	}
	c.tmu.Lock()
	c.toxics[edge] = append(c.toxics[edge], name)
	c.tmu.Unlock()
}

// blackhole drops everything sent from node a to node b: a's data on a's
// own dials to b (upstream of proxy a>b) and a's answers on b's dials to a
// (downstream of proxy b>a).
func (c *cluster) blackhole(a, b int) {
	c.addToxic([2]int{a, b}, "bh-up", "timeout", "upstream", map[string]any{"timeout": 0})
	c.addToxic([2]int{b, a}, "bh-down", "timeout", "downstream", map[string]any{"timeout": 0})
}

// isolate cuts node i off from both others, both directions (4 edges).
func (c *cluster) isolate(i int) {
	for j := range 3 {
		if j != i {
			c.blackhole(i, j)
			c.blackhole(j, i)
		}
	}
}

// slow adds latency with jitter to every edge, both directions.
func (c *cluster) slow(ms, jitter int) {
	for edge := range c.proxies {
		c.addToxic(edge, "lat-up", "latency", "upstream", map[string]any{"latency": ms, "jitter": jitter})
		c.addToxic(edge, "lat-down", "latency", "downstream", map[string]any{"latency": ms, "jitter": jitter})
	}
}

// heal removes every toxic.
func (c *cluster) heal() {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	for edge, names := range c.toxics {
		for _, name := range names {
			if err := c.proxies[edge].Toxics.RemoveToxic(context.Background(), name); err != nil {
				c.t.Errorf("remove toxic %s on %v: %v", name, edge, err)
			}
		}
	}
	c.toxics = map[[2]int][]string{}
}
