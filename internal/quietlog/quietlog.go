// Package quietlog keeps a port's log short when strangers send it
// garbage: every bad handshake or frame is counted, but only a few lines a
// second are written, however many sources there are. A burst that was cut
// short says so in the next line it lets through.
//
// It does not decide what is garbage: the callers log what they log now,
// through a Limiter.
package quietlog

import (
	"bytes"
	"io"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// A port's lines per second and burst: enough to see what is going on,
// too few to fill a disk.
const (
	linesPerSecond = 5
	burst          = 10
)

// Limiter writes at most a few lines a second to its logger and counts
// every line it was given in its counter. It is safe for concurrent use.
type Limiter struct {
	logger     hclog.Logger
	counter    prometheus.Counter
	lim        *rate.Limiter
	suppressed atomic.Int64
}

// New returns a Limiter writing to logger; counter (may be nil) counts
// every line, written or not.
func New(logger hclog.Logger, counter prometheus.Counter) *Limiter {
	return &Limiter{logger: logger, counter: counter, lim: rate.NewLimiter(linesPerSecond, burst)}
}

// Warn logs msg at warning level if the rate allows.
func (l *Limiter) Warn(msg string, args ...any) { l.log(hclog.Warn, msg, args) }

// Error logs msg at error level if the rate allows.
func (l *Limiter) Error(msg string, args ...any) { l.log(hclog.Error, msg, args) }

func (l *Limiter) log(level hclog.Level, msg string, args []any) {
	if l.counter != nil {
		l.counter.Inc()
	}
	if !l.lim.Allow() {
		l.suppressed.Add(1)
		return
	}
	if n := l.suppressed.Swap(0); n > 0 {
		args = append(args, "suppressed_before", n)
	}
	l.logger.Log(level, msg, args...)
}

// Writer is an io.Writer for a standard library logger (http.Server's
// ErrorLog): each line written is one warning, limited and counted.
func (l *Limiter) Writer() io.Writer { return writer{l} }

type writer struct{ l *Limiter }

func (w writer) Write(p []byte) (int, error) {
	w.l.Warn(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// Logger wraps logger so that its Error and Warn lines go through l, for a
// library that logs per connection (hashicorp/raft's transport). Loggers it
// derives (Named, With) are not limited.
func (l *Limiter) Logger(logger hclog.Logger) hclog.Logger {
	return limited{Logger: logger, l: &Limiter{logger: logger, counter: l.counter, lim: l.lim}}
}

type limited struct {
	hclog.Logger
	l *Limiter
}

func (m limited) Error(msg string, args ...any) { m.l.Error(msg, args...) }
func (m limited) Warn(msg string, args ...any)  { m.l.Warn(msg, args...) }
