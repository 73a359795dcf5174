package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Leader-election safety: client-go's own leader election (leaderelection + LeaseLock)
// run by several candidates in this process, each talking to one node, for
// the whole run. All candidates share this process's monotonic clock, so
// their leadership intervals are directly comparable.
const (
	electionNS    = "chaos-election"
	electionLease = "leader"
	candidates    = 4

	// Short timings, chosen so that client-go can keep its promise of one
	// leader at a time (TestElectionTimingsKeepClientGoPromise): then an
	// overlap says something about the server.
	leLeaseDuration = 5 * time.Second
	leRenewDeadline = time.Second
	leRetryPeriod   = 400 * time.Millisecond
	// leRequestTimeout bounds every request, so a request to a paused or
	// partitioned node fails instead of hanging past the renew deadline.
	leRequestTimeout = time.Second
	// leRecordPrecision: candidates compare the lease records they read
	// as client-go's LeaderElectionRecord, whose renewTime is a metav1.Time
	// (whole seconds), so two renewals within one second look the same and
	// a candidate's expiry clock may start at the first of them.
	leRecordPrecision = time.Second
	// leRestartDelay: how long a candidate waits after losing before it
	// runs a new elector, like a restarted process; it also lets the others
	// compete for a lease the loser released.
	leRestartDelay = time.Second
)

// leGapBound is the longest the lease may stay unclaimed after a leader
// stopped, unless a fault left the cluster leaderless (that time is
// excused on top): a rival reads the last version the old leader wrote
// within a poll period (RetryPeriod plus client-go's jitter) and a
// request, waits LeaseDuration from then, and acquires at its next poll
// with a read and a write. The old leader's own renewals, acknowledged or
// not, were all sent before its renew deadline, so before it stopped.
var leGapBound = leLeaseDuration + 2*maxPoll(leRetryPeriod) + 3*leRequestTimeout

// maxPoll is the longest wait between two tries of a client-go elector:
// wait.JitterUntil adds up to JitterFactor x the period.
func maxPoll(period time.Duration) time.Duration {
	jitter := leaderelection.JitterFactor
	return period + time.Duration(jitter*float64(period))
}

// term is one leadership interval of one LeaderElector run: Start when
// OnStartedLeading fired, End when OnStoppedLeading fired (zero while
// still leading).
type term struct {
	Cand       int
	Identity   string
	Start, End time.Time
}

// leaseVersion is one committed version of the election Lease, as a watch
// delivered it. Break marks the first version after a (re)list: there is no
// continuity with the version before it.
type leaseVersion struct {
	RV             uint64
	Holder         string
	Transitions    int32
	Duration       time.Duration
	Acquire, Renew time.Time
	Break          bool
}

// faultSpan is one nemesis fault: applied at Start, healed at Healed, a
// write accepted again at Recovered.
type faultSpan struct {
	Kind                     string
	Start, Healed, Recovered time.Time
}

// leaderless reports whether the fault can leave the whole cluster unable
// to commit (no Raft leader until a new election, or every node down):
// only then may the lease stay unclaimed longer than the lease timings.
func (f faultSpan) leaderless() bool {
	switch f.Kind {
	case fKillAll, fKillLeader, fPauseLeader, fIsolateLeader:
		return true
	}
	return false
}

// leaseOp is one request a candidate's LeaseLock made, with its real-time
// bounds on this process's clock.
type leaseOp struct {
	Identity, Verb string
	Start, End     time.Time
	ReqRV          string // precondition of an update
	RV, Holder     string // what the server returned
	Err            string
}

// recLeasesGetter hands LeaseLock a Lease client that records every
// Get/Create/Update it makes.
type recLeasesGetter struct {
	coordinationv1client.LeasesGetter
	e  *elections
	id string
}

func (g recLeasesGetter) Leases(namespace string) coordinationv1client.LeaseInterface {
	return recLeases{g.LeasesGetter.Leases(namespace), g.e, g.id}
}

type recLeases struct {
	coordinationv1client.LeaseInterface
	e  *elections
	id string
}

func (r recLeases) note(verb, reqRV string, start time.Time, l *coordinationv1.Lease, err error) {
	o := leaseOp{Identity: r.id, Verb: verb, Start: start, End: time.Now(), ReqRV: reqRV}
	if err != nil {
		o.Err = err.Error()
	} else if l != nil {
		o.RV = l.ResourceVersion
		if l.Spec.HolderIdentity != nil {
			o.Holder = *l.Spec.HolderIdentity
		}
	}
	r.e.mu.Lock()
	r.e.ops = append(r.e.ops, o)
	r.e.mu.Unlock()
}

func (r recLeases) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	start := time.Now()
	l, err := r.LeaseInterface.Get(ctx, name, opts)
	r.note("get", "", start, l, err)
	return l, err
}

func (r recLeases) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	start := time.Now()
	out, err := r.LeaseInterface.Create(ctx, l, opts)
	r.note("create", "", start, out, err)
	return out, err
}

func (r recLeases) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	start := time.Now()
	out, err := r.LeaseInterface.Update(ctx, l, opts)
	r.note("update", l.ResourceVersion, start, out, err)
	return out, err
}

// elections runs the candidates and the watch on the election Lease.
type elections struct {
	c   *cluster
	wg  sync.WaitGroup
	log *os.File

	mu      sync.Mutex
	terms   map[string]*term     // by identity: one term per elector run at most
	early   map[string]time.Time // OnStoppedLeading seen before OnStartedLeading
	runs    int
	hist    []leaseVersion
	lastRV  uint64
	relists int
	errs    []string
	ops     []leaseOp

	watchCancel context.CancelFunc
	watchDone   chan struct{}
}

// startElections starts the candidates (stopped by ctx) and the history
// watch (stopped by finish).
func startElections(ctx context.Context, c *cluster) *elections {
	e := &elections{c: c, terms: map[string]*term{}, early: map[string]time.Time{}, watchDone: make(chan struct{})}
	// client-go logs every failed renew; keep that out of the test output
	// but next to the node logs for a post-mortem.
	if f, err := os.Create(filepath.Join(c.dir, "election-klog.log")); err == nil {
		e.log = f
		klog.LogToStderr(false)
		klog.SetOutput(f)
	}
	wctx, cancel := context.WithCancel(context.Background())
	e.watchCancel = cancel
	go func() { defer close(e.watchDone); e.watch(wctx) }()
	for i := range candidates {
		e.wg.Add(1)
		go func() { defer e.wg.Done(); e.candidate(ctx, i) }()
	}
	return e
}

// candidate runs LeaderElectors for candidate i against node i%3, a new
// one (with a new identity, as a restarted process would have) each time
// the previous one stopped leading, until ctx ends.
func (e *elections) candidate(ctx context.Context, i int) {
	n := e.c.nodes[i%len(e.c.nodes)]
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + n.apiAddr, QPS: 1000, Burst: 1000, Timeout: leRequestTimeout})
	if err != nil {
		e.fail("candidate %d: %v", i, err)
		return
	}
	for run := 0; ctx.Err() == nil; run++ {
		id := fmt.Sprintf("cand%d-%d", i, run)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: electionNS, Name: electionLease},
				Client:     recLeasesGetter{cs.CoordinationV1(), e, id},
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			},
			LeaseDuration:   leLeaseDuration,
			RenewDeadline:   leRenewDeadline,
			RetryPeriod:     leRetryPeriod,
			ReleaseOnCancel: true,
			Name:            id,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { e.started(i, id, time.Now()) },
				OnStoppedLeading: func() { e.stopped(id, time.Now()) },
			},
		})
		if err != nil {
			e.fail("candidate %d: %v", i, err)
			return
		}
		e.mu.Lock()
		e.runs++
		e.mu.Unlock()
		le.Run(ctx) // returns when leadership is lost or ctx ends
		sleepCtx(ctx, leRestartDelay)
	}
}

func (e *elections) started(cand int, id string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := &term{Cand: cand, Identity: id, Start: at}
	// OnStartedLeading runs in its own goroutine; if OnStoppedLeading beat
	// it (leadership lost at once), the term ended at that moment.
	if end, ok := e.early[id]; ok {
		t.Start, t.End = end, end
	}
	e.terms[id] = t
}

// stopped is also called by runs that never led (ctx cancelled while
// acquiring); those leave no term.
func (e *elections) stopped(id string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.terms[id]; ok {
		t.End = at
		return
	}
	e.early[id] = at
}

func (e *elections) fail(format string, args ...any) {
	e.mu.Lock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

// watch records every version of the election Lease: a list, then watches
// resumed from the last version seen, rotating over the nodes; a 410 means
// a relist (and a break in the history).
func (e *elections) watch(ctx context.Context) {
	var css []*kubernetes.Clientset
	for _, n := range e.c.nodes {
		// No client timeout: it would cut every watch; each watch is
		// bounded by timeoutSeconds and its context instead.
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + n.apiAddr, QPS: 1000, Burst: 1000})
		if err != nil {
			e.fail("election watch: %v", err)
			return
		}
		css = append(css, cs)
	}
	rv := ""
	for i := 0; ctx.Err() == nil; i++ {
		leases := css[i%len(css)].CoordinationV1().Leases(electionNS)
		if rv == "" {
			lctx, cancel := context.WithTimeout(ctx, leRequestTimeout)
			l, err := leases.List(lctx, metav1.ListOptions{})
			cancel()
			if err != nil {
				sleepCtx(ctx, 200*time.Millisecond)
				continue
			}
			e.mu.Lock()
			e.relists++
			for _, it := range l.Items {
				e.record(&it, true)
			}
			e.mu.Unlock()
			rv = l.ResourceVersion
			continue
		}
		secs := int64(3 + i%5)
		wctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+5*time.Second)
		w, err := leases.Watch(wctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &secs})
		if err != nil {
			cancel()
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = ""
			}
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Error:
				if err := apierrors.FromObject(ev.Object); apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					rv = ""
				}
			case watch.Bookmark:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok {
					rv = l.ResourceVersion
				}
			default:
				if l, ok := ev.Object.(*coordinationv1.Lease); ok {
					e.mu.Lock()
					e.record(l, false)
					e.mu.Unlock()
					rv = l.ResourceVersion
				}
			}
		}
		w.Stop()
		cancel()
	}
}

// record appends one version (e.mu held).
func (e *elections) record(l *coordinationv1.Lease, brk bool) {
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	v := leaseVersion{RV: rv, Break: brk}
	s := l.Spec
	if s.HolderIdentity != nil {
		v.Holder = *s.HolderIdentity
	}
	if s.LeaseTransitions != nil {
		v.Transitions = *s.LeaseTransitions
	}
	if s.LeaseDurationSeconds != nil {
		v.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if s.AcquireTime != nil {
		v.Acquire = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		v.Renew = s.RenewTime.Time
	}
	e.hist = append(e.hist, v)
	e.lastRV = max(e.lastRV, rv)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// finish waits for the candidates (their ctx must be done), then, with the
// cluster healed, lets the watch catch up with the Lease's current version
// and stops it. It returns anomalies found on the way.
func (e *elections) finish(ctx context.Context) []string {
	var out []string
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		out = append(out, "election candidates did not stop within 30s")
	}
	var want uint64
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; want == 0; i++ {
		n := e.c.nodes[i%len(e.c.nodes)]
		code, body, err := do(ctx, "GET", "http://"+n.apiAddr+leasePath+electionNS+"/leases/"+electionLease, nil, 5*time.Second)
		var wl wireLease
		if err == nil && code == 200 && json.Unmarshal(body, &wl) == nil {
			want = wl.lease().RV
			break
		}
		if err == nil && code == 404 {
			break // never created: nothing to catch up with
		}
		if time.Now().After(deadline) {
			out = append(out, fmt.Sprintf("election lease unreadable after the run: %d %v", code, err))
			break
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	for want != 0 {
		e.mu.Lock()
		got := e.lastRV
		e.mu.Unlock()
		if got >= want {
			break
		}
		if time.Now().After(deadline) {
			out = append(out, fmt.Sprintf("election watch stuck at rv %d, lease is at %d", got, want))
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.watchCancel()
	select {
	case <-e.watchDone:
	case <-time.After(10 * time.Second):
		out = append(out, "election watch did not stop within 10s")
	}
	if e.log != nil {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
		e.log.Close()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return append(out, e.errs...)
}

// electionResult is what checkElections finds.
type electionResult struct {
	anomalies    []string
	terms        int
	takeovers    int // terms after the first: a new elector took the lease over
	moved        int // takeovers by a different candidate than the last leader
	gaps         []time.Duration
	overlaps     int
	tightest     string // the gap closest to its bound
	acquisitions int    // holder changes the server committed
	versions     int
}

// electionRecord is everything checkElections looks at.
type electionRecord struct {
	Terms  []term
	Hist   []leaseVersion
	Ops    []leaseOp
	Spans  []faultSpan
	StopAt time.Time
	// Complete: the watch never had to relist, so the history holds
	// every committed version from its first one on.
	Complete bool
}

// snapshot copies what was recorded.
func (e *elections) snapshot() (rec electionRecord, runs, relists int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.terms {
		rec.Terms = append(rec.Terms, *t)
	}
	rec.Hist = append([]leaseVersion(nil), e.hist...)
	rec.Ops = append([]leaseOp(nil), e.ops...)
	rec.Complete = e.relists == 1
	return rec, e.runs, e.relists
}

// checkElections checks the leadership terms of the client (intervals of
// different electors never overlap; a new leader appears within the bound
// after the last one stopped, fault time excused only for faults that
// leave the cluster leaderless), the Lease history the server committed
// (versions ordered, transitions never decrease, the lease changes hands
// only once expired or released by its holder) and the candidates'
// requests against it (no stale read, every acknowledged write and every
// term's acquisition in the history).
func checkElections(rec electionRecord) electionResult {
	var r electionResult
	terms, hist, spans, stopAt := rec.Terms, rec.Hist, rec.Spans, rec.StopAt
	// After stopAt every elector is being cancelled; a release hands the
	// lease over before the releaser's OnStoppedLeading by design, so the
	// observation window ends there.
	var ts []term
	for _, t := range terms {
		if !t.Start.Before(stopAt) {
			continue
		}
		if t.End.IsZero() || t.End.After(stopAt) {
			t.End = stopAt
		}
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Start.Before(ts[j].Start) })
	r.terms = len(ts)
	at := func(t time.Time) string { return fmt.Sprintf("%.3fs", t.Sub(epoch).Seconds()) }
	faultsNear := func(from, to time.Time) string {
		var fs []string
		for _, f := range spans {
			if f.Start.Before(to) && f.Recovered.After(from) {
				fs = append(fs, fmt.Sprintf("%s [%s, healed %s, recovered %s]", f.Kind, at(f.Start), at(f.Healed), at(f.Recovered)))
			}
		}
		if len(fs) == 0 {
			return "no fault"
		}
		return strings.Join(fs, "; ")
	}

	// Safety on the client's clock.
	for i := range ts {
		for j := i + 1; j < len(ts) && ts[j].Start.Before(ts[i].End); j++ {
			r.overlaps++
			r.anomalies = append(r.anomalies, fmt.Sprintf("two leaders: %s led [%s, %s] and %s led [%s, %s] (overlap %v); faults: %s",
				ts[i].Identity, at(ts[i].Start), at(ts[i].End), ts[j].Identity, at(ts[j].Start), at(ts[j].End),
				minTime(ts[i].End, ts[j].End).Sub(ts[j].Start).Round(time.Millisecond),
				faultsNear(ts[j].Start.Add(-leLeaseDuration-leRenewDeadline), ts[i].End)))
		}
	}

	// Liveness: gaps without a leader.
	bound := leGapBound
	margin := time.Duration(math.MaxInt64)
	checkGap := func(from, to time.Time, open bool) {
		gap := to.Sub(from)
		var excused time.Duration
		for _, f := range spans {
			if f.leaderless() {
				excused += overlapOf(from, to, f.Start, f.Recovered)
			}
		}
		if m := bound + excused - gap; m < margin {
			margin = m
			r.tightest = fmt.Sprintf("%v of %v allowed", gap.Round(time.Millisecond), (bound + excused).Round(time.Millisecond))
		}
		if gap > bound+excused {
			what := "no leader"
			if open {
				what = "no leader until the end of the run"
			}
			r.anomalies = append(r.anomalies, fmt.Sprintf("%s for %v [%s, %s], bound %v + %v excused; faults: %s",
				what, gap.Round(time.Millisecond), at(from), at(to), bound, excused.Round(time.Millisecond), faultsNear(from, to)))
		}
	}
	var lastEnd time.Time
	for i, t := range ts {
		if i > 0 {
			if t.Start.After(lastEnd) {
				r.gaps = append(r.gaps, t.Start.Sub(lastEnd))
				checkGap(lastEnd, t.Start, false)
			} else {
				r.gaps = append(r.gaps, 0)
			}
			r.takeovers++
			if t.Cand != ts[i-1].Cand {
				r.moved++
			}
		}
		if t.End.After(lastEnd) {
			lastEnd = t.End
		}
	}
	if len(ts) > 0 && stopAt.After(lastEnd) {
		checkGap(lastEnd, stopAt, true)
	}

	// Safety through the server's eyes.
	r.versions = len(hist)
	writer := map[uint64]string{} // rv -> identity whose write was acknowledged with it
	for _, o := range rec.Ops {
		if o.Err == "" && (o.Verb == "update" || o.Verb == "create") {
			rv, _ := strconv.ParseUint(o.RV, 10, 64)
			writer[rv] = o.Identity
		}
	}
	holders := map[string]bool{}
	var maxTrans int32
	for i, v := range hist {
		holders[v.Holder] = true
		if v.Transitions < maxTrans {
			r.anomalies = append(r.anomalies, fmt.Sprintf("lease rv %d: leaseTransitions %d after %d", v.RV, v.Transitions, maxTrans))
		}
		maxTrans = max(maxTrans, v.Transitions)
		if i == 0 || v.Break {
			if v.Holder != "" && (i == 0 || v.Holder != hist[i-1].Holder) {
				r.acquisitions++
			}
			continue
		}
		p := hist[i-1]
		if v.RV <= p.RV {
			r.anomalies = append(r.anomalies, fmt.Sprintf("lease rv %d delivered after rv %d", v.RV, p.RV))
			continue
		}
		if v.Holder == "" {
			// A release: only the holder may give the lease up.
			if w, ok := writer[v.RV]; ok && p.Holder != "" && w != p.Holder {
				r.anomalies = append(r.anomalies, fmt.Sprintf("lease rv %d: %s released the lease %s held (rv %d)", v.RV, w, p.Holder, p.RV))
			}
			continue
		}
		if v.Holder == p.Holder {
			continue // a renewal
		}
		r.acquisitions++
		if v.Transitions != p.Transitions+1 {
			r.anomalies = append(r.anomalies, fmt.Sprintf("lease rv %d: %s acquired from %s (rv %d) with leaseTransitions %d, want %d",
				v.RV, v.Holder, p.Holder, p.RV, v.Transitions, p.Transitions+1))
		}
		// The previous holder's lease ran until its last renewTime (as
		// precise as candidates see it) plus its duration; both times come
		// from this process's wall clock (microseconds on the wire).
		if from := p.Renew.Truncate(leRecordPrecision); p.Holder != "" && v.Acquire.Sub(from) < p.Duration-time.Millisecond {
			r.anomalies = append(r.anomalies, fmt.Sprintf("lease rv %d: %s acquired at %s, %v after %s's renewal (rv %d at %s, seen as %s) of a %v lease",
				v.RV, v.Holder, at(v.Acquire), v.Acquire.Sub(from).Round(time.Millisecond), p.Holder, p.RV, at(p.Renew), at(from), p.Duration))
		}
	}
	if rec.Complete {
		for _, t := range ts {
			if !holders[t.Identity] {
				r.anomalies = append(r.anomalies, fmt.Sprintf("%s led from %s but no committed version of the lease names it", t.Identity, at(t.Start)))
			}
		}
	}
	r.anomalies = append(r.anomalies, checkLeaseOps(rec)...)
	return r
}

// checkLeaseOps checks the candidates' requests on their own (real-time)
// order: a read never returns a version older than one whose write was
// acknowledged before the read was sent, and with a complete history every
// acknowledged write is in it.
func checkLeaseOps(rec electionRecord) []string {
	var out []string
	type ack struct {
		rv  uint64
		end time.Time
		op  leaseOp
	}
	var acks []ack
	seen := map[uint64]bool{}
	var newest uint64
	for _, v := range rec.Hist {
		seen[v.RV] = true
		newest = max(newest, v.RV)
	}
	for _, o := range rec.Ops {
		if o.Err != "" || o.Verb == "get" {
			continue
		}
		rv, _ := strconv.ParseUint(o.RV, 10, 64)
		acks = append(acks, ack{rv, o.End, o})
		if rec.Complete && len(rec.Hist) > 0 && rv >= rec.Hist[0].RV && rv <= newest && !seen[rv] {
			out = append(out, fmt.Sprintf("%s's %s acknowledged with rv %d, which the watch never delivered", o.Identity, o.Verb, rv))
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].end.Before(acks[j].end) })
	for _, o := range rec.Ops {
		if o.Err != "" || o.Verb != "get" {
			continue
		}
		got, _ := strconv.ParseUint(o.RV, 10, 64)
		// The newest acknowledged write that completed before the read began.
		var last ack
		for _, a := range acks {
			if !a.end.Before(o.Start) {
				break
			}
			if a.rv > last.rv {
				last = a
			}
		}
		if last.rv > got {
			out = append(out, fmt.Sprintf("stale read: %s's get at %.3fs returned rv %d, but %s's %s had been acknowledged with rv %d at %.3fs",
				o.Identity, o.Start.Sub(epoch).Seconds(), got, last.op.Identity, last.op.Verb, last.rv, last.end.Sub(epoch).Seconds()))
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// overlapOf is the length of [a0, a1] ∩ [b0, b1].
func overlapOf(a0, a1, b0, b1 time.Time) time.Duration {
	lo, hi := a0, a1
	if b0.After(lo) {
		lo = b0
	}
	if b1.Before(hi) {
		hi = b1
	}
	if hi.After(lo) {
		return hi.Sub(lo)
	}
	return 0
}

// check runs checkElections on what was recorded and renders the summary
// line.
func (e *elections) check(spans []faultSpan, stopAt time.Time) ([]string, string) {
	rec, runs, relists := e.snapshot()
	rec.Spans, rec.StopAt = spans, stopAt
	r := checkElections(rec)
	gaps := "none"
	if len(r.gaps) > 0 {
		g := append([]time.Duration(nil), r.gaps...)
		sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
		gaps = fmt.Sprintf("p50 %v max %v", g[len(g)/2].Round(time.Millisecond), g[len(g)-1].Round(time.Millisecond))
	}
	if r.tightest != "" {
		gaps += ", tightest " + r.tightest
	}
	line := fmt.Sprintf("elections: %d candidates (%d elector runs), %d leadership terms, %d takeovers (%d to another candidate), takeover gap %s (bound %v + leaderless fault time), overlaps %d; lease: %d versions, %d acquisitions, %d watch lists",
		candidates, runs, r.terms, r.takeovers, r.moved, gaps, leGapBound.Round(time.Millisecond), r.overlaps, r.versions, r.acquisitions, relists)
	return r.anomalies, line
}

// dump writes the terms, the candidates' requests and the Lease history
// to dir/elections.txt (times as seconds since the test process started,
// and wall clock), and copies the node and client-go logs next to it.
func (e *elections) dump(dir string) error {
	rec, _, _ := e.snapshot()
	terms, hist, ops := rec.Terms, rec.Hist, rec.Ops
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.3f(%s)", t.Sub(epoch).Seconds(), t.Format("15:04:05.000"))
	}
	type line struct {
		t time.Time
		s string
	}
	var ls []line
	for _, t := range terms {
		ls = append(ls, line{t.Start, fmt.Sprintf("%s term %s [%s, %s]", at(t.Start), t.Identity, at(t.Start), at(t.End))})
	}
	for _, o := range ops {
		ls = append(ls, line{o.Start, fmt.Sprintf("%s %s %s ifrv=%s -> rv=%s holder=%q err=%q (took %v)",
			at(o.Start), o.Identity, o.Verb, o.ReqRV, o.RV, o.Holder, o.Err, o.End.Sub(o.Start).Round(time.Millisecond))})
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].t.Before(ls[j].t) })
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.s + "\n")
	}
	b.WriteString("\nlease history (watch):\n")
	for _, v := range hist {
		fmt.Fprintf(&b, "rv %d holder %q transitions %d duration %v acquire %s renew %s break %v\n",
			v.RV, v.Holder, v.Transitions, v.Duration, at(v.Acquire), at(v.Renew), v.Break)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logs, _ := filepath.Glob(filepath.Join(e.c.dir, "*.log"))
	for _, p := range logs {
		if data, err := os.ReadFile(p); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644)
		}
	}
	return os.WriteFile(filepath.Join(dir, "elections.txt"), []byte(b.String()), 0o644)
}

func TestElectionCheckerCatchesOverlapsAndLongGaps(t *testing.T) {
	s := func(sec float64) time.Time { return base.Add(time.Duration(sec * float64(time.Second))) }
	stop := s(60)
	bound := leGapBound.Seconds()
	holders := []leaseVersion{{RV: 1, Holder: "a"}, {RV: 2, Holder: "b", Transitions: 1}, {RV: 3, Holder: "c", Transitions: 2}}
	cases := map[string]struct {
		terms    []term
		spans    []faultSpan
		want     string // "" for no anomaly
		overlaps int
	}{
		"disjoint": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1), End: s(10)},
			{Cand: 1, Identity: "b", Start: s(12), End: s(30)},
			{Cand: 0, Identity: "c", Start: s(30), End: s(60)}, // back to back
		}},
		"overlap": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1), End: s(10)},
			{Cand: 1, Identity: "b", Start: s(9.5), End: s(30)},
			{Cand: 2, Identity: "c", Start: s(31), End: s(59)},
		}, want: "two leaders: a led", overlaps: 1},
		"still leading": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1)},
			{Cand: 1, Identity: "b", Start: s(20), End: s(30)},
		}, want: "two leaders", overlaps: 1},
		"long gap": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1), End: s(10)},
			{Cand: 1, Identity: "b", Start: s(10 + bound + 1), End: s(60)},
		}, spans: []faultSpan{{Kind: fPauseFollower, Start: s(9), Healed: s(13), Recovered: s(13)}}, want: "no leader for"},
		"gap excused by sigkill-all": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1), End: s(10)},
			{Cand: 1, Identity: "b", Start: s(10 + bound + 3), End: s(60)},
		}, spans: []faultSpan{{Kind: fKillAll, Start: s(9), Healed: s(11), Recovered: s(14)}}}, // 4 s excused
		"no leader at the end": {terms: []term{
			{Cand: 0, Identity: "a", Start: s(1), End: s(10)},
		}, want: "until the end of the run"},
	}
	for name, tc := range cases {
		r := checkElections(electionRecord{Terms: tc.terms, Hist: holders, Spans: tc.spans, StopAt: stop, Complete: true})
		got := strings.Join(r.anomalies, "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) || r.overlaps != tc.overlaps {
			t.Errorf("%s: anomalies %q (overlaps %d), want one mentioning %q (overlaps %d)", name, got, r.overlaps, tc.want, tc.overlaps)
		}
	}
}

// base is on a whole second, like the renewTime precision candidates see.
var base = time.Unix(1_700_000_000, 0)

func TestElectionCheckerServerHistory(t *testing.T) {
	s := func(sec float64) time.Time { return base.Add(time.Duration(sec * float64(time.Second))) }
	v := func(rv uint64, holder string, trans int32, acq, renew float64) leaseVersion {
		return leaseVersion{RV: rv, Holder: holder, Transitions: trans, Duration: 3 * time.Second, Acquire: s(acq), Renew: s(renew)}
	}
	good := []leaseVersion{
		v(5, "a", 0, 1, 1), v(7, "a", 0, 1, 2.9), // renewal
		v(9, "b", 1, 5.2, 5.2), // 3.2 s after a's renewal, seen as 2.0 s
		{RV: 10, Holder: "", Transitions: 1, Duration: time.Second, Acquire: s(6), Renew: s(6)}, // release
		v(11, "a2", 2, 6.1, 6.1), // right after a release
	}
	terms := []term{{Identity: "a", Start: s(1), End: s(3)}, {Identity: "b", Start: s(5.5), End: s(6)}}
	if r := checkElections(electionRecord{Terms: terms, Hist: good, StopAt: s(6.5), Complete: true}); len(r.anomalies) != 0 || r.acquisitions != 3 {
		t.Fatalf("good history: anomalies %v, acquisitions %d (want 3)", r.anomalies, r.acquisitions)
	}
	cases := map[string]struct {
		hist  []leaseVersion
		terms []term
		want  string
	}{
		"taken before expiry": {[]leaseVersion{v(5, "a", 0, 1, 1), v(7, "a", 0, 1, 2), v(9, "b", 1, 4.5, 4.5)}, nil, "2.5s after a's renewal"},
		"transitions skip":    {[]leaseVersion{v(5, "a", 0, 1, 1), v(9, "b", 2, 5, 5)}, nil, "want 1"},
		"transitions back":    {[]leaseVersion{v(5, "a", 3, 1, 1), {RV: 9, Holder: "b", Transitions: 1, Break: true}}, nil, "leaseTransitions 1 after 3"},
		"out of order":        {[]leaseVersion{v(9, "a", 0, 1, 1), v(5, "a", 0, 1, 2)}, nil, "delivered after"},
		"phantom leader":      {[]leaseVersion{v(5, "a", 0, 1, 1)}, []term{{Identity: "ghost", Start: s(2), End: s(3)}}, "ghost led"},
	}
	for name, tc := range cases {
		r := checkElections(electionRecord{Terms: tc.terms, Hist: tc.hist, StopAt: s(10), Complete: true})
		if got := strings.Join(r.anomalies, "; "); !strings.Contains(got, tc.want) {
			t.Errorf("%s: anomalies %q, want one mentioning %q", name, got, tc.want)
		}
	}
}

func TestElectionCheckerRequests(t *testing.T) {
	s := func(sec float64) time.Time { return base.Add(time.Duration(sec * float64(time.Second))) }
	v := func(rv uint64, holder string, trans int32, at float64) leaseVersion {
		return leaseVersion{RV: rv, Holder: holder, Transitions: trans, Duration: 3 * time.Second, Acquire: s(at), Renew: s(at)}
	}
	op := func(id, verb string, start, end float64, rv, holder string) leaseOp {
		return leaseOp{Identity: id, Verb: verb, Start: s(start), End: s(end), RV: rv, Holder: holder}
	}
	hist := []leaseVersion{v(5, "a", 0, 1), v(7, "a", 0, 2), v(9, "b", 1, 6), {RV: 10, Transitions: 1, Duration: time.Second, Acquire: s(7), Renew: s(7)}}
	good := []leaseOp{
		op("a", "update", 2, 2.1, "7", "a"),
		op("b", "get", 2.05, 2.2, "5", "a"), // concurrent with the write: may miss it
		op("b", "get", 2.2, 2.3, "7", "a"),
		op("b", "update", 6, 6.1, "9", "b"),
		op("b", "update", 7, 7.1, "10", ""), // b releases its own lease
	}
	if r := checkElections(electionRecord{Hist: hist, Ops: good, StopAt: s(8), Complete: true}); len(r.anomalies) != 0 {
		t.Fatalf("good requests: %v", r.anomalies)
	}
	cases := map[string]struct {
		ops  []leaseOp
		want string
	}{
		"stale read":         {append(good[:len(good):len(good)], op("c", "get", 3, 3.1, "5", "a")), "stale read: c's get"},
		"foreign release":    {[]leaseOp{op("a", "update", 7, 7.1, "10", "")}, "a released the lease b held"},
		"acknowledged, lost": {[]leaseOp{op("a", "update", 3, 3.1, "8", "a")}, "rv 8, which the watch never delivered"},
	}
	for name, tc := range cases {
		r := checkElections(electionRecord{Hist: hist, Ops: tc.ops, StopAt: s(8), Complete: true})
		if got := strings.Join(r.anomalies, "; "); !strings.Contains(got, tc.want) {
			t.Errorf("%s: anomalies %q, want one mentioning %q", name, got, tc.want)
		}
	}
}

// An overlap must say something about the server, so the timings have to
// let client-go keep its promise. The old leader's OnStoppedLeading fires
// at the latest RetryPeriod + RenewDeadline after its last acknowledged
// renewal, plus up to RenewDeadline for the release (ReleaseOnCancel, which
// runs before the callback); that renewal's renewTime was taken at most
// RequestTimeout before the acknowledgement. A new leader waits
// LeaseDuration from when it first saw a record equal to the last one,
// which with whole-second renewTimes can be up to a second earlier than
// that renewTime.
func TestElectionTimingsKeepClientGoPromise(t *testing.T) {
	if worst := leRecordPrecision + leRequestTimeout + leRetryPeriod + 2*leRenewDeadline; worst >= leLeaseDuration {
		t.Errorf("an old leader may lead until %v after a renewal a new one saw, LeaseDuration is %v", worst, leLeaseDuration)
	}
	if leLeaseDuration%time.Second != 0 {
		t.Errorf("LeaseDuration %v: the Lease stores whole seconds", leLeaseDuration)
	}
}
