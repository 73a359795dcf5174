package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// testState is a state built as a node builds it: leases created, renewed
// and deleted, and a Role, through the FSM.
func testState(t *testing.T) *state.Store {
	t.Helper()
	st := state.New(state.Config{})
	f := fsm.New(st, fsm.DefaultTypes(), nil)
	idx := uint64(0)
	apply := func(c *fsm.Command) uint64 {
		t.Helper()
		idx++
		res := f.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: c.Encode(), AppendedAt: time.Unix(int64(idx), 0)}).(*fsm.Result)
		if res.Err != nil {
			t.Fatalf("entry %d: %v", idx, res.Err)
		}
		return res.Object.RV
	}
	lease := func(name, holder string) []byte {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
		b, err := l.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range 5 {
		name := fmt.Sprintf("l%d", i)
		rv := apply(&fsm.Command{Type: fsm.CmdCreate, Resource: "leases", Object: lease(name, "a")})
		rv = apply(&fsm.Command{Type: fsm.CmdUpdate, Resource: "leases", Object: lease(name, "b"), ExpectRV: rv})
		if i == 4 {
			apply(&fsm.Command{Type: fsm.CmdDelete, Resource: "leases", Namespace: "ns", Name: name, ExpectRV: rv})
		}
	}
	role, err := (&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r", UID: "uid-r"}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	apply(&fsm.Command{Type: fsm.CmdCreate, Resource: "roles", Object: role})
	return st
}

// writeBackup writes a backup of st to a file and returns its path.
func writeBackup(t *testing.T, st *state.Store, meta Meta) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "backup.snap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, meta, fsm.DumpState(st).Write); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteOpenInspect(t *testing.T) {
	st := testState(t)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	path := writeBackup(t, st, Meta{Index: st.AppliedIndex(), Term: 7, Created: created, Node: "n2"})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("LHBACKUP")) {
		t.Fatalf("file starts with %q", raw[:8])
	}
	sum := sha256.Sum256(raw[:len(raw)-32])
	if !bytes.Equal(sum[:], raw[len(raw)-32:]) {
		t.Fatal("the last 32 bytes are not the SHA-256 of the rest")
	}

	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := Meta{Version: Version, Index: 12, Term: 7, Created: created, Node: "n2"}
	if f.Meta != want || f.Size != int64(len(raw)) || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("opened %+v, %d bytes, %s; want %+v, %d bytes", f.Meta, f.Size, f.SHA256, want, len(raw))
	}
	got, err := f.Decode()
	if err != nil {
		t.Fatal(err)
	}
	wantObjs, wantHistory, wantDropped, _ := st.Dump()
	objs, history, dropped, applied := got.Dump()
	if applied != 12 || dropped != wantDropped || history.Len() != wantHistory.Len() || len(objs) != len(wantObjs) {
		t.Fatalf("decoded applied %d, dropped %d, %d events, %d objects; want 12, %d, %d, %d",
			applied, dropped, history.Len(), len(objs), wantDropped, wantHistory.Len(), len(wantObjs))
	}
	for i, o := range wantObjs {
		if objs[i].Key() != o.Key() || objs[i].RV != o.RV || objs[i].UID() != o.UID() {
			t.Errorf("object %d: %s at %d, want %s at %d", i, objs[i].Key(), objs[i].RV, o.Key(), o.RV)
		}
	}

	s, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Meta != want || s.Size != f.Size || s.SHA256 != f.SHA256 || len(s.Objects) != 2 || s.Objects["leases"] != 4 || s.Objects["roles"] != 1 {
		t.Fatalf("inspect: %+v", s)
	}
	if r := s.Resources(); strings.Join(r, ",") != "leases,roles" {
		t.Errorf("resources %v", r)
	}
}

// Every byte of a backup counts: one flipped anywhere, or the file cut
// anywhere, and Open or Decode refuses it as damaged.
func TestDamagedBackups(t *testing.T) {
	st := testState(t)
	path := writeBackup(t, st, Meta{Index: st.AppliedIndex(), Term: 1, Node: "n1"})
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, data []byte) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "damaged.snap")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Inspect(p)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: inspect: %v, want a damaged backup", what, err)
		}
	}
	for _, at := range []int{0, 7, 8, 11, 12, 20, len(good) / 3, len(good) / 2, len(good) - 33, len(good) - 32, len(good) - 1} {
		bad := bytes.Clone(good)
		bad[at] ^= 0x40
		check(fmt.Sprintf("byte %d of %d flipped", at, len(good)), bad)
	}
	for _, n := range []int{0, 5, 12, 40, len(good) / 2, len(good) - 32, len(good) - 1} {
		check(fmt.Sprintf("cut to %d of %d bytes", n, len(good)), good[:n])
	}
	check("a byte appended", append(bytes.Clone(good), 0))

	// An intact checksum over a state that does not decode, or that is not
	// at the metadata's index, or a framing of another version.
	for what, tc := range map[string]struct {
		meta Meta
		body func(io.Writer) error
	}{
		"state not decodable":    {Meta{Index: 12}, func(w io.Writer) error { _, err := w.Write([]byte("LHSNAP\x04garbage")); return err }},
		"state at another index": {Meta{Index: 11}, fsm.DumpState(st).Write},
	} {
		p := filepath.Join(t.TempDir(), "b.snap")
		var buf bytes.Buffer
		if err := Write(&buf, tc.meta, tc.body); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p); err != nil {
			t.Errorf("%s: open: %v", what, err)
		}
		if _, err := Inspect(p); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: inspect: %v, want a damaged backup", what, err)
		}
	}
	newer := bytes.Replace(good[:len(good)-32], []byte(`"version":1`), []byte(`"version":2`), 1)
	sum := sha256.Sum256(newer)
	p := filepath.Join(t.TempDir(), "v2.snap")
	if err := os.WriteFile(p, append(newer, sum[:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("a backup of version 2: %v", err)
	}
}
