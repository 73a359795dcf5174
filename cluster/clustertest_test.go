package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/transport"
)

// Test timing. Tests run with -race on a 2-core machine: a heartbeat
// timeout below 300ms causes spurious elections there.
const (
	testHeartbeat = 500 * time.Millisecond
	// waitTimeout bounds every wait for the cluster to settle.
	waitTimeout = 15 * time.Second
	// opTimeout bounds one Apply, read or RPC.
	opTimeout = 5 * time.Second
)

// testCluster is N in-process nodes talking over loopback.
type testCluster struct {
	t     *testing.T
	cfgs  []Config
	addrs []string

	mu    sync.Mutex
	nodes []*Node // nil while a node is down
	muxes []*transport.Mux
}

// testLogWriter pipes a node's log to t.Log until the test ends; goroutines
// that outlive a node must not log into a finished test.
type testLogWriter struct {
	t    *testing.T
	name string
	mu   sync.Mutex
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Helper()
		w.t.Log(w.name + " " + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

func testLogger(t *testing.T, name string) hclog.Logger {
	w := &testLogWriter{t: t, name: name}
	// Registered before the nodes' cleanup, so it runs after it.
	t.Cleanup(w.stop)
	return hclog.New(&hclog.LoggerOptions{
		Name:   name,
		Level:  hclog.Info,
		Output: io.Writer(w),
	})
}

// newCluster starts n nodes that bootstrap together and returns once all
// are running (not necessarily with a leader; see waitLeader). opts adjust
// every node's Config.
func newCluster(t *testing.T, n int, opts ...func(*Config)) *testCluster {
	t.Helper()
	base := t.TempDir()
	c := &testCluster{t: t, nodes: make([]*Node, n), muxes: make([]*transport.Mux, n)}
	loggers := make([]hclog.Logger, n)
	for i := range n {
		loggers[i] = testLogger(t, fmt.Sprintf("n%d", i+1))
	}
	// Nodes are closed before the data dirs and loggers go away.
	t.Cleanup(c.closeAll)

	// Bind every peer port first: the initial cluster names the addresses.
	for i := range n {
		m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Logger: loggers[i].Named("mux")})
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		c.muxes[i] = m
		c.addrs = append(c.addrs, m.Addr().String())
	}
	var peers []Peer
	for i := range n {
		peers = append(peers, Peer{Name: fmt.Sprintf("n%d", i+1), Addr: c.addrs[i]})
	}
	for i := range n {
		cfg := Config{
			Name:             peers[i].Name,
			DataDir:          filepath.Join(base, peers[i].Name),
			InitialCluster:   peers,
			HeartbeatTimeout: testHeartbeat,
			Logger:           loggers[i],
		}
		for _, o := range opts {
			o(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
	}
	for i := range n {
		node, err := New(c.cfgs[i], c.muxes[i])
		if err != nil {
			t.Fatalf("start %s: %v", c.cfgs[i].Name, err)
		}
		c.mu.Lock()
		c.nodes[i] = node
		c.mu.Unlock()
	}
	return c
}

func (c *testCluster) closeAll() {
	c.mu.Lock()
	nodes, muxes := c.nodes, c.muxes
	c.nodes = make([]*Node, len(nodes))
	c.muxes = make([]*transport.Mux, len(muxes))
	c.mu.Unlock()
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n != nil {
				_ = n.Crash()
			} else if muxes[i] != nil {
				_ = muxes[i].Close()
			}
		}()
	}
	wg.Wait()
}

// node returns node i, failing the test if it is down.
func (c *testCluster) node(i int) *Node {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[i] == nil {
		c.t.Fatalf("node %d is down", i)
	}
	return c.nodes[i]
}

// running returns the indexes of the nodes that are up.
func (c *testCluster) running() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i, n := range c.nodes {
		if n != nil {
			out = append(out, i)
		}
	}
	return out
}

func (c *testCluster) take(i int) *Node {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[i]
	if n == nil {
		c.t.Fatalf("node %d is already down", i)
	}
	c.nodes[i] = nil
	c.muxes[i] = nil
	return n
}

// stop closes node i gracefully (a leader hands leadership over).
func (c *testCluster) stop(i int) {
	c.t.Helper()
	if err := c.take(i).Close(); err != nil {
		c.t.Logf("close n%d: %v", i+1, err)
	}
}

// kill stops node i as a crash would: no leadership transfer.
func (c *testCluster) kill(i int) {
	c.t.Helper()
	if err := c.take(i).Crash(); err != nil {
		c.t.Logf("kill n%d: %v", i+1, err)
	}
}

// restart starts node i again on its data dir and peer address.
func (c *testCluster) restart(i int) *Node {
	c.t.Helper()
	c.mu.Lock()
	up := c.nodes[i] != nil
	c.mu.Unlock()
	if up {
		c.t.Fatalf("restart n%d: still running", i+1)
	}
	var (
		m   *transport.Mux
		err error
	)
	deadline := time.Now().Add(waitTimeout)
	for {
		m, err = transport.Listen(transport.Config{Addr: c.addrs[i], Logger: c.cfgs[i].Logger.Named("mux")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("restart n%d: %v", i+1, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n, err := New(c.cfgs[i], m)
	if err != nil {
		m.Close()
		c.t.Fatalf("restart n%d: %v", i+1, err)
	}
	c.mu.Lock()
	c.nodes[i] = n
	c.muxes[i] = m
	c.mu.Unlock()
	return n
}

// waitLeader waits until every running node names the same leader, which
// is one of them and knows it leads, and returns its index.
func (c *testCluster) waitLeader() int {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if i, ok := c.agreedLeader(); ok {
			return i
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no agreed leader within %v: %s", waitTimeout, c.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *testCluster) agreedLeader() (int, bool) {
	up := c.running()
	if len(up) == 0 {
		return 0, false
	}
	leader := -1
	for _, i := range up {
		n := c.node(i)
		name, _ := n.Leader()
		if name == "" {
			return 0, false
		}
		if n.IsLeader() {
			if leader >= 0 || name != n.Name() {
				return 0, false
			}
			leader = i
		}
	}
	if leader < 0 {
		return 0, false
	}
	want := c.node(leader).Name()
	for _, i := range up {
		if name, _ := c.node(i).Leader(); name != want {
			return 0, false
		}
	}
	return leader, true
}

func (c *testCluster) describe() string {
	var b strings.Builder
	for _, i := range c.running() {
		n := c.node(i)
		name, _ := n.Leader()
		ready, why := n.Ready()
		fmt.Fprintf(&b, "[%s %s term=%d leader=%q ready=%v (%s)] ", n.Name(), n.raft.State(), n.raft.CurrentTerm(), name, ready, why)
	}
	return b.String()
}

// waitReady waits until node i reports ready.
func (c *testCluster) waitReady(i int) {
	c.t.Helper()
	n := c.node(i)
	deadline := time.Now().Add(waitTimeout)
	for {
		if ok, _ := n.Ready(); ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("n%d not ready within %v: %s", i+1, waitTimeout, c.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllReady waits for a leader and for every running node to be ready,
// and returns the leader's index.
func (c *testCluster) waitAllReady() int {
	c.t.Helper()
	c.waitLeader()
	for _, i := range c.running() {
		c.waitReady(i)
	}
	return c.waitLeader()
}

// followers returns the running nodes other than leader.
func (c *testCluster) followers(leader int) []int {
	var out []int
	for _, i := range c.running() {
		if i != leader {
			out = append(out, i)
		}
	}
	return out
}

// waitFor polls cond until it holds or the wait times out.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// snapshotIndex is the index of the node's newest Raft snapshot (0: none).
func snapshotIndex(n *Node) uint64 {
	var idx uint64
	fmt.Sscan(n.raft.Stats()["last_snapshot_index"], &idx)
	return idx
}

func opCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Commands.

const testNS = "default"

func leaseKey(name string) state.Key {
	return state.Key{Resource: "leases", Namespace: testNS, Name: name}
}

func leaseBytes(t *testing.T, name, holder string) []byte {
	t.Helper()
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: testNS,
			UID:       types.UID("uid-" + name),
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	b, err := l.Marshal()
	if err != nil {
		t.Fatalf("marshal lease: %v", err)
	}
	return b
}

func createCmd(t *testing.T, name, holder string) *fsm.Command {
	return &fsm.Command{Type: fsm.CmdCreate, Resource: "leases", Object: leaseBytes(t, name, holder)}
}

func updateCmd(t *testing.T, name, holder string, expectRV uint64) *fsm.Command {
	return &fsm.Command{Type: fsm.CmdUpdate, Resource: "leases", Object: leaseBytes(t, name, holder), ExpectRV: expectRV}
}

// mustApply applies cmd on node n and fails unless the FSM accepted it;
// it returns the stored object's RV.
func mustApply(t *testing.T, n *Node, cmd *fsm.Command) uint64 {
	t.Helper()
	res, err := n.Apply(opCtx(t), cmd)
	if err != nil {
		t.Fatalf("apply %v on %s: %v", cmd.Type, n.Name(), err)
	}
	if res.Err != nil {
		t.Fatalf("apply %v on %s: refused: %v", cmd.Type, n.Name(), res.Err)
	}
	return res.Object.RV
}

// holderOf returns the holder identity of the lease under name in n's state
// and its RV, or "", 0 if absent.
func holderOf(n *Node, name string) (string, uint64) {
	o := n.State().Snapshot().Get(leaseKey(name))
	if o == nil {
		return "", 0
	}
	l := o.Obj.(*coordinationv1.Lease)
	if l.Spec.HolderIdentity == nil {
		return "", o.RV
	}
	return *l.Spec.HolderIdentity, o.RV
}

// dumpState returns every lease in n's state by name, with its RV.
func dumpState(n *Node) map[string]uint64 {
	out := map[string]uint64{}
	n.State().Snapshot().List("leases", "", nil, func(o *state.Object) bool {
		out[o.Key().Name] = o.RV
		return true
	})
	return out
}
