package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/registry"
)

func (s *Server) get(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns, name string) {
	out, err := negotiate(req, forResources...)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	var o metav1.GetOptions
	if err := decodeQuery(req, &o); err != nil {
		s.writeError(w, req, err)
		return
	}
	ctx := req.Context()
	obj, stored, err := s.store.GetStored(ctx, res, ns, name, registry.ReadOptions{ResourceVersion: o.ResourceVersion})
	if err == nil && stored != nil && out.as.Kind == "" && !out.pretty {
		// The stored object as it is: its encoding is computed once and
		// shared with every watcher and every other reader.
		if slot, ok := encodingSlot(out.info.MediaType); ok {
			if data, err := s.node.State().Encoding(stored, slot, out.encodeObject); err == nil {
				out.writeEncoded(w, http.StatusOK, data)
				return
			}
		}
	}
	if err == nil {
		obj, err = transform(req, out, obj, true)
	}
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	out.write(w, http.StatusOK, obj)
}

func (s *Server) list(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns string) {
	out, err := negotiate(req, forResources...)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	raw, lo, err := parseListOptions(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	if raw.Watch {
		s.watch(w, req, out, res, ns, raw, lo)
		return
	}
	ctx := req.Context()
	list, stored, err := s.store.ListStored(ctx, res, ns, lo)
	if err == nil && stored != nil {
		if out.as.Kind == "" && !out.pretty && s.writeStoredList(w, out, res, list, stored) {
			return
		}
		res.SetItems(list, registry.StoredItems(stored))
	}
	if err == nil {
		list, err = transform(req, out, list, true)
	}
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	out.write(w, http.StatusOK, list)
}

// decodeObject decodes a create or update body and applies fieldValidation
// to unknown and duplicate fields.
func (s *Server) decodeObject(w http.ResponseWriter, req *http.Request, res *registry.Resource, validation string) (registry.Object, error) {
	in, err := bodyInput(req)
	if err != nil {
		return nil, err
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	gvk := res.GroupVersionKind()
	obj, strict, err := in.decode(body, gvk, func() runtime.Object { return res.New() })
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		switch validation {
		case metav1.FieldValidationStrict:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v",
				gvk.Kind, gvk.Version, gvk.Kind, runtime.NewStrictDecodingError(strict)))
		case metav1.FieldValidationIgnore:
		default:
			warnings(w, errorStrings(strict))
		}
	}
	stored, ok := obj.(registry.Object)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is not a %s", gvk.Kind))
	}
	// A body may spell its kind and apiVersion empty ("kind":""), which
	// decodes as such; the object is of gvk, as kube-apiserver's decoder
	// makes it, and a dry run answers it so.
	stored.GetObjectKind().SetGroupVersionKind(gvk)
	return stored, nil
}

func errorStrings(errs []error) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// decodeWrite is what create and update share: negotiate the answer, read
// the options and the body, default the body's namespace to the URL's. On
// failure it has answered.
func (s *Server) decodeWrite(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns string,
	parse func(*http.Request) (writeQuery, error)) (output, writeQuery, registry.Object, bool) {
	out, err := negotiate(req, forResources...)
	if err != nil {
		s.writeError(w, req, err)
		return out, writeQuery{}, nil, false
	}
	q, err := parse(req)
	if err != nil {
		s.writeError(w, req, err)
		return out, q, nil, false
	}
	obj, err := s.decodeObject(w, req, res, q.fieldValidation)
	if err != nil {
		s.writeError(w, req, err)
		return out, q, nil, false
	}
	switch {
	case !res.Namespaced:
		// kube-apiserver clears a cluster-scoped object's namespace.
		obj.SetNamespace("")
	case obj.GetNamespace() == "":
		obj.SetNamespace(ns)
	}
	return out, q, obj, true
}

func (s *Server) create(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns string) {
	out, q, obj, ok := s.decodeWrite(w, req, res, ns, parseCreateOptions)
	if !ok {
		return
	}
	if obj.GetNamespace() != ns {
		s.writeError(w, req, registry.CheckAddress(obj, ns, obj.GetName()))
		return
	}
	ctx := req.Context()
	created, err := s.store.Create(ctx, res, obj, q.writeOptions(req))
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	s.writeObject(w, req, out, http.StatusCreated, created)
}

func (s *Server) update(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns, name string) {
	out, q, obj, ok := s.decodeWrite(w, req, res, ns, parseUpdateOptions)
	if !ok {
		return
	}
	if err := registry.CheckAddress(obj, ns, name); err != nil {
		s.writeError(w, req, err)
		return
	}
	ctx := req.Context()
	updated, created, err := s.store.Update(ctx, res, ns, name, obj, q.writeOptions(req))
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeObject(w, req, out, code, updated)
}

// maxJSONPatchOperations is kube-apiserver's bound on the operations of
// one JSON patch (maxJSONPatchOperations in k8s.io/apiserver
// pkg/endpoints/handlers/patch.go), refused with its 413 and message.
const maxJSONPatchOperations = 10000

// limitJSONPatchCopies bounds what the copy operations of one JSON patch
// may add to a document, as kube-apiserver does with its
// JSONPatchMaxCopyBytes (k8s.io/apiserver pkg/server/config.go): the
// library's limit is one per process, so New sets it, atomically, to the
// smallest any server asks for (one in a real process) before the server
// serves a patch. Without it a patch of an add and a few copies, each doubling
// the document, grows it past any memory.
func limitJSONPatchCopies(max int64) {
	for {
		cur := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
		if cur > 0 && cur <= max || atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, cur, max) {
			return
		}
	}
}

// patchTooLarge is the 413 for a patch whose result would be larger than
// --max-request-bytes: refused before it is decoded, validated or
// written (a write of it would be refused too).
func (s *Server) patchTooLarge(size int) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"the patched object is %d bytes, more than the limit of %d bytes (--max-request-bytes)", size, s.maxRequestBytes))
}

// jsonPatchError is the 422 kube-apiserver answers when a JSON patch does
// not apply, whose message says only that the request was rejected. A
// patch whose copies pass the limit is told so, naming the flag.
func (s *Server) jsonPatchError(err error) error {
	e := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	var ce *jsonpatch.AccumulatedCopySizeError
	if errors.As(err, &ce) {
		e.ErrStatus.Message = fmt.Sprintf("the copy operations of a JSON patch may not add more than %d bytes to the object (--max-request-bytes): %v",
			atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit), err)
	}
	return e
}

func (s *Server) patch(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns, name string) {
	out, err := negotiate(req, forResources...)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	pt := types.PatchType(mt)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	case types.ApplyYAMLPatchType:
		s.apply(w, req, out, res, ns, name)
		return
	default:
		// kube-apiserver's router answers this, in plain text.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		_, _ = w.Write([]byte("415: Unsupported Media Type"))
		return
	}
	q, err := parsePatchOptions(req, false)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	patchBytes, err := readBody(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	var jsonPatch jsonpatch.Patch
	if pt == types.JSONPatchType {
		if jsonPatch, err = jsonpatch.DecodePatch(patchBytes); err != nil {
			s.writeError(w, req, apierrors.NewBadRequest(err.Error()))
			return
		}
		if len(jsonPatch) > maxJSONPatchOperations {
			s.writeError(w, req, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(jsonPatch))))
			return
		}
	} else if !json.Valid(patchBytes) {
		s.writeError(w, req, apierrors.NewBadRequest("error decoding patch: invalid JSON"))
		return
	}
	jsonInfo, _ := serializerFor(mediaJSON)
	var warns []string
	apply := func(cur runtime.Object) (registry.Object, error) {
		warns = nil
		original, err := runtime.Encode(jsonInfo.Serializer, cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		var patched []byte
		switch pt {
		case types.JSONPatchType:
			if patched, err = guardPatch(func() ([]byte, error) { return jsonPatch.Apply(original) }); err != nil {
				return nil, s.jsonPatchError(err)
			}
		case types.MergePatchType:
			if patched, err = guardPatch(func() ([]byte, error) { return jsonpatch.MergePatch(original, patchBytes) }); err != nil {
				return nil, apierrors.NewBadRequest(boundMessage(err.Error(), maxEchoBytes))
			}
		case types.StrategicMergePatchType:
			if patched, err = guardPatch(func() ([]byte, error) { return strategicpatch.StrategicMergePatch(original, patchBytes, res.New()) }); err != nil {
				return nil, apierrors.NewBadRequest(boundMessage(err.Error(), maxEchoBytes))
			}
		}
		// A merge patch is no larger than its body, but adds to the
		// object; a JSON patch's adds and copies may too.
		if int64(len(patched)) > s.maxRequestBytes {
			return nil, s.patchTooLarge(len(patched))
		}
		gvk := res.GroupVersionKind()
		obj, actual, err := jsonInfo.StrictSerializer.Decode(patched, &gvk, res.New())
		if se, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			switch q.fieldValidation {
			case metav1.FieldValidationStrict:
			case metav1.FieldValidationIgnore:
				err = nil
			default:
				warns, err = errorStrings(se.Errors()), nil
			}
		}
		if err == nil && (actual == nil || *actual != gvk) {
			err = fmt.Errorf("the patch changed the object's kind or apiVersion to %v", actual)
		}
		if err != nil {
			// kube-apiserver quotes the whole patched object here.
			return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
				field.Invalid(field.NewPath("patch"), echoed(string(patched)), boundMessage(err.Error(), maxEchoBytes))})
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk) // as decodeObject does
		return obj.(registry.Object), nil
	}
	ctx := req.Context()
	patched, err := s.store.Patch(ctx, res, ns, name, apply, q.writeOptions(req))
	warnings(w, warns)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	s.writeObject(w, req, out, http.StatusOK, patched)
}

// guardPatch runs a patch library's apply, turning a panic into the
// patch's error: json-patch panics on some malformed operations, such as
// a replace or test of the whole document without a value or with null.
func guardPatch(apply func() ([]byte, error)) (patched []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			patched, err = nil, fmt.Errorf("the patch cannot be applied: %v", r)
		}
	}()
	return apply()
}

// deleteRequest negotiates the answer and reads DeleteOptions for delete
// and deletecollection; on failure it has answered.
func (s *Server) deleteRequest(w http.ResponseWriter, req *http.Request) (output, *metav1.DeleteOptions, bool) {
	out, err := negotiate(req)
	if err != nil {
		s.writeError(w, req, err)
		return out, nil, false
	}
	body, err := readBody(req)
	if err == nil {
		var o *metav1.DeleteOptions
		if o, err = parseDeleteOptions(req, body); err == nil {
			return out, o, true
		}
	}
	s.writeError(w, req, err)
	return out, nil, false
}

func (s *Server) delete(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns, name string) {
	out, o, ok := s.deleteRequest(w, req)
	if !ok {
		return
	}
	ctx := req.Context()
	// Leases have no dependents and leasehold runs no garbage collector, so
	// every propagation policy deletes at once (Background).
	deleted, err := s.store.Delete(ctx, res, ns, name, registry.DeleteOptions{
		WriteOptions: registry.WriteOptions{DryRun: len(o.DryRun) > 0}, Preconditions: o.Preconditions})
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	meta := deleted.(metav1.Object)
	out.write(w, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: name, Group: res.GroupResource().Group, Kind: res.Name, UID: meta.GetUID()},
	})
}

// deleteCollection deletes every object a list with the same parameters
// returns (its first page when limited), one write each, and answers with
// that list.
func (s *Server) deleteCollection(w http.ResponseWriter, req *http.Request, res *registry.Resource, ns string) {
	out, o, ok := s.deleteRequest(w, req)
	if !ok {
		return
	}
	_, lo, err := parseListOptions(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	ctx := req.Context()
	list, err := s.store.List(ctx, res, ns, lo)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	for _, item := range items {
		it, err := meta.Accessor(item)
		if err != nil {
			s.writeError(w, req, err)
			return
		}
		_, err = s.store.Delete(ctx, res, it.GetNamespace(), it.GetName(), registry.DeleteOptions{
			WriteOptions: registry.WriteOptions{DryRun: len(o.DryRun) > 0}, Preconditions: o.Preconditions})
		if err != nil && !apierrors.IsNotFound(err) {
			s.writeError(w, req, err)
			return
		}
	}
	out.write(w, http.StatusOK, list)
}

// apply serves server-side apply (application/apply-patch+yaml).
func (s *Server) apply(w http.ResponseWriter, req *http.Request, out output, res *registry.Resource, ns, name string) {
	q, err := parsePatchOptions(req, true)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	body, err := readBody(req)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	ctx := req.Context()
	obj, created, err := s.store.Apply(ctx, res, ns, name, body, q.force, q.writeOptions(req))
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeObject(w, req, out, code, obj)
}

// writeObject answers with a write's result, transformed as Accept asks:
// kube-apiserver serves Tables and PartialObjectMetadata for writes as for
// reads, and client-go's metadata client asks for PartialObjectMetadata in
// protobuf on patch.
func (s *Server) writeObject(w http.ResponseWriter, req *http.Request, out output, code int, obj runtime.Object) {
	t, err := transform(req, out, obj, true)
	if err != nil {
		s.writeError(w, req, err)
		return
	}
	out.write(w, code, t)
}
