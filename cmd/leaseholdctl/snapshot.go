package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/backup"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm"
)

// defaultBump is how far above the backup's index a restored cluster
// starts: etcd's recovery guide advises a billion for Kubernetes, far more
// revisions than a cluster hands out between a backup and a restore.
const defaultBump = 1_000_000_000

func snapshotCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage{"snapshot needs save, inspect or restore"}
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:], stdout)
	case "inspect":
		return snapshotInspect(args[1:], stdout)
	case "restore":
		return snapshotRestore(args[1:], stdout)
	}
	return errUsage{fmt.Sprintf("unknown command %q", "snapshot "+args[0])}
}

// snapshotSave streams GET /cluster/snapshot into FILE.part, makes it
// durable, verifies it as inspect does, and only then renames it to FILE:
// FILE is never a partial or unverified backup.
func snapshotSave(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("snapshot save", flag.ContinueOnError)
	g := addGlobals(fs)
	if err := parse(fs, g, args, 1); err != nil {
		return err
	}
	path := fs.Arg(0)
	c, err := newAPIClient(g)
	if err != nil {
		return err
	}
	part := path + ".part"
	err = errors.New("no endpoint")
	for _, e := range c.endpoints {
		var another bool
		if another, err = c.download(context.Background(), e, part); !another {
			break
		}
	}
	if err != nil {
		os.Remove(part)
		return err
	}
	sum, err := backup.Inspect(part)
	if err != nil {
		os.Remove(part)
		return fmt.Errorf("the snapshot received does not verify: %w", err)
	}
	if err := os.Rename(part, path); err != nil {
		os.Remove(part)
		return err
	}
	if err := syncSnapshotDir(filepath.Dir(path)); err != nil {
		return err
	}
	if g.output == "json" {
		return printJSON(stdout, map[string]any{"file": path, "index": sum.Index, "term": sum.Term, "size": sum.Size, "sha256": sum.SHA256})
	}
	fmt.Fprintf(stdout, "Saved and verified snapshot to %s: index %d, term %d, %d bytes, sha256 %s\n", path, sum.Index, sum.Term, sum.Size, sum.SHA256)
	return nil
}

// download writes the backup endpoint serves to path, durably. another
// reports a failure another node might not have: it could not be reached,
// it failed (5xx) or the stream broke; any node refuses a request alike
// (401, 403). --timeout bounds the wait for the answer, then every pause
// in the body.
func (c *apiClient) download(ctx context.Context, endpoint, path string) (another bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle atomic.Bool
	timer := time.AfterFunc(c.timeout, func() { idle.Store(true); cancel() })
	defer timer.Stop()
	defer func() {
		if err != nil && idle.Load() && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%s: nothing received for %v", endpoint, c.timeout)
		}
	}()
	var resp *http.Response
	for {
		if resp, err = c.do(ctx, http.MethodGet, endpoint, "/cluster/snapshot", nil); err != nil {
			return true, err
		}
		if resp.StatusCode == http.StatusOK {
			break
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		err = fmt.Errorf("%s: %w", endpoint, responseError(resp.StatusCode, data))
		// A 503 with Retry-After (no leader at the moment) is retried
		// within the timeout, as the other cluster commands do.
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusServiceUnavailable || wait <= 0 {
			return resp.StatusCode/100 != 4, err
		}
		select {
		case <-ctx.Done():
			return true, err
		case <-time.After(time.Second):
		}
	}
	defer resp.Body.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, err
	}
	_, err = io.Copy(f, &progressReader{r: resp.Body, timer: timer, idle: c.timeout})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, fmt.Errorf("%s: receive snapshot: %w", endpoint, err)
	}
	return false, nil
}

// progressReader restarts the idle timer whenever bytes arrive.
type progressReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.timer.Reset(p.idle)
	}
	return n, err
}

// inspectOutput is snapshot inspect -o json.
type inspectOutput struct {
	Index      uint64         `json:"index"`
	Term       uint64         `json:"term"`
	Size       int64          `json:"size"`
	ChecksumOK bool           `json:"checksumOK"`
	Objects    map[string]int `json:"objects"`
	SHA256     string         `json:"sha256"`
	Node       string         `json:"node"`
	Created    time.Time      `json:"created"`
	Version    int            `json:"version"`
}

// snapshotInspect verifies the checksum and decodes the whole state; a
// file that fails either is an error (exit 1), not a report.
func snapshotInspect(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("snapshot inspect", flag.ContinueOnError)
	output := fs.String("o", "table", "")
	fs.StringVar(output, "output", "table", "")
	if err := parse(fs, nil, args, 1); err != nil {
		return err
	}
	if *output != "table" && *output != "json" {
		return errUsage{fmt.Sprintf("-o %q: want table or json", *output)}
	}
	sum, err := backup.Inspect(fs.Arg(0))
	if err != nil {
		return err
	}
	if *output == "json" {
		return printJSON(stdout, inspectOutput{
			Index: sum.Index, Term: sum.Term, Size: sum.Size, ChecksumOK: true, Objects: sum.Objects,
			SHA256: sum.SHA256, Node: sum.Node, Created: sum.Created, Version: sum.Version,
		})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Index:\t%d\n", sum.Index)
	fmt.Fprintf(tw, "Term:\t%d\n", sum.Term)
	fmt.Fprintf(tw, "Node:\t%s\n", sum.Node)
	fmt.Fprintf(tw, "Created:\t%s\n", sum.Created.Format(time.RFC3339))
	fmt.Fprintf(tw, "Size:\t%d bytes\n", sum.Size)
	fmt.Fprintf(tw, "Checksum:\tok, sha256 %s\n", sum.SHA256)
	fmt.Fprintf(tw, "Objects:\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	total := 0
	for _, r := range sum.Resources() {
		fmt.Fprintf(tw, "  %s\t%d\n", r, sum.Objects[r])
		total += sum.Objects[r]
	}
	fmt.Fprintf(tw, "  total\t%d\n", total)
	return tw.Flush()
}

// memberNameRE is leasehold's rule for --name.
var memberNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// parseMembers parses --initial-cluster as leasehold does.
func parseMembers(list string) ([]cluster.Peer, error) {
	var peers []cluster.Peer
	names, addrs := map[string]bool{}, map[string]bool{}
	for _, entry := range strings.Split(list, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(entry), "=")
		name, addr = strings.TrimSpace(name), strings.TrimSpace(addr)
		if !ok || !memberNameRE.MatchString(name) {
			return nil, fmt.Errorf("--initial-cluster entry %q: want name=host:port", entry)
		}
		host, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.ParseUint(port, 10, 16); err != nil || host == "" || strings.ContainsAny(addr, "/ ") || perr != nil || n == 0 {
			return nil, fmt.Errorf("--initial-cluster entry %q: want name=host:port with a host and a non-zero port", entry)
		}
		if names[name] || addrs[addr] {
			return nil, fmt.Errorf("--initial-cluster: %q gives a name or an address a second time", entry)
		}
		names[name], addrs[addr] = true, true
		peers = append(peers, cluster.Peer{Name: name, Addr: addr})
	}
	return peers, nil
}

// snapshotRestore builds a member's data dir of a new cluster from a
// backup: the file is verified whole (checksum and a full decode) before
// anything is written, and the data dir appears only once complete.
func snapshotRestore(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("snapshot restore", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "")
	name := fs.String("name", "", "")
	initial := fs.String("initial-cluster", "", "")
	bump := fs.Uint64("bump-revision", defaultBump, "")
	if err := parse(fs, nil, args, 1); err != nil {
		return err
	}
	if *dataDir == "" || *name == "" || *initial == "" {
		return errUsage{"snapshot restore needs --data-dir DIR, --name NAME and --initial-cluster LIST"}
	}
	peers, err := parseMembers(*initial)
	if err != nil {
		return errUsage{err.Error()}
	}
	var self *cluster.Peer
	for i := range peers {
		if peers[i].Name == *name {
			self = &peers[i]
		}
	}
	if self == nil {
		return errUsage{fmt.Sprintf("--initial-cluster does not name --name %q", *name)}
	}

	path := fs.Arg(0)
	f, err := backup.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Decode()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Kubernetes clients parse a resourceVersion as an int64 at most.
	if f.Meta.Index > math.MaxInt64 || *bump > math.MaxInt64-f.Meta.Index {
		return fmt.Errorf("--bump-revision %d: index %d plus it leaves the new cluster no room", *bump, f.Meta.Index)
	}
	index := f.Meta.Index + *bump
	d := fsm.DumpState(st)
	objects := len(d.Objects())
	if err := d.Rebase(index); err != nil {
		return err
	}
	// Term 1: the first term of a new cluster, as a bootstrap starts it.
	if err := cluster.RestoreDataDir(*dataDir, peers, index, 1, d.Write); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Restored snapshot %s (index %d, term %d, %d objects) into %s for member %s; the new cluster's log starts at index %d.\n",
		path, f.Meta.Index, f.Meta.Term, objects, *dataDir, *name, index)
	fmt.Fprintf(stdout, "Start it with: leasehold --name %s --data-dir %s --peer-addr %s --initial-cluster %s\n", *name, *dataDir, self.Addr, *initial)
	return nil
}

// syncSnapshotDir makes a rename in dir durable.
func syncSnapshotDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
