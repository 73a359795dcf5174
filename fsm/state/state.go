package state

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Key names one object. Resource is the plural resource name ("leases").
type Key struct {
	Resource, Namespace, Name string
}

// id is the object's primary index value. Byte order of ids is the order of
// kube-apiserver's etcd keys (namespace, then name, '/'-separated), which is
// the order lists are returned in.
func (k Key) id() string { return k.Resource + "/" + k.Namespace + "/" + k.Name }

func (k Key) String() string { return k.id() }

// Object is one stored object. Objects are immutable once stored: writers
// replace them, readers may share them.
//
// Every version of every object in the history is an Object, so it holds
// nothing Obj already has: its namespace and name are Obj's (see Key), and
// its uid too (see UID). At 80 bytes it is under a quarter of the decoded
// Lease it wraps.
type Object struct {
	// Resource is the plural resource name ("leases").
	Resource string
	// RV is the Raft index of the entry that last changed the object.
	RV uint64
	// CreateRV is the Raft index of the entry that created it, and
	// KeyVersion the number of writes since (1 when created): etcd's
	// create_revision and version of its key.
	CreateRV, KeyVersion uint64
	// Obj is the decoded object, with resourceVersion set. It is a
	// metav1.Object. Never mutate it.
	Obj runtime.Object
	// data: see Data.
	data *[]byte

	// encodings caches Obj's wire encodings, one slot per format, so that
	// an object sent to a thousand watchers is encoded once (see
	// Store.Encoding).
	encodings [EncodingSlots]atomic.Pointer[[]byte]
}

// NewObject returns the stored object for obj, a metav1.Object of the
// resource, at rv. data is what Data returns.
func NewObject(resource string, rv uint64, obj runtime.Object, data []byte) *Object {
	o := &Object{Resource: resource, RV: rv, Obj: obj}
	if data != nil {
		o.data = new([]byte) // not &data: that would allocate for every object
		*o.data = data
	}
	return o
}

// Data is the object's protobuf encoding with resourceVersion unset, as
// written, when encoding Obj again would not give it back (fields this
// binary does not know). Usually it would, and Data is nil: the FSM encodes
// Obj again when it needs the bytes, rather than every object holding them.
// Two writes with equal encodings are the same object.
func (o *Object) Data() []byte {
	if o.data == nil {
		return nil
	}
	return *o.data
}

// Key is the object's key: its resource, and Obj's namespace and name.
func (o *Object) Key() Key {
	k := Key{Resource: o.Resource}
	if m, ok := o.Obj.(metav1.Object); ok {
		k.Namespace, k.Name = m.GetNamespace(), m.GetName()
	}
	return k
}

// ID is the object's id, the order of lists.
func (o *Object) ID() string { return o.Key().id() }

// UID is the object's metadata.uid.
func (o *Object) UID() string {
	if m, ok := o.Obj.(metav1.Object); ok {
		return string(m.GetUID())
	}
	return ""
}

// Store is the node's in-memory state: objects in an immutable tree (see
// node: a read snapshot costs one pointer copy and never blocks Apply), the
// applied index, and the event history.
//
// Writes come only from the FSM goroutine through Begin/Commit. Lock order:
// mu is never held while calling out of the package.
type Store struct {
	// mu guards the fields below; the FSM goroutine takes it to publish,
	// readers share it.
	mu sync.RWMutex
	// root is written only by the FSM goroutine; readers use published,
	// the view at the applied index.
	root      *node
	published *node
	applied   uint64
	// advanced is closed and replaced whenever applied moves or the state is
	// replaced by a restore; waiters select on it.
	advanced chan struct{}
	// generation counts restores; a watcher started before a restore cannot
	// trust the history any more.
	generation uint64
	history    *History
	snaps      snapRing
	// rebuilt keeps the last views SnapshotAt rebuilt from the history:
	// the pages of one paginated list all ask for the view at its first
	// page's version.
	rebuilt rebuiltViews
	// encodings bounds the encodings cached by the stored objects.
	encodings *encodingCache
	// changed is, per resource, the index of the last commit that changed
	// one of its objects since the last Replace (at replacedAt): what is
	// derived from a rarely written resource can be kept until it changes.
	changed    map[string]uint64
	replacedAt uint64
	// featureLevel is the cluster feature level the log has raised the
	// state to (see fsm.MaxFeatureLevel); it never goes down.
	featureLevel uint32
	// revision is the index of the last entry that changed an object
	// (etcd's store revision); compacted is the revision the etcd API's
	// Compact asked for (see Txn.Compact).
	revision, compacted uint64
	// sizeOf is what an object counts toward the stored data (see
	// SetSizeOf); storedBytes the sum of it over the objects at the
	// applied index. noSpace is the index of the entry that raised the
	// NOSPACE alarm, 0 while it is off. All three are replicated state:
	// every node has the same at the same index.
	sizeOf      func(*Object) int64
	storedBytes int64
	noSpace     uint64
}

// Config bounds what the store retains.
type Config struct {
	// HistoryEvents is the number of events kept for watch resume (>0).
	HistoryEvents int
	// HistoryAge, if set, also bounds the history by age.
	HistoryAge time.Duration
	// ListSnapshots is the number of past read snapshots kept for paginated
	// lists (continue tokens) and exact-version lists (>0). An older view
	// within the history is rebuilt from it on demand. Each view keeps the
	// tree paths its commit copied, so under steady writes every view kept
	// is memory held for lists that may never come.
	ListSnapshots int
	// EncodingCacheBytes bounds the cached wire encodings of stored objects
	// (see Object.Encoding); 0 means the default. A cached encoding also
	// keeps its version of the object alive after a newer one replaced it,
	// and every write's response caches one, so a larger cache holds more
	// replaced versions alive. Watchers read a write's encoding within a
	// flush interval, so the cache need hold only the latest writes.
	EncodingCacheBytes int
}

// The watch history's defaults: about what kube-apiserver's watch cache
// holds for a busy resource, for as long as etcd keeps revisions under
// kube-apiserver's default compaction (every 5 minutes).
const (
	DefaultHistoryEvents = 100000
	DefaultHistoryAge    = 5 * time.Minute
)

// DefaultConfig keeps about as much as kube-apiserver's watch cache.
func DefaultConfig() Config {
	// 4 MiB of encodings (JSON and protobuf) holds the latest writes for
	// longer than a watch's flush interval: time for every watcher to get
	// them. 128 views cover a paginated list's pages for 128 commits:
	// seconds at a few hundred commits a second, after which pages are
	// served from views rebuilt from the history.
	return Config{HistoryEvents: DefaultHistoryEvents, HistoryAge: DefaultHistoryAge, ListSnapshots: 128, EncodingCacheBytes: 4 << 20}
}

// New returns an empty store.
func New(cfg Config) *Store {
	d := DefaultConfig()
	if cfg.HistoryEvents <= 0 {
		cfg.HistoryEvents = d.HistoryEvents
	}
	if cfg.ListSnapshots <= 0 {
		cfg.ListSnapshots = d.ListSnapshots
	}
	if cfg.EncodingCacheBytes <= 0 {
		cfg.EncodingCacheBytes = d.EncodingCacheBytes
	}
	s := &Store{
		advanced:  make(chan struct{}),
		history:   newHistory(cfg.HistoryEvents, cfg.HistoryAge),
		snaps:     newSnapRing(cfg.ListSnapshots),
		encodings: newEncodingCache(cfg.EncodingCacheBytes),
		changed:   map[string]uint64{},
	}
	// The empty state is the view at index 0 and stands for the entries
	// before the first change, as Replace seeds the ring with its state.
	s.snaps.add(0, s.published)
	return s
}

// SetPriorOf sets how an event holds the state its change replaced once no
// other event holds it (see Prior); before it, and for what priorOf returns
// prev for, events hold the state itself. Call it before the first write.
func (s *Store) SetPriorOf(priorOf func(next, prev *Object) Prior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history.priorOf = priorOf
}

// SetSizeOf sets what each object counts toward the stored data
// (StoredBytes): a pure function of the object, the same on every node.
// Without it nothing is counted. Call it before the first write.
func (s *Store) SetSizeOf(sizeOf func(*Object) int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sizeOf = sizeOf
}

// StoredBytes is the stored data at the applied index: the sum of what
// each object counts (SetSizeOf).
func (s *Store) StoredBytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.storedBytes
}

// NoSpace is the index of the entry that raised the NOSPACE alarm, 0
// while it is off.
func (s *Store) NoSpace() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.noSpace
}

// SetNoSpace sets the NOSPACE alarm of a state just restored from a
// snapshot (after Replace).
func (s *Store) SetNoSpace(idx uint64) {
	s.mu.Lock()
	s.noSpace = idx
	s.mu.Unlock()
}

// AppliedIndex is the index of the last log entry whose effects are visible
// to readers.
func (s *Store) AppliedIndex() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.applied
}

// WaitApplied blocks until the applied index reaches idx or ctx ends.
func (s *Store) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		s.mu.RLock()
		applied, ch := s.applied, s.advanced
		s.mu.RUnlock()
		if applied >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Changed returns a channel closed at the next commit or restore.
func (s *Store) Changed() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.advanced
}

// Snapshot is a consistent read view at one applied index.
type Snapshot struct {
	Index uint64
	// Generation is the store's generation the view belongs to.
	Generation uint64
	// Revision is the index of the last entry that changed an object, up
	// to the applied index of the latest state (not of a view at an
	// earlier index: etcd answers every read with the current revision).
	Revision uint64
	root     *node
}

// ChangedAt returns a number that grows whenever an object of one of
// resources changes or the state is replaced: the index of the last such
// commit. It moves only once the change is published, so a Snapshot taken
// after reading it holds that change.
func (s *Store) ChangedAt(resources ...string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	at := s.replacedAt
	for _, r := range resources {
		at = max(at, s.changed[r])
	}
	return at
}

// FeatureLevel is the cluster feature level the applied log raised the
// state to.
func (s *Store) FeatureLevel() uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.featureLevel
}

// SetFeatureLevel sets the level of a state just restored from a
// snapshot (after Replace).
func (s *Store) SetFeatureLevel(level uint32) {
	s.mu.Lock()
	s.featureLevel = level
	s.mu.Unlock()
}

// SetCompacted sets the etcd API's compacted revision of a state just
// restored from a snapshot (after Replace).
func (s *Store) SetCompacted(rev uint64) {
	s.mu.Lock()
	s.compacted = rev
	s.mu.Unlock()
}

// RaiseFeatureLevel raises the feature level to level when the commit
// publishes; a lower or equal level changes nothing. Only the FSM
// goroutine reads featureLevel outside the lock.
func (t *Txn) RaiseFeatureLevel(level uint32) {
	t.level = max(t.level, level)
}

// Snapshot returns a read view of the latest applied state.
func (s *Store) Snapshot() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{Index: s.applied, Generation: s.generation, Revision: s.revision, root: s.published}
}

// Revision is the index of the last entry that changed an object, and
// Compacted the revision the etcd API last compacted to (0 if never).
func (s *Store) Revision() (revision, compacted uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.revision, s.compacted
}

// DroppedRV is the RV of the newest event the history no longer holds (0
// if none): views and watches from before it cannot be served.
func (s *Store) DroppedRV() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.history.dropped
}

// SnapshotAt returns the read view at exactly index idx. Recent views are
// kept as they were; an older one is rebuilt from the current state by
// undoing the history's events after idx, so any index whose later events
// are all still in the history can be read. ok is false for an older idx;
// idx newer than the applied index is the caller's to rule out first.
func (s *Store) SnapshotAt(idx uint64) (*Snapshot, bool) {
	s.mu.RLock()
	if idx > s.applied {
		s.mu.RUnlock()
		return nil, false
	}
	gen, rev := s.generation, s.revision
	if idx == s.applied {
		defer s.mu.RUnlock()
		return &Snapshot{Index: idx, Generation: gen, Revision: rev, root: s.published}, true
	}
	if root, ok := s.snaps.at(idx); ok {
		s.mu.RUnlock()
		return &Snapshot{Index: idx, Generation: gen, Revision: rev, root: root}, true
	}
	if idx < s.history.dropped {
		s.mu.RUnlock()
		return nil, false
	}
	if root, ok := s.rebuilt.get(gen, idx); ok {
		s.mu.RUnlock()
		return &Snapshot{Index: idx, Generation: gen, Revision: rev, root: root}, true
	}
	later := s.history.since(idx)
	root := s.published // undone into copies of its paths
	s.mu.RUnlock()
	materialize(later)

	for i := len(later) - 1; i >= 0; i-- {
		e := later[i]
		if prev := e.Prev(); prev != nil {
			root = root.insert(prev.ID(), prev)
			continue
		}
		var found bool
		if root, found = root.remove(e.Object.ID()); !found {
			panic(fmt.Sprintf("state: undo event %d on %s: not found", e.RV, e.Object.Key()))
		}
	}
	s.rebuilt.add(gen, idx, root)
	return &Snapshot{Index: idx, Generation: gen, Revision: rev, root: root}, true
}

// rebuiltViewsKept bounds the rebuilt views kept. A view shares all but the
// paths its rebuild copied with the tree it came from, so one costs at most
// about a copy of the tree's nodes, usually far less.
const rebuiltViewsKept = 4

// rebuiltViews is a small most-recently-used list of views rebuilt from
// the history, by generation and index. Without it, every page of a
// paginated list undoes every write since its first page again, so under
// steady writes each page costs more than the one before.
type rebuiltViews struct {
	mu    sync.Mutex
	views []rebuiltView // least recently used first
}

type rebuiltView struct {
	gen, idx uint64
	root     *node
}

func (r *rebuiltViews) get(gen, idx uint64) (*node, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := r.index(gen, idx)
	if i < 0 {
		return nil, false
	}
	v := r.views[i]
	r.views = append(append(r.views[:i], r.views[i+1:]...), v)
	return v.root, true
}

func (r *rebuiltViews) add(gen, idx uint64, root *node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i := r.index(gen, idx); i >= 0 {
		r.views = append(r.views[:i], r.views[i+1:]...)
	}
	if len(r.views) == rebuiltViewsKept {
		r.views = append(r.views[:0], r.views[1:]...)
	}
	r.views = append(r.views, rebuiltView{gen: gen, idx: idx, root: root})
}

// index is the position of the view of gen and idx, or -1. r.mu is held.
func (r *rebuiltViews) index(gen, idx uint64) int {
	return slices.IndexFunc(r.views, func(v rebuiltView) bool { return v.gen == gen && v.idx == idx })
}

// dropBefore drops the views of indexes before idx.
func (r *rebuiltViews) dropBefore(idx uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.views[:0]
	for _, v := range r.views {
		if v.idx >= idx {
			kept = append(kept, v)
		}
	}
	clear(r.views[len(kept):])
	r.views = kept
}

// reset drops every view (a restore replaced the state they came from).
func (r *rebuiltViews) reset() {
	r.mu.Lock()
	r.views = nil
	r.mu.Unlock()
}

// Get returns the object under k, or nil.
func (sn *Snapshot) Get(k Key) *Object { return sn.root.get(k.id()) }

// List calls fn for each object of resource in namespace ("" = all
// namespaces) whose id is >= after's id (exclusive when after is set), in
// key order, until fn returns false.
func (sn *Snapshot) List(resource, namespace string, after *Key, fn func(*Object) bool) {
	prefix := resource + "/"
	if namespace != "" {
		prefix += namespace + "/"
	}
	start := prefix
	if after != nil && after.id() >= prefix {
		start = after.id()
	}
	sn.root.ascend(start, func(o *Object) bool {
		id := o.ID()
		if !strings.HasPrefix(id, prefix) {
			return false
		}
		if after != nil && id == after.id() {
			return true
		}
		return fn(o)
	})
}

// Ascend calls fn for each object whose ID is >= from, in ID order, until
// fn returns false.
func (sn *Snapshot) Ascend(from string, fn func(*Object) bool) { sn.root.ascend(from, fn) }

// Count returns the number of objects of resource.
func (sn *Snapshot) Count(resource string) int {
	n := 0
	sn.List(resource, "", nil, func(*Object) bool { n++; return true })
	return n
}

// Txn is a write transaction over one batch of log entries, used only on
// the FSM goroutine. Each entry ends with Step, which keeps a read view at
// that entry's index (for exact-version lists); Commit publishes the batch.
type Txn struct {
	s         *Store
	root      *node
	level     uint32 // a feature level raised in this batch, or 0
	compacted uint64 // a compaction asked for in this batch, or 0
	// stored and noSpace are the store's, as this batch's entries left
	// them so far.
	stored  int64
	noSpace uint64
	changed bool
	views   []view
	events  []Event
}

type view struct {
	idx  uint64
	root *node
}

// Begin starts a write transaction. Only the FSM goroutine calls it, and at
// most one is open at a time.
func (s *Store) Begin() *Txn {
	return &Txn{s: s, root: s.root, stored: s.storedBytes, noSpace: s.noSpace}
}

// StoredBytes is the stored data with this transaction's writes.
func (t *Txn) StoredBytes() int64 { return t.stored }

// NoSpace is the index of the entry that raised the NOSPACE alarm, this
// transaction's entries included; 0 while it is off.
func (t *Txn) NoSpace() uint64 { return t.noSpace }

// SetNoSpace raises the NOSPACE alarm at idx, or clears it (0), when the
// commit publishes.
func (t *Txn) SetNoSpace(idx uint64) { t.noSpace = idx }

// size is what o counts toward the stored data (0 for nil).
func (t *Txn) size(o *Object) int64 {
	if o == nil || t.s.sizeOf == nil {
		return 0
	}
	return t.s.sizeOf(o)
}

// Get returns the current object under k, including earlier writes of this
// transaction.
func (t *Txn) Get(k Key) *Object { return t.root.get(k.id()) }

// Ascend calls fn for each current object whose ID is >= from, in ID
// order, until fn returns false (earlier writes of this transaction
// included).
func (t *Txn) Ascend(from string, fn func(*Object) bool) { t.root.ascend(from, fn) }

// Revision is the index of the last entry that changed an object, this
// transaction's entries included, and the etcd API's compacted revision.
func (t *Txn) Revision() (revision, compacted uint64) {
	revision, compacted = t.s.revision, max(t.s.compacted, t.compacted)
	if n := len(t.events); n > 0 {
		revision = t.events[n-1].RV
	}
	return revision, compacted
}

// Compact records the etcd API's compaction to rev (a lower one changes
// nothing). It drops nothing: the history keeps its own window.
func (t *Txn) Compact(rev uint64) { t.compacted = max(t.compacted, rev) }

// Put stores o (created when prev is nil, modified otherwise) at o.RV.
func (t *Txn) Put(o, prev *Object, appendedAt int64) {
	t.root = t.root.insert(o.ID(), o)
	t.stored += t.size(o) - t.size(prev)
	e := Event{Type: Added, RV: o.RV, Object: o, At: appendedAt}
	if prev != nil {
		e.Type, e.Prior = Modified, prev
	}
	t.changed = true
	t.events = append(t.events, e)
}

// Delete removes the object; tombstone is its last state, prev, stamped
// with the delete's index.
func (t *Txn) Delete(tombstone, prev *Object, appendedAt int64) {
	var found bool
	if t.root, found = t.root.remove(tombstone.ID()); !found {
		panic(fmt.Sprintf("state: delete %s: not found", tombstone.Key()))
	}
	t.stored -= t.size(prev)
	t.changed = true
	t.events = append(t.events, Event{Type: Deleted, RV: tombstone.RV, Object: tombstone, Prior: prev, At: appendedAt})
}

// Step ends the entry at idx. Entries that changed nothing keep no view: the
// previous one stands for them.
func (t *Txn) Step(idx uint64) {
	if !t.changed {
		return
	}
	t.views = append(t.views, view{idx: idx, root: t.root})
	t.changed = false
}

// Commit publishes every entry up to idx to readers, records the events and
// wakes everyone waiting for the index.
func (t *Txn) Commit(idx uint64) {
	t.Step(idx)
	s := t.s
	s.root = t.root
	s.mu.Lock()
	for _, v := range t.views {
		s.snaps.add(v.idx, v.root)
	}
	if len(t.views) > 0 {
		s.published = t.views[len(t.views)-1].root
	}
	if idx > s.applied {
		s.applied = idx
	}
	for _, e := range t.events {
		s.changed[e.Object.Resource] = idx
	}
	s.featureLevel = max(s.featureLevel, t.level)
	s.compacted = max(s.compacted, t.compacted)
	s.storedBytes, s.noSpace = t.stored, t.noSpace
	if n := len(t.events); n > 0 {
		s.revision = t.events[n-1].RV
	}
	s.history.append(t.events)
	// A view the history can no longer serve must not keep old objects.
	s.rebuilt.dropBefore(s.history.dropped)
	close(s.advanced)
	s.advanced = make(chan struct{})
	s.mu.Unlock()
}

// Replace swaps in a whole new state (from a Raft snapshot). Watchers see a
// new generation and must resume from a fresh list. The revision is the
// newest RV among objects, events and dropped events. The NOSPACE alarm
// is off until SetNoSpace.
func (s *Store) Replace(objs []*Object, events []Event, dropped, applied uint64) {
	root := newTree(objs)
	rev := dropped
	var stored int64
	for _, o := range objs {
		rev = max(rev, o.RV)
		if s.sizeOf != nil { // set once, before the first write
			stored += s.sizeOf(o)
		}
	}
	if n := len(events); n > 0 {
		rev = max(rev, events[n-1].RV)
	}
	s.mu.Lock()
	s.revision = rev
	s.storedBytes, s.noSpace = stored, 0
	s.root = root
	s.published = root
	s.applied = applied
	s.generation++
	clear(s.changed)
	s.replacedAt = applied
	s.history.reset(events, dropped)
	s.snaps.reset()
	s.snaps.add(applied, s.published)
	s.rebuilt.reset()
	close(s.advanced)
	s.advanced = make(chan struct{})
	s.mu.Unlock()
}

// Dump returns every object and the retained history (with the RV of the
// newest event already dropped from it) at one applied index, for a Raft
// snapshot.
func (s *Store) Dump() (objs []*Object, history *HistoryDump, dropped, applied uint64) {
	s.mu.RLock()
	root := s.published
	applied = s.applied
	history = &HistoryDump{evs: s.history.all()}
	dropped = s.history.dropped
	s.mu.RUnlock()
	root.ascend("", func(o *Object) bool { objs = append(objs, o); return true })
	return objs, history, dropped, applied
}

// snapRing keeps the read views of the last n commits, oldest first.
type snapRing struct {
	idx   []uint64
	roots []*node
	n     int
}

func newSnapRing(n int) snapRing { return snapRing{n: n} }

func (r *snapRing) add(idx uint64, root *node) {
	if len(r.idx) > 0 && r.idx[len(r.idx)-1] == idx {
		r.roots[len(r.roots)-1] = root
		return
	}
	if len(r.idx) == r.n {
		copy(r.idx, r.idx[1:])
		copy(r.roots, r.roots[1:])
		r.roots[r.n-1] = nil
		r.idx, r.roots = r.idx[:r.n-1], r.roots[:r.n-1]
	}
	r.idx = append(r.idx, idx)
	r.roots = append(r.roots, root)
}

func (r *snapRing) reset() {
	clear(r.roots)
	r.idx, r.roots = r.idx[:0], r.roots[:0]
}

// at returns the newest view at or below idx. A view stands for every index
// up to the next one, since entries that changed nothing keep no view. It
// fails when idx is older than the oldest view kept.
func (r *snapRing) at(idx uint64) (*node, bool) {
	// First view newer than idx.
	i := sort.Search(len(r.idx), func(i int) bool { return r.idx[i] > idx })
	if i == 0 {
		return nil, false
	}
	return r.roots[i-1], true
}
