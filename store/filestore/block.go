package filestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Block file layout constants; see doc.go.
const (
	blockMagic     = "LFBK"
	formatVersion  = 1
	blockHeaderLen = 48
	// flagS2 marks a block whose body is a sequence of s2 chunk frames.
	flagS2 = 1 << 0

	chunkMagic     = 0xC5
	chunkHeaderLen = 24
	// chunkTarget is the raw size at which a compressed block starts a
	// new chunk: a corrupt chunk loses at most this much plus one record,
	// and a load decodes no more than this.
	chunkTarget = 64 << 10

	blockExt = ".blk"
	indexExt = ".idx"
	tmpExt   = ".tmp"
)

var (
	errBadBlockHeader = fmt.Errorf("%w: filestore: bad block header", store.ErrCorrupt)
	errBadChunk       = fmt.Errorf("%w: filestore: bad compressed chunk", store.ErrCorrupt)
)

// blockHeader is the fixed header at the start of every block file.
type blockHeader struct {
	flags uint8
	id    uint32
	// baseSeq and baseTime are the stream's last sequence and its time
	// when the block was created, so the sequence survives even when
	// every message is gone.
	baseSeq  uint64
	baseTime int64
	// stamp changes whenever the file is rewritten, so an index file can
	// tell whether it still describes it.
	stamp uint64
}

func appendBlockHeader(dst []byte, h blockHeader) []byte {
	start := len(dst)
	dst = append(dst, blockMagic...)
	dst = append(dst, formatVersion, h.flags, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, h.id)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, h.baseSeq)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(h.baseTime))
	dst = binary.LittleEndian.AppendUint64(dst, h.stamp)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

func parseBlockHeader(b []byte) (blockHeader, error) {
	if len(b) < blockHeaderLen || string(b[:4]) != blockMagic {
		return blockHeader{}, errBadBlockHeader
	}
	if crc32.Checksum(b[:blockHeaderLen-4], crcTable) != binary.LittleEndian.Uint32(b[blockHeaderLen-4:]) {
		return blockHeader{}, errBadBlockHeader
	}
	if b[4] != formatVersion {
		return blockHeader{}, fmt.Errorf("%w: filestore: block format version %d, want %d", store.ErrCorrupt, b[4], formatVersion)
	}
	if b[5]&^flagS2 != 0 {
		return blockHeader{}, errBadBlockHeader
	}
	return blockHeader{
		flags:    b[5],
		id:       binary.LittleEndian.Uint32(b[8:]),
		baseSeq:  binary.LittleEndian.Uint64(b[16:]),
		baseTime: int64(binary.LittleEndian.Uint64(b[24:])),
		stamp:    binary.LittleEndian.Uint64(b[32:]),
	}, nil
}

// chunkRef locates one compressed chunk: the raw (logical) range it holds
// and where its frame sits in the file.
type chunkRef struct {
	rawOff, rawLen   uint32
	fileOff, compLen uint32
}

// appendCompressed appends raw, a sequence of whole records, as s2 chunk
// frames and returns the chunks' references (fileOff relative to the first
// frame). Chunks end at record boundaries taken from ends (ascending
// offsets just past each record), so no record spans two chunks.
func appendCompressed(dst, raw []byte, ends []int) ([]byte, []chunkRef) {
	base := len(dst)
	start := 0
	var enc []byte
	var chunks []chunkRef
	for i, end := range ends {
		if end-start < chunkTarget && i != len(ends)-1 {
			continue
		}
		enc = s2.Encode(enc[:cap(enc)], raw[start:end])
		h := len(dst)
		chunks = append(chunks, chunkRef{rawOff: uint32(start), rawLen: uint32(end - start), fileOff: uint32(h - base), compLen: uint32(len(enc))})
		dst = append(dst, chunkMagic, 0, 0, 0)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(start))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(end-start))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(enc)))
		dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(enc, crcTable))
		dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[h:], crcTable))
		dst = append(dst, enc...)
		start = end
	}
	return dst, chunks
}

// parseChunkHeader checks the frame header at the start of b.
func parseChunkHeader(b []byte) (chunkRef, uint32, error) {
	if len(b) < chunkHeaderLen || b[0] != chunkMagic {
		return chunkRef{}, 0, errBadChunk
	}
	if crc32.Checksum(b[:chunkHeaderLen-4], crcTable) != binary.LittleEndian.Uint32(b[chunkHeaderLen-4:]) {
		return chunkRef{}, 0, errBadChunk
	}
	c := chunkRef{
		rawOff:  binary.LittleEndian.Uint32(b[4:]),
		rawLen:  binary.LittleEndian.Uint32(b[8:]),
		compLen: binary.LittleEndian.Uint32(b[12:]),
	}
	if c.rawLen > maxRecordLen+chunkTarget || c.compLen > maxRecordLen+chunkTarget {
		return chunkRef{}, 0, errBadChunk
	}
	return c, binary.LittleEndian.Uint32(b[16:]), nil
}

// decodeChunk verifies and decompresses the frame at the start of b.
func decodeChunk(b []byte) (chunkRef, []byte, error) {
	c, sum, err := parseChunkHeader(b)
	if err != nil {
		return c, nil, err
	}
	end := chunkHeaderLen + int(c.compLen)
	if len(b) < end {
		return c, nil, errBadChunk
	}
	comp := b[chunkHeaderLen:end]
	if crc32.Checksum(comp, crcTable) != sum {
		return c, nil, errBadChunk
	}
	if n, err := s2.DecodedLen(comp); err != nil || n != int(c.rawLen) {
		return c, nil, errBadChunk
	}
	raw, err := s2.Decode(nil, comp)
	if err != nil || len(raw) != int(c.rawLen) {
		return c, nil, errBadChunk
	}
	return c, raw, nil
}

// scanChunks walks the chunk frames of a compressed body (the file bytes
// after the block header), calling fn with each good chunk's reference
// (fileOff relative to body) and raw bytes. Bad frames are skipped by
// searching for the next valid one and counted in the result.
func scanChunks(body []byte, fn func(c chunkRef, raw []byte)) scanResult {
	var res scanResult
	off := 0
	for off < len(body) {
		c, raw, err := decodeChunk(body[off:])
		if err == nil {
			c.fileOff = uint32(off)
			fn(c, raw)
			off += chunkHeaderLen + int(c.compLen)
			res.end = off
			continue
		}
		next := -1
		for i := off + 1; i+chunkHeaderLen <= len(body); i++ {
			if body[i] != chunkMagic {
				continue
			}
			if _, _, err := decodeChunk(body[i:]); err == nil {
				next = i
				break
			}
		}
		if next < 0 {
			res.tail = int64(len(body) - off)
			res.tailRecords = 1
			return res
		}
		res.noteBad(off)
		res.corruptRecords++
		res.corruptBytes += int64(next - off)
		off = next
	}
	return res
}

// entry is the in-memory index of one message: where its record is and
// what the stream needs without reading it.
type entry struct {
	seq uint64
	ts  int64
	// off is the record's logical offset in its block's body and length
	// its record length; length 0 marks a deleted entry.
	off    uint32
	length uint32
	subj   uint32
	flags  uint8
}

// Entry flags.
const (
	entryTTL   = 1 << 0 // has a per-message expiry
	entryNoAge = 1 << 1 // exempt from MaxAge
	// entrySealed marks a sealed record, sealOverhead bytes longer than
	// its accounting size says.
	entrySealed = 1 << 2
	// entryHdr marks a message that carries a header, or may: one read
	// from an index file of version 1, which does not say.
	entryHdr = 1 << 3
)

func (e *entry) live() bool { return e.length != 0 }

// size is the message's accounting size (store.Size).
func (e *entry) size() uint64 {
	if e.flags&entrySealed != 0 {
		return uint64(e.length) - sizeAdjust - sealOverhead
	}
	return uint64(e.length) - sizeAdjust
}

// block is one block file and the index of the messages in it. Blocks are
// owned by their Stream and guarded by its mutex, except where noted.
type block struct {
	id   uint32
	file vfs.File
	hdr  blockHeader
	// corruptHeader marks a block whose header failed its checks; its
	// records were salvaged but nothing is ever appended to it.
	corruptHeader bool
	// chunks maps the raw body of a compressed block to its frames; nil
	// until first needed.
	chunks []chunkRef
	// fileSize is the size of the file on disk (header included) as far
	// as this process wrote or read it.
	fileSize int64
	// rawLen is the logical body length: records in the file (written of
	// them, for an uncompressed block) plus buf.
	rawLen  int64
	written int64
	buf     []byte
	// tailDirty says a failed write may have left bytes after written
	// that a truncate has not yet removed.
	tailDirty bool

	// entries indexes the block's messages in sequence order; deleted
	// entries (length 0) stay until compaction of the slice, but never at
	// either end.
	entries   []entry
	deleted   int
	live      int
	liveBytes uint64
	// minSeq and maxSeq span the message records physically present;
	// maxSeq is at least hdr.baseSeq and minSeq is 0 when there are none.
	minSeq, maxSeq uint64
	lastTime       int64
	// tombFirst and tombLast span the sequences the block's tombstones
	// delete (0, 0: none). While another block holds records in that
	// span, this block must stay.
	tombFirst, tombLast uint64
	// tombBytes is the size of the block's tombstone records.
	tombBytes int64
	// gen counts in-place changes (erase), so background rewrites can
	// notice that the file changed under them.
	gen uint64

	// evicted says entries is not in memory (see cache.go): the block's
	// live messages are then those in liveLo..liveHi outside gaps, and
	// live, liveBytes, minSeq and maxSeq still hold. used is the index
	// cache's last use of the block.
	evicted        atomic.Bool
	liveLo, liveHi uint64
	gaps           []seqRange
	// subjs lists the subject ids of an evicted block's live messages
	// (nil: more than maxBlockSubjects, unknown).
	subjs []uint32
	// noHdrs says none of an evicted block's live messages carries a
	// header (no entry had entryHdr), so LoadNextWithHeader skips it.
	noHdrs bool
	used   atomic.Uint64

	sealed bool
	// Work for the maintenance goroutine: write the index file, rewrite
	// compressed, rewrite with a sound header.
	needIndex, needCompress, repair bool
}

func (b *block) compressed() bool { return b.hdr.flags&flagS2 != 0 }

func blockName(dir string, id uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%010d%s", id, blockExt))
}

func indexName(dir string, id uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%010d%s", id, indexExt))
}

// parseFileName returns the block id and extension of a stream file name.
func parseFileName(name string) (uint32, string, bool) {
	ext := filepath.Ext(name)
	if ext == tmpExt {
		return 0, ext, true
	}
	base := strings.TrimSuffix(name, ext)
	id, err := strconv.ParseUint(base, 10, 32)
	if err != nil || (ext != blockExt && ext != indexExt) {
		return 0, "", false
	}
	return uint32(id), ext, true
}

// addEntry appends e to the block's index; the caller keeps sequences
// ascending.
func (b *block) addEntry(e entry) {
	b.entries = append(b.entries, e)
	b.live++
	b.liveBytes += e.size()
	if b.minSeq == 0 {
		b.minSeq = e.seq
	}
	if e.seq > b.maxSeq {
		b.maxSeq = e.seq
		b.lastTime = e.ts
	}
}

// find returns the index of seq's entry, or -1.
func (b *block) find(seq uint64) int {
	es := b.entries
	lo, hi := 0, len(es)
	// Entries are usually dense: try the direct position first.
	if len(es) > 0 && seq >= es[0].seq {
		if i := seq - es[0].seq; i < uint64(len(es)) && es[i].seq == seq {
			return int(i)
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(es) && es[lo].seq == seq {
		return lo
	}
	return -1
}

// search returns the index of the first entry with sequence ≥ seq.
func (b *block) search(seq uint64) int {
	es := b.entries
	lo, hi := 0, len(es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if es[m].seq < seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// deleteAt marks entry i deleted and keeps both ends of the slice live.
func (b *block) deleteAt(i int) {
	e := &b.entries[i]
	b.live--
	b.liveBytes -= e.size()
	e.length = 0
	b.deleted++
	// Trim deleted entries from both ends.
	lo, hi := 0, len(b.entries)
	for lo < hi && !b.entries[lo].live() {
		lo++
	}
	for hi > lo && !b.entries[hi-1].live() {
		hi--
	}
	b.deleted -= lo + len(b.entries) - hi
	b.entries = b.entries[lo:hi]
	if b.live == 0 {
		b.entries = nil
		b.deleted = 0
		return
	}
	if b.deleted > 32 && b.deleted*2 > len(b.entries) {
		kept := make([]entry, 0, b.live)
		for _, e := range b.entries {
			if e.live() {
				kept = append(kept, e)
			}
		}
		b.entries, b.deleted = kept, 0
	}
}

// addTombstone notes that the block holds a tombstone record for
// first..last.
func (b *block) addTombstone(first, last uint64) {
	b.tombBytes += recordOverhead
	if b.tombFirst == 0 || first < b.tombFirst {
		b.tombFirst = first
	}
	b.tombLast = max(b.tombLast, last)
}

// record returns the record of compressed block b at logical offset off
// with the given length, a slice of a decoded chunk that is never written
// again. The caller holds the stream's read lock.
func (c *chunkCache) record(b *block, off, length uint32) ([]byte, error) {
	raw, rawOff, err := c.load(b, off)
	if err != nil {
		return nil, err
	}
	i := off - rawOff
	if uint64(i)+uint64(length) > uint64(len(raw)) {
		return nil, fmt.Errorf("%w: filestore: record crosses a chunk of block %d", store.ErrCorrupt, b.id)
	}
	return raw[i : i+length], nil
}

// loadChunks builds the chunk table of a compressed block by reading its
// frame headers.
func (b *block) loadChunks() ([]chunkRef, error) {
	body := make([]byte, b.fileSize-blockHeaderLen)
	if _, err := b.file.ReadAt(body, blockHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("filestore: read block %d: %w", b.id, err)
	}
	var chunks []chunkRef
	off := 0
	for off+chunkHeaderLen <= len(body) {
		c, _, err := parseChunkHeader(body[off:])
		if err != nil || off+chunkHeaderLen+int(c.compLen) > len(body) {
			// Find the next plausible frame header.
			off++
			for off+chunkHeaderLen <= len(body) && body[off] != chunkMagic {
				off++
			}
			continue
		}
		c.fileOff = uint32(off)
		chunks = append(chunks, c)
		off += chunkHeaderLen + int(c.compLen)
	}
	return chunks, nil
}

// chunkCache keeps the last few decompressed chunks so that reading a
// compressed block in order decodes each chunk once. It has its own lock
// because loads run under the stream's read lock.
type chunkCache struct {
	mu      sync.Mutex
	entries [4]cachedChunk
	next    int
}

type cachedChunk struct {
	block  *block
	stamp  uint64
	rawOff uint32
	raw    []byte
}

// load returns the decoded chunk of b holding logical offset off and the
// chunk's raw offset. The caller holds the stream's read lock.
func (c *chunkCache) load(b *block, off uint32) ([]byte, uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.block == b && e.stamp == b.hdr.stamp && off >= e.rawOff && uint64(off) < uint64(e.rawOff)+uint64(len(e.raw)) {
			return e.raw, e.rawOff, nil
		}
	}
	if b.chunks == nil {
		chunks, err := b.loadChunks()
		if err != nil {
			return nil, 0, err
		}
		b.chunks = chunks
	}
	i := -1
	for j, ch := range b.chunks {
		if off >= ch.rawOff && uint64(off) < uint64(ch.rawOff)+uint64(ch.rawLen) {
			i = j
			break
		}
	}
	if i < 0 {
		return nil, 0, fmt.Errorf("%w: filestore: no chunk of block %d holds offset %d", store.ErrCorrupt, b.id, off)
	}
	ch := b.chunks[i]
	frame := make([]byte, chunkHeaderLen+int(ch.compLen))
	if _, err := b.file.ReadAt(frame, blockHeaderLen+int64(ch.fileOff)); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("filestore: read block %d: %w", b.id, err)
	}
	_, raw, err := decodeChunk(frame)
	if err != nil {
		return nil, 0, fmt.Errorf("block %d chunk at %d: %w", b.id, ch.fileOff, err)
	}
	c.entries[c.next] = cachedChunk{block: b, stamp: b.hdr.stamp, rawOff: ch.rawOff, raw: raw}
	c.next = (c.next + 1) % len(c.entries)
	return raw, ch.rawOff, nil
}

// forget drops cached chunks of b, after it was rewritten or removed.
func (c *chunkCache) forget(b *block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		if c.entries[i].block == b {
			c.entries[i] = cachedChunk{}
		}
	}
}
