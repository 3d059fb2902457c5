package filestore

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/leafbox/leafbox/store/internal/expiry"
	"github.com/leafbox/leafbox/store/vfs"
)

// Report describes what Open found wrong and what it did about it. The
// zero Report means a clean open.
type Report struct {
	// Blocks is the number of block files found.
	Blocks int
	// ScannedBlocks counts blocks read record by record because their
	// index file was missing, stale or corrupt (StaleIndexes counts the
	// last two). Their index files are rewritten.
	ScannedBlocks int
	StaleIndexes  int
	// TruncatedBytes is the torn tail cut from the last block: bytes of
	// records whose write never completed. DroppedRecords estimates how
	// many records they were (at least one when any bytes were cut);
	// none of them was acknowledged by a synchronous stream.
	TruncatedBytes int64
	DroppedRecords int
	// CorruptRecords and CorruptBytes count records (or compressed
	// chunks) skipped because they failed their checksums, and the bytes
	// skipped with them, in any block. Their messages are lost; the
	// sequences stay as gaps.
	CorruptRecords int
	CorruptBytes   int64
	// CorruptBlocks counts blocks whose header was unreadable; their
	// records were salvaged where they verify.
	CorruptBlocks int
	// RemovedFiles counts leftover temporary files, index files without a
	// block, and empty block files from a creation cut short.
	RemovedFiles int
	// ConvertedBlocks counts plaintext blocks sealed because encryption
	// was turned on (see Encryption).
	ConvertedBlocks int
}

// Lost reports whether recovery had to skip data that had once been
// completely written (corruption), as opposed to cutting a torn tail.
func (r Report) Lost() bool {
	return r.CorruptRecords > 0 || r.CorruptBytes > 0 || r.CorruptBlocks > 0
}

// String summarises the report in one line.
func (r Report) String() string {
	return fmt.Sprintf("blocks=%d scanned=%d stale_indexes=%d truncated_bytes=%d dropped_records=%d corrupt_records=%d corrupt_bytes=%d corrupt_blocks=%d removed_files=%d converted_blocks=%d",
		r.Blocks, r.ScannedBlocks, r.StaleIndexes, r.TruncatedBytes, r.DroppedRecords,
		r.CorruptRecords, r.CorruptBytes, r.CorruptBlocks, r.RemovedFiles, r.ConvertedBlocks)
}

// recover loads the stream from its directory; the caller holds s.mu.
func (s *Stream) recover() error {
	des, err := s.fsys.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	var ids []uint32
	indexes := make(map[uint32]bool)
	for _, de := range des {
		id, ext, ok := parseFileName(de.Name())
		if !ok || de.IsDir() {
			continue
		}
		switch ext {
		case tmpExt:
			if err := s.fsys.Remove(filepath.Join(s.dir, de.Name())); err != nil {
				return fmt.Errorf("filestore: %w", err)
			}
			s.report.RemovedFiles++
		case blockExt:
			ids = append(ids, id)
		case indexExt:
			indexes[id] = true
		}
	}
	slices.Sort(ids)
	for id := range indexes {
		if _, found := slices.BinarySearch(ids, id); !found {
			if err := removeIfExists(s.fsys, indexName(s.dir, id)); err != nil {
				return fmt.Errorf("filestore: %w", err)
			}
			s.report.RemovedFiles++
		}
	}

	names := make(map[string]string)
	intern := func(b []byte) string {
		if n, ok := names[string(b)]; ok {
			return n
		}
		n := string(b)
		names[n] = n
		return n
	}
	var scans []*blockScan
	s.open = &openScratch{}
	defer func() { s.open = nil }()
	for i, id := range ids {
		b, sc, err := s.openBlock(id, i == len(ids)-1, indexes[id], intern)
		if err != nil {
			return err
		}
		if b != nil {
			if !b.needIndex && i != len(ids)-1 {
				// Read again block by block when the index is built,
				// so Open holds one block's scan at a time.
				s.open.putMsgs(sc.msgs)
				sc.msgs = nil
				sc.reread = true
			}
			s.blocks = append(s.blocks, b)
			scans = append(scans, sc)
		}
		s.nextID = id + 1
	}
	if s.nextID == 0 {
		s.nextID = 1
	}
	s.report.Blocks = len(s.blocks)
	s.buildIndex(scans, intern)

	if n := len(s.blocks); n > 0 {
		last := s.blocks[n-1]
		if !last.corruptHeader && !last.compressed() {
			s.active = last
			// The last block file may have been an empty one Open
			// removed: the block before it, evicted, is active now.
			s.ents(last)
		}
	}
	for _, b := range s.blocks {
		if b != s.active {
			b.sealed = true
			b.needCompress = s.compression == CompressionS2 && !b.compressed()
		}
	}
	if s.active == nil {
		if err := s.roll(); err != nil {
			return err
		}
	}
	// Index files for the blocks just scanned, so the next Open need not.
	for i, b := range s.blocks {
		if b.needIndex && b.sealed && !b.corruptHeader && i < len(scans) {
			sc := scans[i]
			if !b.compressed() {
				sc.rawLen = b.written
			}
			meta := indexMeta{id: b.id, flags: b.hdr.flags, stamp: b.hdr.stamp, fileSize: b.fileSize}
			sum, err := readTailSum(b.file, b.fileSize)
			if err != nil {
				continue
			}
			meta.tailSum = sum
			if writeIndex(s.fsys, s.dir, s.key, meta, sc) == nil {
				b.needIndex = false
			}
		}
	}
	s.enforceAllSubjectLimits()
	s.enforceDiscardOld(0)
	s.rearmExpiry()
	s.deadBlocks = true
	s.reapLocked()
	s.evictLocked()
	return nil
}

// openBlock opens block file id and reads its index file or its records.
// It returns a nil block for an empty file left by a creation cut short.
func (s *Stream) openBlock(id uint32, last, hasIndex bool, intern func([]byte) string) (*block, *blockScan, error) {
	name := blockName(s.dir, id)
	f, err := s.fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("filestore: %w", err)
	}
	fail := func(err error) (*block, *blockScan, error) {
		f.Close()
		return nil, nil, fmt.Errorf("filestore: block %d: %w", id, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	size := fi.Size()
	head := make([]byte, min(size, blockHeaderLen))
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	h, herr := parseBlockHeader(head)
	if herr != nil && last && size <= blockHeaderLen {
		// The header is written and synced before any record, so this is
		// a block whose creation was cut short: nothing in it was ever
		// acknowledged.
		f.Close()
		if err := s.fsys.Remove(name); err != nil {
			return nil, nil, fmt.Errorf("filestore: %w", err)
		}
		_ = removeIfExists(s.fsys, indexName(s.dir, id))
		s.report.RemovedFiles++
		s.report.TruncatedBytes += size
		return nil, nil, nil
	}
	b := &block{id: id, file: f, fileSize: size}
	if herr != nil || h.id != id {
		s.report.CorruptBlocks++
		b.corruptHeader = true
		h = blockHeader{id: id}
	}
	b.hdr = h
	b.maxSeq, b.lastTime = h.baseSeq, h.baseTime

	var sc *blockScan
	covered := int64(0) // body bytes the index file covers
	if hasIndex && !b.corruptHeader {
		// The messages of a block before the last are read again when
		// the block's entries are built (buildIndex), so here they are
		// skipped where the index file allows.
		sc, covered = s.loadIndex(b, size, intern, !last)
	}
	bodyLen := max(size-blockHeaderLen, 0)
	if sc == nil || covered < bodyLen {
		body := make([]byte, bodyLen-covered)
		if _, err := f.ReadAt(body, blockHeaderLen+covered); err != nil && !errors.Is(err, io.EOF) {
			return fail(err)
		}
		tail := scanBody(body, b.compressed(), s.key, intern)
		if sc == nil {
			sc = &tail
			s.report.ScannedBlocks++
		} else {
			sc.merge(&tail, covered)
		}
		b.needIndex = true
		if tail.res.tail > 0 {
			end := covered + int64(tail.res.end)
			if last && !b.corruptHeader && !b.compressed() {
				if err := f.Truncate(blockHeaderLen + end); err != nil {
					return fail(err)
				}
				if err := f.Sync(); err != nil {
					return fail(err)
				}
				size = blockHeaderLen + end
				s.report.TruncatedBytes += tail.res.tail
				s.report.DroppedRecords += max(tail.res.tailRecords, 1)
			} else {
				s.report.CorruptRecords += max(tail.res.tailRecords, 1)
				s.report.CorruptBytes += tail.res.tail
			}
		}
		s.report.CorruptRecords += tail.res.corruptRecords
		s.report.CorruptBytes += tail.res.corruptBytes
	}
	b.fileSize = size
	if b.compressed() {
		b.chunks = sc.chunks
		b.rawLen = sc.rawLen
	} else {
		b.written = size - blockHeaderLen
		if b.written < 0 {
			b.written = 0
		}
		b.rawLen = b.written
	}
	for _, t := range sc.tombs {
		b.addTombstone(t.first, t.last)
	}
	if sc.maxSeq > b.maxSeq {
		b.maxSeq, b.lastTime = sc.maxSeq, sc.lastTime
	}
	if b.corruptHeader {
		b.repair = true
	}
	return b, sc, nil
}

// loadIndex reads b's index file and returns its contents and the body
// bytes it covers, or nil when it is missing, corrupt or describes another
// version of the block. With skim the messages are left out (msgs nil)
// where the file allows it and the index covers the whole block; the
// caller reads them later with skim false.
func (s *Stream) loadIndex(b *block, size int64, intern func([]byte) string, skim bool) (*blockScan, int64) {
	data, err := readIndexInto(s.fsys, s.dir, s.key, b.id, s.open.takeData())
	if err != nil {
		s.report.StaleIndexes++
		return nil, 0
	}
	defer s.open.putData(data) // parseIndexInto copies what it keeps
	var meta indexMeta
	var sc blockScan
	skipped := false
	if skim {
		msgs := s.open.takeMsgs()
		meta, sc, skipped, err = parseIndexSkim(data, intern, msgs)
		if skipped {
			s.open.putMsgs(msgs)
		}
		if skipped && meta.fileSize != size {
			// The block goes on after what the index covers: its
			// messages are merged with the tail's now.
			meta, sc, err = parseIndexInto(data, intern, s.open.takeMsgs())
		}
	} else {
		meta, sc, err = parseIndexInto(data, intern, s.open.takeMsgs())
	}
	ok := err == nil && meta.id == b.id && meta.stamp == b.hdr.stamp && meta.flags == b.hdr.flags
	if ok && b.compressed() {
		ok = meta.fileSize == size && sc.rawLen > 0
	} else if ok {
		ok = meta.fileSize <= size && sc.rawLen <= meta.fileSize-blockHeaderLen
	}
	if ok {
		sum, err := readTailSum(b.file, meta.fileSize)
		ok = err == nil && sum == meta.tailSum
	}
	if !ok {
		s.report.StaleIndexes++
		return nil, 0
	}
	return &sc, meta.fileSize - blockHeaderLen
}

// merge appends the scan of the body bytes after offset covered.
func (sc *blockScan) merge(tail *blockScan, covered int64) {
	for _, m := range tail.msgs {
		m.off += uint32(covered)
		sc.msgs = append(sc.msgs, m)
	}
	sc.tombs = append(sc.tombs, tail.tombs...)
	if tail.maxSeq > sc.maxSeq {
		sc.maxSeq, sc.lastTime = tail.maxSeq, tail.lastTime
	}
	sc.rawLen = covered + tail.rawLen
}

// buildIndex turns the block scans into the in-memory index: entries in
// ascending sequence order, tombstones applied, subjects counted, and the
// stream's state.
func (s *Stream) buildIndex(scans []*blockScan, intern func([]byte) string) {
	var tombs []seqRange
	for _, sc := range scans {
		tombs = append(tombs, sc.tombs...)
	}
	tombs = mergeRanges(tombs)
	t := 0
	var prevSeq, prevMax uint64
	var prevTime int64
	limit := s.loader.limit.Load()
	var resident int64
	for i, b := range s.blocks {
		sc := scans[i]
		if sc.reread {
			sc.msgs = s.rereadMsgs(b, intern)
			if b.entries == nil {
				b.entries = s.open.takeEntries(len(sc.msgs))
			}
		}
		for _, m := range sc.msgs {
			if m.seq <= prevSeq {
				// Out of order: a duplicate or a record that cannot be
				// where it is.
				s.report.CorruptRecords++
				continue
			}
			prevSeq = m.seq
			for t < len(tombs) && tombs[t].last < m.seq {
				t++
			}
			if b.minSeq == 0 {
				b.minSeq = m.seq
			}
			if t < len(tombs) && tombs[t].first <= m.seq {
				continue
			}
			ss := s.subjects.intern(m.subject)
			e := entry{seq: m.seq, ts: m.ts, off: m.off, length: m.length, subj: ss.id, flags: s.entryFlags()}
			if m.hdr {
				e.flags |= entryHdr
			}
			switch {
			case m.ttl > 0:
				e.flags |= entryTTL
				s.expiry.Live++
				s.expiry.TTLs.Push(expiry.Item{At: m.ts + m.ttl, Seq: m.seq})
			case m.ttl < 0:
				e.flags |= entryNoAge
			}
			b.entries = append(b.entries, e)
			b.live++
			b.liveBytes += e.size()
			ss.add(m.seq)
			if s.msgs == 0 {
				s.firstSeq = m.seq
			}
			s.msgs++
			s.bytes += e.size()
		}
		if sc.reread {
			s.open.putMsgs(sc.msgs)
			sc.msgs = nil
			cost := int64(cap(b.entries)) * entrySize
			if es := b.entries; resident+cost > limit && len(es) > 0 && s.evictBlock(b) {
				s.open.putEntries(es)
			} else {
				resident += cost
			}
		}
		// Keep maxSeq ascending across blocks even where a header was
		// lost.
		if b.maxSeq < prevMax {
			b.maxSeq, b.lastTime = prevMax, prevTime
		}
		prevMax, prevTime = b.maxSeq, b.lastTime
	}
	for _, ss := range s.subjects.byName {
		if ss.msgs == 0 {
			s.subjects.drop(ss)
		}
	}
	s.lastSeq, s.lastTime = prevMax, prevTime
	if s.msgs == 0 && s.lastSeq > 0 {
		s.firstSeq = s.lastSeq + 1
	}
}

// rereadMsgs reads the messages of block b again from its index file, which
// Open found good, or from the block when that fails now.
func (s *Stream) rereadMsgs(b *block, intern func([]byte) string) []scannedMsg {
	report := s.report
	sc, _ := s.loadIndex(b, b.fileSize, intern, false)
	s.report = report
	if sc != nil {
		return sc.msgs
	}
	// The first read may have skipped the messages section (see
	// loadIndex), so a bad one shows here: the block is read record by
	// record, and counted as such.
	s.report.StaleIndexes++
	s.report.ScannedBlocks++
	body := make([]byte, max(b.fileSize-blockHeaderLen, 0))
	if _, err := b.file.ReadAt(body, blockHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		b.needIndex = true
		return nil
	}
	b.needIndex = true
	full := scanBody(body, b.compressed(), s.key, intern)
	return full.msgs
}

// mergeRanges sorts ranges and merges overlapping or adjacent ones.
func mergeRanges(rs []seqRange) []seqRange {
	if len(rs) == 0 {
		return nil
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].first < rs[j].first })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.first <= last.last+1 {
			last.last = max(last.last, r.last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// writeBlockIndex scans block b from its file and writes its index file.
// The caller holds s.mu and makes sure b is not appended to or rewritten
// meanwhile.
func (s *Stream) writeBlockIndex(b *block) error {
	if b.corruptHeader || b.file == nil {
		return nil
	}
	if len(b.buf) > 0 {
		return fmt.Errorf("filestore: index of block %d with buffered records", b.id)
	}
	var err error
	if sc := s.scanFromEntries(b); sc != nil {
		err = s.writeIndexFrom(b.file, s.indexMetaOf(b), sc)
	} else {
		err = s.buildIndexFile(b.file, s.indexMetaOf(b))
	}
	if err != nil {
		return err
	}
	b.needIndex = false
	return nil
}

// scanFromEntries returns what scanning uncompressed block b would find,
// taken from its entries, when those describe every record in it: no
// tombstone, no deleted or erased message, no TTL (entries keep only its
// sign). Otherwise, or for a compressed or evicted block, it returns nil
// and the index file is built by reading the block. The caller holds
// s.mu and has flushed b's buffer.
func (s *Stream) scanFromEntries(b *block) *blockScan {
	if b.compressed() || b.evicted.Load() || len(b.buf) > 0 || b.tombBytes != 0 || b.deleted != 0 ||
		b.rawLen != b.written || b.rawLen != int64(b.liveBytes)+int64(b.live)*s.recordAdjust() || b.live != len(b.entries) {
		return nil
	}
	sc := &blockScan{msgs: make([]scannedMsg, len(b.entries)), rawLen: b.written}
	for i, e := range b.entries {
		if e.flags&entryTTL != 0 {
			return nil
		}
		m := scannedMsg{seq: e.seq, ts: e.ts, off: e.off, length: e.length, subject: s.subjects.byID[e.subj].name, hdr: e.flags&entryHdr != 0}
		if e.flags&entryNoAge != 0 {
			m.ttl = -1
		}
		sc.msgs[i] = m
	}
	if n := len(b.entries); n > 0 {
		sc.maxSeq, sc.lastTime = b.entries[n-1].seq, b.entries[n-1].ts
	}
	return sc
}

// writeIndexFrom writes the index file of the block meta describes from
// sc, reading only the block's last bytes for the tail checksum. It needs
// no lock.
func (s *Stream) writeIndexFrom(f vfs.File, meta indexMeta, sc *blockScan) error {
	sum, err := readTailSum(f, meta.fileSize)
	if err != nil {
		return fmt.Errorf("filestore: read block %d: %w", meta.id, err)
	}
	meta.tailSum = sum
	if err := writeIndex(s.fsys, s.dir, s.key, meta, sc); err != nil {
		return fmt.Errorf("filestore: index of block %d: %w", meta.id, err)
	}
	return nil
}

// indexMetaOf describes b's file for its index; the caller holds s.mu.
func (s *Stream) indexMetaOf(b *block) indexMeta {
	return indexMeta{id: b.id, flags: b.hdr.flags, stamp: b.hdr.stamp, fileSize: b.fileSize}
}

// buildIndexFile reads the first meta.fileSize bytes of a block file,
// scans them and writes the block's index file. It needs no lock.
func (s *Stream) buildIndexFile(f vfs.File, meta indexMeta) error {
	size := meta.fileSize - blockHeaderLen
	body := make([]byte, size)
	if _, err := f.ReadAt(body, blockHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("filestore: read block %d: %w", meta.id, err)
	}
	names := make(map[string]string)
	sc := scanBody(body, meta.flags&flagS2 != 0, s.key, func(p []byte) string {
		if n, ok := names[string(p)]; ok {
			return n
		}
		n := string(p)
		names[n] = n
		return n
	})
	if meta.flags&flagS2 == 0 {
		sc.rawLen = size
	}
	if lo, hi := tailRange(meta.fileSize); lo < hi {
		meta.tailSum = crc32.Checksum(body[lo-blockHeaderLen:], crcTable)
	}
	if err := writeIndex(s.fsys, s.dir, s.key, meta, &sc); err != nil {
		return fmt.Errorf("filestore: index of block %d: %w", meta.id, err)
	}
	return nil
}

// openScratch is the buffers Open passes from block to block, so that
// reading a stream of many blocks allocates about one block's worth: the
// bytes of an index file, the messages decoded from it, and the entries
// of a block that was evicted right after it was built. A buffer taken
// is owned by the taker until it is put back; one that stays in use (the
// messages of a block whose index must be written, the entries of a
// resident block) is simply not put back.
type openScratch struct {
	data    []byte
	msgs    []scannedMsg
	entries []entry
}

// takeData hands over the file bytes buffer (nil when there is none).
func (o *openScratch) takeData() []byte {
	if o == nil {
		return nil
	}
	d := o.data
	o.data = nil
	return d
}

// putData gives a file bytes buffer back.
func (o *openScratch) putData(d []byte) {
	if o != nil && cap(d) > cap(o.data) {
		o.data = d[:0]
	}
}

// takeMsgs hands over the messages buffer (nil when there is none).
func (o *openScratch) takeMsgs() []scannedMsg {
	if o == nil {
		return nil
	}
	m := o.msgs
	o.msgs = nil
	return m
}

// putMsgs gives a messages buffer back, its strings cleared so that it
// pins no subject.
func (o *openScratch) putMsgs(m []scannedMsg) {
	if o != nil && cap(m) > cap(o.msgs) {
		clear(m)
		o.msgs = m[:0]
	}
}

// takeEntries returns an empty entries buffer with room for n, the one
// put back when it is large enough, else nil (append allocates).
func (o *openScratch) takeEntries(n int) []entry {
	if o == nil || cap(o.entries) < n {
		return nil
	}
	e := o.entries[:0]
	o.entries = nil
	return e
}

// putEntries gives back the entries of a block evicted right after they
// were built.
func (o *openScratch) putEntries(e []entry) {
	if o != nil && cap(e) > cap(o.entries) {
		o.entries = e[:0]
	}
}
