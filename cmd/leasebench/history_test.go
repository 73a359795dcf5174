package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// historySample is a run of three workloads as scripts/bench.sh writes
// them: renewals against both systems (three rounds each), the watch
// fan-out on leasehold alone, and protobuf renewals over TLS beside the
// open clusters' runs of the same workload.
func historySample() []*Result {
	round := func(target string, ops, p50, p99, cpuUs, batch float64, errs int64) *Result {
		n := int64(ops * 5)
		return &Result{
			Target: target, Workload: "renew", Label: "64-clients", Clients: 64, Seconds: 5,
			Ops: n, OpsPerSec: ops, Errors: errs, Latency: Percentiles{P50: p50, P99: p99},
			ServerCPUSeconds: cpuUs * float64(n) / 1e6, ClientCPUSeconds: 100 * float64(n) / 1e6,
			ByOp: map[string]float64{"renew": ops}, Nodes: 3, LogWrites: float64(n) * 3 / batch,
		}
	}
	results := []*Result{
		round("leasehold", 3600, 15.0, 60.0, 379, 17.5, 0),
		round("etcd", 3300, 16.5, 57.5, 460, 7.1, 17),
		round("leasehold", 3700, 16.0, 62.0, 400, 18.0, 0),
		round("etcd", 3369, 16.1, 58.0, 449, 7.2, 0),
		round("leasehold", 3640, 15.1, 60.2, 380, 18.5, 0),
		round("etcd", 3400, 16.0, 56.0, 440, 7.3, 0),
		{
			Target: "leasehold", Workload: "watch", Label: "1000-watchers", WatchFormat: "protobuf", Clients: 64,
			Seconds: 5, Ops: 1460, OpsPerSec: 292, Latency: Percentiles{P50: 10, P99: 65.2},
			Lag: &Percentiles{P50: 39.4, P99: 131.1}, LagAfterAck: &Percentiles{P50: 33.3, P99: 112.1},
			ServerCPUSeconds: 5.45,
		},
	}
	for _, r := range []struct {
		target string
		tls    bool
		ops    float64
	}{{"leasehold", false, 3200}, {"leasehold", true, 3000}, {"etcd", false, 2500}, {"etcd", true, 2000}} {
		lat := Percentiles{P50: 17.4, P99: 84}
		if r.target == "etcd" {
			lat = Percentiles{P50: 28.2, P99: 104.1}
		}
		results = append(results, &Result{
			Target: r.target, Workload: "renew", Label: "64-clients-protobuf", Clients: 64, TLS: r.tls,
			Seconds: 5, Ops: int64(r.ops * 5), OpsPerSec: r.ops, Latency: lat,
		})
	}
	return results
}

func TestHistoryRows(t *testing.T) {
	var out bytes.Buffer
	if err := writeCSV(&out, historyRows(historySample(), "2026-11-29", "c5fb5c7", "plain 5s x3")); err != nil {
		t.Fatal(err)
	}
	// Medians over the rounds, each figure taken separately; the nodes'
	// CPU without the load generator's; TLS/plain from the open runs.
	want := `2026-11-29,c5fb5c7,plain 5s x3,renew 64-clients,64,3640,3369,1.08,15.10,60.20,16.10,57.50,380,449,"writes per log write 18.0/7.2; errors: leasehold 0, etcd 17"
2026-11-29,c5fb5c7,plain 5s x3,watch 1000-watchers protobuf,64,292,,,10.00,65.20,,,,,lag p50/p99 39.4/131.1 ms; after the response 33.3/112.1 ms; nodes 1.09 cores
2026-11-29,c5fb5c7,plain 5s x3,renew 64-clients-protobuf,64,3000,2000,1.50,17.40,84.00,28.20,104.10,,,"TLS/plain leasehold 0.94, etcd 0.80"
`
	if got := out.String(); got != want {
		t.Errorf("rows:\n%s\nwant:\n%s", got, want)
	}
}

func TestAppendHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench-history.csv")
	rows := historyRows(historySample(), "2026-11-29", "c5fb5c7", "plain 5s x3")
	for range 2 {
		if err := appendHistory(path, rows); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if header := strings.Join(historyHeader, ","); lines[0] != header || strings.Count(string(data), header) != 1 {
		t.Errorf("file does not start with the header, once:\n%s", data)
	}
	if len(lines) != 1+2*len(rows) {
		t.Errorf("%d lines, want the header and %d rows", len(lines), 2*len(rows))
	}

	// A last row without its newline gets one before the next.
	if err := os.WriteFile(path, []byte(strings.Join(historyHeader, ",")+"\n2026-11-28,,,renew 1-client"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendHistory(path, rows[:1]); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), "renew 1-client\n2026-11-29,") {
		t.Errorf("appended onto the last line:\n%s", data)
	}

	// Another file's header: left as it is.
	other := []byte("a,b\n1,2\n")
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendHistory(path, rows); err == nil {
		t.Error("appended to a file with another header")
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, other) {
		t.Errorf("file changed to:\n%s", data)
	}
}
