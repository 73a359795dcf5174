package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The process-level watch tests (RELIABILITY.md C2): a watch is
// served from the event history each node's FSM rebuilds from the Raft log
// (and carries in snapshots), so a client resumes from the last
// resourceVersion it received on any node, after a SIGKILL of the node it
// was watching and after a restart of the whole cluster.

// TestWatchResumesOnAnotherNodeAfterSIGKILL: writers create and CAS-update
// 20 Leases through all nodes while a watcher, started on node A from a
// list's resourceVersion, records every event. A is SIGKILLed mid-run (a
// follower, then the Raft leader); the watcher resumes from the last
// resourceVersion it received on another node; A is restarted and the
// watcher is moved back onto it. Over the whole run the events must be
// strictly ordered, unique, complete for every acknowledged write, free of
// writes that were never made, with bookmarks never behind, and identical to
// what each node's history replays at the end.
func TestWatchResumesOnAnotherNodeAfterSIGKILL(t *testing.T) {
	for _, role := range []string{"follower", "leader"} {
		t.Run(role, func(t *testing.T) { testWatchResumeAfterKill(t, role) })
	}
}

func testWatchResumeAfterKill(t *testing.T, role string) {
	pc := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w := newWorkload(pc, "watch-"+role)
	wt := newWriteTracker(w)

	leader := pc.leader(10 * time.Second)
	startRV := listRV(ctx, t, pc, leader, w.ns)
	a := pickRole(pc, role, leader)

	// The server ends each watch after 3 s, with a bookmark 2 s before.
	rw := newResumingWatcher(pc, w.ns, 3)
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		rw.run(wctx, startRV, a)
	}()
	defer func() { stopWatch(); <-watchDone }()

	// Two writers, each owning half of the 20 Leases: create them, then
	// CAS-update one of its own at random, until told to stop.
	var (
		wg       sync.WaitGroup
		stopping atomic.Bool
	)
	defer wg.Wait()
	defer stopping.Store(true)
	casWriters(ctx, wt, 20, 2, 7, &stopping, &wg)

	waitUntil(t, 30*time.Second, "60 acknowledged writes, 40 watch events and a bookmark before the kill", func() bool {
		return w.nAcks.Load() >= 60 && rw.eventCount() >= 40 && rw.bookmarkCount() > 0
	})

	// The watcher is on A, and A has the role the subtest is about.
	a = rw.settleOn(t, func() string { return pickRole(pc, role, pc.leader(10*time.Second)) })
	acksAtKill := w.nAcks.Load()
	w.down.Store(a, true)
	killAt := time.Now()
	pc.kill(a)
	waitUntil(t, 30*time.Second, "the watcher resumed on another node and rolled over there, 40 writes and 30 events after the kill", func() bool {
		c, ok := rw.current()
		return ok && c.node != a && !c.ok.IsZero() && w.nAcks.Load() >= acksAtKill+40 && rw.eventsAfter(killAt) >= 30 && rw.cleanEndsAfter(killAt) > 0
	})

	pc.restart(a)
	ready := pc.waitReady(a, 30*time.Second)
	w.down.Delete(a)
	restartedAt := time.Now()
	rw.setPrefer(a)
	acks := w.nAcks.Load()
	waitUntil(t, 20*time.Second, "the watcher back on the restarted "+a+" with 10 events, 30 more writes", func() bool {
		return rw.eventsOnAfter(a, restartedAt) >= 10 && w.nAcks.Load() >= acks+30
	})
	stopping.Store(true)
	wg.Wait()

	// Every node applies everything acknowledged; the watcher catches up.
	maxRV := wt.maxAcked()
	for _, n := range clusterNames {
		pc.waitApplied(n, maxRV, 30*time.Second)
	}
	final := finalList(ctx, t, pc, w.ns)
	target := maxRV
	for _, it := range final {
		target = max(target, it.rv)
	}
	waitUntil(t, 20*time.Second, fmt.Sprintf("the watcher to reach resourceVersion %d", target), func() bool { return rw.lastRV() >= target })
	stopWatch()
	<-watchDone

	events, conns := rw.snapshot()
	checkWatchHistory(t, events, startRV, wt, final)
	// Each node's history, replayed from startRV at the end (A's rebuilt by
	// its restart), is exactly what the watcher saw across its resumes.
	replays := replayAll(ctx, t, pc, w.ns, startRV, target)
	want := deliveredOnly(events)
	for _, n := range clusterNames {
		if d := diffEvents(want, replays[n]); d != "" {
			t.Errorf("%s: a watch from %d at the end differs from the resumed watch: %s", n, startRV, d)
		}
	}

	// Numbers.
	var resumes, broken, refused, bookmarks int
	var resumeTimes []string
	for i, c := range conns {
		if i > 0 && !c.ok.IsZero() {
			resumes++
		}
		if c.ok.IsZero() {
			refused++
		}
		// The last connection ended because the test stopped watching.
		if i < len(conns)-1 && !c.ok.IsZero() && !errors.Is(c.err, io.EOF) {
			broken++
			if nxt := nextOK(conns, i); nxt != nil {
				resumeTimes = append(resumeTimes, fmt.Sprintf("%s→%s from rv %d in %v", c.node, nxt.node, nxt.from, nxt.ok.Sub(c.ended).Round(time.Millisecond)))
			}
		}
		bookmarks += c.bookmarks
	}
	if broken == 0 {
		t.Errorf("the watch on %s never broke when %s was SIGKILLed", a, a)
	}
	firstAfter := rw.firstEventAfter(killAt)
	t.Logf("%s %s SIGKILLed: watch resumed %s; first event after the kill delivered %v after it; restarted %s ready after %v",
		role, a, strings.Join(resumeTimes, ", "), firstAfter.Round(time.Millisecond), a, ready.Round(time.Millisecond))
	t.Logf("%d events (rv %d..%d), %d bookmarks, %d connections (%d refused or unreachable), %d resumes (%d after a broken stream), %d acknowledged writes, %d with unknown outcome; transient errors: %s",
		len(want), startRV, target, bookmarks, len(conns), refused, resumes, broken, len(wt.snapshotAcked()), len(wt.snapshotUnknown()), w.errSummary())
	t.Logf("connections: %s", describeConns(conns))
}

// TestWatchResumesAfterWholeClusterRestart: Leases are written, a watch's
// last resourceVersion L recorded, more Leases written, all three nodes
// SIGKILLed and restarted; a watch from L and one from before the first
// write are then resumed on each node in turn: all answer with exactly the
// acknowledged writes after the resourceVersion, identical across nodes. In
// the "snapshots" variant each node has compacted its log past L before the
// kill, so the restarted nodes must take that history from their snapshots.
func TestWatchResumesAfterWholeClusterRestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"log", nil},
		{"snapshots", []string{"--snapshot-threshold", "32", "--snapshot-interval", "200ms", "--trailing-logs", "8"}},
	} {
		t.Run(tc.name, func(t *testing.T) { testWatchAfterRestart(t, tc.name == "snapshots", tc.extra...) })
	}
}

func testWatchAfterRestart(t *testing.T, snapshots bool, extra ...string) {
	pc := newProcCluster(t, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := newWorkload(pc, "restart")
	wt := newWriteTracker(w)
	leader := pc.leader(10 * time.Second)
	startRV := listRV(ctx, t, pc, leader, w.ns)

	// First batch: 20 creates and 40 updates.
	wt.batch(ctx, 3, 0, 20, wt.create)
	wt.batch(ctx, 3, 0, 20, wt.update)
	wt.batch(ctx, 3, 0, 20, wt.update)
	// A watch from startRV on the leader, read until it has every one.
	first, err := collectWatch(ctx, pc.node(leader).apiAddr, w.ns, startRV, wt.maxAcked(), 2)
	if err != nil {
		t.Fatalf("watch on %s from %d: %v", leader, startRV, err)
	}
	seen := deliveredOnly(first)
	if len(seen) == 0 {
		t.Fatal("the first watch delivered nothing")
	}
	L := seen[len(seen)-1].RV

	// Second batch, after L: 10 creates and 30 updates.
	wt.batch(ctx, 3, 20, 30, wt.create)
	wt.batch(ctx, 3, 0, 30, wt.update)
	if snapshots {
		// Every node has a snapshot taken well after L, so with 8 trailing
		// logs the entries after L are gone from its log.
		waitSnapshots(ctx, t, pc, wt, L+12)
		// A few more in the log after the snapshots: a restart restores
		// the snapshot, then replays them.
		wt.batch(ctx, 3, 0, 9, wt.update)
	}
	if u := wt.snapshotUnknown(); len(u) > 0 {
		t.Fatalf("%d writes with an unknown outcome without any failure: %v", len(u), u)
	}
	maxRV := wt.maxAcked()
	for _, n := range clusterNames {
		pc.waitApplied(n, maxRV, 30*time.Second)
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
	readyAfter := time.Since(restartAt)
	for _, n := range clusterNames {
		pc.waitApplied(n, maxRV, 30*time.Second)
	}

	// What the acknowledged writes say every watch must deliver.
	all := wt.expected(startRV)
	var afterL []watchEvent
	for _, e := range all {
		if e.RV > L {
			afterL = append(afterL, e)
		}
	}
	if d := diffEvents(all[:len(all)-len(afterL)], seen); d != "" {
		t.Errorf("the watch before the kill: %s", d)
	}
	var got [][]watchEvent
	for _, n := range clusterNames {
		for _, from := range []uint64{L, startRV} {
			start := time.Now()
			evs, err := collectWatch(ctx, pc.node(n).apiAddr, w.ns, from, maxRV, 2)
			if err != nil {
				t.Errorf("%s: watch from %d after the restart: %v", n, from, err)
				continue
			}
			evs = deliveredOnly(evs)
			want := afterL
			if from == startRV {
				want = all
			}
			if d := diffEvents(want, evs); d != "" {
				t.Errorf("%s: watch from %d after the restart: %s", n, from, d)
			}
			if from == L {
				got = append(got, evs)
				t.Logf("%s: watch from L=%d after the restart: %d events (rv %d..%d) in %v", n, L, len(evs), firstRV(evs), lastRVOf(evs), time.Since(start).Round(time.Millisecond))
			}
		}
	}
	for i := 1; i < len(got); i++ {
		if d := diffEvents(got[0], got[i]); d != "" {
			t.Errorf("watches from L on %s and %s differ: %s", clusterNames[0], clusterNames[i], d)
		}
	}
	if snapshots {
		for _, n := range clusterNames {
			if c := countLines(pc.node(n).logPath, "restored from snapshot"); c == 0 {
				t.Errorf("%s: no \"restored from snapshot\" in its log: the restart did not exercise the snapshot", n)
			}
			// hashicorp/raft logs "compacting logs: ... from=A to=B".
			if to, ok := compactedTo(pc.node(n).logPath); !ok {
				t.Logf("note: %s logged no log compaction", n)
			} else if to <= L {
				t.Errorf("%s: log compacted only up to %d, not past L=%d: the resume from L did not need the snapshot's history", n, to, L)
			} else {
				t.Logf("%s: log compacted up to index %d, past L=%d: the events from L on came from the snapshot", n, to, L)
			}
		}
	}
	t.Logf("%d acknowledged writes (rv %d..%d), L=%d; all three SIGKILLed and restarted, ready after %v; every node replayed %d events from L and %d from %d",
		len(all), startRV, maxRV, L, readyAfter.Round(time.Millisecond), len(afterL), len(all), startRV)
}

// ------------------------------------------------------------ the writes

// writeRec is one logical write: a create (ADDED) or a CAS update
// (MODIFIED) of name, setting holder; rv is 0 when its outcome is unknown.
type writeRec struct {
	typ, name, holder string
	rv                uint64
}

// writeTracker wraps a workload and remembers every logical write: the
// acknowledged ones by resourceVersion, and those whose outcome is unknown
// (the call failed for good). Each Lease has a single writer, and after an
// unknown outcome it is not written again, so a Lease has at most one
// unknown write and it is its last.
type writeTracker struct {
	w       *workload
	mu      sync.Mutex
	acked   map[uint64]writeRec
	unknown []writeRec
	errs    []string
}

// casWriters starts writers goroutines in wg, each owning its share of
// n Leases of wt's workload: each creates its own, then CAS-updates one of
// them at random, until stopping is set.
func casWriters(ctx context.Context, wt *writeTracker, n, writers int, seed uint64, stopping *atomic.Bool, wg *sync.WaitGroup) {
	w := wt.w
	for k := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(k), seed))
			for i := k; i < n && !stopping.Load(); i += writers {
				wt.create(ctx, leaseName(i))
			}
			for !stopping.Load() {
				name := leaseName(k + writers*rng.IntN(n/writers))
				if w.isMaybe(name) || w.last(name) == nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				wt.update(ctx, name)
				time.Sleep(3 * time.Millisecond)
			}
		}()
	}
}

func newWriteTracker(w *workload) *writeTracker {
	return &writeTracker{w: w, acked: map[uint64]writeRec{}}
}

func holderOf(l *coordv1.Lease) string { return ptrStr(l.Spec.HolderIdentity) }

// nextHolder is the holder workload.update writes after prev.
func nextHolder(name string, prev *coordv1.Lease) string {
	gen := 0
	if h := prev.Spec.HolderIdentity; h != nil && strings.HasPrefix(*h, name) {
		fmt.Sscanf((*h)[len(name):], "-gen-%d", &gen)
	}
	return fmt.Sprintf("%s-gen-%d", name, gen+1)
}

func (wt *writeTracker) create(ctx context.Context, name string) {
	wt.record(watchAdded, name, name+"-gen-0", wt.w.create(ctx, name))
}

func (wt *writeTracker) update(ctx context.Context, name string) {
	prev := wt.w.last(name)
	if prev == nil {
		return
	}
	wt.record(watchModified, name, nextHolder(name, prev), wt.w.update(ctx, name))
}

func (wt *writeTracker) record(typ, name, holder string, err error) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if err != nil {
		wt.unknown = append(wt.unknown, writeRec{typ: typ, name: name, holder: holder})
		wt.errs = append(wt.errs, err.Error())
		return
	}
	l := wt.w.last(name)
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	r := writeRec{typ: typ, name: name, holder: holderOf(l), rv: rv}
	if r.holder != holder {
		wt.errs = append(wt.errs, fmt.Sprintf("%s acknowledged with holder %s, wrote %s", name, r.holder, holder))
	}
	if prev, dup := wt.acked[rv]; dup {
		wt.errs = append(wt.errs, fmt.Sprintf("resourceVersion %d acknowledged for two writes: %+v and %+v", rv, prev, r))
	}
	wt.acked[rv] = r
}

// batch runs op on leases [from, to) with workers goroutines.
func (wt *writeTracker) batch(ctx context.Context, workers, from, to int, op func(context.Context, string)) {
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + k; i < to; i += workers {
				op(ctx, leaseName(i))
			}
		}()
	}
	wg.Wait()
}

func (wt *writeTracker) maxAcked() uint64 {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	var m uint64
	for rv := range wt.acked {
		m = max(m, rv)
	}
	return m
}

func (wt *writeTracker) snapshotAcked() map[uint64]writeRec {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	out := make(map[uint64]writeRec, len(wt.acked))
	for k, v := range wt.acked {
		out[k] = v
	}
	return out
}

func (wt *writeTracker) snapshotUnknown() []writeRec {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]writeRec(nil), wt.unknown...)
}

// expected is the acknowledged writes after rv as watch events, in order.
func (wt *writeTracker) expected(after uint64) []watchEvent {
	var out []watchEvent
	for rv, r := range wt.snapshotAcked() {
		if rv > after {
			out = append(out, watchEvent{Type: r.typ, Name: r.name, RV: rv, Holder: r.holder})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RV < out[j].RV })
	return out
}

// ------------------------------------------------------------ raw watches

const (
	watchAdded    = "ADDED"
	watchModified = "MODIFIED"
	watchDeleted  = "DELETED"
	watchBookmark = "BOOKMARK"
	watchError    = "ERROR"
)

// watchEvent is one event as a watch delivered it.
type watchEvent struct {
	Type   string
	Name   string
	RV     uint64
	Holder string
	// Status is set for ERROR events.
	Status string

	node string
	conn int
	at   time.Time
}

func (e watchEvent) String() string {
	if e.Type == watchError {
		return "ERROR " + e.Status
	}
	return fmt.Sprintf("%s %s@%d (%s)", e.Type, e.Name, e.RV, e.Holder)
}

// watchHTTP has no overall timeout: watches are bounded by their context
// and by timeoutSeconds.
var watchHTTP = &http.Client{Transport: &http.Transport{
	DisableKeepAlives:     true,
	ResponseHeaderTimeout: 10 * time.Second,
}}

// openWatch starts a JSON watch of the namespace's Leases from rv, with
// bookmarks, ended by the server after timeoutSec. A non-200 answer is an
// error carrying its status and body.
func openWatch(ctx context.Context, apiAddr, ns string, from uint64, timeoutSec int) (*http.Response, error) {
	q := url.Values{}
	q.Set("watch", "true")
	q.Set("resourceVersion", strconv.FormatUint(from, 10))
	q.Set("allowWatchBookmarks", "true")
	q.Set("timeoutSeconds", strconv.Itoa(timeoutSec))
	u := fmt.Sprintf("http://%s/apis/coordination.k8s.io/v1/namespaces/%s/leases?%s", apiAddr, ns, q.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := watchHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &watchRefused{code: resp.StatusCode, body: strings.TrimSpace(string(body))}
	}
	return resp, nil
}

type watchRefused struct {
	code int
	body string
}

func (e *watchRefused) Error() string { return fmt.Sprintf("HTTP %d: %s", e.code, e.body) }

// readWatch decodes the stream, calling fn for each event until fn returns
// false (then it returns nil). It returns io.EOF when the server ended the
// stream cleanly, another error when it broke.
func readWatch(body io.Reader, fn func(watchEvent) bool) error {
	dec := json.NewDecoder(body)
	for {
		var raw struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		var obj struct {
			Metadata struct {
				Name            string `json:"name"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Spec struct {
				HolderIdentity *string `json:"holderIdentity"`
			} `json:"spec"`
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(raw.Object, &obj); err != nil {
			return fmt.Errorf("decode %s event object %s: %v", raw.Type, raw.Object, err)
		}
		e := watchEvent{Type: raw.Type, Name: obj.Metadata.Name, Holder: ptrStr(obj.Spec.HolderIdentity), at: time.Now()}
		if raw.Type == watchError {
			e.Status = fmt.Sprintf("%d %s: %s", obj.Code, obj.Reason, obj.Message)
		} else {
			rv, err := strconv.ParseUint(obj.Metadata.ResourceVersion, 10, 64)
			if err != nil {
				return fmt.Errorf("%s event with resourceVersion %q: %v", raw.Type, obj.Metadata.ResourceVersion, err)
			}
			e.RV = rv
		}
		if !fn(e) {
			return nil
		}
	}
}

// collectWatch watches from rv on one node until a bookmark at or past
// until has arrived (the server promises everything up to it was sent), and
// returns every event, bookmarks included.
func collectWatch(ctx context.Context, apiAddr, ns string, from, until uint64, timeoutSec int) ([]watchEvent, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutSec+10)*time.Second)
	defer cancel()
	resp, err := openWatch(cctx, apiAddr, ns, from, timeoutSec)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []watchEvent
	done := false
	err = readWatch(resp.Body, func(e watchEvent) bool {
		out = append(out, e)
		if e.Type == watchError {
			return false
		}
		done = e.Type == watchBookmark && e.RV >= until
		return !done
	})
	if done {
		return out, nil
	}
	if len(out) > 0 && out[len(out)-1].Type == watchError {
		return out, fmt.Errorf("watch ended with %s after %d events", out[len(out)-1], len(out)-1)
	}
	return out, fmt.Errorf("stream ended (%v) after %d events, before a bookmark at %d", err, len(out), until)
}

// replayAll watches from rv on every node at once until each has sent a
// bookmark at or past until; it fails the test on any error.
func replayAll(ctx context.Context, t *testing.T, pc *procCluster, ns string, from, until uint64) map[string][]watchEvent {
	t.Helper()
	var mu sync.Mutex
	out := map[string][]watchEvent{}
	var wg sync.WaitGroup
	for _, n := range pc.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			evs, err := collectWatch(ctx, n.apiAddr, ns, from, until, 2)
			if err != nil {
				t.Errorf("%s: watch from %d: %v", n.name, from, err)
			}
			mu.Lock()
			out[n.name] = deliveredOnly(evs)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// deliveredOnly drops bookmarks.
func deliveredOnly(evs []watchEvent) []watchEvent {
	var out []watchEvent
	for _, e := range evs {
		if e.Type != watchBookmark {
			out = append(out, e)
		}
	}
	return out
}

// diffEvents compares two event sequences by type, name, RV and holder; it
// describes the first difference, or returns "".
func diffEvents(want, got []watchEvent) string {
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("%d events, want %d: missing from #%d on: %v", len(got), len(want), i, head(want[i:]))
		case i >= len(want):
			return fmt.Sprintf("%d events, want %d: extra from #%d on: %v", len(got), len(want), i, head(got[i:]))
		case want[i].Type != got[i].Type || want[i].Name != got[i].Name || want[i].RV != got[i].RV || want[i].Holder != got[i].Holder:
			return fmt.Sprintf("event #%d is %v, want %v (of %d, want %d)", i, got[i], want[i], len(got), len(want))
		}
	}
	return ""
}

func head(evs []watchEvent) []watchEvent { return evs[:min(len(evs), 5)] }

func firstRV(evs []watchEvent) uint64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[0].RV
}

func lastRVOf(evs []watchEvent) uint64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].RV
}

// ------------------------------------------------------------ the resuming watcher

// watchConn is one connection of the resuming watcher.
type watchConn struct {
	node   string
	from   uint64
	opened time.Time
	ok     time.Time // 200 received; zero if refused or unreachable
	ended  time.Time
	err    error // why it ended: io.EOF when the server ended it cleanly
	events int
	// bookmarks received on it.
	bookmarks int
}

// resumingWatcher watches a namespace's Leases like a client-go reflector
// with a memory: on every end of a stream it resumes from the last
// resourceVersion it received (event or bookmark). After a clean end
// (timeoutSeconds) it stays on the same node, or moves to the preferred one;
// after a broken stream or a refused connection it moves to another running
// node.
type resumingWatcher struct {
	pc         *procCluster
	ns         string
	timeoutSec int

	mu     sync.Mutex
	events []watchEvent
	conns  []watchConn
	last   uint64
	prefer string
}

func newResumingWatcher(pc *procCluster, ns string, timeoutSec int) *resumingWatcher {
	return &resumingWatcher{pc: pc, ns: ns, timeoutSec: timeoutSec}
}

func (rw *resumingWatcher) run(ctx context.Context, from uint64, node string) {
	rw.mu.Lock()
	rw.last = from
	rw.mu.Unlock()
	for ctx.Err() == nil {
		rw.mu.Lock()
		from := rw.last
		i := len(rw.conns)
		rw.conns = append(rw.conns, watchConn{node: node, from: from, opened: time.Now()})
		rw.mu.Unlock()

		resp, err := openWatch(ctx, rw.pc.node(node).apiAddr, rw.ns, from, rw.timeoutSec)
		if err == nil {
			rw.mu.Lock()
			rw.conns[i].ok = time.Now()
			rw.mu.Unlock()
			err = readWatch(resp.Body, func(e watchEvent) bool {
				e.node, e.conn = node, i
				rw.mu.Lock()
				defer rw.mu.Unlock()
				rw.events = append(rw.events, e)
				if e.Type == watchError {
					return false
				}
				rw.conns[i].events++
				if e.Type == watchBookmark {
					rw.conns[i].bookmarks++
				}
				rw.last = max(rw.last, e.RV)
				return true
			})
			resp.Body.Close()
			if err == nil {
				err = errors.New("ended by an ERROR event")
			}
		}
		rw.mu.Lock()
		rw.conns[i].ended, rw.conns[i].err = time.Now(), err
		prefer := rw.prefer
		rw.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, io.EOF) {
			if prefer != "" && rw.pc.node(prefer).Running() {
				node = prefer
			}
			continue
		}
		// Broken or refused: another running node.
		node = rw.another(node, prefer)
		if resp == nil { // refused or unreachable: do not spin
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// another is prefer if it is running and not failed, else the next running
// node after failed.
func (rw *resumingWatcher) another(failed, prefer string) string {
	if prefer != "" && prefer != failed && rw.pc.node(prefer).Running() {
		return prefer
	}
	for i, n := range clusterNames {
		if n != failed {
			continue
		}
		for j := 1; j < len(clusterNames); j++ {
			c := clusterNames[(i+j)%len(clusterNames)]
			if rw.pc.node(c).Running() {
				return c
			}
		}
	}
	return failed
}

func (rw *resumingWatcher) setPrefer(node string) {
	rw.mu.Lock()
	rw.prefer = node
	rw.mu.Unlock()
}

// current is the connection in progress.
func (rw *resumingWatcher) current() (watchConn, bool) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.conns) == 0 {
		return watchConn{}, false
	}
	c := rw.conns[len(rw.conns)-1]
	return c, c.ended.IsZero()
}

// settleOn makes sure the watcher is streaming from the node want() names,
// moving it there (at its next clean end) if need be, and returns that node.
func (rw *resumingWatcher) settleOn(t *testing.T, want func() string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		target := want()
		c, ok := rw.current()
		if ok && c.node == target && !c.ok.IsZero() && time.Since(c.ok) > 200*time.Millisecond {
			return target
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not settle on %s (current %+v)", target, c)
		}
		rw.setPrefer(target)
		time.Sleep(50 * time.Millisecond)
	}
}

func (rw *resumingWatcher) lastRV() uint64 {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.last
}

func (rw *resumingWatcher) eventCount() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return len(rw.events)
}

func (rw *resumingWatcher) bookmarkCount() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, c := range rw.conns {
		n += c.bookmarks
	}
	return n
}

// cleanEndsAfter counts the connections opened after t0 that the server
// ended cleanly (timeoutSeconds).
func (rw *resumingWatcher) cleanEndsAfter(t0 time.Time) int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, c := range rw.conns {
		if c.opened.After(t0) && !c.ended.IsZero() && errors.Is(c.err, io.EOF) {
			n++
		}
	}
	return n
}

func (rw *resumingWatcher) eventsAfter(t0 time.Time) int {
	return rw.eventsOnAfter("", t0)
}

// eventsOnAfter counts the non-bookmark events received after t0 from node
// ("" = any).
func (rw *resumingWatcher) eventsOnAfter(node string, t0 time.Time) int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	n := 0
	for _, e := range rw.events {
		if e.Type != watchBookmark && e.at.After(t0) && (node == "" || e.node == node) {
			n++
		}
	}
	return n
}

func (rw *resumingWatcher) firstEventAfter(t0 time.Time) time.Duration {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for _, e := range rw.events {
		if e.Type != watchBookmark && e.at.After(t0) {
			return e.at.Sub(t0)
		}
	}
	return -1
}

func (rw *resumingWatcher) snapshot() ([]watchEvent, []watchConn) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return append([]watchEvent(nil), rw.events...), append([]watchConn(nil), rw.conns...)
}

func nextOK(conns []watchConn, i int) *watchConn {
	for j := i + 1; j < len(conns); j++ {
		if !conns[j].ok.IsZero() {
			return &conns[j]
		}
	}
	return nil
}

func describeConns(conns []watchConn) string {
	var parts []string
	for i, c := range conns {
		end := "open"
		if c.err != nil {
			end = c.err.Error()
			if errors.Is(c.err, io.EOF) {
				end = "clean end"
			}
		}
		if c.ok.IsZero() && c.err != nil {
			parts = append(parts, fmt.Sprintf("#%d %s from %d: %s", i, c.node, c.from, end))
			continue
		}
		parts = append(parts, fmt.Sprintf("#%d %s from %d: %d events, %d bookmarks, %v, %s",
			i, c.node, c.from, c.events, c.bookmarks, c.ended.Sub(c.ok).Round(time.Millisecond), end))
	}
	return strings.Join(parts, "; ")
}

// ------------------------------------------------------------ checks

type listedLease struct {
	name, holder string
	rv           uint64
}

// finalList is a linearizable list of the namespace, retried on any node.
func finalList(ctx context.Context, t *testing.T, pc *procCluster, ns string) map[string]listedLease {
	t.Helper()
	var lastErr error
	for attempt := range 20 {
		if attempt > 0 {
			time.Sleep(250 * time.Millisecond)
		}
		n := pc.nodes[attempt%len(pc.nodes)]
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		list, err := n.protoClient.CoordinationV1().Leases(ns).List(lctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		out := map[string]listedLease{}
		for _, l := range list.Items {
			rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
			out[l.Name] = listedLease{name: l.Name, holder: holderOf(&l), rv: rv}
		}
		return out
	}
	t.Fatalf("final list of %s: %v", ns, lastErr)
	return nil
}

// listRV is the resourceVersion of a linearizable list on node.
func listRV(ctx context.Context, t *testing.T, pc *procCluster, node, ns string) uint64 {
	t.Helper()
	list, err := pc.node(node).protoClient.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s on %s: %v", ns, node, err)
	}
	rv, err := strconv.ParseUint(list.ResourceVersion, 10, 64)
	if err != nil || rv == 0 {
		t.Fatalf("list %s on %s: resourceVersion %q", ns, node, list.ResourceVersion)
	}
	return rv
}

// pickRole is leader itself, or the first other node that is running.
func pickRole(pc *procCluster, role, leader string) string {
	if role == "leader" {
		return leader
	}
	for _, n := range clusterNames {
		if n != leader && pc.node(n).Running() {
			return n
		}
	}
	return ""
}

// checkWatchHistory checks the whole run of a resumed watch against the
// writes and the final state (RELIABILITY.md C2).
func checkWatchHistory(t *testing.T, events []watchEvent, startRV uint64, wt *writeTracker, final map[string]listedLease) {
	t.Helper()
	acked := wt.snapshotAcked()
	unknown := map[string]writeRec{} // by name: at most one, its last write
	for _, u := range wt.snapshotUnknown() {
		unknown[u.name] = u
	}
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }

	var lastEvent, lastMark uint64 = 0, startRV
	byRV := map[uint64]watchEvent{}
	lastOf := map[string]watchEvent{}
	for i, e := range events {
		where := fmt.Sprintf("#%d (%s, connection %d)", i, e.node, e.conn)
		switch e.Type {
		case watchError:
			fail("%s: ERROR event %s", where, e.Status)
			continue
		case watchBookmark:
			// Bookmarkable: never behind what was delivered, never back.
			if e.RV < lastEvent || e.RV < lastMark {
				fail("%s: BOOKMARK at %d after events up to %d (last bookmark or resume point %d)", where, e.RV, lastEvent, lastMark)
			}
			lastMark = max(lastMark, e.RV)
			continue
		case watchAdded, watchModified, watchDeleted:
		default:
			fail("%s: unknown event type %q", where, e.Type)
			continue
		}
		// Ordered and Unique, across resumes, and nothing at or below a
		// bookmark or the starting resourceVersion.
		if e.RV <= lastMark {
			fail("%s: %v after resourceVersion %d was delivered or promised", where, e, lastMark)
		}
		if prev, dup := byRV[e.RV]; dup {
			fail("%s: %v duplicates %v", where, e, prev)
		}
		byRV[e.RV] = e
		lastOf[e.Name] = e
		lastEvent, lastMark = max(lastEvent, e.RV), max(lastMark, e.RV)

		// Every event is a committed write: acknowledged, or the one
		// write of unknown outcome of its Lease.
		if w, ok := acked[e.RV]; ok {
			if w.name != e.Name || w.typ != e.Type || w.holder != e.Holder {
				fail("%s: %v, but resourceVersion %d was acknowledged for %s %s (%s)", where, e, e.RV, w.typ, w.name, w.holder)
			}
			continue
		}
		u, ok := unknown[e.Name]
		if !ok || u.typ != e.Type || u.holder != e.Holder {
			fail("%s: %v matches no write that was made (acknowledged or of unknown outcome)", where, e)
			continue
		}
		if f := final[e.Name]; f.rv != e.RV {
			fail("%s: %v is the unknown-outcome write of %s, but the final list has it at %d", where, e, e.Name, f.rv)
		}
	}
	// Reliable: every acknowledged write after startRV was delivered.
	var missing []string
	for rv, w := range acked {
		if rv > startRV {
			if _, ok := byRV[rv]; !ok {
				missing = append(missing, fmt.Sprintf("%s %s@%d", w.typ, w.name, rv))
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		fail("%d acknowledged writes never delivered: %v", len(missing), missing[:min(len(missing), 10)])
	}
	// The final state is the last event of every Lease.
	for name, f := range final {
		if f.rv <= startRV {
			continue
		}
		e, ok := byRV[f.rv]
		switch {
		case !ok:
			fail("final %s@%d (%s) was never delivered", name, f.rv, f.holder)
		case e.Name != name || e.Holder != f.holder:
			fail("final %s@%d (%s) was delivered as %v", name, f.rv, f.holder, e)
		case lastOf[name].RV != f.rv:
			fail("final %s is at %d but the watch delivered %v after it", name, f.rv, lastOf[name])
		}
	}
	for name, e := range lastOf {
		if _, ok := final[name]; !ok {
			fail("%s was delivered (%v) but is not in the final list", name, e)
		}
	}
	wt.mu.Lock()
	for _, err := range wt.errs {
		t.Logf("writer: %s", err)
	}
	wt.mu.Unlock()
	for i, b := range bad {
		if i == 30 {
			t.Errorf("... and %d more", len(bad)-30)
			break
		}
		t.Error(b)
	}
}

// waitSnapshots waits until every node's newest snapshot is at index >=
// atLeast, writing more updates while it is not.
func waitSnapshots(ctx context.Context, t *testing.T, pc *procCluster, wt *writeTracker, atLeast uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for round := 0; ; round++ {
		short := ""
		for _, n := range pc.nodes {
			if idx := newestSnapshot(n.dataDir); idx < atLeast {
				short = fmt.Sprintf("%s newest snapshot at %d", n.name, idx)
				break
			}
		}
		if short == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot at or past %d on every node: %s", atLeast, short)
		}
		if round%10 == 9 {
			wt.batch(ctx, 3, 0, 12, wt.update)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// compactedTo is the highest "to=" of hashicorp/raft's "compacting logs"
// lines in a node's log.
func compactedTo(logPath string) (uint64, bool) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0, false
	}
	var best uint64
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "compacting logs") {
			continue
		}
		i := strings.Index(line, " to=")
		if i < 0 {
			continue
		}
		f := strings.FieldsFunc(line[i+4:], func(r rune) bool { return r < '0' || r > '9' })
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			best, found = max(best, v), true
		}
	}
	return best, found
}

// newestSnapshot reads the Index of the newest snapshot in a node's data
// dir (hashicorp/raft's file snapshot store), 0 if none.
func newestSnapshot(dataDir string) uint64 {
	dirs, _ := filepath.Glob(filepath.Join(dataDir, "snapshots", "*", "meta.json"))
	var best uint64
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var meta struct{ Index uint64 }
		if json.Unmarshal(b, &meta) == nil {
			best = max(best, meta.Index)
		}
	}
	return best
}
