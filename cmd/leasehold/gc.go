package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultGCPercent is the garbage collector's target when GOGC does not set
// one, for a large live heap. Most of a loaded node's heap is live for good
// (its objects and the watch history), and Go's default of 100 lets the
// heap grow to twice that before each collection: as much memory again as
// is live, holding only garbage. At 75 a node with many objects holds
// less, for a few more collections that its renewals do not feel
// (docs/performance.md, "Memory"). GOGC in the environment still wins.
const defaultGCPercent = 75

// minHeapHeadroom is the least a node's heap may grow over what the last
// collection left live before the next one starts, when GOGC does not say
// otherwise. With few objects the live heap is small, and 75 % of it alone
// made a node under steady renewals collect several times a second: each
// collection marks the whole live heap again, so the collector's CPU grew
// with how often it ran rather than with what it freed. Above 85 MB live,
// 75 % is more than this and the goal is as before, so memory with many
// objects is unchanged.
const minHeapHeadroom = 64 << 20

// gcPercentFor is the GC percent that lets a heap of live bytes grow by at
// least headroom, and by floor percent once that is more.
func gcPercentFor(live uint64, floor int, headroom uint64) int {
	if live == 0 {
		return floor
	}
	return max(floor, int(headroom*100/live))
}

// keepHeapHeadroom sets the GC percent now and again after every
// collection, from the live heap that collection found: gcPercentFor
// with floor and headroom. Go has a GC percent and a memory limit, but no
// least growth; a cleanup that re-arms itself runs once per cycle.
func keepHeapHeadroom(floor int, headroom uint64) {
	set := func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(sample)
		var live uint64 // 0 before the first collection
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		debug.SetGCPercent(gcPercentFor(live, floor, headroom))
	}
	set()
	var arm func()
	arm = func() {
		// A pointer-holding object, so that it is not batched with others
		// by the tiny allocator and is found unreachable in the next cycle.
		runtime.AddCleanup(&gcCycle{}, func(struct{}) { set(); arm() }, struct{}{})
	}
	arm()
}

type gcCycle struct{ _ *byte }
