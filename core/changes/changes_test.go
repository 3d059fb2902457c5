package changes

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestChangesWait: Wait returns at once for a condition that holds, sleeps
// until a Notify makes it hold (a Notify that leaves it false wakes it
// only to check again), and returns ctx's error when ctx ends first.
func TestChangesWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Notifier
		c.Notify() // no waiter: nothing to wake
		if err := c.Wait(t.Context(), func() bool { return true }); err != nil {
			t.Fatalf("Wait on a condition that holds: %v", err)
		}
		var n atomic.Int64
		checks := atomic.Int64{}
		done := make(chan error, 1)
		go func() {
			done <- c.Wait(t.Context(), func() bool { checks.Add(1); return n.Load() >= 2 })
		}()
		synctest.Wait()
		if got := checks.Load(); got != 1 {
			t.Fatalf("%d checks before any change, want 1", got)
		}
		n.Store(1)
		c.Notify()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v while the condition is false", err)
		default:
		}
		if got := checks.Load(); got != 2 {
			t.Fatalf("%d checks after one change, want 2", got)
		}
		n.Store(2)
		c.Notify()
		if err := <-done; err != nil {
			t.Fatalf("Wait: %v", err)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		if err := c.Wait(ctx, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait past its context: %v", err)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("Wait returned after %v, want the context's 1s", d)
		}
	})
}
