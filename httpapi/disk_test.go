package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// fullDisk is raft.db on a disk with no space left while full is set.
type fullDisk struct {
	cluster.RaftStore
	full *atomic.Bool
}

func (d fullDisk) write(do func() error) error {
	if d.full.Load() {
		return &os.PathError{Op: "write", Path: "raft.db", Err: syscall.ENOSPC}
	}
	return do()
}

func (d fullDisk) StoreLog(l *raft.Log) error { return d.StoreLogs([]*raft.Log{l}) }
func (d fullDisk) StoreLogs(logs []*raft.Log) error {
	return d.write(func() error { return d.RaftStore.StoreLogs(logs) })
}
func (d fullDisk) Set(k, v []byte) error {
	return d.write(func() error { return d.RaftStore.Set(k, v) })
}
func (d fullDisk) SetUint64(k []byte, v uint64) error {
	return d.write(func() error { return d.RaftStore.SetUint64(k, v) })
}

// TestFullDisks: with every node's disk full, /readyz says so on every
// node, a write through any node gets what kube-apiserver answers when
// etcd is out of space (500, no reason, the storage's words: here that the
// leader cannot write its raft log for lack of space), reads go on; once
// space returns, writes succeed again without a restart.
func TestFullDisks(t *testing.T) {
	var full atomic.Bool
	c := testcluster.New(t, 3, testcluster.Options{Cluster: func(_ string, cfg *cluster.Config) {
		cfg.WrapRaftStore = func(s cluster.RaftStore) cluster.RaftStore { return fullDisk{s, &full} }
	}})
	t.Cleanup(func() { full.Store(false) }) // before the nodes stop
	ctx := context.Background()
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	}
	if _, err := c.Client(0, false).CoordinationV1().Leases("default").Create(ctx, lease("before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The leader writes on its own after an election (the cluster's
	// feature level); a write that reaches Raft before the nodes' probes
	// see the full disks makes it step down. Let it finish.
	leaderNode := c.Nodes[c.Leader()].Raft()
	last, since := leaderNode.CommitIndex(), time.Now()
	if !testcluster.WaitFor(ctx, 15*time.Second, func() bool {
		if i := leaderNode.CommitIndex(); i != last {
			last, since = i, time.Now()
		}
		return time.Since(since) > 1500*time.Millisecond
	}) {
		t.Fatal("the leader's log did not stop growing")
	}

	full.Store(true)
	for _, n := range c.Nodes {
		var body string
		ok := testcluster.WaitFor(ctx, 10*time.Second, func() bool {
			resp, err := http.Get(n.URL() + "/readyz")
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "disk full: no space left on device")
		})
		if !ok {
			t.Fatalf("%s /readyz: %q, want 503 naming the full disk", n.Name, body)
		}
	}
	leader := c.Nodes[c.Leader()].Name
	want := fmt.Sprintf("database space exceeded: %s cannot write its raft log: no space left on device", leader)
	for i, n := range c.Nodes {
		for _, protobuf := range []bool{false, true} {
			_, err := c.Client(i, protobuf).CoordinationV1().Leases("default").Create(ctx, lease(fmt.Sprintf("refused-%d", i)), metav1.CreateOptions{})
			st, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("create through %s on full disks: %v, want a Status", n.Name, err)
			}
			s := st.Status()
			if s.Code != http.StatusInternalServerError || s.Reason != metav1.StatusReasonUnknown || s.Message != want {
				t.Fatalf("create through %s on full disks: %d %q %q, want 500, no reason, %q", n.Name, s.Code, s.Reason, s.Message, want)
			}
		}
		got, err := c.Client(i, true).CoordinationV1().Leases("default").Get(ctx, "before", metav1.GetOptions{})
		if err != nil || got.Name != "before" {
			t.Fatalf("read through %s on full disks: %v", n.Name, err)
		}
		list, err := c.Client(i, false).CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list through %s on full disks: %v (%d items)", n.Name, err, len(list.Items))
		}
	}

	full.Store(false)
	for i, n := range c.Nodes {
		var err error
		ok := testcluster.WaitFor(ctx, 10*time.Second, func() bool {
			_, err = c.Client(i, false).CoordinationV1().Leases("default").Create(ctx, lease(fmt.Sprintf("after-%d", i)), metav1.CreateOptions{})
			return err == nil
		})
		if !ok {
			t.Fatalf("create through %s once space returned: %v", n.Name, err)
		}
	}
	c.WaitReady()
}
