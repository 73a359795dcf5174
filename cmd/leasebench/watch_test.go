package main

import (
	"bufio"
	"bytes"
	"io"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"
)

// The protobuf reader finds renewTime in frames written the way a
// Kubernetes watch stream writes them, and skips other event types.
func TestReadProtobufEvents(t *testing.T) {
	renew := metav1.NewMicroTime(time.Date(2026, 11, 22, 8, 0, 0, 123456000, time.UTC))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo("h"), RenewTime: &renew},
	}
	l.SetGroupVersionKind(leaseGVK)
	obj, err := runtime.Encode(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), l)
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	enc := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(&stream), protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme))
	for _, typ := range []string{"ADDED", "MODIFIED", "BOOKMARK", "MODIFIED"} {
		if err := enc.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []time.Time
	err = readProtobufEvents(bufio.NewReader(&stream), func(ts time.Time) { got = append(got, ts) })
	if err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}
	if len(got) != 2 || !got[0].Equal(renew.Time) || !got[1].Equal(renew.Time) {
		t.Fatalf("recorded %v, want %v twice", got, renew.Time)
	}
}

func ptrTo[T any](v T) *T { return &v }
