package state

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"
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
type Object struct {
	Key Key
	// RV is the Raft index of the entry that last changed the object.
	RV  uint64
	UID string
	// Data is the object's protobuf encoding with resourceVersion unset; two
	// writes with equal Data are the same object.
	Data []byte
	// Obj is Data decoded, with resourceVersion set. Never mutate it.
	Obj runtime.Object

	// encodings caches Obj's wire encodings, one slot per format, so that
	// an object sent to a thousand watchers is encoded once.
	encodings [EncodingSlots]atomic.Pointer[[]byte]
}

// Encoding slots of Object.Encoding.
const (
	EncodingJSON = iota
	EncodingProtobuf
	EncodingSlots
)

// Encoding returns Obj encoded in the format of slot, computing it with enc
// the first time. Concurrent first calls may both encode; either result is
// kept.
func (o *Object) Encoding(slot int, enc func(runtime.Object) ([]byte, error)) ([]byte, error) {
	if b := o.encodings[slot].Load(); b != nil {
		return *b, nil
	}
	b, err := enc(o.Obj)
	if err != nil {
		return nil, err
	}
	o.encodings[slot].Store(&b)
	return b, nil
}

// ID is the object's primary index value (used by memdb).
func (o *Object) ID() string { return o.Key.id() }

const table = "objects"

var schema = &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
	table: {
		Name: table,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "id"}},
		},
	},
}}

// stored is what memdb holds; the exported field is indexed by StringFieldIndex.
type stored struct {
	id  string
	obj *Object
}

// Store is the node's in-memory state: objects in a go-memdb (an immutable
// radix tree, so a read snapshot costs one pointer copy and never blocks
// Apply), the applied index, and the event history.
//
// Writes come only from the FSM goroutine through Begin/Commit. Lock order:
// mu is never held while calling out of the package.
type Store struct {
	// mu guards the fields below; the FSM goroutine takes it to publish,
	// readers share it.
	mu sync.RWMutex
	// db is written only by the FSM goroutine; readers use published, the
	// view at the applied index.
	db        *memdb.MemDB
	published *memdb.MemDB
	applied   uint64
	// advanced is closed and replaced whenever applied moves or the state is
	// replaced by a restore; waiters select on it.
	advanced chan struct{}
	// generation counts restores; a watcher started before a restore cannot
	// trust the history any more.
	generation uint64
	history    *History
	snaps      snapRing
}

// Config bounds what the store retains.
type Config struct {
	// HistoryEvents is the number of events kept for watch resume (>0).
	HistoryEvents int
	// HistoryAge, if set, also bounds the history by age.
	HistoryAge time.Duration
	// ListSnapshots is the number of past read snapshots kept for paginated
	// lists (continue tokens) and exact-version lists (>0).
	ListSnapshots int
}

// DefaultConfig keeps about as much as kube-apiserver's watch cache.
func DefaultConfig() Config {
	return Config{HistoryEvents: 100000, HistoryAge: 5 * time.Minute, ListSnapshots: 1024}
}

// New returns an empty store.
func New(cfg Config) *Store {
	if cfg.HistoryEvents <= 0 || cfg.ListSnapshots <= 0 {
		d := DefaultConfig()
		if cfg.HistoryEvents <= 0 {
			cfg.HistoryEvents = d.HistoryEvents
		}
		if cfg.ListSnapshots <= 0 {
			cfg.ListSnapshots = d.ListSnapshots
		}
	}
	db := mustNewDB()
	s := &Store{
		db:        db,
		published: db.Snapshot(),
		advanced:  make(chan struct{}),
		history:   newHistory(cfg.HistoryEvents, cfg.HistoryAge),
		snaps:     newSnapRing(cfg.ListSnapshots),
	}
	// The empty state is the view at index 0 and stands for the entries
	// before the first change, as Replace seeds the ring with its state.
	s.snaps.add(0, s.published)
	return s
}

func mustNewDB() *memdb.MemDB {
	db, err := memdb.NewMemDB(schema)
	if err != nil {
		panic(fmt.Sprintf("state: bad schema: %v", err))
	}
	return db
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
	txn        *memdb.Txn
}

// Snapshot returns a read view of the latest applied state.
func (s *Store) Snapshot() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{Index: s.applied, Generation: s.generation, txn: s.published.Txn(false)}
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
	gen := s.generation
	if idx == s.applied {
		defer s.mu.RUnlock()
		return &Snapshot{Index: idx, Generation: gen, txn: s.published.Txn(false)}, true
	}
	if db, ok := s.snaps.at(idx); ok {
		s.mu.RUnlock()
		return &Snapshot{Index: idx, Generation: gen, txn: db.Txn(false)}, true
	}
	if idx < s.history.dropped {
		s.mu.RUnlock()
		return nil, false
	}
	later := s.history.since(idx)
	db := s.published.Snapshot() // a private copy to undo into
	s.mu.RUnlock()

	txn := db.Txn(true)
	for i := len(later) - 1; i >= 0; i-- {
		e := later[i]
		var err error
		if e.Prev == nil {
			err = txn.Delete(table, &stored{id: e.Object.ID(), obj: e.Object})
		} else {
			err = txn.Insert(table, &stored{id: e.Prev.ID(), obj: e.Prev})
		}
		if err != nil {
			panic(fmt.Sprintf("state: undo event %d on %s: %v", e.RV, e.Object.Key, err))
		}
	}
	txn.Commit()
	return &Snapshot{Index: idx, Generation: gen, txn: db.Txn(false)}, true
}

// Get returns the object under k, or nil.
func (sn *Snapshot) Get(k Key) *Object {
	raw, err := sn.txn.First(table, "id", k.id())
	if err != nil || raw == nil {
		return nil
	}
	return raw.(*stored).obj
}

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
	it, err := sn.txn.LowerBound(table, "id", start)
	if err != nil {
		panic(fmt.Sprintf("state: list: %v", err))
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		o := raw.(*stored).obj
		id := o.ID()
		if !strings.HasPrefix(id, prefix) {
			return
		}
		if after != nil && id == after.id() {
			continue
		}
		if !fn(o) {
			return
		}
	}
}

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
	s       *Store
	txn     *memdb.Txn
	changed bool
	views   []view
	events  []Event
}

type view struct {
	idx uint64
	db  *memdb.MemDB
}

// Begin starts a write transaction. Only the FSM goroutine calls it, and at
// most one is open at a time.
func (s *Store) Begin() *Txn {
	return &Txn{s: s, txn: s.db.Txn(true)}
}

// Get returns the current object under k, including earlier writes of this
// transaction.
func (t *Txn) Get(k Key) *Object {
	raw, err := t.txn.First(table, "id", k.id())
	if err != nil || raw == nil {
		return nil
	}
	return raw.(*stored).obj
}

// Put stores o (created when prev is nil, modified otherwise) at o.RV.
func (t *Txn) Put(o, prev *Object, appendedAt int64) {
	if err := t.txn.Insert(table, &stored{id: o.ID(), obj: o}); err != nil {
		panic(fmt.Sprintf("state: insert %s: %v", o.Key, err))
	}
	typ := Added
	if prev != nil {
		typ = Modified
	}
	t.changed = true
	t.events = append(t.events, Event{Type: typ, RV: o.RV, Object: o, Prev: prev, At: appendedAt})
}

// Delete removes prev; tombstone is its last state stamped with the delete's
// index.
func (t *Txn) Delete(prev, tombstone *Object, appendedAt int64) {
	if err := t.txn.Delete(table, &stored{id: prev.ID(), obj: prev}); err != nil {
		panic(fmt.Sprintf("state: delete %s: %v", prev.Key, err))
	}
	t.changed = true
	t.events = append(t.events, Event{Type: Deleted, RV: tombstone.RV, Object: tombstone, Prev: prev, At: appendedAt})
}

// Step ends the entry at idx. Entries that changed nothing keep no view: the
// previous one stands for them.
func (t *Txn) Step(idx uint64) {
	if !t.changed {
		return
	}
	t.txn.Commit()
	t.views = append(t.views, view{idx: idx, db: t.s.db.Snapshot()})
	t.txn = t.s.db.Txn(true)
	t.changed = false
}

// Commit publishes every entry up to idx to readers, records the events and
// wakes everyone waiting for the index.
func (t *Txn) Commit(idx uint64) {
	t.Step(idx)
	t.txn.Abort()
	s := t.s
	s.mu.Lock()
	for _, v := range t.views {
		s.snaps.add(v.idx, v.db)
	}
	if len(t.views) > 0 {
		s.published = t.views[len(t.views)-1].db
	}
	if idx > s.applied {
		s.applied = idx
	}
	s.history.append(t.events)
	close(s.advanced)
	s.advanced = make(chan struct{})
	s.mu.Unlock()
}

// Replace swaps in a whole new state (from a Raft snapshot). Watchers see a
// new generation and must resume from a fresh list.
func (s *Store) Replace(objs []*Object, events []Event, dropped, applied uint64) {
	db := mustNewDB()
	txn := db.Txn(true)
	for _, o := range objs {
		if err := txn.Insert(table, &stored{id: o.ID(), obj: o}); err != nil {
			panic(fmt.Sprintf("state: restore insert %s: %v", o.Key, err))
		}
	}
	txn.Commit()
	s.mu.Lock()
	s.db = db
	s.published = db.Snapshot()
	s.applied = applied
	s.generation++
	s.history.reset(events, dropped)
	s.snaps.reset()
	s.snaps.add(applied, s.published)
	close(s.advanced)
	s.advanced = make(chan struct{})
	s.mu.Unlock()
}

// Dump returns every object and the retained history (with the RV of the
// newest event already dropped from it) at one applied index, for a Raft
// snapshot.
func (s *Store) Dump() (objs []*Object, events []Event, dropped, applied uint64) {
	s.mu.RLock()
	txn := s.published.Txn(false)
	applied = s.applied
	events = s.history.all()
	dropped = s.history.dropped
	s.mu.RUnlock()
	it, err := txn.Get(table, "id")
	if err != nil {
		panic(fmt.Sprintf("state: dump: %v", err))
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		objs = append(objs, raw.(*stored).obj)
	}
	return objs, events, dropped, applied
}

// snapRing keeps the read views of the last n commits, oldest first.
type snapRing struct {
	idx []uint64
	dbs []*memdb.MemDB
	n   int
}

func newSnapRing(n int) snapRing { return snapRing{n: n} }

func (r *snapRing) add(idx uint64, db *memdb.MemDB) {
	if len(r.idx) > 0 && r.idx[len(r.idx)-1] == idx {
		r.dbs[len(r.dbs)-1] = db
		return
	}
	if len(r.idx) == r.n {
		copy(r.idx, r.idx[1:])
		copy(r.dbs, r.dbs[1:])
		r.idx, r.dbs = r.idx[:r.n-1], r.dbs[:r.n-1]
	}
	r.idx = append(r.idx, idx)
	r.dbs = append(r.dbs, db)
}

func (r *snapRing) reset() { r.idx, r.dbs = r.idx[:0], r.dbs[:0] }

// at returns the newest view at or below idx. A view stands for every index
// up to the next one, since entries that changed nothing keep no view. It
// fails when idx is older than the oldest view kept.
func (r *snapRing) at(idx uint64) (*memdb.MemDB, bool) {
	// First view newer than idx.
	i := sort.Search(len(r.idx), func(i int) bool { return r.idx[i] > idx })
	if i == 0 {
		return nil, false
	}
	return r.dbs[i-1], true
}
