package v1alpha1

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseCandidate is a candidate for a Lease: coordinated leader election
// picks the Lease holder among the candidates that name it.
type LeaseCandidate struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Spec describes the candidate.
	// +optional
	Spec LeaseCandidateSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

// LeaseCandidateSpec is the specification of a LeaseCandidate.
type LeaseCandidateSpec struct {
	// LeaseName names the Lease this candidate contends for. Immutable.
	// +required
	LeaseName string `json:"leaseName" protobuf:"bytes,1,name=leaseName"`
	// PingTime is when the election controller last asked the candidate to
	// renew; the candidate answers by updating RenewTime.
	// +optional
	PingTime *metav1.MicroTime `json:"pingTime,omitempty" protobuf:"bytes,2,opt,name=pingTime"`
	// RenewTime is when the candidate last renewed itself. Candidates not
	// renewed for a long time are garbage collected.
	// +optional
	RenewTime *metav1.MicroTime `json:"renewTime,omitempty" protobuf:"bytes,3,opt,name=renewTime"`
	// BinaryVersion is the candidate's binary version, semver without a
	// leading "v". Required when a preferred strategy is
	// OldestEmulationVersion.
	// +optional
	BinaryVersion string `json:"binaryVersion,omitempty" protobuf:"bytes,4,opt,name=binaryVersion"`
	// EmulationVersion is the candidate's emulation version, semver without
	// a leading "v", no greater than BinaryVersion. Required when a
	// preferred strategy is OldestEmulationVersion.
	// +optional
	EmulationVersion string `json:"emulationVersion,omitempty" protobuf:"bytes,5,opt,name=emulationVersion"`
	// PreferredStrategies is the ordered list of election strategies the
	// candidate accepts, most preferred first. Across candidates, a list
	// that has another as a sub-sequence wins ([Y, X] beats [X]);
	// conflicting orders ([X, Y] against [Y, X]) stop the election for the
	// Lease until resolved.
	//
	// The list is atomic: an update or patch replaces it whole (see the
	// package documentation).
	// +featureGate=CoordinatedLeaderElection
	// +listType=atomic
	// +required
	PreferredStrategies []coordinationv1.CoordinatedLeaseStrategy `json:"preferredStrategies,omitempty" protobuf:"bytes,6,opt,name=preferredStrategies"`
}

// LeaseCandidateList is a list of LeaseCandidate objects.
type LeaseCandidateList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// Items are the candidates.
	Items []LeaseCandidate `json:"items" protobuf:"bytes,2,rep,name=items"`
}
