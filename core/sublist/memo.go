package sublist

// Memo remembers the last subject one caller matched and its result, so
// that a caller publishing to the same subject over and over (a sensor, a
// benchmark, a request stream) gets the result without taking the
// Sublist's locks, hashing the subject or touching shared counters: a
// repeat costs one atomic load and one subject comparison. It stays
// exact: every Insert, Remove and RemoveBatch that changes the entries
// bumps a generation counter after updating the trie and the cache, and a
// Memo answers only while the counter has not moved since it matched, so
// a match that starts after a change returned sees it.
//
// A Memo belongs to one goroutine and serves one Sublist at a time (using
// it with another Sublist just matches afresh). The zero Memo is empty and
// ready to use.
type Memo[T comparable] struct {
	sl   *Sublist[T]
	gen  uint64
	subj []byte
	r    *Result[T]
	hits uint64 // answered here, not yet added to sl's statistics
}

// MatchBytesMemo is MatchBytes through m: when subj is the subject m last
// matched on s and no entry was inserted or removed since, it returns that
// result; otherwise it matches subj as MatchBytes does and remembers it.
// It does not retain subj (m keeps a copy, reusing its buffer) and does
// not allocate once m's buffer fits the subject.
func (s *Sublist[T]) MatchBytesMemo(subj []byte, m *Memo[T]) *Result[T] {
	// The generation is read before matching: a change that lands between
	// the two leaves m with a generation that is already old, so the next
	// call matches again rather than trusting a result of unknown age.
	g := s.gen.Load()
	if m.r != nil && m.sl == s && m.gen == g && string(m.subj) == string(subj) {
		m.hits++
		return m.r
	}
	m.FlushStats()
	r := s.MatchBytes(subj)
	m.sl, m.gen, m.r = s, g, r
	m.subj = append(m.subj[:0], subj...)
	return r
}

// maxMemoSubject is the longest subject buffer Forget keeps for reuse.
const maxMemoSubject = 256

// FlushStats adds the matches m answered since the last call to its
// Sublist's statistics (Stats counts them as cache hits). Callers on a hot
// path call it once per batch of messages, not per message.
func (m *Memo[T]) FlushStats() {
	if m.hits > 0 && m.sl != nil {
		m.sl.cacheHits.Add(m.hits)
	}
	m.hits = 0
}

// Forget flushes m's statistics and drops its result, so that m pins no
// value (a closed subscriber's connection, say) while its owner is idle;
// the next match starts afresh. Call it at the end of a batch.
func (m *Memo[T]) Forget() {
	m.FlushStats()
	m.sl, m.r = nil, nil
	if cap(m.subj) > maxMemoSubject {
		m.subj = nil
	}
}
