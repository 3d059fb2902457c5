package filestore

import (
	"errors"
	"os"
	"sort"

	"github.com/leafbox/leafbox/store"
)

// Removal: tombstones, erasing, and block files that are no longer
// needed.

// Remove deletes message seq; see store.Stream. It appends a tombstone,
// never rewriting the message's block, except with erase: then, once the
// tombstone is durable, the record is overwritten in place (or, in a
// compressed block, the block is rewritten without it) before Remove
// returns. An error with false means the removal may not be durable; with
// true, the message is removed durably but erasing its bytes failed.
func (s *Stream) Remove(seq uint64, erase bool) (bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false, store.ErrClosed
	}
	b, i := s.locate(seq)
	if b == nil {
		s.mu.Unlock()
		return false, nil
	}
	e := b.entries[i]
	if err := s.writeTombstones([]seqRange{{seq, seq}}); err != nil {
		s.mu.Unlock()
		return false, err
	}
	s.removeSeqs([]uint64{seq})
	if erase {
		// The tombstone must be durable before the record goes, or a
		// crash could complete a Remove that reported failure.
		if err := s.syncLocked(); err != nil {
			s.reapLocked()
			s.mu.Unlock()
			return false, err
		}
		rewrite, err := s.eraseInPlace(b, e)
		s.reapLocked()
		s.mu.Unlock()
		if rewrite {
			s.maintMu.Lock()
			err = s.rewrite(b)
			s.maintMu.Unlock()
		}
		return true, err
	}
	ticket := s.written
	s.reapLocked()
	s.mu.Unlock()
	if s.syncAlways {
		if err := s.waitDurable(ticket); err != nil {
			return false, err
		}
	}
	return true, nil
}

// writeTombstones appends tombstones for ranges to the active block and,
// when syncing always, writes them to the file. On error nothing was
// appended.
func (s *Stream) writeTombstones(ranges []seqRange) error {
	if len(ranges) == 0 {
		return nil
	}
	if err := s.ensureRoom(recordOverhead * len(ranges)); err != nil {
		return err
	}
	s.releaseEvictions()
	b := s.active
	mark, rawMark := len(b.buf), b.rawLen
	for _, r := range ranges {
		b.buf = appendTombstone(b.buf, r.first, r.last)
	}
	b.rawLen += int64(recordOverhead * len(ranges))
	if s.syncAlways || len(b.buf) >= asyncFlushSize {
		if err := s.flushLocked(); err != nil {
			b.buf, b.rawLen = b.buf[:mark], rawMark
			return err
		}
	}
	for _, r := range ranges {
		b.addTombstone(r.first, r.last)
	}
	return nil
}

// noteTombstones appends tombstones for removals the stream can re-derive
// (limits and expiry) or that undo a failed Store. They go into the active
// block even past BlockSize: sealing could fail where an append cannot,
// and the record they delete may be in this very block. A failure to
// write them is retried with the next write.
//
// Many at once (the evictions of a sync interval, released together) go
// out asyncFlushSize at a time, so the buffer does not grow for them.
func (s *Stream) noteTombstones(ranges []seqRange) {
	b := s.active
	for _, r := range ranges {
		b.buf = appendTombstone(b.buf, r.first, r.last)
		b.addTombstone(r.first, r.last)
		b.rawLen += recordOverhead
		if len(b.buf) >= asyncFlushSize {
			_ = s.flushLocked()
		}
	}
}

// eraseInPlace overwrites the record of e, just removed from b. It reports
// whether b is compressed and must be rewritten instead.
func (s *Stream) eraseInPlace(b *block, e entry) (bool, error) {
	if b.compressed() {
		return true, nil
	}
	b.gen++
	if int64(e.off) >= b.written {
		fillErased(b.buf[int64(e.off)-b.written:][:e.length], e.seq, e.ts)
		return false, nil
	}
	rec := make([]byte, e.length)
	fillErased(rec, e.seq, e.ts)
	if _, err := b.file.WriteAt(rec, blockHeaderLen+int64(e.off)); err != nil {
		return false, ioError("erase in", b.id, err)
	}
	if b == s.active {
		return false, s.fsync(b.file, b.id, s.written)
	}
	if err := b.file.Sync(); err != nil {
		return false, ioError("sync", b.id, err)
	}
	return false, nil
}

// removeSeqs deletes the live messages seqs from the index, in any order.
// It writes nothing; callers record tombstones first (writeTombstones) or
// after (noteTombstones).
func (s *Stream) removeSeqs(seqs []uint64) {
	for _, seq := range seqs {
		b, i := s.locate(seq)
		if b == nil {
			continue
		}
		s.removeAt(b, i)
	}
}

// removeAt deletes entry i of b from the index.
func (s *Stream) removeAt(b *block, i int) {
	e := b.entries[i]
	ss := s.subjects.byID[e.subj]
	if ss.removed(e.seq) {
		s.subjects.drop(ss)
	}
	if e.flags&entryTTL != 0 {
		s.expiry.Live--
	}
	s.msgs--
	s.bytes -= e.size()
	b.deleteAt(i)
	if b.live == 0 {
		s.deadBlocks = true
	}
	if e.seq == s.firstSeq {
		s.firstSeq = s.nextLive(e.seq + 1)
	}
}

// nextLive returns the first live sequence ≥ seq, or lastSeq+1.
func (s *Stream) nextLive(seq uint64) uint64 {
	i := sort.Search(len(s.blocks), func(i int) bool { return s.blocks[i].maxSeq >= seq })
	for ; i < len(s.blocks); i++ {
		b := s.blocks[i]
		if b.live == 0 || b.lastLive() < seq {
			continue
		}
		if b.firstLive() >= seq {
			return b.firstLive()
		}
		es := s.ents(b)
		for j := b.search(seq); j < len(es); j++ {
			if es[j].live() {
				return es[j].seq
			}
		}
	}
	return s.lastSeq + 1
}

// firstEntry returns the entry of the first live message, or nil.
func (s *Stream) firstEntry() *entry {
	if s.msgs == 0 {
		return nil
	}
	b, i := s.locate(s.firstSeq)
	if b == nil {
		return nil
	}
	return &b.entries[i]
}

// reapLocked removes block files that hold nothing anyone needs: no live
// message, and no tombstone for a record in another block. Everything
// written is made durable first: the messages of a removed block may be
// dead only by tombstones still in flight, and removing the file must not
// make a removal durable that a crash would otherwise undo.
func (s *Stream) reapLocked() {
	if !s.deadBlocks {
		return
	}
	s.deadBlocks = false
	synced := false
	for removed := true; removed; {
		removed = false
		for i := 0; i < len(s.blocks); i++ {
			b := s.blocks[i]
			if b == s.active || b.live > 0 || s.tombstonesNeeded(b) {
				continue
			}
			if !synced {
				if s.syncLocked() != nil {
					s.deadBlocks = true
					return
				}
				synced = true
			}
			if err := s.removeBlock(b); err != nil {
				// Try again after the next removal.
				s.deadBlocks = true
				continue
			}
			s.blocks = append(s.blocks[:i], s.blocks[i+1:]...)
			i--
			removed = true
		}
	}
	for _, b := range s.blocks {
		if b != s.active && b.sealed && s.wantsCompaction(b) {
			s.kick()
			break
		}
	}
}

// tombstonesNeeded reports whether b's tombstones delete records that
// another block still holds.
func (s *Stream) tombstonesNeeded(b *block) bool {
	if b.tombFirst == 0 {
		return false
	}
	for _, o := range s.blocks {
		if o != b && o.minSeq != 0 && o.minSeq <= b.tombLast && o.maxSeq >= b.tombFirst {
			return true
		}
	}
	return false
}

// removeBlock closes b and removes its files.
func (s *Stream) removeBlock(b *block) error {
	if err := s.fsys.Remove(blockName(s.dir, b.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	_ = removeIfExists(s.fsys, indexName(s.dir, b.id))
	s.closeFile(b)
	s.cache.forget(b)
	s.reads.forget(b)
	return nil
}

// closeFile closes b's file once no fsync is using it.
func (s *Stream) closeFile(b *block) {
	if b.file == nil {
		return
	}
	s.fileMu.Lock()
	_ = b.file.Close()
	b.file = nil
	s.fileMu.Unlock()
}
