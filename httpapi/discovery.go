package httpapi

import (
	"net"
	"net/http"
	goruntime "runtime"
	"runtime/debug"
	"sort"

	"github.com/gorilla/mux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"github.com/leasehold/leasehold/apis"
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

// servedVersions lists the group's versions, preferred first.
func servedVersions() []metav1.GroupVersionForDiscovery {
	seen := map[string]bool{}
	var out []metav1.GroupVersionForDiscovery
	for _, r := range registry.Served() {
		if !seen[r.Version] {
			seen[r.Version] = true
			out = append(out, metav1.GroupVersionForDiscovery{GroupVersion: apis.Group + "/" + r.Version, Version: r.Version})
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

func apiGroup() metav1.APIGroup {
	versions := servedVersions()
	return metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:             apis.Group,
		Versions:         versions,
		PreferredVersion: versions[0],
	}
}

func (s *Server) groupList(w http.ResponseWriter, req *http.Request) {
	g := apiGroup()
	g.TypeMeta = metav1.TypeMeta{}
	s.writeDiscovery(w, req, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   []metav1.APIGroup{g},
	})
}

func (s *Server) group(w http.ResponseWriter, req *http.Request) {
	g := apiGroup()
	s.writeDiscovery(w, req, &g)
}

func (s *Server) versionResources(w http.ResponseWriter, req *http.Request) {
	v := mux.Vars(req)["version"]
	if !servedVersion(v) {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: apis.Group + "/" + v,
		APIResources: []metav1.APIResource{},
	}
	for _, r := range registry.Served() {
		if r.Version != v {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Name, SingularName: r.Singular, Namespaced: true, Kind: r.Kind,
			Verbs: verbs, StorageVersionHash: r.StorageVersionHash,
		})
	}
	sort.Slice(list.APIResources, func(i, j int) bool { return list.APIResources[i].Name < list.APIResources[j].Name })
	s.writeDiscovery(w, req, list)
}
