package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestStableStoreHoldsWritesAfterClose: writes pass through until the node
// closes the store; after that a late write (a heartbeat handled on a
// transport goroutine raft's shutdown does not wait for) is held instead of
// reaching a closed database, where raft would panic.
func TestStableStoreHoldsWritesAfterClose(t *testing.T) {
	inner := raft.NewInmemStore()
	s := &stableStore{StableStore: inner}
	if err := s.SetUint64([]byte("CurrentTerm"), 3); err != nil {
		t.Fatal(err)
	}
	if v, _ := inner.GetUint64([]byte("CurrentTerm")); v != 3 {
		t.Fatalf("term %d, want 3 written through", v)
	}
	s.close()
	done := make(chan struct{})
	go func() {
		_ = s.SetUint64([]byte("CurrentTerm"), 4)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("a write after close returned")
	case <-time.After(100 * time.Millisecond):
	}
	if v, _ := inner.GetUint64([]byte("CurrentTerm")); v != 3 {
		t.Fatalf("term %d after close, want 3 untouched", v)
	}
}
