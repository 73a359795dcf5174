package validation

import (
	"testing"

	semver "github.com/blang/semver/v4"
)

// FuzzParseStrictSemver checks the parsing of a LeaseCandidate's
// binaryVersion and emulationVersion against kube-apiserver's,
// blang/semver's Parse: the same strings accepted, as the same version,
// and never a panic.
func FuzzParseStrictSemver(f *testing.F) {
	for _, s := range []string{
		"1.30.0", "1.31.0-alpha.1", "1.31.0+build", "1.31.0-rc.1+build.5", "0.0.0", "", "x", "1.2", "1.2.3.4",
		"01.2.3", "1.02.3", "1.2.03", "1.2.3-01", "1.2.3-0a", "1.2.3-a..b", "1.2.3-", "1.2.3+", "1.2.3+01",
		"1.2.3-99999999999999999999", "99999999999999999999.0.0", "v1.2.3", " 1.2.3", "1.2.3 ", "1.2.3-a+b+c",
		"1.2.3-é", "1.2.3+-", "1.2.3--", "18446744073709551615.0.0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseStrictSemver(s)
		want, werr := semver.Parse(s)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseStrictSemver(%q) = %v, %v; blang/semver: %v, %v", s, v, err, want, werr)
		}
		if err == nil && v.String() != want.String() {
			t.Fatalf("parseStrictSemver(%q) = %s; blang/semver: %s", s, v, want)
		}
	})
}
