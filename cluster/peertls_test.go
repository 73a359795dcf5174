package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/internal/testpki"
	"github.com/leasehold/leasehold/transport"
)

// newTLSCluster is newCluster with peer mutual TLS: every node holds a
// certificate of ca named after it, and admits only peers of ca.
func newTLSCluster(t *testing.T, n int, ca *testpki.CA) *testCluster {
	t.Helper()
	base := t.TempDir()
	c := &testCluster{t: t, nodes: make([]*Node, n), muxes: make([]*transport.Mux, n)}
	loggers := make([]hclog.Logger, n)
	for i := range n {
		loggers[i] = testLogger(t, fmt.Sprintf("n%d", i+1))
	}
	t.Cleanup(c.closeAll)
	for i := range n {
		cert := ca.Issue(t, fmt.Sprintf("n%d", i+1), nil)
		files := &transport.PeerTLS{CertFile: cert.CertFile, KeyFile: cert.KeyFile, TrustedCAFile: ca.CertFile}
		m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", TLS: files, Logger: loggers[i].Named("mux")})
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
		c.cfgs = append(c.cfgs, Config{
			Name:             peers[i].Name,
			DataDir:          filepath.Join(base, peers[i].Name),
			InitialCluster:   peers,
			HeartbeatTimeout: testHeartbeat,
			Logger:           loggers[i],
		})
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

// forgedVote sends every node of c, from a transport on mux, the
// RequestVote a stranger would forge to unseat the leader: in the name of
// member n1, for a leadership transfer, at a term far ahead. It returns
// how many nodes answered.
func forgedVote(t *testing.T, c *testCluster, mux *transport.Mux) int {
	t.Helper()
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: mux.RaftLayer(), MaxPool: 1, Timeout: 2 * time.Second, Logger: hclog.NewNullLogger(),
	})
	defer trans.Close()
	answered := 0
	for i := range c.nodes {
		term := c.node(i).raft.CurrentTerm()
		req := &raft.RequestVoteRequest{
			RPCHeader:          raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n1"), Addr: []byte(c.addrs[0])},
			Term:               term + 100,
			LastLogIndex:       1 << 40,
			LastLogTerm:        term + 100,
			LeadershipTransfer: true,
		}
		var resp raft.RequestVoteResponse
		if err := trans.RequestVote("n1", raft.ServerAddress(c.addrs[i]), req, &resp); err == nil {
			answered++
		}
	}
	return answered
}

// strangerMux is a peer mux of a node outside the cluster: files nil for
// plain TCP.
func strangerMux(t *testing.T, files *transport.PeerTLS) *transport.Mux {
	t.Helper()
	m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", TLS: files})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestPeerTLSCluster: three nodes with peer mutual TLS elect a leader and
// replicate writes made on the leader and through a follower; a stranger,
// plain or with a certificate of another CA, cannot move the term, where a
// cluster without TLS loses its leader to the same forged vote.
func TestPeerTLSCluster(t *testing.T) {
	ca := testpki.NewCA(t)
	c := newTLSCluster(t, 3, ca)
	l := c.waitAllReady()
	mustApply(t, c.node(l), createCmd(t, "on-leader", "h1"))
	f := c.followers(l)[0]
	mustApply(t, c.node(f), createCmd(t, "via-follower", "h2")) // over the apply stream
	for i := range c.nodes {
		n := c.node(i)
		if err := n.LinearizableRead(opCtx(t)); err != nil { // read index over RPC on followers
			t.Fatalf("read on n%d: %v", i+1, err)
		}
		for name, holder := range map[string]string{"on-leader": "h1", "via-follower": "h2"} {
			if h, _ := holderOf(n, name); h != holder {
				t.Errorf("n%d: %s held by %q, want %q", i+1, name, h, holder)
			}
		}
	}

	terms := make([]uint64, 3)
	for i := range terms {
		terms[i] = c.node(i).raft.CurrentTerm()
	}
	foreign := testpki.NewCA(t)
	// The impostor trusts the cluster's CA, so it gets as far as showing
	// its own certificate.
	bundle := filepath.Join(foreign.Dir, "bundle.crt")
	if err := os.WriteFile(bundle, append(ca.CertPEM(), foreign.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	impostor := foreign.Issue(t, "n1", nil)
	for what, m := range map[string]*transport.Mux{
		"plain TCP":  strangerMux(t, nil),
		"foreign CA": strangerMux(t, &transport.PeerTLS{CertFile: impostor.CertFile, KeyFile: impostor.KeyFile, TrustedCAFile: bundle}),
	} {
		if n := forgedVote(t, c, m); n != 0 {
			t.Errorf("%s: %d nodes answered a forged RequestVote", what, n)
		}
	}
	for i, term := range terms {
		if got := c.node(i).raft.CurrentTerm(); got != term {
			t.Errorf("n%d: term %d after forged votes, was %d", i+1, got, term)
		}
	}
	if got := c.waitLeader(); got != l {
		t.Errorf("leader n%d after forged votes, was n%d", got+1, l+1)
	}

	// The control: the same vote, plain, unseats a plain cluster's leader.
	plain := newCluster(t, 3)
	pl := plain.waitAllReady()
	before := plain.node(pl).raft.CurrentTerm()
	if n := forgedVote(t, plain, strangerMux(t, nil)); n != 3 {
		t.Fatalf("plain cluster: %d nodes answered the forged RequestVote, want 3", n)
	}
	if got := plain.node(pl).raft.CurrentTerm(); got < before+100 {
		t.Errorf("plain cluster: term %d after a forged vote for %d", got, before+100)
	}
}
