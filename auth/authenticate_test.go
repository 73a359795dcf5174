package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/leasehold/leasehold/internal/testpki"
)

// want is the identity a request must authenticate as. Groups are exact
// and in order; Extra is exact (nil and empty are the same).
type want struct {
	name   string
	uid    string
	groups []string
	extra  map[string][]string
}

func checkUser(t *testing.T, got user.Info, w want) {
	t.Helper()
	if got == nil {
		t.Fatalf("user is nil, want %q", w.name)
	}
	if got.GetName() != w.name || got.GetUID() != w.uid {
		t.Errorf("user %q uid %q, want %q uid %q", got.GetName(), got.GetUID(), w.name, w.uid)
	}
	if !slices.Equal(got.GetGroups(), w.groups) {
		t.Errorf("user %q groups %q, want %q", got.GetName(), got.GetGroups(), w.groups)
	}
	if g := got.GetExtra(); (len(g) != 0 || len(w.extra) != 0) && !maps.EqualFunc(g, w.extra, slices.Equal) {
		t.Errorf("user %q extra %q, want %q", got.GetName(), g, w.extra)
	}
}

func checkAnonymous(t *testing.T, got user.Info, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("want system:anonymous, got error %v", err)
	}
	checkUser(t, got, want{name: "system:anonymous", groups: []string{"system:unauthenticated"}})
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// request is a Lease request carrying the Authorization header authz (if
// any) over a TLS connection presenting certs (if any).
func credRequest(authz string, certs ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/default/leases", nil)
	if authz != "" {
		r.Header.Set("Authorization", authz)
	}
	if certs != nil {
		r.TLS = &tls.ConnectionState{PeerCertificates: certs}
	}
	return r
}

func credentialID(c *x509.Certificate) map[string][]string {
	sum := sha256.Sum256(c.Raw)
	return map[string][]string{"authentication.kubernetes.io/credential-id": {"X509SHA256=" + hex.EncodeToString(sum[:])}}
}

func certUser(c *testpki.Cert) want {
	return want{
		name:   c.Leaf.Subject.CommonName,
		groups: append(slices.Clone(c.Leaf.Subject.Organization), "system:authenticated"),
		extra:  credentialID(c.Leaf),
	}
}

const tokenCSV = `tok-alice,alice,uid-alice,"admins,dev"
tok-bob,bob,uid-bob
tok-root,root,uid-root,system:masters
"tok,quoted",carol,uid-carol
,nobody,uid-nobody
tok-dup,first,uid-1
tok-dup,second,uid-2
tok-spc, spaced , uid-s ,"a, b"
`

var (
	alice = want{name: "alice", uid: "uid-alice", groups: []string{"admins", "dev", "system:authenticated"}}
	bob   = want{name: "bob", uid: "uid-bob", groups: []string{"system:authenticated"}}
)

// intermediateCA makes a CA signed by root, as a testpki.CA that issues
// certificates chaining to root through it.
func intermediateCA(t *testing.T, root *testpki.CA) *testpki.CA {
	t.Helper()
	key := root.Issue(t, "unused", nil).Key // a fresh P-256 key
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(0).SetBytes(randomBytes(t, 16)),
		Subject:               pkix.Name{CommonName: "intermediate CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, root.Cert, key.Public(), root.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testpki.CA{Cert: cert, Key: key, Dir: t.TempDir()}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[0] |= 0x40 // never zero, never negative
	b[0] &= 0x7f
	return b
}

// TestUnion runs kube-apiserver's union (client certificate, then the token
// file) over every kind of credential, with anonymous requests refused and
// allowed. A request nothing recognised is anonymous only when allowed; a
// request whose credential failed is refused either way.
func TestUnion(t *testing.T) {
	root, other := testpki.NewCA(t), testpki.NewCA(t)
	bundled := testpki.NewCA(t) // a second CA in the client-CA file
	caFile := writeFile(t, "client-ca.crt", string(root.CertPEM())+string(bundled.CertPEM()))
	tokenFile := writeFile(t, "tokens.csv", tokenCSV)

	clientAuth := testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth)
	aliceCert := root.Issue(t, "alice", []string{"admins", "dev"}, clientAuth)
	masterCert := root.Issue(t, "admin", []string{"system:masters"}, clientAuth)
	bundledCert := bundled.Issue(t, "dave", nil, clientAuth)
	bothEKUs := root.Issue(t, "n1", nil) // serverAuth and clientAuth
	noEKU := root.Issue(t, "legacy", nil, testpki.WithExtKeyUsage())
	anyEKU := root.Issue(t, "anyuse", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageAny))
	noCN := root.Issue(t, "", []string{"admins"}, clientAuth)
	foreign := other.Issue(t, "alice", []string{"system:masters"}, clientAuth)
	expired := root.Issue(t, "alice", nil, clientAuth, testpki.Expired())
	notYet := root.Issue(t, "alice", nil, clientAuth, testpki.WithValidity(time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)))
	serverOnly := root.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	// The client CA's own certificate is not a client certificate of it
	// unless it verifies like one; a self-signed copy from elsewhere is not.
	selfSigned := testpki.NewCA(t).Cert

	inter := intermediateCA(t, root)
	chained := inter.Issue(t, "erin", []string{"ops"}, clientAuth)
	// A leaf posing as an intermediate: it has no CA basic constraints.
	fakeInter := &testpki.CA{Cert: aliceCert.Leaf, Key: aliceCert.Key, Dir: t.TempDir()}
	forged := fakeInter.Issue(t, "mallory", []string{"system:masters"}, clientAuth)

	cases := []struct {
		name  string
		authz string
		certs []*x509.Certificate
		want  *want // the identity; nil: not authenticated by a credential
		fails bool  // a credential was presented and failed
	}{
		{name: "no credentials"},
		{name: "TLS without a client certificate", certs: []*x509.Certificate{}},

		// Client certificates.
		{name: "client certificate", certs: []*x509.Certificate{aliceCert.Leaf}, want: ptr(certUser(aliceCert))},
		{name: "system:masters certificate", certs: []*x509.Certificate{masterCert.Leaf}, want: ptr(certUser(masterCert))},
		{name: "certificate of the second CA in the file", certs: []*x509.Certificate{bundledCert.Leaf}, want: ptr(certUser(bundledCert))},
		{name: "serverAuth and clientAuth", certs: []*x509.Certificate{bothEKUs.Leaf}, want: ptr(certUser(bothEKUs))},
		// crypto/x509: no extended key usage at all is any usage.
		{name: "no extended key usage", certs: []*x509.Certificate{noEKU.Leaf}, want: ptr(certUser(noEKU))},
		{name: "any extended key usage", certs: []*x509.Certificate{anyEKU.Leaf}, want: ptr(certUser(anyEKU))},
		{name: "through an intermediate", certs: []*x509.Certificate{chained.Leaf, inter.Cert}, want: ptr(certUser(chained))},
		{name: "empty CN", certs: []*x509.Certificate{noCN.Leaf}},
		{name: "foreign CA", certs: []*x509.Certificate{foreign.Leaf}, fails: true},
		{name: "foreign CA with the CA appended", certs: []*x509.Certificate{foreign.Leaf, other.Cert}, fails: true},
		{name: "self-signed CA certificate", certs: []*x509.Certificate{selfSigned}, fails: true},
		{name: "expired", certs: []*x509.Certificate{expired.Leaf}, fails: true},
		{name: "not yet valid", certs: []*x509.Certificate{notYet.Leaf}, fails: true},
		{name: "serverAuth only", certs: []*x509.Certificate{serverOnly.Leaf}, fails: true},
		{name: "intermediate missing", certs: []*x509.Certificate{chained.Leaf}, fails: true},
		{name: "leaf posing as an intermediate", certs: []*x509.Certificate{forged.Leaf, aliceCert.Leaf}, fails: true},

		// Bearer tokens from the token file.
		{name: "token", authz: "Bearer tok-alice", want: &alice},
		{name: "token without groups", authz: "Bearer tok-bob", want: &bob},
		{name: "token of a system:masters user", authz: "Bearer tok-root", want: &want{name: "root", uid: "uid-root", groups: []string{"system:masters", "system:authenticated"}}},
		{name: "lower-case scheme", authz: "bearer tok-alice", want: &alice},
		{name: "upper-case scheme", authz: "BEARER tok-alice", want: &alice},
		{name: "surrounding spaces", authz: "  Bearer tok-alice  ", want: &alice},
		// bearertoken reads the second space-separated field.
		{name: "text after the token", authz: "Bearer tok-alice trailing", want: &alice},
		{name: "quoted CSV token", authz: "Bearer tok,quoted", want: &want{name: "carol", uid: "uid-carol", groups: []string{"system:authenticated"}}},
		{name: "duplicate token: the last line wins", authz: "Bearer tok-dup", want: &want{name: "second", uid: "uid-2", groups: []string{"system:authenticated"}}},
		{name: "CSV fields are not trimmed", authz: "Bearer tok-spc", want: &want{name: " spaced ", uid: " uid-s ", groups: []string{"a", " b", "system:authenticated"}}},
		{name: "two spaces before the token", authz: "Bearer  tok-alice"},
		{name: "scheme alone", authz: "Bearer"},
		{name: "scheme and a space", authz: "Bearer "},
		{name: "tab after the scheme", authz: "Bearer\ttok-alice"},
		{name: "basic credentials", authz: "Basic YWxpY2U6dG9rLWFsaWNl"},
		{name: "other scheme", authz: "Token tok-alice"},
		{name: "token without a scheme", authz: "tok-alice"},
		{name: "unknown token", authz: "Bearer nope", fails: true},
		{name: "token differing in case", authz: "Bearer TOK-ALICE", fails: true},
		{name: "prefix of a token", authz: "Bearer tok-al", fails: true},
		{name: "token with a suffix", authz: "Bearer tok-alice,", fails: true},
		{name: "user name as token", authz: "Bearer alice", fails: true},
		{name: "uid as token", authz: "Bearer uid-alice", fails: true},
		{name: "CSV line as token", authz: "Bearer tok-bob,bob,uid-bob", fails: true},

		// Both: the certificate is asked first, the first success decides.
		{name: "certificate and token", authz: "Bearer tok-bob", certs: []*x509.Certificate{aliceCert.Leaf}, want: ptr(certUser(aliceCert))},
		{name: "certificate and unknown token", authz: "Bearer nope", certs: []*x509.Certificate{aliceCert.Leaf}, want: ptr(certUser(aliceCert))},
		{name: "expired certificate and token", authz: "Bearer tok-bob", certs: []*x509.Certificate{expired.Leaf}, want: &bob},
		{name: "foreign certificate and token", authz: "Bearer tok-bob", certs: []*x509.Certificate{foreign.Leaf}, want: &bob},
		{name: "serverAuth certificate and token", authz: "Bearer tok-bob", certs: []*x509.Certificate{serverOnly.Leaf}, want: &bob},
		{name: "empty-CN certificate and token", authz: "Bearer tok-bob", certs: []*x509.Certificate{noCN.Leaf}, want: &bob},
		{name: "empty-CN certificate and unknown token", authz: "Bearer nope", certs: []*x509.Certificate{noCN.Leaf}, fails: true},
		{name: "foreign certificate and unknown token", authz: "Bearer nope", certs: []*x509.Certificate{foreign.Leaf}, fails: true},
		{name: "foreign certificate and basic credentials", authz: "Basic YWxpY2U6dG9rLWFsaWNl", certs: []*x509.Certificate{foreign.Leaf}, fails: true},
	}
	for _, anonymous := range []bool{false, true} {
		a, err := NewAuthenticator(Config{ClientCAFile: caFile, TokenAuthFile: tokenFile, Anonymous: anonymous})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(c.name+map[bool]string{false: "", true: "/anonymous"}[anonymous], func(t *testing.T) {
				r := credRequest(c.authz, c.certs...)
				u, err := a.Authenticate(r)
				switch {
				case c.want != nil:
					if err != nil {
						t.Fatalf("error %v, want %q", err, c.want.name)
					}
					checkUser(t, u, *c.want)
					if h := r.Header.Get("Authorization"); h != "" {
						t.Errorf("Authorization header %q left on an authenticated request", h)
					}
				case c.fails || !anonymous:
					if !errors.Is(err, ErrUnauthorized) || u != nil {
						t.Fatalf("got %v, %v; want ErrUnauthorized", u, err)
					}
					if err.Error() != "Unauthorized" {
						t.Errorf("error text %q tells more than kube-apiserver's", err)
					}
				default:
					checkAnonymous(t, u, err)
				}
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestAuthorizationHeaderRemoved: a handler never sees the credential of a
// request that got in, whatever let it in (kube-apiserver's
// WithAuthentication deletes it after any successful authentication,
// anonymous included).
func TestAuthorizationHeaderRemoved(t *testing.T) {
	tokenFile := writeFile(t, "tokens.csv", tokenCSV)
	cases := []struct {
		name  string
		cfg   Config
		authz string
	}{
		{"token", Config{TokenAuthFile: tokenFile}, "Bearer tok-alice"},
		{"anonymous with a basic header", Config{TokenAuthFile: tokenFile, Anonymous: true}, "Basic YWxpY2U6cHc="},
		{"anonymous with an ignored bearer header", Config{TokenAuthFile: tokenFile, Anonymous: true}, "Bearer  tok-alice"},
		{"nothing configured", Config{}, "Bearer tok-alice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAuthenticator(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := credRequest(c.authz)
			if _, err := a.Authenticate(r); err != nil {
				t.Fatal(err)
			}
			if h := r.Header.Get("Authorization"); h != "" {
				t.Errorf("Authorization header %q left on the request", h)
			}
		})
	}
	// A refused request keeps it: nothing after authentication runs.
	a, err := NewAuthenticator(Config{TokenAuthFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(credRequest("Bearer nope")); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("unknown token: %v", err)
	}
}

// TestNothingConfigured: a node with no authenticator is open: every
// request is system:anonymous, whatever it presents, with or without
// Anonymous.
func TestNothingConfigured(t *testing.T) {
	ca := testpki.NewCA(t)
	foreign := ca.Issue(t, "alice", []string{"system:masters"})
	expired := ca.Issue(t, "alice", nil, testpki.Expired())
	for _, cfg := range []Config{{}, {Anonymous: true}, {ServiceAccountIssuers: []string{"https://issuer"}, APIAudiences: []string{"x"}}} {
		if cfg.Configured() {
			t.Fatalf("%+v is configured", cfg)
		}
		a, err := NewAuthenticator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.ClientCAs() != nil {
			t.Error("ClientCAs without a client CA file")
		}
		for _, r := range []*http.Request{
			credRequest(""),
			credRequest("Bearer whatever"),
			credRequest("Basic YWxpY2U6cHc="),
			credRequest("", foreign.Leaf),
			credRequest("Bearer x", expired.Leaf),
		} {
			u, err := a.Authenticate(r)
			checkAnonymous(t, u, err)
			if IsMaster(u) {
				t.Error("anonymous is a master")
			}
		}
	}
}

func TestConfigured(t *testing.T) {
	cases := []struct {
		cfg  Config
		want bool
	}{
		{Config{}, false},
		{Config{Anonymous: true}, false},
		{Config{ServiceAccountIssuers: []string{"i"}, APIAudiences: []string{"a"}}, false},
		{Config{ClientCAFile: "ca"}, true},
		{Config{TokenAuthFile: "t"}, true},
		{Config{ServiceAccountKeyFiles: []string{"k"}}, true},
	}
	for _, c := range cases {
		if got := c.cfg.Configured(); got != c.want {
			t.Errorf("%+v.Configured() = %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestOnlyClientCertificates: without a token authenticator no bearer token
// is a credential anyone recognises.
func TestOnlyClientCertificates(t *testing.T) {
	ca := testpki.NewCA(t)
	alice := ca.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	for _, anonymous := range []bool{false, true} {
		a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile, Anonymous: anonymous})
		if err != nil {
			t.Fatal(err)
		}
		u, err := a.Authenticate(credRequest("Bearer tok-alice"))
		if anonymous {
			checkAnonymous(t, u, err)
		} else if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("bearer token with only client certificates: %v, %v", u, err)
		}
		u, err = a.Authenticate(credRequest("Bearer tok-alice", alice.Leaf))
		if err != nil {
			t.Fatal(err)
		}
		checkUser(t, u, certUser(alice))
	}
}

// TestClientCAs: the pool a TLS server asks client certificates of is the
// client CA file's, and there is none without one.
func TestClientCAs(t *testing.T) {
	ca, other := testpki.NewCA(t), testpki.NewCA(t)
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	pool := a.ClientCAs()
	if pool == nil {
		t.Fatal("ClientCAs is nil with a client CA file")
	}
	if !pool.Equal(ca.Pool()) {
		t.Error("ClientCAs is not the CA file's pool")
	}
	opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := ca.Issue(t, "alice", nil).Leaf.Verify(opts); err != nil {
		t.Errorf("the CA's certificate does not verify against ClientCAs: %v", err)
	}
	if _, err := other.Issue(t, "alice", nil).Leaf.Verify(opts); err == nil {
		t.Error("another CA's certificate verifies against ClientCAs")
	}

	tokenFile := writeFile(t, "tokens.csv", tokenCSV)
	a, err = NewAuthenticator(Config{TokenAuthFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	if a.ClientCAs() != nil {
		t.Error("ClientCAs is not nil without a client CA file")
	}
}

// TestNewAuthenticatorErrors: files that cannot be what they should be
// stop the node from starting.
func TestNewAuthenticatorErrors(t *testing.T) {
	ca := testpki.NewCA(t)
	cert := ca.Issue(t, "alice", nil)
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"missing client CA file", Config{ClientCAFile: missing}, "client CA file"},
		{"empty client CA file", Config{ClientCAFile: writeFile(t, "ca.crt", "")}, "no PEM certificates"},
		{"client CA file of text", Config{ClientCAFile: writeFile(t, "ca.crt", "not a certificate\n")}, "no PEM certificates"},
		{"client CA file holding a key", Config{ClientCAFile: cert.KeyFile}, "no PEM certificates"},
		{"client CA file with a corrupt certificate", Config{ClientCAFile: writeFile(t, "ca.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, "no PEM certificates"},
		{"missing token file", Config{TokenAuthFile: missing}, "token auth file"},
		{"token file with two columns", Config{TokenAuthFile: writeFile(t, "t.csv", "tok,alice\n")}, "at least 3 columns"},
		{"token file with one column", Config{TokenAuthFile: writeFile(t, "t.csv", "tok-alice,alice,uid\ntok\n")}, "at least 3 columns"},
		{"token file with a bad quote", Config{TokenAuthFile: writeFile(t, "t.csv", "\"tok,alice,uid\n")}, "token auth file"},
		{"token file error beside a good CA", Config{ClientCAFile: ca.CertFile, TokenAuthFile: writeFile(t, "t.csv", "a,b\n")}, "at least 3 columns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAuthenticator(c.cfg)
			if err == nil {
				t.Fatalf("no error (authenticator %v)", a)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// TestTokenFileEdges: lines a token file may hold without being wrong.
func TestTokenFileEdges(t *testing.T) {
	cases := []struct {
		name, csv, authz string
		want             *want
	}{
		{"empty file", "", "Bearer tok", nil},
		{"blank lines skipped", "\n\ntok,alice,uid\n\n", "Bearer tok", &want{name: "alice", uid: "uid", groups: []string{"system:authenticated"}}},
		{"CRLF lines", "tok,alice,uid\r\n", "Bearer tok", &want{name: "alice", uid: "uid", groups: []string{"system:authenticated"}}},
		{"no final newline", "tok,alice,uid", "Bearer tok", &want{name: "alice", uid: "uid", groups: []string{"system:authenticated"}}},
		{"extra columns ignored", "tok,alice,uid,g1,extra\n", "Bearer tok", &want{name: "alice", uid: "uid", groups: []string{"g1", "system:authenticated"}}},
		{"empty uid", "tok,alice,\n", "Bearer tok", &want{name: "alice", groups: []string{"system:authenticated"}}},
		{"system:authenticated already listed", "tok,alice,uid,system:authenticated\n", "Bearer tok", &want{name: "alice", uid: "uid", groups: []string{"system:authenticated"}}},
		{"empty token line never matches", ",alice,uid\n", "Bearer ", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := NewAuthenticator(Config{TokenAuthFile: writeFile(t, "t.csv", c.csv)})
			if err != nil {
				t.Fatal(err)
			}
			u, err := a.Authenticate(credRequest(c.authz))
			if c.want == nil {
				if !errors.Is(err, ErrUnauthorized) {
					t.Fatalf("got %v, %v; want ErrUnauthorized", u, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkUser(t, u, *c.want)
		})
	}
}

// TestAuthenticateRepeatedly: authenticating the same token again (and
// concurrently) yields the same user: nothing accumulates in the token
// file's shared entries.
func TestAuthenticateRepeatedly(t *testing.T) {
	ca := testpki.NewCA(t)
	cert := ca.Issue(t, "alice", []string{"admins", "dev"})
	caFile := ca.CertFile
	a, err := NewAuthenticator(Config{ClientCAFile: caFile, TokenAuthFile: writeFile(t, "t.csv", tokenCSV)})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				var r *http.Request
				var w want
				if i%2 == 0 {
					r, w = credRequest("Bearer tok-alice"), alice
				} else {
					r, w = credRequest("", cert.Leaf), certUser(cert)
				}
				u, err := a.Authenticate(r)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(u.GetGroups(), w.groups) || u.GetName() != w.name {
					t.Errorf("user %q groups %q, want %q %q", u.GetName(), u.GetGroups(), w.name, w.groups)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestUserContext(t *testing.T) {
	if u, ok := UserFrom(context.Background()); ok || u != nil {
		t.Errorf("empty context carries %v", u)
	}
	alice := &user.DefaultInfo{Name: "alice"}
	ctx := WithUser(context.Background(), alice)
	if u, ok := UserFrom(ctx); !ok || u != alice {
		t.Errorf("UserFrom = %v, %v", u, ok)
	}
	if u, ok := UserFrom(WithUser(ctx, Anonymous)); !ok || u != Anonymous {
		t.Errorf("inner WithUser: %v, %v", u, ok)
	}
	if u, ok := UserFrom(context.WithValue(ctx, struct{}{}, 1)); !ok || u != alice {
		t.Errorf("derived context: %v, %v", u, ok)
	}
}
