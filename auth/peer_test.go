package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/internal/testpki"
)

// A member joining with its peer certificate is a peer, and a peer may
// join the cluster and do nothing else.
func TestPeerCertificates(t *testing.T) {
	clientCA, peerCA := testpki.NewCA(t), testpki.NewCA(t)
	a, err := NewAuthenticator(Config{ClientCAFile: clientCA.CertFile, PeerCAFile: peerCA.CertFile, PeerAllowedCN: "leasehold-peer"})
	if err != nil {
		t.Fatal(err)
	}
	if a.ClientCAs() == nil || len(a.ClientCAs().Subjects()) != 2 { //nolint:staticcheck // counting the CAs offered
		t.Fatalf("the TLS server must ask for certificates of both CAs")
	}
	// with is the status kube-apiserver's order of checks gives.
	with := func(c *testpki.Cert, method, path string) (int, error) {
		r := httptest.NewRequest(method, path, nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Leaf}}
		u, err := a.Authenticate(r)
		if err != nil {
			return 401, err
		}
		z, _ := NewAuthorizer(ModeAlwaysAllow, nil)
		attrs, _ := Attributes(r, u)
		if d, _, _ := z.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow {
			return 403, nil
		}
		return 200, nil
	}

	peer := peerCA.Issue(t, "leasehold-peer", []string{"system:masters"})
	r := httptest.NewRequest("POST", "/cluster/join", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{peer.Leaf}}
	u, err := a.Authenticate(r)
	if err != nil || u.GetName() != "system:leasehold:peer:leasehold-peer" || !slices.Equal(u.GetGroups(), []string{PeerGroup, "system:authenticated"}) {
		t.Fatalf("peer: %v %v", u, err)
	}
	if IsMaster(u) {
		t.Fatal("a peer certificate's O made it a master")
	}
	if code, err := with(peer, "POST", "/cluster/join"); err != nil || code != 200 {
		t.Errorf("peer join: %d %v", code, err)
	}
	for _, req := range [][2]string{{"GET", "/apis/coordination.k8s.io/v1/namespaces/a/leases/x"}, {"GET", "/metrics"}, {"POST", "/apis/coordination.k8s.io/v1/namespaces/a/leases"}, {"GET", "/cluster/join"}} {
		if code, err := with(peer, req[0], req[1]); err != nil || code != 403 {
			t.Errorf("peer %s %s: %d %v, want 403", req[0], req[1], code, err)
		}
	}
	z, _ := NewAuthorizer(ModeAlwaysAllow, nil)
	rr, nr, _, _ := z.RulesFor(context.Background(), u, "default")
	if len(rr) != 0 || len(nr) != 1 || !slices.Equal(nr[0].GetNonResourceURLs(), []string{"/cluster/join"}) {
		t.Errorf("a peer's rules: %v %v", rr, nr)
	}

	// Another CN of the peer CA, or a peer CA certificate without
	// clientAuth, is nobody.
	for name, c := range map[string]*testpki.Cert{
		"other CN":      peerCA.Issue(t, "intruder", nil),
		"no clientAuth": peerCA.Issue(t, "leasehold-peer", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth)),
		"foreign CA":    testpki.NewCA(t).Issue(t, "leasehold-peer", nil),
		"expired":       peerCA.Issue(t, "leasehold-peer", nil, testpki.Expired()),
	} {
		if _, err := with(c, "POST", "/cluster/join"); err != ErrUnauthorized {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
		}
	}
	// A client certificate is still a user of its own.
	admin := clientCA.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	if code, err := with(admin, "GET", "/metrics"); err != nil || code != 200 {
		t.Errorf("admin: %d %v", code, err)
	}
}

// TestOneCAForClientsAndPeers: with one CA for both (leaseholdctl certs
// init makes one), the peer CN is a member, any other CN a user.
func TestOneCAForClientsAndPeers(t *testing.T) {
	ca := testpki.NewCA(t)
	a, err := NewAuthenticator(Config{ClientCAFile: ca.CertFile, PeerCAFile: ca.CertFile, PeerAllowedCN: "leasehold-peer"})
	if err != nil {
		t.Fatal(err)
	}
	for cn, want := range map[string]string{"leasehold-peer": "system:leasehold:peer:leasehold-peer", "alice": "alice"} {
		r := httptest.NewRequest("POST", "/cluster/join", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{ca.Issue(t, cn, nil).Leaf}}
		if u, err := a.Authenticate(r); err != nil || u.GetName() != want {
			t.Errorf("CN %s: %v %v, want %s", cn, u, err, want)
		}
	}
}
