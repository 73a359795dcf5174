package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/transport"
)

// Sick disks. hashicorp/raft's leader writes its log synchronously in its
// main loop while heartbeats go from other goroutines that never touch the
// disk, so a leader whose write hangs keeps its followers content and the
// cluster stops taking writes for as long as the disk hangs
// (hashicorp/raft#503). A write that fails instead makes the leader fail
// the writes and step down (raft.go, dispatchLogs). So every write to
// raft.db goes through a disk gate with a deadline: at a log write that
// misses it the node fails the writes it held, has a voter whose disk
// works campaign at once (appendStalled), and refuses writes; when the
// write ends at last it is undone and fails, and raft steps down.
//
// The gate also notices a full disk (ENOSPC, EDQUOT, or less free space
// than diskReserve): a leader whose disk is full refuses writes before
// they reach Raft, so that it keeps leading and the cluster stays readable
// (etcd's NOSPACE alarm does the same); it hands leadership to a member
// that can write if there is one.

// What the disk gate uses when Config leaves it zero, and its fixed rules.
const (
	// DefaultDiskStallTimeout bounds a write to raft.db. A healthy bbolt
	// commit (two fdatasyncs) takes a fraction of a millisecond to tens of
	// milliseconds under load, and etcd calls an fdatasync slow at 1 s, so
	// 2 s is no ordinary slow write. A stalled leader loses its leadership
	// after this long, and another node leads a few round trips later
	// (appendFailed; left to their election timeout, the followers would
	// wait one to two heartbeat timeouts more, longer when they ask the
	// stalled node for its vote): well within the 5 s a write waits, so a
	// write caught by the stall still commits at the next leader.
	DefaultDiskStallTimeout = 2 * time.Second
	// diskProbeInterval is how often a node that has written nothing for
	// that long writes a probe to raft.db and reads the free space: an idle
	// node notices a stalled or full disk, and a full one notices that
	// space has returned, without waiting for a client's write.
	diskProbeInterval = time.Second
	// diskReserve is the free space under which a node counts its disk as
	// full before a write fails: room for one more snapshot of the default
	// watch history (25–40 MB), so that every node of a cluster whose disks
	// fill together stops writing before its log fails (a leader whose
	// log write fails steps down, and a leader elected on a full disk
	// cannot commit the entry that lets it serve reads).
	diskReserve = 64 << 20
	// diskFullHandOver is how long a leader's disk must have been full
	// before it hands leadership to a member that reports itself ready:
	// long enough for the others' probes to have seen their own disks, so
	// that leadership does not move to a member whose disk filled at the
	// same time.
	diskFullHandOver = 2 * diskProbeInterval
)

var (
	// ErrDiskStalled: a write to this node's raft.db did not finish in
	// time, or an earlier one still has not; this write stored nothing.
	ErrDiskStalled = errors.New("the disk of the raft log is stalled")
	// ErrDiskFull: the leader cannot write its log for lack of space;
	// nothing was written. Its text is what a client reads, as
	// kube-apiserver passes on etcd's "mvcc: database space exceeded".
	ErrDiskFull = errors.New("database space exceeded")
)

// spaceError is ErrDiskFull with the message a client sees; cause is the
// error a write got, if one did.
type spaceError struct {
	msg   string
	cause error
}

func (e *spaceError) Error() string { return e.msg }

func (e *spaceError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrDiskFull}
	}
	return []error{ErrDiskFull, e.cause}
}

// isNoSpace reports whether a write failed for lack of space.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// RaftStore is what raft.db holds: the log and the stable store (term and
// vote) in one bbolt file, so that a sick disk hits both.
type RaftStore interface {
	raft.LogStore
	raft.StableStore
}

// disk is the gate every write to raft.db passes, and what the node knows
// of its disk's health.
//
// A log write runs in raft's loop with a watchdog. One that misses its
// deadline is abandoned: its writes are failed at once (the node tells
// their clients, who may retry at the next leader), and until the write
// ends every further log write fails at once (it would only queue behind
// bbolt's one writer), so at most one abandoned log write is under way.
// When it ends, what it stored is deleted again before any other log
// write may pass, and raft gets ErrDiskStalled: raft takes the write as
// failed and will write those indexes anew, perhaps fewer of them and in a
// later term, and a stale tail left after its new entries would make the
// log claim an older last term than it holds. (Rewriting an index
// overwrites it in raft-boltdb, so a retry of the same entries alone would
// be harmless.) A probe of an idle disk runs on a goroutine of its own
// with the same deadline, abandoned the same way.
//
// Stable store writes are never abandoned or failed for a stall or lack of
// space: raft panics when it cannot store its term (raft.go,
// setCurrentTerm). They wait for the disk instead, which stops a sick
// node's Raft: a node that cannot store a term or a vote neither
// campaigns nor votes, so it cannot win an election however long its log.
// Deleting log entries is not abandoned either (raft would take entries
// for present that a late deletion removed); it runs in the caller, and
// fails at once while the disk is stalled.
type disk struct {
	name    string
	dir     string
	timeout time.Duration
	logger  hclog.Logger
	// closing ends the waits of writes held for the disk, when the node
	// stops.
	closing <-chan struct{}
	// free reports the free space of the data directory (statfs).
	free func(dir string) (uint64, error)
	// retry is how often a held stable store write tries again while the
	// disk has no space.
	retry time.Duration
	// appendFailed, if set, is called when a log write fails, before the
	// caller learns it.
	appendFailed func()
	// appendStalled, if set, is called when a log write of logs runs past
	// the deadline, while it still runs.
	appendStalled func(logs []*raft.Log)
	// handingOver is set while appendFailed's hand-over runs.
	handingOver atomic.Bool

	writeSeconds *prometheus.HistogramVec // by op
	writeErrors  *prometheus.CounterVec   // by reason

	// full is set while the disk counts as full: the leader reads it on
	// every write.
	full atomic.Bool
	// stalledNow is set while a write is past the deadline: read on every
	// write and read index.
	stalledNow atomic.Bool

	mu sync.Mutex
	// abandoned counts abandoned writes not yet ended (and undone); idle
	// is closed when it drops to zero.
	abandoned int
	idle      chan struct{}
	// overdue counts writes running in their caller past the deadline.
	overdue int
	// stalledSince is when the oldest overdue or abandoned write began.
	stalledSince time.Time
	// noSpace is the error of the last write that failed for lack of
	// space, until a write succeeds that shows space has returned (see
	// ended); noSpaceLog says whether it was a log write. lowSpace is the
	// free space when it was under diskReserve at the last probe (0
	// otherwise).
	noSpace    error
	noSpaceLog bool
	lowSpace   uint64
	fullSince  time.Time
	lastOK     time.Time // the last write that succeeded
}

// Values of leasehold_disk_write_seconds' op label and
// leasehold_disk_write_errors_total's reason label.
var (
	diskOps          = []string{"append", "delete", "stable", "probe"}
	diskErrorReasons = []string{"timeout", "enospc", "other"}
)

func newDisk(name, dir string, timeout time.Duration, logger hclog.Logger, closing <-chan struct{}) *disk {
	d := &disk{
		name: name, dir: dir, timeout: timeout, logger: logger, closing: closing, free: freeSpace, retry: diskProbeInterval,
		writeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "leasehold_disk_write_seconds",
			Help:    "Writes to raft.db (append: log entries, delete: log entries removed, stable: term and vote, probe: the idle node's check), from start to end, abandoned ones included once they end.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"op"}),
		writeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "leasehold_disk_write_errors_total",
			Help: "Writes to raft.db that failed, by reason: timeout (ran past the stall timeout, or refused while an earlier write did), enospc (no space or quota), other.",
		}, []string{"reason"}),
	}
	for _, op := range diskOps {
		d.writeSeconds.WithLabelValues(op)
	}
	for _, r := range diskErrorReasons {
		d.writeErrors.WithLabelValues(r)
	}
	return d
}

// stalledLocked is the error for a write that meets a stalled disk, nil if
// the disk is not stalled. Called with d.mu held.
func (d *disk) stalledLocked() error {
	if d.abandoned == 0 && d.overdue == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrDiskStalled, d.stallTextLocked())
}

func (d *disk) stallTextLocked() string {
	return fmt.Sprintf("a write to raft.db has not finished for %v (the bound is %v)",
		time.Since(d.stalledSince).Round(100*time.Millisecond), d.timeout)
}

// stall records a write past the deadline; abandoned says whether its
// caller gave up on it. Called with d.mu held.
func (d *disk) stallLocked(start time.Time, abandoned bool) {
	if d.abandoned == 0 && d.overdue == 0 {
		d.stalledSince = start
		d.logger.Error("disk stalled: a write to raft.db did not finish in time; log writes are refused until it does",
			"bound", d.timeout, "abandoned", abandoned)
	}
	if abandoned {
		if d.abandoned == 0 {
			d.idle = make(chan struct{})
		}
		d.abandoned++
	} else {
		d.overdue++
	}
	d.stalledNow.Store(true)
}

// unstallLocked records the end of a write that was past the deadline.
// Called with d.mu held.
func (d *disk) unstallLocked(abandoned bool) {
	if abandoned {
		d.abandoned--
		if d.abandoned == 0 {
			close(d.idle)
			d.idle = nil
		}
	} else {
		d.overdue--
	}
	if d.abandoned == 0 && d.overdue == 0 {
		d.stalledNow.Store(false)
		d.logger.Info("disk recovered: the stalled write ended", "after", time.Since(d.stalledSince).Round(time.Millisecond))
	}
}

// ended records the outcome of a write and returns the error its caller
// gets. An abandoned write's outcome is not counted as an error again
// (counted is false): its timeout was.
func (d *disk) ended(op string, start time.Time, err error, counted bool) error {
	d.writeSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds())
	logOp := op == "append"
	switch {
	case err == nil:
		d.mu.Lock()
		d.lastOK = time.Now()
		// A small write may fit where appending to the log does not
		// (bbolt reuses the pages it freed), so only an append clears what
		// an append found. Raft appends again soon enough: a follower on
		// the leader's next AppendEntries, a node elected leader at once
		// (its term's first entry), and a leader whose append failed no
		// longer leads.
		if d.noSpace != nil && (logOp || !d.noSpaceLog) {
			d.noSpace = nil
			d.logger.Info("disk takes writes again")
			d.updateFullLocked()
		}
		d.mu.Unlock()
		return nil
	case isNoSpace(err):
		if counted {
			d.writeErrors.WithLabelValues("enospc").Inc()
		}
		d.mu.Lock()
		if d.noSpace == nil {
			d.logger.Error("disk full: a write to raft.db failed; the leader refuses writes until space is freed", "op", op, "error", err)
		}
		d.noSpace, d.noSpaceLog = err, logOp
		d.updateFullLocked()
		d.mu.Unlock()
		return &spaceError{msg: fmt.Sprintf("%v: %s cannot write its raft log: %v", ErrDiskFull, d.name, errnoText(err)), cause: err}
	default:
		if counted {
			d.writeErrors.WithLabelValues("other").Inc()
		}
		return err
	}
}

// errnoText is the system's words for the error of a failed write, without
// the path of the file.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// updateFullLocked sets full from what the writes and the probes found.
// Called with d.mu held.
func (d *disk) updateFullLocked() {
	full := d.noSpace != nil || d.lowSpace != 0
	if full && !d.full.Load() {
		d.fullSince = time.Now()
	}
	d.full.Store(full)
}

// appendWatched runs a log write in its caller (raft's leader or follower
// loop) with a watchdog. A write still running at the deadline is
// abandoned: stalled is called at once (the node fails the writes whose
// entries it holds and hands leadership over), every other log write fails
// at once until it ends, and when it ends what it stored is deleted (undo)
// and its caller gets ErrDiskStalled, as if it had failed at the deadline.
// Running the write in the caller rather than on a goroutine of its own
// costs nothing per write; handing every write to another goroutine and
// back would put two wakeups on every commit's path (docs/performance.md,
// "The disk gate").
func (d *disk) appendWatched(write, undo func() error, stalled func()) error {
	const op = "append"
	d.mu.Lock()
	err := d.stalledLocked()
	d.mu.Unlock()
	if err != nil {
		d.writeErrors.WithLabelValues("timeout").Inc()
		d.failed(op)
		return err
	}
	start := time.Now()
	var ended, abandoned bool // under d.mu
	watchdog := time.AfterFunc(d.timeout, func() {
		d.mu.Lock()
		if ended {
			d.mu.Unlock()
			return
		}
		abandoned = true
		d.writeErrors.WithLabelValues("timeout").Inc()
		d.stallLocked(start, true)
		d.mu.Unlock()
		if stalled != nil {
			stalled()
		}
	})
	werr := write()
	watchdog.Stop()
	d.mu.Lock()
	ended = true
	if abandoned {
		err = d.stalledLocked()
	}
	d.mu.Unlock()
	if !abandoned {
		if err = d.ended(op, start, werr, true); err != nil {
			d.failed(op)
		}
		return err
	}
	if werr == nil {
		d.undo(undo)
	}
	_ = d.ended(op, start, werr, false)
	d.mu.Lock()
	d.unstallLocked(true)
	d.mu.Unlock()
	d.failed(op)
	return err
}

// probeWrite runs a probe with the deadline on a goroutine of its own, so
// that watchDisk goes on while it hangs. Past the deadline it is
// abandoned; until it ends, log writes fail at once.
func (d *disk) probeWrite(write func() error) {
	const op = "probe"
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- write() }()
	timer := time.NewTimer(d.timeout)
	select {
	case err := <-done:
		timer.Stop()
		_ = d.ended(op, start, err, true)
		return
	case <-timer.C:
	}
	d.writeErrors.WithLabelValues("timeout").Inc()
	d.mu.Lock()
	d.stallLocked(start, true)
	d.mu.Unlock()
	go func() {
		err := <-done
		_ = d.ended(op, start, err, false)
		d.mu.Lock()
		d.unstallLocked(true)
		d.mu.Unlock()
	}()
}

// failed tells appendFailed of a log write that failed.
func (d *disk) failed(op string) {
	if op == "append" && d.appendFailed != nil {
		d.appendFailed()
	}
}

// undo deletes what an abandoned log write stored, trying again until it
// succeeds or the node stops. Entries left by a node that stopped first
// are the tail of an uncommitted write, which raft handles at restart as
// it would after a crash: no log write passed the gate meanwhile.
func (d *disk) undo(undo func() error) {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := undo()
		if err == nil {
			return
		}
		d.logger.Error("could not delete the entries of an abandoned log write; trying again", "error", err)
		select {
		case <-d.closing:
			return
		case <-time.After(wait):
		}
	}
}

// inline runs write in the caller, counting it as stalled once it is past
// the deadline. A stable store write (hold) first waits for an abandoned
// write to end and is retried while the disk has no space, until the node
// stops and the abandoned write has not ended within one more timeout (its
// error then makes raft panic, if it was the term: the process was
// stopping anyway); any other fails at once on a stalled disk.
func (d *disk) inline(op string, hold bool, write func() error) error {
	for last := false; ; {
		d.mu.Lock()
		idle := d.idle
		err := d.stalledLocked()
		d.mu.Unlock()
		if err != nil && !hold {
			d.writeErrors.WithLabelValues("timeout").Inc()
			return err
		}
		if idle != nil {
			select {
			case <-idle:
				continue
			case <-d.closing:
				// Raft panics at an error storing its term: a stopping
				// node still gives the abandoned write one more bound to
				// end (a disk that healed as the node began to stop).
				select {
				case <-idle:
					continue
				case <-time.After(d.timeout):
				}
				return err
			}
		}
		start := time.Now()
		overdue, ended := false, false
		timer := time.AfterFunc(d.timeout, func() {
			d.mu.Lock()
			if !ended {
				overdue = true
				d.writeErrors.WithLabelValues("timeout").Inc()
				d.stallLocked(start, false)
			}
			d.mu.Unlock()
		})
		werr := write()
		timer.Stop()
		d.mu.Lock()
		ended = true
		if overdue {
			d.unstallLocked(false)
		}
		d.mu.Unlock()
		err = d.ended(op, start, werr, true)
		if err == nil || !hold || !isNoSpace(werr) || last {
			return err
		}
		select {
		case <-d.closing:
			last = true // one more try: space may have returned meanwhile
		case <-time.After(d.retry):
		}
	}
}

// health reports whether the disk takes writes, and why not.
func (d *disk) health() (bool, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.abandoned > 0 || d.overdue > 0 {
		return false, "disk stalled: " + d.stallTextLocked()
	}
	if d.full.Load() {
		return false, "disk full: " + d.fullReasonLocked()
	}
	return true, ""
}

func (d *disk) fullReasonLocked() string {
	if d.noSpace != nil {
		return errnoText(d.noSpace)
	}
	return fmt.Sprintf("%d MiB free in the data directory, under the %d MiB reserve", d.lowSpace>>20, diskReserve>>20)
}

// stalled reports whether a write is past the deadline.
func (d *disk) stalled() bool { return d.stalledNow.Load() }

// refuse is the leader's check before it hands a write to Raft: while its
// disk is full the write would fail there and make it step down. (While it
// is stalled the node does not count as leader: see Node.IsLeader.)
func (d *disk) refuse() error {
	if !d.full.Load() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return &spaceError{msg: fmt.Sprintf("%v: %s cannot write its raft log: %s", ErrDiskFull, d.name, d.fullReasonLocked()), cause: d.noSpace}
}

// probeKey is the stable store key an idle node writes to check its disk.
var probeKey = []byte("LeaseholdDiskProbe")

// probe writes to the stable store, unless a write succeeded in the last
// interval or the disk is stalled, and reads the free space. Called only
// from watchDisk.
func (d *disk) probe(s raft.StableStore) {
	if free, err := d.free(d.dir); err == nil {
		d.mu.Lock()
		low := uint64(0)
		if free < diskReserve {
			low = max(free, 1)
		}
		if (low != 0) != (d.lowSpace != 0) {
			d.logger.Warn("free space in the data directory crossed the reserve", "free_mib", free>>20, "reserve_mib", diskReserve>>20)
		}
		d.lowSpace = low
		d.updateFullLocked()
		d.mu.Unlock()
	}
	d.mu.Lock()
	skip := d.abandoned > 0 || d.overdue > 0 || (d.noSpace == nil && time.Since(d.lastOK) < diskProbeInterval)
	d.mu.Unlock()
	if skip {
		return
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(time.Now().UnixNano()))
	d.probeWrite(func() error { return s.Set(probeKey, v[:]) })
}

// fullFor is how long the disk has counted as full (0 if it does not).
func (d *disk) fullFor() time.Duration {
	if !d.full.Load() {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Since(d.fullSince)
}

// diskLog passes raft's log writes through the disk gate. It sits under
// raft's LogCache, so that reads the cache answers never reach it, and a
// write it abandons never enters the cache.
type diskLog struct {
	raft.LogStore
	d *disk
	// failed is the error of the last log write that failed, for
	// keptErrors: appends come one at a time from raft's main loop.
	failed atomic.Pointer[error]
}

func (l *diskLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

func (l *diskLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return l.LogStore.StoreLogs(logs)
	}
	first, last := logs[0].Index, logs[len(logs)-1].Index
	err := l.d.appendWatched(
		func() error { return l.LogStore.StoreLogs(logs) },
		func() error { return l.LogStore.DeleteRange(first, last) },
		func() {
			if l.d.appendStalled != nil {
				l.d.appendStalled(logs)
			}
		})
	if err != nil {
		l.failed.Store(&err)
	}
	return err
}

func (l *diskLog) DeleteRange(min, max uint64) error {
	return l.d.inline("delete", false, func() error { return l.LogStore.DeleteRange(min, max) })
}

// takeFailed returns and forgets the last failed write's error.
func (l *diskLog) takeFailed() error {
	if p := l.failed.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// keptErrors is raft's LogCache with the disk gate's errors as they were:
// LogCache formats a failed write's error into a new one (log_cache.go),
// and the node needs to tell a stalled or full disk from other failures
// in what raft answers a write.
type keptErrors struct {
	*raft.LogCache
	gate *diskLog
}

func (c *keptErrors) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

func (c *keptErrors) StoreLogs(logs []*raft.Log) error {
	err := c.LogCache.StoreLogs(logs)
	if err != nil {
		if gerr := c.gate.takeFailed(); gerr != nil {
			return gerr
		}
	}
	return err
}

// diskStable passes raft's stable store writes through the disk gate.
type diskStable struct {
	raft.StableStore
	d *disk
}

func (s *diskStable) Set(key, val []byte) error {
	return s.d.inline("stable", true, func() error { return s.StableStore.Set(key, val) })
}

func (s *diskStable) SetUint64(key []byte, val uint64) error {
	return s.d.inline("stable", true, func() error { return s.StableStore.SetUint64(key, val) })
}

// watchDisk probes the disk of a node that writes nothing, and hands
// leadership over while this node leads on a stalled disk, or on a full
// one for diskFullHandOver.
func (n *Node) watchDisk(probe raft.StableStore) {
	defer n.wg.Done()
	t := time.NewTicker(diskProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stopCh:
			return
		case <-t.C:
		}
		n.disk.probe(probe)
		if n.raft.State() == raft.Leader && (n.disk.stalled() || n.disk.fullFor() >= diskFullHandOver) &&
			n.disk.handingOver.CompareAndSwap(false, true) {
			n.handOver()
			n.disk.handingOver.Store(false)
		}
	}
}

// appendStalled is called when a log write of logs has run past the stall
// timeout and still runs, holding raft's loop. Writes of this node among
// logs are stored nowhere else (raft sends entries once they are stored)
// and the write will be undone: their clients learn it at once and may
// retry at the next leader. As leader, the node hands over: its followers
// still get its heartbeats, which come from other goroutines, and would
// wait for it for as long as the disk hangs.
func (n *Node) appendStalled(logs []*raft.Log) {
	n.groups.abandon(logs, fmt.Errorf("%w: this node's log write was abandoned", ErrDiskStalled))
	if n.raft.State() != raft.Leader || !n.disk.handingOver.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer n.disk.handingOver.Store(false)
		n.handOver()
	}()
}

// appendFailed is called when a log write fails for a stalled or full
// disk, before raft learns it. On the leader raft steps down at this error,
// and its followers would wait out an election timeout, or more when this
// node, which cannot store a vote, is one they ask; so once it has stepped
// down it hands over at once.
func (n *Node) appendFailed() {
	if n.raft.State() != raft.Leader || !n.disk.handingOver.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer n.disk.handingOver.Store(false)
		deadline := time.Now().Add(n.cfg.HeartbeatTimeout)
		for n.raft.State() == raft.Leader {
			if time.Now().After(deadline) {
				return
			}
			select {
			case <-n.stopCh:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
		n.handOver()
	}()
}

// handOver makes a voter that reports itself ready (so its disk takes
// writes), the one with the longest log, the next leader: by raft's
// leadership transfer while this node leads with a working disk, or, once
// raft has stepped this node down or while raft's loop is held by a
// stalled write, by the TimeoutNow that such a transfer ends with, which
// has the voter campaign at once, its votes granted though the others
// still wait for this node. With no such voter this node does nothing: on
// a full disk it goes on leading, refusing writes, and the cluster stays
// readable.
func (n *Node) handOver() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	type answer struct {
		s    raft.Server
		info *transport.NodeInfo
	}
	var asked int
	answers := make(chan answer)
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter || string(s.ID) == n.cfg.Name {
			continue
		}
		asked++
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.HeartbeatTimeout/2)
			defer cancel()
			info, err := n.client.NodeInfo(ctx, string(s.Address))
			if err != nil {
				info = nil
			}
			answers <- answer{s, info}
		}()
	}
	var to *answer
	term := n.raft.CurrentTerm()
	later := false
	for range asked {
		a := <-answers
		// A voter in a later term campaigns already, or follows a newer
		// leader: another push would only start an election that unseats
		// it (a TimeoutNow makes its receiver campaign whatever its log).
		if a.info != nil && a.info.Term > term {
			later = true
		}
		// A voter that follows another leader already needs no push.
		if a.info == nil || !a.info.Ready || (a.info.Leader != "" && a.info.Leader != n.cfg.Name) {
			continue
		}
		if to == nil || a.info.LastIndex > to.info.LastIndex {
			to = &a
		}
	}
	if to == nil || later {
		return
	}
	_, why := n.disk.health()
	n.logger.Warn("handing leadership to a member whose disk takes writes", "to", to.s.ID, "this_disk", why)
	if n.raft.State() == raft.Leader && !n.disk.stalled() {
		if err := n.raft.LeadershipTransferToServer(to.s.ID, to.s.Address).Error(); err != nil {
			n.logger.Warn("leadership transfer failed", "to", to.s.ID, "error", err)
		}
		return
	}
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax,
		ID:              []byte(n.cfg.Name),
		Addr:            n.trans.EncodePeer(raft.ServerID(n.cfg.Name), n.trans.LocalAddr()),
	}}
	if err := n.trans.TimeoutNow(to.s.ID, to.s.Address, req, &raft.TimeoutNowResponse{}); err != nil {
		n.logger.Warn("could not ask a member to campaign", "to", to.s.ID, "error", err)
	}
}
