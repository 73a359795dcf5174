package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// A startup check is a condition the node's readiness waits for once, as
// kube-apiserver's /readyz waits for its post-start hooks (its
// "poststarthook/rbac/bootstrap-roles" until the bootstrap RBAC policy is
// in place). Until its check first passes the node is not ready; from then
// on it is not asked again, so that readiness does not flap when, say, an
// administrator deletes a bootstrap role (the leader puts it back), and so
// that Ready stays a few atomic loads.
type startupCheck struct {
	name  string
	check func() string
	// passed latches once check has returned "".
	passed atomic.Bool
	// why is check's last answer while it fails; set before passed.
	why atomic.Pointer[string]
}

// startupChecks are the node's startup checks in the order they were
// added. The list is copied on write, so that Ready reads it without a
// lock: checks are added at wiring time, read on every
// resourceVersion=0 read.
type startupChecks struct {
	mu   sync.Mutex // serialises add
	list atomic.Pointer[[]*startupCheck]
}

func (s *startupChecks) add(c *startupCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []*startupCheck
	if old := s.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, c)
	s.list.Store(&list)
}

// all returns the checks; the slice must not be changed.
func (s *startupChecks) all() []*startupCheck {
	if l := s.list.Load(); l != nil {
		return *l
	}
	return nil
}

// pending returns the reason of the first check that has not passed yet;
// ok is false when every check has passed. It does not allocate.
func (s *startupChecks) pending() (why string, ok bool) {
	for _, c := range s.all() {
		if !c.passed.Load() {
			return *c.why.Load(), true
		}
	}
	return "", false
}

// run asks every check that has not passed yet. Called from the readiness
// loop's goroutine (and once by AddStartupCheck); checks may run
// concurrently with themselves only in that first call.
func (s *startupChecks) run(logger hclog.Logger) {
	for _, c := range s.all() {
		c.run(logger)
	}
}

func (c *startupCheck) run(logger hclog.Logger) {
	if c.passed.Load() {
		return
	}
	why := c.check()
	if why == "" {
		if !c.passed.Swap(true) {
			logger.Info("startup check passed", "check", c.name)
		}
		return
	}
	if old := c.why.Load(); old == nil || *old != why {
		c.why.Store(&why)
	}
}

// AddStartupCheck makes the node's readiness (Ready, /readyz) wait until
// check returns "" once; until then the node is not ready, and check's
// answer says why. name is the check's name in /readyz?verbose. The node
// asks check at once and then every few tens of milliseconds, from its
// readiness loop, until it passes; check must be cheap and safe to call
// from any goroutine. Add checks before the node serves: a check added to
// a ready node makes it not ready until the check passes.
func (n *Node) AddStartupCheck(name string, check func() string) {
	c := &startupCheck{name: name, check: check}
	why := "waiting for " + name
	c.why.Store(&why)
	n.startup.add(c)
	c.run(n.logger)
}
