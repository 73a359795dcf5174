package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/testcluster"
)

const group = "/apis/coordination.k8s.io/v1"

// wireClient sends raw requests to one member.
type wireClient struct {
	t    *testing.T
	base string // the member's URL
	hc   *http.Client
}

func newWire(t *testing.T, c *testcluster.Cluster, i int) *wireClient {
	return &wireClient{t: t, base: c.Nodes[i].URL(), hc: &http.Client{Timeout: opTimeout, Transport: &http.Transport{}}}
}

// with returns the client for another test.
func (w *wireClient) with(t *testing.T) *wireClient { c := *w; c.t = t; return &c }

type wireResp struct {
	code   int
	header http.Header
	body   []byte
}

// do sends method path (relative to the member) with body and header
// pairs ("Content-Type", "...", ...). A JSON body defaults to
// Content-Type application/json.
func (w *wireClient) do(method, path string, body any, hdr ...string) wireResp {
	w.t.Helper()
	var r io.Reader
	var ct string
	switch b := body.(type) {
	case nil:
	case string:
		r, ct = strings.NewReader(b), "application/json"
	case []byte:
		r, ct = bytes.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			w.t.Fatal(err)
		}
		r, ct = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequest(method, w.base+path, r)
	if err != nil {
		w.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return wireResp{code: resp.StatusCode, header: resp.Header, body: data}
}

func (r wireResp) String() string {
	return fmt.Sprintf("HTTP %d %s: %s", r.code, r.header.Get("Content-Type"), r.body)
}

// lease decodes a JSON Lease answer with code.
func (r wireResp) lease(t *testing.T, code int) *coordinationv1.Lease {
	t.Helper()
	if r.code != code || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %v, want HTTP %d application/json", r, code)
	}
	var l coordinationv1.Lease
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	if l.Kind != "Lease" || l.APIVersion != "coordination.k8s.io/v1" {
		t.Errorf("kind %q apiVersion %q", l.Kind, l.APIVersion)
	}
	return &l
}

// statusWant is the expected Status of an error answer. msg is exact
// unless prefix or suffix is set.
type statusWant struct {
	code    int
	reason  metav1.StatusReason
	msg     string
	prefix  bool
	details *metav1.StatusDetails // compared if set (causes only if set)
}

// status checks an error answer: HTTP code, JSON Content-Type, a Status
// with kind, apiVersion, status Failure and the wanted fields.
func (r wireResp) status(t *testing.T, want statusWant) metav1.Status {
	t.Helper()
	if r.code != want.code {
		t.Fatalf("got %v, want HTTP %d", r, want.code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var st metav1.Status
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("decode Status %s: %v", r.body, err)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || int(st.Code) != want.code || st.Reason != want.reason {
		t.Errorf("Status %s: want code %d reason %q", r.body, want.code, want.reason)
	}
	if !bytes.Contains(r.body, []byte(`"metadata":{}`)) {
		t.Errorf("Status %s has no empty metadata", r.body)
	}
	if want.reason == "" && bytes.Contains(r.body, []byte(`"reason"`)) {
		t.Errorf("Status %s has a reason, want none", r.body)
	}
	if want.prefix {
		if !strings.HasPrefix(st.Message, want.msg) {
			t.Errorf("message %q, want prefix %q", st.Message, want.msg)
		}
	} else if st.Message != want.msg {
		t.Errorf("message\n %q, want\n %q", st.Message, want.msg)
	}
	if d := want.details; d != nil {
		if st.Details == nil {
			t.Errorf("no details in %s", r.body)
		} else {
			got := *st.Details
			if d.Causes == nil {
				got.Causes = nil
			}
			if d.RetryAfterSeconds == 0 {
				got.RetryAfterSeconds = 0
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(d)
			if !bytes.Equal(gj, wj) {
				t.Errorf("details %s, want %s", gj, wj)
			}
		}
	}
	return st
}

func leasesDetails(name string) *metav1.StatusDetails {
	return &metav1.StatusDetails{Name: name, Group: "coordination.k8s.io", Kind: "leases"}
}

func leaseBody(ns, name, holder string) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	return map[string]any{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": md,
		"spec": map[string]any{"holderIdentity": holder, "leaseDurationSeconds": 10},
	}
}

func nsPath(ns string) string         { return group + "/namespaces/" + ns + "/leases" }
func itemPath(ns, name string) string { return nsPath(ns) + "/" + name }

// create makes a lease through w and returns it.
func (w *wireClient) create(ns, name, holder string, labels map[string]string) *coordinationv1.Lease {
	w.t.Helper()
	b := leaseBody("", name, holder)
	if labels != nil {
		b["metadata"].(map[string]any)["labels"] = labels
	}
	return w.do("POST", nsPath(ns), b).lease(w.t, http.StatusCreated)
}

// TestWireErrors checks status codes, Content-Type and Status bodies of
// error answers with raw requests against a follower (writes are
// forwarded, so the bodies cross the peer port too).
func TestWireErrors(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	wc := newWire(t, c, c.Follower())

	t.Run("not_found", func(t *testing.T) {
		w := wc.with(t)
		want := statusWant{code: 404, reason: metav1.StatusReasonNotFound, msg: `leases.coordination.k8s.io "x" not found`, details: leasesDetails("x")}
		w.do("GET", itemPath("nf", "x"), nil).status(t, want)
		w.do("DELETE", itemPath("nf", "x"), nil).status(t, want)
		w.do("PATCH", itemPath("nf", "x"), `{"spec":{}}`, "Content-Type", "application/merge-patch+json").status(t, want)
		w.do("GET", itemPath("nf", "x")+"?resourceVersion=0", nil).status(t, want)
	})

	t.Run("already_exists_and_conflict", func(t *testing.T) {
		w := wc.with(t)
		cur := w.create("ae", "x", "a", nil)
		w.do("POST", nsPath("ae"), leaseBody("", "x", "b")).status(t, statusWant{code: 409, reason: metav1.StatusReasonAlreadyExists,
			msg: `leases.coordination.k8s.io "x" already exists`, details: leasesDetails("x")})
		stale := leaseBody("", "x", "c")
		stale["metadata"].(map[string]any)["resourceVersion"] = strconv.FormatUint(rvOf(t, cur.ResourceVersion)-1, 10)
		conflictMsg := `Operation cannot be fulfilled on leases.coordination.k8s.io "x": the object has been modified; please apply your changes to the latest version and try again`
		w.do("PUT", itemPath("ae", "x"), stale).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict, msg: conflictMsg, details: leasesDetails("x")})
		w.do("PATCH", itemPath("ae", "x"), `{"metadata":{"resourceVersion":"1"}}`, "Content-Type", "application/merge-patch+json").
			status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict, msg: conflictMsg, details: leasesDetails("x")})
		// A uid in the body of an update is a precondition.
		other := leaseBody("", "x", "c")
		other["metadata"].(map[string]any)["resourceVersion"] = cur.ResourceVersion
		other["metadata"].(map[string]any)["uid"] = "nope"
		w.do("PUT", itemPath("ae", "x"), other).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict,
			msg:     `Operation cannot be fulfilled on leases.coordination.k8s.io "x": StorageError: invalid object, Code: 4, Key: /registry/leases/ae/x, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: nope, UID in object meta: ` + string(cur.UID),
			details: leasesDetails("x")})
		// So are delete preconditions.
		w.do("DELETE", itemPath("ae", "x"), `{"preconditions":{"resourceVersion":"1"}}`).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict,
			msg:     `Operation cannot be fulfilled on leases.coordination.k8s.io "x": StorageError: invalid object, Code: 4, Key: /registry/leases/ae/x, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ` + cur.ResourceVersion,
			details: leasesDetails("x")})
		w.do("DELETE", itemPath("ae", "x"), `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"nope"}}`).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict,
			msg:     `Operation cannot be fulfilled on leases.coordination.k8s.io "x": StorageError: invalid object, Code: 4, Key: /registry/leases/ae/x, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: nope, UID in object meta: ` + string(cur.UID),
			details: leasesDetails("x")})
	})

	t.Run("validation", func(t *testing.T) {
		w := wc.with(t)
		invalid := func(name string, spec map[string]any, msg string, causes ...metav1.StatusCause) {
			t.Helper()
			b := leaseBody("", name, "h")
			for k, v := range spec {
				b["spec"].(map[string]any)[k] = v
			}
			w.do("POST", nsPath("val"), b).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: msg,
				details: &metav1.StatusDetails{Name: name, Group: "coordination.k8s.io", Kind: "Lease", Causes: causes}})
		}
		invalid("x", map[string]any{"leaseDurationSeconds": 0},
			`Lease.coordination.k8s.io "x" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be greater than 0", Field: "spec.leaseDurationSeconds"})
		invalid("x", map[string]any{"leaseTransitions": -1},
			`Lease.coordination.k8s.io "x" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: -1: must be greater than or equal to 0", Field: "spec.leaseTransitions"})
		invalid("x", map[string]any{"leaseDurationSeconds": 0, "leaseTransitions": -1},
			`Lease.coordination.k8s.io "x" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be greater than 0", Field: "spec.leaseDurationSeconds"},
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: -1: must be greater than or equal to 0", Field: "spec.leaseTransitions"})
		invalid("x", map[string]any{"strategy": "Foo"},
			`Lease.coordination.k8s.io "x" is invalid: spec.strategy.strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"`,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueNotSupported, Message: `Unsupported value: "Foo": supported values: "OldestEmulationVersion"`, Field: "spec.strategy.strategy"})
		invalid("x", map[string]any{"preferredHolder": "p"},
			"Lease.coordination.k8s.io \"x\" is invalid: spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
			metav1.StatusCause{Type: metav1.CauseTypeForbidden, Message: "Forbidden: may only be specified if `strategy` is defined", Field: "spec.preferredHolder"})
		// A qualified strategy and a preferred holder with it are fine.
		ok := leaseBody("", "qualified", "h")
		ok["spec"].(map[string]any)["strategy"] = "example.com/mine"
		ok["spec"].(map[string]any)["preferredHolder"] = "p"
		w.do("POST", nsPath("val"), ok).lease(t, http.StatusCreated)

		st := w.do("POST", nsPath("val"), leaseBody("", "Bad_Name", "h")).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg: `Lease.coordination.k8s.io "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of`, prefix: true})
		if st.Details == nil || st.Details.Kind != "Lease" || st.Details.Name != "Bad_Name" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "metadata.name" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("bad name details %+v", st.Details)
		}
		w.do("POST", nsPath("val"), `{"spec":{}}`).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg: `Lease.coordination.k8s.io "" is invalid: metadata.name: Required value: name or generateName is required`,
			details: &metav1.StatusDetails{Group: "coordination.k8s.io", Kind: "Lease", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueRequired, Message: "Required value: name or generateName is required", Field: "metadata.name"}}}})

		// An update of an existing lease without resourceVersion.
		u := w.create("val", "u", "h", nil)
		// Updates are validated like creates.
		w.do("PUT", itemPath("val", "u"), `{"metadata":{"name":"u","resourceVersion":"`+u.ResourceVersion+`"},"spec":{"leaseDurationSeconds":0}}`).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg:     `Lease.coordination.k8s.io "u" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`,
			details: &metav1.StatusDetails{Name: "u", Group: "coordination.k8s.io", Kind: "Lease"}})
		w.do("PATCH", itemPath("val", "u"), `{"spec":{"strategy":"Foo"}}`, "Content-Type", "application/merge-patch+json").status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg:     `Lease.coordination.k8s.io "u" is invalid: spec.strategy.strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"`,
			details: &metav1.StatusDetails{Name: "u", Group: "coordination.k8s.io", Kind: "Lease"}})
		w.do("PUT", itemPath("val", "u"), leaseBody("", "u", "h2")).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg: `leases.coordination.k8s.io "u" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
			details: &metav1.StatusDetails{Name: "u", Group: "coordination.k8s.io", Kind: "leases", Causes: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Message: "Invalid value: 0: must be specified for an update", Field: "metadata.resourceVersion"}}}})
	})

	t.Run("bad_bodies", func(t *testing.T) {
		w := wc.with(t)
		bad := func(method, path, body, msg string, prefix bool) {
			t.Helper()
			w.do(method, path, body).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: msg, prefix: prefix})
		}
		bad("POST", nsPath("bb"), `{"spec":`, `the object provided is unrecognized (must be of type Lease): couldn't get version/kind; json parse error: unexpected end of JSON input ({"spec":)`, false)
		r := w.do("POST", nsPath("bb"), `{"metadata":{"name":"long"},"spec":{"holderIdentity":"xxxxxxxxxxxxxxxx"`)
		st := r.status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "the object provided is unrecognized (must be of type Lease): ", prefix: true})
		if !strings.HasSuffix(st.Message, ` ({"metadata":{"name":"long"},"s ...)`) {
			t.Errorf("message %q does not end with the body's first 30 bytes", st.Message)
		}
		bad("POST", nsPath("bb"), `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"t"},"spec":{"holderIdentity":5}}`,
			`Lease in version "v1" cannot be handled as a Lease: `, true)
		// MicroTime needs exactly 6 fractional digits.
		for _, ts := range []string{"2024-01-01T00:00:00Z", "2024-01-01T00:00:00.123Z", "2024-01-01T00:00:00.123456789Z"} {
			bad("POST", nsPath("bb"), `{"metadata":{"name":"t"},"spec":{"renewTime":"`+ts+`"}}`, `Lease in version "v1" cannot be handled as a Lease: `, true)
		}
		// Another group or version in the body.
		for _, gv := range []string{"coordination.k8s.io/v1beta1", "v1", "example.com/v1"} {
			bad("POST", nsPath("bb"), `{"apiVersion":"`+gv+`","kind":"Lease","metadata":{"name":"t"}}`,
				`the API version in the data (`+gv+`) does not match the expected API version (coordination.k8s.io/v1)`, false)
		}
		w.do("POST", nsPath("bb"), `{"apiVersion":"coordination.k8s.io/v1","kind":"ConfigMap","metadata":{"name":"t"}}`).
			status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: `ConfigMap in version "v1" cannot be handled as a Lease`, prefix: true})
		bad("POST", nsPath("bb"), `{"metadata":{"name":"t","namespace":"other"}}`, "the namespace of the provided object does not match the namespace sent on the request", false)
		cur := w.create("bb", "x", "h", nil)
		body := leaseBody("other", "x", "h")
		body["metadata"].(map[string]any)["resourceVersion"] = cur.ResourceVersion
		data, _ := json.Marshal(body)
		bad("PUT", itemPath("bb", "x"), string(data), "the namespace of the provided object does not match the namespace sent on the request", false)
		bad("PUT", itemPath("bb", "x"), `{"metadata":{"name":"y","resourceVersion":"`+cur.ResourceVersion+`"}}`, "the name of the object (y) does not match the name on the URL (x)", false)
		bad("PUT", itemPath("bb", "x"), `{"metadata":{"resourceVersion":"`+cur.ResourceVersion+`"}}`, "the name of the object () does not match the name on the URL (x)", false)
		w.do("PATCH", itemPath("bb", "x"), `{"metadata":{"name":"y"}}`, "Content-Type", "application/merge-patch+json").status(t,
			statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "the name of the object (y) does not match the name on the URL (x)"})
		// A namespace-less body takes the URL's namespace.
		if l := w.do("POST", nsPath("bb"), `{"metadata":{"name":"defaulted"}}`).lease(t, http.StatusCreated); l.Namespace != "bb" {
			t.Errorf("namespace %q, want bb", l.Namespace)
		}
		// POST with a resourceVersion: 500 without reason (dry-run skips the check).
		rvBody := `{"metadata":{"name":"withrv","resourceVersion":"5"}}`
		w.do("POST", nsPath("bb"), rvBody).status(t, statusWant{code: 500, msg: "resourceVersion should not be set on objects to be created"})
		if l := w.do("POST", nsPath("bb")+"?dryRun=All", rvBody).lease(t, http.StatusCreated); l.ResourceVersion != "" {
			t.Errorf("dry-run create answered RV %q", l.ResourceVersion)
		}
	})

	t.Run("methods_and_sizes", func(t *testing.T) {
		w := wc.with(t)
		na := statusWant{code: 405, reason: metav1.StatusReasonMethodNotAllowed, msg: "the server does not allow this method on the requested resource", details: &metav1.StatusDetails{}}
		for _, tc := range []struct {
			method, path string
		}{
			{"POST", itemPath("m", "x")},
			{"PUT", nsPath("m")},
			{"PATCH", nsPath("m")},
			{"POST", group + "/leases"},
			{"DELETE", group + "/leases"},
		} {
			r := w.do(tc.method, tc.path, `{}`)
			r.status(t, na)
			if !bytes.Contains(r.body, []byte(`"details":{}`)) {
				t.Errorf("%s %s: body %s lacks \"details\":{}", tc.method, tc.path, r.body)
			}
			allow := strings.Split(r.header.Get("Allow"), ", ")
			if !slices.Contains(allow, "GET") || slices.Contains(allow, tc.method) {
				t.Errorf("%s %s: Allow %q", tc.method, tc.path, r.header.Get("Allow"))
			}
		}

		big := `{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("a", 3<<20) + `"}}}`
		w.do("POST", nsPath("m"), big).status(t, statusWant{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, msg: "Request entity too large: ", prefix: true})
		w.create("m", "x", "h", nil)
		w.do("PATCH", itemPath("m", "x"), big, "Content-Type", "application/merge-patch+json").
			status(t, statusWant{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, msg: "Request entity too large: ", prefix: true})

		unknownFormat := "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
		w.do("POST", nsPath("m"), `{"metadata":{"name":"t"}}`, "Content-Type", "text/plain").
			status(t, statusWant{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, msg: unknownFormat})
		w.do("PUT", itemPath("m", "x"), `{"metadata":{"name":"x"}}`, "Content-Type", "application/xml").
			status(t, statusWant{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, msg: unknownFormat})
		for _, ct := range []string{"application/json", "application/foo", "text/plain"} {
			r := w.do("PATCH", itemPath("m", "x"), `{"spec":{}}`, "Content-Type", ct)
			if r.code != 415 || string(r.body) != "415: Unsupported Media Type" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
				t.Errorf("PATCH with %s: %v", ct, r)
			}
		}
		// A charset parameter is tolerated.
		if r := w.do("PATCH", itemPath("m", "x"), `{"spec":{"holderIdentity":"cs"}}`, "Content-Type", "application/merge-patch+json; charset=utf-8"); r.code != 200 {
			t.Errorf("PATCH with a charset: %v", r)
		}

		notAcceptable := statusWant{code: 406, reason: metav1.StatusReasonNotAcceptable,
			msg: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}
		w.do("GET", itemPath("m", "x"), nil, "Accept", "text/csv").status(t, notAcceptable)
		w.do("GET", nsPath("m"), nil, "Accept", "text/csv").status(t, notAcceptable)
		w.do("POST", nsPath("m"), `{"metadata":{"name":"na"}}`, "Accept", "text/csv").status(t, notAcceptable)
		// The first acceptable entry wins.
		if r := w.do("GET", itemPath("m", "x"), nil, "Accept", "text/csv, application/json;q=0.5"); r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("Accept with a JSON fallback: %v", r)
		}
		if r := w.do("GET", itemPath("m", "x"), nil, "Accept", "*/*"); r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("Accept */*: %v", r)
		}
	})

	t.Run("field_validation", func(t *testing.T) {
		w := wc.with(t)
		unknown := `{"metadata":{"name":"NAME"},"spec":{"holderIdentity":"a","foo":1}}`
		body := func(name string) string { return strings.Replace(unknown, "NAME", name, 1) }
		w.do("POST", nsPath("fv")+"?fieldValidation=Strict", body("strict")).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
			msg: `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.foo"`})
		st := w.do("POST", nsPath("fv")+"?fieldValidation=Strict", `{"metadata":{"name":"strict"},"spec":{"foo":1,"bar":2}}`).
			status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.`, prefix: true})
		if !strings.Contains(st.Message, `unknown field "spec.foo"`) || !strings.Contains(st.Message, `unknown field "spec.bar"`) {
			t.Errorf("strict message %q does not name both fields", st.Message)
		}
		for _, fv := range []string{"Warn", ""} {
			name := "warn" + strings.ToLower(fv)
			r := w.do("POST", nsPath("fv")+"?fieldValidation="+fv, body(name))
			r.lease(t, http.StatusCreated)
			if got := r.header.Values("Warning"); !slices.Equal(got, []string{`299 - "unknown field \"spec.foo\""`}) {
				t.Errorf("fieldValidation=%q: Warning %q", fv, got)
			}
		}
		r := w.do("POST", nsPath("fv")+"?fieldValidation=Ignore", body("ignore"))
		r.lease(t, http.StatusCreated)
		if got := r.header.Values("Warning"); len(got) != 0 {
			t.Errorf("fieldValidation=Ignore: Warning %q", got)
		}
		// Duplicate fields: the last one wins, with a warning.
		r = w.do("POST", nsPath("fv"), `{"metadata":{"name":"dup"},"spec":{"holderIdentity":"a","holderIdentity":"b"}}`)
		if l := r.lease(t, http.StatusCreated); holder(l) != "b" {
			t.Errorf("duplicate field: holder %q, want the last one", holder(l))
		}
		if got := r.header.Values("Warning"); !slices.Equal(got, []string{`299 - "duplicate field \"spec.holderIdentity\""`}) {
			t.Errorf("duplicate field: Warning %q", got)
		}
		// Update and patch too.
		cur := w.create("fv", "upd", "a", nil)
		w.do("PUT", itemPath("fv", "upd")+"?fieldValidation=Strict", `{"metadata":{"name":"upd","resourceVersion":"`+cur.ResourceVersion+`"},"spec":{"foo":1}}`).
			status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: `Lease in version "v1" cannot be handled as a Lease: strict decoding error: unknown field "spec.foo"`})
		st = w.do("PATCH", itemPath("fv", "upd")+"?fieldValidation=Strict", `{"spec":{"foo":1}}`, "Content-Type", "application/merge-patch+json").
			status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: ` "" is invalid: patch: Invalid value: "`, prefix: true})
		if !strings.HasSuffix(st.Message, `: strict decoding error: unknown field "spec.foo"`) || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "patch" || st.Details.Name != "" || st.Details.Kind != "" {
			t.Errorf("strict patch: %q %+v", st.Message, st.Details)
		}
		r = w.do("PATCH", itemPath("fv", "upd"), `{"spec":{"foo":1,"holderIdentity":"p"}}`, "Content-Type", "application/merge-patch+json")
		if l := r.lease(t, http.StatusOK); holder(l) != "p" {
			t.Errorf("patch with an unknown field: holder %q", holder(l))
		}
		if got := r.header.Values("Warning"); !slices.Equal(got, []string{`299 - "unknown field \"spec.foo\""`}) {
			t.Errorf("patch with an unknown field: Warning %q", got)
		}
	})

	t.Run("query_options", func(t *testing.T) {
		w := wc.with(t)
		w.create("qo", "x", "h", nil)
		opts := func(kind, msg string) statusWant {
			return statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: kind + `.meta.k8s.io "" is invalid: ` + msg}
		}
		st := w.do("POST", nsPath("qo")+"?fieldValidation=Bogus", leaseBody("", "y", "h")).
			status(t, opts("CreateOptions", `fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`))
		if d := st.Details; d == nil || d.Group != "meta.k8s.io" || d.Kind != "CreateOptions" || d.Name != "" || len(d.Causes) != 1 || d.Causes[0].Type != metav1.CauseTypeFieldValueNotSupported || d.Causes[0].Field != "fieldValidation" {
			t.Errorf("details %+v", st.Details)
		}
		dry := `dryRun: Unsupported value: ["x"]: supported values: "All"`
		w.do("POST", nsPath("qo")+"?dryRun=x", leaseBody("", "y", "h")).status(t, opts("CreateOptions", dry))
		w.do("PUT", itemPath("qo", "x")+"?dryRun=x", leaseBody("", "x", "h")).status(t, opts("UpdateOptions", dry))
		w.do("PATCH", itemPath("qo", "x")+"?dryRun=x", `{}`, "Content-Type", "application/merge-patch+json").status(t, opts("PatchOptions", dry))
		w.do("DELETE", itemPath("qo", "x")+"?dryRun=x", nil).status(t, opts("DeleteOptions", dry))
		w.do("DELETE", nsPath("qo")+"?dryRun=x", nil).status(t, opts("DeleteOptions", dry))
		for _, pt := range []string{"application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"} {
			body := `{}`
			if pt == "application/json-patch+json" {
				body = `[]`
			}
			w.do("PATCH", itemPath("qo", "x")+"?force=true", body, "Content-Type", pt).
				status(t, opts("PatchOptions", "force: Forbidden: may not be specified for non-apply patch"))
		}
		w.do("DELETE", itemPath("qo", "x")+"?propagationPolicy=Bogus", nil).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
			msg: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bogus": supported values: `, prefix: true})
		w.do("DELETE", itemPath("qo", "x"), `{"orphanDependents":true,"propagationPolicy":"Background"}`).
			status(t, opts("DeleteOptions", `propagationPolicy: Invalid value: "Background": orphanDependents and deletionPropagation cannot be both set`))
		w.do("DELETE", itemPath("qo", "x")+"?orphanDependents=false&propagationPolicy=Orphan", nil).
			status(t, opts("DeleteOptions", `propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`))

		// Selectors.
		w.do("GET", nsPath("qo")+"?fieldSelector=spec.holderIdentity%3Dh", nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
			msg: `"spec.holderIdentity" is not a known field selector: only "metadata.name", "metadata.namespace"`})
		w.do("DELETE", nsPath("qo")+"?fieldSelector=spec.holderIdentity%3Dh", nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
			msg: `"spec.holderIdentity" is not a known field selector: only "metadata.name", "metadata.namespace"`})
		for _, sel := range []string{"a+in+(", "a%3D%3D%3Db", "!"} {
			w.do("GET", nsPath("qo")+"?labelSelector="+sel, nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "", prefix: true})
		}
		w.do("GET", nsPath("qo")+"?fieldSelector=metadata.name", nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "", prefix: true})

		// ListOptions.
		lo := func(q, msg string) {
			t.Helper()
			st := w.do("GET", nsPath("qo")+"?"+q, nil).status(t, opts("ListOptions", msg))
			if d := st.Details; d == nil || d.Group != "meta.k8s.io" || d.Kind != "ListOptions" || d.Name != "" || len(d.Causes) == 0 {
				t.Errorf("%s: details %+v", q, st.Details)
			}
		}
		lo("resourceVersionMatch=NotOlderThan", "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
		lo("resourceVersionMatch=Exact", "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
		lo("resourceVersion=0&resourceVersionMatch=Exact", `resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)
		lo("resourceVersion=1&resourceVersionMatch=Foo", `resourceVersionMatch: Unsupported value: "Foo": supported values: "Exact", "NotOlderThan", ""`)
		lo("sendInitialEvents=true", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")
		lo("sendInitialEvents=false", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")
		lo("watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan", "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
		lo("watch=true&sendInitialEvents=true", "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")

		page := w.do("GET", nsPath("qo")+"?limit=1", nil)
		var l coordinationv1.LeaseList
		if err := json.Unmarshal(page.body, &l); err != nil || page.code != 200 {
			t.Fatalf("list: %v %v", page, err)
		}
		w.create("qo", "y", "h", nil)
		page = w.do("GET", nsPath("qo")+"?limit=1", nil)
		if err := json.Unmarshal(page.body, &l); err != nil || l.Continue == "" {
			t.Fatalf("no continue token: %v %v", page, err)
		}
		lo("resourceVersion=1&resourceVersionMatch=NotOlderThan&continue="+l.Continue, "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided")
		w.do("GET", nsPath("qo")+"?resourceVersion=5&continue="+l.Continue, nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
			msg: "specifying resource version is not allowed when using continue"})
		if r := w.do("GET", nsPath("qo")+"?resourceVersion=0&continue="+l.Continue, nil); r.code != 200 {
			t.Errorf("continue with resourceVersion=0: %v", r)
		}
		for _, tok := range []string{"garbage!", "Z2FyYmFnZQ", base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v2","rv":1,"start":"a/b\u0000"}`))} {
			w.do("GET", nsPath("qo")+"?continue="+tok, nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: "invalid continue token: continue key is not valid: ", prefix: true})
		}

		abc := statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`}
		w.do("GET", nsPath("qo")+"?resourceVersion=abc", nil).status(t, abc)
		w.do("GET", itemPath("qo", "x")+"?resourceVersion=abc", nil).status(t, abc)
		w.do("GET", nsPath("qo")+"?watch=true&resourceVersion=abc", nil).status(t, abc)

		// A bad query value type.
		w.do("GET", nsPath("qo")+"?limit=abc", nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "", prefix: true})
	})

	t.Run("too_large_resource_version", func(t *testing.T) {
		t.Parallel()
		w := wc.with(t)
		far := uint64(1) << 40
		// The registry waits RVWait (3s; the harness does not expose it)
		// before giving up, so list and get run concurrently.
		var wg sync.WaitGroup
		for _, path := range []string{nsPath("tl") + "?resourceVersion=", itemPath("tl", "x") + "?resourceVersion=", nsPath("tl") + "?resourceVersionMatch=NotOlderThan&resourceVersion="} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				r := w.do("GET", path+strconv.FormatUint(far, 10), nil)
				st := r.status(t, statusWant{code: 504, reason: metav1.StatusReasonTimeout, msg: fmt.Sprintf("Timeout: Too large resource version: %d, current: ", far), prefix: true})
				cur, err := strconv.ParseUint(strings.TrimPrefix(st.Message, fmt.Sprintf("Timeout: Too large resource version: %d, current: ", far)), 10, 64)
				if err != nil || cur == 0 || cur >= far {
					t.Errorf("%s: message %q", path, st.Message)
				}
				if d := st.Details; d == nil || len(d.Causes) != 1 || d.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge || d.Causes[0].Message != "Too large resource version" {
					t.Errorf("%s: details %+v", path, st.Details)
				}
				if el := time.Since(start); el < time.Second || el > 10*time.Second {
					t.Errorf("%s: answered after %v, want after the registry's wait", path, el)
				}
			}()
		}
		wg.Wait()
	})

	t.Run("delete", func(t *testing.T) {
		w := wc.with(t)
		cur := w.create("del", "x", "h", nil)
		r := w.do("DELETE", itemPath("del", "x"), `{"propagationPolicy":"Background"}`)
		if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("delete: %v", r)
		}
		var got map[string]any
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
			"details": map[string]any{"name": "x", "group": "coordination.k8s.io", "kind": "leases", "uid": string(cur.UID)}}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("delete answer %s, want %s", gj, wj)
		}

		// A body's DeleteOptions win over the query's.
		cur = w.create("del", "y", "h", nil)
		if r := w.do("DELETE", itemPath("del", "y")+"?dryRun=bogus", `{"dryRun":["All"]}`); r.code != 200 {
			t.Errorf("delete with options in body and query: %v", r)
		}
		if r := w.do("DELETE", itemPath("del", "y")+"?dryRun=All", nil); r.code != 200 {
			t.Errorf("dry-run delete with query options: %v", r)
		}
		if l := w.do("GET", itemPath("del", "y"), nil).lease(t, 200); l.ResourceVersion != cur.ResourceVersion {
			t.Errorf("after dry-run deletes: RV %s, want %s", l.ResourceVersion, cur.ResourceVersion)
		}
		if r := w.do("DELETE", itemPath("del", "y")+"?gracePeriodSeconds=0&propagationPolicy=Foreground", nil); r.code != 200 {
			t.Errorf("delete with query options: %v", r)
		}
		w.do("GET", itemPath("del", "y"), nil).status(t, statusWant{code: 404, reason: metav1.StatusReasonNotFound, msg: `leases.coordination.k8s.io "y" not found`, details: leasesDetails("y")})
		w.do("DELETE", itemPath("del", "y"), `{"dryRun":`).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "", prefix: true})

		// deletecollection answers with the deleted items as a list.
		w.create("del", "a", "h", map[string]string{"x": "1"})
		w.create("del", "b", "h", map[string]string{"x": "2"})
		w.create("del", "c", "h", map[string]string{"x": "1"})
		r = w.do("DELETE", nsPath("del")+"?labelSelector=x%3D1", nil)
		var l coordinationv1.LeaseList
		if err := json.Unmarshal(r.body, &l); r.code != 200 || err != nil || l.Kind != "LeaseList" || len(l.Items) != 2 || l.Items[0].Name != "a" || l.Items[1].Name != "c" {
			t.Errorf("deletecollection: %v", r)
		}
		r = w.do("GET", nsPath("del"), nil)
		if err := json.Unmarshal(r.body, &l); err != nil || len(l.Items) != 1 || l.Items[0].Name != "b" {
			t.Errorf("after deletecollection: %v", r)
		}
	})
}

// TestWireEncodings checks content negotiation, pretty printing and the
// list wire form.
func TestWireEncodings(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := newWire(t, c, c.Follower())
	cur := w.create("enc", "x", "h", map[string]string{"a": "b"})

	r := w.do("GET", itemPath("enc", "x")+"?pretty=true", nil)
	if r.code != 200 || !bytes.HasPrefix(r.body, []byte("{\n  \"kind\": \"Lease\",\n  \"apiVersion\": \"coordination.k8s.io/v1\",\n  \"metadata\": {\n    \"name\": \"x\",")) {
		t.Errorf("pretty=true: %v", r)
	}
	r = w.do("GET", itemPath("enc", "x"), nil, "User-Agent", "curl/8.0")
	if !bytes.Contains(r.body, []byte("\n  \"kind\"")) {
		t.Errorf("curl user agent: not pretty: %s", r.body)
	}
	for _, q := range []string{"", "?pretty=false"} {
		r = w.do("GET", itemPath("enc", "x")+q, nil, "User-Agent", map[string]string{"": "Go-http-client/1.1", "?pretty=false": "curl/8.0"}[q])
		if bytes.Contains(bytes.TrimSpace(r.body), []byte("\n")) {
			t.Errorf("%q: pretty printed: %s", q, r.body)
		}
	}

	r = w.do("GET", itemPath("enc", "x"), nil, "Accept", "application/yaml")
	if r.code != 200 || r.header.Get("Content-Type") != "application/yaml" || !bytes.HasPrefix(r.body, []byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\n")) {
		t.Errorf("YAML: %v", r)
	}
	var y coordinationv1.Lease
	if err := yaml.Unmarshal(r.body, &y); err != nil || y.UID != cur.UID || holder(&y) != "h" || y.ResourceVersion != cur.ResourceVersion {
		t.Errorf("YAML decode: %+v %v", y, err)
	}
	r = w.do("GET", nsPath("enc"), nil, "Accept", "application/yaml")
	if r.code != 200 || !bytes.Contains(r.body, []byte("kind: LeaseList\n")) {
		t.Errorf("YAML list: %v", r)
	}
	// A YAML body is accepted.
	r = w.do("POST", nsPath("enc"), "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: fromyaml\nspec:\n  holderIdentity: yaml-holder\n", "Content-Type", "application/yaml")
	if l := r.lease(t, http.StatusCreated); holder(l) != "yaml-holder" {
		t.Errorf("YAML create: holder %q", holder(l))
	}

	r = w.do("GET", itemPath("enc", "x"), nil, "Accept", "application/vnd.kubernetes.protobuf")
	if r.code != 200 || r.header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || !bytes.HasPrefix(r.body, []byte("k8s\x00")) {
		t.Fatalf("protobuf: %q", r)
	}
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(r.body, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pl, ok := obj.(*coordinationv1.Lease); !ok || gvk.Kind != "Lease" || pl.UID != cur.UID || pl.ResourceVersion != cur.ResourceVersion || holder(pl) != "h" {
		t.Errorf("protobuf decode %v %#v", gvk, obj)
	}
	// Errors follow the negotiated encoding.
	r = w.do("GET", itemPath("enc", "missing"), nil, "Accept", "application/yaml")
	if r.code != 404 || r.header.Get("Content-Type") != "application/yaml" || !bytes.Contains(r.body, []byte("reason: NotFound")) {
		t.Errorf("YAML error: %v", r)
	}

	// Lists: items without kind, [] when empty, RV and no continue.
	r = w.do("GET", nsPath("empty"), nil)
	if r.code != 200 || !regexp.MustCompile(`^\{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":\{"resourceVersion":"\d+"\},"items":\[\]\}\n?$`).Match(r.body) {
		t.Errorf("empty list: %v", r)
	}
	r = w.do("GET", nsPath("enc"), nil)
	var raw struct {
		Items []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil || len(raw.Items) != 2 || raw.Items[0]["kind"] != nil || raw.Items[0]["spec"] == nil {
		t.Errorf("list items: %s", r.body)
	}
	// resourceVersion=0 serves the whole list, whatever the limit.
	var l coordinationv1.LeaseList
	if err := json.Unmarshal(w.do("GET", nsPath("enc")+"?resourceVersion=0&limit=1", nil).body, &l); err != nil || len(l.Items) != 2 || l.Continue != "" {
		t.Errorf("resourceVersion=0&limit=1: %+v %v", l, err)
	}
	// An exact list at an older version shows that version.
	if err := json.Unmarshal(w.do("GET", nsPath("enc")+"?resourceVersionMatch=Exact&resourceVersion="+cur.ResourceVersion, nil).body, &l); err != nil || len(l.Items) != 1 || l.ResourceVersion != cur.ResourceVersion {
		t.Errorf("exact list at %s: %+v %v", cur.ResourceVersion, l, err)
	}
	// With a limit, a plain resourceVersion is an exact one (legacy rule);
	// with NotOlderThan it is the latest state.
	if err := json.Unmarshal(w.do("GET", nsPath("enc")+"?limit=5&resourceVersion="+cur.ResourceVersion, nil).body, &l); err != nil || len(l.Items) != 1 || l.ResourceVersion != cur.ResourceVersion {
		t.Errorf("limit=5&resourceVersion=%s: %+v %v", cur.ResourceVersion, l, err)
	}
	if err := json.Unmarshal(w.do("GET", nsPath("enc")+"?limit=5&resourceVersionMatch=NotOlderThan&resourceVersion="+cur.ResourceVersion, nil).body, &l); err != nil || len(l.Items) != 2 || rvOf(t, l.ResourceVersion) <= rvOf(t, cur.ResourceVersion) {
		t.Errorf("limit=5 NotOlderThan %s: %+v %v", cur.ResourceVersion, l, err)
	}
	// ?watch on a named object is a plain get.
	if l := w.do("GET", itemPath("enc", "x")+"?watch=true", nil).lease(t, 200); l.UID != cur.UID {
		t.Errorf("watch=true on an item: %+v", l)
	}
	// MicroTime is written with 6 digits, in UTC.
	r = w.do("POST", nsPath("enc"), `{"metadata":{"name":"mt"},"spec":{"renewTime":"2024-05-06T07:08:09.123456+02:00"}}`)
	r.lease(t, http.StatusCreated)
	if !bytes.Contains(r.body, []byte(`"renewTime":"2024-05-06T05:08:09.123456Z"`)) {
		t.Errorf("MicroTime: %s", r.body)
	}
	// PUT of a missing lease creates it, ignoring its resourceVersion.
	r = w.do("PUT", itemPath("enc", "put"), `{"metadata":{"name":"put","resourceVersion":"99999"},"spec":{"holderIdentity":"p"}}`)
	if l := r.lease(t, http.StatusCreated); l.UID == "" || l.ResourceVersion == "99999" {
		t.Errorf("PUT-created: %+v", l.ObjectMeta)
	}
	// JSON patch bodies that are not a patch.
	w.do("PATCH", itemPath("enc", "x"), `{"op":"add"}`, "Content-Type", "application/json-patch+json").
		status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "", prefix: true})
	w.do("PATCH", itemPath("enc", "x"), `[{"op":"remove","path":"/spec/nothere"}]`, "Content-Type", "application/json-patch+json").
		status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: "", prefix: true})
}

// TestWireDiscovery checks version, discovery, health and unknown paths.
func TestWireDiscovery(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.Leader()
	w := newWire(t, c, c.Follower())
	getJSON := func(path string, into any) wireResp {
		t.Helper()
		r := w.do("GET", path, nil)
		if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %v", path, r)
		}
		if err := json.Unmarshal(r.body, into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return r
	}

	var v map[string]string
	getJSON("/version", &v)
	if v["major"] != "1" || v["minor"] != "32" || !strings.HasPrefix(v["gitVersion"], "v1.32.") || v["platform"] == "" || v["goVersion"] == "" || v["compiler"] != "gc" {
		t.Errorf("/version %v", v)
	}
	var av metav1.APIVersions
	getJSON("/api", &av)
	if av.Kind != "APIVersions" || !slices.Equal(av.Versions, []string{"v1"}) || len(av.ServerAddressByClientCIDRs) == 0 {
		t.Errorf("/api %+v", av)
	}
	var core metav1.APIResourceList
	r := getJSON("/api/v1", &core)
	if core.Kind != "APIResourceList" || core.GroupVersion != "v1" || !bytes.Contains(r.body, []byte(`"resources":[]`)) {
		t.Errorf("/api/v1 %s", r.body)
	}
	var gl metav1.APIGroupList
	getJSON("/apis", &gl)
	wantGroup := metav1.APIGroup{Name: "coordination.k8s.io",
		Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "coordination.k8s.io/v1", Version: "v1"}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "coordination.k8s.io/v1", Version: "v1"}}
	// coordination.k8s.io, rbac, then the review groups (kubectl auth).
	if gl.Kind != "APIGroupList" || len(gl.Groups) != 4 || gl.Groups[1].Name != "rbac.authorization.k8s.io" ||
		gl.Groups[2].Name != "authentication.k8s.io" || gl.Groups[3].Name != "authorization.k8s.io" || gl.Groups[0].Name != wantGroup.Name || gl.Groups[0].PreferredVersion != wantGroup.PreferredVersion || gl.Groups[0].Versions[0] != wantGroup.Versions[0] {
		t.Errorf("/apis %+v", gl)
	}
	for _, p := range []string{"/apis/coordination.k8s.io", "/apis/coordination.k8s.io/"} {
		var g metav1.APIGroup
		getJSON(p, &g)
		if g.Kind != "APIGroup" || g.APIVersion != "v1" || g.Name != wantGroup.Name || g.PreferredVersion != wantGroup.PreferredVersion || len(g.Versions) == 0 || g.Versions[0] != wantGroup.Versions[0] {
			t.Errorf("%s %+v", p, g)
		}
	}
	var rl metav1.APIResourceList
	getJSON(group, &rl)
	if rl.Kind != "APIResourceList" || rl.APIVersion != "v1" || rl.GroupVersion != "coordination.k8s.io/v1" {
		t.Errorf("%s %+v", group, rl)
	}
	wantLeases := metav1.APIResource{Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease",
		Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, StorageVersionHash: "gqkMMb/YqFM="}
	i := slices.IndexFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == "leases" })
	if i < 0 {
		t.Fatalf("no leases in %+v", rl)
	}
	gj, _ := json.Marshal(rl.APIResources[i])
	wj, _ := json.Marshal(wantLeases)
	if !bytes.Equal(gj, wj) {
		t.Errorf("leases discovery %s, want %s", gj, wj)
	}

	// Unknown paths inside the group version: a 404 Status.
	for _, p := range []string{group + "/namespaces/ns/foos", group + "/foos", group + "/namespaces/ns/leases/x/status", group + "/namespaces/ns/foos/x", group + "/watch/foos"} {
		r := w.do("GET", p, nil)
		r.status(t, statusWant{code: 404, reason: metav1.StatusReasonNotFound, msg: "the server could not find the requested resource", details: &metav1.StatusDetails{}})
		if !bytes.Contains(r.body, []byte(`"details":{}`)) {
			t.Errorf("%s: %s lacks \"details\":{}", p, r.body)
		}
	}
	// Outside: the plain text 404.
	for _, p := range []string{"/foo", "/apis/example.com/v1/things", "/apis/coordination.k8s.io/v9/leases", "/apis/coordination.k8s.io/v9", "/api/v2"} {
		r := w.do("GET", p, nil)
		if r.code != 404 || string(r.body) != "404 page not found\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
			t.Errorf("%s: %v", p, r)
		}
	}

	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		if r := w.do("GET", p, nil); r.code != 200 || string(r.body) != "ok" {
			t.Errorf("%s: %v", p, r)
		}
	}
	for i := range c.Nodes {
		var st struct {
			Name   string `json:"name"`
			State  string `json:"state"`
			Leader *struct {
				Name     string `json:"name"`
				PeerAddr string `json:"peerAddr"`
			} `json:"leader"`
			Term         uint64 `json:"term"`
			CommitIndex  uint64 `json:"commitIndex"`
			AppliedIndex uint64 `json:"appliedIndex"`
			Members      []struct {
				Name     string `json:"name"`
				PeerAddr string `json:"peerAddr"`
				Suffrage string `json:"suffrage"`
			} `json:"members"`
			// Beyond the contract's fields: for leaseholdctl endpoint status.
			APIURL       string `json:"apiURL"`
			Version      string `json:"version"`
			DBSize       int64  `json:"dbSize"`
			FeatureLevel uint32 `json:"featureLevel"`
			// The storage quota's (operations.md, "The store is full").
			StoredBytes       int64    `json:"storedBytes"`
			QuotaBackendBytes uint64   `json:"quotaBackendBytes"`
			Alarms            []string `json:"alarms"`
		}
		wi := newWire(t, c, i)
		r := wi.do("GET", "/cluster/status", nil)
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&st); err != nil || r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("/cluster/status on %d: %v %v", i, r, err)
		}
		wantState := "follower"
		if i == leader {
			wantState = "leader"
		}
		if st.Name != c.Nodes[i].Name || st.State != wantState || st.Leader == nil || st.Leader.Name != c.Nodes[leader].Name || st.Leader.PeerAddr != c.Nodes[leader].PeerAddr ||
			st.Term == 0 || st.CommitIndex == 0 || st.AppliedIndex == 0 || len(st.Members) != 3 || st.DBSize == 0 {
			t.Errorf("/cluster/status on %d: %s", i, r.body)
		}
		for _, m := range st.Members {
			if m.Suffrage != "voter" || m.Name == "" || m.PeerAddr == "" {
				t.Errorf("member %+v", m)
			}
		}
	}
	r = w.do("GET", "/metrics", nil)
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Errorf("/metrics: %v", r)
	}
}

// watchStream reads a JSON watch stream line by line.
type watchStream struct {
	t      *testing.T
	resp   *http.Response
	events chan watchLine
}

type watchLine struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
	raw    string
	err    error
}

func (l watchLine) lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	var o coordinationv1.Lease
	if err := json.Unmarshal(l.Object, &o); err != nil {
		t.Fatalf("event object %s: %v", l.Object, err)
	}
	if o.Kind != "Lease" || o.APIVersion != "coordination.k8s.io/v1" {
		t.Errorf("event object without full kind: %s", l.Object)
	}
	return &o
}

// watch opens a watch and checks its headers, which must arrive before
// any event.
func (w *wireClient) watch(path string, hdr ...string) *watchStream {
	w.t.Helper()
	req, err := http.NewRequest("GET", w.base+path, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
	resp, err := hc.Do(req)
	if err != nil {
		w.t.Fatalf("watch %s: %v", path, err)
	}
	ws := &watchStream{t: w.t, resp: resp, events: make(chan watchLine, 100)}
	w.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		w.t.Fatalf("watch %s: HTTP %d %s", path, resp.StatusCode, body)
	}
	go func() {
		defer close(ws.events)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				if line != "" {
					ws.events <- watchLine{raw: line, err: fmt.Errorf("partial line: %w", err)}
				} else if err != io.EOF {
					ws.events <- watchLine{err: err}
				}
				return
			}
			var ev watchLine
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				ev.err = err
			}
			ev.raw = line
			ws.events <- ev
		}
	}()
	return ws
}

// next returns the next event, failing after timeout.
func (ws *watchStream) next(timeout time.Duration) watchLine {
	ws.t.Helper()
	select {
	case ev, ok := <-ws.events:
		if !ok {
			ws.t.Fatal("watch ended, want another event")
		}
		if ev.err != nil {
			ws.t.Fatalf("watch stream: %v (%q)", ev.err, ev.raw)
		}
		return ev
	case <-time.After(timeout):
		ws.t.Fatalf("no watch event within %v", timeout)
	}
	return watchLine{}
}

// expect reads the next event and checks its type and lease name.
func (ws *watchStream) expect(typ, name string) *coordinationv1.Lease {
	ws.t.Helper()
	ev := ws.next(opTimeout)
	l := ev.lease(ws.t)
	if ev.Type != typ || l.Name != name {
		ws.t.Fatalf("event %s %s, want %s %s: %s", ev.Type, l.Name, typ, name, ev.raw)
	}
	return l
}

// quiet checks that no event arrives for d.
func (ws *watchStream) quiet(d time.Duration) {
	ws.t.Helper()
	select {
	case ev, ok := <-ws.events:
		if ok {
			ws.t.Fatalf("unexpected event %s", ev.raw)
		}
	case <-time.After(d):
	}
}

// TestWireWatch checks the watch protocol on the wire.
func TestWireWatch(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	wc := newWire(t, c, f)
	// Writes go through the other follower, so the watching node learns of
	// them only through replication.
	writer := newWire(t, c, 3-f-c.Leader())

	t.Run("stream", func(t *testing.T) {
		w, wr := wc.with(t), writer.with(t)
		a := wr.create("ws", "a", "h", nil)
		rv := w.do("GET", nsPath("ws"), nil)
		var l coordinationv1.LeaseList
		if err := json.Unmarshal(rv.body, &l); err != nil {
			t.Fatal(err)
		}
		ws := w.watch(nsPath("ws") + "?watch=true&resourceVersion=" + l.ResourceVersion)
		if ct := ws.resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("watch Content-Type %q", ct)
		}
		if te := ws.resp.TransferEncoding; !slices.Equal(te, []string{"chunked"}) {
			t.Errorf("Transfer-Encoding %v", te)
		}
		b := wr.create("ws", "b", "h", nil)
		a.Spec.HolderIdentity = ptr.To("h2")
		upd := wr.do("PUT", itemPath("ws", "a"), a).lease(t, 200)
		del := wr.do("DELETE", itemPath("ws", "b"), nil)
		if del.code != 200 {
			t.Fatal(del)
		}
		ev := ws.next(opTimeout)
		if !regexp.MustCompile(`^\{"type":"ADDED","object":\{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":\{"name":"b",.*\}\}\n$`).MatchString(ev.raw) {
			t.Errorf("first event line %q", ev.raw)
		}
		if got := ev.lease(t); got.ResourceVersion != b.ResourceVersion {
			t.Errorf("ADDED RV %s, want %s", got.ResourceVersion, b.ResourceVersion)
		}
		if got := ws.expect("MODIFIED", "a"); got.ResourceVersion != upd.ResourceVersion || holder(got) != "h2" {
			t.Errorf("MODIFIED %+v", got)
		}
		if got := ws.expect("DELETED", "b"); rvOf(t, got.ResourceVersion) <= rvOf(t, upd.ResourceVersion) || holder(got) != "h" {
			t.Errorf("DELETED %+v", got)
		}
		ws.quiet(200 * time.Millisecond)
	})

	t.Run("from_resource_version", func(t *testing.T) {
		w, wr := wc.with(t), writer.with(t)
		a := wr.create("rv", "a", "h", nil)
		a2 := wr.do("PATCH", itemPath("rv", "a"), `{"spec":{"holderIdentity":"h2"}}`, "Content-Type", "application/merge-patch+json").lease(t, 200)
		b := wr.create("rv", "b", "h", nil)
		ws := w.watch(nsPath("rv") + "?watch=1&resourceVersion=" + a.ResourceVersion)
		if got := ws.expect("MODIFIED", "a"); got.ResourceVersion != a2.ResourceVersion {
			t.Errorf("first event RV %s, want %s", got.ResourceVersion, a2.ResourceVersion)
		}
		if got := ws.expect("ADDED", "b"); got.ResourceVersion != b.ResourceVersion {
			t.Errorf("second event RV %s, want %s", got.ResourceVersion, b.ResourceVersion)
		}
		ws.quiet(200 * time.Millisecond)

		// resourceVersion unset and "0": the current state as ADDED first.
		for _, q := range []string{"", "&resourceVersion=0"} {
			ws := w.watch(nsPath("rv") + "?watch=true" + q)
			ws.expect("ADDED", "a")
			ws.expect("ADDED", "b")
			ws.quiet(200 * time.Millisecond)
		}
		// All namespaces, with a field selector on the namespace.
		ws = w.watch(group + "/leases?watch=true&fieldSelector=metadata.namespace%3Drv&resourceVersion=" + b.ResourceVersion)
		wr.create("rv", "c", "h", nil)
		wr.create("rv-other", "c", "h", nil)
		if got := ws.expect("ADDED", "c"); got.Namespace != "rv" {
			t.Errorf("event from namespace %q", got.Namespace)
		}
		ws.quiet(200 * time.Millisecond)
	})

	t.Run("deprecated_paths", func(t *testing.T) {
		w, wr := wc.with(t), writer.with(t)
		a := wr.create("dp", "a", "h", nil)
		named := w.watch(group + "/watch/namespaces/dp/leases/a?resourceVersion=" + a.ResourceVersion)
		coll := w.watch(group + "/watch/namespaces/dp/leases?resourceVersion=" + a.ResourceVersion)
		all := w.watch(group + "/watch/leases?resourceVersion=" + a.ResourceVersion)
		if ct := named.resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		wr.create("dp", "b", "h", nil)
		wr.do("PATCH", itemPath("dp", "a"), `{"spec":{"holderIdentity":"h2"}}`, "Content-Type", "application/merge-patch+json").lease(t, 200)
		named.expect("MODIFIED", "a")
		named.quiet(200 * time.Millisecond)
		coll.expect("ADDED", "b")
		coll.expect("MODIFIED", "a")
		all.expect("ADDED", "b")
		all.expect("MODIFIED", "a")
		w.do("GET", group+"/watch/namespaces/dp/leases/a?fieldSelector=metadata.name%3Db", nil).
			status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest, msg: "fieldSelector metadata.name doesn't match requested name"})
	})

	t.Run("selector_transitions", func(t *testing.T) {
		w, wr := wc.with(t), writer.with(t)
		s := wr.create("st", "s", "h", map[string]string{"app": "x"})
		ws := w.watch(nsPath("st") + "?watch=true&labelSelector=app%3Dx&resourceVersion=" + s.ResourceVersion)
		patch := func(body string) *coordinationv1.Lease {
			return wr.do("PATCH", itemPath("st", "s"), body, "Content-Type", "application/merge-patch+json").lease(t, 200)
		}
		moved := patch(`{"metadata":{"labels":{"app":"y"}},"spec":{"holderIdentity":"gone"}}`)
		got := ws.expect("DELETED", "s")
		if got.ResourceVersion != moved.ResourceVersion || got.Labels["app"] != "x" || holder(got) != "h" {
			t.Errorf("DELETED by a label change: %+v, want the old content at RV %s", got, moved.ResourceVersion)
		}
		patch(`{"spec":{"holderIdentity":"unseen"}}`)
		back := patch(`{"metadata":{"labels":{"app":"x"}}}`)
		if got := ws.expect("ADDED", "s"); got.ResourceVersion != back.ResourceVersion || holder(got) != "unseen" {
			t.Errorf("ADDED by a label change: %+v", got)
		}
		patch(`{"spec":{"holderIdentity":"seen"}}`)
		if got := ws.expect("MODIFIED", "s"); holder(got) != "seen" {
			t.Errorf("MODIFIED %+v", got)
		}
		ws.quiet(200 * time.Millisecond)
	})

	t.Run("initial_events", func(t *testing.T) {
		w, wr := wc.with(t), writer.with(t)
		wr.create("ie", "a", "h", nil)
		b := wr.create("ie", "b", "h", nil)
		for _, q := range []string{"", "&resourceVersion=" + b.ResourceVersion, "&resourceVersion=0"} {
			ws := w.watch(nsPath("ie") + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true" + q)
			ws.expect("ADDED", "a")
			ws.expect("ADDED", "b")
			ev := ws.next(opTimeout)
			bm := ev.lease(t)
			if ev.Type != "BOOKMARK" || bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.Name != "" || rvOf(t, bm.ResourceVersion) < rvOf(t, b.ResourceVersion) {
				t.Errorf("%q: event after the initial ones: %s", q, ev.raw)
			}
			ws.resp.Body.Close()
		}
		// Without bookmarks there is no annotated bookmark.
		ws := w.watch(nsPath("ie") + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
		ws.expect("ADDED", "a")
		ws.expect("ADDED", "b")
		wr.create("ie", "c", "h", nil)
		ws.expect("ADDED", "c")
	})

	t.Run("timeout_ends_cleanly", func(t *testing.T) {
		w := wc.with(t)
		w.create("to", "a", "h", nil)
		start := time.Now()
		ws := w.watch(nsPath("to") + "?watch=true&timeoutSeconds=1")
		ws.expect("ADDED", "a")
		select {
		case ev, ok := <-ws.events:
			if ok {
				t.Fatalf("event %q (%v) instead of a clean end", ev.raw, ev.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("watch with timeoutSeconds=1 still open after 5s")
		}
		if el := time.Since(start); el < 900*time.Millisecond {
			t.Errorf("watch ended after %v, before its timeout", el)
		}
		// With bookmarks allowed, one comes before the end.
		ws = w.watch(nsPath("to") + "?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&resourceVersion=0")
		ws.expect("ADDED", "a")
		if ev := ws.next(5 * time.Second); ev.Type != "BOOKMARK" {
			t.Errorf("event %s, want BOOKMARK", ev.raw)
		}
		select {
		case ev, ok := <-ws.events:
			if ok {
				t.Fatalf("event %q (%v) instead of a clean end", ev.raw, ev.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("watch still open after 5s")
		}
	})

	t.Run("protobuf_stream", func(t *testing.T) {
		w := wc.with(t)
		ws := w.watch(nsPath("pb")+"?watch=true", "Accept", "application/vnd.kubernetes.protobuf")
		if ct := ws.resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
			t.Errorf("protobuf watch Content-Type %q", ct)
		}
	})

	// A watch from a resourceVersion older than the retained history (410
	// in an ERROR event) is not tested here: the history holds 100000
	// events and the harness cannot make it smaller.
}
