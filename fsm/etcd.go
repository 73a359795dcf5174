package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
)

// The etcd API's view of the state. Keys PREFIX/leases/<ns>/<name> and
// PREFIX/leasecandidates/<ns>/<name> are the REST API's objects, their
// values kube-apiserver's storage encoding of them; any other key is a
// RawValue of RawResource, stored as given. A key's revisions are its
// object's: mod_revision is the resourceVersion (the Raft index of the
// entry that last changed it), create_revision and version are
// state.Object's CreateRV and KeyVersion.

// RawResource is the resource of the etcd keys that are no REST object.
const RawResource = "etcdkeys"

// RawValue is an etcd key and its value, stored as given. Name is the
// key, so that the state orders raw keys as etcd does.
type RawValue struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Value []byte
	// Lease is the etcd lease the key is attached to (0: none).
	Lease int64
}

var _ StoredObject = (*RawValue)(nil)

// DeepCopyObject implements runtime.Object.
func (r *RawValue) DeepCopyObject() runtime.Object {
	c := *r
	r.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Value = bytes.Clone(r.Value)
	return &c
}

// The stored encoding of a RawValue: uvarint key length, the key, uvarint
// lease, the value. The key is part of it, as an object's name is part of
// its protobuf encoding.

// Size implements StoredObject.
func (r *RawValue) Size() int {
	return uvarintLen(uint64(len(r.Name))) + len(r.Name) + uvarintLen(uint64(r.Lease)) + len(r.Value)
}

// MarshalToSizedBuffer implements StoredObject.
func (r *RawValue) MarshalToSizedBuffer(b []byte) (int, error) {
	if len(b) < r.Size() {
		return 0, errors.New("raw value: buffer too small")
	}
	n := binary.PutUvarint(b, uint64(len(r.Name)))
	n += copy(b[n:], r.Name)
	n += binary.PutUvarint(b[n:], uint64(r.Lease))
	n += copy(b[n:], r.Value)
	return n, nil
}

// Marshal implements StoredObject.
func (r *RawValue) Marshal() ([]byte, error) {
	b := make([]byte, r.Size())
	_, err := r.MarshalToSizedBuffer(b)
	return b, err
}

// Unmarshal implements StoredObject.
func (r *RawValue) Unmarshal(b []byte) error {
	rd := reader{b: b}
	key := rd.bytes()
	lease := rd.uvarint()
	if rd.err != nil {
		return fmt.Errorf("raw value: %w", rd.err)
	}
	r.Name, r.Lease, r.Value = string(key), int64(lease), bytes.Clone(rd.b)
	return nil
}

// EtcdKeys maps etcd keys to the state's under Prefix (kube-apiserver's
// --etcd-prefix, "/registry" by default).
type EtcdKeys struct{ Prefix string }

// etcdResources are the REST resources the etcd API serves as objects,
// with the group version and kind kube-apiserver stores them as.
var etcdResources = []struct {
	resource, apiVersion, kind string
}{
	{"leases", coordinationv1.SchemeGroupVersion.String(), "Lease"},
	{"leasecandidates", coordinationv1beta1.SchemeGroupVersion.String(), "LeaseCandidate"},
}

// StateKey is the state's key for an etcd key.
func (m EtcdKeys) StateKey(key string) state.Key {
	for _, r := range etcdResources {
		rest, ok := strings.CutPrefix(key, m.Prefix+"/"+r.resource+"/")
		if !ok {
			continue
		}
		if ns, name, ok := strings.Cut(rest, "/"); ok && ns != "" && name != "" && !strings.Contains(name, "/") {
			return state.Key{Resource: r.resource, Namespace: ns, Name: name}
		}
	}
	return state.Key{Resource: RawResource, Name: key}
}

// EtcdKey is the etcd key of a state key.
func (m EtcdKeys) EtcdKey(k state.Key) string {
	if k.Resource == RawResource {
		return k.Name
	}
	return m.Prefix + "/" + k.Resource + "/" + k.Namespace + "/" + k.Name
}

// InRange reports whether key is in etcd's range of start and end: end ""
// is the key start alone, "\x00" every key from start on, else [start, end).
func InRange(key, start, end string) bool {
	switch end {
	case "":
		return key == start
	case "\x00":
		return key >= start
	}
	return key >= start && key < end
}

// Viewer is a read view of the state: a state.Snapshot or a state.Txn.
type Viewer interface {
	Get(state.Key) *state.Object
	Ascend(from string, fn func(*state.Object) bool)
}

// Range yields the objects of the keys in [start, end), in key order, as
// etcd's Range reads them: end "" is the key start alone, end "\x00"
// every key from start on.
func (m EtcdKeys) Range(v Viewer, start, end string) iter.Seq2[string, *state.Object] {
	return func(yield func(string, *state.Object) bool) {
		if end == "" {
			if o := v.Get(m.StateKey(start)); o != nil {
				yield(start, o)
			}
			return
		}
		all := end == "\x00"
		in := func(key string) bool { return InRange(key, start, end) }
		var sources []iter.Seq2[string, *state.Object]
		// Raw keys, by key.
		sources = append(sources, m.ascend(v, RawResource+"//", RawResource+"//"+start, in, func(o *state.Object) string {
			return o.Obj.(*RawValue).Name
		}))
		for _, r := range etcdResources {
			keyPrefix := m.Prefix + "/" + r.resource + "/"
			if !all && end <= keyPrefix || start >= keyPrefix+"\xff" {
				continue
			}
			from := r.resource + "/"
			if start > keyPrefix {
				from += start[len(keyPrefix):]
			}
			sources = append(sources, m.ascend(v, r.resource+"/", from, in, func(o *state.Object) string {
				return m.EtcdKey(o.Key())
			}))
		}
		merge(sources, yield)
	}
}

// ascend yields the objects whose ids have prefix idPrefix, from the id
// from, while their keys are in the range, skipping keys before it.
func (m EtcdKeys) ascend(v Viewer, idPrefix, from string, in func(string) bool, key func(*state.Object) string) iter.Seq2[string, *state.Object] {
	return func(yield func(string, *state.Object) bool) {
		v.Ascend(from, func(o *state.Object) bool {
			if !strings.HasPrefix(o.ID(), idPrefix) {
				return false
			}
			k := key(o)
			if !in(k) {
				// Ids and keys of one source are in the same order, and
				// the first id is at or after the range's start: past the
				// end, nothing further is in range.
				return false
			}
			return yield(k, o)
		})
	}
}

// merge yields the union of sorted sources in key order.
func merge(sources []iter.Seq2[string, *state.Object], yield func(string, *state.Object) bool) {
	if len(sources) == 1 {
		sources[0](yield)
		return
	}
	type head struct {
		next func() (string, *state.Object, bool)
		stop func()
		key  string
		o    *state.Object
		ok   bool
	}
	heads := make([]*head, len(sources))
	for i, s := range sources {
		next, stop := iter.Pull2(s)
		defer stop()
		h := &head{next: next, stop: stop}
		h.key, h.o, h.ok = next()
		heads[i] = h
	}
	for {
		var min *head
		for _, h := range heads {
			if h.ok && (min == nil || h.key < min.key) {
				min = h
			}
		}
		if min == nil || !yield(min.key, min.o) {
			return
		}
		min.key, min.o, min.ok = min.next()
	}
}

// kubeStoragePrefix starts kube-apiserver's protobuf storage encoding
// ("k8s\0", then a runtime.Unknown).
var kubeStoragePrefix = []byte{'k', '8', 's', 0}

// EtcdValue is the value the etcd API serves for o: a raw key's value as
// written, or kube-apiserver's protobuf storage encoding of the object
// with resourceVersion unset, byte for byte what kube-apiserver writes.
func EtcdValue(o *state.Object) ([]byte, error) {
	if r, ok := o.Obj.(*RawValue); ok {
		return r.Value, nil
	}
	apiVersion, kind, ok := etcdKind(o.Resource)
	if !ok {
		return nil, fmt.Errorf("%s is not served by the etcd API", o.Key())
	}
	raw, err := appendStored(nil, o, nil, false)
	if err != nil {
		return nil, err
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b := make([]byte, len(kubeStoragePrefix), len(kubeStoragePrefix)+u.Size())
	copy(b, kubeStoragePrefix)
	return appendEncoding(b, &u, u.Size())
}

func etcdKind(resource string) (apiVersion, kind string, ok bool) {
	for _, r := range etcdResources {
		if r.resource == resource {
			return r.apiVersion, r.kind, true
		}
	}
	return "", "", false
}

// DecodeEtcdValue returns the stored encoding (the object's protobuf
// message) of a value written through the etcd API for resource. Only
// kube-apiserver's protobuf storage encoding is taken, and only as
// kube-apiserver writes it: encoding the envelope again must give the
// value back, so that the value served later is the one written.
func DecodeEtcdValue(resource string, value []byte) ([]byte, error) {
	apiVersion, kind, ok := etcdKind(resource)
	if !ok {
		return nil, fmt.Errorf("%s are not served by the etcd API", resource)
	}
	if bytes.HasPrefix(value, []byte("k8s:enc:")) {
		return nil, errors.New("the value is encrypted (k8s:enc:): leasehold stores Leases in clear, so that its REST API can serve them; leave coordination.k8s.io out of kube-apiserver's EncryptionConfiguration")
	}
	if !bytes.HasPrefix(value, kubeStoragePrefix) {
		return nil, errors.New("the value is not kube-apiserver's protobuf storage encoding: run kube-apiserver with --storage-media-type=application/vnd.kubernetes.protobuf (the default)")
	}
	var u runtime.Unknown
	if err := u.Unmarshal(value[len(kubeStoragePrefix):]); err != nil {
		return nil, fmt.Errorf("the value is not kube-apiserver's protobuf storage encoding: %v", err)
	}
	if u.APIVersion != apiVersion || u.Kind != kind {
		return nil, fmt.Errorf("the value is a %s %s, want %s %s", u.APIVersion, u.Kind, apiVersion, kind)
	}
	if u.ContentEncoding != "" || u.ContentType != "" {
		return nil, fmt.Errorf("the value has content encoding %q and type %q, want neither", u.ContentEncoding, u.ContentType)
	}
	again, err := appendEncoding(nil, &u, u.Size())
	if err != nil || !bytes.Equal(again, value[len(kubeStoragePrefix):]) {
		return nil, errors.New("the value is not in kube-apiserver's canonical protobuf storage encoding")
	}
	return u.Raw, nil
}

// KeyValue is o as an etcd KeyValue under key; with keysOnly, without its
// value.
func KeyValue(key string, o *state.Object, keysOnly bool) (*mvccpb.KeyValue, error) {
	kv := &mvccpb.KeyValue{
		Key:            []byte(key),
		CreateRevision: int64(o.CreateRV),
		ModRevision:    int64(o.RV),
		Version:        int64(o.KeyVersion),
	}
	if r, ok := o.Obj.(*RawValue); ok {
		kv.Lease = r.Lease
	}
	if !keysOnly {
		v, err := EtcdValue(o)
		if err != nil {
			return nil, err
		}
		kv.Value = v
	}
	return kv, nil
}

// EtcdError is the etcd API's refusal of a command: nothing was written.
type EtcdError struct{ Message string }

func (e *EtcdError) Error() string { return e.Message }

// RangeKVs answers a RangeRequest from v: the keys in range, sorted by
// key, at most Limit of them (0: no limit), Count of all of them. The
// request's revision is the caller's: v is the view at it.
func (m EtcdKeys) RangeKVs(v Viewer, req *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	resp := &etcdserverpb.RangeResponse{}
	descend := req.SortOrder == etcdserverpb.RangeRequest_DESCEND
	for key, o := range m.Range(v, string(req.Key), string(req.RangeEnd)) {
		resp.Count++
		if req.CountOnly || (!descend && req.Limit > 0 && int64(len(resp.Kvs)) >= req.Limit) {
			continue
		}
		kv, err := KeyValue(key, o, req.KeysOnly)
		if err != nil {
			return nil, err
		}
		resp.Kvs = append(resp.Kvs, kv)
	}
	if descend {
		for i, j := 0, len(resp.Kvs)-1; i < j; i, j = i+1, j-1 {
			resp.Kvs[i], resp.Kvs[j] = resp.Kvs[j], resp.Kvs[i]
		}
		if req.Limit > 0 && int64(len(resp.Kvs)) > req.Limit {
			resp.Kvs = resp.Kvs[:req.Limit]
		}
	}
	resp.More = req.Limit > 0 && resp.Count > int64(len(resp.Kvs)) && !req.CountOnly
	return resp, nil
}

// compare reports whether c holds in v: for every key in its range, or,
// for none, a zero KeyValue (a VALUE compare then fails), as etcd's.
func (m EtcdKeys) compare(v Viewer, c *etcdserverpb.Compare) bool {
	found := false
	for _, o := range m.Range(v, string(c.Key), string(c.RangeEnd)) {
		found = true
		if !compareOne(c, o) {
			return false
		}
	}
	if !found {
		return c.Target != etcdserverpb.Compare_VALUE && compareOne(c, nil)
	}
	return true
}

func compareOne(c *etcdserverpb.Compare, o *state.Object) bool {
	var r int
	switch c.Target {
	case etcdserverpb.Compare_VALUE:
		var value []byte
		if o != nil {
			value, _ = EtcdValue(o)
		}
		r = bytes.Compare(value, c.GetValue())
	default:
		var have, want int64
		if o != nil {
			switch c.Target {
			case etcdserverpb.Compare_VERSION:
				have = int64(o.KeyVersion)
			case etcdserverpb.Compare_CREATE:
				have = int64(o.CreateRV)
			case etcdserverpb.Compare_MOD:
				have = int64(o.RV)
			case etcdserverpb.Compare_LEASE:
				if rv, ok := o.Obj.(*RawValue); ok {
					have = rv.Lease
				}
			}
		}
		switch c.Target {
		case etcdserverpb.Compare_VERSION:
			want = c.GetVersion()
		case etcdserverpb.Compare_CREATE:
			want = c.GetCreateRevision()
		case etcdserverpb.Compare_MOD:
			want = c.GetModRevision()
		case etcdserverpb.Compare_LEASE:
			want = c.GetLease()
		}
		switch {
		case have < want:
			r = -1
		case have > want:
			r = 1
		}
	}
	switch c.Result {
	case etcdserverpb.Compare_EQUAL:
		return r == 0
	case etcdserverpb.Compare_GREATER:
		return r > 0
	case etcdserverpb.Compare_LESS:
		return r < 0
	case etcdserverpb.Compare_NOT_EQUAL:
		return r != 0
	}
	return false
}

// applyTxn applies an etcd Txn as etcd does: every compare, nested
// transactions' included, is evaluated on the state before the
// transaction; the chosen branches' operations then run in order, a range
// seeing the writes before it. Every write is checked before any is made,
// so that a refused transaction changes nothing, and no key may be
// changed twice (etcd: "duplicate key given in txn request").
func (f *FSM) applyTxn(txn *state.Txn, l *raft.Log, cmd *Command, at int64) *Result {
	req := &etcdserverpb.TxnRequest{}
	if err := proto.Unmarshal(cmd.Txn, req); err != nil {
		return &Result{Err: &EtcdError{Message: "etcdserver: malformed txn request: " + err.Error()}}
	}
	keys := EtcdKeys{Prefix: cmd.Prefix}
	plan := keys.plan(txn, req)
	puts := map[*etcdserverpb.PutRequest]*state.Object{}
	if err := f.prepare(txn, keys, l.Index, plan, puts, map[string]bool{}); err != nil {
		return &Result{Err: err}
	}
	if err := admit(txn, l.Index, cmd, f.txnGrowth(txn, keys, plan, puts)); err != nil {
		return &Result{Err: err}
	}
	resp := f.execute(txn, keys, l.Index, plan, puts, at)
	rev, _ := txn.Revision()
	resp.Header = &etcdserverpb.ResponseHeader{Revision: int64(max(rev, 1))}
	b, err := proto.Marshal(resp)
	if err != nil {
		panic(fmt.Sprintf("fsm: entry %d: encode txn response: %v", l.Index, err))
	}
	return &Result{Txn: b}
}

// txnPlan is a transaction's chosen branch: its operations, and for each
// nested transaction among them its own plan.
type txnPlan struct {
	succeeded bool
	ops       []*etcdserverpb.RequestOp
	nested    map[int]*txnPlan
}

// plan evaluates req's compares, and its nested transactions', on v.
func (m EtcdKeys) plan(v Viewer, req *etcdserverpb.TxnRequest) *txnPlan {
	p := &txnPlan{succeeded: true, nested: map[int]*txnPlan{}}
	for _, c := range req.Compare {
		if !m.compare(v, c) {
			p.succeeded = false
			break
		}
	}
	p.ops = req.Success
	if !p.succeeded {
		p.ops = req.Failure
	}
	for i, op := range p.ops {
		if r, ok := op.Request.(*etcdserverpb.RequestOp_RequestTxn); ok {
			p.nested[i] = m.plan(v, r.RequestTxn)
		}
	}
	return p
}

// prepare builds the object of every put of the plan and checks that no
// key is changed twice. changed holds the keys written so far.
func (f *FSM) prepare(txn *state.Txn, keys EtcdKeys, idx uint64, p *txnPlan, puts map[*etcdserverpb.PutRequest]*state.Object, changed map[string]bool) error {
	duplicate := &EtcdError{Message: "etcdserver: duplicate key given in txn request"}
	var deletes []*etcdserverpb.DeleteRangeRequest
	for i, op := range p.ops {
		switch r := op.Request.(type) {
		case *etcdserverpb.RequestOp_RequestPut:
			key := string(r.RequestPut.Key)
			if changed[key] {
				return duplicate
			}
			changed[key] = true
			o, err := f.etcdObject(txn, keys, idx, r.RequestPut)
			if err != nil {
				return err
			}
			puts[r.RequestPut] = o
		case *etcdserverpb.RequestOp_RequestDeleteRange:
			deletes = append(deletes, r.RequestDeleteRange)
			for key := range keys.Range(txn, string(r.RequestDeleteRange.Key), string(r.RequestDeleteRange.RangeEnd)) {
				if changed[key] {
					return duplicate
				}
				changed[key] = true
			}
		case *etcdserverpb.RequestOp_RequestTxn:
			if err := f.prepare(txn, keys, idx, p.nested[i], puts, changed); err != nil {
				return err
			}
		}
	}
	// A put inside a deleted range (a key it creates, which the range
	// did not find) changes that key twice too.
	for _, d := range deletes {
		end := string(d.RangeEnd)
		for pr := range puts {
			key := string(pr.Key)
			if InRange(key, string(d.Key), end) {
				return duplicate
			}
		}
	}
	return nil
}

// txnGrowth is how much a prepared plan would grow the stored data: what
// its puts store less what they replace, less what its deletes remove.
// No key is written twice (prepare), so each counts once.
func (f *FSM) txnGrowth(txn *state.Txn, keys EtcdKeys, p *txnPlan, puts map[*etcdserverpb.PutRequest]*state.Object) int64 {
	var grow int64
	for i, op := range p.ops {
		switch r := op.Request.(type) {
		case *etcdserverpb.RequestOp_RequestPut:
			o := puts[r.RequestPut]
			if cur := txn.Get(o.Key()); cur != nil {
				grow += replaceGrowth(f.storedSize(cur), f.storedSize(o))
			} else {
				grow += f.storedSize(o)
			}
		case *etcdserverpb.RequestOp_RequestDeleteRange:
			for _, o := range keys.Range(txn, string(r.RequestDeleteRange.Key), string(r.RequestDeleteRange.RangeEnd)) {
				grow -= f.storedSize(o)
			}
		case *etcdserverpb.RequestOp_RequestTxn:
			grow += f.txnGrowth(txn, keys, p.nested[i], puts)
		}
	}
	return grow
}

// execute runs a prepared plan.
func (f *FSM) execute(txn *state.Txn, keys EtcdKeys, idx uint64, p *txnPlan, puts map[*etcdserverpb.PutRequest]*state.Object, at int64) *etcdserverpb.TxnResponse {
	resp := &etcdserverpb.TxnResponse{Succeeded: p.succeeded}
	for i, op := range p.ops {
		var out etcdserverpb.ResponseOp
		switch r := op.Request.(type) {
		case *etcdserverpb.RequestOp_RequestRange:
			rr, err := keys.RangeKVs(txn, r.RequestRange)
			if err != nil {
				panic(fmt.Sprintf("fsm: entry %d: %v", idx, err))
			}
			out.Response = &etcdserverpb.ResponseOp_ResponseRange{ResponseRange: rr}
		case *etcdserverpb.RequestOp_RequestPut:
			out.Response = &etcdserverpb.ResponseOp_ResponsePut{ResponsePut: f.etcdPut(txn, keys, r.RequestPut, puts[r.RequestPut], at)}
		case *etcdserverpb.RequestOp_RequestDeleteRange:
			out.Response = &etcdserverpb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: f.etcdDelete(txn, keys, idx, r.RequestDeleteRange, at)}
		case *etcdserverpb.RequestOp_RequestTxn:
			out.Response = &etcdserverpb.ResponseOp_ResponseTxn{ResponseTxn: f.execute(txn, keys, idx, p.nested[i], puts, at)}
		default:
			continue
		}
		resp.Responses = append(resp.Responses, &out)
	}
	return resp
}

// etcdObject builds the object a put stores at idx, or refuses it.
func (f *FSM) etcdObject(txn *state.Txn, keys EtcdKeys, idx uint64, req *etcdserverpb.PutRequest) (*state.Object, error) {
	key := string(req.Key)
	k := keys.StateKey(key)
	var stored []byte
	if k.Resource == RawResource {
		if req.Lease != 0 && txn.Get(state.Key{Resource: LeaseResource, Name: LeaseName(req.Lease)}) == nil {
			return nil, &EtcdError{Message: "etcdserver: requested lease not found"}
		}
		r := &RawValue{ObjectMeta: metav1.ObjectMeta{Name: key}, Value: req.Value, Lease: req.Lease}
		stored, _ = r.Marshal()
	} else {
		var err error
		if stored, err = DecodeEtcdValue(k.Resource, req.Value); err != nil {
			return nil, &EtcdError{Message: "etcdserver: " + err.Error()}
		}
	}
	obj, data, err := f.unmarshal(k.Resource, stored)
	if err != nil {
		return nil, &EtcdError{Message: "etcdserver: " + err.Error()}
	}
	if got := (state.Key{Resource: k.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}); got != k {
		return nil, &EtcdError{Message: fmt.Sprintf("etcdserver: the value of %s is the object %s/%s", key, got.Namespace, got.Name)}
	}
	obj.SetResourceVersion(strconv.FormatUint(idx, 10))
	return state.NewObject(f.intern.string(k.Resource), idx, obj, data), nil
}

// etcdPut stores o, the object etcdObject built for req.
func (f *FSM) etcdPut(txn *state.Txn, keys EtcdKeys, req *etcdserverpb.PutRequest, o *state.Object, at int64) *etcdserverpb.PutResponse {
	key := string(req.Key)
	cur := txn.Get(keys.StateKey(key))
	resp := &etcdserverpb.PutResponse{}
	if cur == nil {
		o.CreateRV, o.KeyVersion = o.RV, 1
		txn.Put(o, nil, at)
		return resp
	}
	if req.PrevKv {
		kv, err := KeyValue(key, cur, false)
		if err != nil {
			panic(fmt.Sprintf("fsm: entry %d: %v", o.RV, err))
		}
		resp.PrevKv = kv
	}
	shareUnchanged(o, cur)
	o.CreateRV, o.KeyVersion = cur.CreateRV, cur.KeyVersion+1
	txn.Put(o, cur, at)
	return resp
}

// etcdDelete deletes the keys in range at idx.
func (f *FSM) etcdDelete(txn *state.Txn, keys EtcdKeys, idx uint64, req *etcdserverpb.DeleteRangeRequest, at int64) *etcdserverpb.DeleteRangeResponse {
	resp := &etcdserverpb.DeleteRangeResponse{}
	type found struct {
		key string
		o   *state.Object
	}
	var all []found
	for key, o := range keys.Range(txn, string(req.Key), string(req.RangeEnd)) {
		all = append(all, found{key, o})
	}
	for _, d := range all {
		resp.Deleted++
		if req.PrevKv {
			kv, err := KeyValue(d.key, d.o, false)
			if err != nil {
				panic(fmt.Sprintf("fsm: entry %d: %v", idx, err))
			}
			resp.PrevKvs = append(resp.PrevKvs, kv)
		}
		o := d.o.Obj.DeepCopyObject().(StoredObject)
		o.SetResourceVersion(strconv.FormatUint(idx, 10))
		tomb := newTombstone(d.o, idx, o)
		shareUnchanged(tomb, d.o)
		txn.Delete(tomb, d.o, at)
	}
	return resp
}

// LeaseResource holds the etcd API's leases: a RawValue named by
// LeaseName, its value the lease's TTL and deadline (EtcdLease).
const LeaseResource = "etcdleases"

// LeaseHasKeys is CmdLeaseRevoke's refusal while keys are attached to the
// lease: they are deleted first, each by an entry of its own.
const LeaseHasKeys = "etcdserver: lease still has keys attached"

// LeaseName is the state name of lease id: fixed-width hex, so that the
// state orders leases by id.
func LeaseName(id int64) string { return fmt.Sprintf("%016x", uint64(id)) }

// EtcdLease is an etcd lease as the state holds it.
type EtcdLease struct {
	ID int64
	// TTL is the granted time to live in seconds; Deadline the leader's
	// append time of the last grant or keep-alive plus TTL (unix nanos).
	TTL      int64
	Deadline int64
}

// LeaseOf decodes the lease o holds.
func LeaseOf(o *state.Object) (EtcdLease, error) {
	r, ok := o.Obj.(*RawValue)
	if !ok {
		return EtcdLease{}, fmt.Errorf("%s is a %T", o.Key(), o.Obj)
	}
	id, err := strconv.ParseUint(r.Name, 16, 64)
	if err != nil {
		return EtcdLease{}, fmt.Errorf("lease name %q: %v", r.Name, err)
	}
	rd := reader{b: r.Value}
	l := EtcdLease{ID: int64(id), TTL: int64(rd.uvarint()), Deadline: rd.varint()}
	return l, rd.err
}

// LeaseKeys yields the raw keys attached to lease id in v.
func LeaseKeys(v Viewer, id int64) iter.Seq[*state.Object] {
	return func(yield func(*state.Object) bool) {
		v.Ascend(RawResource+"//", func(o *state.Object) bool {
			if o.Resource != RawResource {
				return false
			}
			if o.Obj.(*RawValue).Lease == id {
				return yield(o)
			}
			return true
		})
	}
}

// applyLease grants, renews or revokes an etcd lease. The deadline is the
// entry's append time on the leader plus the TTL, the same on every node.
func (f *FSM) applyLease(txn *state.Txn, l *raft.Log, cmd *Command, at int64) *Result {
	id := int64(cmd.LeaseID)
	k := state.Key{Resource: LeaseResource, Name: LeaseName(id)}
	cur := txn.Get(k)
	notFound := &Result{Err: &EtcdError{Message: "etcdserver: requested lease not found"}}
	put := func(ttl int64) *Result {
		b := binary.AppendUvarint(nil, uint64(ttl))
		b = binary.AppendVarint(b, at+ttl*1e9)
		r := &RawValue{ObjectMeta: metav1.ObjectMeta{Name: k.Name, ResourceVersion: strconv.FormatUint(l.Index, 10)}, Value: b}
		o := state.NewObject(LeaseResource, l.Index, r, nil)
		grow := f.storedSize(o)
		if cur == nil {
			o.CreateRV, o.KeyVersion = l.Index, 1
		} else {
			o.CreateRV, o.KeyVersion = cur.CreateRV, cur.KeyVersion+1
			grow = replaceGrowth(f.storedSize(cur), grow)
		}
		if err := admit(txn, l.Index, cmd, grow); err != nil {
			return &Result{Err: err}
		}
		txn.Put(o, cur, at)
		return &Result{Object: o}
	}
	switch cmd.Type {
	case CmdLeaseGrant:
		if cur != nil {
			return &Result{Err: &EtcdError{Message: "etcdserver: lease already exists"}}
		}
		return put(int64(cmd.TTL))
	case CmdLeaseKeepAlive:
		if cur == nil {
			return notFound
		}
		lease, err := LeaseOf(cur)
		if err != nil {
			panic(fmt.Sprintf("fsm: entry %d: %v", l.Index, err))
		}
		return put(lease.TTL)
	default: // CmdLeaseRevoke
		if cur == nil {
			return notFound
		}
		for range LeaseKeys(txn, id) {
			// Keys go first, one entry each (one event per index).
			return &Result{Err: &EtcdError{Message: LeaseHasKeys}}
		}
		tomb := newTombstone(cur, l.Index, cur.Obj.DeepCopyObject())
		tomb.Obj.(*RawValue).ResourceVersion = strconv.FormatUint(l.Index, 10)
		txn.Delete(tomb, cur, at)
		return &Result{}
	}
}
