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

// h2spec is the HTTP/2 conformance suite (RFC 7540/9113 and HPACK),
// fetched from the Go module proxy and built on first use.
const h2spec = "github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible"

// TestH2Spec runs every h2spec case, the strict ones too, against the
// server: each frame-level rule (stream states, flow control, frame and
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
	out, err := exec.CommandContext(ctx, "go", "run", h2spec, "-S", "-t", "-k", "-h", host, "-p", port,
		"-o", "5", "--max-header-length", "250000").CombinedOutput()
	summary := regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`).FindStringSubmatch(string(out))
	if err != nil || summary == nil || summary[4] != "0" || summary[1] != summary[2] {
		t.Fatalf("h2spec: %v\n%s", err, out)
	}
	t.Logf("h2spec: %s", summary[0])
}
