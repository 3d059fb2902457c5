package filestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// subjectState indexes the live messages of one subject. first and last
// are bounds that deletions keep safe without scanning: first is never
// after the subject's first message and last never before its last one;
// the stale flags say a bound may not be exact.
type subjectState struct {
	name        string
	id          uint32
	msgs        uint64
	first, last uint64
	firstStale  bool
	lastStale   bool
}

// subjectIndex interns subjects and numbers them, so that index entries
// carry a 4-byte id instead of a string.
type subjectIndex struct {
	byName map[string]*subjectState
	byID   []*subjectState
	free   []uint32
}

func newSubjectIndex() subjectIndex {
	return subjectIndex{byName: make(map[string]*subjectState)}
}

// intern returns the state for name, creating it with no messages.
func (x *subjectIndex) intern(name string) *subjectState {
	if ss := x.byName[name]; ss != nil {
		return ss
	}
	ss := &subjectState{name: strings.Clone(name)}
	if n := len(x.free); n > 0 {
		ss.id = x.free[n-1]
		x.free = x.free[:n-1]
		x.byID[ss.id] = ss
	} else {
		ss.id = uint32(len(x.byID))
		x.byID = append(x.byID, ss)
	}
	x.byName[ss.name] = ss
	return ss
}

// drop forgets a subject that has no messages left.
func (x *subjectIndex) drop(ss *subjectState) {
	delete(x.byName, ss.name)
	x.byID[ss.id] = nil
	x.free = append(x.free, ss.id)
}

// add records a new message of ss with sequence seq, the newest.
func (ss *subjectState) add(seq uint64) {
	if ss.msgs == 0 {
		ss.first, ss.firstStale = seq, false
	}
	ss.msgs++
	ss.last, ss.lastStale = seq, false
}

// removed updates the bounds after message seq of ss went away; it
// reports whether the subject is now empty.
func (ss *subjectState) removed(seq uint64) bool {
	ss.msgs--
	if ss.msgs == 0 {
		return true
	}
	if seq == ss.first {
		ss.first, ss.firstStale = seq+1, true
	}
	if seq == ss.last {
		ss.last, ss.lastStale = seq-1, true
	}
	if ss.msgs == 1 {
		switch {
		case !ss.lastStale:
			ss.first, ss.firstStale = ss.last, false
		case !ss.firstStale:
			ss.last, ss.lastStale = ss.first, false
		}
	}
	return false
}

// seqRange is an inclusive range of sequences.
type seqRange struct{ first, last uint64 }

// scannedMsg is one message record found in a block.
type scannedMsg struct {
	seq     uint64
	ts      int64
	ttl     int64
	off     uint32
	length  uint32
	subject string
	// hdr says the message carries a header, or may (an index file of
	// version 1 does not say).
	hdr bool
}

// blockScan is everything the stream needs from one block file: the
// result of reading it record by record, and what an index file stores.
type blockScan struct {
	msgs  []scannedMsg
	tombs []seqRange
	// maxSeq and lastTime come from the newest message or erased record.
	maxSeq   uint64
	lastTime int64
	// rawLen is the logical body length covered.
	rawLen int64
	chunks []chunkRef
	res    scanResult
	// reread says msgs was dropped after Open checked the index file, to
	// be read again when the block's entries are built.
	reread bool
}

// add takes one record found at logical offset off.
func (sc *blockScan) add(off int, r *record, intern func([]byte) string) {
	switch r.kind {
	case kindMsg:
		sc.msgs = append(sc.msgs, scannedMsg{
			seq: r.seq, ts: r.ts, ttl: r.ttl, off: uint32(off),
			length:  uint32(r.len()),
			subject: intern(r.subject),
			hdr:     r.hasHeader(),
		})
	case kindTombstone:
		sc.tombs = append(sc.tombs, seqRange{r.seq, uint64(r.ts)})
		return
	}
	if r.seq > sc.maxSeq {
		sc.maxSeq, sc.lastTime = r.seq, r.ts
	}
}

// scanBody reads the records of a block body. For an uncompressed body
// offsets are positions in body; a compressed body is decoded chunk by
// chunk. k opens sealed records (nil for a plaintext stream). intern turns
// subject bytes into a string.
func scanBody(body []byte, compressed bool, k *sealer, intern func([]byte) string) blockScan {
	var sc blockScan
	if !compressed {
		sc.res = scanOpen(body, k, func(off int, r *record) { sc.add(off, r, intern) })
		sc.rawLen = int64(sc.res.end)
		return sc
	}
	sc.res = scanChunks(body, func(c chunkRef, raw []byte) {
		sc.chunks = append(sc.chunks, c)
		inner := scanOpen(raw, k, func(off int, r *record) { sc.add(int(c.rawOff)+off, r, intern) })
		// Inside a verified chunk everything should parse.
		if inner.corruptRecords > 0 || inner.tail > 0 {
			sc.res.noteBad(int(c.fileOff))
		}
		sc.res.refused += inner.refused
		sc.res.corruptRecords += inner.corruptRecords
		sc.res.corruptBytes += inner.corruptBytes
		if inner.tail > 0 {
			sc.res.corruptRecords += max(inner.tailRecords, 1)
			sc.res.corruptBytes += inner.tail
		}
		sc.rawLen = max(sc.rawLen, int64(c.rawOff)+int64(len(raw)))
	})
	return sc
}

// Index file layout constants; see doc.go.
const (
	indexMagic = "LFIX"
	// indexVersion is the version of the index files written. Version 2
	// adds a header flag to each message (bit 0 of its subject field);
	// version 1 files, which say nothing of headers, still open.
	indexVersion   = 2
	indexHeaderLen = 64
	// tombOffPos is where a version 2 header holds the offset of the
	// tombstones section (the 4 bytes after the tail checksum, zero in
	// version 1).
	tombOffPos = 60
	// tailWindow is how many bytes at the end of the covered part of a
	// block an index file checksums, so that an index is not trusted for
	// a block whose end was rewritten at the same length.
	tailWindow = 64
)

var errBadIndex = fmt.Errorf("%w: filestore: bad index file", store.ErrCorrupt)

// indexMeta identifies the block file an index describes.
type indexMeta struct {
	id       uint32
	flags    uint8
	stamp    uint64
	fileSize int64
	// tailSum is the crc32c of the last tailWindow bytes (fewer in a small
	// block, never the header) of the file's first fileSize bytes.
	tailSum uint32
}

// tailRange returns the byte range of a block file of size n that
// indexMeta.tailSum covers.
func tailRange(n int64) (int64, int64) {
	return max(blockHeaderLen, n-tailWindow), n
}

// tailSum computes indexMeta.tailSum from a file's first n bytes.
func tailSum(file []byte) uint32 {
	lo, hi := tailRange(int64(len(file)))
	if lo >= hi {
		return 0
	}
	return crc32.Checksum(file[lo:hi], crcTable)
}

// readTailSum computes indexMeta.tailSum for the first n bytes of f.
func readTailSum(f vfs.File, n int64) (uint32, error) {
	lo, hi := tailRange(n)
	if lo >= hi {
		return 0, nil
	}
	b := make([]byte, hi-lo)
	if _, err := f.ReadAt(b, lo); err != nil {
		return 0, err
	}
	return crc32.Checksum(b, crcTable), nil
}

// appendIndex encodes sc as an index file for the block meta describes.
func appendIndex(dst []byte, meta indexMeta, sc *blockScan) []byte {
	base := len(dst)
	dst = append(dst, indexMagic...)
	dst = append(dst, indexVersion, meta.flags, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, meta.id)
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, meta.stamp)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(meta.fileSize))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(sc.rawLen))
	dst = binary.LittleEndian.AppendUint64(dst, sc.maxSeq)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(sc.lastTime))
	dst = binary.LittleEndian.AppendUint32(dst, meta.tailSum)
	dst = binary.LittleEndian.AppendUint32(dst, 0)

	// Subjects table, in order of first use.
	ids := make(map[string]uint64)
	var names []string
	for _, m := range sc.msgs {
		if _, ok := ids[m.subject]; !ok {
			ids[m.subject] = uint64(len(names))
			names = append(names, m.subject)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, n := range names {
		dst = binary.AppendUvarint(dst, uint64(len(n)))
		dst = append(dst, n...)
	}
	dst = binary.AppendUvarint(dst, uint64(len(sc.msgs)))
	var prevSeq uint64
	var prevTS int64
	var prevOff uint32
	for _, m := range sc.msgs {
		dst = binary.AppendUvarint(dst, m.seq-prevSeq)
		dst = binary.AppendVarint(dst, m.ts-prevTS)
		dst = binary.AppendUvarint(dst, uint64(m.off-prevOff))
		dst = binary.AppendUvarint(dst, uint64(m.length))
		subj := ids[m.subject] << 1
		if m.hdr {
			subj |= 1
		}
		dst = binary.AppendUvarint(dst, subj)
		dst = binary.AppendVarint(dst, m.ttl)
		prevSeq, prevTS, prevOff = m.seq, m.ts, m.off
	}
	// Where the tombstones start, so that a reader that needs no
	// messages skips to them.
	binary.LittleEndian.PutUint32(dst[base+tombOffPos:], uint32(len(dst)-base))
	dst = binary.AppendUvarint(dst, uint64(len(sc.tombs)))
	for _, t := range sc.tombs {
		dst = binary.AppendUvarint(dst, t.first)
		dst = binary.AppendUvarint(dst, t.last-t.first)
	}
	dst = binary.AppendUvarint(dst, uint64(len(sc.chunks)))
	for _, c := range sc.chunks {
		dst = binary.AppendUvarint(dst, uint64(c.rawOff))
		dst = binary.AppendUvarint(dst, uint64(c.rawLen))
		dst = binary.AppendUvarint(dst, uint64(c.fileOff))
		dst = binary.AppendUvarint(dst, uint64(c.compLen))
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst, crcTable))
}

// indexDecoder reads the varint sections of an index file.
type indexDecoder struct {
	b   []byte
	err error
}

func (d *indexDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errBadIndex
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *indexDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errBadIndex
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length prefix and checks that at least min bytes per item
// remain, so a corrupt count cannot make the decoder allocate wildly.
func (d *indexDecoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.err = errBadIndex
		return 0
	}
	return int(n)
}

// parseIndex decodes an index file. Every error wraps store.ErrCorrupt.
func parseIndex(b []byte, intern func([]byte) string) (indexMeta, blockScan, error) {
	return parseIndexInto(b, intern, nil)
}

// parseIndexInto is parseIndex with the messages decoded into msgs's
// array when it is large enough (Open passes one array from block to
// block, see openScratch).
func parseIndexInto(b []byte, intern func([]byte) string, msgs []scannedMsg) (indexMeta, blockScan, error) {
	return parseIndexMode(b, intern, msgs, false)
}

// parseIndexSkim is parseIndex without the subjects and messages of a
// version 2 file that records where its tombstones start, which it skips
// unread: the result has no msgs (and skipped reports it). The checksum
// and every other section are checked as by parseIndex; the messages are
// checked when they are read. Any other file is decoded whole.
func parseIndexSkim(b []byte, intern func([]byte) string, msgs []scannedMsg) (meta indexMeta, sc blockScan, skipped bool, err error) {
	meta, sc, err = parseIndexMode(b, intern, msgs, true)
	return meta, sc, err == nil && b[4] != 1 && binary.LittleEndian.Uint32(b[tombOffPos:]) != 0, err
}

func parseIndexMode(b []byte, intern func([]byte) string, msgs []scannedMsg, skim bool) (indexMeta, blockScan, error) {
	var meta indexMeta
	var sc blockScan
	if len(b) < indexHeaderLen+4 || string(b[:4]) != indexMagic || (b[4] != indexVersion && b[4] != 1) {
		return meta, sc, errBadIndex
	}
	v1 := b[4] == 1
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return meta, sc, errBadIndex
	}
	meta = indexMeta{
		flags:    b[5],
		id:       binary.LittleEndian.Uint32(b[8:]),
		stamp:    binary.LittleEndian.Uint64(b[16:]),
		fileSize: int64(binary.LittleEndian.Uint64(b[24:])),
		tailSum:  binary.LittleEndian.Uint32(b[56:]),
	}
	sc.rawLen = int64(binary.LittleEndian.Uint64(b[32:]))
	sc.maxSeq = binary.LittleEndian.Uint64(b[40:])
	sc.lastTime = int64(binary.LittleEndian.Uint64(b[48:]))
	if sc.rawLen < 0 || sc.rawLen > MaxBlockSize+maxRecordLen || meta.fileSize < blockHeaderLen {
		return meta, sc, errBadIndex
	}
	// tombOff 0 says the file does not record it (version 1, and the
	// first files of version 2): its messages are decoded to get past.
	tombOff := int(binary.LittleEndian.Uint32(b[tombOffPos:]))
	if v1 {
		tombOff = 0
	}
	if tombOff != 0 && (tombOff < indexHeaderLen || tombOff > len(body)) {
		return meta, sc, errBadIndex
	}
	d := indexDecoder{b: body[indexHeaderLen:]}
	if skim && tombOff != 0 {
		d.b = body[tombOff:]
	} else if !parseIndexMsgs(&d, &sc, intern, msgs, v1) {
		return meta, sc, errBadIndex
	}
	if tombOff != 0 && len(body)-len(d.b) != tombOff {
		return meta, sc, errBadIndex
	}
	sc.tombs = make([]seqRange, d.count(2))
	for i := range sc.tombs {
		first := d.uvarint()
		n := d.uvarint()
		if first+n < first {
			return meta, sc, errBadIndex
		}
		sc.tombs[i] = seqRange{first, first + n}
	}
	sc.chunks = make([]chunkRef, d.count(4))
	for i := range sc.chunks {
		sc.chunks[i] = chunkRef{
			rawOff: uint32(d.uvarint()), rawLen: uint32(d.uvarint()),
			fileOff: uint32(d.uvarint()), compLen: uint32(d.uvarint()),
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return meta, sc, errBadIndex
	}
	if len(sc.chunks) == 0 {
		sc.chunks = nil
	}
	return meta, sc, nil
}

// parseIndexMsgs decodes the subjects and messages sections at d into
// sc.msgs, in msgs's array when it is large enough, and reports whether
// they are sound.
func parseIndexMsgs(d *indexDecoder, sc *blockScan, intern func([]byte) string, msgs []scannedMsg, v1 bool) bool {
	names := make([]string, d.count(1))
	for i := range names {
		n := d.count(1)
		if d.err != nil || n > len(d.b) {
			return false
		}
		names[i] = intern(d.b[:n])
		d.b = d.b[n:]
	}
	if n := d.count(6); cap(msgs) >= n {
		sc.msgs = msgs[:n]
	} else {
		sc.msgs = make([]scannedMsg, n)
	}
	var seq uint64
	var ts int64
	var off uint32
	for i := range sc.msgs {
		seq += d.uvarint()
		ts += d.varint()
		off += uint32(d.uvarint())
		length := d.uvarint()
		name := d.uvarint()
		hdr := true // version 1: it may have one
		if !v1 {
			hdr = name&1 != 0
			name >>= 1
		}
		ttl := d.varint()
		if d.err != nil || name >= uint64(len(names)) || length < recordOverhead || length > maxRecordLen ||
			int64(off)+int64(length) > sc.rawLen || (i > 0 && seq <= sc.msgs[i-1].seq) {
			return false
		}
		sc.msgs[i] = scannedMsg{seq: seq, ts: ts, ttl: ttl, off: off, length: uint32(length), subject: names[name], hdr: hdr}
	}
	return d.err == nil
}

// writeIndex writes the index file for block id atomically: a temporary
// file, fsync, then rename (the FS makes the rename durable). The index
// files of a stream sealed with k (nil: plaintext) are sealed whole,
// since they hold the subjects.
func writeIndex(fsys vfs.FS, dir string, k *sealer, meta indexMeta, sc *blockScan) error {
	name := indexName(dir, meta.id)
	data := appendIndex(nil, meta, sc)
	if k != nil {
		data = k.sealFile(data, indexLabel(meta.id))
	}
	return vfs.WriteFile(fsys, name, data)
}

// readIndexInto reads the index file of block id, opening it when k is
// set, into buf's array when it is large enough.
func readIndexInto(fsys vfs.FS, dir string, k *sealer, id uint32, buf []byte) ([]byte, error) {
	data, err := readFileInto(fsys, indexName(dir, id), buf)
	if err != nil || k == nil {
		return data, err
	}
	return k.openFile(data, indexLabel(id))
}

// indexLabel binds a sealed index file to its block.
func indexLabel(id uint32) string { return fmt.Sprintf("index %d", id) }

// readFile reads a whole file.
func readFile(fsys vfs.FS, name string) ([]byte, error) { return readFileInto(fsys, name, nil) }

// readFileInto reads a whole file into buf's array when it is large
// enough, else into a new one.
func readFileInto(fsys vfs.FS, name string, buf []byte) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := buf[:0]
	if n := int(fi.Size()); cap(b) >= n {
		b = b[:n]
	} else {
		b = make([]byte, n)
	}
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// removeIfExists removes name, ignoring its absence.
func removeIfExists(fsys vfs.FS, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
