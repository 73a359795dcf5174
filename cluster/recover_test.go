package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/leasehold/leasehold/transport"
)

func TestRecover_ParsePeers(t *testing.T) {
	const self, addr = "n1", "127.0.0.1:8001"
	valid := []struct {
		name, file string
		want       []raft.Server
	}{
		{"alone", `[{"id":"n1","address":"127.0.0.1:8001","non_voter":false}]`,
			[]raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:8001"}}},
		{"non_voter may be left out", `[{"id":"n2","address":"10.0.0.2:8001"},{"id":"n1","address":"127.0.0.1:8001"}]`,
			[]raft.Server{{Suffrage: raft.Voter, ID: "n2", Address: "10.0.0.2:8001"}, {Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:8001"}}},
		{"with a non-voter", "[\n {\"id\": \"n1\", \"address\": \"127.0.0.1:8001\"},\n {\"id\": \"n9\", \"address\": \"host9:8001\", \"non_voter\": true}\n]\n",
			[]raft.Server{{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:8001"}, {Suffrage: raft.Nonvoter, ID: "n9", Address: "host9:8001"}}},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := parsePeers([]byte(tc.file), self, addr)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(conf.Servers, tc.want) {
				t.Fatalf("got %+v, want %+v", conf.Servers, tc.want)
			}
			// The format is raft's own: raft.ReadConfigJSON reads the same.
			path := filepath.Join(t.TempDir(), peersFile)
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			theirs, err := raft.ReadConfigJSON(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(theirs.Servers, conf.Servers) {
				t.Fatalf("raft.ReadConfigJSON reads %+v, parsePeers %+v", theirs.Servers, conf.Servers)
			}
		})
	}

	invalid := []struct {
		name, file, selfAddr, want string
	}{
		{"not JSON", `n1=127.0.0.1:8001`, addr, "not a JSON list"},
		{"an object", `{"id":"n1","address":"127.0.0.1:8001"}`, addr, "not a JSON list"},
		{"empty list", `[]`, addr, "lists no servers"},
		{"null", `null`, addr, "lists no servers"},
		{"two lists", `[{"id":"n1","address":"127.0.0.1:8001"}][]`, addr, "after the JSON list"},
		{"misspelt field", `[{"id":"n1","address":"127.0.0.1:8001","nonvoter":true}]`, addr, `unknown field "nonvoter"`},
		{"no id", `[{"address":"127.0.0.1:8001"}]`, addr, "entry 1 has no id"},
		{"no address", `[{"id":"n1"}]`, addr, `entry 1 (n1): address "" is not a dialable host:port`},
		{"URL address", `[{"id":"n1","address":"http://127.0.0.1:8001"}]`, addr, "not a dialable host:port"},
		{"port zero", `[{"id":"n1","address":"127.0.0.1:0"}]`, addr, "not a dialable host:port"},
		{"duplicate id", `[{"id":"n1","address":"127.0.0.1:8001"},{"id":"n1","address":"127.0.0.1:8002"}]`, addr, "entry 2 (n1): id n1 is also entry 1's"},
		{"duplicate address", `[{"id":"n1","address":"127.0.0.1:8001"},{"id":"n2","address":"127.0.0.1:8001"}]`, addr, "entry 2 (n2): address 127.0.0.1:8001 is also entry 1's"},
		{"self missing", `[{"id":"n2","address":"127.0.0.1:8002"}]`, addr, "does not list this node (n1)"},
		{"self a non-voter", `[{"id":"n1","address":"127.0.0.1:8001","non_voter":true},{"id":"n2","address":"127.0.0.1:8002"}]`, addr, "lists this node (n1) as a non-voter"},
		{"no voter", `[{"id":"n1","address":"127.0.0.1:8001","non_voter":true}]`, addr, "lists no voter"},
		{"self at another address", `[{"id":"n1","address":"127.0.0.1:9001"}]`, addr, "address 127.0.0.1:9001 is not this node's peer address 127.0.0.1:8001"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePeers([]byte(tc.file), self, tc.selfAddr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Without a known address of its own, the node takes the file's.
	if _, err := parsePeers([]byte(`[{"id":"n1","address":"127.0.0.1:9001"}]`), self, ""); err != nil {
		t.Fatal(err)
	}
}

// peersJSON builds peers.json naming the given nodes of c as voters.
func (c *testCluster) peersJSON(nodes ...int) []byte {
	c.t.Helper()
	var entries []peersEntry
	for _, i := range nodes {
		entries = append(entries, peersEntry{ID: c.cfgs[i].Name, Address: c.addrs[i]})
	}
	b, err := json.Marshal(entries)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

func writePeersFile(t *testing.T, dataDir string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dataDir, peersFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeLeases creates count Leases named prefix-i through the running nodes
// in turn and returns every acknowledged one with its resourceVersion.
func writeLeases(t *testing.T, c *testCluster, prefix string, count int) map[string]uint64 {
	t.Helper()
	acked := map[string]uint64{}
	up := c.running()
	for i := range count {
		name := fmt.Sprintf("%s-%d", prefix, i)
		acked[name] = mustApply(t, c.node(up[i%len(up)]), createCmd(t, name, "h"))
	}
	return acked
}

func maxRV(rvs map[string]uint64) uint64 {
	return slices.Max(slices.Collect(maps.Values(rvs)))
}

// waitApplied waits until node i has applied index.
func (c *testCluster) waitApplied(i int, index uint64) {
	c.t.Helper()
	n := c.node(i)
	waitFor(c.t, waitTimeout, fmt.Sprintf("n%d to apply index %d", i+1, index), func() bool {
		return n.State().AppliedIndex() >= index
	})
}

// mustNotWrite checks that n, once it knows no leader, cannot commit a
// write: no quorum.
func mustNotWrite(t *testing.T, n *Node) {
	t.Helper()
	// Until then a write may go to the lost leader (outcome unknown).
	waitFor(t, waitTimeout, n.Name()+" to know no leader", func() bool {
		_, addr := n.Leader()
		return addr == ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := n.Apply(ctx, createCmd(t, "no-quorum", "h"))
	if err == nil {
		t.Fatalf("%s committed a write without a quorum: %+v", n.Name(), res)
	}
	if !errors.Is(err, ErrNoLeader) {
		t.Fatalf("%s: write without a quorum failed with %v, want %v", n.Name(), err, ErrNoLeader)
	}
}

// checkRecovered checks what node i serves after a recovery: every
// acknowledged Lease at its resourceVersion, the watch history from the
// first of them, and the files the recovery leaves.
func checkRecovered(t *testing.T, c *testCluster, i int, acked map[string]uint64) {
	t.Helper()
	n := c.node(i)
	got := dumpState(n)
	for name, rv := range acked {
		if got[name] != rv {
			t.Errorf("%s: Lease %s at resourceVersion %d, want %d", n.Name(), name, got[name], rv)
		}
	}
	// A watch resumes from any resourceVersion the survivor had: the
	// history went through the recovery's snapshot.
	first := slices.Min(slices.Collect(maps.Values(acked)))
	since := n.State().EventsSince(first - 1)
	if since.Expired {
		t.Fatalf("%s: the history no longer reaches resourceVersion %d (oldest %d)", n.Name(), first-1, since.Oldest)
	}
	seen := map[uint64]bool{}
	for _, e := range since.Events {
		seen[e.RV] = true
	}
	for name, rv := range acked {
		if !seen[rv] {
			t.Errorf("%s: no event at resourceVersion %d (Lease %s) in the history", n.Name(), rv, name)
		}
	}
	dir := c.cfgs[i].DataDir
	if _, err := os.Stat(filepath.Join(dir, peersFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: peers.json still there after the recovery (%v)", n.Name(), err)
	}
	info, err := os.ReadFile(filepath.Join(dir, peersInfoFile))
	if err != nil {
		t.Fatalf("%s: %v", n.Name(), err)
	}
	if !strings.Contains(string(info), n.Name()+" recovered from peers.json at ") || !strings.Contains(string(info), c.addrs[i]) {
		t.Errorf("%s: peers.info does not say what happened:\n%s", n.Name(), info)
	}
}

// members returns node i's Raft configuration as name=addr strings.
func (c *testCluster) members(i int) []string {
	c.t.Helper()
	f := c.node(i).raft.GetConfiguration()
	if err := f.Error(); err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, s := range f.Configuration().Servers {
		out = append(out, fmt.Sprintf("%s=%s/%v", s.ID, s.Address, s.Suffrage))
	}
	return out
}

// Three nodes, two lost for good: the survivor, a follower that has every
// acknowledged write, is recovered as a cluster of itself alone. It leads,
// serves every acknowledged Lease at its resourceVersion with the watch
// history, takes new writes whose resourceVersions continue after its log,
// and a second recovery (as after a crash before peers.json was removed)
// changes nothing.
func TestRecover_SurvivorAlone(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	s := c.followers(l)[0]

	acked := writeLeases(t, c, "before-snap", 20)
	// Part of the state comes from a snapshot, part from the log after it.
	c.waitApplied(s, maxRV(acked))
	if err := c.node(s).raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	maps.Copy(acked, writeLeases(t, c, "after-snap", 20))
	// An acknowledged write is on a majority, not necessarily on this
	// node: losing the other two loses what it had not received.
	c.waitApplied(s, maxRV(acked))

	for _, i := range c.followers(s) {
		c.kill(i)
	}
	mustNotWrite(t, c.node(s))
	last := c.node(s).raft.LastIndex()
	c.kill(s)

	writePeersFile(t, c.cfgs[s].DataDir, c.peersJSON(s))
	start := time.Now()
	c.restart(s)
	if got := c.waitAllReady(); got != s {
		t.Fatalf("leader n%d, want the survivor n%d", got+1, s+1)
	}
	t.Logf("n%d recovered, leading and ready %v after its start", s+1, time.Since(start).Round(time.Millisecond))
	if got, want := c.members(s), []string{fmt.Sprintf("%s=%s/Voter", c.cfgs[s].Name, c.addrs[s])}; !slices.Equal(got, want) {
		t.Errorf("configuration %v, want %v", got, want)
	}
	checkRecovered(t, c, s, acked)

	rv := mustApply(t, c.node(s), createCmd(t, "after-recovery", "h"))
	if rv <= last {
		t.Errorf("new write at resourceVersion %d, want one after the survivor's log (last index %d)", rv, last)
	}
	acked["after-recovery"] = rv
	rv2 := mustApply(t, c.node(s), updateCmd(t, "before-snap-0", "h2", acked["before-snap-0"]))
	acked["before-snap-0"] = rv2

	// Recovering again with the same file keeps everything.
	c.kill(s)
	writePeersFile(t, c.cfgs[s].DataDir, c.peersJSON(s))
	c.restart(s)
	if got := c.waitAllReady(); got != s {
		t.Fatalf("leader n%d after the second recovery, want n%d", got+1, s+1)
	}
	if got := dumpState(c.node(s)); !reflect.DeepEqual(got, acked) {
		t.Errorf("after a second recovery: %v, want %v", got, acked)
	}
	if h, _ := holderOf(c.node(s), "before-snap-0"); h != "h2" {
		t.Errorf("before-snap-0 held by %q, want h2", h)
	}
	mustApply(t, c.node(s), createCmd(t, "after-second-recovery", "h"))
}

// Five nodes, three lost for good: the two survivors, recovered with the
// same peers.json naming both, form a two-node cluster that serves every
// acknowledged write on both and commits new ones on both.
func TestRecover_SurvivorPair(t *testing.T) {
	c := newCluster(t, 5)
	l := c.waitAllReady()
	acked := writeLeases(t, c, "lease", 30)
	fs := c.followers(l)
	pair := []int{fs[0], fs[1]}
	for _, i := range pair {
		c.waitApplied(i, maxRV(acked))
	}
	for _, i := range c.running() {
		if !slices.Contains(pair, i) {
			c.kill(i)
		}
	}
	mustNotWrite(t, c.node(pair[0]))
	for _, i := range pair {
		c.kill(i)
	}

	peers := c.peersJSON(pair...)
	for _, i := range pair {
		writePeersFile(t, c.cfgs[i].DataDir, peers)
		c.restart(i)
	}
	leader := c.waitAllReady()
	if !slices.Contains(pair, leader) {
		t.Fatalf("leader n%d is not a survivor", leader+1)
	}
	want := []string{
		fmt.Sprintf("%s=%s/Voter", c.cfgs[pair[0]].Name, c.addrs[pair[0]]),
		fmt.Sprintf("%s=%s/Voter", c.cfgs[pair[1]].Name, c.addrs[pair[1]]),
	}
	for _, i := range pair {
		if got := c.members(i); !slices.Equal(got, want) {
			t.Errorf("n%d: configuration %v, want %v", i+1, got, want)
		}
		checkRecovered(t, c, i, acked)
	}
	// Writes through either node commit on both.
	for _, i := range pair {
		name := fmt.Sprintf("after-via-n%d", i+1)
		acked[name] = mustApply(t, c.node(i), createCmd(t, name, "h"))
	}
	for _, i := range pair {
		c.waitApplied(i, maxRV(acked))
		if got := dumpState(c.node(i)); !reflect.DeepEqual(got, acked) {
			t.Errorf("n%d: %v, want %v", i+1, got, acked)
		}
	}
}

// storeState is what a stopped node's stores hold: the log's bounds and the
// snapshots, by id.
type storeState struct {
	first, last uint64
	snaps       []string
}

func readStoreState(t *testing.T, dir string) storeState {
	t.Helper()
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	var st storeState
	if st.first, err = bolt.FirstIndex(); err != nil {
		t.Fatal(err)
	}
	if st.last, err = bolt.LastIndex(); err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metas {
		st.snaps = append(st.snaps, m.ID)
	}
	return st
}

// An invalid peers.json stops the node with an error naming the file and
// the fault, and changes nothing: the log, the snapshots and the file stay
// as they were, no peers.info appears, and once the file is removed the
// node rejoins its three-node cluster. peers.json in a data directory
// without state is refused too, and leaves it empty.
func TestRecover_InvalidPeersJSONChangesNothing(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	acked := writeLeases(t, c, "lease", 10)
	x := c.followers(l)[0]
	c.waitApplied(x, maxRV(acked))
	if err := c.node(x).raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	maps.Copy(acked, writeLeases(t, c, "more", 5))
	c.waitApplied(x, maxRV(acked))
	c.stop(x)
	dir := c.cfgs[x].DataDir
	before := readStoreState(t, dir)
	if len(before.snaps) == 0 || before.last == 0 {
		t.Fatalf("n%d: stores hold %+v, want a snapshot and a log", x+1, before)
	}

	self := peersEntry{ID: c.cfgs[x].Name, Address: c.addrs[x]}
	other := peersEntry{ID: c.cfgs[l].Name, Address: c.addrs[l]}
	cases := []struct {
		name string
		file string
		want string
	}{
		{"not JSON", "this node alone", "not a JSON list"},
		{"self missing", mustJSON(t, []peersEntry{other}), "does not list this node"},
		{"duplicate address", mustJSON(t, []peersEntry{self, {ID: "n9", Address: self.Address}}), "is also entry 1's"},
		{"self a non-voter", mustJSON(t, []peersEntry{{ID: self.ID, Address: self.Address, NonVoter: true}, other}), "as a non-voter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writePeersFile(t, dir, []byte(tc.file))
			err := c.tryStart(x)
			if err == nil {
				t.Fatal("the node started")
			}
			for _, want := range []string{peersFile, tc.want, "nothing was changed"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if got := readStoreState(t, dir); !reflect.DeepEqual(got, before) {
				t.Errorf("stores hold %+v, held %+v", got, before)
			}
			if b, err := os.ReadFile(filepath.Join(dir, peersFile)); err != nil || string(b) != tc.file {
				t.Errorf("peers.json is now %q (%v)", b, err)
			}
			if _, err := os.Stat(filepath.Join(dir, peersInfoFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("peers.info written (%v)", err)
			}
		})
	}

	t.Run("no state", func(t *testing.T) {
		empty := t.TempDir()
		writePeersFile(t, empty, []byte(mustJSON(t, []peersEntry{self})))
		m := listenAny(t)
		defer m.Close()
		cfg := c.cfgs[x]
		cfg.DataDir = empty
		_, err := New(cfg, m)
		if err == nil || !strings.Contains(err.Error(), "nothing to recover") {
			t.Fatalf("error %v, want one saying there is nothing to recover", err)
		}
		if got := readStoreState(t, empty); got.last != 0 || len(got.snaps) != 0 {
			t.Errorf("stores hold %+v, want nothing", got)
		}
	})

	if err := os.Remove(filepath.Join(dir, peersFile)); err != nil {
		t.Fatal(err)
	}
	c.restart(x)
	c.waitAllReady()
	if got := len(c.members(x)); got != 3 {
		t.Errorf("n%d: %d members, want 3", x+1, got)
	}
	c.waitApplied(x, maxRV(acked))
	if got := dumpState(c.node(x)); !reflect.DeepEqual(got, acked) {
		t.Errorf("n%d: %v, want %v", x+1, got, acked)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func listenAny(t *testing.T) *transport.Mux {
	t.Helper()
	m, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tryStart starts stopped node i on its data dir and address and returns
// New's error; a node that starts is kept running.
func (c *testCluster) tryStart(i int) error {
	c.t.Helper()
	var (
		m   *transport.Mux
		err error
	)
	deadline := time.Now().Add(waitTimeout)
	for {
		if m, err = transport.Listen(transport.Config{Addr: c.addrs[i], Logger: c.cfgs[i].Logger.Named("mux")}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("listen n%d: %v", i+1, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	n, err := New(c.cfgs[i], m)
	if err != nil {
		m.Close()
		return err
	}
	c.mu.Lock()
	c.nodes[i], c.muxes[i] = n, m
	c.mu.Unlock()
	return nil
}

// An entry a node appended but that was never committed (its leader died
// first) becomes committed by the recovery, as RecoverCluster documents and
// docs/operations.md warns. The entry is put into the stopped survivor's
// log the way a leader's AppendEntries would have.
func TestRecover_CommitsEntriesNeverCommitted(t *testing.T) {
	c := newCluster(t, 3)
	l := c.waitAllReady()
	s := c.followers(l)[0]
	acked := writeLeases(t, c, "lease", 5)
	c.waitApplied(s, maxRV(acked))
	for _, i := range c.followers(s) {
		c.kill(i)
	}
	c.kill(s)

	dir := c.cfgs[s].DataDir
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := bolt.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	var tail raft.Log
	if err := bolt.GetLog(last, &tail); err != nil {
		t.Fatal(err)
	}
	pending := raft.Log{Index: last + 1, Term: tail.Term, Type: raft.LogCommand,
		Data: createCmd(t, "never-committed", "h").Encode(), AppendedAt: time.Now()}
	if err := bolt.StoreLog(&pending); err != nil {
		t.Fatal(err)
	}
	bolt.Close()

	writePeersFile(t, dir, c.peersJSON(s))
	c.restart(s)
	c.waitAllReady()
	acked["never-committed"] = last + 1
	checkRecovered(t, c, s, acked)
}
