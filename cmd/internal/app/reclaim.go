package app

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// Idle reclaim: after a burst (a storm of device reconnections, a
// backlog drained) the Go runtime keeps the heap it grew, free but still
// resident, for the next burst; its background scavenger returns only
// what lies above the next collection's goal. On a board with little RAM
// that headroom is better returned at once once the burst is over. Every
// reclaimInterval the shedder's goroutine looks at the free resident
// heap; when it is at least reclaimMinFree and the process allocated
// less than an eighth of it since the last look (quiet: the memory would
// not be reused soon), it collects and returns every free page
// (debug.FreeOSMemory). Each reclaim needs reclaimMinFree freed since
// the last, so a busy broker never reclaims and a quiet one seldom does.
const (
	reclaimInterval = 5 * time.Second
	reclaimMinFree  = 1 << 20
)

// reclaimer decides idle reclaims; only the shedder's goroutine uses it.
type reclaimer struct {
	samples []metrics.Sample
	allocs  uint64 // cumulative heap allocation at the last look
	next    time.Time
	count   atomic.Uint64 // reclaims done
	freed   atomic.Uint64 // bytes returned by them
}

func newReclaimer() *reclaimer {
	return &reclaimer{samples: []metrics.Sample{
		{Name: "/memory/classes/heap/free:bytes"}, // free, resident
		{Name: "/gc/heap/allocs:bytes"},
	}}
}

// look reclaims when the free resident heap is large and the process
// quiet, at most every reclaimInterval; it reports whether it did.
func (r *reclaimer) look(now time.Time) bool {
	if now.Before(r.next) {
		return false
	}
	r.next = now.Add(reclaimInterval)
	metrics.Read(r.samples)
	free, allocs := r.samples[0].Value.Uint64(), r.samples[1].Value.Uint64()
	recent := allocs - r.allocs
	r.allocs = allocs
	if free < reclaimMinFree || recent >= free/8 {
		return false
	}
	debug.FreeOSMemory()
	r.count.Add(1)
	r.freed.Add(free)
	return true
}
