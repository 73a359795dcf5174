package election

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/coordination/leasecandidate"
	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/registry"
)

// Defaults of Config, as kube-apiserver's controller has them.
const (
	DefaultPingWindow    = 5 * time.Second
	DefaultResync        = 5 * time.Second
	DefaultLeaseDuration = 5 * time.Second
	DefaultGCAge         = 30 * time.Minute
)

// leaderPoll is how often a node that does not lead checks whether it does
// now (and a leader whether it still does, between rounds).
const leaderPoll = 250 * time.Millisecond

// changeSettle batches a burst of relevant commits (candidates answering a
// ping) into one round.
const changeSettle = 20 * time.Millisecond

// States of a Lease in Status and in leasehold_election_leases.
const (
	// StateElected: the Lease has a valid holder and it is the candidate the
	// controller would elect.
	StateElected = "elected"
	// StateConflict: the candidates' strategies conflict (a user error);
	// the Lease is left untouched.
	StateConflict = "conflict"
	// StateWaiting: anything else — an election in progress, no eligible
	// candidate, a holder asked to step down, or a strategy left to another
	// controller.
	StateWaiting = "waiting"
)

var states = []string{StateElected, StateConflict, StateWaiting}

// Clock is the controller's time source; tests inject a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Leadership is what the controller needs of the Raft node.
type Leadership interface {
	// IsLeader reports whether this node believes it is the Raft leader.
	IsLeader() bool
}

// Config configures a Controller. Store and Node are required.
type Config struct {
	Store *registry.Store
	Node  Leadership
	// Clock defaults to the real clock.
	Clock Clock
	// PingWindow is how long a pinged candidate has to renew (default 5s).
	PingWindow time.Duration
	// Resync is the period of rounds when nothing is pending (default 5s).
	Resync time.Duration
	// LeaseDuration is written into elected Leases, in whole seconds
	// (rounded up; default 5s).
	LeaseDuration time.Duration
	// GCAge: candidates not renewed for this long are ignored and deleted
	// (default 30m).
	GCAge time.Duration
	// GCInterval is how often garbage collection runs (default GCAge/6).
	GCInterval time.Duration
	Logger     hclog.Logger
	// Registerer, if set, receives the controller's metrics.
	Registerer prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.PingWindow <= 0 {
		c.PingWindow = DefaultPingWindow
	}
	if c.Resync <= 0 {
		c.Resync = DefaultResync
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.GCAge <= 0 {
		c.GCAge = DefaultGCAge
	}
	if c.GCInterval <= 0 {
		c.GCInterval = c.GCAge / 6
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// LeaseStatus is the controller's view of one Lease that has candidates.
type LeaseStatus struct {
	Namespace string `json:"namespace"`
	LeaseName string `json:"leaseName"`
	// State is elected, conflict or waiting.
	State string `json:"state"`
	// Strategy is the resolved strategy ("" on a conflict).
	Strategy        string `json:"strategy,omitempty"`
	Holder          string `json:"holder,omitempty"`
	PreferredHolder string `json:"preferredHolder,omitempty"`
	// Candidates are every LeaseCandidate naming the Lease; Eligible those
	// the controller currently counts as able to lead (renewed recently or
	// answered the last ping).
	Candidates []string `json:"candidates"`
	Eligible   []string `json:"eligible"`
	// Reason says why the Lease is waiting.
	Reason string `json:"reason,omitempty"`
	// Error is a user error (strategy conflict) or a failed write.
	Error string `json:"error,omitempty"`
}

// Controller is the coordinated leader election controller; see the
// package documentation.
type Controller struct {
	cfg   Config
	log   hclog.Logger
	store *registry.Store
	clock Clock

	leaseSeconds int32
	candidatesV1 *registry.Resource // v1beta1, served
	candidatesV0 *registry.Resource // v1alpha1, served

	conflicts prometheus.Counter
	gauge     *prometheus.GaugeVec

	mu     sync.Mutex
	status map[leaseKey]LeaseStatus

	// Owned by the Run goroutine.
	elections map[leaseKey]time.Time // start of the election in progress
	lastGC    time.Time
}

type leaseKey struct{ Namespace, Name string }

// storedCandidates lists LeaseCandidates in their stored form (v1beta1 with
// the preferred-strategies annotation of v1alpha1 writers still on), which
// no served version shows. The controller only lists through it; it writes
// through the served versions.
var storedCandidates = &registry.Resource{
	Name:     "leasecandidates",
	Singular: "leasecandidate",
	Kind:     leasecandidate.Kind,
	Version:  leasecandidate.StoredVersion,
	New: func() registry.Object {
		return leasecandidate.New(leasecandidate.StoredVersion).(registry.Object)
	},
	NewList:  func() runtime.Object { return leasecandidate.NewList(leasecandidate.StoredVersion) },
	SetItems: leasecandidate.SetListItems,
}

// New returns a controller; Run starts it.
func New(cfg Config) *Controller {
	cfg.setDefaults()
	v1, ok1 := registry.Lookup(apis.Group, "v1beta1", "leasecandidates")
	v0, ok0 := registry.Lookup(apis.Group, "v1alpha1", "leasecandidates")
	if !ok1 || !ok0 {
		panic("election: LeaseCandidate v1beta1 and v1alpha1 must be served")
	}
	secs := math.Ceil(cfg.LeaseDuration.Seconds())
	if secs < 1 {
		secs = 1
	}
	c := &Controller{
		cfg:          cfg,
		log:          cfg.Logger,
		store:        cfg.Store,
		clock:        cfg.Clock,
		leaseSeconds: int32(min(secs, math.MaxInt32)),
		candidatesV1: v1,
		candidatesV0: v0,
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "leasehold_election_conflicts_total",
			Help: "Times a Lease's candidates were found with conflicting strategies (a user error; the Lease is left untouched), counted when the conflict appears or changes.",
		}),
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "leasehold_election_leases",
			Help: "Leases with candidates, by election state (elected, conflict, waiting), as seen by the controller on the Raft leader; 0 on other nodes.",
		}, []string{"state"}),
		status:    map[leaseKey]LeaseStatus{},
		elections: map[leaseKey]time.Time{},
	}
	for _, s := range states {
		c.gauge.WithLabelValues(s).Set(0)
	}
	if cfg.Registerer != nil {
		for _, m := range []prometheus.Collector{c.conflicts, c.gauge} {
			if err := cfg.Registerer.Register(m); err != nil {
				c.log.Warn("election metrics not registered", "error", err)
			}
		}
	}
	return c
}

// Status returns the controller's view of every Lease with candidates,
// sorted by namespace and name; empty unless this node leads.
func (c *Controller) Status() []LeaseStatus {
	c.mu.Lock()
	out := make([]LeaseStatus, 0, len(c.status))
	for _, s := range c.status {
		s.Candidates = slices.Clone(s.Candidates)
		s.Eligible = slices.Clone(s.Eligible)
		out = append(out, s)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].LeaseName < out[j].LeaseName
	})
	return out
}

// Run runs the controller until ctx ends: rounds while this node is the
// Raft leader, nothing otherwise. A round runs every Resync, when a ping's
// window or a held Lease's term ends, and soon after a LeaseCandidate
// changes or a Lease changes hands (the node's event history says so).
func (c *Controller) Run(ctx context.Context) {
	var (
		leading bool
		next    time.Time // when the next round is due
		force   bool
		seen    uint64 // events up to here have been looked at
		changed <-chan struct{}
	)
	defer c.stopLeading()
	for ctx.Err() == nil {
		if c.cfg.Node.IsLeader() {
			if !leading {
				leading, next = true, time.Time{}
				changed = c.store.State().Changed()
				seen = c.store.State().AppliedIndex()
				c.log.Info("this node leads the Raft cluster: coordinated leader election started")
			}
			if force || !c.clock.Now().Before(next) {
				n, rv, ok := c.round(ctx)
				next = n
				if ok && rv > seen {
					seen = rv
				}
			}
		} else if leading {
			leading, changed = false, nil
			c.stopLeading()
			c.log.Info("this node no longer leads the Raft cluster: coordinated leader election stopped")
		}
		force = false
		wait := leaderPoll
		if leading {
			if d := next.Sub(c.clock.Now()); d < wait {
				wait = max(d, 0)
			}
		}
		select {
		case <-ctx.Done():
		case <-c.clock.After(wait):
		case <-changed:
			changed = c.store.State().Changed() // re-armed before looking
			if force = c.relevantChanges(&seen); force {
				// Let a burst (several candidates answering) settle.
				select {
				case <-ctx.Done():
				case <-time.After(changeSettle):
				}
			}
		}
	}
}

// relevantChanges reports whether the events after *seen touch the
// election: a LeaseCandidate changed, or a Lease with candidates was deleted
// or changed hands. It advances *seen.
func (c *Controller) relevantChanges(seen *uint64) bool {
	since := c.store.State().EventsSince(*seen)
	if since.Applied > *seen {
		*seen = since.Applied
	}
	if since.Expired {
		return true
	}
	for _, ev := range since.Events {
		switch ev.Object.Resource {
		case storedCandidates.Name:
			return true
		case registry.Leases.Name:
			key := ev.Object.Key()
			k := leaseKey{key.Namespace, key.Name}
			c.mu.Lock()
			_, tracked := c.status[k]
			c.mu.Unlock()
			if !tracked {
				continue
			}
			if ev.Prior == nil || ev.Type == state.Deleted || leaseHolder(ev.Prev()) != leaseHolder(ev.Object) {
				return true
			}
		}
	}
	return false
}

func leaseHolder(o *state.Object) string {
	if l, ok := o.Obj.(*coordinationv1.Lease); ok {
		return ptrString(l.Spec.HolderIdentity)
	}
	return ""
}

// stopLeading forgets everything a leader keeps in memory.
func (c *Controller) stopLeading() {
	clear(c.elections)
	c.lastGC = time.Time{}
	c.mu.Lock()
	clear(c.status)
	c.mu.Unlock()
	for _, s := range states {
		c.gauge.WithLabelValues(s).Set(0)
	}
}

// candidate is one LeaseCandidate as listed (stored form, shared: never
// mutated).
type candidate struct {
	obj *coordinationv1beta1.LeaseCandidate
	// preferred is the v1alpha1 list of a candidate written in v1alpha1.
	preferred []Strategy
}

func (cd *candidate) name() string { return cd.obj.Name }

func (cd *candidate) renewed() (time.Time, bool) {
	if cd.obj.Spec.RenewTime == nil {
		return time.Time{}, false
	}
	return cd.obj.Spec.RenewTime.Time, true
}

// unanswered reports whether the candidate has a ping it did not answer
// (renewTime not after pingTime), and when that ping was sent.
func (cd *candidate) unanswered() (time.Time, bool) {
	p := cd.obj.Spec.PingTime
	if p == nil {
		return time.Time{}, false
	}
	if r, ok := cd.renewed(); ok && r.After(p.Time) {
		return time.Time{}, false
	}
	return p.Time, true
}

func newCandidate(obj *coordinationv1beta1.LeaseCandidate) *candidate {
	cd := &candidate{obj: obj}
	if _, ok := obj.Annotations[leasecandidate.PreferredStrategiesAnnotation]; ok {
		if o, err := leasecandidate.FromStored(obj, "v1alpha1"); err == nil {
			cd.preferred = o.(*v1alpha1.LeaseCandidate).Spec.PreferredStrategies
		}
		if cd.preferred == nil {
			cd.preferred = []Strategy{}
		}
	}
	return cd
}

// round runs one pass over every Lease with candidates. It returns when the
// next round is due, the version it read the candidates at, and false when
// it was abandoned (leadership lost, ctx ended).
func (c *Controller) round(ctx context.Context) (next time.Time, rv uint64, ok bool) {
	now := c.clock.Now()
	retry := now.Add(min(c.cfg.Resync, time.Second))
	listed, err := c.store.List(ctx, storedCandidates, "", registry.ListOptions{Label: labels.Everything(), Field: fields.Everything()})
	if err != nil {
		if c.cfg.Node.IsLeader() && ctx.Err() == nil {
			c.log.Warn("listing lease candidates failed", "error", err)
		}
		return retry, 0, false
	}
	list := listed.(*coordinationv1beta1.LeaseCandidateList)
	listRV := list.ResourceVersion
	rv, _ = strconv.ParseUint(listRV, 10, 64)

	items := make([]*coordinationv1beta1.LeaseCandidate, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if c.lastGC.IsZero() || !now.Before(c.lastGC.Add(c.cfg.GCInterval)) {
		c.lastGC = now
		items = c.collectGarbage(ctx, items, now)
	}

	groups := map[leaseKey][]*candidate{}
	var keys []leaseKey
	for _, it := range items {
		k := leaseKey{it.Namespace, it.Spec.LeaseName}
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], newCandidate(it))
	}
	next = now.Add(c.cfg.Resync)
	statuses := make(map[leaseKey]LeaseStatus, len(keys))
	for _, k := range keys {
		if ctx.Err() != nil || !c.cfg.Node.IsLeader() {
			return retry, rv, false
		}
		st, due := c.reconcile(ctx, k, groups[k], listRV, now)
		if due.Before(next) {
			next = due
		}
		statuses[k] = st
	}
	if ctx.Err() != nil || !c.cfg.Node.IsLeader() {
		return retry, rv, false
	}
	for k := range c.elections {
		if _, ok := groups[k]; !ok {
			delete(c.elections, k)
		}
	}
	c.publish(statuses)
	return next, rv, true
}

// publish installs the round's statuses, logs and counts conflicts that
// appeared or changed, and sets the gauge.
func (c *Controller) publish(statuses map[leaseKey]LeaseStatus) {
	counts := map[string]int{}
	c.mu.Lock()
	prev := c.status
	c.status = statuses
	c.mu.Unlock()
	for k, st := range statuses {
		counts[st.State]++
		old, had := prev[k]
		switch {
		case st.State == StateConflict && (!had || old.State != StateConflict || old.Error != st.Error):
			c.conflicts.Inc()
			c.log.Warn("lease candidates conflict: the Lease is left untouched until they agree",
				"namespace", k.Namespace, "lease", k.Name, "error", st.Error)
		case st.State != StateConflict && had && old.State == StateConflict:
			c.log.Info("lease candidates no longer conflict", "namespace", k.Namespace, "lease", k.Name, "strategy", st.Strategy)
		}
	}
	for _, s := range states {
		c.gauge.WithLabelValues(s).Set(float64(counts[s]))
	}
}

// collectGarbage deletes candidates not renewed within GCAge and returns
// the others.
func (c *Controller) collectGarbage(ctx context.Context, items []*coordinationv1beta1.LeaseCandidate, now time.Time) []*coordinationv1beta1.LeaseCandidate {
	cutoff := now.Add(-c.cfg.GCAge)
	kept := items[:0:0]
	for _, it := range items {
		last := it.CreationTimestamp.Time
		if it.Spec.RenewTime != nil {
			last = it.Spec.RenewTime.Time
		}
		if !last.Before(cutoff) || !c.cfg.Node.IsLeader() {
			kept = append(kept, it)
			continue
		}
		rv, uid := it.ResourceVersion, it.UID
		_, err := c.store.Delete(ctx, c.candidatesV1, it.Namespace, it.Name, registry.DeleteOptions{
			Preconditions: &metav1.Preconditions{ResourceVersion: &rv, UID: &uid},
		})
		switch {
		case err == nil:
			c.log.Info("deleted a lease candidate that stopped renewing", "namespace", it.Namespace, "candidate", it.Name,
				"lease", it.Spec.LeaseName, "lastRenewal", last, "gcAge", c.cfg.GCAge)
		case apierrors.IsNotFound(err):
		default:
			// Renewed meanwhile (precondition failed) or a cluster error:
			// keep it; the next collection looks again.
			c.log.Debug("lease candidate not collected", "namespace", it.Namespace, "candidate", it.Name, "error", err)
			kept = append(kept, it)
		}
	}
	return kept
}

// reconcile runs one election step for one Lease. It returns the Lease's
// status and when it wants the next round.
func (c *Controller) reconcile(ctx context.Context, k leaseKey, all []*candidate, rv string, now time.Time) (LeaseStatus, time.Time) {
	w := c.cfg.PingWindow
	st := LeaseStatus{Namespace: k.Namespace, LeaseName: k.Name, State: StateWaiting, Candidates: names(all), Eligible: []string{}}
	retry := now.Add(min(c.cfg.Resync, time.Second))
	resync := now.Add(c.cfg.Resync)

	lease, err := c.getLease(ctx, k, rv)
	if err != nil {
		st.Error = "reading the Lease: " + err.Error()
		return st, retry
	}
	describeLease(&st, lease)

	// Admissible: renewed within GCAge.
	var admissible []*candidate
	for _, cd := range all {
		if r, ok := cd.renewed(); ok && r.After(now.Add(-c.cfg.GCAge)) {
			admissible = append(admissible, cd)
		}
	}
	if len(admissible) == 0 {
		delete(c.elections, k)
		st.Reason = fmt.Sprintf("no candidate renewed within %v", c.cfg.GCAge)
		return st, resync
	}
	strategy, err := resolveStrategy(preferences(admissible))
	if err != nil {
		delete(c.elections, k)
		st.State, st.Error = StateConflict, err.Error()
		return st, resync
	}
	st.Strategy = string(strategy)
	if strategy != coordinationv1.OldestEmulationVersion {
		delete(c.elections, k)
		return c.leaveToOthers(ctx, st, k, lease, strategy, now), resync
	}

	// Responsive: not known to have ignored a ping.
	var responsive []*candidate
	for _, cd := range admissible {
		if p, ok := cd.unanswered(); ok && !p.Add(w).After(now) {
			continue
		}
		responsive = append(responsive, cd)
	}
	st.Eligible = names(responsive)
	needed, why := c.electionNeeded(lease, responsive, now)
	if !needed {
		delete(c.elections, k)
		if why != "" {
			st.Reason = why
		} else {
			st.State = StateElected
		}
		return st, c.wakeForExpiry(lease, resync)
	}

	// Ping phase.
	start, ok := c.elections[k]
	if !ok {
		start = now
		c.elections[k] = start
	}
	freshSince := start.Add(-w)
	var deadline time.Time
	waitUntil := func(t time.Time) {
		if deadline.IsZero() || t.Before(deadline) {
			deadline = t
		}
	}
	var eligible []*candidate
	for _, cd := range admissible {
		if r, _ := cd.renewed(); r.After(freshSince) {
			eligible = append(eligible, cd)
			continue
		}
		if p, ok := cd.unanswered(); ok {
			if p.Add(w).After(now) {
				waitUntil(p.Add(w)) // outstanding: wait for it
			}
			continue // ignored an earlier ping: not asked again
		}
		if err := c.ping(ctx, cd, now); err != nil {
			if !c.cfg.Node.IsLeader() {
				return st, retry
			}
			c.log.Debug("ping failed", "namespace", k.Namespace, "candidate", cd.name(), "error", err)
			waitUntil(retry)
			continue
		}
		waitUntil(now.Add(w))
	}
	st.Eligible = names(eligible)
	if !deadline.IsZero() {
		st.Reason = "waiting for candidates to answer the ping"
		// A moment past the deadline, so that it has surely passed.
		return st, deadline.Add(time.Millisecond)
	}

	// Election.
	delete(c.elections, k)
	if len(eligible) == 0 {
		st.Reason = "no candidate answered the ping"
		return st, resync
	}
	strategy, err = resolveStrategy(preferences(eligible))
	if err != nil {
		st.State, st.Error = StateConflict, err.Error()
		return st, resync
	}
	st.Strategy = string(strategy)
	if strategy != coordinationv1.OldestEmulationVersion {
		return c.leaveToOthers(ctx, st, k, lease, strategy, now), resync
	}
	objs := make([]*coordinationv1beta1.LeaseCandidate, len(eligible))
	for i, cd := range eligible {
		objs[i] = cd.obj
	}
	winner := pickOldestEmulationVersion(objs)
	if winner == nil {
		st.Reason = "no eligible candidate has a valid binaryVersion and emulationVersion"
		return st, resync
	}
	written, err := c.writeLease(ctx, k, lease, winner.Name, strategy, now)
	if err != nil {
		st.Error = "writing the Lease: " + err.Error()
		return st, retry
	}
	if written != nil {
		lease = written
		holder := ptrString(written.Spec.HolderIdentity)
		if pref := ptrString(written.Spec.PreferredHolder); pref != "" {
			c.log.Info("asked the lease holder to step down", "namespace", k.Namespace, "lease", k.Name,
				"holder", holder, "preferredHolder", pref)
		} else {
			c.log.Info("elected", "namespace", k.Namespace, "lease", k.Name, "holder", holder,
				"strategy", strategy, "electionTook", now.Sub(start), "eligible", len(eligible), "candidates", len(all))
		}
	}
	describeLease(&st, lease)
	if st.Holder == winner.Name && !c.expired(lease, now) {
		st.State = StateElected
	} else {
		st.Reason = fmt.Sprintf("%q elected; holder %q asked to step down", winner.Name, st.Holder)
	}
	return st, c.wakeForExpiry(lease, resync)
}

// electionNeeded reports whether the Lease needs an election; when it does
// not, why says why the Lease is nevertheless not elected ("" when it is).
func (c *Controller) electionNeeded(lease *coordinationv1.Lease, responsive []*candidate, now time.Time) (needed bool, why string) {
	if lease == nil || c.expired(lease, now) || ptrString(lease.Spec.HolderIdentity) == "" {
		return true, ""
	}
	stale := now.Add(-c.cfg.GCAge / 2)
	for _, cd := range responsive {
		if r, _ := cd.renewed(); r.Before(stale) {
			return true, "" // ping it before it is collected
		}
	}
	objs := make([]*coordinationv1beta1.LeaseCandidate, len(responsive))
	for i, cd := range responsive {
		objs[i] = cd.obj
	}
	best := pickOldestEmulationVersion(objs)
	holder, pref := ptrString(lease.Spec.HolderIdentity), ptrString(lease.Spec.PreferredHolder)
	switch {
	case best == nil:
		return false, "no responsive candidate has a valid binaryVersion and emulationVersion"
	case best.Name == holder:
		return pref != "", "" // a stale preferredHolder is cleared
	case best.Name == pref:
		return false, fmt.Sprintf("%q elected; holder %q asked to step down", pref, holder)
	}
	return true, ""
}

// expired is kube-apiserver's isLeaseExpired.
func (c *Controller) expired(l *coordinationv1.Lease, now time.Time) bool {
	return l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
		l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second).Before(now)
}

// wakeForExpiry moves the next round up to just after a held Lease would
// expire, so that a holder that stops renewing is replaced promptly.
func (c *Controller) wakeForExpiry(l *coordinationv1.Lease, next time.Time) time.Time {
	if l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || ptrString(l.Spec.HolderIdentity) == "" {
		return next
	}
	exp := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second + time.Millisecond)
	if exp.After(c.clock.Now()) && exp.Before(next) {
		return exp
	}
	return next
}

// leaveToOthers handles a strategy this controller does not elect for: the
// Lease gets the strategy (created without a holder when missing).
func (c *Controller) leaveToOthers(ctx context.Context, st LeaseStatus, k leaseKey, lease *coordinationv1.Lease, strategy Strategy, now time.Time) LeaseStatus {
	st.Reason = fmt.Sprintf("strategy %q is left to another controller", strategy)
	var err error
	switch {
	case lease == nil:
		l := c.newLease(k)
		l.Spec.Strategy = &strategy
		l.Spec.LeaseDurationSeconds = &c.leaseSeconds
		l.Spec.RenewTime = microTime(now)
		_, err = c.store.Create(ctx, registry.Leases, l, registry.WriteOptions{})
		if err == nil {
			c.log.Info("created a lease without holder", "namespace", k.Namespace, "lease", k.Name, "strategy", strategy)
		}
	case lease.Spec.Strategy == nil || *lease.Spec.Strategy != strategy:
		l := lease.DeepCopy()
		l.Spec.Strategy = &strategy
		_, _, err = c.store.Update(ctx, registry.Leases, k.Namespace, k.Name, l, registry.WriteOptions{})
		if err == nil {
			c.log.Info("lease strategy changed", "namespace", k.Namespace, "lease", k.Name, "strategy", strategy)
		}
	}
	if err != nil {
		st.Error = "writing the Lease: " + err.Error()
	}
	if lease != nil && ptrString(lease.Spec.HolderIdentity) != "" && !c.expired(lease, now) {
		st.State, st.Reason = StateElected, ""
	}
	return st
}

// getLease reads the Lease at least at version rv (the candidates' list);
// nil when it does not exist. The result is shared: copy before changing.
func (c *Controller) getLease(ctx context.Context, k leaseKey, rv string) (*coordinationv1.Lease, error) {
	obj, err := c.store.Get(ctx, registry.Leases, k.Namespace, k.Name, registry.ReadOptions{ResourceVersion: rv})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil, fmt.Errorf("lease is a %T", obj)
	}
	return l, nil
}

func (c *Controller) newLease(k leaseKey) *coordinationv1.Lease {
	l := registry.Leases.New().(*coordinationv1.Lease)
	l.Namespace, l.Name = k.Namespace, k.Name
	return l
}

// writeLease gives the Lease to winner, or asks its holder to step down for
// winner; it returns the written Lease, or nil when nothing changed.
func (c *Controller) writeLease(ctx context.Context, k leaseKey, lease *coordinationv1.Lease, winner string, strategy Strategy, now time.Time) (*coordinationv1.Lease, error) {
	if !c.cfg.Node.IsLeader() {
		return nil, registry.NotLeader("leadership lost")
	}
	if lease == nil {
		l := c.newLease(k)
		l.Spec = coordinationv1.LeaseSpec{
			HolderIdentity:       &winner,
			LeaseDurationSeconds: &c.leaseSeconds,
			AcquireTime:          microTime(now),
			RenewTime:            microTime(now),
			LeaseTransitions:     new(int32),
			Strategy:             &strategy,
		}
		out, err := c.store.Create(ctx, registry.Leases, l, registry.WriteOptions{})
		if err != nil {
			return nil, err
		}
		return out.(*coordinationv1.Lease), nil
	}
	l := lease.DeepCopy()
	l.Spec.Strategy = &strategy
	holder := ptrString(l.Spec.HolderIdentity)
	switch {
	case holder == "" || c.expired(l, now):
		// Free or expired: take it for the winner.
		if holder != winner || l.Spec.AcquireTime == nil {
			l.Spec.AcquireTime = microTime(now)
		}
		if holder != winner {
			n := int32(0)
			if l.Spec.LeaseTransitions != nil {
				n = *l.Spec.LeaseTransitions
			}
			if holder != "" || l.Spec.LeaseTransitions != nil {
				n++
			}
			l.Spec.LeaseTransitions = &n
		}
		l.Spec.HolderIdentity = &winner
		l.Spec.RenewTime = microTime(now)
		l.Spec.LeaseDurationSeconds = &c.leaseSeconds
		l.Spec.PreferredHolder = nil
	case holder != winner:
		// A worse holder: ask it to step down gracefully.
		l.Spec.PreferredHolder = &winner
	default:
		// The winner holds it: a stale preferredHolder would make it quit.
		l.Spec.PreferredHolder = nil
	}
	if apiequality.Semantic.DeepEqual(l.Spec, lease.Spec) {
		return nil, nil
	}
	out, _, err := c.store.Update(ctx, registry.Leases, k.Namespace, k.Name, l, registry.WriteOptions{})
	if err != nil {
		return nil, err
	}
	return out.(*coordinationv1.Lease), nil
}

// ping sets the candidate's pingTime, writing it in the version it was
// written in (v1alpha1 writers keep their preferred-strategies list), with
// the resourceVersion it was listed at.
func (c *Controller) ping(ctx context.Context, cd *candidate, now time.Time) error {
	if !c.cfg.Node.IsLeader() {
		return registry.NotLeader("leadership lost")
	}
	res, version := c.candidatesV1, "v1beta1"
	if cd.preferred != nil {
		res, version = c.candidatesV0, "v1alpha1"
	}
	obj, err := leasecandidate.FromStored(cd.obj, version)
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		o.Spec.PingTime = microTime(now)
	case *v1alpha1.LeaseCandidate:
		o.Spec.PingTime = microTime(now)
	}
	_, _, err = c.store.Update(ctx, res, cd.obj.Namespace, cd.obj.Name, obj.(registry.Object), registry.WriteOptions{})
	return err
}

func preferences(cands []*candidate) []preference {
	out := make([]preference, len(cands))
	for i, cd := range cands {
		out[i] = preference{Name: cd.name(), BinaryVersion: cd.obj.Spec.BinaryVersion, Strategy: cd.obj.Spec.Strategy, Preferred: cd.preferred}
	}
	return out
}

func names(cands []*candidate) []string {
	out := make([]string, len(cands))
	for i, cd := range cands {
		out[i] = cd.name()
	}
	return out
}

func describeLease(st *LeaseStatus, l *coordinationv1.Lease) {
	st.Holder, st.PreferredHolder = "", ""
	if l != nil {
		st.Holder = ptrString(l.Spec.HolderIdentity)
		st.PreferredHolder = ptrString(l.Spec.PreferredHolder)
	}
}

func ptrString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// microTime is t as the API stores it (microseconds).
func microTime(t time.Time) *metav1.MicroTime {
	return &metav1.MicroTime{Time: t.Truncate(time.Microsecond)}
}
