package memstore

import (
	"math"
	"time"

	"github.com/leafbox/leafbox/store/internal/expiry"
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
	ttls expiry.Heap
	// ttlLive counts live messages with a pending TTL.
	ttlLive int
}

// addTTL records that message seq expires at the Unix ns time at.
func (x *expiryState) addTTL(s *Stream, seq uint64, at int64) {
	x.ttlLive++
	x.ttls.Push(expiry.Item{At: at, Seq: seq})
	if len(x.ttls) > 2*x.ttlLive+64 {
		x.prune(s)
	}
	x.arm(s, at)
}

// prune drops heap items whose message is gone.
func (x *expiryState) prune(s *Stream) {
	kept := x.ttls[:0]
	for _, it := range x.ttls {
		if s.log.find(it.Seq) >= 0 {
			kept = append(kept, it)
		}
	}
	clear(x.ttls[len(kept):])
	x.ttls = kept
	x.ttls.Init()
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
		next = min(next, x.ttls[0].At)
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
	for len(x.ttls) > 0 && x.ttls[0].At <= now {
		it := x.ttls.Pop()
		s.removeSeq(it.Seq, false)
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
