package filestore

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/expiry"
	"github.com/leafbox/leafbox/store/vfs"
)

// ErrInvalidSubject is returned by Store for a subject that is not a valid
// literal subject, or is longer than 65535 bytes.
var ErrInvalidSubject = errors.New("filestore: invalid subject")

// errSeqExhausted is returned by Store once the last sequence is the
// largest uint64 (only a Purge with an absurd Sequence gets there).
var errSeqExhausted = errors.New("filestore: sequence space exhausted")

// Stream is a store.Stream kept in block files under one directory. It is
// safe for concurrent use. See the package documentation for the format,
// the durability rules and the lock order.
type Stream struct {
	fsys vfs.FS
	dir  string
	// syncAlways and compression are fixed at Open.
	syncAlways  bool
	compression Compression
	// key seals and opens records and index files; nil for a plaintext
	// stream. Fixed at Open.
	key *sealer

	// maintMu serialises maintenance (block rewrites and index files).
	maintMu sync.Mutex

	mu     sync.RWMutex
	cfg    Config
	closed bool
	// blocks are ordered by id, which is creation order, so their
	// sequences ascend; the last one is active.
	blocks   []*block
	active   *block
	nextID   uint32
	subjects subjectIndex
	msgs     uint64
	bytes    uint64
	// firstSeq is the first live sequence, lastSeq+1 when empty (0 before
	// anything was stored); lastSeq the last assigned.
	firstSeq, lastSeq uint64
	lastTime          int64
	// deadBlocks says some block may have become removable.
	deadBlocks bool
	// writeFailed says the last attempt to write the active block's
	// buffer failed.
	writeFailed bool
	expiry      expiry.Timer
	report      Report
	// open holds buffers Open reuses from block to block; nil after it.
	open *openScratch
	// written counts body bytes written to block files since Open: the
	// group-commit position.
	written uint64
	cache   chunkCache
	reads   readCache
	loader  indexLoader

	// inBatch is set while StoreBatch stores its messages: storeLocked
	// neither rolls the block nor writes the buffer (batch.go).
	inBatch bool

	// Group commit; see sync.go. Lock order: mu before syncMu, mu before
	// fileMu.
	syncMu   sync.Mutex
	syncCond *sync.Cond
	syncing  bool
	synced   uint64
	// A failed fsync fails every ticket in (failedFrom, failedTo].
	failedFrom, failedTo uint64
	syncErr              error
	// evictions are the tombstones of limit evictions waiting for the
	// fsync that covers the record that caused them; settled ones move
	// to released (fsync done) or are dropped (fsync failed). See
	// limits.go.
	evictions []pendingEviction
	released  []seqRange
	// releasing is scratch space for releaseEvictions.
	releasing []seqRange
	// fileMu is held for reading around an fsync done without mu, and for
	// writing to close a file, so no file is closed under an fsync.
	fileMu sync.RWMutex
	// fsyncMu keeps fsyncs of the active block from overlapping.
	fsyncMu sync.Mutex

	work chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

var _ store.Stream = (*Stream)(nil)

// Open opens the stream stored in dir on fsys, creating it when dir holds
// none, and recovers it: torn tails are truncated, corrupt records and
// blocks are skipped and counted (see Recovered), index files that are
// missing or stale are rebuilt from the blocks. Corruption never makes
// Open fail; I/O errors and an invalid cfg (store.ErrInvalidConfig) do,
// and so do a key that does not open stream.key (ErrWrongKey) and an
// encrypted stream opened without a cipher (ErrNoKey). With
// cfg.Encryption set on a plaintext stream, Open converts it first (see
// Report.ConvertedBlocks).
func Open(fsys vfs.FS, dir string, cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := fsys.MkdirAll(dir, vfs.PermDir); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	s := &Stream{
		fsys:        fsys,
		dir:         dir,
		syncAlways:  cfg.SyncInterval == 0,
		compression: cfg.Compression,
		cfg:         cfg,
		subjects:    newSubjectIndex(),
		work:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
	}
	s.syncCond = sync.NewCond(&s.syncMu)
	s.loader.limit.Store(max(cfg.IndexCache, 0))
	s.expiry.Fire = s.expire
	if err := s.openKey(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	err := s.recover()
	if err != nil {
		s.releaseFiles()
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go s.maintain()
	if !s.syncAlways {
		s.wg.Add(1)
		go s.flushLoop(cfg.SyncInterval)
	}
	return s, nil
}

// Recovered returns what Open found and repaired.
func (s *Stream) Recovered() Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.report
}

// Store appends a message; see store.Stream. With SyncInterval 0 it
// returns once the message is durable, sharing the fsync with concurrent
// Stores. A full disk gives an error wrapping store.ErrStoreFull and the
// OS error; the stream stays usable and nothing of the message remains.
// A message whose fsync failed is removed again and the error returned.
func (s *Stream) Store(subj string, hdr, data []byte, ttl int64) (uint64, int64, error) {
	s.mu.Lock()
	seq, ts, err := s.storeLocked(subj, hdr, data, ttl)
	ticket := s.written
	s.reapLocked()
	s.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	if s.syncAlways {
		if err := s.waitDurable(ticket); err != nil {
			s.mu.Lock()
			if !s.closed {
				s.removeSeqs([]uint64{seq})
				s.noteTombstones([]seqRange{{seq, seq}})
				s.reapLocked()
			}
			s.mu.Unlock()
			return 0, 0, err
		}
	}
	return seq, ts, nil
}

func (s *Stream) storeLocked(subj string, hdr, data []byte, ttl int64) (uint64, int64, error) {
	if s.closed {
		return 0, 0, store.ErrClosed
	}
	if len(subj) > 0xFFFF || !subject.ValidLiteral(subj) {
		return 0, 0, ErrInvalidSubject
	}
	cfg := &s.cfg.Config
	if cfg.MaxMsgSize > 0 && len(hdr)+len(data) > int(cfg.MaxMsgSize) {
		return 0, 0, store.ErrMaxMsgSize
	}
	n := recordLen(subj, hdr, data)
	if s.key != nil {
		n += sealOverhead
	}
	if n > maxRecordLen {
		return 0, 0, store.ErrMaxMsgSize
	}
	size := store.Size(subj, hdr, data)
	ss := s.subjects.byName[subj]
	atLimit := cfg.MaxMsgsPerSubject > 0 && ss != nil && ss.msgs >= uint64(cfg.MaxMsgsPerSubject)
	if cfg.Discard == store.DiscardNew {
		if err := s.checkDiscardNew(ss, atLimit, size); err != nil {
			return 0, 0, err
		}
	} else if cfg.MaxBytes > 0 && size > uint64(cfg.MaxBytes) {
		// Evicting everything, itself included, would be a silent drop.
		return 0, 0, store.ErrMaxBytes
	}
	if !cfg.AllowMsgTTL {
		ttl = 0
	}

	if s.lastSeq == math.MaxUint64 {
		return 0, 0, errSeqExhausted
	}
	if s.writeFailed {
		// An asynchronous stream whose buffered records could not be
		// written (a full disk) refuses more until they are.
		if err := s.flushLocked(); err != nil {
			return 0, 0, err
		}
	}
	seq, ts := s.lastSeq+1, time.Now().UnixNano()
	if !s.inBatch { // StoreBatch made room for the whole batch
		if err := s.ensureRoom(n); err != nil {
			return 0, 0, err
		}
	}
	s.releaseEvictions()
	b := s.active
	mark, off := len(b.buf), b.rawLen
	if s.key != nil {
		b.buf = appendSealedRecord(b.buf, s.key, seq, ts, ttl, subj, hdr, data)
	} else {
		b.buf = appendMsgRecord(b.buf, seq, ts, ttl, subj, hdr, data)
	}
	b.rawLen += int64(n)
	if (s.syncAlways || len(b.buf) >= asyncFlushSize) && !s.inBatch {
		if err := s.flushLocked(); err != nil {
			b.buf = b.buf[:mark]
			b.rawLen -= int64(n)
			return 0, 0, err
		}
	}

	if ss == nil {
		ss = s.subjects.intern(subj)
	}
	e := entry{seq: seq, ts: ts, off: uint32(off), length: uint32(n), subj: ss.id, flags: s.entryFlags()}
	if len(hdr) > 0 {
		e.flags |= entryHdr
	}
	switch {
	case ttl > 0:
		e.flags |= entryTTL
	case ttl < 0:
		e.flags |= entryNoAge
	}
	b.addEntry(e)
	ss.add(seq)
	if s.msgs == 0 {
		s.firstSeq = seq
	}
	s.msgs++
	s.bytes += size
	s.lastSeq, s.lastTime = seq, ts

	// The evictions this record causes are written only once it is
	// durable: a tombstone that reached the disk without the record
	// would lose both.
	cause := s.written + uint64(len(b.buf))
	s.enforceSubjectLimit(ss, cause)
	s.enforceDiscardOld(cause)
	if ttl > 0 {
		s.expiry.AddTTL(seq, ts+ttl, s.hasSeq)
	}
	if ttl >= 0 && cfg.MaxAge > 0 {
		s.expiry.Arm(ts + int64(cfg.MaxAge))
	}
	return seq, ts, nil
}

// checkDiscardNew applies the DiscardNew rules to a message of size bytes
// for subject ss (nil when new). A message that replaces its subject's
// oldest (atLimit without DiscardNewPerSubject) does not grow the count and
// grows the bytes only by the difference.
func (s *Stream) checkDiscardNew(ss *subjectState, atLimit bool, size uint64) error {
	cfg := &s.cfg.Config
	if atLimit && cfg.DiscardNewPerSubject {
		return store.ErrMaxMsgsPerSubject
	}
	if cfg.MaxMsgs > 0 && !atLimit && s.msgs >= uint64(cfg.MaxMsgs) {
		return store.ErrMaxMsgs
	}
	if cfg.MaxBytes > 0 {
		bytes := s.bytes + size
		if atLimit {
			if b, i := s.locate(s.subjectFirst(ss, true)); b != nil {
				bytes -= b.entries[i].size()
			}
		}
		if bytes > uint64(cfg.MaxBytes) {
			return store.ErrMaxBytes
		}
	}
	return nil
}

// ensureRoom makes sure the active block can take a record of n bytes,
// sealing it and starting the next one if not.
func (s *Stream) ensureRoom(n int) error {
	b := s.active
	if b != nil && (b.rawLen == 0 || b.rawLen+int64(n) <= s.cfg.BlockSize) {
		return nil
	}
	return s.roll()
}

// roll seals the active block (flush and fsync) and makes a new, empty
// block active. On failure the old block stays active.
func (s *Stream) roll() error {
	old := s.active
	if old != nil {
		if err := s.syncLocked(); err != nil {
			return err
		}
	}
	nb, err := s.createBlock(s.nextID, s.lastSeq, s.lastTime, nil)
	if err != nil {
		return err
	}
	s.nextID++
	s.blocks = append(s.blocks, nb)
	s.active = nb
	if old != nil {
		// The new block will likely hold as many messages as the full
		// one: room for them at once spares the copies of growing.
		if n := len(old.entries); n > 0 && old.rawLen >= s.cfg.BlockSize/2 {
			nb.entries = make([]entry, 0, n+n/32)
		}
		s.seal(old)
	}
	return nil
}

// seal marks b read-only and queues its maintenance.
func (s *Stream) seal(b *block) {
	b.sealed = true
	b.buf = nil
	if cap(b.entries) > len(b.entries)+len(b.entries)/8 {
		// Appending left up to twice the room needed; a sealed block
		// never grows.
		b.entries = slices.Clone(b.entries)
	}
	b.needIndex = true
	b.needCompress = s.compression == CompressionS2 && !b.compressed()
	s.kick()
}

// createBlock creates block file id, writes its header followed by
// initial (whole records, or nil) and syncs it. The header and the records
// go out in one write and one fsync, so after a crash the block either
// holds both or is an empty file that recovery removes.
func (s *Stream) createBlock(id uint32, baseSeq uint64, baseTime int64, initial []byte) (*block, error) {
	name := blockName(s.dir, id)
	f, err := s.fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, vfs.PermFile)
	if err != nil {
		return nil, ioError("create", id, err)
	}
	h := blockHeader{id: id, baseSeq: baseSeq, baseTime: baseTime, stamp: rand.Uint64()}
	data := append(appendBlockHeader(nil, h), initial...)
	if _, err = f.WriteAt(data, 0); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		_ = s.fsys.Remove(name)
		return nil, ioError("create", id, err)
	}
	n := int64(len(initial))
	return &block{
		id: id, file: f, hdr: h, fileSize: blockHeaderLen + n, rawLen: n, written: n,
		maxSeq: baseSeq, lastTime: baseTime,
	}, nil
}

// flushLocked writes the active block's buffer to its file. On failure
// the buffer is kept for a later attempt and the error wraps
// store.ErrStoreFull when the disk is full.
func (s *Stream) flushLocked() error {
	b := s.active
	if b.tailDirty {
		if err := b.file.Truncate(blockHeaderLen + b.written); err != nil {
			return ioError("truncate", b.id, err)
		}
		b.tailDirty = false
	}
	if len(b.buf) == 0 {
		return nil
	}
	if _, err := b.file.WriteAt(b.buf, blockHeaderLen+b.written); err != nil {
		// Part of the buffer may have reached the file: cut it off now,
		// or before the next write.
		if terr := b.file.Truncate(blockHeaderLen + b.written); terr != nil {
			b.tailDirty = true
		}
		s.writeFailed = true
		return ioError("write", b.id, err)
	}
	s.writeFailed = false
	b.written += int64(len(b.buf))
	b.fileSize = blockHeaderLen + b.written
	s.written += uint64(len(b.buf))
	if cap(b.buf) > 4*asyncFlushSize {
		b.buf = nil
	} else {
		b.buf = b.buf[:0]
	}
	return nil
}

// ioError wraps an I/O error on block id; a full disk also wraps
// store.ErrStoreFull.
func ioError(op string, id uint32, err error) error {
	if isFull(err) {
		return fmt.Errorf("%w: filestore: %s block %d: %w", store.ErrStoreFull, op, id, err)
	}
	return fmt.Errorf("filestore: %s block %d: %w", op, id, err)
}

// isFull reports whether err means the disk or quota is full.
func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// locate returns the block and entry index of live message seq, or nil.
func (s *Stream) locate(seq uint64) (*block, int) {
	i := sort.Search(len(s.blocks), func(i int) bool { return s.blocks[i].maxSeq >= seq })
	if i == len(s.blocks) {
		return nil, -1
	}
	b := s.blocks[i]
	if b.live == 0 || (b.evicted.Load() && (seq < b.liveLo || seq > b.liveHi)) {
		return nil, -1
	}
	s.ents(b)
	j := b.find(seq)
	if j < 0 || !b.entries[j].live() {
		return nil, -1
	}
	return b, j
}

// Load returns message seq; see store.Stream. The returned Msg's slices
// are freshly allocated and owned by the caller; a record that fails its
// checksum gives an error wrapping store.ErrCorrupt.
func (s *Stream) Load(seq uint64, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if seq == 0 || seq > s.lastSeq {
		return nil, store.ErrNotFound
	}
	b, i := s.locate(seq)
	if b == nil {
		return nil, store.ErrDeleted
	}
	return s.loadEntry(b, &b.entries[i], sm)
}

// loadEntry reads and verifies the record of e and fills sm (a new Msg
// when nil). Header and Data are copied into sm.Buf when the caller lent
// one, else into one new allocation; records come from the block's read
// window, a decoded chunk or the active block's buffer, so loading in
// sequence order costs a pread per window, not per message.
func (s *Stream) loadEntry(b *block, e *entry, sm *store.Msg) (*store.Msg, error) {
	var rec []byte
	var err error
	windowed := false
	switch {
	case b.compressed():
		rec, err = s.cache.record(b, e.off, e.length)
	case int64(e.off) >= b.written:
		i := int64(e.off) - b.written
		if i+int64(e.length) > int64(len(b.buf)) {
			err = fmt.Errorf("%w: filestore: record beyond end of block %d", store.ErrCorrupt, b.id)
		} else {
			rec = b.buf[i : i+int64(e.length)]
		}
	default:
		rec, err = s.reads.view(b, e.off, e.length)
		windowed = true
	}
	if err == nil {
		sm, err = s.fillMsg(b, e, rec, sm)
	}
	if windowed {
		s.reads.mu.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("filestore: load %d: %w", e.seq, err)
	}
	return sm, nil
}

// fillMsg verifies rec, the record of e, and copies it into sm.
func (s *Stream) fillMsg(b *block, e *entry, rec []byte, sm *store.Msg) (*store.Msg, error) {
	r, n, err := parseRecord(rec)
	want := uint8(kindMsg)
	if s.key != nil {
		want = kindSealed
	}
	if err == nil && (n != len(rec) || r.kind != want || r.seq != e.seq) {
		err = fmt.Errorf("%w: filestore: block %d holds another record at offset %d", store.ErrCorrupt, b.id, e.off)
	}
	if err != nil {
		return nil, fmt.Errorf("block %d: %w", b.id, err)
	}
	if sm == nil {
		sm = new(store.Msg)
	}
	if r.kind == kindSealed {
		return s.openMsg(b, e, rec, &r, sm)
	}
	need := len(r.header) + len(r.data)
	var buf []byte
	switch {
	case sm.Buf == nil:
		buf = make([]byte, need)
	case cap(sm.Buf) < need:
		buf = make([]byte, need)
		sm.Buf = buf[:0]
	default:
		buf = sm.Buf[:need]
	}
	nd := copy(buf, r.data)
	copy(buf[nd:], r.header)
	sm.Subject = s.subjects.byID[e.subj].name
	sm.Seq, sm.Time = r.seq, r.ts
	sm.Data = buf[:nd:nd]
	sm.Header = nil
	if len(r.header) > 0 {
		sm.Header = buf[nd:need:need]
	}
	return sm, nil
}

// State returns the stream's summary; see store.Stream. A closed stream
// returns the zero State.
func (s *Stream) State() store.State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.State{}
	}
	st := store.State{
		Msgs:        s.msgs,
		Bytes:       s.bytes,
		FirstSeq:    s.firstSeq,
		LastSeq:     s.lastSeq,
		NumSubjects: len(s.subjects.byName),
	}
	if s.lastTime != 0 {
		st.LastTime = time.Unix(0, s.lastTime).UTC()
	}
	if e := s.firstEntry(); e != nil {
		st.FirstTime = time.Unix(0, e.ts).UTC()
		st.NumDeleted = int(s.lastSeq - s.firstSeq + 1 - s.msgs)
	}
	return st
}

// UpdateConfig applies new limits; see store.Stream. BlockSize,
// SyncInterval and Compression are fixed at Open; only the store.Config
// part changes. Smaller limits evict at once.
func (s *Stream) UpdateConfig(cfg store.Config) error {
	if err := (Config{Config: cfg}).Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.cfg.Config = cfg
	s.enforceAllSubjectLimits()
	s.enforceDiscardOld(0)
	s.rearmExpiry()
	s.reapLocked()
	return nil
}

// Sync writes buffered records and fsyncs the active block. Streams with
// a SyncInterval call it on their timer; it is useful before a planned
// power-off.
func (s *Stream) Sync() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	s.releaseEvictions()
	err := s.flushLocked()
	ticket := s.written
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.waitDurable(ticket)
}

// SyncDeferred reports whether Store returns before its record is on disk
// (a SyncInterval is set), so that a Sync, or the timer, makes it durable;
// see store.Syncer.
func (s *Stream) SyncDeferred() bool { return !s.syncAlways }

// Close flushes, syncs, writes the index files that are due and releases
// the stream. Later calls return store.ErrClosed (State and the queries
// return zero values), except Close and Delete.
func (s *Stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.expiry.Stop()
	s.mu.Unlock()

	close(s.stop)
	s.wg.Wait()

	s.maintMu.Lock()
	defer s.maintMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.syncLocked()
	if err == nil {
		// The tombstones of evictions that fsync released go out now
		// rather than being derived again at the next Open (no fsync if
		// there are none).
		err = s.syncLocked()
	}
	if err == nil {
		for _, b := range s.blocks {
			if b.needIndex || b == s.active {
				if ierr := s.writeBlockIndex(b); ierr != nil && err == nil {
					err = ierr
				}
			}
		}
	} else {
		s.failSync(err)
	}
	s.releaseFiles()
	s.reads.release()
	return err
}

// releaseFiles closes every block file.
func (s *Stream) releaseFiles() {
	for _, b := range s.blocks {
		s.closeFile(b)
	}
}

// Delete closes the stream and removes its directory. Errors flushing
// data that is about to be removed anyway are ignored.
func (s *Stream) Delete() error {
	_ = s.Close()
	if err := s.fsys.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// kick wakes the maintenance goroutine.
func (s *Stream) kick() {
	select {
	case s.work <- struct{}{}:
	default:
	}
}
