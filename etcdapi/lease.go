package etcdapi

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

type leaseServer struct {
	etcdserverpb.UnimplementedLeaseServer
	s *Server
}

// checkLease refuses a put attached to a lease.
func (s *Server) checkLease(id int64) error {
	return errNotCapable
}
