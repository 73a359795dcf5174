package state

import "github.com/benbjohnson/immutable"

// node is the objects ordered by id, in an immutable sorted map
// (github.com/benbjohnson/immutable: a B+tree whose changes copy only the
// path to the change). A change returns a new version and never edits an
// old one, so a read view is one pointer, costs O(1) to take and never
// sees later writes; an entry costs a few dozen bytes, where go-memdb's
// radix tree costs about 400. A nil *node is the empty map.
type node struct {
	m *immutable.SortedMap[string, *Object]
}

func (n *node) objects() *immutable.SortedMap[string, *Object] {
	if n == nil {
		return immutable.NewSortedMap[string, *Object](nil)
	}
	return n.m
}

// get returns the object with the id, or nil.
func (n *node) get(id string) *Object {
	if n == nil {
		return nil
	}
	o, _ := n.m.Get(id)
	return o
}

// insert returns the map with obj stored under id (obj's id), replacing
// the object there if any.
func (n *node) insert(id string, obj *Object) *node {
	return &node{n.objects().Set(id, obj)}
}

// remove returns the map without the object under id; found is false, and
// the map unchanged, when there is none.
func (n *node) remove(id string) (out *node, found bool) {
	if n.get(id) == nil {
		return n, false
	}
	return &node{n.m.Delete(id)}, true
}

// ascend calls fn for each object whose id is >= from, in id order, until
// fn returns false; it returns false if fn did.
func (n *node) ascend(from string, fn func(*Object) bool) bool {
	if n == nil {
		return true
	}
	it := n.m.Iterator()
	if from != "" {
		it.Seek(from)
	}
	for !it.Done() {
		if _, o, ok := it.Next(); ok && !fn(o) {
			return false
		}
	}
	return true
}

// newTree returns a map of objs, a later one replacing an earlier one with
// the same id.
func newTree(objs []*Object) *node {
	b := immutable.NewSortedMapBuilder[string, *Object](nil)
	for _, o := range objs {
		b.Set(o.ID(), o)
	}
	return &node{b.Map()}
}
