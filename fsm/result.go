package fsm

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/leasehold/leasehold/fsm/state"
)

// A Result travels from the leader to the node that sent it the command,
// in the layout of a command's payload: a uvarint field count, then per
// field a uvarint tag and a uvarint-length-prefixed value.
const (
	resTagCode      = 1 // state.ErrorCode of a refusal
	resTagResource  = 2 // the object's, or the refusal's key
	resTagNamespace = 3
	resTagName      = 4
	resTagRV        = 5  // the object's, or the stored object's in a refusal
	resTagUID       = 6  // a refusal's stored uid
	resTagObject    = 7  // the object's stored encoding (resourceVersion unset)
	resTagTxn       = 8  // an etcd txn's response
	resTagEtcdError = 9  // an etcd command's refusal
	resTagNoSpace   = 10 // a NoSpaceError: uvarint quota, stored, grow
)

// EncodeResult returns res as the leader sends it back.
func EncodeResult(res *Result) ([]byte, error) {
	var b []byte
	n := 0
	field := func(tag uint64, v []byte) {
		b = binary.AppendUvarint(b, tag)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
		n++
	}
	str := func(tag uint64, v string) {
		if v != "" {
			field(tag, []byte(v))
		}
	}
	num := func(tag, v uint64) {
		if v != 0 {
			b = binary.AppendUvarint(b, tag)
			b = binary.AppendUvarint(b, uint64(uvarintLen(v)))
			b = binary.AppendUvarint(b, v)
			n++
		}
	}
	if ee, ok := res.Err.(*EtcdError); ok {
		field(resTagEtcdError, []byte(ee.Message))
	} else if ns, ok := res.Err.(*NoSpaceError); ok {
		v := binary.AppendUvarint(nil, ns.Quota)
		v = binary.AppendUvarint(v, ns.Stored)
		field(resTagNoSpace, binary.AppendUvarint(v, ns.Grow))
	} else if se, ok := res.Err.(*state.Error); ok {
		num(resTagCode, uint64(se.Code))
		str(resTagResource, se.Key.Resource)
		str(resTagNamespace, se.Key.Namespace)
		str(resTagName, se.Key.Name)
		num(resTagRV, se.RV)
		str(resTagUID, se.UID)
	} else if res.Err != nil {
		return nil, fmt.Errorf("result error %T is not a state error", res.Err)
	}
	if res.Txn != nil {
		field(resTagTxn, res.Txn)
	}
	if o := res.Object; o != nil {
		str(resTagResource, o.Resource)
		num(resTagRV, o.RV)
		// Called concurrently (one per forwarded write): no shared copies.
		var err error
		if b, err = appendStored(binary.AppendUvarint(b, resTagObject), o, nil, true); err != nil {
			return nil, err
		}
		n++
	}
	return append(binary.AppendUvarint(nil, uint64(n)), b...), nil
}

// DecodeResult is EncodeResult's inverse. The object is decoded afresh:
// it is not the one this node stores.
func (f *FSM) DecodeResult(data []byte) (*Result, error) {
	var (
		code              uint64
		key               state.Key
		rv                uint64
		uid               string
		object            []byte
		resource, objResc string
		txn               []byte
		etcdErr           *EtcdError
		noSpace           *NoSpaceError
	)
	r := reader{b: data}
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		switch tag := r.uvarint(); tag {
		case resTagCode, resTagRV:
			inner := reader{b: r.bytes()}
			v := inner.uvarint()
			if inner.err != nil && r.err == nil {
				r.err = inner.err
			}
			if tag == resTagCode {
				code = v
			} else {
				rv = v
			}
		case resTagResource:
			resource = string(r.bytes())
		case resTagNamespace:
			key.Namespace = string(r.bytes())
		case resTagName:
			key.Name = string(r.bytes())
		case resTagUID:
			uid = string(r.bytes())
		case resTagObject:
			object = r.bytes()
			objResc = resource
		case resTagTxn:
			txn = r.bytes()
		case resTagEtcdError:
			etcdErr = &EtcdError{Message: string(r.bytes())}
		case resTagNoSpace:
			inner := reader{b: r.bytes()}
			noSpace = &NoSpaceError{Quota: inner.uvarint(), Stored: inner.uvarint(), Grow: inner.uvarint()}
			if inner.err != nil && r.err == nil {
				r.err = inner.err
			}
		default:
			r.bytes()
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode result: %w", r.err)
	}
	res := &Result{Txn: txn}
	if etcdErr != nil {
		res.Err = etcdErr
	}
	if noSpace != nil {
		res.Err = noSpace
	}
	if code != 0 {
		key.Resource = resource
		res.Err = &state.Error{Code: state.ErrorCode(code), Key: key, RV: rv, UID: uid}
	}
	if object != nil {
		newObj, ok := f.types[objResc]
		if !ok {
			return nil, fmt.Errorf("decode result: unknown resource %q", objResc)
		}
		o := newObj()
		if err := o.Unmarshal(object); err != nil {
			return nil, fmt.Errorf("decode result %s: %w", objResc, err)
		}
		o.SetResourceVersion(strconv.FormatUint(rv, 10))
		res.Object = state.NewObject(objResc, rv, o, nil)
	}
	return res, nil
}
