package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestJoinAddsVoter: a node started with --join and an empty data dir asks a
// running member to add it, becomes a voter, and catches up with what was
// written before it joined.
func TestJoinAddsVoter(t *testing.T) {
	pc := newProcCluster(t)
	ctx := context.Background()
	n1 := pc.node("n1")
	if _, err := n1.jsonClient.CoordinationV1().Leases("join").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "before"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ports := freePorts(t, 2)
	n4 := &procNode{
		name:     "n4",
		apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		dataDir:  filepath.Join(pc.dir, "n4", "data"),
		logPath:  filepath.Join(pc.dir, "n4.log"),
	}
	n4.args = []string{
		"--name", n4.name, "--data-dir", n4.dataDir,
		"--api-addr", n4.apiAddr, "--peer-addr", n4.peerAddr,
		"--join", "http://" + n1.apiAddr, "--raft-heartbeat-timeout", "500ms",
	}
	var err error
	if n4.jsonClient, err = kubernetes.NewForConfig(clientConfig(n4.apiAddr, false)); err != nil {
		t.Fatal(err)
	}
	pc.nodes = append(pc.nodes, n4)
	pc.start(n4)
	pc.waitReady("n4", 30*time.Second)

	st, err := pc.status("n1")
	if err != nil {
		t.Fatal(err)
	}
	voters := 0
	for _, m := range st.Members {
		if m.Suffrage == "voter" {
			voters++
		}
	}
	if voters != 4 {
		t.Fatalf("members after join: %+v, want 4 voters", st.Members)
	}
	if _, err := n4.jsonClient.CoordinationV1().Leases("join").Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("joined node cannot read a lease written before it joined: %v", err)
	}
}
