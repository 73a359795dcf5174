package registry

import (
	"fmt"
	"strings"
	"sync"
	"unicode"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/openapi"
)

// typeConverter knows the structure of every served type, from the same
// OpenAPI definitions the API publishes; structured-merge-diff uses it to
// track field ownership (managedFields) and to merge server-side applies.
var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	cfg := openapi.Config{Scheme: apis.Scheme, Version: "v0"}
	for _, r := range servedResources {
		cfg.Resources = append(cfg.Resources, openapi.Resource{Group: r.Group, Version: r.Version, Resource: r.Name, Kind: r.Kind, Namespaced: r.Namespaced})
	}
	docs, err := openapi.Build(cfg)
	if err != nil {
		return nil, err
	}
	defs := make(map[string]*spec.Schema, len(docs.V2.Definitions))
	for name, s := range docs.V2.Definitions {
		defs[name] = &s
	}
	return managedfields.NewTypeConverter(defs, false)
})

var (
	fieldManagersMu sync.Mutex
	fieldManagers   = map[*Resource]*managedfields.FieldManager{}
)

// fieldManager is r's field manager, as kube-apiserver keeps one per
// resource version. Objects are managed in their served version.
func (r *Resource) fieldManager() (*managedfields.FieldManager, error) {
	fieldManagersMu.Lock()
	defer fieldManagersMu.Unlock()
	if fm, ok := fieldManagers[r]; ok {
		return fm, nil
	}
	tc, err := typeConverter()
	if err != nil {
		return nil, fmt.Errorf("field manager type converter: %w", err)
	}
	gvk := r.GroupVersionKind()
	fm, err := managedfields.NewDefaultFieldManager(sortedTypeConverter{tc}, apis.Scheme, apis.Scheme, apis.Scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return nil, err
	}
	fieldManagers[r] = fm
	return fm, nil
}

// manage records the manager's update of live into obj's managedFields, as
// every non-apply write does. A write that changes nothing but the time of
// the manager's entry keeps live's managedFields, so it stays a no-op.
func (r *Resource) manage(live, obj Object, manager string) (Object, error) {
	if live.GetResourceVersion() != "" {
		if mf, ok := renewalManagedFields(live, obj, manager, r.GroupVersionKind().GroupVersion().String()); ok {
			obj.SetManagedFields(mf)
			return obj, nil
		}
	}
	return r.manageFully(live, obj, manager)
}

// manageFully is manage through the field manager.
func (r *Resource) manageFully(live, obj Object, manager string) (Object, error) {
	fm, err := r.fieldManager()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, ok := fm.UpdateNoErrors(live, obj, manager).(Object)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("field manager returned no object metadata"))
	}
	if live.GetResourceVersion() != "" && equalIgnoringManagedFieldsTime(out, live) {
		out.SetManagedFields(live.GetManagedFields())
	}
	return out, nil
}

// equalIgnoringManagedFieldsTime compares two objects as kube-apiserver
// does before deciding a write is a no-op.
func equalIgnoringManagedFieldsTime(a, b Object) bool {
	strip := func(o Object) runtime.Object {
		c := o.DeepCopyObject()
		m := c.(metav1.Object)
		mf := m.GetManagedFields()
		for i := range mf {
			mf[i].Time = nil
		}
		m.SetManagedFields(mf)
		m.SetResourceVersion("")
		return c
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// Manager names the field manager of a write: the fieldManager parameter, or
// else the client's User-Agent up to its first '/', printable characters
// only, as kube-apiserver derives it.
func Manager(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	ua, _, _ := strings.Cut(userAgent, "/")
	ua = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, ua)
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}
