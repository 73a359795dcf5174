package httpapi

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decodeLeaseJSON decodes the JSON Lease a client sends to renew it —
// the fields client-go writes, plain strings, integers, timestamps — into
// l, a new Lease (kind and version may be set), in a single pass without reflection: the serializer's
// strict decoder, with its reflection, is a large part of what a JSON
// renewal costs a node (BenchmarkDecodeLeaseJSON compares the two).
// Anything else (an unknown or repeated field, an escape in a string, a
// number that is not a plain integer, ownerReferences, invalid JSON)
// reports false and leaves l partly set: the caller then decodes the body
// with the serializer, for its own result, errors and warnings. Where it
// reports true, the result is the strict decoder's (FuzzLeaseJSON holds
// the two side by side).
func decodeLeaseJSON(body []byte, l *coordinationv1.Lease) bool {
	d := &leaseDecoder{data: body}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return str(d, &l.Kind)
		case "apiVersion":
			return str(d, &l.APIVersion)
		case "metadata":
			return d.objectMeta(&l.ObjectMeta)
		case "spec":
			return d.leaseSpec(&l.Spec)
		}
		return false
	})
	d.space()
	return ok && d.pos == len(d.data)
}

// leaseDecoder reads JSON from data at pos.
type leaseDecoder struct {
	data []byte
	pos  int
}

func (d *leaseDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c, taking it.
func (d *leaseDecoder) next(c byte) bool {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// null takes a null, which leaves a field of a new object as it is.
func (d *leaseDecoder) null() bool {
	d.space()
	if len(d.data)-d.pos >= 4 && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

// object reads an object, calling field for each key with the reader at
// its value; a repeated key is refused.
func (d *leaseDecoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen keySet
	for {
		key, ok := d.rawBytes()
		if !ok || !d.next(':') {
			return false
		}
		if !seen.add(key) {
			return false
		}
		if !field(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// keySet is the keys of one object seen so far. The few keys of a Lease's
// own fields are compared one by one, without allocating; past
// len(small) keys (labels, annotations) they go into a map, so that
// refusing a repeat stays linear in the object's size.
type keySet struct {
	small [16][]byte
	n     int
	large map[string]struct{}
}

// add reports whether key is new, adding it.
func (s *keySet) add(key []byte) bool {
	if s.large != nil {
		if _, dup := s.large[string(key)]; dup {
			return false
		}
		s.large[string(key)] = struct{}{}
		return true
	}
	for _, k := range s.small[:s.n] {
		if string(k) == string(key) {
			return false
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = key
		s.n++
		return true
	}
	s.large = make(map[string]struct{}, 4*len(s.small))
	for _, k := range s.small {
		s.large[string(k)] = struct{}{}
	}
	s.large[string(key)] = struct{}{}
	return true
}

// rawString reads a string without escapes and of valid UTF-8, whose
// value is then its bytes.
func (d *leaseDecoder) rawString() (string, bool) {
	b, ok := d.rawBytes()
	return string(b), ok
}

// rawBytes is rawString's bytes, in data.
func (d *leaseDecoder) rawBytes() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.pos
	ascii := true
	for ; d.pos < len(d.data); d.pos++ {
		switch c := d.data[d.pos]; {
		case c == '"':
			s := d.data[start:d.pos]
			d.pos++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// str reads a string field of any string type (a name, a UID, an
// operation).
func str[T ~string](d *leaseDecoder, into *T) bool {
	if d.null() {
		return true
	}
	s, ok := d.rawString()
	*into = T(s)
	return ok
}

func strPtr[T ~string](d *leaseDecoder, into **T) bool {
	if d.null() {
		return true
	}
	s, ok := d.rawString()
	v := T(s)
	*into = &v
	return ok
}

// integer reads an integer in [lo, hi] as JSON writes it: an optional
// minus, no leading zero, no fraction or exponent.
func (d *leaseDecoder) integer(lo, hi int64) (int64, bool) {
	d.space()
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == digits || (d.data[digits] == '0' && d.pos > digits+1) {
		return 0, false
	}
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(d.data[start:d.pos]), 10, 64)
	return n, err == nil && n >= lo && n <= hi
}

func (d *leaseDecoder) int32Ptr(into **int32) bool {
	if d.null() {
		return true
	}
	n, ok := d.integer(math.MinInt32, math.MaxInt32)
	v := int32(n)
	*into = &v
	return ok
}

func (d *leaseDecoder) int64(into *int64) bool {
	if d.null() {
		return true
	}
	n, ok := d.integer(math.MinInt64, math.MaxInt64)
	*into = n
	return ok
}

func (d *leaseDecoder) int64Ptr(into **int64) bool {
	if d.null() {
		return true
	}
	n, ok := d.integer(math.MinInt64, math.MaxInt64)
	*into = &n
	return ok
}

// timestamp reads a metav1.Time (layout time.RFC3339) or a MicroTime
// (metav1.RFC3339Micro) as their UnmarshalJSON do: parsed, then local.
func (d *leaseDecoder) timestamp(layout string) (time.Time, bool) {
	s, ok := d.rawString()
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.Local(), true
}

func (d *leaseDecoder) time(into *metav1.Time) bool {
	if d.null() {
		return true
	}
	t, ok := d.timestamp(time.RFC3339)
	into.Time = t
	return ok
}

func (d *leaseDecoder) timePtr(into **metav1.Time) bool {
	if d.null() {
		return true
	}
	t, ok := d.timestamp(time.RFC3339)
	*into = &metav1.Time{Time: t}
	return ok
}

func (d *leaseDecoder) microTimePtr(into **metav1.MicroTime) bool {
	if d.null() {
		return true
	}
	t, ok := d.timestamp(metav1.RFC3339Micro)
	*into = &metav1.MicroTime{Time: t}
	return ok
}

func (d *leaseDecoder) stringMap(into *map[string]string) bool {
	if d.null() {
		return true
	}
	m := map[string]string{}
	*into = m
	return d.object(func(key []byte) bool {
		var v string
		if !str(d, &v) {
			return false
		}
		m[string(key)] = v
		return true
	})
}

func (d *leaseDecoder) stringList(into *[]string) bool {
	if d.null() {
		return true
	}
	list := []string{}
	ok := d.array(func() bool {
		var s string
		if !str(d, &s) {
			return false
		}
		list = append(list, s)
		return true
	})
	*into = list
	return ok
}

// array reads an array, calling elem with the reader at each element.
func (d *leaseDecoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *leaseDecoder) objectMeta(m *metav1.ObjectMeta) bool {
	if d.null() {
		return true
	}
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return str(d, &m.Name)
		case "generateName":
			return str(d, &m.GenerateName)
		case "namespace":
			return str(d, &m.Namespace)
		case "selfLink":
			return str(d, &m.SelfLink)
		case "uid":
			return str(d, &m.UID)
		case "resourceVersion":
			return str(d, &m.ResourceVersion)
		case "generation":
			return d.int64(&m.Generation)
		case "creationTimestamp":
			return d.time(&m.CreationTimestamp)
		case "deletionTimestamp":
			return d.timePtr(&m.DeletionTimestamp)
		case "deletionGracePeriodSeconds":
			return d.int64Ptr(&m.DeletionGracePeriodSeconds)
		case "labels":
			return d.stringMap(&m.Labels)
		case "annotations":
			return d.stringMap(&m.Annotations)
		case "finalizers":
			return d.stringList(&m.Finalizers)
		case "managedFields":
			if d.null() {
				return true
			}
			m.ManagedFields = []metav1.ManagedFieldsEntry{}
			return d.array(func() bool {
				var e metav1.ManagedFieldsEntry
				if !d.managedFieldsEntry(&e) {
					return false
				}
				m.ManagedFields = append(m.ManagedFields, e)
				return true
			})
		}
		return false
	})
}

func (d *leaseDecoder) managedFieldsEntry(e *metav1.ManagedFieldsEntry) bool {
	if d.null() {
		return true
	}
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "manager":
			return str(d, &e.Manager)
		case "operation":
			return str(d, &e.Operation)
		case "apiVersion":
			return str(d, &e.APIVersion)
		case "time":
			return d.timePtr(&e.Time)
		case "fieldsType":
			return str(d, &e.FieldsType)
		case "fieldsV1":
			if d.null() {
				return true
			}
			d.space()
			start := d.pos
			if !d.skipValue(0) {
				return false
			}
			// FieldsV1.UnmarshalJSON keeps the value's bytes as they are.
			e.FieldsV1 = &metav1.FieldsV1{}
			e.FieldsV1.SetRawBytes(d.data[start:d.pos])
			return true
		case "subresource":
			return str(d, &e.Subresource)
		}
		return false
	})
}

func (d *leaseDecoder) leaseSpec(s *coordinationv1.LeaseSpec) bool {
	if d.null() {
		return true
	}
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "holderIdentity":
			return strPtr(d, &s.HolderIdentity)
		case "leaseDurationSeconds":
			return d.int32Ptr(&s.LeaseDurationSeconds)
		case "acquireTime":
			return d.microTimePtr(&s.AcquireTime)
		case "renewTime":
			return d.microTimePtr(&s.RenewTime)
		case "leaseTransitions":
			return d.int32Ptr(&s.LeaseTransitions)
		case "strategy":
			return strPtr(d, &s.Strategy)
		case "preferredHolder":
			return strPtr(d, &s.PreferredHolder)
		}
		return false
	})
}

// maxSkipDepth bounds the nesting skipValue follows (a managed fields
// set nests as deep as the object's fields).
const maxSkipDepth = 64

// skipValue reads any JSON value as the grammar has it (RFC 8259),
// strings with their escapes, objects with any keys, repeats included.
func (d *leaseDecoder) skipValue(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	d.space()
	if d.pos >= len(d.data) {
		return false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		if d.next('}') {
			return true
		}
		for {
			d.space()
			if !d.skipString() || !d.next(':') || !d.skipValue(depth+1) {
				return false
			}
			if d.next('}') {
				return true
			}
			if !d.next(',') {
				return false
			}
		}
	case c == '[':
		d.pos++
		if d.next(']') {
			return true
		}
		for {
			if !d.skipValue(depth + 1) {
				return false
			}
			if d.next(']') {
				return true
			}
			if !d.next(',') {
				return false
			}
		}
	case c == '"':
		return d.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.skipNumber()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
			d.pos += len(lit)
			return true
		}
	}
	return false
}

// skipString reads a string at pos, escapes and all; invalid UTF-8 is
// refused (the decoder would replace it, changing the bytes kept).
func (d *leaseDecoder) skipString() bool {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return false
	}
	d.pos++
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return utf8.Valid(d.data[start : d.pos-1])
		case c < 0x20:
			return false
		case c == '\\':
			d.pos++
			if d.pos >= len(d.data) {
				return false
			}
			switch d.data[d.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.pos++
			case 'u':
				if len(d.data)-d.pos < 5 {
					return false
				}
				for _, h := range d.data[d.pos+1 : d.pos+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				d.pos += 5
			default:
				return false
			}
		default:
			d.pos++
		}
	}
	return false
}

// skipNumber reads a number at pos: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (d *leaseDecoder) skipNumber() bool {
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	if d.pos < len(d.data) && d.data[d.pos] == '0' {
		d.pos++
	} else if digits() == 0 {
		return false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}
