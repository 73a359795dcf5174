package cluster

import (
	"slices"
	"strings"
	"sync"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// RaftMetricsPrefix starts the name of every metric hashicorp/raft and
// raft-boltdb emit, once bridged: raft's "raft.commitTime" is exported as
// leasehold_raft_commitTime.
const RaftMetricsPrefix = "leasehold"

// RegisterRaftMetrics exports the metrics hashicorp/raft and raft-boltdb
// emit through go-metrics in reg. go-metrics keeps one global sink per
// process, shared by every Node in it, so call this once per process (the
// binary's main does).
//
// raft and raft-boltdb call github.com/hashicorp/go-metrics/compat, which
// forwards to armon/go-metrics or hashicorp/go-metrics depending on a build
// tag. The sink and the global are taken from compat too, so the sink
// installed here is the one raft's calls reach under either tag.
//
// Gauges and counters go through go-metrics' own Prometheus sink; a series
// not updated for a minute is dropped, its default. Timings are histograms
// (sampleSink), and so are raft-boltdb's batch sizes. Labels are bounded:
// peer_id (one per peer) and rpcType.
func RegisterRaftMetrics(reg prometheus.Registerer) error {
	opts := gmprom.DefaultPrometheusOpts
	opts.Registerer = reg
	opts.Name = RaftMetricsPrefix + "_go_metrics_sink" // only names the sink's placeholder descriptor
	sink, err := gmprom.NewPrometheusSinkFrom(opts)
	if err != nil {
		return err
	}
	conf := gometrics.DefaultConfig(RaftMetricsPrefix)
	// The Go collector already exports the runtime's figures, and a
	// hostname in every name would make names differ between nodes.
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false
	_, err = gometrics.NewGlobal(conf, &sampleSink{MetricSink: sink, reg: reg, vecs: map[string]*sampleVec{}})
	return err
}

// sampleBuckets are the upper bounds of the sample histograms: 1, 2.5 and
// 5 times every power of ten from 0.01 to 10^6. Most samples are timings
// in milliseconds (go-metrics' timer unit; raft reports some, such as the
// leader's lastContact, explicitly in milliseconds), from a log write on a
// fast disk to an election timeout; raft-boltdb's are sizes and counts
// (bytes per batch, logs per batch), up to megabytes.
var sampleBuckets = func() []float64 {
	var b []float64
	for p := 0.01; p <= 1e6; p *= 10 {
		b = append(b, p, 2.5*p, 5*p)
	}
	return b
}()

// sampleSink sends raft's samples (timings, mostly) to fixed-bucket
// histograms and everything else to the go-metrics Prometheus sink it
// wraps. That sink makes each sample a summary whose quantile streams hold
// hundreds of recent samples per series, for every series raft reports,
// where a histogram is its 28 counters (BenchmarkRaftSample compares the
// two).
type sampleSink struct {
	gometrics.MetricSink
	reg prometheus.Registerer

	mu   sync.Mutex
	vecs map[string]*sampleVec // by flattened name
}

// sampleVec is one sample's histograms, with the label names its first
// sample had; raft gives each sample one set.
type sampleVec struct {
	labels []string
	vec    *prometheus.HistogramVec
}

func (s *sampleSink) AddSample(key []string, val float32) {
	s.AddSampleWithLabels(key, val, nil)
}

func (s *sampleSink) AddSampleWithLabels(key []string, val float32, labels []gometrics.Label) {
	names := make([]string, len(labels))
	values := make([]string, len(labels))
	for i, l := range labels {
		names[i], values[i] = metricName.Replace(l.Name), l.Value
	}
	v := s.vec(metricName.Replace(strings.Join(key, "_")), names)
	if v == nil {
		return
	}
	v.WithLabelValues(values...).Observe(float64(val))
}

// vec returns the histograms of the sample called name, registering them
// at its first sample; nil if that sample had other label names or the
// registry refused them.
func (s *sampleSink) vec(name string, labels []string) *prometheus.HistogramVec {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vecs[name]; ok {
		if !slices.Equal(v.labels, labels) {
			return nil
		}
		return v.vec
	}
	v := &sampleVec{labels: labels, vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    name,
		Help:    "Sample " + name + " of hashicorp/raft or raft-boltdb (timings in milliseconds).",
		Buckets: sampleBuckets,
	}, labels)}
	if err := s.reg.Register(v.vec); err != nil {
		v.vec = nil
	}
	s.vecs[name] = v
	return v.vec
}

// metricName replaces what go-metrics keys hold and Prometheus names do
// not allow, as go-metrics' own sink does.
var metricName = strings.NewReplacer(" ", "_", ".", "_", "=", "_", "-", "_", "/", "_")
