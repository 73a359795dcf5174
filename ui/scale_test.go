package ui_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/registry"
)

// TestPage_10000Leases loads the page over 10,000 Leases: the rows render
// within a few seconds, the DOM holds only the rows in view, the last Lease
// is reached by scrolling, and filtering stays quick.
func TestPage_10000Leases(t *testing.T) {
	const n = 10000
	e := newEnv(t, 1, nil)
	mustBrowser(t) // started while the Leases are written
	res, ok := registry.Lookup("coordination.k8s.io", "v1", "leases")
	if !ok {
		t.Fatal("leases are not served")
	}
	store := e.store(0)
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				renew := metav1.NewMicroTime(time.Now())
				l := &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns-%d", i%20), Name: fmt.Sprintf("lease-%05d", i)},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(fmt.Sprintf("holder-%d", i%7)),
						LeaseDurationSeconds: ptr.To(int32(60 + i%600)), RenewTime: &renew, AcquireTime: &renew},
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := store.Create(ctx, res, l, registry.WriteOptions{Manager: "ui-test"})
				cancel()
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("wrote %d Leases in %v", n, time.Since(start).Round(time.Millisecond))

	loadStart := time.Now()
	tb := openTab(t, e.pageURL(0), tabOptions{})
	tb.waitFor("the first rows", `document.querySelectorAll("#rows .row").length > 0`, 20*time.Second)
	first := time.Since(loadStart)
	tb.waitFor("10,000 Leases listed",
		fmt.Sprintf(`document.documentElement.dataset.leases === "%d" && document.documentElement.dataset.listRv !== undefined`, n), 30*time.Second)
	load := time.Since(loadStart)
	t.Logf("page load: first rows after %v, all %d Leases listed and rendered after %v", first.Round(time.Millisecond), n, load.Round(time.Millisecond))
	if load > 20*time.Second {
		t.Errorf("the page took %v to show %d Leases", load, n)
	}
	rows := eval[int](tb, `document.querySelectorAll("#rows .row").length`)
	nodes := eval[int](tb, `document.getElementsByTagName("*").length`)
	t.Logf("DOM: %d rows, %d elements in all", rows, nodes)
	if rows > 150 || nodes > 2500 {
		t.Fatalf("the DOM holds %d rows (%d elements) for %d Leases: rows are not virtual", rows, nodes, n)
	}
	if got := eval[string](tb, `document.getElementById("count").textContent`); got != "10000 Leases" {
		t.Fatalf("count %q", got)
	}

	// Sorted by namespace then name, the last row is the last Lease of
	// ns-9 (i%20 == 9).
	last := "ns-9/lease-09989"
	eval[bool](tb, `(() => { const v = document.getElementById("viewport"); v.scrollTop = v.scrollHeight; return true; })()`)
	took := tb.waitFor("the last Lease in view", fmt.Sprintf(`(() => {
  const r = document.querySelector(%s), v = document.getElementById("viewport");
  if (!r) return false;
  const a = r.getBoundingClientRect(), b = v.getBoundingClientRect();
  return a.top >= b.top && a.bottom <= b.bottom + 1;
})()`, rowSelector(last)), 5*time.Second)
	t.Logf("scrolled to the end: %s in view after %v", last, took.Round(time.Millisecond))
	if r, _ := rowOf(tb, last); r.Status != "held" || r.LeftMs == nil {
		t.Fatalf("last row %+v", r)
	}
	if rows := eval[int](tb, `document.querySelectorAll("#rows .row").length`); rows > 150 {
		t.Fatalf("%d rows in the DOM after scrolling", rows)
	}

	// Sorting and filtering 10,000 rows keeps the tab responsive.
	took = measure(tb, "sorted by time left", `document.querySelector('.row.head .c[data-sort="left"]').click()`,
		`document.querySelector("#rows .row") && document.querySelector('.row.head .c[data-sort="left"]').dataset.dir === "asc"`)
	t.Logf("sort by time left: %v", took.Round(time.Millisecond))
	took = measure(tb, "filtered", `(() => { const f = document.getElementById("text-filter"); f.value = "lease-0999"; f.dispatchEvent(new Event("input")); })()`,
		`document.getElementById("count").textContent === "10 of 10000 Leases" && document.querySelectorAll("#rows .row").length === 10`)
	t.Logf("filter to 10 of 10,000: %v", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Fatalf("filtering took %v", took)
	}
}

// measure runs action in the page and waits until done holds.
func measure(tb *tab, what, action, done string) time.Duration {
	tb.t.Helper()
	start := time.Now()
	eval[bool](tb, `(() => { `+action+`; return true; })()`)
	tb.waitFor(what, done, 5*time.Second)
	return time.Since(start)
}
