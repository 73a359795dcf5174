package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/coordination/validation"
	"github.com/leasehold/leasehold/fsm"
)

// Resource describes one served resource: its names, its stored type and
// its strategy (validation), the way kube-apiserver's registry does.
type Resource struct {
	Name     string // plural, e.g. "leases"
	Singular string
	Kind     string
	// Version is the served version; the stored form is the same type.
	Version string

	New     func() fsm.StoredObject
	NewList func() runtime.Object
	// SetItems fills a list of this resource from stored objects.
	SetItems func(list runtime.Object, items []runtime.Object)

	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// GroupResource is the resource qualified by group, as errors name it.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: apis.Group, Resource: r.Name}
}

// GroupKind is the kind qualified by group, as validation errors name it.
func (r *Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: apis.Group, Kind: r.Kind}
}

// GroupVersion is the served group version.
func (r *Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: apis.Group, Version: r.Version}
}

// GroupVersionKind is the served kind.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// Leases is coordination.k8s.io/v1 Lease.
var Leases = &Resource{
	Name:     "leases",
	Singular: "lease",
	Kind:     "Lease",
	Version:  "v1",
	New:      fsm.DefaultTypes()["leases"],
	NewList: func() runtime.Object {
		return &coordinationv1.LeaseList{TypeMeta: metav1.TypeMeta{Kind: "LeaseList", APIVersion: coordinationv1.SchemeGroupVersion.String()}}
	},
	SetItems: func(list runtime.Object, items []runtime.Object) {
		l := list.(*coordinationv1.LeaseList)
		l.Items = make([]coordinationv1.Lease, len(items))
		for i, o := range items {
			// A shallow copy shares the stored object's maps and pointers,
			// which nobody mutates; list items carry no kind, as from
			// kube-apiserver.
			l.Items[i] = *o.(*coordinationv1.Lease)
			l.Items[i].TypeMeta = metav1.TypeMeta{}
		}
	},
	Validate: func(obj runtime.Object) field.ErrorList {
		return validation.ValidateLease(obj.(*coordinationv1.Lease))
	},
	ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
		return validation.ValidateLeaseUpdate(obj.(*coordinationv1.Lease), old.(*coordinationv1.Lease))
	},
}

// Resources are all served resources, by plural name.
var Resources = map[string]*Resource{
	Leases.Name: Leases,
}
