package cluster

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// recordingStore notes every DeleteRange that reaches the underlying store.
type recordingStore struct {
	*raft.InmemStore
	deletes [][2]uint64
}

func (s *recordingStore) DeleteRange(min, max uint64) error {
	s.deletes = append(s.deletes, [2]uint64{min, max})
	return s.InmemStore.DeleteRange(min, max)
}

func storeEntries(t *testing.T, s raft.LogStore, from, to uint64) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte("entry")})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// TestLogStoreCompactsInSteps: a compaction (a range from the first entry)
// reaches the store as steps of at most `step` entries, oldest first; a
// range that does not start at the first entry, or reaches the last, is
// one deletion.
func TestLogStoreCompactsInSteps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max uint64
		want     [][2]uint64
	}{
		{"several steps", 1, 10, [][2]uint64{{1, 4}, {5, 8}, {9, 10}}},
		{"whole steps", 1, 8, [][2]uint64{{1, 4}, {5, 8}}},
		{"less than a step", 1, 3, [][2]uint64{{1, 3}}},
		{"from before the first entry", 0, 5, [][2]uint64{{0, 3}, {4, 5}}},
		{"a suffix", 12, 20, [][2]uint64{{12, 20}}},
		{"everything", 1, 20, [][2]uint64{{1, 20}}},
		{"past the last entry", 1, 25, [][2]uint64{{1, 25}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingStore{InmemStore: raft.NewInmemStore()}
			storeEntries(t, rec, 1, 20)
			s := &logStore{LogStore: rec, step: 4}
			if err := s.DeleteRange(tc.min, tc.max); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec.deletes, tc.want) {
				t.Fatalf("deletions %v, want %v", rec.deletes, tc.want)
			}
		})
	}
}

// TestLogStoreCompactionOnBolt: compacted in steps on bbolt, the log keeps
// exactly the entries after the range, and appends go on as before.
func TestLogStoreCompactionOnBolt(t *testing.T) {
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(t.TempDir(), "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	s := &logStore{LogStore: bolt, step: 100}
	storeEntries(t, s, 1, 1000)
	if err := s.DeleteRange(1, 950); err != nil {
		t.Fatal(err)
	}
	storeEntries(t, s, 1001, 1010)
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 951 || last != 1010 {
		t.Fatalf("log spans %d..%d, want 951..1010", first, last)
	}
	var l raft.Log
	for _, i := range []uint64{1, 500, 950} {
		if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("entry %d after compaction: err %v, want ErrLogNotFound", i, err)
		}
	}
	for i := uint64(951); i <= 1010; i++ {
		if err := s.GetLog(i, &l); err != nil || l.Index != i {
			t.Fatalf("entry %d: %v (index %d)", i, err, l.Index)
		}
	}
}
