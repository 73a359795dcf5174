package testpki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"reflect"
	"testing"
)

func TestIssuedCertificatesVerify(t *testing.T) {
	ca := NewCA(t)
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no certificate")
	}

	peer := ca.Issue(t, "n1", nil)
	if _, err := tls.LoadX509KeyPair(peer.CertFile, peer.KeyFile); err != nil {
		t.Fatalf("load the issued pair: %v", err)
	}
	for _, eku := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := peer.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{eku}}); err != nil {
			t.Errorf("verify for %v at 127.0.0.1: %v", eku, err)
		}
	}
	if !peer.Leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || peer.Leaf.Subject.CommonName != "n1" {
		t.Errorf("peer cert: CN %q, IPs %v", peer.Leaf.Subject.CommonName, peer.Leaf.IPAddresses)
	}

	user := ca.Issue(t, "alice", []string{"admins", "dev"}, WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	// DER sorts a SET OF: the shorter encoding first.
	if got := user.Leaf.Subject.Organization; !reflect.DeepEqual(got, []string{"dev", "admins"}) {
		t.Errorf("organizations %v", got)
	}
	if _, err := user.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client-only certificate verifies for serverAuth")
	}

	if _, err := ca.Issue(t, "n1", nil, Expired()).Leaf.Verify(x509.VerifyOptions{Roots: pool}); err == nil {
		t.Error("an expired certificate verifies")
	}
	if _, err := NewCA(t).Issue(t, "n1", nil).Leaf.Verify(x509.VerifyOptions{Roots: pool}); err == nil {
		t.Error("another CA's certificate verifies")
	}
	if a, b := ca.Issue(t, "x", nil), ca.Issue(t, "x", nil); a.CertFile == b.CertFile {
		t.Error("two certificates share a file")
	}
}
