package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

const (
	ns        = "chaos"
	probeNS   = "chaos-probe"
	leasePath = "/apis/coordination.k8s.io/v1/namespaces/"
)

// Operation kinds and outcomes of the recorded history.
const (
	opGet    = "get"
	opList   = "list"
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"

	okOK       = "ok"       // 200
	okCreated  = "created"  // 201 (create, or update of a missing object)
	okNotFound = "notfound" // 404
	okConflict = "conflict" // 409 on update/delete
	okExists   = "exists"   // 409 AlreadyExists on create
	okUnknown  = "unknown"  // timeout, reset, 5xx: may or may not have happened
	okFailed   = "failed"   // a read that got no answer: dropped from the history
)

// lease is the part of a Lease the workload reads and writes.
type lease struct {
	Name   string
	RV     uint64
	Holder string
}

// op is one recorded request.
type op struct {
	Client int
	Node   string
	Kind   string
	Key    string
	ExpRV  uint64 // precondition of update/delete
	Holder string // value written by create/update
	Call   int64
	Return int64

	Outcome string
	RV      uint64  // rv of the object returned (get/create/update)
	Got     string  // holder returned by get
	List    []lease // list result
	ListRV  uint64
	Detail  string
}

type wireLease struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace,omitempty"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	} `json:"metadata"`
	Spec struct {
		HolderIdentity *string `json:"holderIdentity,omitempty"`
	} `json:"spec"`
}

func (w wireLease) lease() lease {
	rv, _ := strconv.ParseUint(w.Metadata.ResourceVersion, 10, 64)
	h := ""
	if w.Spec.HolderIdentity != nil {
		h = *w.Spec.HolderIdentity
	}
	return lease{Name: w.Metadata.Name, RV: rv, Holder: h}
}

func newWire(namespace, name, holder string, rv uint64) []byte {
	var w wireLease
	w.APIVersion, w.Kind = "coordination.k8s.io/v1", "Lease"
	w.Metadata.Name, w.Metadata.Namespace = name, namespace
	if rv != 0 {
		w.Metadata.ResourceVersion = strconv.FormatUint(rv, 10)
	}
	w.Spec.HolderIdentity = &holder
	b, _ := json.Marshal(w)
	return b
}

// epoch is the base of every Call/Return time.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

var reqClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

// do sends one request with a deadline and returns the status code (0 when
// no answer arrived) and body.
func do(ctx context.Context, method, url string, body []byte, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := reqClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

type statusBody struct {
	Reason string `json:"reason"`
}

// classify turns an answer into an outcome for a write.
func classifyWrite(kind string, code int, body []byte, err error) string {
	var oe *net.OpError
	switch {
	case err != nil && errors.As(err, &oe) && oe.Op == "dial":
		return okFailed // never reached the server: nothing written
	case err != nil || code == 0:
		return okUnknown
	case code == 200:
		return okOK
	case code == 201:
		return okCreated
	case code == 404:
		return okNotFound
	case code == 400 || code == 422:
		return okFailed // refused before anything was written
	case code == 409:
		var st statusBody
		_ = json.Unmarshal(body, &st)
		if st.Reason == "AlreadyExists" {
			return okExists
		}
		return okConflict
	default:
		return okUnknown
	}
}

// workload runs clients against the cluster and records the history.
type workload struct {
	c       *cluster
	keys    []string
	timeout time.Duration

	mu  sync.Mutex
	ops []*op
}

func (w *workload) record(o *op) {
	w.mu.Lock()
	w.ops = append(w.ops, o)
	w.mu.Unlock()
}

func (w *workload) url(n *node, name string) string {
	u := "http://" + n.apiAddr + leasePath + ns + "/leases"
	if name != "" {
		u += "/" + name
	}
	return u
}

// client is one workload client loop.
func (w *workload) client(ctx context.Context, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	lastRV := map[string]uint64{}
	seq := 0
	for ctx.Err() == nil {
		n := w.c.nodes[rng.IntN(len(w.c.nodes))]
		key := w.keys[rng.IntN(len(w.keys))]
		seq++
		holder := fmt.Sprintf("c%d-%d", id, seq)
		o := &op{Client: id, Node: n.name, Key: key}
		p := rng.IntN(100)
		switch {
		case p < 20:
			o.Kind = opGet
		case p < 30:
			o.Kind = opList
			o.Key = ""
		case p < 45:
			o.Kind = opCreate
			o.Holder = holder
		case p < 85:
			o.Kind = opUpdate
			o.Holder = holder
			o.ExpRV = lastRV[key]
			if o.ExpRV == 0 {
				o.Kind = opGet
				o.Holder = ""
			}
		default:
			o.Kind = opDelete
			o.ExpRV = lastRV[key]
			if o.ExpRV == 0 {
				o.Kind = opGet
			}
		}
		o.Call = now()
		var code int
		var body []byte
		var err error
		switch o.Kind {
		case opGet:
			code, body, err = do(ctx, "GET", w.url(n, key), nil, w.timeout)
		case opList:
			code, body, err = do(ctx, "GET", w.url(n, ""), nil, w.timeout)
		case opCreate:
			code, body, err = do(ctx, "POST", w.url(n, ""), newWire(ns, key, holder, 0), w.timeout)
		case opUpdate:
			code, body, err = do(ctx, "PUT", w.url(n, key), newWire(ns, key, holder, o.ExpRV), w.timeout)
		case opDelete:
			pre, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "DeleteOptions",
				"preconditions": map[string]string{"resourceVersion": strconv.FormatUint(o.ExpRV, 10)}})
			code, body, err = do(ctx, "DELETE", w.url(n, key), pre, w.timeout)
		}
		o.Return = now()
		if ctx.Err() != nil && err != nil {
			// Cancelled by the end of the run: unknown for writes.
			err = ctx.Err()
		}
		if err != nil {
			o.Detail = err.Error()
		} else if code >= 300 {
			o.Detail = fmt.Sprintf("%d %s", code, bytes.TrimSpace(body))
		}
		switch o.Kind {
		case opGet:
			switch {
			case err == nil && code == 200:
				var wl wireLease
				if json.Unmarshal(body, &wl) != nil {
					o.Outcome = okFailed
					break
				}
				l := wl.lease()
				o.Outcome, o.RV, o.Got = okOK, l.RV, l.Holder
				lastRV[key] = l.RV
			case err == nil && code == 404:
				o.Outcome = okNotFound
				delete(lastRV, key)
			default:
				o.Outcome = okFailed
			}
		case opList:
			var lst struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
				Items []wireLease `json:"items"`
			}
			if err == nil && code == 200 && json.Unmarshal(body, &lst) == nil {
				o.Outcome = okOK
				o.ListRV, _ = strconv.ParseUint(lst.Metadata.ResourceVersion, 10, 64)
				for _, it := range lst.Items {
					o.List = append(o.List, it.lease())
				}
			} else {
				o.Outcome = okFailed
			}
		default:
			o.Outcome = classifyWrite(o.Kind, code, body, err)
			if o.Outcome == okOK || o.Outcome == okCreated {
				if o.Kind == opDelete {
					delete(lastRV, key)
				} else {
					var wl wireLease
					if json.Unmarshal(body, &wl) == nil {
						o.RV = wl.lease().RV
						lastRV[key] = o.RV
					} else {
						o.Outcome = okUnknown
					}
				}
			}
		}
		if o.Outcome == okUnknown {
			o.Return = -1 // may take effect any time after Call
		}
		w.record(o)
		time.Sleep(time.Duration(20+rng.IntN(30)) * time.Millisecond)
	}
}

// finalReads appends a linearizable GET of every key on every node to the
// history, retrying until each answers: with the porcupine check this is
// the "no acknowledged write lost" check.
func (w *workload) finalReads(ctx context.Context) error {
	for _, n := range w.c.nodes {
		for _, key := range w.keys {
			var last string
			for attempt := 0; ; attempt++ {
				o := &op{Client: -1, Node: n.name, Kind: opGet, Key: key, Call: now()}
				code, body, err := do(ctx, "GET", w.url(n, key), nil, 10*time.Second)
				o.Return = now()
				if err == nil && code == 200 {
					var wl wireLease
					if json.Unmarshal(body, &wl) == nil {
						l := wl.lease()
						o.Outcome, o.RV, o.Got = okOK, l.RV, l.Holder
						w.record(o)
						break
					}
				}
				if err == nil && code == 404 {
					o.Outcome = okNotFound
					w.record(o)
					break
				}
				last = fmt.Sprintf("%d %v %s", code, err, body)
				if attempt > 100 {
					return fmt.Errorf("final read of %s on %s: %s", key, n.name, last)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	return nil
}

// localState lists the namespace from n's local state (resourceVersion=0).
func (w *workload) localState(ctx context.Context, n *node) (map[string]lease, error) {
	code, body, err := do(ctx, "GET", w.url(n, "")+"?resourceVersion=0", nil, 10*time.Second)
	if err != nil || code != 200 {
		return nil, fmt.Errorf("list on %s: %d %v %s", n.name, code, err, body)
	}
	var lst struct {
		Items []wireLease `json:"items"`
	}
	if err := json.Unmarshal(body, &lst); err != nil {
		return nil, err
	}
	m := map[string]lease{}
	for _, it := range lst.Items {
		l := it.lease()
		m[l.Name] = l
	}
	return m, nil
}

// probeWrite creates one object in the probe namespace through any node,
// retrying until it succeeds or timeout; it returns how long it took.
func probeWrite(ctx context.Context, c *cluster, rng *rand.Rand, seq *int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		*seq++
		n := c.nodes[rng.IntN(len(c.nodes))]
		name := fmt.Sprintf("p%d", *seq)
		code, _, err := do(ctx, "POST", "http://"+n.apiAddr+leasePath+probeNS+"/leases", newWire(probeNS, name, "probe", 0), 2*time.Second)
		if err == nil && code == 201 {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return time.Since(start), fmt.Errorf("no write accepted within %v (last: %d %v)", timeout, code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --------------------------------------------------------------- watchers

type watchEvent struct {
	Type   string
	RV     uint64
	Key    string
	Holder string
}

// session is one watch request: started at From, the events and bookmarks
// in arrival order.
type session struct {
	Watcher int
	Node    string
	From    uint64
	Events  []watchEvent // bookmarks have Type BOOKMARK
	End     string
}

type watcher struct {
	w        *workload
	id       int
	mu       sync.Mutex
	sessions []*session
	relists  int
}

func (wt *watcher) run(ctx context.Context, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1000+uint64(wt.id)))
	var from uint64
	last := -1
	for ctx.Err() == nil {
		i := rng.IntN(3)
		if i == last {
			i = (i + 1) % 3
		}
		last = i
		n := wt.w.c.nodes[i]
		if from == 0 {
			code, body, err := do(ctx, "GET", wt.w.url(n, ""), nil, 5*time.Second)
			var lst struct {
				Metadata struct {
					ResourceVersion string `json:"resourceVersion"`
				} `json:"metadata"`
			}
			if err != nil || code != 200 || json.Unmarshal(body, &lst) != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			from, _ = strconv.ParseUint(lst.Metadata.ResourceVersion, 10, 64)
			wt.relists++
			continue
		}
		s := &session{Watcher: wt.id, Node: n.name, From: from}
		wt.mu.Lock()
		wt.sessions = append(wt.sessions, s)
		wt.mu.Unlock()
		gone := wt.watch(ctx, n, s, 3+rng.IntN(8))
		if gone {
			from = 0
			continue
		}
		for _, e := range s.Events {
			if e.RV > from {
				from = e.RV
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watch runs one watch request into s; it reports whether the server said
// 410 Gone (relist needed).
func (wt *watcher) watch(ctx context.Context, n *node, s *session, timeoutSec int) bool {
	u := fmt.Sprintf("%s?watch=1&allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=%d", wt.w.url(n, ""), s.From, timeoutSec)
	cctx, cancel := context.WithTimeout(ctx, time.Duration(timeoutSec+5)*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, "GET", u, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := reqClient.Do(req)
	if err != nil {
		s.End = err.Error()
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == 410 {
		s.End = "410"
		return true
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		s.End = fmt.Sprintf("%d %s", resp.StatusCode, b)
		return false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			s.End = "bad line"
			return false
		}
		if ev.Type == "ERROR" {
			var st struct {
				Code int `json:"code"`
			}
			_ = json.Unmarshal(ev.Object, &st)
			s.End = "ERROR " + string(ev.Object)
			return st.Code == 410
		}
		var wl wireLease
		if json.Unmarshal(ev.Object, &wl) != nil {
			s.End = "bad object"
			return false
		}
		l := wl.lease()
		wt.mu.Lock()
		s.Events = append(s.Events, watchEvent{Type: ev.Type, RV: l.RV, Key: l.Name, Holder: l.Holder})
		wt.mu.Unlock()
	}
	s.End = fmt.Sprint("closed: ", sc.Err())
	return false
}
