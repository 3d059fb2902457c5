package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/leafbox/leafbox/store"
)

// sampleRecords are one record of each kind, encoded.
func sampleRecords() [][]byte {
	msg := appendMsgRecord(nil, 7, 1_700_000_000_000_000_000, 0, "sensors.temp", []byte("NATS/1.0\r\nA: b\r\n\r\n"), []byte("21.5"))
	ttl := appendMsgRecord(nil, 8, 1_700_000_000_000_000_001, 5e9, "kv.k", nil, nil)
	never := appendMsgRecord(nil, 9, 1_700_000_000_000_000_002, -1, "kv.k", nil, []byte("v"))
	tomb := appendTombstone(nil, 3, 6)
	erased := append([]byte(nil), msg...)
	fillErased(erased, 7, 1_700_000_000_000_000_000)
	return [][]byte{msg, ttl, never, tomb, erased}
}

func TestRecordRoundTrip(t *testing.T) {
	hdr, data := []byte("NATS/1.0\r\n\r\n"), bytes.Repeat([]byte("x"), 1000)
	b := appendMsgRecord([]byte("prefix"), 42, -5, 77, "a.b.c", hdr, data)[6:]
	if len(b) != recordLen("a.b.c", hdr, data) {
		t.Fatalf("length %d, want %d", len(b), recordLen("a.b.c", hdr, data))
	}
	r, n, err := parseRecord(append(b, 0xFF, 0xFF))
	if err != nil || n != len(b) {
		t.Fatalf("parseRecord: %d, %v", n, err)
	}
	want := record{kind: kindMsg, seq: 42, ts: -5, ttl: 77, subject: []byte("a.b.c"), header: hdr, data: data, size: len(b)}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got %+v", r)
	}
	if uint64(r.len())-sizeAdjust != store.Size("a.b.c", hdr, data) {
		t.Fatalf("size adjustment does not give store.Size")
	}

	r, _, err = parseRecord(appendTombstone(nil, 10, 20))
	if err != nil || r.kind != kindTombstone || r.seq != 10 || r.ts != 20 {
		t.Fatalf("tombstone: %+v, %v", r, err)
	}
	rec := sampleRecords()[4]
	r, _, err = parseRecord(rec)
	if err != nil || r.kind != kindErased || r.seq != 7 || len(r.subject)+len(r.header) != 0 || !bytes.Equal(r.data, make([]byte, len(r.data))) {
		t.Fatalf("erased: %+v, %v", r, err)
	}
}

// TestRecordDetectsEveryBitFlip flips every bit of every sample record:
// parsing must fail with an error wrapping store.ErrCorrupt, never return
// a different record.
func TestRecordDetectsEveryBitFlip(t *testing.T) {
	for i, rec := range sampleRecords() {
		for bit := 0; bit < len(rec)*8; bit++ {
			b := append([]byte(nil), rec...)
			b[bit/8] ^= 1 << (bit % 8)
			if _, _, err := parseRecord(b); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("record %d, bit %d flipped: err %v", i, bit, err)
			}
		}
		for n := 0; n < len(rec); n++ {
			if _, _, err := parseRecord(rec[:n]); !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("record %d cut at %d: err %v", i, n, err)
			}
		}
	}
}

// TestScanResynchronises puts garbage between and after good records.
func TestScanResynchronises(t *testing.T) {
	recs := sampleRecords()
	var body []byte
	body = append(body, recs[0]...)
	body = append(body, bytes.Repeat([]byte{recordMagic, 0}, 50)...) // noise with magic bytes
	body = append(body, recs[1]...)
	damaged := append([]byte(nil), recs[2]...)
	damaged[len(damaged)-1] ^= 1
	body = append(body, damaged...)
	body = append(body, recs[3]...)
	tail := recs[0][:30]
	body = append(body, tail...)
	var seqs []uint64
	res := scanRecords(body, func(off int, r *record) { seqs = append(seqs, r.seq) })
	if fmt.Sprint(seqs) != "[7 8 3]" {
		t.Fatalf("records found: %v", seqs)
	}
	if res.corruptRecords != 2 || res.corruptBytes != int64(100+len(damaged)) {
		t.Fatalf("corruption: %d records, %d bytes", res.corruptRecords, res.corruptBytes)
	}
	if res.tail != int64(len(tail)) || res.end != len(body)-len(tail) {
		t.Fatalf("tail %d end %d", res.tail, res.end)
	}
}

func TestBlockHeader(t *testing.T) {
	h := blockHeader{flags: flagS2, id: 12, baseSeq: 99, baseTime: 123, stamp: 0xdeadbeef}
	b := appendBlockHeader(nil, h)
	if len(b) != blockHeaderLen {
		t.Fatalf("header length %d", len(b))
	}
	got, err := parseBlockHeader(b)
	if err != nil || got != h {
		t.Fatalf("got %+v, %v", got, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if _, err := parseBlockHeader(c); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

func TestChunksRoundTrip(t *testing.T) {
	var raw []byte
	var ends []int
	for i := range 3000 {
		raw = appendMsgRecord(raw, uint64(i+1), int64(i), 0, "s", nil, bytes.Repeat([]byte{byte(i)}, i%100))
		ends = append(ends, len(raw))
	}
	comp, chunks := appendCompressed(nil, raw, ends)
	if len(chunks) < 2 || len(comp) >= len(raw) {
		t.Fatalf("%d chunks, %d bytes from %d", len(chunks), len(comp), len(raw))
	}
	var got []byte
	var refs []chunkRef
	res := scanChunks(comp, func(c chunkRef, b []byte) {
		refs = append(refs, c)
		got = append(got, b...)
	})
	if !bytes.Equal(got, raw) || !reflect.DeepEqual(refs, chunks) || res.corruptRecords != 0 || res.tail != 0 {
		t.Fatalf("round trip failed: %v", res)
	}
	// Damage the second chunk: the others survive, the loss is counted.
	comp[int(chunks[1].fileOff)+chunkHeaderLen+5] ^= 1
	got = got[:0]
	res = scanChunks(comp, func(c chunkRef, b []byte) { got = append(got, b...) })
	if res.corruptRecords != 1 || len(got) != len(raw)-int(chunks[1].rawLen) {
		t.Fatalf("after damage: %v, %d bytes", res, len(got))
	}
}

func TestIndexRoundTrip(t *testing.T) {
	sc := blockScan{
		msgs: []scannedMsg{
			{seq: 5, ts: 100, ttl: 0, off: 0, length: 50, subject: "a"},
			{seq: 6, ts: 90, ttl: -1, off: 50, length: 60, subject: "b", hdr: true},
			{seq: 9, ts: 200, ttl: 7, off: 110, length: 50, subject: "a"},
		},
		tombs:    []seqRange{{1, 4}, {7, 8}},
		maxSeq:   9,
		lastTime: 200,
		rawLen:   160,
		chunks:   []chunkRef{{0, 160, 0, 99}},
	}
	meta := indexMeta{id: 3, flags: flagS2, stamp: 77, fileSize: 147, tailSum: 5}
	b := appendIndex(nil, meta, &sc)
	gotMeta, got, err := parseIndex(b, func(p []byte) string { return string(p) })
	if err != nil || gotMeta != meta || !reflect.DeepEqual(got, sc) {
		t.Fatalf("got %+v %+v, %v", gotMeta, got, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x08
		if _, _, err := parseIndex(c, func(p []byte) string { return string(p) }); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
}

// withValidChecksums returns b with its record checksums recomputed, so
// the fuzzer also reaches the checks behind them.
func withValidChecksums(b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) < recordHeaderLen {
		return b
	}
	binary.LittleEndian.PutUint32(b[recordHeaderLen-4:], crc32.Checksum(b[:recordHeaderLen-4], crcTable))
	if n := int(binary.LittleEndian.Uint32(b[4:])); n >= recordOverhead && n <= len(b) {
		binary.LittleEndian.PutUint32(b[n-4:], crc32.Checksum(b[:n-4], crcTable))
	}
	return b
}

// FuzzDecodeRecord feeds arbitrary bytes to the record decoder, as they
// are and with valid checksums: it never panics, every error wraps
// store.ErrCorrupt, and a record it accepts re-encodes to exactly the
// bytes it consumed.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r)
		f.Add(r[:len(r)/2])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
		checkDecode(t, withValidChecksums(b))
	})
}

func checkDecode(t *testing.T, b []byte) {
	scanRecords(b, func(int, *record) {})
	r, n, err := parseRecord(b)
	if err != nil {
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("error does not wrap ErrCorrupt: %v", err)
		}
		return
	}
	var again []byte
	switch r.kind {
	case kindMsg:
		again = appendMsgRecord(nil, r.seq, r.ts, r.ttl, string(r.subject), r.header, r.data)
	case kindTombstone:
		again = appendTombstone(nil, r.seq, uint64(r.ts))
	case kindErased:
		if !bytes.Equal(r.data, make([]byte, len(r.data))) {
			return // not what fillErased writes, but harmless
		}
		again = make([]byte, n)
		fillErased(again, r.seq, r.ts)
	}
	if !bytes.Equal(again, b[:n]) {
		t.Fatalf("re-encoding differs:\n%x\n%x", again, b[:n])
	}
}

// withIndexChecksum returns b with a valid trailing checksum.
func withIndexChecksum(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	b = append([]byte(nil), b...)
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crcTable))
	return b
}

// FuzzParseIndex feeds arbitrary bytes to the index decoder, as they are
// and with a valid checksum: it never panics or allocates without bound,
// and what it accepts re-encodes to the same content.
func FuzzParseIndex(f *testing.F) {
	sc := blockScan{
		msgs:  []scannedMsg{{seq: 5, ts: 100, off: 0, length: 50, subject: "a"}, {seq: 9, ts: 200, ttl: 7, off: 50, length: 50, subject: "b"}},
		tombs: []seqRange{{1, 4}}, maxSeq: 9, lastTime: 200, rawLen: 100,
	}
	f.Add(appendIndex(nil, indexMeta{id: 1, stamp: 2, fileSize: 148}, &sc))
	f.Add([]byte(indexMagic))
	intern := func(p []byte) string { return string(p) }
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, withIndexChecksum(b)} {
			meta, sc, err := parseIndex(in, intern)
			if err != nil {
				if !errors.Is(err, store.ErrCorrupt) {
					t.Fatalf("error does not wrap ErrCorrupt: %v", err)
				}
				continue
			}
			_, again, err := parseIndex(appendIndex(nil, meta, &sc), intern)
			if err != nil || !reflect.DeepEqual(again, sc) {
				t.Fatalf("re-encoded index differs: %v", err)
			}
		}
	})
}
