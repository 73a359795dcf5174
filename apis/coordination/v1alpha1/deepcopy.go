package v1alpha1

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *LeaseCandidate) DeepCopyInto(out *LeaseCandidate) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
}

// DeepCopy returns a deep copy of the receiver, or nil for a nil receiver.
func (in *LeaseCandidate) DeepCopy() *LeaseCandidate {
	if in == nil {
		return nil
	}
	out := new(LeaseCandidate)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *LeaseCandidate) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *LeaseCandidateSpec) DeepCopyInto(out *LeaseCandidateSpec) {
	*out = *in
	if in.PingTime != nil {
		out.PingTime = in.PingTime.DeepCopy()
	}
	if in.RenewTime != nil {
		out.RenewTime = in.RenewTime.DeepCopy()
	}
	if in.PreferredStrategies != nil {
		out.PreferredStrategies = make([]coordinationv1.CoordinatedLeaseStrategy, len(in.PreferredStrategies))
		copy(out.PreferredStrategies, in.PreferredStrategies)
	}
}

// DeepCopy returns a deep copy of the receiver, or nil for a nil receiver.
func (in *LeaseCandidateSpec) DeepCopy() *LeaseCandidateSpec {
	if in == nil {
		return nil
	}
	out := new(LeaseCandidateSpec)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies the receiver into out. in must be non-nil.
func (in *LeaseCandidateList) DeepCopyInto(out *LeaseCandidateList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]LeaseCandidate, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver, or nil for a nil receiver.
func (in *LeaseCandidateList) DeepCopy() *LeaseCandidateList {
	if in == nil {
		return nil
	}
	out := new(LeaseCandidateList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *LeaseCandidateList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
