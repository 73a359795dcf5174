package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/registry"
)

// A list of stored objects is streamed item by item, as kube-apiserver's
// streaming collection encoders do: the list around the items is encoded
// by the serializer as any list is, without items, and each item goes
// where the serializer would have put it, from the encoding cached with
// the object (shared with GET and every watcher) when there is one. The
// bytes are the serializer's own (TestListBodyMatchesSerializer). Encoding
// the whole list in one buffer made every full list of 100,000 Leases
// (an informer's first list) hold a copy of the items and their encoding
// at once, so every concurrent full list added about the store's size to
// the node's memory; streamed, a list holds no more than its write buffer.
// Encoding each item with encoding/json's reflection again was a large
// share of a follower's CPU in the mixed workload, whose lists of 500
// mostly find their items cached (docs/performance.md, "Mixed").

// listCacheItems bounds the lists whose JSON items are added to the
// encoding cache when not in it: a larger list would only push out, item
// by item, what the cache holds for watchers and other readers.
const listCacheItems = 2000

// listEncoding is an item's encoding in the slot's format, cached or not.
type listEncoding func(o *state.Object, slot int) ([]byte, error)

// writeStoredList answers with list, whose items are the stored objects
// items and which holds none of them itself. It returns false, having
// written nothing, when out's format is neither JSON nor protobuf or the
// items' encodings are not as expected; the caller then encodes the list
// as usual.
func (s *Server) writeStoredList(w http.ResponseWriter, out output, res *registry.Resource, list runtime.Object, items []*state.Object) bool {
	started, err := streamList(w, out, res, list, items, listItemEncoding(s.node.State(), out, len(items)))
	if err != nil && started {
		// The status line is out: all that is left is to stop. Usually
		// the client went away.
		s.logger.Debug("list stopped", "error", err)
		panic(http.ErrAbortHandler)
	}
	return started
}

// listItemEncoding takes an item's encoding from st's cache; a JSON one
// not cached is encoded and cached when the list has at most
// listCacheItems items. Otherwise it is nil: the item encodes itself.
// Protobuf items are cheap to encode and are not cached.
func listItemEncoding(st *state.Store, out output, items int) listEncoding {
	return func(o *state.Object, slot int) ([]byte, error) {
		if b := st.CachedEncoding(o, slot); b != nil {
			return b, nil
		}
		if slot == state.EncodingJSON && items <= listCacheItems {
			return st.Encoding(o, slot, out.encodeObject)
		}
		return nil, nil
	}
}

// streamList writes list with items in out's format to w, taking each
// item's encoding from enc when it has one. started is false, and nothing
// was written, when out's format is neither JSON nor protobuf or the list
// could not be encoded.
func streamList(w http.ResponseWriter, out output, res *registry.Resource, list runtime.Object, items []*state.Object, enc listEncoding) (started bool, err error) {
	slot, ok := encodingSlot(out.info.MediaType)
	if !ok {
		return false, nil
	}
	shell, err := out.encodeObject(list)
	if err != nil {
		return false, nil
	}
	if slot == state.EncodingProtobuf {
		return streamProtobufList(w, out, shell, items, enc)
	}
	return streamJSONList(w, out, res, shell, items, enc)
}

// streamJSONList puts the items into shell, the list encoded without
// items: {"kind":...,"metadata":{...},"items":[]} and a newline, items
// being a list type's last field. A stored object's JSON encoding is the
// item with its kind and apiVersion in front (the FSM stores objects with
// them); list items carry none.
func streamJSONList(w http.ResponseWriter, out output, res *registry.Resource, shell []byte, items []*state.Object, enc listEncoding) (bool, error) {
	const emptyItems = "[]}\n"
	head, ok := bytes.CutSuffix(shell, []byte(emptyItems))
	if !ok {
		return false, nil
	}
	typeMeta := []byte(`{"kind":"` + res.Kind + `","apiVersion":"` + res.GroupVersion().String() + `",`)
	// An item not cached is encoded into one buffer, reused: it is
	// written out before the next is encoded.
	var fresh bytes.Buffer
	item := func(o *state.Object) ([]byte, error) {
		b, err := enc(o, state.EncodingJSON)
		if err == nil && b == nil {
			fresh.Reset()
			err = out.info.Serializer.Encode(o.Obj, &fresh)
			b = fresh.Bytes()
		}
		if err != nil {
			return nil, err
		}
		it, ok := bytes.CutPrefix(b, typeMeta)
		if !ok || !bytes.HasSuffix(it, []byte("}\n")) {
			return nil, fmt.Errorf("%s: encoding without its kind in front", o.Key())
		}
		return it[:len(it)-1], nil
	}
	// Items are stored alike: the first one tells whether they can be
	// written this way, before anything is.
	if len(items) > 0 {
		if _, err := item(items[0]); err != nil {
			return false, nil
		}
	}
	out.writeHeader(w, http.StatusOK)
	bw := newListWriter(w)
	defer putListWriter(bw)
	bw.Write(head)
	bw.WriteByte('[')
	for i, o := range items {
		it, err := item(o)
		if err != nil {
			return true, err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteByte('{')
		if _, err := bw.Write(it); err != nil {
			return true, err
		}
	}
	bw.WriteString("]}\n")
	return true, bw.Flush()
}

// streamProtobufList puts the items into shell, the list encoded without
// items: the protobuf magic, then runtime.Unknown{typeMeta = 1, raw = 2,
// contentEncoding = 3, contentType = 4} whose raw is the list message
// {metadata = 1, items = 2 (repeated)}. An item is its object's message:
// the one inside its cached encoding's envelope, or marshalled afresh.
// raw's length goes before it, so the items' sizes are added up first.
func streamProtobufList(w http.ResponseWriter, out output, shell []byte, items []*state.Object, enc listEncoding) (bool, error) {
	fields, ok := envelopeFields(shell)
	if !ok || fields[2] == nil {
		return false, nil
	}
	message := func(o *state.Object) ([]byte, error) {
		b, err := enc(o, state.EncodingProtobuf)
		if err != nil || b == nil {
			return nil, err
		}
		f, ok := envelopeFields(b)
		if !ok || f[2] == nil {
			return nil, fmt.Errorf("%s: cached encoding is not a protobuf envelope", o.Key())
		}
		return f[2], nil
	}
	rawSize := len(fields[2])
	for _, o := range items {
		m, err := message(o)
		if err != nil {
			return false, err
		}
		n := len(m)
		if m == nil {
			so, ok := o.Obj.(fsm.StoredObject)
			if !ok {
				return false, fmt.Errorf("%s: %T has no protobuf encoding", o.Key(), o.Obj)
			}
			n = so.Size()
		}
		rawSize += protowire.SizeTag(2) + protowire.SizeBytes(n)
	}

	out.writeHeader(w, http.StatusOK)
	bw := newListWriter(w)
	defer putListWriter(bw)
	bw.Write(protobufMagic)
	var b, buf []byte
	for num := protowire.Number(1); num <= 4; num++ {
		v := fields[num]
		if v == nil {
			continue
		}
		b = protowire.AppendTag(b[:0], num, protowire.BytesType)
		if num != 2 {
			bw.Write(protowire.AppendBytes(b, v))
			continue
		}
		b = protowire.AppendVarint(b, uint64(rawSize))
		bw.Write(b)
		bw.Write(v)
		for _, o := range items {
			m, err := message(o)
			if err != nil {
				return true, err
			}
			if m == nil {
				so := o.Obj.(fsm.StoredObject)
				n := so.Size()
				if cap(buf) < n {
					buf = make([]byte, 2*n)
				}
				if _, err := so.MarshalToSizedBuffer(buf[:n]); err != nil {
					return true, err
				}
				m = buf[:n]
			}
			b = protowire.AppendTag(b[:0], 2, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(len(m)))
			bw.Write(b)
			if _, err := bw.Write(m); err != nil {
				return true, err
			}
		}
	}
	return true, bw.Flush()
}

// listWriters are the buffers lists are streamed through, 64 KB each,
// reused rather than made for every list (the mixed workload answers 80
// lists a second).
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

func newListWriter(w io.Writer) *bufio.Writer {
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

func putListWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	listWriters.Put(bw)
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
