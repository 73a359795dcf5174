package validation

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

// Detail strings of the LeaseCandidate rules, spelled out.
const (
	configMapKeyMsg   = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`
	namePartMsg       = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	oevRequiredDetail = "must be specified when `strategy` is 'OldestEmulationVersion'"
	semverDetail      = "must be a valid semantic version"
	versionOrder      = "must be greater than or equal to `emulationVersion`"
)

var lcRenew = metav1.NewMicroTime(time.Date(2024, 7, 1, 10, 0, 0, 0, time.UTC))

// newCandidateV1beta1 returns a valid v1beta1 LeaseCandidate, as the
// client-go helper creates it, with mods applied.
func newCandidateV1beta1(mods ...func(*coordinationv1beta1.LeaseCandidate)) *coordinationv1beta1.LeaseCandidate {
	c := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-a1b2", Namespace: "kube-system", ResourceVersion: "10"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName:        "kube-apiserver",
			RenewTime:        &lcRenew,
			BinaryVersion:    "1.33.0",
			EmulationVersion: "1.32.0",
			Strategy:         coordinationv1.OldestEmulationVersion,
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// asV1alpha2 is c in v1alpha2, which has the same fields and rules.
func asV1alpha2(c *coordinationv1beta1.LeaseCandidate) *coordinationv1alpha2.LeaseCandidate {
	return &coordinationv1alpha2.LeaseCandidate{
		ObjectMeta: *c.ObjectMeta.DeepCopy(),
		Spec: coordinationv1alpha2.LeaseCandidateSpec{
			LeaseName: c.Spec.LeaseName, PingTime: c.Spec.PingTime, RenewTime: c.Spec.RenewTime,
			BinaryVersion: c.Spec.BinaryVersion, EmulationVersion: c.Spec.EmulationVersion, Strategy: c.Spec.Strategy,
		},
	}
}

func newCandidateV1alpha1(mods ...func(*v1alpha1.LeaseCandidate)) *v1alpha1.LeaseCandidate {
	c := &v1alpha1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver-a1b2", Namespace: "kube-system", ResourceVersion: "10"},
		Spec: v1alpha1.LeaseCandidateSpec{
			LeaseName:           "kube-apiserver",
			RenewTime:           &lcRenew,
			BinaryVersion:       "1.31.0",
			EmulationVersion:    "1.31.0",
			PreferredStrategies: []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func lcStrategies(s ...string) []coordinationv1.CoordinatedLeaseStrategy {
	out := make([]coordinationv1.CoordinatedLeaseStrategy, len(s))
	for i := range s {
		out[i] = coordinationv1.CoordinatedLeaseStrategy(s[i])
	}
	return out
}

func withName(name string) func(*coordinationv1beta1.LeaseCandidate) {
	return func(c *coordinationv1beta1.LeaseCandidate) { c.Name = name }
}

func withVersions(binary, emulation string) func(*coordinationv1beta1.LeaseCandidate) {
	return func(c *coordinationv1beta1.LeaseCandidate) {
		c.Spec.BinaryVersion, c.Spec.EmulationVersion = binary, emulation
	}
}

func withStrategy(s string) func(*coordinationv1beta1.LeaseCandidate) {
	return func(c *coordinationv1beta1.LeaseCandidate) {
		c.Spec.Strategy = coordinationv1.CoordinatedLeaseStrategy(s)
	}
}

// TestValidateLeaseCandidate covers v1beta1 and v1alpha2 (each case runs
// against both).
func TestValidateLeaseCandidate(t *testing.T) {
	long := strings.Repeat("a", 254)
	cases := []struct {
		name string
		obj  *coordinationv1beta1.LeaseCandidate
		want []wantErr
	}{
		{name: "valid", obj: newCandidateV1beta1()},
		{name: "valid: uppercase and underscore in name", obj: newCandidateV1beta1(withName("Kube_APIServer.A-1"))},
		{name: "valid: trailing dash in name", obj: newCandidateV1beta1(withName("a-"))},
		{name: "valid: 253-character name", obj: newCandidateV1beta1(withName(long[:253]))},
		{name: "valid: no pingTime or renewTime", obj: newCandidateV1beta1(func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.RenewTime = nil })},
		{name: "valid: prefixed strategy without emulationVersion", obj: newCandidateV1beta1(withStrategy("example.com/custom"), withVersions("1.33.0", ""))},
		{name: "valid: equal versions", obj: newCandidateV1beta1(withVersions("1.33.0", "1.33.0"))},
		{name: "valid: pre-release emulation below release binary", obj: newCandidateV1beta1(withVersions("1.33.0", "1.33.0-rc.1"))},
		{name: "valid: build metadata ignored in order", obj: newCandidateV1beta1(withVersions("1.33.0+a", "1.33.0+b"))},

		{name: "name with slash", obj: newCandidateV1beta1(withName("a/b")), want: []wantErr{
			invalid(`metadata.name: Invalid value: "a/b": ` + configMapKeyMsg)}},
		{name: "name dot", obj: newCandidateV1beta1(withName(".")), want: []wantErr{
			invalid(`metadata.name: Invalid value: ".": must not be '.'`)}},
		{name: "name dot dot", obj: newCandidateV1beta1(withName("..")), want: []wantErr{
			invalid(`metadata.name: Invalid value: "..": must not be '..'`)}},
		{name: "name starting with dot dot", obj: newCandidateV1beta1(withName("..a")), want: []wantErr{
			invalid(`metadata.name: Invalid value: "..a": must not start with '..'`)}},
		{name: "name too long", obj: newCandidateV1beta1(withName(long)), want: []wantErr{
			invalid(`metadata.name: Invalid value: "` + long + `": must be no more than 253 characters`)}},
		{name: "no name", obj: newCandidateV1beta1(withName("")), want: []wantErr{
			required(`metadata.name: Required value: name or generateName is required`)}},
		{name: "bad generateName", obj: newCandidateV1beta1(func(c *coordinationv1beta1.LeaseCandidate) { c.GenerateName = "a b" }), want: []wantErr{
			invalid(`metadata.generateName: Invalid value: "a b": ` + configMapKeyMsg)}},
		{name: "no namespace", obj: newCandidateV1beta1(func(c *coordinationv1beta1.LeaseCandidate) { c.Namespace = "" }), want: []wantErr{
			required(`metadata.namespace: Required value`)}},

		{name: "no leaseName", obj: newCandidateV1beta1(func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.LeaseName = "" }), want: []wantErr{
			required(`spec.leaseName: Required value`)}},
		{name: "no binaryVersion", obj: newCandidateV1beta1(withVersions("", "1.32.0")), want: []wantErr{
			required(`spec.binaryVersion: Required value`)}},
		// An unparsable binaryVersion counts as 0.0.0 in the order check.
		{name: "binaryVersion with leading v", obj: newCandidateV1beta1(withVersions("v1.33.0", "1.32.0")), want: []wantErr{
			invalid(`spec.binaryVersion: Invalid value: "v1.33.0": ` + semverDetail),
			invalid(`spec.binaryVersion: Invalid value: "v1.33.0": ` + versionOrder)}},
		// An unparsable emulationVersion counts as missing for the strategy.
		{name: "emulationVersion not semver", obj: newCandidateV1beta1(withVersions("1.33.0", "1.30")), want: []wantErr{
			invalid(`spec.emulationVersion: Invalid value: "1.30": ` + semverDetail),
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail)}},
		{name: "binaryVersion below emulationVersion", obj: newCandidateV1beta1(withVersions("1.29.0", "1.30.0")), want: []wantErr{
			invalid(`spec.binaryVersion: Invalid value: "1.29.0": ` + versionOrder)}},
		{name: "pre-release binary below release emulation", obj: newCandidateV1beta1(withVersions("1.30.0-rc.1", "1.30.0")), want: []wantErr{
			invalid(`spec.binaryVersion: Invalid value: "1.30.0-rc.1": ` + versionOrder)}},
		{name: "no strategy", obj: newCandidateV1beta1(withStrategy(""), withVersions("1.33.0", "")), want: []wantErr{
			required(`spec.strategy: Required value`)}},
		{name: "unknown strategy", obj: newCandidateV1beta1(withStrategy("Foo")), want: []wantErr{
			unsupported(`spec.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail)}},
		{name: "bad prefixed strategy", obj: newCandidateV1beta1(withStrategy("example.com/bad name!")), want: []wantErr{
			invalid(`spec.strategy.strategy: Invalid value: "example.com/bad name!": ` + namePartMsg)}},
		{name: "OldestEmulationVersion without emulationVersion", obj: newCandidateV1beta1(withVersions("1.33.0", "")), want: []wantErr{
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail)}},
		{name: "OldestEmulationVersion with emulationVersion 0.0.0", obj: newCandidateV1beta1(withVersions("1.33.0", "0.0.0")), want: []wantErr{
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail)}},
		{name: "everything missing, in order", obj: &coordinationv1beta1.LeaseCandidate{}, want: []wantErr{
			required(`metadata.name: Required value: name or generateName is required`),
			required(`metadata.namespace: Required value`),
			required(`spec.leaseName: Required value`),
			required(`spec.binaryVersion: Required value`),
			required(`spec.strategy: Required value`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("v1beta1", func(t *testing.T) { checkErrs(t, ValidateLeaseCandidate(tc.obj), tc.want) })
			t.Run("v1alpha2", func(t *testing.T) { checkErrs(t, ValidateLeaseCandidate(asV1alpha2(tc.obj)), tc.want) })
		})
	}
}

func TestValidateLeaseCandidateV1alpha1(t *testing.T) {
	list := func(s ...string) func(*v1alpha1.LeaseCandidate) {
		return func(c *v1alpha1.LeaseCandidate) { c.Spec.PreferredStrategies = lcStrategies(s...) }
	}
	versions := func(binary, emulation string) func(*v1alpha1.LeaseCandidate) {
		return func(c *v1alpha1.LeaseCandidate) { c.Spec.BinaryVersion, c.Spec.EmulationVersion = binary, emulation }
	}
	cases := []struct {
		name string
		obj  *v1alpha1.LeaseCandidate
		want []wantErr
	}{
		{name: "valid", obj: newCandidateV1alpha1()},
		{name: "valid: three strategies", obj: newCandidateV1alpha1(list("example.com/a", "OldestEmulationVersion", "example.com/b"))},
		// binaryVersion is optional in v1alpha1 unless OldestEmulationVersion is listed.
		{name: "valid: prefixed strategy, no versions", obj: newCandidateV1alpha1(list("example.com/x"), versions("", ""))},
		{name: "valid: emulationVersion without binaryVersion", obj: newCandidateV1alpha1(list("example.com/x"), versions("", "1.30.0"))},
		{name: "valid: uppercase and underscore in name", obj: newCandidateV1alpha1(func(c *v1alpha1.LeaseCandidate) { c.Name = "Kube_APIServer" })},

		{name: "bad name", obj: newCandidateV1alpha1(func(c *v1alpha1.LeaseCandidate) { c.Name = "a:b" }), want: []wantErr{
			invalid(`metadata.name: Invalid value: "a:b": ` + configMapKeyMsg)}},
		{name: "no leaseName", obj: newCandidateV1alpha1(func(c *v1alpha1.LeaseCandidate) { c.Spec.LeaseName = "" }), want: []wantErr{
			required(`spec.leaseName: Required value`)}},
		{name: "no strategies", obj: newCandidateV1alpha1(list()), want: []wantErr{
			required(`spec.preferredStrategies: Required value: must contain at least one strategy`)}},
		{name: "OldestEmulationVersion without versions", obj: newCandidateV1alpha1(versions("", "")), want: []wantErr{
			required(`spec.binaryVersion: Required value: ` + oevRequiredDetail),
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail)}},
		// Checked once per element, as kube-apiserver did.
		{name: "OldestEmulationVersion twice without versions", obj: newCandidateV1alpha1(list("OldestEmulationVersion", "OldestEmulationVersion"), versions("", "")), want: []wantErr{
			required(`spec.binaryVersion: Required value: ` + oevRequiredDetail),
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail),
			required(`spec.binaryVersion: Required value: ` + oevRequiredDetail),
			required(`spec.emulationVersion: Required value: ` + oevRequiredDetail)}},
		{name: "unknown and empty strategies", obj: newCandidateV1alpha1(list("Foo", "example.com/x", "")), want: []wantErr{
			unsupported(`spec.preferredStrategies[0].strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail),
			unsupported(`spec.preferredStrategies[2].strategy: Unsupported value: "": ` + unsupportedStrategyDetail)}},
		{name: "bad prefixed strategy", obj: newCandidateV1alpha1(list("example.com/x", "bad/")), want: []wantErr{
			invalid(`spec.preferredStrategies[1].strategy: Invalid value: "bad/": name part must be non-empty`),
			invalid(`spec.preferredStrategies[1].strategy: Invalid value: "bad/": ` + namePartMsg)}},
		{name: "binaryVersion below emulationVersion", obj: newCandidateV1alpha1(versions("1.29.0", "1.30.0")), want: []wantErr{
			invalid(`spec.binaryVersion: Invalid value: "1.29.0": ` + versionOrder)}},
		{name: "binaryVersion not semver with OldestEmulationVersion", obj: newCandidateV1alpha1(versions("1.31", "1.30.0")), want: []wantErr{
			invalid(`spec.binaryVersion: Invalid value: "1.31": ` + semverDetail),
			invalid(`spec.binaryVersion: Invalid value: "1.31": ` + versionOrder),
			required(`spec.binaryVersion: Required value: ` + oevRequiredDetail)}},
		{name: "emulationVersion with leading v", obj: newCandidateV1alpha1(list("example.com/x"), versions("1.31.0", "v1.30.0")), want: []wantErr{
			invalid(`spec.emulationVersion: Invalid value: "v1.30.0": ` + semverDetail)}},
		{name: "everything missing, in order", obj: &v1alpha1.LeaseCandidate{}, want: []wantErr{
			required(`metadata.name: Required value: name or generateName is required`),
			required(`metadata.namespace: Required value`),
			required(`spec.leaseName: Required value`),
			required(`spec.preferredStrategies: Required value: must contain at least one strategy`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkErrs(t, ValidateLeaseCandidate(tc.obj), tc.want) })
	}
}

// TestLeaseCandidateSemver runs version strings through the spec rules: a
// prefixed strategy needs no emulationVersion, so each string either passes
// or gives exactly one "must be a valid semantic version".
func TestLeaseCandidateSemver(t *testing.T) {
	valid := []string{"0.0.1", "1.2.3", "10.20.30", "1.2.3-alpha", "1.2.3-alpha.1", "1.2.3-0", "1.2.3-beta-1",
		"1.2.3+001", "1.2.3-rc.1+build.5", "1.2.3-x-y-z.--", "18446744073709551615.0.0"}
	invalidVersions := []string{"v1.2.3", "V1.2.3", " 1.2.3", "1.2.3 ", "\t1.2.3", "1.2", "1", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03",
		"1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3+a..b", "1.2.3-a+b+c", "1.2.3_4", "a.b.c", "1.2.3-ü",
		"1.2.3-99999999999999999999", "18446744073709551616.0.0", "-1.2.3"}
	for _, s := range valid {
		obj := newCandidateV1beta1(withStrategy("example.com/s"), withVersions("18446744073709551615.0.0", s))
		checkErrs(t, ValidateLeaseCandidate(obj), nil)
	}
	for _, s := range invalidVersions {
		obj := newCandidateV1beta1(withStrategy("example.com/s"), withVersions("18446744073709551615.0.0", s))
		t.Run(s, func(t *testing.T) {
			checkErrs(t, ValidateLeaseCandidate(obj), []wantErr{invalid(`spec.emulationVersion: Invalid value: "` + strings.ReplaceAll(s, "\t", `\t`) + `": ` + semverDetail)})
		})
	}
}

// TestCompareSemver checks semver precedence, including the ordered example
// of the Semantic Versioning 2.0.0 specification.
func TestCompareSemver(t *testing.T) {
	ordered := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	parse := func(s string) *version.Version {
		v, err := parseStrictSemver(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := compareSemver(parse(ordered[i]), parse(ordered[j])); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0.0-1", "1.0.0--", -1},   // numeric identifiers sort before alphanumeric ones
		{"1.0.0-9", "1.0.0-10", -1},  // numerically
		{"1.0.0-a9", "1.0.0-a10", 1}, // in ASCII order
		{"1.0.0+b", "1.0.0+a", 0},    // build metadata ignored
		{"1.0.0-Z", "1.0.0-a", -1},   // ASCII: uppercase first
		{"0.0.0", "", 0},             // nil is 0.0.0
		{"0.0.0-alpha", "", -1},
		{"0.0.1", "", 1},
		{"1.10.0", "1.9.0", 1},
		{"2.0.0-rc.1", "1.99.99", 1},
		{"1.0.0-alpha", "1.0.0-alpha", 0},
	} {
		var b *version.Version
		if tc.b != "" {
			b = parse(tc.b)
		}
		if got := compareSemver(parse(tc.a), b); got != tc.want {
			t.Errorf("compare(%s, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestValidateLeaseCandidateUpdate(t *testing.T) {
	type pair struct{ obj, old runtime.Object }
	beta := func(mods ...func(*coordinationv1beta1.LeaseCandidate)) *coordinationv1beta1.LeaseCandidate {
		return newCandidateV1beta1(mods...)
	}
	alpha1 := func(mods ...func(*v1alpha1.LeaseCandidate)) *v1alpha1.LeaseCandidate {
		return newCandidateV1alpha1(mods...)
	}
	leaseName := func(n string) func(*coordinationv1beta1.LeaseCandidate) {
		return func(c *coordinationv1beta1.LeaseCandidate) { c.Spec.LeaseName = n }
	}
	cases := []struct {
		name string
		p    pair
		want []wantErr
	}{
		{name: "v1beta1 unchanged", p: pair{beta(), beta()}},
		{name: "v1beta1 renew, new strategy and versions", p: pair{
			beta(withStrategy("example.com/s"), withVersions("1.34.0", "1.33.0"), func(c *coordinationv1beta1.LeaseCandidate) {
				c.Spec.PingTime = &lcRenew
			}), beta()}},
		{name: "v1beta1 leaseName changed", p: pair{beta(leaseName("other")), beta()}, want: []wantErr{
			invalid(`spec.leaseName: Invalid value: "other": field is immutable`)}},
		{name: "v1alpha2 leaseName changed", p: pair{asV1alpha2(beta(leaseName("other"))), asV1alpha2(beta())}, want: []wantErr{
			invalid(`spec.leaseName: Invalid value: "other": field is immutable`)}},
		{name: "v1beta1 leaseName cleared", p: pair{beta(leaseName("")), beta()}, want: []wantErr{
			required(`spec.leaseName: Required value`),
			invalid(`spec.leaseName: Invalid value: "": field is immutable`)}},
		{name: "v1beta1 name changed", p: pair{beta(withName("other")), beta()}, want: []wantErr{
			invalid(`metadata.name: Invalid value: "other": field is immutable`)}},
		{name: "v1beta1 namespace changed", p: pair{beta(func(c *coordinationv1beta1.LeaseCandidate) { c.Namespace = "other" }), beta()}, want: []wantErr{
			invalid(`metadata.namespace: Invalid value: "other": field is immutable`)}},
		{name: "v1beta1 create rules apply", p: pair{beta(withVersions("", "1.32.0")), beta()}, want: []wantErr{
			required(`spec.binaryVersion: Required value`)}},
		{name: "v1beta1 no resourceVersion", p: pair{beta(func(c *coordinationv1beta1.LeaseCandidate) { c.ResourceVersion = "" }), beta()}, want: []wantErr{
			invalid(`metadata.resourceVersion: Invalid value: "": must be specified for an update`)}},
		{name: "v1alpha1 list replaced", p: pair{alpha1(func(c *v1alpha1.LeaseCandidate) {
			c.Spec.PreferredStrategies = lcStrategies("example.com/a", "OldestEmulationVersion")
		}), alpha1()}},
		{name: "v1alpha1 leaseName changed", p: pair{alpha1(func(c *v1alpha1.LeaseCandidate) { c.Spec.LeaseName = "other" }), alpha1()}, want: []wantErr{
			invalid(`spec.leaseName: Invalid value: "other": field is immutable`)}},
		{name: "v1alpha1 create rules apply", p: pair{alpha1(func(c *v1alpha1.LeaseCandidate) { c.Spec.PreferredStrategies = nil }), alpha1()}, want: []wantErr{
			required(`spec.preferredStrategies: Required value: must contain at least one strategy`)}},
		{name: "v1alpha1 against a v1beta1 old object", p: pair{alpha1(func(c *v1alpha1.LeaseCandidate) { c.Spec.LeaseName = "other" }), beta()}, want: []wantErr{
			invalid(`spec.leaseName: Invalid value: "other": field is immutable`)}},
		{name: "order: metadata, metadata update, spec, leaseName", p: pair{
			beta(withName("a/b"), leaseName("x"), withStrategy("Foo")), beta()}, want: []wantErr{
			invalid(`metadata.name: Invalid value: "a/b": ` + configMapKeyMsg),
			invalid(`metadata.name: Invalid value: "a/b": field is immutable`),
			unsupported(`spec.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail),
			invalid(`spec.leaseName: Invalid value: "x": field is immutable`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkErrs(t, ValidateLeaseCandidateUpdate(tc.p.obj, tc.p.old), tc.want) })
	}
}

func TestValidateLeaseCandidateWrongType(t *testing.T) {
	for _, obj := range []runtime.Object{nil, &coordinationv1.Lease{}, &coordinationv1beta1.LeaseCandidateList{}, (*v1alpha1.LeaseCandidate)(nil)} {
		for name, errs := range map[string]field.ErrorList{
			"create": ValidateLeaseCandidate(obj),
			"new":    ValidateLeaseCandidateUpdate(obj, newCandidateV1beta1()),
			"old":    ValidateLeaseCandidateUpdate(newCandidateV1beta1(), obj),
		} {
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || !strings.Contains(errs[0].Error(), "is not a served LeaseCandidate version") {
				t.Errorf("%s %T: %v", name, obj, errs)
			}
		}
	}
}
