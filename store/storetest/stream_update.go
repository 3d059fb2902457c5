package storetest

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// Lowering MaxMsgs evicts the oldest messages at once.
func testUpdateShrinkMaxMsgs(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgs: 2}), "UpdateConfig")
	requireSeqs(t, s, "", 4, 5)
	requireCounts(t, s, counts{Msgs: 2, First: 4, Last: 5})
	mustStore(t, s, "f", nil, nil)
	requireSeqs(t, s, "", 5, 6)
}

// Lowering MaxBytes evicts the oldest messages until the stream fits.
func testUpdateShrinkMaxBytes(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	one := size("a", "a-0")
	require.NoError(t, s.UpdateConfig(store.Config{MaxBytes: int64(2*one + one/2)}), "UpdateConfig")
	requireSeqs(t, s, "", 4, 5)
	require.Equal(t, s.State().Bytes, 2*one, "bytes")
}

// Lowering MaxMsgsPerSubject keeps the newest messages of each subject.
func testUpdateShrinkPerSubject(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "a", "a", "b", "a")
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgsPerSubject: 2}), "UpdateConfig")
	requireSeqs(t, s, "", 2, 4, 5, 6)
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgsPerSubject: 1}), "UpdateConfig")
	requireSeqs(t, s, "", 5, 6)
}

// When several limits shrink at once, MaxMsgsPerSubject applies first and
// MaxMsgs and MaxBytes then keep the newest of what is left, so the stream
// keeps as many messages as the limits allow.
func testUpdatePerSubjectFirst(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "a", "a")
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgsPerSubject: 1, MaxMsgs: 2}), "UpdateConfig")
	requireSeqs(t, s, "", 2, 4)
}

// Under DiscardNew, lowering MaxMsgs or MaxBytes evicts nothing: new
// messages are refused until the stream is back under its limits.
func testUpdateDiscardNewKeeps(t *testing.T, open OpenStream) {
	s := open(t, store.Config{Discard: store.DiscardNew})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgs: 2, Discard: store.DiscardNew}), "UpdateConfig")
	requireCounts(t, s, counts{Msgs: 5, First: 1, Last: 5})
	_, _, err := s.Store("f", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxMsgs, "Store over the lowered MaxMsgs")
	require.NoError(t, s.UpdateConfig(store.Config{MaxBytes: 1, Discard: store.DiscardNew}), "UpdateConfig")
	requireCounts(t, s, counts{Msgs: 5, First: 1, Last: 5})
	_, _, err = s.Store("f", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxBytes, "Store over the lowered MaxBytes")
	require.NoError(t, s.UpdateConfig(store.Config{MaxMsgs: 6, Discard: store.DiscardNew}), "UpdateConfig")
	require.Equal(t, mustStore(t, s, "f", nil, nil), 6, "Store under the raised limit")
	require.
		// Switching to DiscardOld enforces the limit by eviction.
		NoError(t, s.UpdateConfig(store.Config{MaxMsgs: 2}), "UpdateConfig")
	requireSeqs(t, s, "", 5, 6)
}

// Adding MaxAge expires the messages already older than it.
func testUpdateMaxAge(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) { // the stream runs on the bubble's clock
		const age = 20 * time.Millisecond
		s := open(t, store.Config{})
		stored := time.Now()
		mustStoreN(t, s, "a", "b")
		require.NoError(t, s.UpdateConfig(store.Config{MaxAge: age}), "UpdateConfig")
		requireExpiry(t, stored, age, "MaxAge expiry after UpdateConfig", func() bool { return s.State().Msgs == 0 })
		requireCounts(t, s, counts{Msgs: 0, First: 3, Last: 2})
		require.
			// And removing it again keeps new messages.
			NoError(t, s.UpdateConfig(store.Config{}), "UpdateConfig")
		mustStore(t, s, "c", nil, nil)
		requireCounts(t, s, counts{Msgs: 1, First: 3, Last: 3})
	})
}

// UpdateConfig rejects impossible values with ErrInvalidConfig and keeps the
// limits in force.
func testUpdateInvalid(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgs: 2})
	for _, cfg := range []store.Config{
		{MaxMsgs: -1},
		{MaxBytes: -1},
		{MaxAge: -time.Second},
		{MaxMsgsPerSubject: -1},
		{MaxMsgSize: -1},
		{Discard: store.DiscardNew + 1},
	} {
		err := s.UpdateConfig(cfg)
		require.ErrorIs(t, err, store.ErrInvalidConfig, fmt.Sprintf("UpdateConfig(%+v)", cfg))
	}
	mustStoreN(t, s, "a", "b", "c")
	requireSeqs(t, s, "", 2, 3)
}
