package sublist

import "slices"

// indexAt is the size at which a set starts keeping a position index;
// smaller sets are searched linearly.
const indexAt = 16

// set is the multiset of values inserted at one trie node for one queue
// (or for plain subscribers). Distinct values sit in a dense slice so that a
// match copies them in one append; a value inserted more than once keeps its
// extra insertions in repeats, which is nil in practice.
type set[T comparable] struct {
	list    []T
	index   map[T]int // value → position in list; nil while the set is small
	repeats map[T]int // value → insertions beyond the first
}

func (s *set[T]) isEmpty() bool { return len(s.list) == 0 }

func (s *set[T]) find(v T) int {
	if s.index == nil {
		return slices.Index(s.list, v)
	}
	if i, ok := s.index[v]; ok {
		return i
	}
	return -1
}

func (s *set[T]) add(v T) {
	if s.find(v) >= 0 {
		if s.repeats == nil {
			s.repeats = make(map[T]int)
		}
		s.repeats[v]++
		return
	}
	s.list = append(s.list, v)
	switch {
	case s.index != nil:
		s.index[v] = len(s.list) - 1
	case len(s.list) >= indexAt:
		s.index = make(map[T]int, len(s.list))
		for i, x := range s.list {
			s.index[x] = i
		}
	}
}

// remove undoes one insertion of v and reports whether there was one.
func (s *set[T]) remove(v T) bool {
	i := s.find(v)
	if i < 0 {
		return false
	}
	if decrement(s.repeats, v) {
		if len(s.repeats) == 0 {
			s.repeats = nil
		}
		return true
	}
	last := len(s.list) - 1
	moved := s.list[last]
	s.list[i] = moved
	s.list = slices.Delete(s.list, last, last+1) // zeroes the vacated slot
	if s.index != nil {
		s.index[moved] = i
		delete(s.index, v) // after the line above, in case moved == v
		if len(s.list) < indexAt/2 {
			s.index = nil
		}
	}
	if len(s.list) == 0 {
		s.list = nil
	}
	return true
}

func decrement[K comparable](m map[K]int, k K) bool {
	c, ok := m[k]
	switch {
	case !ok:
		return false
	case c > 1:
		m[k] = c - 1
	default:
		delete(m, k)
	}
	return true
}

// appendTo appends every insertion in s to dst.
func (s *set[T]) appendTo(dst []T) []T {
	dst = append(dst, s.list...)
	if len(s.repeats) == 0 {
		return dst
	}
	for v, c := range s.repeats {
		for range c {
			dst = append(dst, v)
		}
	}
	return dst
}
