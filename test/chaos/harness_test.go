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
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/leasehold/leasehold/internal/testpki"
	"github.com/leasehold/leasehold/test/harness"
)

// bins holds the leasehold binary, built once for the run.
var bins harness.Binaries

func TestMain(m *testing.M) { os.Exit(harness.Main(m, &bins, "leasehold")) }

// node is one leasehold member.
type node struct {
	harness.Node // its latest process
	idx          int
	name         string
	apiAddr      string
	peerAddr     string
	dataDir      string
	logPath      string
	args         []string
	env          []string
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

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), proxies: map[[2]int]*toxiproxy.Proxy{}, toxics: map[[2]int][]string{}}
	ports := harness.FreePorts(t, 6)
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

func (c *cluster) start(n *node) {
	_, err := n.Start(harness.Command{
		Bin:  bins.Path("leasehold"),
		Args: n.args,
		Env:  harness.CleanEnv(n.env...),
		Dir:  c.dir,
		Log:  n.logPath,
	})
	if err != nil {
		c.t.Fatalf("start %s: %v", n.name, err)
	}
}

func (c *cluster) kill(n *node) {
	if err := n.Process().Kill(); err != nil {
		c.t.Errorf("%s: %v", n.name, err)
	}
}

func (c *cluster) pause(n *node)  { _ = n.Process().Pause() }
func (c *cluster) resume(n *node) { _ = n.Process().Resume() }

func (c *cluster) cleanup() {
	for _, n := range c.nodes {
		if n.Running() {
			c.resume(n)
			c.kill(n)
		}
	}
	for _, p := range c.proxies {
		p.Stop()
	}
	if c.t.Failed() {
		for _, n := range c.nodes {
			c.t.Logf("--- last lines of %s (%s):\n%s", n.name, n.logPath, harness.Tail(n.logPath, 40))
		}
	}
}

var hc = &http.Client{Timeout: 2 * time.Second}

func (c *cluster) waitReady(n *node, timeout time.Duration) error {
	if _, err := harness.WaitReady(hc, "http://"+n.apiAddr, n.Process(), timeout); err != nil {
		return fmt.Errorf("%s %v; log:\n%s", n.name, err, harness.Tail(n.logPath, 30))
	}
	return nil
}

func getStatus(n *node) (harness.Status, error) {
	return harness.ClusterStatus(hc, "http://"+n.apiAddr)
}

// runningStatus is getStatus of a running node.
func runningStatus(n *node) (harness.Status, error) {
	if !n.Running() {
		return harness.Status{}, fmt.Errorf("%s is not running", n.name)
	}
	return getStatus(n)
}

// waitLeader returns the running, unpaused node reporting itself leader with
// the highest term, polling until timeout; nil when there is none.
func (c *cluster) waitLeader(timeout time.Duration) *node {
	l, _ := harness.WaitLeader(c.nodes, runningStatus, timeout)
	return l
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
