package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// opTimeout bounds every single request or wait in these tests.
const opTimeout = 15 * time.Second

func opCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// clientMode is one way of configuring client-go against a member.
type clientMode struct {
	name string
	cfg  func(c *testcluster.Cluster, i int) *rest.Config
}

// clientModes: protobuf and JSON as the harness configures them, and a
// rest.Config left at client-go's defaults (ContentType unset: the typed
// Lease client then prefers protobuf, other requests use JSON). Only the
// client-side rate limiter is switched off (QPS -1), which the wire does not
// see, to keep the test fast.
var clientModes = []clientMode{
	{"protobuf", func(c *testcluster.Cluster, i int) *rest.Config { return c.Config(i, true) }},
	{"json", func(c *testcluster.Cluster, i int) *rest.Config { return c.Config(i, false) }},
	{"defaults", func(c *testcluster.Cluster, i int) *rest.Config {
		return &rest.Config{Host: c.Nodes[i].URL(), Timeout: 30 * time.Second, QPS: -1}
	}},
}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func newLease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](10)},
	}
}

func rvOf(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a decimal uint64: %v", rv, err)
	}
	return n
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return "<nil>"
	}
	return *l.Spec.HolderIdentity
}

func names(items []coordinationv1.Lease) []string {
	out := make([]string, len(items))
	for i, l := range items {
		out[i] = l.Namespace + "/" + l.Name
	}
	return out
}

func wantErr(t *testing.T, what string, err error, is func(error) bool) {
	t.Helper()
	if err == nil || !is(err) {
		t.Fatalf("%s: got error %v (reason %q), want a different one", what, err, apierrors.ReasonForError(err))
	}
}

// listRV is the resourceVersion of a list of namespace ns.
func listRV(t *testing.T, leases coordclient.LeaseInterface) uint64 {
	t.Helper()
	l, err := leases.List(opCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rvOf(t, l.ResourceVersion)
}

// TestClientGo drives every verb through client-go's typed clientset, in
// protobuf, in JSON and at client-go's defaults, always against a follower
// so that writes are forwarded and reads are follower reads.
func TestClientGo(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	for _, mode := range clientModes {
		t.Run(mode.name, func(t *testing.T) {
			f := c.Follower()
			cfg := mode.cfg(c, f)
			cs := clientset(t, cfg)
			rc := cs.CoordinationV1().RESTClient()
			prefix := "cg-" + mode.name
			nsFor := func(t *testing.T) string {
				return prefix + "-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()[strings.LastIndex(t.Name(), "/")+1:]))
			}

			t.Run("create_get", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				in := newLease("a", "me")
				in.UID = "client-uid"
				in.CreationTimestamp = metav1.NewTime(time.Unix(1000, 0))
				in.Labels = map[string]string{"k": "v"}
				before := time.Now().Add(-2 * time.Second)
				out, err := leases.Create(opCtx(t), in, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if out.UID == "" || out.UID == "client-uid" {
					t.Errorf("uid %q: want a server-generated one", out.UID)
				}
				if out.CreationTimestamp.Time.Before(before) || out.CreationTimestamp.Time.After(time.Now().Add(2*time.Second)) {
					t.Errorf("creationTimestamp %v: want the server's now", out.CreationTimestamp)
				}
				rv := rvOf(t, out.ResourceVersion)
				if out.Namespace != ns || out.Name != "a" || holder(out) != "me" || out.Labels["k"] != "v" || *out.Spec.LeaseDurationSeconds != 10 {
					t.Errorf("created %+v", out)
				}
				got, err := leases.Get(opCtx(t), "a", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.UID != out.UID || got.ResourceVersion != out.ResourceVersion || holder(got) != "me" || !got.CreationTimestamp.Equal(&out.CreationTimestamp) {
					t.Errorf("get = %+v, want %+v", got, out)
				}
				// A get at resourceVersion=0 and at the create's version.
				for _, o := range []string{"0", out.ResourceVersion} {
					got, err := leases.Get(opCtx(t), "a", metav1.GetOptions{ResourceVersion: o})
					if err != nil || got.ResourceVersion != out.ResourceVersion {
						t.Errorf("get rv=%s: %v %v", o, got, err)
					}
				}
				// The status code of a create is 201.
				var code int
				res := rc.Post().Namespace(ns).Resource("leases").Body(newLease("b", "x")).Do(opCtx(t)).StatusCode(&code)
				if err := res.Error(); err != nil || code != http.StatusCreated {
					t.Errorf("POST: code %d, err %v; want 201", code, err)
				}
				if lrv := listRV(t, leases); lrv <= rv {
					t.Errorf("list RV %d after a write at %d", lrv, rv)
				}
			})

			t.Run("errors", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				_, err := leases.Get(opCtx(t), "missing", metav1.GetOptions{})
				wantErr(t, "get missing", err, apierrors.IsNotFound)
				err = leases.Delete(opCtx(t), "missing", metav1.DeleteOptions{})
				wantErr(t, "delete missing", err, apierrors.IsNotFound)
				_, err = leases.Patch(opCtx(t), "missing", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"x"}}`), metav1.PatchOptions{})
				wantErr(t, "patch missing", err, apierrors.IsNotFound)
				if _, err := leases.Create(opCtx(t), newLease("dup", "a"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				_, err = leases.Create(opCtx(t), newLease("dup", "b"), metav1.CreateOptions{})
				wantErr(t, "duplicate create", err, apierrors.IsAlreadyExists)
				bad := newLease("bad", "a")
				bad.Spec.LeaseDurationSeconds = ptr.To[int32](0)
				_, err = leases.Create(opCtx(t), bad, metav1.CreateOptions{})
				wantErr(t, "invalid create", err, apierrors.IsInvalid)
				st := err.(apierrors.APIStatus).Status()
				if st.Details == nil || st.Details.Kind != "Lease" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.leaseDurationSeconds" {
					t.Errorf("invalid create status %+v", st)
				}
			})

			t.Run("list", func(t *testing.T) {
				ns := nsFor(t)
				other := ns + "-other"
				var maxRV uint64
				for i, n := range []string{"c", "a", "b"} {
					l := newLease(n, "h")
					l.Labels = map[string]string{"idx": strconv.Itoa(i), "app": map[bool]string{true: "x", false: "y"}[i < 2]}
					out, err := cs.CoordinationV1().Leases(ns).Create(opCtx(t), l, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					maxRV = max(maxRV, rvOf(t, out.ResourceVersion))
				}
				if _, err := cs.CoordinationV1().Leases(other).Create(opCtx(t), newLease("z", "h"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				l, err := cs.CoordinationV1().Leases(ns).List(opCtx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := names(l.Items); !slices.Equal(got, []string{ns + "/a", ns + "/b", ns + "/c"}) {
					t.Errorf("namespace list = %v", got)
				}
				if rvOf(t, l.ResourceVersion) < maxRV || l.Continue != "" {
					t.Errorf("list RV %s continue %q, after writes up to %d", l.ResourceVersion, l.Continue, maxRV)
				}
				all, err := cs.CoordinationV1().Leases(metav1.NamespaceAll).List(opCtx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got := names(all.Items)
				for _, want := range []string{ns + "/a", ns + "/b", ns + "/c", other + "/z"} {
					if !slices.Contains(got, want) {
						t.Errorf("all-namespaces list lacks %s: %v", want, got)
					}
				}
				if !slices.IsSorted(got) {
					t.Errorf("all-namespaces list not in key order: %v", got)
				}
				for _, tc := range []struct {
					opts metav1.ListOptions
					want []string
				}{
					{metav1.ListOptions{LabelSelector: "app=x"}, []string{"a", "c"}},
					{metav1.ListOptions{LabelSelector: "app!=x"}, []string{"b"}},
					{metav1.ListOptions{LabelSelector: "idx in (0,2),app"}, []string{"b", "c"}},
					{metav1.ListOptions{LabelSelector: "!app"}, nil},
					{metav1.ListOptions{FieldSelector: "metadata.name=b"}, []string{"b"}},
					{metav1.ListOptions{FieldSelector: "metadata.name!=b"}, []string{"a", "c"}},
					{metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns, LabelSelector: "idx=1"}, []string{"a"}},
					{metav1.ListOptions{FieldSelector: "metadata.namespace=" + other}, nil},
				} {
					l, err := cs.CoordinationV1().Leases(ns).List(opCtx(t), tc.opts)
					if err != nil {
						t.Errorf("%+v: %v", tc.opts, err)
						continue
					}
					var got []string
					for _, it := range l.Items {
						got = append(got, it.Name)
					}
					if !slices.Equal(got, tc.want) {
						t.Errorf("%+v: got %v, want %v", tc.opts, got, tc.want)
					}
				}
				_, err = cs.CoordinationV1().Leases(ns).List(opCtx(t), metav1.ListOptions{FieldSelector: "spec.holderIdentity=h"})
				wantErr(t, "unknown field selector", err, apierrors.IsBadRequest)
			})

			t.Run("update", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				cur, err := leases.Create(opCtx(t), newLease("u", "a"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				stale := cur.DeepCopy()
				cur.Spec.HolderIdentity = ptr.To("b")
				cur.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)))
				upd, err := leases.Update(opCtx(t), cur, metav1.UpdateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if rvOf(t, upd.ResourceVersion) <= rvOf(t, cur.ResourceVersion) || holder(upd) != "b" || upd.UID != cur.UID {
					t.Errorf("update returned %+v", upd)
				}
				if !upd.Spec.RenewTime.Equal(cur.Spec.RenewTime) {
					t.Errorf("renewTime %v, want %v", upd.Spec.RenewTime, cur.Spec.RenewTime)
				}
				// An identical update is a no-op: same resourceVersion.
				same, err := leases.Update(opCtx(t), upd, metav1.UpdateOptions{})
				if err != nil || same.ResourceVersion != upd.ResourceVersion {
					t.Errorf("no-op update: %v %v, want RV %s", same, err, upd.ResourceVersion)
				}
				stale.Spec.HolderIdentity = ptr.To("c")
				_, err = leases.Update(opCtx(t), stale, metav1.UpdateOptions{})
				wantErr(t, "update with a stale RV", err, apierrors.IsConflict)
				noRV := upd.DeepCopy()
				noRV.ResourceVersion = ""
				_, err = leases.Update(opCtx(t), noRV, metav1.UpdateOptions{})
				wantErr(t, "update without RV", err, apierrors.IsInvalid)
				wrongUID := upd.DeepCopy()
				wrongUID.UID = "00000000-0000-0000-0000-000000000000"
				_, err = leases.Update(opCtx(t), wrongUID, metav1.UpdateOptions{})
				wantErr(t, "update with another uid", err, apierrors.IsConflict)
				got, err := leases.Get(opCtx(t), "u", metav1.GetOptions{})
				if err != nil || got.ResourceVersion != upd.ResourceVersion || holder(got) != "b" {
					t.Errorf("after refused updates: %v %v", got, err)
				}

				// An update of a missing lease creates it (201).
				missing := newLease("created-by-put", "p")
				missing.ResourceVersion = "12345"
				var code int
				into := &coordinationv1.Lease{}
				err = rc.Put().Namespace(ns).Resource("leases").Name(missing.Name).Body(missing).Do(opCtx(t)).StatusCode(&code).Into(into)
				if err != nil || code != http.StatusCreated {
					t.Fatalf("PUT of a missing lease: code %d, %v; want 201", code, err)
				}
				if into.UID == "" || into.ResourceVersion == "12345" || holder(into) != "p" {
					t.Errorf("PUT-created %+v", into)
				}
				missing.Name = "created-by-put-2"
				created, err := leases.Update(opCtx(t), missing, metav1.UpdateOptions{})
				if err != nil || created.UID == "" || holder(created) != "p" {
					t.Errorf("typed update of a missing lease: %v %v", created, err)
				}
			})

			t.Run("patch", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				cur, err := leases.Create(opCtx(t), newLease("p", "a"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				lastRV := rvOf(t, cur.ResourceVersion)
				for _, p := range []struct {
					pt     types.PatchType
					body   string
					holder string
				}{
					{types.MergePatchType, `{"spec":{"holderIdentity":"merge"},"metadata":{"labels":{"m":"1"}}}`, "merge"},
					{types.JSONPatchType, `[{"op":"test","path":"/spec/holderIdentity","value":"merge"},{"op":"replace","path":"/spec/holderIdentity","value":"json"}]`, "json"},
					{types.StrategicMergePatchType, `{"spec":{"holderIdentity":"smp","leaseTransitions":3}}`, "smp"},
				} {
					out, err := leases.Patch(opCtx(t), "p", p.pt, []byte(p.body), metav1.PatchOptions{})
					if err != nil {
						t.Fatalf("%s: %v", p.pt, err)
					}
					rv := rvOf(t, out.ResourceVersion)
					if holder(out) != p.holder || rv <= lastRV || out.UID != cur.UID {
						t.Errorf("%s: holder %q rv %d (before %d)", p.pt, holder(out), rv, lastRV)
					}
					lastRV = rv
				}
				got, err := leases.Get(opCtx(t), "p", metav1.GetOptions{})
				if err != nil || got.Labels["m"] != "1" || *got.Spec.LeaseTransitions != 3 || *got.Spec.LeaseDurationSeconds != 10 {
					t.Errorf("after patches: %+v %v", got, err)
				}
				// A patch that carries a resourceVersion is a precondition.
				_, err = leases.Patch(opCtx(t), "p", types.MergePatchType,
					[]byte(`{"metadata":{"resourceVersion":"`+cur.ResourceVersion+`"},"spec":{"holderIdentity":"stale"}}`), metav1.PatchOptions{})
				wantErr(t, "merge patch with a stale RV", err, apierrors.IsConflict)
				_, err = leases.Patch(opCtx(t), "p", types.StrategicMergePatchType,
					[]byte(`{"metadata":{"resourceVersion":"`+cur.ResourceVersion+`"},"spec":{"holderIdentity":"stale"}}`), metav1.PatchOptions{})
				wantErr(t, "strategic patch with a stale RV", err, apierrors.IsConflict)
				out, err := leases.Patch(opCtx(t), "p", types.MergePatchType,
					[]byte(`{"metadata":{"resourceVersion":"`+got.ResourceVersion+`"},"spec":{"holderIdentity":"fresh"}}`), metav1.PatchOptions{})
				if err != nil || holder(out) != "fresh" {
					t.Errorf("merge patch with the current RV: %v %v", out, err)
				}
				// A failing JSON patch test is 422.
				_, err = leases.Patch(opCtx(t), "p", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/holderIdentity","value":"nope"}]`), metav1.PatchOptions{})
				wantErr(t, "failing json patch test", err, apierrors.IsInvalid)
				// A patch making the lease invalid is refused.
				_, err = leases.Patch(opCtx(t), "p", types.MergePatchType, []byte(`{"spec":{"leaseDurationSeconds":0}}`), metav1.PatchOptions{})
				wantErr(t, "invalid patch result", err, apierrors.IsInvalid)
			})

			t.Run("delete", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				cur, err := leases.Create(opCtx(t), newLease("d", "a"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				err = leases.Delete(opCtx(t), "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("00000000-0000-0000-0000-000000000000")}})
				wantErr(t, "delete with another uid", err, apierrors.IsConflict)
				err = leases.Delete(opCtx(t), "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}})
				wantErr(t, "delete with a stale RV", err, apierrors.IsConflict)
				if _, err := leases.Get(opCtx(t), "d", metav1.GetOptions{}); err != nil {
					t.Fatalf("lease gone after refused deletes: %v", err)
				}
				err = leases.Delete(opCtx(t), "d", metav1.DeleteOptions{
					Preconditions:     &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion},
					PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
				})
				if err != nil {
					t.Fatal(err)
				}
				_, err = leases.Get(opCtx(t), "d", metav1.GetOptions{})
				wantErr(t, "get after delete", err, apierrors.IsNotFound)
				err = leases.Delete(opCtx(t), "d", metav1.DeleteOptions{})
				wantErr(t, "second delete", err, apierrors.IsNotFound)
			})

			t.Run("deletecollection", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				for i := range 5 {
					l := newLease("dc"+strconv.Itoa(i), "h")
					l.Labels = map[string]string{"gone": strconv.FormatBool(i%2 == 0)}
					if _, err := leases.Create(opCtx(t), l, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if err := leases.DeleteCollection(opCtx(t), metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
					t.Fatal(err)
				}
				if l, err := leases.List(opCtx(t), metav1.ListOptions{}); err != nil || len(l.Items) != 5 {
					t.Fatalf("after a dry-run deletecollection: %v %v", l, err)
				}
				if err := leases.DeleteCollection(opCtx(t), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
					t.Fatal(err)
				}
				l, err := leases.List(opCtx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, it := range l.Items {
					got = append(got, it.Name)
				}
				if !slices.Equal(got, []string{"dc1", "dc3"}) {
					t.Errorf("after deletecollection gone=true: %v", got)
				}
			})

			t.Run("pagination", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				var want []string
				for i := range 7 {
					n := "pg" + strconv.Itoa(i)
					if _, err := leases.Create(opCtx(t), newLease(n, "h"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					want = append(want, n)
				}
				var got []string
				var firstRV, cont string
				for page := 0; ; page++ {
					l, err := leases.List(opCtx(t), metav1.ListOptions{Limit: 3, Continue: cont})
					if err != nil {
						t.Fatalf("page %d: %v", page, err)
					}
					if page == 0 {
						firstRV = l.ResourceVersion
					} else if l.ResourceVersion != firstRV {
						t.Errorf("page %d has RV %s, first page %s", page, l.ResourceVersion, firstRV)
					}
					if len(l.Items) > 3 {
						t.Errorf("page %d has %d items for limit 3", page, len(l.Items))
					}
					for _, it := range l.Items {
						got = append(got, it.Name)
					}
					if l.Continue == "" {
						if l.RemainingItemCount != nil {
							t.Errorf("last page has remainingItemCount %d", *l.RemainingItemCount)
						}
						break
					}
					if rem := int64(len(want) - len(got)); l.RemainingItemCount == nil || *l.RemainingItemCount != rem {
						t.Errorf("page %d remainingItemCount %v, want %d", page, l.RemainingItemCount, rem)
					}
					if page > 5 {
						t.Fatal("pagination does not end")
					}
					cont = l.Continue
					// Writes between pages must not show in later pages.
					if _, err := leases.Create(opCtx(t), newLease("pg9-"+strconv.Itoa(page), "h"), metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					if err := leases.Delete(opCtx(t), want[len(want)-1-page], metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					if _, err := leases.Patch(opCtx(t), "pg0", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"p`+strconv.Itoa(page)+`"}}`), metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("pages together = %v, want %v", got, want)
				}
				// A list with a selector pages too, without remainingItemCount.
				l, err := leases.List(opCtx(t), metav1.ListOptions{Limit: 1, FieldSelector: "metadata.name!=pg0"})
				if err != nil || len(l.Items) != 1 || l.Continue == "" || l.RemainingItemCount != nil {
					t.Errorf("selector page: %+v %v", l, err)
				}
			})

			t.Run("dryrun", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				all := []string{metav1.DryRunAll}
				cur, err := leases.Create(opCtx(t), newLease("real", "a"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				before := listRV(t, leases)
				dc, err := leases.Create(opCtx(t), newLease("dry", "a"), metav1.CreateOptions{DryRun: all})
				if err != nil {
					t.Fatal(err)
				}
				if dc.UID == "" || dc.CreationTimestamp.IsZero() || dc.ResourceVersion != "" || dc.Name != "dry" {
					t.Errorf("dry-run create returned %+v", dc.ObjectMeta)
				}
				_, err = leases.Get(opCtx(t), "dry", metav1.GetOptions{})
				wantErr(t, "get after dry-run create", err, apierrors.IsNotFound)

				upd := cur.DeepCopy()
				upd.Spec.HolderIdentity = ptr.To("dry")
				du, err := leases.Update(opCtx(t), upd, metav1.UpdateOptions{DryRun: all})
				if err != nil || holder(du) != "dry" || du.ResourceVersion != cur.ResourceVersion {
					t.Errorf("dry-run update: %+v %v", du, err)
				}
				dp, err := leases.Patch(opCtx(t), "real", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"drypatch"}}`), metav1.PatchOptions{DryRun: all})
				if err != nil || holder(dp) != "drypatch" || dp.ResourceVersion != cur.ResourceVersion {
					t.Errorf("dry-run patch: %+v %v", dp, err)
				}
				if err := leases.Delete(opCtx(t), "real", metav1.DeleteOptions{DryRun: all}); err != nil {
					t.Errorf("dry-run delete: %v", err)
				}
				got, err := leases.Get(opCtx(t), "real", metav1.GetOptions{})
				if err != nil || got.ResourceVersion != cur.ResourceVersion || holder(got) != "a" {
					t.Errorf("after dry runs: %+v %v", got, err)
				}
				if after := listRV(t, leases); after != before {
					t.Errorf("dry runs moved the list RV from %d to %d", before, after)
				}
				// Dry runs still validate.
				bad := newLease("dry-bad", "a")
				bad.Spec.LeaseTransitions = ptr.To[int32](-1)
				_, err = leases.Create(opCtx(t), bad, metav1.CreateOptions{DryRun: all})
				wantErr(t, "invalid dry-run create", err, apierrors.IsInvalid)
			})

			t.Run("generatename", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				seen := map[string]bool{}
				for range 3 {
					l := newLease("", "g")
					l.GenerateName = "gen-"
					out, err := leases.Create(opCtx(t), l, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(out.Name, "gen-") || len(out.Name) != len("gen-")+5 || strings.Trim(out.Name[4:], "bcdfghjklmnpqrstvwxz2456789") != "" || seen[out.Name] {
						t.Errorf("generated name %q", out.Name)
					}
					seen[out.Name] = true
					if out.GenerateName != "gen-" {
						t.Errorf("generateName %q not kept", out.GenerateName)
					}
				}
			})

			t.Run("watch", func(t *testing.T) {
				ns := nsFor(t)
				leases := cs.CoordinationV1().Leases(ns)
				if _, err := leases.Create(opCtx(t), newLease("before", "a"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				l, err := leases.List(opCtx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				w, err := leases.Watch(opCtx(t), metav1.ListOptions{ResourceVersion: l.ResourceVersion})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				created, err := leases.Create(opCtx(t), newLease("w", "a"), metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				created.Spec.HolderIdentity = ptr.To("b")
				updated, err := leases.Update(opCtx(t), created, metav1.UpdateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := leases.Delete(opCtx(t), "w", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				want := []struct {
					typ    watch.EventType
					holder string
					rv     string
				}{{watch.Added, "a", created.ResourceVersion}, {watch.Modified, "b", updated.ResourceVersion}, {watch.Deleted, "b", ""}}
				var last uint64
				for i, ev := range want {
					select {
					case got, ok := <-w.ResultChan():
						if !ok {
							t.Fatalf("watch closed before event %d", i)
						}
						lease, isLease := got.Object.(*coordinationv1.Lease)
						if got.Type != ev.typ || !isLease || lease.Name != "w" || holder(lease) != ev.holder {
							t.Fatalf("event %d = %s %#v, want %s of w held by %s", i, got.Type, got.Object, ev.typ, ev.holder)
						}
						rv := rvOf(t, lease.ResourceVersion)
						if (ev.rv != "" && lease.ResourceVersion != ev.rv) || rv <= last {
							t.Errorf("event %d RV %d (previous %d, want %q)", i, rv, last, ev.rv)
						}
						last = rv
					case <-time.After(opTimeout):
						t.Fatalf("no event %d within %v", i, opTimeout)
					}
				}
			})
		})
	}
}

// TestClientGoDiscovery checks what client-go's discovery client makes of
// the server.
func TestClientGoDiscovery(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	cs := clientset(t, &rest.Config{Host: c.Nodes[c.Follower()].URL(), Timeout: opTimeout})
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.Major != "1" || v.Minor != "32" {
		t.Fatalf("server version %+v %v", v, err)
	}
	rl, err := cs.Discovery().ServerResourcesForGroupVersion("coordination.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range rl.APIResources {
		if r.Name == "leases" {
			found = true
			if r.Kind != "Lease" || !r.Namespaced || !slices.Contains(r.Verbs, "watch") {
				t.Errorf("leases resource %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("no leases in %+v", rl)
	}
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var coord *metav1.APIGroup
	for i := range groups.Groups {
		if groups.Groups[i].Name == "coordination.k8s.io" {
			coord = &groups.Groups[i]
		}
	}
	if coord == nil || coord.PreferredVersion.Version != "v1" {
		t.Errorf("groups %+v", groups)
	}
}

// TestLeaderElection runs client-go's leader election with a LeaseLock
// against followers: one candidate acquires, renews and releases on
// cancel; a second one takes over after the release.
func TestLeaderElection(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	const ns, name = "le", "smoke"
	cs := clientset(t, &rest.Config{Host: c.Nodes[f].URL(), Timeout: 5 * time.Second})
	leases := cs.CoordinationV1().Leases(ns)

	type candidate struct {
		started, stopped, done chan struct{}
		cancel                 context.CancelFunc
	}
	run := func(id string, client kubernetes.Interface) *candidate {
		cd := &candidate{started: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cd.cancel = cancel
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		var once sync.Once
		go func() {
			defer close(cd.done)
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock:            lock,
				LeaseDuration:   2 * time.Second,
				RenewDeadline:   1500 * time.Millisecond,
				RetryPeriod:     300 * time.Millisecond,
				ReleaseOnCancel: true,
				Name:            id,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { close(cd.started) },
					OnStoppedLeading: func() { once.Do(func() { close(cd.stopped) }) },
				},
			})
		}()
		t.Cleanup(func() {
			cancel()
			<-cd.done
		})
		return cd
	}
	waitFor := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(opTimeout):
			t.Fatalf("%s within %v", what, opTimeout)
		}
	}

	first := run("cand-1", cs)
	waitFor(first.started, "cand-1 did not become leader")
	l, err := leases.Get(opCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder(l) != "cand-1" || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 2 || l.Spec.AcquireTime == nil || l.Spec.RenewTime == nil {
		t.Fatalf("lease after acquisition: %+v", l.Spec)
	}
	// The holder renews: renewTime moves while the holder stays.
	renewed := testcluster.WaitFor(context.Background(), 5*time.Second, func() bool {
		cur, err := leases.Get(opCtx(t), name, metav1.GetOptions{})
		return err == nil && holder(cur) == "cand-1" && cur.Spec.RenewTime.After(l.Spec.RenewTime.Time)
	})
	if !renewed {
		t.Fatal("cand-1 did not renew its lease")
	}

	// A second candidate on the other follower (JSON) waits while cand-1
	// holds the lease.
	other := 3 - f - c.Leader()
	second := run("cand-2", clientset(t, c.Config(other, false)))
	select {
	case <-second.started:
		t.Fatal("cand-2 became leader while cand-1 held the lease")
	case <-time.After(2500 * time.Millisecond):
	}

	first.cancel()
	waitFor(first.done, "cand-1's RunOrDie did not return after cancel")
	waitFor(first.stopped, "cand-1 did not report stopping")
	released, err := leases.Get(opCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// cand-2 may already have taken it; if not, the release is visible.
	if h := holder(released); h != "" && h != "cand-2" {
		t.Fatalf("after release the holder is %q, want \"\" (or cand-2)", h)
	}
	if holder(released) == "" && (released.Spec.LeaseDurationSeconds == nil || *released.Spec.LeaseDurationSeconds != 1) {
		t.Errorf("released lease spec %+v", released.Spec)
	}

	waitFor(second.started, "cand-2 did not take over after the release")
	l, err = leases.Get(opCtx(t), name, metav1.GetOptions{})
	if err != nil || holder(l) != "cand-2" || l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("after take-over: %+v %v", l, err)
	}
	second.cancel()
	waitFor(second.done, "cand-2's RunOrDie did not return after cancel")
	l, err = leases.Get(opCtx(t), name, metav1.GetOptions{})
	if err != nil || holder(l) != "" {
		t.Fatalf("after cand-2's release: %+v %v", l, err)
	}
}
