package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/util/keyutil"
)

// serviceAccountTokens verifies the JWTs Kubernetes issues to service
// accounts (projected and legacy), as kube-apiserver's
// --service-account-key-file does: signature by one of the keys, issuer,
// audience, validity times. kube-apiserver also checks that the account
// (and the bound pod, secret or node) still exists; leasehold holds no such
// objects, so a token is good until it expires.
type serviceAccountTokens struct {
	issuers   map[string]bool
	audiences authenticator.Audiences
	keys      []verifyKey
	now       func() time.Time
}

type verifyKey struct {
	id  string // kube's key id: base64url(SHA-256(PKIX DER))
	key crypto.PublicKey
}

// signatureAlgorithms are those kube-apiserver's keys sign with: RS256 for
// RSA, ES256/384/512 for ECDSA ("none" is never accepted).
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512,
}

func newServiceAccountTokens(keyFiles, issuers, audiences []string) (*serviceAccountTokens, error) {
	if len(issuers) == 0 {
		return nil, errors.New("--service-account-key-file needs --service-account-issuer")
	}
	t := &serviceAccountTokens{issuers: map[string]bool{}, now: time.Now}
	for _, iss := range issuers {
		t.issuers[iss] = true
	}
	t.audiences = audiences
	if len(t.audiences) == 0 {
		t.audiences = authenticator.Audiences{issuers[0]}
	}
	for _, f := range keyFiles {
		keys, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("service account key file %s: %w", f, err)
		}
		for _, k := range keys {
			id, err := keyID(k)
			if err != nil {
				return nil, fmt.Errorf("service account key file %s: %w", f, err)
			}
			t.keys = append(t.keys, verifyKey{id: id, key: k})
		}
	}
	return t, nil
}

func keyID(k crypto.PublicKey) (string, error) {
	switch k.(type) {
	case *rsa.PublicKey, *ecdsa.PublicKey:
	default:
		return "", fmt.Errorf("unsupported key type %T", k)
	}
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// privateClaims are the claims kube-apiserver puts in a bound token, and
// those of a legacy (secret-based) token.
type privateClaims struct {
	Kubernetes *struct {
		Namespace      string    `json:"namespace"`
		ServiceAccount tokenRef  `json:"serviceaccount"`
		Pod            *tokenRef `json:"pod"`
		Node           *tokenRef `json:"node"`
	} `json:"kubernetes.io"`
	LegacyNamespace string `json:"kubernetes.io/serviceaccount/namespace"`
	LegacyName      string `json:"kubernetes.io/serviceaccount/service-account.name"`
	LegacyUID       string `json:"kubernetes.io/serviceaccount/service-account.uid"`
}

type tokenRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// AuthenticateToken implements authenticator.Token. A token that is not a
// JWT, or whose unverified issuer is not one of ours, is not ours: another
// token authenticator may know it.
func (t *serviceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || !t.issuers[unverified.Issuer] {
		return nil, false, nil
	}
	var public jwt.Claims
	var private privateClaims
	if err := t.verify(tok, &public, &private); err != nil {
		return nil, false, err
	}
	if !t.issuers[public.Issuer] {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}
	if len(authenticator.Audiences(public.Audience).Intersect(t.audiences)) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(public.Audience), []string(t.audiences))
	}
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: t.now()}, jwt.DefaultLeeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, false, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, false, errors.New("service account token is issued in the future")
	case err != nil:
		return nil, false, err
	}
	sa := serviceaccount.ServiceAccountInfo{}
	if k := private.Kubernetes; k != nil {
		sa.Namespace, sa.Name, sa.UID = k.Namespace, k.ServiceAccount.Name, k.ServiceAccount.UID
		if k.Pod != nil {
			sa.PodName, sa.PodUID = k.Pod.Name, k.Pod.UID
		}
		if k.Node != nil {
			sa.NodeName, sa.NodeUID = k.Node.Name, k.Node.UID
		}
	} else {
		sa.Namespace, sa.Name, sa.UID = private.LegacyNamespace, private.LegacyName, private.LegacyUID
	}
	if sa.Namespace == "" || sa.Name == "" {
		return nil, false, errors.New("service account token does not name a namespace and service account")
	}
	if public.ID != "" {
		sa.CredentialID = "JTI=" + public.ID
	}
	return &authenticator.Response{User: sa.UserInfo(), Audiences: t.audiences}, true, nil
}

// verify checks the signature with the key the token names (its kid), or
// with every key when it names none.
func (t *serviceAccountTokens) verify(tok *jwt.JSONWebToken, claims ...any) error {
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	tried := 0
	var last error
	for _, k := range t.keys {
		if kid != "" && k.id != kid {
			continue
		}
		tried++
		if last = tok.Claims(k.key, claims...); last == nil {
			return nil
		}
	}
	if tried == 0 {
		return errors.New("invalid signature, no keys found")
	}
	return fmt.Errorf("invalid signature: %w", last)
}
