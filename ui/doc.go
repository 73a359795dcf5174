// Package ui serves the lease view: one page, embedded in the binary, that
// shows every Lease (holder, time left, renewals, transitions), each Lease's
// holder history and LeaseCandidates, and the cluster's members.
//
// # What it owns
//
// Static assets only: HTML, CSS and JavaScript, with no build step and
// nothing fetched from elsewhere at run time. The page reads its data from
// the node's own REST API (list, then watch) as any other client does, with
// the caller's credentials and under the same authorization; the package
// adds no API of its own and reads no state.
//
// # What it does not do
//
// It holds no credentials and decides nothing: the assets are served to
// anyone (httpapi lists their paths as open), and every data request the
// page makes is authenticated and authorized like kubectl's. A bearer token
// pasted into the page stays in a variable of that page: never a cookie,
// never Web Storage. The page reaches the API by URLs relative to itself,
// so it works through kubectl proxy, under its prefix, as well.
//
// assets/election.js mirrors the coordinated election's choice of a leader
// (election/strategy.go); the two must change together.
package ui
