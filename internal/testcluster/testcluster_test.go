package testcluster

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/testpki"
	"github.com/leasehold/leasehold/transport"
)

// TestClusterServesClientGo checks the harness end to end: a protobuf
// clientset writes through a follower and reads back through another node.
func TestClusterServesClientGo(t *testing.T) {
	c := New(t, 3, Options{})
	ctx := context.Background()
	f := c.Follower()
	leases := c.Client(f, true).CoordinationV1().Leases("default")
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "harness"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := (f + 1) % 3
	got, err := c.Client(other, false).CoordinationV1().Leases("default").Get(ctx, "harness", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion || *got.Spec.HolderIdentity != "a" {
		t.Fatalf("read %s/%v, want %s/a", got.ResourceVersion, got.Spec.HolderIdentity, created.ResourceVersion)
	}
}

// TestClusterWithPeerTLS: members whose peer port speaks mutual TLS serve
// a write through a follower (forwarded to the leader) and a restarted
// member catches up.
func TestClusterWithPeerTLS(t *testing.T) {
	ca := testpki.NewCA(t)
	c := New(t, 3, Options{PeerTLS: func(name string) *transport.PeerTLS {
		cert := ca.Issue(t, name, nil)
		return &transport.PeerTLS{CertFile: cert.CertFile, KeyFile: cert.KeyFile, TrustedCAFile: ca.CertFile}
	}})
	ctx := context.Background()
	f := c.Follower()
	created, err := c.Client(f, true).CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(f)
	c.Restart(f)
	c.WaitReady()
	got, err := c.Client(f, false).CoordinationV1().Leases("default").Get(ctx, "tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("restarted member read RV %s, want %s", got.ResourceVersion, created.ResourceVersion)
	}
}
