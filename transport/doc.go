// Package transport owns the peer port. Every connection starts with one
// byte that says what it carries — 1 for Raft (hashicorp/raft's
// NetworkTransport over this package's StreamLayer), 2 for node-to-node RPC
// (writes forwarded to the leader, read-index requests), 3 for an apply
// stream (log commands for the leader and its answers) — the way Consul
// and rqlite multiplex one port.
//
// RPCs are gob-encoded request/response pairs over pooled connections; an
// apply stream carries many commands and answers at once (stream.go).
package transport
