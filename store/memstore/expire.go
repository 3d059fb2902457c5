package memstore

import (
	"math"
	"time"
)

// rearmExpiry expires what is due now and schedules the next expiry from
// scratch, after the limits changed.
func (s *Stream) rearmExpiry() {
	s.expiry.Stop()
	s.expireDue(time.Now().UnixNano())
	s.scheduleExpiry()
}

// hasSeq reports whether message seq is still in the log.
func (s *Stream) hasSeq(seq uint64) bool { return s.log.find(seq) >= 0 }

// scheduleExpiry arms the timer for the next due expiry, if any.
func (s *Stream) scheduleExpiry() {
	next := int64(math.MaxInt64)
	if age := int64(s.cfg.MaxAge); age > 0 {
		for i := 0; i < s.log.n; i++ {
			if e := s.log.at(i); e.live() && e.flags&flagNoAge == 0 {
				next = addSat(e.ts, age)
				break
			}
		}
	}
	s.expiry.ArmNext(next)
}

// expire is the timer callback.
func (s *Stream) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.expiry.Fired()
	s.expireDue(time.Now().UnixNano())
	s.scheduleExpiry()
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
	for len(x.TTLs) > 0 && x.TTLs[0].At <= now {
		it := x.TTLs.Pop()
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
