package sublist

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/leafbox/leafbox/core/subject"
)

var (
	// ErrInvalidSubject is returned by Insert and Remove when the subject
	// is not a valid subscription subject.
	ErrInvalidSubject = errors.New("sublist: invalid subject")
	// ErrInvalidQueue is returned by Insert and Remove when the queue name
	// is neither "" nor a valid queue group name.
	ErrInvalidQueue = errors.New("sublist: invalid queue name")
	// ErrNotFound is returned by Remove when the entry is not present.
	ErrNotFound = errors.New("sublist: no such entry")
)

const (
	// cacheSize bounds the number of subjects in the match cache.
	cacheSize = 1024
	// stackTokens is how many subject tokens are split into a stack array
	// before spilling to the heap.
	stackTokens = 32
	// stackNodes is how many matching trie nodes are gathered on the stack
	// before spilling to the heap.
	stackNodes = 16
	// sweepBudget bounds the subject matches one RemoveBatch spends on the
	// cache: beyond it the whole cache is dropped instead. One wildcard
	// over a full cache fits.
	sweepBudget = cacheSize
)

// Sublist is a subscription index: a trie of subject tokens with a bounded
// cache of match results. It is safe for concurrent use; see the package
// documentation for the lock order and result ownership. The zero value is
// an empty Sublist ready to use.
type Sublist[T comparable] struct {
	mu    sync.RWMutex // guards root and count; taken before cacheMu
	root  node[T]
	count int

	cacheMu sync.RWMutex          // guards cache
	cache   map[string]*Result[T] // literal subject → immutable result

	empty Result[T] // the shared result of every subject with no interest

	// gen counts the changes to the entries; Memo compares it to tell
	// whether a result it holds is still current. It is bumped under
	// mu, after the trie and the cache were changed.
	gen atomic.Uint64

	inserts, removes atomic.Uint64
	cacheHits        atomic.Uint64
	cacheMisses      atomic.Uint64
}

// New returns an empty Sublist.
func New[T comparable]() *Sublist[T] { return &Sublist[T]{} }

// Insert adds the entry (subj, queue, v). subj may hold "*" and ">" tokens;
// queue is a queue group name, or "" for a plain subscriber. Inserting an
// entry that is already present adds a second, identical entry.
func (s *Sublist[T]) Insert(subj, queue string, v T) error {
	if err := validate(subj, queue); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &s.root
	for rest, more := subj, true; more; {
		var tok string
		tok, rest, more = strings.Cut(rest, ".")
		n = n.child(tok)
	}
	queue = n.add(queue, v) // the node's copy, which results may share
	s.count++
	s.inserts.Add(1)
	s.refreshCache(subj, func(r *Result[T]) *Result[T] { return r.with(queue, v) })
	s.gen.Add(1)
	return nil
}

// step records one edge of a descent through the trie, for pruning.
type step[T comparable] struct {
	parent *node[T]
	tok    string
}

// Remove deletes one entry (subj, queue, v) and returns ErrNotFound if there
// is none.
func (s *Sublist[T]) Remove(subj, queue string, v T) error {
	if err := validate(subj, queue); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.removeLocked(subj, queue, v) {
		return ErrNotFound
	}
	s.cacheMu.Lock()
	s.dropCachedLocked(subj)
	s.cacheMu.Unlock()
	s.gen.Add(1)
	return nil
}

// Entry is one (subject, queue, value) triple: an argument of RemoveBatch,
// and what Walk reports.
type Entry[T comparable] struct {
	Subject string
	Queue   string // "" for a plain subscriber
	Value   T
}

// RemoveBatch deletes every entry of batch, each as Remove would, under one
// acquisition of the lock, and returns the entries that were present:
// batch[:n], compacted in place in their original order. Invalid and
// absent entries are skipped. It is meant for everything a closing
// connection subscribed: other callers wait for one hand-off of the lock,
// not one per entry, and the cache work is bounded per call (see the
// package documentation), however many entries batch holds.
func (s *Sublist[T]) RemoveBatch(batch []Entry[T]) []Entry[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	removed, wildcards := batch[:0], 0
	for _, e := range batch {
		if validate(e.Subject, e.Queue) != nil || !s.removeLocked(e.Subject, e.Queue, e.Value) {
			continue
		}
		removed = append(removed, e)
		if !subject.IsLiteral(e.Subject) {
			wildcards++
		}
	}
	if len(removed) == 0 {
		return removed
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	// Deferred calls run last in first out: the bump follows the cache
	// work, as in Remove.
	defer s.gen.Add(1)
	if wildcards*len(s.cache) > sweepBudget {
		// Sweeping would cost more subject matches than rebuilding the
		// cache on demand costs publishers: start afresh.
		clear(s.cache)
		return removed
	}
	for _, e := range removed {
		s.dropCachedLocked(e.Subject)
	}
	return removed
}

// removeLocked deletes one entry from the trie, pruning nodes left empty,
// and reports whether it was there. It leaves the cache alone. s.mu must
// be held for writing.
func (s *Sublist[T]) removeLocked(subj, queue string, v T) bool {
	var stack [stackTokens]step[T]
	path := stack[:0]
	n := &s.root
	for rest, more := subj, true; more; {
		var tok string
		tok, rest, more = strings.Cut(rest, ".")
		next := n.lookup(tok)
		if next == nil {
			return false
		}
		path = append(path, step[T]{parent: n, tok: tok})
		n = next
	}
	if !n.remove(queue, v) {
		return false
	}
	for i := len(path) - 1; i >= 0 && n.isEmpty(); i-- {
		n = path[i].parent
		n.prune(path[i].tok)
	}
	s.count--
	s.removes.Add(1)
	return true
}

func validate(subj, queue string) error {
	if !subject.Valid(subj) {
		return ErrInvalidSubject
	}
	if queue != "" && !subject.ValidQueue(queue) {
		return ErrInvalidQueue
	}
	return nil
}

// refreshCache replaces the cached result of every subject that pattern
// matches with update's copy of it (copy on write). s.mu must be held for
// writing.
func (s *Sublist[T]) refreshCache(pattern string, update func(*Result[T]) *Result[T]) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if subject.IsLiteral(pattern) {
		if r, ok := s.cache[pattern]; ok {
			s.cache[pattern] = update(r)
		}
		return
	}
	for key, r := range s.cache {
		if subject.Match(pattern, key) {
			s.cache[key] = update(r)
		}
	}
}

// dropCachedLocked deletes the cached result of every subject that pattern
// matches: a literal pattern costs one map deletion, a wildcard one subject
// match per cached subject. A dropped subject is rebuilt by its next Match.
// s.mu must be held for writing and s.cacheMu held.
func (s *Sublist[T]) dropCachedLocked(pattern string) {
	if subject.IsLiteral(pattern) {
		delete(s.cache, pattern)
		return
	}
	for key := range s.cache {
		if subject.Match(pattern, key) {
			delete(s.cache, key)
		}
	}
}

// Match returns the entries matching the literal subject subj. The result
// is shared and must not be modified. An invalid subject matches nothing.
// Match does not retain subj: on a cache miss it caches a copy.
func (s *Sublist[T]) Match(subj string) *Result[T] {
	s.cacheMu.RLock()
	r, ok := s.cache[subj]
	s.cacheMu.RUnlock()
	if ok {
		s.cacheHits.Add(1)
		return r
	}
	return s.matchMiss(subj, false)
}

// MatchBytes is Match for a subject held in a byte slice. It does not retain
// subj, and it does not allocate when the subject is cached.
func (s *Sublist[T]) MatchBytes(subj []byte) *Result[T] {
	s.cacheMu.RLock()
	r, ok := s.cache[string(subj)] // the compiler does not allocate here
	s.cacheMu.RUnlock()
	if ok {
		s.cacheHits.Add(1)
		return r
	}
	return s.matchMiss(string(subj), true)
}

// matchMiss walks the trie for subj and caches the result. Unless owned, subj
// is copied before it becomes a cache key, so that a substring of a larger
// string or an unsafe view of a buffer is never retained.
func (s *Sublist[T]) matchMiss(subj string, owned bool) *Result[T] {
	s.cacheMisses.Add(1)
	var tokenStack [stackTokens]string
	toks, ok := split(subj, tokenStack[:0])
	if !ok {
		return &s.empty
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var nodeStack [stackNodes]*node[T]
	r := &s.empty
	if nodes := s.root.match(toks, nodeStack[:0]); len(nodes) > 0 {
		r = build(nodes)
	}
	// Still under mu.RLock: no Insert or Remove can make r stale before
	// it is cached.
	if !owned {
		subj = strings.Clone(subj)
	}
	s.cacheMu.Lock()
	if _, present := s.cache[subj]; !present && len(s.cache) >= cacheSize {
		for key := range s.cache { // map order is random: evict any one
			delete(s.cache, key)
			break
		}
	}
	if s.cache == nil {
		s.cache = make(map[string]*Result[T])
	}
	s.cache[subj] = r
	s.cacheMu.Unlock()
	return r
}

// HasInterest reports whether any entry matches the literal subject subj.
// It consults the cache but does not fill it.
func (s *Sublist[T]) HasInterest(subj string) bool {
	s.cacheMu.RLock()
	r, ok := s.cache[subj]
	s.cacheMu.RUnlock()
	if ok {
		return !r.isEmpty()
	}
	var tokenStack [stackTokens]string
	toks, ok := split(subj, tokenStack[:0])
	if !ok {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.root.interest(toks)
}

// split appends the tokens of subj to dst, or reports false if subj is not
// a valid literal subject.
func split(subj string, dst []string) ([]string, bool) {
	if !subject.ValidPublish(subj) {
		return dst, false
	}
	for rest, more := subj, true; more; {
		var tok string
		tok, rest, more = strings.Cut(rest, ".")
		dst = append(dst, tok)
	}
	return dst, true
}

// Count returns the number of entries, counting repeated insertions.
func (s *Sublist[T]) Count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.count
}

// Walk calls fn for every entry, once per insertion, in unspecified order,
// until fn returns false. It calls fn on a snapshot taken when Walk starts,
// with no lock held, so fn may call any method of s; changes fn makes are
// not visited.
func (s *Sublist[T]) Walk(fn func(subject, queue string, v T) bool) {
	s.mu.RLock()
	entries := s.root.appendEntries(make([]Entry[T], 0, s.count), nil)
	s.mu.RUnlock()
	for _, e := range entries {
		if !fn(e.Subject, e.Queue, e.Value) {
			return
		}
	}
}
