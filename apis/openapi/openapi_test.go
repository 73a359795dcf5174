package openapi_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/openapi"
	"github.com/leasehold/leasehold/registry"
)

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}

func served() []openapi.Resource {
	var rs []openapi.Resource
	for _, r := range registry.Served() {
		rs = append(rs, openapi.Resource{Group: r.Group, Version: r.Version, Resource: r.Name, Kind: r.Kind, Namespaced: r.Namespaced})
	}
	return rs
}

func build(t *testing.T) *openapi.Documents {
	t.Helper()
	docs, err := openapi.Build(openapi.Config{Resources: served(), Scheme: apis.Scheme, PatchTypes: patchTypes, Version: "v1.32.0"})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// operation is what a kube-apiserver operation looks like.
type operation struct {
	path, method, id, action string
	// query parameters the operation itself declares (not the path).
	params []string
}

// operations are kube-apiserver's operations for a resource.
func operations(r openapi.Resource) []operation {
	root := "/apis/" + r.Group + "/" + r.Version
	group := map[string]string{"coordination.k8s.io": "Coordination", "rbac.authorization.k8s.io": "RbacAuthorization"}[r.Group]
	gv := group + strings.ToUpper(r.Version[:1]) + r.Version[1:]
	list := []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}
	write := []string{"dryRun", "fieldManager", "fieldValidation"}
	del := []string{"dryRun", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents", "propagationPolicy"}
	delColl := []string{"continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "ignoreStoreReadErrorWithClusterBreakingPotential", "labelSelector", "limit", "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds"}
	if !r.Namespaced {
		coll := root + "/" + r.Resource
		item := coll + "/{name}"
		return []operation{
			{coll, "GET", "list" + gv + r.Kind, "list", list},
			{coll, "POST", "create" + gv + r.Kind, "post", write},
			{coll, "DELETE", "delete" + gv + "Collection" + r.Kind, "deletecollection", delColl},
			{item, "GET", "read" + gv + r.Kind, "get", nil},
			{item, "PUT", "replace" + gv + r.Kind, "put", write},
			{item, "PATCH", "patch" + gv + r.Kind, "patch", append(slices.Clone(write), "force")},
			{item, "DELETE", "delete" + gv + r.Kind, "delete", del},
			{root + "/watch/" + r.Resource, "GET", "watch" + gv + r.Kind + "List", "watchlist", nil},
			{root + "/watch/" + r.Resource + "/{name}", "GET", "watch" + gv + r.Kind, "watch", nil},
		}
	}
	coll := root + "/namespaces/{namespace}/" + r.Resource
	item := coll + "/{name}"
	return []operation{
		{coll, "GET", "list" + gv + "Namespaced" + r.Kind, "list", list},
		{coll, "POST", "create" + gv + "Namespaced" + r.Kind, "post", write},
		{coll, "DELETE", "delete" + gv + "CollectionNamespaced" + r.Kind, "deletecollection", delColl},
		{item, "GET", "read" + gv + "Namespaced" + r.Kind, "get", nil},
		{item, "PUT", "replace" + gv + "Namespaced" + r.Kind, "put", write},
		{item, "PATCH", "patch" + gv + "Namespaced" + r.Kind, "patch", append(slices.Clone(write), "force")},
		{item, "DELETE", "delete" + gv + "Namespaced" + r.Kind, "delete", del},
		// Single-operation paths declare their parameters on the path.
		{root + "/" + r.Resource, "GET", "list" + gv + r.Kind + "ForAllNamespaces", "list", nil},
		{root + "/watch/" + r.Resource, "GET", "watch" + gv + r.Kind + "ListForAllNamespaces", "watchlist", nil},
		{root + "/watch/namespaces/{namespace}/" + r.Resource, "GET", "watch" + gv + "Namespaced" + r.Kind + "List", "watchlist", nil},
		{root + "/watch/namespaces/{namespace}/" + r.Resource + "/{name}", "GET", "watch" + gv + "Namespaced" + r.Kind, "watch", nil},
	}
}

// tag is a group's tag in kube-apiserver's documents.
func tag(group string) string {
	return map[string]string{"coordination.k8s.io": "coordination", "rbac.authorization.k8s.io": "rbacAuthorization"}[group]
}

func v3Op(p *spec3.Path, method string) *spec3.Operation {
	switch method {
	case "GET":
		return p.Get
	case "POST":
		return p.Post
	case "PUT":
		return p.Put
	case "PATCH":
		return p.Patch
	case "DELETE":
		return p.Delete
	}
	return nil
}

func v2Op(p spec.PathItem, method string) *spec.Operation {
	switch method {
	case "GET":
		return p.Get
	case "POST":
		return p.Post
	case "PUT":
		return p.Put
	case "PATCH":
		return p.Patch
	case "DELETE":
		return p.Delete
	}
	return nil
}

func TestDocuments(t *testing.T) {
	docs := build(t)
	var names []string
	for name := range docs.V3 {
		names = append(names, name)
	}
	slices.Sort(names)
	want := []string{"api", "api/v1", "apis", "apis/coordination.k8s.io",
		"apis/coordination.k8s.io/v1", "apis/coordination.k8s.io/v1alpha1", "apis/coordination.k8s.io/v1alpha2", "apis/coordination.k8s.io/v1beta1",
		"apis/rbac.authorization.k8s.io", "apis/rbac.authorization.k8s.io/v1",
		"version"}
	if !slices.Equal(names, want) {
		t.Fatalf("v3 documents %v, want %v", names, want)
	}
	for name, doc := range docs.V3 {
		if doc.Version != "3.0.0" || doc.Info == nil || doc.Info.Title != "Kubernetes" || doc.Info.Version != "v1.32.0" {
			t.Errorf("%s: openapi %q, info %+v", name, doc.Version, doc.Info)
		}
		// Each document holds its own paths only.
		for p := range doc.Paths.Paths {
			if !strings.HasPrefix(p, "/"+name+"/") {
				t.Errorf("document %s has path %s", name, p)
			}
		}
	}
	if docs.V2.Swagger != "2.0" || docs.V2.Info.Title != "Kubernetes" {
		t.Errorf("v2: swagger %q, info %+v", docs.V2.Swagger, docs.V2.Info)
	}
	// Discovery, as served.
	for path, id := range map[string]string{
		"/api/": "getCoreAPIVersions", "/api/v1/": "getCoreV1APIResources", "/apis/": "getAPIVersions",
		"/apis/coordination.k8s.io/": "getCoordinationAPIGroup", "/apis/coordination.k8s.io/v1/": "getCoordinationV1APIResources",
		"/apis/coordination.k8s.io/v1beta1/": "getCoordinationV1beta1APIResources", "/version/": "getCodeVersion",
		"/apis/rbac.authorization.k8s.io/": "getRbacAuthorizationAPIGroup", "/apis/rbac.authorization.k8s.io/v1/": "getRbacAuthorizationV1APIResources",
	} {
		if p, ok := docs.V2.Paths.Paths[path]; !ok || p.Get == nil || p.Get.ID != id {
			t.Errorf("v2 %s: %+v, want GET %s", path, p.Get, id)
		}
		doc := docs.V3[strings.Trim(path, "/")]
		if p := doc.Paths.Paths[path]; p == nil || p.Get == nil || p.Get.OperationId != id {
			t.Errorf("v3 %s: want GET %s", path, id)
		}
	}
}

func TestEveryServedOperation(t *testing.T) {
	docs := build(t)
	total := 0
	for _, r := range served() {
		doc := docs.V3["apis/"+r.Group+"/"+r.Version]
		if doc == nil {
			t.Fatalf("no v3 document for %s/%s", r.Group, r.Version)
		}
		wantGVK := map[string]interface{}{"group": r.Group, "version": r.Version, "kind": r.Kind}
		for _, want := range operations(r) {
			total++
			what := fmt.Sprintf("%s/%s %s %s", r.Version, r.Resource, want.method, want.path)
			p := doc.Paths.Paths[want.path]
			if p == nil {
				t.Errorf("v3 %s: no path", what)
				continue
			}
			op := v3Op(p, want.method)
			if op == nil {
				t.Errorf("v3 %s: no operation", what)
				continue
			}
			if op.OperationId != want.id || op.Extensions["x-kubernetes-action"] != want.action ||
				!reflect.DeepEqual(op.Extensions["x-kubernetes-group-version-kind"], wantGVK) ||
				!slices.Equal(op.Tags, []string{tag(r.Group) + "_" + r.Version}) {
				t.Errorf("v3 %s: id %s, tags %v, extensions %v; want %s, action %s, GVK %v", what, op.OperationId, op.Tags, op.Extensions, want.id, want.action, wantGVK)
			}
			var got []string
			for _, prm := range op.Parameters {
				if prm.In != "query" || prm.Description == "" || prm.Schema == nil {
					t.Errorf("v3 %s: parameter %+v", what, prm)
				}
				got = append(got, prm.Name)
			}
			if !slices.Equal(got, want.params) {
				t.Errorf("v3 %s: parameters %v, want %v", what, got, want.params)
			}
			// pretty and the path parameters are the path's.
			var pathParams []string
			for _, prm := range p.Parameters {
				pathParams = append(pathParams, prm.In+":"+prm.Name)
			}
			for _, n := range []string{"query:pretty", "path:namespace", "path:name"} {
				if strings.Contains(want.path, "{"+strings.TrimPrefix(n, "path:")+"}") || n == "query:pretty" {
					if !slices.Contains(pathParams, n) {
						t.Errorf("v3 %s: path parameters %v lack %s", what, pathParams, n)
					}
				}
			}
			if op.Responses == nil || op.Responses.StatusCodeResponses[200] == nil {
				t.Errorf("v3 %s: no 200 response", what)
			}
			switch want.method {
			case "POST", "PUT", "PATCH":
				if op.RequestBody == nil || !op.RequestBody.Required {
					t.Errorf("v3 %s: request body %+v", what, op.RequestBody)
				}
			}
			if want.method == "PATCH" {
				var types []string
				for ct := range op.RequestBody.Content {
					types = append(types, ct)
				}
				slices.Sort(types)
				if !slices.Equal(types, patchTypes) {
					t.Errorf("v3 %s: patch types %v", what, types)
				}
			}

			// The same operation in v2.
			p2, ok := docs.V2.Paths.Paths[want.path]
			op2 := v2Op(p2, want.method)
			if !ok || op2 == nil {
				t.Errorf("v2 %s: missing", what)
				continue
			}
			if op2.ID != want.id || op2.Extensions["x-kubernetes-action"] != want.action || !reflect.DeepEqual(op2.Extensions["x-kubernetes-group-version-kind"], wantGVK) {
				t.Errorf("v2 %s: id %s, extensions %v", what, op2.ID, op2.Extensions)
			}
		}
		// Nothing else: the document describes what is served, the
		// discovery path and six paths per namespaced resource, four per
		// cluster-scoped one.
		want := 1
		for _, o := range served() {
			if o.Group == r.Group && o.Version == r.Version {
				want += 4
				if o.Namespaced {
					want += 2
				}
			}
		}
		if got := len(doc.Paths.Paths); got != want {
			t.Errorf("v3 %s/%s: %d paths, want %d", r.Group, r.Version, got, want)
		}
	}
	want := 0
	for _, r := range served() {
		want += len(operations(r))
	}
	if total != want || total < 11*len(served())-2*4 {
		t.Fatalf("checked %d operations", total)
	}
}

// schemaOf follows a property to the schema it names.
func schemaOf(t *testing.T, doc *spec3.OpenAPI, s spec.Schema) *spec.Schema {
	t.Helper()
	ref := s.Ref.String()
	if ref == "" && len(s.AllOf) == 1 {
		ref = s.AllOf[0].Ref.String()
	}
	name := strings.TrimPrefix(ref, "#/components/schemas/")
	out := doc.Components.Schemas[name]
	if out == nil {
		t.Fatalf("no schema %q", ref)
	}
	return out
}

func TestRBACSchemas(t *testing.T) {
	docs := build(t)
	doc := docs.V3["apis/rbac.authorization.k8s.io/v1"]
	for _, kind := range []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		for _, k := range []string{kind, kind + "List"} {
			s := doc.Components.Schemas["io.k8s.api.rbac.v1."+k]
			want := []interface{}{map[string]interface{}{"group": "rbac.authorization.k8s.io", "version": "v1", "kind": k}}
			if s == nil || s.Description == "" || !reflect.DeepEqual(s.Extensions["x-kubernetes-group-version-kind"], want) {
				t.Fatalf("%s: %+v", k, s)
			}
		}
	}
	rules := doc.Components.Schemas["io.k8s.api.rbac.v1.ClusterRole"].Properties["rules"]
	if rules.Description == "" || !rules.Type.Contains("array") {
		t.Errorf("ClusterRole.rules: %+v", rules)
	}
	ref := doc.Components.Schemas["io.k8s.api.rbac.v1.RoleBinding"].Properties["roleRef"]
	if rr := schemaOf(t, doc, ref); rr.Properties["kind"].Description == "" {
		t.Errorf("RoleBinding.roleRef: %+v", rr)
	}
}

func TestSchemas(t *testing.T) {
	docs := build(t)
	for _, r := range served() {
		if r.Group != "coordination.k8s.io" {
			continue // TestRBACSchemas
		}
		doc := docs.V3["apis/"+r.Group+"/"+r.Version]
		name := "io.k8s.api.coordination." + r.Version + "." + r.Kind
		for _, n := range []string{name, name + "List"} {
			s := doc.Components.Schemas[n]
			kind := strings.TrimPrefix(n, "io.k8s.api.coordination."+r.Version+".")
			want := []interface{}{map[string]interface{}{"group": r.Group, "version": r.Version, "kind": kind}}
			if s == nil || s.Description == "" || !reflect.DeepEqual(s.Extensions["x-kubernetes-group-version-kind"], want) {
				t.Fatalf("%s: %+v", n, s)
			}
			if v2 := docs.V2.Definitions[n]; !reflect.DeepEqual(v2.Extensions["x-kubernetes-group-version-kind"], want) {
				t.Fatalf("v2 %s: %v", n, v2.Extensions)
			}
		}
		obj := doc.Components.Schemas[name]
		meta := schemaOf(t, doc, obj.Properties["metadata"])
		if !strings.Contains(meta.Properties["name"].Description, "Name must be unique within a namespace") {
			t.Errorf("%s metadata.name: %q", name, meta.Properties["name"].Description)
		}
		sp := schemaOf(t, doc, obj.Properties["spec"])
		if sp.Description == "" {
			t.Errorf("%s: spec has no description", name)
		}
		for field, prop := range sp.Properties {
			if prop.Description == "" {
				t.Errorf("%s spec.%s has no description", name, field)
			}
		}
		renew := schemaOf(t, doc, sp.Properties["renewTime"])
		if !renew.Type.Contains("string") || renew.Format != "date-time" {
			t.Errorf("%s spec.renewTime: %+v", name, renew)
		}

		switch {
		case r.Kind == "Lease":
			if d := sp.Properties["holderIdentity"].Description; !strings.HasPrefix(d, "holderIdentity contains the identity of the holder of a current lease.") {
				t.Errorf("holderIdentity: %q", d)
			}
			if !sp.Properties["leaseDurationSeconds"].Type.Contains("integer") {
				t.Errorf("leaseDurationSeconds: %+v", sp.Properties["leaseDurationSeconds"])
			}
		case r.Version == "v1alpha1":
			ps := sp.Properties["preferredStrategies"]
			if !ps.Type.Contains("array") || ps.Items == nil || ps.Items.Schema == nil || !ps.Items.Schema.Type.Contains("string") ||
				ps.Extensions["x-kubernetes-list-type"] != "atomic" {
				t.Errorf("v1alpha1 preferredStrategies: %+v", ps)
			}
			if _, ok := sp.Properties["strategy"]; ok {
				t.Error("v1alpha1 LeaseCandidateSpec has strategy")
			}
			if !slices.Contains(sp.Required, "preferredStrategies") || !slices.Contains(sp.Required, "leaseName") {
				t.Errorf("v1alpha1 required %v", sp.Required)
			}
		default:
			if !sp.Properties["strategy"].Type.Contains("string") || !slices.Contains(sp.Required, "strategy") {
				t.Errorf("%s strategy: %+v, required %v", r.Version, sp.Properties["strategy"], sp.Required)
			}
			if _, ok := sp.Properties["preferredStrategies"]; ok {
				t.Errorf("%s LeaseCandidateSpec has preferredStrategies", r.Version)
			}
		}
	}
}

// refs collects every $ref in a JSON document.
func refs(v interface{}, out map[string]bool) {
	switch v := v.(type) {
	case map[string]interface{}:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				out[s] = true
			}
			refs(x, out)
		}
	case []interface{}:
		for _, x := range v {
			refs(x, out)
		}
	}
}

func TestReferencesResolve(t *testing.T) {
	docs := build(t)
	check := func(name string, doc interface{}, prefix string, has func(string) bool) {
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var v interface{}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		refs(v, found)
		if len(found) == 0 && name != "version" {
			t.Errorf("%s: no references", name)
		}
		for ref := range found {
			if !strings.HasPrefix(ref, prefix) || !has(strings.TrimPrefix(ref, prefix)) {
				t.Errorf("%s: dangling %s", name, ref)
			}
		}
	}
	for name, doc := range docs.V3 {
		check(name, doc, "#/components/schemas/", func(n string) bool { return doc.Components.Schemas[n] != nil })
	}
	check("v2", docs.V2, "#/", func(n string) bool {
		if d, ok := strings.CutPrefix(n, "definitions/"); ok {
			_, ok := docs.V2.Definitions[d]
			return ok
		}
		if p, ok := strings.CutPrefix(n, "parameters/"); ok {
			_, ok := docs.V2.Parameters[p]
			return ok
		}
		return false
	})
}

// The documents are the same every time: members of a cluster serve the
// same hashes.
func TestDeterministic(t *testing.T) {
	a, b := build(t), build(t)
	for name := range a.V3 {
		ja, _ := json.Marshal(a.V3[name])
		jb, _ := json.Marshal(b.V3[name])
		if string(ja) != string(jb) {
			t.Fatalf("%s differs between builds", name)
		}
	}
	ja, _ := json.Marshal(a.V2)
	jb, _ := json.Marshal(b.V2)
	if string(ja) != string(jb) {
		t.Fatal("v2 differs between builds")
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := openapi.Build(openapi.Config{Resources: served()}); err == nil {
		t.Error("built without a scheme")
	}
	_, err := openapi.Build(openapi.Config{Scheme: apis.Scheme, Resources: []openapi.Resource{{Group: apis.Group, Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}}})
	if err == nil || !strings.Contains(err.Error(), "Widget") {
		t.Errorf("unknown kind: %v", err)
	}
}
