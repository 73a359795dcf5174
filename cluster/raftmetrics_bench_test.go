package cluster

import (
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkRaftSample measures one sample as raft reports many per log
// entry, with a peer label and without, through the sink RegisterRaftMetrics
// installs and through go-metrics' own Prometheus sink.
func BenchmarkRaftSample(b *testing.B) {
	newProm := func(b *testing.B, reg prometheus.Registerer) gometrics.MetricSink {
		opts := gmprom.DefaultPrometheusOpts
		opts.Registerer = reg
		opts.Name = "bench_sink"
		s, err := gmprom.NewPrometheusSinkFrom(opts)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	sinks := map[string]func(*testing.B) gometrics.MetricSink{
		"histogram": func(b *testing.B) gometrics.MetricSink {
			reg := prometheus.NewRegistry()
			return &sampleSink{MetricSink: newProm(b, reg), reg: reg, vecs: map[string]*sampleVec{}}
		},
		"summary": func(b *testing.B) gometrics.MetricSink { return newProm(b, prometheus.NewRegistry()) },
	}
	for name, sink := range sinks {
		b.Run(name, func(b *testing.B) {
			s := sink(b)
			key := []string{"leasehold", "raft", "replication", "appendEntries", "rpc"}
			labels := []gometrics.Label{{Name: "peer_id", Value: "n2"}}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					s.AddSampleWithLabels(key, 1.5, labels)
					s.AddSample([]string{"leasehold", "raft", "commitTime"}, 2.5)
				}
			})
		})
	}
}
