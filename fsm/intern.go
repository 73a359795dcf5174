package fsm

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm/state"
)

// maxInterned bounds each of the interner's tables; past it a table starts
// over, which only costs sharing.
const maxInterned = 4096

// interner gives the decoded objects one shared copy of what many of them
// repeat: 100,000 Leases written by the same client have the same
// namespace and the same managedFields entry, whose time is to the second.
// Stored objects are never mutated, so sharing is safe. Used only on the
// FSM goroutine (Apply and Restore).
type interner struct {
	strings map[string]string
	fields  map[string]*metav1.FieldsV1
	times   map[time.Time]*metav1.Time
	entries map[metav1.ManagedFieldsEntry][]metav1.ManagedFieldsEntry
}

// string returns the shared copy of s.
func (in *interner) string(s string) string {
	if s == "" {
		return ""
	}
	if shared, ok := in.strings[s]; ok {
		return shared
	}
	if in.strings == nil || len(in.strings) >= maxInterned {
		in.strings = make(map[string]string)
	}
	in.strings[s] = s
	return s
}

// object replaces o's repeated metadata by shared copies. o is not yet
// visible to anyone else.
func (in *interner) object(o metav1.Object) {
	o.SetNamespace(in.string(o.GetNamespace()))
	if mf := o.GetManagedFields(); len(mf) > 0 {
		o.SetManagedFields(in.managedFields(mf))
	}
}

// managedFields makes the entries of mf, which nothing else holds yet,
// share what they repeat, and returns mf or, for one entry, a shared
// copy.
func (in *interner) managedFields(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	for i := range mf {
		e := &mf[i]
		e.Manager = in.string(e.Manager)
		e.Operation = metav1.ManagedFieldsOperationType(in.string(string(e.Operation)))
		e.APIVersion = in.string(e.APIVersion)
		e.FieldsType = in.string(e.FieldsType)
		e.Subresource = in.string(e.Subresource)
		e.FieldsV1 = in.fieldsV1(e.FieldsV1)
		e.Time = in.time(e.Time)
	}
	if len(mf) == 1 {
		return in.entry(mf)
	}
	return mf
}

// entry returns a shared one-entry managedFields equal to mf, the usual
// case: Leases renewed by their holder in the same second have the same
// entry. Its capacity is one, so an append to it (on a copy of an object)
// cannot write into what other objects share.
func (in *interner) entry(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	if shared, ok := in.entries[mf[0]]; ok {
		return shared
	}
	if in.entries == nil || len(in.entries) >= maxInterned {
		in.entries = make(map[metav1.ManagedFieldsEntry][]metav1.ManagedFieldsEntry)
	}
	mf = mf[:1:1]
	in.entries[mf[0]] = mf
	return mf
}

// fieldsV1 returns a shared FieldsV1 equal to f.
func (in *interner) fieldsV1(f *metav1.FieldsV1) *metav1.FieldsV1 {
	if f == nil {
		return nil
	}
	if shared, ok := in.fields[string(f.Raw)]; ok {
		return shared
	}
	if in.fields == nil || len(in.fields) >= maxInterned {
		in.fields = make(map[string]*metav1.FieldsV1)
	}
	in.fields[string(f.Raw)] = f
	return f
}

// time returns a shared Time equal to t: equal as ==, the same instant in
// the same location, so that sharing changes nothing a reader could see.
func (in *interner) time(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	if shared, ok := in.times[t.Time]; ok {
		return shared
	}
	if in.times == nil || len(in.times) >= maxInterned {
		in.times = make(map[time.Time]*metav1.Time)
	}
	in.times[t.Time] = t
	return t
}

// shareUnchanged makes o, the next version of the object whose version is
// prev, hold prev's copy of every value the two versions share. The history
// keeps both (o's event has prev as its previous state) and a renewal
// changes a time and little else, so a Lease renewed many times over would
// otherwise hold its name, uid, holder and durations once per version. Only
// values equal as == are shared, so readers cannot tell; stored objects are
// never mutated, so sharing is safe. o is not yet visible to anyone else.
func shareUnchanged(o, prev *state.Object) {
	if o.Key() != prev.Key() {
		return
	}
	obj, old := o.Obj.(metav1.Object), prev.Obj.(metav1.Object)
	obj.SetName(old.GetName())
	if obj.GetUID() == old.GetUID() {
		obj.SetUID(old.GetUID())
	}
	// The same key is the same resource, stored as one type.
	switch n := o.Obj.(type) {
	case *coordinationv1.Lease:
		shareLeaseSpec(&n.Spec, &prev.Obj.(*coordinationv1.Lease).Spec)
	case *coordinationv1beta1.LeaseCandidate:
		s, ps := &n.Spec, &prev.Obj.(*coordinationv1beta1.LeaseCandidate).Spec
		shareString(&s.LeaseName, ps.LeaseName)
		sharePtr(&s.PingTime, ps.PingTime)
		sharePtr(&s.RenewTime, ps.RenewTime)
		shareString(&s.BinaryVersion, ps.BinaryVersion)
		shareString(&s.EmulationVersion, ps.EmulationVersion)
		shareString(&s.Strategy, ps.Strategy)
	}
}

// shareLeaseSpec makes s hold other's copy of each value the two hold
// equal.
func shareLeaseSpec(s, other *coordinationv1.LeaseSpec) {
	sharePtr(&s.HolderIdentity, other.HolderIdentity)
	sharePtr(&s.LeaseDurationSeconds, other.LeaseDurationSeconds)
	sharePtr(&s.AcquireTime, other.AcquireTime)
	sharePtr(&s.RenewTime, other.RenewTime)
	sharePtr(&s.LeaseTransitions, other.LeaseTransitions)
	sharePtr(&s.Strategy, other.Strategy)
	sharePtr(&s.PreferredHolder, other.PreferredHolder)
}

// sharePtr points *p at prev when both point at equal values.
func sharePtr[T comparable](p **T, prev *T) {
	if *p != nil && prev != nil && **p == *prev {
		*p = prev
	}
}

// shareString makes *s prev's copy when the two are equal.
func shareString[S ~string](s *S, prev S) {
	if *s == prev {
		*s = prev
	}
}
