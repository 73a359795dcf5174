// Package testcluster runs leasehold nodes in-process, each with its Raft
// node, its store and its HTTP API on loopback, for tests that need a real
// cluster without starting processes.
package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/registry"
	"github.com/leasehold/leasehold/transport"
)

// Options tune a test cluster.
type Options struct {
	// HeartbeatTimeout is Raft's; tests run with -race on small machines,
	// so it defaults to 500ms.
	HeartbeatTimeout  time.Duration
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// State bounds what each member's store retains (watch history, read
	// views); zero fields take the store's defaults.
	State state.Config
	// PeerTLS, if set, gives each member (by name: n1, n2, ...) its peer
	// port's mutual TLS; nil from it, or no PeerTLS, means plain TCP.
	// internal/testpki makes the files.
	PeerTLS func(name string) *transport.PeerTLS
	// API, if set, adjusts each member's API configuration before the API
	// is built (authenticator, authorizer, limits).
	API func(name string, cfg *httpapi.Config)
	// Cluster, if set, adjusts each member's cluster configuration before
	// the node starts (a sick disk, for one).
	Cluster func(name string, cfg *cluster.Config)
	// NoWait makes New return as soon as every member serves, before any
	// is ready: for tests of what a client sees while they get ready.
	NoWait bool
}

// peerTLS is member name's peer TLS, nil for none.
func (o Options) peerTLS(name string) *transport.PeerTLS {
	if o.PeerTLS == nil {
		return nil
	}
	return o.PeerTLS(name)
}

// Node is one in-process member.
type Node struct {
	Name     string
	PeerAddr string
	APIAddr  string
	DataDir  string

	mu   sync.Mutex
	node *cluster.Node
	http *http.Server
}

// Raft returns the member's cluster node (nil while stopped).
func (n *Node) Raft() *cluster.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.node
}

// URL is the member's API base URL.
func (n *Node) URL() string { return "http://" + n.APIAddr }

// Cluster is a set of in-process members bootstrapped together.
type Cluster struct {
	t     testing.TB
	log   *testLog
	opts  Options
	peers []cluster.Peer
	Nodes []*Node
}

// New starts n members and waits until every one is ready (unless
// opts.NoWait). Everything is stopped at the end of the test.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	if opts.HeartbeatTimeout == 0 {
		opts.HeartbeatTimeout = 500 * time.Millisecond
	}
	c := &Cluster{t: t, log: newTestLog(t), opts: opts}
	// Reserve the ports first: the initial cluster names every address.
	muxes := make([]*transport.Mux, n)
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", TLS: opts.peerTLS(name)})
		if err != nil {
			t.Fatal(err)
		}
		muxes[i] = m
		c.peers = append(c.peers, cluster.Peer{Name: name, Addr: m.Addr().String()})
		c.Nodes = append(c.Nodes, &Node{Name: name, PeerAddr: m.Addr().String(), DataDir: t.TempDir()})
	}
	for i, node := range c.Nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		node.APIAddr = ln.Addr().String()
		if err := c.start(node, muxes[i], ln); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for i := range c.Nodes {
			c.Stop(i)
		}
	})
	if !opts.NoWait {
		c.WaitReady()
	}
	return c
}

func (c *Cluster) start(n *Node, mux *transport.Mux, ln net.Listener) error {
	logger := hclog.New(&hclog.LoggerOptions{Name: n.Name, Level: hclog.Warn, Output: c.log})
	cfg := cluster.Config{
		Name:              n.Name,
		DataDir:           n.DataDir,
		InitialCluster:    c.peers,
		HeartbeatTimeout:  c.opts.HeartbeatTimeout,
		SnapshotThreshold: c.opts.SnapshotThreshold,
		SnapshotInterval:  c.opts.SnapshotInterval,
		TrailingLogs:      c.opts.TrailingLogs,
		WriteTimeout:      5 * time.Second,
		State:             c.opts.State,
		Logger:            logger,
	}
	if c.opts.Cluster != nil {
		c.opts.Cluster(n.Name, &cfg)
	}
	node, err := cluster.New(cfg, mux)
	if err != nil {
		mux.Close()
		ln.Close()
		return err
	}
	apiCfg := httpapi.Config{Node: node, Store: registry.New(node), Logger: logger.Named("api")}
	if c.opts.API != nil {
		c.opts.API(n.Name, &apiCfg)
	}
	api := httpapi.New(apiCfg)
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	n.mu.Lock()
	n.node, n.http = node, srv
	n.mu.Unlock()
	return nil
}

// testLog sends the members' logs to t.Log until the test's last cleanup
// (registered first, it runs after the cluster has stopped): Raft's
// goroutines may still log as the test ends, which t.Log must not see.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func newTestLog(t testing.TB) *testLog {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// Stop shuts member i down gracefully (leadership transfer included).
func (c *Cluster) Stop(i int) { c.stop(i, true) }

// Kill stops member i abruptly: its HTTP connections are cut and Raft stops
// without handing over leadership, as a crash looks to the others.
func (c *Cluster) Kill(i int) { c.stop(i, false) }

func (c *Cluster) stop(i int, graceful bool) {
	n := c.Nodes[i]
	n.mu.Lock()
	node, srv := n.node, n.http
	n.node, n.http = nil, nil
	n.mu.Unlock()
	if node == nil {
		return
	}
	_ = srv.Close()
	if graceful {
		_ = node.Close()
	} else {
		_ = node.Crash()
	}
}

// Restart starts a stopped member again on its data dir and addresses.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	n := c.Nodes[i]
	var (
		mux *transport.Mux
		ln  net.Listener
		err error
	)
	// The old sockets may linger for a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mux, err = transport.Listen(transport.Config{Addr: n.PeerAddr, TLS: c.opts.peerTLS(n.Name)})
		if err == nil {
			ln, err = net.Listen("tcp", n.APIAddr)
			if err != nil {
				mux.Close()
			}
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("restart %s: %v", n.Name, err)
	}
	if err := c.start(n, mux, ln); err != nil {
		c.t.Fatalf("restart %s: %v", n.Name, err)
	}
}

// WaitReady waits until every running member reports ready.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		all := true
		for _, n := range c.Nodes {
			if node := n.Raft(); node != nil {
				if ok, _ := node.Ready(); !ok {
					all = false
				}
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("cluster not ready within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Leader waits for a leader among the running members and returns its index.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.Nodes {
			if node := n.Raft(); node != nil && node.IsLeader() {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatal("no leader within 30s")
	return -1
}

// Follower returns the index of a running member that is not the leader.
func (c *Cluster) Follower() int {
	c.t.Helper()
	l := c.Leader()
	for i, n := range c.Nodes {
		if i != l && n.Raft() != nil {
			return i
		}
	}
	c.t.Fatal("no running follower")
	return -1
}

// Config is a client-go config for member i. protobuf selects the content
// type client-go's typed clients use by default
// (application/vnd.kubernetes.protobuf); otherwise JSON.
func (c *Cluster) Config(i int, protobuf bool) *rest.Config {
	cfg := &rest.Config{Host: c.Nodes[i].URL(), QPS: -1, Timeout: 30 * time.Second}
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return cfg
}

// Client is a typed clientset for member i.
func (c *Cluster) Client(i int, protobuf bool) kubernetes.Interface {
	c.t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(i, protobuf))
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// ErrStopped is returned for a member that is not running.
var ErrStopped = errors.New("member is stopped")

// WaitFor polls cond every 20ms until it holds or timeout passes.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
