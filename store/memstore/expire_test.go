package memstore

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/internal/expiry"
)

// expiryAt reads when the expiry timer is due, under the stream's lock.
func expiryAt(s *Stream) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.expiry.Due()
}

// In a synctest bubble time is fake, so these tests check expiry to the
// instant without waiting.

func TestMaxAgeExactInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStream(t, store.Config{MaxAge: time.Second})
		_, _, err := s.Store("a", nil, nil, 0)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond)
		_, _, err = s.Store("b", nil, nil, 0)
		require.NoError(t, err)

		time.Sleep(500*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.Equal(t, s.State().Msgs, 2, "messages just before the first is due")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.Equal(t, s.State().FirstSeq, 2, "first sequence once the first is due")
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, s.State().Msgs, 0, "messages once both are due")
		require.Equal(t, expiryAt(s), 0, "timer armed for an empty stream")
	})
}

func TestTTLOrderInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStream(t, store.Config{AllowMsgTTL: true})
		const n = 100
		ttl := func(i int) time.Duration { return time.Duration((i*37)%n+1) * expiry.Resolution }
		for i := range n {
			_, _, err := s.Store("a", nil, nil, int64(ttl(i)))
			require.NoError(t, err)
		}
		for step := 1; step <= n; step++ {
			time.Sleep(expiry.Resolution)
			synctest.Wait()
			elapsed := time.Duration(step) * expiry.Resolution
			for i := range n {
				_, err := s.Load(uint64(i+1), nil)
				if gone := err != nil; gone != (ttl(i) <= elapsed) {
					t.Fatalf("after %v: message %d with TTL %v gone=%v", elapsed, i+1, ttl(i), gone)
				}
			}
		}
		s.mu.RLock()
		require.Equal(t, len(s.expiry.TTLs), 0, "pending TTLs")
		s.mu.RUnlock()
	})
}

// Removing messages early leaves their TTLs behind; the heap is pruned
// before it grows far beyond the live TTL messages.
func TestTTLHeapPruned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStream(t, store.Config{AllowMsgTTL: true, MaxMsgsPerSubject: 1})
		for range 10_000 {
			_, _, err := s.Store("kv.key", nil, nil, int64(time.Hour))
			require.NoError(t, err)
		}
		s.mu.RLock()
		live, pending := s.expiry.Live, len(s.expiry.TTLs)
		s.mu.RUnlock()
		require.Equal(t, live, 1, "live TTL messages")
		if pending > 2+64+1 {
			t.Fatalf("heap holds %d items for 1 live TTL message", pending)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, s.State().Msgs, 0, "messages after the TTL")
	})
}

// Close stops the timer: nothing fires into a closed stream.
func TestCloseStopsExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(store.Config{MaxAge: time.Second})
		require.NoError(t, err)
		_, _, err = s.Store("a", nil, nil, 0)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, expiryAt(s), 0, "timer deadline after Close")
	})
}

// A never-expiring message at the front does not stop MaxAge from expiring
// the messages behind it, and does not keep the timer spinning.
func TestNoAgeAtFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTestStream(t, store.Config{AllowMsgTTL: true, MaxAge: time.Second})
		_, _, err := s.Store("keep", nil, nil, -1)
		require.NoError(t, err)
		for range 3 {
			_, _, err = s.Store("a", nil, nil, 0)
			require.NoError(t, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, s.State().Msgs, 1, "messages after MaxAge")
		require.Equal(t, expiryAt(s), 0, "timer deadline with only a never-expiring message")
	})
}
