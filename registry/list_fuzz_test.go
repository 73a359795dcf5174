package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// fuzzToken is a continue token with any content.
func fuzzToken(v string, rv int64, start string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"v":` + strconv.Quote(v) + `,"rv":` + strconv.FormatInt(rv, 10) + `,"start":` + strconv.Quote(start) + `}`))
}

var fuzzTokens = []string{
	"",
	encodeContinue(5, state.Key{Resource: "leases", Namespace: "ns", Name: "a"}),
	encodeContinue(1, state.Key{Resource: "leases", Namespace: "", Name: "x/y"}),
	encodeContinueLatest(state.Key{Resource: "leases", Namespace: "ns", Name: "a"}),
	fuzzToken("meta.k8s.io/v1", 0, "ns/a\x00"),
	fuzzToken("meta.k8s.io/v1", -7, "ns/a\x00"),
	fuzzToken("meta.k8s.io/v1", 1<<62, "ns/a\x00"),
	fuzzToken("meta.k8s.io/v1", 3, "nsa\x00"),
	fuzzToken("meta.k8s.io/v1", 3, "ns/a"),
	fuzzToken("meta.k8s.io/v1", 3, "/\x00"),
	fuzzToken("v1", 3, "ns/a\x00"),
	base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1.5,"start":"a/b\u0000"}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":99999999999999999999,"start":"a/b\u0000"}`)),
	base64.RawURLEncoding.EncodeToString([]byte(`[]`)),
	base64.StdEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":3,"start":"ns/a\u0000"}`)),
	"!!!", "eyJ2Ijo",
}

// FuzzDecodeContinue: decodeContinue never panics; a token it accepts has
// a version and a start key after which a list can go on, and one with a
// version is encoded again as the same token.
func FuzzDecodeContinue(f *testing.F) {
	for _, tok := range fuzzTokens {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, token string) {
		ct, err := decodeContinue(token)
		if err != nil {
			if ct != nil || !strings.HasPrefix(err.Error(), "continue key is not valid") {
				t.Fatalf("refused with %v and token %+v", err, ct)
			}
			return
		}
		if ct.RV == 0 || !strings.HasSuffix(ct.Start, "\x00") {
			t.Fatalf("accepted %+v", ct)
		}
		ns, name, ok := strings.Cut(strings.TrimSuffix(ct.Start, "\x00"), "/")
		if !ok {
			t.Fatalf("accepted start %q without a namespace", ct.Start)
		}
		k := state.Key{Resource: "leases", Namespace: ns, Name: name}
		again := encodeContinueLatest(k)
		if ct.RV > 0 {
			again = encodeContinue(uint64(ct.RV), k)
		}
		back, err := decodeContinue(again)
		if err != nil {
			t.Fatalf("token %+v encoded again as %q, which does not decode: %v", ct, again, err)
		}
		if want := *ct; ct.RV < 0 {
			want.RV = -1
			if *back != want {
				t.Fatalf("token %+v encoded again as %+v", want, back)
			}
		} else if *back != *ct {
			t.Fatalf("token %+v encoded again as %+v", ct, back)
		}
	})
}

// FuzzParseRV: parseRV never panics, accepts exactly the unsigned
// decimals, and refuses the rest with a 400 BadRequest naming the field
// (kube-apiserver's storage words it so, with a 500), in a message that
// does not grow past a bound with the value.
func FuzzParseRV(f *testing.F) {
	for _, s := range []string{"", "0", "1", "42", "18446744073709551615", "18446744073709551616", "-1", "+1", " 1", "1e3", "0x10", "０", strings.Repeat("9", 64) + "x", strings.Repeat("\xff", 1<<20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseRV(s)
		want, werr := strconv.ParseUint(s, 10, 64)
		if (err == nil) != (werr == nil) || (err == nil && n != want) {
			t.Fatalf("parseRV(%q) = %d, %v; ParseUint: %d, %v", s, n, err, want, werr)
		}
		if err == nil {
			return
		}
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusBadRequest || se.ErrStatus.Reason != metav1.StatusReasonBadRequest ||
			!strings.HasPrefix(se.ErrStatus.Message, "resourceVersion: Invalid value") || len(se.ErrStatus.Message) > 1024 {
			t.Fatalf("parseRV(%q): %#v", s, err)
		}
	})
}

// fuzzCluster is a member's state and nothing else: reads only.
type fuzzCluster struct{ st *state.Store }

func (c *fuzzCluster) Apply(context.Context, *fsm.Command) (*fsm.Result, error) {
	return nil, errors.New("read only")
}
func (c *fuzzCluster) EnsureCurrent(context.Context) error    { return nil }
func (c *fuzzCluster) LinearizableRead(context.Context) error { return nil }
func (c *fuzzCluster) CommitIndex() uint64                    { return c.st.AppliedIndex() }
func (c *fuzzCluster) Ready() (bool, string)                  { return true, "" }
func (c *fuzzCluster) State() *state.Store                    { return c.st }

// fuzzListStore is a store over a state with Leases in three namespaces,
// some updated or deleted, and a short history of views: pages of old
// versions are rebuilt from the history, or are gone.
func fuzzListStore(tb testing.TB) *Store {
	tb.Helper()
	st := state.New(state.Config{HistoryEvents: 40, ListSnapshots: 2})
	f := fsm.New(st, fsm.DefaultTypes(), nil)
	lease := func(ns, name, app string) []byte {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name),
			Labels: map[string]string{"app": app}}}
		b, err := l.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	var cmds []*fsm.Command
	for i, ns := range []string{"a", "b", "kube-system"} {
		for j := 0; j < 6; j++ {
			cmds = append(cmds, &fsm.Command{Type: fsm.CmdCreate, Resource: "leases", Object: lease(ns, "l"+strconv.Itoa(j), strconv.Itoa((i+j)%3))})
		}
	}
	cmds = append(cmds,
		&fsm.Command{Type: fsm.CmdUpdate, Resource: "leases", Object: lease("a", "l1", "9")},
		&fsm.Command{Type: fsm.CmdDelete, Resource: "leases", Namespace: "b", Name: "l2"},
		&fsm.Command{Type: fsm.CmdUpdate, Resource: "leases", Object: lease("kube-system", "l0", "9")},
		&fsm.Command{Type: fsm.CmdNoop},
		&fsm.Command{Type: fsm.CmdDelete, Resource: "leases", Namespace: "a", Name: "l5"},
	)
	for i, c := range cmds {
		f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: c.Encode(), AppendedAt: time.Unix(int64(i), 0)})
	}
	s := New(&fuzzCluster{st: st})
	s.RVWait = time.Millisecond
	s.ReadTimeout = time.Second
	return s
}

// FuzzListContinue lists Leases with arbitrary continue tokens,
// resourceVersions, resourceVersionMatch, limits and label selectors,
// then follows the continue tokens handed out: never a panic; a refusal
// is a Status of 400 (a bad token, or a resourceVersion that is no
// number), 410 (a version gone) or 504 (a version not reached); pages hold at most the limit, in key order, and go on after
// the last key of the page before.
func FuzzListContinue(f *testing.F) {
	for _, tok := range fuzzTokens {
		f.Add(tok, "", "", int64(0), "")
	}
	for _, rv := range []string{"", "0", "1", "12", "20", "23", "99", "x", "-1"} {
		for _, match := range []string{"", "Exact", "NotOlderThan"} {
			f.Add("", rv, match, int64(2), "app=1")
		}
	}
	f.Add("", "", "", int64(-5), "app in (0,2)")
	f.Add("", "", "", int64(1), "")
	s := fuzzListStore(f)
	f.Fuzz(func(t *testing.T, token, rv, match string, limit int64, selector string) {
		sel, err := labels.Parse(selector)
		if err != nil {
			sel = labels.Everything()
		}
		o := ListOptions{ReadOptions: ReadOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatch(match)},
			Label: sel, Field: fields.Everything(), Limit: limit, Continue: token}
		var last string
		for page := 0; page < 30; page++ {
			list, err := s.List(context.Background(), Leases, "", o)
			if err != nil {
				var se *apierrors.StatusError
				if !errors.As(err, &se) {
					t.Fatalf("list: %v (%T)", err, err)
				}
				switch se.ErrStatus.Code {
				case http.StatusBadRequest, http.StatusGone, http.StatusGatewayTimeout:
				default:
					t.Fatalf("list: %d %v", se.ErrStatus.Code, err)
				}
				return
			}
			l := list.(*coordinationv1.LeaseList)
			if limit > 0 && rv != "0" && int64(len(l.Items)) > limit {
				t.Fatalf("page of %d items, limit %d", len(l.Items), limit)
			}
			for _, it := range l.Items {
				id := it.Namespace + "/" + it.Name
				if id <= last {
					t.Fatalf("item %s after %s", id, last)
				}
				last = id
				if !sel.Matches(labels.Set(it.Labels)) {
					t.Fatalf("item %s does not match %s", id, sel)
				}
			}
			if l.Continue == "" {
				return
			}
			if _, err := decodeContinue(l.Continue); err != nil {
				t.Fatalf("handed out continue token %q, which does not decode: %v", l.Continue, err)
			}
			o = ListOptions{Label: sel, Field: fields.Everything(), Limit: limit, Continue: l.Continue}
		}
		t.Fatalf("more than 30 pages of %d", limit)
	})
}

// TestInvalidResourceVersion: the 400 quotes a short value as
// kube-apiserver's storage does, and leaves a long one out.
func TestInvalidResourceVersion(t *testing.T) {
	for _, c := range []struct{ rv, msg string }{
		{"abc", `resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
		{"-1", `resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax`},
		{strings.Repeat("7", 65), `resourceVersion: Invalid value: strconv.ParseUint: value out of range (65 bytes)`},
		{strings.Repeat("x", 1<<20), `resourceVersion: Invalid value: strconv.ParseUint: invalid syntax (1048576 bytes)`},
	} {
		_, err := parseRV(c.rv)
		var se *apierrors.StatusError
		if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusBadRequest || se.ErrStatus.Reason != metav1.StatusReasonBadRequest || se.ErrStatus.Message != c.msg {
			t.Errorf("parseRV(%.20q...): %#v, want 400 BadRequest %q", c.rv, err, c.msg)
		}
	}
}
