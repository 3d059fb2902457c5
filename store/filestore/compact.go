package filestore

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
)

// Maintenance: one goroutine rewrites sealed blocks (S2 compression,
// compaction of mostly dead blocks, repair of blocks with a bad header)
// and writes their index files. It reads and writes without holding s.mu,
// then commits under s.mu only if the block did not change meanwhile
// (b.gen); s.maintMu keeps two rewrites of one block apart.

// maintain runs maintenance whenever kicked, until Close.
func (s *Stream) maintain() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.work:
		}
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			// On error stop until the next kick rather than spin on a
			// full disk.
			if more, err := s.runTask(); !more || err != nil {
				break
			}
		}
	}
}

// runTask does the next pending maintenance task, reporting whether there
// was one.
func (s *Stream) runTask() (bool, error) {
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	s.mu.Lock()
	s.evictLocked()
	var b *block
	rewrite := false
	for _, c := range s.blocks {
		if c == s.active || !c.sealed || c.file == nil {
			continue
		}
		if c.needCompress || c.repair || s.wantsCompaction(c) {
			b, rewrite = c, true
			break
		}
		if c.needIndex && b == nil {
			b = c
		}
	}
	s.mu.Unlock()
	if b == nil {
		return false, nil
	}
	if rewrite {
		return true, s.rewrite(b)
	}
	return true, s.indexSealed(b)
}

// Checkpoint does now what the maintenance goroutine would do eventually:
// it syncs, rewrites and indexes every sealed block that needs it and
// writes the active block's index file, so that the next Open reads index
// files only.
func (s *Stream) Checkpoint() error {
	if err := s.Sync(); err != nil {
		return err
	}
	for {
		more, err := s.runTask()
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if err := s.flushLocked(); err != nil {
		return err
	}
	return s.writeBlockIndex(s.active)
}

// wantsCompaction reports whether rewriting sealed block b would reclaim
// enough: two thirds of it dead messages and at least min(64 KiB,
// BlockSize/2), or, for a block kept only for its tombstones, any dead
// message at all. Tombstones do not count as dead: a rewrite keeps those
// still needed, and the block goes once none is.
func (s *Stream) wantsCompaction(b *block) bool {
	liveRecords := int64(b.liveBytes) + int64(b.live)*s.recordAdjust()
	dead := b.rawLen - b.tombBytes - liveRecords
	if b.live == 0 {
		return dead > 0
	}
	return dead*3 >= b.rawLen*2 && dead >= min(64<<10, s.cfg.BlockSize/2)
}

// has reports whether b is still one of the stream's blocks.
func (s *Stream) has(b *block) bool {
	return slices.Contains(s.blocks, b)
}

// indexSealed writes the index file of sealed block b. It reads and
// writes without holding s.mu; a sealed block changes only by an erase
// in place (b.gen) or a rewrite, which the caller's s.maintMu excludes.
func (s *Stream) indexSealed(b *block) error {
	s.mu.Lock()
	if !s.has(b) || b.file == nil || b.corruptHeader {
		s.mu.Unlock()
		return nil
	}
	gen, f, meta := b.gen, b.file, s.indexMetaOf(b)
	sc := s.scanFromEntries(b)
	s.mu.Unlock()
	var err error
	if sc != nil {
		err = s.writeIndexFrom(f, meta, sc)
	} else {
		err = s.buildIndexFile(f, meta)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.has(b) {
		// Removed meanwhile (its file closed under the read); an index
		// file written anyway is an orphan the next Open removes.
		return nil
	}
	if err == nil && b.gen == gen && b.hdr.stamp == meta.stamp {
		b.needIndex = false
	}
	return err
}

// rewrite replaces sealed block b with a copy that keeps only its live
// messages and the tombstones other blocks still need, compressed when the
// stream compresses and with a fresh header. The caller holds s.maintMu.
func (s *Stream) rewrite(b *block) error {
	s.mu.Lock()
	if !s.has(b) || b == s.active || b.file == nil {
		s.mu.Unlock()
		return nil
	}
	gen, f, size, hdr := b.gen, b.file, b.fileSize, b.hdr
	live := make([]uint64, 0, b.live)
	for _, e := range s.ents(b) {
		if e.live() {
			live = append(live, e.seq)
		}
	}
	var others []seqRange
	for _, o := range s.blocks {
		if o != b && o.minSeq != 0 {
			others = append(others, seqRange{o.minSeq, o.maxSeq})
		}
	}
	compress := s.compression == CompressionS2
	s.mu.Unlock()

	body := make([]byte, max(size-blockHeaderLen, 0))
	if _, err := f.ReadAt(body, blockHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.has(b) {
			return nil // removed meanwhile, its file closed under the read
		}
		return fmt.Errorf("filestore: read block %d: %w", b.id, err)
	}
	var raw []byte
	var ends []int
	var sc blockScan
	forEachRecord(body, hdr.flags&flagS2 != 0, s.key, func(r *record, rec []byte) {
		switch r.kind {
		case kindMsg:
			if _, ok := slices.BinarySearch(live, r.seq); !ok {
				return
			}
			sc.msgs = append(sc.msgs, scannedMsg{
				seq: r.seq, ts: r.ts, ttl: r.ttl, off: uint32(len(raw)), length: uint32(len(rec)),
				subject: string(r.subject), hdr: r.hasHeader(),
			})
			if r.seq > sc.maxSeq {
				sc.maxSeq, sc.lastTime = r.seq, r.ts
			}
		case kindTombstone:
			t := seqRange{r.seq, uint64(r.ts)}
			if !overlapsAny(others, t) {
				return
			}
			sc.tombs = append(sc.tombs, t)
		default:
			return
		}
		raw = append(raw, rec...)
		ends = append(ends, len(raw))
	})

	nh := blockHeader{id: hdr.id, baseSeq: hdr.baseSeq, baseTime: hdr.baseTime, stamp: rand.Uint64()}
	if b.corruptHeader {
		nh.id = b.id
	}
	file := appendBlockHeader(nil, nh)
	if compress && len(raw) > 0 {
		nh.flags = flagS2
		file = appendBlockHeader(file[:0], nh)
		file, sc.chunks = appendCompressed(file, raw, ends)
	} else {
		file = append(file, raw...)
	}
	sc.rawLen = int64(len(raw))
	name := blockName(s.dir, b.id)
	tmp := name + tmpExt
	if err := s.writeTemp(tmp, file); err != nil {
		return fmt.Errorf("filestore: rewrite block %d: %w", b.id, err)
	}

	s.mu.Lock()
	if !s.has(b) || b.gen != gen || b.file == nil {
		s.mu.Unlock()
		_ = s.fsys.Remove(tmp)
		return nil
	}
	// The rewrite drops records whose tombstones may still be in flight;
	// they must be durable first (see reapLocked).
	if err := s.syncLocked(); err != nil {
		s.mu.Unlock()
		_ = s.fsys.Remove(tmp)
		return err
	}
	if err := s.fsys.Rename(tmp, name); err != nil {
		s.mu.Unlock()
		_ = s.fsys.Remove(tmp)
		return fmt.Errorf("filestore: rewrite block %d: %w", b.id, err)
	}
	nf, err := s.fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		// The old handle still reads the old file; the next Open finds
		// the new one and its index file.
		s.mu.Unlock()
		return fmt.Errorf("filestore: reopen block %d: %w", b.id, err)
	}
	s.closeFile(b)
	s.cache.forget(b)
	s.reads.forget(b)
	b.file, b.hdr, b.fileSize = nf, nh, int64(len(file))
	b.corruptHeader, b.repair, b.needCompress, b.needIndex = false, false, false, true
	b.chunks = sc.chunks
	b.rawLen = sc.rawLen
	b.written = 0
	if !b.compressed() {
		b.written = sc.rawLen
	}
	// Point the live entries at their new offsets; sc.msgs holds every
	// message live when the rewrite started, a superset of those live now,
	// unless a record failed its checksum: that message could never be
	// loaded again and leaves the index.
	var lost []uint64
	for _, e := range b.entries {
		if _, ok := slices.BinarySearchFunc(sc.msgs, e.seq, func(m scannedMsg, seq uint64) int {
			return cmp.Compare(m.seq, seq)
		}); e.live() && !ok {
			lost = append(lost, e.seq)
		}
	}
	s.removeSeqs(lost)
	kept := make([]entry, 0, b.live)
	j := 0
	for _, e := range b.entries {
		if !e.live() {
			continue
		}
		for j < len(sc.msgs) && sc.msgs[j].seq < e.seq {
			j++
		}
		e.off = sc.msgs[j].off
		kept = append(kept, e)
	}
	b.entries, b.deleted = kept, 0
	b.minSeq = 0
	if len(sc.msgs) > 0 {
		b.minSeq = sc.msgs[0].seq
	}
	b.tombFirst, b.tombLast, b.tombBytes = 0, 0, 0
	for _, t := range sc.tombs {
		b.addTombstone(t.first, t.last)
	}
	meta := indexMeta{id: b.id, flags: nh.flags, stamp: nh.stamp, fileSize: b.fileSize, tailSum: tailSum(file)}
	s.deadBlocks = true
	s.reapLocked()
	s.mu.Unlock()

	if !b.compressed() {
		sc.rawLen = b.fileSize - blockHeaderLen
	}
	if err := writeIndex(s.fsys, s.dir, s.key, meta, &sc); err != nil {
		return fmt.Errorf("filestore: index of block %d: %w", b.id, err)
	}
	s.mu.Lock()
	if b.hdr.stamp == nh.stamp && b.gen == gen {
		b.needIndex = false
	}
	s.mu.Unlock()
	return nil
}

// writeTemp writes data to a new file name and syncs it.
func (s *Stream) writeTemp(name string, data []byte) error {
	f, err := s.fsys.Create(name)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.fsys.Remove(name)
	}
	return err
}

// overlapsAny reports whether r intersects one of rs.
func overlapsAny(rs []seqRange, r seqRange) bool {
	for _, o := range rs {
		if o.first <= r.last && o.last >= r.first {
			return true
		}
	}
	return false
}

// forEachRecord calls fn for every good record of a block body with the
// record's bytes, decoding chunks of a compressed body. Sealed messages
// reach fn opened (k), with rec still the sealed bytes.
func forEachRecord(body []byte, compressed bool, k *sealer, fn func(r *record, rec []byte)) {
	if !compressed {
		scanOpen(body, k, func(off int, r *record) { fn(r, body[off:off+r.len()]) })
		return
	}
	scanChunks(body, func(c chunkRef, raw []byte) {
		scanOpen(raw, k, func(off int, r *record) { fn(r, raw[off:off+r.len()]) })
	})
}
