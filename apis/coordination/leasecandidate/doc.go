// Package leasecandidate converts LeaseCandidate between the versions
// leasehold serves (coordination.k8s.io v1beta1, v1alpha2 and v1alpha1) and
// the one form it stores.
//
// # The stored form
//
// Every LeaseCandidate is stored as a k8s.io/api/coordination/v1beta1
// LeaseCandidate, whatever version wrote it, with its TypeMeta set to
// coordination.k8s.io/v1beta1, LeaseCandidate. v1alpha2 and v1beta1 have the
// same fields, so they convert field for field.
//
// v1alpha1 (the k8s.io/api v0.31 shape) has an ordered list,
// preferredStrategies, where the later versions have a single strategy.
// kube-apiserver converted it lossily: v1alpha1 -> internal took
// strategy = preferredStrategies[0], internal -> v1alpha1 gave
// preferredStrategies = [strategy]. leasehold stores the same strategy, so
// every version reads the same value, and in addition keeps the whole list
// in the annotation
//
//	coordination.leasehold.io/preferred-strategies: ["A","B","C"]
//
// (a JSON array of strings), so that a v1alpha1 client reads back exactly
// the list it wrote. This is the technique Kubernetes itself uses to carry
// fields across a lossy conversion: autoscaling/v1 HorizontalPodAutoscaler
// keeps the autoscaling/v2 fields it cannot express (metrics, current
// metrics, conditions, behavior) in the autoscaling.alpha.kubernetes.io/
// metrics, current-metrics, conditions and behavior annotations, and strips
// them again when it converts back.
//
// The rules:
//
//   - Writes (ToStored). v1alpha1: strategy = preferredStrategies[0] (empty
//     when the list is empty) and the annotation holds the whole list; an
//     empty list removes the annotation. v1alpha2 and v1beta1: the
//     annotation is removed, so a later v1alpha1 read sees [strategy] —
//     unless the write replaces an object whose list starts with the same
//     strategy, which then keeps its list (CarryOver, applied by the
//     registry on updates). Any value the client itself put under the
//     annotation key is replaced or removed in every case.
//   - Reads (FromStored). The annotation never appears in any version's
//     output. v1alpha1 gets the annotation's list when it is a valid JSON
//     array whose first element equals the stored strategy (which is always
//     the case for what ToStored wrote), otherwise [strategy], or no list at
//     all when strategy is empty.
//   - Everything else, ObjectMeta included (apart from that one annotation),
//     passes through unchanged. A map left empty by removing the annotation
//     becomes nil, which no encoding distinguishes from empty.
//
// Consequences: an object written in any version reads back in every
// version; a round trip through the writer's own version is lossless; a
// v1alpha1 list [A, B, C] reads as strategy A in v1alpha2 and v1beta1; a
// v1alpha2 or v1beta1 update that keeps strategy A (a candidate renewing,
// say) keeps the list, and writing back an object unchanged through any
// version changes nothing; an update that sets another strategy resets the
// v1alpha1 view to [strategy] (the list would contradict it).
//
// # Lists
//
// NewList and SetListItems build list responses; the items carry no
// kind/apiVersion, as in kube-apiserver's lists.
package leasecandidate
