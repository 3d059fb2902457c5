package sublist

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

type testEntry struct {
	subject, queue string
	value          int
}

func newTestSublist(t testing.TB, entries ...testEntry) *Sublist[int] {
	t.Helper()
	s := New[int]()
	for _, e := range entries {
		require.NoError(t, s.Insert(e.subject, e.queue, e.value))
	}
	return s
}

func TestMatch(t *testing.T) {
	cases := []struct {
		name    string
		entries []testEntry
		subject string
		want    string
	}{
		{"literal", []testEntry{{"foo.bar", "", 1}}, "foo.bar", "[1]"},
		{"literal other", []testEntry{{"foo.bar", "", 1}}, "foo.baz", "[]"},
		{"literal shorter", []testEntry{{"foo.bar", "", 1}}, "foo", "[]"},
		{"literal longer", []testEntry{{"foo.bar", "", 1}}, "foo.bar.baz", "[]"},
		{"star", []testEntry{{"foo.*", "", 1}}, "foo.bar", "[1]"},
		{"star needs a token", []testEntry{{"foo.*", "", 1}}, "foo", "[]"},
		{"star is one token", []testEntry{{"foo.*", "", 1}}, "foo.bar.baz", "[]"},
		{"star first", []testEntry{{"*.bar", "", 1}}, "foo.bar", "[1]"},
		{"star middle", []testEntry{{"a.*.c", "", 1}}, "a.b.c", "[1]"},
		{"star middle miss", []testEntry{{"a.*.c", "", 1}}, "a.b.d", "[]"},
		{"lone star", []testEntry{{"*", "", 1}}, "a", "[1]"},
		{"lone star two tokens", []testEntry{{"*", "", 1}}, "a.b", "[]"},
		{"full one token", []testEntry{{"foo.>", "", 1}}, "foo.bar", "[1]"},
		{"full many tokens", []testEntry{{"foo.>", "", 1}}, "foo.bar.baz", "[1]"},
		{"full needs a token", []testEntry{{"foo.>", "", 1}}, "foo", "[]"},
		{"full other prefix", []testEntry{{"foo.>", "", 1}}, "bar.baz", "[]"},
		{"lone full", []testEntry{{">", "", 1}}, "a.b.c", "[1]"},
		{"star then full", []testEntry{{"*.>", "", 1}}, "a", "[]"},
		{"star then full match", []testEntry{{"*.>", "", 1}}, "a.b", "[1]"},
		{"wildcard-like tokens are literal", []testEntry{{"a*b.c>", "", 1}}, "a*b.c>", "[1]"},
		{"wildcard-like tokens miss", []testEntry{{"a*b.c>", "", 1}}, "axb.c", "[]"},
		{"several patterns", []testEntry{{"foo.bar", "", 1}, {"foo.*", "", 2}, {"foo.>", "", 3}, {">", "", 4}, {"*.*", "", 5}, {"foo.baz", "", 6}}, "foo.bar", "[1 2 3 4 5]"},
		{"same value under several patterns", []testEntry{{"foo.bar", "", 1}, {"foo.*", "", 1}}, "foo.bar", "[1 1]"},
		{"same entry twice is counted", []testEntry{{"foo", "", 1}, {"foo", "", 1}}, "foo", "[1 1]"},
		{"queue", []testEntry{{"foo", "q", 1}, {"foo", "q", 2}}, "foo", "[] q:[1 2]"},
		{"queues merged across patterns", []testEntry{{"foo.*", "q", 1}, {"foo.bar", "q", 2}, {"foo.>", "r", 3}, {"foo.bar", "", 4}, {">", "q", 5}}, "foo.bar", "[4] q:[1 2 5] r:[3]"},
		{"queue and plain same value", []testEntry{{"foo", "q", 1}, {"foo", "", 1}}, "foo", "[1] q:[1]"},
		{"invalid empty", []testEntry{{">", "", 1}}, "", "[]"},
		{"invalid empty token", []testEntry{{">", "", 1}}, "foo..bar", "[]"},
		{"invalid leading dot", []testEntry{{">", "", 1}}, ".foo", "[]"},
		{"invalid trailing dot", []testEntry{{">", "", 1}}, "foo.", "[]"},
		// Wildcard tokens in a published subject match like ordinary
		// tokens, as nats-server routes them (JetStream API subjects).
		{"published star", []testEntry{{">", "", 1}, {"foo.*", "", 2}, {"foo.bar", "", 3}}, "foo.*", "[1 2]"},
		{"published full", []testEntry{{">", "", 1}, {"foo.bar", "", 2}, {"foo.*", "", 3}}, "foo.>", "[1 3]"},
		{"invalid space", []testEntry{{">", "", 1}}, "foo bar", "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSublist(t, tc.entries...)
			for _, pass := range []string{"miss", "hit"} {
				require.Equal(t, pass+" "+canon(t, s.Match(tc.subject)), pass+" "+tc.want)
				require.Equal(t, pass+" "+canon(t, s.MatchBytes([]byte(tc.subject))), pass+" "+tc.want)
			}
			require.Equal(t, s.HasInterest(tc.subject), tc.want != "[]")
			checkInvariants(t, s)
		})
	}
}

func TestInsertInvalid(t *testing.T) {
	s := New[int]()
	for _, subj := range []string{"", ".", "foo.", ".foo", "foo..bar", "foo.>.bar", ">.>", "foo bar", "foo\tbar", "foo\r\n"} {
		require.ErrorIs(t, s.Insert(subj, "", 1), ErrInvalidSubject)
		require.ErrorIs(t, s.Remove(subj, "", 1), ErrInvalidSubject)
	}
	for _, queue := range []string{" ", "a b", "q\n"} {
		require.ErrorIs(t, s.Insert("foo", queue, 1), ErrInvalidQueue)
		require.ErrorIs(t, s.Remove("foo", queue, 1), ErrInvalidQueue)
	}
	require.Equal(t, s.Count(), 0)
	require.Equal(t, s.Stats().NumInserts, 0)
}

func TestRemove(t *testing.T) {
	s := newTestSublist(t,
		testEntry{"foo.bar", "", 1},
		testEntry{"foo.*", "", 2},
		testEntry{"foo.>", "q", 3},
		testEntry{"foo.bar", "q", 4},
		testEntry{"foo.bar", "", 5},
		testEntry{"foo.bar", "", 5},
	)
	require.Equal(t, canon(t, s.Match("foo.bar")), "[1 2 5 5] q:[3 4]")

	for _, e := range []testEntry{
		{"foo.bar", "", 3},  // wrong value
		{"foo.bar", "r", 4}, // wrong queue
		{"foo.bar", "", 4},  // queue entry removed as plain
		{"foo", "", 1},      // interior node without entries
		{"foo.bar.baz", "", 1},
		{"foo.*", "q", 2},
		{"*.bar", "", 1},
		{"foo.>", "", 3},
	} {
		require.ErrorIs(t, s.Remove(e.subject, e.queue, e.value), ErrNotFound)
	}
	require.Equal(t, s.Count(), 6)

	steps := []struct {
		entry testEntry
		want  string
	}{
		{testEntry{"foo.*", "", 2}, "[1 5 5] q:[3 4]"},
		{testEntry{"foo.bar", "", 5}, "[1 5] q:[3 4]"},
		{testEntry{"foo.bar", "", 5}, "[1] q:[3 4]"},
		{testEntry{"foo.>", "q", 3}, "[1] q:[4]"},
		{testEntry{"foo.bar", "q", 4}, "[1]"},
		{testEntry{"foo.bar", "", 1}, "[]"},
	}
	for i, step := range steps {
		require.NoError(t, s.Remove(step.entry.subject, step.entry.queue, step.entry.value))
		require.Equal(t, canon(t, s.Match("foo.bar")), step.want)
		require.Equal(t, s.Count(), len(steps)-i-1)
		checkInvariants(t, s)
	}
	require.ErrorIs(t, s.Remove("foo.bar", "", 1), ErrNotFound)
	if !s.root.isEmpty() {
		t.Fatalf("root not pruned: %+v", s.root)
	}
	require.Equal(t, s.Match("foo.bar"), &s.empty)
}

func TestZeroValue(t *testing.T) {
	var s Sublist[string]
	require.Equal(t, len(s.Match("foo").Plain), 0)
	require.NoError(t, s.Insert("foo", "", "a"))
	require.Equal(t, fmt.Sprint(s.Match("foo").Plain), "[a]")
	require.Equal(t, s.HasInterest("foo"), true)
}

// TestResultImmutable checks that a Result held by a caller never changes,
// and that cached results are replaced rather than updated in place.
func TestResultImmutable(t *testing.T) {
	s := newTestSublist(t, testEntry{"foo.bar", "", 1}, testEntry{"foo.bar", "q", 2}, testEntry{"foo.bar", "q", 3})
	held := s.Match("foo.bar")
	heldQueue := held.Queues[0].Members
	before := canon(t, held)
	require.NoError(t, s.Insert("foo.*", "", 4))
	require.NoError(t, s.Insert("foo.>", "q", 5))
	require.NoError(t, s.Insert("foo.bar", "r", 6))
	require.Equal(t, canon(t, s.Match("foo.bar")), "[1 4] q:[2 3 5] r:[6]")
	require.NoError(t, s.Remove("foo.bar", "", 1))
	require.NoError(t, s.Remove("foo.bar", "q", 2))
	require.Equal(t, canon(t, s.Match("foo.bar")), "[4] q:[3 5] r:[6]")
	require.Equal(t, canon(t, held), before)
	require.Equal(t, fmt.Sprint(heldQueue), fmt.Sprint(held.Queues[0].Members))
}

func TestWalk(t *testing.T) {
	entries := []testEntry{
		{"foo.bar", "", 1}, {"foo.bar", "", 1}, {"foo.*", "q", 2}, {"foo.>", "", 3}, {">", "r", 4}, {"*", "", 5}, {"a.*.c.>", "", 6},
	}
	s := newTestSublist(t, entries...)
	m := &model{}
	for _, e := range entries {
		require.NoError(t, m.insert(e.subject, e.queue, e.value))
	}
	require.Equal(t, fmt.Sprint(walkEntries(s)), fmt.Sprint(m.walkEntries()))

	calls := 0
	s.Walk(func(string, string, int) bool { calls++; return calls < 3 })
	require.Equal(t, calls, 3)

	// fn may call back into the Sublist; changes are not visited.
	calls = 0
	s.Walk(func(subj, queue string, v int) bool {
		calls++
		require.NoError(t, s.Insert(subj, queue, v+100))
		return true
	})
	require.Equal(t, calls, len(entries))
	require.Equal(t, s.Count(), 2*len(entries))
}

func TestStats(t *testing.T) {
	s := newTestSublist(t, testEntry{"foo.bar", "", 1}, testEntry{"foo.*", "", 2}, testEntry{"foo.*", "q", 3}, testEntry{"x", "", 4})
	require.NoError(t, s.Remove("x", "", 4))
	s.Match("foo.bar")              // miss, fanout 3
	s.Match("foo.bar")              // hit
	s.MatchBytes([]byte("foo.baz")) // miss, fanout 2
	s.Match("nothing")              // miss, fanout 0
	s.Match("bad..subject")         // miss, not cached
	st := s.Stats()
	want := Stats{NumSubs: 3, NumCache: 3, NumInserts: 4, NumRemoves: 1, NumMatches: 5, CacheHitRate: 0.2, MaxFanout: 3, AvgFanout: 5.0 / 3}
	require.Equal(t, st, want)
}

// TestCacheEviction fills the cache past its bound and checks that results
// stay exact while entries come and go.
func TestCacheEviction(t *testing.T) {
	s := newTestSublist(t, testEntry{"x.*", "", 1}, testEntry{"x.7", "q", 2})
	m := &model{}
	require.NoError(t, m.insert("x.*", "", 1))
	require.NoError(t, m.insert("x.7", "q", 2))
	var subjects []string
	for i := range 3 * cacheSize {
		subjects = append(subjects, fmt.Sprintf("x.%d", i))
	}
	checkAgainst(t, s, m, subjects)
	require.Equal(t, s.Stats().NumCache, cacheSize)

	for _, e := range []testEntry{{">", "r", 3}, {"x.5", "", 4}, {"*.9", "", 5}} {
		require.NoError(t, s.Insert(e.subject, e.queue, e.value))
		require.NoError(t, m.insert(e.subject, e.queue, e.value))
		checkAgainst(t, s, m, subjects)
	}
	require.NoError(t, s.Remove("x.*", "", 1))
	require.NoError(t, m.remove("x.*", "", 1))
	checkAgainst(t, s, m, subjects)
}

// TestRemoveBatchCache checks RemoveBatch's cache policy over a full
// cache: within the sweep budget it drops only the subjects its entries
// match; beyond it, it empties the cache. Results stay exact either way.
func TestRemoveBatchCache(t *testing.T) {
	entries := []Entry[int]{{"x.*", "", 1}, {"x.1", "", 2}, {"y.*", "q", 3}, {"y.>", "", 4}, {">", "", 5}, {"x.2", "", 6}}
	s, m := New[int](), &model{}
	for _, e := range entries {
		require.NoError(t, s.Insert(e.Subject, e.Queue, e.Value))
		require.NoError(t, m.insert(e.Subject, e.Queue, e.Value))
	}
	var subjects []string
	for i := range cacheSize / 2 {
		subjects = append(subjects, fmt.Sprintf("x.%d", i), fmt.Sprintf("y.%d", i))
	}
	fill := func() {
		t.Helper()
		for _, subj := range subjects {
			s.Match(subj)
		}
		require.Equal(t, s.Stats().NumCache, cacheSize)
	}
	removeBoth := func(batch ...Entry[int]) {
		t.Helper()
		var want []Entry[int]
		for _, e := range batch {
			if m.remove(e.Subject, e.Queue, e.Value) == nil {
				want = append(want, e)
			}
		}
		got := s.RemoveBatch(batch)
		require.Equal(t, fmt.Sprint(got), fmt.Sprint(want))
		checkInvariants(t, s)
	}

	// One wildcard over a full cache is within the budget: only the x
	// subjects go.
	fill()
	removeBoth(Entry[int]{"x.*", "", 1}, Entry[int]{"x.1", "", 2}, Entry[int]{"x.1", "", 2}, Entry[int]{"a..b", "", 1})
	require.Equal(t, s.Stats().NumCache, cacheSize/2)
	checkAgainst(t, s, m, subjects)

	// Two wildcards over a full cache exceed it: the cache is emptied.
	fill()
	removeBoth(Entry[int]{"y.*", "q", 3}, Entry[int]{"y.>", "", 4})
	require.Equal(t, s.Stats().NumCache, 0)
	checkAgainst(t, s, m, subjects)

	// A literal entry costs one deletion, however full the cache.
	fill()
	removeBoth(Entry[int]{"x.2", "", 6})
	require.Equal(t, s.Stats().NumCache, cacheSize-1)
	checkAgainst(t, s, m, subjects)
	removeBoth(Entry[int]{">", "", 5})
	checkAgainst(t, s, m, subjects)
	require.Equal(t, s.Count(), 0)
}

func TestLongSubjects(t *testing.T) {
	long := "t"
	for i := 1; i < 3*stackTokens; i++ {
		long += fmt.Sprintf(".t%d", i)
	}
	s := newTestSublist(t, testEntry{long, "", 1}, testEntry{"t.>", "", 2}, testEntry{long[:strings.LastIndexByte(long, '.')] + ".*", "", 3})
	require.Equal(t, canon(t, s.Match(long)), "[1 2 3]")
	require.NoError(t, s.Remove(long, "", 1))
	require.Equal(t, canon(t, s.Match(long)), "[2 3]")
	checkInvariants(t, s)
}

func TestCachedMatchDoesNotAllocate(t *testing.T) {
	s := newTestSublist(t, testEntry{"foo.bar.baz", "", 1}, testEntry{"foo.*.baz", "q", 2}, testEntry{"foo.>", "", 3})
	hit := "foo.bar.baz.with.a.rather.long.subject.to.defeat.small.string.tricks"
	hitBytes := []byte(hit)
	none := "no.interest"
	s.Match(hit)
	s.Match(none)
	if n := testing.AllocsPerRun(1000, func() { s.Match(hit) }); n != 0 {
		t.Errorf("cached Match allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.MatchBytes(hitBytes) }); n != 0 {
		t.Errorf("cached MatchBytes allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.Match(none) }); n != 0 {
		t.Errorf("cached empty Match allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.HasInterest(hit) }); n != 0 {
		t.Errorf("cached HasInterest allocates %v times", n)
	}
	// Uncached paths that need no result also stay off the heap.
	if n := testing.AllocsPerRun(1000, func() { s.HasInterest("foo.x.baz") }); n != 0 {
		t.Errorf("uncached HasInterest allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.Match("invalid..subject") }); n != 0 {
		t.Errorf("invalid Match allocates %v times", n)
	}
}
