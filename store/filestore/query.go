package filestore

import (
	"errors"
	"sort"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/query"
)

// matcher answers "does subject id match the filter" with a per-call memo,
// so a scan matches each distinct subject once.
type matcher struct {
	filter string
	memo   map[uint32]bool
	names  []*subjectState
}

func (s *Stream) newMatcher(filter string) *matcher {
	return &matcher{filter: filter, memo: make(map[uint32]bool), names: s.subjects.byID}
}

func (m *matcher) match(id uint32) bool {
	ok, seen := m.memo[id]
	if !seen {
		ok = subject.Match(m.filter, m.names[id].name)
		m.memo[id] = ok
	}
	return ok
}

// matchingSubjects returns the subjects matching a wildcard filter.
func (s *Stream) matchingSubjects(filter string) []*subjectState {
	var out []*subjectState
	for name, ss := range s.subjects.byName {
		if subject.Match(filter, name) {
			out = append(out, ss)
		}
	}
	return out
}

// LoadNext returns the first message with sequence ≥ start matching
// filter; see store.Stream. A literal filter uses the per-subject index; a
// wildcard filter first narrows the range with the matching subjects'
// bounds, then scans. A record that fails its checks is skipped like a
// gap: Open trusts a valid index without reading the records it covers,
// so damage there is found here, and one bad record must not hide the
// messages after it.
func (s *Stream) LoadNext(filter string, start uint64, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	start = max(start, s.firstSeq, 1)
	if s.msgs == 0 || start > s.lastSeq {
		return nil, store.ErrNotFound
	}
	var msg *store.Msg
	err := store.ErrNotFound
	found := func(b *block, e *entry) bool {
		m, lerr := s.loadEntry(b, e, sm)
		if errors.Is(lerr, store.ErrCorrupt) {
			return true
		}
		msg, err = m, lerr
		return false
	}
	switch query.Classify(filter) {
	case query.All:
		s.scan(start, s.lastSeq, found)
	case query.Literal:
		ss := s.subjects.byName[filter]
		if ss == nil || start > ss.last {
			return nil, store.ErrNotFound
		}
		s.scanWhere(max(start, ss.first), ss.last, ss, nil, func(b *block, e *entry) bool {
			if e.subj == ss.id {
				return found(b, e)
			}
			return true
		})
	default:
		from, to := start, s.lastSeq
		if len(s.subjects.byName) <= 1024 {
			// Few subjects: bound the scan by the matching ones.
			subs := s.matchingSubjects(filter)
			if len(subs) == 0 {
				return nil, store.ErrNotFound
			}
			lo, hi := subs[0].first, subs[0].last
			for _, ss := range subs[1:] {
				lo, hi = min(lo, ss.first), max(hi, ss.last)
			}
			from, to = max(from, lo), min(to, hi)
		}
		m := s.newMatcher(filter)
		s.scanWhere(from, to, nil, m, func(b *block, e *entry) bool {
			if m.match(e.subj) {
				return found(b, e)
			}
			return true
		})
	}
	return msg, err
}

// LoadNextWithHeader returns the first message with sequence ≥ start
// that carries a header, or store.ErrNotFound; see store.HeaderLoader.
// Messages without one are not read: the index entries say which carry
// one, and an evicted block whose messages carry none is passed over
// without loading its entries. Entries read from an index file of version
// 1 do not know, so those messages are loaded and checked. A record that
// fails its checks is skipped, as by LoadNext.
func (s *Stream) LoadNextWithHeader(start uint64, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	start = max(start, s.firstSeq, 1)
	if s.msgs == 0 || start > s.lastSeq {
		return nil, store.ErrNotFound
	}
	for _, b := range s.blocksFrom(start) {
		if b.live == 0 || b.lastLive() < start || (b.evicted.Load() && b.noHdrs) {
			continue
		}
		es := s.ents(b)
		for j := b.search(start); j < len(es); j++ {
			e := &es[j]
			if !e.live() || e.flags&entryHdr == 0 {
				continue
			}
			m, err := s.loadEntry(b, e, sm)
			switch {
			case errors.Is(err, store.ErrCorrupt):
				continue
			case err != nil:
				return nil, err
			case len(m.Header) > 0:
				return m, nil
			}
		}
	}
	return nil, store.ErrNotFound
}

// SeqFromTime returns the sequence of the first live message stored at or
// after ts (Unix ns), or LastSeq+1 when every message is older; see
// store.TimeSeeker. Store times do not decrease with the sequence, so the
// block is found by its last time and only its entries are loaded.
func (s *Stream) SeqFromTime(ts int64) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return s.lastSeq + 1
	}
	bs := s.blocks
	i := sort.Search(len(bs), func(i int) bool { return bs[i].lastTime >= ts })
	for _, b := range bs[i:] {
		if b.live == 0 {
			continue
		}
		es := s.ents(b)
		for j := sort.Search(len(es), func(j int) bool { return es[j].ts >= ts }); j < len(es); j++ {
			if es[j].live() {
				return es[j].seq
			}
		}
	}
	return s.lastSeq + 1
}

// LoadLast returns the newest message matching filter; see store.Stream.
func (s *Stream) LoadLast(filter string, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if s.msgs == 0 {
		return nil, store.ErrNotFound
	}
	var hit *entry
	var hitBlock *block
	found := func(b *block, e *entry) bool {
		hitBlock, hit = b, e
		return false
	}
	switch query.Classify(filter) {
	case query.All:
		s.scanBack(s.lastSeq, s.firstSeq, found)
	case query.Literal:
		ss := s.subjects.byName[filter]
		if ss == nil {
			return nil, store.ErrNotFound
		}
		s.scanBack(ss.last, ss.first, func(b *block, e *entry) bool {
			if e.subj == ss.id {
				return found(b, e)
			}
			return true
		})
	default:
		subs := s.matchingSubjects(filter)
		if len(subs) == 0 {
			return nil, store.ErrNotFound
		}
		lo, hi := subs[0].first, subs[0].last
		for _, ss := range subs[1:] {
			lo, hi = min(lo, ss.first), max(hi, ss.last)
		}
		m := s.newMatcher(filter)
		s.scanBack(hi, lo, func(b *block, e *entry) bool {
			if m.match(e.subj) {
				return found(b, e)
			}
			return true
		})
	}
	if hit == nil {
		return nil, store.ErrNotFound
	}
	return s.loadEntry(hitBlock, hit, sm)
}

// FilteredState summarises the messages matching filter with sequence ≥
// from; see store.Stream. It is O(1) for "" and ">" from the first
// sequence and for a literal subject from before its first message; other
// cases count per block where whole blocks qualify, or scan.
func (s *Stream) FilteredState(filter string, from uint64) store.FilteredState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.FilteredState{}
	}
	return s.filteredState(filter, from)
}

func (s *Stream) filteredState(filter string, from uint64) store.FilteredState {
	from = max(from, s.firstSeq, 1)
	if s.msgs == 0 || from > s.lastSeq {
		return store.FilteredState{}
	}
	var fs store.FilteredState
	count := func(b *block, e *entry) bool {
		if fs.Msgs == 0 {
			fs.First = e.seq
		}
		fs.Msgs++
		fs.Last = e.seq
		return true
	}
	switch query.Classify(filter) {
	case query.All:
		fs.Last = s.lastLive()
		if from == s.firstSeq {
			return store.FilteredState{Msgs: s.msgs, First: s.firstSeq, Last: fs.Last}
		}
		fs.First = s.nextLive(from)
		for _, b := range s.blocksFrom(from) {
			if b.live == 0 {
				continue
			}
			if b.firstLive() >= from {
				fs.Msgs += uint64(b.live)
				continue
			}
			es := s.ents(b)
			for j := b.search(from); j < len(es); j++ {
				if es[j].live() {
					fs.Msgs++
				}
			}
		}
		if fs.Msgs == 0 {
			return store.FilteredState{}
		}
		return fs
	case query.Literal:
		ss := s.subjects.byName[filter]
		if ss == nil || from > ss.last {
			return fs
		}
		if from <= ss.first {
			return store.FilteredState{Msgs: ss.msgs, First: s.subjectFirst(ss, false), Last: s.subjectLast(ss, false)}
		}
		s.scan(from, ss.last, func(b *block, e *entry) bool {
			if e.subj == ss.id {
				count(b, e)
			}
			return true
		})
		return fs
	default:
		subs := s.matchingSubjects(filter)
		if len(subs) == 0 {
			return fs
		}
		whole := true
		lo, hi := subs[0].first, subs[0].last
		for _, ss := range subs {
			lo, hi = min(lo, ss.first), max(hi, ss.last)
			if from > ss.first {
				whole = false
			}
		}
		if whole {
			for _, ss := range subs {
				first, last := s.subjectFirst(ss, false), s.subjectLast(ss, false)
				if fs.Msgs == 0 || first < fs.First {
					fs.First = first
				}
				fs.Last = max(fs.Last, last)
				fs.Msgs += ss.msgs
			}
			return fs
		}
		m := s.newMatcher(filter)
		s.scan(max(from, lo), hi, func(b *block, e *entry) bool {
			if m.match(e.subj) {
				count(b, e)
			}
			return true
		})
		return fs
	}
}

// lastLive returns the sequence of the newest live message, or 0.
func (s *Stream) lastLive() uint64 {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		if b := s.blocks[i]; b.live > 0 {
			return b.lastLive()
		}
	}
	return 0
}

// SubjectsState returns the message count per subject matching filter;
// see store.Stream. The map is new and owned by the caller.
func (s *Stream) SubjectsState(filter string) map[string]uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	switch query.Classify(filter) {
	case query.All:
		m := make(map[string]uint64, len(s.subjects.byName))
		for name, ss := range s.subjects.byName {
			m[name] = ss.msgs
		}
		return m
	case query.Literal:
		m := make(map[string]uint64, 1)
		if ss := s.subjects.byName[filter]; ss != nil {
			m[ss.name] = ss.msgs
		}
		return m
	default:
		m := make(map[string]uint64)
		for _, ss := range s.matchingSubjects(filter) {
			m[ss.name] = ss.msgs
		}
		return m
	}
}
