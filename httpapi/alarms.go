package httpapi

import (
	"errors"
	"net/http"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/registry"
)

// Alarm endpoints, for the storage quota's NOSPACE alarm (etcd's alarm
// list and disarm): non-resource URLs, which RBAC grants to
// cluster-admin.
//
//	GET  /cluster/alarms          the alarms in this node's applied state
//	POST /cluster/alarms/disarm   clear NOSPACE through the log; the answer
//	                              lists the alarms it cleared

// AlarmList is the answer of both alarm endpoints.
type AlarmList struct {
	Alarms []cluster.Alarm `json:"alarms"`
}

func (s *Server) routeAlarms(r *mux.Router) {
	r.HandleFunc("/cluster/alarms", s.alarmList).Methods(http.MethodGet)
	r.HandleFunc("/cluster/alarms/disarm", s.alarmDisarm).Methods(http.MethodPost)
}

// alarmList serves this node's state, as etcd's member does: no read
// index, so it answers without a leader.
func (s *Server) alarmList(w http.ResponseWriter, req *http.Request) {
	writeJSON(w, req, http.StatusOK, AlarmList{Alarms: s.node.Alarms()})
}

// alarmDisarm clears the NOSPACE alarm. It answers with the alarms this
// node held before (none when it was off: nothing is written then).
func (s *Server) alarmDisarm(w http.ResponseWriter, req *http.Request) {
	if err := s.node.LinearizableRead(req.Context()); err != nil {
		s.writeError(w, req, registry.ClusterError(err))
		return
	}
	before := s.node.Alarms()
	if len(before) > 0 {
		if err := s.node.SetNoSpace(req.Context(), false); err != nil {
			if errors.Is(err, cluster.ErrUnsupported) {
				s.writeError(w, req, apierrors.NewBadRequest(err.Error()))
				return
			}
			s.writeError(w, req, registry.ClusterError(err))
			return
		}
	}
	writeJSON(w, req, http.StatusOK, AlarmList{Alarms: before})
}
