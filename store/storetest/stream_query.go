package storetest

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
)

// querySubjects is the data set of the query tests: message i+1 has
// subject querySubjects[i].
var querySubjects = []string{"a.b", "a.c", "b.b", "a.b.c", "a.b", "c"}

func newQueryStream(t *testing.T, open OpenStream) store.Stream {
	t.Helper()
	s := open(t, store.Config{Name: "query"})
	mustStoreN(t, s, querySubjects...)
	return s
}

// notFound is the sequence the query tables use for ErrNotFound.
const notFound = 0

// LoadNext finds the first match at or after start, for literal, "*" and
// ">" filters, skipping removed messages.
func testLoadNext(t *testing.T, open OpenStream) {
	s := newQueryStream(t, open)
	type tc struct {
		filter string
		start  uint64
		want   uint64
	}
	check := func(cases []tc) {
		t.Helper()
		for _, c := range cases {
			sm, err := s.LoadNext(c.filter, c.start, nil)
			what := fmt.Sprintf("LoadNext(%q, %d)", c.filter, c.start)
			if c.want == notFound {
				require.ErrorIs(t, err, store.ErrNotFound, what)
				continue
			}
			require.NoError(t, err, what)
			requireMsg(t, sm, c.want, querySubjects[c.want-1], nil, fmt.Appendf(nil, "%s-%d", querySubjects[c.want-1], c.want-1))
		}
	}
	check([]tc{
		{"", 0, 1}, {">", 1, 1}, {"", 4, 4}, {">", 6, 6}, {"", 7, notFound}, {"", 1 << 62, notFound},
		{"a.b", 0, 1}, {"a.b", 2, 5}, {"a.b", 5, 5}, {"a.b", 6, notFound}, {"x", 0, notFound},
		{"a.*", 3, 5}, {"a.>", 3, 4}, {"*.b", 2, 3}, {"*.b", 4, 5}, {"*", 0, 6},
		{"*.*.c", 0, 4}, {"a.b.>", 0, 4}, {"a.b.c.>", 0, notFound}, {"*.*.*.*", 0, notFound},
	})
	for _, seq := range []uint64{2, 6} {
		_, err := s.Remove(seq, false)
		require.NoError(t, err, "Remove")
	}
	check([]tc{
		{"", 2, 3}, {"a.c", 0, notFound}, {"*", 0, notFound}, {"", 6, notFound}, {"a.*", 2, 5},
	})
}

// Walking with LoadNext visits exactly the matching messages in order.
func testLoadNextWalk(t *testing.T, open OpenStream) {
	s := newQueryStream(t, open)
	requireSeqs(t, s, "", 1, 2, 3, 4, 5, 6)
	requireSeqs(t, s, ">", 1, 2, 3, 4, 5, 6)
	requireSeqs(t, s, "a.b", 1, 5)
	requireSeqs(t, s, "a.*", 1, 2, 5)
	requireSeqs(t, s, "a.>", 1, 2, 4, 5)
	requireSeqs(t, s, "*.b", 1, 3, 5)
	requireSeqs(t, s, "nope")
}

// LoadLast finds the newest match.
func testLoadLast(t *testing.T, open OpenStream) {
	empty := open(t, store.Config{})
	_, err := empty.LoadLast("", nil)
	require.ErrorIs(t, err, store.ErrNotFound, "LoadLast on an empty stream")

	s := newQueryStream(t, open)
	check := func(filter string, want uint64) {
		t.Helper()
		sm, err := s.LoadLast(filter, nil)
		what := fmt.Sprintf("LoadLast(%q)", filter)
		if want == notFound {
			require.ErrorIs(t, err, store.ErrNotFound, what)
			return
		}
		require.NoError(t, err, what)
		require.Equal(t, sm.Seq, want, what)
		require.Equal(t, sm.Subject, querySubjects[want-1], what+" subject")
	}
	for filter, want := range map[string]uint64{
		"": 6, ">": 6, "a.b": 5, "a.*": 5, "a.>": 5, "*.b": 5, "b.>": 3, "*.*.c": 4, "*": 6, "x": notFound, "c.>": notFound,
	} {
		check(filter, want)
	}
	for _, seq := range []uint64{5, 6} {
		_, err := s.Remove(seq, false)
		require.NoError(t, err, "Remove")
	}
	for filter, want := range map[string]uint64{"": 4, "a.b": 1, "a.*": 2, "*": notFound} {
		check(filter, want)
	}
}

// FilteredState counts the matches from a sequence on; with no match it is
// the zero value.
func testFilteredState(t *testing.T, open OpenStream) {
	s := newQueryStream(t, open)
	check := func(filter string, from uint64, want store.FilteredState) {
		t.Helper()
		require.Equal(t, s.FilteredState(filter, from), want, fmt.Sprintf("FilteredState(%q, %d)", filter, from))
	}
	check("", 0, store.FilteredState{Msgs: 6, First: 1, Last: 6})
	check(">", 1, store.FilteredState{Msgs: 6, First: 1, Last: 6})
	check("", 3, store.FilteredState{Msgs: 4, First: 3, Last: 6})
	check("a.b", 0, store.FilteredState{Msgs: 2, First: 1, Last: 5})
	check("a.b", 2, store.FilteredState{Msgs: 1, First: 5, Last: 5})
	check("a.b", 6, store.FilteredState{})
	check("a.*", 0, store.FilteredState{Msgs: 3, First: 1, Last: 5})
	check("a.>", 2, store.FilteredState{Msgs: 3, First: 2, Last: 5})
	check("*.b", 0, store.FilteredState{Msgs: 3, First: 1, Last: 5})
	check("*.b", 4, store.FilteredState{Msgs: 1, First: 5, Last: 5})
	check("x", 0, store.FilteredState{})
	check("", 7, store.FilteredState{})
	_, _ = s.Remove(6, false)
	_, _ = s.Remove(1, false)
	check("", 0, store.FilteredState{Msgs: 4, First: 2, Last: 5})
	check("a.b", 0, store.FilteredState{Msgs: 1, First: 5, Last: 5})
	check("*", 0, store.FilteredState{})
}

// SubjectsState counts messages per matching subject.
func testSubjectsState(t *testing.T, open OpenStream) {
	s := newQueryStream(t, open)
	all := map[string]uint64{"a.b": 2, "a.c": 1, "b.b": 1, "a.b.c": 1, "c": 1}
	for filter, want := range map[string]map[string]uint64{
		"":    all,
		">":   all,
		"a.*": {"a.b": 2, "a.c": 1},
		"a.>": {"a.b": 2, "a.c": 1, "a.b.c": 1},
		"*.b": {"a.b": 2, "b.b": 1},
		"a.b": {"a.b": 2},
		"x":   {},
	} {
		if got := s.SubjectsState(filter); !maps.Equal(got, want) {
			t.Fatalf("SubjectsState(%q): got %v, want %v", filter, got, want)
		}
	}
	_, _ = s.Remove(1, false)
	_, _ = s.Remove(2, false)
	if got, want := s.SubjectsState("a.*"), map[string]uint64{"a.b": 1}; !maps.Equal(got, want) {
		t.Fatalf("SubjectsState after removes: got %v, want %v", got, want)
	}
}

// The queries agree with a brute-force answer on a larger stream with many
// subjects, long per-subject histories and scattered removals.
func testQueryCrossCheck(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	const n = 600
	subjects := make([]string, n+1) // by sequence; "" once removed
	for seq := uint64(1); seq <= n; seq++ {
		subj := fmt.Sprintf("q.%d.%c", seq%5, "xy"[seq%2])
		if seq%3 == 0 {
			subj = "hot"
		}
		subjects[seq] = subj
		require.Equal(t, mustStore(t, s, subj, nil, nil), seq, "sequence")
	}
	for seq := uint64(1); seq <= n; seq++ {
		if seq%7 == 3 || (seq >= 200 && seq < 260) || seq == 1 || seq == n {
			if ok, err := s.Remove(seq, false); !ok || err != nil {
				t.Fatalf("Remove(%d) = %v, %v", seq, ok, err)
			}
			subjects[seq] = ""
		}
	}
	matches := func(filter, subj string) bool {
		return subj != "" && (filter == "" || subject.Match(filter, subj))
	}
	for _, filter := range []string{"", ">", "hot", "q.1.x", "q.*.y", "q.>", "q.3.*", "*.*.x", "none", "q.9.x"} {
		for _, start := range []uint64{0, 1, 2, 150, 199, 201, 255, 260, 597, 599, n, n + 1} {
			var want store.FilteredState
			for seq := max(start, 1); seq <= n; seq++ {
				if matches(filter, subjects[seq]) {
					if want.Msgs == 0 {
						want.First = seq
					}
					want.Msgs++
					want.Last = seq
				}
			}
			what := fmt.Sprintf("(%q, %d)", filter, start)
			require.Equal(t, s.FilteredState(filter, start), want, "FilteredState"+what)
			sm, err := s.LoadNext(filter, start, nil)
			if want.Msgs == 0 {
				require.ErrorIs(t, err, store.ErrNotFound, "LoadNext"+what)
			} else {
				require.NoError(t, err, "LoadNext"+what)
				require.Equal(t, sm.Seq, want.First, "LoadNext"+what)
			}
		}
		var last uint64
		wantSubjects := map[string]uint64{}
		for seq := uint64(1); seq <= n; seq++ {
			if matches(filter, subjects[seq]) {
				last = seq
				wantSubjects[subjects[seq]]++
			}
		}
		sm, err := s.LoadLast(filter, nil)
		switch {
		case last == 0 && !errors.Is(err, store.ErrNotFound):
			t.Fatalf("LoadLast(%q): got %v, want ErrNotFound", filter, err)
		case last != 0 && (err != nil || sm.Seq != last):
			t.Fatalf("LoadLast(%q): got %v, %v, want sequence %d", filter, sm, err, last)
		}
		if got := s.SubjectsState(filter); !maps.Equal(got, wantSubjects) {
			t.Fatalf("SubjectsState(%q): got %v, want %v", filter, got, wantSubjects)
		}
	}
}
