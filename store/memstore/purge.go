package memstore

import (
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/query"
)

// Purge removes the messages opts selects and returns how many; see
// store.Stream and store.PurgeOptions. The options combine: the candidates
// are the messages matching Subject ("" and ">" match all) with a sequence
// below Sequence (when non-zero), removed oldest first while more than Keep
// matching messages remain.
//
// An unfiltered purge without Keep also moves the sequences on: purging
// everything sets FirstSeq to LastSeq+1, and a Sequence beyond LastSeq+1
// makes it the next sequence assigned, as nats-server's compact does.
func (s *Stream) Purge(opts store.PurgeOptions) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	if opts.Sequence == 1 {
		// Nothing is below sequence 1.
		return 0, nil
	}
	kind := query.Classify(opts.Subject)
	if kind == query.All && opts.Keep == 0 {
		if opts.Sequence == 0 {
			return s.purgeAll(), nil
		}
		return s.compact(opts.Sequence), nil
	}

	total := s.filteredState(opts.Subject, 0).Msgs
	if opts.Keep >= total {
		return 0, nil
	}
	limit := total - opts.Keep
	bound := opts.Sequence // exclusive; 0 means none
	var purged uint64
	s.hold()
	if kind == query.Literal {
		ss := s.subjects[opts.Subject]
		for seq := ss.first; purged < limit && seq != 0 && (bound == 0 || seq < bound); {
			next := s.log.get(seq).next
			s.removeSeq(seq, false)
			purged++
			seq = next
		}
	} else {
		for i := 0; purged < limit && i < s.log.n; i++ {
			e := s.log.at(i)
			if bound != 0 && e.seq >= bound {
				break
			}
			if e.live() && (kind == query.All || subject.Match(opts.Subject, e.subject.name)) {
				s.removeAt(i, false)
				purged++
			}
		}
	}
	s.release()
	return purged, nil
}

// purgeAll removes every message.
func (s *Stream) purgeAll() uint64 {
	n := s.msgs
	s.log.reset()
	clear(s.subjects)
	s.expiry.ClearTTLs()
	s.msgs, s.bytes = 0, 0
	s.firstSeq = s.lastSeq + 1
	return n
}

// compact removes every message below seq. When seq is past the end it also
// makes seq the next sequence.
func (s *Stream) compact(seq uint64) uint64 {
	if seq > s.lastSeq {
		n := s.purgeAll()
		s.lastSeq = max(s.lastSeq, seq-1)
		s.firstSeq = s.lastSeq + 1
		return n
	}
	var purged uint64
	for s.msgs > 0 && s.log.at(0).seq < seq {
		s.removeAt(0, false)
		purged++
	}
	return purged
}
