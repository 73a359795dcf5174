// Package docs_test checks the project's Markdown: every relative link in
// README.md and docs/*.md points at a file of the repository, every
// #anchor at a heading of its target, and the README stays short.
package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines bounds README.md: it is the page for a newcomer; the rest
// belongs in docs/.
const readmeMaxLines = 250

// repoRoot walks up from the test's directory to the one holding go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// docFiles are the Markdown files checked, relative to the root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(root, f)
		files = append(files, rel)
	}
	return files
}

var (
	fenceRE    = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	linkRE     = regexp.MustCompile(`\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE   = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s>]+)>?`)
	headingRE  = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	htmlIDRE   = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// numberedLine is a line of a Markdown text and its number, from 1.
type numberedLine struct {
	n    int
	text string
}

// outsideFences returns, in order, the lines of a Markdown text that are
// not in a fenced code block.
func outsideFences(text string) []numberedLine {
	var out []numberedLine
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case fence == "":
				fence = m[1]
			case fence == m[1]:
				fence = ""
			}
			continue
		}
		if fence == "" {
			out = append(out, numberedLine{i + 1, line})
		}
	}
	return out
}

// proseLines returns the lines of a Markdown text outside fenced code
// blocks, numbered from 1, with code spans blanked out.
func proseLines(text string) map[int]string {
	out := map[int]string{}
	for _, l := range outsideFences(text) {
		out[l.n] = codeSpanRE.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat("x", len(s)) })
	}
	return out
}

// links returns each link target of a Markdown text with its line number.
func links(text string) map[int][]string {
	out := map[int][]string{}
	for n, line := range proseLines(text) {
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out[n] = append(out[n], m[1])
		}
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			out[n] = append(out[n], m[1])
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: the text as rendered, lower-cased,
// without punctuation other than '-' and '_', spaces turned into '-'.
func slug(heading string) string {
	heading = inlineLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor a Markdown text defines: its headings'
// slugs (a repeated slug gets -1, -2, ... as on GitHub) and HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range outsideFences(text) {
		line := l.text
		for _, m := range htmlIDRE.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// checkLink returns why target, linked from file (relative to root), does
// not resolve, or "" when it does.
func checkLink(root, file, target string) string {
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/#.") {
		scheme := strings.ToLower(target[:i])
		if scheme == "http" || scheme == "https" || scheme == "mailto" {
			return ""
		}
		return "a link with the scheme " + scheme + ":"
	}
	path, anchor, _ := strings.Cut(target, "#")
	if strings.HasPrefix(path, "/") {
		return "an absolute path; links are relative to the file"
	}
	dest := filepath.Join(root, file)
	if path != "" {
		dest = filepath.Join(filepath.Dir(dest), filepath.FromSlash(path))
		rel, err := filepath.Rel(root, dest)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "outside the repository"
		}
	}
	info, err := os.Stat(dest)
	if err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if info.IsDir() || !strings.HasSuffix(dest, ".md") {
		return "an anchor into something that is not a Markdown file"
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(b))[anchor] {
		return "no heading with the anchor #" + anchor
	}
	return ""
}

func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	for _, file := range docFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for n, targets := range links(string(b)) {
			for _, target := range targets {
				checked++
				if why := checkLink(root, file, target); why != "" {
					t.Errorf("%s:%d: link %q: %s", file, n, target, why)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no links at all; is the parser broken?")
	}
}

func TestDocReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into docs/", n, readmeMaxLines)
	}
}

// The checks above are only as good as their parsing: these cases pin it.
func TestLinkParsing(t *testing.T) {
	for heading, want := range map[string]string{
		"Quick start":                   "quick-start",
		"Read consistency, per request": "read-consistency-per-request",
		"`scripts/cluster.sh`":          "scriptsclustersh",
		"What bounds one client (p50)":  "what-bounds-one-client-p50",
		"snake_case and 1.0 -- x":       "snake_case-and-10----x",
		"[Linked](other.md) heading":    "linked-heading",
		"Über Größe":                    "über-größe",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}

	text := "# Title\n\n## Part\n\n## Part\n\n```\n## Not a heading\n[not](a-link.md)\n```\n" +
		"See [one](a.md#x) and `[code](b.md)`, ![img](c.png \"t\").\n[ref]: d.md\n"
	got := anchors(text)
	for _, a := range []string{"title", "part", "part-1"} {
		if !got[a] {
			t.Errorf("anchors: %q missing from %v", a, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("anchors: a heading inside a code block counted")
	}
	var all []string
	for _, ts := range links(text) {
		all = append(all, ts...)
	}
	want := map[string]bool{"a.md#x": true, "c.png": true, "d.md": true}
	if len(all) != len(want) {
		t.Errorf("links = %q, want the keys of %v", all, want)
	}
	for _, l := range all {
		if !want[l] {
			t.Errorf("links: unexpected %q", l)
		}
	}

	root := repoRoot(t)
	for target, ok := range map[string]bool{
		"docs/cli.md":             true,
		"docs/cli.md#flags":       true,
		"docs/cli.md#no-such":     false,
		"docs/missing.md":         false,
		"../outside.md":           false,
		"/etc/passwd":             false,
		"https://example.com/x#y": true,
		"#quick-start":            true,
		"examples/":               true,
	} {
		if why := checkLink(root, "README.md", target); (why == "") != ok {
			t.Errorf("checkLink(README.md, %q) = %q, want ok=%v", target, why, ok)
		}
	}
}
