package filestore

import (
	"math"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
)

// StoreBatch stores msgs as one unit; see store.BatchStorer. The stream
// lock is held throughout, so no reader sees part of the batch. The
// records go into the active block one after another (the block may grow
// past BlockSize for them; a batch that does not fit starts a new block)
// and reach the file with a single write, after whatever was buffered
// before has been written on its own. A crash therefore leaves all of the
// batch's records, none of them, or, when the kernel or disk completed
// only part of that write, a prefix of them followed by a torn record
// that Open truncates; recognising such a prefix is the caller's part
// (store/jetstream marks the last record of a batch).
//
// Every message is checked (subject, size, DiscardNew limits counted
// over the whole batch) before any is stored. When the write or its
// fsync fails, the stored messages are removed again (tombstones follow
// the records in the same buffer) and the error returned; messages the
// batch evicted under DiscardOld limits stay evicted.
func (s *Stream) StoreBatch(msgs []store.BatchMsg) (uint64, int64, error) {
	s.mu.Lock()
	first, ts, err := s.storeBatchLocked(msgs)
	ticket := s.written
	s.reapLocked()
	s.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	if s.syncAlways && len(msgs) > 0 {
		if err := s.waitDurable(ticket); err != nil {
			s.mu.Lock()
			if !s.closed {
				s.undoBatchLocked(first, len(msgs))
				s.reapLocked()
			}
			s.mu.Unlock()
			return 0, 0, err
		}
	}
	return first, ts, nil
}

func (s *Stream) storeBatchLocked(msgs []store.BatchMsg) (uint64, int64, error) {
	if s.closed {
		return 0, 0, store.ErrClosed
	}
	if len(msgs) == 0 {
		return s.lastSeq + 1, 0, nil
	}
	if err := s.checkBatch(msgs); err != nil {
		return 0, 0, err
	}
	// Whatever is buffered goes first and alone: a failed batch write
	// then concerns the batch only.
	if err := s.flushLocked(); err != nil {
		return 0, 0, err
	}
	total := 0
	for i := range msgs {
		total += s.recordSize(&msgs[i])
	}
	if err := s.ensureRoom(total); err != nil {
		return 0, 0, err
	}
	s.inBatch = true
	defer func() { s.inBatch = false }()
	var first uint64
	var ts0 int64
	for i := range msgs {
		m := &msgs[i]
		seq, ts, err := s.storeLocked(m.Subject, m.Header, m.Data, m.TTL)
		if err != nil {
			if i > 0 {
				s.undoBatchLocked(first, i)
			}
			return 0, 0, err
		}
		if i == 0 {
			first, ts0 = seq, ts
		}
	}
	if err := s.flushLocked(); err != nil {
		s.undoBatchLocked(first, len(msgs))
		return 0, 0, err
	}
	return first, ts0, nil
}

// recordSize is the bytes m takes in a block.
func (s *Stream) recordSize(m *store.BatchMsg) int {
	n := recordLen(m.Subject, m.Header, m.Data)
	if s.key != nil {
		n += sealOverhead
	}
	return n
}

// checkBatch refuses a batch one of whose messages Store would refuse,
// counting the messages before it against the DiscardNew limits.
func (s *Stream) checkBatch(msgs []store.BatchMsg) error {
	cfg := &s.cfg.Config
	if s.lastSeq > math.MaxUint64-uint64(len(msgs)) {
		return errSeqExhausted
	}
	subjMsgs := func(subj string) uint64 {
		if ss := s.subjects.byName[subj]; ss != nil {
			return ss.msgs
		}
		return 0
	}
	return store.CheckBatch(cfg, msgs, s.msgs, s.bytes, subjMsgs, func(m *store.BatchMsg) error {
		if len(m.Subject) > 0xFFFF || !subject.ValidLiteral(m.Subject) {
			return ErrInvalidSubject
		}
		if s.recordSize(m) > maxRecordLen {
			return store.ErrMaxMsgSize
		}
		return nil
	})
}

// undoBatchLocked removes the n messages from first that a failed batch
// stored, writing tombstones after their records.
func (s *Stream) undoBatchLocked(first uint64, n int) {
	seqs := make([]uint64, n)
	for i := range seqs {
		seqs[i] = first + uint64(i)
	}
	s.removeSeqs(seqs)
	s.noteTombstones([]seqRange{{first, first + uint64(n) - 1}})
}
