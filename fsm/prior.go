package fsm

import (
	"reflect"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm/state"
)

// priors makes the state.Prior of an event whose previous state no other
// event holds (state.Store.SetPriorOf). The store calls it under its lock,
// one call at a time, so one scratch Lease serves every comparison.
type priors struct {
	rest coordinationv1.Lease
}

// of returns how the event that replaced prev by next holds prev: as a
// leasePrior when both are Leases that differ only in resourceVersion,
// managedFields and spec — every renewal, every change of holder, every
// delete — else prev itself. next shares prev's values where they are
// equal (shareUnchanged), so the spec it keeps shares them too.
func (ps *priors) of(next, prev *state.Object) state.Prior {
	n, ok := next.Obj.(*coordinationv1.Lease)
	if !ok || prev.Data() != nil {
		return prev
	}
	p, ok := prev.Obj.(*coordinationv1.Lease)
	if !ok {
		return prev
	}
	// The rest of p must be n's exactly, as Version rebuilds it from n.
	// (A copy on the stack would escape through DeepEqual: 288 bytes
	// allocated per event.)
	ps.rest = *p
	ps.rest.ResourceVersion, ps.rest.ManagedFields, ps.rest.Spec = n.ResourceVersion, n.ManagedFields, n.Spec
	same := reflect.DeepEqual(&ps.rest, n)
	ps.rest = coordinationv1.Lease{} // holds nothing between calls
	if !same {
		return prev
	}
	return &leasePrior{rv: prev.RV, spec: p.Spec, managedFields: p.ManagedFields}
}

// leasePrior is a Lease version held as what differs from the version that
// replaced it: 96 bytes where the version is an Object and a Lease, 352.
// Its metadata but for resourceVersion and managedFields is the next
// version's, as state.Prior requires.
type leasePrior struct {
	rv            uint64
	spec          coordinationv1.LeaseSpec
	managedFields []metav1.ManagedFieldsEntry
}

func (p *leasePrior) Version(next *state.Object) *state.Object {
	l := *next.Obj.(*coordinationv1.Lease) // shares what stored objects never mutate
	l.ResourceVersion = strconv.FormatUint(p.rv, 10)
	l.ManagedFields = p.managedFields
	l.Spec = p.spec
	o := state.NewObject(next.Resource, p.rv, &l, nil)
	o.CreateRV, o.KeyVersion = next.CreateRV, next.KeyVersion-1
	return o
}

// share makes p's spec hold the copy of each value that next, the version
// that replaced it, holds equal, as a difference made on the apply path
// does (next shares its predecessor's values there: shareUnchanged).
func (p *leasePrior) share(next *state.Object) {
	if n, ok := next.Obj.(*coordinationv1.Lease); ok {
		shareLeaseSpec(&p.spec, &n.Spec)
	}
}
