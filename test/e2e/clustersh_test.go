package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/test/harness"
)

// clusterSh runs scripts/cluster.sh with its environment.
type clusterSh struct {
	t        *testing.T
	script   string
	workDir  string
	data     string
	apiBase  int
	peerBase int
	env      []string
	pids     map[int]bool // every node pid seen, for the final cleanup
}

func (c *clusterSh) run(args ...string) (int, string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{c.script}, args...)...)
	cmd.Dir = c.workDir
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("cluster.sh %s did not finish within 90s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		c.t.Fatalf("cluster.sh %s: %v", strings.Join(args, " "), err)
	}
	c.t.Logf("$ cluster.sh %s  (exit %d)\n%s%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// mustRun runs a command that must exit 0 and returns its stdout.
func (c *clusterSh) mustRun(args ...string) string {
	c.t.Helper()
	code, stdout, stderr := c.run(args...)
	if code != 0 {
		c.t.Fatalf("cluster.sh %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

func (c *clusterSh) apiAddr(node string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(node, "n"))
	return fmt.Sprintf("127.0.0.1:%d", c.apiBase+i)
}

func (c *clusterSh) dataDir(node string) string { return filepath.Join(c.data, node, "data") }

func (c *clusterSh) caPool() *x509.CertPool {
	c.t.Helper()
	pem, err := os.ReadFile(filepath.Join(c.data, "pki", "ca.crt"))
	if err != nil {
		c.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		c.t.Fatal("pki/ca.crt holds no certificate")
	}
	return pool
}

// trustPKI lets the harness reach the nodes as the admin the script made.
func (c *clusterSh) trustPKI() {
	c.t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(c.data, "pki", name))
		if err != nil {
			c.t.Fatal(err)
		}
		return b
	}
	cert, err := tls.X509KeyPair(read("admin.crt"), read("admin.key"))
	if err != nil {
		c.t.Fatal(err)
	}
	creds := &apiCredentials{
		rest: rest.TLSClientConfig{CAData: read("ca.crt"), CertData: read("admin.crt"), KeyData: read("admin.key")},
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: c.caPool(), Certificates: []tls.Certificate{cert}},
		}},
	}
	for _, n := range clusterNames {
		secureAPIs.Store(c.apiAddr(n), creds)
		c.t.Cleanup(func() { secureAPIs.Delete(c.apiAddr(n)) })
	}
}

// nodeRow is one line of `cluster.sh status`.
type nodeRow struct {
	pid     int // 0 when "-"
	url     string
	state   string
	applied string
}

var statusLineRE = regexp.MustCompile(`^(n[123])\s+pid=(\S+)\s+(\S+)\s+state=(\S+)\s+applied=(\S+)\s*$`)

func (c *clusterSh) status() map[string]nodeRow {
	c.t.Helper()
	out := c.mustRun("status")
	rows := map[string]nodeRow{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		m := statusLineRE.FindStringSubmatch(line)
		if m == nil {
			c.t.Fatalf("status line %q does not read `NAME pid=PID URL state=STATE applied=N`", line)
		}
		r := nodeRow{url: m[3], state: m[4], applied: m[5]}
		if m[2] != "-" {
			pid, err := strconv.Atoi(m[2])
			if err != nil {
				c.t.Fatalf("status line %q: bad pid", line)
			}
			r.pid = pid
			c.pids[pid] = true
		}
		rows[m[1]] = r
	}
	if len(rows) != 3 {
		c.t.Fatalf("status shows %d nodes, want n1, n2, n3:\n%s", len(rows), out)
	}
	return rows
}

// nodeAlive reports whether pid is a live process running on this cluster's
// data (the test cluster.sh makes; a zombie has an empty cmdline).
func (c *clusterSh) nodeAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(b, []byte(c.data))
}

// freePortBase picks a random base in 20000–32000 such that base+1..base+3
// and base+11..base+13 are free. The range stays below Linux's ephemeral
// ports (32768 and up), so that no outgoing connection takes one of them
// between this check and the script's start.
func freePortBase(t *testing.T) (api, peer int) {
	t.Helper()
	for range 100 {
		base := 20000 + rand.IntN(12000)
		ok := true
		for _, p := range []int{base + 1, base + 2, base + 3, base + 11, base + 12, base + 13} {
			if !harness.PortFree(p) {
				ok = false
				break
			}
		}
		if ok {
			return base, base + 10
		}
	}
	t.Fatal("no free port base found in 20000–32000")
	return 0, 0
}

func TestClusterScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("scripts/cluster.sh needs curl, which is not installed here (.ci/run installs it)")
	}
	apiBase, peerBase := freePortBase(t)
	data := filepath.Join(t.TempDir(), "cluster")
	c := &clusterSh{
		t:        t,
		script:   filepath.Join(bins.Root, "scripts", "cluster.sh"),
		workDir:  t.TempDir(),
		data:     data,
		apiBase:  apiBase,
		peerBase: peerBase,
		pids:     map[int]bool{},
		env: harness.CleanEnv(
			"LEASEHOLD_DATA="+data,
			"API_PORT_BASE="+strconv.Itoa(apiBase),
			"PEER_PORT_BASE="+strconv.Itoa(peerBase),
			"LEASEHOLD_BIN="+bins.Path("leasehold"),
			"READY_TIMEOUT=30",
			"STOP_TIMEOUT=15",
		),
	}
	// Whatever happens, no node outlives the test: the script's stop first,
	// then SIGKILL for any pid seen that still runs on this data dir.
	t.Cleanup(func() {
		for _, n := range clusterNames {
			if b, err := os.ReadFile(filepath.Join(data, n, n+".pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					c.pids[pid] = true
				}
			}
		}
		alive := false
		for pid := range c.pids {
			alive = alive || c.nodeAlive(pid)
		}
		if alive {
			c.run("stop")
		}
		for pid := range c.pids {
			if c.nodeAlive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			for _, n := range clusterNames {
				t.Logf("--- last lines of %s:\n%s", n, harness.Tail(filepath.Join(data, n, n+".log"), 30))
			}
		}
	})

	// start: three URLs and a leader
	out := c.mustRun("start")
	c.trustPKI()
	for _, n := range clusterNames {
		if url := "https://" + c.apiAddr(n); !strings.Contains(out, url) {
			t.Errorf("start output does not show %s's URL %s", n, url)
		}
	}
	m := regexp.MustCompile(`(?m)^leader: (n[123])\s*$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("start output does not name the leader as `leader: nX`:\n%s", out)
	}
	leader := m[1]

	// status: one leader, two followers, all with a pid
	rows := c.status()
	var leaders, followers []string
	for _, n := range clusterNames {
		r := rows[n]
		if r.url != "https://"+c.apiAddr(n) {
			t.Errorf("status shows %s at %s, want https://%s", n, r.url, c.apiAddr(n))
		}
		if r.pid == 0 {
			t.Errorf("status shows no pid for %s", n)
		}
		switch r.state {
		case "leader":
			leaders = append(leaders, n)
		case "follower":
			followers = append(followers, n)
		}
	}
	if len(leaders) != 1 || len(followers) != 2 {
		t.Fatalf("status shows leaders %v and followers %v, want one and two", leaders, followers)
	}
	if leaders[0] != leader {
		// leadership may have moved between the two commands; status is the fresher view
		t.Logf("start named %s as leader, status now shows %s", leader, leaders[0])
		leader = leaders[0]
	}

	// a Lease written before the kill
	cs, err := kubernetes.NewForConfig(clientConfig(c.apiAddr(followers[0]), true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := "cluster-sh"
	written, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "before-kill"},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through %s: %v", followers[0], err)
	}

	// secured: the kubeconfig it printed works with kubectl; no
	// credentials get 401; the peer port wants a certificate
	kubeconfig := filepath.Join(data, "kubeconfig")
	if !strings.Contains(out, kubeconfig) {
		t.Errorf("start output does not show the kubeconfig %s", kubeconfig)
	}
	kctx, kcancel := context.WithTimeout(ctx, 30*time.Second)
	kout, err := exec.CommandContext(kctx, "kubectl", "--kubeconfig", kubeconfig, "get", "lease", "before-kill", "-o", "jsonpath={.spec.holderIdentity}").CombinedOutput()
	kcancel()
	if err != nil || string(kout) != holder {
		t.Errorf("kubectl with the cluster's kubeconfig: %v %s", err, kout)
	}
	anon := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.caPool()}}}
	if resp, err := anon.Get("https://" + c.apiAddr(leader) + "/apis/coordination.k8s.io/v1/leases"); err != nil || resp.StatusCode != 401 {
		t.Errorf("a request without credentials: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}

	// the lease view: its URL and the admin's token file printed; the
	// token (no client certificate) reads the Leases on every node, as the
	// page does; only the owner may read the token
	tokenFile := filepath.Join(data, "admin.token")
	if want := "lease view: https://" + c.apiAddr("n1") + "/ui/"; !strings.Contains(out, want) || !strings.Contains(out, tokenFile) {
		t.Errorf("start output does not show %q and the token file %s", want, tokenFile)
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{tokenFile, filepath.Join(data, "pki", "tokens.csv")} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	for _, n := range clusterNames {
		base := "https://" + c.apiAddr(n)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/apis/coordination.k8s.io/v1/namespaces/default/leases/before-kill", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		if resp, err := anon.Do(req); err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: the Lease with the admin token: %v %v", n, err, resp)
		} else {
			resp.Body.Close()
		}
		if resp, err := anon.Get(base + "/ui/"); err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: the lease view: %v %v", n, err, resp)
		} else {
			resp.Body.Close()
		}
	}

	// kill the leader: it shows as down, its pid is gone
	killedPid := rows[leader].pid
	c.mustRun("kill", leader)
	if c.nodeAlive(killedPid) {
		t.Errorf("%s (pid %d) still alive after cluster.sh kill", leader, killedPid)
	}
	rows = c.status()
	if rows[leader].state != "down" || rows[leader].pid != 0 {
		t.Errorf("after kill, status shows %s as pid=%d state=%s, want pid=- state=down", leader, rows[leader].pid, rows[leader].state)
	}

	// restart: ready again, and it serves the Lease written before the kill
	c.mustRun("restart", leader)
	if code, body, err := getReady(c.apiAddr(leader)); err != nil || code != 200 {
		t.Errorf("after restart, %s /readyz: %d %s %v", leader, code, body, err)
	}
	rows = c.status()
	if s := rows[leader].state; s != "leader" && s != "follower" {
		t.Errorf("after restart, status shows %s as %s", leader, s)
	}
	if rows[leader].pid == 0 || rows[leader].pid == killedPid {
		t.Errorf("after restart, status shows %s with pid %d (killed pid was %d)", leader, rows[leader].pid, killedPid)
	}
	rcs, err := kubernetes.NewForConfig(clientConfig(c.apiAddr(leader), true))
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range []string{"", "0"} {
		got, err := rcs.CoordinationV1().Leases("default").Get(ctx, "before-kill", metav1.GetOptions{ResourceVersion: rv})
		if err != nil {
			t.Errorf("GET (resourceVersion=%q) through restarted %s: %v", rv, leader, err)
			continue
		}
		if got.ResourceVersion != written.ResourceVersion || ptrStr(got.Spec.HolderIdentity) != holder {
			t.Errorf("GET (resourceVersion=%q) through restarted %s: rv %s holder %s, written rv %s holder %s",
				rv, leader, got.ResourceVersion, ptrStr(got.Spec.HolderIdentity), written.ResourceVersion, holder)
		}
	}

	// stop: no process left
	var running []int
	for _, n := range clusterNames {
		if rows[n].pid != 0 {
			running = append(running, rows[n].pid)
		}
	}
	c.mustRun("stop")
	for _, pid := range running {
		if c.nodeAlive(pid) {
			t.Errorf("pid %d still running after cluster.sh stop", pid)
		}
	}
	for n, r := range c.status() {
		if r.state != "down" {
			t.Errorf("after stop, status shows %s as %s", n, r.state)
		}
	}

	// clean: the data is gone, certificates, kubeconfig and token included
	c.mustRun("clean")
	for _, p := range []string{c.dataDir("n1"), c.dataDir("n2"), c.dataDir("n3"), filepath.Join(data, "pki"), kubeconfig, tokenFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after clean, %s still exists (%v)", p, err)
		}
	}
}
