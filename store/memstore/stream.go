package memstore

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/expiry"
)

// subjectState indexes the live messages of one subject: how many there are
// and the ends of their list (linked through entry.prev and entry.next).
type subjectState struct {
	// name is the subject, copied once when the subject first appears and
	// shared by every message of the subject.
	name        string
	msgs        uint64
	first, last uint64
}

// Stream is an in-memory store.Stream. It is safe for concurrent use; the
// zero value is not usable, call New.
type Stream struct {
	mu       sync.RWMutex
	cfg      store.Config
	log      msgLog
	subjects map[string]*subjectState
	msgs     uint64
	bytes    uint64
	// firstSeq and lastSeq are the state's FirstSeq and LastSeq: lastSeq
	// is the last sequence assigned; firstSeq the first live one, or
	// lastSeq+1 once the stream has been emptied (0 before anything was
	// stored or purged).
	firstSeq uint64
	lastSeq  uint64
	// lastTime is the store time of the last stored message (Unix ns).
	lastTime int64
	closed   bool
	expiry   expiry.Timer
}

var _ store.Stream = (*Stream)(nil)

// New returns an empty in-memory stream with the limits of cfg, or an error
// wrapping store.ErrInvalidConfig.
func New(cfg store.Config) (*Stream, error) {
	if err := validate(cfg); err != nil {
		return nil, err
	}
	s := &Stream{cfg: cfg, subjects: make(map[string]*subjectState)}
	s.expiry.Fire = s.expire
	return s, nil
}

// validate rejects configurations no engine can honour.
func validate(cfg store.Config) error {
	var field string
	var value int64
	switch {
	case cfg.MaxMsgs < 0:
		field, value = "MaxMsgs", cfg.MaxMsgs
	case cfg.MaxBytes < 0:
		field, value = "MaxBytes", cfg.MaxBytes
	case cfg.MaxAge < 0:
		field, value = "MaxAge", int64(cfg.MaxAge)
	case cfg.MaxMsgsPerSubject < 0:
		field, value = "MaxMsgsPerSubject", cfg.MaxMsgsPerSubject
	case cfg.MaxMsgSize < 0:
		field, value = "MaxMsgSize", int64(cfg.MaxMsgSize)
	case cfg.Discard != store.DiscardOld && cfg.Discard != store.DiscardNew:
		return fmt.Errorf("%w: unknown discard policy %d", store.ErrInvalidConfig, cfg.Discard)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s is negative (%d)", store.ErrInvalidConfig, field, value)
}

// ErrInvalidSubject is returned by Store for a subject that is not a valid
// literal subject (empty, an empty token, whitespace or a wildcard token).
var ErrInvalidSubject = errors.New("memstore: invalid subject")

// ErrSeqExhausted is returned by Store once the last sequence is the
// largest possible (after a purge up to math.MaxUint64).
var ErrSeqExhausted = errors.New("memstore: sequence space exhausted")

// Store appends a message; see store.Stream. It copies hdr and data into one
// new buffer and, for a subject it already holds, allocates nothing else
// (beyond amortised growth of the log). A ttl below zero with AllowMsgTTL
// exempts the message from MaxAge; a ttl without AllowMsgTTL is ignored.
func (s *Stream) Store(subj string, hdr, data []byte, ttl int64) (uint64, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storeLocked(subj, hdr, data, ttl)
}

func (s *Stream) storeLocked(subj string, hdr, data []byte, ttl int64) (uint64, int64, error) {
	if s.closed {
		return 0, 0, store.ErrClosed
	}
	// A subject already indexed was validated when it was first stored.
	ss := s.subjects[subj]
	if ss == nil && !subject.ValidLiteral(subj) {
		return 0, 0, ErrInvalidSubject
	}
	cfg := &s.cfg
	if cfg.MaxMsgSize > 0 && len(hdr)+len(data) > int(cfg.MaxMsgSize) {
		return 0, 0, store.ErrMaxMsgSize
	}
	size := store.Size(subj, hdr, data)
	// atLimit: storing replaces the subject's oldest message.
	atLimit := cfg.MaxMsgsPerSubject > 0 && ss != nil && ss.msgs >= uint64(cfg.MaxMsgsPerSubject)
	if cfg.Discard == store.DiscardNew {
		if err := s.checkDiscardNew(ss, atLimit, size); err != nil {
			return 0, 0, err
		}
	} else if cfg.MaxBytes > 0 && size > uint64(cfg.MaxBytes) {
		// It could never fit: evicting everything, itself included,
		// would be a silent drop.
		return 0, 0, store.ErrMaxBytes
	}

	if s.lastSeq == math.MaxUint64 {
		return 0, 0, ErrSeqExhausted
	}
	seq, ts := s.lastSeq+1, time.Now().UnixNano()
	e := entry{seq: seq, ts: ts, hdrLen: uint32(len(hdr))}
	if n := len(hdr) + len(data); n > 0 {
		e.buf = make([]byte, n)
		copy(e.buf, hdr)
		copy(e.buf[len(hdr):], data)
	}
	if ss == nil {
		ss = &subjectState{name: strings.Clone(subj), first: seq}
		s.subjects[ss.name] = ss
	} else {
		e.prev = ss.last
		s.log.get(ss.last).next = seq
	}
	e.subject = ss
	ss.msgs++
	ss.last = seq
	if cfg.AllowMsgTTL {
		switch {
		case ttl > 0:
			e.flags |= flagTTL
		case ttl < 0:
			e.flags |= flagNoAge
		}
	}
	s.log.append(e)
	if s.msgs == 0 {
		s.firstSeq = seq
	}
	s.msgs++
	s.bytes += size
	s.lastSeq, s.lastTime = seq, ts

	if cfg.MaxMsgsPerSubject > 0 {
		for ss.msgs > uint64(cfg.MaxMsgsPerSubject) {
			s.removeSeq(ss.first, false)
		}
	}
	s.enforceDiscardOld()
	if e.flags&flagTTL != 0 {
		s.expiry.AddTTL(seq, addSat(ts, ttl), s.hasSeq)
	}
	if cfg.MaxAge > 0 && e.flags&flagNoAge == 0 {
		s.expiry.Arm(addSat(ts, int64(cfg.MaxAge)))
	}
	return seq, ts, nil
}

// checkDiscardNew applies the DiscardNew rules to a message of size bytes
// for subject ss (nil when new). A message that replaces its subject's
// oldest (atLimit without DiscardNewPerSubject) does not grow the count, and
// grows the bytes only by the difference.
func (s *Stream) checkDiscardNew(ss *subjectState, atLimit bool, size uint64) error {
	cfg := &s.cfg
	if atLimit && cfg.DiscardNewPerSubject {
		return store.ErrMaxMsgsPerSubject
	}
	if cfg.MaxMsgs > 0 && !atLimit && s.msgs >= uint64(cfg.MaxMsgs) {
		return store.ErrMaxMsgs
	}
	if cfg.MaxBytes > 0 {
		bytes := s.bytes + size
		if atLimit {
			bytes -= s.log.get(ss.first).size()
		}
		if bytes > uint64(cfg.MaxBytes) {
			return store.ErrMaxBytes
		}
	}
	return nil
}

// enforceDiscardOld evicts the oldest messages while MaxMsgs or MaxBytes is
// exceeded, under DiscardOld. Under DiscardNew nothing is evicted: new
// messages are refused instead.
func (s *Stream) enforceDiscardOld() {
	cfg := &s.cfg
	if cfg.Discard != store.DiscardOld {
		return
	}
	for cfg.MaxMsgs > 0 && s.msgs > uint64(cfg.MaxMsgs) {
		s.removeAt(0, false)
	}
	for cfg.MaxBytes > 0 && s.bytes > uint64(cfg.MaxBytes) {
		s.removeAt(0, false)
	}
}

// enforcePerSubject evicts each subject's oldest messages beyond
// MaxMsgsPerSubject.
func (s *Stream) enforcePerSubject() {
	limit := uint64(s.cfg.MaxMsgsPerSubject)
	if limit == 0 {
		return
	}
	for _, ss := range s.subjects {
		for ss.msgs > limit {
			s.removeSeq(ss.first, false)
		}
	}
}

// removeSeq removes the live message seq and reports whether there was one.
func (s *Stream) removeSeq(seq uint64, erase bool) bool {
	i := s.log.find(seq)
	if i < 0 {
		return false
	}
	s.removeAt(i, erase)
	return true
}

// removeAt removes the live entry at index i, unlinking it from its subject.
// Unless the stream is held, indexes are invalid afterwards.
func (s *Stream) removeAt(i int, erase bool) {
	e := s.log.at(i)
	ss := e.subject
	ss.msgs--
	if ss.msgs == 0 {
		delete(s.subjects, ss.name)
	} else {
		if e.prev == 0 {
			ss.first = e.next
		} else {
			s.log.get(e.prev).next = e.next
		}
		if e.next == 0 {
			ss.last = e.prev
		} else {
			s.log.get(e.next).prev = e.prev
		}
	}
	s.msgs--
	s.bytes -= e.size()
	if e.flags&flagTTL != 0 {
		s.expiry.Live--
	}
	if erase {
		clear(e.buf)
	}
	s.log.remove(i)
	if !s.log.hold {
		s.updateFirst()
	}
}

// hold keeps slot indexes stable across removals, for a loop that removes
// by index; release must follow.
func (s *Stream) hold() { s.log.hold = true }

// release ends a hold.
func (s *Stream) release() {
	s.log.release()
	s.updateFirst()
}

// updateFirst recomputes firstSeq after a removal.
func (s *Stream) updateFirst() {
	if s.msgs == 0 {
		s.firstSeq = s.lastSeq + 1
		return
	}
	s.firstSeq = s.log.at(0).seq
}

// Load returns the message with sequence seq; see store.Stream. It fills sm
// (or a new Msg when sm is nil), reusing the capacity of sm.Header and
// sm.Data: pass a Msg whose slices you no longer need, or nil.
func (s *Stream) Load(seq uint64, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if seq == 0 || seq > s.lastSeq {
		return nil, store.ErrNotFound
	}
	e := s.log.get(seq)
	if e == nil {
		return nil, store.ErrDeleted
	}
	return fill(e, sm), nil
}

// fill copies e into sm, or into a new Msg when sm is nil.
func fill(e *entry, sm *store.Msg) *store.Msg {
	if sm == nil {
		sm = new(store.Msg)
	}
	sm.Subject, sm.Seq, sm.Time = e.subject.name, e.seq, e.ts
	hdr, data := e.header(), e.data()
	if cap(sm.Header) == 0 && cap(sm.Data) == 0 && len(e.buf) > 0 {
		// One allocation for both.
		b := make([]byte, len(e.buf))
		copy(b, e.buf)
		sm.Header, sm.Data = nil, b[len(hdr):]
		if len(hdr) > 0 {
			sm.Header = b[:len(hdr):len(hdr)]
		}
		return sm
	}
	if len(hdr) == 0 {
		sm.Header = nil
	} else {
		sm.Header = append(sm.Header[:0], hdr...)
	}
	sm.Data = append(sm.Data[:0], data...)
	return sm
}

// Remove deletes message seq; see store.Stream. With erase the message's
// bytes are zeroed before its memory is released.
func (s *Stream) Remove(seq uint64, erase bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, store.ErrClosed
	}
	return s.removeSeq(seq, erase), nil
}

// State returns the stream's summary; a closed stream returns the zero
// State.
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
		NumSubjects: len(s.subjects),
	}
	if s.lastTime != 0 {
		st.LastTime = time.Unix(0, s.lastTime).UTC()
	}
	if s.msgs > 0 {
		st.FirstTime = time.Unix(0, s.log.at(0).ts).UTC()
		st.NumDeleted = int(s.lastSeq - s.firstSeq + 1 - s.msgs)
	}
	return st
}

// UpdateConfig applies new limits; see store.Stream. A smaller
// MaxMsgsPerSubject evicts each subject's oldest messages; smaller MaxMsgs
// or MaxBytes evict the stream's oldest under DiscardOld only (under
// DiscardNew new messages are refused until the stream is back under its
// limits); a smaller MaxAge expires at once. Per-subject limits apply first.
func (s *Stream) UpdateConfig(cfg store.Config) error {
	if err := validate(cfg); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.cfg = cfg
	s.enforcePerSubject()
	s.enforceDiscardOld()
	s.rearmExpiry()
	return nil
}

// Close stops the expiry timer and releases the messages. Every later call
// returns store.ErrClosed (State and the queries return zero values),
// except Close and Delete, which return nil.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.expiry.Stop()
	s.log = msgLog{}
	s.subjects = nil
	s.msgs, s.bytes = 0, 0
	return nil
}

// Delete is Close: a memory stream has nothing else to remove.
func (s *Stream) Delete() error { return s.Close() }
