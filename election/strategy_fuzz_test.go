package election

import (
	"testing"

	semver "github.com/blang/semver/v4"
)

// FuzzParseTolerant checks parseTolerant against what it follows,
// blang/semver's ParseTolerant (kube-apiserver's election controller
// parses candidates' versions with it): the same versions accepted, read
// as the same version; never a panic; and a version read prints as one
// that reads back the same.
func FuzzParseTolerant(f *testing.F) {
	for _, s := range []string{
		"1.30.0", "1.30", "1", "v1.31.2", " 1.31.0 ", "01.030.04", "1.31.0-alpha.1", "1.31.0+build",
		"", "x", "1.30-rc.1", "1.x.0", "1.2.3.4", "vv1.2.3", "1.2.3-01", "1.2.3+", "1.2.3-", "1..3",
		"1.2.-rc", "1.2.00-rc", "0.0.+0", "00", "1.2.3-a.b+c.d", "99999999999999999999.0.0", "\t1.2\n",
		"1.2.3-0a", "1.2.3-alpha..1", "1.2.3+build.01", "v", ".", "-",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseTolerant(s)
		want, werr := semver.ParseTolerant(s)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseTolerant(%q) = %v, %v; blang/semver: %v, %v", s, v, err, want, werr)
		}
		if err != nil {
			return
		}
		if v.String() != want.String() {
			t.Fatalf("parseTolerant(%q) = %s; blang/semver: %s", s, v, want)
		}
		again, err := parseTolerant(v.String())
		if err != nil || again.String() != v.String() {
			t.Fatalf("parseTolerant(%q) = %s, which reads back as %v, %v", s, v, again, err)
		}
	})
}
