package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	return &st
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
