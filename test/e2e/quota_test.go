package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A cluster whose store is full refuses what would grow it (507), and
// still takes renewals, holder changes and deletes through every node;
// leaseholdctl lists and disarms the NOSPACE alarm.
func TestQuotaFullClusterKeepsLeases(t *testing.T) {
	pc := newProcCluster(t, "--quota-backend-bytes", "65536")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := pc.nodes[1].protoClient.CoordinationV1().Leases("default")

	// A small Lease for each node to renew and hand over, as elections
	// keep them; then Leases with 2 KiB annotations until the store
	// refuses one.
	for _, n := range pc.nodes {
		if _, err := c.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "election-" + n.name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pad := strings.Repeat("x", 2048)
	var created []string
	var full error
	for i := range 100 {
		name := fmt.Sprintf("fill-%d", i)
		holder := "h"
		_, err := c.Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"pad": pad}},
			Spec:       coordv1.LeaseSpec{HolderIdentity: &holder},
		}, metav1.CreateOptions{})
		if err != nil {
			full = err
			break
		}
		created = append(created, name)
	}
	if apierrors.ReasonForError(full) != "InsufficientStorage" {
		t.Fatalf("after %d Leases: %v, want a 507 once the 64 KiB quota is reached", len(created), full)
	}
	if !strings.Contains(full.Error(), "--quota-backend-bytes") {
		t.Errorf("the 507 does not name the flag: %v", full)
	}
	// Every node lists the alarm once it has applied the refused write
	// (alarm list reads a node's own state, as etcd's).
	for _, n := range pc.nodes {
		var out string
		waitUntil(t, 10*time.Second, "NOSPACE listed by "+n.name, func() bool {
			var code int
			code, out, _ = runCtl(t, "alarm", "list", "--endpoints", pc.urls(n.name))
			return code == 0 && strings.Count(out, "alarm:NOSPACE") == 3
		})
	}

	// Through every node: a renewal, a new holder with a longer name, a
	// delete; a new Lease is still refused.
	for i, n := range pc.nodes {
		lc := n.jsonClient.CoordinationV1().Leases("default")
		l, err := lc.Get(ctx, "election-"+n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		if l, err = lc.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: renewal on a full store: %v", n.name, err)
		}
		longer := "a-new-holder-with-a-much-longer-name-" + n.name
		l.Spec.HolderIdentity = &longer
		l.Spec.AcquireTime = &now
		transitions := int32(1)
		l.Spec.LeaseTransitions = &transitions
		if _, err = lc.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s: holder change on a full store: %v", n.name, err)
		}
		if err := lc.Delete(ctx, created[len(created)-1-i], metav1.DeleteOptions{}); err != nil {
			t.Fatalf("%s: delete on a full store: %v", n.name, err)
		}
		holder := "h"
		_, err = lc.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "new-" + n.name}, Spec: coordv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
		if apierrors.ReasonForError(err) != "InsufficientStorage" {
			t.Fatalf("%s: a create while the alarm is on: %v, want 507", n.name, err)
		}
	}

	// Disarmed after the deletes, creates go through again.
	if code, out, errOut := runCtl(t, "alarm", "disarm", "--endpoints", pc.urls()); code != 0 {
		t.Fatalf("alarm disarm: exit %d, %s %s", code, out, errOut)
	}
	holder := "h"
	if _, err := c.Create(ctx, &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "after-disarm"}, Spec: coordv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create after the disarm: %v", err)
	}
	if code, out, _ := runCtl(t, "alarm", "list", "--endpoints", pc.urls()); code != 0 || strings.Contains(out, "NOSPACE") {
		t.Errorf("alarm list after the disarm: exit %d, %q", code, out)
	}
}
