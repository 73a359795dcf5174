package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParseCounters(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       float64
		ok         bool
	}{
		{"prometheus client", "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.34\nprocess_max_fds 1024\n", 12.34, true},
		{"after other metrics, with a timestamp", "go_goroutines 7\nprocess_cpu_seconds_total_other 99\nprocess_cpu_seconds_total 5e-01 1700000000000\n", 0.5, true},
		{"with labels", `process_cpu_seconds_total{instance="a"} 3` + "\n", 3, true},
		{"absent", "go_goroutines 7\nprocess_cpu_seconds_total_other 99\n", 0, false},
		{"not a number", "process_cpu_seconds_total NaNa\n", 0, false},
	} {
		got, ok := parseCounters(strings.NewReader(tc.text), cpuMetric)
		if got[0] != tc.want || ok[0] != tc.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.name, got[0], ok[0], tc.want, tc.ok)
		}
	}
	// Several names in one pass, each found wherever it is.
	text := "leasehold_raft_boltdb_storeLogs_sum 1.5\nleasehold_raft_boltdb_storeLogs_count 42\nprocess_cpu_seconds_total 7\n"
	got, ok := parseCounters(strings.NewReader(text), cpuMetric, "leasehold_raft_boltdb_storeLogs_count", "etcd_disk_wal_fsync_duration_seconds_count")
	if got[0] != 7 || !ok[0] || got[1] != 42 || !ok[1] || ok[2] {
		t.Errorf("three names: got %v, %v; want [7 42 0], [true true false]", got, ok)
	}
}

// TestCPUMeterSumsNodes: the nodes' counters are summed; one node that
// does not answer, or lacks a counter, makes that counter unknown rather
// than low.
func TestCPUMeterSumsNodes(t *testing.T) {
	var calls atomic.Int64
	node := func(secs, writes float64) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, "go_threads 9\nprocess_cpu_seconds_total %g\n", secs)
			if writes > 0 {
				fmt.Fprintf(w, "etcd_disk_wal_fsync_duration_seconds_count %g\n", writes)
			}
		}))
	}
	a, b, noLog := node(1.5, 10), node(2.25, 20), node(1, 0)
	defer a.Close()
	defer b.Close()
	defer noLog.Close()
	broken := httptest.NewServer(http.NotFoundHandler())
	defer broken.Close()

	got := newCPUMeter([]string{a.URL, b.URL + "/"}, "etcd", nil).read(context.Background())
	if !got.cpuOK || got.cpuSeconds != 3.75 || !got.logsOK || got.logWrites != 30 {
		t.Fatalf("two nodes: %+v; want 3.75 s and 30 log writes", got)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d scrapes, want 2", calls.Load())
	}
	if got := newCPUMeter([]string{a.URL, noLog.URL}, "etcd", nil).read(context.Background()); !got.cpuOK || got.logsOK {
		t.Fatalf("a node without the log counter: %+v; want CPU known, log writes unknown", got)
	}
	if got := newCPUMeter([]string{a.URL, broken.URL}, "etcd", nil).read(context.Background()); got.cpuOK || got.logsOK {
		t.Fatalf("a node without metrics: %+v; want both unknown", got)
	}
}

// TestWritesPerLogWrite: every write is an entry in each node's log, so
// three nodes writing 3,000 log writes for 10,000 renewals carried 10 a
// write; a run without writes or without the counter has none.
func TestWritesPerLogWrite(t *testing.T) {
	r := &Result{Seconds: 10, ByOp: map[string]float64{"renew": 1000, "get": 500}, Nodes: 3, LogWrites: 3000}
	if got := r.writesPerLogWrite(); got != 10 {
		t.Errorf("entries per log write %v, want 10", got)
	}
	if got := (&Result{Seconds: 10, ByOp: map[string]float64{"get": 500}, Nodes: 3, LogWrites: 30}).writesPerLogWrite(); got != 0 {
		t.Errorf("gets only: %v, want 0", got)
	}
	if got := (&Result{Seconds: 10, ByOp: map[string]float64{"renew": 1000}, Nodes: 3}).writesPerLogWrite(); got != 0 {
		t.Errorf("no counter: %v, want 0", got)
	}
}

// TestComparisonCPUColumn: the table shows the medians of the nodes' and
// the load generator's CPU per operation and of the writes per log write,
// and "-" for runs without them.
func TestComparisonCPUColumn(t *testing.T) {
	var results []*Result
	for i, server := range []float64{3.0, 1.0, 2.0} { // seconds over 10,000 ops: 300, 100, 200 µs
		results = append(results,
			&Result{Target: "leasehold", Workload: "renew", Label: "64", Clients: 64, Ops: 10000, OpsPerSec: 1000,
				ServerCPUSeconds: server, ClientCPUSeconds: []float64{0.5, 0.9, 0.7}[i],
				Seconds: 10, ByOp: map[string]float64{"renew": 1000}, Nodes: 3, LogWrites: []float64{2000, 3000, 1000}[i]},
			&Result{Target: "etcd", Workload: "renew", Label: "64", Clients: 64, Ops: 10000, OpsPerSec: 1000})
	}
	var out bytes.Buffer
	printComparison(&out, results)
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "renew 64") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	if !strings.Contains(row, "200 + 70 - 15.0 / - 3/3") {
		t.Fatalf("row %q: want leasehold CPU 200 + 70 µs/op, etcd's unknown (-), 15 writes per log write against unknown\n%s", row, out.String())
	}
}

// TestSummaryByLabel: runs are grouped by label in order of appearance,
// each figure the median of its group's runs; runs that came in pairs of
// one of each label are also compared within each pair.
func TestSummaryByLabel(t *testing.T) {
	mk := func(label string, ops, p99, lag, server float64) *Result {
		r := &Result{Label: label, Workload: "watch", Ops: 1000, OpsPerSec: ops, Latency: Percentiles{P50: 1, P99: p99},
			ServerCPUSeconds: server, ClientCPUSeconds: server / 2}
		if lag > 0 {
			r.Lag = &Percentiles{P99: lag}
		}
		return r
	}
	results := []*Result{
		mk("B", 310, 9, 70, 0.3), mk("A", 300, 10, 80, 0.4), mk("A", 290, 30, 120, 0.2),
		mk("B", 320, 8, 60, 0.1), mk("A", 100, 20, 90, 0.3), mk("B", 330, 7, 0, 0.2),
	}
	// 2,000 renewals in 10 s over 1,000 log writes a node.
	results[0].ByOp, results[0].Seconds, results[0].LogWrites, results[0].Nodes = map[string]float64{"renew": 200}, 10, 3000, 3
	var out bytes.Buffer
	printSummary(&out, results)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header, two rows, a footnote and the pairs:\n%s", out.String())
	}
	b, a := strings.Join(strings.Fields(lines[1]), " "), strings.Join(strings.Fields(lines[2]), " ")
	if want := "B 3 320 1.00 8.00 65.0 200 100 2.0"; b != want {
		t.Errorf("row B %q, want %q (B first: it came first; lag over the runs that have one)", b, want)
	}
	if want := "A 3 290 1.00 20.00 90.0 300 150 -"; a != want {
		t.Errorf("row A %q, want %q", a, want)
	}
	// Pairs (B 310, A 300), (A 290, B 320), (A 100, B 330), taking B first
	// as the labels came: A over B 300/310, 290/320, 100/330.
	if want := "A / B within each of 3 pairs: ops/s ×0.906 (0.303–0.968), A faster in 0 of 3; nodes CPU µs/op ×1.500 (1.333–2.000)"; lines[4] != want {
		t.Errorf("pairs %q, want %q", lines[4], want)
	}
}

// A run without its pair, or a pair of one label twice, is no pairing.
func TestSummaryNoPairs(t *testing.T) {
	mk := func(label string) *Result { return &Result{Label: label, Ops: 100, OpsPerSec: 100} }
	for _, labels := range [][]string{{"A", "B", "A"}, {"A", "A", "B", "B"}, {"A", "B", "C", "A"}} {
		var results []*Result
		for _, l := range labels {
			results = append(results, mk(l))
		}
		var out bytes.Buffer
		printSummary(&out, results)
		if strings.Contains(out.String(), "pairs") {
			t.Errorf("labels %v: compared in pairs:\n%s", labels, out.String())
		}
	}
}
