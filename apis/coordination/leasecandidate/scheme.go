package leasecandidate

import (
	"fmt"

	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

// AddConversions registers conversions between every pair of served
// versions with s, through the stored form. Field management converts
// objects to the versions their managedFields entries were written in.
func AddConversions(s *runtime.Scheme) error {
	types := []runtime.Object{&coordinationv1beta1.LeaseCandidate{}, &coordinationv1alpha2.LeaseCandidate{}, &v1alpha1.LeaseCandidate{}}
	for _, in := range types {
		for _, out := range types {
			if fmt.Sprintf("%T", in) == fmt.Sprintf("%T", out) {
				continue
			}
			if err := s.AddConversionFunc(in, out, convert); err != nil {
				return err
			}
		}
	}
	return nil
}

func convert(in, out any, _ conversion.Scope) error {
	st, err := ToStored(in.(runtime.Object))
	if err != nil {
		return err
	}
	version := out.(runtime.Object).GetObjectKind().GroupVersionKind().Version
	switch out.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		version = "v1beta1"
	case *coordinationv1alpha2.LeaseCandidate:
		version = "v1alpha2"
	case *v1alpha1.LeaseCandidate:
		version = "v1alpha1"
	}
	conv, err := FromStored(st, version)
	if err != nil {
		return err
	}
	switch o := out.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		*o = *conv.(*coordinationv1beta1.LeaseCandidate)
	case *coordinationv1alpha2.LeaseCandidate:
		*o = *conv.(*coordinationv1alpha2.LeaseCandidate)
	case *v1alpha1.LeaseCandidate:
		*o = *conv.(*v1alpha1.LeaseCandidate)
	}
	return nil
}

// Sanitize removes the stored form's internal annotation from an object a
// client sent, so that it is neither stored nor recorded in managedFields.
func Sanitize(m metav1.Object) {
	a := m.GetAnnotations()
	if _, ok := a[PreferredStrategiesAnnotation]; !ok {
		return
	}
	delete(a, PreferredStrategiesAnnotation)
	if len(a) == 0 {
		a = nil
	}
	m.SetAnnotations(a)
}

// CarryOver keeps a v1alpha1 writer's preference list when a newer version
// rewrites the object without changing its strategy: such a write (a
// candidate renewing, say) neither changes what the v1alpha1 client sees
// nor, when nothing else changed, the object at all. A new strategy still
// resets the list to [strategy].
func CarryOver(old, st *coordinationv1beta1.LeaseCandidate) {
	list, ok := old.Annotations[PreferredStrategiesAnnotation]
	if !ok || st.Annotations[PreferredStrategiesAnnotation] != "" {
		return
	}
	prefs := preferredStrategies(old)
	if len(prefs) == 0 || prefs[0] != st.Spec.Strategy {
		return
	}
	if st.Annotations == nil {
		st.Annotations = map[string]string{}
	}
	st.Annotations[PreferredStrategiesAnnotation] = list
}
