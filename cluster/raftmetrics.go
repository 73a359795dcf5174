package cluster

import (
	gometrics "github.com/hashicorp/go-metrics/compat"
	gmprom "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// RaftMetricsPrefix starts the name of every metric hashicorp/raft and
// raft-boltdb emit, once bridged: raft's "raft.commitTime" is exported as
// leasehold_raft_commitTime.
const RaftMetricsPrefix = "leasehold"

// RegisterRaftMetrics exports the metrics hashicorp/raft and raft-boltdb
// emit through go-metrics in reg, using go-metrics' own Prometheus sink.
// go-metrics keeps one global sink per process, shared by every Node in it,
// so call this once per process (the binary's main does).
//
// raft and raft-boltdb call github.com/hashicorp/go-metrics/compat, which
// forwards to armon/go-metrics or hashicorp/go-metrics depending on a build
// tag. The sink and the global are taken from compat too, so the sink
// installed here is the one raft's calls reach under either tag.
//
// Timings are go-metrics summaries in milliseconds (its default timer
// granularity; raft also reports some samples, such as leader lastContact,
// explicitly in milliseconds, so the unit stays uniform). Labels are
// bounded: peer_id (one per peer) and rpcType. A series not updated for a
// minute is dropped, go-metrics' default.
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
	_, err = gometrics.NewGlobal(conf, sink)
	return err
}
