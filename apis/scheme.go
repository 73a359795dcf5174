// Package apis holds the API types leasehold serves and the scheme and
// codecs that encode them on the wire.
package apis

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/leasehold/leasehold/apis/coordination/leasecandidate"
	coordinationv1alpha1 "github.com/leasehold/leasehold/apis/coordination/v1alpha1"
)

// Group is the API group leasehold serves.
const Group = "coordination.k8s.io"

var (
	// Scheme knows every type that crosses the wire.
	Scheme = runtime.NewScheme()
	// Codecs are the JSON, YAML and protobuf serializers over Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec turns query parameters into option structs.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	// Status, WatchEvent and the discovery types live in the core v1 group
	// on the wire, as client-go expects them.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntimeMust(coordinationv1.AddToScheme(Scheme))
	utilruntimeMust(coordinationv1beta1.AddToScheme(Scheme))
	utilruntimeMust(coordinationv1alpha2.AddToScheme(Scheme))
	utilruntimeMust(coordinationv1alpha1.AddToScheme(Scheme))
	utilruntimeMust(leasecandidate.AddConversions(Scheme))
	// Option bodies may name meta.k8s.io/v1 (kubectl's DeleteOptions), and
	// Tables and partial metadata live there.
	Scheme.AddUnversionedTypes(metav1.SchemeGroupVersion,
		&metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{},
		&metav1.CreateOptions{}, &metav1.UpdateOptions{}, &metav1.PatchOptions{})
	utilruntimeMust(metav1.AddMetaToScheme(Scheme))
	// Tables and partial metadata are served in meta.k8s.io/v1beta1 too.
	Scheme.AddKnownTypes(metav1beta1.SchemeGroupVersion, &metav1.Table{}, &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{})
	utilruntimeMust(apidiscoveryv2.AddToScheme(Scheme))
	utilruntimeMust(apidiscoveryv2beta1.AddToScheme(Scheme))
	// The review APIs (kubectl auth whoami, kubectl auth can-i).
	utilruntimeMust(authenticationv1.AddToScheme(Scheme))
	utilruntimeMust(authorizationv1.AddToScheme(Scheme))
	utilruntimeMust(rbacv1.AddToScheme(Scheme))
}

func utilruntimeMust(err error) {
	if err != nil {
		panic(err)
	}
}
