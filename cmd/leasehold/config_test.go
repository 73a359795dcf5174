package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func defaultConfig() Config {
	return Config{
		Name:              "node1",
		DataDir:           "./data/node1",
		APIAddr:           "127.0.0.1:7001",
		PeerAddr:          "127.0.0.1:8001",
		InitialCluster:    []Peer{{Name: "node1", Addr: "127.0.0.1:8001"}},
		LogLevel:          "info",
		SnapshotThreshold: 32768,
		SnapshotInterval:  2 * time.Second,
		TrailingLogs:      10240,
		HeartbeatTimeout:  time.Second,
		WriteTimeout:      5 * time.Second,
		DiskStallTimeout:  2 * time.Second,
		WatchHistory:      100000,
		WatchHistoryAge:   5 * time.Minute,
		EtcdPrefix:        "/registry",

		AuthorizationMode:           "AlwaysAllow",
		MaxRequestsInflight:         400,
		MaxMutatingRequestsInflight: 200,
		RequestTimeout:              time.Minute,
		MaxRequestBytes:             1572864,
		QuotaBackendBytes:           2147483648,

		ElectionPingWindow:    5 * time.Second,
		ElectionResync:        5 * time.Second,
		ElectionLeaseDuration: 5 * time.Second,
		CandidateGCAge:        30 * time.Minute,
	}
}

const threeNodes = "n1=127.0.0.1:8001,n2=127.0.0.1:8002,n3=127.0.0.1:8003"

var threePeers = []Peer{
	{Name: "n1", Addr: "127.0.0.1:8001"},
	{Name: "n2", Addr: "127.0.0.1:8002"},
	{Name: "n3", Addr: "127.0.0.1:8003"},
}

func TestParseConfigValid(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want func(c *Config)
	}{
		{name: "defaults", want: func(c *Config) {}},
		{name: "defaults ignore unrelated env",
			env:  []string{"PATH=/bin", "HOME=/root", "LEASEHOLD_DATA=./x", "LEASEHOLD_NOPE=1", "NAME=zz", "malformed"},
			want: func(c *Config) {}},
		{name: "data dir follows flag name",
			args: []string{"--name", "n2"},
			want: func(c *Config) {
				c.Name, c.DataDir = "n2", "./data/n2"
				c.InitialCluster = []Peer{{Name: "n2", Addr: "127.0.0.1:8001"}}
			}},
		{name: "data dir follows env name",
			env: []string{"LEASEHOLD_NAME=n3"},
			want: func(c *Config) {
				c.Name, c.DataDir = "n3", "./data/n3"
				c.InitialCluster = []Peer{{Name: "n3", Addr: "127.0.0.1:8001"}}
			}},
		{name: "explicit data dir wins over derived one",
			args: []string{"--name=n2", "--data-dir=/var/lib/x"},
			want: func(c *Config) {
				c.Name, c.DataDir = "n2", "/var/lib/x"
				c.InitialCluster = []Peer{{Name: "n2", Addr: "127.0.0.1:8001"}}
			}},
		{name: "single dash and equals forms",
			args: []string{"-api-addr", "0.0.0.0:9000", "--peer-addr=127.0.0.1:9001"},
			want: func(c *Config) {
				c.APIAddr, c.PeerAddr = "0.0.0.0:9000", "127.0.0.1:9001"
				c.InitialCluster = []Peer{{Name: "node1", Addr: "127.0.0.1:9001"}}
			}},
		{name: "three node member",
			args: []string{"--name", "n2", "--data-dir", "d/n2", "--api-addr", "127.0.0.1:7002",
				"--peer-addr", "127.0.0.1:8002", "--initial-cluster", threeNodes},
			want: func(c *Config) {
				c.Name, c.DataDir, c.APIAddr, c.PeerAddr = "n2", "d/n2", "127.0.0.1:7002", "127.0.0.1:8002"
				c.InitialCluster = threePeers
			}},
		{name: "three node member from env",
			env: []string{"LEASEHOLD_NAME=n3", "LEASEHOLD_API_ADDR=127.0.0.1:7003",
				"LEASEHOLD_PEER_ADDR=127.0.0.1:8003", "LEASEHOLD_INITIAL_CLUSTER=" + threeNodes},
			want: func(c *Config) {
				c.Name, c.DataDir, c.APIAddr, c.PeerAddr = "n3", "./data/n3", "127.0.0.1:7003", "127.0.0.1:8003"
				c.InitialCluster = threePeers
			}},
		{name: "initial cluster tolerates spaces",
			args: []string{"--name=n1", "--initial-cluster", " n1 = 127.0.0.1:8001 , n2=127.0.0.1:8002,n3=127.0.0.1:8003 "},
			want: func(c *Config) {
				c.Name, c.DataDir, c.InitialCluster = "n1", "./data/n1", threePeers
			}},
		{name: "ipv6 and hostnames",
			args: []string{"--api-addr", "[::1]:7001", "--peer-addr", "localhost:8001", "--debug-addr", ":6060"},
			want: func(c *Config) {
				c.APIAddr, c.PeerAddr, c.DebugAddr = "[::1]:7001", "localhost:8001", ":6060"
				c.InitialCluster = []Peer{{Name: "node1", Addr: "localhost:8001"}}
			}},
		{name: "port zero for listen addresses",
			args: []string{"--api-addr", "127.0.0.1:0"},
			want: func(c *Config) { c.APIAddr = "127.0.0.1:0" }},
		{name: "join and log level",
			args: []string{"--join", "https://10.0.0.1:7001", "--log-level", "DEBUG"},
			want: func(c *Config) { c.Join, c.LogLevel = "https://10.0.0.1:7001", "debug" }},
		{name: "all log levels", args: []string{"--log-level=trace"},
			want: func(c *Config) { c.LogLevel = "trace" }},
		{name: "warn", env: []string{"LEASEHOLD_LOG_LEVEL=warn"},
			want: func(c *Config) { c.LogLevel = "warn" }},
		{name: "error", env: []string{"LEASEHOLD_LOG_LEVEL=error"},
			want: func(c *Config) { c.LogLevel = "error" }},
		{name: "security files",
			args: []string{"--tls-cert-file", "c.pem", "--tls-private-key-file", "k.pem",
				"--client-ca-file", "ca.pem", "--token-auth-file", "tokens.csv"},
			want: func(c *Config) {
				c.TLSCertFile, c.TLSPrivateKeyFile, c.ClientCAFile, c.TokenAuthFile = "c.pem", "k.pem", "ca.pem", "tokens.csv"
				c.AuthorizationMode = "RBAC"
			}},
		{name: "token file without TLS", env: []string{"LEASEHOLD_TOKEN_AUTH_FILE=t.csv"},
			want: func(c *Config) { c.TokenAuthFile = "t.csv"; c.AuthorizationMode = "RBAC" }},
		{name: "AlwaysAllow chosen with an authenticator", args: []string{"--token-auth-file", "t.csv", "--authorization-mode", "AlwaysAllow"},
			want: func(c *Config) { c.TokenAuthFile = "t.csv" }},
		{name: "raft tuning flags",
			args: []string{"--snapshot-threshold", "100", "--snapshot-interval", "250ms", "--trailing-logs", "0",
				"--raft-heartbeat-timeout", "2s", "--write-timeout", "1m"},
			want: func(c *Config) {
				c.SnapshotThreshold, c.SnapshotInterval, c.TrailingLogs = 100, 250*time.Millisecond, 0
				c.HeartbeatTimeout, c.WriteTimeout = 2*time.Second, time.Minute
			}},
		{name: "raft tuning env",
			env: []string{"LEASEHOLD_SNAPSHOT_THRESHOLD=5", "LEASEHOLD_SNAPSHOT_INTERVAL=1s", "LEASEHOLD_TRAILING_LOGS=7",
				"LEASEHOLD_RAFT_HEARTBEAT_TIMEOUT=500ms", "LEASEHOLD_WRITE_TIMEOUT=3s", "LEASEHOLD_DEBUG_ADDR=127.0.0.1:6060"},
			want: func(c *Config) {
				c.SnapshotThreshold, c.SnapshotInterval, c.TrailingLogs = 5, time.Second, 7
				c.HeartbeatTimeout, c.WriteTimeout, c.DebugAddr = 500*time.Millisecond, 3*time.Second, "127.0.0.1:6060"
			}},
		{name: "election flags",
			args: []string{"--election-ping-window", "1s", "--election-resync", "500ms",
				"--election-lease-duration", "2s", "--candidate-gc-age", "1h"},
			want: func(c *Config) {
				c.ElectionPingWindow, c.ElectionResync = time.Second, 500*time.Millisecond
				c.ElectionLeaseDuration, c.CandidateGCAge = 2*time.Second, time.Hour
			}},
		{name: "election env",
			env: []string{"LEASEHOLD_ELECTION_PING_WINDOW=2s", "LEASEHOLD_ELECTION_RESYNC=3s",
				"LEASEHOLD_ELECTION_LEASE_DURATION=15s", "LEASEHOLD_CANDIDATE_GC_AGE=10m"},
			want: func(c *Config) {
				c.ElectionPingWindow, c.ElectionResync = 2*time.Second, 3*time.Second
				c.ElectionLeaseDuration, c.CandidateGCAge = 15*time.Second, 10*time.Minute
			}},
		{name: "flag wins over env",
			args: []string{"--name", "fromflag", "--api-addr", "127.0.0.1:1111", "--log-level", "warn", "--write-timeout", "9s"},
			env: []string{"LEASEHOLD_NAME=fromenv", "LEASEHOLD_API_ADDR=127.0.0.1:2222", "LEASEHOLD_LOG_LEVEL=debug",
				"LEASEHOLD_WRITE_TIMEOUT=1s", "LEASEHOLD_TRAILING_LOGS=3"},
			want: func(c *Config) {
				c.Name, c.DataDir, c.APIAddr, c.LogLevel, c.WriteTimeout = "fromflag", "./data/fromflag", "127.0.0.1:1111", "warn", 9*time.Second
				c.TrailingLogs = 3
				c.InitialCluster = []Peer{{Name: "fromflag", Addr: "127.0.0.1:8001"}}
			}},
		{name: "flag wins over bad env value",
			args: []string{"--api-addr", "127.0.0.1:7005"},
			env:  []string{"LEASEHOLD_API_ADDR=http://bad"},
			want: func(c *Config) { c.APIAddr = "127.0.0.1:7005" }},
		{name: "empty env value is ignored",
			env:  []string{"LEASEHOLD_NAME=", "LEASEHOLD_API_ADDR="},
			want: func(c *Config) {}},
		{name: "first env occurrence wins like os.Getenv",
			env:  []string{"LEASEHOLD_LOG_LEVEL=debug", "LEASEHOLD_LOG_LEVEL=bogus"},
			want: func(c *Config) { c.LogLevel = "debug" }},
		{name: "env data dir", env: []string{"LEASEHOLD_DATA_DIR=/tmp/d", "LEASEHOLD_NAME=x"},
			want: func(c *Config) {
				c.Name, c.DataDir = "x", "/tmp/d"
				c.InitialCluster = []Peer{{Name: "x", Addr: "127.0.0.1:8001"}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			got, err := ParseConfig(tt.args, tt.env, &out)
			if err != nil {
				t.Fatalf("ParseConfig(%q, %q): %v", tt.args, tt.env, err)
			}
			want := defaultConfig()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ParseConfig(%q, %q)\n got %+v\nwant %+v", tt.args, tt.env, got, want)
			}
			if out.Len() != 0 {
				t.Errorf("unexpected output %q", out.String())
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string // substrings of the error
	}{
		{"unknown flag", []string{"--bogus"}, nil, []string{"unknown flag --bogus"}},
		{"unknown flag with value", []string{"--bogus=1"}, nil, []string{"unknown flag --bogus"}},
		{"missing flag value", []string{"--name"}, nil, []string{"--name", "needs a value"}},
		{"positional argument", []string{"serve"}, nil, []string{"unexpected argument", "serve"}},
		{"bad flag syntax", []string{"---x"}, nil, []string{"bad flag syntax"}},

		{"service account keys without issuer", []string{"--service-account-key-file", "k.pem"}, nil, []string{"--service-account-key-file needs --service-account-issuer"}},
		{"issuer without keys", []string{"--service-account-issuer", "https://x"}, nil, []string{"need --service-account-key-file"}},
		{"anonymous not a bool", []string{"--anonymous-auth", "maybe"}, nil, []string{"--anonymous-auth", "true or false"}},
		{"authorization mode unknown", []string{"--authorization-mode", "Node"}, nil, []string{"--authorization-mode", "Node"}},
		{"authorization mode lower case", []string{"--authorization-mode", "rbac"}, nil, []string{"--authorization-mode", "must be RBAC or AlwaysAllow"}},

		{"inflight negative", []string{"--max-requests-inflight", "-1"}, nil, []string{"--max-requests-inflight"}},
		{"peer cert without CA", []string{"--peer-cert-file", "c", "--peer-key-file", "k"}, nil, []string{"must be given together"}},
		{"peer allowed CN without TLS", []string{"--peer-cert-allowed-cn", "x"}, nil, []string{"--peer-cert-allowed-cn needs"}},

		{"empty name", []string{"--name="}, nil, []string{"--name"}},
		{"name with comma", []string{"--name", "a,b"}, nil, []string{"--name", "a,b"}},
		{"name with slash", []string{"--name", "../x"}, nil, []string{"--name"}},
		{"name from env", nil, []string{"LEASEHOLD_NAME=a=b"}, []string{"LEASEHOLD_NAME", "a=b"}},
		{"empty data dir", []string{"--data-dir="}, nil, []string{"--data-dir", "empty"}},

		{"api addr URL", []string{"--api-addr", "http://127.0.0.1:7001"}, nil, []string{"--api-addr", "not a URL"}},
		{"api addr no port", []string{"--api-addr", "127.0.0.1"}, nil, []string{"--api-addr", "host:port"}},
		{"api addr empty port", []string{"--api-addr", "127.0.0.1:"}, nil, []string{"--api-addr", "missing port"}},
		{"api addr named port", []string{"--api-addr", "127.0.0.1:http"}, nil, []string{"--api-addr", "0 to 65535"}},
		{"api addr port too big", []string{"--api-addr", "127.0.0.1:65536"}, nil, []string{"--api-addr", "0 to 65535"}},
		{"api addr negative port", []string{"--api-addr", "127.0.0.1:-1"}, nil, []string{"--api-addr", "0 to 65535"}},
		{"api addr empty", []string{"--api-addr="}, nil, []string{"--api-addr", "empty"}},
		{"api addr from env", nil, []string{"LEASEHOLD_API_ADDR=localhost"}, []string{"LEASEHOLD_API_ADDR", "localhost"}},
		{"peer addr URL", []string{"--peer-addr", "tcp://127.0.0.1:8001"}, nil, []string{"--peer-addr", "not a URL"}},
		{"peer addr ipv6 without brackets", []string{"--peer-addr", "::1:8001"}, nil, []string{"--peer-addr"}},
		{"peer addr from env", nil, []string{"LEASEHOLD_PEER_ADDR=1.2.3.4:99999"}, []string{"LEASEHOLD_PEER_ADDR"}},
		{"debug addr", []string{"--debug-addr", "6060"}, nil, []string{"--debug-addr"}},
		{"debug addr from env", nil, []string{"LEASEHOLD_DEBUG_ADDR=http://x:1"}, []string{"LEASEHOLD_DEBUG_ADDR"}},

		{"initial cluster missing self", []string{"--name", "n4", "--initial-cluster", threeNodes}, nil,
			[]string{"--initial-cluster", "does not contain", "n4"}},
		{"initial cluster default name missing", []string{"--initial-cluster", threeNodes}, nil,
			[]string{"--initial-cluster", "node1"}},
		{"initial cluster address mismatch", []string{"--name", "n2", "--initial-cluster", threeNodes}, nil,
			[]string{"--initial-cluster", "127.0.0.1:8002", "--peer-addr", "127.0.0.1:8001"}},
		{"initial cluster duplicate name", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:8001,n1=127.0.0.1:8002"}, nil,
			[]string{"--initial-cluster", "twice"}},
		{"initial cluster duplicate address", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:8001,n2=127.0.0.1:8001"}, nil,
			[]string{"--initial-cluster", "both"}},
		{"initial cluster no equals", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:8001,n2"}, nil,
			[]string{"--initial-cluster", "name=host:port"}},
		{"initial cluster empty entry", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:8001,"}, nil,
			[]string{"--initial-cluster", "empty entry"}},
		{"initial cluster URL", []string{"--name", "n1", "--initial-cluster", "n1=http://127.0.0.1:8001"}, nil,
			[]string{"--initial-cluster", "not a URL"}},
		{"initial cluster bad port", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:80011"}, nil,
			[]string{"--initial-cluster", "0 to 65535"}},
		{"initial cluster port zero", []string{"--name", "n1", "--peer-addr", "127.0.0.1:0", "--initial-cluster", "n1=127.0.0.1:0"}, nil,
			[]string{"--initial-cluster", "non-zero port"}},
		{"initial cluster empty host", []string{"--name", "n1", "--peer-addr", ":8001", "--initial-cluster", "n1=:8001"}, nil,
			[]string{"--initial-cluster", "host"}},
		{"initial cluster bad name", []string{"--name", "n1", "--initial-cluster", "n1=127.0.0.1:8001,=127.0.0.1:8002"}, nil,
			[]string{"--initial-cluster", "bad name"}},
		{"initial cluster from env", []string{"--name", "n1"}, []string{"LEASEHOLD_INITIAL_CLUSTER=n1=127.0.0.1:9999"},
			[]string{"LEASEHOLD_INITIAL_CLUSTER", "--peer-addr"}},
		{"initial cluster mismatch with env peer addr", []string{"--name", "n1", "--initial-cluster", threeNodes},
			[]string{"LEASEHOLD_PEER_ADDR=127.0.0.1:9999"}, []string{"--initial-cluster", "LEASEHOLD_PEER_ADDR"}},

		{"join not a URL", []string{"--join", "127.0.0.1:7001"}, nil, []string{"--join", "http"}},
		{"join wrong scheme", []string{"--join", "ftp://127.0.0.1:7001"}, nil, []string{"--join", "http"}},
		{"join no host", []string{"--join", "http://"}, nil, []string{"--join", "no host"}},
		{"join bad port", []string{"--join", "http://127.0.0.1:0"}, nil, []string{"--join", "port"}},
		{"join unparsable", []string{"--join", "http://[::1"}, nil, []string{"--join"}},
		{"join from env", nil, []string{"LEASEHOLD_JOIN=n1:7001"}, []string{"LEASEHOLD_JOIN"}},

		{"log level", []string{"--log-level", "verbose"}, nil, []string{"--log-level", "verbose", "trace, debug, info, warn, error"}},
		{"log level from env", nil, []string{"LEASEHOLD_LOG_LEVEL=warning"}, []string{"LEASEHOLD_LOG_LEVEL", "warning"}},

		{"cert without key", []string{"--tls-cert-file", "c.pem"}, nil, []string{"--tls-cert-file", "--tls-private-key-file"}},
		{"key without cert", nil, []string{"LEASEHOLD_TLS_PRIVATE_KEY_FILE=k.pem"}, []string{"--tls-cert-file", "--tls-private-key-file"}},
		{"client CA without TLS", []string{"--client-ca-file", "ca.pem"}, nil, []string{"--client-ca-file", "TLS"}},

		{"snapshot threshold zero", []string{"--snapshot-threshold", "0"}, nil, []string{"--snapshot-threshold", "at least 1"}},
		{"snapshot threshold negative", []string{"--snapshot-threshold", "-5"}, nil, []string{"--snapshot-threshold", "whole number"}},
		{"snapshot threshold text", nil, []string{"LEASEHOLD_SNAPSHOT_THRESHOLD=lots"}, []string{"LEASEHOLD_SNAPSHOT_THRESHOLD", "lots"}},
		{"trailing logs", []string{"--trailing-logs", "1.5"}, nil, []string{"--trailing-logs", "whole number"}},
		{"trailing logs env", nil, []string{"LEASEHOLD_TRAILING_LOGS=-1"}, []string{"LEASEHOLD_TRAILING_LOGS"}},
		{"snapshot interval zero", []string{"--snapshot-interval", "0s"}, nil, []string{"--snapshot-interval", "greater than 0"}},
		{"snapshot interval tiny", []string{"--snapshot-interval", "1ms"}, nil, []string{"--snapshot-interval", "at least 5ms"}},
		{"snapshot interval no unit", []string{"--snapshot-interval", "30"}, nil, []string{"--snapshot-interval", "duration"}},
		{"heartbeat negative", []string{"--raft-heartbeat-timeout", "-1s"}, nil, []string{"--raft-heartbeat-timeout", "greater than 0"}},
		{"heartbeat tiny", nil, []string{"LEASEHOLD_RAFT_HEARTBEAT_TIMEOUT=1ms"}, []string{"LEASEHOLD_RAFT_HEARTBEAT_TIMEOUT", "5ms"}},
		{"write timeout zero", []string{"--write-timeout", "0"}, nil, []string{"--write-timeout", "greater than 0"}},
		{"disk stall timeout zero", []string{"--disk-stall-timeout", "0"}, nil, []string{"--disk-stall-timeout", "greater than 0"}},
		{"write timeout env", nil, []string{"LEASEHOLD_WRITE_TIMEOUT=soon"}, []string{"LEASEHOLD_WRITE_TIMEOUT", "soon"}},

		{"ping window zero", []string{"--election-ping-window", "0s"}, nil, []string{"--election-ping-window", "greater than 0"}},
		{"ping window env", nil, []string{"LEASEHOLD_ELECTION_PING_WINDOW=5"}, []string{"LEASEHOLD_ELECTION_PING_WINDOW", "duration"}},
		{"resync negative", []string{"--election-resync", "-1s"}, nil, []string{"--election-resync", "greater than 0"}},
		{"lease duration below a second", []string{"--election-lease-duration", "500ms"}, nil, []string{"--election-lease-duration", "at least 1s"}},
		{"lease duration fraction", []string{"--election-lease-duration", "1500ms"}, nil, []string{"--election-lease-duration", "whole number of seconds"}},
		{"gc age env", nil, []string{"LEASEHOLD_CANDIDATE_GC_AGE=never"}, []string{"LEASEHOLD_CANDIDATE_GC_AGE", "never"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := ParseConfig(tt.args, tt.env, &out)
			if err == nil {
				t.Fatalf("ParseConfig(%q, %q): no error, want one containing %q", tt.args, tt.env, tt.want)
			}
			if errors.Is(err, errHelp) {
				t.Fatalf("got errHelp")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			if out.Len() != 0 {
				t.Errorf("errors must not print to stdout, got %q", out.String())
			}
		})
	}
}

func TestParseConfigHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"--name", "n1", "--help"}, {"--help", "--bogus"}} {
		var out bytes.Buffer
		// A bad env value must not stop --help.
		_, err := ParseConfig(args, []string{"LEASEHOLD_API_ADDR=bad"}, &out)
		if !errors.Is(err, errHelp) {
			t.Fatalf("ParseConfig(%q) = %v, want errHelp", args, err)
		}
		help := out.String()
		for _, f := range cfgFlags {
			if !strings.Contains(help, "--"+f.name+" ") {
				t.Errorf("help for %q lacks --%s", args, f.name)
			}
			if !strings.Contains(help, cfgEnvName(f.name)) {
				t.Errorf("help lacks %s", cfgEnvName(f.name))
			}
		}
		for _, s := range []string{"./data/<name>", "127.0.0.1:7001", "127.0.0.1:8001", "node1", "info",
			"32768", "2s", "10240", "1s", "5s", "30m0s", "trace|debug|info|warn|error"} {
			if !strings.Contains(help, s) {
				t.Errorf("help lacks default %q", s)
			}
		}
	}
}

// The help must list every flag the FlagSet knows, and the documented names
// must be exactly the contract's.
func TestFlagNames(t *testing.T) {
	want := []string{"name", "data-dir", "api-addr", "peer-addr", "initial-cluster", "join", "log-level",
		"tls-cert-file", "tls-private-key-file", "client-ca-file", "token-auth-file",
		"service-account-key-file", "service-account-issuer", "api-audiences", "anonymous-auth", "authorization-mode",
		"max-requests-inflight", "max-mutating-requests-inflight", "request-timeout", "max-request-bytes",
		"quota-backend-bytes",
		"peer-cert-file", "peer-key-file", "peer-trusted-ca-file", "peer-cert-allowed-cn",
		"snapshot-threshold", "snapshot-interval", "trailing-logs", "raft-heartbeat-timeout", "write-timeout", "disk-stall-timeout", "debug-addr",
		"etcd-addr", "etcd-prefix",
		"watch-history", "watch-history-age",
		"election-ping-window", "election-resync", "election-lease-duration", "candidate-gc-age"}
	var got []string
	for _, f := range cfgFlags {
		got = append(got, f.name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags = %q, want %q", got, want)
	}
	for _, name := range want {
		var out bytes.Buffer
		// Every flag is accepted on the command line with its default.
		if _, err := ParseConfig([]string{"--" + name + "=x"}, nil, &out); err != nil && strings.Contains(err.Error(), "unknown flag") {
			t.Errorf("--%s is not a flag: %v", name, err)
		}
	}
	if got := cfgEnvName("tls-private-key-file"); got != "LEASEHOLD_TLS_PRIVATE_KEY_FILE" {
		t.Errorf("cfgEnvName = %q", got)
	}
}

// Every flag can be set through its environment variable.
func TestEveryFlagHasEnv(t *testing.T) {
	values := map[string]string{
		"name": "envnode", "data-dir": "/d", "api-addr": "127.0.0.1:1", "peer-addr": "127.0.0.1:2",
		"initial-cluster": "envnode=127.0.0.1:2,b=127.0.0.1:3", "join": "http://127.0.0.1:7001", "log-level": "error",
		"tls-cert-file": "c", "tls-private-key-file": "k", "client-ca-file": "ca", "token-auth-file": "t",
		"service-account-key-file": "sa1.pem,sa2.pem", "service-account-issuer": "https://a,https://b",
		"api-audiences": "x,y", "anonymous-auth": "true", "authorization-mode": "AlwaysAllow",
		"max-requests-inflight": "23", "max-mutating-requests-inflight": "24",
		"request-timeout": "26s", "max-request-bytes": "2048", "quota-backend-bytes": "4096",
		"peer-cert-file": "pc", "peer-key-file": "pk", "peer-trusted-ca-file": "pca", "peer-cert-allowed-cn": "cn",
		"snapshot-threshold": "11", "snapshot-interval": "12s", "trailing-logs": "13",
		"raft-heartbeat-timeout": "14s", "write-timeout": "15s", "disk-stall-timeout": "3s", "debug-addr": "127.0.0.1:16",
		"etcd-addr": "127.0.0.1:25", "etcd-prefix": "/kube/",
		"watch-history": "17", "watch-history-age": "18s",
		"election-ping-window": "19s", "election-resync": "20s", "election-lease-duration": "21s", "candidate-gc-age": "22m",
	}
	var env []string
	for _, f := range cfgFlags {
		v, ok := values[f.name]
		if !ok {
			t.Fatalf("no test value for --%s", f.name)
		}
		env = append(env, cfgEnvName(f.name)+"="+v)
	}
	got, err := ParseConfig(nil, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Name: "envnode", DataDir: "/d", APIAddr: "127.0.0.1:1", PeerAddr: "127.0.0.1:2",
		InitialCluster: []Peer{{"envnode", "127.0.0.1:2"}, {"b", "127.0.0.1:3"}},
		Join:           "http://127.0.0.1:7001", LogLevel: "error",
		TLSCertFile: "c", TLSPrivateKeyFile: "k", ClientCAFile: "ca", TokenAuthFile: "t",
		ServiceAccountKeyFiles: []string{"sa1.pem", "sa2.pem"}, ServiceAccountIssuers: []string{"https://a", "https://b"},
		APIAudiences: []string{"x", "y"}, AnonymousAuth: true, AuthorizationMode: "AlwaysAllow",
		MaxRequestsInflight: 23, MaxMutatingRequestsInflight: 24,
		RequestTimeout: 26 * time.Second, MaxRequestBytes: 2048, QuotaBackendBytes: 4096,
		PeerCertFile: "pc", PeerKeyFile: "pk", PeerTrustedCAFile: "pca", PeerCertAllowedCN: "cn",
		SnapshotThreshold: 11, SnapshotInterval: 12 * time.Second, TrailingLogs: 13,
		HeartbeatTimeout: 14 * time.Second, WriteTimeout: 15 * time.Second, DiskStallTimeout: 3 * time.Second, DebugAddr: "127.0.0.1:16",
		EtcdAddr: "127.0.0.1:25", EtcdPrefix: "/kube",
		WatchHistory: 17, WatchHistoryAge: 18 * time.Second,
		ElectionPingWindow: 19 * time.Second, ElectionResync: 20 * time.Second,
		ElectionLeaseDuration: 21 * time.Second, CandidateGCAge: 22 * time.Minute,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}
