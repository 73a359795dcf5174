package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// update creates the golden files of commands that have none yet. Existing
// golden files are never rewritten: the encoding of a command type, once
// in a log, must not change (a new shape gets a new type or a new tag).
var update = flag.Bool("update", false, "write missing golden files under testdata/commands")

// bigObject is longer than 127 bytes so that its length prefix takes two
// uvarint bytes.
var bigObject = func() []byte {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// allFieldCombinations returns, for typ, one command per subset of the six
// optional fields.
func allFieldCombinations(typ CommandType) []Command {
	var out []Command
	for mask := 0; mask < 1<<6; mask++ {
		c := Command{Type: typ}
		if mask&1 != 0 {
			c.Resource = "leases"
		}
		if mask&2 != 0 {
			c.Namespace = "kube-system"
		}
		if mask&4 != 0 {
			c.Name = "kube-scheduler"
		}
		if mask&8 != 0 {
			c.Object = bigObject
		}
		if mask&16 != 0 {
			c.ExpectRV = 1<<35 + 3
		}
		if mask&32 != 0 {
			c.ExpectUID = "0b1e7d64-1d6a-4a57-9a5a-4b0e5c5f2a11"
		}
		out = append(out, c)
	}
	return out
}

func describe(c Command) string {
	var parts []string
	if c.Resource != "" {
		parts = append(parts, "res")
	}
	if c.Namespace != "" {
		parts = append(parts, "ns")
	}
	if c.Name != "" {
		parts = append(parts, "name")
	}
	if c.Object != nil {
		parts = append(parts, fmt.Sprintf("obj%d", len(c.Object)))
	}
	if c.ExpectRV != 0 {
		parts = append(parts, "rv")
	}
	if c.ExpectUID != "" {
		parts = append(parts, "uid")
	}
	if len(parts) == 0 {
		parts = append(parts, "empty")
	}
	return c.Type.String() + "/" + strings.Join(parts, "+")
}

func TestCommandRoundTrip(t *testing.T) {
	var cases []Command
	for _, typ := range []CommandType{CmdCreate, CmdUpdate, CmdDelete, CmdNoop, skippable | 5} {
		cases = append(cases, allFieldCombinations(typ)...)
	}
	// Edge values of single fields.
	cases = append(cases,
		Command{Type: CmdUpdate, ExpectRV: 1},
		Command{Type: CmdUpdate, ExpectRV: 127},
		Command{Type: CmdUpdate, ExpectRV: 128},
		Command{Type: CmdUpdate, ExpectRV: math.MaxUint64},
		Command{Type: CmdCreate, Object: []byte{}},
		Command{Type: CmdCreate, Object: []byte{0}},
		Command{Type: CmdCreate, Object: bytes.Repeat([]byte{0xff}, 1<<17)},
		Command{Type: CmdDelete, Namespace: "ns-ü", Name: strings.Repeat("n", 253)},
		Command{Type: 0},
		Command{Type: 0xff, Resource: "leases"},
	)
	for _, want := range cases {
		t.Run(describe(want), func(t *testing.T) {
			data := want.Encode()
			if CommandType(data[0]) != want.Type {
				t.Fatalf("byte 0 = %#x, want type %#x", data[0], uint8(want.Type))
			}
			got, err := DecodeCommand(data)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", *got, want)
			}
			if (got.Object == nil) != (want.Object == nil) {
				t.Fatalf("Object nil-ness changed: got nil=%v want nil=%v", got.Object == nil, want.Object == nil)
			}
			if again := got.Encode(); !bytes.Equal(again, data) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, data)
			}
		})
	}
}

func TestDecodeObjectAliasesInput(t *testing.T) {
	data := (&Command{Type: CmdCreate, Resource: "leases", Object: []byte("abc")}).Encode()
	c, err := DecodeCommand(data)
	if err != nil {
		t.Fatal(err)
	}
	if cap(c.Object) != len(c.Object) {
		// A capacity beyond the value would let an append overwrite the
		// rest of the entry.
		t.Fatalf("Object has cap %d > len %d", cap(c.Object), len(c.Object))
	}
	// Resource and the other strings are copies.
	for i := range data {
		data[i] = 0
	}
	if c.Resource != "leases" {
		t.Fatalf("Resource changed with the input: %q", c.Resource)
	}
}

func TestDecodeTruncated(t *testing.T) {
	var cases []Command
	for _, typ := range []CommandType{CmdCreate, CmdUpdate, CmdDelete, CmdNoop} {
		cases = append(cases, allFieldCombinations(typ)...)
	}
	cases = append(cases, Command{Type: CmdUpdate, ExpectRV: math.MaxUint64})
	for _, c := range cases {
		t.Run(describe(c), func(t *testing.T) {
			data := c.Encode()
			// Every strict prefix is missing at least one byte the field
			// count or a length prefix announced.
			for n := 0; n < len(data); n++ {
				got, err := DecodeCommand(bytes.Clone(data[:n]))
				if err == nil {
					t.Fatalf("prefix of %d/%d bytes decoded without error: %+v", n, len(data), got)
				}
				if !errors.Is(err, errShort) {
					t.Fatalf("prefix of %d bytes: error %v does not wrap errShort", n, err)
				}
				if got != nil {
					t.Fatalf("prefix of %d bytes: non-nil command with error", n)
				}
			}
		})
	}
}

// enc helps to build command bytes by hand.
type enc []byte

func (e enc) uv(v uint64) enc { return binary.AppendUvarint(e, v) }
func (e enc) raw(b ...byte) enc {
	return append(e, b...)
}
func (e enc) field(tag uint64, v []byte) enc {
	return e.uv(tag).uv(uint64(len(v))).raw(v...)
}

func TestDecodeHandCrafted(t *testing.T) {
	rv := func(v uint64) []byte { return binary.AppendUvarint(nil, v) }
	tests := []struct {
		name    string
		data    []byte
		want    *Command
		wantErr bool
	}{
		{
			name: "known fields",
			data: enc{byte(CmdDelete)}.uv(3).
				field(tagResource, []byte("leases")).
				field(tagNamespace, []byte("ns")).
				field(tagName, []byte("x")),
			want: &Command{Type: CmdDelete, Resource: "leases", Namespace: "ns", Name: "x"},
		},
		{
			name: "fields in any order",
			data: enc{byte(CmdUpdate)}.uv(3).
				field(tagExpectRV, rv(42)).
				field(tagObject, []byte{1, 2}).
				field(tagResource, []byte("leases")),
			want: &Command{Type: CmdUpdate, Resource: "leases", Object: []byte{1, 2}, ExpectRV: 42},
		},
		{
			name: "unknown tags skipped",
			data: enc{byte(CmdUpdate)}.uv(5).
				field(tagResource, []byte("leases")).
				field(70, []byte("future field")).
				field(tagName, []byte("x")).
				field(1000, bigObject). // two-byte tag, two-byte length
				field(tagExpectUID, []byte("u1")),
			want: &Command{Type: CmdUpdate, Resource: "leases", Name: "x", ExpectUID: "u1"},
		},
		{
			name: "unknown tag with empty value",
			data: enc{byte(CmdNoop)}.uv(1).field(99, nil),
			want: &Command{Type: CmdNoop},
		},
		{
			name: "only unknown tags",
			data: enc{byte(CmdCreate)}.uv(2).field(99, []byte{0xff}).field(1<<40, []byte("x")),
			want: &Command{Type: CmdCreate},
		},
		{
			name: "zero fields",
			data: enc{byte(CmdNoop)}.uv(0),
			want: &Command{Type: CmdNoop},
		},
		{
			name:    "empty",
			data:    nil,
			wantErr: true,
		},
		{
			name:    "type only",
			data:    []byte{byte(CmdNoop)},
			wantErr: true,
		},
		{
			name:    "unknown tag value truncated",
			data:    enc{byte(CmdUpdate)}.uv(2).field(tagName, []byte("x")).uv(9).uv(10).raw('a', 'b'),
			wantErr: true,
		},
		{
			name:    "unknown tag without length",
			data:    enc{byte(CmdUpdate)}.uv(1).uv(9),
			wantErr: true,
		},
		{
			name:    "more fields announced than present",
			data:    enc{byte(CmdDelete)}.uv(2).field(tagName, []byte("x")),
			wantErr: true,
		},
		{
			name:    "expect rv empty value",
			data:    enc{byte(CmdUpdate)}.uv(1).field(tagExpectRV, nil),
			wantErr: true,
		},
		{
			name:    "expect rv unterminated uvarint",
			data:    enc{byte(CmdUpdate)}.uv(1).field(tagExpectRV, []byte{0x80, 0x80}),
			wantErr: true,
		},
		{
			name:    "length overflows",
			data:    enc{byte(CmdCreate)}.uv(1).uv(tagObject).uv(math.MaxUint64).raw(1, 2, 3),
			wantErr: true,
		},
		{
			name:    "field count is an unterminated uvarint",
			data:    []byte{byte(CmdCreate), 0x81},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCommand(tt.data)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", got)
				}
				if !errors.Is(err, errShort) {
					t.Fatalf("error %v does not wrap errShort", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCommandTypeString(t *testing.T) {
	for typ, want := range map[CommandType]string{
		CmdCreate:     "create",
		CmdUpdate:     "update",
		CmdDelete:     "delete",
		CmdNoop:       "noop",
		CmdAlarm:      "alarm",
		0:             "type-0",
		skippable | 1: "type-129",
	} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(typ), got, want)
		}
	}
}

// goldenCommands are the commands whose encodings are pinned under
// testdata/commands. Add cases; never change or remove one.
var goldenCommands = []struct {
	name string
	cmd  Command
}{
	{"create", Command{Type: CmdCreate, Resource: "leases", Object: []byte("\x0a\x10\x0a\x01x\x1a\x0bkube-system")}},
	{"create_big_object", Command{Type: CmdCreate, Resource: "leases", Object: bigObject}},
	{"update", Command{Type: CmdUpdate, Resource: "leases", Object: []byte{0x0a, 0x02, 'o', 'k'}}},
	{"update_expect_rv", Command{Type: CmdUpdate, Resource: "leases", Object: []byte{1, 2, 3}, ExpectRV: 300}},
	{"update_expect_uid", Command{Type: CmdUpdate, Resource: "leases", Object: []byte{4}, ExpectUID: "6f1c2b8e-3a9d-4c1e-8b7a-2d5e9f0a1b3c"}},
	{"update_all_fields", Command{
		Type: CmdUpdate, Resource: "leases", Namespace: "kube-system", Name: "kube-controller-manager",
		Object: []byte{9, 8, 7}, ExpectRV: math.MaxUint64, ExpectUID: "u",
	}},
	{"delete", Command{Type: CmdDelete, Resource: "leases", Namespace: "kube-node-lease", Name: "node-1"}},
	{"delete_preconditions", Command{
		Type: CmdDelete, Resource: "leases", Namespace: "default", Name: "lock",
		ExpectRV: 12345678, ExpectUID: "0b1e7d64-1d6a-4a57-9a5a-4b0e5c5f2a11",
	}},
	{"noop", Command{Type: CmdNoop}},
	{"skippable_unknown", Command{Type: skippable | 0x3f, Resource: "leases", Name: "x"}},
	{"create_quota", Command{Type: CmdCreate, Resource: "leases", Object: []byte{0x0a, 0x02, 'o', 'k'}, Quota: 2147483648}},
	{"alarm_activate", Command{Type: CmdAlarm, AlarmAction: AlarmActivate, Alarm: AlarmNoSpace}},
	{"alarm_deactivate", Command{Type: CmdAlarm, AlarmAction: AlarmDeactivate, Alarm: AlarmNoSpace}},
}

func TestGoldenCommands(t *testing.T) {
	dir := filepath.Join("testdata", "commands")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, g := range goldenCommands {
			path := filepath.Join(dir, g.name+".bin")
			if _, err := os.Stat(path); err == nil {
				continue // written once; an existing encoding is frozen
			}
			if err := os.WriteFile(path, g.cmd.Encode(), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", path)
		}
	}
	names := map[string]bool{}
	for _, g := range goldenCommands {
		names[g.name+".bin"] = true
		t.Run(g.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, g.name+".bin"))
			if err != nil {
				t.Fatalf("%v (run go test -run TestGoldenCommands -update to create a new golden file)", err)
			}
			got, err := DecodeCommand(data)
			if err != nil {
				t.Fatalf("golden file no longer decodes: %v", err)
			}
			if !reflect.DeepEqual(*got, g.cmd) {
				t.Fatalf("golden file decodes to\n%+v\nwant\n%+v", *got, g.cmd)
			}
			if enc := g.cmd.Encode(); !bytes.Equal(enc, data) {
				t.Fatalf("encoding of an existing command changed:\n got %x\nwant %x", enc, data)
			}
		})
	}
	// A golden file without its case would silently stop being checked.
	files, err := filepath.Glob(filepath.Join(dir, "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var orphans []string
	for _, f := range files {
		if !names[filepath.Base(f)] {
			orphans = append(orphans, f)
		}
	}
	slices.Sort(orphans)
	if len(orphans) > 0 {
		t.Errorf("golden files without a case in goldenCommands: %v", orphans)
	}
}
