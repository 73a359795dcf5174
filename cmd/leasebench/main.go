// Command leasebench drives a running leasehold cluster through the
// Kubernetes REST API the way clients do, and reports throughput and
// latency percentiles.
//
//	leasebench [flags] renew|get|get0|watch|mixed
//	leasebench compare RESULT.json...
//	leasebench fanout RESULT.json...
//	leasebench machine [--dir DIR] [--n N]
//	leasebench tls RESULT.json...
//	leasebench history [--out FILE] [--date D] [--commit C] [--profile P] RESULT.json...
//	leasebench cert --ca-cert CA.crt --ca-key CA.key --cn NAME --out PREFIX
//
// renew: C clients each own a disjoint set of the K Leases and renew them
// in a loop with PUT carrying the resourceVersion of the last answer, as
// client-go's leader election does (409 → GET, then go on).
// get: linearizable GETs on followers; get0: GETs with resourceVersion=0.
// watch: W watchers on one node while renew runs; reports event delivery
// lag (the watcher's clock minus the renewTime the writer set, and minus
// when the write's response arrived).
// mixed: 90 % renew, 8 % get, 2 % namespace list.
//
// With --target etcd the same workloads run against an etcd cluster as the
// transactions kube-apiserver would send for them (see etcd.go); compare
// prints medians and ratios of such paired runs (see compare.go), fanout
// the medians of watch fan-out runs against runs without watchers (see
// fanout.go); history appends the same medians to a CSV file, one row per
// workload (see history.go). machine measures what bounds one sequential
// client on this machine: fdatasync and a round trip between processes
// (see machine.go).
//
// --cacert, --cert and --key make it a TLS client of either target:
// leasehold's https:// endpoints in HTTP/2 with a client certificate, as
// client-go talks to kube-apiserver, and etcd's client URLs with gRPC over
// TLS; tls prints runs over TLS against etcd's and against the same
// workloads' plaintext runs, cert makes certificates for such clusters
// (see tls.go and tlscompare.go).
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type config struct {
	target    string // leasehold, etcd or leasehold-etcd
	endpoints []string
	// metricsEndpoints serve the nodes' /metrics (default: endpoints):
	// leasehold's API URLs when its etcd port is under test.
	metricsEndpoints []string
	workload         string
	duration         time.Duration
	clients          int
	leases           int
	watchers         int
	watchNode        int
	watchFormat      string
	format           string
	rate             float64 // total writes per second, 0 = as fast as possible
	namespace        string
	jsonOut          string
	label            string
	cpuProfile       string
	// TLS: the workload's client configuration and the one /metrics is
	// read with; nil for plaintext.
	tls, metricsTLS *tls.Config
	// sharedConn: over HTTP/2, every client multiplexed on one connection
	// per node (one client-go process) instead of a connection of its own.
	sharedConn bool
	// http1: over TLS, HTTP/1.1 instead of HTTP/2 (client-go with
	// DISABLE_HTTP2 set).
	http1 bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compare" {
		os.Exit(compareMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "fanout" {
		os.Exit(fanoutMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "summary" {
		os.Exit(summaryMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "tls" {
		os.Exit(tlsCompareMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "history" {
		os.Exit(historyMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "cert" {
		os.Exit(certMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "machine" {
		os.Exit(machineMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "machine-echo" { // machine's other process
		if err := serveEchoProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "leasebench:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	var endpoints string
	var tlsFlags, metricsFlags tlsFiles
	fs := flag.NewFlagSet("leasebench", flag.ContinueOnError)
	fs.StringVar(&cfg.target, "target", "leasehold", "system under test: leasehold, or etcd (the transactions kube-apiserver would send), or leasehold-etcd (those transactions to leasehold's etcd port, --endpoints; its CPU read from --metrics-endpoints; reported as leasehold)")
	var metricsEndpoints string
	fs.StringVar(&metricsEndpoints, "metrics-endpoints", "", "URLs whose /metrics give the nodes' CPU and log writes (default --endpoints); leasehold's API URLs with --target leasehold-etcd")
	fs.StringVar(&endpoints, "endpoints", "http://127.0.0.1:7001,http://127.0.0.1:7002,http://127.0.0.1:7003", "API URLs of the nodes, comma separated; the first is assumed to be the leader (leasehold); etcd client URLs with --target etcd")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to measure")
	fs.IntVar(&cfg.clients, "clients", 64, "concurrent clients")
	fs.IntVar(&cfg.leases, "leases", 1000, "Leases to work on")
	fs.IntVar(&cfg.watchers, "watchers", 1000, "watchers (watch workload)")
	fs.IntVar(&cfg.watchNode, "watch-node", 1, "index of the endpoint the watchers use (watch workload)")
	fs.StringVar(&cfg.format, "format", "json", "request and response format of renew, get and mixed: json (client-go's default) or protobuf (what kube components and kubelet use)")
	fs.StringVar(&cfg.watchFormat, "watch-format", "protobuf", "watch stream format: protobuf (what kube-controller-manager, kube-scheduler and kubelet ask for) or json (client-go's own default)")
	fs.Float64Var(&cfg.rate, "rate", 0, "total write rate per second (0: unthrottled)")
	fs.StringVar(&cfg.namespace, "namespace", "leasebench", "namespace of the Leases")
	fs.StringVar(&cfg.jsonOut, "json", "", "also write the result as JSON to this file (- for stdout)")
	fs.StringVar(&cfg.label, "label", "", "label of this run in the report")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write the load generator's own CPU profile to this file (it shares the machine with the cluster)")
	fs.StringVar(&tlsFlags.caCert, "cacert", "", "TLS: the CA certificate (PEM) that verifies the nodes' serving certificates (leasehold's https:// endpoints, etcd's client URLs)")
	fs.StringVar(&tlsFlags.cert, "cert", "", "TLS: the client certificate (PEM) to present (leasehold: CN = user, O = groups)")
	fs.StringVar(&tlsFlags.key, "key", "", "TLS: the client certificate's private key (PEM)")
	fs.StringVar(&metricsFlags.cert, "metrics-cert", "", "TLS: the client certificate /metrics is read with (CPU and log-write counters); default --cert")
	fs.StringVar(&metricsFlags.key, "metrics-key", "", "TLS: its private key; default --key")
	fs.BoolVar(&cfg.sharedConn, "shared-connection", false, "TLS (HTTP/2): every client multiplexed on one connection per node, as the goroutines of one client-go process are; by default each client has a connection of its own to each node it talks to, as separate processes (kubelets) have and as the plaintext runs' HTTP/1.1 pool gives")
	fs.BoolVar(&cfg.http1, "http1", false, "TLS: HTTP/1.1 instead of HTTP/2 (as client-go with DISABLE_HTTP2 set), to tell what TLS costs from what HTTP/2 does")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: leasebench [flags] renew|get|get0|watch|mixed\n       leasebench compare RESULT.json...\n       leasebench fanout RESULT.json...\n       leasebench summary RESULT.json...\n       leasebench tls RESULT.json...\n       leasebench history [--out FILE] [--date D] [--commit C] [--profile P] RESULT.json...\n       leasebench machine [--dir DIR] [--n N]\n       leasebench cert --ca-cert CA.crt --ca-key CA.key --cn NAME --out PREFIX")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	cfg.workload = fs.Arg(0)
	if cfg.target != "leasehold" && !flagSet(fs, "endpoints") {
		endpoints = "http://127.0.0.1:2379" // etcd's own default
	}
	cfg.endpoints = strings.Split(endpoints, ",")
	if metricsEndpoints != "" {
		cfg.metricsEndpoints = strings.Split(metricsEndpoints, ",")
	}
	var err error
	if cfg.tls, err = tlsFlags.load(); err == nil {
		if metricsFlags.cert == "" && metricsFlags.key == "" {
			metricsFlags.cert, metricsFlags.key = tlsFlags.cert, tlsFlags.key
		}
		metricsFlags.caCert = tlsFlags.caCert
		cfg.metricsTLS, err = metricsFlags.load()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "leasebench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if cfg.jsonOut == "-" {
			fmt.Println(string(b))
		} else if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "leasebench:", err)
			os.Exit(1)
		}
	}
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Result is one run's figures; latencies in milliseconds.
type Result struct {
	Target      string             `json:"target"`
	Label       string             `json:"label,omitempty"`
	Workload    string             `json:"workload"`
	Clients     int                `json:"clients"`
	Leases      int                `json:"leases"`
	Watchers    int                `json:"watchers,omitempty"`
	WatchFormat string             `json:"watchFormat,omitempty"`
	Seconds     float64            `json:"seconds"`
	Ops         int64              `json:"ops"`
	OpsPerSec   float64            `json:"opsPerSec"`
	Conflicts   int64              `json:"conflicts"`
	Errors      int64              `json:"errors"`
	FirstErr    string             `json:"firstError,omitempty"`
	Latency     Percentiles        `json:"latencyMs"`
	Lag         *Percentiles       `json:"watchLagMs,omitempty"`
	LagAfterAck *Percentiles       `json:"watchLagAfterAckMs,omitempty"`
	Events      int64              `json:"watchEvents,omitempty"`
	ByOp        map[string]float64 `json:"opsPerSecByKind,omitempty"`
	// CPU time the nodes (their process_cpu_seconds_total) and the load
	// generator used while measuring; 0 when it could not be read.
	ServerCPUSeconds float64 `json:"serverCpuSeconds,omitempty"`
	ClientCPUSeconds float64 `json:"clientCpuSeconds,omitempty"`
	// LogWrites counts the durable log writes of the Nodes nodes while
	// measuring (logWriteMetric); 0 when it could not be read.
	LogWrites float64 `json:"logWrites,omitempty"`
	Nodes     int     `json:"nodes,omitempty"`
	// TLS: the run was over TLS with a client certificate; Protocol is
	// what the responses came in (leasehold: HTTP/1.1 or HTTP/2.0 as
	// negotiated; etcd: gRPC), Connections how the clients shared them.
	TLS         bool   `json:"tls,omitempty"`
	Protocol    string `json:"protocol,omitempty"`
	Connections string `json:"connections,omitempty"`
}

// writesPerLogWrite is the average number of writes (renewals) a node's
// log write carried: every write is an entry in each node's log. 0 when
// unknown or when the run wrote nothing.
func (r *Result) writesPerLogWrite() float64 {
	writes := r.ByOp["renew"] * r.Seconds
	if r.LogWrites <= 0 || writes < 1 {
		return 0
	}
	return writes * float64(r.Nodes) / r.LogWrites
}

// Percentiles of a latency distribution, in milliseconds.
type Percentiles struct {
	P50, P90, P99, P999, Max float64
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{
		P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max()),
	}
}

func (r *Result) print(w io.Writer) {
	fmt.Fprintf(w, "%-9s %-8s %-16s clients=%-4d leases=%-6d ops/s=%-9.0f p50=%.2fms p90=%.2fms p99=%.2fms p99.9=%.2fms max=%.2fms conflicts=%d errors=%d\n",
		r.Target, r.Workload, r.Label, r.Clients, r.Leases, r.OpsPerSec, r.Latency.P50, r.Latency.P90, r.Latency.P99, r.Latency.P999, r.Latency.Max, r.Conflicts, r.Errors)
	if r.FirstErr != "" {
		fmt.Fprintf(w, "          first error: %s\n", r.FirstErr)
	}
	if r.TLS {
		fmt.Fprintf(w, "          over TLS with a client certificate: %s, %s\n", r.Protocol, r.Connections)
	}
	if r.ServerCPUSeconds > 0 || r.ClientCPUSeconds > 0 {
		fmt.Fprintf(w, "          CPU per operation: nodes %.0fµs, load generator %.0fµs (nodes %.2f cores)",
			cpuPerOp(r.ServerCPUSeconds, r.Ops), cpuPerOp(r.ClientCPUSeconds, r.Ops), r.ServerCPUSeconds/r.Seconds)
		if e := r.writesPerLogWrite(); e > 0 {
			fmt.Fprintf(w, "; %.1f writes per log write", e)
		}
		fmt.Fprintln(w)
	}
	if r.Lag != nil {
		fmt.Fprintf(w, "         watchers=%d (%s) events=%d lag p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms\n",
			r.Watchers, r.WatchFormat, r.Events, r.Lag.P50, r.Lag.P90, r.Lag.P99, r.Lag.Max)
		if a := r.LagAfterAck; a != nil {
			fmt.Fprintf(w, "         of which after the write's response: p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms\n", a.P50, a.P90, a.P99, a.Max)
		}
	}
}

// bench holds the shared state of one run.
type bench struct {
	cfg    config
	client *http.Client           // setup's, the watchers' list's, and the clients' when per is empty
	per    []*http.Client         // with TLS: each client's own, its own connections
	proto  atomic.Pointer[string] // the protocol of the first response
	codec  codec
	lat    *hdrhistogram.Histogram
	latMu  sync.Mutex
	ops    atomic.Int64
	conf   atomic.Int64
	errs   atomic.Int64
	kinds  sync.Map               // kind → *atomic.Int64
	first  atomic.Pointer[string] // the first error, to tell what the errors were
	acked  *ackRing               // watch workload: when each write's response arrived
	// CPU seconds the nodes and the load generator used while measuring,
	// and the nodes' durable log writes meanwhile.
	serverCPU, clientCPU, logWrites float64
}

// failed counts an error and keeps the first one's text for the report.
func (b *bench) failed(err error) {
	b.errs.Add(1)
	msg := err.Error()
	b.first.CompareAndSwap(nil, &msg)
}

func (b *bench) url(node int, name string) string {
	u := fmt.Sprintf("%s/apis/coordination.k8s.io/v1/namespaces/%s/leases", b.cfg.endpoints[node%len(b.cfg.endpoints)], b.cfg.namespace)
	if name != "" {
		u += "/" + name
	}
	return u
}

func (b *bench) record(kind string, d time.Duration) {
	b.ops.Add(1)
	v, _ := b.kinds.LoadOrStore(kind, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	b.latMu.Lock()
	_ = b.lat.RecordValue(d.Microseconds())
	b.latMu.Unlock()
}

// metricsURLs are the URLs whose /metrics give the nodes' counters.
func (c config) metricsURLs() []string {
	if len(c.metricsEndpoints) > 0 {
		return c.metricsEndpoints
	}
	return c.endpoints
}

// system is the system under test as reports name it.
func (c config) system() string {
	if c.target == "leasehold-etcd" {
		return "leasehold"
	}
	return c.target
}

func run(ctx context.Context, cfg config) (*Result, error) {
	switch cfg.target {
	case "etcd", "leasehold-etcd":
		return runEtcd(ctx, cfg)
	case "leasehold":
	default:
		return nil, fmt.Errorf("unknown --target %q (want leasehold, etcd or leasehold-etcd)", cfg.target)
	}
	// Plaintext, HTTP/1.1: one pool, which opens a connection for every
	// request in flight, so each client in effect has its own. Over
	// HTTP/2 one pool would multiplex every client on one connection per
	// node: with TLS, unless --shared-connection, each client gets a
	// transport of its own, so that TLS changes what a connection costs,
	// not how many there are.
	tr := newTransport(cfg.tls, 2*cfg.clients, cfg.http1)
	defer tr.CloseIdleConnections()
	cd, err := newCodec(cfg.format)
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, codec: cd, lat: hdrhistogram.New(1, 60_000_000, 3)}
	connections := "a pool of connections shared by the clients"
	switch {
	case cfg.tls != nil && !cfg.sharedConn:
		connections = "a connection per client and node"
		b.per = make([]*http.Client, cfg.clients)
		for c := range b.per {
			ptr := newTransport(cfg.tls, 2, cfg.http1)
			defer ptr.CloseIdleConnections()
			b.per[c] = &http.Client{Transport: ptr, Timeout: 30 * time.Second}
		}
	case cfg.tls != nil && cfg.http1:
		connections = "a pool of connections shared by the clients (HTTP/1.1: one per request in flight)"
	case cfg.tls != nil:
		connections = "every client multiplexed on one connection per node"
	}
	leases, err := b.setup(ctx)
	if err != nil {
		return nil, err
	}
	b.connect(ctx, leases)
	res := &Result{Target: cfg.target, Label: cfg.label, Workload: cfg.workload, Clients: cfg.clients, Leases: cfg.leases}
	if cfg.tls != nil {
		res.TLS, res.Connections = true, connections
	}

	var lag, lagAck *lagRecorder
	var watchWG sync.WaitGroup
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if cfg.workload == "watch" {
		lag, lagAck = &lagRecorder{}, &lagRecorder{}
		b.acked = &ackRing{}
		res.Watchers = cfg.watchers
		if err := b.startWatchers(wctx, &watchWG, lag, lagAck); err != nil {
			return nil, err
		}
	}

	elapsed := b.drive(ctx, func(ctx context.Context, c int, limiter <-chan time.Time) {
		b.client1(ctx, c, leases, limiter)
	})
	wcancel()
	watchWG.Wait()
	b.fill(res, elapsed)
	if p := b.proto.Load(); p != nil && cfg.tls != nil {
		res.Protocol = *p
	}
	if lag != nil {
		h, n := lag.merged()
		p := percentiles(h)
		res.Lag = &p
		hAck, _ := lagAck.merged()
		pAck := percentiles(hAck)
		res.LagAfterAck = &pAck
		res.Events = n
		res.WatchFormat = cfg.watchFormat
	}
	return res, nil
}

// drive runs the clients concurrently for the measured duration, paced
// together by --rate if set, and returns the seconds it took.
func (b *bench) drive(ctx context.Context, client func(ctx context.Context, c int, limiter <-chan time.Time)) float64 {
	var limiter <-chan time.Time
	if b.cfg.rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / b.cfg.rate))
		defer t.Stop()
		limiter = t.C
	}
	cpu := startCPUSpan(ctx, newCPUMeter(unique(b.cfg.metricsURLs()), b.cfg.system(), b.cfg.metricsTLS))
	mctx, mcancel := context.WithTimeout(ctx, b.cfg.duration)
	defer mcancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range b.cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(mctx, c, limiter)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	b.serverCPU, b.clientCPU, b.logWrites = cpu.end(ctx)
	return elapsed
}

// unique is xs without repeats, in order.
func unique(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// fill puts the counters and latencies of the run into res.
func (b *bench) fill(res *Result, elapsed float64) {
	res.Seconds = elapsed
	res.Ops = b.ops.Load()
	res.OpsPerSec = float64(res.Ops) / elapsed
	res.Conflicts = b.conf.Load()
	res.Errors = b.errs.Load()
	if msg := b.first.Load(); msg != nil {
		res.FirstErr = *msg
	}
	res.Latency = percentiles(b.lat)
	res.ServerCPUSeconds, res.ClientCPUSeconds = b.serverCPU, b.clientCPU
	res.LogWrites, res.Nodes = b.logWrites, len(unique(b.cfg.endpoints))
	res.ByOp = map[string]float64{}
	b.kinds.Range(func(k, v any) bool {
		res.ByOp[k.(string)] = float64(v.(*atomic.Int64).Load()) / elapsed
		return true
	})
}

// lease is a client's view of one Lease: its name and last resourceVersion.
type lease struct {
	name string
	obj  coordinationv1.Lease
}

// setup creates (or adopts) the Leases the run works on.
func (b *bench) setup(ctx context.Context) ([]*lease, error) {
	leases := make([]*lease, b.cfg.leases)
	errc := make(chan error, 16)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range leases {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			l := &lease{name: fmt.Sprintf("lease-%06d", i)}
			now := metav1.NowMicro()
			dur := int32(15)
			holder := fmt.Sprintf("holder-%d", i)
			l.obj = coordinationv1.Lease{
				TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: b.cfg.namespace},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now},
			}
			code, body, err := b.do(ctx, -1, http.MethodPost, b.url(i, ""), &l.obj)
			if err == nil && code == http.StatusConflict {
				code, body, err = b.do(ctx, -1, http.MethodGet, b.url(i, l.name), nil)
			}
			if err == nil && code/100 != 2 {
				err = fmt.Errorf("create %s: HTTP %d: %s", l.name, code, body)
			}
			if err == nil {
				err = b.codec.decode(body, &l.obj)
			}
			if err != nil {
				select {
				case errc <- err:
				default:
				}
				return
			}
			leases[i] = l
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	return leases, nil
}

// httpClient is client c's HTTP client (c < 0: the shared one).
func (b *bench) httpClient(c int) *http.Client {
	if c >= 0 && c < len(b.per) {
		return b.per[c]
	}
	return b.client
}

// connect opens each client's own connections (with TLS, unless
// --shared-connection) before the measured time, one GET on every node,
// as long-lived clients have theirs open: the measured time is the steady
// state, not the handshakes.
func (b *bench) connect(ctx context.Context, leases []*lease) {
	if len(b.per) == 0 || len(leases) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for c := range b.per {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			for n := range b.cfg.endpoints {
				_, _, _ = b.do(ctx, c, http.MethodGet, b.url(n, leases[c%len(leases)].name), nil)
			}
		}()
	}
	wg.Wait()
}

// do sends one request with client c's HTTP client (-1: the shared one).
func (b *bench) do(ctx context.Context, c int, method, url string, obj *coordinationv1.Lease) (int, []byte, error) {
	var body io.Reader
	if obj != nil {
		raw, err := b.codec.encode(obj)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", b.codec.mediaType)
	req.Header.Set("Accept", b.codec.mediaType)
	resp, err := b.httpClient(c).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if b.proto.Load() == nil {
		proto := resp.Proto
		b.proto.CompareAndSwap(nil, &proto)
	}
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// client1 is one client's loop until ctx ends.
func (b *bench) client1(ctx context.Context, c int, leases []*lease, limiter <-chan time.Time) {
	var own []*lease
	for i := c; i < len(leases); i += b.cfg.clients {
		own = append(own, leases[i])
	}
	rng := rand.New(rand.NewPCG(uint64(c), 7))
	node := c // spread clients over the nodes
	for i := 0; ctx.Err() == nil; i++ {
		if limiter != nil {
			select {
			case <-limiter:
			case <-ctx.Done():
				return
			}
		}
		switch kind := pickKind(b.cfg.workload, rng); kind {
		case "renew", "watch":
			if len(own) == 0 {
				return
			}
			b.renew(ctx, c, node, own[i%len(own)])
		case "get", "get0":
			// Followers only: the node after the first endpoint.
			n := 1 + rng.IntN(max(len(b.cfg.endpoints)-1, 1))
			url := b.url(n, leases[rng.IntN(len(leases))].name)
			if kind == "get0" {
				url += "?resourceVersion=0"
			}
			b.timed(ctx, c, "get", http.MethodGet, url)
		case "list":
			b.timed(ctx, c, "list", http.MethodGet, b.url(node, "")+"?limit=500")
		}
	}
}

// pickKind is the operation a client does next: the workload itself, or
// for mixed 90 % renew, 8 % get, 2 % list.
func pickKind(workload string, rng *rand.Rand) string {
	if workload != "mixed" {
		return workload
	}
	switch r := rng.IntN(100); {
	case r < 90:
		return "renew"
	case r < 98:
		return "get"
	default:
		return "list"
	}
}

func (b *bench) timed(ctx context.Context, c int, kind, method, url string) {
	start := time.Now()
	code, _, err := b.do(ctx, c, method, url, nil)
	if err != nil || code != http.StatusOK {
		if ctx.Err() == nil {
			b.errs.Add(1)
		}
		return
	}
	b.record(kind, time.Since(start))
}

// renew is one leader-election renewal by client c: PUT with the last
// resourceVersion.
func (b *bench) renew(ctx context.Context, c, node int, l *lease) {
	now := metav1.NowMicro()
	l.obj.Spec.RenewTime = &now
	start := time.Now()
	code, body, err := b.do(ctx, c, http.MethodPut, b.url(node, l.name), &l.obj)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			b.errs.Add(1)
		}
	case code == http.StatusOK:
		acked := time.Now()
		b.record("renew", acked.Sub(start))
		if err := b.codec.decode(body, &l.obj); err != nil {
			b.errs.Add(1)
		} else if b.acked != nil {
			if rv, ok := parseRV([]byte(l.obj.ResourceVersion)); ok {
				b.acked.store(rv, acked)
			}
		}
	case code == http.StatusConflict:
		b.conf.Add(1)
		if code, body, err := b.do(ctx, c, http.MethodGet, b.url(node, l.name), nil); err == nil && code == http.StatusOK {
			_ = b.codec.decode(body, &l.obj)
		}
	default:
		b.errs.Add(1)
	}
}
