package v1alpha1

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

const protobufMediaType = "application/vnd.kubernetes.protobuf"

var (
	pingTime  = metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, 0, 123456000, time.UTC))
	renewTime = metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, 5, 1000, time.UTC))
)

func strategies(s ...string) []coordinationv1.CoordinatedLeaseStrategy {
	out := make([]coordinationv1.CoordinatedLeaseStrategy, len(s))
	for i := range s {
		out[i] = coordinationv1.CoordinatedLeaseStrategy(s[i])
	}
	return out
}

func fullCandidate() *LeaseCandidate {
	return &LeaseCandidate{
		TypeMeta: metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: "coordination.k8s.io/v1alpha1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-apiserver-a", Namespace: "kube-system", UID: "9b1e0a0e-1d2c-4c61-8c59-0d1a5e2f6a01",
			ResourceVersion: "42", Labels: map[string]string{"app": "x"},
			Annotations:       map[string]string{"note": "y"},
			CreationTimestamp: metav1.NewTime(time.Date(2024, 7, 1, 9, 0, 0, 0, time.UTC)),
		},
		Spec: LeaseCandidateSpec{
			LeaseName:           "kube-apiserver",
			PingTime:            &pingTime,
			RenewTime:           &renewTime,
			BinaryVersion:       "1.31.0",
			EmulationVersion:    "1.30.0",
			PreferredStrategies: strategies("OldestEmulationVersion", "example.com/other", "example.com/third"),
		},
	}
}

func localScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := coordinationv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

type wireField struct {
	num protowire.Number
	val []byte // value of a length-delimited field
}

// readFields is an independent protowire reader: it returns the top-level
// fields of b in order, requiring each to be length-delimited.
func readFields(t *testing.T, b []byte) []wireField {
	t.Helper()
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			t.Fatalf("field %d: wire type %d, want bytes", num, typ)
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, wireField{num, v})
	}
	return out
}

func mustMarshal(t *testing.T, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkFields(t *testing.T, got, want []wireField) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d fields %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i].num != want[i].num || !bytes.Equal(got[i].val, want[i].val) {
			t.Errorf("field [%d]: got %d=%q, want %d=%q", i, got[i].num, got[i].val, want[i].num, want[i].val)
		}
	}
}

func TestProtoWireFormat(t *testing.T) {
	zero := metav1.MicroTime{}
	cases := []struct {
		name string
		spec LeaseCandidateSpec
		want func(t *testing.T) []wireField
	}{{
		name: "all fields, three strategies in order",
		spec: fullCandidate().Spec,
		want: func(t *testing.T) []wireField {
			return []wireField{
				{1, []byte("kube-apiserver")},
				{2, mustMarshal(t, &pingTime)},
				{3, mustMarshal(t, &renewTime)},
				{4, []byte("1.31.0")},
				{5, []byte("1.30.0")},
				{6, []byte("OldestEmulationVersion")},
				{6, []byte("example.com/other")},
				{6, []byte("example.com/third")},
			}
		},
	}, {
		// The generated code writes non-pointer strings even when empty and
		// nothing for a nil pointer or an empty repeated field.
		name: "empty spec",
		spec: LeaseCandidateSpec{},
		want: func(t *testing.T) []wireField {
			return []wireField{{1, []byte{}}, {4, []byte{}}, {5, []byte{}}}
		},
	}, {
		name: "renewTime only, zero pingTime pointer",
		spec: LeaseCandidateSpec{LeaseName: "l", PingTime: &zero, RenewTime: &renewTime},
		want: func(t *testing.T) []wireField {
			return []wireField{{1, []byte("l")}, {2, []byte{}}, {3, mustMarshal(t, &renewTime)}, {4, []byte{}}, {5, []byte{}}}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fullCandidate()
			obj.Spec = tc.spec
			b := mustMarshal(t, obj)
			if len(b) != obj.Size() {
				t.Errorf("Marshal wrote %d bytes, Size says %d", len(b), obj.Size())
			}
			top := readFields(t, b)
			checkFields(t, top, []wireField{
				{1, mustMarshal(t, &obj.ObjectMeta)},
				{2, mustMarshal(t, &obj.Spec)},
			})
			checkFields(t, readFields(t, top[1].val), tc.want(t))

			var back LeaseCandidate
			if err := back.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			obj.TypeMeta = metav1.TypeMeta{} // not part of the message
			if !apiequality.Semantic.DeepEqual(&back, obj) {
				t.Errorf("round trip:\n got %#v\nwant %#v", back, obj)
			}
		})
	}
}

// TestProtoMatchesGeneratedV1beta1 checks the hand-written encoding against
// gogo-generated code: v1beta1.LeaseCandidateSpec has the same field numbers
// 1-5, and its field 6 (strategy, a single string) has the wire form of a
// one-element preferredStrategies.
func TestProtoMatchesGeneratedV1beta1(t *testing.T) {
	for _, strategy := range []string{"OldestEmulationVersion", "example.com/x"} {
		a := fullCandidate()
		a.Spec.PreferredStrategies = strategies(strategy)
		b := &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: *a.ObjectMeta.DeepCopy(),
			Spec: coordinationv1beta1.LeaseCandidateSpec{
				LeaseName: a.Spec.LeaseName, PingTime: a.Spec.PingTime, RenewTime: a.Spec.RenewTime,
				BinaryVersion: a.Spec.BinaryVersion, EmulationVersion: a.Spec.EmulationVersion,
				Strategy: coordinationv1.CoordinatedLeaseStrategy(strategy),
			},
		}
		ab, bb := mustMarshal(t, a), mustMarshal(t, b)
		if !bytes.Equal(ab, bb) {
			t.Fatalf("strategy %q: v1alpha1 encoding differs from generated v1beta1 encoding:\n%x\n%x", strategy, ab, bb)
		}
		// And the generated decoder reads ours, ours reads the generated one.
		var fromA coordinationv1beta1.LeaseCandidate
		if err := fromA.Unmarshal(ab); err != nil {
			t.Fatal(err)
		}
		if string(fromA.Spec.Strategy) != strategy || fromA.Spec.LeaseName != a.Spec.LeaseName || !fromA.Spec.PingTime.Equal(a.Spec.PingTime) {
			t.Errorf("generated decoder read %+v", fromA.Spec)
		}
		var fromB LeaseCandidate
		if err := fromB.Unmarshal(bb); err != nil {
			t.Fatal(err)
		}
		a.TypeMeta = metav1.TypeMeta{}
		if !apiequality.Semantic.DeepEqual(&fromB, a) {
			t.Errorf("decoding generated bytes:\n got %#v\nwant %#v", fromB, a)
		}
	}
}

func TestProtoListWireFormat(t *testing.T) {
	a, b := fullCandidate(), fullCandidate()
	b.Name, b.Spec.PreferredStrategies = "b", nil
	list := &LeaseCandidateList{
		ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "c"},
		Items:    []LeaseCandidate{*a, *b},
	}
	raw := mustMarshal(t, list)
	checkFields(t, readFields(t, raw), []wireField{
		{1, mustMarshal(t, &list.ListMeta)},
		{2, mustMarshal(t, a)},
		{2, mustMarshal(t, b)},
	})
	var back LeaseCandidateList
	if err := back.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		list.Items[i].TypeMeta = metav1.TypeMeta{}
	}
	if !apiequality.Semantic.DeepEqual(&back, list) {
		t.Errorf("list round trip:\n got %#v\nwant %#v", back, list)
	}
	// An empty list is its (empty) ListMeta only.
	checkFields(t, readFields(t, mustMarshal(t, &LeaseCandidateList{})), []wireField{{1, mustMarshal(t, &metav1.ListMeta{})}})
}

func TestProtoSerializerRoundTrip(t *testing.T) {
	s := localScheme(t)
	for _, streaming := range []bool{false, true} {
		var opts []serializer.CodecFactoryOptionsMutator
		if streaming {
			opts = append(opts, serializer.WithStreamingCollectionEncodingToProtobuf())
		}
		codecs := serializer.NewCodecFactory(s, opts...)
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), protobufMediaType)
		if !ok {
			t.Fatal("no protobuf serializer")
		}
		b := fullCandidate()
		b.Name, b.Spec.PreferredStrategies = "b", strategies("example.com/only")
		objects := []runtime.Object{
			fullCandidate(),
			&LeaseCandidate{TypeMeta: metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: "coordination.k8s.io/v1alpha1"}},
			&LeaseCandidateList{
				TypeMeta: metav1.TypeMeta{Kind: "LeaseCandidateList", APIVersion: "coordination.k8s.io/v1alpha1"},
				ListMeta: metav1.ListMeta{ResourceVersion: "9"},
				Items:    []LeaseCandidate{*fullCandidate(), *b},
			},
		}
		for _, obj := range objects {
			var buf bytes.Buffer
			if err := info.Serializer.Encode(obj, &buf); err != nil {
				t.Fatalf("streaming=%v: encode %T: %v", streaming, obj, err)
			}
			data := buf.Bytes()
			if !bytes.HasPrefix(data, []byte("k8s\x00")) {
				t.Fatalf("missing protobuf prefix: %q", data[:min(8, len(data))])
			}
			// The envelope is a runtime.Unknown naming the v1alpha1 kind and
			// holding exactly the object's Marshal output.
			var unk runtime.Unknown
			if err := unk.Unmarshal(data[4:]); err != nil {
				t.Fatal(err)
			}
			gvk := obj.GetObjectKind().GroupVersionKind()
			if unk.APIVersion != "coordination.k8s.io/v1alpha1" || unk.Kind != gvk.Kind {
				t.Errorf("envelope type %q %q", unk.APIVersion, unk.Kind)
			}
			if want := mustMarshal(t, obj.(interface{ Marshal() ([]byte, error) })); !bytes.Equal(unk.Raw, want) {
				t.Errorf("streaming=%v %T: envelope raw differs from Marshal:\n%x\n%x", streaming, obj, unk.Raw, want)
			}

			got, gotGVK, err := info.Serializer.Decode(data, nil, nil)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if *gotGVK != gvk {
				t.Errorf("decoded gvk %v, want %v", gotGVK, gvk)
			}
			want := obj.DeepCopyObject()
			if l, ok := want.(*LeaseCandidateList); ok {
				for i := range l.Items {
					l.Items[i].TypeMeta = metav1.TypeMeta{}
				}
			}
			if !apiequality.Semantic.DeepEqual(got, want) {
				t.Errorf("streaming=%v: round trip:\n got %#v\nwant %#v", streaming, got, want)
			}
		}
	}
}

func TestProtoUnmarshalEdgeCases(t *testing.T) {
	spec := LeaseCandidateSpec{LeaseName: "l", PreferredStrategies: strategies("a")}
	good := mustMarshal(t, &spec)

	var withUnknown []byte
	withUnknown = protowire.AppendTag(withUnknown, 99, protowire.VarintType)
	withUnknown = protowire.AppendVarint(withUnknown, 7)
	withUnknown = append(withUnknown, good...)
	withUnknown = protowire.AppendTag(withUnknown, 100, protowire.BytesType)
	withUnknown = protowire.AppendString(withUnknown, "ignored")
	withUnknown = protowire.AppendTag(withUnknown, 101, protowire.Fixed32Type)
	withUnknown = protowire.AppendFixed32(withUnknown, 1)

	wrongType := protowire.AppendTag(nil, fieldLeaseName, protowire.VarintType)
	wrongType = protowire.AppendVarint(wrongType, 1)

	cases := []struct {
		name    string
		data    []byte
		want    *LeaseCandidateSpec
		wantErr string
	}{
		{name: "unknown fields are skipped", data: withUnknown, want: &spec},
		{name: "empty input", data: nil, want: &LeaseCandidateSpec{}},
		{name: "truncated value", data: good[:len(good)-1], wantErr: "LeaseCandidateSpec"},
		{name: "truncated length", data: []byte{0x0a}, wantErr: "LeaseCandidateSpec"},
		{name: "wrong wire type", data: wrongType, wantErr: "wrong wireType = 0 for field LeaseName"},
		{name: "field number zero", data: []byte{0x02, 0x00}, wantErr: "LeaseCandidateSpec"},
		{name: "end group without start", data: protowire.AppendTag(nil, 9, protowire.EndGroupType), wantErr: "LeaseCandidateSpec"},
		{name: "bad MicroTime", data: append(protowire.AppendTag(nil, fieldPingTime, protowire.BytesType), 1, 0xff), wantErr: "EOF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got LeaseCandidateSpec
			err := got.Unmarshal(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(&got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}

	// Unmarshal merges, as protobuf does: repeated fields append, scalars
	// are overwritten. Reset clears.
	var m LeaseCandidateSpec
	if err := m.Unmarshal(good); err != nil {
		t.Fatal(err)
	}
	if err := m.Unmarshal(mustMarshal(t, &LeaseCandidateSpec{LeaseName: "m", PreferredStrategies: strategies("b")})); err != nil {
		t.Fatal(err)
	}
	if m.LeaseName != "m" || !reflect.DeepEqual(m.PreferredStrategies, strategies("a", "b")) {
		t.Errorf("merge: %#v", m)
	}
	m.Reset()
	if !reflect.DeepEqual(m, LeaseCandidateSpec{}) {
		t.Errorf("Reset left %#v", m)
	}
}

func TestMarshalToBuffers(t *testing.T) {
	obj := fullCandidate()
	want := mustMarshal(t, obj)
	size := obj.Size()

	buf := bytes.Repeat([]byte{0xee}, size+5)
	n, err := obj.MarshalTo(buf)
	if err != nil || n != size || !bytes.Equal(buf[:n], want) || !bytes.Equal(buf[n:], bytes.Repeat([]byte{0xee}, 5)) {
		t.Errorf("MarshalTo: n=%d err=%v", n, err)
	}
	buf = bytes.Repeat([]byte{0xee}, size+5)
	n, err = obj.MarshalToSizedBuffer(buf)
	if err != nil || n != size || !bytes.Equal(buf[5:], want) || !bytes.Equal(buf[:5], bytes.Repeat([]byte{0xee}, 5)) {
		t.Errorf("MarshalToSizedBuffer: n=%d err=%v", n, err)
	}
	if _, err := obj.MarshalTo(make([]byte, size-1)); err == nil {
		t.Error("MarshalTo into a short buffer succeeded")
	}
	if _, err := obj.MarshalToSizedBuffer(make([]byte, size-1)); err == nil {
		t.Error("MarshalToSizedBuffer into a short buffer succeeded")
	}
	if (*LeaseCandidate)(nil).Size() != 0 || (*LeaseCandidateList)(nil).Size() != 0 || (*LeaseCandidateSpec)(nil).Size() != 0 {
		t.Error("nil Size is not 0")
	}
	if s := obj.String(); !strings.Contains(s, "PreferredStrategies:[OldestEmulationVersion example.com/other example.com/third]") || !strings.HasPrefix(s, "&LeaseCandidate{ObjectMeta:ObjectMeta{Name:kube-apiserver-a,") {
		t.Errorf("String() = %s", s)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	s := localScheme(t)
	codecs := serializer.NewCodecFactory(s)
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	cases := []struct {
		name string
		in   string
		want *LeaseCandidate
	}{{
		name: "all fields",
		in: `{"kind":"LeaseCandidate","apiVersion":"coordination.k8s.io/v1alpha1","metadata":{"name":"a","namespace":"ns"},` +
			`"spec":{"leaseName":"kube-apiserver","pingTime":"2024-07-01T10:00:00.123456Z","renewTime":"2024-07-01T10:00:05.000001Z",` +
			`"binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":["OldestEmulationVersion","example.com/other","example.com/third"]}}`,
		want: &LeaseCandidate{
			TypeMeta:   metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: "coordination.k8s.io/v1alpha1"},
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"},
			Spec: LeaseCandidateSpec{
				LeaseName: "kube-apiserver", PingTime: &pingTime, RenewTime: &renewTime,
				BinaryVersion: "1.31.0", EmulationVersion: "1.30.0",
				PreferredStrategies: strategies("OldestEmulationVersion", "example.com/other", "example.com/third"),
			},
		},
	}, {
		// leaseName has no omitempty; everything else in the spec does.
		name: "empty spec",
		in:   `{"kind":"LeaseCandidate","apiVersion":"coordination.k8s.io/v1alpha1","metadata":{"name":"a"},"spec":{"leaseName":""}}`,
		want: &LeaseCandidate{
			TypeMeta:   metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: "coordination.k8s.io/v1alpha1"},
			ObjectMeta: metav1.ObjectMeta{Name: "a"},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := info.Serializer.Decode([]byte(tc.in), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("decoded:\n got %#v\nwant %#v", got, tc.want)
			}
			var buf bytes.Buffer
			if err := info.Serializer.Encode(got, &buf); err != nil {
				t.Fatal(err)
			}
			if out := strings.TrimSpace(buf.String()); out != tc.in {
				t.Errorf("re-encoded:\n got %s\nwant %s", out, tc.in)
			}
		})
	}
}

// TestStrategicMergePatchReplacesPreferredStrategies: the list has no patch
// tags, so strategic merge patch treats it as atomic (+listType=atomic).
func TestStrategicMergePatchReplacesPreferredStrategies(t *testing.T) {
	original := `{"metadata":{"name":"a"},"spec":{"leaseName":"l","preferredStrategies":["A","B","C"]}}`
	cases := []struct {
		name, patch, want string
	}{
		{"shorter list", `{"spec":{"preferredStrategies":["C"]}}`, `["C"]`},
		{"reordered list", `{"spec":{"preferredStrategies":["C","A","B"]}}`, `["C","A","B"]`},
		{"new element", `{"spec":{"preferredStrategies":["D","A"]}}`, `["D","A"]`},
		{"null removes", `{"spec":{"preferredStrategies":null}}`, ``},
		{"other field leaves list", `{"spec":{"binaryVersion":"1.31.0"}}`, `["A","B","C"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := strategicpatch.StrategicMergePatch([]byte(original), []byte(tc.patch), LeaseCandidate{})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Spec struct {
					LeaseName           string          `json:"leaseName"`
					PreferredStrategies json.RawMessage `json:"preferredStrategies"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Spec.PreferredStrategies) != tc.want || got.Spec.LeaseName != "l" {
				t.Errorf("patched: %s, want preferredStrategies %s", out, tc.want)
			}
		})
	}

	// A two-way patch (kubectl edit/apply) carries the whole new list.
	modified := `{"metadata":{"name":"a"},"spec":{"leaseName":"l","preferredStrategies":["A","C"]}}`
	patch, err := strategicpatch.CreateTwoWayMergePatch([]byte(original), []byte(modified), LeaseCandidate{})
	if err != nil {
		t.Fatal(err)
	}
	if string(patch) != `{"spec":{"preferredStrategies":["A","C"]}}` {
		t.Errorf("two-way patch = %s", patch)
	}

	// The lookup strategicpatch uses finds no merge strategy for the field.
	meta, err := strategicpatch.NewPatchMetaFromStruct(LeaseCandidate{})
	if err != nil {
		t.Fatal(err)
	}
	specMeta, _, err := meta.LookupPatchMetadataForStruct("spec")
	if err != nil {
		t.Fatal(err)
	}
	_, pm, err := specMeta.LookupPatchMetadataForSlice("preferredStrategies")
	if err != nil {
		t.Fatal(err)
	}
	// (an absent patchStrategy tag reads as the single strategy "")
	if st := pm.GetPatchStrategies(); len(st) > 1 || (len(st) == 1 && st[0] != "") || pm.GetPatchMergeKey() != "" {
		t.Errorf("preferredStrategies has patch strategies %q, merge key %q", pm.GetPatchStrategies(), pm.GetPatchMergeKey())
	}
}

func TestSchemeRegistration(t *testing.T) {
	s := localScheme(t)
	for _, tc := range []struct {
		obj  runtime.Object
		kind string
	}{{&LeaseCandidate{}, "LeaseCandidate"}, {&LeaseCandidateList{}, "LeaseCandidateList"}} {
		gvks, _, err := s.ObjectKinds(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		want := schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1alpha1", Kind: tc.kind}
		if len(gvks) != 1 || gvks[0] != want {
			t.Errorf("%T: kinds %v, want %v", tc.obj, gvks, want)
		}
	}
	// metav1.AddToGroupVersion registered the option types and WatchEvent.
	for _, kind := range []string{"ListOptions", "GetOptions", "DeleteOptions", "WatchEvent"} {
		if !s.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered for %v", kind, SchemeGroupVersion)
		}
	}
	if got := Resource("leasecandidates"); got != (schema.GroupResource{Group: "coordination.k8s.io", Resource: "leasecandidates"}) {
		t.Errorf("Resource = %v", got)
	}
}

func TestDeepCopy(t *testing.T) {
	orig := fullCandidate()
	c := orig.DeepCopyObject().(*LeaseCandidate)
	if !reflect.DeepEqual(c, orig) {
		t.Fatal("copy differs")
	}
	c.Spec.PreferredStrategies[0] = "changed"
	c.Spec.PingTime.Time = time.Time{}
	c.Labels["app"] = "changed"
	if want := fullCandidate(); !reflect.DeepEqual(orig, want) {
		t.Errorf("mutating the copy changed the original: %#v", orig.Spec)
	}

	list := &LeaseCandidateList{Items: []LeaseCandidate{*fullCandidate()}}
	lc := list.DeepCopyObject().(*LeaseCandidateList)
	lc.Items[0].Spec.PreferredStrategies[1] = "changed"
	if list.Items[0].Spec.PreferredStrategies[1] != "example.com/other" {
		t.Error("list copy shares items")
	}
	if (*LeaseCandidate)(nil).DeepCopy() != nil || (*LeaseCandidateList)(nil).DeepCopy() != nil || (*LeaseCandidateSpec)(nil).DeepCopy() != nil {
		t.Error("nil DeepCopy is not nil")
	}
	empty := (&LeaseCandidateSpec{}).DeepCopy()
	if empty.PreferredStrategies != nil || empty.PingTime != nil {
		t.Error("copy of nil fields is not nil")
	}
}

// TestProtoGoldenBytes compares the encoding with bytes produced by the
// gogo-generated Marshal of k8s.io/api v0.31.0 (coordination/v1alpha1) and
// apimachinery v0.31.0 for the same objects, and decodes those bytes.
func TestProtoGoldenBytes(t *testing.T) {
	p := metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, 0, 123456000, time.UTC))
	r := metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, 5, 1000, time.UTC))
	objs := []LeaseCandidate{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: LeaseCandidateSpec{
			LeaseName: "kube-apiserver", PingTime: &p, RenewTime: &r, BinaryVersion: "1.31.0", EmulationVersion: "1.30.0",
			PreferredStrategies: strategies("OldestEmulationVersion", "example.com/other", "example.com/third"),
		}},
		{},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: LeaseCandidateSpec{LeaseName: "l", PingTime: &metav1.MicroTime{}}},
	}
	golden := []string{
		"0a130a016112001a026e7322002a0032003800420012760a0e6b7562652d617069736572766572120b08a0fc89b406108094ef3a1a0908a5fc89b40610e8072206312e33312e302a06312e33302e3032164f6c64657374456d756c6174696f6e56657273696f6e32116578616d706c652e636f6d2f6f7468657232116578616d706c652e636f6d2f7468697264",
		"0a100a0012001a0022002a0032003800420012060a0022002a00",
		"0a110a016212001a0022002a0032003800420012090a016c120022002a00",
	}
	goldenList := "0a070a001201391a00128d010a130a016112001a026e7322002a0032003800420012760a0e6b7562652d617069736572766572120b08a0fc89b406108094ef3a1a0908a5fc89b40610e8072206312e33312e302a06312e33302e3032164f6c64657374456d756c6174696f6e56657273696f6e32116578616d706c652e636f6d2f6f7468657232116578616d706c652e636f6d2f7468697264121a0a100a0012001a0022002a0032003800420012060a0022002a00121e0a110a016212001a0022002a0032003800420012090a016c120022002a00"

	check := func(name string, m interface{ Marshal() ([]byte, error) }, want string, into interface{ Unmarshal([]byte) error }) {
		t.Helper()
		if got := hex.EncodeToString(mustMarshal(t, m)); got != want {
			t.Errorf("%s: encoding\n got %s\nwant %s", name, got, want)
		}
		raw, _ := hex.DecodeString(want)
		if err := into.Unmarshal(raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !apiequality.Semantic.DeepEqual(into, m) {
			t.Errorf("%s: decoding golden bytes:\n got %#v\nwant %#v", name, into, m)
		}
	}
	for i := range objs {
		check(fmt.Sprintf("object %d", i), &objs[i], golden[i], &LeaseCandidate{})
	}
	check("list", &LeaseCandidateList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: objs}, goldenList, &LeaseCandidateList{})
}

// TestJSONListStreaming: the list type has the shape apimachinery's
// streaming JSON list encoder requires, and both encoders agree.
func TestJSONListStreaming(t *testing.T) {
	s := localScheme(t)
	list := &LeaseCandidateList{
		TypeMeta: metav1.TypeMeta{Kind: "LeaseCandidateList", APIVersion: "coordination.k8s.io/v1alpha1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items:    []LeaseCandidate{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: LeaseCandidateSpec{LeaseName: "l", PreferredStrategies: strategies("A", "B")}}},
	}
	want := `{"kind":"LeaseCandidateList","apiVersion":"coordination.k8s.io/v1alpha1","metadata":{"resourceVersion":"9"},` +
		`"items":[{"metadata":{"name":"a"},"spec":{"leaseName":"l","preferredStrategies":["A","B"]}}]}`
	for _, opts := range [][]serializer.CodecFactoryOptionsMutator{nil, {serializer.WithStreamingCollectionEncodingToJSON()}} {
		codecs := serializer.NewCodecFactory(s, opts...)
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
		var buf bytes.Buffer
		if err := info.Serializer.Encode(list, &buf); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(buf.String()); got != want {
			t.Errorf("streaming=%v:\n got %s\nwant %s", opts != nil, got, want)
		}
	}
}
