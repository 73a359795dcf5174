package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

func TestBootstrapElectsOneLeader(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()

	leaders := 0
	for _, i := range c.running() {
		if c.node(i).IsLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d nodes think they lead, want 1", leaders)
	}
	want := c.node(l).Name()
	for _, i := range c.running() {
		st := c.node(i).Status()
		if st.Name != c.cfgs[i].Name {
			t.Errorf("n%d: status name %q", i+1, st.Name)
		}
		if st.Leader == nil || st.Leader.Name != want || st.Leader.PeerAddr != c.addrs[l] {
			t.Errorf("n%d: status leader %+v, want %s at %s", i+1, st.Leader, want, c.addrs[l])
		}
		wantState := "follower"
		if i == l {
			wantState = "leader"
		}
		if st.State != wantState {
			t.Errorf("n%d: state %q, want %q", i+1, st.State, wantState)
		}
		if st.Term == 0 || st.CommitIndex == 0 || st.AppliedIndex == 0 {
			t.Errorf("n%d: term %d commit %d applied %d, want all > 0", i+1, st.Term, st.CommitIndex, st.AppliedIndex)
		}
		if len(st.Members) != 3 {
			t.Fatalf("n%d: %d members, want 3: %+v", i+1, len(st.Members), st.Members)
		}
		for j, m := range st.Members {
			if m.Name != c.cfgs[j].Name || m.PeerAddr != c.addrs[j] || m.Suffrage != "voter" {
				t.Errorf("n%d: member %d = %+v, want voter %s at %s", i+1, j, m, c.cfgs[j].Name, c.addrs[j])
			}
		}
	}
}

func TestApplyOnLeaderAndFollower(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)

	res, err := leader.Apply(opCtx(t), createCmd(t, "a", "h1"))
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v / %v", err, res)
	}
	// Nothing else is being written: the entry is the last in the log.
	if rv, last := res.Object.RV, leader.raft.LastIndex(); rv != last {
		t.Errorf("create RV %d, want its log index %d", rv, last)
	}
	if got := res.Object.Obj.(*coordinationv1.Lease).ResourceVersion; got != strconv.FormatUint(res.Object.RV, 10) {
		t.Errorf("stored resourceVersion %q, want %d", got, res.Object.RV)
	}
	if applied := leader.State().AppliedIndex(); applied < res.Object.RV {
		t.Errorf("leader applied %d after Apply returned RV %d", applied, res.Object.RV)
	}
	if _, rv := holderOf(leader, "a"); rv != res.Object.RV {
		t.Errorf("leader state RV %d, want %d", rv, res.Object.RV)
	}
	createRV := res.Object.RV

	// Refused writes come back as the FSM's result, not as an error.
	res, err = leader.Apply(opCtx(t), createCmd(t, "a", "h2"))
	if err != nil {
		t.Fatalf("duplicate create: %v", err)
	}
	if state.Code(res.Err) != state.AlreadyExists {
		t.Errorf("duplicate create: result %v, want AlreadyExists", res.Err)
	}
	res, err = leader.Apply(opCtx(t), updateCmd(t, "a", "h2", createRV+1000))
	if err != nil || state.Code(res.Err) != state.Conflict {
		t.Errorf("update with wrong RV: %v / %v, want Conflict", err, res)
	}
	updRV := mustApply(t, leader, updateCmd(t, "a", "h2", createRV))
	if updRV <= createRV || updRV != leader.raft.LastIndex() {
		t.Errorf("update RV %d, want log index %d (> %d)", updRV, leader.raft.LastIndex(), createRV)
	}

	// A follower has the leader commit its command and returns the
	// leader's result.
	for i, f := range c.followers(l) {
		n := c.node(f)
		res, err := n.Apply(opCtx(t), createCmd(t, "b", "h1"))
		if err != nil {
			t.Fatalf("apply on follower n%d: %v", f+1, err)
		}
		if i == 0 {
			if res.Err != nil || res.Object == nil {
				t.Fatalf("create through follower n%d: %+v", f+1, res)
			}
			if h, rv := holderOf(leader, "b"); h != "h1" || rv != res.Object.RV {
				t.Errorf("leader after a create through n%d: holder %q rv %d, want h1 at %d", f+1, h, rv, res.Object.RV)
			}
			if res.Object.Obj.(*coordinationv1.Lease).Spec.HolderIdentity == nil || res.Object.RV != leader.raft.LastIndex() {
				t.Errorf("create through n%d: result %+v, want the Lease at the leader's last index %d", f+1, res.Object, leader.raft.LastIndex())
			}
		} else if state.Code(res.Err) != state.AlreadyExists {
			t.Errorf("second create through follower n%d: %+v, want AlreadyExists", f+1, res)
		}
		// The RV is the same index on every node.
		if err := n.LinearizableRead(opCtx(t)); err != nil {
			t.Fatalf("read on n%d: %v", f+1, err)
		}
		if h, rv := holderOf(n, "a"); h != "h2" || rv != updRV {
			t.Errorf("n%d: holder %q rv %d, want h2 at %d", f+1, h, rv, updRV)
		}
	}
}

func TestForwardToLeader(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()

	// The bytes are the API layer's; here a request is an encoded command
	// and an answer names the node that applied it and the outcome.
	type call struct {
		node      int
		req, resp []byte
	}
	calls := make(chan call, 10)
	for _, i := range c.running() {
		n := c.node(i)
		n.SetForwardHandler(func(ctx context.Context, req []byte) []byte {
			resp := func() string {
				cmd, err := fsm.DecodeCommand(req)
				if err != nil {
					return "bad command: " + err.Error()
				}
				res, err := n.Apply(ctx, cmd)
				if err != nil {
					return "unavailable: " + err.Error()
				}
				if res.Err != nil {
					return n.Name() + " refused: " + res.Err.Error()
				}
				return fmt.Sprintf("%s created %s at %d", n.Name(), res.Object.Key().Name, res.Object.RV)
			}()
			calls <- call{node: i, req: req, resp: []byte(resp)}
			return []byte(resp)
		})
	}

	f := c.followers(l)[0]
	follower := c.node(f)
	body := createCmd(t, "fwd", "h1").Encode()
	resp, err := follower.Forward(opCtx(t), body)
	if err != nil {
		t.Fatalf("forward: %v", err)
	}
	var got call
	select {
	case got = <-calls:
	default:
		t.Fatal("Forward returned but no handler ran")
	}
	if got.node != l {
		t.Fatalf("handler ran on n%d, want the leader n%d", got.node+1, l+1)
	}
	if !bytes.Equal(got.req, body) {
		t.Errorf("leader got request %q, want %q", got.req, body)
	}
	if !bytes.Equal(resp, got.resp) || !strings.HasPrefix(string(resp), c.node(l).Name()+" created fwd at ") {
		t.Errorf("forwarded answer %q, want the leader's %q", resp, got.resp)
	}

	// A refused write's answer comes back unchanged too.
	resp, err = follower.Forward(opCtx(t), body)
	if err != nil {
		t.Fatalf("second forward: %v", err)
	}
	got = <-calls
	if got.node != l || !bytes.Equal(resp, got.resp) || !strings.Contains(string(resp), " refused: ") {
		t.Errorf("duplicate create: answer %q from n%d, want the leader's %q", resp, got.node+1, got.resp)
	}
	select {
	case extra := <-calls:
		t.Errorf("unexpected extra handler call on n%d", extra.node+1)
	default:
	}

	// The forwarded write is visible to a linearizable read on the follower.
	if err := follower.LinearizableRead(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if h, _ := holderOf(follower, "fwd"); h != "h1" {
		t.Errorf("follower does not see the forwarded write (holder %q)", h)
	}
}

// TestFollowerReadYourWrites is the core follower-read property: a write
// acknowledged by the leader is visible on a follower after LinearizableRead,
// immediately, every time.
func TestFollowerReadYourWrites(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)
	followers := c.followers(l)

	const rounds, keys = 300, 10
	rvs := map[string]uint64{}
	for i := range rounds {
		name := fmt.Sprintf("ryw-%d", i%keys)
		holder := fmt.Sprintf("h%d", i)
		var cmd *fsm.Command
		if prev, ok := rvs[name]; ok {
			cmd = updateCmd(t, name, holder, prev)
		} else {
			cmd = createCmd(t, name, holder)
		}
		rv := mustApply(t, leader, cmd)
		rvs[name] = rv

		f := c.node(followers[i%len(followers)])
		if err := f.LinearizableRead(opCtx(t)); err != nil {
			t.Fatalf("round %d: read on %s: %v", i, f.Name(), err)
		}
		o := f.State().Snapshot().Get(leaseKey(name))
		if o == nil || o.RV != rv {
			var got uint64
			if o != nil {
				got = o.RV
			}
			t.Fatalf("round %d: %s sees %s at RV %d after LinearizableRead, want the acknowledged RV %d (applied %d)",
				i, f.Name(), name, got, rv, f.State().AppliedIndex())
		}
		if h, _ := holderOf(f, name); h != holder {
			t.Fatalf("round %d: %s sees holder %q, want %q", i, f.Name(), h, holder)
		}
	}
}

// TestFailoverKeepsAcknowledgedWrites kills the leader; the survivors elect
// a new one, writes continue there, and nothing acknowledged is lost.
func TestFailoverKeepsAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	acked := map[string]uint64{}
	var lastOld uint64
	for i := range 20 {
		name := fmt.Sprintf("old-%d", i)
		lastOld = mustApply(t, c.node(l), createCmd(t, name, "h"))
		acked[name] = lastOld
	}
	oldTerm := c.node(l).raft.CurrentTerm()
	c.kill(l)

	nl := c.waitLeader()
	if nl == l {
		t.Fatal("killed node still leads")
	}
	newLeader := c.node(nl)
	if term := newLeader.raft.CurrentTerm(); term <= oldTerm {
		t.Errorf("new leader's term %d, want > %d", term, oldTerm)
	}
	for i := range 20 {
		name := fmt.Sprintf("new-%d", i)
		rv := mustApply(t, newLeader, createCmd(t, name, "h"))
		if rv <= lastOld {
			t.Fatalf("new leader's write RV %d not after the old leader's %d", rv, lastOld)
		}
		acked[name] = rv
	}
	for _, i := range c.running() {
		n := c.node(i)
		if err := n.LinearizableRead(opCtx(t)); err != nil {
			t.Fatalf("read on %s: %v", n.Name(), err)
		}
		got := dumpState(n)
		for name, rv := range acked {
			if got[name] != rv {
				t.Errorf("%s: %s at RV %d, want %d", n.Name(), name, got[name], rv)
			}
		}
	}
}

// TestReadyFollowsQuorum: every node is ready once a leader exists; a node
// left alone loses its leader and stops being ready within a few heartbeat
// timeouts, and a read on it fails within its deadline.
func TestReadyFollowsQuorum(t *testing.T) {
	for _, tc := range []struct {
		name string
		// survivor picks the node that stays up, given the leader.
		survivor func(c *testCluster, leader int) int
	}{
		{"leader survives", func(c *testCluster, l int) int { return l }},
		{"follower survives", func(c *testCluster, l int) int { return c.followers(l)[0] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			l := c.waitAllReady()
			for _, i := range c.running() {
				if ok, why := c.node(i).Ready(); !ok {
					t.Fatalf("n%d not ready: %s", i+1, why)
				}
			}
			s := tc.survivor(c, l)
			var wg sync.WaitGroup
			for _, i := range c.running() {
				if i != s {
					wg.Add(1)
					go func() { defer wg.Done(); c.kill(i) }()
				}
			}
			wg.Wait()
			killed := time.Now()
			survivor := c.node(s)

			limit := 8 * testHeartbeat
			waitFor(t, limit, "the survivor to become not ready", func() bool {
				ok, _ := survivor.Ready()
				return !ok
			})
			t.Logf("not ready %v after the kills", time.Since(killed).Round(time.Millisecond))
			if name, _ := survivor.Leader(); name != "" {
				t.Errorf("not ready, but a leader %q is still known", name)
			}
			if survivor.IsLeader() {
				t.Error("survivor still thinks it leads")
			}
			// It stays not ready: there is no quorum to elect anyone.
			time.Sleep(3 * testHeartbeat)
			if ok, _ := survivor.Ready(); ok {
				t.Error("lone survivor became ready")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := survivor.LinearizableRead(ctx)
			if err == nil {
				t.Fatal("LinearizableRead without a quorum succeeded")
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("LinearizableRead took %v with a 500ms deadline", d)
			}
		})
	}
}

// TestReadIndexWithoutQuorumFails: ReadIndex while the majority is down
// returns an error within the context's deadline, whatever the node
// believes at the time (still leader, follower of a dead leader, no
// leader).
func TestReadIndexWithoutQuorumFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		survivor func(c *testCluster, leader int) int
	}{
		{"leader survives", func(c *testCluster, l int) int { return l }},
		{"follower survives", func(c *testCluster, l int) int { return c.followers(l)[0] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			l := c.waitAllReady()
			s := tc.survivor(c, l)
			survivor := c.node(s)

			// Readers run before, during and after the kills.
			const deadline = 700 * time.Millisecond
			stopReaders := make(chan struct{})
			type outcome struct {
				err  error
				took time.Duration
			}
			// Readers record into a slice: a channel could fill up when
			// failures come fast and block the readers for good.
			var (
				resultsMu sync.Mutex
				results   []outcome
			)
			var readers sync.WaitGroup
			for range 2 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for {
						select {
						case <-stopReaders:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), deadline)
						start := time.Now()
						_, err := survivor.ReadIndex(ctx)
						resultsMu.Lock()
						results = append(results, outcome{err, time.Since(start)})
						resultsMu.Unlock()
						cancel()
					}
				}()
			}
			time.Sleep(100 * time.Millisecond)
			var wg sync.WaitGroup
			for _, i := range c.running() {
				if i != s {
					wg.Add(1)
					go func() { defer wg.Done(); c.kill(i) }()
				}
			}
			wg.Wait()
			time.Sleep(4 * testHeartbeat)
			close(stopReaders)
			waitDone(t, &readers, 5*time.Second, "readers")

			var n, failed int
			var last error
			for _, r := range results {
				n++
				// Slack for a busy machine; a read that waited for the
				// quorum to come back would take seconds more.
				if r.took > deadline+2*time.Second {
					t.Errorf("ReadIndex took %v with a %v deadline (err %v)", r.took, deadline, r.err)
				}
				if r.err != nil {
					failed++
				}
				last = r.err
			}
			if failed == 0 || last == nil {
				t.Fatalf("%d reads, %d failed, last %v: want the reads after the kills to fail", n, failed, last)
			}
			if !errors.Is(last, ErrTimeout) && !errors.Is(last, ErrNoLeader) && !errors.Is(last, ErrNotLeader) {
				t.Errorf("error %v, want ErrTimeout, ErrNoLeader or ErrNotLeader", last)
			}

			// Once no leader is known at all, the same holds.
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			if _, err := survivor.ReadIndex(ctx); err == nil {
				t.Error("ReadIndex without a leader succeeded")
			}
			if d := time.Since(start); d > 800*time.Millisecond {
				t.Errorf("ReadIndex without a leader took %v with a 300ms deadline", d)
			}
		})
	}
}

func waitDone(t *testing.T, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("%s did not finish within %v", what, timeout)
	}
}

// TestRestartFollowerCatchesUp: a follower that was down while 50 writes
// were committed has all of them once it is ready again.
func TestRestartFollowerCatchesUp(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	f := c.followers(l)[0]
	mustApply(t, c.node(l), createCmd(t, "before", "h"))
	c.kill(f)

	want := map[string]uint64{}
	for i := range 50 {
		name := fmt.Sprintf("down-%d", i)
		want[name] = mustApply(t, c.node(l), createCmd(t, name, "h"))
	}
	n := c.restart(f)
	c.waitReady(f)
	got := dumpState(n)
	for name, rv := range want {
		if got[name] != rv {
			t.Errorf("%s after restart: %s at RV %d, want %d", n.Name(), name, got[name], rv)
		}
	}
	if got["before"] == 0 {
		t.Error("restarted node lost the write from before it went down")
	}
	if len(got) != 51 {
		t.Errorf("restarted node has %d leases, want 51", len(got))
	}
}

// TestRestartWholeCluster: every node crashes; the state is rebuilt from the
// logs, and a node alone (no leader possible) is never ready meanwhile.
func TestRestartWholeCluster(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	want := map[string]uint64{}
	for i := range 30 {
		name := fmt.Sprintf("r-%d", i)
		want[name] = mustApply(t, c.node(l), createCmd(t, name, "h"))
	}
	for _, i := range c.running() {
		c.kill(i)
	}
	lone := c.restart(0)
	time.Sleep(4 * testHeartbeat)
	if ok, why := lone.Ready(); ok {
		t.Fatalf("a node alone after a full restart is ready (%s)", why)
	}
	c.restart(1)
	c.restart(2)
	c.waitAllReady()
	for _, i := range c.running() {
		n := c.node(i)
		got := dumpState(n)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s after a full restart: %v, want %v", n.Name(), got, want)
		}
	}
}

// TestSnapshotRestore: nodes snapshot and truncate their logs; a restarted
// node restores its own snapshot, and a node that fell behind the leader's
// truncated log is caught up with an installed snapshot.
func TestSnapshotRestore(t *testing.T) {
	const trailing = 16
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold = 64
		cfg.SnapshotInterval = 200 * time.Millisecond
		cfg.TrailingLogs = trailing
	})
	l := c.waitAllReady()
	leader := c.node(l)
	f := c.followers(l)[0]

	write := func(prefix string, n int) {
		for i := range n {
			name := fmt.Sprintf("%s-%d", prefix, i%(n/2))
			if i < n/2 {
				mustApply(t, leader, createCmd(t, name, "h0"))
			} else {
				_, rv := holderOf(leader, name)
				mustApply(t, leader, updateCmd(t, name, fmt.Sprintf("h%d", i), rv))
			}
		}
	}
	sameAsLeader := func(n *Node) {
		t.Helper()
		if err := leader.LinearizableRead(opCtx(t)); err != nil {
			t.Fatal(err)
		}
		if err := n.LinearizableRead(opCtx(t)); err != nil {
			t.Fatal(err)
		}
		want, got := dumpState(leader), dumpState(n)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s state differs from the leader's:\n got %v\nwant %v", n.Name(), got, want)
		}
		for name := range want {
			wh, _ := holderOf(leader, name)
			if gh, _ := holderOf(n, name); gh != wh {
				t.Fatalf("%s: %s held by %q, leader says %q", n.Name(), name, gh, wh)
			}
		}
	}

	// Every node snapshots.
	write("a", 160)
	for _, i := range c.running() {
		n := c.node(i)
		waitFor(t, waitTimeout, n.Name()+" to take a snapshot", func() bool { return snapshotIndex(n) > 0 })
	}

	// A restarted node starts from its own snapshot: the state is there as
	// soon as New returns, before it has heard from a leader.
	c.kill(f)
	n := c.restart(f)
	if applied, count := n.State().AppliedIndex(), n.State().Snapshot().Count("leases"); applied == 0 || count == 0 {
		t.Errorf("restarted node starts with applied %d, %d leases: want its snapshot restored", applied, count)
	}
	c.waitReady(f)
	sameAsLeader(n)

	// A node that misses more than the leader keeps in its log gets a
	// snapshot installed.
	fLast := n.raft.LastIndex()
	c.kill(f)
	write("b", 200)
	// Compacted, not only snapshotted: raft deletes the log after the
	// snapshot is written, and a follower restarted in between would catch
	// up from the log.
	waitFor(t, waitTimeout, "the leader to compact past the stopped follower", func() bool {
		first, err := leader.bolt.FirstIndex()
		return err == nil && first > fLast+1
	})
	n = c.restart(f)
	c.waitReady(f)
	sameAsLeader(n)
	if si := snapshotIndex(n); si <= fLast {
		t.Errorf("caught-up node's snapshot index %d, want > %d (an installed snapshot)", si, fLast)
	}
	if got := len(dumpState(n)); got != 180 {
		t.Errorf("caught-up node has %d leases, want 180", got)
	}

	// And a snapshot-installed node serves linearizable reads of new writes.
	rv := mustApply(t, leader, updateCmd(t, "b-0", "final", func() uint64 { _, rv := holderOf(leader, "b-0"); return rv }()))
	if err := n.LinearizableRead(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if h, got := holderOf(n, "b-0"); h != "final" || got != rv {
		t.Errorf("after install: b-0 held by %q at %d, want final at %d", h, got, rv)
	}
}

// TestEnsureCurrentAfterLeaderChange: writes acknowledged by a leader that
// then crashes are visible to the new leader's very first LinearizableRead,
// even though the survivors may not have learned that they were committed
// (the new leader's commit index lags until an entry of its term commits).
func TestEnsureCurrentAfterLeaderChange(t *testing.T) {
	c := newCluster(t, 3)
	var rv uint64
	for round := range 3 {
		l := c.waitAllReady()
		leader := c.node(l)
		name := "ec"
		holder := fmt.Sprintf("round-%d", round)
		for i := range 5 {
			h := fmt.Sprintf("%s-%d", holder, i)
			if rv == 0 {
				rv = mustApply(t, leader, createCmd(t, name, h))
			} else {
				rv = mustApply(t, leader, updateCmd(t, name, h, rv))
			}
		}
		holder += "-4"
		// Crash right after the acknowledgement, before the next
		// AppendEntries would tell the followers the commit index.
		c.kill(l)

		// Catch the new leader as early as possible.
		var nl *Node
		deadline := time.Now().Add(waitTimeout)
		for nl == nil {
			for _, i := range c.running() {
				if c.node(i).IsLeader() {
					nl = c.node(i)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no new leader: %s", round, c.describe())
			}
			time.Sleep(time.Millisecond)
		}
		if err := nl.LinearizableRead(opCtx(t)); err != nil {
			t.Fatalf("round %d: first read on new leader %s: %v", round, nl.Name(), err)
		}
		if h, got := holderOf(nl, name); got != rv || h != holder {
			t.Fatalf("round %d: new leader %s's first read sees %q at %d, want %q at %d", round, nl.Name(), h, got, holder, rv)
		}
		if err := nl.EnsureCurrent(opCtx(t)); err != nil {
			t.Fatalf("round %d: EnsureCurrent: %v", round, err)
		}
		if nl.termReady.Load() != nl.raft.CurrentTerm() {
			t.Errorf("round %d: EnsureCurrent returned but the term is not marked current", round)
		}
		// The other survivor, too.
		for _, i := range c.running() {
			n := c.node(i)
			if err := n.LinearizableRead(opCtx(t)); err != nil {
				t.Fatalf("round %d: read on %s: %v", round, n.Name(), err)
			}
			if h, got := holderOf(n, name); got != rv || h != holder {
				t.Fatalf("round %d: %s sees %q at %d, want %q at %d", round, n.Name(), h, got, holder, rv)
			}
		}
		c.restart(l)
	}
}

// TestGracefulStopHandsOverLeadership: Close on the leader transfers
// leadership, so the others have a leader again quickly.
func TestGracefulStopHandsOverLeadership(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	rv := mustApply(t, c.node(l), createCmd(t, "g", "h"))
	c.stop(l)
	nl := c.waitLeader()
	if err := c.node(nl).LinearizableRead(opCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, got := holderOf(c.node(nl), "g"); got != rv {
		t.Errorf("new leader sees RV %d, want %d", got, rv)
	}
	var closes atomic.Int32
	for _, i := range c.running() {
		if c.node(i).Close() == nil {
			closes.Add(1)
		}
		// Close twice is harmless.
		if err := c.node(i).Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	if closes.Load() != 2 {
		t.Errorf("%d clean closes, want 2", closes.Load())
	}
}
