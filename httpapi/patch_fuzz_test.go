package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// fuzzPatchTypes are the patch Content-Types, by index.
var fuzzPatchTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/apply-patch+yaml",
}

// fuzzPatchTargets are the fixed objects patched, one per served version:
// a Lease with every spec field, and a LeaseCandidate read in each of its
// versions.
var fuzzPatchTargets = []struct{ version, resource, name string }{
	{"v1", "leases", "l"},
	{"v1beta1", "leasecandidates", "c"},
	{"v1alpha2", "leasecandidates", "c"},
	{"v1alpha1", "leasecandidates", "c"},
}

var fuzzPatchSeeds = []struct {
	typ  int
	body string
}{
	{0, `[{"op":"replace","path":"/spec/holderIdentity","value":"b"}]`},
	{0, `[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"remove","path":"/spec/leaseTransitions"}]`},
	{0, `[{"op":"test","path":"/metadata/name","value":"l"},{"op":"copy","from":"/metadata/name","path":"/metadata/annotations/n"}]`},
	{0, `[{"op":"move","from":"/spec","path":"/status"}]`},
	{0, `[{"op":"replace","path":"/spec/renewTime","value":"2026-01-01T00:00:00.000000Z"}]`},
	{0, `[{"op":"replace","path":"/spec/renewTime","value":"not a time"}]`},
	{0, `[{"op":"replace","path":"/spec/pingTime","value":"2026-01-01T00:00:00.123456Z"}]`},
	{0, `[{"op":"replace","path":"/spec/leaseDurationSeconds","value":"x"}]`},
	{0, `[{"op":"add","path":"/metadata/finalizers/99999999","value":"f"}]`},
	{0, `[{"op":"replace","path":"/kind","value":"Pod"}]`},
	{0, `[{"op":"replace","path":"/kind","value":""},{"op":"remove","path":"/apiVersion"}]`},
	{0, `[{"op":"replace","path":"/metadata/name","value":"other"}]`},
	{0, `[{"op":"remove","path":"/metadata"}]`},
	{0, `[{"op":"replace","path":"","value":{}}]`},
	{0, `[{"op":"bogus"}]`},
	{0, `[{"op":"replace","path":""}]`},
	{0, `[{"op":"replace","path":"","value":null}]`},
	{0, `[{"op":"test","path":""}]`},
	{0, `[{"op":"test","path":"/spec","value":null}]`},
	{0, `[{"op":"add","path":"","value":[]}]`},
	{0, `[]`},
	{0, `{}`},
	{1, `{"spec":{"holderIdentity":"b","leaseDurationSeconds":30}}`},
	{1, `{"spec":{"holderIdentity":null,"renewTime":null}}`},
	{1, `{"spec":{"renewTime":"2026-01-01T00:00:00Z"}}`},
	{1, `{"spec":{"preferredStrategies":["OldestEmulationVersion","example.com/x"],"strategy":"OldestEmulationVersion"}}`},
	{1, `{"metadata":{"resourceVersion":"1"}}`},
	{1, `{"metadata":{"resourceVersion":"99999999999"}}`},
	{1, `{"metadata":{"resourceVersion":"x"}}`},
	{1, `{"metadata":{"uid":"another"}}`},
	{1, `{"metadata":{"namespace":"elsewhere"}}`},
	{1, `{"metadata":{"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:x":{}}}]}}`},
	{1, `{"metadata":{"annotations":{"coordination.leasehold.io/preferred-strategies":"[1]"}}}`},
	{1, `{"apiVersion":"v1"}`},
	{1, `{"apiVersion":"","kind":""}`},
	{1, `{"unknown":1}`},
	{1, `null`},
	{1, `[]`},
	{1, `{"spec":`},
	{2, `{"spec":{"holderIdentity":"c"}}`},
	{2, `{"metadata":{"$patch":"replace"}}`},
	{2, `{"$retainKeys":["spec"],"spec":{}}`},
	{2, `{"metadata":{"finalizers":["a"],"$setElementOrder/finalizers":["a"]}}`},
	{2, `{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}`},
	{2, `{"metadata":{"ownerReferences":[{"uid":"u","$patch":"delete"}]}}`},
	{2, `{"spec":{"$patch":"delete"}}`},
	{2, `{"spec":{"leaseDurationSeconds":{"$patch":"replace"}}}`},
	{3, "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  namespace: fuzz\nspec:\n  holderIdentity: a\n  renewTime: \"2026-01-01T00:00:00.000000Z\"\n"},
	{3, "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: c\nspec:\n  leaseName: l\n  pingTime: \"2026-01-01T00:00:00.000000Z\"\n"},
	{3, "apiVersion: coordination.k8s.io/v1alpha1\nkind: LeaseCandidate\nmetadata:\n  name: c\nspec:\n  leaseName: l\n  preferredStrategies: [OldestEmulationVersion]\n"},
	{3, "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: other\n"},
	{3, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: l\n"},
	{3, "kind: Lease\nmetadata:\n  name: l\n"},
	{3, "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  managedFields: [{manager: x}]\n"},
	{3, "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\nspec:\n  leaseDurationSeconds: banana\n"},
	{3, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"holderIdentity":"z"}}`},
	{3, "a: &a [*a, *a]\n"},
	{3, ""},
	{3, "- 1\n"},
}

// FuzzPatch sends arbitrary patch bodies of every patch type (JSON patch,
// merge patch, strategic merge patch, server-side apply) for a fixed
// Lease and a fixed LeaseCandidate in each served version, as dry runs, to
// a one-member cluster's API: the answer is the patched object (200), of
// its kind and apiVersion, or a Status of a 4xx code — never a panic,
// never a 5xx.
func FuzzPatch(f *testing.F) {
	for _, s := range fuzzPatchSeeds {
		for ti := range fuzzPatchTargets {
			f.Add(uint8(s.typ), uint8(ti), false, []byte(s.body))
		}
		if s.typ == 3 {
			f.Add(uint8(s.typ), uint8(0), true, []byte(s.body))
		}
	}

	c := testcluster.New(f, 1, testcluster.Options{})
	base := c.Nodes[0].URL() + "/apis/coordination.k8s.io/"
	hc := &http.Client{Timeout: 30 * time.Second}
	do := func(tb testing.TB, method, url, ct string, body []byte) (int, []byte) {
		tb.Helper()
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		resp, err := hc.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			tb.Fatal(err)
		}
		return resp.StatusCode, data
	}
	for _, obj := range []struct{ path, body string }{
		{"v1/namespaces/fuzz/leases", `{"metadata":{"name":"l","labels":{"app":"x"},"annotations":{"a":"b"},"finalizers":["example.com/f"]},` +
			`"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-01-01T00:00:00.000000Z",` +
			`"renewTime":"2026-01-01T00:00:05.000000Z","leaseTransitions":3}}`},
		{"v1alpha1/namespaces/fuzz/leasecandidates", `{"metadata":{"name":"c","labels":{"app":"x"}},` +
			`"spec":{"leaseName":"l","pingTime":"2026-01-01T00:00:00.000000Z","renewTime":"2026-01-01T00:00:01.000000Z",` +
			`"binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":["OldestEmulationVersion","example.com/x"]}}`},
	} {
		if code, data := do(f, http.MethodPost, base+obj.path+"?fieldManager=seed", "application/json", []byte(obj.body)); code != http.StatusCreated {
			f.Fatalf("create %s: %d %s", obj.path, code, data)
		}
	}

	f.Fuzz(func(t *testing.T, typ, target uint8, force bool, body []byte) {
		pt := fuzzPatchTypes[int(typ)%len(fuzzPatchTypes)]
		tg := fuzzPatchTargets[int(target)%len(fuzzPatchTargets)]
		query := "?dryRun=All&fieldManager=fuzz"
		if force && pt == fuzzPatchTypes[3] {
			query += "&force=true"
		}
		url := fmt.Sprintf("%s%s/namespaces/fuzz/%s/%s%s", base, tg.version, tg.resource, tg.name, query)
		code, data := do(t, http.MethodPatch, url, pt, body)
		if code == http.StatusOK {
			var tm metav1.TypeMeta
			if err := json.Unmarshal(data, &tm); err != nil || tm.APIVersion != "coordination.k8s.io/"+tg.version || tm.Kind == "" {
				t.Fatalf("%s %s: patched object of %+v (%v): %s", pt, tg.version, tm, err, data)
			}
			return
		}
		var st metav1.Status
		if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" {
			t.Fatalf("%s %s: %d with a body that is no Status (%v): %s", pt, tg.version, code, err, data)
		}
		if code < 400 || code > 499 || st.Code != int32(code) {
			t.Fatalf("%s %s %s: %d, Status code %d: %s\nbody: %q", pt, tg.version, tg.resource, code, st.Code, st.Message, body)
		}
	})
}
