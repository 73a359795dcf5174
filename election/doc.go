// Package election is leasehold's coordinated leader election controller:
// the counterpart of kube-apiserver's leader-election controller (feature
// gate CoordinatedLeaderElection) and its LeaseCandidate garbage collector,
// running on the Raft leader of a leasehold cluster.
//
// # What it owns
//
// For every (namespace, spec.leaseName) that LeaseCandidates name, the
// controller owns the decisions about the coordination.k8s.io/v1 Lease of
// that name: its spec.strategy, who is elected into spec.holderIdentity (the
// controller never renews the Lease for a holder; the holder does), and
// spec.preferredHolder, which asks a worse holder to step down. It also owns
// spec.pingTime of every LeaseCandidate, and deletes candidates that stopped
// renewing (garbage collection). It owns nothing else: it reads and writes
// only through registry.Store, exactly as an API client would, so every
// write is validated, optimistic-concurrency checked (the resourceVersion it
// read) and replicated through Raft like any other.
//
// # Where it runs
//
// Run loops for the life of the process on every node but acts only while
// its node is the Raft leader (IsLeader is checked before every round and
// before every write). A round reads the candidates with a linearizable list
// and the Leases at least at that version; a leader deposed mid-round
// abandons the round, and its writes fail anyway (they go through Raft and
// carry the resourceVersion they were computed from), so nothing diverges.
// The only in-memory state is when the current election of each Lease
// started, the last status and the GC timer; a new leader simply starts from
// the replicated objects (a ping another leader sent is still in the
// candidates' pingTime and is waited for, not repeated).
//
// # One round, per Lease (kube-apiserver's rules, API.md section 14)
//
//  1. Candidates: those whose renewTime is set and newer than GCAge (30 min).
//  2. Strategy (strategy.go): candidates written through v1alpha1 (they carry
//     the coordination.leasehold.io/preferred-strategies annotation) give
//     ordered lists and are resolved by the v1alpha1 graph rule: edges
//     pref[i] -> pref[i+1] over every candidate, topological order, exactly
//     one root wins ([X] + [Y, X] -> Y); a cycle ([X, Y] vs [Y, X]) or two
//     roots is a user error. Candidates written in v1alpha2/v1beta1 have one
//     strategy: the one of the highest binaryVersion wins, and different
//     strategies at that highest binaryVersion are a user error. Mixed sets
//     (any v1alpha1 candidate present) use the graph rule, every single
//     strategy counting as the list [strategy]: the graph rule is the only
//     one that can read a list, and [strategy] is what the v1alpha1 view of
//     such a candidate shows. A user error leaves the Lease untouched and is
//     reported: a WARN log line when it appears or changes, the counter
//     leasehold_election_conflicts_total, the state "conflict" in
//     leasehold_election_leases and in Status (served as GET
//     /cluster/elections) with the error text.
//  3. Strategies other than OldestEmulationVersion: the Lease is created (or
//     its strategy updated) without a holder, left to another controller.
//  4. An election is needed when the Lease is missing, expired or has no
//     holder, when the best responsive candidate is not the holder (and has
//     not already been named preferredHolder of a valid Lease), when a stale
//     preferredHolder must be cleared, or when a responsive candidate has not
//     renewed for GCAge/2 (pinging keeps live candidates from GC).
//  5. Ping: every candidate that has not renewed within PingWindow before the
//     election started gets pingTime=now, unless it left an earlier ping
//     unanswered (it is not pinged again until it renews by itself). The
//     election waits until every outstanding ping is answered (renewTime
//     moves past pingTime) or PingWindow has passed since it was sent.
//     Eligible: renewed after start-PingWindow (fresh, or answered).
//  6. OldestEmulationVersion: among eligible candidates with parseable
//     versions (semver, tolerant: "v1.30", "1.30" are accepted), the lowest
//     emulationVersion wins, then the lowest binaryVersion, then the oldest
//     creationTimestamp (second precision), then the first in list order
//     (by name), as kube-apiserver's compare does.
//  7. Lease write: missing -> created for the winner; free or expired -> taken
//     for the winner (holderIdentity, acquireTime, renewTime,
//     leaseDurationSeconds=LeaseDuration, leaseTransitions+1 when the holder
//     changes, preferredHolder cleared, strategy); held and valid by another
//     -> only preferredHolder=winner, so the holder steps down and the Lease
//     expires into the previous case; held by the winner -> a stale
//     preferredHolder is cleared.
//
// Differences from kube-apiserver, on purpose: acquireTime is set on a
// takeover (kube-apiserver clears it) and leaseTransitions counts holder
// changes, as client-go's own elections do; an expired Lease whose holder is
// still the winner is granted to it again (kube-apiserver leaves it expired,
// which a coordinated client never renews); the v1beta1 rule looks only at
// the highest binaryVersion (kube-apiserver's loop can report a conflict
// between two lower versions depending on list order); candidates that left
// a ping unanswered do not keep forcing elections.
//
// Garbage collection runs every GCInterval (default GCAge/6) in a round: a
// candidate whose renewTime (creationTimestamp when it has none) is older
// than GCAge is deleted with a resourceVersion precondition, so a candidate
// that renewed meanwhile survives.
package election
