package cluster

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// gatherFamilies gathers reg and indexes the families by name.
func gatherFamilies(t *testing.T, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// TestRaftMetricsBridge proves that the go-metrics sink RegisterRaftMetrics
// installs is the one raft and raft-boltdb report to: after a write, their
// timings are in the registry under valid names with bounded labels, next
// to the node's own collector.
func TestRaftMetricsBridge(t *testing.T) {
	reg := prometheus.NewRegistry() // as the binary uses; a pedantic one refuses the sink's undescribed series
	if err := RegisterRaftMetrics(reg); err != nil {
		t.Fatalf("register: %v", err)
	}
	// One registry per node name; n1's collector goes into reg. go-metrics'
	// sink is process-wide, so it sees all three nodes.
	c := newCluster(t, 3, func(cfg *Config) {
		if cfg.Name == "n1" {
			cfg.Registerer = reg
		}
	})
	leader := c.node(c.waitLeader())
	mustApply(t, leader, createCmd(t, "metrics", "a"))
	if err := c.node(0).LinearizableRead(opCtx(t)); err != nil {
		t.Fatalf("linearizable read: %v", err)
	}

	want := []string{
		// Bridged from raft and raft-boltdb (timings in milliseconds).
		"leasehold_raft_commitTime",
		"leasehold_raft_fsm_applyBatch", // our FSM batches, so raft times ApplyBatch, not Apply
		"leasehold_raft_boltdb_storeLogs",
		"leasehold_raft_replication_appendEntries_rpc",
		"leasehold_raft_replication_heartbeat",
		"leasehold_raft_rpc_appendEntries",
		"leasehold_raft_apply",
		"leasehold_raft_leader_lastContact",
		// The node's collector.
		"leasehold_raft_leader",
		"leasehold_raft_node_state",
		"leasehold_raft_term",
		"leasehold_raft_commit_index",
		"leasehold_fsm_applied_index",
		"leasehold_objects",
		"leasehold_watch_history_events",
		"leasehold_ready",
		"leasehold_read_index_duration_seconds",
	}
	var mfs map[string]*dto.MetricFamily
	waitFor(t, waitTimeout, "raft's metrics in the registry", func() bool {
		mfs = gatherFamilies(t, reg)
		for _, name := range want {
			if mfs[name] == nil {
				return false
			}
		}
		return true
	})
	// Timings are histograms in milliseconds, with and without labels.
	for _, name := range []string{"leasehold_raft_boltdb_storeLogs", "leasehold_raft_commitTime", "leasehold_raft_replication_appendEntries_rpc"} {
		mf := mfs[name]
		if mf.GetType() != dto.MetricType_HISTOGRAM || mf.Metric[0].GetHistogram().GetSampleCount() == 0 {
			t.Errorf("%s: want a histogram with samples, got %v", name, mf)
			continue
		}
		if h := mf.Metric[0].GetHistogram(); len(h.Bucket) != len(sampleBuckets) || h.GetSampleSum() <= 0 {
			t.Errorf("%s: %d buckets, sum %v", name, len(h.Bucket), h.GetSampleSum())
		}
	}
	if l := mfs["leasehold_raft_replication_appendEntries_rpc"].Metric[0].Label; len(l) != 1 || l[0].GetName() != "peer_id" {
		t.Errorf("appendEntries_rpc labels %v, want peer_id", l)
	}
	if got := mfs["leasehold_read_index_duration_seconds"].Metric[0].GetHistogram().GetSampleCount(); got == 0 {
		t.Errorf("read index histogram has no samples")
	}

	// Every bridged name is a valid Prometheus name, and its labels are the
	// bounded ones raft uses: a peer's ID, an RPC type.
	peers := map[string]bool{"n1": true, "n2": true, "n3": true}
	for name, mf := range mfs {
		if !model.LegacyValidation.IsValidMetricName(name) {
			t.Errorf("invalid metric name %q", name)
		}
		if !strings.HasPrefix(name, RaftMetricsPrefix+"_raft_") {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				switch l.GetName() {
				case "peer_id":
					if !peers[l.GetValue()] {
						t.Errorf("%s: peer_id %q is not a peer", name, l.GetValue())
					}
				case "rpcType", "state":
				default:
					t.Errorf("%s: unexpected label %s=%q", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}
