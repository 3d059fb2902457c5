package filestore

import (
	"math"
	"time"

	"github.com/leafbox/leafbox/store"
)

// Limits and expiry. Removals the stream can re-derive on the next Open
// (limits, MaxAge, TTL) are applied to the index first and their
// tombstones written afterwards, best effort; explicit removals (Remove,
// Purge) write their tombstones first.
//
// A limit eviction that a Store causes (MaxMsgsPerSubject, and MaxMsgs
// or MaxBytes under DiscardOld) writes its tombstone only after the fsync
// that covers the new record, never in the same batch: a disk may write
// a batch's pages back in any order, and a power cut that kept the
// tombstone but not the record would lose both the old message and its
// replacement. Until then the eviction is pending; a crash before the
// tombstone is durable leaves both records on disk, and Open evicts the
// old one again. If that fsync fails the tombstone is never written: the
// evicted message stays on disk, and comes back at the next Open, though
// this stream no longer holds it. Reaping or rewriting the evicted
// message's block is safe meanwhile, as both sync the active block first.
// The order costs no fsync: the tombstone goes out with the next write.

// pendingEviction is the tombstone of an eviction caused by the record
// that ends at write position cause (see Stream.written).
type pendingEviction struct {
	cause uint64
	r     seqRange
}

// deferTombstones holds the tombstones of ranges, evicted because of the
// record ending at write position cause, until an fsync covers that
// record; with cause 0 it writes them now (noteTombstones).
func (s *Stream) deferTombstones(ranges []seqRange, cause uint64) {
	if len(ranges) == 0 {
		return
	}
	if cause == 0 {
		s.noteTombstones(ranges)
		return
	}
	s.syncMu.Lock()
	for _, r := range ranges {
		s.evictions = append(s.evictions, pendingEviction{cause, r})
	}
	s.syncMu.Unlock()
}

// settleEvictions settles the pending evictions an fsync meant to cover
// every write up to target decides: released when it succeeded, dropped
// when it failed. The caller holds syncMu. Causes ascend, as records are
// written in order, and fsync outcomes are recorded in the order they
// happened, so each eviction is decided by the first outcome covering its
// record.
func (s *Stream) settleEvictions(target uint64, ok bool) {
	n := 0
	for n < len(s.evictions) && s.evictions[n].cause <= target {
		if ok {
			s.released = append(s.released, s.evictions[n].r)
		}
		n++
	}
	if n > 0 {
		s.evictions = s.evictions[:copy(s.evictions, s.evictions[n:])]
	}
}

// releaseEvictions appends the tombstones of the evictions whose cause is
// durable to the active block. Callers holding s.mu call it before they
// mark the buffer for a write they might undo.
func (s *Stream) releaseEvictions() {
	s.syncMu.Lock()
	if len(s.released) == 0 {
		s.syncMu.Unlock()
		return
	}
	s.releasing, s.released = s.released, s.releasing[:0]
	s.syncMu.Unlock()
	if s.active != nil {
		s.noteTombstones(s.releasing)
	}
	s.releasing = s.releasing[:0]
}

// enforceSubjectLimit evicts the oldest messages of ss beyond
// MaxMsgsPerSubject, because of the record ending at write position
// cause (0 for none; see deferTombstones).
func (s *Stream) enforceSubjectLimit(ss *subjectState, cause uint64) {
	limit := uint64(s.cfg.MaxMsgsPerSubject)
	if limit == 0 || ss.msgs <= limit {
		return
	}
	var ranges []seqRange
	for ss.msgs > limit {
		seq := s.subjectFirst(ss, true)
		b, i := s.locate(seq)
		if b == nil {
			break
		}
		s.removeAt(b, i)
		ranges = append(ranges, seqRange{seq, seq})
	}
	s.deferTombstones(ranges, cause)
}

// enforceAllSubjectLimits applies MaxMsgsPerSubject to every subject.
func (s *Stream) enforceAllSubjectLimits() {
	if s.cfg.MaxMsgsPerSubject <= 0 {
		return
	}
	var over []*subjectState
	for _, ss := range s.subjects.byName {
		if ss.msgs > uint64(s.cfg.MaxMsgsPerSubject) {
			over = append(over, ss)
		}
	}
	for _, ss := range over {
		s.enforceSubjectLimit(ss, 0)
	}
}

// enforceDiscardOld evicts the oldest messages while MaxMsgs or MaxBytes
// is exceeded, under DiscardOld, because of the record ending at write
// position cause (0 for none; see deferTombstones). Under DiscardNew new
// messages are refused instead.
func (s *Stream) enforceDiscardOld(cause uint64) {
	cfg := &s.cfg.Config
	if cfg.Discard != store.DiscardOld {
		return
	}
	var r rangeBuilder
	for s.msgs > 0 && ((cfg.MaxMsgs > 0 && s.msgs > uint64(cfg.MaxMsgs)) ||
		(cfg.MaxBytes > 0 && s.bytes > uint64(cfg.MaxBytes))) {
		seq := s.firstSeq
		b, i := s.locate(seq)
		if b == nil {
			break
		}
		s.removeAt(b, i)
		r.take(seq)
	}
	s.deferTombstones(r.ranges, cause)
}

// rangeBuilder collects removed sequences visited in ascending order into
// ranges. A range may cover sequences that were already gone, never a
// live one: call skip when passing a live message that stays.
type rangeBuilder struct {
	ranges []seqRange
	open   bool
}

func (r *rangeBuilder) take(seq uint64) {
	if n := len(r.ranges); r.open && n > 0 && r.ranges[n-1].last < seq {
		r.ranges[n-1].last = seq
		return
	}
	r.ranges = append(r.ranges, seqRange{seq, seq})
	r.open = true
}

func (r *rangeBuilder) skip() { r.open = false }

// subjectFirst returns the first live sequence of ss, scanning forward
// from its lower bound when that may be stale. With update it stores the
// result (the caller holds the write lock).
func (s *Stream) subjectFirst(ss *subjectState, update bool) uint64 {
	if !ss.firstStale {
		return ss.first
	}
	seq := ss.first
	s.scan(ss.first, ss.last, func(b *block, e *entry) bool {
		if e.subj == ss.id {
			seq = e.seq
			return false
		}
		return true
	})
	if update {
		ss.first, ss.firstStale = seq, false
	}
	return seq
}

// subjectLast returns the last live sequence of ss, scanning backward from
// its upper bound when that may be stale.
func (s *Stream) subjectLast(ss *subjectState, update bool) uint64 {
	if !ss.lastStale {
		return ss.last
	}
	seq := ss.last
	s.scanBack(ss.last, ss.first, func(b *block, e *entry) bool {
		if e.subj == ss.id {
			seq = e.seq
			return false
		}
		return true
	})
	if update {
		ss.last, ss.lastStale = seq, false
	}
	return seq
}

// rearmExpiry expires what is due and schedules the next expiry from
// scratch.
func (s *Stream) rearmExpiry() {
	s.expiry.Stop()
	s.expireDue(time.Now().UnixNano())
	s.scheduleExpiry()
}

// hasSeq reports whether message seq is still stored.
func (s *Stream) hasSeq(seq uint64) bool {
	b, _ := s.locate(seq)
	return b != nil
}

// scheduleExpiry arms the timer for the next due expiry, if any.
func (s *Stream) scheduleExpiry() {
	next := int64(math.MaxInt64)
	if age := int64(s.cfg.MaxAge); age > 0 {
		s.scan(s.firstSeq, s.lastSeq, func(b *block, e *entry) bool {
			if e.flags&entryNoAge != 0 {
				return true
			}
			next = e.ts + age
			return false
		})
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
	s.reapLocked()
}

// expireDue removes the messages whose MaxAge or TTL has passed at the
// Unix ns time now.
func (s *Stream) expireDue(now int64) {
	var r rangeBuilder
	var seqs []uint64
	if age := int64(s.cfg.MaxAge); age > 0 {
		cutoff := now - age
		s.scan(s.firstSeq, s.lastSeq, func(b *block, e *entry) bool {
			if e.flags&entryNoAge != 0 {
				r.skip()
				return true
			}
			if e.ts > cutoff {
				return false
			}
			seqs = append(seqs, e.seq)
			r.take(e.seq)
			return true
		})
	}
	s.removeSeqs(seqs)
	x := &s.expiry
	for len(x.TTLs) > 0 && x.TTLs[0].At <= now {
		it := x.TTLs.Pop()
		if b, i := s.locate(it.Seq); b != nil {
			s.removeAt(b, i)
			r.skip()
			r.take(it.Seq)
			r.skip()
		}
	}
	s.noteTombstones(r.ranges)
}

// scan calls fn for the live entries with sequences in [from, to] in
// ascending order until fn returns false.
func (s *Stream) scan(from, to uint64, fn func(b *block, e *entry) bool) {
	s.scanWhere(from, to, nil, nil, fn)
}

// scanWhere is scan over the blocks that may hold subject ss (when not
// nil) or a subject m matches (when not nil): an evicted block whose
// subject summary has none is skipped without loading it.
func (s *Stream) scanWhere(from, to uint64, ss *subjectState, m *matcher, fn func(b *block, e *entry) bool) {
	for _, b := range s.blocksFrom(from) {
		if b.minSeq > to && b.minSeq != 0 {
			return
		}
		if b.live == 0 || b.lastLive() < from {
			continue
		}
		if b.firstLive() > to {
			return
		}
		if !b.mayHold(ss, m) {
			continue
		}
		es := s.ents(b)
		for j := b.search(from); j < len(es); j++ {
			e := &es[j]
			if e.seq > to {
				return
			}
			if e.live() && !fn(b, e) {
				return
			}
		}
	}
}

// scanBack calls fn for the live entries with sequences in [to, from] in
// descending order until fn returns false.
func (s *Stream) scanBack(from, to uint64, fn func(b *block, e *entry) bool) {
	bs := s.blocks
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		if b.live == 0 || b.firstLive() > from {
			continue
		}
		if b.maxSeq < to || b.lastLive() < to {
			return
		}
		es := s.ents(b)
		j := b.search(from + 1)
		for j--; j >= 0; j-- {
			e := &es[j]
			if e.seq < to {
				return
			}
			if e.live() && !fn(b, e) {
				return
			}
		}
	}
}

// blocksFrom returns the blocks that may hold sequences ≥ seq.
func (s *Stream) blocksFrom(seq uint64) []*block {
	lo, hi := 0, len(s.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.blocks[m].maxSeq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return s.blocks[lo:]
}
