package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	lptr "k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/test/harness"
)

// members runs leaseholdctl member list against the given nodes' APIs.
func (pc *procCluster) members(via ...string) map[string]cluster.MemberStatus {
	pc.t.Helper()
	code, out, errOut := runCtl(pc.t, "member", "list", "-o", "json", "--endpoints", pc.urls(via...))
	if code != 0 {
		pc.t.Fatalf("member list: exit %d: %s", code, errOut)
	}
	var ml struct{ Members []cluster.MemberStatus }
	if err := json.Unmarshal([]byte(out), &ml); err != nil {
		pc.t.Fatalf("member list -o json: %v: %s", err, out)
	}
	m := map[string]cluster.MemberStatus{}
	for _, e := range ml.Members {
		m[e.Name] = e
	}
	return m
}

// urls are the API URLs of the named nodes (all when none is named).
func (pc *procCluster) urls(names ...string) string {
	var out []string
	for _, n := range pc.nodes {
		if len(names) == 0 || contains(names, n.name) {
			out = append(out, "http://"+n.apiAddr)
		}
	}
	return strings.Join(out, ",")
}

// newJoiner makes (does not start) a node that joins via --join.
func (pc *procCluster) newJoiner(name, join string) *procNode {
	pc.t.Helper()
	ports := harness.FreePorts(pc.t, 2)
	n := &procNode{
		name:     name,
		apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		dataDir:  filepath.Join(pc.dir, name+"-"+fmt.Sprint(ports[0]), "data"),
		logPath:  filepath.Join(pc.dir, name+"-"+fmt.Sprint(ports[0])+".log"),
	}
	n.args = []string{
		"--name", n.name, "--data-dir", n.dataDir,
		"--api-addr", n.apiAddr, "--peer-addr", n.peerAddr,
		"--join", "http://" + pc.node(join).apiAddr, "--raft-heartbeat-timeout", "500ms",
	}
	var err error
	if n.jsonClient, err = kubernetes.NewForConfig(clientConfig(n.apiAddr, false)); err != nil {
		pc.t.Fatal(err)
	}
	return n
}

// ackedWriter renews Leases through every given node until stopped and
// keeps, per Lease, the last holder a 2xx answer acknowledged.
type ackedWriter struct {
	mu    sync.Mutex
	acked map[string]string
	ok    int
	stop  chan struct{}
	done  sync.WaitGroup
}

func startWriter(pc *procCluster, nodes ...string) *ackedWriter {
	w := &ackedWriter{acked: map[string]string{}, stop: make(chan struct{})}
	for _, name := range nodes {
		c := pc.node(name).jsonClient
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			leases := c.CoordinationV1().Leases("members")
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				lease := fmt.Sprintf("%s-%d", name, i%5)
				holder := fmt.Sprintf("%s-%d", name, i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				l, err := leases.Get(ctx, lease, metav1.GetOptions{})
				if err == nil {
					l.Spec.HolderIdentity = lptr.To(holder)
					_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				} else {
					_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: lease}, Spec: coordinationv1.LeaseSpec{HolderIdentity: lptr.To(holder)}}, metav1.CreateOptions{})
				}
				cancel()
				if err == nil {
					w.mu.Lock()
					w.acked[lease], w.ok = holder, w.ok+1
					w.mu.Unlock()
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return w
}

// finish stops the writer and checks every acknowledged holder on node.
func (w *ackedWriter) finish(t *testing.T, pc *procCluster, node string) {
	t.Helper()
	close(w.stop)
	w.done.Wait()
	if w.ok == 0 {
		t.Fatal("no write was acknowledged")
	}
	leases := pc.node(node).jsonClient.CoordinationV1().Leases("members")
	for name, holder := range w.acked {
		l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder {
			t.Errorf("acknowledged %s=%s lost on %s: %v %v", name, holder, node, l, err)
		}
	}
	t.Logf("%d acknowledged writes, %d Leases checked on %s", w.ok, len(w.acked), node)
}

// TestMembership: a joiner enters as a non-voter and is promoted once it
// has caught up; the member list and endpoint status show every member;
// a quorum-unsafe removal is refused and changes nothing; the leader is
// removed under writes with nothing acknowledged lost, stops, and cannot
// start again on its data; a dead member is replaced on a new disk under a
// new address (docs/operations.md); leadership moves where it is told.
func TestMembership(t *testing.T) {
	pc := newProcCluster(t)
	ctx := context.Background()
	if _, err := pc.node("n1").jsonClient.CoordinationV1().Leases("members").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "before"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Join: a non-voter first, then a voter.
	n4 := pc.newJoiner("n4", "n1")
	pc.nodes = append(pc.nodes, n4)
	pc.start(n4)
	var sawNonvoter bool
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := pc.members("n1", "n2", "n3")["n4"]
		sawNonvoter = sawNonvoter || m.Suffrage == "nonvoter"
		if m.Suffrage == "voter" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n4 not promoted within 30s: %+v", m)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !sawNonvoter {
		t.Error("n4 was never seen as a non-voter before its promotion")
	}
	pc.waitReady("n4", 30*time.Second)
	if _, err := n4.jsonClient.CoordinationV1().Leases("members").Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("n4 cannot read a Lease written before it joined: %v", err)
	}
	ms := pc.members()
	if len(ms) != 4 {
		t.Fatalf("member list: %+v", ms)
	}
	for _, m := range ms {
		if m.APIURL != "http://"+pc.node(m.Name).apiAddr || m.Suffrage != "voter" || (m.State != "leader" && m.State != "follower") {
			t.Errorf("member %+v", m)
		}
	}
	code, out, errOut := runCtl(t, "endpoint", "status", "-o", "json", "--endpoints", pc.urls("n2"))
	var es struct {
		Endpoints []struct {
			Name   string
			URL    string
			Leader bool
			DBSize int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &es) != nil || len(es.Endpoints) != 1 {
		t.Fatalf("endpoint status: exit %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCtl(t, "endpoint", "health", "--endpoints", pc.urls())
	if code != 0 || strings.Count(out, "is healthy") != 4 {
		t.Errorf("endpoint health: exit %d %s %s", code, out, errOut)
	}

	// A dead member may be removed; then, with one of three voters dead,
	// removing a healthy one is refused and changes nothing.
	pc.kill("n4")
	if code, _, errOut := runCtl(t, "member", "remove", "n4", "--endpoints", pc.urls("n1", "n2", "n3")); code != 0 {
		t.Fatalf("remove the dead n4: exit %d %s", code, errOut)
	}
	leader := pc.leader(10*time.Second, "n4")
	var dead, healthy string
	for _, n := range clusterNames {
		if n != leader {
			if dead == "" {
				dead = n
			} else {
				healthy = n
			}
		}
	}
	pc.kill(dead)
	deadline = time.Now().Add(20 * time.Second)
	for pc.members(leader)[dead].State != "unreachable" {
		if time.Now().After(deadline) {
			t.Fatalf("%s never shown unreachable", dead)
		}
		time.Sleep(200 * time.Millisecond)
	}
	code, _, errOut = runCtl(t, "member", "remove", healthy, "--endpoints", pc.urls(leader))
	if code != 1 || !strings.Contains(errOut, "unhealthy cluster") {
		t.Fatalf("removing healthy %s with %s dead: exit %d %q, want 1 and unhealthy cluster", healthy, dead, code, errOut)
	}
	if _, ok := pc.members(leader)[healthy]; !ok {
		t.Fatal("the refused removal changed the members")
	}
	pc.restart(dead)
	for _, n := range clusterNames {
		pc.waitReady(n, 30*time.Second)
	}

	// The leader is removed under writes: it hands over first, nothing
	// acknowledged is lost, and the removed node stops for good.
	leader = pc.leader(10*time.Second, "n4")
	var rest []string
	for _, n := range clusterNames {
		if n != leader {
			rest = append(rest, n)
		}
	}
	w := startWriter(pc, rest...)
	time.Sleep(time.Second)
	code, out, errOut = runCtl(t, "member", "remove", leader, "--endpoints", pc.urls(leader))
	if code != 0 {
		t.Fatalf("remove the leader %s: exit %d %s %s", leader, code, out, errOut)
	}
	time.Sleep(time.Second)
	w.finish(t, pc, rest[0])
	p := pc.node(leader).Process()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the removed %s still runs", leader)
	}
	if p.State().ExitCode() == 0 || countLines(pc.node(leader).logPath, "no longer a member") == 0 {
		t.Errorf("the removed %s exited with %v; log:\n%s", leader, p.State(), harness.Tail(pc.node(leader).logPath, 10))
	}
	pc.restart(leader)
	select {
	case <-pc.node(leader).Process().Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s started again on a removed member's data dir", leader)
	}
	if countLines(pc.node(leader).logPath, "removed from its cluster") == 0 {
		t.Errorf("no reason given for refusing the removed data dir; log:\n%s", harness.Tail(pc.node(leader).logPath, 5))
	}

	// Replace it: the same name on a new disk under a new address joins
	// and is promoted; the cluster is three voters again.
	repl := pc.newJoiner(leader, rest[0])
	pc.nodes = append(slicesWithout(pc.nodes, pc.node(leader)), repl)
	pc.start(repl)
	deadline = time.Now().Add(30 * time.Second)
	for {
		ms := pc.members(rest...)
		if m := ms[leader]; m.Suffrage == "voter" && m.PeerAddr == repl.peerAddr && len(ms) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replacement %s not a voter within 30s: %+v", leader, ms)
		}
		time.Sleep(200 * time.Millisecond)
	}
	pc.waitReady(leader, 30*time.Second)
	if _, err := repl.jsonClient.CoordinationV1().Leases("members").Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Errorf("the replacement cannot read what was written before: %v", err)
	}

	// Leadership moves to the named member.
	code, out, errOut = runCtl(t, "leader", "transfer", leader, "--endpoints", pc.urls(rest...))
	if code != 0 || !strings.Contains(out, "to "+leader) {
		t.Fatalf("leader transfer %s: exit %d %s %s", leader, code, out, errOut)
	}
	if got := pc.leader(10 * time.Second); got != leader {
		t.Errorf("leader after transfer: %s, want %s", got, leader)
	}
}

func slicesWithout(nodes []*procNode, drop *procNode) []*procNode {
	var out []*procNode
	for _, n := range nodes {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}
