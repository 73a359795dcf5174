package cluster

import (
	"sync/atomic"
	"testing"
)

// TestStartupCheck: a startup check holds the node's readiness until it
// first passes, says why meanwhile (Ready, ReadyChecks), and is not asked
// again once it has passed; a ready node's Ready allocates nothing.
func TestStartupCheck(t *testing.T) {
	c := newCluster(t, 1)
	n := c.node(c.waitAllReady())

	var why atomic.Pointer[string]
	waiting := "waiting for the policy"
	why.Store(&waiting)
	var asked atomic.Int64
	n.AddStartupCheck("poststarthook/test", func() string {
		asked.Add(1)
		return *why.Load()
	})
	if ok, got := n.Ready(); ok || got != waiting {
		t.Fatalf("Ready() = %v, %q before the check passed, want false, %q", ok, got, waiting)
	}
	checks := n.ReadyChecks()
	if last := checks[len(checks)-1]; len(checks) != 3 || last.Name != "poststarthook/test" || last.Why != waiting {
		t.Fatalf("ReadyChecks() = %+v, want disk, leader and the startup check failing with %q", checks, waiting)
	}

	passed := ""
	why.Store(&passed)
	waitFor(t, waitTimeout, "the node to be ready once the check passes", func() bool { ok, _ := n.Ready(); return ok })
	checks = n.ReadyChecks()
	if last := checks[len(checks)-1]; last.Name != "poststarthook/test" || last.Why != "" {
		t.Fatalf("ReadyChecks() = %+v after the check passed", checks)
	}
	// Latched: the check is not asked again, and the node stays ready.
	failing := "gone again"
	why.Store(&failing)
	before := asked.Load()
	for range 3 {
		n.startup.run(n.logger) // what the readiness loop does every tick
	}
	if ok, got := n.Ready(); !ok {
		t.Fatalf("not ready after the check passed once: %s", got)
	}
	if a := asked.Load(); a != before {
		t.Errorf("the check was asked %d more times after it passed", a-before)
	}
	if allocs := testing.AllocsPerRun(100, func() { n.Ready() }); allocs != 0 {
		t.Errorf("Ready allocates %v times per call", allocs)
	}
}
