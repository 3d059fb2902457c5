package sublist

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/subject"
)

// canon renders a result in a canonical form: sorted plain values, then
// queues sorted by name with sorted members, as in "[1 2] q:[3]". It fails
// the test if r breaks the Result invariants.
func canon(t testing.TB, r *Result[int]) string {
	out, err := render(r, func(int) bool { return true })
	if err != nil {
		t.Helper() // only here: Helper is costly and canon is hot
		t.Fatal(err)
	}
	return out
}

// render is canon for the values keep accepts. It reports an error if r
// lists a queue twice or holds an empty queue. It may be called from any
// goroutine.
func render(r *Result[int], keep func(int) bool) (string, error) {
	b := appendSorted(nil, r.Plain, keep)
	queues := slices.Clone(r.Queues)
	slices.SortFunc(queues, func(a, b Queue[int]) int { return strings.Compare(a.Name, b.Name) })
	for i, q := range queues {
		if i > 0 && queues[i-1].Name == q.Name {
			return "", fmt.Errorf("queue %q appears twice in %+v", q.Name, r.Queues)
		}
		if len(q.Members) == 0 {
			return "", fmt.Errorf("queue %q is empty in %+v", q.Name, r.Queues)
		}
		if !slices.ContainsFunc(q.Members, keep) {
			continue
		}
		b = append(b, ' ')
		b = append(b, q.Name...)
		b = append(b, ':')
		b = appendSorted(b, q.Members, keep)
	}
	return string(b), nil
}

// appendSorted appends the values keep accepts, sorted, formatted like
// fmt formats an []int.
func appendSorted(b []byte, values []int, keep func(int) bool) []byte {
	var kept []int
	for _, v := range values {
		if keep(v) {
			kept = append(kept, v)
		}
	}
	slices.Sort(kept)
	b = append(b, '[')
	for i, v := range kept {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

// model is the naive reference: a flat list of entries matched linearly
// with subject.Match.
type model struct {
	entries []Entry[int]
}

func (m *model) insert(subj, queue string, v int) error {
	if err := validate(subj, queue); err != nil {
		return err
	}
	m.entries = append(m.entries, Entry[int]{Subject: subj, Queue: queue, Value: v})
	return nil
}

func (m *model) remove(subj, queue string, v int) error {
	if err := validate(subj, queue); err != nil {
		return err
	}
	i := slices.Index(m.entries, Entry[int]{Subject: subj, Queue: queue, Value: v})
	if i < 0 {
		return ErrNotFound
	}
	m.entries = slices.Delete(m.entries, i, i+1)
	return nil
}

func (m *model) match(subj string) *Result[int] {
	r := &Result[int]{}
	if !subject.ValidPublish(subj) {
		return r
	}
	for _, e := range m.entries {
		if !subject.Match(e.Subject, subj) {
			continue
		}
		if e.Queue == "" {
			r.Plain = append(r.Plain, e.Value)
			continue
		}
		i := r.queueIndex(e.Queue)
		if i < 0 {
			i = len(r.Queues)
			r.Queues = append(r.Queues, Queue[int]{Name: e.Queue})
		}
		r.Queues[i].Members = append(r.Queues[i].Members, e.Value)
	}
	return r
}

// walkEntries returns every entry Walk reports, in canonical order.
func walkEntries[T comparable](s *Sublist[T]) []string {
	var out []string
	s.Walk(func(subj, queue string, v T) bool {
		out = append(out, fmt.Sprintf("%s|%s|%v", subj, queue, v))
		return true
	})
	slices.Sort(out)
	return out
}

func (m *model) walkEntries() []string {
	var out []string
	for _, e := range m.entries {
		out = append(out, fmt.Sprintf("%s|%s|%v", e.Subject, e.Queue, e.Value))
	}
	slices.Sort(out)
	return out
}

// checkAgainst compares every observable of s with m over subjects, and
// checks the internal invariants of s.
func checkAgainst(t testing.TB, s *Sublist[int], m *model, subjects []string) {
	t.Helper()
	for _, subj := range subjects {
		want := m.match(subj)
		got := s.Match(subj)
		if g, w := canon(t, got), canon(t, want); g != w {
			t.Fatalf("Match(%q) = %s, want %s", subj, g, w)
		}
		if cap(got.Plain) != len(got.Plain) || cap(got.Queues) != len(got.Queues) {
			t.Fatalf("Match(%q) has spare capacity: %+v", subj, got)
		}
		for _, q := range got.Queues {
			if cap(q.Members) != len(q.Members) {
				t.Fatalf("Match(%q) has spare capacity in queue %q", subj, q.Name)
			}
		}
		if got.isEmpty() && got != &s.empty {
			t.Fatalf("Match(%q): empty result is not the shared empty result", subj)
		}
		if g, w := s.HasInterest(subj), !want.isEmpty(); g != w {
			t.Fatalf("HasInterest(%q) = %v, want %v", subj, g, w)
		}
		if toks, ok := split(subj, nil); ok { // HasInterest above hit the cache
			s.mu.RLock()
			direct := s.root.interest(toks)
			s.mu.RUnlock()
			if w := !want.isEmpty(); direct != w {
				t.Fatalf("trie interest(%q) = %v, want %v", subj, direct, w)
			}
		}
	}
	require.Equal(t, s.Count(), len(m.entries))
	require.Equal(t, fmt.Sprint(walkEntries(s)), fmt.Sprint(m.walkEntries()))
	checkInvariants(t, s)
}

// checkInvariants verifies that every cached result equals a fresh trie walk
// and that no node other than the root is empty.
func checkInvariants(t testing.TB, s *Sublist[int]) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.cacheMu.RLock()
	defer s.cacheMu.RUnlock()
	if len(s.cache) > cacheSize {
		t.Fatalf("cache holds %d subjects, limit %d", len(s.cache), cacheSize)
	}
	for subj, cached := range s.cache {
		var buf [8]string
		toks, ok := split(subj, buf[:0])
		if !ok {
			t.Fatalf("invalid subject %q cached", subj)
		}
		fresh := build(s.root.match(toks, nil))
		if g, w := canon(t, cached), canon(t, fresh); g != w {
			t.Fatalf("cache[%q] = %s, trie says %s", subj, g, w)
		}
	}
	var walk func(n *node[int], path string)
	walk = func(n *node[int], path string) {
		if n != &s.root && n.isEmpty() {
			t.Fatalf("empty node left at %q", path)
		}
		for tok, c := range n.literal {
			walk(c, path+"."+tok)
		}
		if n.wildcard != nil {
			walk(n.wildcard, path+".*")
		}
		if n.full != nil {
			if n.full.literal != nil || n.full.wildcard != nil || n.full.full != nil {
				t.Fatalf("node %q has children", path+".>")
			}
			walk(n.full, path+".>")
		}
	}
	walk(&s.root, "")
}
