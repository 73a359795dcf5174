// +k8s:openapi-gen=true

// Package v1alpha1 defines coordination.k8s.io/v1alpha1 LeaseCandidate, the
// first published shape of the type (k8s.io/api v0.31, Kubernetes 1.31). It
// no longer exists in current k8s.io/api (Kubernetes 1.32 replaced it with
// v1alpha2), so leasehold carries its own copy: the Go field names, JSON
// tags and protobuf field numbers are those of the published types.go and
// generated.proto.
//
// The deep-copy and protobuf code that code generators produce for k8s.io/api
// is written by hand here: DeepCopyInto/DeepCopy/DeepCopyObject in
// deepcopy.go, and Marshal/MarshalTo/MarshalToSizedBuffer/Size/Unmarshal/
// Reset/String/ProtoMessage in proto.go, built on
// google.golang.org/protobuf/encoding/protowire. The encoding matches the
// gogo-protobuf output of k8s.io/api v0.31 byte for byte (non-pointer string
// fields and embedded messages are always written, pointers only when set,
// fields in ascending number order), so apimachinery's protobuf serializer
// (application/vnd.kubernetes.protobuf) and client-go v0.31 interoperate
// with it.
//
// # preferredStrategies is an atomic list
//
// LeaseCandidateSpec.PreferredStrategies is marked +listType=atomic in the
// published API: it is an ordered list of preferences, and a change replaces
// it as a whole. For strategic merge patch that is the default for a list
// without patchStrategy/patchMergeKey struct tags: strategicpatch replaces
// such a list instead of merging it, which is why the field carries no patch
// tags (do not add any). JSON merge patch replaces lists by definition, and
// server-side apply reads +listType=atomic from the OpenAPI schema.
//
// The types are not registered in any scheme by this package; callers add
// them with AddToScheme.
package v1alpha1
