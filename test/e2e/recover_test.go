package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/test/harness"
)

// Recovery from the loss of a majority (docs/operations.md, "Quorum
// loss"): two of three nodes SIGKILLed for good, the survivor stopped,
// given a peers.json naming it alone, and started again.

const recoverNS = "recover"

// recovered is a survivor brought back as a one-node cluster.
type recovered struct {
	pc       *procCluster
	survivor *procNode
	// acked holds every acknowledged Lease and its resourceVersion.
	acked map[string]uint64
	// lastBefore is the survivor's applied index before the kill.
	lastBefore uint64
}

// recoverSurvivor runs the procedure up to the survivor serving alone: it
// writes Leases, waits until the survivor (a follower) has applied every
// acknowledged one (a write is acknowledged once on a majority, not
// necessarily on this node), SIGKILLs the other two, checks that the
// survivor refuses writes, stops it, writes peers.json and starts it.
func recoverSurvivor(t *testing.T) *recovered {
	pc := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := &recovered{pc: pc, acked: map[string]uint64{}}

	for i := range 30 {
		n := pc.nodes[i%len(pc.nodes)]
		client := n.protoClient
		if i%2 == 1 {
			client = n.jsonClient
		}
		name := fmt.Sprintf("lease-%02d", i)
		l, err := client.CoordinationV1().Leases(recoverNS).Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       coordv1.LeaseSpec{HolderIdentity: ptr("h")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s via %s: %v", name, n.name, err)
		}
		r.acked[name] = mustRV(t, l.ResourceVersion)
	}
	var maxRV uint64
	for _, rv := range r.acked {
		maxRV = max(maxRV, rv)
	}

	leader := pc.leader(10 * time.Second)
	for _, n := range pc.nodes {
		if n.name != leader {
			r.survivor = n
			break
		}
	}
	pc.waitApplied(r.survivor.name, maxRV, 10*time.Second)
	for _, n := range pc.nodes {
		if n != r.survivor {
			pc.kill(n.name)
		}
	}
	st, err := pc.status(r.survivor.name)
	if err != nil {
		t.Fatal(err)
	}
	r.lastBefore = st.AppliedIndex

	// Alone, the survivor has no quorum: no leader, and a write is refused
	// with kube-apiserver's 503, nothing written.
	waitUntil(t, 10*time.Second, r.survivor.name+" to know no leader", func() bool {
		st, err := pc.status(r.survivor.name)
		return err == nil && st.Leader == nil
	})
	start := time.Now()
	code, body := postLease(t, r.survivor.apiAddr, "no-quorum")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "no leader") {
		t.Fatalf("write without a quorum: %d %s, want 503 saying there is no leader", code, body)
	}
	t.Logf("write without a quorum: %d after %v: %s", code, time.Since(start).Round(time.Millisecond), body)

	pc.stop(r.survivor.name)
	peers := fmt.Sprintf(`[{"id": %q, "address": %q, "non_voter": false}]`+"\n", r.survivor.name, r.survivor.peerAddr)
	if err := os.WriteFile(filepath.Join(r.survivor.dataDir, "peers.json"), []byte(peers), 0o644); err != nil {
		t.Fatal(err)
	}
	// Same flags as before: --initial-cluster still names all three and
	// is ignored, since the data directory has state.
	pc.restart(r.survivor.name)
	ready := pc.waitReady(r.survivor.name, 30*time.Second)
	t.Logf("%s recovered: ready %v after its start", r.survivor.name, ready.Round(time.Millisecond))
	return r
}

// postLease creates a Lease with a plain request (client-go would retry a
// 503 that carries Retry-After) and returns the status code and body.
func postLease(t *testing.T, apiAddr, name string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q}}`, name)
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post("http://"+apiAddr+"/apis/coordination.k8s.io/v1/namespaces/"+recoverNS+"/leases", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST lease %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func mustRV(t *testing.T, s string) uint64 {
	t.Helper()
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", s, err)
	}
	return rv
}

func ptr[T any](v T) *T { return &v }

// checkLeases checks that node n serves every acknowledged Lease at its
// resourceVersion.
func checkLeases(ctx context.Context, t *testing.T, n *procNode, acked map[string]uint64) {
	t.Helper()
	list, err := n.jsonClient.CoordinationV1().Leases(recoverNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list on %s: %v", n.name, err)
	}
	got := map[string]uint64{}
	for _, l := range list.Items {
		got[l.Name] = mustRV(t, l.ResourceVersion)
	}
	for name, rv := range acked {
		if got[name] != rv {
			t.Errorf("%s: Lease %s at resourceVersion %d, want %d", n.name, name, got[name], rv)
		}
	}
	if len(got) != len(acked) {
		t.Errorf("%s: %d Leases, want %d", n.name, len(got), len(acked))
	}
}

// createLease creates a Lease through n and returns its resourceVersion.
func createLease(ctx context.Context, t *testing.T, n *procNode, name string) uint64 {
	t.Helper()
	l, err := n.protoClient.CoordinationV1().Leases(recoverNS).Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s via %s: %v", name, n.name, err)
	}
	return mustRV(t, l.ResourceVersion)
}

// TestRecover_SurvivorAlone: after the recovery the survivor leads a
// cluster of itself alone, serves every acknowledged Lease at its
// resourceVersion, resumes a watch from before the loss, and takes writes
// whose resourceVersions continue after its log; peers.json is gone,
// peers.info says what happened, and the log says it at warn level.
func TestRecover_SurvivorAlone(t *testing.T) {
	r := recoverSurvivor(t)
	pc, s := r.pc, r.survivor
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	st, err := pc.status(s.name)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "leader" || len(st.Members) != 1 || st.Members[0].Name != s.name || st.Members[0].PeerAddr != s.peerAddr || st.Members[0].Suffrage != "voter" {
		t.Fatalf("status after the recovery: %+v, want %s leading alone", st, s.name)
	}
	checkLeases(ctx, t, s, r.acked)

	// A watch from before the first write replays every one of them.
	first := r.acked["lease-00"]
	wctx, stop := context.WithTimeout(ctx, 15*time.Second)
	defer stop()
	w, err := s.jsonClient.CoordinationV1().Leases(recoverNS).Watch(wctx, metav1.ListOptions{ResourceVersion: strconv.FormatUint(first-1, 10)})
	if err != nil {
		t.Fatalf("watch from %d: %v", first-1, err)
	}
	seen := map[string]uint64{}
	for len(seen) < len(r.acked) {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch from %d ended after %d of %d events", first-1, len(seen), len(r.acked))
		}
		l, isLease := ev.Object.(*coordv1.Lease)
		if ev.Type != watch.Added || !isLease {
			t.Fatalf("watch from %d: %s %T, want ADDED Leases", first-1, ev.Type, ev.Object)
		}
		seen[l.Name] = mustRV(t, l.ResourceVersion)
	}
	w.Stop()
	for name, rv := range r.acked {
		if seen[name] != rv {
			t.Errorf("watch: %s at %d, want %d", name, seen[name], rv)
		}
	}

	rv := createLease(ctx, t, s, "after-recovery")
	if rv <= r.lastBefore {
		t.Errorf("new write at resourceVersion %d, want one after the survivor's log (applied %d before the loss)", rv, r.lastBefore)
	}

	if _, err := os.Stat(filepath.Join(s.dataDir, "peers.json")); !os.IsNotExist(err) {
		t.Errorf("peers.json still there (%v)", err)
	}
	info, err := os.ReadFile(filepath.Join(s.dataDir, "peers.info"))
	if err != nil || !strings.Contains(string(info), s.name+" recovered from peers.json at") {
		t.Errorf("peers.info: %q (%v)", info, err)
	}
	if countLines(s.logPath, "[WARN]  leasehold: recovered from peers.json") != 1 {
		t.Errorf("the log does not say once, at warn level, that the node recovered:\n%s", harness.Tail(s.logPath, 30))
	}
}

// TestRecover_GrowsBackWithJoin: the recovered survivor is grown back to
// three by two fresh nodes started with --join; all three serve every
// acknowledged Lease, and the cluster keeps its quorum when the survivor
// itself is then SIGKILLed.
func TestRecover_GrowsBackWithJoin(t *testing.T) {
	r := recoverSurvivor(t)
	pc, s := r.pc, r.survivor
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var fresh []*procNode
	for _, name := range []string{"n4", "n5"} {
		ports := harness.FreePorts(t, 2)
		n := &procNode{
			name:     name,
			apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
			peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
			dataDir:  filepath.Join(pc.dir, name, "data"),
			logPath:  filepath.Join(pc.dir, name+".log"),
		}
		n.args = []string{
			"--name", n.name, "--data-dir", n.dataDir,
			"--api-addr", n.apiAddr, "--peer-addr", n.peerAddr,
			"--join", "http://" + s.apiAddr, "--raft-heartbeat-timeout", "500ms",
		}
		var err error
		if n.jsonClient, err = kubernetes.NewForConfig(clientConfig(n.apiAddr, false)); err != nil {
			t.Fatal(err)
		}
		if n.protoClient, err = kubernetes.NewForConfig(clientConfig(n.apiAddr, true)); err != nil {
			t.Fatal(err)
		}
		pc.nodes = append(pc.nodes, n)
		pc.start(n)
		took := pc.waitReady(name, 30*time.Second)
		t.Logf("%s joined: ready %v after its start", name, took.Round(time.Millisecond))
		fresh = append(fresh, n)
	}

	// A joined node may start as a non-voter and be promoted once caught
	// up; either way all three end up voters.
	var last harness.Status
	waitUntil(t, 30*time.Second, fmt.Sprintf("%s, n4 and n5 to be voters", s.name), func() bool {
		st, err := pc.status(s.name)
		if err != nil {
			return false
		}
		last = st
		voters := map[string]bool{}
		for _, m := range st.Members {
			if m.Suffrage == "voter" {
				voters[m.Name] = true
			}
		}
		return len(st.Members) == 3 && voters[s.name] && voters["n4"] && voters["n5"]
	})
	t.Logf("members: %+v", last.Members)
	r.acked["via-n4"] = createLease(ctx, t, fresh[0], "via-n4")
	for _, n := range append([]*procNode{s}, fresh...) {
		checkLeases(ctx, t, n, r.acked)
	}

	// Three voters again: losing one keeps the quorum.
	pc.kill(s.name)
	pc.leader(30*time.Second, s.name)
	r.acked["after-survivor-killed"] = createLease(ctx, t, fresh[1], "after-survivor-killed")
	for _, n := range fresh {
		checkLeases(ctx, t, n, r.acked)
	}
}
