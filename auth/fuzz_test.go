package auth

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apiserver/pkg/authentication/user"
)

// FuzzTokenFile loads arbitrary bytes as a token file. NewAuthenticator
// never panics; it fails exactly when a CSV reader finds a bad record or
// one of fewer than three columns; and every token the file lists then
// authenticates as its line's user (the last line of a token wins),
// nothing else does.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{
		tokenCSV,
		"",
		"\n",
		"tok,alice,uid\n",
		"tok,alice\n",
		"tok\n",
		`"tok,alice,uid`,
		`"a""b",alice,uid,"g1,g2"` + "\n",
		"tok,alice,uid,\"\"\n",
		",alice,uid\n",
		"tok,a,u\r\ntok,b,v\r\n",
		"tok,alice,uid\x00\n",
		"\xff\xfe,alice,uid\n",
		"a,b,c\n\"",
		"t\"ok,alice,uid\n",
		"tok,alice,uid,g\nx,y\n",
		"# comment,x,y\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		type entry struct{ name, uid string }
		want := map[string]entry{}
		var order []string
		valid := true
		rd := csv.NewReader(bytes.NewReader(data))
		rd.FieldsPerRecord = -1
		for {
			rec, err := rd.Read()
			if err == io.EOF {
				break
			}
			if err != nil || len(rec) < 3 {
				valid = false
				break
			}
			if rec[0] == "" {
				continue
			}
			if _, ok := want[rec[0]]; !ok {
				order = append(order, rec[0])
			}
			want[rec[0]] = entry{rec[1], rec[2]}
		}

		a, err := NewAuthenticator(Config{TokenAuthFile: path})
		if !valid {
			if err == nil {
				t.Fatalf("token file %q loads", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("token file %q: %v", data, err)
		}
		if _, err := a.Authenticate(credRequest("Bearer \x01absent")); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("a token the file does not hold: %v", err)
		}
		if _, err := a.Authenticate(credRequest("")); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("no credentials: %v", err)
		}
		for i, tok := range order {
			if i == 20 {
				break
			}
			if strings.IndexFunc(tok, unicode.IsSpace) >= 0 {
				continue // not sendable as one bearer field
			}
			r := credRequest("Bearer " + tok)
			u, err := a.Authenticate(r)
			if err != nil {
				t.Fatalf("token %q: %v", tok, err)
			}
			if w := want[tok]; u.GetName() != w.name || u.GetUID() != w.uid {
				t.Fatalf("token %q: user %q uid %q, want %q %q", tok, u.GetName(), u.GetUID(), w.name, w.uid)
			}
			if r.Header.Get("Authorization") != "" {
				t.Fatal("Authorization header left")
			}
		}
	})
}

// FuzzServiceAccountToken feeds arbitrary strings to the service-account
// authenticator, alone and behind a bearer header. Nothing forged from the
// seeds (tokens signed by the wrong key, expired, alg none, HS256 with the
// public key...) ever authenticates, and nothing panics.
func FuzzServiceAccountToken(f *testing.F) {
	k := testKeys()
	files := keyFiles(f)
	rsaKid, ecKid := kid(f, &k.rsa.PublicKey), kid(f, &k.ec.PublicKey)
	expired := func(c *claims) { c.pub.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)) }
	seeds := []string{
		sign(f, jose.RS256, k.rsaOther, rsaKid, boundClaims()),
		sign(f, jose.RS256, k.rsaOther, "", boundClaims()),
		sign(f, jose.ES256, k.ecOther, ecKid, boundClaims()),
		sign(f, jose.RS256, k.rsa, rsaKid, mod(expired)),
		sign(f, jose.ES256, k.ec, "", mod(expired)),
		sign(f, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { c.pub.Audience = jwt.Audience{"other"} })),
		sign(f, jose.RS256, k.rsa, "", mod(func(c *claims) { c.pub.Issuer = "https://evil.example" })),
		sign(f, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { delete(c.k8s(), "namespace") })),
		sign(f, jose.HS256, publicPEM(f, &k.rsa.PublicKey).Bytes, rsaKid, boundClaims()),
		unsigned(f, map[string]any{"alg": "none", "kid": rsaKid}, boundClaims(), ""),
		unsigned(f, map[string]any{"alg": "RS256", "kid": rsaKid}, boundClaims(), "AAAA"),
		unsigned(f, map[string]any{"alg": "ES256"}, boundClaims(), strings.Repeat("A", 86)),
	}
	seeds = append(seeds, garbageTokens...)
	for _, s := range seeds {
		f.Add(s)
	}
	sa, err := newServiceAccountTokens(files, []string{issuer, issuer2}, nil)
	if err != nil {
		f.Fatal(err)
	}
	a, err := NewAuthenticator(Config{ServiceAccountKeyFiles: files, ServiceAccountIssuers: []string{issuer, issuer2}, Anonymous: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		resp, ok, err := sa.AuthenticateToken(context.Background(), token)
		if ok || resp != nil {
			t.Fatalf("token %q authenticates as %v", token, resp.User)
		}
		_ = err
		u, err := a.Authenticate(credRequest("Bearer " + token))
		if err == nil && u.GetName() != user.Anonymous {
			t.Fatalf("token %q authenticates as %q", token, u.GetName())
		}
	})
}

// FuzzAttributes derives attributes from arbitrary methods, paths and
// queries: no panic; the user and path pass through; a non-resource
// request's verb is the lower-case method; a resource request is under
// /api or /apis with a kube verb; and the 403 for it names the user
// escaped, with the reason appended.
func FuzzAttributes(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", leases, ""},
		{"GET", leases, "watch=true&fieldSelector=metadata.name%3Dx"},
		{"DELETE", leases, "fieldSelector=metadata.name%3Dx"},
		{"PUT", leases + "/x/status", ""},
		{"GET", "/apis/coordination.k8s.io/v1/watch/namespaces/a/leases/x", ""},
		{"GET", "/apis/coordination.k8s.io/v1/watch", ""},
		{"GET", "/api/v1/namespaces", ""},
		{"GET", "/api/v1/namespaces/x/status", ""},
		{"POST", "/cluster/join", ""},
		{"get", "/metrics", "%zz"},
		{"", "", ""},
		{"GET", "//", ""},
		{"GET", "/api//v1", ""},
		{"GET", "/apis/g/v/proxy/x", ""},
		{"GET", leases, "limit=x&watch=1&fieldSelector=%3D%3D%3D"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	verbs := map[string]bool{
		"": true, "get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true,
		"delete": true, "deletecollection": true, "proxy": true, "redirect": true,
	}
	u := &user.DefaultInfo{Name: "fuzz<&>", Groups: []string{"system:authenticated"}}
	f.Fuzz(func(t *testing.T, method, path, query string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
		a, err := Attributes(r, u)
		if err != nil {
			return
		}
		if a.GetUser() != u || a.GetPath() != path {
			t.Fatalf("user %v path %q", a.GetUser(), a.GetPath())
		}
		if !a.IsResourceRequest() {
			if a.GetVerb() != strings.ToLower(method) || a.GetResource() != "" || a.GetAPIGroup() != "" || a.GetName() != "" {
				t.Fatalf("non-resource %q %q: %+v", method, path, a)
			}
		} else {
			first := strings.SplitN(strings.Trim(path, "/"), "/", 2)[0]
			if first != "api" && first != "apis" {
				t.Fatalf("resource request at %q", path)
			}
			if !verbs[a.GetVerb()] {
				t.Fatalf("verb %q for %s %q", a.GetVerb(), method, path)
			}
			if first == "api" && a.GetAPIGroup() != "" {
				t.Fatalf("group %q under /api", a.GetAPIGroup())
			}
		}
		st := Forbidden(a, "r").ErrStatus
		if st.Code != http.StatusForbidden || st.Reason != "Forbidden" {
			t.Fatalf("status %+v", st)
		}
		if !strings.Contains(st.Message, `User "fuzz&lt;&amp;&gt;" cannot `) || !strings.HasSuffix(st.Message, ": r") {
			t.Fatalf("message %q", st.Message)
		}
	})
}
