// Package validation owns the field validation of coordination.k8s.io/v1
// Lease objects, reproducing kube-apiserver's pkg/apis/coordination/validation
// rules and error messages (field paths, error types and detail strings).
//
// ObjectMeta rules are delegated to k8s.io/apimachinery/pkg/api/validation;
// this package adds the Lease spec rules on top. It only validates: it does
// not default, mutate or drop fields, and it does not perform the request
// level checks (URL name/namespace matching, resourceVersion preconditions)
// that the server layer does before calling it.
package validation
