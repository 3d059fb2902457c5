package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// requireClosed checks that every method with an error result reports
// ErrClosed.
func requireClosed(t *testing.T, s store.Stream) {
	t.Helper()
	_, _, err := s.Store("a", nil, nil, 0)
	require.ErrorIs(t, err, store.ErrClosed, "Store")
	_, err = s.Load(1, nil)
	require.ErrorIs(t, err, store.ErrClosed, "Load")
	_, err = s.LoadNext("", 1, nil)
	require.ErrorIs(t, err, store.ErrClosed, "LoadNext")
	_, err = s.LoadLast("", nil)
	require.ErrorIs(t, err, store.ErrClosed, "LoadLast")
	_, err = s.Remove(1, false)
	require.ErrorIs(t, err, store.ErrClosed, "Remove")
	_, err = s.Purge(store.PurgeOptions{})
	require.ErrorIs(t, err, store.ErrClosed, "Purge")
	require.ErrorIs(t, s.UpdateConfig(store.Config{}), store.ErrClosed, "UpdateConfig")
	// The methods without an error result must not panic.
	_ = s.State()
	_ = s.FilteredState("", 0)
	_ = s.SubjectsState("")
}

// After Close every call fails with ErrClosed; closing again is harmless.
func testClose(t *testing.T, open OpenStream) {
	s := open(t, store.Config{MaxAge: 1 << 40})
	mustStoreN(t, s, "a", "b")
	require.NoError(t, s.Close(), "Close")
	requireClosed(t, s)
	_ = s.Close()
}

// After Delete every call fails with ErrClosed.
func testDelete(t *testing.T, open OpenStream) {
	s := open(t, store.Config{})
	mustStoreN(t, s, "a", "b")
	require.NoError(t, s.Delete(), "Delete")
	requireClosed(t, s)
	_ = s.Close()
}

// Concurrent writers get distinct sequences while readers query; run it
// with -race.
func testConcurrent(t *testing.T, open OpenStream) {
	const writers, perWriter = 4, 250
	s := open(t, store.Config{MaxMsgsPerSubject: 100})
	seqs := make([][]uint64, writers)
	var writing, reading sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		writing.Go(func() {
			subj := fmt.Sprintf("w.%d", w)
			for i := range perWriter {
				seq, _, err := s.Store(subj, nil, fmt.Appendf(nil, "%d", i), 0)
				if err != nil {
					t.Errorf("Store: %v", err)
					return
				}
				seqs[w] = append(seqs[w], seq)
			}
		})
	}
	for r := range 2 {
		reading.Go(func() {
			var sm store.Msg
			for i := uint64(0); ; i++ {
				select {
				case <-done:
					return
				default:
				}
				st := s.State()
				if st.Msgs > 0 {
					_, _ = s.Load(st.FirstSeq+i%st.Msgs, &sm)
				}
				_, _ = s.LoadNext("w.*", i%1000, &sm)
				_, _ = s.LoadLast(fmt.Sprintf("w.%d", r), &sm)
				_ = s.FilteredState("w.1", i%1000)
				_ = s.SubjectsState(">")
				if i%16 == 0 {
					_, _ = s.Remove(i%1000, false)
				}
			}
		})
	}
	writing.Wait()
	close(done)
	reading.Wait()

	seen := make(map[uint64]bool)
	for w := range writers {
		for i, seq := range seqs[w] {
			if seen[seq] {
				t.Fatalf("sequence %d handed out twice", seq)
			}
			seen[seq] = true
			if i > 0 && seq <= seqs[w][i-1] {
				t.Fatalf("writer %d got sequence %d after %d", w, seq, seqs[w][i-1])
			}
		}
	}
	require.Equal(t, s.State().LastSeq, writers*perWriter, "LastSeq")
}
