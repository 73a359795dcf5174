package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// Recovery from the loss of a majority. A cluster that has lost a majority
// of its voters for good can never elect a leader again: Raft needs a
// quorum of the configuration it has, and changing the configuration needs
// a leader. The way out is offline: an operator stops the survivors, writes
// the configuration they are to form in each one's data directory as
// peers.json, and starts them. A node that finds the file at start-up
// forces that configuration onto its log and snapshots
// (raft.RecoverCluster) before Raft starts, then removes the file so that
// the recovery runs once. Consul, Nomad and Vault read the same file, in the
// same format (raft.ReadConfigJSON's), the same way.
//
// RecoverCluster replays the whole log into a scratch FSM and writes a
// snapshot at the last entry, so every entry the node holds becomes
// committed, including any that the old leader had appended but never
// committed. docs/operations.md ("Quorum loss") says when that is
// acceptable.
const (
	// peersFile, in the data directory, asks for a recovery.
	peersFile = "peers.json"
	// peersInfoFile, beside it, tells whoever looks later what the last
	// recovery did and when; the node itself never reads it.
	peersInfoFile = "peers.info"
)

// peersEntry is one server of peers.json.
type peersEntry struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter"`
}

// parsePeers reads peers.json for the node named self, whose peer address
// is selfAddr ("" when the node's configuration does not say). It is
// stricter than raft.ReadConfigJSON, which ignores unknown fields: a
// misspelt "non_voter" would silently make a voter, and the recovery cannot
// be undone.
func parsePeers(data []byte, self, selfAddr string) (raft.Configuration, error) {
	var entries []peersEntry
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&entries); err != nil {
		return raft.Configuration{}, fmt.Errorf(`not a JSON list of {"id","address","non_voter"}: %w`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return raft.Configuration{}, errors.New("unexpected data after the JSON list")
	}
	if len(entries) == 0 {
		return raft.Configuration{}, errors.New("lists no servers")
	}
	var (
		conf    raft.Configuration
		ids     = map[string]int{}
		addrs   = map[string]int{}
		voters  int
		selfIsV bool
		found   bool
	)
	for i, e := range entries {
		at := fmt.Sprintf("entry %d", i+1)
		if e.ID == "" {
			return conf, fmt.Errorf("%s has no id", at)
		}
		at += fmt.Sprintf(" (%s)", e.ID)
		if strings.TrimSpace(e.ID) != e.ID {
			return conf, fmt.Errorf("%s: id has surrounding white space", at)
		}
		host, port, err := net.SplitHostPort(e.Address)
		if err != nil || host == "" || port == "" || port == "0" {
			return conf, fmt.Errorf("%s: address %q is not a dialable host:port", at, e.Address)
		}
		if j, dup := ids[e.ID]; dup {
			return conf, fmt.Errorf("%s: id %s is also entry %d's", at, e.ID, j)
		}
		if j, dup := addrs[e.Address]; dup {
			return conf, fmt.Errorf("%s: address %s is also entry %d's", at, e.Address, j)
		}
		ids[e.ID], addrs[e.Address] = i+1, i+1
		s := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(e.ID), Address: raft.ServerAddress(e.Address)}
		if e.NonVoter {
			s.Suffrage = raft.Nonvoter
		} else {
			voters++
		}
		if e.ID == self {
			found, selfIsV = true, !e.NonVoter
			// The others dial this address to reach the node; one it does
			// not listen on would cut it off once it has peers again.
			if selfAddr != "" && e.Address != selfAddr {
				return conf, fmt.Errorf("%s: address %s is not this node's peer address %s", at, e.Address, selfAddr)
			}
		}
		conf.Servers = append(conf.Servers, s)
	}
	switch {
	case voters == 0:
		return conf, errors.New("lists no voter")
	case !found:
		return conf, fmt.Errorf("does not list this node (%s); every node recovered must be one of the voters", self)
	case !selfIsV:
		return conf, fmt.Errorf("lists this node (%s) as a non-voter; every node recovered must be one of the voters", self)
	}
	return conf, nil
}

// recoverFromPeersFile runs the recovery if <data-dir>/peers.json exists;
// New calls it before Raft starts, with the stores Raft will use (has is
// whether they hold state). A peers.json that is invalid, or a data
// directory with nothing to recover, stops the node before anything is
// changed. A crash after the recovery but before the file is removed only
// repeats it at the next start, to the same effect.
func (n *Node) recoverFromPeersFile(rc *raft.Config, has bool, logs raft.LogStore, snaps raft.SnapshotStore) error {
	path := filepath.Join(n.cfg.DataDir, peersFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	conf, err := parsePeers(data, n.cfg.Name, n.peerAddr())
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was changed: correct or remove the file", path, err)
	}
	if !has {
		return fmt.Errorf("%s: the data directory holds no Raft state, so there is nothing to recover; nothing was changed: remove the file (a new node bootstraps with --initial-cluster or joins with --join)", path)
	}
	n.logger.Warn("recovering from peers.json: forcing a new configuration and committing every entry in the log", "members", describeConf(conf))
	// RecoverCluster restores and replays into an FSM of its own; this
	// node's FSM is restored by Raft from the snapshot it writes.
	scratch := fsm.New(state.New(n.cfg.State), n.fsmTypes, n.logger.Named("recover"))
	if err := raft.RecoverCluster(rc, scratch, logs, n.stable, snaps, n.trans, conf); err != nil {
		return fmt.Errorf("recover from %s: %w", path, err)
	}
	var index, term uint64
	if metas, err := snaps.List(); err == nil && len(metas) > 0 {
		index, term = metas[0].Index, metas[0].Term
	}
	now := time.Now().UTC()
	if err := writePeersInfo(filepath.Join(n.cfg.DataDir, peersInfoFile), peersInfoText(n.cfg.Name, conf, index, term, now)); err != nil {
		n.logger.Warn("could not write peers.info", "error", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("recovered, but could not remove %s (remove it, then start the node again): %w", path, err)
	}
	syncPeersDir(n.cfg.DataDir)
	n.logger.Warn("recovered from peers.json and removed it: every entry in the log up to the recovery is committed",
		"members", describeConf(conf), "last_index", index, "last_term", term)
	return nil
}

// peerAddr is the node's own peer address as its configuration names it,
// or "" when it does not.
func (n *Node) peerAddr() string {
	for _, p := range n.cfg.InitialCluster {
		if p.Name == n.cfg.Name {
			return p.Addr
		}
	}
	return ""
}

func describeConf(conf raft.Configuration) string {
	var parts []string
	for _, s := range conf.Servers {
		p := string(s.ID) + "=" + string(s.Address)
		if s.Suffrage != raft.Voter {
			p += " (non-voter)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

func peersInfoText(self string, conf raft.Configuration, index, term uint64, at time.Time) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s recovered from peers.json at %s.\n\n", self, at.Format(time.RFC3339))
	b.WriteString("The file forced this Raft configuration onto the node's log and snapshots:\n\n")
	for _, s := range conf.Servers {
		suffrage := "voter"
		if s.Suffrage != raft.Voter {
			suffrage = "non-voter"
		}
		fmt.Fprintf(&b, "    %s %s %s\n", s.ID, s.Address, suffrage)
	}
	fmt.Fprintf(&b, "\nEvery entry of the log, up to index %d (term %d), was made committed,\n", index, term)
	b.WriteString("including any the old cluster had not committed. peers.json was then\n")
	b.WriteString("removed so that the recovery runs once.\n\n")
	b.WriteString("To recover again after losing a majority of the voters for good: stop\n")
	b.WriteString("every surviving node, write the same peers.json, a JSON list of\n")
	b.WriteString(`{"id": NAME, "address": PEER-ADDR, "non_voter": false}, into each one's` + "\n")
	b.WriteString("data directory, and start them. Never do it while the lost nodes could\n")
	b.WriteString("come back: they would form a second cluster. docs/operations.md,\n")
	b.WriteString("\"Quorum loss\", has the whole procedure.\n")
	return []byte(b.String())
}

// writePeersInfo writes path through a temporary file, synced, so that a
// crash leaves the old file or the new one.
func writePeersInfo(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// syncPeersDir makes a removal or rename in dir durable, as far as the file
// system allows; a failure only means the recovery may run again.
func syncPeersDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
