package fsm

import (
	"reflect"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm/state"
)

// priorOf returns how the event that replaced prev by next holds prev: as a
// leasePrior when both are Leases that differ only in resourceVersion,
// managedFields and spec — every renewal, every change of holder, every
// delete — else prev itself. Call it after shareUnchanged(next, prev), so
// that the spec it keeps shares next's values where they are equal.
func priorOf(next, prev *state.Object) state.Prior {
	n, ok := next.Obj.(*coordinationv1.Lease)
	if !ok || prev.Data() != nil || next.Resource != prev.Resource {
		return prev
	}
	p, ok := prev.Obj.(*coordinationv1.Lease)
	if !ok {
		return prev
	}
	// The rest of p must be n's exactly, as Version rebuilds it from n.
	rest := *p
	rest.ResourceVersion, rest.ManagedFields, rest.Spec = n.ResourceVersion, n.ManagedFields, n.Spec
	if !reflect.DeepEqual(&rest, n) {
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
	return state.NewObject(next.Resource, p.rv, &l, nil)
}
