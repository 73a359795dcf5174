package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// sickStore is raft.db on a disk that a test makes stall or fill.
type sickStore struct {
	RaftStore

	mu         sync.Mutex
	stall      chan struct{} // writes wait until it is closed; nil: they do not
	logFull    bool          // log writes fail with ENOSPC
	stableFull bool          // stable store writes fail with ENOSPC

	writes atomic.Int64 // writes that reached the store
}

func (s *sickStore) stallWrites() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall == nil {
		s.stall = make(chan struct{})
	}
}

func (s *sickStore) fill(log, stable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logFull, s.stableFull = log, stable
}

// heal ends a stall and gives the space back.
func (s *sickStore) heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stall != nil {
		close(s.stall)
		s.stall = nil
	}
	s.logFull, s.stableFull = false, false
}

func (s *sickStore) write(stable bool, do func() error) error {
	s.writes.Add(1)
	s.mu.Lock()
	stall := s.stall
	s.mu.Unlock()
	if stall != nil {
		<-stall
	}
	s.mu.Lock()
	full := s.logFull
	if stable {
		full = s.stableFull
	}
	s.mu.Unlock()
	if full {
		return &os.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC}
	}
	return do()
}

func (s *sickStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }
func (s *sickStore) StoreLogs(logs []*raft.Log) error {
	return s.write(false, func() error { return s.RaftStore.StoreLogs(logs) })
}
func (s *sickStore) DeleteRange(min, max uint64) error {
	return s.write(false, func() error { return s.RaftStore.DeleteRange(min, max) })
}
func (s *sickStore) Set(k, v []byte) error {
	return s.write(true, func() error { return s.RaftStore.Set(k, v) })
}
func (s *sickStore) SetUint64(k []byte, v uint64) error {
	return s.write(true, func() error { return s.RaftStore.SetUint64(k, v) })
}

// testGate is a disk gate over a real raft.db on a sick disk, wired as the
// node wires it.
type testGate struct {
	d       *disk
	bolt    *raftboltdb.BoltStore
	sick    *sickStore
	logs    *keptErrors
	gate    *diskLog
	stable  *diskStable
	closing chan struct{}
}

func newTestGate(t *testing.T, timeout time.Duration) *testGate {
	t.Helper()
	dir := t.TempDir()
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	g := &testGate{bolt: bolt, sick: &sickStore{RaftStore: bolt}, closing: make(chan struct{})}
	t.Cleanup(func() { bolt.Close() })
	t.Cleanup(g.sick.heal) // before the close: a stalled write holds bbolt
	g.d = newDisk("n1", dir, timeout, hclog.NewNullLogger(), g.closing)
	g.d.retry = 20 * time.Millisecond
	g.gate = &diskLog{LogStore: g.sick, d: g.d}
	g.stable = &diskStable{StableStore: g.sick, d: g.d}
	cache, err := raft.NewLogCache(16, newLogStore(g.gate))
	if err != nil {
		t.Fatal(err)
	}
	g.logs = &keptErrors{LogCache: cache, gate: g.gate}
	return g
}

func entries(from, to, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte("entry")})
	}
	return out
}

func lastIndex(t *testing.T, s raft.LogStore) uint64 {
	t.Helper()
	i, err := s.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// returnsWithin runs f and reports its error, failing if it takes longer
// than d.
func returnsWithin(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

// vecValue adds up the metrics of c whose label values include want.
func vecValue(t *testing.T, c prometheus.Collector, want ...string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return sumFamilies(t, reg, "", want...)
}

// sumFamilies adds up the values of the family called name (any family
// if name is empty) whose label values include want (any if empty).
func sumFamilies(t *testing.T, g prometheus.Gatherer, name string, want ...string) float64 {
	t.Helper()
	var sum float64
	for n, mf := range gatherFamilies(t, g) {
		if name != "" && n != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, w := range want {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetValue() == w }) {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestDiskGate_AbandonsAStalledAppend: a log write runs in its caller; at
// the deadline the node learns which entries it holds (appendStalled)
// while it still runs; while it hangs, log writes and deletions fail at
// once without reaching the disk and stable store writes wait; when it
// ends, what it stored is deleted again and it fails with ErrDiskStalled
// (through raft's log cache, as the error it was), and the next write
// passes.
func TestDiskGate_AbandonsAStalledAppend(t *testing.T) {
	const timeout = 100 * time.Millisecond
	g := newTestGate(t, timeout)
	type stalledAt struct {
		first, last uint64
		after       time.Duration
	}
	stalled := make(chan stalledAt, 1)
	var start time.Time
	g.d.appendStalled = func(logs []*raft.Log) {
		stalled <- stalledAt{logs[0].Index, logs[len(logs)-1].Index, time.Since(start)}
	}
	if err := g.logs.StoreLogs(entries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}

	g.sick.stallWrites()
	start = time.Now()
	appended := make(chan error, 1)
	go func() { appended <- g.logs.StoreLogs(entries(6, 8, 2)) }()
	select {
	case at := <-stalled:
		if at.first != 6 || at.last != 8 || at.after < timeout || at.after > timeout+time.Second {
			t.Fatalf("appendStalled for entries %d..%d after %v, want 6..8 after %v", at.first, at.last, at.after, timeout)
		}
	case err := <-appended:
		t.Fatalf("stalled append returned while the disk hangs: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("appendStalled not called within 5s")
	}
	if ok, why := g.d.health(); ok || !strings.HasPrefix(why, "disk stalled: ") {
		t.Fatalf("health = %v %q, want a stalled disk", ok, why)
	}
	reached := g.sick.writes.Load()

	begin := time.Now()
	if err := g.logs.StoreLogs(entries(6, 7, 3)); !errors.Is(err, ErrDiskStalled) {
		t.Fatalf("append while stalled: %v, want ErrDiskStalled", err)
	}
	if err := g.logs.DeleteRange(1, 2); !errors.Is(err, ErrDiskStalled) {
		t.Fatalf("delete while stalled: %v, want ErrDiskStalled", err)
	}
	if took := time.Since(begin); took > timeout/2 {
		t.Fatalf("writes on a stalled disk took %v, want them refused at once", took)
	}
	if n := g.sick.writes.Load(); n != reached {
		t.Fatalf("%d writes reached the stalled disk after the abandoned one", n-reached)
	}

	stableDone := make(chan error, 1)
	go func() { stableDone <- g.stable.SetUint64([]byte("CurrentTerm"), 7) }()
	select {
	case err := <-stableDone:
		t.Fatalf("stable store write returned on a stalled disk: %v", err)
	case <-time.After(3 * timeout):
	}

	g.sick.heal()
	select {
	case err := <-appended:
		if !errors.Is(err, ErrDiskStalled) {
			t.Fatalf("abandoned append once the disk returned: %v, want ErrDiskStalled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("abandoned append still running after the stall ended")
	}
	select {
	case err := <-stableDone:
		if err != nil {
			t.Fatalf("stable store write after the stall: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stable store write still waiting after the stall ended")
	}
	if ok, why := g.d.health(); !ok {
		t.Fatalf("health after the abandoned write ended: %s", why)
	}
	if got := lastIndex(t, g.bolt); got != 5 {
		t.Fatalf("last index %d after the abandoned write ended, want 5: its entries must be deleted", got)
	}
	if err := g.logs.StoreLogs(entries(6, 7, 3)); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
	var l raft.Log
	if err := g.bolt.GetLog(7, &l); err != nil || l.Term != 3 || lastIndex(t, g.bolt) != 7 {
		t.Fatalf("entry 7 = term %d (%v), last %d; want term 3, last 7", l.Term, err, lastIndex(t, g.bolt))
	}
	if v, _ := g.bolt.GetUint64([]byte("CurrentTerm")); v != 7 {
		t.Fatalf("term %d, want the held write's 7", v)
	}
	if got := vecValue(t, g.d.writeErrors); got != 3 {
		t.Fatalf("%v write errors, want 3 (one timeout, two refused)", got)
	}
}

// TestDiskGate_OverdueDeleteStallsTheDisk: a deletion is never abandoned
// (raft would take deleted entries for present), but while it runs past
// the deadline the disk counts as stalled and appends fail at once.
func TestDiskGate_OverdueDeleteStallsTheDisk(t *testing.T) {
	const timeout = 100 * time.Millisecond
	g := newTestGate(t, timeout)
	if err := g.logs.StoreLogs(entries(1, 5, 1)); err != nil {
		t.Fatal(err)
	}
	g.sick.stallWrites()
	deleted := make(chan error, 1)
	go func() { deleted <- g.logs.DeleteRange(1, 2) }()
	waitFor(t, 5*time.Second, "the deletion to count as stalled", g.d.stalled)
	if err := returnsWithin(t, timeout/2, "append", func() error { return g.logs.StoreLogs(entries(6, 6, 1)) }); !errors.Is(err, ErrDiskStalled) {
		t.Fatalf("append behind an overdue deletion: %v, want ErrDiskStalled", err)
	}
	select {
	case err := <-deleted:
		t.Fatalf("deletion returned on a stalled disk: %v", err)
	default:
	}
	g.sick.heal()
	if err := <-deleted; err != nil {
		t.Fatalf("deletion: %v", err)
	}
	if g.d.stalled() {
		t.Fatal("disk still stalled after the deletion ended")
	}
	if first, _ := g.bolt.FirstIndex(); first != 3 {
		t.Fatalf("first index %d, want 3", first)
	}
}

// TestDiskGate_NoSpace: a log write that gets ENOSPC fails with
// ErrDiskFull and the text a client reads, the leader's check refuses
// writes, and a stable store write that fits does not clear it; the next
// append that succeeds does.
func TestDiskGate_NoSpace(t *testing.T) {
	g := newTestGate(t, time.Second)
	g.sick.fill(true, false)
	err := g.logs.StoreLogs(entries(1, 1, 1))
	const msg = "database space exceeded: n1 cannot write its raft log: no space left on device"
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) || err.Error() != msg {
		t.Fatalf("append on a full disk: %v, want %q (ErrDiskFull, ENOSPC)", err, msg)
	}
	if err := g.d.refuse(); !errors.Is(err, ErrDiskFull) || err.Error() != msg {
		t.Fatalf("refuse = %v, want %q", err, msg)
	}
	if ok, why := g.d.health(); ok || why != "disk full: no space left on device" {
		t.Fatalf("health = %v %q", ok, why)
	}
	if err := g.stable.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatalf("stable store write that fits: %v", err)
	}
	g.d.probe(g.sick)
	if g.d.refuse() == nil {
		t.Fatal("a stable store write cleared what a failed append found")
	}
	g.sick.heal()
	if err := g.logs.StoreLogs(entries(1, 1, 1)); err != nil {
		t.Fatalf("append once space returned: %v", err)
	}
	if err := g.d.refuse(); err != nil {
		t.Fatalf("refuse after a good append: %v", err)
	}
	if got := vecValue(t, g.d.writeErrors, "enospc"); got != 1 {
		t.Fatalf("%v enospc errors, want 1", got)
	}
}

// TestDiskGate_StableWritesWaitForSpace: raft panics when it cannot store
// its term, so a stable store write that gets ENOSPC tries again until
// space returns; when the node stops it gives up with ErrDiskFull.
func TestDiskGate_StableWritesWaitForSpace(t *testing.T) {
	g := newTestGate(t, time.Second)
	g.sick.fill(false, true)
	done := make(chan error, 1)
	go func() { done <- g.stable.SetUint64([]byte("CurrentTerm"), 5) }()
	waitFor(t, 5*time.Second, "the disk to count as full", g.d.full.Load)
	select {
	case err := <-done:
		t.Fatalf("stable store write returned on a full disk: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.sick.heal()
	if err := <-done; err != nil {
		t.Fatalf("stable store write once space returned: %v", err)
	}
	if g.d.full.Load() {
		t.Fatal("disk still full after a stable store write succeeded")
	}

	g.sick.fill(false, true)
	go func() { done <- g.stable.Set([]byte("LastVoteCand"), []byte("n2")) }()
	waitFor(t, 5*time.Second, "the disk to count as full", g.d.full.Load)
	close(g.closing)
	if err := returnsWithin(t, 5*time.Second, "held write", func() error { return <-done }); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("held write when the node stops: %v, want ErrDiskFull", err)
	}
}

// TestDiskGate_Probe: the probe finds a stalled disk on its own (and
// abandons its write), and counts the disk as full while less than the
// reserve is free.
func TestDiskGate_Probe(t *testing.T) {
	const timeout = 100 * time.Millisecond
	g := newTestGate(t, timeout)
	free := uint64(1 << 30)
	g.d.free = func(string) (uint64, error) { return free, nil }

	g.d.probe(g.sick)
	if ok, why := g.d.health(); !ok {
		t.Fatalf("healthy disk: %s", why)
	}
	g.sick.stallWrites()
	g.d.lastOK = time.Time{}
	if err := returnsWithin(t, 5*time.Second, "probe", func() error { g.d.probe(g.sick); return nil }); err != nil {
		t.Fatal(err)
	}
	if !g.d.stalled() {
		t.Fatal("probe on a stalled disk: not stalled")
	}
	g.sick.heal()
	waitFor(t, 5*time.Second, "the disk to recover", func() bool { return !g.d.stalled() })

	free = 10 << 20
	g.d.probe(g.sick)
	want := "disk full: 10 MiB free in the data directory, under the 64 MiB reserve"
	if ok, why := g.d.health(); ok || why != want {
		t.Fatalf("health = %v %q, want %q", ok, why, want)
	}
	if err := g.d.refuse(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("refuse under the reserve: %v", err)
	}
	free = 1 << 30
	g.d.probe(g.sick)
	if err := g.d.refuse(); err != nil {
		t.Fatalf("refuse once space returned: %v", err)
	}
}

// Cluster tests. The stall timeout is the tests' heartbeat timeout (500ms)
// doubled, as the defaults are (2s and 1s).
const testDiskStall = 2 * testHeartbeat

// newSickCluster is a three-node cluster whose disks a test makes sick,
// each node with a metrics registry of its own.
func newSickCluster(t *testing.T) (*testCluster, []*sickStore, []*prometheus.Registry) {
	sick := make([]*sickStore, 3)
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry(), prometheus.NewRegistry()}
	c := newCluster(t, 3, func(cfg *Config) {
		var i int
		fmt.Sscanf(cfg.Name, "n%d", &i)
		i--
		cfg.DiskStallTimeout = testDiskStall
		cfg.Registerer = regs[i]
		cfg.WrapRaftStore = func(s RaftStore) RaftStore {
			sick[i] = &sickStore{RaftStore: s}
			return sick[i]
		}
	})
	// Runs before the nodes close: a stalled write holds bbolt's close.
	t.Cleanup(func() {
		for _, s := range sick {
			s.heal()
		}
	})
	return c, sick, regs
}

// waitLeaderAmong waits until the nodes in among agree on a leader that is
// one of them, and returns it.
func (c *testCluster) waitLeaderAmong(among []int) int {
	c.t.Helper()
	var leader int
	waitFor(c.t, waitTimeout, fmt.Sprintf("a leader among %v", among), func() bool {
		leader = -1
		for _, i := range among {
			if c.node(i).IsLeader() {
				leader = i
			}
		}
		if leader < 0 {
			return false
		}
		for _, i := range among {
			if name, _ := c.node(i).Leader(); name != c.node(leader).Name() {
				return false
			}
		}
		return true
	})
	return leader
}

// waitQuiet waits until the leader's log has not grown for longer than
// the leader's member checks take to write what they write.
func (c *testCluster) waitQuiet(leader int) {
	c.t.Helper()
	last, since := c.node(leader).raft.LastIndex(), time.Now()
	waitFor(c.t, waitTimeout, "the leader's log to stop growing", func() bool {
		if i := c.node(leader).raft.LastIndex(); i != last {
			last, since = i, time.Now()
		}
		return time.Since(since) > 3*memberCheckInterval/2
	})
}

// mustReadAll checks on every running node that a linearizable read sees
// every acknowledged write at its resourceVersion.
func (c *testCluster) mustReadAll(acked map[string]uint64) {
	c.t.Helper()
	for _, i := range c.running() {
		n := c.node(i)
		if err := n.LinearizableRead(opCtx(c.t)); err != nil {
			c.t.Fatalf("linearizable read on %s: %v", n.Name(), err)
		}
		for name, rv := range acked {
			if _, got := holderOf(n, name); got != rv {
				c.t.Fatalf("%s: lease %s at rv %d, want the acknowledged %d", n.Name(), name, got, rv)
			}
		}
	}
}

func mustCreate(t *testing.T, n *Node, name string, acked map[string]uint64) {
	t.Helper()
	acked[name] = mustApply(t, n, createCmd(t, name, "h"))
}

// TestDisk_StalledLeader: the leader's disk hangs (every write to raft.db
// blocks). Its log write runs past the stall timeout: it stops counting as
// leader and a node whose disk works leads; a write sent to the stalled
// leader commits at the new one
// within the stall timeout and an election, never with an unknown outcome.
// The stalled node reports not ready and the metric; it neither leads
// again nor takes a later term while its disk hangs, though its log is as
// long as any. Once the disk returns it rejoins as a follower, and every
// acknowledged write is on every node. Five runs measure the failover.
func TestDisk_StalledLeader(t *testing.T) {
	c, sick, regs := newSickCluster(t)
	acked := map[string]uint64{}
	const runs = 5
	// A write waits for the stall timeout, then for the followers' election
	// timeout (up to two heartbeat timeouts) and an election; the rest is
	// slack for -race on two cores.
	bound := testDiskStall + 4*testHeartbeat + 2*time.Second
	var failovers []time.Duration
	// A run in which a healthy node's disk also passed the stall timeout
	// (a machine whose disk is busy with other work) proves nothing and is
	// run again, up to runs more times.
	for run, attempt := 0, 0; run < runs; attempt++ {
		if attempt == 2*runs {
			t.Fatalf("only %d of %d runs had healthy disks beside the stalled one in %d attempts", run, runs, attempt)
		}
		leader := c.waitAllReady()
		others := c.followers(leader)
		mustCreate(t, c.node(others[0]), fmt.Sprintf("before-%d", attempt), acked)
		stalled := c.node(leader)
		term := stalled.raft.CurrentTerm()

		// Watch the stalled node from the moment it steps down.
		var steppedDown, ledAgain, laterTerm, othersStalled atomic.Bool
		stopWatch := make(chan struct{})
		var watching sync.WaitGroup
		watching.Add(1)
		go func() {
			defer watching.Done()
			for {
				select {
				case <-stopWatch:
					return
				case <-time.After(5 * time.Millisecond):
				}
				if !stalled.IsLeader() {
					steppedDown.Store(true)
				} else if steppedDown.Load() {
					ledAgain.Store(true)
				}
				if stalled.raft.CurrentTerm() != term {
					laterTerm.Store(true)
				}
				for _, i := range others {
					if c.node(i).disk.stalled() {
						othersStalled.Store(true)
					}
				}
			}
		}()

		start := time.Now()
		sick[leader].stallWrites()
		name := fmt.Sprintf("during-%d", attempt)
		res, err := c.node(others[0]).Apply(opCtx(t), createCmd(t, name, "h"))
		failover := time.Since(start)
		if (err != nil || res.Err != nil || failover > bound) && othersStalled.Load() {
			close(stopWatch)
			watching.Wait()
			t.Logf("run %d: a healthy node's disk stalled too (%v, %v after %v): running it again", run, err, res, failover)
			sick[leader].heal()
			c.waitReady(leader)
			continue
		}
		if err != nil || res.Err != nil {
			t.Fatalf("run %d: write through %s during the stall: %v %v", run, c.node(others[0]).Name(), err, res)
		}
		acked[name] = res.Object.RV
		failovers = append(failovers, failover)
		if failover > bound {
			t.Fatalf("run %d: the write took %v, beyond the bound %v", run, failover, bound)
		}
		if l := c.waitLeaderAmong(others); l == leader {
			t.Fatalf("run %d: the stalled node leads", run)
		}

		if run == 0 {
			if ok, why := stalled.Ready(); ok || !strings.HasPrefix(why, "disk stalled: ") {
				t.Fatalf("stalled node: ready %v (%s), want not ready for its disk", ok, why)
			}
			if v := sumFamilies(t, regs[leader], "leasehold_disk_stalled"); v != 1 {
				t.Fatalf("leasehold_disk_stalled = %v on the stalled node, want 1", v)
			}
			if v := sumFamilies(t, regs[leader], "leasehold_disk_write_errors_total", "timeout"); v < 1 {
				t.Fatalf("leasehold_disk_write_errors_total{reason=timeout} = %v, want ≥ 1", v)
			}
			// Writes go on through both healthy nodes for several election
			// timeouts, in which the stalled node would have campaigned.
			deadline := time.Now().Add(4 * testHeartbeat)
			for k := 0; time.Now().Before(deadline); k++ {
				mustCreate(t, c.node(others[k%2]), fmt.Sprintf("stalled-%d", k), acked)
			}
		}
		close(stopWatch)
		watching.Wait()
		if ledAgain.Load() || laterTerm.Load() {
			t.Fatalf("run %d: the stalled node led again (%v) or took a later term than %d (%v)", run, ledAgain.Load(), term, laterTerm.Load())
		}

		sick[leader].heal()
		c.waitReady(leader)
		if v := sumFamilies(t, regs[leader], "leasehold_disk_stalled"); v != 0 {
			t.Fatalf("leasehold_disk_stalled = %v after the stall, want 0", v)
		}
		c.mustReadAll(acked)
		run++
	}
	sorted := slices.Clone(failovers)
	slices.Sort(sorted)
	t.Logf("failover with a stalled leader disk (stall timeout %v, heartbeat timeout %v), %d runs: median %v, max %v, all %v",
		testDiskStall, testHeartbeat, runs, sorted[runs/2].Round(time.Millisecond), sorted[runs-1].Round(time.Millisecond), failovers)
}

// TestDisk_FullLeader: the leader's log writes get ENOSPC (its small
// stable store writes still fit, as they may on a real full disk). Raft
// steps it down at its first write, which commits at the next leader; the
// others go on, writes through the full node too; it reports not ready
// and the metric until space returns, then catches up by itself.
func TestDisk_FullLeader(t *testing.T) {
	c, sick, regs := newSickCluster(t)
	acked := map[string]uint64{}
	leader := c.waitAllReady()
	others := c.followers(leader)
	full := c.node(leader)
	mustCreate(t, full, "before", acked)

	sick[leader].fill(true, false)
	res, err := full.Apply(opCtx(t), createCmd(t, "first-on-full", "h"))
	if err != nil || res.Err != nil {
		t.Fatalf("write through the full leader: %v %v, want it committed at the next leader", err, res)
	}
	acked["first-on-full"] = res.Object.RV
	if l := c.waitLeaderAmong(others); l == leader {
		t.Fatal("the full node leads")
	}
	for k, i := range append([]int{leader}, others...) {
		mustCreate(t, c.node(i), fmt.Sprintf("after-%d", k), acked)
	}
	if ok, why := full.Ready(); ok || why != "disk full: no space left on device" {
		t.Fatalf("full node: ready %v (%s)", ok, why)
	}
	if v := sumFamilies(t, regs[leader], "leasehold_disk_full"); v != 1 {
		t.Fatalf("leasehold_disk_full = %v on the full node, want 1", v)
	}
	if v := sumFamilies(t, regs[leader], "leasehold_disk_write_errors_total", "enospc"); v < 1 {
		t.Fatalf("leasehold_disk_write_errors_total{reason=enospc} = %v, want ≥ 1", v)
	}

	sick[leader].heal()
	c.waitReady(leader)
	if v := sumFamilies(t, regs[leader], "leasehold_disk_full"); v != 0 {
		t.Fatalf("leasehold_disk_full = %v once space returned, want 0", v)
	}
	mustCreate(t, full, "healed", acked)
	c.mustReadAll(acked)
}

// TestDisk_FullEverywhere: every node's disk is full (log and stable
// store). Once the nodes' probes have seen it, the leader refuses writes
// before they reach Raft, so it keeps leading: a write through any node
// fails with ErrDiskFull and the leader's words, and linearizable reads go
// on everywhere. It does not hand leadership over, as no other node can
// write. When space returns the next writes succeed, without a restart.
func TestDisk_FullEverywhere(t *testing.T) {
	c, sick, regs := newSickCluster(t)
	acked := map[string]uint64{}
	leader := c.waitAllReady()
	mustCreate(t, c.node(leader), "before", acked)
	term := c.node(leader).raft.CurrentTerm()
	// A write that reaches Raft before the probes see the full disks makes
	// the leader step down; see TestDisk_FullLeader. The leader writes on
	// its own after an election (the cluster's feature level): let it.
	c.waitQuiet(leader)

	for _, s := range sick {
		s.fill(true, true)
	}
	for i := range 3 {
		waitFor(t, waitTimeout, fmt.Sprintf("n%d to find its disk full", i+1), func() bool {
			ok, why := c.node(i).Ready()
			return !ok && strings.HasPrefix(why, "disk full: ")
		})
	}
	want := fmt.Sprintf("database space exceeded: %s cannot write its raft log: no space left on device", c.node(leader).Name())
	for i := range 3 {
		_, err := c.node(i).Apply(opCtx(t), createCmd(t, fmt.Sprintf("refused-%d", i), "h"))
		if !errors.Is(err, ErrDiskFull) || err.Error() != want {
			t.Fatalf("write through n%d on full disks: %v, want %q", i+1, err, want)
		}
	}
	c.mustReadAll(acked)
	if v := sumFamilies(t, regs[leader], "leasehold_disk_full"); v != 1 {
		t.Fatalf("leasehold_disk_full = %v, want 1", v)
	}
	// Past the time a full leader waits before it hands leadership over.
	waitFor(t, waitTimeout, "the leader's disk full for long", func() bool {
		return c.node(leader).disk.fullFor() > diskFullHandOver+diskProbeInterval
	})
	if !c.node(leader).IsLeader() || c.node(leader).raft.CurrentTerm() != term {
		t.Fatalf("leadership moved while every disk was full: %s", c.describe())
	}

	for _, s := range sick {
		s.heal()
	}
	for i := range 3 {
		name := fmt.Sprintf("healed-%d", i)
		waitFor(t, waitTimeout, "a write through n"+fmt.Sprint(i+1)+" once space returned", func() bool {
			res, err := c.node(i).Apply(opCtx(t), createCmd(t, name, "h"))
			if errors.Is(err, ErrDiskFull) {
				return false
			}
			if err != nil || res.Err != nil {
				t.Fatalf("write through n%d once space returned: %v %v", i+1, err, res)
			}
			acked[name] = res.Object.RV
			return true
		})
	}
	for i := range 3 {
		c.waitReady(i)
	}
	c.mustReadAll(acked)
}
