package auth

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// A TLS connection's client certificate cannot change while it is open
// (the server never renegotiates), yet verifying its chain costs more than
// the rest of a Lease renewal's authentication and authorization together.
// So a connection remembers the user its certificate was verified as, and
// every request on it after the first skips the verification, until the
// certificate chain expires or connCacheTTL passes.

// connCacheTTL bounds how long a verification is trusted without being
// repeated.
const connCacheTTL = time.Minute

type connCacheKey struct{}

// connCache is one connection's verified certificate user.
type connCache struct {
	mu      sync.Mutex
	leaf    []byte // the certificate verified, to be sure it is the same
	resp    *authenticator.Response
	expires time.Time
}

// ConnContext is an http.Server ConnContext: it gives every connection the
// place where its verified certificate user is kept. Requests on an
// HTTP/2 connection share it as HTTP/1.1 ones do.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connCacheKey{}, &connCache{})
}

// verifiedConn returns the user r's connection was verified as, or nil.
func verifiedConn(r *http.Request) *authenticator.Response {
	c, _ := r.Context().Value(connCacheKey{}).(*connCache)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resp == nil || !time.Now().Before(c.expires) || string(c.leaf) != string(r.TLS.PeerCertificates[0].Raw) {
		return nil
	}
	return c.resp
}

// rememberConn keeps resp for the rest of r's connection, until the
// earliest expiry in the presented chain or connCacheTTL.
func rememberConn(r *http.Request, resp *authenticator.Response) {
	c, _ := r.Context().Value(connCacheKey{}).(*connCache)
	if c == nil {
		return
	}
	expires := time.Now().Add(connCacheTTL)
	for _, cert := range r.TLS.PeerCertificates {
		if cert.NotAfter.Before(expires) {
			expires = cert.NotAfter
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaf, c.resp, c.expires = r.TLS.PeerCertificates[0].Raw, resp, expires
}
