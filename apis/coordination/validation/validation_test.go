package validation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Detail strings produced by apimachinery's format validators, spelled out so
// that a change of validator (or of the value passed to it) fails the tests.
const (
	dns1123SubdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	dns1123LabelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	qualifiedNameMsg    = `must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	labelValueMsg       = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`

	unsupportedStrategyDetail = `supported values: "OldestEmulationVersion"`
	preferredHolderForbidden  = "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
)

type wantErr struct {
	typ field.ErrorType
	msg string // the full (*field.Error).Error() text
}

func required(msg string) wantErr    { return wantErr{field.ErrorTypeRequired, msg} }
func invalid(msg string) wantErr     { return wantErr{field.ErrorTypeInvalid, msg} }
func unsupported(msg string) wantErr { return wantErr{field.ErrorTypeNotSupported, msg} }
func forbidden(msg string) wantErr   { return wantErr{field.ErrorTypeForbidden, msg} }

// checkErrs requires errs to be exactly want: same length, and in order the
// same Type and the same Error() text.
func checkErrs(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d", len(errs), len(want))
	}
	for i := 0; i < len(errs) || i < len(want); i++ {
		switch {
		case i >= len(want):
			t.Errorf("unexpected error [%d]: %s: %s", i, errs[i].Type, errs[i].Error())
		case i >= len(errs):
			t.Errorf("missing error [%d]: %s: %s", i, want[i].typ, want[i].msg)
		default:
			if errs[i].Type != want[i].typ || errs[i].Error() != want[i].msg {
				t.Errorf("error [%d]:\n got: %s: %s\nwant: %s: %s", i, errs[i].Type, errs[i].Error(), want[i].typ, want[i].msg)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func strategy(s string) *coordinationv1.CoordinatedLeaseStrategy {
	return ptr(coordinationv1.CoordinatedLeaseStrategy(s))
}

var (
	t0 = metav1.NewTime(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC))
)

// newLease returns a valid Lease as a client would create it, with mods applied.
func newLease(mods ...func(*coordinationv1.Lease)) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr("node-1"),
			LeaseDurationSeconds: ptr[int32](15),
			AcquireTime:          &metav1.MicroTime{Time: t0.Time},
			RenewTime:            &metav1.MicroTime{Time: t0.Time},
			LeaseTransitions:     ptr[int32](0),
		},
	}
	for _, m := range mods {
		m(l)
	}
	return l
}

func TestValidateLease(t *testing.T) {
	longName := strings.Repeat("a", 254)

	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  []wantErr
	}{
		// Valid leases.
		{
			name:  "valid full spec",
			lease: newLease(),
		},
		{
			name: "valid empty spec",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec = coordinationv1.LeaseSpec{}
			}),
		},
		{
			name: "valid boundary values",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.LeaseDurationSeconds = ptr[int32](1)
				l.Spec.LeaseTransitions = ptr[int32](0)
			}),
		},
		{
			name: "valid metadata extras",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Name = strings.Repeat("a", 253)
				l.GenerateName = "lease-"
				l.Generation = 3
				l.Labels = map[string]string{"app.kubernetes.io/name": "ctrl", "empty": ""}
				l.Annotations = map[string]string{"example.com/Note": "anything goes here"}
				l.Finalizers = []string{"example.com/cleanup"}
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-1"}}
				l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}}
			}),
		},
		{
			name: "valid strategy OldestEmulationVersion with preferredHolder",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.Strategy = strategy("OldestEmulationVersion")
				l.Spec.PreferredHolder = ptr("node-2")
			}),
		},
		{
			name: "valid prefixed strategy with preferredHolder",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.Strategy = strategy("example.com/custom")
				l.Spec.PreferredHolder = ptr("node-2")
			}),
		},
		{
			name: "valid empty preferredHolder without strategy",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.PreferredHolder = ptr("")
			}),
		},

		// Metadata.
		{
			name:  "missing name",
			lease: newLease(func(l *coordinationv1.Lease) { l.Name = "" }),
			want:  []wantErr{required("metadata.name: Required value: name or generateName is required")},
		},
		{
			name: "generateName without a generated name",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Name = ""
				l.GenerateName = "leader-"
			}),
			want: []wantErr{required("metadata.name: Required value: name or generateName is required")},
		},
		{
			name:  "name not a DNS subdomain",
			lease: newLease(func(l *coordinationv1.Lease) { l.Name = "Bad_Name" }),
			want:  []wantErr{invalid(`metadata.name: Invalid value: "Bad_Name": ` + dns1123SubdomainMsg)},
		},
		{
			name:  "name too long",
			lease: newLease(func(l *coordinationv1.Lease) { l.Name = longName }),
			want:  []wantErr{invalid(fmt.Sprintf("metadata.name: Invalid value: %q: must be no more than 253 characters", longName))},
		},
		{
			name:  "generateName not a DNS subdomain",
			lease: newLease(func(l *coordinationv1.Lease) { l.GenerateName = "Bad_" }),
			want:  []wantErr{invalid(`metadata.generateName: Invalid value: "Bad_": ` + dns1123SubdomainMsg)},
		},
		{
			name:  "missing namespace",
			lease: newLease(func(l *coordinationv1.Lease) { l.Namespace = "" }),
			want:  []wantErr{required("metadata.namespace: Required value")},
		},
		{
			name:  "namespace not a DNS label",
			lease: newLease(func(l *coordinationv1.Lease) { l.Namespace = "Kube_System" }),
			want:  []wantErr{invalid(`metadata.namespace: Invalid value: "Kube_System": ` + dns1123LabelMsg)},
		},
		{
			name:  "namespace with dots",
			lease: newLease(func(l *coordinationv1.Lease) { l.Namespace = "kube.system" }),
			want:  []wantErr{invalid(`metadata.namespace: Invalid value: "kube.system": must not contain dots`)},
		},
		{
			name:  "negative generation",
			lease: newLease(func(l *coordinationv1.Lease) { l.Generation = -1 }),
			want:  []wantErr{invalid("metadata.generation: Invalid value: -1: must be greater than or equal to 0")},
		},
		{
			name:  "invalid label key",
			lease: newLease(func(l *coordinationv1.Lease) { l.Labels = map[string]string{"bad key": "v"} }),
			want:  []wantErr{invalid(`metadata.labels: Invalid value: "bad key": name part ` + qualifiedNameMsg)},
		},
		{
			name:  "invalid label value",
			lease: newLease(func(l *coordinationv1.Lease) { l.Labels = map[string]string{"k": "-v"} }),
			want:  []wantErr{invalid(`metadata.labels: Invalid value: "-v": ` + labelValueMsg)},
		},
		{
			name:  "invalid annotation key",
			lease: newLease(func(l *coordinationv1.Lease) { l.Annotations = map[string]string{"bad key": "v"} }),
			want:  []wantErr{invalid(`metadata.annotations: Invalid value: "bad key": name part ` + qualifiedNameMsg)},
		},
		{
			name:  "invalid finalizer",
			lease: newLease(func(l *coordinationv1.Lease) { l.Finalizers = []string{"bad finalizer"} }),
			want:  []wantErr{invalid(`metadata.finalizers: Invalid value: "bad finalizer": name part ` + qualifiedNameMsg)},
		},
		{
			name: "ownerReference without uid",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1"}}
			}),
			want: []wantErr{required("metadata.ownerReferences[0].uid: Required value: must not be empty")},
		},
		{
			name: "managedFields with unknown operation",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m", Operation: "Bogus"}}
			}),
			want: []wantErr{unsupported(`metadata.managedFields[0].operation: Unsupported value: "Bogus": supported values: "Apply", "Update"`)},
		},

		// spec.leaseDurationSeconds and spec.leaseTransitions.
		{
			name:  "zero leaseDurationSeconds",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr[int32](0) }),
			want:  []wantErr{invalid("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0")},
		},
		{
			name:  "negative leaseDurationSeconds",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr[int32](-5) }),
			want:  []wantErr{invalid("spec.leaseDurationSeconds: Invalid value: -5: must be greater than 0")},
		},
		{
			name:  "negative leaseTransitions",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr[int32](-1) }),
			want:  []wantErr{invalid("spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0")},
		},

		// spec.strategy: note the doubled "strategy" path segment.
		{
			name:  "unknown strategy",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("Foo") }),
			want:  []wantErr{unsupported(`spec.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail)},
		},
		{
			name:  "empty strategy",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("") }),
			want:  []wantErr{unsupported(`spec.strategy.strategy: Unsupported value: "": ` + unsupportedStrategyDetail)},
		},
		{
			name:  "strategy is case sensitive",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("oldestEmulationVersion") }),
			want:  []wantErr{unsupported(`spec.strategy.strategy: Unsupported value: "oldestEmulationVersion": ` + unsupportedStrategyDetail)},
		},
		{
			name:  "prefixed strategy with two slashes",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("a/b/c") }),
			want: []wantErr{invalid(`spec.strategy.strategy: Invalid value: "a/b/c": a valid label key ` + qualifiedNameMsg +
				` with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`)},
		},
		{
			name:  "prefixed strategy with empty prefix",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("/custom") }),
			want:  []wantErr{invalid(`spec.strategy.strategy: Invalid value: "/custom": prefix part must be non-empty`)},
		},
		{
			name:  "prefixed strategy with invalid prefix",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("Example.com/custom") }),
			want:  []wantErr{invalid(`spec.strategy.strategy: Invalid value: "Example.com/custom": prefix part ` + dns1123SubdomainMsg)},
		},
		{
			name:  "prefixed strategy with empty name: one error per message",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("example.com/") }),
			want: []wantErr{
				invalid(`spec.strategy.strategy: Invalid value: "example.com/": name part must be non-empty`),
				invalid(`spec.strategy.strategy: Invalid value: "example.com/": name part ` + qualifiedNameMsg),
			},
		},
		{
			// The bad value is the CoordinatedLeaseStrategy itself (not a
			// plain string), so it is rendered through encoding/json, exactly
			// as kube-apiserver renders its internal strategy type.
			name:  "bad value rendered as JSON",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.Strategy = strategy("example.com/<b>") }),
			want:  []wantErr{invalid(`spec.strategy.strategy: Invalid value: "example.com/\u003cb\u003e": name part ` + qualifiedNameMsg)},
		},

		// spec.preferredHolder.
		{
			name:  "preferredHolder without strategy",
			lease: newLease(func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptr("node-2") }),
			want:  []wantErr{forbidden(preferredHolderForbidden)},
		},
		{
			name: "preferredHolder with empty strategy",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.Strategy = strategy("")
				l.Spec.PreferredHolder = ptr("node-2")
			}),
			want: []wantErr{
				unsupported(`spec.strategy.strategy: Unsupported value: "": ` + unsupportedStrategyDetail),
				forbidden(preferredHolderForbidden),
			},
		},
		{
			name: "preferredHolder with an unsupported but non-empty strategy",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Spec.Strategy = strategy("Foo")
				l.Spec.PreferredHolder = ptr("node-2")
			}),
			want: []wantErr{unsupported(`spec.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail)},
		},

		// Everything at once, in kube-apiserver's order.
		{
			name: "multiple errors",
			lease: newLease(func(l *coordinationv1.Lease) {
				l.Name = ""
				l.Namespace = ""
				l.Spec.LeaseDurationSeconds = ptr[int32](0)
				l.Spec.LeaseTransitions = ptr[int32](-1)
				l.Spec.PreferredHolder = ptr("node-2")
			}),
			want: []wantErr{
				required("metadata.name: Required value: name or generateName is required"),
				required("metadata.namespace: Required value"),
				invalid("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
				invalid("spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"),
				forbidden(preferredHolderForbidden),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkErrs(t, ValidateLease(tc.lease), tc.want)
		})
	}
}

func TestValidateLeaseAggregate(t *testing.T) {
	lease := newLease(func(l *coordinationv1.Lease) {
		l.Name = ""
		l.Spec.LeaseDurationSeconds = ptr[int32](0)
		l.Spec.Strategy = strategy("Foo")
	})
	want := `[metadata.name: Required value: name or generateName is required, ` +
		`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, ` +
		`spec.strategy.strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"]`
	agg := ValidateLease(lease).ToAggregate()
	if agg == nil {
		t.Fatalf("got no error, want %s", want)
	}
	if got := agg.Error(); got != want {
		t.Errorf("aggregate:\n got: %s\nwant: %s", got, want)
	}

	single := ValidateLease(newLease(func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr[int32](0) })).ToAggregate()
	if single == nil || single.Error() != "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0" {
		t.Errorf("single aggregate: got %v", single)
	}

	if agg := ValidateLease(newLease()).ToAggregate(); agg != nil {
		t.Errorf("valid lease: got %v", agg)
	}
}

func TestValidateLeaseSpec(t *testing.T) {
	// The spec validator honours the given path and ignores metadata.
	spec := &coordinationv1.LeaseSpec{
		LeaseDurationSeconds: ptr[int32](0),
		LeaseTransitions:     ptr[int32](-2),
		Strategy:             strategy("Foo"),
	}
	checkErrs(t, ValidateLeaseSpec(spec, field.NewPath("x")), []wantErr{
		invalid("x.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
		invalid("x.leaseTransitions: Invalid value: -2: must be greater than or equal to 0"),
		unsupported(`x.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail),
	})

	checkErrs(t, ValidateLeaseSpec(&coordinationv1.LeaseSpec{PreferredHolder: ptr("n")}, field.NewPath("x")), []wantErr{
		forbidden("x.preferredHolder: Forbidden: may only be specified if `strategy` is defined"),
	})

	checkErrs(t, ValidateLeaseSpec(&newLease().Spec, field.NewPath("spec")), nil)
}

func TestValidateCoordinatedLeaseStrategy(t *testing.T) {
	// As LeaseCandidate uses it: errors land under fldPath.Child("strategy").
	fldPath := field.NewPath("spec", "preferredStrategies").Index(0)
	tests := []struct {
		strategy string
		want     []wantErr
	}{
		{strategy: "OldestEmulationVersion"},
		{strategy: "example.com/custom"},
		{strategy: "custom/x"},
		{strategy: "Foo", want: []wantErr{unsupported(`spec.preferredStrategies[0].strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail)}},
		{strategy: "", want: []wantErr{unsupported(`spec.preferredStrategies[0].strategy: Unsupported value: "": ` + unsupportedStrategyDetail)}},
		{strategy: "/x", want: []wantErr{invalid(`spec.preferredStrategies[0].strategy: Invalid value: "/x": prefix part must be non-empty`)}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.strategy), func(t *testing.T) {
			checkErrs(t, ValidateCoordinatedLeaseStrategy(coordinationv1.CoordinatedLeaseStrategy(tc.strategy), fldPath), tc.want)
		})
	}
}

// storedLease returns a Lease as the server would have stored it.
func storedLease() *coordinationv1.Lease {
	return newLease(func(l *coordinationv1.Lease) {
		l.UID = "uid-1"
		l.ResourceVersion = "10"
		l.Generation = 2
		l.CreationTimestamp = t0
	})
}

func TestValidateLeaseUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    *coordinationv1.Lease // storedLease() when nil
		update func(*coordinationv1.Lease)
		want   []wantErr
	}{
		// Valid updates: every spec field may change.
		{
			name:   "no change",
			update: func(*coordinationv1.Lease) {},
		},
		{
			name: "valid spec change",
			update: func(l *coordinationv1.Lease) {
				l.Spec.HolderIdentity = ptr("node-2")
				l.Spec.LeaseDurationSeconds = ptr[int32](40)
				l.Spec.AcquireTime = &metav1.MicroTime{Time: t1.Time}
				l.Spec.RenewTime = &metav1.MicroTime{Time: t1.Time}
				l.Spec.LeaseTransitions = ptr[int32](1)
				l.Spec.Strategy = strategy("OldestEmulationVersion")
				l.Spec.PreferredHolder = ptr("node-3")
			},
		},
		{
			name: "valid spec cleared",
			update: func(l *coordinationv1.Lease) {
				l.Spec = coordinationv1.LeaseSpec{}
			},
		},
		{
			name: "valid metadata change",
			update: func(l *coordinationv1.Lease) {
				l.Generation = 3
				l.Labels = map[string]string{"a": "b"}
				l.Annotations = map[string]string{"example.com/x": "y"}
				l.Finalizers = []string{"example.com/cleanup"}
			},
		},

		// ObjectMeta update rules.
		{
			name:   "name change",
			update: func(l *coordinationv1.Lease) { l.Name = "y" },
			want:   []wantErr{invalid(`metadata.name: Invalid value: "y": field is immutable`)},
		},
		{
			name:   "namespace change",
			update: func(l *coordinationv1.Lease) { l.Namespace = "other" },
			want:   []wantErr{invalid(`metadata.namespace: Invalid value: "other": field is immutable`)},
		},
		{
			name:   "uid change",
			update: func(l *coordinationv1.Lease) { l.UID = "uid-2" },
			want:   []wantErr{invalid(`metadata.uid: Invalid value: "uid-2": field is immutable`)},
		},
		{
			name:   "creationTimestamp change",
			update: func(l *coordinationv1.Lease) { l.CreationTimestamp = t1 },
			want:   []wantErr{invalid(`metadata.creationTimestamp: Invalid value: "2024-01-02T00:00:00Z": field is immutable`)},
		},
		{
			name:   "deletionTimestamp set",
			update: func(l *coordinationv1.Lease) { l.DeletionTimestamp = &t1 },
			want:   []wantErr{invalid(`metadata.deletionTimestamp: Invalid value: "2024-01-02T00:00:00Z": field is immutable`)},
		},
		{
			name:   "generation decrease",
			update: func(l *coordinationv1.Lease) { l.Generation = 1 },
			want:   []wantErr{invalid("metadata.generation: Invalid value: 1: must not be decremented")},
		},
		{
			name:   "missing resourceVersion",
			update: func(l *coordinationv1.Lease) { l.ResourceVersion = "" },
			want:   []wantErr{invalid(`metadata.resourceVersion: Invalid value: "": must be specified for an update`)},
		},
		{
			name: "new finalizer while deleting",
			old: func() *coordinationv1.Lease {
				l := storedLease()
				l.DeletionTimestamp = &t1
				return l
			}(),
			update: func(l *coordinationv1.Lease) { l.Finalizers = []string{"example.com/f"} },
			want:   []wantErr{forbidden(`metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/f"}`)},
		},

		// Create-time metadata rules also apply to the new object; the
		// errors both metadata passes report appear twice in the list.
		{
			name: "invalid name kept from a legacy object",
			old: func() *coordinationv1.Lease {
				l := storedLease()
				l.Name = "Bad_Name"
				return l
			}(),
			update: func(*coordinationv1.Lease) {},
			want:   []wantErr{invalid(`metadata.name: Invalid value: "Bad_Name": ` + dns1123SubdomainMsg)},
		},
		{
			name:   "invalid finalizer added",
			update: func(l *coordinationv1.Lease) { l.Finalizers = []string{"bad finalizer"} },
			want:   []wantErr{invalid(`metadata.finalizers: Invalid value: "bad finalizer": name part ` + qualifiedNameMsg)},
		},
		{
			name:   "invalid label added",
			update: func(l *coordinationv1.Lease) { l.Labels = map[string]string{"bad key": "v"} },
			want: []wantErr{
				invalid(`metadata.labels: Invalid value: "bad key": name part ` + qualifiedNameMsg),
				invalid(`metadata.labels: Invalid value: "bad key": name part ` + qualifiedNameMsg),
			},
		},
		{
			name:   "negative generation",
			update: func(l *coordinationv1.Lease) { l.Generation = -1 },
			want: []wantErr{
				invalid("metadata.generation: Invalid value: -1: must be greater than or equal to 0"),
				invalid("metadata.generation: Invalid value: -1: must be greater than or equal to 0"),
				invalid("metadata.generation: Invalid value: -1: must not be decremented"),
			},
		},

		// Spec rules apply to the new object.
		{
			name: "invalid spec",
			update: func(l *coordinationv1.Lease) {
				l.Spec.LeaseDurationSeconds = ptr[int32](0)
				l.Spec.LeaseTransitions = ptr[int32](-1)
				l.Spec.Strategy = strategy("Foo")
			},
			want: []wantErr{
				invalid("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
				invalid("spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"),
				unsupported(`spec.strategy.strategy: Unsupported value: "Foo": ` + unsupportedStrategyDetail),
			},
		},
		{
			name:   "preferredHolder without strategy",
			update: func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptr("node-2") },
			want:   []wantErr{forbidden(preferredHolderForbidden)},
		},
		{
			name: "metadata errors before spec errors",
			update: func(l *coordinationv1.Lease) {
				l.UID = "uid-2"
				l.Spec.LeaseDurationSeconds = ptr[int32](0)
			},
			want: []wantErr{
				invalid(`metadata.uid: Invalid value: "uid-2": field is immutable`),
				invalid("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.old
			if old == nil {
				old = storedLease()
			}
			lease := old.DeepCopy()
			tc.update(lease)
			checkErrs(t, ValidateLeaseUpdate(lease, old), tc.want)
		})
	}
}

func TestValidateLeaseUpdateAggregate(t *testing.T) {
	old := storedLease()
	lease := old.DeepCopy()
	lease.Generation = -1
	lease.Labels = map[string]string{"bad key": "v"}
	lease.Spec.LeaseDurationSeconds = ptr[int32](0)

	// Repeated messages collapse into one in the aggregate.
	want := `[metadata.generation: Invalid value: -1: must be greater than or equal to 0, ` +
		`metadata.labels: Invalid value: "bad key": name part ` + qualifiedNameMsg + `, ` +
		`metadata.generation: Invalid value: -1: must not be decremented, ` +
		`spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0]`
	agg := ValidateLeaseUpdate(lease, old).ToAggregate()
	if agg == nil {
		t.Fatalf("got no error, want %s", want)
	}
	if got := agg.Error(); got != want {
		t.Errorf("aggregate:\n got: %s\nwant: %s", got, want)
	}
}
