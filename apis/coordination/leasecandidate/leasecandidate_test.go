package leasecandidate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

func newCodecs(t *testing.T) serializer.CodecFactory {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, coordinationv1alpha2.AddToScheme, coordinationv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(s)
}

func jsonSerializer(t *testing.T) runtime.Serializer {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(newCodecs(t).SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	return info.Serializer
}

func decodeJSON(t *testing.T, s runtime.Serializer, in string) runtime.Object {
	t.Helper()
	obj, _, err := s.Decode([]byte(in), nil, nil)
	if err != nil {
		t.Fatalf("decode %s: %v", in, err)
	}
	return obj
}

func encodeJSON(t *testing.T, s runtime.Serializer, obj runtime.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(buf.String())
}

// storeAndLoad passes the stored form through its protobuf encoding, as the
// FSM stores it.
func storeAndLoad(t *testing.T, st *coordinationv1beta1.LeaseCandidate) *coordinationv1beta1.LeaseCandidate {
	t.Helper()
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out := &coordinationv1beta1.LeaseCandidate{TypeMeta: st.TypeMeta}
	if err := out.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return out
}

const (
	times   = `"pingTime":"2024-07-01T10:00:00.123456Z","renewTime":"2024-07-01T10:00:05.000001Z"`
	keepAnn = `,"annotations":{"keep":"me"}`
	listAnn = `"coordination.leasehold.io/preferred-strategies"`
)

// doc is a LeaseCandidate JSON document as the JSON serializer writes it.
func doc(version, annotations, spec string) string {
	return `{"kind":"LeaseCandidate","apiVersion":"coordination.k8s.io/` + version + `",` +
		`"metadata":{"name":"apiserver-a","namespace":"kube-system","uid":"u1","resourceVersion":"5",` +
		`"creationTimestamp":"2024-07-01T09:00:00Z","labels":{"app":"x"}` + annotations + `},` +
		`"spec":` + spec + `}`
}

// TestConversionMatrix writes an object in one version and reads it back in
// every version, through the stored form and its protobuf encoding.
func TestConversionMatrix(t *testing.T) {
	js := jsonSerializer(t)
	full := func(tail string) string {
		return `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.31.0","emulationVersion":"1.30.0"` + tail + `}`
	}
	cases := []struct {
		name      string
		version   string
		in        string
		storedAnn map[string]string // annotations of the stored form
		want      map[string]string // version -> JSON read in that version
	}{{
		name:    "v1alpha1 three strategies",
		version: "v1alpha1",
		in:      doc("v1alpha1", keepAnn, full(`,"preferredStrategies":["OldestEmulationVersion","example.com/b","example.com/c"]`)),
		storedAnn: map[string]string{
			"keep":                        "me",
			PreferredStrategiesAnnotation: `["OldestEmulationVersion","example.com/b","example.com/c"]`,
		},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha2": doc("v1alpha2", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha1": doc("v1alpha1", keepAnn, full(`,"preferredStrategies":["OldestEmulationVersion","example.com/b","example.com/c"]`)),
		},
	}, {
		name:      "v1alpha1 one strategy",
		version:   "v1alpha1",
		in:        doc("v1alpha1", "", full(`,"preferredStrategies":["example.com/x"]`)),
		storedAnn: map[string]string{PreferredStrategiesAnnotation: `["example.com/x"]`},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", full(`,"strategy":"example.com/x"`)),
			"v1alpha2": doc("v1alpha2", "", full(`,"strategy":"example.com/x"`)),
			"v1alpha1": doc("v1alpha1", "", full(`,"preferredStrategies":["example.com/x"]`)),
		},
	}, {
		// binaryVersion has no omitempty in v1alpha2/v1beta1.
		name:    "v1alpha1 minimal spec, no strategies",
		version: "v1alpha1",
		in:      doc("v1alpha1", "", `{"leaseName":"l"}`),
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", `{"leaseName":"l","binaryVersion":""}`),
			"v1alpha2": doc("v1alpha2", "", `{"leaseName":"l","binaryVersion":""}`),
			"v1alpha1": doc("v1alpha1", "", `{"leaseName":"l"}`),
		},
	}, {
		name:    "v1beta1 with strategy",
		version: "v1beta1",
		in:      doc("v1beta1", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
		storedAnn: map[string]string{
			"keep": "me",
		},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha2": doc("v1alpha2", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha1": doc("v1alpha1", keepAnn, full(`,"preferredStrategies":["OldestEmulationVersion"]`)),
		},
	}, {
		name:    "v1alpha2 prefixed strategy, no emulationVersion",
		version: "v1alpha2",
		in:      doc("v1alpha2", "", `{"leaseName":"l",`+times+`,"binaryVersion":"1.32.0","strategy":"example.com/y"}`),
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", `{"leaseName":"l",`+times+`,"binaryVersion":"1.32.0","strategy":"example.com/y"}`),
			"v1alpha2": doc("v1alpha2", "", `{"leaseName":"l",`+times+`,"binaryVersion":"1.32.0","strategy":"example.com/y"}`),
			"v1alpha1": doc("v1alpha1", "", `{"leaseName":"l",`+times+`,"binaryVersion":"1.32.0","preferredStrategies":["example.com/y"]}`),
		},
	}, {
		name:    "v1beta1 without strategy",
		version: "v1beta1",
		in:      doc("v1beta1", "", `{"leaseName":"l","binaryVersion":"1.31.0"}`),
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", `{"leaseName":"l","binaryVersion":"1.31.0"}`),
			"v1alpha2": doc("v1alpha2", "", `{"leaseName":"l","binaryVersion":"1.31.0"}`),
			"v1alpha1": doc("v1alpha1", "", `{"leaseName":"l","binaryVersion":"1.31.0"}`),
		},
	}, {
		// A v1beta1 client cannot set the list: the annotation is dropped.
		name:      "v1beta1 carrying the annotation",
		version:   "v1beta1",
		in:        doc("v1beta1", `,"annotations":{`+listAnn+`:"[\"example.com/a\",\"example.com/b\"]","keep":"me"}`, full(`,"strategy":"OldestEmulationVersion"`)),
		storedAnn: map[string]string{"keep": "me"},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha2": doc("v1alpha2", keepAnn, full(`,"strategy":"OldestEmulationVersion"`)),
			"v1alpha1": doc("v1alpha1", keepAnn, full(`,"preferredStrategies":["OldestEmulationVersion"]`)),
		},
	}, {
		name:      "v1alpha2 carrying only the annotation",
		version:   "v1alpha2",
		in:        doc("v1alpha2", `,"annotations":{`+listAnn+`:"[\"example.com/y\",\"example.com/z\"]"}`, `{"leaseName":"l","binaryVersion":"","strategy":"example.com/y"}`),
		storedAnn: nil,
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", `{"leaseName":"l","binaryVersion":"","strategy":"example.com/y"}`),
			"v1alpha2": doc("v1alpha2", "", `{"leaseName":"l","binaryVersion":"","strategy":"example.com/y"}`),
			"v1alpha1": doc("v1alpha1", "", `{"leaseName":"l","preferredStrategies":["example.com/y"]}`),
		},
	}, {
		// The list in the spec wins over whatever the client put in the
		// annotation.
		name:    "v1alpha1 carrying a stale annotation",
		version: "v1alpha1",
		in:      doc("v1alpha1", `,"annotations":{`+listAnn+`:"[\"zzz\"]"}`, `{"leaseName":"l","preferredStrategies":["example.com/x","OldestEmulationVersion"]}`),
		storedAnn: map[string]string{
			PreferredStrategiesAnnotation: `["example.com/x","OldestEmulationVersion"]`,
		},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", "", `{"leaseName":"l","binaryVersion":"","strategy":"example.com/x"}`),
			"v1alpha2": doc("v1alpha2", "", `{"leaseName":"l","binaryVersion":"","strategy":"example.com/x"}`),
			"v1alpha1": doc("v1alpha1", "", `{"leaseName":"l","preferredStrategies":["example.com/x","OldestEmulationVersion"]}`),
		},
	}, {
		name:    "v1alpha1 empty list removes a client annotation",
		version: "v1alpha1",
		in:      doc("v1alpha1", `,"annotations":{`+listAnn+`:"[\"zzz\"]","keep":"me"}`, `{"leaseName":"l"}`),
		storedAnn: map[string]string{
			"keep": "me",
		},
		want: map[string]string{
			"v1beta1":  doc("v1beta1", keepAnn, `{"leaseName":"l","binaryVersion":""}`),
			"v1alpha2": doc("v1alpha2", keepAnn, `{"leaseName":"l","binaryVersion":""}`),
			"v1alpha1": doc("v1alpha1", keepAnn, `{"leaseName":"l"}`),
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A write read back in its own version is the same document,
			// unless the client sent the annotation (which is never shown).
			if !strings.Contains(tc.in, listAnn) && tc.want[tc.version] != tc.in {
				t.Fatalf("table: own-version read differs from the input")
			}
			in := decodeJSON(t, js, tc.in)
			if gv := in.GetObjectKind().GroupVersionKind().Version; gv != tc.version {
				t.Fatalf("decoded version %q", gv)
			}
			st, err := ToStored(in)
			if err != nil {
				t.Fatal(err)
			}
			if st.APIVersion != "coordination.k8s.io/v1beta1" || st.Kind != "LeaseCandidate" {
				t.Errorf("stored TypeMeta %+v", st.TypeMeta)
			}
			if !reflect.DeepEqual(st.Annotations, tc.storedAnn) {
				t.Errorf("stored annotations %q, want %q", st.Annotations, tc.storedAnn)
			}
			st = storeAndLoad(t, st)
			if len(tc.want) != len(Versions) {
				t.Fatalf("case spells out %d versions", len(tc.want))
			}
			for _, v := range Versions {
				out, err := FromStored(st, v)
				if err != nil {
					t.Fatal(err)
				}
				if got := encodeJSON(t, js, out); got != tc.want[v] {
					t.Errorf("read as %s:\n got %s\nwant %s", v, got, tc.want[v])
				}
			}
		})
	}
}

func mt(sec int) *metav1.MicroTime {
	t := metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, sec, 250000, time.UTC))
	return &t
}

func strategies(s ...string) []coordinationv1.CoordinatedLeaseStrategy {
	out := make([]coordinationv1.CoordinatedLeaseStrategy, len(s))
	for i := range s {
		out[i] = coordinationv1.CoordinatedLeaseStrategy(s[i])
	}
	return out
}

func meta(annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: "c", Namespace: "ns", UID: "u", ResourceVersion: "3", Generation: 2,
		CreationTimestamp: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
		Labels:            map[string]string{"l": "v"}, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "pu"}},
		Finalizers:      []string{"example.com/f"},
	}
}

func alpha1(tm bool, list ...string) *v1alpha1.LeaseCandidate {
	o := &v1alpha1.LeaseCandidate{
		ObjectMeta: meta(map[string]string{"a": "b"}),
		Spec: v1alpha1.LeaseCandidateSpec{
			LeaseName: "l", PingTime: mt(1), RenewTime: mt(2), BinaryVersion: "1.31.0", EmulationVersion: "1.31.0",
		},
	}
	if list != nil {
		o.Spec.PreferredStrategies = strategies(list...)
	}
	if tm {
		o.TypeMeta = typeMeta("v1alpha1", Kind)
	}
	return o
}

// TestOwnVersionRoundTripIsLossless converts to the stored form and back to
// the writer's version.
func TestOwnVersionRoundTripIsLossless(t *testing.T) {
	objects := []runtime.Object{
		alpha1(true, "OldestEmulationVersion", "example.com/b", "example.com/c"),
		alpha1(true, "example.com/c", "example.com/b", "OldestEmulationVersion"),
		alpha1(true, "example.com/a", "example.com/a"),
		alpha1(true, "example.com/only"),
		alpha1(true),
		alpha1(true, `example.com/"quoted" <&>`, "ünïcode/ß"),
		alpha1(true, ""), // invalid, but conversion keeps it
		&v1alpha1.LeaseCandidate{TypeMeta: typeMeta("v1alpha1", Kind)},
		&coordinationv1beta1.LeaseCandidate{
			TypeMeta: typeMeta("v1beta1", Kind), ObjectMeta: meta(nil),
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "l", PingTime: mt(3), RenewTime: mt(4), BinaryVersion: "1.33.0", EmulationVersion: "1.32.0", Strategy: "OldestEmulationVersion"},
		},
		&coordinationv1beta1.LeaseCandidate{TypeMeta: typeMeta("v1beta1", Kind)},
		&coordinationv1alpha2.LeaseCandidate{
			TypeMeta: typeMeta("v1alpha2", Kind), ObjectMeta: meta(map[string]string{"x": "y"}),
			Spec: coordinationv1alpha2.LeaseCandidateSpec{LeaseName: "l", RenewTime: mt(5), BinaryVersion: "1.32.0", Strategy: "example.com/s"},
		},
		&coordinationv1alpha2.LeaseCandidate{TypeMeta: typeMeta("v1alpha2", Kind)},
	}
	for i, obj := range objects {
		version := obj.GetObjectKind().GroupVersionKind().Version
		st, err := ToStored(obj)
		if err != nil {
			t.Fatal(err)
		}
		out, err := FromStored(storeAndLoad(t, st), version)
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(out, obj) {
			t.Errorf("[%d] %s round trip:\n got %#v\nwant %#v", i, version, out, obj)
		}
	}
}

// TestNewerVersionWriteDropsList: a v1alpha2/v1beta1 client that reads and
// writes back an object created through v1alpha1 resets the v1alpha1 view
// to [strategy].
func TestNewerVersionWriteDropsList(t *testing.T) {
	for _, version := range []string{"v1beta1", "v1alpha2"} {
		st, err := ToStored(alpha1(true, "example.com/a", "example.com/b", "example.com/c"))
		if err != nil {
			t.Fatal(err)
		}
		read, err := FromStored(st, version)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := read.(metav1.Object).GetAnnotations()[PreferredStrategiesAnnotation]; ok {
			t.Fatalf("%s read shows the annotation", version)
		}
		// Write back unchanged: the list is gone, the strategy stays.
		st2, err := ToStored(read)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st2.Annotations[PreferredStrategiesAnnotation]; ok {
			t.Errorf("%s write kept the annotation", version)
		}
		out, err := FromStored(st2, "v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*v1alpha1.LeaseCandidate).Spec.PreferredStrategies; !reflect.DeepEqual(got, strategies("example.com/a")) {
			t.Errorf("%s write, unchanged: v1alpha1 reads %q, want [example.com/a]", version, got)
		}

		// Write back with another strategy: v1alpha1 reads the new one.
		switch o := read.(type) {
		case *coordinationv1beta1.LeaseCandidate:
			o.Spec.Strategy = "OldestEmulationVersion"
		case *coordinationv1alpha2.LeaseCandidate:
			o.Spec.Strategy = "OldestEmulationVersion"
		}
		if st2, err = ToStored(read); err != nil {
			t.Fatal(err)
		}
		out, _ = FromStored(st2, "v1alpha1")
		if got := out.(*v1alpha1.LeaseCandidate).Spec.PreferredStrategies; !reflect.DeepEqual(got, strategies("OldestEmulationVersion")) {
			t.Errorf("%s write, new strategy: v1alpha1 reads %q", version, got)
		}
		// The other annotations are untouched.
		if got := out.(*v1alpha1.LeaseCandidate).Annotations; !reflect.DeepEqual(got, map[string]string{"a": "b"}) {
			t.Errorf("annotations %q", got)
		}
	}
}

// TestReadStoredAnnotation covers stored objects whose annotation does not
// match what ToStored writes (hand-edited or corrupted data).
func TestReadStoredAnnotation(t *testing.T) {
	cases := []struct {
		name       string
		strategy   string
		annotation *string
		want       []coordinationv1.CoordinatedLeaseStrategy
	}{
		{"consistent list", "A", ptr(`["A","B"]`), strategies("A", "B")},
		{"no annotation", "A", nil, strategies("A")},
		{"no annotation, no strategy", "", nil, nil},
		{"first element differs", "A", ptr(`["B","A"]`), strategies("A")},
		{"not JSON", "A", ptr(`A,B`), strategies("A")},
		{"JSON string", "A", ptr(`"A"`), strategies("A")},
		{"empty array", "A", ptr(`[]`), strategies("A")},
		{"null", "A", ptr(`null`), strategies("A")},
		{"strategy cleared", "", ptr(`["A","B"]`), nil},
		{"empty strategy kept", "", ptr(`["","B"]`), strategies("", "B")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &coordinationv1beta1.LeaseCandidate{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{"other": "x"}},
				Spec:       coordinationv1beta1.LeaseCandidateSpec{LeaseName: "l", Strategy: coordinationv1.CoordinatedLeaseStrategy(tc.strategy)},
			}
			if tc.annotation != nil {
				st.Annotations[PreferredStrategiesAnnotation] = *tc.annotation
			}
			for _, v := range Versions {
				out, err := FromStored(st, v)
				if err != nil {
					t.Fatal(err)
				}
				if got := out.(metav1.Object).GetAnnotations(); !reflect.DeepEqual(got, map[string]string{"other": "x"}) {
					t.Errorf("%s annotations %q", v, got)
				}
				if lc, ok := out.(*v1alpha1.LeaseCandidate); ok && !reflect.DeepEqual(lc.Spec.PreferredStrategies, tc.want) {
					t.Errorf("preferredStrategies %q, want %q", lc.Spec.PreferredStrategies, tc.want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestInputsUntouched: ToStored leaves its input alone and FromStored its
// stored object, and the results share no memory with them.
func TestInputsUntouched(t *testing.T) {
	in := alpha1(true, "A", "B")
	in.Annotations[PreferredStrategiesAnnotation] = "client value"
	orig := in.DeepCopy()
	st, err := ToStored(in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatalf("ToStored modified its input:\n%#v", in)
	}
	st.Labels["l"] = "changed"
	st.Spec.PingTime.Time = time.Time{}
	st.OwnerReferences[0].Name = "changed"
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("stored object shares memory with the input")
	}

	st, _ = ToStored(in)
	stOrig := st.DeepCopy()
	for _, v := range Versions {
		out, err := FromStored(st, v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st, stOrig) {
			t.Fatalf("FromStored(%s) modified the stored object", v)
		}
		m := out.(metav1.Object)
		m.GetLabels()["l"] = "changed"
		m.SetAnnotations(map[string]string{"changed": "x"})
		m.GetOwnerReferences()[0].Name = "changed"
		switch o := out.(type) {
		case *coordinationv1beta1.LeaseCandidate:
			o.Spec.PingTime.Time = time.Time{}
		case *coordinationv1alpha2.LeaseCandidate:
			o.Spec.PingTime.Time = time.Time{}
		case *v1alpha1.LeaseCandidate:
			o.Spec.PingTime.Time = time.Time{}
			o.Spec.PreferredStrategies[0] = "changed"
		}
		if !reflect.DeepEqual(st, stOrig) {
			t.Fatalf("FromStored(%s) result shares memory with the stored object", v)
		}
	}

	for _, obj := range []runtime.Object{
		&coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PreferredStrategiesAnnotation: "[]", "k": "v"}}, Spec: coordinationv1beta1.LeaseCandidateSpec{PingTime: mt(1)}},
		&coordinationv1alpha2.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{PreferredStrategiesAnnotation: "[]", "k": "v"}}, Spec: coordinationv1alpha2.LeaseCandidateSpec{PingTime: mt(1)}},
	} {
		orig := obj.DeepCopyObject()
		st, err := ToStored(obj)
		if err != nil {
			t.Fatal(err)
		}
		st.Spec.PingTime.Time = time.Time{}
		if !reflect.DeepEqual(obj, orig) {
			t.Errorf("ToStored(%T) modified or shares its input", obj)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, obj := range []runtime.Object{
		nil,
		&coordinationv1.Lease{},
		&v1alpha1.LeaseCandidateList{},
		(*v1alpha1.LeaseCandidate)(nil),
		(*coordinationv1beta1.LeaseCandidate)(nil),
		(*coordinationv1alpha2.LeaseCandidate)(nil),
	} {
		if st, err := ToStored(obj); err == nil || st != nil {
			t.Errorf("ToStored(%T) = %v, %v; want an error", obj, st, err)
		}
	}
	for _, v := range []string{"v1", "v2", "", "V1beta1"} {
		if out, err := FromStored(&coordinationv1beta1.LeaseCandidate{}, v); err == nil || out != nil {
			t.Errorf("FromStored(%q) = %v, %v; want an error", v, out, err)
		}
		if New(v) != nil || NewList(v) != nil {
			t.Errorf("New/NewList(%q) is not nil", v)
		}
	}
	if _, err := FromStored(nil, "v1beta1"); err == nil {
		t.Error("FromStored(nil) succeeded")
	}
}

func TestNew(t *testing.T) {
	if !reflect.DeepEqual(Versions, []string{"v1beta1", "v1alpha2", "v1alpha1"}) {
		t.Errorf("Versions = %q", Versions)
	}
	want := map[string][2]runtime.Object{
		"v1beta1":  {&coordinationv1beta1.LeaseCandidate{}, &coordinationv1beta1.LeaseCandidateList{}},
		"v1alpha2": {&coordinationv1alpha2.LeaseCandidate{}, &coordinationv1alpha2.LeaseCandidateList{}},
		"v1alpha1": {&v1alpha1.LeaseCandidate{}, &v1alpha1.LeaseCandidateList{}},
	}
	for _, v := range Versions {
		obj, list := New(v), NewList(v)
		if reflect.TypeOf(obj) != reflect.TypeOf(want[v][0]) || reflect.TypeOf(list) != reflect.TypeOf(want[v][1]) {
			t.Errorf("%s: New %T, NewList %T", v, obj, list)
		}
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Group != "coordination.k8s.io" || gvk.Version != v || gvk.Kind != "LeaseCandidate" {
			t.Errorf("New(%s) kind %v", v, gvk)
		}
		if gvk := list.GetObjectKind().GroupVersionKind(); gvk.Group != "coordination.k8s.io" || gvk.Version != v || gvk.Kind != "LeaseCandidateList" {
			t.Errorf("NewList(%s) kind %v", v, gvk)
		}
	}
}

func TestSetListItems(t *testing.T) {
	js := jsonSerializer(t)
	st1, _ := ToStored(alpha1(true, "A", "B"))
	st2, _ := ToStored(&coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "l", Strategy: "B"}})
	want := map[string]string{
		"v1beta1": `{"kind":"LeaseCandidateList","apiVersion":"coordination.k8s.io/v1beta1","metadata":{"resourceVersion":"9"},"items":[` +
			`{"metadata":{"name":"c","annotations":{"a":"b"}},"spec":{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","strategy":"A"}},` +
			`{"metadata":{"name":"d"},"spec":{"leaseName":"l","binaryVersion":"","strategy":"B"}}]}`,
		"v1alpha2": `{"kind":"LeaseCandidateList","apiVersion":"coordination.k8s.io/v1alpha2","metadata":{"resourceVersion":"9"},"items":[` +
			`{"metadata":{"name":"c","annotations":{"a":"b"}},"spec":{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","strategy":"A"}},` +
			`{"metadata":{"name":"d"},"spec":{"leaseName":"l","binaryVersion":"","strategy":"B"}}]}`,
		"v1alpha1": `{"kind":"LeaseCandidateList","apiVersion":"coordination.k8s.io/v1alpha1","metadata":{"resourceVersion":"9"},"items":[` +
			`{"metadata":{"name":"c","annotations":{"a":"b"}},"spec":{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["A","B"]}},` +
			`{"metadata":{"name":"d"},"spec":{"leaseName":"l","preferredStrategies":["B"]}}]}`,
	}
	// Trim the fixtures down to what the expected JSON shows.
	for _, st := range []*coordinationv1beta1.LeaseCandidate{st1, st2} {
		st.ObjectMeta = metav1.ObjectMeta{Name: st.Name, Annotations: st.Annotations}
		st.Spec.PingTime, st.Spec.RenewTime = nil, nil
	}
	for _, v := range Versions {
		var items []runtime.Object
		for _, st := range []*coordinationv1beta1.LeaseCandidate{st1, st2} {
			out, err := FromStored(st, v)
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, out)
		}
		list := NewList(v)
		list.(metav1.ListInterface).SetResourceVersion("9")
		SetListItems(list, items)
		if got := encodeJSON(t, js, list); got != want[v] {
			t.Errorf("%s list:\n got %s\nwant %s", v, got, want[v])
		}
		// The items passed in keep their TypeMeta.
		if items[0].GetObjectKind().GroupVersionKind().Kind != "LeaseCandidate" {
			t.Errorf("%s: SetListItems cleared the TypeMeta of its input", v)
		}

		empty := NewList(v)
		SetListItems(empty, nil)
		if got := encodeJSON(t, js, empty); !strings.HasSuffix(got, `,"metadata":{},"items":[]}`) {
			t.Errorf("%s empty list: %s", v, got)
		}
	}

	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	mustPanic("item of another version", func() {
		SetListItems(NewList("v1alpha1"), []runtime.Object{New("v1beta1")})
	})
	mustPanic("nil item", func() {
		SetListItems(NewList("v1beta1"), []runtime.Object{(*coordinationv1beta1.LeaseCandidate)(nil)})
	})
	mustPanic("not a list", func() {
		SetListItems(New("v1beta1"), nil)
	})
}
