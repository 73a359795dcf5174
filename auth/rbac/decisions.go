package rbac

import (
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
	m  map[decisionKey]decision
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

// decisionKey is everything RuleAllows and the subject match read.
type decisionKey struct {
	user, groups                         string
	resource                             bool
	verb, namespace, apiGroup, resources string
	subresource, name, path              string
}

type decision struct {
	d      authorizer.Decision
	reason string
}

func keyOf(a authorizer.Attributes) (decisionKey, bool) {
	u := a.GetUser()
	if u == nil {
		return decisionKey{}, false
	}
	k := decisionKey{
		user:      u.GetName(),
		groups:    strings.Join(u.GetGroups(), "\n"), // a group name has no newline
		resource:  a.IsResourceRequest(),
		verb:      a.GetVerb(),
		namespace: a.GetNamespace(), // whose RoleBindings are visited
	}
	if k.resource {
		k.apiGroup, k.resources = a.GetAPIGroup(), a.GetResource()
		k.subresource, k.name = a.GetSubresource(), a.GetName()
	} else {
		k.path = a.GetPath()
	}
	return k, true
}

func (c *Decisions) get(k decisionKey) (decision, bool) {
	c.mu.RLock()
	d, ok := c.m[k]
	c.mu.RUnlock()
	return d, ok
}

func (c *Decisions) put(k decisionKey, d decision) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxDecisions {
		c.m = make(map[decisionKey]decision)
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
