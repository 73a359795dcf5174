package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/internal/testpki"
	"github.com/leasehold/leasehold/test/harness"
)

// securePKI is what a secured cluster's tests hold: the API's CA and
// credentials, the peer CA, and the service-account signing key.
type securePKI struct {
	apiCA, peerCA *testpki.CA
	admin         *testpki.Cert // CN admin, O system:masters
	saKey         *rsa.PrivateKey
	saKeyID       string
	kubeconfig    string
}

const (
	saIssuer   = "https://issuer.leasehold.test"
	aliceToken = "alice-0123456789abcdef"
	peerCN     = "leasehold-peer"
)

// newSecureCluster starts n1..n3 with everything on: TLS on the API,
// client certificates, a token file and service-account keys, and mutual
// TLS on the peer port with a CA of its own and a required CN.
func newSecureCluster(t *testing.T) (*procCluster, *securePKI) {
	t.Helper()
	dir := t.TempDir()
	p := &securePKI{apiCA: testpki.NewCA(t), peerCA: testpki.NewCA(t)}
	serving := p.apiCA.Issue(t, "leasehold", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	peer := p.peerCA.Issue(t, peerCN, nil)
	p.admin = p.apiCA.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))

	tokens := filepath.Join(dir, "tokens.csv")
	mustWrite(t, tokens, aliceToken+`,alice,u-alice,"team-a,team-b"`+"\n")
	var err error
	if p.saKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&p.saKey.PublicKey)
	sum := sha256.Sum256(der)
	p.saKeyID = base64.RawURLEncoding.EncodeToString(sum[:])
	saPub := filepath.Join(dir, "sa.pub")
	mustWrite(t, saPub, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))

	creds := &apiCredentials{
		rest: rest.TLSClientConfig{CAData: p.apiCA.CertPEM(), CertData: p.admin.CertPEM, KeyData: p.admin.KeyPEM},
		http: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: p.apiCA.Pool(), Certificates: []tls.Certificate{p.admin.TLSCertificate()}},
			ForceAttemptHTTP2: true,
		}},
	}
	pc := newProcClusterWith(t, creds,
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile,
		"--client-ca-file", p.apiCA.CertFile, "--token-auth-file", tokens,
		"--service-account-key-file", saPub, "--service-account-issuer", saIssuer,
		"--peer-cert-file", peer.CertFile, "--peer-key-file", peer.KeyFile,
		"--peer-trusted-ca-file", p.peerCA.CertFile, "--peer-cert-allowed-cn", peerCN,
		// Snapshots every few dozen entries: a restarted node restores the
		// policy from a snapshot, not only from the log.
		"--snapshot-threshold", "32", "--snapshot-interval", "100ms", "--trailing-logs", "8",
	)
	p.kubeconfig = filepath.Join(dir, "kubeconfig")
	mustWrite(t, p.kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster: {server: "https://%s", certificate-authority-data: %s}
users:
- name: admin
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: leasehold
  context: {cluster: leasehold, user: admin, namespace: default}
current-context: leasehold
`, pc.nodes[1].apiAddr, b64(p.apiCA.CertPEM()), b64(p.admin.CertPEM), b64(p.admin.KeyPEM)))
	return pc, p
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// serviceAccountToken signs a JWT as kube-apiserver issues one to
// system:serviceaccount:team-a:elector, with claims changed by edit.
func (p *securePKI) serviceAccountToken(t *testing.T, key *rsa.PrivateKey, edit func(*jwt.Claims)) string {
	t.Helper()
	now := time.Now()
	claims := jwt.Claims{
		Issuer: saIssuer, Subject: "system:serviceaccount:team-a:elector", Audience: jwt.Audience{saIssuer},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour)),
		ID: "jti-1",
	}
	if edit != nil {
		edit(&claims)
	}
	private := map[string]any{"kubernetes.io": map[string]any{
		"namespace":      "team-a",
		"serviceaccount": map[string]any{"name": "elector", "uid": "sa-uid-1"},
		"pod":            map[string]any{"name": "elector-0", "uid": "pod-uid-1"},
	}}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", p.saKeyID))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Claims(private).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// client is an HTTPS client of the API CA with the given client
// certificates (none: token users, strangers).
func (p *securePKI) client(certs ...*testpki.Cert) *http.Client {
	cfg := &tls.Config{RootCAs: p.apiCA.Pool()}
	for _, c := range certs {
		cfg.Certificates = append(cfg.Certificates, c.TLSCertificate())
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
}

type answer struct {
	code   int
	header http.Header
	body   string
	proto  int
}

func call(t *testing.T, c *http.Client, method, url, authz string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return answer{resp.StatusCode, resp.Header, string(b), resp.ProtoMajor}
}

// unauthorizedBody is kube-apiserver's 401, byte for byte.
const unauthorizedBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"

// A secured cluster: only the right clients get into the API and only
// members onto the peer port; what a refused request tried did not happen.
func TestSecureCluster(t *testing.T) {
	pc, p := newSecureCluster(t)
	outer := t
	n1 := pc.nodes[0]
	base := "https://" + n1.apiAddr
	ctx := context.Background()
	leasePath := "/apis/coordination.k8s.io/v1/namespaces/default/leases"

	t.Run("members replicate over mutual TLS", func(t *testing.T) {
		leader := pc.leader(10 * time.Second)
		var follower *procNode
		for _, n := range pc.nodes {
			if n.name != leader {
				follower = n
				break
			}
		}
		holder := "admin-wrote-this"
		created, err := follower.protoClient.CoordinationV1().Leases("default").Create(ctx, &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "replicated"}, Spec: coordv1.LeaseSpec{HolderIdentity: &holder},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create through follower %s: %v", follower.name, err)
		}
		for _, n := range pc.nodes {
			got, err := n.jsonClient.CoordinationV1().Leases("default").Get(ctx, "replicated", metav1.GetOptions{})
			if err != nil || got.ResourceVersion != created.ResourceVersion {
				t.Fatalf("%s: %v %+v", n.name, err, got)
			}
		}
	})

	t.Run("HTTP/2 with a client certificate", func(t *testing.T) {
		a := call(t, p.client(p.admin), "GET", base+"/version", "", nil)
		if a.code != 200 || a.proto != 2 {
			t.Fatalf("GET /version: %d over HTTP/%d: %s", a.code, a.proto, a.body)
		}
	})

	t.Run("health needs no credentials", func(t *testing.T) {
		for _, path := range []string{"/livez", "/readyz", "/healthz"} {
			if a := call(t, p.client(), "GET", base+path, "", nil); a.code != 200 {
				t.Errorf("GET %s: %d %s", path, a.code, a.body)
			}
		}
	})

	t.Run("bad credentials get 401 and change nothing", func(t *testing.T) {
		otherKey, _ := rsa.GenerateKey(rand.Reader, 2048)
		foreign := testpki.NewCA(t).Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
		expired := p.apiCA.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth), testpki.Expired())
		serverOnly := p.apiCA.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
		wrongPeer := p.peerCA.Issue(t, "not-a-peer", nil)
		creds := []struct {
			name   string
			client *http.Client
			authz  string
		}{
			{"none", p.client(), ""},
			{"unknown token", p.client(), "Bearer not-a-token"},
			{"basic", p.client(), "Basic " + b64([]byte("admin:admin"))},
			{"certificate of a foreign CA", p.client(foreign), ""},
			{"expired certificate", p.client(expired), ""},
			{"certificate without clientAuth", p.client(serverOnly), ""},
			{"peer certificate with another CN", p.client(wrongPeer), ""},
			{"JWT signed by another key", p.client(), "Bearer " + p.serviceAccountToken(t, otherKey, nil)},
			{"expired JWT", p.client(), "Bearer " + p.serviceAccountToken(t, p.saKey, func(c *jwt.Claims) {
				c.Expiry = jwt.NewNumericDate(time.Now().Add(-2 * time.Minute))
			})},
			{"JWT for another audience", p.client(), "Bearer " + p.serviceAccountToken(t, p.saKey, func(c *jwt.Claims) {
				c.Audience = jwt.Audience{"https://elsewhere"}
			})},
		}
		body, _ := json.Marshal(coordv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "intruder"},
		})
		requests := []struct {
			method, path string
			body         []byte
		}{
			{"POST", leasePath, body},
			{"GET", leasePath + "/replicated", nil},
			{"GET", leasePath, nil},
			{"GET", leasePath + "?watch=true&timeoutSeconds=1", nil},
			{"DELETE", leasePath + "/replicated", nil},
			{"GET", "/metrics", nil},
			{"GET", "/cluster/status", nil},
			{"POST", "/cluster/join", []byte(`{"name":"n9","peerAddr":"127.0.0.1:1"}`)},
			{"GET", "/apis", nil},
			{"GET", "/no/such/path", nil},
		}
		for _, c := range creds {
			for _, r := range requests {
				// Every node: the full set on n1, writes and reads on the others.
				for i, n := range pc.nodes[:3] {
					if i > 0 && r.method != "POST" && r.path != leasePath {
						continue
					}
					a := call(t, c.client, r.method, "https://"+n.apiAddr+r.path, c.authz, r.body)
					if a.code != 401 || a.body != unauthorizedBody || a.header.Get("Content-Type") != "application/json" ||
						a.header.Get("Cache-Control") != "no-cache, private" {
						t.Errorf("%s: %s %s on %s: %d %v %q", c.name, r.method, r.path, n.name, a.code, a.header, a.body)
					}
				}
			}
		}
		if _, err := n1.jsonClient.CoordinationV1().Leases("default").Get(ctx, "intruder", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused create wrote the Lease: %v", err)
		}
		if _, err := n1.jsonClient.CoordinationV1().Leases("default").Get(ctx, "replicated", metav1.GetOptions{}); err != nil {
			t.Errorf("a refused delete removed the Lease: %v", err)
		}
		if st, err := pc.status("n1"); err != nil || len(st.Members) != 3 {
			t.Errorf("a refused join changed the members: %v %+v", err, st.Members)
		}
	})

	t.Run("a peer certificate may only join", func(t *testing.T) {
		peer := p.client(p.peerCA.Issue(t, peerCN, nil))
		for _, path := range []string{leasePath + "/replicated", leasePath, "/metrics", "/cluster/status"} {
			a := call(t, peer, "GET", base+path, "", nil)
			if a.code != 403 || !strings.Contains(a.body, `User \"system:leasehold:peer:leasehold-peer\" cannot`) ||
				!strings.Contains(a.body, "a peer certificate may only join the cluster") {
				t.Errorf("GET %s with a peer certificate: %d %s", path, a.code, a.body)
			}
		}
		a := call(t, peer, "DELETE", base+leasePath+"/replicated", "", nil)
		if a.code != 403 {
			t.Errorf("DELETE with a peer certificate: %d %s", a.code, a.body)
		}
	})

	t.Run("a new node joins with its peer certificate", func(t *testing.T) {
		ports := harness.FreePorts(t, 2)
		n4 := &procNode{
			name:     "n4",
			apiAddr:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
			peerAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
			dataDir:  filepath.Join(pc.dir, "n4", "data"),
			logPath:  filepath.Join(pc.dir, "n4.log"),
		}
		n4.args = []string{"--name", "n4", "--data-dir", n4.dataDir, "--api-addr", n4.apiAddr, "--peer-addr", n4.peerAddr,
			"--join", "https://" + n1.apiAddr, "--raft-heartbeat-timeout", "500ms"}
		// The same security flags as the members.
		for i := 0; i < len(n1.args); i++ {
			if strings.HasPrefix(n1.args[i], "--tls-") || strings.HasPrefix(n1.args[i], "--peer-") && n1.args[i] != "--peer-addr" ||
				strings.HasPrefix(n1.args[i], "--client-ca") || strings.HasPrefix(n1.args[i], "--token-") || strings.HasPrefix(n1.args[i], "--service-account-") {
				n4.args = append(n4.args, n1.args[i], n1.args[i+1])
				i++
			}
		}
		creds, _ := secureAPIs.Load(n1.apiAddr)
		secureAPIs.Store(n4.apiAddr, creds)
		outer.Cleanup(func() { secureAPIs.Delete(n4.apiAddr) }) // n4 stays a member
		var err error
		if n4.jsonClient, err = kubernetes.NewForConfig(clientConfig(n4.apiAddr, false)); err != nil {
			t.Fatal(err)
		}
		pc.nodes = append(pc.nodes, n4)
		pc.start(n4)
		pc.waitReady("n4", 30*time.Second)
		st, err := pc.status("n1")
		if err != nil || len(st.Members) != 4 {
			t.Fatalf("members after the join: %v %+v", err, st.Members)
		}
		if _, err := n4.jsonClient.CoordinationV1().Leases("default").Get(ctx, "replicated", metav1.GetOptions{}); err != nil {
			t.Fatalf("the new node cannot read what was written before it joined: %v", err)
		}
	})

	t.Run("who is who", func(t *testing.T) {
		review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
		whoami := func(c *http.Client, authz string) map[string]any {
			t.Helper()
			a := call(t, c, "POST", base+"/apis/authentication.k8s.io/v1/selfsubjectreviews", authz, review)
			var r struct {
				Status struct {
					UserInfo map[string]any `json:"userInfo"`
				} `json:"status"`
			}
			if a.code != 201 || json.Unmarshal([]byte(a.body), &r) != nil {
				t.Fatalf("selfsubjectreview: %d %s", a.code, a.body)
			}
			return r.Status.UserInfo
		}
		groups := func(u map[string]any) []string {
			var g []string
			for _, x := range u["groups"].([]any) {
				g = append(g, x.(string))
			}
			return g
		}
		u := whoami(p.client(p.admin), "")
		if u["username"] != "admin" || !slices.Equal(groups(u), []string{"system:masters", "system:authenticated"}) {
			t.Errorf("client certificate: %v", u)
		}
		u = whoami(p.client(), "Bearer "+aliceToken)
		if u["username"] != "alice" || u["uid"] != "u-alice" || !slices.Equal(groups(u), []string{"team-a", "team-b", "system:authenticated"}) {
			t.Errorf("token: %v", u)
		}
		u = whoami(p.client(), "Bearer "+p.serviceAccountToken(t, p.saKey, nil))
		if u["username"] != "system:serviceaccount:team-a:elector" || u["uid"] != "sa-uid-1" ||
			!slices.Equal(groups(u), []string{"system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"}) {
			t.Errorf("service account: %v", u)
		}
		// Under RBAC (the default once clients authenticate) alice, bound
		// to nothing, may not write.
		lease := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"alices"},"spec":{"holderIdentity":"alice"}}`)
		a := call(t, p.client(), "POST", base+leasePath, "Bearer "+aliceToken, lease)
		want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"alice\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\"","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}` + "\n"
		if a.code != 403 || a.body != want {
			t.Errorf("alice's create: %d %s", a.code, a.body)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectlWith := func(kubeconfig string, args ...string) (string, string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
			cmd.Env = harness.CleanEnv("HOME=" + t.TempDir())
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			return stdout.String(), stderr.String(), err
		}
		kubectl := func(args ...string) (string, string, error) { return kubectlWith(p.kubeconfig, args...) }
		// alice and the elector hold Leases in default.
		if out, errOut, err := kubectl("create", "rolebinding", "holders", "--clusterrole=leasehold:lease-holder",
			"--user=alice", "--serviceaccount=team-a:elector", "-n", "default"); err != nil {
			t.Fatalf("kubectl create rolebinding: %v %s%s", err, out, errOut)
		}
		// A kubeconfig of each credential type: kubectl, and client-go in
		// protobuf, as each identity.
		for _, who := range []struct{ name, token, user string }{
			{"token", aliceToken, "alice"},
			{"service account", p.serviceAccountToken(t, p.saKey, nil), "system:serviceaccount:team-a:elector"},
		} {
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			mustWrite(t, kc, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster: {server: "https://%s", certificate-authority-data: %s}
users:
- name: u
  user: {token: "%s"}
contexts:
- name: leasehold
  context: {cluster: leasehold, user: u, namespace: default}
current-context: leasehold
`, pc.nodes[2].apiAddr, b64(p.apiCA.CertPEM()), who.token))
			if out, errOut, err := kubectlWith(kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != who.user {
				t.Errorf("%s: kubectl auth whoami: %v %q %s", who.name, err, out, errOut)
			}
			if out, errOut, err := kubectlWith(kc, "get", "lease", "replicated", "-o", "jsonpath={.spec.holderIdentity}"); err != nil || out != "admin-wrote-this" {
				t.Errorf("%s: kubectl get lease: %v %q %s", who.name, err, out, errOut)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kc)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ContentType = "application/vnd.kubernetes.protobuf"
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			holder := who.name
			if _, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "by-" + strings.ReplaceAll(who.name, " ", "-")}, Spec: coordv1.LeaseSpec{HolderIdentity: &holder},
			}, metav1.CreateOptions{}); err != nil {
				t.Errorf("%s: client-go (protobuf) create: %v", who.name, err)
			}
		}
		if out, errOut, err := kubectl("get", "leases", "-o", "name"); err != nil || !strings.Contains(out, "lease.coordination.k8s.io/replicated") {
			t.Errorf("kubectl get leases: %v\n%s%s", err, out, errOut)
		}
		if out, errOut, err := kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != "admin" {
			t.Errorf("kubectl auth whoami: %v %q %s", err, out, errOut)
		}
		if out, errOut, err := kubectl("auth", "can-i", "update", "leases"); err != nil || strings.TrimSpace(out) != "yes" {
			t.Errorf("kubectl auth can-i: %v %q %s", err, out, errOut)
		}
		if out, errOut, err := kubectl("auth", "can-i", "--list"); err != nil || !strings.Contains(out, "*.*") {
			t.Errorf("kubectl auth can-i --list: %v %q %s", err, out, errOut)
		}
		// A user with a wrong token and no certificate.
		stranger := filepath.Join(t.TempDir(), "kubeconfig")
		mustWrite(t, stranger, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster: {server: "https://%s", certificate-authority-data: %s}
users:
- name: stranger
  user: {token: wrong}
contexts:
- name: leasehold
  context: {cluster: leasehold, user: stranger}
current-context: leasehold
`, n1.apiAddr, b64(p.apiCA.CertPEM())))
		_, errOut, err := kubectlWith(stranger, "get", "leases")
		if err == nil || !strings.Contains(errOut, "error: You must be logged in to the server (") {
			t.Errorf("kubectl with a wrong token: %v %s", err, errOut)
		}
	})

	t.Run("RBAC", func(t *testing.T) {
		admin := p.client(p.admin)
		get := func(n *procNode, path string) answer {
			return call(t, admin, "GET", "https://"+n.apiAddr+path, "", nil)
		}
		// The bootstrap policy, and edit aggregated with the lease rules,
		// on every node.
		rbacPath := "/apis/rbac.authorization.k8s.io/v1"
		deadline := time.Now().Add(20 * time.Second)
		for _, n := range pc.nodes[:3] {
			for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery", "system:monitoring", "leasehold:lease-holder"} {
				for {
					a := get(n, rbacPath+"/clusterroles/"+name)
					if a.code == 200 && (name != "edit" || strings.Contains(a.body, `"leases"`)) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: clusterrole %s: %d %s", n.name, name, a.code, a.body)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			if a := get(n, rbacPath+"/clusterrolebindings/cluster-admin"); a.code != 200 || !strings.Contains(a.body, `"system:masters"`) {
				t.Errorf("%s: clusterrolebinding cluster-admin: %d %s", n.name, a.code, a.body)
			}
		}

		alice := func(n *procNode, method, path string, body []byte) answer {
			return call(t, p.client(), method, "https://"+n.apiAddr+path, "Bearer "+aliceToken, body)
		}
		teamB := "/apis/coordination.k8s.io/v1/namespaces/team-b/leases"
		lease := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"b"},"spec":{"holderIdentity":"alice"}}`)
		if a := alice(pc.nodes[0], "POST", teamB, lease); a.code != 403 {
			t.Fatalf("alice in team-b before any binding: %d %s", a.code, a.body)
		}

		// alice may create role bindings in team-b, but not grant what she
		// does not hold: kube's escalation check.
		post := func(path, body string) answer {
			t.Helper()
			return call(t, admin, "POST", base+path, "", []byte(body))
		}
		for _, b := range []struct{ path, body string }{
			{rbacPath + "/namespaces/team-b/roles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"binder"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["rolebindings"],"verbs":["create"]}]}`},
			{rbacPath + "/namespaces/team-b/rolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-binds"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"binder"},"subjects":[{"kind":"User","name":"alice"}]}`},
		} {
			if a := post(b.path, b.body); a.code != 201 {
				t.Fatalf("POST %s: %d %s", b.path, a.code, a.body)
			}
		}
		escalate := []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-edits"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"alice"}]}`)
		deadline = time.Now().Add(5 * time.Second)
		for {
			a := alice(pc.nodes[2], "POST", rbacPath+"/namespaces/team-b/rolebindings", escalate)
			if a.code == 403 && strings.Contains(a.body, `rolebindings.rbac.authorization.k8s.io \"alice-edits\" is forbidden: user \"alice\" (groups=[\"team-a\" \"team-b\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:`) {
				break
			}
			// Until n3 has applied alice's new binding, she may not create
			// role bindings at all.
			if a.code != 403 || time.Now().After(deadline) {
				t.Fatalf("alice grants herself edit: %d %s", a.code, a.body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if a := get(pc.nodes[0], rbacPath+"/namespaces/team-b/rolebindings/alice-edits"); a.code != 404 {
			t.Errorf("the refused binding exists: %d %s", a.code, a.body)
		}

		// The admin binds alice in team-b on n1; alice writes there on n3
		// as soon as n3 has applied the binding.
		if a := post(rbacPath+"/namespaces/team-b/rolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice-holds"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"leasehold:lease-holder"},"subjects":[{"kind":"User","name":"alice"}]}`); a.code != 201 {
			t.Fatalf("bind alice: %d %s", a.code, a.body)
		}
		bound := time.Now()
		for {
			a := alice(pc.nodes[2], "POST", teamB, lease)
			if a.code == 201 {
				t.Logf("alice's binding took effect on another node after %v", time.Since(bound).Round(time.Millisecond))
				break
			}
			if a.code != 403 || time.Since(bound) > time.Second {
				t.Fatalf("alice in team-b after her binding: %d %s", a.code, a.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// She may still not delete (lease-holder has no delete), nor touch
		// team-c.
		if a := alice(pc.nodes[1], "DELETE", teamB+"/b", nil); a.code != 403 {
			t.Errorf("alice's delete: %d %s", a.code, a.body)
		}
		if a := alice(pc.nodes[1], "GET", "/apis/coordination.k8s.io/v1/namespaces/team-c/leases", nil); a.code != 403 {
			t.Errorf("alice's list in team-c: %d %s", a.code, a.body)
		}
		// Impersonation: only those allowed the impersonate verb.
		whoamiAs := func(c *http.Client, authz string, as map[string][]string) answer {
			req, _ := http.NewRequest("POST", base+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
				strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
			req.Header.Set("Content-Type", "application/json")
			if authz != "" {
				req.Header.Set("Authorization", authz)
			}
			for k, vs := range as {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return answer{code: resp.StatusCode, body: string(b)}
		}
		if a := whoamiAs(p.client(), "Bearer "+aliceToken, map[string][]string{"Impersonate-User": {"admin"}, "Impersonate-Group": {"system:masters"}}); a.code != 403 ||
			!strings.Contains(a.body, `users \"admin\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`) {
			t.Errorf("alice impersonates admin: %d %s", a.code, a.body)
		}
		if a := whoamiAs(admin, "", map[string][]string{"Impersonate-User": {"alice"}, "Impersonate-Group": {"team-b"}}); a.code != 201 ||
			!strings.Contains(a.body, `"username":"alice","groups":["team-b","system:authenticated"]`) {
			t.Errorf("admin impersonates alice: %d %s", a.code, a.body)
		}
		if a := whoamiAs(admin, "", map[string][]string{"Impersonate-Group": {"team-b"}}); a.code != 400 {
			t.Errorf("a group without a user: %d %s", a.code, a.body)
		}
		for as, want := range map[string]string{"alice": "yes", "bob": "no"} {
			out, _ := exec.Command("kubectl", "--kubeconfig", p.kubeconfig, "auth", "can-i", "create", "leases", "-n", "team-b", "--as", as).Output()
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("kubectl auth can-i create leases -n team-b --as %s: %q, want %q", as, got, want)
			}
		}

		// Her rules, as kubectl auth can-i --list shows them.
		rules := alice(pc.nodes[1], "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"team-b"}}`))
		if rules.code != 201 || !strings.Contains(rules.body, `"resources":["leases"]`) || !strings.Contains(rules.body, `"resources":["rolebindings"]`) {
			t.Errorf("alice's rules in team-b: %d %s", rules.code, rules.body)
		}

		// kube-apiserver's exact refusal of her delete.
		wantDelete := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"b\" is forbidden: User \"alice\" cannot delete resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"","reason":"Forbidden","details":{"name":"b","group":"coordination.k8s.io","kind":"leases"},"code":403}` + "\n"
		if a := alice(pc.nodes[2], "DELETE", teamB+"/b", nil); a.code != 403 || a.body != wantDelete {
			t.Errorf("alice's delete: %d %s", a.code, a.body)
		}

		// resourceNames: a binding to one Lease only; a Group subject.
		for _, b := range []struct{ path, body string }{
			{rbacPath + "/namespaces/team-c/roles", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"one-lease"},"rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"resourceNames":["mine"],"verbs":["get","update"]}]}`},
			{rbacPath + "/namespaces/team-c/rolebindings", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"team-a-one-lease"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"one-lease"},"subjects":[{"kind":"Group","name":"team-a"}]}`},
			{"/apis/coordination.k8s.io/v1/namespaces/team-c/leases", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"mine"}}`},
			{"/apis/coordination.k8s.io/v1/namespaces/team-c/leases", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"other"}}`},
		} {
			if a := post(b.path, b.body); a.code != 201 {
				t.Fatalf("POST %s: %d %s", b.path, a.code, a.body)
			}
		}
		teamC := "/apis/coordination.k8s.io/v1/namespaces/team-c/leases/"
		deadline = time.Now().Add(time.Second)
		for alice(pc.nodes[2], "GET", teamC+"mine", nil).code != 200 {
			if time.Now().After(deadline) {
				t.Fatal("the group binding did not reach n3 within a second")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if a := alice(pc.nodes[2], "GET", teamC+"other", nil); a.code != 403 {
			t.Errorf("alice reads a Lease her binding does not name: %d %s", a.code, a.body)
		}
		if a := alice(pc.nodes[2], "GET", "/apis/coordination.k8s.io/v1/namespaces/team-c/leases", nil); a.code != 403 {
			t.Errorf("alice lists where her rule names one Lease: %d %s", a.code, a.body)
		}

		// kubectl auth can-i on every node: yes exits 0, no exits 1.
		for _, n := range pc.nodes[:3] {
			for _, c := range []struct {
				args []string
				out  string
				code int
			}{
				{[]string{"create", "leases", "-n", "team-b"}, "yes", 0},
				{[]string{"delete", "leases", "-n", "team-b"}, "no", 1},
				{[]string{"get", "leases/mine", "-n", "team-c"}, "yes", 0},
				{[]string{"get", "leases/other", "-n", "team-c"}, "no", 1},
			} {
				cmd := exec.Command("kubectl", append([]string{"--kubeconfig", p.kubeconfig, "--server", "https://" + n.apiAddr, "auth", "can-i", "--as", "alice", "--as-group", "team-a"}, c.args...)...)
				out, _ := cmd.Output()
				if got := strings.TrimSpace(string(out)); got != c.out || cmd.ProcessState.ExitCode() != c.code {
					t.Errorf("%s: can-i %v: %q exit %d, want %q exit %d", n.name, c.args, got, cmd.ProcessState.ExitCode(), c.out, c.code)
				}
			}
		}

		// client-go's leader election with a least-privilege identity: the
		// elector service account, bound to leasehold:lease-holder in
		// default (kubectl subtest), leads.
		cfg := &rest.Config{Host: "https://" + pc.nodes[2].apiAddr, BearerToken: p.serviceAccountToken(t, p.saKey, nil),
			TLSClientConfig: rest.TLSClientConfig{CAData: p.apiCA.CertPEM()}}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
		defer lcancel()
		led := make(chan struct{})
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "default", Name: "elector-lock"}, Client: cs.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: "elector-0"}},
			LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond, ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { close(led); <-ctx.Done() },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		go le.Run(lctx)
		select {
		case <-led:
		case <-lctx.Done():
			t.Fatal("the elector service account did not become leader")
		}
		lcancel()
	})

	t.Run("the policy survives killing every node", func(t *testing.T) {
		for _, n := range pc.nodes {
			pc.kill(n.name)
		}
		for _, n := range pc.nodes {
			pc.restart(n.name)
		}
		for _, n := range pc.nodes {
			pc.waitReady(n.name, 30*time.Second)
		}
		lease := []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"after-restart"}}`)
		for i, n := range pc.nodes[:3] {
			path := "https://" + n.apiAddr + "/apis/coordination.k8s.io/v1/namespaces/team-b/leases"
			body := lease
			if i > 0 {
				body = nil // read on the others
			}
			method := map[bool]string{true: "POST", false: "GET"}[i == 0]
			if a := call(t, p.client(), method, path, "Bearer "+aliceToken, body); a.code != map[bool]int{true: 201, false: 200}[i == 0] {
				t.Errorf("%s: alice %s in team-b after the restart: %d %s", n.name, method, a.code, a.body)
			}
			if a := call(t, p.client(), "GET", "https://"+n.apiAddr+"/apis/coordination.k8s.io/v1/namespaces/team-d/leases", "Bearer "+aliceToken, nil); a.code != 403 {
				t.Errorf("%s: alice in team-d after the restart: %d %s", n.name, a.code, a.body)
			}
		}
	})

	t.Run("strangers on the peer port", func(t *testing.T) {
		before, err := pc.status("n1")
		if err != nil {
			t.Fatal(err)
		}
		// Plain TCP: an RPC type byte and a would-be gob request. The
		// server reads a TLS ClientHello and finds none: closed.
		conn, err := net.DialTimeout("tcp", n1.peerAddr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = conn.Write(append([]byte{2}, bytes.Repeat([]byte{0xff}, 64)...))
		if _, err := io.ReadAll(conn); err != nil && !isClosed(err) {
			t.Errorf("plain TCP: want the connection closed, got %v", err)
		}
		conn.Close()
		// TLS with certificates the peer port must refuse: the API's
		// admin (another CA), and a peer CA certificate with another CN.
		for name, cert := range map[string]*testpki.Cert{
			"API CA admin": p.admin,
			"wrong CN":     p.peerCA.Issue(t, "not-a-peer", nil),
		} {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", n1.peerAddr, &tls.Config{
				RootCAs: p.peerCA.Pool(), Certificates: []tls.Certificate{cert.TLSCertificate()}, ServerName: "127.0.0.1",
			})
			if err != nil {
				continue // refused in the handshake
			}
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte{2})
			var b [1]byte
			if _, err := c.Read(b[:]); err == nil {
				t.Errorf("%s: the peer port answered", name)
			}
			c.Close()
		}
		after, err := pc.status("n1")
		if err != nil || after.Term != before.Term || len(after.Members) != len(before.Members) {
			t.Errorf("strangers changed the cluster: %+v → %+v (%v)", before, after, err)
		}
	})

	t.Run("a rotated serving certificate is served without a restart", func(t *testing.T) {
		fresh := p.apiCA.Issue(t, "leasehold-rotated", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
		serving := argAfter(n1.args, "--tls-cert-file")
		key := argAfter(n1.args, "--tls-private-key-file")
		// The key first: a certificate without its key fails to load, and
		// the node keeps the old pair until both match.
		mustWrite(t, key, string(fresh.KeyPEM))
		mustWrite(t, serving, string(fresh.CertPEM))
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := tls.Dial("tcp", n1.apiAddr, &tls.Config{RootCAs: p.apiCA.Pool(), ServerName: "127.0.0.1"})
			if err == nil {
				cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName
				c.Close()
				if cn == "leasehold-rotated" {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("still serving the old certificate (%v)", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func isClosed(err error) bool {
	s := err.Error()
	return strings.Contains(s, "reset by peer") || strings.Contains(s, "EOF") || strings.Contains(s, "broken pipe")
}
