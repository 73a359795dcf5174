package ui_test

import (
	"bytes"
	"context"
	pngpkg "image/png"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/election"
)

// TestScreenshot shows a Lease whose holder stopped renewing handed by the
// running election controller to the candidate the page marks, with its
// history and the cluster, and takes a picture of it: into the file named
// by LEASEHOLD_UI_SCREENSHOT (relative to the repository's root), for
// docs/ui.md, else into a temporary one:
//
//	LEASEHOLD_UI_SCREENSHOT=docs/ui.png go test ./ui -run Screenshot
func TestScreenshot(t *testing.T) {
	out := os.Getenv("LEASEHOLD_UI_SCREENSHOT")
	switch {
	case out == "":
		out = filepath.Join(t.TempDir(), "ui.png")
	case !filepath.IsAbs(out):
		out = filepath.Join(repoRoot(t), out)
	}
	e := newEnv(t, 3, nil)
	cs := e.Client(e.Leader(), false)
	now := time.Now()
	mustLease(t, cs, "kube-system", "kube-controller-manager", "cp-1_4f9e2a", 120, now.Add(-3*time.Second))
	mustLease(t, cs, "kube-system", "kube-scheduler", "cp-2_81c0d3", 90, now.Add(-11*time.Second))
	mustLease(t, cs, "payments", "ledger-writer", "ledger-7d9f-x2", 30, now.Add(-2*time.Minute))
	mustLease(t, cs, "payments", "settlement", "", 0, time.Time{})
	mustLease(t, cs, "search", "indexer", "indexer-0", 180, now.Add(-20*time.Second))
	mustLease(t, cs, "search", "compactor", "compactor-1", 60, now.Add(-time.Second))

	// A few hand-overs for the indexer.
	for _, h := range []string{"indexer-1", "indexer-2", "indexer-0"} {
		l, err := cs.CoordinationV1().Leases("search").Get(context.Background(), "indexer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To(h), micro(time.Now()), micro(time.Now())
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		if _, err := cs.CoordinationV1().Leases("search").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Three apiservers of a rolling upgrade campaign for a Lease whose
	// holder stopped renewing: the coordinated election hands it to the
	// one of the oldest emulationVersion, then the lowest binaryVersion.
	mustLease(t, cs, "kube-system", "leader-election-controller", "apiserver-b", 15, now.Add(-50*time.Second))
	for _, c := range []struct{ name, binary, emulation string }{
		{"apiserver-a", "1.32.1", "1.31.0"}, {"apiserver-b", "1.32.1", "1.32.0"}, {"apiserver-c", "1.31.4", "1.31.0"},
	} {
		lc := &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: c.name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{
				LeaseName: "leader-election-controller", RenewTime: micro(time.Now()),
				BinaryVersion: c.binary, EmulationVersion: c.emulation, Strategy: coordinationv1.OldestEmulationVersion,
			},
		}
		if _, err := cs.CoordinationV1beta1().LeaseCandidates("kube-system").Create(context.Background(), lc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // some history before the election
	leader := e.Leader()
	ctx, cancel := context.WithCancel(context.Background())
	ctl := election.New(election.Config{Store: e.store(leader), Node: e.Nodes[leader].Raft(), LeaseDuration: time.Minute})
	done := make(chan struct{})
	go func() { ctl.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	key := "kube-system/leader-election-controller"
	tb := openTab(t, e.pageURL(e.Follower())+"#lease="+url.QueryEscape(key), tabOptions{})
	tb.waitFor("the page", `document.querySelectorAll("#d-history li").length >= 2 && document.getElementById("d-election").dataset.pick === "apiserver-c" && document.querySelectorAll("#members tbody tr").length === 3`, 20*time.Second)
	time.Sleep(2500 * time.Millisecond) // the clock's offset settles, the timeline grows

	sctx, scancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer scancel()
	png, err := chromedp.Run(sctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		r, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
		if err != nil {
			return nil, err
		}
		return r.Data, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := pngpkg.DecodeConfig(bytes.NewReader(png))
	if err != nil || img.Width < 800 || img.Height < 600 {
		t.Fatalf("the screenshot: %dx%d, %v", img.Width, img.Height, err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes, %dx%d)", out, len(png), img.Width, img.Height)
}

// repoRoot is the directory holding go.mod, above the test's.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
