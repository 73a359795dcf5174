package etcdconformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"

	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/utils/clock"
)

// The environment the tests read.
const (
	envEndpoints = "ETCD_CONFORMANCE_ENDPOINTS" // comma-separated client URLs (required)
	envCACert    = "ETCD_CONFORMANCE_CACERT"    // CA that signed the server certificates
	envCert      = "ETCD_CONFORMANCE_CERT"      // client certificate, with envKey
	envKey       = "ETCD_CONFORMANCE_KEY"
)

const (
	// valuePrefix is what the suites' PrefixTransformer puts before every
	// stored value (etcd3's tests use the same, "test!").
	valuePrefix = "test!"
	// compactRevKey is the key whose version kube-apiserver's compactors use
	// as their logical clock (etcd3/compact.go).
	compactRevKey = "compact_rev_key"
	// maxPageLimit is the largest page etcd3 asks for when it grows the page
	// size of a filtered list (etcd3/store.go maxLimit).
	maxPageLimit = 10000

	// suiteTimeout bounds one suite; go test -timeout bounds the run.
	suiteTimeout = 5 * time.Minute
	// dialTimeout is kube-apiserver's (storagebackend/factory/etcd3.go).
	dialTimeout = 20 * time.Second
	// compactObserveTimeout bounds the wait for a store to see a compaction:
	// its compactor re-reads compact_rev_key a second after it starts and
	// then watches it.
	compactObserveTimeout = 30 * time.Second
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
	codec  runtime.Codec
)

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	codec = apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)
	// gRPC's info and warning lines (reconnects, closed streams) drown the
	// suites' output; errors still show.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
}

// target is the server under test, as the environment describes it.
type target struct {
	endpoints []string
	tls       *tls.Config // nil: plaintext
	// root is this run's key prefix, unique per process, so that a server
	// that already holds data (an earlier run's) looks empty to every suite.
	root string
}

// loadTarget reads the environment. Without endpoints there is nothing to
// test against: the test fails and says how to give them.
func loadTarget(t *testing.T) *target {
	t.Helper()
	raw := strings.TrimSpace(os.Getenv(envEndpoints))
	if raw == "" {
		t.Fatalf("%s is not set: give the etcd v3 endpoints to test, e.g. %s=http://127.0.0.1:23379,http://127.0.0.1:23381,http://127.0.0.1:23383 (scripts/conformance.sh starts a cluster and sets it)",
			envEndpoints, envEndpoints)
	}
	tg := &target{root: fmt.Sprintf("/etcdconformance/%d-%d", time.Now().UnixNano(), os.Getpid())}
	for _, e := range strings.Split(raw, ",") {
		if e = strings.TrimSpace(e); e != "" {
			tg.endpoints = append(tg.endpoints, e)
		}
	}
	var err error
	if tg.tls, err = tlsFromEnv(); err != nil {
		t.Fatal(err)
	}
	return tg
}

// tlsFromEnv builds the client TLS configuration, or returns nil when none
// of the TLS variables is set.
func tlsFromEnv() (*tls.Config, error) {
	ca, cert, key := os.Getenv(envCACert), os.Getenv(envCert), os.Getenv(envKey)
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envCACert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", envCACert, ca)
		}
		cfg.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s and %s go together", envCert, envKey)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", envCert, envKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func (tg *target) clientConfig() clientv3.Config {
	return clientv3.Config{
		Endpoints:   tg.endpoints,
		TLS:         tg.tls,
		DialTimeout: dialTimeout,
		Logger:      zap.NewNop(),
	}
}

// mustReach fails the test unless every endpoint answers a read, so that an
// unreachable server is one clear failure rather than fifty-four.
func (tg *target) mustReach(t *testing.T) {
	t.Helper()
	for _, e := range tg.endpoints {
		cfg := tg.clientConfig()
		cfg.Endpoints = []string{e}
		c, err := clientv3.New(cfg)
		if err != nil {
			t.Fatalf("client for %s: %v", e, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.Get(ctx, tg.root+"/ping")
		cancel()
		c.Close()
		if err != nil {
			t.Fatalf("cannot read from %s within 10s: %v", e, err)
		}
	}
}

// noteCompaction says so when the server was compacted before this run:
// RunWatchSemantics watches from resourceVersion 1, and those of its cases
// then fail with "too old", as they would against any compacted etcd.
func (tg *target) noteCompaction(t *testing.T) {
	t.Helper()
	c, err := clientv3.New(tg.clientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, compactRevKey)
	if err != nil {
		t.Fatalf("get %s: %v", compactRevKey, err)
	}
	if len(resp.Kvs) > 0 && string(resp.Kvs[0].Value) != "0" {
		t.Logf("NOTE: the server was compacted before this run (%s=%s): RunWatchSemantics' cases that watch from resourceVersion 1 will fail; use a fresh server",
			compactRevKey, resp.Kvs[0].Value)
	}
}

// fixture is one etcd3 store over the target, set up the way etcd3's
// store_test.go testSetup does for the embedded etcd (prefix transformer
// "test!", lease reuse 1s, compaction interval 0, recorders around the
// client), but under a key prefix of its own.
type fixture struct {
	store storage.Interface
	// client is the store's: its KV counts Range calls, its Kubernetes
	// interface records lists.
	client *kubernetes.Client
	kv     *storagetesting.KVRecorder
	// raw is the harness's own connection (compaction, checks of stored
	// bytes, revision bumps), so that its reads never count as the store's.
	// The store's compactor uses it too: its read of compact_rev_key would
	// otherwise land in the counts the paging suites check.
	raw *clientv3.Client
	// base is the transformer the store starts with; transformer lets the
	// suites swap it.
	base        *storagetesting.PrefixTransformer
	transformer *swapTransformer
	// keyPrefix starts every etcd key of this store ("/<root>/<suite>/").
	keyPrefix string
}

// newFixture builds a store for t. Feature gates must be set before: the
// compactor decides at creation whether to watch compact_rev_key
// (ListFromCacheSnapshot) and the store whether to aggregate corrupt-object
// errors (AllowUnsafeMalformedObjectDeletion).
func (tg *target) newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{keyPrefix: path.Join(tg.root, strings.TrimPrefix(t.Name(), "TestStorage/")) + "/"}
	var err error
	if f.raw, err = clientv3.New(tg.clientConfig()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.raw.Close() })
	if f.client, err = kubernetes.New(tg.clientConfig()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.client.Close() })
	f.kv = storagetesting.NewKVRecorder(f.client.KV)
	f.client.KV = f.kv
	f.client.Kubernetes = storagetesting.NewKubernetesRecorder(f.client.Kubernetes)

	compactor := etcd3.NewCompactor(f.raw, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)

	f.base = storagetesting.NewPrefixTransformer([]byte(valuePrefix), false)
	f.transformer = &swapTransformer{cur: f.base}
	lease := etcd3.NewDefaultLeaseManagerConfig()
	// The suites wait at most 30s for anything; a 1s reuse keeps TTLs short.
	lease.ReuseDurationSeconds = 1
	versioner := storage.APIObjectVersioner{}
	st, err := etcd3.New(f.client, compactor, codec,
		func() runtime.Object { return &example.Pod{} },
		func() runtime.Object { return &example.PodList{} },
		f.keyPrefix, "/pods/", schema.GroupResource{Resource: "pods"},
		f.transformer, lease, etcd3.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	f.store = st
	return f
}

// swappable is the store as the suites that replace its transformer want it
// (storagetesting.InterfaceWithPrefixTransformer and
// InterfaceWithCorruptTransformer). etcd3's tests reach into the store's
// fields; from outside the package the transformer handed to etcd3.New is a
// swapTransformer, which the store and its watcher share.
func (f *fixture) swappable() *swappableStore {
	return &swappableStore{Interface: f.store, tr: f.transformer}
}

type swappableStore struct {
	storage.Interface
	tr *swapTransformer
}

// UpdatePrefixTransformer hands the suite a fresh copy of the "test!"
// transformer to modify and installs the result until the returned func runs.
func (s *swappableStore) UpdatePrefixTransformer(modify storagetesting.PrefixTransformerModifier) func() {
	return s.tr.swap(modify(storagetesting.NewPrefixTransformer([]byte(valuePrefix), false)))
}

// CorruptTransformer makes every read fail until the returned func runs.
// Wrapped in etcd3.WithCorruptObjErrorHandlingTransformer, the failure
// carries etcd3's corrupt-object error type, which unsafe deletion looks for.
func (s *swappableStore) CorruptTransformer() func() {
	return s.tr.swap(etcd3.WithCorruptObjErrorHandlingTransformer(corruptTransformer{Transformer: s.tr.current()}))
}

// swapTransformer delegates to a transformer that can be replaced while the
// store runs (the watcher reads through it from its own goroutines).
type swapTransformer struct {
	mu  sync.RWMutex
	cur value.Transformer
}

func (s *swapTransformer) current() value.Transformer {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// swap installs next and returns a func that puts back what was there.
func (s *swapTransformer) swap(next value.Transformer) (restore func()) {
	s.mu.Lock()
	prev := s.cur
	s.cur = next
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.cur = prev
		s.mu.Unlock()
	}
}

func (s *swapTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return s.current().TransformFromStorage(ctx, data, dataCtx)
}

func (s *swapTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return s.current().TransformToStorage(ctx, data, dataCtx)
}

// corruptTransformer writes as its inner transformer does and fails every
// read, as if the stored bytes had been damaged.
type corruptTransformer struct {
	value.Transformer
}

var errCorrupt = errors.New("stored value is corrupt (injected by the test)")

func (corruptTransformer) TransformFromStorage(context.Context, []byte, value.Context) ([]byte, bool, error) {
	return nil, true, errCorrupt
}

// increaseRV writes a key outside the store's resources, moving the server's
// revision without touching any object the suite lists.
func (f *fixture) increaseRV(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	resp, err := f.raw.Put(ctx, f.keyPrefix+"increaseRV", "ok")
	if err != nil {
		t.Fatalf("put %sincreaseRV: %v", f.keyPrefix, err)
	}
	return resp.Header.Revision
}

// checkStored is the suites' KeyValidation: the bytes stored under the
// object's key are the transformer's prefix and the codec's encoding of the
// object, with resourceVersion and selfLink left out.
func (f *fixture) checkStored(ctx context.Context, t *testing.T, key string) {
	t.Helper()
	etcdKey := f.keyPrefix + strings.TrimPrefix(key, "/")
	resp, err := f.raw.Get(ctx, etcdKey)
	if err != nil {
		t.Fatalf("get %s: %v", etcdKey, err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("nothing stored under %s", etcdKey)
	}
	data, ok := strings.CutPrefix(string(resp.Kvs[0].Value), valuePrefix)
	if !ok {
		t.Fatalf("value of %s does not start with %q: %q", etcdKey, valuePrefix, resp.Kvs[0].Value)
	}
	obj, err := runtime.Decode(codec, []byte(data))
	if err != nil {
		t.Fatalf("decode value of %s: %v", etcdKey, err)
	}
	pod, ok := obj.(*example.Pod)
	if !ok {
		t.Fatalf("value of %s decodes to %T, want *example.Pod", etcdKey, obj)
	}
	if pod.ResourceVersion != "" {
		t.Errorf("stored object has resourceVersion %q, want none", pod.ResourceVersion)
	}
	if pod.SelfLink != "" {
		t.Errorf("stored object has selfLink %q, want none", pod.SelfLink)
	}
}

// checkCalls is the paging suites' CallsValidation: the transformer decoded
// exactly the objects the suite expects, and the store made as many Range
// calls as etcd3's paging should. Without a page size that is one; with one,
// etcd3 doubles the page after every page that left it short (up to
// maxPageLimit), so it takes the fewest pages of sizes p, 2p, 4p, … that add
// up to the objects processed.
func (f *fixture) checkCalls(t *testing.T, pageSize, processed uint64) {
	t.Helper()
	if got := f.base.GetReadsAndReset(); got != processed {
		t.Errorf("transformer read %d objects, want %d", got, processed)
	}
	want := uint64(1)
	if pageSize != 0 {
		page, sum := pageSize, pageSize
		for sum < processed {
			page = min(page*2, maxPageLimit)
			sum += page
			want++
		}
	}
	if got := f.kv.GetReadsAndReset(); got != want {
		t.Fatalf("store made %d Range calls, want %d", got, want)
	}
}

// compact is the suites' Compaction. It compacts the server to
// resourceVersion the way kube-apiserver's compactor does (etcd3.Compact: a
// compare-and-swap on compact_rev_key's version, then Compact) and waits
// until the store has seen it. etcd3's own helper starts the swap at version
// 0, which on a server compacted before (any long-lived one) loses silently,
// since a lost swap is not an error: this one reads the version first and
// retries a lost swap.
func (f *fixture) compact(ctx context.Context, t *testing.T, resourceVersion string) {
	t.Helper()
	rev, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil || rev <= 0 {
		t.Fatalf("compact: bad resourceVersion %q", resourceVersion)
	}
	resp, err := f.raw.Get(ctx, compactRevKey)
	if err != nil {
		t.Fatalf("get %s: %v", compactRevKey, err)
	}
	var version int64
	if len(resp.Kvs) > 0 {
		version = resp.Kvs[0].Version
	}
	for attempt := 1; ; attempt++ {
		current, _, compacted, err := etcd3.Compact(ctx, f.raw, version, rev)
		if err != nil {
			t.Fatalf("compact to revision %d: %v", rev, err)
		}
		if compacted >= rev {
			break
		}
		if attempt == 5 {
			t.Fatalf("compact to revision %d: %s keeps changing under us (version %d, then %d)", rev, compactRevKey, version, current)
		}
		version = current
	}
	// Without ListFromCacheSnapshot the store's compactor does not watch
	// compact_rev_key and never learns of a compaction it did not make;
	// etcd3's helper does not wait then either.
	if !utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
		return
	}
	deadline := time.Now().Add(compactObserveTimeout)
	for f.store.CompactRevision() < rev {
		if time.Now().After(deadline) {
			t.Fatalf("store still reports compact revision %d %v after compacting to %d", f.store.CompactRevision(), compactObserveTimeout, rev)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the store to see compaction to %d: %v", rev, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// keys lists the etcd keys of the store's pods, as etcd3's own key lister
// does (a keys-only prefix Range through the store's client), for the
// size-estimating variant of RunTestStats.
func (f *fixture) keys(ctx context.Context) ([]string, error) {
	resp, err := f.client.KV.Get(ctx, f.keyPrefix+"pods/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}
