package election

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	"k8s.io/apimachinery/pkg/util/version"
)

// Strategy is a coordinated lease strategy.
type Strategy = coordinationv1.CoordinatedLeaseStrategy

// preference is what strategy resolution needs of one candidate.
type preference struct {
	Name          string
	BinaryVersion string
	// Strategy is the stored (v1alpha2/v1beta1) strategy.
	Strategy Strategy
	// Preferred is the ordered v1alpha1 list of a candidate written through
	// v1alpha1; nil for candidates written in v1alpha2 or v1beta1.
	Preferred []Strategy
}

// errNoCandidates: nothing to resolve.
var errNoCandidates = errors.New("no candidates")

// resolveStrategy picks the strategy of a Lease from its candidates'
// preferences (see the package documentation): the v1alpha1 graph rule when
// any candidate gave a v1alpha1 list (single strategies count as
// [strategy]), else the strategy of the highest binaryVersion. An error is a
// user error (or no candidate states a strategy).
func resolveStrategy(prefs []preference) (Strategy, error) {
	if len(prefs) == 0 {
		return "", errNoCandidates
	}
	for _, p := range prefs {
		if p.Preferred != nil {
			return resolveGraph(prefs)
		}
	}
	return resolveHighestBinaryVersion(prefs)
}

// resolveGraph is the v1alpha1 rule: edges pref[i] -> pref[i+1] over every
// candidate's list, a topological order with exactly one root, whose first
// element wins. A cycle or more than one root is an error.
func resolveGraph(prefs []preference) (Strategy, error) {
	graph := map[Strategy][]Strategy{}
	inDegree := map[Strategy]int{}
	for _, p := range prefs {
		list := p.Preferred
		if list == nil && p.Strategy != "" {
			list = []Strategy{p.Strategy}
		}
		for i, s := range list {
			if _, ok := inDegree[s]; !ok {
				inDegree[s] = 0
			}
			if i+1 < len(list) {
				graph[s] = append(graph[s], list[i+1])
			}
		}
	}
	if len(inDegree) == 0 {
		return "", errors.New("no candidate states a strategy")
	}
	for _, next := range graph {
		for _, n := range next {
			inDegree[n]++
		}
	}
	var roots []Strategy
	for s, d := range inDegree {
		if d == 0 {
			roots = append(roots, s)
		}
	}
	slices.Sort(roots)
	if len(roots) > 1 {
		return "", fmt.Errorf("conflicting preferred strategies: %s are each preferred by some candidate and none is preferred over the others (%s)",
			quoteList(roots), describePrefs(prefs))
	}
	// Kahn's algorithm from the single root; whatever is left is on a cycle.
	queue := roots
	sorted := 0
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		sorted++
		for _, n := range graph[s] {
			inDegree[n]--
			if inDegree[n] == 0 {
				queue = append(queue, n)
			}
		}
	}
	if sorted != len(inDegree) {
		var cyc []Strategy
		for s, d := range inDegree {
			if d > 0 {
				cyc = append(cyc, s)
			}
		}
		slices.Sort(cyc)
		return "", fmt.Errorf("conflicting preferred strategies: the candidates' orders of %s contradict each other (%s)",
			quoteList(cyc), describePrefs(prefs))
	}
	return roots[0], nil
}

// resolveHighestBinaryVersion is the v1alpha2/v1beta1 rule: the strategy of
// the candidate with the highest binaryVersion (unparsable counts as 0.0.0);
// different strategies at that version are an error.
func resolveHighestBinaryVersion(prefs []preference) (Strategy, error) {
	var (
		best    *version.Version
		winners []preference
	)
	for _, p := range prefs {
		if p.Strategy == "" {
			continue
		}
		v := parseVersionOrZero(p.BinaryVersion)
		switch c := compareVersions(v, best); {
		case best == nil || c > 0:
			best, winners = v, []preference{p}
		case c == 0:
			winners = append(winners, p)
		}
	}
	if len(winners) == 0 {
		return "", errors.New("no candidate states a strategy")
	}
	for _, w := range winners[1:] {
		if w.Strategy != winners[0].Strategy {
			return "", fmt.Errorf("conflicting strategies: candidates %q and %q have the same binaryVersion %s but ask for %q and %q",
				winners[0].Name, w.Name, best, winners[0].Strategy, w.Strategy)
		}
	}
	return winners[0].Strategy, nil
}

func quoteList(ss []Strategy) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// describePrefs lists the candidates' preferences for error messages, in a
// stable order.
func describePrefs(prefs []preference) string {
	parts := make([]string, 0, len(prefs))
	for _, p := range prefs {
		list := p.Preferred
		if list == nil {
			list = []Strategy{p.Strategy}
		}
		parts = append(parts, fmt.Sprintf("%s: [%s]", p.Name, quoteList(list)))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// parseTolerant parses a version as blang/semver's ParseTolerant (which
// kube-apiserver's controller uses) does: surrounding space and a leading
// "v" are dropped, leading zeros of the numeric parts are dropped, and a
// version with fewer than three parts is padded with zeros ("1.30" is
// 1.30.0) unless its last part carries pre-release or build metadata.
func parseTolerant(s string) (*version.Version, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "v")
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 3 {
		if strings.ContainsAny(parts[len(parts)-1], "+-") {
			return nil, fmt.Errorf("short version %q cannot carry pre-release or build metadata", s)
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
	}
	// Each part whole, as ParseTolerant does, the third with its
	// pre-release and build suffixes: "1.2.-rc" is 1.2.0-rc.
	for i, p := range parts {
		parts[i] = trimZeros(p)
	}
	return version.ParseSemantic(strings.Join(parts, "."))
}

func trimZeros(p string) string {
	if len(p) <= 1 {
		return p
	}
	t := strings.TrimLeft(p, "0")
	if t == "" || t[0] < '0' || t[0] > '9' {
		t = "0" + t
	}
	return t
}

var zeroVersion = version.MustParseSemantic("0.0.0")

// parseVersionOrZero is parseTolerant with 0.0.0 for what does not parse.
func parseVersionOrZero(s string) *version.Version {
	v, err := parseTolerant(s)
	if err != nil {
		return zeroVersion
	}
	return v
}

// compareVersions orders two versions by semver precedence; nil sorts
// first.
func compareVersions(a, b *version.Version) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case a.LessThan(b):
		return -1
	case b.LessThan(a):
		return 1
	}
	return 0
}

// compareCandidates is kube-apiserver's compare for OldestEmulationVersion:
// negative when a is the better leader. Lower emulationVersion, then lower
// binaryVersion, then older creationTimestamp; on a full tie a (the one
// listed first) wins.
//
// The lease view (ui/assets/election.js) mirrors this ordering, with
// parseTolerant, pickOldestEmulationVersion and resolveHighestBinaryVersion,
// to show which candidate the election picks: change it with them (ui's
// TestElectionJS and TestPage hold the two together).
func compareCandidates(a, b *coordinationv1beta1.LeaseCandidate) int {
	if c := compareVersions(parseVersionOrZero(a.Spec.EmulationVersion), parseVersionOrZero(b.Spec.EmulationVersion)); c != 0 {
		return c
	}
	if c := compareVersions(parseVersionOrZero(a.Spec.BinaryVersion), parseVersionOrZero(b.Spec.BinaryVersion)); c != 0 {
		return c
	}
	if a.CreationTimestamp.After(b.CreationTimestamp.Time) {
		return 1
	}
	return -1
}

// validForOldestEmulationVersion: both versions parse.
func validForOldestEmulationVersion(c *coordinationv1beta1.LeaseCandidate) bool {
	if _, err := parseTolerant(c.Spec.EmulationVersion); err != nil {
		return false
	}
	_, err := parseTolerant(c.Spec.BinaryVersion)
	return err == nil
}

// pickOldestEmulationVersion returns the best leader among cands (in list
// order) by the OldestEmulationVersion strategy, or nil when no candidate
// has parseable versions.
func pickOldestEmulationVersion(cands []*coordinationv1beta1.LeaseCandidate) *coordinationv1beta1.LeaseCandidate {
	var best *coordinationv1beta1.LeaseCandidate
	for _, c := range cands {
		if !validForOldestEmulationVersion(c) {
			continue
		}
		if best == nil || compareCandidates(best, c) > 0 {
			best = c
		}
	}
	return best
}
