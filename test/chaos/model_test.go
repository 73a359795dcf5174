package chaos

import (
	"strings"
	"testing"
)

// The checkers themselves must catch what they claim to catch: these run
// without any process, in the default `go test ./...`.

func TestModelAcceptsLinearizableHistory(t *testing.T) {
	ops := []*op{
		{Client: 0, Kind: opCreate, Key: "k", Holder: "a", Call: 0, Return: 10, Outcome: okCreated, RV: 5},
		{Client: 1, Kind: opGet, Key: "k", Call: 11, Return: 20, Outcome: okOK, RV: 5, Got: "a"},
		{Client: 1, Kind: opUpdate, Key: "k", Holder: "b", ExpRV: 5, Call: 21, Return: -1, Outcome: okUnknown},
		{Client: 0, Kind: opUpdate, Key: "k", Holder: "c", ExpRV: 5, Call: 22, Return: 30, Outcome: okConflict},
		{Client: 0, Kind: opGet, Key: "k", Call: 31, Return: 40, Outcome: okOK, RV: 9, Got: "b"},
		{Client: 0, Kind: opDelete, Key: "k", ExpRV: 9, Call: 41, Return: 50, Outcome: okOK},
		{Client: 1, Kind: opList, Call: 51, Return: 60, Outcome: okOK},
	}
	if a := checkLinearizable(ops, []string{"k"}, t.TempDir(), 0); len(a) != 0 {
		t.Fatalf("anomalies in a linearizable history: %v", a)
	}
}

func TestModelCatchesStaleReadAndLostWrite(t *testing.T) {
	stale := []*op{
		{Client: 0, Kind: opCreate, Key: "k", Holder: "a", Call: 0, Return: 10, Outcome: okCreated, RV: 5},
		{Client: 0, Kind: opUpdate, Key: "k", Holder: "b", ExpRV: 5, Call: 11, Return: 20, Outcome: okOK, RV: 6},
		{Client: 1, Kind: opGet, Key: "k", Call: 21, Return: 30, Outcome: okOK, RV: 5, Got: "a"},
	}
	dir := t.TempDir()
	a := checkLinearizable(stale, []string{"k"}, dir, 0)
	if len(a) != 1 || !strings.Contains(a[0], dir) {
		t.Fatalf("stale read not reported with a visualisation: %v", a)
	}
	lost := []*op{
		{Client: 0, Kind: opCreate, Key: "k", Holder: "a", Call: 0, Return: 10, Outcome: okCreated, RV: 5},
		{Client: -1, Kind: opList, Call: 21, Return: 30, Outcome: okOK}, // final read: gone
	}
	if a := checkLinearizable(lost, []string{"k"}, t.TempDir(), 0); len(a) != 1 {
		t.Fatalf("lost acknowledged create not reported: %v", a)
	}
	twoWinners := []*op{
		{Client: 0, Kind: opCreate, Key: "k", Holder: "a", Call: 0, Return: 10, Outcome: okCreated, RV: 5},
		{Client: 1, Kind: opUpdate, Key: "k", Holder: "b", ExpRV: 5, Call: 11, Return: 20, Outcome: okOK, RV: 6},
		{Client: 2, Kind: opUpdate, Key: "k", Holder: "c", ExpRV: 5, Call: 11, Return: 20, Outcome: okOK, RV: 7},
	}
	if a := checkLinearizable(twoWinners, []string{"k"}, t.TempDir(), 0); len(a) != 1 {
		t.Fatalf("two CAS winners from one RV not reported: %v", a)
	}
}

func TestWatchCheckerCatchesGapsDuplicatesAndBookmarks(t *testing.T) {
	writes := []*op{
		{Kind: opCreate, Key: "k", Holder: "a", Outcome: okCreated, RV: 5},
		{Kind: opUpdate, Key: "k", Holder: "b", Outcome: okOK, RV: 6},
		{Kind: opUpdate, Key: "k", Holder: "c", Outcome: okOK, RV: 7},
	}
	ev := func(rv uint64, h string) watchEvent { return watchEvent{Type: "MODIFIED", RV: rv, Key: "k", Holder: h} }
	cases := map[string]struct {
		s    session
		want string
	}{
		"good":      {session{From: 4, Events: []watchEvent{ev(5, "a"), ev(6, "b"), {Type: "BOOKMARK", RV: 6}, ev(7, "c")}}, ""},
		"gap":       {session{From: 4, Events: []watchEvent{ev(5, "a"), ev(7, "c")}}, "gap"},
		"duplicate": {session{From: 4, Events: []watchEvent{ev(5, "a"), ev(5, "a")}}, "not after"},
		"resume":    {session{From: 5, Events: []watchEvent{ev(7, "c")}}, "gap"},
		"old event": {session{From: 6, Events: []watchEvent{ev(5, "a")}}, "not after"},
		"bookmark":  {session{From: 4, Events: []watchEvent{ev(5, "a"), {Type: "BOOKMARK", RV: 7}}}, "never delivered"},
		"behind":    {session{From: 4, Events: []watchEvent{ev(5, "a"), ev(6, "b"), {Type: "BOOKMARK", RV: 5}}}, "behind"},
	}
	for name, tc := range cases {
		s := tc.s
		a, _, _ := checkWatches([]*watcher{{sessions: []*session{&s}}}, writes)
		if tc.want == "" && len(a) != 0 || tc.want != "" && (len(a) == 0 || !strings.Contains(strings.Join(a, ";"), tc.want)) {
			t.Errorf("%s: anomalies %v, want one mentioning %q", name, a, tc.want)
		}
	}
}
