package httpapi

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/registry"
)

// A list of stored objects is written from the objects' cached encodings
// (state.Store.Encoding, shared with GET and every watcher) rather than
// encoded item by item again: encoding/json's reflection over 500 Leases
// took more of a node's CPU in the mixed workload (2 % of its requests
// are lists of 500) than decoding every renewal. The list around the
// items is encoded by the serializer as any list is, without items, and
// the items go in where the serializer would have put them; the bytes are
// the serializer's own (TestListBodyMatchesSerializer).

// encodedList is the body of list, whose items are the stored objects
// items, in out's format; false when out's format has no cached encodings
// or an encoding is not as expected (the caller then encodes the list as
// usual). list's items are left empty.
func encodedList(out output, res *registry.Resource, list runtime.Object, items []*state.Object,
	cached func(o *state.Object, slot int) ([]byte, error)) ([]byte, bool) {
	slot, ok := encodingSlot(out.info.MediaType)
	if !ok {
		return nil, false
	}
	res.SetItems(list, []runtime.Object{})
	shell, err := out.encodeObject(list)
	if err != nil {
		return nil, false
	}
	encoding := func(o *state.Object) ([]byte, error) { return cached(o, slot) }
	if slot == state.EncodingProtobuf {
		return protobufListBody(shell, items, encoding)
	}
	return jsonListBody(res, shell, items, encoding)
}

// jsonListBody puts the items into shell, a list encoded without items:
// {"kind":...,"metadata":{...},"items":[]} and a newline, items being
// the list type's last field. An object's cached encoding is the item
// with its kind and apiVersion in front; list items carry none.
func jsonListBody(res *registry.Resource, shell []byte, items []*state.Object, cached func(*state.Object) ([]byte, error)) ([]byte, bool) {
	const emptyItems = "[]}\n"
	if !bytes.HasSuffix(shell, []byte(emptyItems)) {
		return nil, false
	}
	typeMeta := []byte(`{"kind":"` + res.Kind + `","apiVersion":"` + res.GroupVersion().String() + `",`)
	body := make([]byte, 0, len(shell)+len(items)*1024)
	body = append(body, shell[:len(shell)-len(emptyItems)]...)
	body = append(body, '[')
	for i, o := range items {
		enc, err := cached(o)
		if err != nil {
			return nil, false
		}
		item, ok := bytes.CutPrefix(enc, typeMeta)
		if !ok || !bytes.HasSuffix(item, []byte("}\n")) {
			return nil, false
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, '{')
		body = append(body, item[:len(item)-1]...)
	}
	return append(body, "]}\n"...), true
}

// protobufListBody puts the items into shell, a list encoded without
// items: the protobuf magic, then runtime.Unknown{typeMeta = 1, raw = 2,
// contentEncoding = 3, contentType = 4} whose raw is the list message
// {metadata = 1, items = 2 (repeated)}. An object's cached encoding is the
// same envelope around the item's message.
func protobufListBody(shell []byte, items []*state.Object, cached func(*state.Object) ([]byte, error)) ([]byte, bool) {
	fields, ok := envelopeFields(shell)
	if !ok || fields[2] == nil {
		return nil, false
	}
	raw := append(make([]byte, 0, len(fields[2])+len(items)*512), fields[2]...)
	for _, o := range items {
		enc, err := cached(o)
		if err != nil {
			return nil, false
		}
		f, ok := envelopeFields(enc)
		if !ok || f[2] == nil {
			return nil, false
		}
		raw = protowire.AppendTag(raw, 2, protowire.BytesType)
		raw = protowire.AppendBytes(raw, f[2])
	}
	body := make([]byte, 0, len(shell)+len(raw))
	body = append(body, protobufMagic...)
	for num := protowire.Number(1); num <= 4; num++ {
		v := fields[num]
		if num == 2 {
			v = raw
		}
		if v == nil {
			continue
		}
		body = protowire.AppendTag(body, num, protowire.BytesType)
		body = protowire.AppendBytes(body, v)
	}
	return body, true
}

// storedItems is the objects of stored, as list items.
func storedItems(stored []*state.Object) []runtime.Object {
	items := make([]runtime.Object, len(stored))
	for i, o := range stored {
		items[i] = o.Obj
	}
	return items
}

// protobufMagic starts every Kubernetes protobuf encoding.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// envelopeFields splits a protobuf encoding into the fields 1 to 4 of its
// runtime.Unknown, each length-delimited and present at most once, in
// order; absent ones are nil.
func envelopeFields(b []byte) (fields [5][]byte, ok bool) {
	b, ok = bytes.CutPrefix(b, protobufMagic)
	if !ok {
		return fields, false
	}
	last := protowire.Number(0)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num <= last || num > 4 {
			return fields, false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fields, false
		}
		fields[num], b, last = v, b[n:], num
		if fields[num] == nil {
			fields[num] = []byte{}
		}
	}
	return fields, true
}
