package testcluster

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
