package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/apis/coordination/leasecandidate"
	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
	"github.com/leasehold/leasehold/registry"
)

// fuzzContentTypes are the Content-Types the body fuzzers pick from by
// index: the three served encodings, spelled as clients spell them, and
// two that are refused.
var fuzzContentTypes = []string{
	mediaJSON,
	mediaYAML,
	mediaProtobuf,
	"application/json; charset=utf-8",
	"",
	"application/cbor",
	"text/plain",
}

func fuzzMicroTime(sec int64, nsec int64) *metav1.MicroTime {
	t := metav1.NewMicroTime(time.Unix(sec, nsec).UTC())
	return &t
}

// fuzzObjectMeta is metadata with every kind of field a client sends.
func fuzzObjectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "kube-system", UID: types.UID("9b1e0a0e-1d2c-4c61-8c59-0d1a5e2f6a01"),
		ResourceVersion: "42", Generation: 3,
		Labels:            map[string]string{"app": "x", "tier": ""},
		Annotations:       map[string]string{"note": "y", leasecandidate.PreferredStrategiesAnnotation: `["A","B"]`},
		CreationTimestamp: metav1.NewTime(time.Date(2024, 7, 1, 9, 0, 0, 0, time.UTC)),
		Finalizers:        []string{"example.com/f"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u1",
			Controller: ptrTo(true)}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1",
			Time:     &metav1.Time{Time: time.Date(2024, 7, 1, 9, 0, 1, 0, time.UTC)},
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:holderIdentity":{}}}`)}}},
	}
}

func ptrTo[T any](v T) *T { return &v }

// fuzzSeedObjects are real objects of res's served version: a full one,
// with every MicroTime set (to the microsecond, and with nanoseconds a
// protobuf client may send), and a minimal one.
func fuzzSeedObjects(res *registry.Resource) []runtime.Object {
	ping, renew, acquire := fuzzMicroTime(1719828000, 123456000), fuzzMicroTime(1719828005, 1000), fuzzMicroTime(1719820000, 987654321)
	minimal := res.New()
	minimal.SetName("min")
	var full runtime.Object
	switch o := res.New().(type) {
	case *coordinationv1.Lease:
		o.ObjectMeta = fuzzObjectMeta("kube-scheduler")
		o.Spec = coordinationv1.LeaseSpec{
			HolderIdentity: ptrTo("node-a_1234"), LeaseDurationSeconds: ptrTo[int32](15),
			AcquireTime: acquire, RenewTime: renew, LeaseTransitions: ptrTo[int32](7),
			Strategy: ptrTo(coordinationv1.OldestEmulationVersion), PreferredHolder: ptrTo("node-b"),
		}
		full = o
	case *coordinationv1beta1.LeaseCandidate:
		o.ObjectMeta = fuzzObjectMeta("kube-apiserver-a")
		o.Spec = coordinationv1beta1.LeaseCandidateSpec{LeaseName: "kube-apiserver", PingTime: ping, RenewTime: renew,
			BinaryVersion: "1.31.0", EmulationVersion: "1.30.0", Strategy: coordinationv1.OldestEmulationVersion}
		full = o
	case *coordinationv1alpha2.LeaseCandidate:
		o.ObjectMeta = fuzzObjectMeta("kube-apiserver-a")
		o.Spec = coordinationv1alpha2.LeaseCandidateSpec{LeaseName: "kube-apiserver", PingTime: ping, RenewTime: renew,
			BinaryVersion: "1.31.0", EmulationVersion: "1.30.0", Strategy: coordinationv1.OldestEmulationVersion}
		full = o
	case *v1alpha1.LeaseCandidate:
		o.ObjectMeta = fuzzObjectMeta("kube-apiserver-a")
		o.Spec = v1alpha1.LeaseCandidateSpec{LeaseName: "kube-apiserver", PingTime: ping, RenewTime: renew,
			BinaryVersion: "1.31.0", EmulationVersion: "1.30.0",
			PreferredStrategies: []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion, "example.com/other"}}
		full = o
	default:
		panic(fmt.Sprintf("no seed object for %T", o))
	}
	return []runtime.Object{full, minimal}
}

// fuzzResources are the served versions of Lease and LeaseCandidate.
func fuzzResources() []*registry.Resource {
	var out []*registry.Resource
	for _, r := range registry.Served() {
		if gvk := r.GroupVersionKind(); gvk.Group == "coordination.k8s.io" && (gvk.Kind == "Lease" || gvk.Kind == "LeaseCandidate") {
			out = append(out, r)
		}
	}
	return out
}

// fuzzEncode encodes obj as a client would send it in mediaType.
func fuzzEncode(tb testing.TB, mediaType string, obj runtime.Object) []byte {
	tb.Helper()
	info, ok := serializerFor(mediaType)
	if !ok {
		tb.Fatalf("no serializer for %s", mediaType)
	}
	data, err := runtime.Encode(info.Serializer, obj)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// fuzzHandBodies are JSON bodies of the kind clients and people write,
// around the MicroTime fields in particular.
var fuzzHandBodies = []string{
	`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"ns"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-11-22T10:00:00.000000Z","acquireTime":"2026-11-22T09:00:00.000001Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"2026-11-22T10:00:00Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"2026-11-22T10:00:00.123456789Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"2026-11-22T10:00:00.123456+01:00"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"0000-01-01T00:00:00.000000Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"9999-12-31T23:59:59.999999Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":"2016-12-31T23:59:60.000000Z"}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":null,"acquireTime":""}}`,
	`{"metadata":{"name":"l"},"spec":{"renewTime":5}}`,
	`{"metadata":{"name":"l"},"spec":{"pingTime":"2026-11-22T10:00:00.000000Z","leaseName":"x"}}`,
	`{"metadata":{"name":"l","creationTimestamp":"2026-11-22T10:00:00Z"}}`,
	`{"metadata":{"name":"l","creationTimestamp":null,"labels":null}}`,
	`{"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":1e3}}`,
	`{"metadata":{"name":"l"},"spec":{"leaseDurationSeconds":2147483648}}`,
	`{"metadata":{"name":"l"},"spec":{"holderIdentity":"\ud800"}}`,
	`{"metadata":{"name":"l"},"spec":{"preferredStrategies":["OldestEmulationVersion",""]}}`,
	`{"metadata":{"name":"l"},"spec":{"strategy":"OldestEmulationVersion"}}`,
	`{"kind":"Lease","kind":"Lease"}`,
	`{"kind":"","apiVersion":"","metadata":{"name":"l"}}`,
	`{"unknown":1}`,
	`{"apiVersion":"coordination.k8s.io/v1beta1","kind":"LeaseCandidate"}`,
	`{"apiVersion":"coordination.k8s.io/v1alpha1","kind":"LeaseCandidate"}`,
	`{"apiVersion":"coordination.k8s.io/v1alpha2","kind":"LeaseCandidate"}`,
	`null`, `{}`, `[]`, `"x"`, ``,
	"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\nspec:\n  renewTime: 2026-11-22T10:00:00.000000Z\n",
	"metadata: {name: l}\nspec: {renewTime: '2026-11-22T10:00:00.000000Z'}\n",
	"a: &a [*a]\n",
	"--- {}\n--- {}\n",
}

// FuzzDecodeBody decodes a create or update body as the handlers do
// (decodeObject: Content-Type, input.decode with decodeJSONOnce or the
// serializer, fieldValidation=Strict), for every served resource version
// (Lease v1; LeaseCandidate v1beta1, v1alpha2, v1alpha1) in JSON, YAML and
// protobuf. It never panics; a refusal is a Status error of a 4xx code; an
// object that decodes strictly encodes again in the same format into bytes
// that decode to the same object (but for times at Go's zero, which JSON
// spells null), and encode to the same bytes. A
// LeaseCandidate that also passes validation converts to the stored form
// and back to its own version unchanged, as package leasecandidate
// promises.
func FuzzDecodeBody(f *testing.F) {
	resources := fuzzResources()
	for ri, res := range resources {
		for ci, ct := range fuzzContentTypes[:3] {
			for _, obj := range fuzzSeedObjects(res) {
				obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
				data := fuzzEncode(f, ct, obj)
				f.Add(uint8(ri), uint8(ci), data)
				f.Add(uint8(ri), uint8(ci), data[:len(data)/2])
				f.Add(uint8(ri), uint8(ci), data[:len(data)-1])
				// The same object without kind and apiVersion.
				obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind().GroupKind().WithVersion(""))
				f.Add(uint8(ri), uint8(ci), fuzzEncode(f, ct, obj))
			}
		}
		for _, b := range fuzzHandBodies {
			f.Add(uint8(ri), uint8(0), []byte(b))
			f.Add(uint8(ri), uint8(1), []byte(b))
		}
	}
	f.Add(uint8(0), uint8(2), []byte("k8s\x00"))
	f.Add(uint8(0), uint8(2), []byte("k8s\x00\x0a\x00\x12\x00"))
	f.Add(uint8(0), uint8(5), []byte{0xa1, 0x61, 0x61, 0x01})

	f.Fuzz(func(t *testing.T, ri, ci uint8, body []byte) {
		res := resources[int(ri)%len(resources)]
		ct := fuzzContentTypes[int(ci)%len(fuzzContentTypes)]
		obj, err := fuzzDecodeObject(res, ct, body)
		if err != nil {
			fuzzRequire4xx(t, err)
			return
		}
		mediaType := ct
		if mediaType == "" || mediaType == fuzzContentTypes[3] {
			mediaType = mediaJSON
		}
		first := fuzzEncode(t, mediaType, obj)
		again, err := fuzzDecodeObject(res, ct, first)
		if err != nil {
			t.Fatalf("%s %s decoded strictly, but its encoding does not: %v\nencoding: %q", res.Version, res.Kind, err, first)
		}
		if mediaType != mediaProtobuf {
			fuzzZeroTimesNil(reflect.ValueOf(obj))
			first = fuzzEncode(t, mediaType, obj)
		}
		if !apiequality.Semantic.DeepEqual(obj, again) {
			t.Fatalf("%s %s round trip changed the object:\n%#v\nthen\n%#v", res.Version, res.Kind, obj, again)
		}
		if second := fuzzEncode(t, mediaType, again); !bytes.Equal(first, second) {
			t.Fatalf("%s %s encodes differently after a round trip:\n%q\n%q", res.Version, res.Kind, first, second)
		}
		fuzzCheckStoredRoundTrip(t, res, obj)
	})
}

// fuzzZeroTimesNil sets every *metav1.Time and *metav1.MicroTime in v
// that points at Go's zero time to nil: JSON spells that time null (as in
// Kubernetes: "0001-01-01T00:00:00Z" decodes to it, and it encodes as
// null), so a pointer to it reads back as none.
func fuzzZeroTimesNil(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		switch t := v.Interface().(type) {
		case *metav1.Time:
			if t.IsZero() && v.CanSet() {
				v.SetZero()
			}
			return
		case *metav1.MicroTime:
			if t.IsZero() && v.CanSet() {
				v.SetZero()
			}
			return
		}
		fuzzZeroTimesNil(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fuzzZeroTimesNil(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			fuzzZeroTimesNil(v.Index(i))
		}
	}
}

// fuzzDecodeObject is decodeObject on a request with body and Content-Type
// ct, with fieldValidation=Strict.
func fuzzDecodeObject(res *registry.Resource, ct string, body []byte) (registry.Object, error) {
	req := httptest.NewRequest(http.MethodPost, "/apis/coordination.k8s.io/"+res.Version+"/namespaces/ns/"+res.Name, bytes.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return (&Server{}).decodeObject(httptest.NewRecorder(), req, res, metav1.FieldValidationStrict)
}

// fuzzRequire4xx fails unless err is a Status error with a client error
// code.
func fuzzRequire4xx(t *testing.T, err error) {
	t.Helper()
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error %v (%T) is not a Status", err, err)
	}
	if code := st.Status().Code; code < 400 || code > 499 {
		t.Fatalf("error %v has code %d, want 4xx", err, code)
	}
}

// fuzzCheckStoredRoundTrip converts a valid LeaseCandidate to the stored
// form, through its protobuf encoding as the FSM stores it, and back to
// its version: what the client wrote is what it reads back, but for the
// annotation the stored form reserves.
func fuzzCheckStoredRoundTrip(t *testing.T, res *registry.Resource, obj registry.Object) {
	t.Helper()
	if res.ToStored == nil || len(res.Validate(obj)) > 0 {
		return
	}
	want := obj.DeepCopyObject().(registry.Object)
	if a := want.GetAnnotations(); a != nil {
		delete(a, leasecandidate.PreferredStrategiesAnnotation)
		if len(a) == 0 {
			want.SetAnnotations(nil)
		}
	}
	st, err := res.ToStored(obj)
	if err != nil {
		t.Fatalf("ToStored: %v", err)
	}
	data, err := st.Marshal()
	if err != nil {
		t.Fatalf("stored form does not encode: %v", err)
	}
	stored := &coordinationv1beta1.LeaseCandidate{}
	if err := stored.Unmarshal(data); err != nil {
		t.Fatalf("stored encoding does not decode: %v", err)
	}
	back, err := res.FromStored(stored)
	if err != nil {
		t.Fatalf("FromStored: %v", err)
	}
	back.GetObjectKind().SetGroupVersionKind(want.GetObjectKind().GroupVersionKind())
	if !apiequality.Semantic.DeepEqual(want, back) {
		t.Fatalf("%s LeaseCandidate changed through the stored form:\n%#v\nread back\n%#v", res.Version, want, back)
	}
}
