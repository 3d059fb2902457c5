package filestore

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// Offline checks of a stream or consumer directory, for `leafbox store
// verify` and `leafbox store inspect`. They read the files through the
// same decoders Open uses (parseBlockHeader, scanBody, parseIndex,
// parseFrame, applyFrame) and write nothing, so they may run on a copy of
// a card or a directory mounted read-only, but never while a process has
// the directory open (storedir's lock guards that).

// Problem is one thing Verify found wrong with a file.
type Problem struct {
	// File is the file's path.
	File string
	// Damage is true when data is lost or a checksummed file fails its
	// checks; false for a condition Open repairs without losing anything
	// (a stale index file, a leftover temporary file).
	Damage bool
	// What describes it.
	What string
}

// String formats the problem for a report line.
func (p Problem) String() string {
	kind := "warning"
	if p.Damage {
		kind = "DAMAGE"
	}
	return fmt.Sprintf("%s: %s: %s", kind, p.File, p.What)
}

// VerifyReport is what Verify found in a stream directory.
type VerifyReport struct {
	// Dir is the directory checked.
	Dir string
	// Blocks and Indexes count the block and index files; FileBytes is
	// their total size.
	Blocks, Indexes int
	FileBytes       int64
	// Records counts the good records read: messages, tombstones and
	// erased messages.
	Records int
	// Msgs and Bytes are the messages stored and not deleted (by a
	// tombstone or erasure) and their accounting size, as Open would count
	// them before applying limits and expiry.
	Msgs, Bytes uint64
	// FirstSeq and LastSeq bound the live messages; FirstSeq is
	// LastSeq+1 when there is none. LastSeq is the stream's last
	// sequence, which block headers keep after every message is gone.
	FirstSeq, LastSeq uint64
	// Subjects counts the distinct subjects of the live messages.
	Subjects int
	// Cipher is what the directory's records are sealed with, CipherNone
	// for a plaintext one.
	Cipher Cipher
	// Problems lists what is wrong, in file order.
	Problems []Problem
}

// Damaged reports whether any problem is damage.
func (r *VerifyReport) Damaged() bool { return anyDamage(r.Problems) }

func anyDamage(ps []Problem) bool {
	for _, p := range ps {
		if p.Damage {
			return true
		}
	}
	return false
}

// verifiedBlock is a block's file name and id, in id order.
type verifiedBlock struct {
	id   uint32
	name string
}

// Verify checks every block and index file of the plaintext stream
// directory dir and counts what it holds. It fails on I/O errors and, for
// an encrypted directory, with ErrEncryptedVerify (VerifyWithKey checks
// those); everything it finds wrong with the data is a Problem in the
// report.
func Verify(fsys vfs.FS, dir string) (*VerifyReport, error) {
	return VerifyWithKey(fsys, dir, Encryption{})
}

// VerifyWithKey is Verify for a directory that may be encrypted at rest.
// enc.Key, then enc.PrevKey, is tried on the directory's data key file,
// which is only read: never sealed again with Key nor created. Every
// sealed record and index file is then authenticated and decrypted with
// the data key and checked as a plaintext one is. enc.Cipher may be
// CipherNone, since each key file names its cipher; when set, a key file
// of another cipher is a warning (leafbox refuses to open it with that
// configuration). The errors, besides I/O ones: ErrEncryptedVerify when
// the directory is encrypted and enc has no key, ErrWrongKey when no key
// opens its key file (also what a damaged key file looks like: its seal
// fails as with another key). A key file that is not one at all is
// damage in the report.
func VerifyWithKey(fsys vfs.FS, dir string, enc Encryption) (*VerifyReport, error) {
	r := &VerifyReport{Dir: dir}
	vk, err := openVerifyKey(fsys, dir, streamKeyName, enc, r.problem)
	if err != nil {
		return nil, err
	}
	if vk.unusable {
		return r, nil
	}
	r.Cipher = vk.cipher
	k := vk.sealer
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	var blocks []verifiedBlock
	indexes := map[uint32]string{}
	for _, ent := range ents {
		name := filepath.Join(dir, ent.Name())
		if ent.IsDir() {
			r.problem(name, false, "unexpected directory")
			continue
		}
		id, ext, ok := parseFileName(ent.Name())
		switch {
		case ent.Name() == streamKeyName:
			// Opened above.
		case !ok:
			r.problem(name, false, "not a file of a stream (ignored by Open)")
		case ext == tmpExt:
			r.problem(name, false, "temporary file of an interrupted write (Open removes it)")
		case ext == blockExt:
			blocks = append(blocks, verifiedBlock{id: id, name: name})
		case ext == indexExt:
			indexes[id] = name
			r.Indexes++
		}
	}
	if k == nil && enc.Enabled() && len(blocks) > 0 {
		r.problem(dir, false, fmt.Sprintf("not encrypted yet: leafbox seals it with %s when it next opens it", enc.Cipher))
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].id < blocks[j].id })
	hasBlock := map[uint32]bool{}
	for _, b := range blocks {
		hasBlock[b.id] = true
	}
	for id, name := range indexes {
		if !hasBlock[id] {
			r.problem(name, false, "index file without its block (Open removes it)")
		}
	}

	// Pass 1: check each block and its index, and gather the
	// tombstones, which may delete messages of any earlier block.
	var tombs []seqRange
	var prevMax uint64
	for i, b := range blocks {
		sc, hdr, err := r.verifyBlock(fsys, k, b, i == len(blocks)-1, indexes[b.id])
		if err != nil {
			return nil, err
		}
		if sc == nil {
			continue
		}
		tombs = append(tombs, sc.tombs...)
		r.LastSeq = max(r.LastSeq, hdr.baseSeq, sc.maxSeq)
		for _, m := range sc.msgs {
			if m.seq <= prevMax {
				r.problem(b.name, true, fmt.Sprintf("message sequence %d is not above %d, the previous one", m.seq, prevMax))
			}
			prevMax = max(prevMax, m.seq)
		}
	}
	tombs = mergeRanges(tombs)
	// A sealed record's accounting size leaves out nonce and tag, as
	// Open's (Stream.recordAdjust); in a directory still being converted
	// the plaintext ones are counted alike, a few bytes short.
	adjust := uint64(sizeAdjust)
	if k != nil {
		adjust += sealOverhead
	}

	// Pass 2: count the messages no tombstone deletes. Reading the
	// blocks again keeps memory at one block whatever the stream holds.
	subjects := map[string]struct{}{}
	for _, b := range blocks {
		data, err := readFile(fsys, b.name)
		if err != nil {
			return nil, fmt.Errorf("filestore: %w", err)
		}
		if len(data) < blockHeaderLen {
			continue
		}
		hdr, herr := parseBlockHeader(data)
		compressed := herr == nil && hdr.flags&flagS2 != 0
		sc := scanBody(data[blockHeaderLen:], compressed, k, func(b []byte) string { return string(b) })
		for _, m := range sc.msgs {
			if deleted(tombs, m.seq) {
				continue
			}
			r.Msgs++
			r.Bytes += uint64(m.length) - adjust
			if r.FirstSeq == 0 || m.seq < r.FirstSeq {
				r.FirstSeq = m.seq
			}
			subjects[m.subject] = struct{}{}
		}
	}
	r.Subjects = len(subjects)
	if r.Msgs == 0 {
		r.FirstSeq = r.LastSeq + 1
	}
	return r, nil
}

// deleted reports whether a merged, sorted range list holds seq.
func deleted(rs []seqRange, seq uint64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].last >= seq })
	return i < len(rs) && rs[i].first <= seq
}

// verifyBlock checks one block file and its index file (idx, "" when
// there is none) and returns the block's scan, nil when nothing in it can
// be read.
func (r *VerifyReport) verifyBlock(fsys vfs.FS, k *sealer, b verifiedBlock, last bool, idx string) (*blockScan, blockHeader, error) {
	data, err := readFile(fsys, b.name)
	if err != nil {
		return nil, blockHeader{}, fmt.Errorf("filestore: %w", err)
	}
	r.Blocks++
	r.FileBytes += int64(len(data))
	hdr, herr := parseBlockHeader(data)
	switch {
	case herr != nil && last && len(data) <= blockHeaderLen:
		r.problem(b.name, false, "last block with no record and no sound header: a block creation cut short (Open removes it)")
		return nil, hdr, nil
	case herr != nil:
		r.problem(b.name, true, fmt.Sprintf("block header: %v (Open salvages the records and rewrites it)", herr))
	case hdr.id != b.id:
		r.problem(b.name, true, fmt.Sprintf("block header names block %d", hdr.id))
	}
	if len(data) < blockHeaderLen {
		return nil, hdr, nil
	}
	compressed := herr == nil && hdr.flags&flagS2 != 0
	sc := scanBody(data[blockHeaderLen:], compressed, k, func(b []byte) string { return string(b) })
	r.Records += len(sc.msgs) + len(sc.tombs)
	if sc.res.corruptRecords > 0 {
		// Offsets are in the file: where the first bad record starts, or
		// in a compressed block the chunk that holds it.
		first := "the first at offset"
		if compressed {
			first = "the first in the chunk at offset"
		}
		what := fmt.Sprintf("%d corrupt records (%d bytes) between good ones, %s %d", sc.res.corruptRecords, sc.res.corruptBytes, first, blockHeaderLen+sc.res.firstBad)
		if n := sc.res.refused; n > 0 {
			what += fmt.Sprintf("; %d of them with good checksums %s", n, refusedWhy(k))
		}
		r.problem(b.name, true, what)
	}
	if sc.res.tail > 0 {
		what := fmt.Sprintf("the %d bytes from offset %d, after the last good record, hold no good record", sc.res.tail, blockHeaderLen+sc.res.end)
		if compressed {
			what = fmt.Sprintf("the %d bytes from offset %d, after the last good chunk, hold no good chunk", sc.res.tail, blockHeaderLen+sc.res.end)
		}
		if last && !compressed {
			what += " (a torn write, which Open truncates)"
		}
		r.problem(b.name, true, what)
	}
	if idx == "" {
		if !last {
			r.problem(b.name, false, "sealed block without an index file (Open rebuilds it)")
		}
		return &sc, hdr, nil
	}
	if err := r.verifyIndex(fsys, k, idx, data, hdr, herr == nil, &sc); err != nil {
		return nil, hdr, err
	}
	return &sc, hdr, nil
}

// verifyIndex checks an index file against the block it describes.
func (r *VerifyReport) verifyIndex(fsys vfs.FS, k *sealer, name string, block []byte, hdr blockHeader, hdrOK bool, sc *blockScan) error {
	data, err := readFile(fsys, name)
	if err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	r.FileBytes += int64(len(data))
	if k != nil && (!k.acceptPlain || isSealedFile(data)) {
		if data, err = k.openFile(data, indexLabel(hdr.id)); err != nil {
			r.problem(name, true, fmt.Sprintf("%v: the index file is damaged or not this stream's (Open rebuilds it from the block)", err))
			return nil
		}
	}
	meta, isc, err := parseIndex(data, func(b []byte) string { return string(b) })
	if err != nil {
		r.problem(name, true, fmt.Sprintf("%v (Open rebuilds it from the block)", err))
		return nil
	}
	if !hdrOK || meta.id != hdr.id || meta.stamp != hdr.stamp || meta.flags != hdr.flags {
		r.problem(name, false, "describes another version of the block (Open rebuilds it)")
		return nil
	}
	size := int64(len(block))
	switch {
	case meta.fileSize > size:
		r.problem(name, true, fmt.Sprintf("the block is %d bytes, its index recorded %d: the block was truncated", size, meta.fileSize))
		return nil
	case hdr.flags&flagS2 != 0 && meta.fileSize != size:
		r.problem(name, true, fmt.Sprintf("the compressed block is %d bytes, its index recorded %d", size, meta.fileSize))
		return nil
	case tailSum(block[:meta.fileSize]) != meta.tailSum:
		r.problem(name, true, "the block's bytes differ from what its index recorded")
		return nil
	}
	// Every message the index lists must be the one the block holds at
	// that offset.
	got := map[uint64]scannedMsg{}
	for _, m := range sc.msgs {
		if int64(m.off)+int64(m.length) <= isc.rawLen {
			got[m.seq] = m
		}
	}
	for _, m := range isc.msgs {
		b, ok := got[m.seq]
		if !ok && erasedAt(block, hdr, m) {
			continue
		}
		if !ok {
			r.problem(name, true, fmt.Sprintf("lists message %d, which the block does not hold intact", m.seq))
			continue
		}
		// An index may say a message may carry a header when it has none
		// (version 1 says so of all), never the reverse.
		if b.off != m.off || b.length != m.length || b.subject != m.subject || b.ts != m.ts || (b.hdr && !m.hdr) {
			r.problem(name, true, fmt.Sprintf("message %d differs from the block's record", m.seq))
		}
		delete(got, m.seq)
	}
	for seq := range got {
		r.problem(name, true, fmt.Sprintf("does not list message %d, which the block holds", seq))
	}
	return nil
}

// erasedAt reports whether the uncompressed block holds, where the index
// lists message m, the same record erased by Remove(seq, true) since.
func erasedAt(block []byte, hdr blockHeader, m scannedMsg) bool {
	if hdr.flags&flagS2 != 0 || int64(blockHeaderLen)+int64(m.off) >= int64(len(block)) {
		return false
	}
	rec, n, err := parseRecord(block[blockHeaderLen+int(m.off):])
	return err == nil && rec.kind == kindErased && rec.seq == m.seq && n == int(m.length)
}

func (r *VerifyReport) problem(file string, damage bool, what string) {
	r.Problems = append(r.Problems, Problem{File: file, Damage: damage, What: what})
}

// ConsumerVerifyReport is what VerifyConsumer found in a consumer
// directory.
type ConsumerVerifyReport struct {
	// Dir is the directory checked.
	Dir string
	// Frames counts the good frames of the log, FileBytes its size.
	Frames    int
	FileBytes int64
	// State is what the good frames record.
	State store.ConsumerState
	// Cipher is what the log's frames are sealed with, CipherNone for a
	// plaintext one.
	Cipher Cipher
	// Problems lists what is wrong.
	Problems []Problem
}

// Damaged reports whether any problem is damage.
func (r *ConsumerVerifyReport) Damaged() bool { return anyDamage(r.Problems) }

// VerifyConsumer replays the plaintext consumer log in dir as
// OpenConsumerStore does, without repairing it. A missing log is
// reported, not an error; an encrypted one is refused with
// ErrEncryptedVerify (VerifyConsumerWithKey checks those).
func VerifyConsumer(fsys vfs.FS, dir string) (*ConsumerVerifyReport, error) {
	return VerifyConsumerWithKey(fsys, dir, Encryption{})
}

// VerifyConsumerWithKey is VerifyConsumer for a log that may be
// encrypted at rest: enc opens its consumer.key, read only, as
// VerifyWithKey opens a stream's, and every sealed frame is
// authenticated and decrypted before it is replayed. Its errors are
// VerifyWithKey's.
func VerifyConsumerWithKey(fsys vfs.FS, dir string, enc Encryption) (*ConsumerVerifyReport, error) {
	r := &ConsumerVerifyReport{Dir: dir}
	vk, err := openVerifyKey(fsys, dir, consumerKeyName, enc, func(file string, damage bool, what string) {
		r.Problems = append(r.Problems, Problem{File: file, Damage: damage, What: what})
	})
	if err != nil {
		return nil, err
	}
	if vk.unusable {
		return r, nil
	}
	r.Cipher = vk.cipher
	name := filepath.Join(dir, consumerLogName)
	if _, err := fsys.Stat(name + tmpExt); err == nil {
		r.Problems = append(r.Problems, Problem{File: name + tmpExt, What: "temporary file of an interrupted compaction (Open removes it)"})
	}
	data, err := readFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		r.Problems = append(r.Problems, Problem{File: name, What: "no consumer log: the consumer starts from its configuration"})
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	r.FileBytes = int64(len(data))
	off := 0
	for off < len(data) {
		kind, payload, n, err := parseFrame(data[off:])
		if err == nil {
			payload, err = openFramePayload(vk.sealer, vk.converting, false, data[off:off+frameHeaderLen], payload)
		}
		if err == nil {
			err = applyFrame(&r.State, kind, payload)
		}
		if err != nil {
			r.Problems = append(r.Problems, Problem{File: name, Damage: true,
				What: fmt.Sprintf("frame %d at offset %d: %v; the %d bytes from there are lost when the consumer opens", r.Frames+1, off, err, len(data)-off)})
			break
		}
		r.Frames++
		off += n
	}
	return r, nil
}

// ErrEncryptedVerify is the answer of Verify and VerifyConsumer, and of
// their WithKey forms given no key, for a directory encrypted at rest:
// without the key its sealed records and index files cannot be checked.
var ErrEncryptedVerify = errors.New("filestore: encrypted at rest: verify cannot check it without the key")

// verifyKey is how the verifier opens a directory's files.
type verifyKey struct {
	// sealer opens sealed records and files; nil for a plaintext
	// directory.
	sealer *sealer
	// cipher is the key file's, CipherNone without one.
	cipher Cipher
	// converting says plaintext records may remain (the key file's
	// mark: encryption was being turned on).
	converting bool
	// unusable says the key file is damaged beyond opening: the
	// directory's files cannot be checked (a Problem says why).
	unusable bool
}

// openVerifyKey reads the data key file keyName of dir, if any, and opens
// it with enc.Key or enc.PrevKey, changing nothing. Conditions that are
// not errors go to problem.
func openVerifyKey(fsys vfs.FS, dir, keyName string, enc Encryption, problem func(file string, damage bool, what string)) (verifyKey, error) {
	name := filepath.Join(dir, keyName)
	b, err := readFile(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return verifyKey{}, nil
	case err != nil:
		return verifyKey{}, fmt.Errorf("filestore: %w", err)
	case len(enc.Key) == 0:
		return verifyKey{}, fmt.Errorf("%s: %w", dir, ErrEncryptedVerify)
	}
	kf, err := openKeyFile(b, enc.Key)
	if errors.Is(err, ErrWrongKey) && len(enc.PrevKey) > 0 {
		kf, err = openKeyFile(b, enc.PrevKey)
		if errors.Is(err, ErrWrongKey) {
			return verifyKey{}, fmt.Errorf("%w: %s: neither the key nor the previous key opens %s", ErrWrongKey, dir, keyName)
		}
	}
	switch {
	case errors.Is(err, ErrWrongKey):
		return verifyKey{}, fmt.Errorf("%w: %s: the key does not open %s", ErrWrongKey, dir, keyName)
	case err != nil:
		problem(name, true, fmt.Sprintf("%v: nothing sealed under it can be opened or checked", err))
		return verifyKey{unusable: true}, nil
	}
	if enc.Cipher != CipherNone && kf.cipher != enc.Cipher {
		problem(name, false, fmt.Sprintf("sealed with %s, the configuration says %s: leafbox refuses to open it so", kf.cipher, enc.Cipher))
	}
	if kf.converting {
		problem(name, false, "encryption was being turned on when leafbox stopped: plaintext records may remain (Open seals them)")
	}
	s, err := newSealer(kf.cipher, kf.dataKey)
	if err != nil {
		return verifyKey{}, err
	}
	s.acceptPlain = kf.converting
	return verifyKey{sealer: s, cipher: kf.cipher, converting: kf.converting}, nil
}

// refusedWhy explains records refused by sealer.admit.
func refusedWhy(k *sealer) string {
	if k == nil {
		return "are sealed in a plaintext stream (its stream.key is missing?)"
	}
	return "fail authentication with the stream's data key or are plaintext in a sealed stream: tampered with, or not this stream's"
}

// isSealedFile reports whether b starts as sealFile's output.
func isSealedFile(b []byte) bool {
	return len(b) >= len(sealedFileMagic) && string(b[:len(sealedFileMagic)]) == sealedFileMagic
}
