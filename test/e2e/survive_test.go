package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The process-level test: three real processes, 200 Leases written
// round-robin through all of them (protobuf and JSON), the leader SIGKILLed
// while writes are in flight, writes continuing through the survivors, the
// killed node restarted, and every acknowledged write checked on all three.
func TestLeaderSIGKILLLosesNoAcknowledgedWrite(t *testing.T) {
	pc := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newWorkload(pc, "survive")

	const total, before, workers = 200, 120, 3
	for _, err := range w.createRange(ctx, 0, before, 4) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Background writers: the remaining creates, and CAS updates of the
	// Leases each writer owns (i % workers == k), until told to stop.
	var (
		wg       sync.WaitGroup
		created  atomic.Int64
		errMu    sync.Mutex
		werrs    []error
		stopping = make(chan struct{})
	)
	created.Store(before)
	wctx, cancelW := context.WithCancel(ctx)
	defer wg.Wait()
	defer cancelW()
	record := func(err error) {
		errMu.Lock()
		werrs = append(werrs, err)
		errMu.Unlock()
	}
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), 42))
			next := before + k
			for wctx.Err() == nil {
				if next < total {
					if err := w.create(wctx, leaseName(next)); err != nil {
						record(err)
					}
					next += workers
					created.Add(1)
				} else {
					select {
					case <-stopping:
						return
					default:
					}
				}
				limit := min(next, total)
				owned := (limit - k + workers - 1) / workers
				name := leaseName(k + workers*rng.IntN(owned))
				if w.isMaybe(name) {
					continue
				}
				if err := w.update(wctx, name); err != nil {
					record(err)
				}
			}
		}()
	}

	waitUntil(t, 30*time.Second, "writes in flight before the kill", func() bool { return w.nAcks.Load() >= before+20 })
	leader := pc.leader(10 * time.Second)
	w.down.Store(leader, true)
	acksAtKill := w.nAcks.Load()
	killAt := time.Now()
	pc.kill(leader)
	newLeader := pc.leader(30*time.Second, leader)
	failover := time.Since(killAt)

	// Keep writing through the survivors.
	waitUntil(t, 60*time.Second, "all creates and 60 acknowledged writes through the survivors", func() bool {
		return created.Load() >= total && w.nAcks.Load() >= acksAtKill+60
	})
	first, ok := w.firstAckSentAfter(killAt)
	if !ok {
		t.Fatal("no write sent after the kill was acknowledged")
	}

	pc.restart(leader)
	ready := pc.waitReady(leader, 30*time.Second)
	w.down.Delete(leader)
	acks := w.nAcks.Load()
	waitUntil(t, 30*time.Second, "30 acknowledged writes after the restart", func() bool { return w.nAcks.Load() >= acks+30 })
	close(stopping)
	wg.Wait()
	for _, err := range werrs {
		t.Errorf("writer: %v", err)
	}

	t.Logf("SIGKILL of leader %s: %s reported itself leader after %v; first write sent after the kill acknowledged after %v (via %s)",
		leader, newLeader, failover.Round(time.Millisecond), first.acked.Sub(killAt).Round(time.Millisecond), first.node)
	t.Logf("restart of %s: ready after %v (process start to /readyz 200)", leader, ready.Round(time.Millisecond))
	t.Logf("%d acknowledged writes; transient errors: %s", w.nAcks.Load(), w.errSummary())
	w.checkAll(ctx, t, clusterNames...)
}

// SIGTERM of the leader: exit status 0 within 10 s, watches end, a new leader
// is elected, writes go on, and the stopped node rejoins with all the data.
func TestLeaderSIGTERMExitsCleanlyAndClusterGoesOn(t *testing.T) {
	pc := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newWorkload(pc, "graceful")
	for _, err := range w.createRange(ctx, 0, 40, 3) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	leader := pc.leader(10 * time.Second)
	watch, err := pc.node(leader).protoClient.CoordinationV1().Leases(w.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("watch on %s: %v", leader, err)
	}
	defer watch.Stop()

	w.down.Store(leader, true)
	stopAt := time.Now()
	took := pc.stop(leader) // fails the test unless exit 0 within 10 s
	newLeader := pc.leader(15*time.Second, leader)
	elected := time.Since(stopAt)
	t.Logf("SIGTERM of leader %s: exit 0 after %v; %s leader %v after the signal", leader, took.Round(time.Millisecond), newLeader, elected.Round(time.Millisecond))

	// The watch on the stopped node has ended.
	closed := time.After(5 * time.Second)
drain:
	for {
		select {
		case _, ok := <-watch.ResultChan():
			if !ok {
				break drain
			}
		case <-closed:
			t.Errorf("watch on %s still open 5s after the process exited", leader)
			break drain
		}
	}

	for _, err := range w.createRange(ctx, 40, 60, 2) {
		t.Error(err)
	}
	for _, err := range w.updateRange(ctx, 0, 20, 2) {
		t.Error(err)
	}
	pc.restart(leader)
	ready := pc.waitReady(leader, 30*time.Second)
	w.down.Delete(leader)
	t.Logf("restart of %s after SIGTERM: ready after %v", leader, ready.Round(time.Millisecond))
	t.Logf("transient errors: %s", w.errSummary())
	w.checkAll(ctx, t, clusterNames...)
}

// SIGKILL of all three at once, then restart of all three: everything
// acknowledged comes back from disk (log and snapshots).
func TestAllSIGKILLedRecoverFromDisk(t *testing.T) {
	// Small snapshot settings so that recovery reads snapshots and logs.
	pc := newProcCluster(t, "--snapshot-threshold", "16", "--snapshot-interval", "100ms", "--trailing-logs", "8")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newWorkload(pc, "disk")
	for _, err := range w.createRange(ctx, 0, 60, 3) {
		t.Error(err)
	}
	for _, err := range w.updateRange(ctx, 0, 30, 3) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, n := range clusterNames {
		pc.kill(n)
	}
	restartAt := time.Now()
	for _, n := range clusterNames {
		pc.restart(n)
	}
	for _, n := range clusterNames {
		pc.waitReady(n, 30*time.Second)
	}
	t.Logf("all three SIGKILLed and restarted: all ready after %v", time.Since(restartAt).Round(time.Millisecond))
	w.checkAll(ctx, t, clusterNames...)
	for _, err := range w.createRange(ctx, 60, 66, 3) {
		t.Errorf("after recovery: %v", err)
	}
	for _, n := range clusterNames {
		if c := countLines(pc.node(n).logPath, "snapshot"); c == 0 {
			t.Logf("note: %s logged no snapshot line", n)
		}
	}
}

// waitUntil polls cond every 20ms, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// workload writes Leases through the members of a procCluster and remembers
// what was acknowledged. A write is acknowledged when the API answered 2xx,
// or when a linearizable read after an ambiguous answer showed it applied.
// Each Lease has a single writer goroutine, so the last acknowledged state of
// a Lease is the state it must have.
type workload struct {
	pc *procCluster
	ns string

	down sync.Map // node name -> true while the test has it down on purpose

	mu     sync.Mutex
	acked  map[string]*coordv1.Lease // last acknowledged state per name
	maybe  map[string]bool           // a write on it failed for good: state unknown beyond acked
	maxRV  uint64                    // highest acknowledged resourceVersion
	ackLog []ackEvent
	errs   map[string]int // transient errors seen, by kind

	rr    atomic.Uint64
	nAcks atomic.Int64
}

type ackEvent struct {
	sent, acked time.Time
	node        string
}

func newWorkload(pc *procCluster, ns string) *workload {
	return &workload{pc: pc, ns: ns, acked: map[string]*coordv1.Lease{}, maybe: map[string]bool{}, errs: map[string]int{}}
}

func leaseName(i int) string { return fmt.Sprintf("lease-%03d", i) }

// target picks the next node round-robin among those not down, and every
// fourth request is sent as JSON instead of protobuf.
func (w *workload) target() (*procNode, kubernetes.Interface, string) {
	var live []*procNode
	for _, n := range w.pc.nodes {
		if _, down := w.down.Load(n.name); !down {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		live = w.pc.nodes
	}
	i := w.rr.Add(1)
	n := live[int(i)%len(live)]
	if i%4 == 0 {
		return n, n.jsonClient, "json"
	}
	return n, n.protoClient, "protobuf"
}

// retryable: the answer says nothing definitive about the write.
func retryable(err error) (bool, string) {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		code := se.Status().Code
		switch {
		case apierrors.IsServiceUnavailable(err), code == 503:
			return true, "503"
		case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), code == 504:
			return true, "504"
		case apierrors.IsTooManyRequests(err):
			return true, "429"
		}
		return false, strconv.Itoa(int(code))
	}
	// no HTTP answer: connection refused or reset, EOF, client timeout
	return true, "transport"
}

func (w *workload) noteErr(kind string) {
	w.mu.Lock()
	w.errs[kind]++
	w.mu.Unlock()
}

func (w *workload) ack(l *coordv1.Lease, sent time.Time, node string) error {
	rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: acknowledged with resourceVersion %q: %v", l.Name, l.ResourceVersion, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev := w.acked[l.Name]; prev != nil {
		prv, _ := strconv.ParseUint(prev.ResourceVersion, 10, 64)
		if rv <= prv {
			return fmt.Errorf("%s: acknowledged resourceVersion %d after %d: not increasing", l.Name, rv, prv)
		}
	}
	w.acked[l.Name] = l.DeepCopy()
	if rv > w.maxRV {
		w.maxRV = rv
	}
	w.ackLog = append(w.ackLog, ackEvent{sent: sent, acked: time.Now(), node: node})
	w.nAcks.Add(1)
	return nil
}

func (w *workload) last(name string) *coordv1.Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.acked[name]; l != nil {
		return l.DeepCopy()
	}
	return nil
}

func (w *workload) markMaybe(name string) {
	w.mu.Lock()
	w.maybe[name] = true
	w.mu.Unlock()
}

// firstAckSentAfter is when the first write sent at or after t0 was
// acknowledged, or the zero time.
func (w *workload) firstAckSentAfter(t0 time.Time) (ackEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best ackEvent
	found := false
	for _, e := range w.ackLog {
		if !e.sent.Before(t0) && (!found || e.acked.Before(best.acked)) {
			best, found = e, true
		}
	}
	return best, found
}

func (w *workload) errSummary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var kinds []string
	for k, v := range w.errs {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, v))
	}
	sort.Strings(kinds)
	return fmt.Sprint(kinds)
}

const (
	maxAttempts    = 40
	attemptTimeout = 20 * time.Second
)

func backoff(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt, 5)
	return min(d, time.Second) + rand.N(50*time.Millisecond)
}

// readBack is a linearizable GET, retried, used to settle an ambiguous write.
func (w *workload) readBack(ctx context.Context, name string) (*coordv1.Lease, error) {
	var lastErr error
	for attempt := range maxAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(backoff(attempt)):
			}
		}
		_, cs, _ := w.target()
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		l, err := cs.CoordinationV1().Leases(w.ns).Get(actx, name, metav1.GetOptions{})
		cancel()
		if err == nil {
			return l, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		ok, kind := retryable(err)
		if !ok {
			return nil, fmt.Errorf("read back %s: %v", name, err)
		}
		w.noteErr("get-" + kind)
		lastErr = err
	}
	return nil, fmt.Errorf("read back %s: no answer after %d attempts: %v", name, maxAttempts, lastErr)
}

// create creates the Lease name held by holder, retrying ambiguous failures.
// A nil error means it is acknowledged.
func (w *workload) create(ctx context.Context, name string) error {
	holder := name + "-gen-0"
	dur := int32(30)
	var lastErr error
	for attempt := range maxAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				w.markMaybe(name)
				return ctx.Err()
			case <-time.After(backoff(attempt)):
			}
		}
		node, cs, _ := w.target()
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns, Labels: map[string]string{"e2e": "yes"}},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur},
		}
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		got, err := cs.CoordinationV1().Leases(w.ns).Create(actx, l, metav1.CreateOptions{})
		cancel()
		if err == nil {
			return w.ack(got, sent, node.name)
		}
		if apierrors.IsAlreadyExists(err) {
			// An earlier attempt (ours or client-go's own retry) applied.
			cur, rerr := w.readBack(ctx, name)
			if rerr != nil {
				w.markMaybe(name)
				return fmt.Errorf("create %s: AlreadyExists, then %v", name, rerr)
			}
			if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != holder {
				return fmt.Errorf("create %s: AlreadyExists with holder %v, not ours (%s)", name, cur.Spec.HolderIdentity, holder)
			}
			w.noteErr("create-already-exists-after-ambiguous")
			return w.ack(cur, sent, node.name)
		}
		ok, kind := retryable(err)
		if !ok {
			w.markMaybe(name)
			return fmt.Errorf("create %s via %s: %v", name, node.name, err)
		}
		w.noteErr("create-" + kind)
		lastErr = err
	}
	w.markMaybe(name)
	return fmt.Errorf("create %s: not acknowledged after %d attempts: %v", name, maxAttempts, lastErr)
}

// update replaces the Lease's holder with a new generation, as a CAS on the
// last acknowledged resourceVersion, retrying ambiguous failures.
func (w *workload) update(ctx context.Context, name string) error {
	prev := w.last(name)
	if prev == nil {
		return fmt.Errorf("update %s: never acknowledged", name)
	}
	gen := 0
	if h := prev.Spec.HolderIdentity; h != nil && strings.HasPrefix(*h, name) {
		fmt.Sscanf((*h)[len(name):], "-gen-%d", &gen)
	}
	holder := fmt.Sprintf("%s-gen-%d", name, gen+1)
	transitions := int32(gen + 1)
	var lastErr error
	for attempt := range maxAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				w.markMaybe(name)
				return ctx.Err()
			case <-time.After(backoff(attempt)):
			}
		}
		node, cs, _ := w.target()
		l := prev.DeepCopy()
		l.Spec.HolderIdentity = &holder
		l.Spec.LeaseTransitions = &transitions
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		got, err := cs.CoordinationV1().Leases(w.ns).Update(actx, l, metav1.UpdateOptions{})
		cancel()
		if err == nil {
			return w.ack(got, sent, node.name)
		}
		if apierrors.IsConflict(err) {
			// Only this goroutine writes name: an earlier attempt applied.
			cur, rerr := w.readBack(ctx, name)
			if rerr != nil {
				w.markMaybe(name)
				return fmt.Errorf("update %s: Conflict, then %v", name, rerr)
			}
			if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != holder {
				return fmt.Errorf("update %s (attempt %d): Conflict on resourceVersion %s but the stored object (resourceVersion %s, holder %v) is not our write %s",
					name, attempt+1, prev.ResourceVersion, cur.ResourceVersion, ptrStr(cur.Spec.HolderIdentity), holder)
			}
			w.noteErr("update-conflict-after-ambiguous")
			return w.ack(cur, sent, node.name)
		}
		ok, kind := retryable(err)
		if !ok {
			w.markMaybe(name)
			return fmt.Errorf("update %s via %s: %v", name, node.name, err)
		}
		w.noteErr("update-" + kind)
		lastErr = err
	}
	w.markMaybe(name)
	return fmt.Errorf("update %s: not acknowledged after %d attempts: %v", name, maxAttempts, lastErr)
}

func ptrStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// createRange creates leases [from, to) with `workers` goroutines, each
// owning the names i%workers == k; it reports every failure.
func (w *workload) createRange(ctx context.Context, from, to, workers int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + k; i < to; i += workers {
				if err := w.create(ctx, leaseName(i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs
}

// check reads every acknowledged Lease on node, after the node has applied
// the highest acknowledged resourceVersion: with resourceVersion=0 (the
// node's own state) and with a default, linearizable GET. It also lists the
// namespace with resourceVersion=0. It returns the mismatches.
func (w *workload) check(ctx context.Context, name string) []string {
	w.mu.Lock()
	want := make(map[string]*coordv1.Lease, len(w.acked))
	for k, v := range w.acked {
		want[k] = v.DeepCopy()
	}
	maybe := make(map[string]bool, len(w.maybe))
	for k := range w.maybe {
		maybe[k] = true
	}
	maxRV := w.maxRV
	w.mu.Unlock()

	w.pc.waitApplied(name, maxRV, 30*time.Second)
	n := w.pc.node(name)
	var bad []string
	leases := n.protoClient.CoordinationV1().Leases(w.ns)

	list, err := leases.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return []string{fmt.Sprintf("%s: list resourceVersion=0: %v", name, err)}
	}
	seen := map[string]bool{}
	for _, l := range list.Items {
		seen[l.Name] = true
		if want[l.Name] == nil && !maybe[l.Name] {
			bad = append(bad, fmt.Sprintf("%s: list has %s (rv %s), which was never written", name, l.Name, l.ResourceVersion))
		}
	}
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
		if !seen[k] {
			bad = append(bad, fmt.Sprintf("%s: list resourceVersion=0 lacks acknowledged %s (rv %s)", name, k, want[k].ResourceVersion))
		}
	}
	sort.Strings(names)
	for _, k := range names {
		for _, rv := range []string{"0", ""} {
			what := "GET resourceVersion=" + rv
			if rv == "" {
				what = "linearizable GET"
			}
			got, err := leases.Get(ctx, k, metav1.GetOptions{ResourceVersion: rv})
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %s %s: %v (acknowledged rv %s)", name, what, k, err, want[k].ResourceVersion))
				continue
			}
			if msg := compareLease(want[k], got, maybe[k]); msg != "" {
				bad = append(bad, fmt.Sprintf("%s: %s %s: %s", name, what, k, msg))
			}
		}
	}
	return bad
}

// compareLease checks that got is the acknowledged state want; when the
// Lease also had a write with an unknown outcome, got may be newer.
func compareLease(want, got *coordv1.Lease, maybeNewer bool) string {
	if got.UID != want.UID {
		return fmt.Sprintf("uid %s, acknowledged %s", got.UID, want.UID)
	}
	if maybeNewer {
		g, _ := strconv.ParseUint(got.ResourceVersion, 10, 64)
		wv, _ := strconv.ParseUint(want.ResourceVersion, 10, 64)
		if g < wv {
			return fmt.Sprintf("resourceVersion %d older than acknowledged %d", g, wv)
		}
		return ""
	}
	if got.ResourceVersion != want.ResourceVersion {
		return fmt.Sprintf("resourceVersion %s, acknowledged %s (holder %s, acknowledged %s)",
			got.ResourceVersion, want.ResourceVersion, ptrStr(got.Spec.HolderIdentity), ptrStr(want.Spec.HolderIdentity))
	}
	if ptrStr(got.Spec.HolderIdentity) != ptrStr(want.Spec.HolderIdentity) {
		return fmt.Sprintf("holder %s, acknowledged %s", ptrStr(got.Spec.HolderIdentity), ptrStr(want.Spec.HolderIdentity))
	}
	return ""
}

// checkAll runs check on every node and fails the test on any mismatch.
func (w *workload) checkAll(ctx context.Context, t interface {
	Helper()
	Errorf(string, ...any)
	Logf(string, ...any)
}, nodes ...string) {
	t.Helper()
	w.mu.Lock()
	nAcked, maxRV, nMaybe := len(w.acked), w.maxRV, len(w.maybe)
	w.mu.Unlock()
	for _, name := range nodes {
		bad := w.check(ctx, name)
		for i, b := range bad {
			if i == 20 {
				t.Errorf("%s: ... and %d more mismatches", name, len(bad)-20)
				break
			}
			t.Errorf("acknowledged write missing or different: %s", b)
		}
	}
	t.Logf("checked %d acknowledged Leases (max rv %d, %d with an unknown last write) on %v", nAcked, maxRV, nMaybe, nodes)
}

func (w *workload) isMaybe(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maybe[name]
}

// updateRange CAS-updates leases [from, to) once each with `workers`
// goroutines; it reports every failure.
func (w *workload) updateRange(ctx context.Context, from, to, workers int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + k; i < to; i += workers {
				if err := w.update(ctx, leaseName(i)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errs
}
