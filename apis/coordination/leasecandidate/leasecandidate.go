package leasecandidate

import (
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

// PreferredStrategiesAnnotation is the annotation of the stored form that
// keeps a v1alpha1 writer's whole preferredStrategies list, as a JSON array
// of strings. It never appears in any served version.
const PreferredStrategiesAnnotation = "coordination.leasehold.io/preferred-strategies"

// Group is the API group of LeaseCandidate.
const Group = "coordination.k8s.io"

// Kind and ListKind are the kinds of LeaseCandidate and its list in every
// version.
const (
	Kind     = "LeaseCandidate"
	ListKind = "LeaseCandidateList"
)

// Versions are the served versions, preferred first: v1beta1, v1alpha2, v1alpha1.
var Versions = []string{"v1beta1", "v1alpha2", "v1alpha1"}

// StoredVersion is the version of the stored form.
const StoredVersion = "v1beta1"

func typeMeta(version, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: schema.GroupVersion{Group: Group, Version: version}.String()}
}

// New returns an empty LeaseCandidate of version with its TypeMeta set, or
// nil when version is not served.
func New(version string) runtime.Object {
	tm := typeMeta(version, Kind)
	switch version {
	case "v1beta1":
		return &coordinationv1beta1.LeaseCandidate{TypeMeta: tm}
	case "v1alpha2":
		return &coordinationv1alpha2.LeaseCandidate{TypeMeta: tm}
	case "v1alpha1":
		return &v1alpha1.LeaseCandidate{TypeMeta: tm}
	}
	return nil
}

// NewList returns an empty LeaseCandidateList of version with its TypeMeta
// set, or nil when version is not served.
func NewList(version string) runtime.Object {
	tm := typeMeta(version, ListKind)
	switch version {
	case "v1beta1":
		return &coordinationv1beta1.LeaseCandidateList{TypeMeta: tm}
	case "v1alpha2":
		return &coordinationv1alpha2.LeaseCandidateList{TypeMeta: tm}
	case "v1alpha1":
		return &v1alpha1.LeaseCandidateList{TypeMeta: tm}
	}
	return nil
}

// ToStored converts a LeaseCandidate of any served version (a
// *v1beta1.LeaseCandidate, *v1alpha2.LeaseCandidate or
// *v1alpha1.LeaseCandidate) to a new object in the stored form; see the
// package documentation for the rules. obj is not modified and shares no
// memory with the result.
func ToStored(obj runtime.Object) (*coordinationv1beta1.LeaseCandidate, error) {
	st := &coordinationv1beta1.LeaseCandidate{TypeMeta: typeMeta(StoredVersion, Kind)}
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		if o == nil {
			return nil, fmt.Errorf("leasecandidate: nil %T", obj)
		}
		o.ObjectMeta.DeepCopyInto(&st.ObjectMeta)
		o.Spec.DeepCopyInto(&st.Spec)
		removeAnnotation(&st.ObjectMeta)
	case *coordinationv1alpha2.LeaseCandidate:
		if o == nil {
			return nil, fmt.Errorf("leasecandidate: nil %T", obj)
		}
		o.ObjectMeta.DeepCopyInto(&st.ObjectMeta)
		st.Spec = coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:        o.Spec.LeaseName,
			PingTime:         o.Spec.PingTime.DeepCopy(),
			RenewTime:        o.Spec.RenewTime.DeepCopy(),
			BinaryVersion:    o.Spec.BinaryVersion,
			EmulationVersion: o.Spec.EmulationVersion,
			Strategy:         o.Spec.Strategy,
		}
		removeAnnotation(&st.ObjectMeta)
	case *v1alpha1.LeaseCandidate:
		if o == nil {
			return nil, fmt.Errorf("leasecandidate: nil %T", obj)
		}
		o.ObjectMeta.DeepCopyInto(&st.ObjectMeta)
		st.Spec = coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:        o.Spec.LeaseName,
			PingTime:         o.Spec.PingTime.DeepCopy(),
			RenewTime:        o.Spec.RenewTime.DeepCopy(),
			BinaryVersion:    o.Spec.BinaryVersion,
			EmulationVersion: o.Spec.EmulationVersion,
		}
		if len(o.Spec.PreferredStrategies) == 0 {
			removeAnnotation(&st.ObjectMeta)
			break
		}
		st.Spec.Strategy = o.Spec.PreferredStrategies[0]
		list, err := json.Marshal(o.Spec.PreferredStrategies)
		if err != nil {
			return nil, fmt.Errorf("leasecandidate: encoding preferredStrategies: %w", err)
		}
		if st.Annotations == nil {
			st.Annotations = map[string]string{}
		}
		st.Annotations[PreferredStrategiesAnnotation] = string(list)
	default:
		return nil, fmt.Errorf("leasecandidate: %T is not a served LeaseCandidate version", obj)
	}
	return st, nil
}

// FromStored converts the stored form st to a new object of version (one
// of Versions) with its TypeMeta set; see the package documentation for the
// rules. st is not modified and shares no memory with the result.
func FromStored(st *coordinationv1beta1.LeaseCandidate, version string) (runtime.Object, error) {
	if st == nil {
		return nil, fmt.Errorf("leasecandidate: nil stored object")
	}
	tm := typeMeta(version, Kind)
	switch version {
	case "v1beta1":
		out := &coordinationv1beta1.LeaseCandidate{TypeMeta: tm}
		st.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		st.Spec.DeepCopyInto(&out.Spec)
		removeAnnotation(&out.ObjectMeta)
		return out, nil
	case "v1alpha2":
		out := &coordinationv1alpha2.LeaseCandidate{TypeMeta: tm}
		st.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		out.Spec = coordinationv1alpha2.LeaseCandidateSpec{
			LeaseName:        st.Spec.LeaseName,
			PingTime:         st.Spec.PingTime.DeepCopy(),
			RenewTime:        st.Spec.RenewTime.DeepCopy(),
			BinaryVersion:    st.Spec.BinaryVersion,
			EmulationVersion: st.Spec.EmulationVersion,
			Strategy:         st.Spec.Strategy,
		}
		removeAnnotation(&out.ObjectMeta)
		return out, nil
	case "v1alpha1":
		out := &v1alpha1.LeaseCandidate{TypeMeta: tm}
		st.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		out.Spec = v1alpha1.LeaseCandidateSpec{
			LeaseName:           st.Spec.LeaseName,
			PingTime:            st.Spec.PingTime.DeepCopy(),
			RenewTime:           st.Spec.RenewTime.DeepCopy(),
			BinaryVersion:       st.Spec.BinaryVersion,
			EmulationVersion:    st.Spec.EmulationVersion,
			PreferredStrategies: preferredStrategies(st),
		}
		removeAnnotation(&out.ObjectMeta)
		return out, nil
	}
	return nil, fmt.Errorf("leasecandidate: version %q is not served", version)
}

// preferredStrategies returns the v1alpha1 list of a stored object: the
// annotation's list when it is consistent with the stored strategy, else
// [strategy], else nil.
func preferredStrategies(st *coordinationv1beta1.LeaseCandidate) []coordinationv1.CoordinatedLeaseStrategy {
	if v, ok := st.Annotations[PreferredStrategiesAnnotation]; ok {
		var list []coordinationv1.CoordinatedLeaseStrategy
		if err := json.Unmarshal([]byte(v), &list); err == nil && len(list) > 0 && list[0] == st.Spec.Strategy {
			return list
		}
	}
	if st.Spec.Strategy == "" {
		return nil
	}
	return []coordinationv1.CoordinatedLeaseStrategy{st.Spec.Strategy}
}

// removeAnnotation deletes PreferredStrategiesAnnotation from m, whose
// annotations map must be m's own; a map left empty becomes nil.
func removeAnnotation(m *metav1.ObjectMeta) {
	if _, ok := m.Annotations[PreferredStrategiesAnnotation]; !ok {
		return
	}
	delete(m.Annotations, PreferredStrategiesAnnotation)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}

// SetListItems sets the items of list, a LeaseCandidateList of any served
// version (as NewList returns), to items, which must be LeaseCandidates of
// the same version (as FromStored returns). The list gets shallow copies of
// the items with their TypeMeta cleared, as kube-apiserver's list items
// carry no kind or apiVersion; Items is never nil, so an empty list encodes
// as "items": []. It panics on a list or item of another type, which is a
// programming error.
func SetListItems(list runtime.Object, items []runtime.Object) {
	switch l := list.(type) {
	case *coordinationv1beta1.LeaseCandidateList:
		l.Items = listItems[coordinationv1beta1.LeaseCandidate](items)
	case *coordinationv1alpha2.LeaseCandidateList:
		l.Items = listItems[coordinationv1alpha2.LeaseCandidate](items)
	case *v1alpha1.LeaseCandidateList:
		l.Items = listItems[v1alpha1.LeaseCandidate](items)
	default:
		panic(fmt.Sprintf("leasecandidate: SetListItems on %T, not a served LeaseCandidateList", list))
	}
}

func listItems[T any, PT interface {
	*T
	runtime.Object
}](items []runtime.Object) []T {
	out := make([]T, len(items))
	for i, item := range items {
		o, ok := item.(PT)
		if !ok || o == nil {
			panic(fmt.Sprintf("leasecandidate: SetListItems: item %d is %T, want %T", i, item, PT(nil)))
		}
		out[i] = *o
		PT(&out[i]).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return out
}
