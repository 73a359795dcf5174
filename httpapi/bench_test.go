package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/testcluster"
)

// BenchmarkRenewal is a leader-election renewal end to end on a
// one-member cluster: a JSON PUT with the last resourceVersion, through
// HTTP, validation, Raft (bbolt included) and the FSM, answered with the
// stored Lease. The client's share of the time and allocations is small
// next to the server's; profile it with -cpuprofile or -memprofile.
func BenchmarkRenewal(b *testing.B) {
	c := testcluster.New(b, 1, testcluster.Options{})
	base := c.Nodes[0].URL() + group + "/namespaces/bench/leases/"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	const leases = 64
	var next atomic.Int64
	b.SetParallelism(leases / 2) // 64 clients on GOMAXPROCS=2
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		name := fmt.Sprintf("lease-%d", next.Add(1))
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](15)},
		}
		code := benchDo(b, hc, http.MethodPost, c.Nodes[0].URL()+group+"/namespaces/bench/leases", l)
		if code != http.StatusCreated {
			b.Errorf("create %s: %d", name, code)
			return
		}
		for pb.Next() {
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			if code := benchDo(b, hc, http.MethodPut, base+name, l); code != http.StatusOK {
				b.Errorf("renew %s: %d", name, code)
				return
			}
		}
	})
}

// benchDo sends obj as JSON and decodes the answer into it.
func benchDo(b *testing.B, hc *http.Client, method, url string, obj *coordinationv1.Lease) int {
	body, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode < 300 {
		err = json.Unmarshal(data, obj)
	}
	if err != nil {
		b.Error(err)
	}
	return resp.StatusCode
}
