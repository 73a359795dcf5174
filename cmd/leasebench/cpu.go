package main

// What a run cost in CPU: the nodes' own process_cpu_seconds_total (the
// Prometheus process collector's, on leasehold's /metrics and on etcd's
// client URL alike), read at the start and at the end of the measured
// time, and the load generator's own. On a machine the cluster and the
// load generator share, throughput follows from these: when the cores are
// busy, operations a second are the cores over the CPU time one operation
// costs everyone.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuMetric is the Prometheus process collector's CPU counter.
const cpuMetric = "process_cpu_seconds_total"

// cpuMeter reads the CPU time the nodes have used.
type cpuMeter struct {
	client    *http.Client
	endpoints []string // base URLs, one per node
}

func newCPUMeter(endpoints []string) cpuMeter {
	return cpuMeter{client: &http.Client{Timeout: 5 * time.Second}, endpoints: endpoints}
}

// serverSeconds is the CPU time the nodes have used, summed; false when a
// node's could not be read (then the run reports none).
func (m cpuMeter) serverSeconds(ctx context.Context) (float64, bool) {
	secs := make([]float64, len(m.endpoints))
	oks := make([]bool, len(m.endpoints))
	var wg sync.WaitGroup
	for i, ep := range m.endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secs[i], oks[i] = m.read(ctx, ep)
		}()
	}
	wg.Wait()
	total := 0.0
	for i := range secs {
		if !oks[i] {
			return 0, false
		}
		total += secs[i]
	}
	return total, true
}

func (m cpuMeter) read(ctx context.Context, endpoint string) (float64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	return parseCPUSeconds(resp.Body)
}

// parseCPUSeconds finds the value of process_cpu_seconds_total in a
// Prometheus text exposition.
func parseCPUSeconds(r io.Reader) (float64, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, found := strings.CutPrefix(sc.Text(), cpuMetric)
		if !found || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest) // value, then an optional timestamp
		if len(fields) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		return v, err == nil
	}
	return 0, false
}

// cpuSpan measures the CPU time used between its start and its end.
type cpuSpan struct {
	meter              cpuMeter
	server0, client0   float64
	serverOK, clientOK bool
}

func startCPUSpan(ctx context.Context, m cpuMeter) *cpuSpan {
	s := &cpuSpan{meter: m}
	s.server0, s.serverOK = m.serverSeconds(ctx)
	s.client0, s.clientOK = selfCPUSeconds()
	return s
}

// end returns the CPU seconds the nodes and this process used since the
// start; what could not be read is zero.
func (s *cpuSpan) end(ctx context.Context) (server, client float64) {
	if v, ok := s.meter.serverSeconds(ctx); ok && s.serverOK {
		server = v - s.server0
	}
	if v, ok := selfCPUSeconds(); ok && s.clientOK {
		client = v - s.client0
	}
	return server, client
}

// cpuPerOp is microseconds of CPU per operation, 0 when unknown.
func cpuPerOp(seconds float64, ops int64) float64 {
	if seconds <= 0 || ops <= 0 {
		return 0
	}
	return seconds / float64(ops) * 1e6
}
