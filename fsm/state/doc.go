// Package state holds a node's in-memory replicated state: the objects, the
// applied index, read views for consistent and paginated reads, and the
// bounded event history that watches resume from.
//
// It knows nothing of Raft or HTTP: the FSM is its only writer and decides
// what each log entry does; readers take immutable snapshots.
package state
