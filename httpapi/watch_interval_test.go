package httpapi

import (
	"testing"
	"time"
)

// TestFlushInterval: the node's open streams share the write budget; a
// stream never waits longer than the cap.
func TestFlushInterval(t *testing.T) {
	for _, tc := range []struct {
		streams int64
		want    time.Duration
	}{
		{1, 50 * time.Microsecond},
		{20, time.Millisecond},
		{200, 10 * time.Millisecond},
		{1000, 50 * time.Millisecond},
		{5000, 50 * time.Millisecond},
	} {
		if got := flushInterval(tc.streams); got != tc.want {
			t.Errorf("flushInterval(%d) = %v, want %v", tc.streams, got, tc.want)
		}
	}
}
