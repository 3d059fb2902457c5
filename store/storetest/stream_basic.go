package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// A new stream is empty with every field zero; the first message gets
// sequence 1 and a store time of now.
func testSequencesStartAtOne(t *testing.T, open OpenStream) {
	s := open(t, store.Config{Name: "seq"})
	if st := s.State(); st != (store.State{}) {
		t.Fatalf("new stream state: got %+v, want the zero State", st)
	}
	before := time.Now().Add(-time.Second).UnixNano()
	for want := uint64(1); want <= 3; want++ {
		seq, ts, err := s.Store("a", nil, []byte("x"), 0)
		require.NoError(t, err, "Store")
		require.Equal(t, seq, want, "sequence")
		if after := time.Now().Add(time.Second).UnixNano(); ts < before || ts > after {
			t.Fatalf("Store time %d is not now (%d..%d)", ts, before, after)
		}
	}
	requireCounts(t, s, counts{Msgs: 3, First: 1, Last: 3})
}

// Sequences keep growing after the last message is removed, after a purge
// and after eviction: none is ever handed out twice.
func testSequencesNeverRepeat(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgs: 2})
	mustStoreN(t, s, "a", "a")
	if ok, err := s.Remove(2, false); !ok || err != nil {
		t.Fatalf("Remove(2) = %v, %v", ok, err)
	}
	require.Equal(t, mustStore(t, s, "a", nil, nil), 3, "after removing the last message")
	_, err := s.Purge(store.PurgeOptions{})
	require.NoError(t, err, "Purge")
	require.Equal(t, mustStore(t, s, "a", nil, nil), 4, "after purge")
	mustStoreN(t, s, "b", "c")
	require. // evicts 4 and 5
			Equal(t, mustStore(t, s, "d", nil, nil), 7, "after eviction")
	requireCounts(t, s, counts{Msgs: 2, First: 6, Last: 7})
}

// Store copies header and data: changing them afterwards changes nothing
// stored.
func testStoreCopiesInput(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	hdr, data := []byte("NATS/1.0\r\nK: v\r\n\r\n"), []byte("payload")
	seq := mustStore(t, s, "a.b", hdr, data)
	copy(hdr, "XXXX")
	copy(data, "YYYY")
	requireMsg(t, mustLoad(t, s, seq), seq, "a.b", []byte("NATS/1.0\r\nK: v\r\n\r\n"), []byte("payload"))
}

// A message with neither header nor data is a message like any other.
func testStoreEmptyMessage(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	seq := mustStore(t, s, "empty", nil, nil)
	sm := mustLoad(t, s, seq)
	if len(sm.Header) != 0 || len(sm.Data) != 0 {
		t.Fatalf("empty message loaded as header=%q data=%q", sm.Header, sm.Data)
	}
	require.Equal(t, s.State().Bytes, store.Size("empty", nil, nil), "bytes")
}

// Store rejects subjects no publisher may use and consumes no sequence
// doing so.
func testStoreInvalidSubject(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	for _, subj := range []string{"", "a.*", "a.>", ">", "a..b", ".a", "a.", "a b"} {
		if seq, _, err := s.Store(subj, nil, []byte("x"), 0); err == nil {
			t.Fatalf("Store(%q) succeeded with sequence %d, want an error", subj, seq)
		}
	}
	requireCounts(t, s, counts{})
	require.Equal(t, mustStore(t, s, "ok", nil, nil), 1, "first valid sequence")
}

// Load returns every field as stored; Time is Store's timestamp.
func testLoadFields(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	hdr := []byte("NATS/1.0\r\nNats-Msg-Id: 1\r\n\r\n")
	seq, ts, err := s.Store("orders.new", hdr, []byte("hello"), 0)
	require.NoError(t, err, "Store")
	sm := mustLoad(t, s, seq)
	requireMsg(t, sm, seq, "orders.new", hdr, []byte("hello"))
	require.Equal(t, sm.Time, ts, "Time")
	// Into a caller's Msg, too.
	var into store.Msg
	got, err := s.Load(seq, &into)
	require.NoError(t, err, "Load into a Msg")
	if got != &into {
		t.Fatalf("Load did not fill the Msg passed")
	}
	requireMsg(t, &into, seq, "orders.new", hdr, []byte("hello"))
}

// Load reports ErrNotFound for sequence 0 and beyond the last sequence, and
// ErrDeleted for a sequence that was removed, purged or evicted.
func testLoadErrors(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxMsgs: 4})
	_, err := s.Load(1, nil)
	require.ErrorIs(t, err, store.ErrNotFound, "Load(1) on a new stream")
	mustStoreN(t, s, "a", "b", "c", "d", "e", "f") // 1 and 2 evicted
	_, err = s.Remove(4, false)
	require.NoError(t, err, "Remove")
	_, err = s.Purge(store.PurgeOptions{Sequence: 4})
	require. // purges 3
			NoError(t, err, "Purge")
	for _, tc := range []struct {
		seq  uint64
		want error
	}{
		{0, store.ErrNotFound},
		{1, store.ErrDeleted}, // evicted
		{2, store.ErrDeleted},
		{3, store.ErrDeleted}, // purged
		{4, store.ErrDeleted}, // removed
		{7, store.ErrNotFound},
		{1 << 62, store.ErrNotFound},
	} {
		_, err := s.Load(tc.seq, nil)
		require.ErrorIs(t, err, tc.want, fmt.Sprintf("Load(%d)", tc.seq))
	}
	requireMsg(t, mustLoad(t, s, 5), 5, "e", nil, []byte("e-4"))
}

// Loaded messages belong to the caller: changing them does not change the
// stream, and a reused Msg is overwritten completely.
func testLoadReturnsCopies(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStore(t, s, "a", []byte("hdr"), []byte("first message, rather long"))
	mustStore(t, s, "b", nil, []byte("short"))
	sm := mustLoad(t, s, 1)
	copy(sm.Data, "XXXXX")
	copy(sm.Header, "YYY")
	requireMsg(t, mustLoad(t, s, 1), 1, "a", []byte("hdr"), []byte("first message, rather long"))

	// Reuse sm for a message without header and with shorter data.
	m, err := s.Load(2, sm)
	require.NoError(t, err, "Load(2) into a used Msg")
	if len(m.Header) != 0 {
		t.Fatalf("reused Msg kept header %q", m.Header)
	}
	requireMsg(t, &store.Msg{Seq: m.Seq, Subject: m.Subject, Data: m.Data}, 2, "b", nil, []byte("short"))

	// Messages loaded separately do not share memory.
	m1, m2 := mustLoad(t, s, 1), mustLoad(t, s, 1)
	m1.Data[0] = '!'
	if m2.Data[0] == '!' {
		t.Fatalf("two loads of one message share their data")
	}
}

// Remove reports whether the message existed and updates the state; removing
// the first message moves FirstSeq, removing the last leaves LastSeq.
func testRemove(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c", "d", "e")
	for _, tc := range []struct {
		seq   uint64
		erase bool
		want  bool
	}{
		{3, false, true},
		{3, false, false},
		{0, false, false},
		{6, false, false},
		{1 << 62, true, false},
		{1, true, true},
		{5, false, true},
	} {
		ok, err := s.Remove(tc.seq, tc.erase)
		require.NoError(t, err, fmt.Sprintf("Remove(%d, %v)", tc.seq, tc.erase))
		require.Equal(t, ok, tc.want, fmt.Sprintf("Remove(%d, %v)", tc.seq, tc.erase))
	}
	requireCounts(t, s, counts{Msgs: 2, First: 2, Last: 5, Deleted: 2})
	require.Equal(t, s.State().Bytes, size("b", "b-1")+size("d", "d-3"), "bytes")
	require.Equal(t, s.State().NumSubjects, 2, "subjects")
	_, err := s.Load(5, nil)
	require.ErrorIs(t, err, store.ErrDeleted, "Load of the removed last message")
	requireSeqs(t, s, "", 2, 4)
	require.Equal(t, mustStore(t, s, "f", nil, nil), 6, "next sequence")
}

// Removing every message leaves an empty stream whose FirstSeq is
// LastSeq+1.
func testRemoveAll(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b", "c")
	for _, seq := range []uint64{2, 3, 1} {
		_, err := s.Remove(seq, false)
		require.NoError(t, err, "Remove")
	}
	st := s.State()
	requireCounts(t, s, counts{Msgs: 0, First: 4, Last: 3})
	require.Equal(t, st.Bytes, 0, "bytes")
	require.Equal(t, st.NumSubjects, 0, "subjects")
	if !st.FirstTime.IsZero() || st.LastTime.IsZero() {
		t.Fatalf("empty stream times: first %v (want zero), last %v (want the last store)", st.FirstTime, st.LastTime)
	}
	require.Equal(t, mustStore(t, s, "d", nil, nil), 4, "next sequence")
	requireCounts(t, s, counts{Msgs: 1, First: 4, Last: 4})
}

// State reports counts, bounds, times, subjects and interior gaps.
func testState(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	var times []int64
	for _, subj := range []string{"a", "b", "a", "c", "a"} {
		_, ts, err := s.Store(subj, nil, []byte("x"), 0)
		require.NoError(t, err, "Store")
		times = append(times, ts)
	}
	st := s.State()
	requireCounts(t, s, counts{Msgs: 5, First: 1, Last: 5})
	require.Equal(t, st.NumSubjects, 3, "NumSubjects")
	require.Equal(t, st.FirstTime.UnixNano(), times[0], "FirstTime")
	require.Equal(t, st.LastTime.UnixNano(), times[4], "LastTime")

	_, _ = s.Remove(1, false)
	_, _ = s.Remove(3, false)
	_, _ = s.Remove(5, false)
	st = s.State()
	requireCounts(t, s, counts{Msgs: 2, First: 2, Last: 5, Deleted: 2})
	require.Equal(t, st.NumSubjects, 2, "NumSubjects")
	require. // b and c
			Equal(t, st.FirstTime.UnixNano(), times[1], "FirstTime after removing the first")
	require.Equal(t, st.LastTime.UnixNano(), times[4], "LastTime is the last store even once removed")
}

// Bytes is the sum of store.Size over the messages held.
func testStateBytes(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	type msg struct {
		subj      string
		hdr, data []byte
	}
	msgs := []msg{
		{"a", nil, nil},
		{"a.b.c", []byte("NATS/1.0\r\n\r\n"), []byte("data")},
		{"x", nil, bytes.Repeat([]byte("z"), 1000)},
	}
	var total uint64
	for _, m := range msgs {
		mustStore(t, s, m.subj, m.hdr, m.data)
		total += store.Size(m.subj, m.hdr, m.data)
		require.Equal(t, s.State().Bytes, total, "bytes after Store")
	}
	_, _ = s.Remove(2, false)
	total -= store.Size(msgs[1].subj, msgs[1].hdr, msgs[1].data)
	require.Equal(t, s.State().Bytes, total, "bytes after Remove")
	_, _ = s.Purge(store.PurgeOptions{})
	require.Equal(t, s.State().Bytes, 0, "bytes after Purge")
}
