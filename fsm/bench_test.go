package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm/state"
)

// The benchmarks run over 100,000 Leases, the scale of the memory target
// (scripts/bench.sh ends with the same scale on a live cluster).

// created is an FSM in which n Leases were created, a thousand per batch
// and per second, so that the history (5 minutes, 100,000 events) holds
// every creation.
func created(b *testing.B, n int) *FSM {
	f := newFSM(state.DefaultConfig())
	logs := make([]*raft.Log, 0, 1000)
	for i := range n {
		name := fmt.Sprintf("lease-%06d", i)
		l := cmdLog(uint64(i+1), &Command{Type: CmdCreate, Resource: "leases",
			Object: managedLeaseBytes(b, "leasebench", name, "uid-"+name, fixedTime.Add(time.Duration(i/1000)*time.Second))})
		l.AppendedAt = fixedTime.Add(time.Duration(i) * time.Millisecond)
		logs = append(logs, l)
		if len(logs) == cap(logs) {
			f.ApplyBatch(logs)
			logs = logs[:0]
		}
	}
	return f
}

// BenchmarkRestore100k restores a snapshot of 100,000 Leases (each created
// once, so the history holds their creations), as a restarted node does.
func BenchmarkRestore100k(b *testing.B) {
	const n = 100000
	src := created(b, n)
	data := persist(b, src)
	src = nil
	b.ReportAllocs()
	b.ResetTimer()
	var restored *FSM
	for range b.N {
		restored = newFSM(state.DefaultConfig())
		restoreFrom(b, restored, data)
	}
	b.StopTimer()
	// What the restored state keeps: the heap with it, less the heap
	// without it.
	with := heapAlloc()
	runtime.KeepAlive(restored)
	restored = nil
	without := heapAlloc()
	b.ReportMetric(float64(with-without)/n, "heap-B/lease")
	runtime.KeepAlive(data)
}

// BenchmarkApplyRenewal100k applies Lease updates (a renewal: new
// managedFields time) over 100,000 stored Leases, 64 entries per batch.
func BenchmarkApplyRenewal100k(b *testing.B) {
	f := newFSM(state.DefaultConfig())
	const n = 100000
	idx := uint64(0)
	var logs []*raft.Log
	flush := func() { f.ApplyBatch(logs); logs = logs[:0] }
	for i := range n {
		name := fmt.Sprintf("lease-%06d", i)
		idx++
		logs = append(logs, cmdLog(idx, &Command{Type: CmdCreate, Resource: "leases",
			Object: managedLeaseBytes(b, "leasebench", name, "uid-"+name, fixedTime)}))
		if len(logs) == 1000 {
			flush()
		}
	}
	flush()
	upd := make([]*Command, 1024)
	for i := range upd {
		name := fmt.Sprintf("lease-%06d", i*97)
		upd[i] = &Command{Type: CmdUpdate, Resource: "leases",
			Object: managedLeaseBytes(b, "leasebench", name, "uid-"+name, fixedTime.Add(time.Duration(i+1)*time.Second))}
	}
	entries := make([][]byte, len(upd))
	for i, c := range upd {
		entries[i] = c.Encode()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		idx++
		logs = append(logs, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: entries[i%len(entries)], AppendedAt: appendedAt(idx)})
		if len(logs) == 64 {
			flush()
		}
	}
	flush()
}

// BenchmarkPersist100k writes a snapshot of 100,000 Leases whose history
// holds their creations: what every node does every snapshot interval
// under steady writes.
func BenchmarkPersist100k(b *testing.B) { benchmarkPersist(b, created(b, 100000)) }

// benchmarkPersist measures writing f's snapshot, and reports its size.
func benchmarkPersist(b *testing.B, f *FSM) {
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for range b.N {
		size = len(persist(b, f))
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// BenchmarkPersistRenewed writes a snapshot of 1,000 Leases renewed 100
// times each: a history of 100,000 updates, each event's previous state the
// object of the one before (the make bench renew workloads leave this).
func BenchmarkPersistRenewed(b *testing.B) {
	f := newFSM(state.DefaultConfig())
	applyRounds(b, f, 1000, 101, func(name string, round int, _ uint64) []byte {
		return managedLeaseBytes(b, "leasebench", name, "uid-"+name, fixedTime.Add(time.Duration(round)*time.Second))
	})
	if _, events, _, _ := f.State().Dump(); events.Len() < 100000 {
		b.Fatalf("history holds %d events", events.Len())
	}
	benchmarkPersist(b, f)
}

// renewedOnce is an FSM in which n Leases were created and then each
// renewed once, as client-go renews (new renewTime, new managedFields
// time): with n at the history's 100,000 events, the history holds
// renewals only, and every Lease's version from before them. This is the
// steady state of a cluster whose Leases are all renewed within the
// history's window.
func renewedOnce(b *testing.B, n int) *FSM { return renewed(b, n, 1) }

// renewed is n Leases renewed the given number of times, as renewedOnce.
func renewed(b *testing.B, n, times int) *FSM {
	version := func(name string, renewed time.Duration) []byte {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "leasebench", Name: name, UID: types.UID("uid-" + name),
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "leasebench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
					Time: &metav1.Time{Time: fixedTime.Add(renewed).Truncate(time.Second)}, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`)},
				}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo("holder-" + name), LeaseDurationSeconds: ptrTo[int32](15),
				RenewTime: &metav1.MicroTime{Time: fixedTime.Add(renewed).Truncate(time.Microsecond)}},
		}
		data, err := l.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	f := newFSM(state.DefaultConfig())
	applyRounds(b, f, n, 1+times, func(name string, _ int, idx uint64) []byte {
		return version(name, time.Duration(idx)*time.Millisecond)
	})
	window := uint64(min(n*times, state.DefaultHistoryEvents))
	if evs := f.State().EventsSince(uint64(n*(1+times)) - window).Events; uint64(len(evs)) != window || evs[0].Type != state.Modified {
		b.Fatalf("history holds %d events after the creations", len(evs))
	}
	return f
}

// BenchmarkRenewedHeap100k measures the heap a node holds for 100,000
// Leases each renewed once (renewedOnce).
func BenchmarkRenewedHeap100k(b *testing.B) { benchmarkRenewedHeap(b, 100000, 1) }

// BenchmarkRenewedTwiceHeap50k measures the heap a node holds for 50,000
// Leases each renewed twice within the history's window, as Leases renewed
// more often than the window turns over are: each Lease's first renewal
// is a version the second replaced.
func BenchmarkRenewedTwiceHeap50k(b *testing.B) { benchmarkRenewedHeap(b, 50000, 2) }

// benchmarkRenewedHeap reports the heap held per Lease by n Leases renewed
// the given number of times (renewed).
func benchmarkRenewedHeap(b *testing.B, n, times int) {
	b.ReportAllocs()
	var perLease float64
	for range b.N {
		f := renewed(b, n, times)
		b.StopTimer()
		with := heapAlloc()
		runtime.KeepAlive(f)
		f = nil
		perLease = float64(with-heapAlloc()) / float64(n)
		b.StartTimer()
	}
	b.ReportMetric(perLease, "heap-B/lease")
}

// BenchmarkPersistRenewedTwice50k reports the heap that writing a snapshot
// holds at its peak beyond the state's own, sampled every MiB written, for
// 50,000 Leases each renewed twice in the window (renewed): half the
// history's versions are held compacted and rebuilt for the snapshot.
func BenchmarkPersistRenewedTwice50k(b *testing.B) {
	f := renewed(b, 50000, 2)
	var peak uint64
	for range b.N {
		b.StopTimer()
		base := heapAlloc()
		b.StartTimer()
		snap, err := f.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		s := &heapSampler{}
		if err := snap.Persist(s); err != nil {
			b.Fatal(err)
		}
		peak = s.peak - min(s.peak, base)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}

// heapSampler is a snapshot sink that discards what it is given and reads
// the live heap every MiB.
type heapSampler struct {
	written, peak uint64
}

func (s *heapSampler) Write(p []byte) (int, error) {
	if (s.written+uint64(len(p)))>>20 != s.written>>20 {
		s.peak = max(s.peak, heapAlloc())
	}
	s.written += uint64(len(p))
	return len(p), nil
}

func (s *heapSampler) ID() string    { return "heap" }
func (s *heapSampler) Close() error  { return nil }
func (s *heapSampler) Cancel() error { return nil }

// BenchmarkRestoreRenewed100k restores a snapshot of 100,000 Leases each
// renewed once (renewedOnce), as a node restarted in that steady state
// does: every event's previous state is read in full and compacted again.
func BenchmarkRestoreRenewed100k(b *testing.B) {
	data := persist(b, renewedOnce(b, 100000))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		restoreFrom(b, newFSM(state.DefaultConfig()), data)
	}
}

// BenchmarkRestoreRenewedHeap100k reports the live heap at its peak while
// the snapshot of BenchmarkRestoreRenewed100k is read (sampled every MiB)
// and once restored, beyond the heap before.
func BenchmarkRestoreRenewedHeap100k(b *testing.B) {
	data := persist(b, renewedOnce(b, 100000))
	var peak, kept uint64
	for range b.N {
		base := heapAlloc()
		f := newFSM(state.DefaultConfig())
		r := &heapSamplingReader{r: bytes.NewReader(data)}
		if err := f.Restore(io.NopCloser(r)); err != nil {
			b.Fatal(err)
		}
		after := heapAlloc()
		r.peak = max(r.peak, after)
		kept = after - min(after, base)
		runtime.KeepAlive(f)
		peak = r.peak - min(r.peak, base)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(kept)/(1<<20), "kept-MiB")
}

// heapSamplingReader reads the live heap every MiB read.
type heapSamplingReader struct {
	r          io.Reader
	read, peak uint64
}

func (s *heapSamplingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if (s.read+uint64(n))>>20 != s.read>>20 {
		s.peak = max(s.peak, heapAlloc())
	}
	s.read += uint64(n)
	return n, err
}

// applyRounds applies to f, a round at a time, the creation of n Leases
// (round 0) and then their updates, each Lease's bytes given by version;
// entry idx was appended idx milliseconds after fixedTime, and a thousand
// entries make a batch.
func applyRounds(b *testing.B, f *FSM, n, rounds int, version func(name string, round int, idx uint64) []byte) {
	logs := make([]*raft.Log, 0, 1000)
	idx := uint64(0)
	for round := range rounds {
		for i := range n {
			name := fmt.Sprintf("lease-%06d", i)
			typ := CmdUpdate
			if round == 0 {
				typ = CmdCreate
			}
			idx++
			l := cmdLog(idx, &Command{Type: typ, Resource: "leases", Object: version(name, round, idx)})
			l.AppendedAt = fixedTime.Add(time.Duration(idx) * time.Millisecond)
			logs = append(logs, l)
			if len(logs) == cap(logs) {
				f.ApplyBatch(logs)
				logs = logs[:0]
			}
		}
	}
	f.ApplyBatch(logs)
}

// heapAlloc is the heap in use after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
