package h2server

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestH2Spec runs every case of h2spec, the HTTP/2 conformance suite (a
// tool of this module: go.mod pins it and its dependencies; fetched from
// the Go module proxy and built on first use), the strict ones too,
// against the server: each frame-level rule (stream states, flow control, frame and
// header sizes, SETTINGS, HPACK) gets the error RFC 9113 names.
func TestH2Spec(t *testing.T) {
	ts := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "hello")
	}))
	host, port, _ := strings.Cut(ts.addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Header fields of 250,000 bytes make the case of a HEADERS frame
	// over the maximum frame size pass the 1 MiB this server allows.
	out, err := exec.CommandContext(ctx, "go", "tool", "h2spec", "-S", "-t", "-k", "-h", host, "-p", port,
		"-o", "5", "--max-header-length", "250000").CombinedOutput()
	summary := regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`).FindStringSubmatch(string(out))
	if err != nil || summary == nil || summary[4] != "0" || summary[1] != summary[2] {
		t.Fatalf("h2spec: %v\n%s", err, out)
	}
	t.Logf("h2spec: %s", summary[0])
}
