package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/fsm/state"
)

// ListOptions select and page a list. Label and Field are never nil.
type ListOptions struct {
	ReadOptions
	Label    labels.Selector
	Field    fields.Selector
	Limit    int64
	Continue string
}

// Matches reports whether obj passes the selectors.
func (o *ListOptions) Matches(obj *state.Object) bool {
	if !o.Field.Empty() {
		k := obj.Key()
		if !o.Field.Matches(fields.Set{"metadata.name": k.Name, "metadata.namespace": k.Namespace}) {
			return false
		}
	}
	if o.Label.Empty() {
		return true
	}
	m, ok := obj.Obj.(interface{ GetLabels() map[string]string })
	return ok && o.Label.Matches(labels.Set(m.GetLabels()))
}

// continueToken is kube-apiserver's continue token: the snapshot's version
// and the key to start after, relative to the resource prefix.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

func encodeContinue(rv uint64, last state.Key) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", RV: int64(rv), Start: last.Namespace + "/" + last.Name + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(token string) (*continueToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, fmt.Errorf("continue key is not valid: %v", err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("continue key is not valid: %v", err)
	}
	if t.APIVersion != "meta.k8s.io/v1" {
		return nil, fmt.Errorf("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if t.RV == 0 || !strings.HasSuffix(t.Start, "\x00") || !strings.Contains(t.Start, "/") {
		return nil, fmt.Errorf("continue key is not valid: invalid start key")
	}
	return &t, nil
}

const continueTooOld = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// List returns the matching objects of r in namespace ns ("" = all) as r's
// list type. Every page of a paginated list comes from the snapshot of the
// first page.
func (s *Store) List(ctx context.Context, r *Resource, ns string, o ListOptions) (runtime.Object, error) {
	list, stored, err := s.ListStored(ctx, r, ns, o)
	if stored != nil {
		r.SetItems(list, StoredItems(stored))
	}
	return list, err
}

// StoredItems is the objects of stored, as a list's items.
func StoredItems(stored []*state.Object) []runtime.Object {
	items := make([]runtime.Object, len(stored))
	for i, o := range stored {
		items[i] = o.Obj
	}
	return items
}

// ListStored is List for a caller that can write stored objects as they
// are: when the items are those very objects (not conversions of them),
// it returns them, and the list without items (its metadata only), so
// that no copy of them is made and their cached encodings can be reused;
// otherwise the whole list, and nil.
func (s *Store) ListStored(ctx context.Context, r *Resource, ns string, o ListOptions) (runtime.Object, []*state.Object, error) {
	var (
		sn    *state.Snapshot
		after *state.Key
		err   error
	)
	if o.Continue != "" {
		t, derr := decodeContinue(o.Continue)
		if derr != nil {
			return nil, nil, apierrors.NewBadRequest("invalid continue token: " + derr.Error())
		}
		parts := strings.SplitN(strings.TrimSuffix(t.Start, "\x00"), "/", 2)
		after = &state.Key{Resource: r.Name, Namespace: parts[0], Name: parts[1]}
		if t.RV < 0 {
			// A token handed out with an expiry: continue at the latest.
			sn, err = s.view(ctx, ReadOptions{})
		} else {
			if err := s.waitApplied(ctx, uint64(t.RV)); err != nil {
				return nil, nil, err
			}
			var ok bool
			if sn, ok = s.cluster.State().SnapshotAt(uint64(t.RV)); !ok {
				e := apierrors.NewResourceExpired(continueTooOld)
				e.ErrStatus.ListMeta.Continue = encodeContinueLatest(*after)
				return nil, nil, e
			}
		}
	} else {
		ro := o.ReadOptions
		// With a limit, a plain resourceVersion means exactly that version
		// (kube-apiserver's legacy rule).
		if o.Limit > 0 && ro.ResourceVersion != "" && ro.ResourceVersion != "0" && ro.ResourceVersionMatch == "" {
			ro.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		}
		sn, err = s.view(ctx, ro)
	}
	if err != nil {
		return nil, nil, err
	}
	limit := o.Limit
	if o.ResourceVersion == "0" && o.Continue == "" {
		// Served like kube-apiserver's watch cache: the whole list.
		limit = 0
	}
	var (
		stored    []*state.Object
		last      *state.Object
		more      bool
		remaining int64
	)
	sn.List(r.Name, ns, after, func(obj *state.Object) bool {
		if !o.Matches(obj) {
			return true
		}
		if limit > 0 && int64(len(stored)) == limit {
			more = true
			remaining++
			return true
		}
		stored = append(stored, obj)
		last = obj
		return true
	})
	list := r.NewList()
	if r.FromStored == nil { // served as stored: the items are the stored objects
		r.SetItems(list, []runtime.Object{})
		if stored == nil {
			stored = []*state.Object{}
		}
	} else {
		items := make([]runtime.Object, len(stored))
		for i, so := range stored {
			if items[i], err = served(r, so.Obj); err != nil {
				return nil, nil, err
			}
		}
		r.SetItems(list, items)
		stored = nil
	}
	meta, _ := list.(metav1.ListInterface)
	meta.SetResourceVersion(fmt.Sprint(sn.Index))
	if more {
		meta.SetContinue(encodeContinue(sn.Index, last.Key()))
		if o.Label.Empty() && o.Field.Empty() {
			meta.SetRemainingItemCount(&remaining)
		}
	}
	return list, stored, nil
}

func encodeContinueLatest(after state.Key) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", RV: -1, Start: after.Namespace + "/" + after.Name + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}
