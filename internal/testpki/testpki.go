// Package testpki makes certificate authorities and certificates for tests:
// a CA, then certificates it signs, each written as PEM files under the
// test's temporary directory, for code that takes file names (the peer
// port's --peer-*-file flags, an API server's client-CA file).
//
//	ca := testpki.NewCA(t)
//	peer := ca.Issue(t, "n1", nil)                     // serverAuth+clientAuth, 127.0.0.1
//	user := ca.Issue(t, "alice", []string{"admins"},   // a client certificate with CN and O
//		testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
//	old := ca.Issue(t, "n2", nil, testpki.Expired())
//
// Keys are ECDSA P-256: quick to generate, so every test can have its own.
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// CA is a self-signed certificate authority.
type CA struct {
	// Cert is the CA's certificate.
	Cert *x509.Certificate
	// Key is the CA's private key.
	Key crypto.Signer
	// CertFile is the CA certificate's PEM file (a trusted-CA file).
	CertFile string
	// Dir is where the CA writes the files of the certificates it issues.
	Dir string

	mu sync.Mutex
	n  int // certificates issued, for unique file names
}

// Cert is a certificate issued by a CA, with its key.
type Cert struct {
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
	// Key is its private key.
	Key crypto.Signer
	// CertFile and KeyFile are the PEM files of the certificate and of
	// its key (PKCS#8).
	CertFile, KeyFile string
	// CertPEM and KeyPEM are the files' contents.
	CertPEM, KeyPEM []byte
}

// TLSCertificate is c as a tls.Certificate, for a tls.Config.
func (c *Cert) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Leaf.Raw}, PrivateKey: c.Key, Leaf: c.Leaf}
}

// NewCA makes a CA valid from an hour ago for ten years, named "test CA"
// plus a serial, and writes its certificate to ca.CertFile in a new
// temporary directory of t.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	tmpl.Subject = pkix.Name{CommonName: "test CA " + tmpl.SerialNumber.Text(16)[:8]}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatalf("testpki: create CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: parse CA: %v", err)
	}
	dir := t.TempDir()
	ca := &CA{Cert: cert, Key: key, Dir: dir, CertFile: filepath.Join(dir, "ca.crt")}
	writeFile(t, ca.CertFile, certPEM(der))
	return ca
}

// Pool is a cert pool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CertPEM is the CA certificate's PEM encoding.
func (ca *CA) CertPEM() []byte { return certPEM(ca.Cert.Raw) }

// Option adjusts a certificate before the CA signs it.
type Option func(*x509.Certificate)

// WithExtKeyUsage sets the certificate's extended key usages, in place of
// the default serverAuth and clientAuth. None at all means no extension.
func WithExtKeyUsage(ekus ...x509.ExtKeyUsage) Option {
	return func(c *x509.Certificate) { c.ExtKeyUsage = ekus }
}

// WithIPs sets the certificate's IP address SANs, in place of the default
// 127.0.0.1 and ::1.
func WithIPs(ips ...net.IP) Option {
	return func(c *x509.Certificate) { c.IPAddresses = ips }
}

// WithDNSNames sets the certificate's DNS name SANs, in place of the
// default "localhost".
func WithDNSNames(names ...string) Option {
	return func(c *x509.Certificate) { c.DNSNames = names }
}

// WithValidity sets the certificate's validity period, in place of the
// default from an hour ago to 24 hours from now.
func WithValidity(notBefore, notAfter time.Time) Option {
	return func(c *x509.Certificate) { c.NotBefore, c.NotAfter = notBefore, notAfter }
}

// Expired makes a certificate that was valid from two days ago until an
// hour ago.
func Expired() Option {
	now := time.Now()
	return WithValidity(now.Add(-48*time.Hour), now.Add(-time.Hour))
}

// Issue makes a certificate signed by ca with subject CN cn and
// organizations orgs (Kubernetes reads them as user name and groups; DER
// encodes the organizations as a set, so the parsed certificate may list
// them in another order, the shortest first). By
// default it serves and authenticates on loopback: extended key usages
// serverAuth and clientAuth, SANs 127.0.0.1, ::1 and localhost, valid
// from an hour ago for 24 hours; opts change that. The certificate and
// its key are written to PEM files in ca.Dir.
func (ca *CA) Issue(t testing.TB, cn string, orgs []string, opts ...Option) *Cert {
	t.Helper()
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	for _, o := range opts {
		o(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatalf("testpki: issue %q: %v", cn, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testpki: parse %q: %v", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testpki: marshal key: %v", err)
	}
	ca.mu.Lock()
	ca.n++
	base := fmt.Sprintf("%02d-%s", ca.n, fileName(cn))
	ca.mu.Unlock()
	c := &Cert{
		Leaf:     leaf,
		Key:      key,
		CertFile: filepath.Join(ca.Dir, base+".crt"),
		KeyFile:  filepath.Join(ca.Dir, base+".key"),
		CertPEM:  certPEM(der),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	writeFile(t, c.CertFile, c.CertPEM)
	writeFile(t, c.KeyFile, c.KeyPEM)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testpki: generate key: %v", err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("testpki: serial: %v", err)
	}
	return n.Add(n, big.NewInt(1<<32)) // never small, never zero
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("testpki: %v", err)
	}
}

// fileName keeps the letters, digits, dots and dashes of cn.
func fileName(cn string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, cn)
	if s == "" {
		return "cert"
	}
	return s
}
