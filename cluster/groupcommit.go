package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// groupCommit hands the leader's writes to Raft in groups once they pile
// up: while few writes are in flight (handed to Raft, not yet applied), a
// new one goes at once, as raft alone would send it; once writesAlone are,
// the writes that arrive wait, and go together once all before them are
// through, one group at a time, until no write is left in flight.
//
// Every batch Raft sends costs each node a bbolt transaction (two
// fdatasyncs, the log's B+tree pages rewritten), an AppendEntries per
// follower and a round of goroutine and thread wakeups, whatever its size.
// Left to itself, raft's leader loop takes whatever waits in its apply
// channel each time round: on a busy machine a few entries, several
// batches in flight at once, each paying in full. Holding the writes that
// arrive until the ones before are through makes batches of whatever
// arrived meanwhile, so those costs are paid once for many writes
// (docs/performance.md, "Renewals at 64 and 256 clients"). Writes at a few
// hundred a second seldom find writesAlone in flight, so they seldom wait
// behind another's commit: when every write waited for the one in flight,
// a slow commit on a busy machine held the next ones back as long.
//
// Each write is still a log entry of its own, handed to Raft in arrival
// order; what a group shares is the moment it is handed over (raft's
// BatchApplyCh buffers the entries, so that its leader loop finds the whole
// group at once and stores it as one batch).
type groupCommit struct {
	// apply hands one entry to Raft without waiting for its commit.
	apply func(data []byte) raft.ApplyFuture
	// alone: a write that finds fewer writes than this in flight goes
	// at once; otherwise it waits for the next group.
	alone int

	mu       sync.Mutex
	inFlight int         // writes handed to Raft and not yet applied
	waiting  []*proposal // the next group, in arrival order
	// sent holds the writes handed to Raft and not yet through, by the
	// first byte of their data, which is also the first byte of their log
	// entry's Data (raft stores the slice it was given): a stalled log
	// write names its entries by it (abandon).
	sent map[*byte]*proposal
	// grouping: writes piled up (alone were in flight) and have not all
	// been applied since; until they are, a group goes only once the one
	// before it is through.
	grouping bool
}

// writesAlone is the leader's groupCommit.alone. At a few hundred writes a
// second, eight are in flight only behind a commit stalled for tens of
// milliseconds; under dozens of concurrent clients they usually are.
const writesAlone = 8

// crowded reports whether a write arriving now waits for the next group:
// while alone writes are in flight, and from then on while any is, until
// every write has been applied. Under steady load that sends one group at
// a time, each as large as what arrived while the one before was in
// flight. Letting the waiting writes go as soon as fewer than alone were
// in flight instead kept several smaller groups in flight, each a bbolt
// transaction on every node: one group at a time stores more entries per
// transaction, and in paired runs against that rule neither throughput,
// CPU per write nor watchers' delivery lag was the worse for it.
// The waiting writes go as soon as it is false, so none waits while a
// later one goes ahead. Called with mu held.
func (g *groupCommit) crowded() bool {
	if !g.grouping && g.inFlight >= max(g.alone, 1) {
		g.grouping = true
	}
	return g.grouping && g.inFlight > 0
}

// proposal is one write, from its arrival until it is applied.
type proposal struct {
	data []byte
	// f is its entry's future, set when its group goes to Raft; err is
	// f.Error(), or the error it was abandoned with, set before done is
	// closed. Only the group's goroutine waits on f: raft's futures are
	// not safe for concurrent waiters.
	f    raft.ApplyFuture
	err  error
	done chan struct{}
	// Under groupCommit.mu: taken once its group is being handed to
	// Raft; withdrawn if its caller left before; finished once done is
	// closed.
	taken, withdrawn, finished bool
}

// finish records p's outcome and releases its caller, once. Called with
// groupCommit.mu held.
func (p *proposal) finish(err error) {
	if p.finished {
		return
	}
	p.finished = true
	p.err = err
	close(p.done)
}

// submit hands data to Raft at once if few writes are in flight, else
// queues it for the next group. Its done channel is closed once it is
// applied or has failed.
func (g *groupCommit) submit(data []byte) *proposal {
	p := &proposal{data: data, done: make(chan struct{})}
	g.mu.Lock()
	if g.crowded() {
		g.waiting = append(g.waiting, p)
		g.mu.Unlock()
		return p
	}
	g.inFlight++
	p.taken = true
	g.mu.Unlock()
	g.send([]*proposal{p})
	return p
}

// withdraw takes p out of the next group for a caller that gives up, and
// reports whether it was in time: then nothing was written.
func (g *groupCommit) withdraw(p *proposal) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p.taken {
		return false
	}
	p.withdrawn = true
	return true
}

// send hands group to Raft, then waits for its entries in order (raft
// applies them in order); as each is through, applied or failed
// (leadership lost, shutdown), the writes waiting may go.
func (g *groupCommit) send(group []*proposal) {
	g.mu.Lock()
	if g.sent == nil {
		g.sent = make(map[*byte]*proposal)
	}
	for _, p := range group {
		g.sent[&p.data[0]] = p
	}
	g.mu.Unlock()
	for _, p := range group {
		p.f = g.apply(p.data)
	}
	go func() {
		for _, p := range group {
			err := p.f.Error()
			g.applied(p, err)
		}
	}()
}

// abandon ends the writes whose log entries are among logs with err: a log
// write that stalled and will be undone, so they are stored nowhere and
// Raft will fail them once the write ends. Their callers need not wait
// that long. They stay in flight until Raft is through with them.
func (g *groupCommit) abandon(logs []*raft.Log, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range logs {
		if len(l.Data) > 0 {
			if p := g.sent[&l.Data[0]]; p != nil {
				p.finish(err)
			}
		}
	}
}

// applied counts p through with Raft's outcome, and sends the waiting
// ones as a group once few enough are in flight.
func (g *groupCommit) applied(p *proposal, err error) {
	g.mu.Lock()
	delete(g.sent, &p.data[0])
	p.finish(err)
	g.inFlight--
	if g.crowded() {
		g.mu.Unlock()
		return
	}
	var group []*proposal
	for _, p := range g.waiting {
		if !p.withdrawn {
			p.taken = true
			group = append(group, p)
		}
	}
	g.waiting = nil
	g.inFlight += len(group)
	if g.inFlight == 0 {
		g.grouping = false // drained: writes go alone again
	}
	g.mu.Unlock()
	if len(group) > 0 {
		g.send(group)
	}
}
