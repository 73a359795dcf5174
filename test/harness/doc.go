// Package harness runs leasehold processes on 127.0.0.1 for the
// process-level tests (test/e2e, test/chaos): it builds the binaries once
// for a test binary (Main), picks free loopback ports (FreePorts), starts a
// binary in its own process group with its output appended to a log file
// (Start, Node), signals, pauses, resumes and kills it, and reads what every
// node serves for that: /readyz (WaitReady) and /cluster/status
// (ClusterStatus, Leader).
//
// It does not make clusters or decide their flags, TLS material, clients or
// faults: each suite keeps those (e2e its procCluster, credentials and
// client-go clients; chaos its proxies and toxics). It reaches a node
// through the base URL and *http.Client its caller gives, so it works for
// nodes serving plain HTTP and TLS alike. Every wait in it is bounded.
package harness
