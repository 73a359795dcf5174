package main

// Command-line and environment parsing for leasehold. The contract is
// docs/cli.md: every flag --foo-bar may also come from the environment
// variable LEASEHOLD_FOO_BAR, the command line wins, and any other LEASEHOLD_*
// variable is ignored. Errors are single lines naming the flag or the variable
// the bad value came from; main prints them to stderr and exits 2.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm/state"
)

// Peer is one founding member from --initial-cluster.
type Peer struct{ Name, Addr string }

// Config is the validated result of flags and environment.
type Config struct {
	Name, DataDir, APIAddr, PeerAddr string
	InitialCluster                   []Peer // default: just {Name, PeerAddr}
	Join                             string // API URL, optional
	LogLevel                         string // trace|debug|info|warn|error

	TLSCertFile, TLSPrivateKeyFile, ClientCAFile, TokenAuthFile string
	ServiceAccountKeyFiles, ServiceAccountIssuers, APIAudiences []string
	AnonymousAuth                                               bool
	AuthorizationMode                                           string
	MaxRequestsInflight, MaxMutatingRequestsInflight            int
	RequestTimeout                                              time.Duration // --request-timeout: a request that is not a watch is answered within it
	MaxRequestBytes                                             uint64        // --max-request-bytes: the largest object one write may store
	QuotaBackendBytes                                           uint64        // --quota-backend-bytes: the most stored data the cluster keeps
	// Mutual TLS on the peer port (all three files, or none).
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile, PeerCertAllowedCN string

	SnapshotThreshold uint64        // --snapshot-threshold: log entries between automatic snapshots
	SnapshotInterval  time.Duration // --snapshot-interval: how often raft checks the threshold
	TrailingLogs      uint64        // --trailing-logs: log entries kept after a snapshot
	HeartbeatTimeout  time.Duration // --raft-heartbeat-timeout (also the election timeout)
	WriteTimeout      time.Duration // --write-timeout: how long a write waits for a leader (503), then for its commit (504)
	DiskStallTimeout  time.Duration // --disk-stall-timeout: a leader whose write to raft.db takes longer steps down
	DebugAddr         string        // --debug-addr HOST:PORT, "" = off: net/http/pprof
	EtcdAddr          string        // --etcd-addr HOST:PORT, "" = off: the etcd v3 API
	EtcdPrefix        string        // --etcd-prefix: kube-apiserver's --etcd-prefix
	WatchHistory      uint64        // --watch-history: events kept for watch resume
	WatchHistoryAge   time.Duration // --watch-history-age: how long an event stays resumable

	// Coordinated leader election (package election).
	ElectionPingWindow    time.Duration // --election-ping-window: how long a pinged candidate has to renew
	ElectionResync        time.Duration // --election-resync: period of the controller's rounds
	ElectionLeaseDuration time.Duration // --election-lease-duration: leaseDurationSeconds of elected Leases (whole seconds)
	CandidateGCAge        time.Duration // --candidate-gc-age: candidates not renewed for this long are deleted
}

// errHelp is returned by ParseConfig after it printed the help for --help/-h.
var errHelp = errors.New("help requested")

// cfgEnvPrefix is the prefix of the environment variables that mirror the flags.
const cfgEnvPrefix = "LEASEHOLD_"

// Defaults.
const (
	cfgDefaultName     = "node1"
	cfgDefaultAPIAddr  = "127.0.0.1:7001"
	cfgDefaultPeerAddr = "127.0.0.1:8001"
	cfgDefaultLogLevel = "info"
	// The Raft settings default to what cluster.Config does when unset.
	cfgDefaultSnapshotThreshold = cluster.DefaultSnapshotThreshold
	cfgDefaultSnapshotInterval  = cluster.DefaultSnapshotInterval
	cfgDefaultTrailingLogs      = cluster.DefaultTrailingLogs
	cfgDefaultHeartbeatTimeout  = cluster.DefaultHeartbeatTimeout
	cfgDefaultWriteTimeout      = cluster.DefaultWriteTimeout
	cfgDefaultDiskStallTimeout  = cluster.DefaultDiskStallTimeout
	// And the watch history's to what the state store does.
	cfgDefaultWatchHistory    = state.DefaultHistoryEvents
	cfgDefaultWatchHistoryAge = state.DefaultHistoryAge

	cfgDefaultElectionPingWindow    = 5 * time.Second
	cfgDefaultElectionResync        = 5 * time.Second
	cfgDefaultElectionLeaseDuration = 5 * time.Second
	cfgDefaultCandidateGCAge        = 30 * time.Minute
)

// cfgMinRaftDuration is the smallest timer hashicorp/raft accepts
// (raft.ValidateConfig rejects HeartbeatTimeout, ElectionTimeout and
// SnapshotInterval below 5ms); checking it here gives a better message.
const cfgMinRaftDuration = 5 * time.Millisecond

// cfgLogLevels are the accepted --log-level values, most verbose first.
var cfgLogLevels = []string{"trace", "debug", "info", "warn", "error"}

// cfgFlag describes one flag. All flags are parsed as strings and converted
// afterwards, so that a bad value is reported the same way whether it came
// from the command line or from the environment.
type cfgFlag struct {
	name  string // without dashes
	arg   string // placeholder shown in the help
	def   string // default as shown and used; "" for none
	usage string
	shown string // default as shown in the help when it differs from def
}

var cfgFlags = []cfgFlag{
	{name: "name", arg: "NAME", def: cfgDefaultName,
		usage: "node name, unique in the cluster (letters, digits, '.', '_', '-'; at most 63)"},
	{name: "data-dir", arg: "DIR", shown: "./data/<name>",
		usage: "directory for the Raft log, stable store and snapshots"},
	{name: "api-addr", arg: "HOST:PORT", def: cfgDefaultAPIAddr,
		usage: "listen address of the Kubernetes REST API (plain HTTP unless TLS flags are given)"},
	{name: "peer-addr", arg: "HOST:PORT", def: cfgDefaultPeerAddr,
		usage: "listen and advertised address for Raft and node-to-node traffic"},
	{name: "initial-cluster", arg: "LIST", shown: "<name>=<peer-addr>, i.e. this node alone",
		usage: "founding members as name=host:port,...; must contain this node with its --peer-addr. " +
			"A node whose data dir holds no Raft state bootstraps with exactly this configuration; " +
			"ignored once state exists. Give every member the same value"},
	{name: "join", arg: "API-URL",
		usage: "http(s) URL of a running member's API; asks it to add this node as a voter"},
	{name: "log-level", arg: "LEVEL", def: cfgDefaultLogLevel,
		usage: "log level: " + strings.Join(cfgLogLevels, "|")},
	{name: "tls-cert-file", arg: "FILE",
		usage: "PEM certificate for serving the API over HTTPS (needs --tls-private-key-file)"},
	{name: "tls-private-key-file", arg: "FILE",
		usage: "PEM private key matching --tls-cert-file"},
	{name: "client-ca-file", arg: "FILE",
		usage: "PEM CA bundle; clients presenting a certificate signed by it are authenticated (needs TLS)"},
	{name: "token-auth-file", arg: "FILE",
		usage: "CSV file of static bearer tokens: token,user,uid[,\"group1,group2\"]"},
	{name: "service-account-key-file", arg: "FILE[,FILE]",
		usage: "PEM public keys (RSA, ECDSA; private keys give their public half) that verify service-account JWTs; needs --service-account-issuer"},
	{name: "service-account-issuer", arg: "URL[,URL]",
		usage: "accepted iss claims of service-account JWTs"},
	{name: "api-audiences", arg: "LIST", shown: "the first --service-account-issuer",
		usage: "accepted aud claims of service-account JWTs, comma-separated"},
	{name: "anonymous-auth", arg: "BOOL", def: "false",
		usage: "let requests without credentials in as system:anonymous; a request with bad credentials gets 401 either way. /livez, /readyz and /healthz never need credentials"},
	{name: "authorization-mode", arg: "MODE", shown: "RBAC when an authenticator is configured, else AlwaysAllow",
		usage: "RBAC: Roles, ClusterRoles and their bindings, objects of the store, decide; AlwaysAllow: every authenticated request is allowed. Members of system:masters may always do everything"},
	{name: "max-requests-inflight", arg: "N", def: "400",
		usage: "read-only requests (get, list) under way at once; beyond it 429 with Retry-After: 1. Watches and system:masters are not counted; 0 is no limit"},
	{name: "max-mutating-requests-inflight", arg: "N", def: "200",
		usage: "other requests under way at once; beyond it 429; 0 is no limit"},
	{name: "request-timeout", arg: "DURATION", def: "1m0s",
		usage: "a request that is not a watch is answered within this, or gets a 504 timeout Status; an answer that cannot be written for this long is abandoned (> 0)"},
	{name: "max-request-bytes", arg: "N", def: "1572864",
		usage: "the largest object, or etcd transaction, one write may store, and how far a JSON patch may grow a document (413, 422 or etcd's \"request is too large\" beyond it)"},
	{name: "quota-backend-bytes", arg: "N", def: "2147483648",
		usage: "the most stored data (objects' keys and encodings) the cluster keeps: a write that would pass it raises the NOSPACE alarm, and while it is on, writes that grow the stored data get 507 (etcd: \"database space exceeded\"); renewals and deletes still work. Clear it with leaseholdctl alarm disarm. 0 is no quota"},
	{name: "peer-cert-file", arg: "FILE",
		usage: "PEM certificate (serverAuth and clientAuth) for mutual TLS on the peer port; needs --peer-key-file and --peer-trusted-ca-file"},
	{name: "peer-key-file", arg: "FILE",
		usage: "PEM private key matching --peer-cert-file"},
	{name: "peer-trusted-ca-file", arg: "FILE",
		usage: "PEM CA bundle: a peer connection without a certificate signed by it is closed before anything it sent is read"},
	{name: "peer-cert-allowed-cn", arg: "NAME",
		usage: "if set, a connecting peer's certificate must also have this common name"},
	{name: "snapshot-threshold", arg: "N", def: strconv.Itoa(cfgDefaultSnapshotThreshold),
		usage: "log entries between automatic Raft snapshots (> 0)"},
	{name: "snapshot-interval", arg: "DURATION", def: cfgDefaultSnapshotInterval.String(),
		usage: "how often Raft checks --snapshot-threshold (>= 5ms)"},
	{name: "trailing-logs", arg: "N", def: strconv.Itoa(cfgDefaultTrailingLogs),
		usage: "log entries kept after a snapshot, for slow followers"},
	{name: "raft-heartbeat-timeout", arg: "DURATION", def: cfgDefaultHeartbeatTimeout.String(),
		usage: "Raft heartbeat timeout, also used as the election timeout (>= 5ms)"},
	{name: "write-timeout", arg: "DURATION", def: cfgDefaultWriteTimeout.String(),
		usage: "how long a write waits for a leader (then 503) and then for its commit (then 504, outcome unknown) (> 0)"},
	{name: "disk-stall-timeout", arg: "DURATION", def: cfgDefaultDiskStallTimeout.String(),
		usage: "a write to raft.db that takes longer fails: a leader steps down and the node reports not ready until the write ends (> 0)"},
	{name: "debug-addr", arg: "HOST:PORT",
		usage: "listen address for net/http/pprof; off when empty"},
	{name: "etcd-addr", arg: "HOST:PORT",
		usage: "serve the etcd v3 gRPC API on this address, for kube-apiserver's --etcd-servers-overrides; off when empty. TLS with the API's certificate when the API has one, and then a client certificate signed by --client-ca-file is required, of a user allowed everything on leases and leasecandidates"},
	{name: "etcd-prefix", arg: "PREFIX", def: "/registry",
		usage: "kube-apiserver's --etcd-prefix: PREFIX/leases/<ns>/<name> and PREFIX/leasecandidates/<ns>/<name> are the REST API's objects; other keys are stored as given"},
	{name: "watch-history", arg: "N", def: strconv.Itoa(cfgDefaultWatchHistory),
		usage: "events kept for watches to resume from (> 0)"},
	{name: "watch-history-age", arg: "DURATION", def: cfgDefaultWatchHistoryAge.String(),
		usage: "how long an event stays resumable, by the leader's append time (> 0)"},
	{name: "election-ping-window", arg: "DURATION", def: cfgDefaultElectionPingWindow.String(),
		usage: "coordinated leader election: how long a pinged LeaseCandidate has to renew before it is not eligible (> 0)"},
	{name: "election-resync", arg: "DURATION", def: cfgDefaultElectionResync.String(),
		usage: "coordinated leader election: period of the controller's rounds on the Raft leader (> 0)"},
	{name: "election-lease-duration", arg: "DURATION", def: cfgDefaultElectionLeaseDuration.String(),
		usage: "coordinated leader election: leaseDurationSeconds written into elected Leases (whole seconds, >= 1s)"},
	{name: "candidate-gc-age", arg: "DURATION", def: cfgDefaultCandidateGCAge.String(),
		usage: "LeaseCandidates not renewed for this long are ignored by elections and deleted (> 0)"},
}

// cfgEnvName returns the environment variable that mirrors flag name.
func cfgEnvName(flagName string) string {
	return cfgEnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// cfgSource says where a value came from, for error messages.
type cfgSource struct {
	value string
	label string // "--api-addr" or "LEASEHOLD_API_ADDR"
	set   bool   // given explicitly (flag or env), not the default
}

func (s cfgSource) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid %s %q: %s", s.label, s.value, fmt.Sprintf(format, args...))
}

// ParseConfig parses args (without the program name) and env ("KEY=VALUE"
// strings as from os.Environ()). It returns errHelp after printing the help
// to stdout for --help/-h.
func ParseConfig(args, env []string, stdout io.Writer) (Config, error) {
	fs := flag.NewFlagSet("leasehold", flag.ContinueOnError)
	// The flag package prints errors and the usage to Output; errors are
	// returned to main instead, and the help is printed below on request.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	vals := make(map[string]*string, len(cfgFlags))
	for _, s := range cfgFlags {
		vals[s.name] = fs.String(s.name, s.def, s.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			cfgPrintHelp(stdout)
			return Config{}, errHelp
		}
		return Config{}, cfgFlagError(err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q (flags are --name value or --name=value)", fs.Arg(0))
	}

	onCmdLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCmdLine[f.Name] = true })
	envMap := cfgParseEnv(env)

	src := make(map[string]cfgSource, len(cfgFlags))
	for _, s := range cfgFlags {
		switch {
		case onCmdLine[s.name]:
			src[s.name] = cfgSource{value: *vals[s.name], label: "--" + s.name, set: true}
		default:
			if v, ok := envMap[cfgEnvName(s.name)]; ok && v != "" {
				src[s.name] = cfgSource{value: v, label: cfgEnvName(s.name), set: true}
			} else {
				src[s.name] = cfgSource{value: s.def, label: "--" + s.name}
			}
		}
	}
	return cfgBuild(src)
}

// cfgParseEnv turns KEY=VALUE strings into a map of the LEASEHOLD_* entries.
// Like os.Getenv, the first occurrence of a key wins.
func cfgParseEnv(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, cfgEnvPrefix) {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

// cfgFlagError rewrites the flag package's messages, which spell flags with a
// single dash, into the --flag form used everywhere else.
func cfgFlagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s (see --help)", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag --%s needs a value", name)
	}
	return errors.New(msg)
}

var cfgNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

func cfgBuild(src map[string]cfgSource) (Config, error) {
	var c Config
	var err error

	// name
	name := src["name"]
	if !cfgNameRE.MatchString(name.value) {
		return c, name.errorf("must be 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit")
	}
	c.Name = name.value

	// data-dir, defaulting to ./data/<final name>
	if dd := src["data-dir"]; dd.set {
		if strings.TrimSpace(dd.value) == "" {
			return c, dd.errorf("must not be empty")
		}
		c.DataDir = dd.value
	} else {
		c.DataDir = "./data/" + c.Name
	}

	// addresses
	if c.APIAddr, err = cfgCheckAddr(src["api-addr"]); err != nil {
		return c, err
	}
	if c.PeerAddr, err = cfgCheckAddr(src["peer-addr"]); err != nil {
		return c, err
	}
	if dbg := src["debug-addr"]; dbg.value != "" {
		if c.DebugAddr, err = cfgCheckAddr(dbg); err != nil {
			return c, err
		}
	}
	if ea := src["etcd-addr"]; ea.value != "" {
		if c.EtcdAddr, err = cfgCheckAddr(ea); err != nil {
			return c, err
		}
	}
	// kube-apiserver joins the prefix and "leases" as paths: a trailing
	// slash makes no difference there.
	c.EtcdPrefix = strings.TrimRight(strings.TrimSpace(src["etcd-prefix"].value), "/")

	// initial cluster
	if ic := src["initial-cluster"]; ic.value != "" {
		if c.InitialCluster, err = cfgParseInitialCluster(ic, c.Name, c.PeerAddr, src["name"], src["peer-addr"]); err != nil {
			return c, err
		}
	} else {
		c.InitialCluster = []Peer{{Name: c.Name, Addr: c.PeerAddr}}
	}

	// join
	if j := src["join"]; j.value != "" {
		if c.Join, err = cfgCheckJoin(j); err != nil {
			return c, err
		}
	}

	// log level
	ll := src["log-level"]
	lvl := strings.ToLower(strings.TrimSpace(ll.value))
	valid := false
	for _, l := range cfgLogLevels {
		if lvl == l {
			valid = true
		}
	}
	if !valid {
		return c, ll.errorf("must be one of %s", strings.Join(cfgLogLevels, ", "))
	}
	c.LogLevel = lvl

	// security
	c.TLSCertFile = src["tls-cert-file"].value
	c.TLSPrivateKeyFile = src["tls-private-key-file"].value
	c.ClientCAFile = src["client-ca-file"].value
	c.TokenAuthFile = src["token-auth-file"].value
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		return c, errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	}
	if c.ClientCAFile != "" && c.TLSCertFile == "" {
		return c, errors.New("--client-ca-file needs TLS: give --tls-cert-file and --tls-private-key-file too")
	}
	c.ServiceAccountKeyFiles = cfgList(src["service-account-key-file"].value)
	c.ServiceAccountIssuers = cfgList(src["service-account-issuer"].value)
	c.APIAudiences = cfgList(src["api-audiences"].value)
	if len(c.ServiceAccountKeyFiles) > 0 && len(c.ServiceAccountIssuers) == 0 {
		return c, errors.New("--service-account-key-file needs --service-account-issuer")
	}
	if len(c.ServiceAccountKeyFiles) == 0 && (len(c.ServiceAccountIssuers) > 0 || len(c.APIAudiences) > 0) {
		return c, errors.New("--service-account-issuer and --api-audiences need --service-account-key-file")
	}
	anon := src["anonymous-auth"]
	if c.AnonymousAuth, err = strconv.ParseBool(strings.TrimSpace(anon.value)); err != nil {
		return c, anon.errorf("want true or false")
	}
	mode := src["authorization-mode"]
	switch c.AuthorizationMode = strings.TrimSpace(mode.value); c.AuthorizationMode {
	case "RBAC", "AlwaysAllow":
	case "":
		// kube-apiserver's flag has no default; here a node that
		// authenticates its clients authorizes them too.
		c.AuthorizationMode = "AlwaysAllow"
		if c.ClientCAFile != "" || c.TokenAuthFile != "" || len(c.ServiceAccountKeyFiles) > 0 {
			c.AuthorizationMode = "RBAC"
		}
	default:
		return c, mode.errorf("must be RBAC or AlwaysAllow")
	}
	var n uint64
	if n, err = cfgParseUint(src["max-requests-inflight"], 0); err != nil {
		return c, err
	}
	c.MaxRequestsInflight = int(n)
	if n, err = cfgParseUint(src["max-mutating-requests-inflight"], 0); err != nil {
		return c, err
	}
	c.MaxMutatingRequestsInflight = int(n)
	if c.RequestTimeout, err = cfgParseDuration(src["request-timeout"], time.Millisecond); err != nil {
		return c, err
	}
	if c.MaxRequestBytes, err = cfgParseUint(src["max-request-bytes"], 1024); err != nil {
		return c, err
	}
	if c.QuotaBackendBytes, err = cfgParseUint(src["quota-backend-bytes"], 0); err != nil {
		return c, err
	}
	c.PeerCertFile = src["peer-cert-file"].value
	c.PeerKeyFile = src["peer-key-file"].value
	c.PeerTrustedCAFile = src["peer-trusted-ca-file"].value
	c.PeerCertAllowedCN = src["peer-cert-allowed-cn"].value
	if some, all := c.PeerCertFile != "" || c.PeerKeyFile != "" || c.PeerTrustedCAFile != "",
		c.PeerCertFile != "" && c.PeerKeyFile != "" && c.PeerTrustedCAFile != ""; some && !all {
		return c, errors.New("--peer-cert-file, --peer-key-file and --peer-trusted-ca-file must be given together")
	}
	if c.PeerCertAllowedCN != "" && c.PeerCertFile == "" {
		return c, errors.New("--peer-cert-allowed-cn needs --peer-cert-file, --peer-key-file and --peer-trusted-ca-file")
	}

	// raft tuning
	if c.SnapshotThreshold, err = cfgParseUint(src["snapshot-threshold"], 1); err != nil {
		return c, err
	}
	if c.TrailingLogs, err = cfgParseUint(src["trailing-logs"], 0); err != nil {
		return c, err
	}
	if c.SnapshotInterval, err = cfgParseDuration(src["snapshot-interval"], cfgMinRaftDuration); err != nil {
		return c, err
	}
	if c.HeartbeatTimeout, err = cfgParseDuration(src["raft-heartbeat-timeout"], cfgMinRaftDuration); err != nil {
		return c, err
	}
	if c.WriteTimeout, err = cfgParseDuration(src["write-timeout"], 0); err != nil {
		return c, err
	}
	if c.DiskStallTimeout, err = cfgParseDuration(src["disk-stall-timeout"], 0); err != nil {
		return c, err
	}
	if c.WatchHistory, err = cfgParseUint(src["watch-history"], 1); err != nil {
		return c, err
	}
	if c.WatchHistoryAge, err = cfgParseDuration(src["watch-history-age"], 0); err != nil {
		return c, err
	}

	// coordinated leader election
	if c.ElectionPingWindow, err = cfgParseDuration(src["election-ping-window"], 0); err != nil {
		return c, err
	}
	if c.ElectionResync, err = cfgParseDuration(src["election-resync"], 0); err != nil {
		return c, err
	}
	ld := src["election-lease-duration"]
	if c.ElectionLeaseDuration, err = cfgParseDuration(ld, time.Second); err != nil {
		return c, err
	}
	if c.ElectionLeaseDuration%time.Second != 0 {
		return c, ld.errorf("must be a whole number of seconds (leaseDurationSeconds)")
	}
	if c.CandidateGCAge, err = cfgParseDuration(src["candidate-gc-age"], 0); err != nil {
		return c, err
	}
	return c, nil
}

// cfgList splits a comma-separated flag value, dropping empty items.
func cfgList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// cfgCheckAddr validates a host:port listen address.
func cfgCheckAddr(s cfgSource) (string, error) {
	if err := cfgValidHostPort(s.value); err != nil {
		return "", s.errorf("%v", err)
	}
	return s.value, nil
}

func cfgValidHostPort(v string) error {
	if v == "" {
		return errors.New("empty address, want host:port")
	}
	if strings.Contains(v, "://") || strings.Contains(v, "/") {
		return errors.New("want host:port, not a URL")
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("want host:port: %v", cfgAddrErr(err))
	}
	if strings.ContainsAny(host, " \t") {
		return errors.New("host contains white space")
	}
	if port == "" {
		return errors.New("missing port, want host:port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// cfgAddrErr drops the repeated address from net.AddrError messages.
func cfgAddrErr(err error) string {
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return ae.Err
	}
	return err.Error()
}

func cfgParseInitialCluster(s cfgSource, self, selfAddr string, nameSrc, peerSrc cfgSource) ([]Peer, error) {
	var peers []Peer
	names := map[string]bool{}
	addrs := map[string]string{}
	for _, entry := range strings.Split(s.value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, s.errorf("empty entry, want name=host:port,...")
		}
		n, addr, ok := strings.Cut(entry, "=")
		n, addr = strings.TrimSpace(n), strings.TrimSpace(addr)
		if !ok {
			return nil, s.errorf("entry %q is not name=host:port", entry)
		}
		if !cfgNameRE.MatchString(n) {
			return nil, s.errorf("entry %q: bad name %q (letters, digits, '.', '_', '-'; at most 63)", entry, n)
		}
		if err := cfgValidHostPort(addr); err != nil {
			return nil, s.errorf("entry %q: %v", entry, err)
		}
		host, port, _ := net.SplitHostPort(addr)
		if host == "" || port == "0" {
			return nil, s.errorf("entry %q: members need a dialable address with a host and a non-zero port", entry)
		}
		if names[n] {
			return nil, s.errorf("name %q appears twice", n)
		}
		names[n] = true
		if other, dup := addrs[addr]; dup {
			return nil, s.errorf("address %s is given to both %q and %q", addr, other, n)
		}
		addrs[addr] = n
		peers = append(peers, Peer{Name: n, Addr: addr})
	}
	if !names[self] {
		return nil, fmt.Errorf("invalid %s %q: does not contain this node's name %q (%s)", s.label, s.value, self, nameSrc.label)
	}
	for _, p := range peers {
		if p.Name == self && p.Addr != selfAddr {
			return nil, fmt.Errorf("invalid %s: gives %s the address %s but %s is %s; they must be equal",
				s.label, self, p.Addr, peerSrc.label, selfAddr)
		}
	}
	return peers, nil
}

func cfgCheckJoin(s cfgSource) (string, error) {
	u, err := url.Parse(s.value)
	if err != nil {
		return "", s.errorf("want an http:// or https:// URL of a member's API")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", s.errorf("want an http:// or https:// URL of a member's API")
	}
	if u.Host == "" {
		return "", s.errorf("URL has no host")
	}
	if u.Port() != "" {
		if n, err := strconv.ParseUint(u.Port(), 10, 16); err != nil || n == 0 {
			return "", s.errorf("bad port %q", u.Port())
		}
	}
	return s.value, nil
}

func cfgParseUint(s cfgSource, min uint64) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s.value), 10, 64)
	if err != nil {
		return 0, s.errorf("want a whole number")
	}
	if n < min {
		return 0, s.errorf("must be at least %d", min)
	}
	return n, nil
}

func cfgParseDuration(s cfgSource, min time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s.value))
	if err != nil {
		return 0, s.errorf("want a duration such as 500ms, 2s or 1m")
	}
	if d <= 0 {
		return 0, s.errorf("must be greater than 0")
	}
	if d < min {
		return 0, s.errorf("must be at least %v", min)
	}
	return d, nil
}

// cfgPrintHelp writes the usage of every flag, with its default and its
// environment variable, to w.
func cfgPrintHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString("Usage: leasehold [flags]\n\n")
	b.WriteString("leasehold serves the Kubernetes coordination.k8s.io API (Leases) from a\n")
	b.WriteString("Raft-replicated store. Run with no flags it is a single-node store on\n")
	b.WriteString(cfgDefaultAPIAddr + " with its data in ./data/" + cfgDefaultName + ".\n\n")
	b.WriteString("Every flag can also be set with the environment variable LEASEHOLD_<FLAG>\n")
	b.WriteString("(upper case, '-' becomes '_'); a flag on the command line wins.\n\nFlags:\n")
	for _, s := range cfgFlags {
		fmt.Fprintf(&b, "  --%s %s\n", s.name, s.arg)
		for _, line := range cfgWrap(s.usage, 72) {
			fmt.Fprintf(&b, "        %s\n", line)
		}
		def := s.def
		if s.shown != "" {
			def = s.shown
		}
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(&b, "        (default: %s; env %s)\n", def, cfgEnvName(s.name))
	}
	b.WriteString("  --help, -h\n        print this help and exit\n")
	io.WriteString(w, b.String())
}

// cfgWrap splits text into lines of at most width bytes at spaces.
func cfgWrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
