package main

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestExampleElection runs the example's campaign against an in-process
// three-node cluster: a candidate on a follower becomes the leader and the
// Lease names it; a second candidate waits, and takes over once the first
// is cancelled and releases the Lease.
func TestExampleElection(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	const ns, name = "default", "example"
	leases := c.Client(c.Leader(), false).CoordinationV1().Leases(ns)

	type candidate struct {
		leading chan struct{}
		stop    func() error // cancels the campaign and returns its result
	}
	start := func(node int, id string) candidate {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		cd := candidate{leading: make(chan struct{})}
		go func() {
			done <- campaign(ctx, c.Config(node, true), ns, name, id, func(ctx context.Context) {
				close(cd.leading)
				<-ctx.Done()
			})
		}()
		cd.stop = sync.OnceValue(func() error { cancel(); return <-done })
		t.Cleanup(func() { _ = cd.stop() })
		return cd
	}
	holder := func() string {
		l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	a := start(c.Follower(), "a")
	select {
	case <-a.leading:
	case <-time.After(20 * time.Second):
		t.Fatal("candidate a did not become leader within 20s")
	}
	if h := holder(); h != "a" {
		t.Fatalf("holderIdentity = %q, want a", h)
	}

	b := start(c.Leader(), "b")
	select {
	case <-b.leading:
		t.Fatal("candidate b leads while a holds the Lease")
	case <-time.After(3 * time.Second): // longer than RetryPeriod
	}

	if err := a.stop(); err != nil {
		t.Fatalf("campaign a: %v", err)
	}
	select {
	case <-b.leading:
	case <-time.After(20 * time.Second):
		t.Fatal("candidate b did not take over within 20s of a's release")
	}
	if h := holder(); h != "b" {
		t.Fatalf("holderIdentity = %q, want b", h)
	}
}
