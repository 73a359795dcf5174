package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/testpki"
	"github.com/leasehold/leasehold/test/harness"
)

// TestEtcdAPI: the real binary with --etcd-addr and TLS. The etcd port
// admits only a client certificate of the API's CA whose user may do
// everything on Leases; a Lease written through REST is read through etcd
// at its resourceVersion; a client with every endpoint carries on when the
// Raft leader is SIGKILLed, and what it wrote survives the restart.
func TestEtcdAPI(t *testing.T) {
	ca, peerCA, foreign := testpki.NewCA(t), testpki.NewCA(t), testpki.NewCA(t)
	serving := ca.Issue(t, "leasehold", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	peer := peerCA.Issue(t, peerCN, nil)
	admin := ca.Issue(t, "kube-apiserver-etcd-client", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	alice := ca.Issue(t, "alice", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	stranger := foreign.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	creds := &apiCredentials{
		rest: rest.TLSClientConfig{CAData: ca.CertPEM(), CertData: admin.CertPEM, KeyData: admin.KeyPEM},
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{admin.TLSCertificate()}},
			ForceAttemptHTTP2: true,
		}},
	}
	ports := harness.FreePorts(t, len(clusterNames))
	etcdAddr := map[string]string{}
	var endpoints []string
	for i, name := range clusterNames {
		etcdAddr[name] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		endpoints = append(endpoints, "https://"+etcdAddr[name])
	}
	pc := newProcClusterEach(t, "", creds, func(name string) []string { return []string{"--etcd-addr", etcdAddr[name]} },
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile,
		"--client-ca-file", ca.CertFile,
		"--peer-cert-file", peer.CertFile, "--peer-key-file", peer.KeyFile,
		"--peer-trusted-ca-file", peerCA.CertFile, "--peer-cert-allowed-cn", peerCN,
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	client := func(t *testing.T, cert *testpki.Cert, eps ...string) *clientv3.Client {
		t.Helper()
		tc := &tls.Config{RootCAs: ca.Pool()}
		if cert != nil {
			tc.Certificates = []tls.Certificate{cert.TLSCertificate()}
		}
		cl, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tc, DialTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	kube := client(t, admin, endpoints...)
	// Writes wait for feature level 2, raised a second or so after start.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := kube.Put(ctx, "/registry/health-probe", "ok")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("put through the etcd API: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	t.Run("only the right certificates", func(t *testing.T) {
		ac := client(t, alice, endpoints[0])
		_, err := ac.Put(ctx, "/registry/alice", "x")
		if !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("alice's put: %v, want %v", err, rpctypes.ErrPermissionDenied)
		}
		if _, err := ac.Get(ctx, "/registry/health-probe"); !errors.Is(err, rpctypes.ErrPermissionDenied) {
			t.Fatalf("alice's get: %v, want %v", err, rpctypes.ErrPermissionDenied)
		}
		for name, cert := range map[string]*testpki.Cert{"no certificate": nil, "a foreign CA's": stranger} {
			cl := client(t, cert, endpoints[0])
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := cl.Put(cctx, "/registry/"+name, "x")
			cancel()
			if err == nil || status.Code(err) == codes.OK {
				t.Fatalf("put with %s: no error", name)
			}
		}
		got, err := kube.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range got.Kvs {
			if string(kv.Key) != "/registry/health-probe" {
				t.Fatalf("a refused client stored %s", kv.Key)
			}
		}
	})

	t.Run("one store, two doors", func(t *testing.T) {
		holder := "rest"
		l, err := pc.nodes[1].protoClient.CoordinationV1().Leases("kube-system").Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "two-doors"}, Spec: coordv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := client(t, admin, endpoints[2]).Get(ctx, "/registry/leases/kube-system/two-doors")
		if err != nil || len(got.Kvs) != 1 || strconv.FormatInt(got.Kvs[0].ModRevision, 10) != l.ResourceVersion {
			t.Fatalf("through etcd: %v %v, want mod_revision %s", got, err, l.ResourceVersion)
		}
	})

	t.Run("leader SIGKILLed", func(t *testing.T) {
		leader := pc.leader(10 * time.Second)
		pc.kill(leader)
		var rev int64
		deadline := time.Now().Add(30 * time.Second)
		for {
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			resp, err := kube.Txn(wctx).If(clientv3.Compare(clientv3.ModRevision("/registry/after-kill"), "=", 0)).
				Then(clientv3.OpPut("/registry/after-kill", "survived")).Else(clientv3.OpGet("/registry/after-kill")).Commit()
			cancel()
			if err == nil {
				rev = resp.Header.Revision
				if !resp.Succeeded {
					// An earlier try whose answer was lost took effect.
					kv := resp.Responses[0].GetResponseRange().Kvs[0]
					if string(kv.Value) != "survived" {
						t.Fatalf("create after the kill found %q", kv.Value)
					}
					rev = kv.ModRevision
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no write through the etcd API within 30s of killing %s: %v", leader, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		pc.restart(leader)
		pc.waitReady(leader, 30*time.Second)
		got, err := client(t, admin, "https://"+etcdAddr[leader]).Get(ctx, "/registry/after-kill")
		if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "survived" || got.Kvs[0].ModRevision != rev {
			t.Fatalf("on the restarted %s: %v %v", leader, got, err)
		}
	})
}
