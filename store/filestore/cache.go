package filestore

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The index cache. The active block's entries are always in memory; a
// sealed block whose index file is written keeps only a summary (message
// and byte counts, sequence bounds, the live range and its gaps) once the
// entries of all sealed blocks outgrow Config.IndexCache, and loads its
// entries from the index file again when a query reaches it. Changes to a
// block (removals, compaction) load it first, so an evicted block's
// summary is exact and its index file describes every message it holds.
//
// Loads may run under the stream's read lock: indexLoader.mu serialises
// them and block.evicted, an atomic, publishes the entries to the other
// readers. Eviction happens only with maintMu and the write lock held, so
// no reader holds a block's entries meanwhile.

// DefaultIndexCache is the index cache used when Config.IndexCache is 0:
// the entries of about 65,000 messages in sealed blocks, three 4 MiB
// blocks of 128 B messages. Loading a block back reads its index file
// (about 10 bytes a message), so a consumer reading in order pays that
// once per block.
const DefaultIndexCache = 2 << 20

// entrySize is the memory one index entry takes.
const entrySize = int64(unsafe.Sizeof(entry{}))

// indexLoader serialises loads of evicted blocks and counts uses.
type indexLoader struct {
	mu   sync.Mutex
	tick atomic.Uint64
	// limit is the cache's size in bytes; SetIndexCache changes it.
	limit atomic.Int64
	// loads counts blocks loaded back from their index files, failed
	// counts loads that found neither a good index file nor a readable
	// block (the block then looks empty to readers until it loads).
	loads, failed atomic.Uint64
}

// IndexCacheStats describes the index cache.
type IndexCacheStats struct {
	// Limit is the configured size in bytes; Resident the bytes of sealed
	// blocks' entries in memory now.
	Limit, Resident int64
	// Blocks counts sealed blocks, Evicted those whose entries are not in
	// memory.
	Blocks, Evicted int
	// Loads counts evicted blocks loaded back since Open; Failed those
	// loads that could read neither the index file nor the block.
	Loads, Failed uint64
}

// IndexCache returns the index cache's figures.
func (s *Stream) IndexCache() IndexCacheStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := IndexCacheStats{Limit: s.loader.limit.Load(), Loads: s.loader.loads.Load(), Failed: s.loader.failed.Load()}
	for _, b := range s.blocks {
		if b == s.active {
			continue
		}
		st.Blocks++
		if b.evicted.Load() {
			st.Evicted++
		} else {
			st.Resident += int64(cap(b.entries)) * entrySize
		}
	}
	return st
}

// SetIndexCache changes the index cache's size to n bytes (0 for
// DefaultIndexCache; negative keeps only the active block's entries) and
// evicts at once what no longer fits. A memory guardrail calls it to
// shrink the stream's footprint; queries then load blocks back as needed.
func (s *Stream) SetIndexCache(n int64) {
	if n == 0 {
		n = DefaultIndexCache
	}
	s.loader.limit.Store(max(n, 0))
	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.evictLocked()
	}
}

// ents returns b's entries, loading them first when b was evicted. The
// caller holds s.mu, shared or exclusive.
func (s *Stream) ents(b *block) []entry {
	if b.evicted.Load() {
		s.loadEntries(b)
	}
	b.used.Store(s.loader.tick.Add(1))
	return b.entries
}

// firstLive returns the sequence of b's first live message; b.live > 0.
func (b *block) firstLive() uint64 {
	if b.evicted.Load() {
		return b.liveLo
	}
	return b.entries[0].seq
}

// lastLive returns the sequence of b's last live message; b.live > 0.
func (b *block) lastLive() uint64 {
	if b.evicted.Load() {
		return b.liveHi
	}
	return b.entries[len(b.entries)-1].seq
}

// maxBlockSubjects bounds the subject summary of an evicted block; a block
// with more distinct subjects keeps none and is loaded by every filtered
// scan that reaches it.
const maxBlockSubjects = 64

// blockSubjects returns the sorted distinct subject ids of the live
// entries es, or nil when there are more than maxBlockSubjects.
func blockSubjects(es []entry) []uint32 {
	var ids []uint32
	for _, e := range es {
		if !e.live() {
			continue
		}
		i, found := slices.BinarySearch(ids, e.subj)
		if found {
			continue
		}
		if len(ids) == maxBlockSubjects {
			return nil
		}
		ids = slices.Insert(ids, i, e.subj)
	}
	return ids
}

// mayHold reports whether b may hold a live message of subject ss (when
// not nil) or of a subject m matches (when not nil): false only for an
// evicted block whose subject summary names none. A subject id reused by a
// newer subject can only give a needless load, never a miss: an evicted
// block holds no message stored after it was evicted.
func (b *block) mayHold(ss *subjectState, m *matcher) bool {
	if !b.evicted.Load() || b.subjs == nil {
		return true
	}
	if ss != nil {
		if _, found := slices.BinarySearch(b.subjs, ss.id); !found {
			return false
		}
	}
	if m != nil {
		return slices.ContainsFunc(b.subjs, m.match)
	}
	return true
}

// loadEntries rebuilds the entries of evicted block b from its index file,
// or from the block itself when the index file fails its checks.
func (s *Stream) loadEntries(b *block) {
	s.loader.mu.Lock()
	defer s.loader.mu.Unlock()
	if !b.evicted.Load() {
		return
	}
	es, ok := s.readEntries(b, true)
	if !ok {
		es, ok = s.readEntries(b, false)
	}
	if !ok {
		s.loader.failed.Add(1)
		return
	}
	// gaps and subjs stay: readers under the read lock may still be
	// looking at them, and they mean nothing once evicted is false.
	b.entries, b.deleted = es, 0
	b.evicted.Store(false)
	s.loader.loads.Add(1)
	s.kick()
}

// indexScratch is the buffers readEntries decodes an index file with,
// pooled: a stream read from end to end reloads every evicted block's
// entries, and each index file is about one block's worth of messages.
type indexScratch struct {
	data []byte
	msgs []scannedMsg
}

var indexScratchPool = sync.Pool{New: func() any { return new(indexScratch) }}

// readEntries reads b's messages from its index file (fromIndex) or its
// block file and keeps those the summary says are live. It reports false
// when the file is unreadable or does not match the summary.
func (s *Stream) readEntries(b *block, fromIndex bool) ([]entry, bool) {
	intern := func(p []byte) string {
		if ss := s.subjects.byName[string(p)]; ss != nil {
			return ss.name
		}
		return ""
	}
	var sc blockScan
	if fromIndex {
		scratch := indexScratchPool.Get().(*indexScratch)
		defer indexScratchPool.Put(scratch)
		data, err := readIndexInto(s.fsys, s.dir, s.key, b.id, scratch.data)
		if err != nil {
			return nil, false
		}
		scratch.data = data[:0]
		meta, isc, err := parseIndexInto(data, intern, scratch.msgs)
		if err != nil || meta.id != b.id || meta.stamp != b.hdr.stamp || meta.flags != b.hdr.flags || meta.fileSize != b.fileSize {
			return nil, false
		}
		scratch.msgs = isc.msgs[:0]
		sc = isc
	} else {
		body := make([]byte, max(b.fileSize-blockHeaderLen, 0))
		if _, err := b.file.ReadAt(body, blockHeaderLen); err != nil {
			return nil, false
		}
		sc = scanBody(body, b.compressed(), s.key, intern)
	}
	es := make([]entry, 0, b.live)
	gaps := b.gaps
	var bytes uint64
	for _, m := range sc.msgs {
		if m.seq < b.liveLo || m.seq > b.liveHi {
			continue
		}
		for len(gaps) > 0 && gaps[0].last < m.seq {
			gaps = gaps[1:]
		}
		if len(gaps) > 0 && gaps[0].first <= m.seq {
			continue
		}
		ss := s.subjects.byName[m.subject]
		if ss == nil {
			return nil, false
		}
		e := entry{seq: m.seq, ts: m.ts, off: m.off, length: m.length, subj: ss.id, flags: s.entryFlags()}
		if m.hdr {
			e.flags |= entryHdr
		}
		switch {
		case m.ttl > 0:
			e.flags |= entryTTL
		case m.ttl < 0:
			e.flags |= entryNoAge
		}
		es = append(es, e)
		bytes += e.size()
	}
	if len(es) != b.live || bytes != b.liveBytes {
		return nil, false
	}
	return es, true
}

// evictLocked evicts the least recently used sealed blocks until the
// entries of the resident ones fit the cache. Blocks whose index file is
// not yet written, the active block, and blocks with so many gaps that
// their summary would not be much smaller stay. The caller holds maintMu
// and s.mu.
func (s *Stream) evictLocked() {
	limit := s.loader.limit.Load()
	var resident int64
	var cands []*block
	for _, b := range s.blocks {
		if b == s.active || b.evicted.Load() || len(b.entries) == 0 {
			continue
		}
		resident += int64(cap(b.entries)) * entrySize
		if b.sealed && !b.needIndex && !b.corruptHeader && b.file != nil {
			cands = append(cands, b)
		}
	}
	if resident <= limit {
		return
	}
	slices.SortFunc(cands, func(x, y *block) int {
		if x.used.Load() < y.used.Load() {
			return -1
		}
		return 1
	})
	for _, b := range cands {
		if resident <= limit {
			return
		}
		es := b.entries
		if s.evictBlock(b) {
			resident -= int64(cap(es)) * entrySize
		}
	}
}

// evictBlock replaces b's entries by its summary unless it has so many
// gaps that the summary would not be much smaller, and reports whether it
// did. The caller holds maintMu and s.mu (or is Open) and has checked
// that b's index file describes it.
func (s *Stream) evictBlock(b *block) bool {
	es := b.entries
	var gaps []seqRange
	prev := uint64(0)
	hdrs := false
	for _, e := range es {
		if !e.live() {
			continue
		}
		hdrs = hdrs || e.flags&entryHdr != 0
		if prev != 0 && e.seq > prev+1 {
			gaps = append(gaps, seqRange{prev + 1, e.seq - 1})
			if len(gaps) > len(es)/8+8 {
				return false
			}
		}
		prev = e.seq
	}
	b.liveLo, b.liveHi, b.gaps = es[0].seq, es[len(es)-1].seq, gaps
	b.subjs = blockSubjects(es)
	b.noHdrs = !hdrs
	b.entries, b.deleted = nil, 0
	b.evicted.Store(true)
	return true
}
