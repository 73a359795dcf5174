package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// stableStore guards Raft's stable store (term and vote) against writes
// after the node has closed it. Raft handles heartbeats on transport
// goroutines that its shutdown does not wait for, and a heartbeat carrying
// a newer term persists it; Raft panics if that write fails. A write that
// comes after Close is held until the process ends instead: the node is
// gone, and a restarted node learns the term again from its peers.
type stableStore struct {
	raft.StableStore

	mu     sync.RWMutex
	closed bool
}

// never blocks for good: the calling goroutine belongs to a closed node.
var never = make(chan struct{})

func (s *stableStore) Set(key, val []byte) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		<-never
	}
	defer s.mu.RUnlock()
	return s.StableStore.Set(key, val)
}

func (s *stableStore) SetUint64(key []byte, val uint64) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		<-never
	}
	defer s.mu.RUnlock()
	return s.StableStore.SetUint64(key, val)
}

// close marks the store closed, waiting for writes in progress; the caller
// then closes the underlying store.
func (s *stableStore) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
