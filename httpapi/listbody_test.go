package httpapi

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/registry"
)

// storedLeases are stored objects with what a list must carry through
// unchanged: labels and annotations that JSON escapes, managedFields,
// every spec field; each with its kind, as the FSM stores objects.
func storedLeases(n int) []*state.Object {
	var objs []*state.Object
	for i := range n {
		holder := fmt.Sprintf("holder-<%d>&ü", i)
		dur, transitions := int32(15+i), int32(i)
		now := metav1.NewMicroTime(time.Date(2026, 11, 23, 3, 4, 5, 123456000, time.UTC))
		l := &coordinationv1.Lease{
			TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("lease-%d", i), Namespace: "ns", UID: "uid-1",
				ResourceVersion:   fmt.Sprint(100 + i),
				CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)),
				Labels:            map[string]string{"app": "a<b>", "tier": "x&y"},
				Annotations:       map[string]string{"note": "\u2028 line \"quoted\""},
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}}`)},
				}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now, LeaseTransitions: &transitions},
		}
		objs = append(objs, state.NewObject("leases", uint64(100+i), l, nil))
	}
	return objs
}

// TestListBodyMatchesSerializer: a list streamed from its items is, byte
// for byte, what the serializer writes for the whole list, in JSON and in
// protobuf, empty or not, with continue and remainingItemCount, its items
// encoded afresh (cached or not) or taken from the cache.
func TestListBodyMatchesSerializer(t *testing.T) {
	remaining := int64(7)
	metas := []metav1.ListMeta{
		{ResourceVersion: "42"},
		{ResourceVersion: "43", Continue: "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", RemainingItemCount: &remaining},
	}
	for _, media := range []string{mediaJSON, mediaProtobuf} {
		info, _ := serializerFor(media)
		out := output{info: info}
		for _, n := range []int{0, 1, 5} {
			for _, meta := range metas {
				st := state.New(state.DefaultConfig())
				objs := storedLeases(n)
				newList := func() runtime.Object {
					l := registry.Leases.NewList()
					l.(*coordinationv1.LeaseList).ListMeta = meta
					registry.Leases.SetItems(l, []runtime.Object{})
					return l
				}
				full := newList()
				registry.Leases.SetItems(full, registry.StoredItems(objs))
				want, err := out.encodeObject(full)
				if err != nil {
					t.Fatal(err)
				}
				for _, round := range []struct {
					name string
					enc  listEncoding
				}{
					{"uncached", func(*state.Object, int) ([]byte, error) { return nil, nil }},
					{"caching", func(o *state.Object, slot int) ([]byte, error) { return st.Encoding(o, slot, out.encodeObject) }},
					{"cached", func(o *state.Object, slot int) ([]byte, error) { return st.CachedEncoding(o, slot), nil }},
				} {
					rec := httptest.NewRecorder()
					started, err := streamList(rec, out, registry.Leases, newList(), objs, round.enc)
					if !started || err != nil {
						t.Fatalf("%s, %d items, %s: started %v, %v", media, n, round.name, started, err)
					}
					if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
						t.Fatalf("%s, %d items, continue %q, %s:\n got %q\nwant %q", media, n, meta.Continue, round.name, got, want)
					}
					if ct := rec.Header().Get("Content-Type"); ct != media {
						t.Fatalf("%s: Content-Type %q", media, ct)
					}
				}
			}
		}
	}
}

// TestListBodyRefusesUnexpectedEncodings: when the items' encodings are
// not shaped as the list expects (without their kind, another kind, not
// protobuf), nothing is written and the caller encodes the list as usual.
func TestListBodyRefusesUnexpectedEncodings(t *testing.T) {
	objs := storedLeases(2)
	for _, tc := range []struct {
		media string
		enc   string
	}{
		{mediaJSON, `{"metadata":{"name":"lease-0"}}` + "\n"},
		{mediaJSON, `{"kind":"LeaseCandidate","apiVersion":"coordination.k8s.io/v1beta1","metadata":{}}` + "\n"},
		{mediaJSON, `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{}}`},
		{mediaProtobuf, "not a protobuf envelope"},
		{mediaProtobuf, "k8s\x00\x08\x01"},
	} {
		info, _ := serializerFor(tc.media)
		rec := httptest.NewRecorder()
		enc := func(*state.Object, int) ([]byte, error) { return []byte(tc.enc), nil }
		if started, _ := streamList(rec, output{info: info}, registry.Leases, registry.Leases.NewList(), objs, enc); started || rec.Body.Len() > 0 || rec.Header().Get("Content-Type") != "" {
			t.Errorf("%s %q: started %v, wrote %q", tc.media, tc.enc, started, rec.Body.String())
		}
	}
	// YAML has no cached encodings.
	info, _ := serializerFor(mediaYAML)
	if started, _ := streamList(httptest.NewRecorder(), output{info: info}, registry.Leases, registry.Leases.NewList(), objs, nil); started {
		t.Error("YAML list streamed")
	}
}

// TestListItemEncodingCachesSmallJSONLists: the JSON items of a list of
// up to listCacheItems are cached for the next reader; a larger list's,
// and protobuf items, are not, and what is cached is used either way.
func TestListItemEncodingCachesSmallJSONLists(t *testing.T) {
	jsonInfo, _ := serializerFor(mediaJSON)
	out := output{info: jsonInfo}
	st := state.New(state.DefaultConfig())
	objs := storedLeases(3)

	enc := listItemEncoding(st, out, listCacheItems+1)
	if b, err := enc(objs[0], state.EncodingJSON); b != nil || err != nil {
		t.Fatalf("large list: %q, %v; want nothing (the item encodes itself)", b, err)
	}
	if st.CachedEncoding(objs[0], state.EncodingJSON) != nil {
		t.Fatal("a large list's item was cached")
	}
	enc = listItemEncoding(st, out, listCacheItems)
	b, err := enc(objs[0], state.EncodingJSON)
	if err != nil || !bytes.HasPrefix(b, []byte(`{"kind":"Lease"`)) {
		t.Fatalf("small list: %q, %v", b, err)
	}
	if c := st.CachedEncoding(objs[0], state.EncodingJSON); !bytes.Equal(c, b) {
		t.Fatalf("small list: cached %q, want %q", c, b)
	}
	if b, _ := listItemEncoding(st, out, listCacheItems+1)(objs[0], state.EncodingJSON); b == nil {
		t.Fatal("a large list did not use the cached encoding")
	}
	if b, _ := enc(objs[1], state.EncodingProtobuf); b != nil || st.CachedEncoding(objs[1], state.EncodingProtobuf) != nil {
		t.Fatal("a protobuf item was encoded into the cache")
	}
}
