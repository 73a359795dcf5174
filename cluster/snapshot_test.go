package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/backup"
	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// saveBackup has n write a backup to a file and opens it.
func saveBackup(t *testing.T, n *Node) *backup.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), n.Name()+".snap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := n.SaveSnapshot(opCtx(t), f)
	if err != nil {
		t.Fatalf("save on %s: %v", n.Name(), err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	bf, err := backup.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bf.Close() })
	if bf.Meta.Index != meta.Index || bf.Meta.Term != meta.Term || bf.Meta.Node != n.Name() {
		t.Fatalf("file says %+v, SaveSnapshot %+v", bf.Meta, meta)
	}
	return bf
}

// A backup from any node holds every write acknowledged before it was
// asked for, even one the node had not applied yet.
func TestSaveSnapshotHoldsAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	leader := c.node(l)
	for i := range 10 {
		mustApply(t, leader, createCmd(t, fmt.Sprintf("l%d", i), "a"))
	}
	for _, i := range append([]int{l}, c.followers(l)...) {
		n := c.node(i)
		name := "last-before-" + n.Name()
		rv := mustApply(t, leader, createCmd(t, name, "a"))
		bf := saveBackup(t, n)
		if bf.Meta.Index < rv || bf.Meta.Term != leader.raft.CurrentTerm() {
			t.Errorf("%s: backup at index %d, term %d; want at least %d, term %d", n.Name(), bf.Meta.Index, bf.Meta.Term, rv, leader.raft.CurrentTerm())
		}
		st, err := bf.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if o := st.Snapshot().Get(leaseKey(name)); o == nil || o.RV != rv {
			t.Errorf("%s: the backup lacks %s, acknowledged at %d before it was asked for", n.Name(), name, rv)
		}
		if got := st.Snapshot().Count("leases"); got < 11 {
			t.Errorf("%s: %d leases in the backup", n.Name(), got)
		}
	}
}

// Data dirs restored from a backup form a new cluster at once: the objects
// at their own resourceVersions, nothing to resume from below the new
// index, and new writes above it.
func TestRestoreDataDirStartsANewCluster(t *testing.T) {
	old := newCluster(t, 3)
	leader := old.node(old.waitAllReady())
	want := map[string]uint64{}
	for i := range 20 {
		name := fmt.Sprintf("l%d", i)
		want[name] = mustApply(t, leader, createCmd(t, name, "a"))
	}
	bf := saveBackup(t, leader)
	after := mustApply(t, leader, createCmd(t, "after-the-backup", "a"))
	old.closeAll()
	st, err := bf.Decode()
	if err != nil {
		t.Fatal(err)
	}

	const bump = 1000
	index := bf.Meta.Index + bump
	base := t.TempDir()
	c := newCluster(t, 3, func(cfg *Config) {
		dir := filepath.Join(base, cfg.Name)
		d := fsm.DumpState(st)
		if err := d.Rebase(index); err != nil {
			t.Fatal(err)
		}
		if err := RestoreDataDir(dir, cfg.InitialCluster, index, 1, d.Write); err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = dir
	})
	entries, _ := os.ReadDir(base)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"n1", "n2", "n3"}) {
		t.Errorf("beside the data dirs: %v", names)
	}

	l := c.waitAllReady()
	rv := mustApply(t, c.node(l), createCmd(t, "new", "a"))
	if rv <= index || rv <= after {
		t.Errorf("a new write got %d; want above %d and above the old cluster's %d", rv, index, after)
	}
	for _, i := range c.running() {
		n := c.node(i)
		if err := n.LinearizableRead(opCtx(t)); err != nil {
			t.Fatal(err)
		}
		for name, rv := range want {
			if _, got := holderOf(n, name); got != rv {
				t.Errorf("%s: %s at %d, want %d", n.Name(), name, got, rv)
			}
		}
		if _, got := holderOf(n, "after-the-backup"); got != 0 {
			t.Errorf("%s: holds a write made after the backup", n.Name())
		}
		for _, from := range []uint64{0, bf.Meta.Index, after, index - 1} {
			if since := n.State().EventsSince(from); !since.Expired {
				t.Errorf("%s: events since %d are not expired", n.Name(), from)
			}
		}
		if since := n.State().EventsSince(index); since.Expired || len(since.Events) != 1 || since.Events[0].RV != rv {
			t.Errorf("%s: events since %d: %+v, want the new write", n.Name(), index, since)
		}
	}
}

func TestRestoreDataDirRefuses(t *testing.T) {
	members := []Peer{{Name: "n1", Addr: "127.0.0.1:1"}}
	st := state.New(state.Config{})
	write := func(w io.Writer) error { return fsm.DumpState(st).Write(w) }
	base := t.TempDir()
	listing := func() []string {
		entries, _ := os.ReadDir(base)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}

	full := filepath.Join(base, "full")
	if err := os.MkdirAll(filepath.Join(full, "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RestoreDataDir(full, members, 10, 1, write); err == nil {
		t.Error("restored into a data dir that is not empty")
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RestoreDataDir(file, members, 10, 1, write); err == nil {
		t.Error("restored over a file")
	}
	failing := func(w io.Writer) error {
		if _, err := w.Write([]byte("LHSNAP")); err != nil {
			return err
		}
		return errors.New("disk full")
	}
	if err := RestoreDataDir(filepath.Join(base, "failed"), members, 10, 1, failing); err == nil {
		t.Error("a failed write of the state restored")
	}
	if err := RestoreDataDir(filepath.Join(base, "none"), nil, 10, 1, write); err == nil {
		t.Error("restored with no members")
	}
	if got := listing(); !slices.Equal(got, []string{"file", "full"}) {
		t.Errorf("after the refusals: %v", got)
	}

	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RestoreDataDir(empty, members, 10, 1, write); err != nil {
		t.Fatalf("into an empty dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "raft.db")); err != nil {
		t.Error(err)
	}
	if got := listing(); !slices.Equal(got, []string{"empty", "file", "full"}) {
		t.Errorf("after restoring into an empty dir: %v", got)
	}
}
