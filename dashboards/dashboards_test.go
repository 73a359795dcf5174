package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/registry"
	"github.com/leasehold/leasehold/transport"
)

// dashboard is the part of Grafana's dashboard JSON the test reads.
type dashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string     `json:"name"`
			Definition string     `json:"definition"`
			Datasource datasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource datasource `json:"datasource"`
	Targets    []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// query is one PromQL expression and the panel it belongs to.
type query struct{ panel, expr string }

func loadDashboard(t *testing.T) (dashboard, []query) {
	t.Helper()
	b, err := os.ReadFile("leasehold.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("leasehold.json: %v", err)
	}
	var qs []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, query{p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, qs
}

// TestDashboardImportable checks what Grafana's import needs: the
// datasource as an input every panel uses, and the instance variable.
func TestDashboardImportable(t *testing.T) {
	d, qs := loadDashboard(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs: want one prometheus datasource DS_PROMETHEUS, got %+v", d.Inputs)
	}
	const ds = "${DS_PROMETHEUS}"
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type != "row" && p.Datasource.UID != ds {
				t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, ds)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	var hasInstance bool
	for _, v := range d.Templating.List {
		if v.Name == "instance" {
			hasInstance = v.Datasource.UID == ds
		}
	}
	if !hasInstance {
		t.Errorf("no instance variable on %s", ds)
	}
	if len(qs) == 0 {
		t.Fatal("no queries")
	}
	for _, q := range qs {
		if !strings.Contains(q.expr, `instance=~"$instance"`) {
			t.Errorf("panel %q: query ignores $instance: %s", q.panel, q.expr)
		}
	}
}

// PromQL is scanned, not parsed: the dashboard's queries are plain
// selectors inside functions and aggregations, and a name the scan gets
// wrong fails the test rather than passing it.
var (
	selectorRE  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRE   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
	stripRE     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|\{[^}]*\}|\[[^\]]*\]|\$\{?\w+\}?|\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`)
	groupingRE  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRE     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	labelValsRE = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
	keywords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true}
)

// metricNames returns the series names an expression reads.
func metricNames(expr string) []string {
	s := stripRE.ReplaceAllString(expr, " ")
	s = groupingRE.ReplaceAllString(s, " ")
	var names []string
	for _, m := range identRE.FindAllStringSubmatch(s, -1) {
		if m[1] != "" || keywords[m[0]] { // a function call or an operator
			continue
		}
		names = append(names, m[0])
	}
	return names
}

// matcher is one label matcher of a selector.
type matcher struct{ metric, label, op, value string }

func matchers(expr string) []matcher {
	var out []matcher
	for _, sel := range selectorRE.FindAllStringSubmatch(expr, -1) {
		for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			out = append(out, matcher{sel[1], m[1], m[2], m[3]})
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.99, sum by (verb, le) (rate(apiserver_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval]))) / on (instance) leasehold_raft_term * 2`)
	want := []string{"apiserver_request_duration_seconds_bucket", "leasehold_raft_term"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metricNames: got %v, want %v", got, want)
	}
}

// series indexes what a cluster exports: every queryable series name
// (histograms as _bucket, _sum, _count; summaries also bare, with a
// quantile label) with the label values seen on it.
type series map[string]map[string]map[string]bool

func (s series) add(name string, labels map[string]string) {
	if s[name] == nil {
		s[name] = map[string]map[string]bool{}
	}
	for k, v := range labels {
		if s[name][k] == nil {
			s[name][k] = map[string]bool{}
		}
		s[name][k][v] = true
	}
}

func (s series) addFamily(mf *dto.MetricFamily) {
	name := mf.GetName()
	for _, m := range mf.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		with := func(k, v string) map[string]string {
			out := map[string]string{k: v}
			for lk, lv := range labels {
				out[lk] = lv
			}
			return out
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			for _, b := range m.GetHistogram().Bucket {
				s.add(name+"_bucket", with("le", fmt.Sprint(b.GetUpperBound())))
			}
			s.add(name+"_bucket", with("le", "+Inf"))
			s.add(name+"_sum", labels)
			s.add(name+"_count", labels)
		case dto.MetricType_SUMMARY:
			for _, q := range m.GetSummary().Quantile {
				s.add(name, with("quantile", fmt.Sprint(q.GetQuantile())))
			}
			s.add(name+"_sum", labels)
			s.add(name+"_count", labels)
		default:
			s.add(name, labels)
		}
	}
}

// problems lists what the queries use that s lacks. instance and job are
// Prometheus' target labels, not the node's.
func (s series) problems(qs []query) []string {
	var out []string
	for _, q := range qs {
		for _, name := range metricNames(q.expr) {
			if s[name] == nil {
				out = append(out, fmt.Sprintf("panel %q: no series %s", q.panel, name))
			}
		}
		for _, m := range matchers(q.expr) {
			if m.label == "instance" || m.label == "job" || s[m.metric] == nil {
				continue
			}
			vals := s[m.metric][m.label]
			switch {
			case vals == nil:
				out = append(out, fmt.Sprintf("panel %q: %s has no label %s", q.panel, m.metric, m.label))
			case m.op == "=" && !vals[m.value]:
				out = append(out, fmt.Sprintf("panel %q: %s has no %s=%q", q.panel, m.metric, m.label, m.value))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestDashboardMetricsExist runs a three-node cluster in-process, wired as
// cmd/leasehold wires a node's metrics, drives a little traffic through it
// and checks that every series and label value the dashboard queries is
// exported by some node.
func TestDashboardMetricsExist(t *testing.T) {
	d, qs := loadDashboard(t)
	for _, v := range d.Templating.List {
		if m := labelValsRE.FindStringSubmatch(v.Definition); m != nil {
			qs = append(qs, query{"variable " + v.Name, m[1]})
		}
	}

	nodes := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A write and a linearizable read on every node: on followers the write
	// is forwarded and the read asks the leader for a read index.
	for i, n := range nodes {
		body := fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"dash-%d"},"spec":{"holderIdentity":"me"}}`, i)
		do(ctx, t, http.MethodPost, n.url+"/apis/coordination.k8s.io/v1/namespaces/default/leases", body, http.StatusCreated)
		do(ctx, t, http.MethodGet, n.url+"/apis/coordination.k8s.io/v1/namespaces/default/leases", "", http.StatusOK)
	}
	// A watch that ends by itself, for the long-running request gauge.
	do(ctx, t, http.MethodGet, nodes[0].url+"/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=true&timeoutSeconds=1", "", http.StatusOK)

	// Some of raft's metrics appear only after a while (the leader's lease
	// check reports lastContact); wait for them, within the context.
	var problems []string
	for {
		s := series{}
		for _, n := range nodes {
			mfs, err := n.reg.Gather()
			if err != nil {
				t.Fatalf("gather %s: %v", n.name, err)
			}
			for _, mf := range mfs {
				s.addFamily(mf)
			}
		}
		if problems = s.problems(qs); len(problems) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the dashboard queries what no node exports:\n%s", strings.Join(problems, "\n"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type testNode struct {
	name, url string
	reg       *prometheus.Registry
}

// startCluster starts three nodes, each with its own registry as the
// binary has; the process-wide raft bridge goes into the first one.
func startCluster(t *testing.T) []*testNode {
	t.Helper()
	var (
		muxes []*transport.Mux
		peers []cluster.Peer
	)
	for i := range 3 {
		m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		muxes = append(muxes, m)
		peers = append(peers, cluster.Peer{Name: fmt.Sprintf("n%d", i+1), Addr: m.Addr().String()})
	}
	var nodes []*testNode
	for i, p := range peers {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		if i == 0 {
			if err := cluster.RegisterRaftMetrics(reg); err != nil {
				t.Fatal(err)
			}
		}
		logger := hclog.New(&hclog.LoggerOptions{Name: p.Name, Level: hclog.Warn, Output: io.Discard})
		node, err := cluster.New(cluster.Config{
			Name:             p.Name,
			DataDir:          t.TempDir(),
			InitialCluster:   peers,
			HeartbeatTimeout: 500 * time.Millisecond, // -race on small machines
			Logger:           logger,
			Registerer:       reg,
		}, muxes[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = node.Close() })
		store := registry.New(node)
		election.New(election.Config{Store: store, Node: node, Logger: logger, Registerer: reg})
		api := httpapi.New(httpapi.Config{Node: node, Store: store, Logger: logger, Registerer: reg, Gatherer: reg})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		nodes = append(nodes, &testNode{name: p.Name, url: "http://" + ln.Addr().String(), reg: reg})
	}
	// Wait until every node is ready, as /readyz tells.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, n := range nodes {
		for {
			resp, err := http.Get(n.url + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s not ready", n.name)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nodes
}

// do sends one request and fails the test unless it gets want.
func do(ctx context.Context, t *testing.T, method, url, body string, want int) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s: %s", method, url, resp.Status, b)
	}
}
