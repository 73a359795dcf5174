package state

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// Encoding slots of Object.Encoding.
const (
	EncodingJSON = iota
	EncodingProtobuf
	EncodingSlots
)

// Encoding returns o.Obj encoded in the format of slot, computing it with enc
// the first time. Concurrent first calls may both encode; the first result
// stored is kept. A stored object keeps its encodings only while they are
// among the store's most recently made (Config.EncodingCacheBytes): the
// cache is for the many watchers of a fresh write and for objects read
// again and again, and one full list of 100,000 objects would otherwise
// leave ~1 KB cached on every one of them.
func (s *Store) Encoding(o *Object, slot int, enc func(runtime.Object) ([]byte, error)) ([]byte, error) {
	if b := o.encodings[slot].Load(); b != nil {
		return *b, nil
	}
	b, err := enc(o.Obj)
	if err != nil {
		return nil, err
	}
	if p := &b; o.encodings[slot].CompareAndSwap(nil, p) {
		s.encodings.add(o, slot, p)
	}
	return b, nil
}

// CachedEncoding is o's encoding in the format of slot if it is cached,
// else nil.
func (s *Store) CachedEncoding(o *Object, slot int) []byte {
	if b := o.encodings[slot].Load(); b != nil {
		return *b
	}
	return nil
}

// encodingCache bounds the bytes of the encodings that stored objects keep:
// past the bound, the oldest encodings made are dropped (first in, first
// out), and the next use encodes again.
type encodingCache struct {
	mu    sync.Mutex
	max   int
	size  int
	queue []cachedEncoding // oldest first, from head
	head  int
}

type cachedEncoding struct {
	o    *Object
	slot int
	b    *[]byte
	size int
}

// cachedOverhead approximates what one cached encoding costs beyond its
// bytes (the slice header, its pointer, the queue entry).
const cachedOverhead = 64

func newEncodingCache(max int) *encodingCache { return &encodingCache{max: max} }

// add records that o now caches b in slot, dropping the oldest encodings
// while the total is over the bound.
func (c *encodingCache) add(o *Object, slot int, b *[]byte) {
	e := cachedEncoding{o: o, slot: slot, b: b, size: cap(*b) + cachedOverhead}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, e)
	c.size += e.size
	for c.size > c.max && c.head < len(c.queue) {
		old := c.queue[c.head]
		c.queue[c.head] = cachedEncoding{}
		c.head++
		c.size -= old.size
		// Only the encoding recorded here: nothing else stores into a
		// slot once it is set.
		old.o.encodings[old.slot].CompareAndSwap(old.b, nil)
	}
	// Reuse the queue's front once half of it is spent.
	if c.head > len(c.queue)/2 {
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
}
