package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/fsm/state"
)

// Snapshot format: the magic "LHSNAP", a format version byte, then records
// of [record type byte][uvarint length][payload], ending with recEnd. The
// history is part of the snapshot so that a restarted node can still resume
// watches from before the snapshot (the log before it is gone).
//
// Most object versions appear more than once: as a stored object and as the
// event that wrote it, as one event's object and the next one's previous
// state. Version 2 writes each version once; a later mention is its ordinal
// among the versions written before it (uvarint ordinal+1; 0 = a new version
// follows). Version 1 wrote every mention in full; Restore reads both. A
// node of an earlier release cannot restore version 2 (from the leader, after
// falling behind): in a rolling upgrade, upgrade the leader last.
const (
	snapMagic   = "LHSNAP"
	snapVersion = 2

	recObject = 1 // an object in the state
	recEvent  = 2 // a history event
	recIndex  = 3 // applied index and history's dropped RV
	recEnd    = 4

	// maxRecord bounds one record; objects are limited to 3 MiB on the API.
	maxRecord = 64 << 20
)

// Snapshot captures the state; it runs on the FSM goroutine and is cheap
// (the store hands out immutable views). Persist runs concurrently.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	objs, events, dropped, applied := f.state.Dump()
	return &snapshot{objs: objs, events: events, dropped: dropped, applied: applied}, nil
}

type snapshot struct {
	objs    []*state.Object
	events  []state.Event
	dropped uint64
	applied uint64
}

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

func (s *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(snapMagic); err != nil {
		return err
	}
	if err := bw.WriteByte(snapVersion); err != nil {
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
	var err error
	written := make(map[*state.Object]uint64, len(s.objs))
	copies := storedCopies{}
	for _, o := range s.objs {
		if rec, err = appendVersion(rec[:0], o, written, copies); err != nil {
			return err
		}
		if err := put(recObject); err != nil {
			return err
		}
	}
	for _, e := range s.events {
		rec = appendString(rec[:0], string(e.Type))
		rec = binary.AppendVarint(rec, e.At)
		if rec, err = appendVersion(rec, e.Object, written, copies); err != nil {
			return err
		}
		if e.Prior != nil {
			rec = append(rec, 1)
			// A previous state held as a difference is one no other
			// event holds (state.Prior): it is rebuilt and written here.
			if rec, err = appendVersion(rec, e.Prev(), written, copies); err != nil {
				return err
			}
		} else {
			rec = append(rec, 0)
		}
		if err := put(recEvent); err != nil {
			return err
		}
	}
	rec = rec[:0]
	if err := put(recEnd); err != nil {
		return err
	}
	return bw.Flush()
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendVersion appends a reference to o when written holds it, else o in
// full, and adds it to written.
func appendVersion(b []byte, o *state.Object, written map[*state.Object]uint64, copies storedCopies) ([]byte, error) {
	if n, ok := written[o]; ok {
		return binary.AppendUvarint(b, n+1), nil
	}
	written[o] = uint64(len(written))
	return appendObject(append(b, 0), o, copies)
}

func appendObject(b []byte, o *state.Object, copies storedCopies) ([]byte, error) {
	k := o.Key()
	b = appendString(b, k.Resource)
	b = appendString(b, k.Namespace)
	b = appendString(b, k.Name)
	b = binary.AppendUvarint(b, o.RV)
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
		events           []state.Event
		applied, dropped uint64
		sawIndex         bool
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
			if hasPrev := r.byte(); hasPrev == 1 {
				prev, err := versions.next(r, true)
				if err != nil {
					return err
				}
				// As when the event was applied. Events come in RV
				// order, so a version shares with its predecessor
				// before its successor shares with it.
				shareUnchanged(e.Object, prev)
				e.Prior = prev // the history compacts it (state.Prior)
			}
			events = append(events, e)
		case recEnd:
			if !sawIndex {
				return errors.New("restore: snapshot has no index record")
			}
			f.state.Replace(objs, events, dropped, applied)
			f.logger.Info("restored snapshot", "objects", len(objs), "events", len(events), "applied", applied)
			return nil
		default:
			return fmt.Errorf("restore: unknown record type %d", typ)
		}
		if r.err != nil {
			return fmt.Errorf("restore: record type %d: %w", typ, r.err)
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
	read   []*state.Object           // format 2: the versions in the order written
	byKey  map[version]*state.Object // format 1: the versions read, by key and RV
}

// next reads one object version. share (format 1) says whether the version
// may be one read before: a tombstone never is.
func (vr *versionReader) next(r *reader, share bool) (*state.Object, error) {
	if vr.format == 1 {
		shared := vr.byKey
		if !share {
			shared = nil
		}
		return vr.f.readObject(r, shared)
	}
	ref := r.uvarint()
	if r.err != nil {
		return nil, fmt.Errorf("restore: object record: %w", r.err)
	}
	if ref > 0 {
		if ref > uint64(len(vr.read)) {
			return nil, fmt.Errorf("restore: reference to object version %d, %d read so far", ref, len(vr.read))
		}
		return vr.read[ref-1], nil
	}
	o, err := vr.f.readObject(r, nil)
	if err != nil {
		return nil, err
	}
	vr.read = append(vr.read, o)
	return o, nil
}

// version names one version of an object.
type version struct {
	k  state.Key
	rv uint64
}

// readObject reads an object. When shared is set, a version already in it
// is returned instead of a new copy, and a new one is added to it.
func (f *FSM) readObject(r *reader, shared map[version]*state.Object) (*state.Object, error) {
	resource, ns, name := r.bytes(), r.bytes(), r.bytes()
	rv := r.uvarint()
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
	if shared != nil {
		shared[version{o.Key(), rv}] = o
	}
	return o, nil
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
