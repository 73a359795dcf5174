package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// forwardStep is one request of the forwarding script; {ns} in path and
// body is the namespace of the node's run.
type forwardStep struct {
	method, path, body string
	hdr                []string
}

var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	rvJSONRE  = regexp.MustCompile(`"resourceVersion": ?"\d+"`)
	rvYAMLRE  = regexp.MustCompile(`resourceVersion: "\d+"`)
	rvTextRE  = regexp.MustCompile(`ResourceVersion in object meta: \d+`)
	tsJSONRE  = regexp.MustCompile(`"creationTimestamp": ?"[^"]*"`)
	tsYAMLRE  = regexp.MustCompile(`creationTimestamp: "[^"]*"`)
	mfTimeRE  = regexp.MustCompile(`"time": ?"[^"]*"`)
	patchedRE = regexp.MustCompile(`Invalid value: \\"\{.*?\}\\": strict`)
)

// normalize replaces what legitimately differs between two runs of the
// same script: the namespace, uids, resourceVersions and timestamps.
func normalize(body []byte, ns string) string {
	s := strings.ReplaceAll(string(body), ns, "NS")
	s = uuidRE.ReplaceAllString(s, "UID")
	s = rvJSONRE.ReplaceAllString(s, `"resourceVersion":"RV"`)
	s = rvYAMLRE.ReplaceAllString(s, `resourceVersion: "RV"`)
	s = rvTextRE.ReplaceAllString(s, `ResourceVersion in object meta: RV`)
	s = tsJSONRE.ReplaceAllString(s, `"creationTimestamp":"TS"`)
	s = tsYAMLRE.ReplaceAllString(s, `creationTimestamp: "TS"`)
	s = mfTimeRE.ReplaceAllString(s, `"time":"TS"`)
	s = patchedRE.ReplaceAllString(s, `Invalid value: "PATCHED": strict`)
	return s
}

// comparable turns an answer into text that must be identical whichever
// node answered: status, the headers a client reads, and the normalized
// body (protobuf bodies are decoded and compared as JSON).
func comparable(t *testing.T, r wireResp, ns string) string {
	t.Helper()
	body := r.body
	if r.header.Get("Content-Type") == "application/vnd.kubernetes.protobuf" {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			t.Fatalf("protobuf answer: %v", err)
		}
		if body, err = json.Marshal(obj); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", r.code)
	for _, h := range []string{"Content-Type", "Warning", "Allow", "Retry-After"} {
		for _, v := range r.header.Values(h) {
			fmt.Fprintf(&b, "%s: %s\n", h, normalize([]byte(v), ns))
		}
	}
	b.WriteString(normalize(body, ns))
	return b.String()
}

// TestForwardedWritesAnswerLikeTheLeader runs the same script of writes,
// successful and failing, on the leader and on each follower (each in its
// own namespace): the followers forward, and every answer must be the
// leader's, byte for byte up to uids, versions and timestamps.
func TestForwardedWritesAnswerLikeTheLeader(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.Leader()
	merge := []string{"Content-Type", "application/merge-patch+json"}
	script := []forwardStep{
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"holderIdentity":"h","leaseDurationSeconds":10}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"x"}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0,"leaseTransitions":-1}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"Bad_Name"}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"warn"},"spec":{"foo":1,"holderIdentity":"a","holderIdentity":"b"}}`},
		{method: "POST", path: "/leases?fieldValidation=Strict", body: `{"metadata":{"name":"strict"},"spec":{"foo":1}}`},
		{method: "POST", path: "/leases?fieldValidation=Bogus&dryRun=x", body: `{"metadata":{"name":"opts"}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"ct"}}`, hdr: []string{"Content-Type", "text/plain"}},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"rv","resourceVersion":"3"}}`},
		{method: "POST", path: "/leases", body: `{"spec":`},
		{method: "POST", path: "/leases", body: `{"apiVersion":"coordination.k8s.io/v1beta1","kind":"Lease","metadata":{"name":"v"}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"nsm","namespace":"elsewhere"}}`},
		{method: "POST", path: "/leases?dryRun=All", body: `{"metadata":{"name":"dry"},"spec":{"holderIdentity":"d"}}`},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"y"}}`, hdr: []string{"Accept", "application/yaml"}},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"pb"}}`, hdr: []string{"Accept", "application/vnd.kubernetes.protobuf"}},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"pretty"}}`, hdr: []string{"User-Agent", "curl/8"}},
		{method: "POST", path: "/leases", body: `{"metadata":{"name":"na"}}`, hdr: []string{"Accept", "text/csv"}},
		{method: "PUT", path: "/leases/x", body: `{"metadata":{"name":"x"},"spec":{"holderIdentity":"noRV"}}`},
		{method: "PUT", path: "/leases/x", body: `{"metadata":{"name":"x","resourceVersion":"1"},"spec":{"holderIdentity":"stale"}}`},
		{method: "PUT", path: "/leases/x", body: `{"metadata":{"name":"z","resourceVersion":"1"}}`},
		{method: "PUT", path: "/leases/new", body: `{"metadata":{"name":"new","resourceVersion":"7"},"spec":{"holderIdentity":"put"}}`},
		{method: "PATCH", path: "/leases/x", body: `{"spec":{"holderIdentity":"merge"}}`, hdr: merge},
		{method: "PATCH", path: "/leases/x", body: `[{"op":"replace","path":"/spec/holderIdentity","value":"json"}]`, hdr: []string{"Content-Type", "application/json-patch+json"}},
		{method: "PATCH", path: "/leases/x", body: `[{"op":"test","path":"/spec/holderIdentity","value":"nope"}]`, hdr: []string{"Content-Type", "application/json-patch+json"}},
		{method: "PATCH", path: "/leases/x", body: `{"spec":{"holderIdentity":"smp","leaseTransitions":1}}`, hdr: []string{"Content-Type", "application/strategic-merge-patch+json"}},
		{method: "PATCH", path: "/leases/x", body: `{"metadata":{"resourceVersion":"1"}}`, hdr: merge},
		{method: "PATCH", path: "/leases/x?fieldValidation=Strict", body: `{"spec":{"foo":1}}`, hdr: merge},
		{method: "PATCH", path: "/leases/x?force=true", body: `{}`, hdr: merge},
		{method: "PATCH", path: "/leases/x", body: `{}`, hdr: []string{"Content-Type", "application/apply-patch+yaml"}},
		{method: "PATCH", path: "/leases/missing", body: `{}`, hdr: merge},
		{method: "POST", path: "/leases/x", body: `{}`},
		{method: "PUT", path: "/leases", body: `{}`},
		{method: "DELETE", path: "/leases/x", body: `{"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
		{method: "DELETE", path: "/leases/x", body: `{"preconditions":{"resourceVersion":"1"}}`},
		{method: "DELETE", path: "/leases/x?propagationPolicy=Bogus"},
		{method: "DELETE", path: "/leases/x?dryRun=All"},
		{method: "DELETE", path: "/leases/x", body: `{"propagationPolicy":"Background"}`},
		{method: "DELETE", path: "/leases/x"},
		{method: "DELETE", path: "/leases?labelSelector=nothing%3Dhere"},
		{method: "DELETE", path: "/leases?fieldSelector=spec.x%3Dy"},
		{method: "DELETE", path: "/leases?fieldSelector=metadata.name%3Dnew"},
		{method: "DELETE", path: "/leases?dryRun=All"},
	}
	big := forwardStep{method: "POST", path: "/leases", body: `{"metadata":{"name":"big","annotations":{"a":"` + strings.Repeat("a", 3<<20) + `"}}}`}
	script = append(script, big)

	run := func(i int) []string {
		w := newWire(t, c, i)
		ns := "fwd-" + strconv.Itoa(i)
		out := make([]string, len(script))
		for k, st := range script {
			var body any
			if st.body != "" {
				body = strings.ReplaceAll(st.body, "{ns}", ns)
			}
			r := w.do(st.method, nsPath(ns)+strings.TrimPrefix(st.path, "/leases"), body, st.hdr...)
			out[k] = comparable(t, r, ns)
		}
		return out
	}
	want := run(leader)
	for i := range c.Nodes {
		if i == leader {
			continue
		}
		got := run(i)
		for k := range script {
			if got[k] != want[k] {
				st := script[k]
				if len(st.body) > 200 {
					st.body = st.body[:200] + "..."
				}
				t.Errorf("node %d (follower), step %d %s %s %s:\nforwarded: %s\nleader:    %s", i, k, st.method, st.path, st.body, trim(got[k]), trim(want[k]))
			}
		}
	}
	// Sanity: the script does produce successes and failures.
	codes := map[string]bool{}
	for _, w := range want {
		codes[strings.SplitN(w, "\n", 2)[0]] = true
	}
	for _, code := range []string{"HTTP 200", "HTTP 201", "HTTP 400", "HTTP 404", "HTTP 405", "HTTP 406", "HTTP 409", "HTTP 413", "HTTP 415", "HTTP 422", "HTTP 500"} {
		if !codes[code] {
			t.Errorf("the script never answered %s", code)
		}
	}
}

func trim(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// TestFollowerReadsSeeAcknowledgedWrites writes through one node and reads
// at once through another node with another client: the read must see
// the acknowledged write (its resourceVersion or newer). 300 rounds.
func TestFollowerReadsSeeAcknowledgedWrites(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	ns := "rr"
	writers := make([]coordclient.LeaseInterface, 3)
	readers := make([]coordclient.LeaseInterface, 3)
	for i := range c.Nodes {
		writers[i] = c.Client(i, true).CoordinationV1().Leases(ns)
		readers[i] = c.Client(i, false).CoordinationV1().Leases(ns)
	}
	cur, err := writers[0].Create(opCtx(t), newLease("rr", "v0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	for i := 1; i <= rounds; i++ {
		a := i % 3
		b := (a + 1 + i/3%2) % 3 // both other nodes, in turn
		ctx := opCtx(t)
		var (
			name, want string
			rv         uint64
		)
		switch i % 3 {
		case 0: // create
			name, want = "rr-"+strconv.Itoa(i), "c"+strconv.Itoa(i)
			out, err := writers[a].Create(ctx, newLease(name, want), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("round %d: create through node %d: %v", i, a, err)
			}
			rv = rvOf(t, out.ResourceVersion)
		case 1: // update with the last known resourceVersion
			name, want = "rr", "u"+strconv.Itoa(i)
			cur.Spec.HolderIdentity = ptr.To(want)
			out, err := writers[a].Update(ctx, cur, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("round %d: update through node %d: %v", i, a, err)
			}
			cur, rv = out, rvOf(t, out.ResourceVersion)
		case 2: // patch
			name, want = "rr", "p"+strconv.Itoa(i)
			out, err := writers[a].Patch(ctx, "rr", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"`+want+`"}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("round %d: patch through node %d: %v", i, a, err)
			}
			cur, rv = out, rvOf(t, out.ResourceVersion)
		}
		got, err := readers[b].Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("round %d: get %s through node %d right after the write through node %d (RV %d): %v", i, name, b, a, rv, err)
		}
		if rvOf(t, got.ResourceVersion) < rv || holder(got) != want {
			t.Fatalf("round %d: node %d read %s at RV %s held by %q after node %d acknowledged RV %d held by %q",
				i, b, name, got.ResourceVersion, holder(got), a, rv, want)
		}
		if i%20 == 0 {
			l, err := readers[b].List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil || len(l.Items) != 1 || rvOf(t, l.ResourceVersion) < rv || holder(&l.Items[0]) != want {
				t.Fatalf("round %d: list through node %d after a write at RV %d: %+v %v", i, b, rv, l, err)
			}
		}
	}
}

// ack is what the load test knows of a lease: the highest
// resourceVersion of a 2xx answer for it.
type ack struct {
	mu   sync.Mutex
	rvs  map[string]uint64
	errs map[string]int
	n    int
}

func (a *ack) record(name string, rv uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rvs[name] = max(a.rvs[name], rv)
	a.n++
}

func (a *ack) fail(what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.errs[what]++
}

// listRVs is name -> resourceVersion of the namespace's leases on node i.
func listRVs(w *wireClient, ns, query string) (map[string]uint64, error) {
	req, err := http.NewRequest("GET", w.base+nsPath(ns)+query, nil)
	if err != nil {
		return nil, err
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, data)
	}
	var l coordinationv1.LeaseList
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, it := range l.Items {
		n, err := strconv.ParseUint(it.ResourceVersion, 10, 64)
		if err != nil {
			return nil, err
		}
		out[it.Name] = n
	}
	return out, nil
}

// TestLeaderLossUnderLoad kills the leader while four writers send creates
// and patches to every node. Every write answered 2xx must survive on
// every remaining node; failures during the failover may only be 503, 504
// or 409 (never 500); the killed node, restarted, converges.
func TestLeaderLossUnderLoad(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	const ns = "load"
	victim := c.Leader()
	var killed atomic.Bool
	acks := &ack{rvs: map[string]uint64{}, errs: map[string]int{}}
	clients := make([]*http.Client, 3)
	for i := range clients {
		clients[i] = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
	}
	var badMu sync.Mutex
	var bad []string

	// send writes one request and classifies the answer.
	send := func(node int, method, path, ct, body, name string) bool {
		req, _ := http.NewRequest(method, c.Nodes[node].URL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", ct)
		resp, err := clients[node].Do(req)
		if err != nil {
			// Only the killed node may drop connections.
			if node != victim || !killed.Load() {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s %s on node %d: %v", method, path, node, err))
				badMu.Unlock()
			}
			acks.fail("transport error from the killed node")
			return false
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			if node != victim {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s %s on node %d: reading: %v", method, path, node, err))
				badMu.Unlock()
			}
			return false
		}
		switch {
		case resp.StatusCode == 200 || resp.StatusCode == 201:
			var l coordinationv1.Lease
			if err := json.Unmarshal(data, &l); err != nil || l.Name != name {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s %s on node %d: HTTP %d %s", method, path, node, resp.StatusCode, data))
				badMu.Unlock()
				return false
			}
			rv, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
			if err != nil {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("RV %q", l.ResourceVersion))
				badMu.Unlock()
				return false
			}
			acks.record(name, rv)
			return true
		case resp.StatusCode == 503 || resp.StatusCode == 504 || resp.StatusCode == 409:
			var st metav1.Status
			if err := json.Unmarshal(data, &st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("%s %s on node %d: HTTP %d with a body that is no Status: %s", method, path, node, resp.StatusCode, data))
				badMu.Unlock()
			}
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				badMu.Lock()
				bad = append(bad, fmt.Sprintf("503 without Retry-After: %s", data))
				badMu.Unlock()
			}
			acks.fail(fmt.Sprintf("HTTP %d %s", resp.StatusCode, st.Message))
			return false
		default:
			badMu.Lock()
			bad = append(bad, fmt.Sprintf("%s %s on node %d: HTTP %d %s", method, path, node, resp.StatusCode, data))
			badMu.Unlock()
			return false
		}
	}

	start := time.Now()
	stop := start.Add(3 * time.Second)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var created []string
			for seq := 0; time.Now().Before(stop); seq++ {
				node := (g + seq) % 3
				if node == victim && killed.Load() {
					node = (node + 1) % 3
				}
				if seq%2 == 0 || len(created) == 0 {
					name := fmt.Sprintf("g%d-%d", g, seq)
					if send(node, "POST", nsPath(ns), "application/json", `{"metadata":{"name":"`+name+`"},"spec":{"holderIdentity":"c"}}`, name) {
						created = append(created, name)
					}
				} else {
					name := created[seq%len(created)]
					send(node, "PATCH", itemPath(ns, name), "application/merge-patch+json", `{"spec":{"holderIdentity":"p`+strconv.Itoa(seq)+`"}}`, name)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	before := func() int { acks.mu.Lock(); defer acks.mu.Unlock(); return acks.n }()
	killed.Store(true)
	c.Kill(victim)
	t.Logf("killed leader %s after %d acknowledged writes", c.Nodes[victim].Name, before)
	wg.Wait()

	badMu.Lock()
	for _, b := range bad {
		t.Error(b)
	}
	badMu.Unlock()
	t.Logf("%d acknowledged writes over %d leases; failures: %v", acks.n, len(acks.rvs), acks.errs)
	if before == 0 {
		t.Fatal("no write acknowledged before the kill")
	}

	survivors := []int{(victim + 1) % 3, (victim + 2) % 3}
	// The survivors take writes again (bounded retries while they elect).
	for _, i := range survivors {
		name := "after-" + strconv.Itoa(i)
		ok := testcluster.WaitFor(t.Context(), 20*time.Second, func() bool {
			return send(i, "POST", nsPath(ns), "application/json", `{"metadata":{"name":"`+name+`"}}`, name)
		})
		if !ok {
			t.Fatalf("node %d takes no writes after the failover", i)
		}
	}
	check := func(i int, got map[string]uint64) []string {
		var missing []string
		acks.mu.Lock()
		defer acks.mu.Unlock()
		for name, rv := range acks.rvs {
			if got[name] < rv {
				missing = append(missing, fmt.Sprintf("%s (acknowledged RV %d, node %d has %d)", name, rv, i, got[name]))
			}
		}
		return missing
	}
	for _, i := range survivors {
		got, err := listRVs(newWire(t, c, i), ns, "")
		if err != nil {
			t.Fatalf("list on node %d: %v", i, err)
		}
		if missing := check(i, got); len(missing) > 0 {
			t.Errorf("node %d lost acknowledged writes: %v", i, missing)
		}
	}

	// The killed node comes back and converges to the same state.
	c.Restart(victim)
	c.WaitReady()
	var last []map[string]uint64
	converged := testcluster.WaitFor(t.Context(), 20*time.Second, func() bool {
		last = last[:0]
		for i := range c.Nodes {
			got, err := listRVs(newWire(t, c, i), ns, "?resourceVersion=0")
			if err != nil {
				return false
			}
			last = append(last, got)
		}
		a, _ := json.Marshal(last[0])
		for _, m := range last[1:] {
			if b, _ := json.Marshal(m); !bytes.Equal(a, b) {
				return false
			}
		}
		return true
	})
	if !converged {
		t.Fatalf("nodes did not converge within 20s: %v", last)
	}
	got, err := listRVs(newWire(t, c, victim), ns, "")
	if err != nil {
		t.Fatalf("linearizable list on the restarted node: %v", err)
	}
	if missing := check(victim, got); len(missing) > 0 {
		t.Errorf("restarted node lacks acknowledged writes: %v", missing)
	}
	// And it serves writes again (forwarded or as leader).
	name := "after-restart"
	ok := testcluster.WaitFor(t.Context(), 10*time.Second, func() bool {
		return send(victim, "POST", nsPath(ns), "application/json", `{"metadata":{"name":"`+name+`"}}`, name)
	})
	if !ok {
		t.Error("the restarted node takes no writes")
	}
}
