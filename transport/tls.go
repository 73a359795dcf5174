package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// PeerTLS holds the files of the peer port's mutual TLS, as etcd's
// --peer-cert-file, --peer-key-file, --peer-trusted-ca-file and
// --peer-cert-allowed-cn name them.
//
// A node presents the same certificate to the peers that connect to it and
// to the peers it connects to, so it carries both the serverAuth and the
// clientAuth extended key usages (or none), and SANs that name the host of
// the node's peer address as the other members dial it (an IP SAN for an
// IP address). Listen refuses files that do not load, and a certificate
// that is not valid, for both usages, under the trusted CAs; the SANs it
// cannot check, not knowing how the others dial this node.
//
// The files are read again when one of them changes (by modification time
// or size), at the next connection made or accepted: a rotated certificate
// is used without a restart, and a CA file that lists both the old and the
// new CA lets a rotation to a new CA proceed node by node. Files that fail
// to load leave the previous ones in use (logged once per change).
type PeerTLS struct {
	// CertFile is this node's certificate, PEM, optionally followed by
	// the intermediates that chain it to a trusted CA.
	CertFile string
	// KeyFile is the certificate's private key, PEM.
	KeyFile string
	// TrustedCAFile holds the PEM certificates of the CAs whose
	// certificates identify peers: a connection must present one signed
	// by them, and a peer dialled must serve one.
	TrustedCAFile string
	// AllowedCN, if set, is the subject common name a connecting peer's
	// verified certificate must have; any other is refused.
	AllowedCN string
}

func (p *PeerTLS) validate() error {
	var missing []string
	if p.CertFile == "" {
		missing = append(missing, "certificate file")
	}
	if p.KeyFile == "" {
		missing = append(missing, "key file")
	}
	if p.TrustedCAFile == "" {
		missing = append(missing, "trusted CA file")
	}
	if len(missing) > 0 {
		return fmt.Errorf("peer TLS needs a certificate file, a key file and a trusted CA file; missing: %v", missing)
	}
	return nil
}

// tlsMaterial is what the peer TLS files held when last read.
type tlsMaterial struct {
	cert   tls.Certificate
	pool   *x509.CertPool
	server *tls.Config
}

// fileStamp tells whether a file changed.
type fileStamp struct {
	mod  time.Time
	size int64
}

// peerTLS serves the current TLS material, reading the files again when
// they change.
type peerTLS struct {
	files  PeerTLS
	logger hclog.Logger

	mu     sync.Mutex
	mat    *tlsMaterial
	stamps [3]fileStamp // of the files mat was read from
	failed [3]fileStamp // of files that last failed to load, logged once
}

func newPeerTLS(files PeerTLS, logger hclog.Logger) (*peerTLS, error) {
	if err := files.validate(); err != nil {
		return nil, err
	}
	p := &peerTLS{files: files, logger: logger}
	stamps, err := p.stat()
	if err != nil {
		return nil, err
	}
	mat, err := p.load()
	if err != nil {
		return nil, err
	}
	p.mat, p.stamps = mat, stamps
	return p, nil
}

func (p *peerTLS) stat() ([3]fileStamp, error) {
	var s [3]fileStamp
	for i, f := range []string{p.files.CertFile, p.files.KeyFile, p.files.TrustedCAFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return s, err
		}
		s[i] = fileStamp{fi.ModTime(), fi.Size()}
	}
	return s, nil
}

// current returns the material, read again first if a file changed.
func (p *peerTLS) current() *tlsMaterial {
	stamps, err := p.stat()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && stamps == p.stamps {
		return p.mat
	}
	var mat *tlsMaterial
	if err == nil {
		mat, err = p.load()
	}
	if err != nil {
		if stamps != p.failed {
			p.failed = stamps
			p.logger.Warn("peer TLS files changed but cannot be loaded; still using the previous ones", "error", err)
		}
		return p.mat
	}
	p.mat, p.stamps, p.failed = mat, stamps, [3]fileStamp{}
	p.logger.Info("peer TLS files reloaded", "cert", p.files.CertFile, "not_after", mat.cert.Leaf.NotAfter)
	return mat
}

// load reads and checks the files.
func (p *peerTLS) load() (*tlsMaterial, error) {
	f := p.files
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("peer TLS: load %s and %s: %w", f.CertFile, f.KeyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("peer TLS: parse %s: %w", f.CertFile, err)
		}
	}
	caPEM, err := os.ReadFile(f.TrustedCAFile)
	if err != nil {
		return nil, fmt.Errorf("peer TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("peer TLS: no PEM certificate in trusted CA file %s", f.TrustedCAFile)
	}
	// Peers check this certificate both ways: find out now, not at the
	// first connection.
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("peer TLS: parse an intermediate in %s: %w", f.CertFile, err)
		}
		inter.AddCert(c)
	}
	for _, use := range []struct {
		eku  x509.ExtKeyUsage
		name string
	}{{x509.ExtKeyUsageServerAuth, "serverAuth"}, {x509.ExtKeyUsageClientAuth, "clientAuth"}} {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{use.eku}})
		if err != nil {
			return nil, fmt.Errorf("peer TLS: certificate %s is not valid for %s under the CAs of %s, so peers would refuse it: %w",
				f.CertFile, use.name, f.TrustedCAFile, err)
		}
	}
	server := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		Certificates: []tls.Certificate{cert},
		// No resumption: every connection shows a certificate, and the
		// server sends nothing unasked on an idle connection (see alive).
		SessionTicketsDisabled: true,
	}
	if cn := f.AllowedCN; cn != "" {
		// Called after the chain was verified against ClientCAs.
		server.VerifyConnection = func(cs tls.ConnectionState) error {
			if got := cs.PeerCertificates[0].Subject.CommonName; got != cn {
				return fmt.Errorf("peer certificate CN %q is not the allowed CN %q", got, cn)
			}
			return nil
		}
	}
	return &tlsMaterial{cert: cert, pool: pool, server: server}, nil
}

// serverConfig is the tls.Config of accepted connections.
func (p *peerTLS) serverConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return p.current().server, nil
		},
	}
}

// clientConfig is the tls.Config of a connection dialled to addr, the
// peer's address (before any DialRewrite): its host is the name the
// peer's certificate must carry.
func (p *peerTLS) clientConfig(addr string) *tls.Config {
	mat := p.current()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    mat.pool,
		ServerName: host,
		// Sent whatever CAs the server names as acceptable, so that a
		// refusal is the server's, and logged there.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &mat.cert, nil
		},
	}
}

// tlsAccepted is the byte a TLS server writes once it has accepted the
// client's certificate. Under TLS 1.3 the client's handshake ends before
// the server has judged the client's certificate; waiting for this byte
// lets dial fail, with the server's alert, when it is refused, so that a
// refused connection never counts as a request sent.
const tlsAccepted byte = 0x5a

var errNotAccepted = errors.New("peer did not accept the connection")
