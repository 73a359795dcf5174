package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

const (
	issuer  = "https://kubernetes.default.svc.cluster.local"
	issuer2 = "https://issuer.example"
)

// saKeys are the keys the tests sign with: the trusted pair and an
// attacker's pair. RSA keys are slow to make, so they are made once.
type saKeys struct {
	rsa, rsaOther *rsa.PrivateKey
	ec, ecOther   *ecdsa.PrivateKey
}

var testKeys = sync.OnceValue(func() *saKeys {
	k := &saKeys{}
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.rsaOther, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.ecOther, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	return k
})

// kid is kube's key id, computed here independently of keyID.
func kid(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func pemFile(t testing.TB, name string, blocks ...*pem.Block) string {
	t.Helper()
	var b strings.Builder
	for _, bl := range blocks {
		b.Write(pem.EncodeToMemory(bl))
	}
	return writeFile(t, name, b.String())
}

func publicPEM(t testing.TB, pub crypto.PublicKey) *pem.Block {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return &pem.Block{Type: "PUBLIC KEY", Bytes: der}
}

// keyFiles writes the trusted public keys, one file each.
func keyFiles(t testing.TB) []string {
	k := testKeys()
	return []string{pemFile(t, "sa-rsa.pub", publicPEM(t, &k.rsa.PublicKey)), pemFile(t, "sa-ec.pub", publicPEM(t, &k.ec.PublicKey))}
}

// claims are a token's public and private claims.
type claims struct {
	pub  jwt.Claims
	priv map[string]any
}

// boundClaims are those of a projected token kube-apiserver issues for a
// pod of account team-a/builder on node n1.
func boundClaims() claims {
	now := time.Now()
	return claims{
		pub: jwt.Claims{
			Issuer:    issuer,
			Subject:   "system:serviceaccount:team-a:builder",
			Audience:  jwt.Audience{issuer},
			Expiry:    jwt.NewNumericDate(now.Add(time.Hour)),
			NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
			IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
			ID:        "jti-1",
		},
		priv: map[string]any{"kubernetes.io": map[string]any{
			"namespace":      "team-a",
			"serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web-0", "uid": "pod-uid"},
			"node":           map[string]any{"name": "n1", "uid": "node-uid"},
		}},
	}
}

func (c claims) k8s() map[string]any { return c.priv["kubernetes.io"].(map[string]any) }

// legacyClaims are those of a secret-based token.
func legacyClaims() claims {
	return claims{
		pub: jwt.Claims{Issuer: issuer, Subject: "system:serviceaccount:team-a:builder", Audience: jwt.Audience{issuer}},
		priv: map[string]any{
			"kubernetes.io/serviceaccount/namespace":            "team-a",
			"kubernetes.io/serviceaccount/secret.name":          "builder-token-x",
			"kubernetes.io/serviceaccount/service-account.name": "builder",
			"kubernetes.io/serviceaccount/service-account.uid":  "sa-uid",
		},
	}
}

func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, keyID string, c claims) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if keyID != "" {
		opts = opts.WithHeader("kid", keyID)
	}
	return signWith(t, jose.SigningKey{Algorithm: alg, Key: key}, opts, c)
}

func signWith(t testing.TB, key jose.SigningKey, opts *jose.SignerOptions, c claims) string {
	t.Helper()
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(signer).Claims(c.pub).Claims(c.priv).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unsigned is a hand-made token: header and payload as given, signature sig.
func unsigned(t testing.TB, header map[string]any, c claims, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	payload := map[string]any{}
	for k, v := range c.priv {
		payload[k] = v
	}
	pub, err := json.Marshal(c.pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(pub, &payload); err != nil {
		t.Fatal(err)
	}
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "." + sig
}

var builder = want{
	name:   "system:serviceaccount:team-a:builder",
	uid:    "sa-uid",
	groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"},
	extra: map[string][]string{
		"authentication.kubernetes.io/pod-name":      {"web-0"},
		"authentication.kubernetes.io/pod-uid":       {"pod-uid"},
		"authentication.kubernetes.io/node-name":     {"n1"},
		"authentication.kubernetes.io/node-uid":      {"node-uid"},
		"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
	},
}

func builderWith(extra map[string][]string) *want {
	w := builder
	w.extra = extra
	return &w
}

// outcome of serviceAccountTokens.AuthenticateToken.
type outcome int

const (
	accepted outcome = iota
	notOurs          // false, no error: another token authenticator may know it
	failed           // an error
	rejected         // not accepted, one way or the other
)

type saCase struct {
	name    string
	token   func(t *testing.T) string
	want    *want   // for accepted
	outcome outcome // of the SA authenticator alone
	errText string  // in the error, for failed
}

func mod(f func(*claims)) claims {
	c := boundClaims()
	f(&c)
	return c
}

func saCases(t *testing.T) []saCase {
	k := testKeys()
	rsaKid, ecKid := kid(t, &k.rsa.PublicKey), kid(t, &k.ec.PublicKey)
	otherKid := kid(t, &k.rsaOther.PublicKey)
	good := func(c claims) func(*testing.T) string {
		return func(t *testing.T) string { return sign(t, jose.RS256, k.rsa, rsaKid, c) }
	}
	now := time.Now()
	at := func(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(now.Add(d)) }
	return []saCase{
		{name: "RS256 with kid", token: good(boundClaims()), want: &builder},
		{name: "RS256 without kid", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsa, "", boundClaims()) }, want: &builder},
		{name: "ES256 with kid", token: func(t *testing.T) string { return sign(t, jose.ES256, k.ec, ecKid, boundClaims()) }, want: &builder},
		{name: "ES256 without kid", token: func(t *testing.T) string { return sign(t, jose.ES256, k.ec, "", boundClaims()) }, want: &builder},
		{name: "second issuer, audience the first", token: good(mod(func(c *claims) { c.pub.Issuer = issuer2 })), want: &builder},
		{name: "several audiences, one ours", token: good(mod(func(c *claims) { c.pub.Audience = jwt.Audience{"vault", issuer, "x"} })), want: &builder},
		{name: "no jti", token: good(mod(func(c *claims) { c.pub.ID = "" })), want: builderWith(map[string][]string{
			"authentication.kubernetes.io/pod-name":  {"web-0"},
			"authentication.kubernetes.io/pod-uid":   {"pod-uid"},
			"authentication.kubernetes.io/node-name": {"n1"},
			"authentication.kubernetes.io/node-uid":  {"node-uid"},
		})},
		{name: "no pod, no node", token: good(mod(func(c *claims) { delete(c.k8s(), "pod"); delete(c.k8s(), "node") })), want: builderWith(map[string][]string{
			"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
		})},
		// kube: pod extras need both name and uid; node-uid needs node-name.
		{name: "pod without uid, node without uid", token: good(mod(func(c *claims) {
			c.k8s()["pod"] = map[string]any{"name": "web-0"}
			c.k8s()["node"] = map[string]any{"name": "n1"}
		})), want: builderWith(map[string][]string{
			"authentication.kubernetes.io/node-name":     {"n1"},
			"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
		})},
		{name: "no service account uid", token: good(mod(func(c *claims) { c.k8s()["serviceaccount"] = map[string]any{"name": "builder"} })), want: func() *want {
			w := builder
			w.uid = ""
			return &w
		}()},
		{name: "legacy token", token: good(legacyClaims()), want: builderWith(nil)},
		{name: "legacy token with a jti", token: good(func() claims { c := legacyClaims(); c.pub.ID = "j"; return c }()), want: builderWith(map[string][]string{
			"authentication.kubernetes.io/credential-id": {"JTI=j"},
		})},
		{name: "expired within leeway", token: good(mod(func(c *claims) { c.pub.Expiry = at(-30 * time.Second) })), want: &builder},
		{name: "not before within leeway", token: good(mod(func(c *claims) { c.pub.NotBefore = at(30 * time.Second) })), want: &builder},
		{name: "issued within leeway in the future", token: good(mod(func(c *claims) { c.pub.IssuedAt = at(30 * time.Second) })), want: &builder},
		{name: "no expiry", token: good(mod(func(c *claims) { c.pub.Expiry = nil })), want: &builder},

		// Valid signature, invalid claims.
		{name: "expired beyond leeway", token: good(mod(func(c *claims) { c.pub.Expiry = at(-2 * time.Minute) })), outcome: failed, errText: "expired"},
		{name: "expired long ago", token: good(mod(func(c *claims) {
			c.pub.Expiry, c.pub.IssuedAt, c.pub.NotBefore = at(-24*time.Hour), at(-48*time.Hour), at(-48*time.Hour)
		})), outcome: failed, errText: "expired"},
		{name: "not before in the future", token: good(mod(func(c *claims) { c.pub.NotBefore = at(2 * time.Minute) })), outcome: failed, errText: "not valid yet"},
		{name: "issued in the future", token: good(mod(func(c *claims) { c.pub.IssuedAt = at(2 * time.Minute) })), outcome: failed, errText: "issued in the future"},
		{name: "wrong audience", token: good(mod(func(c *claims) { c.pub.Audience = jwt.Audience{"vault"} })), outcome: failed, errText: "audiences"},
		{name: "audience is the second issuer", token: good(mod(func(c *claims) { c.pub.Audience = jwt.Audience{issuer2} })), outcome: failed, errText: "audiences"},
		{name: "audience differing in case", token: good(mod(func(c *claims) { c.pub.Audience = jwt.Audience{strings.ToUpper(issuer)} })), outcome: failed, errText: "audiences"},
		{name: "no audience", token: good(mod(func(c *claims) { c.pub.Audience = nil })), outcome: failed, errText: "audiences"},
		{name: "missing namespace", token: good(mod(func(c *claims) { delete(c.k8s(), "namespace") })), outcome: failed, errText: "namespace"},
		{name: "empty namespace", token: good(mod(func(c *claims) { c.k8s()["namespace"] = "" })), outcome: failed, errText: "namespace"},
		{name: "missing service account", token: good(mod(func(c *claims) { delete(c.k8s(), "serviceaccount") })), outcome: failed, errText: "service account"},
		{name: "no kubernetes claims", token: good(mod(func(c *claims) { c.priv = map[string]any{} })), outcome: failed, errText: "namespace"},
		// The bound claim decides; legacy claims beside it are not read.
		{name: "bound claim without namespace, legacy namespace beside", token: good(mod(func(c *claims) {
			delete(c.k8s(), "namespace")
			c.priv["kubernetes.io/serviceaccount/namespace"] = "team-a"
			c.priv["kubernetes.io/serviceaccount/service-account.name"] = "builder"
		})), outcome: failed, errText: "namespace"},
		{name: "legacy token without namespace", token: good(func() claims {
			c := legacyClaims()
			delete(c.priv, "kubernetes.io/serviceaccount/namespace")
			return c
		}()), outcome: failed, errText: "namespace"},
		{name: "expiry of the wrong type", token: func(t *testing.T) string {
			c := boundClaims()
			c.priv["exp"] = "tomorrow"
			return sign(t, jose.RS256, k.rsa, rsaKid, c)
		}, outcome: rejected},

		// Not ours: the issuer is someone else's.
		{name: "foreign issuer", token: good(mod(func(c *claims) { c.pub.Issuer = "https://evil.example" })), outcome: notOurs},
		{name: "issuer differing by a slash", token: good(mod(func(c *claims) { c.pub.Issuer = issuer + "/" })), outcome: notOurs},
		{name: "no issuer", token: good(mod(func(c *claims) { c.pub.Issuer = "" })), outcome: notOurs},

		// Bad signatures.
		{name: "another RSA key, its own kid", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsaOther, otherKid, boundClaims()) }, outcome: failed, errText: "invalid signature, no keys found"},
		{name: "another RSA key, the trusted kid", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsaOther, rsaKid, boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "another RSA key, no kid", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsaOther, "", boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "another EC key, no kid", token: func(t *testing.T) string { return sign(t, jose.ES256, k.ecOther, "", boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "another EC key, the trusted EC kid", token: func(t *testing.T) string { return sign(t, jose.ES256, k.ecOther, ecKid, boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "trusted EC key, the RSA key's kid", token: func(t *testing.T) string { return sign(t, jose.ES256, k.ec, rsaKid, boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "trusted RSA key, the EC key's kid", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsa, ecKid, boundClaims()) }, outcome: failed, errText: "invalid signature"},
		{name: "kid matching no key", token: func(t *testing.T) string { return sign(t, jose.RS256, k.rsa, "nope", boundClaims()) }, outcome: failed, errText: "invalid signature, no keys found"},
		{name: "embedded attacker JWK", token: func(t *testing.T) string {
			return signWith(t, jose.SigningKey{Algorithm: jose.RS256, Key: k.rsaOther}, &jose.SignerOptions{EmbedJWK: true}, boundClaims())
		}, outcome: failed, errText: "invalid signature"},
		{name: "payload swapped", token: func(t *testing.T) string {
			a := strings.Split(sign(t, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { c.k8s()["namespace"] = "kube-system" })), ".")
			b := strings.Split(sign(t, jose.RS256, k.rsa, rsaKid, boundClaims()), ".")
			return a[0] + "." + a[1] + "." + b[2]
		}, outcome: failed, errText: "invalid signature"},
		{name: "payload edited", token: func(t *testing.T) string {
			p := strings.Split(sign(t, jose.RS256, k.rsa, rsaKid, boundClaims()), ".")
			body, err := base64.RawURLEncoding.DecodeString(p[1])
			if err != nil {
				t.Fatal(err)
			}
			body = []byte(strings.Replace(string(body), "team-a", "team-b", 1))
			return p[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + p[2]
		}, outcome: failed, errText: "invalid signature"},
		{name: "signature removed", token: func(t *testing.T) string {
			p := strings.Split(sign(t, jose.RS256, k.rsa, rsaKid, boundClaims()), ".")
			return p[0] + "." + p[1] + "."
		}, outcome: rejected},
		{name: "alg none", token: func(t *testing.T) string {
			return unsigned(t, map[string]any{"alg": "none", "typ": "JWT"}, boundClaims(), "")
		}, outcome: notOurs},
		{name: "alg none with the trusted kid", token: func(t *testing.T) string {
			return unsigned(t, map[string]any{"alg": "none", "typ": "JWT", "kid": rsaKid}, boundClaims(), "")
		}, outcome: notOurs},
		{name: "alg none with a real signature", token: func(t *testing.T) string {
			p := strings.Split(sign(t, jose.RS256, k.rsa, rsaKid, boundClaims()), ".")
			return unsigned(t, map[string]any{"alg": "none", "kid": rsaKid}, boundClaims(), p[2])
		}, outcome: notOurs},
		{name: "alg None", token: func(t *testing.T) string {
			return unsigned(t, map[string]any{"alg": "None"}, boundClaims(), "")
		}, outcome: notOurs},
		// Algorithm confusion: the RSA public key (as its PEM file reads)
		// used as an HMAC secret.
		{name: "HS256 keyed with the public key", token: func(t *testing.T) string {
			secret := pem.EncodeToMemory(publicPEM(t, &k.rsa.PublicKey))
			return sign(t, jose.HS256, secret, rsaKid, boundClaims())
		}, outcome: notOurs},
		{name: "HS256 keyed with the public key DER", token: func(t *testing.T) string {
			return sign(t, jose.HS256, publicPEM(t, &k.rsa.PublicKey).Bytes, "", boundClaims())
		}, outcome: notOurs},
	}
}

// TestServiceAccountTokens verifies service-account JWTs as kube-apiserver
// does, through the whole authenticator (with and without anonymous
// requests: a failed token is never anonymous) and through the SA
// authenticator alone (to tell "not ours" from "bad").
func TestServiceAccountTokens(t *testing.T) {
	files := keyFiles(t)
	sa, err := newServiceAccountTokens(files, []string{issuer, issuer2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var authns []*Authenticator
	for _, anonymous := range []bool{false, true} {
		a, err := NewAuthenticator(Config{ServiceAccountKeyFiles: files, ServiceAccountIssuers: []string{issuer, issuer2}, Anonymous: anonymous})
		if err != nil {
			t.Fatal(err)
		}
		authns = append(authns, a)
	}
	for _, c := range saCases(t) {
		t.Run(c.name, func(t *testing.T) {
			token := c.token(t)
			resp, ok, err := sa.AuthenticateToken(context.Background(), token)
			switch c.outcome {
			case accepted:
				if !ok || err != nil {
					t.Fatalf("SA authenticator: ok %v, error %v", ok, err)
				}
			case notOurs:
				if ok || err != nil || resp != nil {
					t.Fatalf("SA authenticator: ok %v, error %v; want not ours", ok, err)
				}
			case failed:
				if ok || err == nil || resp != nil {
					t.Fatalf("SA authenticator: ok %v, error %v; want an error", ok, err)
				}
				if !strings.Contains(err.Error(), c.errText) {
					t.Errorf("error %q does not say %q", err, c.errText)
				}
			case rejected:
				if ok || resp != nil {
					t.Fatalf("SA authenticator accepted it")
				}
			}
			for i, a := range authns {
				u, err := a.Authenticate(credRequest("Bearer " + token))
				if c.outcome == accepted {
					if err != nil {
						t.Fatalf("anonymous=%v: %v", i == 1, err)
					}
					checkUser(t, u, *c.want)
				} else if !errors.Is(err, ErrUnauthorized) || u != nil {
					t.Fatalf("anonymous=%v: got %v, %v; want ErrUnauthorized", i == 1, u, err)
				}
			}
		})
	}
}

// TestServiceAccountGarbage: strings that are not JWTs are not ours, and
// a request bearing one is refused.
func TestServiceAccountGarbage(t *testing.T) {
	files := keyFiles(t)
	sa, err := newServiceAccountTokens(files, []string{issuer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(Config{ServiceAccountKeyFiles: files, ServiceAccountIssuers: []string{issuer}, Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range garbageTokens {
		resp, ok, err := sa.AuthenticateToken(context.Background(), s)
		if ok || resp != nil || err != nil {
			t.Errorf("%q: %v, %v, %v; want not ours", s, resp, ok, err)
		}
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, " \t") {
			continue // not a bearer token at all
		}
		if u, err := a.Authenticate(credRequest("Bearer " + s)); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%q: %v, %v; want ErrUnauthorized", s, u, err)
		}
	}
}

var garbageTokens = []string{
	"",
	"garbage",
	"a.b.c",
	"..",
	"...",
	"a.b",
	"eyJhbGciOiJSUzI1NiJ9",
	"eyJhbGciOiJSUzI1NiJ9.e30.",
	"eyJhbGciOiJSUzI1NiJ9.e30.AAAA",
	"eyJhbGciOiJSUzI1NiJ9.bnVsbA.AAAA", // payload null
	"eyJhbGciOiJSUzI1NiJ9.W10.AAAA",    // payload []
	"e30.e30.e30",
	"eyJ9.eyJ9.eyJ9",
	"!!!.???.***",
	`{"payload":"e30","signatures":[]}`,
	"eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMuY2x1c3Rlci5sb2NhbCJ9.",
	strings.Repeat("A", 10000),
	strings.Repeat(".", 1000),
	"\x00.\x00.\x00",
}

// TestAPIAudiences: configured audiences replace the issuer as the one a
// token must be for.
func TestAPIAudiences(t *testing.T) {
	k := testKeys()
	files := keyFiles(t)
	a, err := NewAuthenticator(Config{ServiceAccountKeyFiles: files, ServiceAccountIssuers: []string{issuer}, APIAudiences: []string{"leasehold", "api"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		aud jwt.Audience
		ok  bool
	}{
		{jwt.Audience{"leasehold"}, true},
		{jwt.Audience{"api"}, true},
		{jwt.Audience{"other", "api"}, true},
		{jwt.Audience{issuer}, false},
		{jwt.Audience{"leasehold2"}, false},
		{nil, false},
	}
	for _, c := range cases {
		token := sign(t, jose.RS256, k.rsa, "", mod(func(cl *claims) { cl.pub.Audience = c.aud }))
		u, err := a.Authenticate(credRequest("Bearer " + token))
		if c.ok {
			if err != nil {
				t.Errorf("audience %q: %v", c.aud, err)
				continue
			}
			checkUser(t, u, builder)
		} else if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("audience %q: %v, %v; want ErrUnauthorized", c.aud, u, err)
		}
	}
}

// TestServiceAccountKeyFiles: the key files kube-apiserver accepts (RSA or
// ECDSA, public or private) all verify, and key ids are kube's.
func TestServiceAccountKeyFiles(t *testing.T) {
	k := testKeys()
	rsaPKCS8, err := x509.MarshalPKCS8PrivateKey(k.rsa)
	if err != nil {
		t.Fatal(err)
	}
	ecSEC1, err := x509.MarshalECPrivateKey(k.ec)
	if err != nil {
		t.Fatal(err)
	}
	rsaPub, ecPub := publicPEM(t, &k.rsa.PublicKey), publicPEM(t, &k.ec.PublicKey)
	cases := []struct {
		name  string
		file  string
		keyed []crypto.PublicKey // the keys it yields, in order
	}{
		{"RSA public key", pemFile(t, "k", rsaPub), []crypto.PublicKey{&k.rsa.PublicKey}},
		{"RSA PKCS#1 private key", pemFile(t, "k", &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k.rsa)}), []crypto.PublicKey{&k.rsa.PublicKey}},
		{"RSA PKCS#8 private key", pemFile(t, "k", &pem.Block{Type: "PRIVATE KEY", Bytes: rsaPKCS8}), []crypto.PublicKey{&k.rsa.PublicKey}},
		{"EC public key", pemFile(t, "k", ecPub), []crypto.PublicKey{&k.ec.PublicKey}},
		{"EC private key", pemFile(t, "k", &pem.Block{Type: "EC PRIVATE KEY", Bytes: ecSEC1}), []crypto.PublicKey{&k.ec.PublicKey}},
		{"both in one file, with other blocks", pemFile(t, "k", &pem.Block{Type: "COMMENT", Bytes: []byte("x")}, rsaPub, ecPub), []crypto.PublicKey{&k.rsa.PublicKey, &k.ec.PublicKey}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sa, err := newServiceAccountTokens([]string{c.file}, []string{issuer}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(sa.keys) != len(c.keyed) {
				t.Fatalf("%d keys, want %d", len(sa.keys), len(c.keyed))
			}
			for i, want := range c.keyed {
				if sa.keys[i].id != kid(t, want) {
					t.Errorf("key %d id %q, want %q", i, sa.keys[i].id, kid(t, want))
				}
			}
			a, err := NewAuthenticator(Config{ServiceAccountKeyFiles: []string{c.file}, ServiceAccountIssuers: []string{issuer}})
			if err != nil {
				t.Fatal(err)
			}
			for _, pub := range c.keyed {
				alg, priv := jose.RS256, any(k.rsa)
				if _, ok := pub.(*ecdsa.PublicKey); ok {
					alg, priv = jose.ES256, k.ec
				}
				for _, id := range []string{kid(t, pub), ""} {
					u, err := a.Authenticate(credRequest("Bearer " + sign(t, alg, priv, id, boundClaims())))
					if err != nil {
						t.Fatalf("%s kid %q: %v", alg, id, err)
					}
					checkUser(t, u, builder)
				}
			}
			// A key the file does not hold never verifies.
			if _, err := a.Authenticate(credRequest("Bearer " + sign(t, jose.RS256, k.rsaOther, "", boundClaims()))); !errors.Is(err, ErrUnauthorized) {
				t.Errorf("another key's token: %v", err)
			}
		})
	}
}

func TestServiceAccountConfigErrors(t *testing.T) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edDER, err := x509.MarshalPKIXPublicKey(edPriv.Public())
	if err != nil {
		t.Fatal(err)
	}
	good := keyFiles(t)
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no issuer", Config{ServiceAccountKeyFiles: good}},
		{"missing key file", Config{ServiceAccountKeyFiles: []string{writeFile(t, "x", "") + ".missing"}, ServiceAccountIssuers: []string{issuer}}},
		{"empty key file", Config{ServiceAccountKeyFiles: []string{writeFile(t, "k", "")}, ServiceAccountIssuers: []string{issuer}}},
		{"text key file", Config{ServiceAccountKeyFiles: []string{writeFile(t, "k", "not a key\n")}, ServiceAccountIssuers: []string{issuer}}},
		{"ed25519 key", Config{ServiceAccountKeyFiles: []string{pemFile(t, "k", &pem.Block{Type: "PUBLIC KEY", Bytes: edDER})}, ServiceAccountIssuers: []string{issuer}}},
		{"corrupt key block", Config{ServiceAccountKeyFiles: []string{pemFile(t, "k", &pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")})}, ServiceAccountIssuers: []string{issuer}}},
		{"one good file, one bad", Config{ServiceAccountKeyFiles: append(good[:1:1], writeFile(t, "k", "x")), ServiceAccountIssuers: []string{issuer}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if a, err := NewAuthenticator(c.cfg); err == nil {
				t.Fatalf("no error (authenticator %v)", a)
			}
		})
	}
}

// TestTokenFileAndServiceAccounts: both token authenticators in one union,
// the token file asked first; a token neither knows is refused.
func TestTokenFileAndServiceAccounts(t *testing.T) {
	k := testKeys()
	files := keyFiles(t)
	rsaKid := kid(t, &k.rsa.PublicKey)
	// A valid service-account JWT that is also a static token: the token
	// file answers first.
	listed := sign(t, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { c.pub.ID = "listed" }))
	tokenFile := writeFile(t, "t.csv", tokenCSV+listed+",listed,uid-listed\n")
	foreignJWT := sign(t, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { c.pub.Issuer = "https://evil.example" }))
	expiredJWT := sign(t, jose.RS256, k.rsa, rsaKid, mod(func(c *claims) { c.pub.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Hour)) }))
	cases := []struct {
		name, token string
		want        *want
		anonymousOK bool // with anonymous requests allowed, this is anonymous
	}{
		{"service account token", sign(t, jose.RS256, k.rsa, rsaKid, boundClaims()), &builder, false},
		{"service account token, ES256", sign(t, jose.ES256, k.ec, "", boundClaims()), &builder, false},
		{"static token", "tok-alice", &alice, false},
		{"static token that is a JWT", listed, &want{name: "listed", uid: "uid-listed", groups: []string{"system:authenticated"}}, false},
		{"foreign issuer", foreignJWT, nil, false},
		{"expired service account token", expiredJWT, nil, false},
		{"unknown static token", "nope", nil, false},
	}
	for _, anonymous := range []bool{false, true} {
		a, err := NewAuthenticator(Config{
			TokenAuthFile:          tokenFile,
			ServiceAccountKeyFiles: files,
			ServiceAccountIssuers:  []string{issuer},
			Anonymous:              anonymous,
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			u, err := a.Authenticate(credRequest("Bearer " + c.token))
			if c.want != nil {
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					continue
				}
				checkUser(t, u, *c.want)
			} else if !errors.Is(err, ErrUnauthorized) {
				t.Errorf("%s (anonymous %v): %v, %v; want ErrUnauthorized", c.name, anonymous, u, err)
			}
		}
		// No credentials at all.
		u, err := a.Authenticate(credRequest(""))
		if anonymous {
			checkAnonymous(t, u, err)
		} else if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("no credentials: %v, %v", u, err)
		}
	}
}

// TestServiceAccountClock: validity times are judged by the
// authenticator's clock with go-jose's one-minute leeway, at the edges.
func TestServiceAccountClock(t *testing.T) {
	k := testKeys()
	sa, err := newServiceAccountTokens(keyFiles(t), []string{issuer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_800_000_000, 0)
	c := boundClaims()
	c.pub.IssuedAt, c.pub.NotBefore, c.pub.Expiry = jwt.NewNumericDate(base), jwt.NewNumericDate(base), jwt.NewNumericDate(base.Add(time.Hour))
	token := sign(t, jose.RS256, k.rsa, "", c)
	cases := []struct {
		now time.Time
		ok  bool
	}{
		{base.Add(-61 * time.Second), false},
		{base.Add(-59 * time.Second), true},
		{base, true},
		{base.Add(time.Hour), true},
		{base.Add(time.Hour + 59*time.Second), true},
		{base.Add(time.Hour + 61*time.Second), false},
		{base.Add(48 * time.Hour), false},
	}
	for _, tc := range cases {
		sa.now = func() time.Time { return tc.now }
		_, ok, err := sa.AuthenticateToken(context.Background(), token)
		if ok != tc.ok || (err == nil) != tc.ok {
			t.Errorf("at %v from issue: ok %v, error %v; want ok %v", tc.now.Sub(base), ok, err, tc.ok)
		}
	}
}
