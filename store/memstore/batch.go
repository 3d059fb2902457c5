package memstore

import (
	"math"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
)

// StoreBatch stores msgs as one unit under the stream lock, so no reader
// sees part of them; see store.BatchStorer. Every message is checked
// first (subject, size, DiscardNew limits counted over the whole batch),
// so an error stores none of them.
func (s *Stream) StoreBatch(msgs []store.BatchMsg) (uint64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, 0, store.ErrClosed
	}
	if len(msgs) == 0 {
		return s.lastSeq + 1, 0, nil
	}
	if err := s.checkBatch(msgs); err != nil {
		return 0, 0, err
	}
	var first uint64
	var ts0 int64
	for i := range msgs {
		m := &msgs[i]
		seq, ts, err := s.storeLocked(m.Subject, m.Header, m.Data, m.TTL)
		if err != nil {
			// checkBatch refuses what storeLocked would: not reached.
			for j := first; i > 0 && j < first+uint64(i); j++ {
				s.removeSeq(j, false)
			}
			return 0, 0, err
		}
		if i == 0 {
			first, ts0 = seq, ts
		}
	}
	return first, ts0, nil
}

// checkBatch refuses a batch one of whose messages Store would refuse,
// counting the messages before it against the DiscardNew limits.
func (s *Stream) checkBatch(msgs []store.BatchMsg) error {
	cfg := &s.cfg
	if s.lastSeq > math.MaxUint64-uint64(len(msgs)) {
		return ErrSeqExhausted
	}
	subjMsgs := func(subj string) uint64 {
		if ss := s.subjects[subj]; ss != nil {
			return ss.msgs
		}
		return 0
	}
	return store.CheckBatch(cfg, msgs, s.msgs, s.bytes, subjMsgs, func(m *store.BatchMsg) error {
		if !subject.ValidLiteral(m.Subject) {
			return ErrInvalidSubject
		}
		return nil
	})
}
