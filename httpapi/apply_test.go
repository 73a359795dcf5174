package httpapi_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testcluster"
)

const applyCT = "application/apply-patch+yaml"

// TestServerSideApply: apply creates, merges and owns fields per manager;
// another manager's change to an owned field is a 409 with the
// FieldManagerConflict cause unless forced; every write records its
// manager in managedFields; an unchanged apply is a no-op.
func TestServerSideApply(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := newWire(t, c, c.Follower())
	path := itemPath("ssa", "l")

	body := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\nspec:\n  holderIdentity: a\n  leaseDurationSeconds: 10\n"
	created := w.do("PATCH", path+"?fieldManager=alice", body, "Content-Type", applyCT).lease(t, 201)
	if got := managers(created.ManagedFields); len(got) != 1 || got[0] != "alice/Apply" {
		t.Fatalf("managedFields after create %v, want alice/Apply", got)
	}

	again := w.do("PATCH", path+"?fieldManager=alice", body, "Content-Type", applyCT).lease(t, 200)
	if again.ResourceVersion != created.ResourceVersion {
		t.Errorf("unchanged apply moved the resourceVersion %s -> %s", created.ResourceVersion, again.ResourceVersion)
	}

	bob := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\nspec:\n  holderIdentity: b\n"
	w.do("PATCH", path+"?fieldManager=bob", bob, "Content-Type", applyCT).status(t, statusWant{
		code: 409, reason: metav1.StatusReasonConflict,
		msg: `Apply failed with 1 conflict: conflict with "alice": .spec.holderIdentity`,
		details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "alice"`, Field: ".spec.holderIdentity",
		}}},
	})
	forced := w.do("PATCH", path+"?fieldManager=bob&force=true", bob, "Content-Type", applyCT).lease(t, 200)
	if *forced.Spec.HolderIdentity != "b" || *forced.Spec.LeaseDurationSeconds != 10 {
		t.Errorf("forced apply gave %v/%v, want b and alice's duration kept", *forced.Spec.HolderIdentity, *forced.Spec.LeaseDurationSeconds)
	}

	// A plain update is recorded under the client's manager.
	upd := w.do("PATCH", path+"?fieldManager=carol", `{"spec":{"leaseTransitions":3}}`, "Content-Type", "application/merge-patch+json").lease(t, 200)
	if got := managers(upd.ManagedFields); !contains(got, "carol/Update") || !contains(got, "bob/Apply") || !contains(got, "alice/Apply") {
		t.Errorf("managedFields %v, want alice/Apply, bob/Apply and carol/Update", got)
	}

	w.do("PATCH", path, body, "Content-Type", applyCT).status(t, statusWant{
		code: 422, reason: metav1.StatusReasonInvalid, prefix: true,
		msg: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
	})
	w.do("PATCH", path+"?fieldManager=x&force=true", `{"spec":{}}`, "Content-Type", "application/merge-patch+json").status(t, statusWant{
		code: 422, reason: metav1.StatusReasonInvalid, prefix: true,
		msg: `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`,
	})
}

func managers(mf []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range mf {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
