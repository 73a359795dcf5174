package registry

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The fast path knows LeaseSpec's fields by name: a new field must be
// added to changedSpecFields before it can be trusted.
func TestRenewalFastPathKnowsEveryLeaseSpecField(t *testing.T) {
	if n := reflect.TypeOf(coordinationv1.LeaseSpec{}).NumField(); n != 7 {
		t.Fatalf("LeaseSpec has %d fields; changedSpecFields knows 7", n)
	}
}

// TestRenewalFastPath compares the fast path with the full field manager
// over random updates: wherever the fast path answers, its managedFields
// must be the field manager's (the time restamped exactly when the field
// manager restamps it), and it must answer for plain renewals.
func TestRenewalFastPath(t *testing.T) {
	const apiVersion = "coordination.k8s.io/v1"
	rng := rand.New(rand.NewPCG(1, 2))
	managers := []string{"kube-scheduler", "kube-controller-manager"}
	at := func(s int) *metav1.MicroTime {
		m := metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, s, 1000*s, time.UTC))
		return &m
	}

	// live builds a stored Lease through the full field manager: created
	// by the first manager, sometimes touched by a second, sometimes left
	// with the first owning only some fields.
	live := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", Labels: map[string]string{"app": "x"}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To("a"),
				LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime:          at(1),
				RenewTime:            at(2),
				LeaseTransitions:     ptr.To[int32](0),
			},
		}
		out, err := Leases.manageFully(&coordinationv1.Lease{}, l, managers[0])
		if err != nil {
			t.Fatal(err)
		}
		l = out.(*coordinationv1.Lease)
		l.ResourceVersion = "5"
		switch rng.IntN(4) {
		case 0: // a reset of managedFields, then a renewal: m0 owns renewTime only
			next := l.DeepCopy()
			next.ManagedFields = []metav1.ManagedFieldsEntry{{}}
			next.Spec.RenewTime = at(3)
			out, err := Leases.manageFully(l, next, managers[0])
			if err != nil {
				t.Fatal(err)
			}
			l = out.(*coordinationv1.Lease)
			l.ResourceVersion = "6"
		case 1:
			next := l.DeepCopy()
			next.Spec.RenewTime = at(3)
			out, err := Leases.manageFully(l, next, managers[1])
			if err != nil {
				t.Fatal(err)
			}
			l = out.(*coordinationv1.Lease)
			l.ResourceVersion = "6"
		}
		return l
	}

	fast := 0
	for i := range 3000 {
		old := live()
		obj := old.DeepCopy()
		manager := managers[0]
		if rng.IntN(8) == 0 {
			manager = managers[1]
		}
		switch rng.IntN(3) { // what the client sends as managedFields
		case 0:
			obj.ManagedFields = nil
		case 1:
			obj.ManagedFields = []metav1.ManagedFieldsEntry{{}} // reset
		}
		for range rng.IntN(3) {
			switch rng.IntN(10) {
			case 0, 1, 2, 3:
				obj.Spec.RenewTime = at(10 + rng.IntN(5))
			case 4:
				obj.Spec.HolderIdentity = ptr.To([]string{"a", "b"}[rng.IntN(2)])
			case 5:
				obj.Spec.LeaseTransitions = ptr.To(int32(rng.IntN(2)))
			case 6:
				obj.Spec.PreferredHolder = ptr.To("p")
			case 7:
				obj.Spec.AcquireTime = nil
			case 8:
				obj.Labels = map[string]string{"app": []string{"x", "y"}[rng.IntN(2)]}
			case 9:
				obj.Spec.RenewTime = old.Spec.RenewTime // same value, new pointer
			}
		}
		mf, ok := renewalManagedFields(old, obj.DeepCopy(), manager, apiVersion)
		out, err := Leases.manageFully(old, obj.DeepCopy(), manager)
		if err != nil {
			t.Fatal(err)
		}
		want := out.GetManagedFields()
		if !ok {
			continue
		}
		fast++
		if len(mf) != len(want) {
			t.Fatalf("case %d: fast path %d entries, field manager %d:\nfast %+v\nfull %+v", i, len(mf), len(want), mf, want)
		}
		for j := range want {
			g, w := mf[j], want[j]
			restampedFull := !w.Time.Equal(old.ManagedFields[j].Time)
			restampedFast := !g.Time.Equal(old.ManagedFields[j].Time)
			if restampedFull != restampedFast {
				t.Fatalf("case %d: field manager restamped %v, fast path %v", i, restampedFull, restampedFast)
			}
			g.Time, w.Time = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("case %d: entries differ:\nfast %+v\nfull %+v", i, g, w)
			}
		}
	}
	if fast < 300 {
		t.Fatalf("the fast path answered only %d of 3000 updates", fast)
	}
	t.Logf("fast path answered %d of 3000 updates", fast)
}

// A plain renewal by the Lease's only manager takes the fast path and
// restamps the entry; the same write from a second manager does not.
func TestRenewalFastPathTakesRenewals(t *testing.T) {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), RenewTime: &metav1.MicroTime{Time: time.Unix(1, 0)}},
	}
	out, err := Leases.manageFully(&coordinationv1.Lease{}, l, "m")
	if err != nil {
		t.Fatal(err)
	}
	live := out.(*coordinationv1.Lease)
	live.ResourceVersion = "3"
	live.ManagedFields[0].Time = &metav1.Time{Time: time.Unix(0, 0)}
	next := live.DeepCopy()
	next.Spec.RenewTime = &metav1.MicroTime{Time: time.Unix(2, 0)}
	mf, ok := renewalManagedFields(live, next, "m", "coordination.k8s.io/v1")
	if !ok || len(mf) != 1 || !mf[0].Time.After(time.Unix(0, 0)) {
		t.Fatalf("renewal: ok=%v managedFields=%+v", ok, mf)
	}
	if _, ok := renewalManagedFields(live, next, "other", "coordination.k8s.io/v1"); ok {
		t.Fatal("a second manager's write took the fast path")
	}
}

func TestOwnedFieldsCache(t *testing.T) {
	raw := []byte(`{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}}`)
	a, err := ownedFields(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ownedFields(append([]byte(nil), raw...))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("equal FieldsV1 decoded twice")
	}
	if !a.Has(fieldpath.MakePathOrDie("spec", "renewTime")) || a.Has(fieldpath.MakePathOrDie("spec", "acquireTime")) {
		t.Errorf("decoded set %v", a)
	}
	if _, err := ownedFields([]byte(`{"f:spec":`)); err == nil {
		t.Error("a truncated FieldsV1 decoded")
	}
	for i := range 3 * maxOwnedSets {
		if _, err := ownedFields(fmt.Appendf(nil, `{"f:spec":{"f:x%d":{}}}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	ownedSets.RLock()
	n := len(ownedSets.m)
	ownedSets.RUnlock()
	if n > maxOwnedSets {
		t.Errorf("cache holds %d sets, bound %d", n, maxOwnedSets)
	}
}
