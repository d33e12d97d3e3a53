package sqlite

import "k8s.io/utils/lru"

// cache is k8s.io/utils/lru's Cache with typed keys and values, safe for
// concurrent use. A capacity of 0 caches nothing (lru.New(0) would keep
// everything).
type cache[K comparable, V any] struct {
	lru *lru.Cache // nil when the capacity is 0
}

func newCache[K comparable, V any](capacity int) cache[K, V] {
	if capacity <= 0 {
		return cache[K, V]{}
	}
	return cache[K, V]{lru: lru.New(capacity)}
}

func (c cache[K, V]) get(k K) (V, bool) {
	if c.lru != nil {
		if v, ok := c.lru.Get(k); ok {
			return v.(V), true
		}
	}
	var zero V
	return zero, false
}

func (c cache[K, V]) put(k K, v V) {
	if c.lru != nil {
		c.lru.Add(k, v)
	}
}

func (c cache[K, V]) clear() {
	if c.lru != nil {
		c.lru.Clear()
	}
}

// len returns the number of values cached.
func (c cache[K, V]) len() int {
	if c.lru == nil {
		return 0
	}
	return c.lru.Len()
}
