package etcdapi

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// etcd's leases. A lease is an object of the state (fsm.LeaseResource),
// granted, renewed and revoked through the log; its deadline is the
// leader's append time of the last grant or keep-alive plus its TTL. The
// leader revokes expired ones: first every key attached, one write each,
// then the lease. A new leader counts a lease's TTL from when it took
// over at the earliest, as etcd does, so that a lease kept alive through
// the old leader does not expire for the election.

// maxLeaseTTL is etcd's MaxLeaseTTL.
const maxLeaseTTL = 9000000000

// expiryInterval is how often the leader looks for expired leases.
const expiryInterval = 250 * time.Millisecond

type leaseServer struct {
	etcdserverpb.UnimplementedLeaseServer
	s *Server
}

// checkLease: whether lease id exists is for the log to decide (a put
// names it, the FSM refuses it if it is gone).
func (s *Server) checkLease(id int64) error {
	if id < 0 {
		return rpctypes.ErrGRPCLeaseNotFound
	}
	return nil
}

func (l *leaseServer) LeaseGrant(ctx context.Context, req *etcdserverpb.LeaseGrantRequest) (*etcdserverpb.LeaseGrantResponse, error) {
	if err := l.s.writable(); err != nil {
		return nil, err
	}
	if req.TTL > maxLeaseTTL {
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	}
	id := req.ID
	if id < 0 {
		return nil, status.Error(codes.InvalidArgument, "etcdserver: negative lease id")
	}
	if id == 0 {
		var b [8]byte
		if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		id = int64(binary.BigEndian.Uint64(b[:]) >> 1)
		if id == 0 {
			id = 1
		}
	}
	ttl := max(req.TTL, 1)
	res, err := l.s.node.Apply(ctx, &fsm.Command{Type: fsm.CmdLeaseGrant, LeaseID: uint64(id), TTL: uint64(ttl)})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return nil, toGRPC(err)
	}
	return &etcdserverpb.LeaseGrantResponse{Header: l.s.header(l.s.revision()), ID: id, TTL: ttl}, nil
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, req *etcdserverpb.LeaseRevokeRequest) (*etcdserverpb.LeaseRevokeResponse, error) {
	if err := l.s.writable(); err != nil {
		return nil, err
	}
	if err := l.s.revoke(ctx, req.ID); err != nil {
		return nil, err
	}
	return &etcdserverpb.LeaseRevokeResponse{Header: l.s.header(l.s.revision())}, nil
}

// revoke deletes every key attached to lease id, then the lease.
func (s *Server) revoke(ctx context.Context, id int64) error {
	for attempt := 0; ; attempt++ {
		if err := s.node.LinearizableRead(ctx); err != nil {
			return toGRPC(err)
		}
		sn := s.node.State().Snapshot()
		if sn.Get(state.Key{Resource: fsm.LeaseResource, Name: fsm.LeaseName(id)}) == nil {
			return rpctypes.ErrGRPCLeaseNotFound
		}
		for o := range fsm.LeaseKeys(sn, id) {
			key := o.Obj.(*fsm.RawValue).Name
			// Only while it is still this version: a key written again
			// meanwhile may have left the lease.
			_, err := s.txn(ctx, &etcdserverpb.TxnRequest{
				Compare: []*etcdserverpb.Compare{{Key: []byte(key), Target: etcdserverpb.Compare_MOD, Result: etcdserverpb.Compare_EQUAL,
					TargetUnion: &etcdserverpb.Compare_ModRevision{ModRevision: int64(o.RV)}}},
				Success: []*etcdserverpb.RequestOp{{Request: &etcdserverpb.RequestOp_RequestDeleteRange{RequestDeleteRange: &etcdserverpb.DeleteRangeRequest{Key: []byte(key)}}}},
			})
			if err != nil {
				return err
			}
		}
		res, err := s.node.Apply(ctx, &fsm.Command{Type: fsm.CmdLeaseRevoke, LeaseID: uint64(id)})
		if err == nil && res.Err != nil {
			err = res.Err
		}
		var ee *fsm.EtcdError
		if errors.As(err, &ee) && ee.Message == fsm.LeaseHasKeys && attempt < 10 {
			continue // a key was attached meanwhile
		}
		return toGRPC(err)
	}
}

func (l *leaseServer) LeaseKeepAlive(srv etcdserverpb.Lease_LeaseKeepAliveServer) error {
	for {
		req, err := srv.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := l.s.writable(); err != nil {
			return err
		}
		resp := &etcdserverpb.LeaseKeepAliveResponse{ID: req.ID}
		res, err := l.s.node.Apply(srv.Context(), &fsm.Command{Type: fsm.CmdLeaseKeepAlive, LeaseID: uint64(req.ID)})
		switch {
		case err != nil:
			return toGRPC(err)
		case res.Err != nil:
			// etcd answers a lease it does not know with TTL 0.
		case res.Object != nil:
			lease, err := fsm.LeaseOf(res.Object)
			if err != nil {
				return status.Error(codes.Internal, err.Error())
			}
			resp.TTL = lease.TTL
		}
		resp.Header = l.s.header(l.s.revision())
		if err := srv.Send(resp); err != nil {
			return err
		}
	}
}

func (l *leaseServer) LeaseTimeToLive(ctx context.Context, req *etcdserverpb.LeaseTimeToLiveRequest) (*etcdserverpb.LeaseTimeToLiveResponse, error) {
	if err := l.s.node.LinearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	sn := l.s.node.State().Snapshot()
	resp := &etcdserverpb.LeaseTimeToLiveResponse{Header: l.s.header(sn.Revision), ID: req.ID, TTL: -1}
	o := sn.Get(state.Key{Resource: fsm.LeaseResource, Name: fsm.LeaseName(req.ID)})
	if o == nil {
		return resp, nil
	}
	lease, err := fsm.LeaseOf(o)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp.GrantedTTL = lease.TTL
	resp.TTL = max(0, (lease.Deadline-time.Now().UnixNano()+999_999_999)/1e9)
	if req.Keys {
		for k := range fsm.LeaseKeys(sn, req.ID) {
			resp.Keys = append(resp.Keys, []byte(k.Obj.(*fsm.RawValue).Name))
		}
	}
	return resp, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, _ *etcdserverpb.LeaseLeasesRequest) (*etcdserverpb.LeaseLeasesResponse, error) {
	if err := l.s.node.LinearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	sn := l.s.node.State().Snapshot()
	resp := &etcdserverpb.LeaseLeasesResponse{Header: l.s.header(sn.Revision)}
	sn.List(fsm.LeaseResource, "", nil, func(o *state.Object) bool {
		if lease, err := fsm.LeaseOf(o); err == nil {
			resp.Leases = append(resp.Leases, &etcdserverpb.LeaseStatus{ID: lease.ID})
		}
		return true
	})
	return resp, nil
}

// Run revokes expired leases while this node leads, until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(expiryInterval)
	defer t.Stop()
	var ledSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.node.IsLeader() {
			ledSince = time.Time{}
			continue
		}
		if ledSince.IsZero() {
			ledSince = time.Now()
		}
		now := time.Now()
		var expired []int64
		s.node.State().Snapshot().List(fsm.LeaseResource, "", nil, func(o *state.Object) bool {
			lease, err := fsm.LeaseOf(o)
			if err != nil {
				return true
			}
			deadline := time.Unix(0, lease.Deadline)
			if since := ledSince.Add(time.Duration(lease.TTL) * time.Second); since.After(deadline) {
				deadline = since
			}
			if now.After(deadline) {
				expired = append(expired, lease.ID)
			}
			return true
		})
		for _, id := range expired {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := s.revoke(rctx, id); err != nil && !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
				s.log.Warn("could not revoke an expired lease", "id", id, "error", err)
			}
			cancel()
		}
	}
}
