package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/expiry"
)

// OpenStream is the signature of the constructor the suites take: it returns
// a new, empty stream with the limits of cfg, failing t if it cannot. It
// should register the stream's Close or Delete with t.Cleanup; the suite may
// already have closed or deleted it by then. The age and TTL cases call it
// inside a testing/synctest bubble, so that the stream, its timers and its
// goroutines run on the bubble's clock: it must open a new stream that
// shares nothing with goroutines outside the bubble.
type OpenStream = func(t *testing.T, cfg store.Config) store.Stream

// OpenConsumerStore is the signature of the constructor RunConsumerStoreTests
// takes: it returns a new consumer store holding no state.
type OpenConsumerStore = func(t *testing.T) store.ConsumerStore

// mustStore stores a message and returns its sequence.
func mustStore(t testing.TB, s store.Stream, subj string, hdr, data []byte) uint64 {
	t.Helper()
	seq, _, err := s.Store(subj, hdr, data, 0)
	require.NoError(t, err, fmt.Sprintf("Store(%q)", subj))
	return seq
}

// mustStoreN stores one message per subject, with data "<subject>-<i>",
// and returns the sequences.
func mustStoreN(t testing.TB, s store.Stream, subjects ...string) []uint64 {
	t.Helper()
	seqs := make([]uint64, len(subjects))
	for i, subj := range subjects {
		seqs[i] = mustStore(t, s, subj, nil, fmt.Appendf(nil, "%s-%d", subj, i))
	}
	return seqs
}

// mustLoad loads seq and fails the test if it cannot.
func mustLoad(t testing.TB, s store.Stream, seq uint64) *store.Msg {
	t.Helper()
	sm, err := s.Load(seq, nil)
	require.NoError(t, err, fmt.Sprintf("Load(%d)", seq))
	if sm.Seq != seq {
		t.Fatalf("Load(%d) returned seq %d", seq, sm.Seq)
	}
	return sm
}

// requireMsg checks a loaded message's fields.
func requireMsg(t testing.TB, sm *store.Msg, seq uint64, subj string, hdr, data []byte) {
	t.Helper()
	if sm.Seq != seq || sm.Subject != subj || !bytes.Equal(sm.Header, hdr) || !bytes.Equal(sm.Data, data) {
		t.Fatalf("got message seq=%d subject=%q header=%q data=%q, want seq=%d subject=%q header=%q data=%q",
			sm.Seq, sm.Subject, sm.Header, sm.Data, seq, subj, hdr, data)
	}
}

// counts is the part of a State most tests check.
type counts struct {
	Msgs, First, Last uint64
	Deleted           int
}

func (c counts) String() string {
	return fmt.Sprintf("msgs=%d first=%d last=%d deleted=%d", c.Msgs, c.First, c.Last, c.Deleted)
}

// requireCounts checks Msgs, FirstSeq, LastSeq and NumDeleted.
func requireCounts(t testing.TB, s store.Stream, want counts) {
	t.Helper()
	st := s.State()
	got := counts{st.Msgs, st.FirstSeq, st.LastSeq, st.NumDeleted}
	if got != want {
		t.Fatalf("state: got %v, want %v", got, want)
	}
}

// requireSeqs checks which sequences a stream holds, walking it with
// LoadNext.
func requireSeqs(t testing.TB, s store.Stream, filter string, want ...uint64) {
	t.Helper()
	got := collect(t, s, filter, 0)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LoadNext(%q) walk: got sequences %v, want %v", filter, got, want)
	}
}

// collect walks the stream with LoadNext from start and returns the
// sequences it visits.
func collect(t testing.TB, s store.Stream, filter string, start uint64) []uint64 {
	t.Helper()
	var seqs []uint64
	var sm store.Msg
	for seq := start; ; {
		m, err := s.LoadNext(filter, seq, &sm)
		if errors.Is(err, store.ErrNotFound) {
			return seqs
		}
		require.NoError(t, err, fmt.Sprintf("LoadNext(%q, %d)", filter, seq))
		if m.Seq < seq {
			t.Fatalf("LoadNext(%q, %d) went back to %d", filter, seq, m.Seq)
		}
		seqs = append(seqs, m.Seq)
		seq = m.Seq + 1
	}
}

// size is store.Size for a message without header.
func size(subj string, data string) uint64 { return store.Size(subj, nil, []byte(data)) }

// expiryLag is how late, on a synctest bubble's clock, an engine may
// expire a message: the expiry timer's resolution (store/internal/expiry),
// with room to spare. In a bubble nothing else delays it.
const expiryLag = 5 * expiry.Resolution

// requireExpiry checks, in a synctest bubble, that what an engine's expiry
// timer does (cond) has not happened just before due after start, and has
// by expiryLag after it. Time is the bubble's: nothing waits for real.
func requireExpiry(t *testing.T, start time.Time, due time.Duration, what string, cond func() bool) {
	t.Helper()
	time.Sleep(time.Until(start.Add(due - time.Nanosecond)))
	synctest.Wait()
	if cond() {
		t.Fatalf("%s before %v", what, due)
	}
	time.Sleep(time.Until(start.Add(due + expiryLag)))
	synctest.Wait()
	if !cond() {
		t.Fatalf("no %s %v after it was due (%v)", what, expiryLag, due)
	}
}
