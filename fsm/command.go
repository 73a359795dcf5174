package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// CommandType is byte 0 of every log entry the FSM applies. Numbers are
// never reused; a new payload shape gets a new type. Bit 7 set means an
// older binary may skip the entry when it does not know the type.
type CommandType uint8

const (
	// CmdCreate stores a new object; it fails if the key exists.
	CmdCreate CommandType = 1
	// CmdUpdate replaces an existing object if its preconditions hold. An
	// update whose object equals the stored one changes nothing.
	CmdUpdate CommandType = 2
	// CmdDelete removes an object if its preconditions hold.
	CmdDelete CommandType = 3
	// CmdNoop changes nothing; a new leader commits one to learn that its
	// commit index is current (see cluster's read index).
	CmdNoop CommandType = 4
	// CmdFeatureLevel raises the cluster feature level to Level (never
	// lowers it). Skippable: a release before it ignores it, though by
	// construction none is a member when it is written.
	CmdFeatureLevel CommandType = skippable | 5
	// CmdTxn is a transaction of the etcd API (Txn, Prefix), written from
	// feature level 2.
	CmdTxn CommandType = 6
	// CmdCompact records the etcd API's compaction to Revision, written
	// from feature level 2.
	CmdCompact CommandType = 7
	// CmdLeaseGrant creates the etcd lease LeaseID of TTL seconds,
	// CmdLeaseKeepAlive renews it, CmdLeaseRevoke removes it once no key
	// is attached to it; written from feature level 2.
	CmdLeaseGrant     CommandType = 8
	CmdLeaseKeepAlive CommandType = 9
	CmdLeaseRevoke    CommandType = 10
	// CmdAlarm raises (AlarmAction 1, etcd's ACTIVATE) or clears (2,
	// DEACTIVATE) the cluster's alarm Alarm (etcd's AlarmType: 1 is
	// NOSPACE), written from feature level 3. Apply also raises NOSPACE
	// itself, at the write that would pass its command's Quota.
	CmdAlarm CommandType = 11

	skippable CommandType = 0x80
)

// MaxFeatureLevel is the highest cluster feature level this release can
// apply. Level 1: members describe themselves (the peer call NodeInfo),
// the log carries the level (CmdFeatureLevel) and snapshots record it. A
// release that adds a log command type or a snapshot format an older one
// cannot apply raises it, and writes the new kind only once the cluster's
// level reaches it, so that no member is ever sent what it cannot apply
// (consul#2889). A state above it is refused: this release is older than
// the cluster. Level 2: the etcd API (CmdTxn, CmdCompact, snapshot format
// 5 with every version's create revision and key version). Level 3: the
// storage quota (Command.Quota, CmdAlarm, the snapshot's alarm record).
const MaxFeatureLevel = 3

func (t CommandType) String() string {
	switch t {
	case CmdCreate:
		return "create"
	case CmdUpdate:
		return "update"
	case CmdDelete:
		return "delete"
	case CmdNoop:
		return "noop"
	case CmdFeatureLevel:
		return "feature-level"
	case CmdTxn:
		return "txn"
	case CmdCompact:
		return "compact"
	case CmdLeaseGrant:
		return "lease-grant"
	case CmdLeaseKeepAlive:
		return "lease-keepalive"
	case CmdLeaseRevoke:
		return "lease-revoke"
	case CmdAlarm:
		return "alarm"
	}
	return fmt.Sprintf("type-%d", uint8(t))
}

// Command is one decoded log entry.
//
// Everything Apply needs that is not a pure function of the state — uid,
// creation time, generated names — is chosen before proposing and is
// already inside Object.
type Command struct {
	Type     CommandType
	Resource string
	// Namespace and Name address the object for CmdDelete; for create and
	// update they come from Object.
	Namespace, Name string
	// Object is the protobuf encoding of the object with resourceVersion
	// unset (create and update).
	Object []byte
	// ExpectRV, when non-zero, must equal the stored object's RV.
	ExpectRV uint64
	// ExpectUID, when set, must equal the stored object's uid.
	ExpectUID string
	// Level is CmdFeatureLevel's level.
	Level uint64
	// Prefix is the etcd key prefix of CmdTxn's keys (see EtcdKeys), and
	// Txn its etcdserverpb.TxnRequest.
	Prefix string
	Txn    []byte
	// Revision is CmdCompact's revision.
	Revision uint64
	// LeaseID and TTL (seconds) are the etcd lease commands'.
	LeaseID, TTL uint64
	// Quota, when non-zero, is the most stored data (state.StoredBytes)
	// a write may leave: one that would pass it raises the NOSPACE alarm
	// and is refused. The node that proposes the write sets it from its
	// --quota-backend-bytes, from feature level 3: being in the entry, it
	// is the same on every node however their flags differ.
	Quota uint64
	// AlarmAction and Alarm are CmdAlarm's, numbered as etcd's
	// AlarmRequest.AlarmAction and AlarmType.
	AlarmAction, Alarm uint64
}

// etcd's alarm numbers (etcdserverpb.AlarmType, AlarmRequest_AlarmAction).
const (
	AlarmNoSpace    = 1
	AlarmActivate   = 1
	AlarmDeactivate = 2
)

// Payload layout after the type byte (version 1 of every type): a uvarint
// field count, then per field a uvarint tag and a uvarint-length-prefixed
// value (a uint64 value is a uvarint inside the prefix). Unknown tags are skipped, so fields can
// be added without a new type.
const (
	tagResource  = 1
	tagNamespace = 2
	tagName      = 3
	tagObject    = 4
	tagExpectRV  = 5
	tagExpectUID = 6
	tagLevel     = 7
	tagPrefix    = 8
	tagTxn       = 9
	tagRevision  = 10
	tagLeaseID   = 11
	tagTTL       = 12
	tagQuota     = 13
	tagAlarmAct  = 14
	tagAlarm     = 15
)

// Encode returns the log entry bytes for c.
func (c *Command) Encode() []byte {
	b := make([]byte, 0, 32+len(c.Resource)+len(c.Namespace)+len(c.Name)+len(c.Object)+len(c.ExpectUID)+len(c.Prefix)+len(c.Txn))
	b = append(b, byte(c.Type))
	var fields [][2]any
	add := func(tag uint64, v any) { fields = append(fields, [2]any{tag, v}) }
	if c.Resource != "" {
		add(tagResource, c.Resource)
	}
	if c.Namespace != "" {
		add(tagNamespace, c.Namespace)
	}
	if c.Name != "" {
		add(tagName, c.Name)
	}
	if c.Object != nil {
		add(tagObject, c.Object)
	}
	if c.ExpectRV != 0 {
		add(tagExpectRV, c.ExpectRV)
	}
	if c.ExpectUID != "" {
		add(tagExpectUID, c.ExpectUID)
	}
	if c.Level != 0 {
		add(tagLevel, c.Level)
	}
	if c.Prefix != "" {
		add(tagPrefix, c.Prefix)
	}
	if c.Txn != nil {
		add(tagTxn, c.Txn)
	}
	if c.Revision != 0 {
		add(tagRevision, c.Revision)
	}
	if c.LeaseID != 0 {
		add(tagLeaseID, c.LeaseID)
	}
	if c.TTL != 0 {
		add(tagTTL, c.TTL)
	}
	if c.Quota != 0 {
		add(tagQuota, c.Quota)
	}
	if c.AlarmAction != 0 {
		add(tagAlarmAct, c.AlarmAction)
	}
	if c.Alarm != 0 {
		add(tagAlarm, c.Alarm)
	}
	b = binary.AppendUvarint(b, uint64(len(fields)))
	for _, f := range fields {
		b = binary.AppendUvarint(b, f[0].(uint64))
		switch v := f[1].(type) {
		case string:
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case []byte:
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case uint64:
			b = binary.AppendUvarint(b, uint64(uvarintLen(v)))
			b = binary.AppendUvarint(b, v)
		}
	}
	return b
}

var errShort = errors.New("truncated command")

// DecodeCommand parses a log entry. Object aliases data.
func DecodeCommand(data []byte) (*Command, error) {
	if len(data) == 0 {
		return nil, errShort
	}
	c := &Command{Type: CommandType(data[0])}
	r := reader{b: data[1:]}
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		switch tag := r.uvarint(); tag {
		case tagResource:
			c.Resource = string(r.bytes())
		case tagNamespace:
			c.Namespace = string(r.bytes())
		case tagName:
			c.Name = string(r.bytes())
		case tagObject:
			c.Object = r.bytes()
		case tagExpectRV:
			inner := reader{b: r.bytes()}
			c.ExpectRV = inner.uvarint()
			if inner.err != nil && r.err == nil {
				r.err = inner.err
			}
		case tagExpectUID:
			c.ExpectUID = string(r.bytes())
		case tagLevel, tagRevision, tagLeaseID, tagTTL, tagQuota, tagAlarmAct, tagAlarm:
			inner := reader{b: r.bytes()}
			v := inner.uvarint()
			if inner.err != nil && r.err == nil {
				r.err = inner.err
			}
			switch tag {
			case tagLevel:
				c.Level = v
			case tagRevision:
				c.Revision = v
			case tagLeaseID:
				c.LeaseID = v
			case tagTTL:
				c.TTL = v
			case tagQuota:
				c.Quota = v
			case tagAlarmAct:
				c.AlarmAction = v
			case tagAlarm:
				c.Alarm = v
			}
		case tagPrefix:
			c.Prefix = string(r.bytes())
		case tagTxn:
			c.Txn = r.bytes()
		default:
			// Only a later version writes unknown tags; they are all
			// length-prefixed.
			r.bytes()
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode %v command: %w", c.Type, r.err)
	}
	return c, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = errShort
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}
