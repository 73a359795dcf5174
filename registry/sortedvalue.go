package registry

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// sortedTypeConverter hands the field manager objects whose maps of more
// than smallMap keys it walks in key order. structured-merge-diff walks a
// map in Go's map order and inserts each field it finds into a set kept as
// a sorted slice: in random order that is a quadratic number of moves, so
// one Lease of many labels (kube-apiserver's field manager is the same
// library) would hold a CPU for many seconds before the write is even
// refused as too large. In key order each insert is an append, and the
// walk is linear after the sort. What the field manager computes is the
// same in any order: its sets are sorted, the objects rebuilt
// (TestSortedTypeConverterChangesNothing holds the two side by side).
type sortedTypeConverter struct {
	managedfields.TypeConverter
}

func (c sortedTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
	if err != nil {
		return nil, err
	}
	return typed.AsTypedUnvalidated(sorted(tv.AsValue()), tv.Schema(), tv.TypeRef()), nil
}

// sorted is v with its maps, and those within, walked in key order.
func sorted(v value.Value) value.Value {
	if v == nil {
		return nil
	}
	if s, ok := v.(sortedValue); ok {
		return s
	}
	return sortedValue{v}
}

type sortedValue struct{ value.Value }

func (v sortedValue) AsMap() value.Map                       { return sortedMap{v.Value.AsMap()} }
func (v sortedValue) AsMapUsing(a value.Allocator) value.Map { return sortedMap{v.Value.AsMapUsing(a)} }
func (v sortedValue) AsList() value.List                     { return sortedList{v.Value.AsList()} }
func (v sortedValue) AsListUsing(a value.Allocator) value.List {
	return sortedList{v.Value.AsListUsing(a)}
}

type sortedMap struct{ value.Map }

// smallMap is the size up to which a map is walked in the library's own
// order: sorting would cost more than the inserts it saves.
const smallMap = 32

// unwrapMap is m without the wrapper, for the library's own comparisons.
func unwrapMap(m value.Map) value.Map {
	if s, ok := m.(sortedMap); ok {
		return s.Map
	}
	return m
}

func (m sortedMap) Get(key string) (value.Value, bool) {
	v, ok := m.Map.Get(key)
	return sorted(v), ok
}

func (m sortedMap) GetUsing(a value.Allocator, key string) (value.Value, bool) {
	v, ok := m.Map.GetUsing(a, key)
	return sorted(v), ok
}

func (m sortedMap) Set(key string, v value.Value) {
	if s, ok := v.(sortedValue); ok {
		v = s.Value
	}
	m.Map.Set(key, v)
}

func (m sortedMap) Equals(other value.Map) bool { return m.Map.Equals(unwrapMap(other)) }

func (m sortedMap) EqualsUsing(a value.Allocator, other value.Map) bool {
	return m.Map.EqualsUsing(a, unwrapMap(other))
}

// keys is m's keys in order.
func (m sortedMap) keys(a value.Allocator) []string {
	keys := make([]string, 0, m.Map.Length())
	m.Map.IterateUsing(a, func(k string, _ value.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.Sort(keys)
	return keys
}

func (m sortedMap) Iterate(fn func(string, value.Value) bool) bool {
	return m.IterateUsing(value.HeapAllocator, fn)
}

func (m sortedMap) IterateUsing(a value.Allocator, fn func(string, value.Value) bool) bool {
	if m.Map.Length() <= smallMap {
		return m.Map.IterateUsing(a, func(k string, v value.Value) bool { return fn(k, sorted(v)) })
	}
	for _, k := range m.keys(a) {
		v, _ := m.Map.GetUsing(a, k)
		ok := fn(k, sorted(v))
		a.Free(v)
		if !ok {
			return false
		}
	}
	return true
}

func (m sortedMap) Zip(other value.Map, order value.MapTraverseOrder, fn func(string, value.Value, value.Value) bool) bool {
	return m.ZipUsing(value.HeapAllocator, other, order, fn)
}

// ZipUsing walks the keys of both maps in order, whatever order is asked:
// any order is allowed where Unordered is.
func (m sortedMap) ZipUsing(a value.Allocator, other value.Map, order value.MapTraverseOrder, fn func(string, value.Value, value.Value) bool) bool {
	if other != nil {
		other = unwrapMap(other)
	}
	if m.Map.Length() <= smallMap && (other == nil || other.Length() <= smallMap) {
		return m.Map.ZipUsing(a, other, order, func(k string, l, r value.Value) bool { return fn(k, sorted(l), sorted(r)) })
	}
	keys := m.keys(a)
	if other != nil {
		other.IterateUsing(a, func(k string, _ value.Value) bool {
			if !m.Map.Has(k) {
				keys = append(keys, k)
			}
			return true
		})
		slices.Sort(keys)
	}
	for _, k := range keys {
		l, _ := m.Map.GetUsing(a, k)
		var r value.Value
		if other != nil {
			r, _ = other.GetUsing(a, k)
		}
		ok := fn(k, sorted(l), sorted(r))
		if l != nil {
			a.Free(l)
		}
		if r != nil {
			a.Free(r)
		}
		if !ok {
			return false
		}
	}
	return true
}

type sortedList struct{ value.List }

func unwrapList(l value.List) value.List {
	if s, ok := l.(sortedList); ok {
		return s.List
	}
	return l
}

func (l sortedList) At(i int) value.Value { return sorted(l.List.At(i)) }
func (l sortedList) AtUsing(a value.Allocator, i int) value.Value {
	return sorted(l.List.AtUsing(a, i))
}
func (l sortedList) Range() value.ListRange { return sortedRange{l.List.Range()} }
func (l sortedList) RangeUsing(a value.Allocator) value.ListRange {
	return sortedRange{l.List.RangeUsing(a)}
}
func (l sortedList) Equals(other value.List) bool { return l.List.Equals(unwrapList(other)) }
func (l sortedList) EqualsUsing(a value.Allocator, other value.List) bool {
	return l.List.EqualsUsing(a, unwrapList(other))
}

type sortedRange struct{ value.ListRange }

func (r sortedRange) Item() (int, value.Value) {
	i, v := r.ListRange.Item()
	return i, sorted(v)
}
