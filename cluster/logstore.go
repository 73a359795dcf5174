package cluster

import "github.com/hashicorp/raft"

// compactionStep is how many entries one bbolt transaction deletes when a
// snapshot compacts the log. bbolt has one writer at a time, and deleting
// the tens of thousands of entries a snapshot compacts under steady writes
// in one transaction holds that writer for as long as it takes to rewrite
// all their pages; every append, the leader's included, waits behind it.
// In steps, an append waits behind one step at most.
const compactionStep = 4096

// logStore deletes a compacted prefix of the log in steps of
// compactionStep entries, oldest first, each step its own transaction, so
// appends go on between the steps. Raft compacts only entries a snapshot
// holds, so a log stopped between two steps (a crash) still follows on
// from the snapshot: it just starts later. Any other range — one that
// reaches the last entry, as when a follower drops a conflicting suffix or
// everything — is deleted in one transaction, as before: deleted in part,
// it could leave entries after a gap.
type logStore struct {
	raft.LogStore
	step uint64
}

func newLogStore(s raft.LogStore) *logStore { return &logStore{LogStore: s, step: compactionStep} }

func (s *logStore) DeleteRange(min, max uint64) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	if min > first || max >= last || max < min {
		return s.LogStore.DeleteRange(min, max)
	}
	for lo := min; ; lo += s.step {
		hi := max
		if max-lo >= s.step {
			hi = lo + s.step - 1
		}
		if err := s.LogStore.DeleteRange(lo, hi); err != nil {
			return err
		}
		if hi == max {
			return nil
		}
	}
}
