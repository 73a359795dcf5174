package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintFanoutMedians(t *testing.T) {
	var results []*Result
	for _, ops := range []float64{300, 290, 310} {
		results = append(results, &Result{Workload: "renew", OpsPerSec: ops, Latency: Percentiles{P99: ops / 100}})
	}
	for i, ops := range []float64{285, 270, 294} {
		p99 := []float64{100, 90, 200}[i]
		results = append(results, &Result{
			Workload: "watch", Watchers: 1000, WatchFormat: "protobuf", OpsPerSec: ops, Seconds: 5,
			Events: int64(1000 * ops * 5), Latency: Percentiles{P99: 20},
			Lag: &Percentiles{P50: p99 / 4, P99: p99}, LagAfterAck: &Percentiles{P50: p99 / 5, P99: p99 - 10},
			ServerCPUSeconds: []float64{5, 7, 4}[i],
		})
	}
	// A format without the after-response lag (results of an older leasebench).
	results = append(results, &Result{Workload: "watch", Watchers: 1000, WatchFormat: "json", OpsPerSec: 330, Seconds: 5, Lag: &Percentiles{P50: 1, P99: 2}})

	var out bytes.Buffer
	printFanout(&out, results)
	lines := strings.Split(out.String(), "\n")
	find := func(prefix string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return f
			}
		}
		t.Fatalf("no row %q in\n%s", prefix, out.String())
		return nil
	}
	if f := find("none"); f[1] != "3" || f[2] != "300" || f[3] != "-" || f[4] != "3.0" {
		t.Errorf("baseline row %q, want 3 rounds, 300 ops/s, write p99 3.0", f)
	}
	// Medians taken separately: ops 285 (-5 %), lag p99 100 (not the 200
	// of the disturbed run), after the response 90.
	got := strings.Join(find("1000 protobuf"), " ")
	for _, want := range []string{"1000 protobuf 3 285 -5.0 % 20.0", "25.0 / 100.0", "20.0 / 90.0", " 285000", "1.00 cores"} {
		if !strings.Contains(got, want) {
			t.Errorf("protobuf row %q lacks %q", got, want)
		}
	}
	if got := strings.Join(find("1000 json"), " "); !strings.Contains(got, "+10.0 %") || !strings.Contains(got, "1.0 / 2.0 -") {
		t.Errorf("json row %q: want +10.0 %% and no after-the-response figures", got)
	}
}
