package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/cli.md documents every flag in a table row of its own:
//
//	| `--name NAME` | `node1` | meaning |
//
// The first cell is the flag line of `leasehold --help` (the flag and its
// argument placeholder, or `--help`, `-h`), the second the default exactly
// as --help prints it (backquotes optional; `none` where --help says none;
// empty for --help itself). Any table row of docs/cli.md whose first cell
// starts with `--` is such a row. TestCLIDocMatchesHelp fails when --help
// prints a flag that has no row, when a row names a flag that --help does
// not print, or when a row's argument or default differs from --help's.

// clidocFlag is one flag as --help prints it or as docs/cli.md documents it.
type clidocFlag struct {
	line string // "--name NAME", "--help, -h"
	def  string // "node1", "none"; "" when no default is printed
	env  string // LEASEHOLD_NAME, from --help only
}

var (
	clidocHelpFlagRE = regexp.MustCompile(`^  (--([a-z0-9-]+)(?:, -[a-z])?(?: \S+)?)$`)
	clidocHelpDefRE  = regexp.MustCompile(`^\s+\(default: (.*); env (\S+)\)$`)
	clidocRowRE      = regexp.MustCompile("^\\|\\s*`--([a-z0-9-]+)")
)

// clidocHelp runs `leasehold --help` and returns its flags by name.
func clidocHelp(t *testing.T) (map[string]clidocFlag, []string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--help: exit status %d, want 0 (stderr %q)", code, stderr.String())
	}
	flags := map[string]clidocFlag{}
	var order []string
	current := ""
	for _, line := range strings.Split(stdout.String(), "\n") {
		if m := clidocHelpFlagRE.FindStringSubmatch(line); m != nil {
			current = m[2]
			if _, dup := flags[current]; dup {
				t.Fatalf("--help prints --%s twice", current)
			}
			flags[current] = clidocFlag{line: m[1]}
			order = append(order, current)
			continue
		}
		if m := clidocHelpDefRE.FindStringSubmatch(line); m != nil && current != "" {
			f := flags[current]
			f.def, f.env = m[1], m[2]
			flags[current] = f
		}
	}
	if len(flags) < 2 {
		t.Fatalf("found %d flags in --help; has its format changed?\n%s", len(flags), stdout.String())
	}
	return flags, order
}

// clidocRows reads the flag rows of docs/cli.md.
func clidocRows(t *testing.T) map[string]clidocFlag {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "cli.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]clidocFlag{}
	for i, line := range strings.Split(string(b), "\n") {
		m := clidocRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := clidocCells(line)
		if len(cells) < 3 {
			t.Errorf("%s:%d: a flag row needs three cells (flag, default, meaning): %s", path, i+1, line)
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("%s:%d: --%s has a second row", path, i+1, m[1])
		}
		unquote := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "`", "")) }
		rows[m[1]] = clidocFlag{line: unquote(cells[0]), def: unquote(cells[1])}
	}
	return rows
}

// clidocCells splits a Markdown table row at the pipes that are not
// escaped, dropping the empty cells before the first and after the last.
func clidocCells(line string) []string {
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	cells = append(cells, cur.String())
	if len(cells) > 0 && strings.TrimSpace(cells[0]) == "" {
		cells = cells[1:]
	}
	if len(cells) > 0 && strings.TrimSpace(cells[len(cells)-1]) == "" {
		cells = cells[:len(cells)-1]
	}
	return cells
}

func TestCLIDocMatchesHelp(t *testing.T) {
	help, order := clidocHelp(t)
	rows := clidocRows(t)
	for _, name := range order {
		h := help[name]
		d, ok := rows[name]
		if !ok {
			t.Errorf("--help prints --%s (%q), but docs/cli.md has no row for it", name, h.line)
			continue
		}
		if d.line != h.line {
			t.Errorf("docs/cli.md documents %q, --help prints %q", d.line, h.line)
		}
		if d.def != h.def {
			t.Errorf("--%s: docs/cli.md gives the default %q, --help %q", name, d.def, h.def)
		}
		if h.def != "" && h.env != cfgEnvName(name) {
			t.Errorf("--%s: --help names the variable %s, docs/cli.md's rule gives %s", name, h.env, cfgEnvName(name))
		}
	}
	for name := range rows {
		if _, ok := help[name]; !ok {
			t.Errorf("docs/cli.md documents --%s, which --help does not print", name)
		}
	}
}

// The parser above must see what it is meant to see, or the test above
// would pass on nothing.
func TestCLIDocParsers(t *testing.T) {
	help, _ := clidocHelp(t)
	if f := help["api-addr"]; f.line != "--api-addr HOST:PORT" || f.def != cfgDefaultAPIAddr || f.env != "LEASEHOLD_API_ADDR" {
		t.Errorf("--help's --api-addr parsed as %+v", f)
	}
	if f, ok := help["help"]; !ok || f.line != "--help, -h" || f.def != "" {
		t.Errorf("--help's --help parsed as %+v (found %v)", f, ok)
	}
	got := clidocCells("| `--a B` | `x\\|y` | meaning |")
	if len(got) != 3 || got[1] != " `x|y` " {
		t.Errorf("clidocCells = %q", got)
	}
	if rows := clidocRows(t); len(rows) < len(help) {
		t.Errorf("docs/cli.md has %d flag rows, --help prints %d flags", len(rows), len(help))
	}
}
