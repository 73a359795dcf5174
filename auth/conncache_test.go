package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testpki"
)

// TestConnCacheOverRealConnections: over HTTP/1.1 and HTTP/2, the second
// request on a connection finds the user its first one was verified as,
// and a new connection verifies again.
func TestConnCacheOverRealConnections(t *testing.T) {
	ca := testpki.NewCA(t)
	alice := ca.Issue(t, "alice", []string{"dev"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cached := verifiedConn(r) != nil
		u, err := a.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "%s %s %v", r.Proto, u.GetName(), cached)
	}))
	srv.Config.ConnContext = ConnContext
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()

	for _, h2 := range []bool{false, true} {
		for conn := 0; conn < 2; conn++ {
			tr := srv.Client().Transport.(*http.Transport).Clone()
			tr.TLSClientConfig.Certificates = []tls.Certificate{alice.TLSCertificate()}
			tr.ForceAttemptHTTP2 = h2
			if !h2 {
				tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			}
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			proto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]
			for i, want := range []string{proto + " alice false", proto + " alice true", proto + " alice true"} {
				resp, err := c.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != want {
					t.Errorf("%s connection %d request %d: %q, want %q", proto, conn, i, body, want)
				}
			}
			tr.CloseIdleConnections()
		}
	}
}

// TestConnCacheIsPerCertificate: a connection's remembered user is not
// given to a request presenting another certificate, and a foreign
// certificate is refused even after a good one was verified.
func TestConnCacheIsPerCertificate(t *testing.T) {
	ca, foreign := testpki.NewCA(t), testpki.NewCA(t)
	alice := ca.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	bob := ca.Issue(t, "bob", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	mallory := foreign.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ConnContext(t.Context(), nil)
	on := func(c *testpki.Cert) *http.Request { return credRequest("", c.Leaf).WithContext(ctx) }

	if u, err := a.Authenticate(on(alice)); err != nil || u.GetName() != "alice" {
		t.Fatalf("alice: %v, %v", u, err)
	}
	if u, err := a.Authenticate(on(bob)); err != nil || u.GetName() != "bob" {
		t.Errorf("bob after alice on one connection: %v, %v", u, err)
	}
	if u, err := a.Authenticate(on(mallory)); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("a foreign certificate named alice after bob on one connection: %v, %v", u, err)
	}
	if u, err := a.Authenticate(on(alice)); err != nil || u.GetName() != "alice" {
		t.Errorf("alice again: %v, %v", u, err)
	}
}

// TestConnCacheExpiresWithTheCertificate: a certificate that expires while
// its connection is open is refused from then on, although it was
// verified earlier on that connection.
func TestConnCacheExpiresWithTheCertificate(t *testing.T) {
	ca := testpki.NewCA(t)
	now := time.Now()
	short := ca.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth),
		testpki.WithValidity(now.Add(-time.Hour), now.Add(1500*time.Millisecond)))
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ConnContext(t.Context(), nil)
	r := func() *http.Request { return credRequest("", short.Leaf).WithContext(ctx) }
	if u, err := a.Authenticate(r()); err != nil || u.GetName() != "alice" {
		t.Fatalf("before expiry: %v, %v", u, err)
	}
	if verifiedConn(r()) == nil {
		t.Fatal("the verified user is not remembered for the connection")
	}
	time.Sleep(time.Until(short.Leaf.NotAfter) + 100*time.Millisecond)
	if u, err := a.Authenticate(r()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("after expiry on the same connection: %v, %v", u, err)
	}
}

// BenchmarkAuthenticateCert: a client-certificate request's authentication
// on a new connection (the chain verified) and on one that has been
// verified (remembered).
func BenchmarkAuthenticateCert(b *testing.B) {
	ca := testpki.NewCA(b)
	alice := ca.Issue(b, "alice", []string{"dev"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	for _, remembered := range []bool{false, true} {
		b.Run(map[bool]string{false: "verify", true: "remembered"}[remembered], func(b *testing.B) {
			r := credRequest("", alice.Leaf)
			if remembered {
				r = r.WithContext(ConnContext(b.Context(), nil))
			}
			for b.Loop() {
				if _, err := a.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
