package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// fuzzRequest is a request for target (a path and its raw query, which
// need not be valid) with the given headers.
func fuzzRequest(method, rawQuery string, body []byte, header ...string) *http.Request {
	req := httptest.NewRequest(method, "/apis/coordination.k8s.io/v1/namespaces/ns/leases", bytes.NewReader(body))
	req.URL.RawQuery = rawQuery
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// fuzzListQueries are list and watch queries as clients send them, and
// the selectors' edge cases.
var fuzzListQueries = []string{
	"",
	"labelSelector=app%3Dx&fieldSelector=metadata.name%3Dl&limit=500",
	"labelSelector=app+in+(a,b),!tier,env!%3Dprod&fieldSelector=metadata.namespace!%3Dkube-system",
	"labelSelector=a%3D%3Db,c,d+notin+(e)&limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NSwic3RhcnQiOiJucy9hXHUwMDAwIn0",
	"labelSelector=x>1,y<2&resourceVersion=42&resourceVersionMatch=Exact",
	"resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=10",
	"watch=true&resourceVersion=5&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
	"watch=1&timeoutSeconds=30&labelSelector=",
	"watch=true&resourceVersionMatch=Exact",
	"sendInitialEvents=false",
	"continue=abc&resourceVersion=7",
	"fieldSelector=spec.holderIdentity%3Da",
	"fieldSelector=metadata.name%3D%3Da,metadata.name!%3Db",
	"fieldSelector=metadata.name%3Da%5C,b",
	"fieldSelector=%5C",
	"labelSelector=(",
	"labelSelector=a+in+()",
	"labelSelector=a%3D" + strings.Repeat("x", 64),
	"limit=-1&limit=2",
	"limit=x",
	"watch=maybe",
	"timeoutSeconds=99999999999999999999",
	"%zz=1&labelSelector=%",
	"resourceVersionMatch=Bogus&resourceVersion=1",
}

// FuzzParseListOptions parses arbitrary list and watch queries as list and
// watch requests do (parseListOptions): it never panics; a refusal is a
// Status error of 400, or 422 for options kube-apiserver calls invalid;
// what it accepts has selectors whose text parses again to the same
// selector.
func FuzzParseListOptions(f *testing.F) {
	for _, q := range fuzzListQueries {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		raw, lo, err := parseListOptions(fuzzRequest(http.MethodGet, rawQuery, nil))
		if err != nil {
			fuzzRequireCode(t, err, http.StatusBadRequest, http.StatusUnprocessableEntity)
			return
		}
		if raw == nil || lo.Label == nil || lo.Field == nil {
			t.Fatalf("accepted %q without its options: %v %+v", rawQuery, raw, lo)
		}
		l, err := labels.Parse(lo.Label.String())
		if err != nil || l.String() != lo.Label.String() {
			t.Fatalf("label selector %q (from %q) parses again as %v, %v", lo.Label, raw.LabelSelector, l, err)
		}
		fs, err := fields.ParseSelector(lo.Field.String())
		if err != nil || fs.String() != lo.Field.String() {
			t.Fatalf("field selector %q (from %q) parses again as %v, %v", lo.Field, raw.FieldSelector, fs, err)
		}
	})
}

// FuzzParseWriteOptions parses arbitrary queries as create, update, patch
// and apply do, and DeleteOptions from a body (JSON, YAML or protobuf, by
// Content-Type) or the query: never a panic; a refusal is a Status error
// of 400, 415 or 422.
func FuzzParseWriteOptions(f *testing.F) {
	deleteBodies := []string{
		"",
		`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background","dryRun":["All"]}`,
		`{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"u","resourceVersion":"5"},"gracePeriodSeconds":0}`,
		`{"orphanDependents":true,"propagationPolicy":"Orphan"}`,
		`{"propagationPolicy":"Sideways"}`,
		`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1"}`,
		"kind: DeleteOptions\napiVersion: v1\ndryRun: [All]\n",
		`{`,
		"k8s\x00\x0a\x0e\x0a\x02v1\x12\x0dDeleteOptions\x12\x00",
	}
	queries := []string{
		"", "dryRun=All&fieldManager=kubectl&fieldValidation=Strict", "dryRun=Some", "fieldManager=%01",
		"fieldManager=" + strings.Repeat("m", 129), "fieldValidation=Loud", "force=true&fieldManager=m",
		"force=maybe", "gracePeriodSeconds=x", "propagationPolicy=Foreground", "orphanDependents=true&propagationPolicy=Orphan",
	}
	for _, q := range queries {
		for ci, b := range deleteBodies {
			f.Add(q, uint8(ci%3), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, rawQuery string, ci uint8, body []byte) {
		ct := fuzzContentTypes[int(ci)%len(fuzzContentTypes)]
		req := func(method string) *http.Request { return fuzzRequest(method, rawQuery, body, "Content-Type", ct) }
		for _, parse := range []func(*http.Request) (writeQuery, error){
			parseCreateOptions, parseUpdateOptions,
			func(r *http.Request) (writeQuery, error) { return parsePatchOptions(r, false) },
			func(r *http.Request) (writeQuery, error) { return parsePatchOptions(r, true) },
		} {
			q, err := parse(req(http.MethodPatch))
			if err != nil {
				fuzzRequireCode(t, err, http.StatusBadRequest, http.StatusUnprocessableEntity)
				continue
			}
			if len(q.fieldManager) > fieldManagerMaxLength {
				t.Fatalf("accepted a field manager of %d bytes", len(q.fieldManager))
			}
		}
		o, err := parseDeleteOptions(req(http.MethodDelete), body)
		if err != nil {
			fuzzRequireCode(t, err, http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity)
			return
		}
		if o == nil {
			t.Fatal("no DeleteOptions and no error")
		}
		for _, d := range o.DryRun {
			if d != metav1.DryRunAll {
				t.Fatalf("accepted dryRun %q", d)
			}
		}
	})
}

// FuzzNegotiate picks the answer's encoding from arbitrary Accept headers,
// for resources (which serve Tables and partial metadata) and otherwise:
// never a panic; an encoding the server has, or 406.
func FuzzNegotiate(f *testing.F) {
	for _, a := range []string{
		"", "*/*", "application/json", "application/vnd.kubernetes.protobuf, */*",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		"application/json;as=Table;v=v1beta1;g=meta.k8s.io", "application/json;as=Table",
		"application/yaml;q=0.5", "application/cbor", "text/html", "application/*", ";;;", "a/b;c=\"",
	} {
		f.Add(a, "", true)
		f.Add(a, "curl/8.0", false)
	}
	f.Add("application/json", "pretty=true", true)
	f.Add("application/json", "pretty=banana", true)
	f.Fuzz(func(t *testing.T, accept, rawQuery string, resource bool) {
		req := fuzzRequest(http.MethodGet, rawQuery, nil, "Accept", accept)
		allowed := noTransforms
		if resource {
			allowed = forResources
		}
		out, err := negotiate(req, allowed...)
		if err != nil {
			fuzzRequireCode(t, err, http.StatusNotAcceptable)
		}
		if _, ok := serializerFor(out.info.MediaType); !ok {
			t.Fatalf("Accept %q: answer in %q", accept, out.info.MediaType)
		}
		if out.as.Kind != "" && !resource {
			t.Fatalf("Accept %q: transformation %+v where none is served", accept, out.as)
		}
	})
}

// fuzzRequireCode fails unless err is a Status error with one of codes.
func fuzzRequireCode(t *testing.T, err error, codes ...int32) {
	t.Helper()
	st, ok := err.(interface{ Status() metav1.Status })
	if !ok {
		t.Fatalf("error %v (%T) is not a Status", err, err)
	}
	code := st.Status().Code
	for _, c := range codes {
		if code == c {
			return
		}
	}
	t.Fatalf("error %v has code %d, want one of %v", err, code, codes)
}
