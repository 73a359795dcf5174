package registry_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// wtSnapshotIndex is the index of the newest Raft snapshot in a member's
// data dir (0 if none).
func wtSnapshotIndex(dir string) uint64 {
	metas, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "meta.json"))
	var newest uint64
	for _, m := range metas {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) == nil && meta.Index > newest {
			newest = meta.Index
		}
	}
	return newest
}

// wtWaitSnapshot waits until member i has a snapshot at or after idx.
func wtWaitSnapshot(t *testing.T, c *testcluster.Cluster, i int, idx uint64) uint64 {
	t.Helper()
	var got uint64
	if !testcluster.WaitFor(t.Context(), wtTimeout, func() bool {
		got = wtSnapshotIndex(c.Nodes[i].DataDir)
		return got >= idx
	}) {
		t.Fatalf("%s: newest snapshot at %d, want one at or after %d", c.Nodes[i].Name, got, idx)
	}
	return got
}

// wtRestart kills member i, lets during run while it is down, restarts it
// and waits until it has applied everything written.
func wtRestart(t *testing.T, c *testcluster.Cluster, w *wtWriter, i int, during func()) {
	t.Helper()
	c.Kill(i)
	c.WaitReady()
	if during != nil {
		during()
	}
	c.Restart(i)
	c.WaitReady()
	wtWaitApplied(t, c, i, w.last())
}

// wtCheckReplay compares, on every running member, watches from each of
// starts with the recorded history and with the same watch on the leader.
func wtCheckReplay(t *testing.T, c *testcluster.Cluster, w *wtWriter, starts []uint64) {
	t.Helper()
	last := w.last()
	l := c.Leader()
	for _, rv := range starts {
		wtWaitApplied(t, c, l, last)
		ref := wtDescribeAll(t, wtCollect(t, wtStart(t, wtStore(c, l), "", wtWatchOpts(strconv.FormatUint(rv, 10))), last, false))
		wtCheckStream(t, fmt.Sprintf("leader %s from %d", c.Nodes[l].Name, rv), ref, w.after(rv, nil))
		for i, n := range c.Nodes {
			if i == l || n.Raft() == nil {
				continue
			}
			wtWaitApplied(t, c, i, last)
			wa := wtStart(t, wtStore(c, i), "", wtWatchOpts(strconv.FormatUint(rv, 10)))
			got := wtDescribeAll(t, wtCollect(t, wa, last, false))
			wtCheckStream(t, fmt.Sprintf("%s from %d", n.Name, rv), got, ref)
			wtQuiet(t, wa)
		}
	}
}

// TestWatchReplayAfterRestart: a member restarted from its Raft log (no
// snapshot) rebuilds the same event history by replaying it: watches on it
// from early RVs return the same events as on the leader, including the
// writes made while it was down. The same holds for a restarted leader.
func TestWatchReplayAfterRestart(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := wtNewWriter(t, c)
	base := c.Nodes[c.Leader()].Raft().State().AppliedIndex()
	w.mixedWorkload("r", 100)
	mid := w.last()

	f := c.Follower()
	wtRestart(t, c, w, f, func() { w.mixedWorkload("d", 110) })
	if g := c.Nodes[f].Raft().State().Generation(); g != 0 {
		t.Fatalf("%s restored a snapshot (generation %d); this test wants a replay of the log", c.Nodes[f].Name, g)
	}
	starts := []uint64{base, w.events[0].RV, w.events[50].RV - 1, mid, w.last()}
	wtCheckReplay(t, c, w, starts)

	// The old leader too.
	l := c.Leader()
	wtRestart(t, c, w, l, func() { w.mixedWorkload("e", 120) })
	w.mixedWorkload("g", 125)
	wtCheckReplay(t, c, w, append(starts, w.events[110].RV))
}

// TestWatchReplayAfterSnapshot: the history travels in the snapshot. A
// member restarted from its own snapshot (the log before it truncated), and
// one brought back by the leader's InstallSnapshot, can still resume
// watches from RVs before the snapshot, with the same events as the leader.
func TestWatchReplayAfterSnapshot(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{
		SnapshotThreshold: 16,
		SnapshotInterval:  100 * time.Millisecond,
		TrailingLogs:      8,
	})
	w := wtNewWriter(t, c)
	base := c.Nodes[c.Leader()].Raft().State().AppliedIndex()
	w.mixedWorkload("s", 60)
	f := c.Follower()
	snap := wtWaitSnapshot(t, c, f, w.events[40].RV)
	t.Logf("%s: snapshot at %d, writes %d..%d", c.Nodes[f].Name, snap, w.events[0].RV, w.last())

	// Restart from its own snapshot: generation 1 says the state came from
	// it, and the RVs asked are older than the snapshot.
	wtRestart(t, c, w, f, nil)
	if g := c.Nodes[f].Raft().State().Generation(); g != 1 {
		t.Fatalf("%s: generation %d after restart, want 1 (restored from its snapshot)", c.Nodes[f].Name, g)
	}
	starts := []uint64{base, w.events[0].RV, w.events[20].RV, w.events[30].RV - 1}
	for _, rv := range starts {
		if rv >= snap {
			t.Fatalf("start %d is not before the snapshot %d", rv, snap)
		}
	}
	wtCheckReplay(t, c, w, append(starts, w.last()))

	// Down while the leader writes on, snapshots and truncates its log past
	// the member's last entry: it comes back by InstallSnapshot.
	l := c.Leader()
	down := w.last()
	wtRestart(t, c, w, f, func() {
		w.mixedWorkload("t", 140)
		wtWaitSnapshot(t, c, l, down+8+16)
	})
	if g := c.Nodes[f].Raft().State().Generation(); g < 2 {
		t.Fatalf("%s: generation %d after restart, want >= 2 (own snapshot, then the leader's)", c.Nodes[f].Name, g)
	}
	wtCheckReplay(t, c, w, append(starts, down, w.events[100].RV, w.last()))

	// And the watch keeps going on the restored member.
	wa := wtStart(t, wtStore(c, f), "", wtWatchOpts(strconv.FormatUint(down, 10)))
	w.mixedWorkload("u", 150)
	got := wtDescribeAll(t, wtCollect(t, wa, w.last(), false))
	wtCheckStream(t, "restored member, live", got, w.after(down, nil))
}

// TestWatchHistoryAgeAfterRestart: the age bound uses the leader's append
// time of each entry, so every member keeps the same window, and a member
// that rebuilds its history by replaying its log after a restart keeps the
// same window as the others.
func TestWatchHistoryAgeAfterRestart(t *testing.T) {
	const age = 1500 * time.Millisecond
	c := testcluster.New(t, 3, testcluster.Options{State: state.Config{HistoryAge: age}})
	w := wtNewWriter(t, c)
	w.create("wt-a", "age", "h", "")
	for i := range 9 {
		w.update("wt-a", "age", fmt.Sprintf("a%d", i), "")
	}
	early := w.events[0].RV
	oldBatch := w.last()
	time.Sleep(age + 500*time.Millisecond)
	for i := range 5 {
		w.update("wt-a", "age", fmt.Sprintf("b%d", i), "")
	}
	check := func(when string) {
		t.Helper()
		for i, n := range c.Nodes {
			wtWaitApplied(t, c, i, w.last())
			s := wtStore(c, i)
			if oldest := s.State().EventsSince(0).Oldest; oldest != oldBatch {
				t.Errorf("%s: %s: oldest resumable RV %d, want %d (the events older than %v dropped)", when, n.Name, oldest, oldBatch, age)
			}
			wa := wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(early, 10)))
			if evs, err := wa.Next(wtCtx(t)); !apierrors.IsResourceExpired(err) {
				t.Errorf("%s: %s: watch from %d: %v %v, want 410", when, n.Name, early, wtDescribeAll(t, plainEvents(evs)), err)
			}
			got := wtDescribeAll(t, wtCollect(t, wtStart(t, s, "", wtWatchOpts(strconv.FormatUint(oldBatch, 10))), w.last(), false))
			wtCheckStream(t, when+": "+n.Name+" from the oldest RV", got, w.after(oldBatch, nil))
		}
	}
	check("before restart")
	f := c.Follower()
	wtRestart(t, c, w, f, nil)
	if g := c.Nodes[f].Raft().State().Generation(); g != 0 {
		t.Fatalf("%s restored a snapshot; this test wants a log replay", c.Nodes[f].Name)
	}
	check("after restart")
}
