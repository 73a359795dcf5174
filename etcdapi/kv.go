package etcdapi

import (
	"context"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/apis/coordination/validation"
	"github.com/leasehold/leasehold/fsm"
)

// maxTxnOps is etcd's default --max-txn-ops.
const maxTxnOps = 128

type kvServer struct {
	etcdserverpb.UnimplementedKVServer
	s *Server
}

// Range reads keys: linearizable unless serializable, at the current
// revision or at req.Revision while the history still holds it.
func (k *kvServer) Range(ctx context.Context, req *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	if err := checkRange(req); err != nil {
		return nil, err
	}
	return k.s.rangeKVs(ctx, req)
}

func (s *Server) rangeKVs(ctx context.Context, req *etcdserverpb.RangeRequest) (*etcdserverpb.RangeResponse, error) {
	if !req.Serializable {
		if err := s.node.LinearizableRead(ctx); err != nil {
			return nil, toGRPC(err)
		}
	}
	st := s.node.State()
	sn := st.Snapshot()
	var view fsm.Viewer = sn
	if req.Revision > 0 {
		rev := uint64(req.Revision)
		if rev > max(sn.Revision, 1) {
			return nil, rpctypes.ErrGRPCFutureRev
		}
		if rev < s.compactRevision() {
			return nil, rpctypes.ErrGRPCCompacted
		}
		at, ok := st.SnapshotAt(rev)
		if !ok || at.Generation != sn.Generation {
			return nil, rpctypes.ErrGRPCCompacted
		}
		view = at
	}
	resp, err := s.keys.RangeKVs(view, req)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp.Header = s.header(sn.Revision)
	return resp, nil
}

// rangeStreamChunk is how many keys a RangeStream message carries.
var rangeStreamChunk = 1000

// RangeStream (etcd 3.7, kube-apiserver 1.37) is Range in chunks: keys in
// order over several messages, the header, count and more on the last.
// Answering Unimplemented would make kube-apiserver stop using it for
// every etcd it talks to, for 10 minutes at a time.
func (k *kvServer) RangeStream(req *etcdserverpb.RangeRequest, srv etcdserverpb.KV_RangeStreamServer) error {
	if err := checkRange(req); err != nil {
		return err
	}
	resp, err := k.s.rangeKVs(srv.Context(), req)
	if err != nil {
		return err
	}
	kvs := resp.Kvs
	for len(kvs) > rangeStreamChunk {
		if err := srv.Send(&etcdserverpb.RangeStreamResponse{RangeResponse: &etcdserverpb.RangeResponse{Kvs: kvs[:rangeStreamChunk]}}); err != nil {
			return err
		}
		kvs = kvs[rangeStreamChunk:]
	}
	resp.Kvs = kvs
	return srv.Send(&etcdserverpb.RangeStreamResponse{RangeResponse: resp})
}

// checkRange refuses what leasehold does not read: sorting by anything
// but the key, and revision filters (kube-apiserver uses neither).
func checkRange(req *etcdserverpb.RangeRequest) error {
	if len(req.Key) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if req.SortTarget != etcdserverpb.RangeRequest_KEY && req.SortOrder != etcdserverpb.RangeRequest_NONE {
		return status.Error(codes.InvalidArgument, "etcdserver: leasehold sorts ranges by key only")
	}
	if req.MinModRevision != 0 || req.MaxModRevision != 0 || req.MinCreateRevision != 0 || req.MaxCreateRevision != 0 {
		return status.Error(codes.InvalidArgument, "etcdserver: leasehold does not filter ranges by revision")
	}
	if req.Revision < 0 {
		return status.Error(codes.InvalidArgument, "etcdserver: negative revision")
	}
	return nil
}

func (k *kvServer) Put(ctx context.Context, req *etcdserverpb.PutRequest) (*etcdserverpb.PutResponse, error) {
	resp, err := k.s.txn(ctx, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{{Request: &etcdserverpb.RequestOp_RequestPut{RequestPut: req}}}})
	if err != nil {
		return nil, err
	}
	out := resp.Responses[0].GetResponsePut()
	out.Header = resp.Header
	return out, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, req *etcdserverpb.DeleteRangeRequest) (*etcdserverpb.DeleteRangeResponse, error) {
	resp, err := k.s.txn(ctx, &etcdserverpb.TxnRequest{Success: []*etcdserverpb.RequestOp{{Request: &etcdserverpb.RequestOp_RequestDeleteRange{RequestDeleteRange: req}}}})
	if err != nil {
		return nil, err
	}
	out := resp.Responses[0].GetResponseDeleteRange()
	out.Header = resp.Header
	return out, nil
}

func (k *kvServer) Txn(ctx context.Context, req *etcdserverpb.TxnRequest) (*etcdserverpb.TxnResponse, error) {
	return k.s.txn(ctx, req)
}

// txn checks a transaction as etcd and the REST API would, then has the
// log apply it.
func (s *Server) txn(ctx context.Context, req *etcdserverpb.TxnRequest) (*etcdserverpb.TxnResponse, error) {
	if err := s.checkTxn(req); err != nil {
		return nil, err
	}
	if err := s.writable(); err != nil {
		return nil, err
	}
	data, err := proto.Marshal(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	res, err := s.node.Apply(ctx, &fsm.Command{Type: fsm.CmdTxn, Prefix: s.cfg.Prefix, Txn: data})
	if err != nil {
		return nil, toGRPC(err)
	}
	if res.Err != nil {
		return nil, toGRPC(res.Err)
	}
	resp := &etcdserverpb.TxnResponse{}
	if err := proto.Unmarshal(res.Txn, resp); err != nil {
		return nil, status.Error(codes.Internal, "decode txn response: "+err.Error())
	}
	resp.Header = s.header(uint64(resp.GetHeader().GetRevision()))
	// etcd gives every response in a txn a header of its own, the txn's.
	for _, r := range resp.Responses {
		h := proto.Clone(resp.Header).(*etcdserverpb.ResponseHeader)
		switch r := r.Response.(type) {
		case *etcdserverpb.ResponseOp_ResponseRange:
			r.ResponseRange.Header = h
		case *etcdserverpb.ResponseOp_ResponsePut:
			r.ResponsePut.Header = h
		case *etcdserverpb.ResponseOp_ResponseDeleteRange:
			r.ResponseDeleteRange.Header = h
		}
	}
	return resp, nil
}

// checkTxn refuses a transaction etcd would refuse, one leasehold does not
// apply (sorted or filtered ranges, reads at a revision), and a Lease or
// LeaseCandidate value the REST API would refuse. Whether the writes of
// the branches that run change a key twice is for the log to decide.
func (s *Server) checkTxn(req *etcdserverpb.TxnRequest) error {
	if len(req.Compare) > maxTxnOps || len(req.Success) > maxTxnOps || len(req.Failure) > maxTxnOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	for _, c := range req.Compare {
		if len(c.Key) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, ops := range [][]*etcdserverpb.RequestOp{req.Success, req.Failure} {
		puts := map[string]bool{}
		for _, op := range ops {
			switch r := op.Request.(type) {
			case *etcdserverpb.RequestOp_RequestRange:
				if err := checkRange(r.RequestRange); err != nil {
					return err
				}
				if r.RequestRange.Revision != 0 {
					return status.Error(codes.InvalidArgument, "etcdserver: leasehold reads the current revision in a txn")
				}
			case *etcdserverpb.RequestOp_RequestPut:
				p := r.RequestPut
				if len(p.Key) == 0 {
					return rpctypes.ErrGRPCEmptyKey
				}
				if puts[string(p.Key)] {
					return rpctypes.ErrGRPCDuplicateKey
				}
				puts[string(p.Key)] = true
				if p.IgnoreValue || p.IgnoreLease {
					return status.Error(codes.InvalidArgument, "etcdserver: leasehold does not take ignore_value or ignore_lease")
				}
				if err := s.checkValue(string(p.Key), p.Value, p.Lease); err != nil {
					return err
				}
			case *etcdserverpb.RequestOp_RequestDeleteRange:
				if len(r.RequestDeleteRange.Key) == 0 {
					return rpctypes.ErrGRPCEmptyKey
				}
			case *etcdserverpb.RequestOp_RequestTxn:
				if err := s.checkTxn(r.RequestTxn); err != nil {
					return err
				}
			default:
				return status.Error(codes.InvalidArgument, "etcdserver: empty operation in txn request")
			}
		}
	}
	return nil
}

// checkValue refuses a value for a Lease or LeaseCandidate key that is not
// kube-apiserver's storage encoding of a valid object of that name.
func (s *Server) checkValue(key string, value []byte, lease int64) error {
	k := s.keys.StateKey(key)
	if k.Resource == fsm.RawResource {
		if lease != 0 {
			return s.checkLease(lease)
		}
		return nil
	}
	invalid := func(format string, args ...any) error {
		return status.Errorf(codes.InvalidArgument, "etcdserver: %s: "+format, append([]any{key}, args...)...)
	}
	if lease != 0 {
		return invalid("%s are not attached to leases", k.Resource)
	}
	stored, err := fsm.DecodeEtcdValue(k.Resource, value)
	if err != nil {
		return invalid("%v", err)
	}
	obj := fsm.DefaultTypes()[k.Resource]()
	if err := obj.Unmarshal(stored); err != nil {
		return invalid("decode %s: %v", k.Resource, err)
	}
	if obj.GetNamespace() != k.Namespace || obj.GetName() != k.Name {
		return invalid("the value is the object %s/%s", obj.GetNamespace(), obj.GetName())
	}
	if obj.GetResourceVersion() != "" {
		return invalid("metadata.resourceVersion must not be stored (kube-apiserver clears it)")
	}
	// The object is checked as a REST create would check it; the rules of
	// an update (immutable fields) are kube-apiserver's to enforce before
	// it writes, as they are with etcd.
	var errs field.ErrorList
	switch o := obj.(type) {
	case *coordinationv1.Lease:
		errs = validation.ValidateLease(o)
	default:
		errs = validation.ValidateLeaseCandidate(obj)
	}
	if len(errs) > 0 {
		return invalid("%s %q is invalid: %v", k.Resource, k.Name, errs.ToAggregate())
	}
	return nil
}

// Compact records the compaction kube-apiserver's compactor asks for. It
// removes nothing: the history keeps what the REST API's watches need,
// and reads and watches before rev are refused from now on.
func (k *kvServer) Compact(ctx context.Context, req *etcdserverpb.CompactionRequest) (*etcdserverpb.CompactionResponse, error) {
	if err := k.s.writable(); err != nil {
		return nil, err
	}
	if err := k.s.node.LinearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	rev, _ := k.s.node.State().Revision()
	switch {
	case req.Revision <= 0 || uint64(req.Revision) < k.s.compactRevision():
		return nil, rpctypes.ErrGRPCCompacted
	case uint64(req.Revision) > max(rev, 1):
		return nil, rpctypes.ErrGRPCFutureRev
	}
	if _, compacted := k.s.node.State().Revision(); uint64(req.Revision) <= compacted {
		return nil, rpctypes.ErrGRPCCompacted
	}
	res, err := k.s.node.Apply(ctx, &fsm.Command{Type: fsm.CmdCompact, Revision: uint64(req.Revision)})
	if err == nil && res.Err != nil {
		err = res.Err
	}
	if err != nil {
		return nil, toGRPC(err)
	}
	// The leader applied it; this node must have too before it answers,
	// so that a read or watch through it next sees the compaction.
	if err := k.s.node.LinearizableRead(ctx); err != nil {
		return nil, toGRPC(err)
	}
	rev, _ = k.s.node.State().Revision()
	return &etcdserverpb.CompactionResponse{Header: k.s.header(rev)}, nil
}
