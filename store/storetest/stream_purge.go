package storetest

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// mustPurge purges and checks the count returned.
func mustPurge(t testing.TB, s store.Stream, opts store.PurgeOptions, want uint64) {
	t.Helper()
	n, err := s.Purge(opts)
	require.NoError(t, err, fmt.Sprintf("Purge(%+v)", opts))
	require.Equal(t, n, want, fmt.Sprintf("Purge(%+v) count", opts))
}

// Purging everything empties the stream, sets FirstSeq to LastSeq+1 and
// keeps the sequence going; ">" means everything too.
func testPurgeAll(t *testing.T, open OpenStream) {
	for _, filter := range []string{"", ">"} {
		s := open(t, store.Config{})
		mustStoreN(t, s, "a", "b", "c", "a")
		mustPurge(t, s, store.PurgeOptions{Subject: filter}, 4)
		st := s.State()
		requireCounts(t, s, counts{Msgs: 0, First: 5, Last: 4})
		require.Equal(t, st.Bytes, 0, "bytes")
		require.Equal(t, st.NumSubjects, 0, "subjects")
		if !st.FirstTime.IsZero() {
			t.Fatalf("FirstTime after purge: %v, want zero", st.FirstTime)
		}
		_, err := s.Load(2, nil)
		require.ErrorIs(t, err, store.ErrDeleted, "Load of a purged message")
		_, err = s.LoadLast("a", nil)
		require.ErrorIs(t, err, store.ErrNotFound, "LoadLast of a purged subject")
		require.Equal(t, mustStore(t, s, "a", nil, nil), 5, "sequence after purge")
		requireCounts(t, s, counts{Msgs: 1, First: 5, Last: 5})
	}
}

// Purging a literal subject removes only its messages.
func testPurgeSubject(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "a", "c", "a")
	mustPurge(t, s, store.PurgeOptions{Subject: "a"}, 3)
	requireSeqs(t, s, "", 2, 4)
	requireCounts(t, s, counts{Msgs: 2, First: 2, Last: 5, Deleted: 2})
	require.Equal(t, s.State().NumSubjects, 2, "subjects")
	mustPurge(t, s, store.PurgeOptions{Subject: "none"}, 0)
	mustPurge(t, s, store.PurgeOptions{Subject: "c"}, 1)
	mustPurge(t, s, store.PurgeOptions{Subject: "b"}, 1)
	requireCounts(t, s, counts{Msgs: 0, First: 6, Last: 5})
}

// Purging a wildcard subject removes the messages it matches.
func testPurgeWildcard(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "x.1", "y.1", "x.2", "x.1.z", "x.3")
	mustPurge(t, s, store.PurgeOptions{Subject: "x.*"}, 3)
	requireSeqs(t, s, "", 2, 4)
	mustPurge(t, s, store.PurgeOptions{Subject: "x.>"}, 1)
	requireSeqs(t, s, "", 2)
}

// Keep retains the newest messages.
func testPurgeKeep(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	mustPurge(t, s, store.PurgeOptions{Keep: 5}, 0)
	mustPurge(t, s, store.PurgeOptions{Keep: 9}, 0)
	mustPurge(t, s, store.PurgeOptions{Keep: 2}, 3)
	requireSeqs(t, s, "", 4, 5)
	requireCounts(t, s, counts{Msgs: 2, First: 4, Last: 5})
}

// Keep counts messages, not sequences: gaps do not reduce what is kept.
func testPurgeKeepCountsMessages(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e", "f")
	_, _ = s.Remove(5, false)
	mustPurge(t, s, store.PurgeOptions{Keep: 2}, 3)
	requireSeqs(t, s, "", 4, 6)
}

// Subject and Keep combine: the newest Keep messages of the subject stay.
func testPurgeSubjectKeep(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "a", "a", "b", "a")
	mustPurge(t, s, store.PurgeOptions{Subject: "a", Keep: 1}, 3)
	requireSeqs(t, s, "", 2, 5, 6)
	mustPurge(t, s, store.PurgeOptions{Subject: "*", Keep: 1}, 2)
	requireSeqs(t, s, "", 6)
}

// Sequence purges the messages below it (exclusive); 1 purges nothing.
func testPurgeSequence(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	mustPurge(t, s, store.PurgeOptions{Sequence: 1}, 0)
	mustPurge(t, s, store.PurgeOptions{Sequence: 3}, 2)
	requireCounts(t, s, counts{Msgs: 3, First: 3, Last: 5})
	mustPurge(t, s, store.PurgeOptions{Sequence: 3}, 0)
	mustPurge(t, s, store.PurgeOptions{Sequence: 2}, 0)
	requireSeqs(t, s, "", 3, 4, 5)
}

// Subject and Sequence combine: matching messages below the sequence go.
func testPurgeSubjectSequence(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "a", "b", "a")
	mustPurge(t, s, store.PurgeOptions{Subject: "a", Sequence: 5}, 2)
	requireSeqs(t, s, "", 2, 4, 5)
	requireCounts(t, s, counts{Msgs: 3, First: 2, Last: 5, Deleted: 1})
}

// An unfiltered purge with a Sequence past the end empties the stream and
// makes that sequence the next one, as nats-server's compact does.
func testPurgeSequencePastEnd(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c")
	mustPurge(t, s, store.PurgeOptions{Sequence: 4}, 3)
	requireCounts(t, s, counts{Msgs: 0, First: 4, Last: 3})
	mustPurge(t, s, store.PurgeOptions{Sequence: 10}, 0)
	requireCounts(t, s, counts{Msgs: 0, First: 10, Last: 9})
	_, err := s.Load(7, nil)
	require.ErrorIs(t, err, store.ErrDeleted, "Load of a skipped sequence")
	require.Equal(t, mustStore(t, s, "d", nil, nil), 10, "sequence after the purge")
	requireCounts(t, s, counts{Msgs: 1, First: 10, Last: 10})
}

// Purging an empty stream purges nothing and leaves the sequence alone.
func testPurgeEmpty(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustPurge(t, s, store.PurgeOptions{}, 0)
	mustPurge(t, s, store.PurgeOptions{Subject: "a"}, 0)
	mustPurge(t, s, store.PurgeOptions{Keep: 3}, 0)
	st := s.State()
	require.Equal(t, st.Msgs, 0, "messages")
	require.Equal(t, st.LastSeq, 0, "LastSeq")
	require.Equal(t, mustStore(t, s, "a", nil, nil), 1, "first sequence")
}
