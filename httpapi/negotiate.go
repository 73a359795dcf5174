package httpapi

import (
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/leasehold/leasehold/apis"
	"github.com/leasehold/leasehold/fsm/state"
)

const (
	mediaJSON     = runtime.ContentTypeJSON
	mediaYAML     = runtime.ContentTypeYAML
	mediaProtobuf = runtime.ContentTypeProtobuf
)

// acceptedMediaTypes is how kube-apiserver lists what it speaks in 406 and
// 415 answers.
var acceptedMediaTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

func serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	for _, info := range apis.Codecs.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

// output is the negotiated response encoding, and the transformation the
// client asked for (Accept parameters as=, g=, v=), if any.
type output struct {
	info   runtime.SerializerInfo
	pretty bool
	as     target
}

func (o output) encoder() runtime.Encoder {
	if o.pretty && o.info.PrettySerializer != nil {
		return o.info.PrettySerializer
	}
	return o.info.Serializer
}

// target is a transformation of a response: its kind and group version
// (as=Table;g=meta.k8s.io;v=v1). The zero target is the object itself.
type target struct {
	Kind, Group, Version string
}

// The transformations leasehold serves.
var (
	asTable       = []target{{"Table", "meta.k8s.io", "v1"}, {"Table", "meta.k8s.io", "v1beta1"}}
	asPartial     = []target{{"PartialObjectMetadata", "meta.k8s.io", "v1"}, {"PartialObjectMetadata", "meta.k8s.io", "v1beta1"}, {"PartialObjectMetadataList", "meta.k8s.io", "v1"}, {"PartialObjectMetadataList", "meta.k8s.io", "v1beta1"}}
	asDiscovery   = []target{{"APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2"}, {"APIGroupDiscoveryList", "apidiscovery.k8s.io", "v2beta1"}}
	forResources  = append(append([]target{}, asTable...), asPartial...)
	forDiscovery  = asDiscovery
	noTransforms  []target
	notAcceptable = &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(acceptedMediaTypes, ", "),
	}}
)

// negotiate picks the response encoding from Accept: the first entry the
// server can produce wins, including a transformation among allowed. It
// fails with 406 when none fits.
func negotiate(r *http.Request, allowed ...target) (output, error) {
	pretty := wantPretty(r)
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		info, _ := serializerFor(mediaJSON)
		return output{info: info, pretty: pretty}, nil
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		var as target
		if params["as"] != "" {
			as = target{Kind: params["as"], Group: params["g"], Version: params["v"]}
			if !slices.Contains(allowed, as) {
				continue
			}
		}
		switch mt {
		case "*/*", "application/*":
			mt = mediaJSON
		}
		if info, ok := serializerFor(mt); ok {
			return output{info: info, pretty: pretty, as: as}, nil
		}
	}
	info, _ := serializerFor(mediaJSON)
	return output{info: info, pretty: pretty}, notAcceptable
}

// wantPretty follows kube-apiserver: ?pretty, or a user agent that is a
// person's tool.
func wantPretty(r *http.Request) bool {
	if v := r.URL.Query().Get("pretty"); v != "" {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// write encodes obj with the negotiated encoding.
func (o output) write(w http.ResponseWriter, code int, obj runtime.Object) {
	o.writeHeader(w, code)
	if err := o.encoder().Encode(obj, w); err != nil {
		// Headers are gone; all that is left is to stop.
		return
	}
}

func (o output) writeHeader(w http.ResponseWriter, code int) {
	ct := o.info.MediaType
	if o.as.Kind != "" {
		ct += fmt.Sprintf(";g=%s;v=%s;as=%s", o.as.Group, o.as.Version, o.as.Kind)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
}

// writeEncoded answers with data, an object already encoded by
// encodeObject.
func (o output) writeEncoded(w http.ResponseWriter, code int, data []byte) {
	o.writeHeader(w, code)
	_, _ = w.Write(data)
}

// encodeObject encodes obj in the output's format, compactly: the form
// cached with stored objects (state.Object.Encoding) for every reader.
func (o output) encodeObject(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(o.info.Serializer, obj)
}

// encodingSlot is the stored objects' encoding cache slot for a media type.
func encodingSlot(mediaType string) (int, bool) {
	switch mediaType {
	case mediaJSON:
		return state.EncodingJSON, true
	case mediaProtobuf:
		return state.EncodingProtobuf, true
	}
	return 0, false
}

// input is a request body's decoder, chosen by Content-Type.
type input struct {
	info runtime.SerializerInfo
}

func unsupportedMediaType() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(acceptedMediaTypes, ", "),
	}}
}

// bodyInput picks the body decoder; an empty Content-Type means JSON.
func bodyInput(r *http.Request) (input, error) {
	ct := r.Header.Get("Content-Type")
	mt := mediaJSON
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			return input{}, unsupportedMediaType()
		}
	}
	info, ok := serializerFor(mt)
	if !ok {
		return input{}, unsupportedMediaType()
	}
	return input{info: info}, nil
}

// maxBodyBytes is kube-apiserver's request body limit.
const maxBodyBytes = 3 * 1024 * 1024

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	// Sized from Content-Length when there is one (one byte over, to see
	// the end without growing): io.ReadAll starts at 512 bytes and grows,
	// three allocations and twice the memory for a renewal's body.
	size := 512
	if n := r.ContentLength; n >= 0 && n <= maxBodyBytes {
		size = int(n) + 1
	}
	b := make([]byte, 0, size)
	lr := io.LimitReader(r.Body, maxBodyBytes+1)
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to read the request body: %v", err))
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
	if len(b) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return b, nil
}

// decode decodes body into a new object from newObj, defaulting its kind
// to gvk. It returns the strict-decoding problems (unknown and duplicate
// fields) separately so the caller can apply fieldValidation.
func (in input) decode(body []byte, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, []error, error) {
	if in.info.MediaType == mediaJSON && in.info.StrictSerializer != nil {
		if obj, ok := decodeJSONOnce(body, gvk, newObj()); ok {
			return obj, nil, nil
		}
	}
	return in.decodeWithSerializer(body, gvk, newObj())
}

// decodeWithSerializer is decode by the media type's serializer alone.
func (in input) decodeWithSerializer(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, []error, error) {
	dec := in.info.Serializer
	if in.info.StrictSerializer != nil {
		dec = in.info.StrictSerializer
	}
	obj, actual, err := dec.Decode(body, &gvk, into)
	var strict []error
	if err != nil {
		if se, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			strict = se.Errors()
			err = nil
		}
	}
	// A body of another group or version is refused as such, also when the
	// scheme does not know that version (decoding then failed too).
	if actual != nil && actual.GroupVersion() != gvk.GroupVersion() {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion(), gvk.GroupVersion()))
	}
	if err != nil {
		return nil, nil, transformDecodeError(err, gvk.Kind, actual, body)
	}
	if actual != nil && actual.Kind != gvk.Kind {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the object kind does not match", actual.Kind, actual.Version, gvk.Kind))
	}
	return obj, strict, nil
}

// decodeJSONOnce decodes the usual JSON body — valid, with no unknown or
// repeated field, of gvk's kind and version or silent about them — in one
// pass, where the JSON serializer makes two, the first only to read
// apiVersion and kind, which scans the whole body for two fields. The
// result is the serializer's: the same strict decoder into
// the same typed object; a Lease, as clients send it to renew, by
// decodeLeaseJSON's decoder without reflection. Any other body reports
// false, and the serializer decodes it again for its own errors and
// warnings.
func decodeJSONOnce(body []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, bool) {
	l, isLease := into.(*coordinationv1.Lease)
	var fresh coordinationv1.Lease
	if isLease {
		fresh = *l
	}
	if !isLease || !decodeLeaseJSON(body, l) {
		if isLease {
			*l = fresh // not what the single pass left
		}
		strict, err := kjson.UnmarshalStrict(body, into)
		if err != nil || len(strict) > 0 {
			return nil, false
		}
	}
	tm, err := meta.TypeAccessor(into)
	if err != nil {
		return nil, false
	}
	if v := tm.GetAPIVersion(); v != "" && v != gvk.GroupVersion().String() {
		return nil, false
	}
	if k := tm.GetKind(); k != "" && k != gvk.Kind {
		return nil, false
	}
	return into, true
}

// transformDecodeError words a decode failure as kube-apiserver does.
func transformDecodeError(err error, kind string, actual *schema.GroupVersionKind, body []byte) error {
	if actual != nil && actual.Kind != "" {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, kind, err))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarizeData(body, 30)))
}

func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return hex.EncodeToString(data[:maxLength]) + " ..."
		}
		return hex.EncodeToString(data)
	}
}
