package watchdog

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunFeedsOnlyWhileHealthy: a passing check feeds once per interval, a
// failing one withholds the feed and reports the error, a hung one
// withholds it and reports DeadlineExceeded at the next tick.
func TestRunFeedsOnlyWhileHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mode atomic.Int32 // 0 healthy, 1 failing, 2 hung
		release := make(chan struct{})
		var feeds, failures, hung atomic.Int32
		check := func() error {
			switch mode.Load() {
			case 1:
				return errors.New("store not writable")
			case 2:
				<-release
			}
			return nil
		}
		feed := func() error { feeds.Add(1); return nil }
		onFail := func(err error) {
			if errors.Is(err, context.DeadlineExceeded) {
				hung.Add(1)
			} else {
				failures.Add(1)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { Run(ctx, time.Second, check, feed, onFail); close(done) }()

		time.Sleep(3500 * time.Millisecond) // fake time: checks at 0, 1, 2, 3 s
		synctest.Wait()
		if got := feeds.Load(); got != 4 {
			t.Fatalf("healthy for 3.5 s: %d feeds, want 4", got)
		}
		mode.Store(1)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if feeds.Load() != 4 || failures.Load() != 2 {
			t.Fatalf("failing for 2 s: %d feeds (want 4), %d failures (want 2)", feeds.Load(), failures.Load())
		}
		mode.Store(2)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if feeds.Load() != 4 || hung.Load() == 0 {
			t.Fatalf("hung check: %d feeds (want 4), %d hung reports (want some)", feeds.Load(), hung.Load())
		}
		cancel()
		<-done
		close(release)
	})
}
