package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/apis/coordination/leasecandidate"
	"github.com/leasehold/leasehold/apis/coordination/v1alpha1"
	"github.com/leasehold/leasehold/internal/testcluster"
)

// These tests drive LeaseCandidate, in every served version, the way
// clients do: client-go's typed clientsets (v1beta1, v1alpha2) in protobuf
// and JSON, client-go's dynamic client and raw HTTP in JSON and protobuf
// (v1alpha1, which client-go v0.37 no longer has), always against a
// follower. They also check the conversion between the versions as clients
// see it on the wire, validation, discovery, table output and client-go's
// own LeaseCandidate helper.

const (
	lcGroupPath = "/apis/coordination.k8s.io/"
	// lcInternal is part of the key of the stored form's annotation that
	// keeps a v1alpha1 writer's whole preferredStrategies list. No answer
	// of any version may ever show it.
	lcInternal  = "coordination.leasehold.io"
	lcOEV       = "OldestEmulationVersion"
	lcTableJSON = "application/json;as=Table;v=v1;g=meta.k8s.io"
	lcProtobuf  = "application/vnd.kubernetes.protobuf"
)

// lcVersions are the served LeaseCandidate versions, preferred first.
var lcVersions = []string{"v1beta1", "v1alpha2", "v1alpha1"}

// lcObj is a LeaseCandidate of any version: Strategies is v1alpha1's
// preferredStrategies, or [strategy] for v1alpha2 and v1beta1.
type lcObj struct {
	metav1.ObjectMeta
	LeaseName, BinaryVersion, EmulationVersion string
	Strategies                                 []string
	PingTime, RenewTime                        *metav1.MicroTime
}

func (o *lcObj) copy() *lcObj {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Strategies = slices.Clone(o.Strategies)
	c.PingTime, c.RenewTime = o.PingTime.DeepCopy(), o.RenewTime.DeepCopy()
	return &c
}

func (o *lcObj) spec() string {
	return fmt.Sprintf("{leaseName:%q binaryVersion:%q emulationVersion:%q strategies:%q pingTime:%s renewTime:%s}",
		o.LeaseName, o.BinaryVersion, o.EmulationVersion, o.Strategies, lcMicroString(o.PingTime), lcMicroString(o.RenewTime))
}

func lcMicroString(m *metav1.MicroTime) string {
	if m == nil {
		return "<nil>"
	}
	return m.UTC().Format(metav1.RFC3339Micro)
}

func lcMicroEqual(a, b *metav1.MicroTime) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Time.Equal(b.Time)
}

func (o *lcObj) sameSpec(p *lcObj) bool {
	return o.LeaseName == p.LeaseName && o.BinaryVersion == p.BinaryVersion && o.EmulationVersion == p.EmulationVersion &&
		slices.Equal(o.Strategies, p.Strategies) && lcMicroEqual(o.PingTime, p.PingTime) && lcMicroEqual(o.RenewTime, p.RenewTime)
}

// lcMicro is t as a MicroTime, at the precision the wire carries.
func lcMicro(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t.Truncate(time.Microsecond).UTC())
	return &m
}

// lcStrategies is what the verb tests write in version: three preferred
// strategies in v1alpha1, so that a lossy conversion would show.
func lcStrategies(version string) []string {
	if version == "v1alpha1" {
		return []string{lcOEV, "example.com/b", "example.com/c"}
	}
	return []string{lcOEV}
}

func lcNew(version, name, leaseName string) *lcObj {
	return &lcObj{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		LeaseName:  leaseName, BinaryVersion: "1.31.0", EmulationVersion: "1.30.0",
		Strategies: lcStrategies(version), RenewTime: lcMicro(time.Now()),
	}
}

func lcStrategyList(s []coordinationv1.CoordinatedLeaseStrategy) []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s))
	for i := range s {
		out[i] = string(s[i])
	}
	return out
}

func lcStrategyTypes(s []string) []coordinationv1.CoordinatedLeaseStrategy {
	if s == nil {
		return nil
	}
	out := make([]coordinationv1.CoordinatedLeaseStrategy, len(s))
	for i := range s {
		out[i] = coordinationv1.CoordinatedLeaseStrategy(s[i])
	}
	return out
}

func lcFirstStrategy(s []string) coordinationv1.CoordinatedLeaseStrategy {
	if len(s) == 0 {
		return ""
	}
	return coordinationv1.CoordinatedLeaseStrategy(s[0])
}

// lcFrom converts a LeaseCandidate of any version, typed or unstructured
// (v1alpha1), to an lcObj. It refuses an object that shows the internal
// annotation.
func lcFrom(obj runtime.Object) (*lcObj, error) {
	out := &lcObj{}
	switch o := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		out.LeaseName, out.BinaryVersion, out.EmulationVersion = o.Spec.LeaseName, o.Spec.BinaryVersion, o.Spec.EmulationVersion
		out.PingTime, out.RenewTime = o.Spec.PingTime.DeepCopy(), o.Spec.RenewTime.DeepCopy()
		if o.Spec.Strategy != "" {
			out.Strategies = []string{string(o.Spec.Strategy)}
		}
	case *coordinationv1alpha2.LeaseCandidate:
		o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		out.LeaseName, out.BinaryVersion, out.EmulationVersion = o.Spec.LeaseName, o.Spec.BinaryVersion, o.Spec.EmulationVersion
		out.PingTime, out.RenewTime = o.Spec.PingTime.DeepCopy(), o.Spec.RenewTime.DeepCopy()
		if o.Spec.Strategy != "" {
			out.Strategies = []string{string(o.Spec.Strategy)}
		}
	case *v1alpha1.LeaseCandidate:
		o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
		out.LeaseName, out.BinaryVersion, out.EmulationVersion = o.Spec.LeaseName, o.Spec.BinaryVersion, o.Spec.EmulationVersion
		out.PingTime, out.RenewTime = o.Spec.PingTime.DeepCopy(), o.Spec.RenewTime.DeepCopy()
		out.Strategies = lcStrategyList(o.Spec.PreferredStrategies)
	case *unstructured.Unstructured:
		if av := o.GetAPIVersion(); av != "" && av != "coordination.k8s.io/v1alpha1" {
			return nil, fmt.Errorf("unstructured LeaseCandidate of apiVersion %q", av)
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		var a v1alpha1.LeaseCandidate
		if err := json.Unmarshal(data, &a); err != nil {
			return nil, fmt.Errorf("%s: %v", data, err)
		}
		return lcFrom(&a)
	default:
		return nil, fmt.Errorf("%T is not a LeaseCandidate", obj)
	}
	for k := range out.Annotations {
		if strings.Contains(k, lcInternal) {
			return nil, fmt.Errorf("LeaseCandidate %s/%s shows the internal annotation %q", out.Namespace, out.Name, k)
		}
	}
	return out, nil
}

// lcTo converts o to a LeaseCandidate of version, with its TypeMeta set.
func lcTo(version string, o *lcObj) runtime.Object {
	tm := metav1.TypeMeta{Kind: "LeaseCandidate", APIVersion: "coordination.k8s.io/" + version}
	m := *o.ObjectMeta.DeepCopy()
	switch version {
	case "v1beta1":
		return &coordinationv1beta1.LeaseCandidate{TypeMeta: tm, ObjectMeta: m, Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: o.LeaseName, PingTime: o.PingTime.DeepCopy(), RenewTime: o.RenewTime.DeepCopy(),
			BinaryVersion: o.BinaryVersion, EmulationVersion: o.EmulationVersion, Strategy: lcFirstStrategy(o.Strategies)}}
	case "v1alpha2":
		return &coordinationv1alpha2.LeaseCandidate{TypeMeta: tm, ObjectMeta: m, Spec: coordinationv1alpha2.LeaseCandidateSpec{
			LeaseName: o.LeaseName, PingTime: o.PingTime.DeepCopy(), RenewTime: o.RenewTime.DeepCopy(),
			BinaryVersion: o.BinaryVersion, EmulationVersion: o.EmulationVersion, Strategy: lcFirstStrategy(o.Strategies)}}
	case "v1alpha1":
		return &v1alpha1.LeaseCandidate{TypeMeta: tm, ObjectMeta: m, Spec: v1alpha1.LeaseCandidateSpec{
			LeaseName: o.LeaseName, PingTime: o.PingTime.DeepCopy(), RenewTime: o.RenewTime.DeepCopy(),
			BinaryVersion: o.BinaryVersion, EmulationVersion: o.EmulationVersion, PreferredStrategies: lcStrategyTypes(o.Strategies)}}
	}
	panic("no LeaseCandidate version " + version)
}

func lcResult(obj runtime.Object, err error) (*lcObj, error) {
	if err != nil {
		return nil, err
	}
	return lcFrom(obj)
}

// lcList is a LeaseCandidateList of any version.
type lcList struct {
	RV, Continue string
	Remaining    *int64
	Items        []*lcObj
}

func (l *lcList) names() []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Name)
	}
	return out
}

func (l *lcList) keys() []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.Namespace+"/"+it.Name)
	}
	return out
}

func lcListFrom(obj runtime.Object, err error) (*lcList, error) {
	if err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, err
	}
	out := &lcList{RV: lm.GetResourceVersion(), Continue: lm.GetContinue(), Remaining: lm.GetRemainingItemCount()}
	for _, it := range items {
		o, err := lcFrom(it)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, o)
	}
	return out, nil
}

// lcWatch reads a watch of LeaseCandidates of any version.
type lcWatch struct{ w watch.Interface }

func (lw *lcWatch) next(t *testing.T, timeout time.Duration) (watch.EventType, *lcObj) {
	t.Helper()
	select {
	case ev, ok := <-lw.w.ResultChan():
		if !ok {
			t.Fatal("watch ended, want another event")
		}
		if ev.Type == watch.Error {
			t.Fatalf("ERROR event: %v", apierrors.FromObject(ev.Object))
		}
		o, err := lcFrom(ev.Object)
		if err != nil {
			t.Fatalf("%s event: %v", ev.Type, err)
		}
		return ev.Type, o
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
	}
	return "", nil
}

func (lw *lcWatch) expect(t *testing.T, typ watch.EventType, name string) *lcObj {
	t.Helper()
	got, o := lw.next(t, opTimeout)
	if got != typ || o.Name != name {
		t.Fatalf("event %s %s, want %s %s", got, o.Name, typ, name)
	}
	return o
}

func (lw *lcWatch) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev, ok := <-lw.w.ResultChan():
		if ok {
			t.Fatalf("unexpected event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(d):
	}
}

func lcWatchOf(w watch.Interface, err error) (*lcWatch, error) {
	if err != nil {
		return nil, err
	}
	return &lcWatch{w: w}, nil
}

// lcAPI is one client of LeaseCandidate in one version. A namespace of ""
// means all namespaces where that makes sense.
type lcAPI interface {
	create(ctx context.Context, ns string, o *lcObj, opts metav1.CreateOptions) (*lcObj, error)
	get(ctx context.Context, ns, name string, opts metav1.GetOptions) (*lcObj, error)
	list(ctx context.Context, ns string, opts metav1.ListOptions) (*lcList, error)
	update(ctx context.Context, ns string, o *lcObj, opts metav1.UpdateOptions) (*lcObj, error)
	patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*lcObj, error)
	delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
	deleteCollection(ctx context.Context, ns string, opts metav1.DeleteOptions, lo metav1.ListOptions) error
	watch(ctx context.Context, ns string, lo metav1.ListOptions) (*lcWatch, error)
	// watchPath watches through the deprecated /watch/ paths: of one
	// object when name is set.
	watchPath(ctx context.Context, ns, name string, lo metav1.ListOptions) (*lcWatch, error)
}

// lcTypedClient is what client-go's typed LeaseCandidate clients share.
type lcTypedClient[T, L any] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	DeleteCollection(ctx context.Context, opts metav1.DeleteOptions, listOpts metav1.ListOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// lcTyped is client-go's typed clientset for v1beta1 or v1alpha2.
type lcTyped[T, L runtime.Object] struct {
	version string
	client  func(ns string) lcTypedClient[T, L]
	rest    rest.Interface
}

func (a *lcTyped[T, L]) create(ctx context.Context, ns string, o *lcObj, opts metav1.CreateOptions) (*lcObj, error) {
	out, err := a.client(ns).Create(ctx, lcTo(a.version, o).(T), opts)
	return lcResult(out, err)
}

func (a *lcTyped[T, L]) get(ctx context.Context, ns, name string, opts metav1.GetOptions) (*lcObj, error) {
	out, err := a.client(ns).Get(ctx, name, opts)
	return lcResult(out, err)
}

func (a *lcTyped[T, L]) list(ctx context.Context, ns string, opts metav1.ListOptions) (*lcList, error) {
	out, err := a.client(ns).List(ctx, opts)
	return lcListFrom(out, err)
}

func (a *lcTyped[T, L]) update(ctx context.Context, ns string, o *lcObj, opts metav1.UpdateOptions) (*lcObj, error) {
	out, err := a.client(ns).Update(ctx, lcTo(a.version, o).(T), opts)
	return lcResult(out, err)
}

func (a *lcTyped[T, L]) patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*lcObj, error) {
	out, err := a.client(ns).Patch(ctx, name, pt, data, opts)
	return lcResult(out, err)
}

func (a *lcTyped[T, L]) delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return a.client(ns).Delete(ctx, name, opts)
}

func (a *lcTyped[T, L]) deleteCollection(ctx context.Context, ns string, opts metav1.DeleteOptions, lo metav1.ListOptions) error {
	return a.client(ns).DeleteCollection(ctx, opts, lo)
}

func (a *lcTyped[T, L]) watch(ctx context.Context, ns string, lo metav1.ListOptions) (*lcWatch, error) {
	return lcWatchOf(a.client(ns).Watch(ctx, lo))
}

func (a *lcTyped[T, L]) watchPath(ctx context.Context, ns, name string, lo metav1.ListOptions) (*lcWatch, error) {
	req := a.rest.Get().Prefix("watch")
	if ns != "" {
		req = req.Namespace(ns)
	}
	req = req.Resource("leasecandidates")
	if name != "" {
		req = req.Name(name)
	}
	return lcWatchOf(req.VersionedParams(&lo, scheme.ParameterCodec).Watch(ctx))
}

func lcBeta(t *testing.T, cfg *rest.Config) lcAPI {
	cs := clientset(t, cfg)
	return &lcTyped[*coordinationv1beta1.LeaseCandidate, *coordinationv1beta1.LeaseCandidateList]{
		version: "v1beta1",
		client: func(ns string) lcTypedClient[*coordinationv1beta1.LeaseCandidate, *coordinationv1beta1.LeaseCandidateList] {
			return cs.CoordinationV1beta1().LeaseCandidates(ns)
		},
		rest: cs.CoordinationV1beta1().RESTClient(),
	}
}

func lcAlpha2(t *testing.T, cfg *rest.Config) lcAPI {
	cs := clientset(t, cfg)
	return &lcTyped[*coordinationv1alpha2.LeaseCandidate, *coordinationv1alpha2.LeaseCandidateList]{
		version: "v1alpha2",
		client: func(ns string) lcTypedClient[*coordinationv1alpha2.LeaseCandidate, *coordinationv1alpha2.LeaseCandidateList] {
			return cs.CoordinationV1alpha2().LeaseCandidates(ns)
		},
		rest: cs.CoordinationV1alpha2().RESTClient(),
	}
}

// lcDynamic is client-go's dynamic client on v1alpha1.
type lcDynamic struct {
	dc dynamic.NamespaceableResourceInterface
	// raw (JSON) serves the deprecated watch paths, which the dynamic
	// client cannot build.
	raw *lcRaw
}

func lcDyn(t *testing.T, c *testcluster.Cluster, i int) lcAPI {
	dc, err := dynamic.NewForConfig(c.Config(i, false))
	if err != nil {
		t.Fatal(err)
	}
	return &lcDynamic{
		dc:  dc.Resource(schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1alpha1", Resource: "leasecandidates"}),
		raw: newLCRaw(c, i, "v1alpha1", runtime.ContentTypeJSON),
	}
}

func (d *lcDynamic) ri(ns string) dynamic.ResourceInterface {
	if ns == "" {
		return d.dc
	}
	return d.dc.Namespace(ns)
}

func lcUnstructured(o *lcObj) *unstructured.Unstructured {
	data, err := json.Marshal(lcTo("v1alpha1", o))
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	return u
}

func (d *lcDynamic) create(ctx context.Context, ns string, o *lcObj, opts metav1.CreateOptions) (*lcObj, error) {
	out, err := d.ri(ns).Create(ctx, lcUnstructured(o), opts)
	return lcResult(out, err)
}

func (d *lcDynamic) get(ctx context.Context, ns, name string, opts metav1.GetOptions) (*lcObj, error) {
	out, err := d.ri(ns).Get(ctx, name, opts)
	return lcResult(out, err)
}

func (d *lcDynamic) list(ctx context.Context, ns string, opts metav1.ListOptions) (*lcList, error) {
	out, err := d.ri(ns).List(ctx, opts)
	return lcListFrom(out, err)
}

func (d *lcDynamic) update(ctx context.Context, ns string, o *lcObj, opts metav1.UpdateOptions) (*lcObj, error) {
	out, err := d.ri(ns).Update(ctx, lcUnstructured(o), opts)
	return lcResult(out, err)
}

func (d *lcDynamic) patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*lcObj, error) {
	out, err := d.ri(ns).Patch(ctx, name, pt, data, opts)
	return lcResult(out, err)
}

func (d *lcDynamic) delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return d.ri(ns).Delete(ctx, name, opts)
}

func (d *lcDynamic) deleteCollection(ctx context.Context, ns string, opts metav1.DeleteOptions, lo metav1.ListOptions) error {
	return d.ri(ns).DeleteCollection(ctx, opts, lo)
}

func (d *lcDynamic) watch(ctx context.Context, ns string, lo metav1.ListOptions) (*lcWatch, error) {
	return lcWatchOf(d.ri(ns).Watch(ctx, lo))
}

func (d *lcDynamic) watchPath(ctx context.Context, ns, name string, lo metav1.ListOptions) (*lcWatch, error) {
	return d.raw.watchPath(ctx, ns, name, lo)
}

// lcRaw speaks HTTP itself, in JSON or protobuf, encoding and decoding with
// leasehold's own codecs (apis.Codecs): the way to reach v1alpha1 in
// protobuf, which no client-go v0.37 client can. Every answer is checked
// for its Content-Type and for the internal annotation, in its raw bytes.
type lcRaw struct {
	base, version, media string
	hc                   *http.Client
}

func newLCRaw(c *testcluster.Cluster, i int, version, media string) *lcRaw {
	return &lcRaw{base: c.Nodes[i].URL(), version: version, media: media, hc: &http.Client{Transport: &http.Transport{}}}
}

func (r *lcRaw) info() runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(apis.Codecs.SupportedMediaTypes(), r.media)
	if !ok {
		panic("no serializer for " + r.media)
	}
	return info
}

func (r *lcRaw) encode(obj runtime.Object, gv schema.GroupVersion) ([]byte, error) {
	return runtime.Encode(apis.Codecs.EncoderForVersion(r.info().Serializer, gv), obj)
}

func (r *lcRaw) path(ns, name string) string { return lcPath(r.version, ns, name) }

// lcQuery encodes options as query parameters, as client-go does.
func lcQuery(opts runtime.Object) string {
	v, err := apis.ParameterCodec.EncodeParameters(opts, v1alpha1.SchemeGroupVersion)
	if err != nil {
		panic(err)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// send makes one request and decodes the answer; an error answer becomes
// a *StatusError, as in client-go.
func (r *lcRaw) send(ctx context.Context, method, path string, body []byte, contentType string, want ...int) (runtime.Object, *schema.GroupVersionKind, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", r.media)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	what := method + " " + path
	if ct := resp.Header.Get("Content-Type"); ct != r.media {
		return nil, nil, fmt.Errorf("%s: HTTP %d with Content-Type %q, want %q: %q", what, resp.StatusCode, ct, r.media, data)
	}
	if bytes.Contains(data, []byte(lcInternal)) {
		return nil, nil, fmt.Errorf("%s: the answer shows the internal annotation: %q", what, data)
	}
	obj, gvk, err := apis.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: decoding the HTTP %d answer %q: %v", what, resp.StatusCode, data, err)
	}
	if resp.StatusCode >= 400 {
		st, ok := obj.(*metav1.Status)
		if !ok || int(st.Code) != resp.StatusCode || st.Status != metav1.StatusFailure {
			return nil, nil, fmt.Errorf("%s: HTTP %d answered %#v", what, resp.StatusCode, obj)
		}
		return nil, nil, &apierrors.StatusError{ErrStatus: *st}
	}
	if !slices.Contains(want, resp.StatusCode) {
		return nil, nil, fmt.Errorf("%s: HTTP %d, want %v", what, resp.StatusCode, want)
	}
	return obj, gvk, nil
}

// item checks that an answer is a LeaseCandidate (or list) of r's version.
func (r *lcRaw) item(kind string) func(runtime.Object, *schema.GroupVersionKind, error) (runtime.Object, error) {
	return func(obj runtime.Object, gvk *schema.GroupVersionKind, err error) (runtime.Object, error) {
		if err != nil {
			return nil, err
		}
		if want := (schema.GroupVersionKind{Group: "coordination.k8s.io", Version: r.version, Kind: kind}); gvk == nil || *gvk != want {
			return nil, fmt.Errorf("answer of kind %v, want %v", gvk, want)
		}
		return obj, nil
	}
}

func (r *lcRaw) one(obj runtime.Object, gvk *schema.GroupVersionKind, err error) (*lcObj, error) {
	return lcResult(r.item("LeaseCandidate")(obj, gvk, err))
}

func (r *lcRaw) create(ctx context.Context, ns string, o *lcObj, opts metav1.CreateOptions) (*lcObj, error) {
	body, err := r.encode(lcTo(r.version, o), schema.GroupVersion{Group: "coordination.k8s.io", Version: r.version})
	if err != nil {
		return nil, err
	}
	return r.one(r.send(ctx, "POST", r.path(ns, "")+lcQuery(&opts), body, r.media, http.StatusCreated))
}

func (r *lcRaw) get(ctx context.Context, ns, name string, opts metav1.GetOptions) (*lcObj, error) {
	return r.one(r.send(ctx, "GET", r.path(ns, name)+lcQuery(&opts), nil, "", http.StatusOK))
}

func (r *lcRaw) list(ctx context.Context, ns string, opts metav1.ListOptions) (*lcList, error) {
	return lcListFrom(r.item("LeaseCandidateList")(r.send(ctx, "GET", r.path(ns, "")+lcQuery(&opts), nil, "", http.StatusOK)))
}

func (r *lcRaw) update(ctx context.Context, ns string, o *lcObj, opts metav1.UpdateOptions) (*lcObj, error) {
	body, err := r.encode(lcTo(r.version, o), schema.GroupVersion{Group: "coordination.k8s.io", Version: r.version})
	if err != nil {
		return nil, err
	}
	return r.one(r.send(ctx, "PUT", r.path(ns, o.Name)+lcQuery(&opts), body, r.media, http.StatusOK, http.StatusCreated))
}

func (r *lcRaw) patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (*lcObj, error) {
	return r.one(r.send(ctx, "PATCH", r.path(ns, name)+lcQuery(&opts), data, string(pt), http.StatusOK))
}

func (r *lcRaw) delete(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	body, err := r.encode(&opts, metav1.SchemeGroupVersion)
	if err != nil {
		return err
	}
	obj, _, err := r.send(ctx, "DELETE", r.path(ns, name), body, r.media, http.StatusOK)
	if err != nil {
		return err
	}
	// The Lease and LeaseCandidate stores answer a Status, not the object.
	st, ok := obj.(*metav1.Status)
	if !ok || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != name || st.Details.Kind != "leasecandidates" || st.Details.Group != "coordination.k8s.io" || st.Details.UID == "" {
		return fmt.Errorf("delete answered %#v", obj)
	}
	return nil
}

func (r *lcRaw) deleteCollection(ctx context.Context, ns string, opts metav1.DeleteOptions, lo metav1.ListOptions) error {
	body, err := r.encode(&opts, metav1.SchemeGroupVersion)
	if err != nil {
		return err
	}
	_, err = r.item("LeaseCandidateList")(r.send(ctx, "DELETE", r.path(ns, "")+lcQuery(&lo), body, r.media, http.StatusOK))
	return err
}

func (r *lcRaw) watch(ctx context.Context, ns string, lo metav1.ListOptions) (*lcWatch, error) {
	lo.Watch = true
	return r.watchURL(ctx, r.path(ns, "")+lcQuery(&lo))
}

func (r *lcRaw) watchPath(ctx context.Context, ns, name string, lo metav1.ListOptions) (*lcWatch, error) {
	// /apis/coordination.k8s.io/<v>/watch/namespaces/<ns>/leasecandidates[/<name>]
	tail := strings.TrimPrefix(lcPath(r.version, ns, name), lcGroupPath+r.version)
	return r.watchURL(ctx, lcGroupPath+r.version+"/watch"+tail+lcQuery(&lo))
}

// lcEventDecoder decodes a watch event's object, refusing one that shows
// the internal annotation.
type lcEventDecoder struct{}

func (lcEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if bytes.Contains(data, []byte(lcInternal)) {
		return nil, nil, fmt.Errorf("a watch event shows the internal annotation: %q", data)
	}
	return apis.Codecs.UniversalDeserializer().Decode(data, defaults, into)
}

func (r *lcRaw) watchURL(ctx context.Context, path string) (*lcWatch, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", r.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", r.media)
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if obj, _, err := apis.Codecs.UniversalDeserializer().Decode(data, nil, nil); err == nil {
			if st, ok := obj.(*metav1.Status); ok {
				return nil, &apierrors.StatusError{ErrStatus: *st}
			}
		}
		return nil, fmt.Errorf("watch %s: HTTP %d %q", path, resp.StatusCode, data)
	}
	want := r.media
	if want == lcProtobuf {
		want += ";stream=watch"
	}
	if ct := resp.Header.Get("Content-Type"); ct != want {
		resp.Body.Close()
		return nil, fmt.Errorf("watch %s: Content-Type %q, want %q", path, ct, want)
	}
	info := r.info()
	frames := info.StreamSerializer.Framer.NewFrameReader(resp.Body)
	dec := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), lcEventDecoder{})
	return &lcWatch{w: watch.NewStreamWatcher(dec, apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"))}, nil
}

// lcWantStatus checks an API error: HTTP code, reason, message (exact, or
// a prefix when msg ends in "...") and, unless kind is empty, the details'
// group and kind (resource or Kind).
func lcWantStatus(t *testing.T, what string, err error, code int32, reason metav1.StatusReason, msg, kind string) metav1.Status {
	t.Helper()
	var se apierrors.APIStatus
	if err == nil || !errors.As(err, &se) {
		t.Fatalf("%s: error %v, want HTTP %d %s", what, err, code, reason)
	}
	st := se.Status()
	if st.Code != code || st.Reason != reason {
		t.Errorf("%s: HTTP %d %s (%q), want %d %s", what, st.Code, st.Reason, st.Message, code, reason)
	}
	if p, ok := strings.CutSuffix(msg, "..."); ok {
		if !strings.HasPrefix(st.Message, p) {
			t.Errorf("%s: message\n %q, want prefix\n %q", what, st.Message, p)
		}
	} else if st.Message != msg {
		t.Errorf("%s: message\n %q, want\n %q", what, st.Message, msg)
	}
	if kind != "" && (st.Details == nil || st.Details.Kind != kind || st.Details.Group != "coordination.k8s.io") {
		t.Errorf("%s: details %+v, want kind %q of coordination.k8s.io", what, st.Details, kind)
	}
	return st
}

const lcConflictMsg = `: the object has been modified; please apply your changes to the latest version and try again`

// TestLeaseCandidateVerbs drives every verb and parameter of
// LeaseCandidate in every served version, against a follower.
func TestLeaseCandidateVerbs(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	modes := []struct {
		name, version string
		api           lcAPI
	}{
		{"v1beta1-protobuf", "v1beta1", lcBeta(t, c.Config(f, true))},
		{"v1beta1-json", "v1beta1", lcBeta(t, c.Config(f, false))},
		{"v1alpha2-protobuf", "v1alpha2", lcAlpha2(t, c.Config(f, true))},
		{"v1alpha2-json", "v1alpha2", lcAlpha2(t, c.Config(f, false))},
		{"v1alpha1-dynamic", "v1alpha1", lcDyn(t, c, f)},
		{"v1alpha1-raw-json", "v1alpha1", newLCRaw(c, f, "v1alpha1", runtime.ContentTypeJSON)},
		{"v1alpha1-raw-protobuf", "v1alpha1", newLCRaw(c, f, "v1alpha1", lcProtobuf)},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { lcVerbs(t, m.api, m.version, "lc-"+m.name) })
	}
}

func lcVerbs(t *testing.T, api lcAPI, v, prefix string) {
	nsFor := func(t *testing.T) string {
		return prefix + "-" + strings.ReplaceAll(strings.ToLower(t.Name()[strings.LastIndex(t.Name(), "/")+1:]), "_", "-")
	}
	strategies := lcStrategies(v)

	t.Run("create_get", func(t *testing.T) {
		ns := nsFor(t)
		in := lcNew(v, "a", "kube-apiserver")
		in.UID = "client-uid"
		in.CreationTimestamp = metav1.NewTime(time.Unix(1000, 0))
		in.Labels = map[string]string{"k": "v"}
		in.PingTime = lcMicro(time.Date(2024, 7, 1, 10, 0, 0, 123456000, time.UTC))
		before := time.Now().Add(-2 * time.Second)
		out, err := api.create(opCtx(t), ns, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.UID == "" || out.UID == "client-uid" {
			t.Errorf("uid %q: want a server-generated one", out.UID)
		}
		if out.CreationTimestamp.Time.Before(before) || out.CreationTimestamp.Time.After(time.Now().Add(2*time.Second)) {
			t.Errorf("creationTimestamp %v: want the server's now", out.CreationTimestamp)
		}
		rvOf(t, out.ResourceVersion)
		if out.Namespace != ns || out.Name != "a" || out.Labels["k"] != "v" || len(out.Annotations) != 0 || !out.sameSpec(in) {
			t.Errorf("created %s/%s labels %v annotations %v spec %s, want spec %s", out.Namespace, out.Name, out.Labels, out.Annotations, out.spec(), in.spec())
		}
		if !slices.Equal(out.Strategies, strategies) {
			t.Errorf("strategies %q, want %q", out.Strategies, strategies)
		}
		for _, rv := range []string{"", "0", out.ResourceVersion} {
			got, err := api.get(opCtx(t), ns, "a", metav1.GetOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatalf("get rv=%q: %v", rv, err)
			}
			if got.UID != out.UID || got.ResourceVersion != out.ResourceVersion || !got.CreationTimestamp.Equal(&out.CreationTimestamp) || !got.sameSpec(out) {
				t.Errorf("get rv=%q: %+v %s, want %s", rv, got.ObjectMeta, got.spec(), out.spec())
			}
		}

		_, err = api.create(opCtx(t), ns, lcNew(v, "a", "other"), metav1.CreateOptions{})
		lcWantStatus(t, "duplicate create", err, 409, metav1.StatusReasonAlreadyExists, `leasecandidates.coordination.k8s.io "a" already exists`, "leasecandidates")
		_, err = api.get(opCtx(t), ns, "missing", metav1.GetOptions{})
		lcWantStatus(t, "get missing", err, 404, metav1.StatusReasonNotFound, `leasecandidates.coordination.k8s.io "missing" not found`, "leasecandidates")
		_, err = api.create(opCtx(t), ns, lcNew(v, "bad", ""), metav1.CreateOptions{})
		st := lcWantStatus(t, "create without leaseName", err, 422, metav1.StatusReasonInvalid, `LeaseCandidate.coordination.k8s.io "bad" is invalid: spec.leaseName: Required value`, "LeaseCandidate")
		if st.Details == nil || st.Details.Name != "bad" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.leaseName" || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueRequired {
			t.Errorf("invalid create details %+v", st.Details)
		}

		// LeaseCandidate names are ConfigMap keys: upper case and
		// underscores are fine, also in generated names.
		up, err := api.create(opCtx(t), ns, lcNew(v, "Kube_APIServer.x-1", "l"), metav1.CreateOptions{})
		if err != nil || up.Name != "Kube_APIServer.x-1" {
			t.Fatalf("create Kube_APIServer.x-1: %v %v", up, err)
		}
		if _, err := api.get(opCtx(t), ns, "Kube_APIServer.x-1", metav1.GetOptions{}); err != nil {
			t.Errorf("get Kube_APIServer.x-1: %v", err)
		}
		gen := lcNew(v, "", "l")
		gen.GenerateName = "Gen_"
		g, err := api.create(opCtx(t), ns, gen, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(g.Name, "Gen_") || len(g.Name) != len("Gen_")+5 || g.GenerateName != "Gen_" {
			t.Errorf("generated name %q (generateName %q)", g.Name, g.GenerateName)
		}
	})

	t.Run("list", func(t *testing.T) {
		ns := nsFor(t)
		other := ns + "-other"
		var maxRV uint64
		for i, n := range []string{"c", "a", "b"} {
			o := lcNew(v, n, "l")
			o.Labels = map[string]string{"idx": strconv.Itoa(i), "app": map[bool]string{true: "x", false: "y"}[i < 2]}
			out, err := api.create(opCtx(t), ns, o, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			maxRV = max(maxRV, rvOf(t, out.ResourceVersion))
		}
		if _, err := api.create(opCtx(t), other, lcNew(v, "z", "l"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		l, err := api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.keys(); !slices.Equal(got, []string{ns + "/a", ns + "/b", ns + "/c"}) {
			t.Errorf("namespace list = %v", got)
		}
		if rvOf(t, l.RV) < maxRV || l.Continue != "" || l.Remaining != nil {
			t.Errorf("list RV %s continue %q remaining %v, after writes up to %d", l.RV, l.Continue, l.Remaining, maxRV)
		}
		for _, it := range l.Items {
			if !slices.Equal(it.Strategies, strategies) || it.LeaseName != "l" || it.UID == "" {
				t.Errorf("list item %s: %s", it.Name, it.spec())
			}
		}
		for _, rv := range []string{"0", l.RV} {
			l2, err := api.list(opCtx(t), ns, metav1.ListOptions{ResourceVersion: rv})
			if err != nil || !slices.Equal(l2.names(), []string{"a", "b", "c"}) {
				t.Errorf("list rv=%s: %v %v", rv, l2, err)
			}
		}
		all, err := api.list(opCtx(t), "", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := all.keys()
		for _, want := range []string{ns + "/a", ns + "/b", ns + "/c", other + "/z"} {
			if !slices.Contains(got, want) {
				t.Errorf("all-namespaces list lacks %s: %v", want, got)
			}
		}
		if !slices.IsSorted(got) {
			t.Errorf("all-namespaces list not in key order: %v", got)
		}
		for _, tc := range []struct {
			opts metav1.ListOptions
			want []string
		}{
			{metav1.ListOptions{LabelSelector: "app=x"}, []string{"a", "c"}},
			{metav1.ListOptions{LabelSelector: "app!=x"}, []string{"b"}},
			{metav1.ListOptions{LabelSelector: "idx in (0,2),app"}, []string{"b", "c"}},
			{metav1.ListOptions{LabelSelector: "!app"}, nil},
			{metav1.ListOptions{FieldSelector: "metadata.name=b"}, []string{"b"}},
			{metav1.ListOptions{FieldSelector: "metadata.name!=b"}, []string{"a", "c"}},
			{metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns, LabelSelector: "idx=1"}, []string{"a"}},
			{metav1.ListOptions{FieldSelector: "metadata.namespace=" + other}, nil},
		} {
			l, err := api.list(opCtx(t), ns, tc.opts)
			if err != nil {
				t.Errorf("%+v: %v", tc.opts, err)
				continue
			}
			if !slices.Equal(l.names(), tc.want) {
				t.Errorf("%+v: got %v, want %v", tc.opts, l.names(), tc.want)
			}
		}
		all, err = api.list(opCtx(t), "", metav1.ListOptions{FieldSelector: "metadata.namespace=" + other})
		if err != nil || !slices.Equal(all.keys(), []string{other + "/z"}) {
			t.Errorf("all namespaces with a namespace field selector: %v %v", all, err)
		}
		_, err = api.list(opCtx(t), ns, metav1.ListOptions{FieldSelector: "spec.leaseName=l"})
		lcWantStatus(t, "unknown field selector", err, 400, metav1.StatusReasonBadRequest, `"spec.leaseName" is not a known field selector: only "metadata.name", "metadata.namespace"`, "")
		_, err = api.list(opCtx(t), ns, metav1.ListOptions{LabelSelector: "a in (b"})
		lcWantStatus(t, "bad label selector", err, 400, metav1.StatusReasonBadRequest, "...", "")
	})

	t.Run("update", func(t *testing.T) {
		ns := nsFor(t)
		cur, err := api.create(opCtx(t), ns, lcNew(v, "u", "l"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := cur.copy()
		cur.RenewTime = lcMicro(time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC))
		cur.PingTime = lcMicro(time.Date(2024, 1, 2, 3, 4, 4, 999999000, time.UTC))
		cur.BinaryVersion = "1.32.0"
		upd, err := api.update(opCtx(t), ns, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rvOf(t, upd.ResourceVersion) <= rvOf(t, cur.ResourceVersion) || upd.UID != cur.UID || !upd.sameSpec(cur) {
			t.Errorf("update returned RV %s uid %s spec %s, want a newer RV and spec %s", upd.ResourceVersion, upd.UID, upd.spec(), cur.spec())
		}
		// An identical update is a no-op: same resourceVersion.
		same, err := api.update(opCtx(t), ns, upd, metav1.UpdateOptions{})
		if err != nil || same.ResourceVersion != upd.ResourceVersion {
			t.Errorf("no-op update: %v %v, want RV %s", same, err, upd.ResourceVersion)
		}
		stale.BinaryVersion = "1.33.0"
		_, err = api.update(opCtx(t), ns, stale, metav1.UpdateOptions{})
		lcWantStatus(t, "update with a stale RV", err, 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on leasecandidates.coordination.k8s.io "u"`+lcConflictMsg, "leasecandidates")
		noRV := upd.copy()
		noRV.ResourceVersion = ""
		_, err = api.update(opCtx(t), ns, noRV, metav1.UpdateOptions{})
		lcWantStatus(t, "update without RV", err, 422, metav1.StatusReasonInvalid, `leasecandidates.coordination.k8s.io "u" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`, "leasecandidates")
		wrongUID := upd.copy()
		wrongUID.UID = "00000000-0000-0000-0000-000000000000"
		_, err = api.update(opCtx(t), ns, wrongUID, metav1.UpdateOptions{})
		lcWantStatus(t, "update with another uid", err, 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on leasecandidates.coordination.k8s.io "u": StorageError: invalid object, Code: 4, Key: /registry/leasecandidates/`+ns+`/u, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: `+string(upd.UID), "leasecandidates")
		moved := upd.copy()
		moved.LeaseName = "b"
		_, err = api.update(opCtx(t), ns, moved, metav1.UpdateOptions{})
		lcWantStatus(t, "update of leaseName", err, 422, metav1.StatusReasonInvalid, `LeaseCandidate.coordination.k8s.io "u" is invalid: spec.leaseName: Invalid value: "b": field is immutable`, "LeaseCandidate")
		got, err := api.get(opCtx(t), ns, "u", metav1.GetOptions{})
		if err != nil || got.ResourceVersion != upd.ResourceVersion || !got.sameSpec(upd) {
			t.Errorf("after refused updates: %v %v", got, err)
		}

		// An update of a missing object creates it; its resourceVersion
		// is ignored.
		missing := lcNew(v, "created-by-put", "l")
		missing.ResourceVersion = "12345"
		created, err := api.update(opCtx(t), ns, missing, metav1.UpdateOptions{})
		if err != nil || created.UID == "" || created.ResourceVersion == "12345" || !created.sameSpec(missing) {
			t.Errorf("update of a missing object: %v %v", created, err)
		}
	})

	t.Run("patch", func(t *testing.T) {
		ns := nsFor(t)
		cur, err := api.create(opCtx(t), ns, lcNew(v, "p", "l"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		smp, smpWant := `{"spec":{"strategy":"example.com/x"}}`, []string{"example.com/x"}
		if v == "v1alpha1" {
			// preferredStrategies is atomic: a strategic merge patch
			// replaces it whole, it does not merge the lists.
			smp, smpWant = `{"spec":{"preferredStrategies":["example.com/x",`+strconv.Quote(lcOEV)+`]}}`, []string{"example.com/x", lcOEV}
		}
		lastRV := rvOf(t, cur.ResourceVersion)
		for _, p := range []struct {
			pt    types.PatchType
			body  string
			check func(o *lcObj) bool
		}{
			{types.MergePatchType, `{"metadata":{"labels":{"m":"1"}},"spec":{"binaryVersion":"1.32.0"}}`, func(o *lcObj) bool {
				return o.BinaryVersion == "1.32.0" && o.Labels["m"] == "1" && slices.Equal(o.Strategies, strategies)
			}},
			{types.JSONPatchType, `[{"op":"test","path":"/spec/binaryVersion","value":"1.32.0"},{"op":"replace","path":"/spec/emulationVersion","value":"1.31.0"}]`, func(o *lcObj) bool {
				return o.EmulationVersion == "1.31.0" && o.BinaryVersion == "1.32.0" && slices.Equal(o.Strategies, strategies)
			}},
			{types.StrategicMergePatchType, smp, func(o *lcObj) bool {
				return slices.Equal(o.Strategies, smpWant) && o.EmulationVersion == "1.31.0"
			}},
		} {
			out, err := api.patch(opCtx(t), ns, "p", p.pt, []byte(p.body), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("%s: %v", p.pt, err)
			}
			rv := rvOf(t, out.ResourceVersion)
			if !p.check(out) || rv <= lastRV || out.UID != cur.UID {
				t.Errorf("%s: rv %d (before %d) spec %s", p.pt, rv, lastRV, out.spec())
			}
			lastRV = rv
		}
		if v == "v1alpha1" {
			// A merge patch replaces lists by definition; a JSON patch can
			// append to one.
			out, err := api.patch(opCtx(t), ns, "p", types.MergePatchType, []byte(`{"spec":{"preferredStrategies":["example.com/y"]}}`), metav1.PatchOptions{})
			if err != nil || !slices.Equal(out.Strategies, []string{"example.com/y"}) {
				t.Errorf("merge patch of preferredStrategies: %v %v", out, err)
			}
			out, err = api.patch(opCtx(t), ns, "p", types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/preferredStrategies/-","value":"example.com/z"}]`), metav1.PatchOptions{})
			if err != nil || !slices.Equal(out.Strategies, []string{"example.com/y", "example.com/z"}) {
				t.Errorf("JSON patch appending a strategy: %v %v", out, err)
			}
		}
		got, err := api.get(opCtx(t), ns, "p", metav1.GetOptions{})
		if err != nil || got.Labels["m"] != "1" || got.BinaryVersion != "1.32.0" || got.EmulationVersion != "1.31.0" || got.LeaseName != "l" || !lcMicroEqual(got.RenewTime, cur.RenewTime) {
			t.Fatalf("after patches: %v %v", got, err)
		}
		// A patch that carries a resourceVersion is a precondition.
		for _, pt := range []types.PatchType{types.MergePatchType, types.StrategicMergePatchType} {
			_, err = api.patch(opCtx(t), ns, "p", pt, []byte(`{"metadata":{"resourceVersion":"`+cur.ResourceVersion+`"},"spec":{"binaryVersion":"1.40.0"}}`), metav1.PatchOptions{})
			lcWantStatus(t, string(pt)+" with a stale RV", err, 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on leasecandidates.coordination.k8s.io "p"`+lcConflictMsg, "leasecandidates")
		}
		out, err := api.patch(opCtx(t), ns, "p", types.MergePatchType, []byte(`{"metadata":{"resourceVersion":"`+got.ResourceVersion+`"},"spec":{"binaryVersion":"1.40.0"}}`), metav1.PatchOptions{})
		if err != nil || out.BinaryVersion != "1.40.0" {
			t.Errorf("merge patch with the current RV: %v %v", out, err)
		}
		_, err = api.patch(opCtx(t), ns, "p", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/leaseName","value":"nope"}]`), metav1.PatchOptions{})
		lcWantStatus(t, "failing JSON patch test", err, 422, metav1.StatusReasonInvalid, "...", "")
		_, err = api.patch(opCtx(t), ns, "p", types.MergePatchType, []byte(`{"spec":{"binaryVersion":"bad"}}`), metav1.PatchOptions{})
		lcWantStatus(t, "patch to a bad binaryVersion", err, 422, metav1.StatusReasonInvalid,
			`LeaseCandidate.coordination.k8s.io "p" is invalid: [spec.binaryVersion: Invalid value: "bad": must be a valid semantic version, spec.binaryVersion: Invalid value: "bad": must be greater than or equal to `+"`emulationVersion`]", "LeaseCandidate")
		_, err = api.patch(opCtx(t), ns, "p", types.MergePatchType, []byte(`{"spec":{"leaseName":"other"}}`), metav1.PatchOptions{})
		lcWantStatus(t, "patch of leaseName", err, 422, metav1.StatusReasonInvalid, `LeaseCandidate.coordination.k8s.io "p" is invalid: spec.leaseName: Invalid value: "other": field is immutable`, "LeaseCandidate")
		_, err = api.patch(opCtx(t), ns, "missing", types.MergePatchType, []byte(`{"spec":{"binaryVersion":"1.40.0"}}`), metav1.PatchOptions{})
		lcWantStatus(t, "patch of a missing object", err, 404, metav1.StatusReasonNotFound, `leasecandidates.coordination.k8s.io "missing" not found`, "leasecandidates")
	})

	t.Run("delete", func(t *testing.T) {
		ns := nsFor(t)
		cur, err := api.create(opCtx(t), ns, lcNew(v, "d", "l"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = api.delete(opCtx(t), ns, "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("00000000-0000-0000-0000-000000000000")}})
		lcWantStatus(t, "delete with another uid", err, 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on leasecandidates.coordination.k8s.io "d": StorageError: invalid object, Code: 4, Key: /registry/leasecandidates/`+ns+`/d, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: `+string(cur.UID), "leasecandidates")
		err = api.delete(opCtx(t), ns, "d", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To("1")}})
		lcWantStatus(t, "delete with a stale RV", err, 409, metav1.StatusReasonConflict, `Operation cannot be fulfilled on leasecandidates.coordination.k8s.io "d": StorageError: invalid object, Code: 4, Key: /registry/leasecandidates/`+ns+`/d, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: `+cur.ResourceVersion, "leasecandidates")
		if _, err := api.get(opCtx(t), ns, "d", metav1.GetOptions{}); err != nil {
			t.Fatalf("gone after refused deletes: %v", err)
		}
		err = api.delete(opCtx(t), ns, "d", metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion},
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = api.get(opCtx(t), ns, "d", metav1.GetOptions{})
		lcWantStatus(t, "get after delete", err, 404, metav1.StatusReasonNotFound, `leasecandidates.coordination.k8s.io "d" not found`, "leasecandidates")
		err = api.delete(opCtx(t), ns, "d", metav1.DeleteOptions{})
		lcWantStatus(t, "second delete", err, 404, metav1.StatusReasonNotFound, `leasecandidates.coordination.k8s.io "d" not found`, "leasecandidates")
	})

	t.Run("deletecollection", func(t *testing.T) {
		ns := nsFor(t)
		for i := range 5 {
			o := lcNew(v, "dc"+strconv.Itoa(i), "l")
			o.Labels = map[string]string{"gone": strconv.FormatBool(i%2 == 0)}
			if _, err := api.create(opCtx(t), ns, o, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := api.deleteCollection(opCtx(t), ns, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
			t.Fatal(err)
		}
		if l, err := api.list(opCtx(t), ns, metav1.ListOptions{}); err != nil || len(l.Items) != 5 {
			t.Fatalf("after a dry-run deletecollection: %v %v", l, err)
		}
		if err := api.deleteCollection(opCtx(t), ns, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "gone=true"}); err != nil {
			t.Fatal(err)
		}
		l, err := api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil || !slices.Equal(l.names(), []string{"dc1", "dc3"}) {
			t.Errorf("after deletecollection gone=true: %v %v", l, err)
		}
		if err := api.deleteCollection(opCtx(t), ns, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=dc3"}); err != nil {
			t.Fatal(err)
		}
		l, err = api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil || !slices.Equal(l.names(), []string{"dc1"}) {
			t.Errorf("after deletecollection metadata.name=dc3: %v %v", l, err)
		}
	})

	t.Run("pagination", func(t *testing.T) {
		ns := nsFor(t)
		var want []string
		for i := range 7 {
			n := "pg" + strconv.Itoa(i)
			if _, err := api.create(opCtx(t), ns, lcNew(v, n, "l"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			want = append(want, n)
		}
		var got []string
		var firstRV, cont string
		for page := 0; ; page++ {
			l, err := api.list(opCtx(t), ns, metav1.ListOptions{Limit: 3, Continue: cont})
			if err != nil {
				t.Fatalf("page %d: %v", page, err)
			}
			if page == 0 {
				firstRV = l.RV
			} else if l.RV != firstRV {
				t.Errorf("page %d has RV %s, first page %s", page, l.RV, firstRV)
			}
			if len(l.Items) > 3 {
				t.Errorf("page %d has %d items for limit 3", page, len(l.Items))
			}
			got = append(got, l.names()...)
			if l.Continue == "" {
				if l.Remaining != nil {
					t.Errorf("last page has remainingItemCount %d", *l.Remaining)
				}
				break
			}
			if rem := int64(len(want) - len(got)); l.Remaining == nil || *l.Remaining != rem {
				t.Errorf("page %d remainingItemCount %v, want %d", page, l.Remaining, rem)
			}
			if page > 5 {
				t.Fatal("pagination does not end")
			}
			cont = l.Continue
			// Writes between pages must not show in later pages.
			if _, err := api.create(opCtx(t), ns, lcNew(v, "pg9-"+strconv.Itoa(page), "l"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := api.delete(opCtx(t), ns, want[len(want)-1-page], metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages together = %v, want %v", got, want)
		}
		l, err := api.list(opCtx(t), ns, metav1.ListOptions{Limit: 1, FieldSelector: "metadata.name!=pg0"})
		if err != nil || len(l.Items) != 1 || l.Continue == "" || l.Remaining != nil {
			t.Errorf("selector page: %+v %v", l, err)
		}
		_, err = api.list(opCtx(t), ns, metav1.ListOptions{Limit: 1, Continue: "not-a-token"})
		lcWantStatus(t, "bad continue token", err, 400, metav1.StatusReasonBadRequest, "invalid continue token: ...", "")
	})

	t.Run("dryrun", func(t *testing.T) {
		ns := nsFor(t)
		all := []string{metav1.DryRunAll}
		cur, err := api.create(opCtx(t), ns, lcNew(v, "real", "l"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before, err := api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dc, err := api.create(opCtx(t), ns, lcNew(v, "dry", "l"), metav1.CreateOptions{DryRun: all})
		if err != nil {
			t.Fatal(err)
		}
		if dc.UID == "" || dc.CreationTimestamp.IsZero() || dc.ResourceVersion != "" || dc.Name != "dry" || !slices.Equal(dc.Strategies, strategies) {
			t.Errorf("dry-run create returned %+v %s", dc.ObjectMeta, dc.spec())
		}
		_, err = api.get(opCtx(t), ns, "dry", metav1.GetOptions{})
		lcWantStatus(t, "get after a dry-run create", err, 404, metav1.StatusReasonNotFound, `leasecandidates.coordination.k8s.io "dry" not found`, "leasecandidates")

		upd := cur.copy()
		upd.BinaryVersion = "1.35.0"
		du, err := api.update(opCtx(t), ns, upd, metav1.UpdateOptions{DryRun: all})
		if err != nil || du.BinaryVersion != "1.35.0" || du.ResourceVersion != cur.ResourceVersion {
			t.Errorf("dry-run update: %v %v", du, err)
		}
		dp, err := api.patch(opCtx(t), ns, "real", types.MergePatchType, []byte(`{"spec":{"binaryVersion":"1.36.0"}}`), metav1.PatchOptions{DryRun: all})
		if err != nil || dp.BinaryVersion != "1.36.0" || dp.ResourceVersion != cur.ResourceVersion || !slices.Equal(dp.Strategies, strategies) {
			t.Errorf("dry-run patch: %v %v", dp, err)
		}
		if err := api.delete(opCtx(t), ns, "real", metav1.DeleteOptions{DryRun: all}); err != nil {
			t.Errorf("dry-run delete: %v", err)
		}
		got, err := api.get(opCtx(t), ns, "real", metav1.GetOptions{})
		if err != nil || got.ResourceVersion != cur.ResourceVersion || got.BinaryVersion != "1.31.0" {
			t.Errorf("after dry runs: %v %v", got, err)
		}
		after, err := api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil || after.RV != before.RV {
			t.Errorf("dry runs moved the list RV from %s to %v (%v)", before.RV, after, err)
		}
		// Dry runs still validate.
		bad := lcNew(v, "dry-bad", "l")
		bad.EmulationVersion = "1.30"
		_, err = api.create(opCtx(t), ns, bad, metav1.CreateOptions{DryRun: all})
		lcWantStatus(t, "invalid dry-run create", err, 422, metav1.StatusReasonInvalid, `LeaseCandidate.coordination.k8s.io "dry-bad" is invalid: ...`, "LeaseCandidate")
		_, err = api.create(opCtx(t), ns, lcNew(v, "dry-x", "l"), metav1.CreateOptions{DryRun: []string{"x"}})
		lcWantStatus(t, "dryRun=x", err, 422, metav1.StatusReasonInvalid, `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`, "")
	})

	t.Run("watch", func(t *testing.T) {
		ns := nsFor(t)
		if _, err := api.create(opCtx(t), ns, lcNew(v, "before", "l"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		l, err := api.list(opCtx(t), ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := api.watch(opCtx(t), ns, metav1.ListOptions{ResourceVersion: l.RV})
		if err != nil {
			t.Fatal(err)
		}
		defer w.w.Stop()
		sel, err := api.watch(opCtx(t), ns, metav1.ListOptions{ResourceVersion: l.RV, LabelSelector: "app=w"})
		if err != nil {
			t.Fatal(err)
		}
		defer sel.w.Stop()
		byName, err := api.watch(opCtx(t), "", metav1.ListOptions{ResourceVersion: l.RV, FieldSelector: "metadata.namespace=" + ns + ",metadata.name=w"})
		if err != nil {
			t.Fatal(err)
		}
		defer byName.w.Stop()

		in := lcNew(v, "w", "l")
		in.Labels = map[string]string{"app": "w"}
		created, err := api.create(opCtx(t), ns, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.create(opCtx(t), ns, lcNew(v, "unlabelled", "l"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		created.RenewTime = lcMicro(time.Now().Add(time.Second))
		updated, err := api.update(opCtx(t), ns, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := api.delete(opCtx(t), ns, "w", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		check := func(w *lcWatch, what string, others ...string) {
			t.Helper()
			var last uint64
			for i, ev := range []struct {
				typ watch.EventType
				rv  string
			}{{watch.Added, created.ResourceVersion}, {watch.Modified, updated.ResourceVersion}, {watch.Deleted, ""}} {
				typ, o := w.next(t, opTimeout)
				for typ == watch.Added && slices.Contains(others, o.Name) {
					typ, o = w.next(t, opTimeout)
				}
				if typ != ev.typ || o.Name != "w" || !slices.Equal(o.Strategies, strategies) || o.LeaseName != "l" {
					t.Fatalf("%s: event %d = %s %s %s, want %s of w", what, i, typ, o.Name, o.spec(), ev.typ)
				}
				rv := rvOf(t, o.ResourceVersion)
				if (ev.rv != "" && o.ResourceVersion != ev.rv) || rv <= last {
					t.Errorf("%s: event %d RV %d (previous %d, want %q)", what, i, rv, last, ev.rv)
				}
				if ev.typ != watch.Added && !lcMicroEqual(o.RenewTime, updated.RenewTime) {
					t.Errorf("%s: %s renewTime %s, want %s", what, typ, lcMicroString(o.RenewTime), lcMicroString(updated.RenewTime))
				}
				last = rv
			}
		}
		check(w, "namespace watch", "unlabelled")
		check(sel, "label selector watch")
		check(byName, "all-namespaces watch with field selectors")
		sel.quiet(t, 100*time.Millisecond)
		byName.quiet(t, 100*time.Millisecond)

		// resourceVersion unset: the current state as ADDED first.
		initial, err := api.watch(opCtx(t), ns, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer initial.w.Stop()
		initial.expect(t, watch.Added, "before")
		initial.expect(t, watch.Added, "unlabelled")
		initial.quiet(t, 100*time.Millisecond)
	})

	t.Run("deprecated_watch", func(t *testing.T) {
		ns := nsFor(t)
		a, err := api.create(opCtx(t), ns, lcNew(v, "a", "l"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		named, err := api.watchPath(opCtx(t), ns, "a", metav1.ListOptions{ResourceVersion: a.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer named.w.Stop()
		coll, err := api.watchPath(opCtx(t), ns, "", metav1.ListOptions{ResourceVersion: a.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer coll.w.Stop()
		all, err := api.watchPath(opCtx(t), "", "", metav1.ListOptions{ResourceVersion: a.ResourceVersion, FieldSelector: "metadata.namespace=" + ns})
		if err != nil {
			t.Fatal(err)
		}
		defer all.w.Stop()
		if _, err := api.create(opCtx(t), ns, lcNew(v, "b", "l"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := api.patch(opCtx(t), ns, "a", types.MergePatchType, []byte(`{"spec":{"binaryVersion":"1.32.0"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := named.expect(t, watch.Modified, "a"); got.ResourceVersion != p.ResourceVersion || got.BinaryVersion != "1.32.0" || !slices.Equal(got.Strategies, strategies) {
			t.Errorf("named deprecated watch: %+v %s", got.ObjectMeta, got.spec())
		}
		named.quiet(t, 100*time.Millisecond)
		for _, w := range []*lcWatch{coll, all} {
			w.expect(t, watch.Added, "b")
			w.expect(t, watch.Modified, "a")
		}
		_, err = api.watchPath(opCtx(t), ns, "a", metav1.ListOptions{FieldSelector: "metadata.name=b"})
		lcWantStatus(t, "named watch with another name", err, 400, metav1.StatusReasonBadRequest, "fieldSelector metadata.name doesn't match requested name", "")
	})
}

// lcPath is the raw path of LeaseCandidates (name "" = the collection).
func lcPath(version, ns, name string) string {
	p := lcGroupPath + version
	if ns != "" {
		p += "/namespaces/" + ns
	}
	p += "/leasecandidates"
	if name != "" {
		p += "/" + name
	}
	return p
}

// lcDoc is a LeaseCandidate JSON document.
func lcDoc(version, name, annotations, spec string) string {
	md := `"name":"` + name + `","labels":{"app":"conv"}`
	if annotations != "" {
		md += `,"annotations":` + annotations
	}
	return `{"apiVersion":"coordination.k8s.io/` + version + `","kind":"LeaseCandidate","metadata":{` + md + `},"spec":` + spec + `}`
}

// lcWire is a LeaseCandidate answer decoded as JSON, with its raw bytes.
type lcWire struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       json.RawMessage   `json:"spec"`
	raw        []byte
}

// lcAnswer checks a JSON LeaseCandidate answer of version with code.
func lcAnswer(t *testing.T, r wireResp, code int, version string) *lcWire {
	t.Helper()
	if r.code != code || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %v, want HTTP %d application/json", r, code)
	}
	if bytes.Contains(r.body, []byte(lcInternal)) {
		t.Errorf("answer shows the internal annotation: %s", r.body)
	}
	var o lcWire
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	if o.Kind != "LeaseCandidate" || o.APIVersion != "coordination.k8s.io/"+version {
		t.Errorf("kind %q apiVersion %q, want LeaseCandidate coordination.k8s.io/%s", o.Kind, o.APIVersion, version)
	}
	o.raw = r.body
	return &o
}

// lcJSONSame compares two JSON documents as values.
func lcJSONSame(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// lcNoInternal fails if a raw answer shows the internal annotation.
func lcNoInternal(t *testing.T, what string, body []byte) {
	t.Helper()
	if bytes.Contains(body, []byte(lcInternal)) {
		t.Errorf("%s shows the internal annotation: %q", what, body)
	}
}

// TestLeaseCandidateConversion writes LeaseCandidates in each version and
// reads them in every version, in raw JSON (and protobuf for v1alpha1),
// checking each field on the wire.
func TestLeaseCandidateConversion(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	w := newWire(t, c, f)
	const ns = "conv"
	times := `"pingTime":"2024-07-01T10:00:00.123456Z","renewTime":"2024-07-01T10:00:05.000001Z"`
	renew := `"renewTime":"2024-07-02T00:00:00.000000Z"`
	three := `["OldestEmulationVersion","example.com/b","example.com/c"]`
	cases := []struct {
		name, version, spec string
		want                map[string]string // version -> spec read in it
	}{{
		name: "from-v1alpha1", version: "v1alpha1",
		spec: `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":` + three + `}`,
		want: map[string]string{
			"v1alpha1": `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":` + three + `}`,
			"v1alpha2": `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
			"v1beta1":  `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
		},
	}, {
		// binaryVersion is optional in v1alpha1 and has no omitempty in
		// v1alpha2 and v1beta1.
		name: "from-v1alpha1-minimal", version: "v1alpha1",
		spec: `{"leaseName":"kube-scheduler","preferredStrategies":["example.com/x"]}`,
		want: map[string]string{
			"v1alpha1": `{"leaseName":"kube-scheduler","preferredStrategies":["example.com/x"]}`,
			"v1alpha2": `{"leaseName":"kube-scheduler","binaryVersion":"","strategy":"example.com/x"}`,
			"v1beta1":  `{"leaseName":"kube-scheduler","binaryVersion":"","strategy":"example.com/x"}`,
		},
	}, {
		name: "from-v1alpha2", version: "v1alpha2",
		spec: `{"leaseName":"kube-scheduler",` + renew + `,"binaryVersion":"1.32.0","strategy":"example.com/y"}`,
		want: map[string]string{
			"v1alpha1": `{"leaseName":"kube-scheduler",` + renew + `,"binaryVersion":"1.32.0","preferredStrategies":["example.com/y"]}`,
			"v1alpha2": `{"leaseName":"kube-scheduler",` + renew + `,"binaryVersion":"1.32.0","strategy":"example.com/y"}`,
			"v1beta1":  `{"leaseName":"kube-scheduler",` + renew + `,"binaryVersion":"1.32.0","strategy":"example.com/y"}`,
		},
	}, {
		name: "from-v1beta1", version: "v1beta1",
		spec: `{"leaseName":"kube-controller-manager",` + times + `,"binaryVersion":"1.33.0-rc.1+abc","emulationVersion":"1.32.0","strategy":"OldestEmulationVersion"}`,
		want: map[string]string{
			"v1alpha1": `{"leaseName":"kube-controller-manager",` + times + `,"binaryVersion":"1.33.0-rc.1+abc","emulationVersion":"1.32.0","preferredStrategies":["OldestEmulationVersion"]}`,
			"v1alpha2": `{"leaseName":"kube-controller-manager",` + times + `,"binaryVersion":"1.33.0-rc.1+abc","emulationVersion":"1.32.0","strategy":"OldestEmulationVersion"}`,
			"v1beta1":  `{"leaseName":"kube-controller-manager",` + times + `,"binaryVersion":"1.33.0-rc.1+abc","emulationVersion":"1.32.0","strategy":"OldestEmulationVersion"}`,
		},
	}}

	// Watches of every version see the objects come and change.
	watches := map[string]*watchStream{}
	for _, v := range lcVersions {
		watches[v] = w.watch(lcPath(v, ns, "") + "?watch=true")
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := w.with(t)
			created := lcAnswer(t, w.do("POST", lcPath(tc.version, ns, ""), lcDoc(tc.version, tc.name, `{"keep":"me"}`, tc.spec)), 201, tc.version)
			if !lcJSONSame(t, created.Spec, tc.want[tc.version]) {
				t.Errorf("created spec %s, want %s", created.Spec, tc.want[tc.version])
			}
			m := created.Metadata
			if m.UID == "" || m.ResourceVersion == "" || m.Namespace != ns || m.CreationTimestamp.IsZero() {
				t.Errorf("created metadata %+v", m)
			}
			for _, v := range lcVersions {
				got := lcAnswer(t, w.do("GET", lcPath(v, ns, tc.name), nil), 200, v)
				if !lcJSONSame(t, got.Spec, tc.want[v]) {
					t.Errorf("read in %s: spec %s, want %s", v, got.Spec, tc.want[v])
				}
				g := got.Metadata
				if g.Name != tc.name || g.Namespace != ns || g.UID != m.UID || g.ResourceVersion != m.ResourceVersion || !g.CreationTimestamp.Equal(&m.CreationTimestamp) ||
					!reflect.DeepEqual(g.Labels, map[string]string{"app": "conv"}) || !reflect.DeepEqual(g.Annotations, map[string]string{"keep": "me"}) {
					t.Errorf("read in %s: metadata %+v, want that of %+v", v, g, m)
				}
			}
			// A round trip through the writer's own version is lossless:
			// the object read back and written again is a no-op.
			own := lcAnswer(t, w.do("GET", lcPath(tc.version, ns, tc.name), nil), 200, tc.version)
			put := lcAnswer(t, w.do("PUT", lcPath(tc.version, ns, tc.name), own.raw), 200, tc.version)
			if put.Metadata.ResourceVersion != m.ResourceVersion || !bytes.Equal(put.raw, own.raw) {
				t.Errorf("writing back what was read:\n got %s\nwant %s", put.raw, own.raw)
			}
			if again := w.do("GET", lcPath(tc.version, ns, tc.name), nil); !bytes.Equal(again.body, own.raw) {
				t.Errorf("read after the write-back:\n got %s\nwant %s", again.body, own.raw)
			}
		})
	}

	t.Run("watch_events", func(t *testing.T) {
		for _, v := range lcVersions {
			for _, tc := range cases {
				ev := lcWatchFor(t, watches[v]).next(opTimeout)
				lcNoInternal(t, v+" watch event", []byte(ev.raw))
				var o lcWire
				if err := json.Unmarshal(ev.Object, &o); err != nil {
					t.Fatal(err)
				}
				if ev.Type != "ADDED" || o.Metadata.Name != tc.name || o.APIVersion != "coordination.k8s.io/"+v || !lcJSONSame(t, o.Spec, tc.want[v]) {
					t.Errorf("%s watch: %s", v, ev.raw)
				}
			}
		}
	})

	t.Run("protobuf_v1alpha1", func(t *testing.T) {
		raw := newLCRaw(c, f, "v1alpha1", lcProtobuf)
		pb, gvk, err := raw.send(opCtx(t), "GET", lcPath("v1alpha1", ns, "from-v1alpha1"), nil, "", 200)
		if err != nil {
			t.Fatal(err)
		}
		if gvk == nil || gvk.Kind != "LeaseCandidate" || gvk.Version != "v1alpha1" {
			t.Fatalf("protobuf answer of kind %v", gvk)
		}
		var js v1alpha1.LeaseCandidate
		if err := json.Unmarshal(w.with(t).do("GET", lcPath("v1alpha1", ns, "from-v1alpha1"), nil).body, &js); err != nil {
			t.Fatal(err)
		}
		got := pb.(*v1alpha1.LeaseCandidate)
		got.TypeMeta, js.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
		if !apiequality.Semantic.DeepEqual(got, &js) {
			t.Errorf("protobuf read %+v\n JSON read %+v", got, &js)
		}
		if want := []coordinationv1.CoordinatedLeaseStrategy{lcOEV, "example.com/b", "example.com/c"}; !slices.Equal(got.Spec.PreferredStrategies, want) {
			t.Errorf("protobuf preferredStrategies %q, want %q", got.Spec.PreferredStrategies, want)
		}
		// Written back in protobuf: a no-op.
		body, err := raw.encode(pb, v1alpha1.SchemeGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := raw.send(opCtx(t), "PUT", lcPath("v1alpha1", ns, "from-v1alpha1"), body, lcProtobuf, 200)
		if err != nil {
			t.Fatal(err)
		}
		if b := back.(*v1alpha1.LeaseCandidate); b.ResourceVersion != got.ResourceVersion || !slices.Equal(b.Spec.PreferredStrategies, got.Spec.PreferredStrategies) {
			t.Errorf("protobuf write-back: %+v", b)
		}
		// A protobuf create of three strategies reads back identical, in
		// protobuf and in JSON.
		in := &v1alpha1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Name: "pb-three", Labels: map[string]string{"app": "pb"}},
			Spec: v1alpha1.LeaseCandidateSpec{LeaseName: "kube-apiserver", BinaryVersion: "1.31.0", EmulationVersion: "1.31.0",
				PingTime: lcMicro(time.Date(2024, 7, 1, 0, 0, 0, 1000, time.UTC)), RenewTime: lcMicro(time.Date(2024, 7, 1, 0, 0, 1, 0, time.UTC)),
				PreferredStrategies: []coordinationv1.CoordinatedLeaseStrategy{"example.com/c", lcOEV, "example.com/a"}},
		}
		o, err := raw.create(opCtx(t), "conv-pb", lcMust(t, in), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		read, err := raw.get(opCtx(t), "conv-pb", "pb-three", metav1.GetOptions{})
		if err != nil || !read.sameSpec(o) || !slices.Equal(read.Strategies, []string{"example.com/c", lcOEV, "example.com/a"}) {
			t.Errorf("protobuf read of pb-three: %v %v", read, err)
		}
		jr := lcAnswer(t, w.with(t).do("GET", lcPath("v1alpha1", "conv-pb", "pb-three"), nil), 200, "v1alpha1")
		if !lcJSONSame(t, jr.Spec, `{"leaseName":"kube-apiserver","pingTime":"2024-07-01T00:00:00.000001Z","renewTime":"2024-07-01T00:00:01.000000Z","binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["example.com/c","OldestEmulationVersion","example.com/a"]}`) {
			t.Errorf("JSON read of pb-three: %s", jr.Spec)
		}
	})

	t.Run("no_internal_annotation_anywhere", func(t *testing.T) {
		w := w.with(t)
		for _, v := range lcVersions {
			for _, p := range []struct{ path, accept string }{
				{lcPath(v, ns, ""), ""},
				{lcPath(v, "", ""), ""},
				{lcPath(v, ns, "") + "?limit=1", ""},
				{lcPath(v, ns, "from-v1alpha1"), "application/yaml"},
				{lcPath(v, ns, ""), "application/yaml"},
				{lcPath(v, ns, ""), lcProtobuf},
				{lcPath(v, ns, "from-v1alpha1"), lcProtobuf},
				{lcPath(v, ns, "") + "?includeObject=Object", lcTableJSON},
				{lcPath(v, ns, "from-v1alpha1") + "?includeObject=Object", lcTableJSON},
				{lcPath(v, ns, ""), "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
				{lcPath(v, ns, "from-v1alpha1"), "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
			} {
				r := w.do("GET", p.path, nil, "Accept", p.accept)
				if r.code != 200 || !bytes.Contains(r.body, []byte("from-v1alpha1")) {
					t.Errorf("GET %s (%s): %v", p.path, p.accept, r)
				}
				lcNoInternal(t, "GET "+p.path+" ("+p.accept+")", r.body)
			}
			// A dry-run delete answers a Status; a dry-run deletecollection
			// the list.
			r := w.do("DELETE", lcPath(v, ns, "")+"?dryRun=All", nil)
			if r.code != 200 || !bytes.Contains(r.body, []byte("from-v1alpha1")) {
				t.Errorf("dry-run deletecollection: %v", r)
			}
			lcNoInternal(t, "dry-run deletecollection", r.body)
		}
		// The v1alpha1 list shows the whole list of the v1alpha1 writer.
		var l v1alpha1.LeaseCandidateList
		if err := json.Unmarshal(w.do("GET", lcPath("v1alpha1", ns, "")+"?fieldSelector=metadata.name%3Dfrom-v1alpha1", nil).body, &l); err != nil || len(l.Items) != 1 ||
			!slices.Equal(lcStrategyList(l.Items[0].Spec.PreferredStrategies), []string{lcOEV, "example.com/b", "example.com/c"}) {
			t.Errorf("v1alpha1 list: %+v %v", l, err)
		}
	})

	t.Run("newer_version_update_keeps_the_list_while_the_strategy_stays", func(t *testing.T) {
		w := w.with(t)
		for _, v := range []string{"v1beta1", "v1alpha2"} {
			name := "reset-by-" + v
			lcAnswer(t, w.do("POST", lcPath("v1alpha1", ns, ""), lcDoc("v1alpha1", name, "", `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["example.com/a",`+strconv.Quote(lcOEV)+`]}`)), 201, "v1alpha1")
			cur := lcAnswer(t, w.do("GET", lcPath(v, ns, name), nil), 200, v)
			if !lcJSONSame(t, cur.Spec, `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","strategy":"example.com/a"}`) {
				t.Errorf("%s read: %s", v, cur.Spec)
			}
			upd := strings.Replace(string(cur.raw), `"leaseName":"l"`, `"leaseName":"l",`+renew, 1)
			put := lcAnswer(t, w.do("PUT", lcPath(v, ns, name), upd), 200, v)
			if rvOf(t, put.Metadata.ResourceVersion) <= rvOf(t, cur.Metadata.ResourceVersion) {
				t.Errorf("update through %s kept RV %s", v, put.Metadata.ResourceVersion)
			}
			after := lcAnswer(t, w.do("GET", lcPath("v1alpha1", ns, name), nil), 200, "v1alpha1")
			if !lcJSONSame(t, after.Spec, `{"leaseName":"l",`+renew+`,"binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["example.com/a",`+strconv.Quote(lcOEV)+`]}`) {
				t.Errorf("v1alpha1 read after an update through %s that kept the strategy: %s, want the whole list", v, after.Spec)
			}
			// Writing back what was read changes nothing, not even the RV.
			same := lcAnswer(t, w.do("PUT", lcPath(v, ns, name), string(put.raw)), 200, v)
			if same.Metadata.ResourceVersion != put.Metadata.ResourceVersion {
				t.Errorf("identical write-back through %s moved the RV %s -> %s", v, put.Metadata.ResourceVersion, same.Metadata.ResourceVersion)
			}
			// A new strategy resets the list to [strategy].
			changed := strings.Replace(string(put.raw), `"strategy":"example.com/a"`, `"strategy":"example.com/z"`, 1)
			lcAnswer(t, w.do("PUT", lcPath(v, ns, name), changed), 200, v)
			reset := lcAnswer(t, w.do("GET", lcPath("v1alpha1", ns, name), nil), 200, "v1alpha1")
			if !lcJSONSame(t, reset.Spec, `{"leaseName":"l",`+renew+`,"binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["example.com/z"]}`) {
				t.Errorf("v1alpha1 read after a strategy change through %s: %s, want [strategy]", v, reset.Spec)
			}
		}
		// The 3-strategy object updated through v1beta1 with its strategy
		// kept: v1alpha1 still shows the whole list, and so do the v1alpha1
		// watch's events.
		cur := lcAnswer(t, w.do("GET", lcPath("v1beta1", ns, "from-v1alpha1"), nil), 200, "v1beta1")
		upd := strings.Replace(string(cur.raw), `"binaryVersion":"1.31.0"`, `"binaryVersion":"1.32.0"`, 1)
		lcAnswer(t, w.do("PUT", lcPath("v1beta1", ns, "from-v1alpha1"), upd), 200, "v1beta1")
		after := lcAnswer(t, w.do("GET", lcPath("v1alpha1", ns, "from-v1alpha1"), nil), 200, "v1alpha1")
		if !lcJSONSame(t, after.Spec, `{"leaseName":"kube-apiserver",`+times+`,"binaryVersion":"1.32.0","emulationVersion":"1.30.0","preferredStrategies":["OldestEmulationVersion","example.com/b","example.com/c"]}`) {
			t.Errorf("v1alpha1 read after a v1beta1 update: %s", after.Spec)
		}
		for _, v := range lcVersions {
			var ev watchLine
			for {
				ev = lcWatchFor(t, watches[v]).next(opTimeout)
				lcNoInternal(t, v+" watch event", []byte(ev.raw))
				if strings.Contains(ev.raw, `"name":"from-v1alpha1"`) {
					break
				}
			}
			var o lcWire
			if err := json.Unmarshal(ev.Object, &o); err != nil {
				t.Fatal(err)
			}
			want := `{"leaseName":"kube-apiserver",` + times + `,"binaryVersion":"1.32.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`
			if v == "v1alpha1" {
				want = string(after.Spec)
			}
			if ev.Type != "MODIFIED" || !lcJSONSame(t, o.Spec, want) {
				t.Errorf("%s watch event after the v1beta1 update: %s", v, ev.raw)
			}
		}
	})

	t.Run("client_written_annotation", func(t *testing.T) {
		w := w.with(t)
		// The annotation's list starts with the strategy written, so that
		// the stored form would be taken for a v1alpha1 writer's if kept.
		ann := `{"keep":"me",` + strconv.Quote(leasecandidate.PreferredStrategiesAnnotation) + `:"[\"example.com/z\",\"example.com/q\"]"}`
		// A v1beta1 client cannot set the v1alpha1 list.
		b := lcAnswer(t, w.do("POST", lcPath("v1beta1", ns, ""), lcDoc("v1beta1", "sneaky-v1beta1", ann, `{"leaseName":"l","binaryVersion":"1.31.0","strategy":"example.com/z"}`)), 201, "v1beta1")
		if !reflect.DeepEqual(b.Metadata.Annotations, map[string]string{"keep": "me"}) {
			t.Errorf("v1beta1 create answered annotations %v", b.Metadata.Annotations)
		}
		a := lcAnswer(t, w.do("GET", lcPath("v1alpha1", ns, "sneaky-v1beta1"), nil), 200, "v1alpha1")
		if !lcJSONSame(t, a.Spec, `{"leaseName":"l","binaryVersion":"1.31.0","preferredStrategies":["example.com/z"]}`) || !reflect.DeepEqual(a.Metadata.Annotations, map[string]string{"keep": "me"}) {
			t.Errorf("v1alpha1 read of a v1beta1 object written with the annotation: %s", a.raw)
		}
		// A v1alpha1 client's list wins over its annotation.
		c := lcAnswer(t, w.do("POST", lcPath("v1alpha1", ns, ""), lcDoc("v1alpha1", "sneaky-v1alpha1", ann, `{"leaseName":"l","preferredStrategies":["example.com/x","example.com/y"]}`)), 201, "v1alpha1")
		if !lcJSONSame(t, c.Spec, `{"leaseName":"l","preferredStrategies":["example.com/x","example.com/y"]}`) || !reflect.DeepEqual(c.Metadata.Annotations, map[string]string{"keep": "me"}) {
			t.Errorf("v1alpha1 create with the annotation: %s", c.raw)
		}
	})
}

func lcMust(t *testing.T, obj runtime.Object) *lcObj {
	t.Helper()
	o, err := lcFrom(obj)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// lcWatchFor is ws read by test t (a watch opened by a parent test).
func lcWatchFor(t *testing.T, ws *watchStream) *watchStream {
	c := *ws
	c.t = t
	return &c
}

// TestLeaseCandidateValidation checks each version's validation through
// HTTP: the 422 answers and their messages, and what is accepted.
func TestLeaseCandidateValidation(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := newWire(t, c, c.Follower())
	const ns = "val"
	const oevRequired = "must be specified when `strategy` is 'OldestEmulationVersion'"
	type invalid struct {
		name, spec string
		msg        string   // after `LeaseCandidate.coordination.k8s.io "<name>" is invalid: `
		fields     []string // of the causes, in order
	}
	// v1beta1 and v1alpha2 share their rules.
	newer := []invalid{
		{"no-lease-name", `{"binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
			`spec.leaseName: Required value`, []string{"spec.leaseName"}},
		{"bad-emulation", `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30","strategy":"example.com/s"}`,
			`spec.emulationVersion: Invalid value: "1.30": must be a valid semantic version`, []string{"spec.emulationVersion"}},
		{"bad-binary", `{"leaseName":"l","binaryVersion":"v1.31.0","strategy":"example.com/s"}`,
			`spec.binaryVersion: Invalid value: "v1.31.0": must be a valid semantic version`, []string{"spec.binaryVersion"}},
		// An unparsable emulationVersion counts as unset for the strategy.
		{"bad-emulation-oev", `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0.0","strategy":"OldestEmulationVersion"}`,
			`[spec.emulationVersion: Invalid value: "1.30.0.0": must be a valid semantic version, spec.emulationVersion: Required value: ` + oevRequired + `]`,
			[]string{"spec.emulationVersion", "spec.emulationVersion"}},
		{"binary-below-emulation", `{"leaseName":"l","binaryVersion":"1.29.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
			"spec.binaryVersion: Invalid value: \"1.29.0\": must be greater than or equal to `emulationVersion`", []string{"spec.binaryVersion"}},
		{"prerelease-below-release", `{"leaseName":"l","binaryVersion":"1.30.0-rc.1","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
			"spec.binaryVersion: Invalid value: \"1.30.0-rc.1\": must be greater than or equal to `emulationVersion`", []string{"spec.binaryVersion"}},
		{"no-binary", `{"leaseName":"l","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
			`spec.binaryVersion: Required value`, []string{"spec.binaryVersion"}},
		{"no-strategy", `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0"}`,
			`spec.strategy: Required value`, []string{"spec.strategy"}},
		{"oev-without-emulation", `{"leaseName":"l","binaryVersion":"1.31.0","strategy":"OldestEmulationVersion"}`,
			`spec.emulationVersion: Required value: ` + oevRequired, []string{"spec.emulationVersion"}},
		{"unknown-strategy", `{"leaseName":"l","binaryVersion":"1.31.0","strategy":"Foo"}`,
			`spec.strategy.strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"`, []string{"spec.strategy.strategy"}},
		{"bad-qualified-strategy", `{"leaseName":"l","binaryVersion":"1.31.0","strategy":"example.com/-x"}`,
			`spec.strategy.strategy: Invalid value: "example.com/-x": name part must consist of alphanumeric characters...`, []string{"spec.strategy.strategy"}},
		{"everything-wrong", `{"binaryVersion":"","emulationVersion":"x"}`,
			`[spec.leaseName: Required value, spec.emulationVersion: Invalid value: "x": must be a valid semantic version, spec.binaryVersion: Required value, spec.strategy: Required value]`,
			[]string{"spec.leaseName", "spec.emulationVersion", "spec.binaryVersion", "spec.strategy"}},
	}
	alpha1 := []invalid{
		{"no-lease-name", `{"preferredStrategies":["example.com/s"]}`, `spec.leaseName: Required value`, []string{"spec.leaseName"}},
		{"no-strategies", `{"leaseName":"l","binaryVersion":"1.31.0"}`,
			`spec.preferredStrategies: Required value: must contain at least one strategy`, []string{"spec.preferredStrategies"}},
		{"empty-strategies", `{"leaseName":"l","binaryVersion":"1.31.0","preferredStrategies":[]}`,
			`spec.preferredStrategies: Required value: must contain at least one strategy`, []string{"spec.preferredStrategies"}},
		{"oev-without-versions", `{"leaseName":"l","preferredStrategies":["OldestEmulationVersion"]}`,
			`[spec.binaryVersion: Required value: ` + oevRequired + `, spec.emulationVersion: Required value: ` + oevRequired + `]`,
			[]string{"spec.binaryVersion", "spec.emulationVersion"}},
		{"bad-emulation", `{"leaseName":"l","emulationVersion":"1.30","preferredStrategies":["example.com/s"]}`,
			`spec.emulationVersion: Invalid value: "1.30": must be a valid semantic version`, []string{"spec.emulationVersion"}},
		{"binary-below-emulation", `{"leaseName":"l","binaryVersion":"1.29.0","emulationVersion":"1.30.0","preferredStrategies":["example.com/s"]}`,
			"spec.binaryVersion: Invalid value: \"1.29.0\": must be greater than or equal to `emulationVersion`", []string{"spec.binaryVersion"}},
		{"unknown-strategy", `{"leaseName":"l","preferredStrategies":["example.com/s","Foo"]}`,
			`spec.preferredStrategies[1].strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"`, []string{"spec.preferredStrategies[1].strategy"}},
	}
	valid := map[string]string{
		"v1beta1":  `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
		"v1alpha2": `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
		"v1alpha1": `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":["OldestEmulationVersion"]}`,
	}
	// Accepted: domain-prefixed strategies (no emulationVersion needed),
	// pre-release and build versions, and v1alpha1 without binaryVersion.
	accepted := map[string][]string{
		"v1beta1": {
			`{"leaseName":"l","binaryVersion":"1.31.0","strategy":"example.com/custom"}`,
			`{"leaseName":"l","binaryVersion":"1.31.0-alpha.1+build.5","emulationVersion":"1.31.0-alpha.0","strategy":"OldestEmulationVersion"}`,
		},
		"v1alpha2": {
			`{"leaseName":"l","binaryVersion":"1.31.0","strategy":"example.com/custom"}`,
		},
		"v1alpha1": {
			`{"leaseName":"l","preferredStrategies":["example.com/custom"]}`,
			`{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.31.0","preferredStrategies":["example.com/a","OldestEmulationVersion","example.com/b"]}`,
		},
	}
	for _, v := range lcVersions {
		t.Run(v, func(t *testing.T) {
			w := w.with(t)
			ns := ns + "-" + v
			cases := newer
			if v == "v1alpha1" {
				cases = alpha1
			}
			for _, tc := range cases {
				r := w.do("POST", lcPath(v, ns, ""), lcDoc(v, tc.name, "", tc.spec))
				msg := `LeaseCandidate.coordination.k8s.io "` + tc.name + `" is invalid: ` + tc.msg
				want := statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: msg,
					details: &metav1.StatusDetails{Name: tc.name, Group: "coordination.k8s.io", Kind: "LeaseCandidate"}}
				if p, ok := strings.CutSuffix(msg, "..."); ok {
					want.msg, want.prefix = p, true
				}
				st := r.status(t, want)
				var fields []string
				if st.Details != nil {
					for _, c := range st.Details.Causes {
						fields = append(fields, c.Field)
					}
				}
				if !slices.Equal(fields, tc.fields) {
					t.Errorf("%s: cause fields %q, want %q", tc.name, fields, tc.fields)
				}
				// A dry run validates the same; an update too.
				w.do("POST", lcPath(v, ns, "")+"?dryRun=All", lcDoc(v, tc.name, "", tc.spec)).status(t, want)
			}
			for i, spec := range accepted[v] {
				name := "ok-" + strconv.Itoa(i)
				lcAnswer(t, w.do("POST", lcPath(v, ns, ""), lcDoc(v, name, "", spec)), 201, v)
			}

			// leaseName is immutable, for PUT and PATCH alike; other spec
			// fields are not.
			name := "immutable-" + v
			cur := lcAnswer(t, w.do("POST", lcPath(v, ns, ""), lcDoc(v, name, "", valid[v])), 201, v)
			moved := strings.Replace(string(cur.raw), `"leaseName":"l"`, `"leaseName":"b"`, 1)
			immutable := statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg:     `LeaseCandidate.coordination.k8s.io "` + name + `" is invalid: spec.leaseName: Invalid value: "b": field is immutable`,
				details: &metav1.StatusDetails{Name: name, Group: "coordination.k8s.io", Kind: "LeaseCandidate", Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Message: `Invalid value: "b": field is immutable`, Field: "spec.leaseName"}}}}
			w.do("PUT", lcPath(v, ns, name), moved).status(t, immutable)
			w.do("PATCH", lcPath(v, ns, name), `{"spec":{"leaseName":"b"}}`, "Content-Type", "application/merge-patch+json").status(t, immutable)
			w.do("PATCH", lcPath(v, ns, name), `[{"op":"replace","path":"/spec/leaseName","value":"b"}]`, "Content-Type", "application/json-patch+json").status(t, immutable)
			// An update is validated like a create.
			w.do("PATCH", lcPath(v, ns, name), `{"spec":{"binaryVersion":"1.29.0"}}`, "Content-Type", "application/merge-patch+json").status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: `LeaseCandidate.coordination.k8s.io "` + name + "\" is invalid: spec.binaryVersion: Invalid value: \"1.29.0\": must be greater than or equal to `emulationVersion`"})
			upd := lcAnswer(t, w.do("PATCH", lcPath(v, ns, name), `{"spec":{"binaryVersion":"1.40.0","emulationVersion":"1.39.0"}}`, "Content-Type", "application/merge-patch+json"), 200, v)
			if !bytes.Contains(upd.Spec, []byte(`"binaryVersion":"1.40.0"`)) {
				t.Errorf("patch of the versions: %s", upd.Spec)
			}

			// Names are ConfigMap keys: upper case and "_" are fine, where
			// a Lease refuses them.
			for _, n := range []string{"Kube_Scheduler", "UPPER.case-1_x", "_x"} {
				got := lcAnswer(t, w.do("POST", lcPath(v, ns, ""), lcDoc(v, n, "", valid[v])), 201, v)
				if got.Metadata.Name != n {
					t.Errorf("created %q as %q", n, got.Metadata.Name)
				}
				lcAnswer(t, w.do("GET", lcPath(v, ns, n), nil), 200, v)
				if v == "v1beta1" {
					w.do("POST", nsPath(ns), leaseBody("", n, "h")).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
						msg: `Lease.coordination.k8s.io "` + n + `" is invalid: metadata.name: Invalid value: "` + n + `": a lowercase RFC 1123 subdomain must consist of`, prefix: true})
				}
				// Delete through a version that did not create it.
				other := lcVersions[(slices.Index(lcVersions, v)+1)%len(lcVersions)]
				if r := w.do("DELETE", lcPath(other, ns, n), nil); r.code != 200 {
					t.Errorf("delete %s through %s: %v", n, other, r)
				}
			}
			for _, n := range []string{"a b", "..", "..x", "a/b?"} {
				r := w.do("POST", lcPath(v, ns, ""), `{"apiVersion":"coordination.k8s.io/`+v+`","kind":"LeaseCandidate","metadata":{"name":`+strconv.Quote(n)+`},"spec":`+valid[v]+`}`)
				st := r.status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
					msg: `LeaseCandidate.coordination.k8s.io "` + n + `" is invalid: metadata.name: Invalid value: "` + n + `": `, prefix: true})
				if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "metadata.name" {
					t.Errorf("name %q: details %+v", n, st.Details)
				}
			}
			w.do("POST", lcPath(v, ns, ""), `{"apiVersion":"coordination.k8s.io/`+v+`","kind":"LeaseCandidate","metadata":{"name":"`+strings.Repeat("x", 254)+`"},"spec":`+valid[v]+`}`).
				status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: `LeaseCandidate.coordination.k8s.io "` + strings.Repeat("x", 254) + `" is invalid: metadata.name: Invalid value: `, prefix: true})
		})
	}
}

// TestLeaseCandidateDiscovery checks that every discovery document lists
// leasecandidates in its three versions, in kube-apiserver's order.
func TestLeaseCandidateDiscovery(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	w := newWire(t, c, f)
	verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	order := []string{"v1", "v1beta1", "v1alpha2", "v1alpha1"}
	wantVersions := make([]metav1.GroupVersionForDiscovery, len(order))
	for i, v := range order {
		wantVersions[i] = metav1.GroupVersionForDiscovery{GroupVersion: "coordination.k8s.io/" + v, Version: v}
	}
	preferred := wantVersions[0]
	getJSON := func(path string, into any) {
		t.Helper()
		r := w.do("GET", path, nil)
		if r.code != 200 || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %v", path, r)
		}
		if err := json.Unmarshal(r.body, into); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}

	var g metav1.APIGroup
	getJSON("/apis/coordination.k8s.io", &g)
	if g.Kind != "APIGroup" || g.Name != "coordination.k8s.io" || !slices.Equal(g.Versions, wantVersions) || g.PreferredVersion != preferred {
		t.Errorf("/apis/coordination.k8s.io: %+v", g)
	}
	var gl metav1.APIGroupList
	getJSON("/apis", &gl)
	if len(gl.Groups) != 4 || !slices.Equal(gl.Groups[0].Versions, wantVersions) || gl.Groups[0].PreferredVersion != preferred {
		t.Errorf("/apis: %+v", gl)
	}
	for _, v := range order {
		var rl metav1.APIResourceList
		getJSON(lcGroupPath+v, &rl)
		want := []metav1.APIResource{{Name: "leasecandidates", SingularName: "leasecandidate", Namespaced: true, Kind: "LeaseCandidate", Verbs: verbs, StorageVersionHash: "lvME0iHWE20="}}
		switch v {
		case "v1":
			want = []metav1.APIResource{{Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease", Verbs: verbs, StorageVersionHash: "gqkMMb/YqFM="}}
		case "v1alpha1":
			want[0].StorageVersionHash = "VM2ILh8OBCI="
		}
		if rl.Kind != "APIResourceList" || rl.GroupVersion != "coordination.k8s.io/"+v || !apiequality.Semantic.DeepEqual(rl.APIResources, want) {
			t.Errorf("%s: %+v, want resources %+v", lcGroupPath+v, rl, want)
		}
	}

	// Aggregated discovery.
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	r := w.do("GET", "/apis", nil, "Accept", aggregated+",application/json")
	if r.code != 200 || r.header.Get("Content-Type") != aggregated {
		t.Fatalf("aggregated /apis: %v", r)
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(r.body, &agg); err != nil {
		t.Fatal(err)
	}
	if agg.Kind != "APIGroupDiscoveryList" || agg.APIVersion != "apidiscovery.k8s.io/v2" || len(agg.Items) != 4 || agg.Items[0].Name != "coordination.k8s.io" {
		t.Fatalf("aggregated /apis: %s", r.body)
	}
	var got []string
	for _, vd := range agg.Items[0].Versions {
		got = append(got, vd.Version)
		want := apidiscoveryv2.APIResourceDiscovery{Resource: "leasecandidates", ResponseKind: &metav1.GroupVersionKind{Kind: "LeaseCandidate"},
			Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "leasecandidate", Verbs: verbs}
		if vd.Version == "v1" {
			want = apidiscoveryv2.APIResourceDiscovery{Resource: "leases", ResponseKind: &metav1.GroupVersionKind{Kind: "Lease"},
				Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "lease", Verbs: verbs}
		}
		if len(vd.Resources) != 1 || !apiequality.Semantic.DeepEqual(vd.Resources[0], want) || vd.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
			t.Errorf("aggregated %s: %+v, want %+v", vd.Version, vd, want)
		}
	}
	if !slices.Equal(got, order) {
		t.Errorf("aggregated versions %v, want %v", got, order)
	}

	// What client-go makes of it (aggregated discovery, as it asks).
	cs := clientset(t, &rest.Config{Host: c.Nodes[f].URL(), Timeout: opTimeout})
	_, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range lists {
		for _, res := range l.APIResources {
			if res.Name == "leasecandidates" {
				found[l.GroupVersion] = true
				if res.Kind != "LeaseCandidate" || !res.Namespaced || !slices.Equal(res.Verbs, verbs) || res.SingularName != "leasecandidate" {
					t.Errorf("client-go discovery of %s: %+v", l.GroupVersion, res)
				}
			}
		}
	}
	for _, v := range lcVersions {
		if !found["coordination.k8s.io/"+v] {
			t.Errorf("client-go discovery finds no leasecandidates in %s: %v", v, found)
		}
	}
	// The preferred version of each resource: leases v1, leasecandidates
	// v1beta1 (the first version of the group that has it).
	pref, err := cs.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	prefVersion := map[string]string{}
	for _, l := range pref {
		for _, res := range l.APIResources {
			prefVersion[res.Name] = l.GroupVersion
		}
	}
	if prefVersion["leases"] != "coordination.k8s.io/v1" || prefVersion["leasecandidates"] != "coordination.k8s.io/v1beta1" {
		t.Errorf("preferred resources %v", prefVersion)
	}
	rl, err := cs.Discovery().ServerResourcesForGroupVersion("coordination.k8s.io/v1alpha1")
	if err != nil || len(rl.APIResources) != 1 || rl.APIResources[0].Name != "leasecandidates" {
		t.Errorf("client-go v1alpha1 resources: %+v %v", rl, err)
	}
}

// TestLeaseCandidateTables checks the Table and PartialObjectMetadata
// output kubectl asks for, for LeaseCandidate and Lease.
func TestLeaseCandidateTables(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	w := newWire(t, c, c.Follower())
	const ns = "tbl"
	lcAnswer(t, w.do("POST", lcPath("v1beta1", ns, ""), lcDoc("v1beta1", "t-b", "", `{"leaseName":"kube-controller-manager","binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`)), 201, "v1beta1")
	lcAnswer(t, w.do("POST", lcPath("v1alpha1", ns, ""), lcDoc("v1alpha1", "t-a", "", `{"leaseName":"kube-scheduler","binaryVersion":"1.32.0","preferredStrategies":["example.com/x","example.com/y"]}`)), 201, "v1alpha1")
	// Leases in a namespace of their own: an election controller may
	// create Leases where candidates are.
	const leaseNS = "tbl-lease"
	w.create(leaseNS, "tl", "me", nil)
	w.create(leaseNS, "tm", "", nil)

	nameCol := metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageCol := metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
	// kube-apiserver's printers: the LeaseName description is v1alpha2's
	// field doc; BinaryVersion and EmulationVersion look theirs up in
	// ObjectMeta's docs, which have none.
	lcColumns := []metav1.TableColumnDefinition{nameCol,
		{Name: "LeaseName", Type: "string", Description: coordinationv1alpha2.LeaseCandidateSpec{}.SwaggerDoc()["leaseName"]},
		{Name: "BinaryVersion", Type: "string"},
		{Name: "EmulationVersion", Type: "string"},
		ageCol}
	leaseColumns := []metav1.TableColumnDefinition{nameCol,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageCol}
	age := regexp.MustCompile(`^[0-9]+s$`)

	table := func(t *testing.T, path, accept string) (*metav1.Table, wireResp) {
		t.Helper()
		r := w.with(t).do("GET", path, nil, "Accept", accept)
		if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET %s as Table: %v", path, r)
		}
		lcNoInternal(t, path, r.body)
		var tb metav1.Table
		if err := json.Unmarshal(r.body, &tb); err != nil {
			t.Fatal(err)
		}
		if tb.Kind != "Table" || tb.APIVersion != "meta.k8s.io/v1" {
			t.Errorf("%s: kind %q apiVersion %q", path, tb.Kind, tb.APIVersion)
		}
		return &tb, r
	}
	// cells checks a row's cells: the given ones, then an age.
	cells := func(t *testing.T, row metav1.TableRow, want ...any) {
		t.Helper()
		if len(row.Cells) != len(want)+1 || !reflect.DeepEqual(row.Cells[:len(want)], want) {
			t.Errorf("cells %v, want %v and an age", row.Cells, want)
			return
		}
		if a, _ := row.Cells[len(want)].(string); !age.MatchString(a) {
			t.Errorf("age cell %v", row.Cells[len(want)])
		}
	}

	for _, v := range lcVersions {
		t.Run(v, func(t *testing.T) {
			var list struct {
				Metadata metav1.ListMeta `json:"metadata"`
			}
			if err := json.Unmarshal(w.with(t).do("GET", lcPath(v, ns, ""), nil).body, &list); err != nil {
				t.Fatal(err)
			}
			// kubectl get's Accept.
			// At the list's version: another entry (the cluster's feature
			// level, say) may have been applied since.
			tb, _ := table(t, lcPath(v, ns, "")+"?limit=500&resourceVersionMatch=Exact&resourceVersion="+list.Metadata.ResourceVersion,
				lcTableJSON+",application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
			if !reflect.DeepEqual(tb.ColumnDefinitions, lcColumns) {
				t.Errorf("columns %+v,\nwant %+v", tb.ColumnDefinitions, lcColumns)
			}
			if tb.ResourceVersion != list.Metadata.ResourceVersion {
				t.Errorf("table RV %q, list RV %q", tb.ResourceVersion, list.Metadata.ResourceVersion)
			}
			if len(tb.Rows) != 2 {
				t.Fatalf("rows %+v", tb.Rows)
			}
			cells(t, tb.Rows[0], "t-a", "kube-scheduler", "1.32.0", "")
			cells(t, tb.Rows[1], "t-b", "kube-controller-manager", "1.31.0", "1.30.0")
			for i, row := range tb.Rows {
				var p metav1.PartialObjectMetadata
				if err := json.Unmarshal(row.Object.Raw, &p); err != nil || p.Kind != "PartialObjectMetadata" || p.APIVersion != "meta.k8s.io/v1" || p.Name != row.Cells[0] || p.UID == "" {
					t.Errorf("row %d object %s (%v)", i, row.Object.Raw, err)
				}
			}
			// One object; its RV is the table's.
			tb, _ = table(t, lcPath(v, ns, "t-a"), lcTableJSON)
			var one lcWire
			if err := json.Unmarshal(w.with(t).do("GET", lcPath(v, ns, "t-a"), nil).body, &one); err != nil {
				t.Fatal(err)
			}
			if len(tb.Rows) != 1 || tb.ResourceVersion != one.Metadata.ResourceVersion || len(tb.ColumnDefinitions) != 5 {
				t.Fatalf("table of t-a: %+v", tb)
			}
			cells(t, tb.Rows[0], "t-a", "kube-scheduler", "1.32.0", "")
			// includeObject.
			_, r := table(t, lcPath(v, ns, "")+"?includeObject=None", lcTableJSON)
			var rows struct {
				Rows []map[string]json.RawMessage `json:"rows"`
			}
			if err := json.Unmarshal(r.body, &rows); err != nil || len(rows.Rows) != 2 {
				t.Fatalf("includeObject=None: %s", r.body)
			}
			for _, row := range rows.Rows {
				if o, ok := row["object"]; ok && string(o) != "null" {
					t.Errorf("includeObject=None row carries an object: %s", o)
				}
			}
			tb, _ = table(t, lcPath(v, ns, "")+"?includeObject=Object", lcTableJSON)
			wantStrategies := map[string]string{"v1beta1": `"strategy":"example.com/x"`, "v1alpha2": `"strategy":"example.com/x"`, "v1alpha1": `"preferredStrategies":["example.com/x","example.com/y"]`}[v]
			if len(tb.Rows) != 2 || !bytes.Contains(tb.Rows[0].Object.Raw, []byte(wantStrategies)) {
				t.Errorf("includeObject=Object rows %+v", tb.Rows)
			}
			for _, row := range tb.Rows {
				if !bytes.HasPrefix(row.Object.Raw, []byte(`{"kind":"LeaseCandidate","apiVersion":"coordination.k8s.io/`+v+`","metadata":{"name":"`+row.Cells[0].(string)+`"`)) {
					t.Errorf("includeObject=Object row %s", row.Object.Raw)
				}
			}
			w.with(t).do("GET", lcPath(v, ns, "")+"?includeObject=Bad", nil, "Accept", lcTableJSON).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: `Unable to convert to Table as requested: includeObject: Invalid value: "Bad": must be 'Metadata', 'Object', 'None', or empty`})

			// PartialObjectMetadata and its list.
			r = w.with(t).do("GET", lcPath(v, ns, "t-a"), nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
			var p metav1.PartialObjectMetadata
			if err := json.Unmarshal(r.body, &p); err != nil || r.code != 200 || p.Kind != "PartialObjectMetadata" || p.APIVersion != "meta.k8s.io/v1" ||
				p.Name != "t-a" || p.Labels["app"] != "conv" || bytes.Contains(r.body, []byte(`"spec"`)) {
				t.Errorf("PartialObjectMetadata: %v", r)
			}
			// At the table list's version: another entry (the cluster's
			// feature level, say) may have been applied since.
			r = w.with(t).do("GET", lcPath(v, ns, "")+"?resourceVersionMatch=Exact&resourceVersion="+list.Metadata.ResourceVersion, nil,
				"Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
			var pl metav1.PartialObjectMetadataList
			if err := json.Unmarshal(r.body, &pl); err != nil || r.code != 200 || pl.Kind != "PartialObjectMetadataList" || pl.APIVersion != "meta.k8s.io/v1" ||
				len(pl.Items) != 2 || pl.Items[0].Name != "t-a" || pl.Items[1].Name != "t-b" || pl.ResourceVersion != list.Metadata.ResourceVersion || bytes.Contains(r.body, []byte(`"spec"`)) {
				t.Errorf("PartialObjectMetadataList: %v", r)
			}
			w.with(t).do("GET", lcPath(v, ns, ""), nil, "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1").status(t, statusWant{code: 406, reason: metav1.StatusReasonNotAcceptable,
				msg: "you requested PartialObjectMetadata, but the requested object is a list", prefix: true})
		})
	}

	t.Run("lease", func(t *testing.T) {
		tb, _ := table(t, nsPath(leaseNS), lcTableJSON)
		if !reflect.DeepEqual(tb.ColumnDefinitions, leaseColumns) {
			t.Errorf("Lease columns %+v,\nwant %+v", tb.ColumnDefinitions, leaseColumns)
		}
		if len(tb.Rows) != 2 {
			t.Fatalf("rows %+v", tb.Rows)
		}
		cells(t, tb.Rows[0], "tl", "me")
		cells(t, tb.Rows[1], "tm", "")
		// Embedded objects carry their kind, also as list items (kubectl
		// decodes them as unstructured).
		for _, p := range []string{itemPath(leaseNS, "tl"), nsPath(leaseNS)} {
			tb, _ = table(t, p+"?includeObject=Object", lcTableJSON)
			for _, row := range tb.Rows {
				if !bytes.HasPrefix(row.Object.Raw, []byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"`+row.Cells[0].(string)+`"`)) {
					t.Errorf("%s includeObject=Object row %s", p, row.Object.Raw)
				}
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		w := w.with(t)
		for _, v := range lcVersions {
			ws := w.watch(lcPath(v, ns+"-w-"+v, "")+"?watch=true", "Accept", lcTableJSON)
			spec := `{"leaseName":"l1","binaryVersion":"1.31.0","strategy":"example.com/x"}`
			if v == "v1alpha1" {
				spec = `{"leaseName":"l1","binaryVersion":"1.31.0","preferredStrategies":["example.com/x"]}`
			}
			lcAnswer(t, w.do("POST", lcPath(v, ns+"-w-"+v, ""), lcDoc(v, "w1", "", spec)), 201, v)
			w.do("PATCH", lcPath(v, ns+"-w-"+v, "w1"), `{"spec":{"binaryVersion":"1.32.0"}}`, "Content-Type", "application/merge-patch+json")
			for i, want := range []struct{ typ, colDefs, cells string }{
				{"ADDED", `"columnDefinitions":[{"name":"Name","type":"string","format":"name"`, `"cells":["w1","l1","1.31.0","",`},
				{"MODIFIED", `"columnDefinitions":null`, `"cells":["w1","l1","1.32.0","",`},
			} {
				ev := ws.next(opTimeout)
				if ev.Type != want.typ || !strings.Contains(ev.raw, `"kind":"Table","apiVersion":"meta.k8s.io/v1"`) || !strings.Contains(ev.raw, want.colDefs) || !strings.Contains(ev.raw, want.cells) {
					t.Errorf("%s: table watch event %d: %s", v, i, ev.raw)
				}
				lcNoInternal(t, "table watch event", []byte(ev.raw))
			}
		}
	})
}

// TestLeaseCandidateHelper runs client-go's own LeaseCandidate helper
// (tools/leaderelection, v1beta1, protobuf as control-plane components
// speak it) against a follower: it creates its candidate, renews it when
// it starts, and answers the election controller's pings (pingTime set
// after renewTime) by renewing.
func TestLeaseCandidateHelper(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	f := c.Follower()
	cs := c.Client(f, true)
	const ns, name, leaseName = "kube-system", "kube-scheduler-node-1", "kube-scheduler"
	lcs := cs.CoordinationV1beta1().LeaseCandidates(ns)
	run := func() (stop func()) {
		cand, _, err := leaderelection.NewCandidate(cs, ns, name, leaseName, "1.33.0", "1.32.0", coordinationv1.OldestEmulationVersion)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		done := make(chan struct{})
		go func() {
			defer close(done)
			cand.Run(ctx)
		}()
		stop = func() {
			cancel()
			select {
			case <-done:
			case <-time.After(opTimeout):
				t.Error("the candidate helper did not stop")
			}
		}
		t.Cleanup(stop)
		return stop
	}
	// renewedAfter waits until the candidate's renewTime is after t0.
	renewedAfter := func(what string, t0 time.Time, within time.Duration) *coordinationv1beta1.LeaseCandidate {
		t.Helper()
		var cur *coordinationv1beta1.LeaseCandidate
		ok := testcluster.WaitFor(context.Background(), within, func() bool {
			got, err := lcs.Get(opCtx(t), name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			cur = got
			return got.Spec.RenewTime != nil && got.Spec.RenewTime.After(t0)
		})
		if !ok {
			t.Fatalf("%s: renewTime not after %s within %v: %+v", what, t0.Format(metav1.RFC3339Micro), within, cur)
		}
		return cur
	}

	start := time.Now()
	stop := run()
	created := renewedAfter("create", start.Add(-time.Second), opTimeout)
	if s := created.Spec; s.LeaseName != leaseName || s.BinaryVersion != "1.33.0" || s.EmulationVersion != "1.32.0" || s.Strategy != coordinationv1.OldestEmulationVersion || s.PingTime != nil {
		t.Fatalf("the helper's candidate: %+v", s)
	}
	// A v1alpha1 client sees it with preferredStrategies [strategy].
	alpha := lcAnswer(t, newWire(t, c, f).do("GET", lcPath("v1alpha1", ns, name), nil), 200, "v1alpha1")
	if !bytes.Contains(alpha.Spec, []byte(`"preferredStrategies":["OldestEmulationVersion"]`)) {
		t.Errorf("v1alpha1 view of the helper's candidate: %s", alpha.Spec)
	}

	// ping sets pingTime as the election controller does (a PUT of the
	// object read, retried on conflict) and waits for the helper to renew.
	ping := func(what string) *coordinationv1beta1.LeaseCandidate {
		t.Helper()
		var pinged time.Time
		ok := testcluster.WaitFor(context.Background(), opTimeout, func() bool {
			cur, err := lcs.Get(opCtx(t), name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			pinged = time.Now()
			cur.Spec.PingTime = lcMicro(pinged)
			_, err = lcs.Update(opCtx(t), cur, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsConflict(err) {
				t.Errorf("%s: setting pingTime: %v", what, err)
			}
			return err == nil
		})
		if !ok {
			t.Fatalf("%s: could not set pingTime", what)
		}
		got := renewedAfter(what, pinged, 5*time.Second)
		if got.Spec.PingTime == nil || !got.Spec.RenewTime.After(got.Spec.PingTime.Time) {
			t.Errorf("%s: renewTime %v not after pingTime %v", what, got.Spec.RenewTime, got.Spec.PingTime)
		}
		return got
	}
	first := ping("first ping")
	second := ping("second ping")
	if !second.Spec.RenewTime.After(first.Spec.RenewTime.Time) || rvOf(t, second.ResourceVersion) <= rvOf(t, first.ResourceVersion) {
		t.Errorf("renewTime did not move: %v then %v", first.Spec.RenewTime, second.Spec.RenewTime)
	}

	// A restarted helper finds its candidate and renews it at once.
	stop()
	restart := time.Now()
	run()
	renewed := renewedAfter("restart", restart, opTimeout)
	if renewed.UID != created.UID {
		t.Errorf("the restarted helper made a new candidate (uid %s, was %s)", renewed.UID, created.UID)
	}
	ping("ping after the restart")
}

// lcValidSpec is a valid spec of each version.
var lcValidSpec = map[string]string{
	"v1beta1":  `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
	"v1alpha2": `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","strategy":"OldestEmulationVersion"}`,
	"v1alpha1": `{"leaseName":"l","binaryVersion":"1.31.0","emulationVersion":"1.30.0","preferredStrategies":["OldestEmulationVersion"]}`,
}

// TestLeaseCandidateParameters checks, in raw JSON for every version, the
// query parameters and request checks LeaseCandidate shares with Lease:
// fieldValidation, fieldManager, pretty, body/URL mismatches, methods, the
// list and watch options, delete options and server-side apply.
func TestLeaseCandidateParameters(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	wc := newWire(t, c, c.Follower())
	for i, v := range lcVersions {
		t.Run(v, func(t *testing.T) {
			w := wc.with(t)
			ns := "par-" + v
			coll := lcPath(v, ns, "")
			doc := func(name string) string { return lcDoc(v, name, "", lcValidSpec[v]) }
			// A watch that ends by its timeout, checked at the end.
			timed := w.watch(coll + "?watch=true&timeoutSeconds=1")
			timedStart := time.Now()

			// fieldValidation and fieldManager.
			unknown := lcDoc(v, "fv", "", strings.TrimSuffix(lcValidSpec[v], "}")+`,"foo":1}`)
			w.do("POST", coll+"?fieldValidation=Strict", unknown).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: `LeaseCandidate in version "` + v + `" cannot be handled as a LeaseCandidate: strict decoding error: unknown field "spec.foo"`})
			r := w.do("POST", coll+"?fieldManager=mgr", unknown)
			fv := lcAnswer(t, r, 201, v)
			if got := r.header.Values("Warning"); !slices.Equal(got, []string{`299 - "unknown field \"spec.foo\""`}) {
				t.Errorf("Warning headers %q", got)
			}
			if got := managers(fv.Metadata.ManagedFields); !slices.Equal(got, []string{"mgr/Update"}) || fv.Metadata.ManagedFields[0].APIVersion != "coordination.k8s.io/"+v {
				t.Errorf("managedFields %+v, want mgr/Update in coordination.k8s.io/%s", fv.Metadata.ManagedFields, v)
			}
			r = w.do("POST", coll+"?fieldValidation=Ignore", strings.Replace(unknown, `"name":"fv"`, `"name":"fv2"`, 1))
			lcAnswer(t, r, 201, v)
			if got := r.header.Values("Warning"); len(got) != 0 {
				t.Errorf("Warning headers with fieldValidation=Ignore: %q", got)
			}
			w.do("POST", coll+"?fieldValidation=Bad", doc("fv3")).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bad": supported values: "", "Ignore", "Strict", "Warn"`})
			w.do("PATCH", lcPath(v, ns, "fv")+"?fieldValidation=Strict", `{"spec":{"bar":1}}`, "Content-Type", "application/merge-patch+json").status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: ` "" is invalid: patch: Invalid value: `, prefix: true})
			if r := w.do("GET", lcPath(v, ns, "fv")+"?pretty=true", nil); !bytes.HasPrefix(r.body, []byte("{\n  \"kind\": \"LeaseCandidate\",\n  \"apiVersion\": \"coordination.k8s.io/"+v+"\",\n")) {
				t.Errorf("pretty: %s", r.body)
			}

			// Bodies that do not fit the URL.
			other := lcVersions[(i+1)%len(lcVersions)]
			w.do("POST", coll, lcDoc(other, "wrong-version", "", lcValidSpec[other])).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: "the API version in the data (coordination.k8s.io/" + other + ") does not match the expected API version (coordination.k8s.io/" + v + ")"})
			w.do("POST", coll, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lease"}}`).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: "the API version in the data (coordination.k8s.io/v1) does not match the expected API version (coordination.k8s.io/" + v + ")"})
			w.do("POST", coll, strings.Replace(doc("elsewhere"), `"metadata":{`, `"metadata":{"namespace":"other",`, 1)).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: "the namespace of the provided object does not match the namespace sent on the request"})
			w.do("PUT", lcPath(v, ns, "x"), doc("y")).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: "the name of the object (y) does not match the name on the URL (x)"})
			w.do("POST", coll, strings.Replace(doc("with-rv"), `"metadata":{`, `"metadata":{"resourceVersion":"5",`, 1)).status(t, statusWant{code: 500,
				msg: "resourceVersion should not be set on objects to be created"})
			for _, m := range []struct{ method, path, allow string }{
				{"PUT", coll, "GET, POST, DELETE"}, {"PATCH", coll, "GET, POST, DELETE"}, {"POST", lcPath(v, ns, "fv"), "GET, PUT, PATCH, DELETE"}, {"POST", lcPath(v, "", ""), "GET"},
			} {
				r := w.do(m.method, m.path, doc("m"))
				r.status(t, statusWant{code: 405, reason: metav1.StatusReasonMethodNotAllowed, msg: "the server does not allow this method on the requested resource"})
				if got := r.header.Get("Allow"); got != m.allow {
					t.Errorf("%s %s: Allow %q, want %q", m.method, m.path, got, m.allow)
				}
			}
			w.do("GET", lcPath(v, ns, "fv")+"/status", nil).status(t, statusWant{code: 404, reason: metav1.StatusReasonNotFound,
				msg: "the server could not find the requested resource", details: &metav1.StatusDetails{}})

			// List options.
			var l struct {
				Metadata metav1.ListMeta `json:"metadata"`
			}
			if err := json.Unmarshal(w.do("GET", coll, nil).body, &l); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"resourceVersion=" + l.Metadata.ResourceVersion + "&resourceVersionMatch=Exact", "resourceVersion=" + l.Metadata.ResourceVersion + "&resourceVersionMatch=NotOlderThan", "resourceVersion=0"} {
				r := w.do("GET", coll+"?"+q, nil)
				if r.code != 200 || !bytes.Contains(r.body, []byte(`"name":"fv2"`)) {
					t.Errorf("list ?%s: %v", q, r)
				}
			}
			listInvalid := func(q, msg string) {
				t.Helper()
				w.do("GET", coll+"?"+q, nil).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid, msg: `ListOptions.meta.k8s.io "" is invalid: ` + msg})
			}
			listInvalid("resourceVersion=0&resourceVersionMatch=Exact", `resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)
			listInvalid("resourceVersionMatch=Exact", `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`)
			listInvalid("sendInitialEvents=true", `sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`)
			listInvalid("watch=true&resourceVersionMatch=NotOlderThan", `resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided`)
			w.do("GET", coll+"?resourceVersion=abc", nil).status(t, statusWant{code: 400, reason: metav1.StatusReasonBadRequest,
				msg: `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`})

			// A watch list: the objects, then the annotated bookmark.
			ws := w.watch(coll + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
			for _, n := range []string{"fv", "fv2"} {
				if ev := ws.next(opTimeout); ev.Type != "ADDED" || !strings.Contains(ev.raw, `"name":"`+n+`"`) {
					t.Errorf("initial event %s, want ADDED %s", ev.raw, n)
				}
			}
			ev := ws.next(opTimeout)
			var bm lcWire
			if err := json.Unmarshal(ev.Object, &bm); err != nil {
				t.Fatal(err)
			}
			if ev.Type != "BOOKMARK" || bm.Kind != "LeaseCandidate" || bm.APIVersion != "coordination.k8s.io/"+v || bm.Metadata.Annotations[metav1.InitialEventsAnnotationKey] != "true" ||
				rvOf(t, bm.Metadata.ResourceVersion) < rvOf(t, l.Metadata.ResourceVersion) || bm.Metadata.Name != "" {
				t.Errorf("event after the initial ones: %s", ev.raw)
			}

			// Delete options.
			item := lcPath(v, ns, "fv2")
			w.do("DELETE", item+"?propagationPolicy=Bad", nil).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bad": supported values: "Foreground", "Background", "Orphan", "nil"`})
			w.do("DELETE", item, `{"orphanDependents":true,"propagationPolicy":"Background"}`).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: `, prefix: true})
			w.do("DELETE", item+"?dryRun=x", nil).status(t, statusWant{code: 422, reason: metav1.StatusReasonInvalid,
				msg: `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: supported values: "All"`})
			// Leases and LeaseCandidates have no dependents: every policy
			// deletes at once.
			r = w.do("DELETE", item+"?propagationPolicy=Foreground&gracePeriodSeconds=30", nil)
			var st metav1.Status
			if err := json.Unmarshal(r.body, &st); err != nil || r.code != 200 || st.Kind != "Status" || st.Status != metav1.StatusSuccess || st.Details == nil ||
				st.Details.Name != "fv2" || st.Details.Kind != "leasecandidates" || st.Details.Group != "coordination.k8s.io" || st.Details.UID == "" || bytes.Contains(r.body, []byte(`"code"`)) {
				t.Errorf("delete: %v", r)
			}
			w.do("GET", item, nil).status(t, statusWant{code: 404, reason: metav1.StatusReasonNotFound, msg: `leasecandidates.coordination.k8s.io "fv2" not found`,
				details: &metav1.StatusDetails{Name: "fv2", Group: "coordination.k8s.io", Kind: "leasecandidates"}})

			// Server-side apply.
			strategyYAML := "  strategy: example.com/a\n"
			if v == "v1alpha1" {
				strategyYAML = "  preferredStrategies:\n  - example.com/a\n  - example.com/b\n"
			}
			applyDoc := func(binary, strategies string) string {
				return "apiVersion: coordination.k8s.io/" + v + "\nkind: LeaseCandidate\nmetadata:\n  name: ssa\nspec:\n  leaseName: l\n  binaryVersion: " + binary + "\n" + strategies
			}
			ssa := lcPath(v, ns, "ssa")
			created := lcAnswer(t, w.do("PATCH", ssa+"?fieldManager=alice", applyDoc("1.31.0", strategyYAML), "Content-Type", applyCT), 201, v)
			if got := managers(created.Metadata.ManagedFields); !slices.Equal(got, []string{"alice/Apply"}) {
				t.Errorf("managedFields after an apply create: %v", got)
			}
			again := lcAnswer(t, w.do("PATCH", ssa+"?fieldManager=alice", applyDoc("1.31.0", strategyYAML), "Content-Type", applyCT), 200, v)
			if again.Metadata.ResourceVersion != created.Metadata.ResourceVersion {
				t.Errorf("unchanged apply moved the resourceVersion %s -> %s", created.Metadata.ResourceVersion, again.Metadata.ResourceVersion)
			}
			w.do("PATCH", ssa+"?fieldManager=bob", applyDoc("1.32.0", ""), "Content-Type", applyCT).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict,
				msg:     `Apply failed with 1 conflict: conflict with "alice": .spec.binaryVersion`,
				details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "alice"`, Field: ".spec.binaryVersion"}}}})
			forced := lcAnswer(t, w.do("PATCH", ssa+"?fieldManager=bob&force=true", applyDoc("1.32.0", ""), "Content-Type", applyCT), 200, v)
			if !bytes.Contains(forced.Spec, []byte(`"binaryVersion":"1.32.0"`)) || !bytes.Contains(forced.Spec, []byte(`example.com/a`)) {
				t.Errorf("forced apply: %s", forced.Spec)
			}
			if v == "v1alpha1" {
				// preferredStrategies is atomic for apply too: replaced whole.
				out := lcAnswer(t, w.do("PATCH", ssa+"?fieldManager=alice", "apiVersion: coordination.k8s.io/v1alpha1\nkind: LeaseCandidate\nmetadata:\n  name: ssa\nspec:\n  leaseName: l\n  preferredStrategies:\n  - example.com/c\n", "Content-Type", applyCT), 200, v)
				if !lcJSONSame(t, out.Spec, `{"leaseName":"l","binaryVersion":"1.32.0","preferredStrategies":["example.com/c"]}`) {
					t.Errorf("apply of preferredStrategies: %s", out.Spec)
				}
			}

			// The watch with timeoutSeconds=1 ended cleanly meanwhile.
			for {
				select {
				case ev, ok := <-timed.events:
					if !ok {
						if el := time.Since(timedStart); el < 900*time.Millisecond {
							t.Errorf("watch with timeoutSeconds=1 ended after %v", el)
						}
						return
					}
					if ev.err != nil || ev.Type == "ERROR" {
						t.Fatalf("timed watch: %q %v", ev.raw, ev.err)
					}
					lcNoInternal(t, "timed watch", []byte(ev.raw))
				case <-time.After(5 * time.Second):
					t.Fatal("watch with timeoutSeconds=1 still open after 5s")
				}
			}
		})
	}

	t.Run("apply_across_versions", func(t *testing.T) {
		w := wc.with(t)
		const ns = "par-x"
		alpha := "apiVersion: coordination.k8s.io/v1alpha1\nkind: LeaseCandidate\nmetadata:\n  name: x\nspec:\n  leaseName: l\n  binaryVersion: 1.31.0\n  preferredStrategies:\n  - example.com/a\n  - example.com/b\n"
		lcAnswer(t, w.do("PATCH", lcPath("v1alpha1", ns, "x")+"?fieldManager=alice", alpha, "Content-Type", applyCT), 201, "v1alpha1")
		beta := "apiVersion: coordination.k8s.io/v1beta1\nkind: LeaseCandidate\nmetadata:\n  name: x\nspec:\n  leaseName: l\n  binaryVersion: 1.32.0\n"
		st := w.do("PATCH", lcPath("v1beta1", ns, "x")+"?fieldManager=bob", beta, "Content-Type", applyCT).status(t, statusWant{code: 409, reason: metav1.StatusReasonConflict,
			msg: `Apply failed with 1 conflict: conflict with "alice": .spec.binaryVersion`})
		if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != ".spec.binaryVersion" {
			t.Errorf("cross-version conflict details %+v", st.Details)
		}
		out := lcAnswer(t, w.do("PATCH", lcPath("v1beta1", ns, "x")+"?fieldManager=bob&force=true", beta, "Content-Type", applyCT), 200, "v1beta1")
		if !lcJSONSame(t, out.Spec, `{"leaseName":"l","binaryVersion":"1.32.0","strategy":"example.com/a"}`) {
			t.Errorf("forced v1beta1 apply: %s", out.Spec)
		}
		// bob wrote through v1beta1 without changing the strategy, so the
		// v1alpha1 view keeps alice's list.
		a := lcAnswer(t, w.do("GET", lcPath("v1alpha1", ns, "x"), nil), 200, "v1alpha1")
		if !lcJSONSame(t, a.Spec, `{"leaseName":"l","binaryVersion":"1.32.0","preferredStrategies":["example.com/a","example.com/b"]}`) {
			t.Errorf("v1alpha1 read after a v1beta1 apply: %s", a.Spec)
		}
		if got := managers(a.Metadata.ManagedFields); !slices.Contains(got, "alice/Apply") || !slices.Contains(got, "bob/Apply") {
			t.Errorf("managedFields %v", got)
		}
	})
}
