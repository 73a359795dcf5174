package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/openapi"
	"github.com/leasehold/leasehold/registry"
)

// servedPatchTypes are the PATCH bodies the server accepts (see patch).
var servedPatchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

// openAPIService serves /openapi/v2 and /openapi/v3 with kube-openapi's
// handlers, as kube-apiserver does: ETags, 304 on If-None-Match, the v2
// protobuf form, and v3 documents addressed by hash that clients may cache
// forever.
type openAPIService struct {
	v2     http.Handler
	v3     *handler3.OpenAPIService
	v3Docs map[string]bool
}

// openAPI is built once: the documents depend on nothing but the served
// resources, and every server in the process serves the same.
var openAPI = sync.OnceValues(func() (*openAPIService, error) {
	cfg := openapi.Config{
		Scheme:     apis.Scheme,
		PatchTypes: servedPatchTypes,
		Version:    "v" + kubeMajor + "." + kubeMinor + ".0+leasehold",
	}
	for _, r := range registry.Served() {
		cfg.Resources = append(cfg.Resources, openapi.Resource{
			Group: r.Group, Version: r.Version, Resource: r.Name, Kind: r.Kind, Namespaced: r.Namespaced,
		})
	}
	docs, err := openapi.Build(cfg)
	if err != nil {
		return nil, err
	}
	o := &openAPIService{v3: handler3.NewOpenAPIService(), v3Docs: map[string]bool{}}
	var reg capturePath
	handler.NewOpenAPIService(docs.V2).RegisterOpenAPIVersionedService("/openapi/v2", &reg)
	o.v2 = reg.h
	for name, doc := range docs.V3 {
		o.v3.UpdateGroupVersion(name, doc)
		o.v3Docs[name] = true
	}
	// Encode everything now rather than on the first request: the v3 root
	// hashes every document, and v2 is encoded as JSON and protobuf.
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/openapi/v3", nil),
		httptest.NewRequest(http.MethodGet, "/openapi/v2", nil),
	} {
		rec := httptest.NewRecorder()
		if strings.HasSuffix(req.URL.Path, "v3") {
			o.v3.HandleDiscovery(rec, req)
		} else {
			req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
			o.v2.ServeHTTP(rec, req)
		}
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("openapi: %s answers %d", req.URL.Path, rec.Code)
		}
	}
	return o, nil
})

// capturePath takes the handler kube-openapi registers.
type capturePath struct{ h http.Handler }

func (c *capturePath) Handle(_ string, h http.Handler) { c.h = h }

// openAPIHandlers returns the handlers of /openapi/v2, /openapi/v3 and
// /openapi/v3/{document}; notFound answers unknown documents.
func openAPIHandlers(notFound http.Handler) (v2, v3, v3Doc http.Handler) {
	o, err := openAPI()
	if err != nil {
		// The documents are built from compiled-in types: this is a bug.
		panic(err)
	}
	v3Doc = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !o.v3Docs[strings.TrimPrefix(req.URL.Path, "/openapi/v3/")] {
			notFound.ServeHTTP(w, req)
			return
		}
		o.v3.HandleGroupVersion(w, req)
	})
	return o.v2, http.HandlerFunc(o.v3.HandleDiscovery), v3Doc
}
