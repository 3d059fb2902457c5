package app

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// heapFree returns the free resident heap and the heap returned to the
// kernel, in bytes.
func heapFree() (free, released uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

var reclaimSink [][]byte

// burst allocates n bytes in 64 KiB pieces and lets them go.
func burst(n int) {
	for i := 0; i < n>>16; i++ {
		reclaimSink = append(reclaimSink, make([]byte, 64<<10))
	}
	reclaimSink = nil
	runtime.GC()
}

// After a burst the free heap stays resident; the reclaimer returns it
// once a look finds the process quiet, and not while it allocates.
func TestReclaimerReturnsTheHeapOnceQuiet(t *testing.T) {
	r := newReclaimer()
	now := time.Now()
	r.look(now) // the first look only learns the allocation so far
	now = now.Add(reclaimInterval)

	// Busy: a burst between two looks is recent allocation.
	burst(64 << 20)
	if free, _ := heapFree(); free < reclaimMinFree {
		t.Fatalf("after a 64 MiB burst the free resident heap is %d B, want at least %d", free, reclaimMinFree)
	}
	if r.look(now) {
		t.Fatal("reclaimed right after a burst: the process was not quiet")
	}
	if r.look(now.Add(reclaimInterval / 2)) {
		t.Fatal("looked again before reclaimInterval")
	}

	// Quiet: nothing allocated since; the next look reclaims.
	now = now.Add(reclaimInterval)
	free, released := heapFree()
	if free < reclaimMinFree {
		t.Fatalf("the runtime returned the free heap by itself before the look (%d B left)", free)
	}
	if !r.look(now) {
		t.Fatalf("a quiet look with %d B of free heap did not reclaim", free)
	}
	after, releasedAfter := heapFree()
	t.Logf("free resident heap %d -> %d B; returned %d B", free, after, releasedAfter-released)
	if after >= free/2 || releasedAfter-released < free/2 {
		t.Fatalf("after the reclaim the free resident heap is %d B (was %d), %d B returned", after, free, releasedAfter-released)
	}
	if r.count.Load() != 1 || r.freed.Load() != free {
		t.Fatalf("reclaims %d, freed %d; want 1 and %d", r.count.Load(), r.freed.Load(), free)
	}
	// Nothing freed since: the next look has nothing to do.
	if r.look(now.Add(reclaimInterval)) {
		t.Fatal("reclaimed again with nothing freed since")
	}
}
