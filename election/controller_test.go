package election

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/testcluster"
	"github.com/leasehold/leasehold/registry"
)

// ------------------------------------------------------------ fake clock

// fakeClock is a Clock that moves only when told to.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	// Near the real time, so that creationTimestamps (real) and the
	// controller's times (fake) are comparable.
	return &fakeClock{now: time.Now().UTC().Truncate(time.Second)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, fakeWaiter{at: f.now.Add(d), ch: ch})
	return ch
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if !w.at.After(f.now) {
			w.ch <- f.now
			continue
		}
		kept = append(kept, w)
	}
	f.waiters = kept
}

// ------------------------------------------------------------ environment

// env is an in-process three-node cluster with a controller on every node,
// all on one fake clock, and simulated candidates driven by the test.
type env struct {
	t     *testing.T
	c     *testcluster.Cluster
	clock *fakeClock
	ctx   context.Context

	mu      sync.Mutex
	ctrls   []*Controller
	regs    []*prometheus.Registry
	cancels []context.CancelFunc
	stores  map[*cluster.Node]*registry.Store
	sims    []*sim
}

// step is how far the fake clock moves per step of the test.
const step = 100 * time.Millisecond

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	c := testcluster.New(t, 3, testcluster.Options{})
	e := &env{t: t, c: c, clock: newFakeClock(), ctx: context.Background(), stores: map[*cluster.Node]*registry.Store{}}
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		node := n.Raft()
		reg := prometheus.NewRegistry()
		cc := cfg
		cc.Store = registry.New(node)
		cc.Node = node
		cc.Clock = e.clock
		cc.Registerer = reg
		cc.Logger = hclog.New(&hclog.LoggerOptions{Name: "election-" + n.Name, Level: hclog.Info, Output: logWriter{t}})
		ctrl := New(cc)
		ctx, cancel := context.WithCancel(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctrl.Run(ctx)
		}()
		e.ctrls = append(e.ctrls, ctrl)
		e.regs = append(e.regs, reg)
		e.cancels = append(e.cancels, cancel)
	}
	t.Cleanup(func() {
		for _, cancel := range e.cancels {
			cancel()
		}
		wg.Wait()
	})
	return e
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // logging after the test ended
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// leader returns the index of the Raft leader and a Store on it.
func (e *env) leader() (int, *registry.Store) {
	e.t.Helper()
	i := e.c.Leader()
	node := e.c.Nodes[i].Raft()
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.stores[node]
	if !ok {
		st = registry.New(node)
		e.stores[node] = st
	}
	return i, st
}

// killNode crashes member i (no leadership transfer) and stops its
// controller.
func (e *env) killNode(i int) {
	e.c.Kill(i)
	e.cancels[i]()
}

// do runs f against the leader's store, retrying while leadership moves.
func (e *env) do(f func(st *registry.Store) error) error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		_, st := e.leader()
		err = f(st)
		if err == nil || (!apierrors.IsServiceUnavailable(err) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err)) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func (e *env) lease(ns, name string) *coordinationv1.Lease {
	e.t.Helper()
	var out *coordinationv1.Lease
	err := e.do(func(st *registry.Store) error {
		obj, err := st.Get(e.ctx, registry.Leases, ns, name, registry.ReadOptions{})
		if err != nil {
			return err
		}
		out = obj.(*coordinationv1.Lease).DeepCopy()
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("get lease %s/%s: %v", ns, name, err)
	}
	return out
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func preferredOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.PreferredHolder == nil {
		return ""
	}
	return *l.Spec.PreferredHolder
}

// runUntil advances the fake clock step by step, letting the simulated
// candidates act after every step, until cond holds; it fails the test
// after max of fake time (or two minutes of real time). It returns the fake
// time it took.
func (e *env) runUntil(what string, max time.Duration, cond func() bool) time.Duration {
	e.t.Helper()
	start := e.clock.Now()
	realDeadline := time.Now().Add(2 * time.Minute)
	for {
		if cond() {
			return e.clock.Now().Sub(start)
		}
		if e.clock.Now().Sub(start) > max || time.Now().After(realDeadline) {
			e.t.Fatalf("%s: not within %v of fake time (status %+v)", what, max, e.leaderStatus())
		}
		e.clock.Advance(step)
		e.tickSims()
		time.Sleep(3 * time.Millisecond)
	}
}

// run advances the fake clock by d, with the candidates acting.
func (e *env) run(d time.Duration) {
	end := e.clock.Now().Add(d)
	for e.clock.Now().Before(end) {
		e.clock.Advance(step)
		e.tickSims()
		time.Sleep(3 * time.Millisecond)
	}
}

func (e *env) tickSims() {
	e.mu.Lock()
	sims := append([]*sim(nil), e.sims...)
	e.mu.Unlock()
	for _, s := range sims {
		s.tick()
	}
}

// leaderCtrl is the controller on the Raft leader.
func (e *env) leaderCtrl() *Controller {
	i, _ := e.leader()
	return e.ctrls[i]
}

func (e *env) leaderStatus() []LeaseStatus { return e.leaderCtrl().Status() }

func (e *env) status(ns, name string) (LeaseStatus, bool) {
	for _, s := range e.leaderStatus() {
		if s.Namespace == ns && s.LeaseName == name {
			return s, true
		}
	}
	return LeaseStatus{}, false
}

// metric reads a counter or gauge from the leader controller's registry.
func (e *env) metric(name string, labels map[string]string) float64 {
	e.t.Helper()
	i, _ := e.leader()
	mfs, err := e.regs[i].Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metrics
				}
			}
			if m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	e.t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

// ------------------------------------------------------------ candidates

// sim is a simulated candidate, behaving like client-go's LeaseCandidate
// helper plus a coordinated leader elector: it answers pings by renewing,
// and renews the Lease while it holds it, is not asked to step down and the
// Lease has not expired.
type sim struct {
	e                     *env
	ns, name, lease       string
	res                   *registry.Resource
	alive                 atomic.Bool
	renews                int // pings answered
	emulation, binary     string
	strategy              Strategy
	preferred             []Strategy // v1alpha1 when set
	createdAt, lastAnswer time.Time
}

type simOpt func(*sim)

func withStrategy(s Strategy) simOpt { return func(c *sim) { c.strategy = s } }
func v1alpha1Prefs(p ...Strategy) simOpt {
	return func(c *sim) { c.preferred = p }
}

// addSim creates the candidate (renewTime now) and starts simulating it.
func (e *env) addSim(ns, name, lease, emulation, binary string, opts ...simOpt) *sim {
	e.t.Helper()
	s := &sim{e: e, ns: ns, name: name, lease: lease, emulation: emulation, binary: binary, strategy: coordinationv1.OldestEmulationVersion}
	for _, o := range opts {
		o(s)
	}
	now := e.clock.Now()
	var obj registry.Object
	if s.preferred != nil {
		s.res, _ = registry.Lookup(apis.Group, "v1alpha1", "leasecandidates")
		obj = &v1alpha1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.LeaseCandidateSpec{LeaseName: lease, EmulationVersion: emulation, BinaryVersion: binary,
				PreferredStrategies: s.preferred, RenewTime: &metav1.MicroTime{Time: now}},
		}
	} else {
		s.res, _ = registry.Lookup(apis.Group, "v1beta1", "leasecandidates")
		obj = &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: lease, EmulationVersion: emulation, BinaryVersion: binary,
				Strategy: s.strategy, RenewTime: &metav1.MicroTime{Time: now}},
		}
	}
	if err := e.do(func(st *registry.Store) error {
		_, err := st.Create(e.ctx, s.res, obj.DeepCopyObject().(registry.Object), registry.WriteOptions{})
		return err
	}); err != nil {
		e.t.Fatalf("create candidate %s/%s: %v", ns, name, err)
	}
	s.createdAt = now
	s.alive.Store(true)
	e.mu.Lock()
	e.sims = append(e.sims, s)
	e.mu.Unlock()
	return s
}

// kill stops the candidate: no more answers, no more Lease renewals.
func (s *sim) kill() { s.alive.Store(false) }

func candidateTimes(obj runtime.Object) (ping, renew *metav1.MicroTime) {
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		return o.Spec.PingTime, o.Spec.RenewTime
	case *v1alpha1.LeaseCandidate:
		return o.Spec.PingTime, o.Spec.RenewTime
	}
	panic("not a candidate")
}

func setRenewTime(obj runtime.Object, t time.Time) {
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		o.Spec.RenewTime = &metav1.MicroTime{Time: t}
	case *v1alpha1.LeaseCandidate:
		o.Spec.RenewTime = &metav1.MicroTime{Time: t}
	}
}

// get reads the candidate in its own version (nil when gone).
func (s *sim) get() registry.Object {
	var out registry.Object
	err := s.e.do(func(st *registry.Store) error {
		obj, err := st.Get(s.e.ctx, s.res, s.ns, s.name, registry.ReadOptions{})
		if err == nil {
			out = obj.(registry.Object)
		}
		return err
	})
	if err != nil {
		return nil
	}
	return out
}

func (s *sim) tick() {
	if !s.alive.Load() {
		return
	}
	e := s.e
	now := e.clock.Now()
	_, st := e.leader()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	// Answer a ping.
	if obj, err := st.Get(ctx, s.res, s.ns, s.name, registry.ReadOptions{ResourceVersion: "0"}); err == nil {
		ping, renew := candidateTimes(obj)
		if ping != nil && (renew == nil || !renew.After(ping.Time)) {
			t := now
			if !t.After(ping.Time) {
				t = ping.Add(time.Millisecond)
			}
			setRenewTime(obj, t)
			if _, _, err := st.Update(ctx, s.res, s.ns, s.name, obj.(registry.Object), registry.WriteOptions{}); err == nil {
				s.renews++
				s.lastAnswer = now
			}
		}
	}
	// Renew the Lease as a coordinated elector does.
	obj, err := st.Get(ctx, registry.Leases, s.ns, s.lease, registry.ReadOptions{ResourceVersion: "0"})
	if err != nil {
		return
	}
	l := obj.(*coordinationv1.Lease)
	if holderOf(l) != s.name || preferredOf(l) != "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
		l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second).Before(now) {
		return
	}
	l = l.DeepCopy()
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	_, _, _ = st.Update(ctx, registry.Leases, s.ns, s.lease, l, registry.WriteOptions{})
}

// ------------------------------------------------------------ tests

// Versions 1.30/1.31/1.31: the 1.30 candidate leads; when it stops renewing,
// its Lease expires and, after the ping window, the next best leads.
func TestElectsOldestEmulationVersionAndHandsOver(t *testing.T) {
	e := newEnv(t, Config{})
	const ns, lease = "e1", "ctrl"
	a := e.addSim(ns, "a", lease, "1.30.0", "1.30.0")
	e.addSim(ns, "b", lease, "1.31.0", "1.31.0")
	e.addSim(ns, "c", lease, "1.31.0", "1.31.0")

	took := e.runUntil("a elected", 30*time.Second, func() bool { return holderOf(e.lease(ns, lease)) == "a" })
	t.Logf("first election: %v of fake time after the candidates were created", took)
	l := e.lease(ns, lease)
	if l.Spec.Strategy == nil || *l.Spec.Strategy != coordinationv1.OldestEmulationVersion {
		t.Errorf("strategy = %v, want OldestEmulationVersion", l.Spec.Strategy)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 5 {
		t.Errorf("leaseDurationSeconds = %v, want 5", l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.AcquireTime == nil || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 0 || l.Spec.PreferredHolder != nil {
		t.Errorf("new lease spec = %+v, want acquireTime set, leaseTransitions 0, no preferredHolder", l.Spec)
	}
	firstAcquire := l.Spec.AcquireTime.Time
	e.runUntil("status elected", 10*time.Second, func() bool {
		st, ok := e.status(ns, lease)
		return ok && st.State == StateElected && st.Holder == "a" && len(st.Candidates) == 3
	})
	if got := e.metric("leasehold_election_leases", map[string]string{"state": "elected"}); got != 1 {
		t.Errorf("leasehold_election_leases{state=elected} = %v, want 1", got)
	}
	// The holder keeps it while it renews: a few resyncs change nothing.
	e.run(12 * time.Second)
	if h := holderOf(e.lease(ns, lease)); h != "a" {
		t.Fatalf("holder changed to %q while a renewed", h)
	}

	a.kill()
	killed := e.clock.Now()
	took = e.runUntil("b takes over", 60*time.Second, func() bool { return holderOf(e.lease(ns, lease)) == "b" })
	t.Logf("handover after the holder stopped: %v of fake time (lease duration 5s + ping window 5s)", took)
	// The Lease expires 5s after a's last renewal; the election then pings
	// a and waits the whole ping window (5s) for it.
	if took < 10*time.Second-2*step {
		t.Errorf("handover after %v: before the Lease expired and a's ping window passed", took)
	}
	l = e.lease(ns, lease)
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("leaseTransitions = %v, want 1", l.Spec.LeaseTransitions)
	}
	if l.Spec.AcquireTime == nil || !l.Spec.AcquireTime.After(firstAcquire) || l.Spec.PreferredHolder != nil {
		t.Errorf("after handover spec = %+v, want a new acquireTime and no preferredHolder", l.Spec)
	}
	// a was pinged and did not answer: that is why b was elected.
	ping, renew := candidateTimes(a.get())
	if ping == nil || renew.After(ping.Time) || ping.Before(&metav1.MicroTime{Time: killed}) {
		t.Errorf("a: pingTime %v renewTime %v, want a ping after it stopped, unanswered", ping, renew)
	}
	e.runUntil("status elected b", 10*time.Second, func() bool {
		st, ok := e.status(ns, lease)
		return ok && st.State == StateElected && st.Holder == "b" && strings.Join(st.Eligible, ",") == "b,c"
	})
}

// A worse holder gets preferredHolder set, steps down, and the better
// candidate takes the Lease over.
func TestWorseHolderGetsPreferredHolder(t *testing.T) {
	e := newEnv(t, Config{})
	const ns, lease = "e2", "ctrl"
	e.addSim(ns, "b", lease, "1.31.0", "1.31.0")
	e.runUntil("b elected", 30*time.Second, func() bool { return holderOf(e.lease(ns, lease)) == "b" })

	e.run(7 * time.Second) // b's candidate is no longer fresh: it will be pinged
	e.addSim(ns, "a", lease, "1.30.0", "1.30.0")
	took := e.runUntil("preferredHolder a", 30*time.Second, func() bool {
		l := e.lease(ns, lease)
		return holderOf(l) == "b" && preferredOf(l) == "a"
	})
	t.Logf("preferredHolder set %v of fake time after the better candidate appeared", took)
	took = e.runUntil("a takes over", 30*time.Second, func() bool {
		l := e.lease(ns, lease)
		return holderOf(l) == "a" && preferredOf(l) == ""
	})
	t.Logf("graceful handover %v of fake time after preferredHolder was set", took)
	if l := e.lease(ns, lease); l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Errorf("leaseTransitions = %v, want 1", l.Spec.LeaseTransitions)
	}
}

// Conflicting strategies leave the Lease untouched and show in Status, the
// log and the metrics; resolving them resumes the election.
func TestStrategyConflictLeavesLeaseAlone(t *testing.T) {
	e := newEnv(t, Config{})
	const ns, lease = "conf", "locked"
	// An existing Lease, held by someone else for a long time.
	var created *coordinationv1.Lease
	now := e.clock.Now()
	if err := e.do(func(st *registry.Store) error {
		obj, err := st.Create(e.ctx, registry.Leases, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("someone"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: now}, AcquireTime: &metav1.MicroTime{Time: now}},
		}, registry.WriteOptions{})
		if err == nil {
			created = obj.(*coordinationv1.Lease)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// v1alpha1 lists [OEV, X] against [X, OEV]: a cycle.
	x := Strategy("example.com/x")
	p := e.addSim(ns, "p", lease, "1.31.0", "1.31.0", v1alpha1Prefs(coordinationv1.OldestEmulationVersion, x))
	q := e.addSim(ns, "q", lease, "1.31.0", "1.31.0", v1alpha1Prefs(x, coordinationv1.OldestEmulationVersion))
	// v1beta1: the same highest binaryVersion with different strategies.
	const ns2 = "conf2"
	r := e.addSim(ns2, "r", lease, "1.31.0", "1.31.0")
	s := e.addSim(ns2, "s", lease, "1.31.0", "1.31.0", withStrategy(x))

	e.runUntil("both conflicts reported", 15*time.Second, func() bool {
		s1, ok1 := e.status(ns, lease)
		s2, ok2 := e.status(ns2, lease)
		return ok1 && ok2 && s1.State == StateConflict && s2.State == StateConflict
	})
	// The candidates were created one by one, so a round may have seen the
	// first alone and acted on it (no conflict yet): from the moment the
	// conflict is reported, nothing may change. r may hold the second Lease
	// by then: it stops renewing, so that the Lease expires and only the
	// controller could change it.
	r.kill()
	s.kill()
	before1, before2 := e.lease(ns, lease), e.lease(ns2, lease)
	pingP, _ := candidateTimes(p.get())
	pingQ, _ := candidateTimes(q.get())
	e.run(20 * time.Second) // several resyncs
	s1, _ := e.status(ns, lease)
	if !strings.Contains(s1.Error, "contradict") || s1.Strategy != "" || s1.Holder != "someone" {
		t.Errorf("status = %+v, want a conflict error about contradicting orders", s1)
	}
	s2, _ := e.status(ns2, lease)
	if !strings.Contains(s2.Error, "same binaryVersion 1.31.0") {
		t.Errorf("status = %+v, want a conflict error about the same binaryVersion", s2)
	}
	if holderOf(before1) != "someone" {
		t.Errorf("the Lease was taken from its holder: %+v", before1.Spec)
	}
	if l := e.lease(ns, lease); l.ResourceVersion != before1.ResourceVersion {
		t.Errorf("the Lease changed during the conflict: %+v (created at %s, %s when the conflict was reported, now %s)",
			l.Spec, created.ResourceVersion, before1.ResourceVersion, l.ResourceVersion)
	}
	if l := e.lease(ns2, lease); (l == nil) != (before2 == nil) || (l != nil && l.ResourceVersion != before2.ResourceVersion) {
		t.Errorf("the second Lease changed during the conflict: before %v, after %v", before2, l)
	}
	for _, c := range []struct {
		s      *sim
		before *metav1.MicroTime
	}{{p, pingP}, {q, pingQ}} {
		if ping, _ := candidateTimes(c.s.get()); !ping.Equal(c.before) {
			t.Errorf("candidate %s was pinged during the conflict: pingTime %v, then %v", c.s.name, c.before, ping)
		}
	}
	// Counted once per conflict, not once per round.
	if got := e.metric("leasehold_election_conflicts_total", nil); got != 2 {
		t.Errorf("leasehold_election_conflicts_total = %v, want 2", got)
	}
	if got := e.metric("leasehold_election_leases", map[string]string{"state": "conflict"}); got != 2 {
		t.Errorf("leasehold_election_leases{state=conflict} = %v, want 2", got)
	}

	// Resolve the first conflict: p alone prefers OldestEmulationVersion.
	q.kill()
	if err := e.do(func(st *registry.Store) error {
		_, err := st.Delete(e.ctx, q.res, ns, "q", registry.DeleteOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	e.runUntil("p preferred over the foreign holder", 30*time.Second, func() bool {
		l := e.lease(ns, lease)
		return holderOf(l) == "someone" && preferredOf(l) == "p"
	})
	s1, _ = e.status(ns, lease)
	if s1.State == StateConflict || s1.Strategy != string(coordinationv1.OldestEmulationVersion) {
		t.Errorf("status after resolution = %+v", s1)
	}
	if got := e.metric("leasehold_election_conflicts_total", nil); got != 2 {
		t.Errorf("leasehold_election_conflicts_total = %v after resolution, want still 2", got)
	}
	// p was pinged through v1alpha1: its list survived.
	if p.renews == 0 {
		t.Errorf("p was never pinged")
	}
	if got := p.get().(*v1alpha1.LeaseCandidate).Spec.PreferredStrategies; len(got) != 2 || got[1] != x {
		t.Errorf("p's preferredStrategies after a ping = %v, want [OldestEmulationVersion %s]", got, x)
	}
}

// A strategy this controller does not implement: the Lease is created with
// it and no holder.
func TestOtherStrategyCreatesLeaseWithoutHolder(t *testing.T) {
	e := newEnv(t, Config{})
	const ns, lease = "other", "custom"
	e.addSim(ns, "u", lease, "1.31.0", "1.31.0", withStrategy("example.com/custom"))
	e.runUntil("lease created", 15*time.Second, func() bool { return e.lease(ns, lease) != nil })
	l := e.lease(ns, lease)
	if l.Spec.Strategy == nil || *l.Spec.Strategy != "example.com/custom" || l.Spec.HolderIdentity != nil {
		t.Errorf("lease spec = %+v, want strategy example.com/custom and no holder", l.Spec)
	}
	e.runUntil("status", 10*time.Second, func() bool {
		st, ok := e.status(ns, lease)
		return ok && st.State == StateWaiting && strings.Contains(st.Reason, "another controller")
	})
}

// Candidates that stopped renewing longer than GCAge ago are deleted and
// never elected.
func TestGarbageCollection(t *testing.T) {
	e := newEnv(t, Config{GCAge: 10 * time.Minute, GCInterval: 10 * time.Second})
	const ns, lease = "gc", "ctrl"
	// old would win on versions, but has not renewed for 11 minutes.
	old := e.clock.Now().Add(-11 * time.Minute)
	if err := e.do(func(st *registry.Store) error {
		res, _ := registry.Lookup(apis.Group, "v1beta1", "leasecandidates")
		_, err := st.Create(e.ctx, res, &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: lease, EmulationVersion: "1.29.0", BinaryVersion: "1.29.0",
				Strategy: coordinationv1.OldestEmulationVersion, RenewTime: &metav1.MicroTime{Time: old}},
		}, registry.WriteOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	live := e.addSim(ns, "live", lease, "1.31.0", "1.31.0")
	took := e.runUntil("old collected", 30*time.Second, func() bool {
		return e.do(func(st *registry.Store) error {
			res, _ := registry.Lookup(apis.Group, "v1beta1", "leasecandidates")
			_, err := st.Get(e.ctx, res, ns, "old", registry.ReadOptions{})
			return err
		}) != nil
	})
	t.Logf("stale candidate collected %v of fake time after it was created", took)
	if live.get() == nil {
		t.Fatal("the live candidate was collected")
	}
	e.runUntil("live elected", 15*time.Second, func() bool { return holderOf(e.lease(ns, lease)) == "live" })
}

// The controller keeps working across a Raft leader change: the leader is
// killed in-process, the controller on the new leader resumes from the
// replicated state and hands the Lease over when its holder stops.
func TestSurvivesRaftLeaderChange(t *testing.T) {
	e := newEnv(t, Config{})
	const ns, lease = "lc", "ctrl"
	a := e.addSim(ns, "a", lease, "1.30.0", "1.30.0")
	e.addSim(ns, "b", lease, "1.31.0", "1.31.0")
	e.addSim(ns, "c", lease, "1.31.0", "1.31.0")
	e.runUntil("a elected", 30*time.Second, func() bool { return holderOf(e.lease(ns, lease)) == "a" })

	old, _ := e.leader()
	oldCtrl := e.ctrls[old]
	realStart := time.Now()
	e.killNode(old)
	newLeader, _ := e.leader()
	t.Logf("raft leader %s killed; %s leads after %v", e.c.Nodes[old].Name, e.c.Nodes[newLeader].Name, time.Since(realStart))
	e.runUntil("new leader's controller reports the Lease", 20*time.Second, func() bool {
		st, ok := e.status(ns, lease)
		return ok && st.State == StateElected && st.Holder == "a"
	})
	if st := oldCtrl.Status(); len(st) != 0 {
		t.Errorf("the dead leader's controller still reports %+v", st)
	}
	if h := holderOf(e.lease(ns, lease)); h != "a" {
		t.Fatalf("holder changed to %q across the leader change", h)
	}

	a.kill()
	took := e.runUntil("b takes over under the new leader", 60*time.Second, func() bool {
		return holderOf(e.lease(ns, lease)) == "b"
	})
	t.Logf("handover under the new Raft leader: %v of fake time", took)
}
