package filestore

import (
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/query"
)

// Purge removes the messages opts selects and returns how many; see
// store.Stream and store.PurgeOptions. The options combine: the candidates
// are the messages matching Subject ("" and ">" match all) with a sequence
// below Sequence (when non-zero), removed oldest first while more than
// Keep matching messages remain.
//
// An unfiltered purge without Keep also moves the sequences on: purging
// everything sets FirstSeq to LastSeq+1, and a Sequence beyond LastSeq+1
// makes it the next sequence assigned, as nats-server's compact does.
//
// On disk a purge costs a few records, not a rewrite: purging everything
// starts a new block whose header carries the sequence and whose first
// record is a tombstone for everything before, then removes the old block
// files; purging below a sequence writes one range tombstone; a filtered
// purge writes one tombstone per run of consecutive removed messages.
func (s *Stream) Purge(opts store.PurgeOptions) (uint64, error) {
	s.mu.Lock()
	n, err := s.purgeLocked(opts)
	ticket := s.written
	s.reapLocked()
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if s.syncAlways && n > 0 {
		if err := s.waitDurable(ticket); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Stream) purgeLocked(opts store.PurgeOptions) (uint64, error) {
	if s.closed {
		return 0, store.ErrClosed
	}
	if opts.Sequence == 1 {
		// Nothing is below sequence 1.
		return 0, nil
	}
	kind := query.Classify(opts.Subject)
	if kind == query.All && opts.Keep == 0 {
		if opts.Sequence == 0 {
			return s.purgeAll(s.lastSeq)
		}
		return s.compact(opts.Sequence)
	}

	total := s.filteredState(opts.Subject, 0).Msgs
	if opts.Keep >= total {
		return 0, nil
	}
	limit := total - opts.Keep
	bound := opts.Sequence // exclusive; 0 means none
	from, to := s.firstSeq, s.lastSeq
	var ss *subjectState
	var m *matcher
	switch kind {
	case query.Literal:
		ss = s.subjects.byName[opts.Subject]
		from, to = ss.first, ss.last
	case query.Wildcard:
		m = s.newMatcher(opts.Subject)
	}
	var seqs []uint64
	var r rangeBuilder
	s.scan(from, to, func(b *block, e *entry) bool {
		if uint64(len(seqs)) >= limit || (bound != 0 && e.seq >= bound) {
			return false
		}
		switch {
		case kind == query.All,
			kind == query.Literal && e.subj == ss.id,
			kind == query.Wildcard && m.match(e.subj):
			seqs = append(seqs, e.seq)
			r.take(e.seq)
		default:
			r.skip()
		}
		return true
	})
	if err := s.writeTombstones(r.ranges); err != nil {
		return 0, err
	}
	s.removeSeqs(seqs)
	return uint64(len(seqs)), nil
}

// compact removes every message below seq. When seq is past the end it
// also makes seq the next sequence.
func (s *Stream) compact(seq uint64) (uint64, error) {
	if seq > s.lastSeq {
		return s.purgeAll(max(s.lastSeq, seq-1))
	}
	if s.msgs == 0 || s.firstSeq >= seq {
		return 0, nil
	}
	if err := s.writeTombstones([]seqRange{{1, seq - 1}}); err != nil {
		return 0, err
	}
	var purged uint64
	for s.msgs > 0 && s.firstSeq < seq {
		b, i := s.locate(s.firstSeq)
		if b == nil {
			break
		}
		s.removeAt(b, i)
		purged++
	}
	return purged, nil
}

// purgeAll removes every message and makes newLast (≥ lastSeq) the last
// sequence. The new active block is durable, with its tombstone, before
// any old block file is removed, so a crash in between cannot bring back
// purged messages or reuse a sequence.
func (s *Stream) purgeAll(newLast uint64) (uint64, error) {
	purged := s.msgs
	oldActive := s.active
	var initial []byte
	if s.lastSeq > 0 {
		initial = appendTombstone(nil, 1, s.lastSeq)
	}
	nb, err := s.createBlock(s.nextID, newLast, s.lastTime, initial)
	if err != nil {
		return 0, err
	}
	if s.lastSeq > 0 {
		nb.addTombstone(1, s.lastSeq)
	}
	s.nextID++
	old := s.blocks
	s.blocks = []*block{nb}
	s.active = nb
	// Whatever the old blocks held, or still had buffered, is purged now
	// and durably so: waiting writers are done.
	oldActive.buf = nil
	s.markSynced(s.written)
	for _, b := range old {
		b.entries, b.live, b.liveBytes, b.deleted = nil, 0, 0, 0
		b.evicted.Store(false)
		b.gaps, b.subjs = nil, nil
		b.sealed, b.needIndex, b.needCompress = true, false, false
		if err := s.removeBlock(b); err != nil {
			// Keep it listed; the new block's tombstone covers it and
			// reaping tries again.
			s.blocks = append(s.blocks, b)
		}
	}
	if len(s.blocks) > 1 {
		// Keep blocks in id order, the active one last.
		s.blocks = append(s.blocks[1:], nb)
		s.deadBlocks = true
	}
	s.subjects = newSubjectIndex()
	s.msgs, s.bytes = 0, 0
	s.lastSeq = newLast
	s.firstSeq = s.lastSeq + 1
	s.expiry.ClearTTLs()
	return purged, nil
}
