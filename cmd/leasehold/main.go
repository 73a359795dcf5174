// Command leasehold runs one node of a leasehold cluster: a Raft-replicated
// store serving the Kubernetes coordination.k8s.io API.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/auth/rbac"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/fsm/state"
	"github.com/leasehold/leasehold/httpapi"
	"github.com/leasehold/leasehold/internal/quietlog"
	"github.com/leasehold/leasehold/policy"
	"github.com/leasehold/leasehold/registry"
	"github.com/leasehold/leasehold/transport"
)

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		keepHeapHeadroom(defaultGCPercent, minHeapHeadroom)
	}
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// shutdownTimeout bounds a graceful stop; docs/cli.md promises exit within 10 s.
const shutdownTimeout = 8 * time.Second

// rbacResync is how often the leader reconciles the bootstrap and
// aggregated ClusterRoles (a new leader does at once).
const rbacResync = 5 * time.Second

func run(args, env []string, stdout, stderr io.Writer) int {
	cfg, err := ParseConfig(args, env, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "leasehold: "+err.Error())
		return 2
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name:   "leasehold",
		Level:  hclog.LevelFromString(cfg.LogLevel),
		Output: stderr,
	}).With("name", cfg.Name)
	// klog, through which k8s.io/apiserver's request parsing reports a bad
	// selector, writes through the node's logger: one line per event. What
	// it says is about clients' requests, so at debug.
	klogger := logger.Named("apiserver")
	klog.SetLogger(funcr.New(func(prefix, args string) { klogger.Debug(strings.TrimSpace(prefix + " " + args)) }, funcr.Options{}))
	if err := serve(cfg, logger); err != nil {
		logger.Error("exiting", "error", err)
		return 1
	}
	return 0
}

func serve(cfg Config, logger hclog.Logger) error {
	rewrite, err := testPeerDialRewrite(os.Getenv(testPeerDialEnv), cfg.PeerAddr)
	if err != nil {
		return err
	}
	authn, err := auth.NewAuthenticator(auth.Config{
		ClientCAFile:           cfg.ClientCAFile,
		TokenAuthFile:          cfg.TokenAuthFile,
		ServiceAccountKeyFiles: cfg.ServiceAccountKeyFiles,
		ServiceAccountIssuers:  cfg.ServiceAccountIssuers,
		APIAudiences:           cfg.APIAudiences,
		Anonymous:              cfg.AnonymousAuth,
		PeerCAFile:             peerCAFile(cfg),
		PeerAllowedCN:          cfg.PeerCertAllowedCN,
	})
	if err != nil {
		return err
	}
	var cert *servingCert
	if cfg.TLSCertFile != "" {
		if cert, err = newServingCert(cfg.TLSCertFile, cfg.TLSPrivateKeyFile, logger.Named("tls")); err != nil {
			return err
		}
	}
	var peerTLS *transport.PeerTLS
	if cfg.PeerCertFile != "" {
		peerTLS = &transport.PeerTLS{CertFile: cfg.PeerCertFile, KeyFile: cfg.PeerKeyFile, TrustedCAFile: cfg.PeerTrustedCAFile, AllowedCN: cfg.PeerCertAllowedCN}
	}
	// What strangers send the three ports (bad handshakes, garbage
	// frames) is counted whole and logged a few lines a second per port.
	garbage := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leasehold_connection_errors_total",
		Help: "Failed handshakes, garbage and broken connections on each port (api, peer, etcd); the log shows a few a second.",
	}, []string{"port"})
	garbageLog := func(port string) *quietlog.Limiter {
		return quietlog.New(logger.Named(port), garbage.WithLabelValues(port))
	}
	// gRPC logs through one process-wide logger: its warnings and errors
	// are the etcd port's handshakes and broken connections.
	etcdLog := garbageLog("etcd").Writer()
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, etcdLog, etcdLog))
	mux, err := transport.Listen(transport.Config{Addr: cfg.PeerAddr, DialRewrite: rewrite, TLS: peerTLS,
		Logger: logger.Named("transport"), GarbageLog: garbageLog("peer")})
	if err != nil {
		return err
	}
	if !(auth.Config{ClientCAFile: cfg.ClientCAFile, TokenAuthFile: cfg.TokenAuthFile, ServiceAccountKeyFiles: cfg.ServiceAccountKeyFiles}).Configured() {
		logger.Warn("no authenticator is configured: anyone who reaches the API port may do anything (see --client-ca-file, --token-auth-file, --service-account-key-file)")
	}
	if peerTLS == nil {
		logger.Warn("the peer port is plain TCP: anyone who reaches it can act as a member (see --peer-cert-file)")
	}
	peers := make([]cluster.Peer, len(cfg.InitialCluster))
	for i, p := range cfg.InitialCluster {
		peers[i] = cluster.Peer{Name: p.Name, Addr: p.Addr}
	}
	reg := prometheus.NewRegistry()
	h2Errors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "leasehold_api_http2_errors_total",
		Help: "HTTP/2 connection and stream errors on the API port, by Go's name for them (too_many_early_resets, ...).",
	}, []string{"type"})
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), garbage, h2Errors)
	// Raft's and boltdb's own timings (commit, FSM apply, fsync) go to a
	// process-wide go-metrics sink; this process runs one node, so it is ours.
	if err := cluster.RegisterRaftMetrics(reg); err != nil {
		mux.Close()
		return fmt.Errorf("register raft metrics: %w", err)
	}
	node, err := cluster.New(cluster.Config{
		Name:              cfg.Name,
		DataDir:           cfg.DataDir,
		InitialCluster:    peers,
		Join:              cfg.Join != "",
		APIURL:            apiURL(cfg),
		Version:           releaseVersion(),
		SnapshotThreshold: cfg.SnapshotThreshold,
		SnapshotInterval:  cfg.SnapshotInterval,
		TrailingLogs:      cfg.TrailingLogs,
		HeartbeatTimeout:  cfg.HeartbeatTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		DiskStallTimeout:  cfg.DiskStallTimeout,
		QuotaBackendBytes: cfg.QuotaBackendBytes,
		MaxRequestBytes:   cfg.MaxRequestBytes,
		State:             state.Config{HistoryEvents: int(cfg.WatchHistory), HistoryAge: cfg.WatchHistoryAge},
		Logger:            logger,
		Registerer:        reg,
	}, mux)
	if err != nil {
		mux.Close()
		return err
	}

	store := registry.New(node)
	store.WriteTimeout = cfg.WriteTimeout
	// RBAC reads the node's own state on every request; its escalation
	// check judges writes of roles and bindings; on the leader, its
	// controller keeps the bootstrap and aggregated roles current.
	authz, err := auth.NewAuthorizer(cfg.AuthorizationMode, rbac.New(store.RBACPolicy))
	if err != nil {
		node.Close()
		return err
	}
	store.Admit = policy.Admit(authz, store)
	policyController := policy.NewController(store, node, rbacResync, logger.Named("rbac"))
	// The coordinated leader election controller acts only while this node
	// is the Raft leader; it writes through the store like any client.
	elections := election.New(election.Config{
		Store:         store,
		Node:          node,
		PingWindow:    cfg.ElectionPingWindow,
		Resync:        cfg.ElectionResync,
		LeaseDuration: cfg.ElectionLeaseDuration,
		GCAge:         cfg.CandidateGCAge,
		Logger:        logger.Named("election"),
		Registerer:    reg,
	})
	api := httpapi.New(httpapi.Config{
		Node:         node,
		Store:        store,
		Logger:       logger.Named("api"),
		Registerer:   reg,
		Gatherer:     reg,
		WriteTimeout: cfg.WriteTimeout,
		Elections:    func() any { return elections.Status() },

		Authenticator:               authn,
		Authorizer:                  authz,
		MaxRequestsInflight:         cfg.MaxRequestsInflight,
		MaxMutatingRequestsInflight: cfg.MaxMutatingRequestsInflight,
		RequestTimeout:              cfg.RequestTimeout,
		MaxRequestBytes:             int64(cfg.MaxRequestBytes),
	})

	// Cancelling baseCtx ends every request still running, watches
	// included, so that shutdown does not wait for them; it also stops the
	// election controller.
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	electionDone := make(chan struct{})
	go func() {
		defer close(electionDone)
		elections.Run(baseCtx)
	}()
	go policyController.Run(baseCtx)
	srv := apiServer(api.Handler(), cert, authn.ClientCAs(), cfg.RequestTimeout, garbageLog("api"), h2Errors)
	srv.BaseContext = func(net.Listener) context.Context { return baseCtx }
	ln, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		node.Close()
		return fmt.Errorf("listen on API address %s: %w", cfg.APIAddr, err)
	}
	serveErr := make(chan error, 1)
	go func() {
		if cert != nil {
			serveErr <- srv.ServeTLS(ln, "", "")
		} else {
			serveErr <- srv.Serve(ln)
		}
	}()
	logger.Info("serving", "api", cfg.APIAddr, "peer", cfg.PeerAddr, "data", cfg.DataDir)

	var debugSrv *http.Server
	if cfg.DebugAddr != "" {
		debugSrv = startDebug(cfg.DebugAddr, logger)
	}
	var etcdSrv *grpc.Server
	if cfg.EtcdAddr != "" {
		if etcdSrv, err = startEtcd(baseCtx, cfg, node, cert, authn, authz, logger.Named("etcd")); err != nil {
			cancelRequests()
			_ = srv.Close()
			node.Close()
			return err
		}
	}
	if cfg.Join != "" {
		go join(baseCtx, cfg, node, logger)
	}

	var exitErr error
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-sigs:
		logger.Info("shutting down", "signal", sig.String())
	case err := <-serveErr:
		logger.Error("API server failed", "error", err)
	case <-node.Removed():
		exitErr = fmt.Errorf("stopped: %s; delete %s before this node joins again", node.RemovedReason(), cfg.DataDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	cancelRequests()
	if etcdSrv != nil {
		// Watch streams end only when their clients go: do not wait.
		etcdSrv.Stop()
	}
	_ = srv.Shutdown(ctx)
	if debugSrv != nil {
		_ = debugSrv.Shutdown(ctx)
	}
	select {
	case <-electionDone:
	case <-ctx.Done():
	}
	if err := node.Close(); exitErr == nil {
		exitErr = err
	}
	return exitErr
}

// apiURL is the URL other members and tools reach this node's API at.
func apiURL(cfg Config) string {
	if cfg.TLSCertFile != "" {
		return "https://" + cfg.APIAddr
	}
	return "http://" + cfg.APIAddr
}

// releaseVersion names the build: its VCS revision (12 digits, "+dirty"
// if the tree was modified), as the members tell each other.
func releaseVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value
		case "vcs.modified":
			dirty = st.Value == "true"
		}
	}
	if rev == "" {
		return bi.Main.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// testPeerDialEnv names a hidden, TEST-ONLY environment variable: it is not
// part of the CLI contract, not documented in CLI.md, and must never be set
// in production. The chaos suite (test/chaos) uses it to route every peer
// dial of a node, Raft and internal RPC alike, through a fault-injecting
// proxy, one proxy per directed edge. Its value is a comma-separated list of
//
//	peerAddr=proxyAddr            (rewrite dials to peerAddr), or
//	fromAddr>toAddr=proxyAddr     (the same, only on the node whose
//	                               --peer-addr is fromAddr)
//
// config.go ignores unknown LEASEHOLD_* variables, so it is read here.
const testPeerDialEnv = "LEASEHOLD_TEST_PEER_DIAL"

// testPeerDialRewrite parses the value of testPeerDialEnv for the node whose
// peer address is self; it returns nil when v is empty.
func testPeerDialRewrite(v, self string) (func(string) string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, proxy, ok := strings.Cut(item, "=")
		if !ok || key == "" || proxy == "" {
			return nil, fmt.Errorf("%s: bad entry %q, want peerAddr=proxyAddr or from>to=proxyAddr", testPeerDialEnv, item)
		}
		if from, to, edge := strings.Cut(key, ">"); edge {
			if from != self {
				continue
			}
			key = to
		}
		m[key] = proxy
	}
	return func(addr string) string {
		if p, ok := m[addr]; ok {
			return p
		}
		return addr
	}, nil
}

// join asks the member at cfg.Join to add this node, until it succeeds or
// the node already belongs to a cluster with a leader.
func join(ctx context.Context, cfg Config, node *cluster.Node, logger hclog.Logger) {
	body, _ := json.Marshal(map[string]string{"name": cfg.Name, "peerAddr": cfg.PeerAddr, "apiURL": apiURL(cfg)})
	client, err := joinClient(cfg)
	if err != nil {
		logger.Error("cannot join the cluster", "error", err)
		return
	}
	url := strings.TrimSuffix(cfg.Join, "/") + "/cluster/join"
	for attempt := 1; attempt <= 60; attempt++ {
		if name, _ := node.Leader(); name != "" {
			return
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				logger.Info("joined the cluster", "via", cfg.Join)
				return
			}
			err = fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
		}
		logger.Warn("join failed, retrying", "via", cfg.Join, "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	logger.Error("giving up joining the cluster", "via", cfg.Join)
}

// peerCAFile is the peer CA whose client certificates the API accepts for
// joining: only with TLS on both ports.
func peerCAFile(cfg Config) string {
	if cfg.TLSCertFile == "" {
		return ""
	}
	return cfg.PeerTrustedCAFile
}

// joinClient is the HTTP client --join asks with. With peer TLS it
// presents the node's peer certificate, which the members' API accepts
// for joining and nothing else, and trusts the system's CAs, the peer CA
// and the client CA to verify the member's serving certificate.
func joinClient(cfg Config) (*http.Client, error) {
	if cfg.PeerCertFile == "" {
		return &http.Client{Timeout: 30 * time.Second}, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.PeerCertFile, cfg.PeerKeyFile)
	if err != nil {
		return nil, fmt.Errorf("peer certificate: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	for _, f := range []string{cfg.PeerTrustedCAFile, cfg.ClientCAFile} {
		if pem, err := os.ReadFile(f); err == nil {
			roots.AppendCertsFromPEM(pem)
		}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

func startDebug(addr string, logger hclog.Logger) *http.Server {
	m := http.NewServeMux()
	m.HandleFunc("/debug/pprof/", pprof.Index)
	m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	m.HandleFunc("/debug/pprof/profile", pprof.Profile)
	m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: m, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("debug server failed", "error", err)
		}
	}()
	return srv
}
