package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestObjectEncodingCached: each slot is computed once and then shared, so
// a thousand watchers cost one encoding.
func TestObjectEncodingCached(t *testing.T) {
	o := &Object{}
	calls := 0
	enc := func(runtime.Object) ([]byte, error) { calls++; return []byte{byte(calls)}, nil }
	for range 3 {
		b, err := o.Encoding(EncodingJSON, enc)
		if err != nil || len(b) != 1 || b[0] != 1 {
			t.Fatalf("json encoding = %v, %v; want the first result", b, err)
		}
	}
	if b, _ := o.Encoding(EncodingProtobuf, enc); b[0] != 2 {
		t.Fatalf("protobuf slot reused the JSON encoding")
	}
	if calls != 2 {
		t.Fatalf("encoder called %d times, want 2", calls)
	}
}
