// Package validation owns the field validation of rbac.authorization.k8s.io/v1
// Role, ClusterRole, RoleBinding and ClusterRoleBinding objects, reproducing
// kube-apiserver 1.36's pkg/apis/rbac/validation rules and error messages
// (field paths, error types, bad values and detail strings) on the v1 types.
//
// What a client sees from kube-apiserver is the result of its validation
// functions plus what its generic registry adds around them; the exported
// functions return that combined result (see each function), so that a
// registry can hand the list to errors.NewInvalid as it is.
//
// ObjectMeta rules come from k8s.io/apimachinery/pkg/api/validation with the
// extra finalizer-name rule of kube's core validation wrappers, which RBAC
// uses. The package only validates: it does not default (v1 defaulting fills
// roleRef.apiGroup and the apiGroup of User and Group subjects, and must run
// before validation), mutate or drop fields, and it does not perform the
// request-level checks (URL name/namespace matching, resourceVersion
// preconditions, RBAC escalation checks) that the server layer does.
//
// Declarative validation: kube-apiserver 1.36 tags PolicyRule.verbs,
// RoleRef.name and Subject.name with alpha-stage "+k8s:required" rules. Alpha
// declarative rules are only compared against the handwritten ones (for
// metrics) and never change the response, so the handwritten messages
// reproduced here are what 1.36 returns.
package validation
