package storetest

import (
	"bytes"
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// Under DiscardOld, MaxMsgs evicts the oldest messages.
func testMaxMsgsDiscardOld(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgs: 3})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	requireCounts(t, s, counts{Msgs: 3, First: 3, Last: 5})
	require.Equal(t, s.State().Bytes, size("c", "c-2")+size("d", "d-3")+size("e", "e-4"), "bytes")
	require.Equal(t, s.State().NumSubjects, 3, "subjects")
	_, err := s.Load(2, nil)
	require.ErrorIs(t, err, store.ErrDeleted, "Load of an evicted message")
}

// Under DiscardNew, MaxMsgs rejects the message with ErrMaxMsgs and uses no
// sequence; room made by a removal is usable again.
func testMaxMsgsDiscardNew(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgs: 3, Discard: store.DiscardNew})
	mustStoreN(t, s, "a", "b", "c")
	_, _, err := s.Store("d", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxMsgs, "Store over MaxMsgs")
	requireCounts(t, s, counts{Msgs: 3, First: 1, Last: 3})
	_, _ = s.Remove(2, false)
	require.Equal(t, mustStore(t, s, "d", nil, nil), 4, "sequence after making room")
	_, _, err = s.Store("e", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxMsgs, "Store over MaxMsgs again")
}

// Under DiscardOld, MaxBytes evicts the oldest messages until the stream
// fits; a message that could never fit is rejected with ErrMaxBytes and
// evicts nothing.
func testMaxBytesDiscardOld(t *testing.T, open OpenStream) {
	one := size("a", "a-0") // every message below has this size
	s := open(t, store.Config{MaxBytes: int64(3 * one)})
	mustStoreN(t, s, "a", "b", "c", "d")
	requireCounts(t, s, counts{Msgs: 3, First: 2, Last: 4})
	require.Equal(t, s.State().Bytes, 3*one, "bytes")

	_, _, err := s.Store("big", nil, bytes.Repeat([]byte("x"), int(3*one)), 0)
	require.ErrorIs(t, err, store.ErrMaxBytes, "Store of a message larger than MaxBytes")
	requireCounts(t, s, counts{Msgs: 3, First: 2, Last: 4})

	// A message twice the usual size evicts two.
	mustStore(t, s, "e", nil, bytes.Repeat([]byte("x"), int(2*one-size("e", ""))))
	requireCounts(t, s, counts{Msgs: 2, First: 4, Last: 5})
	require.Equal(t, s.State().Bytes, 3*one, "bytes")
}

// Under DiscardNew, a stream may fill up to exactly MaxBytes; beyond that
// Store fails with ErrMaxBytes.
func testMaxBytesDiscardNew(t *testing.T, open OpenStream) {
	one := size("a", "a-0")
	s := open(t, store.Config{MaxBytes: int64(3 * one), Discard: store.DiscardNew})
	mustStoreN(t, s, "a", "b", "c")
	require.Equal(t, s.State().Bytes, 3*one, "bytes at the limit")
	_, _, err := s.Store("d", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxBytes, "Store over MaxBytes")
	requireCounts(t, s, counts{Msgs: 3, First: 1, Last: 3})
	_, _ = s.Remove(1, false)
	require.Equal(t, mustStore(t, s, "d", nil, []byte("d-3")), 4, "sequence after making room")
}

// MaxMsgsPerSubject keeps the newest messages of each subject.
func testMaxMsgsPerSubject(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgsPerSubject: 2})
	mustStoreN(t, s, "k1", "k2", "k1", "k1", "k3", "k1", "k2")
	requireSeqs(t, s, "", 2, 4, 5, 6, 7)
	requireSeqs(t, s, "k1", 4, 6)
	if got, want := s.SubjectsState(""), map[string]uint64{"k1": 2, "k2": 2, "k3": 1}; !maps.Equal(got, want) {
		t.Fatalf("SubjectsState: got %v, want %v", got, want)
	}
	requireCounts(t, s, counts{Msgs: 5, First: 2, Last: 7, Deleted: 1})
	sm, err := s.LoadLast("k1", nil)
	require.NoError(t, err, "LoadLast")
	requireMsg(t, sm, 6, "k1", nil, []byte("k1-5"))
}

// With a history of one (a KV bucket), the stream holds the latest value of
// each key.
func testMaxMsgsPerSubjectKV(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgsPerSubject: 1})
	for range 50 {
		mustStoreN(t, s, "kv.a", "kv.b", "kv.c")
	}
	mustStoreN(t, s, "kv.a")
	requireCounts(t, s, counts{Msgs: 3, First: 149, Last: 151, Deleted: 0})
	requireSeqs(t, s, "kv.*", 149, 150, 151)
	sm, err := s.LoadLast("kv.a", nil)
	require.NoError(t, err, "LoadLast")
	require.Equal(t, sm.Seq, 151, "LoadLast(kv.a)")
	require.Equal(t, s.FilteredState("kv.b", 0), store.FilteredState{Msgs: 1, First: 149, Last: 149}, "FilteredState(kv.b)")
}

// Under DiscardNew without DiscardNewPerSubject, a subject at its limit
// replaces its oldest message, even when the stream is at MaxMsgs or
// MaxBytes: the stream does not grow.
func testMaxMsgsPerSubjectDiscardNew(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgsPerSubject: 1, MaxMsgs: 2, Discard: store.DiscardNew})
	mustStoreN(t, s, "a", "b")
	require.Equal(t, mustStore(t, s, "a", nil, nil), 3, "replacing a at MaxMsgs")
	_, _, err := s.Store("c", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxMsgs, "a new subject at MaxMsgs")
	requireSeqs(t, s, "", 2, 3)

	one := size("a", "a-0")
	s = open(t, store.Config{MaxMsgsPerSubject: 1, MaxBytes: int64(2 * one), Discard: store.DiscardNew})
	mustStoreN(t, s, "a", "b")
	require.Equal(t, mustStore(t, s, "a", nil, []byte("a-2")), 3, "replacing a at MaxBytes")
	_, _, err = s.Store("a", nil, []byte("a bigger value"), 0)
	require.ErrorIs(t, err, store.ErrMaxBytes, "a larger replacement at MaxBytes")
	requireSeqs(t, s, "", 2, 3)
}

// With DiscardNewPerSubject, a subject at its limit refuses new messages
// with ErrMaxMsgsPerSubject; other subjects are unaffected.
func testDiscardNewPerSubject(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgsPerSubject: 2, Discard: store.DiscardNew, DiscardNewPerSubject: true})
	mustStoreN(t, s, "a", "a", "b")
	_, _, err := s.Store("a", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrMaxMsgsPerSubject, "third message on a")
	require.Equal(t, mustStore(t, s, "b", nil, nil), 4, "second message on b")
	_, _ = s.Remove(1, false)
	require.Equal(t, mustStore(t, s, "a", nil, nil), 5, "a after making room")
	requireCounts(t, s, counts{Msgs: 4, First: 2, Last: 5})
}

// MaxMsgSize bounds header plus data (not the subject).
func testMaxMsgSize(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgSize: 10})
	mustStore(t, s, "a.long.subject.name", []byte("hdr"), []byte("1234567"))
	_, _, err := s.Store("a", []byte("hdr"), []byte("12345678"), 0)
	require.ErrorIs(t, err, store.ErrMaxMsgSize, "11 bytes")
	_, _, err = s.Store("a", nil, []byte("12345678901"), 0)
	require.ErrorIs(t, err, store.ErrMaxMsgSize, "11 bytes of data")
	requireCounts(t, s, counts{Msgs: 1, First: 1, Last: 1})
}

// MaxAge expires messages, not before their age is reached. This case
// and the other age and TTL cases run in a synctest bubble: the stream
// runs on the bubble's clock.
func testMaxAge(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const age = 200 * time.Millisecond
		s := open(t, store.Config{MaxAge: age})
		stored := time.Now()
		mustStoreN(t, s, "a", "b")
		requireExpiry(t, stored, age, "MaxAge expiry", func() bool { return s.State().Msgs == 0 })
		st := s.State()
		requireCounts(t, s, counts{Msgs: 0, First: 3, Last: 2})
		require.Equal(t, st.Bytes, 0, "bytes")
		require.Equal(t, st.NumSubjects, 0, "subjects")
	})
}

// Expiry is a removal like any other: sequences continue, and a later
// message outlives an earlier one.
func testMaxAgeSequencesContinue(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const age = 50 * time.Millisecond
		s := open(t, store.Config{MaxAge: age})
		stored := time.Now()
		mustStore(t, s, "a", nil, nil)
		requireExpiry(t, stored, age, "first expiry", func() bool { return s.State().Msgs == 0 })
		stored = time.Now()
		require.Equal(t, mustStore(t, s, "a", nil, nil), 2, "sequence after expiry")
		requireExpiry(t, stored, age, "second expiry", func() bool { return s.State().Msgs == 0 })
		requireCounts(t, s, counts{Msgs: 0, First: 3, Last: 2})
	})
}

// With AllowMsgTTL, a message with a TTL expires after it; others stay.
func testTTL(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 100 * time.Millisecond
		s := open(t, store.Config{AllowMsgTTL: true})
		stored := time.Now()
		_, _, err := s.Store("a", nil, []byte("short"), int64(ttl))
		require.NoError(t, err, "Store with TTL")
		mustStore(t, s, "b", nil, []byte("forever"))
		_, _, err = s.Store("c", nil, []byte("long"), int64(time.Hour))
		require.NoError(t, err, "Store with a long TTL")
		requireExpiry(t, stored, ttl, "TTL expiry", func() bool { return s.State().Msgs == 2 })
		requireSeqs(t, s, "", 2, 3)
		requireCounts(t, s, counts{Msgs: 2, First: 2, Last: 3})
	})
}

// Without AllowMsgTTL the ttl argument is ignored. The control stream,
// which allows TTLs, shows when the message would have expired.
func testTTLNeedsAllow(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 20 * time.Millisecond
		s := open(t, store.Config{})
		control := open(t, store.Config{AllowMsgTTL: true})
		stored := time.Now()
		_, _, err := s.Store("a", nil, nil, int64(ttl))
		require.NoError(t, err, "Store with TTL")
		_, _, err = control.Store("a", nil, nil, int64(ttl))
		require.NoError(t, err, "Store with TTL on the control stream")
		requireExpiry(t, stored, ttl, "control expiry", func() bool { return control.State().Msgs == 0 })
		requireCounts(t, s, counts{Msgs: 1, First: 1, Last: 1})
	})
}

// MaxAge still expires a message whose TTL is longer.
func testTTLMaxAgeStillApplies(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const age = 50 * time.Millisecond
		s := open(t, store.Config{AllowMsgTTL: true, MaxAge: age})
		stored := time.Now()
		_, _, err := s.Store("a", nil, nil, int64(time.Hour))
		require.NoError(t, err, "Store with TTL")
		requireExpiry(t, stored, age, "MaxAge expiry", func() bool { return s.State().Msgs == 0 })
	})
}

// With AllowMsgTTL, a negative TTL means "never": MaxAge does not expire the
// message (nats-server's "Nats-TTL: never").
func testTTLNever(t *testing.T, open OpenStream) {
	synctest.Test(t, func(t *testing.T) {
		const age = 50 * time.Millisecond
		s := open(t, store.Config{AllowMsgTTL: true, MaxAge: age})
		stored := time.Now()
		_, _, err := s.Store("keep", nil, nil, -1)
		require.NoError(t, err, "Store with TTL never")
		mustStoreN(t, s, "a", "b")
		requireExpiry(t, stored, age, "MaxAge expiry", func() bool { return s.State().Msgs == 1 })
		requireSeqs(t, s, "", 1)
		stored = time.Now()
		require.Equal(t, mustStore(t, s, "c", nil, nil), 4, "next sequence")
		requireExpiry(t, stored, age, "MaxAge expiry", func() bool { return s.State().Msgs == 1 })
		requireSeqs(t, s, "", 1)
	})
}
