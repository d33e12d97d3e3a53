package sqlite

import (
	"container/list"
	"sync"
)

// lru is a small least-recently-used cache; not safe for concurrent use.
type lru[K comparable, V any] struct {
	capacity int
	order    *list.List // front = most recent; values are *lruEntry
	items    map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key   K
	value V
}

func newLRU[K comparable, V any](capacity int) *lru[K, V] {
	return &lru[K, V]{capacity: capacity, order: list.New(), items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	if e, ok := c.items[k]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*lruEntry[K, V]).value, true
	}
	var zero V
	return zero, false
}

func (c *lru[K, V]) put(k K, v V) {
	if c.capacity <= 0 {
		return
	}
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry[K, V]).value = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, value: v})
	for c.order.Len() > c.capacity {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry[K, V]).key)
	}
}

func (c *lru[K, V]) clear() {
	c.order.Init()
	clear(c.items)
}

// syncLRU is an lru guarded by a mutex, for the read path.
type syncLRU[K comparable, V any] struct {
	mu  sync.Mutex
	lru *lru[K, V]
}

func (c *syncLRU[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.get(k)
}

func (c *syncLRU[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.put(k, v)
}

func (c *syncLRU[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.clear()
}
