package registry_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestWatchSendInitialEventsFalse: an explicit sendInitialEvents=false with
// resourceVersion unset starts at the current state without synthetic
// ADDED events, as kube-apiserver does, and then delivers later changes.
func TestWatchSendInitialEventsFalse(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := wtNewWriter(t, c)
	w.create("ns", "before", "a", "x")
	f := c.Follower()
	wtWaitApplied(t, c, f, w.last())

	o := wtWatchOpts("")
	o.SendInitialEvents = ptr.To(false)
	wa := wtStart(t, wtStore(c, f), "", o)
	if wa.Pos() < w.last() {
		t.Fatalf("watch starts at %d, before the latest write %d", wa.Pos(), w.last())
	}
	rv := w.create("ns", "after", "b", "x")
	evs := wtCollect(t, wa, rv, false)
	if len(evs) != 1 || evs[0].Type != watch.Added || wtDescribe(t, evs[0]).Name != "after" {
		t.Fatalf("events %v, want only ADDED after", wtDescribeAll(t, evs))
	}
}
