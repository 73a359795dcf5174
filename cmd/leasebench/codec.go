package main

import (
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// codec is how the benchmark's clients put Leases on the wire: JSON, as
// client-go does by default, or protobuf, as kube-controller-manager,
// kube-scheduler and kubelet (node heartbeats) configure it.
type codec struct {
	mediaType string
	encode    func(*coordinationv1.Lease) ([]byte, error)
	decode    func([]byte, *coordinationv1.Lease) error
}

var leaseGVK = coordinationv1.SchemeGroupVersion.WithKind("Lease")

func newCodec(format string) (codec, error) {
	switch format {
	case "json":
		return codec{
			mediaType: "application/json",
			encode:    func(l *coordinationv1.Lease) ([]byte, error) { return json.Marshal(l) },
			decode:    func(data []byte, l *coordinationv1.Lease) error { return json.Unmarshal(data, l) },
		}, nil
	case "protobuf":
		s := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
		return codec{
			mediaType: "application/vnd.kubernetes.protobuf",
			encode: func(l *coordinationv1.Lease) ([]byte, error) {
				l.SetGroupVersionKind(leaseGVK) // the envelope names the type
				return runtime.Encode(s, l)
			},
			decode: func(data []byte, l *coordinationv1.Lease) error {
				_, _, err := s.Decode(data, &leaseGVK, l)
				return err
			},
		}, nil
	}
	return codec{}, fmt.Errorf("unknown --format %q (want json or protobuf)", format)
}
