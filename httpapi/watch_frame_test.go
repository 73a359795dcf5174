package httpapi

import (
	"bytes"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/apis"
)

// The hand-built protobuf watch frame is byte for byte what apimachinery's
// streaming encoder writes for the same event.
func TestProtobufFrame(t *testing.T) {
	for _, obj := range [][]byte{
		{},
		[]byte("k8s\x00\x0a\x1c\x0a\x16coordination.k8s.io/v1\x12\x05Lease"),
		bytes.Repeat([]byte{0xff}, 300), // a length that needs two varint bytes
	} {
		for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
			var want bytes.Buffer
			enc := streaming.NewEncoder(protobuf.LengthDelimitedFramer.NewFrameWriter(&want), protobuf.NewRawSerializer(apis.Scheme, apis.Scheme))
			if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj}}); err != nil {
				t.Fatal(err)
			}
			if got := appendProtobufFrame(nil, typ, obj); !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%s with %d-byte object:\n got % x\nwant % x", typ, len(obj), got, want.Bytes())
			}
		}
	}
}
