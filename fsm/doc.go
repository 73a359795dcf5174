// Package fsm is leasehold's Raft state machine: the command encoding of
// log entries, their deterministic application to fsm/state, and snapshots.
//
// Apply never reads the clock, randomness or anything outside the entry and
// the state: uid, creation time and names are chosen before a command is
// proposed. Preconditions (resourceVersion, uid, existence) are checked here,
// at the entry's place in the log, so two racing writes cannot both succeed.
// The index of the entry that last changed an object is its resourceVersion.
package fsm
