package httpapi_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// infTimeout bounds every wait of the informer tests.
const infTimeout = 20 * time.Second

// infRecorder records the URLs of the requests a client sends.
type infRecorder struct {
	mu   sync.Mutex
	rt   http.RoundTripper
	urls []url.URL
}

func (r *infRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.urls = append(r.urls, *req.URL)
	r.mu.Unlock()
	return r.rt.RoundTrip(req)
}

// leaseRequests are the recorded requests to a leases collection.
func (r *infRecorder) leaseRequests() []url.URL {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []url.URL
	for _, u := range r.urls {
		if strings.HasSuffix(u.Path, "/leases") {
			out = append(out, u)
		}
	}
	return out
}

// infRVs are a list's or a store's leases: "ns/name" -> resourceVersion.
func infRVs(items []*coordinationv1.Lease) map[string]string {
	out := map[string]string{}
	for _, l := range items {
		out[l.Namespace+"/"+l.Name] = l.ResourceVersion
	}
	return out
}

// infRetry runs op against live members, starting at member start, until
// it succeeds or infTimeout passes: writes fail while a new leader is
// elected. done reports whether an error means the write took effect
// (e.g. AlreadyExists for a create retried after an unknown outcome).
func infRetry(t *testing.T, c *testcluster.Cluster, clients []kubernetes.Interface, start int, what string, op func(context.Context, kubernetes.Interface) error, done func(error) bool) {
	t.Helper()
	deadline := time.Now().Add(infTimeout)
	for attempt := 0; ; attempt++ {
		i := (start + attempt) % len(clients)
		if c.Nodes[i].Raft() == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := op(ctx, clients[i])
		cancel()
		if err == nil || (attempt > 0 && done != nil && done(err)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, infTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// infConverge runs the informer scenario: a shared informer on a follower
// follows 200 writes spread over every member while the leader is killed
// half way, and ends with exactly the state a fresh linearizable list
// shows. It returns the lease requests the informer's client sent.
func infConverge(t *testing.T) []url.URL {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	clients := make([]kubernetes.Interface, len(c.Nodes))
	for i := range c.Nodes {
		clients[i] = c.Client(i, i%2 == 0)
	}

	// Some state before the informer starts, for its initial list.
	live := []string{}
	for i := range 10 {
		ns := fmt.Sprintf("inf-%d", i%3)
		name := fmt.Sprintf("pre-%d", i)
		if _, err := clients[i%3].CoordinationV1().Leases(ns).Create(context.Background(), infLease(name, "pre"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		live = append(live, ns+"/"+name)
	}

	cfg := c.Config(f, true)
	rec := &infRecorder{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.rt = rt; return rec })
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Coordination().V1().Leases().Informer()

	// Per object, the informer must never go back in time.
	var (
		mu         sync.Mutex
		violations []string
	)
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*coordinationv1.Lease), newObj.(*coordinationv1.Lease)
			or, _ := strconv.ParseUint(o.ResourceVersion, 10, 64)
			nr, _ := strconv.ParseUint(n.ResourceVersion, 10, 64)
			if nr < or {
				mu.Lock()
				violations = append(violations, fmt.Sprintf("%s/%s went from %d back to %d", n.Namespace, n.Name, or, nr))
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	syncCtx, cancel := context.WithTimeout(context.Background(), infTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		t.Fatalf("informer did not sync within %v", infTimeout)
	}
	// The classic path lists with resourceVersion=0, which a follower may
	// answer from a state a write or two behind: wait for it to catch up.
	if !testcluster.WaitFor(context.Background(), infTimeout, func() bool { return len(inf.GetStore().List()) == len(live) }) {
		t.Fatalf("informer holds %d leases after sync, want %d", len(inf.GetStore().List()), len(live))
	}

	killed := -1
	for i := range 200 {
		if i == 100 {
			killed = c.Leader()
			if killed == f {
				// Leadership moved to the informer's member: kill another.
				killed = (f + 1) % len(c.Nodes)
				t.Logf("the informer's member %s leads; killing %s instead", c.Nodes[f].Name, c.Nodes[killed].Name)
			}
			c.Kill(killed)
		}
		start := i % len(c.Nodes)
		switch {
		case i%5 == 4 && len(live) > 3:
			k := live[0]
			live = live[1:]
			ns, name, _ := strings.Cut(k, "/")
			infRetry(t, c, clients, start, "delete "+k, func(ctx context.Context, cl kubernetes.Interface) error {
				return cl.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{})
			}, apierrors.IsNotFound)
		case i%5 >= 2:
			k := live[i%len(live)]
			ns, name, _ := strings.Cut(k, "/")
			infRetry(t, c, clients, start, "update "+k, func(ctx context.Context, cl kubernetes.Interface) error {
				leases := cl.CoordinationV1().Leases(ns)
				l, err := leases.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				l.Spec.HolderIdentity = ptr.To(fmt.Sprintf("w%d", i))
				_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				return err
			}, nil)
		default:
			ns := fmt.Sprintf("inf-%d", i%3)
			name := fmt.Sprintf("w-%d", i)
			infRetry(t, c, clients, start, "create "+name, func(ctx context.Context, cl kubernetes.Interface) error {
				_, err := cl.CoordinationV1().Leases(ns).Create(ctx, infLease(name, "c"), metav1.CreateOptions{})
				return err
			}, apierrors.IsAlreadyExists)
			live = append(live, ns+"/"+name)
		}
	}

	// A fresh linearizable list from a live member that is not the
	// informer's is the truth; the informer must arrive at it.
	other := f
	for i := range c.Nodes {
		if i != f && i != killed {
			other = i
		}
	}
	var want map[string]string
	var listRV string
	infRetry(t, c, clients, other, "list", func(ctx context.Context, cl kubernetes.Interface) error {
		l, err := cl.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		items := make([]*coordinationv1.Lease, len(l.Items))
		for i := range l.Items {
			items[i] = &l.Items[i]
		}
		want, listRV = infRVs(items), l.ResourceVersion
		return nil
	}, nil)
	if len(want) != len(live) {
		t.Errorf("the cluster holds %d leases, the writer expects %d", len(want), len(live))
	}
	var got map[string]string
	storeRVs := func() map[string]string {
		var items []*coordinationv1.Lease
		for _, o := range inf.GetStore().List() {
			items = append(items, o.(*coordinationv1.Lease))
		}
		return infRVs(items)
	}
	if !testcluster.WaitFor(context.Background(), infTimeout, func() bool {
		got = storeRVs()
		return maps.Equal(got, want)
	}) {
		var diff []string
		for k, v := range want {
			if got[k] != v {
				diff = append(diff, fmt.Sprintf("%s: informer %q, list %q", k, got[k], v))
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				diff = append(diff, fmt.Sprintf("%s: informer %q, not in the list", k, v))
			}
		}
		t.Fatalf("informer store differs from the list at %s after %v: %v", listRV, infTimeout, diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("informer went back in time: %v", violations)
	}
	t.Logf("informer converged on %d leases at %s (killed %s)", len(want), listRV, c.Nodes[killed].Name)
	for _, u := range rec.leaseRequests() {
		t.Logf("request %s", u.String())
	}
	return rec.leaseRequests()
}

func infLease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](10)},
	}
}

// TestInformerWatchList: client-go v0.37 informers use the streaming list
// (WatchList) by default: the first request is a watch with
// sendInitialEvents=true, and the informer never falls back to a LIST. It
// converges through writes on every member and a leader kill.
func TestInformerWatchList(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Logf("WatchListClient is off in this environment; turning it on")
	}
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, true)
	reqs := infConverge(t)
	if len(reqs) == 0 {
		t.Fatal("no lease requests recorded")
	}
	first := reqs[0].Query()
	for k, v := range map[string]string{"watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan", "allowWatchBookmarks": "true"} {
		if first.Get(k) != v {
			t.Errorf("first request %s: %s=%q, want %q", reqs[0].String(), k, first.Get(k), v)
		}
	}
	for _, u := range reqs {
		if u.Query().Get("watch") != "true" {
			t.Errorf("the informer fell back to a LIST: %s", u.String())
		}
	}
}

// TestInformerListWatch: the classic LIST then WATCH path (WatchListClient
// off) converges the same way.
func TestInformerListWatch(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	reqs := infConverge(t)
	if len(reqs) < 2 {
		t.Fatalf("lease requests %v, want a LIST and a WATCH", reqs)
	}
	if q := reqs[0].Query(); q.Get("watch") != "" || q.Has("sendInitialEvents") {
		t.Errorf("first request %s, want a plain LIST", reqs[0].String())
	}
	watches := 0
	for _, u := range reqs {
		q := u.Query()
		if q.Has("sendInitialEvents") {
			t.Errorf("request %s asks for initial events on the LIST+WATCH path", u.String())
		}
		if q.Get("watch") == "true" {
			watches++
			if rv := q.Get("resourceVersion"); rv == "" || rv == "0" {
				t.Errorf("watch %s does not resume from the list's RV", u.String())
			}
		}
	}
	if watches == 0 {
		t.Errorf("no WATCH after the LIST: %v", reqs)
	}
}

// TestWatchTooOldOverHTTP: a watch from an RV older than the retained
// history is answered 200, then one ERROR event with the 410 Expired Status
// "too old resource version: N (M)", then the stream ends; client-go's
// typed watch (protobuf and JSON) sees exactly that.
func TestWatchTooOldOverHTTP(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{State: state.Config{HistoryEvents: 4}})
	f := c.Follower()
	ctx, cancel := context.WithTimeout(context.Background(), infTimeout)
	defer cancel()
	leases := c.Client(c.Leader(), true).CoordinationV1().Leases("old")
	l, err := leases.Create(ctx, infLease("old", "h"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	from := l.ResourceVersion
	for i := range 10 {
		l.Spec.HolderIdentity = ptr.To(fmt.Sprintf("h%d", i))
		if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if err := c.Nodes[f].Raft().State().WaitApplied(ctx, last); err != nil {
		t.Fatal(err)
	}
	oldest := c.Nodes[f].Raft().State().EventsSince(0).Oldest
	wantMsg := fmt.Sprintf("too old resource version: %s (%d)", from, oldest)
	if fromRV, _ := strconv.ParseUint(from, 10, 64); oldest <= fromRV {
		t.Fatalf("history not trimmed past %s: oldest resumable RV %d", from, oldest)
	}
	for _, protobuf := range []bool{true, false} {
		w, err := c.Client(f, protobuf).CoordinationV1().Leases("old").Watch(ctx, metav1.ListOptions{ResourceVersion: from, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatalf("protobuf=%v: watch from %s: %v, want the error as an event", protobuf, from, err)
		}
		var evs []watch.Event
		timeout := time.After(infTimeout)
	read:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					break read
				}
				evs = append(evs, ev)
			case <-timeout:
				t.Fatalf("protobuf=%v: stream still open after %v: %v", protobuf, infTimeout, evs)
			}
		}
		w.Stop()
		if len(evs) != 1 || evs[0].Type != watch.Error {
			t.Fatalf("protobuf=%v: events %v, want one ERROR", protobuf, evs)
		}
		st, ok := evs[0].Object.(*metav1.Status)
		if !ok {
			t.Fatalf("protobuf=%v: ERROR object %T, want *Status", protobuf, evs[0].Object)
		}
		if st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Status != metav1.StatusFailure || st.Message != wantMsg {
			t.Errorf("protobuf=%v: status %d %s %s %q, want 410 Expired Failure %q", protobuf, st.Code, st.Reason, st.Status, st.Message, wantMsg)
		}
	}
}
