// Package rbac is kube-apiserver's RBAC authorizer for leasehold: the rule
// matching of plugin/pkg/auth/authorizer/rbac, the rule resolution of
// pkg/registry/rbac/validation, the bootstrap policy (cluster-admin,
// system:discovery, admin/edit/view, ...), the clusterrole-aggregation
// controller's computation, the bootstrap hook's reconciliation, and the
// escalation checks that guard writes of roles and bindings.
//
// It does not know how Roles, ClusterRoles, RoleBindings and
// ClusterRoleBindings are stored: the store implements Policy, a consistent
// view of them, and the Authorizer asks for the current view once per
// request.
//
// This package must not import leasehold's auth package (auth wires it
// into its chain), so the system:masters check is repeated here.
package rbac
