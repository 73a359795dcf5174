package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/registry"
)

// forwardedRequest is a client's request, forwarded whole from a follower
// to the leader so that the leader's answer can be returned unchanged. It
// travels as JSON inside the peer port's forward call, which carries it as
// bytes: JSON because a peer's message is decoded before anything else
// checks it, and encoding/json allocates no more than the bytes it reads.
type forwardedRequest struct {
	Method     string
	RequestURI string
	Header     http.Header
	Body       []byte
	// From is the forwarding node's name, for logs.
	From string
	// User is who the forwarding node authenticated the request as: the
	// leader authorizes the request with it, as it cannot authenticate a
	// client certificate it never saw. Only peers reach the leader's
	// forward call (with peer mTLS, only authenticated ones), and no header
	// a client sets is read for it.
	User *user.DefaultInfo
}

// forwardedResponse is the leader's answer to a forwarded request.
type forwardedResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

type forwardedKey struct{}

// notLeaderHeader marks a forwarded request's answer from a node that did
// not lead: nothing was done and the follower may forward it again.
const notLeaderHeader = "X-Leasehold-Not-Leader"

// leaderOnly runs a request on the leader: here if this node leads, else by
// forwarding it over the peer port and relaying the leader's answer
// unchanged. A forwarded request is never forwarded again: a node that no
// longer leads refuses it with a mark that nothing was done, and the
// follower forwards it again to the new leader while the write timeout
// lasts.
func (s *Server) leaderOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if s.node.IsLeader() {
			h(w, req)
			return
		}
		if req.Context().Value(forwardedKey{}) != nil {
			s.writeError(w, req, registry.NotLeader("leadership moved while the write was forwarded, please retry"))
			return
		}
		body, err := readBody(req)
		if err != nil {
			s.writeError(w, req, err)
			return
		}
		fr, err := json.Marshal(&forwardedRequest{
			Method: req.Method, RequestURI: req.URL.RequestURI(), Header: req.Header, Body: body,
			From: s.node.Name(), User: forwardedUser(requestUser(req)),
		})
		if err != nil {
			s.writeError(w, req, apierrors.NewInternalError(err))
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), s.writeTimeout+10*time.Second)
		defer cancel()
		deadline := time.Now().Add(s.writeTimeout)
		for {
			// Wait for a leader only as long as a write may.
			wctx, wcancel := context.WithDeadline(ctx, deadline)
			_, _, err = s.node.WaitLeader(wctx)
			wcancel()
			if err != nil {
				s.writeError(w, req, registry.NotLeader("the cluster has no leader at the moment, please retry"))
				return
			}
			if s.node.IsLeader() {
				req.Body = readCloser{bytes.NewReader(body)}
				h(w, req)
				return
			}
			answer, err := s.node.Forward(ctx, fr)
			retry := time.Now().Before(deadline) && ctx.Err() == nil
			if errors.Is(err, cluster.ErrUnsupported) {
				s.writeError(w, req, registry.Unavailable("the leader runs an earlier release that takes no forwarded requests: "+
					"send the request to the leader, or retry once the rolling upgrade is done"))
				return
			}
			if err != nil {
				if retry && errors.Is(err, cluster.ErrNoLeader) {
					// The leader could not be reached; nothing was sent.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				s.writeError(w, req, registry.ClusterError(err))
				return
			}
			var resp forwardedResponse
			if len(answer) == 0 || json.Unmarshal(answer, &resp) != nil || resp.Header.Get(notLeaderHeader) != "" {
				// No answer: the leader was still starting. Either way
				// nothing was done there.
				if retry {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				s.writeError(w, req, registry.NotLeader("the cluster has no leader at the moment, please retry"))
				return
			}
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.Status)
			_, _ = w.Write(resp.Body)
			return
		}
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// serveForwarded answers a request forwarded by a follower. The follower
// authenticated the client and sends the identity it found; the leader
// authorizes the request with that identity, as the follower did, and
// never reads one from the request's headers. A request without an
// identity is refused.
func (s *Server) serveForwarded(ctx context.Context, b []byte) []byte {
	rec := &recorder{header: http.Header{}}
	var fr forwardedRequest
	if err := json.Unmarshal(b, &fr); err != nil {
		rec.WriteHeader(http.StatusBadRequest)
		_, _ = rec.Write([]byte(err.Error()))
		return rec.response()
	}
	ctx = context.WithValue(ctx, forwardedKey{}, fr.From)
	req, err := http.NewRequestWithContext(ctx, fr.Method, fr.RequestURI, bytes.NewReader(fr.Body))
	if err != nil {
		rec.WriteHeader(http.StatusBadRequest)
		_, _ = rec.Write([]byte(err.Error()))
		return rec.response()
	}
	if fr.Header != nil {
		req.Header = fr.Header
	}
	req.Header.Del("Authorization")
	req.RequestURI = fr.RequestURI
	if fr.User == nil {
		s.writeError(rec, req, apierrors.NewUnauthorized("Unauthorized"))
		return rec.response()
	}
	attrs, err := auth.Attributes(req, fr.User)
	if err != nil {
		s.writeError(rec, req, apierrors.NewInternalError(err))
		return rec.response()
	}
	if !s.authorize(rec, req, attrs) {
		return rec.response()
	}
	s.router.ServeHTTP(rec, req.WithContext(auth.WithUser(ctx, fr.User)))
	return rec.response()
}

// forwardedUser is the identity a follower sends with a forwarded request.
func forwardedUser(u user.Info) *user.DefaultInfo {
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// recorder captures a response for relaying to a follower.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

// response is the recorded answer, encoded for the follower.
func (r *recorder) response() []byte {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	b, _ := json.Marshal(&forwardedResponse{Status: r.status, Header: r.header, Body: r.body.Bytes()})
	return b
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
