package memstore

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// TestStoreBatch: a batch gets consecutive sequences; one that would
// break a DiscardNew limit, or holds an invalid subject, stores nothing.
func TestStoreBatch(t *testing.T) {
	s, err := New(store.Config{MaxMsgsPerSubject: 2, DiscardNewPerSubject: true, Discard: store.DiscardNew})
	require.NoError(t, err)
	defer s.Close()
	msgs := []store.BatchMsg{{Subject: "a", Data: []byte("1")}, {Subject: "b"}}
	first, _, err := s.StoreBatch(msgs)
	require.NoError(t, err)
	require.Equal(t, first, uint64(1))
	// a already has one: two more exceed the per-subject limit.
	_, _, err = s.StoreBatch([]store.BatchMsg{{Subject: "a"}, {Subject: "a"}})
	require.Equal(t, err, store.ErrMaxMsgsPerSubject)
	_, _, err = s.StoreBatch([]store.BatchMsg{{Subject: "c"}, {Subject: "bad subject"}})
	require.Equal(t, err, ErrInvalidSubject)
	if st := s.State(); st.Msgs != 2 || st.LastSeq != 2 {
		t.Fatalf("state %+v after refused batches", st)
	}
	m, err := s.Load(1, nil)
	require.NoError(t, err)
	require.Equal(t, string(m.Data), "1")
}
