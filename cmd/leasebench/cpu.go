package main

// What a run cost in CPU: the nodes' own process_cpu_seconds_total (the
// Prometheus process collector's, on leasehold's /metrics and on etcd's
// client URL alike), read at the start and at the end of the measured
// time, and the load generator's own. On a machine the cluster and the
// load generator share, throughput follows from these: when the cores are
// busy, operations a second are the cores over the CPU time one operation
// costs everyone.
//
// The same scrapes count the nodes' durable log writes, each one sync
// point whatever it holds, and so the entries a log write carries on
// average: what batching bought each system.

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuMetric is the Prometheus process collector's CPU counter.
const cpuMetric = "process_cpu_seconds_total"

// logWriteMetric counts a node's durable log writes: on a leasehold node
// raft-boltdb's StoreLogs, one bbolt transaction (two fdatasyncs) for a
// batch of entries; on an etcd member a WAL fsync.
func logWriteMetric(target string) string {
	if target == "etcd" {
		return "etcd_disk_wal_fsync_duration_seconds_count"
	}
	return "leasehold_raft_boltdb_storeLogs_count"
}

// cpuMeter reads the CPU time the nodes have used and their log writes.
type cpuMeter struct {
	client    *http.Client
	endpoints []string // base URLs, one per node
	logMetric string
}

// newCPUMeter reads the nodes at endpoints; over TLS with tlsCfg (nil:
// plaintext), whose client certificate secured nodes must let read
// /metrics.
func newCPUMeter(endpoints []string, target string, tlsCfg *tls.Config) cpuMeter {
	return cpuMeter{client: &http.Client{Timeout: 5 * time.Second, Transport: newTransport(tlsCfg, 2, false)}, endpoints: endpoints, logMetric: logWriteMetric(target)}
}

// nodeCounters are the nodes' counters, summed; a counter some node did
// not report is unknown (ok false) rather than low.
type nodeCounters struct {
	cpuSeconds, logWrites float64
	cpuOK, logsOK         bool
}

// read scrapes every node once.
func (m cpuMeter) read(ctx context.Context) nodeCounters {
	per := make([]nodeCounters, len(m.endpoints))
	var wg sync.WaitGroup
	for i, ep := range m.endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[i] = m.scrape(ctx, ep)
		}()
	}
	wg.Wait()
	c := nodeCounters{cpuOK: true, logsOK: true}
	for _, n := range per {
		c.cpuSeconds += n.cpuSeconds
		c.logWrites += n.logWrites
		c.cpuOK = c.cpuOK && n.cpuOK
		c.logsOK = c.logsOK && n.logsOK
	}
	return c
}

// scrape reads one node's counters from its /metrics; a node that does not
// answer has none.
func (m cpuMeter) scrape(ctx context.Context, endpoint string) nodeCounters {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/metrics", nil)
	if err != nil {
		return nodeCounters{}
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nodeCounters{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nodeCounters{}
	}
	v, ok := parseCounters(resp.Body, cpuMetric, m.logMetric)
	return nodeCounters{cpuSeconds: v[0], logWrites: v[1], cpuOK: ok[0], logsOK: ok[1]}
}

// parseCounters finds the values of the unlabelled (or single) series
// names in a Prometheus text exposition; found[i] is false for a name
// absent or not a number.
func parseCounters(r io.Reader, names ...string) (vals []float64, found []bool) {
	vals, found = make([]float64, len(names)), make([]bool, len(names))
	seen := make([]bool, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		for i, name := range names {
			rest, ok := strings.CutPrefix(sc.Text(), name)
			if !ok || seen[i] || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
				continue
			}
			seen[i] = true
			if j := strings.LastIndexByte(rest, '}'); j >= 0 {
				rest = rest[j+1:]
			}
			fields := strings.Fields(rest) // value, then an optional timestamp
			if len(fields) > 0 {
				v, err := strconv.ParseFloat(fields[0], 64)
				vals[i], found[i] = v, err == nil
			}
		}
	}
	return vals, found
}

// cpuSpan measures the CPU time used, and the nodes' log writes, between
// its start and its end.
type cpuSpan struct {
	meter    cpuMeter
	server0  nodeCounters
	client0  float64
	clientOK bool
}

func startCPUSpan(ctx context.Context, m cpuMeter) *cpuSpan {
	s := &cpuSpan{meter: m, server0: m.read(ctx)}
	s.client0, s.clientOK = selfCPUSeconds()
	return s
}

// end returns the CPU seconds the nodes and this process used since the
// start, and the log writes the nodes made; what could not be read is zero.
func (s *cpuSpan) end(ctx context.Context) (server, client, logWrites float64) {
	c := s.meter.read(ctx)
	if c.cpuOK && s.server0.cpuOK {
		server = c.cpuSeconds - s.server0.cpuSeconds
	}
	if c.logsOK && s.server0.logsOK {
		logWrites = c.logWrites - s.server0.logWrites
	}
	if v, ok := selfCPUSeconds(); ok && s.clientOK {
		client = v - s.client0
	}
	return server, client, logWrites
}

// cpuPerOp is microseconds of CPU per operation, 0 when unknown.
func cpuPerOp(seconds float64, ops int64) float64 {
	if seconds <= 0 || ops <= 0 {
		return 0
	}
	return seconds / float64(ops) * 1e6
}
