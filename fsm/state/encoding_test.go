package state

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestObjectEncodingCached: each slot is computed once and then shared, so
// a thousand watchers cost one encoding.
func TestObjectEncodingCached(t *testing.T) {
	s, o := New(DefaultConfig()), &Object{}
	calls := 0
	enc := func(runtime.Object) ([]byte, error) { calls++; return []byte{byte(calls)}, nil }
	for range 3 {
		b, err := s.Encoding(o, EncodingJSON, enc)
		if err != nil || len(b) != 1 || b[0] != 1 {
			t.Fatalf("json encoding = %v, %v; want the first result", b, err)
		}
	}
	if b, _ := s.Encoding(o, EncodingProtobuf, enc); b[0] != 2 {
		t.Fatalf("protobuf slot reused the JSON encoding")
	}
	if calls != 2 {
		t.Fatalf("encoder called %d times, want 2", calls)
	}
}

// TestEncodingCacheBounded: stored objects keep only the most recently made
// encodings, up to the store's bound; an object whose encoding was dropped
// encodes again, and that encoding is kept anew.
func TestEncodingCacheBounded(t *testing.T) {
	const size = 1000 - cachedOverhead // one encoding costs 1000 bytes
	s := New(Config{EncodingCacheBytes: 3000})
	for i := range 5 {
		apply(s, uint64(i+1), put(key("ns", fmt.Sprint(i)), "x"))
	}
	sn := s.Snapshot()
	calls := 0
	enc := func(runtime.Object) ([]byte, error) { calls++; return make([]byte, size), nil }
	get := func(name string) { _, _ = s.Encoding(sn.Get(key("ns", name)), EncodingJSON, enc) }
	cached := func(name string) bool { return sn.Get(key("ns", name)).encodings[EncodingJSON].Load() != nil }
	for i := range 5 {
		get(fmt.Sprint(i))
	}
	for i, want := range []bool{false, false, true, true, true} {
		if got := cached(fmt.Sprint(i)); got != want {
			t.Fatalf("object %d cached %v, want %v", i, got, want)
		}
	}
	if s.encodings.size != 3000 {
		t.Fatalf("cache holds %d bytes, want 3000", s.encodings.size)
	}
	calls = 0
	get("4") // cached
	get("0") // encoded again, and now the newest
	if calls != 1 || !cached("0") || cached("2") {
		t.Fatalf("%d encodings; cached: 0 %v, 2 %v; want 1, true, false", calls, cached("0"), cached("2"))
	}
}
