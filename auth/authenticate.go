package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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
	// PeerCAFile, if set, also accepts client certificates of the peer CA
	// (with PeerAllowedCN as their CN, if set): a node joining the cluster
	// presents its peer certificate. Such a client is user
	// system:leasehold:peer:<CN> in group PeerGroup, which the authorizer
	// lets join the cluster and do nothing else.
	PeerCAFile    string
	PeerAllowedCN string
}

// PeerGroup is the group of members authenticated by their peer
// certificate.
const PeerGroup = "system:leasehold:peers"

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
	certs     authenticator.Request // client certificates; nil: none accepted
	tokens    authenticator.Request // bearer tokens; nil: none accepted
	anonymous bool
	clientCAs *x509.CertPool
}

// NewAuthenticator loads the files c names. With nothing configured every
// request is anonymous: the node is open, as its authorizer will say.
func NewAuthenticator(c Config) (*Authenticator, error) {
	a := &Authenticator{anonymous: c.Anonymous || !c.Configured()}
	var certs []authenticator.Request
	if c.ClientCAFile != "" {
		pool, err := loadPool(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("client CA file: %w", err)
		}
		opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		certs = append(certs, x509request.New(opts, x509request.CommonNameUserConversion))
	}
	if c.PeerCAFile != "" {
		pool, err := loadPool(c.PeerCAFile)
		if err != nil {
			return nil, fmt.Errorf("peer CA file: %w", err)
		}
		opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		peer := x509request.New(opts, peerUser(c.PeerAllowedCN))
		if c.PeerAllowedCN != "" {
			// One CA may sign both client and peer certificates (as
			// leaseholdctl certs init does): the peer CN then decides,
			// before the client CA would take a member for a user.
			certs = append([]authenticator.Request{peer}, certs...)
		} else {
			certs = append(certs, peer)
		}
	}
	if c.ClientCAFile != "" || c.PeerCAFile != "" {
		// The TLS server asks for certificates of either CA: a client
		// offers only one that a CA the server names has signed.
		a.clientCAs = x509.NewCertPool()
		for _, f := range []string{c.ClientCAFile, c.PeerCAFile} {
			if f != "" {
				pem, _ := os.ReadFile(f)
				a.clientCAs.AppendCertsFromPEM(pem)
			}
		}
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
	if len(certs) > 0 {
		a.certs = group.NewAuthenticatedGroupAdder(union.New(certs...))
	}
	if len(tokens) > 0 {
		a.tokens = group.NewAuthenticatedGroupAdder(bearertoken.New(tokenunion.New(tokens...)))
	}
	return a, nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates", file)
	}
	return pool, nil
}

// peerUser maps a verified peer certificate to its member identity; a CN
// other than allowedCN (when set) is not recognised.
func peerUser(allowedCN string) x509request.UserConversion {
	return x509request.UserConversionFunc(func(chain []*x509.Certificate) (*authenticator.Response, bool, error) {
		cn := chain[0].Subject.CommonName
		if cn == "" || (allowedCN != "" && cn != allowedCN) {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{
			Name:   "system:leasehold:peer:" + cn,
			Groups: []string{PeerGroup},
		}}, true, nil
	})
}

// ClientCAs is the pool a TLS server should ask client certificates of;
// nil when client certificates are not accepted.
func (a *Authenticator) ClientCAs() *x509.CertPool { return a.clientCAs }

// Authenticate returns the request's user, or ErrUnauthorized. On success
// (anonymous included) it removes the Authorization header, so that no
// handler sees the credential (kube-apiserver does the same).
func (a *Authenticator) Authenticate(r *http.Request) (user.Info, error) {
	if a.certs == nil && a.tokens == nil {
		r.Header.Del("Authorization")
		return Anonymous, nil
	}
	resp, ok, err := a.authenticate(r)
	switch {
	case ok:
		r.Header.Del("Authorization")
		return resp.User, nil
	case err == nil && a.anonymous:
		// No authenticator recognised a credential, and none failed.
		r.Header.Del("Authorization")
		return Anonymous, nil
	default:
		return nil, ErrUnauthorized
	}
}

// authenticate tries the client certificate, then the bearer token, as
// kube-apiserver's union does: the first that recognises the request wins,
// and the failures of the others are reported only when none does.
func (a *Authenticator) authenticate(r *http.Request) (*authenticator.Response, bool, error) {
	var errs []error
	if a.certs != nil && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		if resp := verifiedConn(r); resp != nil {
			return resp, true, nil
		}
		resp, ok, err := a.certs.AuthenticateRequest(r)
		if ok {
			rememberConn(r, resp)
			return resp, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if a.tokens != nil {
		resp, ok, err := a.tokens.AuthenticateRequest(r)
		if ok {
			return resp, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, utilerrors.NewAggregate(errs)
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
