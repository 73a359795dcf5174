package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the page is served: Handler answers for Prefix and every
// path below it.
const Prefix = "/ui/"

// csp allows the page nothing but its own origin: scripts and styles from
// its files (no inline code), data from the node's API. img-src allows
// data: for the empty favicon that keeps browsers from asking for one.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one embedded file, ready to serve.
type asset struct {
	body        []byte
	contentType string
	etag        string
}

// files maps a request path (Prefix + name; Prefix itself for
// index.html) to its asset. Built once: the assets never change.
var files = func() map[string]asset {
	m := map[string]asset{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "assets/")
		sum := sha256.Sum256(body)
		a := asset{body: body, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if name == "index.html" {
			m[Prefix] = a
		} else {
			m[Prefix+name] = a
		}
		return nil
	})
	if err != nil {
		panic("ui: reading the embedded assets: " + err.Error())
	}
	return m
}()

// contentType is name's media type. JavaScript modules must be served as
// JavaScript (browsers refuse a module of another type under nosniff), so
// the common types are fixed here rather than left to the system's MIME
// tables.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".png":
		return "image/png"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Paths lists every path Handler serves a file at (Prefix for the page
// itself), sorted: what needs no credentials. httpapi's open paths name
// each of them (and the bare prefix); TestOpenPaths holds the two lists
// together.
func Paths() []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Handler serves the page at Prefix, its assets below it, and redirects
// the bare prefix ("/ui") to Prefix (by a relative URL). The page names
// its assets and the API by URLs relative to itself, so it works under a
// proxy's path prefix too. Anything else is 404; methods other
// than GET and HEAD are 405.
//
// Every answer is revalidated (Cache-Control: no-cache, with an ETag), so a
// node upgraded in place serves its new page at once, and carries a
// Content-Security-Policy that confines the page to its own origin.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if req.URL.Path == strings.TrimSuffix(Prefix, "/") {
			// Relative ("ui/"), so that behind a proxy that serves the API
			// under a prefix (kubectl proxy --api-prefix) the browser stays
			// under it. http.Redirect would make it absolute.
			target := path.Base(Prefix) + "/"
			if req.URL.RawQuery != "" {
				target += "?" + req.URL.RawQuery
			}
			h.Set("Location", target)
			w.WriteHeader(http.StatusMovedPermanently)
			return
		}
		a, ok := files[req.URL.Path]
		if !ok {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("ETag", a.etag)
		// ServeContent answers If-None-Match with 304 and HEAD without a
		// body; a zero modification time keeps Last-Modified out, since
		// the ETag says it better.
		http.ServeContent(w, req, "", time.Time{}, bytes.NewReader(a.body))
	})
}
