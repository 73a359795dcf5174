package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/test/harness"
)

// The mixed-version test of issue 33 (docs/operations.md, Rolling
// upgrades): a cluster of the earlier release is upgraded to this tree's
// binary one node at a time while writers and watches run, as an
// operator would do it.

// oldRelease is the last commit before NodeInfo and the cluster feature
// level: its nodes answer the NodeInfo call with "unknown rpc kind", so a
// cluster holding one must stay at feature level 0.
const oldRelease = "a993056"

// Small snapshot settings, given to both releases: a node restarted after
// a few hundred writes is behind the leader's compacted log and gets an
// InstallSnapshot, from a leader of the other release.
const upgradeTrailingLogs = 32

var upgradeSnapshotFlags = []string{
	"--snapshot-threshold", "128",
	"--snapshot-interval", "250ms",
	"--trailing-logs", strconv.Itoa(upgradeTrailingLogs),
}

// oldBinary returns the leasehold binary of oldRelease, built once from a
// git worktree and kept in the user's cache directory, so that reruns and
// make test pay for the build once.
func oldBinary(t *testing.T) string {
	t.Helper()
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no user cache dir for the %s binary: %v", oldRelease, err)
	}
	dir := filepath.Join(cacheDir, "leasehold-e2e")
	bin := filepath.Join(dir, "leasehold-"+oldRelease)
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return bin
	}
	// A shallow clone lacks the commit; say how to get it rather than skip,
	// or the upgrade path would go untested without anyone noticing.
	if out, err := exec.Command("git", "-C", bins.Root, "cat-file", "-e", oldRelease+"^{commit}").CombinedOutput(); err != nil {
		t.Fatalf("commit %s (the release before the cluster feature level) is not in this clone (%v: %s); "+
			"fetch the history with `git fetch --unshallow` (or `git fetch origin %s`) and run the test again",
			oldRelease, err, strings.TrimSpace(string(out)), oldRelease)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	src := filepath.Join(t.TempDir(), "src")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", bins.Root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("worktree", "add", "--detach", src, oldRelease)
	defer git("worktree", "remove", "--force", src)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Built beside its final name and renamed, so that a build cut short,
	// or two runs at once, never leave a partial binary in the cache.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	// The old release reports no version, so its VCS stamp is not needed
	// (and git may refuse it in a worktree owned by another user).
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=false", "-o", tmp, "./cmd/leasehold")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("go build ./cmd/leasehold at %s: %v\n%s", oldRelease, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built the %s binary in %v, cached as %s", oldRelease, time.Since(start).Round(time.Second), bin)
	return bin
}

// newUpgradeCluster starts n1..n3 on bin, with flags both releases
// know, and waits until all three are ready.
func newUpgradeCluster(t *testing.T, bin string, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterOn(t, bin, nil, extra...)
}

// releaseStatus is the part of GET /cluster/status that tells the
// releases apart: the earlier one has neither field.
type releaseStatus struct {
	Name         string  `json:"name"`
	State        string  `json:"state"`
	Term         uint64  `json:"term"`
	CommitIndex  uint64  `json:"commitIndex"`
	FeatureLevel *uint32 `json:"featureLevel"`
	Version      *string `json:"version"`
}

func getReleaseStatus(apiAddr string) (releaseStatus, error) {
	var st releaseStatus
	base, c := apiURL(apiAddr)
	err := harness.GetJSON(c, base+"/cluster/status", &st)
	return st, err
}

// memberVersion is one entry of leaseholdctl member list -o json.
type memberVersion struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Version string `json:"version"`
	Healthy bool   `json:"healthy"`
}

// memberVersions runs leaseholdctl member list -o json against the nodes
// named (the earlier release has no member list: only new nodes).
func memberVersions(t *testing.T, pc *procCluster, via ...string) map[string]memberVersion {
	t.Helper()
	code, out, errOut := runCtl(t, "member", "list", "-o", "json", "--endpoints", pc.urls(via...))
	if code != 0 {
		t.Fatalf("member list via %v: exit %d: %s", via, code, errOut)
	}
	var ml struct{ Members []memberVersion }
	if err := json.Unmarshal([]byte(out), &ml); err != nil {
		t.Fatalf("member list -o json: %v: %s", err, out)
	}
	m := map[string]memberVersion{}
	for _, e := range ml.Members {
		m[e.Name] = e
	}
	return m
}

// releases records which binary each node was last started with. A
// node's entry changes before its process starts, so that whoever reads
// it after seeing the process's effects sees the change.
type releases struct {
	mu  sync.Mutex
	old map[string]bool
}

func (r *releases) set(name string, old bool) {
	r.mu.Lock()
	r.old[name] = old
	r.mu.Unlock()
}

func (r *releases) olds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range clusterNames {
		if r.old[n] {
			out = append(out, n)
		}
	}
	return out
}

// levelWatch polls the leader's feature level throughout the upgrade. A
// level above 0 while any member was last started on the earlier release
// is a violation: that member would be sent what it cannot apply.
type levelWatch struct {
	mu         sync.Mutex
	samples    int
	violations []string
	firstOne   time.Time // first sample at the new release's level
}

func (lw *levelWatch) run(ctx context.Context, pc *procCluster, rel *releases) {
	for ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		leader := pc.currentLeader()
		if leader == "" {
			continue
		}
		st, err := getReleaseStatus(pc.node(leader).apiAddr)
		if err != nil || st.State != "leader" || st.FeatureLevel == nil {
			continue // an old leader, or not leading any more
		}
		// Read after the status: the set of old members only shrinks.
		olds := rel.olds()
		lw.mu.Lock()
		lw.samples++
		if *st.FeatureLevel != 0 && len(olds) > 0 {
			lw.violations = append(lw.violations, fmt.Sprintf("%s (term %d) at feature level %d while %v run the earlier release", leader, st.Term, *st.FeatureLevel, olds))
		}
		if *st.FeatureLevel == fsm.MaxFeatureLevel && lw.firstOne.IsZero() {
			lw.firstOne = time.Now()
		}
		lw.mu.Unlock()
	}
}

// balancer sends an informer's requests to one node the test has not
// taken down, and on to the next one when that node does not answer or
// answers 503: a load balancer with health checks in front of a client
// that knows one URL.
type balancer struct {
	w    *workload
	next http.RoundTripper
	mu   sync.Mutex
	cur  int
	used []string // the node of each watch request, for the log
}

func (b *balancer) pick(skip bool) *procNode {
	b.mu.Lock()
	defer b.mu.Unlock()
	if skip {
		b.cur++
	}
	for i := range len(b.w.pc.nodes) {
		n := b.w.pc.nodes[(b.cur+i)%len(b.w.pc.nodes)]
		if _, down := b.w.down.Load(n.name); !down && n.Running() {
			b.cur += i
			return n
		}
	}
	return b.w.pc.nodes[b.cur%len(b.w.pc.nodes)]
}

func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var (
		resp *http.Response
		err  error
	)
	for try := range 2 * len(b.w.pc.nodes) {
		n := b.pick(try > 0)
		r := req.Clone(req.Context())
		r.URL.Host, r.Host = n.apiAddr, n.apiAddr
		resp, err = b.next.RoundTrip(r)
		if err == nil && resp.StatusCode != http.StatusServiceUnavailable {
			if r.URL.Query().Get("watch") == "true" {
				b.mu.Lock()
				b.used = append(b.used, fmt.Sprintf("%s from %s", n.name, r.URL.Query().Get("resourceVersion")))
				b.mu.Unlock()
			}
			return resp, nil
		}
		if req.Method != http.MethodGet || req.Context().Err() != nil {
			return resp, err
		}
		if err == nil && try < 2*len(b.w.pc.nodes)-1 {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return resp, err
}

// informerLog is what a client-go informer saw: its handlers' events, its
// initial lists (a list or a watch with sendInitialEvents) and the error
// events of its watches.
type informerLog struct {
	mu     sync.Mutex
	events []watchEvent
	syncs  []string
	errs   []string
}

func (il *informerLog) note(f func()) {
	il.mu.Lock()
	defer il.mu.Unlock()
	f()
}

func (il *informerLog) record(typ string, obj any) {
	l, ok := obj.(*coordv1.Lease)
	if !ok {
		return
	}
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	il.note(func() {
		il.events = append(il.events, watchEvent{Type: typ, Name: l.Name, RV: rv, Holder: holderOf(l), node: "informer", at: time.Now()})
	})
}

func (il *informerLog) counts() (events, syncs int) {
	il.mu.Lock()
	defer il.mu.Unlock()
	return len(il.events), len(il.syncs)
}

func (il *informerLog) lastRV() uint64 {
	il.mu.Lock()
	defer il.mu.Unlock()
	if len(il.events) == 0 {
		return 0
	}
	return il.events[len(il.events)-1].RV
}

// startInformer runs a client-go informer on the namespace's Leases
// through a balancer starting at first. Its reflector resumes each watch
// from the last resourceVersion it received; it lists again only after a
// 410 or a failure it cannot resume from, which the log records.
func startInformer(ctx context.Context, t *testing.T, w *workload, first string) (*informerLog, *balancer, string) {
	t.Helper()
	b := &balancer{w: w}
	for i, n := range w.pc.nodes {
		if n.name == first {
			b.cur = i
		}
	}
	cfg := clientConfig(w.pc.node(first).apiAddr, true)
	cfg.Timeout = 0 // the reflector bounds its watches itself
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { b.next = rt; return b }
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	leases := cs.CoordinationV1().Leases(w.ns)
	il := &informerLog{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			il.note(func() { il.syncs = append(il.syncs, "list from "+o.ResourceVersion) })
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				il.note(func() { il.syncs = append(il.syncs, "watch-list from "+o.ResourceVersion) })
			}
			wi, err := leases.Watch(ctx, o)
			if err != nil {
				il.note(func() { il.errs = append(il.errs, fmt.Sprintf("watch from %s: %v", o.ResourceVersion, err)) })
				return nil, err
			}
			return watch.Filter(wi, func(e watch.Event) (watch.Event, bool) {
				if e.Type == watch.Error {
					msg := fmt.Sprint(e.Object)
					if st, ok := e.Object.(*metav1.Status); ok {
						msg = fmt.Sprintf("%d %s: %s", st.Code, st.Reason, st.Message)
					}
					il.note(func() { il.errs = append(il.errs, fmt.Sprintf("watch from %s: ERROR %s", o.ResourceVersion, msg)) })
				}
				return e, true
			}), nil
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &coordv1.Lease{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { il.record(watchAdded, obj) },
		UpdateFunc: func(_, obj any) { il.record(watchModified, obj) },
		DeleteFunc: func(obj any) { il.record(watchDeleted, obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go inf.Run(ctx.Done())
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		t.Fatalf("the informer did not sync within 20s: %v", il.errs)
	}
	return il, b, inf.LastSyncResourceVersion()
}

// TestRollingUpgrade: a three-node cluster of the earlier release
// (oldRelease) is upgraded to this tree's binary one node at a time,
// followers first, under writes and linearizable lists through every node,
// a raw watch that resumes from its last resourceVersion wherever its
// stream ends, and a client-go informer behind a load balancer. Each node
// is stopped with SIGTERM and started on the new binary with the same data
// dir and flags once the leader has compacted its log past it, so that it
// catches up by an InstallSnapshot from a leader of the other release.
// Before its own upgrade the old leader is stopped and started once more
// on the earlier release (as a node restarted before its turn), so that a
// new leader sends a snapshot to an old member and leads a cluster holding
// one. Last, a downgrade once the level is raised must be refused.
//
// Both releases write snapshot format 4; the new one adds a record (the
// level) only above level 0. A change of the format, a record or a log
// command that skipped the feature-level gate would show here: the old
// node could not restore the new leader's snapshot (raft logs "failed to
// restore snapshot" and it never gets ready) or would panic on the entry.
//
// It checks: the leader's feature level stays 0 while any member runs the
// earlier release, and reaches 1 on every node within seconds once none
// does; leaseholdctl member list shows each member's release; every
// acknowledged write is served by every node at the end, with its holder,
// and no linearizable list misses one acknowledged before it; the watch
// and the informer received every acknowledged write in order, once,
// without a 410 or a relist; every node's history replays exactly what
// the watch saw; no node panicked or failed to install a snapshot; the
// earlier release exits at start on a data dir at the raised level.
func TestRollingUpgrade(t *testing.T) {
	old := oldBinary(t)
	pc := newUpgradeCluster(t, old, upgradeSnapshotFlags...)
	rel := &releases{old: map[string]bool{}}
	for _, n := range clusterNames {
		rel.set(n, true)
		st, err := getReleaseStatus(pc.node(n).apiAddr)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if st.FeatureLevel != nil || st.Version != nil {
			t.Fatalf("%s reports featureLevel/version: %s is not the release before the feature level", n, old)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	w := newWorkload(pc, "upgrade")
	wt := newWriteTracker(w)
	leader := pc.leader(10 * time.Second)
	var followers []string
	for _, n := range clusterNames {
		if n != leader {
			followers = append(followers, n)
		}
	}
	startRV := listRV(ctx, t, pc, leader, w.ns)

	bg, stopBG := context.WithCancel(ctx)
	var bgDone sync.WaitGroup
	defer bgDone.Wait()
	defer stopBG()

	// The informer starts on the first node to be upgraded, so that its
	// stream breaks there.
	il, bal, informerRV := startInformer(bg, t, w, followers[0])
	informerStart, _ := strconv.ParseUint(informerRV, 10, 64)
	_, initialSyncs := il.counts()

	// The server ends each watch after 3 s; the watcher resumes from the
	// last resourceVersion it received.
	rw := newResumingWatcher(pc, w.ns, 3)
	bgDone.Add(1)
	go func() {
		defer bgDone.Done()
		rw.run(bg, startRV, followers[1])
	}()

	var levels levelWatch
	levelCtx, stopLevels := context.WithCancel(bg)
	levelsDone := make(chan struct{})
	go func() {
		defer close(levelsDone)
		levels.run(levelCtx, pc, rel)
	}()
	defer func() { stopLevels(); <-levelsDone }()

	// Two writers, each owning half of 20 Leases: create them, then
	// CAS-update one of its own at random, until stopped.
	var (
		wg       sync.WaitGroup
		stopping atomic.Bool
	)
	defer wg.Wait()
	defer stopping.Store(true)
	casWriters(ctx, wt, 20, 2, 33, &stopping, &wg)
	// A reader asks every node in turn for linearizable lists, so that
	// read indexes go between releases both ways.
	lr := &linearReader{w: w}
	wg.Add(1)
	go func() {
		defer wg.Done()
		lr.run(ctx, &stopping)
	}()
	waitUntil(t, 30*time.Second, "60 acknowledged writes, seen by the watch and the informer", func() bool {
		ev, _ := il.counts()
		return w.nAcks.Load() >= 60 && rw.eventCount() >= 40 && ev >= 40
	})

	// stopBehind stops name (taken out of the writers' and the balancer's
	// rotation first) and waits until the leader has a snapshot far enough
	// past what name holds that a restart needs an InstallSnapshot. It
	// returns that leader.
	type stop struct {
		node string
		at   time.Time
	}
	var stops []stop
	stopBehind := func(name string) string {
		t.Helper()
		// The watch is moved onto the node first, so that the stop ends
		// its stream and it resumes elsewhere.
		rw.settleOn(t, func() string { return name })
		w.down.Store(name, true)
		stops = append(stops, stop{name, time.Now()})
		took := pc.stop(name)
		ldr := pc.leader(15*time.Second, name)
		st, err := pc.status(ldr)
		if err != nil {
			t.Fatalf("status of %s: %v", ldr, err)
		}
		need := st.CommitIndex + 2*upgradeTrailingLogs
		waitUntil(t, 30*time.Second, fmt.Sprintf("a snapshot of %s past index %d", ldr, need), func() bool {
			return newestSnapshot(pc.node(ldr).dataDir) >= need
		})
		t.Logf("%s: stopped in %v; %s leads", name, took.Round(time.Millisecond), ldr)
		return ldr
	}
	// startOn starts name on bin with the same data dir and flags, and
	// returns how many snapshots its log says it installed before.
	startOn := func(name, bin string) int {
		t.Helper()
		n := pc.node(name)
		installs := countLines(n.logPath, "Installed remote snapshot")
		rel.set(name, bin == old)
		n.bin = bin
		pc.start(n)
		return installs
	}
	// comeBack waits until name is ready, has installed the leader's
	// snapshot and applied every acknowledged write, then puts it back in
	// rotation until writes went through it and the watch came back to it.
	// It returns when name was ready.
	comeBack := func(name string, installs int) time.Time {
		t.Helper()
		n := pc.node(name)
		ready := pc.waitReady(name, 30*time.Second)
		readyAt := time.Now()
		waitUntil(t, 15*time.Second, name+" to install the leader's snapshot", func() bool {
			return countLines(n.logPath, "Installed remote snapshot") > installs
		})
		pc.waitApplied(name, wt.maxAcked(), 20*time.Second)
		w.down.Delete(name)
		release := "this tree's binary"
		if n.bin == old {
			release = oldRelease
		}
		t.Logf("%s: restarted on %s, ready in %v, caught up by an InstallSnapshot", name, release, ready.Round(time.Millisecond))
		acks, back := w.nAcks.Load(), time.Now()
		rw.setPrefer(name)
		waitUntil(t, 20*time.Second, "50 more writes, 10 events watched on "+name, func() bool {
			return w.nAcks.Load() >= acks+50 && rw.eventsOnAfter(name, back) >= 10
		})
		return readyAt
	}
	restart := func(name, bin string) (string, time.Time) {
		t.Helper()
		ldr := stopBehind(name)
		return ldr, comeBack(name, startOn(name, bin))
	}
	leaderRelease := func(name string) releaseStatus {
		t.Helper()
		st, err := getReleaseStatus(pc.node(name).apiAddr)
		if err != nil {
			t.Fatalf("status of %s: %v", name, err)
		}
		return st
	}

	// 1. The followers, one at a time, each caught up by the old leader's
	// snapshot. The old leader shows no feature level; the new followers
	// compute none (only a leader does).
	for _, f := range followers {
		if from, _ := restart(f, bins.Path("leasehold")); leaderRelease(from).FeatureLevel != nil {
			t.Errorf("%s sent %s its snapshot but runs this tree's binary; want the old leader", from, f)
		}
		if st := leaderRelease(f); st.FeatureLevel == nil || *st.FeatureLevel != 0 {
			t.Errorf("%s (new, following) reports feature level %v, want 0", f, st.FeatureLevel)
		}
	}

	// 2. The old leader: SIGTERM hands leadership to a new node, which
	// sends it a snapshot when it comes back, still on the earlier release.
	from, _ := restart(leader, old)
	if leaderRelease(from).FeatureLevel == nil {
		t.Fatalf("%s leads after %s stopped but is not on this tree's binary", from, leader)
	}
	// The new leader hears from the old member (an "unknown rpc kind"
	// answer) each second; for three rounds the level must stay 0, and the
	// member list must name its release.
	time.Sleep(3500 * time.Millisecond)
	newLeader := pc.leader(10 * time.Second)
	if st := leaderRelease(newLeader); st.FeatureLevel == nil || *st.FeatureLevel != 0 {
		t.Errorf("leader %s with %s on %s: feature level %v, want 0", newLeader, leader, oldRelease, st.FeatureLevel)
	}
	mixed := memberVersions(t, pc, followers...)
	if m := mixed[leader]; m.Version != "older release" || !m.Healthy {
		t.Errorf("member list with %s on %s: %+v, want version \"older release\", healthy", leader, oldRelease, m)
	}
	for _, f := range followers {
		want := *leaderRelease(f).Version
		if m := mixed[f]; m.Version != want || want == "" || want == "older release" {
			t.Errorf("member list: %s has version %q, its /cluster/status says %q", f, m.Version, want)
		}
	}

	// 3. The old leader on the new binary: the level reaches this tree's
	// (fsm.MaxFeatureLevel; the earlier release has none).
	_, upgradedAt := restart(leader, bins.Path("leasehold"))
	var level1 time.Duration
	waitUntil(t, 10*time.Second, fmt.Sprintf("feature level %d once every member runs this tree's binary", fsm.MaxFeatureLevel), func() bool {
		l := pc.currentLeader()
		if l == "" {
			return false
		}
		st, err := getReleaseStatus(pc.node(l).apiAddr)
		level1 = time.Since(upgradedAt)
		return err == nil && st.FeatureLevel != nil && *st.FeatureLevel == fsm.MaxFeatureLevel
	})
	// The level is a log entry: every node applies it.
	ldrNow := pc.leader(10 * time.Second)
	st, err := pc.status(ldrNow)
	if err != nil {
		t.Fatal(err)
	}
	levelIndex := st.CommitIndex // at or after the entry that raised it
	for _, n := range clusterNames {
		pc.waitApplied(n, levelIndex, 10*time.Second)
		if st := leaderRelease(n); st.FeatureLevel == nil || *st.FeatureLevel != fsm.MaxFeatureLevel {
			t.Errorf("%s: feature level %v once every member runs this tree's binary, want %d", n, st.FeatureLevel, fsm.MaxFeatureLevel)
		}
	}
	all := memberVersions(t, pc)
	for _, n := range clusterNames {
		want := *leaderRelease(n).Version
		if m := all[n]; m.Version != want || want == "" || want == "older release" {
			t.Errorf("member list after the upgrade: %s has version %q, its /cluster/status says %q", n, m.Version, want)
		}
	}

	stopLevels()
	<-levelsDone

	// 4. A downgrade, once the level is raised, is refused: a follower
	// whose retained snapshots were all taken at the raised level (they
	// record it, in a format the earlier release does not read) is started
	// on the earlier release, which cannot read them and exits at start,
	// before it serves or votes; started on this tree's binary again it
	// catches up, and the level stays.
	down := followers[0]
	if l := pc.leader(10 * time.Second); l == down {
		down = followers[1]
	}
	dn := pc.node(down)
	waitUntil(t, 30*time.Second, "every snapshot "+down+" keeps to be taken at the raised level", func() bool {
		snaps := completeSnapshots(dn.dataDir)
		return len(snaps) > 0 && slices.Min(snaps) > levelIndex
	})
	stopBehind(down)
	logFrom := logSize(dn.logPath)
	startOn(down, old)
	waitUntil(t, 15*time.Second, down+" on "+oldRelease+" to exit", func() bool {
		if code, _, err := getReady(dn.apiAddr); err == nil && code == http.StatusOK {
			t.Fatalf("%s on %s is ready on a data dir at feature level %d", down, oldRelease, fsm.MaxFeatureLevel)
		}
		return !dn.Running()
	})
	refusal := readLogFrom(dn.logPath, logFrom)
	// Level 1 added a record the earlier release does not know, level 2
	// a snapshot format.
	unreadable := strings.Contains(refusal, "unknown record type") || strings.Contains(refusal, "not a leasehold snapshot of version")
	if code := dn.Process().State().ExitCode(); code != 1 || !unreadable || !strings.Contains(refusal, "failed to load any existing snapshots") {
		t.Fatalf("%s on %s: exit status %d; want 1, refusing its snapshots of the raised level; log:\n%s", down, oldRelease, code, refusal)
	}
	ignoreLog := [2]int64{logFrom, logSize(dn.logPath)}
	comeBack(down, startOn(down, bins.Path("leasehold")))
	for _, n := range clusterNames {
		if st := leaderRelease(n); st.FeatureLevel == nil || *st.FeatureLevel != fsm.MaxFeatureLevel {
			t.Errorf("%s: feature level %v after the refused downgrade, want %d", n, st.FeatureLevel, fsm.MaxFeatureLevel)
		}
	}

	acks := w.nAcks.Load()
	waitUntil(t, 20*time.Second, "50 more writes after the downgrade", func() bool { return w.nAcks.Load() >= acks+50 })
	stopping.Store(true)
	wg.Wait()

	// Every node applies everything acknowledged and serves it; the watch
	// and the informer catch up with the final state.
	maxRV := wt.maxAcked()
	for _, n := range clusterNames {
		pc.waitApplied(n, maxRV, 30*time.Second)
	}
	w.checkAll(ctx, t, clusterNames...)
	final := finalList(ctx, t, pc, w.ns)
	target := maxRV
	for _, it := range final {
		target = max(target, it.rv)
	}
	waitUntil(t, 20*time.Second, fmt.Sprintf("the watch and the informer to reach resourceVersion %d", target), func() bool {
		return rw.lastRV() >= target && il.lastRV() >= target
	})
	stopBG()
	bgDone.Wait()

	events, conns := rw.snapshot()
	checkWatchHistory(t, events, startRV, wt, final)
	replays := replayAll(ctx, t, pc, w.ns, startRV, target)
	want := deliveredOnly(events)
	for _, n := range clusterNames {
		if d := diffEvents(want, replays[n]); d != "" {
			t.Errorf("%s: a watch from %d at the end differs from the resumed watch: %s", n, startRV, d)
		}
	}
	// Each stop ended the watch's stream on that node (SIGTERM ends
	// streams as a clean end), and the watch resumed on another node from
	// the last resourceVersion it had; checkWatchHistory says nothing was
	// missed in between.
	var resumes []string
	for _, st := range stops {
		i := slices.IndexFunc(conns, func(c watchConn) bool {
			return c.node == st.node && !c.opened.After(st.at) && (c.ended.IsZero() || !c.ended.Before(st.at))
		})
		if i < 0 {
			t.Errorf("no watch stream was open on %s when it was stopped", st.node)
			continue
		}
		nxt := nextOK(conns, i)
		if nxt == nil || nxt.node == st.node {
			t.Errorf("the watch on %s did not resume on another node after the stop: %s", st.node, describeConns(conns[i:]))
			continue
		}
		resumes = append(resumes, fmt.Sprintf("%s→%s from rv %d in %v", st.node, nxt.node, nxt.from, nxt.ok.Sub(conns[i].ended).Round(time.Millisecond)))
	}

	il.mu.Lock()
	infEvents, syncs, infErrs := append([]watchEvent(nil), il.events...), il.syncs, il.errs
	il.mu.Unlock()
	checkWatchHistory(t, infEvents, informerStart, wt, final)
	if len(syncs) != initialSyncs {
		t.Errorf("the informer listed again (%v): it lost its place in a watch", syncs)
	}
	for _, e := range infErrs {
		if strings.Contains(e, "410") || strings.Contains(e, "Expired") || strings.Contains(e, "Gone") {
			t.Errorf("the informer's watch was told its resourceVersion is too old: %s", e)
		}
	}

	levels.mu.Lock()
	for _, v := range levels.violations {
		t.Errorf("feature level raised with an old member: %s", v)
	}
	levelSamples := levels.samples
	levels.mu.Unlock()

	for _, n := range pc.nodes {
		if !n.Running() {
			t.Errorf("%s is not running at the end: %s", n.name, n.Process().Status())
		}
		skip := [2]int64{}
		if n.name == down {
			skip = ignoreLog
		}
		for _, bad := range []string{"panic", "failed to restore snapshot", "installSnapshot rejected"} {
			for _, line := range grepLog(n.logPath, bad, skip) {
				t.Errorf("%s logged %q: %s", n.name, bad, line)
			}
		}
	}

	bal.mu.Lock()
	informerWatches := strings.Join(bal.used, ", ")
	bal.mu.Unlock()
	t.Logf("%d acknowledged writes (rv %d..%d), %d with an unknown outcome; transient errors: %s",
		len(wt.snapshotAcked()), startRV, maxRV, len(wt.snapshotUnknown()), w.errSummary())
	t.Logf("watch: %d events over %d connections, resumed after each stop: %s; informer: %d events, watches on %s",
		len(want), len(conns), strings.Join(resumes, ", "), len(infEvents), informerWatches)
	t.Logf("feature level: %d samples of a new leader's level during the upgrade; %d within %v of the last upgrade", levelSamples, fsm.MaxFeatureLevel, level1.Round(time.Millisecond))
	t.Logf("downgrade: %s on %s refused its data dir at feature level %d at start (exit status 1) and came back on this tree's binary", down, oldRelease, fsm.MaxFeatureLevel)
	lr.mu.Lock()
	for _, b := range lr.bad {
		t.Errorf("linearizable list: %s", b)
	}
	t.Logf("linearizable lists: %d answered, errors: %v", lr.reads, lr.errs)
	lr.mu.Unlock()
}

// linearReader lists the workload's namespace through each node the test
// has not taken down, in turn, and checks that every Lease is at least at
// the version acknowledged before the list was sent.
type linearReader struct {
	w     *workload
	mu    sync.Mutex
	reads int
	errs  map[string]int
	bad   []string
}

func (lr *linearReader) run(ctx context.Context, stopping *atomic.Bool) {
	lr.errs = map[string]int{}
	for i := 0; !stopping.Load() && ctx.Err() == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		n := lr.w.pc.nodes[i%len(lr.w.pc.nodes)]
		if _, down := lr.w.down.Load(n.name); down {
			continue
		}
		before := map[string]uint64{}
		for j := range 20 {
			if l := lr.w.last(leaseName(j)); l != nil {
				before[l.Name], _ = strconv.ParseUint(l.ResourceVersion, 10, 64)
			}
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		list, err := n.protoClient.CoordinationV1().Leases(lr.w.ns).List(lctx, metav1.ListOptions{})
		cancel()
		lr.mu.Lock()
		if err != nil {
			_, kind := retryable(err)
			lr.errs[kind]++
			lr.mu.Unlock()
			continue
		}
		lr.reads++
		got := map[string]uint64{}
		for _, l := range list.Items {
			got[l.Name], _ = strconv.ParseUint(l.ResourceVersion, 10, 64)
		}
		for name, rv := range before {
			if got[name] < rv && len(lr.bad) < 20 {
				lr.bad = append(lr.bad, fmt.Sprintf("via %s: %s at %d, but %d was acknowledged before the list", n.name, name, got[name], rv))
			}
		}
		lr.mu.Unlock()
	}
}

// grepLog returns the lines of a node's log containing substr, ignoring
// case, outside the byte range skip.
func grepLog(path, substr string, skip [2]int64) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}
	}
	if skip[1] > skip[0] && skip[1] <= int64(len(b)) {
		b = append(b[:skip[0]:skip[0]], b[skip[1]:]...)
	}
	var out []string
	substr = strings.ToLower(substr)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(strings.ToLower(line), substr) {
			out = append(out, line)
		}
	}
	return out
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// completeSnapshots are the indexes of the snapshots in a node's data dir
// (hashicorp/raft's file store; one being written ends in .tmp).
func completeSnapshots(dataDir string) []uint64 {
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "meta.json"))
	var out []uint64
	for _, p := range dirs {
		if strings.HasSuffix(filepath.Dir(p), ".tmp") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) == nil {
			out = append(out, meta.Index)
		}
	}
	return out
}

// readLogFrom is a node's log from byte offset on.
func readLogFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[min(offset, int64(len(b))):])
}
