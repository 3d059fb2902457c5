// Package watchdog runs the loop every watchdog of leafbox shares: the
// systemd one (cmd/internal/systemd) and the hardware one
// (/dev/watchdog, cmd/internal/app): keep something fed only while a
// health check passes.
package watchdog

import (
	"context"
	"fmt"
	"time"
)

// Run calls feed every interval, but only after check returned nil within
// that interval, until ctx ends. check runs in a goroutine of its own, one
// at a time, so a hung check withholds the feed instead of blocking the
// loop. onFail, if not nil, is called with check's or feed's error, or
// with context.DeadlineExceeded when check is still running at the next
// tick, each time the feed is withheld. A check still running when ctx
// ends is left to finish on its own.
func Run(ctx context.Context, interval time.Duration, check, feed func() error, onFail func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var result chan error // the running check's; nil when none runs
	for {
		if result == nil {
			result = make(chan error, 1)
			go func(out chan<- error) { out <- check() }(result)
		}
		// Wait for the check, bounded by the next tick.
		select {
		case <-ctx.Done():
			return
		case err := <-result:
			result = nil
			if err == nil {
				err = feed()
			}
			if err != nil && onFail != nil {
				onFail(err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		case <-tick.C:
			if onFail != nil {
				onFail(fmt.Errorf("health check still running after %v: %w", interval, context.DeadlineExceeded))
			}
		}
	}
}
