package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/internal/quietlog"
)

// servingCert is the API's certificate, read again when its files change,
// so that a rotated certificate is served without a restart (connections
// already open keep theirs). A pair that fails to load leaves the previous
// one in use.
type servingCert struct {
	certFile, keyFile string
	logger            hclog.Logger

	mu       sync.Mutex
	cert     *tls.Certificate
	stamp    [2]time.Time // modification times of the files cert came from
	badStamp [2]time.Time // of a pair that failed, logged once
}

func newServingCert(certFile, keyFile string, logger hclog.Logger) (*servingCert, error) {
	s := &servingCert{certFile: certFile, keyFile: keyFile, logger: logger}
	stamp, err := s.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS key pair: %w", err)
	}
	s.cert, s.stamp = &cert, stamp
	return s, nil
}

func (s *servingCert) stat() ([2]time.Time, error) {
	var t [2]time.Time
	for i, f := range []string{s.certFile, s.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return t, err
		}
		t[i] = fi.ModTime()
	}
	return t, nil
}

// get serves the current certificate to each handshake.
func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	stamp, err := s.stat()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || stamp == s.stamp {
		return s.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		if stamp != s.badStamp {
			s.badStamp = stamp
			s.logger.Warn("serving certificate files changed but cannot be loaded; still serving the previous one", "error", err)
		}
		return s.cert, nil
	}
	s.cert, s.stamp = &cert, stamp
	s.logger.Info("serving certificate reloaded", "file", s.certFile)
	return s.cert, nil
}

// apiServer is the API's HTTP server, configured as kube-apiserver
// configures its own (k8s.io/apiserver pkg/server/secure_serving.go): 1 MiB
// of headers, 32 s to read them, 90 s idle; over TLS, HTTP/2 by Go's own
// server with 100 concurrent streams a connection and 256 KiB frames and
// stream windows ("at least 99% of serialized resources in surveyed
// clusters were smaller than 256kb"), the connection's window room for all
// of its streams. A connection that takes no bytes for requestTimeout is
// closed. With TLS it asks for a client certificate signed by clientCAs
// without requiring one: the authenticator judges it, so a foreign or
// expired certificate gets 401, not a TLS alert, and token users connect
// alike. errorLog takes the server's own lines (bad handshakes, broken
// frames), which strangers can cause at will.
func apiServer(h http.Handler, cert *servingCert, clientCAs *x509.CertPool, requestTimeout time.Duration, errorLog *quietlog.Limiter, h2Errors *prometheus.CounterVec) *http.Server {
	const resourceBody99Percentile = 256 << 10
	const streams = 100
	srv := &http.Server{
		Handler:           h,
		ConnContext:       auth.ConnContext,
		MaxHeaderBytes:    1 << 20,
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          log.New(errorLog.Writer(), "", 0),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          streams,
			MaxReadFrameSize:              resourceBody99Percentile,
			MaxReceiveBufferPerStream:     resourceBody99Percentile,
			MaxReceiveBufferPerConnection: resourceBody99Percentile * streams,
			WriteByteTimeout:              requestTimeout,
			CountError:                    func(errType string) { h2Errors.WithLabelValues(errType).Inc() },
		},
	}
	if cert != nil {
		srv.TLSConfig = &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: cert.get,
			NextProtos:     []string{"h2", "http/1.1"},
		}
		if clientCAs != nil {
			srv.TLSConfig.ClientAuth = tls.RequestClientCert
			srv.TLSConfig.ClientCAs = clientCAs
		}
	}
	return srv
}
