package rbac

import (
	"encoding/binary"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Decisions remembers the RBAC decisions taken against one immutable
// Policy view. A decision depends only on the view, the user's name and
// groups and the request's attributes, so while the view lives its
// decisions stay right; a change of any RBAC object makes a new view with
// an empty Decisions. A component renewing its Lease asks the same
// question every few seconds: answered from here it costs a map lookup,
// not a walk over every binding.
//
// A Policy offers one by implementing CachingPolicy. The zero value is
// ready to use; it is safe for concurrent use.
type Decisions struct {
	mu sync.RWMutex
	m  map[string]decision // by keyOf
}

// CachingPolicy is a Policy that never changes once built and keeps the
// decisions taken against it.
type CachingPolicy interface {
	Policy
	Decisions() *Decisions
}

// maxDecisions bounds a view's cache: past it the cache starts again
// empty, so that a client asking about ever new names cannot grow it
// without end (a renewing fleet's questions fit many times over).
const maxDecisions = 4096

type decision struct {
	d      authorizer.Decision
	reason string
}

// keyOf is everything RuleAllows and the subject match read, in one
// string: each field after its length, so that no two questions share a
// key whatever their fields hold (a group name may hold any character), and
// a lookup hashes and compares one piece of memory.
func keyOf(a authorizer.Attributes) (string, bool) {
	u := a.GetUser()
	if u == nil {
		return "", false
	}
	groups := u.GetGroups()
	fields := [...]string{u.GetName(), a.GetVerb(), a.GetNamespace(), a.GetAPIGroup(), a.GetResource(), a.GetSubresource(), a.GetName(), a.GetPath()}
	if a.IsResourceRequest() {
		fields[7] = "" // the path is not read
	} else {
		fields[3], fields[4], fields[5], fields[6] = "", "", "", ""
	}
	n := 1 + uvarintLen(len(groups))
	for _, f := range fields {
		n += uvarintLen(len(f)) + len(f)
	}
	for _, g := range groups {
		n += uvarintLen(len(g)) + len(g)
	}
	var k strings.Builder
	k.Grow(n)
	var num [binary.MaxVarintLen64]byte
	if a.IsResourceRequest() {
		k.WriteByte('r')
	} else {
		k.WriteByte('n')
	}
	for _, f := range fields {
		k.Write(binary.AppendUvarint(num[:0], uint64(len(f))))
		k.WriteString(f)
	}
	k.Write(binary.AppendUvarint(num[:0], uint64(len(groups))))
	for _, g := range groups {
		k.Write(binary.AppendUvarint(num[:0], uint64(len(g))))
		k.WriteString(g)
	}
	return k.String(), true
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

func (c *Decisions) get(k string) (decision, bool) {
	c.mu.RLock()
	d, ok := c.m[k]
	c.mu.RUnlock()
	return d, ok
}

func (c *Decisions) put(k string, d decision) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxDecisions {
		c.m = make(map[string]decision)
	}
	c.m[k] = d
	c.mu.Unlock()
}

// Len is how many decisions are kept.
func (c *Decisions) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
