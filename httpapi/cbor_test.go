package httpapi_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// TestCBORRefused: CBOR, client-go's opt-in encoding, is refused the way
// client-go expects in order to fall back: 415 for a CBOR body, 406 when
// CBOR is the only acceptable answer; Audit-Id is on every answer.
func TestCBORRefused(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	w := newWire(t, c, 0)
	r := w.do("POST", nsPath("cbor"), []byte{0xa1, 0x61, 0x61, 0x01}, "Content-Type", "application/cbor")
	r.status(t, statusWant{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, prefix: true,
		msg: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"})
	if r.header.Get("Audit-Id") == "" {
		t.Error("no Audit-Id header")
	}
	w.do("GET", nsPath("cbor"), nil, "Accept", "application/cbor").status(t, statusWant{code: 406, reason: metav1.StatusReasonNotAcceptable, prefix: true,
		msg: "only the following media types are accepted"})
	if got := w.do("GET", "/version", nil, "Audit-ID", "my-id").header.Get("Audit-Id"); got != "my-id" {
		t.Errorf("Audit-Id %q, want the client's my-id", got)
	}
}
