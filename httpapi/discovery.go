package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	goruntime "runtime"
	"runtime/debug"
	"sort"

	"github.com/gorilla/mux"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"

	"github.com/leasehold/leasehold/registry"
)

// The Kubernetes version leasehold reports. kubectl's dispatcher picks the
// kubectl release matching the minor version, so it must be one kubectl
// ships: 1.32 is the release the API is modelled on.
const (
	kubeMajor = "1"
	kubeMinor = "32"
)

// verbs every served resource supports.
var verbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// writeDiscovery answers a discovery document in the negotiated encoding.
func (s *Server) writeDiscovery(w http.ResponseWriter, req *http.Request, obj runtime.Object) {
	out, err := negotiate(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	out.write(w, http.StatusOK, obj)
}

func (s *Server) version(w http.ResponseWriter, req *http.Request) {
	commit := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				commit = st.Value
			}
		}
	}
	info := version.Info{
		Major: kubeMajor, Minor: kubeMinor,
		GitVersion:   "v" + kubeMajor + "." + kubeMinor + ".0+leasehold",
		GitCommit:    commit,
		GitTreeState: "clean",
		GoVersion:    goruntime.Version(),
		Compiler:     goruntime.Compiler,
		Platform:     goruntime.GOOS + "/" + goruntime.GOARCH,
	}
	writeJSON(w, req, http.StatusOK, info)
}

func (s *Server) coreVersions(w http.ResponseWriter, req *http.Request) {
	if s.aggregated(w, req, true) {
		return
	}
	host, _, err := net.SplitHostPort(req.Host)
	if err != nil {
		host = req.Host
	}
	s.writeDiscovery(w, req, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: net.JoinHostPort(host, serverPort(req))},
		},
	})
}

func serverPort(req *http.Request) string {
	if _, port, err := net.SplitHostPort(req.Host); err == nil {
		return port
	}
	return "80"
}

// coreResources is the core group's resource list: leasehold serves none of
// it, but kubectl fetches it and gives up if it is missing.
func (s *Server) coreResources(w http.ResponseWriter, req *http.Request) {
	s.writeDiscovery(w, req, &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{},
	})
}

// namespace answers GET /api/v1/namespaces/{namespace}. Leasehold has no
// Namespace objects: every namespace exists, so any valid name is an active
// namespace. kubectl asks after a namespaced object is not found, and a 404
// here would replace its "<resource> "x" not found" with "the server could
// not find the requested resource".
func (s *Server) namespace(w http.ResponseWriter, req *http.Request) {
	name := mux.Vars(req)["namespace"]
	if len(validation.IsDNS1123Label(name)) > 0 {
		s.writeError(w, req, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name))
		return
	}
	writeJSON(w, req, http.StatusOK, &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{corev1.LabelMetadataName: name},
		},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	})
}

// servedVersions lists the group's versions, preferred first.
func servedVersions(group string) []metav1.GroupVersionForDiscovery {
	seen := map[string]bool{}
	var out []metav1.GroupVersionForDiscovery
	for _, r := range registry.Served() {
		if r.Group == group && !seen[r.Version] {
			seen[r.Version] = true
			out = append(out, metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + r.Version, Version: r.Version})
		}
	}
	sort.Slice(out, func(i, j int) bool { return versionPriority(out[i].Version) < versionPriority(out[j].Version) })
	return out
}

// versionPriority orders versions as kube-apiserver lists them: v1,
// v1beta1, v1alpha2, v1alpha1.
func versionPriority(v string) int {
	switch v {
	case "v1":
		return 0
	case "v1beta1":
		return 1
	case "v1alpha2":
		return 2
	case "v1alpha1":
		return 3
	}
	return 4
}

func apiGroup(group string) metav1.APIGroup {
	versions := servedVersions(group)
	return metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:             group,
		Versions:         versions,
		PreferredVersion: versions[0],
	}
}

func (s *Server) groupList(w http.ResponseWriter, req *http.Request) {
	if s.aggregated(w, req, false) {
		return
	}
	var groups []metav1.APIGroup
	for _, name := range registry.Groups() {
		g := apiGroup(name)
		g.TypeMeta = metav1.TypeMeta{}
		groups = append(groups, g)
	}
	s.writeDiscovery(w, req, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   append(groups, reviewAPIGroups()...),
	})
}

func (s *Server) group(w http.ResponseWriter, req *http.Request) {
	g := apiGroup(mux.Vars(req)["group"])
	s.writeDiscovery(w, req, &g)
}

func (s *Server) versionResources(w http.ResponseWriter, req *http.Request) {
	group, v := mux.Vars(req)["group"], mux.Vars(req)["version"]
	if !servedVersion(req) {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: group + "/" + v,
		APIResources: []metav1.APIResource{},
	}
	for _, r := range registry.Served() {
		if r.Group != group || r.Version != v {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Name, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind,
			Verbs: verbs, StorageVersionHash: r.StorageVersionHash,
		})
	}
	sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	s.writeDiscovery(w, req, list)
}

// aggregated answers /api or /apis with aggregated discovery when the
// client asks for it (Accept ...;as=APIGroupDiscoveryList); client-go and
// kubectl then skip the per-version documents. It reports whether it
// answered.
func (s *Server) aggregated(w http.ResponseWriter, req *http.Request, core bool) bool {
	out, err := negotiate(req, forDiscovery...)
	if err != nil || out.as.Kind == "" {
		return false
	}
	list := &apidiscoveryv2.APIGroupDiscoveryList{}
	if core {
		// leasehold serves nothing of the core group, but clients expect
		// its version.
		list.Items = []apidiscoveryv2.APIGroupDiscovery{{
			Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1", Resources: []apidiscoveryv2.APIResourceDiscovery{}, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}},
		}}
	} else {
		for _, name := range registry.Groups() {
			g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}}
			for _, v := range servedVersions(name) {
				vd := apidiscoveryv2.APIVersionDiscovery{Version: v.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
				for _, r := range registry.Served() {
					if r.Group != name || r.Version != v.Version {
						continue
					}
					scope := apidiscoveryv2.ScopeNamespace
					if !r.Namespaced {
						scope = apidiscoveryv2.ScopeCluster
					}
					vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
						Resource:         r.Name,
						ResponseKind:     &metav1.GroupVersionKind{Kind: r.Kind},
						Scope:            scope,
						SingularResource: r.Singular,
						Verbs:            verbs,
					})
				}
				sort.Slice(vd.Resources, func(i, j int) bool { return vd.Resources[i].Resource < vd.Resources[j].Resource })
				g.Versions = append(g.Versions, vd)
			}
			list.Items = append(list.Items, g)
		}
		list.Items = append(list.Items, reviewDiscovery()...)
	}
	// v2beta1 has the same shape; only the apiVersion differs.
	list.TypeMeta = metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + out.as.Version}
	var buf bytes.Buffer
	if err := out.encoder().Encode(list, &buf); err != nil {
		s.writeError(w, req, err)
		return true
	}
	// Clients cache discovery and revalidate with If-None-Match.
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Vary", "Accept")
	if req.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	w.Header().Set("Content-Type", fmt.Sprintf("%s;g=%s;v=%s;as=%s", out.info.MediaType, out.as.Group, out.as.Version, out.as.Kind))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return true
}
