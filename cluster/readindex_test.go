package cluster

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasehold/leasehold/transport"
)

// readIndexesGiven is n's count of read indexes given as leader, confirmed
// how ("asker" or "quorum_round").
func readIndexesGiven(n *Node, how string) float64 {
	return testutil.ToFloat64(n.readIndexesGiven.WithLabelValues(how))
}

// TestMajorityWith: the leader takes a follower's request as its
// acknowledgment only when the two are a majority of the voters.
func TestMajorityWith(t *testing.T) {
	v := func(id string) raft.Server { return raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id)} }
	nv := func(id string) raft.Server { return raft.Server{Suffrage: raft.Nonvoter, ID: raft.ServerID(id)} }
	for _, tc := range []struct {
		name    string
		servers []raft.Server
		asker   string
		want    bool
	}{
		{"three voters", []raft.Server{v("n1"), v("n2"), v("n3")}, "n2", true},
		{"two voters", []raft.Server{v("n1"), v("n2")}, "n2", true},
		{"three voters and a nonvoter", []raft.Server{v("n1"), v("n2"), v("n3"), nv("n4")}, "n3", true},
		{"four voters", []raft.Server{v("n1"), v("n2"), v("n3"), v("n4")}, "n2", false},
		{"five voters", []raft.Server{v("n1"), v("n2"), v("n3"), v("n4"), v("n5")}, "n2", false},
		{"asker a nonvoter", []raft.Server{v("n1"), v("n2"), v("n3"), nv("n4")}, "n4", false},
		{"asker unknown", []raft.Server{v("n1"), v("n2"), v("n3")}, "n9", false},
		{"asker is the leader", []raft.Server{v("n1"), v("n2"), v("n3")}, "n1", false},
		{"no asker", []raft.Server{v("n1"), v("n2"), v("n3")}, "", false},
		{"leader not a voter", []raft.Server{nv("n1"), v("n2"), v("n3")}, "n2", false},
	} {
		if got := majorityWith(raft.Configuration{Servers: tc.servers}, "n1", raft.ServerID(tc.asker)); got != tc.want {
			t.Errorf("%s: majorityWith = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReadIndexConfirmation: in a three-node cluster a follower's read
// costs the leader no quorum round; a request in another term, or from a
// node that is not a voter, gets one.
func TestReadIndexConfirmation(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)
	f := c.node(c.followers(l)[0])
	given := func(how string) float64 { return readIndexesGiven(leader, how) }

	asker, rounds := given("asker"), given("quorum_round")
	const reads = 20
	for i := range reads {
		if err := f.LinearizableRead(opCtx(t)); err != nil {
			t.Fatalf("read %d on follower %s: %v", i, f.Name(), err)
		}
	}
	if got := given("asker") - asker; got < 1 || got > reads {
		t.Errorf("%d follower reads: %v read indexes confirmed by the asker, want 1 to %d", reads, got, reads)
	}
	if got := given("quorum_round") - rounds; got != 0 {
		t.Errorf("%d follower reads: %v quorum rounds, want none", reads, got)
	}

	term := leader.raft.CurrentTerm()
	for _, a := range []transport.Asker{
		{ID: f.Name(), Term: term - 1},
		{ID: f.Name(), Term: term + 1},
		{ID: "n9", Term: term},
		{ID: leader.Name(), Term: term},
		{},
	} {
		asker, rounds = given("asker"), given("quorum_round")
		commit := leader.raft.CommitIndex()
		idx, err := rpcHandler{leader}.ReadIndex(opCtx(t), a)
		if err != nil || idx < commit {
			t.Fatalf("ReadIndex for %+v = %d, %v; want at least the commit index %d", a, idx, err, commit)
		}
		if given("asker") != asker || given("quorum_round") != rounds+1 {
			t.Errorf("ReadIndex for %+v (leader's term %d): %v by the asker, %v quorum rounds; want 0 and 1",
				a, term, given("asker")-asker, given("quorum_round")-rounds)
		}
	}
}

// TestJoinedVoter: a node started with Join and added by the leader becomes
// a voter, catches up and answers linearizable reads; with four voters a
// follower's read index takes a quorum round again.
func TestJoinedVoter(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)
	before := mustApply(t, leader, createCmd(t, "before-join", "h1"))

	m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Name:             "n4",
		DataDir:          filepath.Join(filepath.Dir(c.cfgs[0].DataDir), "n4"), // removed after the nodes close
		Join:             true,
		HeartbeatTimeout: testHeartbeat,
		Logger:           testLogger(t, "n4"),
	}
	joined, err := New(cfg, m)
	if err != nil {
		_ = m.Close()
		t.Fatalf("start n4: %v", err)
	}
	c.mu.Lock()
	c.nodes, c.muxes = append(c.nodes, joined), append(c.muxes, m)
	c.cfgs, c.addrs = append(c.cfgs, cfg), append(c.addrs, m.Addr().String())
	c.mu.Unlock()
	// n4 enters as a non-voter and is promoted once it has caught up.
	if err := leader.AddMember(opCtx(t), "n4", m.Addr().String(), ""); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	suffrage := func() (voters int, n4 raft.ServerSuffrage) {
		for _, s := range leader.raft.GetConfiguration().Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
			if s.ID == "n4" {
				n4 = s.Suffrage
			}
		}
		return voters, n4
	}
	if voters, n4 := suffrage(); voters != 3 || n4 != raft.Nonvoter {
		t.Fatalf("right after the join: %d voters, n4 %v; want 3 and a non-voter", voters, n4)
	}
	waitFor(t, promoteStable+5*memberCheckInterval+5*time.Second, "n4 promoted", func() bool {
		voters, _ := suffrage()
		return voters == 4
	})

	after := mustApply(t, leader, createCmd(t, "after-join", "h2"))
	if err := joined.LinearizableRead(opCtx(t)); err != nil {
		t.Fatalf("read on the joined node: %v", err)
	}
	for name, rv := range map[string]uint64{"before-join": before, "after-join": after} {
		if o := joined.State().Snapshot().Get(leaseKey(name)); o == nil || o.RV != rv {
			t.Errorf("the joined node has %s at %v, want RV %d", name, o, rv)
		}
	}

	given := func(how string) float64 { return readIndexesGiven(leader, how) }
	asker, rounds := given("asker"), given("quorum_round")
	if err := joined.LinearizableRead(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if given("asker") != asker || given("quorum_round") < rounds+1 {
		t.Errorf("a follower's read with four voters: %v by the asker, %v quorum rounds; want 0 and 1",
			given("asker")-asker, given("quorum_round")-rounds)
	}
}
