package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/transport"
)

// Membership: the leader asks every member to describe itself
// (transport.NodeInfo) once a second. From the answers it promotes a
// non-voter that has caught up and stayed caught up, judges whether a
// removal leaves a quorum of healthy voters, and serves the member list.
// hashicorp/raft offers neither staging nor the leader's view of its
// followers' progress (raft#404, raft-autopilot's FetchServerStats), so
// the application keeps both, as Consul's autopilot does.

// What the leader's member checks use.
const (
	// memberCheckInterval is how often the leader asks every member.
	memberCheckInterval = time.Second
	// memberCallTimeout bounds one member's answer.
	memberCallTimeout = 800 * time.Millisecond
	// promoteMaxLag is how many entries a non-voter's applied index may
	// trail the leader's commit index and still count as caught up; the
	// two are read a round trip apart, while writes go on (raft-autopilot
	// allows 250 trailing entries at Consul's lower write rates).
	promoteMaxLag = 1000
	// promoteStable is how long a non-voter must have been caught up and
	// reachable before it is promoted (raft-autopilot: 10 s; a shorter
	// wait restores the cluster's fault tolerance sooner after a
	// replacement).
	promoteStable = 3 * time.Second
	// removedMarker, in a data dir, marks a member that was removed from
	// its cluster: its Raft state must not be used to join again.
	removedMarker = "REMOVED"
)

// Errors of membership changes, mapped to HTTP answers by the API.
var (
	// ErrUnknownMember: no member has that name.
	ErrUnknownMember = errors.New("no such member")
	// ErrMemberConflict: the name or the peer address is taken.
	ErrMemberConflict = errors.New("member exists")
	// ErrUnsafeRemoval: the healthy voters left would not form a quorum.
	ErrUnsafeRemoval = errors.New("unhealthy cluster")
	// ErrNotCaughtUp: the non-voter trails the leader.
	ErrNotCaughtUp = errors.New("can only promote a member which is in sync with the leader")
	// ErrHealthUnknown: this leader has not yet asked every member.
	ErrHealthUnknown = errors.New("the leader has not checked the members' health yet, please retry")
	// ErrLeadershipMoved: the leader handed leadership over (to remove
	// itself); the request must go to the new leader.
	ErrLeadershipMoved = errors.New("leadership moved to another member")
)

// memberHealth is the leader's record of one member.
type memberHealth struct {
	info         *transport.NodeInfo // the last answer; nil if none yet
	apiURL       string              // as given when it was added
	lastOK       time.Time           // the last answer's time
	err          string              // the last failure, "" after an answer
	healthySince time.Time           // zero while not healthy
}

// members is the leader's view, reset whenever it leads anew.
type members struct {
	mu      sync.Mutex
	term    uint64 // the term the view was gathered in
	rounds  int    // completed check rounds in term
	byName  map[string]*memberHealth
	apiURLs map[string]string // given by member add, kept across terms
}

// MemberStatus is one entry of the member list.
type MemberStatus struct {
	Name        string `json:"name"`
	PeerAddr    string `json:"peerAddr"`
	APIURL      string `json:"apiURL"`
	Suffrage    string `json:"suffrage"`
	State       string `json:"state"` // leader, follower, candidate, unreachable
	LastContact string `json:"lastContact"`
	Applied     uint64 `json:"applied"`
	Behind      uint64 `json:"behind"`
	Version     string `json:"version,omitempty"`
	Healthy     bool   `json:"healthy"`
	Error       string `json:"error,omitempty"`
	// As the member last told the leader.
	Term        uint64 `json:"term"`
	CommitIndex uint64 `json:"commitIndex"`
	Ready       bool   `json:"ready"`
	NotReady    string `json:"notReady,omitempty"`
}

// NodeInfo describes this node.
func (n *Node) NodeInfo() *transport.NodeInfo {
	info := &transport.NodeInfo{
		Name:         n.cfg.Name,
		APIURL:       n.cfg.APIURL,
		EtcdURL:      n.EtcdURL(),
		Version:      n.cfg.Version,
		FeatureLevel: MaxFeatureLevel,
		State:        stateName(n.raft.State()),
		Term:         n.raft.CurrentTerm(),
		LastIndex:    n.raft.LastIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.state.AppliedIndex(),
		LastContact:  -1,
	}
	if n.raft.State() == raft.Leader {
		info.LastContact = 0
	} else if t := n.raft.LastContact(); !t.IsZero() {
		info.LastContact = time.Since(t)
	}
	info.Leader, _ = n.Leader()
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			info.Members = append(info.Members, memberID(string(s.ID), string(s.Address)))
		}
	}
	if fi, err := os.Stat(filepath.Join(n.cfg.DataDir, "raft.db")); err == nil {
		info.DBSize = fi.Size()
	}
	info.Ready, info.Reason = n.Ready()
	return info
}

func memberID(name, addr string) string { return name + "=" + addr }

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	}
	return "follower"
}

// watchMembers runs the leader's member checks and, on every node, the
// check whether the node is still a member.
func (n *Node) watchMembers() {
	defer n.wg.Done()
	t := time.NewTicker(memberCheckInterval)
	defer t.Stop()
	var leaderless time.Time
	for {
		select {
		case <-n.stopCh:
			return
		case <-t.C:
		case <-n.checkNow:
		}
		if n.IsLeader() {
			leaderless = time.Time{}
			n.checkMembers()
			n.updateFeatureLevel()
			continue
		}
		if _, addr := n.Leader(); addr != "" && time.Since(n.raft.LastContact()) < 3*n.cfg.HeartbeatTimeout {
			leaderless = time.Time{}
			continue
		}
		if leaderless.IsZero() {
			leaderless = time.Now()
		} else if time.Since(leaderless) >= 3*n.cfg.HeartbeatTimeout {
			n.checkStillMember()
		}
	}
}

// SetEtcdURL records where this node serves the etcd v3 API, for the
// members' list (etcd's MemberList gives each member's client URLs).
func (n *Node) SetEtcdURL(url string) { n.etcdURL.Store(&url) }

// EtcdURL is where this node serves the etcd v3 API, "" if it does not.
func (n *Node) EtcdURL() string {
	if p := n.etcdURL.Load(); p != nil {
		return *p
	}
	return ""
}

// AskNodeInfo asks the member at peerAddr to describe itself.
func (n *Node) AskNodeInfo(ctx context.Context, peerAddr string) (*transport.NodeInfo, error) {
	return n.client.NodeInfo(ctx, peerAddr)
}

// checkMembers asks every other member for its NodeInfo, then promotes at
// most one non-voter that has been caught up for promoteStable.
func (n *Node) checkMembers() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	conf, confIndex := f.Configuration(), f.Index()
	term := n.raft.CurrentTerm()
	type answer struct {
		name string
		info *transport.NodeInfo
		err  error
	}
	answers := make(chan answer, len(conf.Servers))
	asked := 0
	for _, s := range conf.Servers {
		if string(s.ID) == n.cfg.Name {
			continue
		}
		asked++
		go func(name, addr string) {
			ctx, cancel := context.WithTimeout(context.Background(), memberCallTimeout)
			defer cancel()
			info, err := n.client.NodeInfo(ctx, addr)
			answers <- answer{name, info, err}
		}(string(s.ID), string(s.Address))
	}
	got := map[string]answer{}
	for range asked {
		a := <-answers
		got[a.name] = a
	}
	commit := n.raft.CommitIndex()
	level := n.FeatureLevel()
	now := time.Now()
	var tooOld []string

	m := &n.members
	m.mu.Lock()
	if m.term != term || m.byName == nil {
		m.term, m.rounds, m.byName = term, 0, map[string]*memberHealth{}
	}
	var promote []string
	for _, s := range conf.Servers {
		name := string(s.ID)
		if name == n.cfg.Name {
			continue
		}
		h := m.byName[name]
		if h == nil {
			h = &memberHealth{}
			m.byName[name] = h
		}
		a := got[name]
		if errors.Is(a.err, transport.ErrUnsupported) {
			// A release before NodeInfo: it answers, so it is up, but
			// its progress is unknown and it is never promoted by itself.
			a.info, a.err = &transport.NodeInfo{Name: name, Version: "older release", Term: term, State: "follower"}, nil
			h.info, h.lastOK, h.err, h.healthySince = a.info, now, "", time.Time{}
			if level > 0 && s.Suffrage != raft.Voter {
				tooOld = append(tooOld, name)
			}
			continue
		}
		if a.err != nil {
			h.err, h.healthySince = a.err.Error(), time.Time{}
			continue
		}
		h.info, h.lastOK, h.err = a.info, now, ""
		if a.info.FeatureLevel < level && s.Suffrage != raft.Voter {
			tooOld = append(tooOld, name)
			continue
		}
		if caughtUp(a.info, term, commit) {
			if h.healthySince.IsZero() {
				h.healthySince = now
			}
		} else {
			h.healthySince = time.Time{}
		}
		if s.Suffrage == raft.Nonvoter && !h.healthySince.IsZero() && now.Sub(h.healthySince) >= promoteStable {
			promote = append(promote, name)
		}
	}
	for name := range m.byName {
		if !slices.ContainsFunc(conf.Servers, func(s raft.Server) bool { return string(s.ID) == name }) {
			delete(m.byName, name)
		}
	}
	m.rounds++
	m.mu.Unlock()

	// A non-voter whose release cannot apply the cluster's level goes
	// before it is sent what it would fail on.
	for _, name := range tooOld {
		n.removeTooOld(name, fmt.Errorf("%w: %s (level %d)", ErrReleaseTooOld, name, level))
	}
	if len(tooOld) > 0 {
		return
	}
	// One promotion a round, conditional on the configuration it was
	// judged in (raft-autopilot never changes more in one round).
	if len(promote) > 0 {
		slices.Sort(promote)
		name := promote[0]
		addr := addrOf(conf, name)
		if err := n.raft.AddVoter(raft.ServerID(name), raft.ServerAddress(addr), confIndex, n.cfg.WriteTimeout).Error(); err != nil {
			n.logger.Warn("promotion failed", "member", name, "error", err)
		} else {
			n.logger.Info("promoted a caught-up non-voter to voter", "member", name)
		}
	}
}

// caughtUp: the member follows this term's leader and has applied all but
// promoteMaxLag of what the leader had committed.
func caughtUp(info *transport.NodeInfo, term, commit uint64) bool {
	return info.Term == term && info.AppliedIndex+promoteMaxLag >= commit
}

func addrOf(conf raft.Configuration, name string) string {
	for _, s := range conf.Servers {
		if string(s.ID) == name {
			return string(s.Address)
		}
	}
	return ""
}

// healthy reports whether the leader counts member name as healthy now:
// it answered in the last check round and follows this term.
func (m *members) healthy(name string, term uint64) bool {
	h := m.byName[name]
	return h != nil && h.err == "" && h.info != nil && h.info.Term == term &&
		time.Since(h.lastOK) < 3*memberCheckInterval
}

// leaderConf returns the latest configuration and its index; only the
// leader can answer.
func (n *Node) leaderConf() (raft.Configuration, uint64, error) {
	if !n.IsLeader() {
		return raft.Configuration{}, 0, ErrNotLeader
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, 0, err
	}
	return f.Configuration(), f.Index(), nil
}

// leaderMember returns member name of the leader's configuration, the
// configuration and its index.
func (n *Node) leaderMember(name string) (raft.Server, raft.Configuration, uint64, error) {
	conf, confIndex, err := n.leaderConf()
	if err != nil {
		return raft.Server{}, conf, 0, err
	}
	i := slices.IndexFunc(conf.Servers, func(s raft.Server) bool { return string(s.ID) == name })
	if i < 0 {
		return raft.Server{}, conf, 0, fmt.Errorf("%w: %s", ErrUnknownMember, name)
	}
	return conf.Servers[i], conf, confIndex, nil
}

// Members lists the configuration with the leader's view of each member.
// Only the leader can.
func (n *Node) Members() ([]MemberStatus, error) {
	conf, _, err := n.leaderConf()
	if err != nil {
		return nil, err
	}
	commit := n.raft.CommitIndex()
	term := n.raft.CurrentTerm()
	m := &n.members
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []MemberStatus{}
	for _, s := range conf.Servers {
		name := string(s.ID)
		ms := MemberStatus{Name: name, PeerAddr: string(s.Address), Suffrage: "voter", APIURL: m.apiURLs[name]}
		if s.Suffrage != raft.Voter {
			ms.Suffrage = "nonvoter"
		}
		if name == n.cfg.Name {
			ms.APIURL, ms.State, ms.LastContact, ms.Version = n.cfg.APIURL, "leader", "0s", n.cfg.Version
			ms.Applied, ms.Healthy = n.state.AppliedIndex(), true
			ms.Behind = sub(commit, ms.Applied)
			ms.Term, ms.CommitIndex = term, commit
			if ms.Ready, ms.NotReady = n.Ready(); ms.Ready {
				ms.NotReady = ""
			}
			out = append(out, ms)
			continue
		}
		ms.State, ms.LastContact = "unreachable", "never"
		if h := m.byName[name]; h != nil {
			if h.info != nil {
				ms.APIURL, ms.Version, ms.Applied = h.info.APIURL, h.info.Version, h.info.AppliedIndex
				ms.Behind = sub(commit, h.info.AppliedIndex)
				ms.Term, ms.CommitIndex, ms.Ready = h.info.Term, h.info.CommitIndex, h.info.Ready
				if !h.info.Ready {
					ms.NotReady = h.info.Reason
				}
				ms.LastContact = time.Since(h.lastOK).Round(time.Millisecond).String()
				if h.err == "" {
					ms.State = h.info.State
				}
			}
			ms.Error = h.err
			ms.Healthy = m.healthy(name, term)
		}
		out = append(out, ms)
	}
	return out, nil
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// AddMember adds a member as a non-voter; the leader promotes it once it
// has caught up. Adding a member that exists with the same name and peer
// address changes nothing (a joiner that retries); the same name at
// another address, or another name at the same address, is a conflict:
// remove the old member first. Only the leader can.
func (n *Node) AddMember(ctx context.Context, name, peerAddr, apiURL string) error {
	conf, confIndex, err := n.leaderConf()
	if err != nil {
		return err
	}
	for _, s := range conf.Servers {
		switch {
		case string(s.ID) == name && string(s.Address) == peerAddr:
			// Added before it started (member add), now joining: its
			// release can be asked only now.
			if err := n.checkJoinerRelease(ctx, name, peerAddr); err != nil {
				if s.Suffrage != raft.Voter {
					n.removeTooOld(name, err)
				}
				return err
			}
			n.rememberAPIURL(name, apiURL)
			return nil
		case string(s.ID) == name:
			return fmt.Errorf("%w: %s has peer address %s; remove it first to add it at %s", ErrMemberConflict, name, s.Address, peerAddr)
		case string(s.Address) == peerAddr:
			return fmt.Errorf("%w: %s has peer address %s; remove it first", ErrMemberConflict, s.ID, peerAddr)
		}
	}
	if err := n.checkJoinerRelease(ctx, name, peerAddr); err != nil {
		return err
	}
	if err := raftErr(n.raft.AddNonvoter(raft.ServerID(name), raft.ServerAddress(peerAddr), confIndex, n.cfg.WriteTimeout).Error()); err != nil {
		return err
	}
	n.rememberAPIURL(name, apiURL)
	n.logger.Info("added a non-voter", "member", name, "peer-addr", peerAddr)
	return nil
}

func (n *Node) rememberAPIURL(name, apiURL string) {
	if apiURL == "" {
		return
	}
	m := &n.members
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.apiURLs == nil {
		m.apiURLs = map[string]string{}
	}
	m.apiURLs[name] = apiURL
}

// PromoteMember makes a caught-up non-voter a voter at once. Only the
// leader can.
func (n *Node) PromoteMember(ctx context.Context, name string) error {
	s, _, confIndex, err := n.leaderMember(name)
	if err != nil {
		return err
	}
	if s.Suffrage == raft.Voter {
		return nil
	}
	m := &n.members
	m.mu.Lock()
	h := m.byName[name]
	ok := h != nil && h.err == "" && h.info != nil && caughtUp(h.info, n.raft.CurrentTerm(), n.raft.CommitIndex())
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotCaughtUp, name)
	}
	return raftErr(n.raft.AddVoter(s.ID, s.Address, confIndex, n.cfg.WriteTimeout).Error())
}

// RemoveMember removes a member. A non-voter or an unhealthy voter can
// always go; a healthy voter only if the healthy voters left still form a
// quorum (etcd's strict reconfiguration check). The leader removing
// itself first hands leadership to a healthy voter and answers
// ErrLeadershipMoved: the new leader must be asked. Only the leader can.
func (n *Node) RemoveMember(ctx context.Context, name string) error {
	target, conf, confIndex, err := n.leaderMember(name)
	if err != nil {
		return err
	}
	if target.Suffrage == raft.Voter {
		term := n.raft.CurrentTerm()
		m := &n.members
		m.mu.Lock()
		rounds := m.rounds
		voters, active := 0, 0
		targetHealthy := name == n.cfg.Name
		for _, s := range conf.Servers {
			if s.Suffrage != raft.Voter {
				continue
			}
			voters++
			id := string(s.ID)
			if id == n.cfg.Name || (m.term == term && m.healthy(id, term)) {
				active++
				if id == name {
					targetHealthy = true
				}
			}
		}
		m.mu.Unlock()
		if rounds < 2 && voters > 1 {
			return ErrHealthUnknown
		}
		if targetHealthy && active-1 < (voters-1)/2+1 {
			return fmt.Errorf("%w: removing %s would leave %d healthy of %d voters, fewer than a quorum", ErrUnsafeRemoval, name, active-1, voters-1)
		}
		if name == n.cfg.Name {
			if voters == 1 {
				return fmt.Errorf("%w: %s is the only voter", ErrUnsafeRemoval, name)
			}
			if err := n.transferTo(""); err != nil {
				return err
			}
			return ErrLeadershipMoved
		}
	}
	if err := raftErr(n.raft.RemoveServer(target.ID, confIndex, n.cfg.WriteTimeout).Error()); err != nil {
		return err
	}
	n.logger.Info("removed a member", "member", name, "peer-addr", target.Address)
	return nil
}

// TransferLeadership hands leadership to voter name, or to the voter
// raft picks (the most caught up) when name is empty. Only the leader can.
func (n *Node) TransferLeadership(ctx context.Context, name string) error {
	if _, _, err := n.leaderConf(); err != nil {
		return err
	}
	return n.transferTo(name)
}

func (n *Node) transferTo(name string) error {
	switch name {
	case n.cfg.Name:
		return nil
	case "":
		return raftErr(n.raft.LeadershipTransfer().Error())
	}
	s, _, _, err := n.leaderMember(name)
	if err != nil {
		return err
	}
	if s.Suffrage != raft.Voter {
		return fmt.Errorf("%w: %s is a non-voter and cannot lead", ErrMemberConflict, name)
	}
	return raftErr(n.raft.LeadershipTransferToServer(s.ID, s.Address).Error())
}

func raftErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return ErrNotLeader
	}
	return err
}

// checkStillMember runs on a node that has heard from no leader for a
// while: it asks the members it knows, and if a leader answers with a
// configuration without this node (name and peer address), the node was
// removed. A removed follower is never told so by Raft (it simply stops
// receiving entries), and would otherwise wait for ever, not ready.
func (n *Node) checkStillMember() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	self := memberID(n.cfg.Name, string(n.trans.LocalAddr()))
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == n.cfg.Name {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), memberCallTimeout)
		info, err := n.client.NodeInfo(ctx, string(s.Address))
		cancel()
		if err != nil || info.State != "leader" || slices.Contains(info.Members, self) {
			continue
		}
		n.markRemoved(fmt.Sprintf("removed from the cluster: its leader %s (term %d) does not list %s", info.Name, info.Term, self))
		return
	}
}

// markRemoved records in the data dir that the node was removed, so that
// a restart refuses to use its state, stops taking part, and tells the
// process (Removed).
func (n *Node) markRemoved(reason string) {
	n.removedOnce.Do(func() {
		n.logger.Error("this node is no longer a member; delete its data dir before it joins again", "reason", reason)
		text := fmt.Sprintf("%s\n%s\n", time.Now().UTC().Format(time.RFC3339), reason)
		if err := os.WriteFile(filepath.Join(n.cfg.DataDir, removedMarker), []byte(text), 0o644); err != nil {
			n.logger.Error("could not mark the data dir as removed", "error", err)
		}
		n.setReady(false, reason)
		n.removedReason.Store(&reason)
		close(n.removed)
	})
}

// Removed is closed once the node learns that it was removed from the
// cluster; RemovedReason then says why.
func (n *Node) Removed() <-chan struct{} { return n.removed }

// RemovedReason says why the node was removed ("" while it was not).
func (n *Node) RemovedReason() string {
	if r := n.removedReason.Load(); r != nil {
		return *r
	}
	return ""
}

// checkNotRemoved refuses a data dir marked as a removed member's.
func checkNotRemoved(dataDir string) error {
	b, err := os.ReadFile(filepath.Join(dataDir, removedMarker))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("data dir %s belongs to a member removed from its cluster (%s); delete the data dir to join again as a new member", dataDir, firstLines(string(b)))
}

func firstLines(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	out := []byte(s)
	for i, c := range out {
		if c == '\n' {
			out[i] = ' '
		}
	}
	return string(out)
}

// MaxFeatureLevel is the highest cluster feature level this release can
// apply (see fsm.MaxFeatureLevel).
const MaxFeatureLevel = fsm.MaxFeatureLevel

// ErrReleaseTooOld: a joiner's release cannot apply the cluster's level.
var ErrReleaseTooOld = errors.New("the member's release cannot apply the cluster's feature level")

// updateFeatureLevel raises the cluster's feature level, on the leader,
// to the lowest level every member reports, once every member has
// answered in this term: a member of a release before NodeInfo counts as
// 0. The level is a log entry, so it never goes down, also across
// leaders (etcd's cluster version does the same).
func (n *Node) updateFeatureLevel() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	term := n.raft.CurrentTerm()
	level := uint32(MaxFeatureLevel)
	m := &n.members
	m.mu.Lock()
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == n.cfg.Name {
			continue
		}
		// Only an answer of this round counts: a member restarted on
		// an older release must not be judged by its last answer.
		h := m.byName[string(s.ID)]
		if m.term != term || h == nil || h.info == nil || h.err != "" {
			level = 0
			continue
		}
		level = min(level, h.info.FeatureLevel)
	}
	m.mu.Unlock()
	current := n.state.FeatureLevel()
	if level <= current {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.WriteTimeout)
	defer cancel()
	if _, err := n.Apply(ctx, &fsm.Command{Type: fsm.CmdFeatureLevel, Level: uint64(level)}); err != nil {
		n.logger.Warn("could not raise the cluster feature level", "to", level, "error", err)
		return
	}
	n.logger.Info("raised the cluster feature level", "from", current, "to", level)
}

// removeTooOld removes a non-voter whose release cannot apply the
// cluster's feature level.
func (n *Node) removeTooOld(name string, why error) {
	n.logger.Error("removing a non-voter whose release is too old for the cluster", "member", name, "reason", why)
	if err := n.raft.RemoveServer(raft.ServerID(name), 0, n.cfg.WriteTimeout).Error(); err != nil {
		n.logger.Warn("could not remove the non-voter", "member", name, "error", err)
	}
}

// FeatureLevel is the cluster's feature level: what every member can
// apply, as the log says. It only grows.
func (n *Node) FeatureLevel() uint32 { return n.state.FeatureLevel() }

// checkJoinerRelease refuses a joiner that answers with a release below
// the cluster's feature level (or one before levels): it could not apply
// the log or the snapshot it would be sent. A joiner that cannot be asked
// yet (not started) is let in: a release with levels checks the cluster
// itself when it joins.
func (n *Node) checkJoinerRelease(ctx context.Context, name, peerAddr string) error {
	level := n.FeatureLevel()
	if level == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, memberCallTimeout)
	defer cancel()
	info, err := n.client.NodeInfo(ctx, peerAddr)
	switch {
	case errors.Is(err, transport.ErrUnsupported):
		return fmt.Errorf("%w: %s runs a release before feature levels; the cluster is at level %d", ErrReleaseTooOld, name, level)
	case err != nil:
		return nil
	case info.FeatureLevel < level:
		return fmt.Errorf("%w: %s (%s) applies up to level %d; the cluster is at level %d", ErrReleaseTooOld, name, info.Version, info.FeatureLevel, level)
	}
	return nil
}
