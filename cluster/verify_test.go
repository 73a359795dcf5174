package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A caller that arrives while a run is under way gets the next run, never
// the one that started before it: a read index captured before a reader
// arrived could miss writes acknowledged before it.
func TestCoalescerNeverAnswersWithAnEarlierRun(t *testing.T) {
	var c coalescer[int]
	var runs atomic.Int64
	release := make(chan struct{})
	do := func() (int, error) {
		n := int(runs.Add(1))
		if n == 1 {
			<-release
		}
		return n, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first := make(chan int, 1)
	go func() { v, _ := c.run(ctx, do); first <- v }()
	deadline := time.Now().Add(5 * time.Second)
	for runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Run 1 is under way; these join run 2.
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = c.run(ctx, do) }()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if v := <-first; v != 1 {
		t.Fatalf("first caller got run %d, want 1", v)
	}
	for i, v := range got {
		if v < 2 {
			t.Fatalf("caller %d joined during run 1 and got run %d", i, v)
		}
	}
	if n := runs.Load(); n > 3 {
		t.Fatalf("%d runs for 9 callers: waiting callers were not shared", n)
	}
}

// A caller whose context ends stops waiting; the run goes on for others.
func TestCoalescerCallerTimeout(t *testing.T) {
	var c coalescer[int]
	release := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.run(ctx, func() (int, error) { <-release; return 1, nil }); err != ErrTimeout {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	close(release)
}
