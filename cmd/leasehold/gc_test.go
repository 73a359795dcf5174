package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 75},           // no collection yet: the floor
		{16 * mib, 400},   // 64 MiB over 16: four times the live heap
		{64 * mib, 100},   // as much again
		{85 * mib, 75},    // 75 % of it is 63.75 MiB: just under, rounded down
		{100 * mib, 75},   // 75 % is more than 64 MiB: the floor
		{1000 * mib, 75},  // many objects: memory as with GOGC=75
		{1 * mib, 6400},   // nearly empty: the goal is still live + 64 MiB
		{32*mib + 1, 199}, // rounds down
	} {
		if got := gcPercentFor(tc.live, defaultGCPercent, minHeapHeadroom); got != tc.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// After every collection the GC percent follows the live heap that
// collection found: a heap made larger after keepHeapHeadroom was called,
// and larger again, gets each time the smaller percent that leaves it the
// same headroom.
func TestKeepHeapHeadroomFollowsTheLiveHeap(t *testing.T) {
	const headroom = 256 << 20
	// The cleanup it arms goes on for the rest of the test binary, which
	// nothing else here minds.
	keepHeapHeadroom(defaultGCPercent, headroom)

	var ballast []*[1 << 20]byte
	for _, mib := range []int{32, 64} { // live heap over 32 MiB, then over 96
		for range mib {
			ballast = append(ballast, new([1 << 20]byte))
		}
		waitGCPercentFollows(t, uint64(len(ballast))<<20, headroom)
	}
	runtime.KeepAlive(ballast)
}

// waitGCPercentFollows collects until the live heap is at least min and
// the GC percent is the one gcPercentFor gives it, for up to 10 s.
func waitGCPercentFollows(t *testing.T, min, headroom uint64) {
	t.Helper()
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the cleanup runs on its own goroutine
		metrics.Read(samples)
		live, percent := samples[0].Value.Uint64(), int(samples[1].Value.Uint64())
		want := gcPercentFor(live, defaultGCPercent, headroom)
		if live >= min && percent == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d with %d MiB live after 10 s of collections, want %d", percent, live>>20, want)
		}
	}
}
