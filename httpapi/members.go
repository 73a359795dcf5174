package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/registry"
)

// Membership endpoints, all run on the leader (leaderOnly forwards them
// there with the caller's identity): non-resource URLs, which RBAC
// grants to cluster-admin; a member's peer certificate may only join.
//
//	GET    /cluster/members                  the member list
//	POST   /cluster/members                  add a non-voter {name, peerAddr, apiURL}
//	POST   /cluster/join                     the same, for a node started with --join
//	POST   /cluster/members/{name}/promote   make a caught-up non-voter a voter
//	DELETE /cluster/members/{name}           remove a member, if quorum-safe
//	POST   /cluster/leader/transfer          {name} or {} for raft's choice

// clusterMembers names members in errors.
var clusterMembers = schema.GroupResource{Resource: "members"}

// memberRequest names a member to add.
type memberRequest struct {
	Name     string `json:"name"`
	PeerAddr string `json:"peerAddr"`
	APIURL   string `json:"apiURL,omitempty"`
}

// MemberList is GET /cluster/members's answer.
type MemberList struct {
	Members []cluster.MemberStatus `json:"members"`
}

func (s *Server) routeMembers(r *mux.Router) {
	r.HandleFunc("/cluster/join", s.leaderOnly(s.memberAdd)).Methods(http.MethodPost)
	r.HandleFunc("/cluster/members", s.leaderOnly(s.memberList)).Methods(http.MethodGet)
	r.HandleFunc("/cluster/members", s.leaderOnly(s.memberAdd)).Methods(http.MethodPost)
	r.HandleFunc("/cluster/members/{name}/promote", s.leaderOnly(s.memberPromote)).Methods(http.MethodPost)
	r.HandleFunc("/cluster/members/{name}", s.leaderOnly(s.memberRemove)).Methods(http.MethodDelete)
	r.HandleFunc("/cluster/leader/transfer", s.leaderOnly(s.leaderTransfer)).Methods(http.MethodPost)
	// The alarms are cluster operations too (alarms.go).
	s.routeAlarms(r)
}

func (s *Server) memberList(w http.ResponseWriter, req *http.Request) {
	ms, err := s.node.Members()
	if err != nil {
		s.writeError(w, req, membershipError(err, ""))
		return
	}
	writeJSON(w, req, http.StatusOK, MemberList{Members: ms})
}

// memberAdd adds the node named in the body as a non-voter, which the
// leader promotes once it has caught up; it answers with the leader's
// status.
func (s *Server) memberAdd(w http.ResponseWriter, req *http.Request) {
	var mr memberRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<16)).Decode(&mr); err != nil {
		s.writeError(w, req, apierrors.NewBadRequest(fmt.Sprintf(`body must be {"name":...,"peerAddr":...,"apiURL":...}: %v`, err)))
		return
	}
	if err := validMember(mr); err != nil {
		s.writeError(w, req, apierrors.NewBadRequest(err.Error()))
		return
	}
	if err := s.node.AddMember(req.Context(), mr.Name, mr.PeerAddr, mr.APIURL); err != nil {
		s.writeError(w, req, membershipError(err, mr.Name))
		return
	}
	writeJSON(w, req, http.StatusOK, s.node.Status())
}

// validMember checks a member's name and addresses.
func validMember(mr memberRequest) error {
	if mr.Name == "" || len(mr.Name) > 253 {
		return errors.New("name must be 1 to 253 characters")
	}
	if _, port, err := net.SplitHostPort(mr.PeerAddr); err != nil || port == "" {
		return fmt.Errorf("peerAddr %q must be host:port", mr.PeerAddr)
	}
	if mr.APIURL != "" {
		if u, err := url.Parse(mr.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("apiURL %q must be an http or https URL", mr.APIURL)
		}
	}
	return nil
}

func (s *Server) memberPromote(w http.ResponseWriter, req *http.Request) {
	name := mux.Vars(req)["name"]
	if err := s.node.PromoteMember(req.Context(), name); err != nil {
		s.writeError(w, req, membershipError(err, name))
		return
	}
	s.memberList(w, req)
}

// memberRemove removes a member. The leader removing itself hands
// leadership over first, then sends the request on to the new leader.
func (s *Server) memberRemove(w http.ResponseWriter, req *http.Request) {
	name := mux.Vars(req)["name"]
	err := s.node.RemoveMember(req.Context(), name)
	if errors.Is(err, cluster.ErrLeadershipMoved) {
		s.forwardAfterTransfer(w, req)
		return
	}
	if err != nil {
		s.writeError(w, req, membershipError(err, name))
		return
	}
	writeJSON(w, req, http.StatusOK, map[string]string{"removed": name})
}

// forwardAfterTransfer sends req, which this node can no longer serve as
// it just gave up leadership, to the new leader.
func (s *Server) forwardAfterTransfer(w http.ResponseWriter, req *http.Request) {
	deadline := time.Now().Add(s.writeTimeout)
	for time.Now().Before(deadline) && req.Context().Err() == nil {
		if name, addr := s.node.Leader(); addr != "" && name != s.node.Name() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The request is not a forwarded one here, so leaderOnly sends it on.
	s.leaderOnly(func(w http.ResponseWriter, req *http.Request) {
		s.writeError(w, req, registry.NotLeader("leadership moved back to this node, please retry"))
	})(w, req)
}

// transferRequest names the voter to hand leadership to ("" = raft picks).
type transferRequest struct {
	Name string `json:"name"`
}

func (s *Server) leaderTransfer(w http.ResponseWriter, req *http.Request) {
	var tr transferRequest
	if req.ContentLength != 0 {
		if err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<16)).Decode(&tr); err != nil {
			s.writeError(w, req, apierrors.NewBadRequest(fmt.Sprintf(`body must be {"name":...} or empty: %v`, err)))
			return
		}
	}
	from := s.node.Name()
	if err := s.node.TransferLeadership(req.Context(), tr.Name); err != nil {
		s.writeError(w, req, membershipError(err, tr.Name))
		return
	}
	// Answer with the new leader once this node knows it.
	var to string
	for deadline := time.Now().Add(s.writeTimeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if to, _ = s.node.Leader(); to != "" && to != from {
			break
		}
	}
	writeJSON(w, req, http.StatusOK, map[string]string{"from": from, "to": to})
}

// membershipError turns a membership failure into the Status a client
// sees: etcd's meanings with kube's codes.
func membershipError(err error, name string) error {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		return registry.NotLeader("this node no longer leads, please retry")
	case errors.Is(err, cluster.ErrUnknownMember):
		return apierrors.NewNotFound(clusterMembers, name)
	case errors.Is(err, cluster.ErrMemberConflict), errors.Is(err, cluster.ErrUnsafeRemoval), errors.Is(err, cluster.ErrNotCaughtUp), errors.Is(err, cluster.ErrReleaseTooOld):
		return apierrors.NewConflict(clusterMembers, name, err)
	case errors.Is(err, cluster.ErrHealthUnknown):
		return registry.Unavailable(err.Error())
	}
	return apierrors.NewServiceUnavailable(err.Error())
}
