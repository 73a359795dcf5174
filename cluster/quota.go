package cluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/leasehold/leasehold/fsm"
)

// The storage quota, as etcd's --quota-backend-bytes and NOSPACE alarm,
// except that a write which does not grow the stored data is never
// refused (fsm.admit).
//
// Where the quota lives: every write this node proposes carries it
// (fsm.Command.Quota), and the FSM raises the alarm at the write that
// would pass it. A replicated setting (the leader writing its flag into
// the log) would give one quota per cluster, but needs a leader-side
// loop and still leaves the question of whose flag wins; in the command,
// the value is in the log either way, so nodes whose flags differ never
// diverge — each write is judged by the quota of the node that received
// it. Give every node the same --quota-backend-bytes.

// ErrRequestTooLarge: the object or etcd transaction is larger than
// --max-request-bytes; nothing was written.
var ErrRequestTooLarge = errors.New("request is too large")

// TooLargeError is ErrRequestTooLarge with the sizes.
type TooLargeError struct{ Size, Limit uint64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("request is too large: the stored object or transaction is %d bytes, more than --max-request-bytes=%d", e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrRequestTooLarge }

// quotaLevel is the feature level from which every member applies the
// quota: below it a write carries none.
const quotaLevel = 3

// limit refuses a write larger than MaxRequestBytes, and returns cmd
// carrying this node's quota once every member applies it.
func (n *Node) limit(cmd *fsm.Command) (*fsm.Command, error) {
	if max := n.cfg.MaxRequestBytes; max > 0 {
		if size := uint64(len(cmd.Object) + len(cmd.Txn)); size > max {
			return nil, &TooLargeError{Size: size, Limit: max}
		}
	}
	switch cmd.Type {
	case fsm.CmdCreate, fsm.CmdUpdate, fsm.CmdTxn, fsm.CmdLeaseGrant, fsm.CmdLeaseKeepAlive:
		if q := n.cfg.QuotaBackendBytes; q > 0 && cmd.Quota == 0 && n.FeatureLevel() >= quotaLevel {
			c := *cmd
			c.Quota = q
			return &c, nil
		}
	}
	return cmd, nil
}

// Alarm is a raised alarm as etcd lists it: one per member.
type Alarm struct {
	MemberID uint64 `json:"memberID"`
	Name     string `json:"name"`
	Alarm    string `json:"alarm"`
	// RaisedAt is the index of the entry that raised it.
	RaisedAt uint64 `json:"raisedAt"`
}

// MemberID is a member's etcd id: a hash of its name, as the etcd API
// reports it.
func MemberID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Alarms lists the raised alarms in this node's state. NOSPACE is the
// cluster's (every member applies the same writes to the same data), so
// it is listed for every member, as etcd lists each member's.
func (n *Node) Alarms() []Alarm {
	at := n.state.NoSpace()
	if at == 0 {
		return []Alarm{}
	}
	var out []Alarm
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			out = append(out, Alarm{MemberID: MemberID(string(s.ID)), Name: string(s.ID), Alarm: "NOSPACE", RaisedAt: at})
		}
	}
	if len(out) == 0 {
		out = append(out, Alarm{MemberID: MemberID(n.cfg.Name), Name: n.cfg.Name, Alarm: "NOSPACE", RaisedAt: at})
	}
	return out
}

// SetNoSpace raises (on) or clears the NOSPACE alarm through the log.
func (n *Node) SetNoSpace(ctx context.Context, on bool) error {
	if n.FeatureLevel() < quotaLevel {
		return fmt.Errorf("%w: the cluster's feature level is below %d, the first with alarms; upgrade every member", ErrUnsupported, quotaLevel)
	}
	action := uint64(fsm.AlarmDeactivate)
	if on {
		action = fsm.AlarmActivate
	}
	res, err := n.Apply(ctx, &fsm.Command{Type: fsm.CmdAlarm, AlarmAction: action, Alarm: fsm.AlarmNoSpace})
	if err != nil {
		return err
	}
	return res.Err
}

// StoredBytes is the stored data at this node's applied index.
func (n *Node) StoredBytes() int64 { return n.state.StoredBytes() }

// QuotaBackendBytes is the quota this node's writes carry (0: none).
func (n *Node) QuotaBackendBytes() uint64 { return n.cfg.QuotaBackendBytes }
