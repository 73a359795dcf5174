package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/fsm/state"
)

// TestFeatureLevel: CmdFeatureLevel raises the level and never lowers it;
// a snapshot carries it and a restore sets it back; a snapshot at level 0
// is exactly what a release before levels wrote, so that it can read it.
func TestFeatureLevel(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	f.Apply(cmdLog(1, create(t, "ns", "a", "uid-a", "h")))
	atZero := persist(t, f)
	if got := f.State().FeatureLevel(); got != 0 {
		t.Fatalf("level %d before any CmdFeatureLevel", got)
	}

	for i, c := range []struct{ level, want uint64 }{{1, 1}, {0, 1}, {1, 1}} {
		cmd := &Command{Type: CmdFeatureLevel, Level: c.level}
		dec, err := DecodeCommand(cmd.Encode())
		if err != nil || dec.Type != CmdFeatureLevel || dec.Level != c.level {
			t.Fatalf("round trip of %+v: %+v %v", cmd, dec, err)
		}
		if res := asResult(t, f.Apply(cmdLog(uint64(2+i), cmd))); res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := f.State().FeatureLevel(); uint64(got) != c.want {
			t.Errorf("after level %d: %d, want %d", c.level, got, c.want)
		}
	}
	data := persist(t, f)
	g := newFSM(state.DefaultConfig())
	if err := restore(t, g, data); err != nil {
		t.Fatal(err)
	}
	if got := g.State().FeatureLevel(); got != 1 {
		t.Errorf("restored level %d, want 1", got)
	}
	// Restoring the snapshot taken at level 0 sets the level back to 0:
	// the state is the snapshot's.
	if err := restore(t, g, atZero); err != nil {
		t.Fatal(err)
	}
	if got := g.State().FeatureLevel(); got != 0 {
		t.Errorf("restored a level-0 snapshot: level %d", got)
	}
	// Without a level the snapshot has no level record: the records are
	// the index, the object, the history event and the end.
	if n := countRecords(t, atZero, recFeatureLevel); n != 0 {
		t.Errorf("a level-0 snapshot has %d level records", n)
	}
	if n := countRecords(t, data, recFeatureLevel); n != 1 {
		t.Errorf("a level-1 snapshot has %d level records, want 1", n)
	}
}

// TestFeatureLevelAboveThisRelease: a snapshot or a log entry at a level
// this release cannot apply stops it with the reason, rather than failing
// later on what it does not understand.
func TestFeatureLevelAboveThisRelease(t *testing.T) {
	f := newFSM(state.DefaultConfig())
	s := &snapshot{history: &state.HistoryDump{}, level: MaxFeatureLevel + 1}
	var b bytes.Buffer
	if err := s.write(&b); err != nil {
		t.Fatal(err)
	}
	if err := restore(t, f, b.Bytes()); err == nil || !strings.Contains(err.Error(), "upgrade it") {
		t.Errorf("restore of a snapshot above this release's level: %v", err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "upgrade it") {
			t.Errorf("applying a level above this release's: %v", r)
		}
	}()
	f.Apply(cmdLog(1, &Command{Type: CmdFeatureLevel, Level: MaxFeatureLevel + 1}))
}

// countRecords counts the records of type typ in a snapshot.
func countRecords(t *testing.T, data []byte, typ byte) int {
	t.Helper()
	r := &reader{b: data[len(snapMagic)+1:]}
	n := 0
	for len(r.b) > 0 {
		rt := r.b[0]
		r.b = r.b[1:]
		r.bytes()
		if r.err != nil {
			t.Fatalf("malformed snapshot: %v", r.err)
		}
		if rt == typ {
			n++
		}
		if rt == recEnd {
			break
		}
	}
	return n
}
