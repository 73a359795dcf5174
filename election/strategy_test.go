package election

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	oev = coordinationv1.OldestEmulationVersion
	sx  = Strategy("example.com/x")
	sy  = Strategy("example.com/y")
	sz  = Strategy("example.com/z")
)

// alpha is a candidate written through v1alpha1 with the list prefs.
func alpha(name string, prefs ...Strategy) preference {
	return preference{Name: name, BinaryVersion: "1.31.0", Strategy: prefs[0], Preferred: prefs}
}

// beta is a candidate written through v1beta1 (or v1alpha2).
func beta(name, binaryVersion string, s Strategy) preference {
	return preference{Name: name, BinaryVersion: binaryVersion, Strategy: s}
}

func TestResolveStrategy(t *testing.T) {
	tests := []struct {
		name    string
		prefs   []preference
		want    Strategy
		wantErr string // substring; "" = no error
	}{
		// The seeds' three v1alpha1 rules.
		{name: "all first choices X -> X",
			prefs: []preference{alpha("a", sx), alpha("b", sx), alpha("c", sx, sy)}, want: sx},
		{name: "all first choices OldestEmulationVersion",
			prefs: []preference{alpha("a", oev), alpha("b", oev)}, want: oev},
		{name: "[X] vs [Y, X] -> Y",
			prefs: []preference{alpha("a", sx), alpha("b", sy, sx)}, want: sy},
		{name: "[Y, X] vs [X] -> Y, order of candidates irrelevant",
			prefs: []preference{alpha("b", sy, sx), alpha("a", sx)}, want: sy},
		{name: "[X, Y] vs [Y, X] is a user error",
			prefs: []preference{alpha("a", sx, sy), alpha("b", sy, sx)}, wantErr: "contradict"},

		// More of the graph rule.
		{name: "chain [Z, Y] + [Y, X] + [X] -> Z",
			prefs: []preference{alpha("a", sx), alpha("b", sy, sx), alpha("c", sz, sy)}, want: sz},
		{name: "[X] vs [Y] has two roots",
			prefs: []preference{alpha("a", sx), alpha("b", sy)}, wantErr: `"example.com/x", "example.com/y" are each preferred`},
		{name: "[X, Y] vs [Z] has two roots",
			prefs: []preference{alpha("a", sx, sy), alpha("b", sz)}, wantErr: "each preferred"},
		{name: "three-way cycle",
			prefs: []preference{alpha("a", sx, sy), alpha("b", sy, sz), alpha("c", sz, sx)}, wantErr: "conflicting preferred strategies"},
		{name: "a root above a cycle is still an error",
			prefs: []preference{alpha("a", sz, sx), alpha("b", sx, sy), alpha("c", sy, sx)}, wantErr: "contradict"},
		{name: "a list repeating a strategy is a cycle",
			prefs: []preference{alpha("a", sx, sx)}, wantErr: "contradict"},
		{name: "single v1alpha1 candidate: its first choice",
			prefs: []preference{alpha("a", sy, sx, oev)}, want: sy},

		// Mixed v1alpha1 and v1beta1: single strategies count as [strategy]
		// in the graph rule, whatever their binaryVersion.
		{name: "mixed: v1beta1 X plus v1alpha1 [Y, X] -> Y",
			prefs: []preference{beta("a", "1.40.0", sx), alpha("b", sy, sx)}, want: sy},
		{name: "mixed: v1beta1 X plus v1alpha1 [X, Y] -> X",
			prefs: []preference{beta("a", "1.20.0", sx), alpha("b", sx, sy)}, want: sx},
		{name: "mixed: v1beta1 Y plus v1alpha1 [X] is two roots, not highest binaryVersion",
			prefs: []preference{beta("a", "1.40.0", sy), alpha("b", sx)}, wantErr: "each preferred"},
		{name: "mixed: v1beta1 Y plus v1alpha1 [X, Y] vs [Y, X]",
			prefs: []preference{beta("a", "1.40.0", sy), alpha("b", sx, sy), alpha("c", sy, sx)}, wantErr: "contradict"},

		// Empty.
		{name: "no candidates", prefs: nil, wantErr: "no candidates"},
		{name: "v1alpha1 candidate without a list",
			prefs: []preference{{Name: "a", Preferred: []Strategy{}}}, wantErr: "no candidate states a strategy"},
		{name: "v1beta1 candidate without a strategy",
			prefs: []preference{beta("a", "1.31.0", "")}, wantErr: "no candidate states a strategy"},

		// v1alpha2/v1beta1: the highest binaryVersion wins.
		{name: "v1beta1: same strategy everywhere",
			prefs: []preference{beta("a", "1.30.0", oev), beta("b", "1.31.0", oev), beta("c", "1.31.0", oev)}, want: oev},
		{name: "v1beta1: highest binaryVersion wins",
			prefs: []preference{beta("a", "1.30.0", oev), beta("b", "1.32.0", sx), beta("c", "1.31.0", sy)}, want: sx},
		{name: "v1beta1: semver order, not string order",
			prefs: []preference{beta("a", "1.9.0", sx), beta("b", "1.10.0", sy)}, want: sy},
		{name: "v1beta1: a pre-release is lower than its release",
			prefs: []preference{beta("a", "1.31.0-rc.1", sx), beta("b", "1.31.0", sy)}, want: sy},
		{name: "v1beta1: tolerant parsing (v prefix, short form)",
			prefs: []preference{beta("a", "v1.31", sx), beta("b", "1.30.9", sy)}, want: sx},
		{name: "v1beta1: unparsable binaryVersion counts as 0.0.0",
			prefs: []preference{beta("a", "garbage", sx), beta("b", "0.0.1", sy)}, want: sy},
		{name: "v1beta1: equal highest binaryVersion with different strategies is a user error",
			prefs:   []preference{beta("a", "1.30.0", oev), beta("b", "1.31.0", oev), beta("c", "1.31.0", sx)},
			wantErr: `candidates "b" and "c" have the same binaryVersion 1.31.0`},
		{name: "v1beta1: a disagreement below the highest binaryVersion does not matter",
			prefs: []preference{beta("a", "1.30.0", sx), beta("b", "1.30.0", sy), beta("c", "1.31.0", oev)}, want: oev},
		{name: "v1beta1: 1.31 and v1.31.0 are the same version",
			prefs: []preference{beta("a", "1.31", sx), beta("b", "v1.31.0", sy)}, wantErr: "same binaryVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveStrategy(tt.prefs)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("resolveStrategy = %q, want an error containing %q", got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolveStrategy: %v", err)
			}
			if got != tt.want {
				t.Fatalf("resolveStrategy = %q, want %q", got, tt.want)
			}
		})
	}
}

// The error text is stable: it is shown to users and compared across rounds
// to log a conflict once.
func TestResolveStrategyErrorIsDeterministic(t *testing.T) {
	prefs := []preference{alpha("a", sx, sy), alpha("b", sy, sx), alpha("c", sz, sx), alpha("d", sz)}
	_, first := resolveStrategy(prefs)
	if first == nil {
		t.Fatal("no error")
	}
	for i := 0; i < 50; i++ {
		// Rotate the input: map iteration and input order must not show.
		prefs = append(prefs[1:], prefs[0])
		_, err := resolveStrategy(prefs)
		if err == nil || err.Error() != first.Error() {
			t.Fatalf("error changed: %v, then %v", first, err)
		}
	}
}

func lc(name, emulation, binary string, created time.Time) *coordinationv1beta1.LeaseCandidate {
	return &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       coordinationv1beta1.LeaseCandidateSpec{EmulationVersion: emulation, BinaryVersion: binary, Strategy: oev},
	}
}

func TestPickOldestEmulationVersion(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	later := t0.Add(time.Second)
	tests := []struct {
		name  string
		cands []*coordinationv1beta1.LeaseCandidate
		want  string
	}{
		{"lowest emulationVersion wins", []*coordinationv1beta1.LeaseCandidate{
			lc("b", "1.31.0", "1.31.0", t0), lc("a", "1.30.0", "1.30.0", later), lc("c", "1.31.0", "1.31.0", t0)}, "a"},
		{"emulationVersion before binaryVersion", []*coordinationv1beta1.LeaseCandidate{
			lc("a", "1.31.0", "1.31.0", t0), lc("b", "1.30.0", "1.32.0", t0)}, "b"},
		{"then lowest binaryVersion", []*coordinationv1beta1.LeaseCandidate{
			lc("a", "1.30.0", "1.32.0", t0), lc("b", "1.30.0", "1.31.0", later)}, "b"},
		{"then oldest creationTimestamp", []*coordinationv1beta1.LeaseCandidate{
			lc("a", "1.31.0", "1.31.0", later), lc("b", "1.31.0", "1.31.0", t0)}, "b"},
		{"full tie: first listed", []*coordinationv1beta1.LeaseCandidate{
			lc("c", "1.31.0", "1.31.0", t0), lc("b", "1.31.0", "1.31.0", t0)}, "c"},
		{"unparsable versions are skipped", []*coordinationv1beta1.LeaseCandidate{
			lc("a", "", "1.30.0", t0), lc("b", "1.29.0", "bogus", t0), lc("c", "1.31.0", "1.31.0", later)}, "c"},
		{"tolerant parsing", []*coordinationv1beta1.LeaseCandidate{
			lc("a", "1.31", "1.31", t0), lc("b", "v1.30", "v1.31.0", later)}, "b"},
		{"nobody valid", []*coordinationv1beta1.LeaseCandidate{lc("a", "", "", t0)}, ""},
		{"nobody", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pickOldestEmulationVersion(tt.cands)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Fatalf("picked %q, want %q", name, tt.want)
			}
		})
	}
}

func TestParseTolerant(t *testing.T) {
	for in, want := range map[string]string{
		"1.30.0": "1.30.0", "1.30": "1.30.0", "1": "1.0.0", "v1.31.2": "1.31.2", " 1.31.0 ": "1.31.0",
		"01.030.04": "1.30.4", "1.31.0-alpha.1": "1.31.0-alpha.1", "1.31.0+build": "1.31.0+build",
	} {
		v, err := parseTolerant(in)
		if err != nil {
			t.Errorf("parseTolerant(%q): %v", in, err)
			continue
		}
		if v.String() != want {
			t.Errorf("parseTolerant(%q) = %s, want %s", in, v, want)
		}
	}
	for _, in := range []string{"", "x", "1.30-rc.1", "1.x.0", "1.2.3.4"} {
		if v, err := parseTolerant(in); err == nil {
			t.Errorf("parseTolerant(%q) = %s, want an error", in, v)
		}
	}
}
