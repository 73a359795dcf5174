package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/transport"
)

// Errors a caller maps to HTTP answers.
var (
	// ErrNotLeader: this node is not the leader; nothing was written.
	ErrNotLeader = errors.New("this node is not the raft leader")
	// ErrNoLeader: no leader is known within the wait; nothing was written.
	ErrNoLeader = errors.New("no raft leader is known")
	// ErrUnknownOutcome: the write may or may not have been committed
	// (leadership lost mid-commit, a forwarded write's connection broke).
	ErrUnknownOutcome = errors.New("the outcome of the write is unknown")
	// ErrTimeout: the node could not confirm a read or write in time.
	ErrTimeout = errors.New("timed out waiting for the cluster")
	// ErrUnsupported: the leader's release does not take the request in
	// this form; nothing was done.
	ErrUnsupported = errors.New("the leader's release does not support this request")
)

// Peer is a cluster member as named on the command line.
type Peer struct {
	Name, Addr string
}

// Config configures a Node.
type Config struct {
	Name    string
	DataDir string
	// InitialCluster is the configuration a node bootstraps with when its
	// data dir holds no Raft state. Every founding member gets the same
	// list. Empty (and no Join) means a cluster of this node alone.
	InitialCluster []Peer
	// Join is set when the node is added to a running cluster instead of
	// bootstrapping; the caller asks a member to add it.
	Join bool
	// APIURL is where the node's API is reached; Version is its release.
	// Both are told to the other members (NodeInfo).
	APIURL  string
	Version string

	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	// HeartbeatTimeout is Raft's heartbeat and election timeout.
	HeartbeatTimeout time.Duration
	// WriteTimeout bounds how long a request waits for a leader.
	WriteTimeout time.Duration
	// DiskStallTimeout bounds a write to raft.db: a leader whose log
	// write takes longer steps down (disk.go).
	DiskStallTimeout time.Duration
	// WrapRaftStore, if set, wraps raft.db's log and stable store below
	// the disk gate; tests make a sick disk with it.
	WrapRaftStore func(RaftStore) RaftStore
	// QuotaBackendBytes (--quota-backend-bytes) is the most stored data
	// a write this node proposes may leave; MaxRequestBytes
	// (--max-request-bytes) the largest object or etcd transaction it
	// proposes. Zero means no limit (quota.go).
	QuotaBackendBytes uint64
	MaxRequestBytes   uint64

	State  state.Config
	Logger hclog.Logger
	// Registerer, if set, receives the node's metrics.
	Registerer prometheus.Registerer
}

// What Config's Raft settings are when left zero.
const (
	// A snapshot writes the whole watch history (100,000 events by
	// default), however few entries came since the last one, so the
	// threshold sets how often each entry pays for it: every 32,768
	// entries is three event encodings per entry where 8,192 was twelve.
	// At 300 writes/s that is a snapshot every two minutes instead of every
	// half minute, each one a stall that watchers see as delivery lag.
	DefaultSnapshotThreshold = 32768
	// How often raft compares the log's length with the threshold. The
	// check is cheap, but the log runs one to two intervals of writes past
	// the threshold before a snapshot truncates it (raft adds up to one
	// interval of jitter), and bbolt's file never shrinks while its mapped
	// pages count in RSS. The threshold alone bounds how many snapshots are
	// taken, so a short interval keeps the log near threshold plus trailing
	// entries at any write rate, where a long one lets a fast writer run
	// the log, and bbolt's file with it, far past the threshold.
	DefaultSnapshotInterval = 2 * time.Second
	DefaultTrailingLogs     = 10240
	DefaultHeartbeatTimeout = time.Second
	DefaultWriteTimeout     = 5 * time.Second
)

func (c *Config) setDefaults() {
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.DiskStallTimeout == 0 {
		c.DiskStallTimeout = DefaultDiskStallTimeout
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Node is one member of the Raft cluster: it owns Raft, its stores, the FSM
// and the peer transport, and answers the questions the API asks of the
// cluster — apply this, is my state current, who leads.
type Node struct {
	cfg    Config
	logger hclog.Logger

	raft     *raft.Raft
	fsm      *fsm.FSM
	fsmTypes fsm.Types
	state    *state.Store
	mux      *transport.Mux
	client   *transport.Client
	etcdURL  atomic.Pointer[string] // see SetEtcdURL
	bolt     *raftboltdb.BoltStore
	stable   *stableStore
	disk     *disk // the gate of every write to raft.db
	trans    *raft.NetworkTransport
	// selfAddr is the transport's address: String of a TCP address
	// allocates, and every forwarded write and read index compares it.
	selfAddr string

	// forward handles writes forwarded to this node; set by the API.
	forward atomic.Pointer[ForwardFunc]

	// termReady is the term in which this node, as leader, has applied its
	// own no-op: from then on its commit index is current (a new leader's
	// may lag until an entry of its own term commits). termSem serialises
	// the no-op.
	termReady atomic.Uint64
	termSem   chan struct{}

	verify      coalescer[struct{}] // the leader's quorum rounds
	readIndexes coalescer[uint64]   // a follower's read-index requests
	// readIndexSeconds times the read index step of linearizable reads.
	readIndexSeconds prometheus.Histogram
	// readIndexesGiven counts, on the leader, the read indexes it gave, by
	// how its leadership was confirmed.
	readIndexesGiven *prometheus.CounterVec
	// forwarded counts the commands this node sent to the leader.
	forwarded *prometheus.CounterVec
	// groups hands this node's writes to Raft, as leader.
	groups groupCommit

	readyMu     sync.Mutex
	ready       bool
	readyReason string
	// startup are the conditions readiness waits for once (startup.go).
	startup startupChecks

	// members is the leader's view of the members (membership.go).
	members members
	// removed is closed once the node learns it is no longer a member.
	removed       chan struct{}
	removedOnce   sync.Once
	removedReason atomic.Pointer[string]

	notifyCh chan bool
	// checkNow starts the member checks at once: a new leader knows nothing
	// of the others until its first round (they show as unreachable).
	checkNow chan struct{}
	stopCh   chan struct{}
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
}

// ForwardFunc answers a request forwarded from a follower. Request and
// answer are the API layer's bytes.
type ForwardFunc func(ctx context.Context, req []byte) []byte

// New opens the node's stores under cfg.DataDir, starts Raft on mux and
// bootstraps from cfg.InitialCluster when there is no Raft state yet.
func New(cfg Config, mux *transport.Mux) (*Node, error) {
	cfg.setDefaults()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	if err := checkNotRemoved(cfg.DataDir); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:      cfg,
		logger:   cfg.Logger,
		state:    state.New(cfg.State),
		mux:      mux,
		client:   transport.NewClient(mux),
		termSem:  make(chan struct{}, 1),
		notifyCh: make(chan bool, 16),
		checkNow: make(chan struct{}, 1),
		stopCh:   make(chan struct{}),
		removed:  make(chan struct{}),

		readIndexSeconds: newReadIndexHistogram(),
		readIndexesGiven: newReadIndexesCounter(),
		forwarded:        newForwardedCounter(),
	}
	n.fsmTypes = fsm.DefaultTypes()
	n.fsm = fsm.New(n.state, n.fsmTypes, cfg.Logger.Named("fsm"))
	n.readyReason = "no leader is known yet"

	// Keep fsync on; keep bbolt's freelist out of every commit (it is
	// rebuilt at open) so truncating old logs does not make writes slower.
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(cfg.DataDir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	n.bolt = bolt
	// Every write to raft.db passes the disk gate (disk.go): under the log
	// cache, whose reads never wait for it, and under the compaction
	// steps, each of which it times alone.
	var store RaftStore = bolt
	if cfg.WrapRaftStore != nil {
		store = cfg.WrapRaftStore(store)
	}
	n.disk = newDisk(cfg.Name, cfg.DataDir, cfg.DiskStallTimeout, cfg.Logger.Named("disk"), n.stopCh)
	n.disk.appendFailed = n.appendFailed
	n.disk.appendStalled = n.appendStalled
	n.stable = &stableStore{StableStore: &diskStable{StableStore: store, d: n.disk}}
	gate := &diskLog{LogStore: store, d: n.disk}
	cache, err := raft.NewLogCache(512, newLogStore(gate))
	if err != nil {
		bolt.Close()
		return nil, err
	}
	logs := &keptErrors{LogCache: cache, gate: gate}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, cfg.Logger.Named("snapshot"))
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  mux.RaftLayer(),
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  mux.RaftLogger(cfg.Logger.Named("raft-net")),
	})
	n.selfAddr = string(n.trans.LocalAddr())

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.Name)
	rc.Logger = cfg.Logger.Named("raft")
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.HeartbeatTimeout
	// The leader steps down after this long without a quorum. Reads never
	// rely on it (they confirm leadership with VerifyLeader), so it only
	// needs to stay below the heartbeat timeout; a short one makes a leader
	// on a CPU-starved machine step down for nothing.
	rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout * 3 / 4
	rc.CommitTimeout = 20 * time.Millisecond
	rc.MaxAppendEntries = 256
	// The apply channel buffers a whole group (see groupCommit), so
	// that the leader loop finds it at once.
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.NotifyCh = n.notifyCh
	rc.NoLegacyTelemetry = true

	has, err := raft.HasExistingState(logs, n.stable, snaps)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("inspect raft state: %w", err)
	}
	// An operator's peers.json forces a new configuration (recover.go).
	if err := n.recoverFromPeersFile(rc, has, logs, snaps); err != nil {
		n.trans.Close()
		bolt.Close()
		return nil, err
	}
	if !has && !cfg.Join {
		var conf raft.Configuration
		peers := cfg.InitialCluster
		if len(peers) == 0 {
			peers = []Peer{{Name: cfg.Name, Addr: string(n.trans.LocalAddr())}}
		}
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.Addr)})
		}
		if err := raft.BootstrapCluster(rc, logs, n.stable, snaps, n.trans, conf); err != nil {
			bolt.Close()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		n.logger.Info("bootstrapped a new cluster", "members", len(conf.Servers))
	}

	r, err := raft.NewRaft(rc, n.fsm, logs, n.stable, snaps, n.trans)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.groups = groupCommit{apply: func(data []byte) raft.ApplyFuture { return r.Apply(data, cfg.WriteTimeout) }, alone: writesAlone}
	n.wg.Add(1)
	go n.watchDisk(store)
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(newCollector(n)); err != nil {
			n.logger.Warn("metrics not registered", "error", err)
		}
	}
	mux.Serve(rpcHandler{n})
	n.wg.Add(3)
	go n.watchLeadership()
	go n.watchReadiness()
	go n.watchMembers()
	return n, nil
}

// Name is the node's name (its Raft server ID).
func (n *Node) Name() string { return n.cfg.Name }

// State is the node's replicated state.
func (n *Node) State() *state.Store { return n.state }

// SetForwardHandler installs the handler for writes forwarded to this node.
func (n *Node) SetForwardHandler(f ForwardFunc) { n.forward.Store(&f) }

// IsLeader reports whether this node believes it is the leader. A leader whose raft loop is held by a stalled log write does not count:
// it has asked another node to take over, and serves neither writes nor
// read indexes meanwhile.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader && !n.disk.stalled() }

// Term is Raft's current term as this node knows it.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// CommitIndex is Raft's commit index as this node knows it.
func (n *Node) CommitIndex() uint64 { return n.raft.CommitIndex() }

// Leader returns the known leader's name and peer address ("" if none).
func (n *Node) Leader() (name, addr string) {
	a, id := n.raft.LeaderWithID()
	return string(id), string(a)
}

// WaitLeader waits until some leader is known.
func (n *Node) WaitLeader(ctx context.Context) (name, addr string, err error) {
	if name, addr = n.Leader(); addr != "" {
		return name, addr, nil // as nearly always: without a ticker
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if name, addr = n.Leader(); addr != "" {
			return name, addr, nil
		}
		select {
		case <-ctx.Done():
			return "", "", ErrNoLeader
		case <-n.stopCh:
			return "", "", ErrNoLeader
		case <-t.C:
		}
	}
}

// Apply commits cmd and returns the FSM's result, within the write
// timeout. The leader commits it itself; any other node sends the encoded
// command to the leader over the peer port and gets back the leader's
// result (waiting to apply the entry itself would wait for the leader's
// next message, up to a heartbeat interval). Commands carry their preconditions (ExpectRV),
// so where the write was decided does not matter. While no node can take
// the command (no leader, leadership moving) it is tried again; nothing
// was written then.
func (n *Node) Apply(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error) {
	cmd, err := n.limit(cmd)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.WriteTimeout)
	defer cancel()
	data := cmd.Encode()
	for {
		var (
			res *fsm.Result
			err error
		)
		if n.IsLeader() {
			res, _, err = n.applyHere(ctx, data)
		} else {
			res, err = n.applyAtLeader(ctx, data)
		}
		if !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrNoLeader) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-n.stopCh:
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// applyHere commits data through this node's Raft, as leader, and returns
// the FSM's result and the entry's index.
func (n *Node) applyHere(ctx context.Context, data []byte) (*fsm.Result, uint64, error) {
	if !n.IsLeader() {
		return nil, 0, ErrNotLeader
	}
	if err := n.disk.refuse(); err != nil {
		return nil, 0, err
	}
	p := n.groups.submit(data)
	if err := n.wait(ctx, p); err != nil {
		switch {
		case errors.Is(err, ErrTimeout):
			return nil, 0, err // withdrawn before it went to Raft
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, 0, ErrNotLeader
		case errors.Is(err, ErrDiskStalled), errors.Is(err, ErrDiskFull):
			// This node's log write failed: raft stepped it down, and the
			// entry is neither stored (an abandoned write is undone) nor
			// sent, so the next leader may take the write.
			return nil, 0, ErrNotLeader
		case errors.Is(err, raft.ErrEnqueueTimeout):
			return nil, 0, ErrTimeout
		case errors.Is(err, ErrUnknownOutcome):
			return nil, 0, err
		default:
			// ErrLeadershipLost, ErrRaftShutdown: it may still commit.
			return nil, 0, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
		}
	}
	res, ok := p.f.Response().(*fsm.Result)
	if !ok {
		return nil, 0, fmt.Errorf("unexpected apply response %T", p.f.Response())
	}
	return res, p.f.Index(), nil
}

// applyAtLeader has the leader commit data and returns its result.
func (n *Node) applyAtLeader(ctx context.Context, data []byte) (*fsm.Result, error) {
	_, addr, err := n.WaitLeader(ctx)
	if err != nil {
		return nil, ErrNoLeader
	}
	if addr == n.selfAddr {
		return nil, ErrNotLeader // this node was just elected: apply here
	}
	idx, result, err := n.client.Apply(ctx, addr, data)
	switch {
	case errors.Is(err, transport.ErrNotLeader):
		n.forwarded.WithLabelValues("not_leader").Inc()
		return nil, ErrNotLeader
	case errors.As(err, new(*transport.NoSpaceError)):
		n.forwarded.WithLabelValues("not_applied").Inc()
		return nil, &spaceError{msg: err.Error()}
	case errors.Is(err, transport.ErrNotApplied):
		n.forwarded.WithLabelValues("not_applied").Inc()
		return nil, ErrTimeout
	case errors.Is(err, transport.ErrUnknownOutcome):
		n.forwarded.WithLabelValues("unknown").Inc()
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case err != nil:
		// The leader could not be reached: nothing was sent.
		n.forwarded.WithLabelValues("unreachable").Inc()
		n.logger.Debug("send command to leader failed", "leader", addr, "error", err)
		return nil, ErrNoLeader
	}
	n.forwarded.WithLabelValues("committed").Inc()
	res, err := n.fsm.DecodeResult(result)
	if err != nil {
		return nil, fmt.Errorf("%w: committed at index %d: %v", ErrUnknownOutcome, idx, err)
	}
	return res, nil
}

// wait waits for p to be applied, and gives up when ctx ends or after the
// write timeout: a request must never hang on a future that a
// shutting-down Raft will not answer. Giving up before p went to Raft
// writes nothing (ErrTimeout); after, leaves the outcome unknown.
func (n *Node) wait(ctx context.Context, p *proposal) error {
	timer := time.NewTimer(n.cfg.WriteTimeout)
	defer timer.Stop()
	var why string
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		why = ctx.Err().Error()
	case <-timer.C:
		why = fmt.Sprintf("not committed within %v", n.cfg.WriteTimeout)
	}
	if n.groups.withdraw(p) {
		return ErrTimeout
	}
	return fmt.Errorf("%w: %s", ErrUnknownOutcome, why)
}

// EnsureCurrent makes sure this node, as leader, has applied an entry of
// its own term, so that its state holds every write acknowledged by an
// earlier leader. Writes call it before reading the state they build on.
func (n *Node) EnsureCurrent(ctx context.Context) error {
	t := n.raft.CurrentTerm()
	if n.termReady.Load() == t {
		return nil
	}
	select {
	case n.termSem <- struct{}{}:
	case <-ctx.Done():
		return ErrTimeout
	}
	defer func() { <-n.termSem }()
	if n.termReady.Load() == t {
		return nil
	}
	if _, _, err := n.applyHere(ctx, (&fsm.Command{Type: fsm.CmdNoop}).Encode()); err != nil {
		if errors.Is(err, ErrUnknownOutcome) {
			return ErrNotLeader
		}
		return err
	}
	if n.raft.CurrentTerm() != t || n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	n.termReady.Store(t)
	return nil
}

// ReadIndex returns an index such that once this node has applied it, its
// state reflects every write acknowledged anywhere before the call. The
// leader computes it (Raft thesis 6.4: its commit index, once an entry of
// its term has committed, confirmed by a quorum round); a follower asks the
// leader over the peer port.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	for {
		if n.IsLeader() {
			idx, err := n.leaderReadIndex(ctx, transport.Asker{})
			if !errors.Is(err, ErrNotLeader) {
				return idx, err
			}
		} else {
			_, addr, err := n.WaitLeader(ctx)
			if err != nil {
				return 0, err
			}
			if addr != n.selfAddr {
				idx, err := n.readIndexes.run(ctx, func() (uint64, error) {
					// The request serves every reader that joined; none of
					// their deadlines is its own. The term is read now,
					// after they arrived: see leaderReadIndex.
					rctx, cancel := context.WithTimeout(context.Background(), n.cfg.WriteTimeout)
					defer cancel()
					return n.client.ReadIndex(rctx, addr, transport.Asker{ID: n.cfg.Name, Term: n.raft.CurrentTerm()})
				})
				if err == nil {
					return idx, nil
				}
				if ctx.Err() != nil {
					return 0, ErrTimeout
				}
				if !errors.Is(err, transport.ErrNotLeader) {
					n.logger.Debug("read index from leader failed", "leader", addr, "error", err)
				}
			}
		}
		// Leadership is moving: try again shortly, within ctx.
		select {
		case <-ctx.Done():
			return 0, ErrTimeout
		case <-n.stopCh:
			return 0, ErrNoLeader
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// leaderReadIndex is the leader's side of ReadIndex, for its own readers
// (from is the zero Asker) or for a follower's.
//
// The commit index is a read index once the leader knows that no other
// leader had been elected when the reads arrived; a quorum acknowledging its
// term after that shows it (Raft thesis 6.4). A follower asking in the
// leader's term is such an acknowledgment: it read its term after its
// reads arrived, and a node's term rises before it grants a vote in a later
// one. When the asker and the leader are a majority of the voters, as in a
// three-node cluster, no further round is needed: a leader of a later term
// needs a majority's votes, so one of the two; the asker had not voted when
// it asked, and the leader has not, being leader of its term still. The
// index, read after the asker's acknowledgment, covers every write
// acknowledged before it, and only committed entries.
func (n *Node) leaderReadIndex(ctx context.Context, from transport.Asker) (uint64, error) {
	t := n.raft.CurrentTerm()
	if err := n.EnsureCurrent(ctx); err != nil {
		return 0, err
	}
	idx := n.raft.CommitIndex()
	if from.Term == t && majorityWith(n.raft.GetConfiguration().Configuration(), raft.ServerID(n.cfg.Name), raft.ServerID(from.ID)) {
		n.readIndexesGiven.WithLabelValues("asker").Inc()
	} else {
		n.readIndexesGiven.WithLabelValues("quorum_round").Inc()
		if _, err := n.verify.run(ctx, n.verifyLeader); err != nil {
			return 0, err
		}
	}
	if !n.IsLeader() || n.raft.CurrentTerm() != t {
		return 0, ErrNotLeader
	}
	return idx, nil
}

// majorityWith reports whether self and asker make a majority of the
// voters of conf (for the leader, its latest configuration: the one Raft's
// own quorum rounds count).
func majorityWith(conf raft.Configuration, self, asker raft.ServerID) bool {
	if asker == "" || asker == self {
		return false
	}
	voters, both := 0, 0
	for _, s := range conf.Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID == asker || s.ID == self {
			both++
		}
	}
	return both == 2 && 2 > voters/2
}

// verifyLeader is one quorum round. VerifyLeader has no timeout of its own:
// without a quorum it resolves when the leader lease check makes the leader
// step down (LeaderLeaseTimeout).
func (n *Node) verifyLeader() (struct{}, error) {
	err := n.raft.VerifyLeader().Error()
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		err = ErrNotLeader
	}
	return struct{}{}, err
}

// LinearizableRead returns once this node's state reflects every write
// acknowledged before the call.
func (n *Node) LinearizableRead(ctx context.Context) error {
	start := time.Now()
	idx, err := n.ReadIndex(ctx)
	if err != nil {
		return err
	}
	n.readIndexSeconds.Observe(time.Since(start).Seconds())
	if err := n.state.WaitApplied(ctx, idx); err != nil {
		return ErrTimeout
	}
	return nil
}

// Forward sends a request to the leader's ForwardFunc and returns its
// answer. ErrUnsupported means the leader's release takes no forwarded
// requests in this form (a rolling upgrade is under way).
func (n *Node) Forward(ctx context.Context, req []byte) ([]byte, error) {
	_, addr, err := n.WaitLeader(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := n.client.Forward(ctx, addr, req)
	switch {
	case errors.Is(err, transport.ErrUnknownOutcome):
		return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case errors.Is(err, transport.ErrUnsupported):
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNoLeader, err)
	}
	return resp, nil
}

// rpcHandler answers the peer RPCs.
type rpcHandler struct{ n *Node }

var _ transport.Handler = rpcHandler{}

func (h rpcHandler) Forward(ctx context.Context, req []byte) []byte {
	f := h.n.forward.Load()
	if f == nil {
		return nil // the follower takes no answer for "not leading yet"
	}
	return (*f)(ctx, req)
}

// Apply is answered by the leader only, and the command is not sent on.
func (h rpcHandler) NodeInfo(context.Context) *transport.NodeInfo { return h.n.NodeInfo() }

func (h rpcHandler) Apply(ctx context.Context, data []byte) (uint64, []byte, error) {
	res, idx, err := h.n.applyHere(ctx, data)
	switch {
	case errors.Is(err, ErrNotLeader):
		return 0, nil, transport.ErrNotLeader
	case errors.Is(err, ErrTimeout):
		return 0, nil, transport.ErrNotApplied
	case errors.Is(err, ErrDiskFull):
		return 0, nil, &transport.NoSpaceError{Message: err.Error()}
	case err != nil:
		return 0, nil, err
	}
	result, err := fsm.EncodeResult(res)
	if err != nil {
		return 0, nil, fmt.Errorf("committed at index %d: %w", idx, err)
	}
	return idx, result, nil
}

// ReadIndex is answered by the leader only; a follower never asks another
// follower on a caller's behalf.
func (h rpcHandler) ReadIndex(ctx context.Context, from transport.Asker) (uint64, error) {
	if !h.n.IsLeader() {
		return 0, transport.ErrNotLeader
	}
	idx, err := h.n.leaderReadIndex(ctx, from)
	if errors.Is(err, ErrNotLeader) {
		return 0, transport.ErrNotLeader
	}
	return idx, err
}

// watchLeadership follows NotifyCh, which Raft writes in order and blocks
// on, so it must always be drained. On gaining leadership it commits the
// term's no-op at once, so the first reads and writes do not wait for it.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stopCh:
			return
		case leader := <-n.notifyCh:
			if leader {
				n.logger.Info("became leader", "term", n.raft.CurrentTerm())
				select {
				case n.checkNow <- struct{}{}:
				default: // one is due already
				}
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), n.cfg.WriteTimeout)
					defer cancel()
					if err := n.EnsureCurrent(ctx); err != nil {
						n.logger.Warn("could not commit the term's first entry", "error", err)
					}
				}()
			} else {
				n.logger.Info("lost leadership")
			}
		}
	}
}

// Ready reports whether the node serves requests: its disk takes writes,
// it knows a leader and has applied everything that leader had committed
// when this node learned of it, and every startup check (AddStartupCheck)
// has passed. It runs on every resourceVersion=0 read: a ready node
// answers without allocating.
func (n *Node) Ready() (bool, string) {
	if ok, why := n.disk.health(); !ok {
		return false, why
	}
	n.readyMu.Lock()
	ready, why := n.ready, n.readyReason
	n.readyMu.Unlock()
	if !ready {
		return false, why
	}
	if why, pending := n.startup.pending(); pending {
		return false, why
	}
	return true, why
}

// ReadyCheck is one condition of the node's readiness, as /readyz?verbose
// lists them.
type ReadyCheck struct {
	Name string
	Why  string // why it fails; "" when it passes
}

// ReadyChecks lists the conditions Ready sums up, in the order Ready
// checks them: the data directory's disk takes writes ("disk"), the node
// knows a leader and has applied what that leader had committed
// ("leader"), then the startup checks by the names they were added with.
func (n *Node) ReadyChecks() []ReadyCheck {
	_, disk := n.disk.health()
	n.readyMu.Lock()
	ready, why := n.ready, n.readyReason
	n.readyMu.Unlock()
	if ready {
		why = ""
	}
	checks := []ReadyCheck{{Name: "disk", Why: disk}, {Name: "leader", Why: why}}
	for _, c := range n.startup.all() {
		rc := ReadyCheck{Name: c.name}
		if !c.passed.Load() {
			rc.Why = *c.why.Load()
		}
		checks = append(checks, rc)
	}
	return checks
}

func (n *Node) setReady(ok bool, reason string) {
	n.readyMu.Lock()
	if n.ready != ok {
		n.logger.Info("readiness changed", "ready", ok, "reason", reason)
	}
	n.ready, n.readyReason = ok, reason
	n.readyMu.Unlock()
}

// watchReadiness re-establishes readiness whenever the leader changes, and
// asks the startup checks that have not passed yet.
func (n *Node) watchReadiness() {
	defer n.wg.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var readyFor string
	for {
		select {
		case <-n.stopCh:
			return
		case <-t.C:
		}
		n.startup.run(n.logger)
		name, addr := n.Leader()
		if addr == "" {
			readyFor = ""
			n.setReady(false, "no leader is known")
			continue
		}
		if name == readyFor {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := n.LinearizableRead(ctx)
		cancel()
		if err != nil {
			n.setReady(false, fmt.Sprintf("catching up with leader %s: %v", name, err))
			continue
		}
		readyFor = name
		n.setReady(true, "ok")
	}
}

// Close leaves the cluster gracefully: it hands leadership over if it has
// it, then stops Raft and the transport.
func (n *Node) Close() error { return n.shutdown(true) }

// Crash stops the node the way a crash looks to its peers: no leadership
// transfer, the others notice only by missing heartbeats. Tests use it.
func (n *Node) Crash() error { return n.shutdown(false) }

func (n *Node) shutdown(transfer bool) error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	if transfer && n.raft.State() == raft.Leader && len(n.raft.GetConfiguration().Configuration().Servers) > 1 {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.logger.Warn("leadership transfer failed", "error", err)
		}
	}
	close(n.stopCh)
	err := n.raft.Shutdown().Error()
	n.wg.Wait()
	n.client.Close()
	n.trans.Close()
	n.mux.Close()
	n.stable.close()
	if cerr := n.bolt.Close(); err == nil {
		err = cerr
	}
	return err
}
