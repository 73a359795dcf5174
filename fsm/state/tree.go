package state

import "strings"

// node is a node of an immutable AVL tree of objects ordered by id. A
// change never edits a node: it copies the path from the root to the change
// and returns the new root, so a read view is one root pointer, costs O(1)
// to take and never sees later writes. A node costs 32 bytes per object
// (a radix tree such as go-memdb's costs ~400).
type node struct {
	obj         *Object
	left, right *node
	height      int32
}

func (n *node) h() int32 {
	if n == nil {
		return 0
	}
	return n.height
}

func newNode(obj *Object, left, right *node) *node {
	return &node{obj: obj, left: left, right: right, height: max(left.h(), right.h()) + 1}
}

// balanced is newNode after a change of one side's height by at most one,
// rotated back to AVL balance.
func balanced(obj *Object, left, right *node) *node {
	switch d := left.h() - right.h(); {
	case d > 1:
		if left.right.h() > left.left.h() {
			lr := left.right
			left = newNode(lr.obj, newNode(left.obj, left.left, lr.left), lr.right)
		}
		return newNode(left.obj, left.left, newNode(obj, left.right, right))
	case d < -1:
		if right.left.h() > right.right.h() {
			rl := right.left
			right = newNode(rl.obj, rl.left, newNode(right.obj, rl.right, right.right))
		}
		return newNode(right.obj, newNode(obj, left, right.left), right.right)
	}
	return newNode(obj, left, right)
}

// compareID compares k's id with id without building k's id.
func compareID(k Key, id string) int {
	i := 0
	for _, part := range [...]string{k.Resource, "/", k.Namespace, "/", k.Name} {
		n := min(len(part), len(id)-i)
		if c := strings.Compare(part[:n], id[i:i+n]); c != 0 {
			return c
		}
		if n < len(part) {
			return 1 // id is a proper prefix of k's id
		}
		i += n
	}
	if i < len(id) {
		return -1
	}
	return 0
}

// get returns the object with the id, or nil.
func (n *node) get(id string) *Object {
	for n != nil {
		switch c := compareID(n.obj.Key, id); {
		case c == 0:
			return n.obj
		case c > 0:
			n = n.left
		default:
			n = n.right
		}
	}
	return nil
}

// insert returns the tree with obj stored under id (obj's id), replacing
// the object there if any.
func (n *node) insert(id string, obj *Object) *node {
	if n == nil {
		return &node{obj: obj, height: 1}
	}
	switch c := compareID(n.obj.Key, id); {
	case c == 0:
		return &node{obj: obj, left: n.left, right: n.right, height: n.height}
	case c > 0:
		return balanced(n.obj, n.left.insert(id, obj), n.right)
	default:
		return balanced(n.obj, n.left, n.right.insert(id, obj))
	}
}

// remove returns the tree without the object under id; found is false,
// and the tree unchanged, when there is none.
func (n *node) remove(id string) (out *node, found bool) {
	if n == nil {
		return nil, false
	}
	switch c := compareID(n.obj.Key, id); {
	case c > 0:
		left, found := n.left.remove(id)
		if !found {
			return n, false
		}
		return balanced(n.obj, left, n.right), true
	case c < 0:
		right, found := n.right.remove(id)
		if !found {
			return n, false
		}
		return balanced(n.obj, n.left, right), true
	}
	if n.left == nil {
		return n.right, true
	}
	if n.right == nil {
		return n.left, true
	}
	first, right := n.right.removeFirst()
	return balanced(first, n.left, right), true
}

// removeFirst returns the tree's first object and the tree without it.
func (n *node) removeFirst() (*Object, *node) {
	if n.left == nil {
		return n.obj, n.right
	}
	first, left := n.left.removeFirst()
	return first, balanced(n.obj, left, n.right)
}

// ascend calls fn for each object whose id is >= from, in id order, until
// fn returns false; it returns false if fn did.
func (n *node) ascend(from string, fn func(*Object) bool) bool {
	for n != nil {
		if from != "" && compareID(n.obj.Key, from) < 0 {
			n = n.right // this object and its left side are before from
			continue
		}
		if !n.left.ascend(from, fn) || !fn(n.obj) {
			return false
		}
		// Everything to the right is after this object, so after from.
		n, from = n.right, ""
	}
	return true
}

// build returns a balanced tree of objs, which are in strictly increasing
// id order.
func build(objs []*Object) *node {
	if len(objs) == 0 {
		return nil
	}
	m := len(objs) / 2
	return newNode(objs[m], build(objs[:m]), build(objs[m+1:]))
}

// newTree returns a tree of objs, a later one replacing an earlier one with
// the same id. Objects in id order, as Dump lists them, are built into a
// balanced tree directly.
func newTree(objs []*Object) *node {
	ids := make([]string, len(objs))
	sorted := true
	for i, o := range objs {
		ids[i] = o.ID()
		if i > 0 && ids[i-1] >= ids[i] {
			sorted = false
		}
	}
	if sorted {
		return build(objs)
	}
	var root *node
	for i, o := range objs {
		root = root.insert(ids[i], o)
	}
	return root
}
