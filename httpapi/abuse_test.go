package httpapi_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestBadResourceVersionIsBadRequest: a resourceVersion that is no number
// is the client's mistake, 400 BadRequest naming the field, wherever it
// comes: the parameter of a get, list or watch (kube-apiserver answers
// 500 there), or the object of an update, a patch or an apply. A long one
// is not quoted back.
func TestBadResourceVersionIsBadRequest(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := newWire(t, c, 0)
	w.create("rv", "l", "a", nil)

	param := statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
		msg: `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`}
	for _, q := range []string{"", "&resourceVersionMatch=NotOlderThan", "&watch=true", "&watch=true&allowWatchBookmarks=true"} {
		w.do("GET", nsPath("rv")+"?resourceVersion=abc"+q, nil).status(t, param)
	}
	w.do("GET", itemPath("rv", "l")+"?resourceVersion=abc", nil).status(t, param)
	w.do("GET", "/apis/coordination.k8s.io/v1/leases?resourceVersion=abc", nil).status(t, param)

	long := strings.Repeat("x", 100<<10)
	r := w.do("GET", nsPath("rv")+"?resourceVersion="+long, nil)
	r.status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
		msg: `resourceVersion: Invalid value: strconv.ParseUint: invalid syntax (102400 bytes)`})

	object := statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
		msg: `metadata.resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`}
	body := leaseBody("", "l", "b")
	body["metadata"].(map[string]any)["resourceVersion"] = "abc"
	w.do("PUT", itemPath("rv", "l"), body).status(t, object)
	w.do("PATCH", itemPath("rv", "l"), `{"metadata":{"resourceVersion":"abc"}}`, "Content-Type", "application/merge-patch+json").status(t, object)
	w.do("PATCH", itemPath("rv", "l"), `[{"op":"replace","path":"/metadata/resourceVersion","value":"abc"}]`, "Content-Type", "application/json-patch+json").status(t, object)
	w.do("PATCH", itemPath("rv", "l"), `{"metadata":{"resourceVersion":"abc"}}`, "Content-Type", "application/strategic-merge-patch+json").status(t, object)
	w.do("PATCH", itemPath("rv", "l")+"?fieldManager=m",
		"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  resourceVersion: abc\n", "Content-Type", applyCT).status(t, object)

	if got := w.do("GET", itemPath("rv", "l"), nil).lease(t, 200); *got.Spec.HolderIdentity != "a" {
		t.Errorf("holder %q after refused writes, want a", *got.Spec.HolderIdentity)
	}
}

// patchBomb is a JSON patch that adds an annotation of size bytes, then
// copies the annotations into themselves copies times, each copy
// doubling the document.
func patchBomb(size, copies int) []byte {
	ops := []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"a": strings.Repeat("x", size)}}}
	for i := range copies {
		ops = append(ops, map[string]any{"op": "copy", "from": "/metadata/annotations", "path": fmt.Sprintf("/metadata/annotations/c%d", i)})
	}
	b, _ := json.Marshal(ops)
	return b
}

// TestPatchBomb: a JSON patch of an add of a megabyte and eight copies,
// each doubling the document (256 MB at the end), is refused within a
// second without the node allocating more than a few times its body,
// with a Status that names the limit and stays small; so is a patch of
// more than 10,000 operations, and one whose adds, or a merge patch's,
// grow the object past --max-request-bytes. The Lease is unchanged.
func TestPatchBomb(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := newWire(t, c, 0)
	before := w.create("bomb", "l", "a", nil)
	path := itemPath("bomb", "l")
	const jsonPatch, mergePatch = "application/json-patch+json", "application/merge-patch+json"

	bomb := patchBomb(1<<20, 8)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocated := ms.TotalAlloc
	start := time.Now()
	r := w.do("PATCH", path, bomb, "Content-Type", jsonPatch)
	took := time.Since(start)
	runtime.ReadMemStats(&ms)
	allocated = ms.TotalAlloc - allocated
	t.Logf("patch bomb of %d bytes: answered in %v, %d bytes allocated, answer of %d bytes", len(bomb), took, allocated, len(r.body))
	r.status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, prefix: true,
		msg: "the copy operations of a JSON patch may not add more than 1572864 bytes to the object (--max-request-bytes): " +
			"Unable to complete the copy, the accumulated size increase of copy is "})
	if took > 5*time.Second {
		t.Errorf("answered in %v", took)
	}
	if allocated > 64<<20 {
		t.Errorf("%d bytes allocated for a body of %d", allocated, len(bomb))
	}
	if len(r.body) > 4<<10 {
		t.Errorf("answer of %d bytes", len(r.body))
	}

	ops := make([]map[string]any, 10001)
	for i := range ops {
		ops[i] = map[string]any{"op": "test", "path": "/metadata/name", "value": "l"}
	}
	w.do("PATCH", path, ops, "Content-Type", jsonPatch).status(t, statusWant{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge,
		msg: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"})
	if r := w.do("PATCH", path, ops[:10000], "Content-Type", jsonPatch); r.code != 200 {
		t.Errorf("a patch of 10,000 operations: %v", r)
	}

	big := strings.Repeat("y", 800<<10)
	grow := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations","value":{"a":%q,"b":%q}}]`, big, big)
	tooLarge := statusWant{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, prefix: true, msg: "Request entity too large: the patched object is "}
	r = w.do("PATCH", path, grow, "Content-Type", jsonPatch)
	r.status(t, tooLarge)
	if m := statusMessage(t, r); !strings.HasSuffix(m, " bytes, more than the limit of 1572864 bytes (--max-request-bytes)") {
		t.Errorf("message %q does not name --max-request-bytes", m)
	}
	w.do("PATCH", path, fmt.Sprintf(`{"metadata":{"annotations":{"a":%q,"b":%q}}}`, big, big), "Content-Type", mergePatch).status(t, tooLarge)
	w.do("PATCH", path, fmt.Sprintf(`{"metadata":{"annotations":{"a":%q,"b":%q}}}`, big, big), "Content-Type", "application/strategic-merge-patch+json").status(t, tooLarge)

	after := w.do("GET", path, nil).lease(t, 200)
	if after.ResourceVersion != before.ResourceVersion || len(after.Annotations) != 0 {
		t.Errorf("the Lease changed: resourceVersion %s -> %s, %d annotations", before.ResourceVersion, after.ResourceVersion, len(after.Annotations))
	}
}

func statusMessage(t *testing.T, r wireResp) string {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("%v: %v", r, err)
	}
	return st.Message
}

// TestErrorsDoNotEchoBodies: an error answer to a large bad request stays
// small: a patch whose result does not decode, thousands of unknown
// fields (refused, or warned about), thousands of invalid labels, a name
// of 100 KB.
func TestErrorsDoNotEchoBodies(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := newWire(t, c, 0)
	w.create("echo", "l", "a", nil)
	small := func(what string, r wireResp, code int) {
		t.Helper()
		headers := 0
		for k, vs := range r.header {
			for _, v := range vs {
				headers += len(k) + len(v)
			}
		}
		t.Logf("%s: HTTP %d, %d bytes, headers %d bytes", what, r.code, len(r.body), headers)
		if r.code != code || len(r.body) > 64<<10 || headers > 16<<10 {
			t.Errorf("%s: HTTP %d (want %d), %d bytes, headers %d bytes: %.300s", what, r.code, code, len(r.body), headers, r.body)
		}
	}
	mb := strings.Repeat("z", 1<<20)

	r := w.do("PATCH", itemPath("echo", "l"), fmt.Sprintf(`[{"op":"add","path":"/spec/leaseDurationSeconds","value":%q}]`, mb), "Content-Type", "application/json-patch+json")
	small("a patch that does not decode", r, 422)
	r.status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, prefix: true, msg: ` "" is invalid: patch: Invalid value: json: cannot unmarshal string`})

	var unknown strings.Builder
	unknown.WriteString(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"u"}`)
	for i := range 50000 {
		fmt.Fprintf(&unknown, `,"unknown-field-%d":1`, i)
	}
	unknown.WriteString(`}`)
	small("50,000 unknown fields, strict", w.do("POST", nsPath("echo")+"?fieldValidation=Strict", unknown.String()), 400)
	small("50,000 unknown fields, warned", w.do("POST", nsPath("echo"), unknown.String()), 201)
	long := fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"long"},%q:1,%q:2}`, mb, mb+"2")
	small("unknown fields of a megabyte, warned", w.do("POST", nsPath("echo"), long), 201)
	small("unknown fields of a megabyte, strict", w.do("POST", nsPath("echo")+"?fieldValidation=Strict", long), 400)

	labels := map[string]string{}
	for i := range 2000 {
		labels[fmt.Sprintf("l%d", i)] = strings.Repeat("!", 1000)
	}
	body := leaseBody("", "bad-labels", "a")
	body["metadata"].(map[string]any)["labels"] = labels
	small("2,000 invalid labels", w.do("POST", nsPath("echo"), body), 422)

	small("a name of 100 KB", w.do("GET", itemPath("echo", strings.Repeat("n", 100<<10)), nil), 404)
}
