package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Settings: CHAOS_DURATION (Go duration; unset runs the short profile of
// `make test`, shortProfile; `make chaos` sets it) and
// CHAOS_SEED (uint64; default: from the clock, printed at start).
// CHAOS_REPORT_DIR keeps the porcupine visualisations (default: a directory
// under the system temp dir, kept on failure).
func settings(t *testing.T) (time.Duration, uint64) {
	d := os.Getenv("CHAOS_DURATION")
	if d == "" {
		d = shortProfile
	}
	dur, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("CHAOS_DURATION=%q: %v", d, err)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
	}
	return dur, seed
}

// shortProfile is the traffic time of the run inside `make test`.
const shortProfile = "45s"

// Fault kinds the nemesis injects.
const (
	fKillLeader      = "sigkill-leader"
	fKillFollower    = "sigkill-follower"
	fKillAll         = "sigkill-all"
	fPauseLeader     = "sigstop-leader"
	fPauseFollower   = "sigstop-follower"
	fIsolateLeader   = "partition-leader"
	fIsolateFollower = "partition-follower"
	fOneWay          = "one-way-loss"
	fLatency         = "latency"
)

var allFaults = []string{fKillLeader, fKillFollower, fKillAll, fPauseLeader, fPauseFollower, fIsolateLeader, fIsolateFollower, fOneWay, fLatency}

// recoveryBound is how long after a heal the cluster may take to accept a
// write again; exceeding it is an anomaly.
const recoveryBound = 30 * time.Second

func TestChaos(t *testing.T) {
	dur, seed := settings(t)
	t.Logf("chaos: seed %d (CHAOS_SEED=%d to replay the nemesis schedule), duration %v", seed, seed, dur)
	fmt.Printf("chaos: seed %d duration %v\n", seed, dur)
	reportDir := os.Getenv("CHAOS_REPORT_DIR")
	if reportDir == "" {
		reportDir = filepath.Join(os.TempDir(), fmt.Sprintf("leasehold-chaos-%d", seed))
	}
	start := time.Now()
	c := newCluster(t)
	w := &workload{c: c, keys: []string{"k0", "k1", "k2", "k3", "k4", "k5"}, timeout: 5 * time.Second}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	const clients, watchers = 6, 2
	for i := range clients {
		wg.Add(1)
		go func() { defer wg.Done(); w.client(ctx, i, seed) }()
	}
	var ws []*watcher
	for i := range watchers {
		wt := &watcher{w: w, id: i}
		ws = append(ws, wt)
		wg.Add(1)
		go func() { defer wg.Done(); wt.run(ctx, seed) }()
	}
	el := startElections(ctx, c)

	// The nemesis: one fault at a time, at random moments, each healed
	// before the next; recovery measured after each heal.
	rng := rand.New(rand.NewPCG(seed, 7))
	faults := map[string]int{}
	var recoveries []time.Duration
	var spans []faultSpan // the nemesis timeline, for the election checker
	var anomalies []string
	probeSeq := 0
	probeRng := rand.New(rand.NewPCG(seed, 8)) // apart from rng: retries depend on timing
	deadline := start.Add(dur)
	for time.Until(deadline) > 8*time.Second {
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		kind := allFaults[rng.IntN(len(allFaults))]
		hold := time.Duration(2000+rng.IntN(3000)) * time.Millisecond
		applied := time.Now() // inject first finds the leader, at once after a recovery
		if err := inject(c, rng, kind, hold); err != nil {
			t.Logf("nemesis: %s skipped: %v", kind, err)
			continue
		}
		faults[kind]++
		healed := time.Now()
		took, err := probeWrite(ctx, c, probeRng, &probeSeq, recoveryBound)
		spans = append(spans, faultSpan{Kind: kind, Start: applied, Healed: healed, Recovered: healed.Add(took)})
		if err != nil {
			anomalies = append(anomalies, fmt.Sprintf("recovery after %s: %v", kind, err))
		}
		recoveries = append(recoveries, took)
		t.Logf("nemesis: %s held %v, writes accepted %v after heal", kind, hold.Round(time.Millisecond), took.Round(time.Millisecond))
	}
	if d := time.Until(deadline); d > 0 {
		time.Sleep(d)
	}
	stopAt := time.Now()
	cancel()
	wg.Wait()

	// Everything healed: all nodes up and ready.
	c.heal()
	for _, n := range c.nodes {
		if !n.Running() {
			c.start(n)
		}
		if err := c.waitReady(n, 60*time.Second); err != nil {
			anomalies = append(anomalies, err.Error())
		}
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer fcancel()
	anomalies = append(anomalies, el.finish(fctx)...)
	ea, electionLine := el.check(spans, stopAt)
	anomalies = append(anomalies, ea...)
	if err := w.finalReads(fctx); err != nil {
		anomalies = append(anomalies, err.Error())
	}
	anomalies = append(anomalies, checkConverged(fctx, w)...)

	lin := checkLinearizable(w.ops, w.keys, reportDir, 2*time.Minute)
	anomalies = append(anomalies, lin...)
	wa, sessions, events := checkWatches(ws, w.ops)
	anomalies = append(anomalies, wa...)
	if len(anomalies) > 0 {
		if err := dumpHistory(reportDir, w.ops); err == nil {
			t.Logf("history written to %s", filepath.Join(reportDir, "history.txt"))
		}
		if err := el.dump(reportDir); err == nil {
			t.Logf("election terms and lease history written to %s", filepath.Join(reportDir, "elections.txt"))
		}
	}

	// Summary.
	var b strings.Builder
	fmt.Fprintf(&b, "\n===== chaos summary =====\nseed %d, duration %v (traffic %v)\n", seed, time.Since(start).Round(time.Second), dur)
	counts := map[string]int{}
	for _, o := range w.ops {
		counts[o.Kind+"/"+o.Outcome]++
	}
	fmt.Fprintf(&b, "operations: %d\n", len(w.ops))
	for _, k := range sortedKeys(counts) {
		fmt.Fprintf(&b, "  %-20s %d\n", k, counts[k])
	}
	fmt.Fprintf(&b, "watch: %d sessions, %d events, relists %d\n", sessions, events, relists(ws))
	fmt.Fprintln(&b, electionLine)
	total := 0
	for _, n := range faults {
		total += n
	}
	fmt.Fprintf(&b, "faults injected: %d\n", total)
	for _, k := range sortedKeys(faults) {
		fmt.Fprintf(&b, "  %-20s %d\n", k, faults[k])
	}
	if len(recoveries) > 0 {
		sort.Slice(recoveries, func(i, j int) bool { return recoveries[i] < recoveries[j] })
		fmt.Fprintf(&b, "recovery (heal -> first accepted write): p50 %v, max %v over %d heals\n",
			recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond), len(recoveries))
	}
	fmt.Fprintf(&b, "anomalies: %d\n", len(anomalies))
	for _, a := range anomalies {
		fmt.Fprintf(&b, "  ANOMALY: %s\n", a)
	}
	t.Log(b.String())
	fmt.Println(b.String())
	if len(anomalies) > 0 {
		t.Fatalf("%d anomalies (seed %d); report dir %s", len(anomalies), seed, reportDir)
	}
}

func relists(ws []*watcher) int {
	n := 0
	for _, w := range ws {
		n += w.relists
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// inject applies one fault, holds it, and heals it.
func inject(c *cluster, rng *rand.Rand, kind string, hold time.Duration) error {
	leader := c.waitLeader(10 * time.Second)
	if leader == nil {
		return fmt.Errorf("no leader")
	}
	follower := c.nodes[(leader.idx+1+rng.IntN(2))%3]
	switch kind {
	case fKillLeader, fKillFollower:
		n := leader
		if kind == fKillFollower {
			n = follower
		}
		c.kill(n)
		time.Sleep(hold)
		c.start(n)
	case fKillAll:
		for _, n := range c.nodes {
			c.kill(n)
		}
		time.Sleep(hold / 2)
		for _, n := range c.nodes {
			c.start(n)
		}
	case fPauseLeader, fPauseFollower:
		n := leader
		if kind == fPauseFollower {
			n = follower
		}
		c.pause(n)
		time.Sleep(max(hold, 3500*time.Millisecond)) // > 3x the 1 s election timeout
		c.resume(n)
	case fIsolateLeader:
		c.isolate(leader.idx)
		time.Sleep(hold)
		c.heal()
	case fIsolateFollower:
		c.isolate(follower.idx)
		time.Sleep(hold)
		c.heal()
	case fOneWay:
		a, b := leader.idx, follower.idx
		if rng.IntN(2) == 0 {
			a, b = b, a
		}
		c.blackhole(a, b)
		time.Sleep(hold)
		c.heal()
	case fLatency:
		c.slow(75, 50)
		time.Sleep(hold)
		c.heal()
	}
	return nil
}

// checkConverged waits until every node has applied the same index, then
// compares each node's local state with the others (no divergence).
func checkConverged(ctx context.Context, w *workload) []string {
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for {
		var idx []uint64
		for _, n := range w.c.nodes {
			st, err := getStatus(n)
			if err != nil {
				idx = nil
				last = err.Error()
				break
			}
			idx = append(idx, st.AppliedIndex)
		}
		if len(idx) == 3 && idx[0] == idx[1] && idx[1] == idx[2] {
			break
		}
		if len(idx) == 3 {
			last = fmt.Sprint("applied indexes ", idx)
		}
		if time.Now().After(deadline) {
			return []string{"nodes did not converge within 20s: " + last}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var states []map[string]lease
	for _, n := range w.c.nodes {
		m, err := w.localState(ctx, n)
		if err != nil {
			return []string{err.Error()}
		}
		states = append(states, m)
	}
	var out []string
	for i := 1; i < 3; i++ {
		if fmt.Sprint(states[i]) != fmt.Sprint(states[0]) {
			out = append(out, fmt.Sprintf("divergence: %s has %v, %s has %v", w.c.nodes[0].name, states[0], w.c.nodes[i].name, states[i]))
		}
	}
	return out
}

func dumpHistory(dir string, ops []*op) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for _, o := range ops {
		fmt.Fprintf(&b, "%+v\n", *o)
	}
	return os.WriteFile(filepath.Join(dir, "history.txt"), []byte(b.String()), 0o644)
}
