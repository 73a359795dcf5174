package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestLoneWatchWritesEachCommit: a node with one open watch stream writes
// each commit as it comes, rather than holding it back to batch it with
// the next: renewals 10 ms apart arrive in chunks of their own (the stream
// writes one chunk per write). A thousand streams would batch them 50 ms
// at a time (TestFlushInterval).
func TestLoneWatchWritesEachCommit(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := newWire(t, c, 0)
	l := w.create("lone", "l", "h0", nil)

	conn, err := net.Dial("tcp", c.Nodes[0].APIAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s?watch=true&resourceVersion=%s HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n", nsPath("lone"), l.ResourceVersion)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %v %v", resp, err)
	}
	if te := resp.TransferEncoding; len(te) != 1 || te[0] != "chunked" {
		t.Fatalf("watch answered with Transfer-Encoding %v, want chunked", te)
	}

	const renewals = 10
	rv := l.ResourceVersion
	for i := range renewals {
		time.Sleep(10 * time.Millisecond)
		body := leaseBody("lone", "l", fmt.Sprintf("h%d", i+1))
		body["metadata"].(map[string]any)["resourceVersion"] = rv
		rv = w.do("PUT", itemPath("lone", "l"), body).lease(t, http.StatusOK).ResourceVersion
	}

	// Read the raw chunks (http.ReadResponse leaves the body's chunking
	// to the reader; br still holds the bytes after the head).
	tp := textproto.NewReader(br)
	chunks, events := 0, 0
	for events < renewals {
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatalf("after %d chunks and %d events: %v", chunks, events, err)
		}
		size, err := strconv.ParseUint(strings.TrimSpace(line), 16, 32)
		if err != nil || size == 0 {
			t.Fatalf("chunk size line %q after %d events", line, events)
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		chunks++
		events += bytes.Count(data, []byte(`{"type":"MODIFIED"`))
	}
	if events != renewals {
		t.Fatalf("%d MODIFIED events, want %d", events, renewals)
	}
	// Each renewal is written on its own unless the watch goroutine was
	// held up past the next one; 50 ms batching would give 2 or 3 chunks.
	if chunks < renewals/2+1 {
		t.Errorf("%d renewals 10 ms apart came in %d chunks, want each (or nearly each) in its own", renewals, chunks)
	}
}
