package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// These tests drive the real kubectl (/usr/bin/kubectl, the dispatcher that
// runs kubectl 1.32 for the version leasehold reports) and client-go's
// typed, dynamic and metadata clients and a metadata SharedInformer against
// a follower of a three-node cluster, for Leases and LeaseCandidates, and
// compare what they print or return with what kube-apiserver gives them.

// kcTimeout bounds every kubectl invocation.
const kcTimeout = 20 * time.Second

// kcCtl runs kubectl against one member with a kubeconfig, HOME and cache
// of its own.
type kcCtl struct {
	t          *testing.T
	dir        string
	server     string
	kubeconfig string
}

func newKC(t *testing.T, server string) *kcCtl {
	t.Helper()
	const bin = "/usr/bin/kubectl"
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kubectl is required for this test: %v", err)
	}
	k := &kcCtl{t: t, dir: t.TempDir(), server: server}
	k.kubeconfig = k.file("kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster:
    server: %s
contexts:
- name: leasehold
  context:
    cluster: leasehold
    namespace: default
current-context: leasehold
`, server))
	return k
}

func (k *kcCtl) file(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o700); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// kcResult is one finished kubectl invocation.
type kcResult struct {
	args           []string
	stdout, stderr string
	err            error
}

func (r kcResult) String() string {
	return fmt.Sprintf("$ kubectl %s\nexit: %v\n--- stdout ---\n%s\n--- stderr ---\n%s", strings.Join(r.args, " "), r.err, r.stdout, r.stderr)
}

// command builds a kubectl command bounded by ctx.
func (k *kcCtl) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	full := append([]string{
		"--kubeconfig", k.kubeconfig, "--server", k.server,
		"--cache-dir", filepath.Join(k.dir, "cache"), "--request-timeout", "15s",
	}, args...)
	cmd := exec.CommandContext(ctx, "/usr/bin/kubectl", full...)
	cmd.Env = append(os.Environ(), "HOME="+k.dir, "KUBECONFIG="+k.kubeconfig, "KUBECTL_INTERACTIVE_DELETE=false")
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// try runs kubectl with args (and extra environment entries of the form
// env=...) and returns what happened.
func (k *kcCtl) try(env []string, args ...string) kcResult {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcTimeout)
	defer cancel()
	cmd := k.command(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := kcResult{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err}
	if ctx.Err() != nil {
		k.t.Fatalf("timed out after %v:\n%s", kcTimeout, r)
	}
	k.t.Logf("kubectl %s (%v)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return r
}

// run runs kubectl, which must succeed.
func (k *kcCtl) run(args ...string) kcResult {
	k.t.Helper()
	r := k.try(nil, args...)
	if r.err != nil {
		k.t.Fatalf("kubectl failed:\n%s", r)
	}
	return r
}

// out runs kubectl, which must succeed and print exactly want (after
// trimming) on stdout.
func (k *kcCtl) out(want string, args ...string) kcResult {
	k.t.Helper()
	r := k.run(args...)
	if strings.TrimSpace(r.stdout) != want {
		k.t.Fatalf("want stdout %q:\n%s", want, r)
	}
	return r
}

// fails runs kubectl, which must fail with wantErr in its stderr.
func (k *kcCtl) fails(wantErr string, args ...string) kcResult {
	k.t.Helper()
	r := k.try(nil, args...)
	if r.err == nil || !strings.Contains(r.stderr, wantErr) {
		k.t.Fatalf("want a failure with %q in stderr:\n%s", wantErr, r)
	}
	return r
}

// kcTable splits kubectl's table output into its header and rows.
func kcTable(t *testing.T, r kcResult) (header []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no table:\n%s", r)
	}
	header = strings.Fields(lines[0])
	for _, l := range lines[1:] {
		rows = append(rows, strings.Fields(l))
	}
	return header, rows
}

// kcAge is what kubectl prints in an AGE column for an object created during
// the test.
var kcAge = regexp.MustCompile(`^[0-9]+s$|^[0-9]+m[0-9]*s?$`)

// wantTable checks kubectl's table: the header exactly, and the rows exactly
// (in order) but for the last (AGE) column, which must look like an age.
func wantTable(t *testing.T, r kcResult, header []string, rows ...[]string) {
	t.Helper()
	h, got := kcTable(t, r)
	if !slices.Equal(h, header) {
		t.Fatalf("header %q, want %q:\n%s", h, header, r)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d (%q):\n%s", len(got), len(rows), rows, r)
	}
	for i, row := range got {
		if len(row) != len(header) || !slices.Equal(row[:len(row)-1], rows[i]) || !kcAge.MatchString(row[len(row)-1]) {
			t.Fatalf("row %d is %q, want %q and an age:\n%s", i, row, rows[i], r)
		}
	}
}

// kcKind describes one resource for the kubectl tests: everything but the
// names of the fields differs only in data.
type kcKind struct {
	resource   string // plural, as typed
	singular   string
	printed    string // kubectl's "<singular>.<group>" in messages
	apiVersion string // the version kubectl uses by default
	header     []string
	// manifest is the object's YAML with field set to value.
	manifest func(ns, name, value string) string
	// row is the table row (without AGE) for an object with value.
	row func(name, value string) []string
	// field is the JSONPath of the value and yamlKey its key in kubectl
	// edit's file.
	field   string
	yamlKey string
	values  [8]string // distinct valid values, in order of use
	// describe is the line kubectl describe prints for value.
	describe  func(value string) string
	explain   string   // kubectl explain argument
	explained []string // what it must print
}

var kcLease = kcKind{
	resource: "leases", singular: "lease", printed: "lease.coordination.k8s.io", apiVersion: "coordination.k8s.io/v1",
	header: []string{"NAME", "HOLDER", "AGE"},
	manifest: func(ns, name, value string) string {
		return fmt.Sprintf("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  holderIdentity: %s\n  leaseDurationSeconds: 15\n", name, ns, value)
	},
	row:     func(name, value string) []string { return []string{name, value} },
	field:   "{.spec.holderIdentity}",
	yamlKey: "holderIdentity",
	values:  [8]string{"me", "you", "edited", "merged", "jsoned", "strategic", "watched", "ssa"},
	describe: func(value string) string {
		return "Holder Identity: " + value
	},
	explain:   "lease.spec",
	explained: []string{"KIND:       Lease", "VERSION:    v1", "FIELD: spec <LeaseSpec>", "holderIdentity\t<string>", "LeaseSpec is a specification of a Lease."},
}

var kcCandidate = kcKind{
	resource: "leasecandidates", singular: "leasecandidate", printed: "leasecandidate.coordination.k8s.io", apiVersion: "coordination.k8s.io/v1beta1",
	header: []string{"NAME", "LEASENAME", "BINARYVERSION", "EMULATIONVERSION", "AGE"},
	manifest: func(ns, name, value string) string {
		return fmt.Sprintf("apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  leaseName: kube-scheduler\n  binaryVersion: %s\n  emulationVersion: 1.32.0\n  strategy: OldestEmulationVersion\n", name, ns, value)
	},
	row:     func(name, value string) []string { return []string{name, "kube-scheduler", value, "1.32.0"} },
	field:   "{.spec.binaryVersion}",
	yamlKey: "binaryVersion",
	values:  [8]string{"1.32.0", "1.32.1", "1.33.0", "1.33.1", "1.34.0", "1.34.1", "1.35.0", "1.36.0"},
	describe: func(value string) string {
		return "Binary Version: " + value
	},
	explain:   "leasecandidate.spec",
	explained: []string{"KIND:       LeaseCandidate", "VERSION:    v1beta1", "FIELD: spec <LeaseCandidateSpec>", "leaseName\t<string> -required-", "binaryVersion\t<string> -required-", "strategy\t<string> -required-"},
}

// TestKubectl runs every kubectl command an operator uses on Leases and
// LeaseCandidates against a follower and checks what it prints.
func TestKubectl(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	k := newKC(t, c.Nodes[f].URL())
	cs := c.Client(c.Leader(), false)

	t.Run("discovery", func(t *testing.T) {
		k := *k
		k.t = t
		r := k.run("api-versions")
		got := strings.Fields(r.stdout)
		want := []string{"authentication.k8s.io/v1", "authorization.k8s.io/v1", "coordination.k8s.io/v1", "coordination.k8s.io/v1alpha1", "coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1", "rbac.authorization.k8s.io/v1", "v1"}
		if !slices.Equal(got, want) {
			t.Fatalf("api-versions %q, want %q:\n%s", got, want, r)
		}

		r = k.run("api-resources")
		header, rows := kcTable(t, r)
		if !slices.Equal(header, []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}) ||
			!reflect.DeepEqual(rows, [][]string{
				{"selfsubjectreviews", "authentication.k8s.io/v1", "false", "SelfSubjectReview"},
				{"selfsubjectaccessreviews", "authorization.k8s.io/v1", "false", "SelfSubjectAccessReview"},
				{"selfsubjectrulesreviews", "authorization.k8s.io/v1", "false", "SelfSubjectRulesReview"},
				{"leasecandidates", "coordination.k8s.io/v1beta1", "true", "LeaseCandidate"},
				{"leases", "coordination.k8s.io/v1", "true", "Lease"},
				{"clusterrolebindings", "rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"},
				{"clusterroles", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"},
				{"rolebindings", "rbac.authorization.k8s.io/v1", "true", "RoleBinding"},
				{"roles", "rbac.authorization.k8s.io/v1", "true", "Role"},
			}) {
			t.Fatalf("api-resources:\n%s", r)
		}
		k.out("leasecandidates.coordination.k8s.io\nleases.coordination.k8s.io", "api-resources", "--api-group=coordination.k8s.io", "-o", "name")
		r = k.run("api-resources", "--api-group=coordination.k8s.io", "-o", "wide")
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
			if f := strings.Fields(line); len(f) != 5 || f[4] != "create,delete,deletecollection,get,list,patch,update,watch" {
				t.Fatalf("api-resources -o wide: verbs missing in %q:\n%s", line, r)
			}
		}
		k.out("leasecandidates.coordination.k8s.io\nleases.coordination.k8s.io\nrolebindings.rbac.authorization.k8s.io\nroles.rbac.authorization.k8s.io", "api-resources", "--verbs=watch,patch", "--namespaced=true", "-o", "name", "--sort-by=name", "--cached")
		k.out("", "api-resources", "--namespaced=false", "--api-group=coordination.k8s.io", "--no-headers")
	})

	for _, kind := range []kcKind{kcLease, kcCandidate} {
		t.Run(kind.resource, func(t *testing.T) {
			k := *k
			k.t = t
			kcCommands(t, &k, cs, kind)
		})
	}

	t.Run("leasecandidate-versions", func(t *testing.T) {
		k := *k
		k.t = t
		ns := "kc-lcv"
		k.run("create", "-f", k.file("lcv.yaml", kcCandidate.manifest(ns, "lcv", "1.33.0")))
		for _, v := range []string{"v1alpha1", "v1alpha2", "v1beta1"} {
			res := "leasecandidates." + v + ".coordination.k8s.io"
			wantTable(t, k.run("get", res, "-n", ns), kcCandidate.header, kcCandidate.row("lcv", "1.33.0"))
			k.out("coordination.k8s.io/"+v+" LeaseCandidate 1.33.0", "get", res+"/lcv", "-n", ns, "-o", "jsonpath={.apiVersion} {.kind} {.spec.binaryVersion}")
		}
		r := k.run("get", "leasecandidates.v1alpha1.coordination.k8s.io", "lcv", "-n", ns, "-o", "yaml")
		var u map[string]any
		if err := yaml.Unmarshal([]byte(r.stdout), &u); err != nil {
			t.Fatalf("-o yaml: %v\n%s", err, r)
		}
		spec, _ := u["spec"].(map[string]any)
		if fmt.Sprint(spec["preferredStrategies"]) != "[OldestEmulationVersion]" || spec["strategy"] != nil || spec["leaseName"] != "kube-scheduler" {
			t.Fatalf("v1alpha1 spec %v:\n%s", spec, r)
		}
		// Writes in v1alpha1 are seen in v1beta1.
		k.run("patch", "leasecandidates.v1alpha1.coordination.k8s.io", "lcv", "-n", ns, "--type=merge", "-p", `{"spec":{"binaryVersion":"1.34.0"}}`)
		k.out("1.34.0 OldestEmulationVersion", "get", "leasecandidate", "lcv", "-n", ns, "-o", "jsonpath={.spec.binaryVersion} {.spec.strategy}")
		k.out(`leasecandidate.coordination.k8s.io "lcv" deleted`, "delete", "leasecandidates.v1alpha1.coordination.k8s.io", "lcv", "-n", ns)
		k.fails(`leasecandidates.coordination.k8s.io "lcv" not found`, "get", "leasecandidate", "lcv", "-n", ns)
	})
	t.Run("rbac", func(t *testing.T) {
		k := *k
		k.t = t
		ns := "kc-rbac"
		k.out("role.rbac.authorization.k8s.io/reader created", "create", "role", "reader", "--verb=get,list", "--resource=leases.coordination.k8s.io", "-n", ns)
		k.out("rolebinding.rbac.authorization.k8s.io/readers created", "create", "rolebinding", "readers", "--role=reader", "--user=alice", "--group=team", "--serviceaccount="+ns+":elector", "-n", ns)
		k.out("clusterrole.rbac.authorization.k8s.io/kc-metrics created", "create", "clusterrole", "kc-metrics", "--verb=get", "--non-resource-url=/metrics")
		k.out("clusterrolebinding.rbac.authorization.k8s.io/kc-metrics created", "create", "clusterrolebinding", "kc-metrics", "--clusterrole=kc-metrics", "--group=monitoring")
		// Tables as kube-apiserver prints them, wide columns included.
		header, rows := kcTable(t, k.run("get", "rolebinding", "readers", "-n", ns, "-o", "wide"))
		if !slices.Equal(header, []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"}) || len(rows) != 1 ||
			rows[0][0] != "readers" || rows[0][1] != "Role/reader" || rows[0][3] != "alice" || rows[0][4] != "team" || rows[0][5] != ns+"/elector" {
			t.Fatalf("get rolebinding -o wide: %q %q", header, rows)
		}
		header, rows = kcTable(t, k.run("get", "clusterrole", "kc-metrics"))
		if !slices.Equal(header, []string{"NAME", "CREATED", "AT"}) || len(rows) != 1 || rows[0][0] != "kc-metrics" {
			t.Fatalf("get clusterrole: %q %q", header, rows)
		}
		k.out(`/metrics   ["get"]`, "get", "clusterrole", "kc-metrics", "-o", `jsonpath={.rules[0].nonResourceURLs[0]} {.rules[0].resources} {.rules[0].apiGroups} {.rules[0].verbs}`)
		// kubectl's defaulting left to the server: the User subject's group.
		k.out("rbac.authorization.k8s.io rbac.authorization.k8s.io", "get", "rolebinding", "readers", "-n", ns, "-o", `jsonpath={.roleRef.apiGroup} {.subjects[0].apiGroup}`)
		if r := k.run("describe", "role", "reader", "-n", ns); !strings.Contains(r.stdout, "leases.coordination.k8s.io  []                 []              [get list]") {
			t.Fatalf("describe role:\n%s", r)
		}
		// apply of RBAC YAML written for a real cluster, client- and
		// server-side.
		manifest := k.file("rbac.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kc-lease-admin
  labels: {rbac.authorization.k8s.io/aggregate-to-edit: "true"}
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kc-admins, namespace: `+ns+`}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kc-lease-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: admins}
`)
		k.out("clusterrole.rbac.authorization.k8s.io/kc-lease-admin created\nrolebinding.rbac.authorization.k8s.io/kc-admins created", "apply", "-f", manifest)
		k.out("clusterrole.rbac.authorization.k8s.io/kc-lease-admin serverside-applied\nrolebinding.rbac.authorization.k8s.io/kc-admins serverside-applied", "apply", "--server-side", "--force-conflicts", "-f", manifest)
		// Validation, as kube-apiserver's.
		k.fails(`RoleBinding.rbac.authorization.k8s.io "bad" is invalid: subjects[0].name: Required value`, "create", "rolebinding", "bad", "--role=reader", "--user=", "-n", ns)
		k.fails(`roleRef: Invalid value`, "patch", "rolebinding", "readers", "-n", ns, "--type=merge", "-p", `{"roleRef":{"name":"other"}}`)
		// client-go in protobuf sees them too.
		crb, err := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), "kc-metrics", metav1.GetOptions{})
		if err != nil || crb.RoleRef.Name != "kc-metrics" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "monitoring" {
			t.Fatalf("client-go: %v %+v", err, crb)
		}
		k.out(`clusterrolebinding.rbac.authorization.k8s.io "kc-metrics" deleted`, "delete", "clusterrolebinding", "kc-metrics")
		k.fails(`clusterrolebindings.rbac.authorization.k8s.io "kc-metrics" not found`, "get", "clusterrolebinding", "kc-metrics")
	})
}

// kcCommands drives every kubectl command on kind in its own namespaces.
func kcCommands(t *testing.T, k *kcCtl, cs kubernetes.Interface, kind kcKind) {
	ns := "kc-" + kind.singular
	v := kind.values
	get := func(name string) string {
		t.Helper()
		return strings.TrimSpace(k.run("get", kind.resource, name, "-n", ns, "-o", "jsonpath="+kind.field).stdout)
	}
	wantValue := func(name, want string) {
		t.Helper()
		if got := get(name); got != want {
			t.Fatalf("%s %s/%s: %s is %q, want %q", kind.resource, ns, name, kind.field, got, want)
		}
	}

	// create -f, and create again.
	k.out(kind.printed+"/a created", "create", "-f", k.file(kind.singular+"-a.yaml", kind.manifest(ns, "a", v[0])))
	k.fails(fmt.Sprintf(`Error from server (AlreadyExists): error when creating %q: %s.coordination.k8s.io "a" already exists`,
		filepath.Join(k.dir, kind.singular+"-a.yaml"), kind.resource),
		"create", "-f", filepath.Join(k.dir, kind.singular+"-a.yaml"))

	// get: one object, all namespaces, wide, by name list.
	wantTable(t, k.run("get", kind.resource, "a", "-n", ns), kind.header, kind.row("a", v[0]))
	wantTable(t, k.run("get", kind.singular+"/a", "-n", ns, "-o", "wide"), kind.header, kind.row("a", v[0]))
	k.run("create", "-f", k.file(kind.singular+"-other.yaml", kind.manifest(ns+"-other", "b", v[1])))
	// In key order, as kube-apiserver lists from etcd: "<ns>-other/b"
	// before "<ns>/a", '-' sorting before '/'.
	wantTable(t, k.run("get", kind.resource, "-A"), append([]string{"NAMESPACE"}, kind.header...),
		append([]string{ns + "-other"}, kind.row("b", v[1])...), append([]string{ns}, kind.row("a", v[0])...))
	wantTable(t, k.run("get", kind.resource, "--all-namespaces", "-o", "wide"), append([]string{"NAMESPACE"}, kind.header...),
		append([]string{ns + "-other"}, kind.row("b", v[1])...), append([]string{ns}, kind.row("a", v[0])...))
	k.out(kind.printed+"/a", "get", kind.resource, "-n", ns, "-o", "name")
	k.out("a", "get", kind.resource, "-n", ns, "--no-headers", "-o", "custom-columns=N:.metadata.name")
	k.fails(fmt.Sprintf(`Error from server (NotFound): %s.coordination.k8s.io "nope" not found`, kind.resource), "get", kind.resource, "nope", "-n", ns)
	if r := k.run("get", kind.resource, "-n", "kc-empty"); r.stdout != "" || strings.TrimSpace(r.stderr) != "No resources found in kc-empty namespace." {
		t.Fatalf("get in an empty namespace:\n%s", r)
	}

	// -o yaml round-trips: it decodes to what the API returns, and
	// replace -f of it is accepted as is.
	r := k.run("get", kind.resource, "a", "-n", ns, "-o", "yaml", "--show-managed-fields")
	var fromYAML map[string]any
	if err := yaml.Unmarshal([]byte(r.stdout), &fromYAML); err != nil {
		t.Fatalf("-o yaml does not decode: %v\n%s", err, r)
	}
	rj := k.run("get", kind.resource, "a", "-n", ns, "-o", "json", "--show-managed-fields")
	var fromJSON map[string]any
	if err := json.Unmarshal([]byte(rj.stdout), &fromJSON); err != nil {
		t.Fatalf("-o json does not decode: %v\n%s", err, rj)
	}
	if !reflect.DeepEqual(fromYAML, fromJSON) {
		t.Fatalf("-o yaml and -o json differ:\n%s\n%s", r, rj)
	}
	raw, err := cs.CoordinationV1().RESTClient().Get().AbsPath(kcPath(kind, ns, "a")).DoRaw(opCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var fromAPI map[string]any
	if err := json.Unmarshal(raw, &fromAPI); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromYAML, fromAPI) {
		t.Fatalf("-o yaml is not the object:\n%s\nAPI: %s", r, raw)
	}
	md, _ := fromYAML["metadata"].(map[string]any)
	if md["name"] != "a" || md["namespace"] != ns || md["uid"] == nil || md["resourceVersion"] == nil || md["creationTimestamp"] == nil || md["managedFields"] == nil {
		t.Fatalf("-o yaml metadata %v:\n%s", md, r)
	}
	// Without --show-managed-fields, -o yaml is the same less managedFields.
	r = k.run("get", kind.resource, "a", "-n", ns, "-o", "yaml")
	var plain map[string]any
	if err := yaml.Unmarshal([]byte(r.stdout), &plain); err != nil {
		t.Fatalf("-o yaml does not decode: %v\n%s", err, r)
	}
	delete(md, "managedFields")
	if !reflect.DeepEqual(plain, fromYAML) {
		t.Fatalf("-o yaml without managed fields:\n%s\nwant %v", r, fromYAML)
	}
	k.out(kind.printed+"/a replaced", "replace", "-f", k.file(kind.singular+"-a-out.yaml", r.stdout))
	wantValue("a", v[0])

	// apply -f: created, unchanged, configured, unchanged.
	applied := k.file(kind.singular+"-c.yaml", kind.manifest(ns, "c", v[0]))
	k.out(kind.printed+"/c created", "apply", "-f", applied)
	k.out(kind.printed+"/c unchanged", "apply", "-f", applied)
	k.out(kind.printed+"/c configured", "apply", "-f", k.file(kind.singular+"-c.yaml", kind.manifest(ns, "c", v[1])))
	k.out(kind.printed+"/c unchanged", "apply", "-f", applied)
	wantValue("c", v[1])
	if got := strings.TrimSpace(k.run("get", kind.resource, "c", "-n", ns, "-o", `jsonpath={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`).stdout); !strings.Contains(got, `"`+v[1]+`"`) {
		t.Fatalf("last-applied-configuration %q", got)
	}
	k.run("apply", "-f", applied, "--dry-run=server")
	wantValue("c", v[1])

	// apply --server-side: created and recorded under the manager kubectl.
	ssa := k.file(kind.singular+"-d.yaml", kind.manifest(ns, "d", v[0]))
	k.out(kind.printed+"/d serverside-applied", "apply", "--server-side", "-f", ssa)
	k.out(kind.printed+"/d serverside-applied", "apply", "--server-side", "-f", k.file(kind.singular+"-d.yaml", kind.manifest(ns, "d", v[7])))
	wantValue("d", v[7])
	k.out("kubectl=Apply", "get", kind.resource, "d", "-n", ns, "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}={.operation}{end}`)
	// Another manager owning the field conflicts; --force-conflicts takes it.
	k.run("patch", kind.resource, "d", "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{%q:%q}}`, kind.yamlKey, v[1]))
	k.fails(`error: Apply failed with 1 conflict: conflict with "kubectl-patch" using `+kind.apiVersion+`: .spec.`+kind.yamlKey,
		"apply", "--server-side", "-f", k.file(kind.singular+"-d.yaml", kind.manifest(ns, "d", v[6])))
	k.out(kind.printed+"/d serverside-applied", "apply", "--server-side", "--force-conflicts", "-f", k.file(kind.singular+"-d.yaml", kind.manifest(ns, "d", v[6])))
	wantValue("d", v[6])

	// edit, with an editor that rewrites the value.
	editor := k.file("edit-"+kind.singular+".sh", fmt.Sprintf("#!/bin/sh\nexec sed -i -e 's/^  %s: .*$/  %s: %s/' \"$1\"\n", kind.yamlKey, kind.yamlKey, v[2]))
	r = k.try([]string{"KUBE_EDITOR=" + editor, "EDITOR=" + editor}, "edit", kind.resource, "a", "-n", ns)
	if r.err != nil || strings.TrimSpace(r.stdout) != kind.printed+"/a edited" {
		t.Fatalf("edit:\n%s", r)
	}
	wantValue("a", v[2])
	// An editor that changes nothing cancels the edit.
	r = k.try([]string{"KUBE_EDITOR=true"}, "edit", kind.resource, "a", "-n", ns)
	if r.err != nil || !strings.Contains(r.stderr, "Edit cancelled, no changes made.") {
		t.Fatalf("edit without changes:\n%s", r)
	}

	// patch with each type.
	for _, p := range []struct{ typ, body, value string }{
		{"merge", fmt.Sprintf(`{"spec":{%q:%q}}`, kind.yamlKey, v[3]), v[3]},
		{"json", fmt.Sprintf(`[{"op":"replace","path":"/spec/%s","value":%q}]`, kind.yamlKey, v[4]), v[4]},
		{"strategic", fmt.Sprintf(`{"spec":{%q:%q}}`, kind.yamlKey, v[5]), v[5]},
	} {
		k.out(kind.printed+"/a patched", "patch", kind.resource, "a", "-n", ns, "--type="+p.typ, "-p", p.body)
		wantValue("a", p.value)
	}
	k.out(kind.printed+"/a patched (no change)", "patch", kind.resource, "a", "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{%q:%q}}`, kind.yamlKey, v[5]))
	k.fails(`The request is invalid`, "patch", kind.resource, "a", "-n", ns, "--type=json", "-p", `[{"op":"test","path":"/spec/nothing","value":"x"}]`)
	k.out(kind.printed+"/a labeled", "label", kind.resource, "a", "-n", ns, "team=x")
	k.out(kind.printed+"/a annotated", "annotate", kind.resource, "a", "-n", ns, "note=y")
	k.out("a", "get", kind.resource, "-n", ns, "-l", "team=x", "-o", "jsonpath={.items[*].metadata.name}")

	// describe.
	r = k.run("describe", kind.resource, "a", "-n", ns)
	desc := strings.Join(strings.Fields(r.stdout), " ")
	for _, want := range []string{"Name: a", "Namespace: " + ns, "Labels: team=x", "Annotations: note: y", kind.describe(v[5]), "Events: <none>"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, r)
		}
	}
	if r.stderr != "" {
		t.Fatalf("describe wrote to stderr:\n%s", r)
	}

	// explain.
	r = k.run("explain", kind.explain)
	for _, want := range kind.explained {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("explain %s lacks %q:\n%s", kind.explain, want, r)
		}
	}

	// get -w: the initial table, then a row per change.
	kcWatch(t, k, kind, ns, v[5], v[6])

	// delete one, then all in a namespace.
	k.out(fmt.Sprintf(`%s "a" deleted`, kind.printed), "delete", kind.resource, "a", "-n", ns)
	k.fails(fmt.Sprintf(`Error from server (NotFound): %s.coordination.k8s.io "a" not found`, kind.resource), "get", kind.resource, "a", "-n", ns)
	k.fails(fmt.Sprintf(`Error from server (NotFound): %s.coordination.k8s.io "a" not found`, kind.resource), "delete", kind.resource, "a", "-n", ns)
	k.out("", "delete", kind.resource, "a", "-n", ns, "--ignore-not-found")
	for _, name := range []string{"e", "f", "g"} {
		k.run("create", "-f", k.file(kind.singular+"-"+name+".yaml", kind.manifest(ns, name, v[0])))
	}
	r = k.run("delete", kind.resource, "--all", "-n", ns)
	var want []string
	for _, name := range []string{"c", "d", "e", "f", "g"} {
		want = append(want, fmt.Sprintf(`%s "%s" deleted`, kind.printed, name))
	}
	if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); !slices.Equal(got, want) {
		t.Fatalf("delete --all: %q, want %q:\n%s", got, want, r)
	}
	if r := k.run("get", kind.resource, "-n", ns); r.stdout != "" || strings.TrimSpace(r.stderr) != "No resources found in "+ns+" namespace." {
		t.Fatalf("get after delete --all:\n%s", r)
	}
	if r := k.run("delete", kind.resource, "--all", "-n", ns); strings.TrimSpace(r.stdout) != "No resources found" || r.stderr != "" {
		t.Fatalf("delete --all in an empty namespace:\n%s", r)
	}
	// The other namespace is untouched.
	wantTable(t, k.run("get", kind.resource, "-A"), append([]string{"NAMESPACE"}, kind.header...), append([]string{ns + "-other"}, kind.row("b", v[1])...))
	k.out(fmt.Sprintf(`%s "b" deleted`, kind.printed), "delete", "-f", filepath.Join(k.dir, kind.singular+"-other.yaml"))
}

func kcPath(kind kcKind, ns, name string) string {
	return "/apis/" + kind.apiVersion + "/namespaces/" + ns + "/" + kind.resource + "/" + name
}

// kcWatch runs kubectl get -w on ns, where object a has value from, changes
// a to to with kubectl patch and waits for the new row.
func kcWatch(t *testing.T, k *kcCtl, kind kcKind, ns, from, to string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcTimeout)
	defer cancel()
	args := []string{"get", kind.resource, "-n", ns, "-w"}
	cmd := k.command(ctx, nil, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	var seen []string
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	fail := func(format string, a ...any) {
		t.Helper()
		cancel()
		_ = cmd.Wait()
		t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), kcResult{args: args, stdout: strings.Join(seen, "\n"), stderr: stderr.String(), err: ctx.Err()})
	}
	// next waits for a line whose fields start with want.
	next := func(want []string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					fail("kubectl get -w ended before printing %q", want)
				}
				seen = append(seen, l)
				if f := strings.Fields(l); len(f) == len(want)+1 && slices.Equal(f[:len(want)], want) {
					return
				}
			case <-ctx.Done():
				fail("no %q from kubectl get -w", want)
			}
		}
	}
	next(kind.header[:len(kind.header)-1])
	next(kind.row("a", from))
	time.Sleep(300 * time.Millisecond) // let the watch start
	k.out(kind.printed+"/a patched", "patch", kind.resource, "a", "-n", ns, "--type=merge", "-p", fmt.Sprintf(`{"spec":{%q:%q}}`, kind.yamlKey, to))
	next(kind.row("a", to))
	k.run("create", "-f", k.file(kind.singular+"-w.yaml", kind.manifest(ns, "w", from)))
	next(kind.row("w", from))
	k.run("delete", kind.resource, "w", "-n", ns)
	cancel()
	err = cmd.Wait()
	for l := range lines {
		seen = append(seen, l)
	}
	if s := stderr.String(); s != "" && !strings.Contains(s, "signal: killed") {
		t.Fatalf("kubectl get -w wrote to stderr (%v):\n%s", err, kcResult{args: args, stdout: strings.Join(seen, "\n"), stderr: s, err: err})
	}
}

// kcRecorder records the Content-Type of every answer client-go gets.
type kcRecorder struct {
	rt http.RoundTripper
	mu sync.Mutex
	ct map[string][]string // "METHOD path" -> content types
}

func (r *kcRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.ct[req.Method+" "+req.URL.Path] = append(r.ct[req.Method+" "+req.URL.Path], resp.Header.Get("Content-Type"))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *kcRecorder) types() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.ct))
	for k, v := range r.ct {
		out[k] = slices.Clone(v)
	}
	return out
}

// kcRecorded returns a copy of cfg whose answers are recorded.
func kcRecorded(cfg *rest.Config) (*rest.Config, *kcRecorder) {
	rec := &kcRecorder{ct: map[string][]string{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.rt = rt; return rec })
	return cfg, rec
}

var (
	kcLeasesGVR  = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	kcLCAlphaGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1alpha1", Resource: "leasecandidates"}
)

// TestClientGoClients drives client-go's typed clientset (JSON and
// protobuf), its dynamic client, its metadata-only client and a metadata
// SharedInformer against a follower.
func TestClientGoClients(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()

	for _, pb := range []bool{false, true} {
		name, wantCT := "typed-json", "application/json"
		if pb {
			name, wantCT = "typed-protobuf", "application/vnd.kubernetes.protobuf"
		}
		t.Run(name, func(t *testing.T) {
			cfg, rec := kcRecorded(c.Config(f, pb))
			cs := clientset(t, cfg)
			ns := "kc-" + name
			ctx := opCtx(t)

			leases := cs.CoordinationV1().Leases(ns)
			l, err := leases.Create(ctx, newLease("a", "me"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.Spec.HolderIdentity = ptr.To("you")
			if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil || holder(l) != "you" {
				t.Fatalf("update: %v %v", err, l)
			}
			if l, err = leases.Patch(ctx, "a", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"them"}}`), metav1.PatchOptions{}); err != nil || holder(l) != "them" {
				t.Fatalf("patch: %v %v", err, l)
			}
			if got, err := leases.Get(ctx, "a", metav1.GetOptions{}); err != nil || holder(got) != "them" || got.ResourceVersion != l.ResourceVersion {
				t.Fatalf("get: %v %v", err, got)
			}
			if list, err := leases.List(ctx, metav1.ListOptions{}); err != nil || !slices.Equal(names(list.Items), []string{ns + "/a"}) {
				t.Fatalf("list: %v %v", err, list)
			}
			if err := leases.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := leases.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v", err)
			}

			lcs := cs.CoordinationV1beta1().LeaseCandidates(ns)
			lc, err := lcs.Create(ctx, &coordinationv1beta1.LeaseCandidate{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler-x"},
				Spec: coordinationv1beta1.LeaseCandidateSpec{
					LeaseName: "kube-scheduler", BinaryVersion: "1.33.0", EmulationVersion: "1.32.0",
					Strategy: coordinationv1.OldestEmulationVersion,
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			lc.Spec.PingTime = ptr.To(metav1.NewMicroTime(time.Now()))
			if lc, err = lcs.Update(ctx, lc, metav1.UpdateOptions{}); err != nil || lc.Spec.PingTime == nil {
				t.Fatalf("update LeaseCandidate: %v %v", err, lc)
			}
			if got, err := lcs.Get(ctx, lc.Name, metav1.GetOptions{}); err != nil || got.ResourceVersion != lc.ResourceVersion || got.Spec.BinaryVersion != "1.33.0" {
				t.Fatalf("get LeaseCandidate: %v %v", err, got)
			}
			if err := lcs.Delete(ctx, lc.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}

			for req, cts := range rec.types() {
				for _, ct := range cts {
					if ct != wantCT {
						t.Errorf("%s answered %q, want %q", req, ct, wantCT)
					}
				}
			}
		})
	}

	t.Run("dynamic", func(t *testing.T) {
		cfg := c.Config(f, false)
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			gvr    schema.GroupVersionResource
			kind   string
			obj    func(name string) map[string]any
			field  []string
			values [4]string
		}{
			{kcLeasesGVR, "Lease", func(name string) map[string]any {
				return map[string]any{"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "kc"}}, "spec": map[string]any{"holderIdentity": "me", "leaseDurationSeconds": int64(15)}}
			}, []string{"spec", "holderIdentity"}, [4]string{"me", "updated", "patched", "applied"}},
			{kcLCAlphaGVR, "LeaseCandidate", func(name string) map[string]any {
				return map[string]any{"metadata": map[string]any{"name": name, "labels": map[string]any{"app": "kc"}}, "spec": map[string]any{
					"leaseName": "kube-controller-manager", "binaryVersion": "1.32.0", "emulationVersion": "1.32.0",
					"preferredStrategies": []any{"OldestEmulationVersion"},
				}}
			}, []string{"spec", "binaryVersion"}, [4]string{"1.32.0", "1.33.0", "1.34.0", "1.35.0"}},
		} {
			t.Run(tc.gvr.Resource+"."+tc.gvr.Version, func(t *testing.T) {
				ctx := opCtx(t)
				ns := "kc-dyn-" + tc.gvr.Version
				res := dc.Resource(tc.gvr).Namespace(ns)
				apiVersion := tc.gvr.GroupVersion().String()
				mk := func(name string) *unstructured.Unstructured {
					u := &unstructured.Unstructured{Object: tc.obj(name)}
					u.SetAPIVersion(apiVersion)
					u.SetKind(tc.kind)
					return u
				}
				value := func(u *unstructured.Unstructured) string {
					s, _, _ := unstructured.NestedString(u.Object, tc.field...)
					return s
				}
				list, err := res.List(ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) != 0 || list.GetResourceVersion() == "" || list.GetKind() != tc.kind+"List" {
					t.Fatalf("list: %v %v", err, list)
				}
				w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()

				u, err := res.Create(ctx, mk("x"), metav1.CreateOptions{})
				if err != nil || u.GetAPIVersion() != apiVersion || u.GetKind() != tc.kind || value(u) != tc.values[0] || u.GetUID() == "" {
					t.Fatalf("create: %v %v", err, u)
				}
				if _, err := res.Create(ctx, mk("x"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
					t.Fatalf("create again: %v", err)
				}
				if err := unstructured.SetNestedField(u.Object, tc.values[1], tc.field...); err != nil {
					t.Fatal(err)
				}
				if u, err = res.Update(ctx, u, metav1.UpdateOptions{}); err != nil || value(u) != tc.values[1] {
					t.Fatalf("update: %v %v", err, u)
				}
				patch := fmt.Sprintf(`{"spec":{%q:%q}}`, tc.field[1], tc.values[2])
				if u, err = res.Patch(ctx, "x", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil || value(u) != tc.values[2] {
					t.Fatalf("patch: %v %v", err, u)
				}
				ac := mk("x")
				if err := unstructured.SetNestedField(ac.Object, tc.values[3], tc.field...); err != nil {
					t.Fatal(err)
				}
				if u, err = res.Apply(ctx, "x", ac, metav1.ApplyOptions{FieldManager: "kc-test", Force: true}); err != nil || value(u) != tc.values[3] {
					t.Fatalf("apply: %v %v", err, u)
				}
				got, err := res.Get(ctx, "x", metav1.GetOptions{})
				if err != nil || got.GetResourceVersion() != u.GetResourceVersion() || value(got) != tc.values[3] || got.GetAPIVersion() != apiVersion {
					t.Fatalf("get: %v %v", err, got)
				}
				if _, err := res.Create(ctx, mk("y"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if list, err = res.List(ctx, metav1.ListOptions{LabelSelector: "app=kc"}); err != nil || len(list.Items) != 2 || list.Items[0].GetName() != "x" || list.Items[1].GetName() != "y" {
					t.Fatalf("list app=kc: %v %v", err, list)
				}
				if list, err = res.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=y"}); err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "y" {
					t.Fatalf("list metadata.name=y: %v %v", err, list)
				}
				if all, err := dc.Resource(tc.gvr).List(ctx, metav1.ListOptions{}); err != nil || len(all.Items) < 2 {
					t.Fatalf("list all namespaces: %v %v", err, all)
				}
				if err := res.Delete(ctx, "x", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				if err := res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := res.Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("get after delete: %v", err)
				}

				want := []string{"ADDED x " + tc.values[0], "MODIFIED x " + tc.values[1], "MODIFIED x " + tc.values[2], "MODIFIED x " + tc.values[3], "ADDED y " + tc.values[0], "DELETED x " + tc.values[3], "DELETED y " + tc.values[0]}
				var events []string
				timeout := time.After(opTimeout)
				for len(events) < len(want) {
					select {
					case ev, ok := <-w.ResultChan():
						if !ok {
							t.Fatalf("watch ended after %q", events)
						}
						u, isU := ev.Object.(*unstructured.Unstructured)
						if !isU || u.GetAPIVersion() != apiVersion || u.GetKind() != tc.kind {
							t.Fatalf("watch event %s %#v", ev.Type, ev.Object)
						}
						events = append(events, fmt.Sprintf("%s %s %s", ev.Type, u.GetName(), value(u)))
					case <-timeout:
						t.Fatalf("watch: %q, want %q", events, want)
					}
				}
				if !slices.Equal(events, want) {
					t.Fatalf("watch: %q, want %q", events, want)
				}
			})
		}
	})

	t.Run("metadata", func(t *testing.T) {
		ctx := opCtx(t)
		ns := "kc-meta"
		cs := c.Client(c.Leader(), true)
		cfg, rec := kcRecorded(&rest.Config{Host: c.Nodes[f].URL(), QPS: -1, Timeout: 30 * time.Second})
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := mc.Resource(kcLeasesGVR).Namespace(ns)

		list, err := res.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 || list.ResourceVersion == "" {
			t.Fatalf("list: %v %v", err, list)
		}
		w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()

		in := newLease("a", "me")
		in.Labels = map[string]string{"app": "kc"}
		in.Annotations = map[string]string{"note": "x"}
		l, err := cs.CoordinationV1().Leases(ns).Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := res.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if m.Name != "a" || m.Namespace != ns || m.UID != l.UID || m.ResourceVersion != l.ResourceVersion || m.Labels["app"] != "kc" || m.Annotations["note"] != "x" || !m.CreationTimestamp.Equal(&l.CreationTimestamp) || len(m.ManagedFields) == 0 {
			t.Fatalf("get: %+v, want the metadata of %+v", m, l)
		}
		if list, err = res.List(ctx, metav1.ListOptions{LabelSelector: "app=kc"}); err != nil || len(list.Items) != 1 || list.Items[0].UID != l.UID {
			t.Fatalf("list: %v %+v", err, list)
		}
		if all, err := mc.Resource(kcLeasesGVR).List(ctx, metav1.ListOptions{}); err != nil || len(all.Items) == 0 {
			t.Fatalf("list all namespaces: %v %+v", err, all)
		}
		if m, err = res.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{}); err != nil || m.Labels["patched"] != "yes" || m.Name != "a" {
			t.Fatalf("patch: %v %+v", err, m)
		}
		if got, err := cs.CoordinationV1().Leases(ns).Get(ctx, "a", metav1.GetOptions{}); err != nil || got.Labels["patched"] != "yes" || holder(got) != "me" {
			t.Fatalf("patched lease: %v %v", err, got)
		}
		if err := res.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := res.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("get after delete: %v", err)
		}

		var events []string
		timeout := time.After(opTimeout)
		for len(events) < 3 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch ended after %q", events)
				}
				pm, isPM := ev.Object.(*metav1.PartialObjectMetadata)
				if !isPM || pm.Name != "a" || pm.UID != l.UID {
					t.Fatalf("watch event %s %#v", ev.Type, ev.Object)
				}
				events = append(events, string(ev.Type)+" "+pm.Labels["patched"])
			case <-timeout:
				t.Fatalf("watch: %q", events)
			}
		}
		if want := []string{"ADDED ", "MODIFIED yes", "DELETED yes"}; !slices.Equal(events, want) {
			t.Fatalf("watch: %q, want %q", events, want)
		}

		// It asked for PartialObjectMetadata in protobuf and got it.
		answered := rec.types()
		for _, req := range []string{
			"GET /apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/a",
			"GET /apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases",
			"GET /apis/coordination.k8s.io/v1/leases",
			"PATCH /apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/a",
		} {
			if cts := answered[req]; len(cts) == 0 || !strings.HasPrefix(cts[0], "application/vnd.kubernetes.protobuf") {
				t.Errorf("%s answered %q, want protobuf", req, cts)
			}
		}
	})

	t.Run("metadata-informer", func(t *testing.T) {
		ns := "kc-inf"
		mc, err := metadata.NewForConfig(&rest.Config{Host: c.Nodes[f].URL(), QPS: -1, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
		inf := factory.ForResource(kcLeasesGVR).Informer()
		var (
			mu     sync.Mutex
			events []string
		)
		record := func(typ string) func(obj any) {
			return func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				if pm, ok := obj.(*metav1.PartialObjectMetadata); ok {
					mu.Lock()
					events = append(events, typ+" "+pm.Name)
					mu.Unlock()
				}
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    record("add"),
			UpdateFunc: func(_, obj any) { record("update")(obj) },
			DeleteFunc: record("delete"),
		}); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer func() { close(stop); factory.Shutdown() }()
		factory.Start(stop)
		syncCtx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}

		// 20 writes through every member: 10 creates, 6 updates, 4
		// deletes.
		clients := make([]kubernetes.Interface, len(c.Nodes))
		for i := range c.Nodes {
			clients[i] = c.Client(i, i%2 == 0)
		}
		ctx := opCtx(t)
		for i := range 20 {
			leases := clients[i%len(clients)].CoordinationV1().Leases(ns)
			var err error
			switch {
			case i < 10:
				_, err = leases.Create(ctx, newLease(fmt.Sprintf("l%02d", i), "me"), metav1.CreateOptions{})
			case i < 16:
				_, err = leases.Patch(ctx, fmt.Sprintf("l%02d", i-10), types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"write":"%d"}}}`, i)), metav1.PatchOptions{})
			default:
				err = leases.Delete(ctx, fmt.Sprintf("l%02d", i-10), metav1.DeleteOptions{})
			}
			if err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}

		final, err := clients[0].CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantState := map[string]string{}
		for _, l := range final.Items {
			wantState[ns+"/"+l.Name] = l.ResourceVersion + " " + l.Labels["write"]
		}
		if len(wantState) != 6 {
			t.Fatalf("%d leases after the writes, want 6", len(wantState))
		}
		state := func() map[string]string {
			got := map[string]string{}
			for _, obj := range inf.GetStore().List() {
				pm := obj.(*metav1.PartialObjectMetadata)
				got[pm.Namespace+"/"+pm.Name] = pm.ResourceVersion + " " + pm.Labels["write"]
			}
			return got
		}
		if !testcluster.WaitFor(context.Background(), opTimeout, func() bool { return reflect.DeepEqual(state(), wantState) }) {
			t.Fatalf("informer has %v, want %v", state(), wantState)
		}
		// The handlers hear of every write, after the store.
		count := func() (map[string]int, []string) {
			mu.Lock()
			defer mu.Unlock()
			n := map[string]int{}
			for _, e := range events {
				typ, _, _ := strings.Cut(e, " ")
				n[typ]++
			}
			return n, slices.Clone(events)
		}
		want := map[string]int{"add": 10, "update": 6, "delete": 4}
		if !testcluster.WaitFor(context.Background(), opTimeout, func() bool { n, _ := count(); return reflect.DeepEqual(n, want) }) {
			n, evs := count()
			t.Fatalf("informer events %v, want %v: %q", n, want, evs)
		}
	})
}
