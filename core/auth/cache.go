package auth

import (
	"sync"
	"sync/atomic"
)

// resultCacheMax bounds the entries of one result cache. nats-server keeps
// 128 publish and 256 delivery results per connection (client.go
// maxPermCacheSize, maxDenyPermCacheSize); ours are shared by all
// connections of a user, so they are larger, like its sublist cache
// (sublist.go slCacheMax).
const resultCacheMax = 1024

// resultCachePrune is how many entries a full cache drops at once.
const resultCachePrune = resultCacheMax / 4

// resultCache is a bounded, concurrency-safe cache of permission results.
// Lookups take no lock and allocate nothing. When an insert takes it past
// resultCacheMax entries, one inserter drops arbitrary entries until at
// most resultCacheMax-resultCachePrune remain. The zero value is ready to
// use.
//
// sync.Map suits it: entries are written once and read many times by
// connections on different goroutines.
type resultCache[K comparable] struct {
	entries sync.Map // K → bool
	size    atomic.Int64
	pruning atomic.Bool
}

// get returns the cached result for key, and whether there was one.
func (c *resultCache[K]) get(key K) (result, ok bool) {
	v, ok := c.entries.Load(key)
	if !ok {
		return false, false
	}
	return v.(bool), true
}

// put caches result for key. The caller must not pass a key that refers to
// memory it will reuse.
func (c *resultCache[K]) put(key K, result bool) {
	if _, loaded := c.entries.LoadOrStore(key, result); loaded {
		return
	}
	if c.size.Add(1) > resultCacheMax {
		c.prune()
	}
}

// prune drops entries until the cache is well below its bound. One
// goroutine prunes at a time; inserts that find a prune running leave the
// work to it, and it checks the size again after releasing the flag, so
// the bound holds once inserts stop.
func (c *resultCache[K]) prune() {
	for c.size.Load() > resultCacheMax && c.pruning.CompareAndSwap(false, true) {
		c.entries.Range(func(k, _ any) bool {
			if _, loaded := c.entries.LoadAndDelete(k); loaded {
				c.size.Add(-1)
			}
			return c.size.Load() > resultCacheMax-resultCachePrune
		})
		c.pruning.Store(false)
	}
}

// len returns the number of cached entries.
func (c *resultCache[K]) len() int { return int(c.size.Load()) }
