package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"testing/iotest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/registry"
)

// TestDecodeJSONOnceMatchesSerializer: for the usual body the one-pass
// JSON decode gives what the serializer gives, and every other body goes
// to the serializer, so the answer (object, warnings, error) is the same.
func TestDecodeJSONOnceMatchesSerializer(t *testing.T) {
	info, ok := serializerFor(mediaJSON)
	if !ok || info.StrictSerializer == nil {
		t.Fatal("no strict JSON serializer")
	}
	in := input{info: info}
	spec := `"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"renewTime":"2026-11-22T10:00:00.000000Z"}`
	meta := `"metadata":{"name":"l","namespace":"ns","resourceVersion":"42","labels":{"x":"y"}}`
	for _, tc := range []struct {
		body string
		once bool // decoded in one pass
	}{
		{`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",` + meta + `,` + spec + `}`, true},
		{`{` + meta + `,` + spec + `}`, true},
		{`{"kind":"Lease",` + meta + `}`, true},
		{`{"apiVersion":"coordination.k8s.io/v1",` + meta + `}`, true},
		{`{}`, true},
		{`null`, true},
		{`{"apiVersion":"coordination.k8s.io/v1beta1","kind":"Lease",` + meta + `}`, false},
		{`{"apiVersion":"v1","kind":"Lease",` + meta + `}`, false},
		{`{"apiVersion":"coordination.k8s.io/v1","kind":"Pod",` + meta + `}`, false},
		{`{"Kind":"Lease",` + meta + `}`, false},
		{`{"kind":"Lease","kind":"Lease",` + meta + `}`, false},
		{`{"kind":"Lease","unknown":1,` + meta + `}`, false},
		{`{"kind":"Lease",` + meta + `,"spec":{"holderIdentity":5}}`, false},
		{`{"kind":"Lease",`, false},
		{`[]`, false},
		{``, false},
		{`{"apiVersion":7}`, false},
	} {
		t.Run(tc.body, func(t *testing.T) {
			gvk := registry.Leases.GroupVersionKind()
			newObj := func() runtime.Object { return registry.Leases.New() }
			if _, once := decodeJSONOnce([]byte(tc.body), gvk, newObj()); once != tc.once {
				t.Errorf("decoded in one pass: %v, want %v", once, tc.once)
			}
			got, gotStrict, gotErr := in.decode([]byte(tc.body), gvk, newObj)
			want, wantStrict, wantErr := in.decodeWithSerializer([]byte(tc.body), gvk, newObj())
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("error %v, the serializer's %v", gotErr, wantErr)
			}
			if fmt.Sprint(gotStrict) != fmt.Sprint(wantStrict) {
				t.Errorf("strict errors %v, the serializer's %v", gotStrict, wantStrict)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded\n%#v\nthe serializer decoded\n%#v", got, want)
			}
		})
	}
}

// TestReadBody: the body whole, with or without Content-Length, up to
// kube-apiserver's limit; over it, 413.
func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		code    int
	}{
		{"empty", 0, false, 0},
		{"small", 700, false, 0},
		{"small chunked", 700, true, 0},
		{"past the first buffer, chunked", 5000, true, 0},
		{"at the limit", maxBodyBytes, false, 0},
		{"at the limit, chunked", maxBodyBytes, true, 0},
		{"over the limit", maxBodyBytes + 1, false, http.StatusRequestEntityTooLarge},
		{"over the limit, chunked", maxBodyBytes + 1, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("x"), tc.size)
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			if tc.chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(iotest.OneByteReader(bytes.NewReader(body)))
			}
			got, err := readBody(req)
			if tc.code != 0 {
				if code := apierrors.ReasonForError(err); code != metav1.StatusReasonRequestEntityTooLarge {
					t.Fatalf("err %v, want %d", err, tc.code)
				}
				return
			}
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("read %d bytes, err %v; want the %d sent", len(got), err, len(body))
			}
		})
	}
}
