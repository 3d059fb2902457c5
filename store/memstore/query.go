package memstore

import (
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/query"
)

// listWalkMax is the subject size up to which LoadNext walks a subject's
// list instead of scanning the log.
const listWalkMax = 16

// LoadNext returns the first message with sequence ≥ start matching filter;
// see store.Stream. A literal filter uses the per-subject index; a wildcard
// filter scans forward from start. sm is filled as by Load.
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
	var e *entry
	switch query.Classify(filter) {
	case query.All:
		if i := s.log.nextLive(s.log.search(start)); i < s.log.n {
			e = s.log.at(i)
		}
	case query.Literal:
		e = s.nextLiteral(filter, start)
	default:
		for i := s.log.search(start); i < s.log.n; i++ {
			if c := s.log.at(i); c.live() && subject.Match(filter, c.subject.name) {
				e = c
				break
			}
		}
	}
	if e == nil {
		return nil, store.ErrNotFound
	}
	return fill(e, sm), nil
}

// nextLiteral returns the first message of subject subj with sequence ≥
// start, or nil.
func (s *Stream) nextLiteral(subj string, start uint64) *entry {
	ss := s.subjects[subj]
	switch {
	case ss == nil || start > ss.last:
		return nil
	case start <= ss.first:
		return s.log.get(ss.first)
	}
	// A consumer reading a subject in order asks for the message after
	// the one it just read: follow that one's link.
	if p := s.log.get(start - 1); p != nil && p.subject == ss {
		return s.log.get(p.next)
	}
	if ss.msgs <= listWalkMax {
		for seq := ss.first; seq != 0; {
			e := s.log.get(seq)
			if seq >= start {
				return e
			}
			seq = e.next
		}
		return nil
	}
	for i := s.log.search(start); i < s.log.n; i++ {
		if e := s.log.at(i); e.subject == ss {
			return e
		}
	}
	return nil
}

// LoadLast returns the newest message matching filter; see store.Stream.
func (s *Stream) LoadLast(filter string, sm *store.Msg) (*store.Msg, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	var e *entry
	switch query.Classify(filter) {
	case query.All:
		if i := s.log.last(); i >= 0 {
			e = s.log.at(i)
		}
	case query.Literal:
		if ss := s.subjects[filter]; ss != nil {
			e = s.log.get(ss.last)
		}
	default:
		if uint64(len(s.subjects)) < s.msgs {
			var last uint64
			for _, ss := range s.subjects {
				if ss.last > last && subject.Match(filter, ss.name) {
					last = ss.last
				}
			}
			e = s.log.get(last)
			break
		}
		for i := s.log.n - 1; i >= 0; i-- {
			if c := s.log.at(i); c.live() && subject.Match(filter, c.subject.name) {
				e = c
				break
			}
		}
	}
	if e == nil {
		return nil, store.ErrNotFound
	}
	return fill(e, sm), nil
}

// FilteredState summarises the messages matching filter with sequence ≥
// from; see store.Stream. With no match it returns the zero value. It is
// O(1) for "" and ">" from the first sequence and for a literal subject
// from before its first message; otherwise it costs the smaller of a scan
// from from and a walk of the matching subjects.
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
	kind := query.Classify(filter)
	switch kind {
	case query.All:
		if from == s.firstSeq {
			return store.FilteredState{Msgs: s.msgs, First: s.firstSeq, Last: s.log.at(s.log.last()).seq}
		}
	case query.Literal:
		var fs store.FilteredState
		if ss := s.subjects[filter]; ss != nil {
			s.addSubject(&fs, ss, from)
		}
		return fs
	default:
		if uint64(len(s.subjects)) <= s.lastSeq-from+1 {
			var fs store.FilteredState
			for _, ss := range s.subjects {
				if from <= ss.last && subject.Match(filter, ss.name) {
					s.addSubject(&fs, ss, from)
				}
			}
			return fs
		}
	}
	var fs store.FilteredState
	for i := s.log.search(from); i < s.log.n; i++ {
		e := s.log.at(i)
		if !e.live() || (kind != query.All && !subject.Match(filter, e.subject.name)) {
			continue
		}
		if fs.Msgs == 0 {
			fs.First = e.seq
		}
		fs.Msgs++
		fs.Last = e.seq
	}
	return fs
}

// addSubject adds subject ss's messages with sequence ≥ from to fs.
func (s *Stream) addSubject(fs *store.FilteredState, ss *subjectState, from uint64) {
	if from > ss.last {
		return
	}
	msgs, first := ss.msgs, ss.first
	if from > ss.first {
		// Walk back from the newest: it visits only the messages
		// counted, all of which a scan from from would visit too.
		msgs = 0
		for seq := ss.last; seq >= from; {
			msgs++
			first = seq
			seq = s.log.get(seq).prev
		}
	}
	if fs.Msgs == 0 || first < fs.First {
		fs.First = first
	}
	fs.Last = max(fs.Last, ss.last)
	fs.Msgs += msgs
}

// SubjectsState returns the message count per subject matching filter; see
// store.Stream. The map is new and owned by the caller.
func (s *Stream) SubjectsState(filter string) map[string]uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil
	}
	switch query.Classify(filter) {
	case query.All:
		m := make(map[string]uint64, len(s.subjects))
		for name, ss := range s.subjects {
			m[name] = ss.msgs
		}
		return m
	case query.Literal:
		m := make(map[string]uint64, 1)
		if ss := s.subjects[filter]; ss != nil {
			m[ss.name] = ss.msgs
		}
		return m
	default:
		m := make(map[string]uint64)
		for name, ss := range s.subjects {
			if subject.Match(filter, name) {
				m[name] = ss.msgs
			}
		}
		return m
	}
}
