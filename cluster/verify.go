package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// verifier coalesces leadership checks: one VerifyLeader round (a heartbeat
// to every follower, answered by a quorum) serves every reader that joined
// before the round started, as etcd's linearizableReadLoop does. A reader
// captures its read index before joining, so the round that confirms it
// starts after the capture.
type verifier struct {
	mu      sync.Mutex
	next    *round // the round new readers join; not started yet
	running bool
}

type round struct {
	done chan struct{}
	err  error
}

// verify confirms, with a quorum, that r is still the leader.
func (v *verifier) verify(ctx context.Context, r *raft.Raft) error {
	v.mu.Lock()
	if v.next == nil {
		v.next = &round{done: make(chan struct{})}
		if !v.running {
			v.running = true
			go v.loop(r)
		}
	}
	rd := v.next
	v.mu.Unlock()
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return ErrTimeout
	}
}

// loop runs rounds back to back while readers are waiting. VerifyLeader has
// no timeout of its own: without a quorum it resolves when the leader lease
// check makes the leader step down (LeaderLeaseTimeout).
func (v *verifier) loop(r *raft.Raft) {
	for {
		v.mu.Lock()
		rd := v.next
		v.next = nil
		if rd == nil {
			v.running = false
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		err := r.VerifyLeader().Error()
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			err = ErrNotLeader
		}
		rd.err = err
		close(rd.done)
	}
}
