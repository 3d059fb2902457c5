package filestore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Encryption at rest of a stream: Open loads (or creates) stream.key, the
// stream's random data key sealed with the server key, and seals every
// message record and index file with the data key. Turning encryption on
// for a plaintext stream writes stream.key marked "converting", rewrites
// each block holding plaintext messages (a synced temporary file renamed
// over it), removes its index file, and clears the mark; a crash in
// between leaves whole blocks of either kind, and the next Open finishes
// the conversion.

// entryFlags are the flags every entry of the stream carries.
func (s *Stream) entryFlags() uint8 {
	if s.key != nil {
		return entrySealed
	}
	return 0
}

// recordAdjust is a message record's length minus its accounting size.
func (s *Stream) recordAdjust() int64 {
	if s.key != nil {
		return sizeAdjust + sealOverhead
	}
	return sizeAdjust
}

// openKey loads the stream's data key and converts a plaintext stream
// when encryption was just turned on.
func (s *Stream) openKey() error {
	ids, err := s.blockIDs()
	if err != nil {
		return err
	}
	dk, err := loadDirKey(s.fsys, s.dir, streamKeyName, s.cfg.Encryption, len(ids) > 0)
	if err != nil {
		return err
	}
	s.key = dk.sealer
	if !dk.convert {
		return nil
	}
	for _, id := range ids {
		if err := s.convertBlock(id, dk.created); err != nil {
			if errors.Is(err, errLostKey) {
				dk.discard(s.fsys)
			}
			return err
		}
	}
	return dk.finishConversion(s.fsys, s.cfg.Encryption)
}

// blockIDs lists the block files in the stream's directory.
func (s *Stream) blockIDs() ([]uint32, error) {
	des, err := s.fsys.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	var ids []uint32
	for _, de := range des {
		if id, ext, ok := parseFileName(de.Name()); ok && ext == blockExt && !de.IsDir() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// convertBlock seals the plaintext messages of block file id. Records
// that fail their checks are dropped and counted as recovery would; a
// block with no plaintext message is left alone.
func (s *Stream) convertBlock(id uint32, newKey bool) error {
	name := blockName(s.dir, id)
	file, err := readFile(s.fsys, name)
	if err != nil {
		return fmt.Errorf("filestore: convert block %d: %w", id, err)
	}
	if len(file) <= blockHeaderLen {
		return nil // a creation cut short; recovery removes it
	}
	h, herr := parseBlockHeader(file)
	if herr != nil || h.id != id {
		h = blockHeader{id: id}
		s.report.CorruptBlocks++
	}
	body := file[blockHeaderLen:]
	var out []byte
	plain, sealed := 0, 0
	visit := func(r *record, rec []byte) {
		if r.kind == kindSealed {
			sealed++
		}
		if r.kind == kindMsg {
			out = appendSealedRecord(out, s.key, r.seq, r.ts, r.ttl, string(r.subject), r.header, r.data)
			plain++
			return
		}
		out = append(out, rec...)
	}
	var res scanResult
	if h.flags&flagS2 != 0 {
		res = scanChunks(body, func(_ chunkRef, raw []byte) {
			scanRecords(raw, func(off int, r *record) { visit(r, raw[off:off+r.len()]) })
		})
	} else {
		res = scanRecords(body, func(off int, r *record) { visit(r, body[off:off+r.len()]) })
	}
	if sealed > 0 && newKey {
		return fmt.Errorf("filestore: %s: block %d: %w", s.dir, id, errLostKey)
	}
	if plain == 0 && h.flags&flagS2 == 0 {
		return nil
	}
	s.report.CorruptRecords += res.corruptRecords + res.tailRecords
	s.report.CorruptBytes += res.corruptBytes + res.tail
	nh := blockHeader{id: id, baseSeq: h.baseSeq, baseTime: h.baseTime, stamp: rand.Uint64()}
	data := append(appendBlockHeader(make([]byte, 0, blockHeaderLen+len(out)), nh), out...)
	if err := vfs.WriteFile(s.fsys, name, data); err != nil {
		return fmt.Errorf("filestore: convert block %d: %w", id, err)
	}
	if err := removeIfExists(s.fsys, indexName(s.dir, id)); err != nil {
		return fmt.Errorf("filestore: convert block %d: %w", id, err)
	}
	s.report.ConvertedBlocks++
	return nil
}

// openMsg opens sealed record rec of e, parsed into r, into sm's buffer
// (or a new one) and fills sm.
func (s *Stream) openMsg(b *block, e *entry, rec []byte, r *record, sm *store.Msg) (*store.Msg, error) {
	need := len(r.sealed) - sealOverhead
	var buf []byte
	switch {
	case sm.Buf == nil:
		buf = make([]byte, 0, need)
	case cap(sm.Buf) < need:
		buf = make([]byte, 0, need)
		sm.Buf = buf
	default:
		buf = sm.Buf[:0]
	}
	if _, err := s.key.openRecord(buf, rec, r); err != nil {
		return nil, fmt.Errorf("block %d offset %d: %w", b.id, e.off, err)
	}
	sm.Subject = s.subjects.byID[e.subj].name
	sm.Seq, sm.Time = r.seq, r.ts
	sm.Data = r.data
	sm.Header = nil
	if len(r.header) > 0 {
		sm.Header = r.header
	}
	return sm, nil
}
