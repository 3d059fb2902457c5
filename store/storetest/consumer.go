package storetest

import (
	"fmt"
	"maps"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// RunConsumerStoreTests runs the consumer-store conformance suite against
// the engine open builds.
func RunConsumerStoreTests(t *testing.T, open OpenConsumerStore) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, open OpenConsumerStore)
	}{
		{"ZeroState", testConsumerZeroState},
		{"RoundTrip", testConsumerRoundTrip},
		{"UpdateReplaces", testConsumerUpdateReplaces},
		{"UpdateCopies", testConsumerUpdateCopies},
		{"StateCopies", testConsumerStateCopies},
		{"Close", testConsumerClose},
		{"Delete", testConsumerDelete},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open) })
	}
}

// sampleConsumerState is a state with every field set.
func sampleConsumerState() *store.ConsumerState {
	return &store.ConsumerState{
		Delivered: store.SequencePair{Consumer: 12, Stream: 40},
		AckFloor:  store.SequencePair{Consumer: 9, Stream: 31},
		Pending: map[uint64]store.Pending{
			33: {Sequence: 10, Timestamp: 1_700_000_000_000_000_001},
			40: {Sequence: 12, Timestamp: 1_700_000_000_000_000_002},
		},
		Redelivered: map[uint64]uint64{33: 2},
	}
}

// requireConsumerState compares two states; nil and empty maps are equal.
func requireConsumerState(t testing.TB, got, want *store.ConsumerState) {
	t.Helper()
	if got == nil {
		t.Fatalf("consumer state: got nil, want %+v", *want)
	}
	if got.Delivered != want.Delivered || got.AckFloor != want.AckFloor ||
		!maps.Equal(got.Pending, want.Pending) || !maps.Equal(got.Redelivered, want.Redelivered) {
		t.Fatalf("consumer state: got %+v, want %+v", *got, *want)
	}
}

func mustConsumerState(t testing.TB, c store.ConsumerStore) *store.ConsumerState {
	t.Helper()
	st, err := c.State()
	require.NoError(t, err, "State")
	return st
}

// A new store holds the zero state.
func testConsumerZeroState(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	requireConsumerState(t, mustConsumerState(t, c), &store.ConsumerState{})
}

// State returns what Update recorded.
func testConsumerRoundTrip(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	require.NoError(t, c.Update(sampleConsumerState()), "Update")
	requireConsumerState(t, mustConsumerState(t, c), sampleConsumerState())
}

// Each Update replaces the whole state: entries missing from it are gone.
func testConsumerUpdateReplaces(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	require.NoError(t, c.Update(sampleConsumerState()), "Update")
	next := &store.ConsumerState{
		Delivered: store.SequencePair{Consumer: 13, Stream: 41},
		AckFloor:  store.SequencePair{Consumer: 13, Stream: 41},
	}
	require.NoError(t, c.Update(next), "second Update")
	requireConsumerState(t, mustConsumerState(t, c), next)
	for i := range uint64(100) {
		st := &store.ConsumerState{
			Delivered: store.SequencePair{Consumer: 14 + i, Stream: 42 + i},
			AckFloor:  store.SequencePair{Consumer: 13, Stream: 41},
			Pending:   map[uint64]store.Pending{42 + i: {Sequence: 14 + i, Timestamp: int64(i)}},
		}
		require.NoError(t, c.Update(st), fmt.Sprintf("Update %d", i))
		requireConsumerState(t, mustConsumerState(t, c), st)
	}
}

// The store does not keep the maps passed to Update.
func testConsumerUpdateCopies(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	st := sampleConsumerState()
	require.NoError(t, c.Update(st), "Update")
	st.Pending[99] = store.Pending{Sequence: 99}
	delete(st.Pending, 33)
	st.Redelivered[33] = 7
	st.Delivered.Stream = 1000
	requireConsumerState(t, mustConsumerState(t, c), sampleConsumerState())
}

// State returns a fresh copy each time.
func testConsumerStateCopies(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	require.NoError(t, c.Update(sampleConsumerState()), "Update")
	got := mustConsumerState(t, c)
	got.Pending[99] = store.Pending{Sequence: 99}
	got.Redelivered[33] = 7
	got.AckFloor.Consumer = 0
	requireConsumerState(t, mustConsumerState(t, c), sampleConsumerState())
}

// After Close, Update and State fail with ErrClosed.
func testConsumerClose(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	require.NoError(t, c.Update(sampleConsumerState()), "Update")
	require.NoError(t, c.Close(), "Close")
	require.ErrorIs(t, c.Update(sampleConsumerState()), store.ErrClosed, "Update after Close")
	_, err := c.State()
	require.ErrorIs(t, err, store.ErrClosed, "State after Close")
	_ = c.Close()
}

// After Delete, Update and State fail with ErrClosed.
func testConsumerDelete(t *testing.T, open OpenConsumerStore) {
	c := open(t)
	require.NoError(t, c.Update(sampleConsumerState()), "Update")
	require.NoError(t, c.Delete(), "Delete")
	require.ErrorIs(t, c.Update(sampleConsumerState()), store.ErrClosed, "Update after Delete")
	_, err := c.State()
	require.ErrorIs(t, err, store.ErrClosed, "State after Delete")
}
