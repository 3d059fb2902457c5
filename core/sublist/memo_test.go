package sublist

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// TestMemoFollowsChanges matches one subject through a memo between every
// kind of change, and on two Sublists with the same memo.
func TestMemoFollowsChanges(t *testing.T) {
	s := New[int]()
	var memo Memo[int]
	subj := []byte("sensors.temp")
	match := func() string { return canon(t, s.MatchBytesMemo(subj, &memo)) }

	require.Equal(t, match(), "[]")
	require.Equal(t, match(), "[]") // answered by the memo
	require.NoError(t, s.Insert("sensors.*", "", 1))
	require.Equal(t, match(), "[1]")
	require.NoError(t, s.Insert("other", "", 2)) // unrelated: still right
	require.Equal(t, match(), "[1]")
	require.NoError(t, s.Insert("sensors.>", "q", 3))
	require.Equal(t, match(), "[1] q:[3]")
	require.NoError(t, s.Remove("sensors.*", "", 1))
	require.Equal(t, match(), "[] q:[3]")
	s.RemoveBatch([]Entry[int]{{Subject: "sensors.>", Queue: "q", Value: 3}})
	require.Equal(t, match(), "[]")

	// The caller's buffer is not retained.
	subj[0] = 'x'
	require.NoError(t, s.Insert("sensors.temp", "", 4))
	require.Equal(t, canon(t, s.MatchBytesMemo([]byte("sensors.temp"), &memo)), "[4]")
	require.Equal(t, canon(t, s.MatchBytesMemo(subj, &memo)), "[]")

	// Forget drops the result; the next match is a fresh one.
	memo.Forget()
	if memo.r != nil || memo.sl != nil {
		t.Fatal("Forget kept the result")
	}
	require.Equal(t, canon(t, s.MatchBytesMemo([]byte("sensors.temp"), &memo)), "[4]")

	// Another Sublist through the same memo.
	other := New[int]()
	require.NoError(t, other.Insert("sensors.temp", "", 5))
	require.Equal(t, canon(t, other.MatchBytesMemo([]byte("sensors.temp"), &memo)), "[5]")
	require.Equal(t, canon(t, s.MatchBytesMemo([]byte("sensors.temp"), &memo)), "[4]")
}

// TestMemoSeesConcurrentInsert has one goroutine match a subject through a
// memo in a loop, keeping it warm, while another inserts and removes an
// entry for it: the first match that starts after a change returned must
// show the change. The writer waits for the matcher to have checked a
// change before making the next, so each check knows what to expect.
func TestMemoSeesConcurrentInsert(t *testing.T) {
	s := New[int]()
	require.NoError(t, s.Insert("unrelated", "", 0))
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	// state is i once round i's entry is in, -i once it is out again.
	var state atomic.Int64
	checked := make(chan int64)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var memo Memo[int]
		subj := []byte("a.b")
		last := int64(0)
		for {
			st := state.Load()
			r := s.MatchBytesMemo(subj, &memo)
			if st == last {
				select {
				case <-stop:
					return
				default:
					continue
				}
			}
			switch {
			case st > 0 && !contains(r, "", int(st)):
				t.Errorf("round %d: the memo misses the entry inserted before the match", st)
			case st < 0 && contains(r, "", int(-st)):
				t.Errorf("round %d: the memo shows the entry removed before the match", -st)
			}
			last = st
			select {
			case checked <- st:
			case <-stop:
				return
			}
		}
	})
	for i := int64(1); i <= int64(rounds) && !t.Failed(); i++ {
		require.NoError(t, s.Insert("a.*", "", int(i)))
		state.Store(i)
		<-checked
		require.NoError(t, s.Remove("a.*", "", int(i)))
		state.Store(-i)
		<-checked
	}
	close(stop)
	wg.Wait()
}

// TestMemoStats checks that memo answers count as cache hits once
// flushed, and that a repeat allocates nothing.
func TestMemoStats(t *testing.T) {
	s := New[int]()
	require.NoError(t, s.Insert("a", "", 1))
	var memo Memo[int]
	subj := []byte("a")
	s.MatchBytesMemo(subj, &memo) // a miss of the shared cache too
	if allocs := testing.AllocsPerRun(100, func() { s.MatchBytesMemo(subj, &memo) }); allocs != 0 {
		t.Fatalf("%v allocations per repeat", allocs)
	}
	before := s.Stats().NumMatches
	memo.FlushStats()
	st := s.Stats()
	require.Equal(t, st.NumMatches-before, uint64(101))
	require.Equal(t, st.NumMatches, uint64(102))
}
