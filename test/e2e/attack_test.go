package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/testpki"
)

// attackCluster is a secured three-node cluster with a short request
// timeout, and an admin's client for its metrics.
func attackCluster(t *testing.T, requestTimeout string) (*procCluster, *testpki.CA, *http.Client) {
	t.Helper()
	ca := testpki.NewCA(t)
	serving := ca.Issue(t, "leasehold", nil, testpki.WithExtKeyUsage(x509.ExtKeyUsageServerAuth))
	admin := ca.Issue(t, "admin", []string{"system:masters"}, testpki.WithExtKeyUsage(x509.ExtKeyUsageClientAuth))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{admin.TLSCertificate()}},
		ForceAttemptHTTP2: true,
	}}
	creds := &apiCredentials{
		rest: rest.TLSClientConfig{CAData: ca.CertPEM(), CertData: admin.CertPEM, KeyData: admin.KeyPEM},
		http: client,
	}
	pc := newProcClusterWith(t, creds,
		"--tls-cert-file", serving.CertFile, "--tls-private-key-file", serving.KeyFile,
		"--client-ca-file", ca.CertFile, "--request-timeout", requestTimeout)
	return pc, ca, client
}

// goroutines is the node's go_goroutines from /metrics.
func goroutines(t *testing.T, c *http.Client, apiAddr string) int {
	t.Helper()
	resp, err := c.Get("https://" + apiAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no go_goroutines in /metrics")
	return 0
}

// h2Attacker opens an HTTP/2 connection without credentials, announcing
// windows of initialWindow bytes, and never reads what the server sends.
func h2Attacker(t *testing.T, ca *testpki.CA, apiAddr string, initialWindow uint32) (*tls.Conn, *http2.Framer, func(path string, id uint32) error) {
	t.Helper()
	c, err := tls.Dial("tcp", apiAddr, &tls.Config{RootCAs: ca.Pool(), NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: initialWindow}); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	get := func(path string, id uint32) error {
		hb.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", apiAddr}, {":path", path}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	}
	return c, fr, get
}

// Streams whose answers cannot be written (the client's window stays at
// zero) hold their goroutines for the request timeout at most, while the
// attacker keeps its connections open, and unauthenticated ones cost no
// more than that. Without the deadlines on writes they stay until the
// client leaves.
func TestAttackZeroWindow(t *testing.T) {
	pc, ca, admin := attackCluster(t, "3s")
	addr := pc.nodes[0].apiAddr
	idle := goroutines(t, admin, addr)

	const conns, streams = 20, 100
	for range conns {
		_, _, get := h2Attacker(t, ca, addr, 0)
		for i := range streams {
			if err := get("/apis/coordination.k8s.io/v1/leases", uint32(2*i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The answers are stuck: the node holds a goroutine for each.
	var peak int
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && peak < idle+conns*streams/2 {
		peak = max(peak, goroutines(t, admin, addr))
		time.Sleep(100 * time.Millisecond)
	}
	if peak < idle+conns*streams/2 {
		t.Fatalf("goroutines %d at most under %d stuck streams (idle %d): the attack did not take", peak, conns*streams, idle)
	}
	// Others are served meanwhile.
	if resp, err := admin.Get("https://" + addr + "/apis/coordination.k8s.io/v1/leases"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("an admin's list during the attack: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Within the request timeout and its second of grace (and slack for a
	// busy machine) they are gone, the attacker's connections still open.
	var now int
	deadline = time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if now = goroutines(t, admin, addr); now < idle+100 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("goroutines: idle %d, under attack %d, after the request timeout %d", idle, peak, now)
	if now >= idle+100 {
		t.Errorf("%d goroutines 20s after the 3s request timeout (idle %d, peak %d): stuck streams were not freed", now, idle, peak)
	}
}

// A rapid-reset flood (HEADERS then RST_STREAM, over and over) and a PING
// flood from a client that does not read end with the connection cut,
// by Go's own HTTP/2 server; other clients are served meanwhile.
func TestAttackFloods(t *testing.T) {
	pc, ca, admin := attackCluster(t, "10s")
	addr := pc.nodes[0].apiAddr

	t.Run("rapid reset", func(t *testing.T) {
		c, fr, get := h2Attacker(t, ca, addr, 1<<20)
		closed := make(chan error, 1)
		go func() {
			// Read until the server ends the connection; report a GOAWAY.
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					closed <- err
					return
				}
				if ga, ok := f.(*http2.GoAwayFrame); ok {
					closed <- fmt.Errorf("GOAWAY %v", ga.ErrCode)
					return
				}
			}
		}()
		_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		var sent int
		var ended error
		done := false
		for id := uint32(1); id < 1<<30 && !done; id += 2 {
			// Watches: their handlers take a moment to end, so resets pile up.
			if get("/apis/coordination.k8s.io/v1/leases?watch=1", id) != nil || fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				break
			}
			sent++
			select {
			case ended = <-closed:
				done = true
			default:
			}
		}
		if !done {
			select {
			case ended = <-closed:
			case <-time.After(20 * time.Second):
				t.Fatalf("%d HEADERS+RST_STREAM pairs and the connection is still open", sent)
			}
		}
		t.Logf("after %d HEADERS+RST_STREAM pairs: %v", sent, ended)
		if !strings.Contains(ended.Error(), "ENHANCE_YOUR_CALM") {
			t.Errorf("the flood ended with %v, want GOAWAY ENHANCE_YOUR_CALM", ended)
		}
	})

	t.Run("PING flood", func(t *testing.T) {
		c, fr, _ := h2Attacker(t, ca, addr, 1<<20)
		_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		var data [8]byte
		var err error
		var sent int
		for sent = 0; sent < 5_000_000 && err == nil; sent++ {
			err = fr.WritePing(false, data)
		}
		if err == nil {
			t.Fatalf("%d PINGs unread and the connection is still open", sent)
		}
		t.Logf("the connection ended after %d unread PINGs: %v", sent, err)
	})

	if resp, err := admin.Get("https://" + addr + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the node after the floods: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
