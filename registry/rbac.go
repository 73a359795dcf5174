package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis/rbac/validation"
	"github.com/leasehold/leasehold/fsm"
)

// The rbac.authorization.k8s.io/v1 resources: stored through the log like
// Leases, read by the RBAC authorizer from each node's state.
var (
	Roles = rbacResource("roles", "role", "Role", true, "7FuwZcIIItM=",
		func() runtime.Object { return &rbacv1.RoleList{} },
		func(list runtime.Object, items []runtime.Object) {
			l := list.(*rbacv1.RoleList)
			l.Items = make([]rbacv1.Role, len(items))
			for i, o := range items {
				l.Items[i] = *o.(*rbacv1.Role)
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
		},
		func(obj runtime.Object) field.ErrorList { return validation.ValidateRole(obj.(*rbacv1.Role)) },
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateRoleUpdate(obj.(*rbacv1.Role), old.(*rbacv1.Role))
		}, nil)
	ClusterRoles = rbacResource("clusterroles", "clusterrole", "ClusterRole", false, "bYE5ZWDrJ44=",
		func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		func(list runtime.Object, items []runtime.Object) {
			l := list.(*rbacv1.ClusterRoleList)
			l.Items = make([]rbacv1.ClusterRole, len(items))
			for i, o := range items {
				l.Items[i] = *o.(*rbacv1.ClusterRole)
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
		},
		func(obj runtime.Object) field.ErrorList {
			return validation.ValidateClusterRole(obj.(*rbacv1.ClusterRole))
		},
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleUpdate(obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole))
		}, nil)
	RoleBindings = rbacResource("rolebindings", "rolebinding", "RoleBinding", true, "eGsCzGH6b1g=",
		func() runtime.Object { return &rbacv1.RoleBindingList{} },
		func(list runtime.Object, items []runtime.Object) {
			l := list.(*rbacv1.RoleBindingList)
			l.Items = make([]rbacv1.RoleBinding, len(items))
			for i, o := range items {
				l.Items[i] = *o.(*rbacv1.RoleBinding)
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
		},
		func(obj runtime.Object) field.ErrorList {
			return validation.ValidateRoleBinding(obj.(*rbacv1.RoleBinding))
		},
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateRoleBindingUpdate(obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding))
		},
		func(obj metav1.Object) {
			// An apply patch is unstructured: the object it makes is
			// defaulted when it is written.
			if b, ok := obj.(*rbacv1.RoleBinding); ok {
				defaultBinding(&b.RoleRef, b.Subjects)
			}
		})
	ClusterRoleBindings = rbacResource("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false, "48tpQ8gZHFc=",
		func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		func(list runtime.Object, items []runtime.Object) {
			l := list.(*rbacv1.ClusterRoleBindingList)
			l.Items = make([]rbacv1.ClusterRoleBinding, len(items))
			for i, o := range items {
				l.Items[i] = *o.(*rbacv1.ClusterRoleBinding)
				l.Items[i].TypeMeta = metav1.TypeMeta{}
			}
		},
		func(obj runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding))
		},
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleBindingUpdate(obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding))
		},
		func(obj metav1.Object) {
			// An apply patch is unstructured: the object it makes is
			// defaulted when it is written.
			if b, ok := obj.(*rbacv1.ClusterRoleBinding); ok {
				defaultBinding(&b.RoleRef, b.Subjects)
			}
		})
)

func rbacResource(name, singular, kind string, namespaced bool, hash string,
	newList func() runtime.Object, setItems func(runtime.Object, []runtime.Object),
	validate func(runtime.Object) field.ErrorList, validateUpdate func(obj, old runtime.Object) field.ErrorList,
	defaults func(metav1.Object)) *Resource {
	return &Resource{
		Group:              rbacv1.GroupName,
		Name:               name,
		Singular:           singular,
		Kind:               kind,
		Version:            "v1",
		Namespaced:         namespaced,
		StorageVersionHash: hash,
		New:                func() Object { return fsm.DefaultTypes()[name]() },
		NewList: func() runtime.Object {
			l := newList()
			l.GetObjectKind().SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind(kind + "List"))
			return l
		},
		SetItems:       setItems,
		Default:        defaults,
		Validate:       validate,
		ValidateUpdate: validateUpdate,
	}
}

// defaultBinding is rbac/v1's defaulting of a binding: the role
// reference's API group, and that of User and Group subjects, is
// rbac.authorization.k8s.io when left empty (kubectl leaves it empty).
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
