package memstore

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// newTestStream returns a stream for cfg, closed when the test ends.
func newTestStream(t testing.TB, cfg store.Config) *Stream {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// checkInvariants verifies the log and the subject index against each
// other.
func checkInvariants(t testing.TB, s *Stream) {
	t.Helper()
	l := &s.log
	var msgs, bytes uint64
	counts := map[*subjectState]uint64{}
	var prevSeq uint64
	removed := 0
	for i := 0; i < l.n; i++ {
		e := l.at(i)
		if e.seq <= prevSeq {
			t.Fatalf("log not ordered at index %d: %d after %d", i, e.seq, prevSeq)
		}
		prevSeq = e.seq
		if !e.live() {
			removed++
			continue
		}
		msgs++
		bytes += e.size()
		counts[e.subject]++
	}
	if l.n > 0 && !l.at(0).live() {
		t.Fatalf("slot 0 is not live")
	}
	if want := (l.start + l.n + blockMask) >> blockShift; len(l.blocks) != want {
		t.Fatalf("log keeps %d blocks for %d slots from %d, want %d", len(l.blocks), l.n, l.start, want)
	}
	if l.n > 0 {
		require.Equal(t, l.at(0).seq, s.firstSeq, "first sequence")
	}
	require.Equal(t, removed, l.removed, "tombstones")
	require.Equal(t, msgs, s.msgs, "messages")
	require.Equal(t, bytes, s.bytes, "bytes")
	require.Equal(t, len(counts), len(s.subjects), "subjects")
	for name, ss := range s.subjects {
		require.Equal(t, ss.name, name, "subject name")
		require.Equal(t, counts[ss], ss.msgs, "count of "+name)
		// Walk the list both ways.
		var n uint64
		var prev uint64
		for seq := ss.first; seq != 0; {
			e := l.get(seq)
			if e == nil || e.subject != ss || e.prev != prev {
				t.Fatalf("subject %s: broken list at %d", name, seq)
			}
			prev, seq = seq, e.next
			n++
		}
		require.Equal(t, prev, ss.last, "last of "+name)
		require.Equal(t, n, ss.msgs, "list length of "+name)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	for _, cfg := range []store.Config{
		{MaxMsgs: -1},
		{MaxBytes: -1},
		{MaxAge: -1},
		{MaxMsgsPerSubject: -1},
		{MaxMsgSize: -1},
		{Discard: 2},
	} {
		if _, err := New(cfg); !errors.Is(err, store.ErrInvalidConfig) {
			t.Fatalf("New(%+v): got %v, want ErrInvalidConfig", cfg, err)
		}
	}
	_, err := New(store.Config{MaxMsgs: -1})
	require.Equal(t, err.Error(), "store: invalid config: MaxMsgs is negative (-1)", "message")
}

func TestInvalidSubjectError(t *testing.T) {
	s := newTestStream(t, store.Config{})
	_, _, err := s.Store("a.*", nil, nil, 0)
	if !errors.Is(err, ErrInvalidSubject) {
		t.Fatalf("got %v, want ErrInvalidSubject", err)
	}
}

// A KV bucket whose oldest key is never updated pins the first sequence
// while another key is rewritten many times; the log must not keep a slot
// per overwritten revision.
func TestLogStaysCompactWithPinnedFirst(t *testing.T) {
	s := newTestStream(t, store.Config{MaxMsgsPerSubject: 1})
	_, _, err := s.Store("kv.old", nil, nil, 0)
	require.NoError(t, err)
	for range 100_000 {
		_, _, err := s.Store("kv.hot", nil, []byte("v"), 0)
		require.NoError(t, err)
	}
	if n := s.log.n; n > 2*compactMinGarbage+2 {
		t.Fatalf("log holds %d slots for 2 messages", n)
	}
	if n := len(s.log.blocks); n > 2 {
		t.Fatalf("log holds %d blocks for 2 messages", n)
	}
	require.Equal(t, s.State().NumDeleted, 99_999, "NumDeleted")
	checkInvariants(t, s)
}

// A purge gives the memory of a large log back, a block at a time.
func TestLogShrinksAfterPurge(t *testing.T) {
	s := newTestStream(t, store.Config{})
	for range 50_000 {
		_, _, err := s.Store("a", nil, nil, 0)
		require.NoError(t, err)
	}
	_, err := s.Purge(store.PurgeOptions{Sequence: 49_990})
	require.NoError(t, err)
	if n := len(s.log.blocks); n > 2 {
		t.Fatalf("log keeps %d blocks for %d messages", n, s.msgs)
	}
	checkInvariants(t, s)
	_, err = s.Purge(store.PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, len(s.log.blocks), 0, "blocks after purge")
}

// Random operations keep the log and the subject index consistent.
func TestInvariantsUnderChurn(t *testing.T) {
	s := newTestStream(t, store.Config{MaxMsgsPerSubject: 7})
	x := uint64(1)
	next := func(n uint64) uint64 { // xorshift; deterministic
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x % n
	}
	for i := range 20_000 {
		switch next(10) {
		case 0, 1:
			_, _ = s.Remove(next(s.lastSeq+2), false)
		case 2:
			if i%50 == 0 {
				_, _ = s.Purge(store.PurgeOptions{Subject: fmt.Sprintf("s.%d", next(20)), Keep: next(3)})
			}
		default:
			_, _, err := s.Store(fmt.Sprintf("s.%d", next(20)), nil, []byte("x"), 0)
			require.NoError(t, err)
		}
		if i%500 == 0 {
			checkInvariants(t, s)
		}
	}
	checkInvariants(t, s)
}

func TestStoreAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newTestStream(t, store.Config{MaxMsgs: 1000})
	data := make([]byte, 100)
	for range 5000 { // reach the steady state: log at capacity, evicting
		_, _, err := s.Store("a.b", nil, data, 0)
		require.NoError(t, err)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = s.Store("a.b", nil, data, 0) }); n != 1 {
		t.Fatalf("Store allocates %v times, want 1 (the message copy)", n)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _, _ = s.Store("a.b", nil, nil, 0) }); n != 0 {
		t.Fatalf("Store of an empty message allocates %v times, want 0", n)
	}
}

func TestLoadAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	s := newTestStream(t, store.Config{})
	for i := range 100 {
		_, _, err := s.Store(fmt.Sprintf("k.%d", i%10), []byte("h"), []byte("data"), 0)
		require.NoError(t, err)
	}
	var sm store.Msg
	_, err := s.Load(1, &sm)
	require.NoError(t, err)
	for name, f := range map[string]func(){
		"Load":              func() { _, _ = s.Load(50, &sm) },
		"LoadLast(literal)": func() { _, _ = s.LoadLast("k.3", &sm) },
		"LoadNext(literal)": func() { _, _ = s.LoadNext("k.3", 40, &sm) },
		"LoadNext(*)":       func() { _, _ = s.LoadNext("k.*", 40, &sm) },
		"FilteredState":     func() { _ = s.FilteredState("k.3", 40) },
		"State":             func() { _ = s.State() },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s into a reused Msg allocates %v times, want 0", name, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = s.Load(50, nil) }); n != 2 {
		t.Errorf("Load into a new Msg allocates %v times, want 2 (Msg and one buffer)", n)
	}
}

func TestStoreAfterPurgeToMaxSequence(t *testing.T) {
	s, err := New(store.Config{Name: "max"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Purge(store.PurgeOptions{Sequence: math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	// The next sequence is the largest possible: one store takes it, the
	// next must fail cleanly, never wrap around to reuse sequences.
	if seq, _, err := s.Store("a", nil, []byte("x"), 0); err != nil || seq != math.MaxUint64 {
		t.Fatalf("store after purge to max: seq %d, %v", seq, err)
	}
	if _, _, err := s.Store("a", nil, []byte("y"), 0); !errors.Is(err, ErrSeqExhausted) {
		t.Fatalf("store past the largest sequence: %v", err)
	}
}
