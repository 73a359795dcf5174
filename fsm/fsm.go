package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
)

// StoredObject is what the FSM stores for a resource: a Kubernetes object
// with generated protobuf marshalling.
type StoredObject interface {
	runtime.Object
	metav1.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
	// Size and MarshalToSizedBuffer (gogo-protobuf's) encode into a buffer
	// the caller owns: Apply and snapshots encode without allocating.
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// Types maps a resource name to a constructor of its stored type. The table
// is part of the log's meaning: a resource, once added, keeps its type.
type Types map[string]func() StoredObject

// The stored types' apiVersions, spelled once: every stored object shares
// the string instead of holding its own copy.
var (
	leaseAPIVersion          = coordinationv1.SchemeGroupVersion.String()
	rbacAPIVersion           = rbacv1.SchemeGroupVersion.String()
	leaseCandidateAPIVersion = coordinationv1beta1.SchemeGroupVersion.String()
)

// DefaultTypes are the resources leasehold stores.
func DefaultTypes() Types {
	return Types{
		// Stored objects carry their kind, so encoders never have to set
		// it on an object that readers share.
		"leases": func() StoredObject {
			return &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: leaseAPIVersion}}
		},
		// Every served version of LeaseCandidate is stored as v1beta1.
		"leasecandidates": func() StoredObject {
			return &coordinationv1beta1.LeaseCandidate{TypeMeta: metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: leaseCandidateAPIVersion}}
		},
		// RBAC's objects, which the authorizer reads from the state.
		"roles": func() StoredObject {
			return &rbacv1.Role{TypeMeta: metav1.TypeMeta{Kind: "Role", APIVersion: rbacAPIVersion}}
		},
		"clusterroles": func() StoredObject {
			return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{Kind: "ClusterRole", APIVersion: rbacAPIVersion}}
		},
		"rolebindings": func() StoredObject {
			return &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{Kind: "RoleBinding", APIVersion: rbacAPIVersion}}
		},
		"clusterrolebindings": func() StoredObject {
			return &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{Kind: "ClusterRoleBinding", APIVersion: rbacAPIVersion}}
		},
		// The etcd API's keys that are no REST object, and its leases.
		RawResource:   func() StoredObject { return &RawValue{} },
		LeaseResource: func() StoredObject { return &RawValue{} },
	}
}

// Result is what Apply returns for a command; cluster hands it back to the
// proposer.
type Result struct {
	// Object is the stored object after the entry: the created or updated
	// object (unchanged for a no-op update), or the deleted object's last
	// state stamped with the delete's index.
	Object *state.Object
	// Err is a *state.Error when the write was refused, an *EtcdError
	// when an etcd command was.
	Err error
	// Txn is a CmdTxn's etcdserverpb.TxnResponse.
	Txn []byte
}

// FSM applies log entries to a state.Store. Apply, ApplyBatch, Snapshot and
// Restore are called only from Raft's FSM goroutine.
type FSM struct {
	state  *state.Store
	types  Types
	logger hclog.Logger
	// Used by Apply and Restore only, which Raft never runs concurrently.
	intern interner
	copies storedCopies
	buf    []byte
}

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns an FSM that writes to st.
func New(st *state.Store, types Types, logger hclog.Logger) *FSM {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	st.SetPriorOf(new(priors).of)
	f := &FSM{state: st, types: types, logger: logger, copies: storedCopies{}}
	// The store calls it from Apply and Restore, on the FSM goroutine,
	// which owns f.copies.
	st.SetSizeOf(f.storedSize)
	return f
}

// State is the store the FSM writes.
func (f *FSM) State() *state.Store { return f.state }

// Apply applies one entry.
func (f *FSM) Apply(l *raft.Log) interface{} {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies a batch of committed entries in one state transaction
// and publishes them to readers and watchers together.
func (f *FSM) ApplyBatch(logs []*raft.Log) []interface{} {
	out := make([]interface{}, len(logs))
	txn := f.state.Begin()
	var last uint64
	for i, l := range logs {
		last = l.Index
		if l.Type != raft.LogCommand {
			// Configuration changes only move the applied index.
			continue
		}
		out[i] = f.apply(txn, l)
		txn.Step(l.Index)
	}
	txn.Commit(last)
	return out
}

func (f *FSM) apply(txn *state.Txn, l *raft.Log) *Result {
	cmd, err := DecodeCommand(l.Data)
	if err != nil {
		// Stopping beats diverging from the other nodes.
		panic(fmt.Sprintf("fsm: entry %d: %v", l.Index, err))
	}
	at := l.AppendedAt.UnixNano()
	switch cmd.Type {
	case CmdCreate:
		obj := f.decode(l.Index, cmd)
		k := obj.Key()
		if cur := txn.Get(k); cur != nil {
			return &Result{Err: &state.Error{Code: state.AlreadyExists, Key: k, RV: cur.RV, UID: cur.UID()}}
		}
		// The object's stored encoding is the command's (unmarshal).
		if err := admit(txn, l.Index, cmd, keySize(k)+int64(len(cmd.Object))); err != nil {
			return &Result{Err: err}
		}
		obj.CreateRV, obj.KeyVersion = l.Index, 1
		txn.Put(obj, nil, at)
		return &Result{Object: obj}
	case CmdUpdate:
		obj := f.decode(l.Index, cmd)
		k := obj.Key()
		cur := txn.Get(k)
		if err := checkPreconditions(k, cur, cmd); err != nil {
			return &Result{Err: err}
		}
		if obj.UID() != cur.UID() {
			return &Result{Err: &state.Error{Code: state.UIDMismatch, Key: k, RV: cur.RV, UID: cur.UID()}}
		}
		var err error
		if f.buf, err = appendStored(f.buf[:0], cur, f.copies, false); err != nil {
			panic(fmt.Sprintf("fsm: entry %d: encode %s: %v", l.Index, k, err))
		}
		if bytes.Equal(cmd.Object, f.buf) {
			return &Result{Object: cur}
		}
		if err := admit(txn, l.Index, cmd, replaceGrowth(int64(len(f.buf)), int64(len(cmd.Object)))); err != nil {
			return &Result{Err: err}
		}
		shareUnchanged(obj, cur)
		obj.CreateRV, obj.KeyVersion = cur.CreateRV, cur.KeyVersion+1
		txn.Put(obj, cur, at)
		return &Result{Object: obj}
	case CmdDelete:
		k := state.Key{Resource: cmd.Resource, Namespace: cmd.Namespace, Name: cmd.Name}
		cur := txn.Get(k)
		if err := checkPreconditions(k, cur, cmd); err != nil {
			return &Result{Err: err}
		}
		o := cur.Obj.DeepCopyObject().(StoredObject)
		o.SetResourceVersion(strconv.FormatUint(l.Index, 10))
		tomb := newTombstone(cur, l.Index, o)
		shareUnchanged(tomb, cur)
		txn.Delete(tomb, cur, at)
		return &Result{Object: tomb}
	case CmdNoop:
		return &Result{}
	case CmdTxn:
		return f.applyTxn(txn, l, cmd, at)
	case CmdCompact:
		txn.Compact(cmd.Revision)
		return &Result{}
	case CmdLeaseGrant, CmdLeaseKeepAlive, CmdLeaseRevoke:
		return f.applyLease(txn, l, cmd, at)
	case CmdAlarm:
		return applyAlarm(txn, l.Index, cmd)
	case CmdFeatureLevel:
		if cmd.Level > MaxFeatureLevel {
			// Stopping beats applying later entries this release may
			// not understand; the leader never writes this for a member
			// it knows to be older.
			panic(fmt.Sprintf("fsm: entry %d: the cluster's feature level is %d; this release applies up to %d: upgrade it", l.Index, cmd.Level, MaxFeatureLevel))
		}
		txn.RaiseFeatureLevel(uint32(cmd.Level))
		return &Result{}
	}
	if cmd.Type&skippable != 0 {
		f.logger.Warn("skipping unknown command", "type", uint8(cmd.Type), "index", l.Index)
		return &Result{}
	}
	panic(fmt.Sprintf("fsm: entry %d: unknown command type %d", l.Index, uint8(cmd.Type)))
}

// storedSize is what o counts toward the stored data, which the quota
// bounds: its key and its stored encoding. The encoding is byte for byte
// the one its command carried (Data, or else Obj encodes back to it:
// unmarshal), so every node counts the same, whatever its release. Called
// only on the FSM goroutine (it uses f.copies).
func (f *FSM) storedSize(o *state.Object) int64 {
	k := o.Key()
	if data := o.Data(); data != nil {
		return keySize(k) + int64(len(data))
	}
	s, err := f.copies.withoutRV(o)
	if err != nil {
		panic(fmt.Sprintf("fsm: size of %s: %v", k, err))
	}
	return keySize(k) + int64(s.Size())
}

func keySize(k state.Key) int64 { return int64(len(k.Resource) + len(k.Namespace) + len(k.Name)) }

// NoSpaceError refuses a write that would grow the stored data while the
// NOSPACE alarm is on, or past its command's quota (which raises the
// alarm). Nothing was written.
type NoSpaceError struct {
	// Quota is the quota the write was judged by (its command's; 0 if it
	// carried none), Stored the stored data before it, Grow how much it
	// would have added.
	Quota, Stored, Grow uint64
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("database space exceeded: %d bytes stored, the write would add %d, the quota is %d bytes", e.Stored, e.Grow, e.Quota)
}

// admit decides whether a write at idx that changes the stored data by
// grow bytes may go ahead. One that does not grow it always may: a Lease
// renewal, a change of holder (see replaceGrowth), a delete keep working on
// a full store, so no holder loses its Lease because the store is full
// (etcd refuses every put then). One that grows it is refused while the
// NOSPACE alarm is on, and raises the alarm when it would pass its
// command's quota. The quota is the command's, not this node's flag, and
// grow is computed here from the state at idx, so every node decides
// alike.
func admit(txn *state.Txn, idx uint64, cmd *Command, grow int64) error {
	if grow <= 0 {
		return nil
	}
	stored := txn.StoredBytes()
	if txn.NoSpace() == 0 {
		if cmd.Quota == 0 || stored+grow <= int64(cmd.Quota) {
			return nil
		}
		txn.SetNoSpace(idx)
	}
	return &NoSpaceError{Quota: cmd.Quota, Stored: uint64(stored), Grow: uint64(grow)}
}

// smallObject is the size up to which an object may grow in place on a
// full store: room for a Lease to change holder (a longer holder name, a
// first acquireTime, kubelet's managed fields), never for filling the
// store, which takes new objects or large ones.
const smallObject = 2048

// replaceGrowth is how much replacing a stored object of old bytes with
// one of new bytes grows the stored data, for admit: nothing while the new
// one stays within smallObject, so that a full store still takes every
// change of a Lease's holder; else the difference.
func replaceGrowth(old, new int64) int64 {
	if new <= smallObject {
		return min(new-old, 0)
	}
	return new - old
}

// applyAlarm raises or clears the NOSPACE alarm, the only one leasehold
// has. Raising it again keeps the index it was first raised at.
func applyAlarm(txn *state.Txn, idx uint64, cmd *Command) *Result {
	if cmd.Alarm != AlarmNoSpace {
		return &Result{Err: &EtcdError{Message: fmt.Sprintf("etcdserver: leasehold has no alarm of type %d", cmd.Alarm)}}
	}
	switch cmd.AlarmAction {
	case AlarmActivate:
		if txn.NoSpace() == 0 {
			txn.SetNoSpace(idx)
		}
	case AlarmDeactivate:
		txn.SetNoSpace(0)
	default:
		return &Result{Err: &EtcdError{Message: fmt.Sprintf("etcdserver: unknown alarm action %d", cmd.AlarmAction)}}
	}
	return &Result{}
}

// newTombstone is the last state of cur, deleted at idx: o, its object
// stamped with idx. Its KeyVersion counts the delete too, so that the
// version before it is one less, as for any other write (leasePrior).
func newTombstone(cur *state.Object, idx uint64, o runtime.Object) *state.Object {
	tomb := state.NewObject(cur.Resource, idx, o, cur.Data())
	tomb.CreateRV, tomb.KeyVersion = cur.CreateRV, cur.KeyVersion+1
	return tomb
}

func checkPreconditions(k state.Key, cur *state.Object, cmd *Command) error {
	if cur == nil {
		return &state.Error{Code: state.NotFound, Key: k}
	}
	if cmd.ExpectUID != "" && cmd.ExpectUID != cur.UID() {
		return &state.Error{Code: state.UIDMismatch, Key: k, RV: cur.RV, UID: cur.UID()}
	}
	if cmd.ExpectRV != 0 && cmd.ExpectRV != cur.RV {
		return &state.Error{Code: state.Conflict, Key: k, RV: cur.RV, UID: cur.UID()}
	}
	return nil
}

// decode builds the stored object for a create or update at index idx.
func (f *FSM) decode(idx uint64, cmd *Command) *state.Object {
	o, data, err := f.unmarshal(cmd.Resource, cmd.Object)
	if err != nil {
		panic(fmt.Sprintf("fsm: entry %d: %v", idx, err))
	}
	o.SetResourceVersion(strconv.FormatUint(idx, 10))
	return state.NewObject(f.intern.string(cmd.Resource), idx, o, data)
}

// unmarshal decodes a stored encoding (resourceVersion unset) and returns
// what state.Object.Data keeps of it: nothing when encoding the object again
// gives the same bytes, as it does for whatever this binary's proposers
// wrote; only an encoding from elsewhere (a newer binary's unknown fields)
// is kept as written. The check costs one encoding per write and saves
// holding every object's encoding next to the object.
func (f *FSM) unmarshal(resource string, data []byte) (o StoredObject, keep []byte, err error) {
	newObj, ok := f.types[resource]
	if !ok {
		return nil, nil, fmt.Errorf("unknown resource %q", resource)
	}
	o = newObj()
	if err := o.Unmarshal(data); err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", resource, err)
	}
	if f.buf, err = appendEncoding(f.buf[:0], o, o.Size()); err != nil || !bytes.Equal(f.buf, data) {
		keep = bytes.Clone(data)
	}
	f.intern.object(o)
	return o, keep, nil
}

// storedCopies holds one object of each stored type, to be overwritten
// with a stored object minus its resourceVersion for encoding: an encoding
// per update and one per object in a snapshot then allocate nothing. Not
// safe for concurrent use; a nil storedCopies allocates a copy each time.
type storedCopies map[reflect.Type]reflect.Value

// withoutRV returns a shallow copy of o's object with resourceVersion
// unset (Obj is shared and never changes; the copy owns only that field),
// valid until the next call for the same type.
func (c storedCopies) withoutRV(o *state.Object) (StoredObject, error) {
	st, ok := o.Obj.(StoredObject)
	if !ok {
		return nil, fmt.Errorf("stored object %s is a %T", o.Key(), o.Obj)
	}
	v := reflect.ValueOf(st).Elem()
	cp, ok := c[v.Type()]
	if !ok {
		cp = reflect.New(v.Type())
		if c != nil {
			c[v.Type()] = cp
		}
	}
	cp.Elem().Set(v)
	s := cp.Interface().(StoredObject)
	s.SetResourceVersion("")
	return s, nil
}

// appendStored appends o's protobuf encoding with resourceVersion unset,
// as the command that wrote it carried it — the bytes kept in Data, or
// else Obj encoded again — preceded by its length as a uvarint if withLen.
func appendStored(b []byte, o *state.Object, c storedCopies, withLen bool) ([]byte, error) {
	if data := o.Data(); data != nil {
		if withLen {
			b = binary.AppendUvarint(b, uint64(len(data)))
		}
		return append(b, data...), nil
	}
	s, err := c.withoutRV(o)
	if err != nil {
		return b, err
	}
	n := s.Size()
	if withLen {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return appendEncoding(b, s, n)
}

// message is a gogo-protobuf generated message.
type message interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendEncoding appends m's protobuf encoding, n = m.Size() bytes, to b.
func appendEncoding(b []byte, m message, n int) ([]byte, error) {
	b = slices.Grow(b, n)
	if w, err := m.MarshalToSizedBuffer(b[len(b) : len(b)+n]); err != nil {
		return b, err
	} else if w != n {
		return b, fmt.Errorf("encoded %d bytes of %d", w, n)
	}
	return b[:len(b)+n], nil
}
