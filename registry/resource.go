package registry

import (
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/coordination/leasecandidate"
	"github.com/leasehold/leasehold/apis/coordination/validation"
	"github.com/leasehold/leasehold/fsm"
)

// Object is a served object: any version of any resource.
type Object interface {
	runtime.Object
	metav1.Object
}

// Resource describes one served resource in one version: its names, its
// strategy (validation) and how it converts to the one form the FSM
// stores, the way kube-apiserver's registry does.
type Resource struct {
	Group    string // API group, e.g. "coordination.k8s.io"
	Name     string // plural, e.g. "leases"
	Singular string
	Kind     string
	Version  string
	// Namespaced is false for a cluster-scoped resource, whose objects
	// have no namespace.
	Namespaced bool
	// StorageVersionHash is kube-apiserver's, for discovery.
	StorageVersionHash string

	// New returns an empty object of the served version.
	New     func() Object
	NewList func() runtime.Object
	// SetItems fills a list of this version from objects of this version.
	SetItems func(list runtime.Object, items []runtime.Object)

	// ToStored and FromStored convert between the served version and the
	// stored form (the FSM's type for Name). Both return new objects and
	// leave their argument alone. Nil means the served type is stored as
	// it is, and FromStored returns the stored object itself, shared.
	ToStored   func(obj runtime.Object) (fsm.StoredObject, error)
	FromStored func(obj fsm.StoredObject) (runtime.Object, error)
	// CarryOver, if set, moves into a converted update what the stored
	// object it replaces keeps beyond the served version's fields.
	CarryOver func(prev, next fsm.StoredObject)

	// Sanitize, if set, removes what a client may not write (the stored
	// form's internal fields) from an incoming object.
	Sanitize func(obj metav1.Object)
	// Default, if set, fills in the served version's defaults, as the
	// version's defaulting functions do on decoding in kube-apiserver.
	Default func(obj metav1.Object)

	// Validate and ValidateUpdate check objects of the served version.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// toStored converts a served object to the stored form.
func (r *Resource) toStored(obj Object) (fsm.StoredObject, error) {
	if r.ToStored == nil {
		st, ok := obj.(fsm.StoredObject)
		if !ok {
			return nil, fmt.Errorf("%T is not a stored type", obj)
		}
		return st, nil
	}
	return r.ToStored(obj)
}

// fromStored converts a stored object to the served version.
func (r *Resource) fromStored(obj runtime.Object) (Object, error) {
	st, ok := obj.(fsm.StoredObject)
	if !ok {
		return nil, fmt.Errorf("%T is not a stored type", obj)
	}
	if r.FromStored == nil {
		return st, nil
	}
	out, err := r.FromStored(st)
	if err != nil {
		return nil, err
	}
	o, ok := out.(Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", out)
	}
	return o, nil
}

// GroupResource is the resource qualified by group, as errors name it.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Name}
}

// GroupKind is the kind qualified by group, as validation errors name it.
func (r *Resource) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// GroupVersion is the served group version.
func (r *Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupVersionKind is the served kind.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// Leases is coordination.k8s.io/v1 Lease.
var Leases = &Resource{
	Group:              apis.Group,
	Namespaced:         true,
	Name:               "leases",
	Singular:           "lease",
	Kind:               "Lease",
	Version:            "v1",
	StorageVersionHash: "gqkMMb/YqFM=",
	New:                func() Object { return fsm.DefaultTypes()["leases"]() },
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

// leaseCandidates is coordination.k8s.io LeaseCandidate in one of its
// versions, stored as v1beta1 (see package leasecandidate for the
// conversion).
func leaseCandidates(version string) *Resource {
	hash := "lvME0iHWE20="
	if version == "v1alpha1" {
		hash = "VM2ILh8OBCI="
	}
	return &Resource{
		Group:              apis.Group,
		Namespaced:         true,
		Name:               "leasecandidates",
		Singular:           "leasecandidate",
		Kind:               leasecandidate.Kind,
		Version:            version,
		StorageVersionHash: hash,
		New:                func() Object { return leasecandidate.New(version).(Object) },
		NewList:            func() runtime.Object { return leasecandidate.NewList(version) },
		SetItems:           leasecandidate.SetListItems,
		ToStored: func(obj runtime.Object) (fsm.StoredObject, error) {
			return leasecandidate.ToStored(obj)
		},
		FromStored: func(obj fsm.StoredObject) (runtime.Object, error) {
			st, ok := obj.(*coordinationv1beta1.LeaseCandidate)
			if !ok {
				return nil, fmt.Errorf("stored leasecandidate is a %T", obj)
			}
			return leasecandidate.FromStored(st, version)
		},
		CarryOver: func(prev, next fsm.StoredObject) {
			p, ok1 := prev.(*coordinationv1beta1.LeaseCandidate)
			n, ok2 := next.(*coordinationv1beta1.LeaseCandidate)
			if ok1 && ok2 {
				leasecandidate.CarryOver(p, n)
			}
		},
		Sanitize:       leasecandidate.Sanitize,
		Validate:       validation.ValidateLeaseCandidate,
		ValidateUpdate: validation.ValidateLeaseCandidateUpdate,
	}
}

// sanitize applies r.Sanitize, then r.Default, to an incoming object.
func (r *Resource) sanitize(obj metav1.Object) {
	if r.Sanitize != nil {
		r.Sanitize(obj)
	}
	if r.Default != nil {
		r.Default(obj)
	}
}

// servedResources lists every served resource version.
var servedResources = func() []*Resource {
	rs := []*Resource{Leases}
	for _, v := range leasecandidate.Versions {
		rs = append(rs, leaseCandidates(v))
	}
	return append(rs, Roles, ClusterRoles, RoleBindings, ClusterRoleBindings)
}()

// Lookup finds the resource served as name in group and version.
func Lookup(group, version, name string) (*Resource, bool) {
	for _, r := range servedResources {
		if r.Group == group && r.Version == version && r.Name == name {
			return r, true
		}
	}
	return nil, false
}

// Served returns every served resource version.
func Served() []*Resource { return servedResources }

// ServesVersion reports whether any resource is served in group and
// version.
func ServesVersion(group, version string) bool {
	for _, r := range servedResources {
		if r.Group == group && r.Version == version {
			return true
		}
	}
	return false
}

// Groups lists the served API groups, in the order their resources are
// served.
func Groups() []string {
	var out []string
	for _, r := range servedResources {
		if !slices.Contains(out, r.Group) {
			out = append(out, r.Group)
		}
	}
	return out
}
