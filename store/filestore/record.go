package filestore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/leafbox/leafbox/store"
)

// Record kinds. See doc.go for the layout.
const (
	kindMsg       = 1 // a stored message
	kindTombstone = 2 // deletes the sequences [seq, ts] (ts holds the last sequence)
	kindErased    = 3 // a message overwritten in place by Remove(seq, true)
	kindSealed    = 4 // a stored message, sealed (see crypt.go)
)

const (
	recordMagic = 0xB7
	// recordHeaderLen is the fixed part of a record up to and including
	// its header checksum.
	recordHeaderLen = 40
	// recordOverhead is the fixed part plus the trailing checksum.
	recordOverhead = recordHeaderLen + 4
	// maxRecordLen bounds one record, so a corrupt length cannot make
	// recovery allocate or scan absurd amounts.
	maxRecordLen = 1 << 30
	// sizeAdjust converts a message record's length to the accounting
	// size store.Size returns: the record has recordOverhead bytes of
	// framing where the accounting counts 16.
	sizeAdjust = recordOverhead - 16
)

// crcTable is the Castagnoli polynomial, which amd64 and arm64 compute in
// hardware.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors a record or block can fail with. All wrap store.ErrCorrupt.
var (
	errShortRecord = fmt.Errorf("%w: filestore: short record", store.ErrCorrupt)
	errBadMagic    = fmt.Errorf("%w: filestore: bad record magic", store.ErrCorrupt)
	errBadHeader   = fmt.Errorf("%w: filestore: record header checksum mismatch", store.ErrCorrupt)
	errBadLength   = fmt.Errorf("%w: filestore: impossible record length", store.ErrCorrupt)
	errBadChecksum = fmt.Errorf("%w: filestore: record checksum mismatch", store.ErrCorrupt)
	errBadKind     = fmt.Errorf("%w: filestore: unknown record kind", store.ErrCorrupt)
)

// record is one decoded record. Its slices point into the buffer it was
// parsed from.
type record struct {
	kind uint8
	seq  uint64
	// ts is the store time of a message in Unix ns; for a tombstone it is
	// the last sequence deleted.
	ts int64
	// ttl is the message's time to live in ns: > 0 expires it at ts+ttl,
	// < 0 exempts it from MaxAge, 0 is neither.
	ttl     int64
	subject []byte
	header  []byte
	data    []byte
	// sealed is the body of a sealed message (nonce, ciphertext, tag),
	// whose plaintext subject and header are subjLen and hdrLen long;
	// subject, header and data are then nil until it is opened.
	sealed          []byte
	subjLen, hdrLen int
	// size is the record's encoded length when parsed from bytes.
	size int
}

// hasHeader reports whether the message carries a header, sealed or not.
func (r *record) hasHeader() bool { return len(r.header) > 0 || r.hdrLen > 0 }

// len returns the record's encoded length.
func (r *record) len() int {
	if r.size > 0 {
		return r.size
	}
	return recordOverhead + len(r.subject) + len(r.header) + len(r.data)
}

// recordLen is the encoded length of a message record.
func recordLen(subject string, hdr, data []byte) int {
	return recordOverhead + len(subject) + len(hdr) + len(data)
}

// appendMsgRecord appends a message record to dst.
func appendMsgRecord(dst []byte, seq uint64, ts, ttl int64, subject string, hdr, data []byte) []byte {
	n := recordLen(subject, hdr, data)
	start := len(dst)
	dst = appendRecordHeader(dst, kindMsg, uint16(len(subject)), uint32(n), uint32(len(hdr)), seq, uint64(ts), uint64(ttl))
	dst = append(dst, subject...)
	dst = append(dst, hdr...)
	dst = append(dst, data...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// appendTombstone appends a record deleting sequences first..last.
func appendTombstone(dst []byte, first, last uint64) []byte {
	start := len(dst)
	dst = appendRecordHeader(dst, kindTombstone, 0, recordOverhead, 0, first, last, 0)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// fillErased overwrites the message record in b (exactly one record) with
// an erased record of the same length: same sequence and time, every
// subject, header and data byte zero, checksums recomputed.
func fillErased(b []byte, seq uint64, ts int64) {
	clear(b)
	appendRecordHeader(b[:0], kindErased, 0, uint32(len(b)), 0, seq, uint64(ts), 0)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crcTable))
}

func appendRecordHeader(dst []byte, kind uint8, subjLen uint16, length, hdrLen uint32, seq, ts, ttl uint64) []byte {
	start := len(dst)
	dst = append(dst, recordMagic, kind)
	dst = binary.LittleEndian.AppendUint16(dst, subjLen)
	dst = binary.LittleEndian.AppendUint32(dst, length)
	dst = binary.LittleEndian.AppendUint32(dst, hdrLen)
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = binary.LittleEndian.AppendUint64(dst, ts)
	dst = binary.LittleEndian.AppendUint64(dst, ttl)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// parseRecordHeader checks the fixed header at the start of b and returns
// the record's total length. It needs only recordHeaderLen bytes, so
// recovery can tell a plausible record start from noise cheaply.
func parseRecordHeader(b []byte) (int, error) {
	if len(b) < recordHeaderLen {
		return 0, errShortRecord
	}
	if b[0] != recordMagic {
		return 0, errBadMagic
	}
	if crc32.Checksum(b[:recordHeaderLen-4], crcTable) != binary.LittleEndian.Uint32(b[recordHeaderLen-4:]) {
		return 0, errBadHeader
	}
	kind := b[1]
	subjLen := int(binary.LittleEndian.Uint16(b[2:]))
	length := int64(binary.LittleEndian.Uint32(b[4:]))
	hdrLen := int64(binary.LittleEndian.Uint32(b[8:]))
	if length > maxRecordLen || length < recordOverhead+int64(subjLen)+hdrLen {
		return 0, errBadLength
	}
	ttl := binary.LittleEndian.Uint64(b[28:])
	switch kind {
	case kindMsg:
	case kindSealed:
		if length < recordOverhead+sealOverhead+int64(subjLen)+hdrLen {
			return 0, errBadLength
		}
	case kindErased:
		if subjLen != 0 || hdrLen != 0 || ttl != 0 {
			return 0, errBadLength
		}
	case kindTombstone:
		if length != recordOverhead || subjLen != 0 || hdrLen != 0 || ttl != 0 {
			return 0, errBadLength
		}
	default:
		return 0, errBadKind
	}
	return int(length), nil
}

// parseRecord decodes the record at the start of b and returns it with its
// length. Every error wraps store.ErrCorrupt; errShortRecord means b ends
// before the record does.
func parseRecord(b []byte) (record, int, error) {
	n, err := parseRecordHeader(b)
	if err != nil {
		return record{}, 0, err
	}
	if len(b) < n {
		return record{}, 0, errShortRecord
	}
	if crc32.Checksum(b[:n-4], crcTable) != binary.LittleEndian.Uint32(b[n-4:]) {
		return record{}, 0, errBadChecksum
	}
	r := record{
		kind: b[1],
		seq:  binary.LittleEndian.Uint64(b[12:]),
		ts:   int64(binary.LittleEndian.Uint64(b[20:])),
		ttl:  int64(binary.LittleEndian.Uint64(b[28:])),
	}
	subjLen := int(binary.LittleEndian.Uint16(b[2:]))
	hdrLen := int(binary.LittleEndian.Uint32(b[8:]))
	body := b[recordHeaderLen : n-4 : n-4]
	r.size = n
	if r.kind == kindSealed {
		r.sealed, r.subjLen, r.hdrLen = body, subjLen, hdrLen
		return r, n, nil
	}
	r.subject = body[:subjLen:subjLen]
	r.header = body[subjLen : subjLen+hdrLen : subjLen+hdrLen]
	r.data = body[subjLen+hdrLen:]
	if r.kind == kindTombstone && uint64(r.ts) < r.seq {
		return record{}, 0, errBadLength
	}
	return r, n, nil
}

// scanResult summarises a scan of a record stream.
type scanResult struct {
	// end is the offset just past the last good record.
	end int
	// corruptRecords counts plausible record starts (a valid header)
	// whose body failed its checksum, and corruptBytes the bytes skipped
	// between good records.
	corruptRecords int
	corruptBytes   int64
	// tail is the number of bytes after end that hold no good record;
	// tailRecords counts plausible record starts among them.
	tail        int64
	tailRecords int
	// refused counts records with good checksums that do not belong to
	// the stream (see sealer.admit), among corruptRecords.
	refused int
	// firstBad is the body offset of the first corrupt or refused
	// record, when corruptRecords > 0.
	firstBad int
}

// noteBad records a corrupt stretch starting at body offset off; call it
// before counting the stretch in corruptRecords.
func (res *scanResult) noteBad(off int) {
	if res.corruptRecords == 0 || off < res.firstBad {
		res.firstBad = off
	}
}

// scanRecords calls fn for every good record in b with its offset. After
// a bad record it resynchronises at the next offset where a record with
// valid checksums starts, counting what it skipped; bytes after the last
// good record are reported as the tail, not as corruption, since they are
// what a torn write leaves. It never panics on any input.
func scanRecords(b []byte, fn func(off int, r *record)) scanResult {
	var res scanResult
	var r record // one for the scan, lent to fn per record: &r escapes
	off := 0
	for off < len(b) {
		rec, n, err := parseRecord(b[off:])
		if err == nil {
			r = rec
			fn(off, &r)
			off += n
			res.end = off
			continue
		}
		next, plausible := resync(b, off)
		if next < 0 {
			res.tail = int64(len(b) - off)
			res.tailRecords = plausible
			return res
		}
		res.noteBad(off)
		res.corruptRecords += max(plausible, 1)
		res.corruptBytes += int64(next - off)
		off = next
	}
	return res
}

// resync finds the first offset after off where a complete, valid record
// starts, or -1, and counts the plausible record starts (valid header,
// bad or incomplete body) from off up to there.
func resync(b []byte, off int) (next, plausible int) {
	if _, err := parseRecordHeader(b[off:]); err == nil {
		plausible++
	}
	for i := off + 1; i+recordHeaderLen <= len(b); i++ {
		if b[i] != recordMagic {
			continue
		}
		if _, err := parseRecordHeader(b[i:]); err != nil {
			continue
		}
		if _, _, err := parseRecord(b[i:]); err == nil {
			return i, plausible
		}
		plausible++
	}
	return -1, plausible
}
