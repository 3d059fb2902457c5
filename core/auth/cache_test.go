package auth

import (
	"strconv"
	"sync"
	"testing"
)

func TestResultCacheBounded(t *testing.T) {
	var c resultCache[string]
	for i := range 10 * resultCacheMax {
		c.put(strconv.Itoa(i), i%2 == 0)
		if n := c.len(); n > resultCacheMax {
			t.Fatalf("after %d inserts the cache holds %d entries, bound %d", i+1, n, resultCacheMax)
		}
	}
	// Every entry still present holds the value that was put.
	kept := 0
	for i := range 10 * resultCacheMax {
		if v, ok := c.get(strconv.Itoa(i)); ok {
			kept++
			if v != (i%2 == 0) {
				t.Fatalf("entry %d = %v", i, v)
			}
		}
	}
	if kept != c.len() || kept == 0 {
		t.Fatalf("counted %d entries, len() = %d", kept, c.len())
	}
}

func TestResultCacheRepeatedPutCountsOnce(t *testing.T) {
	var c resultCache[string]
	for range 10 {
		c.put("a", true)
	}
	if c.len() != 1 {
		t.Fatalf("len() = %d, want 1", c.len())
	}
}

func TestResultCacheConcurrent(t *testing.T) {
	var c resultCache[deliverKey]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 4 * resultCacheMax {
				k := deliverKey{strconv.Itoa(i), strconv.Itoa(g)}
				c.put(k, true)
				if v, ok := c.get(k); ok && !v {
					t.Errorf("wrong value for %v", k)
					return
				}
			}
		})
	}
	wg.Wait()
	// Inserts may overshoot while a prune runs, but not once they stop.
	if n := c.len(); n > resultCacheMax {
		t.Fatalf("cache holds %d entries, bound %d", n, resultCacheMax)
	}
}
