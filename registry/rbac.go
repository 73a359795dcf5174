package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis/rbac/validation"
	"github.com/leasehold/leasehold/fsm"
)

// The rbac.authorization.k8s.io/v1 resources: stored through the log like
// Leases, read by the RBAC authorizer from each node's state.
var (
	Roles = rbacResource("roles", "role", "Role", true, "7FuwZcIIItM=",
		func() runtime.Object { return &rbacv1.RoleList{} },
		listSetter(func(l *rbacv1.RoleList) *[]rbacv1.Role { return &l.Items }),
		func(obj runtime.Object) field.ErrorList { return validation.ValidateRole(obj.(*rbacv1.Role)) },
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateRoleUpdate(obj.(*rbacv1.Role), old.(*rbacv1.Role))
		}, nil)
	ClusterRoles = rbacResource("clusterroles", "clusterrole", "ClusterRole", false, "bYE5ZWDrJ44=",
		func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		listSetter(func(l *rbacv1.ClusterRoleList) *[]rbacv1.ClusterRole { return &l.Items }),
		func(obj runtime.Object) field.ErrorList {
			return validation.ValidateClusterRole(obj.(*rbacv1.ClusterRole))
		},
		func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleUpdate(obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole))
		}, nil)
	RoleBindings = rbacResource("rolebindings", "rolebinding", "RoleBinding", true, "eGsCzGH6b1g=",
		func() runtime.Object { return &rbacv1.RoleBindingList{} },
		listSetter(func(l *rbacv1.RoleBindingList) *[]rbacv1.RoleBinding { return &l.Items }),
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
		listSetter(func(l *rbacv1.ClusterRoleBindingList) *[]rbacv1.ClusterRoleBinding { return &l.Items }),
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

// listSetter fills a list's items with shallow copies of stored objects
// (sharing what nobody mutates), without their kind, as kube-apiserver's
// list items come.
func listSetter[T any, PT interface {
	*T
	runtime.Object
}, L any](itemsOf func(*L) *[]T) func(runtime.Object, []runtime.Object) {
	return func(list runtime.Object, objs []runtime.Object) {
		items := itemsOf(list.(any).(*L))
		*items = make([]T, len(objs))
		for i, o := range objs {
			(*items)[i] = *o.(PT)
			PT(&(*items)[i]).GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
	}
}

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
