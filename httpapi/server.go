package httpapi

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/registry"
	"github.com/leasehold/leasehold/ui"
)

// The defaults of kube-apiserver's --request-timeout and etcd's
// --max-request-bytes.
const (
	DefaultRequestTimeout        = time.Minute
	DefaultMaxRequestBytes int64 = 1572864
)

// Config configures a Server.
type Config struct {
	Node   *cluster.Node
	Store  *registry.Store
	Logger hclog.Logger
	// Registerer receives the API's metrics; Gatherer serves /metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// WriteTimeout bounds how long a write waits for a leader.
	WriteTimeout time.Duration
	// Elections, if set, is served as JSON at GET /cluster/elections (the
	// coordinated leader election controller's status); nil means 404.
	Elections func() any
	// Authenticator and Authorizer guard every request but the health
	// checks. Nil: every request is anonymous, and everything is allowed.
	Authenticator *auth.Authenticator
	Authorizer    auth.Authorizer
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the
	// requests under way (watches excepted); beyond them a request gets 429.
	// Zero is no limit.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// RequestTimeout bounds a request that is not a watch
	// (--request-timeout); zero is DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRequestBytes is the largest object one write may store
	// (--max-request-bytes); zero is DefaultMaxRequestBytes.
	MaxRequestBytes int64
}

// Server is the Kubernetes REST API of one node, plus its health and
// cluster endpoints.
type Server struct {
	node         *cluster.Node
	store        *registry.Store
	logger       hclog.Logger
	writeTimeout time.Duration
	router       *mux.Router
	handler      http.Handler
	authn        *auth.Authenticator
	authz        auth.Authorizer
	inflight     *inflight
	// requestTimeout bounds a request that is not a watch, and how long
	// any answer may wait to be written (--request-timeout).
	requestTimeout time.Duration
	// maxRequestBytes is the largest object one write may store
	// (--max-request-bytes).
	maxRequestBytes int64
	metrics         *metrics
	elections       func() any
	// watchStreams is the number of open watch streams, which share a
	// budget of writes (see flushInterval).
	watchStreams atomic.Int64
}

// New builds the API and registers it with the node as the handler of
// writes forwarded by followers.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	limitJSONPatchCopies(cfg.MaxRequestBytes)
	if cfg.Registerer == nil || cfg.Gatherer == nil {
		reg := prometheus.NewRegistry()
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	if cfg.Authenticator == nil {
		cfg.Authenticator, _ = auth.NewAuthenticator(auth.Config{})
	}
	if cfg.Authorizer == nil {
		cfg.Authorizer, _ = auth.NewAuthorizer(auth.ModeAlwaysAllow, nil)
	}
	s := &Server{
		node: cfg.Node, store: cfg.Store, logger: cfg.Logger, writeTimeout: cfg.WriteTimeout,
		requestTimeout: cfg.RequestTimeout, maxRequestBytes: cfg.MaxRequestBytes,
		metrics: newMetrics(cfg.Registerer), elections: cfg.Elections,
		authn: cfg.Authenticator, authz: cfg.Authorizer,
		inflight: newInflight(cfg.MaxRequestsInflight, cfg.MaxMutatingRequestsInflight),
	}
	s.router = s.routes(cfg.Gatherer)
	s.handler = s.withRequestTimeout(responseHeaders(s.refuseForgedRequests(s.guard(s.router))))
	cfg.Node.SetForwardHandler(s.serveForwarded)
	return s
}

// Handler is the HTTP handler of the API address.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) routes(g prometheus.Gatherer) *mux.Router {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "404 page not found", http.StatusNotFound)
	})
	// gorilla/mux tries routes in the order they were added, one regexp
	// each, until one matches: the API group's goes first, and in it the
	// object and collection routes that nearly every request takes. No two
	// of these routes match the same path, so the order changes nothing
	// else.
	grp := r.PathPrefix("/apis/{group:" + groupPattern() + "}").Subrouter()
	grp.Use(s.metrics.instrument)
	grp.HandleFunc("/{version}/namespaces/{namespace}/{resource}/{name}", s.item)
	grp.HandleFunc("/{version}/namespaces/{namespace}/{resource}", s.namespacedCollection)
	grp.HandleFunc("/{version}/{resource}", s.clusterCollection)
	grp.HandleFunc("", s.group)
	grp.HandleFunc("/", s.group)
	grp.HandleFunc("/{version}", s.versionResources)
	grp.HandleFunc("/{version}/watch/namespaces/{namespace}/{resource}/{name}", s.deprecatedWatch)
	grp.HandleFunc("/{version}/watch/namespaces/{namespace}/{resource}", s.deprecatedWatch)
	grp.HandleFunc("/{version}/watch/{resource}/{name}", s.deprecatedWatch)
	grp.HandleFunc("/{version}/watch/{resource}", s.deprecatedWatch)
	grp.HandleFunc("/{version}/{resource}/{name}", s.item)
	grp.PathPrefix("/{version}/").HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if servedVersion(req) {
			s.writeError(w, req, notFound())
			return
		}
		r.NotFoundHandler.ServeHTTP(w, req)
	})

	r.HandleFunc("/{endpoint:livez|readyz|healthz}", s.health)
	r.HandleFunc("/{endpoint:livez|readyz|healthz}/{check:.+}", s.healthCheck)
	r.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	r.HandleFunc("/cluster/status", s.clusterStatus)
	r.HandleFunc("/cluster/snapshot", s.clusterSnapshot)
	s.routeMembers(r)
	r.HandleFunc("/cluster/elections", s.clusterElections)
	r.PathPrefix("/ui").Handler(ui.Handler())

	r.HandleFunc("/version", s.version)
	r.HandleFunc("/api", s.coreVersions)
	r.HandleFunc("/api/v1", s.coreResources)
	r.HandleFunc("/api/v1/namespaces/{namespace}", s.namespace).Methods(http.MethodGet)
	r.HandleFunc("/apis", s.groupList)
	for _, g := range reviewGroups {
		r.HandleFunc("/apis/"+g.group, s.reviewGroup(g.group))
		r.HandleFunc("/apis/"+g.group+"/v1", s.reviewResources(g.group))
	}
	r.HandleFunc("/apis/authentication.k8s.io/v1/selfsubjectreviews", s.selfSubjectReview)
	r.HandleFunc("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", s.selfSubjectAccessReview)
	r.HandleFunc("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", s.selfSubjectRulesReview)
	openAPIv2, openAPIv3, openAPIv3Doc := openAPIHandlers(r.NotFoundHandler)
	r.Handle("/openapi/v2", openAPIv2)
	r.Handle("/openapi/v3", openAPIv3)
	r.PathPrefix("/openapi/v3/").Handler(openAPIv3Doc)
	return r
}

// groupPattern matches the served API groups in a route.
func groupPattern() string {
	var alts []string
	for _, g := range registry.Groups() {
		alts = append(alts, regexp.QuoteMeta(g))
	}
	return strings.Join(alts, "|")
}

// resourceFor finds the served resource named in the URL, or answers 404
// the way kube-apiserver does: a namespaced path names a namespaced
// resource, and a path without a namespace a cluster-scoped one (or all
// namespaces of a namespaced one, for a collection).
func (s *Server) resourceFor(w http.ResponseWriter, req *http.Request) (*registry.Resource, bool) {
	vars := mux.Vars(req)
	if !servedVersion(req) {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return nil, false
	}
	res, ok := registry.Lookup(vars["group"], vars["version"], vars["resource"])
	_, namespaced := vars["namespace"]
	if !ok || (namespaced && !res.Namespaced) || (vars["name"] != "" && !namespaced && res.Namespaced) {
		s.writeError(w, req, notFound())
		return nil, false
	}
	return res, true
}

// servedVersion reports whether the URL's group version is served.
func servedVersion(req *http.Request) bool {
	vars := mux.Vars(req)
	return registry.ServesVersion(vars["group"], vars["version"])
}

func notAllowed(w http.ResponseWriter, allow ...string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
}

func (s *Server) namespacedCollection(w http.ResponseWriter, req *http.Request) {
	res, ok := s.resourceFor(w, req)
	if !ok {
		return
	}
	ns := mux.Vars(req)["namespace"]
	switch req.Method {
	case http.MethodGet:
		s.list(w, req, res, ns)
	case http.MethodPost:
		s.create(w, req, res, ns)
	case http.MethodDelete:
		s.deleteCollection(w, req, res, ns)
	default:
		notAllowed(w, "GET", "POST", "DELETE")
		s.writeError(w, req, methodNotAllowed())
	}
}

// clusterCollection is a namespaced resource across all namespaces (list
// only), or a cluster-scoped resource's collection.
func (s *Server) clusterCollection(w http.ResponseWriter, req *http.Request) {
	res, ok := s.resourceFor(w, req)
	if !ok {
		return
	}
	if !res.Namespaced {
		s.namespacedCollection(w, req)
		return
	}
	if req.Method != http.MethodGet {
		notAllowed(w, "GET")
		s.writeError(w, req, methodNotAllowed())
		return
	}
	s.list(w, req, res, "")
}

func (s *Server) item(w http.ResponseWriter, req *http.Request) {
	res, ok := s.resourceFor(w, req)
	if !ok {
		return
	}
	ns, name := mux.Vars(req)["namespace"], mux.Vars(req)["name"]
	switch req.Method {
	case http.MethodGet:
		s.get(w, req, res, ns, name)
	case http.MethodPut:
		s.update(w, req, res, ns, name)
	case http.MethodPatch:
		s.patch(w, req, res, ns, name)
	case http.MethodDelete:
		s.delete(w, req, res, ns, name)
	default:
		notAllowed(w, "GET", "PUT", "PATCH", "DELETE")
		s.writeError(w, req, methodNotAllowed())
	}
}
