package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/test/harness"
)

// runCtl runs the leaseholdctl built beside the node binary (bounded) and
// returns its exit status, stdout and stderr. No kubeconfig of the
// developer's reaches it.
func runCtl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Path("leaseholdctl"), args...)
	cmd.Env = harness.CleanEnv("KUBECONFIG=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("leaseholdctl %s did not exit within 2m (stderr: %s)", strings.Join(args, " "), stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run leaseholdctl %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

var savedRE = regexp.MustCompile(`^Saved and verified snapshot to (.+): index (\d+), term (\d+), (\d+) bytes, sha256 [0-9a-f]{64}\n$`)

// saveSnapshot runs snapshot save FILE with args and returns the index it
// printed; it fails the test unless the save succeeded.
func saveSnapshot(t *testing.T, file string, args ...string) uint64 {
	t.Helper()
	code, out, errOut := runCtl(t, append([]string{"snapshot", "save", file}, args...)...)
	m := savedRE.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != file {
		t.Fatalf("snapshot save: exit %d: %q %s", code, out, errOut)
	}
	fi, err := os.Stat(file)
	if err != nil || strconv.FormatInt(fi.Size(), 10) != m[4] {
		t.Fatalf("saved file: %v %v, printed %q", fi, err, out)
	}
	index, _ := strconv.ParseUint(m[2], 10, 64)
	return index
}

// inspected is snapshot inspect -o json.
type inspected struct {
	Index      uint64         `json:"index"`
	Term       uint64         `json:"term"`
	Size       int64          `json:"size"`
	ChecksumOK bool           `json:"checksumOK"`
	Objects    map[string]int `json:"objects"`
}

func inspectSnapshot(t *testing.T, file string) inspected {
	t.Helper()
	code, out, errOut := runCtl(t, "snapshot", "inspect", "-o", "json", file)
	var in inspected
	if err := json.Unmarshal([]byte(out), &in); code != 0 || err != nil || !in.ChecksumOK {
		t.Fatalf("snapshot inspect: exit %d, %v: %s%s", code, err, out, errOut)
	}
	return in
}

func mustCreateLease(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) uint64 {
	t.Helper()
	holder := "h-" + name
	l, err := c.CoordinationV1().Leases(ns).Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	return rv
}

// restoreCluster stops every node of pc, restores each from file into a
// new data dir, and starts the new cluster on the same addresses.
func restoreCluster(t *testing.T, pc *procCluster, file string, extra ...string) {
	t.Helper()
	for _, n := range pc.nodes {
		pc.stop(n.name)
	}
	for _, n := range pc.nodes {
		dir := filepath.Join(pc.dir, n.name, "restored")
		args := append([]string{"snapshot", "restore", file, "--data-dir", dir, "--name", n.name,
			"--initial-cluster", argAfter(n.args, "--initial-cluster")}, extra...)
		if code, out, errOut := runCtl(t, args...); code != 0 {
			t.Fatalf("restore %s: exit %d: %s%s", n.name, code, out, errOut)
		}
		for i, a := range n.args {
			if a == "--data-dir" {
				n.args[i+1] = dir
			}
		}
		n.dataDir = dir
	}
	for _, n := range pc.nodes {
		pc.start(n)
	}
	for _, n := range pc.nodes {
		pc.waitReady(n.name, 30*time.Second)
	}
}

// etcd's TestRestoreCompactionRevBump, for resourceVersions: a cluster
// restored from a backup holds the backup's Leases at their own
// resourceVersions and not the later ones; a watch resuming from any
// resourceVersion of the old cluster, even one given after the backup,
// gets 410 Expired, as does an exact list; new writes get resourceVersions
// above every one the old cluster gave, and a watch from the new cluster's
// list sees them.
func TestSnapshotRestoreBumpsResourceVersions(t *testing.T) {
	pc := newProcCluster(t)
	ctx := context.Background()
	const ns, bump = "restore", 10000
	leader := pc.leader(10 * time.Second)
	c := pc.node(leader).protoClient

	saved := map[string]uint64{}
	for i := range 5 {
		name := fmt.Sprintf("saved-%d", i)
		saved[name] = mustCreateLease(ctx, t, c, ns, name)
	}
	// A watch from before the backup, following everything after it.
	from := listRV(ctx, t, pc, leader, ns)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	resp, err := openWatch(wctx, pc.nodes[0].apiAddr, ns, from, 120)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		seenRV uint64
	)
	go func() {
		defer resp.Body.Close()
		_ = readWatch(resp.Body, func(e watchEvent) bool {
			mu.Lock()
			seenRV = max(seenRV, e.RV)
			mu.Unlock()
			return true
		})
	}()

	file := filepath.Join(t.TempDir(), "backup.snap")
	index := saveSnapshot(t, file, "--endpoints", "http://"+pc.node(leader).apiAddr)

	// Writes after the backup: new Leases and a changed one.
	var highest uint64
	for i := range 3 {
		highest = max(highest, mustCreateLease(ctx, t, c, ns, fmt.Sprintf("later-%d", i)))
	}
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, "saved-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed := "changed"
	l.Spec.HolderIdentity = &changed
	if l, err = c.CoordinationV1().Leases(ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	highest = max(highest, rv)
	if highest <= index {
		t.Fatalf("writes after the backup at %d got %d", index, highest)
	}
	waitUntil(t, 10*time.Second, "the watch to see the writes after the backup", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seenRV >= highest
	})
	mu.Lock()
	lastSeen := seenRV
	mu.Unlock()

	restoreCluster(t, pc, file, "--bump-revision", strconv.Itoa(bump))
	stopWatch()

	// The backup's Leases, at their own resourceVersions; nothing later.
	got := finalList(ctx, t, pc, ns)
	if len(got) != len(saved) {
		t.Errorf("restored cluster lists %v, want the %d saved Leases", got, len(saved))
	}
	for name, rv := range saved {
		if g, ok := got[name]; !ok || g.rv != rv || g.holder != "h-"+name {
			t.Errorf("%s: restored as %+v, want at %d held by h-%s", name, g, rv, name)
		}
	}

	// Resuming from the old watch's place, or from before the backup: 410.
	for _, n := range pc.nodes {
		for _, rv := range []uint64{lastSeen, from} {
			evs, err := collectWatch(ctx, n.apiAddr, ns, rv, rv, 5)
			if err == nil || len(evs) != 1 || evs[0].Type != watchError || !strings.HasPrefix(evs[0].Status, "410 Expired") {
				t.Errorf("%s: watch from %d: %v, %v; want one 410 ERROR event", n.name, rv, evs, err)
			}
		}
		_, err := n.protoClient.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{
			ResourceVersion: strconv.FormatUint(saved["saved-4"], 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		})
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("%s: exact list at %d: %v, want 410 Expired", n.name, saved["saved-4"], err)
		}
	}

	// New writes land above everything the old cluster handed out, and a
	// watch from the new cluster's list sees them.
	newRV := mustCreateLease(ctx, t, pc.nodes[1].protoClient, ns, "new-0")
	if newRV <= highest || newRV < index+bump {
		t.Errorf("a new write got %d; the old cluster gave up to %d, the backup is at %d (+%d)", newRV, highest, index, bump)
	}
	start := listRV(ctx, t, pc, "n3", ns)
	newRV = mustCreateLease(ctx, t, pc.nodes[0].protoClient, ns, "new-1")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err = openWatch(wctx, pc.nodes[2].apiAddr, ns, start, 25)
	if err != nil {
		t.Fatalf("watch from the new list at %d: %v", start, err)
	}
	var evs []watchEvent
	err = readWatch(resp.Body, func(e watchEvent) bool {
		if e.Type != watchBookmark {
			evs = append(evs, e)
		}
		return e.Type == watchBookmark
	})
	resp.Body.Close()
	if err != nil || len(evs) != 1 || evs[0].Type != watchAdded || evs[0].Name != "new-1" || evs[0].RV != newRV {
		t.Errorf("watch from %d delivered %v (%v), want ADDED new-1@%d", start, evs, err, newRV)
	}
}

// A damaged backup is refused by inspect and restore (exit 1, the reason
// on stderr), and restore leaves the data dir absent or empty.
func TestSnapshotDamagedFileRefused(t *testing.T) {
	ports := harness.FreePorts(t, 2)
	api := fmt.Sprintf("127.0.0.1:%d", ports[0])
	dir := t.TempDir()
	n := startSingle(t, dir, harness.CleanEnv(), "--data-dir", filepath.Join(dir, "data"), "--api-addr", api, "--peer-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	n.waitReady(api)
	writeAndRead(t, api)
	file := filepath.Join(dir, "backup.snap")
	saveSnapshot(t, file, "--endpoints", "http://"+api)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x01
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for what, data := range map[string][]byte{"flipped": flipped, "truncated": good[:len(good)-100]} {
		bad := filepath.Join(dir, what+".snap")
		if err := os.WriteFile(bad, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, errOut := runCtl(t, "snapshot", "inspect", bad); code != 1 || out != "" || !strings.Contains(errOut, "checksum mismatch") {
			t.Errorf("inspect %s: exit %d: %q %q", what, code, out, errOut)
		}
		for _, dataDir := range []string{filepath.Join(dir, what, "data"), empty} {
			code, _, errOut := runCtl(t, "snapshot", "restore", bad, "--data-dir", dataDir, "--name", "n1", "--initial-cluster", "n1=127.0.0.1:1")
			if code != 1 || !strings.Contains(errOut, "checksum mismatch") {
				t.Errorf("restore %s into %s: exit %d: %q", what, dataDir, code, errOut)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, what)); !os.IsNotExist(err) {
			t.Errorf("restore of the %s file left %s behind: %v", what, filepath.Join(dir, what), err)
		}
		if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
			t.Errorf("restore of the %s file into an empty dir left %v %v", what, entries, err)
		}
	}
}

// Restored with the default bump, a node's next resourceVersion is a
// billion above the backup's.
func TestSnapshotRestoreDefaultBump(t *testing.T) {
	ports := harness.FreePorts(t, 2)
	api, peer := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	dir := t.TempDir()
	n := startSingle(t, dir, harness.CleanEnv(), "--name", "n1", "--data-dir", filepath.Join(dir, "data"), "--api-addr", api, "--peer-addr", peer)
	n.waitReady(api)
	c, err := kubernetes.NewForConfig(clientConfig(api, true))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rv := mustCreateLease(ctx, t, c, "default", "before")
	file := filepath.Join(dir, "backup.snap")
	index := saveSnapshot(t, file, "--endpoints", "http://"+api)
	if in := inspectSnapshot(t, file); in.Index != index || in.Objects["leases"] != 1 {
		t.Fatalf("inspect: %+v", in)
	}
	n.stop()

	restored := filepath.Join(dir, "restored")
	if code, out, errOut := runCtl(t, "snapshot", "restore", file, "--data-dir", restored, "--name", "n1", "--initial-cluster", "n1="+peer); code != 0 {
		t.Fatalf("restore: exit %d: %s%s", code, out, errOut)
	}
	n = startSingle(t, dir, harness.CleanEnv(), "--name", "n1", "--data-dir", restored, "--api-addr", api, "--peer-addr", peer, "--initial-cluster", "n1="+peer)
	n.waitReady(api)
	l, err := c.CoordinationV1().Leases("default").Get(ctx, "before", metav1.GetOptions{})
	if err != nil || l.ResourceVersion != strconv.FormatUint(rv, 10) {
		t.Fatalf("restored Lease: %v, %v; want it at %d", l, err, rv)
	}
	if got := mustCreateLease(ctx, t, c, "default", "after"); got < index+1_000_000_000 {
		t.Errorf("a write after the restore got %d, want at least %d", got, index+1_000_000_000)
	}
	n.stop()
}

// Saving from a secured cluster takes the credentials of a user allowed
// GET /cluster/snapshot: none is 401, another user's is 403.
func TestSnapshotSaveNeedsPermission(t *testing.T) {
	pc, p := newSecureCluster(t)
	dir := t.TempDir()
	kubeconfig := func(name, user string) string {
		path := filepath.Join(dir, name+".kubeconfig")
		mustWrite(t, path, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster: {server: "https://%s", certificate-authority-data: %s}
users:
- name: u
  user: %s
contexts:
- name: leasehold
  context: {cluster: leasehold, user: u}
current-context: leasehold
`, pc.nodes[0].apiAddr, b64(p.apiCA.CertPEM()), user))
		return path
	}
	for _, tc := range []struct {
		who, user, want string
	}{
		{"nobody", "{}", "Unauthorized (401)"},
		{"alice", "{token: " + aliceToken + "}", `forbidden: User "alice" cannot get path "/cluster/snapshot" (403)`},
	} {
		file := filepath.Join(dir, tc.who+".snap")
		code, out, errOut := runCtl(t, "snapshot", "save", file, "--kubeconfig", kubeconfig(tc.who, tc.user))
		if code != 1 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d: %q %q; want exit 1 and %q", tc.who, code, out, errOut, tc.want)
		}
		for _, f := range []string{file, file + ".part"} {
			if _, err := os.Stat(f); !os.IsNotExist(err) {
				t.Errorf("%s: %s exists: %v", tc.who, f, err)
			}
		}
	}
	// The leader writes the bootstrap policy shortly after it is elected.
	deadline := time.Now().Add(30 * time.Second)
	for {
		crs, err := pc.nodes[0].jsonClient.RbacV1().ClusterRoles().List(context.Background(), metav1.ListOptions{})
		if err == nil && len(crs.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bootstrap ClusterRoles within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	file := filepath.Join(dir, "admin.snap")
	saveSnapshot(t, file, "--kubeconfig", p.kubeconfig)
	if in := inspectSnapshot(t, file); in.Objects["clusterroles"] == 0 {
		t.Errorf("the admin's backup holds no ClusterRoles: %+v", in)
	}
}

// A backup from a follower holds what one from the leader does: every write
// acknowledged before it was asked for, whichever node took the write.
func TestSnapshotSaveFromFollowerAndLeader(t *testing.T) {
	pc := newProcCluster(t)
	ctx := context.Background()
	const ns = "roles"
	leader := pc.leader(10 * time.Second)
	follower := pickRole(pc, "follower", leader)
	written := 0
	for _, from := range []string{leader, follower} {
		// The write goes through another node than the one saving.
		via := pc.node(leader)
		if from == leader {
			via = pc.node(follower)
		}
		var rv uint64
		for i := range 10 {
			rv = mustCreateLease(ctx, t, via.protoClient, ns, fmt.Sprintf("before-%s-%d", from, i))
			written++
		}
		file := filepath.Join(t.TempDir(), from+".snap")
		index := saveSnapshot(t, file, "--endpoints", "http://"+pc.node(from).apiAddr)
		in := inspectSnapshot(t, file)
		if index < rv || in.Index != index || in.Objects["leases"] != written {
			t.Errorf("from %s: backup at %d with %d Leases; the last write was at %d, %d written", from, index, in.Objects["leases"], rv, written)
		}
	}
}
