package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Config names the credentials a node accepts. The zero value accepts none.
type Config struct {
	// ClientCAFile verifies client certificates: CN is the user, O the groups.
	ClientCAFile string
	// TokenAuthFile holds static bearer tokens in kube-apiserver's CSV.
	TokenAuthFile string
	// ServiceAccountKeyFiles hold the PEM public keys (RSA or ECDSA) that
	// verify service-account JWTs issued by one of ServiceAccountIssuers
	// for one of APIAudiences (default: the first issuer).
	ServiceAccountKeyFiles []string
	ServiceAccountIssuers  []string
	APIAudiences           []string
	// Anonymous lets a request that carries no credentials in as
	// system:anonymous. A request whose credentials fail is refused anyway.
	Anonymous bool
}

// Configured reports whether any authenticator is configured.
func (c Config) Configured() bool {
	return c.ClientCAFile != "" || c.TokenAuthFile != "" || len(c.ServiceAccountKeyFiles) > 0
}

// Anonymous is the identity of a request without credentials.
var Anonymous user.Info = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

// ErrUnauthorized is any failed authentication: a client learns nothing
// more than kube-apiserver tells it (401 "Unauthorized").
var ErrUnauthorized = errors.New("Unauthorized")

// Authenticator turns a request into the user it comes from.
type Authenticator struct {
	request   authenticator.Request // nil: nothing configured
	anonymous bool
	clientCAs *x509.CertPool
}

// NewAuthenticator loads the files c names. With nothing configured every
// request is anonymous: the node is open, as its authorizer will say.
func NewAuthenticator(c Config) (*Authenticator, error) {
	a := &Authenticator{anonymous: c.Anonymous || !c.Configured()}
	var reqs []authenticator.Request
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		a.clientCAs = x509.NewCertPool()
		if !a.clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA file %s: no PEM certificates", c.ClientCAFile)
		}
		opts := x509.VerifyOptions{Roots: a.clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		reqs = append(reqs, x509request.New(opts, x509request.CommonNameUserConversion))
	}
	var tokens []authenticator.Token
	if c.TokenAuthFile != "" {
		t, err := tokenfile.NewCSV(c.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("token auth file: %w", err)
		}
		tokens = append(tokens, t)
	}
	if len(c.ServiceAccountKeyFiles) > 0 {
		t, err := newServiceAccountTokens(c.ServiceAccountKeyFiles, c.ServiceAccountIssuers, c.APIAudiences)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	if len(tokens) > 0 {
		reqs = append(reqs, bearertoken.New(tokenunion.New(tokens...)))
	}
	if len(reqs) > 0 {
		a.request = group.NewAuthenticatedGroupAdder(union.New(reqs...))
	}
	return a, nil
}

// ClientCAs is the pool a TLS server should ask client certificates of;
// nil when client certificates are not accepted.
func (a *Authenticator) ClientCAs() *x509.CertPool { return a.clientCAs }

// Authenticate returns the request's user, or ErrUnauthorized. On success
// it removes the Authorization header, so that no handler sees the
// credential (kube-apiserver does the same).
func (a *Authenticator) Authenticate(r *http.Request) (user.Info, error) {
	if a.request == nil {
		return Anonymous, nil
	}
	resp, ok, err := a.request.AuthenticateRequest(r)
	switch {
	case ok:
		r.Header.Del("Authorization")
		return resp.User, nil
	case err == nil && a.anonymous:
		// No authenticator recognised a credential, and none failed.
		return Anonymous, nil
	default:
		return nil, ErrUnauthorized
	}
}

type userKey struct{}

// WithUser returns a context carrying u.
func WithUser(ctx context.Context, u user.Info) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user a context carries.
func UserFrom(ctx context.Context) (user.Info, bool) {
	u, ok := ctx.Value(userKey{}).(user.Info)
	return u, ok
}
