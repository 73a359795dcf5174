package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	coordv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The coordinated election at process level: three LeaseCandidates
// (1.30/1.31/1.31) written through the HTTP API, the 1.30 one elected; the
// Raft leader is SIGKILLed, then the elected candidate stops renewing, and
// the controller on the new Raft leader hands the Lease to the next best.
func TestCoordinatedElectionSurvivesLeaderKill(t *testing.T) {
	pc := newProcCluster(t, "--election-ping-window=1s", "--election-resync=500ms", "--election-lease-duration=2s")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const ns, lease = "kube-system", "coordinated"

	raftLeader := pc.leader(10 * time.Second)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	sims := map[string]*procSim{}
	for i, v := range []struct{ name, version string }{{"a", "1.30.0"}, {"b", "1.31.0"}, {"c", "1.31.0"}} {
		s := &procSim{pc: pc, ns: ns, name: v.name, lease: lease, next: i, done: make(chan struct{})}
		s.create(ctx, t, v.version)
		sims[v.name] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(s.done)
			s.run(ctx)
		}()
	}
	start := time.Now()
	waitHolder(ctx, t, pc, ns, lease, "a", 20*time.Second)
	t.Logf("a (1.30) elected %v after the candidates were created", time.Since(start).Round(time.Millisecond))
	waitElectionStatus(ctx, t, pc, raftLeader, ns, lease, "a")

	// Kill the Raft leader, which runs the controller.
	killedAt := time.Now()
	pc.kill(raftLeader)
	newLeader := pc.leader(15*time.Second, raftLeader)
	t.Logf("raft leader %s SIGKILLed; %s leads after %v", raftLeader, newLeader, time.Since(killedAt).Round(time.Millisecond))
	// The new leader's controller resumes from the replicated state.
	waitElectionStatus(ctx, t, pc, newLeader, ns, lease, "a")

	// The elected candidate stops renewing: the next best takes over, but
	// not before a's last renewal has expired. Both times are the nodes'
	// clocks (one machine), written into the Lease.
	sims["a"].stop(t)
	last := getLease(ctx, t, pc, ns, lease)
	if h := last.Spec.HolderIdentity; h == nil || *h != "a" || last.Spec.RenewTime == nil {
		t.Fatalf("lease right after a stopped: %+v, want held by a", last.Spec)
	}
	waitHolder(ctx, t, pc, ns, lease, "b", 30*time.Second)
	l := getLease(ctx, t, pc, ns, lease)
	if l.Spec.AcquireTime == nil {
		t.Fatalf("lease after handover has no acquireTime: %+v", l.Spec)
	}
	took := l.Spec.AcquireTime.Sub(last.Spec.RenewTime.Time)
	t.Logf("b acquired the Lease %v after a's last renewal (lease duration 2s + ping window 1s)", took.Round(time.Millisecond))
	if took < 2*time.Second {
		t.Errorf("handover %v after a's last renewal: before a's Lease expired", took)
	}
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 2 {
		t.Errorf("lease after handover: %+v, want leaseTransitions 1 and leaseDurationSeconds 2", l.Spec)
	}
	waitElectionStatus(ctx, t, pc, newLeader, ns, lease, "b")
	// b was pinged (its renewal was older than the ping window) and answered.
	if n := sims["b"].pingsAnswered.Load(); n == 0 {
		t.Errorf("b never answered a ping")
	}
}

// procSim is a LeaseCandidate simulated over the HTTP API, like client-go's
// LeaseCandidate helper plus a coordinated leader elector: it answers pings
// and renews the Lease while it holds it and is not asked to step down.
type procSim struct {
	pc              *procCluster
	ns, name, lease string
	stopped         atomic.Bool
	next            int // round-robin over the running nodes
	pingsAnswered   atomic.Int64
	done            chan struct{} // closed when run returns
}

// stop ends the simulation and waits for a renewal in flight to finish.
func (s *procSim) stop(t *testing.T) {
	s.stopped.Store(true)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("candidate %s still running 10s after stop", s.name)
	}
}

// client picks the next running node.
func (s *procSim) client() kubernetes.Interface {
	for range s.pc.nodes {
		n := s.pc.nodes[s.next%len(s.pc.nodes)]
		s.next++
		if n.Running() {
			return n.jsonClient
		}
	}
	return s.pc.nodes[0].jsonClient
}

func (s *procSim) create(ctx context.Context, t *testing.T, version string) {
	t.Helper()
	now := metav1.NowMicro()
	cand := &coordv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns},
		Spec: coordv1beta1.LeaseCandidateSpec{LeaseName: s.lease, BinaryVersion: version, EmulationVersion: version,
			Strategy: coordv1.OldestEmulationVersion, RenewTime: &now},
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := s.client().CoordinationV1beta1().LeaseCandidates(s.ns).Create(ctx, cand, metav1.CreateOptions{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create candidate %s: %v", s.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *procSim) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.stopped.Load() {
			return
		}
		_ = s.tick(ctx) // errors (a node going away) are retried next tick
	}
}

func (s *procSim) tick(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cs := s.client()
	cands := cs.CoordinationV1beta1().LeaseCandidates(s.ns)
	cand, err := cands.Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p, r := cand.Spec.PingTime, cand.Spec.RenewTime; p != nil && (r == nil || !r.After(p.Time)) {
		now := metav1.NowMicro()
		cand.Spec.RenewTime = &now
		if _, err := cands.Update(ctx, cand, metav1.UpdateOptions{}); err != nil {
			return err
		}
		s.pingsAnswered.Add(1)
	}
	leases := cs.CoordinationV1().Leases(s.ns)
	l, err := leases.Get(ctx, s.lease, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != s.name || (l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "") ||
		l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil ||
		l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second).Before(time.Now()) {
		return nil
	}
	now := metav1.NowMicro()
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

func getLease(ctx context.Context, t *testing.T, pc *procCluster, ns, name string) *coordv1.Lease {
	t.Helper()
	var lastErr error
	for i := 0; i < 50; i++ {
		for _, n := range pc.nodes {
			if !n.Running() {
				continue
			}
			l, err := n.jsonClient.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				return l
			}
			lastErr = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("get lease %s/%s: %v", ns, name, lastErr)
	return nil
}

func waitHolder(ctx context.Context, t *testing.T, pc *procCluster, ns, name, holder string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := "no lease yet"
	for time.Now().Before(deadline) {
		for _, n := range pc.nodes {
			if !n.Running() {
				continue
			}
			l, err := n.jsonClient.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				continue
			}
			if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == holder {
				return
			}
			last = fmt.Sprintf("%+v", l.Spec)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("lease %s/%s not held by %q within %v; last: %s", ns, name, holder, timeout, last)
}

// electionStatus is one entry of GET /cluster/elections.
type electionStatus struct {
	Namespace  string   `json:"namespace"`
	LeaseName  string   `json:"leaseName"`
	State      string   `json:"state"`
	Strategy   string   `json:"strategy"`
	Holder     string   `json:"holder"`
	Candidates []string `json:"candidates"`
	Eligible   []string `json:"eligible"`
	Error      string   `json:"error"`
}

func getElections(apiAddr string) ([]electionStatus, error) {
	resp, err := httpc.Get("http://" + apiAddr + "/cluster/elections")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /cluster/elections: %s: %s", resp.Status, body)
	}
	var out []electionStatus
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET /cluster/elections: %v: %s", err, body)
	}
	return out, nil
}

// waitElectionStatus waits until the Raft leader node reports the Lease
// elected for holder at /cluster/elections.
func waitElectionStatus(ctx context.Context, t *testing.T, pc *procCluster, node, ns, name, holder string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last any = "nothing yet"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st, err := getElections(pc.node(node).apiAddr)
		if err != nil {
			last = err
		} else {
			last = st
			for _, s := range st {
				if s.Namespace == ns && s.LeaseName == name && s.State == "elected" && s.Holder == holder &&
					s.Strategy == string(coordv1.OldestEmulationVersion) && len(s.Candidates) == 3 {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s's /cluster/elections does not show %s/%s elected for %q: %+v", node, ns, name, holder, last)
}
