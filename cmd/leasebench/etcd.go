package main

// --target etcd: the same workloads against an etcd cluster, each operation
// being the etcd request kube-apiserver's etcd3 storage
// (k8s.io/apiserver/pkg/storage/etcd3) would send for the REST call the
// leasehold mode makes, and nothing else: no apiserver, no admission, no
// conversion. It is the floor a Kubernetes control plane cannot go below.
//
//	renew  PUT with a resourceVersion → GuaranteedUpdate's one transaction
//	       If(mod_revision(key) == rv) Then(Put(key)) Else(Get(key))
//	get    GET → a linearizable Range of the key, on a follower
//	get0   GET ?resourceVersion=0 → a serializable Range on a follower
//	       (kube-apiserver answers these from its watch cache without etcd;
//	       a serializable read is the nearest etcd has)
//	list   GET of the namespace, limit=500 → a Range of the prefix, limit 500
//	mixed  the leasehold mode's blend of the three
//
// watch is not run: kube-apiserver serves all its watchers from the watch
// cache, fed by one etcd watch per resource, so N etcd watchers are not
// what it would send.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
)

type etcdBench struct {
	*bench
	clis      []*clientv3.Client // one per endpoint, in --endpoints order
	followers []int              // indexes into clis of the members that are not the leader
	prefix    string             // /registry/leases/<namespace>/
	keys      []*etcdKey
}

// etcdKey is a client's view of one Lease key: the object it writes and the
// mod revision of its last write, which is the object's resourceVersion.
type etcdKey struct {
	key string
	rev int64
	obj coordinationv1.Lease
}

func runEtcd(ctx context.Context, cfg config) (*Result, error) {
	switch cfg.workload {
	case "renew", "get", "get0", "mixed":
	case "watch":
		return nil, errors.New("watch is not run against etcd: kube-apiserver serves every watcher from its watch cache, fed by one etcd watch per resource, so etcd watchers are not comparable")
	default:
		return nil, fmt.Errorf("unknown workload %q", cfg.workload)
	}
	e := &etcdBench{
		bench:  &bench{cfg: cfg, lat: hdrhistogram.New(1, 60_000_000, 3)},
		prefix: "/registry/leases/" + cfg.namespace + "/",
	}
	defer e.close()
	if err := e.connect(ctx); err != nil {
		return nil, err
	}
	if err := e.setup(ctx); err != nil {
		return nil, err
	}
	res := &Result{Target: cfg.system(), Label: cfg.label, Workload: cfg.workload, Clients: cfg.clients, Leases: cfg.leases}
	if cfg.tls != nil {
		res.TLS, res.Protocol, res.Connections = true, "gRPC (HTTP/2)", "every client multiplexed on one connection per member, as kube-apiserver's etcd client"
	}
	elapsed := e.drive(ctx, e.client1)
	e.fill(res, elapsed)
	return res, nil
}

// connect opens one client per endpoint, so that a client of the benchmark
// talks to the member it was given (clientv3 balances over all the
// endpoints of one client), and finds the leader through Status. With
// --cacert/--cert/--key it speaks TLS (https:// endpoints), as
// kube-apiserver's --etcd-cafile/--etcd-certfile/--etcd-keyfile make it.
func (e *etcdBench) connect(ctx context.Context) error {
	for _, ep := range e.cfg.endpoints {
		cc := clientv3.Config{
			Endpoints:   []string{ep},
			DialTimeout: 5 * time.Second,
			Logger:      zap.NewNop(), // failures are counted as errors instead
		}
		if e.cfg.tls != nil {
			cc.TLS = e.cfg.tls.Clone()
		}
		cli, err := clientv3.New(cc)
		if err != nil {
			return fmt.Errorf("etcd %s: %w", ep, err)
		}
		e.clis = append(e.clis, cli)
	}
	for i, cli := range e.clis {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, e.cfg.endpoints[i])
		cancel()
		if err != nil {
			return fmt.Errorf("etcd status of %s: %w", e.cfg.endpoints[i], err)
		}
		if st.Header.MemberId != st.Leader {
			e.followers = append(e.followers, i)
		}
	}
	if len(e.followers) == 0 { // one member: it is all there is
		e.followers = []int{0}
	}
	return nil
}

func (e *etcdBench) close() {
	for _, cli := range e.clis {
		_ = cli.Close()
	}
}

// setup writes the K Lease objects (coordination/v1 Leases in
// kube-apiserver's protobuf storage encoding, under the key it uses) and
// notes their revisions.
func (e *etcdBench) setup(ctx context.Context) error {
	e.keys = make([]*etcdKey, e.cfg.leases)
	errc := make(chan error, 1)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range e.keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			name := fmt.Sprintf("lease-%06d", i)
			now := metav1.NowMicro()
			dur := int32(15)
			holder := fmt.Sprintf("holder-%d", i)
			k := &etcdKey{key: e.prefix + name, obj: coordinationv1.Lease{
				TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
				ObjectMeta: metav1.ObjectMeta{
					Name: name, Namespace: e.cfg.namespace,
					UID:               types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i)),
					CreationTimestamp: metav1.Now(),
				},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, AcquireTime: &now, RenewTime: &now},
			}}
			val, err := kubeStorageValue(&k.obj)
			var resp *clientv3.PutResponse
			if err == nil {
				resp, err = e.clis[i%len(e.clis)].Put(ctx, k.key, string(val))
			}
			if err != nil {
				select {
				case errc <- fmt.Errorf("etcd put %s: %w", k.key, err):
				default:
				}
				return
			}
			k.rev = resp.Header.Revision
			e.keys[i] = k
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// kubeStorageValue is l as kube-apiserver stores it with its default
// --storage-media-type (application/vnd.kubernetes.protobuf): "k8s\0" and
// a runtime.Unknown holding the Lease's protobuf encoding, resourceVersion
// unset. leasehold's etcd API takes nothing else under /registry/leases/.
func kubeStorageValue(l *coordinationv1.Lease) ([]byte, error) {
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(l, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// client1 is one client's loop until ctx ends, as the leasehold mode's.
func (e *etcdBench) client1(ctx context.Context, c int, limiter <-chan time.Time) {
	var own []*etcdKey
	for i := c; i < len(e.keys); i += e.cfg.clients {
		own = append(own, e.keys[i])
	}
	rng := rand.New(rand.NewPCG(uint64(c), 7))
	cli := e.clis[c%len(e.clis)] // clients spread over the members round-robin
	for i := 0; ctx.Err() == nil; i++ {
		if limiter != nil {
			select {
			case <-limiter:
			case <-ctx.Done():
				return
			}
		}
		switch kind := pickKind(e.cfg.workload, rng); kind {
		case "renew":
			if len(own) == 0 {
				return
			}
			e.renew(ctx, cli, own[i%len(own)])
		case "get", "get0":
			f := e.clis[e.followers[rng.IntN(len(e.followers))]]
			key := e.keys[rng.IntN(len(e.keys))].key
			var opts []clientv3.OpOption
			if kind == "get0" {
				opts = append(opts, clientv3.WithSerializable())
			}
			e.timedGet(ctx, "get", f, key, opts...)
		case "list":
			e.timedGet(ctx, "list", cli, e.prefix, clientv3.WithPrefix(), clientv3.WithLimit(500))
		}
	}
}

func (e *etcdBench) timedGet(ctx context.Context, kind string, cli *clientv3.Client, key string, opts ...clientv3.OpOption) {
	start := time.Now()
	resp, err := cli.Get(ctx, key, opts...)
	if err == nil && len(resp.Kvs) == 0 {
		err = fmt.Errorf("etcd get %s: not found", key)
	}
	if err != nil {
		if ctx.Err() == nil {
			e.failed(err)
		}
		return
	}
	e.record(kind, time.Since(start))
}

// renew is one renewal as kube-apiserver's GuaranteedUpdate sends it: put
// the new object if the key is still at the revision we last saw, else
// read it back (a conflict) to go on from its current revision.
func (e *etcdBench) renew(ctx context.Context, cli *clientv3.Client, k *etcdKey) {
	start := time.Now()
	now := metav1.NowMicro()
	k.obj.Spec.RenewTime = &now
	val, err := kubeStorageValue(&k.obj)
	if err != nil {
		e.failed(err)
		return
	}
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(k.key), "=", k.rev)).
		Then(clientv3.OpPut(k.key, string(val))).
		Else(clientv3.OpGet(k.key)).
		Commit()
	switch {
	case err != nil:
		if ctx.Err() == nil {
			e.failed(err)
		}
	case resp.Succeeded:
		e.record("renew", time.Since(start))
		k.rev = resp.Responses[0].GetResponsePut().Header.Revision
	default:
		e.conf.Add(1)
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			k.rev = kvs[0].ModRevision
		}
	}
}
