// Package etcdapi serves the etcd v3 gRPC API that kube-apiserver uses for
// the objects it keeps in etcd (KV, Watch, Lease, Maintenance Status,
// Cluster MemberList), over the node's replicated state, so that
// kube-apiserver started with
// --etcd-servers-overrides=coordination.k8s.io/leases#<leasehold nodes>
// keeps its Leases here while the REST API serves the same objects.
//
// Keys PREFIX/leases/<ns>/<name> and PREFIX/leasecandidates/<ns>/<name>
// are the REST API's objects (fsm.EtcdKeys); a revision is a Raft index,
// the same number as a resourceVersion. Reads are linearizable (the REST
// API's read index) unless serializable is asked for; every write is one
// fsm.CmdTxn through the log, forwarded to the leader by the node that
// received it, after it has validated it as the REST API would.
package etcdapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm"
)

// EmulatedVersion is the etcd release the Maintenance Status reports.
// kube-apiserver asks every endpoint for it and turns off
// RequestWatchProgress, for every resource of the process, below 3.4.31
// or in [3.5.0, 3.5.13) (its feature support checker); the watch progress
// this package answers is 3.6's.
const EmulatedVersion = "3.6.16"

// Config is what a Server serves.
type Config struct {
	// Node is this node of the cluster.
	Node *cluster.Node
	// Prefix is kube-apiserver's --etcd-prefix ("/registry").
	Prefix string
	// ProgressNotifyInterval is how often a watch that asked for progress
	// notifications gets one while it has no events (etcd: 10 minutes;
	// kube turns them into bookmarks). Zero means DefaultProgressNotify.
	ProgressNotifyInterval time.Duration
	// MaxRequestBytes is --max-request-bytes: gRPC takes messages up to
	// it plus etcd's allowance for gRPC's overhead; the node refuses a
	// transaction larger than it (cluster.ErrRequestTooLarge). Zero means
	// etcd's default.
	MaxRequestBytes int
	Logger          hclog.Logger
}

// DefaultProgressNotify is the default Config.ProgressNotifyInterval.
const DefaultProgressNotify = 5 * time.Second

// Server implements the etcd services over a node.
type Server struct {
	cfg  Config
	node *cluster.Node
	keys fsm.EtcdKeys
	log  hclog.Logger
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	if cfg.ProgressNotifyInterval == 0 {
		cfg.ProgressNotifyInterval = DefaultProgressNotify
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &Server{cfg: cfg, node: cfg.Node, keys: fsm.EtcdKeys{Prefix: cfg.Prefix}, log: cfg.Logger}
}

// DefaultMaxRequestBytes is etcd's --max-request-bytes, and
// grpcOverheadBytes what etcd lets a gRPC message carry beyond it.
const (
	DefaultMaxRequestBytes = 3 << 20 / 2
	grpcOverheadBytes      = 512 << 10
)

// GRPCServer returns a gRPC server with every service registered.
func (s *Server) GRPCServer(opts ...grpc.ServerOption) *grpc.Server {
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes + grpcOverheadBytes),
		// kube-apiserver's client pings every 30 s without streams; the
		// default policy (5 minutes) would answer too_many_pings. etcd
		// allows 5 s.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
	}, opts...)
	g := grpc.NewServer(opts...)
	etcdserverpb.RegisterKVServer(g, &kvServer{s: s})
	etcdserverpb.RegisterWatchServer(g, &watchServer{s: s})
	etcdserverpb.RegisterMaintenanceServer(g, &maintenanceServer{s: s})
	etcdserverpb.RegisterClusterServer(g, &clusterServer{s: s})
	etcdserverpb.RegisterLeaseServer(g, &leaseServer{s: s})
	return g
}

// memberID is a member's etcd id: a hash of its name.
func memberID(name string) uint64 { return cluster.MemberID(name) }

// header is a response header at revision rev (at least 1: kube-apiserver
// takes 0 for an error).
func (s *Server) header(rev uint64) *etcdserverpb.ResponseHeader {
	return &etcdserverpb.ResponseHeader{
		ClusterId: memberID("leasehold"),
		MemberId:  memberID(s.node.Name()),
		Revision:  int64(max(rev, 1)),
		RaftTerm:  s.node.Term(),
	}
}

// revision is the store's current revision.
func (s *Server) revision() uint64 {
	rev, _ := s.node.State().Revision()
	return rev
}

// compactRevision is the oldest revision reads and watches may ask for:
// the etcd API's compaction, or the oldest the watch history still holds
// every later event of, whichever is newer.
func (s *Server) compactRevision() uint64 {
	st := s.node.State()
	_, compacted := st.Revision()
	if dropped := st.DroppedRV(); dropped > 0 {
		compacted = max(compacted, dropped+1)
	}
	return compacted
}

// errNotCapable is the answer to a write below feature level 2.
var errNotCapable = status.Error(codes.FailedPrecondition, "etcdserver: not capable: the cluster's feature level is below 2, the first at which every member applies the etcd API's writes; upgrade every member")

// writable refuses writes until the cluster's feature level has the etcd
// API's commands.
func (s *Server) writable() error {
	if s.node.FeatureLevel() < 2 {
		return errNotCapable
	}
	return nil
}

// fsmErrors are the FSM's refusals that are etcd's own errors.
var fsmErrors = map[string]error{
	rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseNotFound): rpctypes.ErrGRPCLeaseNotFound,
	rpctypes.ErrorDesc(rpctypes.ErrGRPCLeaseExist):    rpctypes.ErrGRPCLeaseExist,
	rpctypes.ErrorDesc(rpctypes.ErrGRPCDuplicateKey):  rpctypes.ErrGRPCDuplicateKey,
}

// toGRPC turns a cluster or FSM error into etcd's.
func toGRPC(err error) error {
	var ee *fsm.EtcdError
	switch {
	case err == nil:
		return nil
	case status.Code(err) != codes.Unknown:
		return err
	case errors.As(err, &ee):
		if known, ok := fsmErrors[ee.Message]; ok {
			return known
		}
		return status.Error(codes.InvalidArgument, ee.Message)
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrNoLeader):
		return rpctypes.ErrGRPCNoLeader
	case errors.Is(err, cluster.ErrUnknownOutcome):
		return rpctypes.ErrGRPCTimeoutDueToLeaderFail
	case errors.Is(err, cluster.ErrDiskFull), errors.As(err, new(*fsm.NoSpaceError)):
		return rpctypes.ErrGRPCNoSpace
	case errors.Is(err, cluster.ErrRequestTooLarge):
		return rpctypes.ErrGRPCRequestTooLarge
	case errors.Is(err, cluster.ErrUnsupported):
		return status.Error(codes.FailedPrecondition, "etcdserver: not capable: "+err.Error())
	case errors.Is(err, cluster.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return rpctypes.ErrGRPCTimeout
	case errors.Is(err, context.Canceled):
		return rpctypes.ErrGRPCCanceled
	}
	return status.Error(codes.Internal, err.Error())
}

type maintenanceServer struct {
	etcdserverpb.UnimplementedMaintenanceServer
	s *Server
}

func (m *maintenanceServer) Status(ctx context.Context, _ *etcdserverpb.StatusRequest) (*etcdserverpb.StatusResponse, error) {
	st := m.s.node.Status()
	resp := &etcdserverpb.StatusResponse{
		Header:           m.s.header(m.s.revision()),
		Version:          EmulatedVersion,
		DbSize:           st.DBSize,
		DbSizeInUse:      st.StoredBytes, // what the quota bounds
		RaftIndex:        st.CommitIndex,
		RaftTerm:         st.Term,
		RaftAppliedIndex: st.AppliedIndex,
		StorageVersion:   "3.6.0",
	}
	if st.Leader != nil {
		resp.Leader = memberID(st.Leader.Name)
	}
	for _, mb := range st.Members {
		if mb.Name == st.Name {
			resp.IsLearner = mb.Suffrage != "voter"
		}
	}
	return resp, nil
}

// Alarm is etcd's: GET lists the alarms (NOSPACE, listed for every
// member: it is the cluster's), ACTIVATE raises NOSPACE, DEACTIVATE
// clears it; each answers with the alarms it concerns, filtered by member
// and type as etcd does (0 and NONE match all). The alarm is replicated
// through the log; a GET reads this node's state.
func (m *maintenanceServer) Alarm(ctx context.Context, req *etcdserverpb.AlarmRequest) (*etcdserverpb.AlarmResponse, error) {
	match := func() []*etcdserverpb.AlarmMember {
		var out []*etcdserverpb.AlarmMember
		for _, a := range m.s.node.Alarms() {
			if (req.MemberID == 0 || req.MemberID == a.MemberID) && (req.Alarm == etcdserverpb.AlarmType_NONE || req.Alarm == etcdserverpb.AlarmType_NOSPACE) {
				out = append(out, &etcdserverpb.AlarmMember{MemberID: a.MemberID, Alarm: etcdserverpb.AlarmType_NOSPACE})
			}
		}
		return out
	}
	resp := &etcdserverpb.AlarmResponse{}
	switch req.Action {
	case etcdserverpb.AlarmRequest_GET:
		resp.Alarms = match()
	case etcdserverpb.AlarmRequest_ACTIVATE:
		if req.Alarm != etcdserverpb.AlarmType_NOSPACE {
			return nil, status.Errorf(codes.InvalidArgument, "etcdserver: leasehold raises no %v alarm", req.Alarm)
		}
		if err := m.s.node.SetNoSpace(ctx, true); err != nil {
			return nil, toGRPC(err)
		}
		resp.Alarms = match()
	case etcdserverpb.AlarmRequest_DEACTIVATE:
		before := match()
		if len(before) > 0 {
			if err := m.s.node.SetNoSpace(ctx, false); err != nil {
				return nil, toGRPC(err)
			}
		}
		resp.Alarms = before
	default:
		return nil, status.Errorf(codes.InvalidArgument, "etcdserver: unknown alarm action %v", req.Action)
	}
	resp.Header = m.s.header(m.s.revision())
	return resp, nil
}

type clusterServer struct {
	etcdserverpb.UnimplementedClusterServer
	s *Server
}

// MemberList lists the Raft members, each with the etcd URL it serves
// (asked of each member; none for one that does not answer in time).
func (c *clusterServer) MemberList(ctx context.Context, _ *etcdserverpb.MemberListRequest) (*etcdserverpb.MemberListResponse, error) {
	st := c.s.node.Status()
	resp := &etcdserverpb.MemberListResponse{Header: c.s.header(c.s.revision())}
	urls := make([]string, len(st.Members))
	var wg sync.WaitGroup
	for i, mb := range st.Members {
		if mb.Name == st.Name {
			urls[i] = c.s.node.EtcdURL()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if info, err := c.s.node.AskNodeInfo(actx, mb.PeerAddr); err == nil {
				urls[i] = info.EtcdURL
			}
		}()
	}
	wg.Wait()
	for i, mb := range st.Members {
		m := &etcdserverpb.Member{
			ID:        memberID(mb.Name),
			Name:      mb.Name,
			PeerURLs:  []string{"http://" + mb.PeerAddr},
			IsLearner: mb.Suffrage != "voter",
		}
		if urls[i] != "" {
			m.ClientURLs = []string{urls[i]}
		}
		resp.Members = append(resp.Members, m)
	}
	return resp, nil
}
