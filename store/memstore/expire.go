package memstore

import (
	"math"
	"time"
)

// expiryResolution is the shortest delay the expiry timer is armed for, so
// a busy stream with MaxAge wakes at most about 100 times a second. A
// message may outlive its MaxAge or TTL by this much plus scheduling delay.
const expiryResolution = 10 * time.Millisecond

// expiryState drives MaxAge and per-message TTL expiry from one timer. It
// belongs to its Stream and is guarded by the Stream's mutex.
type expiryState struct {
	timer *time.Timer
	// at is when the armed timer fires (Unix ns), 0 when it is idle.
	at int64
	// ttls orders per-message expiries. Entries whose message was removed
	// early stay until they surface or the heap is pruned.
	ttls expiryHeap
	// ttlLive counts live messages with a pending TTL.
	ttlLive int
}

// addTTL records that message seq expires at the Unix ns time at.
func (x *expiryState) addTTL(s *Stream, seq uint64, at int64) {
	x.ttlLive++
	x.ttls.push(expiryItem{at: at, seq: seq})
	if len(x.ttls) > 2*x.ttlLive+64 {
		x.prune(s)
	}
	x.arm(s, at)
}

// prune drops heap items whose message is gone.
func (x *expiryState) prune(s *Stream) {
	kept := x.ttls[:0]
	for _, it := range x.ttls {
		if s.log.find(it.seq) >= 0 {
			kept = append(kept, it)
		}
	}
	clear(x.ttls[len(kept):])
	x.ttls = kept
	x.ttls.init()
}

// arm makes sure the timer fires no later than the Unix ns time at.
func (x *expiryState) arm(s *Stream, at int64) {
	if x.at != 0 && x.at <= at {
		return
	}
	d := max(time.Duration(at-time.Now().UnixNano()), expiryResolution)
	x.at = at
	if x.timer == nil {
		x.timer = time.AfterFunc(d, s.expire)
	} else {
		x.timer.Reset(d)
	}
}

// stop disarms the timer.
func (x *expiryState) stop() {
	if x.timer != nil {
		x.timer.Stop()
	}
	x.at = 0
}

// clearTTLs forgets every pending TTL, after the stream was emptied.
func (x *expiryState) clearTTLs() {
	clear(x.ttls)
	x.ttls = x.ttls[:0]
	x.ttlLive = 0
}

// rearm expires what is due now and schedules the next expiry from scratch,
// after the limits changed.
func (x *expiryState) rearm(s *Stream) {
	x.stop()
	now := time.Now().UnixNano()
	s.expireDue(now)
	x.schedule(s)
}

// schedule arms the timer for the next due expiry, if any.
func (x *expiryState) schedule(s *Stream) {
	next := int64(math.MaxInt64)
	if age := int64(s.cfg.MaxAge); age > 0 {
		for i := 0; i < s.log.n; i++ {
			if e := s.log.at(i); e.live() && e.flags&flagNoAge == 0 {
				next = addSat(e.ts, age)
				break
			}
		}
	}
	if len(x.ttls) > 0 {
		next = min(next, x.ttls[0].at)
	}
	if next == math.MaxInt64 {
		x.stop()
		return
	}
	x.arm(s, next)
}

// expire is the timer callback.
func (s *Stream) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.expiry.at = 0
	s.expireDue(time.Now().UnixNano())
	s.expiry.schedule(s)
}

// expireDue removes the messages whose MaxAge or TTL has passed at the Unix
// ns time now.
func (s *Stream) expireDue(now int64) {
	if age := int64(s.cfg.MaxAge); age > 0 {
		cutoff := now - age
		s.hold()
		for i := 0; i < s.log.n; i++ {
			e := s.log.at(i)
			if !e.live() || e.flags&flagNoAge != 0 {
				continue
			}
			if e.ts > cutoff {
				break
			}
			s.removeAt(i, false)
		}
		s.release()
	}
	x := &s.expiry
	for len(x.ttls) > 0 && x.ttls[0].at <= now {
		it := x.ttls.pop()
		s.removeSeq(it.seq, false)
	}
}

// expiryItem is one pending per-message expiry.
type expiryItem struct {
	at  int64
	seq uint64
}

// expiryHeap is a binary min-heap of expiryItems ordered by at.
type expiryHeap []expiryItem

func (h *expiryHeap) push(it expiryItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

func (h *expiryHeap) pop() expiryItem {
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

func (h expiryHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= h[i].at {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (h expiryHeap) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1].at < h[c].at {
			c++
		}
		if h[i].at <= h[c].at {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// addSat returns t+d for d ≥ 0, saturating at math.MaxInt64 instead of
// wrapping, so a huge MaxAge or TTL means "far future", not "now".
func addSat(t, d int64) int64 {
	if t > math.MaxInt64-d {
		return math.MaxInt64
	}
	return t + d
}
