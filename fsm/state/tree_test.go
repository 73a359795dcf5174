package state

import (
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// checkTree returns the ids in order and checks they are strictly
// increasing.
func checkTree(t *testing.T, n *node) []string {
	t.Helper()
	var ids []string
	n.ascend("", func(o *Object) bool { ids = append(ids, o.ID()); return true })
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("ids out of order: %v", ids)
	}
	return ids
}

// TestTreeAgainstModel applies random inserts and removes to the tree and
// to a map, and checks every version of the tree stays as it was.
func TestTreeAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type version struct {
		root *node
		ids  []string
		objs map[string]*Object
	}
	var root *node
	model := map[string]*Object{}
	var versions []version
	for step := range 3000 {
		k := Key{Resource: "leases", Namespace: fmt.Sprint("ns", rng.Intn(3)), Name: fmt.Sprint("n-", rng.Intn(200))}
		if rng.Intn(3) == 0 {
			var found bool
			root, found = root.remove(k.id())
			if _, ok := model[k.id()]; found != ok {
				t.Fatalf("step %d: remove %s found %v, model %v", step, k, found, ok)
			}
			delete(model, k.id())
		} else {
			o := obj(k, uint64(step), "")
			root = root.insert(k.id(), o)
			model[k.id()] = o
		}
		if step%100 == 0 {
			ids := checkTree(t, root)
			versions = append(versions, version{root, ids, maps.Clone(model)})
		}
	}
	for i, v := range versions {
		ids := checkTree(t, v.root)
		if !slices.Equal(ids, v.ids) {
			t.Fatalf("version %d changed after later writes", i)
		}
		want := slices.Sorted(maps.Keys(v.objs))
		if !slices.Equal(ids, want) {
			t.Fatalf("version %d: ids %v, model %v", i, ids, want)
		}
		for id, o := range v.objs {
			if got := v.root.get(id); got != o {
				t.Fatalf("version %d: get %s = %v, want %v", i, id, got, o)
			}
		}
		if v.root.get("leases/ns9/x") != nil {
			t.Fatalf("version %d: found an absent id", i)
		}
		// ascend from every id and from between ids, stopping early too.
		for _, from := range append(slices.Clone(want), "", "leases/ns1/", "leases/ns1/n-5", "zzz") {
			var got []string
			v.root.ascend(from, func(o *Object) bool { got = append(got, o.ID()); return len(got) < 7 })
			at, _ := slices.BinarySearch(want, from)
			exp := want[at:min(len(want), at+7)]
			if !slices.Equal(got, exp) {
				t.Fatalf("version %d: ascend from %q = %v, want %v", i, from, got, exp)
			}
		}
	}
}

func TestNewTree(t *testing.T) {
	var objs []*Object
	for i := range 1000 {
		objs = append(objs, obj(key("ns", fmt.Sprintf("n-%04d", i)), 0, ""))
	}
	if ids := checkTree(t, newTree(objs)); len(ids) != 1000 {
		t.Fatalf("sorted: %d objects", len(ids))
	}
	// Out of order, with a duplicate: the later one stays.
	dup := obj(objs[3].Key(), 9, "")
	mixed := append([]*Object{objs[5], objs[3], objs[4]}, dup)
	root := newTree(mixed)
	if ids := checkTree(t, root); len(ids) != 3 || root.get(dup.ID()) != dup {
		t.Fatalf("unsorted: %v", ids)
	}
}
