package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm/state"
)

// Snapshot format: the magic "LHSNAP", a format version byte, then records
// of [record type byte][uvarint length][payload], ending with recEnd. The
// history is part of the snapshot so that a restarted node can still resume
// watches from before the snapshot (the log before it is gone).
//
// Most object versions appear more than once: as a stored object and as the
// event that wrote it, as one event's object and the next one's previous
// state. Since version 2 each version is written once; a later mention is
// its ordinal among the versions written before it (uvarint ordinal+1; 0 =
// a new version follows). Version 3 writes the events newest first, as the
// history gives back the versions it holds compacted (state.HistoryDump);
// versions 1 and 2 wrote them oldest first, and version 1 every mention in
// full. Version 4 writes an event's previous state, when it is a Lease
// version that differs from the event's object only as a renewal does
// (resourceVersion, spec, managedFields), as that difference
// (appendLeaseChange): every version of a Lease renewed many times over
// but its newest takes some 55 bytes, its event record included, instead
// of 250–400.
// Version 5 adds to every version written in full its create revision and
// key version (etcd's create_revision and version), and a record of the
// etcd API's compacted revision; it is written only from cluster feature
// level 2, when every member reads it. From an older version, Restore
// takes the oldest version of a key it holds as its creation.
// Restore reads all five. A node of an earlier release cannot restore a
// newer version (from the leader, after falling behind): in a rolling
// upgrade, upgrade the leader last.
const (
	snapMagic   = "LHSNAP"
	snapVersion = 5
	// snapVersionBeforeEtcd is the format written below feature level 2.
	snapVersionBeforeEtcd = 4

	recObject = 1 // an object in the state
	recEvent  = 2 // a history event
	recIndex  = 3 // applied index and history's dropped RV
	recEnd    = 4
	// recFeatureLevel, written only when the level is above 0, holds the
	// cluster feature level: a release before levels fails on it, as it
	// must, since such a release is never a member of a cluster at a
	// level above 0.
	recFeatureLevel = 5
	// recCompacted (format 5) holds the etcd API's compacted revision.
	recCompacted = 6
	// recAlarm holds a raised alarm: uvarint type (AlarmNoSpace), uvarint
	// index of the entry that raised it. Only commands of feature level 3
	// raise one, so a snapshot holds it only when every member reads it.
	recAlarm = 7

	// maxRecord bounds one record; objects are limited to 3 MiB on the API.
	maxRecord = 64 << 20
)

// Snapshot captures the state; it runs on the FSM goroutine and is cheap
// (the store hands out immutable views). Persist runs concurrently.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return newSnapshot(f.state), nil
}

type snapshot struct {
	objs      []*state.Object
	history   *state.HistoryDump
	dropped   uint64
	applied   uint64
	level     uint32
	compacted uint64
	noSpace   uint64
}

func newSnapshot(st *state.Store) *snapshot {
	objs, history, dropped, applied := st.Dump()
	_, compacted := st.Revision()
	return &snapshot{objs: objs, history: history, dropped: dropped, applied: applied, level: st.FeatureLevel(), compacted: compacted, noSpace: st.NoSpace()}
}

// format is the snapshot format the cluster's feature level allows.
func (s *snapshot) format() byte {
	if s.level >= 2 {
		return snapVersion
	}
	return snapVersionBeforeEtcd
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	large := s.history.Len() >= largeSnapshotEvents
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	err := sink.Close()
	if large {
		// Writing a large snapshot allocates on top of the apply path
		// (the dump, versions rebuilt for older events, encodings), and
		// what a GC cycle finds allocated while it runs counts as live:
		// cycles during a snapshot mark more than the state alone, and
		// set heap goals that RSS follows (the goal is the marked heap
		// and the GC percent more). A collection once it is written
		// brings the goal back to what is live and returns the pages the
		// snapshot left behind.
		debug.FreeOSMemory()
	}
	return err
}

// largeSnapshotEvents is the history length from which Persist collects
// and returns memory when done.
const largeSnapshotEvents = 10000

func (s *snapshot) Release() {}

func (s *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(snapMagic); err != nil {
		return err
	}
	format := s.format()
	if err := bw.WriteByte(format); err != nil {
		return err
	}
	var rec []byte
	put := func(typ byte) error {
		if err := bw.WriteByte(typ); err != nil {
			return err
		}
		var l [binary.MaxVarintLen64]byte
		if _, err := bw.Write(l[:binary.PutUvarint(l[:], uint64(len(rec)))]); err != nil {
			return err
		}
		_, err := bw.Write(rec)
		return err
	}
	rec = binary.AppendUvarint(rec[:0], s.applied)
	rec = binary.AppendUvarint(rec, s.dropped)
	if err := put(recIndex); err != nil {
		return err
	}
	if s.level > 0 {
		rec = binary.AppendUvarint(rec[:0], uint64(s.level))
		if err := put(recFeatureLevel); err != nil {
			return err
		}
	}
	if format >= 5 && s.compacted > 0 {
		rec = binary.AppendUvarint(rec[:0], s.compacted)
		if err := put(recCompacted); err != nil {
			return err
		}
	}
	if s.noSpace > 0 {
		rec = binary.AppendUvarint(rec[:0], AlarmNoSpace)
		rec = binary.AppendUvarint(rec, s.noSpace)
		if err := put(recAlarm); err != nil {
			return err
		}
	}
	var err error
	versions := versionWriter{last: make(map[state.Key]writtenVersion, len(s.objs)), copies: storedCopies{}, format: format}
	for _, o := range s.objs {
		if rec, err = versions.append(rec[:0], o); err != nil {
			return err
		}
		if err := put(recObject); err != nil {
			return err
		}
	}
	err = s.history.NewestFirst(func(e state.Event) error {
		rec = appendString(rec[:0], string(e.Type))
		rec = binary.AppendVarint(rec, e.At)
		if rec, err = versions.append(rec, e.Object); err != nil {
			return err
		}
		if e.Prior != nil {
			rec = append(rec, 1)
			if rec, err = versions.appendPrior(rec, e.Object, e.Prior); err != nil {
				return err
			}
		} else {
			rec = append(rec, 0)
		}
		return put(recEvent)
	})
	if err != nil {
		return err
	}
	rec = rec[:0]
	if err := put(recEnd); err != nil {
		return err
	}
	return bw.Flush()
}

// versionWriter writes each object version once and refers to it after.
// Written newest first, every mention of a version but the first comes
// right after the key's previous mention: the stored object, then the
// newest event's object; an event's previous state, then the object of
// the event before it. So it needs to remember one version per key, by
// resourceVersion, not the versions themselves, which would keep every
// version a snapshot rebuilds alive until it is written out.
type versionWriter struct {
	last    map[state.Key]writtenVersion
	written uint64
	copies  storedCopies
	priors  priors // Persist runs beside the FSM: its own scratch Lease
	format  byte
}

type writtenVersion struct{ rv, ordinal uint64 }

// Mentions of a version in format 4.
const (
	mentionNew    = 0 // the version in full follows
	mentionChange = 1 // the version as its difference from the event's object follows
	mentionRef    = 2 // mentionRef+n: the nth version written
)

// ref returns the mention of the version at rv of key k when it is
// the last version written of that key.
func (vw *versionWriter) ref(k state.Key, rv uint64) (uint64, bool) {
	v, ok := vw.last[k]
	return v.ordinal + mentionRef, ok && v.rv == rv
}

// remember records that the next version written is the one at rv of k.
func (vw *versionWriter) remember(k state.Key, rv uint64) {
	vw.last[k] = writtenVersion{rv: rv, ordinal: vw.written}
	vw.written++
}

// append appends a reference to o when it is the last version written of
// its key, else o in full.
func (vw *versionWriter) append(b []byte, o *state.Object) ([]byte, error) {
	k := o.Key()
	if ref, ok := vw.ref(k, o.RV); ok {
		return binary.AppendUvarint(b, ref), nil
	}
	vw.remember(k, o.RV)
	return appendObject(append(b, mentionNew), o, vw.copies, vw.format)
}

// appendPrior appends the version prior holds, the one next replaced: a
// reference when it was written already, its difference from next when
// the two differ as a renewal does (what the history holds compacted is
// that difference already), else the version in full.
func (vw *versionWriter) appendPrior(b []byte, next *state.Object, prior state.Prior) ([]byte, error) {
	k := next.Key() // an event's previous state is a version of its key
	change, ok := prior.(*leasePrior)
	if !ok {
		prev := prior.Version(next)
		if ref, ok := vw.ref(k, prev.RV); ok {
			return binary.AppendUvarint(b, ref), nil
		}
		if change, ok = vw.priors.of(next, prev).(*leasePrior); !ok {
			vw.remember(k, prev.RV)
			return appendObject(append(b, mentionNew), prev, vw.copies, vw.format)
		}
	} else if ref, ok := vw.ref(k, change.rv); ok {
		return binary.AppendUvarint(b, ref), nil
	}
	vw.remember(k, change.rv)
	return appendLeaseChange(append(b, mentionChange), change, next.Obj.(*coordinationv1.Lease))
}

// appendLeaseChange appends a Lease version as its difference from the
// version that replaced it, next: its resourceVersion, its spec, and its
// managedFields entry by entry against next's — 0 the same entry, 1 the
// same but for its time, 2 another entry, in full.
func appendLeaseChange(b []byte, c *leasePrior, next *coordinationv1.Lease) ([]byte, error) {
	b = binary.AppendUvarint(b, c.rv)
	b, err := appendMessage(b, &c.spec)
	if err != nil {
		return b, err
	}
	b = binary.AppendUvarint(b, uint64(len(c.managedFields)))
	for i := range c.managedFields {
		e := &c.managedFields[i]
		var base metav1.ManagedFieldsEntry
		if i < len(next.ManagedFields) {
			base = next.ManagedFields[i]
		}
		retimed := *e
		retimed.Time = base.Time
		switch {
		case i < len(next.ManagedFields) && *e == base:
			b = append(b, 0)
		case i < len(next.ManagedFields) && retimed == base && e.Time != nil && base.Time != nil:
			b, err = appendMessage(append(b, 1), e.Time)
		default:
			b, err = appendMessage(append(b, 2), e)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendMessage appends m's protobuf encoding preceded by its length.
func appendMessage(b []byte, m message) ([]byte, error) {
	n := m.Size()
	return appendEncoding(binary.AppendUvarint(b, uint64(n)), m, n)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendObject(b []byte, o *state.Object, copies storedCopies, format byte) ([]byte, error) {
	k := o.Key()
	b = appendString(b, k.Resource)
	b = appendString(b, k.Namespace)
	b = appendString(b, k.Name)
	b = binary.AppendUvarint(b, o.RV)
	if format >= 5 {
		b = binary.AppendUvarint(b, o.CreateRV)
		b = binary.AppendUvarint(b, o.KeyVersion)
	}
	b = appendString(b, o.UID())
	b, err := appendStored(b, o, copies, true)
	if err != nil {
		return b, fmt.Errorf("encode %s: %w", k, err)
	}
	return b, nil
}

// Restore replaces the state with a snapshot's. The new state is built
// aside and swapped in only once the whole snapshot has been read, so a
// corrupt snapshot leaves the current state as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<16)
	head := make([]byte, len(snapMagic)+1)
	if _, err := io.ReadFull(br, head); err != nil {
		return fmt.Errorf("restore: read header: %w", err)
	}
	format := head[len(snapMagic)]
	if string(head[:len(snapMagic)]) != snapMagic || format < 1 || format > snapVersion {
		return fmt.Errorf("restore: not a leasehold snapshot of version 1 to %d", snapVersion)
	}
	var (
		objs             []*state.Object
		applied, dropped uint64
		sawIndex         bool
		level, compacted uint64
		noSpace          uint64
	)
	versions := versionReader{f: f, format: format}
	if format == 1 {
		versions.byKey = map[version]*state.Object{}
	}
	for {
		typ, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("restore: truncated snapshot: %w", err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("restore: truncated snapshot: %w", err)
		}
		if n > maxRecord {
			return fmt.Errorf("restore: record of %d bytes is larger than %d", n, maxRecord)
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return fmt.Errorf("restore: truncated snapshot: %w", err)
		}
		r := &reader{b: rec}
		switch typ {
		case recIndex:
			applied, dropped = r.uvarint(), r.uvarint()
			sawIndex = true
		case recFeatureLevel:
			if level = r.uvarint(); level > MaxFeatureLevel {
				return fmt.Errorf("restore: the snapshot is at cluster feature level %d; this release applies up to %d: upgrade it", level, MaxFeatureLevel)
			}
		case recCompacted:
			compacted = r.uvarint()
		case recAlarm:
			typ, at := r.uvarint(), r.uvarint()
			if r.err == nil && typ != AlarmNoSpace {
				return fmt.Errorf("restore: alarm of unknown type %d", typ)
			}
			noSpace = at
		case recObject:
			o, err := versions.next(r, true)
			if err != nil {
				return err
			}
			objs = append(objs, o)
		case recEvent:
			e := state.Event{Type: state.EventType(r.bytes()), At: r.varint()}
			// A tombstone is its own version: never shared.
			if e.Object, err = versions.next(r, e.Type != state.Deleted); err != nil {
				return err
			}
			e.RV = e.Object.RV
			versions.events = append(versions.events, e)
			if hasPrev := r.byte(); hasPrev == 1 {
				if err := versions.prior(r, len(versions.events)-1); err != nil {
					return err
				}
			}
		case recEnd:
			if !sawIndex {
				return errors.New("restore: snapshot has no index record")
			}
			events := versions.events
			if format >= 3 {
				slices.Reverse(events)
			}
			if err := checkHistory(objs, events, dropped, applied); err != nil {
				return err
			}
			if format < 5 {
				numberVersions(objs, events)
			}
			// As when the events were applied: in RV order, a version
			// shares with its predecessor before its successor shares
			// with it.
			for _, e := range events {
				switch prev := e.Prior.(type) {
				case *state.Object:
					shareUnchanged(e.Object, prev)
				case *leasePrior:
					prev.share(e.Object)
				}
			}
			f.state.Replace(objs, events, dropped, applied)
			f.state.SetFeatureLevel(uint32(level))
			f.state.SetCompacted(compacted)
			f.state.SetNoSpace(noSpace)
			f.logger.Info("restored snapshot", "objects", len(objs), "events", len(events), "applied", applied)
			if len(objs)+len(events) >= largeSnapshotEvents {
				// As after Persist: decoding a large snapshot leaves
				// several times the restored state behind as garbage,
				// which the runtime would otherwise keep in RSS for
				// minutes before returning it (docs/performance.md,
				// "Memory").
				debug.FreeOSMemory()
			}
			return nil
		default:
			return fmt.Errorf("restore: unknown record type %d", typ)
		}
		if r.err != nil {
			return fmt.Errorf("restore: record type %d: %w", typ, r.err)
		}
	}
}

// checkHistory refuses a snapshot whose history, oldest first, does not
// lead to its objects: undone from the newest event down, as the store
// rebuilds past views (state.Store.SnapshotAt), every event must find its
// key at its own version (or gone, for a delete) and leave it at its
// previous state's, an earlier version of the same key. The state's
// history relies on it (an event's previous state is the object of the
// key's event before it, replaced once); one that does not hold would
// panic later, in a watch, a list or the next snapshot. It keeps the
// version of each key the history names, nothing rebuilt.
func checkHistory(objs []*state.Object, events []state.Event, dropped, applied uint64) error {
	type keyVersion struct {
		rv   uint64
		live bool
	}
	at := make(map[state.Key]keyVersion, len(events)) // the keys of events, as undone so far
	for _, e := range events {
		at[e.Object.Key()] = keyVersion{}
	}
	for _, o := range objs {
		k := o.Key()
		if o.RV > applied {
			return fmt.Errorf("restore: %s at %d, past the applied index %d", k, o.RV, applied)
		}
		if v, ok := at[k]; ok {
			if v.live {
				return fmt.Errorf("restore: %s stored twice", k)
			}
			at[k] = keyVersion{o.RV, true}
		}
	}
	// Events are at increasing versions up to applied; several share one
	// (an etcd transaction that changed several keys), each of another key.
	next := applied + 1
	atNext := map[state.Key]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		k := e.Object.Key()
		if e.RV > next || e.RV == next && atNext[k] || e.RV > applied || e.RV <= dropped {
			return fmt.Errorf("restore: event at %d out of order (next %d, dropped %d)", e.RV, next, dropped)
		}
		if e.RV < next {
			clear(atNext)
		}
		atNext[k] = true
		next = e.RV
		switch e.Type {
		case state.Added, state.Modified, state.Deleted:
		default:
			return fmt.Errorf("restore: event at %d of type %q", e.RV, e.Type)
		}
		v := at[k]
		if e.Type == state.Deleted {
			if v.live {
				return fmt.Errorf("restore: delete of %s at %d, which exists after it at %d", k, e.RV, v.rv)
			}
		} else if !v.live || v.rv != e.RV {
			return fmt.Errorf("restore: event %s of %s at %d, which is not at that version after it", e.Type, k, e.RV)
		}
		var prevKey state.Key
		var prevRV uint64
		switch p := e.Prior.(type) {
		case nil:
			if e.Type != state.Added {
				return fmt.Errorf("restore: event %s of %s at %d without its previous state", e.Type, k, e.RV)
			}
			at[k] = keyVersion{}
			continue
		case *state.Object:
			prevKey, prevRV = p.Key(), p.RV
		case *leasePrior:
			prevKey, prevRV = k, p.rv
		default:
			return fmt.Errorf("restore: event at %d: previous state %T", e.RV, p)
		}
		if e.Type == state.Added || prevKey != k || prevRV >= e.RV {
			return fmt.Errorf("restore: event %s of %s at %d with a previous state %s at %d", e.Type, k, e.RV, prevKey, prevRV)
		}
		at[k] = keyVersion{prevRV, true}
	}
	return nil
}

// numberVersions gives the versions of a snapshot written before format 5
// a create revision and key version: from the history, oldest first, as
// the writes made them, taking the oldest version of a key the snapshot
// holds for its creation. Every node restoring the snapshot numbers them
// alike.
func numberVersions(objs []*state.Object, events []state.Event) {
	type numbered struct{ createRV, version uint64 }
	cur := map[state.Key]numbered{}
	set := func(o *state.Object, n numbered) { o.CreateRV, o.KeyVersion = n.createRV, n.version }
	for _, e := range events {
		k := e.Object.Key()
		n, ok := cur[k]
		switch {
		case e.Type == state.Added:
			n = numbered{e.RV, 1}
		case !ok:
			// The version before this event is the oldest one held.
			prev := e.Prev()
			n = numbered{prev.RV, 1}
			if p, isObject := e.Prior.(*state.Object); isObject {
				set(p, n)
			}
			n.version++
		default:
			if p, isObject := e.Prior.(*state.Object); isObject {
				set(p, n)
			}
			n.version++
		}
		set(e.Object, n)
		if e.Type == state.Deleted {
			delete(cur, k)
		} else {
			cur[k] = n
		}
	}
	for _, o := range objs {
		if n, ok := cur[o.Key()]; ok {
			set(o, n)
		} else {
			set(o, numbered{o.RV, 1})
		}
	}
}

// versionReader reads the object versions of a snapshot. An object version
// held by the state and by events, or by one event as its object and the
// next as its previous state, is decoded once and shared, as it was before
// the snapshot.
type versionReader struct {
	f      *FSM
	format byte
	read   []readVersion             // format 2 on: the versions in the order written
	byKey  map[version]*state.Object // format 1: the versions read, by key and RV
	events []state.Event             // the events read so far
}

// readVersion is a version read from a snapshot: o, or, for one written
// as a change (format 4), nil while the event events[event] holds it as
// that change, its previous state, until an older event mentions the
// version too and it is rebuilt. Most are never mentioned again (a Lease
// renewed once in the history's window): the history would hold them as
// the change anyway, and a node restoring 100,000 such Leases does not
// rebuild 100,000 versions only to compact them again.
type readVersion struct {
	o     *state.Object
	event int
}

// object returns the version, rebuilding it if it is held as a change.
func (vr *versionReader) object(v *readVersion) *state.Object {
	if v.o == nil {
		e := &vr.events[v.event]
		v.o = e.Prev()
		e.Prior = v.o
	}
	return v.o
}

// next reads one object version. share (format 1) says whether the version
// may be one read before: a tombstone never is.
func (vr *versionReader) next(r *reader, share bool) (*state.Object, error) {
	if vr.format == 1 {
		shared := vr.byKey
		if !share {
			shared = nil
		}
		return vr.f.readObject(r, vr.format, shared)
	}
	ref := r.uvarint()
	if r.err != nil {
		return nil, fmt.Errorf("restore: object record: %w", r.err)
	}
	first := uint64(1) // the mention of the first version written
	if vr.format >= 4 {
		first = mentionRef
		if ref == mentionChange {
			return nil, errors.New("restore: a stored object or an event's object written as a change")
		}
	}
	if ref >= first {
		if ref-first >= uint64(len(vr.read)) {
			return nil, fmt.Errorf("restore: reference to object version %d, %d read so far", ref-first, len(vr.read))
		}
		return vr.object(&vr.read[ref-first]), nil
	}
	o, err := vr.f.readObject(r, vr.format, nil)
	if err != nil {
		return nil, err
	}
	vr.read = append(vr.read, readVersion{o: o})
	return o, nil
}

// prior reads the previous state of events[event]; the history compacts
// it as it would have (state.Prior).
func (vr *versionReader) prior(r *reader, event int) error {
	e := &vr.events[event]
	if vr.format < 4 || len(r.b) == 0 || r.b[0] != mentionChange {
		prev, err := vr.next(r, true)
		e.Prior = prev
		return err
	}
	r.byte()
	c, err := vr.f.readLeaseChange(r, e.Object)
	if err != nil {
		return fmt.Errorf("restore: %s: %w", e.Object.Key(), err)
	}
	e.Prior = c
	vr.read = append(vr.read, readVersion{event: event})
	return nil
}

// version names one version of an object.
type version struct {
	k  state.Key
	rv uint64
}

// readObject reads an object. When shared is set, a version already in it
// is returned instead of a new copy, and a new one is added to it.
func (f *FSM) readObject(r *reader, format byte, shared map[version]*state.Object) (*state.Object, error) {
	resource, ns, name := r.bytes(), r.bytes(), r.bytes()
	rv := r.uvarint()
	var createRV, keyVersion uint64
	if format >= 5 {
		createRV, keyVersion = r.uvarint(), r.uvarint()
	}
	r.bytes() // the uid, which the object holds
	data := r.bytes()
	if r.err != nil {
		return nil, fmt.Errorf("restore: object record: %w", r.err)
	}
	// A map lookup with converted []byte keys does not allocate.
	if o, ok := shared[version{state.Key{Resource: string(resource), Namespace: string(ns), Name: string(name)}, rv}]; ok {
		return o, nil
	}
	res := f.intern.string(string(resource))
	obj, keep, err := f.unmarshal(res, data)
	if err != nil {
		return nil, fmt.Errorf("restore: %s/%s/%s: %w", res, ns, name, err)
	}
	obj.SetResourceVersion(strconv.FormatUint(rv, 10))
	// The record's key and uid are the object's own (appendObject wrote
	// them from it); they serve only to find a version read before.
	o := state.NewObject(res, rv, obj, keep)
	o.CreateRV, o.KeyVersion = createRV, keyVersion
	if shared != nil {
		shared[version{o.Key(), rv}] = o
	}
	return o, nil
}

// readLeaseChange reads a Lease version written as its difference from
// the version that replaced it, next (appendLeaseChange).
func (f *FSM) readLeaseChange(r *reader, next *state.Object) (*leasePrior, error) {
	n, ok := next.Obj.(*coordinationv1.Lease)
	if !ok {
		return nil, fmt.Errorf("a change from a %T", next.Obj)
	}
	c := leasePrior{rv: r.uvarint()}
	if err := c.spec.Unmarshal(r.bytes()); err != nil {
		return nil, fmt.Errorf("decode spec: %w", err)
	}
	entries := r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	if entries > uint64(len(r.b)) { // each takes a byte at least
		return nil, errShort
	}
	if entries > 0 {
		c.managedFields = make([]metav1.ManagedFieldsEntry, entries)
	}
	for i := range c.managedFields {
		e := &c.managedFields[i]
		kind := r.byte()
		if kind < 2 && i >= len(n.ManagedFields) {
			return nil, fmt.Errorf("managedFields entry %d refers to one of %d", i, len(n.ManagedFields))
		}
		switch kind {
		case 0:
			*e = n.ManagedFields[i]
		case 1:
			*e = n.ManagedFields[i]
			e.Time = &metav1.Time{}
			if err := e.Time.Unmarshal(r.bytes()); err != nil {
				return nil, fmt.Errorf("decode managedFields time: %w", err)
			}
		case 2:
			if err := e.Unmarshal(r.bytes()); err != nil {
				return nil, fmt.Errorf("decode managedFields entry: %w", err)
			}
		default:
			return nil, fmt.Errorf("managedFields entry of kind %d", kind)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	c.managedFields = f.intern.managedFields(c.managedFields)
	return &c, nil
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errShort
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}
