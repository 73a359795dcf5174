package main

// TLS: --cacert, --cert and --key make leasebench a TLS client of either
// target, as client-go is of kube-apiserver and kube-apiserver of etcd.
// leasehold's https:// endpoints are spoken to in HTTP/2 (negotiated with
// ALPN, as client-go's transport does), etcd's with gRPC over TLS
// (clientv3.Config.TLS). The nodes' /metrics, which secured nodes answer
// only to an authenticated client, are read with --metrics-cert and
// --metrics-key (by default the workload's own certificate).
//
// leasebench cert makes a key and a certificate signed by a CA, for the
// members of a test cluster (scripts/bench.sh gives etcd one signed by the
// local CA of scripts/cluster.sh) and for a client identity.

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/pki"
)

// tlsFiles are the files of a TLS client: the CA that signed the servers'
// certificates, and the client's own certificate and key.
type tlsFiles struct {
	caCert, cert, key string
}

func (f tlsFiles) empty() bool { return f.caCert == "" && f.cert == "" && f.key == "" }

// load builds the client's TLS configuration; nil when no file is given.
// Without --cacert the system's roots verify the servers.
func (f tlsFiles) load() (*tls.Config, error) {
	if f.empty() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.caCert != "" {
		pem, err := os.ReadFile(f.caCert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", f.caCert)
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.cert != "" && f.key != "":
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	case f.cert != "" || f.key != "":
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	return cfg, nil
}

// newTransport is an HTTP transport that keeps up to idlePerHost idle
// connections to a node. With TLS it speaks HTTP/2 where the server offers
// it (ALPN), as client-go does, unless http1: a custom TLSClientConfig
// turns net/http's automatic HTTP/2 off unless ForceAttemptHTTP2 is set.
func newTransport(tlsCfg *tls.Config, idlePerHost int, http1 bool) *http.Transport {
	tr := &http.Transport{
		Proxy:               nil, // loopback benchmarks: never through a proxy from the environment
		MaxIdleConns:        2 * idlePerHost,
		MaxIdleConnsPerHost: idlePerHost,
		IdleConnTimeout:     time.Minute,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if tlsCfg != nil {
		tr.TLSClientConfig = tlsCfg.Clone()
		tr.ForceAttemptHTTP2 = !http1
	}
	return tr
}

// certMain is `leasebench cert`: a new ECDSA P-256 key and a certificate
// for it signed by the CA, written to OUT.key and OUT.crt.
func certMain(args []string) int {
	fs := flag.NewFlagSet("leasebench cert", flag.ContinueOnError)
	caCert := fs.String("ca-cert", "", "the CA's certificate (PEM)")
	caKey := fs.String("ca-key", "", "the CA's private key (PEM)")
	cn := fs.String("cn", "", "the certificate's common name (a client certificate's user)")
	orgs := fs.String("o", "", "organizations, comma separated (a client certificate's groups)")
	ips := fs.String("ip", "", "IP SANs, comma separated")
	dns := fs.String("dns", "", "DNS SANs, comma separated")
	usage := fs.String("usage", "server,client", "extended key usages, comma separated: server, client")
	days := fs.Int("days", 30, "days the certificate is valid")
	out := fs.String("out", "", "writes OUT.crt and OUT.key (mode 0600)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: leasebench cert --ca-cert CA.crt --ca-key CA.key --cn NAME [--o ORGS] [--ip IPS] [--dns NAMES] [--usage server,client] --out PREFIX")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *caCert == "" || *caKey == "" || *cn == "" || *out == "" {
		fs.Usage()
		return 2
	}
	req := certRequest{cn: *cn, orgs: splitList(*orgs), dns: splitList(*dns), days: *days}
	for _, s := range splitList(*ips) {
		ip := net.ParseIP(s)
		if ip == nil {
			fmt.Fprintf(os.Stderr, "leasebench cert: %q is not an IP address\n", s)
			return 2
		}
		req.ips = append(req.ips, ip)
	}
	for _, u := range splitList(*usage) {
		switch u {
		case "server":
			req.usages = append(req.usages, x509.ExtKeyUsageServerAuth)
		case "client":
			req.usages = append(req.usages, x509.ExtKeyUsageClientAuth)
		default:
			fmt.Fprintf(os.Stderr, "leasebench cert: unknown usage %q (want server or client)\n", u)
			return 2
		}
	}
	ca, err := tls.LoadX509KeyPair(*caCert, *caKey)
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench cert:", err)
		return 1
	}
	certPEM, keyPEM, err := issueCert(ca, req)
	if err == nil {
		err = os.WriteFile(*out+".key", keyPEM, 0o600)
	}
	if err == nil {
		err = os.WriteFile(*out+".crt", certPEM, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasebench cert:", err)
		return 1
	}
	return 0
}

type certRequest struct {
	cn     string
	orgs   []string
	ips    []net.IP
	dns    []string
	usages []x509.ExtKeyUsage
	days   int
}

// issueCert makes a key and a certificate for it signed by ca (with
// internal/pki, as leaseholdctl certs init does); both in PEM, the key in
// PKCS #8.
func issueCert(ca tls.Certificate, req certRequest) (certPEM, keyPEM []byte, err error) {
	if len(ca.Certificate) == 0 {
		return nil, nil, errors.New("the CA file holds no certificate")
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	signer, ok := ca.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the CA's key cannot sign")
	}
	cert, key, err := (&pki.CA{Cert: caCert, Key: signer}).Issue(pki.Request{
		CommonName: req.cn, Organizations: req.orgs, Usages: req.usages, IPs: req.ips, DNSNames: req.dns,
		Validity: time.Duration(max(req.days, 1)) * 24 * time.Hour,
	})
	if err != nil {
		return nil, nil, err
	}
	der := cert.Raw
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
