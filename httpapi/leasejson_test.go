package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"
)

// renewalLease is a Lease as client-go's leader election sends it to renew:
// read back from the server, managed fields and all.
func renewalLease() *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Date(2026, 11, 29, 2, 57, 42, 128532000, time.UTC))
	created := metav1.NewTime(time.Date(2026, 11, 29, 2, 56, 3, 0, time.UTC))
	fields := &metav1.FieldsV1{}
	fields.SetRawBytes([]byte(`{"f:spec":{"f:acquireTime":{},"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`))
	return &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "kube-scheduler", Namespace: "kube-system", UID: "7659506a-6e22-41b0-ad3b-0b99c3a0aafd",
			ResourceVersion: "134641", CreationTimestamp: created,
			Labels:      map[string]string{"app": "scheduler"},
			Annotations: map[string]string{"note": "héllo"},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				Time: &created, FieldsType: "FieldsV1", FieldsV1: fields,
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("node-1_4f1c"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](3),
		},
	}
}

// TestDecodeLeaseJSONTakesClientBodies: what clients send takes the single
// pass, and decodes as the serializer's strict decoder has it.
func TestDecodeLeaseJSONTakesClientBodies(t *testing.T) {
	created := renewalLease()
	created.ResourceVersion, created.UID, created.CreationTimestamp, created.ManagedFields = "", "", metav1.Time{}, nil
	created.Spec.Strategy = ptr.To(coordinationv1.OldestEmulationVersion)
	created.Spec.PreferredHolder = ptr.To("node-2")
	created.Finalizers = []string{"example.com/keep"}
	for name, l := range map[string]*coordinationv1.Lease{"renewal": renewalLease(), "create": created} {
		body, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range []string{string(body), indentJSON(t, body)} {
			var got coordinationv1.Lease
			if !decodeLeaseJSON([]byte(form), &got) {
				t.Fatalf("%s: not decoded in one pass: %s", name, form)
			}
			var want coordinationv1.Lease
			if strict, err := kjson.UnmarshalStrict([]byte(form), &want); err != nil || len(strict) > 0 {
				t.Fatalf("%s: %v %v", name, err, strict)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s:\n%#v\nwant\n%#v", name, got, want)
			}
		}
	}
}

func indentJSON(t *testing.T, body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(v, "", "\t")
	return string(out) + "\n"
}

// TestDecodeLeaseJSONLeavesTheRestToTheSerializer: bodies the serializer
// answers with an error or a warning, or that need more than plain
// strings and integers, are not decoded in the single pass.
func TestDecodeLeaseJSONLeavesTheRestToTheSerializer(t *testing.T) {
	for _, body := range []string{
		`null`, `[]`, `"x"`, ``, `{`, `{}x`, `{"kind":"Lease"}{}`,
		`{"unknown":1}`, `{"Kind":"Lease"}`, `{"kind":"Lease","kind":"Lease"}`,
		`{"metadata":{"name":"a","name":"b"}}`, `{"metadata":{"labels":{"a":"1","a":"2"}}}`,
		`{"metadata":{"name":"a\u0062"}}`, `{"metadata":{"name":"\xff"}}`, "{\"metadata\":{\"name\":\"a\x01\"}}",
		`{"metadata":{"ownerReferences":[]}}`, `{"status":{}}`,
		`{"spec":{"leaseDurationSeconds":1.0}}`, `{"spec":{"leaseDurationSeconds":1e1}}`, `{"spec":{"leaseDurationSeconds":01}}`,
		`{"spec":{"leaseDurationSeconds":2147483648}}`, `{"spec":{"leaseDurationSeconds":"15"}}`, `{"spec":{"leaseDurationSeconds":-}}`,
		`{"spec":{"renewTime":"yesterday"}}`, `{"spec":{"renewTime":12}}`, `{"spec":{"holderIdentity":true}}`,
		`{"metadata":{"managedFields":[{"fieldsV1":{"f:spec":}}]}}`, `{"metadata":{"managedFields":[{"fieldsV1":"\q"}]}}`,
		`{"metadata":{"managedFields":[{"fieldsV1":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}]}}`,
	} {
		var l coordinationv1.Lease
		if decodeLeaseJSON([]byte(body), &l) {
			t.Errorf("%q decoded in one pass", body)
		}
	}
}

// FuzzLeaseJSON holds the single pass to the serializer's strict decoder:
// a body it decodes, the decoder takes without error or warning, into the
// same Lease.
func FuzzLeaseJSON(f *testing.F) {
	body, _ := json.Marshal(renewalLease())
	f.Add(body)
	f.Add([]byte(`{"metadata":{"name":"l","creationTimestamp":null,"labels":{},"finalizers":[],"managedFields":[]},"spec":{"renewTime":null,"leaseTransitions":-0}}`))
	f.Add([]byte(`{"metadata":{"managedFields":[{"fieldsV1":{"a":[1,-2.5e+3,true,false,null,"\u00e9\n"]},"time":"2026-01-02T03:04:05.5+01:00"}]}}`))
	f.Add([]byte(` { "spec" : { "acquireTime" : "2026-11-29T02:56:12.775873-07:00" , "strategy" : "OldestEmulationVersion" } } `))
	f.Add([]byte(`{"metadata":{"generation":9223372036854775807,"deletionGracePeriodSeconds":-9223372036854775808,"deletionTimestamp":"0001-01-01T00:00:00Z"}}`))
	// More keys than the duplicate check compares one by one, with and
	// without a repeat.
	many := `{"metadata":{"labels":{"a":"","b":"","c":"","d":"","e":"","f":"","g":"","h":"","i":"","j":"","k":"","l":"","m":"","n":"","o":"","p":"","q":""`
	f.Add([]byte(many + `}}}`))
	f.Add([]byte(many + `,"r":"","c":""}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var got coordinationv1.Lease
		if !decodeLeaseJSON(body, &got) {
			return
		}
		var want coordinationv1.Lease
		strict, err := kjson.UnmarshalStrict(body, &want)
		if err != nil || len(strict) > 0 {
			t.Fatalf("decoded in one pass, but the decoder says %v %v:\n%q", err, strict, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q\ndecoded in one pass as\n%#v\nthe decoder has\n%#v", body, got, want)
		}
	})
}

// BenchmarkDecodeLeaseJSON: a renewal's body by the single pass and by
// the serializer's strict decoder.
func BenchmarkDecodeLeaseJSON(b *testing.B) {
	body, _ := json.Marshal(renewalLease())
	b.Run("single-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l coordinationv1.Lease
			if !decodeLeaseJSON(body, &l) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("strict-decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var l coordinationv1.Lease
			if _, err := kjson.UnmarshalStrict(body, &l); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// labelsBody is a Lease of n labels, as JSON.
func labelsBody(tb testing.TB, n int) []byte {
	l := renewalLease()
	l.Labels = make(map[string]string, n)
	for i := range n {
		l.Labels["example.com/label-"+strconv.Itoa(i)] = "v" + strconv.Itoa(i)
	}
	body, err := json.Marshal(l)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// TestDecodeLeaseJSONRefusesRepeatsInLargeObjects: a repeated key is
// refused however many keys come before it, as in a small object.
func TestDecodeLeaseJSONRefusesRepeatsInLargeObjects(t *testing.T) {
	for _, n := range []int{15, 16, 17, 100, 10000} {
		for _, repeat := range []int{0, min(15, n-1), n / 2, n - 1} {
			var b strings.Builder
			b.WriteString(`{"metadata":{"labels":{`)
			for i := range n {
				fmt.Fprintf(&b, `"k%d":"v",`, i)
			}
			fmt.Fprintf(&b, `"k%d":"v"}}}`, repeat)
			var l coordinationv1.Lease
			if decodeLeaseJSON([]byte(b.String()), &l) {
				t.Errorf("%d labels, then k%d again: decoded in one pass", n, repeat)
			}
		}
		var l coordinationv1.Lease
		if body := labelsBody(t, n); !decodeLeaseJSON(body, &l) || len(l.Labels) != n {
			t.Errorf("%d distinct labels: not decoded in one pass (%d labels)", n, len(l.Labels))
		}
	}
}

// TestDecodeLeaseJSONIsLinear: a label costs about as much in a body of
// 100,000 labels as in one of 1,000. Each size is timed as the fastest
// of a few runs, so that a busy machine slows both alike; the bound is a
// loose 10x, which a quadratic decoder passes many times over.
func TestDecodeLeaseJSONIsLinear(t *testing.T) {
	perLabel := func(n, reps int) time.Duration {
		body := labelsBody(t, n)
		best := time.Duration(math.MaxInt64)
		// At most five runs, fewer when they are slow.
		for i, begin := 0, time.Now(); i < 5 && (i == 0 || time.Since(begin) < 2*time.Second); i++ {
			start := time.Now()
			for range reps {
				var l coordinationv1.Lease
				if !decodeLeaseJSON(body, &l) {
					t.Fatalf("%d labels: not decoded in one pass", n)
				}
			}
			best = min(best, time.Since(start))
		}
		return best / time.Duration(n*reps)
	}
	small, large := perLabel(1000, 100), perLabel(100000, 1)
	t.Logf("per label: %v of 1,000, %v of 100,000", small, large)
	if large > 10*small {
		t.Errorf("a label of 100,000 took %v, one of 1,000 %v: decoding is not linear", large, small)
	}
}

// BenchmarkDecodeLeaseJSONLabels: the single pass over Leases of growing
// numbers of labels; ns/label stays flat where it is linear.
func BenchmarkDecodeLeaseJSONLabels(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		body := labelsBody(b, n)
		b.Run(fmt.Sprintf("labels=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var l coordinationv1.Lease
				if !decodeLeaseJSON(body, &l) {
					b.Fatal("not decoded")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/label")
		})
	}
}
