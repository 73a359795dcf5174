package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// ctl runs leaseholdctl with args and returns its exit status and output.
func ctl(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSnapshotSaveInspectRestore(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	ctx := context.Background()
	leases := c.Client(c.Leader(), true).CoordinationV1().Leases("default")
	rvs := map[string]string{}
	for i := range 5 {
		l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs[l.Name] = l.ResourceVersion
	}
	last, _ := strconv.ParseUint(rvs["l4"], 10, 64)

	// save, from a follower.
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	code, out, errOut := ctl("snapshot", "save", file, "--endpoints", c.Nodes[c.Follower()].URL())
	if code != 0 {
		t.Fatalf("save: exit %d: %s", code, errOut)
	}
	m := regexp.MustCompile(`^Saved and verified snapshot to (\S+): index (\d+), term (\d+), (\d+) bytes, sha256 ([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if m == nil || m[1] != file {
		t.Fatalf("save printed %q", out)
	}
	index, _ := strconv.ParseUint(m[2], 10, 64)
	if fi, err := os.Stat(file); err != nil || strconv.FormatInt(fi.Size(), 10) != m[4] || index < last {
		t.Fatalf("saved %v (%v) at index %d; printed %q, last write at %d", fi, err, index, out, last)
	}
	if _, err := os.Stat(file + ".part"); !os.IsNotExist(err) {
		t.Errorf("%s.part left behind: %v", file, err)
	}

	// inspect, both ways.
	code, out, errOut = ctl("snapshot", "inspect", file)
	if code != 0 || !strings.Contains(out, "Index:     "+m[2]+"\n") || !regexp.MustCompile(`\n  leases +5\n`).MatchString(out) || !strings.Contains(out, "ok, sha256 "+m[5]) {
		t.Errorf("inspect: exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = ctl("snapshot", "inspect", "-o", "json", file)
	var js struct {
		Index, Term, Size uint64
		ChecksumOK        bool `json:"checksumOK"`
		Objects           map[string]int
	}
	if err := json.Unmarshal([]byte(out), &js); code != 0 || err != nil || js.Index != index || !js.ChecksumOK || js.Objects["leases"] != 5 || strconv.FormatUint(js.Size, 10) != m[4] {
		t.Errorf("inspect -o json: exit %d, %v:\n%s%s", code, err, out, errOut)
	}

	// restore, every member of a new cluster.
	const bump = 5000
	initial := "a=127.0.0.1:9001,b=127.0.0.1:9002,c=127.0.0.1:9003"
	for _, name := range []string{"a", "b", "c"} {
		dataDir := filepath.Join(dir, name, "data")
		code, out, errOut := ctl("snapshot", "restore", file, "--data-dir", dataDir, "--name", name, "--initial-cluster", initial, "--bump-revision", strconv.Itoa(bump))
		if code != 0 {
			t.Fatalf("restore %s: exit %d: %s", name, code, errOut)
		}
		if !strings.Contains(out, fmt.Sprintf("the new cluster's log starts at index %d", index+bump)) {
			t.Errorf("restore %s printed %q", name, out)
		}
		snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		list, err := snaps.List()
		if err != nil || len(list) != 1 {
			t.Fatalf("%s: snapshots %v, %v", name, list, err)
		}
		meta, rc, err := snaps.Open(list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := fsm.ReadSnapshot(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		var voters []string
		for _, s := range meta.Configuration.Servers {
			voters = append(voters, fmt.Sprintf("%s=%s/%v", s.ID, s.Address, s.Suffrage))
		}
		if meta.Index != index+bump || meta.Term != 1 || meta.ConfigurationIndex != meta.Index ||
			strings.Join(voters, ",") != "a=127.0.0.1:9001/Voter,b=127.0.0.1:9002/Voter,c=127.0.0.1:9003/Voter" {
			t.Errorf("%s: raft snapshot at %d, term %d, configuration %v at %d", name, meta.Index, meta.Term, voters, meta.ConfigurationIndex)
		}
		objs, history, dropped, applied := st.Dump()
		if applied != index+bump || dropped != applied || history.Len() != 0 {
			t.Errorf("%s: state applied %d, dropped %d, %d events", name, applied, dropped, history.Len())
		}
		got := map[string]string{}
		for _, o := range objs {
			if o.Resource == "leases" {
				got[o.Key().Name] = strconv.FormatUint(o.RV, 10)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(rvs) {
			t.Errorf("%s: leases %v, want %v", name, got, rvs)
		}
	}

	// The default bump, etcd's advice.
	code, out, _ = ctl("snapshot", "restore", file, "--data-dir", filepath.Join(dir, "default"), "--name", "a", "--initial-cluster", initial)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("starts at index %d", index+1_000_000_000)) {
		t.Errorf("restore with the default bump: exit %d: %q", code, out)
	}
	// A restored data dir is not empty: refused, and left alone.
	before, _ := os.ReadDir(filepath.Join(dir, "a", "data", "snapshots"))
	code, _, errOut = ctl("snapshot", "restore", file, "--data-dir", filepath.Join(dir, "a", "data"), "--name", "a", "--initial-cluster", initial)
	after, _ := os.ReadDir(filepath.Join(dir, "a", "data", "snapshots"))
	if code != 1 || !strings.Contains(errOut, "not empty") || len(after) != len(before) {
		t.Errorf("restore into a restored data dir: exit %d: %s", code, errOut)
	}
}

func TestSnapshotDamagedFile(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	if code, _, errOut := ctl("snapshot", "save", file, "--endpoints", c.Nodes[0].URL()); code != 0 {
		t.Fatalf("save: exit %d: %s", code, errOut)
	}
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 1
	for what, data := range map[string][]byte{"flipped": flipped, "truncated": good[:len(good)*2/3], "empty": nil} {
		bad := filepath.Join(dir, what+".snap")
		if err := os.WriteFile(bad, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := ctl("snapshot", "inspect", bad); code != 1 || out != "" || !strings.Contains(errOut, "damaged backup") {
			t.Errorf("inspect %s: exit %d: %s%s", what, code, out, errOut)
		}
		dataDir := filepath.Join(dir, what, "data")
		if code, _, errOut := ctl("snapshot", "restore", bad, "--data-dir", dataDir, "--name", "a", "--initial-cluster", "a=127.0.0.1:9001"); code != 1 || !strings.Contains(errOut, "damaged backup") {
			t.Errorf("restore %s: exit %d: %s", what, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, what)); !os.IsNotExist(err) {
			t.Errorf("restore %s left %s: %v", what, filepath.Join(dir, what), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"backup.snap", "empty.snap", "flipped.snap", "truncated.snap"}) {
		t.Errorf("left in the directory: %v", names)
	}
}

func TestSnapshotUsage(t *testing.T) {
	t.Setenv("KUBECONFIG", "") // save without --endpoints names no cluster
	file := filepath.Join(t.TempDir(), "x.snap")
	for _, args := range [][]string{
		{"snapshot"},
		{"snapshot", "bogus"},
		{"snapshot", "save"},
		{"snapshot", "save", file, "extra", "--endpoints", "http://127.0.0.1:1"},
		{"snapshot", "save", file},
		{"snapshot", "inspect"},
		{"snapshot", "inspect", file, "-o", "yaml"},
		{"snapshot", "restore", file},
		{"snapshot", "restore", file, "--data-dir", "d", "--name", "a"},
		{"snapshot", "restore", file, "--data-dir", "d", "--name", "x", "--initial-cluster", "a=127.0.0.1:1"},
		{"snapshot", "restore", file, "--data-dir", "d", "--name", "a", "--initial-cluster", "a=127.0.0.1:1,a=127.0.0.1:2"},
		{"snapshot", "restore", file, "--data-dir", "d", "--name", "a", "--initial-cluster", "a=http://127.0.0.1:1"},
		{"snapshot", "restore", file, "--data-dir", "d", "--name", "a", "--initial-cluster", "a=127.0.0.1:1", "--bump-revision", "-1"},
	} {
		if code, _, errOut := ctl(args...); code != 2 || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
	}
}
