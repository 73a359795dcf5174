package registry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/apis"
)

// unsortedFieldManager is r's field manager over the library's own type
// converter, which walks maps in Go's order.
func unsortedFieldManager(t *testing.T, r *Resource) *managedfields.FieldManager {
	t.Helper()
	tc, err := typeConverter()
	if err != nil {
		t.Fatal(err)
	}
	gvk := r.GroupVersionKind()
	fm, err := managedfields.NewDefaultFieldManager(tc, apis.Scheme, apis.Scheme, apis.Scheme, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return fm
}

// withoutTimes is obj with its managed fields' times cleared, and the
// entries in manager order: each field manager stamps its own now, and
// orders entries by the second of it.
func withoutTimes(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	m := obj.(metav1.Object)
	mf := m.GetManagedFields()
	for i := range mf {
		mf[i].Time = nil
	}
	slices.SortFunc(mf, func(a, b metav1.ManagedFieldsEntry) int {
		return strings.Compare(a.Manager+"/"+string(a.Operation), b.Manager+"/"+string(b.Operation))
	})
	m.SetManagedFields(mf)
	return obj
}

// TestSortedTypeConverterChangesNothing: over random sequences of updates
// and applies by a few managers, of Leases (labels, annotations,
// finalizers, owner references) and ClusterRoles (lists of rules,
// selectors), the field manager walking maps in key order gives the
// objects, managed fields and conflicts the library's own gives.
func TestSortedTypeConverterChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(n int) string { return strconv.Itoa(rng.IntN(n)) }
	someMap := func(prefix string) map[string]string {
		if rng.IntN(4) == 0 {
			return nil
		}
		// Past smallMap keys, half the time.
		m := map[string]string{}
		for range rng.IntN(4 * smallMap) {
			m[prefix+pick(3*smallMap)] = pick(3)
		}
		return m
	}
	lease := func() runtime.Object {
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", Labels: someMap("l"), Annotations: someMap("a")},
		}
		for _, i := range rng.Perm(4)[:rng.IntN(3)] {
			l.Finalizers = append(l.Finalizers, "example.com/f"+strconv.Itoa(i))
		}
		for _, i := range rng.Perm(4)[:rng.IntN(3)] {
			l.OwnerReferences = append(l.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID("u" + strconv.Itoa(i))})
		}
		if rng.IntN(2) == 0 {
			l.Spec.HolderIdentity = ptr.To("h" + pick(3))
		}
		if rng.IntN(2) == 0 {
			l.Spec.LeaseDurationSeconds = ptr.To(int32(rng.IntN(3)))
		}
		return l
	}
	clusterRole := func() runtime.Object {
		cr := &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{Kind: "ClusterRole", APIVersion: "rbac.authorization.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: someMap("l")},
		}
		for range rng.IntN(4) {
			cr.Rules = append(cr.Rules, rbacv1.PolicyRule{Verbs: []string{"get", "v" + pick(3)}, APIGroups: []string{""}, Resources: []string{"r" + pick(5)}})
		}
		if rng.IntN(2) == 0 {
			cr.AggregationRule = &rbacv1.AggregationRule{}
			for range rng.IntN(3) {
				cr.AggregationRule.ClusterRoleSelectors = append(cr.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: someMap("s")})
			}
		}
		return cr
	}
	managers := []string{"alice", "bob", "carol"}
	var updates, applies, refused int
	defer func() { t.Logf("%d updates, %d applies, %d refused alike", updates, applies, refused) }()
	for _, c := range []struct {
		r    *Resource
		make func() runtime.Object
	}{{Leases, lease}, {ClusterRoles, clusterRole}} {
		sortedFM, err := c.r.fieldManager()
		if err != nil {
			t.Fatal(err)
		}
		unsortedFM := unsortedFieldManager(t, c.r)
		for seq := range 40 {
			liveS, liveU := c.r.New().(runtime.Object), c.r.New().(runtime.Object)
			for step := range 15 {
				manager := managers[rng.IntN(len(managers))]
				next := c.make()
				var gotS, gotU runtime.Object
				var errS, errU error
				if rng.IntN(3) == 0 {
					u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(next)
					if err != nil {
						t.Fatal(err)
					}
					force := rng.IntN(2) == 0
					applies++
					gotS, errS = sortedFM.Apply(liveS, &unstructured.Unstructured{Object: u}, manager, force)
					gotU, errU = unsortedFM.Apply(liveU, (&unstructured.Unstructured{Object: u}).DeepCopy(), manager, force)
				} else {
					updates++
					next.(metav1.Object).SetManagedFields(liveS.(metav1.Object).GetManagedFields())
					gotS = sortedFM.UpdateNoErrors(liveS, next, manager)
					next = next.DeepCopyObject()
					next.(metav1.Object).SetManagedFields(liveU.(metav1.Object).GetManagedFields())
					gotU = unsortedFM.UpdateNoErrors(liveU, next, manager)
				}
				where := fmt.Sprintf("%s, sequence %d, step %d", c.r.Name, seq, step)
				// The same errors, perhaps in another order: the library
				// lists them in the order it walks.
				if errLines(errS) != errLines(errU) {
					t.Fatalf("%s: errors differ:\nsorted:   %v\nunsorted: %v", where, errS, errU)
				}
				if errS != nil {
					refused++
					continue
				}
				if !reflect.DeepEqual(withoutTimes(gotS), withoutTimes(gotU)) {
					t.Fatalf("%s: results differ:\nsorted:   %+v\nunsorted: %+v", where, gotS, gotU)
				}
				liveS, liveU = gotS, gotU
			}
		}
	}
}

// errLines is err's message with its lines sorted.
func errLines(err error) string {
	if err == nil {
		return ""
	}
	lines := strings.Split(err.Error(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestManageIsLinear: the field manager's work per label is about the same
// for a Lease of 100,000 labels as for one of 1,000 (fastest of a few
// runs; a loose 10x bound, which walking the labels in Go's map order
// passes many times over).
func TestManageIsLinear(t *testing.T) {
	perLabel := func(n, reps int) time.Duration {
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", Labels: make(map[string]string, n)},
		}
		for i := range n {
			l.Labels["example.com/label-"+strconv.Itoa(i)] = "v"
		}
		best := time.Duration(math.MaxInt64)
		for i, begin := 0, time.Now(); i < 5 && (i == 0 || time.Since(begin) < 3*time.Second); i++ {
			start := time.Now()
			for range reps {
				if _, err := Leases.manageFully(&coordinationv1.Lease{}, l.DeepCopy(), "m"); err != nil {
					t.Fatal(err)
				}
			}
			best = min(best, time.Since(start))
		}
		return best / time.Duration(n*reps)
	}
	small, large := perLabel(1000, 20), perLabel(100000, 1)
	t.Logf("per label: %v of 1,000, %v of 100,000", small, large)
	if large > 10*small {
		t.Errorf("a label of 100,000 took %v, one of 1,000 %v: the field manager is not linear", large, small)
	}
}
