package etcdapi

import (
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/metadata"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

type watchServer struct {
	etcdserverpb.UnimplementedWatchServer
	s *Server
}

// noLeaderCancel is how long a stream that requires a leader (gRPC
// metadata hasleader, as kube-apiserver's) goes on without one: etcd
// cancels after three election timeouts without a leader.
const noLeaderCancel = 3 * time.Second

// maxEventsPerResponse bounds the events of one response, so that a
// watcher far behind gets its events in several messages (etcd fragments
// likewise), and never one event per message.
const maxEventsPerResponse = 1000

// watch is one watch of a stream.
type watch struct {
	id       int64
	key, end string // end: "" one key, "\x00" every key from key on
	prevKV   bool
	noPut    bool
	noDelete bool
	progress bool // periodic progress notifications
	// next is the first revision not yet looked at; gen the store's
	// generation it belongs to.
	next     uint64
	gen      uint64
	lastSent time.Time
	// created: the created response went out; events may follow.
	created bool
}

func (w *watch) in(key string) bool { return fsm.InRange(key, w.key, w.end) }

// stream is one Watch stream: the receiving goroutine records requests,
// the sending one (Watch itself) does everything else, in order.
type stream struct {
	s   *Server
	srv etcdserverpb.Watch_WatchServer

	mu      sync.Mutex
	watches map[int64]*watch
	order   []int64 // ids in creation order
	nextID  int64
	// out are control responses (created, canceled) in the order the
	// requests came; progressAsked is set by a progress request.
	out           []*etcdserverpb.WatchResponse
	progressAsked bool
	poke          chan struct{}
	// values caches encoded values by version, for the sending goroutine.
	values map[*state.Object][]byte
}

func (st *stream) wake() {
	select {
	case st.poke <- struct{}{}:
	default:
	}
}

// Watch serves one stream. Events come from the history the REST API's
// watches read, in revision order; a progress request is answered once
// every watch of the stream has been sent every event up to the
// revision it reports.
func (ws *watchServer) Watch(srv etcdserverpb.Watch_WatchServer) error {
	s := ws.s
	st := &stream{s: s, srv: srv, watches: map[int64]*watch{}, poke: make(chan struct{}, 1), values: map[*state.Object][]byte{}}
	requireLeader := false
	if md, ok := metadata.FromIncomingContext(srv.Context()); ok {
		for _, v := range md.Get(rpctypes.MetadataRequireLeaderKey) {
			requireLeader = requireLeader || v == rpctypes.MetadataHasLeader
		}
	}
	recvErr := make(chan error, 1)
	go func() { recvErr <- st.receive() }()

	store := s.node.State()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var buf []state.Event
	var leaderless time.Time
	for {
		if requireLeader {
			// As etcd: a stream that requires a leader ends once none has
			// been known for a while, not at every election.
			if _, addr := s.node.Leader(); addr != "" {
				leaderless = time.Time{}
			} else if leaderless.IsZero() {
				leaderless = time.Now()
			} else if time.Since(leaderless) >= noLeaderCancel {
				return rpctypes.ErrGRPCNoLeader
			}
		}
		changed := store.Changed()
		var err error
		if buf, err = st.pass(buf); err != nil {
			return err
		}
		select {
		case err := <-recvErr:
			return err
		case <-srv.Context().Done():
			return srv.Context().Err()
		case <-changed:
		case <-st.poke:
		case <-tick.C:
		}
	}
}

// receive records the stream's requests until it ends.
func (st *stream) receive() error {
	for {
		req, err := st.srv.Recv()
		if err != nil {
			return err
		}
		st.mu.Lock()
		switch r := req.RequestUnion.(type) {
		case *etcdserverpb.WatchRequest_CreateRequest:
			st.create(r.CreateRequest)
		case *etcdserverpb.WatchRequest_CancelRequest:
			id := r.CancelRequest.WatchId
			if _, ok := st.watches[id]; ok {
				st.remove(id)
				st.out = append(st.out, &etcdserverpb.WatchResponse{WatchId: id, Canceled: true})
			}
		case *etcdserverpb.WatchRequest_ProgressRequest:
			st.progressAsked = true
		}
		st.mu.Unlock()
		st.wake()
	}
}

// create registers a watch. Called with st.mu held.
func (st *stream) create(req *etcdserverpb.WatchCreateRequest) {
	id := req.WatchId
	if id == 0 {
		for st.watches[st.nextID] != nil {
			st.nextID++
		}
		id = st.nextID
		st.nextID++
	} else if st.watches[id] != nil {
		st.out = append(st.out, &etcdserverpb.WatchResponse{WatchId: id, Created: true, Canceled: true, CancelReason: "etcdserver: duplicate watch id"})
		return
	}
	w := &watch{id: id, key: string(req.Key), end: string(req.RangeEnd), prevKV: req.PrevKv, progress: req.ProgressNotify, lastSent: time.Now()}
	for _, f := range req.Filters {
		switch f {
		case etcdserverpb.WatchCreateRequest_NOPUT:
			w.noPut = true
		case etcdserverpb.WatchCreateRequest_NODELETE:
			w.noDelete = true
		}
	}
	store := st.s.node.State()
	sn := store.Snapshot()
	w.gen = sn.Generation
	if req.StartRevision > 0 {
		w.next = uint64(req.StartRevision)
	} else {
		w.next = sn.Index + 1
	}
	st.watches[id] = w
	st.order = append(st.order, id)
}

// remove drops a watch. Called with st.mu held.
func (st *stream) remove(id int64) {
	delete(st.watches, id)
	for i, o := range st.order {
		if o == id {
			st.order = append(st.order[:i], st.order[i+1:]...)
			break
		}
	}
}

// pass sends what is due: control responses, then every watch's events
// up to the applied index read at its start, then a progress
// notification if one was asked for, then periodic ones.
func (st *stream) pass(buf []state.Event) ([]state.Event, error) {
	s := st.s
	store := s.node.State()
	sn := store.Snapshot()
	rev := sn.Revision
	compact := s.compactRevision()

	st.mu.Lock()
	out := st.out
	st.out = nil
	progressAsked := st.progressAsked
	st.progressAsked = false
	var ws []*watch
	for _, id := range st.order {
		ws = append(ws, st.watches[id])
	}
	st.mu.Unlock()

	for _, r := range out {
		r.Header = s.header(rev)
		if err := st.srv.Send(r); err != nil {
			return buf, err
		}
	}
	for _, w := range ws {
		if !w.created {
			w.created = true
			if err := st.srv.Send(&etcdserverpb.WatchResponse{Header: s.header(rev), WatchId: w.id, Created: true}); err != nil {
				return buf, err
			}
		}
		var err error
		var canceled bool
		buf, canceled, err = st.catchUp(w, buf, sn, compact)
		if err != nil {
			return buf, err
		}
		if canceled {
			st.mu.Lock()
			st.remove(w.id)
			st.mu.Unlock()
		}
	}
	if progressAsked {
		// Every watch has been sent every event up to sn.Index, whose
		// revision is rev.
		if err := st.srv.Send(&etcdserverpb.WatchResponse{Header: s.header(rev), WatchId: -1}); err != nil {
			return buf, err
		}
	}
	now := time.Now()
	for _, w := range ws {
		if w.progress && now.Sub(w.lastSent) >= s.cfg.ProgressNotifyInterval {
			w.lastSent = now
			if err := st.srv.Send(&etcdserverpb.WatchResponse{Header: s.header(rev), WatchId: w.id}); err != nil {
				return buf, err
			}
		}
	}
	return buf, nil
}

// catchUp sends w the events from w.next up to sn.Index, or cancels it
// if the history no longer holds them.
func (st *stream) catchUp(w *watch, buf []state.Event, sn *state.Snapshot, compact uint64) ([]state.Event, bool, error) {
	s := st.s
	if w.next > sn.Index {
		return buf, false, nil
	}
	since := s.node.State().AppendEventsSince(buf[:0], w.next-1)
	buf = since.Events
	if w.prevKV {
		// After etcd compacts to C, an event at C has lost its previous
		// value: kube-apiserver, which needs it, gets an error there, as
		// it gets 410 before C. Here both are 410.
		if _, compacted := s.node.State().Revision(); compacted > 0 {
			compact = max(compact, compacted+1)
		}
	}
	if w.next < compact || since.Expired || since.Generation != w.gen {
		err := st.srv.Send(&etcdserverpb.WatchResponse{
			Header: s.header(sn.Revision), WatchId: w.id, Canceled: true,
			CompactRevision: int64(compact),
			CancelReason:    rpctypes.ErrGRPCCompacted.Error(),
		})
		return buf, true, err
	}
	var evs []*mvccpb.Event
	flush := func() error {
		if len(evs) == 0 {
			return nil
		}
		rev, _ := s.node.State().Revision()
		err := st.srv.Send(&etcdserverpb.WatchResponse{Header: s.header(rev), WatchId: w.id, Events: evs})
		evs = nil
		w.lastSent = time.Now()
		return err
	}
	for _, e := range since.Events {
		if e.RV > sn.Index {
			break
		}
		if e.RV < w.next {
			continue
		}
		ev, err := st.event(w, e)
		if err != nil {
			return buf, false, err
		}
		if ev == nil {
			continue
		}
		evs = append(evs, ev)
		if len(evs) >= maxEventsPerResponse {
			if err := flush(); err != nil {
				return buf, false, err
			}
		}
	}
	w.next = sn.Index + 1
	return buf, false, flush()
}

// event is e as an etcd event for w, nil if w does not watch it.
func (st *stream) event(w *watch, e state.Event) (*mvccpb.Event, error) {
	k := e.Object.Key()
	if !etcdResource(k.Resource) {
		return nil, nil
	}
	key := st.s.keys.EtcdKey(k)
	if !w.in(key) {
		return nil, nil
	}
	ev := &mvccpb.Event{}
	if e.Type == state.Deleted {
		if w.noDelete {
			return nil, nil
		}
		ev.Type = mvccpb.Event_DELETE
		ev.Kv = &mvccpb.KeyValue{Key: []byte(key), ModRevision: int64(e.RV)}
	} else {
		if w.noPut {
			return nil, nil
		}
		kv, err := st.keyValue(key, e.Object)
		if err != nil {
			return nil, err
		}
		ev.Kv = kv
	}
	// kube-apiserver asks for the previous value of every event (it
	// needs it for every one but a creation).
	if prev := e.Prev(); prev != nil && w.prevKV {
		kv, err := st.keyValue(key, prev)
		if err != nil {
			return nil, err
		}
		ev.PrevKv = kv
	}
	return ev, nil
}

// maxCachedValues bounds a stream's cache of values.
const maxCachedValues = 4096

// keyValue is fsm.KeyValue with the stream's cache of values: the value
// an event sends is most often sent again as the next event's previous
// value (the history shares one version between the two events).
func (st *stream) keyValue(key string, o *state.Object) (*mvccpb.KeyValue, error) {
	kv, err := fsm.KeyValue(key, o, true)
	if err != nil {
		return nil, err
	}
	if v, ok := st.values[o]; ok {
		kv.Value = v
		return kv, nil
	}
	if kv.Value, err = fsm.EtcdValue(o); err != nil {
		return nil, err
	}
	if len(st.values) >= maxCachedValues {
		clear(st.values)
	}
	st.values[o] = kv.Value
	return kv, nil
}

// etcdResource reports whether the etcd API serves the resource's objects.
func etcdResource(resource string) bool {
	switch resource {
	case "leases", "leasecandidates", fsm.RawResource:
		return true
	}
	return false
}
