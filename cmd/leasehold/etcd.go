package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/leasehold/leasehold/auth"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/etcdapi"
)

// startEtcd serves the etcd v3 API on cfg.EtcdAddr. With the API's TLS,
// it serves the same certificate and requires a client certificate signed
// by --client-ca-file, of a user the authorizer allows everything on
// leases and leasecandidates: the etcd API has no finer permissions.
func startEtcd(ctx context.Context, cfg Config, node *cluster.Node, cert *servingCert, authn *auth.Authenticator, authz auth.Authorizer, logger hclog.Logger) (*grpc.Server, error) {
	srv := etcdapi.New(etcdapi.Config{Node: node, Prefix: cfg.EtcdPrefix, MaxRequestBytes: int(cfg.MaxRequestBytes), Logger: logger})
	var opts []grpc.ServerOption
	if cert != nil {
		if authn.ClientCAs() == nil {
			return nil, errors.New("--etcd-addr with TLS needs --client-ca-file: the etcd API admits clients by their certificates only")
		}
		tc := &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: cert.get,
			ClientAuth:     tls.RequireAndVerifyClientCert,
			ClientCAs:      authn.ClientCAs(),
			NextProtos:     []string{"h2"},
		}
		check := func(ctx context.Context) error { return authorizeEtcd(ctx, authz) }
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)),
			grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				if err := check(ctx); err != nil {
					return nil, err
				}
				return h(ctx, req)
			}),
			grpc.StreamInterceptor(func(s any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				if err := check(ss.Context()); err != nil {
					return err
				}
				return h(s, ss)
			}))
	} else {
		logger.Warn("the etcd API is plain gRPC without authentication: anyone who reaches it may do anything (see --tls-cert-file)")
	}
	g := srv.GRPCServer(opts...)
	ln, err := net.Listen("tcp", cfg.EtcdAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on etcd address %s: %w", cfg.EtcdAddr, err)
	}
	go func() {
		if err := g.Serve(ln); err != nil {
			logger.Error("etcd API server failed", "error", err)
		}
	}()
	go srv.Run(ctx) // revokes expired etcd leases while this node leads
	scheme := "http://"
	if cert != nil {
		scheme = "https://"
	}
	node.SetEtcdURL(scheme + cfg.EtcdAddr)
	logger.Info("serving the etcd v3 API", "addr", cfg.EtcdAddr, "prefix", cfg.EtcdPrefix, "tls", cert != nil)
	return g, nil
}

// authorizeEtcd admits the client whose verified certificate (CN the
// user, O the groups, as kube-apiserver reads one) may do everything on
// leases and leasecandidates in every namespace.
func authorizeEtcd(ctx context.Context, authz auth.Authorizer) error {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return rpctypes.ErrGRPCPermissionDenied
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return rpctypes.ErrGRPCPermissionDenied
	}
	leaf := info.State.VerifiedChains[0][0]
	u := &user.DefaultInfo{Name: leaf.Subject.CommonName, Groups: append([]string{user.AllAuthenticated}, leaf.Subject.Organization...)}
	for _, resource := range []string{"leases", "leasecandidates"} {
		d, _, err := authz.Authorize(ctx, authorizer.AttributesRecord{
			User: u, Verb: "*", APIGroup: "coordination.k8s.io", APIVersion: "*", Resource: resource, ResourceRequest: true,
		})
		if err != nil || d != authorizer.DecisionAllow {
			return rpctypes.ErrGRPCPermissionDenied
		}
	}
	return nil
}
