package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's request metrics, named as kube-apiserver names
// them so existing dashboards work. Labels are bounded: verbs, served
// versions and resources, status codes.
type metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longrunning *prometheus.GaugeVec
	watchExpiry prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, group, version, resource and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, group, version and resource.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource"}),
		longrunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests (watches) broken out by verb, group, version and resource.",
		}, []string{"verb", "group", "version", "resource"}),
		watchExpiry: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "leasehold_watch_expired_total",
			Help: "Watches ended with 410 Expired because the event history no longer held what they had not read (slow or stale watchers).",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.longrunning, m.watchExpiry)
	return m
}

// statusRecorder remembers the response code; it keeps http.Flusher, and
// through Unwrap the connection takeover, for watch streams.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// requestVerb is kube-apiserver's metrics verb for a resource request.
func requestVerb(req *http.Request, named bool) string {
	switch req.Method {
	case http.MethodGet:
		if isWatchPath(req) {
			return "WATCH"
		}
		if named {
			return "GET" // ?watch on a named object is a plain get
		}
		if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
			return "WATCH"
		}
		return "LIST"
	case http.MethodDelete:
		if named {
			return "DELETE"
		}
		return "DELETECOLLECTION"
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return req.Method
	}
	return "OTHER"
}

// isWatchPath tells the deprecated /watch/... routes.
func isWatchPath(req *http.Request) bool {
	route := mux.CurrentRoute(req)
	if route == nil {
		return false
	}
	tpl, err := route.GetPathTemplate()
	return err == nil && strings.Contains(tpl, "/watch/")
}

// instrument records every request to a served resource.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		vars := mux.Vars(req)
		res := vars["resource"]
		group, version := vars["group"], vars["version"]
		if res == "" || !servedVersion(req) {
			next.ServeHTTP(w, req)
			return
		}
		verb := requestVerb(req, vars["name"] != "")
		if verb == "WATCH" {
			g := m.longrunning.WithLabelValues(verb, group, version, res)
			g.Inc()
			defer g.Dec()
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		m.requests.WithLabelValues(verb, group, version, res, strconv.Itoa(rec.code)).Inc()
		if verb != "WATCH" {
			m.duration.WithLabelValues(verb, group, version, res).Observe(time.Since(start).Seconds())
		}
	})
}
