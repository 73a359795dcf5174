// Package transport owns the peer port. Every connection starts with one
// byte that says what it carries — 1 for Raft (hashicorp/raft's
// NetworkTransport over this package's StreamLayer), 2 for node-to-node RPC
// (requests forwarded to the leader, read-index requests), 3 for an apply
// stream (log commands for the leader and its answers) — the way Consul
// and rqlite multiplex one port.
//
// RPCs are gob-encoded request/response pairs over pooled connections; an
// apply stream carries many commands and answers at once (stream.go). A
// forwarded request and its answer are bytes of the API layer's: this
// package knows nothing of HTTP or of users.
//
// # Mutual TLS
//
// Whoever reaches the peer port can do what a member does: a forwarded
// request is executed as the leader's own, an applied command is committed
// as it comes, a RequestVote with a high term unseats the leader. And
// encoding/gob, like Raft's msgpack, is not hardened against hostile input.
// So with Config.TLS (see PeerTLS, after etcd's --peer-* flags) the port
// speaks TLS first, as rqlite's TLS mux does, and the type byte travels
// inside it:
//
//	dialer                                  server
//	TCP connect
//	TLS handshake, with its certificate --> verifies it against the peer CA
//	                                        (and the allowed CN, if set)
//	                                    <-- one byte: accepted
//	type byte, then the connection's protocol, all inside TLS
//
// The server reads no plaintext byte: a stranger's bytes go to the TLS
// handshake and nowhere else, and a client whose certificate does not
// verify is closed, and logged, before any byte of its own is decoded. The
// handshake and the type byte must come within handshakeTimeout.
//
// The dialer verifies the server against the same CA, by the host of the
// peer address it dials (before any Config.DialRewrite). It waits for the
// server's acceptance byte: under TLS 1.3 the client's handshake is over
// before the server has judged the client's certificate, and without the
// byte a refusal would show only at the first read, after a request went
// out; with it a refused connection fails to dial, and nothing was sent.
//
// Requests decoded by the RPC server and the apply stream are also capped
// per message (see maxRequestFrame), with or without TLS.
package transport
