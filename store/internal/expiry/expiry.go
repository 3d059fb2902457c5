// Package expiry is the expiry timer and min-heap of per-message expiry
// times that the memory and file engines share.
package expiry

import (
	"math"
	"time"
)

// Item is one pending per-message expiry: sequence Seq expires at At (Unix
// nanoseconds).
type Item struct {
	At  int64
	Seq uint64
}

// Heap is a binary min-heap of Items ordered by At. The zero value is an
// empty heap.
type Heap []Item

// Push adds it.
func (h *Heap) Push(it Item) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

// Pop removes and returns the earliest item; the heap must not be empty.
func (h *Heap) Pop() Item {
	old := *h
	it := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	return it
}

// Init restores the heap order after the slice was filled directly.
func (h Heap) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h Heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].At <= h[i].At {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (h Heap) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1].At < h[c].At {
			c++
		}
		if h[i].At <= h[c].At {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// Resolution is the shortest delay a Timer is armed for, so a busy stream
// with MaxAge wakes at most about 100 times a second. A message may
// outlive its MaxAge or TTL by this much plus scheduling delay.
const Resolution = 10 * time.Millisecond

// Timer drives a stream's MaxAge and per-message TTL expiry from one
// time.Timer. It is guarded by its stream's mutex; Fire, set once before
// first use, runs on the timer's goroutine and must take that mutex and
// call Fired.
type Timer struct {
	// Fire is the stream's expiry callback.
	Fire func()
	// TTLs orders per-message expiries. Items whose message went early
	// stay until they surface or are pruned.
	TTLs Heap
	// Live counts live messages with a pending TTL.
	Live int

	timer *time.Timer
	at    int64 // when the armed timer fires (Unix ns), 0 when idle
}

// AddTTL records that message seq expires at the Unix ns time at and arms
// the timer. When stale items pile up, it keeps only those alive reports.
func (x *Timer) AddTTL(seq uint64, at int64, alive func(seq uint64) bool) {
	x.Live++
	x.TTLs.Push(Item{At: at, Seq: seq})
	if len(x.TTLs) > 2*x.Live+64 {
		kept := x.TTLs[:0]
		for _, it := range x.TTLs {
			if alive(it.Seq) {
				kept = append(kept, it)
			}
		}
		clear(x.TTLs[len(kept):])
		x.TTLs = kept
		x.TTLs.Init()
	}
	x.Arm(at)
}

// Arm makes sure the timer fires no later than the Unix ns time at.
func (x *Timer) Arm(at int64) {
	if x.at != 0 && x.at <= at {
		return
	}
	d := max(time.Duration(at-time.Now().UnixNano()), Resolution)
	x.at = at
	if x.timer == nil {
		x.timer = time.AfterFunc(d, x.Fire)
	} else {
		x.timer.Reset(d)
	}
}

// ArmNext arms the timer for the earlier of ageNext (math.MaxInt64 for
// none) and the earliest pending TTL, or stops it when there is neither.
func (x *Timer) ArmNext(ageNext int64) {
	if len(x.TTLs) > 0 {
		ageNext = min(ageNext, x.TTLs[0].At)
	}
	if ageNext == math.MaxInt64 {
		x.Stop()
		return
	}
	x.Arm(ageNext)
}

// Fired records that the timer went off; Fire calls it under the lock.
func (x *Timer) Fired() { x.at = 0 }

// Stop disarms the timer.
func (x *Timer) Stop() {
	if x.timer != nil {
		x.timer.Stop()
	}
	x.at = 0
}

// ClearTTLs forgets every pending TTL, after the stream was emptied.
func (x *Timer) ClearTTLs() {
	clear(x.TTLs)
	x.TTLs = x.TTLs[:0]
	x.Live = 0
}

// Due returns when the armed timer fires (Unix ns), 0 when it is idle.
func (x *Timer) Due() int64 { return x.at }
