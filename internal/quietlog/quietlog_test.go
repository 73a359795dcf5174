package quietlog

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/time/rate"
)

// A flood of lines is counted whole and written a few lines at a time; the
// first line let through after a cut says how many were left out.
func TestLimiterFlood(t *testing.T) {
	var out bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total"})
	l := New(logger, c)
	std := log.New(l.Writer(), "", 0)
	const n = 10000
	for i := range n {
		if i%2 == 0 {
			l.Warn("peer connection refused: TLS handshake failed", "remote", "127.0.0.1:1")
		} else {
			std.Printf("http: TLS handshake error from 127.0.0.1:%d: EOF", i)
		}
	}
	if got := testutil.ToFloat64(c); got != n {
		t.Errorf("counted %v lines, want %d", got, n)
	}
	lines := strings.Count(out.String(), "\n")
	// The burst, and what the rate adds while the loop runs (well under a
	// minute even on a slow machine).
	if lines < burst || lines > burst+linesPerSecond*60 {
		t.Errorf("%d lines written for %d, want about %d", lines, n, burst)
	}
	if !strings.Contains(out.String(), "TLS handshake error from 127.0.0.1:1:") {
		t.Errorf("the standard logger's lines are not written: %s", out.String())
	}
	l.lim.SetLimit(rate.Inf) // let the next line through at once
	l.Warn("after the flood")
	if !strings.Contains(out.String(), "suppressed_before=") {
		t.Errorf("the line after a cut does not say what was left out:\n%s", out.String())
	}
}

// A wrapped library logger is limited for warnings and errors only.
func TestLoggerWrap(t *testing.T) {
	var out bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug})
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total"})
	wrapped := New(logger, c).Logger(logger)
	for range 1000 {
		wrapped.Error("failed to decode incoming command", "error", "garbage")
	}
	wrapped.Info("still here")
	if got := testutil.ToFloat64(c); got != 1000 {
		t.Errorf("counted %v, want 1000", got)
	}
	if n := strings.Count(out.String(), "failed to decode"); n > burst+linesPerSecond*60 {
		t.Errorf("%d error lines written", n)
	}
	if !strings.Contains(out.String(), "still here") {
		t.Error("an info line was dropped")
	}
}
