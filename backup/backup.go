// Package backup is the file format of a leasehold backup (leaseholdctl
// snapshot save, inspect, restore): a node's state as its Raft snapshot
// holds it, with the index and term it was taken at, and a checksum over
// all of it. It writes, verifies and reads such files; it neither talks
// to a cluster nor builds a data directory (cluster.RestoreDataDir does).
//
// A file is, in order:
//
//	magic     8 bytes   "LHBACKUP"
//	length    4 bytes   big-endian length of the metadata, at most 64 KiB
//	metadata  JSON      {"version":1,"index":N,"term":T,"created":"RFC 3339","node":"n1"}
//	state     the rest  the FSM snapshot (fsm's snapshot format: objects,
//	                    watch history, applied index and the history's floor)
//	checksum  32 bytes  SHA-256 of every byte before it
//
// As etcd's snapshot files end with a SHA-256 of the database, the checksum
// comes last, so that a node can stream a backup as it writes it. The
// version is this framing's; the state carries its own format version.
package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// Version is the version of the framing this package writes; it reads no
// other.
const Version = 1

const (
	magic = "LHBACKUP"
	// maxMeta bounds the metadata a reader accepts.
	maxMeta = 64 << 10
	// headerLen is the magic and the metadata length.
	headerLen = len(magic) + 4
)

// Meta describes a backup.
type Meta struct {
	// Version is the framing's version (Version).
	Version int `json:"version"`
	// Index is the Raft index the state was taken at: its applied index,
	// the highest resourceVersion it holds.
	Index uint64 `json:"index"`
	// Term is the Raft term of the entry at Index.
	Term uint64 `json:"term"`
	// Created is when the node took it.
	Created time.Time `json:"created"`
	// Node is the name of the node that took it.
	Node string `json:"node"`
}

// ErrCorrupt is wrapped by every error about a file that is not a whole,
// intact backup.
var ErrCorrupt = errors.New("damaged backup")

// Write writes a backup of meta and the state that body writes to w, the
// checksum last.
func Write(w io.Writer, meta Meta, body func(io.Writer) error) error {
	meta.Version = Version
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if len(m) > maxMeta {
		return fmt.Errorf("metadata of %d bytes", len(m))
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	head := binary.BigEndian.AppendUint32([]byte(magic), uint32(len(m)))
	if _, err := bw.Write(append(head, m...)); err != nil {
		return err
	}
	if err := body(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(h.Sum(nil))
	return err
}

// File is an opened backup whose checksum has been verified.
type File struct {
	Meta Meta
	// Size is the file's size in bytes.
	Size int64
	// SHA256 is the file's checksum, as its last 32 bytes hold it.
	SHA256 string

	f                *os.File
	stateAt, stateSz int64
}

// Open opens the backup at path and verifies it: the framing and the
// checksum over the whole file. The state is not decoded (see Decode).
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	bf, err := verify(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return bf, nil
}

func verify(f *os.File) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file", ErrCorrupt)
	}
	size := fi.Size()
	head := make([]byte, headerLen)
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, fmt.Errorf("%w: truncated: %d bytes", ErrCorrupt, size)
	}
	if string(head[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a leasehold backup (no %q at its start)", ErrCorrupt, magic)
	}
	metaLen := int64(binary.BigEndian.Uint32(head[len(magic):]))
	if metaLen > maxMeta || int64(headerLen)+metaLen+sha256.Size > size {
		return nil, fmt.Errorf("%w: truncated or damaged: %d bytes, metadata of %d", ErrCorrupt, size, metaLen)
	}
	// The whole file but its last 32 bytes, then those.
	h := sha256.New()
	h.Write(head)
	if _, err := io.Copy(h, io.NewSectionReader(f, int64(headerLen), size-sha256.Size-int64(headerLen))); err != nil {
		return nil, err
	}
	sum := make([]byte, sha256.Size)
	if _, err := f.ReadAt(sum, size-sha256.Size); err != nil {
		return nil, err
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum) {
		return nil, fmt.Errorf("%w: checksum mismatch: the file is truncated or damaged (sha256 %s, recorded %s)",
			ErrCorrupt, hex.EncodeToString(got), hex.EncodeToString(sum))
	}
	m := make([]byte, metaLen)
	if _, err := f.ReadAt(m, int64(headerLen)); err != nil {
		return nil, err
	}
	bf := &File{Size: size, SHA256: hex.EncodeToString(sum), f: f, stateAt: int64(headerLen) + metaLen}
	bf.stateSz = size - sha256.Size - bf.stateAt
	dec := json.NewDecoder(bytes.NewReader(m))
	if err := dec.Decode(&bf.Meta); err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	if bf.Meta.Version != Version {
		return nil, fmt.Errorf("%w: backup format version %d; this release reads %d", ErrCorrupt, bf.Meta.Version, Version)
	}
	return bf, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// State reads the FSM snapshot the file holds.
func (f *File) State() io.Reader { return io.NewSectionReader(f.f, f.stateAt, f.stateSz) }

// Decode decodes the whole state into a new store, checked as a node
// restoring it would check it, and that it is at the metadata's index.
func (f *File) Decode() (*state.Store, error) {
	st, err := fsm.ReadSnapshot(f.State())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if got := st.AppliedIndex(); got != f.Meta.Index {
		return nil, fmt.Errorf("%w: the state is at index %d, the metadata says %d", ErrCorrupt, got, f.Meta.Index)
	}
	return st, nil
}

// Summary is what Inspect finds in a backup.
type Summary struct {
	Meta
	Size   int64
	SHA256 string
	// Objects counts the stored objects per resource.
	Objects map[string]int
}

// Resources are the summary's resources, sorted.
func (s *Summary) Resources() []string {
	out := make([]string, 0, len(s.Objects))
	for r := range s.Objects {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Inspect verifies the backup at path (checksum and a full decode) and
// counts its objects.
func Inspect(path string) (*Summary, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Decode()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Summary{Meta: f.Meta, Size: f.Size, SHA256: f.SHA256, Objects: map[string]int{}}
	for _, o := range fsm.DumpState(st).Objects() {
		s.Objects[o.Resource]++
	}
	return s, nil
}
