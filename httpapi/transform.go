package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer is a kind's table: kube-apiserver's columns and a row's cells.
type printer struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj map[string]any, m metav1.Object) []any
}

var (
	createdAtColumn = metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
	nameColumn      = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn       = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// printers are kube-apiserver's table columns per kind.
var printers = map[string]printer{
	"Lease": {
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
			ageColumn,
		},
		cells: func(obj map[string]any, m metav1.Object) []any {
			return []any{m.GetName(), specString(obj, "holderIdentity"), age(m)}
		},
	},
	"LeaseCandidate": {
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			// As kube-apiserver's printers: LeaseName has v1alpha2's field
			// doc; BinaryVersion and EmulationVersion look theirs up in
			// ObjectMeta's docs, which have none.
			{Name: "LeaseName", Type: "string", Description: coordinationv1alpha2.LeaseCandidateSpec{}.SwaggerDoc()["leaseName"]},
			{Name: "BinaryVersion", Type: "string"},
			{Name: "EmulationVersion", Type: "string"},
			ageColumn,
		},
		cells: func(obj map[string]any, m metav1.Object) []any {
			return []any{m.GetName(), specString(obj, "leaseName"), specString(obj, "binaryVersion"), specString(obj, "emulationVersion"), age(m)}
		},
	},
}

func init() {
	// kube-apiserver's RBAC printers (kubernetes pkg/printers/internalversion).
	role := printer{
		columns: []metav1.TableColumnDefinition{nameColumn, createdAtColumn},
		cells: func(_ map[string]any, m metav1.Object) []any {
			return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}
		},
	}
	binding := printer{
		columns: []metav1.TableColumnDefinition{
			nameColumn,
			{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
			ageColumn,
			{Name: "Users", Type: "string", Priority: 1, Description: "Users in the roleBinding"},
			{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the roleBinding"},
			{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the roleBinding"},
		},
		cells: func(obj map[string]any, m metav1.Object) []any {
			ref, _ := obj["roleRef"].(map[string]any)
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			var users, groups, sas []string
			subjects, _ := obj["subjects"].([]any)
			for _, s := range subjects {
				sub, _ := s.(map[string]any)
				k, _ := sub["kind"].(string)
				n, _ := sub["name"].(string)
				switch k {
				case rbacv1.UserKind:
					users = append(users, n)
				case rbacv1.GroupKind:
					groups = append(groups, n)
				case rbacv1.ServiceAccountKind:
					if ns, _ := sub["namespace"].(string); ns != "" {
						n = ns + "/" + n
					}
					sas = append(sas, n)
				}
			}
			return []any{m.GetName(), kind + "/" + name, age(m), strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
		},
	}
	printers["Role"], printers["ClusterRole"] = role, role
	printers["RoleBinding"], printers["ClusterRoleBinding"] = binding, binding
}

func specString(obj map[string]any, f string) string {
	spec, _ := obj["spec"].(map[string]any)
	v, _ := spec[f].(string)
	return v
}

// age is kube-apiserver's Age cell.
func age(m metav1.Object) string {
	ts := m.GetCreationTimestamp()
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(ts.Time))
}

// transform turns obj (an object, a list, or a watch event's object) into
// what the client asked for with Accept's as= parameter.
func transform(req *http.Request, out output, obj runtime.Object, columns bool) (runtime.Object, error) {
	as := out.as
	switch as.Kind {
	case "":
		return obj, nil
	case "Table":
		return toTable(req, out, obj, columns)
	case "PartialObjectMetadata":
		if meta.IsListType(obj) {
			return nil, notAcceptableTransform(fmt.Sprintf("you requested PartialObjectMetadata, but the requested object is a list (%T)", obj))
		}
		return partial(as.Version, obj)
	case "PartialObjectMetadataList":
		if !meta.IsListType(obj) {
			return nil, notAcceptableTransform(fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%T)", obj))
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			return nil, err
		}
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + as.Version}}
		if lm, err := meta.ListAccessor(obj); err == nil {
			list.ResourceVersion, list.Continue, list.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
		list.Items = make([]metav1.PartialObjectMetadata, 0, len(items))
		for _, it := range items {
			p, err := partial(as.Version, it)
			if err != nil {
				return nil, err
			}
			p.TypeMeta = metav1.TypeMeta{}
			list.Items = append(list.Items, *p)
		}
		return list, nil
	}
	return nil, notAcceptable
}

func notAcceptableTransform(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}

func partial(version string, obj runtime.Object) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}}
	m.(interface{ GetObjectMeta() metav1.Object }).GetObjectMeta().(*metav1.ObjectMeta).DeepCopyInto(&p.ObjectMeta)
	return p, nil
}

// toTable renders obj as a metav1.Table. columns is false for watch events
// after the first, which carry no column definitions.
func toTable(req *http.Request, out output, obj runtime.Object, columns bool) (*metav1.Table, error) {
	as := out.as
	// Row objects are embedded already encoded, in the response's encoding
	// (JSON for YAML, which is converted from JSON as a whole).
	embed := out.info.Serializer
	if out.info.MediaType != mediaProtobuf {
		info, _ := serializerFor(mediaJSON)
		embed = info.Serializer
	}
	include := metav1.IncludeMetadata
	if v := req.URL.Query().Get("includeObject"); v != "" {
		include = metav1.IncludeObjectPolicy(v)
		// kube-apiserver's check and message.
		if errs := metav1validation.ValidateTableOptions(&metav1.TableOptions{IncludeObject: include}); len(errs) > 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
		}
	}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + as.Version}}
	items := []runtime.Object{obj}
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, err
		}
		if lm, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion, table.Continue, table.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
	} else if m, err := meta.Accessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if meta.IsListType(obj) && len(kind) > 4 {
		kind = kind[:len(kind)-len("List")]
	}
	p, ok := printers[kind]
	if !ok {
		return nil, notAcceptableTransform(fmt.Sprintf("no table columns for %s", kind))
	}
	if columns {
		table.ColumnDefinitions = p.columns
	}
	table.Rows = []metav1.TableRow{}
	for _, it := range items {
		m, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		if err != nil {
			return nil, err
		}
		row := metav1.TableRow{Cells: p.cells(u, m)}
		var rowObj runtime.Object
		switch include {
		case metav1.IncludeMetadata:
			if rowObj, err = partial(as.Version, it); err != nil {
				return nil, err
			}
		case metav1.IncludeObject:
			rowObj = it
			// List items carry no kind; the embedded object must (kubectl
			// decodes it as unstructured).
			if rowObj.GetObjectKind().GroupVersionKind().Empty() {
				rowObj = it.DeepCopyObject()
				rowObj.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind().GroupVersion().WithKind(kind))
			}
		}
		if rowObj != nil {
			raw, err := runtime.Encode(embed, rowObj)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}
