package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// regState is one Lease as the model sees it. RV 0 with Exists means the
// object was written by a request of unknown outcome, so its RV is not known
// yet (a later read fixes it); Floor is a lower bound for every later RV.
type regState struct {
	Exists bool
	RV     uint64
	Holder string
	Floor  uint64
}

func rvMatches(s regState, rv uint64) bool { return s.RV == rv || (s.RV == 0 && rv > s.Floor) }

// step is the CAS-register model of one Lease: its version is the
// resourceVersion.
func step(s regState, o *op) []regState {
	written := func(rv uint64) regState { return regState{true, rv, o.Holder, rv} }
	switch o.Kind {
	case opGet:
		switch o.Outcome {
		case okOK:
			if s.Exists && s.Holder == o.Got && rvMatches(s, o.RV) {
				return []regState{{true, o.RV, o.Got, max(s.Floor, o.RV)}}
			}
		case okNotFound:
			if !s.Exists {
				return []regState{s}
			}
		}
	case opCreate:
		switch o.Outcome {
		case okOK, okCreated:
			if !s.Exists && o.RV > s.Floor {
				return []regState{written(o.RV)}
			}
		case okExists:
			if s.Exists {
				return []regState{s}
			}
		case okUnknown:
			if !s.Exists {
				return []regState{s, {true, 0, o.Holder, s.Floor}}
			}
			return []regState{s}
		}
	case opUpdate:
		switch o.Outcome {
		case okOK:
			if s.Exists && rvMatches(s, o.ExpRV) && o.RV > max(s.Floor, o.ExpRV) {
				return []regState{written(o.RV)}
			}
		case okCreated:
			if !s.Exists && o.RV > s.Floor {
				return []regState{written(o.RV)}
			}
		case okNotFound:
			// kube-apiserver would create the Lease here (create on
			// update); leasehold answers 404 when the object was deleted
			// while the update was decided. A refusal: nothing written.
			if !s.Exists {
				return []regState{s}
			}
		case okConflict:
			if s.Exists && (s.RV != o.ExpRV || s.RV == 0) {
				return []regState{s}
			}
		case okUnknown:
			if !s.Exists || rvMatches(s, o.ExpRV) {
				return []regState{s, {true, 0, o.Holder, max(s.Floor, o.ExpRV)}}
			}
			return []regState{s}
		}
	case opDelete:
		gone := regState{Floor: max(s.Floor, s.RV)}
		switch o.Outcome {
		case okOK:
			if s.Exists && rvMatches(s, o.ExpRV) {
				return []regState{gone}
			}
		case okNotFound:
			if !s.Exists {
				return []regState{s}
			}
		case okConflict:
			if s.Exists && (s.RV != o.ExpRV || s.RV == 0) {
				return []regState{s}
			}
		case okUnknown:
			if s.Exists && rvMatches(s, o.ExpRV) {
				return []regState{s, gone}
			}
			return []regState{s}
		}
	}
	return nil
}

var model = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		var out []interface{}
		for _, s := range step(state.(regState), input.(*op)) {
			out = append(out, s)
		}
		return out
	},
	DescribeOperation: func(input, output interface{}) string {
		o := input.(*op)
		switch o.Kind {
		case opGet:
			return fmt.Sprintf("c%d@%s get %s -> %s rv=%d holder=%s", o.Client, o.Node, o.Key, o.Outcome, o.RV, o.Got)
		case opCreate:
			return fmt.Sprintf("c%d@%s create %s=%s -> %s rv=%d %s", o.Client, o.Node, o.Key, o.Holder, o.Outcome, o.RV, o.Detail)
		case opUpdate:
			return fmt.Sprintf("c%d@%s update %s=%s if rv=%d -> %s rv=%d %s", o.Client, o.Node, o.Key, o.Holder, o.ExpRV, o.Outcome, o.RV, o.Detail)
		default:
			return fmt.Sprintf("c%d@%s delete %s if rv=%d -> %s %s", o.Client, o.Node, o.Key, o.ExpRV, o.Outcome, o.Detail)
		}
	},
	DescribeState: func(state interface{}) string {
		s := state.(regState)
		if !s.Exists {
			return fmt.Sprintf("absent (floor %d)", s.Floor)
		}
		return fmt.Sprintf("rv=%d holder=%s", s.RV, s.Holder)
	},
}

// perKey splits the history by key: a LIST becomes one read per key (what
// it returned, or not-found) with the list's call and return times.
func perKey(ops []*op, keys []string) map[string][]porcupine.Operation {
	var end int64
	for _, o := range ops {
		end = max(end, o.Return, o.Call)
	}
	end += int64(time.Hour)
	out := map[string][]porcupine.Operation{}
	add := func(o *op) {
		ret := o.Return
		if ret < 0 {
			ret = end
		}
		out[o.Key] = append(out[o.Key], porcupine.Operation{ClientId: o.Client + 1, Input: o, Output: o, Call: o.Call, Return: ret})
	}
	for _, o := range ops {
		if o.Outcome == okFailed {
			continue
		}
		if o.Kind != opList {
			add(o)
			continue
		}
		got := map[string]lease{}
		for _, l := range o.List {
			got[l.Name] = l
		}
		for _, k := range keys {
			r := &op{Client: o.Client, Node: o.Node, Kind: opGet, Key: k, Call: o.Call, Return: o.Return, Outcome: okNotFound, Detail: "from list"}
			if l, ok := got[k]; ok {
				r.Outcome, r.RV, r.Got = okOK, l.RV, l.Holder
			}
			add(r)
		}
	}
	return out
}

// checkLinearizable runs porcupine on every key; on failure it writes the
// visualisation to dir and returns the anomalies.
func checkLinearizable(ops []*op, keys []string, dir string, timeout time.Duration) []string {
	var anomalies []string
	m := model.ToModel()
	parts := perKey(ops, keys)
	names := make([]string, 0, len(parts))
	for k := range parts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		res, info := porcupine.CheckOperationsVerbose(m, parts[k], timeout)
		if res == porcupine.Ok {
			continue
		}
		path := filepath.Join(dir, "porcupine-"+k+".html")
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if err := porcupine.VisualizePath(m, info, path); err != nil {
				path = "(visualisation failed: " + err.Error() + ")"
			}
		}
		anomalies = append(anomalies, fmt.Sprintf("key %s: porcupine %v over %d operations; visualisation: %s", k, res, len(parts[k]), path))
	}
	return anomalies
}

// checkWatches checks every watch session against the merged global event
// history (all watchers plus the acknowledged writes): ordered, unique, no
// gaps, resumable from its start RV, bookmarks never behind delivered events.
func checkWatches(ws []*watcher, ops []*op) (anomalies []string, sessions, events int) {
	type gev struct {
		Key, Holder, Type, Src string
	}
	global := map[uint64]gev{}
	addG := func(rv uint64, e gev) {
		if old, ok := global[rv]; ok {
			if old.Key != e.Key || (old.Holder != e.Holder && old.Type != "DELETED" && e.Type != "DELETED") {
				anomalies = append(anomalies, fmt.Sprintf("rv %d seen as %+v and as %+v", rv, old, e))
			}
			return
		}
		global[rv] = e
	}
	for _, o := range ops {
		if (o.Kind == opCreate || o.Kind == opUpdate) && (o.Outcome == okOK || o.Outcome == okCreated) {
			addG(o.RV, gev{Key: o.Key, Holder: o.Holder, Type: "write", Src: fmt.Sprintf("c%d", o.Client)})
		}
	}
	var all []*session
	for _, w := range ws {
		w.mu.Lock()
		all = append(all, w.sessions...)
		w.mu.Unlock()
	}
	for _, s := range all {
		for _, e := range s.Events {
			if e.Type != "BOOKMARK" {
				addG(e.RV, gev{Key: e.Key, Holder: e.Holder, Type: e.Type, Src: fmt.Sprintf("w%d", s.Watcher)})
				events++
			}
		}
	}
	rvs := make([]uint64, 0, len(global))
	for rv := range global {
		rvs = append(rvs, rv)
	}
	sort.Slice(rvs, func(i, j int) bool { return rvs[i] < rvs[j] })
	for _, s := range all {
		sessions++
		prev := s.From
		var lastEvent uint64
		i := sort.Search(len(rvs), func(i int) bool { return rvs[i] > s.From })
		for _, e := range s.Events {
			if e.Type == "BOOKMARK" {
				if e.RV < lastEvent {
					anomalies = append(anomalies, fmt.Sprintf("w%d@%s from %d: bookmark %d behind delivered event %d", s.Watcher, s.Node, s.From, e.RV, lastEvent))
				}
				prev = max(prev, e.RV)
				// Every event up to the bookmark must have been delivered.
				for i < len(rvs) && rvs[i] <= e.RV {
					if rvs[i] > lastEvent {
						anomalies = append(anomalies, fmt.Sprintf("w%d@%s from %d: bookmark %d but event rv %d (%+v) never delivered", s.Watcher, s.Node, s.From, e.RV, rvs[i], global[rvs[i]]))
					}
					i++
				}
				continue
			}
			if e.RV <= prev {
				anomalies = append(anomalies, fmt.Sprintf("w%d@%s from %d: event rv %d not after %d (out of order, duplicate or before start)", s.Watcher, s.Node, s.From, e.RV, prev))
				continue
			}
			for i < len(rvs) && rvs[i] < e.RV {
				anomalies = append(anomalies, fmt.Sprintf("w%d@%s from %d: gap: rv %d (%+v) missing before %d", s.Watcher, s.Node, s.From, rvs[i], global[rvs[i]], e.RV))
				i++
			}
			if i < len(rvs) && rvs[i] == e.RV {
				i++
			}
			prev, lastEvent = e.RV, e.RV
		}
	}
	return anomalies, sessions, events
}
