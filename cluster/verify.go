package cluster

import (
	"context"
	"sync"
)

// coalescer shares one run of an operation among every caller that joined
// before the run started, as etcd's linearizableReadLoop shares one read
// index among the reads waiting for it. The leader uses it for its quorum
// round (VerifyLeader), a follower for its read-index request to the
// leader. Callers join first and the run starts after, so whatever the run
// observes (a commit index, a quorum's answer) is later than every joiner's
// arrival, which is what linearizable reads need.
type coalescer[T any] struct {
	mu      sync.Mutex
	next    *round[T] // the run new callers join; not started yet
	running bool
}

type round[T any] struct {
	do    func() (T, error)
	done  chan struct{}
	value T
	err   error
}

// run waits for a run of do that starts after the call, or for ctx. When
// callers pass different funcs, the run uses the first joiner's.
func (c *coalescer[T]) run(ctx context.Context, do func() (T, error)) (T, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next = &round[T]{do: do, done: make(chan struct{})}
		if !c.running {
			c.running = true
			go c.loop()
		}
	}
	rd := c.next
	c.mu.Unlock()
	select {
	case <-rd.done:
		return rd.value, rd.err
	case <-ctx.Done():
		var zero T
		return zero, ErrTimeout
	}
}

// loop runs rounds back to back while callers are waiting.
func (c *coalescer[T]) loop() {
	for {
		c.mu.Lock()
		rd := c.next
		c.next = nil
		if rd == nil {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		rd.value, rd.err = rd.do()
		close(rd.done)
	}
}
