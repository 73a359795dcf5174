package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBoundMessage: a long message is cut on a rune boundary and says how
// much it left out; a short one is as it was.
func TestBoundMessage(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789... (3 more bytes)"},
		{"ééééé", 5, "éé... (6 more bytes)"},
	} {
		got := boundMessage(c.in, c.max)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("boundMessage(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// TestBoundStatus: the message, the name and the causes are cut; the
// error's own details are left as they were.
func TestBoundStatus(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	causes := make([]metav1.StatusCause, 100)
	for i := range causes {
		causes[i] = metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: long, Field: fmt.Sprintf("metadata.labels[%d]", i)}
	}
	orig := &metav1.StatusDetails{Name: long, Causes: causes}
	st := metav1.Status{Message: long, Details: orig}
	boundStatus(&st)
	if len(st.Message) > maxStatusMessageBytes+64 || len(st.Details.Name) > maxCauseBytes+64 || len(st.Details.Causes) != maxStatusCauses+1 {
		t.Fatalf("message %d bytes, name %d bytes, %d causes", len(st.Message), len(st.Details.Name), len(st.Details.Causes))
	}
	for _, c := range st.Details.Causes[:maxStatusCauses] {
		if len(c.Message) > maxCauseBytes+64 || c.Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("cause %+.100v", c)
		}
	}
	if last := st.Details.Causes[maxStatusCauses]; last.Message != "84 more causes left out" {
		t.Errorf("last cause %+v", last)
	}
	if orig.Name != long || len(orig.Causes) != 100 || orig.Causes[0].Message != long {
		t.Error("the error's own details changed")
	}
	empty := metav1.Status{Message: "m", Details: &metav1.StatusDetails{}}
	if boundStatus(&empty); empty.Details.Causes != nil {
		t.Errorf("no causes became %#v", empty.Details.Causes)
	}
}
