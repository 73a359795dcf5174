package httpapi_test

import (
	"strings"
	"testing"

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
