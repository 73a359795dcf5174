package cluster

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// Status is the node's view of the cluster, served at /cluster/status.
type Status struct {
	Name         string      `json:"name"`
	State        string      `json:"state"`
	Leader       *LeaderInfo `json:"leader"`
	Term         uint64      `json:"term"`
	CommitIndex  uint64      `json:"commitIndex"`
	AppliedIndex uint64      `json:"appliedIndex"`
	Members      []Member    `json:"members"`
	APIURL       string      `json:"apiURL"`
	Version      string      `json:"version"`
	DBSize       int64       `json:"dbSize"`
	FeatureLevel uint32      `json:"featureLevel"`
	// StoredBytes is the stored data (objects' keys and encodings) that
	// QuotaBackendBytes bounds; Alarms the raised alarms ("NOSPACE").
	StoredBytes       int64    `json:"storedBytes"`
	QuotaBackendBytes uint64   `json:"quotaBackendBytes,omitempty"`
	Alarms            []string `json:"alarms,omitempty"`
}

// LeaderInfo names the leader.
type LeaderInfo struct {
	Name     string `json:"name"`
	PeerAddr string `json:"peerAddr"`
}

// Member is one server in the Raft configuration.
type Member struct {
	Name     string `json:"name"`
	PeerAddr string `json:"peerAddr"`
	Suffrage string `json:"suffrage"`
}

// Status reports the node's current view.
func (n *Node) Status() Status {
	st := Status{
		Name:         n.cfg.Name,
		State:        strings.ToLower(n.raft.State().String()),
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.state.AppliedIndex(),
		Members:      []Member{},
		APIURL:       n.cfg.APIURL,
		Version:      n.cfg.Version,
		FeatureLevel: n.FeatureLevel(),

		StoredBytes:       n.state.StoredBytes(),
		QuotaBackendBytes: n.cfg.QuotaBackendBytes,
	}
	if n.state.NoSpace() != 0 {
		st.Alarms = []string{"NOSPACE"}
	}
	if fi, err := os.Stat(filepath.Join(n.cfg.DataDir, "raft.db")); err == nil {
		st.DBSize = fi.Size()
	}
	if name, addr := n.Leader(); addr != "" {
		st.Leader = &LeaderInfo{Name: name, PeerAddr: addr}
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			suffrage := "voter"
			if s.Suffrage != raft.Voter {
				suffrage = "nonvoter"
			}
			st.Members = append(st.Members, Member{Name: string(s.ID), PeerAddr: string(s.Address), Suffrage: suffrage})
		}
	}
	return st
}
