package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// abuseClient is the attacker's: plain HTTP to a node of the default open
// cluster, and patient, so that the test measures the node, not the
// client's timeout.
var abuseClient = &http.Client{Timeout: 2 * time.Minute}

// abuseAnswer is an answer and how long it took.
type abuseAnswer struct {
	code int
	body []byte
	took time.Duration
}

func abuseDo(t *testing.T, method, url, contentType string, body []byte) abuseAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	start := time.Now()
	resp, err := abuseClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return abuseAnswer{code: resp.StatusCode, body: data, took: time.Since(start)}
}

// procStatus is a field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s of pid %d: %q", field, pid, v)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestAbusePatchBomb: a JSON patch of an add of a megabyte and eight
// copies, each doubling the document (256 MB at the end), as the red team
// sent it to a node: the answer comes within a second, a small 4xx
// Status naming --max-request-bytes; the node's peak memory grows by less
// than 200 MB; the Lease is unchanged.
func TestAbusePatchBomb(t *testing.T) {
	pc := newProcCluster(t)
	n := pc.nodes[0]
	base, _ := apiURL(n.apiAddr)
	coll := base + "/apis/coordination.k8s.io/v1/namespaces/abuse/leases"
	created := abuseDo(t, "POST", coll, "application/json",
		[]byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"target"},"spec":{"holderIdentity":"a"}}`))
	if created.code != http.StatusCreated {
		t.Fatalf("create: HTTP %d %s", created.code, created.body)
	}
	before := abuseDo(t, "GET", coll+"/target", "", nil)

	ops := []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"a": strings.Repeat("x", 1<<20)}}}
	for i := range 8 {
		ops = append(ops, map[string]any{"op": "copy", "from": "/metadata/annotations", "path": fmt.Sprintf("/metadata/annotations/c%d", i)})
	}
	bomb, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}

	pid := n.Process().Pid()
	rss := procStatus(t, pid, "VmRSS")
	r := abuseDo(t, "PATCH", coll+"/target", "application/json-patch+json", bomb)
	peak := procStatus(t, pid, "VmHWM")
	growth := peak - rss
	t.Logf("patch bomb of %d bytes: HTTP %d in %v, %d-byte answer; RSS %d MB before, peak %d MB after (growth at most %d MB)",
		len(bomb), r.code, r.took, len(r.body), rss>>20, peak>>20, max(growth, 0)>>20)

	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("answer %.300s: %v", r.body, err)
	}
	if r.code < 400 || r.code >= 500 || !strings.Contains(st.Message, "--max-request-bytes") {
		t.Errorf("answer HTTP %d %.500s, want a 4xx Status naming --max-request-bytes", r.code, r.body)
	}
	if r.took > time.Second {
		t.Errorf("answered in %v, want within 1s", r.took)
	}
	if len(r.body) > 64<<10 {
		t.Errorf("answer of %d bytes", len(r.body))
	}
	if growth > 200<<20 {
		t.Errorf("the node's peak RSS grew by %d MB (from %d MB)", growth>>20, rss>>20)
	}
	if after := abuseDo(t, "GET", coll+"/target", "", nil); after.code != 200 || !bytes.Equal(after.body, before.body) {
		t.Errorf("the Lease changed:\nbefore %s\nafter  %s", before.body, after.body)
	}
}

// TestAbuseLabelBomb: a Lease of 100,000 labels in one body, as JSON and
// as YAML, is answered within a few seconds.
func TestAbuseLabelBomb(t *testing.T) {
	pc := newProcCluster(t)
	base, _ := apiURL(pc.nodes[0].apiAddr)
	coll := base + "/apis/coordination.k8s.io/v1/namespaces/abuse/leases"
	const labels = 100000
	var js, ys strings.Builder
	js.WriteString(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"json","labels":{`)
	ys.WriteString("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: yaml\n  labels:\n")
	for i := range labels {
		if i > 0 {
			js.WriteByte(',')
		}
		fmt.Fprintf(&js, `"l%d":"v"`, i)
		fmt.Fprintf(&ys, "    l%d: v\n", i)
	}
	js.WriteString(`}}}`)
	for _, b := range []struct{ name, contentType, body string }{
		{"json", "application/json", js.String()},
		{"yaml", "application/yaml", ys.String()},
	} {
		r := abuseDo(t, "POST", coll, b.contentType, []byte(b.body))
		t.Logf("%s body of %d labels, %d bytes: HTTP %d in %v", b.name, labels, len(b.body), r.code, r.took)
		if r.code >= 500 {
			t.Errorf("%s: HTTP %d %.300s", b.name, r.code, r.body)
		}
		if r.took > 5*time.Second {
			t.Errorf("%s: answered in %v, want within 5s", b.name, r.took)
		}
	}
}
