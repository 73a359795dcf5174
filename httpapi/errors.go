package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/cluster"
)

// statusOf turns any error into the Status a client sees. Errors that are
// not already Statuses are internal errors; they are logged once here.
func (s *Server) statusOf(r *http.Request, err error) *metav1.Status {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		s.logger.Error("internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	if st.Status == "" {
		st.Status = metav1.StatusFailure
	}
	boundStatus(&st)
	return &st
}

// What an error answer may quote of a request. kube-apiserver has no such
// bound, and answers a patch whose result does not decode with the whole
// result in its message: a patch that grows an object to a hundred
// megabytes gets them back. Here no error echoes a whole object: a value
// longer than maxEchoBytes is left out of a field error (echoed), and
// whatever else an error gathers from a request (one field error per bad
// label of a body of thousands, a name that was 100 KB long) is cut to
// maxStatusMessageBytes of message and maxStatusCauses causes of
// maxCauseBytes: an answer of a few tens of kilobytes at most.
const (
	maxEchoBytes          = 1 << 10
	maxStatusMessageBytes = 4 << 10
	maxStatusCauses       = 16
	maxCauseBytes         = maxEchoBytes + 1<<10
)

// echoed is s as a field error's value, or, longer than maxEchoBytes,
// field.OmitValueType, which the error then leaves out.
func echoed(s string) any {
	if len(s) > maxEchoBytes {
		return field.OmitValueType{}
	}
	return s
}

// boundMessage is s cut to at most max bytes and a note of how much was
// left out, on a UTF-8 boundary.
func boundMessage(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d more bytes)", len(s)-cut)
}

// boundStatus cuts what st quotes to the bounds above. Its details are
// the error's own, perhaps shared: they are copied, not changed.
func boundStatus(st *metav1.Status) {
	st.Message = boundMessage(st.Message, maxStatusMessageBytes)
	orig := st.Details
	if orig == nil {
		return
	}
	d := *orig
	st.Details = &d
	d.Name = boundMessage(d.Name, maxCauseBytes)
	if len(orig.Causes) == 0 {
		return
	}
	d.Causes = make([]metav1.StatusCause, 0, min(len(orig.Causes), maxStatusCauses+1))
	for i, c := range orig.Causes {
		if i == maxStatusCauses {
			d.Causes = append(d.Causes, metav1.StatusCause{Message: fmt.Sprintf("%d more causes left out", len(orig.Causes)-i)})
			break
		}
		c.Message = boundMessage(c.Message, maxCauseBytes)
		c.Field = boundMessage(c.Field, maxCauseBytes)
		d.Causes = append(d.Causes, c)
	}
}

// writeError answers with err as a Status in the negotiated encoding (JSON
// when negotiation itself failed).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := s.statusOf(r, err)
	if r.Context().Value(forwardedKey{}) != nil && errors.Is(err, cluster.ErrNotLeader) {
		w.Header().Set(notLeaderHeader, "1")
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(st.Details.RetryAfterSeconds)))
	}
	out, _ := negotiate(r)
	out.write(w, int(st.Code), st)
}

// notFound is kube-apiserver's answer for an unknown path inside a served
// group version.
func notFound() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
	}}
}

// methodNotAllowed is kube-apiserver's 405 body.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource", Details: &metav1.StatusDetails{},
	}}
}
