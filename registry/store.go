package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/fsm"
	"github.com/leasehold/leasehold/fsm/state"
)

// Cluster is what the registry needs of the Raft node.
type Cluster interface {
	Apply(ctx context.Context, cmd *fsm.Command) (*fsm.Result, error)
	EnsureCurrent(ctx context.Context) error
	LinearizableRead(ctx context.Context) error
	CommitIndex() uint64
	Ready() (bool, string)
	State() *state.Store
}

// Store implements the Kubernetes semantics of every verb over the
// replicated state: reads on any node, writes on the leader (the API
// forwards writes there). It returns *apierrors.StatusError for every
// outcome a client should see.
type Store struct {
	cluster Cluster
	// Now and NewUID are injected so tests can fix them.
	Now    func() time.Time
	NewUID func() types.UID
	// RVWait bounds how long a read for a resourceVersion this node has
	// not applied yet waits before failing as too large.
	RVWait time.Duration
	// ReadTimeout bounds how long a linearizable read waits for the cluster
	// (a leader, a quorum) before it fails with 504.
	ReadTimeout time.Duration
	// WriteTimeout bounds how long a write on a node that does not lead
	// waits for a current state to decide from before it fails with 503
	// (nothing written).
	WriteTimeout time.Duration
	// Admit, if set, judges a create (old nil) or an update after
	// validation, with the request's context (which carries its user): RBAC's
	// escalation check. An error refuses the write, dry run included.
	Admit func(ctx context.Context, r *Resource, obj, old Object) error

	rbac atomic.Pointer[rbacView] // see RBACPolicy
}

// New returns a Store over c.
func New(c Cluster) *Store {
	return &Store{
		cluster:      c,
		Now:          time.Now,
		NewUID:       func() types.UID { return types.UID(uuid.NewString()) },
		RVWait:       3 * time.Second,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 5 * time.Second,
	}
}

// State is the local state, for watches.
func (s *Store) State() *state.Store { return s.cluster.State() }

// Cluster is the node the store runs on.
func (s *Store) Cluster() Cluster { return s.cluster }

func key(r *Resource, ns, name string) state.Key {
	return state.Key{Resource: r.Name, Namespace: ns, Name: name}
}

// ClusterError turns a cluster failure into the Status a client sees.
func ClusterError(err error) error {
	var se *apierrors.StatusError
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrNoLeader):
		return NotLeader("the cluster has no leader at the moment, please retry")
	case errors.As(err, new(*cluster.TooLargeError)):
		// etcd refuses it as "request is too large" (and kube-apiserver
		// answers 500); the body was under kube-apiserver's 3 MiB, but
		// what it stores is over --max-request-bytes.
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	case errors.Is(err, cluster.ErrDiskFull):
		// kube-apiserver's answer when etcd refuses a write for lack of
		// space: 500, no reason, the storage's own words.
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: err.Error()}}
	case errors.Is(err, cluster.ErrUnknownOutcome):
		e := apierrors.NewTimeoutError("request did not complete within requested timeout - the write may or may not have been applied: leadership changed while it was committed", 1)
		return e
	case errors.Is(err, cluster.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 1)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request did not complete: the client went away", 0)
	}
	return apierrors.NewInternalError(err)
}

// StatusReasonInsufficientStorage is the reason of NoSpace's 507: no
// reason of kube-apiserver's fits (it answers 500 when etcd is full), and
// kubectl prints the reason before the message.
const StatusReasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// NoSpace is the 507 for a write refused because it would grow the stored
// data past the quota or while the NOSPACE alarm is on. It says what
// still works and what to do.
func NoSpace(e *fsm.NoSpaceError) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage, Reason: StatusReasonInsufficientStorage,
		Message: fmt.Sprintf("database space exceeded: the NOSPACE alarm is raised (%d bytes stored, this write would add %d, the quota is %d bytes: --quota-backend-bytes); "+
			"writes that would grow the stored data are refused, while renewals, holder changes and deletes still work; "+
			"free space by deleting objects, then clear the alarm with `leaseholdctl alarm disarm`", e.Stored, e.Grow, e.Quota),
	}}
}

// NotLeader is the 503 for a request this node could not serve because it
// does not lead (or no leader is known): nothing was written, so it can be
// retried anywhere. It unwraps to cluster.ErrNotLeader.
func NotLeader(msg string) error {
	return notLeaderError{Unavailable(msg).(*apierrors.StatusError)}
}

type notLeaderError struct{ *apierrors.StatusError }

func (notLeaderError) Unwrap() error { return cluster.ErrNotLeader }

// Unavailable is a 503 with a retry hint, which client-go honours.
func Unavailable(msg string) error {
	e := apierrors.NewServiceUnavailable(msg)
	e.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	return e
}

// parseRV parses a resourceVersion parameter, which must be an unsigned
// decimal.
func parseRV(rv string) (uint64, error) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0, invalidResourceVersion(field.NewPath("resourceVersion"), rv, err)
	}
	return n, nil
}

// maxEchoedResourceVersion bounds the resourceVersion an error quotes
// back: a client may send a megabyte of one.
const maxEchoedResourceVersion = 64

// invalidResourceVersion is the 400 BadRequest for a resourceVersion at
// path (the parameter, or an object's metadata.resourceVersion) that
// does not parse. kube-apiserver's storage words it so but answers 500 on
// a get, list, watch, update or patch; the mistake is the client's. A
// long value is left out of the message rather than quoted twice.
func invalidResourceVersion(path *field.Path, rv string, err error) error {
	var value any = rv
	if ne, ok := err.(*strconv.NumError); ok && len(rv) > maxEchoedResourceVersion {
		value, err = field.OmitValueType{}, fmt.Errorf("strconv.%s: %w (%d bytes)", ne.Func, ne.Err, len(rv))
	}
	return apierrors.NewBadRequest(field.Invalid(path, value, err.Error()).Error())
}

// TooLargeResourceVersion is kube-apiserver's answer to a read of a version
// the server has not reached.
func TooLargeResourceVersion(rv, current uint64) error {
	e := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	e.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return e
}

// ReadOptions choose the consistency of a read.
type ReadOptions struct {
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
}

// view returns the state to read from, following the resourceVersion rules:
// unset is a linearizable read, "0" is whatever this node has, N is at least
// N (or exactly N with Exact).
func (s *Store) view(ctx context.Context, o ReadOptions) (*state.Snapshot, error) {
	st := s.cluster.State()
	switch o.ResourceVersion {
	case "":
		if err := s.linearizableRead(ctx); err != nil {
			return nil, err
		}
		return st.Snapshot(), nil
	case "0":
		if ok, why := s.cluster.Ready(); !ok {
			return nil, Unavailable("this node is not ready to serve reads: " + why)
		}
		return st.Snapshot(), nil
	}
	rv, err := parseRV(o.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if err := s.waitApplied(ctx, rv); err != nil {
		return nil, err
	}
	if o.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		sn, ok := st.SnapshotAt(rv)
		if !ok {
			return nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
		}
		return sn, nil
	}
	return st.Snapshot(), nil
}

// waitApplied waits, within RVWait, until this node has applied rv.
func (s *Store) waitApplied(ctx context.Context, rv uint64) error {
	st := s.cluster.State()
	if st.AppliedIndex() >= rv {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.RVWait)
	defer cancel()
	if err := st.WaitApplied(wctx, rv); err != nil {
		return TooLargeResourceVersion(rv, st.AppliedIndex())
	}
	return nil
}

// Get returns one object.
func (s *Store) Get(ctx context.Context, r *Resource, ns, name string, o ReadOptions) (runtime.Object, error) {
	out, _, err := s.GetStored(ctx, r, ns, name, o)
	return out, err
}

// GetStored is Get that also returns the stored object when the answer is
// that very object (not a conversion of it), so that the caller can reuse
// its cached encodings.
func (s *Store) GetStored(ctx context.Context, r *Resource, ns, name string, o ReadOptions) (runtime.Object, *state.Object, error) {
	o.ResourceVersionMatch = "" // not meaningful for get
	sn, err := s.view(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	obj := sn.Get(key(r, ns, name))
	if obj == nil {
		return nil, nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	out, err := served(r, obj.Obj)
	if err != nil {
		return nil, nil, err
	}
	if out != obj.Obj {
		return out, nil, nil
	}
	return out, obj, nil
}

// served converts a stored object to r's version; a failure is internal.
func served(r *Resource, obj runtime.Object) (Object, error) {
	out, err := r.fromStored(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// WriteOptions apply to every write.
type WriteOptions struct {
	DryRun bool
	// Manager is the field manager recorded in managedFields (see
	// Manager()).
	Manager string
	// applied marks a write whose managedFields the apply already set.
	applied bool
}

// prepareCreate fills the server-owned metadata of a new object, as
// kube-apiserver's BeforeCreate does.
func (s *Store) prepareCreate(obj Object) {
	obj.SetUID(s.NewUID())
	obj.SetCreationTimestamp(metav1.NewTime(s.Now().Truncate(time.Second)))
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetSelfLink("")
	obj.SetResourceVersion("")
}

// storedBytes converts a served object to the stored form and returns what
// the FSM stores: its protobuf encoding with resourceVersion unset. prev is
// the stored object it replaces, if any.
func storedBytes(r *Resource, obj Object, prev runtime.Object) ([]byte, error) {
	st, err := r.toStored(obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if r.CarryOver != nil && prev != nil {
		r.CarryOver(prev.(fsm.StoredObject), st)
	}
	rv := st.GetResourceVersion()
	st.SetResourceVersion("")
	data, err := st.Marshal()
	st.SetResourceVersion(rv)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return data, nil
}

// Create stores a new object (POST). obj has passed decoding and its
// namespace is the URL's.
func (s *Store) Create(ctx context.Context, r *Resource, obj Object, o WriteOptions) (runtime.Object, error) {
	generate := obj.GetName() == "" && obj.GetGenerateName() != ""
	if generate {
		obj.SetName(generateName(obj.GetGenerateName()))
	}
	presetRV := obj.GetResourceVersion()
	r.sanitize(obj)
	s.prepareCreate(obj)
	if !o.applied {
		empty := r.New()
		var err error
		if obj, err = r.manage(empty, obj, o.Manager); err != nil {
			return nil, err
		}
	}
	if errs := r.Validate(obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(r.GroupKind(), obj.GetName(), errs)
	}
	if s.Admit != nil {
		if err := s.Admit(ctx, r, obj, nil); err != nil {
			return nil, err
		}
	}
	if o.DryRun {
		return obj, nil
	}
	if presetRV != "" {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 500,
			Message: "resourceVersion should not be set on objects to be created",
		}}
	}
	// kube-apiserver tries a few generated names before giving up.
	for attempt := 0; ; attempt++ {
		data, err := storedBytes(r, obj, nil)
		if err != nil {
			return nil, err
		}
		res, err := s.cluster.Apply(ctx, &fsm.Command{Type: fsm.CmdCreate, Resource: r.Name, Object: data})
		if err != nil {
			return nil, ClusterError(err)
		}
		if res.Err == nil {
			return served(r, res.Object.Obj)
		}
		if state.Code(res.Err) != state.AlreadyExists {
			return nil, writeError(r, key(r, obj.GetNamespace(), obj.GetName()), res.Err)
		}
		if !generate {
			return nil, apierrors.NewAlreadyExists(r.GroupResource(), obj.GetName())
		}
		if attempt == 7 {
			e := apierrors.NewAlreadyExists(r.GroupResource(), obj.GetName())
			e.ErrStatus.Message += ", the server was not able to generate a unique name for the object"
			return nil, e
		}
		obj.SetName(generateName(obj.GetGenerateName()))
	}
}

const (
	nameAlphabet     = "bcdfghjklmnpqrstvwxz2456789"
	maxPrefixLength  = 58 // 63 minus the random suffix
	randomNameLength = 5
)

// generateName appends a random suffix to prefix, as kube-apiserver's
// SimpleNameGenerator does.
func generateName(prefix string) string {
	if len(prefix) > maxPrefixLength {
		prefix = prefix[:maxPrefixLength]
	}
	b := make([]byte, randomNameLength)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(nameAlphabet))))
		b[i] = nameAlphabet[n.Int64()]
	}
	return prefix + string(b)
}

// current reads the object under k from a state that holds every write
// acknowledged before the call: the leader's once it has applied an entry
// of its own term, another node's after a read index.
func (s *Store) current(ctx context.Context, k state.Key) (*state.Object, error) {
	if err := s.cluster.EnsureCurrent(ctx); err != nil {
		if !errors.Is(err, cluster.ErrNotLeader) {
			return nil, ClusterError(err)
		}
		rctx, cancel := context.WithTimeout(ctx, s.WriteTimeout)
		defer cancel()
		if err := s.cluster.LinearizableRead(rctx); err != nil {
			return nil, NotLeader("the cluster has no leader at the moment, please retry")
		}
	}
	return s.cluster.State().Snapshot().Get(k), nil
}

// catchUp waits until this node has applied rv if rv may exist (it is not
// beyond the commit index). It reports whether the node now holds rv.
func (s *Store) catchUp(ctx context.Context, rv uint64) bool {
	st := s.cluster.State()
	if st.AppliedIndex() >= rv {
		return true
	}
	if rv > s.cluster.CommitIndex() {
		return false
	}
	wctx, cancel := context.WithTimeout(ctx, s.RVWait)
	defer cancel()
	return st.WaitApplied(wctx, rv) == nil
}

func conflict(r *Resource, name string) error {
	return apierrors.NewConflict(r.GroupResource(), name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// preconditionFailed is kube-apiserver's storage error text for a failed
// uid or resourceVersion precondition.
func preconditionFailed(r *Resource, k state.Key, what, want, have string) error {
	return apierrors.NewConflict(r.GroupResource(), k.Name, fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: /registry/%s/%s/%s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: %s in precondition: %s, %s in object meta: %s",
		r.Name, k.Namespace, k.Name, what, want, what, have))
}

// Update replaces an object (PUT). A missing object is created, as the
// Lease strategy allows; an existing one needs a resourceVersion.
//
// The first attempt decides from this node's state as it is, with no round
// trip (a Lease renewal is the busiest write there is): the command it
// commits carries the version it was decided from, and the FSM refuses it
// if that is not the stored version at the command's place in the log, so
// a commit means the decision was made from the current object. Any other
// outcome of the first attempt is decided again from a current state.
func (s *Store) Update(ctx context.Context, r *Resource, ns, name string, obj Object, o WriteOptions) (runtime.Object, bool, error) {
	k := key(r, ns, name)
	confirmed := false
	for attempt := 0; attempt < 5; attempt++ {
		optimistic := attempt == 0 && !o.DryRun
		var cur *state.Object
		if optimistic {
			cur = s.cluster.State().Snapshot().Get(k)
		} else {
			var err error
			if cur, err = s.current(ctx, k); err != nil {
				return nil, false, err
			}
		}
		if cur == nil {
			if optimistic {
				continue // perhaps not applied here yet: look again in a current state
			}
			// Created by an update: the body's resourceVersion is ignored
			// (it is no create precondition, as in kube-apiserver). Create
			// fills in the copy; the body stays as sent for a retry.
			create := obj.DeepCopyObject().(Object)
			create.SetResourceVersion("")
			out, err := s.Create(ctx, r, create, o)
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: update it instead
			}
			return out, err == nil, err
		}
		var refusal error
		rv, perr := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
		switch {
		case obj.GetResourceVersion() == "":
			// kube-apiserver names the resource, not the kind, here.
			refusal = apierrors.NewInvalid(schema.GroupKind{Group: r.GroupResource().Group, Kind: r.Name}, name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
		case perr != nil:
			return nil, false, invalidResourceVersion(field.NewPath("metadata", "resourceVersion"), obj.GetResourceVersion(), perr)
		case rv > cur.RV && s.catchUp(ctx, rv):
			continue // this node was behind the client: read again
		case rv != cur.RV:
			refusal = conflict(r, name)
		case obj.GetUID() != "" && string(obj.GetUID()) != cur.UID():
			refusal = preconditionFailed(r, k, "UID", string(obj.GetUID()), cur.UID())
		}
		if refusal != nil {
			if confirmed {
				return nil, false, refusal
			}
			if err := s.confirm(ctx); err != nil {
				return nil, false, err
			}
			confirmed = true
			continue
		}
		// The object is modified in place: keep the client's for a retry.
		in := obj
		if optimistic {
			obj = obj.DeepCopyObject().(Object)
		}
		next, data, err := s.prepareReplace(ctx, r, cur, obj, o)
		if err != nil {
			if optimistic {
				obj = in
				continue // refused from a state that may be old: decide again
			}
			return nil, false, err
		}
		if data == nil {
			return next, false, nil // dry run
		}
		out, err := s.commitReplace(ctx, r, cur, data)
		if apierrors.IsNotFound(err) {
			// Deleted meanwhile: the update creates it, as
			// kube-apiserver's retry would.
			obj = in
			continue
		}
		return out, false, err
	}
	return nil, false, conflict(r, name)
}

// confirm makes a refusal decided from the leader's local state safe: it
// proves with a quorum that no newer leader exists and that every write
// acknowledged so far is applied here, so the caller can decide again from
// an up-to-date state. Writes that go through the log need no such step.
func (s *Store) confirm(ctx context.Context) error { return s.linearizableRead(ctx) }

// linearizableRead waits, within ReadTimeout, until this node's state holds
// every write acknowledged before the call.
func (s *Store) linearizableRead(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.ReadTimeout)
	defer cancel()
	if err := s.cluster.LinearizableRead(ctx); err != nil {
		return ClusterError(err)
	}
	return nil
}

// replace writes obj over cur: server-owned metadata is kept from cur, the
// update is validated, and the FSM applies it only if cur is still the
// stored version.
func (s *Store) replace(ctx context.Context, r *Resource, cur *state.Object, obj Object, o WriteOptions) (runtime.Object, error) {
	next, data, err := s.prepareReplace(ctx, r, cur, obj, o)
	if err != nil || data == nil {
		return next, err
	}
	return s.commitReplace(ctx, r, cur, data)
}

// prepareReplace builds and validates the object replacing cur, and
// returns it with its stored encoding (nil for a dry run).
func (s *Store) prepareReplace(ctx context.Context, r *Resource, cur *state.Object, obj Object, o WriteOptions) (Object, []byte, error) {
	old, err := served(r, cur.Obj)
	if err != nil {
		return nil, nil, err
	}
	r.sanitize(obj)
	obj.SetUID(old.GetUID())
	obj.SetCreationTimestamp(old.GetCreationTimestamp())
	obj.SetGeneration(old.GetGeneration())
	obj.SetDeletionTimestamp(old.GetDeletionTimestamp())
	obj.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	obj.SetSelfLink("")
	obj.SetResourceVersion(old.GetResourceVersion())
	if !o.applied {
		if obj, err = r.manage(old, obj, o.Manager); err != nil {
			return nil, nil, err
		}
	}
	if errs := r.ValidateUpdate(obj, old); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(r.GroupKind(), obj.GetName(), errs)
	}
	if s.Admit != nil {
		if err := s.Admit(ctx, r, obj, old); err != nil {
			return nil, nil, err
		}
	}
	if o.DryRun {
		return obj, nil, nil
	}
	data, err := storedBytes(r, obj, cur.Obj)
	if err != nil {
		return nil, nil, err
	}
	return obj, data, nil
}

// commitReplace has the FSM store data over cur if cur is still the stored
// version.
func (s *Store) commitReplace(ctx context.Context, r *Resource, cur *state.Object, data []byte) (runtime.Object, error) {
	res, err := s.cluster.Apply(ctx, &fsm.Command{Type: fsm.CmdUpdate, Resource: r.Name, Object: data, ExpectRV: cur.RV})
	if err != nil {
		return nil, ClusterError(err)
	}
	if res.Err != nil {
		return nil, writeError(r, cur.Key(), res.Err)
	}
	return served(r, res.Object.Obj)
}

// writeError maps a refused write to its Status.
func writeError(r *Resource, k state.Key, err error) error {
	var se *state.Error
	var full *fsm.NoSpaceError
	if errors.As(err, &full) {
		return NoSpace(full)
	}
	if !errors.As(err, &se) {
		return apierrors.NewInternalError(err)
	}
	switch se.Code {
	case state.NotFound:
		return apierrors.NewNotFound(r.GroupResource(), k.Name)
	case state.AlreadyExists:
		return apierrors.NewAlreadyExists(r.GroupResource(), k.Name)
	case state.Conflict:
		return conflict(r, k.Name)
	case state.UIDMismatch:
		return conflict(r, k.Name)
	}
	return apierrors.NewInternalError(err)
}

// PatchFunc computes the patched object from the current one. It returns a
// Status error for a patch that cannot be applied.
type PatchFunc func(cur runtime.Object) (Object, error)

// Patch applies patch to the current object and writes the result if the
// object did not change meanwhile; otherwise it starts again from the new
// version. A resourceVersion set by the patch itself is a precondition.
func (s *Store) Patch(ctx context.Context, r *Resource, ns, name string, patch PatchFunc, o WriteOptions) (runtime.Object, error) {
	k := key(r, ns, name)
	var lastErr error
	confirmed := false
	for attempt := 0; attempt < 10; attempt++ {
		cur, err := s.current(ctx, k)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			if !confirmed {
				if err := s.confirm(ctx); err != nil {
					return nil, err
				}
				confirmed = true
				continue
			}
			return nil, apierrors.NewNotFound(r.GroupResource(), name)
		}
		curServed, err := served(r, cur.Obj)
		if err != nil {
			return nil, err
		}
		obj, err := patch(curServed)
		if err != nil {
			return nil, err
		}
		if err := CheckAddress(obj, ns, name); err != nil {
			return nil, err
		}
		var refusal error
		if rv := obj.GetResourceVersion(); rv != "" && rv != strconv.FormatUint(cur.RV, 10) {
			want, err := strconv.ParseUint(rv, 10, 64)
			if err != nil {
				return nil, invalidResourceVersion(field.NewPath("metadata", "resourceVersion"), rv, err)
			}
			if want > cur.RV && s.catchUp(ctx, want) {
				continue
			}
			refusal = conflict(r, name)
		} else if uid := obj.GetUID(); uid != "" && string(uid) != cur.UID() {
			refusal = preconditionFailed(r, k, "UID", string(uid), cur.UID())
		}
		if refusal != nil {
			if confirmed {
				return nil, refusal
			}
			if err := s.confirm(ctx); err != nil {
				return nil, err
			}
			confirmed = true
			continue
		}
		out, err := s.replace(ctx, r, cur, obj, o)
		if !apierrors.IsConflict(err) {
			return out, err
		}
		// Someone wrote first: catch up with them and patch again.
		lastErr = err
		s.catchUp(ctx, s.cluster.CommitIndex())
	}
	return nil, lastErr
}

// DeleteOptions are the parts of metav1.DeleteOptions that matter here.
type DeleteOptions struct {
	WriteOptions
	Preconditions *metav1.Preconditions
}

// Delete removes an object. It returns the deleted object's last state.
func (s *Store) Delete(ctx context.Context, r *Resource, ns, name string, o DeleteOptions) (runtime.Object, error) {
	k := key(r, ns, name)
	cur, err := s.current(ctx, k)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		if err := s.confirm(ctx); err != nil {
			return nil, err
		}
		if cur = s.cluster.State().Snapshot().Get(k); cur == nil {
			return nil, apierrors.NewNotFound(r.GroupResource(), name)
		}
	}
	// Preconditions are checked by the FSM, at the delete's place in the
	// log, not against this node's possibly older view.
	cmd := &fsm.Command{Type: fsm.CmdDelete, Resource: r.Name, Namespace: ns, Name: name}
	if p := o.Preconditions; p != nil {
		if p.UID != nil {
			cmd.ExpectUID = string(*p.UID)
		}
		if p.ResourceVersion != nil {
			want, err := strconv.ParseUint(*p.ResourceVersion, 10, 64)
			if err != nil || want == 0 {
				return nil, preconditionFailed(r, k, "ResourceVersion", *p.ResourceVersion, strconv.FormatUint(cur.RV, 10))
			}
			cmd.ExpectRV = want
		}
	}
	if o.DryRun {
		if cmd.ExpectUID != "" && cmd.ExpectUID != cur.UID() {
			return nil, preconditionFailed(r, k, "UID", cmd.ExpectUID, cur.UID())
		}
		if cmd.ExpectRV != 0 && cmd.ExpectRV != cur.RV {
			return nil, preconditionFailed(r, k, "ResourceVersion", strconv.FormatUint(cmd.ExpectRV, 10), strconv.FormatUint(cur.RV, 10))
		}
		return served(r, cur.Obj)
	}
	res, err := s.cluster.Apply(ctx, cmd)
	if err != nil {
		return nil, ClusterError(err)
	}
	if res.Err != nil {
		var se *state.Error
		if errors.As(res.Err, &se) {
			switch se.Code {
			case state.UIDMismatch:
				return nil, preconditionFailed(r, k, "UID", cmd.ExpectUID, se.UID)
			case state.Conflict:
				return nil, preconditionFailed(r, k, "ResourceVersion", strconv.FormatUint(cmd.ExpectRV, 10), strconv.FormatUint(se.RV, 10))
			}
		}
		return nil, writeError(r, k, res.Err)
	}
	return served(r, res.Object.Obj)
}

// Apply is server-side apply: the field manager merges patch (a partial
// object in YAML or JSON) into the current object and records that manager
// as the owner of the fields it sets; a field another manager owns is a 409
// conflict unless force. A missing object is created (created reports it).
// A resourceVersion in the patch is a precondition, as with any patch.
func (s *Store) Apply(ctx context.Context, r *Resource, ns, name string, patch []byte, force bool, o WriteOptions) (out runtime.Object, created bool, err error) {
	patchObj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(patch, &patchObj.Object); err != nil {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	r.sanitize(patchObj)
	fm, err := r.fieldManager()
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	o.applied = true
	k := key(r, ns, name)
	confirmed := false
	for attempt := 0; attempt < 10; attempt++ {
		cur, err := s.current(ctx, k)
		if err != nil {
			return nil, false, err
		}
		live := r.New()
		if cur != nil {
			obj, err := served(r, cur.Obj)
			if err != nil {
				return nil, false, err
			}
			live = obj.DeepCopyObject().(Object)
		} else if !confirmed {
			if err := s.confirm(ctx); err != nil {
				return nil, false, err
			}
			confirmed = true
			continue
		} else {
			live.SetNamespace(ns)
			live.SetName(name)
		}
		applied, err := fm.Apply(live, patchObj.DeepCopy(), o.Manager, force)
		if err != nil {
			var se apierrors.APIStatus
			if errors.As(err, &se) {
				return nil, false, err
			}
			return nil, false, apierrors.NewBadRequest(err.Error())
		}
		obj, ok := applied.(Object)
		if !ok {
			return nil, false, apierrors.NewInternalError(fmt.Errorf("apply returned %T", applied))
		}
		if err := CheckAddress(obj, ns, name); err != nil {
			return nil, false, err
		}
		if cur == nil {
			obj.SetResourceVersion("")
			out, err := s.Create(ctx, r, obj, o)
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: apply to it instead
			}
			return out, err == nil, err
		}
		if rv := obj.GetResourceVersion(); rv != "" && rv != strconv.FormatUint(cur.RV, 10) {
			want, perr := strconv.ParseUint(rv, 10, 64)
			if perr != nil {
				return nil, false, invalidResourceVersion(field.NewPath("metadata", "resourceVersion"), rv, perr)
			}
			if want > cur.RV && s.catchUp(ctx, want) {
				continue
			}
			return nil, false, conflict(r, name)
		}
		out, err := s.replace(ctx, r, cur, obj, o)
		if !apierrors.IsConflict(err) {
			return out, false, err
		}
		s.catchUp(ctx, s.cluster.CommitIndex())
	}
	return nil, false, conflict(r, name)
}

// CheckAddress refuses an object whose name or namespace is not the URL's,
// with kube-apiserver's messages.
func CheckAddress(obj Object, ns, name string) error {
	if obj.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), name))
	}
	if obj.GetNamespace() != ns {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
