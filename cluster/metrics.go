package cluster

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// collector exports the node's Raft and state figures at scrape time, so
// nothing is kept up to date on the write path. Raft's own timings (commit,
// FSM apply, boltdb fsync, replication) come through RegisterRaftMetrics.
type collector struct {
	n *Node

	leader, state, term, commit, applied, lastContact *prometheus.Desc
	objects, history, readiness                       *prometheus.Desc
	diskStalled, diskFull                             *prometheus.Desc
}

// raftStates are the values of leasehold_raft_node_state's label, all of
// them exported so that a state's series exists (as 0) before it is entered.
var raftStates = []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown}

func newCollector(n *Node) *collector {
	return &collector{
		n:           n,
		leader:      prometheus.NewDesc("leasehold_raft_leader", "1 if this node is the Raft leader, else 0.", nil, nil),
		state:       prometheus.NewDesc("leasehold_raft_node_state", "1 for this node's current Raft state (Follower, Candidate, Leader, Shutdown), 0 for the others.", []string{"state"}, nil),
		term:        prometheus.NewDesc("leasehold_raft_term", "Current Raft term.", nil, nil),
		commit:      prometheus.NewDesc("leasehold_raft_commit_index", "Raft commit index as this node knows it.", nil, nil),
		applied:     prometheus.NewDesc("leasehold_fsm_applied_index", "Index of the last log entry whose effects readers see on this node.", nil, nil),
		lastContact: prometheus.NewDesc("leasehold_raft_last_contact_seconds", "Time since this follower last heard from the leader (0 on the leader).", nil, nil),
		objects:     prometheus.NewDesc("leasehold_objects", "Objects stored, by resource.", []string{"resource"}, nil),
		history:     prometheus.NewDesc("leasehold_watch_history_events", "Events held in the watch history.", nil, nil),
		readiness:   prometheus.NewDesc("leasehold_ready", "1 if the node is ready to serve, as /readyz says (a leader known, caught up, its startup checks passed), else 0.", nil, nil),
		diskStalled: prometheus.NewDesc("leasehold_disk_stalled", "1 while a write to raft.db is past the disk stall timeout, else 0.", nil, nil),
		diskFull:    prometheus.NewDesc("leasehold_disk_full", "1 while the disk of raft.db counts as full (a write got ENOSPC or EDQUOT, or less than the reserve is free), else 0.", nil, nil),
	}
}

// newReadIndexHistogram times LinearizableRead's read index step: on the
// leader a quorum heartbeat round, on a follower the request to the leader
// (which in a three-node cluster needs no round: see leaderReadIndex). It
// is observed on every read, so it is a live metric, not one computed at
// scrape time.
func newReadIndexHistogram() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "leasehold_read_index_duration_seconds",
		Help:    "Time to obtain a read index for a linearizable read (leader: quorum heartbeat round; follower: the request to the leader).",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
	})
}

// newReadIndexesCounter counts the read indexes the leader gave (to its own
// reads and to followers'), by how it confirmed its leadership: "asker", a
// follower that asked in the leader's term and with it makes a majority, or
// "quorum_round", a heartbeat round to the voters.
func newReadIndexesCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leasehold_read_indexes_total",
		Help: "Read indexes this node gave as leader, by how its leadership was confirmed (asker: the asking follower's term; quorum_round: a heartbeat round).",
	}, []string{"confirmation"})
	c.WithLabelValues("asker")
	c.WithLabelValues("quorum_round")
	return c
}

// forwardOutcomes are the values of leasehold_forwarded_writes_total's
// outcome label.
var forwardOutcomes = []string{"committed", "not_leader", "not_applied", "unreachable", "unknown"}

// newForwardedCounter counts the writes a node that does not lead sent to
// the leader, by outcome: committed, refused because the peer no longer
// led (not_leader) or its queue or its disk was full (not_applied), the
// leader not reached (unreachable; nothing sent), or no answer after
// sending (unknown). The first three and unreachable wrote nothing.
func newForwardedCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leasehold_forwarded_writes_total",
		Help: "Writes this node sent to the leader as log commands, by outcome (committed, not_leader, not_applied, unreachable, unknown).",
	}, []string{"outcome"})
	for _, o := range forwardOutcomes {
		c.WithLabelValues(o)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.state, c.term, c.commit, c.applied, c.lastContact, c.objects, c.history, c.readiness, c.diskStalled, c.diskFull} {
		ch <- d
	}
	c.n.disk.writeSeconds.Describe(ch)
	c.n.disk.writeErrors.Describe(ch)
	c.n.readIndexSeconds.Describe(ch)
	c.n.readIndexesGiven.Describe(ch)
	c.n.forwarded.Describe(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := n.raft.State()
	isLeader := st == raft.Leader
	gauge(c.leader, b2f(isLeader))
	for _, s := range raftStates {
		gauge(c.state, b2f(s == st), s.String())
	}
	gauge(c.term, float64(n.raft.CurrentTerm()))
	gauge(c.commit, float64(n.raft.CommitIndex()))
	gauge(c.applied, float64(n.state.AppliedIndex()))
	if isLeader {
		gauge(c.lastContact, 0)
	} else if t := n.raft.LastContact(); !t.IsZero() {
		gauge(c.lastContact, time.Since(t).Seconds())
	}
	sn := n.state.Snapshot()
	for resource := range n.fsmTypes {
		gauge(c.objects, float64(sn.Count(resource)), resource)
	}
	gauge(c.history, float64(n.state.HistoryLen()))
	ready, _ := n.Ready()
	gauge(c.readiness, b2f(ready))
	gauge(c.diskStalled, b2f(n.disk.stalled()))
	gauge(c.diskFull, b2f(n.disk.full.Load()))
	n.disk.writeSeconds.Collect(ch)
	n.disk.writeErrors.Collect(ch)
	n.readIndexSeconds.Collect(ch)
	n.readIndexesGiven.Collect(ch)
	n.forwarded.Collect(ch)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
