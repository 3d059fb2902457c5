package outbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func mustScheduler(t *testing.T, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	s, err := OpenScheduler(cfg)
	require.NoError(t, err)
	return s
}

func mustSlot(t *testing.T, s *Scheduler, name string, priority int, maxRate, budget int64) *slot {
	t.Helper()
	sl, err := s.register(name, priority, maxRate, budget)
	require.NoError(t, err)
	return sl
}

// TestSchedulerPriorityRoundRobinAndTotalRate: three forwarders with a
// backlog each share a total cap. The higher class is served first, the
// two of the lower class alternate, and the cap holds.
func TestSchedulerPriorityRoundRobinAndTotalRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustScheduler(t, SchedulerConfig{MaxRate: 1000}) // burst 100
		drain := mustSlot(t, s, "drain", -1, 0, 0)
		bulk1 := mustSlot(t, s, "bulk1", 0, 0, 0)
		bulk2 := mustSlot(t, s, "bulk2", 0, 0, 0)
		alarm := mustSlot(t, s, "alarm", 5, 0, 0)
		ctx := context.Background()
		require.NoError(t, s.acquire(ctx, drain, 100, nil)) // empties the burst
		s.idle(drain)
		start := time.Now()
		// All three have a backlog from the start.
		for _, sl := range []*slot{bulk1, bulk2, alarm} {
			sl.ready = true
		}
		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		for _, sl := range []*slot{bulk1, bulk2, alarm} {
			wg.Go(func() {
				for range 10 {
					if err := s.acquire(ctx, sl, 100, nil); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					order = append(order, sl.name)
					mu.Unlock()
				}
				s.idle(sl)
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		want := strings.Repeat("alarm ", 10) + strings.Repeat("bulk1 bulk2 ", 10)
		if got := strings.Join(order, " ") + " "; got != want {
			t.Fatalf("order:\n%s\nwant:\n%s", got, want)
		}
		// 3000 bytes at 1000 B/s with an empty bucket.
		if elapsed < 2900*time.Millisecond || elapsed > 3100*time.Millisecond {
			t.Fatalf("3000 bytes took %v at 1000 B/s", elapsed)
		}
		if st := s.Status(); st.Used != 3100 || st.Exhausted {
			t.Fatalf("status %+v", st)
		}
	})
}

// TestSchedulerUplinkRateLetsOthersThrough: a higher class held by its own
// cap is not ready, so the lower class uses the gap.
func TestSchedulerUplinkRateLetsOthersThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := mustScheduler(t, SchedulerConfig{})
		alarm := mustSlot(t, s, "alarm", 5, 500, 0) // burst 50
		bulk := mustSlot(t, s, "bulk", 0, 0, 0)
		ctx := context.Background()
		start := time.Now()
		done := make(chan time.Duration)
		go func() {
			for range 10 {
				require.NoError(t, s.acquire(ctx, alarm, 100, nil))
			}
			s.idle(alarm)
			done <- time.Since(start)
		}()
		bulkSent := 0
		for range 100 {
			require.NoError(t, s.acquire(ctx, bulk, 100, nil))
			bulkSent++
		}
		s.idle(bulk)
		if took := <-done; took < 1850*time.Millisecond || took > 2100*time.Millisecond {
			t.Fatalf("1000 bytes at 500 B/s took %v", took)
		}
		if bulkSent != 100 || time.Since(start) > 2100*time.Millisecond {
			t.Fatalf("bulk sent %d in %v", bulkSent, time.Since(start))
		}
		if r, _ := s.slotStatus(alarm); r != "" {
			t.Fatalf("alarm still held: %q", r)
		}
	})
}

// TestSchedulerDailyBudget: an uplink's own budget stops it until 00:00
// UTC; the total budget leaves only the highest class flowing; usage
// survives a restart.
func TestSchedulerDailyBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.json")
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00 UTC.
		s := mustScheduler(t, SchedulerConfig{DailyBudget: 1000, StateFile: path})
		alarm := mustSlot(t, s, "alarm", 1, 0, 0)
		bulk := mustSlot(t, s, "bulk", 0, 0, 0)
		metered := mustSlot(t, s, "metered", 0, 0, 300)
		ctx := context.Background()
		require.NoError(t, s.acquire(ctx, metered, 200, nil))
		require.NoError(t, s.acquire(ctx, metered, 200, nil)) // starts below its budget: may overshoot
		s.idle(metered)
		blocked := make(chan error, 1)
		go func() { blocked <- s.acquire(ctx, metered, 1, nil) }()
		synctest.Wait()
		if r, used := s.slotStatus(metered); r != WaitBudget || used != 400 {
			t.Fatalf("metered: reason %q used %d", r, used)
		}
		require.NoError(t, s.acquire(ctx, bulk, 600, nil)) // total 1000: exhausted
		s.idle(bulk)
		if st := s.Status(); !st.Exhausted || st.Used != 1000 || st.Day != "2000-01-01" {
			t.Fatalf("status %+v", st)
		}
		bulkDone := make(chan error, 1)
		go func() { bulkDone <- s.acquire(ctx, bulk, 1, nil) }()
		require.NoError(t, s.acquire(ctx, alarm, 100, nil)) // the top class still flows
		s.idle(alarm)
		synctest.Wait()
		if r, _ := s.slotStatus(bulk); r != WaitBudget {
			t.Fatalf("bulk reason %q, want budget", r)
		}
		require.NoError(t, s.maybeSave(true))

		// Restart on the same day: the usage is read back.
		s2 := mustScheduler(t, SchedulerConfig{DailyBudget: 1000, StateFile: path})
		if st := s2.Status(); st.Used != 1100 || !st.Exhausted {
			t.Fatalf("after restart: %+v", st)
		}
		m2 := mustSlot(t, s2, "metered", 0, 0, 300)
		if _, used := s2.slotStatus(m2); used != 400 {
			t.Fatalf("metered usage after restart %d", used)
		}

		// A new UTC day releases both.
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		require.NoError(t, <-blocked)
		require.NoError(t, <-bulkDone)
		if st := s.Status(); st.Used != 2 || st.Day != "2000-01-02" || st.Exhausted {
			t.Fatalf("next day: %+v", st)
		}
	})
}

func TestSchedulerBadStateAndConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.json")
	s := mustScheduler(t, SchedulerConfig{StateFile: path})
	sl := mustSlot(t, s, "a", 0, 0, 0)
	require.NoError(t, s.acquire(context.Background(), sl, 10, nil))
	require.NoError(t, s.Close())
	if _, err := s.register("a", 1, 0, 0); err == nil {
		t.Fatal("a name registered twice")
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), `"total_bytes":10`, `"total_bytes":99`, 1)), 0o600))
	if _, err := OpenScheduler(SchedulerConfig{StateFile: path}); !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("damaged state file: %v", err)
	}
	if _, err := OpenScheduler(SchedulerConfig{MaxRate: -1}); err == nil {
		t.Fatal("negative rate accepted")
	}
}
