package jetstream

import (
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Retention: a limits stream keeps messages until its limits remove them;
// an interest stream removes a message once every consumer whose filter
// matches it has acknowledged it (and drops messages no consumer matches
// at all); a workqueue stream removes a message once its one consumer
// acknowledged it. Acknowledged means acked (or termed), delivered by an
// ack-none consumer, or covered by an ack-all floor.

// retention returns the stream's retention policy without taking s.mu.
func (s *stream) retention() jsapi.RetentionPolicy {
	return jsapi.RetentionPolicy(s.policy.Load())
}

// acked is called after a consumer acknowledged seqs; interest and
// workqueue streams remove the ones nobody needs any more.
func (s *stream) acked(seqs []uint64) {
	policy := s.retention()
	if policy == jsapi.LimitsPolicy {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	cons := s.consumerList()
	removed := false
	var sm store.Msg
	for _, seq := range seqs {
		if policy == jsapi.InterestPolicy {
			m, err := s.store.Load(seq, &sm)
			if err != nil {
				continue
			}
			if anyNeeds(cons, seq, m.Subject) {
				continue
			}
		}
		if ok, _ := s.store.Remove(seq, false); ok {
			removed = true
		}
	}
	if removed {
		s.noteRemovalsLocked()
	}
}

// anyNeeds reports whether some consumer still needs seq acknowledged.
func anyNeeds(cons []*consumer, seq uint64, subj string) bool {
	for _, c := range cons {
		if c.needsAck(seq, subj) {
			return true
		}
	}
	return false
}

// needsAck reports whether the consumer has yet to acknowledge seq.
func (c *consumer) needsAck(seq uint64, subj string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !filterMatch(c.filters, subj) {
		return false
	}
	if seq >= c.sseq {
		return true
	}
	switch c.cfg.AckPolicy {
	case jsapi.AckExplicit:
		_, ok := c.pending[seq]
		return ok
	case jsapi.AckAll:
		return seq > c.ackFloorStream
	}
	return false
}

// noteRemovalsLocked records that the engine removed messages consumers
// had already acknowledged: their pending counts are unaffected, only the
// first sequence and byte count move. Caller holds s.mu.
func (s *stream) noteRemovalsLocked() {
	st := s.store.State()
	s.firstSeq = st.FirstSeq
	s.bytes.Store(st.Bytes)
}

// dropUninterested removes every message of an interest stream that no
// remaining consumer needs, as after a consumer was deleted.
func (s *stream) dropUninterested() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.cfg.Retention != jsapi.InterestPolicy {
		return
	}
	cons := s.consumerList()
	var sm store.Msg
	removed := false
	for seq := uint64(0); ; {
		m, err := s.store.LoadNext("", seq, &sm)
		if err != nil {
			break
		}
		seq = m.Seq + 1
		if !anyNeeds(cons, m.Seq, m.Subject) {
			if ok, _ := s.store.Remove(m.Seq, false); ok {
				removed = true
			}
		}
	}
	if removed {
		s.noteRemovalsLocked()
	}
}
