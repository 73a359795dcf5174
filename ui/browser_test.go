package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium; the tests drive it headless.
const chromiumPath = "/usr/bin/chromium"

var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// mustBrowser returns the context of one headless Chromium shared by the
// package's tests, started on first use. Without Chromium the test fails
// (it is part of make test).
func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("the lease view's tests need Chromium at %s: apt-get install -y chromium", chromiumPath)
	}
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "leasehold-ui-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		// The flags keep Chromium off the network: without the background
		// ones it tries to reach Google's services, and this machine's
		// closed network refuses those connections.
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromiumPath),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true),
			chromedp.Flag("disable-default-apps", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-background-timer-throttling", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.Flag("metrics-recording-only", true),
			chromedp.WindowSize(1400, 900),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		browser.ctx = bctx
		browser.cancel = func() {
			bcancel()
			acancel()
			_ = os.RemoveAll(dir)
		}
		// The first Run starts the browser; it must not carry a timeout.
		browser.err = chromedp.Do(bctx)
	})
	if browser.err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, browser.err)
	}
	return browser.ctx
}

// tab is one browser tab on the page under test.
type tab struct {
	t   *testing.T
	ctx context.Context
}

// tabOptions change how a tab opens the page.
type tabOptions struct {
	// shiftClock moves the page's Date (now and new Date()) by this much,
	// as a browser whose clock is wrong would show.
	shiftClock time.Duration
}

// openTab opens url in a new tab with its own storage, and fails the test
// on any exception the page throws. The tab closes when the test ends.
func openTab(t *testing.T, url string, o tabOptions) *tab {
	t.Helper()
	bctx := mustBrowser(t)
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tb := &tab{t: t, ctx: ctx}
	// Create the target, so that the console and the script below apply
	// from the first document on.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var exceptions []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			if m.IsException() {
				exceptions = append(exceptions, m.String())
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("the page threw: %s", e)
		}
	})
	if o.shiftClock != 0 {
		script := fmt.Sprintf(clockShift, o.shiftClock.Milliseconds())
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: script}); err != nil {
			t.Fatal(err)
		}
	}
	tctx, tcancel := context.WithTimeout(ctx, 20*time.Second)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	return tb
}

// clockShift replaces the page's Date with one whose clock is off by %d ms.
const clockShift = `(() => {
  const Real = Date, shift = %d;
  class Shifted extends Real {
    constructor(...a) { if (a.length === 0) super(Real.now() + shift); else super(...a); }
    static now() { return Real.now() + shift; }
  }
  globalThis.Date = Shifted;
})();`

// eval runs a JavaScript expression in the page and decodes its value.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls expr (a boolean JavaScript expression) every 10 ms until it
// is true, failing the test after timeout. It returns how long it took.
func (tb *tab) waitFor(what, expr string, timeout time.Duration) time.Duration {
	tb.t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		// An error is retried: a form that navigates (the namespace
		// scope) destroys the context an evaluation ran in.
		if time.Now().After(deadline) {
			if err != nil {
				tb.t.Fatalf("waiting for %s: %v", what, err)
			}
			tb.t.Fatalf("%s: not within %v\n%s", what, timeout, tb.state())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// state describes the page for a failure message.
func (tb *tab) state() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
  conn: document.getElementById("conn").textContent + " " + document.getElementById("conn").title,
  dataset: {...document.documentElement.dataset},
  banner: document.getElementById("banner").hidden ? "" : document.getElementById("banner").innerText,
  login: !document.getElementById("login").hidden,
  rows: [...document.querySelectorAll("#rows .row")].slice(0, 10).map(r => r.dataset.key + " " + r.dataset.status + " " + r.innerText.replace(/\s+/g, " ")),
  history: [...document.querySelectorAll("#d-history li")].map(l => l.innerText.replace(/\s+/g, " ")),
  viewport: (() => { const v = document.getElementById("viewport"), r = v.getBoundingClientRect(), l = document.querySelector("#rows .row:last-child");
    return {top: r.top, bottom: r.bottom, scrollTop: v.scrollTop, scrollHeight: v.scrollHeight, clientHeight: v.clientHeight,
      last: l && l.dataset.key, lastTop: l && l.getBoundingClientRect().top, lastBottom: l && l.getBoundingClientRect().bottom}; })(),
})`))
	if err != nil {
		return "(page state unavailable: " + err.Error() + ")"
	}
	return "page: " + s
}

// row is what a test reads of one table row.
type row struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	LeftMs *int64 `json:"leftMs"`
	Holder string `json:"holder"`
	Left   string `json:"left"`
}

// rowOf reads the row of the Lease key ("namespace/name"); ok is false
// when the row is not in the DOM.
func rowOf(tb *tab, key string) (row, bool) {
	tb.t.Helper()
	js := fmt.Sprintf(`(() => {
  const r = document.querySelector(%s);
  if (!r) return "";
  return JSON.stringify({key: r.dataset.key, status: r.dataset.status,
    leftMs: r.dataset.leftMs === undefined ? null : Number(r.dataset.leftMs),
    holder: r.querySelector(".holder span").textContent, left: r.querySelector(".left").textContent});
})()`, rowSelector(key))
	s := eval[string](tb, js)
	if s == "" {
		return row{}, false
	}
	var r row
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		tb.t.Fatal(err)
	}
	return r, true
}

// rowSelector is the CSS selector of a Lease's row, as a JavaScript string.
func rowSelector(key string) string {
	return jsString(`#rows .row[data-key="` + key + `"]`)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// reload reloads the page in the tab.
func (tb *tab) reload() {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		tb.t.Fatalf("reload: %v", err)
	}
}

// click clicks the first element matching the CSS selector sel.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(() => { document.querySelector(%s).click(); return true; })()`, jsString(sel)))
}

// contains reports whether s contains every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
