package registry

import (
	"bytes"
	"reflect"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// renewalManagedFields answers the field manager's question for the write
// every leader makes every few seconds: a Lease update by the manager that
// alone owns it, changing only the values of spec fields it owns. The full
// field manager converts both objects into typed trees to find that out,
// which is most of what a renewal costs the leader's CPU; here the answer
// follows from the objects directly:
//   - nothing changed: live's managedFields as they are;
//   - values changed: the same entry with its time moved to now (an Update
//     that changes fields restamps its manager's entry).
//
// ok is false whenever the write is anything else (another manager, fields
// added or removed, metadata changed, managedFields sent that differ from
// live's), and the full field manager decides. TestRenewalFastPath checks
// the two agree.
func renewalManagedFields(live, obj Object, manager, apiVersion string) (mf []metav1.ManagedFieldsEntry, ok bool) {
	old, ok1 := live.(*coordinationv1.Lease)
	cur, ok2 := obj.(*coordinationv1.Lease)
	if !ok1 || !ok2 || len(old.ManagedFields) != 1 {
		return nil, false
	}
	e := old.ManagedFields[0]
	if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != apiVersion ||
		e.Subresource != "" || e.FieldsType != "FieldsV1" || e.FieldsV1 == nil {
		return nil, false
	}
	// Managed fields sent with the update are used instead of live's when
	// they decode to something: only an exact copy of live's is harmless.
	if len(cur.ManagedFields) > 0 && !sameEntries(cur.ManagedFields, old.ManagedFields) {
		return nil, false
	}
	if !sameTrackedMetadata(&old.ObjectMeta, &cur.ObjectMeta) {
		return nil, false
	}
	changed, ok := changedSpecFields(&old.Spec, &cur.Spec)
	if !ok {
		return nil, false
	}
	if len(changed) == 0 {
		return []metav1.ManagedFieldsEntry{e}, true
	}
	owned, err := ownedFields(e.FieldsV1.Raw)
	if err != nil {
		return nil, false
	}
	for _, name := range changed {
		if !owned.Has(fieldpath.MakePathOrDie("spec", name)) {
			return nil, false
		}
	}
	e.Time = &metav1.Time{Time: time.Now().UTC()}
	return []metav1.ManagedFieldsEntry{e}, true
}

// ownedSets caches decoded FieldsV1: a renewal asks about its manager's
// entry every time, and the entries of Leases renewed the same way are
// the same few byte strings. Decoding one allocates a 4 KB parse buffer
// each time, garbage the collector would pay for on every renewal.
var ownedSets struct {
	sync.RWMutex
	m map[string]*fieldpath.Set
}

// maxOwnedSets bounds the cache; when full it starts over.
const maxOwnedSets = 1024

// ownedFields is the set FieldsV1 raw encodes. The set is shared: callers
// only read it.
func ownedFields(raw []byte) (*fieldpath.Set, error) {
	ownedSets.RLock()
	set, ok := ownedSets.m[string(raw)]
	ownedSets.RUnlock()
	if ok {
		return set, nil
	}
	set = &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	ownedSets.Lock()
	if len(ownedSets.m) >= maxOwnedSets || ownedSets.m == nil {
		ownedSets.m = make(map[string]*fieldpath.Set)
	}
	ownedSets.m[string(raw)] = set
	ownedSets.Unlock()
	return set, nil
}

// sameEntries compares managedFields entry by entry, FieldsV1 by bytes.
func sameEntries(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.FieldsType != y.FieldsType || x.Subresource != y.Subresource ||
			(x.Time == nil) != (y.Time == nil) || (x.Time != nil && !x.Time.Equal(y.Time)) ||
			(x.FieldsV1 == nil) != (y.FieldsV1 == nil) || (x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.Raw, y.FieldsV1.Raw)) {
			return false
		}
	}
	return true
}

// sameTrackedMetadata compares the metadata fields whose ownership the
// field manager tracks (it strips name, namespace, uid, resourceVersion,
// generation, creationTimestamp and managedFields).
func sameTrackedMetadata(a, b *metav1.ObjectMeta) bool {
	return a.GenerateName == b.GenerateName &&
		reflect.DeepEqual(a.Labels, b.Labels) &&
		reflect.DeepEqual(a.Annotations, b.Annotations) &&
		reflect.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		reflect.DeepEqual(a.Finalizers, b.Finalizers) &&
		reflect.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) &&
		reflect.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}

// changedSpecFields lists the JSON names of the spec fields whose values
// differ. ok is false when a field is set in one spec and not the other
// (the set of fields changed).
func changedSpecFields(a, b *coordinationv1.LeaseSpec) (changed []string, ok bool) {
	ok = true
	check := func(name string, aSet, bSet, equal bool) {
		switch {
		case aSet != bSet:
			ok = false
		case aSet && !equal:
			changed = append(changed, name)
		}
	}
	check("holderIdentity", a.HolderIdentity != nil, b.HolderIdentity != nil, a.HolderIdentity != nil && b.HolderIdentity != nil && *a.HolderIdentity == *b.HolderIdentity)
	check("leaseDurationSeconds", a.LeaseDurationSeconds != nil, b.LeaseDurationSeconds != nil, a.LeaseDurationSeconds != nil && b.LeaseDurationSeconds != nil && *a.LeaseDurationSeconds == *b.LeaseDurationSeconds)
	check("acquireTime", a.AcquireTime != nil, b.AcquireTime != nil, sameMicroTime(a.AcquireTime, b.AcquireTime))
	check("renewTime", a.RenewTime != nil, b.RenewTime != nil, sameMicroTime(a.RenewTime, b.RenewTime))
	check("leaseTransitions", a.LeaseTransitions != nil, b.LeaseTransitions != nil, a.LeaseTransitions != nil && b.LeaseTransitions != nil && *a.LeaseTransitions == *b.LeaseTransitions)
	check("strategy", a.Strategy != nil, b.Strategy != nil, a.Strategy != nil && b.Strategy != nil && *a.Strategy == *b.Strategy)
	check("preferredHolder", a.PreferredHolder != nil, b.PreferredHolder != nil, a.PreferredHolder != nil && b.PreferredHolder != nil && *a.PreferredHolder == *b.PreferredHolder)
	return changed, ok
}

// sameMicroTime compares as the serialized form does: to the microsecond.
func sameMicroTime(a, b *metav1.MicroTime) bool {
	if a == nil || b == nil {
		return false
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}
