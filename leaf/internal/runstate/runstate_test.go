package runstate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestTrackerClosedStateHolds(t *testing.T) {
	var r Tracker[string]
	r.Set("waiting")
	r.SetError(errors.New("boom"))
	st, msg, at := r.Snapshot()
	if st != "waiting" || msg != "boom" || at.IsZero() {
		t.Fatalf("snapshot %q %q %v", st, msg, at)
	}
	r.Close("closed")
	r.Set("backoff")
	if got := r.State(); got != "closed" {
		t.Fatalf("state after Close and Set: %q", got)
	}
}

func TestBackoffBounds(t *testing.T) {
	lo, hi := 100*time.Millisecond, 10*time.Second
	for n, want := range map[int]time.Duration{0: lo, 3: 8 * lo, 7: hi, 40: hi, -1: hi} {
		for range 100 {
			if d := Backoff(n, lo, hi); d < want/2 || d > want {
				t.Fatalf("Backoff(%d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
}

func TestSleepAndSignal(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep did not report the wait passed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended context reported the wait passed")
	}
	ch := make(chan struct{}, 1)
	Signal(ch)
	Signal(ch) // absorbed, does not block
	if len(ch) != 1 {
		t.Fatalf("%d wake-ups pending, want 1", len(ch))
	}
}

// TestTrackerWakesWaiters: Set, SetError, Close and Changed each wake a
// Wait on the tracker.
func TestTrackerWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r Tracker[string]
		var counter atomic.Int64
		for _, tc := range []struct {
			name   string
			change func()
			done   func() bool
		}{
			{"Set", func() { r.Set("running") }, func() bool { return r.State() == "running" }},
			{"SetError", func() { r.SetError(errors.New("boom")) }, func() bool { _, e, _ := r.Snapshot(); return e == "boom" }},
			{"Changed", func() { counter.Add(1); r.Changed() }, func() bool { return counter.Load() == 1 }},
			{"Close", func() { r.Close("closed") }, func() bool { return r.State() == "closed" }},
		} {
			done := make(chan error, 1)
			go func() { done <- r.Wait(t.Context(), tc.done) }()
			synctest.Wait()
			tc.change()
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
	})
}
