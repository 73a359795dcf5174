package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/leasehold/leasehold/ui"
)

// jsCandidate is a candidate as assets/election.js reads it.
type jsCandidate struct {
	Name             string `json:"name"`
	BinaryVersion    string `json:"binaryVersion"`
	EmulationVersion string `json:"emulationVersion"`
	Strategy         string `json:"strategy,omitempty"`
	CreatedMs        int64  `json:"createdMs"`
	RenewMs          *int64 `json:"renewMs"`
	PingMs           *int64 `json:"pingMs"`
}

func jc(name, emulation, binary string, created int64) jsCandidate {
	return jsCandidate{Name: name, EmulationVersion: emulation, BinaryVersion: binary, Strategy: "OldestEmulationVersion", CreatedMs: created}
}

// TestElectionJS runs assets/election.js in the browser over the cases of
// election/strategy_test.go (the Go picker's own table), so that the page
// and the controller order candidates alike, including what the API does
// not let a client write (tolerant and unparsable versions). TestPage checks
// the two against each other on a running controller.
func TestElectionJS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(ui.Handler())
	defer srv.Close()
	tb := openTab(t, srv.URL+"/ui/", tabOptions{})
	run := func(fn string, arg any) string {
		t.Helper()
		b, err := json.Marshal(arg)
		if err != nil {
			t.Fatal(err)
		}
		return eval[string](tb, fmt.Sprintf(`(async () => { const m = await import("/ui/election.js"); return JSON.stringify((%s)(m, %s)); })()`, fn, b))
	}

	const t0, later = 1767225600000, 1767225601000
	picks := []struct {
		name  string
		cands []jsCandidate
		want  string
	}{
		{"lowest emulationVersion wins", []jsCandidate{jc("b", "1.31.0", "1.31.0", t0), jc("a", "1.30.0", "1.30.0", later), jc("c", "1.31.0", "1.31.0", t0)}, "a"},
		{"emulationVersion before binaryVersion", []jsCandidate{jc("a", "1.31.0", "1.31.0", t0), jc("b", "1.30.0", "1.32.0", t0)}, "b"},
		{"then lowest binaryVersion", []jsCandidate{jc("a", "1.30.0", "1.32.0", t0), jc("b", "1.30.0", "1.31.0", later)}, "b"},
		{"then oldest creationTimestamp", []jsCandidate{jc("a", "1.31.0", "1.31.0", later), jc("b", "1.31.0", "1.31.0", t0)}, "b"},
		{"full tie: first listed", []jsCandidate{jc("c", "1.31.0", "1.31.0", t0), jc("b", "1.31.0", "1.31.0", t0)}, "c"},
		{"unparsable versions are skipped", []jsCandidate{jc("a", "", "1.30.0", t0), jc("b", "1.29.0", "bogus", t0), jc("c", "1.31.0", "1.31.0", later)}, "c"},
		{"tolerant parsing", []jsCandidate{jc("a", "1.31", "1.31", t0), jc("b", "v1.30", "v1.31.0", later)}, "b"},
		{"nobody valid", []jsCandidate{jc("a", "", "", t0)}, ""},
		{"nobody", []jsCandidate{}, ""},
		{"pre-releases: numeric identifiers compare as numbers", []jsCandidate{jc("a", "1.31.0-alpha.10", "1.31.0", t0), jc("b", "1.31.0-alpha.2", "1.31.0", t0)}, "b"},
		{"pre-release before release", []jsCandidate{jc("a", "1.31.0", "1.31.0", t0), jc("b", "1.31.0-rc.1", "1.31.0", later)}, "b"},
		{"build metadata does not count", []jsCandidate{jc("a", "1.31.0+zzz", "1.31.0", later), jc("b", "1.31.0+aaa", "1.31.0", t0)}, "b"},
	}
	for _, tt := range picks {
		got := run(`(m, cs) => { const p = m.pickOldestEmulationVersion(cs); return p ? p.name : ""; }`, tt.cands)
		if got != jsString(tt.want) {
			t.Errorf("%s: picked %s, want %q", tt.name, got, tt.want)
		}
	}

	tolerant := map[string]string{
		"1.30.0": "1.30.0", "1.30": "1.30.0", "1": "1.0.0", "v1.31.2": "1.31.2", " 1.31.0 ": "1.31.0",
		"01.030.04": "1.30.4", "1.31.0-alpha.1": "1.31.0-alpha.1", "1.31.0+build": "1.31.0+build",
		"": "", "x": "", "1.30-rc.1": "", "1.x.0": "", "1.2.3.4": "", "1.2.3-01": "", "18446744073709551616.0.0": "",
	}
	for in, want := range tolerant {
		got := run(`(m, s) => { const v = m.parseTolerant(s); return v ? m.versionString(v) : ""; }`, in)
		if got != jsString(want) {
			t.Errorf("parseTolerant(%q) = %s, want %q", in, got, want)
		}
	}

	// The v1beta1 strategy rule: the highest binaryVersion's strategy.
	strategies := []struct {
		name  string
		cands []jsCandidate
		want  string
	}{
		{"highest binaryVersion wins", []jsCandidate{
			{Name: "a", BinaryVersion: "1.30.0", Strategy: "example.com/x"}, {Name: "b", BinaryVersion: "1.31.0", Strategy: "OldestEmulationVersion"}}, "OldestEmulationVersion"},
		{"a tie at the highest is a conflict", []jsCandidate{
			{Name: "a", BinaryVersion: "1.31.0", Strategy: "example.com/x"}, {Name: "b", BinaryVersion: "1.31.0", Strategy: "OldestEmulationVersion"}}, "error"},
		{"no strategy", []jsCandidate{{Name: "a", BinaryVersion: "1.31.0"}}, "error"},
	}
	for _, tt := range strategies {
		got := run(`(m, cs) => { const r = m.resolveStrategy(cs); return r.error ? "error" : r.strategy; }`, tt.cands)
		if got != jsString(tt.want) {
			t.Errorf("%s: %s, want %q", tt.name, got, tt.want)
		}
	}

	// Who counts: renewed within GCAge, no ping left unanswered for the
	// ping window, versions that parse.
	now := time.Now().UnixMilli()
	at := func(d time.Duration) *int64 { v := now - d.Milliseconds(); return &v }
	states := []struct {
		c    jsCandidate
		want string
	}{
		{jsCandidate{Name: "fresh", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0", RenewMs: at(time.Second)}, "eligible"},
		{jsCandidate{Name: "never-renewed", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0"}, "stale"},
		{jsCandidate{Name: "old", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0", RenewMs: at(31 * time.Minute)}, "stale"},
		{jsCandidate{Name: "ignored-ping", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0", RenewMs: at(time.Minute), PingMs: at(6 * time.Second)}, "ignored"},
		{jsCandidate{Name: "pinged-just-now", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0", RenewMs: at(time.Minute), PingMs: at(time.Second)}, "eligible"},
		{jsCandidate{Name: "answered", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0", RenewMs: at(time.Second), PingMs: at(6 * time.Second)}, "eligible"},
		{jsCandidate{Name: "bad-version", BinaryVersion: "x", EmulationVersion: "1.31.0", RenewMs: at(time.Second)}, "invalid"},
	}
	for _, tt := range states {
		got := run(fmt.Sprintf(`(m, c) => m.candidateState(c, %d)`, now), tt.c)
		if got != jsString(tt.want) {
			t.Errorf("candidate %s: %s, want %q", tt.c.Name, got, tt.want)
		}
	}
}
