package cluster

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// fakeFuture is an entry handed to a fake Raft, applied when the test says.
type fakeFuture struct {
	data []byte
	done chan struct{}
	err  error
}

func (f *fakeFuture) Error() error          { <-f.done; return f.err }
func (f *fakeFuture) Index() uint64         { return 0 }
func (f *fakeFuture) Response() interface{} { return nil }

// fakeRaft records the entries handed to it, in order.
type fakeRaft struct {
	mu      sync.Mutex
	entries []*fakeFuture
	handed  chan struct{} // a token per entry handed over
}

func newFakeRaft() *fakeRaft { return &fakeRaft{handed: make(chan struct{}, 100)} }

func (r *fakeRaft) apply(data []byte) raft.ApplyFuture {
	f := &fakeFuture{data: data, done: make(chan struct{})}
	r.mu.Lock()
	r.entries = append(r.entries, f)
	r.mu.Unlock()
	r.handed <- struct{}{}
	return f
}

// waitHanded waits until n more entries were handed over.
func (r *fakeRaft) waitHanded(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.handed:
		case <-time.After(waitTimeout):
			t.Fatalf("an entry was not handed to Raft")
		}
	}
}

// handedNothing checks that no entry is handed over for a while.
func (r *fakeRaft) handedNothing(t *testing.T) {
	t.Helper()
	select {
	case <-r.handed:
		t.Fatalf("an entry was handed to Raft while a group was in flight")
	case <-time.After(50 * time.Millisecond):
	}
}

func (r *fakeRaft) entry(i int) *fakeFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries[i]
}

func (r *fakeRaft) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.entries)
}

// applied waits for p to be applied and returns its error.
func applied(t *testing.T, p *proposal) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(waitTimeout):
		t.Fatalf("write %q was not applied", p.data)
		return nil
	}
}

// notApplied checks that p is not through yet.
func notApplied(t *testing.T, p *proposal) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("write %q applied before its entry", p.data)
	default:
	}
}

// TestGroupCommitGroupsWritesBehindTheOneInFlight (one write may go
// alone): a lone write goes at once; the writes that arrive while it is in
// flight wait for it to be applied, then go together, in arrival order,
// and each is through when its own entry is; with nothing in flight the
// next write goes at once again.
func TestGroupCommitGroupsWritesBehindTheOneInFlight(t *testing.T) {
	r := newFakeRaft()
	g := &groupCommit{apply: r.apply, alone: 1}

	a := g.submit([]byte("a"))
	r.waitHanded(t, 1)
	var group []*proposal
	for _, d := range []string{"b", "c", "d"} {
		group = append(group, g.submit([]byte(d)))
	}
	r.handedNothing(t)

	close(r.entry(0).done) // "a" applied
	if err := applied(t, a); err != nil {
		t.Fatalf("write a: %v", err)
	}
	r.waitHanded(t, 3)
	for i, want := range []string{"a", "b", "c", "d"} {
		if got := string(r.entry(i).data); got != want {
			t.Errorf("entry %d is %q, want %q", i, got, want)
		}
	}

	// The group b, c, d is in flight until d, its last, is applied.
	e := g.submit([]byte("e"))
	close(r.entry(1).done)
	if err := applied(t, group[0]); err != nil {
		t.Fatalf("write b: %v", err)
	}
	notApplied(t, group[1])
	close(r.entry(2).done)
	r.handedNothing(t)
	close(r.entry(3).done)
	r.waitHanded(t, 1)
	for _, p := range group[1:] {
		if err := applied(t, p); err != nil {
			t.Fatalf("write %q: %v", p.data, err)
		}
	}
	close(r.entry(4).done)
	if err := applied(t, e); err != nil {
		t.Fatalf("write e: %v", err)
	}
	waitFor(t, waitTimeout, "no group in flight", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.inFlight == 0
	})
	g.submit([]byte("f"))
	r.waitHanded(t, 1) // at once
}

// TestGroupCommitWithdrawnBeforeItsGroup: a write withdrawn while it waits
// never reaches Raft, and the others of its group still go; once its group
// went, a write cannot be withdrawn.
func TestGroupCommitWithdrawnBeforeItsGroup(t *testing.T) {
	r := newFakeRaft()
	g := &groupCommit{apply: r.apply, alone: 1}
	a := g.submit([]byte("a"))
	r.waitHanded(t, 1)
	if g.withdraw(a) {
		t.Fatalf("withdrew a write Raft already has")
	}

	left := g.submit([]byte("left"))
	stays := g.submit([]byte("stays"))
	if !g.withdraw(left) {
		t.Fatalf("could not withdraw a waiting write")
	}

	close(r.entry(0).done)
	r.waitHanded(t, 1)
	r.handedNothing(t)
	if n := r.count(); n != 2 || string(r.entry(1).data) != "stays" {
		t.Fatalf("%d entries, the second %q; want 2, the second \"stays\"", n, r.entry(1).data)
	}
	close(r.entry(1).done)
	if err := applied(t, stays); err != nil {
		t.Fatalf("write that stayed: %v", err)
	}
	notApplied(t, left)
}

// TestGroupCommitFailedGroupReleasesTheNext: a group that fails (leadership
// lost) lets the next one go, as one that commits does: the next writes
// then meet Raft's own answer instead of waiting forever, and each caller
// gets its own entry's error.
func TestGroupCommitFailedGroupReleasesTheNext(t *testing.T) {
	r := newFakeRaft()
	g := &groupCommit{apply: r.apply, alone: 1}
	a := g.submit([]byte("a"))
	r.waitHanded(t, 1)
	b := g.submit([]byte("b"))

	first := r.entry(0)
	first.err = raft.ErrLeadershipLost
	close(first.done)
	if err := applied(t, a); !errors.Is(err, raft.ErrLeadershipLost) {
		t.Fatalf("write a: %v, want ErrLeadershipLost", err)
	}
	r.waitHanded(t, 1)
	close(r.entry(1).done)
	if err := applied(t, b); err != nil {
		t.Fatalf("write b: %v", err)
	}
}

// TestGroupCommitOneGroupAtATimeUntilDrained: below the limit every write
// goes at once, however many are in flight; at it, the next ones wait, and
// from then on a group goes only once every write before it is through,
// until all are: then writes go at once again.
func TestGroupCommitOneGroupAtATimeUntilDrained(t *testing.T) {
	r := newFakeRaft()
	g := &groupCommit{apply: r.apply, alone: 3}
	for _, d := range []string{"a", "b", "c"} {
		g.submit([]byte(d))
	}
	r.waitHanded(t, 3)
	d := g.submit([]byte("d"))
	e := g.submit([]byte("e"))
	r.handedNothing(t)

	close(r.entry(0).done) // a through: b and c still in flight
	r.handedNothing(t)
	close(r.entry(1).done)
	close(r.entry(2).done)
	r.waitHanded(t, 2)
	if got := string(r.entry(3).data) + string(r.entry(4).data); got != "de" {
		t.Fatalf("entries 3 and 4 are %q, want \"de\"", got)
	}
	f := g.submit([]byte("f")) // d and e in flight: f waits for both
	close(r.entry(3).done)
	r.handedNothing(t)
	close(r.entry(4).done)
	for _, p := range []*proposal{d, e} {
		if err := applied(t, p); err != nil {
			t.Fatalf("write %q: %v", p.data, err)
		}
	}
	r.waitHanded(t, 1)
	close(r.entry(5).done)
	if err := applied(t, f); err != nil {
		t.Fatalf("write f: %v", err)
	}

	// Every write through: the next ones go at once again, up to the limit.
	waitFor(t, waitTimeout, "no write in flight", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.inFlight == 0
	})
	for _, d := range []string{"g", "h", "i"} {
		g.submit([]byte(d))
	}
	r.waitHanded(t, 3)
	g.submit([]byte("j"))
	r.handedNothing(t)
}

// TestGroupCommitAbandon: the writes whose entries a stalled log write
// holds are through at once with its error, the others wait for their
// entries; Raft's later outcome changes nothing for them, and they count
// as in flight until Raft is through (the next group waits for that).
func TestGroupCommitAbandon(t *testing.T) {
	r := newFakeRaft()
	g := &groupCommit{apply: r.apply, alone: 3}
	a, b, c := g.submit([]byte("a")), g.submit([]byte("b")), g.submit([]byte("c"))
	r.waitHanded(t, 3)
	stalled := errors.New("stalled")
	// The log write holds b and c; a was stored before. Entries carry the
	// data slices raft was given.
	g.abandon([]*raft.Log{{Data: r.entry(1).data}, {Data: r.entry(2).data}, {Data: []byte("c")}}, stalled)
	if err := applied(t, b); err != stalled {
		t.Fatalf("b: %v, want the stall's error", err)
	}
	if err := applied(t, c); err != stalled {
		t.Fatalf("c: %v, want the stall's error", err)
	}
	notApplied(t, a)
	d := g.submit([]byte("d")) // three in flight: waits for the next group
	r.handedNothing(t)

	close(r.entry(0).done)
	if err := applied(t, a); err != nil {
		t.Fatalf("a: %v", err)
	}
	r.entry(1).err = raft.ErrNotLeader
	close(r.entry(1).done)
	r.entry(2).err = raft.ErrNotLeader
	close(r.entry(2).done)
	r.waitHanded(t, 1)
	g.mu.Lock()
	bErr, cErr := b.err, c.err
	g.mu.Unlock()
	if bErr != stalled || cErr != stalled {
		t.Fatalf("after Raft's outcome: b %v, c %v, want the stall's error kept", bErr, cErr)
	}
	close(r.entry(3).done)
	if err := applied(t, d); err != nil {
		t.Fatalf("d: %v", err)
	}
	waitFor(t, waitTimeout, "every write through", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.sent) == 0 && g.inFlight == 0
	})
}
