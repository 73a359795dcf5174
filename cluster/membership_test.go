package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/transport"
)

// healthRounds waits until the leader has checked its members twice in
// its term, as RemoveMember requires.
func healthRounds(t *testing.T, leader *Node) {
	t.Helper()
	waitFor(t, 5*memberCheckInterval+waitTimeout, "two member check rounds", func() bool {
		leader.members.mu.Lock()
		defer leader.members.mu.Unlock()
		return leader.members.term == leader.raft.CurrentTerm() && leader.members.rounds >= 2
	})
}

func suffrageOf(n *Node, name string) (raft.ServerSuffrage, bool) {
	for _, s := range n.raft.GetConfiguration().Configuration().Servers {
		if string(s.ID) == name {
			return s.Suffrage, true
		}
	}
	return 0, false
}

// TestUnreachableJoinerNeverCountsInTheQuorum: a member added but never
// reachable stays a non-voter, so the three voters keep committing
// writes; promoting it by hand is refused as it has not caught up; it
// shows as unreachable in the member list.
func TestUnreachableJoinerNeverCountsInTheQuorum(t *testing.T) {
	c := newCluster(t, 3)
	leader := c.node(c.waitAllReady())
	// Nothing listens on the address: the joiner never catches up.
	if err := leader.AddMember(opCtx(t), "n4", "127.0.0.1:1", "http://127.0.0.1:2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(promoteStable + 2*memberCheckInterval)
	if s, ok := suffrageOf(leader, "n4"); !ok || s != raft.Nonvoter {
		t.Fatalf("n4: %v %v, want a non-voter", s, ok)
	}
	mustApply(t, leader, createCmd(t, "with-a-dead-joiner", "h"))
	if err := leader.PromoteMember(opCtx(t), "n4"); !errors.Is(err, ErrNotCaughtUp) {
		t.Errorf("promoting an unreachable non-voter: %v, want ErrNotCaughtUp", err)
	}
	ms, err := leader.Members()
	if err != nil {
		t.Fatal(err)
	}
	var n4 *MemberStatus
	for i := range ms {
		if ms[i].Name == "n4" {
			n4 = &ms[i]
		}
	}
	if n4 == nil || n4.State != "unreachable" || n4.Suffrage != "nonvoter" || n4.Healthy || n4.APIURL != "http://127.0.0.1:2" {
		t.Errorf("n4 in the member list: %+v", n4)
	}
	// A non-voter can always be removed.
	if err := leader.RemoveMember(opCtx(t), "n4"); err != nil {
		t.Errorf("remove the non-voter: %v", err)
	}
	if _, ok := suffrageOf(leader, "n4"); ok {
		t.Error("n4 still in the configuration")
	}
}

// TestAddMemberConflicts: the same name and address again is a no-op (a
// joiner retrying); the name at another address, or the address under
// another name, is refused.
func TestAddMemberConflicts(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)
	other := (l + 1) % 3
	if err := leader.AddMember(opCtx(t), c.cfgs[other].Name, c.addrs[other], ""); err != nil {
		t.Errorf("re-adding a member as it is: %v", err)
	}
	if s, _ := suffrageOf(leader, c.cfgs[other].Name); s != raft.Voter {
		t.Errorf("re-adding a voter changed its suffrage to %v", s)
	}
	if err := leader.AddMember(opCtx(t), c.cfgs[other].Name, "127.0.0.1:1", ""); !errors.Is(err, ErrMemberConflict) {
		t.Errorf("a member's name at another address: %v", err)
	}
	if err := leader.AddMember(opCtx(t), "n9", c.addrs[other], ""); !errors.Is(err, ErrMemberConflict) {
		t.Errorf("a member's address under another name: %v", err)
	}
	follower := c.node(other)
	if err := follower.AddMember(opCtx(t), "n9", "127.0.0.1:1", ""); !errors.Is(err, ErrNotLeader) {
		t.Errorf("AddMember on a follower: %v", err)
	}
}

// TestQuorumSafeRemoval: etcd's strict reconfiguration check. Three
// voters with one dead: removing a healthy one is refused, the dead one
// may go. Then two voters with one dead: removing the healthy follower…
// there is none; removing the leader itself is refused.
func TestQuorumSafeRemoval(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	dead, healthy := (l+1)%3, (l+2)%3
	c.kill(dead)
	leader := c.node(l)
	healthRounds(t, leader)
	waitFor(t, waitTimeout, "the dead member counted unhealthy", func() bool {
		leader.members.mu.Lock()
		defer leader.members.mu.Unlock()
		return !leader.members.healthy(c.cfgs[dead].Name, leader.raft.CurrentTerm())
	})
	err := leader.RemoveMember(opCtx(t), c.cfgs[healthy].Name)
	if !errors.Is(err, ErrUnsafeRemoval) {
		t.Fatalf("removing a healthy voter with one of three dead: %v, want ErrUnsafeRemoval", err)
	}
	if _, ok := suffrageOf(leader, c.cfgs[healthy].Name); !ok {
		t.Fatal("the refused removal changed the configuration")
	}
	if err := leader.RemoveMember(opCtx(t), c.cfgs[dead].Name); err != nil {
		t.Fatalf("removing the dead voter: %v", err)
	}
	mustApply(t, leader, createCmd(t, "after-removal", "h"))
	if err := leader.RemoveMember(opCtx(t), "nobody"); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("removing an unknown member: %v", err)
	}
	// Two voters, both healthy: the follower may go (one voter is its own
	// quorum), but not once it is dead.
	c.kill(healthy)
	waitFor(t, waitTimeout, "the second dead member counted unhealthy", func() bool {
		leader.members.mu.Lock()
		defer leader.members.mu.Unlock()
		return !leader.members.healthy(c.cfgs[healthy].Name, leader.raft.CurrentTerm())
	})
	if err := leader.RemoveMember(opCtx(t), leader.cfg.Name); !errors.Is(err, ErrUnsafeRemoval) && !errors.Is(err, ErrNotLeader) {
		t.Errorf("the leader removing itself with the only other voter dead: %v", err)
	}
}

// TestRemoveLeaderHandsOverFirst: the leader asked to remove itself
// transfers leadership and says so; the new leader removes it; the removed
// node learns it from the new leader, stops, and its data dir cannot be
// used to start again.
func TestRemoveLeaderHandsOverFirst(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	old := c.node(l)
	healthRounds(t, old)
	if err := old.RemoveMember(opCtx(t), old.cfg.Name); !errors.Is(err, ErrLeadershipMoved) {
		t.Fatalf("the leader removing itself: %v, want ErrLeadershipMoved", err)
	}
	if old.IsLeader() {
		t.Fatal("still the leader after handing over")
	}
	var next *Node
	waitFor(t, waitTimeout, "a new leader", func() bool {
		for _, i := range c.running() {
			if i != l && c.node(i).IsLeader() {
				next = c.node(i)
				return true
			}
		}
		return false
	})
	healthRounds(t, next)
	if err := next.RemoveMember(opCtx(t), old.cfg.Name); err != nil {
		t.Fatalf("the new leader removing the old: %v", err)
	}
	mustApply(t, next, createCmd(t, "after-leader-removal", "h"))
	select {
	case <-old.Removed():
	case <-time.After(waitTimeout + 6*old.cfg.HeartbeatTimeout + 3*memberCheckInterval):
		t.Fatalf("the removed node never learned it was removed")
	}
	if ok, why := old.Ready(); ok || !strings.Contains(why, "removed") {
		t.Errorf("the removed node's readiness: %v %q", ok, why)
	}
	if _, err := os.Stat(filepath.Join(c.cfgs[l].DataDir, removedMarker)); err != nil {
		t.Errorf("no marker in the removed node's data dir: %v", err)
	}
	c.kill(l)
	cfg := c.cfgs[l]
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "removed") {
		t.Errorf("starting on a removed member's data dir: %v", err)
	}
}

// TestTransferLeadership: to a named voter, and refused to a non-member.
func TestTransferLeadership(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	to := (l + 2) % 3
	if err := c.node(l).TransferLeadership(opCtx(t), "nobody"); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("transfer to a non-member: %v", err)
	}
	if err := c.node(l).TransferLeadership(opCtx(t), c.cfgs[to].Name); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitTimeout, "the named voter leads", func() bool { return c.node(to).IsLeader() })
	if err := c.node(l).TransferLeadership(opCtx(t), ""); !errors.Is(err, ErrNotLeader) {
		t.Errorf("transfer from a follower: %v", err)
	}
}

// TestFeatureLevelRaisedAndKept: once every member has answered, the
// leader raises the level to what all of them apply, through the log, so
// every node has it; a new leader keeps it; it never goes down.
func TestFeatureLevelRaisedAndKept(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	waitFor(t, waitTimeout+3*memberCheckInterval, "level raised on every node", func() bool {
		for _, i := range c.running() {
			if c.node(i).FeatureLevel() != MaxFeatureLevel {
				return false
			}
		}
		return true
	})
	c.stop(l)
	next := c.waitLeader()
	if got := c.node(next).FeatureLevel(); got != MaxFeatureLevel {
		t.Errorf("the next leader's level: %d", got)
	}
	// One member down: the new leader cannot ask it, yet the level stays.
	time.Sleep(2 * memberCheckInterval)
	if got := c.node(next).FeatureLevel(); got != MaxFeatureLevel {
		t.Errorf("the level went down to %d with a member unreachable", got)
	}
}

// oldRelease answers peer calls as a release whose highest feature level
// is 0 would.
type oldRelease struct{}

func (oldRelease) Forward(context.Context, []byte) []byte { return nil }
func (oldRelease) ReadIndex(context.Context, transport.Asker) (uint64, error) {
	return 0, transport.ErrNotLeader
}
func (oldRelease) Apply(context.Context, []byte) (uint64, []byte, error) {
	return 0, nil, transport.ErrNotLeader
}
func (oldRelease) NodeInfo(context.Context) *transport.NodeInfo {
	return &transport.NodeInfo{Name: "old", Version: "v0", FeatureLevel: 0}
}

// TestJoinerBelowTheLevelRefused: once the level is raised, a joiner whose
// release cannot apply it is refused and the configuration is unchanged.
func TestJoinerBelowTheLevelRefused(t *testing.T) {
	c := newCluster(t, 3)
	leader := c.node(c.waitAllReady())
	waitFor(t, waitTimeout+3*memberCheckInterval, "level raised", func() bool { return leader.FeatureLevel() == MaxFeatureLevel })
	m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Serve(oldRelease{})
	err = leader.AddMember(opCtx(t), "old", m.Addr().String(), "")
	if !errors.Is(err, ErrReleaseTooOld) {
		t.Fatalf("adding a level-0 release to a level-%d cluster: %v", MaxFeatureLevel, err)
	}
	if _, ok := suffrageOf(leader, "old"); ok {
		t.Error("the refused joiner is in the configuration")
	}
}

// TestNewLeaderChecksMembersAtOnce: a new leader asks the others at once
// instead of at its next tick (up to memberCheckInterval later): each of
// three transfers, the member list shows the others as followers of the
// new term within 0.4 of an interval. Waiting for the tick, the list came
// 0.97–1.01 s after the election (six runs, each failing).
func TestNewLeaderChecksMembersAtOnce(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	for range 3 {
		to := (l + 1) % 3
		if err := c.node(l).TransferLeadership(opCtx(t), c.cfgs[to].Name); err != nil {
			t.Fatal(err)
		}
		waitFor(t, waitTimeout, "the named voter leads", func() bool { return c.node(to).IsLeader() })
		elected := time.Now()
		n := c.node(to)
		term := n.raft.CurrentTerm()
		waitFor(t, waitTimeout, "the others listed as followers of the new term", func() bool {
			ms, err := n.Members()
			if err != nil {
				return false
			}
			for _, m := range ms {
				if m.Name != n.cfg.Name && (m.State != "follower" || m.Term != term) {
					return false
				}
			}
			return true
		})
		if d := time.Since(elected); d > 2*memberCheckInterval/5 {
			t.Fatalf("term %d: the others listed %v after the election, want at most %v", term, d, 2*memberCheckInterval/5)
		}
		l = to
	}
}
