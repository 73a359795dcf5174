// Package openapi builds the OpenAPI v2 and v3 documents leasehold serves
// at /openapi/v2 and /openapi/v3, the way kube-apiserver builds its own:
// schemas from the definitions openapi-gen generates from the Go types
// (zz_generated.openapi.go, doc comments included), paths and operations
// from route descriptions handed to kube-openapi's builders (pkg/builder
// for v2, pkg/builder3 for v3).
//
// The route descriptions follow kube-apiserver's installer for a namespaced
// resource: list/watch, create and deletecollection on the namespaced
// collection, get/replace/patch/delete on an item, list across namespaces,
// and the deprecated /watch/ paths; operation ids, tags, query parameters
// (taken from the metav1 option types' fields and documentation, as the
// installer does), media types and the x-kubernetes-action and
// x-kubernetes-group-version-kind extensions are kube-apiserver's. Schemas
// carry x-kubernetes-group-version-kind from the scheme, as kube-apiserver's
// definition namer does.
package openapi

//go:generate ../../scripts/gen-openapi.sh

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	coordinationv1alpha1 "github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

// The OpenAPI extensions kube-apiserver publishes.
const (
	ExtensionGVK    = "x-kubernetes-group-version-kind"
	ExtensionAction = "x-kubernetes-action"
)

// Resource is one served resource in one version.
type Resource struct {
	Group      string
	Version    string
	Resource   string // plural, e.g. "leases"
	Kind       string
	Namespaced bool
}

// GroupVersionKind is the resource's kind.
func (r Resource) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// Config says what to describe.
type Config struct {
	// Resources are the served resources, in every served version.
	Resources []Resource
	// Scheme knows the served kinds' Go types (Kind and KindList) and names
	// the kinds each type is served as, for x-kubernetes-group-version-kind.
	Scheme *runtime.Scheme
	// PatchTypes are the PATCH body media types the server accepts
	// (application/merge-patch+json, ...).
	PatchTypes []string
	// Version is the documents' info.version, e.g. "v1.32.0".
	Version string
}

// Documents are a server's OpenAPI documents.
type Documents struct {
	// V2 is the single OpenAPI v2 document (/openapi/v2).
	V2 *spec.Swagger
	// V3 maps each OpenAPI v3 document's name, its path under /openapi/v3
	// ("apis/coordination.k8s.io/v1", "apis", "api", ...), to the document.
	V3 map[string]*spec3.OpenAPI
}

// The media types kube-apiserver's operations produce.
var (
	producesObject = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	producesWatch  = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	consumesAny    = []string{"*/*"}
)

// Build builds the documents. They depend on nothing but cfg: build them
// once.
func Build(cfg Config) (*Documents, error) {
	if cfg.Scheme == nil {
		return nil, fmt.Errorf("openapi: no scheme")
	}
	b, err := newRoutes(cfg)
	if err != nil {
		return nil, err
	}
	docs := &Documents{V3: map[string]*spec3.OpenAPI{}}
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: cfg.Version}}
	unauthorized := "Unauthorized"

	namer := newNamer(cfg)
	v2 := &common.Config{
		Info:                           info,
		GetDefinitions:                 GetOpenAPIDefinitions,
		GetDefinitionName:              namer.definitionName,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: unauthorized}}},
	}
	all := make([]common.RouteContainer, len(b.containers))
	for i, c := range b.containers {
		all[i] = c
	}
	docs.V2, err = builder.BuildOpenAPISpecFromRoutes(all, v2)
	if err != nil {
		return nil, fmt.Errorf("openapi v2: %w", err)
	}

	// One v3 document per route container, as kube-apiserver has one per
	// web service. The definitions are the same for all of them.
	defs := GetOpenAPIDefinitions(func(name string) spec.Ref {
		n, _ := namer.definitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(n))
	})
	for _, c := range b.containers {
		v3 := &common.OpenAPIV3Config{
			Info:                           info,
			Definitions:                    defs,
			GetDefinitionName:              namer.definitionName,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: unauthorized}}},
		}
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, v3)
		if err != nil {
			return nil, fmt.Errorf("openapi v3 %s: %w", c.name, err)
		}
		docs.V3[c.name] = doc
	}
	return docs, nil
}

// namer names definitions as kube-apiserver does: by their OpenAPI model
// name (io.k8s.api.coordination.v1.Lease), with the kinds the type is
// served as in x-kubernetes-group-version-kind.
type namer struct {
	gvks map[string][]schema.GroupVersionKind
}

// v1alpha1Package is leasehold's copy of the published
// k8s.io/api/coordination/v1alpha1; its definitions take the published
// names.
var v1alpha1Package = reflect.TypeFor[coordinationv1alpha1.LeaseCandidate]().PkgPath()

func newNamer(cfg Config) *namer {
	groups := map[string]bool{"": true}
	for _, r := range cfg.Resources {
		groups[r.Group] = true
	}
	n := &namer{gvks: map[string][]schema.GroupVersionKind{}}
	for gvk, t := range cfg.Scheme.AllKnownTypes() {
		// Like kube-apiserver, name every external kind a type is
		// registered as, but only in the groups served here (and the
		// core group the unversioned meta types live in).
		if gvk.Version == runtime.APIVersionInternal || !groups[gvk.Group] {
			continue
		}
		name := util.GetCanonicalTypeName(reflect.New(t).Interface())
		n.gvks[name] = append(n.gvks[name], gvk)
	}
	for _, l := range n.gvks {
		sort.Slice(l, func(i, j int) bool {
			a, b := l[i], l[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
	}
	return n
}

func (n *namer) definitionName(name string) (string, spec.Extensions) {
	var ext spec.Extensions
	if gvks := n.gvks[name]; len(gvks) > 0 {
		l := make([]interface{}, len(gvks))
		for i, gvk := range gvks {
			l[i] = map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
		}
		ext = spec.Extensions{ExtensionGVK: l}
	}
	if rest, ok := strings.CutPrefix(name, v1alpha1Package+"."); ok {
		return "io.k8s.api.coordination.v1alpha1." + rest, ext
	}
	if strings.Contains(name, "/") {
		// A Go type name (path/to/pkg.Type) without a model name.
		return util.ToRESTFriendlyName(name), ext
	}
	return name, ext // a model name (io.k8s.api.coordination.v1.Lease)
}

// routes are the route containers of the documents.
type routes struct {
	cfg        Config
	containers []*container
	// query parameters of the metav1 option types, from their generated
	// definitions.
	listParams, deleteParams, createParams, updateParams, patchParams []common.Parameter
}

func newRoutes(cfg Config) (*routes, error) {
	b := &routes{cfg: cfg}
	defs := GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
	var err error
	params := func(model string, skip ...string) []common.Parameter {
		if err != nil {
			return nil
		}
		var ps []common.Parameter
		ps, err = optionParams(defs, model, skip...)
		return ps
	}
	// shardSelector is an alpha field of k8s.io/api v0.37 leasehold does
	// not implement (nor does kube-apiserver 1.32 know it).
	b.listParams = params(metav1.ListOptions{}.OpenAPIModelName(), "shardSelector")
	b.deleteParams = params(metav1.DeleteOptions{}.OpenAPIModelName())
	b.createParams = params(metav1.CreateOptions{}.OpenAPIModelName())
	b.updateParams = params(metav1.UpdateOptions{}.OpenAPIModelName())
	b.patchParams = params(metav1.PatchOptions{}.OpenAPIModelName())
	if err != nil {
		return nil, err
	}

	// Discovery, as leasehold serves it.
	b.add(&container{name: "api", root: "/api", routes: []*route{
		b.discovery("/api/", "getCoreAPIVersions", "get available API versions", []string{"core"}, &metav1.APIVersions{}),
	}})
	b.add(&container{name: "api/v1", root: "/api/v1", routes: []*route{
		b.discovery("/api/v1/", "getCoreV1APIResources", "get available resources", []string{"core_v1"}, &metav1.APIResourceList{}),
	}})
	b.add(&container{name: "apis", root: "/apis", routes: []*route{
		b.discovery("/apis/", "getAPIVersions", "get available API versions", []string{"apis"}, &metav1.APIGroupList{}),
	}})
	versionRoute := b.discovery("/version/", "getCodeVersion", "get the version information for this server", []string{"version"}, &version.Info{})
	versionRoute.produces = []string{"application/json"}
	versionRoute.consumes = []string{"application/json"}
	b.add(&container{name: "version", root: "/version", routes: []*route{versionRoute}})

	// The groups and versions, in the order first served.
	var groups []string
	versions := map[string][]string{}
	byGV := map[schema.GroupVersion][]Resource{}
	for _, r := range cfg.Resources {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		if _, ok := versions[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		if _, ok := byGV[gv]; !ok {
			versions[r.Group] = append(versions[r.Group], r.Version)
		}
		byGV[gv] = append(byGV[gv], r)
	}
	for _, g := range groups {
		gid := operationIDPart(strings.TrimSuffix(g, ".k8s.io"))
		gtag := tagPart(g)
		b.add(&container{name: "apis/" + g, root: "/apis/" + g, routes: []*route{
			b.discovery("/apis/"+g+"/", "get"+gid+"APIGroup", "get information of a group", []string{gtag}, &metav1.APIGroup{}),
		}})
		for _, v := range versions[g] {
			gv := schema.GroupVersion{Group: g, Version: v}
			prefix := gid + operationIDPart(v)
			tags := []string{gtag + "_" + v}
			c := &container{name: "apis/" + g + "/" + v, root: "/apis/" + g + "/" + v}
			c.routes = append(c.routes, b.discovery(c.root+"/", "get"+prefix+"APIResources", "get available resources", tags, &metav1.APIResourceList{}))
			for _, r := range byGV[gv] {
				rs, err := b.resource(c.root, prefix, tags, r)
				if err != nil {
					return nil, err
				}
				c.routes = append(c.routes, rs...)
			}
			b.add(c)
		}
	}
	return b, nil
}

func (b *routes) add(c *container) { b.containers = append(b.containers, c) }

func (b *routes) discovery(path, id, doc string, tags []string, model interface{}) *route {
	return &route{
		method: http.MethodGet, path: path, id: id, tags: tags, doc: doc,
		consumes: producesObject, produces: producesObject,
		responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", model}},
	}
}

// pretty is on every resource operation.
var pretty = param{name: "pretty", kind: common.QueryParameterKind, dataType: "string",
	desc: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}

// resource describes a resource's operations the way kube-apiserver's
// installer registers them.
func (b *routes) resource(root, prefix string, tags []string, r Resource) ([]*route, error) {
	gvk := r.GroupVersionKind()
	obj, err := b.cfg.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("openapi: %v: %w", gvk, err)
	}
	list, err := b.cfg.Scheme.New(gvk.GroupVersion().WithKind(r.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("openapi: %v: %w", gvk, err)
	}
	status, deleteOptions, watchEvent, patch := &metav1.Status{}, &metav1.DeleteOptions{}, &metav1.WatchEvent{}, &metav1.Patch{}
	ext := func(action string) map[string]interface{} {
		return map[string]interface{}{
			ExtensionAction: action,
			ExtensionGVK:    map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
		}
	}
	namespaced, nsPath := "", ""
	var nsParams []common.Parameter
	if r.Namespaced {
		namespaced, nsPath = "Namespaced", "/namespaces/{namespace}"
		nsParams = []common.Parameter{param{name: "namespace", kind: common.PathParameterKind, dataType: "string", required: true,
			desc: "object name and auth scope, such as for teams and projects"}}
	}
	nameParam := param{name: "name", kind: common.PathParameterKind, dataType: "string", required: true, desc: "name of the " + r.Kind}
	body := func(required bool) param {
		return param{name: "body", kind: common.BodyParameterKind, dataType: "body", required: required}
	}
	with := func(ps ...[]common.Parameter) []common.Parameter {
		out := append([]common.Parameter{}, nsParams...)
		out = append(out, pretty)
		for _, p := range ps {
			out = append(out, p...)
		}
		return out
	}
	ok := func(model interface{}) []common.StatusCodeResponse {
		return []common.StatusCodeResponse{response{http.StatusOK, "OK", model}}
	}
	written := func(model interface{}, codes ...int) []common.StatusCodeResponse {
		out := ok(model)
		for _, c := range codes {
			out = append(out, response{c, http.StatusText(c), model})
		}
		return out
	}
	listNoWatch := without(b.listParams, "watch", "allowWatchBookmarks")
	collection := root + nsPath + "/" + r.Resource
	item := collection + "/{name}"
	rs := []*route{
		{method: http.MethodGet, path: collection, id: "list" + prefix + namespaced + r.Kind, doc: "list or watch objects of kind " + r.Kind,
			params: with(b.listParams), produces: producesWatch, consumes: consumesAny, responses: ok(list), meta: ext("list")},
		{method: http.MethodPost, path: collection, id: "create" + prefix + namespaced + r.Kind, doc: "create a " + r.Kind,
			params: with(b.createParams, []common.Parameter{body(true)}), reqSample: obj, produces: producesObject, consumes: consumesAny,
			responses: written(obj, http.StatusCreated, http.StatusAccepted), meta: ext("post")},
		{method: http.MethodDelete, path: collection, id: "delete" + prefix + "Collection" + namespaced + r.Kind, doc: "delete collection of " + r.Kind,
			params: with(b.deleteParams, listNoWatch, []common.Parameter{body(false)}), reqSample: deleteOptions, produces: producesObject, consumes: consumesAny,
			responses: ok(status), meta: ext("deletecollection")},
		{method: http.MethodGet, path: item, id: "read" + prefix + namespaced + r.Kind, doc: "read the specified " + r.Kind,
			params: with([]common.Parameter{nameParam}), produces: producesObject, consumes: consumesAny, responses: ok(obj), meta: ext("get")},
		{method: http.MethodPut, path: item, id: "replace" + prefix + namespaced + r.Kind, doc: "replace the specified " + r.Kind,
			params: with([]common.Parameter{nameParam}, b.updateParams, []common.Parameter{body(true)}), reqSample: obj, produces: producesObject, consumes: consumesAny,
			responses: written(obj, http.StatusCreated), meta: ext("put")},
		{method: http.MethodPatch, path: item, id: "patch" + prefix + namespaced + r.Kind, doc: "partially update the specified " + r.Kind,
			params: with([]common.Parameter{nameParam}, b.patchParams, []common.Parameter{body(true)}), reqSample: patch, produces: producesObject, consumes: b.cfg.PatchTypes,
			responses: written(obj, http.StatusCreated), meta: ext("patch")},
		{method: http.MethodDelete, path: item, id: "delete" + prefix + namespaced + r.Kind, doc: "delete a " + r.Kind,
			params: with([]common.Parameter{nameParam}, b.deleteParams, []common.Parameter{body(false)}), reqSample: deleteOptions, produces: producesObject, consumes: consumesAny,
			responses: written(status, http.StatusAccepted), meta: ext("delete")},
		// The deprecated watch paths.
		{method: http.MethodGet, path: root + "/watch" + nsPath + "/" + r.Resource, id: "watch" + prefix + namespaced + r.Kind + "List",
			doc:    "watch individual changes to a list of " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
			params: with(b.listParams), produces: producesWatch, consumes: consumesAny, responses: ok(watchEvent), meta: ext("watchlist")},
		{method: http.MethodGet, path: root + "/watch" + nsPath + "/" + r.Resource + "/{name}", id: "watch" + prefix + namespaced + r.Kind,
			doc:    "watch changes to an object of kind " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
			params: with([]common.Parameter{nameParam}, b.listParams), produces: producesWatch, consumes: consumesAny, responses: ok(watchEvent), meta: ext("watch")},
	}
	if r.Namespaced {
		// Across namespaces: list, and the deprecated watch.
		rs = append(rs,
			&route{method: http.MethodGet, path: root + "/" + r.Resource, id: "list" + prefix + r.Kind + "ForAllNamespaces", doc: "list or watch objects of kind " + r.Kind,
				params: append([]common.Parameter{pretty}, b.listParams...), produces: producesWatch, consumes: consumesAny, responses: ok(list), meta: ext("list")},
			&route{method: http.MethodGet, path: root + "/watch/" + r.Resource, id: "watch" + prefix + r.Kind + "ListForAllNamespaces",
				doc:    "watch individual changes to a list of " + r.Kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
				params: append([]common.Parameter{pretty}, b.listParams...), produces: producesWatch, consumes: consumesAny, responses: ok(watchEvent), meta: ext("watchlist")},
		)
	}
	for _, rt := range rs {
		rt.tags = tags
	}
	return rs, nil
}

// optionParams are the query parameters of an option type (ListOptions,
// ...): its fields of simple type, described by their documentation, as
// kube-apiserver's installer adds them.
func optionParams(defs map[string]common.OpenAPIDefinition, model string, skip ...string) ([]common.Parameter, error) {
	def, ok := defs[model]
	if !ok {
		return nil, fmt.Errorf("openapi: no definition of %s", model)
	}
	var out []common.Parameter
	for name, prop := range def.Schema.Properties {
		if name == "kind" || name == "apiVersion" || contains(skip, name) {
			continue
		}
		var typ string
		switch {
		case prop.Type.Contains("array") && prop.Items != nil && prop.Items.Schema != nil && prop.Items.Schema.Type.Contains("string"):
			typ = "string" // dryRun: repeated
		case prop.Type.Contains("string"), prop.Type.Contains("integer"), prop.Type.Contains("boolean"):
			typ = prop.Type[0]
		default:
			continue // structured (preconditions): body only
		}
		out = append(out, param{name: name, kind: common.QueryParameterKind, dataType: typ, desc: prop.Description})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func without(ps []common.Parameter, names ...string) []common.Parameter {
	var out []common.Parameter
	for _, p := range ps {
		if !contains(names, p.Name()) {
			out = append(out, p)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// operationIDPart is kube-apiserver's ToValidOperationID with a capital
// first letter: "coordination" -> "Coordination", "v1beta1" -> "V1beta1",
// "rbac.authorization" -> "RbacAuthorization".
func operationIDPart(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// tagPart is a group's tag: "coordination.k8s.io" -> "coordination",
// "rbac.authorization.k8s.io" -> "rbacAuthorization".
func tagPart(group string) string {
	p := operationIDPart(strings.TrimSuffix(group, ".k8s.io"))
	if p == "" {
		return p
	}
	return strings.ToLower(p[:1]) + p[1:]
}

func operationIDAndTags(r common.Route) (string, []string, error) {
	rt, ok := r.(*route)
	if !ok {
		return "", nil, fmt.Errorf("openapi: unexpected route %T", r)
	}
	return rt.id, rt.tags, nil
}

// container is one document's routes: kube-apiserver's web service.
type container struct {
	name   string // the v3 document's name
	root   string
	routes []*route
}

func (c *container) RootPath() string                   { return c.root }
func (c *container) PathParameters() []common.Parameter { return nil }
func (c *container) Routes() []common.Route {
	out := make([]common.Route, len(c.routes))
	for i, r := range c.routes {
		out[i] = r
	}
	return out
}

// route is one operation.
type route struct {
	method, path, id, doc string
	tags                  []string
	params                []common.Parameter
	consumes, produces    []string
	meta                  map[string]interface{}
	reqSample             interface{}
	responses             []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.id }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.doc }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.meta }
func (r *route) RequestPayloadSample() interface{}                { return r.reqSample }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

type response struct {
	code    int
	message string
	model   interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.message }
func (r response) Model() interface{} { return r.model }

type param struct {
	name, desc, dataType string
	kind                 common.ParameterKind
	required             bool
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.desc }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return false }
