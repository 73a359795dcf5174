// Command leader-election campaigns for a Lease on a leasehold cluster
// with client-go's leader election, exactly as it would on kube-apiserver:
// run it two or three times with different --id values, stop the leader
// (Ctrl-C releases the Lease at once, kill -9 lets it expire), and watch
// another take over.
//
//	go run ./examples/leader-election --server http://127.0.0.1:7001 --id a
//	go run ./examples/leader-election --server http://127.0.0.1:7002 --id b
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	server := flag.String("server", "http://127.0.0.1:7001", "API URL of any leasehold node (overrides the kubeconfig's server)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (optional)")
	namespace := flag.String("namespace", "default", "namespace of the Lease")
	name := flag.String("name", "leader-election-example", "name of the Lease")
	hostname, _ := os.Hostname()
	id := flag.String("id", fmt.Sprintf("%s-%d", hostname, os.Getpid()), "this candidate's identity, unique among the candidates")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags(*server, *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = campaign(ctx, cfg, *namespace, *name, *id, func(ctx context.Context) {
		log.Printf("%s: leading", *id)
		<-ctx.Done() // do the leader's work here until ctx ends
	})
	if err != nil {
		log.Fatal(err)
	}
}

// campaign runs for the Lease namespace/name as candidate id until ctx
// ends or leadership is lost. While this candidate leads, lead runs with a
// context that ends when leadership does. On cancel, a leader releases the
// Lease so that another candidate takes over at once.
func campaign(ctx context.Context, cfg *rest.Config, namespace, name, id string, lead func(context.Context)) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client:     client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: lead,
			OnStoppedLeading: func() { log.Printf("%s: stopped leading", id) },
			OnNewLeader:      func(leader string) { log.Printf("%s: the leader is %s", id, leader) },
		},
	})
	if err != nil {
		return err
	}
	elector.Run(ctx) // returns when ctx ends or leadership is lost
	if ctx.Err() == nil {
		return errors.New(id + ": lost the Lease")
	}
	return nil
}
