package fsm

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/leasehold/leasehold/fsm/state"
)

// Dump is a state as Raft's snapshot of it holds it (objects, history,
// applied index, the history's floor), taken outside Raft: for a backup
// of a running node, or to write a decoded backup again. Taking one is
// cheap and safe beside the FSM goroutine (state.Store.Dump copies
// immutable views under the store's lock); writing it runs beside the
// FSM as Persist does.
type Dump struct {
	s snapshot
}

// DumpState takes st's state at its applied index.
func DumpState(st *state.Store) *Dump {
	return &Dump{*newSnapshot(st)}
}

// Index is the applied index the dump was taken at.
func (d *Dump) Index() uint64 { return d.s.applied }

// Objects are the stored objects, ordered by key.
func (d *Dump) Objects() []*state.Object { return d.s.objs }

// Rebase moves the dump to index, past its own, with an empty history
// whose floor is index: a state restored from it answers 410 Expired to
// a watch or an exact list from any earlier resourceVersion, and hands
// out only later ones, while its objects keep theirs. A new cluster
// built from a backup starts so (etcd's --bump-revision with
// --mark-compacted).
func (d *Dump) Rebase(index uint64) error {
	if index < d.s.applied {
		return fmt.Errorf("rebase to index %d, below the dump's %d", index, d.s.applied)
	}
	d.s.applied, d.s.dropped = index, index
	d.s.history = &state.HistoryDump{}
	return nil
}

// Write writes the dump in the current snapshot format, as Persist does.
// A dump can be written once (its history is consumed as it is written).
func (d *Dump) Write(w io.Writer) error {
	if d.s.history == nil {
		return errors.New("dump written already")
	}
	large := d.s.history.Len() >= largeSnapshotEvents
	err := d.s.write(w)
	d.s.history = nil
	if large {
		// As after Persist: the versions rebuilt for the history are
		// garbage now, and should not set the next heap goal.
		debug.FreeOSMemory()
	}
	return err
}

// ReadSnapshot decodes a whole snapshot, any format Restore reads, into a
// new store, checking it as Restore does: a snapshot it returns without
// error would restore on a node.
func ReadSnapshot(r io.Reader) (*state.Store, error) {
	st := state.New(state.Config{})
	if err := New(st, DefaultTypes(), nil).Restore(io.NopCloser(r)); err != nil {
		return nil, err
	}
	return st, nil
}
