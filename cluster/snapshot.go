package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/leasehold/leasehold/backup"
	"github.com/leasehold/leasehold/fsm"
)

// SaveSnapshot writes a backup of the node's state to w, in backup's file
// format, and returns its metadata. It first makes the state current as a
// linearizable read does (within the write timeout), so the backup holds
// every write acknowledged anywhere before the call, on a follower as on
// the leader. The state is taken at once and written while the node goes
// on applying. Nothing is written to w when the read fails.
func (n *Node) SaveSnapshot(ctx context.Context, w io.Writer) (backup.Meta, error) {
	rctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	err := n.LinearizableRead(rctx)
	cancel()
	if err != nil {
		return backup.Meta{}, err
	}
	d := fsm.DumpState(n.state)
	meta := backup.Meta{Index: d.Index(), Term: n.termAt(d.Index()), Created: time.Now().UTC(), Node: n.cfg.Name}
	if err := backup.Write(w, meta, d.Write); err != nil {
		return meta, fmt.Errorf("write backup at index %d: %w", meta.Index, err)
	}
	return meta, nil
}

// termAt is the term of the applied entry at idx: from the log, or from
// the node's last snapshot when the log no longer holds it (a follower
// that installed the leader's snapshot has no entries before it).
func (n *Node) termAt(idx uint64) uint64 {
	var l raft.Log
	if err := n.bolt.GetLog(idx, &l); err == nil {
		return l.Term
	}
	stats := n.raft.Stats()
	if stats["last_snapshot_index"] == strconv.FormatUint(idx, 10) {
		if t, err := strconv.ParseUint(stats["last_snapshot_term"], 10, 64); err == nil {
			return t
		}
	}
	return n.raft.CurrentTerm()
}

// RestoreDataDir makes dir the data directory of a founding member of a
// new cluster of members: its Raft state is one snapshot at index and
// term, whose configuration is members (all voters) and whose FSM state
// is what writeState writes. A node started on it with its name among
// members finds existing state, restores the snapshot and does not
// bootstrap; the members elect a leader and append after index.
//
// dir must be absent or an empty directory. The state is built in a
// temporary directory and moved into place once complete, so that a
// failure leaves dir as it was: beside dir, renamed to it, when dir is
// absent; inside it when it exists (a mount point, a directory made for
// the node), moved up entry by entry, the snapshot first, since a data
// dir that holds one is a member's however the rest went. The caller
// verifies what writeState writes before calling.
func RestoreDataDir(dir string, members []Peer, index, term uint64, writeState func(io.Writer) error) (err error) {
	if len(members) == 0 {
		return errors.New("restore: no members")
	}
	if index == 0 || term == 0 {
		return fmt.Errorf("restore: index %d, term %d: both must be positive", index, term)
	}
	exists, err := checkRestoreTarget(dir)
	if err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	parent, within := filepath.Dir(dir), dir
	if !exists {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		within = parent
	}
	tmp, err := os.MkdirTemp(within, "."+filepath.Base(dir)+".restore-")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := buildDataDir(tmp, members, index, term, writeState); err != nil {
		return err
	}
	if err := syncRestoreDir(tmp); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		return syncRestoreDir(parent)
	}
	for _, name := range []string{"snapshots", "raft.db"} {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if err := os.Remove(tmp); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return syncRestoreDir(dir)
}

// buildDataDir writes the Raft state of RestoreDataDir into dir, laid out
// as New opens it.
func buildDataDir(dir string, members []Peer, index, term uint64, writeState func(io.Writer) error) error {
	// raft.db: empty, since the state is in the snapshot.
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return fmt.Errorf("restore: create raft log: %w", err)
	}
	if err := bolt.Close(); err != nil {
		return fmt.Errorf("restore: create raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	var conf raft.Configuration
	for _, p := range members {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.Addr)})
	}
	// The snapshot store encodes the voters' addresses for the legacy
	// peers field through a transport; an in-memory one encodes them as
	// the node's network transport does, as the address itself.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, term, conf, index, trans)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := writeState(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("restore: write state: %w", err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("restore: write snapshot: %w", err)
	}
	return nil
}

// checkRestoreTarget refuses a dir that exists and is not an empty
// directory: a restore never mixes with state already there. It reports
// whether dir exists.
func checkRestoreTarget(dir string) (exists bool, err error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("restore: %w", err)
	}
	if !fi.IsDir() {
		return true, fmt.Errorf("restore: data dir %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, fmt.Errorf("restore: %w", err)
	}
	if len(entries) > 0 {
		return true, fmt.Errorf("restore: data dir %s is not empty; a restore builds a new member's data dir and never overwrites one", dir)
	}
	return true, nil
}

// syncRestoreDir makes the entries of dir durable.
func syncRestoreDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
