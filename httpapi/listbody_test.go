package httpapi

import (
	"bytes"
	"fmt"
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
		objs = append(objs, &state.Object{Key: state.Key{Resource: "leases", Namespace: "ns", Name: l.Name}, RV: uint64(100 + i), Obj: l})
	}
	return objs
}

// TestListBodyMatchesSerializer: a list written from its items' cached
// encodings is, byte for byte, what the serializer writes for the whole
// list, in JSON and in protobuf, empty or not, with continue and
// remainingItemCount, encoded afresh or from the cache.
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
					return l
				}
				full := newList()
				registry.Leases.SetItems(full, storedItems(objs))
				want, err := out.encodeObject(full)
				if err != nil {
					t.Fatal(err)
				}
				for _, round := range []string{"fresh", "cached"} {
					cached := func(o *state.Object, slot int) ([]byte, error) { return st.Encoding(o, slot, out.encodeObject) }
					got, ok := encodedList(out, registry.Leases, newList(), objs, cached)
					if !ok {
						t.Fatalf("%s, %d items, %s: not written from the encodings", media, n, round)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%s, %d items, continue %q, %s:\n got %q\nwant %q", media, n, meta.Continue, round, got, want)
					}
				}
			}
		}
	}
}

// TestListBodyRefusesUnexpectedEncodings: an encoding not shaped as the
// list expects (without its kind, another kind, not protobuf) is not
// spliced in: the caller encodes the list as usual.
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
		out := output{info: info}
		cached := func(*state.Object, int) ([]byte, error) { return []byte(tc.enc), nil }
		if got, ok := encodedList(out, registry.Leases, registry.Leases.NewList(), objs, cached); ok {
			t.Errorf("%s %q: wrote %q", tc.media, tc.enc, got)
		}
	}
	// YAML has no cached encodings.
	info, _ := serializerFor(mediaYAML)
	if _, ok := encodedList(output{info: info}, registry.Leases, registry.Leases.NewList(), objs, nil); ok {
		t.Error("YAML list written from cached encodings")
	}
}
